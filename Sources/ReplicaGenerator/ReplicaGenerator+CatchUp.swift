import CentralStore
import Foundation
import GRDB
import TeamDatabase
import TeamworkModel

/// What one catch-up pass did.
public struct CatchUpReport: Sendable, Equatable {
    /// Feed entries read.
    public var entries: Int = 0
    /// Replica files written (counted once per batch they were written in).
    public var replicaWrites: Int = 0
    /// The position every replica is now current through.
    public var feedPosition: Int64 = 0
    /// True when there was no checkpoint and the pass did a full rebuild instead.
    public var rebuilt = false
    /// Replicas found damaged (unreadable) and built anew in this pass.
    public var repaired: [ReplicaID] = []
}

extension ReplicaGenerator {
    /// Applies every feed entry after the checkpoint, batch by batch, until the
    /// feed is exhausted. With no checkpoint yet, rebuilds everything instead.
    @discardableResult
    public func catchUp() async throws -> CatchUpReport {
        guard let start = try checkpoint() else {
            try await rebuildAll()
            return CatchUpReport(feedPosition: try checkpoint() ?? 0, rebuilt: true)
        }
        return try await CentralStore.withStore(configuration.databaseURL, logger: logger) { store in
            try await catchUp(store, from: start)
        }
    }

    func catchUp(_ store: any GeneratorStore, from start: Int64) async throws -> CatchUpReport {
        var report = CatchUpReport(feedPosition: start)
        while true {
            let entries = try await store.feed(after: report.feedPosition, limit: configuration.pageSize)
            guard let last = entries.last else { break }
            report.replicaWrites += try await apply(entries, through: last.position, store: store)
            report.entries += entries.count
            report.feedPosition = last.position
            let (position, directory) = (last.position, configuration.directory)
            try await blockingWork { try Checkpoint.save(position, to: directory) }
            if entries.count < configuration.pageSize { break }
        }
        report.repaired = try await repairDamaged(store, position: report.feedPosition)
        return report
    }

    /// Every pass looks at each replica file (its header and metadata record):
    /// one that cannot be read at all (overwritten, truncated, not a database)
    /// is moved aside into `damaged/` and built anew from the master, so a
    /// damaged replica is whole again within one pass, whether or not anything
    /// in it changed. Returns the replicas rebuilt.
    func repairDamaged(_ store: any GeneratorStore, position: Int64) async throws -> [ReplicaID] {
        let replicas = self.replicas
        let damaged = try await blockingWork {
            try replicas.replicas().compactMap { replica in replicas.damage(of: replica).map { (replica, $0) } }
        }
        var repaired: [ReplicaID] = []
        for (replica, damage) in damaged {
            logger.error(
                "a replica cannot be read; setting it aside in damaged/ and building it anew from the master",
                metadata: ["replica": "\(replica)", "damage": "\(damage)"])
            try replicas.setAsideDamaged(replica)
            if replica == .common {
                _ = try await rebuildAll()
            } else {
                try await rebuildOne(replica, store: store, position: position)
            }
            repaired.append(replica)
        }
        return repaired
    }

