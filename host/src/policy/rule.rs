//! One vocabulary for "no".
//!
//! Every reason the host refuses, withholds or holds back a call is a
//! [`Rule`]. From it come the trace's `rule` ([`Rule::name`]: the operator's
//! exact reason, such as `switch:GITHUB_ALLOW_WRITES`, `not_registered` or
//! `unreviewed_changed`), the agent's bounded reason ([`Rule::safe_reason`],
//! which never names a hidden tool, says why it is hidden, or carries a
//! secret), and the answer's shape ([`Rule::is_not_offered`]: a name the
//! session was not given is a protocol error over MCP, exactly as a name
//! that never existed). What the agent is told is itself a rule
//! ([`Rule::told`]), so the two can never disagree about which is which.

use super::switches::Switch;
use std::borrow::Cow;

/// Why a tool a session could have had is not in its surface (the rule of
/// a `removed` trace event at the session's start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Removal {
    /// An operator switch that is off.
    Switch(Switch),
    /// No live credential for the connector was handed to the session.
    NotRegistered,
    /// The role's ceiling, a profile's request or the read table.
    OutsideRole,
    /// Registration by a brand fact: the brand has no coworkers.
    NoCoworkers,
    /// ... no skills.
    NoSkills,
    /// ... the goals engine is off.
    GoalsEngineOff,
    /// ... no browser provider.
    NoBrowserProvider,
    /// The orchestrator that opened the session did not select it.
    NotSelected,
    /// The ceiling of the operator role (`[roles.NAME]`) the session runs
    /// under leaves it out.
    OperatorRole,
    /// An operator's Cedar policy forbids it whatever its arguments (the
    /// trace row names the policy and its revision).
    OperatorPolicy,
}

impl Removal {
    /// Every removal, each switch's included.
    pub fn all() -> impl Iterator<Item = Removal> {
        Switch::ALL.into_iter().map(Removal::Switch).chain([
            Removal::NotRegistered,
            Removal::OutsideRole,
            Removal::NoCoworkers,
            Removal::NoSkills,
            Removal::GoalsEngineOff,
            Removal::NoBrowserProvider,
            Removal::NotSelected,
            Removal::OperatorRole,
            Removal::OperatorPolicy,
        ])
    }

    /// As the trace names it.
    pub fn name(&self) -> Cow<'static, str> {
        match self {
            Removal::Switch(s) => Cow::Owned(format!("switch:{}", s.var())),
            Removal::NotRegistered => Cow::Borrowed("not_registered"),
            Removal::OutsideRole => Cow::Borrowed("outside_role"),
            Removal::NoCoworkers => Cow::Borrowed("no_coworkers"),
            Removal::NoSkills => Cow::Borrowed("no_skills"),
            Removal::GoalsEngineOff => Cow::Borrowed("goals_engine_off"),
            Removal::NoBrowserProvider => Cow::Borrowed("no_browser_provider"),
            Removal::NotSelected => Cow::Borrowed("not_selected"),
            Removal::OperatorRole => Cow::Borrowed("operator_role"),
            Removal::OperatorPolicy => Cow::Borrowed("operator_policy"),
        }
    }
}

impl Removal {
    /// The removal the trace names `name`, if any.
    pub fn parse(name: &str) -> Option<Removal> {
        Some(match name {
            "not_registered" => Removal::NotRegistered,
            "outside_role" => Removal::OutsideRole,
            "no_coworkers" => Removal::NoCoworkers,
            "no_skills" => Removal::NoSkills,
            "goals_engine_off" => Removal::GoalsEngineOff,
            "no_browser_provider" => Removal::NoBrowserProvider,
            "not_selected" => Removal::NotSelected,
            "operator_role" => Removal::OperatorRole,
            "operator_policy" => Removal::OperatorPolicy,
            other => {
                let var = other.strip_prefix("switch:")?;
                Removal::Switch(Switch::ALL.into_iter().find(|s| s.var() == var)?)
            }
        })
    }
}

