import BlobStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SyncProtocol
import SyncServer
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// The blob budget and ownership holes of the third review (issue 39, 3 and 4), each first seen
/// failing on the code before: a worker filled the disk with junk and a colleague's photo was
/// refused; a HEAD a week kept junk for ever; a teammate's digest read from the replica became
/// someone else's proof.
// One at a time: the flood of 24 files of 20 MB starved its siblings' servers of the machine
// (a sibling's first request got no master connection within 5 s, twice in full runs).
@Suite("Blobs belong to someone", .serialized)
struct BlobOwnershipTests {
    static func pushAttach(
        _ client: any TestClientProtocol, token: String, team: Int64, task: Int64, digest: String,
        size: Int
    ) async throws -> [String] {
        let now = ISO8601DateFormatter().string(from: Date())
        let body = """
            {"changes": [{"id": "claim-\(digest.prefix(8))", "operation": "claim", "task_id": \(task), "made_at": "\(now)"},
                         {"id": "attach-\(digest.prefix(8))", "operation": "attach", "task_id": \(task), "made_at": "\(now)",
                          "blob": "\(digest)", "size": \(size), "media_type": "image/jpeg"}]}
            """
        let answer = try await SyncServerTests.post(client, "/v1/replicas/team-\(team)/changes", token: token, body: body)
        #expect(answer.status == .ok, "\(String(buffer: answer.body))")
        let results = try SyncServerTests.decode(PushResponse.self, answer).results
        return results.filter { $0.status == .accepted }.map(\.id)
    }

