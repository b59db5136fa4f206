//! Every trace row is built here, and only here.
//!
//! The trace (D6) is the audit record: a call's steps, a session's start,
//! a host tool's answer, a person's decision, a change made through the
//! admin API and a change of what is deployed. The export, the console,
//! the spans and the stores' own SQL (`rule = 'approval_requested'`) read
//! its rows, so the shape of a row and the text of its rule must not drift
//! between the places that write one. A writer names a [`TraceRule`] and
//! calls one constructor below; this module is the one place a
//! [`TraceEvent`] is filled and a rule becomes the text the store keeps
//! (exactly the text written before the rule was typed). Writing the rows
//! stays with the caller: the boundary buffers a call's rows
//! ([`crate::boundary`]), an admin handler answers the store's error.

use crate::policy::{Removal, ReviewHold, Rule};
use crate::session::Session;
use crate::store::{ApprovalId, CapabilityRequest, TraceState};
/// A row, where it came from, and which rows a page reads: the trace's
/// vocabulary, kept in the store.
pub use crate::store::{Origin, TraceEvent, TraceFilter};

mod service;
use serde_json::{Value, json};
pub use service::Trace;
use std::borrow::Cow;
use std::fmt;

/// A closed set of rule names, each stored as its text.
macro_rules! rule_names {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every one, in the order declared.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// As the trace stores it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The one the trace stores as `name`.
            pub fn parse(name: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|rule| rule.name() == name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

rule_names! {
    /// The gate an allowed call passed (an `allowed` row).
    Passed {
        /// No per-call gate.
        Open => "open",
        /// A GraphQL tool whose document holds only queries.
        GraphqlQuery => "graphql_query",
        /// A GraphQL mutation a person approved.
        GraphqlMutationApprovedByPerson => "graphql_mutation_approved_by_person",
        /// A person approved this exact call.
        ApprovedByPerson => "approved_by_person",
        /// Charged against the grant's allowance.
        Allowance => "allowance",
        /// A billed call under the operator's per-call threshold.
        SpendThreshold => "spend_threshold",
        /// One of the host's own tools (`mcp__scout__*`).
        HostTool => "host_tool",
    }
}

rule_names! {
    /// What was decided (a `decided` row): how an approval ended as the
    /// waiting call saw it, or a person's answer to something else.
    Decided {
        /// A person approved the call.
        Approved => "approved",
        /// Nobody answered before the approval timed out.
        TimedOut => "timed_out",
        /// A person declined the call.
        Denied => "denied",
        /// The approval was revoked (its session, grant or tool changed).
        Revoked => "revoked",
        /// The approval could not be read back.
        Unknown => "unknown",
        /// Asked while the call ran, and its caller went away.
        Withdrawn => "withdrawn",
        /// A person resumed a session paused by its denial lineage.
        SessionResumed => "session_resumed",
        /// A person answered a capability request (granting nothing).
        CapabilityAnswered => "capability_answered",
    }
}

rule_names! {
    /// A change made through the admin API (a `changed` row).
    Change {
        SessionOpened => "session_opened",
        SessionEnded => "session_ended",
        /// A session open its brand's limits refused (nothing was opened).
        SessionRefused => "session_refused",
        ProfileSaved => "profile_saved",
        ProfileDeleted => "profile_deleted",
        ConnectionStored => "connection_stored",
        ConnectionDisabled => "connection_disabled",
        ConnectionShared => "connection_shared",
        ConnectionUnshared => "connection_unshared",
        ToolReviewed => "tool_reviewed",
        /// The host closed a session's upstream MCP session with a remote
        /// server that idled past its bound (not through the admin API).
        UpstreamClosed => "upstream_closed",
        /// The host opened a session's upstream MCP session again, at the
        /// first call after it closed it (not through the admin API).
        UpstreamReopened => "upstream_reopened",
    }
}

rule_names! {
    /// A change of what is deployed (a `deployed` row).
    Deploy {
        ConnectorAdded => "connector_added",
        ConnectorUpgraded => "connector_upgraded",
        ConnectorRetired => "connector_retired",
        SessionComponentStored => "session_component_stored",
        SessionComponentWithdrawn => "session_component_withdrawn",
        /// An operator policy document stored through the admin API.
        PolicyStored => "policy_stored",
        /// An operator policy document deleted through the admin API.
        PolicyRetired => "policy_retired",
    }
}

/// The rule a trace row names, typed; stored as [`TraceRule::name`]. Which
/// text means what depends on the row's state (`revoked` is a refusal in a
/// `denied` row and an approval's end in a `decided` one), so a rule is
/// read back with its state ([`TraceRule::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceRule {
    /// Why a call was refused, or a tool withheld or held (`denied`,
    /// `permission_denied`, `removed`): the policy's own vocabulary.
    Policy(Rule),
    /// The gate an allowed call passed (`allowed`).
    Passed(Passed),
    /// The host asked a person to approve a call (`requested`).
    ApprovalRequested,
    /// What was decided (`decided`).
    Decided(Decided),
    /// A change made through the admin API (`changed`).
    Changed(Change),
    /// A change of what is deployed (`deployed`).
    Deployed(Deploy),
}

impl TraceRule {
    /// As the trace stores it.
    pub fn name(&self) -> Cow<'static, str> {
        match self {
            TraceRule::Policy(rule) => rule.name(),
            TraceRule::Passed(passed) => Cow::Borrowed(passed.name()),
            TraceRule::ApprovalRequested => Cow::Borrowed("approval_requested"),
            TraceRule::Decided(decided) => Cow::Borrowed(decided.name()),
            TraceRule::Changed(change) => Cow::Borrowed(change.name()),
            TraceRule::Deployed(deploy) => Cow::Borrowed(deploy.name()),
        }
    }

    /// The rule a row in `state` names as `name`, if the host writes it.
    pub fn parse(state: TraceState, name: &str) -> Option<TraceRule> {
        match state {
            TraceState::Removed => {
                Removal::parse(name).map(|r| TraceRule::Policy(Rule::Removed(r)))
            }
            // A name the agent is told is not offered: removed, held, or none.
            TraceState::PermissionDenied => Rule::all()
                .find(|rule| rule.is_not_offered() && rule.name() == name)
                .map(TraceRule::Policy),
            // A refusal, or a tool held at a session's start; a removed
            // tool's call is `permission_denied`.
            TraceState::Denied => Rule::all()
                .find(|rule| !matches!(rule, Rule::Removed(_)) && rule.name() == name)
                .map(TraceRule::Policy),
            TraceState::Allowed => Passed::parse(name).map(TraceRule::Passed),
            TraceState::Requested => {
                (name == "approval_requested").then_some(TraceRule::ApprovalRequested)
            }
            TraceState::Decided => Decided::parse(name).map(TraceRule::Decided),
            TraceState::Changed => Change::parse(name).map(TraceRule::Changed),
            TraceState::Deployed => Deploy::parse(name).map(TraceRule::Deployed),
            _ => None,
        }
    }
}