impl serde::Serialize for Removal {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

/// Why a tool the policy allows is held until an operator reviews it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReviewHold {
    /// Never approved.
    New,
    /// Approved once, and its name, description or schema changed since.
    Changed,
    /// The reviews could not be read: held (fails closed).
    StoreUnavailable,
    /// The component has no tool by that name.
    UnknownTool,
}

/// Why a call did not run, or a tool is not offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{}", self.safe_reason())]
pub enum Rule {
    /// A name the session has no tool by, and nothing more is known.
    NotOffered,
    /// A tool the session was not given, and why (told: not offered).
    Removed(Removal),
    /// A tool held until an operator reviews it (told: not offered).
    Held(ReviewHold),
    /// The operator switch that lets this registered tool act is off: the
    /// role allows the call, the deployment does not.
    SwitchedOff(Switch),
    /// The call needs a person's approval and none can be given here.
    ApprovalRequired,
    /// A person declined this call.
    ApprovalDenied,
    /// Nobody answered before the approval timed out.
    ApprovalTimedOut,
    /// The call went away while it waited, and its request was withdrawn.
    ApprovalWithdrawn,
    /// The call went away while it waited on another call's request
    /// (told: withdrawn).
    CallerGone,
    /// A 2026-07-28 retry answered an approval that is not this call's
    /// (other arguments), or one already decided: nothing was decided.
    ApprovalAnswerRefused,
    /// The session's policy could not be decided for its role.
    OutsideRole,
    /// Access was withdrawn: the session ended, or its connector or grant
    /// was revoked, after the tool was offered.
    Revoked,
    /// The arguments do not fit the tool's parameters.
    InvalidArguments,
    /// A GraphQL tool's document could not be read to tell a query from a
    /// mutation (told: invalid arguments).
    GraphqlUnreadable,
    /// The call's record could not be made durable, so nothing ran (or,
    /// for a read, its answer was withheld).
    Unrecorded,
    /// The session made the same refused request again and again and is
    /// paused until a person resumes it (denial lineage).
    Paused,
    /// The run's delegation (its profile's grant) has expired.
    DelegationExpired,
    /// The run used every write and billed call its delegation allows.
    DelegationExhausted,
    /// The session's own end (`expires_at`, set by its orchestrator) has passed.
    SessionExpired,
    /// The session made every call its orchestrator allowed it (`max_calls`).
    SessionCallsExhausted,
    /// The session made every write and billed call its orchestrator
    /// allowed it (`max_effects`).
    SessionEffectsExhausted,
    /// The host is shutting down: it starts nothing more, and a call that
    /// waited for a person ends without running.
    HostShutdown,
    /// This host does not hold its lease on the shared store at this
    /// moment, so another host may be recovering its calls: it starts no
    /// effect of any kind.
    LeaseNotHeld,
    /// An operator retired the connector at runtime
    /// (`DELETE /v1/connectors/{name}`): none of its tools runs again.
    Retired,
    /// An operator's Cedar policy refused the call (the agent is told the
    /// policy's id; the trace names it and the policy revision), or asked
    /// for a person where nobody can be asked.
    OperatorPolicy,
}

impl Rule {
    /// Every policy rule, each switch's and each removal's included: what a
    /// stored name is read back against, by [`Rule::name`] itself.
    pub fn all() -> impl Iterator<Item = Rule> {
        [
            Rule::NotOffered,
            Rule::Held(ReviewHold::New),
            Rule::Held(ReviewHold::Changed),
            Rule::Held(ReviewHold::StoreUnavailable),
            Rule::Held(ReviewHold::UnknownTool),
            Rule::ApprovalRequired,
            Rule::ApprovalDenied,
            Rule::ApprovalTimedOut,
            Rule::ApprovalWithdrawn,
            Rule::CallerGone,
            Rule::ApprovalAnswerRefused,
            Rule::OutsideRole,
            Rule::Revoked,
            Rule::InvalidArguments,
            Rule::GraphqlUnreadable,
            Rule::Unrecorded,
            Rule::Paused,
            Rule::DelegationExpired,
            Rule::DelegationExhausted,
            Rule::SessionExpired,
            Rule::SessionCallsExhausted,
            Rule::SessionEffectsExhausted,
            Rule::HostShutdown,
            Rule::LeaseNotHeld,
            Rule::Retired,
            Rule::OperatorPolicy,
        ]
        .into_iter()
        .chain(Removal::all().map(Rule::Removed))
        .chain(Switch::ALL.into_iter().map(Rule::SwitchedOff))
    }

