//! What-if before a change (issue 56, item 5; DESIGN D21: "a candidate
//! policy is replayed against recorded calls before it is applied").
//!
//! Every call that reached the operator policies left a row in the trace
//! (its `requested` row) naming the revision in force, its decision and
//! the facts it was decided on; its arguments are not among the facts but
//! sealed beside them with the store key ([`seal_arguments`]), readable
//! only by whoever holds the key or, through the admin API, by an admin or
//! an auditor. A replay reads those rows, rebuilds each call's facts with
//! its arguments where the caller may open them, and decides it again
//! under a candidate set with the same recorded history and time: only the
//! policies differ. The decision recorded then is the
//! "before" (the decision of the policies in force then, whatever they
//! were, named by its revision); the candidate's is the "after". Shared by
//! `scout-host policy test` and the admin API's `POST /v1/policies/test`,
//! so both answer the same for the same store.
//!
//! A call replayed without its arguments is never guessed: a candidate
//! policy that reads `context.args` (or anything made of them, such as
//! `context.email_domains`) and may apply to the tool makes the
//! call "undecidable without arguments", unless a policy that does not
//! read them forbids it anyway (a forbid wins whatever the others say).
//!
//! Calls the seed's filters refused never reached the policies and are not
//! replayed: policies only narrow, so no candidate can let them through.

use super::{CallFacts, OperatorPolicies, PolicyDecision, PolicyDoc};
use crate::store::{StoreError, TraceEvent, TraceFilter, TraceStore};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;

/// Trace rows read from the store per query.
const PAGE: usize = 1000;

/// The documents a candidate puts in force: `in_force` with each of
/// `candidate` replacing the document of its name, or added.
pub fn with_candidate(in_force: &[PolicyDoc], candidate: &[PolicyDoc]) -> Vec<PolicyDoc> {
    let mut docs: Vec<PolicyDoc> = in_force
        .iter()
        .filter(|doc| !candidate.iter().any(|c| c.name == doc.name))
        .cloned()
        .collect();
    docs.extend(candidate.iter().cloned());
    docs
}

/// Which recorded calls are replayed.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Only this session's calls.
    pub session: Option<String>,
    /// Only rows after this trace sequence number (0: from the start).
    pub after_seq: i64,
    /// Only calls decided at or after this time (ms since the Unix epoch).
    pub since_ms: Option<i64>,
    /// At most this many calls, the latest kept (`None`: every one).
    pub limit: Option<usize>,
}

/// A recorded call's arguments, as the one replaying may see them.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// Opened: the call is replayed with them.
    Opened(Value),
    /// Sealed in the row, but not opened for this caller (no store key,
    /// another store's key, or a caller who may not read them).
    NotReadable,
    /// The row kept no sealed arguments (a store without a key).
    NotKept,
}

impl Arguments {
    fn name(&self) -> &'static str {
        match self {
            Arguments::Opened(_) => "opened",
            Arguments::NotReadable => "not_readable",
            Arguments::NotKept => "not_kept",
        }
    }
}

/// One call as the trace recorded its policy decision.
#[derive(Debug, Clone)]
pub struct RecordedCall {
    /// The decision row's sequence number in the trace.
    pub seq: i64,
    pub call_id: String,
    pub session: String,
    pub brand: String,
    /// The policy revision in force when it was decided.
    pub revision: String,
    /// What the policies in force decided then.
    pub decision: PolicyDecision,
    /// The facts it was decided on (no arguments).
    pub facts: CallFacts,
    /// The digest of its arguments.
    pub args_digest: Option<String>,
    /// Its arguments, as the one replaying may see them.
    pub arguments: Arguments,
}

/// What a call's `requested` row records of its policy decision
/// (`detail.policy`, written by the boundary), read back.
pub(crate) struct DecisionRow {
    pub revision: String,
    pub decision: PolicyDecision,
    pub facts: CallFacts,
    pub args_digest: Option<String>,
    /// `{"args_digest", "nonce", "ciphertext"}` (base64), when kept.
    pub sealed_arguments: Option<Value>,
}

