import Foundation
import SyncProtocol
import TeamworkModel
import Testing

/// A task in a page of changes is its declaration (TaskSchema): its keys are the columns that travel, each in
/// its form (dates as milliseconds, skills a list, the checklist an object, answers a list), and a device reads
/// back the task the server sent.
@Suite struct TaskOnTheWireTests {
    static let at = Date(millisecondsSince1970: 1_796_000_000_000)

    static var everything: FieldTask {
        var task = FieldTask(
            id: 7, title: "Meter", description: "swap it", priority: .high, status: .inProgress, teamID: 2, assigneeID: 3,
            locationID: 4, dueAt: at, createdBy: 1, createdAt: at, updatedAt: at, startedAt: at, completedAt: nil, completedBy: nil,
            completionNote: "half done", version: 5, requiredSkills: ["climbing", "electrical"],
            window: try! TimeWindow(start: at, end: at.addingTimeInterval(3600)), timeZone: "Europe/Stockholm", planID: 9,
            planDate: LocalDate(year: 2026, month: 12, day: 7),
            checklist: ChecklistForm(name: "Visit", version: 1, items: [ChecklistItem(key: "reading", kind: .number, label: "Reading")]),
            answers: ["reading": ChecklistAnswer(value: "42", by: 3, at: 1_796_000_000_000)], durationMinutes: 45, pinned: true,
            plannedStart: at, customerID: 11, customerFirstName: "Eva", visit: "confirmed")
        task.reference = "WO-1182"
        return task
    }

    func wire(_ task: ChangePage.Task) throws -> [String: Any] {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return try #require(try JSONSerialization.jsonObject(with: encoder.encode(task)) as? [String: Any])
    }

    @Test func aTaskTravelsUnderTheDeclaredKeysInTheirFormsAndComesBackTheSame() throws {
        let sent = ChangePage.Task(Self.everything, rowVersion: 12)
        let object = try wire(sent)
        // Every key is a travelling column's (or the row's version), and each set here is there.
        #expect(Set(object.keys).isSubset(of: Set(TaskSchema.travelling.map(\.wireKey) + ["row_version"])))
        let set = [
            "id", "title", "description", "priority", "status", "team_id", "assignee_id", "location_id", "due_at", "created_at",
            "updated_at", "started_at", "completion_note", "master_version", "required_skills", "window_start", "window_end",
            "time_zone", "plan_id", "plan_date", "checklist", "answers", "duration_minutes", "planned_start", "customer_first_name",
            "visit", "reference", "row_version",
        ]
        #expect(Set(set).isSubset(of: Set(object.keys)), "\(Set(set).subtracting(object.keys))")
        #expect(object["completed_at"] == nil && object["completed_by"] == nil, "absent values are left out")
        #expect(object["due_at"] as? Int64 == 1_796_000_000_000)
        #expect(object["master_version"] as? Int == 5)
        #expect(object["required_skills"] as? [String] == ["climbing", "electrical"])
        #expect((object["checklist"] as? [String: Any])?["name"] as? String == "Visit")
        #expect(((object["answers"] as? [[String: Any]])?.first)?["item"] as? String == "reading")
        #expect(object["plan_date"] as? String == "2026-12-07")
        // What never leaves the master: who made it, the pin, the customer's record.
        #expect(object["created_by"] == nil && object["pinned"] == nil && object["customer_id"] == nil)

        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let received = try TeamworkJSON.decoder().decode(ChangePage.Task.self, from: encoder.encode(sent))
        #expect(received.task == TaskSchema.travelled(Self.everything) && received.rowVersion == sent.rowVersion)
        #expect(received.customerFirstName == "Eva" && received.durationMinutes == 45 && received.rowVersion == 12)
        #expect(received.reference == "WO-1182")
    }

    @Test func aTaskFromAnOlderServerReadsWithTheDefaultsOfWhatItLacks() throws {
        let old = #"""
            {"id": 1, "title": "Meter", "description": "", "priority": "normal", "created_at": 0, "updated_at": 0,
             "master_version": 1, "status": "open", "row_version": 3}
            """#
        let task = try TeamworkJSON.decoder().decode(ChangePage.Task.self, from: Data(old.utf8))
        #expect(task.timeZone == "UTC" && task.requiredSkills.isEmpty && task.checklist == nil && task.answers.isEmpty)
    }

    @Test func aTaskWithoutATitleOrWithAWrongTypeIsADecodingError() throws {
        let untitled =
            #"{"id": 1, "description": "", "priority": "normal", "created_at": 0, "updated_at": 0, "master_version": 1, "status": "open", "row_version": 3}"#
        #expect(throws: DecodingError.self) { try TeamworkJSON.decoder().decode(ChangePage.Task.self, from: Data(untitled.utf8)) }
        let wrong =
            #"{"id": "one", "title": "x", "description": "", "priority": "normal", "created_at": 0, "updated_at": 0, "master_version": 1, "status": "open", "row_version": 3}"#
        #expect(throws: DecodingError.self) { try TeamworkJSON.decoder().decode(ChangePage.Task.self, from: Data(wrong.utf8)) }
    }
}
