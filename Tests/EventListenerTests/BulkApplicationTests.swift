import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// `teamwork_apply_field_changes` applies the common case of a batch (assignees
/// starting and completing their tasks) in bulk and the rest change by change.
/// Whatever the mix, a batch must end exactly as if each change had been applied
/// on its own, in position order.
@Suite("Event listener: a batch in bulk ends as its changes one by one")
struct BulkApplicationTests {
    /// The states a task can be in when field work about it arrives.
    enum Shape: CaseIterable {
        case annsTask, bosTask, freeInRed, blueTask, cancelled, startedByAnn, completedByBo
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func aRandomBatchAppliedWholeEndsAsItsChangesAppliedOneAtATime(seed: UInt64) async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let f = try await Fixtures.seed(store)
                var random = SplitMix(seed: seed)
                // Two identical copies of each shape: the batch goes to copy A whole, to copy B one change at a time.
                let base = Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000
                var pairs: [(a: Int64, b: Int64)] = []
                for index in 0..<28 {
                    let shape = Shape.allCases[index % Shape.allCases.count]
                    pairs.append((try await Self.make(shape, store, f, at: base), try await Self.make(shape, store, f, at: base)))
                }
                // Per task, a plain run of work (its assignee, or Ann for the others: starts, then perhaps a
                // completion), its starts and completions in any order, or a random mix; then the runs
                // interleaved in one sequence.
                let workers = [f.ann, f.bo, f.cy]
                let operations = ["start", "start", "complete", "complete", "reopen", "claim"]
                var runs: [[(pair: Int, worker: Person, operation: String)]] = []
                for (index, pair) in pairs.enumerated() {
                    let assignee = try await store.task(id: pair.a).assigneeID
                    if index < 3 || random.next(3) > 0 {
                        // The first three (Ann's task, Bo's task, a free one) always go the plain way, so the bulk
                        // path is exercised: a claim first (always for a free task, now and then otherwise), starts,
                        // then perhaps a completion.
                        // Usually its assignee (or a red member for a free task); now and then anyone, Cy included.
                        let worker =
                            index >= 3 && random.next(4) == 0
                            ? workers[random.next(3)]
                            : workers.first { $0.id == assignee } ?? workers[random.next(2)]
                        let claims = assignee == nil ? index < 3 || random.next(4) > 0 : random.next(6) == 0
                        let starts = index < 3 ? 1 + random.next(2) : random.next(3)
                        let completes = index < 3 || random.next(4) > 0
                        runs.append(
                            (claims ? [(index, worker, "claim")] : [])
                                + Array(repeating: (index, worker, "start"), count: starts)
                                + (completes ? [(index, worker, "complete")] : []))
                    } else if random.next(2) == 0 {
                        // Only the assignee's claims, starts and completions, in any order (a start after a completion...).
                        let worker = workers.first { $0.id == assignee } ?? f.ann
                        runs.append(
                            (0..<(2 + random.next(2))).map { _ in (index, worker, ["claim", "start", "complete"][random.next(3)]) })
                    } else {
                        runs.append(
                            (0..<(1 + random.next(7))).map { _ in
                                (index, workers[random.next(10) < 8 ? random.next(2) : 2], operations[random.next(operations.count)])
                            })
                    }
                }
                var sequence: [(pair: Int, worker: Person, operation: String)] = []
                while let next = runs.indices.filter({ !runs[$0].isEmpty }).randomElement(using: &random) {
                    sequence.append(runs[next].removeFirst())
                }
                var wholeBatch: [RecordedWorkerChange] = []
                var oneByOne: [RecordedWorkerChange] = []
                for (offset, item) in sequence.enumerated() {
                    let position = offset + 1
                    let made = base + Int64(position) * 1000
                    let rejection = item.pair >= 3 && random.next(15) == 0 ? "refused at sync" : nil
                    let note = item.operation == "complete" ? "note \(position)" : nil
                    for (copy, task) in [("a", pairs[item.pair].a), ("b", pairs[item.pair].b)] {
                        let change = RecordedWorkerChange(
                            position: Int64(position), changeID: "\(copy)-\(position)", personID: item.worker.id, taskID: task,
                            operation: item.operation, note: note, madeAt: made, receivedAt: made + 500, rejection: rejection)
                        if copy == "a" { wholeBatch.append(change) } else { oneByOne.append(change) }
                    }
                }
                let count = sequence.count
                let red = "team-\(f.red.id)"
                let whole = try await store.applyFieldChanges(
                    replica: red, wholeBatch, cursor: ListenerCursor(position: Int64(count), changeID: "a-\(count)"))
                var single: [FieldChangeOutcome] = []
                for change in oneByOne {
                    single += try await store.applyFieldChanges(
                        replica: red, source: "\(red)-single", [change],
                        cursor: ListenerCursor(position: change.position, changeID: change.changeID))
                }

