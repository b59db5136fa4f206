//! Saved profiles ([`ProfileStore`]) and the rules each is saved under.

use super::*;

/// Saved profiles, validated when saved (D7, D8).
#[async_trait::async_trait]
pub trait ProfileStore: Send + Sync {
    /// Validates `profile` by `kind`'s rules against `catalog` and stores it
    /// (replacing one of the same name). A refused profile stores nothing and
    /// comes back as [`SaveProfileError::Invalid`] with the rule's message.
    async fn save_profile(
        &self,
        brand: &str,
        profile: &Profile,
        kind: ProfileKind,
        catalog: &Catalog,
    ) -> Result<(), SaveProfileError>;
    /// A saved profile and the rules it was saved under.
    async fn load_profile(
        &self,
        brand: &str,
        name: &str,
    ) -> Result<Option<SavedProfile>, StoreError>;
    /// A brand's saved profiles, by name.
    async fn list_profiles(&self, brand: &str) -> Result<Vec<SavedProfile>, StoreError>;
    /// Deletes a saved profile; returns whether one existed.
    async fn delete_profile(&self, brand: &str, name: &str) -> Result<bool, StoreError>;
}

pub(crate) fn decode_profile(kind: &str, body: &str) -> Result<SavedProfile, StoreError> {
    let kind = ProfileKind::parse(kind)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown profile kind {kind:?}")))?;
    let profile = serde_json::from_str(body)
        .map_err(|e| StoreError::Corrupt(format!("stored profile: {e}")))?;
    Ok(SavedProfile { kind, profile })
}

/// Which rules a profile is saved under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    /// A coworker or specialist: [`Profile::validate`] (limits and the five rules).
    Coworker,
    /// The goal agent: [`Profile::validate_goal_agent`].
    GoalAgent,
    /// The goal reviewer: [`Profile::validate_reviewer`].
    Reviewer,
}

impl ProfileKind {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileKind::Coworker => "coworker",
            ProfileKind::GoalAgent => "goal_agent",
            ProfileKind::Reviewer => "reviewer",
        }
    }

    /// The kind stored as `name`, if any.
    pub fn parse(name: &str) -> Option<ProfileKind> {
        Some(match name {
            "coworker" => ProfileKind::Coworker,
            "goal_agent" => ProfileKind::GoalAgent,
            "reviewer" => ProfileKind::Reviewer,
            _ => return None,
        })
    }

    /// Runs this kind's save rules.
    pub fn validate(self, profile: &Profile, catalog: &Catalog) -> Result<(), ProfileError> {
        match self {
            ProfileKind::Coworker => profile.validate(catalog),
            ProfileKind::GoalAgent => profile.validate_goal_agent(catalog),
            ProfileKind::Reviewer => profile.validate_reviewer(),
        }
    }
}

/// A saved profile and the rules it was saved under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedProfile {
    pub kind: ProfileKind,
    pub profile: Profile,
}

/// Why a profile was not saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveProfileError {
    /// A save rule refused it; the message names the rule. Nothing was stored.
    #[error(transparent)]
    Invalid(#[from] ProfileError),
    #[error(transparent)]
    Store(#[from] StoreError),
}
