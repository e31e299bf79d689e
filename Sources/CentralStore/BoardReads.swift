import Foundation
import TeamworkModel

/// What the board's reads may ask of the master: the day, a task, the conflicts inbox, the
/// people, teams, sites and checklists its forms offer, and a dispatcher's session. The board's
/// shared read connections (`SharedStore<any BoardReads>`) hand its routes the store as this; its
/// changes go through their own pool, as the acting dispatcher (docs/architecture.md, "What a
/// surface may ask").
public protocol BoardReads: Sendable {
    // Sessions
    func boardSession(secret: String) async throws -> BoardSession?
    func openBoardSession(tokenSecret: String, lifetime: Duration) async throws -> BoardSignIn
    func closeBoardSession(secret: String) async throws
    func boardHead() async throws -> String
    // The day, the map and a task
    func listTasks(_ filter: TaskFilter) async throws -> [FieldTask]
    func tasks(ids: [Int64]) async throws -> [Int64: FieldTask]
    func task(id: Int64) async throws -> FieldTask
    func history(taskID: Int64) async throws -> [TaskHistoryEntry]
    func suggest(taskID: Int64, teamID: Int64?, limit: Int?, now: Date) async throws -> Ranking
    func appointments(taskIDs: [Int64]) async throws -> [Int64: Appointment]
    func attachment(id: Int64) async throws -> AttachmentRecord
    func attachments(ofTask id: Int64) async throws -> [AttachmentRecord]
    func materials(ofTask id: Int64) async throws -> [MaterialLine]
    func timeEntries(ofTask id: Int64) async throws -> [TimeEntry]
    func taskCustomer(taskID: Int64) async throws -> Customer?
    func customers(search: String?, limit: Int) async throws -> [Customer]
    func customerMessages(taskID: Int64?, customerID: Int64?, limit: Int) async throws -> [CustomerMessage]
    func messageHolds() async throws -> [MessageHold]
    func conflicts(includeResolved: Bool, taskID: Int64?) async throws -> [FieldConflict]
    func openConflictsByTask() async throws -> [Int64: (count: Int, first: Int64)]
    func workerPositions(personIDs: [Int64]?, teamID: Int64?) async throws -> [WorkerPosition]
    // Who and where
    func listPeople(role: Role?, teamID: Int64?) async throws -> [Person]
    func listTokens(personID: Int64?) async throws -> [AccessToken]
    func listTeams() async throws -> [(team: Team, members: Int, openTasks: Int)]
    func teamIDsByPerson() async throws -> [Int64: [Int64]]
    func listLocations(kind: LocationKind?) async throws -> [Location]
    func location(id: Int64) async throws -> Location
    func locations(ids: [Int64]) async throws -> [Location]
    func checklists() async throws -> [ChecklistSummary]
    func workTimes(personIDs ids: [Int64], days: [LocalDate], zone: Zone) async throws -> [Int64: WorkTime]
    func workTimes(
        personIDs ids: [Int64], day: LocalDate, zone: Zone
    ) async throws -> [Int64: (week: WorkingWeek, exception: DayHours??, absences: [Absence])]
    func dayFacts(teamID: Int64, day: LocalDate) async throws -> DayFacts
}

extension CentralStore: BoardReads {}
