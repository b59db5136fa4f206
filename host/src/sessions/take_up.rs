//! Taking up a session the fleet keeps (any host serves any session's next
//! call): its record read and its token checked, claimed in the store, and
//! held here. One at a time on a host, so two calls of one session do not
//! take it up twice. What serving it needs besides (its own components
//! loaded, its holdings decided, its endpoints made) is the caller's,
//! between [`Sessions::begin_take_up`] and [`TakingUp::hold`].

use super::{Kept, Live, Sessions};
use crate::policy;
use crate::session::Session;
use crate::store::{SessionRecord, SharedStateNow};
use std::sync::Arc;

/// What [`Sessions::begin_take_up`] found.
pub enum TakeUp<'a, E> {
    /// Held here already (taken up meanwhile).
    Held(Arc<Live<E>>),
    /// Kept by the fleet, and this host is taking it up.
    Kept(Box<TakingUp<'a, E>>),
}

/// A session being taken up on this host: no other is taken up here until
/// this one is held or dropped.
pub struct TakingUp<'a, E> {
    sessions: &'a Sessions<E>,
    _one_at_a_time: tokio::sync::MutexGuard<'a, ()>,
    pub id: String,
    pub brand: String,
    /// What the fleet keeps of it.
    pub record: SessionRecord,
    token_digest: [u8; 32],
    state: SharedStateNow,
}

impl<E> Sessions<E> {
    /// Starts taking up session `id`, kept by the fleet (`token`, when
    /// given, checked against the digest kept). `None` when the store does
    /// not share sessions, or the session is unknown, ended, or not
    /// `token`'s, alike.
    pub async fn begin_take_up(&self, id: &str, token: Option<&str>) -> Option<TakeUp<'_, E>> {
        if !self.store.shares_sessions() {
            return None;
        }
        let one_at_a_time = self.taking_up.lock().await;
        if let Some(live) = self.registry.get(id) {
            return token
                .is_none_or(|t| live.token_matches(t))
                .then_some(TakeUp::Held(live));
        }
        let kept = match self.store.kept_session(id).await {
            Ok(Some(kept)) if !kept.ended => kept,
            Ok(_) => return None,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "cannot read the session the fleet keeps");
                return None;
            }
        };
        let token_digest: [u8; 32] = hex::decode(&kept.record.token_digest)
            .ok()?
            .try_into()
            .ok()?;
        if let Some(token) = token
            && crate::session::registry::token_digest(token) != token_digest
        {
            return None;
        }
        Some(TakeUp::Kept(Box::new(TakingUp {
            sessions: self,
            _one_at_a_time: one_at_a_time,
            id: id.to_string(),
            brand: kept.brand,
            record: kept.record,
            token_digest,
            state: kept.state,
        })))
    }
}

impl<E> TakingUp<'_, E> {
    /// Claims it for this host in the store: the session as its record and
    /// state have it (its holdings still to be decided), or `None` when
    /// another host has it or the store did not answer. Nothing of its
    /// trace is written again.
    pub async fn claim(&self) -> Option<Session> {
        match self.sessions.store.take_up_session(&self.id).await {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => {
                tracing::error!(session = %self.id, error = %e, "cannot take up the session");
                return None;
            }
        }
        let removed = self
            .record
            .removed
            .iter()
            .filter_map(|(name, why)| Some((name.clone(), policy::Removal::parse(why)?)))
            .collect();
        Some(
            self.sessions
                .held_here(Session::new(
                    self.id.clone(),
                    &self.brand,
                    self.record.input.clone(),
                ))
                .taken_up(self.record.opened.clone(), removed, &self.state),
        )
    }

    /// Holds `session`, claimed, here from now on, reached as `reached`
    /// makes it (its endpoints).
    pub fn hold(
        self,
        session: Session,
        reached: impl FnOnce(Live<E>) -> Arc<Live<E>>,
    ) -> Arc<Live<E>> {
        let record = self.record;
        let live = reached(Live::kept(Kept {
            session,
            role_name: record.role,
            profile: record.profile,
            token_digest: self.token_digest,
            connectors: record.connectors,
            left_out: record.left_out,
            allowlist: record.allowlist,
            expires_at_ms: record.expires_at_ms,
        }));
        tracing::info!(session = %self.id, brand = %self.brand, "took up a session the fleet keeps");
        self.sessions.registry.insert(live.clone());
        live
    }
}
