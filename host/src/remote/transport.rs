//! rmcp's streamable-HTTP client over the host's own guarded `http` handle.
//!
//! Every byte the host sends a remote MCP server goes through
//! [`HttpCapability::send`]: the same address rules as a guest's request
//! (loopback and private networks only where the operator allowed them),
//! no redirect followed (a 3xx is an error here, so nothing reaches another
//! origin), the credential injected by the handle, and the response capped
//! over its whole length. An event stream is handed to rmcp event by event
//! as it arrives (a server may ask the host something mid-answer), each
//! event scrubbed whole before it is parsed; a JSON body is read whole and
//! scrubbed.
//!
//! The session's standalone GET stream (where a server sends what no
//! request of the host's is answering: an `elicitation/create` its SDK
//! sends unrelated to the call, say) is open only while `tools/call`s of
//! the session are in flight, and for [`STANDALONE_LINGER`] after the last
//! ([`Standalone`]): rmcp asks for it after `initialize`; the GET waits
//! until a call starts, goes through the same guarded handle, is filed in
//! the record of the call that takes it, and ends once the session has had
//! no call in flight for the linger (rmcp then asks again, and waits
//! again). A client calling again within the linger (one whose own work
//! between calls takes milliseconds) finds the stream open: no GET, no new
//! connection per call. At most one is open per upstream session; a server
//! without one (405), or a GET that fails, leaves the session on POST
//! answers only.
//!
//! A request's event stream that the server closes before its answer, after
//! naming an event `id`, is resumed as SEP-1699 has it: rmcp waits the
//! server's `retry` (capped at [`MAX_RETRY`]) and asks [`GuardedClient`]'s
//! `get_stream` for it again with `Last-Event-ID`, a GET through the same
//! guarded handle, filed in the call's record like the POST it resumes. At
//! most [`MAX_RESUMES`] GETs resume one request's stream, failed ones
//! included (rmcp retries a failed one after 1, 2, 4… seconds): then the
//! call ends unanswered; its own deadline bounds the whole.

use crate::capabilities::http::{HttpCapability, HttpError, HttpExchange, Method, Request};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use parking_lot::Mutex;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The longest `retry` a server may ask the host to wait before resuming.
pub(crate) const MAX_RETRY: Duration = Duration::from_secs(10);
/// The most GETs that resume one request's event stream.
pub(crate) const MAX_RESUMES: u32 = 5;
/// The most event ids remembered for resuming, over all of a session's
/// requests (the oldest are forgotten first).
const MAX_EVENT_IDS: usize = 1024;

/// The longest a call waits for its session's standalone GET stream to
/// open before it is sent (a server's words on it before then are lost).
pub(crate) const STANDALONE_WAIT: Duration = Duration::from_secs(3);
/// How long the standalone GET stream stays open after the session's last
/// call ended, for the next call to find it open.
pub(crate) const STANDALONE_LINGER: Duration = Duration::from_secs(2);
/// What the standalone GET stream's exchanges are filed under until a
/// call takes them (a JSON-RPC id the host sends is never empty).
pub(crate) const STANDALONE_RECORD: &str = "";

/// The session's standalone GET stream, and the calls that keep it open.
pub(crate) struct Standalone {
    /// The `tools/call` requests in flight.
    calls: tokio::sync::watch::Sender<usize>,
    state: tokio::sync::watch::Sender<StandaloneState>,
}

#[derive(Default, Clone, Copy)]
struct StandaloneState {
    /// The server named a session (rmcp asks for the stream only then).
    session: bool,
    /// The server has none (405) or the GET failed: never asked again.
    refused: bool,
    /// A GET stream is open now.
    open: bool,
}

impl Default for Standalone {
    fn default() -> Standalone {
        Standalone {
            calls: tokio::sync::watch::Sender::new(0),
            state: tokio::sync::watch::Sender::new(StandaloneState::default()),
        }
    }
}

