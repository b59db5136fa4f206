//! `GET /v1/sessions/{id}/agent-config?format=...`: a session's allowlist and
//! MCP endpoints, written the way an agent runtime takes them, so an
//! orchestrator does not translate the policy's answer by hand.
//!
//! Why this module exists, and why it is small: the session's allowlist
//! (`SessionView::tools`, DESIGN D12) is seed 000's *exclusive* `tools`
//! list. The seed's harness passes it to the Claude Agent SDK as `tools`,
//! with a permission callback that is always present, and deliberately never
//! as `allowedTools`: an entry there is approved automatically and skips the
//! callback, so a gated call would run without its person. No format here
//! ever emits an `allowedTools` key.
//!
//! The three formats:
//! - `claude-agent-sdk`: the SDK's `Options` fields, spelled as the SDK
//!   spells them: `{"tools": [...], "mcpServers": {...}}`, plus `token_env`.
//! - `claude-code`: `{"tools": [...], "permissions": {"deny": [...]},
//!   "mcpServers": {...}}`, plus `token_env`. `permissions` goes into the
//!   CLI's settings file, `mcpServers` into the file given to `--mcp-config`
//!   (with `--strict-mcp-config`), `tools` to `--tools`. Seed 004:
//!   `permissions.deny` hard-blocks, and is enforced even under
//!   `--dangerously-skip-permissions`, so it lists every built-in the
//!   session is not given (the deployment's and the CLI's others,
//!   [`names::BUILTINS`] and [`names::CLI_OTHER_BUILTINS`]), `mcp__SERVER`
//!   for every MCP server the host knows (seed connectors, served
//!   components, platform servers) of which the session holds no tool, and
//!   `mcp__SERVER__TOOL` for each known tool of a server it holds only part
//!   of (a memory server without the standing-instruction tools, a tool an
//!   operator has not reviewed).
//! - `mcp-json`: the `.mcp.json` shape, `{"mcpServers": {...}}` and nothing
//!   else, so it can be written to a file as it is.
//!
//! Every format carries one MCP server entry per connector endpoint of the
//! session, keyed by server name so the runtime names its tools
//! `mcp__SERVER__TOOL` as the allowlist does:
//! `{"type": "http", "url": URL, "headers": {"Authorization": "Bearer ${SCOUT_SESSION_TOKEN}"}}`.
//! The host keeps only a digest of the session's token (it is shown once,
//! in the answer that opened the session), so it cannot put the token here,
//! and a configuration fetched later must not reveal it anyway: the header
//! holds an environment-variable reference instead. Claude Code expands
//! `${VAR}` in `.mcp.json` and `--mcp-config` headers; an orchestrator that
//! passes `mcpServers` to the SDK in code substitutes the token itself.
//! `token_env` (and the `Scout-Token-Env` response header, for `mcp-json`)
//! names the variable. The orchestrator adds the servers it runs itself
//! (memory, transcripts, team...), whose tools the `tools` list already names.

use super::ServeHost;
use crate::policy::{Catalog, Platform, names};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The environment variable the MCP entries' `Authorization` header refers to.
pub(crate) const TOKEN_ENV: &str = "SCOUT_SESSION_TOKEN";

/// The `Authorization` header value of every MCP entry.
pub(crate) const AUTHORIZATION_VALUE: &str = "Bearer ${SCOUT_SESSION_TOKEN}";

/// The names `format` takes, for error messages.
pub(crate) const FORMAT_NAMES: &str = "claude-agent-sdk, claude-code, mcp-json";

/// One way of writing a session's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Claude Agent SDK's `Options`: `tools`, `mcpServers`.
    ClaudeAgentSdk,
    /// Claude Code: `tools`, `permissions.deny`, `mcpServers`.
    ClaudeCode,
    /// `.mcp.json`: `mcpServers` only.
    McpJson,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::ClaudeAgentSdk, Format::ClaudeCode, Format::McpJson];

    /// The format called `name` in the query string ([`FORMAT_NAMES`]).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeAgentSdk => "claude-agent-sdk",
            Format::ClaudeCode => "claude-code",
            Format::McpJson => "mcp-json",
        }
    }
}

