//! `scout-host serve` (DESIGN D8): the orchestrator's surface.
//!
//! One process holds the loaded components, the store, the policy and the
//! execution boundary, and serves two things on one listener:
//! - the admin API ([`admin`]), for people and orchestrators: sessions,
//!   profiles, connections, approvals, tool reviews and the trace;
//! - MCP over streamable HTTP ([`mcp`]), one endpoint per session and
//!   connector, each answering with exactly that session's offered tools.
//!
//! Both go through [`ServeHost`], so the admin API and MCP see the same
//! sessions, and every call reaches the same [`Boundary`].

pub mod admin;
pub mod agent_config;
mod authority;
mod connect;
mod connections;
mod console;
mod drain;
mod grant;
use connections::ServedConnections;
use grant::{Obtained, SessionGranter};
pub mod host_tools;
pub mod identity;
pub mod mcp;
mod remote;
mod stateless;

use crate::boundary::{
    Authorized, Boundary, CallRequest, Connections, Denied, Executed, Granter, Session,
};
use crate::capabilities::Capabilities;
use crate::capabilities::http::HttpCapability;
use crate::config::open_store;
pub use crate::config::{
    ConfigFileError, ConnectorConfig, ServeConfig, StartError, open_store_to_read,
};
use crate::credentials::{ResolutionCache, Resolver, ResolverConfig, process_env, to_http_config};
use crate::policy::{self, BrandFacts, Catalog, Profile, Role, Route, SessionInput, Switches};
use crate::runtime::{LoadedComponent, Runtime, RuntimeConfig, default_cache_dir};
use crate::session::holdings::{Holdings, HoldingsConfig};
use crate::store::{LedgerStore, ProfileKind, Store};
// The configuration is the deployment's, not the HTTP server's: it lives at
// the crate root; `serve::config` stays its name here too.
pub use crate::config;
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How long an ended session's MCP streams stay open for in-flight calls to
/// receive their refusal.
const END_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// How often `serve` ends the sessions past their time.
const EXPIRY_SWEEP: std::time::Duration = std::time::Duration::from_secs(1);

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What opening a session asks for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenSession {
    /// The brand the session acts for.
    pub brand: String,
    /// One of [`policy::ROLE_NAMES`].
    pub role: String,
    /// A profile saved for the brand (coworker, specialist, goal agent, reviewer).
    #[serde(default)]
    pub profile: Option<String>,
}

/// An open session as the admin API shows it. The token is shown once, when
/// the session is created.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionView {
    pub id: String,
    pub brand: String,
    pub role: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// MCP endpoint per connector, by server name.
    pub mcp: BTreeMap<String, String>,
    /// Each configured connector the session is not served, and why (what
    /// to do about it, where there is something to do).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub left_out: BTreeMap<String, String>,
    /// The session's whole allowlist (D12): what the orchestrator passes to
    /// its agent runtime, connector tools and the tools it serves itself.
    pub tools: Vec<String>,
    /// When the session ends by itself (milliseconds since the Unix epoch).
    pub expires_at_ms: i64,
    /// Paused after repeated refusals of the same consequence, until a
    /// person resumes it (`POST /v1/sessions/{id}/resume`) or ends it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Bearer token for the MCP endpoints (only in the answer that created it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// A live session: its policy state and how its MCP endpoints are reached.
pub struct LiveSession {
    pub session: Session,
    role_name: String,
    profile: Option<String>,
    token_digest: [u8; 32],
    connectors: Vec<String>,
    left_out: BTreeMap<String, String>,
    endpoints: BTreeMap<String, mcp::Endpoint>,
    allowlist: Vec<String>,
    cancel: CancellationToken,
    expires: std::time::Instant,
    /// When it opened (for the session-duration metric).
    opened: std::time::Instant,
    expires_at_ms: i64,
}

impl LiveSession {
    fn view(&self, base: &str, token: Option<String>) -> SessionView {
        SessionView {
            id: self.session.id.clone(),
            brand: self.session.brand.clone(),
            role: self.role_name.clone(),
            profile: self.profile.clone(),
            // Every connector's endpoint, and the host's own (`scout`) where
            // the session is given host tools.
            mcp: self
                .endpoints
                .keys()
                .map(|c| (c.clone(), format!("{base}/mcp/{}/{c}", self.session.id)))
                .collect(),
            left_out: self.left_out.clone(),
            tools: self.allowlist.clone(),
            expires_at_ms: self.expires_at_ms,
            paused: self.session.is_paused(),
            token,
        }
    }

    /// Whether `token` is this session's MCP bearer token.
    pub(crate) fn token_matches(&self, token: &str) -> bool {
        digest(token) == self.token_digest
    }
}

/// Why a request to the host was refused; the admin API turns each into a
/// JSON error with a stable `code`.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    InvalidProfile(String),
    #[error("the store failed: {0}")]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Unavailable(String),
}

/// An HTTP handle built for a (brand, connector), with the digest of the
/// secret it injects: reused while the credential stays the same.
type CachedClient = (String, Arc<HttpCapability>);

