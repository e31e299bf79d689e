-- A task's reference is one line a person reads as it is (issue 67, after review): besides controls, no line or
-- paragraph separator (U+2028, U+2029) and no invisible formatting character (bidirectional overrides, zero-width
-- ones), as DeclaredValues refuses first with a clear message. The ranges are written out: [[:cntrl:]] depends
-- on the cluster's locale. Checked without holding the table (NOT VALID, then VALIDATE).
ALTER TABLE tasks DROP CONSTRAINT tasks_reference_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_reference_one_line CHECK (
    reference IS NULL OR (
        octet_length(reference) BETWEEN 1 AND 100
        AND reference !~ '[\u0001-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]'
    )) NOT VALID;
ALTER TABLE tasks VALIDATE CONSTRAINT tasks_reference_one_line;
