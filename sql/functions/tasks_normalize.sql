-- Keeps the derived fields of a task consistent, whoever writes it:
-- open <-> assigned follows the assignee, updated_at and version move on every change,
-- and an ETA (planned_start) ends with the plan it came from: it belongs to one plan of
-- one person's day, so a change of assignee, window or due time, a cancellation or a
-- reopening that the day planner did not make itself (its transaction is marked
-- 'planned') clears it, on the master and so on every replica and device.
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
        IF NEW.planned_start IS NOT NULL AND NEW.planned_start IS NOT DISTINCT FROM OLD.planned_start
           AND (NEW.assignee_id IS DISTINCT FROM OLD.assignee_id
                OR NEW.window_start IS DISTINCT FROM OLD.window_start OR NEW.window_end IS DISTINCT FROM OLD.window_end
                OR NEW.due_at IS DISTINCT FROM OLD.due_at
                OR (NEW.status = 'cancelled' AND OLD.status <> 'cancelled')
                OR (OLD.status IN ('completed', 'cancelled') AND NEW.status IN ('open', 'assigned'))) THEN
            IF public.teamwork_marked('planned') IS NULL THEN
                NEW.planned_start := NULL;
            END IF;
        END IF;
    END IF;
    RETURN NEW;
END
$$;
