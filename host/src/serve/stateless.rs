//! A single stateless MCP request answered without rmcp's per-request
//! machinery.
//!
//! A 2026-07-28 request carries everything it needs in itself. For each
//! one, rmcp's streamable HTTP service builds a service, spawns its serve
//! loop as a task and passes the message through channels: about 400 µs of
//! server CPU for a `tools/list` that does nothing else. A `tools/list`, or
//! a `tools/call` from a client that cannot be asked anything, is decoded
//! here with rmcp's own model types and answered by the same handler code
//! ([`super::mcp::ConnectorServer`]), as the same JSON-RPC message.
//!
//! A request inside an MCP session (`Mcp-Session-Id`) may be answered the
//! same way by [`super::in_session`]. Anything else goes to rmcp, which
//! validates it and answers as the protocol says: a notification, a
//! response, another method, a client that can elicit (its call may ask
//! its person a question over the event stream), an `Mcp-Param-*` header,
//! and any header that is missing or does not agree exactly with the body.
//!
//! A request is read as a JSON-RPC envelope first and its parameters once
//! its method is known ([`request`]), with rmcp's own parameter types.

use super::mcp::ConnectorServer;
use axum::http::{HeaderMap, Method, StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, JsonRpcVersion2_0, MetaObject, PaginatedRequestParams, ProtocolVersion,
    RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use tokio_util::sync::CancellationToken;

/// A request this module answers itself.
pub(super) enum Direct {
    /// `tools/list`, with the client's trace context from its `_meta`.
    List(RequestId, Box<MetaObject>),
    /// `tools/call` from a client that declared no elicitation, with the
    /// client's trace context and progress token from its `_meta`.
    Call(RequestId, Box<CallToolRequestParams>, Box<MetaObject>),
    /// `tools/call` from a client that takes form elicitation: a person is
    /// asked through an `input_required` result and the client's retry
    /// ([`super::input_required`]), its `requestState` and `inputResponses`
    /// in the parameters.
    Ask(RequestId, Box<CallToolRequestParams>, Box<MetaObject>),
}

/// A call's hold on the MCP session it came in, kept until the call ends.
pub(super) trait Held: Send + 'static {
    /// How the call asks its client's person; `None` when it cannot.
    fn asking(&self) -> Option<Asking>;

    /// The log level the session's client set ([`super::logging`]).
    #[allow(deprecated)]
    fn level(&self) -> Option<rmcp::model::LoggingLevel> {
        None
    }
}

/// How a call answered here asks its client's person: `asker` puts each
/// question on `asked`, which the call's event stream carries.
pub(super) struct Asking {
    pub(super) asker: std::sync::Arc<dyn crate::person::Asker>,
    pub(super) asked: tokio::sync::mpsc::Receiver<String>,
}

/// The `_meta` keys kept of a direct request: the W3C trace context and
/// the progress token.
pub(super) const PROGRESS_TOKEN: &str = "progressToken";

/// The request, if it is a single stateless `tools/list` or `tools/call`
/// whose headers agree exactly with its body; `None` hands it to rmcp.
pub(super) fn direct(parts: &Parts, body: &[u8]) -> Option<Direct> {
    let headers = &parts.headers;
    if parts.method != Method::POST
        || headers.contains_key("mcp-session-id")
        || headers.keys().any(|k| k.as_str().starts_with("mcp-param-"))
        || !media_type_is(headers, header::CONTENT_TYPE, "application/json")
        || !accepts(headers, "application/json")
        || !accepts(headers, "text/event-stream")
    {
        return None;
    }
    let version = single(headers, "mcp-protocol-version")?;
    if version != ProtocolVersion::V_2026_07_28.as_str() {
        return None;
    }
    let (id, request, meta) = request(body)?;
    if !meta
        .missing_required_keys(&ProtocolVersion::V_2026_07_28)
        .is_empty()
        || meta.protocol_version()?.as_str() != version
    {
        return None;
    }
    let elicitation = meta.client_capabilities()?.elicitation.clone();
    let can_elicit = elicitation.is_some();
    // Form elicitation, named or (neither mode named) implied.
    let takes_form = elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none());
    let traced = Box::new(trace_context(&meta));
    let method = single(headers, "mcp-method")?;
    match request {
        Request::List if method == "tools/list" => Some(Direct::List(id, traced)),
        Request::Call(params)
            if method == "tools/call"
                && !can_elicit
                && single(headers, "mcp-name")? == params.name =>
        {
            Some(Direct::Call(id, params, traced))
        }
        Request::Call(params)
            if method == "tools/call"
                && takes_form
                && single(headers, "mcp-name")? == params.name =>
        {
            Some(Direct::Ask(id, params, traced))
        }
        _ => None,
    }
}

