//! A connector that is not in the seed catalogue, from scaffold to serve
//! (issue 9's "done when"): `scout-host new` scaffolds it from the template,
//! the test adds one faulty tool (it fetches any path, but declares one
//! route), builds it for wasm32-wasip2, serves it through the real `serve`
//! binary to the official Python MCP client (`tests/mcp_client/plugin.py`:
//! the read works, the write asks a person, the undeclared request is
//! denied, a grant covers only the declared-grantable read), checks the
//! upstream's side, and passes `scout-host test` in replay mode under
//! strace with no network socket opened.

use crate::common;
use axum::extract::{Path as UrlPath, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use scout_tests::{ServeProcess, python};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

const NAME: &str = "acme-notes";
const SECRET: &str = "notes-api-token-7c1d9e2f";
const ADMIN_TOKEN: &str = "admin-token-for-the-plugin-0123456789";

fn scout_host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scout-host"))
}

/// The cargo target directory this test binary runs from.
fn target_root() -> PathBuf {
    PathBuf::from(scout_tests::TARGET_ROOT)
}

/// Every request the fake upstream received: method, path, Authorization.
type Seen = Arc<Mutex<Vec<(String, String, Option<String>)>>>;

async fn fake_notes_api() -> (String, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route(
            "/items/{id}",
            get(|UrlPath(id): UrlPath<String>| async move {
                Json(json!({"id": id, "title": "Fix the roof", "priority": "high", "tags": ["house"], "description": "Before winter."}))
            }),
        )
        .route(
            "/items/{id}/notes",
            post(|UrlPath(id): UrlPath<String>, Json(body): Json<Value>| async move {
                Json(json!({"id": "n-1", "item_id": id, "body": body["body"]}))
            }),
        )
        .fallback(|| async { (axum::http::StatusCode::OK, "anything") })
        .layer(axum::middleware::from_fn_with_state(seen.clone(), record))
        .with_state(());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (origin, seen)
}

async fn record(
    State(seen): State<Seen>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    seen.lock()
        .unwrap()
        .push((req.method().to_string(), req.uri().path().to_string(), auth));
    next.run(req).await
}

/// Scaffolds the connector and adds the faulty `peek` read tool.
fn scaffold(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    let out = scout_host()
        .args(["new", NAME, "--dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scout-host new: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The workspace's lock file: the same dependency versions, and no index
    // to resolve against.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"),
        dir.join("Cargo.lock"),
    )
    .unwrap();
    let wit_path = dir.join(format!("wit/{NAME}.wit"));
    let wit = std::fs::read_to_string(&wit_path).unwrap();
    let at = wit
        .find("    get-item: func(")
        .expect("the template's read tool");
    let line_end = at + wit[at..].find('\n').unwrap() + 1;
    let peek = "\n    /// Fetches any path it is given (deliberately faulty: it declares one route).\n    ///\n    /// Route: GET /items/{id}\n    peek: func(path: string) -> result<u16, tool-error>;\n";
    std::fs::write(
        &wit_path,
        format!("{}{peek}{}", &wit[..line_end], &wit[line_end..]),
    )
    .unwrap();
    let lib_path = dir.join("src/lib.rs");
    let lib = std::fs::read_to_string(&lib_path).unwrap();
    let at = lib
        .find("impl read_tools::Guest for")
        .expect("the template's read impl");
    let brace = at + lib[at..].find('{').unwrap() + 1;
    let body = "\n    fn peek(path: String) -> Result<u16, ToolError> {\n        Ok(client()?.send(scout_sdk::Method::Get, &path, &[], None)?.status)\n    }\n";
    std::fs::write(
        &lib_path,
        format!("{}{body}{}", &lib[..brace], &lib[brace..]),
    )
    .unwrap();
}

/// Builds the scaffold with `scout-host build` (the small-component
/// pipeline) in a target directory of its own, kept between runs.
fn build(dir: &Path) -> PathBuf {
    let target = target_root().join("plugin-connector");
    let mut cmd = scout_host();
    cmd.args(["build", "--dir"])
        .arg(dir)
        .arg("--target-dir")
        .arg(&target);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if (key.starts_with("CARGO_") && key != "CARGO_HOME")
            || matches!(
                key,
                "RUSTFLAGS" | "RUSTC_WRAPPER" | "RUSTC_WORKSPACE_WRAPPER" | "OUT_DIR" | "TARGET"
            )
        {
            cmd.env_remove(key);
        }
    }
    let out = cmd.output().expect("run scout-host build");
    assert!(
        out.status.success(),
        "building the scaffold failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("optimised with wasm-opt -Oz")
            || stdout.contains("not optimised: wasm-opt is not installed"),
        "scout-host build says whether wasm-opt ran: {stdout}"
    );
    let wasm = PathBuf::from(stdout.split(" (").next().unwrap_or_default().trim());
    assert!(
        wasm.is_file(),
        "scout-host build names the component it wrote: {stdout}"
    );
    wasm
}

