//! Notion in TypeScript (issue 54, item 6): `connectors/notion` built the
//! way its author builds it, `scout-host build --dir connectors/notion`
//! (esbuild, componentize-js, the manifest from its WIT; the pinned tools
//! provisioned under the cargo target directory through `SCOUT_TOOLCHAINS`),
//! then held to what a Rust connector is held to: its committed replay
//! cases pass through `scout-host test`, every fixture is UNVERIFIED and
//! names the developers.notion.com page it follows, `inspect` shows its
//! tools, gates, routes and WITHHELD list, and the real `serve` binary
//! serves it to the official Python MCP client (`tests/mcp_client/notion.py`)
//! against a loopback fake of Notion's API: reads run, a write runs only
//! once a person approved it, a declined write sends nothing, and every
//! request carries the host's bearer token and Notion's version header.

use crate::common;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use scout_tests::ServeProcess;
use scout_tests::replay_suite::Suite;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

const SECRET: &str = "secret_notion-integration-token-5e2b7a91";
const ADMIN_TOKEN: &str = "admin-token-for-notion-0123456789abcdef";
const DATABASE: &str = "897e5a76-ae52-4b48-a6d4-0b46543ebcda";
const TOOLS: [&str; 6] = [
    "notion_search",
    "notion_get_page",
    "notion_query_database",
    "notion_list_block_children",
    "notion_create_page",
    "notion_append_blocks",
];

/// The cargo target directory this test binary runs from.
fn target_root() -> PathBuf {
    PathBuf::from(scout_tests::TARGET_ROOT)
}

fn scout_host() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scout-host"));
    command.env_remove("SCOUT_LOG");
    command
}

/// `scout-host build --dir connectors/notion`, once per test binary, as
/// its author builds it ([`crate::common::language_connectors`]: the
/// componentizers provisioned once in the target directory's toolchain
/// folder, as a fresh CI machine does).
fn component() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| crate::common::language_connector("notion"))
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

#[test]
fn notion_in_typescript_builds_with_scout_host_build_and_passes_its_replay_cases() {
    let component = component();
    let size = std::fs::metadata(component).unwrap().len();
    // A JavaScript engine rides along in every componentize-js component.
    assert!(
        (1_000_000..40_000_000).contains(&size),
        "the Notion component is {size} bytes"
    );
    let suite = Suite::of("notion");
    assert!(
        suite.cases().len() >= 15,
        "Notion has {} replay cases",
        suite.cases().len()
    );
    suite.assert_all_pass(env!("CARGO_BIN_EXE_scout-host"), path(component), &TOOLS);
}

#[test]
fn every_notion_fixture_is_unverified_and_names_its_reference_page() {
    let files =
        Suite::of("notion").assert_unverified("https://developers.notion.com/reference/", 9);
    for (name, fixture) in &files {
        for exchange in fixture["exchanges"].as_array().unwrap() {
            let path = exchange["request"]["path"].as_str().unwrap();
            assert!(path.starts_with("/v1/"), "{name}: {path} is not under /v1/");
        }
    }
    // Every documented error mapping has a case.
    let cases = Suite::of("notion").case_list();
    let expected = |name: &str| -> Value {
        cases
            .iter()
            .find(|c| c["name"].as_str().unwrap().contains(name))
            .unwrap_or_else(|| panic!("no case named like {name}"))["expect"]
            .clone()
    };
    assert!(
        expected("404 object_not_found")
            .pointer("/err/not-found")
            .is_some()
    );
    assert!(
        expected("400 validation_error")
            .pointer("/err/invalid-input")
            .is_some()
    );
    let limited = expected("429 rate_limited");
    assert_eq!(limited.pointer("/err/upstream/status"), Some(&json!(429)));
    assert!(
        limited
            .pointer("/err/upstream/message")
            .and_then(Value::as_str)
            .is_some_and(|m| m.ends_with("(retry after 3)")),
        "{limited}"
    );
}

