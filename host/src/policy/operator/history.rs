//! The session's history as a policy reads it (`context.history`).
//!
//! Counted before the call being decided, and only when a policy in force
//! reads it ([`super::OperatorPolicies::uses_history`]): otherwise a call
//! costs the store nothing more.
//!
//! What is counted is what the policies allowed outright, while policies
//! reading the history were in force: a call they refused, or sent to a
//! person, is not counted (an `@ask_person` call a person approves later
//! does not count either). The counts come from the store, read, decided
//! on and added to in one transaction under a per-brand lock
//! ([`crate::store::policy_counts`]), so "at most 5 sends an hour" allows
//! exactly 5 however many hosts serve the brand's sessions. A store that
//! cannot be reached refuses the call (`unrecorded`): a limit that cannot
//! be counted is not waived.

use super::{CallFacts, PolicyDecision, ResourceFacts};
use crate::boundary::{Boundary, Session};
use crate::policy::Rule;
use crate::store::policy_counts::{CallEffect, CountedCall};
use serde::{Deserialize, Serialize};

/// Counts of calls the policies allowed before this one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistoryFacts {
    /// Calls of the session.
    pub session_calls: i64,
    /// Writes and billed calls of the session.
    pub session_effects: i64,
    /// Units the meter of this call's connector charged the session (in
    /// the connector's `billing_unit`), settled calls only.
    pub session_spent_units: i64,
    /// Approvals a person gave in the session.
    pub session_approvals: i64,
    /// Calls of this tool.
    pub tool: WindowCounts,
    /// Calls of this connector's tools.
    pub connector: WindowCounts,
}

/// Calls counted in the session and over sliding windows of the brand
/// (a call counts in a window when it was allowed less than the window's
/// length before this one: exactly an hour before is out of the hour).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowCounts {
    /// In the session, since it opened.
    pub in_session: i64,
    /// In the session, in the last hour.
    pub in_session_last_hour: i64,
    /// In every session of the brand, in the last hour.
    pub in_brand_last_hour: i64,
    /// In every session of the brand, in the last day.
    pub in_brand_last_day: i64,
}

/// What a call does, as its session's effects count it: a billed call is
/// one whose connector has a meter.
pub(crate) fn effect_of(resource: &ResourceFacts) -> CallEffect {
    if resource.billing_unit.is_some() {
        CallEffect::Billed
    } else if resource.effect == "read" {
        CallEffect::Read
    } else {
        CallEffect::Write
    }
}

/// Decides `facts` with `decide`, the history filled in first when the
/// policies read it. Returns the decision and the facts it was made on.
pub(crate) async fn decide_with_history(
    boundary: &Boundary,
    session: &Session,
    facts: CallFacts,
    decide: impl Fn(&CallFacts) -> PolicyDecision + Send + Sync,
) -> Result<(PolicyDecision, CallFacts), Rule> {
    // The set in force now, which may be newer than the one `decide` holds
    // when they change meanwhile: a set without history rules then decides
    // on zeros, as the one now in force has no rule they could change, and
    // a set that ignores the history is counted for the one that reads it.
    if !boundary.policies().uses_history() {
        let facts = CallFacts {
            history: HistoryFacts::default(),
            ..facts
        };
        return Ok((decide(&facts), facts));
    }
    let call = CountedCall {
        brand: &session.brand,
        session: &session.id,
        connector: &facts.resource.connector,
        tool: &facts.action,
        effect: effect_of(&facts.resource),
        at_ms: facts.now_ms,
    };
    let decided = parking_lot::Mutex::new(None);
    let decide_on_history = |history: &HistoryFacts| {
        let facts = CallFacts {
            history: *history,
            ..facts.clone()
        };
        let decision = decide(&facts);
        let allowed = decision == PolicyDecision::Allow;
        *decided.lock() = Some((decision, facts));
        allowed
    };
    match boundary
        .store()
        .decide_on_history(&call, &decide_on_history)
        .await
    {
        Ok(_) => decided.into_inner().ok_or(Rule::Unrecorded),
        Err(e) => {
            tracing::error!(
                session = %session.id,
                tool = %facts.action,
                error = %e,
                "cannot count the session's history for the operator policies; the call is refused"
            );
            Err(Rule::Unrecorded)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(effect: &str, billing_unit: Option<&str>) -> ResourceFacts {
        ResourceFacts {
            connector: "agentmail".into(),
            origin: "component".into(),
            effect: effect.into(),
            billing_unit: billing_unit.map(String::from),
            routes: vec![],
            destination: None,
        }
    }

    #[test]
    fn a_metered_call_is_billed_whatever_its_effect() {
        assert_eq!(effect_of(&resource("read", None)), CallEffect::Read);
        assert_eq!(effect_of(&resource("write", None)), CallEffect::Write);
        assert_eq!(
            effect_of(&resource("read", Some("credits"))),
            CallEffect::Billed
        );
    }
}
