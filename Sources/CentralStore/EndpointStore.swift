import Foundation
import TeamworkModel

/// What the sync endpoint may ask of the master: a device's token and teams, the positions it may
/// see, a phone's pairing and sign-out, a customer's appointment page and a calendar feed. These are
/// the surfaces anyone on the network reaches, most of them without signing in; the endpoint's pool
/// (`SharedStore<any EndpointStore>`) hands its routes the store as this, so nothing else of
/// ``CentralStore``'s is in reach there (docs/architecture.md, "Master connections").
public protocol EndpointStore: Sendable {
    func authenticate(secret: String) async throws -> Person?
    func teams(ofPerson personID: Int64) async throws -> [Team]
    func positions(
        visibleTo personID: Int64
    ) async throws
        -> [(personID: Int64, teamIDs: [Int64], latitude: Double, longitude: Double, reportedAt: Date)]
    func settledChanges(of personID: Int64, among changeIDs: [String]) async throws -> Set<String>
    func redeemPairing(code: String, deviceName: String) async throws -> CentralStore.RedeemedPairing?
    func pairingPerson(code: String) async throws -> String?
    @discardableResult func signOutDevice(secret: String) async throws -> Bool
    func appointmentLink(secret: String) async throws -> CentralStore.AppointmentLink?
    func task(id: Int64) async throws -> FieldTask
    func location(id: Int64) async throws -> Location
    func team(id: Int64) async throws -> Team
    func taskCustomer(taskID: Int64) async throws -> Customer?
    func appointmentOffers(taskID: Int64, days: Int, limit: Int, otherwise: DayHours, now: Date) async throws -> [TimeWindow]
    func answerAppointment(secret: String, answer: AppointmentAnswer, moveTo: TimeWindow?) async throws -> String
    func calendarPerson(secret: String) async throws -> Person?
    func linkKeys() async throws -> (keys: [(id: Int, key: [UInt8])], legacyAppointments: Bool, legacyFeeds: Bool)
    @discardableResult func rotateLinkKey(every: Duration) async throws -> Bool
    func calendarWork(personID: Int64, from: Date, limit: Int) async throws -> (tasks: [FieldTask], sites: [Int64: Location])
    func pushPublicKey(proposed: (privateKey: [UInt8], publicKey: [UInt8])) async throws -> [UInt8]
    func setPushSubscription(secret: String, endpoint: String, p256dh: [UInt8], auth: [UInt8]) async throws -> Bool
    @discardableResult func removePushSubscription(secret: String) async throws -> Bool
}

extension CentralStore: EndpointStore {}
