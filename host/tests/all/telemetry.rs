//! OpenTelemetry export (issue 21 item 1): the real `serve` binary, pointed
//! at an OTLP/HTTP receiver this test starts on loopback by the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, exports one SERVER span per tool list and
//! tool call (parented on the client's `_meta.traceparent`), a child span for a
//! person's wait and a CLIENT span per upstream request; the spans say
//! what the durable trace says; no argument reaches the collector.

use super::crash_safety::{ADMIN_TOKEN, Admin, GITHUB_TOKEN, Mcp, ok_text, wait_for};
use crate::common;
use axum::body::Bytes;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use reqwest::Method;
use scout_tests::fake_github::FakeGitHub;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CANARY: &str = "canary-otel-5513";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";
const SERVER: i32 = 2;
const CLIENT: i32 = 3;
const INTERNAL: i32 = 1;
const STATUS_ERROR: i32 = 2;

/// What the receiver got: every export request's raw bytes and its spans
/// with their resource's attributes.
#[derive(Default)]
struct Received {
    bodies: Vec<Vec<u8>>,
    spans: Vec<(BTreeMap<String, String>, Span)>,
}

/// An OTLP/HTTP trace receiver on 127.0.0.1 (`POST /v1/traces`, protobuf).
async fn otlp_receiver() -> (String, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let app = axum::Router::new().route(
        "/v1/traces",
        post({
            let received = received.clone();
            move |body: Bytes| {
                let received = received.clone();
                async move {
                    let request = match ExportTraceServiceRequest::decode(body.as_ref()) {
                        Ok(request) => request,
                        Err(e) => {
                            return (
                                axum::http::StatusCode::BAD_REQUEST,
                                e.to_string().into_bytes(),
                            );
                        }
                    };
                    let mut received = received.lock().unwrap();
                    received.bodies.push(body.to_vec());
                    for resource_spans in request.resource_spans {
                        let resource: BTreeMap<String, String> = resource_spans
                            .resource
                            .map(|r| {
                                r.attributes
                                    .iter()
                                    .map(|kv| (kv.key.clone(), text(kv)))
                                    .collect()
                            })
                            .unwrap_or_default();
                        for scope in resource_spans.scope_spans {
                            for span in scope.spans {
                                received.spans.push((resource.clone(), span));
                            }
                        }
                    }
                    (
                        axum::http::StatusCode::OK,
                        ExportTraceServiceResponse::default().encode_to_vec(),
                    )
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), received)
}

fn text(kv: &KeyValue) -> String {
    match kv.value.as_ref().and_then(|v: &AnyValue| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn attributes(span: &Span) -> BTreeMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| (kv.key.clone(), text(kv)))
        .collect()
}

fn events(span: &Span) -> Vec<String> {
    span.events.iter().map(|e| e.name.clone()).collect()
}

fn status(span: &Span) -> i32 {
    span.status.as_ref().map_or(0, |s| s.code)
}

#[tokio::test(flavor = "multi_thread")]
async fn spans_of_an_allowed_a_refused_and_an_approved_call_reach_the_collector() {
    let (endpoint, received) = otlp_receiver().await;
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        scout_tests::serve_config_for_github(&github.origin()),
    );
    let serve = common::serve(&config)
        .envs(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100".to_string()),
        ])
        .start();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    assert!(
        serve.stderr().contains("OTLP span export on"),
        "the start banner says spans are exported: {}",
        serve.stderr()
    );
    let view = admin.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp::new(&http, &view).connect().await;
    let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");

    // 0. The tool list, inside the client's trace.
    let listed = mcp
        .request("tools/list", json!({"_meta": {"traceparent": traceparent}}))
        .await
        .unwrap();
    assert!(listed["result"]["tools"].is_array(), "{listed}");

    // 1. An allowed read, inside the client's trace.
    let read = mcp
        .request(
            "tools/call",
            json!({"name": "github_read_file",
                   "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"},
                   "_meta": {"traceparent": traceparent}}),
        )
        .await
        .unwrap();
    assert!(ok_text(&read).is_some(), "{read}");

    // 2. A refused call: a tool nobody has (the component withholds it).
    let refused = mcp
        .request(
            "tools/call",
            json!({"name": "github_delete_repository", "arguments": {"repo": CANARY}}),
        )
        .await;
    assert!(
        refused.as_ref().map_or(true, |r| r.get("error").is_some()
            || r["result"]["isError"] == true),
        "{refused:?}"
    );

    // 3. A write a person approves through the admin API.
    let writer = mcp.clone();
    let write = tokio::spawn(async move {
        writer
            .request(
                "tools/call",
                json!({"name": "github_create_branch",
                       "arguments": {"owner": "octo", "repo": "hello", "branch": CANARY}}),
            )
            .await
    });
    let approval = wait_for(
        "the write's approval",
        Duration::from_secs(30),
        async || admin.pending(&session).await.into_iter().next(),
    )
    .await;
    let (status_code, body) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", approval["id"]),
            Some(json!({"approve": true, "by": "alice"})),
        )
        .await;
    assert_eq!(status_code, 200, "{body}");
    let written = write.await.unwrap().unwrap();
    assert!(ok_text(&written).is_some(), "{written}");
    assert_eq!(
        github.ref_creations().len(),
        1,
        "the effect reached GitHub once"
    );

    // The three SERVER spans, the wait and the upstream requests arrive.
    let spans = wait_for(
        "the exported spans",
        crate::common::EVENTUALLY,
        async || {
            let received = received.lock().unwrap();
            let servers = received
                .spans
                .iter()
                .filter(|(_, s)| s.kind == SERVER)
                .count();
            let waits = received
                .spans
                .iter()
                .filter(|(_, s)| s.kind == INTERNAL)
                .count();
            let clients = received
                .spans
                .iter()
                .filter(|(_, s)| s.kind == CLIENT)
                .count();
            (servers >= 4 && waits >= 1 && clients >= 2).then(|| received.spans.clone())
        },
    )
    .await;
    let server_named = |name: &str| -> Span {
        let found: Vec<&Span> = spans
            .iter()
            .map(|(_, s)| s)
            .filter(|s| s.kind == SERVER && s.name == name)
            .collect();
        assert_eq!(found.len(), 1, "one span named {name}: {spans:#?}");
        found[0].clone()
    };
    let server = |tool: &str| server_named(&format!("tools/call {tool}"));
    for (resource, _) in &spans {
        assert_eq!(resource["service.name"], "scout-host", "{resource:?}");
        assert!(resource.contains_key("service.instance.id"), "{resource:?}");
    }

    let list = server_named("tools/list");
    assert_eq!(hex(&list.trace_id), TRACE_ID);
    assert_eq!(hex(&list.parent_span_id), PARENT_ID);
    let attrs = attributes(&list);
    assert_eq!(attrs["mcp.method.name"], "tools/list", "{attrs:?}");
    assert_eq!(attrs["scout.session.id"], session, "{attrs:?}");
    assert!(!attrs.contains_key("gen_ai.tool.name"), "{attrs:?}");

    // The read: in the client's trace, under its span; the semantic
    // conventions' attributes and the policy's under scout.*.
    let read_span = server("github_read_file");
    assert_eq!(hex(&read_span.trace_id), TRACE_ID);
    assert_eq!(hex(&read_span.parent_span_id), PARENT_ID);
    let attrs = attributes(&read_span);
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "github_read_file"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "tcp"),
        ("scout.session.id", session.as_str()),
        ("scout.brand", "acme"),
        ("scout.connector", "github"),
        ("scout.role", "person-chat"),
        ("scout.rule", "open"),
        ("scout.outcome", "ok"),
    ] {
        assert_eq!(
            attrs.get(key).map(String::as_str),
            Some(value),
            "{key}: {attrs:?}"
        );
    }
    assert!(!attrs["mcp.session.id"].is_empty(), "{attrs:?}");
    assert!(attrs.contains_key("jsonrpc.request.id"), "{attrs:?}");
    assert!(!attrs.contains_key("error.type"), "{attrs:?}");
    assert_ne!(status(&read_span), STATUS_ERROR);
    assert_eq!(
        events(&read_span),
        ["requested", "allowed", "executed", "result"]
    );
    // Its upstream request: a CLIENT child with the declared route, never the path sent.
    let read_client: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.kind == CLIENT && s.parent_span_id == read_span.span_id)
        .collect();
    assert!(!read_client.is_empty(), "{spans:#?}");
    for upstream in &read_client {
        assert_eq!(upstream.trace_id, read_span.trace_id);
        let a = attributes(upstream);
        assert_eq!(a["http.request.method"], "GET", "{a:?}");
        assert_eq!(a["http.response.status_code"], "200", "{a:?}");
        assert_eq!(a["server.address"], "127.0.0.1", "{a:?}");
        assert!(a["url.template"].contains('{'), "a route template: {a:?}");
        assert_eq!(upstream.name, format!("GET {}", a["url.template"]));
    }

    // The refusal: an error status, the rule the durable trace names.
    let trace = admin.trace("acme").await;
    let refused_rule = trace
        .iter()
        .find(|e| {
            e.tool.as_deref() == Some("mcp__github__github_delete_repository")
                && e.rule.is_some()
                && e.state != scout_host::store::TraceState::Requested
        })
        .and_then(|e| e.rule.clone())
        .expect("the refusal is in the trace");
    // Named as the metrics name it: a tool the component does not declare
    // is `unknown`, in the span's name and its `gen_ai.tool.name`.
    let refused_span = server("unknown");
    assert_ne!(
        hex(&refused_span.trace_id),
        TRACE_ID,
        "no traceparent: a trace of its own"
    );
    let attrs = attributes(&refused_span);
    assert_eq!(attrs["gen_ai.tool.name"], "unknown", "{attrs:?}");
    assert_eq!(status(&refused_span), STATUS_ERROR);
    assert_eq!(attrs["error.type"], refused_rule, "{attrs:?}");
    assert_eq!(attrs["scout.rule"], refused_rule, "{attrs:?}");
    assert_eq!(attrs["scout.outcome"], "denied", "{attrs:?}");
    assert_eq!(events(&refused_span), ["requested", "permission_denied"]);
    assert!(
        !spans
            .iter()
            .any(|(_, s)| s.parent_span_id == refused_span.span_id),
        "nothing ran under the refusal"
    );

    // The approved write: the wait as a child span with the approval's id,
    // outcome and wait; then the effect.
    let write_span = server("github_create_branch");
    let attrs = attributes(&write_span);
    assert_eq!(attrs["scout.rule"], "approved_by_person", "{attrs:?}");
    assert_eq!(attrs["scout.outcome"], "ok", "{attrs:?}");
    assert_eq!(
        events(&write_span),
        ["requested", "allowed", "executed", "result"]
    );
    let waits: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.kind == INTERNAL && s.parent_span_id == write_span.span_id)
        .collect();
    assert_eq!(waits.len(), 1, "{spans:#?}");
    let wait = waits[0];
    assert_eq!(wait.name, "approval mcp__github__github_create_branch");
    let a = attributes(wait);
    assert_eq!(a["scout.approval.id"], approval["id"].to_string(), "{a:?}");
    assert_eq!(a["scout.approval.outcome"], "approved", "{a:?}");
    // Who decided: the verified caller of the approvals API.
    assert!(
        a["scout.approval.decided_by"].starts_with("admin-token"),
        "{a:?}"
    );
    assert!(
        a["scout.approval.waited_ms"].parse::<u64>().is_ok(),
        "{a:?}"
    );
    assert_eq!(events(wait), ["requested", "decided"]);
    assert!(wait.end_time_unix_nano <= write_span.end_time_unix_nano);
    let write_clients: Vec<BTreeMap<String, String>> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.kind == CLIENT && s.parent_span_id == write_span.span_id)
        .map(attributes)
        .collect();
    assert!(
        write_clients
            .iter()
            .any(|a| a["http.request.method"] == "POST"),
        "the ref creation is a CLIENT span: {write_clients:?}"
    );
    assert!(
        wait.end_time_unix_nano
            <= spans
                .iter()
                .filter(|(_, s)| s.kind == CLIENT && s.parent_span_id == write_span.span_id)
                .map(|(_, s)| s.start_time_unix_nano)
                .min()
                .unwrap(),
        "the effect starts after the person decided"
    );

    // Each row of the durable trace names the span it belongs to, so an
    // auditor pivots from a row to the collector: a call's rows its SERVER
    // span; a person's wait's request and decision the wait's span.
    let rows = admin.trace("acme").await;
    let rows_of = |tool: &str| -> Vec<&scout_host::store::TraceEvent> {
        rows.iter()
            .filter(|e| e.session == session && e.tool.as_deref() == Some(tool))
            .filter(|e| e.call_id.as_deref() != Some("session"))
            .collect()
    };
    let ids = |span: &Span| (Some(hex(&span.trace_id)), Some(hex(&span.span_id)));
    for (tool, span) in [
        ("mcp__github__github_read_file", &read_span),
        ("mcp__github__github_delete_repository", &refused_span),
    ] {
        let called = rows_of(tool);
        assert!(called.len() >= 2, "{tool}: {called:?}");
        for row in called {
            assert_eq!(
                (row.origin.trace_id.clone(), row.origin.span_id.clone()),
                ids(span),
                "{row:?}"
            );
        }
    }
    let written = rows_of("mcp__github__github_create_branch");
    let (waited, called): (Vec<_>, Vec<_>) = written.into_iter().partition(|e| {
        e.state == scout_host::store::TraceState::Decided
            || e.rule.as_deref() == Some("approval_requested")
    });
    assert_eq!(waited.len(), 2, "{waited:?}");
    for (rows, span) in [(waited, wait), (called, &write_span)] {
        for row in rows {
            assert_eq!(
                (row.origin.trace_id.clone(), row.origin.span_id.clone()),
                ids(span),
                "{row:?}"
            );
        }
    }
    assert!(rows.iter().all(|e| {
        e.origin
            .host
            .as_deref()
            .is_some_and(|h| h.starts_with("h-"))
    }));

    // No argument, path as sent, token or secret reaches the collector.
    let bodies = received.lock().unwrap().bodies.concat();
    for private in [
        CANARY,
        // The name an agent sent for a tool nobody has.
        "delete_repository",
        "README.md",
        GITHUB_TOKEN,
        ADMIN_TOKEN,
        view["token"].as_str().unwrap(),
    ] {
        assert!(
            !bodies
                .windows(private.len())
                .any(|w| w == private.as_bytes()),
            "{private:?} was exported"
        );
    }
    drop(serve);
}