impl DecisionRow {
    /// The policy decision a trace row records, if it is one.
    pub(crate) fn of(event: &TraceEvent) -> Option<DecisionRow> {
        if event.state != crate::store::TraceState::Requested {
            return None;
        }
        let noted = event.detail.get("policy")?;
        let facts: CallFacts = serde_json::from_value(noted.get("facts")?.clone()).ok()?;
        let decision: PolicyDecision = serde_json::from_value(noted.clone()).ok()?;
        Some(DecisionRow {
            revision: noted
                .get("policy_revision")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            decision,
            facts,
            args_digest: event
                .detail
                .get("args_digest")
                .and_then(Value::as_str)
                .map(str::to_string),
            sealed_arguments: event.detail.get("sealed_arguments").cloned(),
        })
    }
}

/// `args` of a call of `tool` (its MCP name) in `session`, sealed with the
/// store `key` for its `requested` row (`detail.sealed_arguments`:
/// `{"args_digest", "nonce", "ciphertext"}`, base64), bound to the
/// session, the tool and the digest, as an approval's are: what a replay
/// opens for whoever holds the key, and the admin API for an admin or an
/// auditor ([`crate::boundary::Boundary::shown_row`]).
pub fn seal_arguments(key: &[u8; 32], session: &str, tool: &str, args: &Value) -> Option<Value> {
    use base64::Engine;
    let digest = crate::store::args_digest(args);
    let (nonce, ciphertext) =
        crate::store::seal_arguments(key, session, tool, &digest, args).ok()?;
    let b64 = base64::engine::general_purpose::STANDARD;
    Some(serde_json::json!({
        "args_digest": digest,
        "nonce": b64.encode(nonce),
        "ciphertext": b64.encode(ciphertext),
    }))
}

/// The arguments sealed in `row`, opened with the store `key`.
pub fn open_with_key(key: &[u8; 32], event: &TraceEvent) -> Arguments {
    use base64::Engine;
    let Some(row) = DecisionRow::of(event) else {
        return Arguments::NotKept;
    };
    let Some(sealed) = row.sealed_arguments else {
        return Arguments::NotKept;
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let bytes = |key: &str| sealed[key].as_str().and_then(|t| b64.decode(t).ok());
    let (Some(digest), Some(nonce), Some(ciphertext)) = (
        sealed["args_digest"].as_str(),
        bytes("nonce"),
        bytes("ciphertext"),
    ) else {
        return Arguments::NotReadable;
    };
    let tool = event.tool.as_deref().unwrap_or_default();
    match crate::store::open_arguments(key, &event.session, tool, digest, &nonce, &ciphertext) {
        Some(args) => Arguments::Opened(args),
        None => Arguments::NotReadable,
    }
}

/// How a replay off a running host (`scout-host policy test`) opens each
/// recorded call's arguments: with the store key `serve` seals them with,
/// read from the configuration's `store_key_env` when it is set; without
/// it, every call is replayed without its arguments.
pub fn store_key_opener(
    config: &crate::serve::ServeConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<impl Fn(&TraceEvent) -> Arguments + Send + Sync + use<>, String> {
    let key = env(&config.store_key_env)
        .map(|text| crate::config::parse_store_key(&text))
        .transpose()
        .map_err(|e| format!("{}: {e}", config.store_key_env))?;
    Ok(move |event: &TraceEvent| match &key {
        Some(key) => open_with_key(key, event),
        None if event.detail.get("sealed_arguments").is_some() => Arguments::NotReadable,
        None => Arguments::NotKept,
    })
}

/// The arguments of a row as the admin API shows it to its caller (see
/// [`crate::boundary::Boundary::shown_row`]): opened as `detail.arguments`
/// for a caller who may read them.
pub fn shown_arguments(shown: &Value) -> Arguments {
    let detail = &shown["detail"];
    match (detail.get("arguments"), detail.get("arguments_unreadable")) {
        (Some(args), None) if !args.is_null() => Arguments::Opened(args.clone()),
        (Some(_), _) => Arguments::NotReadable,
        (None, _) if detail.get("args_digest").is_some() => Arguments::NotReadable,
        (None, _) => Arguments::NotKept,
    }
}

/// Every call of `selection` whose policy decision the trace recorded,
/// oldest first, each with its arguments as `arguments` opens them.
pub async fn recorded_calls(
    store: &dyn TraceStore,
    selection: &Selection,
    arguments: &(dyn Fn(&TraceEvent) -> Arguments + Send + Sync),
) -> Result<Vec<RecordedCall>, StoreError> {
    let filter = match &selection.session {
        Some(session) => TraceFilter::Session(session),
        None => TraceFilter::All,
    };
    let mut calls = std::collections::VecDeque::new();
    let mut after = selection.after_seq;
    loop {
        let page = store.trace_page(filter, after, PAGE).await?;
        let full = page.len() == PAGE;
        for (seq, event) in &page {
            after = *seq;
            if selection.since_ms.is_some_and(|since| event.at_ms < since) {
                continue;
            }
            let Some(row) = DecisionRow::of(event) else {
                continue;
            };
            calls.push_back(RecordedCall {
                seq: *seq,
                call_id: event.call_id.clone().unwrap_or_default(),
                session: event.session.clone(),
                brand: event.brand.clone(),
                revision: row.revision,
                decision: row.decision,
                facts: row.facts,
                args_digest: row.args_digest,
                arguments: arguments(event),
            });
            if selection.limit.is_some_and(|limit| calls.len() > limit) {
                calls.pop_front();
            }
        }
        if !full {
            return Ok(calls.into());
        }
    }
}

/// A decision as a replay reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Replayed {
    Allow,
    Forbid {
        policy: String,
    },
    AskPerson {
        policy: String,
    },
    /// A candidate policy that reads `context.args` may apply, and the
    /// call's arguments are not at hand: not decided, never guessed.
    UndecidableWithoutArguments {
        /// The policies that read them.
        policies: Vec<String>,
    },
}

impl From<&PolicyDecision> for Replayed {
    fn from(decision: &PolicyDecision) -> Replayed {
        match decision {
            PolicyDecision::Allow => Replayed::Allow,
            PolicyDecision::Forbid { policy } => Replayed::Forbid {
                policy: policy.clone(),
            },
            PolicyDecision::AskPerson { policy } => Replayed::AskPerson {
                policy: policy.clone(),
            },
        }
    }
}

impl Replayed {
    /// Whether `self` and `other` decide alike (the policy that decided
    /// aside: a refusal by another policy is still a refusal).
    fn same_kind(&self, other: &Replayed) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

impl std::fmt::Display for Replayed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Replayed::Allow => f.write_str("allow"),
            Replayed::Forbid { policy } => write!(f, "forbid (policy {policy})"),
            Replayed::AskPerson { policy } => write!(f, "ask_person (policy {policy})"),
            Replayed::UndecidableWithoutArguments { policies } => write!(
                f,
                "undecidable without arguments (policy {} reads context.args)",
                policies.join(", ")
            ),
        }
    }
}

