//! Calls inside an MCP session (`Mcp-Session-Id`) answered without rmcp's
//! session worker.
//!
//! Clients of protocol 2025-03-26 to 2025-11-25 (the official SDKs among
//! them) open a session at `initialize` and send every later request with
//! its id. rmcp passes each such request to the session's worker task over
//! a channel and answers it as an event stream from another: in
//! `serve_process`, a read cost 1.3x the server CPU it costs here and a
//! `tools/list` 2.8x (the direct path of [`super::stateless`] is the same
//! code). A `tools/list` or `tools/call` of such a session is answered here
//! by the same handler code, as one JSON message (the transport lets a
//! server answer a POST so).
//!
//! A call that comes to wait for a person is answered as an event stream
//! instead. When the session's client declared at `initialize` that it
//! takes form elicitation, the question goes on that stream as a request
//! with an id of this module's own ([`StreamAsker`]); the client's answer
//! comes back as a POST of the session and is taken here ([`Sessions::answered`])
//! before rmcp could see it.
//!
//! rmcp stays the judge of the session: it creates it, answers everything
//! else (notifications, the event stream, `DELETE`, an `Mcp-Param-*`
//! header, a request whose headers it must check), and ends it when its
//! client is idle. Because requests answered here do not reach its worker,
//! one request in every half of rmcp's idle timeout is handed to it, so a
//! session in use is never ended as idle.

use super::logging::Levels;
use super::stateless::{
    Asking, Direct, Held, Request, accepts, media_type_is, request, single, trace_context,
};
use crate::person::Asker;
use crate::remote::relay::Level;
use axum::http::{HeaderMap, Method, header, request::Parts};
use futures_util::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientCapabilities, ClientJsonRpcMessage, ClientNotification, ClientRequest, ElicitRequest,
    ElicitRequestParams, ElicitResult, JsonRpcVersion2_0, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerRequest,
};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long a session's requests may bypass rmcp's worker before one is
/// handed to it again: half its idle timeout.
const REFRESH: Duration = Duration::from_secs(SessionConfig::DEFAULT_KEEP_ALIVE.as_secs() / 2);

/// The MCP sessions of one endpoint, as rmcp keeps them and as their
/// clients declared themselves at `initialize`.
pub(super) struct Sessions {
    manager: Arc<LocalSessionManager>,
    opened: parking_lot::Mutex<HashMap<Arc<str>, Opened>>,
    /// The log level each session set (through rmcp), forgotten with it.
    levels: Arc<Levels>,
}

/// What one session's client declared, when rmcp last saw it, its calls
/// answered here that are still running, and the questions they put to it.
struct Opened {
    /// The client takes form elicitation: its person can be asked.
    takes_form: bool,
    /// The last request of this session handed to rmcp's worker.
    handed: Instant,
    /// Fired by the client's `notifications/cancelled` for the call.
    running: HashMap<RequestId, CancellationToken>,
    /// Questions put on a call's event stream, by the id they were sent
    /// with, each waiting for the client's answer.
    asking: HashMap<RequestId, tokio::sync::oneshot::Sender<Reply>>,
}

/// The client's answer to a question: its result, or the error it sent.
type Reply = Result<serde_json::Value, McpError>;

/// A call answered here, cancellable by its client until this is dropped.
pub(super) struct Running {
    sessions: Arc<Sessions>,
    session: Arc<str>,
    id: RequestId,
    takes_form: bool,
    /// The log level the session set when the call came.
    level: Option<Level>,
}

impl Held for Running {
    fn level(&self) -> Option<Level> {
        self.level
    }

    /// The call's questions go on its own event stream; `None` when the
    /// client takes no form elicitation.
    fn asking(&self) -> Option<Asking> {
        if !self.takes_form {
            return None;
        }
        let (questions, asked) = tokio::sync::mpsc::channel(2);
        let asker = Arc::new(StreamAsker {
            sessions: self.sessions.clone(),
            session: self.session.clone(),
            questions,
        });
        Some(Asking { asker, asked })
    }
}

/// Puts a call's questions on its event stream, each as an
/// `elicitation/create` request with an id of this module's own, and
/// waits for the client's answer ([`Sessions::answered`]).
struct StreamAsker {
    sessions: Arc<Sessions>,
    session: Arc<str>,
    questions: tokio::sync::mpsc::Sender<String>,
}

