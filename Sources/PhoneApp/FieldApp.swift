import CentralStore
import Crypto
import Foundation
import HTMLText
import HTTPTypes
import Hummingbird
import NIOCore
import ServerSupport
import TeamworkModel

/// `/app/`: the field worker's phone app (docs/phone.md). Plain JavaScript modules, no framework,
/// no build step, every file from the service itself; a service worker keeps them for opening
/// with no network, and the day's rows live in the phone's IndexedDB. The app speaks the workers'
/// protocol (`/v1`, docs/protocol.md) with the phone's own token, held in a cookie its script
/// cannot read (HttpOnly, SameSite=Strict, Secure over TLS): every `/v1` request that signs in
/// by the cookie must also carry ``header``, which a page of another site cannot send.
///
///     GET  /app/pair?code=…     the pairing link's page: name this phone
///     POST /app/pair            redeems the one-time code for the phone's token (the cookie)
///     POST /app/sign-out        revokes the phone's token and ends the cookie
///     GET  /app/                the app; its files beside it
public struct FieldApp<Context: RemoteAddressRequestContext>: Sendable {
    let store: SharedStore<any EndpointStore>
    /// Failed pairings per address a minute: a code is 256 random bits, but nobody gets to try
    /// at the speed of the network, nor make the master work for junk.
    let limiter = AddressLimiter(perAddress: 10)
    /// Pairings, and sign-outs, in the works at once, per address and in all (each a statement on
    /// the shared connection every device's token check uses).
    let pairings = Budget<String>(perPrincipal: 2, total: 8)
    let signOuts = Budget<String>(perPrincipal: 2, total: 8)

    /// The cookie that holds the phone's token, and the header every request signed in by it carries.
    static var cookie: String { FieldAppAccess.cookie }
    static var header: HTTPField.Name { FieldAppAccess.header }
    /// The pairing form's CSRF cookie.
    static var pairCookie: String { FormGuard.cookiePrefix + "tw_pair" }

    public init(store: SharedStore<any EndpointStore>) { self.store = store }

    public func add(to router: Router<Context>) {
        // The service worker's scope is `/app/`: the app's address ends in a slash.
        router.get("app") { request, _ in
            guard request.uri.path == "/app" else { return Self.file("index.html", request) ?? Self.missing() }
            return Response(status: .movedPermanently, headers: [.location: "/app/"])
        }
        router.get("app/pair") { request, context in try await pairPage(request, context) }
        router.post("app/pair") { request, context in try await pair(request, context) }
        router.post("app/sign-out") { request, context in try await signOut(request, context) }
        router.get("app/:file") { request, context in Self.file(context.parameters.get("file") ?? "", request) ?? Self.missing() }
    }

    // MARK: Files

    /// The app's files by the name they are served under, and a version of them all (the service
    /// worker keeps one cache per version, so a new build replaces every file at once).
    static var assets: [String: StaticFile] { FieldAppFiles.assets }
    public static var version: String { FieldAppFiles.version }

    static func file(_ name: String, _ request: Request) -> Response? {
        guard let asset = assets[name] else { return nil }
        var headers = securityHeaders
        // Asked again every time the network is there (the service worker answers when it is not):
        // the phone holding this very file gets 304 and no body (RFC 9110, 13.1.2), not its bytes again.
        headers[.cacheControl] = "no-cache"
        let (status, fields, body) = asset.response(to: request.head, headers: headers)
        return Response(status: status, headers: fields, body: body.map { .init(byteBuffer: $0) } ?? .init())
    }

