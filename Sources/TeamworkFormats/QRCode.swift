import TeamworkModel

/// A QR code (ISO/IEC 18004) of some text in byte mode, error correction level M (15% of it
/// can be lost), versions 1 to 10 (up to 213 bytes): a phone's pairing link, on the board and in
/// a terminal. Mask pattern chosen by the standard's penalty rules. After the standard's own
/// method and Project Nayuki's public description of it; checked by a decoder nobody here wrote
/// (zxing-cpp, in the tests).
public struct QRCode: Sendable, Equatable {
    /// `modules[row][column]`: true is dark. Without the quiet zone (4 modules) around it.
    public let modules: [[Bool]]
    public var size: Int { modules.count }
    public let version: Int

    /// Per version (1...10), level M: error correction bytes per block, and the blocks' data bytes.
    static let blocks: [(ec: Int, data: [Int])] = [
        (10, [16]), (16, [28]), (26, [44]), (18, [32, 32]), (24, [43, 43]), (16, [27, 27, 27, 27]),
        (18, [31, 31, 31, 31]), (22, [38, 38, 39, 39]), (22, [36, 36, 36, 37, 37]), (26, [43, 43, 43, 43, 44]),
    ]
    static let alignment: [[Int]] = [
        [], [6, 18], [6, 22], [6, 26], [6, 30], [6, 34], [6, 22, 38], [6, 24, 42], [6, 26, 46], [6, 28, 50],
    ]

    public enum Problem: Error, Equatable { case tooLong(Int) }

    public init(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard
            let version = (1...10).first(where: { version in
                let count = version < 10 ? 8 : 16
                return 4 + count + bytes.count * 8 <= Self.blocks[version - 1].data.reduce(0, +) * 8
            })
        else { throw Problem.tooLong(bytes.count) }
        self.version = version
        var grid = Grid(version: version)
        let codewords = Self.codewords(bytes, version: version)
        grid.place(codewords)
        var best: (penalty: Int, grid: Grid)?
        for mask in 0..<8 {
            var masked = grid
            masked.apply(mask: mask)
            masked.drawFormat(mask: mask)
            let penalty = masked.penalty()
            if best == nil || penalty < best!.penalty { best = (penalty, masked) }
        }
        modules = best!.grid.dark
    }

