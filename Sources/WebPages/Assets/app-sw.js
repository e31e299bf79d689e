// The phone app's service worker (docs/phone.md). VERSION and FILES are written above by the
// service (FieldApp.swift): one cache per version of the app's files, so a new build replaces
// them all at once. The app's files come from the cache first (it opens with no network); the
// protocol (/v1) and the pairing pages always go to the network. As a module (sw.js) it also
// sends the queue in the background (app-sw-sync.js); a browser without module service workers
// gets this part alone (sw-basic.js).
const CACHE = `teamwork-app-${VERSION}`;

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await cache.addAll(FILES.map((file) => new Request(file, { cache: "no-cache" })));
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
