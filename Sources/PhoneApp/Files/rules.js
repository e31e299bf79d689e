// The rules and the effect of a worker's change, as the phone applies them before it
// queues one: a port of SyncProtocol's WorkerChange+Rules.swift and TaskFacts.swift (the
// CLI device and the sync endpoint) and Checklist.swift. The same table of cases that holds
// those and the master's PL/pgSQL (Tests/Contract/field-changes.json) is run against this
// file in a real browser (Tests/EndToEndTests/PhoneAppTests.swift), so a rule cannot differ
// in one place.
//
// A task here is what the rules need: {status, assignee, startedAt, completedAt, completedBy,
// completionNote, requiredSkills, checklist: {items}|null, answers: {key: {value, by, at}}}.

export const limits = {
  noteBytes: 10000, idBytes: 100, signerBytes: 200, textBytes: 2000,
  attachmentBytes: 2 ** 30, earliestMadeAt: Date.UTC(2000, 0, 1), aheadMs: 86400000,
};
const attachmentTypes = new Set(["image/jpeg", "image/png", "image/heic", "application/pdf"]);
const blanks = new Set([" ", "\t", "\n", "\r", "\u000B", "\u000C", "\u0085", "\u00A0", "\u2028", "\u2029"]);
const utf8 = (text) => new TextEncoder().encode(text).length;
const numberPattern = /^-?[0-9]{1,12}(\.[0-9]{1,6})?$/;

function unsafe(codePoint) {
  if (codePoint === 0x0A || codePoint === 0x09) return false;
  return codePoint <= 0x1F || (codePoint >= 0x7F && codePoint <= 0x9F)
    || (codePoint >= 0x202A && codePoint <= 0x202E) || (codePoint >= 0x2066 && codePoint <= 0x2069);
}
const chars = (text) => Array.from(text);
const isBlank = (text) => chars(text).every((c) => blanks.has(c));
export const hasControl = (text) => chars(text).some((c) => unsafe(c.codePointAt(0)));
const isOneLine = (text, most) => !isBlank(text) && utf8(text) <= most
  && !chars(text).some((c) => unsafe(c.codePointAt(0)) || c === "\n" || c === "\t");
const shown = (text) => chars(text).slice(0, 40).filter((c) => !unsafe(c.codePointAt(0))).join("");

// Exact decimal comparison of two numbers in numberPattern's form: -1, 0 or 1.
function compareDecimal(a, b) {
  const parse = (text) => {
    const negative = text.startsWith("-");
    const [whole, fraction = ""] = (negative ? text.slice(1) : text).split(".");
    const digits = (whole.replace(/^0+/, "") || "0").padStart(13, "0") + fraction.padEnd(6, "0");
    return { negative: negative && /[1-9]/.test(digits), digits };
  };
  const x = parse(a), y = parse(b);
  if (x.negative !== y.negative) return x.negative ? -1 : 1;
  const order = x.digits < y.digits ? -1 : x.digits > y.digits ? 1 : 0;
  return x.negative ? -order : order;
}

// Why `value` cannot answer `item`, or null.
export function answerProblem(item, value) {
  if (utf8(value) > limits.textBytes) return `an answer has at most ${limits.textBytes} bytes`;
  switch (item.kind) {
    case "check": return value === "yes" || value === "no" ? null : "answer yes or no";
    case "text":
      if (isBlank(value)) return "the answer is empty";
      if (hasControl(value)) return "the answer holds control characters";
      return null;
    case "number": {
      if (!numberPattern.test(value)) return "answer a number like 48213 or -0.5 (at most 12 digits, 6 after the point)";
      const unit = item.unit != null ? ` ${item.unit}` : "";
      if (item.min != null && numberPattern.test(item.min) && compareDecimal(value, item.min) < 0) return `the least taken is ${item.min}${unit}`;
      if (item.max != null && numberPattern.test(item.max) && compareDecimal(value, item.max) > 0) return `the most taken is ${item.max}${unit}`;
      return null;
    }
    case "choice": {
      const options = item.options || [];
      return options.includes(value) ? null : `answer one of: ${options.join(", ")}`;
    }
    default: return `a ${item.kind} item is answered by attaching a file, not by a value`;
  }
}

