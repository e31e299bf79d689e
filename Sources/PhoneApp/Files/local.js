// What the phone keeps, in IndexedDB: one database per person (`teamwork-person-7`), so two
// people on one shared phone never see or send each other's work, and signing out (or a
// revoked phone) deletes that person's database whole.
//
//   replicas  name → {name, kind, title, epoch, since}      where each replica's copy stands
//   tasks     [replica, id] → the task as the master's last page said (never edited here)
//   members   [replica, person_id] → a teammate (names, skills)
//   locations [replica, id] → a site
//   queue     seq → {change, replica, state}                 the worker's changes, in order,
//                                                           until the service answered them
//   notices   key → {at, text, taskID}                       what the worker must be told (a
//                                                           refusal once, however often it is read)
//   files     digest → {blob, mediaType}                      photos and signatures not yet uploaded
//   parts     id → the catalogue's part (the common data)      read-only, what a worker may record
//   used      key (task:part or task:~line) → {taskID, part,   what the worker recorded as used on
//             description, quantity, changeID}                 a task from this phone
//   time      key (task:kind) → {taskID, kind, start, end,     the time the worker recorded on a
//             changeID} (milliseconds)                         task from this phone

import { text, day } from "./words.js";

const version = 4;
export const databaseName = (person) => `teamwork-person-${person}`;

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

export async function open(person) {
  const req = indexedDB.open(databaseName(person), version);
  req.onupgradeneeded = (event) => {
    const db = req.result, from = event.oldVersion;
    if (from < 1) {
      db.createObjectStore("replicas", { keyPath: "name" });
      db.createObjectStore("tasks", { keyPath: ["replica", "id"] });
      db.createObjectStore("members", { keyPath: ["replica", "person_id"] });
      db.createObjectStore("locations", { keyPath: ["replica", "id"] });
      db.createObjectStore("queue", { keyPath: "seq", autoIncrement: true });
      db.createObjectStore("notices", { keyPath: "key" });
      db.createObjectStore("files", { keyPath: "digest" });
    }
    // Version 2: the parts catalogue and what was used; the common data is taken again from its start.
    if (from < 2) {
      db.createObjectStore("parts", { keyPath: "id" });
      db.createObjectStore("used", { keyPath: "key" });
      if (from >= 1) req.transaction.objectStore("replicas").delete("common");
    }
    // Version 3: time on the job.
    if (from < 3) db.createObjectStore("time", { keyPath: "key" });
    // Version 4: changes a host accepted, kept until the master confirms them (docs/protocol.md).
    if (from < 4) db.createObjectStore("sent", { keyPath: "seq" });
  };
  const db = await request(req);
  // Signing out deletes the database: a copy open elsewhere (the service worker) lets go at once.
  db.onversionchange = () => db.close();
  return new Local(db, person);
}

export async function wipe(person) {
  await request(indexedDB.deleteDatabase(databaseName(person)));
}

// A phone holds only its own person: everything this browser kept of anyone else (`person` null:
// of everyone) goes, their databases whole (tasks, notes, unsent photos and work), the web
// storage the app wrote for them and any cache that is not the app's own files. Run when the
// phone is paired for someone, signed out, revoked or its person deactivated.
export async function forgetOthers(person) {
  const keep = person == null ? null : databaseName(person);
  const names = new Set();
  if (indexedDB.databases) for (const { name } of await indexedDB.databases()) if (name) names.add(name);
  for (const name of names) if (name.startsWith("teamwork-person-") && name !== keep) await request(indexedDB.deleteDatabase(name));
  try { sessionStorage.clear(); } catch { /* storage may be unavailable: nothing kept there then */ }
  if (person == null) {
    for (const key of Object.keys(localStorage)) if (key.startsWith("teamwork.")) localStorage.removeItem(key);
  }
  if (typeof caches !== "undefined") {
    for (const name of await caches.keys()) if (!name.startsWith("teamwork-app-")) await caches.delete(name);
  }
}

export class Local {
  constructor(db, person) { this.db = db; this.person = person; }
  close() { this.db.close(); }

