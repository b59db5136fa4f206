-- Scout Connector Host, SQLite schema version 9: operators' Cedar policy
-- documents stored through the admin API (`/v1/policies/{name}`), each
-- with its text, its own revision and who changed it when (a deleted one
-- kept, retired, for the record), and the store-wide count of changes to
-- them: the `api` part of the policy revision every decision names.
CREATE TABLE IF NOT EXISTS policies (
    name TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    revision INTEGER NOT NULL,
    retired INTEGER NOT NULL,
    changed_by TEXT NOT NULL,
    changed_at_ms INTEGER NOT NULL,
    change INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS policy_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    count INTEGER NOT NULL
);
INSERT OR IGNORE INTO policy_changes (id, count) VALUES (1, 0);
