//! Connectors and session components deployed through the admin API ([`DeploymentStore`]).

use super::*;

/// A connector added through the admin API (`PUT /v1/connectors/{name}`),
/// as the fleet's store holds it: every host serves the same artifact
/// digest with the same settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredConnector {
    pub name: String,
    /// Its settings as given: the fields of a TOML connector table, JSON.
    pub settings: String,
    /// The artifact as named (`oci://REGISTRY/REPO:TAG` or `…@sha256:…`).
    pub artifact: String,
    /// The manifest digest the name was resolved to when it was changed:
    /// what every host runs.
    pub digest: String,
    /// One more at each change (added, upgraded, retired).
    pub revision: i64,
    /// Retired: served by no host; its next call is refused.
    pub retired: bool,
    /// The verified caller who made the last change.
    pub changed_by: String,
    pub changed_at_ms: i64,
}

/// Connectors added, upgraded and retired at runtime (issue 33): the
/// configuration file stays the bootstrap, these are the fleet's.
#[async_trait::async_trait]
pub trait DeploymentStore: Send + Sync {
    /// Records `name` as served from now on with `settings` and the
    /// artifact `digest` (added, upgraded or brought back), and rings the
    /// other hosts; what is stored now.
    async fn put_connector(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<StoredConnector, StoreError>;
    /// Retires `name`, and rings the other hosts; `None` if no live
    /// connector by that name is stored.
    async fn retire_connector(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<StoredConnector>, StoreError>;
    /// Every connector stored, retired ones included, by name.
    async fn stored_connectors(&self) -> Result<Vec<StoredConnector>, StoreError>;
    /// Records `name` as a component an orchestrator may load for one
    /// session (issue 39): its settings, as a connector's, and the artifact
    /// digest an operator chose; what is stored now.
    async fn put_session_component(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<StoredConnector, StoreError>;
    /// Withdraws session component `name` (`retired`); `None` if none is live.
    async fn drop_session_component(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<StoredConnector>, StoreError>;
    /// Every session component stored, withdrawn ones included, by name.
    async fn session_components(&self) -> Result<Vec<StoredConnector>, StoreError>;
}