    /// Applies one batch of feed entries: works out which replicas each entry
    /// touches, reads the master's current rows once, and writes each touched
    /// replica in one transaction. Returns how many replicas were written.
    private func apply(_ entries: [FeedEntry], through position: Int64, store: any GeneratorStore) async throws -> Int {
        var plan = BatchPlan()
        for entry in entries { plan.add(entry) }
        // The master refused changes these replicas had shown: their tasks are written whole from the master.
        let refusals = try await store.refusals(ids: Array(plan.refusalIDs))
        var refusalsByReplica: [ReplicaID: [FieldRefusal]] = [:]
        for refusal in refusals {
            guard let replica = ReplicaID(fileName: refusal.replica + ".sqlite"), replica != .common else { continue }
            refusalsByReplica[replica, default: []].append(refusal)
            plan.tasks[replica, default: []].formUnion([])
            guard let taskID = refusal.taskID else { continue }
            plan.refreshed[replica, default: []].insert(taskID)
            plan.tasks[replica, default: []].insert(taskID)
            plan.taskIDs.insert(taskID)
        }

        let current = Dictionary(
            uniqueKeysWithValues: try await store.currentTasks(ids: Array(plan.taskIDs)).map { ($0.task.id, $0) }
        )
        for (id, row) in current {
            // The replica holding the task now, whatever the feed entries said.
            if let holder = ReplicaID.holding(teamID: row.task.teamID, assigneeID: row.task.assigneeID) {
                plan.tasks[holder, default: []].insert(id)
            }
        }
        if !plan.locationIDs.isEmpty {
            for owner in try await store.taskOwners(atLocations: Array(plan.locationIDs)) {
                if let holder = ReplicaID.holding(teamID: owner.teamID, assigneeID: owner.assigneeID) {
                    plan.locationReplicas.insert(holder)
                }
            }
        }
        // People changes show in the member lists of their teams.
        let personTeams = try await store.teamIDs(ofPeople: Array(plan.personIDs))
        for teamIDs in personTeams.values { plan.memberTeams.formUnion(teamIDs) }
        let members = try await store.members(ofTeams: Array(plan.memberTeams))
        let teams = Dictionary(uniqueKeysWithValues: try await store.teams(ids: Array(plan.teamIDs)).map { ($0.id, $0) })
        let locations = Dictionary(uniqueKeysWithValues: try await store.locations(ids: Array(plan.locationIDs)).map { ($0.id, $0) })
        let people = Dictionary(uniqueKeysWithValues: try await store.people(ids: Array(plan.personIDs)).map { ($0.id, $0) })

        var written = 0
        for replica in plan.touchedReplicas.sorted() {
            if case .team(let id) = replica, teams[id] == nil, plan.teamIDs.contains(id) {
                try replicas.retire(replica)
                continue
            }
            try await write(replica, store: store, position: position) { [plan, refusalsByReplica] tx in
                for refusal in refusalsByReplica[replica] ?? [] { try tx.recordRefusal(refusal) }
                let refreshed = plan.refreshed[replica] ?? []
                for id in plan.tasks[replica, default: []].sorted() {
                    if let row = current[id], ReplicaID.holding(teamID: row.task.teamID, assigneeID: row.task.assigneeID) == replica {
                        try tx.upsert(row.task, refreshing: refreshed.contains(id))
                        if let location = row.location { try tx.upsert(location) }
                    } else {
                        try tx.deleteTask(id: id)
                    }
                }
                if plan.locationReplicas.contains(replica) {
                    for location in locations.values { try tx.upsert(location) }
                }
                if case .team(let id) = replica {
                    if let team = teams[id] { try tx.setOwner(name: team.name, slug: team.slug) }
                    if let list = members[id] { try tx.replaceMembers(list) }
                }
                try tx.pruneLocations()
            }
            written += 1
        }
        if plan.touchesCommon {
            let parts = Dictionary(uniqueKeysWithValues: try await store.parts(ids: Array(plan.partIDs)).map { ($0.id, $0) })
            try await writeCommon(
                plan: plan, people: people, teams: teams, locations: locations, parts: parts, personTeams: personTeams,
                position: position, store: store)
            written += 1
        }
        return written
    }

    /// Runs `body` in one write transaction of `replica` that records `position`,
    /// on a connection kept between passes. A replica whose file is missing or
    /// unusable (a new team, a person's first personal task, a damaged file) is
    /// built from the master's current rows first; one that still has no file
    /// (its team or person is gone) is left alone.
    /// The file work runs off the cooperative threads, which in `run` serve the endpoint's requests too.
    private func write(
        _ replica: ReplicaID, store: any GeneratorStore, position: Int64,
        _ body: @escaping @Sendable (ReplicaTransaction) throws -> Void
    ) async throws {
        let (connections, replicas) = (self.connections, self.replicas)
        let update = { @Sendable in
            try await blockingWork {
                try connections.withConnection(to: replica) { try replicas.update($0, replica, feedPosition: position, body) }
            }
        }
        do {
            try await update()
        } catch let failure as ReplicaConnections.CannotOpen {
            if replicas.exists(replica) {
                logger.warning("rebuilding an unusable replica", metadata: ["replica": "\(replica)", "error": "\(failure.reason)"])
            }
            try await rebuildOne(replica, store: store, position: position)
            guard replicas.exists(replica) else { return }
            try await update()
        }
    }

