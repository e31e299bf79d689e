import CentralStore
import Crypto
import Foundation
import HTMLText
import HTTPTypes
import Hummingbird
import NIOCore
import ServerSupport
import TeamworkModel

/// `/appointment/{secret}`: the customer's page about their visit (docs/integrations.md), opened
/// from the link in a booked or changed message. Plain HTML forms, no script: it works with
/// JavaScript off. The customer confirms, picks another window from those the crew has free,
/// or cancels; a link answers once, for its own message, until the window begins. Every decision
/// is the master's (teamwork_appointment_answer, SECURITY DEFINER); every form carries a CSRF
/// token that must match the page's cookie; every unknown secret is a 404 counted against its
/// address (30 a minute); one link is looked at 20 times a minute at most; at most 4 pages in the
/// works per address and 16 in all, each on the shared connection.
public struct AppointmentPages<Context: RemoteAddressRequestContext>: Sendable {
    let store: SharedStore<any EndpointStore>
    let pages = Budget<String>(perPrincipal: 4, total: 16)
    let limiter = AddressLimiter(perAddress: 30)
    /// Looks at one link, known or not: 20 a minute (a page that can still be answered costs the
    /// master a few dozen reads for its free times, on the connection every device's token check shares).
    let views = AddressLimiter(perAddress: 20)
    /// Tells made-up links from real ones before anything is looked up.
    let keys: LinkKeys
    /// The company's name, on every page (`--company`).
    let company: String
    static var cookie: String { FormGuard.cookiePrefix + "tw_appointment" }
    /// Hours for people without a week set, as the day planner takes them.
    static var otherwise: DayHours { .usual }
    /// The page offers other times on the next two weeks, six at most.
    static var offerDays: Int { 14 }
    static var offerLimit: Int { 6 }

    public init(store: SharedStore<any EndpointStore>, keys: LinkKeys, company: String) {
        (self.store, self.keys, self.company) = (store, keys, company)
    }

    public func add(to router: Router<Context>) {
        router.get("appointment/:secret") { request, context in try await page(request, context) }
        router.post("appointment/:secret") { request, context in try await answer(request, context) }
    }

    /// The secret from the address, if it has the shape of one.
    func secret(_ context: Context) -> String? {
        let secret = context.parameters.get("secret") ?? ""
        guard secret.hasPrefix("twa_"), secret.utf8.count == 47,
            secret.utf8.dropFirst(4).allSatisfy({
                $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || (48...57).contains($0) || (65...90).contains($0)
                    || (97...122).contains($0)
            })
        else { return nil }
        return secret
    }

    typealias Facts = AppointmentFacts

    /// The free times offered for an appointment (task and sequence), for a minute: each costs the
    /// shared connection a few dozen reads, so a page looked at again does not pay them again.
    let offered = Locked<[String: (at: ContinuousClock.Instant, offers: [TimeWindow])]>([:])

    func offers(_ link: CentralStore.AppointmentLink, _ store: any EndpointStore) async throws -> [TimeWindow] {
        let key = "\(link.taskID).\(link.currentSequence)"
        let now = ContinuousClock.now
        if let kept = offered.value[key], now - kept.at < .seconds(60) { return kept.offers }
        let offers = try await store.appointmentOffers(
            taskID: link.taskID, days: Self.offerDays, limit: Self.offerLimit, otherwise: Self.otherwise, now: Date())
        offered.mutate { cache in
            if cache.count >= 10_000 { cache = cache.filter { now - $0.value.at < .seconds(60) } }
            if cache.count < 10_000 { cache[key] = (now, offers) }
        }
        return offers
    }

    /// Looks the secret up within the budgets; nil for an unknown one (counted against the address).
    /// The free times are read only when `withOffers` and the link can still answer.
    func facts(_ secret: String, _ context: Context, withOffers: Bool = true) async throws -> Facts? {
        // A made-up link costs nothing: not a budget, not the master.
        guard await keys.verdict(secret, kind: .appointment) != .madeUp else { return nil }
        let address = AddressLimiter.key(context.remoteAddress?.ipAddress)
        guard limiter.allows(address), views.allows(secret) else { throw TooMany() }
        views.failed(secret)
        guard case .success(let place) = pages.reserve(for: address) else { throw PageBusy() }
        defer { place.release() }
        let found = try await store.run { store -> Facts? in
            guard let link = try await store.appointmentLink(secret: secret) else { return nil }
            let task = try await store.task(id: link.taskID)
            let open = AppointmentFacts.refusal(link, task) == nil
            return Facts(
                link: link, task: task, site: try await task.locationID.asyncMap { try await store.location(id: $0) },
                language: try await store.taskCustomer(taskID: task.id)?.language ?? .en,
                offers: open && withOffers ? try await offers(link, store) : [])
        }
        if found == nil { limiter.failed(address) }
        return found
    }

