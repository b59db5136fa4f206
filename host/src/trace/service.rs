//! The trace as the admin API appends and reads it: a change's row
//! (built by this module's constructors) written, a session's or brand's
//! rows read page by page, a session's latest requests, the audit export.
//! The boundary writes a call's rows itself, buffered with the call.

use super::{TraceEvent, TraceFilter};
use crate::audit::{ExportError, Exported};
use crate::store::{StoreError, TraceStore};
use serde_json::Value;
use std::sync::Arc;

/// The trace kept in the store: rows appended one at a time and read.
#[derive(Clone)]
pub struct Trace {
    store: Arc<dyn TraceStore>,
}

impl Trace {
    /// The trace `store` keeps.
    pub fn new(store: Arc<dyn TraceStore>) -> Trace {
        Trace { store }
    }

    /// Appends one row (one built by this module's constructors).
    pub async fn record(&self, event: &TraceEvent) -> Result<(), StoreError> {
        self.store.record(event).await
    }

    /// Up to `limit` rows matching `filter` after sequence number `after`,
    /// in order, each with its sequence number.
    pub async fn page(
        &self,
        filter: TraceFilter<'_>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        self.store.trace_page(filter, after, limit).await
    }

    /// A session's last `limit` calls as requested, oldest first.
    pub async fn recent_requests(
        &self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<TraceEvent>, StoreError> {
        self.store.recent_requests(session, limit).await
    }

    /// The audit export ([`crate::audit::export_shown`]) of up to `limit`
    /// rows after `since` into `out`, each passed through `shape`. It
    /// blocks: call it off the async runtime's threads.
    pub fn export_shown(
        &self,
        since: i64,
        limit: Option<usize>,
        out: &mut dyn std::io::Write,
        shape: &dyn Fn(&mut Value),
    ) -> Result<Exported, ExportError> {
        crate::audit::export_shown(self.store.as_ref(), since, limit, out, shape)
    }
}
