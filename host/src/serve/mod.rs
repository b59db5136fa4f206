//! `scout-host serve` (DESIGN D8): the orchestrator's surface.
//!
//! One process holds the loaded components, the store, the policy and the
//! execution boundary (its [`crate::host::Host`], which owns every service
//! and the flows across them); this module is its adapters only, and
//! serves two things on one listener:
//! - the admin API ([`admin`]), for people and orchestrators: sessions,
//!   profiles, connections, approvals, tool reviews and the trace;
//! - MCP over streamable HTTP ([`mcp`]), one endpoint per session and
//!   connector, each answering with exactly that session's offered tools.
//!
//! Both go through [`ServeHost`] to the one `Host`, so the admin API and MCP
//! see the same sessions, and every call reaches the same
//! [`crate::boundary::Boundary`].

pub mod admin;
pub mod agent_config;
mod authority;
mod connect;
mod console;
mod drain;
mod endpoint;
pub mod host_tools;
pub mod identity;
mod in_session;
mod input_required;
mod logging;
pub mod mcp;
mod remote_content;
mod run;
mod scrape;
pub use run::{run, run_stdio, serve_http};
mod sessions;
mod shown;
mod stateless;
mod stdio;
pub mod tls;

pub use crate::config::{ConfigFileError, ConnectorConfig, ServeConfig, StartError};
use crate::host::Host;
use crate::policy::Switches;
// The configuration is the deployment's, not the HTTP server's: it lives at
// the crate root; `serve::config` stays its name here too.
pub use crate::config;
use serde_json::Value;
use sha2::{Digest, Sha256};
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
pub use crate::sessions::{HostError, OpenSession, SessionView};

/// The host `serve` serves: its sessions reached through MCP endpoints.
pub type ServedHost = Host<endpoint::Endpoint>;

/// What a listener needs beside the [`Host`] it serves: the address it
/// bound, the requests in flight, and the secrets it checks callers with.
pub struct ServeHost {
    /// The services, and the flows across them ([`crate::host`]).
    host: Arc<ServedHost>,
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
    /// Checks the listener's secrets (the admin token, the metrics token),
    /// sets up the OIDC verifier, then starts the [`Host`] ([`Host::start`]).
    /// `env` looks up the secrets the configuration names (pass
    /// [`crate::credentials::process_env`]).
    pub fn start(
        config: ServeConfig,
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
        // Set up before the host starts, so that a verifier refused leaves
        // no lease behind.
        let identity = match &config.oidc {
            Some(oidc) => Some(Arc::new(identity::OidcVerifier::new(oidc).map_err(
                |e| StartError::Identity(format!("cannot set up the key fetch: {e}")),
            )?)),
            None => None,
        };
        let host = Host::start(config, switches, env)?;
        Ok(Arc::new(ServeHost {
            host: Arc::new(host),
            admin_token_digest: digest(&admin_token),
            metrics_token_digest,
            identity,
            bound: std::sync::OnceLock::new(),
            in_flight: Default::default(),
        }))
    }

    /// The host this listener serves: its services and flows.
    pub fn host(&self) -> &Arc<ServedHost> {
        &self.host
    }

    /// The base URL MCP endpoints are announced under.
    pub(crate) fn base_url(&self) -> String {
        match (&self.host.config().public_url, self.bound.get()) {
            (None, Some((addr, _))) => format!("{}://{addr}", self.host.config().scheme()),
            _ => self.host.config().base_url(),
        }
    }

    /// Whether this server answers to `host` (a lowercased `Host` header).
    pub(crate) fn answers_to(&self, host: &str) -> bool {
        match self.bound.get() {
            Some((_, hosts)) => hosts.iter().any(|h| h == host),
            None => self.host.config().hosts().iter().any(|h| h == host),
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
        self.host
            .config()
            .public_url
            .as_deref()
            .and_then(|public| url::Url::parse(public).ok())
            .is_some_and(|public| public.origin() == url.origin())
    }

    /// Binds the configured listener and records the address it got.
    pub async fn bind(&self) -> std::io::Result<tokio::net::TcpListener> {
        let listen = self.host.config().listen;
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
        let _ = self.bound.set((addr, self.host.config().hosts_for(addr)));
        Ok(listener)
    }

    /// Whether `token` is the admin token.
    pub(crate) fn admin_token_matches(&self, token: &str) -> bool {
        digest(token) == self.admin_token_digest
    }

    /// The `[oidc]` verifier, when the configuration has one.
    pub(crate) fn identity(&self) -> Option<&identity::OidcVerifier> {
        self.identity.as_deref()
    }

    /// What this host runs with, for the start banner.
    pub fn setup_line(&self) -> String {
        self.host.setup_line(self.identity.is_some())
    }

    /// The MCP endpoint of `session` for `connector`.
    pub fn endpoint(
        &self,
        session: &str,
        connector: &str,
    ) -> Option<(Arc<LiveSession>, endpoint::Endpoint)> {
        let live = self.host.session(session)?;
        let endpoint = live.endpoints.get(connector)?.clone();
        Some((live, endpoint))
    }
}
