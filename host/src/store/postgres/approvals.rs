//! Approvals in PostgreSQL ([`ApprovalStore`]).

use super::notify::Ring;
use super::*;
use crate::store::rules;

pub(super) const APPROVAL_COLUMNS: &str = "id, session, tool, args_digest, state, used, decided_by, requested_at_ms, decided_at_ms, decided_actor";

pub(super) fn approval_row(row: &tokio_postgres::Row) -> Result<Approval, StoreError> {
    let state: String = row.get(4);
    let state = ApprovalState::parse(&state)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown approval state {state:?}")))?;
    Ok(Approval {
        id: ApprovalId(row.get(0)),
        session: row.get(1),
        tool: row.get(2),
        args_digest: row.get(3),
        state,
        used: row.get(5),
        decided_by: row.get(6),
        requested_at_ms: row.get(7),
        decided_at_ms: row.get(8),
        decided_actor: row
            .get::<_, Option<String>>(9)
            .and_then(|a| serde_json::from_str(&a).ok()),
    })
}

impl PgStore {
    async fn approvals_where(
        &self,
        clause: &'static str,
        param: ApprovalParam,
    ) -> Result<Vec<Approval>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            let sql =
                format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE {clause} ORDER BY id");
            let statement = client.prepare_cached(&sql).await?;
            let rows = match &param {
                ApprovalParam::Session(s) => client.query(&statement, &[s]).await?,
                ApprovalParam::Id(id) => client.query(&statement, &[id]).await?,
            };
            rows.iter().map(approval_row).collect()
        })
        .await
    }
}

enum ApprovalParam {
    Session(String),
    Id(i64),
}

#[async_trait::async_trait]
impl ApprovalStore for PgStore {
    async fn request_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, StoreError> {
        let shared = self.shared.clone();
        let (session, tool, digest) = (
            pg_text(session).into_owned(),
            pg_text(tool).into_owned(),
            args_digest.to_string(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client
                .prepare_cached(
                    "INSERT INTO approvals (host_id, session, tool, args_digest, state, requested_at_ms)
                     VALUES ($1, $2, $3, $4, 'pending', $5) RETURNING id",
                )
                .await?;
            let row = client
                .query_one(&statement, &[&&*shared.id(), &session, &tool, &digest, &crate::store::now_ms()])
                .await?;
            Ok(ApprovalId(row.get(0)))
        }).await
    }

    async fn decide_as(
        &self,
        id: ApprovalId,
        approved: bool,
        by: &str,
        actor: Option<&serde_json::Value>,
    ) -> Result<(), ApprovalError> {
        let shared = self.shared.clone();
        let by = pg_text(by).into_owned();
        let actor = actor.map(|a| pg_text(&a.to_string()).into_owned());
        let rung = self
            .run_as(async move {
                let mut client = shared.pool.get().await.map_err(StoreError::from)?;
                let tx = client.transaction().await.map_err(StoreError::from)?;
                let state = rules::decided_state(approved);
                // Only a pending one changes; the arguments shown to the person
                // are erased with the decision.
                let changed = tx
                    .query_opt(
                        "UPDATE approvals SET state = $2, decided_by = $3, decided_at_ms = $4,
                            decided_actor = $5, args_nonce = NULL, args_sealed = NULL
                     WHERE id = $1 AND state = 'pending' RETURNING session, tool, args_digest",
                        &[&id.0, &state.as_str(), &by, &crate::store::now_ms(), &actor],
                    )
                    .await
                    .map_err(StoreError::from)?;
                let Some(row) = changed else {
                    let exists = tx
                        .query_opt("SELECT 1 FROM approvals WHERE id = $1", &[&id.0])
                        .await
                        .map_err(StoreError::from)?
                        .is_some();
                    return Err(rules::not_decided(id, exists));
                };
                let key: (String, String, String) = (row.get(0), row.get(1), row.get(2));
                // The doorbell rings on every host iff the decision commits.
                notify(
                    &tx,
                    &Notice::Ring(Ring::One {
                        session: key.0.clone(),
                        tool: key.1.clone(),
                        digest: key.2.clone(),
                    }),
                )
                .await
                .map_err(StoreError::from)?;
                tx.commit().await.map_err(StoreError::from)?;
                Ok::<_, ApprovalError>(key)
            })
            .await?;
        self.shared.broker.ring(&rung.0, &rung.1, &rung.2);
        Ok(())
    }