impl fmt::Display for TraceRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl From<Rule> for TraceRule {
    fn from(rule: Rule) -> TraceRule {
        TraceRule::Policy(rule)
    }
}

impl From<Passed> for TraceRule {
    fn from(passed: Passed) -> TraceRule {
        TraceRule::Passed(passed)
    }
}

impl From<Decided> for TraceRule {
    fn from(decided: Decided) -> TraceRule {
        TraceRule::Decided(decided)
    }
}

impl From<Change> for TraceRule {
    fn from(change: Change) -> TraceRule {
        TraceRule::Changed(change)
    }
}

impl From<Deploy> for TraceRule {
    fn from(deploy: Deploy) -> TraceRule {
        TraceRule::Deployed(deploy)
    }
}

/// Whom a row is about.
struct About<'a> {
    session: &'a str,
    brand: &'a str,
    call_id: Option<&'a str>,
    tool: Option<&'a str>,
}

/// The one place a row is filled.
fn row(
    about: About<'_>,
    state: TraceState,
    rule: Option<TraceRule>,
    detail: Value,
    origin: Origin,
) -> TraceEvent {
    TraceEvent {
        session: about.session.to_string(),
        brand: about.brand.to_string(),
        call_id: about.call_id.map(str::to_string),
        tool: about.tool.map(str::to_string),
        state,
        rule: rule.map(|rule| rule.name().into_owned()),
        detail,
        at_ms: crate::store::now_ms(),
        origin,
    }
}

