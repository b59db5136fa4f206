//! Each host's lease on the database clock, and the recovery of a host
//! whose lease ended: what it held is closed by whoever finds it lost.

use super::ledger::pg_end_run;
use super::notify::Ring;
use super::*;

/// Renews this host's lease, and recovers any host whose lease expired.
pub(super) async fn lease_loop(shared: Arc<Shared>) {
    let every = shared.lease / 3;
    // Since when renewals fail: the store unreachable is logged once as it
    // starts and once as it ends, not at every turn.
    let mut failing_since: Option<std::time::Instant> = None;
    loop {
        tokio::time::sleep(every).await;
        if shared.released.load(Ordering::SeqCst) {
            return;
        }
        let renewed = renew(&shared).await;
        if renewed.is_ok()
            && let Some(since) = failing_since.take()
        {
            tracing::warn!(
                host = %shared.id(),
                away_secs = since.elapsed().as_secs(),
                "the database answers again: lease renewal works"
            );
        }
        match renewed {
            Ok(true) => shared.lease_held.store(true, Ordering::SeqCst),
            // Released at a clean stop meanwhile: the process is ending.
            Ok(false) if shared.released.load(Ordering::SeqCst) => return,
            Ok(false) => {
                // Another host recovered this one: nothing it held may do
                // anything more; it comes back as a new host.
                shared.lease_held.store(false, Ordering::SeqCst);
                if !shared.fenced.swap(true, Ordering::SeqCst) {
                    tracing::error!(host = %shared.id(), "this host's lease was lost and its calls recovered by another host; what it served is ended");
                }
                if let Err(e) = rejoin(&shared).await {
                    tracing::warn!(error = %e, "rejoining the fleet failed; trying again at the next renewal");
                }
            }
            Err(e) => {
                shared.lease_held.store(false, Ordering::SeqCst);
                if failing_since.is_none() {
                    failing_since = Some(std::time::Instant::now());
                    tracing::error!(host = %shared.id(), error = %e, "the database does not answer: this host cannot renew its lease, and starts no call until it can");
                } else {
                    tracing::debug!(error = %e, "lease renewal failed again");
                }
            }
        }
        if !shared.fenced.load(Ordering::SeqCst) {
            if let Err(e) = recover_lost(&shared).await {
                tracing::warn!(error = %e, "recovering lost hosts failed");
            }
            if let Err(e) = forget_old_hosts(&shared).await {
                tracing::warn!(error = %e, "forgetting long-recovered hosts failed");
            }
        }
    }
}

/// Hosts recovered a day ago and their closed sessions are of no more use
/// (the trace keeps their host ids as text).
async fn forget_old_hosts(shared: &Shared) -> Result<(), StoreError> {
    let client = shared.pool.get().await?;
    client
        .batch_execute(
            "DELETE FROM sessions WHERE closed_at_ms IS NOT NULL
                 AND closed_at_ms < (extract(epoch FROM now()) * 1000)::bigint - 86400000;
             DELETE FROM session_refusals r WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = r.session);
             DELETE FROM hosts WHERE recovered_at < now() - interval '1 day';",
        )
        .await?;
    // A session's run ends with the session, whichever host served it last
    // (one that ended or expired where no host held it): the day then
    // counts what the run recorded, and its open holds in full.
    let ended: Vec<String> = client
        .query(
            "SELECT r.run_id FROM runs r WHERE NOT r.ended AND NOT EXISTS (
                 SELECT 1 FROM sessions s WHERE s.id = split_part(r.run_id, ':', 1)
                   AND s.closed_at_ms IS NULL AND s.ended_at_ms IS NULL
                   AND s.expires_at_ms > (extract(epoch FROM now()) * 1000)::bigint)
             AND EXISTS (SELECT 1 FROM sessions s WHERE s.id = split_part(r.run_id, ':', 1))",
            &[],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    drop(client);
    for run_id in ended {
        pg_end_run(shared, run_id).await?;
    }
    Ok(())
}

/// Renews the lease; `false` if another host recovered this one. The
/// deadline on this host's clock counts from before the request was sent,
/// so it never ends later than the database's.
pub(super) async fn renew(shared: &Shared) -> Result<bool, StoreError> {
    let sent = std::time::Instant::now();
    let client = shared.pool.get().await?;
    let renewed = client
        .query_opt(
            "UPDATE hosts SET lease_until = now() + make_interval(secs => $2)
             WHERE host_id = $1 AND recovered_by IS NULL RETURNING 1",
            &[&&*shared.id(), &shared.lease.as_secs_f64()],
        )
        .await?;
    if renewed.is_some() {
        *shared.lease_deadline.lock() = lease_deadline(sent, shared.lease);
    }
    Ok(renewed.is_some())
}

