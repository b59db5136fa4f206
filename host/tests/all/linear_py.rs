//! Linear in Python (issue 54, item 6): `connectors/linear` is built from
//! its Python source as an author builds it, passes its replay cases with
//! `scout-host test`, shows its boundary in `inspect` (tools, gates, each
//! GraphQL route pinned to its root field, WITHHELD), and is served by the
//! real `serve` binary to the official Python MCP client
//! (`tests/mcp_client/linear.py`) against a loopback fake of Linear's
//! GraphQL endpoint: the API key is the host's to inject, reads run, a write
//! runs only once a person approved it, and a write a person declined sends
//! nothing.

use crate::common;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use scout_tests::ServeProcess;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

const API_KEY: &str = "lin_api_7f3c9e1d2b4a5c6d7e8f9a0b1c2d3e4f";
const ADMIN_TOKEN: &str = "admin-token-for-linear-in-python-0123";

fn scout_host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scout-host"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn connector_dir() -> PathBuf {
    repo().join("connectors/linear")
}

/// The connector's component, built once per test process as its author
/// builds it: `scout-host build --dir connectors/linear` (componentize-py,
/// pinned and provisioned in the target directory's toolchain folder, then
/// the manifest made from its WIT; [`crate::common::language_connectors`]).
fn component() -> PathBuf {
    crate::common::language_connector("linear")
}

async fn built_component() -> PathBuf {
    tokio::task::spawn_blocking(component).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linear_in_python_passes_its_replay_cases_and_shows_its_boundary() {
    let component = built_component().await;

    let out = scout_host()
        .arg("test")
        .arg(&component)
        .arg("--fixtures")
        .arg(connector_dir().join("fixtures"))
        .output()
        .unwrap();
    let report =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scout-host test failed:\n{report}");
    let cases: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(connector_dir().join("fixtures/cases.json")).unwrap(),
    )
    .unwrap();
    assert!(
        report.contains(&format!("{} passed; 0 failed", cases.len())) && cases.len() >= 15,
        "{report}"
    );
    // Every tool has a passing case; every fixture names Linear's reference.
    for tool in [
        "linear_issues",
        "linear_issue",
        "linear_teams",
        "linear_create_issue",
        "linear_create_comment",
    ] {
        assert!(
            cases
                .iter()
                .any(|c| c["tool"] == tool && c["expect"].get("ok").is_some()),
            "{tool}"
        );
    }
    for entry in std::fs::read_dir(connector_dir().join("fixtures")).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == "cases.json") {
            continue;
        }
        let fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(fixture["provenance"], "UNVERIFIED", "{}", path.display());
        assert!(
            fixture["source"]
                .as_str()
                .is_some_and(|s| s.starts_with("https://linear.app/developers/")
                    || s.starts_with("https://studio.apollographql.com/public/Linear-API/")),
            "{}",
            path.display()
        );
        // A read's fixture never carries a mutation.
        for exchange in fixture["exchanges"].as_array().unwrap() {
            let document = exchange["request"]["json"]["query"].as_str().unwrap();
            let write = document.starts_with("mutation");
            assert!(
                !write
                    || path
                        .file_name()
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .starts_with("create-"),
                "{}: {document}",
                path.display()
            );
        }
    }

    // What a reviewer sees.
    let out = scout_host()
        .arg("inspect")
        .arg("--json")
        .arg(&component)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "inspect: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["connector"]["package"], "scout:linear@0.1.0");
    assert_eq!(
        report["connector"]["capabilities"],
        json!(["http", "log"]),
        "{report}"
    );
    let tool = |name: &str| -> Value {
        report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no tool {name}: {report}"))
    };
    for (name, root) in [
        ("linear_issues", "issues"),
        ("linear_issue", "issue"),
        ("linear_teams", "teams"),
    ] {
        let t = tool(name);
        assert_eq!(t["effect"], "read", "{t}");
        assert_eq!(t["grantable"], true, "{t}");
        assert_eq!(t["routes"].as_array().unwrap().len(), 1, "{t}");
        let route = &t["routes"][0];
        assert_eq!(
            (&route["method"], &route["path"]),
            (&json!("POST"), &json!("/graphql")),
            "{t}"
        );
        assert_eq!(route["graphql"], "queries_only", "{t}");
        assert_eq!(route["graphql_fields"], json!([root]), "{t}");
    }
    for (name, root) in [
        ("linear_create_issue", "issueCreate"),
        ("linear_create_comment", "commentCreate"),
    ] {
        let t = tool(name);
        assert_eq!(t["effect"], "write", "{t}");
        assert_eq!(t["gate"], "approval", "{t}");
        assert_eq!(t["served_gate"], "approval", "{t}");
        assert!(t.get("grantable").is_none_or(|g| g == false), "{t}");
        assert_eq!(t["routes"].as_array().unwrap().len(), 1, "{t}");
        let route = &t["routes"][0];
        assert_eq!(route["graphql"], "gated", "{t}");
        assert_eq!(route["graphql_fields"], json!([root]), "{t}");
    }
    let withheld: Vec<String> = report["withheld"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["effect"].as_str().unwrap_or_default().to_string())
        .collect();
    for effect in [
        "deletes",
        "archiving",
        "team administration",
        "user administration",
    ] {
        assert!(
            withheld.iter().any(|w| w == effect),
            "{effect} withheld: {withheld:?}"
        );
    }
    // Every import is one the host serves (the contract, and WASI that
    // carries no authority); nothing that reaches outside.
    let imports = report["imports"].as_array().unwrap();
    assert!(imports.iter().all(|i| i["allowed"] == true), "{imports:?}");
    assert!(
        !imports.iter().any(|i| {
            let name = i["name"].as_str().unwrap();
            name.starts_with("wasi:sockets/") || name.starts_with("wasi:http/")
        }),
        "{imports:?}"
    );
    assert!(
        imports.iter().any(|i| i["name"]
            .as_str()
            .unwrap()
            .starts_with("scout:connector/http@")),
        "{imports:?}"
    );
}

