import ArgumentParser
import Foundation
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a tool's root command the Teamwork way: every failure is one line on
/// standard error (`tool: error: ...`) and a documented exit code, and a closed
/// output pipe (`tool ... | head`) ends the tool quietly instead of crashing it.
public enum CommandRunner {
    /// `globalOptions` (each taking one value, e.g. `--database-url`) may come
    /// before the subcommand, git-style: `tool --database-url URL db migrate`
    /// is read as `tool db migrate --database-url URL`.
    public static func run<Root: ParsableCommand>(_ root: Root.Type, toolName: String, globalOptions: Set<String> = []) async -> Never {
        // A closed pipe is reported as EPIPE to the writer instead of killing the process.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try root.parseAsRoot(hoisting(globalOptions, in: Array(CommandLine.arguments.dropFirst())))
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            exit(0)
        } catch let error as TeamworkError {
            say("error: \(error.message)\(error.overridable ? " (--force assigns it anyway)" : "")", tool: toolName)
            exit(error.code.exitStatus)
        } catch let error as ExitCode {
            exit(error.rawValue)
        } catch {
            let code = root.exitCode(for: error)
            if code == .success {
                // --help, --version: the parser's own full output.
                root.exit(withError: error)
            }
            if code == .validationFailure {
                say("error: \(root.message(for: error)) (see --help)", tool: toolName)
                exit(TeamworkError.Code.usage.exitStatus)
            }
            say("error: \(error)", tool: toolName)
            exit(TeamworkError.Code.internal.exitStatus)
        }
    }

    /// Moves the `options` (with their values) found before the first word that
    /// is not an option to the end of the arguments (before a `--`), where the
    /// subcommand's parser takes them.
    public static func hoisting(_ options: Set<String>, in arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            guard options.contains(name) else { break }
            leading.append(argument)
            if !argument.contains("="), index + 1 < arguments.count {
                leading.append(arguments[index + 1])
                index += 1
            }
            index += 1
        }
        guard !leading.isEmpty, index < arguments.count else { return arguments }
        var rest = Array(arguments[index...])
        // Given both before and after the subcommand: left where they are, so the parser refuses
        // the line rather than one of the two silently winning.
        let named = Set(leading.filter { $0.hasPrefix("--") }.map { String($0.split(separator: "=", maxSplits: 1)[0]) })
        if rest.contains(where: { named.contains(String($0.split(separator: "=", maxSplits: 1).first ?? "")) }) { return arguments }
        let end = rest.firstIndex(of: "--") ?? rest.count
        rest.insert(contentsOf: leading, at: end)
        return rest
    }

    /// One line on standard error, prefixed with the tool's name; line breaks
    /// inside `message` are folded so it stays one line.
    public static func say(_ message: String, tool: String) {
        let oneLine = TerminalText.safe(message.split(whereSeparator: \.isNewline).joined(separator: " "))
        write(Data("\(tool): \(oneLine)\n".utf8), to: STDERR_FILENO)
    }

    /// Writes everything, or exits quietly when the reader has gone away:
    /// that is not an error of ours.
    public static func write(_ data: Data, to descriptor: Int32) {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    Glibc.exit(0)
                }
                offset += written
            }
        }
    }
}
