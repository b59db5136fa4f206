//! Tool reviews and artifact pins ([`ReviewStore`]).

use super::*;

/// Operators' reviews of discovered tools (discovery produces no authority).
#[async_trait::async_trait]
pub trait ReviewStore: Send + Sync {
    /// What an operator last approved of `tool`, if anything.
    async fn reviewed(&self, connector: &str, tool: &str) -> Result<Option<Reviewed>, StoreError>;
    /// Records an operator's approval of `tool` as described by `digest`;
    /// for a remote MCP server's tool, with the effect the operator gave it
    /// (`read`, `write`, `billed`).
    async fn approve_tool(
        &self,
        connector: &str,
        tool: &str,
        digest: &str,
        effect: Option<&str>,
        facts: Option<&str>,
        by: &str,
    ) -> Result<(), StoreError>;
    /// Every tool of `connector` an operator reviewed.
    async fn reviewed_tools(&self, connector: &str) -> Result<Vec<String>, StoreError>;
    /// The digest an OCI artifact's tag (`oci://REGISTRY/REPO:TAG`) was
    /// first resolved to, recording `digest` when none was: every host of
    /// the store then runs the same bytes however the tag moves.
    async fn pin_artifact(
        &self,
        reference: &str,
        digest: &str,
        by: &str,
    ) -> Result<String, StoreError>;
    /// The digest recorded for `reference`, if one was.
    async fn pinned_artifact(&self, reference: &str) -> Result<Option<String>, StoreError>;
}

/// A review store with no review in it: what is known offline.
pub struct NoReviews;

#[async_trait::async_trait]
impl ReviewStore for NoReviews {
    async fn reviewed(&self, _: &str, _: &str) -> Result<Option<Reviewed>, StoreError> {
        Ok(None)
    }
    async fn approve_tool(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: Option<&str>,
        _: Option<&str>,
        _: &str,
    ) -> Result<(), StoreError> {
        Err(StoreError::Config("no store to record a review in".into()))
    }
    async fn reviewed_tools(&self, _: &str) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    async fn pin_artifact(&self, _: &str, digest: &str, _: &str) -> Result<String, StoreError> {
        Ok(digest.to_string())
    }
    async fn pinned_artifact(&self, _: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

/// An operator's approval of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    /// The digest of the tool as it was approved.
    pub digest: String,
    /// The effect given to a remote MCP server's tool; `None` for a
    /// component's, whose WIT says it.
    pub effect: Option<String>,
    /// What the review of a component's tool covered
    /// ([`crate::review::ReviewedFacts`], JSON); `None` for a remote tool
    /// or a review recorded before it was kept.
    pub facts: Option<String>,
}
