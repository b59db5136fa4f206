-- Scout Connector Host, PostgreSQL schema version 7: a session is the
-- fleet's. Each keeps what any host needs to serve its next call (never
-- its token: a digest), and its changing state: paused, connectors
-- withdrawn from its grant, effects taken, whether its delegation ended,
-- and its refusals by consequence. `host_id` is the host serving it now.
ALTER TABLE sessions ADD COLUMN record text;
ALTER TABLE sessions ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE sessions ADD COLUMN withdrawn text NOT NULL DEFAULT '[]';
ALTER TABLE sessions ADD COLUMN effects integer NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN delegation_ended boolean NOT NULL DEFAULT false;
CREATE TABLE session_refusals (
    session text NOT NULL,
    consequence text NOT NULL,
    count integer NOT NULL,
    PRIMARY KEY (session, consequence)
);
-- What a run holds for calls not yet settled, on any host: a session's
-- run is spent exactly whichever hosts serve it.
ALTER TABLE runs ADD COLUMN reserved bigint NOT NULL DEFAULT 0;
