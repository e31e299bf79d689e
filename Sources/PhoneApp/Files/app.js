// The field worker's phone app (docs/phone.md): the day's work, the team's free work, a task's
// page with start, complete and its checklist, all from the phone's own copy (IndexedDB), every
// action queued with its change id and sent when the service can be reached. Every value is put
// on the page as text (textContent), never as markup.

import * as rules from "./rules.js";
import { open, wipe, forgetOthers, listing, actAs, sync, exclusively, waitForChange, SignedOut, Offline, PersonChanged, changeID } from "./sync.js";
import { text, time, language, refusal } from "./words.js";
import * as notify from "./notify.js";
import * as fields from "./fields.js";
import { el } from "./dom.js";
import * as work from "./work.js";
import { materials, timeOnJob, labelOf, checklist, thumbnails } from "./work.js";

const state = {
  person: Number(localStorage.getItem("teamwork.person")) || null,
  replicas: JSON.parse(localStorage.getItem("teamwork.replicas") || "[]"),
  local: null, online: null, syncing: null, lastSync: null, problem: null, signedOut: false, name: null,
};
const main = document.getElementById("main");
const status = document.getElementById("status");

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function begin() {
  document.documentElement.lang = language;
  document.title = `${text("title")} · Teamwork`;
  if ("serviceWorker" in navigator) {
    // A browser without module service workers gets the one that keeps the app for offline use alone.
    navigator.serviceWorker.register("/app/sw.js", { scope: "/app/", type: "module" })
      .catch(() => navigator.serviceWorker.register("/app/sw-basic.js", { scope: "/app/" }))
      .catch(() => {});
    // The service worker sent the queue in the background: show what it brought.
    navigator.serviceWorker.addEventListener("message", () => { shownPrint = null; render(); });
  }
  if (location.hash === "#paired") {
    // Just paired, perhaps for someone else than who used this phone before: nothing kept is shown
    // until the service says whose phone it is.
    history.replaceState(null, "", "/app/");
    state.person = null;
  }
  if (state.person) state.local = await open(state.person);
  window.addEventListener("hashchange", () => render());
  window.addEventListener("online", () => syncNow());
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") syncNow(); });
  await render();
  await syncNow();
  live();
}

// One sync at a time; a call while one runs waits for it, and one more sync follows (a change
// queued during a sync may have missed its push: it waited for the next trigger, seen in a test).
function syncNow() {
  if (state.syncing) {
    state.syncAgain = true;
    return state.syncing;
  }
  let again = false;
  state.syncing = (async () => {
    renderStatus();
    try {
      const list = await listing();
      if (state.person !== list.person) {
        // Another person paired this phone: their own copy, never the last one's.
        if (state.local) state.local.close();
        const before = Number(localStorage.getItem("teamwork.person")) || null;
        state.person = list.person;
        localStorage.setItem("teamwork.person", String(list.person));
        // Nothing of whoever had the phone before stays on it, unsent work included (their database by
        // name too, for a browser that cannot list its databases).
        if (before && before !== list.person) await wipe(before);
        await forgetOthers(list.person);
        state.local = await open(list.person);
      }
      actAs(list.person);
      state.replicas = list.replicas;
      localStorage.setItem("teamwork.replicas", JSON.stringify(list.replicas));
      await exclusively(state.person, () => sync(state.local, state.person, state.replicas));
      state.name = await nameOf(list.person);
      state.online = true;
      state.lastSync = Date.now();
      state.problem = null;
      // The subscription the browser holds is the one the service keeps for this sign-in.
      await notify.keepCurrent().catch(() => {});
      state.notifications = await notify.notificationState().catch(() => "unsupported");
    } catch (error) {
      if (error instanceof SignedOut) await signedOut();
      else if (error instanceof PersonChanged) again = true;
      else {
        state.online = false;
        askForBackgroundSync();
        if (!(error instanceof Offline)) state.problem = error.message || String(error);
      }
    } finally {
      state.syncing = null;
      document.body.dataset.synced = String(state.lastSync ?? "");
      await render();
    }
  })();
  // Paired for someone else meanwhile: ask again whose phone it is, once, at once.
  return state.syncing.then(() => {
    if (!again && !state.syncAgain) return undefined;
    state.syncAgain = false;
    return state.stopped ? undefined : syncNow();
  });
}

