//! Every decision on an approval, whoever makes it: a person through the
//! admin API (and the console, which calls it), the session's person
//! through the MCP client (elicitation), or the timeout; and what the
//! waiting call's trace says of it afterwards ([`Decision`]).

use super::{Approvals, TIMEOUT_DECIDER};
use crate::store::{Approval, ApprovalError, ApprovalId, ApprovalState, StoreError};
use crate::trace::Decided;
use serde_json::{Value, json};
use std::time::Instant;

/// Who decides an approval, and through which channel: the store keeps it
/// as `decided_by` (text) and `decided_actor` (fields), and the trace's
/// `decided` row says it again.
#[derive(Debug, Clone)]
pub enum Decider<'a> {
    /// A person the admin API verified (the console calls the API): their
    /// subject, and their actor fields (kind, subject, sub, issuer, via, role).
    Person { subject: &'a str, actor: Value },
    /// The session's own person, answering through its MCP client.
    Elicitation,
    /// The session's own person, answering a 2026-07-28 `input_required`
    /// result: its client retried the call with the answer (`accept`,
    /// `decline` or `cancel`).
    InputRequired { answer: &'a str },
    /// Nobody answered in time.
    Timeout,
}

impl Decider<'_> {
    /// The `decided_by` text.
    fn by(&self) -> String {
        match self {
            Decider::Person { subject, .. } => format!("{subject} (approvals API)"),
            Decider::Elicitation => "person (MCP elicitation)".to_string(),
            Decider::InputRequired { answer } => format!("person (MCP input_required: {answer})"),
            Decider::Timeout => TIMEOUT_DECIDER.to_string(),
        }
    }

    /// The `decided_actor` fields; none for the timeout (the host decided).
    fn actor(&self) -> Option<Value> {
        match self {
            Decider::Person { actor, .. } => Some(actor.clone()),
            Decider::Elicitation => Some(json!({
                "kind": "person",
                "subject": null,
                "sub": null,
                "issuer": null,
                "via": "mcp_elicitation",
                "role": null,
            })),
            Decider::InputRequired { .. } => Some(json!({
                "kind": "person",
                "subject": null,
                "sub": null,
                "issuer": null,
                "via": "input_required",
                "role": null,
            })),
            Decider::Timeout => None,
        }
    }
}

/// Why a decision was not taken.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// No approval has this id.
    #[error("no approval {0}")]
    Unknown(ApprovalId),
    /// Decided or ended already. `ended_by` names the rule when the host,
    /// not a person, ended it (`host_lost`, `host_shutdown`): the call it
    /// was asked for never ran.
    #[error("approval {id} is no longer pending")]
    NotPending {
        id: ApprovalId,
        ended_by: Option<&'static str>,
    },
    /// Refused by the store for another reason (it cannot be decided).
    #[error(transparent)]
    Refused(ApprovalError),
    #[error("the store failed: {0}")]
    Store(#[source] StoreError),
}

impl Approvals {
    /// Decides approval `id` for `decider`, once: a second decision, on an
    /// approval decided, revoked or ended, is refused and changes nothing.
    /// Deciding wakes the call that waits for it, on whichever host.
    pub async fn decide(
        &self,
        id: ApprovalId,
        approve: bool,
        decider: Decider<'_>,
    ) -> Result<(), DecideError> {
        let by = decider.by();
        match self
            .store
            .decide_as(id, approve, &by, decider.actor().as_ref())
            .await
        {
            Ok(()) => Ok(()),
            Err(ApprovalError::Unknown(id)) => Err(DecideError::Unknown(id)),
            Err(ApprovalError::NotPending(id)) => Err(DecideError::NotPending {
                id,
                ended_by: self.ended_by(id).await,
            }),
            Err(ApprovalError::Store(e)) => Err(DecideError::Store(e)),
            Err(other) => Err(DecideError::Refused(other)),
        }
    }

    /// [`Approvals::decide`] for a decider whose right to decide depends on
    /// the approval (the admin API: the caller's role over the session's
    /// brand). `may` sees the approval first and refuses with the caller's
    /// own error; an unknown approval is refused the same way as one the
    /// decider may not see.
    pub async fn decide_if<E: From<DecideError>>(
        &self,
        id: ApprovalId,
        approve: bool,
        decider: Decider<'_>,
        may: impl FnOnce(&Approval) -> Result<(), E>,
    ) -> Result<(), E> {
        let approval = self
            .store
            .approval(id)
            .await
            .map_err(DecideError::Store)?
            .ok_or(DecideError::Unknown(id))?;
        may(&approval)?;
        Ok(self.decide(id, approve, decider).await?)
    }