/// What the rendering needs of one session: what `SessionView` shows.
#[derive(Debug, Clone, Copy)]
pub struct SessionTools<'a> {
    /// The exclusive allowlist: built-ins by bare name, the rest `mcp__SERVER__TOOL`.
    pub allowlist: &'a [String],
    /// The session's MCP endpoint URL per server name.
    pub endpoints: &'a BTreeMap<String, String>,
}

/// Every tool name the host knows that a runtime might have configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Known {
    /// Built-ins, in the order they are denied: the deployment's, then the CLI's others.
    pub builtins: Vec<String>,
    /// MCP servers by name, each with the full names of the tools known of it.
    pub servers: BTreeMap<String, BTreeSet<String>>,
}

impl Known {
    /// The built-ins (the seed's list, the deployment's as `catalog` holds
    /// it, the CLI's others), every platform server and every connector of
    /// `catalog`, with their tools.
    pub(crate) fn from_catalog(catalog: &Catalog) -> Known {
        let mut known = Known::default();
        let builtins = names::BUILTINS
            .iter()
            .copied()
            .chain(catalog.builtins.iter().map(String::as_str))
            .chain(names::CLI_OTHER_BUILTINS);
        for b in builtins {
            if !known.builtins.iter().any(|k| k == b) {
                known.builtins.push(b.to_string());
            }
        }
        for p in Platform::ALL {
            known = known.with_server(p.server_name(), p.tools().iter().copied());
        }
        for c in catalog.connectors() {
            known = known.with_server(
                &c.name,
                c.reads
                    .iter()
                    .map(String::as_str)
                    .chain(c.writes.iter().map(|w| w.name.as_str())),
            );
        }
        known
    }

    /// Adds `server` and its tools (local names) to what is known.
    pub(crate) fn with_server<'t>(
        mut self,
        server: &str,
        tools: impl IntoIterator<Item = &'t str>,
    ) -> Known {
        let entry = self.servers.entry(server.to_string()).or_default();
        entry.extend(tools.into_iter().map(|t| names::mcp(server, t)));
        self
    }
}

/// The session's configuration in `format`.
pub fn render(format: Format, session: SessionTools<'_>, known: &Known) -> Value {
    let servers = mcp_servers(session.endpoints);
    match format {
        Format::ClaudeAgentSdk => json!({
            "tools": session.allowlist,
            "mcpServers": servers,
            "token_env": TOKEN_ENV,
        }),
        Format::ClaudeCode => json!({
            "tools": session.allowlist,
            "permissions": {"deny": deny(session, known)},
            "mcpServers": servers,
            "token_env": TOKEN_ENV,
        }),
        Format::McpJson => json!({"mcpServers": servers}),
    }
}

/// One `http` entry per endpoint, with the token as an environment reference.
fn mcp_servers(endpoints: &BTreeMap<String, String>) -> Value {
    let entries: Map<String, Value> = endpoints
        .iter()
        .map(|(server, url)| (server.clone(), json!({"type": "http", "url": url, "headers": {"Authorization": AUTHORIZATION_VALUE}})))
        .collect();
    Value::Object(entries)
}

/// Claude Code's `permissions.deny` for the session: every known built-in
/// outside the allowlist, then (sorted) `mcp__SERVER` for each known server
/// the session holds no tool of and `mcp__SERVER__TOOL` for each known tool
/// outside the allowlist of a server it holds part of. Never a name the
/// allowlist holds.
pub fn deny(session: SessionTools<'_>, known: &Known) -> Vec<String> {
    let allowed: BTreeSet<&str> = session.allowlist.iter().map(String::as_str).collect();
    let held_servers: BTreeSet<&str> = session
        .allowlist
        .iter()
        .filter_map(|t| names::split_mcp(t))
        .map(|(server, _)| server)
        .collect();
    let mut out: Vec<String> = known
        .builtins
        .iter()
        .filter(|b| !allowed.contains(b.as_str()))
        .cloned()
        .collect();
    let mut mcp = BTreeSet::new();
    for (server, tools) in &known.servers {
        if held_servers.contains(server.as_str()) {
            mcp.extend(
                tools
                    .iter()
                    .filter(|t| !allowed.contains(t.as_str()))
                    .cloned(),
            );
        } else {
            mcp.insert(format!("mcp__{server}"));
        }
    }
    out.extend(mcp);
    out
}

