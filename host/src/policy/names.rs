//! Every tool name of seed 000 that is not a connector's: the runtime's
//! built-ins, the platform servers and the fixed lists the roles are made of.
//!
//! MCP tools are stored here by their local name (`memory_read`); the name a
//! model sees is `mcp__<server>__<tool>` ([`mcp`]). Built-ins keep their bare
//! name (`Read`). Connector tools live in [`super::catalog`].

use serde::{Deserialize, Serialize};

/// The deployment's built-in list as shipped (`tools` in agent.config.json).
/// It is an exclusive allowlist: no other built-in of the runtime is offered.
pub const BUILTINS: [&str; 8] = [
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "WebSearch",
    "WebFetch",
];

/// The agent runtime's (Claude Code's) other built-ins: never offered to any
/// role, because [`BUILTINS`] is an exclusive allowlist (seed 000 names
/// `Agent`, `NotebookEdit` and `TodoWrite` as examples). The names are those
/// of Claude Code's tools reference (code.claude.com/docs/en/tools-reference)
/// and older spellings of the same tools (`Task`, `MultiEdit`, `LS`,
/// `BashOutput`, `KillShell`, `SlashCommand`), so a CLI of either age finds
/// them in `permissions.deny`; a deny rule naming a tool the CLI lacks is
/// inert. Names a newer CLI adds are not here: the exclusive `tools` list is
/// what keeps them away, and the deny list (seed 004) is the second lock.
pub(crate) const CLI_OTHER_BUILTINS: [&str; 31] = [
    "Agent",
    "Task",
    "AskUserQuestion",
    "BashOutput",
    "KillShell",
    "CronCreate",
    "CronDelete",
    "CronList",
    "EnterPlanMode",
    "ExitPlanMode",
    "EnterWorktree",
    "ExitWorktree",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
    "LS",
    "LSP",
    "Monitor",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "PowerShell",
    "Skill",
    "SlashCommand",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "TaskUpdate",
    "TodoWrite",
    "ToolSearch",
];

/// The read-only built-ins: the read-only route, the goal agent and a coworker
/// on a read-only route keep only these.
pub const READ_ONLY_BUILTINS: [&str; 5] = ["Read", "Glob", "Grep", "WebSearch", "WebFetch"];

/// Built-ins that run on the server host (`HOST_FS_TOOLS`). Under E2B they are
/// disallowed for every role; the sandbox container is the boundary instead.
pub(crate) const HOST_FS_TOOLS: [&str; 6] = ["Bash", "Read", "Write", "Edit", "Glob", "Grep"];

/// The seven memory note tools: the only memory tools an unattended run registers.
pub(crate) const MEMORY_NOTE_TOOLS: [&str; 7] = [
    "memory_read",
    "memory_search",
    "memory_list",
    "memory_write",
    "memory_append",
    "memory_review",
    "memory_merge",
];
/// The standing-instruction tools: person chat only; each call asks a person
/// when approvals are on.
pub(crate) const STANDING_INSTRUCTION_TOOLS: [&str; 2] = ["soul_update", "goals_update"];
/// The nine memory tools (notes, then standing instructions).
pub(crate) const MEMORY_TOOLS: [&str; 9] = [
    "memory_read",
    "memory_search",
    "memory_list",
    "memory_write",
    "memory_append",
    "memory_review",
    "memory_merge",
    "soul_update",
    "goals_update",
];
/// The project folder's five tools.
pub(crate) const PROJECT_TOOLS: [&str; 5] = [
    "project_list",
    "project_read",
    "project_write",
    "project_append",
    "project_delete",
];
/// Recursive, unapproved and irreversible: only a person's own chat holds it.
pub(crate) const PROJECT_DELETE: &str = "project_delete";
/// Goals engine tools (person chat, when the goals engine is on).
pub(crate) const GOALS_TOOLS: [&str; 4] =
    ["goals_status", "goals_ask", "goals_propose", "goals_note"];
