-- A task's reference (issue 67): the customer's or the office's number for the job (a work order, a
-- purchase order), set by a manager by name (teamwork-manager task create|update --set reference=…, the
-- board, an import's `reference` column) and shown to the worker, who quotes it on the paperwork. One
-- line of at most 100 bytes; NULL when none. It travels to the replicas and devices as TaskSchema declares.
ALTER TABLE tasks ADD COLUMN reference text
    CHECK (reference IS NULL OR (octet_length(reference) BETWEEN 1 AND 100 AND reference !~ '[[:cntrl:]]'));