/// Everything `serve` holds.
pub struct ServeHost {
    config: ServeConfig,
    /// Every connector as served now; a remote MCP server's entry is
    /// replaced whenever its listed or reviewed tools change.
    components: RwLock<BTreeMap<String, Arc<LoadedComponent>>>,
    /// The remote MCP servers among them ([`crate::remote`]).
    remote: BTreeMap<String, Arc<crate::remote::RemoteServer>>,
    /// Components that serve a platform server (the content writer, the
    /// SEO brief tools): offered where the policy gives their tools, with
    /// no credential of their own.
    platform: BTreeSet<String>,
    /// Connectors loaded and checked that the deployment does not offer
    /// (an environment variable of `requires_env` unset): never registered.
    /// By connector, the variable that is not set.
    not_offered: BTreeMap<String, String>,
    store: Arc<dyn Store>,
    /// The store's ledger, as the meters take it.
    ledger: Arc<dyn LedgerStore>,
    /// What `/metrics` shows.
    metrics: Arc<crate::metrics::Metrics>,
    /// Span export, when `OTEL_EXPORTER_OTLP_*` sets an endpoint.
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    catalog: Arc<Catalog>,
    resolver_config: Arc<ResolverConfig>,
    /// Connections as they last resolved; dropped whenever this host changes one.
    resolutions: Arc<ResolutionCache>,
    /// Access tokens the host obtains (OAuth, the broker), cached.
    tokens: Arc<crate::credentials::Tokens>,
    key: [u8; 32],
    boundary: Arc<Boundary>,
    sessions: RwLock<HashMap<String, Arc<LiveSession>>>,
    http: Mutex<HashMap<(String, String), CachedClient>>,
    admin_token_digest: [u8; 32],
    /// Verifies the `[oidc]` issuer's tokens, when the file has `[oidc]`.
    identity: Option<Arc<identity::OidcVerifier>>,
    /// Calls granted handles: only calls the boundary authorized.
    grants: std::sync::atomic::AtomicU64,
    /// The address actually bound (the configured port may be 0) and the
    /// `Host` values it answers to, fixed when it is bound.
    bound: std::sync::OnceLock<(std::net::SocketAddr, Vec<String>)>,
    /// Requests being answered, for a drain to wait on ([`drain`]).
    in_flight: Arc<drain::InFlight>,
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

fn random_hex(bytes: usize) -> Result<String, HostError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| {
        HostError::Unavailable(format!("the operating system's random source failed: {e}"))
    })?;
    Ok(hex::encode(buf))
}

impl ServeHost {
    /// Loads every connector and opens the store. `env` looks up the
    /// secrets the configuration names (pass [`process_env`]).
    pub fn start(
        mut config: ServeConfig,
        switches: Switches,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<ServeHost>, StartError> {
        let admin_token = env(&config.admin_token_env).ok_or_else(|| {
            StartError::MissingSecret(
                config.admin_token_env.clone(),
                "the admin API's bearer token",
            )
        })?;
        if admin_token.len() < 16 {
            return Err(StartError::BadSecret(format!(
                "{} must be at least 16 characters",
                config.admin_token_env
            )));
        }
        let key_text = env(&config.store_key_env).ok_or_else(|| {
            StartError::MissingSecret(
                config.store_key_env.clone(),
                "the store key (64 hex digits)",
            )
        })?;
        let key = config::parse_store_key(&key_text)
            .map_err(|e| StartError::BadSecret(format!("{}: {e}", config.store_key_env)))?;

        let store = open_store(&config, &env)?;
        // Artifacts are pulled and verified before anything is compiled.
        config
            .resolve_artifacts(
                store.as_ref(),
                &crate::artifact::ArtifactCache::default_location(),
            )
            .map_err(|(name, message)| StartError::Connector { name, message })?;
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: default_cache_dir(),
            max_concurrent_calls: config.max_concurrent_calls,
            ..Default::default()
        })
        .map_err(StartError::Runtime)?;
        let crate::deployment::Deployment {
            catalog,
            components,
            platform,
            not_offered,
            remote,
            host_env,
            public,
        } = crate::deployment::Deployment::from_config(&runtime, &config, &env, store.as_ref())
            .map_err(|refused| StartError::Connector {
                name: refused.name,
                message: refused.message,
            })?;
        let catalog = Arc::new(catalog);
        // The broker is configured where its secret is set.
        let broker = match env(&config.token_broker.secret_env) {
            Some(secret) => Some(crate::credentials::tokens::BrokerConfig {
                url: config
                    .token_broker
                    .parsed_url()
                    .map_err(|e| StartError::Config(ConfigFileError::Invalid(e)))?,
                secret: crate::credentials::Secret::new(secret),
                allow_private_network: config.token_broker.allow_private_network,
            }),
            None => None,
        };
        let tokens = Arc::new(
            crate::credentials::Tokens::new(
                broker,
                std::time::Duration::from_secs(config.token_timeout_secs),
            )
            .map_err(|e| StartError::Config(ConfigFileError::Invalid(e)))?,
        );
        let resolver_config = Arc::new(ResolverConfig {
            deployment_owner_brand: config.deployment_owner_brand.clone(),
            host_env,
            public,
            broker: tokens.has_broker(),
            ..Default::default()
        });

