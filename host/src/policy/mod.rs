//! The tool policy of seed 000 as data and one function.
//!
//! A session's tools are decided by three filters, in order, and a tool must
//! survive all three:
//!
//! 1. **Registration.** A tool exists only if its server is built for the
//!    session: a connector's server only when the brand's credentials for it
//!    resolve, and never when an operator switch that governs it is off.
//! 2. **The ceiling.** A coworker run (and the goal agent) carries a list of
//!    permitted tool names; everything else is intersected with it.
//! 3. **The per-call gate.** Some registered tools ask a person before each
//!    call, bill against a threshold or an allowance, or — the seed's
//!    "absent beats refusing" exceptions — stay registered and refuse.
//!
//! [`surface`] computes all three for one session (DESIGN D6) and returns the
//! whole [`Surface`]: built-ins, platform tools and connector tools, each
//! with who serves it (DESIGN D12) and its [`Gate`]. [`check_call`] applies
//! the same answer to a call; compute the surface again at execution time so
//! a switch or grant changed since cannot be used by a call planned earlier.
//!
//! The pieces: [`names`] (every non-connector tool name), [`catalog`]
//! (connectors, the read table, write gates), [`roles`] (roles and the
//! coworker ceiling), [`switches`] (operator switches and the startup
//! banner), [`profile`] (limits, grants, the five save rules), [`presets`]
//! (the eight presets, the goal agent and the reviewer) and [`gate`].
//!
//! Where the seed is open, this module decides (each also noted where it applies):
//! - Approvals switched off (`REQUIRE_WRITE_APPROVAL`) leave nobody to
//!   approve: every tool that needs an approval refuses (GitHub, Sheets,
//!   AgentMail sends, Railway, Shopify mutations, spend above a threshold),
//!   Cloudflare `execute` and `sandbox_allow_host` are absent, and only the
//!   standing-instruction tools, which "ask a person when approvals are on",
//!   run without asking.
//! - The joint tool `seo_page_opportunities` needs DataForSEO, Search Console
//!   and Shopify live in person chat too, since it reads all three.
//! - Browser login tools are on the browser server, so they also need the
//!   browser registered (`SANDBOX_ALLOW_BROWSER` and a provider).
//! - Under E2B the host file tools are disallowed for every role, not only
//!   coworkers; sandbox and browser tools are given to person chat only.
//! - A specialist's grant adds its read-table tools, skill tools and SEO
//!   brief tools without the profile naming them; only the opt-in writer
//!   tools must be asked for by name. On a read-only route a coworker or
//!   specialist keeps only the read-only built-ins it asks for: no grant
//!   tool is added.
//! - The loop and Hermes harnesses get MCP tools only (transcripts, skills);
//!   no CLI built-in and no team tool.

pub mod catalog;
pub mod gate;
pub mod names;
pub mod operator;
pub mod operator_roles;
pub mod presets;
pub mod profile;
pub mod removed;
pub mod roles;
pub mod rule;
pub mod switches;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use catalog::{
    BillingUnit, Catalog, ConnectorSpec, JointTool, OptInTools, Registers, ToolKind, WriteGate,
    WriteTool,
};
pub use gate::{AboveThreshold, Gate, MutationGate, check_call};
pub use names::{Platform, Server};
pub use presets::Preset;
pub use profile::{
    Allowance, Grant, Limits, MAX_UNITS, MeteredAllowance, Profile, ProfileError,
    UnstartableAllowance,
};
pub use removed::{Removed, removed};
pub use roles::{Harness, ROLE_NAMES, Role, Route, coworker_ceiling};
pub use rule::{Removal, ReviewHold, Rule};
pub use switches::{Egress, Switch, SwitchNote, Switches};