  // Runs `body(stores)` in one transaction over `names`; resolves when it committed.
  async write(names, body) {
    const tx = this.db.transaction(names, "readwrite");
    const stores = Object.fromEntries(names.map((name) => [name, tx.objectStore(name)]));
    const done = new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error || new Error("aborted"));
    });
    let result;
    try { result = await body(stores); } catch (error) { tx.abort(); throw error; }
    await done;
    return result;
  }

  async all(name) {
    return request(this.db.transaction(name).objectStore(name).getAll());
  }

  async get(name, key) {
    return request(this.db.transaction(name).objectStore(name).get(key));
  }

  // Lets go of the copies the person may no longer read (taken off a team): their tasks, sites and
  // members leave the phone in one transaction, and the person is told which team went.
  // Everything of the team goes with it: what was used and the time recorded on its tasks, the
  // messages about them, its unsent work and the photos and signatures not yet uploaded for it.
  async keepOnly(names) {
    const gone = (await this.all("replicas")).filter((r) => r.name !== "common" && !names.has(r.name));
    if (!gone.length) return;
    const stores = ["replicas", "tasks", "members", "locations", "notices", "used", "time", "queue", "files"];
    await this.write(stores, async (s) => {
      const now = Date.now();
      const goneNames = new Set(gone.map((r) => r.name));
      const tasks = new Set();
      for (const replica of gone) {
        const range = IDBKeyRange.bound([replica.name, -Infinity], [replica.name, Infinity]);
        for (const task of await request(s.tasks.getAll(range))) tasks.add(task.id);
        for (const name of ["tasks", "members", "locations"]) s[name].delete(range);
        s.replicas.delete(replica.name);
      }
      const kept = new Set((await request(s.tasks.getAll())).filter((t) => !goneNames.has(t.replica)).map((t) => t.id));
      const theirs = (taskID) => taskID != null && tasks.has(taskID) && !kept.has(taskID);
      const files = new Set();
      for (const entry of await request(s.queue.getAll())) {
        if (!goneNames.has(entry.replica)) continue;
        if (entry.change.blob) files.add(entry.change.blob);
        s.queue.delete(entry.seq);
      }
      for (const entry of await request(s.queue.getAll())) if (entry.change.blob) files.delete(entry.change.blob);
      for (const digest of files) s.files.delete(digest);
      for (const name of ["used", "time", "notices"]) {
        for (const row of await request(s[name].getAll())) if (theirs(row.taskID)) s[name].delete(row.key);
      }
      for (const replica of gone) {
        if (replica.kind === "team") s.notices.put({ key: `gone:${replica.name}:${now}`, at: now, taskID: null, text: text("teamGone", replica.title || replica.name) });
      }
    });
  }

  // Applies one page of a replica's changes (ChangePage, as the service writes it) and moves the
  // replica's position, in one transaction: a page is taken whole or not at all. What the worker
  // must hear of is kept as a notice: a change of theirs the master refused (and the dispatcher's
  // decision on it: a completion set aside and then accepted shows as the task completed by them,
  // which the app words as the acceptance), a task of theirs given to someone else or taken away, a task moved to
  // another day.
  async applyPage(person, replica, page) {
    await this.write(["replicas", "tasks", "members", "locations", "notices", "used", "time"], async (s) => {
      // A page that no longer starts where the copy stands (another sync took the next one) is left.
      const held = await request(s.replicas.get(replica.name));
      if (!page.refetch && (held?.since ?? 0) !== page.since) return;
      if (page.refetch && page.since === 0) {
        for (const name of ["tasks", "members", "locations"]) {
          s[name].delete(IDBKeyRange.bound([replica.name, -Infinity], [replica.name, Infinity]));
        }
      }
      const now = Date.now();
      for (const task of page.tasks) {
        const before = await request(s.tasks.get([replica.name, task.id]));
        if (before && before.assignee_id === person && task.assignee_id !== person && task.status !== "completed") {
          s.notices.put({ key: `taken:${task.id}:${task.row_version}`, at: now, taskID: task.id, text: text("takenAway", task.title) });
        } else if (before && task.assignee_id === person && before.plan_date && task.plan_date && before.plan_date !== task.plan_date) {
          s.notices.put({ key: `moved:${task.id}:${task.row_version}`, at: now, taskID: task.id, text: text("moved", task.title, day(task.plan_date)) });
        }
        // A completion of theirs the master set aside, now completed by them: the dispatcher accepted it.
        const setAside = before?.set_aside_completion;
        if (setAside && task.status === "completed" && task.completed_by === person) {
          s.notices.put({ key: `accepted:${setAside}`, at: now, taskID: task.id, text: text("accepted", task.title) });
          s.tasks.put({ ...task, replica: replica.name });
        } else {
          s.tasks.put({ ...task, replica: replica.name, ...(setAside ? { set_aside_completion: setAside } : {}) });
        }
      }
      for (const member of page.members) s.members.put({ ...member, replica: replica.name });
      for (const location of page.locations) s.locations.put({ ...location, replica: replica.name });
      for (const gone of page.deleted) {
        const store = { tasks: "tasks", locations: "locations", members: "members" }[gone.table];
        if (!store) continue;
        if (store === "tasks") {
          const before = await request(s.tasks.get([replica.name, gone.id]));
          if (before && before.assignee_id === person && before.status !== "completed" && !page.refetch) {
            s.notices.put({ key: `taken:${gone.id}:${gone.row_version}`, at: now, taskID: gone.id, text: text("takenAway", before.title) });
          }
        }
        s[store].delete([replica.name, gone.id]);
      }
      for (const refusal of page.refused || []) {
        if (refusal.person_id !== person) continue;
        const title = (await titleOf(s, replica.name, refusal.task_id)) ?? text("aTask");
        const said = refusal.decision
          ? text("decided", title, refusal.reason, refusal.decision) : text("refused", title, refusal.reason);
        // A decision is news when it comes: it stands on top, above the refusal it decides (once: the
        // same words arriving again, as after a rebuild, keep their place).
        const key = `refused:${refusal.change_id}`;
        const before = await request(s.notices.get(key));
        const at = before && before.text === said ? before.at : refusal.decision ? now : refusal.decided_at;
        s.notices.put({
          key, at, taskID: refusal.task_id, text: said,
          ...(refusal.decision ? {} : { kind: "refused", replica: replica.name, reason: refusal.reason, title }),
        });
        if (refusal.operation === "complete") await setAside(s, person, replica.name, refusal.task_id, refusal.change_id, refusal.decision);
        this.forgetEntry(s, { operation: refusal.operation, id: refusal.change_id });
      }
      s.replicas.put({ ...replica, epoch: page.epoch, since: page.up_to });
    });
  }

  // A completion the service refused when it was pushed (the push's answer), in the store `s`.
  async refusedCompletion(s, replica, taskID, changeID) {
    await setAside(s, this.person, replica, taskID, changeID, null);
  }

  async enqueue(replica, change) {
    await this.write(["queue", "used", "time"], async (s) => {
      s.queue.add({ replica, change, state: "queued" });
      if (change.operation === "time") {
        // Time, as the phone recorded it: an entry per task and kind; no length removes it.
        const [start, end] = change.value.split("/").map(Date.parse);
        const key = `${change.task_id}:${change.item}`;
        if (end > start) s.time.put({ key, taskID: change.task_id, kind: change.item, start, end, changeID: change.id });
        else s.time.delete(key);
        return;
      }
      if (change.operation !== "use") return;
      // What was used, as the phone recorded it: a line per part (or description); 0 removes it.
      const key = usedKey(change);
      if (!/[1-9]/.test(change.value)) s.used.delete(key);
      else s.used.put({ key, taskID: change.task_id, part: change.item ?? null, description: change.item == null ? change.note.trim() : null, quantity: change.value, changeID: change.id });
    });
  }

  // A use or a time entry the service or the master refused is not what the phone recorded any more.
  forgetEntry(s, change) {
    if (change.operation !== "use" && change.operation !== "time") return;
    const cursor = (change.operation === "use" ? s.used : s.time).openCursor();
    cursor.onsuccess = () => {
      const at = cursor.result;
      if (!at) return;
      if (at.value.changeID === change.id) at.delete();
      at.continue();
    };
  }

  // Applies one page of the common replica: the phone keeps its parts catalogue.
  async applyCommon(page) {
    await this.write(["replicas", "parts"], async (s) => {
      const held = await request(s.replicas.get("common"));
      if (!page.refetch && (held?.since ?? 0) !== page.since) return;
      if (page.refetch && page.since === 0) s.parts.clear();
      for (const part of page.parts || []) s.parts.put(part);
      for (const gone of page.deleted) if (gone.table === "parts") s.parts.delete(gone.id);
      s.replicas.put({ name: "common", kind: "common", title: "", epoch: page.epoch, since: page.up_to });
    });
  }

  async notice(key, text, taskID = null) {
    await this.write(["notices"], async (s) => { s.notices.put({ key, at: Date.now(), text, taskID }); });
  }
}

