//! A brand's connections as this host changes and resolves them: stored,
//! shared, disabled, and resolved through one cache that a change empties.
//!
//! The service owns the connections' rows (through the store) and the
//! resolution cache; it decides whether a connector still resolves for a
//! brand. What a change means for open sessions (their approvals revoked,
//! their surfaces decided afresh) is the caller's: the service knows no
//! session. The boundary asks it through [`boundary::Connections`]
//! (implemented by [`ResolvedConnections`], which shares the cache).

use crate::authority::StoreView;
use crate::boundary;
use crate::credentials::{Credential, ResolutionCache, Resolver, Source, process_env};
use crate::deployment::{Roster, SharedRoster};
use crate::policy::{Catalog, Role};
use crate::store::{Store, StoreError, block};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Brands' connections: their rows and how they resolve now.
pub struct Connections {
    store: Arc<dyn Store>,
    /// Seals and opens the secrets of stored connections.
    key: [u8; 32],
    /// The deployment as served now (connectors change at runtime).
    roster: SharedRoster,
    /// Connections as they last resolved; emptied whenever one changes.
    resolutions: Arc<ResolutionCache>,
}

impl Connections {
    /// Connections kept in `store`, sealed with `key`, for the connectors
    /// `roster` serves.
    pub fn new(store: Arc<dyn Store>, key: [u8; 32], roster: SharedRoster) -> Connections {
        Connections {
            store,
            key,
            roster,
            resolutions: Arc::new(ResolutionCache::default()),
        }
    }

    /// What the boundary asks which connectors still resolve (the cache
    /// is shared: a change here reaches it at once).
    pub fn resolved(&self) -> ResolvedConnections {
        ResolvedConnections {
            store: self.store.clone(),
            roster: self.roster.clone(),
            key: self.key,
            resolutions: self.resolutions.clone(),
        }
    }

    /// The resolution cache, for the grants that resolve a call's
    /// credential through it (and empty it when a token is refreshed).
    pub fn resolution_cache(&self) -> Arc<ResolutionCache> {
        self.resolutions.clone()
    }

    /// Stores a connection's secret for a brand, sealed (D4).
    pub fn put(&self, brand: &str, connector: &str, secret: &str) -> Result<(), StoreError> {
        block(
            self.store
                .put_connection(brand, connector, secret, &self.key),
        )?;
        self.forget_resolutions();
        Ok(())
    }

    /// Shares `owner`'s connection with brand `with`.
    pub fn share(&self, owner: &str, connector: &str, with: &str) -> Result<(), StoreError> {
        block(self.store.share_connection(owner, connector, with))?;
        self.forget_resolutions();
        Ok(())
    }

    /// Stops sharing `owner`'s connection with `with`; whether it was shared.
    pub fn unshare(&self, owner: &str, connector: &str, with: &str) -> Result<bool, StoreError> {
        let unshared = block(self.store.unshare_connection(owner, connector, with))?;
        self.forget_resolutions();
        Ok(unshared)
    }

    /// Disables a brand's connection; whether there was one.
    pub fn disable(&self, brand: &str, connector: &str) -> Result<bool, StoreError> {
        let disabled = block(self.store.disable_connection(brand, connector))?;
        self.forget_resolutions();
        Ok(disabled)
    }

    /// Another host changed a connection (the store said so): resolutions
    /// are decided afresh.
    pub fn changed_elsewhere(&self) {
        self.forget_resolutions();
    }

    /// Forgets every resolution: a connection, or what is served, changed.
    pub fn forget_resolutions(&self) {
        self.resolutions.invalidate();
    }

    /// The connectors that resolve for `brand` under `catalog` and where
    /// each credential comes from.
    pub fn list(
        &self,
        catalog: Arc<Catalog>,
        brand: &str,
    ) -> Result<Vec<(String, Source)>, StoreError> {
        let now = self.resolving(catalog);
        let set = now
            .resolver()
            .credential_set_for(Role::PersonChat, None, brand)?;
        Ok(set
            .servers()
            .filter_map(|s| set.get(s).map(|c| (s.to_string(), c.source().clone())))
            .collect())
    }

    /// The connectors among [`Connections::list`]'s whose OAuth access
    /// token expired with no refresh token to renew it: a person connects
    /// them again.
    pub fn expired(&self, catalog: Arc<Catalog>, brand: &str) -> Result<Vec<String>, StoreError> {
        let now = self.resolving(catalog);
        let set = now
            .resolver()
            .credential_set_for(Role::PersonChat, None, brand)?;
        Ok(set
            .servers()
            .filter(|s| {
                set.get(s)
                    .and_then(|c| c.token_source())
                    .is_some_and(|t| t.expired_for_good())
            })
            .map(str::to_string)
            .collect())
    }

    /// What credential resolution decides with now, under `catalog`.
    pub fn resolving(&self, catalog: Arc<Catalog>) -> Resolving {
        Resolving {
            store: self.store.clone(),
            catalog,
            roster: self.roster.read().clone(),
            key: self.key,
        }
    }

