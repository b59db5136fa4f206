-- Scout Connector Host, PostgreSQL schema version 1 (DESIGN D7).
-- Applied once, under the migration advisory lock, by whichever host starts first.
CREATE TABLE hosts (
    host_id text PRIMARY KEY,
    started_at timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz NOT NULL,
    recovered_by text,
    recovered_at timestamptz
);
CREATE TABLE trace (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- A page stops below the oldest transaction still running (identities
    -- are taken at insert, not at commit).
    txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    host_id text NOT NULL,
    session text NOT NULL,
    brand text NOT NULL,
    call_id text,
    tool text,
    state text NOT NULL,
    rule text,
    -- text, not jsonb: jsonb refuses the \u0000 an upstream may send.
    detail text NOT NULL,
    at_ms bigint NOT NULL
);
CREATE INDEX trace_session ON trace (session, seq);
CREATE INDEX trace_brand ON trace (brand, seq);
CREATE INDEX trace_host ON trace (host_id, session, call_id);
CREATE TABLE approvals (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    host_id text NOT NULL,
    session text NOT NULL,
    tool text NOT NULL,
    args_digest text NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'revoked')),
    used boolean NOT NULL DEFAULT false,
    decided_by text,
    requested_at_ms bigint NOT NULL,
    decided_at_ms bigint,
    used_at_ms bigint,
    -- The arguments a person approves, sealed with the store key while
    -- the approval is pending; erased when it is decided or revoked.
    args_nonce bytea,
    args_sealed bytea,
    CHECK (NOT used OR state = 'approved')
);
CREATE INDEX approvals_match ON approvals (session, tool, args_digest, id);
CREATE INDEX approvals_host ON approvals (host_id) WHERE state = 'pending';
CREATE TABLE ledger_days (
    brand text NOT NULL,
    connector text NOT NULL,
    day text NOT NULL,
    PRIMARY KEY (brand, connector, day)
);
CREATE TABLE runs (
    run_id text PRIMARY KEY,
    host_id text NOT NULL,
    brand text NOT NULL,
    connector text NOT NULL,
    day text NOT NULL,
    per_run bigint NOT NULL CHECK (per_run > 0),
    per_day bigint NOT NULL CHECK (per_day >= per_run),
    ended boolean NOT NULL DEFAULT false,
    started_at_ms bigint NOT NULL,
    ended_at_ms bigint
);
CREATE INDEX runs_day ON runs (brand, connector, day);
CREATE INDEX runs_host ON runs (host_id) WHERE NOT ended;
CREATE TABLE charges (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    idempotency_key text NOT NULL UNIQUE,
    run_id text NOT NULL,
    connector text NOT NULL,
    brand text NOT NULL,
    day text NOT NULL,
    amount bigint NOT NULL CHECK (amount >= 0),
    at_ms bigint NOT NULL
);
CREATE INDEX charges_run ON charges (run_id);
CREATE INDEX charges_day ON charges (brand, connector, day);
CREATE TABLE connections (
    brand text NOT NULL,
    connector text NOT NULL,
    nonce bytea NOT NULL,
    ciphertext bytea NOT NULL,
    disabled boolean NOT NULL DEFAULT false,
    updated_at_ms bigint NOT NULL,
    PRIMARY KEY (brand, connector)
);
CREATE TABLE connection_shares (
    owner_brand text NOT NULL,
    connector text NOT NULL,
    with_brand text NOT NULL,
    shared_at_ms bigint NOT NULL,
    PRIMARY KEY (owner_brand, connector, with_brand)
);
CREATE INDEX connection_shares_with ON connection_shares (with_brand, connector, shared_at_ms);
CREATE TABLE profiles (
    brand text NOT NULL,
    name text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('coworker', 'goal_agent', 'reviewer')),
    body text NOT NULL,
    updated_at_ms bigint NOT NULL,
    PRIMARY KEY (brand, name)
);
CREATE TABLE tool_reviews (
    connector text NOT NULL,
    tool text NOT NULL,
    digest text NOT NULL,
    approved_by text NOT NULL,
    approved_at_ms bigint NOT NULL,
    PRIMARY KEY (connector, tool)
);
-- Sessions: served by the host that opened it; any host answers for it.
CREATE TABLE sessions (
    id text PRIMARY KEY,
    host_id text NOT NULL,
    brand text NOT NULL,
    view text NOT NULL,
    expires_at_ms bigint NOT NULL,
    opened_at_ms bigint NOT NULL,
    -- Someone asked for it to end (on any host).
    ended_at_ms bigint,
    -- Its host ended it, or was lost.
    closed_at_ms bigint
);
CREATE INDEX sessions_open ON sessions (host_id) WHERE closed_at_ms IS NULL;
