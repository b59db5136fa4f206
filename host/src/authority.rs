//! `scout-host audit` and `GET /v1/audit`: what a session of a role could
//! actually cause, and the dead authority the store holds (seed 003: "least
//! privilege was measured at executable consequence, not the number of
//! tools shown to the model").
//!
//! The surface is the one the host would give: [`policy::surface`] on the
//! same catalogue `serve` builds from the loaded components (the seed's
//! connectors as the catalogue says, any other conservatively, narrowed by
//! the configuration), with every loaded connector connected unless a
//! brand's connections in the store say otherwise. For each tool given
//! that a loaded component serves, the audit lists its effect, its gate
//! (and the allowance behind a billed call), every request it may send
//! (method, path template, the destination and its origin, whether the
//! connector's credential goes there, read-only POSTs and GraphQL bodies
//! marked), the credential it is sent with (the configured scheme, the
//! token source, and with a brand where that brand's credential comes
//! from), the folders it may open and whether it may write them (the rule
//! of [`crate::session::holdings`]), the peers a joint tool reads, and,
//! where review is required, whether an operator reviewed it. Tools the
//! orchestrator serves (built-ins, platform tools without a component
//! here) are listed by name and gate: their consequences are not the
//! host's to describe.
//!
//! Dead authority is what the store holds that no session uses or can use
//! ([`Finding`]): connections no session used (nor anyone stored again)
//! for `stale_days`, saved grants naming a connector with no live
//! credential for their brand, reviews of tools no loaded component offers
//! any more, and approvals still pending whose session has ended.

use crate::config::ServeConfig;
use crate::credentials::{Credential, Resolver, Source, connection_for_server, token_source_note};
use crate::policy::operator_roles::{OperatorRole, OperatorRoles};
use crate::policy::{
    self, AboveThreshold, Allowance, BrandFacts, Catalog, Gate, MutationGate, Platform, Profile,
    Role, Route, SessionInput, Switches,
};
use crate::review::ReviewStatus;
use crate::runtime::{LoadedComponent, Runtime};
use crate::store::{
    Approval, ProfileKind, SavedProfile, Store, StoreError, StoredConnection, StoredReview,
    TraceFilter,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Milliseconds in a day.
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// The default `stale_days`.
pub const DEFAULT_STALE_DAYS: u64 = 30;

/// The longest `stale_days` accepted (ten years).
pub const MAX_STALE_DAYS: u64 = 3650;

/// Why an audit could not be made. Each says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    #[error("unknown role `{0}`: give one of {1}")]
    UnknownRole(String, String),
    #[error("cannot read the profile {path}: {source}")]
    ProfileUnreadable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is not a profile ({source}): give the body `PUT /v1/brands/{{brand}}/profiles/{{name}}` takes, or the profile itself. A specialist (a coworker with a grant):\n{PROFILE_EXAMPLE}"
    )]
    ProfileNotJson {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{0}")]
    Profile(String),
    #[error("cannot load the component {path}: {source}")]
    Component {
        path: String,
        #[source]
        source: crate::LoadError,
    },
    #[error("connector `{name}`: {message}")]
    Connector { name: String, message: String },
    #[error("the session's surface cannot be decided: {0}")]
    Policy(#[from] policy::PolicyError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigFileError),
    #[error(transparent)]
    Open(#[from] crate::store::OpenError),
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Usage(String),
}

/// The connectors and the catalogue they are served under, built by the
/// same code as `serve`'s ([`crate::deployment`]).
pub use crate::deployment::Deployment;

impl From<crate::deployment::Refused> for AuditError {
    fn from(refused: crate::deployment::Refused) -> AuditError {
        AuditError::Connector {
            name: refused.name,
            message: refused.message,
        }
    }
}

impl Deployment {
    /// The components named on the command line, admitted as `serve` admits
    /// them (no configuration narrows them).
    pub fn from_files(runtime: &Runtime, paths: &[PathBuf]) -> Result<Deployment, AuditError> {
        let mut loaded = Vec::new();
        for path in paths {
            let component = runtime
                .load_file(path)
                .map_err(|source| AuditError::Component {
                    path: path.display().to_string(),
                    source,
                })?;
            loaded.push(component);
        }
        let mut d = Deployment::empty();
        for component in loaded {
            let name = component.name().to_string();
            if d.components.contains_key(&name) {
                return Err(AuditError::Connector {
                    name,
                    message: "given twice".into(),
                });
            }
            d.admit(component, None, true)?;
        }
        Ok(d)
    }
}

/// The session the audit is about.
pub struct Subject {
    /// As the caller named it (`person-chat`).
    pub role_name: String,
    pub role: Role,
    /// The profile it runs from, and its name where it was saved.
    pub profile: Option<Profile>,
    pub profile_name: Option<String>,
    /// The brand whose store state decides the surface (its connections, its coworkers).
    pub brand: Option<String>,
    /// The operator's role (`[roles.NAME]`) it runs under, `role` being its base.
    pub operator: Option<OperatorRole>,
}

impl Subject {
    /// A subject for `role`, refusing an unknown name.
    pub fn new(role_name: &str) -> Result<Subject, AuditError> {
        Subject::among(role_name, &OperatorRoles::none())
    }

    /// A subject for `role`, one of the seed's or of the operator's own
    /// `roles` (audited as its base narrowed by it), refusing an unknown name.
    pub fn among(role_name: &str, roles: &OperatorRoles) -> Result<Subject, AuditError> {
        let operator = roles.get(role_name).cloned();
        let role = match &operator {
            Some(operator) => operator.base,
            None => Role::from_name(role_name)
                .ok_or_else(|| AuditError::UnknownRole(role_name.into(), roles.role_names()))?,
        };
        Ok(Subject {
            role_name: role_name.to_string(),
            role,
            profile: None,
            profile_name: None,
            brand: None,
            operator,
        })
    }

    /// With the profile in `path`: the body `PUT /v1/brands/{b}/profiles/{name}`
    /// takes (`{"kind", "profile"}`), or the profile itself; checked by its
    /// kind's save rules and against the role.
    pub fn with_profile_file(
        mut self,
        path: &Path,
        catalog: &Catalog,
    ) -> Result<Subject, AuditError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| AuditError::ProfileUnreadable {
                path: path.display().to_string(),
                source,
            })?;
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Saved {
            kind: ProfileKind,
            profile: Profile,
        }
        let (kind, profile) = match serde_json::from_str::<Saved>(&text) {
            Ok(saved) => (Some(saved.kind), saved.profile),
            Err(first) => match serde_json::from_str::<Profile>(&text) {
                Ok(profile) => (None, profile),
                Err(_) => {
                    return Err(AuditError::ProfileNotJson {
                        path: path.display().to_string(),
                        source: first,
                    });
                }
            },
        };
        self.set_profile(profile, kind, catalog)?;
        Ok(self)
    }

    /// With a profile already checked (a saved one, or a preset).
    pub fn with_profile(mut self, name: Option<String>, profile: Option<Profile>) -> Subject {
        self.profile_name = name;
        self.profile = profile;
        self
    }

    fn set_profile(
        &mut self,
        profile: Profile,
        kind: Option<ProfileKind>,
        catalog: &Catalog,
    ) -> Result<(), AuditError> {
        let wanted = match self.role {
            Role::CoworkerRun { .. } | Role::SpecialistRun { .. } => ProfileKind::Coworker,
            Role::GoalAgentStep => ProfileKind::GoalAgent,
            Role::GoalReviewer => ProfileKind::Reviewer,
            _ => {
                return Err(AuditError::Profile(format!(
                    "a {} runs without a profile: leave out the profile",
                    self.role.label()
                )));
            }
        };
        if let Some(kind) = kind
            && kind != wanted
        {
            return Err(AuditError::Profile(format!(
                "the profile is of kind `{}`, and a {} runs from one of kind `{}`",
                kind.as_str(),
                self.role.label(),
                wanted.as_str()
            )));
        }
        wanted
            .validate(&profile, catalog)
            .map_err(|e| AuditError::Profile(format!("the profile is refused: {e}")))?;
        if wanted == ProfileKind::Coworker {
            let runs_as = Role::for_profile(&profile, Route::Standard);
            if runs_as != self.role {
                return Err(AuditError::Profile(format!(
                    "this profile runs as a {} (role `{}`): {}",
                    runs_as.label(),
                    if profile.grant.is_empty() {
                        "coworker"
                    } else {
                        "specialist"
                    },
                    if profile.grant.is_empty() {
                        "it grants nothing"
                    } else {
                        "it has a grant"
                    }
                )));
            }
        }
        self.profile_name = Some(profile.name.clone());
        self.profile = Some(profile);
        Ok(())
    }

    /// The profile the session would run from: the one given, or the goal
    /// agent's and reviewer's fixed ones; a coworker needs one.
    fn profile_for_surface(&self) -> Result<Option<Profile>, AuditError> {
        if let Some(p) = &self.profile {
            return Ok(Some(p.clone()));
        }
        match self.role {
            Role::GoalAgentStep => Ok(Some(policy::presets::goal_agent(Default::default()))),
            Role::GoalReviewer => Ok(Some(policy::presets::goal_reviewer())),
            Role::CoworkerRun { .. } | Role::SpecialistRun { .. } => {
                Err(AuditError::Profile(format!(
                    "a {} runs from a profile: give one (`--profile FILE`, or `profile` and `brand` on the API)",
                    self.role.label()
                )))
            }
            _ => Ok(None),
        }
    }
}