    static func missing() -> Response {
        Response(
            status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: "not found\n")))
    }

    /// The app's pages: scripts and styles from the service only, nothing inline, no frames.
    static var securityHeaders: HTTPFields {
        [
            .contentSecurityPolicy:
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
                + "manifest-src 'self'; worker-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff", HTTPField.Name("Referrer-Policy")!: "no-referrer",
            HTTPField.Name("X-Frame-Options")!: "DENY",
        ]
    }

    // MARK: Pairing

    /// The pairing link's page: whose phone it pairs, and a form that names the phone; a link used
    /// up or expired says so at once. Nothing is redeemed by opening it (a link preview or a scanner
    /// that follows links does not use the code up). Looking the code up is budgeted as pairing is:
    /// counted against the address as it starts (given back for a live code), two at once.
    func pairPage(_ request: Request, _ context: Context) async throws -> Response {
        let words = FieldAppHTML.words(request)
        let code = request.uri.queryParameters.get("code") ?? ""
        guard Self.isCode(code) else { return page(FieldAppHTML.problem(words.badLink, words), status: .badRequest) }
        let address = AddressLimiter.key(context.remoteAddress?.ipAddress)
        guard limiter.attempt(address), case .success(let place) = pairings.reserve(for: address) else {
            return page(FieldAppHTML.problem(words.tooMany, words), status: .tooManyRequests)
        }
        defer { place.release() }
        guard let person = try await store.run({ try await $0.pairingPerson(code: code) }) else {
            return page(FieldAppHTML.problem(words.usedUp, words), status: .gone)
        }
        limiter.succeeded(address)
        let csrf = TokenSecret.randomBase64URL()
        return page(FieldAppHTML.pair(code: code, csrf: csrf, person: person, words: words), csrf: csrf)
    }

    func pair(_ request: Request, _ context: Context) async throws -> Response {
        let words = FieldAppHTML.words(request)
        let address = AddressLimiter.key(context.remoteAddress?.ipAddress)
        // Counted as a failure before it is tried, given back when it pairs a phone.
        guard limiter.attempt(address) else {
            return page(FieldAppHTML.problem(words.tooMany, words), status: .tooManyRequests)
        }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: 4 * 1024) } catch {
            return page(FieldAppHTML.problem(words.unreadable, words), status: .contentTooLarge)
        }
        guard let form = FormFields(Substring(String(buffer: buffer))) else {
            return page(FieldAppHTML.problem(words.unreadable, words), status: .badRequest)
        }
        let cookie = try FormGuard.cookie(Self.pairCookie, in: request).map(String.init) ?? ""
        guard !FormGuard.crossSite(request), !cookie.isEmpty, FormGuard.matches(form["csrf"] ?? "", cookie) else {
            return page(FieldAppHTML.problem(words.forged, words), status: .forbidden)
        }
        let code = form["code"] ?? ""
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        guard Self.isCode(code) else {
            return page(FieldAppHTML.problem(words.badLink, words), status: .badRequest)
        }
        // Counted as the master counts it (code points), one line, with nothing that turns text around on a page (bidi controls).
        guard (1...60).contains(name.unicodeScalars.count),
            !name.unicodeScalars.contains(where: { TerminalText.isUnsafe($0) || $0.properties.generalCategory == .control })
        else {
            guard let person = try await store.run({ try await $0.pairingPerson(code: code) }) else {
                return page(FieldAppHTML.problem(words.usedUp, words), status: .gone)
            }
            limiter.succeeded(address)
            return page(
                FieldAppHTML.pair(code: code, csrf: cookie, person: person, words: words, problem: words.nameRule), csrf: cookie,
                status: .unprocessableContent)
        }
        guard case .success(let place) = pairings.reserve(for: address) else {
            return page(FieldAppHTML.problem(words.tooMany, words), status: .tooManyRequests)
        }
        defer { place.release() }
        // The phone's previous sign-in (the same person's, or whoever had the phone before) ends
        // with this one: a phone holds one person's token at a time, and none lingers unseen.
        let previous = try FormGuard.cookie(Self.cookie, in: request).map(String.init).flatMap { TokenSecret.isWellFormed($0) ? $0 : nil }
        guard
            let redeemed = try await store.run({ store -> CentralStore.RedeemedPairing? in
                guard let redeemed = try await store.redeemPairing(code: code, deviceName: name) else { return nil }
                if let previous { try await store.signOutDevice(secret: previous) }
                return redeemed
            })
        else {
            context.logger.notice("refused: pairing code unknown, used or expired", metadata: ["address": "\(address)"])
            return page(FieldAppHTML.problem(words.usedUp, words), status: .gone)
        }
        limiter.succeeded(address)
        context.logger.info(
            "paired a phone",
            metadata: [
                "person": "\(redeemed.personID)", "token": "\(redeemed.tokenID)", "pairing": "\(redeemed.pairingID)",
                "address": "\(address)",
            ])
        var headers = Self.securityHeaders
        // `#paired`: the app shows nothing it kept until the service says whose phone it is now.
        headers[.location] = "/app/#paired"
        headers[.cacheControl] = "no-store"
        headers[values: .setCookie].append(FieldAppAccess.deviceCookie(redeemed.secret))
        headers[values: .setCookie].append(FormGuard.cookie(Self.pairCookie, "", maxAge: 0))
        return Response(status: .seeOther, headers: headers)
    }

    /// Revokes the phone's own token (the app wipes what it kept first) and ends the cookie. A
    /// sign-out with a token the service does not know counts against the address, as a failed
    /// pairing does; sign-outs have a budget of their own (a flood of them never stops pairing).
    func signOut(_ request: Request, _ context: Context) async throws -> Response {
        guard request.headers[Self.header] != nil, !FormGuard.crossSite(request) else {
            return Response(status: .forbidden, headers: [.contentType: "text/plain; charset=utf-8"])
        }
        if let secret = try FormGuard.cookie(Self.cookie, in: request).map(String.init), TokenSecret.isWellFormed(secret) {
            let address = AddressLimiter.key(context.remoteAddress?.ipAddress)
            guard limiter.allows(address), case .success(let place) = signOuts.reserve(for: address) else {
                return Response(status: .tooManyRequests, headers: [.contentType: "text/plain; charset=utf-8"])
            }
            defer { place.release() }
            if try await !store.run({ try await $0.signOutDevice(secret: secret) }) { limiter.failed(address) }
        }
        var headers: HTTPFields = [.cacheControl: "no-store"]
        headers[values: .setCookie].append(FormGuard.cookie(Self.cookie, "", maxAge: 0))
        return Response(status: .noContent, headers: headers)
    }

    static func isCode(_ code: String) -> Bool {
        code.utf8.count == 43
            && code.utf8.allSatisfy {
                $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || (48...57).contains($0) || (65...90).contains($0)
                    || (97...122).contains($0)
            }
    }

    func page(_ html: HTML, csrf: String? = nil, status: HTTPResponse.Status = .ok) -> Response {
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        if let csrf {
            headers[values: .setCookie].append(FormGuard.cookie(Self.pairCookie, csrf, maxAge: 900))
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html.text)))
    }
}

