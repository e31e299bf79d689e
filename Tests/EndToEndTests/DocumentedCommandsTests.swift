import ArgumentParser
import CommandLineSupport
import Foundation
import ManagerCLI
import ServiceCLI
import Testing

@testable import WorkerCLI

/// What the docs promise is what the tools take: every command line shown in
/// a shell block of README.md and docs/*.md is parsed by the tool it names,
/// with every optional part written out (`[--team red]` taken as given, the
/// first of `a|b`), exactly as a reader would type it. A renamed option or a
/// removed subcommand fails here, naming the doc and the line.
@Suite("The docs' command lines are the tools' command lines")
struct DocumentedCommandsTests {
    struct Line: CustomStringConvertible, Sendable {
        var file: String
        var tool: String
        var arguments: [String]
        var description: String { "\(file): \(tool) \(arguments.joined(separator: " "))" }
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every documented invocation of the three tools.
    static func documented() throws -> [Line] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appending(path: "docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        var lines: [Line] = []
        for file in ["README.md"] + docs {
            let text = try String(contentsOf: root.appending(path: file), encoding: .utf8)
            var inShell = false
            var pending = ""
            for raw in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
                let trimmed = raw.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("```") {
                    inShell = !inShell && ["```sh", "```bash", "```shell"].contains(trimmed)
                    pending = ""
                    continue
                }
                guard inShell else { continue }
                var line = pending + " " + Self.withoutComment(trimmed)
                if line.hasSuffix("\\") {
                    pending = String(line.dropLast())
                    continue
                }
                pending = ""
                line = line.trimmingCharacters(in: .whitespaces)
                var words = try Self.words(line)
                if let first = words.first, first.hasPrefix(".build/") { words[0] = URL(fileURLWithPath: first).lastPathComponent }
                guard let tool = words.first, ["teamwork-manager", "teamwork-service", "teamwork-worker"].contains(tool) else { continue }
                lines.append(Line(file: file, tool: tool, arguments: Array(words.dropFirst())))
            }
        }
        return lines
    }

    static func withoutComment(_ line: String) -> String {
        var quoted: Character?
        for (offset, character) in line.enumerated() {
            if let open = quoted {
                if character == open { quoted = nil }
            } else if character == "\"" || character == "'" {
                quoted = character
            } else if character == "#" && (offset == 0 || line[line.index(line.startIndex, offsetBy: offset - 1)] == " ") {
                return String(line.prefix(offset))
            }
        }
        return line
    }

    /// Shell words, quotes removed; `[...]` written out, `a|b` as its first choice.
    static func words(_ line: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var quoted: Character?
        var started = false
        for character in line {
            if let open = quoted {
                if character == open { quoted = nil } else { current.append(character) }
            } else if character == "\"" || character == "'" {
                quoted = character
                started = true
            } else if character == " " {
                if started || !current.isEmpty { words.append(current) }
                current = ""
                started = false
            } else if character == "[" || character == "]" {
                continue
            } else {
                current.append(character)
            }
        }
        if started || !current.isEmpty { words.append(current) }
        return words.map { word in
            word.hasPrefix("-") || !word.contains("|") ? word : String(word.split(separator: "|")[0])
        }
    }

    @Test func theDocsShowEveryToolAndManyOfItsCommands() throws {
        let lines = try Self.documented()
        #expect(lines.count >= 60, "\(lines.count) lines found")
        #expect(Set(lines.map(\.tool)) == ["teamwork-manager", "teamwork-service", "teamwork-worker"])
    }

    @Test func everyDocumentedCommandLineParses() throws {
        for line in try Self.documented() {
            do {
                switch line.tool {
                case "teamwork-manager":
                    _ = try TeamworkManager.parseAsRoot(CommandRunner.hoisting(["--database-url", "--actor"], in: line.arguments))
                case "teamwork-service":
                    _ = try TeamworkService.parseAsRoot(CommandRunner.hoisting(["--database-url", "--replicas"], in: line.arguments))
                default: _ = try TeamworkWorker.parseAsRoot(line.arguments)
                }
            } catch {
                let message: String
                switch line.tool {
                case "teamwork-manager": message = TeamworkManager.message(for: error)
                case "teamwork-service": message = TeamworkService.message(for: error)
                default: message = TeamworkWorker.message(for: error)
                }
                Issue.record("\(line): \(message)")
            }
        }
    }

    @Test func globalOptionsBeforeTheSubcommandMoveAfterItUnlessAlsoGivenThere() {
        let options: Set<String> = ["--database-url", "--actor"]
        #expect(CommandRunner.hoisting(options, in: ["--database-url", "u", "db", "migrate"]) == ["db", "migrate", "--database-url", "u"])
        #expect(
            CommandRunner.hoisting(options, in: ["--actor=max", "task", "list", "--", "x"]) == ["task", "list", "--actor=max", "--", "x"])
        let twice = ["--database-url", "staging", "task", "delete", "5", "--database-url", "prod"]
        #expect(CommandRunner.hoisting(options, in: twice) == twice, "left for the parser to refuse, not silently one of the two")
        #expect(throws: (any Error).self, "the parser refuses an option given twice") { try TeamworkManager.parseAsRoot(twice) }
    }
}
