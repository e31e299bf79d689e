import BlobStore
import CentralStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServerSupport
import ServiceLifecycle
import TeamworkModel

/// The board's routes (docs/security.md, "The board"). Every page and action
/// needs a session, opened at `/board/sign-in` with a manager's or an admin's
/// access token; every POST carries the session's CSRF token and, when the
/// browser says where it comes from (`Origin`, `Sec-Fetch-Site`), comes from
/// the board itself. Changes are made through the board's database role with
/// the signed-in person as the actor: the task history names them.
public struct BoardRoutes<Context: RemoteAddressRequestContext>: Sendable {
    let configuration: BoardConfiguration
    /// Reads and sign-ins, through the board's own role (``BoardConfiguration/readConnections`` shared).
    let store: SharedStore<any BoardReads>
    /// Changes, each a transaction as the signed-in person on a connection of the pool's
    /// (``BoardConfiguration/actionConnections`` at most).
    let changes: StorePool
    let feed: FeedWatch
    let blobs: any BlobStore
    let secure: Bool
    let limiter: AddressLimiter
    /// Sign-ins being answered, by address: each costs a round trip on ``store``'s connection.
    let signIns: Budget<String>
    /// Session lookups being answered, by address: each costs a round trip on ``store``'s connection.
    let sessionLookups: Budget<String>
    /// Cookies seen naming an open session, and when: looked up without the address's budget.
    let recentSessions = Locked<[TokenDigest: ContinuousClock.Instant]>([:])
    /// Actions being made, by person: each holds one of ``changes``' connections (a transaction as that
    /// person). Reserved before the pool is asked, so a change the pool has no room for is refused at once.
    let actions: Budget<Int64>
    /// Day plans being made: each costs up to a second of one core, so one at a time in all.
    let planning = Budget<Int64>(perPrincipal: 1, total: 1)
    let logger: Logger

    static var sessionCookie: String { FormGuard.cookiePrefix + "tw_session" }
    static var signInCookie: String { FormGuard.cookiePrefix + "tw_signin" }
    static var flashCookie: String { FormGuard.cookiePrefix + "tw_flash" }
    /// The most a form's body may hold.
    static var formLimit: Int { 64 * 1024 }

    /// The board for `configuration`, on connections of its own (its database role, a manager's), showing
    /// the proof-of-work files kept in `blobs`. `secure`: the service itself serves HTTPS.
    /// Run ``services`` beside the server: its shared connection and the feed it waits on.
    public init(configuration: BoardConfiguration, blobs: any BlobStore, secure: Bool, logger: Logger) throws {
        self.init(
            configuration: configuration,
            store: SharedStore(
                manager: configuration.databaseURL, name: "board's reads", maximum: configuration.readConnections, logger: logger),
            changes: StorePool(
                configuration.databaseURL, name: "board's changes", maximum: configuration.actionConnections, logger: logger),
            feed: FeedWatch(url: configuration.databaseURL, logger: logger), blobs: blobs,
            secure: secure, logger: logger)
    }

    /// What runs beside the server for the board.
    public var services: [any Service] { [store, changes, feed] }

    init(
        configuration: BoardConfiguration, store: SharedStore<any BoardReads>, changes: StorePool, feed: FeedWatch, blobs: any BlobStore,
        secure: Bool,
        logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.changes = changes
        self.feed = feed
        self.blobs = blobs
        self.secure = secure || configuration.publicOrigin?.lowercased().hasPrefix("https://") == true
        self.limiter = AddressLimiter(perAddress: configuration.signInsPerMinute)
        self.signIns = Budget(perPrincipal: 2, total: configuration.signInsAtOnce)
        self.sessionLookups = Budget(perPrincipal: 8, total: 64)
        self.actions = Budget(perPrincipal: 2, total: changes.maximum)
        self.logger = logger
    }