/// One call in flight, until dropped.
pub(crate) struct InFlight(Arc<Standalone>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.calls.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Marks the stream closed when it is dropped.
struct OpenStream(Arc<Standalone>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.state.send_modify(|s| s.open = false);
    }
}

impl Standalone {
    /// A call starts: the stream may open, and stays open until it ends.
    pub(crate) fn begin(self: &Arc<Self>) -> InFlight {
        self.calls.send_modify(|n| *n += 1);
        InFlight(self.clone())
    }

    /// Whether a call of the session is in flight.
    pub(crate) fn in_flight(&self) -> bool {
        *self.calls.borrow() > 0
    }

    /// Waits (at most `bound`) until the stream is open, where the session
    /// will have one: a server's words on it are not lost to a call that
    /// was sent before it opened.
    pub(crate) async fn ready(&self, bound: Duration) {
        let mut state = self.state.subscribe();
        let _ = tokio::time::timeout(bound, state.wait_for(|s| !s.session || s.refused || s.open))
            .await;
    }

    fn refuse(&self) {
        self.state.send_modify(|s| s.refused = true);
    }

    /// Whether the server has none (405), or its GET failed.
    pub(crate) fn refused(&self) -> bool {
        self.state.borrow().refused
    }
}

/// Why the guarded transport could not complete an exchange.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GuardedError(pub String);

/// The exchanges of the `tools/call` requests sent, by JSON-RPC request id,
/// until the call that sent one takes its record. An answer's body may
/// still be read after the call has its result (rmcp drains the rest of an
/// event stream in the background), so an exchange is filed when its
/// headers arrive and its byte count is read when it is taken.
#[derive(Default)]
pub(crate) struct Exchanges {
    by_request: Mutex<HashMap<String, Vec<Filed>>>,
    /// Which request's stream each event id was seen on, so a GET resuming
    /// after it is filed with that request and counted against its bound.
    streams: Mutex<Streams>,
}

/// The event ids seen on requests' streams, and how often each request's
/// stream has been resumed.
#[derive(Default)]
struct Streams {
    by_event: HashMap<String, StreamOf>,
    order: std::collections::VecDeque<String>,
    resumes: HashMap<String, u32>,
}

/// The request an event id's stream answers.
#[derive(Clone)]
struct StreamOf {
    /// The JSON-RPC request id.
    request: String,
    /// Whether its exchanges are filed (a `tools/call`).
    filed: bool,
}

impl Streams {
    fn saw(&mut self, event_id: &str, of: &StreamOf) {
        if self.by_event.contains_key(event_id) {
            return;
        }
        if self.order.len() >= MAX_EVENT_IDS
            && let Some(oldest) = self.order.pop_front()
            && let Some(gone) = self.by_event.remove(&oldest)
            && !self.by_event.values().any(|s| s.request == gone.request)
        {
            self.resumes.remove(&gone.request);
        }
        self.by_event.insert(event_id.to_string(), of.clone());
        self.order.push_back(event_id.to_string());
    }

    /// The request resumed after `event_id`, counted; `Err` once its
    /// stream has been resumed [`MAX_RESUMES`] times.
    fn resume(&mut self, event_id: &str) -> Result<Option<StreamOf>, ()> {
        let Some(of) = self.by_event.get(event_id).cloned() else {
            return Ok(None);
        };
        let resumes = self.resumes.entry(of.request.clone()).or_default();
        if *resumes >= MAX_RESUMES {
            return Err(());
        }
        *resumes += 1;
        Ok(Some(of))
    }
}

/// One exchange as filed, its body still counting.
struct Filed {
    exchange: HttpExchange,
    read: Arc<AtomicU64>,
    started: Instant,
    done: Arc<AtomicBool>,
    /// Why reading the body failed, when it did.
    failed: Arc<Mutex<Option<String>>>,
}

