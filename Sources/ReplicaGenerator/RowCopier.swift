import CentralStore
import Foundation
import PostgresNIO
import TeamDatabase
import TeamworkModel

/// Copies one row of ``ReplicationSnapshot/forEachTaskRow(_:)`` into a replica
/// without making Swift values of its fields: the row is one binary record
/// (PostgreSQL's `record_send`: a field count, then per field its type, its
/// length or -1 for NULL, and its bytes), so the reading thread takes one cell
/// per row instead of 22, notes where each field starts, and a building thread
/// binds text straight from the network buffer to SQLite, integers and floats
/// read in place, timestamps as milliseconds. The full rebuild's inner loop.
struct RowCopier: Sendable {
    /// Microseconds from 1970 to PostgreSQL's epoch, 2000-01-01.
    static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)
    /// The fields of a row: the columns ``TaskSchema/travelling`` declares, at most ``capacity``.
    static let fieldCount = TaskSchema.travelling.count
    static let capacity = 40
    /// How each field is bound, by its column's kind.
    private static let kinds = TaskSchema.travelling.map(\.kind)
    /// The PostgreSQL types (OIDs) each field may have, by its kind.
    private static let types: [[Int32]] = kinds.map { kind in
        switch kind {
        case .integer: [20, 21, 23]  // int8, int2, int4
        case .text, .answers: [25, 1043]  // text, varchar
        case .date: [1184]  // timestamptz
        case .bool: [16]
        }
    }
    private static let teamField = TaskSchema.travelling.firstIndex { $0.name == "team_id" }!
    private static let assigneeField = TaskSchema.travelling.firstIndex { $0.name == "assignee_id" }!

    private let record: ByteBuffer
    /// Where each field's bytes start in `record`, -1 for NULL; and their length.
    private let starts: InlineArray<40, Int32>
    private let lengths: InlineArray<40, Int32>

    /// Takes the record of `row`, which must hold the replica columns.
    init(_ row: PostgresRow) throws {
        var cells = row.makeIterator()
        guard let record = cells.next()?.bytes else { throw ReplicaError("a replica row without its record") }
        self.record = record
        let (starts, lengths) = try record.withUnsafeReadableBytes { raw in
            precondition(Self.fieldCount <= Self.capacity, "more columns travel than a copier holds: raise its capacity")
            var starts = InlineArray<40, Int32>(repeating: -1), lengths = InlineArray<40, Int32>(repeating: 0)
            func int32(at offset: Int) throws -> Int32 {
                guard offset + 4 <= raw.count else { throw ReplicaError("a replica row record is cut short") }
                return Int32(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            }
            guard try int32(at: 0) == Self.fieldCount else { throw ReplicaError("a replica row record has the wrong fields") }
            var offset = 4
            for field in 0..<Self.fieldCount {
                // The field's type must be the one its declared kind is bound as: a column declared
                // wrongly in TaskSchema is refused here, not copied as the wrong bytes.
                guard Self.types[field].contains(try int32(at: offset)) else {
                    throw ReplicaError(
                        "a replica row's \(TaskSchema.travelling[field].name) is of PostgreSQL type \(try int32(at: offset)), "
                            + "not what TaskSchema declares (\(Self.kinds[field]))")
                }
                let length = try int32(at: offset + 4)  // after the field's type
                offset += 8
                guard length >= 0 else { continue }
                guard offset + Int(length) <= raw.count else { throw ReplicaError("a replica row record is cut short") }
                starts[field] = Int32(offset)
                lengths[field] = length
                offset += Int(length)
            }
            return (starts, lengths)
        }
        self.starts = starts
        self.lengths = lengths
    }

    var teamID: Int64? { record.withUnsafeReadableBytes { int64(Self.teamField, $0) } }
    var assigneeID: Int64? { record.withUnsafeReadableBytes { int64(Self.assigneeField, $0) } }

    func bindTask(_ bind: Binder) {
        record.withUnsafeReadableBytes { raw in
            for (field, index) in zip(0..<Self.fieldCount, Int32(1)...) {
                switch Self.kinds[field] {
                case .text: text(field, index, raw, bind)
                case .answers: answers(field, index, raw, bind)
                case .date: timestamp(field, index, raw, bind)
                case .integer: bind(index, int64(field, raw))
                case .bool: bind(index, boolean(field, raw))
                }
            }
        }
    }

    private func boolean(_ field: Int, _ raw: UnsafeRawBufferPointer) -> Int64? {
        let start = Int(starts[field])
        guard start >= 0 else { return nil }
        return raw[start] == 0 ? 0 : 1
    }

    private func int64(_ field: Int, _ raw: UnsafeRawBufferPointer) -> Int64? {
        let start = Int(starts[field])
        guard start >= 0 else { return nil }
        if lengths[field] == 8 { return Int64(bigEndian: raw.loadUnaligned(fromByteOffset: start, as: Int64.self)) }
        return Int64(Int32(bigEndian: raw.loadUnaligned(fromByteOffset: start, as: Int32.self)))
    }

    private func text(_ field: Int, _ index: Int32, _ raw: UnsafeRawBufferPointer, _ bind: Binder) {
        let start = Int(starts[field])
        guard start >= 0 else { return bind.null(index) }
        bind.text(index, UnsafeRawBufferPointer(rebasing: raw[start..<start + Int(lengths[field])]))
    }

    /// The answers as every other writer of a replica writes them (``FieldTask/json(_:)``): the
    /// generator's catch-up and the sync endpoint compare them as text with what this wrote.
    /// Most tasks have none (`{}`), copied as they are.
    private func answers(_ field: Int, _ index: Int32, _ raw: UnsafeRawBufferPointer, _ bind: Binder) {
        let start = Int(starts[field])
        guard start >= 0 else { return bind.null(index) }
        let bytes = UnsafeRawBufferPointer(rebasing: raw[start..<start + Int(lengths[field])])
        if bytes.count == 2 && bytes[0] == UInt8(ascii: "{") && bytes[1] == UInt8(ascii: "}") { return bind.text(index, bytes) }
        let answers = (try? FieldTask.answers(json: String(decoding: bytes, as: UTF8.self))) ?? [:]
        bind(index, FieldTask.json(answers))
    }

    /// timestamptz is microseconds since 2000-01-01; the replica stores
    /// milliseconds since 1970, rounded exactly as for a decoded `Date`.
    private func timestamp(_ field: Int, _ index: Int32, _ raw: UnsafeRawBufferPointer, _ bind: Binder) {
        let start = Int(starts[field])
        guard start >= 0 else { return bind.null(index) }
        let micros = Int64(bigEndian: raw.loadUnaligned(fromByteOffset: start, as: Int64.self))
        let date = Date(timeInterval: Double(micros) / 1_000_000, since: Self.postgresEpoch)
        bind(index, date.millisecondsSince1970)
    }
}
