import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

struct DatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Create, upgrade and inspect the central store's schema.",
        subcommands: [Migrate.self, Status.self, StopLocal.self]
    )

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Apply pending migrations (safe to run again).")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            let applied = try await connection.withStore(requireSchema: false) { store in
                try await Migrator().migrate(store)
            }
            if applied.isEmpty {
                Output.line("The database schema is up to date.")
            } else {
                for migration in applied {
                    Output.line(String(format: "applied %04d_%@", migration.version, migration.name))
                }
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show which migrations are applied; exits 78 when some are pending or modified."
        )
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let target = try await DatabaseTarget.resolve(explicit: connection.databaseURL, announce: Output.announce)
            let entries = try await CentralStore.withStore(target.url) { store in
                try await Migrator().status(store)
            }
            if output.json {
                try Output.json(entries)
            } else {
                Output.line("database: \(target.url.displayString)\(target.isLocalDefault ? " (local default)" : "")")
                Output.table(["VERSION", "NAME", "APPLIED"], entries.map { entry in
                    var state = Output.date(entry.appliedAt)
                    if entry.appliedAt == nil { state = "pending" }
                    if entry.modified { state += " (MODIFIED since applied)" }
                    if entry.unknown { state += " (unknown to this tool: the database is newer)" }
                    return [String(format: "%04d", entry.version), entry.name, state]
                })
            }
            let pending = entries.filter { $0.appliedAt == nil }.count
            let modified = entries.filter(\.modified).count
            if pending > 0 || modified > 0 {
                throw TeamworkError(.configuration, "\(pending) pending and \(modified) modified migration(s)")
            }
        }
    }

    struct StopLocal: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop-local",
            abstract: "Stop the local default PostgreSQL (it starts again on the next command)."
        )

        func run() async throws {
            let cluster = DatabaseTarget.localCluster()
            do {
                try cluster.stop()
            } catch {
                throw TeamworkError(.configuration, "local PostgreSQL: \(error)")
            }
            Output.line("Stopped the local PostgreSQL in \(cluster.configuration.directory.path).")
        }
    }
}
