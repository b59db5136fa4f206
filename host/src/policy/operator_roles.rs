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

use super::{Catalog, ROLE_NAMES, Role, Selection, SessionInput, SessionLimits, names};

/// `[roles.NAME]` as written in the configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
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
    /// `input`, decided for the base role, as a session of this role: its
    /// ceiling applied after the base's filters, nobody to ask unless the
    /// role says a person can be, and named as this role.
    pub fn narrow(&self, mut input: SessionInput) -> SessionInput {
        input.approval_channel &= self.person_can_be_asked;
        input.operator_role = Some(self.name.clone());
        input.operator_ceiling = Some(self.ceiling.clone());
        input.limits = self.limits_within(input.limits);
        input
    }

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
    /// deployment could give the role's base (`catalog`: its built-ins,
    /// platform and connector tools): such a name would silently match
    /// nothing. `remote`: remote MCP servers, whose tools are listed only
    /// once the host runs; a tool under one of them is taken on trust
    /// where the base can be given connector tools at all.
    pub fn check_ceilings(
        &self,
        catalog: &Catalog,
        remote: &BTreeSet<String>,
    ) -> Result<(), String> {
        let mut errors = Vec::new();
        for role in self.roles.values() {
            let base = role.base.api_name();
            let possible = possible_tools(role.base, catalog);
            let takes_connectors = matches!(
                role.base,
                Role::PersonChat | Role::SpecialistRun { .. } | Role::GoalAgentStep
            );
            let on_remote = |server: &str| takes_connectors && remote.contains(server);
            let possible_servers: BTreeSet<&str> = possible
                .iter()
                .filter_map(|t| names::split_mcp(t).map(|(server, _)| server))
                .collect();
            for c in role.ceiling.connectors.iter().flatten() {
                if !possible_servers.contains(c.as_str()) && !on_remote(c) {
                    errors.push(format!(
                        "roles.{}.connectors names `{c}`, which matches nothing: a session of its base `{base}` is never given a tool of a server called that in this deployment",
                        role.name
                    ));
                }
            }
            for t in role.ceiling.tools.iter().flatten() {
                let remote_tool = names::split_mcp(t).is_some_and(|(server, _)| on_remote(server));
                if !possible.contains(t) && !remote_tool {
                    errors.push(format!(
                        "roles.{}.tools names `{t}`, which matches nothing a session of its base `{base}` could be given in this deployment (tools are named as allowlisted: `mcp__github__github_read_file`, `Read`)",
                        role.name
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{BrandFacts, Removal, Switches, removed, surface};

    fn declared(toml_text: &str) -> Result<OperatorRoles, String> {
        let declared: BTreeMap<String, OperatorRoleConfig> =
            toml::from_str(toml_text).map_err(|e| e.to_string())?;
        OperatorRoles::from_config(&declared)
    }

    #[test]
    fn a_role_is_refused_with_its_key_named() {
        let seed_name = declared("[coworker]\nbase = \"person-chat\"\n").unwrap_err();
        assert!(seed_name.contains("roles.coworker") && seed_name.contains("seed role"));
        let unknown = declared("[x]\nbase = \"janitor\"\n").unwrap_err();
        assert!(unknown.contains("roles.x.base") && unknown.contains("person-chat"));
        let nobody =
            declared("[x]\nbase = \"coworker\"\nperson_can_be_asked = true\n").unwrap_err();
        assert!(nobody.contains("roles.x.person_can_be_asked"), "{nobody}");
        let empty = declared("[x]\nbase = \"person-chat\"\ntools = []\n").unwrap_err();
        assert!(empty.contains("roles.x.tools"));
        let zero = declared("[x]\nbase = \"person-chat\"\nmax_calls = 0\n").unwrap_err();
        assert!(zero.contains("roles.x.max_calls"));
        // Every error at once.
        let both = declared("[a]\nbase = \"nope\"\n[b]\nbase = \"nope\"\n").unwrap_err();
        assert_eq!(both.lines().count(), 2, "{both}");
        assert!(declared("[x]\nbase = \"person-chat\"\nperson_can_be_asked = true\n").is_ok());
    }

    #[test]
    fn a_ceiling_naming_nothing_the_base_could_have_is_refused() {
        let catalog = Catalog::seed();
        let none = BTreeSet::new();
        let roles = declared(
            "[triage]\nbase = \"specialist\"\ntools = [\"mcp__github__github_read_file\"]\n",
        )
        .unwrap();
        assert_eq!(roles.check_ceilings(&catalog, &none), Ok(()));
        let coworker = declared(
            "[triage]\nbase = \"coworker\"\ntools = [\"mcp__github__github_read_file\"]\n",
        )
        .unwrap();
        let refused = coworker.check_ceilings(&catalog, &none).unwrap_err();
        assert!(
            refused.contains("roles.triage.tools") && refused.contains("github_read_file"),
            "{refused}"
        );
        let typo = declared("[t]\nbase = \"person-chat\"\nconnectors = [\"githib\"]\n").unwrap();
        assert!(
            typo.check_ceilings(&catalog, &none)
                .unwrap_err()
                .contains("roles.t.connectors names `githib`")
        );
        // A remote server's tools are listed once the host runs.
        let remote = declared(
            "[t]\nbase = \"person-chat\"\ntools = [\"mcp__docs__search\"]\nconnectors = [\"docs\"]\n",
        )
        .unwrap();
        assert_eq!(
            remote.check_ceilings(&catalog, &BTreeSet::from(["docs".to_string()])),
            Ok(())
        );
    }

    #[test]
    fn a_session_of_an_operator_role_is_its_base_narrowed_to_the_ceiling() {
        let catalog = Catalog::seed();
        let switches = Switches::default();
        let roles = declared(
            "[reader]\nbase = \"person-chat\"\ntools = [\"mcp__github__github_read_file\", \"Read\"]\nmax_calls = 5\n",
        )
        .unwrap();
        let role = roles.get("reader").unwrap();
        let base = SessionInput::new(Role::PersonChat)
            .brand(BrandFacts::with_connectors(["github"]))
            .approval_channel(true);
        let input = role.narrow(base.clone());
        assert_eq!(input.role_name(), "reader");
        assert_eq!(base.role_name(), "person-chat");
        assert!(
            !input.approval_channel,
            "nobody is asked unless the role says so"
        );
        assert_eq!(input.limits.max_calls, Some(5));
        let narrowed = surface(&input, &catalog, &switches).unwrap();
        assert_eq!(narrowed.names(), ["Read", "mcp__github__github_read_file"]);
        let whole = surface(&base, &catalog, &switches).unwrap();
        let gone = removed(&input, &catalog, &switches, &BTreeSet::new());
        for name in whole.names() {
            let rule = gone.iter().find(|r| r.name == name).map(|r| r.rule);
            if narrowed.contains(name) {
                assert_eq!(rule, None, "{name}");
            } else {
                assert_eq!(rule, Some(Removal::OperatorRole), "{name}");
            }
        }
        // An orchestrator's lower limit stays; a higher one is capped.
        let asked = SessionLimits {
            max_calls: Some(9),
            max_effects: Some(2),
            ..SessionLimits::default()
        };
        assert_eq!(role.limits_within(asked).max_calls, Some(5));
        assert_eq!(role.limits_within(asked).max_effects, Some(2));
    }

    #[test]
    fn the_role_travels_with_the_session_to_another_host() {
        let roles =
            declared("[reader]\nbase = \"person-chat\"\nconnectors = [\"github\"]\n").unwrap();
        let input = roles
            .get("reader")
            .unwrap()
            .narrow(SessionInput::new(Role::PersonChat));
        let kept = serde_json::to_value(&input).unwrap();
        assert_eq!(kept["operator_role"], "reader");
        assert_eq!(
            serde_json::from_value::<SessionInput>(kept).unwrap(),
            input,
            "a fleet host taking the session up decides it the same"
        );
        // A record written before operator roles existed reads as a seed role's.
        let mut old = serde_json::to_value(SessionInput::new(Role::PersonChat)).unwrap();
        old.as_object_mut().unwrap().remove("operator_role");
        let read: SessionInput = serde_json::from_value(old).unwrap();
        assert_eq!(read.role_name(), "person-chat");
        assert_eq!(read.operator_ceiling, None);
    }

    #[test]
    fn the_permissions_page_lists_operator_roles_beside_the_seeds_unchanged() {
        let catalog = Catalog::seed();
        let seed_page = crate::docs::permissions_page(&catalog, &[]);
        assert_eq!(
            crate::docs::permissions_page_with_roles(&catalog, &[], &OperatorRoles::none()),
            seed_page
        );
        let roles = declared(
            "[reader]\nbase = \"person-chat\"\ntools = [\"Read\", \"mcp__github__github_read_file\"]\nmax_calls = 5\n[triage]\nbase = \"specialist\"\nconnectors = [\"github\"]\n",
        )
        .unwrap();
        let page = crate::docs::permissions_page_with_roles(&catalog, &[], &roles);
        let seed_roles_end = seed_page.find("## What is never given").unwrap();
        assert!(
            page.starts_with(&seed_page[..seed_roles_end]),
            "the seed's roles stay as they are"
        );
        assert!(page.contains(
            "| `reader` | base person-chat; tools Read, mcp__github__github_read_file; no one to ask; at most 5 calls a session |"
        ), "{page}");
        assert!(page.contains("| `triage` | base specialist; servers github; no one to ask |"));
        assert!(page.contains("### `reader`\n\nAssumes: as Person chat. Given (2):\n\n- `Read`\n- `mcp__github__github_read_file`\n"), "{page}");
        assert!(page.contains("its profile, narrowed to the ceiling"));
    }
}