impl Asker for StreamAsker {
    fn elicit(&self, question: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, String>> {
        Box::pin(async move {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            // Never one of rmcp's ids, which are numbers.
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let id = RequestId::String(format!("scout-ask-{n}").into());
            let message = serde_json::to_string(&ServerJsonRpcMessage::request(
                ServerRequest::ElicitRequest(ElicitRequest::new(question)),
                id.clone(),
            ))
            .map_err(|e| e.to_string())?;
            let (replied, reply) = tokio::sync::oneshot::channel();
            self.sessions
                .opened
                .lock()
                .get_mut(&self.session)
                .ok_or("the MCP session ended")?
                .asking
                .insert(id.clone(), replied);
            // Withdrawn from the session however this ends.
            let _unasked = Unasked {
                sessions: &self.sessions,
                session: &self.session,
                id: &id,
            };
            self.questions
                .send(message)
                .await
                .map_err(|_| "the call's event stream is closed")?;
            match reply.await {
                Ok(Ok(result)) => serde_json::from_value(result)
                    .map_err(|e| format!("the client's answer is not an elicitation result: {e}")),
                Ok(Err(error)) => Err(format!("the client could not ask: {}", error.message)),
                Err(_) => Err("the MCP session ended".to_string()),
            }
        })
    }
}

/// Removes a question from its session when dropped.
struct Unasked<'a> {
    sessions: &'a Sessions,
    session: &'a str,
    id: &'a RequestId,
}

impl Drop for Unasked<'_> {
    fn drop(&mut self) {
        if let Some(session) = self.sessions.opened.lock().get_mut(self.session) {
            session.asking.remove(self.id);
        }
    }
}

/// A JSON-RPC response, as a client answers a server's request.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    #[serde(rename = "jsonrpc")]
    _version: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(default)]
    result: Option<serde_json::Value>,
    #[serde(default)]
    error: Option<McpError>,
}

/// Whether a client declaring `capabilities` takes form elicitation, as
/// rmcp reads it (an `elicitation` naming no mode takes form).
pub(super) fn takes_form(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(session) = self.sessions.opened.lock().get_mut(&self.session) {
            session.running.remove(&self.id);
        }
    }
}

impl Sessions {
    pub(super) fn new(manager: Arc<LocalSessionManager>, levels: Arc<Levels>) -> Sessions {
        Sessions {
            manager,
            opened: Default::default(),
            levels,
        }
    }

    /// The request, if it is a `tools/list` or `tools/call` inside a
    /// session this endpoint answers directly; `None` hands it to rmcp. A
    /// call is cancelled through `gone` when its client sends
    /// `notifications/cancelled` for it while [`Running`] is held.
    pub(super) async fn direct(
        self: &Arc<Self>,
        parts: &Parts,
        body: &[u8],
        gone: &CancellationToken,
    ) -> Option<(Direct, Option<Running>)> {
        let headers = &parts.headers;
        if parts.method != Method::POST
            || headers.keys().any(|k| k.as_str().starts_with("mcp-param-"))
            || !media_type_is(headers, header::CONTENT_TYPE, "application/json")
            || !accepts(headers, "application/json")
            || !accepts(headers, "text/event-stream")
            || !a_session_version(headers)?
        {
            return None;
        }
        let id = single(headers, "mcp-session-id")?;
        let takes_form = {
            let opened = self.opened.lock();
            let session = opened.get(id)?;
            if session.handed.elapsed() >= REFRESH {
                return None;
            }
            session.takes_form
        };
        let (request_id, request, meta) = request(body)?;
        // A per-request protocol version is the stateless protocol's; rmcp
        // checks it against the headers.
        if meta.protocol_version().is_some() {
            return None;
        }
        let traced = Box::new(trace_context(&meta));
        let method = headers.get("mcp-method");
        let direct = match request {
            Request::List if method.is_none_or(|m| m.as_bytes() == b"tools/list") => {
                Direct::List(request_id, traced)
            }
            Request::Call(params)
                if method.is_none_or(|m| m.as_bytes() == b"tools/call")
                    && headers
                        .get("mcp-name")
                        .is_none_or(|n| n.as_bytes() == params.name.as_bytes()) =>
            {
                Direct::Call(request_id, params, traced)
            }
            _ => return None,
        };
        // Ended by rmcp (idle, or its worker stopped): rmcp answers 404.
        let session: Arc<str> = id.into();
        if !self.manager.has_session(&session).await.unwrap_or(false) {
            self.opened.lock().remove(id);
            return None;
        }
        let running = match &direct {
            Direct::List(..) | Direct::Ask(..) => None,
            Direct::Call(id, ..) => {
                self.opened
                    .lock()
                    .get_mut(&session)?
                    .running
                    .insert(id.clone(), gone.clone());
                Some(Running {
                    level: self.levels.of(&session),
                    sessions: self.clone(),
                    session,
                    id: id.clone(),
                    takes_form,
                })
            }
        };
        Some((direct, running))
    }

