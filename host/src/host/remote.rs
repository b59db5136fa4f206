//! Where what is served ([`crate::deployments`]) meets the other services:
//! remote MCP servers listed while the host runs, with the deployment
//! owner's credential from the grants; and the components loaded for
//! single sessions, dropped once no session held here names them.

use super::Host;
use crate::capabilities::http::HttpCapability;
use crate::deployments::{Pinned, SessionComponentError};
use crate::grant::Obtained;
use crate::sessions::HostError;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

impl From<SessionComponentError> for HostError {
    fn from(e: SessionComponentError) -> HostError {
        match e {
            SessionComponentError::NotSelectable(why) => HostError::NotSelectable(why),
            SessionComponentError::Store(e) => HostError::Store(e),
        }
    }
}

impl<E> Host<E> {
    /// Serves remote connector `name` as its server lists its tools now
    /// and as the store's reviews say now
    /// ([`crate::deployments::Deployments::refresh_remote`]).
    pub(crate) fn refresh_remote(&self, name: &str) {
        self.deployments.refresh_remote(name);
    }

    /// The handle discovery lists a remote server's tools with: the
    /// deployment owner's credential for it where one resolves, else none
    /// (the same address rules either way).
    async fn discovery_http(&self, name: &str) -> Option<Arc<HttpCapability>> {
        let settings = self.deployments.settings(name)?;
        let prepared = self.deployments.roster().http.get(name).cloned()?;
        if let Some(owner) = &self.config.deployment_owner_brand {
            let mut obtained = Obtained::default();
            if self.store.lease_held() {
                self.grants.obtain_token(owner, name, &mut obtained).await;
            }
            if let Some(http) = self
                .grants
                .http_capability(owner, name, &prepared, &obtained)
            {
                return Some(http);
            }
        }
        HttpCapability::new(
            crate::HttpConfig::new(settings.origin.clone()?)
                .allow_private_network(settings.allow_private_network),
        )
        .ok()
    }

    /// The session components the sessions open here hold.
    fn held_session_components(&self) -> BTreeSet<String> {
        self.sessions
            .all()
            .iter()
            .flat_map(|live| live.connectors.iter().cloned())
            .collect()
    }

    /// `GET /v1/session-components`: every template, and the sessions here
    /// holding each.
    pub(crate) fn session_component_views(&self) -> Result<Vec<Value>, HostError> {
        let sessions = self.sessions.all();
        let holding = |name: &str| {
            sessions
                .iter()
                .filter(|s| s.connectors.iter().any(|c| c == name))
                .count()
        };
        Ok(self.deployments.session_component_views(holding)?)
    }

    /// Loads, for a session being opened or taken up here, each component
    /// `references` names
    /// ([`crate::deployments::Deployments::load_session_components`]): none
    /// is dropped while the answer is held.
    pub(crate) async fn load_session_components(
        &self,
        references: &[String],
    ) -> Result<Pinned<'_>, HostError>
    where
        E: Send + Sync,
    {
        Ok(self
            .deployments
            .load_session_components(references, || self.held_session_components())
            .await?)
    }

    /// Whether `name` is a component loaded here for the sessions that
    /// named it.
    pub(crate) fn is_session_only(&self, name: &str) -> bool {
        self.deployments.is_session_only(name)
    }

    /// Drops every session component no session here holds (nor one being
    /// opened).
    pub(crate) fn drop_unused_session_components(&self) {
        self.deployments
            .drop_unused_session_components(&|| self.held_session_components());
    }
}

impl<E: Send + Sync + 'static> Host<E> {
    /// Lists every remote server's tools now, then again whenever one says
    /// its list changed and every `discover_every_secs`; each list that
    /// differs is served at once (its new or changed tools held until
    /// reviewed). A server the admin API adds or replaces is listed the
    /// same way from then on; one retired or replaced stops being listed.
    /// Runs until the host stops.
    pub fn discover_remote(self: &Arc<Self>) {
        let mut listing = self.deployments.remote_servers();
        for (name, server) in &listing {
            self.discover_one(name, server);
        }
        let host = Arc::downgrade(self);
        let added = self.deployments.remote_added();
        tokio::spawn(async move {
            loop {
                added.notified().await;
                let Some(host) = host.upgrade() else { return };
                if host.boundary.is_shutting_down() {
                    return;
                }
                let now = host.deployments.remote_servers();
                for (name, server) in &now {
                    if !listing.get(name).is_some_and(|s| Arc::ptr_eq(s, server)) {
                        host.discover_one(name, server);
                    }
                }
                listing = now;
            }
        });
    }

    /// Lists remote server `server` (connector `name`) now, and again as
    /// [`Host::discover_remote`] says, while it is the one served.
    fn discover_one(self: &Arc<Self>, name: &str, server: &Arc<crate::remote::RemoteServer>) {
        let host = Arc::downgrade(self);
        let name = name.to_string();
        let heard = server.list_changed();
        let this = Arc::downgrade(server);
        let every = self
            .deployments
            .settings(&name)
            .map_or(300, |c| c.discover_every_secs.unwrap_or(300));
        tokio::spawn(async move {
            // After a failed listing, the next comes sooner than
            // `every`: 2 s, doubling, at most a minute.
            let mut retry_in = None::<u64>;
            loop {
                let Some(host) = host.upgrade() else { return };
                if host.boundary.is_shutting_down() {
                    return;
                }
                // Retired or replaced through the admin API: its
                // successor, if any, is listed by a loop of its own.
                let Some(server) = host
                    .remote(&name)
                    .filter(|s| this.upgrade().is_some_and(|t| Arc::ptr_eq(s, &t)))
                else {
                    return;
                };
                if let Some(http) = host.discovery_http(&name).await {
                    match server.discover(http).await {
                        Ok(changed) => {
                            retry_in = None;
                            if changed {
                                host.deployments.refresh_remote(&name);
                            }
                        }
                        Err(why) => {
                            let next = retry_in.map_or(2, |s| (s * 2).min(60)).min(every);
                            retry_in = Some(next);
                            tracing::warn!(connector = %name, error = %why, retry_in_secs = next, "cannot list the remote server's tools; the last list stays");
                        }
                    }
                }
                drop((host, server));
                // At most one listing a second, however often a server
                // says its list changed.
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let wait = retry_in.unwrap_or(every);
                tokio::select! {
                    () = heard.notified() => {}
                    () = tokio::time::sleep(std::time::Duration::from_secs(wait)) => {}
                }
            }
        });
    }
}
