//! The `Sessions` service: every session this host holds, and everything the
//! store keeps of sessions (their rows for the admin API, what the fleet
//! keeps so any host can take one up, closing, the lease generation a session
//! is held under), in one owner that knows nothing of HTTP or MCP.
//!
//! It decides (the rules an orchestrator's request is checked against),
//! records (the store's rows) and holds (the registry, generic over `E`, how
//! a session is reached: MCP endpoints for `serve`, made by the adapter that
//! serves them). Flows that span services (ending a session also ends its
//! remote servers' sessions; taking one up loads its components) are the
//! caller's: this service returns what they need and does its part.

mod brand_limits;
mod capability_requests;
mod end;
mod expiry;
mod open;
mod refresh;
mod take_up;
#[cfg(test)]
mod tests;

pub use crate::session::registry::{Kept, Live, Opened};
pub use brand_limits::{Admitted, Refusal, limits_for};
pub use capability_requests::Answered;
pub use end::SessionEnd;
pub use expiry::Found;
pub use open::{OpenSession, SessionView, view_of};
pub use refresh::Refreshed;
pub use take_up::{TakeUp, TakingUp};

use crate::metrics::Metrics;
use crate::session::registry::Registry;
use crate::store::Store;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Why a request to the host was refused; the admin API turns each into a
/// JSON error with a stable `code`.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    InvalidProfile(String),
    /// 422: a selection names what the session could not be given.
    #[error("{0}")]
    NotSelectable(String),
    /// 422: a session's limits are not inside its lifetime or its grant.
    #[error("{0}")]
    InvalidLimits(String),
    /// 429: the brand's live sessions or inbound-email rate are at their
    /// limit ([`brand_limits`]): nothing was opened.
    #[error("{0}")]
    Limited(Box<Refusal>),
    #[error("the store failed: {0}")]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Unavailable(String),
}

/// The sessions this host holds, reached through endpoints of type `E`.
pub struct Sessions<E> {
    store: Arc<dyn Store>,
    registry: Registry<E>,
    /// One session taken up at a time on this host.
    taking_up: tokio::sync::Mutex<()>,
    /// How long a session lives (`session_ttl_secs`).
    ttl: Duration,
    metrics: Arc<Metrics>,
}

impl<E> Sessions<E> {
    /// No session yet; each lives `ttl` once opened.
    pub fn new(store: Arc<dyn Store>, ttl: Duration, metrics: Arc<Metrics>) -> Sessions<E> {
        Sessions {
            store,
            registry: Registry::default(),
            taking_up: tokio::sync::Mutex::new(()),
            ttl,
            metrics,
        }
    }

    /// How long a session lives once opened.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Session `id` as held here, past its time or not.
    pub fn get(&self, id: &str) -> Option<Arc<Live<E>>> {
        self.registry.get(id)
    }

    /// Every session held here.
    pub fn all(&self) -> Vec<Arc<Live<E>>> {
        self.registry.all()
    }

    /// Lets go of session `id` here (nothing is recorded): `None` if it was
    /// not held.
    pub fn remove(&self, id: &str) -> Option<Arc<Live<E>>> {
        self.registry.remove(id)
    }

    /// Whether every host of the fleet may serve any session (the store
    /// keeps sessions and their changing state).
    pub fn shared_by_fleet(&self) -> bool {
        self.store.shares_sessions()
    }

    /// Whether `live` is held under the identity this host has now (not
    /// one another host recovered meanwhile).
    pub fn of_this_lease(&self, live: &Live<E>) -> bool {
        live.session.generation() == self.store.lease_generation()
    }

    /// `session` held under this host's lease, its changing state kept in
    /// the fleet's store when the store shares sessions.
    fn held_here(&self, session: crate::session::Session) -> crate::session::Session {
        let session = session.held_under(self.store.lease_generation());
        if self.store.shares_sessions() {
            session.shared_in(Arc::new(crate::session::FleetSessions(self.store.clone())))
        } else {
            session
        }
    }
}

/// `live`, reached through one endpoint per name in `names`, each made by
/// `endpoint` from the session it serves (weakly: an endpoint never keeps
/// an ended session alive), its name and the token that closes its streams.
pub fn reached_through<E>(
    mut live: Live<E>,
    names: impl IntoIterator<Item = String>,
    endpoint: impl Fn(Weak<Live<E>>, String, CancellationToken) -> E,
) -> Arc<Live<E>> {
    let cancel = live.cancel.clone();
    Arc::new_cyclic(|weak| {
        for name in names {
            let made = endpoint(weak.clone(), name.clone(), cancel.clone());
            live.endpoints.insert(name, made);
        }
        live
    })
}
