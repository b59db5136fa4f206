//! Approvals in SQLite ([`ApprovalStore`]).

use super::*;
use crate::store::rules;

pub(super) const APPROVAL_COLUMNS: &str = "id, session, tool, args_digest, state, used, decided_by, requested_at_ms, decided_at_ms, decided_actor";

impl SqliteStore {
    pub(super) fn approvals_query(
        &self,
        sql: &str,
        param: &dyn rusqlite::ToSql,
    ) -> Result<Vec<Approval>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt.query_map([param], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, bool>(5)?,
                row.get::<_, Option<String>>(6)?,
                row.get::<_, i64>(7)?,
                row.get::<_, Option<i64>>(8)?,
                row.get::<_, Option<String>>(9)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (
                id,
                session,
                tool,
                args_digest,
                state,
                used,
                decided_by,
                requested_at_ms,
                decided_at_ms,
                decided_actor,
            ) = row?;
            let state = ApprovalState::parse(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("unknown approval state {state:?}")))?;
            out.push(Approval {
                id: ApprovalId(id),
                session,
                tool,
                args_digest,
                state,
                used,
                decided_by,
                decided_actor: decided_actor.and_then(|a| serde_json::from_str(&a).ok()),
                requested_at_ms,
                decided_at_ms,
            });
        }
        Ok(out)
    }
}

/// The session, tool and argument digest approval `id` is for: what its
/// waiters subscribed to.
fn approval_key(conn: &Connection, id: ApprovalId) -> rusqlite::Result<(String, String, String)> {
    conn.query_row(
        "SELECT session, tool, args_digest FROM approvals WHERE id = ?1",
        [id.0],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )
}

#[async_trait::async_trait]
impl ApprovalStore for SqliteStore {
    async fn request_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, StoreError> {
        self.write_tx(|tx| {
            tx.prepare_cached(REQUEST_APPROVAL)
                .map_err(StoreError::from)?
                .execute(params![session, tool, args_digest, crate::store::now_ms()])?;
            let id = tx.last_insert_rowid();
            Ok(ApprovalId(id))
        })
    }

    async fn decide_as(
        &self,
        id: ApprovalId,
        approved: bool,
        by: &str,
        actor: Option<&serde_json::Value>,
    ) -> Result<(), ApprovalError> {
        let actor = actor.map(serde_json::Value::to_string);
        let (session, tool, digest) = self.write_tx(|tx| {
            let state = rules::decided_state(approved);
            let changed = tx
                .prepare_cached(DECIDE_APPROVAL)
                .map_err(StoreError::from)?
                .execute(params![
                    state.as_str(),
                    by,
                    crate::store::now_ms(),
                    id.0,
                    actor
                ])
                .map_err(StoreError::from)?;
            if changed == 1 {
                return Ok(approval_key(tx, id).map_err(StoreError::from)?);
            }
            let exists: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM approvals WHERE id = ?1)",
                    [id.0],
                    |row| row.get(0),
                )
                .map_err(StoreError::from)?;
            Err(rules::not_decided(id, exists))
        })?;
        // Rung once committed, so a woken waiter reads the decision.
        self.broker.ring(&session, &tool, &digest);
        Ok(())
    }

    async fn consume_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, ApprovalError> {
        self.write_tx(|tx| {
            let candidate: Option<i64> = tx
                .query_row(
                    "SELECT id FROM approvals WHERE session = ?1 AND tool = ?2 AND args_digest = ?3
                 AND state = 'approved' AND used = 0 ORDER BY id LIMIT 1",
                    params![session, tool, args_digest],
                    |row| row.get(0),
                )
                .optional()
                .map_err(StoreError::from)?;
            if let Some(id) = candidate {
                let changed = tx
                    .prepare_cached(USE_APPROVAL)
                    .map_err(StoreError::from)?
                    .execute(params![crate::store::now_ms(), id])
                    .map_err(StoreError::from)?;
                if changed == 1 {
                    return Ok(ApprovalId(id));
                }
            }
            // Nothing to spend: say why, from the newest matching request.
            let latest: Option<(String, bool)> = tx
                .query_row(
                    statements::LATEST_APPROVAL_STATE.lite,
                    params![session, tool, args_digest],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()
                .map_err(StoreError::from)?;
            // Spent under the write lock: never an approval approved and
            // unused here, so nothing to try again.
            Err(
                rules::nothing_spent(latest.as_ref().map(|(state, used)| (state.as_str(), *used)))
                    .answer(),
            )
        })
    }

    async fn pending(&self, session: &str) -> Result<Vec<Approval>, StoreError> {
        let sql = format!(
            "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE session = ?1 AND state = 'pending' ORDER BY id"
        );
        self.approvals_query(&sql, &session)
    }

    async fn approval(&self, id: ApprovalId) -> Result<Option<Approval>, StoreError> {
        let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = ?1");
        Ok(self.approvals_query(&sql, &id.0)?.into_iter().next())
    }

    async fn revoke_session_approvals(&self, session: &str) -> Result<usize, StoreError> {
        let changed = self.write_tx(|tx| -> Result<_, StoreError> {
            Ok(tx.execute(
                statements::REVOKE_SESSION_APPROVALS.lite,
                params![crate::store::now_ms(), session],
            )?)
        })?;
        self.broker.ring_session(session);
        Ok(changed)
    }

    async fn revoke_approval(&self, id: ApprovalId, by: &str) -> Result<bool, StoreError> {
        let key = self.write_tx(|tx| -> Result<_, StoreError> {
            let changed = tx.execute(
                "UPDATE approvals SET state = 'revoked', decided_by = ?1, decided_at_ms = ?2,
                    args_nonce = NULL, args_sealed = NULL
             WHERE id = ?3 AND used = 0 AND state IN ('pending', 'approved')",
                params![by, crate::store::now_ms(), id.0],
            )?;
            Ok(if changed == 1 {
                Some(approval_key(tx, id)?)
            } else {
                None
            })
        })?;
        if let Some((session, tool, digest)) = &key {
            self.broker.ring(session, tool, digest);
        }
        Ok(key.is_some())
    }

    fn watch_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> crate::store::ApprovalWatch {
        self.broker.subscribe(session, tool, args_digest)
    }

    async fn request_approval_showing(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
        arguments: &serde_json::Value,
        key: &[u8; 32],
    ) -> Result<ApprovalId, StoreError> {
        let (nonce, sealed) =
            crate::store::seal_arguments(key, session, tool, args_digest, arguments)?;
        self.write_tx(|tx| {
            tx.execute(
                "INSERT INTO approvals (session, tool, args_digest, state, requested_at_ms, args_nonce, args_sealed)
                 VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6)",
                params![session, tool, args_digest, crate::store::now_ms(), nonce, sealed],
            )?;
            Ok(ApprovalId(tx.last_insert_rowid()))
        })
    }

    async fn approval_arguments(
        &self,
        id: ApprovalId,
        key: &[u8; 32],
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let row: Option<(String, String, String, Option<Vec<u8>>, Option<Vec<u8>>)> = self
            .read()
            .query_row(statements::PENDING_APPROVAL_ARGUMENTS.lite, [id.0], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })
            .optional()?;
        Ok(match row {
            Some((session, tool, digest, Some(nonce), Some(sealed))) => {
                crate::store::open_arguments(key, &session, &tool, &digest, &nonce, &sealed)
            }
            _ => None,
        })
    }
}