    /// Adds the board's routes, under `/board`.
    public func add(to router: Router<Context>) {
        // Browsers ask for /favicon.ico whatever a page links: the board's icon, kept for a day.
        router.get("favicon.ico") { _, _ in
            let icon = BoardAssets.served.values.first { $0.name.hasPrefix("icon.") }!
            return Response(
                status: .ok, headers: [.contentType: icon.contentType, .cacheControl: "public, max-age=86400"],
                body: .init(byteBuffer: icon.bytes))
        }
        let board = router.group("board").add(middleware: BoardErrorPages<Context>())
        board.get() { request, context in try await page(request, context) { session in try await boardPage(request, session) } }
        board.get("sign-in") { request, _ in signInPage(request, problem: nil) }
        board.post("sign-in") { request, context in try await signIn(request, context) }
        board.post("sign-out") { request, context in try await signOut(request, context) }
        board.get("changes") { request, context in try await changes(request, context) }
        board.get("map") { request, context in try await page(request, context) { session in try await mapPage(request, session) } }
        board.get("map.json") { request, context in try await mapJSON(request, context) }
        board.get("day.csv") { request, context in try await dayCSV(request, context) }
        board.get("new") { request, context in
            try await page(request, context) { session in try await newTaskPage(request, session, problem: nil, form: nil) }
        }
        board.post("tasks") { request, context in try await createTask(request, context) }
        board.get("tasks/:id") { request, context in
            let id = try taskID(context)
            return try await page(request, context) { session in try await taskPage(id, request, session, problem: nil) }
        }
        // The literal path takes every method for itself: its POST is registered with it.
        board.get("tasks/:id/cancel") { request, context in
            try await page(request, context) { session in try await cancelPage(request, context, session) }
        }
        board.post("tasks/:id/cancel") { request, context in try await taskAction(request, context, action: "cancel") }
        board.post("tasks/:id/:action") { request, context in try await taskAction(request, context) }
        board.get("plan") { request, context in try await page(request, context) { session in try await planPage(request, session) } }
        board.post("plan") { request, context in try await applyPlan(request, context) }
        board.post("messages/release") { request, context in try await releaseMessages(request, context) }
        board.get("conflicts") { request, context in
            try await page(request, context) { session in try await conflictsPage(request, session) }
        }
        board.post("conflicts/:id/:action") { request, context in try await conflictAction(request, context) }
        board.get("people") { request, context in try await page(request, context) { session in try await peoplePage(request, session) } }
        board.post("people/:id/pair") { request, context in try await pairPhone(request, context) }
        board.get("attachments/:id") { request, context in try await attachment(request, context) }
        board.get("static/:file") { _, context in try staticFile(context) }
    }

    /// Reads through the board's shared connection: a refusal of the store's (no such task, a
    /// malformed day) answers for itself, a store that is away is a 503 (``SharedStore``).
    func read<R: Sendable>(_ body: @escaping @Sendable (any BoardReads) async throws -> R) async throws -> R {
        try await store.run(body)
    }

    // MARK: Sessions

    /// The open session the request's cookie names, if any. Each lookup costs a round trip on
    /// ``store``'s connection. A cookie this service has seen name an open session in the last ten
    /// minutes is looked up whatever its address did (a dispatcher is never locked out by junk from
    /// their office's address); any other has at most ``sessionLookups``' share going at once per
    /// address (reserved before the master is asked), and an address whose cookies named no session
    /// ten times this minute is refused without asking, as for failed sign-ins.
    func session(_ request: Request, _ context: Context) async throws -> BoardSession? {
        guard let secret = (try FormGuard.cookie(Self.sessionCookie, in: request)).map(String.init), secret.utf8.count == 43 else {
            return nil
        }
        let digest = TokenDigest(secret: secret)
        let now = ContinuousClock.now
        let seen = recentSessions.mutate { $0[digest].map { now - $0 < .seconds(600) } ?? false }
        if seen { return try await lookUp(secret, digest) }
        let address = AddressLimiter.key(context.remoteAddress?.ipAddress)
        guard limiter.allows(address) else {
            throw BoardProblem(.tooManyRequests, "Too many requests with unknown sessions: wait a minute and sign in again.")
        }
        guard case .success(let place) = sessionLookups.reserve(for: address) else {
            throw BoardProblem(.serviceUnavailable, "The board is busy: try again in a moment.")
        }
        defer { place.release() }
        let found = try await lookUp(secret, digest)
        if found == nil { limiter.failed(address) }
        return found
    }

    /// Asks the master for a session, and remembers whether it was open (at most 10,000 cookies).
    private func lookUp(_ secret: String, _ digest: TokenDigest) async throws -> BoardSession? {
        let found = try await store.run { try await $0.boardSession(secret: secret) }
        recentSessions.mutate { recent in
            guard found != nil else {
                recent[digest] = nil
                return
            }
            if recent.count >= 10_000 {
                let now = ContinuousClock.now
                recent = recent.filter { now - $0.value < .seconds(600) }
                if recent.count >= 10_000 { recent.removeAll() }
            }
            recent[digest] = ContinuousClock.now
        }
        return found
    }

