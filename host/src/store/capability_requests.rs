//! Capability requests parked for run owners ([`CapabilityRequestStore`]).

use super::*;

/// A capability an agent asked its run owner for (seed 003: "Dynamic
/// requests went to a person, not an installer"). Asking grants nothing;
/// the answer is a person's words, returned to the agent as evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityRequest {
    pub id: i64,
    pub session: String,
    pub brand: String,
    /// What the agent wrote: goal, missing observation, proposed effect
    /// class, the safe alternative it tried.
    pub request: serde_json::Value,
    pub requested_at_ms: i64,
    pub answer: Option<String>,
    pub answered_by: Option<String>,
    pub answered_at_ms: Option<i64>,
}

/// What answering a capability request did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    Now(CapabilityRequest),
    Unknown,
    /// Someone answered it before.
    Already(CapabilityRequest),
}

/// Capability requests parked for run owners.
#[async_trait::async_trait]
pub trait CapabilityRequestStore: Send + Sync {
    /// Parks `request` of `session`; its id.
    async fn park_capability_request(
        &self,
        session: &str,
        brand: &str,
        request: &serde_json::Value,
    ) -> Result<i64, StoreError>;
    /// The requests of `session` (every session's when `None`), oldest
    /// first; only unanswered ones when `pending_only`.
    async fn capability_requests(
        &self,
        session: Option<&str>,
        pending_only: bool,
    ) -> Result<Vec<CapabilityRequest>, StoreError>;
    /// Records a person's `answer` to request `id`, once.
    async fn answer_capability_request(
        &self,
        id: i64,
        answer: &str,
        by: &str,
    ) -> Result<Answered, StoreError>;
}
