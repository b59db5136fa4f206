//! Sessions in SQLite ([`SessionStore`]): one host, so only recovery at start.

use super::*;

#[async_trait::async_trait]
impl SessionStore for SqliteStore {
    fn host(&self) -> Option<String> {
        Some(self.host_id.clone())
    }

    async fn recover_interrupted(&self, at_ms: i64) -> Result<Recovered, StoreError> {
        let recovered = self.write_tx(|tx| -> Result<_, StoreError> {
            // A call is a (session, call_id) with a `requested` or `allowed`
            // event (session-level events share the call_id "session" and
            // have neither); it is open while none of its events ends it,
            // whatever order they were committed in, and it got as far as
            // its furthest state (not its last row: a row written late, once
            // the store took it, may follow the call's `result`). Read
            // before the `decided` rows below are written.
            let open: Vec<(
                String,
                String,
                String,
                Option<String>,
                String,
                Option<String>,
            )> = {
                let mut stmt = tx.prepare(&format!(
                    "WITH calls AS (SELECT session, call_id FROM trace WHERE call_id IS NOT NULL
                                    GROUP BY session, call_id
                                    HAVING SUM(state IN ('requested', 'allowed')) > 0
                                       AND SUM(state IN {ends}) = 0),
                          ranked AS (SELECT t.seq, t.session, t.brand, t.call_id, t.tool, t.state, t.rule,
                                            ROW_NUMBER() OVER (PARTITION BY t.session, t.call_id
                                                               ORDER BY {progress} DESC, t.seq DESC) AS n
                                     FROM trace t JOIN calls c ON t.session = c.session AND t.call_id = c.call_id)
                     SELECT session, brand, call_id, tool, state, rule FROM ranked WHERE n = 1 ORDER BY seq",
                    ends = crate::store::CALL_ENDS,
                    progress = crate::store::CALL_PROGRESS,
                ))?;
                let rows = stmt.query_map([], |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        row.get(5)?,
                    ))
                })?;
                rows.collect::<Result<Vec<_>, _>>()?
            };
            // Every approval that could still be used: its call died with
            // the process, so nobody may decide or spend it any more.
            let ended: Vec<crate::store::EndedApproval> = {
                let mut stmt = tx.prepare(
                    "SELECT id, session, tool, state, decided_by, requested_at_ms FROM approvals
                     WHERE NOT used AND state IN ('pending', 'approved') ORDER BY id",
                )?;
                let rows = stmt.query_map([], |row| {
                    Ok(crate::store::EndedApproval {
                        id: row.get(0)?,
                        session: row.get(1)?,
                        tool: row.get(2)?,
                        was: row.get(3)?,
                        decided_by: row.get(4)?,
                        requested_at_ms: row.get(5)?,
                    })
                })?;
                rows.collect::<Result<Vec<_>, _>>()?
            };
            tx.execute(
                "UPDATE approvals SET state = 'revoked', decided_by = ?1, decided_at_ms = ?2, args_nonce = NULL, args_sealed = NULL
                 WHERE NOT used AND state IN ('pending', 'approved')",
                params![RESTART_REVOKER, at_ms],
            )?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO trace (session, brand, call_id, tool, state, rule, detail, at_ms, host_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            if !ended.is_empty() {
                // The call that asked for each, for its `decided` row.
                let asked = {
                    let mut stmt = tx.prepare(
                        "SELECT brand, call_id, detail FROM trace
                         WHERE state = 'requested' AND rule = 'approval_requested'
                           AND session IN (SELECT session FROM approvals WHERE decided_at_ms = ?1 AND decided_by = ?2)",
                    )?;
                    let rows = stmt.query_map(params![at_ms, RESTART_REVOKER], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })?;
                    crate::store::asked_by(rows.collect::<Result<Vec<_>, _>>()?)
                };
                for approval in &ended {
                    let Some((brand, call_id)) = asked.get(&approval.id) else {
                        continue;
                    };
                    insert.execute(params![
                        approval.session,
                        brand,
                        call_id,
                        approval.tool,
                        TraceState::Decided.as_str(),
                        "revoked",
                        approval.detail(RESTART_REVOKER, at_ms),
                        at_ms,
                        self.host_id
                    ])?;
                }
            }
            let mut calls_maybe_run = 0;
            for (session, brand, call_id, tool, last_state, last_rule) in &open {
                let (detail, may_have_run) = crate::store::interrupted_detail(
                    "the host stopped before the call finished",
                    last_state,
                    last_rule.as_deref(),
                );
                calls_maybe_run += usize::from(may_have_run);
                insert.execute(params![
                    session,
                    brand,
                    call_id,
                    tool,
                    TraceState::Interrupted.as_str(),
                    None::<&str>,
                    detail.to_string(),
                    at_ms,
                    self.host_id
                ])?;
            }
            Ok(Recovered {
                approvals_revoked: ended.len(),
                calls_interrupted: open.len(),
                calls_maybe_run,
            })
        })?;
        self.broker.ring_all();
        Ok(recovered)
    }
}
