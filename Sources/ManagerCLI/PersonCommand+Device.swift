import ArgumentParser
import CentralStore
import Foundation
import TeamworkFormats
import TeamworkModel

extension PersonCommand {
    /// `person device pair`: a worker's phone, signed in by a one-time link (docs/phone.md).
    struct Device: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pair a worker's phone with the field app (/app): a one-time link instead of a token.",
            discussion: """
                A paired phone holds a token of its own, named after the device: `person token list` shows it, \
                `person token revoke` ends it (and the phone wipes what it kept of that person).
                """,
            subcommands: [Pair.self, Cancel.self])

        struct Pair: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Print a one-time pairing link for a person's phone (it works once, for a few minutes).")
            @OptionGroup var connection: ConnectionOptions
            @Argument(help: "Id or email.") var person: String
            @Option(help: "The sync endpoint's address as phones reach it, like https://teamwork.example.")
            var server: String = "http://127.0.0.1:8080"
            @Flag(help: "Allow a plain-http address that is not this machine (the phone's token would cross the network unencrypted).")
            var insecure = false
            @Option(help: "How long the link works, 1 to \(CentralStore.maximumPairingMinutes) minutes.")
            var minutes: Int = CentralStore.pairingMinutes
            @Flag(help: "Also draw the link as a QR code in the terminal (for a dark background), for the phone's camera.")
            var qr = false
            @OptionGroup var output: OutputOptions

            struct Paired: Encodable {
                var pairing: Int64
                var person: Int64
                var link: String
                var expiresAt: Date
            }

            func validate() throws {
                guard (1...CentralStore.maximumPairingMinutes).contains(minutes) else {
                    throw ValidationError("--minutes is 1 to \(CentralStore.maximumPairingMinutes)")
                }
                guard let url = URL(string: server), ["http", "https"].contains(url.scheme ?? ""), let host = url.host else {
                    throw ValidationError("--server is an http or https address, like https://teamwork.example")
                }
                if url.scheme == "http", !["127.0.0.1", "localhost", "::1", "[::1]"].contains(host), !insecure {
                    throw ValidationError(
                        "--server \(server) is plain http to another machine: the phone's token would cross the network unencrypted; use https, or --insecure"
                    )
                }
            }

            func run() async throws {
                let pairing = try await connection.withStore { store in
                    try await store.pairDevice(personID: try await store.person(reference: person).id, minutes: minutes)
                }
                let base = server.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
                let paired = Paired(
                    pairing: pairing.id, person: pairing.personID, link: "\(base)/app/pair?code=\(pairing.code)",
                    expiresAt: pairing.expiresAt)
                if output.json { return try Output.json(paired) }
                Output.announce(
                    "a pairing link for \(person)'s phone, shown only now; it works once, until \(Output.date(pairing.expiresAt)):")
                Output.line(paired.link)
                // On standard error, beside the announcement: standard output stays the link alone.
                if qr { FileHandle.standardError.write(Data(("\n" + (try QRCode(paired.link)).terminalText + "\n").utf8)) }
            }
        }

        struct Cancel: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Cancel a person's pairing links not used yet (a link sent to the wrong place).")
            @OptionGroup var connection: ConnectionOptions
            @Argument(help: "Id or email.") var person: String

            func run() async throws {
                let cancelled = try await connection.withStore { store in
                    try await store.cancelPairings(personID: try await store.person(reference: person).id)
                }
                Output.line("Cancelled \(cancelled) pairing link\(cancelled == 1 ? "" : "s") of \(person)")
            }
        }
    }
}
