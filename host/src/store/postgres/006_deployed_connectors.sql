-- Scout Connector Host, PostgreSQL schema version 6: connectors added,
-- upgraded and retired through the admin API (`/v1/connectors/{name}`),
-- each with its settings and the artifact digest every host runs.
CREATE TABLE deployed_connectors (
    name text PRIMARY KEY,
    settings text NOT NULL,
    artifact text NOT NULL,
    digest text NOT NULL,
    revision bigint NOT NULL,
    retired boolean NOT NULL,
    changed_by text NOT NULL,
    changed_at_ms bigint NOT NULL
);
