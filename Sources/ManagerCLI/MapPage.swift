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

    private static func page(title: String, generated: String, team: String, data: HTML) -> HTML {
        #"""
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\#(title)</title>
        <style>
          body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #f6f6f3; }
          header { padding: 10px 16px; background: #24313d; color: #fff; display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
          header h1 { font-size: 17px; margin: 0; font-weight: 600; }
          header .meta { opacity: .75; font-size: 12px; }
          main { display: flex; gap: 12px; padding: 12px; flex-wrap: wrap; }
          #map { background: #fff; border: 1px solid #ccc; flex: 1 1 640px; max-width: 100%; }
          aside { flex: 0 1 300px; display: flex; flex-direction: column; gap: 12px; }
          section { background: #fff; border: 1px solid #ccc; padding: 8px 10px; }
          section h2 { font-size: 13px; margin: 0 0 6px; text-transform: uppercase; letter-spacing: .04em; color: #555; }
          .legend div { display: flex; align-items: center; gap: 6px; margin: 2px 0; }
          #details dl { margin: 0; display: grid; grid-template-columns: auto 1fr; gap: 2px 8px; }
          #details dt { color: #666; }
          #details dd { margin: 0; word-break: break-word; }
          .grid { stroke: #e4e4e0; stroke-width: 1; }
          .marker { cursor: pointer; }
          .marker:hover, .marker.selected { stroke: #000 !important; stroke-width: 3 !important; }
          .label { font-size: 11px; fill: #24313d; pointer-events: none; }
          ul.unplaced { margin: 0; padding-left: 18px; max-height: 180px; overflow: auto; }
          select { font: inherit; }
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
        "use strict";
        window.addEventListener("error", function (e) { document.body.dataset.error = String(e.message || e); });
        (function () {
          var W = 900, H = 600, PAD = 40, NS = "http://www.w3.org/2000/svg";
          var COLORS = { open: "#2b7bd6", assigned: "#8a5cd1", in_progress: "#e39b16", completed: "#2e9d58", cancelled: "#9a9a9a" };
          var data = JSON.parse(document.getElementById("data").textContent);
          var svg = document.getElementById("map");
          var select = document.getElementById("team");
          var features = data.features;

          function el(name, attrs, parent) {
            var node = document.createElementNS(NS, name);
            for (var k in attrs) node.setAttribute(k, attrs[k]);
            if (parent) parent.appendChild(node);
            return node;
          }
          function text(s) { return s === null || s === undefined ? "" : String(s); }
          function teamsOf(f) { var p = f.properties; return p.kind === "task" ? (p.team ? [p.team] : []) : (p.teams || []); }

          var teams = {};
          features.forEach(function (f) { teamsOf(f).forEach(function (t) { teams[t] = true; }); });
          var only = select.getAttribute("data-only");
          if (only) {
            // A map made for one team shows that team, and says so.
            select.innerHTML = "";
            var one = document.createElement("option"); one.value = only; one.textContent = only; select.appendChild(one);
            select.value = only; select.disabled = true;
          } else {
            Object.keys(teams).sort().forEach(function (t) {
              var o = document.createElement("option"); o.value = t; o.textContent = t; select.appendChild(o);
            });
          }
          function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }

          var legend = document.getElementById("legend");
          Object.keys(COLORS).forEach(function (s) {
            var row = document.createElement("div");
            row.innerHTML = '<svg width="14" height="14"><circle cx="7" cy="7" r="6" fill="' + COLORS[s] + '"/></svg>';
            row.appendChild(document.createTextNode("task " + s.replace("_", " ")));
            legend.appendChild(row);
          });
          [["late (overdue or past its window)", '<circle cx="7" cy="7" r="5" fill="#fff" stroke="#d11" stroke-width="2.5"/>'],
           ["worker's last-known position", '<rect x="3" y="3" width="8" height="8" fill="#24313d" transform="rotate(45 7 7)"/>']]
            .forEach(function (pair) {
              var row = document.createElement("div");
              row.innerHTML = '<svg width="14" height="14">' + pair[1] + "</svg>";
              row.appendChild(document.createTextNode(pair[0]));
              legend.appendChild(row);
            });

          function show(f) {
            var p = f.properties, rows = [];
            function add(k, v) { if (v !== null && v !== undefined && v !== "" && !(Array.isArray(v) && !v.length)) rows.push([k, v]); }
            if (p.kind === "task") {
              add("task", "#" + p.task_id + " " + p.title); add("status", p.status + (p.late ? " (late)" : ""));
              add("priority", p.priority); add("team", p.team); add("assignee", p.assignee); add("due", p.due);
              add("window", p.window_start ? p.window_start + " to " + p.window_end : ""); add("requires", (p.requires || []).join(", "));
              add("site", p.site);
            } else {
              add("worker", p.name); add("teams", (p.teams || []).join(", ")); add("reported", p.reported_at);
              add("age", p.age_minutes !== null && p.age_minutes !== undefined ? p.age_minutes + " min" : "never checked in");
              add("open tasks", p.open_tasks);
            }
            var box = document.getElementById("details");
            box.innerHTML = "<h2>Details</h2>";
            var dl = document.createElement("dl");
            rows.forEach(function (r) {
              var dt = document.createElement("dt"); dt.textContent = r[0];
              var dd = document.createElement("dd"); dd.textContent = text(r[1]);
              dl.appendChild(dt); dl.appendChild(dd);
            });
            box.appendChild(dl);
          }

          function draw() {
            var team = select.value;
            var visible = features.filter(function (f) { return only || !team || teamsOf(f).indexOf(team) >= 0; });
            var placed = visible.filter(function (f) { return f.geometry && f.geometry.type === "Point"; });
            while (svg.firstChild) svg.removeChild(svg.firstChild);
            var lons = placed.map(function (f) { return f.geometry.coordinates[0]; });
            var lats = placed.map(function (f) { return f.geometry.coordinates[1]; });
            var minLon = Math.min.apply(null, lons.concat([Infinity])), maxLon = Math.max.apply(null, lons.concat([-Infinity]));
            var minLat = Math.min.apply(null, lats.concat([Infinity])), maxLat = Math.max.apply(null, lats.concat([-Infinity]));
            if (!placed.length) { minLon = -1; maxLon = 1; minLat = -1; maxLat = 1; }
            var midLat = (minLat + maxLat) / 2, k = Math.cos(midLat * Math.PI / 180) || 1;
            var spanX = Math.max((maxLon - minLon) * k, 0.01), spanY = Math.max(maxLat - minLat, 0.01);
            var scale = Math.min((W - 2 * PAD) / spanX, (H - 2 * PAD) / spanY);
            var cx = (minLon + maxLon) / 2, cy = midLat;
            function x(lon) { return W / 2 + (lon - cx) * k * scale; }
            function y(lat) { return H / 2 - (lat - cy) * scale; }
            // A graticule for orientation: lines every "step" degrees.
            var step = Math.pow(10, Math.floor(Math.log10(Math.max(spanX / k, spanY) / 2)));
            var g = el("g", { "class": "grid" }, svg);
            for (var lon = Math.floor((cx - W / 2 / k / scale) / step) * step; x(lon) <= W; lon += step) el("line", { x1: x(lon), y1: 0, x2: x(lon), y2: H }, g);
            for (var lat = Math.floor((cy - H / 2 / scale) / step) * step; y(lat) >= 0; lat += step) el("line", { x1: 0, y1: y(lat), x2: W, y2: y(lat) }, g);

            var count = 0, seen = {};
            // Tasks first, workers on top; several markers at one place are spread on a small ring around it.
            placed.slice().sort(function (a, b) { return (a.properties.kind === "worker") - (b.properties.kind === "worker"); })
              .forEach(function (f) {
                var p = f.properties, px = x(f.geometry.coordinates[0]), py = y(f.geometry.coordinates[1]), node;
                var spot = Math.round(px) + "," + Math.round(py), nth = seen[spot] || 0;
                seen[spot] = nth + 1;
                if (nth > 0) {
                  var ring = 14 + 6 * Math.floor((nth - 1) / 8), angle = (nth - 1) * Math.PI / 4;
                  px += ring * Math.cos(angle); py += ring * Math.sin(angle);
                }
                if (p.kind === "task") {
                  node = el("circle", { cx: px, cy: py, r: 8, fill: COLORS[p.status] || "#555",
                                        stroke: p.late ? "#d11" : "#fff", "stroke-width": p.late ? 3 : 1.5 }, svg);
                } else {
                  node = el("rect", { x: px - 7, y: py - 7, width: 14, height: 14, fill: "#24313d", stroke: "#fff",
                                      "stroke-width": 1.5, transform: "rotate(45 " + px + " " + py + ")" }, svg);
                  var label = el("text", { x: px + 11, y: py + 4, "class": "label" }, svg);
                  label.textContent = p.name;
                }
                node.setAttribute("class", "marker " + p.kind);
                node.setAttribute("data-id", f.id);
                el("title", {}, node).textContent = p.kind === "task" ? "#" + p.task_id + " " + p.title + " (" + p.status + ")" : p.name;
                node.addEventListener("mouseenter", function () { show(f); });
                node.addEventListener("click", function () {
                  Array.prototype.forEach.call(svg.querySelectorAll(".selected"), function (n) { n.classList.remove("selected"); });
                  node.classList.add("selected"); show(f);
                });
                count++;
              });

            var list = document.getElementById("unplaced");
            list.innerHTML = "";
            visible.filter(function (f) { return placed.indexOf(f) < 0; }).forEach(function (f) {
              var li = document.createElement("li"), p = f.properties;
              li.textContent = p.kind === "task" ? "task #" + p.task_id + " " + p.title + " (no site)" : p.name + " (never checked in)";
              list.appendChild(li);
            });
            var tasks = visible.filter(function (f) { return f.properties.kind === "task"; }).length;
            document.getElementById("counts").textContent = plural(tasks, "task", "tasks") + ", "
              + plural(visible.length - tasks, "worker", "workers") + ", " + count + " on the map";
            if (!count) {
              var empty = el("text", { x: W / 2, y: H / 2, "text-anchor": "middle", "class": "empty" }, svg);
              empty.textContent = visible.length ? "Nothing here has a place on the map (see the list)."
                                                 : "No tasks or workers match: nothing to show.";
            }
            document.body.dataset.markers = String(count);
          }

          select.addEventListener("change", draw);
          draw();
          document.body.dataset.ready = "1";
        })();
        </script>
        </body>
        </html>

        """#
    }
}
