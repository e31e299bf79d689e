import CentralStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOEmbedded
import ReplicaGenerator
import ServerSupport
import SyncProtocol
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import SyncServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `GET …/changes?wait=N`: a current device waits for its replica to change
/// instead of asking again and again. Run live (a real HTTP server in process),
/// so the server's services, the watch among them, run as in production.
@Suite("Sync endpoint: live mode")
struct LiveModeTests {
    typealias Pulls = SyncServerTests

    /// A request on a connection of its own (the test client has one connection,
    /// which a waiting pull would hold): what a second device would send.
    static func fetch(_ client: any TestClientProtocol, _ uri: String, token: String) async throws -> (status: Int, page: ChangePage?) {
        let port = try #require(client.port)
        let response = try await LocalHTTP.request(
            port: port, uri, headers: ["Authorization": "Bearer \(token)"],
            timeout: .seconds(60))
        return (response.status, response.status == 200 ? try TeamworkJSON.decoder().decode(ChangePage.self, from: response.body) : nil)
    }

    /// Whether the server comes to hold exactly `count` live-mode waits open
    /// (its /metrics) within 10 s: a test acts only once its pulls really wait,
    /// so it neither races a busy machine nor passes without taking that path.
    func waitsOpen(_ client: any TestClientProtocol, _ count: Int) async throws -> Bool {
        let port = try #require(client.port)
        return try await eventually(within: .seconds(10), every: .milliseconds(10)) {
            try await LocalHTTP.request(port: port, "/metrics", timeout: .seconds(5)).text
                .split(separator: "\n").contains("teamwork_sync_open_waits \(count)")
        }
    }

    /// Ann's current position in red's replica.
    func current(_ world: SyncServerTests.World, _ client: any TestClientProtocol) async throws -> ChangePage {
        let first = try await Pulls.get(client, "/v1/replicas/team-\(world.fixtures.red.id)/changes", token: world.annToken)
        return try Pulls.decode(ChangePage.self, first)
    }

