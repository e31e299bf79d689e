@testable import CentralStore
import Foundation
import PostgresNIO
@testable import ReplicaGenerator
import TeamDatabase
import Testing
import TeamworkModel
import TeamworkTestSupport

@Suite("Full rebuild: files built in parallel")
struct ParallelBuildsTests {
    @Test func aFileThatCannotBeWrittenStopsTheRebuildAndLeavesNoFileBehind() async throws {
        try await TestDatabase.withStore { store in
            let folder = FileManager.default.temporaryDirectory.appending(path: "parallel-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let directory = try ReplicaDirectory(folder)
            // One row of the replica columns whose title is NULL: SQLite's NOT NULL refuses it.
            let bad = try await store.rows("""
                SELECT ROW(7::bigint, NULL::text, ''::text, 'normal'::text, 1::bigint, NULL::bigint, NULL::bigint,
                       NULL::timestamptz, now(), now(), 1, 'open'::text, NULL::timestamptz, NULL::timestamptz,
                       NULL::bigint, NULL::text, NULL::bigint, NULL::text, NULL::float8, NULL::float8, NULL::float8,
                       NULL::text, NULL::text, NULL::text, NULL::text, NULL::text)
                """).map(RowCopier.init)
            let common = CommonData(teams: [], teamsByID: [:], people: [:], membersByTeam: [:])
            let builds = ParallelBuilds(directory: directory, feedPosition: 1, common: common, threads: 2, publishBatch: 100)
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
            for query: PostgresQuery in ["SELECT ROW(1::bigint, 'two'::text)", "SELECT 1::bigint, 2::bigint"] {
                let rows = try await store.rows(query)
                #expect(throws: ReplicaError.self) { try RowCopier(rows[0]) }
            }
        }
    }

    @Test func filesBuiltOnSeveralThreadsHoldTheirOwnRowsOnly() async throws {
        try await TestDatabase.withFresh { url in try await CentralStore.withStore(url) { store in
            let world = try await Fixtures.seed(store)
            var expected: [Int64: Set<Int64>] = [:]
            for index in 0..<40 {
                let team = index % 2 == 0 ? world.red : world.blue
                let task = try await store.createTask(try world.task("task \(index)", team: team))
                expected[team.id, default: []].insert(task.id)
            }
            let folder = FileManager.default.temporaryDirectory.appending(path: "parallel-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            for threads in [1, 2, 4] {
                let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder, writeBatch: 3,
                                                           publishBatch: 1, buildThreads: threads))
                try await generator.rebuildAll()
                #expect(try await generator.verify().isEmpty, "\(threads) threads")
                for (team, tasks) in expected {
                    let contents = try ReplicaContents.read(path: folder.appending(path: ReplicaID.team(team).fileName).path)
                    #expect(Set(contents.tasks.map(\.master.id)) == tasks, "\(threads) threads, team \(team)")
                }
            }
        } }
    }
}