/// Whether a session is still served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionState {
    Live,
    /// Ended, and how that is known.
    Ended(String),
    /// Not known to have ended (it may be served by a host this reader cannot see).
    Unknown,
}

/// What the store tells the audit, and how it is read.
pub struct StoreView<'a> {
    pub store: &'a dyn Store,
    /// Resolves a brand's credentials as sessions get them.
    pub resolver: &'a Resolver<'a>,
    /// Whether a session is still served.
    pub sessions: &'a dyn Fn(&str) -> Result<SessionState, StoreError>,
    /// Connections unused for this many days are stale.
    pub stale_days: u64,
    /// Hold tools no operator reviewed (`require_review`).
    pub require_review: bool,
    /// Said in the report of how sessions' ends were read.
    pub sessions_note: Option<String>,
}

/// The audit, as `--json` and `GET /v1/audit` give it (stable).
#[derive(Debug, Clone, Serialize)]
pub struct Audit {
    /// The role as named (`person-chat`).
    pub role: String,
    /// Its label (`person chat`).
    pub role_label: &'static str,
    pub brand: Option<String>,
    pub profile: Option<String>,
    /// What the surface assumes.
    pub assumes: String,
    /// Every tool given that a loaded component serves, by name.
    pub tools: Vec<ToolAuthority>,
    /// The other tools given (built-ins, orchestrator and host platform
    /// tools with no component here), by name.
    pub other_tools: Vec<OtherTool>,
    /// The dead authority the store holds; `null` without a store.
    pub dead_authority: Option<DeadAuthority>,
    /// Where the operator switches the audit decided with came from: a
    /// running host's (`GET /v1/audit`, `audit --host`) or the auditing
    /// process's own environment, which may differ from what `serve`
    /// started with.
    pub switches_from: &'static str,
    /// Every switch's value as the audit assumed it.
    pub switches: Vec<AssumedSwitch>,
    /// The operator's role audited (`[roles.NAME]`: base, ceiling, whether
    /// a person can be asked, limits); absent for a seed role.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator_role: Option<OperatorRole>,
}

/// One operator switch as an audit assumed it.
#[derive(Debug, Clone, Serialize)]
pub struct AssumedSwitch {
    /// The environment variable (`GITHUB_ALLOW_WRITES`).
    pub var: &'static str,
    /// Its effective value, as `serve`'s banner shows it (a secret only
    /// says whether it is set).
    pub value: String,
    /// Set in the environment, rather than its default.
    pub set: bool,
}

/// What a profile file looks like, shown where one is asked for: a
/// specialist (a coworker whose grant names connectors and allowances).
pub const PROFILE_EXAMPLE: &str = r#"{"kind": "coworker",
 "profile": {"name": "seo",
  "tools": ["Read", "Grep", "mcp__dataforseo__seo_page_opportunities"],
  "grant": {"connectors": ["dataforseo", "searchconsole", "shopify"],
            "allowances": {"dataforseo": {"perRunUsd": 1.0, "perDayUsd": 3.0}}},
  "limits": {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 1}}}"#;

/// `Audit::switches_from` for an audit a running host made.
pub const SWITCHES_OF_THE_HOST: &str = "the host's, read when it started";
/// `Audit::switches_from` for an audit from the command line.
pub const SWITCHES_OF_THIS_PROCESS: &str = "this process's environment, which may not be what `serve` started with (`scout-host audit --host URL` audits what a running host serves)";

/// One tool a loaded component serves.
#[derive(Debug, Clone, Serialize)]
pub struct ToolAuthority {
    /// As offered: `mcp__github__github_create_branch`.
    pub name: String,
    /// The component's wire name: `github_create_branch`.
    pub tool: String,
    /// The component serving it.
    pub connector: String,
    /// `read` or `write`.
    pub effect: &'static str,
    pub gate: GateView,
    /// What a billed call spends against; `null` where the component does not meter.
    pub allowance: Option<AllowanceView>,
    /// `reviewed`, `new` or `changed` where review is required and a store
    /// is read; `null` otherwise.
    pub review: Option<ReviewStatus>,
    /// Not offered until an operator reviews it (review required, not reviewed as it is now).
    pub held: bool,
    /// Every request it may send.
    pub routes: Vec<RouteView>,
    /// The credential its own origin is reached with; `null` for a
    /// component with no origin of its own (it reads peers only).
    pub credential: Option<CredentialView>,
    /// The folders it may open; `null` for a component that imports
    /// `folder` when no configuration was read (the folders are the
    /// configuration's).
    pub folders: Option<Vec<FolderView>>,
    /// The connectors a joint tool reads, each with its credential.
    pub reads_from: Vec<PeerView>,
}

/// A tool given whose consequences the host does not describe.
#[derive(Debug, Clone, Serialize)]
pub struct OtherTool {
    pub name: String,
    /// `orchestrator` or `host`.
    pub server: &'static str,
    pub gate: GateView,
}

