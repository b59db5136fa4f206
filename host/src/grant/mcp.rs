//! The `mcp` grant: a remote MCP server is reached only through the
//! session's upstream MCP session, riding on the call's HTTP handle.

use crate::capabilities::http::HttpCapability;
use crate::capabilities::mcp::McpSession;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The remote MCP servers among the connectors, fixed at start.
pub(super) struct McpGrant {
    pub(super) remote: BTreeMap<String, Arc<crate::remote::RemoteServer>>,
}

impl McpGrant {
    /// Session `session`'s upstream MCP session with `connector`, where it
    /// is a remote server and the call holds its HTTP handle.
    pub(super) fn prepare(
        &self,
        session: &str,
        connector: &str,
        http: Option<&Arc<HttpCapability>>,
    ) -> Option<Arc<dyn McpSession>> {
        let (server, http) = (self.remote.get(connector)?, http?);
        Some(server.upstream(session, http.clone()))
    }
}
