-- Attachments: the photos, PDFs and signatures a worker adds to a task, as
-- proof of work. The file itself is a blob the sync endpoint keeps (named by
-- its SHA-256, docs/protocol.md, "Blobs"); the record arrives as a worker
-- change (operation 'attach', only once its blob is whole on the server) and
-- is taken in by teamwork_apply_field_changes_in_replica exactly once: one row
-- per (person, change id). With an item, it answers that photo or signature
-- item of the task's checklist (the answer's value is the blob's SHA-256).
CREATE TABLE attachments (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id     bigint REFERENCES tasks (id) ON DELETE SET NULL,
    person_id   bigint NOT NULL,
    change_id   text NOT NULL,
    item        text,
    sha256      text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size        bigint NOT NULL CHECK (size > 0),
    media_type  text NOT NULL CHECK (media_type IN ('image/jpeg', 'image/png', 'image/heic', 'application/pdf')),
    signer      text CHECK (octet_length(signer) BETWEEN 1 AND 200),
    captured_at timestamptz NOT NULL,
    received_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (person_id, change_id)
);
CREATE INDEX attachments_task_idx ON attachments (task_id);
CREATE INDEX attachments_sha256_idx ON attachments (sha256);

ALTER TYPE teamwork_worker_change ADD ATTRIBUTE blob text, ADD ATTRIBUTE size bigint, ADD ATTRIBUTE media_type text,
    ADD ATTRIBUTE signer text;

ALTER TABLE field_changes DROP CONSTRAINT field_changes_operation_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_operation_check
    CHECK (operation IN ('start', 'complete', 'reopen', 'claim', 'checkin', 'answer', 'attach'));
ALTER TABLE field_changes DROP CONSTRAINT field_changes_conflict_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_conflict_check
    CHECK (conflict IN ('rejected', 'deleted', 'cancelled', 'moved', 'reassigned', 'already_completed',
                        'not_completed', 'claimed_by_other', 'not_a_member', 'invalid', 'missing_skills',
                        'invalid_answer', 'missing_answers', 'invalid_attachment'));

GRANT SELECT ON attachments TO teamwork_manager, teamwork_service;
