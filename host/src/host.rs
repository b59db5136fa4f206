//! The composition root: [`Host`] is built once by [`Host::start`] from
//! each service's constructor and holds them all (what is served, the
//! sessions, the connections, the grants, the boundary with its
//! approvals, the trace), so that no service reaches another. A flow that
//! spans services (ending a session, a connection change reaching open
//! sessions, an invalidation from another host) is a short method here
//! over the services' narrow APIs. `serve/` is its adapter: it makes the
//! MCP endpoints a session is reached through (the `E` of `Host<E>`) and
//! answers HTTP; nothing here knows of either.

mod connections;
mod lease;
pub(crate) mod policies;
mod remote;
mod remote_content;
mod sessions;
mod start;
#[cfg(test)]
mod tests;

use lease::ReleaseOnFailure;
pub use sessions::Reach;

use crate::boundary::{Boundary, CallRequest, Denied, Executed};
use crate::config::{ConnectorConfig, ServeConfig};
use crate::connections::Connections;
use crate::deployments::Deployments;
use crate::grant::{Grants, SessionGranter};
use crate::policy::{self, Catalog};
use crate::runtime::LoadedComponent;
use crate::session::holdings::HoldingsConfig;
use crate::sessions::{Live, Sessions};
use crate::store::{Invalidation, Store};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Everything a host holds: the services, built once at start, and what
/// they were built with.
pub struct Host<E> {
    config: ServeConfig,
    /// What is served, and every change to it ([`crate::deployments`]).
    deployments: Arc<Deployments>,
    /// Handed to the services at start, and read for the lease and the
    /// readiness probe; no flow here reads or writes a row through it.
    store: Arc<dyn Store>,
    /// What `/metrics` shows.
    metrics: Arc<crate::metrics::Metrics>,
    /// Span export, when `OTEL_EXPORTER_OTLP_*` sets an endpoint.
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    /// Brands' connections and how they resolve now ([`crate::connections`]).
    connections: Connections,
    /// The store key: connections are sealed with it, and the OAuth state
    /// a connect flow round-trips.
    key: [u8; 32],
    boundary: Arc<Boundary>,
    /// The sessions held here ([`crate::sessions`]).
    sessions: Sessions<E>,
    /// What an authorized call is given: its handles, each configured once
    /// ([`crate::grant`]).
    grants: Grants,
    /// The operator's own roles (`[roles.NAME]`), checked at start.
    operator_roles: Arc<policy::operator_roles::OperatorRoles>,
    /// The operators' policies this host applies, the file's and the
    /// fleet's ([`policies`]).
    policies: Arc<policies::FleetPolicies>,
}

impl<E> Host<E> {
    pub fn config(&self) -> &ServeConfig {
        &self.config
    }

    /// The store key (what connections and a connect flow's state are
    /// sealed with).
    pub(crate) fn key(&self) -> &[u8; 32] {
        &self.key
    }

    /// The operators' policies this host applies, and every change to them.
    pub(crate) fn policies(&self) -> &Arc<policies::FleetPolicies> {
        &self.policies
    }

    /// The store the services were built over, for the tests and tools
    /// that read it as a whole; the flows here go through the services.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn boundary(&self) -> &Arc<Boundary> {
        &self.boundary
    }

    /// What is served, and every change to it.
    pub(crate) fn deployments(&self) -> &Arc<Deployments> {
        &self.deployments
    }

    /// The sessions held here, and the fleet's as the store records them.
    pub(crate) fn sessions(&self) -> &Sessions<E> {
        &self.sessions
    }

    /// What an authorized call is given.
    pub(crate) fn grants(&self) -> &Grants {
        &self.grants
    }

    /// The operator's own roles (`[roles.NAME]`).
    pub fn operator_roles(&self) -> &Arc<policy::operator_roles::OperatorRoles> {
        &self.operator_roles
    }

    /// Every approval a call waits for, and every decision on one (the
    /// boundary's).
    pub(crate) fn approvals(&self) -> &crate::approvals::Approvals {
        self.boundary.approvals()
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

    /// Span export, when configured.
    pub(crate) fn telemetry(&self) -> Option<&Arc<crate::telemetry::Telemetry>> {
        self.telemetry.as_ref()
    }

    /// The catalogue sessions are decided with now (a remote MCP server's
    /// reviewed tools included).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.boundary.catalog()
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
    pub fn remote(&self, name: &str) -> Option<Arc<crate::remote::RemoteServer>> {
        self.deployments.remote(name)
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
    pub(crate) fn resolving(&self) -> crate::connections::Resolving {
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
    /// signs in to the admin API (`oidc`: whether the listener verifies
    /// OIDC tokens), and where spans go.
    pub fn setup_line(&self, oidc: bool) -> String {
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
        let sign_in = if oidc {
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

    /// What `/metrics` shows, for the parts of the host that count.
    pub(crate) fn metrics(&self) -> &Arc<crate::metrics::Metrics> {
        &self.metrics
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

    /// Whether the drain started.
    pub fn is_shutting_down(&self) -> bool {
        self.boundary.is_shutting_down()
    }

    /// Ends every session's MCP event streams (at the end of a drain).
    pub(crate) fn end_streams(&self) {
        self.sessions.end_streams();
    }

    /// Acts on what another host changed, each change taken in by the
    /// service that owns it: caches dropped, surfaces decided afresh,
    /// sessions that host ended ended here too.
    pub(crate) fn apply_invalidation(&self, what: &Invalidation) {
        match what {
            Invalidation::Connections => self.connections_changed_elsewhere(),
            Invalidation::Profiles => self.boundary.changed(),
            // A remote tool's effect is its review's: applied here too.
            Invalidation::Reviews => {
                self.deployments.reapply_remote_reviews();
                self.boundary.changed();
            }
            Invalidation::Connectors => self.deployments.deploy_stored_soon(),
            Invalidation::Policies => self.policies.apply_stored_soon(),
            Invalidation::Session(id) => self.refresh_session(id),
            Invalidation::All => {
                self.deployments.reapply_remote_reviews();
                self.boundary.changed();
                self.deployments.deploy_stored_soon();
                self.policies.apply_stored_soon();
                self.connections_changed_elsewhere();
                for live in self.sessions.all() {
                    self.refresh_session(&live.session.id);
                }
            }
        }
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
        session: &Live<E>,
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

impl<E: Send + Sync + 'static> Host<E> {
    /// Follows what the other hosts change (the store's invalidations,
    /// where it has any), applying each here until the host is dropped.
    pub fn follow_invalidations(self: &Arc<Self>) -> Option<tokio::task::JoinHandle<()>> {
        let mut changes = self.store.invalidations()?;
        let host = Arc::downgrade(self);
        Some(tokio::spawn(async move {
            loop {
                let what = match changes.recv().await {
                    Ok(what) => what,
                    // Missed some: act as if everything changed.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Invalidation::All,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let Some(host) = host.upgrade() else { return };
                // The store's reads block: off the async worker.
                let _ = tokio::task::spawn_blocking(move || host.apply_invalidation(&what)).await;
            }
        }))
    }
}

/// What a connector's configuration says of a session's holdings.
pub(crate) fn holdings_config(settings: &ConnectorConfig) -> HoldingsConfig<'_> {
    HoldingsConfig {
        folders: &settings.folders,
        person_allowance: settings.person_allowance.as_ref(),
    }
}