    @Test func aTeammatesPhotoDigestFromTheReplicaIsNoProofAndItsExistenceIsNotTold() async throws {
        try await SyncServerTests().withServer { world, client in
            let bytes = BlobUploadTests.photo(50_000, seed: 11)
            let digest = BlobDigest(of: bytes).hex
            let sent = try await BlobUploadTests.send(client, digest, token: world.annToken, offset: 0, length: bytes.count, bytes)
            #expect(sent.status == .created)
            let bo = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "phone").secret
            }
            let asked = try await BlobUploadTests.state(client, digest, token: bo)
            #expect(asked.1 == "0" && asked.2 == "?0", "Bo is not told Ann's file is there")
            let accepted = try await Self.pushAttach(
                client, token: bo, team: world.fixtures.red.id, task: world.floatingTask,
                digest: digest, size: bytes.count)
            #expect(
                accepted == ["claim-\(digest.prefix(8))"], "Bo's claim goes; his attachment of Ann's file waits for bytes he never sent")
            // Once Bo sends the bytes himself, they are his proof as well.
            let his = try await BlobUploadTests.send(client, digest, token: bo, offset: 0, length: bytes.count, bytes)
            #expect(his.status == .created)
            let again = try await Self.pushAttach(
                client, token: bo, team: world.fixtures.red.id, task: world.floatingTask,
                digest: digest, size: bytes.count)
            #expect(again.contains("attach-\(digest.prefix(8))"))
        }
    }

    @Test func oneWorkersJunkStopsAtTheirAllowanceWhileAColleaguesPhotoStillGoesIn() async throws {
        // A flood: never beside the other heavy tests (MachineAlone).
        try await MachineAlone.run { try await Self.junkFlood() }
    }

    static func junkFlood() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            // Concurrently, as an attacker would: 24 junk "JPEGs" of 20 MB from Cy, far beyond his 256 MB.
            let size = 20 * 1024 * 1024
            let port = try #require(client.port)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for seed in 0..<24 {
                    group.addTask {
                        let junk = BlobUploadTests.photo(size, seed: UInt64(100 + seed))
                        var status = HTTPResponse.Status.serviceUnavailable
                        // At most two at once per person: the rest are told 429 and try again, as a device does.
                        _ = try await eventually(within: .seconds(120), every: .milliseconds(50)) {
                            status = try await Self.sendAlone(port: port, BlobDigest(of: junk).hex, token: world.cyToken, junk)
                            return status != .tooManyRequests
                        }
                        return status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let stored = statuses.filter { $0 == .created }.count
            #expect(stored == 12, "256 MB holds 12 files of 20 MB: \(statuses.map(\.code))")
            #expect(statuses.filter { $0.code == 507 }.count == 12, "\(statuses.map(\.code))")
            // Ann's real photo is not held back by Cy's junk.
            let photo = BlobUploadTests.photo(3 * 1024 * 1024, seed: 7)
            // (On a connection of her own too: the test client's, idle through the flood, may have been closed by the server.)
            let hers = try await Self.sendAlone(port: port, BlobDigest(of: photo).hex, token: world.annToken, photo)
            #expect(hers == .created)
        }
    }

    /// A PATCH of a whole file on a connection of its own, as each phone has: the live test client
    /// sends every request on one connection, one after another, and its 20 s for an answer counts the
    /// wait behind the others (a flood of 24 files of 20 MB timed out there under a full suite's load,
    /// seen in a clean-clone CI run).
    static func sendAlone(port: Int, _ digest: String, token: String, _ bytes: [UInt8]) async throws -> HTTPResponse.Status {
        HTTPResponse.Status(
            code: try await BlobUploadTests.patchAlone(port: port, digest, token: token, offset: 0, length: bytes.count, bytes[...]).status)
    }

    @Test func askingAboutAFileKeepsNothingItExpiresAWeekAfterItWasSent() async throws {
        try await SyncServerTests().withServer { world, client in
            let junk = BlobUploadTests.photo(4_000, seed: 21)
            let digest = BlobDigest(of: junk)
            let sent = try await BlobUploadTests.send(client, digest.hex, token: world.cyToken, offset: 0, length: junk.count, junk)
            #expect(sent.status == .created)
            // As if it was sent six days ago: every file the upload left dates from then.
            let root = world.folder.appending(path: "blobs")
            let sixDaysAgo = Date().addingTimeInterval(-6 * 86_400)
            for case let path as String in FileManager.default.enumerator(atPath: root.path)! {
                try FileManager.default.setAttributes([.modificationDate: sixDaysAgo], ofItemAtPath: root.appending(path: path).path)
            }
            // Its sender asks about it now, as a HEAD does.
            let asked = try await BlobUploadTests.state(client, digest.hex, token: world.cyToken)
            #expect(asked.2 == "?1")
            let store = try FileBlobStore(root: root)
            let sweep = BlobSweep(databaseURL: world.url, store: store, logger: .init(label: "test"))
            #expect(try await sweep.sweep(now: Date()) == 0, "six days: kept")
            #expect(
                try await sweep.sweep(now: Date().addingTimeInterval(2 * 86_400)) == 1,
                "a week after it was sent it goes, asked about or not")
            #expect(try store.state(of: digest) == .absent)
        }
    }

    /// A small disk of its own (tmpfs; the tests run as root, as CI does), unmounted after `body`.
    static func withSmallDisk(megabytes: Int, _ body: (URL) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "small-disk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func run(_ arguments: [String]) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = arguments
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        let mounted = try run(["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", folder.path])
        try #require(mounted == 0, "a small disk for the test needs mount (root)")
        defer {
            _ = try? run(["umount", "-l", folder.path])
            try? FileManager.default.removeItem(at: folder)
        }
        try await body(folder)
    }

    /// Seen on main: one worker's unattached uploads filled the disk's headroom above the reserve,
    /// and a teammate's real photo was refused with 507 (the allowance of 256 MB a person is no help
    /// on a disk with less free). Here a 40 MB disk keeps 8 MB free: Cy's junk fills the rest, and
    /// Ann's photo still goes in, at the cost of his oldest.
    @Test func junkOnAFullDiskMakesRoomForAColleaguesPhotoTheBiggestHoldersOldestFirst() async throws {
        try await Self.withSmallDisk(megabytes: 40) { disk in
            try await SyncServerTests().withServer(
                configure: {
                    $0.blobsDirectory = disk
                    $0.blobReserveBytes = 8 * 1024 * 1024
                }
            ) { world, client in
                // Files of 4 MB until the disk is full: files sent in the last ten minutes are never pushed out
                // (their attachments may be on their way), so Cy's own junk stops at 507.
                var junk: [String] = []
                for seed in 0..<20 {
                    let bytes = BlobUploadTests.photo(4 * 1024 * 1024, seed: UInt64(300 + seed))
                    let digest = BlobDigest(of: bytes).hex
                    let sent = try await BlobUploadTests.send(client, digest, token: world.cyToken, offset: 0, length: bytes.count, bytes)
                    if sent.status.code == 507 { break }
                    #expect(sent.status == .created, "junk \(seed): \(sent.status)")
                    junk.append(digest)
                }
                #expect((6...8).contains(junk.count), "32 MB above the reserve holds 7 files of 4 MB or so: \(junk.count)")
                // Twenty minutes later (every file the uploads left dates from then, the oldest first), Ann's photo.
                for case let path as String in FileManager.default.enumerator(atPath: disk.path)! {
                    let name = URL(fileURLWithPath: path).lastPathComponent
                    let age = 1200 - Double(junk.firstIndex(of: name) ?? 0)
                    try FileManager.default.setAttributes(
                        [.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: disk.appending(path: path).path)
                }
                let photo = BlobUploadTests.photo(10 * 1024 * 1024, seed: 8)
                let hers = try await BlobUploadTests.send(
                    client, BlobDigest(of: photo).hex, token: world.annToken, offset: 0, length: photo.count, photo)
                #expect(hers.status == .created, "Ann's photo goes in on a disk Cy filled")
                let store = try FileBlobStore(root: disk)
                let kept = try junk.filter { try store.state(of: BlobDigest(hex: $0)!) != .absent }
                #expect(kept == Array(junk.suffix(kept.count)) && kept.count < junk.count, "Cy's oldest junk made the room")
                #expect(try store.state(of: BlobDigest(hex: kept.last!)!) != .absent, "only as much as needed went")
            }
        }
    }

    /// Issue 64, hole 6 (seen failing on a28f529: young junk, never evicted for ten minutes, had a
    /// teammate's real photo refused 507, and a flooder could renew it). A file announced as proof
    /// for a task its sender holds (`Upload-For`) makes room from files nobody announced, however
    /// young; announcing a task one does not hold buys nothing.
    @Test func youngJunkNeverCrowdsOutProofAnnouncedForATaskItsSenderHolds() async throws {
        try await Self.withSmallDisk(megabytes: 40) { disk in
            try await SyncServerTests().withServer(
                configure: {
                    $0.blobsDirectory = disk
                    $0.blobReserveBytes = 8 * 1024 * 1024
                }
            ) { world, client in
                // Cy fills the disk with files of 4 MB, just sent, until it is full.
                var junk: [String] = []
                for seed in 0..<20 {
                    let bytes = BlobUploadTests.photo(4 * 1024 * 1024, seed: UInt64(500 + seed))
                    let digest = BlobDigest(of: bytes).hex
                    let sent = try await BlobUploadTests.send(client, digest, token: world.cyToken, offset: 0, length: bytes.count, bytes)
                    if sent.status.code == 507 { break }
                    #expect(sent.status == .created, "junk \(seed): \(sent.status)")
                    junk.append(digest)
                }
                #expect(junk.count >= 6, "\(junk.count)")
                let photo = BlobUploadTests.photo(10 * 1024 * 1024, seed: 9)
                let digest = BlobDigest(of: photo).hex
                // Not announced, Ann's photo waits like anyone's (the junk is younger than ten minutes).
                let plain = try await BlobUploadTests.send(client, digest, token: world.annToken, offset: 0, length: photo.count, photo)
                #expect(plain.status.code == 507)
                // Cy announcing his next file for Ann's task buys nothing: he does not hold it.
                let more = BlobUploadTests.photo(4 * 1024 * 1024, seed: 600)
                let claimed = try await BlobUploadTests.send(
                    client, BlobDigest(of: more).hex, token: world.cyToken, offset: 0, length: more.count, more, for: String(world.redTask))
                #expect(claimed.status.code == 507)
                let malformed = try await BlobUploadTests.send(
                    client, digest, token: world.annToken, offset: 0, length: photo.count, photo, for: "task 1")
                #expect(malformed.status == .badRequest)
                // Announced for her own task, it goes in: Cy's young junk makes the room.
                let proof = try await BlobUploadTests.send(
                    client, digest, token: world.annToken, offset: 0, length: photo.count, photo, for: String(world.redTask))
                #expect(proof.status == .created, "\(proof.status)")
                let store = try FileBlobStore(root: disk)
                let kept = try junk.filter { try store.state(of: BlobDigest(hex: $0)!) != .absent }
                #expect(kept.count < junk.count, "Cy's junk made the room")
                #expect(try store.state(of: BlobDigest(hex: digest)!) != .absent)
            }
        }
    }

    @Test func theBiggestHolderOfUnclaimedFilesLosesTheirOldestFirst() {
        let day = Date(timeIntervalSince1970: 1_800_000_000)
        func file(_ seed: UInt8) -> JunkEviction.Candidate.Item { .complete(BlobDigest(of: [seed])) }
        let candidates: [JunkEviction.Candidate] = [
            .init(person: 1, time: day, bytes: 3, item: file(0)),
            .init(person: 2, time: day.addingTimeInterval(10), bytes: 4, item: file(2)),
            .init(person: 2, time: day.addingTimeInterval(5), bytes: 4, item: file(1)),
            .init(person: 2, time: day.addingTimeInterval(20), bytes: 4, item: file(3)),
        ]
        let (annOld, cy0, cy1, cy2) = (file(0), file(1), file(2), file(3))
        #expect(JunkEviction.choose(candidates, atLeast: 5).map(\.item) == [cy0, cy1])
        // Cy down to 4 bytes, Ann at 3: Cy still holds the most.
        #expect(JunkEviction.choose(candidates, atLeast: 9).map(\.item) == [cy0, cy1, cy2])
        #expect(JunkEviction.choose(candidates, atLeast: 100).map(\.item) == [cy0, cy1, cy2, annOld])
        #expect(JunkEviction.choose(candidates, atLeast: 0).isEmpty)
    }

    /// An unfinished upload's day counts from when it began: adding a piece a day never keeps it
    /// (on main, each piece renewed its time).
    @Test func anUnfinishedUploadsDayCountsFromItsStartNotItsLastPiece() async throws {
        try await SyncServerTests().withServer { world, client in
            let bytes = BlobUploadTests.photo(40_000, seed: 31)
            let digest = BlobDigest(of: bytes)
            let first = try await BlobUploadTests.send(
                client, digest.hex, token: world.cyToken, offset: 0, length: bytes.count, bytes.prefix(10_000))
            #expect(first.status == .ok || first.status == .created, "\(first.status)")
            let root = world.folder.appending(path: "blobs")
            let partial = root.appending(path: "partial/\(world.fixtures.cy.id)/\(digest.hex)").path
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-23 * 3600)], ofItemAtPath: partial)
            let more = try await BlobUploadTests.send(
                client, digest.hex, token: world.cyToken, offset: 10_000, length: bytes.count, bytes.dropFirst(10_000).prefix(10_000))
            #expect(more.status == .ok || more.status == .created, "\(more.status)")
            let store = try FileBlobStore(root: root)
            let sweep = BlobSweep(databaseURL: world.url, store: store, logger: .init(label: "test"))
            #expect(try await sweep.sweep(now: Date().addingTimeInterval(2 * 3600)) == 1, "begun 25 hours before: gone")
            #expect(try store.state(of: digest, for: world.fixtures.cy.id) == .absent)
        }
    }
}
