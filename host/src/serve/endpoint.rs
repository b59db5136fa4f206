//! The streamable HTTP endpoint of one session and connector: rmcp's
//! service, and beside it the same handler for the requests answered
//! without rmcp ([`super::stateless`], [`super::in_session`]) and the MCP
//! sessions rmcp opened for it.

use super::in_session::Sessions;
use super::mcp::ConnectorServer;
use super::{LiveSession, ServeHost};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The streamable HTTP service of one session and connector.
#[derive(Clone)]
pub struct Endpoint {
    pub(super) service: StreamableHttpService<ConnectorServer, LocalSessionManager>,
    /// The same server, for requests answered without rmcp's per-request
    /// service ([`super::stateless`]) or its session worker
    /// ([`super::in_session`]).
    pub(super) server: ConnectorServer,
    /// rmcp's MCP sessions of this endpoint, as their clients declared
    /// themselves.
    pub(super) sessions: Arc<Sessions>,
}

impl Endpoint {
    pub(super) fn new(
        host: Arc<ServeHost>,
        session: Weak<LiveSession>,
        connector: String,
        cancel: CancellationToken,
    ) -> Endpoint {
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(cancel)
            .with_max_request_body_bytes(host.host().config().max_request_bytes)
            .with_sse_keep_alive(Some(Duration::from_millis(
                host.host().config().sse_keep_alive_ms.max(10),
            )))
            // A stateless (2026-07-28) request gets one plain JSON answer,
            // no event stream, unless the call asks its client something
            // (elicitation) first. A client that goes away while waiting
            // drops the answer's future, which withdraws the call's approval
            // as a closed stream does (`CallerGone`). Session-mode clients
            // keep SSE and its keep-alive.
            .with_json_response(true)
            // The router checked the Host header against the configured list.
            .disable_allowed_hosts();
        let server = ConnectorServer::of(Arc::downgrade(&host), session, connector);
        let manager = Arc::new(LocalSessionManager::default());
        let service = {
            let server = server.clone();
            StreamableHttpService::new(move || Ok(server.clone()), manager.clone(), config)
        };
        let sessions = Arc::new(Sessions::new(manager, server.levels()));
        Endpoint {
            service,
            server,
            sessions,
        }
    }
}
