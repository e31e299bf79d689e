import CentralStore
import Foundation
import GRDB
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@Suite("Replica generator")
struct ReplicaGeneratorTests {
    @Test func aFullRebuildGivesEachTeamItsTasksAndNothingElse() async throws {
        try await withGenerator { store, world, generator in
            let red1 = try await store.createTask(try world.task("red one", team: world.red))
            let red2 = try await store.createTask(try world.task("red two", team: world.red, assignee: world.ann))
            let blue = try await store.createTask(try world.task("blue", team: world.blue, assignee: world.cy))
            let personal = try await store.createTask(try world.task("personal", assignee: world.bo))

            let result = try await generator.rebuildAll()
            #expect(result.tasks == 4)
            #expect(try await generator.verify().isEmpty)
            let holdings = try generator.holdings()
            #expect(holdings[.team(world.red.id)]?.map(\.id) == [red1.id, red2.id])
            #expect(holdings[.team(world.blue.id)]?.map(\.id) == [blue.id])
            #expect(holdings[.person(world.bo.id)]?.map(\.id) == [personal.id])

            let red = try generator.contents(.team(world.red.id))
            #expect(red.meta.kind == "team" && red.meta.ownerID == world.red.id && red.meta.slug == "red")
            #expect(red.meta.schemaVersion == ReplicaSchema.version)
            #expect(red.members.map(\.personID) == [world.ann.id, world.bo.id])
            #expect(red.locationIDs == [world.site.id])
        }
    }

