//! Policy window counts in PostgreSQL ([`PolicyCountStore`]): every host
//! reads a brand's counts, decides and records the allowed call under one
//! advisory transaction lock per brand, so two hosts deciding calls of one
//! brand at once decide them one after the other, each on the counts the
//! other committed.
//!
//! The transaction runs on the store's runtime (as all of this backend's
//! work does) and the decision on the caller's: the counts go to the
//! caller and its verdict comes back over a channel while the transaction
//! holds the lock. A caller that goes away leaves the transaction to roll
//! back, recording nothing.

use super::*;
use crate::policy::operator::HistoryFacts;
use crate::store::policy_counts::{
    self, CountedCall, DecideOnHistory, POLICY_COUNTS_LOCK, PolicyCountStore,
    SESSION_TOTALS_KEPT_MS, Windows,
};

#[async_trait::async_trait]
impl PolicyCountStore for PgStore {
    async fn decide_on_history(
        &self,
        call: &CountedCall<'_>,
        decide: DecideOnHistory<'_>,
    ) -> Result<HistoryFacts, StoreError> {
        let shared = self.shared.clone();
        let (brand, session, connector, tool) = (
            pg_text(call.brand).into_owned(),
            pg_text(call.session).into_owned(),
            pg_text(call.connector).into_owned(),
            pg_text(call.tool).into_owned(),
        );
        let run = policy_counts::run_of(&session, &connector);
        let (effect, is_effect) = (call.effect.as_str(), i64::from(call.effect.is_effect()));
        let at_ms = call.at_ms;
        let windows = Windows::ending_at(at_ms);
        let (history_tx, history_rx) = oneshot::channel::<HistoryFacts>();
        let (verdict_tx, verdict_rx) = oneshot::channel::<bool>();
        let transaction = self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            tx.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&POLICY_COUNTS_LOCK, &brand],
            )
            .await?;
            // What no window reads any more.
            tx.execute(policy_counts::PRUNE_CALLS, &[&brand, &windows.day_after])
                .await?;
            tx.execute(
                policy_counts::PRUNE_SESSION_TOTALS,
                &[&brand, &at_ms.saturating_sub(SESSION_TOTALS_KEPT_MS)],
            )
            .await?;
            let row = tx
                .query_one(
                    policy_counts::COUNT_HISTORY,
                    &[
                        &session,
                        &brand,
                        &tool,
                        &connector,
                        &run,
                        &windows.hour_after,
                        &windows.day_after,
                    ],
                )
                .await?;
            let mut columns = [0i64; 12];
            for (i, column) in columns.iter_mut().enumerate() {
                *column = row.try_get(i)?;
            }
            // The caller decides while the lock is held; gone, it decided
            // nothing and nothing is recorded (the transaction rolls back).
            if history_tx
                .send(policy_counts::history_from_columns(columns))
                .is_err()
            {
                return Ok(());
            }
            let Ok(allowed) = verdict_rx.await else {
                return Ok(());
            };
            if allowed {
                tx.execute(
                    policy_counts::RECORD_CALL,
                    &[&brand, &session, &connector, &tool, &effect, &at_ms],
                )
                .await?;
                tx.execute(
                    policy_counts::COUNT_IN_SESSION,
                    &[&session, &brand, &tool, &connector, &is_effect, &at_ms],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(())
        });
        let decision = async {
            let history = history_rx.await.ok()?;
            let _ = verdict_tx.send(decide(&history));
            Some(history)
        };
        let (committed, history) = futures_util::join!(transaction, decision);
        committed?;
        history.ok_or_else(|| {
            StoreError::Corrupt("the policy counts' transaction ended before the decision".into())
        })
    }
}