                #expect(whole.count == count && single.count == count)
                let wholeByPosition = Dictionary(uniqueKeysWithValues: whole.map { (Int($0.changeID.dropFirst(2))!, $0) })
                let singleByPosition = Dictionary(uniqueKeysWithValues: single.map { (Int($0.changeID.dropFirst(2))!, $0) })
                for position in 1...count {
                    let a = try #require(wholeByPosition[position]), b = try #require(singleByPosition[position])
                    #expect(
                        a.applied == b.applied && a.conflict == b.conflict,
                        "change \(position) (\(wholeBatch[position - 1].operation)): \(a) vs \(b)")
                }
                #expect(whole.contains { $0.conflict != nil }, "the batch exercised the change-by-change rules")
                var folded = 0
                for pair in pairs {
                    folded += try await store.history(taskID: pair.a).filter { $0.changes["detail"]?.new?.contains("same batch") == true }
                        .count
                }
                #expect(folded >= 4, "and the bulk path (a claim or a start applied with the completion after it)")
                for pair in pairs {
                    let a = try await store.task(id: pair.a), b = try await store.task(id: pair.b)
                    #expect(FieldState(a) == FieldState(b), "task \(pair.a) vs \(pair.b)")
                }
                // Blue's tasks never were red's: changes from red's file leave no history on them (migration 0009).
                let blueTasks = Set(
                    pairs.enumerated()
                        .filter { Shape.allCases[$0.offset % Shape.allCases.count] == .blueTask }
                        .flatMap { [$0.element.a, $0.element.b] })
                let aboutRedTasks = (wholeBatch + oneByOne).filter { !blueTasks.contains($0.taskID ?? 0) }.count
                let counts = try await store.historyCountsByFieldChange().filter { !$0.key.hasPrefix("setup-") }
                #expect(
                    counts.count == aboutRedTasks && counts.values.allSatisfy { $0 == 1 },
                    "every change about a task of the replica leaves exactly one history entry")
                for task in blueTasks {
                    #expect(try await store.history(taskID: task).allSatisfy { $0.fieldChangeID == nil })
                }
            }
        }
    }

    /// Check-ins are most of what a fleet sends. Each person's position and
    /// last-seen time must end as if their check-ins had been applied one at a
    /// time in position order: an older check-in arriving later never moves a
    /// person back, a tie keeps the first, a refused one moves nobody.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func checkInsInABatchEndAsAppliedOneAtATime(seed: UInt64) async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let f = try await Fixtures.seed(store)
                var random = SplitMix(seed: seed)
                let base = Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000
                // Pairs of workers: copy A takes the batch whole, copy B one change at a time.
                var pairs: [(a: Person, b: Person)] = []
                for index in 0..<4 {
                    func person(_ copy: String) async throws -> Person {
                        try await store.addPerson(
                            try NewPerson(
                                firstName: "w\(index)\(copy)", lastName: "Test",
                                email: "w\(index)\(copy)@example.org", role: .worker))
                    }
                    pairs.append((try await person("a"), try await person("b")))
                }
                let red = "team-\(f.red.id)"
                // One pair was seen before, in the middle of the batch's times: older check-ins must not move them.
                for (copy, person) in [("a", pairs[0].a), ("b", pairs[0].b)] {
                    let seen = base + 4_000
                    _ = try await store.applyFieldChanges(
                        replica: red, source: "setup-\(copy)",
                        [
                            RecordedWorkerChange(
                                position: 1, changeID: "setup-\(copy)", personID: person.id, taskID: nil,
                                operation: "checkin", note: nil, madeAt: seen, receivedAt: seen,
                                latitude: 10, longitude: 10)
                        ],
                        cursor: ListenerCursor(position: 1, changeID: "setup-\(copy)"))
                }
                var whole: [RecordedWorkerChange] = []
                var single: [RecordedWorkerChange] = []
                for position in 1...40 {
                    let pair = pairs[random.next(pairs.count)]
                    // Few distinct times, so ties and check-ins older than the last one are common.
                    let made = base + Int64(random.next(8)) * 1_000
                    let received = random.next(5) == 0 ? made - 2_000 : made + 500
                    let (latitude, longitude) = (Double(random.next(90)), Double(random.next(180)))
                    let rejection = random.next(10) == 0 ? "refused at sync" : nil
                    for (copy, person) in [("a", pair.a), ("b", pair.b)] {
                        let change = RecordedWorkerChange(
                            position: Int64(position), changeID: "\(copy)-\(position)", personID: person.id, taskID: nil,
                            operation: "checkin", note: nil, madeAt: made, receivedAt: received,
                            latitude: latitude, longitude: longitude, rejection: rejection)
                        if copy == "a" { whole.append(change) } else { single.append(change) }
                    }
                }
                let wholeOutcomes = try await store.applyFieldChanges(
                    replica: red, whole, cursor: ListenerCursor(position: 40, changeID: "a-40"))
                var singleOutcomes: [FieldChangeOutcome] = []
                for change in single {
                    singleOutcomes += try await store.applyFieldChanges(
                        replica: red, source: "\(red)-single", [change],
                        cursor: ListenerCursor(position: change.position, changeID: change.changeID))
                }
                let a = Dictionary(uniqueKeysWithValues: wholeOutcomes.map { ($0.changeID.dropFirst(2), $0) })
                let b = Dictionary(uniqueKeysWithValues: singleOutcomes.map { ($0.changeID.dropFirst(2), $0) })
                #expect(a.count == 40 && b.count == 40, "every check-in is in the ledger once")
                for position in 1...40 {
                    let key = Substring(String(position))
                    #expect(a[key]?.applied == b[key]?.applied && a[key]?.conflict == b[key]?.conflict, "check-in \(position)")
                }
                func seen(_ person: Person) async throws -> [String] {
                    let rows = try await store.rows(
                        """
                        SELECT p.last_seen_at::text, l.latitude::text, l.longitude::text
                        FROM people p LEFT JOIN locations l ON l.person_id = p.id AND l.kind = 'person' WHERE p.id = \(person.id)
                        """)
                    let (time, latitude, longitude) = try rows[0].decode((String?, String?, String?).self)
                    return [time ?? "never", latitude ?? "-", longitude ?? "-"]
                }
                for pair in pairs {
                    let (stateA, stateB) = (try await seen(pair.a), try await seen(pair.b))
                    #expect(stateA == stateB, "\(pair.a.firstName) vs \(pair.b.firstName)")
                }
                #expect(try await seen(pairs[0].a)[0] != "never")
            }
        }
    }

    /// What field work decides about a task.
    struct FieldState: Equatable {
        var status: TaskStatus
        var assigneeID: Int64?
        var startedAt: Date?
        var completedAt: Date?
        var completedBy: Int64?
        var completionNote: String?

        init(_ task: FieldTask) {
            (status, assigneeID, startedAt) = (task.status, task.assigneeID, task.startedAt)
            (completedAt, completedBy, completionNote) = (task.completedAt, task.completedBy, task.completionNote)
        }
    }

    static func make(_ shape: Shape, _ store: CentralStore, _ f: Fixtures, at base: Int64) async throws -> Int64 {
        switch shape {
        case .annsTask: return try await store.createTask(try f.task(team: f.red, assignee: f.ann)).id
        case .bosTask: return try await store.createTask(try f.task(team: f.red, assignee: f.bo)).id
        case .freeInRed: return try await store.createTask(try f.task(team: f.red)).id
        case .blueTask: return try await store.createTask(try f.task(team: f.blue, assignee: f.cy)).id
        case .cancelled:
            let task = try await store.createTask(try f.task(team: f.red, assignee: f.ann))
            return try await store.cancelTask(id: task.id).id
        case .startedByAnn, .completedByBo:
            let (worker, operation) = shape == .startedByAnn ? (f.ann, "start") : (f.bo, "complete")
            let task = try await store.createTask(try f.task(team: f.red, assignee: worker))
            let made = base - 3_600_000
            let id = "setup-\(task.id)"
            _ = try await store.applyFieldChanges(
                replica: "team-\(f.red.id)", source: "setup-\(task.id)",
                [
                    RecordedWorkerChange(
                        position: 1, changeID: id, personID: worker.id, taskID: task.id, operation: operation,
                        note: "earlier", madeAt: made, receivedAt: made)
                ],
                cursor: ListenerCursor(position: 1, changeID: id))
            return task.id
        }
    }
}
