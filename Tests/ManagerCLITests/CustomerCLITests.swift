import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// docs/integrations.md's customer commands as a dispatcher types them: a customer named on a
/// site, a task that inherits them, the messages queued for them, their export, and their erasure;
/// and the bad input each command refuses in one line, changing nothing.
@Suite("teamwork-manager: customers")
struct CustomerCLITests {
    @Test func aSitesCustomerIsToldOfItsTasksAndCanBeExportedAndErasedOnRequest() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            _ = try await tool.ok("team", "add", "red", "--name", "Red", "--time-zone", "Europe/Stockholm")
            for _ in 1...3 { _ = try await tool.ok("location", "add", "--name", "Elsewhere", "--lat", "59", "--lon", "18") }
            _ = try await tool.ok("location", "add", "--name", "Villa", "--lat", "59.3", "--lon", "18.1")
            // The documented lines, as written.
            let added = try await tool.ok(
                "customer", "add", "--name", "Åsa Öberg", "--email", "asa@example.se", "--phone", "+46 70 123 45 67", "--language",
                "sv", "--consent")
            #expect(added.contains("Added customer 1"))
            #expect(try await tool.ok("location", "customer", "4", "asa@example.se").contains("Site 4's customer is Åsa Öberg (1)"))
            let task = try JSONOutput.decode(
                FieldTask.self,
                try await tool.ok(
                    "task", "create", "--title", "Replace heat pump", "--team", "red", "--location", "4", "--window",
                    "2026-12-03T10:00/PT2H", "--json"))
            #expect(task.customerID == nil, "it has its site's customer, not one of its own")
            let messages = try await tool.ok("task", "messages", String(task.id))
            #expect(messages.contains("booked") && messages.contains("email") && messages.contains("sms"), "\(messages)")
            let shown = try await tool.ok("customer", "show", "asa@example.se")
            #expect(shown.contains("+46701234567") && shown.contains("4 Villa") && shown.contains("Replace heat pump"), "\(shown)")
            #expect(try await tool.ok("task", "show", String(task.id)).contains("Åsa Öberg (1), the site's"))

            let export =
                try JSONSerialization.jsonObject(
                    with: Data(try await tool.ok("customer", "export", "asa@example.se").utf8)) as? [String: Any]
            #expect((export?["customer"] as? [String: Any])?["email"] as? String == "asa@example.se")
            #expect((export?["tasks"] as? [[String: Any]])?.count == 1 && (export?["messages"] as? [[String: Any]])?.count == 2)

            // A CSV import names a task's own customer by email (or id).
            _ = try await tool.ok("customer", "add", "--name", "Bo Ek", "--email", "bo.ek@example.org")
            let csv = FileManager.default.temporaryDirectory.appending(path: "customers-\(UUID().uuidString).csv")
            defer { try? FileManager.default.removeItem(at: csv) }
            try Data("title,team,location,customer\nFor Bo,red,4,BO.EK@example.org\nFor the site's,red,4,\n".utf8).write(to: csv)
            _ = try await tool.ok("task", "import", csv.path)
            let imported = try JSONOutput.decode([FieldTask].self, try await tool.ok("task", "list", "--json"))
            #expect(
                imported.first { $0.title == "For Bo" }?.customerID == 2
                    && imported.first { $0.title == "For the site's" }?.customerID == nil)

            let unsure = try await tool("customer", "erase", "asa@example.se")
            #expect(unsure.status == 64 && unsure.errorLines.count == 1 && unsure.stderr.contains("--yes"))
            #expect(try await tool.ok("customer", "erase", "asa@example.se", "--yes").contains("Erased customer 1"))
            let after = try await tool.ok("customer", "show", "1")
            #expect(!after.contains("Åsa") && !after.contains("asa@example.se") && after.contains("Replace heat pump"), "\(after)")
            #expect(try await tool.ok("customer", "messages", "1").contains("No messages."))
        }
    }

    @Test func badCustomerInputIsRefusedInOneLineAndChangesNothing() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            _ = try await tool.ok("team", "add", "red", "--name", "Red")
            for arguments in [
                ["customer", "add", "--name", "X", "--email", "not-an-address"],
                ["customer", "add", "--name", "X", "--email", "a@b.example>, c@d.example"],
                ["customer", "add", "--name", "X", "--phone", "070-123 45 67"],
                ["customer", "add", "--name", "X", "--language", "fi"],
                ["customer", "add", "--name", "   "],
                ["customer", "add", "--name", String(repeating: "x", count: 201)],
            ] {
                let refused = try await tool.run(arguments)
                #expect(refused.status == 65 && refused.errorLines.count == 1, "\(arguments): \(refused.stderr)")
            }
            _ = try await tool.ok("customer", "add", "--name", "One", "--email", "one@example.org")
            let twice = try await tool("customer", "add", "--name", "Two", "--email", "ONE@example.org")
            #expect(twice.status == 68 && twice.errorLines.count == 1, "one customer per address: \(twice.stderr)")
            let missing = try await tool("task", "create", "--title", "x", "--team", "red", "--customer", "nobody@example.org")
            #expect(missing.status == 67 && missing.errorLines.count == 1, "\(missing.stderr)")
            let notSite = try await tool("location", "customer", "99", "one@example.org")
            #expect(notSite.status != 0 && notSite.errorLines.count == 1, "\(notSite.stderr)")
            #expect(try await tool.ok("customer", "list").components(separatedBy: "\n").filter { !$0.isEmpty }.count == 2)
            #expect(try JSONOutput.decode([FieldTask].self, try await tool.ok("task", "list", "--json")).isEmpty)
        }
    }
}
