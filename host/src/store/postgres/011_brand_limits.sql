-- Scout Connector Host, PostgreSQL schema version 11: each session a host
-- opened, as its brand's limits count it (seed 000: "each brand's inbound
-- turns are rate-limited, and they count against the live session cap").
-- A row is live until the session ends or expires (or the fleet's
-- `sessions` row says it was closed or ended); an inbound-email one
-- counts against its brand's hour whether it ended or not.
CREATE TABLE brand_session_slots (
    session_id text PRIMARY KEY,
    brand text NOT NULL,
    inbound boolean NOT NULL,
    opened_at_ms bigint NOT NULL,
    expires_at_ms bigint NOT NULL,
    ended_at_ms bigint
);
CREATE INDEX brand_session_slots_brand ON brand_session_slots (brand, opened_at_ms);