    /// The data and error correction bytes, interleaved as they are placed.
    static func codewords(_ bytes: [UInt8], version: Int) -> [UInt8] {
        let (ec, sizes) = blocks[version - 1]
        let capacity = sizes.reduce(0, +)
        var bits: [Bool] = []
        func append(_ value: Int, _ count: Int) { for i in (0..<count).reversed() { bits.append((value >> i) & 1 == 1) } }
        append(0b0100, 4)
        append(bytes.count, version < 10 ? 8 : 16)
        for byte in bytes { append(Int(byte), 8) }
        append(0, min(4, capacity * 8 - bits.count))
        append(0, (8 - bits.count % 8) % 8)
        var data = stride(from: 0, to: bits.count, by: 8).map { start in
            bits[start..<start + 8].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) }
        }
        var pad: UInt8 = 0xEC
        while data.count < capacity {
            data.append(pad)
            pad = pad == 0xEC ? 0x11 : 0xEC
        }
        let divisor = ReedSolomon.divisor(degree: ec)
        var offset = 0
        var dataBlocks: [[UInt8]] = []
        var ecBlocks: [[UInt8]] = []
        for size in sizes {
            let block = Array(data[offset..<offset + size])
            offset += size
            dataBlocks.append(block)
            ecBlocks.append(ReedSolomon.remainder(block, divisor))
        }
        var out: [UInt8] = []
        for i in 0..<(sizes.max() ?? 0) {
            for block in dataBlocks where i < block.count { out.append(block[i]) }
        }
        for i in 0..<ec {
            for block in ecBlocks { out.append(block[i]) }
        }
        return out
    }

    /// The modules, as text for a terminal: two rows to a line with half blocks, dark on light
    /// (the quiet zone included), as printed on a light background.
    public var terminalText: String {
        let quiet = 2
        let n = size + 2 * quiet
        func dark(_ row: Int, _ column: Int) -> Bool {
            let (r, c) = (row - quiet, column - quiet)
            return r >= 0 && c >= 0 && r < size && c < size && modules[r][c]
        }
        var lines: [String] = []
        for row in stride(from: 0, to: n, by: 2) {
            var line = ""
            for column in 0..<n {
                // Light modules are drawn (as the paper), dark ones left blank: right for a dark terminal.
                switch (!dark(row, column), row + 1 < n && !dark(row + 1, column)) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// An SVG of the code with its quiet zone, one path, dark on white; `scale` pixels a module.
    public func svg(scale: Int = 4, label: String) -> String {
        let n = size + 8
        var path = ""
        for (r, row) in modules.enumerated() {
            for (c, dark) in row.enumerated() where dark { path += "M\(c + 4) \(r + 4)h1v1h-1z" }
        }
        let escaped = label.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
        return """
            <svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="\(escaped)" width="\(n * scale)" height="\(n * scale)" \
            viewBox="0 0 \(n) \(n)" shape-rendering="crispEdges"><rect width="\(n)" height="\(n)" fill="#fff"/>\
            <path fill="#000" d="\(path)"/></svg>
            """
    }
}

/// The module grid while it is drawn: which modules are dark and which belong to a pattern.
private struct Grid {
    let size: Int
    var dark: [[Bool]]
    var fixed: [[Bool]]

    init(version: Int) {
        size = 17 + 4 * version
        dark = Array(repeating: Array(repeating: false, count: size), count: size)
        fixed = dark
        for i in 0..<size {
            set(6, i, i % 2 == 0)
            set(i, 6, i % 2 == 0)
        }
        for (x, y) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 where (0..<size).contains(x + dx) && (0..<size).contains(y + dy) {
                    let distance = max(abs(dx), abs(dy))
                    set(x + dx, y + dy, distance != 2 && distance != 4)
                }
            }
        }
        let centres = QRCode.alignment[version - 1]
        for (i, cx) in centres.enumerated() {
            for (j, cy) in centres.enumerated() {
                let corner = (i == 0 && j == 0) || (i == 0 && j == centres.count - 1) || (i == centres.count - 1 && j == 0)
                if corner { continue }
                for dy in -2...2 {
                    for dx in -2...2 { set(cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1) }
                }
            }
        }
        drawFormat(mask: 0)
        if version >= 7 {
            var remainder = version
            for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
            let bits = version << 12 | remainder
            for i in 0..<18 {
                let bit = (bits >> i) & 1 == 1
                let (a, b) = (size - 11 + i % 3, i / 3)
                set(a, b, bit)
                set(b, a, bit)
            }
        }
    }

    /// Column `x`, row `y`: a module of a pattern.
    mutating func set(_ x: Int, _ y: Int, _ value: Bool) {
        dark[y][x] = value
        fixed[y][x] = true
    }

    /// Level M (00) and `mask`, with their BCH code, twice.
    mutating func drawFormat(mask: Int) {
        let data = 0b00 << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        let bits = (data << 10 | remainder) ^ 0x5412
        func bit(_ i: Int) -> Bool { (bits >> i) & 1 == 1 }
        for i in 0...5 { set(8, i, bit(i)) }
        set(8, 7, bit(6))
        set(8, 8, bit(7))
        set(7, 8, bit(8))
        for i in 9..<15 { set(14 - i, 8, bit(i)) }
        for i in 0..<8 { set(size - 1 - i, 8, bit(i)) }
        for i in 8..<15 { set(8, size - 15 + i, bit(i)) }
        set(8, size - 8, true)
    }

    /// The codewords' bits in the standard's zigzag, two columns at a time from the right.
    mutating func place(_ codewords: [UInt8]) {
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            for vertical in 0..<size {
                for j in 0..<2 {
                    let x = right - j
                    let upward = (right + 1) & 2 == 0
                    let y = upward ? size - 1 - vertical : vertical
                    if !fixed[y][x], index < codewords.count * 8 {
                        dark[y][x] = (codewords[index >> 3] >> (7 - (index & 7))) & 1 == 1
                        index += 1
                    }
                }
            }
            right -= 2
        }
    }

    mutating func apply(mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !fixed[y][x] {
                let flip: Bool
                switch mask {
                case 0: flip = (x + y) % 2 == 0
                case 1: flip = y % 2 == 0
                case 2: flip = x % 3 == 0
                case 3: flip = (x + y) % 3 == 0
                case 4: flip = (x / 3 + y / 2) % 2 == 0
                case 5: flip = x * y % 2 + x * y % 3 == 0
                case 6: flip = (x * y % 2 + x * y % 3) % 2 == 0
                default: flip = ((x + y) % 2 + x * y % 3) % 2 == 0
                }
                if flip { dark[y][x].toggle() }
            }
        }
    }

    /// The standard's penalty: runs of five or more, 2×2 blocks, finder-like patterns, imbalance.
    func penalty() -> Int {
        var total = 0
        func lines(_ transposed: Bool) -> [[Bool]] {
            transposed ? (0..<size).map { x in (0..<size).map { y in dark[y][x] } } : dark
        }
        for transposed in [false, true] {
            for line in lines(transposed) {
                var run = 1
                for i in 1..<size {
                    if line[i] == line[i - 1] {
                        run += 1
                    } else {
                        if run >= 5 { total += run - 2 }
                        run = 1
                    }
                }
                if run >= 5 { total += run - 2 }
                let padded = Array(repeating: false, count: 4) + line + Array(repeating: false, count: 4)
                for i in 0...(padded.count - 11) {
                    let window = Array(padded[i..<i + 11])
                    if window == [true, false, true, true, true, false, true, false, false, false, false]
                        || window == [false, false, false, false, true, false, true, true, true, false, true]
                    {
                        total += 40
                    }
                }
            }
        }
        for y in 0..<(size - 1) {
            for x in 0..<(size - 1) {
                let c = dark[y][x]
                if c == dark[y][x + 1], c == dark[y + 1][x], c == dark[y + 1][x + 1] { total += 3 }
            }
        }
        let darkCount = dark.reduce(0) { $0 + $1.filter { $0 }.count }
        let cells = size * size
        let k = (abs(darkCount * 20 - cells * 10) + cells - 1) / cells - 1
        total += max(0, k) * 10
        return total
    }
}

/// Reed-Solomon error correction over GF(256) with the QR code's polynomial (x⁸+x⁴+x³+x²+1).
private enum ReedSolomon {
    static func multiply(_ x: UInt8, _ y: UInt8) -> UInt8 {
        var z = 0
        for i in (0..<8).reversed() {
            z = (z << 1) ^ ((z >> 7) * 0x11D)
            z ^= Int((y >> i) & 1) * Int(x)
        }
        return UInt8(z)
    }

    static func divisor(degree: Int) -> [UInt8] {
        var result = Array(repeating: UInt8(0), count: degree)
        result[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for j in 0..<degree {
                result[j] = multiply(result[j], root)
                if j + 1 < degree { result[j] ^= result[j + 1] }
            }
            root = multiply(root, 0x02)
        }
        return result
    }

    static func remainder(_ data: [UInt8], _ divisor: [UInt8]) -> [UInt8] {
        var result = Array(repeating: UInt8(0), count: divisor.count)
        for byte in data {
            let factor = byte ^ result.removeFirst()
            result.append(0)
            for i in 0..<result.count { result[i] ^= multiply(divisor[i], factor) }
        }
        return result
    }
}
