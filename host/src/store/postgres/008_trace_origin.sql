-- Scout Connector Host, PostgreSQL schema version 8: each trace row keeps
-- the OpenTelemetry trace and span of the request it belongs to (the host
-- is `host_id`); a decision keeps who decided as structured fields; a
-- session counts the calls it ran (its orchestrator's `max_calls`).
ALTER TABLE trace ADD COLUMN trace_id text;
ALTER TABLE trace ADD COLUMN span_id text;
ALTER TABLE approvals ADD COLUMN decided_actor text;
ALTER TABLE sessions ADD COLUMN calls integer NOT NULL DEFAULT 0;
