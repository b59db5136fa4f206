//! A brand's saved profiles (D7, D8): a session is opened from one, the
//! admin API saves, reads and deletes them. The rules a profile is saved
//! under are [`crate::policy`]'s, checked as the store saves it; this
//! service is where the rest of the host reaches the saved rows.

use crate::policy::{Catalog, Profile};
use crate::store::{ProfileStore, StoreError};
use std::sync::Arc;

pub use crate::store::{ProfileKind, SaveProfileError, SavedProfile};

/// Saved profiles, by brand and name.
#[derive(Clone)]
pub struct Profiles {
    store: Arc<dyn ProfileStore>,
}

impl Profiles {
    /// The profiles `store` keeps.
    pub fn new(store: Arc<dyn ProfileStore>) -> Profiles {
        Profiles { store }
    }

    /// Brand `brand`'s profile `name` and the rules it was saved under.
    pub async fn load(&self, brand: &str, name: &str) -> Result<Option<SavedProfile>, StoreError> {
        self.store.load_profile(brand, name).await
    }

    /// A brand's saved profiles, by name.
    pub async fn list(&self, brand: &str) -> Result<Vec<SavedProfile>, StoreError> {
        self.store.list_profiles(brand).await
    }

    /// Checks `profile` by `kind`'s rules against `catalog` and saves it
    /// (replacing one of the same name); a refused one saves nothing.
    pub async fn save(
        &self,
        brand: &str,
        profile: &Profile,
        kind: ProfileKind,
        catalog: &Catalog,
    ) -> Result<(), SaveProfileError> {
        self.store.save_profile(brand, profile, kind, catalog).await
    }

    /// Deletes a saved profile; whether one existed.
    pub async fn delete(&self, brand: &str, name: &str) -> Result<bool, StoreError> {
        self.store.delete_profile(brand, name).await
    }
}