// Live: wait for the next change while online (a new assignment shows without a reload); when
// the service cannot be reached, try again after 2 s, then longer, at most 15 s apart.
async function live() {
  let pause = 2000;
  const stop = new AbortController();
  for (;;) {
    if (state.stopped) return;
    if (!state.online || !state.local) {
      await sleep(pause);
      pause = Math.min(pause * 2, 15000);
      await syncNow();
      continue;
    }
    pause = 2000;
    try {
      await waitForChange(state.local, state.replicas, stop.signal);
      await syncNow();
    } catch (error) {
      if (error instanceof SignedOut) { await signedOut(); await render(); return; }
      state.online = false;
      renderStatus();
    }
  }
}

// The phone was signed out or revoked: what it kept for this person goes.
async function signedOut() {
  // A phone that was never paired is "not paired", not "signed out"; one signed out already (by
  // its live wait, before a sync asked) stays "signed out".
  state.signedOut = state.signedOut || state.person != null;
  await notify.forget().catch(() => {});
  if (state.local) state.local.close();
  if (state.person) await wipe(state.person);
  await forgetOthers(null);
  state.local = null;
  state.person = null;
  state.stopped = true;
}

// Asked after a sync that could not reach the service: where the browser allows it, the queue goes
// when the network returns even with the app closed (the service worker's "sync"); elsewhere when
// the app is next opened or comes to the front.
function askForBackgroundSync() {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.ready.then((registration) => registration.sync?.register("teamwork-queue")).catch(() => {});
}

// The person's name, from their teams' member lists (shown, so a phone paired to the wrong
// person is seen at once).
async function nameOf(person) {
  if (!state.local) return null;
  const me = (await state.local.all("members")).find((m) => m.person_id === person);
  return me ? `${me.first_name} ${me.last_name}` : null;
}

async function signOut() {
  if (state.local) {
    // Sent changes the master has not confirmed count too: they are kept to be sent again.
    const unsent = (await state.local.all("queue")).length + (await state.local.all("sent")).length;
    if (unsent && !confirm(text("signOutLoses", unsent))) return;
    // Nothing would be lost, but the way back takes the dispatcher: said before, not after.
    if (!unsent && !confirm(text("signOutSure"))) return;
  }
  const response = await fetch("/app/sign-out", { method: "POST", headers: { "X-Teamwork-App": String(state.person) }, credentials: "same-origin" })
    .catch(() => null);
  if (response && response.ok) await signedOut();
  else state.problem = text("signOutOffline");
  await render();
}

// MARK: The copy as shown: the master's rows with the worker's queued changes applied.

async function snapshot() {
  if (!state.local) return null;
  const [tasks, queue, notices, locations, members, files, parts, used, times, sent] = await Promise.all(
    ["tasks", "queue", "notices", "locations", "members", "files", "parts", "used", "time", "sent"].map((name) => state.local.all(name)));
  const byTask = new Map();
  for (const entry of queue.sort((a, b) => a.seq - b.seq)) {
    const id = entry.change.task_id;
    if (!byTask.has(id)) byTask.set(id, []);
    byTask.get(id).push(entry);
  }
  const shown = new Map();
  for (const task of tasks) {
    let facts = rules.facts(task);
    for (const entry of byTask.get(task.id) || []) {
      facts = rules.effect(entry.change, facts, state.person, Date.parse(entry.change.made_at));
    }
    const existing = shown.get(task.id);
    if (!existing || existing.replica.startsWith("person-")) shown.set(task.id, { task, facts, replica: task.replica, queued: byTask.get(task.id) || [] });
  }
  const sites = new Map(locations.map((l) => [l.id, l]));
  parts.sort((a, b) => a.code.toLowerCase().localeCompare(b.code.toLowerCase()));
  const blobs = new Map(files.map((f) => [f.digest, f.blob]));
  for (const [digest, url] of thumbnails) if (!blobs.has(digest)) { URL.revokeObjectURL(url); thumbnails.delete(digest); }
  return { tasks: [...shown.values()], queue, unconfirmed: sent.length, notices: notices.sort((a, b) => b.at - a.at), sites, members, files: new Set(blobs.keys()), blobs, parts, used, times };
}

