import ArgumentParser
import CentralStore
import Foundation
import TeamworkFormats
import TeamworkModel

/// Checklists: what a worker checks, reads or chooses on a job, as proof of work
/// (docs/dispatch.md, "Checklists"). A published version never changes.
struct ChecklistCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checklist",
        abstract: "Checklists a task can carry: add, update (a new version), list, show, export answers as CSV.",
        subcommands: [Add.self, Update.self, List.self, Show.self, Export.self]
    )

    /// The items of `add` and `update`: `--item` lines or a JSON file.
    struct Items: ParsableArguments {
        @Option(
            name: .customLong("item"),
            help: ArgumentHelp(
                "An item: 'key:kind:label[:required]'; kinds check, text, number, number(UNIT), number(UNIT,MIN..MAX), number(MIN..MAX), choice(A|B|C), photo (answered by a photo the worker attaches), signature (by a signed image). Repeatable, in order.",
                valueName: "item"))
        var items: [String] = []
        @Option(
            help: ArgumentHelp("A JSON file: a list of items {key, kind, label, required, unit, min, max, options}.", valueName: "file"))
        var file: String?

        func parsed() throws -> [ChecklistItem] {
            if file != nil && !items.isEmpty { throw TeamworkError(.usage, "give --item lines or --file, not both") }
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw TeamworkError(.unreadableFile, "cannot read \(file)")
                }
                guard data.count <= 1_000_000 else { throw TeamworkError.invalid("\(file) is over 1 MB: not a checklist") }
                do {
                    return try JSONDecoder().decode([ChecklistItem].self, from: data)
                } catch let error as DecodingError {
                    throw TeamworkError.invalid("\(file) is not a list of checklist items: \(Self.describe(error))")
                }
            }
            guard !items.isEmpty else {
                throw TeamworkError(.usage, "give the items: --item 'key:kind:label[:required]' (repeatable) or --file")
            }
            return try items.map(Self.item)
        }

        static func describe(_ error: DecodingError) -> String {
            switch error {
            case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
                let path = context.codingPath.map { $0.intValue.map { "item \($0 + 1)" } ?? $0.stringValue }.joined(separator: ", ")
                return (path.isEmpty ? "" : path + ": ") + context.debugDescription
            @unknown default:
                return "\(error)"
            }
        }

        /// `key:kind:label[:required]`, the label may hold colons.
        static func item(_ line: String) throws -> ChecklistItem {
            var parts = line.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count >= 3 else {
                throw TeamworkError(.usage, "--item '\(TerminalText.inline(line))': write key:kind:label[:required]")
            }
            let required = parts.count >= 4 && parts.last == "required"
            if required { parts.removeLast() }
            let key = parts[0], kind = parts[1], label = parts[2...].joined(separator: ":")
            var item = ChecklistItem(key: key, kind: .check, label: label, required: required)
            let open = kind.firstIndex(of: "(")
            let name = open.map { String(kind[..<$0]) } ?? kind
            guard let parsed = ChecklistItem.Kind(rawValue: name) else {
                throw TeamworkError.invalid(
                    "--item '\(TerminalText.inline(line))': kind '\(TerminalText.inline(name))' is not one of \(ChecklistItem.Kind.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            item.kind = parsed
            guard let open else { return item }
            guard kind.hasSuffix(")") else {
                throw TeamworkError.invalid("--item '\(TerminalText.inline(line))': close the kind's parenthesis")
            }
            let inside = String(kind[kind.index(after: open)..<kind.index(before: kind.endIndex)])
            switch parsed {
            case .choice:
                item.options = inside.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            case .number:
                for part in inside.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                    if let dots = part.range(of: "..") {
                        let (least, most) = (String(part[..<dots.lowerBound]), String(part[dots.upperBound...]))
                        item.min = least.isEmpty ? nil : least
                        item.max = most.isEmpty ? nil : most
                    } else {
                        item.unit = part
                    }
                }
            default:
                throw TeamworkError.invalid("--item '\(TerminalText.inline(line))': only number and choice take details in parentheses")
            }
            return item
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a checklist (its version 1).",
            discussion: """
                Example:
                  teamwork-manager checklist add "Substation visit" --item 'isolated:check:Isolator locked out:required' \\
                    --item 'reading:number(kWh):Meter reading:required' --item 'earth:number(Ω,0..1):Earth resistance' \\
                    --item 'seal:choice(intact|broken|replaced):Meter seal'
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Its name: letters, digits, spaces, . _ -") var name: String
        @OptionGroup var items: Items
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let items = try items.parsed()
            let form = try await connection.withStore { try await $0.publishChecklist(name: name, items: items, existing: false) }
            if output.json { return try Output.json(form) }
            Output.line("Added checklist \(TerminalText.inline(form.name)) version \(form.version) with \(form.items.count) items.")
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Publish a new version of a checklist (the whole list of items); tasks keep the version they have.",
            discussion:
                "Tasks and plan occurrences made from now on get the new version. Items equal to the latest version's publish nothing."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The checklist's name.") var name: String
        @OptionGroup var items: Items
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let items = try items.parsed()
            let (before, form) = try await connection.withStore { store in
                (try await store.checklist(named: name), try await store.publishChecklist(name: name, items: items, existing: true))
            }
            if output.json { return try Output.json(form) }
            Output.line(
                form.version == before.version
                    ? "Checklist \(TerminalText.inline(form.name)) is unchanged: still version \(form.version)."
                    : "Published checklist \(TerminalText.inline(form.name)) version \(form.version) with \(form.items.count) items; tasks keep the version they have."
            )
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every checklist, its latest version and how many tasks carry it.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let all = try await connection.withStore { try await $0.checklists() }
            if output.json { return try Output.json(all) }
            if all.isEmpty { return Output.line("No checklists yet: teamwork-manager checklist add NAME --item 'key:kind:label' …") }
            Output.table(
                ["NAME", "VERSION", "ITEMS", "TASKS", "PUBLISHED"],
                all.map {
                    [$0.name, String($0.latestVersion), String($0.items), String($0.tasks), Output.date($0.updatedAt)]
                })
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One checklist's items, in its latest version or the one asked.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The checklist's name.") var name: String
        @Option(help: "A published version (default: the latest).") var version: Int?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let form = try await connection.withStore { try await $0.checklist(named: name, version: version) }
            if output.json { return try Output.json(form) }
            Output.line("\(TerminalText.inline(form.name)), version \(form.version):")
            Output.table(
                ["ITEM", "KIND", "REQUIRED", "LABEL"],
                form.items.map {
                    [$0.key, $0.describedKind, $0.required ? "yes" : "", $0.label]
                }, maxWidth: 60)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Completed tasks' answers as CSV, one row per task and one column per item, for billing and audits.",
            discussion: """
                Columns: task, title, version, completed_at (UTC), completed_by, missing (required items unanswered), \\
                failed (checks answered no), then each item of the latest version and of older ones, by key.
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The checklist's name.") var name: String
        @Option(help: "Only tasks completed on or after this date: 2026-12-01 or 2026-12-01T08:00Z.") var since: String?
        @Option(help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file")) var output: String?

        func run() async throws {
            // A day alone is its start (UTC); a time says itself.
            let since = try since.map { text in
                text.count == 10
                    ? Zone.utc.day(try LocalDate(parsing: text, field: "since")).start : try ISODate.parse(text, field: "since")
            }
            let (latest, records) = try await connection.withStore { store in
                (try await store.checklist(named: name), try await store.checklistRecords(named: name, completedSince: since))
            }
            // The latest version's items in order, then any only older versions had.
            var keys = latest.items.map(\.key)
            for record in records {
                for item in record.task.checklist?.items ?? [] where !keys.contains(item.key) { keys.append(item.key) }
            }
            var rows: [[String]] = [["task", "title", "version", "completed_at", "completed_by", "missing", "failed"] + keys]
            let formatter = ISO8601DateFormatter()
            for record in records {
                let task = record.task
                let form = task.checklist ?? latest
                let completedAt: String = task.completedAt.map { formatter.string(from: $0) } ?? ""
                let completedBy: String = task.completedBy.map { record.names[$0] ?? String($0) } ?? ""
                let missing = form.missing(in: task.answers).joined(separator: " ")
                let failed = form.failed(in: task.answers).joined(separator: " ")
                let values: [String] = keys.map { task.answers[$0]?.value ?? "" }
                rows.append([String(task.id), task.title, String(form.version), completedAt, completedBy, missing, failed] + values)
            }
            let text = CSVTable.render(rows)
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: Data(text.utf8)) else {
                    throw TeamworkError(.cannotWrite, "cannot write \(output)")
                }
                Output.line("Wrote \(records.count) tasks to \(output).")
            } else {
                Output.write(Data(text.utf8), to: STDOUT_FILENO)
            }
        }
    }
}