/// After another host recovered this one (everything it held was closed
/// then), it rejoins under a new identity with a fresh lease: sessions it
/// opened before stay refused (their generation is gone), new ones are
/// served.
async fn rejoin(shared: &Shared) -> Result<Arc<str>, StoreError> {
    let fresh: Arc<str> = new_host_id().into();
    let sent = std::time::Instant::now();
    let client = shared.pool.get().await?;
    client
        .execute(
            "INSERT INTO hosts (host_id, lease_until) VALUES ($1, now() + make_interval(secs => $2))",
            &[&&*fresh, &shared.lease.as_secs_f64()],
        )
        .await?;
    let old = std::mem::replace(&mut *shared.host_id.write(), fresh.clone());
    shared.generation.fetch_add(1, Ordering::SeqCst);
    *shared.lease_deadline.lock() = lease_deadline(sent, shared.lease);
    shared.fenced.store(false, Ordering::SeqCst);
    shared.lease_held.store(true, Ordering::SeqCst);
    shared.writer_metrics.rejoined();
    tracing::warn!(old = %old, new = %fresh, "this host was recovered by another while it could not reach the database or was stopped; it rejoined under a new identity, and the sessions it served before stay ended");
    // Every cache and waiter reads the store again.
    let _ = shared.invalidations.send(Invalidation::All);
    shared.broker.ring_all();
    Ok(fresh)
}

