// The phone's side of the workers' protocol (docs/protocol.md), as `teamwork-worker sync` and
// `watch` speak it: push what is queued, in order, each change with its id (a retry after a
// lost answer is taken once), then pull every replica's pages; when that is done, wait for the
// next change (live mode). Signed in by the phone's cookie, which the script never sees; every
// request carries the app's header, which a page of another site cannot send.

import { open, wipe, forgetOthers, titleOf } from "./local.js";
import { text } from "./words.js";

export class SignedOut extends Error {}
export class Offline extends Error {}
// The phone was paired for someone else meanwhile (another tab, the app asleep): 412.
export class PersonChanged extends Error {}

// Who the app acts for: every request says so, and the service refuses one for another person
// than the phone's sign-in (nothing one person queued goes out as the next one's).
let acting = "new";
export function actAs(person) { acting = person == null ? "new" : String(person); }
const deadline = 30000;
const batch = 100;

async function call(path, { method = "GET", body = null, raw = null, headers: extra = {}, signal = null, wait = 0 } = {}) {
  const timeout = AbortSignal.timeout(deadline + wait * 1000);
  const headers = { "X-Teamwork-App": acting, ...extra };
  if (body !== null) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: raw ?? (body === null ? null : JSON.stringify(body)), credentials: "same-origin", cache: "no-store",
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (error) {
    if (signal && signal.aborted) throw error;
    throw new Offline(String(error));
  }
  if (response.status === 401) throw new SignedOut(await response.text());
  if (response.status === 412) throw new PersonChanged(await response.text());
  if (response.status >= 500 || response.status === 429) throw new Offline(`${response.status}`);
  return response;
}

// Who the phone is signed in as, and their replicas; SignedOut when the service does not know the
// phone (never paired, signed out, or revoked), Offline when it cannot be asked.
export async function listing() {
  actAs(null);
  const response = await call("/v1/replicas");
  if (!response.ok) throw new Offline(`${response.status}`);
  return response.json();
}

