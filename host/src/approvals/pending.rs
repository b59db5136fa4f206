//! The approvals still waiting for a person, as the approvals API and the
//! console list them (with the exact arguments each is bound to), and the
//! decisions made on them lately.

use super::Approvals;
use crate::store::{Approval, ApprovalId, StoreError, TraceEvent};
use serde_json::Value;

impl Approvals {
    /// A session's approvals still waiting for a person, oldest first.
    pub async fn pending(&self, session: &str) -> Result<Vec<Approval>, StoreError> {
        self.store.pending(session).await
    }

    /// Every approval still waiting, whichever session asked, oldest first.
    pub async fn all_pending(&self) -> Result<Vec<Approval>, StoreError> {
        self.store.all_pending().await
    }

    /// One approval by id.
    pub async fn approval(&self, id: ApprovalId) -> Result<Option<Approval>, StoreError> {
        self.store.approval(id).await
    }

    /// The arguments of a call of `session` waiting for a person, if this
    /// host holds it.
    pub fn waiting_arguments(&self, session: &str, digest: &str) -> Option<Value> {
        self.waiting.get(session, digest)
    }

    /// The arguments `approval` waits on: from the call waiting on this
    /// host, else from the approval row (sealed), whichever host asked.
    pub fn arguments(&self, approval: &Approval) -> Option<Value> {
        if let Some(local) = self.waiting.get(&approval.session, &approval.args_digest) {
            return Some(local);
        }
        let key = self.arguments_key.as_ref()?;
        crate::store::block(self.store.approval_arguments(approval.id, key))
            .ok()
            .flatten()
    }

    /// The last `limit` decisions on approvals (the trace's `decided`
    /// rows, with their sequence numbers), of every session, newest first.
    pub async fn decisions(&self, limit: usize) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        self.store.recent_decisions(limit).await
    }
}