use names::{
    GOAL_AGENT_TOOLS, HOST_FS_TOOLS, INBOUND_TOOLS, MEMORY_NOTE_TOOLS, PROJECT_TOOLS,
    READ_ONLY_BUILTINS, SEO_HAND_OFF_BRIEF, SEO_METHOD_SKILL, SEO_SAVE_BRIEF, SKILL_TOOLS,
    STANDING_INSTRUCTION_TOOLS,
};

/// Where the session's tools run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    /// On the server host; file tools confined to the workspace by a path check.
    #[default]
    Local,
    /// In an E2B sandbox (selected when the operator sets an E2B key).
    E2b,
}

/// The configured browser provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrowserProvider {
    Browserbase,
    /// Any other provider (no persistent logins).
    Other,
}

/// What is true of the brand (and deployment) the session runs for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrandFacts {
    /// Connectors (server names) whose credentials resolve for this brand.
    /// A connector the deployment does not offer never resolves.
    pub connected: BTreeSet<String>,
    /// The brand has at least one skill.
    pub has_skills: bool,
    /// The brand has at least one coworker.
    pub has_coworkers: bool,
    /// The goals engine is on.
    pub goals_engine_on: bool,
    /// The browser provider, if one is configured.
    pub browser_provider: Option<BrowserProvider>,
    /// The brand is the deployment owner's own (the loop and Hermes harnesses serve only it).
    pub is_deployment_owner: bool,
}

impl BrandFacts {
    /// Facts with these connectors connected and nothing else.
    pub fn with_connectors<I: IntoIterator<Item = S>, S: Into<String>>(
        connectors: I,
    ) -> BrandFacts {
        BrandFacts {
            connected: connectors.into_iter().map(Into::into).collect(),
            ..BrandFacts::default()
        }
    }

    /// Whether `connector`'s credentials resolve.
    pub(crate) fn is_live(&self, connector: &str) -> bool {
        self.connected.contains(connector)
    }
}

/// Everything [`surface`] needs to know about one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInput {
    pub role: Role,
    pub environment: Environment,
    pub brand: BrandFacts,
    /// Whether someone can approve a gated call. Only person chat can have
    /// one; every other role has no one to ask and this is ignored.
    pub approval_channel: bool,
    /// The saved profile, for coworker, specialist, goal agent and reviewer
    /// runs (the goal agent and reviewer default to their fixed profiles).
    pub profile: Option<Profile>,
    /// For a retry: the tools the previous attempt ran with. The surface is
    /// narrowed to them.
    pub previous_attempt: Option<Vec<String>>,
    /// What the orchestrator chose for this session: the surface is
    /// narrowed to it, never widened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
    /// The session's own limits, set by its orchestrator (inside any
    /// grant's).
    #[serde(default, skip_serializing_if = "SessionLimits::is_none")]
    pub limits: SessionLimits,
    /// The operator role (`[roles.NAME]`) the session was opened under, if
    /// any: `role` is then its base, whose filters apply, narrowed by the
    /// operator role's ceiling ([`operator_roles`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_role: Option<String>,
    /// The operator role's ceiling: the surface is narrowed to it after
    /// the seed's filters (a tool it leaves out is removed as
    /// `operator_role`), never widened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_ceiling: Option<Selection>,
}

/// Limits an orchestrator set on one session when it opened it (issue 39),
/// each inside the grant's it runs under, if any; refused with their own
/// rules once reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionLimits {
    /// From then on (milliseconds since the Unix epoch) every call is
    /// refused, reads included (`session_expired`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<i64>,
    /// The most calls that run (`session_calls_exhausted` after).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u32>,
    /// The most writes and billed calls (`session_effects_exhausted` after;
    /// reads still run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_effects: Option<u32>,
}

impl SessionLimits {
    /// Whether it sets no limit.
    pub fn is_none(&self) -> bool {
        *self == SessionLimits::default()
    }
}