// A task's title as the phone's copy has it (in a transaction that holds `tasks`), or null.
export async function titleOf(s, replica, taskID) {
  if (taskID == null) return null;
  const task = await request(s.tasks.get([replica, taskID]));
  return task ? task.title : null;
}

// A completion of the person's the master did not take waits for the dispatcher's decision: until
// then the task remembers it (a dismissal, `decision`, forgets it), so that the task arriving
// completed by them says the dispatcher accepted it; one already completed by them was accepted.
async function setAside(s, person, replica, taskID, changeID, decision) {
  if (taskID == null) return;
  const task = await request(s.tasks.get([replica, taskID]));
  if (!task) return;
  const { set_aside_completion: _, ...rest } = task;
  if (decision) {
    s.tasks.put(rest);
  } else if (task.status === "completed" && task.completed_by === person) {
    s.notices.put({ key: `accepted:${changeID}`, at: Date.now(), taskID, text: text("accepted", task.title) });
  } else {
    s.tasks.put({ ...rest, set_aside_completion: changeID });
  }
}

// The line a use sets: its part (whatever its letters' case) or its description.
export function usedKey(change) {
  return `${change.task_id}:` + (change.item != null ? change.item.toLowerCase() : `~${(change.note || "").trim().toLowerCase()}`);
}