    func page(_ request: Request, _ context: Context) async throws -> Response {
        guard let secret = secret(context), let facts = try await facts(secret, context) else { return notFound() }
        let kept = try FormGuard.cookie(Self.cookie, in: request).map(String.init)
        let csrf = kept.flatMap { $0.utf8.count == 43 ? $0 : nil } ?? TokenSecret.randomBase64URL()
        // "Cancel the visit" is a link to this question; only its own form cancels.
        let sure = request.uri.queryParameters.get("cancel") != nil
        return respond(AppointmentHTML.page(facts, secret: secret, csrf: csrf, said: nil, company: company, askCancel: sure), csrf: csrf)
    }

    func answer(_ request: Request, _ context: Context) async throws -> Response {
        guard let secret = secret(context) else { return notFound() }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: 8 * 1024) } catch {
            return respond(AppointmentHTML.problem("A form holds at most 8 KB.", language: .en, company: company), status: .contentTooLarge)
        }
        guard let form = FormFields(Substring(String(buffer: buffer))) else {
            return respond(AppointmentHTML.problem("The form could not be read.", language: .en, company: company), status: .badRequest)
        }
        // The page's own form, before anything is asked of the master: its token matches its cookie, and a
        // browser that says where it comes from says here.
        let cookie = try FormGuard.cookie(Self.cookie, in: request).map(String.init) ?? ""
        guard !FormGuard.crossSite(request), !cookie.isEmpty, FormGuard.matches(form["csrf"] ?? "", cookie) else {
            return respond(
                AppointmentHTML.problem(AppointmentHTML.words(.en).forged, language: .en, back: "/appointment/\(secret)", company: company),
                status: .forbidden)
        }
        guard let facts = try await facts(secret, context, withOffers: form["answer"] == "move") else { return notFound() }
        let language = facts.language
        let answer: AppointmentAnswer
        var moveTo: TimeWindow?
        switch form["answer"] {
        case "confirmed": answer = .confirmed
        case "cancel":
            // Only once asked and answered "yes" (a cancellation is not undone from here).
            guard form["sure"] == "yes" else {
                return respond(
                    AppointmentHTML.page(facts, secret: secret, csrf: cookie, said: nil, company: company, askCancel: true),
                    csrf: cookie, status: .unprocessableContent)
            }
            answer = .cancel
        case "move":
            answer = .move
            // Only a window the page offers: the crew's free ones, as they are now.
            guard let chosen = form["window"], let start = ISO8601DateFormatter().date(from: chosen),
                let offered = facts.offers.first(where: { $0.start == start })
            else {
                return respond(
                    AppointmentHTML.page(
                        facts, secret: secret, csrf: cookie, said: AppointmentHTML.words(language).pickOne, company: company),
                    csrf: cookie, status: .unprocessableContent)
            }
            moveTo = offered
        default:
            return respond(AppointmentHTML.problem("No such answer.", language: language, company: company), status: .badRequest)
        }
        let window = moveTo
        let result = try await store.run { try await $0.answerAppointment(secret: secret, answer: answer, moveTo: window) }
        guard result == "done" else {
            let status: HTTPResponse.Status = result == "unknown" ? .notFound : result == "used" ? .conflict : .gone
            return respond(
                AppointmentHTML.problem(AppointmentHTML.words(language).refused(result), language: language, company: company),
                status: status)
        }
        // Back to the page, which now says what they answered (a reload does not send it again).
        return Response(status: .seeOther, headers: [.location: "/appointment/\(secret)", .cacheControl: "no-store"])
    }

    struct TooMany: ShownError {
        var status: HTTPResponse.Status { .tooManyRequests }
        var shownMessage: String { "too many looks at this page: try again in a minute" }
    }

    func notFound() -> Response {
        respond(
            AppointmentHTML.problem(
                "This link is not known. Please use the newest message about your visit.", language: .en, company: company),
            status: .notFound)
    }

    func respond(_ html: HTML, csrf: String? = nil, status: HTTPResponse.Status = .ok) -> Response {
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
            .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
            HTTPField.Name("Referrer-Policy")!: "no-referrer", HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        ]
        if let csrf {
            headers[values: .setCookie].append(FormGuard.cookie(Self.cookie, csrf, maxAge: 3600))
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html.text)))
    }
}

