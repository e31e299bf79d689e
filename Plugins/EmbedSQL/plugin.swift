import Foundation
import PackagePlugin

/// Embeds the numbered PostgreSQL migrations from the package's `sql/` folder into
/// the target as Swift source, so the built tools carry their schema with them and
/// `sql/` stays the single place where the SQL lives.
@main
struct EmbedSQL: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let sqlDirectory = context.package.directoryURL.appending(path: "sql")
        let files = try FileManager.default
            .contentsOfDirectory(at: sqlDirectory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) SQL migrations",
                executable: try context.tool(named: "EmbedSQLTool").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
