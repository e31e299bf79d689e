// Notifications on the phone (docs/phone.md, "Notifications"): offered after the first sync with
// what they are for (never asked for on first open), turned on by a tap (the browser asks then),
// kept with the service for this phone's sign-in, turned off by a tap, gone with a sign-out. A
// push says which task and what happened; the service worker shows it from the phone's own copy.

import { pushKey, keepPushSubscription, endPushSubscription } from "./sync.js";
import { text } from "./words.js";

const asked = "teamwork.notifications";

// What this browser can do: "unsupported", "blocked", "on", "off" (offered) or "declined" ("Not now").
export async function notificationState() {
  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) return "unsupported";
  if (Notification.permission === "denied") return "blocked";
  const registration = await navigator.serviceWorker.getRegistration("/app/");
  const subscription = registration ? await registration.pushManager.getSubscription().catch(() => null) : null;
  if (Notification.permission === "granted" && subscription) return "on";
  return localStorage.getItem(asked) === "later" ? "declined" : "off";
}

// Asks the browser (a tap's moment), subscribes with the service's key and keeps the subscription
// with the service. Throws with the browser's reason when it cannot.
export async function turnOn() {
  localStorage.removeItem(asked);
  const permission = await Notification.requestPermission();
  if (permission !== "granted") throw new Error(text("notifyBlocked"));
  const registration = await navigator.serviceWorker.ready;
  let subscription = await registration.pushManager.getSubscription();
  if (!subscription) {
    // A browser whose push service cannot be reached may never answer: 15 s, then the worker is told.
    const key = await pushKey();
    subscription = await Promise.race([
      registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }),
      new Promise((_, reject) => setTimeout(() => reject(new Error(text("notifyNoService"))), 15000)),
    ]);
  }
  await keepPushSubscription(subscription.toJSON());
}

export async function turnOff() {
  const registration = await navigator.serviceWorker.getRegistration("/app/");
  const subscription = registration ? await registration.pushManager.getSubscription() : null;
  await endPushSubscription();
  if (subscription) await subscription.unsubscribe();
}

export function later() { localStorage.setItem(asked, "later"); }

// Once per start: the subscription the browser holds is the one the service keeps (a browser may
// renew it; a phone paired again has a new sign-in to keep it with).
let kept = false;
export async function keepCurrent() {
  if (kept || (await notificationState()) !== "on") return;
  const registration = await navigator.serviceWorker.getRegistration("/app/");
  const subscription = await registration.pushManager.getSubscription();
  await keepPushSubscription(subscription.toJSON());
  kept = true;
}

// A sign-out: the service ended the subscription with the token; the browser's goes too.
export async function forget() {
  kept = false;
  localStorage.removeItem(asked);
  if (!("serviceWorker" in navigator)) return;
  const registration = await navigator.serviceWorker.getRegistration("/app/");
  const subscription = registration && registration.pushManager ? await registration.pushManager.getSubscription().catch(() => null) : null;
  if (subscription) await subscription.unsubscribe().catch(() => {});
}
