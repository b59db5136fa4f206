//! What the host, as an MCP client, answers a remote server that asks it
//! something. Nothing is passed through blindly: the server cannot sample
//! the session's model (`sampling/createMessage`) or learn its roots
//! (`roots/list`). A form `elicitation/create` reaches the session's person
//! only where that session may be asked (person chat, over a client that
//! takes form elicitation), shown as the server's own words and bounded by
//! the call's deadline; anywhere else, and for a URL elicitation (a page to
//! open that the host cannot vouch for), it is declined. A
//! `notifications/tools/list_changed` only makes the host list the tools
//! again: what the server now offers is a candidate for review, never a tool.
//! An accepted form gets its defaults for the fields the person left out
//! ([`super::defaults`], SEP-1034), and a person is asked only while a call
//! of the session is in flight.

// Sampling and roots are deprecated in MCP (SEP-2577), but servers still
// send them: refusing them needs their types.
#![allow(deprecated)]

use super::notices::Relays;
use crate::person::Asker;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode,
    Implementation, ListRootsResult, ServerRequest,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The people an agent session's calls may ask: the client each session's
/// last call came from, where that session may be asked.
pub(crate) type Askers = Arc<parking_lot::Mutex<HashMap<String, Arc<dyn Asker>>>>;

/// Who a server's elicitation goes to, for one agent session.
#[derive(Clone)]
pub(crate) struct Person {
    pub(crate) askers: Askers,
    pub(crate) session: String,
    /// The connector, named to the person as the one asking.
    pub(crate) server: String,
    /// The longest a person is waited for (the call's deadline ends it anyway).
    pub(crate) timeout: Duration,
}

/// The host's client side of one upstream MCP session.
#[derive(Clone)]
pub(crate) struct HostClient {
    /// Told when the server says its tool list changed.
    pub(crate) list_changed: Arc<tokio::sync::Notify>,
    /// What the server asked of the host that was refused, for the trace
    /// (method names only).
    pub(crate) refused: Arc<parking_lot::Mutex<Vec<&'static str>>>,
    /// Where an elicitation may go: `None` for discovery.
    pub(crate) person: Option<Person>,
    /// What the person answered each elicitation (`accept`, `decline`,
    /// `cancel`) or why it was declined unasked, for the call's record.
    pub(crate) asked: Arc<parking_lot::Mutex<Vec<&'static str>>>,
    /// The running calls whose clients hear of them ([`super::relay`]).
    pub(crate) relays: Relays,
    /// Whether a call of this session is in flight: a person is asked
    /// only then.
    pub(crate) standalone: Arc<super::transport::Standalone>,
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

impl HostClient {
    /// The answer to a request of the server's, as rmcp's dispatch of this
    /// handler would give it ([`super::direct`] has no rmcp service).
    pub(crate) async fn answer(&self, request: ServerRequest) -> Result<ClientResult, McpError> {
        match request {
            ServerRequest::PingRequest(_) => Ok(ClientResult::empty(())),
            ServerRequest::CreateMessageRequest(_) => Err(self.refuse("sampling/createMessage")),
            ServerRequest::ListRootsRequest(_) => Err(self.refuse("roots/list")),
            ServerRequest::ElicitRequest(request) => self
                .elicit(request.params)
                .await
                .map(ClientResult::ElicitResult),
            _ => Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                "not a request this client answers",
                None,
            )),
        }
    }

    async fn elicit(&self, request: ElicitRequestParams) -> Result<ElicitResult, McpError> {
        let note = |what: &'static str| {
            let mut asked = self.asked.lock();
            if asked.len() < 64 {
                asked.push(what);
            }
        };
        let peer = self
            .person
            .as_ref()
            .filter(|_| self.standalone.in_flight())
            .and_then(|p| Some((p, p.askers.lock().get(&p.session).cloned()?)));
        let (person, peer) = match (peer, request) {
            (
                Some((person, peer)),
                ElicitRequestParams::FormElicitationParams {
                    message,
                    requested_schema,
                    ..
                },
            ) => (person, (peer, message, requested_schema)),
            (Some(_), _) => {
                note("declined: only a form elicitation is passed on (a URL to open is not)");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
            (None, _) => {
                let _ = self.refuse("elicitation/create");
                note(
                    "declined: nobody to ask (no person in this session, or a client that takes no form elicitation)",
                );
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let (peer, message, requested_schema) = peer;
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        // The server's words, marked as its own, with anything a renderer
        // would hide shown as a marker.
        let words = crate::shown::text(&message);
        let forwarded = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "The remote MCP server `{}` asks, in its own words (not Scout's): {}",
                person.server, words.text
            ),
            requested_schema,
        };
        match tokio::time::timeout(person.timeout, peer.elicit(forwarded)).await {
            Ok(Ok(mut result)) => {
                if result.action == ElicitationAction::Accept {
                    // SEP-1034: the form's defaults for what the person left out.
                    result.content = super::defaults::apply(&schema, result.content.take());
                }
                note(match result.action {
                    ElicitationAction::Accept => "accept",
                    ElicitationAction::Decline => "decline",
                    ElicitationAction::Cancel => "cancel",
                    _ => "answered",
                });
                Ok(result)
            }
            _ => {
                note("cancel: the person did not answer");
                Ok(ElicitResult::new(ElicitationAction::Cancel))
            }
        }
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
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        self.elicit(request).await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    /// Resources and prompts are candidates too: listed again, reviewed anew.
    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        // No sampling, no roots; form elicitation where a person may be asked.
        let mut capabilities = ClientCapabilities::default();
        if self.person.is_some() {
            capabilities.elicitation = Some(
                rmcp::model::ElicitationCapability::new()
                    .with_form(rmcp::model::FormElicitationCapability::default()),
            );
        }
        // `initialize` names the latest version that has it: rmcp's LATEST
        // (2026-07-28) has none, and a server of 2025-11-25 refuses it.
        ClientConfig::new(
            capabilities,
            Implementation::new("scout-connector-host", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
