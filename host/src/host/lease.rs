//! This host's lease at the ends of its life: what a host killed mid-call
//! left open is closed before the first call, and a clean stop (or a start
//! refused after the store registered the host) gives the lease back, so
//! the other hosts count only a host that died as lost.

use super::Host;
use crate::store::{Recovered, Store, StoreError};
use std::sync::Arc;

/// How long a stopping host waits for its store to take its lease back:
/// the process ends after it either way (an unfinished release is rolled
/// back with its connection, and the others recover the host).
const RELEASE_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Gives the lease back if a start fails after the store registered this
/// host (a later step refused): a host that never served is not lost.
pub(super) struct ReleaseOnFailure(pub(super) Option<Arc<dyn Store>>);

impl ReleaseOnFailure {
    /// The start succeeded: the lease is the host's to keep.
    pub(super) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for ReleaseOnFailure {
    fn drop(&mut self) {
        if let Some(store) = self.0.take() {
            match crate::store::block(store.release_lease(crate::store::now_ms())) {
                Ok(Some(_)) => crate::logs::say("released this host's lease: it did not start"),
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    error = %crate::store::with_causes(&e),
                    "cannot release this host's lease; the other hosts recover it once it runs out"
                ),
            }
        }
    }
}

impl<E> Host<E> {
    /// Before any call: closes what a host killed mid-call left open
    /// (approvals, calls, metered runs of sessions that died with it), and
    /// says what it closed.
    pub async fn recover_previous_run(&self) -> Result<(), StoreError> {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let recovered = self.store.recover_interrupted(now_ms).await?;
        // Runs whose sessions died with the previous host: ended, so they count
        // at what they recorded instead of holding the day until midnight.
        let runs_ended = self.store.end_live_runs(now_ms).await?;
        if runs_ended > 0 {
            crate::logs::say(format_args!(
                "the previous run left {runs_ended} metered runs open; ended at what they recorded"
            ));
        }
        if recovered != Recovered::default() {
            crate::logs::say(format_args!(
                "the previous run stopped mid-call: {} approvals still pending or approved and unused ended (host_lost), {} calls marked interrupted ({} of them may have reached their upstream)",
                recovered.approvals_revoked, recovered.calls_interrupted, recovered.calls_maybe_run
            ));
        }
        Ok(())
    }

    /// At a clean stop, once drained (or when the start fails after the store
    /// registered this host): writes what the trace still owes, then gives
    /// this host's lease back, closing what it still holds (nothing, after a
    /// drain that finished), and says so in one line. A host that cannot
    /// reach its store leaves its lease to expire: the others then recover it.
    pub async fn release_lease(&self) {
        let released = tokio::time::timeout(RELEASE_WITHIN, async {
            self.boundary.pay_owed().await;
            self.store.release_lease(crate::store::now_ms()).await
        });
        match released.await {
            Err(_) => tracing::warn!(
                within_secs = RELEASE_WITHIN.as_secs(),
                "the store did not take this host's lease back in time; the other hosts recover it once it runs out"
            ),
            Ok(Ok(Some(closed))) => crate::logs::say(format_args!(
                "released this host's lease{}",
                if closed == Recovered::default() {
                    String::new()
                } else {
                    format!(
                        ": {} approvals ended (host_shutdown), {} calls still open marked interrupted ({} of them may have reached their upstream)",
                        closed.approvals_revoked, closed.calls_interrupted, closed.calls_maybe_run
                    )
                }
            )),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => tracing::warn!(
                error = %crate::store::with_causes(&e),
                "cannot release this host's lease; the other hosts recover it once it runs out"
            ),
        }
    }

    /// Writes what the trace still owes (the sweep's second half).
    pub async fn pay_owed(&self) {
        self.boundary.pay_owed().await;
    }
}
