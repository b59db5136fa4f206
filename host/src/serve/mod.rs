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
mod endpoint;
mod in_session;
use crate::deployments::{Deployments, DeploymentsConfig, FileSettings};
use crate::grant::{Grants, GrantsConfig, Obtained, SessionGranter};
pub mod host_tools;
pub mod identity;
pub mod mcp;
mod remote;
mod run;
mod scrape;
pub use run::{run, run_stdio, serve_http};
mod session_components;
mod sessions;
mod shown;
mod stateless;
mod stdio;

use crate::boundary::{Boundary, CallRequest, Denied, Executed};
use crate::capabilities::http::HttpCapability;
pub use crate::config::{ConfigFileError, ConnectorConfig, ServeConfig, StartError};
use crate::credentials::ResolverConfig;
use crate::policy::{self, BrandFacts, Catalog, Profile, Role, SessionInput, Switches};
use crate::runtime::{LoadedComponent, Runtime, RuntimeConfig, default_cache_dir};
use crate::session::holdings::{Holdings, HoldingsConfig};
use crate::store::Store;
// The configuration is the deployment's, not the HTTP server's: it lives at
// the crate root; `serve::config` stays its name here too.
pub use crate::config;
use parking_lot::RwLock;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// How often `serve` ends the sessions past their time.
const EXPIRY_SWEEP: std::time::Duration = std::time::Duration::from_secs(1);

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A live session, reached through its MCP endpoints ([`crate::session::registry`]).
pub type LiveSession = crate::sessions::Live<endpoint::Endpoint>;
pub(crate) use crate::sessions::SessionEnd;
use crate::sessions::view_of;
pub use crate::sessions::{HostError, OpenSession, SessionView};

/// Everything `serve` holds.
pub struct ServeHost {
    config: ServeConfig,
    /// What is served, and every change to it ([`crate::deployments`]).
    deployments: Arc<Deployments>,
    store: Arc<dyn Store>,
    /// What `/metrics` shows.
    metrics: Arc<crate::metrics::Metrics>,
    /// Span export, when `OTEL_EXPORTER_OTLP_*` sets an endpoint.
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    /// Brands' connections and how they resolve now ([`crate::connections`]).
    connections: crate::connections::Connections,
    key: [u8; 32],
    boundary: Arc<Boundary>,
    /// The sessions held here ([`crate::sessions`]).
    sessions: crate::sessions::Sessions<endpoint::Endpoint>,
    /// What an authorized call is given: its handles, each configured once
    /// ([`crate::grant`]).
    grants: Grants,
    admin_token_digest: [u8; 32],
    /// The token `metrics_listen` asks for, if one is set.
    metrics_token_digest: Option<[u8; 32]>,
    /// Verifies the `[oidc]` issuer's tokens, when the file has `[oidc]`.
    identity: Option<Arc<identity::OidcVerifier>>,
    /// The address actually bound (the configured port may be 0) and the
    /// `Host` values it answers to, fixed when it is bound.
    bound: std::sync::OnceLock<(std::net::SocketAddr, Vec<String>)>,
    /// Requests being answered, for a drain to wait on ([`drain`]).
    in_flight: Arc<drain::InFlight>,
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

impl ServeHost {
    /// Loads every connector and opens the store. `env` looks up the
    /// secrets the configuration names (pass
    /// [`crate::credentials::process_env`]).
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
        let metrics_token_digest = match &config.metrics_token_env {
            None => None,
            Some(_) if config.metrics_listen.is_none() => {
                return Err(StartError::BadSecret(
                    "metrics_token_env guards metrics_listen, which is not set: set metrics_listen = \"ADDR:PORT\" too".to_string(),
                ));
            }
            Some(var) => {
                let token = env(var).ok_or_else(|| {
                    StartError::MissingSecret(var.clone(), "the token that reads /metrics")
                })?;
                if token.len() < 16 {
                    return Err(StartError::BadSecret(format!(
                        "{var} must be at least 16 characters"
                    )));
                }
                if digest(&token) == digest(&admin_token) {
                    return Err(StartError::BadSecret(format!(
                        "{var} holds the admin token: give the scraper a token of its own"
                    )));
                }
                Some(digest(&token))
            }
        };
        let key_text = env(&config.store_key_env).ok_or_else(|| {
            StartError::MissingSecret(
                config.store_key_env.clone(),
                "the store key (64 hex digits)",
            )
        })?;
        let key = config::parse_store_key(&key_text)
            .map_err(|e| StartError::BadSecret(format!("{}: {e}", config.store_key_env)))?;

