import CentralStore
import Foundation
import Hummingbird
import PhoneApp
import ServerSupport
import TeamworkModel

/// Checks `Authorization: Bearer <token>` against the central store (through
/// ``AccessCache``) and puts the person and their teams in the context; refuses with 401 (and logs it) otherwise. One
/// person has at most ``Configuration/maximumRequestsPerPerson`` requests in
/// flight; more get 429, so one device (or a stolen token) cannot take the
/// server's connections and threads from everyone else. A pull that goes on to
/// wait (live mode) gives its slot back while it waits: waits are bounded by
/// ``ReplicaWatch`` instead, which ends a person's oldest waits first.
struct TokenAuthenticator: RouterMiddleware {
    let store: SharedStore<any EndpointStore>
    let cache: AccessCache
    let inFlight: Budget<Int64>

    init(store: SharedStore<any EndpointStore>, cache: AccessCache, limit: Int) {
        self.store = store
        self.cache = cache
        inFlight = Budget(perPrincipal: limit)
    }

    /// The `/metrics` lines of the requests now past the token check.
    var metrics: String {
        let (requests, people) = inFlight.totals
        return """
            # HELP teamwork_sync_requests_in_flight Signed-in requests being answered (a pull waiting in live mode is not counted)
            # TYPE teamwork_sync_requests_in_flight gauge
            teamwork_sync_requests_in_flight \(requests)
            # HELP teamwork_sync_people_in_flight People with a signed-in request being answered
            # TYPE teamwork_sync_people_in_flight gauge
            teamwork_sync_people_in_flight \(people)

            """
    }

    // Kept thin: every value an async function holds across a suspension lives in its task's
    // stack of frames, and a connection keeps the deepest stack it ever had for its whole life
    // (Swift's task allocator keeps its slabs). The checks are synchronous helpers, kept out of
    // line, so a stream held open by 19,000 devices does not carry their temporaries.
    func handle(
        _ request: Request, context: SyncRequestContext, next: (Request, SyncRequestContext) async throws -> Response
    )
        async throws -> Response
    {
        let app = request.headers[FieldAppAccess.header]
        let secret = try Self.bearer(request, app: app, context)
        // A store that cannot answer is a 503 (StoreUnavailable), from SharedStore.
        guard let access = try await cache.access(secret: secret, store: store, from: AddressLimiter.key(context.remoteAddress?.ipAddress))
        else {
            throw Self.unknown(request, context)
        }
        if let app, FieldAppAccess.namesAnother(app, than: access.person.id) { throw Self.someoneElse(request, context) }
        let release = try admit(access.person.id, context)
        defer { release() }
        guard app != nil, request.method == .get, request.uri.path == "/v1/replicas" else {
            return try await next(request, Self.signedIn(context, access, secret: secret, release: release))
        }
        // The phone app lists its replicas at every sync: its cookie's age starts again (a legacy one is replaced).
        var response = try await next(request, Self.signedIn(context, access, secret: secret, release: release))
        response.headers[values: .setCookie].append(FieldAppAccess.deviceCookie(secret))
        if (try? FormGuard.cookie(FieldAppAccess.legacyCookie, in: request)) != nil {
            response.headers[values: .setCookie].append(FieldAppAccess.legacyCookieEnd)
        }
        return response
    }

    @inline(never)
    private static func someoneElse(_ request: Request, _ context: SyncRequestContext) -> any Error {
        context.logger.notice("refused: the app acts for another person than its sign-in", metadata: ["path": "\(request.uri.path)"])
        return HTTPError(.preconditionFailed, message: "this phone is signed in as someone else now; sync again")
    }

    /// The token the request carries; 401 without one. The phone app's comes in its cookie
    /// (``FieldAppAccess``), taken only with the app's header, which a page of another site cannot send.
    /// Each header is looked up once and the token cut out by its bytes: this runs for every signed-in
    /// request, and Foundation's `trimmingCharacters` alone was a thirtieth of a no-op pull's time.
    @inline(never)
    private static func bearer(_ request: Request, app: String?, _ context: SyncRequestContext) throws -> String {
        let header = request.headers[.authorization]
        if header == nil, app != nil {
            if let cookie = try FormGuard.cookie(FieldAppAccess.cookie, in: request) { return String(cookie) }
            // A phone paired before cookies were __Host- ones: its cookie is taken once more, and replaced (below).
            if let cookie = try FormGuard.cookie(FieldAppAccess.legacyCookie, in: request) { return String(cookie) }
        }
        guard let header, let token = bearerToken(header) else {
            context.logger.notice("refused: no token", metadata: ["path": "\(request.uri.path)"])
            throw HTTPError(.unauthorized, message: "sign in with a token: Authorization: Bearer tw_...")
        }
        return token
    }

    /// What follows `Bearer ` (in any case: RFC 9110, 11.1) in an `Authorization` value, without the
    /// spaces and tabs around it; `nil` for another scheme.
    private static func bearerToken(_ header: String) -> String? {
        let scheme = "bearer ".utf8
        guard header.utf8.starts(with: scheme, by: { $1 == UInt8(ascii: " ") ? $0 == $1 : $0 | 0x20 == $1 }) else { return nil }
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let value = header.utf8.dropFirst(scheme.count)
        guard let first = value.firstIndex(where: { !isBlank($0) }), let last = value.lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(Substring(value[first...last]))
    }

    @inline(never)
    private static func unknown(_ request: Request, _ context: SyncRequestContext) -> any Error {
        context.logger.notice("refused: unknown or revoked token", metadata: ["path": "\(request.uri.path)"])
        return HTTPError(.unauthorized, message: "the token is unknown or revoked")
    }

    /// Takes one of the person's places among requests in flight (429 when they have none left);
    /// returns what gives it back (once, however often it is called).
    @inline(never)
    private func admit(_ person: Int64, _ context: SyncRequestContext) throws -> @Sendable () -> Void {
        guard case .success(let place) = inFlight.reserve(for: person) else {
            context.logger.notice("refused: too many requests at once", metadata: ["person": "\(person)"])
            throw HTTPError(.tooManyRequests, message: "at most \(inFlight.perPrincipal) requests at once per person; wait for the others")
        }
        return { @Sendable in place.release() }
    }

    @inline(never)
    private static func signedIn(
        _ context: SyncRequestContext, _ access: AccessCache.Access, secret: String,
        release: @escaping @Sendable () -> Void
    ) -> SyncRequestContext {
        var context = context
        context.person = access.person
        context.teams = access.teams
        context.token = secret
        context.releaseSlot = release
        context.logger[metadataKey: "person"] = "\(access.person.id)"
        return context
    }
}
