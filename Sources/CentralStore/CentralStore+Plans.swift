import Foundation
import PostgresNIO
import TeamworkModel

/// Recurring work (sql/0017_plans.sql): plans, their skipped and moved days,
/// and generation of their occurrences, each (plan, day) once.
extension CentralStore {
    static let planColumns = """
        pl.id AS plan_id, pl.title AS plan_title, pl.description AS plan_description, pl.priority AS plan_priority,
        pl.team_id AS plan_team_id, pl.assignee_id AS plan_assignee_id, pl.location_id AS plan_location_id,
        pl.required_skills AS plan_required_skills, pl.rrule AS plan_rrule, pl.starts_on::text AS plan_starts_on,
        pl.window_start::text AS plan_window_start, pl.duration_minutes AS plan_duration_minutes, pl.due_days AS plan_due_days,
        pl.horizon_days AS plan_horizon_days, pl.paused_at AS plan_paused_at, pl.created_at AS plan_created_at,
        pl.updated_at AS plan_updated_at, pl.version AS plan_version,
        teamwork_task_time_zone(pl.location_id, pl.team_id, pl.assignee_id) AS plan_time_zone,
        (SELECT coalesce(jsonb_agg(jsonb_build_object('occurs_on', e.occurs_on::text, 'moved_to', e.moved_to::text)
                                   ORDER BY e.occurs_on), '[]')::text
           FROM plan_exceptions e WHERE e.plan_id = pl.id) AS plan_exceptions,
        (SELECT c.name FROM checklists c WHERE c.id = pl.checklist_id) AS plan_checklist, pl.task_minutes AS plan_task_minutes
        """

    /// The columns of ``planColumns``, wherever they stand in `row`.
    static func plan(_ row: PostgresRow) throws -> Plan {
        let r = PostgresRandomAccessRow(row)
        struct Exception: Decodable {
            var occurs_on: String
            var moved_to: String?
        }
        let exceptions = try JSONDecoder().decode([Exception].self, from: Data(try r["plan_exceptions"].decode(String.self).utf8))
        return Plan(
            id: try r["plan_id"].decode(Int64.self), title: try r["plan_title"].decode(String.self),
            description: try r["plan_description"].decode(String.self),
            priority: try r.enumValue("plan_priority", Priority.self), teamID: try r["plan_team_id"].decode(Int64?.self),
            assigneeID: try r["plan_assignee_id"].decode(Int64?.self), locationID: try r["plan_location_id"].decode(Int64?.self),
            requiredSkills: try r["plan_required_skills"].decode([String].self), rule: try r["plan_rrule"].decode(String.self),
            startsOn: try LocalDate(parsing: try r["plan_starts_on"].decode(String.self)),
            windowStart: try LocalTime(parsing: try r["plan_window_start"].decode(String.self)),
            durationMinutes: Int(try r["plan_duration_minutes"].decode(Int32.self)),
            dueDays: Int(try r["plan_due_days"].decode(Int32.self)),
            horizonDays: Int(try r["plan_horizon_days"].decode(Int32.self)), pausedAt: try r["plan_paused_at"].decode(Date?.self),
            createdAt: try r["plan_created_at"].decode(Date.self), updatedAt: try r["plan_updated_at"].decode(Date.self),
            version: Int(try r["plan_version"].decode(Int32.self)),
            timeZone: try r["plan_time_zone"].decode(String.self),
            exceptions: try exceptions.map {
                Plan.Exception(
                    occursOn: try LocalDate(parsing: $0.occurs_on),
                    movedTo: try $0.moved_to.map { try LocalDate(parsing: $0) })
            },
            checklist: try r["plan_checklist"].decode(String?.self),
            minutesOnSite: try r["plan_task_minutes"].decode(Int32?.self).map(Int.init)
        )
    }

    public func addPlan(_ new: NewPlan) async throws -> Plan {
        if let name = new.checklist { _ = try await checklist(named: name) }
        let rows = try await rows(
            """
            INSERT INTO plans (title, description, priority, team_id, assignee_id, location_id, required_skills, rrule, starts_on,
                               window_start, duration_minutes, due_days, horizon_days, created_by, checklist_id, task_minutes)
            VALUES (\(new.title), \(new.description), \(new.priority.rawValue), \(new.assignment.teamID), \(new.assignment.assigneeID),
                    \(new.locationID), \(new.requiredSkills), \(new.rule), \(new.startsOn.description)::date,
                    \(new.windowStart.description)::time, \(new.durationMinutes), \(new.dueDays), \(new.horizonDays), \(actorID),
                    (SELECT id FROM checklists WHERE name = \(new.checklist)), \(new.minutesOnSite))
            RETURNING id
            """)
        return try await plan(id: try rows[0].decode(Int64.self))
    }

