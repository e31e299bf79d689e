import Foundation
import HTMLText
import ServerSupport
import TeamworkModel
import Testing
import WebPages

@testable import WebPages

/// The board's small parts whose mistakes would be holes: escaping, form reading,
/// where a form may send you back to, the tile origin in the page's policy, the
/// sign-in limit's key, the window a form gives.
@Suite("Board: escaping, forms, redirects and limits")
struct BoardPartsTests {
    @Test func textIsEscapedScalarByScalarSoACombiningMarkCannotHideAQuote() {
        let hostile = "x\"\u{301} onerror=\"y' <b>&"
        let escaped = HTML.escape(hostile)
        #expect(!escaped.unicodeScalars.contains { "\"'<>".unicodeScalars.contains($0) }, "\(escaped)")
        #expect(escaped == "x&quot;\u{301} onerror=&quot;y&#39; &lt;b&gt;&amp;")
        let title = "<script>"
        let page: HTML = "<p title=\"\(title)\">\(title)\(HTML.trusted("<br>"))</p>"
        #expect(page.text == "<p title=\"&lt;script&gt;\">&lt;script&gt;<br></p>", "Strings escaped, HTML kept")
    }

    /// Every cookie the service sets (the phone's token, the board's session, sign-in and flash, the
    /// customer page's token) is a `__Host-` cookie (Secure, `Path=/`, no Domain: no sibling host can
    /// plant one), out of the page script's reach and never sent along from another site.
    @Test func aCookieIsAHostCookieHttpOnlyAndSameSiteStrict() {
        let set = FormGuard.cookie(FormGuard.cookiePrefix + "tw_session", "abc", maxAge: 3600)
        let parts = Set(set.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        #expect(set.hasPrefix("__Host-tw_session=abc;"), "\(set)")
        #expect(parts.isSuperset(of: ["httponly", "samesite=strict", "path=/", "max-age=3600", "secure"]), "\(set)")
        #expect(!parts.contains { $0.hasPrefix("domain") }, "\(set)")
        let ended = FormGuard.cookie(FormGuard.cookiePrefix + "tw_session", "", maxAge: 0)
        let endedParts = Set(ended.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        #expect(endedParts.isSuperset(of: ["secure", "max-age=0", "httponly", "samesite=strict", "path=/"]), "\(ended)")
    }

    @Test func scriptJSONCannotCloseItsElement() {
        let json = HTML.scriptJSON(Data(#"{"t":"</script><!--&\#u{2028}"}"#.utf8)).text
        #expect(!json.contains("<") && !json.contains(">") && !json.contains("&") && !json.contains("\u{2028}"), "\(json)")
    }

    @Test func formsArePercentDecodedAndUnreadableOnesRefused() throws {
        let fields = try #require(FormFields("title=Burst+main%20%C3%A9&team=1&team=2&empty="))
        #expect(fields["title"] == "Burst main é" && fields.all("team") == ["1", "2"] && fields["empty"] == "")
        #expect(FormFields("title=%FF%FE") == nil, "not UTF-8")
        #expect(FormFields("title=%zz") == nil, "not percent-encoding")
    }

    @Test func aFormSendsYouBackOnlyToTheBoard() {
        for good in ["/board", "/board?day=2026-12-01&team=red", "/board/tasks/12?back=%2Fboard", "/board/map"] {
            #expect(FormFields.back(good) == good)
        }
        for bad in [
            "//evil.example/board", "https://evil.example/board", "/boardx", "/board\\@evil", "/board\u{0}",
            "/board\n/x", "javascript:alert(1)", "", nil,
        ] as [String?] {
            #expect(FormFields.back(bad) == "/board", "\(String(describing: bad))")
        }
    }

    @Test func theTileOriginIsTheTemplatesSchemeAndHostOrNothing() {
        #expect(BoardConfiguration.tileOrigin(BoardConfiguration.openStreetMapTiles) == "https://tile.openstreetmap.org")
        #expect(BoardConfiguration.tileOrigin("https://{s}.tiles.example:8443/a/{z}/{x}/{y}.png") == "https://*.tiles.example:8443")
        for bad in [
            "javascript:alert(1)//{z}{x}{y}", "https://tiles.example/{z}/{x}.png", "ftp://x/{z}/{x}/{y}",
            "https://evil' 'unsafe-inline/{z}/{x}/{y}", "https:///{z}/{x}/{y}",
        ] {
            #expect(BoardConfiguration.tileOrigin(bad) == nil, "\(bad)")
        }
    }

    @Test func signInAttemptsCountPerAddressBeforeTheyAreMadeAndAnIPv6AddressByItsSlash64() {
        #expect(AddressLimiter.key("2001:db8:1:2:aaaa::1") == AddressLimiter.key("2001:db8:1:2:bbbb:cccc:dddd:eeee"))
        #expect(AddressLimiter.key("2001:db8:1:2::1") != AddressLimiter.key("2001:db8:1:3::1"))
        #expect(AddressLimiter.key("10.0.0.1") == "10.0.0.1")
        let limiter = AddressLimiter(perAddress: 3)
        let start = ContinuousClock.now
        for _ in 0..<3 { #expect(limiter.attempt("10.0.0.1", now: start)) }
        #expect(!limiter.attempt("10.0.0.1", now: start), "three attempts not yet known to succeed: no more this minute")
        #expect(limiter.attempt("10.0.0.2", now: start), "another address is not held up")
        limiter.succeeded("10.0.0.1", now: start)
        #expect(limiter.attempt("10.0.0.1", now: start), "an attempt that signed in no longer counts")
        #expect(!limiter.attempt("10.0.0.1", now: start))
        #expect(limiter.attempt("10.0.0.1", now: start + .seconds(61)), "a minute later it may try again")
    }

    /// On a dual-stack socket (`--host ::`) every IPv4 client arrives as `::ffff:a.b.c.d`: each
    /// must count as its own address, not all of them as one /64.
    @Test func anIPv4AddressMappedIntoIPv6CountsAsItself() {
        #expect(AddressLimiter.key("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(AddressLimiter.key("::FFFF:192.0.2.7") == "192.0.2.7")
        #expect(AddressLimiter.key("0:0:0:0:0:ffff:c000:0207") == "192.0.2.7")
        #expect(AddressLimiter.key("::ffff:192.0.2.7") != AddressLimiter.key("::ffff:198.51.100.9"))
        #expect(AddressLimiter.key("::1") == "0:0:0:0::/64")
    }

    @Test func aWindowFromTheFormIsTheTasksWallClockAndJunkIsRefused() throws {
        let zone = try Zone("Europe/Stockholm")
        let form = try #require(FormFields("start=2026-12-01T09:00&end=2026-12-01T11:30"))
        let window = try #require(try form.window(in: zone))
        #expect(window.start == zone.instant(try LocalDate(parsing: "2026-12-01"), try LocalTime(parsing: "09:00")))
        #expect(window.end.timeIntervalSince(window.start) == 9_000)
        let empty = try #require(FormFields("start=&end="))
        #expect(try empty.window(in: zone) == nil)
        for junk in [
            "start=2026-12-01T09:00junk&end=2026-12-01T11:00", "start=2026-12-01&end=2026-12-01T11:00",
            "start=2026-12-01T11:00&end=2026-12-01T09:00", "start=2026-13-01T09:00&end=2026-13-01T11:00",
        ] {
            let fields = try #require(FormFields(Substring(junk)))
            #expect(throws: (any Error).self, "\(junk)") { try fields.window(in: zone) }
        }
    }
}
