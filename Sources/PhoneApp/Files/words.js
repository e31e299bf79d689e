// The app's words in English and Swedish, by the phone's language; times on the task's clock.
const words = {
  en: {
    title: "My day", free: "Free work to claim", nothing: "Nothing planned for you.", noFree: "No free work in your team.",
    offline: "Not connected: changes wait on this phone", online: "Online", syncing: "Syncing…", waiting: (n) => `${n} change${n === 1 ? "" : "s"} waiting to be sent`,
    syncNow: "Sync now", signOut: "Sign out", back: "Back to my day", start: "Start", complete: "Complete", note: "Note (what was done)",
    claim: "Claim", when: "When", due: "Due", window: "Window", eta: "Expected", priority: "Priority", skills: "Needs", address: "Address",
    openMap: "Open in maps", checklist: "Checklist", save: "Save", yes: "Yes", no: "No", required: "required",
    answered: "answered", status: { open: "Open", assigned: "Assigned", in_progress: "Started", completed: "Completed", cancelled: "Cancelled" },
    history: "What happened", startedAt: (t) => `Started ${t}`, completedAt: (t) => `Completed ${t}`, queuedNote: "waiting to be sent",
    notices: "Messages", dismiss: "Dismiss", notPaired: "This phone is not paired. Ask your dispatcher for a pairing link.",
    signedOut: "Signed out. What this phone kept for you is gone. To use the app again, ask your dispatcher for a pairing link.", range: (min, max, unit) => `${min ?? "…"} to ${max ?? "…"}${unit ? ` ${unit}` : ""}`,
    photo: "📷 Take a photo", signature: "Sign here", signer: "Signer's name", clear: "Clear", attached: "file kept, sent when online",
    refused: (title, reason, outcome) => `“${title}”: your change was not taken: ${unnumbered(reason)}.${outcome ? ` ${outcome}.` : ""}`,
    decided: (title, reason, decision) => `“${title}”: your change was set aside (${unnumbered(reason)}); your dispatcher decided: ${decision}`,
    accepted: (title) => `“${title}”: your dispatcher accepted your completion; it counts as done by you.`,
    takenAway: (title) => `“${title}” is no longer yours.`,
    moved: (title, day) => `“${title}” moved to ${day}.`,
    wentTo: (name) => `It went to ${name}`, wasCancelled: "It was cancelled", doneBy: (name) => `${name} completed it`,
    notOnList: "It is no longer on your list", aTask: "a task",
    noLongerYours: "You are no longer in that team: the change was not sent.",
    teamGone: (title) => `You are no longer in ${title}: its work has left this phone.`,
    lastSync: (t) => `Last synced ${t}`, description: "Description",
    signOutOffline: "Signing out needs the network: nothing was removed. Try again when online.",
    signOutLoses: (n) => `${n} change${n === 1 ? " has" : "s have"} not reached the office yet. Signing out deletes ${n === 1 ? "it" : "them"} from this phone. Sign out anyway?`,
    customer: "Customer",
    visits: { none: "visit booked, not confirmed yet", confirmed: "visit confirmed", move: "asked for another time", cancel: "cancelled the visit" },
    reopen: "Reopen", signFirst: "sign on the pad first", signerMissing: "write the signer's name",
    needsHTTPS: "Photos and signatures need the app over HTTPS: ask your dispatcher for an https link.",
    did: { start: "Start", complete: "Complete", reopen: "Reopen", claim: "Claim", answer: "Answer", attach: "File", use: "Used", time: "Time" },
    used: "Used on the job", usedPart: "Part", usedOther: "Something else (describe it)", usedLine: "What it was (if not a part)",
    usedQuantity: "How much (0 removes it)", usedRecord: "Record",
    time: "Time on the job", timeKind: "What", timeKinds: { work: "Work", travel: "Travel" }, timeFrom: "From", timeTo: "To",
    timeRecord: "Record time", timeNote: "Your start and completion keep your work's time; set it here (the same time twice removes it).",
    zoneTime: (city) => `(${city} time)`, phoneClock: "(this phone's clock)",
    partSearch: "Find a part (code or name)", scanPart: "📷 Scan a label", noBarcode: "No barcode found in the photo.", partsFound: (n) => `${n} part${n === 1 ? "" : "s"} match`,
    unsaved: "not saved yet", photoTaken: "the photo taken", photoAgain: "Take it again",
    signOutSure: "Sign out? This phone forgets your work, and signing in again takes a new pairing link from your dispatcher.",
    priorities: { low: "low", normal: "normal", high: "high", urgent: "urgent" },
    pushAssigned: "New work for you", pushChanged: "Your work changed", pushCancelled: (title) => `Cancelled: ${title}`,
    pushRefused: "A change of yours was not taken", pushDecided: "Your dispatcher decided", pushTaken: "No longer yours", pushSeveral: (n) => `${n} updates to your work`,
    pushOpen: "Open Teamwork to see it.",
    notifyAsk: "Hear of new work with the app closed?",
    notifyWhy: "This phone can tell you when work is given to you or changes, and when a change of yours is not taken. It says which job, nothing about the customer.",
    notifyOn: "Turn on notifications", notifyLater: "Not now", notifyIsOn: "Notifications are on.", notifyOff: "Turn off notifications",
    notifyBlocked: "Notifications are blocked for this app in the browser's settings.",
    notifyFailed: (why) => `Notifications could not be turned on: ${why}`, notifyNoService: "the browser's push service did not answer",
  },
  sv: {
    title: "Min dag", free: "Lediga uppdrag", nothing: "Inget planerat för dig.", noFree: "Inga lediga uppdrag i ditt lag.",
    offline: "Inte ansluten: ändringar väntar i telefonen", online: "Online", syncing: "Synkar…", waiting: (n) => `${n} ändring${n === 1 ? "" : "ar"} väntar på att skickas`,
    syncNow: "Synka nu", signOut: "Logga ut", back: "Tillbaka till min dag", start: "Påbörja", complete: "Slutför", note: "Anteckning (vad som gjordes)",
    claim: "Ta uppdraget", when: "När", due: "Klart senast", window: "Tidsfönster", eta: "Väntas", priority: "Prioritet", skills: "Kräver", address: "Adress",
    openMap: "Öppna i kartor", checklist: "Checklista", save: "Spara", yes: "Ja", no: "Nej", required: "obligatorisk",
    answered: "besvarad", status: { open: "Öppen", assigned: "Tilldelad", in_progress: "Påbörjad", completed: "Slutförd", cancelled: "Inställd" },
    history: "Vad som hänt", startedAt: (t) => `Påbörjad ${t}`, completedAt: (t) => `Slutförd ${t}`, queuedNote: "väntar på att skickas",
    notices: "Meddelanden", dismiss: "Stäng", notPaired: "Telefonen är inte kopplad. Be arbetsledaren om en kopplingslänk.",
    signedOut: "Utloggad. Det telefonen sparat åt dig är borttaget. För att använda appen igen, be arbetsledaren om en kopplingslänk.", range: (min, max, unit) => `${min ?? "…"} till ${max ?? "…"}${unit ? ` ${unit}` : ""}`,
    photo: "📷 Ta ett foto", signature: "Skriv under här", signer: "Undertecknarens namn", clear: "Rensa", attached: "filen sparad, skickas när du är online",
    refused: (title, reason, outcome) => `”${title}”: din ändring togs inte emot: ${unnumbered(refusal(reason))}.${outcome ? ` ${outcome}.` : ""}`,
    decided: (title, reason, decision) => `”${title}”: din ändring lades åt sidan (${unnumbered(refusal(reason))}); arbetsledaren beslutade: ${decision}`,
    accepted: (title) => `”${title}”: arbetsledaren godkände att du slutförde det; det räknas som utfört av dig.`,
    takenAway: (title) => `”${title}” är inte längre ditt.`,
    moved: (title, day) => `”${title}” flyttades till ${day}.`,
    wentTo: (name) => `Det gick till ${name}`, wasCancelled: "Det ställdes in", doneBy: (name) => `${name} slutförde det`,
    notOnList: "Det finns inte längre i din lista", aTask: "ett uppdrag",
    noLongerYours: "Du är inte längre med i laget: ändringen skickades inte.",
    teamGone: (title) => `Du är inte längre med i ${title}: lagets uppdrag har tagits bort från telefonen.`,
    lastSync: (t) => `Senast synkad ${t}`, description: "Beskrivning",
    signOutOffline: "Utloggning kräver nätverk: inget togs bort. Försök igen när du är online.",
    signOutLoses: (n) => `${n} ändring${n === 1 ? " har" : "ar har"} inte nått kontoret än. Utloggning tar bort ${n === 1 ? "den" : "dem"} från telefonen. Logga ut ändå?`,
    customer: "Kund",
    visits: { none: "besöket bokat, inte bekräftat än", confirmed: "besöket bekräftat", move: "vill ha en annan tid", cancel: "har avbokat besöket" },
    reopen: "Öppna igen", signFirst: "skriv under på ytan först", signerMissing: "skriv undertecknarens namn",
    needsHTTPS: "Foton och underskrifter kräver appen över HTTPS: be arbetsledaren om en https-länk.",
    did: { start: "Påbörja", complete: "Slutför", reopen: "Öppna igen", claim: "Ta uppdraget", answer: "Svar", attach: "Fil", use: "Förbrukat", time: "Tid" },
    used: "Förbrukat material", usedPart: "Artikel", usedOther: "Något annat (beskriv det)", usedLine: "Vad det var (om inte en artikel)",
    usedQuantity: "Mängd (0 tar bort raden)", usedRecord: "Registrera",
    time: "Arbetstid", timeKind: "Vad", timeKinds: { work: "Arbete", travel: "Resa" }, timeFrom: "Från", timeTo: "Till",
    timeRecord: "Registrera tid", timeNote: "Din start och ditt slutförande ger arbetstiden; ange den här (samma tid två gånger tar bort den).",
    zoneTime: (city) => `(${city}-tid)`, phoneClock: "(telefonens klocka)",
    partSearch: "Hitta en artikel (nummer eller namn)", scanPart: "📷 Skanna en etikett", noBarcode: "Ingen streckkod i fotot.", partsFound: (n) => `${n} artikl${n === 1 ? "el" : "ar"} passar`,
    unsaved: "inte sparat än", photoTaken: "fotot som togs", photoAgain: "Ta om det",
    signOutSure: "Logga ut? Telefonen glömmer ditt arbete, och för att logga in igen behövs en ny kopplingslänk från arbetsledaren.",
    priorities: { low: "låg", normal: "normal", high: "hög", urgent: "brådskande" },
    pushAssigned: "Nytt uppdrag till dig", pushChanged: "Ditt uppdrag ändrades", pushCancelled: (title) => `Inställt: ${title}`,
    pushRefused: "En ändring av dig togs inte emot", pushDecided: "Arbetsledaren har beslutat", pushTaken: "Inte längre ditt", pushSeveral: (n) => `${n} uppdateringar av ditt arbete`,
    pushOpen: "Öppna Teamwork för att se det.",
    notifyAsk: "Få veta om nya uppdrag när appen är stängd?",
    notifyWhy: "Telefonen kan säga till när du får ett uppdrag eller det ändras, och när en ändring av dig inte togs emot. Den säger vilket uppdrag, inget om kunden.",
    notifyOn: "Slå på aviseringar", notifyLater: "Inte nu", notifyIsOn: "Aviseringar är på.", notifyOff: "Stäng av aviseringar",
    notifyBlocked: "Aviseringar är blockerade för appen i webbläsarens inställningar.",
    notifyFailed: (why) => `Aviseringar gick inte att slå på: ${why}`, notifyNoService: "webbläsarens pushtjänst svarade inte",
  },
};

