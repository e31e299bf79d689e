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

    /// `GET /v1/replicas`: the caller's teams (per the master's memberships), their personal replica, the common one.
    @Sendable func list(_ request: Request, context: SyncRequestContext) async throws -> ReplicaListing {
        let person = try context.requirePerson()
        let teams = try await store.run { try await $0.teams(ofPerson: person.id) }
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

    /// `GET /v1/replicas/{name}/changes?epoch=&since=&limit=`.
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
        let epoch = query["epoch"].map(String.init)
        let path = configuration.replicasDirectory.appending(path: replica.fileName).path
        guard FileManager.default.fileExists(atPath: path) else {
            throw HTTPError(.notFound, message: "\(name) has not been generated yet; try again shortly")
        }
        do {
            if replica == .common {
                return Page(page: try await blockingWork { try CommonPage.read(path: path, epoch: epoch, since: since, limit: limit) })
            }
            return Page(page: try await blockingWork { try ChangePage.read(path: path, epoch: epoch, since: since, limit: limit) })
        } catch {
            context.logger.error("cannot read a replica", metadata: ["replica": "\(name)", "error": "\(error)"])
            throw HTTPError(.serviceUnavailable, message: "\(name) cannot be read right now; try again")
        }
    }

    /// The replica the `{name}` path parameter names, if the caller may use it
    /// (404 for no such name, 403 for someone else's).
    func replica(named context: SyncRequestContext, person: Person) async throws -> ReplicaID {
        let name = try context.parameters.require("name")
        guard let replica = ReplicaID(fileName: name + ".sqlite") else {
            throw HTTPError(.notFound, message: "no replica named '\(name)'")
        }
        try await requireAccess(person, to: replica, context: context)
        return replica
    }

    /// Members read their teams' replicas, people their own personal one, everybody the common one.
    private func requireAccess(_ person: Person, to replica: ReplicaID, context: SyncRequestContext) async throws {
        let allowed: Bool
        switch replica {
        case .common:
            allowed = true
        case .person(let id):
            allowed = id == person.id
        case .team(let id):
            let teams = try await store.run { try await $0.teams(ofPerson: person.id) }
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
