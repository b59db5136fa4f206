-- Scout Connector Host, PostgreSQL schema version 4: the digest each OCI
-- artifact tag was first resolved to, so every host of the fleet runs the
-- same bytes however the tag moves in its registry.
CREATE TABLE artifact_pins (
    reference text PRIMARY KEY,
    digest text NOT NULL,
    pinned_by text NOT NULL,
    pinned_at_ms bigint NOT NULL
);
