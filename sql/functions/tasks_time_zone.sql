-- A task's time zone: its location's, else its team's, else its assignee's
-- default team's, else UTC. Kept in tasks.time_zone whoever writes the task,
-- and brought up to date when a team's or a site's zone changes.
CREATE OR REPLACE FUNCTION teamwork_task_time_zone(p_location bigint, p_team bigint, p_assignee bigint) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT coalesce((SELECT l.time_zone FROM public.locations l WHERE l.id = p_location),
                    (SELECT t.time_zone FROM public.teams t WHERE t.id = p_team),
                    (SELECT t.time_zone FROM public.people p JOIN public.teams t ON t.id = p.default_team_id
                      WHERE p.id = p_assignee),
                    'UTC')
$$;

CREATE OR REPLACE FUNCTION tasks_time_zone() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    NEW.time_zone := public.teamwork_task_time_zone(NEW.location_id, NEW.team_id, NEW.assignee_id);
    RETURN NEW;
END
$$;

-- A team's or a site's zone changed: its tasks whose zone it is follow (each
-- an ordinary task update, so replicas and history see it); the others (a site
-- of their own) are not touched.
CREATE OR REPLACE FUNCTION teamwork_zone_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF TG_TABLE_NAME = 'teams' THEN
        UPDATE public.tasks k SET time_zone = k.time_zone
         WHERE (k.team_id = NEW.id OR (k.team_id IS NULL AND k.assignee_id IN
                (SELECT p.id FROM public.people p WHERE p.default_team_id = NEW.id)))
           AND k.time_zone IS DISTINCT FROM public.teamwork_task_time_zone(k.location_id, k.team_id, k.assignee_id);
    ELSE
        UPDATE public.tasks k SET time_zone = k.time_zone
         WHERE k.location_id = NEW.id
           AND k.time_zone IS DISTINCT FROM public.teamwork_task_time_zone(k.location_id, k.team_id, k.assignee_id);
    END IF;
    RETURN NULL;
END
$$;

-- A zone PostgreSQL does not know is refused where it is set (teams,
-- locations), not found later by every query that reads a task's day.
CREATE OR REPLACE FUNCTION teamwork_check_time_zone() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NEW.time_zone IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names z WHERE z.name = NEW.time_zone) THEN
        RAISE EXCEPTION 'time zone % is not known to the database', NEW.time_zone USING ERRCODE = '22023';
    END IF;
    RETURN NEW;
END
$$;