fn start_serve(dir: &Path, component: &Path, origin: &str) -> ServeProcess {
    common::serve_connector(dir, ADMIN_TOKEN, (NAME, component, origin), "", "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_outside_the_catalogue_is_scaffolded_built_served_and_replayed() {
    let probe = Command::new(python())
        .args(["-c", "import mcp, httpx2"])
        .output()
        .expect("python3 runs");
    assert!(
        probe.status.success(),
        "the official MCP client does not import in the interpreter scout_tests::python provisioned"
    );
    let dir = target_root()
        .join("tmp")
        .join(format!("plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let crate_dir = dir.join(NAME);
    scaffold(&crate_dir);
    let component = tokio::task::spawn_blocking({
        let crate_dir = crate_dir.clone();
        move || build(&crate_dir)
    })
    .await
    .unwrap();

    // Small: the template-sized connector is at most 100 KB once wasm-opt
    // (which .ci/run installs) has optimised its core module.
    let size = std::fs::metadata(&component).unwrap().len();
    if Command::new("wasm-opt")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(
            size <= 100_000,
            "the scaffolded connector's component is {size} bytes"
        );
    }

    // What a reviewer sees: routes, gates, grantability, and its one capability.
    let out = scout_host()
        .arg("inspect")
        .arg(&component)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "inspect: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The template logs and calls its upstream: nothing else.
    assert_eq!(
        report["connector"]["capabilities"],
        json!(["http", "log"]),
        "{report}"
    );
    assert!(
        report["connector"]["catalogue"]
            .as_str()
            .unwrap()
            .starts_with("not in the seed catalogue")
    );
    let tool = |name: &str| {
        report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        tool("acme_notes_get_item")["routes"],
        json!([{"method": "GET", "path": "/items/{id}"}])
    );
    assert_eq!(tool("acme_notes_get_item")["grantable"], true);
    assert_eq!(tool("acme_notes_peek")["grantable"], false);
    assert_eq!(tool("acme_notes_create_note")["gate"], "approval");
    assert_eq!(
        tool("acme_notes_create_note")["routes"],
        json!([{"method": "POST", "path": "/items/{id}/notes"}])
    );

    // Served to the official Python MCP client.
    let (origin, seen) = fake_notes_api().await;
    let serve = start_serve(&dir, &component, &origin);
    let base = serve.base.clone();
    common::client_story(
        "plugin.py",
        vec![
            "--base".to_string(),
            base.clone(),
            "--admin-token".to_string(),
            ADMIN_TOKEN.to_string(),
            "--connector".to_string(),
            NAME.to_string(),
            "--secret".to_string(),
            SECRET.to_string(),
        ],
    )
    .await;
    drop(serve);

    // The upstream's side: the read and the approved write, each with the
    // host's credential; the undeclared request never left the host.
    let seen = seen.lock().unwrap().clone();
    let paths: Vec<(String, String)> = seen
        .iter()
        .map(|(m, p, _)| (m.clone(), p.clone()))
        .collect();
    assert_eq!(
        paths,
        [
            ("GET".to_string(), "/items/42".to_string()),
            ("POST".to_string(), "/items/42/notes".to_string())
        ]
    );
    assert!(
        seen.iter()
            .all(|(_, _, auth)| auth.as_deref() == Some(&format!("Bearer {SECRET}") as &str))
    );

    // `scout-host test` in replay mode, with its fixtures, under strace: no
    // socket of any network family is opened.
    write_fixtures(&crate_dir.join("fixtures"));
    let strace_log = dir.join("strace.log");
    let status = Command::new("strace").arg("-V").output();
    assert!(
        status.is_ok_and(|o| o.status.success()),
        "strace is needed to count sockets (`apt-get install strace`; .ci/run does)"
    );
    let out = Command::new("strace")
        .args(["-f", "-e", "trace=socket,connect", "-o"])
        .arg(&strace_log)
        .arg(env!("CARGO_BIN_EXE_scout-host"))
        .arg("test")
        .arg(&component)
        .arg("--fixtures")
        .arg(crate_dir.join("fixtures"))
        .env("SCOUT_CACHE_DIR", dir.join("cache"))
        .output()
        .unwrap();
    let report =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scout-host test failed:\n{report}");
    assert!(
        report.contains("reads-item") && report.contains("undeclared-route-denied"),
        "{report}"
    );
    let trace = std::fs::read_to_string(&strace_log).unwrap();
    let inet: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("AF_INET") || l.contains("AF_INET6"))
        .collect();
    assert!(
        inet.is_empty(),
        "replay opened network sockets:\n{}",
        inet.join("\n")
    );
    assert!(
        !trace
            .lines()
            .any(|l| l.contains("connect(") && l.contains("sin_port")),
        "replay connected somewhere"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The connector's own replay fixtures and cases, as an author would write
/// them from the (here: fake) service's documentation.
fn write_fixtures(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let fixture = json!({
        "provenance": "UNVERIFIED",
        "source": "the test's fake notes API (host/tests/plugin_connector.rs)",
        "exchanges": [
            {"request": {"method": "GET", "path": "/items/42"},
             "response": {"status": 200, "headers": [["content-type", "application/json"]],
                          "json": {"id": "42", "title": "Fix the roof", "priority": "high", "tags": ["house"], "description": "Before winter."}}},
            {"request": {"method": "POST", "path": "/items/42/notes", "json": {"body": "Needs a ladder"}},
             "response": {"status": 200, "headers": [["content-type", "application/json"]],
                          "json": {"id": "n-1", "item_id": "42", "body": "Needs a ladder"}}}
        ]
    });
    std::fs::write(
        dir.join("notes.json"),
        serde_json::to_string_pretty(&fixture).unwrap(),
    )
    .unwrap();
    let cases = json!([
        {"name": "reads-item", "tool": "get-item", "arguments": {"id": "42"},
         "expect": {"ok": {"id": "42", "title": "Fix the roof", "priority": "high", "tags": ["house"], "description": "Before winter."}}},
        {"name": "writes-note", "tool": "create-note", "arguments": {"item-id": "42", "body": "Needs a ladder"},
         "expect": {"ok": {"id": "n-1", "item-id": "42", "body": "Needs a ladder"}}},
        {"name": "undeclared-route-denied", "tool": "peek", "arguments": {"path": "/admin/keys"},
         "expect": {"err": {"capability": {"capability": "http", "kind": "denied", "amount": null,
                    "message": "route not declared: tool `acme_notes_peek` declares GET /items/{id}, not GET /admin/keys"}}}}
    ]);
    std::fs::write(
        dir.join("cases.json"),
        serde_json::to_string_pretty(&cases).unwrap(),
    )
    .unwrap();
}