/// A `tools/list` or `tools/call` request, as [`request`] read it.
pub(super) enum Request {
    List,
    /// The call's parameters, their `_meta` taken out.
    Call(Box<CallToolRequestParams>),
}

/// One JSON-RPC request as sent, its parameters read only once its method
/// is known. (rmcp's message type is an untagged enum: it buffers the whole
/// message and tries each shape in turn.) Anything else in it, or a field
/// twice, and it is not read here.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[serde(rename = "jsonrpc")]
    _version: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// `body` if it is one `tools/list` or `tools/call` request: its id, the
/// request, and its `_meta`. The parameters are rmcp's own types, read as
/// rmcp reads them; `None` for anything else (rmcp then judges it).
pub(super) fn request(body: &[u8]) -> Option<(RequestId, Request, RequestMetaObject)> {
    let envelope: Envelope = serde_json::from_slice(body).ok()?;
    match &*envelope.method {
        "tools/list" => {
            let params: PaginatedRequestParams = match envelope.params {
                Some(params) => serde_json::from_str(params.get()).ok()?,
                None => PaginatedRequestParams::default(),
            };
            Some((envelope.id, Request::List, params.meta.unwrap_or_default()))
        }
        "tools/call" => {
            let mut params: CallToolRequestParams =
                serde_json::from_str(envelope.params?.get()).ok()?;
            let meta = params.meta.take().unwrap_or_default();
            Some((envelope.id, Request::Call(Box::new(params)), meta))
        }
        _ => None,
    }
}

