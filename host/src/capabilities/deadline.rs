//! A call's deadline, which a person's decision pauses: the runtime stops
//! a call past it, and the `meter` pauses it while a person decides on a
//! reservation.

use std::sync::Arc;
use std::time::Instant;

/// A call's wall-clock deadline, host calls included, except the time a
/// person spends deciding on one of its reservations (bounded by the
/// approval timeout): the deadline is paused meanwhile and moves on by as
/// much when the wait ends.
pub(crate) struct CallDeadline {
    state: parking_lot::Mutex<DeadlineState>,
    changed: tokio::sync::Notify,
}

struct DeadlineState {
    at: Instant,
    paused_since: Option<Instant>,
}

impl CallDeadline {
    pub(crate) fn new(at: Instant) -> Arc<CallDeadline> {
        Arc::new(CallDeadline {
            state: parking_lot::Mutex::new(DeadlineState {
                at,
                paused_since: None,
            }),
            changed: tokio::sync::Notify::new(),
        })
    }

    /// When the call's time runs out; `None` while paused.
    pub(crate) fn at(&self) -> Option<Instant> {
        let state = self.state.lock();
        state.paused_since.is_none().then_some(state.at)
    }

    /// Whether the call's time ran out (never while paused).
    pub(crate) fn passed(&self) -> bool {
        self.at().is_some_and(|at| Instant::now() >= at)
    }

    /// Resolves when the deadline is paused or moved.
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Pauses the deadline until the guard is dropped.
    pub(crate) fn pause(self: &Arc<Self>) -> DeadlinePaused {
        {
            let mut state = self.state.lock();
            if state.paused_since.is_none() {
                state.paused_since = Some(Instant::now());
            }
        }
        self.changed.notify_waiters();
        DeadlinePaused(self.clone())
    }
}

/// The deadline paused; dropping it moves the deadline on by the pause.
pub(crate) struct DeadlinePaused(Arc<CallDeadline>);

impl Drop for DeadlinePaused {
    fn drop(&mut self) {
        {
            let mut state = self.0.state.lock();
            if let Some(since) = state.paused_since.take() {
                state.at += since.elapsed();
            }
        }
        self.0.changed.notify_waiters();
    }
}
