// The work on the job, on a task's page (docs/phone.md): its checklist (answers, photos, signatures),
// what was used, and the time it took. Each change is checked by the field-change contract's rules
// (rules.js) and queued by the app (setUp gives its state, its render and its act).

import * as rules from "./rules.js";
import { el } from "./dom.js";
import { text, time, refusal } from "./words.js";

let app = null;

// The app's state, its render() and act(view, item, change), and the skills a worker has in a replica.
export function setUp(given) {
  app = given;
}

// What was used on the job: the lines this phone recorded, and (while the task is the worker's
// and not completed) a form for a part of the catalogue or a line of their own. The rules of the
// field-change contract check it before it is queued; the phone's catalogue refuses an unknown
// part, or a retired one on a new line.
export function materials(view, item, editable) {
  const id = item.task.id;
  const lines = view.used.filter((u) => u.taskID === id);
  if (!editable && !lines.length) return null;
  const byCode = new Map(view.parts.map((p) => [p.code.toLowerCase(), p]));
  const shown = lines.map((u) => {
    const part = u.part != null ? byCode.get(u.part.toLowerCase()) : null;
    const what = part ? `${part.code} ${part.name}` : u.part ?? `“${u.description}”`;
    return el("li", { "data-used": u.part ?? u.description }, `${what}: ${u.quantity}${part ? ` ${part.unit}` : ""}`);
  });
  if (!editable) return el("section", { class: "materials", "aria-labelledby": "used-title" }, el("h2", { id: "used-title" }, text("used")), el("ul", {}, shown));
  // Retired parts are not offered, but one already on a line of this task can still be corrected or removed.
  const held = new Set(lines.filter((u) => u.part != null).map((u) => u.part.toLowerCase()));
  const offered = view.parts.filter((p) => !p.retired || held.has(p.code.toLowerCase()));
  const part = el("select", { id: "used-part" }, el("option", { value: "" }, text("usedOther")),
    offered.map((p) => el("option", { value: p.code }, `${p.code} · ${p.name} (${p.unit})`)));
  // A part found by its code or a word of its name, typed: the list keeps only what matches, and
  // one match is chosen.
  const search = el("input", { id: "used-search", type: "search", autocomplete: "off", maxlength: 60, oninput: () => {
    const words = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const matching = [];
    for (const option of part.options) {
      if (!option.value) continue;
      option.hidden = !words.every((w) => option.textContent.toLowerCase().includes(w));
      if (!option.hidden) matching.push(option);
    }
    if (matching.length === 1) part.value = matching[0].value;
    else if (part.selectedOptions[0]?.hidden) part.value = "";
    found.textContent = words.length ? text("partsFound", matching.length) : "";
  } });
  const found = el("span", { class: "hint", id: "used-found", role: "status" });
  // Where the browser reads barcodes (BarcodeDetector: Chrome on Android), a photo of the part's
  // label finds it: its code goes in the search.
  const scan = "BarcodeDetector" in window
    ? el("input", { type: "file", id: "used-scan", class: "camera", accept: "image/*", capture: "environment", onchange: async () => {
      try {
        const codes = await new BarcodeDetector().detect(await createImageBitmap(scan.files[0]));
        search.value = codes.length ? codes[0].rawValue : "";
        search.dispatchEvent(new Event("input"));
        if (!codes.length) found.textContent = text("noBarcode");
      } catch (error) {
        found.textContent = text("noBarcode");
      }
    } })
    : null;
  const line = el("input", { id: "used-line", maxlength: 200, autocomplete: "off" });
  const quantity = el("input", { id: "used-quantity", inputmode: "decimal", autocomplete: "off", required: true });
  return el("section", { class: "materials", "aria-labelledby": "used-title" },
    el("h2", { id: "used-title" }, text("used")),
    lines.length ? el("ul", {}, shown) : null,
    el("form", { id: "used", onsubmit: async (event) => {
      event.preventDefault();
      // A decimal comma (a Swedish phone's keypad) is a point.
      const code = part.value, value = quantity.value.trim().replace(",", ".");
      const change = code ? { operation: "use", item: code, value } : { operation: "use", note: line.value, value };
      const wrong = code ? catalogueProblem(view, code) : null;
      if (wrong) { app.state.problem = refusal(wrong); await app.render(); return; }
      await app.act(view, item, change);
    } },
      offered.length > 8 ? [el("label", { for: "used-search" }, text("partSearch")), search,
        scan ? [" ", scan, el("label", { for: "used-scan", class: "button camera-button" }, text("scanPart"))] : null, found] : null,
      el("label", { for: "used-part" }, text("usedPart")), part,
      el("label", { for: "used-line" }, text("usedLine")), line,
      el("label", { for: "used-quantity" }, text("usedQuantity")), quantity,
      el("button", { type: "submit" }, text("usedRecord"))));
}

