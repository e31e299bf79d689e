import CentralStore
import Foundation
import HTMLText
import Hummingbird
import TeamworkFormats
import TeamworkModel

extension BoardRoutes {
    /// `GET /board/people`: the people, their paired phones (named tokens), and a button to pair
    /// one more (docs/phone.md).
    func peoplePage(_ request: Request, _ session: BoardSession, problem: BoardProblem? = nil) async throws -> Response {
        let (people, tokens) = try await read { store in
            (try await store.listPeople(role: nil, teamID: nil), try await store.listTokens(personID: nil))
        }
        let live = Dictionary(grouping: tokens.filter { $0.revokedAt == nil }, by: \.personID)
        let rows: [HTML] = people.filter { $0.deactivatedAt == nil }.map { person in
            let phones: [HTML] = (live[person.id] ?? []).map { token in
                let used = token.lastUsedAt.map { " · last used \(BoardPages.stamp($0))" } ?? " · not used yet"
                return "<li>\(token.label.isEmpty ? "(no name)" : token.label) (token \(String(token.id)))\(used)</li>"
            }
            return """
                <tr><th scope="row">\(person.displayName)</th><td>\(person.role.rawValue)</td>\
                <td>\(phones.isEmpty ? HTML("none") : "<ul class=\"phones\">\(phones)</ul>")</td>\
                <td><form method="post" action="/board/people/\(String(person.id))/pair">\
                <input type="hidden" name="csrf" value="\(session.csrf)">\
                <button type="submit">Pair a phone</button></form></td></tr>
                """
        }
        return BoardPages.response(
            BoardPages.layout(
                title: "People", session: session, current: "people", problem: problem?.message,
                main: """
                    <h1>People and their phones</h1>
                    <p class="lead">Pair a worker's phone with the field app: a one-time link and QR code, good for \
                    10 minutes. A paired phone is listed here under the name the worker gave it; revoke it with \
                    <code>teamwork-manager person token revoke</code>.</p>
                    <table class="people"><thead><tr><th scope="col">Person</th><th scope="col">Role</th>\
                    <th scope="col">Paired phones</th><th scope="col"></th></tr></thead>
                    <tbody>\(rows)</tbody></table>
                    """),
            status: problem?.status ?? .ok, configuration: configuration)
    }

    /// `POST /board/people/:id/pair`: a pairing link for the person, made as the signed-in manager
    /// (whoever may issue the person a token may), shown once as text and as a QR code.
    func pairPhone(_ request: Request, _ context: Context) async throws -> Response {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw BoardProblem(.notFound, "no such person")
        }
        // The address the board was opened at, when it is only a host and a port (a credential goes in this link).
        let authority = request.head.authority.flatMap { value in
            value.utf8.count <= 255
                && value.unicodeScalars.allSatisfy {
                    CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]").contains($0)
                }
                ? value : nil
        }
        let origin = configuration.publicOrigin ?? "\(secure ? "https" : "http")://\(authority ?? "127.0.0.1")"
        return try await act(
            request, context, refused: { problem, session in try await peoplePage(request, session, problem: problem) },
            { [session = try await session(request, context)] store, _ in
                let person = try await store.person(id: id)
                // The token rule, applied here whatever the board's database role may do: a manager
                // pairs workers and their own phone; only an admin pairs another manager's or an admin's.
                if person.role != .worker, person.id != session?.person.id, session?.person.role != .admin {
                    throw BoardProblem(.forbidden, "only an admin pairs the phone of another manager or an admin")
                }
                return (person.displayName, try await store.pairDevice(personID: id))
            },
            show: { paired, _, session in
                let (name, pairing) = paired
                let link = "\(origin)/app/pair?code=\(pairing.code)"
                // A link to this machine's own loopback address reaches no phone: say so.
                let host = URLComponents(string: origin)?.host ?? ""
                let unreachable: HTML =
                    ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
                    ? """
                    <p class="problem" role="alert">This link points at \(host), which a phone cannot reach: open the board \
                    at the address phones use, or start the service with <code>--board-origin https://…</code>.</p>
                    """ : .empty
                let qr = try QRCode(link).svg(scale: 5, label: "QR code of the pairing link for \(name)")
                logger.info("board: made a phone pairing link", metadata: ["person": "\(session.person.id)", "for": "\(id)"])
                var response = BoardPages.response(
                    BoardPages.layout(
                        title: "Pair a phone", session: session, current: "people",
                        main: """
                            <h1>Pair \(name)'s phone</h1>
                            <p class="lead">On the phone, scan the code or open the link; it works once, until \
                            \(BoardPages.stamp(pairing.expiresAt)). It is shown only now.</p>
                            \(unreachable)
                            <figure class="qr">\(HTML.trusted(qr))</figure>
                            <p><label for="pair-link">Pairing link</label>\
                            <input id="pair-link" class="pair-link" readonly value="\(link)"></p>
                            <p><a href="/board/people">Back to people</a></p>
                            """), configuration: configuration)
                response.headers[.cacheControl] = "no-store"
                return response
            })
    }
}