/// A gate, as a reviewer reads it.
#[derive(Debug, Clone, Serialize)]
pub struct GateView {
    /// `open`, `asks_person`, `spend`, `allowance`, `reads_run_mutations_gated` or `refuses`.
    pub kind: &'static str,
    pub text: String,
    /// The refusing rule (`switch:GITHUB_ALLOW_WRITES`), where it refuses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// What a billed call spends against.
#[derive(Debug, Clone, Serialize)]
pub struct AllowanceView {
    /// `grant` (the profile's), `person_allowance` (the configuration's),
    /// `none` (no meter: every reservation is refused and nothing billed is
    /// sent) or `not_configured` (no configuration was read).
    pub source: &'static str,
    /// `credits` or `usd`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_run: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_day: Option<f64>,
}

/// One request a tool may send.
#[derive(Debug, Clone, Serialize)]
pub struct RouteView {
    pub method: &'static str,
    /// The path template (`/repos/{owner}/{repo}/git/refs`).
    pub path: String,
    /// The destination the route names, as declared (`null`: the connector's own origin).
    pub destination: Option<String>,
    /// The connector whose origin and credential it reaches (itself, or the peer a joint tool reads).
    pub via: String,
    /// The origin's URL, when the configuration gives it.
    pub origin: Option<String>,
    /// Whether the credential is sent there (`null` when not known).
    pub sends_credential: Option<bool>,
    /// A read tool's POST declared as changing nothing.
    pub read_only: bool,
    /// `queries_only` or `gated` for a GraphQL body the host parses.
    pub graphql: Option<&'static str>,
    /// The root fields its one GraphQL operation may select; empty for a
    /// GraphQL route that names none (any root field: the tool's argument
    /// is the whole document).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub graphql_fields: Vec<String>,
}

/// The credential a connector's requests carry.
#[derive(Debug, Clone, Serialize)]
pub struct CredentialView {
    /// The connection it is stored under (`github`, `google`).
    pub connection: String,
    /// The configured scheme: `bearer`, `basic:USER`, `header:NAME`,
    /// `query:PARAM`, `none` (a public API); `null` without a configuration.
    pub scheme: Option<String>,
    /// The token source the deployment configures for it.
    pub token_source: &'static str,
    /// The deployment owner's own token, from this variable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_env: Option<String>,
    /// Headers the host injects from its environment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deployment_headers: Vec<DeploymentHeader>,
    /// Where the brand's credential comes from now, with a brand; `null` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ResolvedView>,
}

/// A header whose value is the deployment's secret, never a brand's.
#[derive(Debug, Clone, Serialize)]
pub struct DeploymentHeader {
    pub header: String,
    /// The variable of the host's environment holding its value.
    pub env: String,
}

/// A brand's credential as it resolves (never the secret).
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedView {
    /// `own`, `shared`, `host_environment` or `none_needed`.
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_brand: Option<String>,
    /// `secret`, `oauth`, `client_credentials` or `broker`.
    pub form: String,
    /// The scopes it carries (Google).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
}

/// A folder a tool may open.
#[derive(Debug, Clone, Serialize)]
pub struct FolderView {
    /// The name the guest opens.
    pub name: String,
    /// Its root (`{brand}` replaced when a brand is given).
    pub root: String,
    /// The session holds it (its role holds the project folder).
    pub held: bool,
    /// The session may write it.
    pub writable: bool,
}

/// A connector a joint tool reads.
#[derive(Debug, Clone, Serialize)]
pub struct PeerView {
    pub connector: String,
    /// Served to this session, so the tool's requests to it can be sent.
    pub served: bool,
    pub credential: CredentialView,
}

/// The dead authority the store holds.
#[derive(Debug, Clone, Serialize)]
pub struct DeadAuthority {
    pub stale_days: u64,
    /// When the store was read (milliseconds since the Unix epoch).
    pub checked_at_ms: i64,
    pub findings: Vec<Finding>,
    /// What could not be told, and why.
    pub notes: Vec<String>,
}

/// One piece of dead authority.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// A stored, enabled connection no session of its brand (or of a brand
    /// it is shared with) has used, and no one stored again, for `stale_days`.
    StaleConnection {
        brand: String,
        connection: String,
        shared_with: Vec<String>,
        /// The last `executed` call that used it, if any.
        last_used_at_ms: Option<i64>,
        /// When it was last stored.
        stored_at_ms: i64,
        idle_days: i64,
    },
    /// A saved profile whose grant names a connector no credential of its
    /// brand can serve.
    GrantWithoutCredential {
        brand: String,
        profile: String,
        connector: String,
        why: String,
    },
    /// An operator's review of a tool no loaded component offers.
    ReviewWithoutTool {
        connector: String,
        tool: String,
        approved_by: String,
        approved_at_ms: i64,
        why: String,
    },
    /// An approval still pending whose session has ended.
    PendingApprovalOfEndedSession {
        approval: i64,
        session: String,
        tool: String,
        requested_at_ms: i64,
        why: String,
    },
}

impl Finding {
    /// The finding's kind, as in its JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Finding::StaleConnection { .. } => "stale_connection",
            Finding::GrantWithoutCredential { .. } => "grant_without_credential",
            Finding::ReviewWithoutTool { .. } => "review_without_tool",
            Finding::PendingApprovalOfEndedSession { .. } => "pending_approval_of_ended_session",
        }
    }
}

/// `mcp__server__tool` as `(server, tool)`.
fn split_mcp(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("mcp__")?.split_once("__")
}

fn imports(component: &LoadedComponent, interface: &str) -> bool {
    component.imports_interface(interface)
}