/// The pairing pages, in the phone's language (English or Swedish, by `Accept-Language`).
enum FieldAppHTML {
    struct Words {
        var lang, title, intro, nameLabel, nameHint, pairButton, badLink, usedUp, tooMany, unreadable, forged, nameRule,
            problemTitle: String
        /// Whose phone the link pairs; `{name}` is the person's name.
        var forWhom: String
    }

    static let english = Words(
        lang: "en", title: "Pair this phone", intro: "This phone will show your day's work and work without a signal.",
        nameLabel: "This phone's name", nameHint: "So your dispatcher can tell your phones apart, like “Ann's Pixel”.",
        pairButton: "Pair this phone", badLink: "This is not a pairing link. Ask your dispatcher for a new one.",
        usedUp: "This pairing link is used up or has expired. Ask your dispatcher for a new one.",
        tooMany: "Too many tries from here. Wait a minute and try again.", unreadable: "The form could not be read.",
        forged: "This form did not come from this page. Open the pairing link again.",
        nameRule: "A name is 1 to 60 characters on one line.", problemTitle: "Pairing did not work",
        forWhom: "This link pairs this phone for {name}. Not {name}? Close this page and ask your dispatcher for a link of your own.")
    static let swedish = Words(
        lang: "sv", title: "Koppla den här telefonen", intro: "Telefonen visar dagens arbete och fungerar utan täckning.",
        nameLabel: "Telefonens namn", nameHint: "Så att arbetsledaren kan skilja dina telefoner åt, t.ex. ”Annas Pixel”.",
        pairButton: "Koppla telefonen", badLink: "Det här är ingen kopplingslänk. Be arbetsledaren om en ny.",
        usedUp: "Kopplingslänken är redan använd eller har gått ut. Be arbetsledaren om en ny.",
        tooMany: "För många försök härifrån. Vänta en minut och försök igen.", unreadable: "Formuläret gick inte att läsa.",
        forged: "Formuläret kom inte från den här sidan. Öppna kopplingslänken igen.",
        nameRule: "Ett namn är 1 till 60 tecken på en rad.", problemTitle: "Kopplingen fungerade inte",
        forWhom: "Länken kopplar telefonen till {name}. Är du inte {name}? Stäng sidan och be arbetsledaren om en egen länk.")

