//! Sessions shared by the fleet in PostgreSQL ([`SessionStore`]).

use super::lease::release;
use super::*;

#[async_trait::async_trait]
impl SessionStore for PgStore {
    /// With several hosts, recovery closes only what hosts whose lease
    /// expired left open; live hosts' approvals, calls and runs stay.
    async fn recover_interrupted(&self, _at_ms: i64) -> Result<Recovered, StoreError> {
        self.recover_lost_hosts()
    }

    async fn release_lease(&self, _at_ms: i64) -> Result<Option<Recovered>, StoreError> {
        if self.shared.released.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let shared = self.shared.clone();
        self.run(async move { release(&shared).await }).await
    }

    fn lease_held(&self) -> bool {
        self.shared.lease_in_hand()
    }

    fn lease_generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    fn host(&self) -> Option<String> {
        Some(self.shared.id().to_string())
    }

    fn invalidations(&self) -> Option<broadcast::Receiver<Invalidation>> {
        Some(self.shared.invalidations.subscribe())
    }

    async fn check(&self) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            client.query_one("SELECT 1", &[]).await?;
            Ok(())
        })
        .await
    }
    async fn session_opened(
        &self,
        id: &str,
        brand: &str,
        view: &serde_json::Value,
        expires_at_ms: i64,
    ) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        let (id, brand, view) = (
            pg_text(id).into_owned(),
            pg_text(brand).into_owned(),
            view.to_string(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .execute(
                    "INSERT INTO sessions (id, host_id, brand, view, expires_at_ms, opened_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                    &[
                        &id,
                        &&*shared.id(),
                        &brand,
                        &view,
                        &expires_at_ms,
                        &crate::store::now_ms(),
                    ],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn session_closed(&self, id: &str) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let changed = tx
                .execute(
                    "UPDATE sessions SET ended_at_ms = COALESCE(ended_at_ms, $2),
                            closed_at_ms = COALESCE(closed_at_ms, $2)
                     WHERE id = $1 AND closed_at_ms IS NULL",
                    &[&id, &crate::store::now_ms()],
                )
                .await?;
            if changed > 0 {
                // Every other host holding it ends it too.
                notify(&tx, &Notice::Invalidate(Invalidation::Session(id.clone()))).await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn shared_session(
        &self,
        id: &str,
    ) -> Result<Option<crate::store::SharedSession>, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .query_opt(
                    &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"),
                    &[&id],
                )
                .await?
                .as_ref()
                .map(shared_session)
                .transpose()
        })
        .await
    }

    async fn shared_sessions(&self) -> Result<Vec<crate::store::SharedSession>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .query(
                    &format!(
                        "SELECT {SESSION_COLUMNS} FROM sessions s
                         WHERE closed_at_ms IS NULL AND expires_at_ms > $1
                         ORDER BY id"
                    ),
                    &[&crate::store::now_ms()],
                )
                .await?
                .iter()
                .map(shared_session)
                .collect()
        })
        .await
    }

    fn shares_sessions(&self) -> bool {
        true
    }

    async fn keep_session(
        &self,
        id: &str,
        record: &crate::store::SessionRecord,
    ) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        let record = serde_json::to_string(record)
            .map_err(|e| StoreError::Corrupt(format!("session record: {e}")))?;
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .execute(
                    "UPDATE sessions SET record = $2 WHERE id = $1",
                    &[&id, &record],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn kept_session(
        &self,
        id: &str,
    ) -> Result<Option<crate::store::KeptSession>, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            match client
                .query_opt(
                    &format!("SELECT {KEPT_COLUMNS} FROM sessions WHERE id = $1"),
                    &[&id, &crate::store::now_ms()],
                )
                .await?
            {
                Some(row) => kept_session(&row),
                None => Ok(None),
            }
        })
        .await
    }

    async fn take_up_session(&self, id: &str) -> Result<bool, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let me = shared.id();
            let previous: Option<String> = tx
                .query_opt(
                    "SELECT host_id FROM sessions WHERE id = $1 AND ended_at_ms IS NULL
                       AND closed_at_ms IS NULL AND expires_at_ms > $2 FOR UPDATE",
                    &[&id, &crate::store::now_ms()],
                )
                .await?
                .map(|row| row.get(0));
            let Some(previous) = previous else {
                return Ok(false);
            };
            if previous != *me {
                tx.execute(
                    "UPDATE sessions SET host_id = $2 WHERE id = $1",
                    &[&id, &&*me],
                )
                .await?;
                // The host that served it lets go when it hears this.
                notify(&tx, &Notice::Invalidate(Invalidation::Session(id.clone()))).await?;
            }
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    async fn session_take_effect(&self, id: &str, max: Option<u32>) -> Result<bool, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        let max = max.map_or(i32::MAX, |m| i32::try_from(m).unwrap_or(i32::MAX));
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .execute(
                    "UPDATE sessions SET effects = effects + 1 WHERE id = $1 AND effects < $2",
                    &[&id, &max],
                )
                .await?
                == 1)
        })
        .await
    }

    async fn session_take_call(&self, id: &str, max: u32) -> Result<bool, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        let max = i32::try_from(max).unwrap_or(i32::MAX);
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .execute(
                    "UPDATE sessions SET calls = calls + 1 WHERE id = $1 AND calls < $2",
                    &[&id, &max],
                )
                .await?
                == 1)
        })
        .await
    }

    async fn session_end_delegation(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.change_session(
            id,
            "UPDATE sessions SET delegation_ended = true WHERE id = $1 AND NOT delegation_ended",
            None,
        ).await? == 1)
    }

    async fn session_count_refusals(
        &self,
        id: &str,
        keys: &[String],
    ) -> Result<Vec<u32>, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        let keys: Vec<String> = keys.iter().map(|k| pg_text(k).into_owned()).collect();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let mut counts = Vec::with_capacity(keys.len());
            for key in &keys {
                let count: i32 = tx
                    .query_one(
                        "INSERT INTO session_refusals (session, consequence, count) VALUES ($1, $2, 1)
                         ON CONFLICT (session, consequence) DO UPDATE SET count = session_refusals.count + 1
                         RETURNING count",
                        &[&id, key],
                    )
                    .await?
                    .get(0);
                counts.push(u32::try_from(count).unwrap_or(0));
            }
            tx.commit().await?;
            Ok(counts)
        }).await
    }

    async fn session_set_paused(&self, id: &str, paused: bool) -> Result<(), StoreError> {
        if paused {
            self.change_session(id, "UPDATE sessions SET paused = true WHERE id = $1", None)
                .await?;
        } else {
            // Resumed: its refusals count afresh on every host.
            self.change_session(
                id,
                "WITH cleared AS (DELETE FROM session_refusals WHERE session = $1)
                 UPDATE sessions SET paused = false WHERE id = $1",
                None,
            )
            .await?;
        }
        Ok(())
    }

    async fn session_withdraw(&self, id: &str, connector: &str) -> Result<(), StoreError> {
        self.change_session(
            id,
            "UPDATE sessions SET withdrawn = (
                 SELECT COALESCE(json_agg(DISTINCT c ORDER BY c), '[]'::json)::text
                 FROM (SELECT json_array_elements_text(withdrawn::json) AS c UNION SELECT $2::text) w)
             WHERE id = $1",
            Some(connector.to_string()),
        ).await?;
        Ok(())
    }

    async fn request_session_end(
        &self,
        id: &str,
    ) -> Result<Option<crate::store::SharedSession>, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let row = tx
                .query_opt(
                    &format!(
                        "UPDATE sessions SET ended_at_ms = COALESCE(ended_at_ms, $2)
                         WHERE id = $1 RETURNING {SESSION_COLUMNS}"
                    ),
                    &[&id, &crate::store::now_ms()],
                )
                .await?;
            if row.is_some() {
                notify(&tx, &Notice::Invalidate(Invalidation::Session(id.clone()))).await?;
            }
            tx.commit().await?;
            row.as_ref().map(shared_session).transpose()
        })
        .await
    }
}

