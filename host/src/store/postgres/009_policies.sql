-- Scout Connector Host, PostgreSQL schema version 9: operators' Cedar
-- policy documents stored through the admin API (`/v1/policies/{name}`),
-- each with its text, its own revision and who changed it when (a deleted
-- one kept, retired, for the record); the store-wide count of changes to
-- them (the `api` part of the policy revision every decision names; its
-- one row is what two changes made at once queue on); and, per host, the
-- count it has applied, so that a change is acknowledged only once every
-- live host applies it.
CREATE TABLE policies (
    name text PRIMARY KEY,
    text text NOT NULL,
    revision bigint NOT NULL,
    retired boolean NOT NULL,
    changed_by text NOT NULL,
    changed_at_ms bigint NOT NULL,
    change bigint NOT NULL
);
CREATE TABLE policy_changes (
    id integer PRIMARY KEY CHECK (id = 1),
    count bigint NOT NULL
);
INSERT INTO policy_changes (id, count) VALUES (1, 0);
ALTER TABLE hosts ADD COLUMN policy_applied bigint NOT NULL DEFAULT 0;
