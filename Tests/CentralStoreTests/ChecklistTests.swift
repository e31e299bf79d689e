import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Checklists on the master: one table of answer cases for the Swift rules and
/// the master's SQL, versions that never change, and tasks that keep theirs.
@Suite("Checklists")
struct ChecklistTests {
    struct AnswerCase: Decodable, Sendable, CustomStringConvertible {
        var name: String
        var item: ChecklistItem
        var value: String
        var accepted: Bool
        var description: String { name }

        static func all() throws -> [AnswerCase] {
            struct File: Decodable { var cases: [AnswerCase] }
            let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appending(path: "../Contract/checklist-answers.json").standardizedFileURL
            return try JSONDecoder().decode(File.self, from: Data(contentsOf: url)).cases
        }
    }

    static let items = [
        ChecklistItem(key: "isolated", kind: .check, label: "Isolator locked out", required: true),
        ChecklistItem(key: "reading", kind: .number, label: "Meter reading", required: true, unit: "kWh", min: "0"),
        ChecklistItem(key: "earth", kind: .number, label: "Earth resistance", unit: "Ω", min: "0", max: "1"),
        ChecklistItem(key: "seal", kind: .choice, label: "Meter seal", options: ["intact", "broken", "replaced"]),
    ]

    @Test func theDeviceTheEndpointAndTheMasterTakeTheSameAnswers() async throws {
        let cases = try AnswerCase.all()
        #expect(Set(cases.map(\.item.kind)) == Set(ChecklistItem.Kind.allCases), "every kind is in the table")
        #expect(cases.contains { $0.accepted } && cases.contains { !$0.accepted })
        for item in cases {
            #expect(
                (item.item.problem(with: item.value) == nil) == item.accepted,
                "Swift: \(item.name): \(item.item.problem(with: item.value) ?? "taken")")
        }
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                for item in cases {
                    let json = String(decoding: try JSONEncoder().encode(item.item), as: UTF8.self)
                    let problem = try await store.connection.query(
                        "SELECT teamwork_checklist_problem(\(json)::jsonb, \(item.value))", logger: store.logger
                    ).collect().first!.decode(String?.self)
                    #expect((problem == nil) == item.accepted, "SQL: \(item.name): \(problem ?? "taken")")
                }
                // What is still to answer and what failed, on both sides.
                let answers: [[String: ChecklistAnswer]] = [
                    [:],
                    ["isolated": .init(value: "no", by: 1, at: 0)],
                    ["isolated": .init(value: "yes", by: 1, at: 0), "reading": .init(value: "5", by: 1, at: 0)],
                    ["reading": .init(value: "5", by: 1, at: 0), "seal": .init(value: "broken", by: 1, at: 0)],
                ]
                let form = ChecklistForm(name: "visit", version: 1, items: Self.items)
                let items = String(decoding: try JSONEncoder().encode(Self.items), as: UTF8.self)
                for given in answers {
                    let row = try await store.connection.query(
                        "SELECT teamwork_checklist_missing(\(items)::jsonb, \(FieldTask.json(given))::jsonb), teamwork_checklist_failed(\(items)::jsonb, \(FieldTask.json(given))::jsonb)",
                        logger: store.logger
                    ).collect().first!.decode(([String], [String]).self)
                    #expect(row.0 == form.missing(in: given) && row.1 == form.failed(in: given), "\(given): \(row)")
                }
            }
        }
    }

    @Test func aPublishedVersionNeverChangesAndAnUpdatePublishesTheNextOne() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let first = try await store.publishChecklist(name: "Substation visit", items: Self.items, existing: false)
                #expect(first.version == 1)
                await #expect(throws: TeamworkError.self) {
                    try await store.publishChecklist(name: "Substation visit", items: Self.items, existing: false)
                }
                await #expect(throws: TeamworkError.self) {
                    try await store.publishChecklist(name: "Nowhere", items: Self.items, existing: true)
                }
                let same = try await store.publishChecklist(name: "Substation visit", items: Self.items, existing: true)
                #expect(same.version == 1, "the same items publish nothing")
                var changed = Self.items
                changed[2].max = "2"
                let second = try await store.publishChecklist(name: "Substation visit", items: changed, existing: true)
                #expect(second.version == 2)
                #expect(try await store.checklist(named: "Substation visit", version: 1).items == Self.items)
                #expect(try await store.checklist(named: "Substation visit").items == changed)
                // Not even by hand: the database refuses to change or remove a published version.
                await #expect(throws: (any Error).self) {
                    try await store.connection.query("UPDATE checklist_versions SET items = '[]' WHERE version = 1", logger: store.logger)
                }
                await #expect(throws: (any Error).self) {
                    try await store.connection.query("DELETE FROM checklist_versions WHERE version = 1", logger: store.logger)
                }
                #expect(try await store.checklists().map(\.latestVersion) == [2])
            }
        }
    }

    @Test(arguments: [
        ("a bad key", [ChecklistItem(key: "Bad Key", kind: .check, label: "x")]),
        ("twice the same key", [ChecklistItem(key: "a", kind: .check, label: "x"), ChecklistItem(key: "a", kind: .text, label: "y")]),
        ("a choice of one", [ChecklistItem(key: "a", kind: .choice, label: "x", options: ["only"])]),
        ("a range upside down", [ChecklistItem(key: "a", kind: .number, label: "x", min: "2", max: "1")]),
        ("a range that is not a number", [ChecklistItem(key: "a", kind: .number, label: "x", max: "1e3")]),
        ("a unit on a check", [ChecklistItem(key: "a", kind: .check, label: "x", unit: "V")]),
        ("a label on two lines", [ChecklistItem(key: "a", kind: .check, label: "x\ny")]),
        ("a label with an escape", [ChecklistItem(key: "a", kind: .check, label: "x\u{1B}[2J")]),
        ("no items", []),
    ])
    func aChecklistThatCannotBeFilledInIsRefusedAndNothingIsPublished(_ why: String, _ items: [ChecklistItem]) async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                await #expect(throws: TeamworkError.self, "\(why)") {
                    try await store.publishChecklist(name: "Broken", items: items, existing: false)
                }
                let published = try await store.checklists()
                #expect(published.isEmpty)
            }
        }
    }

    @Test func aTaskKeepsTheVersionItGotAndAnotherChecklistStartsItsAnswersAnew() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                try await store.publishChecklist(name: "Visit", items: Self.items, existing: false)
                try await store.publishChecklist(name: "Other", items: [Self.items[0]], existing: false)
                var new = try world.task("inspect", team: world.red, assignee: world.ann)
                new.checklist = "Visit"
                let task = try await store.createTask(new)
                #expect(task.checklist == ChecklistForm(name: "Visit", version: 1, items: Self.items))
                try await store.publishChecklist(name: "Visit", items: Array(Self.items.prefix(2)), existing: true)
                #expect(try await store.task(id: task.id).checklist?.version == 1, "the task keeps the version it got")
                let later = try await store.createTask(new)
                #expect(later.checklist?.version == 2, "a new task gets the latest")
                await #expect(throws: TeamworkError.self) {
                    var unknown = new
                    unknown.checklist = "Nope"
                    _ = try await store.createTask(unknown)
                }

                // Answers given, then the same checklist named again keeps them; another one starts anew.
                try await store.connection.query(
                    """
                    UPDATE tasks SET answers = '{"isolated": {"value": "yes", "by": 1, "at": 0}}' WHERE id = \(task.id)
                    """, logger: store.logger)
                let same = try await store.updateTask(id: task.id, try TaskChanges(checklist: .some("Visit")))
                #expect(same.checklist?.version == 1 && same.answers.count == 1)
                let other = try await store.updateTask(id: task.id, try TaskChanges(checklist: .some("Other")))
                #expect(other.checklist?.name == "Other" && other.answers.isEmpty)
                let none = try await store.updateTask(id: task.id, try TaskChanges(checklist: .some(nil)))
                #expect(none.checklist == nil && none.answers.isEmpty)
            }
        }
    }

    @Test func aPlansOccurrencesCarryTheVersionPublishedWhenEachIsMade() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                try await store.publishChecklist(name: "Round", items: Self.items, existing: false)
                let today = Zone.utc.date(of: Date())
                let plan = try await store.addPlan(
                    try NewPlan(
                        title: "Daily round", assignment: try Assignment(teamID: world.red.id, assigneeID: nil), rule: "FREQ=DAILY",
                        startsOn: today, windowStart: LocalTime(hour: 0, minute: 0)!, durationMinutes: 30, horizonDays: 1,
                        checklist: "Round"))
                #expect(plan.checklist == "Round")
                _ = try await store.generatePlans(only: plan.id)
                let first = try await store.occurrences(ofPlan: plan.id).map(\.task)
                #expect(!first.isEmpty && first.allSatisfy { $0.checklist?.version == 1 })
                // A new version: occurrences made from now on get it, those made keep theirs.
                try await store.publishChecklist(name: "Round", items: [Self.items[0]], existing: true)
                _ = try await store.generatePlans(until: today.adding(days: 4), only: plan.id)
                let all = try await store.occurrences(ofPlan: plan.id).map(\.task)
                #expect(all.filter { first.map(\.id).contains($0.id) }.allSatisfy { $0.checklist?.version == 1 })
                #expect(
                    all.contains { $0.checklist?.version == 2 },
                    "\(all.map { ($0.planDate?.description ?? "", $0.checklist?.version ?? 0) })")
                await #expect(throws: TeamworkError.self) {
                    try await store.addPlan(
                        try NewPlan(
                            title: "Nope", assignment: try Assignment(teamID: world.red.id, assigneeID: nil), rule: "FREQ=DAILY",
                            startsOn: today, windowStart: LocalTime(hour: 0, minute: 0)!, durationMinutes: 30, checklist: "Missing"))
                }
            }
        }
    }
}