    public func plan(id: Int64) async throws -> Plan {
        guard let row = try await rows("SELECT \(unescaped: Self.planColumns) FROM plans pl WHERE pl.id = \(id)").first else {
            throw TeamworkError.notFound("no plan with id \(id)")
        }
        return try Self.plan(row)
    }

    public func listPlans() async throws -> [Plan] {
        try await rows("SELECT \(unescaped: Self.planColumns) FROM plans pl ORDER BY pl.id").map(Self.plan)
    }

    /// The plan's occurrences made so far (superseded ones too), by day.
    public func occurrences(ofPlan id: Int64) async throws -> [(day: LocalDate, task: FieldTask, superseded: Bool, reason: String?)] {
        try await rows(
            """
            SELECT \(unescaped: Columns.task), k.plan_superseded AS superseded, k.cancel_reason FROM tasks k
            WHERE k.plan_id = \(id) ORDER BY k.plan_date, k.id
            """
        ).map { row in
            let r = PostgresRandomAccessRow(row)
            return (
                try LocalDate(parsing: try r["task_plan_date"].decode(String.self)), try FieldTask(r),
                try r["superseded"].decode(Bool.self),
                try r["cancel_reason"].decode(String?.self)
            )
        }
    }

    /// Changes a plan from `from` on (default: today on the plan's wall clock): its untouched occurrences from then
    /// are cancelled ('plan changed') and made anew by the next generation; touched ones stand. Returns the plan and
    /// how many were cancelled.
    public func updatePlan(
        id: Int64, _ change: (inout Plan) throws -> Void, from: LocalDate? = nil,
        reason: String = "plan changed"
    ) async throws -> (Plan, cancelled: Int) {
        var plan = try await plan(id: id)
        let before = plan
        try change(&plan)
        // The same checks as a new plan's.
        let checked = try NewPlan(
            title: plan.title, description: plan.description, priority: plan.priority,
            assignment: try Assignment(teamID: plan.teamID, assigneeID: plan.assigneeID),
            locationID: plan.locationID, requiredSkills: plan.requiredSkills, rule: plan.rule,
            startsOn: plan.startsOn, windowStart: plan.windowStart, durationMinutes: plan.durationMinutes,
            dueDays: plan.dueDays, horizonDays: plan.horizonDays, checklist: plan.checklist, minutesOnSite: plan.minutesOnSite)
        if let name = checked.checklist, name != before.checklist { _ = try await checklist(named: name) }
        let today = before.zone.date(of: Date())
        let start = from ?? today
        guard start >= today else {
            throw TeamworkError.invalid("--from must be today (\(today) on the plan's clock) or later: past occurrences are not remade")
        }
        return try await transaction { connection in
            try await connection.query("SELECT 1 FROM plans WHERE id = \(id) FOR UPDATE", logger: logger)
            let updated = try await connection.query(
                """
                UPDATE plans SET title = \(checked.title), description = \(checked.description), priority = \(checked.priority.rawValue),
                       team_id = \(checked.assignment.teamID), assignee_id = \(checked.assignment.assigneeID),
                       location_id = \(checked.locationID), required_skills = \(checked.requiredSkills), rrule = \(checked.rule),
                       starts_on = \(checked.startsOn.description)::date, window_start = \(checked.windowStart.description)::time,
                       duration_minutes = \(checked.durationMinutes), due_days = \(checked.dueDays),
                       horizon_days = \(checked.horizonDays), paused_at = \(plan.pausedAt),
                       checklist_id = (SELECT id FROM checklists WHERE name = \(checked.checklist)),
                       task_minutes = \(checked.minutesOnSite),
                       version = version + 1, updated_at = now()
                WHERE id = \(id) AND version = \(before.version)
                RETURNING id
                """, logger: logger
            ).collect()
            guard !updated.isEmpty else { throw TeamworkError.conflict("plan \(id) changed meanwhile; try again") }
            let cancelled = try await connection.query(
                "SELECT teamwork_supersede_occurrences(\(id), \(start.description)::date, NULL, \(reason))", logger: logger
            ).collect()[0].decode(Int32.self)
            return (try await self.planOn(connection, id: id), Int(cancelled))
        }
    }

    private func planOn(_ connection: PostgresConnection, id: Int64) async throws -> Plan {
        let rows = try await connection.query("SELECT \(unescaped: Self.planColumns) FROM plans pl WHERE pl.id = \(id)", logger: logger)
            .collect()
        return try Self.plan(rows[0])
    }