function skillsIn(view, replica) {
  const me = view.members.find((m) => m.replica === replica && m.person_id === state.person);
  return me && me.skills ? me.skills : null;
}

// Checks the rules the service and the master apply, then queues: a change the rules refuse is
// never queued, and the worker is told why at once.
async function act(view, item, change) {
  const worker = { id: state.person, skills: skillsIn(view, item.replica) };
  const full = { id: changeID(), made_at: new Date().toISOString(), task_id: item.task.id, ...change };
  let reason = rules.rejection(full, worker, item.facts, item.replica.startsWith("team-"), Date.now());
  if (!reason && change.operation === "time") {
    // A person's entries never overlap: the phone checks what it recorded, the master everything.
    const span = rules.timeInterval(change.value);
    reason = rules.timeClash({ taskID: item.task.id, kind: change.item, ...span }, view.times);
  }
  if (reason) {
    state.problem = refusal(reason);
    await render();
    return false;
  }
  await state.local.enqueue(item.replica, full);
  for (const id of [...drafts.keys()]) {
    if (id === "note" ? change.operation === "complete"
      : change.operation === "use" ? id.startsWith("used-") : change.operation === "time" ? id.startsWith("time-")
      : change.item && id.startsWith(`item-${change.item}-`)) drafts.delete(id);
  }
  state.problem = null;
  await render();
  syncNow();
  return true;
}

// MARK: Pages

function renderStatus(view) {
  const pending = view ? view.queue.length : Number(status.dataset.pending || 0);
  status.dataset.pending = String(pending);
  status.dataset.online = String(state.online);
  const line = state.syncing ? text("syncing") : state.online === false ? text("offline") : text("online");
  status.replaceChildren(...[
    state.name ? el("span", { class: "who" }, state.name, " · ") : null,
    el("span", { class: `dot ${state.online === false ? "off" : "on"}`, "aria-hidden": "true" }),
    el("span", {}, line),
    pending ? el("span", { class: "pending" }, " · ", text("waiting", pending)) : null,
  ].filter(Boolean));
}

// What the worker has typed and not saved yet, by the control's id: a render (a sync in the
// background, a live update) never takes it away.
const drafts = new Map();
main.addEventListener("input", (event) => {
  if (event.target.id && event.target.type !== "file") drafts.set(event.target.id, event.target.value);
  markUnsaved(event.target);
});

// A checklist answer typed and not saved yet (or refused by the rules) says so beside its field.
function markUnsaved(control) {
  if (!control || !/^item-.+-value$/.test(control.id || "") || control.dataset.unsaved) return;
  control.dataset.unsaved = "true";
  control.after(el("span", { class: "unsaved-note" }, text("unsaved")));
}
main.addEventListener("change", (event) => { if (event.target.id && event.target.type !== "file") drafts.set(event.target.id, event.target.value); });
let shownPrint = null;

// Draws the page again only when what it shows changed (a background sync that brought nothing
// leaves a half-drawn signature alone); the status line always.
async function render() {
  if (state.stopped || !state.person) {
    shownPrint = null;
    const said = state.signedOut ? text("signedOut") : state.syncing ? text("syncing") : text("notPaired");
    main.replaceChildren(el("h1", {}, "Teamwork"), el("p", { id: "signed-out", "data-signed-out": String(state.signedOut) }, said));
    status.replaceChildren();
    return;
  }
  const view = await snapshot();
  if (!view) return;
  renderStatus(view);
  document.body.dataset.pending = String(view.queue.length);
  // Sent, kept until the master confirms them (sent again at each sync until then).
  document.body.dataset.unconfirmed = String(view.unconfirmed);
  const print = JSON.stringify([location.hash, state.problem, state.lastSync != null, state.notifications, view.notices.map((n) => [n.key, n.text]),
    view.tasks.map((i) => [i.task.id, i.task.row_version, i.queued.length]), view.used.map((u) => [u.key, u.quantity]), view.times.map((e) => [e.key, e.start, e.end]), view.parts.map((p) => [p.id, p.row_version])]);
  if (print === shownPrint) return;
  shownPrint = print;
  const route = location.hash.slice(1).split("/");
  const page = route[0] === "task" ? taskPage(view, Number(route[1])) : dayPage(view);
  main.replaceChildren(...page.flat(2).filter(Boolean));
  // When the day first stood on screen, from navigation start (teamwork-bench app reads it).
  if (!document.body.dataset.rendered && view.tasks.length) document.body.dataset.rendered = String(Math.round(performance.now()));
  for (const [id, value] of drafts) {
    const control = document.getElementById(id);
    if (control) control.value = value;
    markUnsaved(control);
  }
}

