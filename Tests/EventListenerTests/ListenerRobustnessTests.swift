import EventListener
import Foundation
import GRDB
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("Event listener: locks, damaged files, restarts")
struct ListenerRobustnessTests {
    @Test func aReplicaAnotherInstanceHoldsIsLeftToItAndTakenInOnceReleased() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, id: "c-1"))
            try world.push(world.blue, by: world.fixtures.cy, .complete(world.cyTask, id: "c-2"))
            let redSource = ReplicaDirectory.source(world.red.name, identity: try world.directory.identity())
            try await CentralStore.withStore(world.url) { other in
                #expect(try await other.tryLockReplica(redSource))
                let report = try await world.listener.once()
                #expect(report.busy == [world.red.name])
                #expect(report.recorded == 1, "blue carries on")
                #expect(try await store.task(id: world.annTask).status == .assigned)
                try await other.unlockReplica(redSource)
            }
            let after = try await world.listener.once()
            #expect(after.busy.isEmpty && after.recorded == 1)
            #expect(try await store.task(id: world.annTask).status == .completed)
        }
    }

    /// A replica written before the endpoint bounded `made_at` holds a check-in
    /// from the year 300000, which PostgreSQL cannot hold: it used to stop every
    /// later change of its team from reaching the master, for good.
    @Test func aChangeTheMasterCannotTakeIsSetAsideAndTheChangesAfterItGoThrough() async throws {
        try await ListenerWorld.with { world, store in
            let queue = try DatabaseQueue(path: world.path(world.red))
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO worker_changes (change_id, person_id, task_id, operation, payload, made_at, received_at, rejection)
                        VALUES ('far-future', ?, NULL, 'checkin', '{}', 9404200000000000, ?, NULL)
                        """, arguments: [world.fixtures.ann.id, Int64(Date().timeIntervalSince1970 * 1000)])
            }
            try queue.close()
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, note: "after the bad one", id: "c-after"))

            let report = try await world.listener.once()
            #expect(report.complete, "\(report.skipped)")
            let task = try await store.task(id: world.annTask)
            #expect(task.status == .completed && task.completionNote == "after the bad one")
            let conflicts = try await store.conflicts()
            #expect(conflicts.map(\.changeID) == ["far-future"] && conflicts.first?.rule == "invalid", "\(conflicts)")
            #expect(try await world.listener.once().recorded == 0, "the cursor moved past both")
        }
    }

    @Test func aClaimBySomeoneWithoutARequiredSkillTheReplicaDidNotKnowOfIsRefusedWithTheReasonAndTheOthersGoThrough() async throws {
        try await ListenerWorld.with { world, store in
            _ = try await world.generator.catchUp()
            // The replica does not know yet that the task needs climbing, so the endpoint takes Bo's claim.
            _ = try await store.updateTask(id: world.freeTask, try TaskChanges(requiredSkills: ["climbing"]))
            try world.push(world.red, by: world.fixtures.bo, .claim(world.freeTask, id: "claim-unskilled"))
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, note: "done", id: "c-next"))

            let report = try await world.listener.once()
            #expect(report.complete, "\(report.skipped)")
            #expect(try await store.task(id: world.freeTask).assigneeID == nil, "the master's rule held")
            #expect(try await store.task(id: world.annTask).status == .completed)
            let conflicts = try await store.conflicts()
            #expect(conflicts.map(\.changeID) == ["claim-unskilled"] && conflicts.first?.rule == "missing_skills", "\(conflicts)")
            #expect(conflicts.first?.detail?.contains("needs climbing") == true, "\(conflicts)")
        }
    }

    /// A batch is one jsonb value for the master: it is bounded in bytes, not only in changes.
    @Test func aBatchStopsAtItsByteBudgetButAlwaysHoldsOneChangeAndTheListenerTakesAllIn() async throws {
        try await ListenerWorld.with { world, store in
            let note = String(repeating: "n", count: WorkerChange.maximumNoteBytes)
            let changes = (0..<30).map { WorkerChange(id: "big-\($0)", operation: .complete, taskID: 999_999, note: note, madeAt: Date()) }
            _ = try world.directory.push(changes, to: world.red, by: world.fixtures.ann.id)
            let path = world.path(world.red)
            let bounded = try ReplicaDirectory.workerChanges(at: path, after: .start, limit: 1_000, maximumBytes: 50_000)
            #expect((1...5).contains(bounded.changes.count), "\(bounded.changes.count) changes")
            #expect(try ReplicaDirectory.workerChanges(at: path, after: .start, limit: 1_000, maximumBytes: 1).changes.count == 1)
            #expect(try ReplicaDirectory.workerChanges(at: path, after: .start, limit: 1_000).changes.count == 30)
            let report = try await world.listener.once()
            #expect(report.recorded == 30 && report.complete)
        }
    }

    @Test func twoListenersRacingOverManyReplicasNeverTakeAChangeInTwice() async throws {
        try await ListenerWorld.with { world, store in
            var expected: [String] = []
            for round in 0..<40 {
                let task = try await store.createTask(
                    try world.fixtures.task("job \(round)", team: world.fixtures.red, assignee: world.fixtures.ann))
                _ = try await world.generator.catchUp()
                try world.push(world.red, by: world.fixtures.ann, .start(task.id, id: "s-\(round)"), .complete(task.id, id: "c-\(round)"))
                expected += ["s-\(round)", "c-\(round)"]
            }
            let second = try EventListener(.init(databaseURL: world.url, directory: world.folder, batchSize: 3))
            async let one = world.listener.once()
            async let two = second.once()
            let (a, b) = try await (one, two)
            let third = try await world.listener.once()
            #expect(a.recorded + b.recorded + third.recorded == expected.count)
            #expect(try await store.ledgerCount() == expected.count)
            let history = try await store.historyCountsByFieldChange()
            #expect(history.count == expected.count && history.values.allSatisfy { $0 == 1 })
        }
    }

    @Test func aDamagedReplicaIsReportedAndSkippedWhileTheOthersCarryOn() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, id: "c-1"))
            try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: world.path(world.blue)))
            let report = try await world.listener.once()
            #expect(!report.complete)
            #expect(report.skipped.keys.sorted() == [world.blue.name])
            #expect(report.recorded == 1)
            #expect(try await store.task(id: world.annTask).status == .completed)
        }
    }

    @Test func aReplicaLockedByAWriterIsReportedAndSkippedThenTakenInOnceFree() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, id: "c-1"))
            try world.push(world.blue, by: world.fixtures.cy, .complete(world.cyTask, id: "c-2"))
            // Another process writing the blue file holds SQLite's exclusive lock past the listener's busy timeout.
            var holding = Configuration()
            holding.allowsUnsafeTransactions = true
            let writer = try DatabaseQueue(path: world.path(world.blue), configuration: holding)
            try await writer.writeWithoutTransaction { try $0.execute(sql: "BEGIN EXCLUSIVE") }
            let report = try await world.listener.once()
            #expect(report.skipped.keys.sorted() == [world.blue.name])
            #expect(report.skipped[world.blue.name]?.contains("lock") == true, "\(report.skipped)")
            #expect(report.recorded == 1, "red carries on")
            #expect(try await store.task(id: world.cyTask).status == .assigned)

            try await writer.writeWithoutTransaction { try $0.execute(sql: "ROLLBACK") }
            try writer.close()
            let after = try await world.listener.once()
            #expect(after.complete && after.recorded == 1)
            #expect(try await store.task(id: world.cyTask).status == .completed)
        }
    }

    @Test func aRecreatedReplicaWhosePositionsRestartedIsStillTakenIn() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .start(world.annTask, id: "s-1"), .complete(world.annTask, id: "c-1"))
            _ = try await world.listener.once()
            // The file is lost and rebuilt from the master: its worker changes start again at position 1.
            try FileManager.default.removeItem(atPath: world.path(world.red))
            _ = try await world.generator.rebuildAll()
            try world.push(world.red, by: world.fixtures.bo, .claim(world.freeTask, id: "claim-1"))
            let report = try await world.listener.once()
            #expect(report.recorded == 1 && report.applied == 1)
            #expect(try await store.task(id: world.freeTask).assigneeID == world.fixtures.bo.id)
        }
    }

    @Test func changesLeftInTheFileOfARemovedTeamAreStillTakenIn() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.blue, by: world.fixtures.cy, .complete(world.cyTask, note: "last job", id: "c-1"))
            // The manager moves blue's task out and removes the team before the listener runs.
            _ = try await store.assignTask(id: world.cyTask, to: try Assignment(teamID: world.fixtures.red.id, assigneeID: nil))
            try await store.removeTeam(id: world.fixtures.blue.id)
            _ = try await world.generator.catchUp()
            #expect(!FileManager.default.fileExists(atPath: world.path(world.blue)), "retired")
            let report = try await world.listener.once()
            #expect(report.recorded == 1)
            let task = try await store.task(id: world.cyTask)
            #expect(task.status == .completed && task.completionNote == "last job")
            #expect(try await store.conflicts().map(\.rule) == ["moved"])
            #expect(try await world.listener.once().recorded == 0)
        }
    }

    @Test func aVersionOneReplicaIsUpgradedInPlaceAndKeepsItsChanges() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, id: "c-1"))
            try await Self.makeVersionOne(world.path(world.red))
            let report = try await world.listener.once()
            #expect(report.recorded == 1 && report.complete)
            #expect(try ReplicaMeta.read(path: world.path(world.red)).schemaVersion == ReplicaSchema.version)
            #expect(try await store.task(id: world.annTask).status == .completed)
        }
    }

    @Test func verifyReadsAVersionOneReplicaNobodyHasWrittenToSinceTheUpgrade() async throws {
        try await ListenerWorld.with { world, _ in
            try world.push(world.blue, by: world.fixtures.cy, .start(world.cyTask, id: "s-1"))
            try await Self.makeVersionOne(world.path(world.blue))
            #expect(try await world.generator.verify().isEmpty)
            let contents = try ReplicaContents.read(path: world.path(world.blue))
            #expect(contents.acceptedWorkerChanges == 1 && contents.rejectedWorkerChanges == 0)
        }
    }

    /// Turns a replica back into schema version 1, as files made before worker_changes.rejection are.
    static func makeVersionOne(_ path: String) async throws {
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            // The version 1 table, as shipped.
            try db.execute(
                sql: """
                    CREATE TABLE v1 (position INTEGER PRIMARY KEY AUTOINCREMENT, change_id TEXT NOT NULL UNIQUE,
                        person_id INTEGER NOT NULL, task_id INTEGER, operation TEXT NOT NULL, payload TEXT NOT NULL,
                        made_at INTEGER NOT NULL, received_at INTEGER NOT NULL);
                    INSERT INTO v1 SELECT position, change_id, person_id, task_id, operation, payload, made_at, received_at
                        FROM worker_changes;
                    DROP TABLE worker_changes;
                    ALTER TABLE v1 RENAME TO worker_changes;
                    """)
            try db.execute(sql: "UPDATE meta SET schema_version = 1")
            try db.execute(sql: "PRAGMA user_version = 1")
        }
        try queue.close()
    }

    /// A listener in continuous mode whose sweep is ten minutes away (longer than any test, and
    /// than a whole run; not an hour: a timer that long stays armed in the test process after the
    /// test, and a run once stalled for good with its timer armed that far ahead while a short
    /// sleep was due; see scripts/test), counting its passes, once it has done its first; stopped
    /// when `body` returns.
    static func withListenerAwake(_ world: ListenerWorld, _ body: (Locked<Int>) async throws -> Void) async throws {
        let listener = try EventListener(.init(databaseURL: world.url, directory: world.folder, sweepInterval: .seconds(600)))
        let passes = Locked(0)
        let running = Task { await listener.run { _ in passes.mutate { $0 += 1 } } }
        defer { listener.stop() }
        try #require(try await eventually(within: .seconds(30), every: .milliseconds(20)) { passes.value > 0 }, "the listener's first pass")
        try await body(passes)
        listener.stop()
        await running.value
    }

    @Test func continuousModeWakesOnAPushWithoutWaitingForTheSweep() async throws {
        try await ListenerWorld.with { world, store in
            try await Self.withListenerAwake(world) { _ in
                try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, id: "c-1"))
                try await expectEventually(
                    "applied within 5 s while the sweep is an hour away", within: .seconds(5), every: .milliseconds(20)
                ) {
                    try await store.task(id: world.annTask).status == .completed
                }
            }
        }
    }

    /// The generator writes a team file for every master change; none of those
    /// writes holds worker changes, so none wakes the listener (each wake opens
    /// and reads the file: a fifth of the service's CPU in a fan-out to 50 teams).
    @Test func continuousModeIsNotWokenByTheGeneratorsWrites() async throws {
        try await ListenerWorld.with { world, store in
            try await Self.withListenerAwake(world) { passes in
                try await Task.sleep(for: .milliseconds(300))
                let before = passes.value
                for round in 1...3 {
                    _ = try await store.updateTask(id: world.annTask, try TaskChanges(title: "renamed \(round)"))
                    #expect(try await world.generator.catchUp().replicaWrites >= 1)
                }
                try await Task.sleep(for: .seconds(1))
                #expect(passes.value == before, "no pass for the generator's writes")

                try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, id: "c-1"))
                try await expectEventually("a push still wakes it", within: .seconds(5), every: .milliseconds(20)) { passes.value > before }
            }
        }
    }

    /// A push that finds its replica's lock held elsewhere (a rebuild being
    /// swapped in, another instance) tries it again every few milliseconds.
    /// Letting go of the lock is what wakes the listener; a try that failed
    /// must not (it used to open and close the lock file, a pass each time).
    @Test func aPushWaitingForTheLockDoesNotWakeTheListenerAtEveryTry() async throws {
        try await ListenerWorld.with { world, store in
            try await Self.withListenerAwake(world) { passes in
                let held = try #require(try world.directory.tryLock(world.red))
                defer { held.release() }
                try await Task.sleep(for: .milliseconds(300))
                let before = passes.value
                let (directory, red, ann) = (world.directory, world.red, world.fixtures.ann.id)
                let waited = try await blockingWork { () -> Bool in
                    do {
                        try directory.push([.start(0)], to: red, by: ann, lockTimeout: .seconds(1))
                        return false
                    } catch is ReplicaBusy {
                        return true
                    }
                }
                #expect(waited, "the push gave up after its second of tries")
                try await Task.sleep(for: .milliseconds(300))
                #expect(passes.value - before <= 1, "one pass at most (the push closing the lock file when it gave up), not one per try")
            }
        }
    }
}
