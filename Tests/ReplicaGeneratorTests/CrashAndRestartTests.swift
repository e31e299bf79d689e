@_spi(Benchmark) import CentralStore
import Foundation
import GRDB
import LocalPostgres
import ReplicaGenerator
@_spi(Benchmark) import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Replica generator: crashes, restarts, lost notifications")
struct CrashAndRestartTests {
    @Test func killingAFullRebuildLeavesEveryFileValidAndTheNextRunFinishesTheJob() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "crash-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            try await CentralStore.withStore(url) { try await $0.benchmarkSeed(teams: 200, tasksPerTeam: 200) }
            let arguments = [Tool.service.path, "replicate", "--full", "--database-url", url.connectionString, "--replicas", folder.path]
            let log = folder.path + ".log"
            defer { unlink(log) }
            #expect(try await ChildProcess.finish(arguments, standardOutput: log, standardError: log) == 0)

            var random = SplitMix(seed: 7)
            var interrupted = 0
            for round in 0..<6 {
                // Change the master so the new files differ from the old ones.
                _ = try await CentralStore.withStore(url) { try await $0.benchmarkTouch(firstTasks: 500 * (round + 1)) }
                let pid = try ChildProcess.spawn(arguments, standardOutput: log, standardError: log)
                try await Task.sleep(for: .milliseconds(50 + random.next(600)))
                kill(pid, SIGKILL)
                if try await ChildProcess.wait(pid, within: .seconds(30)) == 128 + SIGKILL { interrupted += 1 }
                for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".sqlite") {
                    let meta = try ReplicaMeta.read(path: folder.appending(path: name).path)
                    #expect(meta.schemaVersion == ReplicaSchema.version, "\(name) after kill \(round)")
                }
            }
            #expect(interrupted >= 3, "most kills must land while the rebuild runs")
            #expect(try await ChildProcess.finish(arguments, standardOutput: log, standardError: log) == 0)
            let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder))
            let drift = try await generator.verify()
            #expect(drift.isEmpty, "\(drift.prefix(5))")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".building-") }
            #expect(leftovers.isEmpty)
        }
    }

    @Test func continuousModeAppliesChangesPromptlyAndCatchesUpAfterARestart() async throws {
        try await withGenerator { store, world, generator in
            let task = try await store.createTask(try world.task("first", team: world.red))
            let running = Task { try await generator.run() }
            try await expectEventually("the new task replicated", within: .seconds(10), every: .milliseconds(20)) {
                (try? generator.contents(.team(world.red.id)).tasks.map(\.master.title)) == ["first"]
            }
            _ = try await store.updateTask(id: task.id, try TaskChanges(title: "renamed while running"))
            try await expectEventually("the rename replicated", within: .seconds(10), every: .milliseconds(20)) {
                (try? generator.contents(.team(world.red.id)).tasks.first?.master.title) == "renamed while running"
            }
            running.cancel()
            _ = try? await running.value

            // Stopped: these changes' notifications reach nobody.
            _ = try await store.updateTask(id: task.id, try TaskChanges(title: "renamed while stopped"))
            let second = try await store.createTask(try world.task("second", team: world.blue))
            #expect(try generator.contents(.team(world.red.id)).tasks.first?.master.title == "renamed while running")

            let restarted = Task { try await generator.run() }
            defer { restarted.cancel() }
            try await expectEventually("the restarted generator caught up", within: .seconds(10), every: .milliseconds(20)) {
                (try? generator.contents(.team(world.red.id)).tasks.first?.master.title == "renamed while stopped"
                    && generator.contents(.team(world.blue.id)).tasks.map(\.master.id) == [second.id]) ?? false
            }
            let drift = try await generator.verify()
            #expect(drift.isEmpty, "\(drift)")
        }
    }

    /// Also when the generator has a connection open to the file from its last
    /// pass (it keeps them), and the damage is written into that same file.
    @Test func aDamagedReplicaIsRebuiltOnTheNextPass() async throws {
        try await withGenerator { store, world, generator in
            let task = try await store.createTask(try world.task("x", team: world.red))
            try await generator.rebuildAll()
            _ = try await store.updateTask(id: task.id, try TaskChanges(title: "before the damage"))
            try await generator.catchUp()
            let path = generator.file(of: .team(world.red.id))
            let inode = try FileManager.default.attributesOfItem(atPath: path.path)[.systemFileNumber] as? Int
            let handle = try FileHandle(forWritingTo: path)
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: Data("this is not a database".utf8))
            try handle.close()
            #expect(try FileManager.default.attributesOfItem(atPath: path.path)[.systemFileNumber] as? Int == inode)
            _ = try await store.updateTask(id: task.id, try TaskChanges(title: "after the damage"))
            try await generator.catchUp()
            #expect(try generator.contents(.team(world.red.id)).tasks.first?.master.title == "after the damage")
            #expect(try await generator.verify().isEmpty)
        }
    }

    @Test func aDeletedCommonReplicaComesBackOnTheNextPass() async throws {
        try await withGenerator { store, world, generator in
            try await generator.rebuildAll()
            try FileManager.default.removeItem(at: generator.file(of: .common))
            _ = try await store.updatePerson(id: world.ann.id, try PersonChanges(lastName: "Renamed"))
            try await generator.catchUp()
            let meta = try ReplicaMeta.read(path: generator.path(of: .common))
            #expect(meta.kind == "common")
            #expect(try await generator.verify().isEmpty)
        }
    }
}
