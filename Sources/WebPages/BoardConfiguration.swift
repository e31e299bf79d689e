import CentralStore
import Foundation
import RoadTravel

/// The dispatcher's board (`/board`): what it acts through and what it shows.
/// docs/operations.md, "The board", says how an operator sets it up.
public struct BoardConfiguration: Sendable {
    /// The database role the board reads and acts through: one in `teamwork_manager`
    /// (each change is recorded as the signed-in manager's, as with the CLI).
    public var databaseURL: DatabaseURL
    /// Map tiles: a URL template with `{z}`, `{x}`, `{y}` (and optionally `{s}`).
    public var tileURL: String
    /// The road network "Plan the day" asks for drive times (an OSRM table service); nil: estimated from coordinates.
    public var osrm: OSRMTable?
    /// The credit the tile provider asks for, shown on the map.
    public var tileAttribution: String
    /// Where Leaflet's `leaflet.js` and `leaflet.css` are (Debian's libjs-leaflet).
    public var leafletDirectory: URL
    /// How long a sign-in lasts.
    public var sessionLifetime: Duration = .seconds(12 * 3600)
    /// Sign-in attempts one address may make per minute; one that signs in does not count.
    public var signInsPerMinute = 10
    /// Sign-ins answered at once, all addresses together (two at most per address); more get 503.
    public var signInsAtOnce = 4
    /// Master connections the board's changes may hold at once (two at most per person); more get 503.
    public var actionConnections = 4
    /// Master connections the board's reads and sign-ins share; a burst waits its turn on them.
    public var readConnections = 2
    /// The longest a live board's request for changes waits before answering "no change".
    public var longPoll: Duration = .seconds(20)
    /// The address browsers use for the board (`https://dispatch.example.com`) when it differs from
    /// what the service sees: behind a TLS-terminating proxy. Forms must come from it; an `https`
    /// origin makes the session cookie `Secure`. `nil`: the service's own scheme and `Host`.
    public var publicOrigin: String?

    public static let openStreetMapTiles = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
    public static let openStreetMapAttribution = "© OpenStreetMap contributors"
    public static let debianLeaflet = URL(fileURLWithPath: "/usr/share/javascript/leaflet")

    public init(
        databaseURL: DatabaseURL, tileURL: String = openStreetMapTiles,
        tileAttribution: String = openStreetMapAttribution, leafletDirectory: URL = debianLeaflet
    ) {
        self.databaseURL = databaseURL
        self.tileURL = tileURL
        self.tileAttribution = tileAttribution
        self.leafletDirectory = leafletDirectory
    }

    /// The origin tiles come from (`https://tile.openstreetmap.org`, `https://*.tiles.example`), for
    /// the page's Content-Security-Policy; nil when the template is not an http(s) URL of a host.
    public static func tileOrigin(_ template: String) -> String? {
        let lowered = template.lowercased()
        guard let schemeEnd = lowered.range(of: "://"), ["http", "https"].contains(String(lowered[..<schemeEnd.lowerBound])) else {
            return nil
        }
        let rest = template[schemeEnd.upperBound...]
        let host = rest.prefix { $0 != "/" }
        guard !host.isEmpty, ["{z}", "{x}", "{y}"].allSatisfy(template.contains) else { return nil }
        let wildcard = host.replacingOccurrences(of: "{s}", with: "*")
        guard wildcard.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-:*[]".contains($0)) }) else { return nil }
        return String(lowered[..<schemeEnd.lowerBound]) + "://" + wildcard
    }
}
