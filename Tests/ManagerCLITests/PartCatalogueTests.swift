import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

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

    /// `report materials`: each task counted on the day it was completed on its own clock (a
    /// Stockholm job finished at 23:30 local time, 22:30 UTC, is that day's; one finished at 00:30
    /// is the next day's), summed per part and currency, a line per task with --lines, and CSV a
    /// spreadsheet cannot run as a formula.
    @Test func theMaterialsReportCountsEachTaskOnItsOwnDayAndWritesCSVThatIsNoFormula() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            _ = try await tool.ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
            _ = try await tool.ok("team", "add", "red", "--name", "Red", "--time-zone", "Europe/Stockholm")
            _ = try await tool.ok("team", "add", "blue", "--name", "Blue", "--time-zone", "America/New_York")
            _ = try await tool.ok("team", "add-member", "red", "ann@example.org")
            _ = try await tool.ok("team", "add-member", "blue", "ann@example.org")
            _ = try await tool.ok(
                "part", "add", "--code", "CBL-3", "--name", "Cable", "--unit", "m", "--price", "12.50", "--currency", "SEK")
            var tasks: [Int64] = []
            for (team, title) in [("red", "late in Stockholm"), ("red", "next morning"), ("blue", "evening in New York")] {
                tasks.append(
                    try JSONOutput.decode(FieldTask.self, try await tool.ok("task", "create", "--title", title, "--team", team, "--json"))
                        .id)
            }
            let ann = try await CentralStore.withStore(url) { try await $0.person(reference: "ann@example.org").id }
            // Completed at set times (the clock is the test's, not the machine's), with what was used.
            for (task, completed, used) in [
                (tasks[0], "2026-12-01T22:30:00Z", [("CBL-3", "10"), ("=HYPERLINK(1)", "2")]),  // 23:30 in Stockholm, 1 December
                (tasks[1], "2026-12-01T23:30:00Z", [("CBL-3", "4.5")]),  // 00:30 on 2 December in Stockholm
                (tasks[2], "2026-12-02T02:00:00Z", [("CBL-3", "1")]),  // 21:00 on 1 December in New York
            ] {
                try await CentralStore.withStore(url) { store in
                    _ = try await store.rows(
                        """
                        UPDATE tasks SET status = 'completed', assignee_id = \(ann), completed_by = \(ann),
                               completed_at = \(completed)::timestamptz WHERE id = \(task)
                        """)
                    for (part, quantity) in used {
                        let catalogue = part == "CBL-3"
                        _ = try await store.rows(
                            """
                            INSERT INTO task_materials (task_id, person_id, part_id, description, quantity, unit, unit_price, currency,
                                                        recorded_at, change_id)
                            SELECT \(task), \(ann), p.id, \(catalogue ? nil : part), \(quantity)::numeric, p.unit, p.unit_price, p.currency,
                                   now(), \(UUID().uuidString)
                            FROM (SELECT NULL) x LEFT JOIN parts p ON \(catalogue) AND p.code = 'CBL-3'
                            """)
                    }
                }
            }
            let first = try JSONOutput.decode(
                [MaterialUse.Summary].self, try await tool.ok("report", "materials", "--from", "2026-12-01", "--to", "2026-12-01", "--json")
            )
            #expect(
                first.map { "\($0.partCode ?? $0.name) \($0.quantity) \($0.amount ?? "-") \($0.tasks)" }
                    == ["CBL-3 11 137.50 2", "=HYPERLINK(1) 2 - 1"], "\(first)")
            let second = try JSONOutput.decode(
                [MaterialUse].self,
                try await tool.ok("report", "materials", "--from", "2026-12-02", "--to", "2026-12-02", "--lines", "--json"))
            #expect(second.map(\.taskID) == [tasks[1]] && second.first?.completedOn == "2026-12-02")
            let red = try await tool.ok("report", "materials", "--from", "2026-12-01", "--to", "2026-12-02", "--team", "red")
            #expect(red.contains("14.5") && red.contains("Total SEK: 181.25"), "\(red)")
            let csv = try await tool.ok("report", "materials", "--from", "2026-12-01", "--to", "2026-12-02", "--lines", "--csv")
            #expect(csv.hasPrefix("task,title,completed,team,customer,part,name,quantity"), "\(csv)")
            #expect(csv.contains(",'=HYPERLINK(1),") && !csv.contains(",=HYPERLINK"), "a formula goes out as text: \(csv)")
            for arguments in [
                ["--from", "2026-12-02", "--to", "2026-12-01"], ["--from", "2026-13-01", "--to", "2026-12-01"],
                ["--from", "2025-01-01", "--to", "2026-12-01"],
            ] {
                let refused = try await tool.run(["report", "materials"] + arguments)
                #expect(
                    refused.status == TeamworkError.Code.invalidInput.exitStatus && refused.errorLines.count == 1,
                    "\(arguments): \(refused.stderr)")
            }
        }
    }
}
