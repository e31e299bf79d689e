import CentralStore
import Foundation
import ReplicaGenerator
import TeamworkModel
import TeamworkTestSupport
import Testing

/// A dispatcher in any zone sees the day as the crew lives it: a team's zone
/// (or a site's) reads the times a manager types, shows them back, decides
/// which day a task is on, and travels to the device, whose own zone does not
/// matter. (Seen before: every time was UTC; a Stockholm crew's 08:00 job
/// showed as 07:00 in winter and 06:00 in summer.)
@Suite("Time zones end to end")
struct TimeZoneEndToEndTests {
    struct DeviceTask: Decodable {
        var id: Int64
        var title: String
        var timeZone: String
        var window: TimeWindow?
    }

    @Test func aTeamsZoneReadsAndShowsItsTimesAndDecidesItsDaysOnTheManagersAndTheDevicesSide() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let manager = ManagerTool(setup.url)
            #expect(
                try await manager("team", "update", "red", "--time-zone", "Mars/Olympus").status
                    == TeamworkError.Code.invalidInput.exitStatus)
            let zoned = try await manager("team", "update", "red", "--time-zone", "Europe/Stockholm")
            #expect(zoned.status == 0, "\(zoned.stderr)")
            func create(_ title: String, _ options: String...) async throws -> Int64 {
                let run = try await manager.run(
                    [
                        "task", "create", "--title", title, "--team", "red", "--assignee", "ann@example.org",
                        "--json",
                    ] + options)
                #expect(run.status == 0, "\(run.stderr)")
                return try JSONOutput.decode(FieldTask.self, run.stdout).id
            }
            // Winter and summer: 08:00 on the crew's clock either way.
            let winter = try await create("winter inspection", "--window", "2031-12-01T08:00/PT2H")
            let summer = try await create("summer inspection", "--window", "2031-07-01T08:00/PT2H")
            // Late on the 1st in Stockholm is already the 1st's last hour, not the 2nd (23:30 CET = 22:30Z).
            let late = try await create("late call-out", "--window", "2031-12-01T23:30/PT30M")
            // A due day ends at the crew's midnight; an explicit offset is taken as given.
            let due = try await create("due that day", "--due", "2031-12-01")
            let utcGiven = try await create("given in UTC", "--window", "2031-12-02T06:00Z/PT1H")
            // A site in another zone rules its own tasks.
            let site = try await manager(
                "location", "add", "--name", "Auckland depot", "--lat", "-36.85", "--lon", "174.76",
                "--time-zone", "Pacific/Auckland", "--json")
            #expect(site.status == 0, "\(site.stderr)")
            let siteID = try JSONOutput.decode(Location.self, site.stdout).id
            let auckland = try await create("Auckland job", "--location", String(siteID), "--window", "2031-12-02T08:00/PT1H")

            let tasks = try await CentralStore.withStore(setup.url) { store in
                var found: [FieldTask] = []
                for id in [winter, summer, late, due, utcGiven, auckland] { found.append(try await store.task(id: id)) }
                return found
            }
            #expect(tasks[0].window?.start == (try ISODate.parse("2031-12-01T07:00:00Z")), "CET is UTC+1")
            #expect(tasks[1].window?.start == (try ISODate.parse("2031-07-01T06:00:00Z")), "CEST is UTC+2")
            #expect(tasks[3].dueAt == (try ISODate.parse("2031-12-01T22:59:59Z")))
            #expect(tasks[4].window?.start == (try ISODate.parse("2031-12-02T06:00:00Z")))
            #expect(tasks[5].timeZone == "Pacific/Auckland")
            #expect(tasks[5].window?.start == (try ISODate.parse("2031-12-01T19:00:00Z")))

            let shown = try await manager("task", "show", String(winter)).stdout
            #expect(shown.contains("2031-12-01 08:00-10:00 CET") && shown.contains("Europe/Stockholm"), "\(shown)")
            #expect(try await manager("task", "show", String(summer)).stdout.contains("2031-07-01 08:00-10:00 CEST"))
            let json = try await manager("task", "show", String(winter), "--json").stdout
            #expect(json.contains("\"time_zone\" : \"Europe/Stockholm\"") || json.contains("\"time_zone\":\"Europe/Stockholm\""), "\(json)")
            #expect(json.contains("2031-12-01T07:00:00Z"), "JSON carries the instant in UTC: \(json)")

            // The manager's day: each task's own.
            let day = try await manager("task", "list", "--on", "2031-12-01", "--json").stdout
            let onDay = Set(try JSONOutput.decode([FieldTask].self, day).map(\.id))
            #expect(onDay == [winter, late, due], "\(day)")
            let second = Set(
                try JSONOutput.decode([FieldTask].self, try await manager("task", "list", "--on", "2031-12-02", "--json").stdout).map(\.id))
            #expect(second == [utcGiven, auckland], "08:00 in Auckland on the 2nd is the 1st in UTC, yet the 2nd's work")
            let table = try await manager("task", "list", "--on", "2031-12-02").stdout
            #expect(table.contains("CET") && table.contains("NZDT"), "zones named when a listing spans two: \(table)")

            // The device, in Los Angeles, plans the Stockholm crew's day by Stockholm's clock.
            _ = try await ReplicaGenerator(.init(databaseURL: setup.url, directory: setup.folder)).catchUp()
            let la = ["TZ": "America/Los_Angeles"]
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let device = try JSONOutput.decode(
                [DeviceTask].self, try await WorkerTool.run(setup.annHome, ["tasks", "--json"], environment: la).stdout)
            #expect(device.first { $0.id == winter }?.timeZone == "Europe/Stockholm")
            let worked = try await WorkerTool.run(setup.annHome, ["tasks", "--on", "2031-12-01"], environment: la).stdout
            #expect(
                worked.contains("winter inspection") && worked.contains("late call-out") && worked.contains("due that day")
                    && !worked.contains("given in UTC"), "\(worked)")
            #expect(worked.contains("2031-12-01 08:00-10:00"), "the crew's clock, not the phone's: \(worked)")
            let shownOnDevice = try await WorkerTool.run(setup.annHome, ["show", String(winter)], environment: la).stdout
            #expect(shownOnDevice.contains("2031-12-01 08:00-10:00 CET"), "\(shownOnDevice)")

            // Today on the device is the crew's today: a task due at the end of today in Auckland.
            let aucklandZone = try Zone("Pacific/Auckland")
            let todayThere = aucklandZone.date(of: Date())
            _ = try await manager("task", "update", String(auckland), "--clear-window", "--due", todayThere.description)
            _ = try await ReplicaGenerator(.init(databaseURL: setup.url, directory: setup.folder)).catchUp()
            #expect(try await WorkerTool.run(setup.annHome, ["sync"], environment: la).status == 0)
            let today = try await WorkerTool.run(setup.annHome, ["tasks", "--today"], environment: la).stdout
            #expect(today.contains("Auckland job"), "due today in Auckland is today's work there, whatever the phone says: \(today)")
        }
    }
}