/// One recorded call whose decision the candidate changes, or cannot
/// decide without its arguments.
#[derive(Debug, Clone, Serialize)]
pub struct ChangedCall {
    pub seq: i64,
    pub call_id: String,
    pub session: String,
    pub brand: String,
    /// The tool's MCP name.
    pub tool: String,
    /// When it was decided (RFC 3339).
    pub at: String,
    /// The revision in force then.
    pub revision: String,
    /// The digest of its arguments (as the trace keeps it).
    pub args_digest: Option<String>,
    pub before: Replayed,
    pub after: Replayed,
    /// `opened`, `not_readable` or `not_kept`.
    pub arguments: &'static str,
}

/// What a candidate would change among the recorded calls.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The candidate set's revision, as it would be recorded.
    pub candidate_revision: String,
    /// Calls replayed.
    pub replayed: usize,
    /// Calls whose decision changes.
    pub changed: usize,
    /// Calls the candidate cannot decide without their arguments.
    pub undecidable: usize,
    /// Calls decided alike.
    pub unchanged: usize,
    /// Calls replayed without their arguments (decided where no candidate
    /// policy reads them).
    pub without_arguments: usize,
    /// The changed and the undecidable calls, in the order recorded.
    pub calls: Vec<ChangedCall>,
}

impl Report {
    /// One line per call that changes, then the summary (`policy test`).
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for call in &self.calls {
            let _ = writeln!(
                text,
                "{} session {} {}: {} -> {}",
                call.call_id, call.session, call.tool, call.before, call.after
            );
        }
        let _ = writeln!(
            text,
            "{} calls replayed under {}: {} would change, {} undecidable without arguments, {} unchanged ({} replayed without arguments)",
            self.replayed,
            self.candidate_revision,
            self.changed,
            self.undecidable,
            self.unchanged,
            self.without_arguments,
        );
        text
    }
}

