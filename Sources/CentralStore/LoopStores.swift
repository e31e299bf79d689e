import Foundation
import TeamworkModel

/// What the event listener may ask of the master: its cursor per replica, the replica's lock, and
/// taking in or setting aside the field's changes. The listener's passes get their connection as
/// this (``EventListener``), so nothing else of ``CentralStore``'s is in reach there; a call more is
/// a line here, seen in review (docs/architecture.md, "What a surface may ask").
public protocol ListenerStore: Sendable {
    var isOpen: Bool { get }
    func listenerCursor(source: String) async throws -> ListenerCursor
    func tryLockReplica(_ source: String) async throws -> Bool
    func unlockReplica(_ source: String) async throws
    func applyFieldChanges(
        replica: String, source: String?, _ changes: [RecordedWorkerChange], cursor: ListenerCursor
    ) async throws -> [FieldChangeOutcome]
    func setAsideFieldChange(replica: String, source: String, _ change: RecordedWorkerChange, reason: String) async throws
}

extension CentralStore: ListenerStore {}

/// What the service's senders may ask of the master: claiming and recording customers' messages
/// and webhook deliveries, and the facts a message is composed of (its task, site, worker, team,
/// customer, signers, materials and a link to the customer's page). The senders' passes get their
/// connection as this (``OutboxSender``); the connection's own LISTEN stays with the loop that opened it.
public protocol OutboxStore: Sendable {
    func queueReminders(from: LocalTime, now: Date) async throws -> Int
    func noteWaitingMessages(channels: [CustomerMessage.Channel]) async throws
    func claimDueMessages(limit: Int, lease: Duration, channels: [CustomerMessage.Channel]) async throws -> [CentralStore.DueMessage]
    func holdMessages(ids: [Int64], lease: Duration) async throws
    func recordMessage(id: Int64, state: CustomerMessage.State, reason: String?, retryIn: Duration?, attempted: Bool) async throws
    func pendingMessages() async throws -> Int
    func claimDueDeliveries(limit: Int, lease: Duration) async throws -> [CentralStore.DueDelivery]
    func recordAttempt(
        deliveryID: Int64, status: Int?, error: String?, delivered: Bool, retryIn: Duration?, pauseAfter: Int
    ) async throws
    func pendingDeliveries() async throws -> Int
    func claimDuePushes(limit: Int, perPhone: Int, lease: Duration) async throws -> [CentralStore.DuePush]
    func recordPush(_ push: CentralStore.DuePush, outcome: CentralStore.PushOutcome) async throws
    func pendingPushes() async throws -> Int
    func pushKey(proposed: (privateKey: [UInt8], publicKey: [UInt8])) async throws -> (privateKey: [UInt8], publicKey: [UInt8])
    func task(id: Int64) async throws -> FieldTask
    func location(id: Int64) async throws -> Location
    func person(id: Int64) async throws -> Person
    func team(id: Int64) async throws -> Team
    func customer(id: Int64) async throws -> Customer
    func signers(taskID: Int64) async throws -> [String]
    func materials(ofTask id: Int64) async throws -> [MaterialLine]
    func issueAppointmentLink(taskID: Int64, sequence: Int) async throws -> String?
}

extension OutboxStore {
    /// A message's outcome, counted as an attempt.
    public func recordMessage(id: Int64, state: CustomerMessage.State, reason: String?, retryIn: Duration? = nil) async throws {
        try await recordMessage(id: id, state: state, reason: reason, retryIn: retryIn, attempted: true)
    }
}

extension CentralStore: OutboxStore {}

/// What the replica generator may ask of the master while it catches up: the feed after its
/// position, the rows a page of it names (tasks with their sites, refusals, people, teams, members,
/// sites, parts), a replica's whole current contents when one is rebuilt, and one consistent
/// snapshot for a full rebuild. Its catch-up and rebuilds get their connection as this
/// (``ReplicaGenerator``); the leader's lock and the feed's LISTEN stay with the loops that opened them.
public protocol GeneratorStore: Sendable {
    func feed(after position: Int64, limit: Int) async throws -> [FeedEntry]
    func currentTasks(ids: [Int64]) async throws -> [(task: FieldTask, location: Location?)]
    func refusals(ids: [Int64]) async throws -> [FieldRefusal]
    func taskOwners(atLocations ids: [Int64]) async throws -> [(teamID: Int64?, assigneeID: Int64?)]
    func teamIDs(ofPeople ids: [Int64]) async throws -> [Int64: Set<Int64>]
    func members(ofTeams ids: [Int64]) async throws -> [Int64: [Person]]
    func teams(ids: [Int64]) async throws -> [Team]
    func locations(ids: [Int64]) async throws -> [Location]
    func people(ids: [Int64]) async throws -> [Person]
    func parts(ids: [Int64]) async throws -> [Part]
    func currentTasks(forTeam teamID: Int64) async throws -> [(task: FieldTask, location: Location?)]
    func currentPersonalTasks(of personID: Int64) async throws -> [(task: FieldTask, location: Location?)]
    func withReplicationSnapshot<R: Sendable>(_ body: (ReplicationSnapshot) async throws -> R) async throws -> R
}

extension CentralStore: GeneratorStore {}
