import BlobStore
import CentralStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TeamworkModel

/// The board's routes (docs/security.md, "The board"). Every page and action
/// needs a session, opened at `/board/sign-in` with a manager's or an admin's
/// access token; every POST carries the session's CSRF token and, when the
/// browser says where it comes from (`Origin`, `Sec-Fetch-Site`), comes from
/// the board itself. Changes are made through the board's database role with
/// the signed-in person as the actor: the task history names them.
struct BoardRoutes: Sendable {
    let configuration: BoardConfiguration
    /// Reads, through the board's own role (one shared connection).
    let store: SharedStore
    let feed: FeedWatch
    let blobs: FileBlobStore
    let secure: Bool
    let limiter: AddressLimiter
    /// Sign-ins being answered, by address: each costs a round trip on ``store``'s connection.
    let signIns: Budget<String>
    /// Session lookups being answered, by address: each costs a round trip on ``store``'s connection.
    let sessionLookups: Budget<String>
    /// Cookies seen naming an open session, and when: looked up without the address's budget.
    let recentSessions = Locked<[TokenDigest: ContinuousClock.Instant]>([:])
    /// Actions being made, by person: each holds a master connection of its own (a transaction as that person).
    let actions: Budget<Int64>
    let logger: Logger

    static let sessionCookie = "tw_session"
    static let signInCookie = "tw_signin"
    static let flashCookie = "tw_flash"
    /// The most a form's body may hold.
    static let formLimit = 64 * 1024

    init(configuration: BoardConfiguration, store: SharedStore, feed: FeedWatch, blobs: FileBlobStore, secure: Bool, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.feed = feed
        self.blobs = blobs
        self.secure = secure || configuration.publicOrigin?.lowercased().hasPrefix("https://") == true
        self.limiter = AddressLimiter(perAddress: configuration.signInsPerMinute)
        self.signIns = Budget(perPrincipal: 2, total: configuration.signInsAtOnce)
        self.sessionLookups = Budget(perPrincipal: 8, total: 64)
        self.actions = Budget(perPrincipal: 2, total: configuration.actionConnections)
        self.logger = logger
    }

    func add(to router: Router<SyncRequestContext>) {
        router.get("/board") { request, context in try await page(request, context) { session in try await boardPage(request, session) } }
        router.get("/board/sign-in") { request, _ in signInPage(request, problem: nil) }
        router.post("/board/sign-in") { request, context in try await signIn(request, context) }
        router.post("/board/sign-out") { request, context in try await signOut(request, context) }
        router.get("/board/changes") { request, context in try await changes(request, context) }
        router.get("/board/map") { request, context in try await page(request, context) { session in try await mapPage(request, session) } }
        router.get("/board/map.json") { request, context in try await mapJSON(request, context) }
        router.get("/board/day.csv") { request, context in try await dayCSV(request, context) }
        router.get("/board/new") { request, context in
            try await page(request, context) { session in try await newTaskPage(request, session, problem: nil, form: nil) }
        }
        router.post("/board/tasks") { request, context in try await createTask(request, context) }
        router.get("/board/tasks/:id") { request, context in
            let id = try taskID(context)
            return try await page(request, context) { session in try await taskPage(id, request, session, problem: nil) }
        }
        // The literal path takes every method for itself: its POST is registered with it.
        router.get("/board/tasks/:id/cancel") { request, context in
            try await page(request, context) { session in try await cancelPage(request, context, session) }
        }
        router.post("/board/tasks/:id/cancel") { request, context in try await taskAction(request, context, action: "cancel") }
        router.post("/board/tasks/:id/:action") { request, context in try await taskAction(request, context) }
        router.get("/board/conflicts") { request, context in
            try await page(request, context) { session in try await conflictsPage(request, session) }
        }
        router.post("/board/conflicts/:id/:action") { request, context in try await conflictAction(request, context) }
        router.get("/board/attachments/:id") { request, context in try await attachment(request, context) }
        router.get("/board/static/:file") { _, context in try staticFile(context) }
    }

