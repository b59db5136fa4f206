-- Scout Connector Host, SQLite schema version 10: the calls operator
-- policies allowed, for the policies that read a session's history
-- (`context.history`). A row per allowed call, for the sliding windows
-- (deleted past the day, the longest); and each session's totals (its
-- calls and effects, per tool and per connector), kept 30 days after its
-- last counted call.
CREATE TABLE policy_calls (
    brand TEXT NOT NULL,
    session TEXT NOT NULL,
    connector TEXT NOT NULL,
    tool TEXT NOT NULL,
    effect TEXT NOT NULL CHECK (effect IN ('read', 'write', 'billed')),
    at_ms INTEGER NOT NULL
);
CREATE INDEX policy_calls_brand_tool ON policy_calls (brand, tool, at_ms);
CREATE INDEX policy_calls_brand_connector ON policy_calls (brand, connector, at_ms);
CREATE INDEX policy_calls_session_tool ON policy_calls (session, tool, at_ms);
CREATE INDEX policy_calls_session_connector ON policy_calls (session, connector, at_ms);
CREATE INDEX policy_calls_brand_at ON policy_calls (brand, at_ms);
CREATE TABLE policy_session_counts (
    session TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('session', 'tool', 'connector')),
    name TEXT NOT NULL,
    brand TEXT NOT NULL,
    calls INTEGER NOT NULL,
    effects INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session, scope, name)
);
CREATE INDEX policy_session_counts_brand ON policy_session_counts (brand, updated_at_ms);
