//! Operators' Cedar policy documents stored through the admin API
//! ([`PolicyStore`]), shared by the fleet (issue 56, DESIGN D21, D22).
//!
//! The configuration file's policy documents stay the bootstrap; these are
//! the fleet's, changed at runtime. Every change bumps one store-wide
//! count, the `api` part of the policy revision each decision names, so a
//! host knows whether it applies what the store holds by comparing one
//! number. A change is made only against the count it was validated at
//! ([`PolicyChange::Stale`] otherwise): two changes validated at once on
//! two hosts never both land unchecked against each other. On PostgreSQL
//! each host records the count it applied, so the admin API acknowledges
//! a change only once every live host applies it.

use super::*;

/// A policy document as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredPolicy {
    pub name: String,
    /// The Cedar text as given.
    pub text: String,
    /// One more at each change of this document (stored, replaced, deleted).
    pub revision: i64,
    /// Deleted: in force nowhere; kept for the record.
    pub retired: bool,
    /// The verified caller who made the last change.
    pub changed_by: String,
    pub changed_at_ms: i64,
    /// The store-wide change count this document's last change made.
    pub change: i64,
}

/// Every stored policy document and the store-wide change count they are at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredPolicies {
    /// How many changes were made to stored policy documents, ever (0: none).
    pub change: i64,
    /// Every document, deleted ones included, by name.
    pub docs: Vec<StoredPolicy>,
}

impl StoredPolicies {
    /// The documents in force (not deleted), by name.
    pub fn live(&self) -> impl Iterator<Item = &StoredPolicy> {
        self.docs.iter().filter(|doc| !doc.retired)
    }
}

/// What a change of a stored policy document did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyChange {
    /// Made: the document as stored now (its `change` is the new count).
    Made(StoredPolicy),
    /// Not made: the store's count is no longer the one the change was
    /// validated at (another change landed meanwhile); validate again.
    Stale { change: i64 },
    /// Not made: no live document has that name.
    NotFound,
}

/// Policy documents changed at runtime, and which hosts apply them.
#[async_trait::async_trait]
pub trait PolicyStore: Send + Sync {
    /// Stores `text` as document `name` (new, replaced, or brought back
    /// after a deletion) if the store-wide count is still `validated_at`,
    /// bumping it, and rings every host.
    async fn put_policy(
        &self,
        name: &str,
        text: &str,
        by: &str,
        validated_at: i64,
    ) -> Result<PolicyChange, StoreError>;
    /// Deletes document `name` (kept, retired), bumping the count, and
    /// rings every host; [`PolicyChange::NotFound`] if none is live.
    async fn retire_policy(&self, name: &str, by: &str) -> Result<PolicyChange, StoreError>;
    /// Every stored document, deleted ones included, and the count.
    async fn stored_policies(&self) -> Result<StoredPolicies, StoreError>;
    /// The store-wide change count alone (what a host polls).
    async fn policy_change_count(&self) -> Result<i64, StoreError>;
    /// Records that this host now applies the stored documents as of
    /// `change` (a fleet's lease row; nothing for a store one host uses).
    async fn policy_applied(&self, change: i64) -> Result<(), StoreError> {
        let _ = change;
        Ok(())
    }
    /// The live hosts (lease held, not recovered) that have not recorded
    /// applying `change` yet; none for a store one host uses.
    async fn hosts_behind_policy(&self, change: i64) -> Result<Vec<String>, StoreError> {
        let _ = change;
        Ok(Vec::new())
    }
}