/// Records left unclaimed (a call that never learnt its request id) are
/// dropped after this long.
const UNCLAIMED: std::time::Duration = std::time::Duration::from_secs(600);

impl Exchanges {
    /// The exchanges of request `id`, taken.
    pub(crate) fn take(&self, id: &str) -> Vec<HttpExchange> {
        let filed = self.by_request.lock().remove(id).unwrap_or_default();
        filed
            .into_iter()
            .map(|f| {
                let mut exchange = f.exchange;
                exchange.response_bytes = f.read.load(Ordering::Relaxed);
                if let Some(why) = f.failed.lock().take() {
                    exchange.error.get_or_insert(why);
                }
                if !f.done.load(Ordering::Relaxed) {
                    exchange.micros = f.started.elapsed().as_micros() as u64;
                }
                exchange
            })
            .collect()
    }

    fn file(&self, id: &str, filed: Filed) {
        let mut map = self.by_request.lock();
        map.retain(|_, v| v.iter().any(|f| f.started.elapsed() < UNCLAIMED));
        if map.len() < 1024 {
            map.entry(id.to_string()).or_default().push(filed);
        }
    }
}

/// An open session as its requests are sent ([`super::direct`]): the
/// session the server named (none for a server that keeps none) and the
/// headers sent with each (`MCP-Protocol-Version`).
#[derive(Clone, Default)]
pub(crate) struct Opened {
    pub(crate) session: Option<Arc<str>>,
    pub(crate) headers: HashMap<HeaderName, HeaderValue>,
}

/// A [`StreamableHttpClient`] whose every request goes through one guarded
/// `http` handle (bound to the server's origin and the brand's credential).
#[derive(Clone)]
pub(crate) struct GuardedClient {
    /// Set when the server answered 401: its token was refused.
    pub(crate) unauthorized: Arc<AtomicBool>,
    /// The scope a 403 `insufficient_scope` challenge named: the token
    /// lacks it ([`crate::remote::oauth::needs_scope`]).
    pub(crate) scope_needed: Arc<Mutex<Option<String>>>,
    pub(crate) http: Arc<HttpCapability>,
    /// The endpoint's path below the origin (`/mcp`).
    pub(crate) path: String,
    pub(crate) exchanges: Arc<Exchanges>,
    pub(crate) standalone: Arc<Standalone>,
}

impl GuardedClient {
    fn request(
        &self,
        method: Method,
        session_id: Option<&str>,
        custom_headers: &HashMap<HeaderName, HeaderValue>,
        body: Option<Vec<u8>>,
    ) -> Request {
        let mut headers = vec![(
            "accept".to_string(),
            "application/json, text/event-stream".to_string(),
        )];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        if let Some(id) = session_id {
            headers.push(("mcp-session-id".into(), id.to_string()));
        }
        for (name, value) in custom_headers {
            if let Ok(value) = value.to_str() {
                headers.push((name.as_str().to_string(), value.to_string()));
            }
        }
        Request {
            method,
            path: self.path.clone(),
            query: Vec::new(),
            headers,
            body,
        }
    }

