//! An agent session's upstream MCP session over streamable HTTP, spoken
//! by the host itself: each request posted and its answer read by the
//! task of the call that makes it.
//!
//! rmcp's client runs a session as tasks joined by channels: a request goes
//! from the caller to the service's loop, to the transport's worker, to a
//! task the worker spawns for the POST, and the answer comes back the same
//! way. With a client that leaves the host idle between its calls, each of
//! those hand-overs wakes a parked thread: most of what a proxied call cost
//! the host beyond its common per-call path. An idle session kept those
//! tasks and their channels' buffers: most of what it cost in memory. Here
//! a session is what the server named at `initialize` and the headers its
//! requests carry ([`Opened`]); every byte still goes through the session's
//! [`GuardedClient`] (the same guard, record and scrub), and the answer
//! (one JSON message, or an event stream) is read in the call's task:
//! - a notice on the stream is relayed as it arrives, in order, before the
//!   answer ([`super::notices::relay`]); a list change is told as rmcp's
//!   handler tells it;
//! - a request of the server's (`elicitation/create`, a refused sampling,
//!   `ping`) is answered by the session's handler
//!   ([`super::client::HostClient::answer`], what rmcp would call) and the
//!   answer posted;
//! - a stream the server closes before its answer, after naming an event
//!   id, is resumed with `Last-Event-ID` after its `retry` (SEP-1699,
//!   bounded as [`super::transport`] bounds it);
//! - a session the server no longer knows (404) is opened anew and the
//!   request sent once more (a request answered 404 ran nothing);
//! - a request past its deadline is cancelled upstream
//!   (`notifications/cancelled`);
//! - the session's standalone GET stream is read by a task of its own,
//!   started by a call and ending with the stream ([`standalone`]).
//!
//! rmcp keeps discovery's short sessions and the legacy HTTP+SSE transport.

use super::client::HostClient;
use super::transport::{GuardedClient, GuardedError, MAX_RETRY, Opened};
use futures_util::StreamExt;
use rmcp::ClientHandler;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientRequest,
    ErrorData, JsonRpcMessage, NumberOrString, RequestId, ServerJsonRpcMessage, ServerNotification,
    ServerResult,
};
use rmcp::model::{ClientNotification, InitializeRequest, InitializedNotification};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long to wait before resuming a stream whose server named no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// What a request sent this way came to.
// One per request, moved once: boxing the result would add an allocation
// to every proxied call.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Answered {
    /// The server's result.
    Result(ServerResult),
    /// The server's JSON-RPC error.
    Refused(ErrorData),
    /// The deadline passed (the request was cancelled upstream).
    Deadline,
    /// The exchange failed; why, in the host's words.
    Failed(String),
    /// The server no longer knows the session (404).
    Expired,
}

/// The JSON-RPC id of a request sent this way: a string rmcp's own
/// (numbers) never is.
pub(crate) fn next_id() -> RequestId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NumberOrString::String(format!("scout-{}", NEXT.fetch_add(1, Ordering::Relaxed)).into())
}

/// One upstream session as a request is sent on it this way.
pub(crate) struct Exchange<'a> {
    pub(crate) client: &'a GuardedClient,
    /// The session's handler (what rmcp would call).
    pub(crate) handler: &'a HostClient,
    pub(crate) opened: &'a Opened,
    pub(crate) uri: &'a Arc<str>,
}

impl Exchange<'_> {
    /// Sends `request` as `id` and reads its answer until `deadline`.
    pub(crate) async fn request(
        &self,
        request: ClientRequest,
        id: RequestId,
        deadline: Instant,
    ) -> Answered {
        let (client, uri, opened) = (self.client, self.uri, self.opened);
        let message = ClientJsonRpcMessage::request(request, id.clone());
        let answered = tokio::time::timeout_at(deadline.into(), self.run(message, &id)).await;
        match answered {
            Ok(answered) => answered,
            Err(_) => {
                // Cancelled upstream, as rmcp cancels a request past its timeout.
                let cancel = CancelledNotificationParam::new(
                    Some(id),
                    Some("the call's deadline passed".into()),
                );
                let cancel =
                    ClientJsonRpcMessage::notification(CancelledNotification::new(cancel).into());
                let (client, uri, opened) = (client.clone(), uri.clone(), opened.clone());
                tokio::spawn(async move {
                    let _ = client
                        .post_message(uri, cancel, opened.session, None, opened.headers)
                        .await;
                });
                Answered::Deadline
            }
        }
    }
}

