-- Scout Connector Host, SQLite schema version 2: capability requests an
-- agent parks for its run owner (seed 003; asking grants nothing), and an
-- approval keeps the arguments a person approves, sealed, while it is
-- pending.
CREATE TABLE IF NOT EXISTS capability_requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    brand TEXT NOT NULL,
    request TEXT NOT NULL,
    requested_at_ms INTEGER NOT NULL,
    answer TEXT,
    answered_by TEXT,
    answered_at_ms INTEGER
);
ALTER TABLE approvals ADD COLUMN args_nonce BLOB;
ALTER TABLE approvals ADD COLUMN args_sealed BLOB;
