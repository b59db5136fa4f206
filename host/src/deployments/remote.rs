//! Remote MCP servers as this host serves them: served as their tools are
//! listed now and as the store's reviews say now, and decided for a call
//! under the store's review, never an older one ([`crate::remote`] has
//! the client; this, what is served of it).

use super::*;

impl Deployments {
    /// Serves remote connector `name` as its server lists its tools now
    /// and as the store's reviews say now: the catalogue's entry and the
    /// served tools are replaced together, and every session decides
    /// afresh. A tool whose listing changed, or that the server no longer
    /// lists, loses its pending approvals fleet-wide: a person approved the
    /// tool as it was, not as it is.
    pub(crate) fn refresh_remote(&self, name: &str) {
        let Some(server) = self.remote(name) else {
            return;
        };
        // Its upstream sessions' closing and reopening are traced.
        server.trace_into(&self.store);
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
                self.policies_follow();
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
            let revoked = self.boundary.approvals().revoke_tools(name, &tools, &why);
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
    pub(super) async fn remote_for_call(
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
        crate::store::off_worker(|| self.refresh_remote(name));
        self.component(name).unwrap_or(served)
    }

    /// Applies the store's reviews to every remote server's tools (another
    /// host reviewed one): each served afresh, without listing it again.
    pub(crate) fn reapply_remote_reviews(&self) {
        for name in self.remote_servers().keys() {
            self.refresh_remote(name);
        }
    }
}
