import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

extension PersonCommand {
    /// `person calendar issue | revoke`: a worker's calendar feed (docs/integrations.md).
    struct Calendar: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A calendar feed of a worker's assigned work, for their phone's calendar app.",
            subcommands: [Issue.self, Revoke.self])

        struct Issue: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make (or replace) a person's feed; prints its address once.",
                discussion: """
                    The address carries the feed's secret (calendar apps send no other key): whoever has it sees \
                    that person's work. Replace it with another issue, or end it with revoke.
                    """)
            @OptionGroup var connection: ConnectionOptions
            @Argument(help: "Id or email.") var person: String
            @Option(help: "The sync endpoint's address as phones reach it, like https://teamwork.example.") var server: String?

            func run() async throws {
                let secret = try await connection.withStore { store in
                    try await store.issueCalendarFeed(personID: try await store.person(reference: person).id)
                }
                let base = (server ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
                Output.announce("a calendar feed for \(person); its address, shown only now (subscribe to it in a calendar app):")
                Output.line("\(base)/calendar/\(secret).ics")
            }
        }

        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "End a person's calendar feed.")
            @OptionGroup var connection: ConnectionOptions
            @Argument(help: "Id or email.") var person: String

            func run() async throws {
                let ended = try await connection.withStore { store in
                    try await store.revokeCalendarFeed(personID: try await store.person(reference: person).id)
                }
                guard ended else { throw TeamworkError.notFound("\(person) has no calendar feed") }
                Output.line("Ended the calendar feed of \(person)")
            }
        }
    }
}
