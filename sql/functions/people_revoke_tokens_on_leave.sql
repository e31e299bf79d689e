-- A person who leaves (people.deactivated_at set) signs in nowhere: every token
-- of theirs is revoked in the same statement, whoever deactivates them (the
-- CLI, the board, an operator's psql). Issuing a token locks the person
-- (teamwork_issue_token), so no token issued meanwhile survives this. Their phone
-- pairing links not yet used go too (a link must not come back to life if they
-- are reactivated within its hour).
CREATE OR REPLACE FUNCTION people_revoke_tokens_on_leave() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE public.access_tokens SET revoked_at = now() WHERE person_id = NEW.id AND revoked_at IS NULL;
    DELETE FROM public.device_pairings WHERE person_id = NEW.id AND used_at IS NULL;
    RETURN NULL;
END
$$;
