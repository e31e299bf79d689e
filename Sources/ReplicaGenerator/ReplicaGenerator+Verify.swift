import CentralStore
import Foundation
import TeamDatabase
import TeamworkModel

/// One difference between a replica and what the master says it should hold.
public struct Drift: Sendable, Equatable, CustomStringConvertible {
    public var replica: ReplicaID
    public var message: String

    public var description: String { "\(replica.fileName): \(message)" }
}

extension ReplicaGenerator {
    /// Compares every replica with one snapshot of the master and lists the
    /// differences; an empty list means every replica holds exactly what the
    /// master says (tasks, their master fields, members, locations, position, and the parts catalogue
    /// in the common replica).
    public func verify() async throws -> [Drift] {
        let checkpoint = try checkpoint() ?? 0
        let present = Set(try replicas.replicas())
        return try await CentralStore.withStore(configuration.databaseURL, logger: logger) { store in
            try await store.withReplicationSnapshot { snapshot in
                var drift: [Drift] = []
                let position = snapshot.feedPosition
                let common = try await CommonData.load(snapshot)
                let teams = common.teams
                var expected: Set<ReplicaID> = Set(teams.map { .team($0.id) })

                var group: ReplicaID?
                var rows: [FieldTask] = []
                var checked: Set<ReplicaID> = []
                // Each replica file is read off the cooperative threads: a read may wait up to SQLite's busy
                // timeout on a live service's write, and in a busy process that would stall every other task.
                func check() async throws {
                    guard let replica = group, checked.insert(replica).inserted else { return }
                    let (held, members) = (rows, common.members(of: replica))
                    drift += try await blockingWork {
                        try compare(replica, rows: held, members: members, position: position, checkpoint: checkpoint)
                    }
                    rows.removeAll(keepingCapacity: true)
                }
                try await snapshot.forEachTask { task in
                    guard let replica = ReplicaID.holding(teamID: task.teamID, assigneeID: task.assigneeID) else { return }
                    if replica != group {
                        try await check()
                        group = replica
                        expected.insert(replica)
                    }
                    rows.append(task)
                }
                try await check()
                for team in teams {
                    group = .team(team.id)
                    try await check()
                }
                for case .person(let id) in present {
                    // A personal replica whose owner has no personal task left must be empty.
                    group = .person(id)
                    try await check()
                }
                for case .team(let id) in present where !teams.contains(where: { $0.id == id }) {
                    drift.append(Drift(replica: .team(id), message: "the team no longer exists; its replica should be retired"))
                }
                if !present.contains(.common) {
                    drift.append(Drift(replica: .common, message: "missing"))
                } else {
                    let parts = common.parts
                    drift += try await blockingWork { compareCatalogue(parts) }
                }
                return drift
            }
        }
    }

    /// The common replica's parts catalogue against the master's.
    private func compareCatalogue(_ parts: [Part]) -> [Drift] {
        var drift: [Drift] = []
        func note(_ message: String) { drift.append(Drift(replica: .common, message: message)) }
        let held: [Int64: String]
        do {
            held = try ReplicaContents.catalogue(path: replicas.path(of: .common))
        } catch {
            note("unreadable: \(error)")
            return drift
        }
        // (Not "behind" by its feed position: the common file moves only when common data does, and the
        // generator's progress shows in the team files.)
        let wanted = Dictionary(
            uniqueKeysWithValues: parts.map { part in
                (
                    part.id,
                    ReplicaContents.catalogueLine(
                        id: part.id, code: part.code, name: part.name, unit: part.unit.rawValue, price: part.unitPrice,
                        currency: part.currency, retired: part.retiredAt != nil)
                )
            })
        for id in Set(held.keys).subtracting(wanted.keys).sorted() { note("holds part \(id), which the master does not have") }
        for id in Set(wanted.keys).subtracting(held.keys).sorted() { note("lacks part \(id)") }
        for (id, line) in wanted.sorted(by: { $0.key < $1.key }) where held[id].map({ $0 != line }) == true {
            note("part \(id) differs from the master: \(held[id]!) instead of \(line)")
        }
        return drift
    }

    private func compare(
        _ replica: ReplicaID, rows: [FieldTask], members: [Person],
        position: Int64, checkpoint: Int64
    ) throws -> [Drift] {
        var drift: [Drift] = []
        func note(_ message: String) { drift.append(Drift(replica: replica, message: message)) }
        guard replicas.exists(replica) else {
            if !rows.isEmpty || replica.isTeam { note("missing (\(quantity(rows.count, "task")) expected)") }
            return drift
        }
        let contents: ReplicaContents
        do {
            contents = try ReplicaContents.read(path: replicas.path(of: replica))
        } catch {
            note("unreadable: \(error)")
            return drift
        }
        if max(contents.meta.feedPosition, checkpoint) < position {
            note("behind: at feed position \(max(contents.meta.feedPosition, checkpoint)), the master is at \(position)")
        }
        let held = Dictionary(uniqueKeysWithValues: contents.tasks.map { ($0.master.id, $0) })
        let wanted = Dictionary(uniqueKeysWithValues: rows.map { ($0.id, $0) })
        for id in Set(held.keys).subtracting(wanted.keys).sorted() {
            note("holds task \(id), which the master does not give to it")
        }
        for id in Set(wanted.keys).subtracting(held.keys).sorted() {
            note("lacks task \(id)")
        }
        for (id, task) in wanted.sorted(by: { $0.key < $1.key }) {
            guard let copy = held[id] else { continue }
            if copy.damaged { note("task \(id) holds a value that does not parse") }
            let differing = Self.differing(copy.master, task)
            if !differing.isEmpty {
                note(
                    "task \(id) differs from the master in \(differing.joined(separator: ", ")) "
                        + "(replica version \(copy.master.version), master version \(task.version))")
            }
        }
        let wantedLocations = Set(rows.compactMap(\.locationID))
        if Set(contents.locationIDs) != wantedLocations {
            note("locations \(contents.locationIDs.sorted()) instead of \(wantedLocations.sorted())")
        }
        let heldMembers = contents.members.map { "\($0.personID) \($0.firstName) \($0.lastName) \($0.role)" }
        let wantedMembers = members.sorted { $0.id < $1.id }.map { "\($0.id) \($0.firstName) \($0.lastName) \($0.role.rawValue)" }
        if heldMembers != wantedMembers {
            note("members differ from the master")
        }
        return drift
    }

    /// The columns a replica holds (``TaskSchema/travelling``) in which its copy of a task differs
    /// from the master's, each compared as the replica stores it (dates to the millisecond, JSON as
    /// ``FieldTask/json(_:)`` writes it). A column the master alone keeps (its creator, the
    /// customer, the planner's pin) is not compared.
    static func differing(_ copy: FieldTask, _ master: FieldTask) -> [String] {
        TaskSchema.travelling.filter { $0.stored($0.value(copy)) != $0.stored($0.value(master)) }.map(\.replicaName)
    }
}

extension ReplicaID {
    var isTeam: Bool {
        if case .team = self { return true }
        return false
    }
}
