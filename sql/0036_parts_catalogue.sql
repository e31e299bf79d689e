-- The parts and materials a job may use (issue 53, docs/dispatch.md "Parts"): a code,
-- a name, the unit it is counted in, and optionally a unit price in a currency. A part
-- used in a task's history is never deleted: it is retired (kept, not offered).
CREATE TABLE parts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    code        text NOT NULL CHECK (code ~ '^[A-Za-z0-9][A-Za-z0-9._/-]{0,39}$'),
    name        text NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 200 AND name !~ '[[:cntrl:]]'),
    unit        text NOT NULL CHECK (unit IN ('piece', 'm', 'm2', 'm3', 'l', 'kg', 'h')),
    unit_price  numeric(13, 4) CHECK (unit_price >= 0 AND unit_price < 1000000000),
    currency    text CHECK (currency ~ '^[A-Z]{3}$'),
    retired_at  timestamptz,
    created_by  bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((unit_price IS NULL) = (currency IS NULL))
);
CREATE UNIQUE INDEX parts_code_key ON parts (lower(code));
CREATE TRIGGER parts_touch BEFORE UPDATE ON parts FOR EACH ROW EXECUTE FUNCTION touch_updated_at();
GRANT SELECT, INSERT, UPDATE (name, unit, unit_price, currency, retired_at) ON parts TO teamwork_manager;
GRANT SELECT ON parts TO teamwork_service;