function notices(view, taskID = null) {
  const shown = view.notices.filter((n) => taskID == null || n.taskID === taskID).slice(0, 10);
  const problem = state.problem ? el("p", { class: "problem", role: "alert" }, state.problem) : null;
  if (!shown.length) return [problem];
  return [problem, el("section", { class: "notices", "aria-labelledby": "notices-title" },
    el("h2", { id: "notices-title" }, text("notices")),
    el("ul", {}, shown.map((n) => el("li", { class: "notice" }, el("span", {}, noticeText(view, n)), " ",
      el("button", { type: "button", class: "small", onclick: async () => {
        await state.local.write(["notices"], async (s) => { s.notices.delete(n.key); });
        await render();
      } }, text("dismiss"))))))];
}

// A refusal is worded as it is shown: the task's title and what became of it since (another
// has it, it was cancelled or done by someone else, it left the list).
function noticeText(view, n) {
  if (n.kind !== "refused") return n.text;
  const item = view.tasks.find((i) => i.task.id === n.taskID);
  const nameOf = (id) => { const m = view.members.find((x) => x.person_id === id); return m ? `${m.first_name} ${m.last_name}` : null; };
  let outcome = null;
  if (!item) outcome = n.taskID == null ? null : text("notOnList");
  else if (item.facts.status === "cancelled") outcome = text("wasCancelled");
  else if (item.facts.status === "completed" && item.facts.completedBy != null && item.facts.completedBy !== state.person) {
    outcome = nameOf(item.facts.completedBy) ? text("doneBy", nameOf(item.facts.completedBy)) : null;
  } else if (item.facts.assignee != null && item.facts.assignee !== state.person && nameOf(item.facts.assignee)) {
    outcome = text("wentTo", nameOf(item.facts.assignee));
  }
  return text("refused", item ? item.task.title : n.title ?? text("aTask"), n.reason, outcome);
}

function whenLine(task) {
  const zone = task.time_zone;
  const parts = [];
  if (task.planned_start != null) parts.push(`${text("eta")} ${time(task.planned_start, zone)}`);
  if (task.window_start != null) parts.push(`${text("window")} ${time(task.window_start, zone)}–${time(task.window_end, zone).split(" ").pop()}`);
  if (task.due_at != null) parts.push(`${text("due")} ${time(task.due_at, zone)}`);
  return parts.length ? parts.join(" · ") + clockOf(zone) : "";
}

// A card's one time: when the worker is expected, else the window, else the due time.
function cardWhen(task) {
  const zone = task.time_zone;
  const line = task.planned_start != null ? `${text("eta")} ${time(task.planned_start, zone)}`
    : task.window_start != null ? `${text("window")} ${time(task.window_start, zone)}–${time(task.window_end, zone).split(" ").pop()}`
    : task.due_at != null ? `${text("due")} ${time(task.due_at, zone)}` : null;
  return line ? line + clockOf(zone) : null;
}

const phoneZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

// Whose clock a time is on, said when it is not the phone's own: " (Stockholm time)". Times of a
// task are on its site's clock; the phone's own (the last sync) are on the phone's.
function clockOf(zone) {
  return zone && !sameClock(zone) ? ` ${text("zoneTime", zone.split("/").pop().replace(/_/g, " "))}` : "";
}

function sameClock(zone) {
  const now = new Date();
  const at = (z) => { try { return time(now.getTime(), z); } catch { return null; } };
  return at(zone) === at(phoneZone);
}

function order(item) {
  const t = item.task;
  return t.planned_start ?? t.window_start ?? t.due_at ?? Number.MAX_SAFE_INTEGER;
}