    async fn consume_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, ApprovalError> {
        let shared = self.shared.clone();
        let (session, tool, digest) = (
            pg_text(session).into_owned(),
            pg_text(tool).into_owned(),
            args_digest.to_string(),
        );
        self.run_as(async move {
            let mut client = shared.pool.get().await.map_err(StoreError::from)?;
            let tx = client.transaction().await.map_err(StoreError::from)?;
            // Each statement reads what was committed when it began (READ
            // COMMITTED): a decision that commits between the spend and the
            // read of the latest state shows an approval approved and
            // unused, which the next spend takes.
            let mut nothing_spent = rules::NothingSpent::TryAgain;
            for _ in 0..rules::SPEND_ATTEMPTS {
                // FOR UPDATE (not SKIP LOCKED): a concurrent consumer waits
                // for the row, then finds it used and takes the next, or none.
                let spent = tx
                    .query_opt(
                        "WITH c AS (SELECT id FROM approvals
                                    WHERE session = $1 AND tool = $2 AND args_digest = $3 AND state = 'approved' AND NOT used
                                    ORDER BY id LIMIT 1 FOR UPDATE)
                         UPDATE approvals a SET used = true, used_at_ms = $4 FROM c
                         WHERE a.id = c.id AND a.state = 'approved' AND NOT a.used RETURNING a.id",
                        &[&session, &tool, &digest, &crate::store::now_ms()],
                    )
                    .await
                    .map_err(StoreError::from)?;
                if let Some(row) = spent {
                    tx.commit().await.map_err(StoreError::from)?;
                    return Ok(ApprovalId(row.get(0)));
                }
                let latest = tx
                    .query_opt(
                        statements::LATEST_APPROVAL_STATE.pg,
                        &[&session, &tool, &digest],
                    )
                    .await
                    .map_err(StoreError::from)?;
                let latest = latest.map(|row| (row.get::<_, String>(0), row.get::<_, bool>(1)));
                nothing_spent = rules::nothing_spent(
                    latest.as_ref().map(|(state, used)| (state.as_str(), *used)),
                );
                if let rules::NothingSpent::Refused(error) = nothing_spent {
                    return Err(error);
                }
            }
            // Decided again and again meanwhile: read again later.
            Err(nothing_spent.answer())
        }).await
    }

    async fn pending(&self, session: &str) -> Result<Vec<Approval>, StoreError> {
        self.approvals_where(
            "session = $1 AND state = 'pending'",
            ApprovalParam::Session(pg_text(session).into_owned()),
        )
        .await
    }

    async fn approval(&self, id: ApprovalId) -> Result<Option<Approval>, StoreError> {
        Ok(self
            .approvals_where("id = $1", ApprovalParam::Id(id.0))
            .await?
            .into_iter()
            .next())
    }

    async fn revoke_session_approvals(&self, session: &str) -> Result<usize, StoreError> {
        let shared = self.shared.clone();
        let session = pg_text(session).into_owned();
        let (changed, session) = self
            .run(async move {
                let mut client = shared.pool.get().await?;
                let tx = client.transaction().await?;
                let changed = tx
                    .execute(
                        statements::REVOKE_SESSION_APPROVALS.pg,
                        &[&crate::store::now_ms(), &session],
                    )
                    .await?;
                notify(
                    &tx,
                    &Notice::Ring(Ring::Session {
                        session: session.clone(),
                    }),
                )
                .await?;
                tx.commit().await?;
                Ok((changed as usize, session))
            })
            .await?;
        self.shared.broker.ring_session(&session);
        Ok(changed)
    }

    async fn revoke_approval(&self, id: ApprovalId, by: &str) -> Result<bool, StoreError> {
        let shared = self.shared.clone();
        let by = pg_text(by).into_owned();
        let key = self
            .run(async move {
                let mut client = shared.pool.get().await?;
                let tx = client.transaction().await?;
                let row = tx
                .query_opt(
                    "UPDATE approvals SET state = 'revoked', decided_by = $1, decided_at_ms = $2,
                            args_nonce = NULL, args_sealed = NULL
                     WHERE id = $3 AND NOT used AND state IN ('pending', 'approved')
                     RETURNING session, tool, args_digest",
                    &[&by, &crate::store::now_ms(), &id.0],
                )
                .await?;
                let key = row.map(|r| {
                    (
                        r.get::<_, String>(0),
                        r.get::<_, String>(1),
                        r.get::<_, String>(2),
                    )
                });
                if let Some((s, t, d)) = &key {
                    let ring = Ring::One {
                        session: s.clone(),
                        tool: t.clone(),
                        digest: d.clone(),
                    };
                    notify(&tx, &Notice::Ring(ring)).await?;
                }
                tx.commit().await?;
                Ok(key)
            })
            .await?;
        if let Some((s, t, d)) = &key {
            self.shared.broker.ring(s, t, d);
        }
        Ok(key.is_some())
    }

    fn watch_approval(&self, session: &str, tool: &str, args_digest: &str) -> ApprovalWatch {
        self.shared
            .broker
            .subscribe(&pg_text(session), &pg_text(tool), args_digest)
    }
    async fn request_approval_showing(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
        arguments: &serde_json::Value,
        key: &[u8; 32],
    ) -> Result<ApprovalId, StoreError> {
        let shared = self.shared.clone();
        let (session, tool, digest) = (
            pg_text(session).into_owned(),
            pg_text(tool).into_owned(),
            args_digest.to_string(),
        );
        let (nonce, sealed) =
            crate::store::seal_arguments(key, &session, &tool, &digest, arguments)?;
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client
                .prepare_cached(
                    "INSERT INTO approvals (host_id, session, tool, args_digest, state, requested_at_ms, args_nonce, args_sealed)
                     VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7) RETURNING id",
                )
                .await?;
            let row = client
                .query_one(
                    &statement,
                    &[&&*shared.id(), &session, &tool, &digest, &crate::store::now_ms(), &nonce, &sealed],
                )
                .await?;
            Ok(ApprovalId(row.get(0)))
        }).await
    }

    async fn approval_arguments(
        &self,
        id: ApprovalId,
        key: &[u8; 32],
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let shared = self.shared.clone();
        type Sealed = (String, String, String, Option<Vec<u8>>, Option<Vec<u8>>);
        let row: Option<Sealed> = self
            .run(async move {
                let client = shared.pool.get().await?;
                Ok(client
                    .query_opt(statements::PENDING_APPROVAL_ARGUMENTS.pg, &[&id.0])
                    .await?
                    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))))
            })
            .await?;
        Ok(match row {
            Some((session, tool, digest, Some(nonce), Some(sealed))) => {
                crate::store::open_arguments(key, &session, &tool, &digest, &nonce, &sealed)
            }
            _ => None,
        })
    }
}