    /// A page for the signed-in; anyone else goes to the sign-in page (told their session ended, if they had one).
    func page(_ request: Request, _ context: Context, _ body: (BoardSession) async throws -> Response) async throws -> Response {
        guard let session = try await session(request, context) else {
            let had = (try? FormGuard.cookie(Self.sessionCookie, in: request)) != nil
            var response = redirect(to: "/board/sign-in" + (had ? "?ended=1" : ""))
            if had { response.headers[values: .setCookie].append(cookie(Self.sessionCookie, "", maxAge: 0)) }
            return response
        }
        var response = try await body(session)
        if (try? FormGuard.cookie(Self.flashCookie, in: request)) != nil {
            response.headers[values: .setCookie].append(cookie(Self.flashCookie, "", maxAge: 0))
        }
        return response
    }

    /// The message the last action left for the next page (``flashCookie``), if any.
    func flash(_ request: Request) -> String? {
        (try? FormGuard.cookie(Self.flashCookie, in: request))?.removingPercentEncoding
    }

    func cookie(_ name: String, _ value: String, maxAge: Int) -> String {
        FormGuard.cookie(name, value, maxAge: maxAge)
    }

    /// Whether a POST may act: its CSRF token is the session's and, when the browser says
    /// where the request comes from, it comes from this site.
    func checkForgery(_ request: Request, _ form: FormFields, expected: String) -> Bool {
        if FormGuard.crossSite(request) { return false }
        if let origin = request.headers[HTTPField.Name("Origin")!] {
            if let expected = configuration.publicOrigin {
                guard origin.lowercased() == expected.lowercased() else { return false }
            } else {
                guard let host = request.head.authority, origin == "\(secure ? "https" : "http")://\(host)" else { return false }
            }
        }
        let given = form["csrf"] ?? request.headers[HTTPField.Name("X-CSRF-Token")!] ?? ""
        return FormGuard.matches(given, expected)
    }

