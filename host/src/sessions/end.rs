//! Ending a session: closed here (its row, its meters, its streams), or,
//! when another host of the fleet serves it, asked to end through the store
//! and waited for.

use super::{Live, Sessions};
use crate::store::StoreError;

/// How long an ended session's MCP streams stay open for in-flight calls to
/// receive their refusal.
const END_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// How long ending another host's session waits for that host to end it.
const REMOTE_END_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// What ending a session whichever host serves it did.
pub enum SessionEnd {
    Ended,
    /// Asked; the host serving it had not ended it when the wait ran out.
    Ending {
        host: String,
    },
    Unknown,
}

impl<E> Sessions<E> {
    /// Closes `live`, just taken out of this host's sessions (its authority
    /// already revoked): its end recorded, its meters ended, and its MCP
    /// streams closed once in-flight calls had time to receive their refusal.
    pub fn close(&self, live: &Live<E>) {
        let id = &live.session.id;
        self.metrics.session_ended(live.opened.elapsed());
        if let Err(e) = crate::store::block(self.store.session_closed(id)) {
            tracing::error!(session = %id, error = %e, "cannot record the session's end");
        }
        self.slot_ended(id);
        // One session is one run: its meters end with it.
        if let Some(holdings) = live.session.holdings() {
            holdings.end();
        }
        // A call waiting for a person sees the revocation at its next look
        // (20 ms) and answers with a refusal; the streams close after that.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let cancel = live.cancel.clone();
                runtime.spawn(async move {
                    tokio::time::sleep(END_GRACE).await;
                    cancel.cancel();
                });
            }
            Err(_) => live.cancel.cancel(),
        }
    }

    /// Ends every session's MCP event streams at once (at the end of a drain).
    pub fn end_streams(&self) {
        for live in self.registry.all() {
            live.cancel.cancel();
        }
    }

    /// Ends session `id`, not held here, on the host of the fleet that
    /// serves it: asked through the store, and answered once that host has
    /// ended it (its next call is then denied), or said to be ending if
    /// that host did not answer in time.
    pub async fn end_elsewhere(&self, id: &str) -> Result<SessionEnd, StoreError> {
        let Some(row) = self.store.request_session_end(id).await? else {
            return Ok(SessionEnd::Unknown);
        };
        if row.closed {
            return Ok(SessionEnd::Unknown);
        }
        let deadline = tokio::time::Instant::now() + REMOTE_END_WAIT;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            if self
                .store
                .shared_session(id)
                .await?
                .is_none_or(|s| s.closed)
            {
                return Ok(SessionEnd::Ended);
            }
        }
        // No host ended it (the one serving it is gone): the fleet's
        // session is ended here, and any host still holding it hears so.
        if self.store.shares_sessions() {
            self.store.session_closed(id).await?;
            return Ok(SessionEnd::Ended);
        }
        Ok(SessionEnd::Ending { host: row.host_id })
    }

    /// Whether someone asked, through the store, for session `id` to end
    /// (a read that fails says no, and is logged).
    pub fn ended_elsewhere(&self, id: &str) -> bool {
        match crate::store::block(self.store.shared_session(id)) {
            Ok(Some(row)) => row.ended,
            Ok(None) => false,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "cannot read the session's state");
                false
            }
        }
    }
}
