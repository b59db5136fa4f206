//! Operators' Cedar policies at the boundary (issue 56): where a call the
//! seed's filters allow is decided by the policies in force, before any
//! person is asked or handle granted, so a refused call sends nothing.
//!
//! A tool a policy forbids whatever its arguments is not offered (absent
//! beats refusing): it is left out of `tools/list`, a session's start
//! traces it `removed` by `operator_policy` with the policy's id, and a
//! call naming it anyway is refused as not offered. Every call that
//! reaches the policies records, in its `requested` row, the revision in
//! force, the decision, the deciding policy and the call's facts, with
//! its arguments sealed with the store key beside them (bound to the
//! session, tool and digest, as an approval's): what `policy test` replays.

use super::trace::CallTrace;
use super::{Boundary, Denied, MISFIT_TOLD_BYTES};
use crate::policy::operator::{
    CallFacts, OperatorPolicies, PolicyDecision, PrincipalFacts, ResourceFacts, history, replay,
};
use crate::policy::{Removal, Rule};
use crate::runtime::{LoadedComponent, Tool};
use crate::session::Session;
use crate::store::TraceState;
use serde_json::{Value, json};

/// What the policies decided for a call that may go on.
pub(super) enum PolicyPass {
    /// No policy in force, or none matched.
    Allowed,
    /// An `@ask_person` forbid matched: the call asks a person; `facts`
    /// are decided again after the wait, under the policies then in force.
    AsksPerson {
        policy: String,
        facts: Box<CallFacts>,
    },
}

impl Boundary {
    /// The session as the policies see it.
    pub(crate) fn principal_facts(&self, session: &Session) -> PrincipalFacts {
        let input = &session.input;
        PrincipalFacts {
            session: session.id.clone(),
            brand: session.brand.clone(),
            role: input.role_name().to_string(),
            base_role: input.role.api_name().to_string(),
            profile: input.profile.as_ref().map(|p| p.name.clone()),
            requester: None,
            person_can_be_asked: input.role.can_ask_a_person()
                && input.approval_channel
                && self.switches.require_write_approval,
        }
    }

    /// `called` of `component` as the policies see it; `effect` as it runs
    /// (a remote tool's as reviewed).
    pub(crate) fn resource_facts(
        &self,
        component: &LoadedComponent,
        called: &Tool,
        effect: crate::Effect,
    ) -> ResourceFacts {
        let billing_unit = self
            .catalog()
            .connector(component.name())
            .and_then(|spec| spec.billing)
            .and_then(|unit| serde_json::to_value(unit).ok())
            .and_then(|unit| unit.as_str().map(str::to_string));
        ResourceFacts {
            connector: component.name().to_string(),
            origin: if component.is_remote() {
                "remote"
            } else {
                "component"
            }
            .to_string(),
            effect: match effect {
                crate::Effect::Read => "read",
                _ => "write",
            }
            .to_string(),
            billing_unit,
            routes: called
                .routes
                .iter()
                .map(|r| format!("{} {}", r.method.as_str(), r.path))
                .collect(),
            destination: called.routes.iter().find_map(|r| r.destination.clone()),
        }
    }

    /// The policy that forbids `called` to `session` whatever its
    /// arguments, if one does: the tool is then not offered.
    pub(crate) fn forbidden_always(
        &self,
        policies: &OperatorPolicies,
        session: &Session,
        component: &LoadedComponent,
        called: &Tool,
    ) -> Option<String> {
        if policies.is_empty() {
            return None;
        }
        let name = crate::policy::names::mcp(component.name(), &called.name);
        policies.forbids_always(
            &self.principal_facts(session),
            &self.resource_facts(component, called, called.effect),
            &name,
        )
    }

    /// Decides `called` with `args` under the policies in force, after the
    /// seed's gate: refused (recorded, nothing sent), asking a person, or
    /// allowed. `effect` is the tool's as it runs.
    pub(super) async fn decide_by_policies(
        &self,
        trace: &mut CallTrace<'_>,
        component: &LoadedComponent,
        called: &Tool,
        args: &Value,
        effect: crate::Effect,
    ) -> Result<PolicyPass, Denied> {
        let policies = self.policies();
        if policies.is_empty() {
            return Ok(PolicyPass::Allowed);
        }
        let session = trace.session;
        let revision = policies.revision().to_string();
        let principal = self.principal_facts(session);
        let resource = self.resource_facts(component, called, effect);
        if let Some(policy) = policies.forbids_always(&principal, &resource, &trace.name) {
            let fields = json!({"policy": policy, "policy_revision": revision});
            return Err(deny_by_policy(
                trace,
                Rule::Removed(Removal::OperatorPolicy),
                fields,
                None,
            )
            .await);
        }
        // Policies read typed arguments: what does not fit the tool's
        // parameters is refused first, as before a person is asked.
        if let Some(denied) = misfit(trace, called, args).await {
            return Err(denied);
        }
        let facts = CallFacts {
            principal,
            action: trace.name.clone(),
            resource,
            args: args.clone(),
            history: Default::default(),
            now_ms: crate::store::now_ms(),
        };
        let decided =
            history::decide_with_history(self, session, facts, |f| policies.decide(f)).await;
        let (decision, facts) = match decided {
            Ok(decided) => decided,
            Err(rule) => return Err(trace.deny(rule).await),
        };
        note_decision(trace, &revision, &decision, &facts);
        match decision {
            PolicyDecision::Allow => Ok(PolicyPass::Allowed),
            PolicyDecision::Forbid { policy } => {
                let fields = json!({"policy": policy, "policy_revision": revision});
                let told = format!("policy `{policy}`");
                Err(deny_by_policy(trace, Rule::OperatorPolicy, fields, Some(told)).await)
            }
            PolicyDecision::AskPerson { policy } if !facts.principal.person_can_be_asked => {
                let fields = json!({
                    "policy": policy,
                    "policy_revision": revision,
                    "ask_person": "nobody to ask",
                });
                let told = format!("policy `{policy}` asks a person, and there is nobody to ask");
                Err(deny_by_policy(trace, Rule::OperatorPolicy, fields, Some(told)).await)
            }
            PolicyDecision::AskPerson { policy } => Ok(PolicyPass::AsksPerson {
                policy,
                facts: Box::new(facts),
            }),
        }
    }