        let resolutions = Arc::new(ResolutionCache::default());
        let live = ServedConnections {
            store: store.clone(),
            catalog: catalog.clone(),
            resolver_config: resolver_config.clone(),
            key,
            not_offered: not_offered.clone(),
            resolutions: resolutions.clone(),
        };
        let hosted = components
            .keys()
            .filter(|c| !not_offered.contains_key(*c) && !platform.contains(*c))
            .cloned();
        let metrics = Arc::new(crate::metrics::Metrics::new(
            config.max_concurrent_calls,
            store.writer_metrics(),
        ));
        let host_id = store
            .host()
            .unwrap_or_else(|| format!("{}-{}", config.listen, std::process::id()));
        let telemetry = crate::telemetry::Telemetry::from_env(&host_id, &env)?.map(Arc::new);
        let mut boundary = Boundary::new(store.clone(), (*catalog).clone(), switches)
            .measured_by(metrics.clone())
            .with_connections(live)
            .hosting(hosted)
            .sealing_arguments(key)
            .pausing_after(config.pause_after_repeated_denials)
            .asking_above(spend_thresholds(&config));
        if config.require_review {
            boundary = boundary.require_review();
        }
        if let Some(telemetry) = &telemetry {
            boundary = boundary.exported_to(telemetry.clone());
        }
        let identity = match &config.oidc {
            Some(oidc) => Some(Arc::new(identity::OidcVerifier::new(oidc).map_err(
                |e| StartError::Identity(format!("cannot set up the key fetch: {e}")),
            )?)),
            None => None,
        };
        Ok(Arc::new(ServeHost {
            admin_token_digest: digest(&admin_token),
            identity,
            config,
            components: RwLock::new(components),
            remote,
            platform,
            not_offered,
            ledger: store.clone(),
            metrics,
            telemetry,
            store,
            catalog,
            resolver_config,
            resolutions,
            tokens,
            key,
            boundary: Arc::new(boundary),
            sessions: RwLock::new(HashMap::new()),
            http: Mutex::new(HashMap::new()),
            bound: std::sync::OnceLock::new(),
            grants: Default::default(),
            in_flight: Default::default(),
        }))
    }

    pub fn config(&self) -> &ServeConfig {
        &self.config
    }

    /// The base URL MCP endpoints are announced under.
    pub(crate) fn base_url(&self) -> String {
        match (&self.config.public_url, self.bound.get()) {
            (None, Some((addr, _))) => format!("http://{addr}"),
            _ => self.config.base_url(),
        }
    }

    /// Whether this server answers to `host` (a lowercased `Host` header).
    pub(crate) fn answers_to(&self, host: &str) -> bool {
        match self.bound.get() {
            Some((_, hosts)) => hosts.iter().any(|h| h == host),
            None => self.config.hosts().iter().any(|h| h == host),
        }
    }

    /// Binds the configured listener and records the address it got.
    pub async fn bind(&self) -> std::io::Result<tokio::net::TcpListener> {
        let listener = tokio::net::TcpListener::bind(self.config.listen).await?;
        let addr = listener.local_addr()?;
        let _ = self.bound.set((addr, self.config.hosts_for(addr)));
        Ok(listener)
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The catalogue sessions are decided with now (a remote MCP server's
    /// reviewed tools included).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.boundary.catalog()
    }

    pub fn boundary(&self) -> &Arc<Boundary> {
        &self.boundary
    }

    /// Every connector as served now, by server name (a remote MCP
    /// server's as its tools are listed and reviewed at this moment).
    pub fn components(&self) -> BTreeMap<String, Arc<LoadedComponent>> {
        self.components.read().clone()
    }

    /// One connector as served now.
    pub fn component(&self, name: &str) -> Option<Arc<LoadedComponent>> {
        self.components.read().get(name).cloned()
    }

    /// The remote MCP server behind connector `name`, if it is one.
    pub fn remote(&self, name: &str) -> Option<&Arc<crate::remote::RemoteServer>> {
        self.remote.get(name)
    }

    /// Whether `token` is the admin token.
    pub(crate) fn admin_token_matches(&self, token: &str) -> bool {
        digest(token) == self.admin_token_digest
    }

    /// The `[oidc]` verifier, when the configuration has one.
    pub(crate) fn identity(&self) -> Option<&identity::OidcVerifier> {
        self.identity.as_deref()
    }

    fn resolver(&self) -> Resolver<'_> {
        Resolver::new(
            &*self.store,
            &self.catalog,
            &self.resolver_config,
            self.key,
            process_env,
        )
    }

    /// Opens a session: resolves the role's credentials, decides its
    /// surface, records it in the trace and creates its MCP endpoints.
    pub fn open_session(self: &Arc<Self>, request: &OpenSession) -> Result<SessionView, HostError> {
        if self.boundary.is_shutting_down() {
            return Err(HostError::Unavailable(
                "this host is shutting down and opens no session: open it on another host, or on this one once it is back".into(),
            ));
        }
        let brand = request.brand.trim();
        if brand.is_empty() || brand.len() > 200 {
            return Err(HostError::BadRequest(
                "`brand` must be 1 to 200 characters".into(),
            ));
        }
        let role = Role::from_name(&request.role).ok_or_else(|| {
            HostError::BadRequest(format!(
                "unknown role `{}`: {}",
                request.role,
                policy::ROLE_NAMES
            ))
        })?;
        let profile = self.session_profile(brand, role, request.profile.as_deref())?;
        let input = self.session_input(brand, role, profile.clone())?;
        let facts = input.brand.clone();
        let id = format!("s-{}", random_hex(12)?);
        let token = random_hex(32)?;
        let session =
            Session::new(id.clone(), brand, input).held_under(self.store.lease_generation());
        let components = self.components();
        let platform: Vec<&LoadedComponent> = self
            .platform
            .iter()
            .filter_map(|c| components.get(c).map(|a| &**a))
            .collect();
        let mut served: Vec<&LoadedComponent> = facts
            .connected
            .iter()
            .filter_map(|c| components.get(c).map(|a| &**a))
            .collect();
        served.extend(platform.iter().copied());
        let offered = self
            .boundary
            .open_session_with(&session, &served)
            .map_err(|e| {
                HostError::BadRequest(format!("the session's surface cannot be decided: {e}"))
            })?;
        // A platform component is served to a session its tools are given to.
        served.retain(|c| {
            !self.platform.contains(c.name())
                || offered
                    .surface
                    .names()
                    .iter()
                    .any(|n| n.starts_with(&format!("mcp__{}__", c.name())))
        });
        // The orchestrator's allowlist leaves out what review holds back.
        let mut allowlist = offered.surface.allowlist();
        for component in &served {
            let prefix = format!("mcp__{}__", component.name());
            let offered: BTreeSet<String> = self
                .boundary
                .offered_tools(&session, component)
                .iter()
                .map(|t| policy::names::mcp(component.name(), &t.name))
                .collect();
            allowlist.retain(|name| !name.starts_with(&prefix) || offered.contains(name));
        }
        let holdings = Holdings::decide(
            &id,
            brand,
            role,
            profile.as_ref(),
            &allowlist,
            &served,
            &|name| self.config.connectors.get(name).map(holdings_config),
            &self.boundary.catalog(),
        )
        .map_err(HostError::BadRequest)?;
        session.hold(holdings);
        // The host's own tools, on the session's `scout` endpoint.
        let host_tools = host_tools::given(&session);
        allowlist.extend(
            host_tools
                .iter()
                .map(|t| policy::names::mcp(host_tools::SCOUT_SERVER, t)),
        );
        let connectors: Vec<String> = served.iter().map(|c| c.name().to_string()).collect();
        let left_out = self.left_out(brand, role, &connectors);
        let cancel = CancellationToken::new();
        let ttl = std::time::Duration::from_secs(self.config.session_ttl_secs);
        let mut live = LiveSession {
            session,
            role_name: request.role.clone(),
            profile: request.profile.clone(),
            token_digest: digest(&token),
            connectors: connectors.clone(),
            left_out,
            endpoints: BTreeMap::new(),
            allowlist,
            cancel: cancel.clone(),
            expires: std::time::Instant::now() + ttl,
            opened: std::time::Instant::now(),
            expires_at_ms: (std::time::SystemTime::now() + ttl)
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        };
        let live = Arc::new_cyclic(|weak| {
            let scout = (!host_tools.is_empty()).then(|| host_tools::SCOUT_SERVER.to_string());
            for connector in connectors.iter().chain(scout.iter()) {
                live.endpoints.insert(
                    connector.clone(),
                    mcp::Endpoint::new(
                        self.clone(),
                        weak.clone(),
                        connector.clone(),
                        cancel.clone(),
                    ),
                );
            }
            live
        });
        let view = live.view(&self.base_url(), Some(token));
        // Recorded for the other hosts (an admin API on any of them answers
        // for it), never with its token.
        let shown = SessionView {
            token: None,
            ..view.clone()
        };
        self.store.session_opened(
            &id,
            &shown.brand,
            &serde_json::to_value(&shown).unwrap_or_default(),
            shown.expires_at_ms,
        )?;
        self.metrics.session_opened(&live.role_name);
        self.sessions.write().insert(id, live);
        Ok(view)
    }

    /// Why each configured connector a session of `role` for `brand` is not
    /// served (`served`: the ones it is), in words that say what to do.
    fn left_out(&self, brand: &str, role: Role, served: &[String]) -> BTreeMap<String, String> {
        let mut left_out = BTreeMap::new();
        for name in self.config.connectors.keys() {
            if served.contains(name) {
                continue;
            }
            let why = if let Some(var) = self.not_offered.get(name) {
                format!(
                    "not offered by this deployment: {var} is not set in the host's environment"
                )
            } else if self.platform.contains(name) {
                format!(
                    "a platform server, and the policy gives a session of role `{}` none of its tools",
                    role.label()
                )
            } else if matches!(
                self.resolutions
                    .resolve_server(|| self.resolver(), brand, name),
                Ok(Some(_))
            ) {
                format!(
                    "a session of role `{}` is not handed this connector's credential: its role, or its profile's grant, does not cover it",
                    role.label()
                )
            } else {
                let connection = crate::credentials::connection_for_server(name);
                let scope = if connection == name {
                    String::new()
                } else {
                    " holding this product's scope".to_string()
                };
                format!(
                    "brand `{brand}` has no `{connection}` connection{scope}: store one with PUT /v1/brands/{brand}/connections/{connection} (a public API takes `credential = \"none\"` in the configuration instead)"
                )
            };
            left_out.insert(name.clone(), why);
        }
        left_out
    }

    /// One line per configured connector, as `serve` prints them at start:
    /// its tools, where it is reached, and to whom it is served.
    pub fn connector_lines(&self) -> Vec<String> {
        self.config
            .connectors
            .iter()
            .filter_map(|(name, settings)| {
                let component = self.component(name)?;
                let tools = component.tools();
                let writes = tools
                    .iter()
                    .filter(|t| t.effect == scout_manifest::Effect::Write)
                    .count();
                let origin = settings
                    .origin
                    .as_deref()
                    .map(|o| format!(", origin {o}"))
                    .unwrap_or_default();
                let served = if let Some(var) = self.not_offered.get(name) {
                    format!("not offered: {var} is not set")
                } else if self.platform.contains(name) {
                    "a platform server, given where the policy gives its tools".to_string()
                } else if settings.is_public() {
                    "a public API (credential = \"none\"): served to every brand".to_string()
                } else {
                    "served to brands whose connection resolves".to_string()
                };
                if let Some(url) = &settings.mcp {
                    return Some(format!(
                        "connector {name}: the remote MCP server at {url}, its tools offered once an operator reviews each; {served}"
                    ));
                }
                let from = match (&settings.artifact, &settings.artifact_digest) {
                    (Some(artifact), Some(digest)) => format!("{artifact} (running {digest})"),
                    _ => settings.component.display().to_string(),
                };
                Some(format!(
                    "connector {name}: {} tools ({} read, {writes} write) from {from}{origin}; {served}",
                    tools.len(),
                    tools.len() - writes,
                ))
            })
            .collect()
    }

    /// The policy input of a session of `role` for `brand`: the role's
    /// credential set, as it resolves now, limited to the connectors this
    /// host runs, and the brand's other facts from their sources (the
    /// table in [`config`]'s documentation). The policy decides which
    /// roles they matter to. `scout-host surface --brand` shows the same.
    pub fn session_input(
        &self,
        brand: &str,
        role: Role,
        profile: Option<Profile>,
    ) -> Result<SessionInput, HostError> {
        let grant = profile.as_ref().map(|p| &p.grant);
        let credentials = self.resolver().credential_set_for(role, grant, brand)?;
        // A connector is registered only where its credential resolves and
        // this host runs its component.
        let connected: BTreeSet<String> = credentials
            .connected()
            .into_iter()
            .filter(|c| {
                self.components.read().contains_key(c)
                    && !self.not_offered.contains_key(c)
                    && !self.platform.contains(c)
            })
            .collect();
        let stated = self.config.brand(brand);
        let has_coworkers = self
            .store
            .list_profiles(brand)?
            .iter()
            .any(|p| p.kind == ProfileKind::Coworker);
        let facts = BrandFacts {
            connected,
            has_skills: !stated.skills.is_empty(),
            has_coworkers,
            goals_engine_on: stated.goals_engine,
            // `serve` opens local sessions; the browser exists only under E2B.
            browser_provider: None,
            is_deployment_owner: self.config.deployment_owner_brand.as_deref() == Some(brand),
        };
        let mut input = SessionInput::new(role).brand(facts);
        if let Some(profile) = profile {
            input = input.profile(profile);
        }
        Ok(input)
    }

    fn session_profile(
        &self,
        brand: &str,
        role: Role,
        name: Option<&str>,
    ) -> Result<Option<Profile>, HostError> {
        let kind_for_role = match role {
            Role::CoworkerRun { .. } | Role::SpecialistRun { .. } => Some(ProfileKind::Coworker),
            Role::GoalAgentStep => Some(ProfileKind::GoalAgent),
            Role::GoalReviewer => Some(ProfileKind::Reviewer),
            _ => None,
        };
        let Some(kind) = kind_for_role else {
            return match name {
                Some(_) => Err(HostError::BadRequest(format!(
                    "a {} runs without a profile",
                    role.label()
                ))),
                None => Ok(None),
            };
        };
        let Some(name) = name else {
            return match role {
                Role::GoalAgentStep => Ok(Some(policy::presets::goal_agent(Default::default()))),
                Role::GoalReviewer => Ok(Some(policy::presets::goal_reviewer())),
                _ => Err(HostError::BadRequest(format!(
                    "a {} runs from a saved profile: give `profile`",
                    role.label()
                ))),
            };
        };
        let saved = self.store.load_profile(brand, name)?.ok_or_else(|| {
            HostError::NotFound(format!("brand `{brand}` has no profile `{name}`"))
        })?;
        if saved.kind != kind {
            return Err(HostError::BadRequest(format!(
                "profile `{name}` was saved as {}, not for a {}",
                saved.kind.as_str(),
                role.label()
            )));
        }
        if let Role::CoworkerRun { .. } | Role::SpecialistRun { .. } = role
            && Role::for_profile(&saved.profile, Route::Standard) != role
        {
            let wanted = if saved.profile.grant.is_empty() {
                "coworker"
            } else {
                "specialist"
            };
            return Err(HostError::BadRequest(format!(
                "profile `{name}` runs as a {wanted}"
            )));
        }
        Ok(Some(saved.profile))
    }

    /// The session `id`, if it is open. A session past its time is ended here.
    pub fn session(&self, id: &str) -> Option<Arc<LiveSession>> {
        let live = self.sessions.read().get(id).cloned()?;
        if live.expires <= std::time::Instant::now() {
            self.end_session(id);
            return None;
        }
        Some(live)
    }

    /// Ends every session past its time (a call waiting for a person in one
    /// is refused); `serve` runs this every few seconds.
    pub fn end_expired(&self) -> usize {
        let now = std::time::Instant::now();
        let expired: Vec<String> = self
            .sessions
            .read()
            .values()
            .filter(|s| s.expires <= now)
            .map(|s| s.session.id.clone())
            .collect();
        expired.iter().filter(|id| self.end_session(id)).count()
    }

    /// Every open session this host serves.
    pub fn sessions(&self) -> Vec<SessionView> {
        self.end_expired();
        let base = self.base_url();
        let sessions = self.sessions.read();
        let mut views: Vec<SessionView> = sessions.values().map(|s| s.view(&base, None)).collect();
        views.sort_by(|a, b| a.id.cmp(&b.id));
        views
    }

    /// Every open session of every live host, as the admin API shows it:
    /// this host's own, then those the store records for the others.
    pub(crate) fn all_sessions(&self) -> Result<Vec<Value>, HostError> {
        let mut views: Vec<Value> = self
            .sessions()
            .into_iter()
            .map(|v| serde_json::to_value(v).unwrap_or_default())
            .collect();
        let me = self.store.host();
        for shared in self.store.shared_sessions()? {
            if Some(&shared.host_id) != me.as_ref() {
                views.push(shared.view);
            }
        }
        Ok(views)
    }

    /// One open session as the admin API shows it, whichever host serves it.
    pub(crate) fn session_view(&self, id: &str) -> Result<Option<Value>, HostError> {
        if let Some(live) = self.session(id) {
            return Ok(serde_json::to_value(live.view(&self.base_url(), None)).ok());
        }
        Ok(self
            .store
            .shared_session(id)?
            .filter(|s| !s.closed && !s.ended)
            .map(|s| s.view))
    }

    /// Ends a session whichever host serves it. Another host's session is
    /// asked to end through the store, and this answers once that host
    /// has ended it (its next call is then denied), or says it is ending
    /// if that host did not answer in time.
    pub(crate) async fn end_any_session(&self, id: &str) -> Result<SessionEnd, HostError> {
        if self.end_session(id) {
            return Ok(SessionEnd::Ended);
        }
        let Some(row) = self.store.request_session_end(id)? else {
            return Ok(SessionEnd::Unknown);
        };
        if row.closed {
            return Ok(SessionEnd::Unknown);
        }
        let deadline = tokio::time::Instant::now() + REMOTE_END_WAIT;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            if self.store.shared_session(id)?.is_none_or(|s| s.closed) {
                return Ok(SessionEnd::Ended);
            }
        }
        Ok(SessionEnd::Ending { host: row.host_id })
    }

    /// Sends the spans not yet exported; called once the listener stopped.
    pub async fn flush_telemetry(&self) {
        if let Some(telemetry) = self.telemetry.clone() {
            let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
        }
    }

    /// `/metrics`: OpenMetrics text.
    pub fn metrics_text(&self) -> String {
        self.metrics.render()
    }

    /// Whether this host should get traffic: its store answers, its
    /// lease is held, and it is not shutting down. The reason is one of a
    /// few fixed texts (a driver's error text goes to the log, never to
    /// an unauthenticated probe).
    pub fn readiness(&self) -> Result<(), &'static str> {
        if self.boundary.is_shutting_down() {
            return Err("this host is shutting down");
        }
        if let Err(e) = self.store.check() {
            tracing::warn!(error = %e, "readiness: the store does not answer");
            return Err("the store does not answer");
        }
        if !self.store.lease_held() {
            return Err("this host does not hold its lease: it takes no calls");
        }
        Ok(())
    }

    /// Starts the drain: the boundary refuses every new call and session,
    /// and calls waiting for a person end (`host_shutdown`).
    pub fn begin_shutdown(&self) {
        self.boundary.shut_down();
    }

    /// Ends every session's MCP event streams (at the end of a drain).
    fn end_streams(&self) {
        for live in self.sessions.read().values() {
            live.cancel.cancel();
        }
    }

    /// Acts on what another host changed: caches dropped, surfaces decided
    /// afresh, sessions that host ended ended here too.
    fn apply_invalidation(&self, what: &crate::store::Invalidation) {
        use crate::store::Invalidation;
        match what {
            Invalidation::Connections => self.connections_changed_elsewhere(),
            Invalidation::Profiles | Invalidation::Reviews => self.boundary.changed(),
            Invalidation::Session(id) => self.end_if_ended_elsewhere(id),
            Invalidation::All => {
                self.connections_changed_elsewhere();
                let ids: Vec<String> = self.sessions.read().keys().cloned().collect();
                for id in ids {
                    self.end_if_ended_elsewhere(&id);
                }
            }
        }
    }

    fn connections_changed_elsewhere(&self) {
        self.connections_changed();
        let connectors: BTreeSet<String> = self
            .sessions
            .read()
            .values()
            .flat_map(|live| live.connectors.iter().cloned())
            .collect();
        for connector in connectors {
            self.revoke_where_unresolved(&connector);
        }
    }

    fn end_if_ended_elsewhere(&self, id: &str) {
        if self.session(id).is_none() {
            return;
        }
        match self.store.shared_session(id) {
            Ok(Some(row)) if row.ended => {
                self.end_session(id);
            }
            Ok(_) => {}
            Err(e) => tracing::error!(session = %id, error = %e, "cannot read the session's state"),
        }
    }

    /// Ends a session: its authority ends at once (later calls are denied,
    /// unused approvals revoked) and its MCP endpoints close.
    pub fn end_session(&self, id: &str) -> bool {
        let Some(live) = self.sessions.write().remove(id) else {
            return false;
        };
        self.boundary.revoke_session(&live.session);
        for server in self.remote.values() {
            server.end(id);
        }
        self.metrics.session_ended(live.opened.elapsed());
        if let Err(e) = self.store.session_closed(id) {
            tracing::error!(session = %id, error = %e, "cannot record the session's end");
        }
        // One session is one run: its meters end with it.
        if let Some(holdings) = live.session.holdings() {
            holdings.end();
        }
        // A call waiting for a person sees the revocation at its next look
        // (20 ms) and answers with a refusal; the streams close after that.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let cancel = live.cancel.clone();
                runtime.spawn(async move {
                    tokio::time::sleep(END_GRACE).await;
                    cancel.cancel();
                });
            }
            Err(_) => live.cancel.cancel(),
        }
        true
    }

    /// The MCP endpoint of `session` for `connector`.
    pub fn endpoint(
        &self,
        session: &str,
        connector: &str,
    ) -> Option<(Arc<LiveSession>, mcp::Endpoint)> {
        let live = self.session(session)?;
        let endpoint = live.endpoints.get(connector)?.clone();
        Some((live, endpoint))
    }

    /// The arguments of a call of `session` waiting for a person, if this host holds it.
    pub(crate) fn approval_arguments(&self, approval: &crate::store::Approval) -> Option<Value> {
        self.boundary.approval_arguments(approval)
    }

    /// Runs `request` of `connector` for `session` through the boundary:
    /// authorized first, then granted the HTTP handle bound to the
    /// connector's origin with the credential resolved now (and the run's
    /// meter and folders), then executed.
    pub async fn call(
        &self,
        session: &LiveSession,
        connector: &str,
        request: CallRequest<'_>,
    ) -> Result<Executed, Denied> {
        let Some(component) = self.component(connector) else {
            return Err(Denied::by(policy::Rule::NotOffered));
        };
        let granter = SessionGranter {
            host: self,
            live: session,
            component: &component,
        };
        self.boundary
            .call(&session.session, &component, request, &granter)
            .await
    }
}

