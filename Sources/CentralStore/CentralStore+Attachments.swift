import Foundation
import PostgresNIO
import TeamworkModel

/// A file added to a task from the field (sql/0021_attachments.sql): its blob's SHA-256, size, type,
/// who added it and when, and, for a signature, who signed.
public struct AttachmentRecord: Sendable, Equatable, Codable {
    public var id: Int64
    public var taskID: Int64?
    public var personID: Int64
    public var item: String?
    public var sha256: String
    public var size: Int64
    public var mediaType: String
    public var signer: String?
    public var capturedAt: Date
    public var receivedAt: Date
}

extension CentralStore {
    static let attachmentColumns = """
        a.id, a.task_id, a.person_id, a.item, a.sha256, a.size, a.media_type, a.signer, a.captured_at, a.received_at
        """

    static func attachment(_ row: PostgresRow) throws -> AttachmentRecord {
        let (id, task, person, item, sha, size, type, signer, captured, received) =
            try row.decode((Int64, Int64?, Int64, String?, String, Int64, String, String?, Date, Date).self)
        return AttachmentRecord(id: id, taskID: task, personID: person, item: item, sha256: sha, size: size, mediaType: type,
                                signer: signer, capturedAt: captured, receivedAt: received)
    }

    /// A task's attachments, in the order they were captured.
    public func attachments(ofTask id: Int64) async throws -> [AttachmentRecord] {
        _ = try await task(id: id)
        return try await rows("""
            SELECT \(unescaped: Self.attachmentColumns) FROM attachments a WHERE a.task_id = \(id) ORDER BY a.captured_at, a.id
            """).map(Self.attachment)
    }

    public func attachment(id: Int64) async throws -> AttachmentRecord {
        guard let row = try await rows("SELECT \(unescaped: Self.attachmentColumns) FROM attachments a WHERE a.id = \(id)").first else {
            throw TeamworkError.notFound("no attachment with id \(id)")
        }
        return try Self.attachment(row)
    }

    /// The SHA-256 of every file an attachment names: what the blob store must hold.
    public func referencedBlobs() async throws -> Set<String> {
        Set(try await rows("SELECT DISTINCT sha256 FROM attachments").map { try $0.decode(String.self) })
    }
}