/// Chat history: always for a person, never for a coworker.
pub(crate) const TRANSCRIPT_TOOLS: [&str; 2] = ["transcript_search", "transcript_read"];
/// Skill tools.
pub(crate) const SKILL_TOOLS: [&str; 2] = ["load_skill", "read_skill_file"];
/// Team tools (person chat, when the brand has at least one coworker).
pub(crate) const TEAM_TOOLS: [&str; 5] = [
    "team_roster",
    "team_assign",
    "team_status",
    "team_result",
    "team_cancel",
];
/// The E2B sandbox: shell and files.
pub(crate) const SANDBOX_TOOLS: [&str; 3] = ["bash", "read_file", "write_file"];
/// The browser reads pages only.
pub(crate) const BROWSER_READ_TOOLS: [&str; 2] = ["browse_text", "browse_screenshot"];
/// Persistent browser logins (Browserbase only).
pub(crate) const BROWSER_LOGIN_TOOLS: [&str; 3] = ["list_logins", "start_login", "finish_login"];
/// Asks a person to widen the sandbox's allowlist.
pub(crate) const SANDBOX_ALLOW_HOST: &str = "sandbox_allow_host";
/// The content writer's opt-in tools beside Shopify. They write only into the
/// brand's project folder (drafts), never to the store.
pub const WRITER_TOOLS: [&str; 5] = [
    "writer_read_voice_guide",
    "writer_save_voice_guide",
    "writer_page_content",
    "writer_read_brief",
    "writer_save_draft",
];
/// SEO brief tool given when the grant names `seo-method`.
pub const SEO_SAVE_BRIEF: &str = "seo_save_brief";
/// SEO brief tool given when the grant names `seo-method` and the profile may delegate.
pub const SEO_HAND_OFF_BRIEF: &str = "seo_hand_off_brief";
/// The skill the SEO brief tools ride on.
pub(crate) const SEO_METHOD_SKILL: &str = "seo-method";

/// The bundled skills a grant may name.
///
/// These are exactly the skills seed 000 names: the paid traffic manager's
/// `ppc-method` and `ppc-honesty`, the SEO analyst's `seo-method`, and the
/// content writer's `voice-guide`, `product-content`, `product-page-seo` and
/// `humanizer`. The seed also speaks of "seo-method and its data skills"
/// without naming them, so no data skill is listed here: a grant naming one is
/// refused until the skills catalogue names it.
pub(crate) const BUNDLED_SKILLS: [&str; 7] = [
    "ppc-method",
    "ppc-honesty",
    "seo-method",
    "voice-guide",
    "product-content",
    "product-page-seo",
    "humanizer",
];

/// Whether `skill` is one of [`BUNDLED_SKILLS`].
pub(crate) fn is_bundled_skill(skill: &str) -> bool {
    BUNDLED_SKILLS.contains(&skill)
}

/// The inbound email turn's whole surface (`INBOUND_TOOLS`), AgentMail local
/// names: the ten reads and `agentmail_create_draft`. Never the four sends.
pub(crate) const INBOUND_TOOLS: [&str; 11] = [
    "agentmail_list_threads",
    "agentmail_search_threads",
    "agentmail_get_thread",
    "agentmail_list_messages",
    "agentmail_search_messages",
    "agentmail_get_message",
    "agentmail_get_attachment",
    "agentmail_whoami",
    "agentmail_create_draft",
    "agentmail_list_drafts",
    "agentmail_get_draft",
];

/// The goal agent's fixed tools (`GOAL_AGENT_TOOLS`), full names.
pub(crate) const GOAL_AGENT_TOOLS: [&str; 8] = [
    "Read",
    "Glob",
    "Grep",
    "WebSearch",
    "WebFetch",
    "mcp__project__project_list",
    "mcp__project__project_read",
    "mcp__project__project_write",
];

