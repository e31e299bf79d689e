import BlobStore
import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Photos and signatures taken offline reach the master once, intact: the
/// device keeps a copy, the next sync uploads it (resumably) before the
/// record that names it, and a manager gets back the very bytes.
@Suite("Attachments end to end")
struct AttachmentEndToEndTests {
    static func file(_ folder: URL, _ name: String, header: [UInt8], size: Int, seed: UInt64) throws -> (path: String, bytes: Data) {
        var random = SplitMix(seed: seed)
        var bytes = [UInt8](repeating: 0, count: size)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: random.next(256)) }
        bytes.replaceSubrange(0..<header.count, with: header)
        let url = folder.appending(path: name)
        try Data(bytes).write(to: url)
        return (url.path, Data(bytes))
    }

    @Test func aPhotoAndASignatureTakenOfflineArriveOnceIntactAndAnswerTheirItems() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let manager = ManagerTool(setup.url)
            func service(_ arguments: String...) async throws -> Tool.Run {
                try await Tool.service.run(arguments + ["--database-url", setup.url.connectionString, "--replicas", setup.folder.path])
            }
            func worker(_ arguments: String...) async throws -> Tool.Run { try await WorkerTool.run(setup.annHome, arguments) }

            _ = try await manager.ok(
                "checklist", "add", "Handover", "--item", "photo:photo:The new meter:required",
                "--item", "signed:signature:Customer's signature:required")
            let task = try JSONOutput.decode(
                FieldTask.self,
                try await manager.ok(
                    "task", "create", "--title", "hand over", "--team", "red",
                    "--assignee", "ann@example.org", "--checklist", "Handover", "--json"))
            #expect(try await service("replicate", "--once").status == 0)
            #expect(try await worker("login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let id = String(task.id)

            let scratch = setup.folder.deletingLastPathComponent().appending(path: "camera")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            let photo = try Self.file(scratch, "meter.jpg", header: [0xFF, 0xD8, 0xFF, 0xE0], size: 3 * 1024 * 1024 + 17, seed: 5)
            let signature = try Self.file(
                scratch, "signature.png", header: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], size: 40_000, seed: 6)
            let text = scratch.appending(path: "notes.txt")
            try Data("not a photo".utf8).write(to: text)

            // In a basement: no server.
            try await setup.server.stop()
            let early = try await worker("complete", id, "--note", "handed over")
            #expect(early.status != 0 && early.stderr.contains("needs answers to photo, signed"), "\(early.stderr)")
            // It says how (seen before: no hint at all).
            #expect(
                early.stderr.contains("teamwork-worker attach \(id) FILE --item photo")
                    && early.stderr.contains("teamwork-worker sign \(id) FILE --signer NAME --item signed"), "\(early.stderr)")
            let checked = try await worker("check", id, "photo")
            #expect(checked.status != 0 && checked.stderr.contains("is a photo: teamwork-worker attach"), "\(checked.stderr)")
            let refused = try await worker("attach", id, text.path)
            #expect(
                refused.status == TeamworkError.Code.invalidInput.exitStatus && refused.stderr.contains("not a JPEG, PNG, HEIC or PDF"),
                "\(refused.stderr)")
            let wrongItem = try await worker("attach", id, photo.path, "--item", "signed")
            #expect(wrongItem.status != 0 && wrongItem.stderr.contains("signed is a signature"), "\(wrongItem.stderr)")
            // Without --item, a photo answers the checklist's one photo item still unanswered, and says so.
            let attached = try await worker("attach", id, photo.path)
            #expect(attached.status == 0 && attached.stdout.contains("(photo)"), "\(attached.stdout) \(attached.stderr)")
            #expect(try await worker("sign", id, "--signer", "Jane Doe", signature.path, "--item", "signed").status == 0)
            // The originals may go: the device kept its own copies.
            try FileManager.default.removeItem(atPath: photo.path)
            let waiting = try await worker("status")
            #expect(waiting.stdout.contains("Files to upload: 2 (\(photo.bytes.count + signature.bytes.count) bytes)"), "\(waiting.stdout)")
            #expect(try await worker("complete", id, "--note", "handed over").status == 0, "both required items are answered")

            try await setup.server.start()
            let synced = try await worker("sync")
            #expect(
                synced.status == 0 && synced.stdout.contains("uploaded 2 files (\(photo.bytes.count + signature.bytes.count) bytes)")
                    && synced.stdout.contains("0 rejected"), "\(synced.stdout) \(synced.stderr)")
            let again = try await worker("sync")
            #expect(again.stdout.contains("pushed 0") && !again.stdout.contains("uploaded"), "nothing is sent twice: \(again.stdout)")
            func kept() -> [String] {
                ((try? FileManager.default.contentsOfDirectory(atPath: setup.annHome.appending(path: "blobs").path)) ?? [])
                    .filter { !$0.hasPrefix(".") }
            }
            // Kept until the master holds their attachments: they would go again should the host that took them be lost.
            #expect(kept().count == 2, "the device keeps its copies until the master confirms them")
            #expect(try await service("listen", "--once").status == 0)
            #expect(try await service("listen", "--once").status == 0)
            let confirmed = try await worker("sync")
            #expect(confirmed.status == 0 && !confirmed.stdout.contains("uploaded"), "\(confirmed.stdout)")
            #expect(kept().isEmpty, "the device's copies go once the master has them")

            let listed = try JSONOutput.decode([AttachmentRecord].self, try await manager.ok("task", "attachments", id, "--json"))
            #expect(listed.count == 2, "each file once: \(listed)")
            let shown = try await manager.ok("task", "attachments", id)
            #expect(shown.contains("Jane Doe") && shown.contains("image/jpeg") && shown.contains("image/png"), "\(shown)")
            let master = try await CentralStore.withStore(setup.url) { try await $0.task(id: task.id) }
            #expect(master.status == .completed)
            #expect(
                master.answers["photo"]?.value == BlobDigest(of: photo.bytes).hex
                    && master.answers["signed"]?.value == BlobDigest(of: signature.bytes).hex)

            let out = scratch.appending(path: "fetched.jpg").path
            let photoRecord = try #require(listed.first { $0.item == "photo" })
            let got = try await manager.run([
                "attachment", "get", String(photoRecord.id), "--output", out,
                "--blobs", setup.folder.appending(path: "blobs").path,
            ])
            #expect(got.status == 0, "\(got.stderr)")
            #expect(FileManager.default.contents(atPath: out) == photo.bytes, "the manager gets the very bytes taken offline")
            // The generator writes the master's view (the answers the listener took in) back first.
            #expect(try await service("replicate", "--once").status == 0)
            let verified = try await service("verify")
            #expect(verified.status == 0, "every attachment's file is whole: \(verified.stdout) \(verified.stderr)")

            // A damaged file on the service's disk is found, and not handed on.
            let stored = setup.folder.appending(
                path: "blobs/\(photoRecord.sha256.prefix(2))/\(photoRecord.sha256.dropFirst(2).prefix(2))/\(photoRecord.sha256)")
            var damaged = photo.bytes
            damaged[100] ^= 0xFF
            try damaged.write(to: stored)
            let verify = try await service("verify")
            #expect(verify.status == 2 && verify.stdout.contains("is damaged"), "\(verify.stdout)")
            let refusedGet = try await manager.run([
                "attachment", "get", String(photoRecord.id), "--output", out + "2",
                "--blobs", setup.folder.appending(path: "blobs").path,
            ])
            #expect(refusedGet.status != 0 && !FileManager.default.fileExists(atPath: out + "2"), "\(refusedGet.stderr)")
        }
    }
}
