//! A session ends by itself at its time: found past it when asked for, or
//! by the sweep `serve` runs every few seconds.

use super::{Live, Sessions};
use std::sync::Arc;
use std::time::Instant;

/// What looking a session up found.
pub enum Found<E> {
    Open(Arc<Live<E>>),
    /// Held here, and past its time: to be ended.
    Expired,
    /// Not held here.
    Unknown,
}

impl<E> Sessions<E> {
    /// Session `id` as it stands at `now`.
    pub fn find(&self, id: &str, now: Instant) -> Found<E> {
        match self.registry.get(id) {
            Some(live) if live.expired_at(now) => Found::Expired,
            Some(live) => Found::Open(live),
            None => Found::Unknown,
        }
    }

    /// The sessions held here past their time at `now`, to be ended.
    pub fn expired(&self, now: Instant) -> Vec<String> {
        self.registry.expired(now)
    }
}
