//! What a call is, as an operator's policy reads it: the facts the boundary
//! gathers once per call, before Cedar sees them.
//!
//! They are plain data so the trace can record them (every decision keeps
//! its facts, without the arguments, which are sealed apart) and `policy
//! test` can replay a recorded call under a candidate set. Their serde
//! shape is a stored format: add fields with `#[serde(default)]`, never
//! rename one.

use super::history::HistoryFacts;
use serde::{Deserialize, Serialize};

/// One call, as the policies decide it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallFacts {
    /// Who calls: the session.
    pub principal: PrincipalFacts,
    /// The tool's MCP name as the session's surface names it
    /// (`mcp__github__github_create_branch`).
    pub action: String,
    /// What it reaches: the connector, with the tool's facts.
    pub resource: ResourceFacts,
    /// The arguments as the agent sent them (after a `json` parameter sent
    /// as text was read as its value). Never recorded with the facts.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub args: serde_json::Value,
    /// The session's history before this call.
    #[serde(default)]
    pub history: HistoryFacts,
    /// When it was decided, in milliseconds since the Unix epoch.
    pub now_ms: i64,
}

impl CallFacts {
    /// The same facts without the arguments: what the trace records.
    pub fn without_args(&self) -> CallFacts {
        CallFacts {
            args: serde_json::Value::Null,
            ..self.clone()
        }
    }
}

/// The session that calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrincipalFacts {
    /// The session's id.
    pub session: String,
    /// The brand it acts for.
    pub brand: String,
    /// Its role: an operator role's name, else the seed role's API name.
    pub role: String,
    /// The seed role it is built on (`person_chat`, `coworker`, ...).
    pub base_role: String,
    /// The saved profile it runs under, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The requester's identity as the host verified it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
    /// Whether a person can be asked to approve a call in this session.
    pub person_can_be_asked: bool,
}

/// The connector a call reaches, with the called tool's facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceFacts {
    /// The connector's server name (`github`).
    pub connector: String,
    /// `component` (a WebAssembly connector) or `remote` (a remote MCP server).
    pub origin: String,
    /// `read` or `write`, as served (a remote tool: as reviewed).
    pub effect: String,
    /// The meter's unit when the connector bills (`credits`, `micro_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billing_unit: Option<String>,
    /// The requests the tool may make (`GET /repos/{owner}/{repo}`).
    #[serde(default)]
    pub routes: Vec<String>,
    /// Where its requests go (the connector's upstream host), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
}