    func readForm(_ request: Request) async throws -> FormFields {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: Self.formLimit)
        } catch {
            throw BoardProblem(.contentTooLarge, "a form may hold at most \(Self.formLimit / 1024) KB")
        }
        guard let fields = FormFields(Substring(String(buffer: buffer))) else {
            throw BoardProblem(.badRequest, "the form's fields are not readable (application/x-www-form-urlencoded, UTF-8)")
        }
        return fields
    }

    func query(_ request: Request) throws -> FormFields {
        guard let fields = FormFields(Substring(request.uri.query ?? "")) else {
            throw BoardProblem(.badRequest, "the address's query is not readable")
        }
        return fields
    }

    // MARK: Sign-in and out

    func signInPage(_ request: Request, problem: String?, status: HTTPResponse.Status = .ok) -> Response {
        let ended = (try? query(request))?["ended"] == "1"
        let nonce = TokenSecret.randomBase64URL()
        var response = BoardPages.response(
            BoardPages.signIn(
                nonce: nonce, problem: problem,
                notice: ended && problem == nil ? "Your session has ended: sign in again." : nil),
            status: status, configuration: configuration)
        response.headers[values: .setCookie].append(cookie(Self.signInCookie, nonce, maxAge: 1800))
        return response
    }

    func signIn(_ request: Request, _ context: Context) async throws -> Response {
        let form: FormFields
        do { form = try await readForm(request) } catch let problem as BoardProblem {
            return signInPage(request, problem: problem.message, status: problem.status)
        }
        let nonce = (try FormGuard.cookie(Self.signInCookie, in: request)).map(String.init) ?? ""
        guard checkForgery(request, form, expected: nonce) else {
            logger.notice("board: sign-in refused: CSRF token missing or wrong")
            return signInPage(request, problem: "This form has expired or did not come from the board: sign in again.", status: .forbidden)
        }
        // Counted before anything costs: a junk token, a refusal and a master that could not answer all count.
        let address = AddressLimiter.key(context.remoteAddress?.ipAddress)
        guard limiter.attempt(address) else {
            logger.notice("board: sign-in refused: too many attempts", metadata: ["address": "\(address)"])
            return busy(
                signInPage(request, problem: "Too many sign-in attempts: wait a minute and try again.", status: .tooManyRequests),
                retryAfter: 60)
        }
        let token = (form["token"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let result: BoardSignIn
        if TokenSecret.isWellFormed(token) {
            guard case .success(let place) = signIns.reserve(for: address) else {
                logger.notice("board: sign-in refused: too many at once", metadata: ["address": "\(address)"])
                return busy(
                    signInPage(request, problem: "Too many sign-ins at once: try again in a moment.", status: .serviceUnavailable),
                    retryAfter: 1)
            }
            defer { place.release() }
            do {
                // One statement on the board's shared connection: a sign-in opens no connection of its own.
                result = try await store.run { [lifetime = configuration.sessionLifetime] in
                    try await $0.openBoardSession(tokenSecret: token, lifetime: lifetime)
                }
            } catch {
                return busy(
                    signInPage(
                        request, problem: "The master database is not available: try again in a moment.",
                        status: .serviceUnavailable), retryAfter: 5)
            }
        } else {
            result = .unknownToken
        }
        if case .signedIn = result { limiter.succeeded(address) }
        switch result {
        case .unknownToken:
            logger.notice("board: sign-in refused: unknown or revoked token", metadata: ["address": "\(address)"])
            return signInPage(request, problem: "That token is unknown or revoked.", status: .unauthorized)
        case .notAManager:
            logger.notice("board: sign-in refused: not a manager", metadata: ["address": "\(address)"])
            return signInPage(
                request, problem: "The board is for managers and admins; a worker's token does not open it.", status: .forbidden)
        case .signedIn(let secret, let session):
            logger.info("board: signed in", metadata: ["person": "\(session.person.id)"])
            var response = redirect(to: "/board")
            let lifetime = Int(configuration.sessionLifetime.components.seconds)
            response.headers[values: .setCookie].append(cookie(Self.sessionCookie, secret, maxAge: lifetime))
            response.headers[values: .setCookie].append(cookie(Self.signInCookie, "", maxAge: 0))
            return response
        }
    }

    func signOut(_ request: Request, _ context: Context) async throws -> Response {
        guard let secret = (try FormGuard.cookie(Self.sessionCookie, in: request)).map(String.init),
            let session = try await session(request, context)
        else {
            return redirect(to: "/board/sign-in")
        }
        let form = try await readForm(request)
        guard checkForgery(request, form, expected: session.csrf) else { throw forged }
        try await store.run { try await $0.closeBoardSession(secret: secret) }
        logger.info("board: signed out", metadata: ["person": "\(session.person.id)"])
        var response = redirect(to: "/board/sign-in")
        response.headers[values: .setCookie].append(cookie(Self.sessionCookie, "", maxAge: 0))
        return response
    }

    /// `response` with a Retry-After of `seconds`.
    func busy(_ response: Response, retryAfter seconds: Int) -> Response {
        var response = response
        response.headers[.retryAfter] = String(seconds)
        return response
    }

    /// The refusal of a form that did not come from the session (a page, or JSON for the board's script).
    var forged: BoardProblem {
        BoardProblem(
            .forbidden, "This form did not come from your board session (CSRF token missing or wrong): reload the page and try again.")
    }

    // MARK: Responses

    func redirect(to location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    func taskID(_ context: Context) throws -> Int64 {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw BoardProblem(.notFound, "no such task")
        }
        return id
    }

    // MARK: Static files

    func staticFile(_ context: Context) throws -> Response {
        let name = context.parameters.get("file") ?? ""
        if let asset = BoardAssets.served[name] {
            // Its name changes with its bytes: kept for a year, never asked again.
            return Response(
                status: .ok,
                headers: [
                    .contentType: asset.contentType, .cacheControl: "public, max-age=31536000, immutable",
                    HTTPField.Name("X-Content-Type-Options")!: "nosniff",
                ],
                body: .init(byteBuffer: asset.bytes))
        }
        guard name == "leaflet.js" || name == "leaflet.css" else { throw BoardProblem(.notFound, "no such file") }
        // Only these two names, read from the configured folder: no path from the request reaches the disk.
        let minified = name.replacingOccurrences(of: ".js", with: ".min.js")
        guard
            let data = FileManager.default.contents(atPath: configuration.leafletDirectory.appending(path: minified).path)
                ?? FileManager.default.contents(atPath: configuration.leafletDirectory.appending(path: name).path)
        else {
            throw BoardProblem(.notFound, "Leaflet is not installed here (apt-get install libjs-leaflet, or --leaflet-dir)")
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: name.hasSuffix(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8",
                .cacheControl: "private, max-age=300", HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// A refusal of the board's, with the status it answers and a line for the person.
struct BoardProblem: ShownError {
    var status: HTTPResponse.Status
    var message: String
    var shownMessage: String { message }

    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    /// The board's words for any error that answers for itself: a rule a manager may override
    /// says where to do so.
    init(_ error: any ShownError) {
        let overridable = (error as? TeamworkError)?.overridable == true
        self.init(
            error.status,
            error.shownMessage + (overridable ? ": open the task and tick “even without a required skill” to do it anyway" : ""))
    }
}

/// Every error a board route meets answers for itself (``ShownError``): as JSON to the board's
/// script, and as the board's page, with the same status and line, to a browser.
struct BoardErrorPages<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any ShownError {
            guard request.headers[.accept]?.contains("application/json") != true else { throw error }
            var response = BoardPages.response(
                BoardPages.problemPage(BoardProblem(error).message), status: error.status, configuration: nil)
            response.headers[.retryAfter] = error.retryAfter
            return response
        }
    }
}