// The keys of required items with no answer, in the checklist's order.
export function missingAnswers(task) {
  if (!task.checklist) return [];
  return task.checklist.items.filter((item) => item.required && !(task.answers || {})[item.key]).map((item) => item.key);
}

export function missingSkills(task, skills) {
  const held = new Set(skills);
  return (task.requiredSkills || []).filter((skill) => !held.has(skill)).sort();
}

// What was used (Material.swift): a quantity from 0 to 100000 with at most 3 decimals, and a
// part's code without a note, or a line's description in the note.
export const material = { mostQuantity: "100000", quantityPattern: /^[0-9]{1,6}(\.[0-9]{1,3})?$/, descriptionBytes: 200 };
const partCode = /^[A-Za-z0-9][A-Za-z0-9._\/-]{0,39}$/;

export function quantityProblem(text) {
  if (!material.quantityPattern.test(text) || compareDecimal(text, material.mostQuantity) > 0) {
    return `a quantity is a number from 0 to ${material.mostQuantity}, at most 3 decimals, like 2 or 12.5`;
  }
  return null;
}

function materialProblem(change) {
  if (change.value == null) return "a use needs a quantity (value)";
  const wrong = quantityProblem(change.value); if (wrong) return wrong;
  if (change.item != null) {
    if (!partCode.test(change.item)) return `a part's code is 1 to 40 letters, digits, '.', '_', '/' or '-' (not '${shown(change.item)}')`;
    if (change.note != null) return "a part's name comes from the catalogue: a use of a part carries no note";
  } else {
    if (change.note == null) return "a use names a part (item), or describes a line not in the catalogue (note)";
    if (!isOneLine(change.note, material.descriptionBytes)) return `a line not in the catalogue is described in one line of 1 to ${material.descriptionBytes} bytes`;
  }
  return null;
}

// Time on a task (TimeOnJob.swift): work or travel, an interval START/END of two instants in UTC to
// the second, ending no earlier than it starts, at most 24 hours long.
export const timeOnJob = { kinds: ["work", "travel"], longestMs: 86400000, recentDays: 31 };
const strictInstant = (text) => {
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$/.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) && new Date(ms).toISOString().replace(".000Z", "Z") === text ? ms : null;
};
export function timeInterval(value) {
  const parts = typeof value === "string" ? value.split("/") : [];
  if (parts.length !== 2) return null;
  const start = strictInstant(parts[0]), end = strictInstant(parts[1]);
  return start == null || end == null ? null : { start, end };
}
export const timeValue = (start, end) => {
  const instant = (ms) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
  return `${instant(start)}/${instant(end)}`;
};

function timeProblem(change, receivedAt) {
  if (!timeOnJob.kinds.includes(change.item)) return "a time entry is work or travel (item)";
  const span = timeInterval(change.value);
  if (!span) return "a time entry is a start and an end in UTC, like 2026-11-30T08:00:00Z/2026-11-30T10:30:00Z";
  if (span.end < span.start) return "a time entry ends after it starts";
  if (span.end - span.start > timeOnJob.longestMs) return "a time entry lasts at most 24 hours";
  if (span.start < limits.earliestMadeAt || span.end > receivedAt + limits.aheadMs) {
    return "a time entry is after 2000-01-01 and ends at most a day after the server's clock";
  }
  if (span.start < receivedAt - timeOnJob.recentDays * 86400000) {
    return `a time entry begins at most ${timeOnJob.recentDays} days before it is sent; a manager records older time`;
  }
  return null;
}

// Why an entry {taskID, kind, start, end} cannot be kept beside the same person's `others`, or null
// (TimeOnJob.clash): a person's entries never overlap, the one it replaces and removed ones aside.
export function timeClash(entry, others) {
  if (!(entry.end > entry.start)) return null;
  const instant = (ms) => new Date(ms).toISOString().replace(".000Z", "Z");
  const clash = others
    .filter((o) => o.end > o.start && !(o.taskID === entry.taskID && o.kind === entry.kind))
    .filter((o) => o.start < entry.end && o.end > entry.start)
    .sort((a, b) => a.start - b.start || a.taskID - b.taskID || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0))[0];
  return clash ? `it overlaps ${clash.kind} on task ${clash.taskID} from ${instant(clash.start)} to ${instant(clash.end)}` : null;
}

