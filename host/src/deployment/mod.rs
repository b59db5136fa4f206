//! One `Deployment`: the connectors a host serves, each loaded and checked
//! (its component or remote server, its origins, destinations and headers),
//! admitted under the seed's catalogue and narrowed by the operator, with
//! what the deployment does not offer. `serve` and `audit` build it with the
//! same code (issue 33 item 5), so what the audit reports is what a host
//! serves, and admission is written once.

mod artifacts;
pub use artifacts::{ResolveError, resolve_artifacts, use_cached_artifacts};

use crate::capabilities::http::HttpCapability;
use crate::config::{ConnectorConfig, ServeConfig};
use crate::credentials::ResolverConfig;
use crate::policy::{self, Catalog};
use crate::runtime::{LoadedComponent, Runtime};
use crate::store::ReviewStore;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The connectors, and the catalogue they are served under.
#[derive(Default)]
pub struct Deployment {
    pub catalog: Catalog,
    pub components: BTreeMap<String, Arc<LoadedComponent>>,
    /// The components that serve a platform server (the content writer,
    /// the SEO brief tools): offered where the policy gives their tools,
    /// with no credential of their own.
    pub platform: BTreeSet<String>,
    /// Loaded connectors the deployment does not offer, with the variable
    /// that is unset.
    pub not_offered: BTreeMap<String, String>,
    /// The remote MCP servers among the connectors ([`crate::remote`]).
    pub remote: BTreeMap<String, Arc<crate::remote::RemoteServer>>,
    /// Connectors whose deployment owner's credential is in the host's
    /// environment, by the variable holding it.
    pub host_env: BTreeMap<String, String>,
    /// Connectors reached with no credential (`credential = "none"`).
    pub public: BTreeSet<String>,
}

/// What a running host serves now besides the loaded components: the
/// connectors' settings and what admission found of each. Replaced whole
/// whenever a connector is added, upgraded or retired at runtime, so a
/// reader sees one deployment, never half of a change.
#[derive(Clone, Default)]
pub struct Roster {
    /// Every served connector's settings: the file's, and those the admin
    /// API stored (`PUT /v1/connectors/{name}`).
    pub settings: BTreeMap<String, Arc<ConnectorConfig>>,
    pub platform: BTreeSet<String>,
    pub not_offered: BTreeMap<String, String>,
    /// What credential resolution needs of the deployment.
    pub resolver: Arc<ResolverConfig>,
    /// The connectors the admin API changed, as this host applied them.
    pub stored: BTreeMap<String, crate::store::StoredConnector>,
    /// Connectors retired at runtime, as they were last served: a call of
    /// one is still decided (and refused by its own rule, traced).
    pub retired: BTreeMap<String, Arc<LoadedComponent>>,
    /// What every HTTP handle of each connector shares, prepared once.
    pub http: BTreeMap<String, Arc<HttpPrepared>>,
}

/// What every HTTP handle of one connector shares, worked out once when
/// the connector enters the roster (Spin's `prepare`, for the `http`
/// capability): per call, only the credential as it resolves then is
/// added.
#[derive(Debug, Clone)]
pub struct HttpPrepared {
    /// How the credential is injected; `None` for a public API.
    pub scheme: Option<crate::CredentialScheme>,
    /// By destination (`None`: the connector's own origin): the origin,
    /// and whether it receives the connector's credential.
    pub origins: BTreeMap<Option<String>, (String, bool)>,
    /// The deployment's secret headers with their values from the
    /// environment; `None` when one is unset (the connector gets no handle).
    pub secret_headers: Option<Vec<(String, String)>>,
    pub allow_private_network: bool,
    pub strip_headers: Vec<String>,
    /// A remote MCP server's answer may take its whole call deadline.
    pub remote_deadline: Option<std::time::Duration>,
}

impl HttpPrepared {
    /// Prepared from `settings`, checked when they were read; `env` gives
    /// the deployment headers' values.
    pub fn of(settings: &ConnectorConfig, env: &dyn Fn(&str) -> Option<String>) -> HttpPrepared {
        let mut origins = BTreeMap::new();
        if let Some(origin) = &settings.origin {
            origins.insert(None, (origin.clone(), true));
        }
        for (dest, origin) in &settings.origins {
            if let Ok(sends) = origin.sends_credential() {
                origins.insert(Some(dest.clone()), (origin.origin().to_string(), sends));
            }
        }
        HttpPrepared {
            scheme: settings.scheme().ok().flatten(),
            origins,
            secret_headers: settings
                .deployment_headers
                .iter()
                .map(|(header, var)| env(var).map(|value| (header.clone(), value)))
                .collect(),
            allow_private_network: settings.allow_private_network,
            strip_headers: settings.strip_headers.clone(),
            remote_deadline: settings
                .is_remote()
                .then(|| settings.call_timeout() + crate::remote::STREAM_MARGIN),
        }
    }
}

