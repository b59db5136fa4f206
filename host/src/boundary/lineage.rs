//! Denial lineage (seed 003: "Models could rephrase a denied request").
//!
//! A refused request is counted by its consequence, not by its spelling:
//! the connector, the effect class, the rule that refused it, and what the
//! tool would reach: each route its tool declares that changes something
//! (with its destination), or all its routes for a read, or the tool's
//! name where it declares none. Every name a session is not offered of a
//! connector (unknown, removed or held: the agent is told only "not
//! offered") counts as one consequence, so a count reveals nothing of which
//! tools exist. So other argument spellings of the same call, and
//! another tool reaching the same route, are the same consequence; another
//! rule, connector or effect is not.
//!
//! The first repetition of a consequence in a session is answered with a
//! clearer, bounded constraint (refused because ...; asking again will not
//! change it; safe alternatives ...). At the configured count (default 3)
//! the session is paused: every further call is refused with
//! `session_paused` until a person resumes it or ends it (admin API,
//! console). Each denial's trace event carries its lineage.

use crate::policy::Rule;
use crate::runtime::{LoadedComponent, Tool};
use crate::session::Session;
use serde::Serialize;
use std::borrow::Cow;

/// Repetitions of one consequence at which a session pauses, by default.
pub const DEFAULT_PAUSE_AFTER: u32 = 3;

/// Where a refused request stands in its session's lineage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lineage {
    /// The consequence it was counted under (where a tool reaches several
    /// routes, the one refused most often).
    pub consequence: String,
    /// How many times this session was refused it, this one included.
    pub repeat: u32,
    /// This refusal paused the session.
    pub paused: bool,
}

/// What a call of `component` would reach, as lineage keys its denials by:
/// `called` is the tool as the call resolved it, `None` for a name the
/// component does not serve. A served tool's is borrowed from what its load
/// computed ([`Tool`]'s `reaches`): nothing is built on the allowed path.
pub(super) fn targets<'a>(
    component: &LoadedComponent,
    called: Option<&'a Tool>,
) -> Cow<'a, [String]> {
    match called {
        Some(found) => Cow::Borrowed(&found.reaches),
        None => Cow::Owned(vec![format!("{} unknown-tool", component.name())]),
    }
}

/// Whether a refusal by `rule` is one the agent could repeat on purpose.
/// Not counted: the caller going away, arguments that do not parse (the
/// agent is fixing its call), an answer to an approval that is not the
/// call's (its client's to mend: call again to be asked anew), the
/// host's own failure to record, a host shutting down or without its lease
/// (the fleet's doing, not the agent's: a rolling deploy must not pause
/// every session it touches), and a paused session's refusals (already
/// counted).
fn counts(rule: Rule) -> bool {
    !matches!(
        rule,
        Rule::ApprovalWithdrawn
            | Rule::CallerGone
            | Rule::ApprovalAnswerRefused
            | Rule::InvalidArguments
            | Rule::GraphqlUnreadable
            | Rule::Unrecorded
            | Rule::HostShutdown
            | Rule::LeaseNotHeld
            | Rule::Paused
    )
}

/// Counts a refusal of a request reaching `targets` by `rule` in
/// `session`; pauses it at `pause_after` (0: never).
pub(super) fn record(
    session: &Session,
    targets: &[String],
    rule: Rule,
    pause_after: u32,
) -> Option<Lineage> {
    if !counts(rule) || targets.is_empty() {
        return None;
    }
    let keys: Vec<String> = if rule.is_not_offered() {
        // The agent is told only "not offered": every name it is not given
        // of a connector, unknown, removed or held alike, is one
        // consequence, so the count tells it nothing of which tools exist.
        // (A target starts with its connector's name, which has no space.)
        let connector = targets[0].split(' ').next().unwrap_or_default();
        vec![format!(
            "{} {connector} a tool not offered",
            Rule::NotOffered.name()
        )]
    } else {
        targets
            .iter()
            .map(|t| format!("{} {t}", rule.name()))
            .collect()
    };
    let (repeat, consequence) = session.count_refusal(&keys);
    let paused = pause_after > 0 && repeat >= pause_after;
    if paused {
        session.pause();
    }
    Some(Lineage {
        consequence,
        repeat,
        paused,
    })
}

/// What the agent is told of a refusal it repeated: the bounded reason,
/// that asking again will not change it, and what it can do instead.
pub fn constraint(rule: Rule, lineage: &Lineage) -> String {
    let told = rule.told();
    let alternatives = match told {
        Rule::ApprovalDenied | Rule::ApprovalTimedOut => {
            "ask the person in the conversation what to do instead, or go on with tools that only read"
        }
        Rule::ApprovalRequired => {
            "no one can approve it in this session: report what you need to the person or run owner"
        }
        Rule::NotOffered
        | Rule::OutsideRole
        | Rule::Revoked
        | Rule::Retired
        | Rule::SwitchedOff(_) => {
            "use the tools this session lists, or ask for the capability (scout_request_capability where this session has it); never another tool for the same effect"
        }
        _ => "report what you need to the person or run owner",
    };
    let pause = if lineage.paused {
        " This session is now paused: a person must resume it before it can call anything."
    } else {
        ""
    };
    format!(
        "{}. This is refused because of rule `{}`; asking again, or asking in other words or with another tool, will not change it (refused {} times in this session). Safe alternatives: {alternatives}.{pause}",
        rule.safe_reason(),
        told.name(),
        lineage.repeat,
    )
}
