-- Scout Connector Host, SQLite schema version 8: each trace row says which
-- host wrote it and the OpenTelemetry trace and span of the request it
-- belongs to; a decision keeps who decided as structured fields.
ALTER TABLE trace ADD COLUMN host_id TEXT;
ALTER TABLE trace ADD COLUMN trace_id TEXT;
ALTER TABLE trace ADD COLUMN span_id TEXT;
ALTER TABLE approvals ADD COLUMN decided_actor TEXT;
-- Components an orchestrator may load for one session (issue 39): each
-- with its connector settings and the artifact digest an operator chose.
CREATE TABLE IF NOT EXISTS session_components (
    name TEXT PRIMARY KEY,
    settings TEXT NOT NULL,
    artifact TEXT NOT NULL,
    digest TEXT NOT NULL,
    revision INTEGER NOT NULL,
    retired INTEGER NOT NULL,
    changed_by TEXT NOT NULL,
    changed_at_ms INTEGER NOT NULL
);