// Time on the job: the entries this phone recorded on the task, and a form for work or travel from
// one time to another today on the task's clock. Whoever holds or held the task records their own,
// before or after it is completed, never overlapping their other entries; the rules of the field-change contract check it before it is queued.
export function timeOnJob(view, item) {
  const t = item.task, zone = t.time_zone;
  if (item.facts.status === "cancelled") return null;
  const entries = view.times.filter((e) => e.taskID === t.id);
  const clock = (ms) => time(ms, zone).split(" ").pop();
  const hours = (ms) => `${Math.floor(ms / 3600000)}:${String(Math.floor(ms / 60000) % 60).padStart(2, "0")}`;
  const kind = el("select", { id: "time-kind" }, ["work", "travel"].map((k) => el("option", { value: k }, text("timeKinds")[k])));
  const from = el("input", { id: "time-from", type: "time", required: true });
  const to = el("input", { id: "time-to", type: "time", required: true });
  return el("section", { class: "time", "aria-labelledby": "time-title" },
    el("h2", { id: "time-title" }, text("time")),
    entries.length ? el("ul", {}, entries.map((e) => el("li", { "data-time": e.kind },
      `${text("timeKinds")[e.kind] ?? e.kind}: ${clock(e.start)}–${clock(e.end)} (${hours(e.end - e.start)})`))) : null,
    el("p", { class: "hint" }, text("timeNote")),
    el("form", { id: "time", onsubmit: async (event) => {
      event.preventDefault();
      const [start, end] = [from.value, to.value].map((hhmm) => today(zone, hhmm));
      if (start == null || end == null) { app.state.problem = refusal(text("timeFrom") + "/" + text("timeTo")); await app.render(); return; }
      await app.act(view, item, { operation: "time", item: kind.value, value: rules.timeValue(start, end) });
    } },
      el("label", { for: "time-kind" }, text("timeKind")), kind,
      el("label", { for: "time-from" }, text("timeFrom")), from,
      el("label", { for: "time-to" }, text("timeTo")), to,
      el("button", { type: "submit" }, text("timeRecord"))));
}

