import Foundation
import SyncProtocol
import TeamworkModel
import TeamworkTestSupport
import Testing

/// The rules and the effect of a worker change, as the device and the replica
/// apply them (SyncProtocol), against the table of cases the master's
/// PL/pgSQL is held to as well (`MasterContractTests`).
@Suite("Field work contract: device and replica")
struct FieldChangeContractTests {
    static let (me, other): (Int64, Int64) = (7, 8)

    static func facts(_ task: FieldChangeCase.Task, of item: FieldChangeCase, changedAt: Date? = nil) -> TaskFacts {
        TaskFacts(
            assigneeID: task.assignee?.id(me: me, other: other), status: task.status, startedAt: task.startedAt,
            completedAt: task.completedAt, completedBy: task.completedBy?.id(me: me, other: other),
            completionNote: task.completionNote, requiredSkills: FieldChangeCase.requiredSkills,
            checklist: item.form, answers: item.answers(task, me: me, other: other, changedAt: changedAt))
    }

    @Test(arguments: try FieldChangeCase.all())
    func theEndpointTakesOrRefusesTheChangeAndItsEffectIsTheTablesTaskAfter(_ item: FieldChangeCase) throws {
        let operation = try #require(WorkerChange.Operation(rawValue: item.change.operation))
        let change = WorkerChange(
            id: "contract", operation: operation, taskID: 1, note: item.change.note, madeAt: item.change.madeAt,
            item: item.change.item, value: item.change.value, blob: item.change.blob, size: item.change.size,
            mediaType: item.change.mediaType, signer: item.change.signer)
        let received = item.change.madeAt.addingTimeInterval(FieldChangeCase.deliveryDelay)
        let before = Self.facts(item.before, of: item)
        let reason = change.rejection(
            by: FieldWorker(id: Self.me, skills: item.skills), task: before, inTeam: item.inTeam,
            receivedAt: received)
        #expect((reason == nil) == item.endpointAccepts, "\(reason ?? "accepted")")
        if reason == nil {
            let at = change.effectiveTime(receivedAt: received)
            #expect(change.effect(on: before, by: Self.me, at: at) == Self.facts(item.after, of: item, changedAt: at))
        }
    }

    @Test func theTableCoversEveryOperationStatusOwnershipAndSkill() throws {
        let cases = try FieldChangeCase.all()
        let operations = Set(cases.map(\.change.operation))
        // Every operation about a task (a check-in is about the worker, and has tests of its own).
        #expect(operations == Set(WorkerChange.Operation.allCases.map(\.rawValue)).subtracting(["checkin"]))
        // Every kind of checklist item is answered in some case, and a completion meets a missing answer.
        let kinds = Set(cases.compactMap { item in item.change.item.flatMap { key in item.checklist?.first { $0.key == key }?.kind } })
        #expect(kinds == Set(ChecklistItem.Kind.allCases))
        #expect(cases.contains { $0.master.conflict == "missing_answers" })
        #expect(Set(cases.map(\.before.status)) == Set(TaskStatus.allCases))
        #expect(Set(cases.map { $0.before.assignee?.rawValue ?? "free" }) == ["me", "other", "free"])
        #expect(Set(cases.map(\.skills.isEmpty)) == [true, false])
        // Every difference between the endpoint and the master is explained.
        #expect(cases.allSatisfy { ($0.endpointAccepts == $0.master.applied) || $0.whyTheyDiffer != nil })
    }
}