        let store = crate::store::open(
            config.store_location(),
            &env,
            crate::store::Access::ReadWrite,
        )?;
        // From here the store holds this host's lease: a start refused below
        // gives it back, so the others do not count a lost host.
        let release_on_failure = run::ReleaseOnFailure(Some(store.clone()));
        // Artifacts are pulled and verified before anything is compiled.
        crate::artifact::resolve_artifacts(
            &mut config,
            store.as_ref(),
            &crate::artifact::ArtifactCache::default_location(),
        )
        .map_err(|(name, e)| StartError::Connector {
            name,
            message: e.to_string(),
        })?;
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
        let roster: crate::deployment::SharedRoster =
            Arc::new(RwLock::new(Arc::new(crate::deployment::Roster {
                settings: config
                    .connectors
                    .iter()
                    .map(|(name, settings)| (name.clone(), Arc::new(settings.clone())))
                    .collect(),
                platform: platform.clone(),
                not_offered: not_offered.clone(),
                resolver: resolver_config,
                http: config
                    .connectors
                    .iter()
                    .map(|(name, settings)| {
                        let prepared = crate::deployment::HttpPrepared::of(settings, &env);
                        (name.clone(), Arc::new(prepared))
                    })
                    .collect(),
                ..Default::default()
            })));

        let connections = crate::connections::Connections::new(store.clone(), key, roster.clone());
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
        let mut boundary = Boundary::new(store.clone(), catalog, switches)
            .measured_by(metrics.clone())
            .with_connections(connections.resolved())
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
        let boundary = Arc::new(boundary);
        let grants = Grants::new(GrantsConfig {
            store: store.clone(),
            ledger: store.clone(),
            key,
            resolutions: connections.resolution_cache(),
            tokens,
            roster: roster.clone(),
            boundary: boundary.clone(),
            metrics: metrics.clone(),
            remote: remote.clone(),
            private_network: config
                .connectors
                .iter()
                .filter(|(_, c)| c.allow_private_network)
                .map(|(name, _)| name.clone())
                .collect(),
        });
        let sessions = crate::sessions::Sessions::new(
            store.clone(),
            std::time::Duration::from_secs(config.session_ttl_secs),
            metrics.clone(),
        );
        let deployments = Arc::new(Deployments::new(DeploymentsConfig {
            store: store.clone(),
            boundary: boundary.clone(),
            runtime,
            components,
            remote,
            roster,
            resolutions: connections.resolution_cache(),
            file: FileSettings::of(&config),
        }));
        release_on_failure.disarm();
        Ok(Arc::new(ServeHost {
            admin_token_digest: digest(&admin_token),
            metrics_token_digest,
            identity,
            config,
            deployments,
            metrics,
            telemetry,
            store,
            connections,
            key,
            boundary,
            sessions,
            grants,
            bound: std::sync::OnceLock::new(),
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

    /// Whether a browser page of `origin` (an `Origin` header) may use this
    /// server: its `host[:port]` is one this server answers to as a `Host`
    /// ([`ServeHost::answers_to`]), or it is the origin of `public_url`.
    /// Anything else, `null` included, is another site's page (DNS
    /// rebinding, a cross-site request with a token the browser holds).
    pub(crate) fn answers_to_origin(&self, origin: &str) -> bool {
        let Ok(url) = url::Url::parse(origin) else {
            return false;
        };
        let Some(host) = url.host_str() else {
            return false;
        };
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        if self.answers_to(&authority.to_ascii_lowercase()) {
            return true;
        }
        self.config
            .public_url
            .as_deref()
            .and_then(|public| url::Url::parse(public).ok())
            .is_some_and(|public| public.origin() == url.origin())
    }

    /// Binds the configured listener and records the address it got.
    pub async fn bind(&self) -> std::io::Result<tokio::net::TcpListener> {
        let listen = self.config.listen;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AddrInUse => std::io::Error::new(
                    e.kind(),
                    format!(
                        "{listen} is already in use (another `scout-host serve`, or another program, listens there): stop it, or set `listen` to another address ({e})"
                    ),
                ),
                std::io::ErrorKind::PermissionDenied => std::io::Error::new(
                    e.kind(),
                    format!("{listen} may not be bound by this user (a port below 1024?): set `listen` to another address ({e})"),
                ),
                _ => e,
            })?;
        let addr = listener.local_addr()?;
        let _ = self.bound.set((addr, self.config.hosts_for(addr)));
        Ok(listener)
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The trace as the admin API appends and reads it.
    pub(crate) fn trace(&self) -> crate::trace::Trace {
        crate::trace::Trace::new(self.store.clone())
    }

    /// The operator's tool reviews.
    pub(crate) fn reviews(&self) -> crate::review::Reviews {
        crate::review::Reviews::new(self.store.clone())
    }

    /// Brands' saved profiles.
    pub(crate) fn profiles(&self) -> crate::profiles::Profiles {
        crate::profiles::Profiles::new(self.store.clone())
    }

    /// The catalogue sessions are decided with now (a remote MCP server's
    /// reviewed tools included).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.boundary.catalog()
    }

    pub fn boundary(&self) -> &Arc<Boundary> {
        &self.boundary
    }

    /// What is served, and every change to it.
    pub(crate) fn deployments(&self) -> &Arc<Deployments> {
        &self.deployments
    }

    /// Every connector as served now, by server name (a remote MCP
    /// server's as its tools are listed and reviewed at this moment).
    pub fn components(&self) -> BTreeMap<String, Arc<LoadedComponent>> {
        self.deployments.components()
    }

    /// One connector as served now.
    pub fn component(&self, name: &str) -> Option<Arc<LoadedComponent>> {
        self.deployments.component(name)
    }

    /// The remote MCP server behind connector `name`, if it is one.
    pub fn remote(&self, name: &str) -> Option<&Arc<crate::remote::RemoteServer>> {
        self.deployments.remote(name)
    }

    /// Whether `token` is the admin token.
    pub(crate) fn admin_token_matches(&self, token: &str) -> bool {
        digest(token) == self.admin_token_digest
    }

    /// The `[oidc]` verifier, when the configuration has one.
    pub(crate) fn identity(&self) -> Option<&identity::OidcVerifier> {
        self.identity.as_deref()
    }

    /// The connectors as served now: their settings and what admission
    /// found of each.
    pub(crate) fn roster(&self) -> Arc<crate::deployment::Roster> {
        self.deployments.roster()
    }

    /// Connector `name`'s settings as served now.
    pub(crate) fn settings(&self, name: &str) -> Option<Arc<ConnectorConfig>> {
        self.deployments.settings(name)
    }

    /// What credential resolution decides with now.
    fn resolving(&self) -> crate::connections::Resolving {
        self.connections.resolving(self.boundary.catalog())
    }

    /// One line per configured connector, as `serve` prints them at start:
    /// its tools, where it is reached, and to whom it is served.
    pub fn connector_lines(&self) -> Vec<String> {
        self.deployments.connector_lines()
    }

    /// Applies every stored runtime change this host has not
    /// ([`Deployments::deploy_stored`]).
    pub async fn deploy_stored(&self) {
        self.deployments.deploy_stored().await;
    }

    /// Sends the spans not yet exported; called once the listener stopped.
    pub async fn flush_telemetry(&self) {
        if let Some(telemetry) = self.telemetry.clone() {
            let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
        }
    }

    /// What this host runs with, for the start banner: the store, who
    /// signs in to the admin API, and where spans go.
    pub fn setup_line(&self) -> String {
        let store = match self.config.store.backend {
            crate::config::StoreBackend::Sqlite => {
                format!(
                    "store SQLite ({}, host {})",
                    self.config.database.display(),
                    self.store.host().unwrap_or_default()
                )
            }
            crate::config::StoreBackend::Postgres => format!(
                "store PostgreSQL (host {}, lease {} s)",
                self.store.host().unwrap_or_default(),
                self.config
                    .store
                    .lease_secs
                    .unwrap_or(crate::store::DEFAULT_LEASE_SECS)
            ),
        };
        let sign_in = if self.identity.is_some() {
            "admin API: the admin token and OIDC"
        } else {
            "admin API: the admin token (OIDC off)"
        };
        let spans = if self.telemetry.is_some() {
            "OTLP span export on"
        } else {
            "OTLP span export off"
        };
        format!("{store}; {sign_in}; {spans}")
    }

    /// `/metrics` now: what is read at each scrape (the fleet's pending
    /// approvals, the store, the lease, the process) refreshed first.
    pub async fn metrics_text(&self) -> String {
        let pending = match self.approvals().all_pending().await {
            Ok(pending) => Some(pending.len()),
            Err(e) => {
                tracing::warn!(error = %e, "the store did not answer a scrape");
                None
            }
        };
        self.metrics.at_scrape(pending, self.store.lease_held());
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
        if let Err(e) = crate::store::block(self.store.check()) {
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
        self.sessions.end_streams();
    }

    /// Acts on what another host changed: caches dropped, surfaces decided
    /// afresh, sessions that host ended ended here too.
    fn apply_invalidation(self: &Arc<Self>, what: &crate::store::Invalidation) {
        use crate::store::Invalidation;
        match what {
            Invalidation::Connections => self.connections_changed_elsewhere(),
            Invalidation::Profiles => self.boundary.changed(),
            // A remote tool's effect is its review's: applied here too.
            Invalidation::Reviews => {
                self.deployments.reapply_remote_reviews();
                self.boundary.changed();
            }
            Invalidation::Connectors => self.deployments.deploy_stored_soon(),
            Invalidation::Session(id) => self.refresh_session(id),
            Invalidation::All => {
                self.deployments.reapply_remote_reviews();
                self.boundary.changed();
                self.deployments.deploy_stored_soon();
                self.connections_changed_elsewhere();
                for live in self.sessions.all() {
                    self.refresh_session(&live.session.id);
                }
            }
        }
    }

    /// The MCP endpoint of `session` for `connector`.
    pub fn endpoint(
        &self,
        session: &str,
        connector: &str,
    ) -> Option<(Arc<LiveSession>, endpoint::Endpoint)> {
        let live = self.session(session)?;
        let endpoint = live.endpoints.get(connector)?.clone();
        Some((live, endpoint))
    }

    /// Every approval a call waits for, and every decision on one (the
    /// boundary's).
    pub(crate) fn approvals(&self) -> &crate::approvals::Approvals {
        self.boundary.approvals()
    }

    /// How many calls were granted handles. A call the boundary refuses is
    /// never granted any: no handle is built, no credential resolved for
    /// it, no run started.
    pub fn handles_granted(&self) -> u64 {
        self.grants.granted()
    }

    /// Whether session `id` holds the configured folders, and may write
    /// them (the rule of [`crate::session::holdings`]), if it is open.
    pub fn folder_rights(&self, id: &str) -> Option<(bool, bool)> {
        self.session(id)
            .map(|live| crate::grant::folder_rights(&live.session))
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
        // A retired connector's call is still decided, and refused by its
        // own rule in the trace; a remote server's tool under the store's
        // review now (DESIGN D22).
        let Some(component) = self.deployments.for_call(connector, request.tool).await else {
            return Err(Denied::by(policy::Rule::NotOffered));
        };
        let granter = SessionGranter {
            grants: &self.grants,
            session: &session.session,
            registered: &session.connectors,
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