/// The roster a host and its credential resolution share.
pub type SharedRoster = Arc<parking_lot::RwLock<Arc<Roster>>>;

impl Roster {
    /// Connector `name` served from now on as `settings` and as `added`
    /// (a deployment holding it alone) admitted it.
    pub fn with_connector(
        &self,
        name: &str,
        settings: ConnectorConfig,
        added: &Deployment,
    ) -> Roster {
        let mut next = self.clone();
        next.http.insert(
            name.to_string(),
            Arc::new(HttpPrepared::of(
                &settings,
                &crate::credentials::process_env,
            )),
        );
        next.settings.insert(name.to_string(), Arc::new(settings));
        next.retired.remove(name);
        set_membership(&mut next.platform, name, added.platform.contains(name));
        match added.not_offered.get(name) {
            Some(var) => next.not_offered.insert(name.to_string(), var.clone()),
            None => next.not_offered.remove(name),
        };
        let mut resolver = (*self.resolver).clone();
        match added.host_env.get(name) {
            Some(var) => resolver.host_env.insert(name.to_string(), var.clone()),
            None => resolver.host_env.remove(name),
        };
        set_membership(&mut resolver.public, name, added.public.contains(name));
        next.resolver = Arc::new(resolver);
        next
    }

    /// Connector `name` retired: no longer served; `last` is what it was.
    pub fn without_connector(&self, name: &str, last: Option<Arc<LoadedComponent>>) -> Roster {
        let mut next = self.clone();
        next.settings.remove(name);
        next.http.remove(name);
        next.platform.remove(name);
        next.not_offered.remove(name);
        if let Some(last) = last {
            next.retired.insert(name.to_string(), last);
        }
        next
    }
}

fn set_membership(set: &mut BTreeSet<String>, name: &str, member: bool) {
    if member {
        set.insert(name.to_string());
    } else {
        set.remove(name);
    }
}

/// Why a connector cannot be served; it names the connector and what to fix.
#[derive(Debug, thiserror::Error)]
#[error("connector `{name}`: {message}")]
pub struct Refused {
    pub name: String,
    pub message: String,
}

impl Deployment {
    /// Nothing yet, under the seed's catalogue.
    pub fn empty() -> Deployment {
        Deployment {
            catalog: Catalog::seed(),
            ..Default::default()
        }
    }

    /// Every connector `config` names, loaded with `runtime` and admitted;
    /// a remote server's tools as `reviews` has them reviewed now (none
    /// until it lists them); `env` says which required variables are set.
    pub fn from_config(
        runtime: &Runtime,
        config: &ServeConfig,
        env: &dyn Fn(&str) -> Option<String>,
        reviews: &dyn ReviewStore,
    ) -> Result<Deployment, Refused> {
        let mut d = Deployment::empty();
        // Every surface first: the compiles start once all are loaded.
        let _compiles_wait = runtime.hold_compiles();
        for (name, connector) in &config.connectors {
            d.add(runtime, name, connector, env, reviews)?;
        }
        Ok(d)
    }

