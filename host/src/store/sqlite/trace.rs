//! The trace as SQLite keeps it ([`TraceStore`]); the rows themselves are
//! written by [`crate::store::writer`].

use super::*;

/// The columns [`SqliteStore::trace_select`] reads, in its order.
pub(super) const TRACE_COLUMNS: &str = crate::store::statements::TRACE_COLUMNS;

impl SqliteStore {
    fn trace_query(&self, column: &str, value: &str) -> Result<Vec<TraceEvent>, StoreError> {
        Ok(self
            .trace_rows(column, value, 0, i64::MAX)?
            .into_iter()
            .map(|(_, event)| event)
            .collect())
    }

    fn trace_rows(
        &self,
        column: &str,
        value: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let sql = format!(
            "SELECT {TRACE_COLUMNS} FROM trace
             WHERE {column} = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"
        );
        self.trace_select(&sql, params![value, after, limit])
    }

    /// The trace rows `sql` selects (the columns of [`Self::trace_rows`]).
    fn trace_select(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt.query_map(params, |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, Option<String>>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, Option<String>>(6)?,
                row.get::<_, String>(7)?,
                row.get::<_, i64>(8)?,
                crate::store::Origin {
                    host: row.get(9)?,
                    trace_id: row.get(10)?,
                    span_id: row.get(11)?,
                },
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, session, brand, call_id, tool, state, rule, detail, at_ms, origin) = row?;
            let state = TraceState::parse(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("unknown trace state {state:?}")))?;
            let detail = serde_json::from_str(&detail)
                .map_err(|e| StoreError::Corrupt(format!("trace detail is not JSON: {e}")))?;
            out.push((
                seq,
                TraceEvent {
                    session,
                    brand,
                    call_id,
                    tool,
                    state,
                    rule,
                    detail,
                    at_ms,
                    origin,
                },
            ));
        }
        Ok(out)
    }
}

#[async_trait::async_trait]
impl TraceStore for SqliteStore {
    async fn record(&self, event: &TraceEvent) -> Result<(), StoreError> {
        self.record_all(std::slice::from_ref(event)).await
    }

    fn trace_commits(&self) -> u64 {
        self.writer.commits()
    }

    fn writer_metrics(&self) -> Option<crate::store::WriterMetrics> {
        Some(self.writer.metrics())
    }

    /// Handed to the writer thread, and answered once its group commits:
    /// the caller's task waits without holding a runtime worker.
    async fn record_all(&self, events: &[TraceEvent]) -> Result<(), StoreError> {
        self.writer.write(events).await
    }

    async fn trace_page(
        &self,
        filter: TraceFilter<'_>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        crate::store::off_worker(|| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            match filter {
                TraceFilter::Session(session) => self.trace_rows("session", session, after, limit),
                TraceFilter::Brand(brand) => self.trace_rows("brand", brand, after, limit),
                // `'all' = 'all'`: the same query, every row.
                TraceFilter::All => self.trace_rows("'all'", "all", after, limit),
            }
        })
    }

    async fn trace_for_session(&self, session: &str) -> Result<Vec<TraceEvent>, StoreError> {
        crate::store::off_worker(|| self.trace_query("session", session))
    }

    async fn recent_decisions(&self, limit: usize) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        crate::store::off_worker(|| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            self.trace_select(
                crate::store::statements::RECENT_DECISIONS.lite,
                params![limit],
            )
        })
    }

    async fn recent_requests(
        &self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<TraceEvent>, StoreError> {
        crate::store::off_worker(|| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut rows = self.trace_select(
                crate::store::statements::RECENT_REQUESTS.lite,
                params![session, limit],
            )?;
            rows.reverse();
            Ok(rows.into_iter().map(|(_, e)| e).collect())
        })
    }

    async fn trace_for_brand(&self, brand: &str) -> Result<Vec<TraceEvent>, StoreError> {
        crate::store::off_worker(|| self.trace_query("brand", brand))
    }
}