function attachmentProblem(change, task, taskID) {
  const { blob, size, media_type: mediaType, signer, item } = change;
  if (typeof blob !== "string" || !/^[0-9a-f]{64}$/.test(blob)) {
    return "an attachment names its file by the SHA-256 of its bytes: 64 lowercase hex digits";
  }
  if (!Number.isInteger(size) || size < 1 || size > limits.attachmentBytes) return `an attachment is 1 byte to ${limits.attachmentBytes} bytes`;
  if (!attachmentTypes.has(mediaType)) return "an attachment is a JPEG, PNG, HEIC or PDF file";
  if (signer != null && !isOneLine(signer, limits.signerBytes)) return `a signer's name is one line of 1 to ${limits.signerBytes} bytes`;
  if (signer != null && !["image/png", "image/jpeg"].includes(mediaType)) return "a signature is a PNG or JPEG image";
  if (item != null) {
    const spec = task.checklist && task.checklist.items.find((i) => i.key === item);
    if (!spec) return `task ${taskID} has no checklist item '${shown(item)}'`;
    if (spec.kind === "photo" && signer == null) { /* fine */ }
    else if (spec.kind === "signature" && signer != null) { /* fine */ }
    else if (spec.kind === "signature") return `${item} is a signature: sign it (teamwork-worker sign ${taskID} --signer NAME FILE --item ${item})`;
    else if (spec.kind === "photo") return `${item} takes a photo, not a signature`;
    else return `${item} is answered by a value, not a file`;
    if (mediaType === "application/pdf" && spec.kind === "photo") return `${item} takes a photo (JPEG, PNG or HEIC)`;
  }
  return null;
}