/// What the customer's page shows: the link, the task, its site and customer, and (while it can be
/// answered) the offers.
struct AppointmentFacts: Sendable {
    var link: CentralStore.AppointmentLink
    var task: FieldTask
    var site: Location?
    var language: CustomerLanguage
    var offers: [TimeWindow]

    /// Why the link can no longer answer, or nil (the master decides again when it is used).
    static func refusal(_ link: CentralStore.AppointmentLink, _ task: FieldTask) -> String? {
        if link.sequence != link.currentSequence { return "superseded" }
        if link.usedAt != nil || link.answer != .none { return "used" }
        if link.expiresAt <= Date() { return "expired" }
        if ![.open, .assigned].contains(task.status) { return "closed" }
        return nil
    }
}

/// The customer's page, in their language.
enum AppointmentHTML {
    struct Words {
        var title, when, place, confirm, cancel, move, moveButton, noOffers, confirmed, cancelled, asked, forged, pickOne: String
        var superseded, used, expired, closed: String
        var sureCancel, yesCancel, keep: String

        func refused(_ why: String) -> String {
            switch why {
            case "superseded": superseded
            case "used": used
            case "expired": expired
            case "closed": closed
            default: "This link is not known."
            }
        }
    }

    static func words(_ language: CustomerLanguage) -> Words {
        switch language {
        case .en:
            Words(
                title: "Your visit", when: "When", place: "Where", confirm: "Confirm the visit", cancel: "Cancel the visit",
                move: "Pick another time", moveButton: "Ask for this time", noOffers: "No other time is free in the next two weeks.",
                confirmed: "You have confirmed the visit. Thank you.", cancelled: "You have cancelled the visit. We will be in touch.",
                asked: "You asked to move the visit to", forged: "This form has expired: open the page again and answer there.",
                pickOne: "Pick one of the times shown.",
                superseded: "The visit has changed since this message: please use the newest one.",
                used: "This visit has been answered already.", expired: "This link has expired.",
                closed: "This visit can no longer be changed here.",
                sureCancel: "Cancel this visit? We will not come, and you will need to book again.",
                yesCancel: "Yes, cancel the visit", keep: "No, keep it")
        case .sv:
            Words(
                title: "Ert besök", when: "När", place: "Var", confirm: "Bekräfta besöket", cancel: "Avboka besöket",
                move: "Välj en annan tid", moveButton: "Be om den här tiden",
                noOffers: "Ingen annan tid är ledig de närmaste två veckorna.",
                confirmed: "Ni har bekräftat besöket. Tack!", cancelled: "Ni har avbokat besöket. Vi hör av oss.",
                asked: "Ni har bett att få flytta besöket till", forged: "Formuläret har gått ut: öppna sidan igen och svara där.",
                pickOne: "Välj en av tiderna som visas.",
                superseded: "Besöket har ändrats sedan det här meddelandet: använd det senaste.",
                used: "Besöket är redan besvarat.", expired: "Länken har gått ut.", closed: "Besöket kan inte längre ändras här.",
                sureCancel: "Avboka besöket? Vi kommer inte, och ni behöver boka igen.",
                yesCancel: "Ja, avboka besöket", keep: "Nej, behåll det")
        }
    }

    static func shell(_ title: String, language: CustomerLanguage, company: String, _ body: HTML) -> HTML {
        """
        <!doctype html>
        <html lang="\(language.rawValue)"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title) · \(company)</title>
        <style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem;color:#222}
        form{margin:1rem 0}button{font:inherit;padding:.5rem 1rem}fieldset{border:1px solid #ccc;border-radius:4px}
        .said{padding:.75rem;background:#eef6ee;border-left:4px solid #2a7a2a}.problem{padding:.75rem;background:#fbeaea;border-left:4px solid #a33}
        .company{font-weight:600;color:#1f4e79;margin:0}.keep{margin-left:1rem}</style>
        </head><body><header><p class="company">\(company)</p></header><main>\(body)</main></body></html>
        """
    }

