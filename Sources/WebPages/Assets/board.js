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
        // A live refresh keeps the person's place: the card that had focus has it again.
        var active = document.activeElement, had = active && active.closest && active.closest('#live .card');
        var hadId = had && had.dataset.task;
        live.innerHTML = html; // rendered and escaped by the server, like the page itself
        var again = hadId && document.querySelector('#task-' + hadId + ' h3 a');
        if (again) again.focus();
        var held = moving && moving.dataset.task;
        addMoveButtons();
        moving = null;
        if (held && document.getElementById('task-' + held)) pickUp(document.getElementById('task-' + held));
        else if (held) pickUp(null);
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
    assign(card, column);
  });

  // Puts `card`'s task in `column`: the worker's (assigned to them) or "Unassigned" (freed for its team).
  function assign(card, column) {
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
      say(r.body.message || (r.body.error && r.body.error.message) || ('Refused (' + r.status + ')'), !r.ok);
      return refresh();
    }).then(function () {
      // Focus goes back where the person was: the moved card, or the column it was put in.
      var moved = document.getElementById('task-' + id), link = moved && moved.querySelector('h3 a');
      if (link) { link.focus(); } else if (flash) { flash.setAttribute('tabindex', '-1'); flash.focus(); }
    }).catch(function () { say('The service cannot be reached: nothing was changed.', true); });
  }

  // Tap to assign (touch screens, where there is no drag, and keyboards): "Move" on a card picks it
  // up, "Put here" on a column puts it there; Escape or "Move" again puts it back down.
  var moving = null;
  function pickUp(card) {
    if (moving) moving.classList.remove('moving');
    moving = card;
    if (card) {
      card.classList.add('moving');
      body.dataset.moving = card.dataset.task;
      say('Moving “' + card.querySelector('h3').textContent + '”: choose “Put here” on a column, or Escape.', false);
    } else {
      delete body.dataset.moving;
    }
  }
  function addMoveButtons() {
    document.querySelectorAll('.columns .card').forEach(function (card) {
      if (card.querySelector('button.move')) return;
      var button = document.createElement('button');
      button.type = 'button';
      button.className = 'move';
      button.textContent = 'Move';
      button.setAttribute('aria-label', 'Move ' + card.querySelector('h3').textContent);
      card.appendChild(button);
    });
    document.querySelectorAll('.columns .column').forEach(function (column) {
      if (column.querySelector('button.put') || !(column.dataset.person || column.dataset.unassigned)) return;
      var button = document.createElement('button');
      button.type = 'button';
      button.className = 'put';
      button.textContent = 'Put here';
      var heading = column.querySelector('h2');
      button.setAttribute('aria-label', 'Put the task here: ' + (heading ? heading.firstChild.textContent.trim() : ''));
      column.insertBefore(button, heading ? heading.nextSibling : column.firstChild);
    });
  }
  document.addEventListener('click', function (e) {
    var target = e.target;
    if (!target || !target.closest) return;
    if (target.closest('button.move')) {
      var card = target.closest('.card');
      pickUp(moving === card ? null : card);
    } else if (target.closest('button.put') && moving) {
      var card = moving;
      pickUp(null);
      assign(card, target.closest('.column'));
    }
  });
  document.addEventListener('keydown', function (e) { if (e.key === 'Escape' && moving) { pickUp(null); say('Nothing moved.', false); } });

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
  addMoveButtons();
  applyAgenda();

  window.Teamwork = { watch: watch, say: say };
  if (live) watch(refresh);
})();