// Why `change` cannot be made by `worker` ({id, skills|null}), or null. `task` is null when the
// replica does not hold it; `inTeam` tells a team's replica from a person's.
export function rejection(change, worker, task, inTeam, receivedAt) {
  const me = worker.id;
  if (typeof change.id !== "string" || utf8(change.id) < 1 || utf8(change.id) > limits.idBytes
    || chars(change.id).some((c) => { const v = c.codePointAt(0); return v < 0x20 || (v >= 0x7F && v <= 0x9F); })) {
    return `a change id has 1 to ${limits.idBytes} bytes and no control characters`;
  }
  const madeAt = Date.parse(change.made_at);
  if (!(madeAt >= limits.earliestMadeAt && madeAt <= receivedAt + limits.aheadMs)) {
    return "made_at must be after 2000-01-01 and at most a day after the server's clock";
  }
  const op = change.operation;
  if (change.note != null && utf8(change.note) > limits.noteBytes) return `a note has at most ${limits.noteBytes} bytes (UTF-8)`;
  if (!["answer", "use", "time"].includes(op) && change.value != null) return "only an answer, a use or a time entry carries a value";
  if (!["answer", "attach", "use", "time"].includes(op) && change.item != null) {
    return "only an answer, an attachment, a use or a time entry names an item";
  }
  if (op !== "attach" && (change.blob != null || change.size != null || change.media_type != null || change.signer != null)) {
    return "only an attachment carries a blob, a size, a media type or a signer";
  }
  if (change.latitude != null || change.longitude != null) return "only a check-in carries a position";
  const taskID = change.task_id;
  if (taskID == null) return `${op} needs a task_id`;
  if (!task) return `task ${taskID} is not in this replica`;
  if (task.status === "cancelled") return `task ${taskID} was cancelled`;
  const yours = () => {
    if (task.assignee == null) return `claim task ${taskID} before working on it`;
    if (task.assignee !== me) return `task ${taskID} is assigned to someone else`;
    return null;
  };
  switch (op) {
    case "claim": {
      if (!inTeam) return "only a team's free-floating task can be claimed";
      if (task.assignee === me) return `task ${taskID} is already yours`;
      if (task.assignee != null) return `task ${taskID} is assigned to someone else`;
      if (task.status === "completed") return `task ${taskID} is already completed`;
      if (worker.skills) {
        const missing = missingSkills(task, worker.skills);
        if (missing.length) return `task ${taskID} needs ${missing.join(", ")}, which you do not have`;
      }
      return null;
    }
    case "start": case "complete": {
      const problem = yours(); if (problem) return problem;
      if (task.status === "completed") return `task ${taskID} is already completed`;
      if (op === "start" && task.status === "in_progress") return `task ${taskID} is already started`;
      if (op === "complete") {
        const missing = missingAnswers(task);
        if (missing.length) return `task ${taskID} needs answers to ${missing.join(", ")} before it is completed`;
      }
      return null;
    }
    case "answer": {
      if (change.item == null || change.value == null) return "an answer needs an item and a value";
      const problem = yours(); if (problem) return problem;
      if (task.status === "completed") return `task ${taskID} is completed; reopen it to change an answer`;
      const spec = task.checklist && task.checklist.items.find((i) => i.key === change.item);
      if (!spec) return `task ${taskID} has no checklist item '${shown(change.item)}'`;
      const wrong = answerProblem(spec, change.value);
      return wrong ? `${change.item}: ${wrong}` : null;
    }
    case "use": {
      const wrong = materialProblem(change); if (wrong) return wrong;
      const problem = yours(); if (problem) return problem;
      if (task.status === "completed") return `task ${taskID} is completed; reopen it to change what was used`;
      return null;
    }
    case "time": {
      // Time is recorded by who worked it: the task's assignee or its completer.
      if (change.note != null) return "a time entry carries no note";
      const problem = timeProblem(change, receivedAt); if (problem) return problem;
      if (task.assignee !== me && task.completedBy !== me) {
        return `you record time only on a task you hold or held (task ${taskID} is ${task.assignee == null ? "nobody's" : "someone else's"})`;
      }
      return null;
    }
    case "attach": {
      const problem = yours(); if (problem) return problem;
      if (task.status === "completed") return `task ${taskID} is completed; reopen it to add a file`;
      return attachmentProblem(change, task, taskID);
    }
    case "reopen":
      if (task.status !== "completed") return `task ${taskID} is not completed`;
      if (task.completedBy !== me) return `only the worker who completed task ${taskID} can reopen it`;
      return null;
    default: return `unknown operation '${shown(String(op))}'`;
  }
}

// The task after `change`, made by `me` at `at` (milliseconds): what the phone shows until the
// master's copy comes back.
export function effect(change, task, me, at) {
  const after = { ...task, answers: { ...(task.answers || {}) } };
  switch (change.operation) {
    case "start":
      after.status = "in_progress";
      after.startedAt = task.startedAt ?? at;
      break;
    case "complete":
      after.status = "completed";
      after.startedAt = task.startedAt ?? at;
      after.completedAt = at;
      after.completedBy = me;
      after.completionNote = change.note ?? "";
      break;
    case "reopen":
      after.status = task.startedAt != null ? "in_progress" : task.assignee == null ? "open" : "assigned";
      after.completedAt = null;
      after.completedBy = null;
      after.completionNote = null;
      break;
    case "claim":
      after.assignee = me;
      if (task.status === "open") after.status = "assigned";
      break;
    case "answer":
      if (change.item != null && change.value != null) after.answers[change.item] = { value: change.value, by: me, at };
      break;
    case "attach":
      if (change.item != null && change.blob != null) after.answers[change.item] = { value: change.blob, by: me, at };
      break;
  }
  return after;
}

// What the rules need of a task as a replica's page carries it (snake_case, answers as a list).
export function facts(task) {
  return {
    status: task.status, assignee: task.assignee_id ?? null, startedAt: task.started_at ?? null,
    completedAt: task.completed_at ?? null, completedBy: task.completed_by ?? null, completionNote: task.completion_note ?? null,
    requiredSkills: task.required_skills || [], checklist: task.checklist || null,
    answers: Object.fromEntries((task.answers || []).map((a) => [a.item, { value: a.value, by: a.by, at: a.at }])),
  };
}