    static func problem(_ text: String, language: CustomerLanguage, back: String? = nil, company: String) -> HTML {
        shell(
            words(language).title, language: language, company: company,
            """
            <h1>\(words(language).title)</h1><p class="problem" role="alert">\(text)</p>\(back.map { "<p><a href=\"\($0)\">↩</a></p>" as HTML } ?? .empty)
            """)
    }

    /// The page; `askCancel`: the question a tap on "Cancel the visit" leads to, with the only form that cancels.
    static func page(
        _ facts: AppointmentFacts, secret: String, csrf: String, said: String?, company: String, askCancel: Bool = false
    ) -> HTML {
        let w = words(facts.language)
        // A link that no longer answers shows nothing of the visit: it may be for someone else now.
        if let why = AppointmentFacts.refusal(facts.link, facts.task), why != "used" {
            return problem(w.refused(why), language: facts.language, company: company)
        }
        let zone = facts.task.zone
        let when = facts.task.window.map { MessageWindow.text($0, zone: zone, language: facts.language) } ?? ""
        let place = facts.site.map { [$0.name, $0.address.singleLine].filter { !$0.isEmpty }.joined(separator: ", ") } ?? ""
        var body: HTML = """
            <h1>\(w.title): \(facts.task.title)</h1>
            <dl><dt>\(w.when)</dt><dd>\(when)</dd><dt>\(w.place)</dt><dd>\(place)</dd></dl>
            """
        if let said { body = "\(body)<p class=\"problem\" role=\"alert\">\(said)</p>" }
        let action = "/appointment/\(secret)"
        switch AppointmentFacts.refusal(facts.link, facts.task) {
        case "used":
            let answered: String
            switch facts.link.answer {
            case .confirmed: answered = w.confirmed
            case .cancel: answered = w.cancelled
            case .move:
                answered = w.asked + " " + (facts.link.asked.map { MessageWindow.text($0, zone: zone, language: facts.language) } ?? "")
            case .none: answered = w.used
            }
            body = "\(body)<p class=\"said\" role=\"status\">\(answered)</p>"
        case .some:
            break
        case nil where askCancel:
            body = """
                \(body)
                <form method="post" action="\(action)" id="cancel"><input type="hidden" name="csrf" value="\(csrf)">\
                <input type="hidden" name="answer" value="cancel"><input type="hidden" name="sure" value="yes">
                <p><strong>\(w.sureCancel)</strong></p>
                <p><button type="submit">\(w.yesCancel)</button><a class="keep" href="\(action)">\(w.keep)</a></p></form>
                """
        case nil:
            let token: HTML = "<input type=\"hidden\" name=\"csrf\" value=\"\(csrf)\">"
            let offers: HTML
            if facts.offers.isEmpty {
                offers = "<p>\(w.noOffers)</p>"
            } else {
                let formatter = ISO8601DateFormatter()
                let choices: [HTML] = facts.offers.enumerated().map { index, offer in
                    let id = "offer-\(index)"
                    return """
                        <div><input type="radio" name="window" id="\(id)" value="\(formatter.string(from: offer.start))"\(index == 0 ? " checked" : "")>
                        <label for="\(id)">\(MessageWindow.text(offer, zone: zone, language: facts.language))</label></div>
                        """
                }
                offers = """
                    <form method="post" action="\(action)" id="move">\(token)<input type="hidden" name="answer" value="move">
                    <fieldset><legend>\(w.move)</legend>\(choices)</fieldset>
                    <p><button type="submit">\(w.moveButton)</button></p></form>
                    """
            }
            body = """
                \(body)
                <form method="post" action="\(action)" id="confirm">\(token)<input type="hidden" name="answer" value="confirmed">
                <button type="submit">\(w.confirm)</button></form>
                \(offers)
                <p><a id="cancel" href="\(action)?cancel">\(w.cancel)</a></p>
                """
        }
        return shell(w.title, language: facts.language, company: company, body)
    }
}