    /// The rule the host ended approval `id` by, if it did (not a person).
    async fn ended_by(&self, id: ApprovalId) -> Option<&'static str> {
        let approval = self.store.approval(id).await.ok().flatten()?;
        if approval.state != ApprovalState::Revoked {
            return None;
        }
        crate::store::ended_by_rule(approval.decided_by.as_deref())
    }

    /// What a waiting call's trace says of approval `id`'s decision, read
    /// back from its row: the outcome, who decided (`by` names the host's
    /// own reason: the timeout, `host_shutdown`), and how long the call
    /// waited since `started`. Counted in the metrics.
    pub(super) async fn decision(
        &self,
        id: ApprovalId,
        started: Instant,
        by: Option<&str>,
        sealed_arguments: Option<Value>,
    ) -> Decision {
        let approval = self.store.approval(id).await.ok().flatten();
        let outcome = match approval.as_ref().map(|a| a.state) {
            Some(ApprovalState::Approved) => Decided::Approved,
            Some(ApprovalState::Denied) if by == Some(TIMEOUT_DECIDER) => Decided::TimedOut,
            Some(ApprovalState::Denied) => Decided::Denied,
            Some(ApprovalState::Revoked) => Decided::Revoked,
            Some(ApprovalState::Pending) | None => Decided::Unknown,
        };
        if let Some(metrics) = &self.metrics {
            metrics.approval_decided(outcome.name(), started.elapsed());
        }
        Decision {
            id,
            outcome,
            actor: decided_actor(by, approval.as_ref()),
            by: by
                .map(str::to_string)
                .or_else(|| approval.as_ref().and_then(|a| a.decided_by.clone())),
            decided_at_ms: approval.as_ref().and_then(|a| a.decided_at_ms),
            waited_ms: started.elapsed().as_millis() as u64,
            sealed_arguments,
        }
    }

    /// `arguments` sealed with the store key for the audit record
    /// (`{"args_digest", "nonce", "ciphertext"}`, base64), bound to the
    /// session, tool and digest; `None` without a key.
    pub(super) fn sealed_for_audit(
        &self,
        session: &str,
        tool: &str,
        digest: &str,
        arguments: &Value,
    ) -> Option<Value> {
        use base64::Engine;
        let key = self.arguments_key.as_ref()?;
        let (nonce, ciphertext) =
            crate::store::seal_arguments(key, session, tool, digest, arguments).ok()?;
        let b64 = base64::engine::general_purpose::STANDARD;
        Some(
            json!({"args_digest": digest, "nonce": b64.encode(nonce), "ciphertext": b64.encode(ciphertext)}),
        )
    }
}

/// Who decided, as fields: the person's verified identity when the
/// decision kept it, else the host (a timeout, a revocation, a restart),
/// named by `by`.
fn decided_actor(by: Option<&str>, approval: Option<&Approval>) -> Value {
    match (by, approval) {
        (
            None,
            Some(Approval {
                decided_actor: Some(actor),
                ..
            }),
        ) => actor.clone(),
        // Decided by someone who gave no fields (a store's own caller):
        // the text it gave is the subject.
        (None, Some(a)) if matches!(a.state, ApprovalState::Approved | ApprovalState::Denied) => {
            json!({"kind": "person", "subject": a.decided_by, "sub": null, "issuer": null, "via": null, "role": null})
        }
        _ => json!({
            "kind": "host",
            "subject": null,
            "sub": null,
            "issuer": null,
            "via": if by == Some(TIMEOUT_DECIDER) { "timeout" } else { "host" },
            "role": null,
        }),
    }
}

/// A decision as a waiting call's trace records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub id: ApprovalId,
    /// Approved, denied, timed out, revoked (or unknown): the `decided`
    /// row's rule.
    pub outcome: Decided,
    /// Who decided, as fields (see [`Decider`]).
    pub actor: Value,
    /// Who decided, as the store's text, or the host's own reason.
    pub by: Option<String>,
    pub decided_at_ms: Option<i64>,
    pub waited_ms: u64,
    /// The exact arguments, sealed with the store key, for an auditor:
    /// what was approved or denied.
    pub sealed_arguments: Option<Value>,
}

impl Decision {
    /// The `decided` row's detail, before what the waiting call adds (a
    /// reservation's estimate) and the sealed arguments.
    pub fn detail(&self) -> Value {
        json!({
            "approval": self.id.0,
            "actor": self.actor,
            "by": self.by,
            "decided_at_ms": self.decided_at_ms,
            "waited_ms": self.waited_ms,
        })
    }
}
