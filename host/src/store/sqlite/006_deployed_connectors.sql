-- Scout Connector Host, SQLite schema version 6: connectors added,
-- upgraded and retired through the admin API (`/v1/connectors/{name}`),
-- each with its settings and the artifact digest the host runs.
CREATE TABLE IF NOT EXISTS deployed_connectors (
    name TEXT PRIMARY KEY,
    settings TEXT NOT NULL,
    artifact TEXT NOT NULL,
    digest TEXT NOT NULL,
    revision INTEGER NOT NULL,
    retired INTEGER NOT NULL,
    changed_by TEXT NOT NULL,
    changed_at_ms INTEGER NOT NULL
);