    /// Sends one request through the handle. Its exchange is recorded
    /// under `record_as` once its body has been read to the end.
    async fn send(
        &self,
        request: Request,
        record_as: Option<String>,
    ) -> Result<Sent, StreamableHttpError<GuardedError>> {
        let started = Instant::now();
        let method = match request.method {
            Method::Post => "POST",
            Method::Delete => "DELETE",
            _ => "GET",
        };
        let request_bytes = request.body.as_ref().map_or(0, Vec::len) as u64;
        let path = request.path.clone();
        let sent = self.http.send_streamed(request).await;
        let read = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(Mutex::new(None));
        let origin = self.http.origin();
        let exchange = HttpExchange {
            destination: None,
            method: method.into(),
            route: Some(format!("{method} {path}")),
            path,
            status: sent.as_ref().ok().map(|r| r.status),
            request_bytes,
            response_bytes: 0,
            graphql: None,
            error: sent.as_ref().err().map(describe),
            micros: 0,
            server: crate::capabilities::http::ExchangeServer {
                host: origin.host_str().unwrap_or_default().to_string(),
                port: origin.port_or_known_default(),
                started_at: std::time::SystemTime::now() - started.elapsed(),
            },
        };
        let ended = sent.is_err();
        if ended {
            done.store(true, Ordering::Relaxed);
        }
        let mut filed_exchange = exchange;
        filed_exchange.micros = started.elapsed().as_micros() as u64;
        if let Some(id) = &record_as {
            self.exchanges.file(
                id,
                Filed {
                    exchange: filed_exchange,
                    read: read.clone(),
                    started,
                    done: done.clone(),
                    failed: failed.clone(),
                },
            );
        }
        match sent {
            Ok(streamed) => Ok(Sent {
                status: streamed.status,
                headers: streamed.headers,
                body: streamed.body,
                record: Record { read, done, failed },
            }),
            Err(e) => Err(StreamableHttpError::Client(GuardedError(describe(&e)))),
        }
    }
}

/// An answer whose body is still to be read.
struct Sent {
    status: u16,
    headers: Vec<(String, String)>,
    body: BoxStream<'static, Result<bytes::Bytes, HttpError>>,
    record: Record,
}

/// The filed exchange's counters, updated as its body is read.
struct Record {
    read: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    failed: Arc<Mutex<Option<String>>>,
}

impl Record {
    fn count(&self, bytes: usize) {
        self.read.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn done(self) {
        self.done.store(true, Ordering::Relaxed);
    }

    fn failed(self, why: &str) {
        *self.failed.lock() = Some(why.to_string());
        self.done();
    }
}

impl Sent {
    /// The whole body, scrubbed (a JSON answer, an error's diagnostic).
    async fn whole(mut self, http: &HttpCapability) -> Result<Vec<u8>, GuardedError> {
        let mut body = Vec::new();
        while let Some(chunk) = self.body.next().await {
            match chunk {
                Ok(chunk) => {
                    self.record.count(chunk.len());
                    body.extend_from_slice(&chunk);
                }
                Err(e) => {
                    let why = describe(&e);
                    self.record.failed(&why);
                    return Err(GuardedError(why));
                }
            }
        }
        self.record.done();
        Ok(http.scrub(&body))
    }

    /// The body as server-sent events, each scrubbed whole before it is
    /// parsed, handed over as each arrives (a server may ask the host
    /// something mid-answer and wait for the reply).
    /// `stream`: the request it answers, whose event ids are remembered in
    /// `exchanges` for a resumption.
    fn events(
        self,
        http: Arc<HttpCapability>,
        stream: Option<(StreamOf, Arc<Exchanges>)>,
    ) -> BoxStream<'static, Result<sse_stream::Sse, SseError>> {
        struct Framing {
            body: BoxStream<'static, Result<bytes::Bytes, HttpError>>,
            pending: Vec<u8>,
            record: Option<Record>,
            http: Arc<HttpCapability>,
            ended: bool,
            stream: Option<(StreamOf, Arc<Exchanges>)>,
        }
        let framing = Framing {
            body: self.body,
            pending: Vec::new(),
            record: Some(self.record),
            http,
            ended: false,
            stream,
        };
        futures_util::stream::unfold(framing, |mut f| async move {
            loop {
                if let Some(event) = take_event(&mut f.pending) {
                    let event = f.http.scrub(&event);
                    match parse_event(&event) {
                        Some(sse) => {
                            if let (Some(id), Some((of, exchanges))) = (&sse.id, &f.stream) {
                                exchanges.streams.lock().saw(id, of);
                            }
                            return Some((Ok(sse), f));
                        }
                        None => continue,
                    }
                }
                if f.ended {
                    return None;
                }
                match f.body.next().await {
                    Some(Ok(chunk)) => {
                        if let Some(record) = &f.record {
                            record.count(chunk.len());
                        }
                        f.pending.extend_from_slice(&chunk);
                    }
                    Some(Err(e)) => {
                        let why = describe(&e);
                        if let Some(record) = f.record.take() {
                            record.failed(&why);
                        }
                        f.ended = true;
                        f.pending.clear();
                        return Some((Err(SseError::Body(Box::new(GuardedError(why)))), f));
                    }
                    None => {
                        if let Some(record) = f.record.take() {
                            record.done();
                        }
                        f.ended = true;
                        // A last event without its blank line.
                        f.pending.extend_from_slice(b"\n\n");
                    }
                }
            }
        })
        .boxed()
    }
}

