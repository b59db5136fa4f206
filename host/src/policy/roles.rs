//! The roles of seed 000 and their ceilings.
//!
//! | Role | Built-ins | Platform | Connectors | Asks a person? |
//! |---|---|---|---|---|
//! | Person chat | all configured | memory, project, goals, transcripts, skills, team | every connected | yes, per gated call |
//! | Inbound email turn | none | none | AgentMail read and draft tools only | no one to ask |
//! | Coworker run | the profile's subset | private memory notes, project folder | none | no one to ask |
//! | Specialist coworker run | the profile's subset | as a coworker, plus skill tools | read tools of granted connectors | no one to ask |
//! | Goal agent step | read-only built-ins | project list, read, write | read tools of granted connectors | no one to ask |
//! | Goal reviewer | none | none | none | not applicable |
//! | Read-only route | Read, Glob, Grep, WebSearch, WebFetch | transcripts, skills, team (default harness) | none | not applicable |

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::catalog::Catalog;
use super::names::{self, MEMORY_TOOLS, PROJECT_DELETE, PROJECT_TOOLS, READ_ONLY_BUILTINS};
use super::profile::Profile;

/// Whether a coworker's route is certified for the standard tool set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    Standard,
    /// An uncertified model or harness: only the read-only built-ins.
    ReadOnly,
}

/// The agent harness a read-only route runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Harness {
    /// The Claude Agent SDK.
    Default,
    /// The loop harness: MCP tools only, never the CLI built-ins. Exists only
    /// with `HARNESS_LOOP_ENABLED`; owner only.
    Loop,
    /// Hermes through the MCP bridge: MCP tools only (Hermes's own enabled
    /// tools are served by Hermes). Exists only with `HARNESS_HERMES_ENABLED`
    /// and `HARNESS_MCP_BRIDGE_ENABLED`; owner only.
    Hermes,
}

/// A role of seed 000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "role")]
pub enum Role {
    /// A person's own conversation: the widest surface, and the only role
    /// with someone present to approve gated calls.
    PersonChat,
    /// One turn started by an email arriving in the brand's AgentMail inbox.
    InboundEmailTurn,
    /// A saved profile running a task unattended, with no grant.
    CoworkerRun { route: Route },
    /// A coworker with a grant (connectors, allowances, bundled skills).
    SpecialistRun { route: Route },
    /// One step of a goal plan, run as an unattended coworker.
    GoalAgentStep,
    /// Reads goal progress and writes a short review; no tools at all.
    GoalReviewer,
    /// A person's session on an uncertified model or harness.
    ReadOnlyRoute { harness: Harness },
}

/// The command line's and the admin API's names for the roles.
pub const ROLE_NAMES: &str =
    "person-chat, inbound-email, coworker, specialist, goal-agent, goal-reviewer, read-only";

impl Role {
    /// The role called `name` on the command line and in the admin API
    /// (standard route, default harness); see [`ROLE_NAMES`].
    pub fn from_name(name: &str) -> Option<Role> {
        Some(match name {
            "person-chat" => Role::PersonChat,
            "inbound-email" => Role::InboundEmailTurn,
            "coworker" => Role::CoworkerRun {
                route: Route::Standard,
            },
            "specialist" => Role::SpecialistRun {
                route: Route::Standard,
            },
            "goal-agent" => Role::GoalAgentStep,
            "goal-reviewer" => Role::GoalReviewer,
            "read-only" => Role::ReadOnlyRoute {
                harness: Harness::Default,
            },
            _ => return None,
        })
    }

    /// The role's name on the command line and in the admin API
    /// (`person-chat`), as [`Role::from_name`] reads it: what spans and
    /// logs carry.
    pub fn api_name(self) -> &'static str {
        match self {
            Role::PersonChat => "person-chat",
            Role::InboundEmailTurn => "inbound-email",
            Role::CoworkerRun { .. } => "coworker",
            Role::SpecialistRun { .. } => "specialist",
            Role::GoalAgentStep => "goal-agent",
            Role::GoalReviewer => "goal-reviewer",
            Role::ReadOnlyRoute { .. } => "read-only",
        }
    }

    /// The seed's name for the role.
    pub fn label(self) -> &'static str {
        match self {
            Role::PersonChat => "person chat",
            Role::InboundEmailTurn => "inbound email turn",
            Role::CoworkerRun { .. } => "coworker run",
            Role::SpecialistRun { .. } => "specialist coworker run",
            Role::GoalAgentStep => "goal agent step",
            Role::GoalReviewer => "goal reviewer",
            Role::ReadOnlyRoute { .. } => "read-only route",
        }
    }

    /// The role a saved coworker profile runs as: a specialist when it has a grant.
    pub fn for_profile(profile: &Profile, route: Route) -> Role {
        if profile.grant.is_empty() {
            Role::CoworkerRun { route }
        } else {
            Role::SpecialistRun { route }
        }
    }

    /// Whether the role can ever have someone present to approve a call.
    pub fn can_ask_a_person(self) -> bool {
        matches!(self, Role::PersonChat)
    }

    /// Whether someone answers what a session of the role asks for (seed
    /// 003's capability requests: the person, or the run's owner): every
    /// role but an inbound email turn and the goal reviewer.
    pub fn has_someone_to_answer(self) -> bool {
        !matches!(self, Role::InboundEmailTurn | Role::GoalReviewer)
    }
}

/// The coworker ceiling (`coworkerCeiling`), full names.
///
/// Standard route: the deployment's built-ins, the nine memory tools and four
/// of the five project tools (never `project_delete`). Registration then
/// keeps only the seven memory note tools for an unattended run.
/// Read-only route: the read-only built-ins only.
pub fn coworker_ceiling(route: Route, catalog: &Catalog) -> BTreeSet<String> {
    match route {
        Route::Standard => catalog
            .builtins
            .iter()
            .cloned()
            .chain(MEMORY_TOOLS.iter().map(|t| names::mcp("memory", t)))
            .chain(
                PROJECT_TOOLS
                    .iter()
                    .filter(|t| **t != PROJECT_DELETE)
                    .map(|t| names::mcp("project", t)),
            )
            .collect(),
        Route::ReadOnly => catalog
            .builtins
            .iter()
            .filter(|b| READ_ONLY_BUILTINS.contains(&b.as_str()))
            .cloned()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings() {
        let c = Catalog::seed();
        let standard = coworker_ceiling(Route::Standard, &c);
        assert_eq!(standard.len(), 8 + 9 + 4);
        assert!(!standard.contains("mcp__project__project_delete"));
        assert_eq!(
            coworker_ceiling(Route::ReadOnly, &c)
                .into_iter()
                .collect::<Vec<_>>(),
            ["Glob", "Grep", "Read", "WebFetch", "WebSearch"]
        );
        let trimmed = Catalog::seed().with_builtins(["Read", "Bash"]);
        assert_eq!(
            coworker_ceiling(Route::ReadOnly, &trimmed)
                .into_iter()
                .collect::<Vec<_>>(),
            ["Read"]
        );
    }
}