    /// The rule as the trace names it.
    pub fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Rule::NotOffered => "not_offered",
            Rule::Removed(r) => return r.name(),
            Rule::Held(ReviewHold::New) => "unreviewed_new",
            Rule::Held(ReviewHold::Changed) => "unreviewed_changed",
            Rule::Held(ReviewHold::StoreUnavailable) => "unreviewed_store_unavailable",
            Rule::Held(ReviewHold::UnknownTool) => "unknown_tool",
            Rule::SwitchedOff(s) => return Cow::Owned(format!("switch:{}", s.var())),
            Rule::ApprovalRequired => "approval_required",
            Rule::ApprovalDenied => "approval_denied",
            Rule::ApprovalTimedOut => "approval_timed_out",
            Rule::ApprovalWithdrawn => "approval_withdrawn",
            Rule::CallerGone => "caller_gone",
            Rule::ApprovalAnswerRefused => "approval_answer_refused",
            Rule::OutsideRole => "outside_role",
            Rule::Revoked => "revoked",
            Rule::InvalidArguments => "invalid_arguments",
            Rule::GraphqlUnreadable => "graphql_unreadable",
            Rule::Unrecorded => "unrecorded",
            Rule::Paused => "session_paused",
            Rule::DelegationExpired => "delegation_expired",
            Rule::DelegationExhausted => "delegation_exhausted",
            Rule::SessionExpired => "session_expired",
            Rule::SessionCallsExhausted => "session_calls_exhausted",
            Rule::SessionEffectsExhausted => "session_effects_exhausted",
            Rule::HostShutdown => "host_shutdown",
            Rule::LeaseNotHeld => "lease_not_held",
            Rule::Retired => "connector_retired",
            Rule::OperatorPolicy => "operator_policy",
        })
    }

    /// The rule the agent is told: what it may know of this one. A tool it
    /// was not given, for whatever reason, is simply not offered.
    pub fn told(&self) -> Rule {
        match self {
            Rule::Removed(_) | Rule::Held(_) => Rule::NotOffered,
            Rule::CallerGone => Rule::ApprovalWithdrawn,
            Rule::GraphqlUnreadable => Rule::InvalidArguments,
            other => *other,
        }
    }

    /// Whether the agent is told the tool is not offered: over MCP a
    /// protocol error, and in the trace a `permission_denied` event.
    pub fn is_not_offered(&self) -> bool {
        self.told() == Rule::NotOffered
    }

    /// For a tool registered on purpose that refuses every call (a gate's
    /// `Refuses`), why, for the operator: it names only offered tools and
    /// no secret.
    pub fn refusal_reason(&self) -> String {
        match self {
            Rule::SwitchedOff(s) => format!(
                "registered on purpose; refuses every call while the operator switch {} is off",
                s.var()
            ),
            Rule::ApprovalRequired => {
                "registered on purpose; refuses every call because no one can approve it in this session".into()
            }
            other => format!("registered on purpose; refuses every call: {}", other.name()),
        }
    }

    /// The text the agent sees.
    pub fn safe_reason(&self) -> &'static str {
        match self.told() {
            Rule::ApprovalRequired => {
                "approval required: this call needs a person's approval, and none can be given in this session"
            }
            Rule::ApprovalDenied => {
                "approval denied: a person declined this call, and it did not run"
            }
            Rule::ApprovalTimedOut => {
                "approval timed out: nobody answered in time, and the call did not run"
            }
            Rule::ApprovalWithdrawn => {
                "approval withdrawn: the call went away while it waited, and it did not run"
            }
            Rule::ApprovalAnswerRefused => {
                "approval answer refused: the answer was for another call, or for an approval already decided, so nothing was decided and the call did not run; call again without it to be asked anew"
            }
            Rule::SwitchedOff(_) => {
                "turned off by the operator: this tool refuses every call until the operator turns it on"
            }
            Rule::OutsideRole => "outside role: this session's role does not allow this call",
            Rule::Revoked => "revoked: access to this tool was withdrawn",
            Rule::InvalidArguments => {
                "invalid arguments: the arguments do not fit the tool's parameters"
            }
            Rule::Unrecorded => {
                "not run: the host could not record the call first, so nothing happened; call again shortly"
            }
            Rule::Paused => {
                "session paused: this session repeated a refused request, and a person must resume it before it can call anything"
            }
            Rule::DelegationExpired => {
                "delegation expired: the grant this run works under has ended, and nothing more can run under it"
            }
            Rule::DelegationExhausted => {
                "delegation used up: this run made every write and billed call its grant allows; reads still run"
            }
            Rule::SessionExpired => {
                "session expired: the time this session was opened for has passed, and nothing more runs in it"
            }
            Rule::SessionCallsExhausted => {
                "session calls used up: this session made every call it was opened for, and nothing more runs in it"
            }
            Rule::SessionEffectsExhausted => {
                "session effects used up: this session made every write and billed call it was opened for; reads still run"
            }
            Rule::HostShutdown => {
                "host shutting down: this host is stopping, so the call did not run; call again, and another host (or this one once restarted) serves it"
            }
            Rule::LeaseNotHeld => {
                "host unavailable: this host cannot confirm it still serves this session, so the call did not run; call again shortly"
            }
            Rule::Retired => {
                "retired: the operator retired this connector, and none of its tools runs any more"
            }
            Rule::OperatorPolicy => {
                "refused by an operator policy: this deployment's rules do not allow this call as it is"
            }
            // `told` leaves only the rules above and this one.
            _ => "not offered: this session has no tool by that name",
        }
    }
}

