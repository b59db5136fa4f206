//! Approvals and [`ApprovalStore`]: single-use, decided by a person.

use super::*;

/// The id of one approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ApprovalId(pub i64);

impl fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where an approval stands. `used` is kept apart: an approved approval is
/// spent by exactly one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    Pending,
    Approved,
    Denied,
    /// Revoked with its session; never comes back.
    Revoked,
}

impl ApprovalState {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Denied => "denied",
            ApprovalState::Revoked => "revoked",
        }
    }

    pub(super) fn parse(name: &str) -> Option<ApprovalState> {
        Some(match name {
            "pending" => ApprovalState::Pending,
            "approved" => ApprovalState::Approved,
            "denied" => ApprovalState::Denied,
            "revoked" => ApprovalState::Revoked,
            _ => return None,
        })
    }
}

/// One approval request as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub id: ApprovalId,
    pub session: String,
    pub tool: String,
    pub args_digest: String,
    pub state: ApprovalState,
    pub used: bool,
    pub decided_by: Option<String>,
    /// Who decided, as structured fields (kind, subject, sub, issuer, via,
    /// role) when the decider gave them; `None` for a decision made before
    /// they were kept, or by the host itself.
    pub decided_actor: Option<serde_json::Value>,
    pub requested_at_ms: i64,
    /// When it was decided or revoked (milliseconds since the Unix epoch).
    pub decided_at_ms: Option<i64>,
}

/// Why an approval could not be decided or consumed. The variants map onto
/// the bounded denial reasons of D6 ("approval required", "approval denied").
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// Nothing was ever asked for this session, tool and arguments.
    #[error("approval required")]
    Required,
    /// Asked, not yet answered.
    #[error("approval pending")]
    Pending,
    /// A person said no.
    #[error("approval denied")]
    Denied,
    /// The session's approvals were revoked.
    #[error("approval revoked")]
    Revoked,
    /// The approval was already spent by an earlier call.
    #[error("approval already used")]
    AlreadyUsed,
    /// `decide` on an id that does not exist.
    #[error("unknown approval {0}")]
    Unknown(ApprovalId),
    /// `decide` on an approval that is no longer pending.
    #[error("approval {0} is no longer pending")]
    NotPending(ApprovalId),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Per-call approvals: parked, decided by a person, spent exactly once.
#[async_trait::async_trait]
pub trait ApprovalStore: Send + Sync {
    /// Parks a pending approval for one call (`args_digest` from [`args_digest`]).
    async fn request_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, StoreError>;
    /// Answers a pending approval. Anything not pending (answered, revoked) stays as it is.
    async fn decide(&self, id: ApprovalId, approved: bool, by: &str) -> Result<(), ApprovalError> {
        self.decide_as(id, approved, by, None).await
    }
    /// [`TraceStore::decide`], keeping who decided as structured fields
    /// (`actor`) beside the `by` text.
    async fn decide_as(
        &self,
        id: ApprovalId,
        approved: bool,
        by: &str,
        actor: Option<&serde_json::Value>,
    ) -> Result<(), ApprovalError>;
    /// Spends one approved, unused approval for exactly this session, tool and
    /// arguments. Atomic: two concurrent callers never both succeed.
    async fn consume_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, ApprovalError>;
    /// A session's approvals still waiting for a person, oldest first.
    async fn pending(&self, session: &str) -> Result<Vec<Approval>, StoreError>;
    /// One approval by id.
    async fn approval(&self, id: ApprovalId) -> Result<Option<Approval>, StoreError>;
    /// Revokes every unused approval of the session (pending or approved);
    /// returns how many. Revoked approvals can never be decided or consumed.
    async fn revoke_session_approvals(&self, session: &str) -> Result<usize, StoreError>;
    /// Revokes one approval if it is still unused (pending, or approved and
    /// not yet consumed), recording `by` as who withdrew it; `Ok(true)` if it
    /// was revoked now. A revoked approval never comes back.
    async fn revoke_approval(&self, id: ApprovalId, by: &str) -> Result<bool, StoreError>;
    /// Rings when an approval for this session, tool and arguments may have
    /// changed in this process (decided, revoked, the session's approvals
    /// revoked), so a waiting call reads the store at once instead of
    /// polling it. Subscribe before reading. A store that cannot tell
    /// returns [`ApprovalWatch::never`].
    fn watch_approval(&self, _session: &str, _tool: &str, _args_digest: &str) -> ApprovalWatch {
        ApprovalWatch::never()
    }
    /// [`ApprovalStore::request_approval`], keeping the exact arguments in
    /// the approval row, sealed with `key`, so the person deciding sees them
    /// whichever host answers; they are erased when the approval is decided,
    /// revoked or times out.
    async fn request_approval_showing(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
        arguments: &serde_json::Value,
        key: &[u8; 32],
    ) -> Result<ApprovalId, StoreError>;
    /// The arguments a pending approval was asked for, opened with `key`;
    /// `None` once decided or revoked, or if they were never kept (or do
    /// not open, or do not match the row's digest).
    async fn approval_arguments(
        &self,
        id: ApprovalId,
        key: &[u8; 32],
    ) -> Result<Option<serde_json::Value>, StoreError>;
}