/// Decides every recorded call under `candidate` and reports the ones
/// whose decision changes.
pub fn replay(calls: &[RecordedCall], candidate: &OperatorPolicies) -> Report {
    let mut report = Report {
        candidate_revision: candidate.revision().to_string(),
        replayed: calls.len(),
        changed: 0,
        undecidable: 0,
        unchanged: 0,
        without_arguments: 0,
        calls: Vec::new(),
    };
    for call in calls {
        let before = Replayed::from(&call.decision);
        let after = match &call.arguments {
            Arguments::Opened(args) => Replayed::from(&candidate.decide(&CallFacts {
                args: args.clone(),
                ..call.facts.clone()
            })),
            _ => {
                report.without_arguments += 1;
                decide_without_arguments(candidate, &call.facts)
            }
        };
        if matches!(after, Replayed::UndecidableWithoutArguments { .. }) {
            report.undecidable += 1;
        } else if before.same_kind(&after) {
            report.unchanged += 1;
            continue;
        } else {
            report.changed += 1;
        }
        report.calls.push(ChangedCall {
            seq: call.seq,
            call_id: call.call_id.clone(),
            session: call.session.clone(),
            brand: call.brand.clone(),
            tool: call.facts.action.clone(),
            at: crate::dates::rfc3339_ms(call.facts.now_ms),
            revision: call.revision.clone(),
            args_digest: call.args_digest.clone(),
            before,
            after,
            arguments: call.arguments.name(),
        });
    }
    report
}

/// `facts` (without arguments) decided under `candidate`: exactly where no
/// policy that may apply reads `context.args`, or where one that does not
/// read them forbids it; otherwise undecidable.
fn decide_without_arguments(candidate: &OperatorPolicies, facts: &CallFacts) -> Replayed {
    let readers = candidate.reading_arguments(facts);
    let without_readers = Replayed::from(&candidate.decide_excluding(facts, &readers));
    if readers.is_empty() || matches!(without_readers, Replayed::Forbid { .. }) {
        return without_readers;
    }
    Replayed::UndecidableWithoutArguments { policies: readers }
}

impl OperatorPolicies {
    /// The forbids that read `context.args` and whose scope may take the
    /// call's action, by id: without the arguments, they cannot be decided.
    pub(crate) fn reading_arguments(&self, facts: &CallFacts) -> Vec<String> {
        let mut ids: Vec<String> = self
            .set
            .policies()
            .filter(|policy| self.forbids.contains(&policy.id().to_string()))
            // A policy whose form cannot be read is taken to read them.
            .filter(|policy| policy.to_json().map_or(true, |est| est_reads_args(&est)))
            .filter(|policy| self.scope_may_take(policy, facts))
            .map(|policy| policy.id().to_string())
            .collect();
        ids.sort();
        ids
    }

    /// Whether `policy`'s action scope may take the call's action.
    fn scope_may_take(&self, policy: &cedar_policy::Policy, facts: &CallFacts) -> bool {
        let connector = self
            .schema
            .actions
            .get(&facts.action)
            .map_or(facts.resource.connector.as_str(), |a| a.connector.as_str());
        scope_takes(policy, &facts.action, connector)
    }

    /// [`OperatorPolicies::decide`] with the policies `excluded` left out.
    pub(crate) fn decide_excluding(
        &self,
        facts: &CallFacts,
        excluded: &[String],
    ) -> PolicyDecision {
        if excluded.is_empty() {
            return self.decide(facts);
        }
        let mut set = cedar_policy::PolicySet::new();
        for policy in self.set.policies() {
            if !excluded.contains(&policy.id().to_string()) {
                // Taken from a set of unique ids: cannot collide.
                let _ = set.add(policy.clone());
            }
        }
        let matched = self.matched(
            &set,
            &facts.principal,
            &facts.resource,
            &facts.action,
            self.context(facts),
        );
        if let Some(policy) = matched.iter().find(|id| !self.asks.contains(*id)) {
            return PolicyDecision::Forbid {
                policy: policy.clone(),
            };
        }
        match matched.into_iter().next() {
            Some(policy) => PolicyDecision::AskPerson { policy },
            None => PolicyDecision::Allow,
        }
    }

