-- The done message may list what was used on the job ({used}, docs/integrations.md):
-- the service reads the lines.
GRANT SELECT ON task_materials TO teamwork_service;
