//! The trace in PostgreSQL ([`TraceStore`]): its writer, fenced by this
//! host's lease, and its pages, which never skip a row committed late.

use super::*;

/// The trace writer: one connection of its own, groups of batches in one
/// transaction that first takes the fence (this host's row, live and not
/// recovered, `FOR SHARE`). Recovery updates that row, so the two exclude
/// each other: no row of this host commits once another host recovered it.
pub(super) async fn write_loop(
    shared: Arc<Shared>,
    config: Config,
    tls: Tls,
    mut batches: mpsc::UnboundedReceiver<Batch>,
) {
    let mut client: Option<Client> = None;
    while let Some(first) = batches.recv().await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match batches.try_recv() {
                Ok(batch) => group.push(batch),
                Err(_) => break,
            }
        }
        if shared.fenced.load(Ordering::SeqCst) {
            group
                .into_iter()
                .for_each(|b| drop(b.reply.send(Err(StoreError::Fenced))));
            continue;
        }
        if client.as_ref().is_none_or(|c| c.is_closed()) {
            match connect(
                &config,
                &tls,
                &format!("scout-trace-writer {}", shared.id()),
                None,
            )
            .await
            {
                Ok(c) => client = Some(c),
                Err(e) => {
                    let e = Arc::new(e);
                    group
                        .into_iter()
                        .for_each(|b| drop(b.reply.send(Err(StoreError::TraceWriter(e.clone())))));
                    continue;
                }
            }
        }
        let Some(conn) = client.as_mut() else {
            continue;
        };
        let all: Vec<&Row> = group.iter().flat_map(|b| b.rows.iter()).collect();
        let started = std::time::Instant::now();
        match commit_rows(conn, &shared, &all).await {
            Ok(()) => {
                shared.commits.fetch_add(1, Ordering::SeqCst);
                shared
                    .writer_metrics
                    .committed(group.len(), started.elapsed());
                group.into_iter().for_each(|b| drop(b.reply.send(Ok(()))));
            }
            Err(StoreError::Fenced) => {
                group
                    .into_iter()
                    .for_each(|b| drop(b.reply.send(Err(StoreError::Fenced))));
            }
            Err(e) if group.len() == 1 => {
                if let Some(batch) = group.pop() {
                    let _ = batch.reply.send(Err(e));
                }
            }
            Err(_) => {
                // One batch may be what failed: the others keep their own outcome.
                for batch in group {
                    let rows: Vec<&Row> = batch.rows.iter().collect();
                    let outcome = commit_rows(conn, &shared, &rows).await;
                    if outcome.is_ok() {
                        shared.commits.fetch_add(1, Ordering::SeqCst);
                    }
                    let _ = batch.reply.send(outcome);
                }
            }
        }
    }
}

