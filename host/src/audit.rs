//! The audit export: every trace row after a cursor, oldest first, as JSON
//! lines a SIEM takes. A row is exactly what the trace holds (its secrets
//! were scrubbed before it was written) plus its sequence number, which is
//! the cursor: resume with the last one seen and nothing is skipped or
//! repeated (on PostgreSQL a page stops below any transaction still open).

use crate::store::{StoreError, TraceEvent, TraceFilter, TraceStore};
use serde::Serialize;

/// Rows read from the store per query.
pub const EXPORT_PAGE: usize = 1000;

/// One exported row: the trace row, its `seq`, and its `at_ms` as RFC 3339.
#[derive(Serialize)]
struct Row<'a> {
    seq: i64,
    #[serde(flatten)]
    event: &'a TraceEvent,
    time: String,
}

/// The JSON line of row `seq` (no newline).
pub fn line(seq: i64, event: &TraceEvent) -> String {
    // A trace event is plain data: serialising it cannot fail.
    serde_json::to_string(&Row {
        seq,
        event,
        time: crate::dates::rfc3339_ms(event.at_ms),
    })
    .unwrap_or_default()
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exported {
    pub rows: usize,
    /// Where to resume: the last row's sequence number (`since` if none).
    pub cursor: i64,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
}

/// Writes every row after `since` (at most `limit`) to `out`, one JSON line
/// each, as stored (a decision's arguments sealed).
pub fn export(
    store: &dyn TraceStore,
    since: i64,
    limit: Option<usize>,
    out: &mut dyn std::io::Write,
) -> Result<Exported, ExportError> {
    export_shown(store, since, limit, out, &|_| {})
}

/// [`export`], each row passed through `shape` first (the admin API opens
/// a decision's sealed arguments for a caller who may read them, and
/// leaves them out for anyone else).
pub fn export_shown(
    store: &dyn TraceStore,
    since: i64,
    limit: Option<usize>,
    out: &mut dyn std::io::Write,
    shape: &dyn Fn(&mut serde_json::Value),
) -> Result<Exported, ExportError> {
    let mut done = Exported {
        rows: 0,
        cursor: since,
    };
    loop {
        let want = match limit {
            Some(limit) if done.rows >= limit => return Ok(done),
            Some(limit) => (limit - done.rows).min(EXPORT_PAGE),
            None => EXPORT_PAGE,
        };
        let page = crate::store::block(store.trace_page(TraceFilter::All, done.cursor, want))?;
        let full = page.len() == want;
        for (seq, event) in &page {
            let mut row = serde_json::to_value(Row {
                seq: *seq,
                event,
                time: crate::dates::rfc3339_ms(event.at_ms),
            })
            .unwrap_or_default();
            shape(&mut row);
            writeln!(out, "{row}")?;
            done.rows += 1;
            done.cursor = *seq;
        }
        if !full {
            out.flush()?;
            return Ok(done);
        }
    }
}
