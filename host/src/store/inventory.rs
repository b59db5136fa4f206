//! Everything stored, listed whole for the authority audit ([`InventoryStore`]).

use super::*;

/// A stored connection as the inventory lists it: where it is and whom it
/// serves, never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredConnection {
    pub brand: String,
    /// The connection key (`github`, `google`, ...).
    pub connection: String,
    /// Disabled through the admin API: it resolves for no one.
    pub disabled: bool,
    /// When it was last stored, replaced or disabled (milliseconds since the Unix epoch).
    pub updated_at_ms: i64,
    /// The brands it is shared with, oldest share first.
    pub shared_with: Vec<String>,
}

/// An operator's review of one tool, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredReview {
    pub connector: String,
    /// The tool's wire name (`github_read_file`).
    pub tool: String,
    /// The digest of the tool as it was approved.
    pub digest: String,
    /// The effect given to a remote MCP server's tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    pub approved_by: String,
    pub approved_at_ms: i64,
}

/// Everything of a kind the store holds, listed whole: what the audit of
/// dead authority reads (`crate::authority`). Read only; nothing secret.
#[async_trait::async_trait]
pub trait InventoryStore: Send + Sync {
    /// Every stored connection of every brand (disabled ones too), by
    /// brand and connection, with the brands each is shared with.
    async fn stored_connections(&self) -> Result<Vec<StoredConnection>, StoreError>;
    /// Every saved profile of every brand, as `(brand, profile)`, by brand and name.
    async fn all_profiles(&self) -> Result<Vec<(String, SavedProfile)>, StoreError>;
    /// Every tool review, by connector and tool.
    async fn stored_reviews(&self) -> Result<Vec<StoredReview>, StoreError>;
    /// Every approval still pending, whichever session asked, oldest first.
    async fn all_pending(&self) -> Result<Vec<Approval>, StoreError>;
    /// When `brand`'s last `executed` event of each tool was recorded, by
    /// the tool's trace name (`mcp__github__github_read_file`).
    async fn last_executed(
        &self,
        brand: &str,
    ) -> Result<std::collections::BTreeMap<String, i64>, StoreError>;
}