    @Test func aWaitingPullReturnsAsSoonAsATeammatePushes() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let page = try await current(world, client)
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes?epoch=\(page.epoch)&since=\(page.upTo)&wait=20"
            let started = ContinuousClock.now
            async let waited = Self.fetch(client, uri, token: world.annToken)
            #expect(try await waitsOpen(client, 1))
            let bo = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "p").secret
            }
            let claim =
                #"{"changes": [{"id": "live-1", "operation": "claim", "task_id": \#(world.floatingTask), "made_at": "\#(ISODate.format(Date()))"}]}"#
            let pushed = try await Pulls.post(client, "/v1/replicas/team-\(world.fixtures.red.id)/changes", token: bo, body: claim)
            #expect(pushed.status == .ok)
            let response = try await waited
            let elapsed = ContinuousClock.now - started
            #expect(response.status == 200)
            let delta = try #require(response.page)
            #expect(delta.tasks.map(\.id) == [world.floatingTask])
            #expect(delta.tasks.first?.assigneeID == world.fixtures.bo.id)
            #expect(elapsed < .seconds(10), "woke after \(elapsed)")
        }
    }

    /// The generator may run in another process: the folder's inotify watch
    /// reports its write, so the wait ends without waiting for the next look
    /// at the files (also when looks are 60 s apart, longer than the wait).
    @Test(arguments: [Duration.milliseconds(100), .seconds(60)])
    func aWaitingPullReturnsWhenTheGeneratorWritesAMasterChangeBeforeTheNextPeriodicLook(looks: Duration) async throws {
        try await SyncServerTests().withServer(.live, waitLookInterval: looks) { world, client in
            let page = try await current(world, client)
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes?epoch=\(page.epoch)&since=\(page.upTo)&wait=20"
            async let waited = Self.fetch(client, uri, token: world.annToken)
            #expect(try await waitsOpen(client, 1))
            let task = try await CentralStore.withStore(world.url) { store in
                try await store.createTask(try world.fixtures.task("new for ann", team: world.fixtures.red, assignee: world.fixtures.ann))
            }
            let written = ContinuousClock.now
            _ = try await ReplicaGenerator(.init(databaseURL: world.url, directory: world.folder)).catchUp()
            let response = try await waited
            #expect(try #require(response.page).tasks.map(\.id) == [task.id], "the wait ended with the new task, not empty at its end")
            #expect(ContinuousClock.now - written < .seconds(10))
        }
    }

    /// A commit wakes every waiting device of the team at once; the new page is
    /// read from the file and encoded once for all of them, not once each.
    @Test func devicesWokenTogetherShareOneReadOfTheNewPage() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let port = try #require(client.port)
            let page = try await current(world, client)
            let bo = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "p").secret
            }
            func metric(_ name: String) async throws -> Int { try await LocalHTTP.metric(name, port: port) }
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes?epoch=\(page.epoch)&since=\(page.upTo)&wait=20"
            // One at a time, each open before the next is asked: ten requests of one person arriving
            // together would race the limit of requests in flight (8; a wait gives its place back).
            var waits: [Task<(status: Int, page: ChangePage?), any Error>] = []
            for index in 0..<20 {
                waits.append(Task { try await Self.fetch(client, uri, token: index.isMultiple(of: 2) ? world.annToken : bo) })
                #expect(
                    try await eventually(within: .seconds(10), every: .milliseconds(10)) {
                        try await metric("teamwork_sync_open_waits") == index + 1
                    }, "wait \(index + 1) is open")
            }
            let (readsBefore, answersBefore) = (
                try await metric("teamwork_sync_pages_read_total"),
                try await metric("teamwork_sync_pages_answered_total")
            )
            let task = try await CentralStore.withStore(world.url) { store in
                try await store.createTask(try world.fixtures.task("new for red", team: world.fixtures.red))
            }
            _ = try await ReplicaGenerator(.init(databaseURL: world.url, directory: world.folder)).catchUp()
            for wait in waits {
                let answer = try await wait.value
                #expect(try #require(answer.page).tasks.map(\.id) == [task.id])
            }
            #expect(try await metric("teamwork_sync_pages_answered_total") - answersBefore == 20)
            #expect(try await metric("teamwork_sync_pages_read_total") - readsBefore == 1, "one read for twenty devices")
        }
    }

    /// SIGTERM wakes the waits that are open; a pull that reaches its wait a
    /// moment later (its request was already being handled) must not start a
    /// fresh one: the server's shutdown waits for every request, so such a wait
    /// held SIGTERM up for its whole time (25 s, seen in a full test run).
    @Test func aWaitThatBeginsAfterShutdownBeganEndsAtOnce() async throws {
        let watch = ReplicaWatch(interval: .milliseconds(200))
        let looking = Task { try await watch.run() }
        defer { looking.cancel() }
        watch.shutDown()
        let started = ContinuousClock.now
        let end = await watch.wait(path: "/nonexistent/team-1.sqlite", from: nil, timeout: .seconds(5), owner: 1)
        #expect(end == .ended)
        #expect(ContinuousClock.now - started < .seconds(2), "ended at once, not at its time")
    }

    /// SIGTERM with a fleet's waits beginning and ending all the time (10,000 devices in the load
    /// benchmark): every wait must end, none may begin after, and shutdown must not deadlock (it
    /// once did, when each wait asked ServiceLifecycle whether shutdown had begun under the watch's
    /// lock while ServiceLifecycle ran another wait's handler, which wanted that lock).
    @Test func shutdownWhileThousandsOfWaitsComeAndGoEndsThemAllAndNeverDeadlocks() async throws {
        // Ten shutdowns, each with 2,000 devices waiting again and again.
        for _ in 0..<10 {
            let watch = ReplicaWatch(interval: .milliseconds(20))
            let looking = Task { try await watch.run() }
            defer { looking.cancel() }
            let ended = Locked(0)
            await withTaskGroup(of: Void.self) { group in
                for device in 0..<2_000 {
                    group.addTask {
                        while await watch.wait(
                            path: "/nonexistent/team-\(device % 50).sqlite", from: nil,
                            timeout: .milliseconds(1 + device % 20), owner: Int64(device)) != .ended
                        {}
                        ended.mutate { $0 += 1 }
                    }
                }
                // Shutdown comes while the waits are churning: once hundreds are open at once.
                #expect(
                    (try? await eventually(within: .seconds(10), every: .milliseconds(5)) { watch.waiting >= 500 }) == true,
                    "the devices were waiting when shutdown came")
                watch.shutDown()
            }
            #expect(ended.value == 2_000)
            #expect(watch.waiting == 0)
        }
    }

    /// The watch keeps its waits indexed by file, by the file's state they read, by owner and by
    /// the look that ends them, so that a fleet's tens of thousands of waits are not each looked at
    /// whenever one begins or a file changes. Each index must still wake exactly the right waits:
    /// a look wakes the waits of a file that left the state they read and no other (not those that
    /// read its new state, nor another file's), each wait ends at its own time and not before,
    /// a person's thirteenth wait ends their oldest, and a cancelled wait leaves no trace.
    @Test func theWatchWakesExactlyTheWaitsWhoseFileChangedOrWhoseTimeIsUp() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, b) = (folder.appending(path: "team-1.sqlite").path, folder.appending(path: "team-2.sqlite").path)
        func write(_ path: String, counter: UInt8) throws {
            var header = [UInt8](repeating: 0, count: 100)
            header[27] = counter
            try Data(header).write(to: URL(fileURLWithPath: path))
        }
        try write(a, counter: 1)
        try write(b, counter: 1)
        // A long interval: only the explicit looks below wake anything. (Ten minutes, not an hour:
        // see ListenerRobustnessTests.withListenerAwake.)
        let watch = ReplicaWatch(interval: .seconds(600), maximumPerOwner: 12)
        let woken = Locked<[String]>([])
        func wait(
            _ name: String, _ path: String, _ stamp: FileVersion?, timeout: Duration = .seconds(60), owner: Int64
        ) -> Task<Void, Never> {
            Task {
                await watch.wait(path: path, from: stamp, timeout: timeout, owner: owner)
                woken.mutate { $0.append(name) }
            }
        }
        func settle(_ count: Int) async throws {
            try await expectEventually("\(count) waiting", within: .seconds(10), every: .milliseconds(2)) { watch.waiting == count }
        }
        let oldA = FileVersion(path: a)
        var tasks = [
            wait("a-old-1", a, oldA, owner: 1), wait("a-old-2", a, oldA, owner: 2), wait("b-1", b, FileVersion(path: b), owner: 3),
        ]
        try await settle(3)
        try write(a, counter: 2)
        tasks.append(wait("a-new", a, FileVersion(path: a), owner: 4))
        try await settle(4)
        watch.look(only: [a, b])
        for task in tasks.prefix(2) { await task.value }
        try await settle(2)
        #expect(Set(woken.value) == ["a-old-1", "a-old-2"], "only the waits that read the state file a left")

        // Thirteen waits of one person: the oldest ends, the other twelve stay.
        let many = (0..<13).map { wait("p-\($0)", b, FileVersion(path: b), owner: 9) }
        await many[0].value
        try await settle(2 + 12)
        #expect(woken.value.last == "p-0")

        // A cancelled wait ends and leaves no trace; a change to b then wakes b's waits, not a's.
        many[5].cancel()
        await many[5].value
        try await settle(13)
        try write(b, counter: 2)
        watch.look()
        for task in many { await task.value }
        await tasks[2].value
        try await settle(1)
        #expect(!woken.value.contains("a-new"), "a's new state is what a-new read: it waits on")

        // Each wait ends at its own time by the looks, not before it.
        let started = ContinuousClock.now
        let short = wait("short", b, FileVersion(path: b), timeout: .milliseconds(300), owner: 20)
        let long = wait("long", b, FileVersion(path: b), timeout: .seconds(30), owner: 21)
        try await settle(3)
        try await expectEventually("the short wait woken", within: .seconds(10), every: .milliseconds(20)) {
            watch.look()
            return woken.value.contains("short")
        }
        await short.value
        #expect(ContinuousClock.now - started >= .milliseconds(300), "not before its time")
        #expect(!woken.value.contains("long") && watch.waiting == 2, "the others wait on")
        watch.close()
        await long.value
        await tasks[3].value
        #expect(watch.waiting == 0)
    }

    /// A page is kept for the state of the file it was read from; once the file
    /// has moved on, nobody can ask for that state again, so its pages are let
    /// go rather than held until the budget pushes them out (64 MB of dead pages
    /// in a server that has run a while).
    @Test func pagesOfAStateTheFileHasLeftAreLetGo() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let port = try #require(client.port)
            func cached() async throws -> Int {
                let text = try await LocalHTTP.request(port: port, "/metrics", timeout: .seconds(10)).text
                let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("teamwork_sync_page_cache_bytes ") })
                return try #require(Int(line.split(separator: " ")[1]))
            }
            let red = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            #expect(try await Pulls.get(client, red, token: world.annToken).status == .ok)
            let one = try await cached()
            #expect(one > 0)
            for round in 0..<10 {
                let operation = round == 0 ? "start" : round % 2 == 1 ? "complete" : "reopen"
                let body =
                    #"{"changes": [{"id": "s-\#(round)", "operation": "\#(operation)", "task_id": \#(world.redTask), "made_at": "\#(ISODate.format(Date()))"}]}"#
                #expect(try await Pulls.post(client, red, token: world.annToken, body: body).status == .ok)
                #expect(try await Pulls.get(client, red, token: world.annToken).status == .ok)
            }
            let after = try await cached()
            #expect(
                after < 2 * one,
                "the cache holds the current state's page, not every state's: \(one) bytes after one read, \(after) after ten states")
        }
    }

    @Test func aCurrentDeviceIsAnsweredFromMemoryButNeverMissesAChangeMadeSinceEvenWithinTheSameMillisecond() async throws {
        try await SyncServerTests().withServer { world, client in
            var page = try await current(world, client)
            let red = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            for round in 0..<30 {
                // Asked twice while current: the second answer comes from what the server remembers.
                for _ in 0..<2 {
                    let empty = try Pulls.decode(
                        ChangePage.self,
                        try await Pulls.get(
                            client, "\(red)?epoch=\(page.epoch)&since=\(page.upTo)", token: world.annToken))
                    #expect(empty.tasks.isEmpty && empty.upTo == page.upTo && !empty.refetch)
                }
                // Ann starts her task, then completes and reopens it in turn: each changes the task's row in place.
                let operation = round == 0 ? "start" : round % 2 == 1 ? "complete" : "reopen"
                let body =
                    #"{"changes": [{"id": "r-\#(round)", "operation": "\#(operation)", "task_id": \#(world.redTask), "made_at": "\#(ISODate.format(Date()))"}]}"#
                #expect(try await Pulls.post(client, "\(red)", token: world.annToken, body: body).status == .ok)
                let next = try Pulls.decode(
                    ChangePage.self,
                    try await Pulls.get(
                        client, "\(red)?epoch=\(page.epoch)&since=\(page.upTo)", token: world.annToken))
                #expect(next.upTo > page.upTo, "round \(round): the change was missed")
                page = next
            }
        }
    }

    @Test func aWaitWithNothingNewEndsEmptyAfterItsTime() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let page = try await current(world, client)
            let started = ContinuousClock.now
            let response = try await Pulls.get(
                client, "/v1/replicas/team-\(world.fixtures.red.id)/changes?epoch=\(page.epoch)&since=\(page.upTo)&wait=1",
                token: world.annToken)
            let elapsed = ContinuousClock.now - started
            let empty = try Pulls.decode(ChangePage.self, response)
            #expect(empty.tasks.isEmpty && !empty.refetch && empty.upTo == page.upTo)
            #expect(elapsed >= .seconds(1))
        }
    }

    @Test func aDeviceThatIsBehindIsAnsweredAtOnceWithoutWaiting() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let started = ContinuousClock.now
            let response = try await Pulls.get(client, "/v1/replicas/team-\(world.fixtures.red.id)/changes?wait=20", token: world.annToken)
            let page = try Pulls.decode(ChangePage.self, response)
            #expect(page.refetch)
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    /// A change of access ends the waits it concerns at once, whatever their time: a revoked token's
    /// wait is answered 401 and a removed member's 403, while a teammate's wait goes on. (With waits of
    /// 10 s that the master's change had to land within, a loaded full run once saw the wait end first:
    /// 200. The waits here are 50 s, so only the change can end them in time.)
    @Test func aTokenRevokedOrAMemberRemovedDuringAWaitIsRefusedAtOnceAndATeammateWaitsOn() async throws {
        try await SyncServerTests().withServer(.live, configure: { $0.maximumWait = .seconds(50) }) { world, client in
            let page = try await current(world, client)
            let bo = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "p").secret
            }
            let red = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let boPage = try Pulls.decode(ChangePage.self, try await Pulls.get(client, red, token: bo))
            let began = ContinuousClock.now
            async let annWait = Self.fetch(client, "\(red)?epoch=\(page.epoch)&since=\(page.upTo)&wait=50", token: world.annToken)
            async let boWait = Self.fetch(client, "\(red)?epoch=\(boPage.epoch)&since=\(boPage.upTo)&wait=50", token: bo)
            #expect(try await waitsOpen(client, 2))
            try await CentralStore.withStore(world.url) { store in
                for token in try await store.listTokens(personID: world.fixtures.ann.id) where token.revokedAt == nil {
                    _ = try await store.revokeToken(id: token.id)
                }
            }
            #expect(try await annWait.status == 401)
            #expect(try await waitsOpen(client, 1), "Bo's wait goes on: his access did not change")
            _ = try await CentralStore.withStore(world.url) {
                try await $0.removeMember(teamID: world.fixtures.red.id, personID: world.fixtures.bo.id)
            }
            #expect(try await boWait.status == 403)
            #expect(ContinuousClock.now - began < .seconds(45), "the changes ended the waits, not their time")
        }
    }

    /// Ann's stream of red from where she stands (her current page), on a connection of its own.
    func followRed(
        _ world: SyncServerTests.World, _ client: any TestClientProtocol, seconds: Int
    ) async throws
        -> (page: ChangePage, stream: LocalHTTP.Stream)
    {
        let page = try await current(world, client)
        let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes?epoch=\(page.epoch)&since=\(page.upTo)&stream=\(seconds)"
        let stream = try await LocalHTTP.stream(
            port: try #require(client.port), uri, headers: ["Authorization": "Bearer \(world.annToken)"])
        return (page, stream)
    }

    /// `stream=N`: one answer carries every change as a line, as it happens, for N seconds: a
    /// device is told of each change with one write, where `wait=N` costs it two requests (the
    /// answer, then its next wait).
    @Test func aStreamSendsEachChangeAsALineTheMomentItHappensOnOneAnswerUntilItsTime() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let opened = ContinuousClock.now
            let (page, stream) = try await followRed(world, client, seconds: 6)
            #expect(stream.status == 200)
            #expect(stream.headers["content-type"] == "application/x-ndjson")
            var lines = stream.lines.makeAsyncIterator()
            #expect(try await waitsOpen(client, 1))

            // A teammate's push: the first line, going on from where the device stood.
            let bo = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "p").secret
            }
            let claim =
                #"{"changes": [{"id": "stream-1", "operation": "claim", "task_id": \#(world.floatingTask), "made_at": "\#(ISODate.format(Date()))"}]}"#
            #expect(
                try await Pulls.post(client, "/v1/replicas/team-\(world.fixtures.red.id)/changes", token: bo, body: claim).status == .ok)
            let first = try TeamworkJSON.decoder().decode(ChangePage.self, from: try #require(try await lines.next()).line)
            #expect(first.since == page.upTo && first.epoch == page.epoch && !first.refetch)
            #expect(first.tasks.map(\.id) == [world.floatingTask] && first.tasks.first?.assigneeID == world.fixtures.bo.id)

            // Then the generator's write of a master change: the second line, on the same answer.
            #expect(try await waitsOpen(client, 1), "the stream waits again")
            let task = try await CentralStore.withStore(world.url) { store in
                try await store.createTask(try world.fixtures.task("streamed", team: world.fixtures.red))
            }
            let written = ContinuousClock.now
            _ = try await ReplicaGenerator(.init(databaseURL: world.url, directory: world.folder)).catchUp()
            let second = try #require(try await lines.next())
            let secondPage = try TeamworkJSON.decoder().decode(ChangePage.self, from: second.line)
            #expect(secondPage.since == first.upTo, "each line goes on from the one before")
            #expect(secondPage.tasks.map(\.id) == [task.id])
            #expect(second.at - written < .seconds(5))

            // Nothing more: the answer ends at its time, not before.
            #expect(try await lines.next() == nil)
            #expect(ContinuousClock.now - opened >= .seconds(6))
            #expect(try await waitsOpen(client, 0))
        }
    }

    /// A stream rechecks its caller after each change, as a wait does: a member removed mid-stream
    /// gets nothing of the change that removed them, and the answer ends.
    @Test func aStreamOfAMemberRemovedMidStreamEndsWithoutTheirTeamsNextChange() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let started = ContinuousClock.now
            let (_, stream) = try await followRed(world, client, seconds: 20)
            #expect(try await waitsOpen(client, 1))
            _ = try await CentralStore.withStore(world.url) {
                try await $0.removeMember(teamID: world.fixtures.red.id, personID: world.fixtures.ann.id)
            }
            _ = try await ReplicaGenerator(.init(databaseURL: world.url, directory: world.folder)).catchUp()
            var received = 0
            for try await _ in stream.lines { received += 1 }
            #expect(received == 0, "no page after the removal")
            #expect(ContinuousClock.now - started < .seconds(15), "ended at the change, not at its time")
        }
    }

    /// A device that stops reading a stream fills its connection's buffers and the next page's write
    /// never ends: past the limit, the watch's sweep closes that connection (its write then fails and
    /// the stream ends); a write that ended in time is left alone.
    @Test func aStreamWriteTheDeviceDoesNotTakeInTimeCostsItTheConnection() async throws {
        let (stuck, taken) = (EmbeddedChannel(), EmbeddedChannel())
        try await stuck.connect(to: .init(ipAddress: "127.0.0.1", port: 1)).get()
        try await taken.connect(to: .init(ipAddress: "127.0.0.1", port: 2)).get()
        let writes = StalledWrites(limit: .zero)
        _ = writes.begin(stuck)
        writes.end(writes.begin(taken))
        writes.sweep()
        #expect(!stuck.isActive, "closed")
        #expect(taken.isActive, "left alone")
        let patient = StalledWrites(limit: .seconds(3_600))
        _ = patient.begin(taken)
        patient.sweep()
        #expect(taken.isActive, "not before its limit")
    }

    @Test(arguments: ["stream=-1", "stream=abc", "stream=26", "stream=5&wait=5"])
    func aStreamOutOfRangeOrWithAWaitIs400(_ query: String) async throws {
        try await SyncServerTests().withServer { world, client in
            let response = try await Pulls.get(client, "/v1/replicas/team-\(world.fixtures.red.id)/changes?\(query)", token: world.annToken)
            #expect(response.status == .badRequest)
        }
    }

    @Test(arguments: ["-1", "abc", "26", "100000"])
    func aWaitOutOfRangeIs400(_ wait: String) async throws {
        try await SyncServerTests().withServer { world, client in
            let response = try await Pulls.get(
                client, "/v1/replicas/team-\(world.fixtures.red.id)/changes?wait=\(wait)", token: world.annToken)
            #expect(response.status == .badRequest)
        }
    }

    @Test func waitsADeviceGaveUpOnNeitherUseUpItsRequestsNorPileUp() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let page = try await current(world, client)
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes?epoch=\(page.epoch)&since=\(page.upTo)&wait=20"
            // 20 waits abandoned by the device (a watcher that synced meanwhile), more than the 8 requests and
            // the 12 waits one person may have: the server still answers her, and her oldest waits end first.
            var abandoned: [Task<(status: Int, page: ChangePage?), any Error>] = []
            for index in 0..<20 {
                abandoned.append(Task { try await Self.fetch(client, uri, token: world.annToken) })
                #expect(try await waitsOpen(client, min(index + 1, 12)), "wait \(index + 1) open, the oldest ending past 12")
            }
            let listing = try await Pulls.get(client, "/v1/replicas", token: world.annToken)
            #expect(listing.status == .ok)
            let started = ContinuousClock.now
            let oldest = try await abandoned[0].value
            #expect(oldest.status == 200 && ContinuousClock.now - started < .seconds(5))
            for task in abandoned { task.cancel() }
        }
    }

    @Test func manyOpenWaitsDoNotHoldUpPushesOrHealth() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let page = try await current(world, client)
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes?epoch=\(page.epoch)&since=\(page.upTo)&wait=5"
            // Ann's token may have 8 requests in flight: 6 waits leave room for her push.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask { _ = try await Self.fetch(client, uri, token: world.annToken) }
                }
                #expect(try await waitsOpen(client, 6))
                let started = ContinuousClock.now
                let health = try await Pulls.get(client, "/health", token: nil)
                #expect(health.status == .ok)
                let metrics = String(buffer: try await Pulls.get(client, "/metrics", token: nil).body)
                #expect(metrics.contains("teamwork_sync_open_waits 6"), "\(metrics)")
                let body =
                    #"{"changes": [{"id": "w-1", "operation": "start", "task_id": \#(world.redTask), "made_at": "\#(ISODate.format(Date()))"}]}"#
                let pushed = try await Pulls.post(
                    client, "/v1/replicas/team-\(world.fixtures.red.id)/changes", token: world.annToken, body: body)
                #expect(pushed.status == .ok)
                #expect(ContinuousClock.now - started < .seconds(3))
                try await group.waitForAll()
            }
        }
    }
}

