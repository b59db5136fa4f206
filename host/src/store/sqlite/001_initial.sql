-- Scout Connector Host, SQLite schema version 1: the embedded store of one
-- host. Applied in one `BEGIN IMMEDIATE` transaction with the version row.
CREATE TABLE IF NOT EXISTS trace (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    brand TEXT NOT NULL,
    call_id TEXT,
    tool TEXT,
    state TEXT NOT NULL,
    rule TEXT,
    detail TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS trace_session ON trace(session, seq);
CREATE INDEX IF NOT EXISTS trace_brand ON trace(brand, seq);
CREATE TABLE IF NOT EXISTS approvals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    tool TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'revoked')),
    used INTEGER NOT NULL DEFAULT 0 CHECK (used IN (0, 1)),
    decided_by TEXT,
    requested_at_ms INTEGER NOT NULL,
    decided_at_ms INTEGER,
    used_at_ms INTEGER,
    CHECK (used = 0 OR state = 'approved')
);
CREATE INDEX IF NOT EXISTS approvals_match ON approvals(session, tool, args_digest, state, used);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    brand TEXT NOT NULL,
    connector TEXT NOT NULL,
    day TEXT NOT NULL,
    per_run INTEGER NOT NULL CHECK (per_run > 0),
    per_day INTEGER NOT NULL CHECK (per_day >= per_run),
    ended INTEGER NOT NULL DEFAULT 0 CHECK (ended IN (0, 1)),
    started_at_ms INTEGER NOT NULL,
    ended_at_ms INTEGER
);
CREATE INDEX IF NOT EXISTS runs_day ON runs(brand, connector, day);
CREATE TABLE IF NOT EXISTS charges (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    connector TEXT NOT NULL,
    brand TEXT NOT NULL,
    day TEXT NOT NULL,
    amount INTEGER NOT NULL CHECK (amount >= 0),
    at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS charges_run ON charges(run_id);
CREATE INDEX IF NOT EXISTS charges_day ON charges(brand, connector, day);
CREATE TABLE IF NOT EXISTS connections (
    brand TEXT NOT NULL,
    connector TEXT NOT NULL,
    nonce BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (brand, connector)
);
CREATE TABLE IF NOT EXISTS connection_shares (
    owner_brand TEXT NOT NULL,
    connector TEXT NOT NULL,
    with_brand TEXT NOT NULL,
    shared_at_ms INTEGER NOT NULL,
    PRIMARY KEY (owner_brand, connector, with_brand)
);
CREATE INDEX IF NOT EXISTS connection_shares_with ON connection_shares(with_brand, connector, shared_at_ms);
CREATE TABLE IF NOT EXISTS profiles (
    brand TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('coworker', 'goal_agent', 'reviewer')),
    body TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (brand, name)
);
CREATE TABLE IF NOT EXISTS tool_reviews (
    connector TEXT NOT NULL,
    tool TEXT NOT NULL,
    digest TEXT NOT NULL,
    approved_by TEXT NOT NULL,
    approved_at_ms INTEGER NOT NULL,
    PRIMARY KEY (connector, tool)
);