/// The rest of an answered request's event stream read to its end, so
/// its connection is kept for the next request: here where the end has
/// already arrived (the usual case: a server ends the stream with its
/// answer), else by a task of its own, for at most [`DRAIN`].
fn drain(
    mut events: futures_util::stream::BoxStream<
        'static,
        Result<sse_stream::Sse, rmcp::transport::streamable_http_client::SseError>,
    >,
) {
    use futures_util::FutureExt;
    loop {
        match events.next().now_or_never() {
            Some(Some(_)) => continue,
            Some(None) => return,
            None => break,
        }
    }
    tokio::spawn(async move {
        let _ = tokio::time::timeout(DRAIN, events.for_each(|_| async {})).await;
    });
}

/// The longest the rest of an answered request's stream is read.
const DRAIN: Duration = Duration::from_secs(5);

/// What one message of the server's came to for the request awaiting it.
#[allow(clippy::large_enum_variant)]
enum Step {
    /// Its answer.
    Done(Answered),
    /// Something else, handled: read on.
    Next,
}

impl Exchange<'_> {
    async fn run(&self, message: ClientJsonRpcMessage, id: &RequestId) -> Answered {
        let sent = self.post(message).await;
        let mut events = match sent {
            Ok(StreamableHttpPostResponse::Json(message, _)) => {
                return match self.step(message, Some(id)).await {
                    Step::Done(answered) => answered,
                    Step::Next => Answered::Failed(
                        "the server answered the request with something other than its answer"
                            .into(),
                    ),
                };
            }
            Ok(StreamableHttpPostResponse::Sse(events, _)) => events,
            Ok(StreamableHttpPostResponse::Accepted) => {
                return Answered::Failed(
                    "the server accepted the request without answering it".into(),
                );
            }
            Ok(_) => {
                return Answered::Failed("the server's answer is not one the host reads".into());
            }
            Err(StreamableHttpError::SessionExpired) => return Answered::Expired,
            Err(e) => return Answered::Failed(e.to_string()),
        };
        let mut last_event: Option<String> = None;
        let mut retry: Option<Duration> = None;
        loop {
            let mut failed = None;
            while let Some(event) = events.next().await {
                let sse = match event {
                    Ok(sse) => sse,
                    Err(e) => {
                        failed = Some(e.to_string());
                        break;
                    }
                };
                if let Some(event_id) = sse.id {
                    last_event = Some(event_id);
                }
                if let Some(ms) = sse.retry {
                    retry = Some(Duration::from_millis(ms));
                }
                let Some(data) = sse.data.filter(|d| !d.trim().is_empty()) else {
                    continue;
                };
                // An event that is not a message of the protocol is skipped.
                let Ok(message) = serde_json::from_str::<ServerJsonRpcMessage>(&data) else {
                    continue;
                };
                if let Step::Done(answered) = self.step(message, Some(id)).await {
                    drain(events);
                    return answered;
                }
            }
            // The stream ended (or broke) before the answer: resumed after
            // the last event it named, if it named one.
            let Some(after) = last_event.clone() else {
                return Answered::Failed(failed.unwrap_or_else(|| {
                    "the server closed the request's event stream before answering it".into()
                }));
            };
            tokio::time::sleep(retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
            events = match self
                .client
                .get_stream(
                    self.uri.clone(),
                    self.opened.session.clone(),
                    Some(after),
                    None,
                    self.opened.headers.clone(),
                )
                .await
            {
                Ok(events) => events,
                Err(StreamableHttpError::SessionExpired) => return Answered::Expired,
                Err(e) => {
                    return Answered::Failed(format!(
                        "the request's event stream could not be resumed: {e}"
                    ));
                }
            };
        }
    }

    async fn post(
        &self,
        message: ClientJsonRpcMessage,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<GuardedError>> {
        self.client
            .post_message(
                self.uri.clone(),
                message,
                self.opened.session.clone(),
                None,
                self.opened.headers.clone(),
            )
            .await
    }

    /// One message of the server's while `id` (if any) awaits its answer.
    async fn step(&self, message: ServerJsonRpcMessage, id: Option<&RequestId>) -> Step {
        match message {
            JsonRpcMessage::Response(response) if Some(&response.id) == id => {
                Step::Done(Answered::Result(response.result))
            }
            JsonRpcMessage::Error(error) if error.id.is_some() && error.id.as_ref() == id => {
                Step::Done(Answered::Refused(error.error))
            }
            JsonRpcMessage::Notification(notice) => {
                super::notices::relay(&self.handler.relays, &notice.notification);
                if matches!(
                    notice.notification,
                    ServerNotification::ToolListChangedNotification(_)
                        | ServerNotification::ResourceListChangedNotification(_)
                        | ServerNotification::PromptListChangedNotification(_)
                ) {
                    self.handler.list_changed.notify_one();
                }
                Step::Next
            }
            JsonRpcMessage::Request(asked) => {
                let reply = match self.handler.answer(asked.request).await {
                    Ok(result) => ClientJsonRpcMessage::response(result, asked.id),
                    Err(error) => ClientJsonRpcMessage::error(error, Some(asked.id)),
                };
                if let Err(e) = self.post(reply).await {
                    tracing::debug!(error = %e, "a remote server's request could not be answered");
                }
                Step::Next
            }
            // Another request's answer: not this one's.
            _ => Step::Next,
        }
    }
}

/// Opens a session at the server `client` reaches: `initialize` (what rmcp
/// sends: the handler's capabilities, the version it names), then
/// `notifications/initialized`, posted as the session's requests are.
pub(crate) async fn open(
    client: &GuardedClient,
    handler: &HostClient,
    uri: &Arc<str>,
) -> Result<Opened, String> {
    let id = next_id();
    let initialize = ClientRequest::InitializeRequest(InitializeRequest::new(handler.get_info()));
    let message = ClientJsonRpcMessage::request(initialize, id.clone());
    let sent = client
        .post_message(uri.clone(), message, None, None, Default::default())
        .await
        .map_err(|e| e.to_string())?;
    let mut opened = Opened::default();
    let answered = match sent {
        StreamableHttpPostResponse::Json(message, session) => {
            opened.session = session.map(Into::into);
            let exchange = Exchange {
                client,
                handler,
                opened: &opened,
                uri,
            };
            match exchange.step(message, Some(&id)).await {
                Step::Done(answered) => answered,
                Step::Next => Answered::Failed("no answer to initialize".into()),
            }
        }
        StreamableHttpPostResponse::Sse(mut events, session) => {
            opened.session = session.map(Into::into);
            let exchange = Exchange {
                client,
                handler,
                opened: &opened,
                uri,
            };
            let mut answered =
                Answered::Failed("the server closed the stream before answering initialize".into());
            while let Some(Ok(sse)) = events.next().await {
                let Some(message) = message_of(sse) else {
                    continue;
                };
                if let Step::Done(done) = exchange.step(message, Some(&id)).await {
                    answered = done;
                    break;
                }
            }
            drain(events);
            answered
        }
        _ => Answered::Failed("the server did not answer initialize".into()),
    };
    let version = match answered {
        Answered::Result(ServerResult::InitializeResult(result)) => result.protocol_version,
        Answered::Result(_) => {
            return Err("the server answered initialize with something else".into());
        }
        Answered::Refused(error) => {
            return Err(format!("the server refused initialize: {}", error.message));
        }
        Answered::Failed(why) => return Err(why),
        Answered::Deadline | Answered::Expired => {
            return Err("the server did not answer initialize".into());
        }
    };
    if !version.has_initialize() {
        return Err(format!(
            "the server answered initialize with protocol version {}, which keeps no session",
            version.as_str()
        ));
    }
    if let Ok(value) = http::HeaderValue::from_str(version.as_str()) {
        opened
            .headers
            .insert(http::HeaderName::from_static("mcp-protocol-version"), value);
    }
    let initialized = ClientJsonRpcMessage::notification(
        ClientNotification::InitializedNotification(InitializedNotification::default()),
    );
    match client
        .post_message(
            uri.clone(),
            initialized,
            opened.session.clone(),
            None,
            opened.headers.clone(),
        )
        .await
    {
        Ok(_) => Ok(opened),
        Err(e) => Err(e.to_string()),
    }
}

/// The protocol message an event carries, if it carries one.
fn message_of(sse: sse_stream::Sse) -> Option<ServerJsonRpcMessage> {
    let data = sse.data.filter(|d| !d.trim().is_empty())?;
    serde_json::from_str(&data).ok()
}

/// Reads the session's standalone GET stream (see [`super::transport`]:
/// it opens once a call is in flight, at most one at a time, and ends
/// once no call has been for the linger), handling what the server says
/// on it as on a request's stream.
pub(crate) async fn standalone(
    client: GuardedClient,
    handler: HostClient,
    opened: Arc<Opened>,
    uri: Arc<str>,
) {
    let Ok(mut events) = client
        .get_stream(
            uri.clone(),
            opened.session.clone(),
            None,
            None,
            opened.headers.clone(),
        )
        .await
    else {
        return;
    };
    let exchange = Exchange {
        client: &client,
        handler: &handler,
        opened: &opened,
        uri: &uri,
    };
    while let Some(Ok(sse)) = events.next().await {
        if let Some(message) = message_of(sse) {
            exchange.step(message, None).await;
        }
    }
}