/// Tokens and teams are remembered between requests; PostgreSQL says when to forget.
@Suite("Sync endpoint: remembered access")
struct AccessCacheTests {
    typealias Pulls = SyncServerTests

    /// Asks until `status` comes back or a second passes; returns how long it took, or nil.
    static func refused(
        _ client: any TestClientProtocol, _ uri: String, token: String, status: HTTPResponse.Status
    ) async throws -> Duration? {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(1) {
            if try await Pulls.get(client, uri, token: token).status == status { return ContinuousClock.now - started }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Issues `count` tokens, Ann's and Bo's in turn.
    static func issueTokens(_ count: Int, _ world: SyncServerTests.World, label: String) async throws -> [String] {
        try await CentralStore.withStore(world.url) { store in
            var tokens: [String] = []
            for index in 0..<count {
                let person = index % 2 == 0 ? world.fixtures.ann : world.fixtures.bo
                tokens.append(try await store.issueToken(personID: person.id, label: "\(label) \(index)").secret)
            }
            return tokens
        }
    }

    /// A cache listening with every live token loaded, the store its lookups use, and when it started.
    static func withCache(
        _ world: SyncServerTests.World, timeToLive: Duration = .seconds(60), usageInterval: Duration = .seconds(60),
        _ body: (AccessCache, SharedStore<any EndpointStore>, ContinuousClock.Instant) async throws -> Void
    ) async throws {
        let logger = Logger(label: "test")
        let store = SharedStore(endpoint: world.url, maximum: 1, logger: logger)
        let pooling = Task { try await store.run() }
        defer { pooling.cancel() }
        let cache = AccessCache(url: world.url, logger: logger, timeToLive: timeToLive, usageInterval: usageInterval)
        let started = ContinuousClock.now
        let listening = Task { try await cache.run() }
        defer { listening.cancel() }
        try #require(try await eventually(within: .seconds(10)) { cache.isLoaded }, "the cache loads every live token")
        try await body(cache, store, started)
    }

    /// Answers remembered at the same moment (a fleet reconnecting after a
    /// restart) must not all expire at the same moment: the whole fleet would
    /// then go to the master together, through one connection, once per time
    /// to live, and again a time to live later. With 1,000 devices that stalled
    /// a live fan-out by ~0.7 s every minute (teamwork-bench load). Holds for
    /// answers loaded together at start as for answers looked up together.
    @Test func answersRememberedTogetherDoNotAllExpireTogether() async throws {
        try await SyncServerTests().withServer { world, _ in
            let loaded = try await Self.issueTokens(40, world, label: "before")
            // A time to live long enough that no answer expires while a loaded machine runs the test
            // (with 4 s, a full parallel run took longer than that between the load and the asking).
            let timeToLive = Duration.seconds(60)
            try await Self.withCache(world, timeToLive: timeToLive) { cache, store, started in
                let loadedBy = ContinuousClock.now
                // Each answer's life, from when it was loaded (between the cache's start and the load
                // seen done) or looked up (around the asking), to its expiry: read from the cache, not
                // inferred from timing, so a busy machine cannot make it pass or fail.
                func lives(_ tokens: [String], loaded: Bool) async throws -> [Duration] {
                    var lives: [Duration] = []
                    for token in tokens {
                        let asked = ContinuousClock.now
                        #expect(try await cache.access(secret: token, store: store, from: UUID().uuidString) != nil)
                        let expiry = try #require(cache.expiry(of: token))
                        let (earliest, latest) = loaded ? (started, loadedBy) : (asked, ContinuousClock.now)
                        #expect(
                            expiry - earliest >= timeToLive / 2 && expiry - latest <= timeToLive,
                            "each lives half to all of the time to live from when it was loaded or looked up")
                        lives.append(expiry - earliest)
                    }
                    return lives
                }
                let fromTheLoad = try await lives(loaded, loaded: true)
                #expect(cache.lookups == 0)
                let lookedUp = try await lives(try await Self.issueTokens(40, world, label: "after"), loaded: false)
                #expect(cache.lookups == 40)
                for lives in [fromTheLoad, lookedUp] {
                    let spread = lives.max()! - lives.min()!
                    #expect(
                        spread > timeToLive / 4,
                        "forty answers remembered together expire over at least a quarter of the time to live: \(spread)")
                }
            }
        }
    }