async fn commit_rows(
    client: &mut Client,
    shared: &Shared,
    rows: &[&Row],
) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    // One identity for the fence and the rows: the host may rejoin under
    // a new one meanwhile.
    let me = shared.id();
    // The fence: this host's row, share-locked until the commit, so a
    // recovery (which updates it) waits for these rows and then sees them.
    let row = tx
        .query_opt(
            "SELECT recovered_by IS NOT NULL, lease_until > now() FROM hosts WHERE host_id = $1 FOR SHARE",
            &[&&*me],
        )
        .await?;
    match row.map(|r| (r.get::<_, bool>(0), r.get::<_, bool>(1))) {
        // Recovered by another host (or its row gone): for good, unless
        // the host has rejoined under a new identity since.
        None | Some((true, _)) => {
            if *shared.id() == *me {
                shared.fenced.store(true, Ordering::SeqCst);
            }
            return Err(StoreError::Fenced);
        }
        // The lease lapsed (the database was out of reach longer than the
        // lease): nothing is written until a renewal holds it again.
        Some((false, false)) => return Err(StoreError::LeaseLapsed),
        Some((false, true)) => {}
    }
    let sessions: Vec<&str> = rows.iter().map(|r| r.session.as_str()).collect();
    let brands: Vec<&str> = rows.iter().map(|r| r.brand.as_str()).collect();
    let calls: Vec<Option<&str>> = rows.iter().map(|r| r.call_id.as_deref()).collect();
    let tools: Vec<Option<&str>> = rows.iter().map(|r| r.tool.as_deref()).collect();
    let states: Vec<&str> = rows.iter().map(|r| r.state).collect();
    let rules: Vec<Option<&str>> = rows.iter().map(|r| r.rule.as_deref()).collect();
    let details: Vec<&str> = rows.iter().map(|r| r.detail.as_str()).collect();
    let at: Vec<i64> = rows.iter().map(|r| r.at_ms).collect();
    let trace_ids: Vec<Option<&str>> = rows.iter().map(|r| r.trace_id.as_deref()).collect();
    let span_ids: Vec<Option<&str>> = rows.iter().map(|r| r.span_id.as_deref()).collect();
    tx.execute(
        "INSERT INTO trace (host_id, session, brand, call_id, tool, state, rule, detail, at_ms, trace_id, span_id)
         SELECT $1, s, b, c, t, st, r, d, a, ti, si
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int8[], $10::text[], $11::text[])
              WITH ORDINALITY AS u(s, b, c, t, st, r, d, a, ti, si, ord)
         ORDER BY ord",
        &[&&*me, &sessions, &brands, &calls, &tools, &states, &rules, &details, &at, &trace_ids, &span_ids],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

fn trace_event(row: &tokio_postgres::Row) -> Result<(i64, TraceEvent), StoreError> {
    let state: String = row.get(5);
    let detail: String = row.get(7);
    let state = TraceState::parse(&state)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown trace state {state:?}")))?;
    let detail = serde_json::from_str(&detail)
        .map_err(|e| StoreError::Corrupt(format!("trace detail is not JSON: {e}")))?;
    Ok((
        row.get(0),
        TraceEvent {
            session: row.get(1),
            brand: row.get(2),
            call_id: row.get(3),
            tool: row.get(4),
            state,
            rule: row.get(6),
            detail,
            at_ms: row.get(8),
            origin: crate::store::Origin {
                host: row.get(9),
                trace_id: row.get(10),
                span_id: row.get(11),
            },
        },
    ))
}

const TRACE_COLUMNS: &str = crate::store::statements::TRACE_COLUMNS;

/// Where a trace page stops. An identity is taken at insert, not at
/// commit: a page that read past a row another host has not committed yet
/// would skip it for good. So a page stops below the oldest transaction
/// that was running at its snapshot and may hold a trace row: every one of
/// them but those still running now without a write lock on this
/// database's `trace` (locks are held to the end of a transaction, and an
/// identity is taken under that lock, so those never took one before the
/// snapshot; one that ended since is counted, to be safe). Not the
/// cluster's oldest transaction: another database's, a `pg_dump`'s or an
/// idle session's would hold every page back for as long as it stays open.
/// The xid8 of the snapshot is compared with `pg_locks`' 32-bit xids
/// modulo 2^32.
const TRACE_HORIZON: &str = "WITH snap AS MATERIALIZED (SELECT pg_current_snapshot() AS s),
  locks AS MATERIALIZED (SELECT locktype, mode, granted, pid, relation, database, transactionid FROM pg_locks),
  writers AS MATERIALIZED (
    SELECT DISTINCT pid FROM locks
    WHERE locktype = 'relation' AND relation = 'trace'::regclass AND mode = 'RowExclusiveLock'
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())),
  quiet AS MATERIALIZED (
    SELECT transactionid::text::int8 AS xid32 FROM locks
    WHERE locktype = 'transactionid' AND mode = 'ExclusiveLock' AND granted
      AND pid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM writers w WHERE w.pid IS NOT DISTINCT FROM locks.pid)
      AND NOT EXISTS (SELECT 1 FROM writers w WHERE w.pid IS NULL)),
  horizon AS (
    SELECT COALESCE(
      (SELECT min(x) FROM pg_snapshot_xip(snap.s) AS x
       WHERE (x::text::numeric % 4294967296)::int8 NOT IN (SELECT xid32 FROM quiet)),
      pg_snapshot_xmax(snap.s)) AS h
    FROM snap)";