impl ServeHost {
    /// Session `id`'s configuration in `format`, if it is open. Built from
    /// the same view the admin API shows, so `tools` and the endpoints are
    /// exactly the session's.
    pub fn agent_config(&self, id: &str, format: Format) -> Option<Value> {
        // Whichever host serves it: the recorded view has the same fields.
        let view: super::SessionView = serde_json::from_value(self.session_view(id).ok()??).ok()?;
        let mut known = Known::from_catalog(&self.host().catalog());
        for (name, component) in &self.host().components() {
            known = known.with_server(name, component.tools().iter().map(|t| t.name.as_str()));
        }
        Some(render(
            format,
            SessionTools {
                allowlist: &view.tools,
                endpoints: &view.mcp,
            },
            &known,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{BrandFacts, Role, SessionInput, Switches, surface};

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn endpoints(list: &[(&str, &str)]) -> BTreeMap<String, String> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Every string anywhere in `value`, and every object key.
    fn keys(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    out.push(k.clone());
                    keys(v, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }

    #[test]
    fn format_names_round_trip_and_nothing_else_is_one() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
            assert!(FORMAT_NAMES.contains(f.name()));
        }
        for bad in [
            "",
            "claude",
            "Claude-Code",
            "mcp_json",
            "claude-code ",
            "allowedTools",
        ] {
            assert_eq!(Format::from_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn each_format_has_exactly_its_keys_and_never_allowed_tools() {
        let allowlist = strings(&["Read", "mcp__github__github_read_file"]);
        let eps = endpoints(&[("github", "http://h/mcp/s-1/github")]);
        let session = SessionTools {
            allowlist: &allowlist,
            endpoints: &eps,
        };
        let known = Known::from_catalog(&Catalog::seed());
        let entry = json!({"type": "http", "url": "http://h/mcp/s-1/github", "headers": {"Authorization": "Bearer ${SCOUT_SESSION_TOKEN}"}});

        let sdk = render(Format::ClaudeAgentSdk, session, &known);
        assert_eq!(
            sdk,
            json!({"tools": ["Read", "mcp__github__github_read_file"], "mcpServers": {"github": entry}, "token_env": "SCOUT_SESSION_TOKEN"})
        );

        let code = render(Format::ClaudeCode, session, &known);
        let top: Vec<&str> = code
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(top, ["tools", "permissions", "mcpServers", "token_env"]);
        assert_eq!(code["tools"], sdk["tools"]);
        assert_eq!(code["mcpServers"], sdk["mcpServers"]);
        assert_eq!(
            code["permissions"].as_object().unwrap().len(),
            1,
            "only `deny`: {code}"
        );

        assert_eq!(
            render(Format::McpJson, session, &known),
            json!({"mcpServers": {"github": entry}})
        );

        for f in Format::ALL {
            let mut all = Vec::new();
            keys(&render(f, session, &known), &mut all);
            assert!(
                !all.iter()
                    .any(|k| k.eq_ignore_ascii_case("allowedTools") || k == "allowed_tools"),
                "{f:?}: {all:?}"
            );
        }
    }

    #[test]
    fn deny_names_every_builtin_and_server_outside_the_allowlist_and_nothing_inside() {
        let allowlist = strings(&[
            "Read",
            "WebFetch",
            "mcp__github__github_read_file",
            "mcp__memory__memory_read",
            "mcp__transcripts__transcript_read",
            "mcp__transcripts__transcript_search",
        ]);
        let eps = endpoints(&[("github", "http://h/mcp/s-1/github")]);
        let known = Known::from_catalog(&Catalog::seed());
        let deny = deny(
            SessionTools {
                allowlist: &allowlist,
                endpoints: &eps,
            },
            &known,
        );
        for name in &allowlist {
            assert!(!deny.contains(name), "{name} is allowed and denied");
        }
        for b in [
            "Bash",
            "Write",
            "Edit",
            "Glob",
            "Grep",
            "WebSearch",
            "Agent",
            "NotebookEdit",
            "TodoWrite",
            "Task",
        ] {
            assert!(deny.iter().any(|d| d == b), "{b} is not denied: {deny:?}");
        }
        // Built-ins come first, in the deployment's order, then the MCP rules sorted.
        assert_eq!(
            &deny[..6],
            ["Bash", "Write", "Edit", "Glob", "Grep", "WebSearch"]
        );
        let first_mcp = deny.iter().position(|d| d.starts_with("mcp__")).unwrap();
        assert!(deny[first_mcp..].iter().all(|d| d.starts_with("mcp__")));
        assert!(
            deny[first_mcp..].windows(2).all(|w| w[0] < w[1]),
            "sorted and unique"
        );
        // Servers the session holds nothing of: denied whole.
        for s in [
            "shopify",
            "agentmail",
            "team",
            "skills",
            "goals",
            "project",
            "sandbox",
            "sandbox_egress",
            "browser",
            "writer",
            "seo",
        ] {
            assert!(deny.contains(&format!("mcp__{s}")), "mcp__{s}: {deny:?}");
        }
        // Servers it holds part of: never denied whole, their other tools by name.
        for s in ["github", "memory", "transcripts"] {
            assert!(!deny.contains(&format!("mcp__{s}")), "{s} is held");
        }
        assert!(deny.contains(&"mcp__github__github_create_branch".to_string()));
        assert!(deny.contains(&"mcp__memory__soul_update".to_string()));
        assert!(deny.contains(&"mcp__memory__memory_write".to_string()));
        assert!(
            !deny.iter().any(|d| d.starts_with("mcp__transcripts")),
            "both transcript tools are held"
        );
    }

    #[test]
    fn a_served_component_s_tools_and_a_narrowed_builtin_list_are_known() {
        let known = Known::from_catalog(&Catalog::seed().with_builtins(["Read"]))
            .with_server("acme_crm", ["crm_list", "crm_delete"]);
        assert!(
            known.builtins.iter().any(|b| b == "Bash"),
            "the seed's built-ins stay known when the deployment drops one"
        );
        assert_eq!(known.builtins.iter().filter(|b| *b == "Read").count(), 1);
        let allowlist = strings(&["mcp__acme_crm__crm_list"]);
        let eps = BTreeMap::new();
        let deny = deny(
            SessionTools {
                allowlist: &allowlist,
                endpoints: &eps,
            },
            &known,
        );
        assert!(deny.contains(&"mcp__acme_crm__crm_delete".to_string()));
        assert!(!deny.contains(&"mcp__acme_crm".to_string()));
        assert!(deny.contains(&"Read".to_string()));
    }

    #[test]
    fn a_policy_surface_renders_with_no_overlap_between_tools_and_deny() {
        let catalog = Catalog::seed();
        let switches = Switches::from_vars([("AGENTMAIL_WEBHOOK_URL_SECRET", "s")]);
        let brand = BrandFacts {
            has_coworkers: true,
            has_skills: true,
            goals_engine_on: true,
            ..BrandFacts::with_connectors(["github", "agentmail"])
        };
        let known = Known::from_catalog(&catalog);
        for role in [Role::PersonChat, Role::InboundEmailTurn] {
            let s = surface(
                &SessionInput::new(role).brand(brand.clone()),
                &catalog,
                &switches,
            )
            .unwrap();
            let allowlist = s.allowlist();
            let eps = endpoints(&[("agentmail", "http://h/a"), ("github", "http://h/g")]);
            let code = render(
                Format::ClaudeCode,
                SessionTools {
                    allowlist: &allowlist,
                    endpoints: &eps,
                },
                &known,
            );
            let deny: BTreeSet<&str> = code["permissions"]["deny"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            let tools: Vec<&str> = code["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(tools, s.names());
            assert!(tools.iter().all(|t| !deny.contains(t)), "{role:?}");
            if role == Role::PersonChat {
                assert!(tools.contains(&"mcp__team__team_roster") && !deny.contains("mcp__team"));
                assert!(!deny.contains("Bash"));
            } else {
                assert!(
                    deny.contains("Bash")
                        && deny.contains("mcp__team")
                        && deny.contains("mcp__memory")
                );
                assert!(
                    deny.contains("mcp__agentmail__agentmail_send_message"),
                    "the sends are denied by name"
                );
            }
        }
    }
}
