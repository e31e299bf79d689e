import ArgumentParser
import CommandLineSupport
import Foundation
import SyncProtocol
import TeamworkModel
import WorkerClient

/// `teamwork-worker`: a field worker's tasks, on their own device, online or not.
public struct TeamworkWorker: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "teamwork-worker",
        abstract: "Your team's tasks on your device: work offline, sync when you can.",
        discussion: """
            start, complete, claim, reopen and checkin work with no network: they are queued on the device and sent by \
            the next sync. Data lives in TEAMWORK_WORKER_HOME (default ~/.local/share/teamwork-worker).

            Exit codes: 0 success, 64 usage, 65 invalid data, 67 not found, 68 not allowed, 69 server unreachable, \
            78 configuration, 1 internal error.
            """,
        subcommands: [
            Login.self, Sync.self, Teams.self, Tasks.self, Show.self, ChecklistCommand.self, Check.self, Attach.self,
            Sign.self, Used.self, Parts.self, TimeCommand.self, Start.self,
            Complete.self, Claim.self, Reopen.self, Undo.self, Checkin.self, Status.self, Positions.self, Watch.self,
        ]
    )

    public init() {}

    /// Runs the command line this process was given, and exits with its status.
    public static func runMain() async -> Never {
        await CommandRunner.run(Self.self, toolName: "teamwork-worker")
    }

    /// One line on standard output; control characters in it cannot reach the terminal (see `TerminalText`).
    static func say(_ line: String) {
        TextOutput.line(line)
    }
}

struct JSONOption: ParsableArguments {
    @Flag(help: "Print JSON, for scripts.") var json = false

    func print<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        encoder.keyEncodingStrategy = .convertToSnakeCase
        TeamworkWorker.say(String(decoding: TerminalText.escapedJSON(try encoder.encode(value)), as: UTF8.self))
    }
}

extension SyncClient.Failure {
    var teamworkError: TeamworkError {
        switch kind {
        case .unreachable: TeamworkError(.unavailable, message)
        case .refused: TeamworkError(.conflict, message)
        case .rejected: TeamworkError(.configuration, "\(message); is the server address a Teamwork sync server?")
        }
    }
}

/// How long to wait for the server; a field worker's network is often bad.
struct NetworkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Seconds to wait for a connection to the server.", valueName: "seconds"))
    var connectTimeout: Double = 10
    @Option(help: ArgumentHelp("Seconds to wait for each answer of the server.", valueName: "seconds"))
    var timeout: Double = 30

    func validate() throws {
        for (name, value) in [("--connect-timeout", connectTimeout), ("--timeout", timeout)] where !(0.1...3_600).contains(value) {
            throw ValidationError("\(name) must be between 0.1 and 3600 seconds")
        }
    }

    var timeouts: SyncClient.Timeouts {
        .init(connect: .milliseconds(Int(connectTimeout * 1000)), request: .milliseconds(Int(timeout * 1000)))
    }
}

