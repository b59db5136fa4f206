//! What this host serves, and every change to it: one owner for the
//! loaded components (a remote MCP server's as its tools are listed and
//! reviewed now), the roster of their settings, the components loaded for
//! single sessions, and the runtime that compiles a connector added or
//! upgraded while the fleet runs.
//!
//! Every change goes through here, so that the component, the roster and
//! the boundary's catalogue change together: a session decides afresh at
//! its next request, while a call in flight finishes on the version it
//! started with. Sessions are not known here: where a change concerns
//! them, a method takes what it needs of them (the names the open sessions
//! hold) or returns what changed, and the composition root walks them.

mod remote;
mod runtime_change;
mod session_components;

pub(crate) use session_components::Pinned;

use crate::artifact::{ArtifactError, ArtifactRef, RegistryOptions};
use crate::boundary::Boundary;
use crate::config::{ConnectorConfig, ServeConfig};
use crate::credentials::{ResolutionCache, process_env};
use crate::deployment::{Deployment, Roster, SharedRoster};
use crate::remote::RemoteServer;
use crate::runtime::{LoadedComponent, Runtime};
use crate::store::{Origin, Store, StoreError, StoredConnector};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

/// The remote MCP servers among the connectors, by connector name: shared
/// with the grants (a call's upstream session), and changed here when the
/// admin API adds, replaces or retires one.
pub(crate) type SharedRemote = Arc<RwLock<BTreeMap<String, Arc<RemoteServer>>>>;

/// Why a runtime change was refused; the admin API maps each onto a status.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum DeployError {
    /// The settings or the artifact cannot be served (422): what to fix.
    #[error("{0}")]
    Refused(String),
    /// The configuration file owns the connector (409).
    #[error("{0}")]
    FileOwned(String),
    /// Another kind of connector has the name (409): a session component
    /// and a connector every session may have never share one.
    #[error("{0}")]
    NameTaken(String),
    #[error("{0}")]
    NotFound(String),
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
}

