import ArgumentParser
import BlobStore
import CentralStore
import Foundation
import ObjectStore
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// Files from the field: `task attachments TASK` lists a task's, `attachment get ID` copies one out of
/// the service's blob folder, checking it against its SHA-256 on the way.
struct AttachmentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attachment",
        abstract: "Photos, PDFs and signatures workers added to tasks (list them with `task attachments TASK`).",
        subcommands: [Get.self]
    )

    /// Where the service keeps blobs: --blobs, else TEAMWORK_BLOBS (a folder, or an S3-compatible
    /// bucket, s3://BUCKET?endpoint=URL&region=R), else `blobs` in the service's replica folder
    /// (TEAMWORK_REPLICAS, else the local default's).
    static func blobs(_ given: String?) throws -> BlobLocation {
        let environment = ProcessInfo.processInfo.environment
        let replicas =
            environment["TEAMWORK_REPLICAS"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? DatabaseTarget.home.appending(path: "replicas")
        return try BlobLocation.parse(
            given ?? environment["TEAMWORK_BLOBS"].flatMap({ $0.isEmpty ? nil : $0 }),
            default: FileBlobStore.defaultRoot(replicas: replicas))
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy one attachment's file out of the service's blob folder or bucket, checked against its SHA-256."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Attachment id.") var id: Int64
        @Option(help: ArgumentHelp("Write the file here.", valueName: "file")) var output: String
        @Option(
            help: ArgumentHelp(
                "The service's blob folder or s3://BUCKET?endpoint=URL&region=R (default: TEAMWORK_BLOBS, else blobs in its replica folder).",
                valueName: "dir|s3-url"))
        var blobs: String?

        func run() async throws {
            let attachment = try await connection.withStore { try await $0.attachment(id: id) }
            guard let digest = BlobDigest(hex: attachment.sha256) else { throw TeamworkError(.internal, "attachment \(id) names no blob") }
            let store = try AttachmentCommand.blobs(blobs).open()
            guard case .complete = try await blockingWork({ try store.state(of: digest) }) else {
                throw TeamworkError.notFound("attachment \(id)'s file \(digest.hex) is not in \(store.location) (see --blobs)")
            }
            let scratch = output + ".part-\(getpid())"
            guard FileManager.default.createFile(atPath: scratch, contents: nil, attributes: [.posixPermissions: 0o600]),
                let handle = FileHandle(forWritingAtPath: scratch)
            else {
                throw TeamworkError(.cannotWrite, "cannot write \(output)")
            }
            defer { unlink(scratch) }
            do {
                try await blockingWork {
                    try store.read(digest) { try handle.write(contentsOf: $0) }
                    try handle.close()
                }
            } catch {
                throw TeamworkError(.cannotWrite, "cannot write \(output): \(error)")
            }
            // What the service holds is checked again on its way out: a file damaged on disk is not handed on.
            let copied = try BlobDigest(ofFileAt: scratch)
            guard copied == digest else {
                throw TeamworkError(
                    .internal, "the stored file of attachment \(id) is damaged: it hashes to \(copied.hex), not \(digest.hex)")
            }
            guard rename(scratch, output) == 0 else { throw TeamworkError(.cannotWrite, "cannot write \(output)") }
            Output.line("Wrote attachment \(id) (\(attachment.mediaType), \(attachment.size) bytes, sha256 \(digest.hex)) to \(output).")
        }
    }
}

extension TaskCommand {
    struct Attachments: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A task's photos, PDFs and signatures from the field.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (task, attachments, names) = try await connection.withStore { store in
                let attachments = try await store.attachments(ofTask: id)
                let people = try await store.people(ids: Array(Set(attachments.map(\.personID))))
                return (
                    try await store.task(id: id), attachments,
                    people.reduce(into: [Int64: String]()) { $0[$1.id] = $1.displayName }
                )
            }
            if output.json { return try Output.json(attachments) }
            if attachments.isEmpty { return Output.line("Task \(id) has no attachments.") }
            Output.table(
                ["ID", "ITEM", "TYPE", "BYTES", "BY", "CAPTURED", "SIGNER", "SHA256"],
                attachments.map { a in
                    [
                        String(a.id), a.item ?? "-", a.mediaType, String(a.size), names[a.personID] ?? String(a.personID),
                        Output.date(a.capturedAt, in: task.zone), a.signer ?? "-", String(a.sha256.prefix(16)) + "…",
                    ]
                })
        }
    }
}