/// `detail` with `key` set (an object, or `null` made one).
fn with_field(mut detail: Value, key: &str, value: Value) -> Value {
    match &mut detail {
        Value::Object(fields) => {
            fields.insert(key.to_string(), value);
        }
        Value::Null => detail = json!({ key: value }),
        _ => {}
    }
    detail
}

/// The rows of one call in a session: a connector's or remote server's
/// tool, or one of the host's own. They name no trace or span until the
/// writer sets the call's ([`TraceEvent::origin`]).
#[derive(Clone, Copy)]
pub struct CallRows<'a> {
    session: &'a Session,
    call_id: &'a str,
    /// As the agent names it (`mcp__server__tool`).
    tool: &'a str,
}

impl<'a> CallRows<'a> {
    pub fn new(session: &'a Session, call_id: &'a str, tool: &'a str) -> CallRows<'a> {
        CallRows {
            session,
            call_id,
            tool,
        }
    }

    fn row(&self, state: TraceState, rule: Option<TraceRule>, detail: Value) -> TraceEvent {
        let about = About {
            session: &self.session.id,
            brand: &self.session.brand,
            call_id: Some(self.call_id),
            tool: (!self.tool.is_empty()).then_some(self.tool),
        };
        row(about, state, rule, detail, Origin::default())
    }

    /// The call as it arrived: only its arguments' digest.
    pub fn requested(&self, args_digest: &str) -> TraceEvent {
        self.row(
            TraceState::Requested,
            None,
            json!({ "args_digest": args_digest }),
        )
    }

    /// A refusal by `rule`: `permission_denied` for a tool the agent is
    /// told is not offered, `denied` otherwise; the reason the agent was
    /// given, and where the refusal stands in its session's lineage.
    pub fn refused<L: serde::Serialize>(&self, rule: Rule, lineage: Option<&L>) -> TraceEvent {
        let mut detail = json!({ "reason": rule.safe_reason() });
        if let Some(lineage) = lineage {
            detail["lineage"] = json!(lineage);
        }
        self.row(refusal_state(rule), Some(rule.into()), detail)
    }

    /// A refusal by `rule` with more said of it (`fields`, after the
    /// reason): not counted in the lineage.
    pub fn refused_with(&self, rule: Rule, fields: Value) -> TraceEvent {
        let mut detail = json!({ "reason": rule.safe_reason() });
        if let (Value::Object(detail), Value::Object(fields)) = (&mut detail, fields) {
            detail.extend(fields);
        }
        self.row(refusal_state(rule), Some(rule.into()), detail)
    }

    /// The call passed `passed`.
    pub fn allowed(&self, passed: Passed, detail: Value) -> TraceEvent {
        self.row(TraceState::Allowed, Some(passed.into()), detail)
    }

    /// What the call did (its HTTP exchanges, logs, duration).
    pub fn executed(&self, detail: Value) -> TraceEvent {
        self.row(TraceState::Executed, None, detail)
    }

    /// What the call answered.
    pub fn result(&self, detail: Value) -> TraceEvent {
        self.row(TraceState::Result, None, detail)
    }

    /// The host asked a person to approve the call (`detail` names the
    /// approval).
    pub fn approval_asked(&self, detail: Value) -> TraceEvent {
        self.row(
            TraceState::Requested,
            Some(TraceRule::ApprovalRequested),
            detail,
        )
    }

    /// How the call's approval ended, who decided it and when.
    pub fn decided(&self, decided: Decided, detail: Value) -> TraceEvent {
        self.row(TraceState::Decided, Some(decided.into()), detail)
    }

    /// The call's caller went away before a person decided approval
    /// `approval`, which was revoked: the wait's decision when asked while
    /// the call ran (`during_call`), else the call's end.
    pub fn withdrawn(&self, approval: ApprovalId, during_call: bool) -> TraceEvent {
        let (state, rule) = if during_call {
            (TraceState::Decided, TraceRule::Decided(Decided::Withdrawn))
        } else {
            (
                TraceState::Denied,
                TraceRule::Policy(Rule::ApprovalWithdrawn),
            )
        };
        self.row(
            state,
            Some(rule),
            json!({"approval": approval.0, "reason": "the call's caller went away before a person decided; the approval was revoked"}),
        )
    }

    /// A host tool's call, which the boundary admitted: its request (its
    /// arguments' digest), the pass, and its answer, naming `origin`.
    pub fn host_tool(&self, args_digest: &str, answer: &Value, origin: &Origin) -> [TraceEvent; 3] {
        [
            self.requested(args_digest),
            self.allowed(Passed::HostTool, Value::Null),
            self.result(json!({"answer": answer})),
        ]
        .map(|mut event| {
            event.origin = origin.clone();
            event
        })
    }
}

/// The state of a refusal's row: `permission_denied` for a name the agent
/// is told is not offered (a protocol error over MCP), `denied` otherwise.
fn refusal_state(rule: Rule) -> TraceState {
    if rule.is_not_offered() {
        TraceState::PermissionDenied
    } else {
        TraceState::Denied
    }
}

/// The rows of a session's start (under the call id `session`): what its
/// brand connected, how many tools it was eligible for, each held or
/// removed, and what it was offered.
#[derive(Clone, Copy)]
pub struct SessionStart<'a> {
    session: &'a Session,
}