    /// After a person approved a call an `@ask_person` policy sent them:
    /// the call is decided again under the policies in force now (D22: a
    /// call that waited is authorized against what is current); only a
    /// plain forbid refuses it now (the person already answered the ask).
    pub(super) async fn decide_again_after_wait(
        &self,
        trace: &mut CallTrace<'_>,
        facts: &CallFacts,
    ) -> Result<(), Denied> {
        let policies = self.policies();
        let decision = policies.decide(facts);
        if let PolicyDecision::Forbid { policy } = decision {
            let fields = json!({
                "policy": policy,
                "policy_revision": policies.revision().to_string(),
                "after_approval": true,
            });
            let told = format!("policy `{policy}`");
            return Err(deny_by_policy(trace, Rule::OperatorPolicy, fields, Some(told)).await);
        }
        Ok(())
    }
}

/// The call's refusal by `rule`, its row naming the policy (`fields`),
/// counted in the session's denial lineage; `told` is what the agent is
/// told besides the rule's reason.
async fn deny_by_policy(
    trace: &mut CallTrace<'_>,
    rule: Rule,
    fields: Value,
    told: Option<String>,
) -> Denied {
    let lineage = super::lineage::record(
        trace.session,
        &trace.targets,
        rule,
        trace.boundary.pause_after,
    );
    let mut row = trace.rows().refused(rule, lineage.as_ref());
    if let (Value::Object(detail), Value::Object(fields)) = (&mut row.detail, fields) {
        detail.extend(fields);
    }
    trace.push(row);
    trace.flush_async().await;
    Denied {
        rule,
        lineage,
        detail: told,
    }
}

/// Arguments that do not fit `called`'s parameters, refused and recorded.
pub(super) async fn misfit(
    trace: &mut CallTrace<'_>,
    called: &Tool,
    args: &Value,
) -> Option<Denied> {
    let misfit = called.arguments_misfit(args)?;
    let rule = Rule::InvalidArguments;
    let (detail, _) = crate::capabilities::scrub::cut_at(
        format!("{}: {}", misfit.path, misfit.message),
        MISFIT_TOLD_BYTES,
    );
    trace.push(
        trace
            .rows()
            .refused_with(rule, json!({"path": misfit.path, "why": misfit.message})),
    );
    trace.flush_async().await;
    Some(Denied {
        detail: Some(detail),
        ..Denied::by(rule)
    })
}

/// Records the decision in the call's `requested` row (still buffered:
/// nothing of the call is written before its first decision).
fn note_decision(
    trace: &mut CallTrace<'_>,
    revision: &str,
    decision: &PolicyDecision,
    facts: &CallFacts,
) {
    let noted = json!({
        "policy_revision": revision,
        "decision": decision.name(),
        "policy": decision.policy(),
        "facts": facts.without_args(),
    });
    let requested = trace
        .events
        .iter_mut()
        .find(|e| e.state == TraceState::Requested && e.rule.is_none());
    match requested {
        Some(row) => {
            if let Value::Object(detail) = &mut row.detail {
                detail.insert("policy".into(), noted);
                // The arguments, sealed with the store key as an approval's
                // are: what `policy test` replays for whoever may open them.
                let key = trace.boundary.arguments_key.as_ref();
                let name = &trace.name;
                let sealed = key.and_then(|key| {
                    replay::seal_arguments(key, &trace.session.id, name, &facts.args)
                });
                if let Some(sealed) = sealed {
                    detail.insert("sealed_arguments".into(), sealed);
                }
            }
        }
        None => {
            tracing::warn!(call = %trace.call_id, "the call's request row was written already; its policy decision is not recorded with it")
        }
    }
}

impl Boundary {
    /// The deployment changed (a connector added, upgraded or retired at
    /// runtime, a remote server listed anew): the policies in force are
    /// compiled again against the schema of what `served` is now, so each
    /// call's arguments are typed as the tools now take them. A set that no
    /// longer validates keeps the previous one in force (its forbids still
    /// apply to the tools they named; a new tool's arguments are not typed,
    /// so a forbid reading them errs and refuses: fails closed), said
    /// loudly in the log with every error and its line; the next policy
    /// change that validates replaces it.
    /// Call it holding [`Boundary::policy_change`], with `served` read
    /// under that hold (two changes at once then recompile in order).
    pub(crate) fn deployment_changed(&self, served: &[&LoadedComponent]) {
        let current = self.policies();
        if current.is_empty() {
            return;
        }
        let schema = match crate::policy::operator::DeploymentSchema::of(served) {
            Ok(schema) => schema,
            Err(e) => {
                tracing::error!(error = %e, "the deployment changed and its policy schema cannot be built; the policies in force stay as compiled");
                return;
            }
        };
        if schema.text() == current.schema().text() {
            return;
        }
        match current.recompile(&schema) {
            Ok(compiled) => {
                tracing::info!(revision = %compiled.revision(), "the deployment changed: operator policies compiled again against its schema");
                self.set_policies(std::sync::Arc::new(compiled));
            }
            Err(errors) => tracing::error!(
                revision = %current.revision(),
                "the deployment changed and the operator policies in force no longer validate against it; the previous compilation stays in force until a policy change that validates:\n{errors}"
            ),
        }
    }
}
