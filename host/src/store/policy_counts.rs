//! The calls operator policies let through (allowed, or sent to a person),
//! counted for the policies that read a session's history
//! ([`PolicyCountStore`]; issue 56, `context.history`).
//!
//! A rule such as "at most 5 sends per session per hour" holds across a
//! fleet only if every host counts the same calls and no two hosts both
//! see the fifth as the last one free. So the counts are read, the
//! decision made and the allowed call recorded in ONE transaction under a
//! per-brand lock (SQLite's single writer, a PostgreSQL advisory
//! transaction lock), as the allowance ledger does for runs: any host
//! serves any session's next call (DESIGN D19) and sees every call before
//! it. The alternative evaluated, Dogwood's engine, keeps its history on
//! the deciding host's disk, which no other host can read.
//!
//! Two tables: a row per allowed call (`policy_calls`) for the sliding
//! windows, deleted once past the longest window (a day) by the next call
//! of its brand; and per-session totals (`policy_session_counts`), so a
//! session's own counts do not depend on how long its rows are kept,
//! deleted [`SESSION_TOTALS_KEPT_MS`] after the session's last counted call.

use super::StoreError;
use crate::policy::operator::HistoryFacts;

/// The short sliding window: an hour.
pub const HOUR_MS: i64 = 60 * 60 * 1000;
/// The long sliding window, and how long a call's row is kept: a day.
pub const DAY_MS: i64 = 24 * HOUR_MS;
/// How long a session's totals are kept after its last counted call: far
/// past any session's life (`session_ttl_secs`, a day by default).
pub const SESSION_TOTALS_KEPT_MS: i64 = 30 * DAY_MS;

/// What a call does, as the totals count effects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallEffect {
    Read,
    Write,
    /// A call its connector's meter charges.
    Billed,
}

impl CallEffect {
    /// Its stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallEffect::Read => "read",
            CallEffect::Write => "write",
            CallEffect::Billed => "billed",
        }
    }

    /// A write or a billed call: what `session_effects` counts.
    pub fn is_effect(self) -> bool {
        self != CallEffect::Read
    }
}

/// One call being decided, as its counts are read and recorded.
#[derive(Debug, Clone, Copy)]
pub struct CountedCall<'a> {
    pub brand: &'a str,
    pub session: &'a str,
    /// The connector's server name.
    pub connector: &'a str,
    /// The tool's MCP name as the session sees it.
    pub tool: &'a str,
    pub effect: CallEffect,
    /// When it is decided, in milliseconds since the Unix epoch: the
    /// windows end here.
    pub at_ms: i64,
}

/// Where a call's windows begin. A call counts in a window when it was
/// allowed strictly after the window's start: one allowed exactly an hour
/// before `at_ms` is no longer in the last hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// The last hour: calls at `at_ms > hour_after`.
    pub hour_after: i64,
    /// The last day: calls at `at_ms > day_after`.
    pub day_after: i64,
}

impl Windows {
    /// The windows that end at `at_ms`.
    pub fn ending_at(at_ms: i64) -> Windows {
        Windows {
            hour_after: at_ms.saturating_sub(HOUR_MS),
            day_after: at_ms.saturating_sub(DAY_MS),
        }
    }

    /// Whether a call allowed at `allowed_at_ms` is in the last hour.
    pub fn in_hour(&self, allowed_at_ms: i64) -> bool {
        allowed_at_ms > self.hour_after
    }

    /// Whether a call allowed at `allowed_at_ms` is in the last day (and
    /// so its row is still needed).
    pub fn in_day(&self, allowed_at_ms: i64) -> bool {
        allowed_at_ms > self.day_after
    }
}

/// Decides a call on its history: `true` when it counts for the calls
/// after it (the policies did not refuse it), and so it is recorded.
pub type DecideOnHistory<'a> = &'a (dyn Fn(&HistoryFacts) -> bool + Send + Sync);

