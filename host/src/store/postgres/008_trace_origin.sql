-- Scout Connector Host, PostgreSQL schema version 8: each trace row keeps
-- the OpenTelemetry trace and span of the request it belongs to (the host
-- is `host_id`); a decision keeps who decided as structured fields; a
-- session counts the calls it ran (its orchestrator's `max_calls`).
ALTER TABLE trace ADD COLUMN trace_id text;
ALTER TABLE trace ADD COLUMN span_id text;
ALTER TABLE approvals ADD COLUMN decided_actor text;
ALTER TABLE sessions ADD COLUMN calls integer NOT NULL DEFAULT 0;
-- Components an orchestrator may load for one session (issue 39): each
-- with its connector settings and the artifact digest an operator chose.
CREATE TABLE session_components (
    name text PRIMARY KEY,
    settings text NOT NULL,
    artifact text NOT NULL,
    digest text NOT NULL,
    revision bigint NOT NULL,
    retired boolean NOT NULL,
    changed_by text NOT NULL,
    changed_at_ms bigint NOT NULL
);
