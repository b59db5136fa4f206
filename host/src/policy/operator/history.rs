//! The session's history as a policy reads it (`context.history`).
//!
//! Counted before the call being decided, and only when a policy in force
//! reads it ([`super::OperatorPolicies::uses_history`]): otherwise a call
//! costs the store nothing more.
//!
//! What is counted is every call the policies did not refuse while policies
//! reading the history were in force: allowed, or sent to a person by an
//! `@ask_person` policy whatever the person answers (left out, the calls a
//! person approves would never reach a harder limit: "ask after 5 sends,
//! refuse after 10" would ask forever). A refused call is not counted. The
//! counts come from the store, read, decided
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

/// Counts of the calls before this one that the policies did not refuse
/// (allowed, or sent to a person).
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
        let counted = !matches!(decision, PolicyDecision::Forbid { .. });
        *decided.lock() = Some((decision, facts));
        counted
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
    use super::super::schema::ServedTool;
    use super::super::{
        DeploymentSchema, OperatorPolicies, PolicyDoc, PolicyRevision, PolicySource, PrincipalFacts,
    };
    use super::*;
    use crate::policy::{Catalog, Role, SessionInput, Switches};
    use crate::store::{SqliteStore, Store};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const SEND: &str = "mcp__agentmail__agentmail_send_message";

    /// The policies in force: `text` against a deployment serving
    /// AgentMail's send.
    fn policies(text: &str) -> Arc<OperatorPolicies> {
        let schema = DeploymentSchema::from_tools([ServedTool {
            connector: "agentmail".into(),
            tool: "agentmail_send_message".into(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {"to": {"type": "array", "items": {"type": "string"}}},
                "required": ["to"],
            }),
        }])
        .unwrap();
        let docs = [PolicyDoc {
            name: "rules.cedar".into(),
            source: PolicySource::Api,
            text: text.into(),
        }];
        Arc::new(OperatorPolicies::compile(&docs, &schema, PolicyRevision::of(0, &docs)).unwrap())
    }

    const FIVE_AN_HOUR: &str = r#"@id("five-an-hour")
forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
when { context.history.tool.in_session_last_hour >= 5 };"#;

    const NOT_TO_THE_CEO: &str = r#"@id("not-to-the-ceo")
forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
when { context.args.to.contains("ceo@example.com") };"#;

    fn boundary(store: Arc<dyn Store>, text: &str) -> (Boundary, Session) {
        let boundary = Boundary::new(store, Catalog::seed(), Switches::default());
        boundary.set_policies(policies(text));
        let session = Session::new("s1", "acme", SessionInput::new(Role::PersonChat));
        (boundary, session)
    }

    fn facts(now_ms: i64) -> CallFacts {
        CallFacts {
            principal: PrincipalFacts {
                session: "s1".into(),
                brand: "acme".into(),
                role: "person_chat".into(),
                base_role: "person_chat".into(),
                profile: None,
                requester: None,
                person_can_be_asked: true,
            },
            action: SEND.into(),
            resource: resource("write", None),
            args: serde_json::json!({"to": ["ann@example.com"]}),
            history: HistoryFacts::default(),
            now_ms,
        }
    }

    /// A store every write to fails: a file opened to read only.
    fn unwritable_store(dir: &std::path::Path) -> Arc<dyn Store> {
        let path = dir.join("t.db");
        drop(SqliteStore::open(&path).unwrap());
        Arc::new(SqliteStore::open_to_read(&path).unwrap())
    }

    #[tokio::test]
    async fn the_sixth_call_in_the_hour_is_decided_on_the_five_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("t.db")).unwrap());
        let (boundary, session) = boundary(store, FIVE_AN_HOUR);
        let in_force = boundary.policies();
        let mut decisions = Vec::new();
        for i in 0..7 {
            let (decision, seen) =
                decide_with_history(&boundary, &session, facts(1_000 + i), |f| {
                    in_force.decide(f)
                })
                .await
                .unwrap();
            assert_eq!(seen.history.tool.in_session_last_hour, i.min(5), "{seen:?}");
            decisions.push(decision);
        }
        let forbid = PolicyDecision::Forbid {
            policy: "five-an-hour".into(),
        };
        assert_eq!(decisions[..5], [const { PolicyDecision::Allow }; 5]);
        assert_eq!(decisions[5..], [forbid.clone(), forbid]);
    }

    #[tokio::test]
    async fn a_call_sent_to_a_person_counts_toward_a_harder_limit() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("t.db")).unwrap());
        let rules = format!(
            "{}\n{}",
            r#"@id("ask-after-two") @ask_person
forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
when { context.history.tool.in_session_last_hour >= 2 };"#,
            r#"@id("none-after-three")
forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
when { context.history.tool.in_session_last_hour >= 3 };"#
        );
        let (boundary, session) = boundary(store, &rules);
        let in_force = boundary.policies();
        let mut decisions = Vec::new();
        for i in 0..5 {
            let (decision, _) = decide_with_history(&boundary, &session, facts(1_000 + i), |f| {
                in_force.decide(f)
            })
            .await
            .unwrap();
            decisions.push(decision);
        }
        let ask = PolicyDecision::AskPerson {
            policy: "ask-after-two".into(),
        };
        let forbid = PolicyDecision::Forbid {
            policy: "none-after-three".into(),
        };
        assert_eq!(
            decisions,
            [
                PolicyDecision::Allow,
                PolicyDecision::Allow,
                ask,
                forbid.clone(),
                forbid
            ]
        );
    }

    #[tokio::test]
    async fn without_a_history_rule_the_store_is_never_read() {
        // A store that fails every count (see the next test): untouched.
        let dir = tempfile::tempdir().unwrap();
        let (boundary, session) = boundary(unwritable_store(dir.path()), NOT_TO_THE_CEO);
        let in_force = boundary.policies();
        let (decision, seen) =
            decide_with_history(&boundary, &session, facts(1_000), |f| in_force.decide(f))
                .await
                .unwrap();
        assert_eq!(decision, PolicyDecision::Allow);
        assert_eq!(seen.history, HistoryFacts::default());
    }

    #[tokio::test]
    async fn a_store_that_cannot_count_refuses_the_call_undecided() {
        let dir = tempfile::tempdir().unwrap();
        let (boundary, session) = boundary(unwritable_store(dir.path()), FIVE_AN_HOUR);
        let in_force = boundary.policies();
        let decided = AtomicUsize::new(0);
        let refused = decide_with_history(&boundary, &session, facts(1_000), |f| {
            decided.fetch_add(1, Ordering::SeqCst);
            in_force.decide(f)
        })
        .await;
        assert_eq!(refused.err(), Some(Rule::Unrecorded));
        assert_eq!(decided.load(Ordering::SeqCst), 0, "nothing was decided");
    }

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