/// The part of its surface an orchestrator chose for one session (issue
/// 39): only narrows what the role, grant and registration give.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selection {
    /// MCP servers (connectors and platform servers) whose tools may be
    /// offered; `None`: every one. Built-ins are not servers: `tools`
    /// narrows them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connectors: Option<BTreeSet<String>>,
    /// The tools that may be offered, by their allowlist names
    /// (`mcp__github__github_read_file`, `Read`); `None`: every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<BTreeSet<String>>,
}

impl Selection {
    /// Whether the tool named `name` (as offered) is selected.
    pub fn keeps(&self, name: &str) -> bool {
        let server_kept = match (&self.connectors, names::split_mcp(name)) {
            (Some(connectors), Some((server, _))) => connectors.contains(server),
            _ => true,
        };
        server_kept && self.tools.as_ref().is_none_or(|tools| tools.contains(name))
    }
}

impl SessionInput {
    /// A local session for `role` with no connector; person chat has an approval channel.
    pub fn new(role: Role) -> SessionInput {
        SessionInput {
            role,
            environment: Environment::Local,
            brand: BrandFacts::default(),
            approval_channel: role.can_ask_a_person(),
            profile: None,
            previous_attempt: None,
            selection: None,
            limits: SessionLimits::default(),
            operator_role: None,
            operator_ceiling: None,
        }
    }

    /// The role's name as policies, spans and the admin API see it: the
    /// operator role's name, else the seed role's API name (`coworker`).
    pub fn role_name(&self) -> &str {
        self.operator_role
            .as_deref()
            .unwrap_or_else(|| self.role.api_name())
    }

    pub fn environment(mut self, environment: Environment) -> SessionInput {
        self.environment = environment;
        self
    }

    pub fn brand(mut self, brand: BrandFacts) -> SessionInput {
        self.brand = brand;
        self
    }

    pub fn approval_channel(mut self, present: bool) -> SessionInput {
        self.approval_channel = present;
        self
    }

    pub fn profile(mut self, profile: Profile) -> SessionInput {
        self.profile = Some(profile);
        self
    }

    /// Narrowed to what the orchestrator selected.
    pub fn selecting(mut self, selection: Selection) -> SessionInput {
        self.selection = Some(selection);
        self
    }

    pub fn retry_of<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        tools: I,
    ) -> SessionInput {
        self.previous_attempt = Some(tools.into_iter().map(Into::into).collect());
        self
    }
}

/// Where an offered tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A built-in of the agent runtime.
    BuiltIn,
    /// A platform server.
    Platform(Platform),
    /// A connector (server name).
    Connector(String),
}

/// One tool of a session's surface.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfferedTool {
    /// Bare name for a built-in, `mcp__server__tool` otherwise.
    pub name: String,
    pub server: Server,
    pub origin: Origin,
    pub gate: Gate,
}

impl OfferedTool {
    /// The registered-but-refusing marker, with its reason.
    pub fn refusal(&self) -> Option<Rule> {
        self.gate.refusal()
    }
}

/// The tools a session is offered: its exclusive allowlist, sorted by name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Surface {
    role: Role,
    tools: BTreeMap<String, OfferedTool>,
}