// The instant of `hhmm` (08:00) today on `zone`'s clock (the task's), or null.
function today(zone, hhmm) {
  const match = /^([01][0-9]|2[0-3]):([0-5][0-9])$/.exec(hhmm || "");
  if (!match) return null;
  let format;
  try {
    format = new Intl.DateTimeFormat("en-US", { timeZone: zone || "UTC", hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric" });
  } catch {
    format = new Intl.DateTimeFormat("en-US", { timeZone: "UTC", hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric" });
  }
  const local = (ms) => Object.fromEntries(format.formatToParts(new Date(ms)).filter((p) => p.type !== "literal").map((p) => [p.type, Number(p.value)]));
  const now = local(Date.now());
  const wanted = Date.UTC(now.year, now.month - 1, now.day, Number(match[1]), Number(match[2]));
  // The zone's offset at the guess, twice (a guess across a change of the clocks settles on the second).
  let guess = wanted;
  for (let i = 0; i < 2; i++) {
    const at = local(guess);
    guess = wanted - (Date.UTC(at.year, at.month - 1, at.day, at.hour, at.minute) - guess);
  }
  return guess;
}

// The phone's copy of the catalogue (the common data) refuses a part it does not hold; whether a
// retired part may go on a line is the master's to say (it knows every line of the task).
function catalogueProblem(view, code) {
  if (!view.parts.length) return null;
  return view.parts.some((p) => p.code.toLowerCase() === code.toLowerCase()) ? null : `no part ${code} in this phone's catalogue`;
}

export function labelOf(facts, key) {
  return facts.checklist?.items.find((i) => i.key === key)?.label ?? key;
}

export function checklist(view, item, editable) {
  const f = item.facts;
  return el("section", { class: "checklist", "aria-labelledby": "checklist-title" },
    el("h2", { id: "checklist-title" }, text("checklist")),
    f.checklist.items.map((spec) => {
      const answer = f.answers[spec.key];
      const id = `item-${spec.key}`;
      const label = el("span", { class: "label" }, spec.label, spec.required ? el("span", { class: "required" }, ` (${text("required")})`) : null);
      const file = spec.kind === "photo" || spec.kind === "signature";
      const said = file ? (view.files.has(answer?.value) ? text("attached") : text("answered")) : answer?.value;
      const done = answer ? el("span", { class: "answered", "data-answered": spec.key }, ` ✓ ${said}`) : null;
      if (!editable) return el("div", { class: "item" }, label, done);
      const save = (value) => app.act(view, item, { operation: "answer", item: spec.key, value });
      switch (spec.kind) {
        case "check":
          return el("fieldset", { class: "item", id },
            el("legend", {}, label, done),
            el("button", { type: "button", class: "yes", onclick: () => save("yes") }, text("yes")), " ",
            el("button", { type: "button", class: "no secondary", onclick: () => save("no") }, text("no")));
        case "number": case "text": case "choice": {
          const input = spec.kind === "choice"
            ? el("select", { id: `${id}-value` }, el("option", { value: "" }, "—"), (spec.options || []).map((o) => el("option", { value: o, selected: answer?.value === o }, o)))
            : spec.kind === "number"
              ? el("input", { id: `${id}-value`, inputmode: "decimal", value: answer?.value ?? "", "aria-describedby": `${id}-range` })
              : el("textarea", { id: `${id}-value`, rows: 2 }, answer?.value ?? "");
          // Saved as it is given: a choice when made, a number or text when it leaves its field (Enter too).
          const give = () => {
            if (input.value === (answer?.value ?? "") || (spec.kind === "choice" && input.value === "")) return;
            save(input.value);
          };
          input.addEventListener("change", give);
          return el("form", { class: "item", id, onsubmit: (event) => { event.preventDefault(); give(); } },
            el("label", { for: `${id}-value` }, label, done),
            spec.kind === "number" ? el("span", { class: "hint", id: `${id}-range` }, text("range", spec.min, spec.max, spec.unit)) : null,
            input);
        }
        case "photo": return photoItem(view, item, spec, id, label, done);
        case "signature": return signatureItem(view, item, spec, id, label, done);
        default: return el("div", { class: "item" }, label, done);
      }
    }));
}

async function digestOf(blob) {
  if (!crypto.subtle) throw new Error(text("needsHTTPS"));
  const bytes = await crypto.subtle.digest("SHA-256", await blob.arrayBuffer());
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// Keeps a file on the phone until it is uploaded, and queues the attachment that answers the item.
async function attach(view, item, spec, blob, signer = null) {
  let digest;
  try { digest = await digestOf(blob); } catch (error) { app.state.problem = error.message; return app.render(); }
  const change = { operation: "attach", item: spec.key, blob: digest, size: blob.size, media_type: blob.type, ...(signer ? { signer } : {}) };
  const worker = { id: app.state.person, skills: app.skillsIn(view, item.replica) };
  const probe = { id: "probe", made_at: new Date().toISOString(), task_id: item.task.id, ...change };
  const reason = rules.rejection(probe, worker, item.facts, item.replica.startsWith("team-"), Date.now());
  if (reason) { app.state.problem = refusal(reason); return app.render(); }
  await app.state.local.write(["files"], async (s) => { s.files.put({ digest, blob, mediaType: blob.type }); });
  await app.act(view, item, change);
}

// A photo from the camera, scaled on the phone (at most 1600 px on its longer side, JPEG).
async function scaled(file) {
  const bitmap = await createImageBitmap(file);
  const scale = Math.min(1, 1600 / Math.max(bitmap.width, bitmap.height));
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.round(bitmap.width * scale));
  canvas.height = Math.max(1, Math.round(bitmap.height * scale));
  canvas.getContext("2d").drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  return new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", 0.8));
}

// The camera straight away (a button, not the browser's file picker), and a thumbnail of what was
// taken while the phone keeps it.
function photoItem(view, item, spec, id, label, done) {
  const input = el("input", { type: "file", id: `${id}-file`, class: "camera", accept: "image/*", capture: "environment", onchange: async () => {
    if (input.files && input.files[0]) await attach(view, item, spec, await scaled(input.files[0]));
  } });
  const digest = item.facts.answers[spec.key]?.value;
  const kept = digest ? view.blobs.get(digest) : null;
  return el("div", { class: "item", id }, el("p", { class: "label" }, label, done),
    kept ? el("img", { class: "thumb", src: thumbnail(digest, kept), alt: `${spec.label}: ${text("photoTaken")}`, width: 120 }) : null,
    input, el("label", { for: `${id}-file`, class: "button camera-button" }, digest ? text("photoAgain") : text("photo")));
}

// One object URL per photo kept, let go when the photo leaves the phone.
export const thumbnails = new Map();
function thumbnail(digest, blob) {
  if (!thumbnails.has(digest)) thumbnails.set(digest, URL.createObjectURL(blob));
  return thumbnails.get(digest);
}

function signatureItem(view, item, spec, id, label, done) {
  const canvas = el("canvas", { id: `${id}-pad`, class: "pad", width: 340, height: 160, "aria-label": text("signature"), role: "img" });
  const signer = el("input", { id: `${id}-signer`, autocomplete: "name", maxlength: 200, required: true });
  const pen = canvas.getContext("2d");
  pen.lineWidth = 2.5;
  pen.lineCap = "round";
  let drawing = false, drawn = false;
  const at = (event) => { const r = canvas.getBoundingClientRect(); return [(event.clientX - r.left) * canvas.width / r.width, (event.clientY - r.top) * canvas.height / r.height]; };
  canvas.addEventListener("pointerdown", (event) => { drawing = true; canvas.setPointerCapture(event.pointerId); pen.beginPath(); pen.moveTo(...at(event)); });
  canvas.addEventListener("pointermove", (event) => { if (!drawing) return; pen.lineTo(...at(event)); pen.stroke(); drawn = true; });
  canvas.addEventListener("pointerup", () => { drawing = false; });
  return el("form", { class: "item", id, onsubmit: async (event) => {
    event.preventDefault();
    if (!drawn) { app.state.problem = `${spec.label}: ${text("signFirst")}`; return app.render(); }
    if (!signer.value.trim()) { app.state.problem = `${spec.label}: ${text("signerMissing")}`; return app.render(); }
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
    await attach(view, item, spec, blob, signer.value.trim());
  } },
  el("p", { class: "label" }, label, done), canvas,
  el("label", { for: `${id}-signer` }, text("signer")), signer,
  el("button", { type: "button", class: "secondary", onclick: () => { pen.clearRect(0, 0, canvas.width, canvas.height); drawn = false; } }, text("clear")), " ",
  el("button", { type: "submit" }, text("save")));
}