    /// Reads through the board's shared connection; a refusal of the store's (no such task, a
    /// malformed day) is the board's 404 or 422, not the 503 of a store that is away.
    func read<R: Sendable>(_ body: @escaping @Sendable (CentralStore) async throws -> R) async throws -> R {
        try await store.run { central in
            do {
                return try await body(central)
            } catch let error as TeamworkError {
                throw BoardProblem.from(error) ?? error
            }
        }
    }

    // MARK: Sessions

    /// The open session the request's cookie names, if any. Each lookup costs a round trip on
    /// ``store``'s connection. A cookie this service has seen name an open session in the last ten
    /// minutes is looked up whatever its address did (a dispatcher is never locked out by junk from
    /// their office's address); any other has at most ``sessionLookups``' share going at once per
    /// address (reserved before the master is asked), and an address whose cookies named no session
    /// ten times this minute is refused without asking, as for failed sign-ins.
    func session(_ request: Request, _ context: SyncRequestContext) async throws -> BoardSession? {
        guard let secret = request.cookies[Self.sessionCookie]?.value, secret.utf8.count == 43 else { return nil }
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
    func page(_ request: Request, _ context: SyncRequestContext, _ body: (BoardSession) async throws -> Response) async throws -> Response {
        guard let session = try await session(request, context) else {
            let had = request.cookies[Self.sessionCookie] != nil
            var response = redirect(to: "/board/sign-in" + (had ? "?ended=1" : ""))
            if had { response.headers[values: .setCookie].append(cookie(Self.sessionCookie, "", path: "/board", maxAge: 0)) }
            return response
        }
        var response = try await body(session)
        if request.cookies[Self.flashCookie] != nil {
            response.headers[values: .setCookie].append(cookie(Self.flashCookie, "", path: "/board", maxAge: 0))
        }
        return response
    }

    func cookie(_ name: String, _ value: String, path: String, maxAge: Int) -> String {
        "\(name)=\(value); Path=\(path); Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// Whether a POST may act: its CSRF token is the session's and, when the browser says
    /// where the request comes from, it comes from this site.
    func checkForgery(_ request: Request, _ form: FormFields, expected: String) -> Bool {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin", site != "none" { return false }
        if let origin = request.headers[HTTPField.Name("Origin")!] {
            if let expected = configuration.publicOrigin {
                guard origin.lowercased() == expected.lowercased() else { return false }
            } else {
                guard let host = request.head.authority, origin == "\(secure ? "https" : "http")://\(host)" else { return false }
            }
        }
        let given = form["csrf"] ?? request.headers[HTTPField.Name("X-CSRF-Token")!] ?? ""
        return Self.equalInConstantTime(given, expected)
    }

    static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count, !x.isEmpty else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
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
        response.headers[values: .setCookie].append(cookie(Self.signInCookie, nonce, path: "/board/sign-in", maxAge: 1800))
        return response
    }

    func signIn(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        let form: FormFields
        do { form = try await readForm(request) } catch let problem as BoardProblem {
            return signInPage(request, problem: problem.message, status: problem.status)
        }
        let nonce = request.cookies[Self.signInCookie]?.value ?? ""
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
            response.headers[values: .setCookie].append(cookie(Self.sessionCookie, secret, path: "/board", maxAge: lifetime))
            response.headers[values: .setCookie].append(cookie(Self.signInCookie, "", path: "/board/sign-in", maxAge: 0))
            return response
        }
    }

    func signOut(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        guard let secret = request.cookies[Self.sessionCookie]?.value, let session = try await session(request, context) else {
            return redirect(to: "/board/sign-in")
        }
        let form = try await readForm(request)
        guard checkForgery(request, form, expected: session.csrf) else { return forged(json: false) }
        try await store.run { try await $0.closeBoardSession(secret: secret) }
        logger.info("board: signed out", metadata: ["person": "\(session.person.id)"])
        var response = redirect(to: "/board/sign-in")
        response.headers[values: .setCookie].append(cookie(Self.sessionCookie, "", path: "/board", maxAge: 0))
        return response
    }

