// The phone app's service worker (docs/phone.md). VERSION and FILES (each file's address and
// tag) are written above by the service (FieldApp.swift): one cache per version of the app's
// files, so a new build replaces them all at once. The app's files come from the cache first (it opens with no network); the
// protocol (/v1) and the pairing pages always go to the network. As a module (sw.js) it also
// sends the queue in the background (sw-sync.js); a browser without module service workers
// gets this part alone (sw-basic.js).
const CACHE = `teamwork-app-${VERSION}`;

// A file the page has just fetched is in the browser's HTTP cache: taken from there, with no
// request, when its tag is this build's (FILES; either coding's); any other is fetched.
// A fresh file of another build (a host not yet updated behind the same address) fails the
// install: the browser tries again later, and no version's cache mixes two builds.
const tagOf = (response) => (response.headers.get("ETag") || "").replace(/^W\//, "").replace(/"/g, "").replace(/-gz$/, "");

async function fetchForCache(file, tag) {
  const held = await fetch(new Request(file, { cache: "force-cache" })).catch(() => null);
  if (held && held.ok && tagOf(held) === tag) return held;
  const fresh = await fetch(new Request(file, { cache: "no-cache" }));
  if (!fresh.ok || tagOf(fresh) !== tag) throw new Error(`${file}: ${fresh.status}, not this build's`);
  return fresh;
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    const files = Object.entries(FILES);
    const responses = await Promise.all(files.map(([file, tag]) => fetchForCache(file, tag)));
    await Promise.all(files.map(([file], index) => cache.put(file, responses[index])));
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) if (name !== CACHE) await caches.delete(name);
    await self.clients.claim();
  })());
});

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return;
  if (!url.pathname.startsWith("/app/") || url.pathname.startsWith("/app/pair") || url.pathname.startsWith("/app/sign-out")) return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    const key = event.request.mode === "navigate" ? "/app/" : url.pathname;
    const kept = await cache.match(key, { ignoreSearch: true });
    if (kept) return kept;
    return fetch(event.request);
  })());
});

// Web Push (docs/phone.md, "Notifications"): a push names tasks and what happened to them, never
// what they say. Every push shows a notification (browsers require it): where the worker can sync
// here (sw.js), from the phone's own copy, synced first (self.teamworkNews); otherwise, or when that
// fails, a plain one. A tap opens the task (or the day, for several).
self.addEventListener("push", (event) => {
  let news = [];
  try { news = (event.data && event.data.json().news) || []; } catch { news = []; }
  event.waitUntil((async () => {
    let shown = null;
    // At most 8 s of syncing first: a browser ends a push's work that runs long, and a push that
    // shows nothing costs the subscription on some.
    const limit = new Promise((resolve) => setTimeout(() => resolve(null), 8000));
    try { shown = self.teamworkNews ? await Promise.race([self.teamworkNews(news), limit]) : null; } catch { shown = null; }
    if (!shown) {
      const swedish = (self.navigator.language || "").toLowerCase().startsWith("sv");
      shown = { title: "Teamwork", body: swedish ? "Något nytt om ditt arbete. Öppna Teamwork för att se det." : "News about your work. Open Teamwork to see it.",
        task: news.length === 1 ? news[0].task : null };
    }
    await self.registration.showNotification(shown.title, {
      body: shown.body, tag: "teamwork-work", renotify: true, icon: "/app/icon-192.png", data: { task: shown.task ?? null },
    });
  })());
});

// Where a tap on a notification leads: the task's page, or the day.
const notificationTarget = (data) => (data && Number.isInteger(data.task) && data.task > 0 ? `/app/#task/${data.task}` : "/app/");

// An open window of the app goes there; else one is opened.
self.teamworkOpen = async (data) => {
  const target = notificationTarget(data);
  for (const client of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) {
    if (new URL(client.url).pathname.startsWith("/app/")) {
      await client.focus().catch(() => {});
      return client.navigate(target);
    }
  }
  return self.clients.openWindow(target);
};

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(self.teamworkOpen(event.notification.data));
});
