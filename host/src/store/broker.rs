//! Wakes a call waiting for a person the moment its approval changes.
//!
//! The store is the durable record of every approval; this is only its
//! doorbell. A waiting call subscribes for its (session, tool, arguments),
//! reads the store, and sleeps until the store rings: a decision, a
//! revocation, its session's end. Nothing polls SQLite while a person
//! thinks. There is one channel per approval someone is waiting for, and it
//! goes when the last waiter goes.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

/// What a waiting call waits on: the session, tool and argument digest an
/// approval is for.
type Key = (String, String, String);

/// The doorbells of one store.
#[derive(Debug, Default)]
pub struct ApprovalBroker {
    waiting: Mutex<HashMap<Key, watch::Sender<()>>>,
}

impl ApprovalBroker {
    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<Key, watch::Sender<()>>> {
        self.waiting.lock()
    }

    /// Subscribes to the approvals of one call. Subscribe, then read the
    /// store: a change committed before the subscription is seen by the
    /// read, one committed after it rings.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> ApprovalWatch {
        let key = (
            session.to_string(),
            tool.to_string(),
            args_digest.to_string(),
        );
        let rx = self
            .lock()
            .entry(key.clone())
            .or_insert_with(|| watch::channel(()).0)
            .subscribe();
        ApprovalWatch {
            broker: Some(self.clone()),
            key,
            rx: Some(rx),
        }
    }

    /// Rings for one call's approvals (after the change is committed).
    pub(crate) fn ring(&self, session: &str, tool: &str, args_digest: &str) {
        // Dropping the sender wakes every receiver.
        self.lock().remove(&(
            session.to_string(),
            tool.to_string(),
            args_digest.to_string(),
        ));
    }

    /// Rings for every approval of a session.
    pub(crate) fn ring_session(&self, session: &str) {
        self.lock().retain(|(s, _, _), _| s != session);
    }

    /// Rings for every approval.
    pub(crate) fn ring_all(&self) {
        self.lock().clear();
    }

    /// How many calls' approvals someone is waiting on.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nobody waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One waiting call's subscription (see [`crate::store::Store::watch_approval`]).
#[derive(Debug)]
pub struct ApprovalWatch {
    broker: Option<Arc<ApprovalBroker>>,
    key: Key,
    rx: Option<watch::Receiver<()>>,
}

impl ApprovalWatch {
    /// A watch that never rings, for a store that cannot tell: its waiters
    /// read the store again on their own timer.
    pub fn never() -> ApprovalWatch {
        ApprovalWatch {
            broker: None,
            key: Default::default(),
            rx: None,
        }
    }

    /// Resolves when the store rang for this call; then subscribe again
    /// before reading the store if the wait goes on. Never resolves twice.
    pub async fn rung(&mut self) {
        match self.rx.as_mut() {
            Some(rx) => {
                // Only the sender's drop is ever sent.
                let _ = rx.changed().await;
                self.rx = None;
            }
            None => std::future::pending().await,
        }
    }
}

impl Drop for ApprovalWatch {
    fn drop(&mut self) {
        let (Some(broker), Some(rx)) = (self.broker.take(), self.rx.take()) else {
            return;
        };
        drop(rx);
        let mut waiting = broker.lock();
        // The last waiter takes the doorbell down.
        if waiting
            .get(&self.key)
            .is_some_and(|tx| tx.receiver_count() == 0)
        {
            waiting.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_ring_wakes_every_waiter_of_that_call_and_no_other() {
        let broker = Arc::new(ApprovalBroker::default());
        let mut a = broker.subscribe("s", "t", "d1");
        let mut b = broker.subscribe("s", "t", "d1");
        let mut other = broker.subscribe("s", "t", "d2");
        assert_eq!(broker.len(), 2);
        broker.ring("s", "t", "d1");
        tokio::time::timeout(Duration::from_secs(5), a.rung())
            .await
            .expect("a woke");
        tokio::time::timeout(Duration::from_secs(5), b.rung())
            .await
            .expect("b woke");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), other.rung())
                .await
                .is_err(),
            "d2 was not rung"
        );
        broker.ring_session("s");
        tokio::time::timeout(Duration::from_secs(5), other.rung())
            .await
            .expect("the session's end rings");
    }

    #[tokio::test]
    async fn the_last_waiter_takes_its_doorbell_down() {
        let broker = Arc::new(ApprovalBroker::default());
        let a = broker.subscribe("s", "t", "d");
        let b = broker.subscribe("s", "t", "d");
        drop(a);
        assert_eq!(broker.len(), 1, "one waiter is left");
        drop(b);
        assert!(broker.is_empty());
        let mut never = ApprovalWatch::never();
        assert!(
            tokio::time::timeout(Duration::from_millis(20), never.rung())
                .await
                .is_err()
        );
    }
}
