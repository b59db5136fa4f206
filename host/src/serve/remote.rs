//! Remote MCP servers as this host serves them: their tools listed, then
//! listed again whenever a server says they changed, and served as
//! reviewed ([`crate::remote`] has the client; this, the host's side).

use super::*;

impl ServeHost {
    /// Serves remote connector `name` as its server lists its tools now
    /// and as an operator reviewed them: the catalogue's entry and the
    /// served tools are replaced together, and every session decides afresh.
    pub(crate) fn refresh_remote(&self, name: &str) {
        let Some(server) = self.remote.get(name) else {
            return;
        };
        let served = server.snapshot(self.store.as_ref());
        let narrowing = self.settings(name).and_then(|c| c.tools.clone());
        match crate::deployment::remote_spec(&served, narrowing.as_deref()) {
            Ok(spec) => {
                // The served tools first, then the policy: a session deciding
                // in between finds a tool it may not offer yet, never one it
                // offers with nothing behind it.
                self.components
                    .write()
                    .insert(name.to_string(), Arc::new(served));
                self.boundary.replace_connector(spec);
            }
            Err(e) => {
                tracing::error!(connector = %name, error = %e, "the remote server's tools cannot be served; the last served stay");
            }
        }
    }

    /// The handle discovery lists a remote server's tools with: the
    /// deployment owner's credential for it where one resolves, else none
    /// (the same address rules either way).
    async fn discovery_http(&self, name: &str) -> Option<Arc<HttpCapability>> {
        let settings = self.settings(name)?;
        let prepared = self.roster().http.get(name).cloned()?;
        if let Some(owner) = &self.config.deployment_owner_brand {
            let mut obtained = Obtained::default();
            if self.store.lease_held() {
                self.obtain_token(owner, name, &mut obtained).await;
            }
            if let Some(http) = self.http_capability(owner, name, &prepared, None, &obtained) {
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
        for (name, server) in &self.remote {
            let host = Arc::downgrade(self);
            let name = name.clone();
            let heard = server.list_changed();
            let every = self
                .settings(&name)
                .map_or(300, |c| c.discover_every_secs.unwrap_or(300));
            tokio::spawn(async move {
                loop {
                    let Some(host) = host.upgrade() else { return };
                    if host.boundary.is_shutting_down() {
                        return;
                    }
                    if let (Some(server), Some(http)) =
                        (host.remote.get(&name), host.discovery_http(&name).await)
                    {
                        match server.discover(http).await {
                            Ok(true) => host.refresh_remote(&name),
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
