-- Issues an access token for a person: stores the SHA-256 of `p_secret` (the
-- tool shows the secret once) and returns the token's id. The person is locked
-- first, so a deactivation in flight either comes after (and revokes this
-- token) or before (and this is refused). Besides the owner, a manager's
-- bound role (actor_roles) may issue tokens for workers and for themselves,
-- an admin's for anyone, an unbound login (which could name anyone as its
-- actor) for workers only: a token for a manager or an admin would let its
-- issuer act as that person on the board.
CREATE OR REPLACE FUNCTION teamwork_issue_token(p_person bigint, p_secret text, p_label text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_actor bigint := public.teamwork_actor_id();
    v_target public.people%ROWTYPE;
    v_actor_role text;
    v_bound boolean := false;
    v_id bigint;
BEGIN
    IF p_secret IS NULL OR p_secret !~ '^tw_[A-Za-z0-9_-]{43}$' THEN
        RAISE EXCEPTION 'a token is tw_ and 43 URL-safe characters' USING ERRCODE = 'TWS01';
    END IF;
    SELECT * INTO v_target FROM public.people WHERE id = p_person FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no person with id %', p_person USING ERRCODE = 'TWS02';
    END IF;
    IF v_target.deactivated_at IS NOT NULL THEN
        RAISE EXCEPTION 'person % is deactivated: reactivate them before issuing a token', p_person USING ERRCODE = 'TWS01';
    END IF;
    IF NOT public.teamwork_trusted_session() THEN
        v_bound := EXISTS (SELECT 1 FROM public.actor_roles a WHERE a.role_name = session_user);
        IF v_bound THEN
            SELECT p.role INTO v_actor_role FROM public.people p WHERE p.id = v_actor AND p.deactivated_at IS NULL;
            IF v_actor_role IS NULL OR v_actor_role NOT IN ('manager', 'admin') THEN
                RAISE EXCEPTION 'only an active manager or admin issues tokens' USING ERRCODE = 'TWS01';
            END IF;
        END IF;
        -- An unbound login could name anyone as its actor: it issues tokens for workers only.
        IF v_target.role IN ('manager', 'admin')
           AND NOT (v_bound AND (v_target.id = v_actor OR v_actor_role = 'admin')) THEN
            RAISE EXCEPTION 'only an admin issues a token for another manager or an admin (a bound admin''s database role, or the owner)'
                USING ERRCODE = 'TWS01';
        END IF;
    END IF;
    INSERT INTO public.access_tokens (person_id, token_hash, label, created_by)
    VALUES (p_person, sha256(convert_to(p_secret, 'UTF8')), coalesce(p_label, ''), v_actor)
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;