/// A rule in a surface or a gate is written as its name.
impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_its_own_name_and_the_agent_is_told_no_hidden_one() {
        let every: Vec<Rule> = Rule::all().collect();
        let names: std::collections::BTreeSet<_> = every.iter().map(Rule::name).collect();
        // Names shared on purpose: a switch is named as that switch whether
        // it removed the tool or the registered tool refuses (one a switch),
        // and `outside_role` and `operator_policy` both remove a tool and
        // refuse a call.
        assert_eq!(
            names.len(),
            every.len() - Switch::ALL.len() - 2,
            "one name per rule: {names:?}"
        );
        assert_eq!(
            Rule::Removed(Removal::OutsideRole).name(),
            Rule::OutsideRole.name()
        );
        for rule in &every {
            let told = rule.told();
            assert_eq!(told.told(), told, "what the agent is told is final");
            assert!(!matches!(
                told,
                Rule::Removed(_) | Rule::Held(_) | Rule::CallerGone | Rule::GraphqlUnreadable
            ));
            assert_eq!(rule.safe_reason(), told.safe_reason());
            assert_eq!(rule.to_string(), rule.safe_reason());
            assert!(!rule.safe_reason().contains("mcp__"));
            assert!(
                !rule.safe_reason().contains("GITHUB_ALLOW_WRITES"),
                "{rule:?}"
            );
        }
        assert_eq!(
            Rule::Removed(Removal::Switch(Switch::GithubAllowWrites)).name(),
            Rule::SwitchedOff(Switch::GithubAllowWrites).name(),
            "a switch that is off is named as that switch, removed or refusing"
        );
        assert!(Rule::Removed(Removal::NotRegistered).is_not_offered());
        assert!(!Rule::SwitchedOff(Switch::GithubAllowWrites).is_not_offered());
        assert_ne!(
            Rule::ApprovalDenied.safe_reason(),
            Rule::ApprovalTimedOut.safe_reason()
        );
    }
}