/// With no span exported, each row of a call still names the trace its
/// client sent (`_meta.traceparent`) and the client's span: the pivot from
/// the durable trace to the client's own spans. A call that sent none names
/// none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_export_a_calls_rows_name_the_trace_its_client_sent() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        scout_tests::serve_config_for_github(&github.origin()),
    );
    let serve = common::serve(&config).start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    assert!(!serve.stderr().contains("OTLP span export on"));
    let view = admin.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp::new(&http, &view).connect().await;
    let read = |path: &'static str, meta: serde_json::Value| {
        let mcp = mcp.clone();
        async move {
            let answer = mcp
                .request(
                    "tools/call",
                    json!({"name": "github_read_file",
                           "arguments": {"owner": "octo", "repo": "hello", "path": path},
                           "_meta": meta}),
                )
                .await
                .unwrap();
            assert!(ok_text(&answer).is_some(), "{answer}");
        }
    };
    read(
        "README.md",
        json!({"traceparent": format!("00-{TRACE_ID}-{PARENT_ID}-01")}),
    )
    .await;
    // Malformed (an all-zero trace id): ignored, as W3C says.
    read(
        "README.md",
        json!({"traceparent": format!("00-{}-{PARENT_ID}-01", "0".repeat(32))}),
    )
    .await;
    read("README.md", json!({})).await;
    let rows: Vec<_> = admin
        .trace("acme")
        .await
        .into_iter()
        .filter(|e| e.session == session)
        .filter(|e| e.tool.as_deref() == Some("mcp__github__github_read_file"))
        .filter(|e| e.call_id.as_deref() != Some("session"))
        .collect();
    let mut calls: Vec<String> = rows.iter().filter_map(|e| e.call_id.clone()).collect();
    calls.dedup();
    assert_eq!(calls.len(), 3, "{rows:?}");
    for (n, call) in calls.iter().enumerate() {
        for row in rows.iter().filter(|e| e.call_id.as_ref() == Some(call)) {
            let expected = if n == 0 {
                (Some(TRACE_ID.to_string()), Some(PARENT_ID.to_string()))
            } else {
                (None, None)
            };
            assert_eq!(
                (row.origin.trace_id.clone(), row.origin.span_id.clone()),
                expected,
                "call {n}: {row:?}"
            );
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A collector that does not answer changes nothing for the agent: the call
/// is answered, and the operator is told once on stderr.
#[tokio::test(flavor = "multi_thread")]
async fn a_collector_that_is_away_costs_the_call_nothing_and_is_logged() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        scout_tests::serve_config_for_github(&github.origin()),
    );
    let serve = common::serve(&config)
        .envs(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "50".to_string()),
            ("SCOUT_LOG", "warn".to_string()),
        ])
        .start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    let view = admin.session().await;
    let mcp = Mcp::new(&http, &view).connect().await;
    for _ in 0..3 {
        let read = mcp
            .request(
                "tools/call",
                json!({"name": "github_read_file",
                       "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}}),
            )
            .await
            .unwrap();
        assert!(ok_text(&read).is_some(), "{read}");
        // Each call's span goes out in a batch of its own, and fails.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for(
        "the export failure on stderr",
        Duration::from_secs(20),
        async || serve.stderr().contains("cannot export spans").then_some(()),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let logged = serve.stderr();
    assert_eq!(
        logged.matches("cannot export spans").count(),
        1,
        "once, not per batch: {logged}"
    );
}

/// A remote MCP server's call (issue 32) is spanned as a component's is: a
/// SERVER span naming the connector and the rule, a CLIENT child for each
/// request the host sent the server; the credential the host injected (which
/// the server echoes back) is in no exported byte.
#[tokio::test(flavor = "multi_thread")]
async fn a_remote_servers_call_is_spanned_and_its_token_is_never_exported() {
    use super::remote_mcp;
    let (endpoint, received) = otlp_receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let upstream = remote_mcp::hostile(dir.path()).await;
    let (serve, admin) = remote_mcp::front_hostile(
        dir.path(),
        upstream.port,
        "host_env = \"HOSTILE_TOKEN\"\n",
        &[
            ("HOSTILE_TOKEN", remote_mcp::HOSTILE_TOKEN.to_string()),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100".to_string()),
        ],
    );
    let http = admin.http.clone();
    let reviews = remote_mcp::listed(&admin, "hostile").await;
    let whoami = remote_mcp::tool(&reviews, "whoami");
    remote_mcp::review(&admin, "hostile", whoami, "read").await;
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "hostile").connect().await;
    let who = remote_mcp::call(&mcp, "whoami", json!({})).await.unwrap();
    assert!(
        ok_text(&who).is_some_and(|t| t.contains("[REDACTED]")),
        "{who}"
    );
    let seen = remote_mcp::stats(&upstream).await;
    assert!(
        seen["authorization"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == &json!(format!("Bearer {}", remote_mcp::HOSTILE_TOKEN))),
        "the server received the token: {seen}"
    );

    let span = wait_for(
        "the remote call's span and its requests",
        crate::common::EVENTUALLY,
        async || {
            let received = received.lock().unwrap();
            let call = received
                .spans
                .iter()
                .map(|(_, s)| s)
                .find(|s| s.kind == SERVER && s.name == "tools/call whoami")?;
            received
                .spans
                .iter()
                .any(|(_, s)| s.kind == CLIENT && s.parent_span_id == call.span_id)
                .then(|| call.clone())
        },
    )
    .await;
    let attrs = attributes(&span);
    for (key, value) in [
        ("gen_ai.tool.name", "whoami"),
        ("scout.connector", "hostile"),
        ("scout.brand", "acme"),
        ("scout.rule", "open"),
        ("scout.outcome", "ok"),
    ] {
        assert_eq!(
            attrs.get(key).map(String::as_str),
            Some(value),
            "{key}: {attrs:?}"
        );
    }
    assert_eq!(
        events(&span),
        ["requested", "allowed", "executed", "result"]
    );
    let spans = received.lock().unwrap().spans.clone();
    for (_, upstream_span) in spans
        .iter()
        .filter(|(_, s)| s.kind == CLIENT && s.parent_span_id == span.span_id)
    {
        let a = attributes(upstream_span);
        // The call's POST, and the session's standalone stream's GET.
        assert!(
            ["POST", "GET"].contains(&a["http.request.method"].as_str()),
            "{a:?}"
        );
        assert_eq!(a["server.address"], "127.0.0.1", "{a:?}");
        assert_eq!(a["server.port"], upstream.port.to_string(), "{a:?}");
        assert_eq!(a["url.template"], "/mcp", "{a:?}");
    }

    let bodies = received.lock().unwrap().bodies.concat();
    for private in [
        remote_mcp::HOSTILE_TOKEN,
        ADMIN_TOKEN,
        view["token"].as_str().unwrap(),
    ] {
        assert!(
            !bodies
                .windows(private.len())
                .any(|w| w == private.as_bytes()),
            "{private:?} was exported"
        );
    }
    drop(serve);
}