/// The full MCP name of `tool` on `server`: `mcp__server__tool`.
pub fn mcp(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// Splits `mcp__server__tool` into `(server, tool)`; `None` for a bare name.
pub(crate) fn split_mcp(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("mcp__")?;
    let at = rest.find("__")?;
    let (server, tool) = (&rest[..at], &rest[at + 2..]);
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// The host's own MCP server: the endpoint of the tools the host serves
/// itself (`mcp__scout__scout_budget`, `mcp__scout__scout_request_capability`).
pub const HOST_SERVER: &str = "scout";

/// Whether connector name `name` may be given to a connector (a component,
/// a remote MCP server, a session component), wherever it is named: the
/// configuration file, the admin API, a stored row. Refused: the host's
/// own server ([`HOST_SERVER`]), whose endpoint a connector would take over
/// in every session; a platform server whose tools the policy gives by its
/// own rules and no component serves (the content writer and the SEO
/// briefs are components, admitted only with exactly their seed tools);
/// and a name that would make `mcp__NAME__tool` read as another server's
/// (`__` inside it, or `_` at an end). The error says what to do.
pub fn check_connector_name(name: &str) -> Result<(), String> {
    let platform =
        Platform::from_server_name(name).filter(|p| !matches!(p, Platform::Writer | Platform::Seo));
    if name == HOST_SERVER || platform.is_some() {
        let whose = if name == HOST_SERVER {
            "the host's own tools (`mcp__scout__scout_budget`, `mcp__scout__scout_request_capability`)"
        } else {
            "a platform server whose tools the policy gives by its own rules"
        };
        return Err(format!(
            "`{name}` is reserved: it is the MCP server name of {whose}, so no connector may take it; give the connector another name (its component names itself, so rebuild it under that name)"
        ));
    }
    if name.contains("__") || name.starts_with('_') || name.ends_with('_') {
        return Err(format!(
            "`{name}` cannot name a connector: its tools are named `mcp__{name}__TOOL`, and `__` inside the name or `_` at either end would read as another server's; give it another name, without them"
        ));
    }
    Ok(())
}

/// Who serves a tool (DESIGN D12). The surface is complete either way: the
/// orchestrator receives the whole allowlist and hands it to its runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Server {
    /// This host: connector components, and platform tools built on the
    /// `folder` handle (memory notes, project folder, writer, SEO briefs).
    Host,
    /// The orchestrator: the runtime's built-ins and platform tools backed by
    /// its own data (standing instructions, goals, transcripts, skills, team,
    /// sandbox, browser, delegation).
    Orchestrator,
}

/// A platform MCP server of seed 000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    Memory,
    Project,
    Goals,
    Transcripts,
    Skills,
    Team,
    Sandbox,
    Browser,
    SandboxEgress,
    Writer,
    Seo,
}

impl Platform {
    /// Every platform server.
    pub const ALL: [Platform; 11] = [
        Platform::Memory,
        Platform::Project,
        Platform::Goals,
        Platform::Transcripts,
        Platform::Skills,
        Platform::Team,
        Platform::Sandbox,
        Platform::Browser,
        Platform::SandboxEgress,
        Platform::Writer,
        Platform::Seo,
    ];

