import HTTPTypes
import Hummingbird

/// The checks every form a browser posts passes before anything is asked of the master, for the
/// board and the customer's page alike: the browser does not say it comes from another site, and
/// the form's token is the expected one, compared without saying where they differ.
public enum FormGuard {
    /// Whether the browser says the request comes from another site (`Sec-Fetch-Site` other than
    /// `same-origin` or `none`; a browser that says nothing is judged by the token alone).
    public static func crossSite(_ request: Request) -> Bool {
        guard let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!] else { return false }
        return site != "same-origin" && site != "none"
    }

    /// Whether `given` is `expected`, comparing every byte whatever the first difference (a token's
    /// bytes leak nothing through the time taken). An empty token never matches.
    public static func matches(_ given: String, _ expected: String) -> Bool {
        let (x, y) = (Array(given.utf8), Array(expected.utf8))
        guard x.count == y.count, !x.isEmpty else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// What every cookie of the service's is named with: a browser takes a `__Host-` cookie only when
    /// it is `Secure`, for `Path=/` and without a `Domain`, so a page of a sibling host (a subdomain)
    /// cannot plant one of these names (RFC 6265bis, 4.1.3.2). Browsers take `Secure` cookies over
    /// plain http from localhost, which the demo uses.
    public static let cookiePrefix = "__Host-"

    /// A `Set-Cookie` value for one of the service's cookies (`name` carries ``cookiePrefix``), as every
    /// page sets it (Hummingbird's `Cookie`): for `maxAge` seconds (0 ends it), never readable by the
    /// page's script, never sent along from another site, only over TLS (or to localhost).
    public static func cookie(_ name: String, _ value: String, maxAge: Int) -> String {
        Cookie(name: name, value: value, maxAge: maxAge, path: "/", secure: true, httpOnly: true, sameSite: .strict).description
    }

    /// The value of the one cookie named `name` the request carries, `nil` when it carries none. Two
    /// cookies of one name are refused (400): one of them was planted (another port of the same host,
    /// an older cookie under another path), and whichever came first would win.
    public static func cookie(_ name: String, in request: Request) throws -> Substring? {
        var found: Substring?
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let pair = pair.drop { $0 == " " || $0 == "\t" }
                guard let equals = pair.firstIndex(of: "="), pair[..<equals] == name else { continue }
                guard found == nil else {
                    throw HTTPError(.badRequest, message: "two cookies named \(name) came with the request: one was planted; sign in again")
                }
                found = pair[pair.index(after: equals)...]
            }
        }
        return found
    }
}