const SESSION_COLUMNS: &str =
    "id, host_id, view, ended_at_ms IS NOT NULL, closed_at_ms IS NOT NULL";

const KEPT_COLUMNS: &str =
    "id, brand, host_id, record, paused, withdrawn, effects, delegation_ended,
     ended_at_ms IS NOT NULL OR closed_at_ms IS NOT NULL OR expires_at_ms <= $2, calls";

fn kept_session(
    row: &tokio_postgres::Row,
) -> Result<Option<crate::store::KeptSession>, StoreError> {
    let Some(record): Option<String> = row.get(3) else {
        return Ok(None);
    };
    let withdrawn: String = row.get(5);
    let effects: i32 = row.get(6);
    Ok(Some(crate::store::KeptSession {
        id: row.get(0),
        brand: row.get(1),
        host_id: row.get(2),
        record: serde_json::from_str(&record)
            .map_err(|e| StoreError::Corrupt(format!("stored session record: {e}")))?,
        state: crate::store::SharedStateNow {
            paused: row.get(4),
            withdrawn: serde_json::from_str(&withdrawn)
                .map_err(|e| StoreError::Corrupt(format!("stored withdrawals: {e}")))?,
            effects: u32::try_from(effects).unwrap_or(0),
            delegation_ended: row.get(7),
            calls: u32::try_from(row.get::<_, i32>(9)).unwrap_or(0),
        },
        ended: row.get(8),
    }))
}

impl PgStore {
    /// Runs `sql` on session `id` and rings every host about it (so a host
    /// serving it takes in what changed).
    async fn change_session(
        &self,
        id: &str,
        sql: &'static str,
        more: Option<String>,
    ) -> Result<u64, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let changed = match &more {
                Some(more) => tx.execute(sql, &[&id, more]).await?,
                None => tx.execute(sql, &[&id]).await?,
            };
            notify(&tx, &Notice::Invalidate(Invalidation::Session(id.clone()))).await?;
            tx.commit().await?;
            Ok(changed)
        })
        .await
    }
}

fn shared_session(row: &tokio_postgres::Row) -> Result<crate::store::SharedSession, StoreError> {
    let view: String = row.get(2);
    Ok(crate::store::SharedSession {
        id: row.get(0),
        host_id: row.get(1),
        view: serde_json::from_str(&view)
            .map_err(|e| StoreError::Corrupt(format!("stored session view: {e}")))?,
        ended: row.get(3),
        closed: row.get(4),
    })
}
