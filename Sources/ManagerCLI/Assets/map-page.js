// The script of `teamwork-manager map --html` (MapPage.swift), inlined into its one self-contained page:
// it draws the page's GeoJSON (#data) as SVG. Plain JavaScript, nothing fetched.
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
