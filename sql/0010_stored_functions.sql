-- Stored functions now live one per file in sql/functions/ and are applied by
-- checksum after the numbered migrations (Migrator): this table records which
-- text of each the database holds, so a fix to a function is made once, in
-- its file, and reaches every database at the next `db migrate`.
CREATE TABLE schema_functions (
    name       text PRIMARY KEY,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT ON schema_functions TO teamwork_manager, teamwork_service;
