-- Scout Connector Host, PostgreSQL schema version 2: capability requests an
-- agent parks for its run owner (seed 003). Asking grants nothing.
CREATE TABLE capability_requests (
    id bigserial PRIMARY KEY,
    session text NOT NULL,
    brand text NOT NULL,
    request text NOT NULL,
    requested_at_ms bigint NOT NULL,
    answer text,
    answered_by text,
    answered_at_ms bigint
);
CREATE INDEX capability_requests_session ON capability_requests (session, id);