impl Surface {
    /// The role it was computed for.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Offered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// The exclusive allowlist handed to the orchestrator's runtime (the seed's `tools`).
    pub fn allowlist(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// Names served by `server`, sorted.
    pub fn served_by(&self, server: Server) -> Vec<&str> {
        self.tools
            .values()
            .filter(|t| t.server == server)
            .map(|t| t.name.as_str())
            .collect()
    }

    /// One offered tool.
    pub fn get(&self, name: &str) -> Option<&OfferedTool> {
        self.tools.get(name)
    }

    /// Whether `name` is offered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Every offered tool, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &OfferedTool> {
        self.tools.values()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The registered-but-refusing tools and why, sorted by name.
    pub fn exceptions(&self) -> Vec<(&str, Rule)> {
        self.tools
            .values()
            .filter_map(|t| t.refusal().map(|r| (t.name.as_str(), r)))
            .collect()
    }

    /// A retry's surface: this surface narrowed to the tools the previous
    /// attempt ran with. Refused rather than started with none when this
    /// surface had tools and none of them survive.
    pub fn narrow_for_retry<I: IntoIterator<Item = S>, S: AsRef<str>>(
        &self,
        previous_attempt_tools: I,
    ) -> Result<Surface, PolicyError> {
        let keep: BTreeSet<String> = previous_attempt_tools
            .into_iter()
            .map(|s| s.as_ref().to_string())
            .collect();
        let tools: BTreeMap<String, OfferedTool> = self
            .tools
            .iter()
            .filter(|(k, _)| keep.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if tools.is_empty() && !self.tools.is_empty() {
            return Err(PolicyError::NothingPermitted {
                role: self.role.label(),
            });
        }
        Ok(Surface {
            role: self.role,
            tools,
        })
    }
}

/// Why no surface could be computed for a session.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    #[error("profile refused: {0}")]
    Profile(#[from] ProfileError),
    #[error("a {role} runs from a saved profile, and none was given")]
    ProfileMissing { role: &'static str },
    #[error("a {role} takes no profile")]
    ProfileNotExpected { role: &'static str },
    #[error("a coworker with a grant runs as a specialist coworker")]
    GrantOnPlainCoworker,
    #[error(
        "refused rather than started with none: nothing the profile asks for is within the {role} ceiling"
    )]
    NothingPermitted { role: &'static str },
    #[error("the inbound email route exists only when AGENTMAIL_WEBHOOK_URL_SECRET is set")]
    InboundRouteOff,
    #[error(
        "an inbound email turn is handed only AgentMail's credentials, and they do not resolve for this brand"
    )]
    InboundWithoutAgentMail,
    #[error("the {harness:?} harness does not exist: {needs}")]
    HarnessOff {
        harness: Harness,
        needs: &'static str,
    },
    #[error("the {harness:?} harness serves only the deployment owner's brand")]
    HarnessOwnerOnly { harness: Harness },
}

/// Decides one session's tool surface: registration, ceiling and gates.
pub fn surface(
    input: &SessionInput,
    catalog: &Catalog,
    switches: &Switches,
) -> Result<Surface, PolicyError> {
    let mut b = Builder {
        input,
        catalog,
        switches,
        tools: BTreeMap::new(),
    };
    match input.role {
        Role::PersonChat => b.person_chat()?,
        Role::InboundEmailTurn => b.inbound()?,
        Role::CoworkerRun { route } => b.coworker(route, false)?,
        Role::SpecialistRun { route } => b.coworker(route, true)?,
        Role::GoalAgentStep => b.goal_agent()?,
        Role::GoalReviewer => b.reviewer()?,
        Role::ReadOnlyRoute { harness } => b.read_only_route(harness)?,
    }
    let surface = Surface {
        role: input.role,
        tools: b.tools,
    };
    let mut surface = match &input.previous_attempt {
        Some(previous) => surface.narrow_for_retry(previous)?,
        None => surface,
    };
    if let Some(ceiling) = &input.operator_ceiling {
        surface.tools.retain(|name, _| ceiling.keeps(name));
    }
    if let Some(selection) = &input.selection {
        surface.tools.retain(|name, _| selection.keeps(name));
    }
    Ok(surface)
}

struct Builder<'a> {
    input: &'a SessionInput,
    catalog: &'a Catalog,
    switches: &'a Switches,
    tools: BTreeMap<String, OfferedTool>,
}

