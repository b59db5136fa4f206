//! What the host, as an MCP client, answers a remote server that asks it
//! something. Nothing is passed through blindly: the server cannot sample
//! the session's model (`sampling/createMessage`) or learn its roots
//! (`roots/list`), and it may not ask the session's person anything here
//! (`elicitation/create` is declined). A `notifications/tools/list_changed`
//! only makes the host list the tools again: what the server now offers is
//! a candidate for review, never a tool.

// Sampling and roots are deprecated in MCP (SEP-2577), but servers still
// send them: refusing them needs their types.
#![allow(deprecated)]

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode, Implementation,
    ListRootsResult,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use std::sync::Arc;

/// The host's client side of one upstream MCP session.
#[derive(Clone)]
pub(crate) struct HostClient {
    /// Told when the server says its tool list changed.
    pub(crate) list_changed: Arc<tokio::sync::Notify>,
    /// What the server asked of the host that was refused, for the trace
    /// (method names only).
    pub(crate) refused: Arc<parking_lot::Mutex<Vec<&'static str>>>,
}

impl HostClient {
    fn refuse(&self, method: &'static str) -> McpError {
        let mut refused = self.refused.lock();
        if refused.len() < 64 {
            refused.push(method);
        }
        McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "{method} is refused: this client does not give a server access to its model, its files or its people"
            ),
            None,
        )
    }
}

impl ClientHandler for HostClient {
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        Err(self.refuse("sampling/createMessage"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        Err(self.refuse("roots/list"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let _ = self.refuse("elicitation/create");
        Ok(ElicitResult::new(ElicitationAction::Decline))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        // No sampling, no roots, no elicitation declared.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("scout-connector-host", env!("CARGO_PKG_VERSION")),
        )
    }
}
