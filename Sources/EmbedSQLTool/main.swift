import Foundation

// Usage: EmbedSQLTool OUTPUT.swift NNNN_name.sql...
// Writes one Swift file holding every migration's version, name and text.
let arguments = CommandLine.arguments.dropFirst()
guard let outputPath = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedSQLTool OUTPUT.swift FILE.sql...\n".utf8))
    exit(64)
}

var entries: [String] = []
for path in arguments.dropFirst() {
    let file = URL(fileURLWithPath: path)
    let stem = file.deletingPathExtension().lastPathComponent
    guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else {
        FileHandle.standardError.write(Data("\(path): migration files are named NNNN_name.sql\n".utf8))
        exit(65)
    }
    let name = String(stem[stem.index(after: underscore)...])
    let sql = try String(contentsOf: file, encoding: .utf8)
    // A raw string literal whose delimiter cannot occur in the SQL text.
    var hashes = "#"
    while sql.contains("\"" + hashes) { hashes += "#" }
    entries.append("    Migration(version: \(version), name: \"\(name)\", sql: \(hashes)\"\"\"\n\(sql)\n\"\"\"\(hashes)),")
}

let source = """
// Generated at build time from sql/*.sql by the EmbedSQL plugin. Do not edit.

extension Migration {
    /// Every migration shipped in `sql/`, in version order.
    public static let embedded: [Migration] = [
\(entries.joined(separator: "\n"))
    ]
}

"""
try source.write(toFile: outputPath, atomically: true, encoding: .utf8)
