import CentralStore
import Foundation
import Hummingbird
import TeamworkModel

/// Checks `Authorization: Bearer <token>` against the central store (through
/// ``AccessCache``) and puts the person and their teams in the context; refuses with 401 (and logs it) otherwise. One
/// person has at most ``Configuration/maximumRequestsPerPerson`` requests in
/// flight; more get 429, so one device (or a stolen token) cannot take the
/// server's connections and threads from everyone else. A pull that goes on to
/// wait (live mode) gives its slot back while it waits: waits are bounded by
/// ``ReplicaWatch`` instead, which ends a person's oldest waits first.
struct TokenAuthenticator: RouterMiddleware {
    let store: SharedStore
    let cache: AccessCache
    let limit: Int
    let inFlight = Locked([Int64: Int]())

    /// The `/metrics` lines of the requests now past the token check.
    var metrics: String {
        let (requests, people) = inFlight.mutate { counts in (counts.values.reduce(0, +), counts.count) }
        return """
            # HELP teamwork_sync_requests_in_flight Signed-in requests being answered (a pull waiting in live mode is not counted)
            # TYPE teamwork_sync_requests_in_flight gauge
            teamwork_sync_requests_in_flight \(requests)
            # HELP teamwork_sync_people_in_flight People with a signed-in request being answered
            # TYPE teamwork_sync_people_in_flight gauge
            teamwork_sync_people_in_flight \(people)

            """
    }

    func handle(_ request: Request, context: SyncRequestContext, next: (Request, SyncRequestContext) async throws -> Response)
        async throws -> Response
    {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            context.logger.notice("refused: no token", metadata: ["path": "\(request.uri.path)"])
            throw HTTPError(.unauthorized, message: "sign in with a token: Authorization: Bearer tw_...")
        }
        let secret = String(header.dropFirst("Bearer ".count)).trimmingCharacters(in: .whitespaces)
        // A store that cannot answer is a 503 (StoreUnavailable), from SharedStore.
        guard let access = try await cache.access(secret: secret, store: store) else {
            context.logger.notice("refused: unknown or revoked token", metadata: ["path": "\(request.uri.path)"])
            throw HTTPError(.unauthorized, message: "the token is unknown or revoked")
        }
        let person = access.person
        let admitted = inFlight.mutate { counts in
            guard counts[person.id, default: 0] < limit else { return false }
            counts[person.id, default: 0] += 1
            return true
        }
        guard admitted else {
            context.logger.notice("refused: too many requests at once", metadata: ["person": "\(person.id)"])
            throw HTTPError(.tooManyRequests, message: "at most \(limit) requests at once per person; wait for the others")
        }
        let released = Locked(false)
        let release = { @Sendable [inFlight] in
            guard released.mutate({ done in defer { done = true }; return !done }) else { return }
            inFlight.mutate { counts in counts[person.id] = counts[person.id].map { $0 > 1 ? $0 - 1 : nil } ?? nil }
        }
        defer { release() }
        var context = context
        context.person = person
        context.teams = access.teams
        context.token = secret
        context.releaseSlot = release
        context.logger[metadataKey: "person"] = "\(person.id)"
        return try await next(request, context)
    }
}