    /// Builds one replica from the master's current rows.
    func rebuildOne(_ replica: ReplicaID, store: any GeneratorStore, position: Int64) async throws {
        let rows: [(task: FieldTask, location: Location?)]
        var owner = (name: "", slug: "")
        var members: [Person] = []
        switch replica {
        case .team(let id):
            guard let team = try await store.teams(ids: [id]).first else { return }
            owner = (team.name, team.slug)
            members = try await store.members(ofTeams: [id])[id] ?? []
            rows = try await store.currentTasks(forTeam: id)
        case .person(let id):
            guard let person = try await store.people(ids: [id]).first else { return }
            owner = (person.displayName, "")
            members = [person]
            rows = try await store.currentPersonalTasks(of: id)
        case .common:
            try await rebuildAll()
            return
        }
        let (replicas, memoryLimit, ownerNow, membersNow, rowsNow) = (self.replicas, configuration.buildMemoryLimit, owner, members, rows)
        // Writing and fsyncing the file: off the cooperative threads, which in `run` answer requests too.
        try await blockingWork {
            let build = try replicas.startBuild(of: replica, feedPosition: position, memoryLimit: memoryLimit)
            do {
                try build.write { tx in
                    try tx.setOwner(name: ownerNow.name, slug: ownerNow.slug)
                    try tx.replaceMembers(membersNow)
                    for row in rowsNow {
                        try tx.upsert(row.task)
                        if let location = row.location { try tx.upsert(location) }
                    }
                }
                try build.commit()
            } catch {
                build.abandon()
                throw error
            }
        }
    }

    private func writeCommon(
        plan: BatchPlan, people: [Int64: Person], teams: [Int64: Team], locations: [Int64: Location], parts: [Int64: Part],
        personTeams: [Int64: Set<Int64>], position: Int64, store: any GeneratorStore
    ) async throws {
        // A missing or damaged common replica is rebuilt (with everything else).
        try await write(.common, store: store, position: position) { tx in
            for id in plan.personIDs {
                if let person = people[id] { try tx.upsert(person) } else { try tx.deletePerson(id: id) }
                try tx.replaceMemberships(personID: id, teamIDs: personTeams[id] ?? [])
            }
            for id in plan.teamIDs {
                if let team = teams[id] { try tx.upsert(team) } else { try tx.deleteTeam(id: id) }
            }
            for id in plan.locationIDs {
                // A person's position is for managers and that person, not for every signed-in worker.
                if let location = locations[id], location.kind != .person { try tx.upsert(location) } else { try tx.deleteLocation(id: id) }
            }
            for id in plan.partIDs {
                if let part = parts[id] { try tx.upsert(part) } else { try tx.deletePart(id: id) }
            }
        }
    }
}

/// Which replicas and rows one batch of feed entries touches.
struct BatchPlan {
    /// Replica to the task ids to re-read into it (upsert if it holds the task now, else delete).
    var tasks: [ReplicaID: Set<Int64>] = [:]
    var taskIDs: Set<Int64> = []
    var personIDs: Set<Int64> = []
    var teamIDs: Set<Int64> = []
    var memberTeams: Set<Int64> = []
    var locationIDs: Set<Int64> = []
    /// Replicas holding a task at a changed location.
    var locationReplicas: Set<ReplicaID> = []

    /// Parts of the catalogue (the common replica's `parts`).
    var partIDs: Set<Int64> = []

    var touchesCommon: Bool { !personIDs.isEmpty || !teamIDs.isEmpty || !locationIDs.isEmpty || !partIDs.isEmpty }

    /// Ledger entries of changes the master refused (feed entity `refusal`).
    var refusalIDs: Set<Int64> = []
    /// Replica to the tasks it must take whole from the master, whatever it showed.
    var refreshed: [ReplicaID: Set<Int64>] = [:]

    var touchedReplicas: Set<ReplicaID> {
        Set(tasks.keys).union(memberTeams.map { .team($0) }).union(teamIDs.map { .team($0) }).union(locationReplicas)
    }

    mutating func add(_ entry: FeedEntry) {
        switch entry.entity {
        case "task":
            taskIDs.insert(entry.entityID)
            for holder in [
                ReplicaID.holding(teamID: entry.teamID, assigneeID: entry.assigneeID),
                ReplicaID.holding(teamID: entry.oldTeamID, assigneeID: entry.oldAssigneeID),
            ] {
                if let holder { tasks[holder, default: []].insert(entry.entityID) }
            }
        case "membership":
            personIDs.insert(entry.entityID)
            if let team = entry.teamID { memberTeams.insert(team) }
        case "person":
            personIDs.insert(entry.entityID)
        case "team":
            teamIDs.insert(entry.entityID)
            memberTeams.insert(entry.entityID)
        case "location":
            locationIDs.insert(entry.entityID)
        case "refusal":
            refusalIDs.insert(entry.entityID)
        case "part":
            partIDs.insert(entry.entityID)
        default:
            break
        }
    }
}
