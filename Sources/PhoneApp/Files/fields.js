// A task's columns as Sources/TeamworkModel/TaskSchema.swift declares them: written by scripts/declare,
// never by hand (a test compares this file with the declaration).

// The columns the task page lists under their label, in order: nothing else on the page shows them.
// kind: integer, text, date (milliseconds, read on the task's clock) or bool.
export const shown = [
  {"key": "duration_minutes", "kind": "integer", "label": {"en": "on site", "sv": "på plats"}, "unit": "min"},
  {"key": "reference", "kind": "text", "label": {"en": "reference", "sv": "referens"}},
];

// Every key a task in a page of changes may carry.
export const keys = ["id", "title", "description", "priority", "status", "team_id", "assignee_id", "location_id", "due_at", "created_at", "updated_at", "started_at", "completed_at", "completed_by", "completion_note", "master_version", "required_skills", "window_start", "window_end", "time_zone", "plan_id", "plan_date", "checklist", "answers", "duration_minutes", "planned_start", "customer_first_name", "visit", "reference", "row_version"];
