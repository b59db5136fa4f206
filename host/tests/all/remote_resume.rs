//! A remote server that closes a call's event stream before its answer,
//! after a priming event (`id`, `retry`), as SEP-1699 lets it (the MCP
//! conformance suite's `sse-retry`): the host resumes the stream with a GET
//! carrying `Last-Event-ID`, after the server's `retry` and not before,
//! through the same guarded handle, and the answer arriving on the resumed
//! stream is the call's result. The resuming GET is in the call's record.
//! A server that keeps closing the stream is resumed a bounded number of
//! times, then the call ends as the host's failure.
//!
//! The server is the test's own (axum, in process), speaking the wire
//! format the suite's scenario speaks.

use super::crash_safety::{Mcp, ok_text};
use super::remote_mcp::{call, front_hostile, listed, review, tool};
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use scout_host::store::TraceState;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `retry` the server names, in milliseconds.
const RETRY_MS: u64 = 400;

/// What the server saw, and what it is waiting to answer.
#[derive(Default)]
struct Seen {
    /// The `Last-Event-ID` of every GET, in order.
    gets: Vec<Option<String>>,
    /// How long after the call's stream closed each GET came.
    get_delays: Vec<Duration>,
    /// When the last call's stream was closed, unanswered.
    closed_at: Option<Instant>,
    /// The call to answer on the next GET.
    pending: Option<Value>,
    /// Each tool's calls.
    calls: Vec<String>,
    /// How many events numbered so far.
    events: u64,
}

type Shared = Arc<Mutex<Seen>>;

fn sse(body: String) -> Response {
    (
        StatusCode::OK,
        [
            ("content-type", "text/event-stream"),
            ("mcp-session-id", "resume-session"),
        ],
        Body::from(body),
    )
        .into_response()
}

fn json_answer(value: Value) -> Response {
    (
        StatusCode::OK,
        [
            ("content-type", "application/json"),
            ("mcp-session-id", "resume-session"),
        ],
        value.to_string(),
    )
        .into_response()
}

async fn post(State(seen): State<Shared>, body: String) -> Response {
    let message: Value = serde_json::from_str(&body).unwrap_or_default();
    let id = message["id"].clone();
    if id.is_null() {
        return StatusCode::ACCEPTED.into_response();
    }
    match message["method"].as_str().unwrap_or_default() {
        "initialize" => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "resume-test", "version": "1.0.0"},
        }})),
        "tools/list" => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "resumed", "description": "Answers on the resumed stream.",
             "inputSchema": {"type": "object", "properties": {}}},
            {"name": "never_answered", "description": "Closes its stream every time.",
             "inputSchema": {"type": "object", "properties": {}}},
        ]}})),
        "tools/call" => {
            let tool = message["params"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let mut seen = seen.lock().unwrap();
            seen.calls.push(tool.clone());
            seen.events += 1;
            let priming = format!("id: e{}\nretry: {RETRY_MS}\ndata: \n\n", seen.events);
            seen.closed_at = Some(Instant::now());
            seen.pending = Some(json!({"id": id, "tool": tool}));
            // The stream ends here, gracefully, before any answer.
            sse(priming)
        }
        _ => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
    }
}

async fn get(State(seen): State<Shared>, headers: HeaderMap) -> Response {
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut seen = seen.lock().unwrap();
    // Only a GET resuming a stream is timed against the stream's close (the
    // session's standalone GET may come before or after the call's POST).
    if let (Some(closed), Some(_)) = (seen.closed_at, &last) {
        let delay = closed.elapsed();
        seen.get_delays.push(delay);
    }
    seen.gets.push(last.clone());
    if last.is_none() {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    seen.events += 1;
    let event = seen.events;
    let Some(pending) = seen.pending.clone() else {
        return sse(format!("id: e{event}\nretry: {RETRY_MS}\ndata: \n\n"));
    };
    if pending["tool"] == "never_answered" {
        // Another priming event, and closed again.
        seen.closed_at = Some(Instant::now());
        return sse(format!("id: e{event}\nretry: {RETRY_MS}\ndata: \n\n"));
    }
    seen.pending = None;
    seen.closed_at = None;
    let answer = json!({"jsonrpc": "2.0", "id": pending["id"], "result": {
        "content": [{"type": "text", "text": "answered after resuming"}],
    }});
    sse(format!("event: message\nid: e{event}\ndata: {answer}\n\n"))
}

/// The server on a free loopback port.
async fn server() -> (u16, Shared) {
    let seen = Shared::default();
    let app = axum::Router::new()
        .route("/mcp", axum::routing::post(post).get(get))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (port, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_stream_closed_before_its_answer_is_resumed_with_last_event_id_after_retry() {
    let dir = tempfile::tempdir().unwrap();
    let (port, seen) = server().await;
    let (serve, admin) = front_hostile(
        dir.path(),
        port,
        "credential = \"none\"\ncall_timeout_secs = 8\n",
        &[],
    );
    let reviews = listed(&admin, "hostile").await;
    review(&admin, "hostile", tool(&reviews, "resumed"), "read").await;
    review(&admin, "hostile", tool(&reviews, "never_answered"), "read").await;
    let http = reqwest::Client::new();
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "hostile").connect().await;

    let answered = call(&mcp, "resumed", json!({})).await.unwrap();
    assert_eq!(
        ok_text(&answered).as_deref(),
        Some("answered after resuming"),
        "{answered}"
    );
    {
        let seen = seen.lock().unwrap();
        // The session's standalone stream asked for once, while the call
        // was in flight (this server has none: 405, never asked again),
        // then one GET resuming after the call's priming event.
        let mut gets = seen.gets.clone();
        gets.sort();
        assert_eq!(gets, vec![None, Some("e1".to_string())], "GETs");
        let delay = seen.get_delays[0];
        assert!(
            delay >= Duration::from_millis(RETRY_MS - 50),
            "resumed after {delay:?}, sooner than the server's retry of {RETRY_MS} ms"
        );
        assert!(
            delay < Duration::from_millis(RETRY_MS * 2 + 1000),
            "resumed only after {delay:?}"
        );
    }

    // The call's record holds the POST, the GET that resumed it and the
    // standalone stream's GET the server refused.
    let trace = admin.trace("acme").await;
    let executed = trace
        .iter()
        .find(|e| {
            e.tool.as_deref() == Some("mcp__hostile__resumed") && e.state == TraceState::Executed
        })
        .expect("an executed call");
    let requests = executed.detail["http"]
        .as_array()
        .unwrap_or_else(|| panic!("the requests made: {}", executed.detail));
    let routes: Vec<&str> = requests
        .iter()
        .filter_map(|r| r["route"].as_str())
        .collect();
    assert_eq!(
        routes,
        ["POST /mcp", "GET /mcp", "GET /mcp"],
        "{}",
        executed.detail
    );
    assert_eq!(requests[2]["status"], 405, "{}", executed.detail);

    // A stream closed again on every resumption is resumed a bounded
    // number of times; the call then fails as the host's, nothing hangs.
    let started = Instant::now();
    let failed = call(&mcp, "never_answered", json!({})).await.unwrap();
    assert!(ok_text(&failed).is_none(), "{failed}");
    let resumed = seen.lock().unwrap().gets.len() - 2;
    assert_eq!(resumed, 5, "resuming GETs for the unanswered call");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    drop(serve);
}
