import CentralStore
import Foundation
import HTMLText
import HTTPTypes
import Hummingbird
import NIOCore
import TeamworkModel

/// The board's pages, rendered on the server. Every value in them goes through ``HTML``'s
/// escaping; scripts come only from `/board/static` (the Content-Security-Policy allows
/// nothing inline), so a title, note or name can never become markup or code.
enum BoardPages {
    /// A page with the board's security headers.
    static func response(_ page: HTML, status: HTTPResponse.Status = .ok, configuration: BoardConfiguration?) -> Response {
        let tiles = configuration.flatMap { BoardConfiguration.tileOrigin($0.tileURL) }.map { " " + $0 } ?? ""
        let policy =
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:\(tiles); connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        return Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store", .contentSecurityPolicy: policy,
                HTTPField.Name("X-Content-Type-Options")!: "nosniff", HTTPField.Name("Referrer-Policy")!: "same-origin",
                HTTPField.Name("X-Frame-Options")!: "DENY",
            ], body: .init(byteBuffer: ByteBuffer(string: page.text)))
    }

    /// The frame of every page: header with navigation and sign-out, the flash line, the main part.
    static func layout(
        title: String, session: BoardSession?, current: String = "", query: String = "", flash: String? = nil,
        problem: String? = nil, bodyData: [(String, String)] = [], scripts: [String] = ["board.js"],
        styles: [String] = [], main: HTML
    ) -> HTML {
        let suffix = query.isEmpty ? "" : "?" + query
        let nav: HTML =
            session == nil
            ? .empty
            : """
            <nav aria-label="Board"><ul>\
            <li><a href="/board\(suffix)"\(current == "board" ? HTML(" aria-current=\"page\"") : .empty)>Day board</a></li>\
            <li><a href="/board/map\(suffix)"\(current == "map" ? HTML(" aria-current=\"page\"") : .empty)>Map</a></li>\
            <li><a href="/board/conflicts"\(current == "conflicts" ? HTML(" aria-current=\"page\"") : .empty)>Conflicts</a></li>\
            <li><a href="/board/new\(suffix)"\(current == "new" ? HTML(" aria-current=\"page\"") : .empty)>New task</a></li>\
            <li><a href="/board/people"\(current == "people" ? HTML(" aria-current=\"page\"") : .empty)>People</a></li>\
            </ul></nav>
            """
        let who: HTML =
            session.map { session in
                """
                <form class="signout" method="post" action="/board/sign-out"><input type="hidden" name="csrf" value="\(session.csrf)">\
                <span>\(session.person.displayName)</span> <button type="submit">Sign out</button></form>
                """
            } ?? .empty
        let data: [HTML] = bodyData.map { " data-\(HTML.trusted($0.0))=\"\($0.1)\"" }
        let notice: HTML = flash.map { "<p class=\"flash\">\($0)</p>" } ?? .empty
        let error: HTML = problem.map { "<p class=\"problem\" role=\"alert\">\($0)</p>" } ?? .empty
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · Teamwork</title>
            <link rel="icon" type="image/svg+xml" href="\(BoardAssets.path("icon.svg"))">
            \((styles + ["board.css"]).map { "<link rel=\"stylesheet\" href=\"\(BoardAssets.path($0))\">\n" as HTML })
            \(session.map { "<meta name=\"csrf-token\" content=\"\($0.csrf)\">" as HTML } ?? .empty)
            </head>
            <body\(data)>
            <a class="skip" href="#main">Skip to the content</a>
            <header class="top"><a class="brand" href="/board">Teamwork</a>\(nav)\(who)</header>
            <div id="flash" role="status" aria-live="polite">\(notice)\(error)</div>
            <main id="main">
            \(main)
            </main>
            \(scripts.map { "<script src=\"\(BoardAssets.path($0))\" defer></script>\n" as HTML })</body>
            </html>
            """
    }

    static func signIn(nonce: String, problem: String?, notice: String?) -> HTML {
        layout(
            title: "Sign in", session: nil, flash: notice, problem: problem, scripts: [],
            main: """
                <section class="signin">
                <h1>Sign in to the dispatch board</h1>
                <p>Use an access token issued to you by <code>teamwork-manager person token issue YOUR-EMAIL</code>. The board is for managers and admins.</p>
                <form method="post" action="/board/sign-in">
                <input type="hidden" name="csrf" value="\(nonce)">
                <label for="token">Access token</label>
                <input id="token" name="token" type="password" autocomplete="current-password" required spellcheck="false" size="50">
                <button type="submit">Sign in</button>
                </form>
                </section>
                """)
    }

    static func problemPage(_ message: String) -> HTML {
        layout(title: "Refused", session: nil, problem: message, scripts: [], main: "<p><a href=\"/board\">Back to the board</a></p>")
    }

    // MARK: Times

    /// `35 min`, `2 h 05 min`.
    /// A label as a heading of the board shows it: its first letter upper case.
    static func capitalized(_ text: String) -> String { text.prefix(1).uppercased() + text.dropFirst() }

    static func duration(minutes: Int) -> String {
        minutes < 60 ? "\(minutes) min" : "\(minutes / 60) h " + (minutes % 60 < 10 ? "0" : "") + "\(minutes % 60) min"
    }

    static func clock(_ time: LocalTime) -> String {
        (time.hour < 10 ? "0" : "") + String(time.hour) + ":" + (time.minute < 10 ? "0" : "") + String(time.minute)
    }

    /// `09:00–11:30` (with the zone's abbreviation when asked), or with dates when the span leaves the day.
    static func span(_ window: TimeWindow, in zone: Zone, withZone: Bool) -> String {
        let (startDay, endDay) = (zone.date(of: window.start), zone.date(of: window.end))
        let start = clock(zone.time(of: window.start)), end = clock(zone.time(of: window.end))
        let text = startDay == endDay ? "\(startDay) \(start)–\(end)" : "\(startDay) \(start) – \(endDay) \(end)"
        return withZone ? text + " " + zone.abbreviation(at: window.start) : text
    }

    static func when(_ date: Date, in zone: Zone) -> String {
        "\(zone.date(of: date)) \(clock(zone.time(of: date))) \(zone.abbreviation(at: date))"
    }

    /// A moment not tied to a team's clock (a token last used, a link's end), in UTC.
    static func stamp(_ date: Date) -> String { when(date, in: .utc) }

    /// `2026-12-01T09:00`, what `<input type=datetime-local>` shows and sends.
    static func localInput(_ date: Date, in zone: Zone) -> String {
        "\(zone.date(of: date))T\(clock(zone.time(of: date)))"
    }

    static func siteLine(_ site: Location?) -> String {
        guard let site else { return "" }
        return [site.name, site.address.singleLine].filter { !$0.isEmpty }.joined(separator: ", ")
    }

    static func label(_ status: TaskStatus) -> String { status.words }

    static func json(_ fields: [String: String], status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONEncoder().encode(fields)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