// Web Push (docs/phone.md, "Notifications"): the service's VAPID key (as pushManager.subscribe takes
// it), and this phone's subscription kept with its sign-in or ended.
export async function pushKey() {
  const response = await call("/v1/push");
  if (!response.ok) throw new Offline(`${response.status}`);
  const key = (await response.json()).public_key;
  return Uint8Array.from(atob(key.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
}

export async function keepPushSubscription(subscription) {
  const response = await call("/v1/push", { method: "PUT", body: subscription });
  if (!response.ok) throw new Error((await response.json().catch(() => ({}))).error?.message ?? `${response.status}`);
}

export async function endPushSubscription() {
  const response = await call("/v1/push", { method: "DELETE" });
  if (!response.ok) throw new Offline(`${response.status}`);
}

// A change's id: a random UUID (version 4). From getRandomValues, which a page served without
// HTTPS has too (randomUUID is for secure pages only).
export function changeID() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// One whole sync of `local` for `person`: pushes, then pulls. Returns what it did.
export async function sync(local, person, replicas) {
  const report = { sent: 0, refused: 0, pulled: 0 };
  const names = new Set(replicas.map((r) => r.name));
  await push(local, names, report);
  // What the person may no longer read leaves the phone (its queued changes were refused above).
  await local.keepOnly(names);
  for (const replica of replicas) {
    if (!replica.available) continue;
    if (replica.kind !== "common") {
      report.pulled += await pull(local, person, replica);
      continue;
    }
    // The catalogue is not worth a failed sync: the team's work goes on with the copy the phone has.
    try {
      report.pulled += await pullCommon(local, replica);
    } catch (error) {
      if (error instanceof SignedOut || error instanceof PersonChanged) throw error;
    }
  }
  return report;
}

// Changes a host accepted and the master has not confirmed go again first, at most a push's worth
// (oldest first): that host may have died with its disk before its listener took them to the
// master. The host answers those the master holds "settled"; the ledger takes each change once.
async function resend(local, names, report) {
  const kept = (await local.all("sent")).sort((a, b) => a.seq - b.seq).slice(0, batch);
  const byReplica = new Map();
  for (const entry of kept) {
    if (!byReplica.has(entry.replica)) byReplica.set(entry.replica, []);
    byReplica.get(entry.replica).push(entry);
  }
  for (const [replica, entries] of byReplica) {
    if (!names.has(replica)) {
      // No host can take them any more: the worker no longer has that team.
      await local.write(["sent"], async (s) => { for (const entry of entries) s.sent.delete(entry.seq); });
      continue;
    }
    // Files first, as for any push: the host asked may not have the file of an attachment another took.
    const { sendable } = await uploadFiles(local, entries, report);
    if (!sendable.length) continue;
    const path = `/v1/replicas/${encodeURIComponent(replica)}/changes`;
    const response = await call(path, { method: "POST", body: { changes: sendable.map((e) => e.change), resent: true } });
    if (response.ok) {
      await settle(local, sendable, (await response.json()).results, report, "sent");
      continue;
    }
    // Refused as a whole (a 4xx): one at a time, so one change the service will never take is
    // refused alone and never holds back the others.
    for (const entry of sendable) {
      const one = await call(path, { method: "POST", body: { changes: [entry.change], resent: true } });
      if (one.ok) {
        await settle(local, [entry], (await one.json()).results, report, "sent");
        continue;
      }
      let reason = `${one.status}`;
      try { reason = (await one.json()).error?.message ?? reason; } catch { /* not JSON */ }
      await settle(local, [entry], [{ id: entry.change.id, status: "rejected", reason }], report, "sent");
    }
  }
}

async function push(local, names, report) {
  await resend(local, names, report);
  const queued = (await local.all("queue")).sort((a, b) => a.seq - b.seq);
  const byReplica = new Map();
  for (const entry of queued) {
    if (!byReplica.has(entry.replica)) byReplica.set(entry.replica, []);
    byReplica.get(entry.replica).push(entry);
  }
  for (const [replica, entries] of byReplica) {
    if (!names.has(replica)) {
      // The worker no longer has that team: nothing there can be sent; say so.
      await local.write(["queue", "notices"], async (s) => {
        for (const entry of entries) {
          s.queue.delete(entry.seq);
          s.notices.put({ key: `refused:${entry.change.id}`, at: Date.now(), taskID: entry.change.task_id, text: text("noLongerYours") });
        }
      });
      report.refused += entries.length;
      continue;
    }
    // Files first: an attachment whose file is not uploaded yet, and the later changes of its
    // task, wait (a completion never goes ahead of the photo it needs); other tasks go on.
    const { sendable, held } = await uploadFiles(local, entries, report);
    for (let start = 0; start < sendable.length; start += batch) {
      const part = sendable.slice(start, start + batch);
      const response = await call(`/v1/replicas/${encodeURIComponent(replica)}/changes`, {
        method: "POST", body: { changes: part.map((e) => e.change) },
      });
      if (!response.ok) {
        // The whole push was refused (a 4xx): each change is tried alone, so one bad change
        // never holds back the others.
        for (const entry of part) await pushOne(local, replica, entry, report);
        continue;
      }
      await settle(local, part, (await response.json()).results, report);
    }
    if (held.size) report.held = (report.held || 0) + held.size;
  }
}

async function pushOne(local, replica, entry, report) {
  const response = await call(`/v1/replicas/${encodeURIComponent(replica)}/changes`, { method: "POST", body: { changes: [entry.change] } });
  if (response.ok) return settle(local, [entry], (await response.json()).results, report);
  let reason = `${response.status}`;
  try { reason = (await response.json()).error?.message ?? reason; } catch { /* not JSON */ }
  await settle(local, [entry], [{ id: entry.change.id, status: "rejected", reason }], report);
}

// The service's answers to changes from the queue, or sent again from `sent`: an accepted change
// leaves the queue for `sent`, where it stays until the service says the master holds it
// (settled); a refused one leaves both, and the worker is told why (the task shows the master's
// copy again).
async function settle(local, entries, results, report, from = "queue") {
  const byID = new Map(results.map((r) => [r.id, r]));
  await local.write(["queue", "sent", "notices", "tasks", "used", "time", "files"], async (s) => {
    for (const entry of entries) {
      const result = byID.get(entry.change.id);
      if (!result) continue;
      s[from].delete(entry.seq);
      // A photo or signature stays on the phone until the master holds its attachment (or it is refused).
      if (entry.change.blob && (result.settled || result.status !== "accepted")) s.files.delete(entry.change.blob);
      if (result.status === "accepted") {
        if (!result.settled) s.sent.put(entry);
        if (from === "queue") report.sent += 1;
      } else {
        report.refused += 1;
        // Worded as it is shown (app.js): the task's title and what became of it by then.
        const title = (await titleOf(s, entry.replica, entry.change.task_id)) ?? text("aTask");
        s.notices.put({
          key: `refused:${entry.change.id}`, at: Date.now(), taskID: entry.change.task_id, text: text("refused", title, result.reason),
          kind: "refused", replica: entry.replica, reason: result.reason, title,
        });
        if (entry.change.operation === "complete") await local.refusedCompletion(s, entry.replica, entry.change.task_id, entry.change.id);
        local.forgetEntry(s, entry.change);
      }
    }
  });
}

const piece = 256 * 1024;

// Photos and signatures go first, resumably (docs/protocol.md, uploads): HEAD says how much the
// service holds; PATCH sends the rest in pieces, from where the service stands. Returns the
// changes that can be pushed now and the tasks held back.
async function uploadFiles(local, entries, report) {
  const sendable = [];
  const held = new Set();
  for (const entry of entries) {
    const change = entry.change;
    if (held.has(change.task_id)) continue;
    if (change.operation !== "attach" || !change.blob) { sendable.push(entry); continue; }
    const file = await local.get("files", change.blob);
    if (file) {
      const refusal = await upload(change.blob, file.blob, change.task_id);
      if (refusal === "later") { held.add(change.task_id); continue; }
      if (refusal) {
        // The service will never take this file: its attachment is refused; the task's later changes wait.
        await settle(local, [entry], [{ id: change.id, status: "rejected", reason: `its file was refused: ${refusal}` }], report);
        held.add(change.task_id);
        continue;
      }
    }
    sendable.push(entry);
  }
  return { sendable, held };
}

// Uploads one kept file, as proof for task `taskID` (Upload-For: on a full disk it goes before
// files nobody announced); null when the service holds it whole, "later" when not this time, or
// the service's reason when it will never take it.
async function upload(digest, blob, taskID) {
  const path = `/v1/blobs/${digest}`;
  const where = (response) => ({
    offset: Number(response.headers.get("Upload-Offset") || "0"), complete: response.headers.get("Upload-Complete") === "?1",
  });
  let head;
  try { head = await call(path, { method: "HEAD" }); } catch (error) { if (error instanceof SignedOut) throw error; return "later"; }
  let { offset, complete } = head.ok ? where(head) : { offset: 0, complete: false };
  let stalled = 0;
  while (!complete) {
    if (offset > blob.size) offset = 0;
    const before = offset;
    let response;
    try {
      response = await call(path, {
        method: "PATCH", raw: blob.slice(offset, Math.min(blob.size, offset + piece)),
        headers: {
          "Content-Type": "application/offset+octet-stream", "Upload-Offset": String(offset), "Upload-Length": String(blob.size),
          ...(taskID != null ? { "Upload-For": String(taskID) } : {}),
        },
      });
    } catch (error) {
      if (error instanceof SignedOut) throw error;
      return "later";
    }
    if ([400, 413, 415, 422].includes(response.status)) {
      try { return (await response.json()).error?.message ?? String(response.status); } catch { return String(response.status); }
    }
    if (!response.ok && response.status !== 409) return "later";
    ({ offset, complete } = where(response));
    stalled = offset > before || complete ? 0 : stalled + 1;
    if (stalled >= 3) return "later";
  }
  return null;
}

// A team's or the person's replica: pages since the phone's position (all of it after a rebuild).
async function pull(local, person, listed) {
  let rows = 0;
  for (let guard = 0; guard < 10000; guard += 1) {
    const held = await local.get("replicas", listed.name);
    const query = new URLSearchParams({ since: String(held?.since ?? 0), limit: "500" });
    if (held?.epoch) query.set("epoch", held.epoch);
    const response = await call(`/v1/replicas/${encodeURIComponent(listed.name)}/changes?${query}`);
    if (!response.ok) throw new Offline(`${listed.name}: ${response.status}`);
    const page = await response.json();
    await local.applyPage(person, { name: listed.name, kind: listed.kind, title: listed.title }, page);
    rows += page.tasks.length + page.members.length + page.locations.length + page.deleted.length;
    if (!page.more) break;
  }
  return rows;
}

// The common replica: the phone keeps its parts catalogue (people and sites come with the team's pages).
async function pullCommon(local, listed) {
  let rows = 0;
  for (let guard = 0; guard < 10000; guard += 1) {
    const held = await local.get("replicas", "common");
    const query = new URLSearchParams({ since: String(held?.since ?? 0), limit: "500" });
    if (held?.epoch) query.set("epoch", held.epoch);
    const response = await call(`/v1/replicas/${encodeURIComponent(listed.name)}/changes?${query}`);
    if (!response.ok) throw new Offline(`${listed.name}: ${response.status}`);
    const page = await response.json();
    await local.applyCommon(page);
    rows += (page.parts || []).length;
    if (!page.more) break;
  }
  return rows;
}

// Waits (live mode) until one of the replicas changes or `signal` ends it; true when one did.
export async function waitForChange(local, replicas, signal) {
  const waits = [];
  const stop = new AbortController();
  const both = AbortSignal.any([signal, stop.signal]);
  for (const listed of replicas) {
    if (listed.kind === "common" || !listed.available) continue;
    const held = await local.get("replicas", listed.name);
    if (!held?.epoch) continue;
    const query = new URLSearchParams({ since: String(held.since), epoch: held.epoch, limit: "500", wait: "25" });
    waits.push(call(`/v1/replicas/${encodeURIComponent(listed.name)}/changes?${query}`, { signal: both, wait: 25 })
      .then(async (response) => {
        // Refused now (the person's access changed during the wait): a whole sync says what they have.
        if (response.status === 403 || response.status === 404) return true;
        if (!response.ok) throw new Offline(`${response.status}`);
        const page = await response.json();
        if (page.tasks.length + page.members.length + page.locations.length + page.deleted.length + (page.refused || []).length === 0
          && page.up_to === held.since && !page.refetch) return false;
        return true;
      }));
  }
  if (!waits.length) {
    // Nothing to wait on yet (no replica written for this worker): look again in 25 s, not at once.
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 25000);
      signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
    });
    return false;
  }
  try {
    return await Promise.any(waits);
  } catch (error) {
    throw error.errors?.find((e) => e instanceof SignedOut) ?? error.errors?.[0] ?? error;
  } finally {
    stop.abort();
  }
}

// One sync at a time for a person, between the page and the service worker (Web Locks; a page
// served without HTTPS has none and has no service worker either).
export function exclusively(person, body) {
  return navigator.locks ? navigator.locks.request(`teamwork-sync-${person}`, body) : body();
}

export { open, wipe, forgetOthers };