impl Builder<'_> {
    fn add(&mut self, name: String, server: Server, origin: Origin, gate: Gate) {
        self.tools.insert(
            name.clone(),
            OfferedTool {
                name,
                server,
                origin,
                gate,
            },
        );
    }

    fn platform(&mut self, p: Platform, tool: &str, gate: Gate) {
        self.add(
            names::mcp(p.server_name(), tool),
            p.served_by(tool),
            Origin::Platform(p),
            gate,
        );
    }

    fn platform_all(&mut self, p: Platform, tools: &[&str]) {
        for t in tools {
            self.platform(p, t, Gate::Open);
        }
    }

    fn connector(&mut self, c: &ConnectorSpec, tool: &str, gate: Gate) {
        self.add(
            c.mcp(tool),
            Server::Host,
            Origin::Connector(c.name.clone()),
            gate,
        );
    }

    /// The deployment's built-ins that `keep` accepts, less the host file
    /// tools under E2B.
    fn builtins(&mut self, keep: impl Fn(&str) -> bool) {
        let e2b = self.input.environment == Environment::E2b;
        for b in &self.catalog.builtins {
            if keep(b) && !(e2b && HOST_FS_TOOLS.contains(&b.as_str())) {
                self.add(b.clone(), Server::Orchestrator, Origin::BuiltIn, Gate::Open);
            }
        }
    }

    /// Someone can approve a call right now.
    fn can_ask(&self) -> bool {
        self.input.role.can_ask_a_person()
            && self.input.approval_channel
            && self.switches.require_write_approval
    }

    fn no_profile(&self) -> Result<(), PolicyError> {
        match self.input.profile {
            Some(_) => Err(PolicyError::ProfileNotExpected {
                role: self.input.role.label(),
            }),
            None => Ok(()),
        }
    }

    fn person_chat(&mut self) -> Result<(), PolicyError> {
        self.no_profile()?;
        let brand = &self.input.brand;
        self.builtins(|_| true);
        self.platform_all(Platform::Memory, &MEMORY_NOTE_TOOLS);
        let standing = if !self.switches.require_write_approval {
            Gate::Open
        } else if self.input.approval_channel {
            Gate::AsksPerson
        } else {
            Gate::Refuses(Rule::ApprovalRequired)
        };
        for t in STANDING_INSTRUCTION_TOOLS {
            self.platform(Platform::Memory, t, standing.clone());
        }
        self.platform_all(Platform::Project, &PROJECT_TOOLS);
        if brand.goals_engine_on {
            self.platform_all(Platform::Goals, &names::GOALS_TOOLS);
        }
        self.platform_all(Platform::Transcripts, &names::TRANSCRIPT_TOOLS);
        if brand.has_skills {
            self.platform_all(Platform::Skills, &SKILL_TOOLS);
        }
        if brand.has_coworkers {
            self.platform_all(Platform::Team, &names::TEAM_TOOLS);
        }
        if self.input.environment == Environment::E2b {
            self.platform_all(Platform::Sandbox, &names::SANDBOX_TOOLS);
            if self.switches.sandbox_allow_browser && brand.browser_provider.is_some() {
                self.platform_all(Platform::Browser, &names::BROWSER_READ_TOOLS);
                if brand.browser_provider == Some(BrowserProvider::Browserbase)
                    && self.switches.browserbase_persistent_logins
                {
                    self.platform_all(Platform::Browser, &names::BROWSER_LOGIN_TOOLS);
                }
            }
            if self.can_ask() && self.switches.sandbox_egress == Egress::Allowlist {
                self.platform(
                    Platform::SandboxEgress,
                    names::SANDBOX_ALLOW_HOST,
                    Gate::AsksPerson,
                );
            }
        }
        let catalog = self.catalog;
        for c in catalog.connectors().filter(|c| brand.is_live(&c.name)) {
            self.person_connector(c);
        }
        Ok(())
    }

    /// Every tool of a connected connector, subject to the switches.
    fn person_connector(&mut self, c: &ConnectorSpec) {
        let asks = self.can_ask();
        for r in &c.reads {
            if let Some(j) = self.catalog.joint(&c.name, r)
                && !j.reads_from.iter().all(|x| self.input.brand.is_live(x))
            {
                continue;
            }
            let gate = match c.billing {
                Some(_) => Gate::Spend {
                    connector: c.name.clone(),
                    above_threshold: if asks {
                        AboveThreshold::AsksPerson
                    } else {
                        AboveThreshold::Refuses
                    },
                },
                None => Gate::Open,
            };
            self.connector(c, r, gate);
        }
        for w in &c.writes {
            let registered = match w.registers {
                Registers::WithConnector => true,
                Registers::WhenSwitch(s) => self.switches.is_on(s),
                Registers::WhenApprovalsOn => asks,
            };
            if !registered {
                continue;
            }
            let gate = match w.gate {
                WriteGate::Open => Gate::Open,
                WriteGate::Approval { needs: Some(s) } if !self.switches.is_on(s) => {
                    Gate::Refuses(Rule::SwitchedOff(s))
                }
                WriteGate::Approval { .. } if !asks => Gate::Refuses(Rule::ApprovalRequired),
                WriteGate::Approval { .. } => Gate::AsksPerson,
                WriteGate::MutationsNeedApproval { needs } => Gate::ReadsRunMutationsGated {
                    mutations: if !self.switches.is_on(needs) {
                        MutationGate::Refuses(Rule::SwitchedOff(needs))
                    } else if !asks {
                        MutationGate::Refuses(Rule::ApprovalRequired)
                    } else {
                        MutationGate::AsksPerson
                    },
                },
            };
            self.connector(c, &w.name, gate);
        }
    }

    /// Exactly the AgentMail read and draft tools, whatever the switches say.
    fn inbound(&mut self) -> Result<(), PolicyError> {
        self.no_profile()?;
        if !self.switches.agentmail_webhook_secret_set {
            return Err(PolicyError::InboundRouteOff);
        }
        let catalog = self.catalog;
        let agentmail = catalog
            .connector("agentmail")
            .filter(|c| self.input.brand.is_live(&c.name))
            .ok_or(PolicyError::InboundWithoutAgentMail)?;
        for t in INBOUND_TOOLS {
            let known = agentmail.reads.iter().any(|r| r == t)
                || agentmail
                    .writes
                    .iter()
                    .any(|w| w.name == t && w.gate == WriteGate::Open);
            if known {
                self.connector(agentmail, t, Gate::Open);
            }
        }
        Ok(())
    }

    fn coworker(&mut self, route: Route, specialist: bool) -> Result<(), PolicyError> {
        let role = self.input.role.label();
        let profile = self
            .input
            .profile
            .as_ref()
            .ok_or(PolicyError::ProfileMissing { role })?;
        profile.validate(self.catalog)?;
        if !specialist && !profile.grant.is_empty() {
            return Err(PolicyError::GrantOnPlainCoworker);
        }
        let requested: BTreeSet<&str> = profile.tools.iter().map(String::as_str).collect();
        let ceiling = coworker_ceiling(route, self.catalog);
        let within = |name: &str| ceiling.contains(name) && requested.contains(name);
        self.builtins(within);
        // Unattended: only the memory note tools register; never project_delete.
        for t in MEMORY_NOTE_TOOLS {
            if within(&names::mcp("memory", t)) {
                self.platform(Platform::Memory, t, Gate::Open);
            }
        }
        for t in PROJECT_TOOLS {
            if within(&names::mcp("project", t)) {
                self.platform(Platform::Project, t, Gate::Open);
            }
        }
        if specialist && route == Route::Standard {
            self.granted_reads(&profile.grant);
            let brand = &self.input.brand;
            let catalog = self.catalog;
            for o in catalog.opt_ins() {
                if profile.grant.names_connector(&o.beside) && brand.is_live(&o.beside) {
                    for t in &o.tools {
                        if requested.contains(names::mcp(o.server.server_name(), t).as_str()) {
                            self.platform(o.server, t, Gate::Open);
                        }
                    }
                }
            }
            if profile
                .grant
                .skills
                .iter()
                .any(|s| names::is_bundled_skill(s))
            {
                self.platform_all(Platform::Skills, &SKILL_TOOLS);
            }
            if profile.grant.names_skill(SEO_METHOD_SKILL) {
                self.platform(Platform::Seo, SEO_SAVE_BRIEF, Gate::Open);
                if profile.limits.max_delegation_depth > 0 {
                    self.platform(Platform::Seo, SEO_HAND_OFF_BRIEF, Gate::Open);
                }
            }
        }
        let from_request = requested.iter().any(|t| self.tools.contains_key(*t));
        if self.tools.is_empty() || (!requested.is_empty() && !from_request) {
            return Err(PolicyError::NothingPermitted { role });
        }
        Ok(())
    }

    /// The read-table tools of each granted connector whose credentials
    /// resolve; a joint tool only when every connector it reads is granted
    /// and live; a billing connector's tools charged to its allowance.
    fn granted_reads(&mut self, grant: &Grant) {
        let brand = &self.input.brand;
        let catalog = self.catalog;
        for name in &grant.connectors {
            let Some(c) = catalog.connector(name).filter(|c| brand.is_live(&c.name)) else {
                continue;
            };
            for r in c.reads.iter().filter(|r| c.grantable.contains(*r)) {
                if let Some(j) = catalog.joint(&c.name, r)
                    && !j
                        .reads_from
                        .iter()
                        .all(|x| grant.names_connector(x) && brand.is_live(x))
                {
                    continue;
                }
                let gate = match (c.billing, grant.allowances.get(&c.name)) {
                    (None, _) => Gate::Open,
                    (Some(_), Some(a)) => Gate::Allowance {
                        connector: c.name.clone(),
                        allowance: *a,
                    },
                    // Not reachable after validation; a billing tool without
                    // an allowance is never offered.
                    (Some(_), None) => continue,
                };
                self.connector(c, r, gate);
            }
        }
    }

    fn goal_agent(&mut self) -> Result<(), PolicyError> {
        let fixed = presets::goal_agent(Grant::default());
        let profile = self.input.profile.as_ref().unwrap_or(&fixed);
        profile.validate_goal_agent(self.catalog)?;
        self.builtins(|b| GOAL_AGENT_TOOLS.contains(&b));
        for t in ["project_list", "project_read", "project_write"] {
            self.platform(Platform::Project, t, Gate::Open);
        }
        self.granted_reads(&profile.grant);
        Ok(())
    }

    fn reviewer(&mut self) -> Result<(), PolicyError> {
        let fixed = presets::goal_reviewer();
        self.input
            .profile
            .as_ref()
            .unwrap_or(&fixed)
            .validate_reviewer()?;
        Ok(())
    }

    fn read_only_route(&mut self, harness: Harness) -> Result<(), PolicyError> {
        self.no_profile()?;
        let brand = &self.input.brand;
        match harness {
            Harness::Default => {}
            Harness::Loop if !self.switches.harness_loop_enabled => {
                return Err(PolicyError::HarnessOff {
                    harness,
                    needs: "HARNESS_LOOP_ENABLED 1 or true",
                });
            }
            Harness::Hermes if !self.switches.hermes_available() => {
                return Err(PolicyError::HarnessOff {
                    harness,
                    needs: "HARNESS_HERMES_ENABLED and HARNESS_MCP_BRIDGE_ENABLED 1 or true",
                });
            }
            Harness::Loop | Harness::Hermes if !brand.is_deployment_owner => {
                return Err(PolicyError::HarnessOwnerOnly { harness });
            }
            Harness::Loop | Harness::Hermes => {}
        }
        if harness == Harness::Default {
            self.builtins(|b| READ_ONLY_BUILTINS.contains(&b));
        }
        self.platform_all(Platform::Transcripts, &names::TRANSCRIPT_TOOLS);
        if brand.has_skills {
            self.platform_all(Platform::Skills, &SKILL_TOOLS);
        }
        if harness == Harness::Default && brand.has_coworkers {
            self.platform_all(Platform::Team, &names::TEAM_TOOLS);
        }
        Ok(())
    }
}
