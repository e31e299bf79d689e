import ArgumentParser
import CentralStore
import Foundation
import LocalPostgres
import TeamworkModel

/// Where the central store is and who is acting; shared by every command.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("PostgreSQL URL (postgres://user:password@host:port/db).", valueName: "url"))
    var databaseURL: String?

    @Option(name: .long, help: ArgumentHelp("Email or id of the manager making changes (or TEAMWORK_ACTOR).", valueName: "person"))
    var actor: String?

    /// Connects (starting the local default if needed), checks the schema, and runs `body`.
    /// `requireSchema: false` is for the schema commands: the schema is not
    /// checked and no acting person is looked up (there may be no people yet).
    func withStore<R: Sendable>(requireSchema: Bool = true, _ body: (CentralStore) async throws -> R) async throws -> R {
        let target = try await DatabaseTarget.resolve(explicit: databaseURL, announce: Output.announce)
        let actorReference = actor ?? ProcessInfo.processInfo.environment["TEAMWORK_ACTOR"]
        return try await CentralStore.withStore(target.url) { store in
            var store = store
            if target.isLocalDefault {
                try await Migrator().migrate(store)
            } else if requireSchema {
                try await Migrator().requireCurrent(store)
            }
            if requireSchema, let actorReference, !actorReference.isEmpty {
                let person = try await store.person(reference: actorReference)
                guard person.role == .manager || person.role == .admin else {
                    throw TeamworkError(.usage, "the acting person must be a manager or an admin")
                }
                store.actorID = person.id
            }
            return try await body(store)
        }
    }
}

/// `--json` for read commands.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of a table, for scripts.")
    var json = false
}
