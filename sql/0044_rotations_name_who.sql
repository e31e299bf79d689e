-- A webhook's secret rotation says who did it and when (issue 49: rotations were not
-- logged with who did them): teamwork_webhook_rotate records the acting manager
-- (teamwork_actor_id); `webhook list` shows it.
ALTER TABLE webhook_subscriptions
    ADD COLUMN rotated_at timestamptz,
    ADD COLUMN rotated_by bigint REFERENCES people (id) ON DELETE SET NULL;
GRANT SELECT (rotated_at, rotated_by) ON webhook_subscriptions TO teamwork_manager;
