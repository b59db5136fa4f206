//! A brand's connections as the host changes and resolves them: stored,
//! shared, disabled; a change reaches every session at its next call (and
//! every host of a fleet through the store's invalidation).

use super::*;

impl ServeHost {
    /// Disables a brand's connection. Calls stop at the next boundary (the
    /// credential is resolved at each), and the approvals waiting in every
    /// session that relied on it are revoked: they never revive, even if the
    /// connection comes back.
    pub fn disable_connection(&self, brand: &str, connector: &str) -> Result<bool, HostError> {
        let disabled = crate::store::block(self.store.disable_connection(brand, connector))?;
        self.connections_changed();
        self.revoke_where_unresolved(connector);
        Ok(disabled)
    }

    /// Stops sharing a connection; like [`ServeHost::disable_connection`]
    /// for the sessions of the brand it was shared with.
    pub fn unshare_connection(
        &self,
        owner: &str,
        connector: &str,
        with: &str,
    ) -> Result<bool, HostError> {
        let unshared = crate::store::block(self.store.unshare_connection(owner, connector, with))?;
        self.connections_changed();
        self.revoke_where_unresolved(connector);
        Ok(unshared)
    }

    /// A connection changed in the store: resolutions are dropped and every
    /// session decides afresh at its next request.
    pub(super) fn connections_changed(&self) {
        self.resolutions.invalidate();
        self.boundary.changed();
    }

    pub(super) fn revoke_where_unresolved(&self, connector: &str) {
        let sessions = self.sessions.all();
        let now = self.resolving();
        let resolver = now.resolver();
        for live in sessions {
            if live.connectors.iter().any(|c| c == connector)
                && !matches!(
                    resolver.resolve_server(&live.session.brand, connector),
                    Ok(Some(_))
                )
                && let Err(e) = self.approvals().revoke_session(&live.session.id)
            {
                tracing::error!(session = %live.session.id, error = %e, "cannot revoke approvals");
            }
        }
    }

    /// Stores a connection's secret for a brand, sealed (D4).
    pub fn put_connection(
        &self,
        brand: &str,
        connector: &str,
        secret: &str,
    ) -> Result<(), HostError> {
        crate::store::block(
            self.store
                .put_connection(brand, connector, secret, &self.key),
        )?;
        self.connections_changed();
        // A remote server listed without a credential (or an expired one)
        // is listed again with the new one.
        if let Some(server) = self.remote.get(connector) {
            server.list_changed().notify_one();
        }
        Ok(())
    }

    /// Shares `owner`'s connection with brand `with`.
    pub fn share_connection(
        &self,
        owner: &str,
        connector: &str,
        with: &str,
    ) -> Result<(), HostError> {
        crate::store::block(self.store.share_connection(owner, connector, with))?;
        self.connections_changed();
        Ok(())
    }

    /// The connectors that resolve for a brand and where each credential comes from.
    pub fn connections(
        &self,
        brand: &str,
    ) -> Result<Vec<(String, crate::credentials::Source)>, HostError> {
        let set = self
            .resolving()
            .resolver()
            .credential_set_for(Role::PersonChat, None, brand)?;
        Ok(set
            .servers()
            .filter_map(|s| set.get(s).map(|c| (s.to_string(), c.source().clone())))
            .collect())
    }
}

/// A brand's connections as they resolve now (through the host's cache),
/// for the connectors this deployment offers.
pub(super) struct ServedConnections {
    pub(super) store: Arc<dyn Store>,
    /// The deployment as served now (connectors change at runtime).
    pub(super) roster: crate::deployment::SharedRoster,
    pub(super) key: [u8; 32],
    pub(super) resolutions: Arc<ResolutionCache>,
}

impl Connections for ServedConnections {
    fn live(
        &self,
        brand: &str,
        candidates: &BTreeSet<String>,
        catalog: &Catalog,
    ) -> BTreeSet<String> {
        let roster = self.roster.read().clone();
        let resolver = || {
            Resolver::new(
                &*self.store,
                catalog,
                &roster.resolver,
                self.key,
                process_env,
            )
        };
        candidates
            .iter()
            .filter(|c| {
                !roster.not_offered.contains_key(*c)
                    && matches!(
                        self.resolutions.resolve_server(resolver, brand, c),
                        Ok(Some(_))
                    )
            })
            .cloned()
            .collect()
    }
}
