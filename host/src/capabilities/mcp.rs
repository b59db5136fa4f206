//! The `mcp` handle: a remote MCP server's tools, reached for one agent
//! session through one upstream MCP session the host keeps for it.
//!
//! A remote connector has no guest: its only authority is this handle,
//! granted by the host for a call the boundary authorized, already bound to
//! the server's origin and the brand's credential (the guarded `http`
//! handle underneath, so the address rules, the redirect refusal, the
//! response cap and the scrub are the component path's own). The handle
//! sends one `tools/call`; what comes back is the server's answer, capped
//! and scrubbed before anyone sees it.

use super::http::HttpExchange;
use serde_json::Value;
use std::time::Instant;

/// One agent session's upstream MCP session at one remote server.
#[async_trait::async_trait]
pub trait McpSession: Send + Sync {
    /// Sends `tools/call` of `tool` (the server's own name) with `args`,
    /// ending it at `deadline`.
    async fn call_tool(&self, tool: &str, args: &Value, deadline: Instant) -> McpAnswer;
}

/// What one `tools/call` came to.
#[derive(Debug)]
pub struct McpAnswer {
    /// The server's `CallToolResult` as JSON (content, structured content,
    /// `isError`), capped and scrubbed; `Err` when none came back in time
    /// or the exchange failed (the reason names what to do).
    pub result: Result<Value, McpFailure>,
    /// The HTTP exchanges the call made (no headers, no bodies).
    pub exchanges: Vec<HttpExchange>,
    /// What became of each thing the server asked the session's person
    /// during the call (`accept`, `decline`, `cancel`, or why it was
    /// declined unasked); never what was asked or answered.
    pub asked: Vec<&'static str>,
    /// The credential's renewal after the server refused it (401), for the
    /// trace (never a token).
    pub renewals: Vec<serde_json::Value>,
}

/// Why a `tools/call` brought no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpFailure {
    /// The call's deadline passed; the request was cancelled upstream.
    Deadline,
    /// The server could not be reached or answered outside the protocol.
    Upstream(String),
}
