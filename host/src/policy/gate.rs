//! The per-call gate of an offered tool, and the bounded reasons a call is denied.

use serde::Serialize;

use super::Surface;
use super::profile::Allowance;
use super::switches::Switch;

/// Why a registered tool refuses every call. These are the seed's "absent
/// beats refusing" exceptions: the tool stays registered on purpose and
/// refuses before any request leaves the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The call needs a person's approval and this session has no one to ask
    /// (no approval channel, or `REQUIRE_WRITE_APPROVAL` off).
    NoApprovalChannel,
    /// The operator switch that lets the tool act is off.
    SwitchOff(Switch),
}

impl Refusal {
    /// The marker's reason, for the operator and the trace (it names only
    /// tools that are offered, and no secret).
    pub fn reason(&self) -> String {
        match self {
            Refusal::NoApprovalChannel => {
                "registered on purpose; refuses every call because no one can approve it in this session".into()
            }
            Refusal::SwitchOff(s) => {
                format!("registered on purpose; refuses every call while the operator switch {} is off", s.var())
            }
        }
    }

    /// What the agent is told when a call refuses.
    pub fn denial(&self) -> PolicyDenial {
        match self {
            Refusal::NoApprovalChannel => PolicyDenial::ApprovalRequired,
            // The role allows it; the operator's switch is what refuses.
            Refusal::SwitchOff(s) => PolicyDenial::SwitchedOff(*s),
        }
    }
}

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
    /// Every mutation refuses before any request.
    Refuses(Refusal),
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
    /// Registered on purpose, and every call refuses before any request.
    Refuses(Refusal),
}

impl Gate {
    /// Whether any call can be held up by this gate.
    pub fn is_gated(&self) -> bool {
        !matches!(self, Gate::Open)
    }

    /// The registered-but-refusing marker, if this gate is one: the whole
    /// tool refuses, or (Shopify Admin GraphQL) its mutations do.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Gate::Refuses(r)
            | Gate::ReadsRunMutationsGated {
                mutations: MutationGate::Refuses(r),
            } => Some(*r),
            _ => None,
        }
    }
}

/// A bounded, safe reason for a denied call (DESIGN D6). It never names a
/// hidden tool, says whether a name exists elsewhere, or carries a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum PolicyDenial {
    #[error("{}", self.safe_reason())]
    NotOffered,
    #[error("{}", self.safe_reason())]
    ApprovalRequired,
    /// A person declined this call.
    #[error("{}", self.safe_reason())]
    ApprovalDenied,
    /// Nobody answered before the approval timed out.
    #[error("{}", self.safe_reason())]
    ApprovalTimedOut,
    /// The call went away while it waited, and its request was withdrawn.
    #[error("{}", self.safe_reason())]
    ApprovalWithdrawn,
    /// The operator switch that lets this tool act is off: the role allows
    /// the call, the deployment does not.
    #[error("{}", self.safe_reason())]
    SwitchedOff(Switch),
    #[error("{}", self.safe_reason())]
    OutsideRole,
    #[error("{}", self.safe_reason())]
    Revoked,
    #[error("{}", self.safe_reason())]
    InvalidArguments,
    /// The call's intent could not be made durable, so it did not run: an
    /// effect never happens without its record.
    #[error("{}", self.safe_reason())]
    Unrecorded,
}

impl PolicyDenial {
    /// The rule, as the trace, the operator and the agent's error name it:
    /// `switch:VAR` for a switch that is off (the vocabulary of the removed
    /// tools' rules), the variant's snake-case name otherwise.
    pub fn rule(&self) -> String {
        match self {
            PolicyDenial::SwitchedOff(s) => format!("switch:{}", s.var()),
            other => serde_json::to_value(other)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
        }
    }

    /// The text the agent sees.
    pub fn safe_reason(&self) -> &'static str {
        match self {
            PolicyDenial::NotOffered => "not offered: this session has no tool by that name",
            PolicyDenial::ApprovalRequired => {
                "approval required: this call needs a person's approval, and none can be given in this session"
            }
            PolicyDenial::ApprovalDenied => {
                "approval denied: a person declined this call, and it did not run"
            }
            PolicyDenial::ApprovalTimedOut => {
                "approval timed out: nobody answered in time, and the call did not run"
            }
            PolicyDenial::ApprovalWithdrawn => {
                "approval withdrawn: the call went away while it waited, and it did not run"
            }
            PolicyDenial::SwitchedOff(_) => {
                "turned off by the operator: this tool refuses every call until the operator turns it on"
            }
            PolicyDenial::OutsideRole => {
                "outside role: this session's role does not allow this call"
            }
            PolicyDenial::Revoked => "revoked: access to this tool was withdrawn",
            PolicyDenial::InvalidArguments => {
                "invalid arguments: the arguments do not fit the tool's parameters"
            }
            PolicyDenial::Unrecorded => {
                "not run: the host could not record the call first, so nothing happened"
            }
        }
    }
}

/// The gate to apply to a call of `tool`, or why it is denied outright: a
/// name the surface does not offer is `NotOffered` whatever else the host
/// knows of it, and a registered-but-refusing tool returns its refusal.
/// Evaluate it on a surface computed at the moment of the call, so that a
/// revoked grant or switch denies a call planned earlier.
pub fn check_call(surface: &Surface, tool: &str) -> Result<Gate, PolicyDenial> {
    let offered = surface.get(tool).ok_or(PolicyDenial::NotOffered)?;
    match &offered.gate {
        Gate::Refuses(r) => Err(r.denial()),
        gate => Ok(gate.clone()),
    }
}