    /// Skips one day of a plan (`to` nil) or moves it to another: its occurrence, if made and untouched, is cancelled
    /// and (moved) made anew on the new day by the next generation.
    public func setException(plan id: Int64, day: LocalDate, movedTo: LocalDate?) async throws -> (Plan, cancelled: Int) {
        let plan = try await plan(id: id)
        guard try RecurrenceRule(parsing: plan.rule).occurrences(from: plan.startsOn, through: day, collectingFrom: day).last == day else {
            throw TeamworkError.invalid("plan \(id) has no occurrence on \(day) (see `plan show \(id)`)")
        }
        return try await transaction { connection in
            try await connection.query(
                """
                INSERT INTO plan_exceptions (plan_id, occurs_on, moved_to) VALUES (\(id), \(day.description)::date, \(movedTo?.description)::date)
                ON CONFLICT (plan_id, occurs_on) DO UPDATE SET moved_to = excluded.moved_to
                """, logger: logger)
            try await connection.query("UPDATE plans SET version = version + 1, updated_at = now() WHERE id = \(id)", logger: logger)
            let cancelled = try await connection.query(
                "SELECT teamwork_supersede_occurrences(\(id), \(day.description)::date, \(day.description)::date, \(movedTo == nil ? "skipped" : "moved to \(movedTo!)"))",
                logger: logger
            ).collect()[0].decode(Int32.self)
            return (try await self.planOn(connection, id: id), Int(cancelled))
        }
    }

    /// Removes a plan: its untouched future occurrences are cancelled ('plan removed'); made tasks keep their history.
    public func removePlan(id: Int64) async throws -> Int {
        let plan = try await plan(id: id)
        return try await transaction { connection in
            // The plan first, as every other change of it: generation holds it FOR SHARE while it makes tasks.
            try await connection.query("SELECT 1 FROM plans WHERE id = \(id) FOR UPDATE", logger: logger)
            let cancelled = try await connection.query(
                "SELECT teamwork_supersede_occurrences(\(id), \(plan.zone.date(of: Date()).description)::date, NULL, 'plan removed')",
                logger: logger
            ).collect()[0].decode(Int32.self)
            try await connection.query("DELETE FROM plans WHERE id = \(id)", logger: logger)
            return Int(cancelled)
        }
    }

    /// Makes every active plan's occurrences from today (on each plan's wall clock) through its horizon, or
    /// through `until` when given. Each (plan, day) is made once, however often or from however many processes
    /// this runs. One plan that cannot be made (its assignee lacks a skill, or has left) is reported, and the
    /// others go on.
    public func generatePlans(now: Date = Date(), until: LocalDate? = nil, only: Int64? = nil) async throws -> [PlanGeneration] {
        var results: [PlanGeneration] = []
        // One plan at a time, each read on its own: a row that cannot be read is that plan's error only.
        let ids = try await rows("SELECT id, title FROM plans WHERE paused_at IS NULL ORDER BY id").map {
            try $0.decode((Int64, String).self)
        }
        for (id, title) in ids where only == nil || id == only {
            do {
                results.append(await generate(try await plan(id: id), now: now, until: until))
            } catch {
                let mapped = StoreError.map(error)
                results.append(PlanGeneration(planID: id, title: title, made: 0, error: (mapped as? TeamworkError)?.message ?? "\(mapped)"))
            }
        }
        return results
    }

    private func generate(_ initial: Plan, now: Date, until: LocalDate?) async -> PlanGeneration {
        var plan = initial
        for _ in 0..<3 {
            do {
                let today = try plan.checkedZone().date(of: now)
                let through = until ?? today.adding(days: plan.horizonDays)
                let occurrences = try plan.occurrences(from: today, through: through)
                guard !occurrences.isEmpty else { return PlanGeneration(planID: plan.id, title: plan.title, made: 0, error: nil) }
                let made = try await rows(
                    """
                    SELECT teamwork_generate_occurrences(\(plan.id), \(plan.version)::integer, \(occurrences.map(\.day.description))::date[],
                           \(occurrences.map(\.window.start)), \(occurrences.map(\.window.end)), \(occurrences.map(\.due)))
                    """)[0].decode(Int32.self)
                if made >= 0 { return PlanGeneration(planID: plan.id, title: plan.title, made: Int(made), error: nil) }
                // The plan changed since it was read: expand it again.
                plan = try await self.plan(id: plan.id)
            } catch {
                let mapped = StoreError.map(error)
                return PlanGeneration(
                    planID: plan.id, title: plan.title, made: 0,
                    error: (mapped as? TeamworkError)?.message ?? "\(mapped)")
            }
        }
        return PlanGeneration(planID: plan.id, title: plan.title, made: 0, error: "the plan kept changing; the next pass tries again")
    }
}
