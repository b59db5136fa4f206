//! The `meter` grant: the session's run meter for a billing connector,
//! bound to the store's ledger and observed by `/metrics`. The run starts
//! at the first call the boundary allows.

use crate::boundary::Session;
use crate::capabilities::meter::RunMeter;
use crate::store::LedgerStore;
use std::sync::Arc;

/// The ledger the meters charge, and the metrics that watch them.
pub(super) struct MeterGrant {
    pub(super) ledger: Arc<dyn LedgerStore>,
    pub(super) metrics: Arc<crate::metrics::Metrics>,
}

impl MeterGrant {
    /// `connector`'s run meter in `session`, where the session holds one
    /// ([`crate::session::holdings`]).
    pub(super) fn prepare(&self, session: &Session, connector: &str) -> Option<Arc<RunMeter>> {
        session
            .holdings()
            .and_then(|h| h.meter(&self.ledger, connector))
            .inspect(|meter| {
                meter.observed_by(|| self.metrics.allowance_observer(connector, meter.unit()))
            })
    }
}
