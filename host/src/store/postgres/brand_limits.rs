//! Brand limits in PostgreSQL ([`BrandLimitStore`]): every host counts and
//! records a brand's session opens under one advisory transaction lock per
//! brand, so two hosts opening sessions for it at once admit exactly as
//! many as its limits hold. A session is live while its slot has not ended
//! nor expired and the fleet's `sessions` row (written once the open
//! completes) says it is neither closed nor ended; a slot whose open never
//! wrote that row (its host died mid-open) counts only for
//! [`UNCONFIRMED_SLOT_MS`].

use super::*;
use crate::store::brand_limits::{
    self, BrandLimitStore, BrandLimits, INBOUND_WINDOW_MS, LimitReached, SessionSlot,
    UNCONFIRMED_SLOT_MS,
};

/// The first key of the per-brand advisory lock (the second is the brand's
/// `hashtext`): apart from every other lock the hosts take.
const BRAND_LIMITS_LOCK: i32 = 0x5C07_0011;

#[async_trait::async_trait]
impl BrandLimitStore for PgStore {
    async fn admit_session(
        &self,
        slot: &SessionSlot<'_>,
        limits: BrandLimits,
    ) -> Result<Option<LimitReached>, StoreError> {
        let shared = self.shared.clone();
        let (id, brand) = (
            pg_text(slot.session_id).into_owned(),
            pg_text(slot.brand).into_owned(),
        );
        let (inbound, at_ms, expires_at_ms) = (slot.inbound, slot.at_ms, slot.expires_at_ms);
        let (hour_ago, unconfirmed_since) =
            (at_ms - INBOUND_WINDOW_MS, at_ms - UNCONFIRMED_SLOT_MS);
        let counted = self
            .run(async move {
                let mut client = shared.pool.get().await?;
                let tx = client.transaction().await?;
                tx.execute(
                    "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                    &[&BRAND_LIMITS_LOCK, &brand],
                )
                .await?;
                tx.execute(
                    "DELETE FROM brand_session_slots WHERE brand = $1 AND opened_at_ms < $2
                       AND (ended_at_ms IS NOT NULL OR expires_at_ms <= $3)",
                    &[&brand, &hour_ago, &at_ms],
                )
                .await?;
                let live: i64 = tx
                    .query_one(
                        "SELECT count(*) FROM brand_session_slots o
                          WHERE o.brand = $1 AND o.ended_at_ms IS NULL AND o.expires_at_ms > $2
                            AND CASE WHEN EXISTS (SELECT 1 FROM sessions s WHERE s.id = o.session_id)
                                THEN EXISTS (SELECT 1 FROM sessions s WHERE s.id = o.session_id
                                               AND s.closed_at_ms IS NULL AND s.ended_at_ms IS NULL)
                                ELSE o.opened_at_ms > $3 END",
                        &[&brand, &at_ms, &unconfirmed_since],
                    )
                    .await?
                    .get(0);
                let inbound_opened: Vec<i64> = tx
                    .query(
                        "SELECT opened_at_ms FROM brand_session_slots
                          WHERE brand = $1 AND inbound AND opened_at_ms > $2 ORDER BY opened_at_ms",
                        &[&brand, &hour_ago],
                    )
                    .await?
                    .iter()
                    .map(|row| row.get(0))
                    .collect();
                let slot = SessionSlot {
                    session_id: &id,
                    brand: &brand,
                    inbound,
                    at_ms,
                    expires_at_ms,
                };
                if let Some(reached) = brand_limits::decide(&slot, limits, live, &inbound_opened) {
                    return Ok(Some(reached));
                }
                tx.execute(
                    "INSERT INTO brand_session_slots (session_id, brand, inbound, opened_at_ms, expires_at_ms)
                     VALUES ($1, $2, $3, $4, $5)",
                    &[&id, &brand, &inbound, &at_ms, &expires_at_ms],
                )
                .await?;
                tx.commit().await?;
                Ok(None)
            })
            .await?;
        Ok(counted)
    }

    async fn session_slot_ended(&self, session_id: &str, at_ms: i64) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(session_id).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .execute(
                    "UPDATE brand_session_slots SET ended_at_ms = $2
                       WHERE session_id = $1 AND ended_at_ms IS NULL",
                    &[&id, &at_ms],
                )
                .await?;
            Ok(())
        })
        .await
    }
}