/// Answers `request` with `server`'s handler code, shaped for a peer of a
/// protocol version before 2026-07-28 when `legacy` (as rmcp shapes its
/// answers to a session of such a client). A call runs in a task
/// of its own: once allowed it runs to its end even if the caller goes
/// away (`gone` withdraws it only while it waits for a person).
///
/// A call that starts waiting for a person is answered as an event stream
/// (the protocol lets a server answer any request so): the questions it
/// puts to a client that can be asked (`running`, inside an MCP session
/// whose client takes form elicitation), and every `keep_alive` a progress
/// notification (to a client that cannot be asked and sent a
/// `progressToken`) or an SSE comment, so that no client's read timeout
/// runs out while a person decides; then the result. A client that goes
/// away stops reading; the next send fails and the call withdraws.
pub(super) async fn answer(
    server: ConnectorServer,
    request: Direct,
    gone: CancellationToken,
    headers: &HeaderMap,
    keep_alive: std::time::Duration,
    legacy: bool,
    running: Option<impl Held>,
) -> Response {
    let message = match request {
        Direct::List(id, meta) => list_message(&server, id, &meta, Some(headers), legacy),
        Direct::Ask(id, params, meta) => {
            super::input_required::answer(&server, id, *params, &meta, gone, headers).await
        }
        Direct::Call(id, params, meta) => {
            let traced = super::mcp::trace_parent(&meta, Some(headers), &id);
            let (asker, mut asked) = match running.as_ref().and_then(Held::asking) {
                Some(Asking { asker, asked }) => (Some(asker), Some(asked)),
                None => (None, None),
            };
            let progress = meta
                .0
                .get(PROGRESS_TOKEN)
                .filter(|_| asker.is_none())
                .cloned();
            // What the client hears of its call while it runs, where it
            // asked: the level its session set, or (2026-07-28, no session)
            // the one its request names.
            let level = match &running {
                Some(held) => held.level(),
                None => super::logging::asked_in(&meta),
            };
            let (relay, mut notices) = server
                .relay(super::logging::progress_in(&meta), level)
                .unzip();
            let (waiting, approval) = tokio::sync::oneshot::channel();
            let mut approval = Some(approval);
            let withdraw = gone.clone();
            let relayed = relay.clone();
            let mut call = tokio::spawn(async move {
                // Cancellable by its client until it ends.
                let _running = running;
                let call = server.call_directly(*params, gone, traced, Some(waiting), asker);
                crate::remote::relay::relaying(relayed, call).await
            });
            // Finished before it waited or told anything: one JSON answer.
            // Else the stream, beginning with what came first.
            let first = tokio::select! {
                finished = &mut call => match next_notice(&mut notices).now_or_never().flatten() {
                    // Told something just before it finished.
                    Some(notice) => Ok((Some(notice), Some(finished), false)),
                    None => Err(finished),
                },
                Some(()) = approved(&mut approval) => Ok((None, None, true)),
                Some(question) = next_question(&mut asked) => Ok((Some(question), None, false)),
                Some(notice) = next_notice(&mut notices) => Ok((Some(notice), None, false)),
            };
            let finished = match first {
                Err(finished) => finished,
                Ok((first, finished, waits)) => {
                    let waiting = Waiting {
                        id,
                        progress,
                        gone: withdraw,
                        keep_alive,
                        legacy,
                        asked,
                        first,
                        waits,
                        approval,
                        notices,
                        relay,
                    };
                    let call: CallTask = match finished {
                        Some(finished) => Box::pin(std::future::ready(finished)),
                        None => Box::pin(call),
                    };
                    return waiting.events(call);
                }
            };
            call_message(finished, id, legacy)
        }
    };
    match message {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot serialise an MCP answer");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The JSON-RPC answer to a `tools/list` of `server`: its result is
/// serialised once per revision, only the id is new. `headers` is `None`
/// over stdio.
pub(super) fn list_message(
    server: &ConnectorServer,
    id: RequestId,
    meta: &MetaObject,
    headers: Option<&HeaderMap>,
    legacy: bool,
) -> Result<String, serde_json::Error> {
    let offered = {
        let traced = super::mcp::trace_parent(meta, headers, &id);
        let _span = server.list_span(&traced);
        server.offered()
    };
    match offered {
        Ok(listed) => Ok(format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#,
            serde_json::to_string(&id)?,
            if legacy {
                &listed.legacy_result
            } else {
                &listed.result
            }
        )),
        Err(error) => serde_json::to_string(&ServerJsonRpcMessage::error(error, Some(id))),
    }
}

/// The JSON-RPC answer to a finished call.
pub(super) fn call_message(
    finished: Result<Result<rmcp::model::CallToolResponse, McpError>, tokio::task::JoinError>,
    id: RequestId,
    legacy: bool,
) -> Result<String, serde_json::Error> {
    let result = match finished {
        Ok(result) => result.map(|result| {
            let mut result = ServerResult::from(result);
            if legacy {
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
            }
            result
        }),
        Err(e) => {
            tracing::error!(error = %e, "a tool call's task failed");
            Err(McpError::internal_error(
                "the call failed in the host",
                None,
            ))
        }
    };
    serde_json::to_string(&match result {
        Ok(result) => ServerJsonRpcMessage::response(result, id),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    })
}

/// A call's task, or its outcome once it has one.
type CallTask = futures_util::future::BoxFuture<
    'static,
    Result<Result<rmcp::model::CallToolResponse, McpError>, tokio::task::JoinError>,
>;

/// The event stream of a call waiting for a person, or telling its client
/// of its progress ([`crate::remote::relay`]).
struct Waiting {
    id: RequestId,
    /// Sent in progress notifications, when the client gave one.
    progress: Option<serde_json::Value>,
    /// Withdraws the call's wait when the client stops reading.
    gone: CancellationToken,
    keep_alive: std::time::Duration,
    legacy: bool,
    /// The questions the call puts to its client, as JSON-RPC requests
    /// (`None`: a client that cannot be asked).
    asked: Option<tokio::sync::mpsc::Receiver<String>>,
    /// A question or notice put before the stream began.
    first: Option<String>,
    /// Whether the call waits for a person (else it runs).
    waits: bool,
    /// Fires when the call comes to wait for a person, until it has.
    approval: Option<tokio::sync::oneshot::Receiver<crate::approvals::ApprovalId>>,
    /// The call's notices, as JSON-RPC messages, where its client asked.
    notices: Option<tokio::sync::mpsc::Receiver<rmcp::model::ServerNotification>>,
    /// Where the client's progress is counted, when it has a relay.
    relay: Option<std::sync::Arc<crate::remote::relay::CallRelay>>,
}

impl Waiting {
    /// The response: the call's questions and keep-alives until `call`
    /// finishes, then its answer.
    fn events(mut self, mut call: CallTask) -> Response {
        let (events, received) = tokio::sync::mpsc::channel::<String>(4);
        tokio::spawn(async move {
            let message = |data: &str| format!("event: message\ndata: {data}\n\n");
            let mut tick = tokio::time::interval(self.keep_alive);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut sent = 0u64;
            let mut open = match self.first.take() {
                Some(question) => events.send(message(&question)).await.is_ok(),
                None => true,
            };
            while open {
                let event = tokio::select! {
                    // Its notices before its answer.
                    biased;
                    Some(notice) = next_notice(&mut self.notices) => message(&notice),
                    finished = &mut call => {
                        while let Some(notice) = next_notice(&mut self.notices).now_or_never().flatten() {
                            if events.send(message(&notice)).await.is_err() {
                                break;
                            }
                        }
                        let data = call_message(finished, self.id, self.legacy).unwrap_or_else(|e| {
                            tracing::error!(error = %e, "cannot serialise an MCP answer");
                            String::new()
                        });
                        let _ = events.send(message(&data)).await;
                        return;
                    }
                    Some(question) = next_question(&mut self.asked) => message(&question),
                    Some(()) = approved(&mut self.approval) => {
                        self.waits = true;
                        continue;
                    }
                    _ = tick.tick() => {
                        sent += 1;
                        match &self.progress {
                            Some(token) if self.waits => {
                                // Relayed progress only goes on from here.
                                if let Some(relay) = &self.relay {
                                    relay.sent_progress(sent as f64);
                                }
                                message(&waiting_progress(token, sent))
                            }
                            _ if self.waits => ": waiting for a person to decide\n\n".to_string(),
                            _ => ": the call runs\n\n".to_string(),
                        }
                    }
                };
                open = events.send(event).await.is_ok();
            }
            // The client stopped reading: the wait withdraws, and the
            // call's own end is no one's to hear.
            self.gone.cancel();
            let _ = call.await;
        });
        let body = futures_util::stream::unfold(received, |mut received| async move {
            received
                .recv()
                .await
                .map(|event| (Ok::<_, std::convert::Infallible>(event), received))
        });
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            axum::body::Body::from_stream(body),
        )
            .into_response()
    }
}