function taskCard(view, item, claimable) {
  const t = item.task;
  const site = view.sites.get(t.location_id);
  return el("li", { class: `task ${item.facts.status}`, "data-task": t.id },
    el("a", { href: `#task/${t.id}`, class: "open" },
      el("span", { class: "title" }, t.title),
      el("span", { class: "badge" }, text("status")[item.facts.status] ?? item.facts.status),
      item.queued.length ? el("span", { class: "queued" }, text("queuedNote")) : null),
    cardWhen(t) ? el("p", { class: "when" }, cardWhen(t)) : null,
    site ? el("p", { class: "where" }, site.name, site.street ? ` · ${site.street}` : "") : null,
    // Priority only when it is not the usual.
    t.priority !== "normal" || (t.required_skills || []).length
      ? el("p", { class: "meta" }, [t.priority !== "normal" ? `${text("priority")}: ${text("priorities")[t.priority] ?? t.priority}` : null,
        (t.required_skills || []).length ? `${text("skills")}: ${t.required_skills.join(", ")}` : null].filter(Boolean).join(" · "))
      : null,
    claimable ? el("button", { type: "button", class: "claim", onclick: () => act(view, item, { operation: "claim" }) }, text("claim")) : null);
}

function dayPage(view) {
  const mine = view.tasks.filter((i) => i.facts.assignee === state.person && i.facts.status !== "cancelled")
    .sort((a, b) => (a.facts.status === "completed") - (b.facts.status === "completed") || order(a) - order(b));
  const free = view.tasks.filter((i) => i.facts.assignee == null && i.facts.status === "open" && i.replica.startsWith("team-"))
    .sort((a, b) => order(a) - order(b));
  return [
    el("h1", {}, text("title")),
    ...notices(view),
    el("section", { "aria-labelledby": "mine-title" }, el("h2", { id: "mine-title", class: "visually-hidden" }, text("title")),
      mine.length ? el("ol", { class: "tasks", id: "mine" }, mine.map((i) => taskCard(view, i, false))) : el("p", {}, text("nothing"))),
    el("section", { "aria-labelledby": "free-title" }, el("h2", { id: "free-title" }, text("free")),
      free.length ? el("ul", { class: "tasks", id: "free" }, free.map((i) => taskCard(view, i, true))) : el("p", {}, text("noFree"))),
    notificationsOffer(),
    el("p", { class: "actions" },
      el("button", { type: "button", id: "sync", onclick: () => syncNow() }, text("syncNow")), " ",
      el("button", { type: "button", id: "sign-out", class: "secondary", onclick: () => signOut() }, text("signOut"))),
    notificationsLine(),
    state.lastSync ? el("p", { class: "hint" }, text("lastSync", time(state.lastSync, phoneZone)),
      view.tasks.some((i) => !sameClock(i.task.time_zone)) ? ` ${text("phoneClock")}` : "") : null,
  ];
}

// Notifications are offered once the day is on the phone (never at first open), with what they
// are for; "Not now" leaves a button at the foot of the day.
function notificationsOffer() {
  if (state.notifications !== "off" || state.lastSync == null) return null;
  return el("section", { class: "offer", id: "notifications-offer", "aria-labelledby": "notify-title" },
    el("h2", { id: "notify-title" }, text("notifyAsk")), el("p", {}, text("notifyWhy")),
    el("p", { class: "actions" },
      el("button", { type: "button", id: "notifications-on", onclick: () => notificationsTurn(notify.turnOn) }, text("notifyOn")), " ",
      el("button", { type: "button", id: "notifications-later", class: "secondary", onclick: () => notificationsTurn(async () => notify.later()) }, text("notifyLater"))));
}

function notificationsLine() {
  switch (state.notifications) {
  case "on": return el("p", { class: "hint", id: "notifications" }, text("notifyIsOn"), " ",
    el("button", { type: "button", class: "small secondary", id: "notifications-off", onclick: () => notificationsTurn(notify.turnOff) }, text("notifyOff")));
  case "declined": return el("p", { class: "hint", id: "notifications" },
    el("button", { type: "button", class: "small secondary", id: "notifications-on", onclick: () => notificationsTurn(notify.turnOn) }, text("notifyOn")));
  case "blocked": return el("p", { class: "hint", id: "notifications" }, text("notifyBlocked"));
  default: return null;
  }
}

async function notificationsTurn(change) {
  try {
    await change();
    state.problem = null;
  } catch (error) {
    state.problem = text("notifyFailed", error.message || String(error));
  }
  state.notifications = await notify.notificationState().catch(() => "unsupported");
  await render();
}