    static func words(_ request: Request) -> Words {
        let accepted = request.headers[.acceptLanguage] ?? ""
        let first =
            accepted.split(separator: ",").first.map { $0.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return first.hasPrefix("sv") ? swedish : english
    }

    static func frame(_ title: String, lang: String, _ main: HTML) -> HTML {
        """
        <!DOCTYPE html>
        <html lang="\(lang)">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title) · Teamwork</title>
        <link rel="stylesheet" href="/app/app.css">
        <link rel="icon" href="/app/icon.svg">
        </head>
        <body>
        <main class="pairing">
        \(main)
        </main>
        </body>
        </html>
        """
    }

    static func pair(code: String, csrf: String, person: String, words: Words, problem: String? = nil) -> HTML {
        let error: HTML = problem.map { "<p class=\"problem\" role=\"alert\" id=\"name-problem\">\($0)</p>" } ?? .empty
        let whom = words.forWhom.replacingOccurrences(of: "{name}", with: TerminalText.inline(person))
        return frame(
            words.title, lang: words.lang,
            """
            <h1>\(words.title)</h1>
            <p class="for-whom" id="for-whom">\(whom)</p>
            <p>\(words.intro)</p>
            \(error)
            <form method="post" action="/app/pair">
            <input type="hidden" name="code" value="\(code)">
            <input type="hidden" name="csrf" value="\(csrf)">
            <label for="name">\(words.nameLabel)</label>
            <input id="name" name="name" required maxlength="60" autocomplete="off" aria-describedby="name-hint">
            <p class="hint" id="name-hint">\(words.nameHint)</p>
            <button type="submit">\(words.pairButton)</button>
            </form>
            """)
    }

    static func problem(_ text: String, _ words: Words) -> HTML {
        frame(words.problemTitle, lang: words.lang, "<h1>\(words.problemTitle)</h1><p role=\"alert\">\(text)</p>")
    }
}

/// How the phone app signs in to the workers' protocol: its token in ``cookie`` (HttpOnly, so its
/// script never sees it), taken only from a request that carries ``header`` (which a page of
/// another site cannot send without the service's consent, and the service gives none).
///
/// The header's value is the person the app believes it acts for (their id), or `new` when it
/// is asking who that is: a request for another person than the cookie's is refused (412), so
/// what one person queued never goes out under whoever paired the phone after them.
public enum FieldAppAccess {
    public static let cookie = FormGuard.cookiePrefix + "tw_device"
    /// The cookie phones paired before every cookie was a `__Host-` one hold (`Path=/`): taken when
    /// no `__Host-` cookie came (two of it are refused as any two cookies of one name), and replaced
    /// by ``cookie`` at the phone's next sync, so that an upgrade signs no phone out and loses none
    /// of its unsent work.
    public static let legacyCookie = "tw_device"
    /// Ends ``legacyCookie``.
    public static let legacyCookieEnd = "tw_device=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"
    public static let header = HTTPField.Name("X-Teamwork-App")!
    /// How long a phone stays signed in without being used (the token itself lasts until revoked;
    /// the cookie is set again at every listing): 400 days, the most a browser keeps a cookie.
    public static let cookieSeconds = 400 * 86_400

