import CentralStore
import Foundation
import HTMLText
import TeamworkModel

/// `map --html`: one self-contained page of the ``DispatchMap`` for a
/// dispatcher's browser. Nothing is fetched: no tiles, no fonts, no scripts
/// from elsewhere; the GeoJSON is inside the page and drawn as SVG on a plain
/// graticule (equirectangular, fitted to the points). Tasks are circles in
/// their status's color, late ones ringed in red; workers are dark diamonds.
/// A team filter hides the rest; hovering or clicking a marker shows it in full.
///
/// When drawn, `<body>` carries `data-markers` (how many markers are on the map)
/// and `data-ready="1"`; a script error sets `data-error`, so a headless
/// browser can tell a page that works from one that does not.
enum MapPage {
    /// `team`: the slug the map was made for (`map --team`), which its filter then offers alone.
    static func html(_ map: DispatchMap, title: String, generatedAt: Date, team: String? = nil) throws -> String {
        try page(title: title, generated: ISODate.format(generatedAt), team: team ?? "", data: HTML.scriptJSON(map.encoded(pretty: false)))
            .text
    }

    /// The page's style and script, kept as files of their own (`Assets/`, embedded in the binary) and
    /// inlined: the page is one file that fetches nothing. Neither holds `</style` or `</script`.
    static let style = HTML.trusted(String(decoding: PackageResources.map_page_css, as: UTF8.self))
    static let script = HTML.trusted(String(decoding: PackageResources.map_page_js, as: UTF8.self))

    private static func page(title: String, generated: String, team: String, data: HTML) -> HTML {
        #"""
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\#(title)</title>
        <style>
        \#(style)
        </style>
        </head>
        <body>
        <header>
          <h1>\#(title)</h1>
          <span class="meta">as of \#(generated) · <span id="counts"></span></span>
          <label>Team <select id="team" data-only="\#(team)"><option value="">all teams</option></select></label>
        </header>
        <main>
          <svg id="map" viewBox="0 0 900 600" role="img" aria-label="Tasks and workers on a map"></svg>
          <aside>
            <section class="legend" id="legend"><h2>Legend</h2></section>
            <section id="details"><h2>Details</h2><p>Hover or click a marker.</p></section>
            <section><h2>Not on the map</h2><ul class="unplaced" id="unplaced"></ul></section>
          </aside>
        </main>
        <script type="application/json" id="data">\#(data)</script>
        <script>
        \#(script)
        </script>
        </body>
        </html>

        """#
    }
}