    /// Each policy by id, with the served tools (MCP names) its action
    /// scope takes, for `scout-host policy check`.
    pub fn applies_to(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = self
            .set
            .policies()
            .map(|policy| {
                let tools = self
                    .schema
                    .actions
                    .iter()
                    .filter(|(action, shape)| scope_takes(policy, action, &shape.connector))
                    .map(|(action, _)| action.clone())
                    .collect();
                (policy.id().to_string(), tools)
            })
            .collect();
        out.sort();
        out
    }
}

/// Whether `policy`'s action scope takes `action` (a tool of `connector`):
/// any action, the action itself, or (`in`) the action or its connector's
/// group.
fn scope_takes(policy: &cedar_policy::Policy, action: &str, connector: &str) -> bool {
    let group = super::schema::connector_group(connector);
    let names = |uid: &cedar_policy::EntityUid, name: &str| uid.id().unescaped() == name;
    match policy.action_constraint() {
        cedar_policy::ActionConstraint::Any => true,
        cedar_policy::ActionConstraint::Eq(uid) => names(&uid, action),
        cedar_policy::ActionConstraint::In(uids) => uids
            .iter()
            .any(|uid| names(uid, action) || names(uid, &group)),
    }
}

/// Whether a policy's JSON form reads `context.args`: any use of `context`
/// other than reading its `history` or `now` counts (`context` passed
/// whole may hand the arguments on).
fn est_reads_args(est: &Value) -> bool {
    match est {
        Value::Object(map) => {
            if map.get("Var").and_then(Value::as_str) == Some("context") {
                return true;
            }
            // `context.history`, `context has now`: no arguments read
            // here; the rest of the expression is looked at.
            let on_context = |inner: &Value| {
                inner
                    .get("left")
                    .and_then(|l| l.get("Var"))
                    .and_then(Value::as_str)
                    == Some("context")
                    && matches!(
                        inner.get("attr").and_then(Value::as_str),
                        Some("history" | "now")
                    )
            };
            map.iter().any(|(key, inner)| {
                !(matches!(key.as_str(), "." | "has") && on_context(inner)) && est_reads_args(inner)
            })
        }
        Value::Array(items) => items.iter().any(est_reads_args),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::ServedTool;
    use super::super::{
        DeploymentSchema, PolicyRevision, PolicySource, PrincipalFacts, ResourceFacts,
    };
    use super::*;
    use crate::store::TraceState;
    use serde_json::json;

    const READ_FILE: &str = "mcp__github__github_read_file";
    const LIST_BRANCHES: &str = "mcp__github__github_list_branches";

    fn schema() -> DeploymentSchema {
        let tool = |tool: &str, argument: &str| ServedTool {
            connector: "github".into(),
            tool: tool.into(),
            input_schema: json!({
                "type": "object",
                "properties": {argument: {"type": "string"}},
                "required": [argument],
            }),
        };
        DeploymentSchema::from_tools([
            tool("github_read_file", "path"),
            tool("github_list_branches", "repo"),
        ])
        .unwrap()
    }

    fn compiled(docs: &[PolicyDoc]) -> OperatorPolicies {
        OperatorPolicies::compile(docs, &schema(), PolicyRevision::of(0, docs)).unwrap()
    }

    fn doc(name: &str, text: &str) -> PolicyDoc {
        PolicyDoc {
            name: name.into(),
            source: PolicySource::Api,
            text: text.into(),
        }
    }

    fn facts(action: &str) -> CallFacts {
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
            action: action.into(),
            resource: ResourceFacts {
                connector: "github".into(),
                origin: "component".into(),
                effect: "read".into(),
                billing_unit: None,
                routes: vec![],
                destination: None,
            },
            args: Value::Null,
            history: Default::default(),
            now_ms: 1_700_000_000_000,
        }
    }

    /// A `requested` row as the boundary writes it for a decided call.
    fn row(call: &str, facts: &CallFacts, args: &Value, decision: &PolicyDecision) -> TraceEvent {
        TraceEvent {
            session: facts.principal.session.clone(),
            brand: facts.principal.brand.clone(),
            call_id: Some(call.into()),
            tool: Some(facts.action.clone()),
            state: TraceState::Requested,
            rule: None,
            detail: json!({
                "args_digest": crate::store::args_digest(args),
                "policy": {
                    "policy_revision": "r0-abc",
                    "decision": decision.name(),
                    "policy": decision.policy(),
                    "facts": facts.without_args(),
                },
            }),
            at_ms: facts.now_ms,
            origin: Default::default(),
        }
    }

    fn recorded(call: &str, action: &str, args: Value, decision: PolicyDecision) -> RecordedCall {
        let facts = facts(action);
        let event = row(call, &facts, &args, &decision);
        let row = DecisionRow::of(&event).expect("a decision row");
        RecordedCall {
            seq: 1,
            call_id: call.into(),
            session: event.session,
            brand: event.brand,
            revision: row.revision,
            decision: row.decision,
            facts: row.facts,
            args_digest: row.args_digest,
            arguments: Arguments::Opened(args),
        }
    }

    #[test]
    fn a_decision_row_reads_back_as_recorded() {
        let facts = facts(READ_FILE);
        let args = json!({"path": "src/lib.rs"});
        for decision in [
            PolicyDecision::Allow,
            PolicyDecision::Forbid {
                policy: "no-src".into(),
            },
            PolicyDecision::AskPerson {
                policy: "ask".into(),
            },
        ] {
            let read = DecisionRow::of(&row("c1", &facts, &args, &decision)).unwrap();
            assert_eq!(read.decision, decision);
            assert_eq!(read.facts, facts.without_args());
            assert_eq!(read.revision, "r0-abc");
            assert_eq!(
                read.args_digest.as_deref(),
                Some(crate::store::args_digest(&args).as_str())
            );
        }
        let mut other = row("c1", &facts, &args, &PolicyDecision::Allow);
        other.state = TraceState::Allowed;
        assert!(DecisionRow::of(&other).is_none(), "only a requested row");
        other.state = TraceState::Requested;
        other.detail = json!({"args_digest": "d"});
        assert!(
            DecisionRow::of(&other).is_none(),
            "a call no policy decided"
        );
    }

    #[test]
    fn sealed_arguments_open_with_the_key_only() {
        let key = [9u8; 32];
        let facts = facts(READ_FILE);
        let args = json!({"path": ".github/workflows/ci.yml"});
        let mut event = row("c1", &facts, &args, &PolicyDecision::Allow);
        assert_eq!(open_with_key(&key, &event), Arguments::NotKept);
        event.detail["sealed_arguments"] = seal_arguments(&key, "s1", READ_FILE, &args).unwrap();
        assert_eq!(open_with_key(&key, &event), Arguments::Opened(args));
        assert_eq!(open_with_key(&[8u8; 32], &event), Arguments::NotReadable);
        event.tool = Some(LIST_BRANCHES.into());
        assert_eq!(
            open_with_key(&key, &event),
            Arguments::NotReadable,
            "bound to its tool"
        );
    }

    #[test]
    fn a_replay_reports_exactly_the_decisions_that_change() {
        let in_force = [doc(
            "github.cedar",
            r#"@id("no-src")
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.path like "src/*" };"#,
        )];
        let candidate = [doc(
            "github.cedar",
            r#"@id("no-workflows")
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.path like ".github/*" };
@id("no-branches")
forbid (principal, action in [Scout::Action::"connector:github"], resource)
when { context.history.session_calls > 2 };"#,
        )];
        let before = compiled(&in_force);
        let after = compiled(&with_candidate(&in_force, &candidate));
        assert_eq!(after.ids(), ["no-branches", "no-workflows"], "replaced");
        let read = |call: &str, path: &str| {
            let args = json!({"path": path});
            let decision = before.decide(&CallFacts {
                args: args.clone(),
                ..facts(READ_FILE)
            });
            recorded(call, READ_FILE, args, decision)
        };
        let mut branches = recorded(
            "c4",
            LIST_BRANCHES,
            json!({"repo": "hello"}),
            PolicyDecision::Allow,
        );
        branches.facts.history.session_calls = 3;
        let calls = [
            read("c1", "README.md"),
            read("c2", "src/lib.rs"),
            read("c3", ".github/workflows/ci.yml"),
            branches,
        ];
        let report = replay(&calls, &after);
        let changed: Vec<(&str, String, String)> = report
            .calls
            .iter()
            .map(|c| {
                (
                    c.call_id.as_str(),
                    c.before.to_string(),
                    c.after.to_string(),
                )
            })
            .collect();
        assert_eq!(
            changed,
            [
                (
                    "c2",
                    "forbid (policy no-src)".to_string(),
                    "allow".to_string()
                ),
                (
                    "c3",
                    "allow".to_string(),
                    "forbid (policy no-workflows)".to_string()
                ),
                (
                    "c4",
                    "allow".to_string(),
                    "forbid (policy no-branches)".to_string()
                ),
            ]
        );
        assert_eq!(
            (
                report.replayed,
                report.changed,
                report.undecidable,
                report.unchanged
            ),
            (4, 3, 0, 1)
        );
        let text = report.to_text();
        assert!(
            text.ends_with(": 3 would change, 0 undecidable without arguments, 1 unchanged (0 replayed without arguments)\n"),
            "{text}"
        );
    }

    #[test]
    fn without_arguments_a_policy_reading_them_is_never_guessed() {
        let candidate = compiled(&[doc(
            "c.cedar",
            r#"@id("no-workflows")
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.path like ".github/*" };
@id("late")
forbid (principal, action, resource) when { context.now > 1800000000000 };
@id("busy")
forbid (principal, action in [Scout::Action::"connector:github"], resource)
when { context.history.session_calls > 5 };"#,
        )]);
        let blind = |action: &str, calls: i64| {
            let mut call = recorded("c", action, json!({}), PolicyDecision::Allow);
            call.arguments = Arguments::NotReadable;
            call.facts.history.session_calls = calls;
            call
        };
        let report = replay(
            &[
                blind(READ_FILE, 0),
                blind(READ_FILE, 9),
                blind(LIST_BRANCHES, 9),
                blind(LIST_BRANCHES, 0),
            ],
            &candidate,
        );
        let after: Vec<Replayed> = report.calls.iter().map(|c| c.after.clone()).collect();
        assert_eq!(
            after,
            [
                Replayed::UndecidableWithoutArguments {
                    policies: vec!["no-workflows".into()]
                },
                // A forbid that reads no argument decides anyway.
                Replayed::Forbid {
                    policy: "busy".into()
                },
                Replayed::Forbid {
                    policy: "busy".into()
                },
            ]
        );
        assert_eq!(
            (
                report.changed,
                report.undecidable,
                report.unchanged,
                report.without_arguments
            ),
            (2, 1, 1, 4)
        );
        assert_eq!(
            json!(report.calls[0].after),
            json!({"decision": "undecidable_without_arguments", "policies": ["no-workflows"]})
        );
    }

    #[test]
    fn each_policy_applies_to_the_tools_its_scope_takes() {
        let policies = compiled(&[doc(
            "c.cedar",
            r#"@id("one") forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource);
@id("group") forbid (principal, action in [Scout::Action::"connector:github"], resource) when { context.now > 0 };
@id("all") forbid (principal, action, resource) when { context.now < 0 };"#,
        )]);
        assert_eq!(
            policies.applies_to(),
            [
                (
                    "all".to_string(),
                    vec![LIST_BRANCHES.to_string(), READ_FILE.to_string()]
                ),
                (
                    "group".to_string(),
                    vec![LIST_BRANCHES.to_string(), READ_FILE.to_string()]
                ),
                ("one".to_string(), vec![READ_FILE.to_string()]),
            ]
        );
    }

    #[test]
    fn reading_history_or_time_is_not_reading_arguments() {
        let est = |text: &str| {
            cedar_policy::Policy::parse(None, text)
                .unwrap()
                .to_json()
                .unwrap()
        };
        assert!(!est_reads_args(&est(
            "forbid (principal, action, resource) when { context.history.session_calls > 1 && context.now > 0 };"
        )));
        assert!(!est_reads_args(&est(
            "forbid (principal, action, resource) when { context has history };"
        )));
        assert!(est_reads_args(&est(
            r#"forbid (principal, action, resource) when { context.args.path == "x" };"#
        )));
        assert!(est_reads_args(&est(
            "forbid (principal, action, resource) when { context has args };"
        )));
        // Made from the arguments' addresses: reading it reads them.
        assert!(est_reads_args(&est(
            r#"forbid (principal, action, resource) unless { ["example.com"].containsAll(context.email_domains) };"#
        )));
        assert!(est_reads_args(&est(
            "forbid (principal, action, resource) when { [context].contains(context) };"
        )));
    }
}
