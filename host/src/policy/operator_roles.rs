//! Roles of an operator's own (`[roles.NAME]`, issue 56 item 3).
//!
//! The seed's seven roles are compiled in and stay exactly as they are. An
//! operator role is declared in configuration on top of one of them, its
//! *base*: a session opened under it runs under the base role's three
//! filters, then under the operator role's ceiling (connectors and/or
//! tools), with its limits and, where the base can have a person, with or
//! without someone to ask. It therefore only ever narrows its base: nothing
//! an operator declares here gives a tool, a credential or an effect the
//! base role would not have had.
//!
//! ```toml
//! [roles.triage]
//! base = "specialist"                  # one of the seed's seven API names
//! person_can_be_asked = false          # true only on a person-chat base
//! tools = ["mcp__github__github_list_issues", "mcp__github__github_read_file"]
//! # connectors = ["github"]            # servers whose tools may be offered
//! max_calls = 50                       # per session
//! max_effects = 5                      # writes and billed calls per session
//! ```

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Catalog, ROLE_NAMES, Role, Selection, SessionLimits, names};

/// `[roles.NAME]` as written in the configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorRoleConfig {
    /// The seed role whose filters apply (`coworker`, `person-chat`, …).
    pub base: String,
    /// Whether a gated call may ask a person: allowed only on a base that
    /// can have one (person chat). Default: nobody is asked.
    #[serde(default)]
    pub person_can_be_asked: bool,
    /// Only these MCP servers' tools (connectors and platform servers).
    #[serde(default)]
    pub connectors: Option<Vec<String>>,
    /// Only these tools, by their allowlist names
    /// (`mcp__github__github_read_file`, `Read`).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The most calls that run in one session.
    #[serde(default)]
    pub max_calls: Option<u32>,
    /// The most writes and billed calls in one session.
    #[serde(default)]
    pub max_effects: Option<u32>,
}

/// One operator role, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperatorRole {
    pub name: String,
    /// The seed role whose filters apply.
    #[serde(serialize_with = "serialize_api_name")]
    pub base: Role,
    pub person_can_be_asked: bool,
    /// What a session of the role may be offered of its base's surface.
    pub ceiling: Selection,
    /// Per session; an orchestrator may set lower ones, never higher.
    #[serde(skip_serializing_if = "SessionLimits::is_none")]
    pub limits: SessionLimits,
}

fn serialize_api_name<S: serde::Serializer>(role: &Role, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(role.api_name())
}

impl OperatorRole {
    /// A session's limits under this role: the orchestrator's `asked`,
    /// each at most the role's.
    pub fn limits_within(&self, asked: SessionLimits) -> SessionLimits {
        let lower = |a: Option<u32>, b: Option<u32>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        SessionLimits {
            expires_at_ms: asked.expires_at_ms,
            max_calls: lower(asked.max_calls, self.limits.max_calls),
            max_effects: lower(asked.max_effects, self.limits.max_effects),
        }
    }

    /// One line for `inspect` and the permissions page: base, ceiling,
    /// whether a person can be asked, limits.
    pub fn summary(&self) -> String {
        let list = |set: &Option<BTreeSet<String>>| {
            set.as_ref()
                .map(|s| s.iter().cloned().collect::<Vec<_>>().join(", "))
        };
        let mut parts = vec![format!("base {}", self.base.api_name())];
        match (list(&self.ceiling.connectors), list(&self.ceiling.tools)) {
            (None, None) => parts.push("the base's whole surface".into()),
            (connectors, tools) => {
                if let Some(c) = connectors {
                    parts.push(format!("servers {c}"));
                }
                if let Some(t) = tools {
                    parts.push(format!("tools {t}"));
                }
            }
        }
        parts.push(
            if self.person_can_be_asked {
                "asks a person per gated call"
            } else {
                "no one to ask"
            }
            .into(),
        );
        if let Some(n) = self.limits.max_calls {
            parts.push(format!("at most {n} calls a session"));
        }
        if let Some(n) = self.limits.max_effects {
            parts.push(format!("at most {n} effects a session"));
        }
        parts.join("; ")
    }
}

