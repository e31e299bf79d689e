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
                for migration in applied.migrations {
                    Output.line(String(format: "applied %04d_%@", migration.version, migration.name))
                }
                for function in applied.functions {
                    Output.line("replaced function \(function.name)")
                }
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show which migrations and stored functions are applied; exits 78 when some are pending or modified."
        )
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let target = try await DatabaseTarget.resolve(explicit: connection.databaseURL, announce: Output.announce)
            let (entries, functions) = try await CentralStore.withStore(target.url) { store in
                // The local default is kept current by every command, this one too: a first
                // `db status` on a new machine shows a ready database, not a pending schema.
                if target.isLocalDefault { try await Migrator().migrate(store) }
                return (try await Migrator().status(store), try await Migrator().functionStatus(store))
            }
            if output.json {
                try Output.json(Report(migrations: entries, functions: functions))
            } else {
                Output.line("database: \(target.url.displayString)\(target.isLocalDefault ? " (local default)" : "")")
                Output.table(
                    ["VERSION", "NAME", "APPLIED"],
                    entries.map { entry in
                        var state = Output.date(entry.appliedAt)
                        if entry.appliedAt == nil { state = "pending" }
                        if entry.modified { state += " (MODIFIED since applied)" }
                        if entry.unknown { state += " (unknown to this tool: the database is newer)" }
                        return [String(format: "%04d", entry.version), entry.name, state]
                    })
                Output.table(
                    ["FUNCTION", "APPLIED"],
                    functions.map { function in
                        let state =
                            switch (function.pending, function.appliedAt) {
                            case (false, let at): Output.date(at)
                            case (true, nil): "pending"
                            case (true, _): "pending (the database holds another text)"
                            }
                        return [function.name, state]
                    })
            }
            let pending = entries.filter { $0.appliedAt == nil }.count
            let modified = entries.filter(\.modified).count
            let newer = entries.contains(where: \.unknown)
            let stale = newer ? 0 : functions.filter(\.pending).count
            if pending > 0 || modified > 0 || stale > 0 {
                throw TeamworkError(
                    .configuration,
                    "\(pending) pending and \(quantity(modified, "modified migration")), \(quantity(stale, "stored function")) to replace; "
                        + (modified > 0
                            ? "a migration applied here was changed since: restore its text (see `git log sql/`)"
                            : "run `teamwork-manager db migrate` as the schema's owner")
                )
            }
        }

        /// `db status --json`.
        struct Report: Encodable {
            var migrations: [Migrator.Entry]
            var functions: [Migrator.FunctionEntry]
        }
    }

    struct StopLocal: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop-local",
            abstract: "Stop the local default PostgreSQL (it starts again on the next command)."
        )

        func run() async throws {
            let cluster = DatabaseTarget.localCluster()
            let wasRunning: Bool
            do {
                wasRunning = try cluster.stop()
            } catch {
                throw TeamworkError(.configuration, "local PostgreSQL: \(error)")
            }
            Output.line(
                wasRunning
                    ? "Stopped the local PostgreSQL in \(cluster.configuration.directory.path)."
                    : "The local PostgreSQL in \(cluster.configuration.directory.path) was not running; nothing to stop.")
        }
    }
}
