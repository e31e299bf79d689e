import CentralStore
import Foundation
import ReplicaGenerator
import TeamworkModel
import TeamworkTestSupport
import Testing

/// Appointment windows and required skills travel master → team replica →
/// device, and the device plans the day by them.
@Suite("teamwork-worker windows end to end")
struct WindowsEndToEndTests {

    struct DeviceTask: Decodable {
        var id: Int64
        var title: String
        var window: TimeWindow?
        var requiredSkills: [String]
    }

    @Test func windowsAndSkillsReachTheDeviceWhichListsADayInWindowOrderAndFlagsAPastWindow() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let manager = ManagerTool(setup.url)
            func create(_ title: String, _ window: String, requires: String = "") async throws {
                let run = try await manager(
                    "task", "create", "--title", title, "--team", "red", "--assignee", "ann@example.org",
                    "--window", window, "--requires", requires, "--force")
                #expect(run.status == 0, "\(run.stderr)")
            }
            let now = Date()
            try await create("afternoon visit", "2031-03-04T13:00Z/PT2H", requires: "electrical")
            try await create("morning visit", "2031-03-04T08:00Z/2031-03-04T10:30Z")
            try await create("next day", "2031-03-05T08:00Z/PT1H")
            try await create("long gone", "2020-01-01T08:00Z/PT1H")
            try await create("right now", "\(ISODate.format(now.addingTimeInterval(-60)))/PT2M")
            _ = try await ReplicaGenerator(.init(databaseURL: setup.url, directory: setup.folder)).catchUp()

            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let master = try await CentralStore.withStore(setup.url) { try await $0.listTasks() }
            let device = try JSONOutput.decode([DeviceTask].self, try await WorkerTool.run(setup.annHome, "tasks", "--json").stdout)
            for task in master where task.assigneeID == setup.world.ann.id {
                let copy = try #require(device.first { $0.id == task.id })
                #expect(copy.window == task.window, "\(task.title)")
                #expect(copy.requiredSkills == task.requiredSkills, "\(task.title)")
            }
            #expect(device.first { $0.title == "afternoon visit" }?.requiredSkills == ["electrical"])

            let day = try await WorkerTool.run(setup.annHome, "tasks", "--on", "2031-03-04")
            let lines = day.stdout.split(separator: "\n").dropFirst()
            #expect(day.stdout.hasPrefix("ID  WHEN"), "a header first: \(day.stdout)")
            #expect(lines.count == 2, "\(day.stdout)")
            #expect(lines.first?.contains("2031-03-04 08:00-10:30") == true && lines.first?.contains("morning visit") == true)
            #expect(lines.last?.contains("2031-03-04 13:00-15:00") == true && lines.last?.contains("afternoon visit") == true)
            let today = try await WorkerTool.run(setup.annHome, "tasks", "--today")
            #expect(today.stdout.contains("right now") && !today.stdout.contains("visit"), "\(today.stdout)")
            let all = try await WorkerTool.run(setup.annHome, "tasks")
            #expect(all.stdout.split(separator: "\n").contains { $0.contains("long gone") && $0.contains(" !") }, "\(all.stdout)")
            let shown = try await WorkerTool.run(setup.annHome, "show", String(try #require(device.first { $0.title == "long gone" }).id))
            #expect(shown.stdout.contains("(past)") && shown.stdout.contains("2020-01-01 08:00-09:00 UTC"), "\(shown.stdout)")
            let empty = try await WorkerTool.run(setup.annHome, "tasks", "--on", "2031-03-06")
            #expect(empty.stdout.contains("No tasks that day."))
            let bad = try await WorkerTool.run(setup.annHome, "tasks", "--on", "tomorrow")
            #expect(bad.status != 0 && bad.stderr.contains("on must be a day like 2026-12-01"))
        }
    }
}
