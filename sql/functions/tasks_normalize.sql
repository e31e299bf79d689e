-- Keeps the derived fields of a task consistent, whoever writes it:
-- open <-> assigned follows the assignee, updated_at and version move on every change.
CREATE OR REPLACE FUNCTION tasks_normalize() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'open' AND NEW.assignee_id IS NOT NULL THEN
        NEW.status := 'assigned';
    ELSIF NEW.status = 'assigned' AND NEW.assignee_id IS NULL THEN
        NEW.status := 'open';
    END IF;
    IF TG_OP = 'UPDATE' THEN
        IF NEW IS NOT DISTINCT FROM OLD THEN
            RETURN NEW;
        END IF;
        NEW.updated_at := now();
        NEW.version := OLD.version + 1;
    END IF;
    RETURN NEW;
END
$$;
