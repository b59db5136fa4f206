//! An agent session's upstream MCP session with a remote server is closed
//! once it has idled past the connector's `upstream_idle_secs`, and opened
//! again at the session's next call: an idle session holds neither the
//! host's client state nor a session at the server, and the trace says
//! when and why each happened (`upstream_closed`, `upstream_reopened`).
//!
//! The server is the MCP project's reference `server-everything` over
//! streamable HTTP, fronted by the real `serve` binary with a bound of one
//! second.

use super::common::EVENTUALLY;
use super::crash_safety::{Admin, Mcp, ok_text, wait_for};
use super::remote_mcp::{call, listed, review, tool};
use crate::common;
use scout_host::store::{TraceEvent, TraceState};
use serde_json::json;

/// `server-everything`, killed when dropped.
struct Everything(std::process::Child);

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The session's rows with `rule` (a `changed` row about its upstream).
fn rows<'a>(trace: &'a [TraceEvent], session: &str, rule: &str) -> Vec<&'a TraceEvent> {
    trace
        .iter()
        .filter(|e| {
            e.session == session
                && e.state == TraceState::Changed
                && e.rule.as_deref() == Some(rule)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_upstream_session_is_closed_and_reopened_at_the_next_call_both_traced() {
    let dir = tempfile::tempdir().unwrap();
    let (child, port) = tokio::task::spawn_blocking(scout_tests::start_server_everything)
        .await
        .unwrap();
    let _everything = Everything(child);
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\ndeployment_owner_brand = \"acme\"\n\
             [connectors.everything]\nmcp = \"http://127.0.0.1:{port}/mcp\"\ncredential = \"none\"\n\
             allow_private_network = true\nupstream_idle_secs = 1\n"
        ),
    );
    let serve = common::serve(&config).start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    let reviews = listed(&admin, "everything").await;
    review(&admin, "everything", tool(&reviews, "echo"), "read").await;
    let http = reqwest::Client::new();
    let view = admin.session().await;
    let session = view["id"].as_str().expect("a session id").to_string();
    let mcp = Mcp::for_connector(&http, &view, "everything")
        .connect()
        .await;

    let first = call(&mcp, "echo", json!({"message": "before idling"}))
        .await
        .unwrap();
    assert!(
        ok_text(&first).is_some_and(|t| t.contains("before idling")),
        "{first}"
    );

    // Idle past the bound: the host closes the upstream session, and says so.
    let closed = wait_for("the upstream session closed", EVENTUALLY, async || {
        let trace = admin.trace("acme").await;
        rows(&trace, &session, "upstream_closed")
            .first()
            .map(|row| (*row).clone())
    })
    .await;
    assert_eq!(closed.brand, "acme");
    assert_eq!(
        closed.detail["connector"], "everything",
        "{}",
        closed.detail
    );
    assert!(
        closed.detail["why"]
            .as_str()
            .is_some_and(|why| why.contains("idle") && why.contains("upstream_idle_secs")),
        "{}",
        closed.detail
    );
    assert_eq!(closed.detail["actor"]["kind"], "host", "{}", closed.detail);
    let trace = admin.trace("acme").await;
    assert!(
        rows(&trace, &session, "upstream_reopened").is_empty(),
        "nothing reopened before a call"
    );

    // The next call opens a new upstream session and is answered.
    let second = call(&mcp, "echo", json!({"message": "after idling"}))
        .await
        .unwrap();
    assert!(
        ok_text(&second).is_some_and(|t| t.contains("after idling")),
        "{second}"
    );
    let trace = admin.trace("acme").await;
    let reopened = rows(&trace, &session, "upstream_reopened");
    assert_eq!(reopened.len(), 1, "one reopening: {reopened:?}");
    let reopened = reopened[0];
    assert_eq!(reopened.detail["connector"], "everything");
    assert_eq!(reopened.detail["why"], closed.detail["why"]);
    // In the record's order: closed, then reopened, then the call it
    // reopened for ran.
    let position = |wanted: &TraceEvent| {
        trace
            .iter()
            .position(|e| e == wanted)
            .expect("the row in the trace")
    };
    let executed: Vec<usize> = trace
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.session == session
                && e.state == TraceState::Executed
                && e.tool.as_deref() == Some("mcp__everything__echo")
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(executed.len(), 2, "both calls ran");
    assert!(position(&closed) < position(reopened));
    assert!(executed[0] < position(&closed));
    assert!(position(reopened) < executed[1]);
    drop(serve);
}