#[test]
fn inspect_shows_the_notion_tools_gates_routes_and_withheld_list() {
    let out = scout_host()
        .arg("inspect")
        .arg("--json")
        .arg(component())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "inspect: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["connector"]["package"], "scout:notion@0.1.0");
    assert_eq!(report["connector"]["capabilities"], json!(["http", "log"]));
    let tools = report["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOLS);
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();

    for read in &TOOLS[..4] {
        assert_eq!(tool(read)["effect"], "read", "{read}");
        assert_eq!(tool(read)["grantable"], true, "{read}");
    }
    // The two POSTs that change nothing are declared, and shown, as such.
    assert_eq!(
        tool("notion_search")["routes"],
        json!([{"method": "POST", "path": "/v1/search", "read_only": true}])
    );
    assert_eq!(
        tool("notion_query_database")["routes"],
        json!([{"method": "POST", "path": "/v1/databases/{database-id}/query", "read_only": true}])
    );
    assert_eq!(
        tool("notion_get_page")["routes"],
        json!([{"method": "GET", "path": "/v1/pages/{page-id}"}])
    );
    assert_eq!(
        tool("notion_list_block_children")["routes"],
        json!([{"method": "GET", "path": "/v1/blocks/{block-id}/children"}])
    );
    // Every parameter is described, and the page sizes carry their range.
    for t in tools {
        for (param, schema) in t["input_schema"]["properties"].as_object().unwrap() {
            assert!(
                schema["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{}: {param} has no description",
                t["name"]
            );
        }
    }
    let page_size = &tool("notion_search")["input_schema"]["properties"]["page-size"];
    assert_eq!(
        (
            &page_size["minimum"],
            &page_size["maximum"],
            &page_size["default"]
        ),
        (&json!(1), &json!(100), &json!(20))
    );

    for (write, route) in [
        (
            "notion_create_page",
            json!({"method": "POST", "path": "/v1/pages"}),
        ),
        (
            "notion_append_blocks",
            json!({"method": "PATCH", "path": "/v1/blocks/{block-id}/children"}),
        ),
    ] {
        assert_eq!(tool(write)["effect"], "write", "{write}");
        assert_eq!(tool(write)["gate"], "approval", "{write}");
        assert_eq!(tool(write)["routes"], json!([route]), "{write}");
    }

    let withheld: Vec<&str> = report["withheld"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            assert!(w["reason"].as_str().is_some_and(|r| !r.is_empty()), "{w}");
            w["effect"].as_str().unwrap()
        })
        .collect();
    for effect in [
        "archive and delete",
        "sharing and permissions",
        "users",
        "comments",
    ] {
        assert!(
            withheld.contains(&effect),
            "{effect} is not WITHHELD: {withheld:?}"
        );
    }
    // Nothing but the contract and the inert WASI the runtime needs.
    for import in report["imports"].as_array().unwrap() {
        assert_eq!(import["allowed"], true, "{import}");
    }
}

/// What the fake Notion received: method, path, Authorization,
/// Notion-Version, and the JSON body (null without one).
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    notion_version: Option<String>,
    body: Value,
}

type Log = Arc<Mutex<Vec<Seen>>>;

fn rich_text(text: &str) -> Value {
    json!([{"type": "text", "text": {"content": text, "link": null}, "plain_text": text, "href": null}])
}

fn page(id: &str, title: &str) -> Value {
    json!({
        "object": "page", "id": id,
        "created_time": "2023-05-10T12:00:00.000Z", "last_edited_time": "2023-05-10T12:00:00.000Z",
        "parent": {"type": "database_id", "database_id": DATABASE},
        "archived": false,
        "properties": {
            "Status": {"id": "bXTS", "type": "status", "status": {"id": "01f8", "name": "Done", "color": "green"}},
            "Name": {"id": "title", "type": "title", "title": rich_text(title)}
        },
        "url": format!("https://www.notion.so/{}", id.replace('-', ""))
    })
}