    /// The MCP server name (`mcp__<this>__...`).
    pub fn server_name(self) -> &'static str {
        match self {
            Platform::Memory => "memory",
            Platform::Project => "project",
            Platform::Goals => "goals",
            Platform::Transcripts => "transcripts",
            Platform::Skills => "skills",
            Platform::Team => "team",
            Platform::Sandbox => "sandbox",
            Platform::Browser => "browser",
            Platform::SandboxEgress => "sandbox_egress",
            Platform::Writer => "writer",
            Platform::Seo => "seo",
        }
    }

    /// The server with this MCP name.
    pub(crate) fn from_server_name(name: &str) -> Option<Platform> {
        Platform::ALL.into_iter().find(|p| p.server_name() == name)
    }

    /// Every tool of the server (local names).
    pub fn tools(self) -> &'static [&'static str] {
        const BROWSER: [&str; 5] = [
            "browse_text",
            "browse_screenshot",
            "list_logins",
            "start_login",
            "finish_login",
        ];
        const EGRESS: [&str; 1] = [SANDBOX_ALLOW_HOST];
        const SEO: [&str; 2] = [SEO_SAVE_BRIEF, SEO_HAND_OFF_BRIEF];
        match self {
            Platform::Memory => &MEMORY_TOOLS,
            Platform::Project => &PROJECT_TOOLS,
            Platform::Goals => &GOALS_TOOLS,
            Platform::Transcripts => &TRANSCRIPT_TOOLS,
            Platform::Skills => &SKILL_TOOLS,
            Platform::Team => &TEAM_TOOLS,
            Platform::Sandbox => &SANDBOX_TOOLS,
            Platform::Browser => &BROWSER,
            Platform::SandboxEgress => &EGRESS,
            Platform::Writer => &WRITER_TOOLS,
            Platform::Seo => &SEO,
        }
    }

    /// Who serves `tool` of this server. Memory notes (the brand's notebook
    /// for a person, a private one for a coworker), the project folder, the
    /// writer's drafts and the SEO briefs (saved, and marked handed off) are
    /// folder-backed, so the host serves them; everything backed by the
    /// orchestrator's own data (standing instructions, goals, transcripts,
    /// skills, team, sandbox, browser) is the orchestrator's.
    pub fn served_by(self, tool: &str) -> Server {
        match self {
            Platform::Memory if MEMORY_NOTE_TOOLS.contains(&tool) => Server::Host,
            Platform::Project | Platform::Writer => Server::Host,
            // The hand-off marks a saved brief handed off in the project
            // folder; the orchestrator starts the Content writer on it.
            Platform::Seo => Server::Host,
            _ => Server::Orchestrator,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_join() {
        assert_eq!(
            split_mcp("mcp__sandbox_egress__sandbox_allow_host"),
            Some(("sandbox_egress", "sandbox_allow_host"))
        );
        assert_eq!(
            split_mcp("mcp__github__github_read_file"),
            Some(("github", "github_read_file"))
        );
        assert_eq!(split_mcp("Read"), None);
        assert_eq!(split_mcp("mcp____x"), None);
        assert_eq!(mcp("cloudflare", "execute"), "mcp__cloudflare__execute");
    }

    #[test]
    fn the_cli_s_other_built_ins_are_none_of_the_deployment_s() {
        let mut seen = std::collections::BTreeSet::new();
        for b in CLI_OTHER_BUILTINS {
            assert!(!BUILTINS.contains(&b), "{b} is a deployment built-in");
            assert!(seen.insert(b), "{b} twice");
            assert!(split_mcp(b).is_none(), "{b} is not an MCP name");
        }
        for named in ["Agent", "NotebookEdit", "TodoWrite"] {
            assert!(
                CLI_OTHER_BUILTINS.contains(&named),
                "seed 000 names {named}"
            );
        }
    }

    #[test]
    fn the_hosts_own_names_are_reserved() {
        for name in [
            "scout",
            "memory",
            "team",
            "sandbox_egress",
            "scout_",
            "_x",
            "a__b",
        ] {
            let why = check_connector_name(name).expect_err(name);
            assert!(why.contains(&format!("`{name}`")), "{why}");
        }
        for name in ["github", "writer", "seo", "my-tool", "scouting", "a_b"] {
            assert_eq!(check_connector_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn platform_names_round_trip() {
        for p in Platform::ALL {
            assert_eq!(Platform::from_server_name(p.server_name()), Some(p));
            assert!(!p.tools().is_empty());
        }
        assert_eq!(Platform::Memory.served_by("memory_read"), Server::Host);
        assert_eq!(
            Platform::Memory.served_by("soul_update"),
            Server::Orchestrator
        );
    }
}
