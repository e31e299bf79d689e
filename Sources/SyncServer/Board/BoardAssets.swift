/// The board's stylesheet and scripts, served from `/board/static/`. Plain JavaScript,
/// no framework, no build step; every page works without them (forms and links),
/// they only add dragging, live updates and the map.
enum BoardAssets {
    static let css = #"""
        :root { --ink: #1d2630; --muted: #5b6670; --line: #c9d0d6; --bg: #f5f6f3; --brand: #24313d; --late: #b3261e; --focus: #1a5fb4; }
        * { box-sizing: border-box; }
        body { font: 15px/1.4 system-ui, sans-serif; margin: 0; color: var(--ink); background: var(--bg); }
        a { color: #174ea6; }
        :focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
        header.top { display: flex; flex-wrap: wrap; align-items: center; gap: 12px 24px; padding: 8px 16px; background: var(--brand); color: #fff; }
        header.top a { color: #fff; }
        header.top .brand { font-weight: 700; text-decoration: none; font-size: 17px; }
        header.top nav ul { display: flex; gap: 16px; list-style: none; margin: 0; padding: 0; }
        header.top nav a[aria-current="page"] { font-weight: 700; text-decoration: underline; }
        header.top form.signout { margin-left: auto; display: flex; gap: 8px; align-items: center; }
        main { padding: 12px 16px 32px; }
        h1 { font-size: 20px; margin: 4px 0 12px; }
        h2 { font-size: 16px; margin: 16px 0 8px; }
        #flash p { margin: 0; padding: 8px 16px; }
        .flash { background: #e6f4ea; border-bottom: 1px solid #b7dfc3; }
        .problem { background: #fce8e6; border-bottom: 1px solid #f3b7b1; color: #6d1a14; }
        form.filters { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin-bottom: 8px; }
        form.filters fieldset { display: flex; flex-wrap: wrap; gap: 4px 12px; border: 1px solid var(--line); padding: 4px 8px; margin: 0; }
        button, select, input, textarea { font: inherit; }
        button { padding: 4px 10px; border: 1px solid #8a96a1; border-radius: 4px; background: #fff; cursor: pointer; }
        button.danger { border-color: var(--late); color: var(--late); }
        .summary { color: var(--muted); margin: 4px 0 10px; }
        .columns { display: flex; gap: 10px; overflow-x: auto; align-items: flex-start; padding-bottom: 8px; }
        .column { flex: 0 0 230px; background: #e9ecef; border: 1px solid var(--line); border-radius: 6px; padding: 6px; min-height: 120px; }
        .column.over { outline: 3px dashed var(--focus); }
        .column h2 { font-size: 14px; margin: 2px 2px 4px; display: flex; justify-content: space-between; }
        .column .count { color: var(--muted); font-weight: 400; }
        .column > .skills { font-size: 12px; color: var(--muted); margin: 0 2px 6px; }
        ol.cards { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 6px; }
        .card { background: #fff; border: 1px solid var(--line); border-left: 5px solid #6c7a86; border-radius: 4px; padding: 6px 8px; cursor: grab; }
        .card h3 { font-size: 14px; margin: 0 0 2px; overflow-wrap: anywhere; }
        .card p { margin: 2px 0; font-size: 13px; overflow-wrap: anywhere; }
        .card .meta, .card .site { color: var(--muted); }
        .card.priority-urgent { border-left-color: #b3261e; } .card.priority-high { border-left-color: #e8710a; }
        .card.priority-low { border-left-color: #aab4bd; }
        .card.status-completed { opacity: .65; } .card.status-completed h3 a { text-decoration: line-through; }
        .card.late { background: #fff5f4; } .late-flag { color: var(--late); }
        .conflict-mark { color: var(--late); font-weight: 700; } .double-flag { color: #8a4b00; }
        ul.changes { margin: 0; padding-left: 16px; }
        .skip { position: absolute; left: -9999px; } .skip:focus { left: 8px; top: 8px; z-index: 2000; background: #fff; padding: 6px 10px; }
        .agenda-pick { display: none; margin: 6px 0; }
        @media (max-width: 800px) {
          main { padding: 8px 10px 24px; }
          header.top { gap: 6px 14px; padding: 6px 10px; }
          header.top form.signout { margin-left: 0; }
          form.filters input[type=search], form.filters input { max-width: 100%; }
          body[data-js] .agenda-pick { display: block; }
          body[data-js] .agenda-pick select { font-size: 16px; padding: 6px; max-width: 100%; }
          .columns { display: block; overflow: visible; }
          .column { margin: 0 0 10px; }
          .columns[data-shown] .column { display: none; }
          .columns[data-shown] .column.shown { display: block; }
          .card { cursor: default; }
        }
        @media print {
          @page { size: A4 portrait; margin: 12mm; }
          body { background: #fff; font-size: 11pt; }
          header.top, #flash, form.filters, .export, .conflict-line, #main > p:first-child { display: none; }
          .columns { display: block; overflow: visible; }
          .column { break-after: page; border: none; background: none; padding: 0; min-height: 0; }
          .column:last-child { break-after: auto; }
          .column h2 { font-size: 16pt; }
          .card { break-inside: avoid; border-left-width: 3px; cursor: default; }
          .card h3 a { color: inherit; text-decoration: none; }
        }
        ol.conflicts { list-style: none; padding: 0; } ol.conflicts > li { margin: 0 0 12px; }
        article.conflict { border: 1px solid #d9c4a8; border-left: 4px solid var(--late); border-radius: 6px; padding: 8px 12px; background: #fffaf3; }
        article.conflict h2 { font-size: 1.05rem; margin: 0 0 4px; } article.conflict .decide { display: flex; flex-wrap: wrap; gap: 12px; align-items: end; }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; }
        dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
        section { margin-top: 12px; }
        table { border-collapse: collapse; background: #fff; } th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
        tr.failed td, tr.missing td { background: #fff5f4; }
        ol.candidates li { margin: 4px 0; } .reasons { color: var(--muted); }
        form.stacked { display: grid; grid-template-columns: minmax(0, 640px); gap: 6px; }
        .attachments figure { display: inline-block; margin: 0 12px 12px 0; max-width: 260px; }
        .attachments img { max-width: 100%; border: 1px solid var(--line); }
        img.thumb { max-width: 160px; max-height: 120px; border: 1px solid var(--line); display: block; }
        #map { height: 70vh; min-height: 420px; border: 1px solid var(--line); background: #eef1f3; }
        .legend { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: center; margin: 6px 0; color: var(--muted); }
        .dot { display: inline-block; width: 12px; height: 12px; border-radius: 50%; border: 1px solid #333; }
        .worker-icon { background: #24313d; border: 2px solid #fff; outline: 1px solid #000; }
        .group-icon { background: #fff; border: 2px solid #333; border-radius: 50%; display: flex; align-items: center; justify-content: center; font-weight: 700; }
        .group-icon.late { border-color: #d62728; border-width: 3px; }
        .dot.open { background: #1f77b4; } .dot.assigned { background: #9467bd; } .dot.in_progress { background: #ff7f0e; }
        .dot.completed { background: #2ca02c; } .dot.late { background: #fff; border: 3px solid #d62728; } .dot.worker { background: #24313d; border-radius: 2px; }
        .signin { max-width: 560px; } .signin input { width: 100%; margin: 6px 0 10px; }
        @media (max-width: 800px) { .column { flex-basis: 78vw; } main { padding: 8px; } }
        """#

    static let boardJS = #"""
        // Teamwork's board: drag a card onto a column to assign it, and follow the master live.
        // Every action also works without this script (plain forms and links).
        (function () {
          'use strict';
          var body = document.body;
          var meta = document.querySelector('meta[name="csrf-token"]');
          var csrf = meta ? meta.content : '';
          var flash = document.getElementById('flash');
          var stopped = false;

          function say(text, problem) {
            if (!flash) return;
            flash.textContent = '';
            var line = document.createElement('p');
            line.className = problem ? 'problem' : 'flash';
            line.textContent = text;
            flash.appendChild(line);
          }

          function post(url, fields) {
            var data = new URLSearchParams(fields);
            data.append('csrf', csrf);
            return fetch(url, { method: 'POST', body: data, credentials: 'same-origin', headers: { Accept: 'application/json' } })
              .then(function (r) {
                return r.json().catch(function () { return {}; }).then(function (j) { return { ok: r.ok, status: r.status, body: j }; });
              });
          }

          // Follows the master's change feed: a long poll that answers when the feed moves (or after
          // 20 s), asked again at once; on failure again after a random wait up to a doubling limit
          // (full jitter), so boards do not all come back at the same instant after a restart.
          function watch(onChange) {
            var position = body.dataset.feed, failures = 0;
            if (position === undefined) return;
            function again() {
              if (stopped) return;
              fetch('/board/changes?after=' + encodeURIComponent(position), { credentials: 'same-origin', headers: { Accept: 'application/json' } })
                .then(function (r) {
                  if (r.status === 401) { stopped = true; body.dataset.connected = 'ended'; say('Your session has ended: reload the page to sign in again.', true); return; }
                  if (!r.ok) throw new Error('status ' + r.status);
                  return r.json().then(function (j) {
                    failures = 0;
                    body.dataset.connected = '1';
                    if (j.position !== position) { position = j.position; return onChange(); }
                  });
                })
                .then(function () { if (!stopped) setTimeout(again, 0); }, function () {
                  failures += 1;
                  body.dataset.connected = '0';
                  setTimeout(again, Math.random() * Math.min(15000, 500 * Math.pow(2, failures)));
                });
            }
            again();
          }

          var live = document.getElementById('live');
          var refreshes = 0;
          function refresh() {
            if (!live) return Promise.resolve();
            var url = location.pathname + (location.search ? location.search + '&' : '?') + 'part=live';
            return fetch(url, { credentials: 'same-origin' }).then(function (r) {
              if (r.redirected || r.status === 401) { stopped = true; say('Your session has ended: reload the page to sign in again.', true); return; }
              if (!r.ok) throw new Error('status ' + r.status);
              return r.text().then(function (html) {
                live.innerHTML = html; // rendered and escaped by the server, like the page itself
                applyAgenda();
                refreshes += 1;
                body.dataset.refreshes = String(refreshes);
              });
            });
          }

          // Dragging a card onto a worker's column assigns it to them; onto "Unassigned" frees it for its team.
          var dragged = null;
          function columnOf(target) { return target && target.closest ? target.closest('.column') : null; }
          document.addEventListener('dragstart', function (e) {
            var card = e.target && e.target.closest ? e.target.closest('.card') : null;
            if (!card) return;
            dragged = card;
            e.dataTransfer.setData('text/plain', card.dataset.task);
            e.dataTransfer.effectAllowed = 'move';
          });
          document.addEventListener('dragend', function () { dragged = null; });
          document.addEventListener('dragover', function (e) {
            var column = columnOf(e.target);
            if (column && dragged) { e.preventDefault(); column.classList.add('over'); }
          });
          document.addEventListener('dragleave', function (e) {
            var column = columnOf(e.target);
            if (column) column.classList.remove('over');
          });
          document.addEventListener('drop', function (e) {
            var column = columnOf(e.target);
            if (!column || !dragged) return;
            e.preventDefault();
            column.classList.remove('over');
            var card = dragged;
            dragged = null;
            var id = card.dataset.task, fields = [['version', card.dataset.version]], url;
            document.querySelectorAll('.columns input[name="team"]').forEach(function (input) { fields.push(['team', input.value]); });
            if (column.dataset.person) {
              url = '/board/tasks/' + encodeURIComponent(id) + '/assign';
              fields.push(['person', column.dataset.person]);
            } else if (column.dataset.unassigned) {
              url = '/board/tasks/' + encodeURIComponent(id) + '/unassign';
            } else {
              return;
            }
            post(url, fields).then(function (r) {
              say(r.body.message || r.body.error || ('Refused (' + r.status + ')'), !r.ok);
              return refresh();
            }).catch(function () { say('The service cannot be reached: nothing was changed.', true); });
          });

          // On a narrow screen the board is an agenda: one worker's column (or everyone's, stacked), picked
          // here and kept across live refreshes and reloads. A card's title opens the task with every action.
          body.dataset.js = '1';
          function applyAgenda() {
            var pick = document.getElementById('agenda'), columns = document.querySelector('.columns');
            if (!pick || !columns) return;
            var chosen = sessionStorage.getItem('teamwork.agenda') || '';
            if (!Array.prototype.some.call(pick.options, function (o) { return o.value === chosen; })) chosen = '';
            pick.value = chosen;
            if (chosen === '') { delete columns.dataset.shown; } else { columns.dataset.shown = chosen; }
            columns.querySelectorAll('.column').forEach(function (c) { c.classList.toggle('shown', c.dataset.index === chosen); });
          }
          document.addEventListener('change', function (e) {
            if (e.target && e.target.id === 'agenda') { sessionStorage.setItem('teamwork.agenda', e.target.value); applyAgenda(); }
          });
          applyAgenda();

          window.Teamwork = { watch: watch, say: say };
          if (live) watch(refresh);
        })();
        """#

    static let mapJS = #"""
        // Teamwork's map: Leaflet over the operator's tiles; markers stay on a plain background when
        // tiles cannot load. Text from the master goes in as text (textContent), never as markup.
        (function () {
          'use strict';
          var body = document.body, el = document.getElementById('map'), status = document.getElementById('map-status');
          if (!el) return;
          if (typeof L === 'undefined') {
            status.textContent = 'The map library (Leaflet) is not installed on the service (apt-get install libjs-leaflet): the tasks are listed on the day board.';
            body.dataset.error = 'leaflet';
            return;
          }
          var colors = { open: '#1f77b4', assigned: '#9467bd', in_progress: '#ff7f0e', completed: '#2ca02c', cancelled: '#999999' };
          var map = L.map(el, { keyboard: true, zoomControl: true });
          map.setView([20, 0], 2);
          function text(value) { var span = document.createElement('span'); span.textContent = value; return span.innerHTML; }
          var tiles = L.tileLayer(el.dataset.tiles, { maxZoom: 19, attribution: text(el.dataset.attribution || '') });
          var failedTiles = 0;
          tiles.on('tileerror', function () {
            failedTiles += 1;
            if (failedTiles === 1) {
              el.classList.add('no-tiles');
              body.dataset.tiles = 'unavailable';
              status.textContent = 'Map tiles cannot be loaded: markers are shown on a plain background.';
            }
          });
          tiles.addTo(map);
          var layer = L.layerGroup().addTo(map), fitted = false;
          // Workers stand on a pane above the tasks, drawn beside their spot: a check-in at a site never hides its tasks.
          map.createPane('workers').style.zIndex = 650;
          var only = document.getElementById('map-worker'), lastFeatures = [];

          function popup(p) {
            var box = document.createElement('div');
            function line(label, value) {
              if (value === undefined || value === null || value === '') return;
              var row = document.createElement('div');
              var strong = document.createElement('strong');
              strong.textContent = label + ': ';
              row.appendChild(strong);
              row.appendChild(document.createTextNode(String(value)));
              box.appendChild(row);
            }
            if (p.kind === 'task') {
              var link = document.createElement('a');
              link.href = '/board/tasks/' + Number(p.task_id);
              link.textContent = p.title;
              box.appendChild(link);
              line('Status', p.status + (p.late ? ' (late)' : ''));
              line('Priority', p.priority);
              line('Assignee', p.assignee);
              line('Site', p.site);
            } else {
              line('Worker', p.name);
              line('Teams', (p.teams || []).join(', '));
              line('Position', p.age_minutes === undefined ? '' : p.age_minutes + ' min ago');
              line('Open tasks', p.open_tasks);
            }
            return box;
          }

          // Tasks at one site are one marker with their count (its popup lists them); the worker filter
          // shows one worker's tasks and position, or the tasks nobody has yet.
          function draw(features) {
            lastFeatures = features;
            layer.clearLayers();
            var points = [], sites = {}, order = [], shown = only ? only.value : '', drawn = 0;
            features.forEach(function (f) {
              if (!f.geometry) return;
              var p = f.properties, at = [f.geometry.coordinates[1], f.geometry.coordinates[0]];
              if (p.kind === 'task') {
                if (shown === 'none' && p.assignee_id != null) return;
                if (shown !== '' && shown !== 'none' && String(p.assignee_id) !== shown) return;
                var key = at[0].toFixed(5) + ',' + at[1].toFixed(5);
                if (!sites[key]) { sites[key] = { at: at, tasks: [] }; order.push(key); }
                sites[key].tasks.push(p);
              } else {
                if (shown === 'none' || (shown !== '' && String(p.person_id) !== shown)) return;
                var icon = L.divIcon({ className: 'worker-icon', html: '', iconSize: [14, 14], iconAnchor: [-4, 18] });
                L.marker(at, { icon: icon, pane: 'workers', title: p.name, alt: p.name }).bindPopup(popup(p)).addTo(layer);
                points.push(at);
                drawn += 1;
              }
            });
            var groups = 0;
            order.forEach(function (key) {
              var site = sites[key], first = site.tasks[0], late = site.tasks.some(function (t) { return t.late; });
              var marker;
              if (site.tasks.length === 1) {
                marker = L.circleMarker(site.at, { radius: 8, color: late ? '#d62728' : '#333333', weight: late ? 3 : 1, fillColor: colors[first.status] || '#777777', fillOpacity: 0.9 });
                marker.bindPopup(popup(first));
              } else {
                groups += 1;
                var count = document.createElement('span');
                count.textContent = String(site.tasks.length);
                marker = L.marker(site.at, { icon: L.divIcon({ className: 'group-icon' + (late ? ' late' : ''), html: count.outerHTML, iconSize: [28, 28] }), title: site.tasks.length + ' tasks at this site' });
                var list = document.createElement('div');
                site.tasks.forEach(function (t) { list.appendChild(popup(t)); });
                marker.bindPopup(list);
              }
              marker.addTo(layer);
              points.push(site.at);
              drawn += site.tasks.length;
            });
            body.dataset.markers = String(drawn);
            body.dataset.groups = String(groups);
            if (points.length && !fitted) { map.fitBounds(points, { padding: [30, 30], maxZoom: 15 }); fitted = true; }
          }
          if (only) only.addEventListener('change', function () { draw(lastFeatures); });

          draw(JSON.parse(document.getElementById('map-data').textContent).features);
          body.dataset.ready = '1';
          var redraws = 0;
          if (window.Teamwork) {
            window.Teamwork.watch(function () {
              return fetch(el.dataset.source, { credentials: 'same-origin' }).then(function (r) {
                if (!r.ok) throw new Error('status ' + r.status);
                return r.json();
              }).then(function (j) {
                draw(j.features);
                redraws += 1;
                body.dataset.refreshes = String(redraws);
              });
            });
          }
        })();
        """#
}