/// In one transaction: claims every host whose lease expired (the row lock
/// waits for a trace write that holds the fence), ends its approvals that
/// could still be used, marks its open calls `interrupted`, ends its live
/// runs, and rings every waiter on every host. A host that released its
/// lease at a clean stop is not among them: it is never counted as lost.
pub(super) async fn recover_lost(shared: &Shared) -> Result<Recovered, StoreError> {
    let mut client = shared.pool.get().await?;
    let tx = client.transaction().await?;
    let dead: Vec<String> = tx
        .query(
            "UPDATE hosts SET recovered_by = $1, recovered_at = now()
             WHERE lease_until < now() AND recovered_by IS NULL AND host_id <> $1 RETURNING host_id",
            &[&&*shared.id()],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    if dead.is_empty() {
        tx.commit().await?;
        return Ok(Recovered::default());
    }
    let recovered = close_hosts(
        &tx,
        &dead,
        &shared.id(),
        LOST_HOST_REVOKER,
        "the host serving the call was lost before the call finished",
    )
    .await?;
    tx.commit().await?;
    shared.broker.ring_all();
    shared.writer_metrics.recovered_hosts(dead.len());
    tracing::warn!(hosts = ?dead, approvals_revoked = recovered.approvals_revoked, calls = recovered.calls_interrupted, calls_maybe_run = recovered.calls_maybe_run, "recovered lost hosts");
    Ok(recovered)
}

/// At a clean stop: this host gives up its lease (its row marked as
/// recovered by itself, so no sweep claims or counts it, and every later
/// trace write of it is fenced) and closes, in the same transaction, what
/// it still holds as a recovery would, approvals ending by
/// `host_shutdown`. `None` if another host recovered it first.
pub(super) async fn release(shared: &Shared) -> Result<Option<Recovered>, StoreError> {
    // From here the lease keeper neither renews, sweeps nor rejoins: a
    // renewal that finds the row released must not make a new host.
    shared.released.store(true, Ordering::SeqCst);
    let me = shared.id();
    let mut client = shared.pool.get().await?;
    let tx = client.transaction().await?;
    let mine = tx
        .query_opt(
            "UPDATE hosts SET recovered_by = $1, recovered_at = now(), lease_until = now()
             WHERE host_id = $1 AND recovered_by IS NULL RETURNING 1",
            &[&&*me],
        )
        .await?;
    if mine.is_none() {
        tx.commit().await?;
        return Ok(None);
    }
    let closed = close_hosts(
        &tx,
        &[me.to_string()],
        &me,
        &crate::policy::Rule::HostShutdown.name(),
        "the host stopped before the call finished",
    )
    .await?;
    tx.commit().await?;
    shared.fenced.store(true, Ordering::SeqCst);
    shared.lease_held.store(false, Ordering::SeqCst);
    shared.broker.ring_all();
    Ok(Some(closed))
}

/// Closes what `hosts` left open, inside `tx`, with rows written as `me`:
/// their approvals that could still be used (pending, or approved and
/// unused) revoked by `by`, each with a `decided` row on its call; each of
/// their calls without an ending state marked `interrupted` once, saying
/// how far it got by its states (never by row order: a row the store took
/// late may follow the call's `result`); their runs ended where the fleet
/// no longer serves the session; every waiter rung.
async fn close_hosts(
    tx: &tokio_postgres::Transaction<'_>,
    hosts: &[String],
    me: &str,
    by: &str,
    reason: &str,
) -> Result<Recovered, StoreError> {
    let at_ms = crate::store::now_ms();
    // The calls first: the `decided` rows written below are no progress.
    let open = tx
        .query(
            &format!(
                "WITH mine AS (SELECT DISTINCT session, call_id FROM trace
                               WHERE host_id = ANY($1) AND call_id IS NOT NULL
                                 AND state IN ('requested', 'allowed')),
                      calls AS (SELECT t.session, t.call_id FROM trace t
                                JOIN mine m ON t.session = m.session AND t.call_id = m.call_id
                                GROUP BY t.session, t.call_id
                                HAVING NOT bool_or(t.state IN {ends})),
                      ranked AS (SELECT t.seq, t.session, t.brand, t.call_id, t.tool, t.state, t.rule,
                                        row_number() OVER (PARTITION BY t.session, t.call_id
                                                           ORDER BY {progress} DESC, t.seq DESC) AS n
                                 FROM trace t JOIN calls c ON t.session = c.session AND t.call_id = c.call_id)
                 SELECT session, brand, call_id, tool, state, rule FROM ranked WHERE n = 1 ORDER BY seq",
                ends = crate::store::CALL_ENDS,
                progress = crate::store::CALL_PROGRESS,
            ),
            &[&hosts],
        )
        .await?;
    let ended: Vec<crate::store::EndedApproval> = tx
        .query(
            "WITH open AS (SELECT id, state, decided_by FROM approvals
                           WHERE host_id = ANY($1) AND NOT used AND state IN ('pending', 'approved')
                           FOR UPDATE)
             UPDATE approvals a SET state = 'revoked', decided_by = $2, decided_at_ms = $3,
                    args_nonce = NULL, args_sealed = NULL
             FROM open WHERE a.id = open.id AND NOT a.used
             RETURNING a.id, a.session, a.tool, open.state, open.decided_by, a.requested_at_ms",
            &[&hosts, &by, &at_ms],
        )
        .await?
        .iter()
        .map(|row| crate::store::EndedApproval {
            id: row.get(0),
            session: row.get(1),
            tool: row.get(2),
            was: row.get(3),
            decided_by: row.get(4),
            requested_at_ms: row.get(5),
        })
        .collect();
    let insert = tx
        .prepare(
            "INSERT INTO trace (host_id, session, brand, call_id, tool, state, rule, detail, at_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .await?;
    if !ended.is_empty() {
        // The call that asked for each, for its `decided` row; else the
        // session's brand alone.
        let sessions: Vec<&str> = ended.iter().map(|a| a.session.as_str()).collect();
        let asked = crate::store::asked_by(
            tx.query(
                "SELECT brand, call_id, detail FROM trace
                 WHERE session = ANY($1) AND state = 'requested' AND rule = 'approval_requested'",
                &[&sessions],
            )
            .await?
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2))),
        );
        for approval in &ended {
            let found = match asked.get(&approval.id) {
                Some(found) => Some(found.clone()),
                None => tx
                    .query_opt(
                        "SELECT brand FROM sessions WHERE id = $1",
                        &[&approval.session],
                    )
                    .await?
                    .map(|row| (row.get(0), None)),
            };
            let Some((brand, call_id)) = found else {
                continue;
            };
            tx.execute(
                &insert,
                &[
                    &me,
                    &approval.session,
                    &brand,
                    &call_id,
                    &approval.tool,
                    &TraceState::Decided.as_str(),
                    &"revoked",
                    &approval.detail(by, at_ms),
                    &at_ms,
                ],
            )
            .await?;
        }
    }
    let mut calls_maybe_run = 0;
    for row in &open {
        let (session, brand, call_id, tool, last_state, last_rule): (
            String,
            String,
            String,
            Option<String>,
            String,
            Option<String>,
        ) = (
            row.get(0),
            row.get(1),
            row.get(2),
            row.get(3),
            row.get(4),
            row.get(5),
        );
        let (detail, may_have_run) =
            crate::store::interrupted_detail(reason, &last_state, last_rule.as_deref());
        calls_maybe_run += usize::from(may_have_run);
        tx.execute(
            &insert,
            &[
                &me,
                &session,
                &brand,
                &call_id,
                &tool,
                &TraceState::Interrupted.as_str(),
                &None::<&str>,
                &detail.to_string(),
                &at_ms,
            ],
        )
        .await?;
    }
    // Their runs go on with the sessions the fleet still serves. What their
    // interrupted calls held and never settled stays held (the run can
    // spend less, never more) until the run ends, when it is charged.
    tx.execute(
        "UPDATE runs r SET ended = true, ended_at_ms = $2 WHERE host_id = ANY($1) AND NOT ended
           AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = split_part(r.run_id, ':', 1)
             AND s.record IS NOT NULL AND s.closed_at_ms IS NULL AND s.ended_at_ms IS NULL
             AND s.expires_at_ms > $2)",
        &[&hosts, &at_ms],
    )
    .await?;
    // Their sessions stay live: any other host takes one up at its next
    // request (only their calls in flight went with them).
    notify(tx, &Notice::Ring(Ring::All)).await?;
    Ok(Recovered {
        approvals_revoked: ended.len(),
        calls_interrupted: open.len(),
        calls_maybe_run,
    })
}
