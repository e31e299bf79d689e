import Foundation
import PostgresNIO
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore
@testable import ReplicaGenerator

@Suite("Full rebuild: files built in parallel")
struct ParallelBuildsTests {
    @Test func aFileThatCannotBeWrittenStopsTheRebuildAndLeavesNoFileBehind() async throws {
        try await TestDatabase.withStore { store in
            let folder = FileManager.default.temporaryDirectory.appending(path: "parallel-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let directory = try ReplicaDirectory(folder)
            // One row of the replica columns (as TaskSchema declares them) whose title is NULL: SQLite's NOT NULL refuses it.
            let bad = try await store.rows(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT ROW(\(ReplicationSnapshot.replicaRowColumns)) FROM jsonb_populate_record(NULL::tasks, '{
                            "id": 7, "description": "", "priority": "normal", "status": "open", "team_id": 1, "version": 1,
                            "created_at": "2026-11-28T12:00:00Z", "updated_at": "2026-11-28T12:00:00Z",
                            "required_skills": [], "time_zone": "UTC", "answers": {}}') k
                        """)
            ).map(RowCopier.init)
            let common = CommonData(teams: [], teamsByID: [:], people: [:], membersByTeam: [:])
            let builds = ParallelBuilds(
                directory: directory, feedPosition: 1, common: common, locationsFrom: nil,
                threads: 2, publishBatch: 100)
            for team in 1...6 {
                try? await builds.begin(.team(Int64(team)))
                if team == 3 { try? await builds.write(bad) }
                try? await builds.finish()
            }
            await #expect(throws: (any Error).self) { try await builds.drain() }
            await builds.abandon()
            let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0 != "retired" }
            #expect(left.allSatisfy { !$0.contains(".building-") }, "\(left)")
            #expect(try directory.replicas().isEmpty, "nothing was published")
        }
    }

    @Test func aRowThatIsNotAReplicaRecordIsRefusedNotMisread() async throws {
        try await TestDatabase.withStore { store in
            // A row of the right length whose title is a number: a column declared as text that is not is refused.
            let mistyped = ReplicationSnapshot.replicaRowColumns.replacing("k.title", with: "42::bigint", maxReplacements: 1)
            let wrongType = PostgresQuery(
                unsafeSQL: """
                    SELECT ROW(\(mistyped)) FROM jsonb_populate_record(NULL::tasks, '{
                        "id": 7, "description": "", "priority": "normal", "status": "open", "version": 1,
                        "created_at": "2026-11-28T12:00:00Z", "updated_at": "2026-11-28T12:00:00Z",
                        "required_skills": [], "time_zone": "UTC", "answers": {}}') k
                    """)
            for query: PostgresQuery in ["SELECT ROW(1::bigint, 'two'::text)", "SELECT 1::bigint, 2::bigint", wrongType] {
                let rows = try await store.rows(query)
                #expect(throws: ReplicaError.self) { try RowCopier(rows[0]) }
            }
        }
    }

    @Test func filesBuiltOnSeveralThreadsHoldTheirOwnRowsOnly() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let expected = try await Self.tasksInRedAndBlue(40, store, world)
                let folder = FileManager.default.temporaryDirectory.appending(path: "parallel-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: folder) }
                for threads in [1, 2, 4] {
                    let generator = try ReplicaGenerator(
                        .init(
                            databaseURL: url, directory: folder, writeBatch: 3,
                            publishBatch: 1, buildThreads: threads))
                    try await generator.rebuildAll()
                    #expect(try await generator.verify().isEmpty, "\(threads) threads")
                    for (team, tasks) in expected {
                        let contents = try ReplicaContents.read(path: folder.appending(path: ReplicaID.team(team).fileName).path)
                        #expect(Set(contents.tasks.map(\.master.id)) == tasks, "\(threads) threads, team \(team)")
                    }
                }
            }
        }
    }

    @Test func oneConnectionBuildsFileAfterFileWholeAlsoAfterCarryingOverWorkerChanges() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let expected = try await Self.tasksInRedAndBlue(12, store, world)
                let folder = FileManager.default.temporaryDirectory.appending(path: "connection-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: folder) }
                // One thread: one connection builds every team file in turn.
                let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder, buildThreads: 1))
                try await generator.rebuildAll()
                // A worker's change in each team file: the next rebuild attaches each old file
                // to the connection to carry it over, and detaches it before the next file.
                for team in [world.red, world.blue] {
                    try ReplicaSQL.run(
                        folder.appending(path: ReplicaID.team(team.id).fileName).path,
                        """
                        INSERT INTO worker_changes (change_id, person_id, task_id, operation, payload, made_at, received_at)
                        VALUES ('c-\(team.id)', \(world.ann.id), \(expected[team.id]!.min()!), 'start', '{}', 1, 1)
                        """)
                }
                try await generator.rebuildAll()
                #expect(try await generator.verify().isEmpty)
                for (team, tasks) in expected {
                    let contents = try generator.contents(.team(team))
                    #expect(Set(contents.tasks.map(\.master.id)) == tasks, "team \(team)")
                    #expect(contents.locationIDs.count == 1 && contents.members.count >= 1, "team \(team)")
                    #expect(contents.acceptedWorkerChanges == 1, "team \(team)")
                }
            }
        }
    }

    @Test func filesWithWorkerChangesAreRebuiltOnSeveralThreadsAtOnce() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                var teams = [world.red, world.blue]
                for index in 0..<18 { teams.append(try await store.addTeam(try NewTeam(slug: "crew-\(index)", name: "Crew \(index)"))) }
                var firstTask: [Int64: Int64] = [:]
                for team in teams {
                    for index in 0..<3 {
                        let task = try await store.createTask(try world.task("task \(index)", team: team))
                        firstTask[team.id] = firstTask[team.id] ?? task.id
                    }
                }
                let folder = FileManager.default.temporaryDirectory.appending(path: "carry-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: folder) }
                let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder, buildThreads: 2))
                try await generator.rebuildAll()
                for team in teams {
                    try ReplicaSQL.run(
                        folder.appending(path: ReplicaID.team(team.id).fileName).path,
                        """
                        INSERT INTO worker_changes (change_id, person_id, task_id, operation, payload, made_at, received_at)
                        VALUES ('c-\(team.id)', \(world.ann.id), \(firstTask[team.id]!), 'start', '{}', 1, 1)
                        """)
                }
                // Both threads carry over at once, each with the common replica attached:
                // neither may lock a file the other needs.
                for _ in 0..<3 { try await generator.rebuildAll() }
                #expect(try await generator.verify().isEmpty)
                for team in teams {
                    #expect(try generator.contents(.team(team.id)).acceptedWorkerChanges == 1, "team \(team.id)")
                }
            }
        }
    }

    @Test func aRebuildWritesOverTheFileTheLastRebuildReplacedUnlessSomeoneHasItOpen() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                _ = try await store.createTask(try world.task("red work", team: world.red))
                _ = try await store.createTask(try world.task("blue work", team: world.blue))
                let folder = FileManager.default.temporaryDirectory.appending(path: "spares-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: folder) }
                let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder))
                let red = folder.appending(path: ReplicaID.team(world.red.id).fileName).path
                let blue = folder.appending(path: ReplicaID.team(world.blue.id).fileName).path
                func inode(_ path: String) throws -> UInt64 {
                    try #require(FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64)
                }

                try await generator.rebuildAll()
                let first = (red: try inode(red), blue: try inode(blue))
                try await generator.rebuildAll()
                #expect(try inode(red + ".spare") == first.red, "the replaced file is kept as the spare")
                #expect(try inode(red) != first.red)

                // Someone still reads blue's old file: it must not be written over.
                let reader = try FileHandle(forReadingFrom: URL(fileURLWithPath: blue + ".spare"))
                defer { try? reader.close() }
                let before = try reader.readToEnd()
                try await generator.rebuildAll()
                #expect(try inode(red) == first.red, "the spare was written over and swapped in")
                #expect(try inode(blue) != first.blue, "a spare someone has open gets a new file instead")
                try reader.seek(toOffset: 0)
                #expect(try reader.readToEnd() == before, "what the reader has open is unchanged")
                #expect(try await generator.verify().isEmpty)
                let contents = try ReplicaContents.read(path: red)
                #expect(contents.tasks.map(\.master.title) == ["red work"])

                // A crash after keeping the spare and before the swap leaves the live file with two names.
                let live = try inode(red)
                try FileManager.default.removeItem(atPath: red + ".spare")
                try FileManager.default.linkItem(atPath: red, toPath: red + ".spare")
                try await generator.rebuildAll()
                #expect(try inode(red) != live, "the live file is never written over in place")
                #expect(try await generator.verify().isEmpty)
            }
        }
    }

    /// Creates `count` tasks, alternately Red's and Blue's; the ids of each team's.
    private static func tasksInRedAndBlue(_ count: Int, _ store: CentralStore, _ world: Fixtures) async throws -> [Int64: Set<Int64>] {
        var tasks: [Int64: Set<Int64>] = [:]
        for index in 0..<count {
            let team = index % 2 == 0 ? world.red : world.blue
            let task = try await store.createTask(try world.task("task \(index)", team: team))
            tasks[team.id, default: []].insert(task.id)
        }
        return tasks
    }
}