    /// Loads connector `name` as `connector` configures it with `runtime`,
    /// checks it (its origins, destinations and headers) and admits it
    /// under the catalogue: the one path for a connector of the file and
    /// one added at runtime (`PUT /v1/connectors/{name}`).
    pub fn add(
        &mut self,
        runtime: &Runtime,
        name: &str,
        connector: &ConnectorConfig,
        env: &dyn Fn(&str) -> Option<String>,
        reviews: &dyn ReviewStore,
    ) -> Result<(), Refused> {
        let fail = |message: String| Refused {
            name: name.to_string(),
            message,
        };
        crate::policy::names::check_connector_name(name).map_err(fail)?;
        let served = if let Some(url) = &connector.mcp {
            let server = crate::remote::RemoteServer::new(name, url, connector.call_timeout())
                .map_err(|e| fail(e.to_string()))?
                .over_legacy_sse(connector.legacy_sse())
                .idle_after(connector.upstream_idle());
            // No tool until the server lists them and an operator reviews each.
            let served = server.snapshot(reviews);
            let spec = remote_spec(&served, connector.tools.as_deref())
                .map_err(|e| fail(e.to_string()))?;
            self.catalog = std::mem::take(&mut self.catalog).with_spec(spec);
            self.remote.insert(name.to_string(), Arc::new(server));
            served
        } else {
            if let (Some(artifact), None) = (&connector.artifact, &connector.artifact_digest) {
                return Err(fail(format!(
                    "{artifact} is an OCI artifact the artifact cache does not hold: `scout-host pull` it (the cache is shared), or audit the running host (`GET /v1/audit`)"
                )));
            }
            if !connector.component.is_file() {
                return Err(fail(format!(
                    "no component at {}: build it with `cargo build --release --target wasm32-wasip2` in the connector's crate (or `scout-host new {name}` to start one) and point `component` at the .wasm",
                    connector.component.display()
                )));
            }
            let component = runtime
                .load_file(&connector.component)
                .map_err(|e| fail(format!("{}: {e}", connector.component.display())))?;
            if component.name() != name {
                return Err(fail(format!(
                    "{} is the `{}` connector",
                    connector.component.display(),
                    component.name()
                )));
            }
            // The seed's connectors must agree with the catalogue; any other
            // is served on what it declares, conservatively; the operator
            // may narrow either.
            // The content writer and the SEO brief tools are platform
            // servers: the policy gives their tools by its own rules.
            match self.catalog.admit_platform(&component.info().manifest) {
                Some(admitted) => {
                    admitted.map_err(|e| fail(e.to_string()))?;
                    if connector.tools.is_some() {
                        return Err(fail("`tools` narrows a connector; the seed's platform tools are given by the policy's rules".into()));
                    }
                    self.platform.insert(name.to_string());
                }
                None => {
                    let spec = self
                        .catalog
                        .admit(&component.info().manifest)
                        .and_then(|spec| {
                            spec.narrowed(connector.tools.as_deref(), connector.grants)
                        })
                        .map_err(|e| fail(e.to_string()))?;
                    self.catalog = std::mem::take(&mut self.catalog).with_spec(spec);
                }
            }
            // Checks the origins now rather than at the first call.
            // An origin is needed where a route goes to the connector's own
            // origin (the content writer reads only Shopify, as a peer).
            let own_routes = component
                .info()
                .manifest
                .tools
                .iter()
                .any(|t| t.routes.iter().any(|r| r.destination.is_none()));
            let imports_http = component.imports_interface("http") && own_routes;
            match (&connector.origin, imports_http) {
                (Some(origin), _) => {
                    HttpCapability::new(
                        crate::HttpConfig::new(origin.clone())
                            .allow_private_network(connector.allow_private_network),
                    )
                    .map_err(|e| fail(format!("origin: {e}")))?;
                }
                (None, true) => {
                    return Err(fail(
                        "the component imports `http`: give the `origin` its handle reaches".into(),
                    ));
                }
                (None, false) => {}
            }
            let peers: BTreeSet<&str> = component
                .info()
                .manifest
                .tools
                .iter()
                .flat_map(|t| t.reads_from.iter().map(String::as_str))
                .collect();
            let named: BTreeSet<&str> = component
                .info()
                .manifest
                .tools
                .iter()
                .flat_map(|t| t.routes.iter().filter_map(|r| r.destination.as_deref()))
                .filter(|d| !peers.contains(d))
                .collect();
            for (dest, origin) in &connector.origins {
                if peers.contains(dest.as_str()) {
                    return Err(fail(format!(
                        "`origins.{dest}`: `{dest}` is a connector a joint tool reads, reached with its own origin"
                    )));
                }
                origin
                    .sends_credential()
                    .map_err(|e| fail(format!("origins.{dest}: {e}")))?;
                HttpCapability::new(
                    crate::HttpConfig::new(origin.origin().to_string())
                        .allow_private_network(connector.allow_private_network),
                )
                .map_err(|e| fail(format!("origins.{dest}: {e}")))?;
            }
            if let Some(missing) = named.iter().find(|d| !connector.origins.contains_key(**d)) {
                return Err(fail(format!(
                    "its routes name destination `{missing}`: give its origin as `origins.{missing}`"
                )));
            }
            for header in connector.deployment_headers.keys() {
                if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
                    return Err(fail(format!(
                        "`deployment_headers`: `{header}` is not a header name"
                    )));
                }
            }
            component
        };
        let seed_offer = policy::catalog::offered_only_with(name).map(str::to_string);
        let required: Vec<String> = connector
            .requires_env
            .iter()
            .chain(connector.deployment_headers.values())
            .cloned()
            .chain(seed_offer)
            .collect();
        if let Some(var) = required.iter().find(|v| env(v).is_none()) {
            tracing::warn!(connector = %name, env = %var, "not offered: the deployment does not set {var}");
            self.not_offered.insert(name.to_string(), var.clone());
        }
        if let Some(var) = &connector.host_env {
            self.host_env.insert(name.to_string(), var.clone());
        }
        if connector.is_public() {
            self.public.insert(name.to_string());
        }
        self.components.insert(name.to_string(), Arc::new(served));
        Ok(())
    }

    /// Admits `component` as `serve` would with no configuration narrowing
    /// it beyond `tools` and `grants`: a platform server by the policy's
    /// rules, any other under the catalogue's conservative defaults.
    pub fn admit(
        &mut self,
        component: LoadedComponent,
        tools: Option<&[String]>,
        grants: bool,
    ) -> Result<(), Refused> {
        let name = component.name().to_string();
        let fail = |message: String| Refused {
            name: name.clone(),
            message,
        };
        crate::policy::names::check_connector_name(&name).map_err(fail)?;
        match self.catalog.admit_platform(&component.info().manifest) {
            Some(admitted) => {
                admitted.map_err(|e| fail(e.to_string()))?;
                self.platform.insert(name.clone());
            }
            None => {
                let spec = self
                    .catalog
                    .admit(&component.info().manifest)
                    .and_then(|spec| spec.narrowed(tools, grants))
                    .map_err(|e| fail(e.to_string()))?;
                self.catalog = std::mem::take(&mut self.catalog).with_spec(spec);
            }
        }
        self.components.insert(name, Arc::new(component));
        Ok(())
    }

    /// The connectors a session could be served: loaded, offered, not a
    /// platform server.
    pub fn served(&self) -> BTreeSet<String> {
        self.components
            .keys()
            .filter(|c| !self.not_offered.contains_key(*c) && !self.platform.contains(*c))
            .cloned()
            .collect()
    }
}

