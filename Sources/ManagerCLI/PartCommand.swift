import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

/// `part add | update | list | import | export`: the catalogue of parts and materials (issue 53).
struct PartCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "part",
        abstract: "The catalogue of parts and materials: add, update, retire, list, import and export.",
        discussion: """
            A part has a code (unique whatever its case), a name, the unit it is counted in \
            (\(Part.Unit.allCases.map(\.rawValue).joined(separator: ", "))) and optionally a unit price in a currency. \
            A retired part is kept for the jobs that used it and no longer offered.
            """,
        subcommands: [Add.self, Update.self, List.self, Import.self, Export.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a part to the catalogue.")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Its code, e.g. CBL-3x2.5.") var code: String
        @Option(help: "What it is called.") var name: String
        @Option(help: "What it is counted in: \(Part.Unit.allCases.map(\.rawValue).joined(separator: ", ")).") var unit: String
        @Option(help: "The price of one unit, like 12.50 (with --currency).") var price: String?
        @Option(help: "The price's currency, like SEK.") var currency: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let new = try NewPart(code: code, name: name, unit: unit, unitPrice: price, currency: currency)
            let part = try await connection.withStore { try await $0.addPart(new) }
            if output.json { try Output.json(part) } else { Output.line("Added part \(part.code): \(part.name)") }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a part's name, unit or price, or retire it.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Its code.") var code: String
        @Option var name: String?
        @Option var unit: String?
        @Option(help: "A new unit price (with --currency).") var price: String?
        @Option var currency: String?
        @Flag(help: "No price from now on.") var noPrice = false
        @Flag(help: "Keep it for the jobs that used it, no longer offer it.") var retire = false
        @Flag(help: "Offer it again.") var unretire = false
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if retire && unretire { throw ValidationError("--retire or --unretire, not both") }
            if noPrice && (price != nil || currency != nil) { throw ValidationError("--no-price or a --price, not both") }
        }

        func run() async throws {
            let newPrice: (String?, String?)? = noPrice ? (nil, nil) : (price != nil || currency != nil ? (price, currency) : nil)
            let part = try await connection.withStore { store in
                try await store.updatePart(
                    code: code, name: name, unit: unit, price: newPrice, retired: retire ? true : unretire ? false : nil)
            }
            if output.json {
                try Output.json(part)
            } else {
                Output.line("Updated part \(part.code)\(part.retiredAt == nil ? "" : " (retired)")")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the catalogue by code.")
        @OptionGroup var connection: ConnectionOptions
        @Flag(help: "Retired parts too.") var all = false
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let parts = try await connection.withStore { try await $0.listParts(retired: all) }
            if output.json { return try Output.json(parts) }
            Output.table(
                ["CODE", "NAME", "UNIT", "PRICE", "RETIRED"],
                parts.map { part in
                    [
                        part.code, part.name, part.unit.rawValue, part.unitPrice.map { "\($0) \(part.currency ?? "")" } ?? "-",
                        Output.date(part.retiredAt),
                    ]
                })
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add and change parts from a CSV file, all or nothing.",
            discussion: "Columns: \(CentralStore.partImportColumns.joined(separator: ", ")) (code, name and unit required).")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The CSV file.") var file: String

        func run() async throws {
            let text = try Output.readCSVFile(file)
            let (added, changed) = try await connection.withStore { try await $0.importParts(csv: text) }
            Output.line("Imported parts: \(quantity(added, "added", "added")), \(quantity(changed, "changed", "changed"))")
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the catalogue as CSV (what import reads; formula-safe for spreadsheets).")
        @OptionGroup var connection: ConnectionOptions
        @Flag(help: "Retired parts too.") var all = false

        func run() async throws {
            let csv = try await connection.withStore { try await $0.exportParts(retired: all) }
            FileHandle.standardOutput.write(Data(csv.utf8))
        }
    }
}
