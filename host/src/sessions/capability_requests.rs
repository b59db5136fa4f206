//! The capability requests a session's agent parks for its person or run
//! owner (`scout_request_capability`): parked, counted and read back per
//! session. Asking grants nothing; a person's answer is words.

use super::Sessions;
use crate::store::{CapabilityRequest, StoreError};

/// What answering a capability request found: answered now, answered
/// before, or no such request.
pub use crate::store::Answered;

impl<E> Sessions<E> {
    /// Session `session`'s capability requests, oldest first; only the
    /// unanswered ones when `pending_only`.
    pub fn capability_requests(
        &self,
        session: &str,
        pending_only: bool,
    ) -> Result<Vec<CapabilityRequest>, StoreError> {
        crate::store::block(self.store.capability_requests(Some(session), pending_only))
    }

    /// Parks `request` of `session` (of `brand`) for a person; its id.
    pub fn park_capability_request(
        &self,
        session: &str,
        brand: &str,
        request: &serde_json::Value,
    ) -> Result<i64, StoreError> {
        crate::store::block(self.store.park_capability_request(session, brand, request))
    }

    /// Every session's capability requests, or `session`'s, oldest first;
    /// only the unanswered ones when `pending_only`: what a person answers.
    pub async fn capability_requests_to_answer(
        &self,
        session: Option<&str>,
        pending_only: bool,
    ) -> Result<Vec<CapabilityRequest>, StoreError> {
        self.store.capability_requests(session, pending_only).await
    }

    /// Records `by`'s answer to capability request `id` (words: it grants
    /// nothing), unless it was answered before.
    pub async fn answer_capability_request(
        &self,
        id: i64,
        answer: &str,
        by: &str,
    ) -> Result<Answered, StoreError> {
        self.store.answer_capability_request(id, answer, by).await
    }
}
