import CentralStore
import Foundation
import Hummingbird
import SyncProtocol
import TeamDatabase
import TeamworkModel

/// The read side of sync: which replicas a worker may have, and pages of changes.
struct ReplicaPulls: Sendable {
    let configuration: SyncServer.Configuration
    let store: SharedStore
    /// Tokens and teams remembered between requests.
    let cache: AccessCache
    /// Wakes the pulls that wait for a change (`wait=N`).
    let watch: ReplicaWatch
    /// Each replica file's epoch and last position, by the state of the file they were read from.
    let positions = ReplicaPositions()

    /// `GET /v1/replicas`: the caller's teams (per the master's memberships), their personal replica, the common one.
    @Sendable func list(_ request: Request, context: SyncRequestContext) async throws -> ReplicaListing {
        let person = try context.requirePerson()
        let teams = context.teams
        let directory = configuration.replicasDirectory
        func exists(_ replica: ReplicaID) -> Bool {
            FileManager.default.fileExists(atPath: directory.appending(path: replica.fileName).path)
        }
        var entries = teams.map {
            ReplicaListing.Entry(name: "team-\($0.id)", kind: "team", id: $0.id, slug: $0.slug, title: $0.name, available: exists(.team($0.id)))
        }
        entries.append(ReplicaListing.Entry(name: "person-\(person.id)", kind: "person", id: person.id, slug: nil, title: person.displayName,
                             available: exists(.person(person.id))))
        entries.append(ReplicaListing.Entry(name: "common", kind: "common", id: nil, slug: nil, title: "Common data", available: exists(.common)))
        return ReplicaListing(person: person.id, replicas: entries)
    }

    /// `GET /v1/positions`: the caller's own last-known position, and their
    /// teammates' in teams that share positions; read from the master on each
    /// request, so a team that stops sharing stops at once.
    @Sendable func positions(_ request: Request, context: SyncRequestContext) async throws -> PositionListing {
        let person = try context.requirePerson()
        let rows = try await store.run { try await $0.positions(visibleTo: person.id) }
        return PositionListing(person: person.id, positions: rows.map {
            PositionListing.Entry(person: $0.personID, teams: $0.teamIDs, latitude: $0.latitude, longitude: $0.longitude,
                                  reportedAt: $0.reportedAt)
        })
    }

    /// `GET /v1/replicas/{name}/changes?epoch=&since=&limit=&wait=`.
    @Sendable func changes(_ request: Request, context: SyncRequestContext) async throws -> Page {
        let person = try context.requirePerson()
        let replica = try await replica(named: context, person: person)
        let name = replica.fileName.replacingOccurrences(of: ".sqlite", with: "")
        let query = request.uri.queryParameters
        let since = try query["since"].map { text -> Int64 in
            guard let value = Int64(String(text)), value >= 0 else { throw HTTPError(.badRequest, message: "since must be a whole number >= 0") }
            return value
        } ?? 0
        let limit = try query["limit"].map { text -> Int in
            guard let value = Int(String(text)), (1...configuration.maximumPageSize).contains(value) else {
                throw HTTPError(.badRequest, message: "limit must be between 1 and \(configuration.maximumPageSize)")
            }
            return value
        } ?? configuration.defaultPageSize
        let wait = try query["wait"].map { text -> Duration in
            let most = Int(configuration.maximumWait.components.seconds)
            guard let value = Int(String(text)), (0...most).contains(value) else {
                throw HTTPError(.badRequest, message: "wait must be a whole number of seconds between 0 and \(most)")
            }
            return .seconds(value)
        } ?? .zero
        let epoch = query["epoch"].map(String.init)
        let path = path(of: replica)
        guard FileManager.default.fileExists(atPath: path) else {
            throw HTTPError(.notFound, message: "\(name) has not been generated yet; try again shortly")
        }
        let (positions, logger) = (self.positions, context.logger)
        let read = { @Sendable () async throws -> (page: Page, upTo: Int64, refetch: Bool) in
            // The file's state before the read: when it is one whose epoch and last position are
            // known, a device that already holds them gets its empty page without opening the file.
            let stamp = ReplicaWatch.Stamp(path: path)
            if let stamp, let epoch, positions.isCurrent(path: path, stamp: stamp, epoch: epoch, position: since) {
                let page: any Encodable & Sendable = replica == .common
                    ? CommonPage(epoch: epoch, refetch: false, since: since, upTo: since, more: false,
                                 people: [], teams: [], memberships: [], locations: [], deleted: [])
                    : ChangePage(epoch: epoch, refetch: false, since: since, upTo: since, more: false,
                                 tasks: [], members: [], locations: [], deleted: [])
                return (Page(page: page), since, false)
            }
            do {
                let (page, pageEpoch, upTo, refetch, more): (any Encodable & Sendable, String, Int64, Bool, Bool)
                if replica == .common {
                    let common = try await blockingWork { try CommonPage.read(path: path, epoch: epoch, since: since, limit: limit) }
                    (page, pageEpoch, upTo, refetch, more) = (common, common.epoch, common.upTo, common.refetch, common.more)
                } else {
                    let team = try await blockingWork { try ChangePage.read(path: path, epoch: epoch, since: since, limit: limit) }
                    (page, pageEpoch, upTo, refetch, more) = (team, team.epoch, team.upTo, team.refetch, team.more)
                }
                // The last page ends at the file's last position.
                if !more, let stamp { positions.remember(path: path, stamp: stamp, epoch: pageEpoch, position: upTo) }
                return (Page(page: page), upTo, refetch)
            } catch {
                logger.error("cannot read a replica", metadata: ["replica": "\(name)", "error": "\(error)"])
                throw HTTPError(.serviceUnavailable, message: "\(name) cannot be read right now; try again")
            }
        }
        // Live mode: a device that is current waits for its replica to change.
        // The stamp is taken before the read, so a change made meanwhile ends the wait at once.
        let stamp = ReplicaWatch.Stamp(path: path)
        let first = try await read()
        guard wait > .zero, !first.refetch, first.upTo == since else { return first.page }
        context.releaseSlot?()
        await watch.wait(path: path, from: stamp, timeout: wait, owner: person.id)
        try await recheck(context, replica: replica)
        return try await read().page
    }

