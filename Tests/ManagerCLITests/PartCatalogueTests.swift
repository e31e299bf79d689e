import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

/// The catalogue of parts and materials (issue 53) as a manager keeps it: added, priced, retired
/// but kept, imported from a price list all or nothing, exported formula-safe; and every hostile
/// field refused with one line, changing nothing.
@Suite("teamwork-manager: the parts catalogue")
struct PartCatalogueTests {
    @Test func aManagerKeepsTheCatalogueRetiredPartsStayButAreNotOffered() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            #expect(
                try await tool.ok(
                    "part", "add", "--code", "CBL-3x2.5", "--name", "Cable 3×2.5 mm²", "--unit", "m", "--price", "18.5", "--currency", "SEK"
                )
                .contains("Added part CBL-3x2.5"))
            _ = try await tool.ok("part", "add", "--code", "MTR-E1", "--name", "Electricity meter E1", "--unit", "piece")
            let part = try JSONOutput.decode(
                Part.self, try await tool.ok("part", "update", "cbl-3x2.5", "--price", "19.90", "--currency", "SEK", "--json"))
            #expect(part.unitPrice == "19.90" && part.currency == "SEK" && part.unit == .m)
            // A code is unique whatever its case.
            let twice = try await tool.run(["part", "add", "--code", "cbl-3X2.5", "--name", "Again", "--unit", "m"])
            #expect(twice.status == TeamworkError.Code.conflict.exitStatus && twice.stderr.contains("already"), "\(twice.stderr)")
            _ = try await tool.ok("part", "update", "MTR-E1", "--retire")
            let offered = try JSONOutput.decode([Part].self, try await tool.ok("part", "list", "--json"))
            #expect(offered.map(\.code) == ["CBL-3x2.5"])
            let all = try JSONOutput.decode([Part].self, try await tool.ok("part", "list", "--all", "--json"))
            #expect(all.map(\.code) == ["CBL-3x2.5", "MTR-E1"] && all.last?.retiredAt != nil)
            _ = try await tool.ok("part", "update", "MTR-E1", "--unretire", "--no-price")
            #expect(try JSONOutput.decode([Part].self, try await tool.ok("part", "list", "--json")).count == 2)
        }
    }

    @Test func aPriceListIsImportedAllOrNothingAndExportedFormulaSafe() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            let folder = FileManager.default.temporaryDirectory.appending(path: "parts-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            _ = try await tool.ok("part", "add", "--code", "FUSE-16", "--name", "Fuse 16 A", "--unit", "piece")
            let good = folder.appending(path: "prices.csv")
            try Data(
                """
                code,name,unit,price,currency
                FUSE-16,Fuse 16 A (gG),piece,12.50,SEK
                PIPE-22,"Copper pipe, 22 mm",m,84,SEK
                =HYPERLINK,=HYPERLINK("http://evil.example"),l,,

                """.utf8
            ).write(to: good)
            let refused = try await tool.run(["part", "import", good.path])
            #expect(refused.status == TeamworkError.Code.invalidInput.exitStatus && refused.stderr.contains("line 4"), "\(refused.stderr)")
            // Nothing of the file was written.
            var parts = try JSONOutput.decode([Part].self, try await tool.ok("part", "list", "--json"))
            #expect(parts.map(\.code) == ["FUSE-16"] && parts[0].unitPrice == nil)
            // Without the bad line: one part changed, one added.
            let lines = try String(contentsOf: good, encoding: .utf8).split(separator: "\n").prefix(3).joined(separator: "\n") + "\n"
            try Data(lines.utf8).write(to: good)
            #expect(try await tool.ok("part", "import", good.path).contains("1 added, 1 changed"))
            parts = try JSONOutput.decode([Part].self, try await tool.ok("part", "list", "--json"))
            #expect(parts.map(\.code) == ["FUSE-16", "PIPE-22"] && parts.map(\.unitPrice) == ["12.50", "84"])
            // A name a spreadsheet would run as a formula goes out as text, and a comma stays in its field.
            _ = try await tool.ok("part", "add", "--code", "X-1", "--name", "=SUM(A1:A9)", "--unit", "kg")
            let exported = try await tool.ok("part", "export")
            #expect(exported.contains("'=SUM(A1:A9)") && exported.contains("\"Copper pipe, 22 mm\""), "\(exported)")
        }
    }

    @Test(arguments: [
        (["--code", "X1", "--name", "N", "--unit", "bucket"], "unit is one of"),
        (["--code", "X1", "--name", "N", "--unit", "m", "--price=-3", "--currency", "SEK"], "not negative"),
        (["--code", "X1", "--name", "N", "--unit", "m", "--price", "1e9", "--currency", "SEK"], "a number like 12.50"),
        (["--code", "X1", "--name", "N", "--unit", "m", "--price", "NaN", "--currency", "SEK"], "a number like 12.50"),
        (["--code", "X1", "--name", "N", "--unit", "m", "--price", "12"], "go together"),
        (["--code", "X1", "--name", "N", "--unit", "m", "--price", "12", "--currency", "kr"], "three capital letters"),
        (["--code", "=cmd", "--name", "N", "--unit", "m"], "a part's code"),
        (["--code", String(repeating: "A", count: 41), "--name", "N", "--unit", "m"], "a part's code"),
        (["--code", "X1", "--name", "line\nbreak", "--unit", "m"], "name"),
    ])
    func hostileFieldsAreRefusedWithOneLineAndChangeNothing(_ arguments: [String], _ said: String) async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            let run = try await tool.run(["part", "add"] + arguments)
            #expect(run.status == TeamworkError.Code.invalidInput.exitStatus, "\(run.stderr)")
            #expect(run.stderr.contains(said) && run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
            #expect(try JSONOutput.decode([Part].self, try await tool.ok("part", "list", "--all", "--json")).isEmpty)
        }
    }
}