/// Audits `subject`'s session in `deployment`, with `config` where one
/// was read and `store` where the store is read.
pub fn audit(
    deployment: &Deployment,
    config: Option<&ServeConfig>,
    switches: &Switches,
    subject: &Subject,
    store: Option<&StoreView<'_>>,
) -> Result<Audit, AuditError> {
    let catalog = &deployment.catalog;
    let profile = subject.profile_for_surface()?;
    let served = deployment.served();

    // The brand's facts: from the store where a brand is named, else the
    // widest brand with every served connector connected.
    let (facts, credentials, assumes) = match (&subject.brand, store) {
        (Some(brand), Some(view)) => {
            let grant = profile.as_ref().map(|p| &p.grant);
            let set = view
                .resolver
                .credential_set_for(subject.role, grant, brand)?;
            let connected: BTreeSet<String> = set
                .connected()
                .into_iter()
                .filter(|c| served.contains(c))
                .collect();
            let stated = config.map(|c| c.brand(brand)).unwrap_or_default();
            let has_coworkers = crate::store::block(view.store.list_profiles(brand))?
                .iter()
                .any(|p| p.kind == ProfileKind::Coworker);
            let credentials: BTreeMap<String, Credential> = connected
                .iter()
                .filter_map(|c| set.get(c).map(|cred| (c.clone(), cred.clone())))
                .collect();
            (
                BrandFacts {
                    connected,
                    has_skills: !stated.skills.is_empty(),
                    has_coworkers,
                    goals_engine_on: stated.goals_engine,
                    browser_provider: None,
                    is_deployment_owner: config.and_then(|c| c.deployment_owner_brand.as_deref())
                        == Some(brand.as_str()),
                },
                credentials,
                format!(
                    "brand `{brand}` as the store holds it: its connections as they resolve now, its coworkers, and the configuration's skills and goals engine"
                ),
            )
        }
        _ => {
            let mut facts = BrandFacts::with_connectors(served.iter().cloned());
            facts.has_skills = true;
            facts.has_coworkers = true;
            facts.goals_engine_on = true;
            (
                facts,
                BTreeMap::new(),
                "every loaded connector connected, skills, coworkers and the goals engine present (no brand's store state read)".to_string(),
            )
        }
    };
    let mut input = SessionInput::new(subject.role)
        .brand(facts.clone())
        .approval_channel(subject.role.can_ask_a_person());
    if let Some(p) = &profile {
        input = input.profile(p.clone());
    }
    if let Some(operator) = &subject.operator {
        input = operator.narrow(input);
    }
    let surface = policy::surface(&input, catalog, switches)?;

    // Held by review: not offered until an operator approves the tool as it is now.
    let mut reviews: BTreeMap<String, ReviewStatus> = BTreeMap::new();
    if let Some(view) = store.filter(|v| v.require_review) {
        for offered in surface.iter() {
            if let Some((server, local)) = split_mcp(&offered.name)
                && let Some(component) = deployment.components.get(server)
                && let Some(tool) = component.tool(local)
            {
                let status =
                    crate::store::block(crate::review::status_of(view.store, component, tool))?;
                reviews.insert(offered.name.clone(), status.status);
            }
        }
    }
    let allowlist: BTreeSet<&str> = surface
        .names()
        .into_iter()
        .filter(|n| reviews.get(*n).is_none_or(|s| *s == ReviewStatus::Reviewed))
        .collect();
    let read_folders = allowlist.contains("mcp__project__project_read");
    let write_folders = read_folders && allowlist.contains("mcp__project__project_write");

    let describe = |server: &str| {
        credential_view(
            server,
            config,
            subject.brand.as_ref().and(credentials.get(server)),
        )
    };
    let mut tools = Vec::new();
    let mut other_tools = Vec::new();
    for offered in surface.iter() {
        let found = split_mcp(&offered.name).and_then(|(server, local)| {
            let component = deployment.components.get(server)?;
            let tool = component.tool(local)?;
            Some((server, component, tool))
        });
        let Some((server, component, tool)) = found else {
            other_tools.push(OtherTool {
                name: offered.name.clone(),
                server: match offered.server {
                    policy::Server::Host => "host",
                    policy::Server::Orchestrator => "orchestrator",
                },
                gate: gate_view(&offered.gate, None),
            });
            continue;
        };
        let manifest = &component.info().manifest;
        let doc = manifest
            .tools
            .iter()
            .find(|d| manifest.wire_name(&d.function) == tool.name);
        let peers: Vec<String> = doc.map(|d| d.reads_from.clone()).unwrap_or_default();
        let settings = config.and_then(|c| c.connectors.get(server));
        let own_origin = settings.and_then(|s| s.origin.clone());
        let routes: Vec<RouteView> = tool
            .routes
            .iter()
            .map(|r| {
                let (via, origin, sends) = match r.destination.as_deref() {
                    None => (
                        server.to_string(),
                        own_origin.clone(),
                        settings.map(|s| !s.is_public()),
                    ),
                    Some(d) if peers.iter().any(|p| p == d) => {
                        let peer = config.and_then(|c| c.connectors.get(d));
                        (
                            d.to_string(),
                            peer.and_then(|p| p.origin.clone()),
                            peer.map(|p| !p.is_public()),
                        )
                    }
                    Some(d) => {
                        let named = settings.and_then(|s| s.origins.get(d));
                        (
                            server.to_string(),
                            named.map(|o| o.origin().to_string()),
                            named
                                .and_then(|o| o.sends_credential().ok())
                                .zip(settings)
                                .map(|(sends, s)| sends && !s.is_public()),
                        )
                    }
                };
                RouteView {
                    method: r.method.as_str(),
                    path: r.path.clone(),
                    destination: r.destination.clone(),
                    via,
                    origin,
                    sends_credential: sends,
                    read_only: r.read_only,
                    graphql: r.graphql.map(|g| match g {
                        scout_manifest::GraphqlBody::QueriesOnly => "queries_only",
                        scout_manifest::GraphqlBody::Gated => "gated",
                    }),
                    graphql_fields: r.graphql_fields.clone(),
                }
            })
            .collect();
        // A remote server's tool is one `tools/call` to the server's URL.
        let mut routes = routes;
        if component.is_remote() {
            let path = settings
                .and_then(|s| s.mcp.as_deref())
                .and_then(|u| url::Url::parse(u).ok())
                .map_or_else(|| "/".to_string(), |u| u.path().to_string());
            routes.push(RouteView {
                method: "POST",
                path,
                destination: None,
                via: server.to_string(),
                origin: own_origin.clone(),
                sends_credential: settings.map(|s| !s.is_public()),
                read_only: false,
                graphql: None,
                graphql_fields: Vec::new(),
            });
        }
        let own_routes = component.is_remote()
            || tool.routes.iter().any(|r| {
                r.destination
                    .as_deref()
                    .is_none_or(|d| !peers.iter().any(|p| p == d))
            });
        let credential =
            (imports(component, "http") && own_routes && !deployment.platform.contains(server))
                .then(|| describe(server));
        let tools_write = matches!(
            Platform::from_server_name(server),
            Some(Platform::Writer | Platform::Seo)
        );
        let folders = match settings {
            None if imports(component, "folder") => None,
            Some(s) if imports(component, "folder") => Some(
                s.folders
                    .iter()
                    .map(|(name, f)| FolderView {
                        name: name.clone(),
                        root: subject
                            .brand
                            .as_deref()
                            .and_then(|b| f.root_for(b).ok())
                            .map_or_else(|| f.root.clone(), |p| p.display().to_string()),
                        held: read_folders,
                        writable: read_folders && f.writable && (write_folders || tools_write),
                    })
                    .collect(),
            ),
            _ => Some(Vec::new()),
        };
        let allowance = imports(component, "meter")
            .then(|| allowance_view(subject.role, profile.as_ref(), server, config, settings));
        let reads_from = peers
            .iter()
            .map(|p| PeerView {
                connector: p.clone(),
                served: facts.connected.contains(p),
                credential: describe(p),
            })
            .collect();
        let review = reviews.get(&offered.name).copied();
        tools.push(ToolAuthority {
            name: offered.name.clone(),
            tool: tool.name.clone(),
            connector: server.to_string(),
            effect: tool.effect.as_str(),
            gate: gate_view(
                &offered.gate,
                spend_threshold_text(config, server).as_deref(),
            ),
            allowance,
            held: review.is_some_and(|s| s != ReviewStatus::Reviewed),
            review,
            routes,
            credential,
            folders,
            reads_from,
        });
    }
    let dead_authority = match store {
        Some(view) => Some(dead_authority(deployment, config, view)?),
        None => None,
    };
    Ok(Audit {
        role: subject.role_name.clone(),
        role_label: subject.role.label(),
        brand: subject.brand.clone(),
        profile: subject.profile_name.clone(),
        assumes,
        tools,
        other_tools,
        dead_authority,
        switches_from: SWITCHES_OF_THIS_PROCESS,
        switches: crate::policy::Switch::ALL
            .iter()
            .map(|&s| AssumedSwitch {
                var: s.var(),
                value: switches.describe(s),
                set: switches.present.contains(&s),
            })
            .collect(),
        operator_role: subject.operator.clone(),
    })
}