impl PgStore {
    async fn trace_rows(
        &self,
        column: &'static str,
        value: &str,
        after: i64,
        limit: i64,
        horizon: bool,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let shared = self.shared.clone();
        let value = value.to_string();
        self.run(async move {
            let sql = if horizon {
                format!(
                    "{TRACE_HORIZON} SELECT {TRACE_COLUMNS} FROM trace, horizon WHERE {column} = $1 AND seq > $2 AND txid < horizon.h ORDER BY seq LIMIT $3"
                )
            } else {
                format!(
                    "SELECT {TRACE_COLUMNS} FROM trace WHERE {column} = $1 AND seq > $2 ORDER BY seq LIMIT $3"
                )
            };
            let client = shared.pool.get().await?;
            let statement = client.prepare_cached(&sql).await?;
            client
                .query(&statement, &[&value, &after, &limit])
                .await?
                .iter()
                .map(trace_event)
                .collect()
        }).await
    }
}

#[async_trait::async_trait]
impl TraceStore for PgStore {
    async fn record(&self, event: &TraceEvent) -> Result<(), StoreError> {
        self.record_all(std::slice::from_ref(event)).await
    }

    /// Handed to the trace writer, and answered once its group commits.
    async fn record_all(&self, events: &[TraceEvent]) -> Result<(), StoreError> {
        let answer = self.enqueue(events)?;
        answer.await.map_err(|_| StoreError::WriterStopped)?
    }

    fn trace_commits(&self) -> u64 {
        self.shared.commits.load(Ordering::SeqCst)
    }

    fn writer_metrics(&self) -> Option<crate::store::WriterMetrics> {
        Some(self.shared.writer_metrics.clone())
    }

    async fn trace_page(
        &self,
        filter: TraceFilter<'_>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        match filter {
            TraceFilter::Session(session) => {
                self.trace_rows("session", session, after, limit, true)
                    .await
            }
            TraceFilter::Brand(brand) => self.trace_rows("brand", brand, after, limit, true).await,
            // `'all' = 'all'`: the same query, every row.
            TraceFilter::All => self.trace_rows("'all'", "all", after, limit, true).await,
        }
    }

    async fn trace_for_session(&self, session: &str) -> Result<Vec<TraceEvent>, StoreError> {
        Ok(self
            .trace_rows("session", session, 0, i64::MAX, false)
            .await?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }

    async fn recent_decisions(&self, limit: usize) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let shared = self.shared.clone();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client
                .prepare_cached(crate::store::statements::RECENT_DECISIONS.pg)
                .await?;
            client
                .query(&statement, &[&limit])
                .await?
                .iter()
                .map(trace_event)
                .collect::<Result<Vec<_>, StoreError>>()
        })
        .await
    }

    async fn recent_requests(
        &self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<TraceEvent>, StoreError> {
        let shared = self.shared.clone();
        let session = session.to_string();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut rows = self
            .run(async move {
                let client = shared.pool.get().await?;
                let statement = client
                    .prepare_cached(crate::store::statements::RECENT_REQUESTS.pg)
                    .await?;
                client
                    .query(&statement, &[&session, &limit])
                    .await?
                    .iter()
                    .map(trace_event)
                    .collect::<Result<Vec<_>, StoreError>>()
            })
            .await?;
        rows.reverse();
        Ok(rows.into_iter().map(|(_, e)| e).collect())
    }

    async fn trace_for_brand(&self, brand: &str) -> Result<Vec<TraceEvent>, StoreError> {
        Ok(self
            .trace_rows("brand", brand, 0, i64::MAX, false)
            .await?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }
}
