//! The flows that start at a brand's connection and reach open sessions:
//! the [`crate::connections::Connections`] service changes the rows and
//! decides what resolves; here a change also reaches every session at its
//! next call (the boundary decides afresh), and the approvals of sessions
//! that relied on a connection that no longer resolves are revoked.

use super::Host;
use crate::sessions::HostError;
use std::collections::BTreeSet;

impl<E> Host<E> {
    /// Disables a brand's connection. Calls stop at the next boundary (the
    /// credential is resolved at each), and the approvals waiting in every
    /// session that relied on it are revoked: they never revive, even if the
    /// connection comes back.
    pub fn disable_connection(&self, brand: &str, connector: &str) -> Result<bool, HostError> {
        let disabled = self.connections.disable(brand, connector)?;
        self.boundary.changed();
        self.revoke_where_unresolved(connector);
        Ok(disabled)
    }

    /// Stops sharing a connection; like [`Host::disable_connection`]
    /// for the sessions of the brand it was shared with.
    pub fn unshare_connection(
        &self,
        owner: &str,
        connector: &str,
        with: &str,
    ) -> Result<bool, HostError> {
        let unshared = self.connections.unshare(owner, connector, with)?;
        self.boundary.changed();
        self.revoke_where_unresolved(connector);
        Ok(unshared)
    }

    /// Another host changed a connection: resolutions are dropped, every
    /// session decides afresh at its next request, and the approvals of
    /// sessions relying on a connector that no longer resolves are revoked.
    pub(crate) fn connections_changed_elsewhere(&self) {
        self.connections.changed_elsewhere();
        self.boundary.changed();
        let connectors: BTreeSet<String> = self
            .sessions
            .all()
            .iter()
            .flat_map(|live| live.connectors.iter().cloned())
            .collect();
        for connector in connectors {
            self.revoke_where_unresolved(&connector);
        }
    }

    /// Revokes the approvals of every open session that relies on
    /// `connector` where it no longer resolves for the session's brand.
    fn revoke_where_unresolved(&self, connector: &str) {
        let now = self.resolving();
        for live in self.sessions.all() {
            if live.connectors.iter().any(|c| c == connector)
                && !now.resolves(&live.session.brand, connector)
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
        self.connections.put(brand, connector, secret)?;
        self.boundary.changed();
        // A remote server listed without a credential (or an expired one)
        // is listed again with the new one.
        if let Some(server) = self.remote(connector) {
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
        self.connections.share(owner, connector, with)?;
        self.boundary.changed();
        Ok(())
    }

    /// The connectors that resolve for a brand and where each credential comes from.
    pub fn list_connections(
        &self,
        brand: &str,
    ) -> Result<Vec<(String, crate::credentials::Source)>, HostError> {
        Ok(self.connections.list(self.boundary.catalog(), brand)?)
    }

    /// The brand's connections whose authorization expired for good.
    pub fn expired_connections(&self, brand: &str) -> Result<Vec<String>, HostError> {
        Ok(self.connections.expired(self.boundary.catalog(), brand)?)
    }
}