/// Why a connector's artifact could not be loaded and admitted here.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LoadError {
    /// The settings do not hold (what to fix).
    #[error("{0}")]
    Settings(String),
    /// The stored settings are not a connector's settings.
    #[error("stored settings: {0}")]
    StoredSettings(#[source] serde_json::Error),
    /// The reference, or the signers' keys, are unusable.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// Pulling or verifying the artifact failed.
    #[error(transparent)]
    Pull(#[from] crate::artifact::PullError),
    /// The component cannot be served (its imports, manifest or policy).
    #[error(transparent)]
    Admission(#[from] crate::deployment::Refused),
    /// The task loading it stopped (a panic, or the runtime shutting down).
    #[error("loading the component stopped: {0}")]
    Stopped(#[source] tokio::task::JoinError),
}

/// Why the components a session named cannot be loaded for it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SessionComponentError {
    /// A selection names what the session could not be given (422).
    #[error("{0}")]
    NotSelectable(String),
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
}

/// Who made a change through the admin API: the subject the store records
/// as having made it, and the actor and origin of the request, for the
/// trace row.
pub(crate) struct ChangedBy<'a> {
    pub subject: &'a str,
    pub actor: Option<Value>,
    pub origin: Origin,
}

/// What the configuration file says that a runtime change is checked
/// against: the connectors it owns, and how artifacts are pulled and
/// verified.
#[derive(Clone, Default)]
pub(crate) struct FileSettings {
    /// The configuration file's connectors: never changed through the API.
    pub connectors: BTreeMap<String, ConnectorConfig>,
    /// Every connector's component must be a signed OCI artifact.
    pub require_signature: bool,
    /// The signers' public keys.
    pub signature_keys: Vec<PathBuf>,
    /// How each OCI registry is reached.
    pub registries: RegistryOptions,
    /// The brand whose connection lists a remote server's tools: a remote
    /// server taking a credential is refused without one.
    pub deployment_owner_brand: Option<String>,
}

impl FileSettings {
    pub(crate) fn of(config: &ServeConfig) -> FileSettings {
        FileSettings {
            connectors: config.connectors.clone(),
            require_signature: config.require_signature,
            signature_keys: config.signature_keys.clone(),
            registries: config.registry_options(),
            deployment_owner_brand: config.deployment_owner_brand.clone(),
        }
    }
}

/// What the deployments are built from, once, at the host's start.
pub(crate) struct DeploymentsConfig {
    pub store: Arc<dyn Store>,
    /// Whose catalogue each change replaces a connector's entry in.
    pub boundary: Arc<Boundary>,
    /// Compiles a connector added or upgraded at runtime.
    pub runtime: Runtime,
    /// Every connector loaded at start, by server name.
    pub components: BTreeMap<String, Arc<LoadedComponent>>,
    /// The remote MCP servers among them (shared with the grants).
    pub remote: SharedRemote,
    /// The roster as loaded at start (shared with the grants and the
    /// connections, who read it as it is at each moment).
    pub roster: SharedRoster,
    /// Connections as they last resolved: dropped at each change of what
    /// is served.
    pub resolutions: Arc<ResolutionCache>,
    pub file: FileSettings,
}

/// What this host serves now, and the one path that changes it.
pub(crate) struct Deployments {
    /// Every connector as served now; a remote MCP server's entry is
    /// replaced whenever its listed or reviewed tools change.
    components: RwLock<BTreeMap<String, Arc<LoadedComponent>>>,
    /// The remote MCP servers among them ([`crate::remote`]), changed at
    /// runtime with the component they serve.
    remote: SharedRemote,
    /// Told whenever a remote server is added or replaced at runtime, so
    /// that its tools are listed (the host's discovery waits on it).
    remote_added: Arc<tokio::sync::Notify>,
    /// Each connector's settings and what admission found of it (a
    /// platform server, not offered), replaced whole at a runtime change.
    roster: SharedRoster,
    /// Compiles a connector added or upgraded at runtime.
    runtime: Runtime,
    /// One runtime change at a time on this host.
    deploying: tokio::sync::Mutex<()>,
    /// Components loaded for the sessions that named them (issue 39), by
    /// connector name: the digest served. Served to no other session, and
    /// dropped once no session here holds one.
    session_only: RwLock<BTreeMap<String, String>>,
    /// Session components being loaded for a session not yet open: not
    /// dropped meanwhile.
    session_pins: Mutex<HashMap<String, usize>>,
    store: Arc<dyn Store>,
    boundary: Arc<Boundary>,
    resolutions: Arc<ResolutionCache>,
    file: FileSettings,
}

/// A connector loaded and admitted, ready to be served.
struct Loaded {
    settings: ConnectorConfig,
    deployment: Deployment,
    digest: String,
}

/// A connector name as the API takes it: what a component may be named.
fn check_name(name: &str) -> Result<(), DeployError> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if fine {
        crate::policy::names::check_connector_name(name).map_err(DeployError::Refused)
    } else {
        Err(DeployError::Refused(format!(
            "`{name}` is not a connector name: 1 to 64 of a-z, 0-9, `_` and `-`, as the component names itself"
        )))
    }
}

impl Deployments {
    pub(crate) fn new(config: DeploymentsConfig) -> Deployments {
        let DeploymentsConfig {
            store,
            boundary,
            runtime,
            components,
            remote,
            roster,
            resolutions,
            file,
        } = config;
        Deployments {
            components: RwLock::new(components),
            remote,
            remote_added: Default::default(),
            roster,
            runtime,
            deploying: Default::default(),
            session_only: Default::default(),
            session_pins: Default::default(),
            store,
            boundary,
            resolutions,
            file,
        }
    }

    /// Every connector as served now, by server name (a remote MCP
    /// server's as its tools are listed and reviewed at this moment).
    pub(crate) fn components(&self) -> BTreeMap<String, Arc<LoadedComponent>> {
        self.components.read().clone()
    }

    /// One connector as served now.
    pub(crate) fn component(&self, name: &str) -> Option<Arc<LoadedComponent>> {
        self.components.read().get(name).cloned()
    }

    /// Whether a component is served under `name` now.
    pub(crate) fn serves(&self, name: &str) -> bool {
        self.components.read().contains_key(name)
    }

    /// The remote MCP server behind connector `name`, if it is one.
    pub(crate) fn remote(&self, name: &str) -> Option<Arc<RemoteServer>> {
        self.remote.read().get(name).cloned()
    }

    /// The remote MCP servers as served now, by connector name.
    pub(crate) fn remote_servers(&self) -> BTreeMap<String, Arc<RemoteServer>> {
        self.remote.read().clone()
    }