impl<'a> SessionStart<'a> {
    pub fn new(session: &'a Session) -> SessionStart<'a> {
        SessionStart { session }
    }

    fn row(
        &self,
        tool: &str,
        state: TraceState,
        rule: Option<TraceRule>,
        detail: Value,
    ) -> TraceEvent {
        CallRows::new(self.session, "session", tool).row(state, rule, detail)
    }

    /// The connectors its brand has connected.
    pub fn registered(&self, connectors: &[&String]) -> TraceEvent {
        self.row(
            "",
            TraceState::Registered,
            None,
            json!({ "connectors": connectors }),
        )
    }

    /// How many tools the policy allows it.
    pub fn eligible(&self, tools: usize) -> TraceEvent {
        self.row("", TraceState::Eligible, None, json!({ "tools": tools }))
    }

    /// `tool` is held until an operator reviews it.
    pub fn held(&self, tool: &str, hold: ReviewHold) -> TraceEvent {
        self.row(
            tool,
            TraceState::Denied,
            Some(Rule::Held(hold).into()),
            json!({"held": "not offered until an operator reviews it"}),
        )
    }

    /// `tool` could have been given and was not, by `removal`.
    pub fn removed(&self, tool: &str, removal: Removal) -> TraceEvent {
        self.row(
            tool,
            TraceState::Removed,
            Some(Rule::Removed(removal).into()),
            Value::Null,
        )
    }

    /// What it is offered.
    pub fn offered(&self, tools: &[&str]) -> TraceEvent {
        self.row("", TraceState::Offered, None, json!({ "tools": tools }))
    }
}

/// A person resumed `session`, paused by its denial lineage: `by` as the
/// text names them, `actor` as fields.
pub fn session_resumed(session: &Session, by: String, actor: Value, origin: Origin) -> TraceEvent {
    let about = About {
        session: &session.id,
        brand: &session.brand,
        call_id: None,
        tool: None,
    };
    row(
        about,
        TraceState::Decided,
        Some(Decided::SessionResumed.into()),
        json!({ "by": by, "actor": actor }),
        origin,
    )
}

/// A person answered capability `request`, asked through the host tool
/// `host_tool` (its bare name); nothing was granted.
pub fn capability_answered(
    request: &CapabilityRequest,
    host_tool: &str,
    by: &str,
    actor: Value,
    origin: Origin,
) -> TraceEvent {
    let tool = crate::policy::names::mcp(crate::policy::names::HOST_SERVER, host_tool);
    let about = About {
        session: &request.session,
        brand: &request.brand,
        call_id: None,
        tool: Some(&tool),
    };
    row(
        about,
        TraceState::Decided,
        Some(Decided::CapabilityAnswered.into()),
        json!({"request": request.id, "by": by, "actor": actor, "granted": false}),
        origin,
    )
}

/// A change made through the admin API to `session` (empty: none) of
/// `brand` (empty: none): `detail` says what (never a secret), `actor` who.
pub fn changed(
    session: &str,
    brand: &str,
    change: Change,
    detail: Value,
    actor: Value,
    origin: Origin,
) -> TraceEvent {
    let about = About {
        session,
        brand,
        call_id: None,
        tool: None,
    };
    row(
        about,
        TraceState::Changed,
        Some(TraceRule::Changed(change)),
        with_field(detail, "actor", actor),
        origin,
    )
}

/// A change of what is deployed, to connector (or session component)
/// `name`, under no session: `detail` says what, `actor` who, when an
/// admin API request made it.
pub fn deployed(
    name: &str,
    deploy: Deploy,
    detail: Value,
    actor: Option<Value>,
    origin: Origin,
) -> TraceEvent {
    let detail = match actor {
        Some(actor) => with_field(detail, "actor", actor),
        None => detail,
    };
    let about = About {
        session: "",
        brand: "",
        call_id: None,
        tool: Some(name),
    };
    row(
        about,
        TraceState::Deployed,
        Some(TraceRule::Deployed(deploy)),
        detail,
        origin,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::switches::Switch;

    /// Every rule the host writes, with its state and the text it stored
    /// before the rule was typed (listed from the code that wrote it).
    fn stored_today() -> Vec<(TraceState, &'static str, TraceRule)> {
        use TraceState as S;
        let removed = |r| TraceRule::Policy(Rule::Removed(r));
        let held = |h| TraceRule::Policy(Rule::Held(h));
        let refused = TraceRule::Policy;
        let github = Switch::GithubAllowWrites;
        let by_state: [(TraceState, Vec<(&'static str, TraceRule)>); 8] = [
            // boundary: the gate an allowed call passed (`Pass::rule`), and
            // serve/host_tools.rs.
            (
                S::Allowed,
                vec![
                    ("open", Passed::Open.into()),
                    ("graphql_query", Passed::GraphqlQuery.into()),
                    (
                        "graphql_mutation_approved_by_person",
                        Passed::GraphqlMutationApprovedByPerson.into(),
                    ),
                    ("approved_by_person", Passed::ApprovedByPerson.into()),
                    ("allowance", Passed::Allowance.into()),
                    ("spend_threshold", Passed::SpendThreshold.into()),
                    ("host_tool", Passed::HostTool.into()),
                ],
            ),
            // boundary/approval.rs: the wait.
            (
                S::Requested,
                vec![("approval_requested", TraceRule::ApprovalRequested)],
            ),
            // boundary/approval.rs; serve/admin/sessions.rs, approvals.rs.
            (
                S::Decided,
                vec![
                    ("approved", Decided::Approved.into()),
                    ("timed_out", Decided::TimedOut.into()),
                    ("denied", Decided::Denied.into()),
                    ("revoked", Decided::Revoked.into()),
                    ("unknown", Decided::Unknown.into()),
                    ("withdrawn", Decided::Withdrawn.into()),
                    ("session_resumed", Decided::SessionResumed.into()),
                    ("capability_answered", Decided::CapabilityAnswered.into()),
                ],
            ),
            // serve/admin: `record_change`'s callers.
            (
                S::Changed,
                vec![
                    ("session_opened", Change::SessionOpened.into()),
                    ("session_ended", Change::SessionEnded.into()),
                    ("session_refused", Change::SessionRefused.into()),
                    ("profile_saved", Change::ProfileSaved.into()),
                    ("profile_deleted", Change::ProfileDeleted.into()),
                    ("connection_stored", Change::ConnectionStored.into()),
                    ("connection_disabled", Change::ConnectionDisabled.into()),
                    ("connection_shared", Change::ConnectionShared.into()),
                    ("connection_unshared", Change::ConnectionUnshared.into()),
                    ("tool_reviewed", Change::ToolReviewed.into()),
                    // remote/mod.rs: an idle upstream session.
                    ("upstream_closed", Change::UpstreamClosed.into()),
                    ("upstream_reopened", Change::UpstreamReopened.into()),
                ],
            ),
            // deployments/runtime_change.rs, deployments/session_components.rs.
            (
                S::Deployed,
                vec![
                    ("connector_added", Deploy::ConnectorAdded.into()),
                    ("connector_upgraded", Deploy::ConnectorUpgraded.into()),
                    ("connector_retired", Deploy::ConnectorRetired.into()),
                    (
                        "session_component_stored",
                        Deploy::SessionComponentStored.into(),
                    ),
                    (
                        "session_component_withdrawn",
                        Deploy::SessionComponentWithdrawn.into(),
                    ),
                    // host/policies.rs.
                    ("policy_stored", Deploy::PolicyStored.into()),
                    ("policy_retired", Deploy::PolicyRetired.into()),
                ],
            ),
            // policy::Rule, as the boundary wrote it: a session's start...
            (
                S::Removed,
                vec![
                    (
                        "switch:GITHUB_ALLOW_WRITES",
                        removed(Removal::Switch(github)),
                    ),
                    ("not_registered", removed(Removal::NotRegistered)),
                    ("outside_role", removed(Removal::OutsideRole)),
                    ("no_coworkers", removed(Removal::NoCoworkers)),
                    ("no_skills", removed(Removal::NoSkills)),
                    ("goals_engine_off", removed(Removal::GoalsEngineOff)),
                    ("no_browser_provider", removed(Removal::NoBrowserProvider)),
                    ("not_selected", removed(Removal::NotSelected)),
                    ("operator_role", removed(Removal::OperatorRole)),
                    ("operator_policy", removed(Removal::OperatorPolicy)),
                ],
            ),
            // ... a call refused as not offered ...
            (
                S::PermissionDenied,
                vec![
                    ("not_offered", refused(Rule::NotOffered)),
                    (
                        "switch:GITHUB_ALLOW_WRITES",
                        removed(Removal::Switch(github)),
                    ),
                    ("not_registered", removed(Removal::NotRegistered)),
                    ("outside_role", removed(Removal::OutsideRole)),
                    ("not_selected", removed(Removal::NotSelected)),
                    ("operator_role", removed(Removal::OperatorRole)),
                    ("operator_policy", removed(Removal::OperatorPolicy)),
                    ("unreviewed_new", held(ReviewHold::New)),
                    ("unreviewed_changed", held(ReviewHold::Changed)),
                    (
                        "unreviewed_store_unavailable",
                        held(ReviewHold::StoreUnavailable),
                    ),
                    ("unknown_tool", held(ReviewHold::UnknownTool)),
                ],
            ),
            // ... and refused otherwise (a held tool at a session's start too).
            (
                S::Denied,
                vec![
                    ("unreviewed_new", held(ReviewHold::New)),
                    ("unreviewed_changed", held(ReviewHold::Changed)),
                    (
                        "unreviewed_store_unavailable",
                        held(ReviewHold::StoreUnavailable),
                    ),
                    ("unknown_tool", held(ReviewHold::UnknownTool)),
                    (
                        "switch:GITHUB_ALLOW_WRITES",
                        refused(Rule::SwitchedOff(github)),
                    ),
                    ("approval_required", refused(Rule::ApprovalRequired)),
                    ("approval_denied", refused(Rule::ApprovalDenied)),
                    ("approval_timed_out", refused(Rule::ApprovalTimedOut)),
                    ("approval_withdrawn", refused(Rule::ApprovalWithdrawn)),
                    ("caller_gone", refused(Rule::CallerGone)),
                    (
                        "approval_answer_refused",
                        refused(Rule::ApprovalAnswerRefused),
                    ),
                    ("outside_role", refused(Rule::OutsideRole)),
                    ("revoked", refused(Rule::Revoked)),
                    ("invalid_arguments", refused(Rule::InvalidArguments)),
                    ("graphql_unreadable", refused(Rule::GraphqlUnreadable)),
                    ("unrecorded", refused(Rule::Unrecorded)),
                    ("session_paused", refused(Rule::Paused)),
                    ("delegation_expired", refused(Rule::DelegationExpired)),
                    ("delegation_exhausted", refused(Rule::DelegationExhausted)),
                    ("session_expired", refused(Rule::SessionExpired)),
                    (
                        "session_calls_exhausted",
                        refused(Rule::SessionCallsExhausted),
                    ),
                    (
                        "session_effects_exhausted",
                        refused(Rule::SessionEffectsExhausted),
                    ),
                    ("host_shutdown", refused(Rule::HostShutdown)),
                    ("lease_not_held", refused(Rule::LeaseNotHeld)),
                    ("connector_retired", refused(Rule::Retired)),
                    ("operator_policy", refused(Rule::OperatorPolicy)),
                ],
            ),
        ];
        by_state
            .into_iter()
            .flat_map(|(state, rules)| {
                rules
                    .into_iter()
                    .map(move |(text, rule)| (state, text, rule))
            })
            .collect()
    }

    #[test]
    fn every_switch_is_named_by_its_own_variable_removed_or_refusing() {
        for switch in Switch::ALL {
            let name = format!("switch:{}", switch.var());
            let removed = TraceRule::Policy(Rule::Removed(Removal::Switch(switch)));
            let refusing = TraceRule::Policy(Rule::SwitchedOff(switch));
            assert_eq!(
                (removed.name(), refusing.name()),
                (name.clone().into(), name.clone().into())
            );
            assert_eq!(TraceRule::parse(TraceState::Removed, &name), Some(removed));
            assert_eq!(
                TraceRule::parse(TraceState::PermissionDenied, &name),
                Some(removed)
            );
            assert_eq!(TraceRule::parse(TraceState::Denied, &name), Some(refusing));
        }
    }

    #[test]
    fn every_rule_is_stored_as_the_text_written_before_it_was_typed_and_reads_back() {
        let rows = stored_today();
        for (state, text, rule) in &rows {
            assert_eq!(rule.name(), *text, "{rule:?}");
            assert_eq!(rule.to_string(), *text);
            assert_eq!(
                TraceRule::parse(*state, text),
                Some(*rule),
                "{state} {text}"
            );
        }
        // Each variant of each closed set is in the list above, so a new
        // one is given its text here too.
        let listed = |rule: TraceRule| rows.iter().any(|(_, _, r)| *r == rule);
        assert!(Passed::ALL.iter().all(|p| listed(TraceRule::Passed(*p))));
        assert!(Decided::ALL.iter().all(|d| listed(TraceRule::Decided(*d))));
        assert!(Change::ALL.iter().all(|c| listed(TraceRule::Changed(*c))));
        assert!(Deploy::ALL.iter().all(|d| listed(TraceRule::Deployed(*d))));
        for rule in Rule::all()
            .filter(|r| !matches!(r, Rule::SwitchedOff(_) | Rule::Removed(Removal::Switch(_))))
        {
            assert!(
                listed(TraceRule::Policy(rule)),
                "{rule:?} has no stored text listed"
            );
        }
        // A text the host does not write under that state is no rule.
        assert_eq!(TraceRule::parse(TraceState::Allowed, "approved"), None);
        assert_eq!(TraceRule::parse(TraceState::Result, "open"), None);
        assert_eq!(TraceRule::parse(TraceState::Removed, "revoked"), None);
    }

    #[test]
    fn every_policy_rule_is_read_back_by_its_name() {
        // No wildcard: a rule added to the policy must be added to
        // `Rule::all` (and to `stored_today`) before this compiles.
        for rule in Rule::all() {
            match rule {
                Rule::NotOffered
                | Rule::Removed(_)
                | Rule::Held(_)
                | Rule::SwitchedOff(_)
                | Rule::ApprovalRequired
                | Rule::ApprovalDenied
                | Rule::ApprovalTimedOut
                | Rule::ApprovalWithdrawn
                | Rule::CallerGone
                | Rule::ApprovalAnswerRefused
                | Rule::OutsideRole
                | Rule::Revoked
                | Rule::InvalidArguments
                | Rule::GraphqlUnreadable
                | Rule::Unrecorded
                | Rule::Paused
                | Rule::DelegationExpired
                | Rule::DelegationExhausted
                | Rule::SessionExpired
                | Rule::SessionCallsExhausted
                | Rule::SessionEffectsExhausted
                | Rule::HostShutdown
                | Rule::LeaseNotHeld
                | Rule::Retired
                | Rule::OperatorPolicy => {}
            }
            let state = match rule {
                Rule::Removed(_) => TraceState::Removed,
                _ => refusal_state(rule),
            };
            assert_eq!(
                TraceRule::parse(state, &rule.name()),
                Some(TraceRule::Policy(rule))
            );
        }
    }

    #[test]
    fn a_changes_actor_is_added_to_its_detail() {
        let row = changed(
            "",
            "acme",
            Change::ToolReviewed,
            json!({"tool": "t"}),
            json!({"subject": "ops"}),
            Origin::default(),
        );
        assert_eq!(row.state, TraceState::Changed);
        assert_eq!(row.rule.as_deref(), Some("tool_reviewed"));
        assert_eq!(
            row.detail,
            json!({"tool": "t", "actor": {"subject": "ops"}})
        );
        let row = deployed(
            "c",
            Deploy::ConnectorAdded,
            json!({"by": "ops"}),
            None,
            Origin::default(),
        );
        assert_eq!((row.tool.as_deref(), row.session.as_str()), (Some("c"), ""));
        assert_eq!(row.detail, json!({"by": "ops"}));
    }
}
