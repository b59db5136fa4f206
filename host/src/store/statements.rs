//! The statements both backends run, written once: PostgreSQL's `$N`
//! placeholders, which SQLite reads as `?N` (converted as this compiles).
//! A statement the two must word differently (a boolean, a row lock, a
//! host id) stays in its backend's file. A test prepares every statement
//! here on a real SQLite database at this schema; the conformance suite
//! (`tests/all/store.rs`) runs both backends through them.

/// One statement in each backend's placeholders.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shared {
    pub pg: &'static str,
    pub lite: &'static str,
}

/// `sql` with each `$N` placeholder as `?N`, the same length.
const fn dollars_to_questions<const N: usize>(sql: &str) -> [u8; N] {
    let bytes = sql.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = if bytes[i] == b'$' && i + 1 < N && bytes[i + 1].is_ascii_digit() {
            b'?'
        } else {
            bytes[i]
        };
        i += 1;
    }
    out
}

/// Declares each statement once, and [`ALL`] with every one of them.
macro_rules! statements {
    ($($(#[doc = $doc:literal])* $name:ident = $sql:literal;)*) => {
        $(
            $(#[doc = $doc])*
            pub(super) const $name: Shared = Shared {
                pg: $sql,
                lite: {
                    const LITE: [u8; $sql.len()] = dollars_to_questions::<{ $sql.len() }>($sql);
                    // Only ASCII `$` became ASCII `?`: still UTF-8.
                    match std::str::from_utf8(&LITE) {
                        Ok(sql) => sql,
                        Err(_) => panic!("a statement is not UTF-8"),
                    }
                },
            };
        )*
        /// Every shared statement, by name.
        #[cfg(test)]
        pub(super) const ALL: &[(&str, Shared)] = &[$((stringify!($name), $name)),*];
    };
}

/// A trace row's columns as both backends read them, in this order.
pub(super) const TRACE_COLUMNS: &str =
    "seq, session, brand, call_id, tool, state, rule, detail, at_ms, host_id, trace_id, span_id";

statements! {
    /// The latest decisions on approvals, whoever's, newest first.
    RECENT_DECISIONS = "SELECT seq, session, brand, call_id, tool, state, rule, detail, at_ms, host_id, trace_id, span_id FROM trace WHERE state = 'decided' ORDER BY seq DESC LIMIT $1";
    /// A session's latest calls as requested, newest first.
    RECENT_REQUESTS = "SELECT seq, session, brand, call_id, tool, state, rule, detail, at_ms, host_id, trace_id, span_id FROM trace WHERE session = $1 AND state = 'requested' AND call_id IS NOT NULL ORDER BY seq DESC LIMIT $2";
    /// Records a charge once per idempotency key (a retry of the same charge records nothing).
    INSERT_CHARGE = "INSERT INTO charges (idempotency_key, run_id, connector, brand, day, amount, at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (idempotency_key) DO NOTHING";
    /// The schema version a database is at.
    SCHEMA_VERSION_FOUND = "SELECT MAX(version) FROM schema_version";
    /// Records that a migration was applied.
    RECORD_SCHEMA_VERSION = "INSERT INTO schema_version (version) VALUES ($1)";
    /// The state of the latest approval of one call (session, tool, arguments).
    LATEST_APPROVAL_STATE = "SELECT state, used FROM approvals WHERE session = $1 AND tool = $2 AND args_digest = $3 ORDER BY id DESC LIMIT 1";
    /// The sealed arguments of an approval still pending.
    PENDING_APPROVAL_ARGUMENTS = "SELECT session, tool, args_digest, args_nonce, args_sealed FROM approvals WHERE id = $1 AND state = 'pending'";
    /// Whether the charge recorded under a key is this very charge (a retry) or another (a conflict).
    CHARGE_MATCHES_KEY = "SELECT run_id = $2 AND connector = $3 AND brand = $4 AND day = $5 AND amount = $6 FROM charges WHERE idempotency_key = $1";
    /// One run's charges in the order recorded.
    CHARGES_IN_RUN = "SELECT idempotency_key, run_id, connector, brand, day, amount FROM charges WHERE run_id = $1 ORDER BY seq";
    /// Adds a hold to a run's reserved figure.
    HOLD_IN_RUN = "UPDATE runs SET reserved = reserved + $2 WHERE run_id = $1";
    /// What was charged under a key.
    CHARGED_UNDER_KEY = "SELECT amount FROM charges WHERE idempotency_key = $1";
    /// A brand's sealed connection for one connector.
    SEALED_CONNECTION = "SELECT nonce, ciphertext, disabled FROM connections WHERE brand = $1 AND connector = $2";
    /// Shares a connection with a brand (idempotent).
    SHARE_CONNECTION = "INSERT INTO connection_shares (owner_brand, connector, with_brand, shared_at_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (owner_brand, connector, with_brand) DO NOTHING";
    /// Withdraws a share.
    UNSHARE_CONNECTION = "DELETE FROM connection_shares WHERE owner_brand = $1 AND connector = $2 AND with_brand = $3";
    /// The brands that share a connector's connection with a brand, oldest share first.
    SHARED_WITH = "SELECT owner_brand FROM connection_shares WHERE with_brand = $1 AND connector = $2 ORDER BY shared_at_ms, owner_brand";
    /// Stores a validated profile, replacing one of the same name.
    SAVE_PROFILE = "INSERT INTO profiles (brand, name, kind, body, updated_at_ms) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (brand, name) DO UPDATE SET kind = excluded.kind, body = excluded.body, updated_at_ms = excluded.updated_at_ms";
    /// One saved profile.
    LOAD_PROFILE = "SELECT kind, body FROM profiles WHERE brand = $1 AND name = $2";
    /// A brand's saved profiles, by name.
    LIST_PROFILES = "SELECT kind, body FROM profiles WHERE brand = $1 ORDER BY name";
    /// Deletes a saved profile.
    DELETE_PROFILE = "DELETE FROM profiles WHERE brand = $1 AND name = $2";
    /// Records the answer to a capability request.
    ANSWER_CAPABILITY_REQUEST = "UPDATE capability_requests SET answer = $1, answered_by = $2, answered_at_ms = $3 WHERE id = $4";
    /// What an operator last approved of a tool.
    REVIEWED = "SELECT digest, effect, facts FROM tool_reviews WHERE connector = $1 AND tool = $2";
    /// Records an operator's approval of a tool, replacing the last.
    APPROVE_TOOL = "INSERT INTO tool_reviews (connector, tool, digest, approved_by, approved_at_ms, effect, facts) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (connector, tool) DO UPDATE SET digest = excluded.digest, approved_by = excluded.approved_by, approved_at_ms = excluded.approved_at_ms, effect = excluded.effect, facts = excluded.facts";
    /// The reviewed tools of one connector.
    REVIEWED_TOOLS = "SELECT tool FROM tool_reviews WHERE connector = $1 ORDER BY tool";
    /// Records the digest a tag was first resolved to; a later resolution changes nothing.
    PIN_ARTIFACT = "INSERT INTO artifact_pins (reference, digest, pinned_by, pinned_at_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (reference) DO NOTHING";
    /// The digest recorded for a tag.
    PINNED_ARTIFACT = "SELECT digest FROM artifact_pins WHERE reference = $1";
    /// Every stored connection, never its secret.
    ALL_CONNECTIONS = "SELECT brand, connector, disabled, updated_at_ms FROM connections ORDER BY brand, connector";
    /// Every share, oldest first.
    ALL_SHARES = "SELECT owner_brand, connector, with_brand FROM connection_shares ORDER BY shared_at_ms, with_brand";
    /// Every saved profile.
    ALL_PROFILES = "SELECT brand, kind, body FROM profiles ORDER BY brand, name";
    /// Every tool review.
    ALL_REVIEWS = "SELECT connector, tool, digest, approved_by, approved_at_ms, effect FROM tool_reviews ORDER BY connector, tool";
    /// When a brand's tools last ran.
    LAST_EXECUTED = "SELECT tool, MAX(at_ms) FROM trace WHERE brand = $1 AND state = 'executed' AND tool IS NOT NULL GROUP BY tool";
    /// What a brand's runs hold against one connector's day: a live run
    /// its whole per-run figure, an ended one what it recorded (its
    /// per-run figure if it recorded nothing). A run starts only if this
    /// plus its own figure fits the day ([`super::rules::day_allows`]).
    DAY_COMMITTED = "SELECT CAST(COALESCE(SUM(CASE WHEN NOT r.ended THEN r.per_run ELSE COALESCE(NULLIF((SELECT SUM(c.amount) FROM charges c WHERE c.run_id = r.run_id), 0), r.per_run) END), 0) AS BIGINT) FROM runs r WHERE r.brand = $1 AND r.connector = $2 AND r.day = $3";
    /// What one run recorded.
    SPENT_IN_RUN = "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM charges WHERE run_id = $1";
    /// What a brand's runs recorded against one connector on one day.
    SPENT_ON_DAY = "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM charges WHERE brand = $1 AND connector = $2 AND day = $3";
    /// Releases a settled hold of a live run (never below zero).
    RELEASE_HOLD = "UPDATE runs SET reserved = CASE WHEN reserved > $2 THEN reserved - $2 ELSE 0 END WHERE run_id = $1 AND NOT ended";
    /// Ends a run: it holds nothing more, and the day counts what it recorded.
    END_RUN = "UPDATE runs SET ended = TRUE, reserved = 0, ended_at_ms = COALESCE(ended_at_ms, $1) WHERE run_id = $2";
    /// Revokes every unused approval of a session; a revoked one never comes back.
    REVOKE_SESSION_APPROVALS = "UPDATE approvals SET state = 'revoked', decided_at_ms = $1, args_nonce = NULL, args_sealed = NULL WHERE session = $2 AND NOT used AND state IN ('pending', 'approved')";
    /// Stores (or replaces, enabling again) a brand's sealed connection.
    PUT_CONNECTION = "INSERT INTO connections (brand, connector, nonce, ciphertext, disabled, updated_at_ms) VALUES ($1, $2, $3, $4, FALSE, $5) ON CONFLICT (brand, connector) DO UPDATE SET nonce = excluded.nonce, ciphertext = excluded.ciphertext, disabled = FALSE, updated_at_ms = excluded.updated_at_ms";
    /// Disables a connection: it resolves for no one.
    DISABLE_CONNECTION = "UPDATE connections SET disabled = TRUE, updated_at_ms = $1 WHERE brand = $2 AND connector = $3";
    /// Adds, upgrades or brings back a connector served by the fleet.
    DEPLOY_CONNECTOR = "INSERT INTO deployed_connectors (name, settings, artifact, digest, revision, retired, changed_by, changed_at_ms) VALUES ($1, $2, $3, $4, 1, FALSE, $5, $6) ON CONFLICT (name) DO UPDATE SET settings = excluded.settings, artifact = excluded.artifact, digest = excluded.digest, revision = deployed_connectors.revision + 1, retired = FALSE, changed_by = excluded.changed_by, changed_at_ms = excluded.changed_at_ms";
    /// Retires a live connector.
    RETIRE_CONNECTOR = "UPDATE deployed_connectors SET retired = TRUE, revision = revision + 1, changed_by = $1, changed_at_ms = $2 WHERE name = $3 AND NOT retired";
    /// Stores (or replaces) a component an orchestrator may load for one session.
    PUT_SESSION_COMPONENT = "INSERT INTO session_components (name, settings, artifact, digest, revision, retired, changed_by, changed_at_ms) VALUES ($1, $2, $3, $4, 1, FALSE, $5, $6) ON CONFLICT (name) DO UPDATE SET settings = excluded.settings, artifact = excluded.artifact, digest = excluded.digest, revision = session_components.revision + 1, retired = FALSE, changed_by = excluded.changed_by, changed_at_ms = excluded.changed_at_ms";
    /// Withdraws a session component: no session opened after loads it.
    DROP_SESSION_COMPONENT = "UPDATE session_components SET retired = TRUE, revision = revision + 1, changed_by = $1, changed_at_ms = $2 WHERE name = $3 AND NOT retired";
    /// Every session component, withdrawn ones included, by name.
    SESSION_COMPONENTS = "SELECT name, settings, artifact, digest, revision, retired, changed_by, changed_at_ms FROM session_components ORDER BY name";
}

#[cfg(test)]
mod tests {
    use super::ALL;

    /// Every shared statement prepares on SQLite at this schema, with as
    /// many parameters as PostgreSQL's text names, each `?N` where
    /// PostgreSQL has `$N`.
    #[test]
    fn every_shared_statement_prepares_on_sqlite_with_the_same_parameters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("statements.db");
        drop(super::super::SqliteStore::open(&path).unwrap());
        let conn = rusqlite::Connection::open(&path).unwrap();
        for (name, sql) in ALL {
            let statement = conn
                .prepare(sql.lite)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut named = std::collections::BTreeSet::new();
            let bytes = sql.pg.as_bytes();
            for (i, b) in bytes.iter().enumerate() {
                if *b == b'$' {
                    let digits: String = sql.pg[i + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_digit())
                        .collect();
                    named.insert(digits.parse::<usize>().unwrap());
                }
            }
            assert_eq!(statement.parameter_count(), named.len(), "{name}");
            for n in named {
                assert_eq!(
                    statement.parameter_name(n),
                    Some(format!("?{n}").as_str()),
                    "{name}: parameter {n}"
                );
            }
            assert_eq!(
                sql.lite.replace('?', "$"),
                sql.pg,
                "{name}: only placeholders differ"
            );
        }
    }
}
