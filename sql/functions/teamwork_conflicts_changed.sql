-- Wakes the live boards when a conflict is recorded or decided (migration 0024):
-- on an insert only if one of the new rows is a conflict. A constant payload:
-- PostgreSQL folds a transaction's notifications into one.
CREATE OR REPLACE FUNCTION teamwork_conflicts_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    -- Two steps: one expression naming `added` is planned whole, and an UPDATE has no such table.
    IF TG_OP = 'UPDATE' THEN
        PERFORM pg_notify('teamwork_feed', '');
    ELSIF EXISTS (SELECT 1 FROM added WHERE conflict IS NOT NULL) THEN
        PERFORM pg_notify('teamwork_feed', '');
    END IF;
    RETURN NULL;
END
$$;