/// The policy a remote connector's tools are served under, as they are
/// listed and reviewed now. Admitted against the seed's data (the catalogue
/// in use already holds this connector's previous tools):
/// - a seed connector the catalogue lists tools for (Cloudflare's `docs`,
///   `search`, `execute`) keeps the seed's spec (gates, registration,
///   grantability), with only those of its tools the server lists, each
///   with the effect the seed gives it; a listed tool the seed does not
///   name, or one reviewed with another effect, is not served;
/// - any other is admitted as a component is, conservatively (the seed's
///   Contentsquare: every tool, nothing grantable); no remote tool is
///   grantable.
///
/// The operator's `tools` keeps only the names it lists (of those listed
/// now: a name the server does not list is simply absent).
pub(crate) fn remote_spec(
    served: &LoadedComponent,
    keep: Option<&[String]>,
) -> Result<policy::ConnectorSpec, policy::catalog::AdmitError> {
    let seed = Catalog::seed();
    let manifest = &served.info().manifest;
    let mut spec = match seed.connector(&manifest.connector) {
        Some(known) if !known.reads.is_empty() || !known.writes.is_empty() => {
            let listed = |effect: scout_manifest::Effect| -> BTreeSet<String> {
                manifest
                    .tools
                    .iter()
                    .filter(|t| t.effect == effect)
                    .map(|t| manifest.wire_name(&t.function))
                    .collect()
            };
            let (reads, writes) = (
                listed(scout_manifest::Effect::Read),
                listed(scout_manifest::Effect::Write),
            );
            let mut spec = known.clone();
            spec.reads.retain(|t| reads.contains(t));
            spec.writes.retain(|w| writes.contains(&w.name));
            let grantable = spec.grantable.clone();
            spec.grantable = grantable
                .into_iter()
                .filter(|t| spec.reads.contains(t))
                .collect();
            return Ok(narrow_remote(spec, keep));
        }
        _ => seed.admit(manifest)?,
    };
    spec.grantable.clear();
    spec = narrow_remote(spec, keep);
    Ok(spec)
}

fn narrow_remote(
    mut spec: policy::ConnectorSpec,
    keep: Option<&[String]>,
) -> policy::ConnectorSpec {
    if let Some(keep) = keep {
        spec.reads.retain(|t| keep.contains(t));
        spec.writes.retain(|w| keep.contains(&w.name));
        spec.grantable.retain(|t| keep.contains(t));
    }
    spec
}
