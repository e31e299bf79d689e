import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

extension PersonCommand {
    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue, list and revoke the access tokens workers sign in with.",
            discussion: "Only a hash of each token is stored: the token is shown once, when it is issued.",
            subcommands: [Issue.self, List.self, Revoke.self]
        )
    }
}

extension PersonCommand.Token {
    struct Issue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Issue a new token for a person and print it once.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Id or email.") var person: String
        @Option(help: "What the token is for, e.g. the device.") var label: String = ""
        @OptionGroup var output: OutputOptions

        struct Issued: Encodable {
            var token: AccessToken
            var secret: String
        }

        func run() async throws {
            let (issued, role) = try await connection.withStore { store in
                let person = try await store.person(reference: person)
                let (token, secret) = try await store.issueToken(personID: person.id, label: label)
                return (Issued(token: token, secret: secret), person.role)
            }
            if output.json { return try Output.json(issued) }
            Output.line(issued.secret)
            // What the one who gets it does with it: a worker signs in a device, a manager the board.
            let use =
                role == .worker
                ? "give it to the worker for `teamwork-worker login`" : "it signs them in to the dispatcher's board (/board)"
            Output.announce("token \(issued.token.id) issued; this is the only time it is shown — \(use)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens (never their secrets), newest first.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Only this person's (id or email).") var person: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (tokens, names) = try await connection.withStore { store in
                let personID = try await person.asyncMap { try await store.person(reference: $0).id }
                return (
                    try await store.listTokens(personID: personID),
                    output.json ? TaskCommand.Names() : try await TaskCommand.Names.load(store)
                )
            }
            if output.json { return try Output.json(tokens) }
            Output.table(
                ["ID", "PERSON", "LABEL", "CREATED", "LAST USED", "REVOKED"],
                tokens.map { token in
                    let person = names.people[token.personID].map { "\($0) (\(token.personID))" } ?? String(token.personID)
                    return [
                        String(token.id), person, token.label, Output.date(token.createdAt), Output.date(token.lastUsedAt),
                        Output.date(token.revokedAt),
                    ]
                })
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token: it is refused from then on.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Token id (from `person token list`).") var id: Int64

        func run() async throws {
            let token = try await connection.withStore { try await $0.revokeToken(id: id) }
            Output.line("Revoked token \(token.id) of person \(token.personID)")
        }
    }
}