/// Person chat's per-call spend threshold of each connector that has one,
/// in its meter's unit (checked when the configuration was read).
fn spend_thresholds(config: &ServeConfig) -> Vec<(String, u64)> {
    config
        .connectors
        .iter()
        .filter_map(|(name, c)| {
            let threshold = c.person_allowance.as_ref()?.per_call_threshold().ok()??;
            Some((name.clone(), threshold))
        })
        .collect()
}

/// What a connector's configuration says of a session's holdings.
fn holdings_config(settings: &ConnectorConfig) -> HoldingsConfig<'_> {
    HoldingsConfig {
        folders: &settings.folders,
        person_allowance: settings.person_allowance.as_ref(),
    }
}

/// Runs `serve` until ctrl-c: the admin API and the MCP endpoints on the
/// configured listener. Prints the listening address on stdout.
pub async fn run(host: Arc<ServeHost>) -> anyhow::Result<()> {
    let listener = host.bind().await?;
    let addr = listener.local_addr()?;
    // Before any call: close what a host killed mid-call left open. After the
    // bind, so a second `serve` on the same address stops before it touches
    // the first one's approvals and calls.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let recovered = host.store.recover_interrupted(now_ms)?;
    // Runs whose sessions died with the previous host: ended, so they count
    // at what they recorded instead of holding the day until midnight.
    let runs_ended = host.store.end_live_runs(now_ms)?;
    if runs_ended > 0 {
        eprintln!(
            "scout-host: the previous run left {runs_ended} metered runs open; ended at what they recorded"
        );
    }
    if recovered != crate::store::Recovered::default() {
        eprintln!(
            "scout-host: the previous run stopped mid-call: {} pending approvals revoked, {} calls marked interrupted ({} of them may have reached their upstream)",
            recovered.approvals_revoked, recovered.calls_interrupted, recovered.calls_maybe_run
        );
    }
    // On stderr, beside the switch banner: stdout's one line is the address.
    for line in host.connector_lines() {
        eprintln!("scout-host: {line}");
    }
    host.discover_remote();
    drain::ignore_hangups();
    let probe_server = match host.config.probe_listen {
        Some(at) => {
            let probes = tokio::net::TcpListener::bind(at).await?;
            eprintln!(
                "scout-host: probes (/livez, /readyz) on http://{}",
                probes.local_addr()?
            );
            let router = drain::probes().with_state(host.clone());
            Some(AbortOnDrop(tokio::spawn(async move {
                if let Err(e) = axum::serve(probes, router).await {
                    tracing::error!(error = %e, "the probe listener stopped");
                }
            })))
        }
        None => None,
    };
    println!("scout-host serving the admin API and MCP on http://{addr}");
    let grace = std::time::Duration::from_secs(host.config.shutdown_grace_secs);
    let (stopping, stopped_at) = tokio::sync::oneshot::channel();
    let graceful = {
        let host = host.clone();
        async move {
            stop_signal().await;
            let _ = stopping.send(tokio::time::Instant::now());
            drain::drain(&host, grace).await;
        }
    };
    let served = serve_http(host.clone(), listener, graceful);
    tokio::pin!(served);
    // The grace bounds the whole stop, the listener's close included.
    let cut = async {
        match stopped_at.await {
            Ok(at) => tokio::time::sleep_until(at + grace).await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        served = &mut served => served?,
        () = cut => {
            tracing::warn!("the shutdown grace ended with connections still open; they are cut");
        }
    }
    drop(probe_server);
    host.flush_telemetry().await;
    eprintln!("scout-host: stopped");
    Ok(())
}

/// SIGINT or SIGTERM (what a service manager sends to stop a process).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Serves the router on `listener` until `shutdown` completes. Small
/// writes (SSE events, JSON-RPC replies) go out at once: `TCP_NODELAY`,
/// or Nagle's algorithm and the peer's delayed ACK add 40 ms to a reply.
/// How long ending another host's session waits for that host to end it.
const REMOTE_END_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// What [`ServeHost::end_any_session`] did.
pub(crate) enum SessionEnd {
    Ended,
    /// Asked; the host serving it had not ended it when the wait ran out.
    Ending {
        host: String,
    },
    Unknown,
}

pub async fn serve_http(
    host: Arc<ServeHost>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let invalidations = host.store.invalidations().map(|mut changes| {
        let host = Arc::downgrade(&host);
        tokio::spawn(async move {
            loop {
                let what = match changes.recv().await {
                    Ok(what) => what,
                    // Missed some: act as if everything changed.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        crate::store::Invalidation::All
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let Some(host) = host.upgrade() else { return };
                // The store's reads block: off the async worker.
                let _ = tokio::task::spawn_blocking(move || host.apply_invalidation(&what)).await;
            }
        })
    });
    let sweeper = {
        let host = Arc::downgrade(&host);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(EXPIRY_SWEEP);
            loop {
                tick.tick().await;
                let Some(host) = host.upgrade() else { return };
                host.end_expired();
            }
        })
    };
    let _stop_sweeper = AbortOnDrop(sweeper);
    let _stop_invalidations = invalidations.map(AbortOnDrop);
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, admin::router(host))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Serves one session's `connector` over stdin/stdout (MCP stdio), while the
/// admin API listens as configured so a person can answer approvals. The
/// session ends when the client closes stdin.
pub async fn run_stdio(
    host: Arc<ServeHost>,
    request: OpenSession,
    connector: String,
) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    // The admin API is for approvals a client cannot ask for itself; a
    // `serve` already on that address leaves this session with elicitation.
    let admin = match host.bind().await {
        Ok(listener) => {
            eprintln!("scout-host: admin API on http://{}", listener.local_addr()?);
            Some(tokio::spawn(serve_http(
                host.clone(),
                listener,
                std::future::pending(),
            )))
        }
        Err(e) => {
            eprintln!(
                "scout-host: no admin API ({}: {e}); approvals only through MCP elicitation",
                host.config.listen
            );
            None
        }
    };
    host.discover_remote();
    let view = host.open_session(&request)?;
    let Some((live, _)) = host.endpoint(&view.id, &connector) else {
        host.end_session(&view.id);
        anyhow::bail!(
            "connector `{connector}` is not served to this session (connected: {:?})",
            view.mcp.keys().collect::<Vec<_>>()
        );
    };
    eprintln!("scout-host: session {} over stdio", view.id);
    let server = mcp::ConnectorServer::new(&host, &live, connector);
    let running = server.serve(rmcp::transport::stdio()).await?;
    let _ = running.waiting().await;
    host.end_session(&view.id);
    host.flush_telemetry().await;
    if let Some(admin) = admin {
        admin.abort();
    }
    Ok(())
}
