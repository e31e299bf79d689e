import Foundation
import Testing

@testable import TeamworkModel

/// A task's history reads in words on the task's clock (seen before: field names, `assignee_id: 3 → 5`,
/// JSON with epoch milliseconds and UTC instants).
@Suite("History in words")
struct HistoryWordsTests {
    let words = HistoryWords(people: [3: "Ann Field", 5: "Bo Berg"], teams: [1: "red", 2: "blue"], zone: try! Zone("Europe/Stockholm"))

    func historyEntry(_ changes: [String: FieldChange], action: String = "updated", field: String? = nil) -> TaskHistoryEntry {
        TaskHistoryEntry(
            id: 1, taskID: 9, action: action, actorID: 3, databaseUser: "teamwork_manager",
            changedAt: Date(timeIntervalSince1970: 1_764_230_400), changes: changes, fieldChangeID: field)
    }

    @Test func peopleTeamsTimesAndStatusesAreInWordsOnTheTasksClock() {
        let lines = words.lines(
            historyEntry([
                "assignee_id": FieldChange(old: "3", new: "5"), "team_id": FieldChange(old: "1", new: nil),
                "status": FieldChange(old: "assigned", new: "in_progress"),
                "window_start": FieldChange(old: "2026-11-27T08:00:00+00:00", new: "2026-11-27T09:30:00+00:00"),
            ]))
        #expect(
            lines == [
                "status: assigned → in progress", "reassigned from Ann Field to Bo Berg", "taken out of team red: a personal task",
                "window from: 2026-11-27 09:00 CET → 2026-11-27 10:30 CET",
            ])
        #expect(words.when(Date(timeIntervalSince1970: 1_764_230_400)) == "2025-11-27 09:00 CET")
        #expect(words.who(historyEntry([:])) == "Ann Field")
    }

    @Test func aFieldChangeSetAsideSaysWhatAndWhy() {
        let lines = words.lines(
            historyEntry(
                [
                    "operation": FieldChange(old: nil, new: "complete"), "applied": FieldChange(old: nil, new: "false"),
                    "conflict": FieldChange(old: nil, new: "reassigned"), "detail": FieldChange(old: nil, new: "given to Bo"),
                ], action: "field_change"))
        #expect(lines == ["completed on the device: not applied (reassigned): given to Bo"])
        #expect(words.what(historyEntry([:], action: "field_change")) == "From the field")
    }

    @Test func whatWasUsedReadsAsOneLineAndARefusedOneSaysWhy() {
        func use(_ item: String?, _ note: String?, _ value: String, applied: Bool = true) -> [String] {
            var changes: [String: FieldChange] = [
                "operation": FieldChange(old: nil, new: "use"), "applied": FieldChange(old: nil, new: String(applied)),
                "value": FieldChange(old: nil, new: value),
            ]
            if let item { changes["item"] = FieldChange(old: nil, new: item) }
            if let note { changes["note"] = FieldChange(old: nil, new: note) }
            if !applied {
                changes["conflict"] = FieldChange(old: nil, new: "invalid_material")
                changes["detail"] = FieldChange(old: nil, new: "no part NOPE-9 in the catalogue")
            }
            return words.lines(historyEntry(changes, action: "field_change"))
        }
        #expect(use("CBL-10", nil, "6.5") == ["recorded what was used on the device: used 6.5 CBL-10"])
        #expect(use(nil, "Heat-shrink sleeve", "2") == ["recorded what was used on the device: used 2 “Heat-shrink sleeve”"])
        #expect(use("FUSE-63", nil, "0") == ["recorded what was used on the device: removed FUSE-63"])
        #expect(
            use("NOPE-9", nil, "1", applied: false)
                == ["recorded what was used on the device: used 1 NOPE-9: not applied (invalid material): no part NOPE-9 in the catalogue"])
    }

    @Test func answersShowTheirValueWhoAndWhenNotMilliseconds() {
        let line = words.lines(
            historyEntry(["answers": FieldChange(old: nil, new: #"{"reading": {"value": "48213", "by": 3, "at": 1764230400000}}"#)]))
        #expect(line == ["answers: reading = 48213 (Ann Field, 09:00)"])
    }

    /// Seen on main: at creation the history listed "needs: nothing → nothing" and "plan
    /// superseded: none → false". A creation says only what the task was made with; a change that
    /// reads the same before and after says nothing.
    @Test func aCreationSaysWhatItWasMadeWithAndNothingReadsTheSameBeforeAndAfter() {
        let created = words.lines(
            historyEntry(
                [
                    "required_skills": FieldChange(old: nil, new: "[]"), "plan_superseded": FieldChange(old: nil, new: "false"),
                    "status": FieldChange(old: nil, new: "open"), "title": FieldChange(old: nil, new: "Fix the pump"),
                    "due_at": FieldChange(old: nil, new: "2026-11-27T08:00:00+00:00"), "description": FieldChange(old: nil, new: ""),
                ], action: "created"))
        #expect(created == ["status: open", "due: 2026-11-27 09:00 CET", "title: “Fix the pump”"])
        let same = words.lines(
            historyEntry(["required_skills": FieldChange(old: "[]", new: nil), "priority": FieldChange(old: "high", new: "urgent")]))
        #expect(same == ["priority: high → urgent"])
    }

    /// Seen on main: "1 tasks" on the board, "1 change(s)" from the tools.
    @Test func aCountIsSaidWithItsNounInTheRightNumber() {
        #expect(quantity(1, "task") == "1 task" && quantity(0, "task") == "0 tasks" && quantity(3, "open task") == "3 open tasks")
        #expect(quantity(2, "change waits", "changes wait") == "2 changes wait")
    }
}
