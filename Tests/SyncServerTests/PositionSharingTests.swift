import CentralStore
import EventListener
import Foundation
import HummingbirdTesting
import SyncProtocol
import TeamworkModel
import Testing

/// A person's position reaches managers and that person; teammates only when
/// their team shares positions; nobody else, ever.
@Suite("Sync endpoint: positions")
struct PositionSharingTests {
    typealias Pulls = SyncServerTests

    /// Ann (red), Bo (red) and Cy (blue) each check in through the endpoint; the listener takes the check-ins in.
    func checkInEveryone(_ world: SyncServerTests.World, _ client: any TestClientProtocol) async throws -> (bo: String, cyLat: Double) {
        let bo = try await CentralStore.withStore(world.url) { try await $0.issueToken(personID: world.fixtures.bo.id, label: "p").secret }
        let now = ISODate.format(Date())
        for (token, team, lat) in [
            (world.annToken, world.fixtures.red.id, 59.1), (bo, world.fixtures.red.id, 59.2),
            (world.cyToken, world.fixtures.blue.id, 59.3),
        ] {
            let body =
                #"{"changes": [{"id": "c-\#(lat)", "operation": "checkin", "made_at": "\#(now)", "latitude": \#(lat), "longitude": 18.0}]}"#
            let pushed = try await Pulls.post(client, "/v1/replicas/team-\(team)/changes", token: token, body: body)
            #expect(pushed.status == .ok)
        }
        _ = try await EventListener(.init(databaseURL: world.url, directory: world.folder)).once()
        return (bo, 59.3)
    }

    func positions(_ client: any TestClientProtocol, _ token: String) async throws -> PositionListing {
        let response = try await Pulls.get(client, "/v1/positions", token: token)
        #expect(response.status == .ok)
        return try Pulls.decode(PositionListing.self, response)
    }

    @Test func byDefaultAWorkerSeesOnlyTheirOwnPosition() async throws {
        try await SyncServerTests().withServer { world, client in
            _ = try await checkInEveryone(world, client)
            let ann = try await positions(client, world.annToken)
            #expect(ann.positions.map(\.person) == [world.fixtures.ann.id])
            #expect(ann.positions.first?.latitude == 59.1)
            #expect(ann.positions.first?.teams == [])
        }
    }

    @Test func aTeamThatSharesShowsItsMembersPositionsToEachOtherAndToNobodyElse() async throws {
        try await SyncServerTests().withServer { world, client in
            let (bo, _) = try await checkInEveryone(world, client)
            _ = try await CentralStore.withStore(world.url) {
                try await $0.updateTeam(id: world.fixtures.red.id, try TeamChanges(sharesPositions: true))
            }
            let ann = try await positions(client, world.annToken)
            #expect(ann.positions.map(\.person) == [world.fixtures.ann.id, world.fixtures.bo.id])
            #expect(ann.positions.last?.teams == [world.fixtures.red.id])
            let seenByBo = try await positions(client, bo)
            #expect(seenByBo.positions.count == 2)
            // Blue does not share, and Cy is in no team with Ann or Bo: he sees himself only, and nobody sees him.
            let seenByCy = try await positions(client, world.cyToken)
            #expect(seenByCy.positions.map(\.person) == [world.fixtures.cy.id])
            #expect(!ann.positions.contains { $0.person == world.fixtures.cy.id })

            // Sharing turned off again: from the next request on.
            _ = try await CentralStore.withStore(world.url) {
                try await $0.updateTeam(id: world.fixtures.red.id, try TeamChanges(sharesPositions: false))
            }
            let after = try await positions(client, world.annToken)
            #expect(after.positions.map(\.person) == [world.fixtures.ann.id])
        }
    }

    @Test func positionsNeedASignIn() async throws {
        try await SyncServerTests().withServer { world, client in
            let anonymous = try await Pulls.get(client, "/v1/positions", token: nil)
            #expect(anonymous.status == .unauthorized)
            let revoked = try await Pulls.get(client, "/v1/positions", token: world.revokedToken)
            #expect(revoked.status == .unauthorized)
        }
    }
}
