-- Scout Connector Host, SQLite schema version 4: the digest each OCI
-- artifact tag was first resolved to, so every start runs the same bytes
-- however the tag moves in its registry.
CREATE TABLE IF NOT EXISTS artifact_pins (
    reference TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    pinned_by TEXT NOT NULL,
    pinned_at_ms INTEGER NOT NULL
);
