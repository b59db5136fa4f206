//! Sealed connections and their shares ([`ConnectionStore`]).

use super::*;

/// Brand connections, sealed at rest, and the shares between brands (D4).
#[async_trait::async_trait]
pub trait ConnectionStore: Send + Sync {
    /// Stores (or replaces, re-enabling) a brand's credential for a connector,
    /// sealed with `key`.
    async fn put_connection(
        &self,
        brand: &str,
        connector: &str,
        secret: &str,
        key: &[u8; 32],
    ) -> Result<(), StoreError>;
    /// The credential, if stored and not disabled. A wrong key is an error.
    async fn get_connection(
        &self,
        brand: &str,
        connector: &str,
        key: &[u8; 32],
    ) -> Result<Option<String>, StoreError>;
    /// Disables a connection; returns whether one existed.
    async fn disable_connection(&self, brand: &str, connector: &str) -> Result<bool, StoreError>;

    /// Records that `owner_brand` (the account owner's brand) shares its
    /// stored connection for `connector` with `with_brand`. Idempotent. The
    /// share lends the stored connection only, never a host environment.
    async fn share_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<(), StoreError>;
    /// Withdraws a share; returns whether one existed. The next resolution
    /// no longer finds it.
    async fn unshare_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<bool, StoreError>;
    /// The brands that share their `connector` connection with `with_brand`,
    /// oldest share first (what resolution walks after the brand's own).
    async fn shared_with(
        &self,
        with_brand: &str,
        connector: &str,
    ) -> Result<Vec<String>, StoreError>;
}
