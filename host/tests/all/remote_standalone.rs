//! A remote server's standalone GET stream (where it says what no request
//! of the host's is answering) is open only while a call of the upstream
//! session is in flight: one GET per call here, never two open at once,
//! closed once the call has its answer, and filed in the call's record.
//!
//! The server is the test's own (axum, in process): its stream sends a
//! comment every 50 ms, so it learns when the host has closed it.

use super::crash_safety::{Mcp, ok_text, wait_for};
use super::remote_mcp::{call, front_hostile, listed, review, tool};
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use scout_host::store::TraceState;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Seen {
    /// Standalone GETs asked for.
    gets: usize,
    /// Open now, and the most ever open at once.
    open: usize,
    most_open: usize,
}

type Shared = Arc<Mutex<Seen>>;

/// Counts a stream closed when the host drops it.
struct Open(Shared);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.lock().unwrap().open -= 1;
    }
}

fn json_answer(value: Value) -> Response {
    (
        StatusCode::OK,
        [
            ("content-type", "application/json"),
            ("mcp-session-id", "standalone-session"),
        ],
        value.to_string(),
    )
        .into_response()
}

async fn post(body: String) -> Response {
    let message: Value = serde_json::from_str(&body).unwrap_or_default();
    let id = message["id"].clone();
    if id.is_null() {
        return StatusCode::ACCEPTED.into_response();
    }
    match message["method"].as_str().unwrap_or_default() {
        "initialize" => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "standalone-test", "version": "1.0.0"},
        }})),
        "tools/list" => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "slow", "description": "Answers after half a second.",
             "inputSchema": {"type": "object", "properties": {}}},
        ]}})),
        "tools/call" => {
            tokio::time::sleep(Duration::from_millis(500)).await;
            json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "slow answer"}],
            }}))
        }
        _ => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
    }
}

async fn get(State(seen): State<Shared>, headers: HeaderMap) -> Response {
    assert!(headers.get("last-event-id").is_none());
    {
        let mut seen = seen.lock().unwrap();
        seen.gets += 1;
        seen.open += 1;
        seen.most_open = seen.most_open.max(seen.open);
    }
    let open = Open(seen);
    let ticks = futures_util::stream::unfold(open, |open| async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Some((
            Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(b": tick\n\n")),
            open,
        ))
    });
    (
        StatusCode::OK,
        [
            ("content-type", "text/event-stream"),
            ("mcp-session-id", "standalone-session"),
        ],
        Body::from_stream(ticks),
    )
        .into_response()
}

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
async fn the_standalone_stream_is_open_only_while_a_call_is_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let (port, seen) = server().await;
    let (serve, admin) = front_hostile(
        dir.path(),
        port,
        "credential = \"none\"\ncall_timeout_secs = 8\n",
        &[],
    );
    let reviews = listed(&admin, "hostile").await;
    review(&admin, "hostile", tool(&reviews, "slow"), "read").await;
    let http = reqwest::Client::new();
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "hostile").connect().await;

    for round in 1..=2 {
        let answered = call(&mcp, "slow", json!({})).await.unwrap();
        assert_eq!(ok_text(&answered).as_deref(), Some("slow answer"));
        assert_eq!(seen.lock().unwrap().gets, round, "one GET per call");
        wait_for(
            "the stream closed after the call",
            Duration::from_secs(5),
            async || (seen.lock().unwrap().open == 0).then_some(()),
        )
        .await;
        // Nothing asks for it again while no call is in flight.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(seen.lock().unwrap().gets, round, "no GET between calls");
    }
    assert_eq!(seen.lock().unwrap().most_open, 1, "never two at once");

    let trace = admin.trace("acme").await;
    let executed: Vec<_> = trace
        .iter()
        .filter(|e| {
            e.tool.as_deref() == Some("mcp__hostile__slow") && e.state == TraceState::Executed
        })
        .collect();
    assert_eq!(executed.len(), 2);
    for call in executed {
        let routes: Vec<(String, Value)> = call.detail["http"]
            .as_array()
            .unwrap_or_else(|| panic!("the requests made: {}", call.detail))
            .iter()
            .map(|r| {
                (
                    r["route"].as_str().unwrap_or("").to_string(),
                    r["status"].clone(),
                )
            })
            .collect();
        assert!(
            routes.contains(&("GET /mcp".to_string(), json!(200))),
            "{}",
            call.detail
        );
    }
    drop(serve);
}