/// Every operator role of the deployment, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct OperatorRoles {
    roles: BTreeMap<String, OperatorRole>,
}

impl OperatorRoles {
    /// No operator role (what a configuration without `[roles]` runs).
    pub fn none() -> OperatorRoles {
        OperatorRoles::default()
    }

    /// The roles declared under `[roles]`, each checked on its own (names,
    /// base, person, limits); every error at once, one per line, each
    /// naming its key. The ceiling's names are checked against the
    /// deployment by [`OperatorRoles::check_ceilings`] once its tools are
    /// known.
    pub fn from_config(
        declared: &BTreeMap<String, OperatorRoleConfig>,
    ) -> Result<OperatorRoles, String> {
        let mut errors = Vec::new();
        let mut roles = BTreeMap::new();
        for (name, config) in declared {
            match OperatorRole::from_config(name, config) {
                Ok(role) => {
                    roles.insert(name.clone(), role);
                }
                Err(mut e) => errors.append(&mut e),
            }
        }
        if errors.is_empty() {
            Ok(OperatorRoles { roles })
        } else {
            Err(errors.join("\n"))
        }
    }

    /// Refused when a ceiling names a server or tool that nothing in the
    /// deployment (`catalog`: built-ins, platform and connector tools;
    /// `servers`: the connectors served) could give the role's base: such
    /// a name would silently match nothing.
    pub fn check_ceilings(
        &self,
        catalog: &Catalog,
        servers: &BTreeSet<String>,
    ) -> Result<(), String> {
        let mut errors = Vec::new();
        for role in self.roles.values() {
            let possible = possible_tools(role.base, catalog);
            let possible_servers: BTreeSet<&str> = possible
                .iter()
                .filter_map(|t| names::split_mcp(t).map(|(server, _)| server))
                .collect();
            for c in role.ceiling.connectors.iter().flatten() {
                if !possible_servers.contains(c.as_str()) {
                    let why = if servers.contains(c) || possible_servers.is_empty() {
                        format!(
                            "a session of its base `{}` is never given a tool of it",
                            role.base.api_name()
                        )
                    } else {
                        "no connector or platform server of this deployment is called that"
                            .to_string()
                    };
                    errors.push(format!(
                        "roles.{}.connectors names `{c}`, which matches nothing: {why}",
                        role.name
                    ));
                }
            }
            for t in role.ceiling.tools.iter().flatten() {
                if !possible.contains(t) {
                    errors.push(format!(
                        "roles.{}.tools names `{t}`, which matches nothing a session of its base `{}` could be given in this deployment (tools are named as allowlisted: `mcp__github__github_read_file`, `Read`)",
                        role.name,
                        role.base.api_name()
                    ));
                } else if !role.ceiling.keeps(t) {
                    errors.push(format!(
                        "roles.{}.tools names `{t}`, whose server roles.{}.connectors leaves out: list its server too, or leave the tool out",
                        role.name, role.name
                    ));
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    /// The role called `name`, if an operator declared it.
    pub fn get(&self, name: &str) -> Option<&OperatorRole> {
        self.roles.get(name)
    }

    /// Every operator role, by name.
    pub fn iter(&self) -> impl Iterator<Item = &OperatorRole> {
        self.roles.values()
    }

    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }

    /// The names a session may be opened with: the seed's and these.
    pub fn role_names(&self) -> String {
        let mut names = ROLE_NAMES.to_string();
        for name in self.roles.keys() {
            names.push_str(", ");
            names.push_str(name);
        }
        names
    }
}

impl OperatorRole {
    fn from_config(name: &str, config: &OperatorRoleConfig) -> Result<OperatorRole, Vec<String>> {
        let mut errors = Vec::new();
        let key = format!("roles.{name}");
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if !valid_name {
            errors.push(format!(
                "{key}: a role's name is 1 to 64 lowercase letters, digits, `-` or `_`"
            ));
        }
        if Role::from_name(name).is_some() {
            errors.push(format!(
                "{key}: `{name}` is a seed role's name ({ROLE_NAMES}), which stays as it is: call the operator role something else"
            ));
        }
        let base = Role::from_name(config.base.trim());
        match base {
            None => errors.push(format!(
                "{key}.base is `{}`: it must be one of the seed's roles ({ROLE_NAMES})",
                config.base
            )),
            Some(base) if config.person_can_be_asked && !base.can_ask_a_person() => {
                errors.push(format!(
                    "{key}.person_can_be_asked is true, but a session of its base `{}` never has a person to ask (only person-chat does): set it to false, or base the role on person-chat",
                    base.api_name()
                ))
            }
            Some(_) => {}
        }
        let listed = |field: &str, list: &Option<Vec<String>>, errors: &mut Vec<String>| {
            let list = list.as_ref()?;
            if list.is_empty() {
                errors.push(format!(
                    "{key}.{field} is empty, which would leave the role no tool: list at least one, or leave it out"
                ));
            }
            Some(list.iter().map(|n| n.trim().to_string()).collect())
        };
        let connectors = listed("connectors", &config.connectors, &mut errors);
        let tools = listed("tools", &config.tools, &mut errors);
        for (field, value) in [
            ("max_calls", config.max_calls),
            ("max_effects", config.max_effects),
        ] {
            if value == Some(0) {
                errors.push(format!(
                    "{key}.{field} is 1 or more (leave it out for no limit)"
                ));
            }
        }
        match base {
            Some(base) if errors.is_empty() => Ok(OperatorRole {
                name: name.to_string(),
                base,
                person_can_be_asked: config.person_can_be_asked,
                ceiling: Selection { connectors, tools },
                limits: SessionLimits {
                    expires_at_ms: None,
                    max_calls: config.max_calls,
                    max_effects: config.max_effects,
                },
            }),
            _ => Err(errors),
        }
    }
}

/// Every tool name a session of `base` could be given in a deployment
/// with `catalog`, whatever its brand, profile and switches: the bound a
/// ceiling is checked against.
pub fn possible_tools(base: Role, catalog: &Catalog) -> BTreeSet<String> {
    use names::Platform;
    let builtins = catalog.builtins.iter().cloned();
    let platform = |p: Platform, tools: &[&str]| -> Vec<String> {
        tools
            .iter()
            .map(|t| names::mcp(p.server_name(), t))
            .collect()
    };
    let connector_tools = |reads_only: bool| -> Vec<String> {
        catalog
            .connectors()
            .flat_map(|c| {
                let reads = c
                    .reads
                    .iter()
                    .filter(|r| !reads_only || c.grantable.contains(*r))
                    .map(|r| c.mcp(r));
                let writes: Vec<String> = if reads_only {
                    Vec::new()
                } else {
                    c.writes.iter().map(|w| c.mcp(&w.name)).collect()
                };
                reads.chain(writes).collect::<Vec<_>>()
            })
            .collect()
    };
    let mut all: BTreeSet<String> = BTreeSet::new();
    match base {
        Role::PersonChat => {
            all.extend(builtins);
            for p in Platform::ALL {
                all.extend(platform(p, p.tools()));
            }
            all.extend(connector_tools(false));
        }
        Role::InboundEmailTurn => {
            if let Some(agentmail) = catalog.connector("agentmail") {
                all.extend(names::INBOUND_TOOLS.iter().map(|t| agentmail.mcp(t)));
            }
        }
        Role::CoworkerRun { route } => {
            all.extend(super::coworker_ceiling(route, catalog));
        }
        Role::SpecialistRun { route } => {
            all.extend(super::coworker_ceiling(route, catalog));
            all.extend(connector_tools(true));
            for p in Platform::ALL {
                all.extend(platform(p, p.tools()));
            }
        }
        Role::GoalAgentStep => {
            all.extend(builtins);
            all.extend(platform(Platform::Project, names::PROJECT_TOOLS.as_slice()));
            all.extend(connector_tools(true));
        }
        Role::GoalReviewer => {}
        Role::ReadOnlyRoute { .. } => {
            all.extend(builtins);
            for p in [Platform::Transcripts, Platform::Skills, Platform::Team] {
                all.extend(platform(p, p.tools()));
            }
        }
    }
    all
}