/// The terminal's settings while login asks for the token, for the signal handlers that restore them.
nonisolated(unsafe) private var promptTerminal = termios()

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign in with the token your manager gave you.",
        discussion: """
            The token is read from TEAMWORK_TOKEN, else asked for on the terminal (not shown as you type) or read \
            from standard input (one line), so that it shows neither in `ps` nor in the shell's history; --token \
            still works for scripts that keep it elsewhere. A plain http:// \
            server is refused unless it is this machine (the token would cross the network in clear) or --insecure is given.
            """
    )
    @Option(help: "The sync server, e.g. https://teamwork.example:8443") var server: String
    @Option(
        help: ArgumentHelp(
            "Your token (tw_...); visible to other users in `ps`: prefer TEAMWORK_TOKEN or standard input.",
            valueName: "token"))
    var token: String?
    @Flag(help: "Allow a plain http:// server on another machine.") var insecure = false
    @Flag(help: "Drop changes someone else queued on this device and not yet sent (they are lost).") var discardQueue = false
    @OptionGroup var network: NetworkOptions

    /// The token from --token, TEAMWORK_TOKEN or standard input.
    func secret() throws -> String {
        if let token, token != "-" { return token }
        if let fromEnvironment = ProcessInfo.processInfo.environment["TEAMWORK_TOKEN"], !fromEnvironment.isEmpty, token == nil {
            return fromEnvironment
        }
        let line =
            isatty(STDIN_FILENO) == 1
            ? Self.askWithoutEcho("Token (from your manager; it is not shown as you type): ")
            : readLine(strippingNewline: true)
        guard let line, !line.isEmpty else {
            throw TeamworkError(.usage, "give your token when asked, on standard input, or in TEAMWORK_TOKEN")
        }
        return line.trimmingCharacters(in: .whitespaces)
    }

    /// Asks on standard error and reads one line from the terminal with its echo off (restored after,
    /// and on Ctrl-C or SIGTERM at the prompt too).
    static func askWithoutEcho(_ prompt: String) -> String? {
        // Echo off before the prompt shows, so that nothing typed after it is ever shown (or discarded).
        var saved = termios()
        let haveTerminal = tcgetattr(STDIN_FILENO, &saved) == 0
        if haveTerminal {
            promptTerminal = saved
            for number in [SIGINT, SIGTERM, SIGHUP] {
                signal(number) { number in
                    var restore = promptTerminal
                    tcsetattr(STDIN_FILENO, TCSANOW, &restore)
                    _exit(128 + number)
                }
            }
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSANOW, &quiet)
        }
        defer {
            if haveTerminal {
                tcsetattr(STDIN_FILENO, TCSANOW, &saved)
                for number in [SIGINT, SIGTERM, SIGHUP] { signal(number, SIG_DFL) }
            }
            FileHandle.standardError.write(Data("\n".utf8))
        }
        FileHandle.standardError.write(Data(prompt.utf8))
        return readLine(strippingNewline: true)
    }

    func run() async throws {
        let token = try secret()
        guard TokenSecret.isWellFormed(token) else { throw TeamworkError.invalid("that is not a Teamwork token (tw_ and 43 characters)") }
        guard let url = URL(string: server.hasSuffix("/") ? server : server + "/"), url.scheme == "http" || url.scheme == "https",
            url.host?.isEmpty == false
        else {
            throw TeamworkError.invalid("server must be an http or https URL")
        }
        if url.scheme == "http" && !insecure && !Self.isLoopback(url.host ?? "") {
            throw TeamworkError(
                .usage, "refusing to send your token in clear text to \(url.host ?? ""): use https://, or --insecure on a network you trust"
            )
        }
        let home = try WorkerHome()
        let firstTime = !FileManager.default.fileExists(atPath: home.localURL.path)
        do {
            let client = SyncClient(server: url, token: token, timeouts: network.timeouts)
            // Asked before anything is made here: a refused or unreachable server leaves the folder as it was.
            let person = try await client.listing().person
            let store = try home.store(creating: true)
            try await Self.keepOthersQueue(store, signingIn: person, discard: discardQueue)
            let report = try await Synchronizer(client: client, store: store).sync()
            try home.save(.init(server: url.absoluteString, token: token))
            TeamworkWorker.say(
                "Signed in; pulled \(quantity(report.pulledRows, "change")) for \(try store.replicas().map(\.title).joined(separator: ", "))."
            )
        } catch let failure as SyncClient.Failure {
            if firstTime, (try? home.config()) == nil {
                for suffix in ["", "-wal", "-shm", "-journal"] { unlink(home.localURL.path + suffix) }
            }
            var error = failure.teamworkError
            error.message = error.message.replacingOccurrences(of: "; your changes stay queued", with: "") + "; not signed in"
            throw error
        }
    }

    /// Queued work belongs to the person who made it: signing in as someone
    /// else while it waits is refused (exit 68), unless it is discarded.
    static func keepOthersQueue(_ store: LocalStore, signingIn person: Int64, discard: Bool) async throws {
        let others = try store.pendingByPerson().filter { $0.key != person }.values.reduce(0, +)
        guard others > 0 else { return }
        guard discard else {
            throw TeamworkError.conflict(
                "\(quantity(others, "change")) made by someone else wait on this device: let them sync first "
                    + "(sign in as them and run sync), or sign in with --discard-queue to drop them")
        }
        let dropped = try store.discardQueue(madeByOtherThan: person)
        TeamworkWorker.say("Dropped \(quantity(dropped, "queued change")) made by someone else.")
    }

    /// This machine, written as a literal: `localhost`, an IPv4 address in
    /// 127.0.0.0/8 (four decimal octets) or `::1`. A host *name* that merely
    /// starts like one (`127.attacker.example`) resolves wherever its owner says.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.lowercased()
        if bare == "localhost" || bare == "[::1]" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.allSatisfy(\.isASCII) && octet.allSatisfy(\.isNumber) && Int(octet)! <= 255
        }
    }
}

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send queued changes and fetch what changed.",
        discussion: """
            Exit 69, with every queued change kept, when the server cannot be reached, does not answer in time, \
            or is in trouble (5xx); run it again later. A change the server refuses is set aside (see `status`); \
            one that cannot be placed yet stays queued while the rest goes through.
            """
    )
    @OptionGroup var network: NetworkOptions

    func run() async throws {
        let home = try WorkerHome()
        do {
            var client = try home.client()
            client.timeouts = network.timeouts
            let report = try await Synchronizer(client: client, store: try home.store()).sync { line in
                CommandRunner.say(line, tool: "teamwork-worker")
            }
            for problem in report.problems { CommandRunner.say(problem, tool: "teamwork-worker") }
            var line = "Synced: pulled \(report.pulledRows), pushed \(report.pushed), \(report.rejected) rejected"
            if report.uploadedFiles > 0 { line += ", uploaded \(quantity(report.uploadedFiles, "file")) (\(report.uploadedBytes) bytes)" }
            if report.waiting > 0 { line += ", \(report.waiting) still queued" }
            if report.resent > 0 { line += ", \(report.resent) sent again (not yet confirmed by the master)" }
            if !report.removed.isEmpty { line += "; removed \(report.removed.joined(separator: ", ")) (no longer yours)" }
            TeamworkWorker.say(line + (report.rejected > 0 || report.waiting > 0 ? ". See `teamwork-worker status`." : "."))
        } catch let failure as SyncClient.Failure {
            throw failure.teamworkError
        }
    }
}
