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
        a.id AS attachment_id, a.task_id AS attachment_task_id, a.person_id AS attachment_person_id, a.item AS attachment_item,
        a.sha256 AS attachment_sha256, a.size AS attachment_size, a.media_type AS attachment_media_type,
        a.signer AS attachment_signer, a.captured_at AS attachment_captured_at, a.received_at AS attachment_received_at
        """

    /// The columns of ``attachmentColumns``, wherever they stand in `row`.
    static func attachment(_ row: PostgresRow) throws -> AttachmentRecord {
        let r = PostgresRandomAccessRow(row)
        return AttachmentRecord(
            id: try r["attachment_id"].decode(Int64.self), taskID: try r["attachment_task_id"].decode(Int64?.self),
            personID: try r["attachment_person_id"].decode(Int64.self), item: try r["attachment_item"].decode(String?.self),
            sha256: try r["attachment_sha256"].decode(String.self), size: try r["attachment_size"].decode(Int64.self),
            mediaType: try r["attachment_media_type"].decode(String.self), signer: try r["attachment_signer"].decode(String?.self),
            capturedAt: try r["attachment_captured_at"].decode(Date.self), receivedAt: try r["attachment_received_at"].decode(Date.self)
        )
    }

    /// A task's attachments, in the order they were captured.
    public func attachments(ofTask id: Int64) async throws -> [AttachmentRecord] {
        _ = try await task(id: id)
        return try await rows(
            """
            SELECT \(unescaped: Self.attachmentColumns) FROM attachments a WHERE a.task_id = \(id) ORDER BY a.captured_at, a.id
            """
        ).map(Self.attachment)
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
