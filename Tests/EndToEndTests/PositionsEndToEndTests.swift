import CentralStore
import EventListener
import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

/// Teammates' positions on the device, as a manager's team setting allows, with the real tools.
@Suite("teamwork-worker positions end to end")
struct PositionsEndToEndTests {

    @Test func aWorkerSeesTeammatesPositionsOnlyWhileTheirTeamSharesThem() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let boToken = try await CentralStore.withStore(setup.url) {
                try await $0.issueToken(personID: setup.world.bo.id, label: "").secret
            }
            let boHome = setup.annHome.deletingLastPathComponent().appending(path: "bo")
            for (home, token, lat) in [
                (setup.annHome, setup.annToken, "59.10"), (boHome, boToken, "59.20"), (setup.cyHome, setup.cyToken, "59.30"),
            ] {
                #expect(try await WorkerTool.run(home, "login", "--server", setup.server.url, "--token", token).status == 0)
                #expect(try await WorkerTool.run(home, "checkin", "--lat", lat, "--lon", "18.05").status == 0)
                #expect(try await WorkerTool.run(home, "sync").status == 0)
            }
            _ = try await EventListener(.init(databaseURL: setup.url, directory: setup.folder)).once()

            #expect(try await WorkerTool.run(setup.annHome, "sync").status == 0)
            let alone = try await WorkerTool.run(setup.annHome, "positions")
            #expect(
                alone.stdout.split(separator: "\n").contains { $0.hasPrefix("you ") && $0.contains("59.10000") }
                    && !alone.stdout.contains("bo Test"), "\(alone.stdout)")

            let manager = ManagerTool(setup.url)
            #expect(try await manager("team", "update", "red", "--share-positions").status == 0)
            #expect(try await manager("team", "show", "red").stdout.contains("shared with members"))
            #expect(try await WorkerTool.run(setup.annHome, "sync").status == 0)
            let shared = try await WorkerTool.run(setup.annHome, "positions")
            #expect(
                shared.stdout.split(separator: "\n").contains { $0.hasPrefix("bo Test ") && $0.contains("59.20000") }
                    && !shared.stdout.contains("59.30000"), "\(shared.stdout)")
            await #expect(try !WorkerTool.run(setup.cyHome, "sync").stdout.contains("59.2"))
            await #expect(try !WorkerTool.run(setup.cyHome, "positions").stdout.contains("bo Test"))

            // Turned off: the next sync removes Bo's position from Ann's device.
            #expect(try await manager("team", "update", "red", "--no-share-positions").status == 0)
            #expect(try await WorkerTool.run(setup.annHome, "sync").status == 0)
            await #expect(try !WorkerTool.run(setup.annHome, "positions").stdout.contains("bo Test"))
        }
    }
}
