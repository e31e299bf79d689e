import Foundation
import LocalPostgres
import TeamworkFormats
import TeamworkModel

/// Reads a QR code with a decoder nobody here wrote (zxing-cpp from PyPI, with numpy;
/// scripts/ensure-dependencies installs them). `rows`: the modules, `1` dark, rows joined by commas,
/// without the quiet zone (drawn here, 4 modules, at 4 pixels a module).
public enum QRReader {
    public static func read(_ rows: String) async throws -> String {
        let script = """
            import sys, numpy, zxingcpp
            rows = sys.argv[1].split(',')
            m = numpy.array([[0 if c == '1' else 255 for c in r] for r in rows], dtype=numpy.uint8)
            m = numpy.pad(m, 4, constant_values=255).repeat(4, axis=0).repeat(4, axis=1)
            found = zxingcpp.read_barcodes(m, formats=zxingcpp.BarcodeFormat.QRCode)
            sys.stdout.write(found[0].text if found else '<nothing>')
            """
        let out = FileManager.default.temporaryDirectory.appending(path: "qr-\(UUID().uuidString)").path
        defer {
            unlink(out + ".out")
            unlink(out + ".err")
        }
        let status = try await ChildProcess.finish(
            ["/usr/bin/env", "python3", "-c", script, rows], standardOutput: out + ".out", standardError: out + ".err")
        let said = String(decoding: FileManager.default.contents(atPath: out + ".out") ?? Data(), as: UTF8.self)
        let problem = String(decoding: FileManager.default.contents(atPath: out + ".err") ?? Data(), as: UTF8.self)
        guard status == 0 else {
            throw TeamworkError(.configuration, "zxing-cpp could not run (pip install zxing-cpp numpy): \(problem.suffix(300))")
        }
        return said
    }

    /// The code's modules as ``read(_:)`` takes them.
    public static func rows(_ code: QRCode) -> String {
        code.modules.map { row in String(row.map { $0 ? "1" : "0" }) }.joined(separator: ",")
    }
}