/// The next whole event (up to a blank line) taken from `pending`.
fn take_event(pending: &mut Vec<u8>) -> Option<Vec<u8>> {
    let text = &pending[..];
    let end = [&b"\r\n\r\n"[..], b"\n\n", b"\r\r"]
        .iter()
        .filter_map(|sep| memchr::memmem::find(text, sep).map(|at| (at, sep.len())))
        .min_by_key(|(at, _)| *at)?;
    let event = pending[..end.0].to_vec();
    pending.drain(..end.0 + end.1);
    Some(event)
}

/// One event's fields (`event`, `data`, `id`, `retry`); `None` for an event
/// with none of them (a comment, a keep-alive).
fn parse_event(event: &[u8]) -> Option<sse_stream::Sse> {
    let text = String::from_utf8_lossy(event);
    let mut sse = sse_stream::Sse::default();
    let mut data: Option<String> = None;
    let mut any = false;
    for line in text.split(['\n', '\r']) {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => sse.event = Some(value.to_string()),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_string()),
            },
            "id" => sse.id = Some(value.to_string()),
            "retry" => {
                sse.retry = value
                    .parse::<u64>()
                    .ok()
                    .map(|ms| ms.min(MAX_RETRY.as_millis() as u64));
            }
            _ => continue,
        }
        any = true;
    }
    sse.data = data;
    any.then_some(sse)
}

