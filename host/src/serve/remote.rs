//! Remote MCP servers as this host serves them: their tools listed, then
//! listed again whenever a server says they changed, and served as
//! reviewed ([`crate::remote`] has the client; this, the host's side).

use super::*;

impl ServeHost {
    /// Serves remote connector `name` as its server lists its tools now
    /// and as the store's reviews say now: the catalogue's entry and the
    /// served tools are replaced together, and every session decides
    /// afresh. A tool whose listing changed, or that the server no longer
    /// lists, loses its pending approvals fleet-wide: a person approved the
    /// tool as it was, not as it is.
    pub(crate) fn refresh_remote(&self, name: &str) {
        let Some(server) = self.remote.get(name) else {
            return;
        };
        // One at a time: two refreshes reading the store a moment apart
        // would otherwise install in either order, the older last.
        let _applying = server.applying();
        let previous = self.component(name);
        let served = Arc::new(server.snapshot(self.store.as_ref()));
        let narrowing = self.settings(name).and_then(|c| c.tools.clone());
        match crate::deployment::remote_spec(&served, narrowing.as_deref()) {
            Ok(spec) => {
                // The listing a call is checked against, then the served
                // tools, then the policy: a session deciding in between finds
                // a tool it may not offer yet, never one it offers with
                // nothing behind it.
                self.boundary.remote_listed(served.clone());
                self.components
                    .write()
                    .insert(name.to_string(), served.clone());
                self.boundary.replace_connector(spec);
            }
            Err(e) => {
                tracing::error!(connector = %name, error = %e, "the remote server's tools cannot be served; the last served stay");
                return;
            }
        }
        let Some(previous) = previous else { return };
        let mut changed = Vec::new();
        let mut gone = Vec::new();
        for before in previous.tools() {
            match served.tool(&before.name) {
                None => gone.push(before.name.clone()),
                Some(now)
                    if crate::review::tool_digest(&served, now)
                        != crate::review::tool_digest(&previous, before) =>
                {
                    changed.push(before.name.clone())
                }
                Some(_) => {}
            }
        }
        let rule = |hold| crate::policy::Rule::Held(hold).name().into_owned();
        for (tools, why) in [
            (
                changed,
                format!(
                    "{}: the server changed the tool",
                    rule(crate::policy::ReviewHold::Changed)
                ),
            ),
            (
                gone,
                format!(
                    "{}: the server no longer lists the tool",
                    rule(crate::policy::ReviewHold::UnknownTool)
                ),
            ),
        ] {
            let revoked = self.approvals().revoke_tools(name, &tools, &why);
            if !revoked.is_empty() {
                tracing::warn!(connector = %name, tools = ?tools, approvals = ?revoked, "the remote server changed tools while calls waited for a person; their approvals are revoked");
            }
        }
    }

    /// Connector `name` as a call of its `tool` must be decided with now,
    /// `served` being what this host serves: where the store's review of
    /// the tool gives it another effect than `served` does (another host
    /// reviewed it and this host has not applied that yet), the server's
    /// tools are served afresh from the store first. A host never decides a
    /// remote call under an effect older than the store's (DESIGN D22).
    pub(crate) async fn remote_for_call(
        &self,
        name: &str,
        tool: &str,
        served: Arc<LoadedComponent>,
    ) -> Arc<LoadedComponent> {
        if !served.is_remote() {
            return served;
        }
        let Some(called) = served.tool(tool) else {
            return served;
        };
        // Unreadable: the boundary reads it again, and holds the call.
        let Ok(review) = self.store.reviewed(name, tool).await else {
            return served;
        };
        let digest = crate::review::tool_digest(&served, called);
        let reviewed_read = review.is_some_and(|r| {
            r.digest == digest
                && r.effect
                    .as_deref()
                    .and_then(crate::remote::RemoteEffect::parse)
                    == Some(crate::remote::RemoteEffect::Read)
        });
        if reviewed_read == (called.effect == crate::Effect::Read) {
            return served;
        }
        let host = self;
        let name_owned = name.to_string();
        crate::store::off_worker(|| host.refresh_remote(&name_owned));
        self.component(name).unwrap_or(served)
    }

    /// Applies the store's reviews to every remote server's tools (another
    /// host reviewed one): each served afresh, without listing it again.
    pub(crate) fn reapply_remote_reviews(&self) {
        for name in self.remote.keys() {
            self.refresh_remote(name);
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
