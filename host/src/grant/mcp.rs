//! The `mcp` grant: a remote MCP server is reached only through the
//! session's upstream MCP session, riding on the call's HTTP handle.

use crate::capabilities::http::HttpCapability;
use crate::capabilities::mcp::McpSession;
use std::sync::Arc;

/// The remote MCP servers among the connectors, as served now (the
/// admin API adds, replaces and retires them while the host runs).
pub(super) struct McpGrant {
    pub(super) remote: crate::deployments::SharedRemote,
}

impl McpGrant {
    /// Session `session`'s (of `brand`) upstream MCP session with
    /// `connector`, where it is a remote server and the call holds its HTTP
    /// handle.
    pub(super) fn prepare(
        &self,
        session: &str,
        brand: &str,
        connector: &str,
        http: Option<&Arc<HttpCapability>>,
    ) -> Option<Arc<dyn McpSession>> {
        let server = self.remote.read().get(connector).cloned()?;
        let http = http?;
        Some(server.upstream(session, brand, http.clone()))
    }
}