/// What the handle's refusal or failure says, as the trace and the agent see it.
pub(crate) fn describe(e: &HttpError) -> String {
    match e {
        HttpError::Denied(why) => format!("refused by the host: {why}"),
        HttpError::Transport(why) => format!("the server could not be reached: {why}"),
        HttpError::Timeout => "the server did not answer in time".into(),
        HttpError::TooLarge(cap) => {
            format!("the server's answer was larger than the host's limit of {cap} bytes")
        }
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The stream a request's answer is: its id, and whether it is filed.
fn stream_of(message: &ClientJsonRpcMessage) -> Option<StreamOf> {
    match message {
        ClientJsonRpcMessage::Request(r) => Some(StreamOf {
            request: r.id.to_string(),
            filed: request_id(message).is_some(),
        }),
        _ => None,
    }
}

/// The id a `tools/call`, `resources/read` or `prompts/get` request's
/// exchange is filed under (other messages are not filed: no call takes
/// their record).
pub(crate) fn request_id(message: &ClientJsonRpcMessage) -> Option<String> {
    use rmcp::model::ClientRequest;
    match message {
        ClientJsonRpcMessage::Request(r)
            if matches!(
                r.request,
                ClientRequest::CallToolRequest(_)
                    | ClientRequest::ReadResourceRequest(_)
                    | ClientRequest::GetPromptRequest(_)
            ) =>
        {
            Some(r.id.to_string())
        }
        _ => None,
    }
}

impl StreamableHttpClient for GuardedClient {
    type Error = GuardedError;

    async fn post_message(
        &self,
        _uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<GuardedError>> {
        let body = serde_json::to_vec(&message)?;
        let request = self.request(
            Method::Post,
            session_id.as_deref(),
            &custom_headers,
            Some(body),
        );
        let response = self.send(request, request_id(&message)).await?;
        let status = response.status;
        let www_authenticate = header(&response.headers, "www-authenticate").map(str::to_string);
        let session = header(&response.headers, "mcp-session-id").map(str::to_string);
        let content_type = header(&response.headers, "content-type")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if status == 401 {
            self.unauthorized.store(true, Ordering::Relaxed);
        }
        if session.is_some() && (200..300).contains(&status) {
            self.standalone.state.send_if_modified(|s| {
                let was = s.session;
                s.session = true;
                !was
            });
        }
        let insufficient = (status == 403)
            .then(|| crate::remote::oauth::insufficient_scope(www_authenticate.as_deref()?))
            .flatten();
        if let Some(scope) = &insufficient {
            *self.scope_needed.lock() = Some(scope.clone());
        }
        let refused = match status {
            401 => Some(StreamableHttpError::AuthRequired(AuthRequiredError::new(
                www_authenticate.unwrap_or_default(),
            ))),
            403 if insufficient.is_some() => Some(StreamableHttpError::Client(GuardedError(
                "the server answered 403: the token lacks the scope it needs".into(),
            ))),
            404 if session_id.is_some() => Some(StreamableHttpError::SessionExpired),
            300..=399 => Some(StreamableHttpError::Client(GuardedError(format!(
                "the server answered {status}, a redirect: the host never follows one off the server's origin"
            )))),
            200..=299 => None,
            _ if content_type.starts_with("application/json") => None,
            _ => Some(StreamableHttpError::Client(GuardedError(format!(
                "the server answered {status}"
            )))),
        };
        if let Some(refused) = refused {
            // Read (capped) and dropped: only its exchange is kept.
            let _ = response.whole(&self.http).await;
            return Err(refused);
        }
        // A notification or a response awaits no answer: any 2xx is its
        // acceptance, whatever body a server sends with it (some send `{}`).
        let awaits_answer = matches!(message, ClientJsonRpcMessage::Request(_));
        if status == 202 || status == 204 || (!awaits_answer && (200..300).contains(&status)) {
            let _ = response.whole(&self.http).await;
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if content_type.starts_with("text/event-stream") {
            let stream = stream_of(&message).map(|of| (of, self.exchanges.clone()));
            return Ok(StreamableHttpPostResponse::Sse(
                response.events(self.http.clone(), stream),
                session,
            ));
        }
        let body = response
            .whole(&self.http)
            .await
            .map_err(StreamableHttpError::Client)?;
        if content_type.starts_with("application/json") {
            let message: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
            return Ok(StreamableHttpPostResponse::Json(message, session));
        }
        if body.is_empty() && !matches!(message, ClientJsonRpcMessage::Request(_)) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(Some(
            content_type,
        )))
    }

    async fn delete_session(
        &self,
        _uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<GuardedError>> {
        let request = self.request(Method::Delete, Some(&session_id), &custom_headers, None);
        let response = self.send(request, None).await?;
        let status = response.status;
        let _ = response.whole(&self.http).await;
        match status {
            405 => Err(StreamableHttpError::ServerDoesNotSupportDeleteSession),
            _ => Ok(()),
        }
    }

    async fn get_stream(
        &self,
        _uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<GuardedError>,
    > {
        // Without an event id of a request's stream: the standalone stream.
        let known = last_event_id
            .as_deref()
            .is_some_and(|id| self.exchanges.streams.lock().by_event.contains_key(id));
        let Some(last_event_id) = last_event_id.clone().filter(|_| known) else {
            return self
                .standalone_stream(session_id, last_event_id, custom_headers)
                .await;
        };
        let of = self
            .exchanges
            .streams
            .lock()
            .resume(&last_event_id)
            .map_err(|()| {
                // Terminates rmcp's reconnection: the call ends unanswered.
                tracing::warn!(
                    resumes = MAX_RESUMES,
                    "a remote server closed one answer's event stream too often: not resumed again"
                );
                StreamableHttpError::ServerDoesNotSupportSse
            })?;
        let mut request = self.request(Method::Get, session_id.as_deref(), &custom_headers, None);
        request
            .headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case("accept"));
        request
            .headers
            .push(("accept".into(), "text/event-stream".into()));
        request
            .headers
            .push(("last-event-id".into(), last_event_id.clone()));
        let record_as = of
            .as_ref()
            .filter(|of| of.filed)
            .map(|of| of.request.clone());
        let response = self.send(request, record_as).await?;
        let status = response.status;
        let content_type = header(&response.headers, "content-type")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let refused = match status {
            401 => {
                self.unauthorized.store(true, Ordering::Relaxed);
                let challenge = header(&response.headers, "www-authenticate")
                    .unwrap_or_default()
                    .to_string();
                Some(StreamableHttpError::AuthRequired(AuthRequiredError::new(
                    challenge,
                )))
            }
            405 => Some(StreamableHttpError::ServerDoesNotSupportSse),
            404 if session_id.is_some() => Some(StreamableHttpError::SessionExpired),
            300..=399 => Some(StreamableHttpError::Client(GuardedError(format!(
                "the server answered {status}, a redirect: the host never follows one off the server's origin"
            )))),
            200..=299 if content_type.starts_with("text/event-stream") => None,
            200..=299 => Some(StreamableHttpError::UnexpectedContentType(Some(
                content_type,
            ))),
            _ => Some(StreamableHttpError::Client(GuardedError(format!(
                "the server answered {status} to the GET resuming an answer's event stream"
            )))),
        };
        if let Some(refused) = refused {
            let _ = response.whole(&self.http).await;
            return Err(refused);
        }
        let stream = of.map(|of| (of, self.exchanges.clone()));
        Ok(response.events(self.http.clone(), stream))
    }
}

impl GuardedClient {
    /// The session's standalone GET stream, once a call is in flight (see
    /// the module's doc); it ends when the session's last call ends.
    async fn standalone_stream(
        &self,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<GuardedError>,
    > {
        let standalone = self.standalone.clone();
        let mut calls = standalone.calls.subscribe();
        if calls.wait_for(|n| *n > 0).await.is_err() {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let mut taken = false;
        standalone.state.send_if_modified(|s| {
            taken = !s.refused && !s.open;
            s.open |= taken;
            taken
        });
        if !taken {
            // Refused before, or one is open already: at most one.
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let open = OpenStream(standalone.clone());
        let mut request = self.request(Method::Get, session_id.as_deref(), &custom_headers, None);
        request
            .headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case("accept"));
        request
            .headers
            .push(("accept".into(), "text/event-stream".into()));
        if let Some(id) = last_event_id {
            request.headers.push(("last-event-id".into(), id));
        }
        let response = match self.send(request, Some(STANDALONE_RECORD.into())).await {
            Ok(response) => response,
            Err(e) => {
                standalone.refuse();
                return Err(e);
            }
        };
        let status = response.status;
        let content_type = header(&response.headers, "content-type")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if !(200..300).contains(&status) || !content_type.starts_with("text/event-stream") {
            // 405: the server has none (the specification allows it); any
            // other answer: not asked again in this session either.
            if status != 405 {
                tracing::debug!(
                    status,
                    "a remote server refused its session's standalone event stream"
                );
            }
            standalone.refuse();
            let _ = response.whole(&self.http).await;
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        // Ends once no call has been in flight for the linger.
        let last_call = async move {
            loop {
                if calls.wait_for(|n| *n == 0).await.map(|_| ()).is_err() {
                    return;
                }
                let next = calls.wait_for(|n| *n > 0);
                match tokio::time::timeout(STANDALONE_LINGER, next).await {
                    Ok(Ok(_)) => continue,
                    _ => return,
                }
            }
        };
        Ok(response
            .events(self.http.clone(), None)
            .take_until(last_call)
            .map(move |event| {
                let _open = &open;
                event
            })
            .boxed())
    }
}

/// The 2024-11-05 transport (HTTP+SSE), for a server that has only that:
/// a GET opens the event stream, whose first `endpoint` event names where
/// messages are posted; answers arrive on the stream as `message` events.
/// Everything rides the same guarded handle: the stream is read event by
/// event, each scrubbed whole before it is parsed, and a message endpoint
/// on another origin is refused before anything is posted to it.
pub(crate) struct LegacySse {
    client: GuardedClient,
    /// Where messages are posted: the endpoint's path and query.
    path: String,
    query: Vec<(String, String)>,
    events: BoxStream<'static, Result<sse_stream::Sse, SseError>>,
}

impl GuardedClient {
    /// Opens the legacy event stream and reads its message endpoint.
    pub(crate) async fn open_legacy(&self) -> Result<LegacySse, String> {
        let mut request = self.request(Method::Get, None, &HashMap::new(), None);
        request.headers = vec![("accept".into(), "text/event-stream".into())];
        let response = self.send(request, None).await.map_err(|e| e.to_string())?;
        let status = response.status;
        let content_type = header(&response.headers, "content-type")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if !(200..300).contains(&status) || !content_type.starts_with("text/event-stream") {
            let _ = response.whole(&self.http).await;
            return Err(format!(
                "the server answered the event stream's GET with {status} ({content_type}): is it an HTTP+SSE server (`transport = \"sse\"`)?"
            ));
        }
        let mut events = response.events(self.http.clone(), None);
        let named = loop {
            match events.next().await {
                Some(Ok(sse)) if sse.event.as_deref() == Some("endpoint") => {
                    break sse.data.unwrap_or_default();
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(format!("the event stream failed: {e}")),
                None => {
                    return Err(
                        "the event stream ended before it named its message endpoint".into(),
                    );
                }
            }
        };
        let origin = self.http.origin();
        let endpoint = origin
            .join(&self.path)
            .and_then(|stream| stream.join(named.trim()))
            .map_err(|_| "the server's message endpoint is not a URL".to_string())?;
        if endpoint.origin() != origin.origin() {
            return Err(format!(
                "the server named a message endpoint on another origin ({}): refused, nothing was posted",
                endpoint.origin().ascii_serialization()
            ));
        }
        Ok(LegacySse {
            client: self.clone(),
            path: endpoint.path().to_string(),
            query: endpoint.query_pairs().into_owned().collect(),
            events,
        })
    }
}

impl rmcp::transport::Transport<rmcp::RoleClient> for LegacySse {
    type Error = GuardedError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), GuardedError>> + Send + 'static {
        let client = self.client.clone();
        let (path, query) = (self.path.clone(), self.query.clone());
        async move {
            let body = serde_json::to_vec(&item).map_err(|e| GuardedError(e.to_string()))?;
            let mut request = client.request(Method::Post, None, &HashMap::new(), Some(body));
            request.path = path;
            request.query = query;
            let response = client
                .send(request, request_id(&item))
                .await
                .map_err(|e| GuardedError(e.to_string()))?;
            let status = response.status;
            let _ = response.whole(&client.http).await;
            if (200..300).contains(&status) {
                Ok(())
            } else {
                Err(GuardedError(format!(
                    "the server answered {status} to a posted message"
                )))
            }
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            match self.events.next().await? {
                Ok(sse) if sse.event.as_deref().is_none_or(|e| e == "message") => {
                    // An event that is not a message is skipped.
                    if let Some(message) = sse
                        .data
                        .and_then(|data| serde_json::from_str::<ServerJsonRpcMessage>(&data).ok())
                    {
                        return Some(message);
                    }
                }
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
    }

    async fn close(&mut self) -> Result<(), GuardedError> {
        Ok(())
    }
}
