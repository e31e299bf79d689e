import Foundation
import TeamworkModel

/// A change a worker made in the field, as pushed by `teamwork-worker sync`.
/// Decoding is strict: an unknown field or operation is an error, not ignored.
public struct WorkerChange: Sendable, Codable, Equatable {
    public enum Operation: String, Sendable, Codable, CaseIterable {
        /// Begin work on a task assigned to the worker.
        case start
        /// Finish a task assigned to the worker, with a note.
        case complete
        /// Take back the worker's own completion.
        case reopen
        /// Take a free-floating task of the worker's team.
        case claim
        /// Report the worker's own position.
        case checkin
        /// Answer one item of the task's checklist (`item`, `value`); the latest answer counts.
        case answer
        /// A file of the work (a photo, a PDF, or with `signer` a signature), uploaded first as the blob
        /// `blob`; with `item`, it answers that photo or signature item of the checklist.
        case attach
        /// What the worker used on the task (``Material``): `item` the part's code, or no item and the
        /// line's description in `note`; `value` the quantity, which sets the worker's line (0 removes it).
        case use
        /// Time on the task (``TimeOnJob``): `item` the kind (`work` or `travel`), `value` the interval
        /// `START/END` in UTC, which sets the worker's entry of that kind (an interval of no length
        /// removes it). Anyone holding the task may record their own, before or after it is completed.
        case time
    }

    /// The file types an attachment may be (told from the file's first bytes on every side).
    public static let attachmentTypes: Set<String> = ["image/jpeg", "image/png", "image/heic", "application/pdf"]
    /// The largest attachment the protocol allows, in bytes (a service may take less).
    public static let maximumAttachmentBytes: Int64 = 1 << 30
    /// The longest signer's name, in UTF-8 bytes.
    public static let maximumSignerBytes = 200

    /// The longest note a change may carry, in UTF-8 bytes (not characters:
    /// one character can be hundreds of bytes of combining marks).
    public static let maximumNoteBytes = 10_000
    /// The longest change id, in UTF-8 bytes.
    public static let maximumIDBytes = 100
    /// The earliest `made_at` taken; the latest is a day after the server's clock.
    public static let earliestMadeAt = WorkerChangeBounds.earliest

    /// Whether `id` can be stored and named in a log or a reason: 1 to
    /// ``maximumIDBytes`` bytes, no control characters (a NUL would cut it short
    /// in SQLite's C API, an escape would reach a reader's terminal).
    public static func isWellFormed(id: String) -> Bool {
        (1...maximumIDBytes).contains(id.utf8.count)
            && !id.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }

    /// Whether `madeAt` is a time a device could have made a change, given when it arrived.
    public static func isPlausible(madeAt: Date, receivedAt: Date) -> Bool {
        madeAt >= earliestMadeAt && madeAt <= receivedAt.addingTimeInterval(86_400)
    }

    /// Made by the client, unique per change: a retried push is applied once.
    public var id: String
    public var operation: Operation
    public var taskID: Int64?
    public var note: String?
    /// When the worker made the change, on their device (ISO 8601).
    public var madeAt: Date
    public var latitude: Double?
    public var longitude: Double?
    /// For an answer: the checklist item's key, and the value given.
    public var item: String?
    public var value: String?
    /// For an attachment: the SHA-256 of the file (uploaded first), its size in bytes, its type, and
    /// for a signature who signed.
    public var blob: String?
    public var size: Int64?
    public var mediaType: String?
    public var signer: String?

