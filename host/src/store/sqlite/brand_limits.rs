//! Brand limits in SQLite ([`BrandLimitStore`]): the single writer is the
//! per-brand lock. A session on SQLite lives only in the process that
//! opened it (the store is one host's), so a slot recorded before this
//! process first counted is not live, whatever its row says.

use super::*;
use crate::store::brand_limits::{
    self, BrandLimitStore, BrandLimits, INBOUND_WINDOW_MS, LimitReached, SessionSlot,
};
use std::sync::LazyLock;

/// When this process first counted a brand's sessions: every slot it
/// records is at or after it.
static COUNTING_SINCE_MS: LazyLock<i64> = LazyLock::new(crate::store::now_ms);

#[async_trait::async_trait]
impl BrandLimitStore for SqliteStore {
    async fn admit_session(
        &self,
        slot: &SessionSlot<'_>,
        limits: BrandLimits,
    ) -> Result<Option<LimitReached>, StoreError> {
        let since = *COUNTING_SINCE_MS;
        self.write_tx(|tx| -> Result<_, StoreError> {
            let hour_ago = slot.at_ms - INBOUND_WINDOW_MS;
            // What no count reads any more.
            tx.execute(
                "DELETE FROM brand_session_slots WHERE brand = ?1 AND opened_at_ms < ?2
                   AND (ended_at_ms IS NOT NULL OR expires_at_ms <= ?3 OR opened_at_ms < ?4)",
                params![slot.brand, hour_ago, slot.at_ms, since],
            )?;
            let live: i64 = tx.query_row(
                "SELECT count(*) FROM brand_session_slots WHERE brand = ?1
                   AND ended_at_ms IS NULL AND expires_at_ms > ?2 AND opened_at_ms >= ?3",
                params![slot.brand, slot.at_ms, since],
                |row| row.get(0),
            )?;
            let inbound: Vec<i64> = tx
                .prepare_cached(
                    "SELECT opened_at_ms FROM brand_session_slots WHERE brand = ?1
                       AND inbound = 1 AND opened_at_ms > ?2 ORDER BY opened_at_ms",
                )?
                .query_map(params![slot.brand, hour_ago], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            if let Some(reached) = brand_limits::decide(slot, limits, live, &inbound) {
                return Ok(Some(reached));
            }
            tx.execute(
                "INSERT INTO brand_session_slots (session_id, brand, inbound, opened_at_ms, expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    slot.session_id,
                    slot.brand,
                    slot.inbound,
                    slot.at_ms,
                    slot.expires_at_ms
                ],
            )?;
            Ok(None)
        })
    }

    async fn session_slot_ended(&self, session_id: &str, at_ms: i64) -> Result<(), StoreError> {
        self.write_tx(|tx| -> Result<_, StoreError> {
            tx.execute(
                "UPDATE brand_session_slots SET ended_at_ms = ?2
                   WHERE session_id = ?1 AND ended_at_ms IS NULL",
                params![session_id, at_ms],
            )?;
            Ok(())
        })
    }
}