    @Test func aTeamFileHoldsTheSitesOfItsTasksAsTheMasterHasThem() async throws {
        try await withGenerator { store, world, generator in
            let yard = try await store.addLocation(
                try NewLocation(
                    name: "North Yard", latitude: 52.25, longitude: 0.5, elevation: 12.5,
                    address: Address(street: "1 Quay St", city: "Ely", region: "Cambs", postalCode: "CB7 4AA", country: "GB")))
            let unused = try await store.addLocation(try NewLocation(name: "Nobody's", latitude: 1, longitude: 2))
            for location in [world.site.id, yard.id, yard.id] {
                _ = try await store.createTask(
                    try NewTask(
                        title: "job", assignment: try Assignment(teamID: world.red.id, assigneeID: nil),
                        locationID: location))
            }
            _ = try await store.createTask(
                try NewTask(
                    title: "blue job", assignment: try Assignment(teamID: world.blue.id, assigneeID: nil),
                    locationID: unused.id))
            try await generator.rebuildAll()
            let path = generator.path(of: .team(world.red.id))
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            let rows = try queue.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT id, name, latitude, longitude, elevation, street, city, region, postal_code, country FROM locations ORDER BY id
                        """)
            }
            #expect(rows.map { $0["id"] as Int64 } == [world.site.id, yard.id])
            let row = try #require(rows.last)
            #expect(row["name"] as String == "North Yard" && row["latitude"] as Double == 52.25 && row["longitude"] as Double == 0.5)
            #expect(row["elevation"] as Double? == 12.5 && row["street"] as String == "1 Quay St" && row["city"] as String == "Ely")
            #expect(row["region"] as String == "Cambs" && row["postal_code"] as String == "CB7 4AA" && row["country"] as String == "GB")
            #expect(try await generator.verify().isEmpty)
        }
    }

    @Test func replicasHoldNoEmails() async throws {
        try await withGenerator { store, world, generator in
            _ = try await store.createTask(try world.task(team: world.red))
            try await generator.rebuildAll()
            for name in try FileManager.default.contentsOfDirectory(atPath: generator.configuration.directory.path)
            where name.hasSuffix(".sqlite") {
                let bytes = try Data(contentsOf: generator.configuration.directory.appending(path: name))
                #expect(bytes.range(of: Data("@example.org".utf8)) == nil, "\(name) contains an email")
            }
        }
    }

    @Test func aRebuildChangesTheEpochAndKeepsUnappliedWorkerChanges() async throws {
        try await withGenerator { store, world, generator in
            _ = try await store.createTask(try world.task(team: world.red))
            try await generator.rebuildAll()
            let before = try generator.contents(.team(world.red.id))
            let path = generator.path(of: .team(world.red.id))
            try ReplicaSQL.run(
                path,
                """
                INSERT INTO worker_changes (change_id, person_id, task_id, operation, payload, made_at, received_at)
                VALUES ('c-1', \(world.ann.id), 1, 'complete', '{}', 1, 1)
                """)
            try await generator.rebuildAll()
            let after = try generator.contents(.team(world.red.id))
            #expect(after.meta.epoch != before.meta.epoch)
            #expect(after.acceptedWorkerChanges == 1)
        }
    }

    @Test func aChangePushedWhileAFileIsRebuiltIsCarriedIntoTheNewFile() async throws {
        try await withGenerator { store, world, generator in
            let created = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            try await generator.rebuildAll()
            let directory = try ReplicaDirectory(generator.configuration.directory)
            let red = ReplicaID.team(world.red.id)
            // The new file is built (and carries over what the old one held then)...
            let build = try directory.startBuild(of: red, feedPosition: 0)
            let task = try #require(try await store.currentTasks(forTeam: world.red.id).first?.task)
            try build.write { tx in try tx.upsert(task) }
            let finished = try build.finish()
            // ...then a worker's completion reaches the old file before the new one is swapped in.
            let results = try directory.push(
                [
                    WorkerChange(
                        id: "late-1", operation: .complete, taskID: created.id,
                        note: "done late", madeAt: Date())
                ],
                to: red, by: world.ann.id)
            #expect(results.map(\.status) == [.accepted])
            try directory.publish([finished])
            let contents = try generator.contents(red)
            #expect(contents.acceptedWorkerChanges == 1)
            let row = try #require(contents.tasks.first { $0.master.id == created.id })
            #expect(row.status == .completed && row.completionNote == "done late")
        }
    }

    @Test func aTeamTooBigToBuildInMemoryIsBuiltInItsTemporaryFile() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                for index in 0..<30 { _ = try await store.createTask(try world.task("task \(index)", team: world.red)) }
                let folder = FileManager.default.temporaryDirectory.appending(path: "spill-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: folder) }
                // No memory at all: every file moves to disk after its first write.
                let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder, writeBatch: 4, buildMemoryLimit: 0))
                try await generator.rebuildAll()
                #expect(try await generator.verify().isEmpty)
                let contents = try generator.contents(.team(world.red.id))
                #expect(contents.tasks.count == 30)
                let versions = try ReplicaSQL.fetchInts(
                    generator.path(of: .team(world.red.id)),
                    """
                    SELECT row_version FROM tasks UNION ALL SELECT row_version FROM members
                    UNION ALL SELECT row_version FROM locations
                    """)
                // 30 tasks, 2 members, 1 site.
                #expect(versions.count == 33 && Set(versions).count == versions.count, "each row its own version across the move to disk")
                #expect(contents.meta.rowCounter == versions.max())
            }
        }
    }

    @Test func incrementalCatchUpFollowsEditsMovesCancelsAndDeletes() async throws {
        try await withGenerator { store, world, generator in
            let task = try await store.createTask(try world.task("move me", team: world.red, assignee: world.ann))
            try await generator.rebuildAll()

            _ = try await store.updateTask(id: task.id, try TaskChanges(title: "moved"))
            _ = try await store.assignTask(id: task.id, to: try Assignment(teamID: world.blue.id, assigneeID: world.cy.id))
            var report = try await generator.catchUp()
            #expect(report.entries == 2)
            #expect(try await generator.verify().isEmpty)
            #expect(try generator.contents(.team(world.red.id)).tasks.isEmpty)
            #expect(try generator.contents(.team(world.blue.id)).tasks.map(\.master.title) == ["moved"])

            _ = try await store.assignTask(id: task.id, to: try Assignment(teamID: nil, assigneeID: world.bo.id))
            report = try await generator.catchUp()
            #expect(try generator.contents(.team(world.blue.id)).tasks.isEmpty)
            #expect(try generator.contents(.person(world.bo.id)).tasks.map(\.master.id) == [task.id])

            _ = try await store.cancelTask(id: task.id)
            try await generator.catchUp()
            #expect(try generator.contents(.person(world.bo.id)).tasks.first?.status == .cancelled)

            try await store.deleteTask(id: task.id)
            try await generator.catchUp()
            #expect(try generator.contents(.person(world.bo.id)).tasks.isEmpty)
            #expect(try await generator.verify().isEmpty)
        }
    }

    @Test func workerOwnedFieldsSurviveManagerEditsUntilTheMasterChangesThem() async throws {
        try await withGenerator { store, world, generator in
            let task = try await store.createTask(try world.task("meter", team: world.red, assignee: world.ann))
            try await generator.rebuildAll()
            try generator.simulateWorker(.team(world.red.id), task: task.id, status: .completed, note: "done, meter 4411", by: world.ann.id)

            _ = try await store.updateTask(
                id: task.id, try TaskChanges(title: "meter (urgent)", dueAt: .some(try ISODate.parse("2026-12-24"))))
            try await generator.catchUp()
            var row = try #require(try generator.contents(.team(world.red.id)).tasks.first)
            #expect(row.master.title == "meter (urgent)")
            #expect(row.status == .completed && row.completionNote == "done, meter 4411" && row.completedBy == world.ann.id)
            #expect(try await generator.verify().isEmpty)

            _ = try await store.cancelTask(id: task.id)
            try await generator.catchUp()
            row = try #require(try generator.contents(.team(world.red.id)).tasks.first)
            #expect(row.status == .cancelled, "a change the master makes to worker-owned fields wins")
            #expect(row.completionNote == nil)
        }
    }

    @Test func teamsComeAndGoWithTheirReplicas() async throws {
        try await withGenerator { store, world, generator in
            try await generator.rebuildAll()
            let green = try await store.addTeam(try NewTeam(slug: "green", name: "Green"))
            try await store.addMember(teamID: green.id, personID: world.cy.id)
            try await generator.catchUp()
            let file = try generator.contents(.team(green.id))
            #expect(file.meta.slug == "green" && file.members.map(\.personID) == [world.cy.id])

            _ = try await store.updatePerson(id: world.cy.id, try PersonChanges(firstName: "Cyrus"))
            try await generator.catchUp()
            #expect(try generator.contents(.team(green.id)).members.first?.firstName == "Cyrus")
            #expect(try generator.contents(.team(world.blue.id)).members.first?.firstName == "Cyrus")

            try await store.removeTeam(id: green.id)
            try await generator.catchUp()
            #expect(
                !FileManager.default.fileExists(atPath: generator.path(of: .team(green.id))))
            let retired = try FileManager.default.contentsOfDirectory(
                atPath: generator.configuration.directory.appending(path: "retired").path)
            #expect(retired.contains { $0.hasPrefix("team-\(green.id).sqlite.") })
            #expect(try await generator.verify().isEmpty)
        }
    }

    /// Seen on main (issue 50): verify reported drift for every task that names its own customer, a
    /// column that never goes to devices.
    @Test func verifyIsCleanForTasksAndSitesWithCustomers() async throws {
        try await withGenerator { store, world, generator in
            let customer = try await store.addCustomer(try NewCustomer(name: "Ola", email: "ola@example.org", consent: true))
            let other = try await store.addCustomer(try NewCustomer(name: "Eva", email: "eva@example.org"))
            try await store.setSiteCustomer(locationID: world.site.id, customerID: customer.id)
            var own = try world.task("its own customer", team: world.red)
            own.customerID = other.id
            own.locationID = world.site.id
            var site = try world.task("the site's customer", team: world.red)
            site.locationID = world.site.id
            _ = try await store.createTask(own)
            _ = try await store.createTask(site)
            try await generator.rebuildAll()
            #expect(try await generator.verify().map(\.message) == [])
            try await generator.catchUp()
            #expect(try await generator.verify().map(\.message) == [])
        }
    }

    @Test func verifyReportsDriftItDidNotCause() async throws {
        try await withRebuiltRedTask("x") { world, generator, task, path in
            try ReplicaSQL.run(path, "UPDATE tasks SET title = 'tampered' WHERE id = \(task.id)")
            try ReplicaSQL.run(
                path,
                """
                CREATE TEMP TABLE copied AS SELECT * FROM tasks WHERE id = \(task.id);
                UPDATE copied SET id = 999, team_id = \(world.blue.id);
                INSERT INTO tasks SELECT * FROM copied;
                """
            )
            let drift = try await generator.verify().map(\.message)
            #expect(drift.contains { $0.contains("task \(task.id) differs from the master in title ") }, "\(drift)")
            #expect(drift.contains("holds task 999, which the master does not give to it"))
            // A value the file holds damaged (not a checklist's JSON) is drift of that task, not an unreadable file.
            try ReplicaSQL.run(path, "UPDATE tasks SET title = 'x', checklist = '{not json' WHERE id = \(task.id)")
            let damaged = try await generator.verify().map(\.message)
            #expect(damaged.contains("task \(task.id) holds a value that does not parse"), "\(damaged)")
            #expect(damaged.contains("holds task 999, which the master does not give to it"), "the rest of the file is still compared")
        }
    }

    /// The parts catalogue travels in the common replica: verify holds it to the master's too.
    @Test func verifyComparesTheCommonReplicasCatalogue() async throws {
        try await withGenerator { store, world, generator in
            let cable = try await store.addPart(
                try NewPart(code: "CBL-3", name: "Cable 3x2.5", unit: "m", unitPrice: "12.5", currency: "SEK"))
            _ = try await store.addPart(try NewPart(code: "FUSE-1", name: "Fuse", unit: "piece", unitPrice: nil, currency: nil))
            try await generator.rebuildAll()
            #expect(try await generator.verify().isEmpty)
            let path = generator.path(of: .common)
            try ReplicaSQL.run(path, "UPDATE parts SET unit_price = '0.01' WHERE id = \(cable.id)")
            try ReplicaSQL.run(
                path,
                "INSERT INTO parts (id, code, name, unit, unit_price, currency, retired, row_version) VALUES (999, 'X', 'x', 'm', NULL, NULL, 0, 1)"
            )
            let drift = try await generator.verify().map(\.message)
            #expect(
                drift.contains { $0.hasPrefix("part \(cable.id) differs from the master: \(cable.id) CBL-3 Cable 3x2.5 m 0.01 SEK") },
                "\(drift)")
            #expect(drift.contains("holds part 999, which the master does not have"), "\(drift)")
            _ = world
        }
    }

    @Test(arguments: 1...3)
    func randomizedChangesLeaveNoDriftAfterCatchingUp(seed: UInt64) async throws {
        try await withGenerator { store, world, generator in
            var random = SplitMix(seed: seed)
            try await generator.rebuildAll()
            var ids: [Int64] = []
            let teams = [world.red, world.blue]
            let members = [world.red.id: [world.ann, world.bo], world.blue.id: [world.cy]]
            for step in 0..<120 {
                let choice = ids.isEmpty ? 0 : random.next(6)
                let id = ids.isEmpty ? 0 : ids[random.next(ids.count)]
                switch choice {
                case 0, 1:
                    let team = teams[random.next(2)]
                    let assignee = random.next(3) == 0 ? nil : members[team.id]!.randomElement(using: &random)
                    let personal = random.next(5) == 0
                    ids.append(
                        try await store.createTask(
                            try world.task(
                                "task \(step)", team: personal ? nil : team, assignee: personal ? world.ann : assignee
                            )
                        ).id)
                case 2:
                    _ = try await store.updateTask(id: id, try TaskChanges(title: "edited \(step)", priority: .urgent))
                case 3:
                    let team = teams[random.next(2)]
                    let assignee = members[team.id]!.randomElement(using: &random)
                    _ = try? await store.assignTask(id: id, to: try Assignment(teamID: team.id, assigneeID: assignee?.id))
                case 4:
                    _ = try? await store.cancelTask(id: id)
                default:
                    try await store.deleteTask(id: id)
                    ids.removeAll { $0 == id }
                }
                if random.next(10) == 0 { try await generator.catchUp() }
            }
            try await generator.catchUp()
            let drift = try await generator.verify()
            #expect(drift.isEmpty, "\(drift)")
            for (replica, tasks) in try generator.holdings() {
                for task in tasks {
                    #expect(ReplicaID.holding(teamID: task.teamID, assigneeID: task.assigneeID) == replica)
                }
            }
        }
    }
}

/// Writes to a replica file from outside the generator.
enum ReplicaSQL {
    static func run(_ path: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.write { try $0.execute(sql: sql) }
    }

    static func fetchInts(_ path: String, _ sql: String) throws -> [Int64] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { try Int64.fetchAll($0, sql: sql) }
    }
}