    /// After a wait, the caller's token and access are checked again: a token
    /// revoked or a member removed while the pull waited gets no more data.
    private func recheck(_ context: SyncRequestContext, replica: ReplicaID) async throws {
        guard let token = context.token else { throw HTTPError(.unauthorized) }
        let access: AccessCache.Access?
        do {
            access = try await cache.access(secret: token, store: store)
        } catch {
            throw HTTPError(.serviceUnavailable, message: "the central store is not available; try again")
        }
        guard let access, access.person.id == context.person?.id else {
            context.logger.notice("refused: token revoked during a wait")
            throw HTTPError(.unauthorized, message: "the token is unknown or revoked")
        }
        try requireAccess(access.person, teams: access.teams, to: replica, context: context)
    }

    /// Where a replica's file is; what the watch knows it by.
    func path(of replica: ReplicaID) -> String {
        configuration.replicasDirectory.appending(path: replica.fileName).path
    }

    /// The replica the `{name}` path parameter names, if the caller may use it
    /// (404 for no such name, 403 for someone else's).
    func replica(named context: SyncRequestContext, person: Person) async throws -> ReplicaID {
        let name = try context.parameters.require("name")
        guard let replica = ReplicaID(fileName: name + ".sqlite") else {
            throw HTTPError(.notFound, message: "no replica named '\(name)'")
        }
        try requireAccess(person, teams: context.teams, to: replica, context: context)
        return replica
    }

    /// Members read their teams' replicas, people their own personal one, everybody the common one.
    private func requireAccess(_ person: Person, teams: [Team], to replica: ReplicaID, context: SyncRequestContext) throws {
        let allowed: Bool
        switch replica {
        case .common:
            allowed = true
        case .person(let id):
            allowed = id == person.id
        case .team(let id):
            allowed = teams.contains { $0.id == id }
        }
        guard allowed else {
            context.logger.notice("refused: not the caller's replica", metadata: ["replica": "\(replica.fileName)"])
            throw HTTPError(.forbidden, message: "\(replica) is not one of your replicas")
        }
    }

    /// A team, personal or common page, encoded as itself.
    struct Page: ResponseEncodable {
        let page: any Encodable & Sendable
        func encode(to encoder: any Encoder) throws { try page.encode(to: encoder) }
    }
}

extension SyncRequestContext {
    func requirePerson() throws -> Person {
        guard let person else { throw HTTPError(.unauthorized) }
        return person
    }
}

extension ReplicaListing: ResponseEncodable {}
extension PositionListing: ResponseEncodable {}

/// What the server last read of each replica file: for the file's state (its
/// ``ReplicaWatch/Stamp``), the epoch and the last position. A device that
/// holds exactly those is current, and its pull — the request a fleet sends
/// most — is answered without opening SQLite. A file whose state has moved on
/// (any commit, a rebuild) no longer matches and is read again.
final class ReplicaPositions: Sendable {
    private struct Known {
        var stamp: ReplicaWatch.Stamp
        var epoch: String
        var position: Int64
    }

    private let known = Locked([String: Known]())

    func isCurrent(path: String, stamp: ReplicaWatch.Stamp, epoch: String, position: Int64) -> Bool {
        guard let entry = known.value[path] else { return false }
        return entry.stamp == stamp && entry.epoch == epoch && entry.position == position
    }

    /// `stamp` must have been taken before the read that found `epoch` and `position`:
    /// if the file changed in between, that stamp never comes back, so nothing wrong is ever served.
    func remember(path: String, stamp: ReplicaWatch.Stamp, epoch: String, position: Int64) {
        known.mutate { $0[path] = Known(stamp: stamp, epoch: epoch, position: position) }
    }
}
