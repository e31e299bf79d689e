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
  var routeColors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22'];
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
    // Each worker's planned route: their tasks with a planned start, in that order, as one line.
    var routes = {}, routeCount = 0;
    order.forEach(function (key) {
      sites[key].tasks.forEach(function (t) {
        if (t.assignee_id == null || !t.planned_start || t.status === 'cancelled') return;
        (routes[t.assignee_id] = routes[t.assignee_id] || []).push({ at: sites[key].at, start: t.planned_start });
      });
    });
    Object.keys(routes).forEach(function (person, index) {
      var stops = routes[person].sort(function (a, b) { return a.start < b.start ? -1 : a.start > b.start ? 1 : 0; });
      if (stops.length < 2) return;
      L.polyline(stops.map(function (s) { return s.at; }), { color: routeColors[index % routeColors.length], weight: 3, opacity: 0.8, className: 'route' })
        .addTo(layer);
      routeCount += 1;
    });
    body.dataset.routes = String(routeCount);
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
