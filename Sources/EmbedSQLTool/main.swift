import Foundation

// Usage: EmbedSQLTool OUTPUT.swift FILE.sql...
// Writes one Swift file holding every migration's version, name and text
// (sql/NNNN_name.sql) and every stored function's name and text
// (sql/functions/name.sql).
let arguments = CommandLine.arguments.dropFirst()
guard let outputPath = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedSQLTool OUTPUT.swift FILE.sql...\n".utf8))
    exit(64)
}

/// A raw string literal whose delimiter cannot occur in the SQL text.
func literal(_ sql: String) -> String {
    var hashes = "#"
    while sql.contains("\"" + hashes) { hashes += "#" }
    return "\(hashes)\"\"\"\n\(sql)\n\"\"\"\(hashes)"
}

var migrations: [String] = []
var functions: [String] = []
for path in arguments.dropFirst() {
    let file = URL(fileURLWithPath: path)
    let stem = file.deletingPathExtension().lastPathComponent
    let sql = try String(contentsOf: file, encoding: .utf8)
    if file.deletingLastPathComponent().lastPathComponent == "functions" {
        functions.append("    StoredFunction(name: \"\(stem)\", sql: \(literal(sql))),")
        continue
    }
    guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else {
        FileHandle.standardError.write(Data("\(path): migration files are named NNNN_name.sql\n".utf8))
        exit(65)
    }
    let name = String(stem[stem.index(after: underscore)...])
    migrations.append("    Migration(version: \(version), name: \"\(name)\", sql: \(literal(sql))),")
}

let source = """
    // Generated at build time from sql/*.sql and sql/functions/*.sql by the EmbedSQL plugin. Do not edit.

    extension Migration {
        /// Every migration shipped in `sql/`, in version order.
        public static let embedded: [Migration] = [
    \(migrations.joined(separator: "\n"))
        ]
    }

    extension StoredFunction {
        /// Every stored function shipped in `sql/functions/`, in name order.
        public static let embedded: [StoredFunction] = [
    \(functions.joined(separator: "\n"))
        ]
    }

    """
try source.write(toFile: outputPath, atomically: true, encoding: .utf8)