    /// `response` with a Retry-After of `seconds`.
    func busy(_ response: Response, retryAfter seconds: Int) -> Response {
        var response = response
        response.headers[.retryAfter] = String(seconds)
        return response
    }

    func forged(json: Bool) -> Response {
        let message = "This form did not come from your board session (CSRF token missing or wrong): reload the page and try again."
        if json { return Self.json(["error": message], status: .forbidden) }
        return BoardPages.response(BoardPages.problemPage(message), status: .forbidden, configuration: configuration)
    }

    // MARK: Responses

    func redirect(to location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    static func json(_ fields: [String: String], status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONEncoder().encode(fields)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Where a form said to go back to, if it is a page of the board; else the board.
    static func back(_ value: String?) -> String {
        guard let value, value.hasPrefix("/board"), !value.hasPrefix("//"), value.utf8.count <= 2_000,
            value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "\\" })
        else { return "/board" }
        let rest = value.dropFirst("/board".count)
        guard rest.isEmpty || rest.hasPrefix("/") || rest.hasPrefix("?") else { return "/board" }
        return value
    }

    func taskID(_ context: SyncRequestContext) throws -> Int64 {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw BoardProblem(.notFound, "no such task")
        }
        return id
    }

    // MARK: Static files

    func staticFile(_ context: SyncRequestContext) throws -> Response {
        let name = context.parameters.get("file") ?? ""
        let type: String
        let bytes: ByteBuffer
        switch name {
        case "board.js": (type, bytes) = ("text/javascript; charset=utf-8", ByteBuffer(string: BoardAssets.boardJS))
        case "map.js": (type, bytes) = ("text/javascript; charset=utf-8", ByteBuffer(string: BoardAssets.mapJS))
        case "board.css": (type, bytes) = ("text/css; charset=utf-8", ByteBuffer(string: BoardAssets.css))
        case "leaflet.js", "leaflet.css":
            // Only these two names, read from the configured folder: no path from the request reaches the disk.
            let minified = name.replacingOccurrences(of: ".js", with: ".min.js")
            guard
                let data = FileManager.default.contents(atPath: configuration.leafletDirectory.appending(path: minified).path)
                    ?? FileManager.default.contents(atPath: configuration.leafletDirectory.appending(path: name).path)
            else {
                throw BoardProblem(.notFound, "Leaflet is not installed here (apt-get install libjs-leaflet, or --leaflet-dir)")
            }
            (type, bytes) = (name.hasSuffix(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8", ByteBuffer(bytes: data))
        default:
            throw BoardProblem(.notFound, "no such file")
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: type, .cacheControl: "private, max-age=300",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ],
            body: .init(byteBuffer: bytes))
    }
}

/// A refusal of the board's, with the status it answers and a line for the person.
struct BoardProblem: Error, HTTPResponseError {
    var status: HTTPResponse.Status
    var message: String

    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let wantsJSON = request.headers[.accept]?.contains("application/json") == true
        var response =
            wantsJSON
            ? BoardRoutes.json(["error": message], status: status)
            : BoardPages.response(BoardPages.problemPage(message), status: status, configuration: nil)
        if status == .tooManyRequests || status == .serviceUnavailable {
            response.headers[.retryAfter] = status == .tooManyRequests ? "60" : "1"
        }
        return response
    }

    /// The problem a store error comes to.
    static func from(_ error: any Error) -> BoardProblem? {
        guard let error = error as? TeamworkError else { return nil }
        switch error.code {
        case .notFound: return BoardProblem(.notFound, error.message)
        case .conflict:
            return BoardProblem(
                .conflict,
                error.message + (error.overridable ? ": open the task and tick “even without a required skill” to do it anyway" : ""))
        case .invalidInput, .usage: return BoardProblem(.unprocessableContent, error.message)
        default: return nil
        }
    }
}