    /// Told whenever a remote server is added or replaced at runtime: its
    /// tools are to be listed.
    pub(crate) fn remote_added(&self) -> Arc<tokio::sync::Notify> {
        self.remote_added.clone()
    }

    /// The connectors as served now: their settings and what admission
    /// found of each.
    pub(crate) fn roster(&self) -> Arc<Roster> {
        self.roster.read().clone()
    }

    /// Connector `name`'s settings as served now.
    pub(crate) fn settings(&self, name: &str) -> Option<Arc<ConnectorConfig>> {
        self.roster.read().settings.get(name).cloned()
    }

    /// Connector `name` as a call of its `tool` is decided with now: the
    /// component served (a retired connector's as it was last served, so
    /// that its call is still decided, and refused by its own rule in the
    /// trace), a remote server's under the store's review now (DESIGN
    /// D22). `None` where nothing was ever served under the name.
    pub(crate) async fn for_call(&self, name: &str, tool: &str) -> Option<Arc<LoadedComponent>> {
        let served = self
            .component(name)
            .or_else(|| self.roster().retired.get(name).cloned())?;
        Some(self.remote_for_call(name, tool, served).await)
    }

    /// Ends session `id`'s upstream sessions with every remote server.
    pub(crate) fn end_remote_sessions(&self, id: &str) {
        for server in self.remote_servers().values() {
            server.end(id);
        }
    }

    /// One line per configured connector, as `serve` prints them at start:
    /// its tools, where it is reached, and to whom it is served.
    pub(crate) fn connector_lines(&self) -> Vec<String> {
        let roster = self.roster();
        roster
            .settings
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
                let served = if let Some(var) = roster.not_offered.get(name) {
                    format!("not offered: {var} is not set")
                } else if roster.platform.contains(name) {
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

    fn refuse_file_owned(&self, name: &str) -> Result<(), DeployError> {
        if self.file.connectors.contains_key(name) {
            return Err(DeployError::FileOwned(format!(
                "`{name}` is configured in the host's file, which owns it: change it there (and restart), or give a connector added through the API another name"
            )));
        }
        Ok(())
    }

    /// Pulls `named` (resolving a tag to its digest now), verifies its
    /// signature where one is required, and loads and admits it under the
    /// catalogue in use.
    async fn load_artifact(
        &self,
        name: &str,
        mut settings: ConnectorConfig,
        named: &ArtifactRef,
    ) -> Result<Loaded, LoadError> {
        let trust = if self.file.require_signature || settings.require_signature {
            Some(crate::artifact::signature::TrustedKeys::load(
                &self.file.signature_keys,
            )?)
        } else {
            None
        };
        let pulled = crate::artifact::pull_within(
            named,
            &self.file.registries,
            &crate::artifact::ArtifactCache::default_location(),
            trust.as_ref(),
        )
        .await?;
        settings.component = pulled.path;
        settings.artifact_digest = Some(pulled.digest.clone());
        let runtime = self.runtime.clone();
        let store = self.store.clone();
        // Admitted against the seed's entry, as at start: never against the
        // version served now (its narrowing, or a non-seed connector's
        // conservative spec, is not what a new version must agree with).
        let catalog = (*self.boundary.catalog()).clone().with_seed_entry(name);
        let name = name.to_string();
        let digest = pulled.digest;
        tokio::task::spawn_blocking(move || {
            let mut deployment = Deployment {
                catalog,
                ..Default::default()
            };
            deployment.add(&runtime, &name, &settings, &process_env, store.as_ref())?;
            Ok(Loaded {
                settings,
                deployment,
                digest,
            })
        })
        .await
        .map_err(LoadError::Stopped)?
    }

    /// One trace row, under no session, for a change of the deployment,
    /// with the actor and origin of the admin API request that made it.
    fn record_change(
        &self,
        stored: &StoredConnector,
        rule: crate::trace::Deploy,
        detail: Value,
        by: &ChangedBy<'_>,
    ) {
        let event = crate::trace::deployed(
            &stored.name,
            rule,
            detail,
            by.actor.clone(),
            by.origin.clone(),
        );
        if let Err(e) = crate::store::block(self.store.record(&event)) {
            tracing::error!(connector = %stored.name, error = %e, "cannot record a change of the deployment");
        }
    }
}

#[cfg(test)]
mod tests;