    /// Whether `body` is a client's answer to a question one of this
    /// endpoint's calls put to it (a POST of the same session, with the
    /// question's id); if so, it is handed to the waiting call. Anything
    /// else is left to the other paths.
    pub(super) fn answered(&self, parts: &Parts, body: &[u8]) -> bool {
        if parts.method != Method::POST {
            return false;
        }
        let Some(session) = single(&parts.headers, "mcp-session-id") else {
            return false;
        };
        if self
            .opened
            .lock()
            .get(session)
            .is_none_or(|s| s.asking.is_empty())
        {
            return false;
        }
        let Ok(answer) = serde_json::from_slice::<Answer>(body) else {
            return false;
        };
        let reply = match (answer.result, answer.error) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) => Err(error),
            _ => return false,
        };
        let Some(replied) = self
            .opened
            .lock()
            .get_mut(session)
            .and_then(|s| s.asking.remove(&answer.id))
        else {
            return false;
        };
        let _ = replied.send(reply);
        true
    }

    /// Notes what rmcp answered to a request this endpoint handed to it:
    /// an `initialize` (`body`) whose answer opened a session, any other
    /// request of a session, or a `DELETE` that ended one.
    pub(super) fn handed<B>(
        &self,
        method: &Method,
        headers: &HeaderMap,
        body: &[u8],
        answer: &axum::http::Response<B>,
    ) {
        if !answer.status().is_success() {
            return;
        }
        if let Some(id) = single(headers, "mcp-session-id") {
            let cancelled = cancelled_call(body);
            let mut opened = self.opened.lock();
            if method == Method::DELETE {
                // Closed by its client: what it still waits for withdraws,
                // as it does when rmcp closes its streams.
                if let Some(session) = opened.remove(id) {
                    session.running.values().for_each(CancellationToken::cancel);
                }
                self.levels.retain(|session| session != id);
            } else if let Some(session) = opened.get_mut(id) {
                session.handed = Instant::now();
                if let Some(cancelled) = cancelled
                    && let Some(gone) = session.running.get(&cancelled)
                {
                    gone.cancel();
                }
            }
            return;
        }
        let Some(answered) = single(answer.headers(), "mcp-session-id") else {
            return;
        };
        let Ok(ClientJsonRpcMessage::Request(message)) = serde_json::from_slice(body) else {
            return;
        };
        let ClientRequest::InitializeRequest(initialize) = message.request else {
            return;
        };
        // Only sessions of a version before the stateless one are answered
        // here (their answers shaped as rmcp shapes them for such a peer).
        if initialize.params.protocol_version.as_str() >= ProtocolVersion::STANDARD_HEADERS.as_str()
        {
            return;
        }
        // Sessions rmcp ended as idle are forgotten here, as new ones open.
        let mut opened = self.opened.lock();
        opened.retain(|_, s| s.handed.elapsed() < SessionConfig::DEFAULT_KEEP_ALIVE);
        self.levels.retain(|session| opened.contains_key(session));
        opened.insert(
            answered.into(),
            Opened {
                takes_form: takes_form(&initialize.params.capabilities),
                handed: Instant::now(),
                running: HashMap::new(),
                asking: HashMap::new(),
            },
        );
    }
}

/// The request a `notifications/cancelled` names.
pub(super) fn cancelled_call(body: &[u8]) -> Option<RequestId> {
    const METHOD: &[u8] = b"notifications/cancelled";
    if !body.windows(METHOD.len()).any(|w| w == METHOD) {
        return None;
    }
    match serde_json::from_slice(body).ok()? {
        ClientJsonRpcMessage::Notification(message) => match message.notification {
            ClientNotification::CancelledNotification(cancelled) => cancelled.params.request_id,
            _ => None,
        },
        _ => None,
    }
}

