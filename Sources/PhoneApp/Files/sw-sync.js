// Background Sync for the phone app's service worker (a module: /app/sw.js is this and sw-cache.js).
// Where the browser allows it, what the worker queued is sent when the network returns even with
// the app closed: the same sync the app runs, for whoever the phone is signed in as, one at a time
// with the page's (a lock per person).
import { open, listing, actAs, sync, exclusively, SignedOut, keepPushSubscription, pushKey } from "./sync.js";
import { text, time } from "./words.js";

// One whole sync for whoever the phone is signed in as; `then` reads the synced copy. Null when signed out.
async function syncHere(then = async () => null) {
  let list;
  try { list = await listing(); } catch (error) { if (error instanceof SignedOut) return null; throw error; }
  actAs(list.person);
  const result = await exclusively(list.person, async () => {
    const local = await open(list.person);
    try {
      await sync(local, list.person, list.replicas);
      return await then(local, list.person);
    } finally {
      local.close();
    }
  });
  // A page of the app that is open shows what changed.
  for (const client of await self.clients.matchAll()) client.postMessage({ synced: Date.now() });
  return result;
}

self.addEventListener("sync", (event) => {
  if (event.tag !== "teamwork-queue") return;
  event.waitUntil(syncHere());
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A push's notification from the phone's own copy (sw-cache.js shows it): synced first, and again
// (up to three times in 5 s) while a task it names has not reached the phone's copy yet (the
// master told before the team's copy was written). Null when it cannot be said from the copy.
self.teamworkNews = async (news) => {
  if (!news.length) return null;
  const wanted = [...new Set(news.map((n) => n.task))];
  // Work taken away leaves the copy with the sync: its title is read first.
  const before = await titlesHeld(wanted).catch(() => new Map());
  let found = null;
  for (let round = 0; round < 3 && !found; round += 1) {
    if (round) await sleep(1500);
    found = await syncHere(async (local) => {
      const tasks = new Map();
      for (const task of await local.all("tasks")) if (wanted.includes(task.id)) tasks.set(task.id, task);
      const sites = new Map((await local.all("locations")).map((l) => [l.id, l]));
      // Each task's copy at least as recent as the news (a "changed" must not show the old window).
      const current = (n) => n.kind === "taken" || (tasks.has(n.task) && !(n.at > (tasks.get(n.task).updated_at ?? 0)));
      return news.every(current) || round === 2 ? { tasks, sites } : null;
    });
  }
  if (!found) return null;
  const line = (id) => {
    const task = found.tasks.get(id);
    if (!task) return before.get(id) ?? null;
    const site = found.sites.get(task.location_id);
    const when = task.planned_start ?? task.window_start ?? task.due_at;
    return [task.title, when != null ? time(when, task.time_zone) : null, site ? site.name : null].filter(Boolean).join(" · ");
  };
  if (news.length === 1 || wanted.length === 1) {
    const first = news[0];
    if (first.kind === "taken") return before.has(first.task) ? { title: text("pushTaken"), body: before.get(first.task), task: null } : null;
    const task = found.tasks.get(first.task);
    if (!task) return null;
    const title = task.status === "cancelled" ? text("pushCancelled", task.title)
      : { assigned: text("pushAssigned"), changed: text("pushChanged"), refused: text("pushRefused"), decided: text("pushDecided") }[first.kind]
        ?? text("pushChanged");
    return { title, body: line(first.task), task: first.task };
  }
  return { title: text("pushSeveral", wanted.length), body: wanted.map(line).filter(Boolean).join("\n") || text("pushOpen"), task: null };
};

// The titles the phone's copy holds of `ids` now, whoever is signed in.
async function titlesHeld(ids) {
  let list;
  try { list = await listing(); } catch { return new Map(); }
  const local = await open(list.person);
  try {
    return new Map((await local.all("tasks")).filter((t) => ids.includes(t.id)).map((t) => [t.id, t.title]));
  } finally {
    local.close();
  }
}

// The browser renewed the subscription: the service keeps the new one (with the same key).
self.addEventListener("pushsubscriptionchange", (event) => {
  event.waitUntil((async () => {
    const subscription = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: await pushKey() });
    await keepPushSubscription(subscription.toJSON());
  })());
});

