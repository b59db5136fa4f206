//! Remote MCP servers listed while the host runs: where what is served
//! ([`crate::deployments`], which serves each list as reviewed) meets the
//! grants (the deployment owner's credential a listing is made with).

use super::*;

impl ServeHost {
    /// Serves remote connector `name` as its server lists its tools now
    /// and as the store's reviews say now
    /// ([`Deployments::refresh_remote`]).
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

    /// Lists every remote server's tools now, then again whenever one says
    /// its list changed and every `discover_every_secs`; each list that
    /// differs is served at once (its new or changed tools held until
    /// reviewed). Runs until the host stops.
    pub fn discover_remote(self: &Arc<Self>) {
        for (name, server) in self.deployments.remote_servers() {
            let host = Arc::downgrade(self);
            let name = name.clone();
            let heard = server.list_changed();
            let every = self
                .deployments
                .settings(&name)
                .map_or(300, |c| c.discover_every_secs.unwrap_or(300));
            tokio::spawn(async move {
                loop {
                    let Some(host) = host.upgrade() else { return };
                    if host.boundary.is_shutting_down() {
                        return;
                    }
                    if let (Some(server), Some(http)) =
                        (host.remote(&name), host.discovery_http(&name).await)
                    {
                        match server.discover(http).await {
                            Ok(true) => host.deployments.refresh_remote(&name),
                            Ok(false) => {}
                            Err(why) => {
                                tracing::warn!(connector = %name, error = %why, "cannot list the remote server's tools; the last list stays");
                            }
                        }
                    }
                    drop(host);
                    // At most one listing a second, however often a server
                    // says its list changed.
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    tokio::select! {
                        () = heard.notified() => {}
                        () = tokio::time::sleep(std::time::Duration::from_secs(every)) => {}
                    }
                }
            });
        }
    }
}
