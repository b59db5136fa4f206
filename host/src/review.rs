//! Discovery produces no authority (seed 003, issue 4): the host records a
//! digest of each tool an operator approved (name, description, schema);
//! a tool that a component update adds or changes is held as unreviewed
//! and not offered until an operator approves it, and the trace says why.

use crate::runtime::{LoadedComponent, Tool};
use crate::store::{ReviewStore, StoreError, args_digest};
use serde::Serialize;
use serde_json::json;

/// Where a tool stands with the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    /// Approved as it is now.
    Reviewed,
    /// Never approved.
    New,
    /// Approved once, but its name, description or schema changed since.
    Changed,
}

/// One tool's review.
#[derive(Debug, Clone, Serialize)]
pub struct ToolReview {
    /// Wire name.
    pub tool: String,
    /// Digest of what the tool says about itself now.
    pub digest: String,
    /// Reviewed, new or changed.
    pub status: ReviewStatus,
    /// The effect a remote MCP server's tool was reviewed with, while that
    /// review holds (`None` for a component's tool, whose WIT says).
    pub effect: Option<String>,
}

/// The digest of what a tool tells the model: name, description, schema.
pub(crate) fn tool_digest(tool: &Tool) -> String {
    tool.review_digest
        .get_or_init(|| {
            args_digest(
                &json!({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}),
            )
        })
        .clone()
}

/// The review status of one tool.
pub(crate) fn status_of(
    store: &dyn ReviewStore,
    connector: &str,
    tool: &Tool,
) -> Result<ToolReview, StoreError> {
    let digest = tool_digest(tool);
    let (status, effect) = match store.reviewed(connector, &tool.name)? {
        None => (ReviewStatus::New, None),
        Some(approved) if approved.digest == digest => (ReviewStatus::Reviewed, approved.effect),
        Some(_) => (ReviewStatus::Changed, None),
    };
    Ok(ToolReview {
        tool: tool.name.clone(),
        digest,
        status,
        effect,
    })
}

/// Every tool of a component with its status.
pub fn review(
    store: &dyn ReviewStore,
    component: &LoadedComponent,
) -> Result<Vec<ToolReview>, StoreError> {
    component
        .tools()
        .iter()
        .map(|t| status_of(store, component.name(), t))
        .collect()
}

/// Approves every tool of a component as it is now (an operator's decision).
pub fn approve_all(
    store: &dyn ReviewStore,
    component: &LoadedComponent,
    by: &str,
) -> Result<usize, StoreError> {
    let mut approved = 0;
    for tool in component.tools() {
        store.approve_tool(component.name(), &tool.name, &tool_digest(tool), None, by)?;
        approved += 1;
    }
    Ok(approved)
}