/// What the fake Linear endpoint received: the `Authorization` header and
/// the GraphQL body.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// Linear's GraphQL endpoint, as its reference describes the wire format:
/// one `POST /graphql`, answered by the operation's root field.
async fn fake_linear() -> (String, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route("/graphql", post(answer))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (origin, seen)
}

async fn answer(
    State(seen): State<Seen>,
    headers: axum::http::HeaderMap,
    Json(body): Json<Value>,
) -> (axum::http::StatusCode, Json<Value>) {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    seen.lock().unwrap().push((auth, body.clone()));
    let document = body["query"].as_str().unwrap_or_default();
    let issue = json!({"id": "2b5c8e1f-3a4d-4e6f-8a9b-0c1d2e3f4a5b", "identifier": "ENG-123",
        "title": "Fix the checkout timeout", "priorityLabel": "High",
        "url": "https://linear.app/acme/issue/ENG-123/fix-the-checkout-timeout",
        "createdAt": "2026-11-28T08:15:30.000Z", "updatedAt": "2026-12-05T16:20:11.041Z",
        "description": "Checkout times out.", "state": {"name": "In Progress"},
        "assignee": {"name": "Ada Lovelace"}, "team": {"key": "ENG"},
        "labels": {"nodes": [{"name": "Bug"}]}, "comments": {"nodes": []}});
    let data = if document.contains("commentCreate(") {
        json!({"commentCreate": {"success": true, "comment": {"id": "f0e1d2c3-b4a5-4968-8778-695a4b3c2d1e",
            "url": "https://linear.app/acme/issue/ENG-123/fix-the-checkout-timeout#comment-f0e1d2c3",
            "createdAt": "2026-12-06T12:00:00.000Z"}}})
    } else if document.contains("issueCreate(") {
        json!({"issueCreate": {"success": true, "issue": {"id": "8e9f0a1b-2c3d-4e4f-a5b6-c7d8e9f0a1b2",
            "identifier": "ENG-124", "title": "Drop the payments table",
            "url": "https://linear.app/acme/issue/ENG-124/drop-the-payments-table"}}})
    } else if document.contains("issues(") {
        json!({"issues": {"nodes": [issue], "pageInfo": {"hasNextPage": false, "endCursor": null}}})
    } else if document.contains("issue(") {
        json!({"issue": issue})
    } else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            Json(
                json!({"errors": [{"message": "Cannot query this field", "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"}}]}),
            ),
        );
    };
    (axum::http::StatusCode::OK, Json(json!({"data": data})))
}

fn start_serve(dir: &Path, component: &Path, origin: &str) -> ServeProcess {
    // Linear takes a personal API key as the whole `Authorization` header.
    common::serve_connector(
        dir,
        ADMIN_TOKEN,
        ("linear", component, origin),
        "require_review = false",
        "credential = \"header:Authorization\"\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linear_in_python_is_served_over_mcp_and_writes_only_what_a_person_approved() {
    let component = built_component().await;
    let dir = PathBuf::from(scout_tests::TARGET_ROOT)
        .join("tmp")
        .join(format!("linear-py-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let (origin, seen) = fake_linear().await;
    let serve = start_serve(&dir, &component, &origin);
    let base = serve.base.clone();
    common::client_story(
        "linear.py",
        vec![
            "--base".to_string(),
            base.clone(),
            "--admin-token".to_string(),
            ADMIN_TOKEN.to_string(),
            "--secret".to_string(),
            API_KEY.to_string(),
        ],
    )
    .await;
    drop(serve);

    // Linear's side: the two reads and the approved comment, each with the
    // key the host injected as the whole `Authorization` header; the refused
    // id and the declined issue never left the host.
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|(auth, _)| auth.as_deref() == Some(API_KEY)),
        "{seen:?}"
    );
    let documents: Vec<&str> = seen
        .iter()
        .map(|(_, body)| body["query"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(documents.len(), 3, "{documents:?}");
    assert!(documents[0].starts_with("query issues("), "{documents:?}");
    assert_eq!(
        seen[0].1["variables"],
        json!({"first": 2, "filter": {"and": [{"state": {"type": {"eq": "started"}}}, {"team": {"key": {"eq": "ENG"}}}]}})
    );
    assert!(documents[1].starts_with("query issue("), "{documents:?}");
    assert_eq!(seen[1].1["variables"], json!({"id": "ENG-123"}));
    assert!(
        documents[2].starts_with("mutation commentCreate("),
        "{documents:?}"
    );
    assert_eq!(
        seen[2].1["variables"]["input"]["issueId"], "ENG-123",
        "{:?}",
        seen[2].1
    );
    assert!(
        !documents
            .iter()
            .any(|d| d.contains("issueCreate") || d.contains("issueDelete")),
        "a declined or refused call reached Linear: {documents:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
