//! The one owner of per-call approvals: a gated call asks a person and
//! waits ([`wait`]); whoever answers, it is decided here ([`decide`]): a
//! person through the admin API or the console that calls it, a person
//! through the MCP client (elicitation), the timeout; the pending ones are
//! listed here ([`pending`]), and revoked here ([`revoke`]) when the call
//! goes away, the host stops, the tool changes or is reviewed anew, or the
//! session loses its authority.
//!
//! The store keeps the rows and rings the waiting call; this service keeps
//! the rules of who may decide what and what a wait ends with. What a wait
//! writes to the call's trace is told to the caller's [`WaitRecord`] (the
//! boundary's), so the rows stay where the call's other rows are written.
//!
//! One rule stays in the store: the approvals of a host that stopped without
//! draining are ended by [`crate::store::HOST_LOST`] in the same transaction
//! that marks its calls interrupted (at start, and by a fleet's lease sweep);
//! a decision on one is answered here, naming that rule.

mod by_result;
mod decide;
mod pending;
mod revoke;
mod wait;

/// An approval's id, the text its arguments are bound by, and the rule
/// that ends a lost host's approvals: the approvals' vocabulary, kept in
/// the store.
pub use crate::store::{ApprovalId, HOST_LOST, canonical_args_text};
pub use decide::{DecideError, Decider, Decision};
pub use wait::{Ask, ByResult, Ended, WaitRecord};

use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Who the trace and the store say decided an approval nobody answered.
pub const TIMEOUT_DECIDER: &str = "timeout";

/// Per-call approvals: ask, wait, decide, pending, revoke.
pub struct Approvals {
    store: Arc<dyn Store>,
    /// How long a pending approval waits before it is denied (zero: at once).
    timeout: Duration,
    /// Seals the arguments a person approves into the approval row, so
    /// another host's approvals API can show them, and into the decision's
    /// trace row for an auditor.
    arguments_key: Option<[u8; 32]>,
    /// Counts the requests and how long each waited for its decision.
    metrics: Option<Arc<crate::metrics::Metrics>>,
    /// The arguments of the calls waiting on this host.
    waiting: wait::WaitingArgs,
    /// Cancelled when the host begins to shut down: every wait ends,
    /// its approval revoked by `host_shutdown`.
    shutdown: CancellationToken,
}

impl Approvals {
    /// Approvals kept in `store`, each waiting at most `timeout`.
    pub fn new(store: Arc<dyn Store>, timeout: Duration) -> Approvals {
        Approvals {
            store,
            timeout,
            arguments_key: None,
            metrics: None,
            waiting: Default::default(),
            shutdown: CancellationToken::new(),
        }
    }

    /// Keeps each waiting call's arguments in its approval row, sealed with
    /// `key` and erased when decided, and seals them into the decision's
    /// trace row.
    pub fn sealing_arguments(mut self, key: [u8; 32]) -> Approvals {
        self.arguments_key = Some(key);
        self
    }

    /// Counts requests and waits in `metrics`.
    pub fn measured_by(mut self, metrics: Arc<crate::metrics::Metrics>) -> Approvals {
        self.metrics = Some(metrics);
        self
    }

    /// Ends every wait when `shutdown` is cancelled (the host stopping).
    pub fn ending_with(mut self, shutdown: CancellationToken) -> Approvals {
        self.shutdown = shutdown;
        self
    }

    /// How long a pending approval waits before it is denied.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

#[cfg(test)]
mod tests;