function taskPage(view, id) {
  const item = view.tasks.find((i) => i.task.id === id);
  if (!item) return [el("p", {}, el("a", { href: "#" }, text("back")))];
  const t = item.task, f = item.facts;
  const site = view.sites.get(t.location_id);
  const zone = t.time_zone;
  const history = [
    f.startedAt != null ? el("li", {}, text("startedAt", time(f.startedAt, zone))) : null,
    f.completedAt != null ? el("li", {}, text("completedAt", time(f.completedAt, zone)), f.completionNote ? `: ${f.completionNote}` : "") : null,
    ...item.queued.map((q) => el("li", { class: "queued" }, `${text("did")[q.change.operation] ?? q.change.operation}${q.change.item ? `: ${labelOf(f, q.change.item)}` : ""} — ${text("queuedNote")}`)),
  ].filter(Boolean);
  const mine = f.assignee === state.person;
  const note = el("textarea", { id: "note", name: "note", rows: 3, maxlength: 10000 });
  return [
    el("p", {}, el("a", { href: "#", class: "back" }, `← ${text("back")}`)),
    el("h1", {}, t.title),
    el("p", { class: "badge", id: "task-status" }, text("status")[f.status] ?? f.status),
    ...notices(view, id),
    el("dl", { class: "facts" },
      whenLine(t) ? [el("dt", {}, text("when")), el("dd", {}, whenLine(t))] : null,
      [el("dt", {}, text("priority")), el("dd", {}, t.priority)],
      t.customer_first_name || t.visit ? [el("dt", {}, text("customer")),
        el("dd", { id: "visit", "data-visit": t.visit ?? "" }, [t.customer_first_name, t.visit ? text("visits")[t.visit] ?? t.visit : null].filter(Boolean).join(" · "))] : null,
      (t.required_skills || []).length ? [el("dt", {}, text("skills")), el("dd", {}, t.required_skills.join(", "))] : null,
      ...declared(t),
      site ? [el("dt", {}, text("address")), el("dd", {}, [site.name, site.street, [site.postal_code, site.city].filter(Boolean).join(" ")].filter(Boolean).join(", "), " ",
        el("a", { href: `geo:${site.latitude},${site.longitude}?q=${site.latitude},${site.longitude}`, class: "map" }, text("openMap")))] : null),
    t.description ? [el("h2", {}, text("description")), el("p", { class: "description" }, t.description)] : null,
    history.length ? [el("h2", {}, text("history")), el("ul", { class: "history" }, history)] : null,
    f.assignee == null && f.status === "open" ? el("button", { type: "button", class: "claim", onclick: () => act(view, item, { operation: "claim" }) }, text("claim")) : null,
    mine && (f.status === "assigned") ? el("button", { type: "button", id: "start", onclick: () => act(view, item, { operation: "start" }) }, text("start")) : null,
    f.status === "completed" && f.completedBy === state.person
      ? el("button", { type: "button", id: "reopen", class: "secondary", onclick: () => act(view, item, { operation: "reopen" }) }, text("reopen")) : null,
    f.checklist ? checklist(view, item, mine && f.status !== "completed") : null,
    materials(view, item, mine && f.status !== "completed"),
    timeOnJob(view, item),
    mine && f.status !== "completed" ? el("form", { id: "complete", onsubmit: (event) => {
      event.preventDefault();
      act(view, item, { operation: "complete", note: note.value });
    } }, el("label", { for: "note" }, text("note")), note, el("button", { type: "submit" }, text("complete"))) : null,
  ];
}

// The columns the task's declaration says the page lists under their label (fields.js), those with a value.
function declared(t) {
  return fields.shown.filter((f) => t[f.key] != null).map((f) => {
    const value = f.kind === "date" ? time(t[f.key], t.time_zone) : f.kind === "bool" ? text(t[f.key] ? "yes" : "no") : String(t[f.key]);
    const label = f.label[language] ?? f.label.en;
    return [el("dt", {}, label.charAt(0).toUpperCase() + label.slice(1)), el("dd", { "data-column": f.key }, f.unit ? `${value} ${f.unit}` : value)];
  });
}

work.setUp({ state, render, act, skillsIn });
begin();
