import CentralStore
import Foundation
import PostgresNIO
import TeamDatabase

/// Copies one binary row of ``ReplicationSnapshot/replicaRowColumns`` into a
/// replica without making Swift values of its fields: text goes from the
/// network buffer to SQLite, integers and floats are read in place, timestamps
/// become milliseconds. The full rebuild's inner loop.
struct RowCopier: Sendable {
    /// Microseconds from 1970 to PostgreSQL's epoch, 2000-01-01.
    static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)

    let cells: [ByteBuffer?]

    /// Takes the cells of `row`, which must have the replica columns.
    init(_ row: PostgresRow) {
        var cells: [ByteBuffer?] = []
        cells.reserveCapacity(26)
        for cell in row { cells.append(cell.bytes) }
        self.cells = cells
    }

    func int64(_ index: Int) -> Int64? {
        guard let buffer = cells[index] else { return nil }
        if buffer.readableBytes == 8 { return buffer.getInteger(at: buffer.readerIndex, as: Int64.self) }
        return buffer.getInteger(at: buffer.readerIndex, as: Int32.self).map(Int64.init)
    }

    var teamID: Int64? { int64(4) }
    var assigneeID: Int64? { int64(5) }
    var locationID: Int64? { int64(6) }
    var hasLocation: Bool { cells[16] != nil }

    func bindTask(_ bind: Binder) {
        for (column, index) in zip(0..<16, Int32(1)...) {
            switch column {
            case 1, 2, 3, 11, 15: text(column, index, bind)
            case 7, 8, 9, 12, 13: timestamp(column, index, bind)
            default: bind(index, int64(column))
            }
        }
    }

    func bindLocation(_ bind: Binder) {
        bind(1, int64(16))
        text(17, 3, bind)
        double(18, 4, bind)
        double(19, 5, bind)
        double(20, 6, bind)
        for (column, index) in zip(21...25, Int32(7)...) { text(column, index, bind) }
    }

    private func text(_ column: Int, _ index: Int32, _ bind: Binder) {
        guard let buffer = cells[column] else { return bind.null(index) }
        buffer.withUnsafeReadableBytes { bind.text(index, $0) }
    }

    private func double(_ column: Int, _ index: Int32, _ bind: Binder) {
        guard let buffer = cells[column], let bits = buffer.getInteger(at: buffer.readerIndex, as: UInt64.self) else {
            return bind.null(index)
        }
        bind(index, Double(bitPattern: bits))
    }

    /// timestamptz is microseconds since 2000-01-01; the replica stores
    /// milliseconds since 1970, rounded exactly as for a decoded `Date`.
    private func timestamp(_ column: Int, _ index: Int32, _ bind: Binder) {
        guard let buffer = cells[column], let micros = buffer.getInteger(at: buffer.readerIndex, as: Int64.self) else {
            return bind.null(index)
        }
        let date = Date(timeInterval: Double(micros) / 1_000_000, since: Self.postgresEpoch)
        bind(index, Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }
}