    /// The cookie that holds a phone's token.
    public static func deviceCookie(_ secret: String) -> String {
        FormGuard.cookie(cookie, secret, maxAge: cookieSeconds)
    }

    /// Whether a request's header names someone else than `person` (a number that is not theirs).
    public static func namesAnother(_ value: String, than person: Int64) -> Bool {
        guard let expected = Int64(value) else { return false }
        return expected != person
    }
}

/// The phone app's files (``FieldApp``), embedded in the binary.
enum FieldAppFiles {
    static let sources: [(String, String, [UInt8])] = [
        ("index.html", "text/html; charset=utf-8", PackageResources.index_html),
        ("app.js", "text/javascript; charset=utf-8", PackageResources.app_js),
        ("rules.js", "text/javascript; charset=utf-8", PackageResources.rules_js),
        ("local.js", "text/javascript; charset=utf-8", PackageResources.local_js),
        ("sync.js", "text/javascript; charset=utf-8", PackageResources.sync_js),
        ("words.js", "text/javascript; charset=utf-8", PackageResources.words_js),
        ("notify.js", "text/javascript; charset=utf-8", PackageResources.notify_js),
        ("fields.js", "text/javascript; charset=utf-8", PackageResources.fields_js),
        ("dom.js", "text/javascript; charset=utf-8", PackageResources.dom_js),
        ("work.js", "text/javascript; charset=utf-8", PackageResources.work_js),
        ("app.css", "text/css; charset=utf-8", PackageResources.app_css),
        ("manifest.webmanifest", "application/manifest+json", PackageResources.manifest_webmanifest),
        ("icon.svg", "image/svg+xml", Icon.svg),
    ]
    /// What "Add to home screen" fetches once, online: not kept in the offline cache.
    static let icons: [(String, String, [UInt8])] = [
        ("icon-192.png", "image/png", PackageResources.icon_192_png),
        ("icon-512.png", "image/png", PackageResources.icon_512_png),
        ("icon-maskable-512.png", "image/png", PackageResources.icon_maskable_512_png),
    ]
    static let version: String = {
        var hash = SHA256()
        for (name, _, bytes) in sources + [("sw", "", PackageResources.sw_cache_js + PackageResources.sw_sync_js)] {
            hash.update(data: Array(name.utf8))
            hash.update(data: bytes)
        }
        return hash.finalize().map { String(format: "%02x", $0) }.joined().prefix(12).description
    }()
    static let assets: [String: StaticFile] = {
        var assets: [String: StaticFile] = [:]
        for (name, type, bytes) in sources + icons {
            assets[name] = asset(type, bytes)
        }
        // The service worker learns the version it caches under from its first line.
        // Each file with its tag: the worker installs from the browser's HTTP cache what the page just
        // fetched when its tag is this build's (no request), and fetches only the rest.
        let files = sources.map { name, _, _ in
            let path = name == "index.html" ? "/app/" : "/app/\(name)"
            return "\"\(path)\": \(assets[name]!.etag)"
        }
        let head = Array("const VERSION = \"\(version)\";\nconst FILES = {\(files.joined(separator: ", "))};\n".utf8)
        // A module that also sends the queue in the background; its caching part alone for a
        // browser without module service workers.
        assets["sw.js"] = asset("text/javascript; charset=utf-8", head + PackageResources.sw_sync_js + PackageResources.sw_cache_js)
        assets["sw-basic.js"] = asset("text/javascript; charset=utf-8", head + PackageResources.sw_cache_js)
        return assets
    }()

    static func asset(_ type: String, _ bytes: [UInt8]) -> StaticFile { StaticFile(contentType: type, bytes: bytes) }
}