/// A loopback fake of the Notion endpoints the tools use, answering in
/// Notion's wire format (developers.notion.com/reference), recording every
/// request.
async fn fake_notion(
    State(log): State<Log>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    log.lock().unwrap().push(Seen {
        method: method.to_string(),
        path: uri.path().to_string(),
        authorization: header("authorization"),
        notion_version: header("notion-version"),
        body: body.clone(),
    });
    let list = |results: Value| json!({"object": "list", "results": results, "next_cursor": null, "has_more": false, "type": "page_or_database", "page_or_database": {}});
    let answer = match (method.as_str(), uri.path()) {
        ("POST", "/v1/search") => list(json!([{
            "object": "database", "id": DATABASE, "title": rich_text("Grocery list"),
            "parent": {"type": "workspace", "workspace": true},
            "last_edited_time": "2023-04-11T16:40:00.000Z",
            "url": format!("https://www.notion.so/{}", DATABASE.replace('-', ""))
        }])),
        ("POST", p) if p == format!("/v1/databases/{DATABASE}/query") => list(json!([page(
            "b55c9c91-384d-452b-81db-d1ef79372b75",
            "Tuscan kale"
        )])),
        ("POST", "/v1/pages") => {
            let title = body
                .pointer("/properties/Name/title/0/text/content")
                .and_then(Value::as_str)
                .unwrap_or_default();
            page("e7a4b1c2-d3e4-4f50-8a6b-7c8d9e0f1a2b", title)
        }
        ("PATCH", p) if p.starts_with("/v1/blocks/") => list(json!([])),
        _ => {
            return (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"object": "error", "status": 404, "code": "object_not_found", "message": "Could not find the object."})),
            )
                .into_response();
        }
    };
    axum::Json(answer).into_response()
}

async fn start_fake_notion() -> (String, Log) {
    let log = Log::default();
    let app = Router::new().fallback(fake_notion).with_state(log.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (origin, log)
}

fn start_serve(dir: &Path, component: &Path, origin: &str) -> ServeProcess {
    common::serve_connector(
        dir,
        ADMIN_TOKEN,
        ("notion", component, origin),
        "",
        "credential = \"bearer\"\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notion_in_typescript_is_served_to_the_official_mcp_client_with_approvals() {
    let component = tokio::task::spawn_blocking(|| component().to_path_buf())
        .await
        .unwrap();
    let dir = target_root()
        .join("tmp")
        .join(format!("notion-ts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let (origin, log) = start_fake_notion().await;
    let serve = start_serve(&dir, &component, &origin);
    let base = serve.base.clone();
    common::client_story(
        "notion.py",
        vec![
            "--base".to_string(),
            base.clone(),
            "--admin-token".to_string(),
            ADMIN_TOKEN.to_string(),
            "--secret".to_string(),
            SECRET.to_string(),
        ],
    )
    .await;
    drop(serve);

    // Notion's side: the two reads and the approved write, exactly; the
    // declined append never left the host.
    let seen = log.lock().unwrap().clone();
    let requests: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    let query_path = format!("/v1/databases/{DATABASE}/query");
    assert_eq!(
        requests,
        [
            ("POST", "/v1/search"),
            ("POST", query_path.as_str()),
            ("POST", "/v1/pages")
        ],
        "{seen:?}"
    );
    // The host's bearer token on every request (the guest never had it),
    // and the version header the guest sets.
    for s in &seen {
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("Bearer {SECRET}").as_str()),
            "{s:?}"
        );
        assert_eq!(s.notion_version.as_deref(), Some("2022-06-28"), "{s:?}");
    }
    assert_eq!(
        seen[0].body,
        json!({"query": "grocery", "filter": {"property": "object", "value": "database"}, "page_size": 20})
    );
    // The agent's filter object reached Notion as the same object.
    assert_eq!(
        seen[1].body,
        json!({"filter": {"property": "Status", "status": {"equals": "Done"}}, "page_size": 10})
    );
    assert_eq!(
        seen[2].body,
        json!({"parent": {"database_id": DATABASE},
               "properties": {"Name": {"title": [{"text": {"content": "Purple sprouting broccoli"}}]}}})
    );
    let _ = std::fs::remove_dir_all(&dir);
}
