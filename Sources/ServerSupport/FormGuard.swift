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

    /// A `Set-Cookie` value for a page's own cookie, as every page sets it (Hummingbird's `Cookie`):
    /// for `path` only, `maxAge` seconds (0 ends it), never readable by the page's script, never sent
    /// along from another site, and only over TLS when the service serves TLS.
    public static func cookie(_ name: String, _ value: String, path: String, maxAge: Int, secure: Bool) -> String {
        Cookie(name: name, value: value, maxAge: maxAge, path: path, secure: secure, httpOnly: true, sameSite: .strict).description
    }
}