    /// After a restart every device of a fleet asks at once. Looked up one by one, that was two
    /// queries a device on the endpoint's one connection to the master: 10,000 devices took
    /// seconds to be let back in (teamwork-bench load, restart storm). Every live token is loaded
    /// in one pass when the cache starts listening, and again after a change of access.
    @Test func everyLiveTokenIsLoadedAtStartAndAfterAChangeSoNoDeviceCostsTheMasterAQuery() async throws {
        try await SyncServerTests().withServer { world, _ in
            let tokens = try await Self.issueTokens(30, world, label: "device")
            try await Self.withCache(world) { cache, store, _ in
                for token in tokens + [world.annToken] {
                    #expect(try await cache.access(secret: token, store: store, from: UUID().uuidString)?.person.id != nil)
                }
                #expect(cache.lookups == 0, "loaded at start: no token asked the master")
                let bo = try #require(try await cache.access(secret: tokens[1], store: store, from: UUID().uuidString))
                #expect(bo.person.id == world.fixtures.bo.id)
                #expect(
                    bo.teams.map(\.id)
                        == (try await CentralStore.withStore(world.url) { try await $0.teams(ofPerson: world.fixtures.bo.id) }).map(\.id))

                // A change of access: Bo leaves a team and one of Ann's tokens is revoked. Everything is
                // loaded again; the rest are still answered without a query each, with Bo's teams as they are now.
                let loads = cache.loads
                try await CentralStore.withStore(world.url) { store in
                    _ = try await store.removeMember(teamID: world.fixtures.red.id, personID: world.fixtures.bo.id)
                    let ann = try await store.listTokens(personID: world.fixtures.ann.id).first { $0.label == "device 0" }!
                    _ = try await store.revokeToken(id: ann.id)
                }
                try #require(
                    try await eventually(within: .seconds(10)) {
                        try await cache.access(secret: tokens[0], store: store, from: UUID().uuidString) == nil
                    },
                    "the revoked token is refused")
                try #require(try await eventually(within: .seconds(10)) { cache.isLoaded }, "the cache loads again after the change")
                #expect(cache.loads > loads)
                let lookups = cache.lookups
                for token in tokens.dropFirst() {
                    #expect(try await cache.access(secret: token, store: store, from: UUID().uuidString) != nil)
                }
                #expect(cache.lookups == lookups, "answered from the load made after the change, no query each")
                #expect(
                    try await cache.access(secret: tokens[1], store: store, from: UUID().uuidString)?.teams.contains {
                        $0.id == world.fixtures.red.id
                    } == false)
                #expect(try await cache.access(secret: "tw_not-a-token", store: store, from: UUID().uuidString) == nil)
            }
        }
    }

    /// `last_used_at` (what `person token list` shows a manager deciding which devices are gone)
    /// was written only when a token was looked up; a token answered from a load never is, and
    /// loads come again after every change of access. The use of tokens answered from memory is
    /// recorded in one statement per interval instead.
    @Test func aTokenAnsweredFromMemoryIsStillRecordedAsUsedAndAnIdleOneIsNot() async throws {
        try await SyncServerTests().withServer { world, _ in
            let tokens = try await Self.issueTokens(2, world, label: "device")
            try await Self.withCache(world, usageInterval: .milliseconds(200)) { cache, store, _ in
                #expect(try await cache.access(secret: tokens[0], store: store, from: UUID().uuidString) != nil)
                #expect(cache.lookups == 0)
                func lastUsed(_ label: String) async throws -> Date? {
                    try await CentralStore.withStore(world.url) { store in
                        try await store.listTokens().first { $0.label == label }?.lastUsedAt
                    }
                }
                try await expectEventually("the used token's use is recorded", within: .seconds(10)) {
                    try await lastUsed("device 0") != nil
                }
                #expect(try await lastUsed("device 1") == nil, "a token nobody used is not marked as used")
            }
        }
    }

    @Test func aRevokedTokenAndARemovedMemberAreRefusedWithinASecondThoughTheirAnswersWereRemembered() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let red = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let bo = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "p").secret
            }
            // Remembered: several answers in a row.
            for _ in 0..<3 {
                #expect(try await Pulls.get(client, red, token: world.annToken).status == .ok)
                #expect(try await Pulls.get(client, red, token: bo).status == .ok)
            }
            try await CentralStore.withStore(world.url) { store in
                for token in try await store.listTokens(personID: world.fixtures.ann.id) where token.revokedAt == nil {
                    _ = try await store.revokeToken(id: token.id)
                }
            }
            let revoked = try await Self.refused(client, red, token: world.annToken, status: .unauthorized)
            #expect(revoked != nil, "a revoked token still answered after a second")

            _ = try await CentralStore.withStore(world.url) {
                try await $0.removeMember(teamID: world.fixtures.red.id, personID: world.fixtures.bo.id)
            }
            let removed = try await Self.refused(client, red, token: bo, status: .forbidden)
            #expect(removed != nil, "a removed member still read the team after a second")
            let listing = try await Pulls.get(client, "/v1/replicas", token: bo)
            #expect(!String(buffer: listing.body).contains("\"team-\(world.fixtures.red.id)\""))
        }
    }
}
