-- Scout Connector Host, SQLite schema version 8: each trace row says which
-- host wrote it and the OpenTelemetry trace and span of the request it
-- belongs to; a decision keeps who decided as structured fields.
ALTER TABLE trace ADD COLUMN host_id TEXT;
ALTER TABLE trace ADD COLUMN trace_id TEXT;
ALTER TABLE trace ADD COLUMN span_id TEXT;
ALTER TABLE approvals ADD COLUMN decided_actor TEXT;
