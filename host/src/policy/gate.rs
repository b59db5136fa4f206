//! The per-call gate of an offered tool.

use serde::Serialize;

use super::Surface;
use super::profile::Allowance;
use super::rule::Rule;

/// What happens above a billing connector's per-call threshold in person chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AboveThreshold {
    /// Asks a person.
    AsksPerson,
    /// Refuses: no one can approve it in this session.
    Refuses,
}

/// How Shopify Admin GraphQL mutations are gated (its reads always run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MutationGate {
    /// Each mutation asks a person.
    AsksPerson,
    /// Every mutation refuses before any request, by this rule.
    Refuses(Rule),
}

/// The gate applied to each call of an offered tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Runs without a per-call gate.
    Open,
    /// Asks a person before each call; denies when the approval times out.
    AsksPerson,
    /// Every call bills; calls above the connector's threshold follow `above_threshold`.
    Spend {
        connector: String,
        above_threshold: AboveThreshold,
    },
    /// Every call is charged against the grant's allowance; a call beyond it
    /// is refused before anything is sent.
    Allowance {
        connector: String,
        allowance: Allowance,
    },
    /// The tool is also a read path: reads run, mutations follow `mutations`.
    ReadsRunMutationsGated { mutations: MutationGate },
    /// Registered on purpose, and every call refuses before any request, by
    /// this rule (the seed's "absent beats refusing" exceptions: a person's
    /// approval no one can give here, or an operator switch that is off).
    Refuses(Rule),
}

impl Gate {
    /// Whether any call can be held up by this gate.
    pub fn is_gated(&self) -> bool {
        !matches!(self, Gate::Open)
    }

    /// The registered-but-refusing marker, if this gate is one: the whole
    /// tool refuses, or (Shopify Admin GraphQL) its mutations do.
    pub fn refusal(&self) -> Option<Rule> {
        match self {
            Gate::Refuses(r)
            | Gate::ReadsRunMutationsGated {
                mutations: MutationGate::Refuses(r),
            } => Some(*r),
            _ => None,
        }
    }
}

/// The gate to apply to a call of `tool`, or why it is denied outright: a
/// name the surface does not offer is `NotOffered` whatever else the host
/// knows of it, and a registered-but-refusing tool returns its refusal.
/// Evaluate it on a surface computed at the moment of the call, so that a
/// revoked grant or switch denies a call planned earlier.
pub fn check_call(surface: &Surface, tool: &str) -> Result<Gate, Rule> {
    let offered = surface.get(tool).ok_or(Rule::NotOffered)?;
    match &offered.gate {
        Gate::Refuses(r) => Err(*r),
        gate => Ok(gate.clone()),
    }
}
