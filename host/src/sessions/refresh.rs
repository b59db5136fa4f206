//! What another host of the fleet changed of a session this host holds:
//! read back from the store and taken in.

use super::{SessionView, Sessions, view_of};
use serde_json::Value;

/// What refreshing a session from the store found.
pub enum Refreshed {
    /// Not held here: nothing to take in.
    NotHeld,
    /// Its pause, withdrawals and delegation taken in as the store has them.
    Applied,
    /// Ended by another host or a person: to be ended here.
    Ended,
    /// Not kept by the fleet: it may still have been asked to end
    /// ([`Sessions::ended_elsewhere`]).
    NotKept,
    /// The store did not answer (logged).
    Unread,
}

impl<E> Sessions<E> {
    /// Takes in what another host changed of session `id`, if held here.
    pub fn refresh(&self, id: &str) -> Refreshed {
        let Some(live) = self.registry.get(id) else {
            return Refreshed::NotHeld;
        };
        match crate::store::block(self.store.kept_session(id)) {
            Ok(Some(kept)) if kept.ended => Refreshed::Ended,
            Ok(Some(kept)) => {
                live.session.apply(&kept.state);
                Refreshed::Applied
            }
            Ok(None) => Refreshed::NotKept,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "cannot read the session's state");
                Refreshed::Unread
            }
        }
    }

    /// Every open session held here, as the admin API shows it under
    /// `base`, by id.
    pub fn views(&self, base: &str) -> Vec<SessionView> {
        let mut views: Vec<SessionView> = self
            .registry
            .all()
            .iter()
            .map(|s| view_of(s, base, None))
            .collect();
        views.sort_by(|a, b| a.id.cmp(&b.id));
        views
    }

    /// `here` (this host's open sessions, as shown), then those the store
    /// records for the other hosts of the fleet.
    pub fn with_the_fleets(&self, here: Vec<SessionView>) -> Result<Vec<Value>, super::HostError> {
        let mut views: Vec<Value> = here
            .into_iter()
            .map(|v| serde_json::to_value(v).unwrap_or_default())
            .collect();
        for shared in crate::store::block(self.store.shared_sessions())? {
            if self.registry.get(&shared.id).is_none() {
                views.push(shared.view);
            }
        }
        Ok(views)
    }

    /// Session `id` as the store shows it for the host serving it, if it
    /// is still open there.
    pub fn view_elsewhere(&self, id: &str) -> Result<Option<Value>, super::HostError> {
        Ok(crate::store::block(self.store.shared_session(id))?
            .filter(|s| !s.closed && !s.ended)
            .map(|s| s.view))
    }
}
