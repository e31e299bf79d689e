// Background Sync for the phone app's service worker (a module: sw.js is this and app-sw.js).
// Where the browser allows it, what the worker queued is sent when the network returns even with
// the app closed: the same sync the app runs, for whoever the phone is signed in as, one at a time
// with the page's (a lock per person).
import { open, listing, actAs, sync, exclusively, SignedOut } from "./sync.js";

self.addEventListener("sync", (event) => {
  if (event.tag !== "teamwork-queue") return;
  event.waitUntil((async () => {
    let list;
    try { list = await listing(); } catch (error) { if (error instanceof SignedOut) return; throw error; }
    actAs(list.person);
    await exclusively(list.person, async () => {
      const local = await open(list.person);
      try {
        await sync(local, list.person, list.replicas);
      } finally {
        local.close();
      }
    });
    // A page of the app that is open shows what changed.
    for (const client of await self.clients.matchAll()) client.postMessage({ synced: Date.now() });
  })());
});

