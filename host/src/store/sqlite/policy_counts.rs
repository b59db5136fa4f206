//! Policy window counts in SQLite ([`PolicyCountStore`]): `BEGIN IMMEDIATE`
//! takes SQLite's single writer lock, which is the per-brand lock and more
//! (every process on the file waits for it), so the counts read, the
//! decision and the row recorded are one step for every host on the file.

use super::*;
use crate::policy::operator::HistoryFacts;
use crate::store::policy_counts::{
    self, CountedCall, DecideOnHistory, PolicyCountStore, SESSION_TOTALS_KEPT_MS, Windows,
};
use std::sync::LazyLock;

/// The shared statements in SQLite's placeholders (`?N` for `$N`).
struct Statements {
    count_history: String,
    record_call: String,
    count_in_session: String,
    prune_calls: String,
    prune_session_totals: String,
}

static STATEMENTS: LazyLock<Statements> = LazyLock::new(|| {
    let lite = |sql: &str| sql.replace('$', "?");
    Statements {
        count_history: lite(policy_counts::COUNT_HISTORY),
        record_call: lite(policy_counts::RECORD_CALL),
        count_in_session: lite(policy_counts::COUNT_IN_SESSION),
        prune_calls: lite(policy_counts::PRUNE_CALLS),
        prune_session_totals: lite(policy_counts::PRUNE_SESSION_TOTALS),
    }
});

#[async_trait::async_trait]
impl PolicyCountStore for SqliteStore {
    async fn decide_on_history(
        &self,
        call: &CountedCall<'_>,
        decide: DecideOnHistory<'_>,
    ) -> Result<HistoryFacts, StoreError> {
        let sql = &*STATEMENTS;
        let windows = Windows::ending_at(call.at_ms);
        let run = policy_counts::run_of(call.session, call.connector);
        self.write_tx(|tx| -> Result<_, StoreError> {
            // What no window reads any more.
            tx.prepare_cached(&sql.prune_calls)?
                .execute(params![call.brand, windows.day_after])?;
            tx.prepare_cached(&sql.prune_session_totals)?
                .execute(params![
                    call.brand,
                    call.at_ms.saturating_sub(SESSION_TOTALS_KEPT_MS)
                ])?;
            let columns = tx.prepare_cached(&sql.count_history)?.query_row(
                params![
                    call.session,
                    call.brand,
                    call.tool,
                    call.connector,
                    run,
                    windows.hour_after,
                    windows.day_after
                ],
                |row| {
                    let mut columns = [0i64; 12];
                    for (i, column) in columns.iter_mut().enumerate() {
                        *column = row.get(i)?;
                    }
                    Ok(columns)
                },
            )?;
            let history = policy_counts::history_from_columns(columns);
            if decide(&history) {
                tx.prepare_cached(&sql.record_call)?.execute(params![
                    call.brand,
                    call.session,
                    call.connector,
                    call.tool,
                    call.effect.as_str(),
                    call.at_ms
                ])?;
                tx.prepare_cached(&sql.count_in_session)?.execute(params![
                    call.session,
                    call.brand,
                    call.tool,
                    call.connector,
                    i64::from(call.effect.is_effect()),
                    call.at_ms
                ])?;
            }
            Ok(history)
        })
    }
}
