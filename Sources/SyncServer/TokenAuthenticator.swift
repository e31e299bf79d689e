import CentralStore
import Foundation
import Hummingbird
import TeamworkModel

/// Checks `Authorization: Bearer <token>` against the central store and puts
/// the person in the context; refuses with 401 (and logs it) otherwise.
struct TokenAuthenticator: RouterMiddleware {
    let store: SharedStore

    func handle(_ request: Request, context: SyncRequestContext, next: (Request, SyncRequestContext) async throws -> Response)
        async throws -> Response
    {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            context.logger.notice("refused: no token", metadata: ["path": "\(request.uri.path)"])
            throw HTTPError(.unauthorized, message: "sign in with a token: Authorization: Bearer tw_...")
        }
        let secret = String(header.dropFirst("Bearer ".count)).trimmingCharacters(in: .whitespaces)
        let person: Person?
        do {
            person = try await store.run { try await $0.authenticate(secret: secret) }
        } catch {
            context.logger.error("cannot check a token", metadata: ["error": "\(error)"])
            throw HTTPError(.serviceUnavailable, message: "the central store is not available; try again")
        }
        guard let person else {
            context.logger.notice("refused: unknown or revoked token", metadata: ["path": "\(request.uri.path)"])
            throw HTTPError(.unauthorized, message: "the token is unknown or revoked")
        }
        var context = context
        context.person = person
        context.logger[metadataKey: "person"] = "\(person.id)"
        return try await next(request, context)
    }
}
