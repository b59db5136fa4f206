-- Scout Connector Host, PostgreSQL schema version 10: the calls operator
-- policies allowed, for the policies that read a session's history
-- (`context.history`). A row per allowed call, for the sliding windows
-- (deleted past the day, the longest); and each session's totals (its
-- calls and effects, per tool and per connector), kept 30 days after its
-- last counted call.
CREATE TABLE policy_calls (
    brand text NOT NULL,
    session text NOT NULL,
    connector text NOT NULL,
    tool text NOT NULL,
    effect text NOT NULL CHECK (effect IN ('read', 'write', 'billed')),
    at_ms bigint NOT NULL
);
CREATE INDEX policy_calls_brand_tool ON policy_calls (brand, tool, at_ms);
CREATE INDEX policy_calls_brand_connector ON policy_calls (brand, connector, at_ms);
CREATE INDEX policy_calls_session_tool ON policy_calls (session, tool, at_ms);
CREATE INDEX policy_calls_session_connector ON policy_calls (session, connector, at_ms);
CREATE INDEX policy_calls_brand_at ON policy_calls (brand, at_ms);
CREATE TABLE policy_session_counts (
    session text NOT NULL,
    scope text NOT NULL CHECK (scope IN ('session', 'tool', 'connector')),
    name text NOT NULL,
    brand text NOT NULL,
    calls bigint NOT NULL,
    effects bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    PRIMARY KEY (session, scope, name)
);
CREATE INDEX policy_session_counts_brand ON policy_session_counts (brand, updated_at_ms);