    public init(
        id: String, operation: Operation, taskID: Int64? = nil, note: String? = nil, madeAt: Date,
        latitude: Double? = nil, longitude: Double? = nil, item: String? = nil, value: String? = nil,
        blob: String? = nil, size: Int64? = nil, mediaType: String? = nil, signer: String? = nil
    ) {
        self.item = item
        self.value = value
        self.blob = blob
        self.size = size
        self.mediaType = mediaType
        self.signer = signer
        self.id = id
        self.operation = operation
        self.taskID = taskID
        self.note = note
        self.madeAt = madeAt
        self.latitude = latitude
        self.longitude = longitude
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, operation
        case taskID = "task_id"
        case note
        case madeAt = "made_at"
        case latitude, longitude, item, value
        case blob, size
        case mediaType = "media_type"
        case signer
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        if let unknown = container.allKeys.first(where: { !known.contains($0.stringValue) }) {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "unknown field '\(unknown.stringValue)'"))
        }
        let keyed = try decoder.container(keyedBy: CodingKeys.self)
        id = try keyed.decode(String.self, forKey: .id)
        let operation = try keyed.decode(String.self, forKey: .operation)
        guard let parsed = Operation(rawValue: operation) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown operation '\(operation)'"))
        }
        self.operation = parsed
        taskID = try keyed.decodeIfPresent(Int64.self, forKey: .taskID)
        note = try keyed.decodeIfPresent(String.self, forKey: .note)
        if let text = try? keyed.decode(String.self, forKey: .madeAt) {
            guard let date = Self.time(text) else {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: decoder.codingPath + [CodingKeys.madeAt],
                        debugDescription: "made_at must be an RFC 3339 time with a zone, like 2026-12-01T09:30:00Z"))
            }
            madeAt = date
        } else {
            madeAt = try keyed.decode(Date.self, forKey: .madeAt)
        }
        latitude = try keyed.decodeIfPresent(Double.self, forKey: .latitude)
        longitude = try keyed.decodeIfPresent(Double.self, forKey: .longitude)
        item = try keyed.decodeIfPresent(String.self, forKey: .item)
        value = try keyed.decodeIfPresent(String.self, forKey: .value)
        blob = try keyed.decodeIfPresent(String.self, forKey: .blob)
        size = try keyed.decodeIfPresent(Int64.self, forKey: .size)
        mediaType = try keyed.decodeIfPresent(String.self, forKey: .mediaType)
        signer = try keyed.decodeIfPresent(String.self, forKey: .signer)
    }

    /// An RFC 3339 time with a zone (`Z` or an offset), with or without
    /// fractions of a second: what `made_at` may be (docs/openapi.json).
    public static func time(_ text: String) -> Date? {
        guard text.utf8.count <= 40, text.range(of: timePattern, options: .regularExpression) != nil, hasRealDay(text) else {
            return nil
        }
        let formatter = ISO8601DateFormatter()
        if let plain = formatter.date(from: text) { return plain }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }

    /// The form of `made_at`, as docs/openapi.json states it (a test holds the two equal).
    public static let timePattern =
        #"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"#

    /// Whether the text starts with a day the (proleptic Gregorian) calendar has:
    /// the formatter would take 02-30 as 03-02.
    private static func hasRealDay(_ text: String) -> Bool {
        let parts = text.prefix(10).split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, (1...12).contains(parts[1]) else { return false }
        let (year, month, day) = (parts[0], parts[1], parts[2])
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
    }
}

/// What became of one pushed change.
public struct WorkerChangeResult: Sendable, Codable, Equatable {
    public enum Status: String, Sendable, Codable {
        case accepted, rejected
    }

    public var id: String
    public var status: Status
    /// Why it was rejected, in words for the worker.
    public var reason: String?
    /// Accepted earlier already: this push was a retry.
    public var duplicate: Bool
    /// In the master's ledger: taken in for good, so the device may stop keeping it. Said only in
    /// answer to a push of changes sent again (``PushRequest/resent``); absent otherwise.
    public var settled: Bool?

    public static func accepted(_ id: String, duplicate: Bool = false) -> WorkerChangeResult {
        WorkerChangeResult(id: id, status: .accepted, reason: nil, duplicate: duplicate)
    }

    public static func rejected(_ id: String, _ reason: String) -> WorkerChangeResult {
        WorkerChangeResult(id: id, status: .rejected, reason: reason, duplicate: false)
    }

    /// A change sent again that the master's ledger already holds: nothing is taken again.
    public static func settled(_ id: String) -> WorkerChangeResult {
        WorkerChangeResult(id: id, status: .accepted, reason: nil, duplicate: true, settled: true)
    }
}