fn credential_view(
    server: &str,
    config: Option<&ServeConfig>,
    resolved: Option<&Credential>,
) -> CredentialView {
    let settings = config.and_then(|c| c.connectors.get(server));
    CredentialView {
        connection: connection_for_server(server).to_string(),
        scheme: settings.map(|s| s.credential.clone()),
        token_source: if settings.is_some_and(|s| s.is_public()) {
            "none: a public API (`credential = \"none\"`), nothing is injected"
        } else if settings.is_some_and(|s| s.is_remote()) {
            "a stored secret (`secret`), or `oauth` from a person's Connect (POST /v1/brands/BRAND/connections/CONNECTOR/authorize: the server's OAuth discovery, registration and authorization), kept alive by the host"
        } else {
            token_source_note(server)
        },
        host_env: settings.and_then(|s| s.host_env.clone()),
        deployment_headers: settings
            .map(|s| {
                s.deployment_headers
                    .iter()
                    .map(|(h, v)| DeploymentHeader {
                        header: h.clone(),
                        env: v.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        resolved: resolved.map(|c| ResolvedView {
            source: match c.source() {
                Source::Own => "own",
                Source::SharedByOwner { .. } => "shared",
                Source::HostEnvironment => "host_environment",
                Source::NoneNeeded => "none_needed",
            },
            owner_brand: match c.source() {
                Source::SharedByOwner { owner_brand } => Some(owner_brand.clone()),
                _ => None,
            },
            form: match (c.token_source(), c.is_none_needed()) {
                (_, true) => "none".to_string(),
                (Some(t), _) => t.kind().to_string(),
                (None, _) => "secret".to_string(),
            },
            scopes: c.scopes().map(|s| s.iter().cloned().collect()),
        }),
    }
}

fn allowance_view(
    role: Role,
    profile: Option<&Profile>,
    connector: &str,
    config: Option<&ServeConfig>,
    settings: Option<&crate::config::ConnectorConfig>,
) -> AllowanceView {
    let figures = |source: &'static str, a: Allowance| {
        let (unit, per_run, per_day) = match a {
            Allowance::Credits {
                per_run_credits,
                per_day_credits,
            } => ("credits", per_run_credits as f64, per_day_credits as f64),
            Allowance::Usd {
                per_run_usd,
                per_day_usd,
            } => ("usd", per_run_usd, per_day_usd),
        };
        AllowanceView {
            source,
            unit: Some(unit),
            per_run: Some(per_run),
            per_day: Some(per_day),
        }
    };
    let none = |source| AllowanceView {
        source,
        unit: None,
        per_run: None,
        per_day: None,
    };
    match role {
        Role::SpecialistRun { .. } | Role::GoalAgentStep => profile
            .filter(|p| p.grant.connectors.iter().any(|c| c == connector))
            .and_then(|p| p.grant.allowances.get(connector).copied())
            .map_or_else(|| none("none"), |a| figures("grant", a)),
        Role::PersonChat if config.is_none() => none("not_configured"),
        Role::PersonChat => settings
            .and_then(|s| s.person_allowance.as_ref())
            .and_then(|a| a.allowance().ok())
            .map_or_else(|| none("none"), |a| figures("person_allowance", a)),
        _ => none("none"),
    }
}

fn figure(unit: &str, value: f64) -> String {
    if unit == "usd" {
        format!("${value}")
    } else {
        format!("{value} {unit}")
    }
}

fn allowance_text(a: &Allowance) -> String {
    match *a {
        Allowance::Credits {
            per_run_credits,
            per_day_credits,
        } => format!("{per_run_credits} credits per run, {per_day_credits} per day"),
        Allowance::Usd {
            per_run_usd,
            per_day_usd,
        } => format!("${per_run_usd} per run, ${per_day_usd} per day"),
    }
}

/// Person chat's per-call spend threshold of `connector` in `config`, in
/// the unit the operator wrote it (`5 credits`, `$0.005`).
fn spend_threshold_text(config: Option<&ServeConfig>, connector: &str) -> Option<String> {
    let allowance = config?
        .connectors
        .get(connector)?
        .person_allowance
        .as_ref()?;
    match (
        allowance.per_call_threshold_credits,
        allowance.per_call_threshold_usd,
    ) {
        (Some(credits), _) => Some(format!("{credits} credits")),
        (None, Some(usd)) => Some(format!("${usd}")),
        (None, None) => None,
    }
}

/// A gate in a reviewer's words; `threshold` is person chat's per-call
/// spend threshold of the tool's connector, as the operator wrote it.
pub fn gate_view(gate: &Gate, threshold: Option<&str>) -> GateView {
    let (kind, text, rule) = match gate {
        Gate::Open => ("open", "open: runs without asking".to_string(), None),
        Gate::AsksPerson => (
            "asks_person",
            "asks a person before each call; denied if no one answers in time".to_string(),
            None,
        ),
        Gate::Spend {
            above_threshold: AboveThreshold::AsksPerson,
            ..
        } => (
            "spend",
            match threshold {
                Some(t) => format!(
                    "every call bills; runs while the call's reservations together stay at or below the per-call threshold of {t}, and asks a person before going above it"
                ),
                None => "every call bills; asks a person before each call (no per-call threshold is set for this connector)".to_string(),
            },
            None,
        ),
        Gate::Spend {
            above_threshold: AboveThreshold::Refuses,
            ..
        } => (
            "spend",
            match threshold {
                Some(t) => format!(
                    "every call bills; runs while the call's reservations together stay at or below the per-call threshold of {t}; above it a person's approval is needed, and no one can give one here, so it is refused"
                ),
                None => "every call bills and needs a person's approval, and no one can give one here: every call is refused".to_string(),
            },
            None,
        ),
        Gate::Allowance { allowance, .. } => (
            "allowance",
            format!(
                "charged against the grant's allowance ({}); a call beyond it is refused before anything is sent",
                allowance_text(allowance)
            ),
            None,
        ),
        Gate::ReadsRunMutationsGated { mutations } => match mutations {
            MutationGate::AsksPerson => (
                "reads_run_mutations_gated",
                "GraphQL queries run; each mutation asks a person".to_string(),
                None,
            ),
            MutationGate::Refuses(r) => (
                "reads_run_mutations_gated",
                format!(
                    "GraphQL queries run; every mutation is refused ({})",
                    r.refusal_reason()
                ),
                Some(r.name().into_owned()),
            ),
        },
        Gate::Refuses(r) => ("refuses", r.refusal_reason(), Some(r.name().into_owned())),
    };
    GateView { kind, text, rule }
}

/// The servers a connection serves: the four Google products for `google`.
fn servers_of(connection: &str) -> Vec<String> {
    if connection == crate::credentials::GOOGLE {
        crate::credentials::GoogleProduct::ALL
            .iter()
            .map(|p| p.server().to_string())
            .collect()
    } else {
        vec![connection.to_string()]
    }
}

fn dead_authority(
    deployment: &Deployment,
    config: Option<&ServeConfig>,
    view: &StoreView<'_>,
) -> Result<DeadAuthority, AuditError> {
    let now = crate::store::now_ms();
    let stale_ms = (view.stale_days as i64).saturating_mul(DAY_MS);
    let mut findings = Vec::new();
    let mut notes = Vec::new();

    // Connections no session used for `stale_days`. A call uses the
    // connection of its own server, and a joint tool's call those of the
    // peers it reads (counted as used whenever the tool ran).
    let peers_of = |server: &str, local: &str| -> Vec<String> {
        deployment
            .components
            .get(server)
            .map(|c| {
                let m = &c.info().manifest;
                m.tools
                    .iter()
                    .find(|d| m.wire_name(&d.function) == local)
                    .map(|d| d.reads_from.clone())
                    .unwrap_or_default()
            })
            .unwrap_or_default()
    };
    // The audit runs where nothing awaits (the command line, the admin
    // API's blocking task): what it reads of the store is read in one wait.
    let StoreFacts {
        connections,
        executed,
        profiles,
        reviews,
        pending,
    } = crate::store::block(StoreFacts::read(view.store))?;
    for c in connections {
        let servers = servers_of(&c.connection);
        let mut last: Option<i64> = None;
        for user in std::iter::once(&c.brand).chain(c.shared_with.iter()) {
            let Some(tools) = executed.get(user) else {
                continue;
            };
            for (tool, at) in tools {
                let Some((server, local)) = split_mcp(tool) else {
                    continue;
                };
                let uses = servers.iter().any(|s| s == server)
                    || peers_of(server, local).iter().any(|p| servers.contains(p));
                if uses {
                    last = Some(last.map_or(*at, |l| l.max(*at)));
                }
            }
        }
        let since = last.map_or(c.updated_at_ms, |l| l.max(c.updated_at_ms));
        if now - since >= stale_ms {
            findings.push(Finding::StaleConnection {
                brand: c.brand,
                connection: c.connection,
                shared_with: c.shared_with,
                last_used_at_ms: last,
                stored_at_ms: c.updated_at_ms,
                idle_days: (now - since) / DAY_MS,
            });
        }
    }

    // Grants naming a connector no credential of the brand serves.
    let served = deployment.served();
    for (brand, SavedProfile { profile, .. }) in profiles {
        for connector in &profile.grant.connectors {
            let why = if !deployment.components.contains_key(connector) {
                Some(format!(
                    "this host does not run the `{connector}` connector: no session can be handed it"
                ))
            } else if let Some(var) = deployment.not_offered.get(connector) {
                Some(format!(
                    "not offered by this deployment: {var} is not set in the host's environment"
                ))
            } else if !served.contains(connector) {
                Some(format!(
                    "`{connector}` is a platform server, not a connector a grant covers"
                ))
            } else if view.resolver.resolve_server(&brand, connector)?.is_none() {
                let connection = connection_for_server(connector);
                Some(format!(
                    "no `{connection}` credential resolves for brand `{brand}` (its own, one shared with it, or the host environment){}",
                    if connection == connector {
                        String::new()
                    } else {
                        format!(" holding {connector}'s scope")
                    }
                ))
            } else {
                None
            };
            if let Some(why) = why {
                findings.push(Finding::GrantWithoutCredential {
                    brand: brand.clone(),
                    profile: profile.name.clone(),
                    connector: connector.clone(),
                    why,
                });
            }
        }
    }

    // Reviews of tools no loaded component offers (a remote server's
    // resource, template or prompt review, `kind:item`, is not a tool's:
    // only a running host knows what the server lists now).
    for r in reviews.into_iter().filter(|r| !r.tool.contains(':')) {
        let why = match deployment.components.get(&r.connector) {
            None => Some(format!(
                "no loaded component is the `{}` connector",
                r.connector
            )),
            Some(c) if c.tool(&r.tool).is_none() => Some(format!(
                "the loaded `{}` component ({} {}) offers no tool `{}`",
                r.connector,
                c.name(),
                c.info().manifest.version,
                r.tool
            )),
            Some(_) => None,
        };
        if let Some(why) = why {
            findings.push(Finding::ReviewWithoutTool {
                connector: r.connector,
                tool: r.tool,
                approved_by: r.approved_by,
                approved_at_ms: r.approved_at_ms,
                why,
            });
        }
    }

    // Approvals still pending whose session has ended.
    let mut known: BTreeMap<String, SessionState> = BTreeMap::new();
    for a in pending {
        if !known.contains_key(&a.session) {
            known.insert(a.session.clone(), (view.sessions)(&a.session)?);
        }
        if let SessionState::Ended(why) = &known[&a.session] {
            findings.push(Finding::PendingApprovalOfEndedSession {
                approval: a.id.0,
                session: a.session.clone(),
                tool: a.tool.clone(),
                requested_at_ms: a.requested_at_ms,
                why: why.clone(),
            });
        }
    }
    if known.values().any(|s| *s == SessionState::Unknown)
        && let Some(note) = &view.sessions_note
    {
        notes.push(note.clone());
    }
    if config.is_none() {
        notes
            .push("no configuration was read: origins and credential schemes are not known".into());
    }
    Ok(DeadAuthority {
        stale_days: view.stale_days,
        checked_at_ms: now,
        findings,
        notes,
    })
}

/// What the dead-authority findings read of the store.
struct StoreFacts {
    /// The connections not disabled.
    connections: Vec<StoredConnection>,
    /// When each brand that holds or is shared one of them last executed
    /// each tool.
    executed: BTreeMap<String, BTreeMap<String, i64>>,
    profiles: Vec<(String, SavedProfile)>,
    reviews: Vec<StoredReview>,
    pending: Vec<Approval>,
}

impl StoreFacts {
    async fn read(store: &dyn Store) -> Result<StoreFacts, StoreError> {
        let connections: Vec<StoredConnection> = store
            .stored_connections()
            .await?
            .into_iter()
            .filter(|c| !c.disabled)
            .collect();
        let mut executed = BTreeMap::new();
        for c in &connections {
            for user in std::iter::once(&c.brand).chain(c.shared_with.iter()) {
                if !executed.contains_key(user) {
                    executed.insert(user.clone(), store.last_executed(user).await?);
                }
            }
        }
        Ok(StoreFacts {
            connections,
            executed,
            profiles: store.all_profiles().await?,
            reviews: store.stored_reviews().await?,
            pending: store.all_pending().await?,
        })
    }
}

/// How the command line tells an ended session from the store alone: the
/// session table where the store keeps one (PostgreSQL), else its first
/// trace event and `session_ttl_secs` (no session outlives it).
pub async fn session_state_from_store(
    store: &dyn Store,
    session_ttl_secs: u64,
    id: &str,
) -> Result<SessionState, StoreError> {
    if let Some(row) = store.shared_session(id).await? {
        return Ok(if row.closed {
            SessionState::Ended(format!("its host `{}` ended it", row.host_id))
        } else if row.ended {
            SessionState::Ended("it was asked to end".into())
        } else {
            SessionState::Live
        });
    }
    let first = store.trace_page(TraceFilter::Session(id), 0, 1).await?;
    let Some((_, opened)) = first.first() else {
        return Ok(SessionState::Ended(
            "no session of this id was ever opened on this store".into(),
        ));
    };
    let ttl_ms = (session_ttl_secs as i64).saturating_mul(1000);
    let age = crate::store::now_ms() - opened.at_ms;
    if age > ttl_ms {
        Ok(SessionState::Ended(format!(
            "it opened {} ago, longer than a session lives (session_ttl_secs = {session_ttl_secs})",
            duration_text(age)
        )))
    } else {
        Ok(SessionState::Unknown)
    }
}

fn duration_text(ms: i64) -> String {
    let secs = ms / 1000;
    if secs >= 2 * 86_400 {
        format!("{} days", secs / 86_400)
    } else if secs >= 2 * 3600 {
        format!("{} hours", secs / 3600)
    } else if secs >= 120 {
        format!("{} minutes", secs / 60)
    } else {
        format!("{secs} seconds")
    }
}

fn date_text(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    crate::dates::utc_day(time)
}

impl Audit {
    /// The audit as a security reviewer reads it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "What a {} (role {}) could cause{}{}",
            self.role_label,
            self.role,
            self.brand
                .as_deref()
                .map(|b| format!(" for brand {b}"))
                .unwrap_or_default(),
            self.profile
                .as_deref()
                .map(|p| format!(", profile {p}"))
                .unwrap_or_default()
        );
        if let Some(operator) = &self.operator_role {
            let _ = writeln!(
                out,
                "operator role {}: {}",
                operator.name,
                operator.summary()
            );
        }
        let _ = writeln!(out, "assumes: {}", self.assumes);
        let _ = writeln!(out, "switches: {}", self.switches_from);
        for s in &self.switches {
            let _ = writeln!(
                out,
                "  {:<30} {}{}",
                s.var,
                s.value,
                if s.set { "" } else { " [default]" }
            );
        }
        let mut by_connector: BTreeMap<&str, Vec<&ToolAuthority>> = BTreeMap::new();
        for t in &self.tools {
            by_connector.entry(&t.connector).or_default().push(t);
        }
        // Reads first, then writes, each by name.
        for tools in by_connector.values_mut() {
            tools.sort_by_key(|t| (t.effect != "read", t.tool.as_str()));
        }
        if by_connector.is_empty() {
            let _ = writeln!(out, "\nno tool of a loaded component is given");
        }
        for (connector, tools) in by_connector {
            let _ = writeln!(out, "\n== {connector}");
            if let Some(c) = tools.iter().find_map(|t| t.credential.as_ref()) {
                let _ = writeln!(out, "credential: {}", credential_text(c));
            }
            for t in tools {
                let _ = writeln!(out, "\n  {} ({})", t.tool, t.effect);
                let _ = writeln!(out, "    gate: {}", t.gate.text);
                if let Some(a) = t.allowance.as_ref().filter(|_| t.gate.kind != "allowance") {
                    let text = match (a.source, a.unit, a.per_run, a.per_day) {
                        (source, Some(unit), Some(run), Some(day)) => format!(
                            "{} per run, {} per day ({})",
                            figure(unit, run),
                            figure(unit, day),
                            if source == "grant" {
                                "the profile's grant"
                            } else {
                                "the configuration's person_allowance"
                            }
                        ),
                        ("not_configured", ..) => {
                            "not known: no configuration was read (person_allowance)".to_string()
                        }
                        _ => "none: no meter, every reservation is refused and nothing billed is sent"
                            .to_string(),
                    };
                    let _ = writeln!(out, "    allowance: {text}");
                }
                match t.review {
                    Some(ReviewStatus::Reviewed) => {
                        let _ = writeln!(out, "    review: reviewed as it is now");
                    }
                    Some(status) => {
                        let _ = writeln!(
                            out,
                            "    review: {} — held, not offered until an operator reviews it",
                            if status == ReviewStatus::New {
                                "never reviewed"
                            } else {
                                "changed since its review"
                            }
                        );
                    }
                    None => {}
                }
                if t.routes.is_empty() {
                    let _ = writeln!(out, "    sends: nothing (no route declared)");
                }
                for r in &t.routes {
                    let mut marks = Vec::new();
                    if r.read_only && r.graphql.is_none() {
                        marks.push("read-only POST".to_string());
                    }
                    let fields = if r.graphql_fields.is_empty() {
                        "any root field".to_string()
                    } else {
                        format!("root fields {}", r.graphql_fields.join(", "))
                    };
                    match r.graphql {
                        Some("queries_only") => {
                            marks.push(format!("GraphQL queries only, {fields}"))
                        }
                        Some(_) => {
                            marks.push(format!("GraphQL, mutations as the gate says, {fields}"))
                        }
                        None => {}
                    }
                    let target = match (&r.destination, &r.origin) {
                        (Some(d), Some(o)) if *d == r.via => format!("{d} at {o}"),
                        (Some(d), None) if *d == r.via => d.clone(),
                        (Some(d), Some(o)) => format!("{} `{d}` at {o}", r.via),
                        (Some(d), None) => format!("{} `{d}`", r.via),
                        (None, Some(o)) => o.clone(),
                        (None, None) => format!("{}'s origin", r.via),
                    };
                    let credential = match r.sends_credential {
                        Some(false) => ", no credential",
                        _ => "",
                    };
                    let _ = writeln!(
                        out,
                        "    {:<6} {} -> {target}{credential}{}",
                        r.method,
                        r.path,
                        if marks.is_empty() {
                            String::new()
                        } else {
                            format!(" [{}]", marks.join("; "))
                        }
                    );
                }
                for p in &t.reads_from {
                    let _ = writeln!(
                        out,
                        "    reads {} ({}): {}",
                        p.connector,
                        if p.served {
                            "served to this session"
                        } else {
                            "not served to this session"
                        },
                        credential_text(&p.credential)
                    );
                }
                if t.folders.is_none() {
                    let _ = writeln!(
                        out,
                        "    folders: not known without a configuration (it imports `folder`)"
                    );
                }
                for f in t.folders.iter().flatten() {
                    let _ = writeln!(
                        out,
                        "    folder {}: {} ({})",
                        f.name,
                        f.root,
                        match (f.held, f.writable) {
                            (false, _) => "not held: the role does not hold the project folder",
                            (true, true) => "read and write",
                            (true, false) => "read only",
                        }
                    );
                }
            }
        }
        if !self.other_tools.is_empty() {
            let _ = writeln!(
                out,
                "\n== given, served without a component here (their consequences are not described)"
            );
            for t in &self.other_tools {
                let gate = if t.gate.kind == "open" {
                    String::new()
                } else {
                    format!(" — {}", t.gate.text)
                };
                let _ = writeln!(out, "  {} ({}){gate}", t.name, t.server);
            }
        }
        match &self.dead_authority {
            None => {
                let _ = writeln!(
                    out,
                    "\n== dead authority: not checked (give --config to read serve's store)"
                );
            }
            Some(d) => {
                let _ = writeln!(
                    out,
                    "\n== dead authority in the store (stale after {} days): {}",
                    d.stale_days,
                    if d.findings.is_empty() {
                        "none found".to_string()
                    } else {
                        format!("{} found", d.findings.len())
                    }
                );
                for f in &d.findings {
                    let _ = writeln!(out, "  - {}", finding_text(f));
                }
                for n in &d.notes {
                    let _ = writeln!(out, "  note: {n}");
                }
            }
        }
        out
    }
}

fn credential_text(c: &CredentialView) -> String {
    let mut text = match c.scheme.as_deref() {
        Some("none") => "none (a public API)".to_string(),
        Some(scheme) => format!("{scheme}, connection `{}`", c.connection),
        None => format!(
            "connection `{}` (scheme not known without a configuration)",
            c.connection
        ),
    };
    if c.scheme.as_deref() != Some("none") {
        let _ = write!(text, "; token source: {}", c.token_source);
    }
    if let Some(var) = &c.host_env {
        let _ = write!(text, "; the deployment owner's brand may use {var}");
    }
    for h in &c.deployment_headers {
        let _ = write!(text, "; header {} from {}", h.header, h.env);
    }
    if let Some(r) = &c.resolved {
        let _ = write!(
            text,
            "; this brand's resolves: {}{} ({})",
            r.source.replace('_', " "),
            r.owner_brand
                .as_deref()
                .map(|o| format!(" by {o}"))
                .unwrap_or_default(),
            r.form
        );
    }
    text
}

fn finding_text(f: &Finding) -> String {
    match f {
        Finding::StaleConnection {
            brand,
            connection,
            shared_with,
            last_used_at_ms,
            stored_at_ms,
            idle_days,
        } => format!(
            "stale connection: brand {brand}'s `{connection}`{}, stored {}, {}; idle {idle_days} days",
            if shared_with.is_empty() {
                String::new()
            } else {
                format!(" (shared with {})", shared_with.join(", "))
            },
            date_text(*stored_at_ms),
            last_used_at_ms.map_or_else(
                || "never used by a session".to_string(),
                |at| format!("last used {}", date_text(at))
            )
        ),
        Finding::GrantWithoutCredential {
            brand,
            profile,
            connector,
            why,
        } => format!(
            "grant without a credential: brand {brand}'s profile `{profile}` grants {connector}: {why}"
        ),
        Finding::ReviewWithoutTool {
            connector,
            tool,
            approved_by,
            approved_at_ms,
            why,
        } => format!(
            "review of a tool no component offers: {connector} `{tool}`, reviewed by {approved_by} on {}: {why}",
            date_text(*approved_at_ms)
        ),
        Finding::PendingApprovalOfEndedSession {
            approval,
            session,
            tool,
            requested_at_ms,
            why,
        } => format!(
            "pending approval of an ended session: approval {approval} for {tool} in session {session}, asked {}: {why}",
            date_text(*requested_at_ms)
        ),
    }
}

/// What `scout-host audit` is given.
pub struct CommandLine {
    pub role: String,
    pub profile: Option<PathBuf>,
    pub brand: Option<String>,
    pub config: Option<PathBuf>,
    pub components: Vec<PathBuf>,
    pub stale_days: u64,
}

/// Checks `stale_days`: 1 to [`MAX_STALE_DAYS`].
pub fn check_stale_days(days: u64) -> Result<u64, AuditError> {
    if (1..=MAX_STALE_DAYS).contains(&days) {
        Ok(days)
    } else {
        Err(AuditError::Usage(format!(
            "stale days must be from 1 to {MAX_STALE_DAYS} (got {days})"
        )))
    }
}

/// Runs `scout-host audit`: the components named, or those `serve`'s
/// configuration serves with its store read (to read only: on PostgreSQL
/// no host is registered). `env` is the host's environment (switches are
/// read by the caller).
pub fn from_command_line(
    cli: &CommandLine,
    switches: &Switches,
    env: fn(&str) -> Option<String>,
) -> Result<Audit, AuditError> {
    let stale_days = check_stale_days(cli.stale_days)?;
    let runtime = Runtime::new(crate::RuntimeConfig {
        cache_dir: crate::runtime::default_cache_dir(),
        max_concurrent_calls: 1,
        ..Default::default()
    })
    .map_err(|source| AuditError::Component {
        path: "(the runtime)".into(),
        source,
    })?;
    let Some(config_path) = &cli.config else {
        if cli.components.is_empty() {
            return Err(AuditError::Usage(
                "give `--config FILE` (serve's configuration: its connectors and store) or at least one `--component C.wasm`".into(),
            ));
        }
        if cli.brand.is_some() {
            return Err(AuditError::Usage(
                "`--brand` reads that brand's connections from serve's store: give `--config FILE`"
                    .into(),
            ));
        }
        // Without a configuration only the seed's roles exist.
        let subject = Subject::new(&cli.role)?;
        let deployment = Deployment::from_files(&runtime, &cli.components)?;
        let subject = match &cli.profile {
            Some(path) => subject.with_profile_file(path, &deployment.catalog)?,
            None => subject,
        };
        return audit(&deployment, None, switches, &subject, None);
    };
    let mut config = ServeConfig::load(config_path)?;
    // The configuration's own roles besides the seed's.
    let roles = OperatorRoles::from_config(&config.roles).map_err(AuditError::Usage)?;
    let subject = Subject::among(&cli.role, &roles)?;
    let key_text = env(&config.store_key_env).ok_or_else(|| {
        AuditError::Usage(format!(
            "the environment variable {} is not set: it holds the store key (64 hex digits) serve seals connections with, which the audit needs to tell the connections that resolve; set it as for serve",
            config.store_key_env
        ))
    })?;
    let key = crate::config::parse_store_key(&key_text)
        .map_err(|e| AuditError::Usage(format!("{}: {e}", config.store_key_env)))?;
    if config.store.backend == crate::config::StoreBackend::Sqlite && !config.database.exists() {
        return Err(AuditError::Usage(format!(
            "there is no store at {}: the audit reads the SQLite file serve keeps (`database` in {}); start serve with this configuration once, or point `database` at its file",
            config.database.display(),
            config_path.display()
        )));
    }
    let store = crate::store::open(
        config.store_location(),
        &env,
        crate::store::Access::ReadOnly,
    )?;
    // An artifact connector is audited from the bytes the cache holds for
    // the digest it names, or that the store recorded for its tag.
    crate::store::block(crate::deployment::use_cached_artifacts(
        &mut config,
        store.as_ref(),
        &crate::artifact::ArtifactCache::default_location(),
    ))?;
    // A remote MCP server's tools are what it lists and an operator
    // reviewed, known only to a running host: none here.
    let deployment = Deployment::from_config(&runtime, &config, &env, &crate::store::NoReviews)?;
    let mut subject = match &cli.profile {
        Some(path) => subject.with_profile_file(path, &deployment.catalog)?,
        None => subject,
    };
    subject.brand = cli.brand.clone();
    let resolver_config = resolver_config(&config, &env);
    let resolver = Resolver::new(&*store, &deployment.catalog, &resolver_config, key, env);
    let ttl = config.session_ttl_secs;
    // The command line cannot await: each session's state is waited for.
    let sessions = |id: &str| crate::store::block(session_state_from_store(&*store, ttl, id));
    let sqlite = config.store.backend == crate::config::StoreBackend::Sqlite;
    let view = StoreView {
        store: &*store,
        resolver: &resolver,
        sessions: &sessions,
        stale_days,
        require_review: config.require_review,
        sessions_note: sqlite.then(|| {
            format!(
                "a pending approval of a session opened less than session_ttl_secs ({ttl} s) ago counts as live: on SQLite only the serving host knows its sessions (GET /v1/audit on it tells exactly)"
            )
        }),
    };
    audit(&deployment, Some(&config), switches, &subject, Some(&view))
}

/// The resolver's configuration, as `serve` builds it from its file.
pub(crate) fn resolver_config(
    config: &ServeConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> crate::credentials::ResolverConfig {
    crate::credentials::ResolverConfig {
        deployment_owner_brand: config.deployment_owner_brand.clone(),
        host_env: config
            .connectors
            .iter()
            .filter_map(|(name, c)| c.host_env.clone().map(|v| (name.clone(), v)))
            .collect(),
        public: config
            .connectors
            .iter()
            .filter(|(_, c)| c.is_public())
            .map(|(name, _)| name.clone())
            .collect(),
        broker: env(&config.token_broker.secret_env).is_some(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    /// The profile shown to an auditor who gave a wrong one is itself a
    /// specialist's profile the save rules accept.
    #[test]
    fn the_profile_shown_as_an_example_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seo.json");
        std::fs::write(&path, super::PROFILE_EXAMPLE).unwrap();
        let subject = super::Subject::new("specialist")
            .unwrap()
            .with_profile_file(&path, &crate::policy::Catalog::seed());
        assert!(
            subject.is_ok(),
            "{:?}",
            subject.err().map(|e| e.to_string())
        );
    }
}