export const language = (navigator.language || "en").toLowerCase().startsWith("sv") ? "sv" : "en";

export function text(key, ...args) {
  const value = words[language][key];
  return typeof value === "function" ? value(...args) : value;
}

// A time (milliseconds) on the task's own clock (its site's zone), like "Tue 09:30".
export function time(ms, zone) {
  if (ms == null) return "";
  const options = { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", hour12: false };
  try {
    return new Intl.DateTimeFormat(language === "sv" ? "sv-SE" : "en-GB", { ...options, timeZone: zone || "UTC" }).format(new Date(ms));
  } catch {
    return new Intl.DateTimeFormat(language === "sv" ? "sv-SE" : "en-GB", { ...options, timeZone: "UTC" }).format(new Date(ms));
  }
}

// A plan's day ("2026-12-07") in words.
export function day(date) {
  const [y, m, d] = date.split("-").map(Number);
  return new Intl.DateTimeFormat(language === "sv" ? "sv-SE" : "en-GB", { weekday: "long", day: "numeric", month: "long", timeZone: "UTC" })
    .format(new Date(Date.UTC(y, m - 1, d)));
}

// The rules' refusals, worded in English by the phone's rules, the service and the master alike
// (one wording, shared with the CLI): in Swedish, the common ones are said in Swedish; any other
// stays as it came.
const swedishRefusals = [
  [/^task (\d+) needs (.+), which you do not have$/, "uppdrag $1 kräver $2, som du inte har"],
  [/^task (\d+) needs answers to (.+) before it is completed$/, "uppdrag $1 behöver svar på $2 innan det kan slutföras"],
  [/^task (\d+) is assigned to someone else$/, "uppdrag $1 är tilldelat någon annan"],
  [/^task (\d+) is already yours$/, "uppdrag $1 är redan ditt"],
  [/^task (\d+) is already completed$/, "uppdrag $1 är redan slutfört"],
  [/^task (\d+) is already started$/, "uppdrag $1 är redan påbörjat"],
  [/^task (\d+) was cancelled$/, "uppdrag $1 är inställt"],
  [/^task (\d+) is not in this replica$/, "uppdrag $1 finns inte här längre"],
  [/^claim task (\d+) before working on it$/, "ta uppdrag $1 innan du arbetar med det"],
  [/^task (\d+) is completed; reopen it to change an answer$/, "uppdrag $1 är slutfört; öppna det igen för att ändra ett svar"],
  [/^task (\d+) is completed; reopen it to add a file$/, "uppdrag $1 är slutfört; öppna det igen för att lägga till en fil"],
  [/^task (\d+) is not completed$/, "uppdrag $1 är inte slutfört"],
  [/^only the worker who completed task (\d+) can reopen it$/, "bara den som slutförde uppdrag $1 kan öppna det igen"],
  [/^only a team's free-floating task can be claimed$/, "bara ett lagets lediga uppdrag kan tas"],
  [/^(.+): answer yes or no$/, "$1: svara ja eller nej"],
  [/^(.+): the answer is empty$/, "$1: svaret är tomt"],
  [/^(.+): the least taken is (.+)$/, "$1: minst $2"],
  [/^(.+): the most taken is (.+)$/, "$1: högst $2"],
  [/^(.+): answer a number like .+$/, "$1: svara med ett tal, t.ex. 48213 eller -0,5 (högst 12 siffror, 6 decimaler)"],
  [/^(.+): answer one of: (.+)$/, "$1: svara med ett av: $2"],
  [/^a note has at most (\d+) bytes \(UTF-8\)$/, "en anteckning har högst $1 byte"],
  [/^you no longer have (.+)$/, "du har inte längre $1"],
];

// A reason about the task a notice names already, without its number (the phone shows none).
function unnumbered(reason) {
  return typeof reason === "string" ? reason.replace(/\btask \d+\b/g, "it").replace(/\buppdrag \d+\b/g, "det") : reason;
}

// A refusal's words in the phone's language.
export function refusal(reason) {
  if (language !== "sv" || typeof reason !== "string") return reason;
  for (const [pattern, swedish] of swedishRefusals) {
    if (pattern.test(reason)) return reason.replace(pattern, swedish);
  }
  return reason;
}
