//! `logging/setLevel`: the level of the log messages an MCP session's
//! client hears about its own calls ([`crate::remote::relay`] says what
//! they are).
//!
//! The level is the MCP session's, kept beside rmcp's session on the host
//! that holds it (rmcp's sessions live in one process): a host of the
//! fleet that does not hold the session answers its requests 404, and the
//! client's new session starts again with no level, so a level is never
//! applied to a session it was not set in. Without `logging/setLevel` no
//! message is sent; a 2026-07-28 request, which has no session, names its
//! level in its own `_meta` (`io.modelcontextprotocol/logLevel`).

// Logging is deprecated in MCP (SEP-2577), but clients still ask for it.
#![allow(deprecated)]

use crate::remote::relay::CallRelay;
use rmcp::model::{LoggingLevel, ProgressToken, ServerNotification};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use std::collections::HashMap;
use std::sync::Arc;

/// The level each MCP session of one endpoint set, by session id (`""`
/// over stdio, where the process is the session).
#[derive(Default)]
pub(super) struct Levels(parking_lot::Mutex<HashMap<Arc<str>, LoggingLevel>>);

impl Levels {
    /// The level session `session` set, if it did.
    pub(super) fn of(&self, session: &str) -> Option<LoggingLevel> {
        self.0.lock().get(session).copied()
    }

    /// Sets session `session`'s level (the request's `Mcp-Session-Id`).
    pub(super) fn set(&self, context: &RequestContext<RoleServer>, level: LoggingLevel) {
        self.set_for(session_of(context), level);
    }

    /// Sets session `session`'s level.
    pub(super) fn set_for(&self, session: &str, level: LoggingLevel) {
        self.0.lock().insert(session.into(), level);
    }

    /// Forgets the sessions `keep` does not keep (ended or idle).
    pub(super) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.0.lock().retain(|session, _| keep(session));
    }
}

/// The MCP session a request of rmcp's came in (`""`: none, or stdio).
pub(super) fn session_of(context: &RequestContext<RoleServer>) -> &str {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| super::stateless::single(&parts.headers, "mcp-session-id"))
        .unwrap_or_default()
}

/// The `_meta` key of a request's own log level (2026-07-28, SEP-2575).
pub(super) const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The level a request asks for in its own `_meta` (2026-07-28).
pub(super) fn asked_in(meta: &rmcp::model::MetaObject) -> Option<LoggingLevel> {
    meta.0
        .get(LOG_LEVEL)
        .and_then(|level| serde_json::from_value(level.clone()).ok())
}

/// The progress token of a request's `_meta`, where it has one.
pub(super) fn progress_in(meta: &rmcp::model::MetaObject) -> Option<ProgressToken> {
    meta.0
        .get(super::stateless::PROGRESS_TOKEN)
        .and_then(|token| serde_json::from_value(token.clone()).ok())
}

/// A relay whose notices rmcp sends, for a call rmcp answers: progress on
/// the call's own stream (rmcp routes it by its token), messages on the
/// session's.
pub(super) fn through_peer(
    connector: &str,
    progress: Option<ProgressToken>,
    level: Option<LoggingLevel>,
    peer: Peer<RoleServer>,
) -> Option<(Arc<CallRelay>, tokio::task::JoinHandle<()>)> {
    let (relay, mut notices) = CallRelay::new(connector, progress, level)?;
    // Ends with the call: the relay, its last sender, is dropped then.
    let sending = tokio::spawn(async move {
        while let Some(notice) = notices.recv().await {
            let notice: ServerNotification = notice;
            if peer.send_notification(notice).await.is_err() {
                return;
            }
        }
    });
    Some((relay, sending))
}