/// The next question a call puts to its client; `None` once it puts no
/// more, or for a client that cannot be asked.
async fn next_question(asked: &mut Option<tokio::sync::mpsc::Receiver<String>>) -> Option<String> {
    match asked {
        Some(asked) => asked.recv().await,
        None => None,
    }
}

/// The next notice of a call, as the JSON-RPC message sent; `None` once it
/// tells no more, or for a client that asked for none.
async fn next_notice(
    notices: &mut Option<tokio::sync::mpsc::Receiver<rmcp::model::ServerNotification>>,
) -> Option<String> {
    let notice = notices.as_mut()?.recv().await?;
    crate::remote::relay::message(notice)
}

/// Fires once, when the call comes to wait for a person.
async fn approved(
    approval: &mut Option<tokio::sync::oneshot::Receiver<crate::approvals::ApprovalId>>,
) -> Option<()> {
    let waiting = approval.as_mut()?;
    let asked = waiting.await.is_ok();
    *approval = None;
    asked.then_some(())
}

/// The `sent`th progress notification of a call waiting for a person.
pub(super) fn waiting_progress(token: &serde_json::Value, sent: u64) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": sent,
                   "message": "waiting for a person to decide"}
    })
    .to_string()
}

/// Only the W3C trace context, the progress token and the log level of a
/// request's `_meta` (SEP-414, SEP-2575): nothing else of it is kept.
pub(super) fn trace_context(meta: &MetaObject) -> MetaObject {
    let mut kept = MetaObject::new();
    if let Some(token) = meta.0.get(PROGRESS_TOKEN) {
        kept.0.insert(PROGRESS_TOKEN.to_string(), token.clone());
    }
    if let Some(level) = meta.0.get(super::logging::LOG_LEVEL) {
        kept.0
            .insert(super::logging::LOG_LEVEL.to_string(), level.clone());
    }
    if let Some(value) = meta.get_traceparent() {
        kept.set_traceparent(value);
    }
    if let Some(value) = meta.get_tracestate() {
        kept.set_tracestate(value);
    }
    kept
}

/// The one value of header `name`; `None` when it is absent, repeated or
/// not text.
pub(super) fn single<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

pub(super) fn media_type_is(headers: &HeaderMap, name: header::HeaderName, wanted: &str) -> bool {
    single(headers, name.as_str()).is_some_and(|value| {
        value
            .split(';')
            .next()
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(wanted))
    })
}

