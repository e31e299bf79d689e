import Foundation
import PackagePlugin

/// Embeds the numbered PostgreSQL migrations from the package's `sql/` folder, and
/// the stored functions from `sql/functions/`, into the target as Swift source,
/// so the built tools carry their schema with them and
/// `sql/` stays the single place where the SQL lives.
@main
struct EmbedSQL: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let sqlDirectory = context.package.directoryURL.appending(path: "sql")
        func sqlFiles(in directory: URL) throws -> [URL] {
            try FileManager.default
                .contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "sql" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        }
        let functionsDirectory = sqlDirectory.appending(path: "functions")
        let files =
            try sqlFiles(in: sqlDirectory)
            + (FileManager.default.fileExists(atPath: functionsDirectory.path) ? try sqlFiles(in: functionsDirectory) : [])
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) SQL files",
                executable: try context.tool(named: "EmbedSQLTool").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