/// Whether the request's protocol version (its header, or 2025-03-26 when
/// there is none) is one that keeps sessions; `None` for a header rmcp
/// must refuse.
fn a_session_version(headers: &HeaderMap) -> Option<bool> {
    let Some(version) = headers.get("mcp-protocol-version") else {
        return Some(true);
    };
    let version = version.to_str().ok()?;
    if !ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .any(|known| known.as_str() == version)
    {
        return None;
    }
    Some(version < ProtocolVersion::STANDARD_HEADERS.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VERSION: &str = "2025-11-25";

    fn parts(method: Method, headers: &[(&str, &str)]) -> Parts {
        let mut request = axum::http::Request::builder()
            .method(method)
            .uri("/mcp/s/c");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.body(()).unwrap().into_parts().0
    }

    fn in_session(session: &str) -> Vec<(&'static str, String)> {
        vec![
            ("content-type", "application/json".into()),
            ("accept", "application/json, text/event-stream".into()),
            ("mcp-protocol-version", VERSION.into()),
            ("mcp-session-id", session.into()),
        ]
    }

    fn with(headers: &[(&'static str, String)], extra: &[(&'static str, &str)]) -> Parts {
        let mut all: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        all.extend_from_slice(extra);
        parts(Method::POST, &all)
    }

    fn call(id: u64) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "github_read_file", "arguments": {}}})
        .to_string()
        .into_bytes()
    }

    fn initialize(capabilities: serde_json::Value, version: &str) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities,
            "clientInfo": {"name": "t", "version": "0"}}})
        .to_string()
        .into_bytes()
    }

    /// A session rmcp holds, opened by an `initialize` declaring
    /// `capabilities` that this endpoint saw answered.
    async fn opened(capabilities: serde_json::Value, version: &str) -> (Arc<Sessions>, String) {
        let manager = Arc::new(LocalSessionManager::default());
        let (id, _transport) = manager.create_session().await.unwrap();
        let sessions = Arc::new(Sessions::new(manager, Default::default()));
        let answer = axum::http::Response::builder()
            .header("mcp-session-id", id.as_ref())
            .body(())
            .unwrap();
        let headers = parts(Method::POST, &[]).headers;
        sessions.handed(
            &Method::POST,
            &headers,
            &initialize(capabilities, version),
            &answer,
        );
        (sessions, id.to_string())
    }

    #[tokio::test]
    async fn a_call_in_a_session_whose_client_cannot_be_asked_is_answered_here() {
        let (sessions, id) = opened(json!({}), VERSION).await;
        let gone = CancellationToken::new();
        let headers = in_session(&id);
        let (request, running) = sessions
            .direct(&with(&headers, &[]), &call(3), &gone)
            .await
            .expect("answered here");
        assert!(matches!(request, Direct::Call(RequestId::Number(3), ..)));
        assert!(running.is_some());
        let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).to_string();
        let (request, running) = sessions
            .direct(&with(&headers, &[]), list.as_bytes(), &gone)
            .await
            .expect("answered here");
        assert!(matches!(request, Direct::List(RequestId::Number(4), _)));
        assert!(running.is_none());
        // Headers that agree with the body are fine.
        assert!(
            sessions
                .direct(
                    &with(
                        &headers,
                        &[
                            ("mcp-method", "tools/call"),
                            ("mcp-name", "github_read_file")
                        ]
                    ),
                    &call(5),
                    &gone
                )
                .await
                .is_some()
        );
    }

    /// A yes-or-no question, as an approval asks it.
    fn allow() -> ElicitRequestParams {
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "Allow?".into(),
            requested_schema: rmcp::model::ElicitationSchema::builder()
                .required_bool("approve")
                .build()
                .unwrap(),
        }
    }

    #[tokio::test]
    async fn a_question_goes_on_the_calls_stream_and_its_answer_comes_back_here() {
        let (sessions, id) = opened(json!({"elicitation": {}}), VERSION).await;
        let headers = in_session(&id);
        let gone = CancellationToken::new();
        let (_, running) = sessions
            .direct(&with(&headers, &[]), &call(3), &gone)
            .await
            .expect("a client that can be asked is answered here too");
        let Asking { asker, mut asked } = running.unwrap().asking().expect("it takes a form");
        let asking = tokio::spawn(async move { asker.elicit(allow()).await });
        let sent: serde_json::Value = serde_json::from_str(&asked.recv().await.unwrap()).unwrap();
        assert_eq!(sent["method"], "elicitation/create", "{sent}");
        assert_eq!(sent["params"]["message"], "Allow?", "{sent}");
        let question_id = sent["id"].clone();
        assert!(
            question_id.is_string(),
            "never one of rmcp's numbers: {sent}"
        );
        let reply = |id: &serde_json::Value| {
            json!({"jsonrpc": "2.0", "id": id,
                   "result": {"action": "accept", "content": {"approve": true}}})
            .to_string()
        };
        // Another session, another id, a request: not this question's answer.
        let (others, other_id) = opened(json!({"elicitation": {}}), VERSION).await;
        assert!(!others.answered(
            &with(&in_session(&other_id), &[]),
            reply(&question_id).as_bytes()
        ));
        assert!(!sessions.answered(
            &with(&headers, &[]),
            reply(&json!("scout-ask-0")).as_bytes()
        ));
        assert!(!sessions.answered(&with(&headers, &[]), &call(9)));
        assert!(!asking.is_finished());
        assert!(sessions.answered(&with(&headers, &[]), reply(&question_id).as_bytes()));
        let answer = asking.await.unwrap().expect("answered");
        assert_eq!(answer.action, rmcp::model::ElicitationAction::Accept);
        assert_eq!(answer.content.unwrap()["approve"], true);
        // Taken once: the same answer again is not this module's.
        assert!(!sessions.answered(&with(&headers, &[]), reply(&question_id).as_bytes()));
        assert!(sessions.opened.lock()[id.as_str()].asking.is_empty());

        // The session closed while a question waits: the asker hears so.
        let (_, running) = sessions
            .direct(&with(&headers, &[]), &call(4), &gone)
            .await
            .unwrap();
        let Asking { asker, mut asked } = running.unwrap().asking().unwrap();
        let asking = tokio::spawn(async move { asker.elicit(allow()).await });
        asked.recv().await.unwrap();
        let ok = axum::http::Response::builder().body(()).unwrap();
        sessions.handed(&Method::DELETE, &with(&headers, &[]).headers, b"", &ok);
        assert!(asking.await.unwrap().is_err());
    }

    #[tokio::test]
    async fn a_client_that_takes_no_form_is_not_asked() {
        let (sessions, id) = opened(json!({"elicitation": {"url": {}}}), VERSION).await;
        let (_, running) = sessions
            .direct(
                &with(&in_session(&id), &[]),
                &call(3),
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        assert!(running.unwrap().asking().is_none());
    }

    #[tokio::test]
    async fn the_clients_cancellation_reaches_a_running_call_until_it_ends() {
        let (sessions, id) = opened(json!({}), VERSION).await;
        let gone = CancellationToken::new();
        let headers = in_session(&id);
        let (_, running) = sessions
            .direct(&with(&headers, &[]), &call(3), &gone)
            .await
            .unwrap();
        let cancel = |request: u64| {
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": request, "reason": "closed"}})
            .to_string()
        };
        let accepted = axum::http::Response::builder()
            .status(202)
            .body(())
            .unwrap();
        let session = with(&headers, &[]).headers;
        sessions.handed(&Method::POST, &session, cancel(9).as_bytes(), &accepted);
        assert!(!gone.is_cancelled(), "another request's cancellation");
        sessions.handed(&Method::POST, &session, cancel(3).as_bytes(), &accepted);
        assert!(gone.is_cancelled());
        // Ended: its id is forgotten.
        drop(running);
        assert!(sessions.opened.lock()[id.as_str()].running.is_empty());
    }

    #[tokio::test]
    async fn anything_rmcp_must_judge_goes_to_rmcp() {
        let gone = CancellationToken::new();
        // A session of the stateless protocol is rmcp's.
        let (sessions, id) = opened(json!({}), "2026-07-28").await;
        assert!(
            sessions
                .direct(&with(&in_session(&id), &[]), &call(1), &gone)
                .await
                .is_none()
        );

        let (sessions, id) = opened(json!({}), VERSION).await;
        let headers = in_session(&id);
        let direct = |parts: Parts, body: Vec<u8>| {
            let (sessions, gone) = (sessions.clone(), gone.clone());
            async move { sessions.direct(&parts, &body, &gone).await.is_some() }
        };
        assert!(direct(with(&headers, &[]), call(1)).await, "the control");
        // A session nobody opened here.
        assert!(!direct(with(&in_session("other"), &[]), call(1)).await);
        // Headers that disagree with the body or need rmcp's checks.
        assert!(!direct(with(&headers, &[("mcp-name", "other")]), call(1)).await);
        assert!(!direct(with(&headers, &[("mcp-method", "tools/list")]), call(1)).await);
        assert!(!direct(with(&headers, &[("mcp-param-path", "x")]), call(1)).await);
        assert!(!direct(with(&headers, &[("mcp-session-id", "again")]), call(1)).await);
        let mut version = headers.clone();
        version[2].1 = "1999-01-01".into();
        assert!(
            !direct(with(&version, &[]), call(1)).await,
            "unknown version"
        );
        version[2].1 = "2026-07-28".into();
        assert!(
            !direct(with(&version, &[]), call(1)).await,
            "stateless version"
        );
        let no_accept: Vec<_> = headers
            .iter()
            .filter(|(k, _)| *k != "accept")
            .cloned()
            .collect();
        assert!(!direct(with(&no_accept, &[]), call(1)).await);
        // Not one request of the two.
        assert!(!direct(with(&headers, &[]), b"{not json".to_vec()).await);
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
        assert!(!direct(with(&headers, &[]), ping.into_bytes()).await);
        let per_request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "github_read_file",
            "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}}})
        .to_string();
        assert!(!direct(with(&headers, &[]), per_request.into_bytes()).await);
        // Not handed to rmcp for half its idle timeout: rmcp sees the next.
        sessions.opened.lock().get_mut(id.as_str()).unwrap().handed -= REFRESH;
        assert!(!direct(with(&headers, &[]), call(1)).await);
        let ok = axum::http::Response::builder().body(()).unwrap();
        sessions.handed(&Method::POST, &with(&headers, &[]).headers, &call(1), &ok);
        assert!(direct(with(&headers, &[]), call(1)).await, "seen again");
        // Ended by rmcp: forgotten.
        sessions
            .manager
            .close_session(&id.as_str().into())
            .await
            .unwrap();
        assert!(!direct(with(&headers, &[]), call(1)).await);
        assert!(sessions.opened.lock().get(id.as_str()).is_none());
    }

    #[tokio::test]
    #[allow(deprecated)]
    async fn a_call_carries_its_sessions_level_and_the_level_goes_with_the_session() {
        let (sessions, id) = opened(json!({}), VERSION).await;
        let (other, other_id) = opened(json!({}), VERSION).await;
        let headers = in_session(&id);
        let gone = CancellationToken::new();
        let level = |sessions: &Arc<Sessions>, headers: &[(&'static str, String)]| {
            let (sessions, parts, gone) = (sessions.clone(), with(headers, &[]), gone.clone());
            async move {
                let (_, running) = sessions.direct(&parts, &call(1), &gone).await.unwrap();
                running.unwrap().level()
            }
        };
        assert_eq!(
            level(&sessions, &headers).await,
            None,
            "none before setLevel"
        );
        sessions.levels.set_for(&id, Level::Warning);
        assert_eq!(level(&sessions, &headers).await, Some(Level::Warning));
        // Another session's calls: not this one's level.
        other.levels.set_for(&id, Level::Debug);
        assert_eq!(level(&other, &in_session(&other_id)).await, None);
        // Ended by its client: its level is forgotten with it.
        let ok = axum::http::Response::builder().body(()).unwrap();
        sessions.handed(&Method::DELETE, &with(&headers, &[]).headers, b"", &ok);
        assert_eq!(sessions.levels.of(&id), None);
    }

    #[tokio::test]
    async fn a_delete_forgets_the_session_and_withdraws_its_running_calls() {
        let (sessions, id) = opened(json!({}), VERSION).await;
        let headers = in_session(&id);
        let gone = CancellationToken::new();
        let (_, running) = sessions
            .direct(&with(&headers, &[]), &call(2), &gone)
            .await
            .unwrap();
        let ok = axum::http::Response::builder().body(()).unwrap();
        sessions.handed(&Method::DELETE, &with(&headers, &[]).headers, b"", &ok);
        assert!(gone.is_cancelled(), "the running call withdraws");
        drop(running);
        assert!(
            sessions
                .direct(&with(&headers, &[]), &call(1), &CancellationToken::new())
                .await
                .is_none()
        );
    }
}