/// Window counts and totals of the calls operator policies allowed.
#[async_trait::async_trait]
pub trait PolicyCountStore: Send + Sync {
    /// Reads `call`'s history (the calls allowed before it, its session's
    /// spend on its connector and the approvals given in it), runs
    /// `decide` on it, and records the call if `decide` allows it: one
    /// transaction under a per-brand lock, on every host, so concurrent
    /// calls of one brand are decided one after the other, each on the
    /// counts its predecessors left. Returns the history decided on. An
    /// error records nothing and `decide` may not have run: the caller
    /// refuses the call (fails closed).
    async fn decide_on_history(
        &self,
        call: &CountedCall<'_>,
        decide: DecideOnHistory<'_>,
    ) -> Result<HistoryFacts, StoreError>;
}

/// The first key of the per-brand advisory lock on PostgreSQL (the second
/// is the brand's `hashtext`): apart from every other lock the hosts take.
pub(crate) const POLICY_COUNTS_LOCK: i32 = 0x5C07_0010;

/// The history of a call: `$1` session, `$2` brand, `$3` tool, `$4`
/// connector, `$5` the session's run on the connector, `$6` the hour's
/// start, `$7` the day's (both exclusive). Each count is one index range.
pub(crate) const COUNT_HISTORY: &str = "SELECT
  COALESCE((SELECT calls FROM policy_session_counts WHERE session = $1 AND scope = 'session' AND name = ''), 0),
  COALESCE((SELECT effects FROM policy_session_counts WHERE session = $1 AND scope = 'session' AND name = ''), 0),
  (SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM charges WHERE run_id = $5),
  (SELECT COUNT(*) FROM approvals WHERE session = $1 AND state = 'approved'),
  COALESCE((SELECT calls FROM policy_session_counts WHERE session = $1 AND scope = 'tool' AND name = $3), 0),
  (SELECT COUNT(*) FROM policy_calls WHERE session = $1 AND tool = $3 AND at_ms > $6),
  (SELECT COUNT(*) FROM policy_calls WHERE brand = $2 AND tool = $3 AND at_ms > $6),
  (SELECT COUNT(*) FROM policy_calls WHERE brand = $2 AND tool = $3 AND at_ms > $7),
  COALESCE((SELECT calls FROM policy_session_counts WHERE session = $1 AND scope = 'connector' AND name = $4), 0),
  (SELECT COUNT(*) FROM policy_calls WHERE session = $1 AND connector = $4 AND at_ms > $6),
  (SELECT COUNT(*) FROM policy_calls WHERE brand = $2 AND connector = $4 AND at_ms > $6),
  (SELECT COUNT(*) FROM policy_calls WHERE brand = $2 AND connector = $4 AND at_ms > $7)";

/// Records an allowed call: `$1` brand, `$2` session, `$3` connector, `$4`
/// tool, `$5` effect, `$6` when.
pub(crate) const RECORD_CALL: &str = "INSERT INTO policy_calls (brand, session, connector, tool, effect, at_ms) VALUES ($1, $2, $3, $4, $5, $6)";

/// Counts an allowed call in its session's totals (the session's, its
/// tool's, its connector's): `$1` session, `$2` brand, `$3` tool, `$4`
/// connector, `$5` 1 for an effect else 0, `$6` when.
pub(crate) const COUNT_IN_SESSION: &str = "INSERT INTO policy_session_counts (session, scope, name, brand, calls, effects, updated_at_ms)
  VALUES ($1, 'session', '', $2, 1, $5, $6), ($1, 'tool', $3, $2, 1, $5, $6), ($1, 'connector', $4, $2, 1, $5, $6)
  ON CONFLICT (session, scope, name) DO UPDATE SET calls = policy_session_counts.calls + 1,
    effects = policy_session_counts.effects + excluded.effects, updated_at_ms = excluded.updated_at_ms";