    /// `server`'s credential for `brand`, answered from the cache where it
    /// can be (`now` resolves it where it cannot).
    pub fn resolve_cached(
        &self,
        now: &Resolving,
        brand: &str,
        server: &str,
    ) -> Result<Option<Credential>, StoreError> {
        self.resolutions
            .resolve_server(|| now.resolver(), brand, server)
    }
}

/// What credential resolution decides with at one moment: the catalogue
/// and the roster as they are then.
pub struct Resolving {
    store: Arc<dyn Store>,
    catalog: Arc<Catalog>,
    roster: Arc<Roster>,
    key: [u8; 32],
}

impl Resolving {
    /// A resolver over the store, as of this moment.
    pub fn resolver(&self) -> Resolver<'_> {
        Resolver::new(
            &*self.store,
            &self.catalog,
            &self.roster.resolver,
            self.key,
            process_env,
        )
    }

    /// Whether `connector` resolves for `brand` now (read afresh, not
    /// from the cache): a session relying on one that does not loses its
    /// approvals.
    pub fn resolves(&self, brand: &str, connector: &str) -> bool {
        matches!(
            self.resolver().resolve_server(brand, connector),
            Ok(Some(_))
        )
    }

    /// Runs `audit` over the store as sessions resolve it now, for the
    /// audit of real authority ([`crate::authority`]).
    pub fn audited<T>(
        &self,
        sessions: &dyn Fn(&str) -> Result<crate::authority::SessionState, StoreError>,
        stale_days: u64,
        require_review: bool,
        audit: impl FnOnce(&StoreView<'_>) -> T,
    ) -> T {
        let resolver = self.resolver();
        audit(&StoreView {
            store: &*self.store,
            resolver: &resolver,
            sessions,
            stale_days,
            require_review,
            sessions_note: None,
        })
    }
}

/// A brand's connections as they resolve now (through the service's
/// cache), for the connectors this deployment offers: what the boundary
/// asks before it offers a connector.
pub struct ResolvedConnections {
    store: Arc<dyn Store>,
    /// The deployment as served now (connectors change at runtime).
    roster: SharedRoster,
    key: [u8; 32],
    resolutions: Arc<ResolutionCache>,
}

impl boundary::Connections for ResolvedConnections {
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

#[cfg(test)]
mod tests {
    //! The service without a server: a SQLite store in a temporary
    //! directory and the seed catalogue.

    use super::*;
    use crate::boundary::Connections as _;
    use crate::store::SqliteStore;

    const KEY: [u8; 32] = [7; 32];

    struct Fixture {
        _dir: tempfile::TempDir,
        connections: Connections,
        catalog: Arc<Catalog>,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("s.db")).unwrap());
        let roster: SharedRoster = Default::default();
        Fixture {
            _dir: dir,
            connections: Connections::new(store, KEY, roster),
            catalog: Arc::new(Catalog::seed()),
        }
    }

    fn github() -> BTreeSet<String> {
        BTreeSet::from(["github".to_string()])
    }

    #[test]
    fn a_stored_connection_resolves_until_disabled() {
        let f = fixture();
        let now = || f.connections.resolving(f.catalog.clone());
        assert!(!now().resolves("acme", "github"));
        f.connections.put("acme", "github", "ghp_one").unwrap();
        assert!(now().resolves("acme", "github"));
        let listed = f.connections.list(f.catalog.clone(), "acme").unwrap();
        assert_eq!(
            listed.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(),
            ["github"]
        );
        assert!(f.connections.disable("acme", "github").unwrap());
        assert!(!now().resolves("acme", "github"));
        // A connection never stored is not disabled.
        assert!(!f.connections.disable("acme", "nothing").unwrap());
    }

    #[test]
    fn a_shared_connection_resolves_for_the_other_brand_until_unshared() {
        let f = fixture();
        let now = || f.connections.resolving(f.catalog.clone());
        f.connections.put("acme", "github", "ghp_one").unwrap();
        assert!(!now().resolves("globex", "github"));
        f.connections.share("acme", "github", "globex").unwrap();
        assert!(now().resolves("globex", "github"));
        assert!(f.connections.unshare("acme", "github", "globex").unwrap());
        assert!(!now().resolves("globex", "github"));
    }

    #[test]
    fn the_boundary_sees_a_change_made_here_at_once() {
        let f = fixture();
        let boundary = f.connections.resolved();
        assert!(boundary.live("acme", &github(), &f.catalog).is_empty());
        f.connections.put("acme", "github", "ghp_one").unwrap();
        assert_eq!(boundary.live("acme", &github(), &f.catalog), github());
        f.connections.disable("acme", "github").unwrap();
        assert!(boundary.live("acme", &github(), &f.catalog).is_empty());
    }

    #[test]
    fn a_change_elsewhere_is_seen_once_the_store_says_so() {
        let f = fixture();
        let boundary = f.connections.resolved();
        assert!(boundary.live("acme", &github(), &f.catalog).is_empty());
        // Another host writes the row: this host's cache still answers.
        block(
            f.connections
                .store
                .put_connection("acme", "github", "ghp_one", &KEY),
        )
        .unwrap();
        assert!(boundary.live("acme", &github(), &f.catalog).is_empty());
        f.connections.changed_elsewhere();
        assert_eq!(boundary.live("acme", &github(), &f.catalog), github());
    }
}
