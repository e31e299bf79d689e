import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// The master's PL/pgSQL (`teamwork_apply_field_changes`, as the listener
/// calls it) against the same table of cases as the device and the replica
/// (`FieldChangeContractTests`): the same verdicts, the same task after.
@Suite("Field work contract: the master")
struct MasterContractTests {
    @Test func theMasterTakesOrRefusesEachChangeOfTheTableAndLeavesTheTablesTaskAfter() async throws {
        let cases = try FieldChangeCase.all()
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let (me, other) = (world.ann.id, world.bo.id)
                func sql(_ query: PostgresQuery) async throws -> [PostgresRow] {
                    try await store.connection.query(query, logger: store.logger).collect()
                }
                // The catalogue the cases' uses name: a part, and one retired.
                _ = try await sql(
                    """
                    INSERT INTO parts (code, name, unit, unit_price, currency, retired_at)
                    VALUES ('CBL-3', 'Cable 3x2.5', 'm', 12.5, 'SEK', NULL), ('OLD-1', 'Old fuse', 'piece', NULL, NULL, now())
                    """)
                for (index, item) in cases.enumerated() {
                    let before = item.before
                    func id(_ who: FieldChangeCase.Who?) -> Int64? { who?.id(me: me, other: other) }
                    // The task as the case has it: set up by hand, past the rules a manager's tools enforce.
                    _ = try await sql("UPDATE people SET skills = \(item.skills) WHERE id = \(me)")
                    // Past the skills rule as a manager's --force is: a transaction marked forced.
                    _ = try await sql("BEGIN")
                    _ = try await sql("SELECT teamwork_mark('forced', 'contract test')")
                    let teamID: Int64? = item.inTeam ? world.red.id : nil
                    // The case's checklist as a checklist of its own, version 1.
                    var checklistID: Int64?
                    if let items = item.checklist {
                        let json = String(decoding: try JSONEncoder().encode(items), as: UTF8.self)
                        checklistID = try await sql("INSERT INTO checklists (name) VALUES (\("contract \(index)")) RETURNING id")
                            .first!.decode(Int64.self)
                        _ = try await sql(
                            "INSERT INTO checklist_versions (checklist_id, version, items) VALUES (\(checklistID), 1, \(json)::jsonb)")
                    }
                    let answers = FieldTask.json(item.answers(before, me: me, other: other, changedAt: nil))
                    let taskID = try await sql(
                        """
                        INSERT INTO tasks (title, team_id, assignee_id, required_skills, status, started_at, completed_at,
                                           completed_by, completion_note, checklist_id, checklist_version, answers)
                        VALUES (\(item.name), \(teamID), \(id(before.assignee)), \(FieldChangeCase.requiredSkills),
                                \(before.status.rawValue), \(before.startedAt), \(before.completedAt), \(id(before.completedBy)),
                                \(before.completionNote), \(checklistID), \(checklistID.map { _ in 1 }), \(answers)::jsonb)
                        RETURNING id
                        """
                    ).first!.decode(Int64.self)
                    for line in before.materials ?? [] {
                        _ = try await sql(
                            """
                            INSERT INTO task_materials (task_id, person_id, part_id, description, quantity, recorded_at, change_id)
                            VALUES (\(taskID), \(line.by.id(me: me, other: other)),
                                    (SELECT id FROM parts WHERE code = \(line.part)), \(line.description), \(line.quantity)::numeric,
                                    \(line.recordedAt ?? FieldChangeCase.answeredBefore), 'before')
                            """)
                    }
                    for entry in before.time ?? [] {
                        _ = try await sql(
                            """
                            INSERT INTO time_entries (task_id, person_id, kind, started_at, ended_at, source, recorded_at)
                            VALUES (\(taskID), \(entry.by.id(me: me, other: other)), \(entry.kind), \(entry.start), \(entry.end),
                                    \(entry.source ?? "worker"), \(entry.recordedAt ?? entry.start))
                            """)
                    }
                    _ = try await sql("COMMIT")

                    let made = Int64((item.change.madeAt.timeIntervalSince1970 * 1000).rounded())
                    let change = RecordedWorkerChange(
                        position: Int64(index + 1), changeID: "contract-\(index)", personID: me, taskID: taskID,
                        operation: item.change.operation, note: item.change.note, madeAt: made,
                        receivedAt: made + Int64(FieldChangeCase.deliveryDelay * 1000), item: item.change.item, value: item.change.value,
                        blob: item.change.blob, size: item.change.size, mediaType: item.change.mediaType, signer: item.change.signer)
                    let replica = item.inTeam ? "team-\(world.red.id)" : "person-\(me)"
                    let outcome = try await store.applyFieldChanges(
                        replica: replica, source: "contract", [change],
                        cursor: ListenerCursor(position: change.position, changeID: change.changeID))
                    #expect(
                        outcome.first?.applied == item.master.applied && outcome.first?.conflict == item.master.conflict,
                        "\(item.name): \(outcome)")

                    let after = try await sql(
                        """
                        SELECT status, assignee_id, started_at, completed_at, completed_by, completion_note, answers::text
                        FROM tasks WHERE id = \(taskID)
                        """
                    ).first!.decode((String, Int64?, Date?, Date?, Int64?, String?, String).self)
                    let expected = item.after
                    #expect(
                        after.0 == expected.status.rawValue && after.1 == id(expected.assignee) && after.4 == id(expected.completedBy)
                            && after.5 == expected.completionNote && Self.same(after.2, expected.startedAt)
                            && Self.same(after.3, expected.completedAt), "\(item.name): \(after)")
                    #expect(
                        try FieldTask.answers(json: after.6) == item.answers(expected, me: me, other: other, changedAt: item.change.madeAt),
                        "\(item.name): \(after.6)")
                    let used = try await sql(
                        """
                        SELECT p.code, m.description, m.quantity::text, m.person_id
                        FROM task_materials m LEFT JOIN parts p ON p.id = m.part_id WHERE m.task_id = \(taskID) AND m.quantity > 0
                        """
                    ).map { row in
                        let (part, description, quantity, person) = try row.decode((String?, String?, String, Int64).self)
                        return FieldChangeCase.Material(
                            part: part, description: description, quantity: Self.exact(quantity), by: person == me ? .me : .other)
                    }
                    // A removed line (quantity 0) is not what was used; when a line was recorded is not compared.
                    let lines = (expected.materials ?? []).filter { $0.quantity != "0" }.map { line in
                        FieldChangeCase.Material(part: line.part, description: line.description, quantity: line.quantity, by: line.by)
                    }
                    #expect(Set(used) == Set(lines), "\(item.name): \(used)")
                    if let time = expected.time {
                        // An entry of no length is a removed one; when an entry was recorded is not compared.
                        let entries = try await sql(
                            """
                            SELECT kind, started_at, ended_at, person_id, source FROM time_entries
                            WHERE task_id = \(taskID) AND (ended_at IS NULL OR ended_at > started_at)
                            """
                        ).map { row in
                            let (kind, start, end, person, source) = try row.decode((String, Date, Date?, Int64, String).self)
                            return FieldChangeCase.TimeLine(
                                kind: kind, start: start, end: end, by: person == me ? .me : .other, source: source)
                        }
                        let wanted = time.map {
                            FieldChangeCase.TimeLine(kind: $0.kind, start: $0.start, end: $0.end, by: $0.by, source: $0.source ?? "worker")
                        }
                        #expect(Set(entries) == Set(wanted), "\(item.name): \(entries)")
                    }
                    _ = try await sql("DELETE FROM tasks WHERE id = \(taskID)")
                }
            }
        }
    }

    /// A numeric as a person writes it: 12.500 is 12.5, 10.000 is 10.
    static func exact(_ quantity: String) -> String {
        guard quantity.contains(".") else { return quantity }
        let trimmed = quantity.reversed().drop { $0 == "0" }.drop { $0 == "." }
        return String(trimmed.reversed())
    }

    /// Equal to the millisecond: the master keeps microseconds of a time made from milliseconds.
    static func same(_ a: Date?, _ b: Date?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case let (a?, b?): abs(a.timeIntervalSince(b)) < 0.001
        default: false
        }
    }
}