pub(super) fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|item| item.split(';').next())
        .any(|essence| essence.trim().eq_ignore_ascii_case(wanted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/mcp/s/c");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.body(()).unwrap().into_parts().0
    }

    const MODERN: &[(&str, &str)] = &[
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "github_read_file"),
    ];

    fn call(capabilities: serde_json::Value) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "github_read_file", "arguments": {"path": "README.md"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": capabilities,
                      "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn a_plain_stateless_call_is_answered_directly() {
        let request = direct(&parts(MODERN), &call(json!({})));
        assert!(
            matches!(request, Some(Direct::Call(RequestId::Number(7), ref p, ref m)) if p.name == "github_read_file" && m.get_traceparent().is_none())
        );
    }

    #[test]
    fn a_client_that_takes_form_elicitation_is_asked_by_result() {
        for capability in [
            json!({}),
            json!({"form": {}}),
            json!({"form": {}, "url": {}}),
        ] {
            let request = direct(&parts(MODERN), &call(json!({"elicitation": capability})));
            assert!(
                matches!(request, Some(Direct::Ask(RequestId::Number(7), ref p, _)) if p.name == "github_read_file"),
                "{capability}"
            );
        }
    }

    #[test]
    fn a_direct_call_keeps_only_the_clients_trace_context_of_its_meta() {
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut body: serde_json::Value = serde_json::from_slice(&call(json!({}))).unwrap();
        body["params"]["_meta"]["traceparent"] = json!(traceparent);
        body["params"]["_meta"]["tracestate"] = json!("vendor=1");
        let Some(Direct::Call(_, _, meta)) = direct(&parts(MODERN), body.to_string().as_bytes())
        else {
            panic!("answered directly");
        };
        assert_eq!(meta.get_traceparent(), Some(traceparent));
        assert_eq!(meta.get_tracestate(), Some("vendor=1"));
        assert_eq!(meta.0.len(), 2, "nothing else of `_meta` is kept: {meta:?}");
    }

    #[test]
    fn anything_rmcp_must_judge_goes_to_rmcp() {
        let body = call(json!({}));
        let with = |extra: &[(&str, &str)]| {
            let mut all: Vec<(&str, &str)> = MODERN.to_vec();
            all.extend_from_slice(extra);
            parts(&all)
        };
        let without = |name: &str| {
            let all: Vec<(&str, &str)> =
                MODERN.iter().copied().filter(|(k, _)| *k != name).collect();
            parts(&all)
        };
        // A client that takes only URL elicitation: rmcp judges it.
        assert!(direct(&parts(MODERN), &call(json!({"elicitation": {"url": {}}}))).is_none());
        // Headers that disagree with the body, or are missing or repeated.
        assert!(direct(&with(&[("mcp-session-id", "x")]), &body).is_none());
        assert!(direct(&with(&[("mcp-param-path", "x")]), &body).is_none());
        assert!(direct(&with(&[("mcp-name", "other")]), &body).is_none());
        assert!(direct(&without("mcp-name"), &body).is_none());
        assert!(direct(&without("mcp-method"), &body).is_none());
        assert!(direct(&without("mcp-protocol-version"), &body).is_none());
        assert!(direct(&without("accept"), &body).is_none());
        let mut old = MODERN.to_vec();
        old[2] = ("mcp-protocol-version", "2025-11-25");
        assert!(direct(&parts(&old), &body).is_none());
        // Not one request: malformed JSON, a batch, a notification.
        assert!(direct(&parts(MODERN), b"{not json").is_none());
        assert!(
            direct(
                &parts(MODERN),
                format!("[{}]", String::from_utf8(body.clone()).unwrap()).as_bytes()
            )
            .is_none()
        );
        let notification =
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        assert!(direct(&parts(MODERN), notification.as_bytes()).is_none());
        // Not JSON-RPC 2.0, a field it does not have, a field twice, no
        // parameters for a call.
        let mut other: serde_json::Value = serde_json::from_slice(&body).unwrap();
        other["jsonrpc"] = json!("1.0");
        assert!(direct(&parts(MODERN), other.to_string().as_bytes()).is_none());
        other["jsonrpc"] = json!("2.0");
        other["result"] = json!({});
        assert!(direct(&parts(MODERN), other.to_string().as_bytes()).is_none());
        let twice = String::from_utf8(body.clone())
            .unwrap()
            .replacen("\"id\": 7", "\"id\": 7, \"id\": 8", 1)
            .replacen("\"id\":7", "\"id\":7,\"id\":8", 1);
        assert!(twice.contains("8"), "{twice}");
        assert!(direct(&parts(MODERN), twice.as_bytes()).is_none());
        let bare_call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}).to_string();
        assert!(direct(&parts(MODERN), bare_call.as_bytes()).is_none());
        // A `_meta` without the client's capabilities.
        let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "github_read_file", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
        .to_string();
        assert!(direct(&parts(MODERN), bare.as_bytes()).is_none());
    }
}