/// Deletes a brand's rows past the day (`$1` brand, `$2` the day's start).
pub(crate) const PRUNE_CALLS: &str = "DELETE FROM policy_calls WHERE brand = $1 AND at_ms <= $2";

/// Deletes a brand's session totals untouched for
/// [`SESSION_TOTALS_KEPT_MS`] (`$1` brand, `$2` the cut).
pub(crate) const PRUNE_SESSION_TOTALS: &str =
    "DELETE FROM policy_session_counts WHERE brand = $1 AND updated_at_ms <= $2";

/// The columns the counting statement returns, in its order, as the
/// facts a policy reads.
pub(crate) fn history_from_columns(columns: [i64; 12]) -> HistoryFacts {
    use crate::policy::operator::WindowCounts;
    let [
        session_calls,
        session_effects,
        session_spent_units,
        session_approvals,
        tool_in_session,
        tool_in_session_last_hour,
        tool_in_brand_last_hour,
        tool_in_brand_last_day,
        connector_in_session,
        connector_in_session_last_hour,
        connector_in_brand_last_hour,
        connector_in_brand_last_day,
    ] = columns;
    HistoryFacts {
        session_calls,
        session_effects,
        session_spent_units,
        session_approvals,
        tool: WindowCounts {
            in_session: tool_in_session,
            in_session_last_hour: tool_in_session_last_hour,
            in_brand_last_hour: tool_in_brand_last_hour,
            in_brand_last_day: tool_in_brand_last_day,
        },
        connector: WindowCounts {
            in_session: connector_in_session,
            in_session_last_hour: connector_in_session_last_hour,
            in_brand_last_hour: connector_in_brand_last_hour,
            in_brand_last_day: connector_in_brand_last_day,
        },
    }
}

/// The run a session's meter on a connector charges (as
/// `session::holdings` names it): `session_spent_units` is its charges.
pub(crate) fn run_of(session: &str, connector: &str) -> String {
    format!("{session}:{connector}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_exactly_a_window_ago_is_out_of_it_and_one_millisecond_later_in() {
        let now = 1_700_000_000_000;
        let w = Windows::ending_at(now);
        assert!(!w.in_hour(now - HOUR_MS));
        assert!(w.in_hour(now - HOUR_MS + 1));
        assert!(w.in_hour(now));
        assert!(!w.in_day(now - DAY_MS));
        assert!(w.in_day(now - DAY_MS + 1));
        // An hour-old call is still in the day.
        assert!(w.in_day(now - HOUR_MS));
    }

    #[test]
    fn windows_at_the_epoch_do_not_wrap() {
        let w = Windows::ending_at(i64::MIN + 5);
        assert_eq!(w.hour_after, i64::MIN);
        assert_eq!(w.day_after, i64::MIN);
        assert!(w.in_hour(i64::MIN + 1));
    }

    #[test]
    fn only_writes_and_billed_calls_are_effects() {
        assert!(!CallEffect::Read.is_effect());
        assert!(CallEffect::Write.is_effect());
        assert!(CallEffect::Billed.is_effect());
        assert_eq!(
            [CallEffect::Read, CallEffect::Write, CallEffect::Billed].map(CallEffect::as_str),
            ["read", "write", "billed"]
        );
    }

    #[test]
    fn the_columns_fill_the_facts_in_order() {
        let h = history_from_columns([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        assert_eq!(
            (
                h.session_calls,
                h.session_effects,
                h.session_spent_units,
                h.session_approvals
            ),
            (1, 2, 3, 4)
        );
        assert_eq!(
            (
                h.tool.in_session,
                h.tool.in_session_last_hour,
                h.tool.in_brand_last_hour,
                h.tool.in_brand_last_day
            ),
            (5, 6, 7, 8)
        );
        assert_eq!(
            (
                h.connector.in_session,
                h.connector.in_session_last_hour,
                h.connector.in_brand_last_hour,
                h.connector.in_brand_last_day
            ),
            (9, 10, 11, 12)
        );
    }
}
