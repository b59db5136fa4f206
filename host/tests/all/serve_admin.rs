//! `serve` in process: the edges the Python story (`mcp_serve.rs`) does not
//! walk. Start-up refusals, the MCP endpoint's token, Host and size checks,
//! MCP spoken raw over HTTP (a disabled connection, an unknown tool, a
//! session ended while a write waits for a person) and the trace query's
//! errors. Every denied path asserts that nothing reached the fake GitHub.

use crate::common;

use reqwest::Method;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, WWW_AUTHENTICATE};
use scout_host::policy::Switches;
use scout_host::serve::{ServeConfig, ServeHost, StartError};
use scout_tests::TempDb;
use scout_tests::fake_github::FakeGitHub;
use scout_tests::mcp_wire::jsonrpc_messages;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const GITHUB_TOKEN: &str = "ghp_serveAdminTestToken0123456789";
const ADMIN_TOKEN: &str = "admin-token-for-serve-admin-0123456789";
const PROTOCOL: &str = "2025-06-18";

fn store_key() -> String {
    "5c".repeat(32)
}

/// The environment `start` sees: the admin token and the store key.
fn test_env(name: &str) -> Option<String> {
    match name {
        "SCOUT_ADMIN_TOKEN" => Some(ADMIN_TOKEN.to_string()),
        "SCOUT_STORE_KEY" => Some(store_key()),
        _ => None,
    }
}

fn github_component() -> String {
    common::component(scout_tests::components::GITHUB)
}

/// A configuration serving `component` as `[connectors.NAME]`, bound to
/// `origin`, with `extra` top-level lines.
fn config_text(
    extra: &str,
    name: &str,
    component: &str,
    origin: &str,
    allow_private: bool,
) -> String {
    format!(
        "listen = \"127.0.0.1:0\"\n{extra}\n\n[connectors.{name}]\ncomponent = {component:?}\norigin = {origin:?}\nallow_private_network = {allow_private}\n"
    )
}

/// One host serving the admin API and MCP on 127.0.0.1, in this process.
struct Served {
    base: String,
    addr: std::net::SocketAddr,
    github: FakeGitHub,
    http: reqwest::Client,
    _listening: common::Listening,
    _db: TempDb,
}

/// Starts a fake GitHub and a host serving the GitHub connector against it.
async fn serve(name: &str, extra: &str, switches: &[(&str, &str)]) -> Served {
    serve_with(name, extra, "", switches).await
}

/// [`serve`], with `connector_lines` added to the connector's table.
async fn serve_with(
    name: &str,
    extra: &str,
    connector_lines: &str,
    switches: &[(&str, &str)],
) -> Served {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let db = TempDb::new(&format!("serve-admin-{name}"));
    let text =
        config_text(extra, "github", &github_component(), &github.origin(), true) + connector_lines;
    let listening = common::listen(common::start_host(&text, &db, switches, test_env)).await;
    Served {
        base: listening.base.clone(),
        addr: listening.addr,
        github,
        http: common::client(),
        _listening: listening,
        _db: db,
    }
}

/// The body of a response as JSON (`null` when empty or not JSON).
async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The stable error shape: `{"error": {"code", "message"}}`; returns the code.
fn error_code(body: &Value) -> &str {
    let error = body
        .get("error")
        .unwrap_or_else(|| panic!("an error body: {body}"));
    assert_eq!(body.as_object().unwrap().len(), 1, "only `error`: {body}");
    assert_eq!(
        error.as_object().unwrap().len(),
        2,
        "only `code` and `message`: {body}"
    );
    assert!(error["message"].is_string(), "{body}");
    error["code"].as_str().unwrap()
}

impl Served {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// An admin API request with the admin token.
    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, self.url(path))
            .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"));
        if let Some(body) = body {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        json_of(request.send().await.unwrap()).await
    }

    /// Stores acme's GitHub connection and opens a session of `role` for acme.
    async fn session(&self, role: &str) -> Value {
        let (status, body) = self
            .admin(
                Method::PUT,
                "/v1/brands/acme/connections/github",
                Some(json!({"secret": GITHUB_TOKEN})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let (status, view) = self
            .admin(
                Method::POST,
                "/v1/sessions",
                Some(json!({"brand": "acme", "role": role})),
            )
            .await;
        assert_eq!(status, 201, "{view}");
        assert!(
            view["token"].is_string() && view["mcp"]["github"].is_string(),
            "{view}"
        );
        view
    }

    async fn trace(&self, session: &str) -> Vec<Value> {
        let (status, body) = self
            .admin(Method::GET, &format!("/v1/trace?session={session}"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        body["events"].as_array().unwrap().clone()
    }

    /// A person-chat session whose `github_create_branch` of `branch` is
    /// waiting for a person: its id, the waiting call, and the approval.
    async fn waiting_write(&self, branch: &str) -> (String, tokio::task::JoinHandle<Value>, Value) {
        let view = self.session("person-chat").await;
        let id = view["id"].as_str().unwrap().to_string();
        let mcp = self.mcp(&view).connect().await;
        let args = json!({"owner": "octo", "repo": "hello", "branch": branch});
        let waiting = tokio::spawn(async move { mcp.call("github_create_branch", args).await });
        let approval = self.first_pending(&id).await;
        (id, waiting, approval)
    }

    /// A person approving `approval_id` now is refused as `not_pending`:
    /// whatever ended it (a decision, a withdrawal, the session's end) holds.
    async fn assert_late_approval_refused(&self, approval_id: i64, why: &str) {
        let (status, body) = self
            .admin(
                Method::POST,
                &format!("/v1/approvals/{approval_id}"),
                Some(json!({"approve": true, "by": "late person"})),
            )
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (409, "not_pending"),
            "{why}: {body}"
        );
    }

    /// The first approval `session` is waiting on, once the approvals API
    /// shows one.
    async fn first_pending(&self, session: &str) -> Value {
        let started = Instant::now();
        loop {
            let (status, body) = self
                .admin(
                    Method::GET,
                    &format!("/v1/approvals?session={session}"),
                    None,
                )
                .await;
            assert_eq!(status, 200, "{body}");
            if let Some(a) = body["pending"].as_array().unwrap().first() {
                return a.clone();
            }
            assert!(
                started.elapsed() < crate::common::EVENTUALLY,
                "no approval was asked for"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A person resumes `view`'s session: its refusals count afresh.
    async fn resume(&self, view: &Value) {
        let (status, body) = self
            .admin(
                Method::POST,
                &format!("/v1/sessions/{}/resume", view["id"].as_str().unwrap()),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    /// Upstream requests other than reads.
    fn upstream_writes(&self) -> usize {
        self.github
            .requests()
            .iter()
            .filter(|r| r.method != "GET")
            .count()
    }

    fn mcp(&self, view: &Value) -> Mcp {
        Mcp {
            http: self.http.clone(),
            url: view["mcp"]["github"].as_str().unwrap().to_string(),
            token: view["token"].as_str().unwrap().to_string(),
            session: None,
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }
}

/// MCP over streamable HTTP, spoken by hand.
#[derive(Clone)]
struct Mcp {
    http: reqwest::Client,
    url: String,
    token: String,
    session: Option<String>,
    next_id: Arc<AtomicU64>,
}

impl Mcp {
    async fn post(&self, message: &Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .header(AUTHORIZATION, format!("Bearer {}", self.token))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", PROTOCOL);
        }
        request.send().await.unwrap()
    }

    /// Sends one request; returns the HTTP status, its id and every JSON-RPC
    /// message the response carried (none if the stream ended without one).
    async fn request_raw(&self, method: &str, params: Value) -> (u16, u64, Vec<Value>) {
        let (status, _, id, messages) = self.request_typed(method, params).await;
        (status, id, messages)
    }

    /// [`Mcp::request_raw`], with the response's media type.
    async fn request_typed(&self, method: &str, params: Value) -> (u16, String, u64, Vec<Value>) {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let response = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        // An error reading means the stream was cut (the session ended under it).
        let text: String = tokio::time::timeout(Duration::from_secs(60), response.text())
            .await
            .expect("the response ends")
            .unwrap_or_default();
        let messages = jsonrpc_messages(&content_type, &text);
        (status, content_type, id, messages)
    }

    /// Sends one request and returns the JSON-RPC response to it.
    async fn request(&self, method: &str, params: Value) -> Value {
        let (status, id, messages) = self.request_raw(method, params).await;
        assert_eq!(status, 200, "{method}: {messages:?}");
        messages
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{method}: no response with id {id}"))
    }

    async fn notify(&self, method: &str) {
        let response = self
            .post(&json!({"jsonrpc": "2.0", "method": method}))
            .await;
        assert_eq!(response.status().as_u16(), 202, "{method}");
    }

    /// `initialize`, keeps the MCP session id, then `notifications/initialized`.
    async fn connect(self) -> Mcp {
        self.connect_declaring(json!({})).await
    }

    /// [`Mcp::connect`], declaring the client's `capabilities`.
    async fn connect_declaring(mut self, capabilities: Value) -> Mcp {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let response = self
            .post(
                &json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                    "protocolVersion": PROTOCOL,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "serve-admin-test", "version": "0"},
                }}),
            )
            .await;
        assert_eq!(response.status().as_u16(), 200);
        let session = response
            .headers()
            .get("mcp-session-id")
            .expect("an MCP session id")
            .to_str()
            .unwrap()
            .to_string();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = response.text().await.unwrap();
        let init = jsonrpc_messages(&content_type, &text)
            .into_iter()
            .find(|m| m["id"] == id)
            .expect("initialize answered");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        self.session = Some(session);
        self.notify("notifications/initialized").await;
        self
    }

    async fn tool_names(&self) -> Vec<String> {
        let reply = self.request("tools/list", json!({})).await;
        let tools = reply["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list: {reply}"));
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }

    async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }
}

/// The text of a `tools/call` result.
fn result_text(reply: &Value) -> String {
    reply["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool result: {reply}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

fn events_of<'a>(events: &'a [Value], tool: &str) -> Vec<(&'a str, Option<&'a str>)> {
    events
        .iter()
        .filter(|e| e["tool"] == tool)
        .map(|e| (e["state"].as_str().unwrap(), e["rule"].as_str()))
        .collect()
}

// --- start ---------------------------------------------------------------

fn start_with(text: &str, db: &TempDb, env: impl Fn(&str) -> Option<String>) -> StartError {
    match ServeHost::start(common::config_in(text, db), Switches::default(), env) {
        Ok(_) => panic!("start should refuse:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn start_refuses_missing_or_malformed_secrets_and_names_the_variable() {
    let db = TempDb::new("secrets");
    let plain = config_text(
        "",
        "github",
        &github_component(),
        "https://api.github.com",
        false,
    );

    let e = start_with(&plain, &db, |_| None);
    assert!(
        matches!(&e, StartError::MissingSecret(var, _) if var == "SCOUT_ADMIN_TOKEN"),
        "{e:?}"
    );
    assert!(e.to_string().contains("SCOUT_ADMIN_TOKEN"), "{e}");

    // The variable's name comes from the file.
    let renamed = config_text(
        "admin_token_env = \"ACME_ADMIN\"",
        "github",
        &github_component(),
        "https://api.github.com",
        false,
    );
    let e = start_with(&renamed, &db, test_env);
    assert!(
        matches!(&e, StartError::MissingSecret(var, _) if var == "ACME_ADMIN"),
        "{e:?}"
    );

    let e = start_with(&plain, &db, |k| {
        (k == "SCOUT_ADMIN_TOKEN")
            .then(|| "short".to_string())
            .or_else(|| test_env(k))
    });
    assert!(
        matches!(&e, StartError::BadSecret(m) if m.contains("SCOUT_ADMIN_TOKEN")),
        "a short admin token: {e:?}"
    );

    let e = start_with(&plain, &db, |k| {
        (k == "SCOUT_ADMIN_TOKEN").then(|| ADMIN_TOKEN.to_string())
    });
    assert!(
        matches!(&e, StartError::MissingSecret(var, _) if var == "SCOUT_STORE_KEY"),
        "{e:?}"
    );

    for bad in [
        "5c".repeat(31),
        "zz".repeat(32),
        "5c".repeat(33),
        "not a key".to_string(),
    ] {
        let e = start_with(&plain, &db, |k| {
            if k == "SCOUT_STORE_KEY" {
                Some(bad.clone())
            } else {
                test_env(k)
            }
        });
        assert!(
            matches!(&e, StartError::BadSecret(m) if m.contains("SCOUT_STORE_KEY") && m.contains("64 hex digits")),
            "{bad}: {e:?}"
        );
        assert!(
            !e.to_string().contains(&bad),
            "the error does not echo the secret: {e}"
        );
    }
    assert!(
        !db.path().exists(),
        "nothing was opened before the secrets were checked"
    );
}

#[test]
fn start_refuses_a_connector_it_cannot_serve_and_names_it() {
    let db = TempDb::new("connectors");
    let refused =
        |name: &str, component: &str, origin: &str, allow_private: bool| -> (String, String) {
            match start_with(
                &config_text("", name, component, origin, allow_private),
                &db,
                test_env,
            ) {
                StartError::Connector { name, message } => (name, message),
                other => panic!("a connector error for {name} ({component}): {other:?}"),
            }
        };
    let origin = "https://api.github.com";

    // A component importing wasi:sockets is refused at load.
    let (name, message) = refused(
        "github",
        scout_tests::components::IMPORTS_SOCKETS,
        origin,
        false,
    );
    assert_eq!(name, "github");
    assert!(message.contains("wasi:sockets"), "{message}");

    // A component that loads but is another connector.
    let (name, message) = refused("github", scout_tests::components::HOSTILE, origin, false);
    assert_eq!(name, "github");
    assert!(message.contains("is the `hostile` connector"), "{message}");

    // A connector of the seed whose component disagrees with the catalogue
    // (here its first read no longer says `Grantable: yes`).
    let github = std::fs::read(github_component()).unwrap();
    let tampered =
        scout_tests::patch_bytes(&github, br#","grantable":true"#, br#","grantablX":true"#);
    let tampered_path = std::env::temp_dir().join(format!(
        "scout-serve-admin-tampered-{}.wasm",
        std::process::id()
    ));
    std::fs::write(&tampered_path, tampered).unwrap();
    let (name, message) = refused(
        "github",
        &tampered_path.display().to_string(),
        origin,
        false,
    );
    let _ = std::fs::remove_file(&tampered_path);
    assert_eq!(name, "github");
    assert!(
        message.contains("disagrees with the seed catalogue") && message.contains("grantable"),
        "{message}"
    );

    // A connector outside the catalogue is served, whatever its name.
    let text = config_text(
        "",
        "hostile",
        scout_tests::components::HOSTILE,
        origin,
        false,
    );
    let host = ServeHost::start(common::config_in(&text, &db), Switches::default(), test_env)
        .expect("any component that passes the load checks is served");
    assert!(
        host.host()
            .catalog()
            .connector("hostile")
            .is_some_and(|c| c.grantable.is_empty() && !c.reads.is_empty())
    );
    drop(host);

    // A component file that is not there.
    let missing = std::env::temp_dir().join(format!(
        "scout-serve-admin-missing-{}.wasm",
        std::process::id()
    ));
    let (name, message) = refused("github", &missing.display().to_string(), origin, false);
    assert_eq!(name, "github");
    assert!(
        message.contains(&missing.display().to_string()) && message.contains("scout-host new"),
        "{message}"
    );

    // A loopback origin without allow_private_network, and an origin that is not http(s).
    let (name, message) = refused("github", &github_component(), "http://127.0.0.1:9", false);
    assert_eq!(name, "github");
    assert!(
        message.starts_with("origin:") && message.contains("private"),
        "{message}"
    );
    let (_, message) = refused("github", &github_component(), "ftp://api.github.com", false);
    assert!(message.contains("http or https"), "{message}");
}

// --- the MCP endpoint's checks ------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_endpoint_wants_the_sessions_own_token() {
    let s = serve("tokens", "require_review = false", &[]).await;
    let view = s.session("person-chat").await;
    let url = view["mcp"]["github"].as_str().unwrap().to_string();
    let token = view["token"].as_str().unwrap();
    let id = view["id"].as_str().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let post = |url: String, auth: Option<String>| {
        let mut request = s
            .http
            .post(url)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(init.to_string());
        if let Some(auth) = auth {
            request = request.header(AUTHORIZATION, auth);
        }
        request.send()
    };

    let no_token = post(url.clone(), None).await.unwrap();
    assert_eq!(
        no_token
            .headers()
            .get(WWW_AUTHENTICATE)
            .map(|v| v.to_str().unwrap()),
        Some("Bearer")
    );
    assert_eq!(
        no_token
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| v.to_str().unwrap()),
        Some("application/json")
    );
    let (status, body) = json_of(no_token).await;
    assert_eq!((status, error_code(&body)), (401, "unauthorized"));

    let admin = post(url.clone(), Some(format!("Bearer {ADMIN_TOKEN}")))
        .await
        .unwrap();
    assert!(admin.headers().contains_key(WWW_AUTHENTICATE));
    let (status, body) = json_of(admin).await;
    assert_eq!(
        (status, error_code(&body)),
        (401, "unauthorized"),
        "the admin token does not open a session's endpoint"
    );

    let (status, body) = json_of(
        post(url.clone(), Some(format!("Basic {token}")))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (401, "unauthorized"),
        "only a bearer token counts"
    );

    let unknown = format!("{}/mcp/s-000000000000000000000000/github", s.base);
    let (status, body) = json_of(
        post(unknown.clone(), Some(format!("Bearer {token}")))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (401, "unauthorized"),
        "unknown session with a token: the same answer as a wrong token"
    );
    let (status, body) = json_of(post(unknown, None).await.unwrap()).await;
    assert_eq!(
        (status, error_code(&body)),
        (401, "unauthorized"),
        "unknown session without a token"
    );

    let other_connector = format!("{}/mcp/{id}/shopify", s.base);
    let (status, body) = json_of(
        post(other_connector, Some(format!("Bearer {token}")))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (404, "not_found"),
        "a connector the session is not served"
    );

    // The session's token does not open the admin API.
    let response = s
        .http
        .get(s.url("/v1/sessions"))
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!((status, error_code(&body)), (401, "unauthorized"));

    // The right token opens it.
    let ok = post(url, Some(format!("Bearer {token}"))).await.unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    assert!(ok.headers().contains_key("mcp-session-id"));
    assert!(s.github.requests().is_empty(), "no upstream request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_header_is_refused_on_mcp_routes() {
    let s = serve("host", "require_review = false", &[]).await;
    let view = s.session("person-chat").await;
    let url = view["mcp"]["github"].as_str().unwrap().to_string();
    let token = view["token"].as_str().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let post = |host: String| {
        s.http
            .post(url.clone())
            .header(HOST, host)
            .header(AUTHORIZATION, format!("Bearer {token}"))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(init.to_string())
            .send()
    };
    let port = s.addr.port();
    for foreign in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("127.0.0.2:{port}"),
        format!("localhost:{}", port.wrapping_add(1)),
    ] {
        let (status, body) = json_of(post(foreign.clone()).await.unwrap()).await;
        assert_eq!(
            (status, error_code(&body)),
            (403, "host_not_allowed"),
            "Host {foreign}"
        );
    }
    // The listen address and localhost on its port are answered (case aside).
    for own in [format!("127.0.0.1:{port}"), format!("LOCALHOST:{port}")] {
        let response = post(own.clone()).await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "Host {own}");
    }
    // The check runs before the token check: no token, foreign host, still 403.
    let response = s
        .http
        .post(url.clone())
        .header(HOST, "evil.example")
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!((status, error_code(&body)), (403, "host_not_allowed"));
    assert!(s.github.requests().is_empty(), "no upstream request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_max_request_bytes_are_refused_as_too_large() {
    let s = serve(
        "size",
        "require_review = false\nmax_request_bytes = 4096",
        &[],
    )
    .await;
    let view = s.session("person-chat").await;
    let mcp = s.mcp(&view).connect().await;

    let big_call = |padding: usize| {
        json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
            "name": "github_read_file",
            "arguments": {"owner": "octo", "repo": "hello", "path": "README.md", "ref": "x".repeat(padding)},
        }})
    };
    let oversized = big_call(5000);
    assert!(oversized.to_string().len() > 4096);
    let (status, body) = json_of(mcp.post(&oversized).await).await;
    assert_eq!(
        (status, error_code(&body)),
        (413, "too_large"),
        "MCP body over the limit"
    );
    assert!(
        s.github.requests().is_empty(),
        "the oversized call did not run"
    );

    // Without a token, the body is not read at all: 401, not 413.
    let response = s
        .http
        .post(view["mcp"]["github"].as_str().unwrap())
        .header(CONTENT_TYPE, "application/json")
        .body(oversized.to_string())
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!((status, error_code(&body)), (401, "unauthorized"));

    // Just under the limit is served.
    let names = mcp.tool_names().await;
    assert!(names.iter().any(|n| n == "github_read_file"), "{names:?}");

    // The admin API has the same limit.
    let session =
        json!({"brand": "acme", "role": "person-chat", "profile": null, "pad": " ".repeat(5000)});
    let (status, body) = s.admin(Method::POST, "/v1/sessions", Some(session)).await;
    assert_eq!(
        (status, error_code(&body)),
        (413, "too_large"),
        "admin body over the limit"
    );
    let (status, body) = s
        .admin(
            Method::PUT,
            "/v1/brands/globex/connections/github",
            Some(json!({"secret": "g".repeat(5000)})),
        )
        .await;
    assert_eq!((status, error_code(&body)), (413, "too_large"));
    let (status, body) = s
        .admin(Method::GET, "/v1/brands/globex/connections", None)
        .await;
    assert_eq!(
        (status, body["connections"].clone()),
        (200, json!([])),
        "the oversized secret was not stored"
    );
    assert!(s.github.requests().is_empty(), "no upstream request");
}

// --- what a session is served ---------------------------------------------

/// A connector a session is not served is named in the session's answer
/// with what to do; a public API (`credential = "none"`) is served to a
/// brand with no stored connection and its upstream receives no credential.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_names_what_it_left_out_and_a_public_api_needs_no_connection() {
    let s = serve("left-out", "require_review = false", &[]).await;
    let (status, view) = s
        .admin(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "person-chat"})),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    // No connector; the host's own endpoint (capability requests) only.
    assert_eq!(
        view["mcp"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["scout"],
        "{view}"
    );
    let why = view["left_out"]["github"].as_str().unwrap_or_default();
    assert!(
        why.contains("no `github` connection")
            && why.contains("PUT /v1/brands/acme/connections/github")
            && why.contains("credential = \"none\""),
        "{view}"
    );
    let id = view["id"].as_str().unwrap();
    let (status, again) = s
        .admin(Method::GET, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["left_out"], view["left_out"], "{again}");
    // Once the brand's connection is stored, nothing is left out.
    let connected = s.session("person-chat").await;
    assert!(connected.get("left_out").is_none(), "{connected}");
    // The goal reviewer is handed no connector's credential, stored or not.
    let (status, reviewer) = s
        .admin(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "goal-reviewer"})),
        )
        .await;
    assert_eq!(status, 201, "{reviewer}");
    let why = reviewer["left_out"]["github"].as_str().unwrap_or_default();
    assert!(
        why.contains("role `goal reviewer` is not handed this connector's credential"),
        "{reviewer}"
    );

    let public = serve_with(
        "public",
        "require_review = false",
        "credential = \"none\"\n",
        &[],
    )
    .await;
    let (status, view) = public
        .admin(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "globex", "role": "person-chat"})),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    assert!(view["mcp"]["github"].is_string(), "{view}");
    assert!(view.get("left_out").is_none(), "{view}");
    let mcp = public.mcp(&view).connect().await;
    let read = mcp
        .call(
            "github_read_file",
            json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
        )
        .await;
    let requests = public.github.requests();
    assert_eq!(requests.len(), 1, "the read reached the upstream: {read}");
    assert_eq!(
        requests[0].header("authorization"),
        None,
        "a public API receives no credential"
    );
    // The fake wants a token, so it answers 401: the guest says so.
    assert_eq!(read["result"]["isError"], true, "{read}");

    // Nonsense and contradictions are refused at start, naming the setting.
    for (lines, needle) in [
        ("credential = \"nothing\"\n", "or none (a public API)"),
        (
            "credential = \"none\"\nhost_env = \"GITHUB_TOKEN\"\n",
            "`host_env` would never be used",
        ),
    ] {
        let text = config_text(
            "",
            "github",
            &github_component(),
            "https://x.example",
            false,
        ) + lines;
        let err = ServeConfig::parse(&text).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains(needle)),
            "{lines}: {err:?}"
        );
    }
}

// --- MCP spoken raw -------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_connection_empties_the_list_and_refuses_the_next_call() {
    let s = serve(
        "disable",
        "require_review = false",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "500"),
        ],
    )
    .await;
    let view = s.session("person-chat").await;
    let id = view["id"].as_str().unwrap();
    let mcp = s.mcp(&view).connect().await;
    let names = mcp.tool_names().await;
    assert_eq!(names.len(), 11, "{names:?}");
    let read_args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    let read = mcp.call("github_read_file", read_args.clone()).await;
    assert_ne!(read["result"]["isError"], true, "{read}");
    assert!(result_text(&read).contains("# Hello"), "{read}");
    assert_eq!(read["result"]["_meta"]["scout/untrusted"], true, "{read}");
    assert_eq!(s.github.requests().len(), 1);
    s.github.clear_requests();

    let (status, body) = s
        .admin(Method::DELETE, "/v1/brands/acme/connections/github", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["disabled"], true);
    let (_, listed) = s
        .admin(Method::GET, "/v1/brands/acme/connections", None)
        .await;
    assert_eq!(listed["connections"], json!([]), "{listed}");

    assert_eq!(
        mcp.tool_names().await,
        Vec::<String>::new(),
        "a disabled connection offers nothing"
    );
    let refused = mcp.call("github_read_file", read_args).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(result_text(&refused).contains("revoked"), "{refused}");
    let write = mcp
        .call(
            "github_create_branch",
            json!({"owner": "octo", "repo": "hello", "branch": "scout/disabled"}),
        )
        .await;
    assert_eq!(write["result"]["isError"], true, "{write}");
    assert!(
        s.github.requests().is_empty(),
        "no upstream request after the connection was disabled"
    );
    assert!(
        s.github
            .branch_sha("octo", "hello", "scout/disabled")
            .is_none()
    );

    let events = s.trace(id).await;
    let reads = events_of(&events, "mcp__github__github_read_file");
    assert_eq!(
        reads
            .iter()
            .filter(|(state, _)| *state == "executed")
            .count(),
        1,
        "only the first read ran: {reads:?}"
    );
    assert_eq!(
        reads.last(),
        Some(&("denied", Some("revoked"))),
        "{reads:?}"
    );
    let writes = events_of(&events, "mcp__github__github_create_branch");
    assert!(writes.contains(&("denied", Some("revoked"))), "{writes:?}");
    assert!(
        !writes.iter().any(|(state, _)| *state == "executed"),
        "{writes:?}"
    );

    // A brand with no connection has nothing to disable.
    let (status, body) = s
        .admin(Method::DELETE, "/v1/brands/globex/connections/github", None)
        .await;
    assert_eq!((status, error_code(&body)), (404, "not_found"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_is_a_permission_denied_error_and_a_switched_off_write_refuses() {
    // GITHUB_ALLOW_WRITES is off: the four write tools are listed but refuse (seed: "they refuse without it").
    // Three invented names are one consequence: pausing is off here, it has a test of its own.
    let s = serve(
        "unknown",
        "require_review = false\npause_after_repeated_denials = 0",
        &[],
    )
    .await;
    let view = s.session("person-chat").await;
    let id = view["id"].as_str().unwrap();
    let mcp = s.mcp(&view).connect().await;
    let names = mcp.tool_names().await;
    assert_eq!(names.len(), 11, "{names:?}");

    for tool in [
        "github_delete_repository",
        "mcp__github__github_read_file",
        "GITHUB_READ_FILE",
    ] {
        let reply = mcp
            .call(
                tool,
                json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
            )
            .await;
        assert!(reply.get("result").is_none(), "{tool}: {reply}");
        let message = reply["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("a JSON-RPC error: {reply}"));
        assert!(message.contains("permission_denied"), "{tool}: {reply}");
        assert_eq!(reply["error"]["data"]["reason"], "not_offered", "{reply}");
        let events = s.trace(id).await;
        let states = events_of(&events, &format!("mcp__github__{tool}"));
        assert_eq!(
            states,
            [
                ("requested", None),
                ("permission_denied", Some("not_offered"))
            ],
            "{tool}"
        );
    }

    // The switched-off write: refused as a tool result, no approval asked;
    // the agent hears the operator turned it off, the trace names the
    // switch (the role allows the call: it is not `outside_role`).
    let reply = mcp
        .call(
            "github_create_branch",
            json!({"owner": "octo", "repo": "hello", "branch": "scout/nope"}),
        )
        .await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = result_text(&reply);
    assert!(
        text.contains("switch:GITHUB_ALLOW_WRITES")
            && text.contains("turned off by the operator")
            && !text.contains("outside_role"),
        "{reply}"
    );
    let (_, pending) = s
        .admin(Method::GET, &format!("/v1/approvals?session={id}"), None)
        .await;
    assert_eq!(
        pending["pending"],
        json!([]),
        "nobody is asked for a refused call"
    );
    let events = s.trace(id).await;
    let states = events_of(&events, "mcp__github__github_create_branch");
    assert_eq!(
        states,
        [
            ("requested", None),
            ("denied", Some("switch:GITHUB_ALLOW_WRITES"))
        ]
    );

    assert!(s.github.requests().is_empty(), "no upstream request");
    assert!(s.github.branch_sha("octo", "hello", "scout/nope").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_a_session_refuses_its_waiting_write_and_its_approval() {
    let s = serve(
        "end",
        "require_review = false",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "600000"),
        ],
    )
    .await;
    let view = s.session("person-chat").await;
    let id = view["id"].as_str().unwrap().to_string();
    let mcp = s.mcp(&view).connect().await;

    let waiting = {
        let mcp = mcp.clone();
        tokio::spawn(async move {
            mcp.request_raw("tools/call", json!({"name": "github_create_branch", "arguments": {"owner": "octo", "repo": "hello", "branch": "scout/ended"}}))
                .await
        })
    };

    // The call waits for a person: its approval shows the arguments.
    let approval = s.first_pending(&id).await;
    assert_eq!(approval["tool"], "mcp__github__github_create_branch");
    assert_eq!(approval["arguments"]["branch"], "scout/ended", "{approval}");
    assert!(!waiting.is_finished());

    let (status, body) = s
        .admin(Method::DELETE, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");

    // The waiting call ends now, not at the approval timeout, and did not
    // run: its client gets a refusal before the session's streams close.
    let (_, call_id, messages) = tokio::time::timeout(crate::common::EVENTUALLY, waiting)
        .await
        .expect("the call ends with the session")
        .unwrap();
    // Refused as revoked, not as timed out (the approval timeout is 600 s).
    let reply = messages
        .iter()
        .find(|m| m["id"] == call_id)
        .expect("the waiting client gets an answer");
    assert_eq!(reply["result"]["isError"], true, "refused: {reply}");
    assert!(
        reply.to_string().contains("revoked"),
        "refused as revoked: {reply}"
    );

    // The approval cannot be given any more.
    let approval_id = approval["id"].as_i64().unwrap();
    s.assert_late_approval_refused(approval_id, "an ended session's approval is not approvable")
        .await;
    let (_, pending) = s
        .admin(Method::GET, &format!("/v1/approvals?session={id}"), None)
        .await;
    assert_eq!(pending["pending"], json!([]));

    // The boundary's wait ends with a denial (the client's stream may have
    // closed before it): wait for it in the trace, then check nothing ran.
    let denied_at = Instant::now();
    let events = loop {
        let events = s.trace(&id).await;
        if events_of(&events, "mcp__github__github_create_branch")
            .contains(&("denied", Some("revoked")))
        {
            break events;
        }
        assert!(
            denied_at.elapsed() < crate::common::EVENTUALLY,
            "the trace says why: {:?}",
            events_of(&events, "mcp__github__github_create_branch")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let writes = events_of(&events, "mcp__github__github_create_branch");
    assert!(
        !writes
            .iter()
            .any(|(state, _)| *state == "allowed" || *state == "executed"),
        "{writes:?}"
    );
    assert!(
        writes.contains(&("requested", Some("approval_requested"))),
        "{writes:?}"
    );
    assert_eq!(s.upstream_writes(), 0, "no upstream write");
    assert!(
        s.github
            .branch_sha("octo", "hello", "scout/ended")
            .is_none()
    );

    // The endpoint is gone: its token opens nothing.
    let (status, _, _) = mcp.request_raw("tools/list", json!({})).await;
    assert_eq!(status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_says_who_decided_an_approval_and_why_tools_are_missing() {
    let s = serve(
        "who-decided",
        "require_review = false",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "600000"),
        ],
    )
    .await;
    let (id, waiting, approval) = s.waiting_write("scout/who").await;
    let approval_id = approval["id"].as_i64().unwrap();
    let (status, body) = s
        .admin(
            Method::POST,
            &format!("/v1/approvals/{approval_id}"),
            Some(json!({"approve": true, "by": "alice"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["decided_by"], "admin-token",
        "the verified caller decides, not the body's `by`"
    );
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, waiting)
        .await
        .expect("the call ends")
        .unwrap();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert!(s.github.branch_sha("octo", "hello", "scout/who").is_some());
    let events = s.trace(&id).await;
    let decided: Vec<&Value> = events.iter().filter(|e| e["state"] == "decided").collect();
    assert_eq!(decided.len(), 1, "{events:?}");
    assert_eq!(decided[0]["rule"], "approved");
    assert_eq!(decided[0]["detail"]["approval"], approval_id);
    assert_eq!(
        decided[0]["detail"]["by"], "admin-token (approvals API)",
        "who (the verified caller, never the body's `by`), and through which channel"
    );
    assert!(decided[0]["detail"]["decided_at_ms"].as_i64().unwrap() > 0);
    let writes = events_of(&events, "mcp__github__github_create_branch");
    let order: Vec<&str> = writes.iter().map(|(state, _)| *state).collect();
    assert_eq!(
        order,
        [
            "requested",
            "requested",
            "decided",
            "allowed",
            "executed",
            "result"
        ],
        "{writes:?}"
    );
    // The executed event records the exchange the write made, by route.
    let executed = events
        .iter()
        .find(|e| e["state"] == "executed" && e["tool"] == "mcp__github__github_create_branch")
        .unwrap();
    let routes: Vec<&str> = executed["detail"]["http"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["route"].as_str().unwrap_or(""))
        .collect();
    assert!(routes.iter().any(|r| r.starts_with("POST ")), "{executed}");
    // At the session's start: what it was not given, and why.
    let removed: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["state"] == "removed")
        .map(|e| (e["tool"].as_str().unwrap(), e["rule"].as_str().unwrap()))
        .collect();
    assert!(
        removed.contains(&("mcp__team__team_roster", "no_coworkers")),
        "{removed:?}"
    );
    assert!(
        !removed
            .iter()
            .any(|(tool, _)| tool.starts_with("mcp__github__")),
        "every GitHub tool is offered: {removed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_approved_after_its_connection_was_disabled_is_still_denied() {
    let s = serve(
        "approve-disabled",
        "require_review = false",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "600000"),
        ],
    )
    .await;
    let (id, waiting, approval) = s.waiting_write("scout/late").await;
    let (status, _) = s
        .admin(Method::DELETE, "/v1/brands/acme/connections/github", None)
        .await;
    assert_eq!(status, 200);
    // A person approves what they were shown; the world changed meanwhile.
    let approval_id = approval["id"].as_i64().unwrap();
    let (status, body) = s
        .admin(
            Method::POST,
            &format!("/v1/approvals/{approval_id}"),
            Some(json!({"approve": true, "by": "alice"})),
        )
        .await;
    assert!(
        status == 200 || (status == 409 && error_code(&body) == "not_pending"),
        "{status} {body}"
    );
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, waiting)
        .await
        .expect("the call ends")
        .unwrap();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(result_text(&reply).contains("revoked"), "{reply}");
    assert_eq!(s.upstream_writes(), 0, "no upstream write");
    assert!(s.github.branch_sha("octo", "hello", "scout/late").is_none());
    let events = s.trace(&id).await;
    let writes = events_of(&events, "mcp__github__github_create_branch");
    assert_eq!(
        writes.last(),
        Some(&("denied", Some("revoked"))),
        "{writes:?}"
    );
    assert!(
        !writes.iter().any(|(state, _)| *state == "executed"),
        "{writes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_a_connection_revokes_the_approvals_waiting_on_it() {
    let s = serve(
        "revive",
        "require_review = false",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "600000"),
        ],
    )
    .await;

    let (id, waiting, approval) = s.waiting_write("scout/revived").await;
    let (status, _) = s
        .admin(Method::DELETE, "/v1/brands/acme/connections/github", None)
        .await;
    assert_eq!(status, 200);
    let (_, pending) = s
        .admin(Method::GET, &format!("/v1/approvals?session={id}"), None)
        .await;
    assert_eq!(
        pending["pending"],
        json!([]),
        "the approval went with the connection"
    );

    // The connection comes back; the old approval does not.
    let (status, _) = s
        .admin(
            Method::PUT,
            "/v1/brands/acme/connections/github",
            Some(json!({"secret": GITHUB_TOKEN})),
        )
        .await;
    assert_eq!(status, 200);
    let approval_id = approval["id"].as_i64().unwrap();
    let (status, body) = s
        .admin(
            Method::POST,
            &format!("/v1/approvals/{approval_id}"),
            Some(json!({"approve": true, "by": "alice"})),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (409, "not_pending"),
        "an approval revoked with its connection never revives"
    );
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, waiting)
        .await
        .expect("the call ends")
        .unwrap();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(result_text(&reply).contains("revoked"), "{reply}");
    // Refused as revoked, not as timed out (the approval timeout is 600 s).
    assert_eq!(s.upstream_writes(), 0, "no upstream write");
    assert!(
        s.github
            .branch_sha("octo", "hello", "scout/revived")
            .is_none()
    );
}

// --- the trace query ------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_query_wants_exactly_one_of_session_or_brand() {
    let s = serve("trace", "", &[]).await;
    let view = s.session("person-chat").await;
    let id = view["id"].as_str().unwrap();

    for query in ["", "?", format!("?session={id}&brand=acme").as_str()] {
        let (status, body) = s
            .admin(Method::GET, &format!("/v1/trace{query}"), None)
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (400, "bad_request"),
            "/v1/trace{query}"
        );
    }
    for query in [
        "?sesion=x",
        "?session=x&page=5",
        "?tool=mcp__github__github_read_file",
        "?session=x&limit=-1",
        "?session=x&limit=5001",
        "?session=x&after=z",
    ] {
        let (status, body) = s
            .admin(Method::GET, &format!("/v1/trace{query}"), None)
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (400, "invalid_query"),
            "/v1/trace{query}"
        );
    }
    let (status, body) = s.admin(Method::GET, "/v1/approvals?sesion=x", None).await;
    assert_eq!(
        (status, error_code(&body)),
        (400, "invalid_query"),
        "approvals, too"
    );

    let (status, by_session) = s
        .admin(Method::GET, &format!("/v1/trace?session={id}"), None)
        .await;
    assert_eq!(status, 200);
    let states: Vec<&str> = by_session["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(&states[..2], ["registered", "eligible"], "{states:?}");
    // What the session was offered, then who opened it.
    assert_eq!(
        &states[states.len() - 2..],
        ["offered", "changed"],
        "{states:?}"
    );
    assert!(
        states.contains(&"denied"),
        "review is on: tools are held, and the trace says so: {states:?}"
    );
    let (status, by_brand) = s.admin(Method::GET, "/v1/trace?brand=acme", None).await;
    assert_eq!(status, 200);
    // The brand's trace: the session's rows, and the brand's own changes
    // (its connection stored, under no session).
    let (sessions_rows, brand_rows): (Vec<Value>, Vec<Value>) = by_brand["events"]
        .as_array()
        .unwrap()
        .iter()
        .cloned()
        .partition(|e| e["session"] == *id);
    assert_eq!(Value::Array(sessions_rows), by_session["events"]);
    assert!(
        brand_rows
            .iter()
            .all(|e| e["state"] == "changed" && e["session"] == ""),
        "{brand_rows:?}"
    );
    // Read in bounded pages: each page continues after the last one's `next_after`.
    let all = by_session["events"].as_array().unwrap().clone();
    assert!(all.len() >= 3, "{all:?}");
    assert!(
        all.windows(2)
            .all(|w| w[0]["seq"].as_i64() < w[1]["seq"].as_i64()),
        "sequence numbers increase"
    );
    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let (status, page) = s
            .admin(
                Method::GET,
                &format!("/v1/trace?session={id}&limit=2&after={after}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{page}");
        let events = page["events"].as_array().unwrap();
        assert!(events.len() <= 2);
        paged.extend(events.iter().cloned());
        match page["next_after"].as_i64() {
            Some(next) => after = next,
            None => break,
        }
    }
    assert_eq!(paged, all, "the pages add up to the whole trace");
    let (status, none) = s.admin(Method::GET, "/v1/trace?brand=globex", None).await;
    assert_eq!((status, none["events"].clone()), (200, json!([])));
    // Unauthenticated, the trace is not readable.
    let (status, body) = json_of(
        s.http
            .get(s.url(&format!("/v1/trace?session={id}")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, error_code(&body)), (401, "unauthorized"));
    assert!(s.github.requests().is_empty());
}

// --- session lifetime --------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_by_itself_at_its_time() {
    let s = serve(
        "ttl",
        "require_review = false\nsession_ttl_secs = 1",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "600000"),
        ],
    )
    .await;

    let (id, waiting, approval) = s.waiting_write("scout/expired").await;
    let (status, body) = s
        .admin(Method::GET, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["expires_at_ms"].as_i64().unwrap() > 0,
        "the session says when it ends: {body}"
    );

    // Nobody touches the session: the host ends it, and its waiting call is refused.
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, waiting)
        .await
        .expect("the waiting call ends with the session")
        .unwrap();
    // Refused as revoked, not as timed out (the approval timeout is 600 s).
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(result_text(&reply).contains("revoked"), "{reply}");
    let approval_id = approval["id"].as_i64().unwrap();
    s.assert_late_approval_refused(
        approval_id,
        "an expired session's approval is not approvable",
    )
    .await;
    let (status, body) = s
        .admin(Method::GET, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!((status, error_code(&body)), (404, "not_found"));
    let (_, list) = s.admin(Method::GET, "/v1/sessions", None).await;
    assert_eq!(list["sessions"], json!([]));
    assert_eq!(s.upstream_writes(), 0);
    assert!(
        s.github
            .branch_sha("octo", "hello", "scout/expired")
            .is_none()
    );
}

// --- one error shape ----------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_from_extractors_and_the_mcp_transport_have_the_json_shape() {
    let s = serve("shape", "require_review = false", &[]).await;
    // A path segment that is not UTF-8: axum's own rejection, reshaped.
    let (status, body) = s.admin(Method::GET, "/v1/sessions/%FF", None).await;
    assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");
    // An approval id that is not a number.
    let (status, body) = s
        .admin(
            Method::POST,
            "/v1/approvals/abc",
            Some(json!({"approve": true, "by": "x"})),
        )
        .await;
    assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");
    // The MCP transport refusing a request without the Accept it requires.
    let view = s.session("person-chat").await;
    let response = s
        .http
        .post(view["mcp"]["github"].as_str().unwrap())
        .header(AUTHORIZATION, format!("Bearer {}", view["token"].as_str().unwrap()))
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).to_string())
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert!(status >= 400, "refused without Accept: {status}");
    assert!(
        body["error"]["code"].is_string() && body["error"]["message"].is_string(),
        "{body}"
    );
    assert!(s.github.requests().is_empty());
}

/// Waits until the approval `approval_id` is no longer pending and the
/// trace of `session` records it withdrawn; returns that trace.
async fn withdrawn(s: &Served, session: &str, approval_id: i64) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let events = s.trace(session).await;
        let (_, pending) = s
            .admin(
                Method::GET,
                &format!("/v1/approvals?session={session}"),
                None,
            )
            .await;
        let still_pending = pending["pending"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == approval_id);
        if !still_pending
            && events_of(&events, "mcp__github__github_create_branch")
                .contains(&("denied", Some("approval_withdrawn")))
        {
            return events;
        }
        assert!(
            started.elapsed() < crate::common::EVENTUALLY,
            "the approval is withdrawn when its caller goes away: {:?}",
            events_of(&events, "mcp__github__github_create_branch")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A stateless MCP request (protocol 2026-07-28, no session), as the
/// official Python client sends them now.
async fn stateless_call(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    tool: &str,
    arguments: Value,
) -> reqwest::Response {
    stateless_call_declaring(http, url, token, tool, arguments, json!({})).await
}

/// [`stateless_call`] from a client declaring `capabilities`.
async fn stateless_call_declaring(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    tool: &str,
    arguments: Value,
    capabilities: Value,
) -> reqwest::Response {
    stateless_call_with_meta(http, url, token, tool, arguments, capabilities, json!({})).await
}

/// [`stateless_call_declaring`] with more `_meta` (a `progressToken`).
async fn stateless_call_with_meta(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    tool: &str,
    arguments: Value,
    capabilities: Value,
    more_meta: Value,
) -> reqwest::Response {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}});
    if let (Value::Object(meta), Value::Object(more)) = (&mut meta, more_meta) {
        meta.extend(more);
    }
    http.post(url)
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .header(CONTENT_TYPE, "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments, "_meta": meta}})
            .to_string(),
        )
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_answered_directly_is_the_answer_rmcp_gives() {
    let s = serve("direct", "require_review = false", &[]).await;
    let view = s.session("person-chat").await;
    let (url, token) = (
        view["mcp"]["github"].as_str().unwrap().to_string(),
        view["token"].as_str().unwrap().to_string(),
    );
    let read = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    let mut answers = Vec::new();
    // Without elicitation the host answers itself; a client that can be
    // asked goes through rmcp's service (a read asks nobody anything).
    for capabilities in [json!({}), json!({"elicitation": {}})] {
        // Each round's refusals are a first time (a person's resumption
        // makes refusals count afresh).
        s.resume(&view).await;
        for (tool, args) in [
            ("github_read_file", read.clone()),
            (
                "github_create_branch",
                json!({"owner": "octo", "repo": "hello", "branch": "b"}),
            ),
            ("github_no_such_tool", json!({})),
        ] {
            let reply =
                stateless_call_declaring(&s.http, &url, &token, tool, args, capabilities.clone())
                    .await;
            let status = reply.status().as_u16();
            let text = reply.text().await.unwrap();
            let message: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{text}"));
            answers.push((tool, status, message));
        }
    }
    // The tool list answered directly (serialised once per revision) is
    // the one rmcp gives a session-mode client.
    let listed = s
        .http
        .post(&url)
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .header(CONTENT_TYPE, "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status().as_u16(), 200);
    let mut direct_list: Value = serde_json::from_str(&listed.text().await.unwrap()).unwrap();
    assert_eq!(direct_list["id"], 9);
    // 2026-07-28 results carry `resultType`, and a list its caching hints
    // (the session's own, never kept: the official SDKs require both);
    // rmcp strips the first for a peer of an earlier revision, as the
    // session-mode client is, and gives it no hints.
    let result = direct_list["result"].as_object_mut().unwrap();
    assert_eq!(result.remove("resultType"), Some(json!("complete")));
    assert_eq!(result.remove("ttlMs"), Some(json!(0)));
    assert_eq!(result.remove("cacheScope"), Some(json!("private")));
    let session_list = s
        .mcp(&view)
        .connect()
        .await
        .request("tools/list", json!({}))
        .await;
    assert_eq!(direct_list["result"], session_list["result"]);
    assert!(
        !direct_list["result"]["tools"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let (direct, through_rmcp) = answers.split_at(3);
    assert_eq!(direct, through_rmcp);
    assert_eq!(direct[0].2["result"]["isError"], false, "{:?}", direct[0]);
    assert_eq!(
        direct[1].2["result"]["isError"], true,
        "writes are off: {:?}",
        direct[1]
    );
    assert!(
        direct[2].2["error"].is_object(),
        "an unknown tool is a protocol error: {:?}",
        direct[2]
    );
}

/// Inside an MCP session (`Mcp-Session-Id`, protocol 2025-11-25): a
/// client's list and calls are answered by the host itself as plain JSON,
/// whether or not the client can be asked. A request rmcp must judge (one
/// carrying a protocol version of its own) gets the same messages from
/// rmcp's session, as an event stream. A closed session answers nothing
/// more, and nothing of it reaches GitHub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_a_session_answered_directly_is_the_answer_rmcp_gives() {
    let s = serve("in-session", "require_review = false", &[]).await;
    let view = s.session("person-chat").await;
    let read = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    let requests = [
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name": "github_read_file", "arguments": read}),
        ),
        (
            "tools/call",
            json!({"name": "github_create_branch", "arguments": {"owner": "octo", "repo": "hello", "branch": "b"}}),
        ),
        (
            "tools/call",
            json!({"name": "github_no_such_tool", "arguments": {}}),
        ),
    ];
    let mut answers = Vec::new();
    let mut direct_session = None;
    let own_version = json!({"io.modelcontextprotocol/protocolVersion": PROTOCOL});
    for (capabilities, meta, media_type) in [
        (json!({}), None, "application/json"),
        (json!({"elicitation": {}}), None, "application/json"),
        (
            json!({"elicitation": {}}),
            Some(&own_version),
            "text/event-stream",
        ),
    ] {
        // Each round's refusals are a first time.
        s.resume(&view).await;
        let mcp = s.mcp(&view).connect_declaring(capabilities).await;
        for (method, params) in &requests {
            let mut params = params.clone();
            if let Some(meta) = meta {
                params["_meta"] = meta.clone();
            }
            let (status, content_type, id, messages) =
                mcp.request_typed(method, params.clone()).await;
            assert_eq!(status, 200, "{method} {params}");
            assert!(
                content_type.starts_with(media_type),
                "{method} {params} answered as {content_type}, not {media_type}"
            );
            let answer = messages
                .into_iter()
                .find(|m| m["id"] == id)
                .unwrap_or_else(|| panic!("{method}: no answer"));
            answers.push(answer);
        }
        direct_session.get_or_insert(mcp);
    }
    let (direct, others) = answers.split_at(requests.len());
    let (asked, through_rmcp) = others.split_at(requests.len());
    assert_eq!(direct, asked);
    assert_eq!(direct, through_rmcp);
    assert!(
        direct[0]["result"].get("resultType").is_none(),
        "{}",
        direct[0]
    );
    assert!(!direct[0]["result"]["tools"].as_array().unwrap().is_empty());
    assert_eq!(direct[1]["result"]["isError"], false, "{}", direct[1]);
    assert!(
        direct[1]["result"].get("resultType").is_none(),
        "{}",
        direct[1]
    );
    assert_eq!(
        direct[2]["result"]["isError"], true,
        "writes are off: {}",
        direct[2]
    );
    assert!(direct[3]["error"].is_object(), "{}", direct[3]);
    let reads = |s: &Served| {
        s.github
            .requests()
            .iter()
            .filter(|r| r.path.contains("README.md"))
            .count()
    };
    assert_eq!(reads(&s), 3, "one read each");

    // Closed by its client: the next call is refused, nothing is sent.
    let mcp = direct_session.unwrap();
    let closed = s
        .http
        .delete(&mcp.url)
        .header(AUTHORIZATION, format!("Bearer {}", mcp.token))
        .header("mcp-session-id", mcp.session.as_deref().unwrap())
        .header("mcp-protocol-version", PROTOCOL)
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_success(), "{}", closed.status());
    let (status, _, _) = mcp
        .request_raw(
            "tools/call",
            json!({"name": "github_read_file", "arguments": read}),
        )
        .await;
    assert_eq!(status, 404, "a closed session answers nothing");
    assert_eq!(reads(&s), 3, "nothing of the closed session reached GitHub");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_calls_get_plain_json_and_a_caller_that_goes_away_withdraws() {
    let s = serve(
        "stateless",
        "require_review = false",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "60000"),
        ],
    )
    .await;
    let view = s.session("person-chat").await;
    let (id, url, token) = (
        view["id"].as_str().unwrap().to_string(),
        view["mcp"]["github"].as_str().unwrap().to_string(),
        view["token"].as_str().unwrap().to_string(),
    );
    // A read: one JSON answer, not an event stream.
    let read = stateless_call(
        &s.http,
        &url,
        &token,
        "github_read_file",
        json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
    )
    .await;
    let status = read.status().as_u16();
    let content_type = read
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = read.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(
        content_type.starts_with("application/json"),
        "plain JSON where the client allows it: {content_type} {text}"
    );
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["result"]["isError"], false, "{reply}");

    // A write waits for a person; its client goes away (the request, or
    // the event stream it became, is dropped).
    let waiting = {
        let (http, url, token) = (s.http.clone(), url.clone(), token.clone());
        tokio::spawn(async move {
            stateless_call(
                &http,
                &url,
                &token,
                "github_create_branch",
                json!({"owner": "octo", "repo": "hello", "branch": "scout/stateless"}),
            )
            .await
            .text()
            .await
        })
    };
    let approval = s.first_pending(&id).await;
    waiting.abort();
    let approval_id = approval["id"].as_i64().unwrap();
    withdrawn(&s, &id, approval_id).await;
    s.assert_late_approval_refused(approval_id, "a withdrawn approval cannot be given")
        .await;
    assert_eq!(s.upstream_writes(), 0, "no write reached GitHub");
    assert!(
        s.github
            .branch_sha("octo", "hello", "scout/stateless")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_caller_goes_away_withdraws_its_approval() {
    let s = serve(
        "caller-gone",
        "require_review = false\nsse_keep_alive_ms = 100",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "60000"),
        ],
    )
    .await;

    // The client's stream closes (its HTTP connection is dropped) while the
    // write waits for a person.
    let (id, waiting, approval) = s.waiting_write("scout/closed").await;
    waiting.abort();
    let approval_id = approval["id"].as_i64().unwrap();
    let events = withdrawn(&s, &id, approval_id).await;
    let writes = events_of(&events, "mcp__github__github_create_branch");
    assert!(
        !writes
            .iter()
            .any(|(state, _)| *state == "allowed" || *state == "executed"),
        "{writes:?}"
    );
    // A person answering late cannot make it run.
    s.assert_late_approval_refused(approval_id, "a withdrawn approval cannot be given")
        .await;

    // The client cancels the request (notifications/cancelled).
    let view = s.session("person-chat").await;
    let id = view["id"].as_str().unwrap().to_string();
    let mcp = s.mcp(&view).connect().await;
    let request_id = mcp.next_id.load(Ordering::SeqCst);
    let waiting = {
        let mcp = mcp.clone();
        tokio::spawn(async move {
            mcp.request_raw("tools/call", json!({"name": "github_create_branch", "arguments": {"owner": "octo", "repo": "hello", "branch": "scout/cancelled"}}))
                .await
        })
    };
    let approval = s.first_pending(&id).await;
    let response = mcp
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id, "reason": "the person closed the tab"}}))
        .await;
    assert_eq!(response.status().as_u16(), 202);
    let approval_id = approval["id"].as_i64().unwrap();
    withdrawn(&s, &id, approval_id).await;
    s.assert_late_approval_refused(approval_id, "a cancelled call's approval cannot be given")
        .await;
    // The cancelled request is answered (or its stream ends); it never runs.
    let _ = tokio::time::timeout(Duration::from_secs(10), waiting).await;

    assert_eq!(s.upstream_writes(), 0, "no write reached GitHub");
    assert!(
        s.github
            .branch_sha("octo", "hello", "scout/closed")
            .is_none()
    );
    assert!(
        s.github
            .branch_sha("octo", "hello", "scout/cancelled")
            .is_none()
    );
}

/// `GET /v1/trace/export`: every row after `since` as JSON lines, the cursor
/// to resume from in `Scout-Next-Cursor`; behind the admin token; bad
/// cursors refused with the rule.
#[tokio::test(flavor = "multi_thread")]
async fn the_audit_export_streams_every_row_and_resumes_from_its_cursor() {
    let s = serve("export", "require_review = false", &[]).await;
    let view = s.session("person-chat").await;
    let mcp = s.mcp(&view).connect().await;
    let read_args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    for _ in 0..3 {
        mcp.call("github_read_file", read_args.clone()).await;
    }
    let get = |path: String| {
        let http = s.http.clone();
        let url = s.url(&path);
        async move {
            let response = http
                .get(url)
                .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let cursor = response
                .headers()
                .get("scout-next-cursor")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<i64>().ok());
            let kind = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let text = response.text().await.unwrap();
            (status, cursor, kind, text)
        }
    };
    let (status, cursor, kind, text) = get("/v1/trace/export".into()).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(kind, "application/x-ndjson");
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(rows.len() >= 6, "the session's and the calls' rows: {text}");
    assert_eq!(cursor, rows.last().unwrap()["seq"].as_i64());
    assert!(
        rows.iter()
            .all(|r| r["session"].is_string() && r["state"].is_string())
    );
    assert!(
        !text.contains(GITHUB_TOKEN),
        "the trace holds no secret, so neither does the export"
    );
    // Two rows at a time, resumed: the same rows.
    let (mut since, mut paged) = (0, Vec::new());
    loop {
        let (status, cursor, _, text) =
            get(format!("/v1/trace/export?since={since}&limit=2")).await;
        assert_eq!(status, 200);
        let page: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if page.is_empty() {
            break;
        }
        since = cursor.unwrap();
        paged.extend(page);
    }
    assert_eq!(paged, rows);
    for bad in ["since=-1", "since=x", "limit=0", "limit=10001", "cursor=3"] {
        let (status, _, _, text) = get(format!("/v1/trace/export?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {text}");
    }
    let unauthenticated = s.http.get(s.url("/v1/trace/export")).send().await.unwrap();
    assert_eq!(unauthenticated.status().as_u16(), 401);
}

/// `/metrics` after a known sequence of calls, read by Python
/// prometheus-client's strict OpenMetrics parser: the funnel counts each
/// outcome once, denials by rule, the person's wait, upstream requests by
/// status class, sessions; no label carries a session id, an argument or a
/// name an agent invented; and it is behind the admin token.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_a_known_sequence_of_calls() {
    let s = serve(
        "metrics",
        "require_review = false",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "600000"),
        ],
    )
    .await;
    let (id, waiting, approval) = s.waiting_write("scout/metrics").await;
    let (status, body) = s
        .admin(
            Method::POST,
            &format!("/v1/approvals/{}", approval["id"]),
            Some(json!({"approve": false, "by": "alice"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let denied = tokio::time::timeout(crate::common::EVENTUALLY, waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    let view = s.session("person-chat").await;
    let mcp = s.mcp(&view).connect().await;
    let read_args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    for _ in 0..2 {
        let read = mcp.call("github_read_file", read_args.clone()).await;
        assert_ne!(read["result"]["isError"], true, "{read}");
    }
    let missing = json!({"owner": "octo", "repo": "hello", "path": "no/such/file-canary-51"});
    let not_found = mcp.call("github_read_file", missing).await;
    assert_eq!(not_found["result"]["isError"], true, "{not_found}");

    let response = s
        .http
        .get(s.url("/metrics"))
        .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(
        response.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text; version=1.0.0"),
    );
    let text = response.text().await.unwrap();
    for private in [
        id.as_str(),
        view["id"].as_str().unwrap(),
        "canary-51",
        "acme",
        GITHUB_TOKEN,
    ] {
        assert!(
            !text.contains(private),
            "no label holds {private:?}:\n{text}"
        );
    }
    // The strict parser (it requires `# EOF` and well-formed families).
    let parser = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        out.append([sample.name, sample.labels, sample.value])
print(json.dumps(out))
"#;
    let mut child = std::process::Command::new(scout_tests::python())
        .args(["-c", parser])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let parsed = child.wait_with_output().unwrap();
    assert!(
        parsed.status.success(),
        "the OpenMetrics parser refused /metrics: {}\n{text}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let samples: Vec<(String, std::collections::BTreeMap<String, String>, f64)> =
        serde_json::from_slice(&parsed.stdout).unwrap();
    let value = |name: &str, labels: &[(&str, &str)]| -> f64 {
        samples
            .iter()
            .filter(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, _, v)| v)
            .sum()
    };
    let calls = "scout_tool_calls_total";
    assert_eq!(
        value(calls, &[("tool", "github_read_file"), ("outcome", "ok")]),
        2.0
    );
    assert_eq!(
        value(
            calls,
            &[("tool", "github_read_file"), ("outcome", "tool_error")]
        ),
        1.0
    );
    assert_eq!(
        value(
            calls,
            &[("tool", "github_create_branch"), ("outcome", "denied")]
        ),
        1.0
    );
    assert_eq!(
        value(calls, &[("connector", "github")]),
        4.0,
        "every call once"
    );
    assert_eq!(
        value("scout_denials_total", &[("rule", "approval_denied")]),
        1.0
    );
    assert_eq!(value("scout_approvals_requested_total", &[]), 1.0);
    assert_eq!(
        value(
            "scout_approval_wait_seconds_count",
            &[("outcome", "denied")]
        ),
        1.0
    );
    // Each read asked the repository once (and the missing file got a 404).
    assert!(value("scout_upstream_requests_total", &[("status_class", "2xx")]) >= 2.0);
    assert_eq!(
        value("scout_upstream_requests_total", &[("status_class", "4xx")]),
        1.0
    );
    assert_eq!(
        value("scout_calls_in_flight", &[("connector", "github")]),
        0.0
    );
    assert!(value("scout_max_concurrent_calls", &[]) >= 1.0);
    assert_eq!(
        value("scout_sessions_opened_total", &[("role", "person-chat")]),
        2.0
    );
    assert_eq!(value("scout_sessions_active", &[]), 2.0);
    assert_eq!(
        value(
            "mcp_server_operation_duration_seconds_count",
            &[("mcp_method_name", "tools/call")]
        ),
        4.0
    );
    assert_eq!(value("scout_build_info", &[]), 1.0);
    // The guest ran three times (the refused write never ran) and never trapped.
    assert_eq!(
        value(
            "scout_component_instantiate_seconds_count",
            &[("connector", "github")]
        ),
        3.0
    );
    assert_eq!(value("scout_wasm_traps_total", &[]), 0.0);
    // Every call's rows went through the trace writer, in groups.
    assert!(value("scout_trace_write_seconds_count", &[]) >= 4.0);
    let commits = value("scout_trace_commit_seconds_count", &[]);
    assert!(commits >= 4.0, "{commits}");
    assert_eq!(value("scout_trace_group_size_count", &[]), commits);
    assert!(value("scout_trace_group_size_sum", &[]) >= commits);

    let unauthenticated = s.http.get(s.url("/metrics")).send().await.unwrap();
    assert_eq!(unauthenticated.status().as_u16(), 401);
}

/// A real Prometheus (Debian's 2.42, started by the test on loopback with a
/// one-second scrape interval and the admin token in a credentials file)
/// scrapes `/metrics` and its query API returns the counts of a known
/// sequence of calls; the target is `up`.
#[tokio::test(flavor = "multi_thread")]
async fn a_real_prometheus_scrapes_the_metrics() {
    let Some(prometheus) = scout_tests::prometheus() else {
        return;
    };
    let s = serve("prometheus", "require_review = false", &[]).await;
    let view = s.session("person-chat").await;
    let mcp = s.mcp(&view).connect().await;
    let read_args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    for _ in 0..3 {
        let read = mcp.call("github_read_file", read_args.clone()).await;
        assert_ne!(read["result"]["isError"], true, "{read}");
    }
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("admin-token");
    std::fs::write(&token, ADMIN_TOKEN).unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: scout-host\n    metrics_path: /metrics\n    authorization:\n      credentials_file: {token:?}\n    static_configs:\n      - targets: [\"{}\"]\n",
            s.addr
        ),
    )
    .unwrap();
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let child = std::process::Command::new(&prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start prometheus");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _prometheus = Kill(child);
    let api = format!("http://127.0.0.1:{port}/api/v1");
    let query = |q: &'static str| {
        let http = s.http.clone();
        let api = api.clone();
        async move {
            let response = http
                .get(format!("{api}/query"))
                .query(&[("query", q)])
                .send()
                .await
                .ok()?;
            let body: Value = serde_json::from_str(&response.text().await.ok()?).ok()?;
            let value = body["data"]["result"].get(0)?["value"][1]
                .as_str()?
                .to_string();
            value.parse::<f64>().ok()
        }
    };
    let started = Instant::now();
    let reads = loop {
        if let Some(v) =
            query(r#"sum(scout_tool_calls_total{tool="github_read_file",outcome="ok"})"#).await
        {
            break v;
        }
        assert!(
            started.elapsed() < crate::common::EVENTUALLY,
            "Prometheus never had the series"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(reads, 3.0);
    let targets: Value = serde_json::from_str(
        &s.http
            .get(format!("{api}/targets"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    let target = &targets["data"]["activeTargets"][0];
    assert_eq!(target["health"], "up", "{targets}");
    assert_eq!(
        query(r#"sum(scout_component_instantiate_seconds_count{connector="github"})"#).await,
        Some(3.0)
    );
    assert_eq!(query(r#"scout_sessions_active"#).await, Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_write_waiting_for_a_person_streams_progress_until_the_decision() {
    let s = serve(
        "stateless-wait",
        "require_review = false\nsse_keep_alive_ms = 100",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "60000"),
        ],
    )
    .await;
    let view = s.session("person-chat").await;
    let (id, url, token) = (
        view["id"].as_str().unwrap().to_string(),
        view["mcp"]["github"].as_str().unwrap().to_string(),
        view["token"].as_str().unwrap().to_string(),
    );
    // A client that gives up after 1 s without a byte, while the person
    // takes 3 s: only what the host sends while it waits keeps it reading.
    let impatient = reqwest::Client::builder()
        .read_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    for (branch, meta) in [
        ("scout/progress", json!({"progressToken": "p-1"})),
        ("scout/no-token", json!({})),
    ] {
        let waiting = {
            let (http, url, token) = (impatient.clone(), url.clone(), token.clone());
            let branch = branch.to_string();
            tokio::spawn(async move {
                let response = stateless_call_with_meta(
                    &http,
                    &url,
                    &token,
                    "github_create_branch",
                    json!({"owner": "octo", "repo": "hello", "branch": branch}),
                    json!({}),
                    meta,
                )
                .await;
                let content_type = response
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                (content_type, response.text().await)
            })
        };
        let approval = s.first_pending(&id).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let (status, _) = s
            .admin(
                Method::POST,
                &format!("/v1/approvals/{}", approval["id"]),
                Some(json!({"approve": true})),
            )
            .await;
        assert_eq!(status, 200);
        let (content_type, text) = waiting.await.unwrap();
        let text = text.expect("the client kept reading until the answer");
        assert!(
            content_type.starts_with("text/event-stream"),
            "an event stream once it waits: {content_type}"
        );
        let messages = jsonrpc_messages(&content_type, &text);
        let (last, before) = messages.split_last().expect("messages");
        assert_eq!(last["id"], 7, "{last}");
        assert_eq!(last["result"]["isError"], false, "{last}");
        if branch == "scout/progress" {
            assert!(
                before.len() >= 10,
                "progress every 100 ms: {}",
                before.len()
            );
            let mut progress = Vec::new();
            for m in before {
                assert_eq!(m["method"], "notifications/progress", "{m}");
                assert_eq!(m["params"]["progressToken"], "p-1", "{m}");
                progress.push(m["params"]["progress"].as_f64().unwrap());
            }
            assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
        } else {
            assert!(before.is_empty(), "no progress without a token: {before:?}");
            let comments = text
                .lines()
                .filter(|l| *l == ": waiting for a person to decide")
                .count();
            assert!(comments >= 10, "keep-alive comments: {comments}\n{text}");
        }
        assert!(
            s.github.branch_sha("octo", "hello", branch).is_some(),
            "{branch}"
        );
    }
}

/// The question an elicitation asks shows the arguments so that distinct
/// values look distinct: a branch that would read `docs-test.png` and an
/// owner that would read `octo` show their hidden characters as markers,
/// under a warning; the person declines and nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_shows_hidden_characters_visibly_and_warns() {
    let s = serve(
        "elicitation-shown",
        "require_review = false",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "60000"),
        ],
    )
    .await;
    let view = s.session("person-chat").await;
    let mcp = s
        .mcp(&view)
        .connect_declaring(json!({"elicitation": {}}))
        .await;
    let args =
        json!({"owner": "\u{43e}cto", "repo": "hel\u{200B}lo", "branch": "docs-\u{202E}gnp.tset"});
    let mut response = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 70, "method": "tools/call",
            "params": {"name": "github_create_branch", "arguments": args}}))
        .await;
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    // The call's event stream, read as it comes, until the host asks.
    let mut text = String::new();
    let ask = loop {
        let chunk = tokio::time::timeout(Duration::from_secs(30), response.chunk())
            .await
            .expect("the host asks the client's person")
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended without asking: {text}"));
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(ask) = jsonrpc_messages(&content_type, &text)
            .into_iter()
            .find(|m| m["method"] == "elicitation/create")
        {
            break ask;
        }
    };
    // Asked by the host on the call's own stream (rmcp numbers its ids).
    assert!(ask["id"].is_string(), "{ask}");
    let message = ask["params"]["message"].as_str().unwrap_or_default();
    let (warning, question) = message.split_once('\n').unwrap_or(("", message));
    assert!(
        warning.starts_with("Warning: the arguments hold") && warning.contains("⟦U+…⟧"),
        "the warning comes first: {message}"
    );
    assert!(
        question.starts_with(
            "Allow mcp__github__github_create_branch with \
             {\"branch\":\"docs-⟦U+202E RIGHT-TO-LEFT OVERRIDE⟧gnp.tset\",\
             \"owner\":\"⟦U+043E CYRILLIC LETTER⟧cto\",\
             \"repo\":\"hel⟦U+200B ZERO WIDTH SPACE⟧lo\"}? (approval #"
        ),
        "each hidden character shown by code point and name: {message}"
    );
    for hidden in ['\u{202E}', '\u{200B}', '\u{43E}'] {
        assert!(
            !message.contains(hidden),
            "no raw U+{:04X}: {message}",
            u32::from(hidden)
        );
    }
    // The person declines what they now see; the call is refused.
    let answered = mcp
        .post(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}))
        .await;
    assert_eq!(answered.status().as_u16(), 202);
    let rest = tokio::time::timeout(Duration::from_secs(30), response.text())
        .await
        .expect("the call ends")
        .unwrap_or_default();
    text.push_str(&rest);
    let result = jsonrpc_messages(&content_type, &text)
        .into_iter()
        .find(|m| m["id"] == 70)
        .unwrap_or_else(|| panic!("the call's answer: {text}"));
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert_eq!(s.upstream_writes(), 0, "nothing written upstream");

    // Plain arguments ask plainly: no warning, no marker.
    let waiting = {
        let mcp = mcp.clone();
        tokio::spawn(async move {
            let (_, _, messages) = mcp
                .request_raw(
                    "tools/call",
                    json!({"name": "github_create_branch",
                        "arguments": {"owner": "octo", "repo": "hello", "branch": "scout/plain"}}),
                )
                .await;
            messages
        })
    };
    let approval = s.first_pending(view["id"].as_str().unwrap()).await;
    let (status, _) = s
        .admin(
            Method::POST,
            &format!("/v1/approvals/{}", approval["id"]),
            Some(json!({"approve": false})),
        )
        .await;
    assert_eq!(status, 200);
    let messages = waiting.await.unwrap();
    let plain = messages
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .unwrap_or_else(|| panic!("asked: {messages:?}"));
    let message = plain["params"]["message"].as_str().unwrap_or_default();
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "Allow mcp__github__github_create_branch with \
             {{\"branch\":\"scout/plain\",\"owner\":\"octo\",\"repo\":\"hello\"}}? (approval #{})",
            approval["id"]
        )
    );
    // The facts the console shows, in a few lines.
    assert!(
        lines[1].starts_with("Create a branch from another branch"),
        "what it does: {message}"
    );
    assert!(
        lines[2].starts_with("write; may reach: GET /repos/{owner}/{repo} at http://127.0.0.1:")
            && lines[2].contains("POST /repos/{owner}/{repo}/git/refs at"),
        "that it writes, and where it goes: {message}"
    );
    assert!(
        lines[3].starts_with("Refused unanswered in "),
        "the time left: {message}"
    );
    assert!(
        message.chars().count() <= 1601,
        "within a client's length: {message}"
    );
}

/// The lineage entry of the last denial of `tool` in `events`.
fn last_lineage(events: &[Value], tool: &str) -> Value {
    events
        .iter()
        .rev()
        .find(|e| {
            e["tool"] == format!("mcp__github__{tool}")
                && (e["state"] == "denied" || e["state"] == "permission_denied")
        })
        .map(|e| e["detail"]["lineage"].clone())
        .unwrap_or(Value::Null)
}

/// The agent is told only "not offered" of a name it was not given, so
/// its refusals count as one consequence whether the name is unknown or a
/// tool the session lacks: the count reveals nothing of which tools exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_not_offered_count_alike_whether_or_not_the_tool_exists() {
    // Review required and none given: every GitHub tool is held.
    let s = serve("lineage-oracle", "require_review = true", &[]).await;
    let view = s.session("person-chat").await;
    let id = view["id"].as_str().unwrap().to_string();
    let mcp = s.mcp(&view).connect().await;
    let args = json!({"owner": "octo", "repo": "hello"});
    mcp.call("github_no_such_tool", args.clone()).await;
    // A real tool this session is not given (held for review).
    mcp.call("github_list_branches", args).await;
    let events = s.trace(&id).await;
    let unknown = last_lineage(&events, "github_no_such_tool");
    let lacking = last_lineage(&events, "github_list_branches");
    assert_eq!(unknown["repeat"], 1, "{events:?}");
    assert_eq!(lacking["repeat"], 2, "one consequence: {lacking}");
    assert_eq!(unknown["consequence"], lacking["consequence"]);
    assert!(s.github.requests().is_empty(), "nothing reached GitHub");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_consequence_asked_again_is_constrained_then_pauses_the_session() {
    let s = serve("lineage", "require_review = false", &[]).await;
    let view = s.session("person-chat").await;
    let id = view["id"].as_str().unwrap().to_string();
    let mcp = s.mcp(&view).connect().await;
    // The brand's GitHub connection goes away: every GitHub tool is refused.
    let (status, _) = s
        .admin(Method::DELETE, "/v1/brands/acme/connections/github", None)
        .await;
    assert_eq!(status, 200);
    let read = |path: &str| json!({"owner": "octo", "repo": "hello", "path": path});
    // What the agent is told of a refusal (a refused call is a tool error).
    let refused = |reply: &Value| {
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let told: Value = serde_json::from_str(&result_text(reply)).unwrap();
        (told["message"].as_str().unwrap_or("").to_string(), told)
    };

    // 1. Refused once: the plain reason.
    let first = mcp.call("github_read_file", read("README.md")).await;
    let (told, _) = refused(&first);
    assert!(told.starts_with("revoked:"), "{first}");
    assert!(!told.contains("asking again"), "{first}");
    // Another consequence (another route): counted apart.
    let other = mcp
        .call(
            "github_list_branches",
            json!({"owner": "octo", "repo": "hello"}),
        )
        .await;
    assert!(!refused(&other).0.contains("asking again"), "{other}");
    let events = s.trace(&id).await;
    assert_eq!(last_lineage(&events, "github_read_file")["repeat"], 1);
    assert_eq!(last_lineage(&events, "github_list_branches")["repeat"], 1);
    assert_ne!(
        last_lineage(&events, "github_read_file")["consequence"],
        last_lineage(&events, "github_list_branches")["consequence"]
    );

    // 2. The same consequence in other words: the clearer constraint.
    let again = mcp.call("github_read_file", read("docs/other.md")).await;
    let (told, shown) = refused(&again);
    assert!(
        told.contains(
            "asking again, or asking in other words or with another tool, will not change it"
        ),
        "{told}"
    );
    assert!(told.contains("Safe alternatives:"), "{told}");
    assert_eq!(shown["repeated"], 2, "{again}");

    // 3. Another tool reaching the same route: the same consequence, the
    // third time: the session pauses.
    let third = mcp
        .call(
            "github_list_path",
            json!({"owner": "octo", "repo": "hello", "path": "src"}),
        )
        .await;
    let (told, shown) = refused(&third);
    assert!(told.contains("This session is now paused"), "{third}");
    assert_eq!(shown["paused"], true, "{third}");
    let events = s.trace(&id).await;
    let lineage = last_lineage(&events, "github_list_path");
    assert_eq!(
        (lineage["repeat"].as_u64(), lineage["paused"].as_bool()),
        (Some(3), Some(true)),
        "{lineage}"
    );
    assert_eq!(
        lineage["consequence"],
        last_lineage(&events, "github_read_file")["consequence"]
    );
    let (_, shown) = s
        .admin(Method::GET, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(shown["paused"], true, "{shown}");

    // Paused: even a call that would run is refused, and nothing reaches GitHub.
    let (status, _) = s
        .admin(
            Method::PUT,
            "/v1/brands/acme/connections/github",
            Some(json!({"secret": GITHUB_TOKEN})),
        )
        .await;
    assert_eq!(status, 200);
    let before = s.github.requests().len();
    let paused = mcp.call("github_read_file", read("README.md")).await;
    assert_eq!(paused["result"]["isError"], true, "{paused}");
    assert!(result_text(&paused).contains("session_paused"), "{paused}");
    assert_eq!(
        s.github.requests().len(),
        before,
        "nothing was sent while paused"
    );
    // The host's own tools go through the same boundary: refused while
    // paused, traced, and nothing parked.
    let mut scout = s.mcp(&view);
    scout.url = view["mcp"]["scout"].as_str().unwrap().to_string();
    let scout = scout.connect().await;
    let asked = scout
        .call(
            "scout_request_capability",
            json!({"goal": "g", "missing_observation": "m",
                   "proposed_effect": "read", "safe_alternative_tried": "s"}),
        )
        .await;
    assert_eq!(asked["result"]["isError"], true, "{asked}");
    assert!(result_text(&asked).contains("session paused"), "{asked}");
    let (_, requests) = s.admin(Method::GET, "/v1/capability-requests", None).await;
    assert_eq!(
        requests["requests"],
        json!([]),
        "nothing parked: {requests}"
    );
    let events = s.trace(&id).await;
    assert!(
        events
            .iter()
            .any(|e| e["tool"] == "mcp__scout__scout_request_capability"
                && e["state"] == "denied"
                && e["rule"] == "session_paused"),
        "the refusal is traced"
    );

    // A person resumes it: the call runs, and refusals count afresh.
    let (status, body) = s
        .admin(Method::POST, &format!("/v1/sessions/{id}/resume"), None)
        .await;
    assert_eq!(
        (status, body["resumed"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    let ran = mcp.call("github_read_file", read("README.md")).await;
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    assert!(s.github.requests().len() > before);
    let events = s.trace(&id).await;
    assert!(
        events
            .iter()
            .any(|e| e["rule"] == "session_resumed"
                && e["detail"]["by"] == "admin-token (admin API)"),
        "the resumption is traced with who resumed"
    );
    let (_, shown) = s
        .admin(Method::GET, &format!("/v1/sessions/{id}"), None)
        .await;
    assert!(shown.get("paused").is_none(), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capability_request_goes_to_a_person_and_a_yes_grants_nothing() {
    let s = serve("capability", "require_review = false", &[]).await;
    let view = s.session("person-chat").await;
    let id = view["id"].as_str().unwrap().to_string();
    assert!(
        view["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__scout__scout_request_capability")),
        "{view}"
    );
    let github = s.mcp(&view).connect().await;
    let mut scout = s.mcp(&view);
    scout.url = view["mcp"]["scout"].as_str().unwrap().to_string();
    let scout = scout.connect().await;
    let github_before = github.tool_names().await;
    let scout_tools = scout.tool_names().await;
    assert_eq!(scout_tools, ["scout_request_capability"], "{scout_tools:?}");

    // Incomplete: told what to send, nothing parked.
    let incomplete = scout
        .call(
            "scout_request_capability",
            json!({"goal": "open a pull request"}),
        )
        .await;
    assert_eq!(incomplete["result"]["isError"], true, "{incomplete}");
    assert!(result_text(&incomplete).contains("`missing_observation` is required"));

    let asked = scout
        .call(
            "scout_request_capability",
            json!({"goal": "open a pull request for the fix",
                   "missing_observation": "writes to GitHub are switched off here",
                   "proposed_effect": "write",
                   "safe_alternative_tried": "wrote the patch as a comment draft"}),
        )
        .await;
    assert_eq!(asked["result"]["isError"], false, "{asked}");
    let request = asked["result"]["structuredContent"]["request"]
        .as_i64()
        .unwrap();
    let waiting = scout
        .call("scout_request_capability", json!({"request": request}))
        .await;
    assert!(
        result_text(&waiting).contains("waiting for a person"),
        "{waiting}"
    );

    // The person sees it, with what the agent wrote, and answers yes.
    let (status, listed) = s.admin(Method::GET, "/v1/capability-requests", None).await;
    assert_eq!(status, 200);
    let parked = &listed["requests"][0];
    assert_eq!(parked["id"], request);
    assert_eq!(parked["session"], id.as_str());
    assert_eq!(parked["request"]["proposed_effect"], "write");
    let (status, answered) = s
        .admin(
            Method::POST,
            &format!("/v1/capability-requests/{request}"),
            Some(json!({"answer": "yes: go ahead once I turn writes on"})),
        )
        .await;
    assert_eq!(
        (status, answered["granted"].as_bool()),
        (200, Some(false)),
        "{answered}"
    );
    let (status, again) = s
        .admin(
            Method::POST,
            &format!("/v1/capability-requests/{request}"),
            Some(json!({"answer": "no"})),
        )
        .await;
    assert_eq!(status, 409, "answered once: {again}");

    // The agent reads the answer as evidence; its surface is unchanged.
    let read = scout
        .call("scout_request_capability", json!({"request": request}))
        .await;
    let answer = &read["result"]["structuredContent"];
    assert_eq!(
        answer["answer"], "yes: go ahead once I turn writes on",
        "{read}"
    );
    assert_eq!(answer["answered_by"], "admin-token (admin API)");
    assert_eq!(
        github.tool_names().await,
        github_before,
        "no tool was added"
    );
    let write = github
        .call(
            "github_create_branch",
            json!({"owner": "octo", "repo": "hello", "branch": "scout/asked"}),
        )
        .await;
    assert!(
        result_text(&write).contains("switch:GITHUB_ALLOW_WRITES"),
        "still refused: {write}"
    );
    assert_eq!(s.upstream_writes(), 0);
    let (_, shown) = s
        .admin(Method::GET, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(
        shown["tools"], view["tools"],
        "the allowlist is what it was"
    );
    let events = s.trace(&id).await;
    assert!(
        events
            .iter()
            .any(|e| e["rule"] == "capability_answered" && e["detail"]["granted"] == false)
    );
    assert!(
        events
            .iter()
            .any(|e| e["tool"] == "mcp__scout__scout_request_capability" && e["state"] == "result")
    );
    let (_, pending) = s.admin(Method::GET, "/v1/capability-requests", None).await;
    assert_eq!(pending["requests"], json!([]), "nothing left waiting");

    // Bounded: twenty unanswered requests at once, then no more parked.
    let ask = json!({"goal": "g", "missing_observation": "m",
                     "proposed_effect": "read", "safe_alternative_tried": "s"});
    for n in 0..20 {
        let parked = scout.call("scout_request_capability", ask.clone()).await;
        assert_eq!(parked["result"]["isError"], false, "{n}: {parked}");
    }
    let refused = scout.call("scout_request_capability", ask).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        result_text(&refused).contains("already has 20 requests waiting for an answer"),
        "{refused}"
    );
    let (_, pending) = s.admin(Method::GET, "/v1/capability-requests", None).await;
    assert_eq!(pending["requests"].as_array().unwrap().len(), 20);
}

// --- JSON values ------------------------------------------------------------

/// A `json` argument sent as JSON text is, to the boundary, the value it
/// denotes: a person is shown it structured and approves the digest of its
/// canonical form, the same digest as for the object with its keys in
/// another order; text that is not JSON is refused before anyone is asked,
/// naming the argument, and nothing reaches the upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_argument_sent_as_text_is_approved_structured_and_bad_json_asks_nobody() {
    let upstream = scout_tests::upstream::Upstream::start().await;
    let lines = format!(
        "\n[connectors.jsonargs]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\ncredential = \"none\"\n",
        common::component(scout_tests::components::JSONARGS),
        upstream.origin()
    );
    let s = serve_with("json-values", "require_review = false", &lines, &[]).await;
    let view = s.session("person-chat").await;
    let id = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp {
        url: view["mcp"]["jsonargs"]
            .as_str()
            .unwrap_or_else(|| panic!("the jsonargs endpoint: {view}"))
            .to_string(),
        ..s.mcp(&view)
    }
    .connect()
    .await;
    let decide = |approval: &Value, approve: bool| {
        let path = format!("/v1/approvals/{}", approval["id"]);
        let s = &s;
        async move {
            let (status, body) = s
                .admin(Method::POST, &path, Some(json!({"approve": approve})))
                .await;
            assert_eq!(status, 200, "{body}");
        }
    };
    let structured = json!({"title": "Roof", "tags": ["a", "b"], "done": false});
    let canonical = r#"{"done":false,"tags":["a","b"],"title":"Roof"}"#;

    // Sent as text: shown and digested as the object, run as its canonical text.
    let caller = mcp.clone();
    let as_text = tokio::spawn(async move {
        caller
            .call(
                "jsonargs_create",
                json!({"properties": "{\"title\": \"Roof\", \"tags\": [\"a\", \"b\"], \"done\": false}"}),
            )
            .await
    });
    let first = s.first_pending(&id).await;
    assert_eq!(first["arguments"]["properties"], structured, "{first}");
    assert_eq!(
        first["arguments_text"],
        json!(format!(r#"{{"properties":{canonical}}}"#)),
        "{first}"
    );
    assert!(
        upstream.seen().is_empty(),
        "nothing ran before the approval"
    );
    decide(&first, true).await;
    let ran = as_text.await.unwrap();
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    assert!(
        result_text(&ran).contains(&canonical.replace('"', "\\\"")),
        "the guest received the canonical text: {ran}"
    );
    assert_eq!(upstream.seen().len(), 1);

    // The object, keys in another order: the same call to a person.
    let caller = mcp.clone();
    let as_object = tokio::spawn(async move {
        caller
            .call(
                "jsonargs_create",
                json!({"properties": {"done": false, "title": "Roof", "tags": ["a", "b"]}}),
            )
            .await
    });
    let second = s.first_pending(&id).await;
    assert_ne!(second["id"], first["id"]);
    assert_eq!(second["args_digest"], first["args_digest"], "{second}");
    assert_eq!(second["arguments_text"], first["arguments_text"]);
    decide(&second, false).await;
    let denied = as_object.await.unwrap();
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(upstream.seen().len(), 1, "a denied write sent nothing");

    // Text that is not JSON, and the argument missing: refused at once,
    // naming the argument; nobody is asked and nothing is sent.
    for (arguments, why) in [
        (json!({"properties": "{bad"}), "not JSON"),
        (json!({}), "missing"),
    ] {
        let refused = mcp.call("jsonargs_create", arguments).await;
        assert_eq!(refused["result"]["isError"], true, "{refused}");
        let told: Value = serde_json::from_str(&result_text(&refused)).unwrap();
        assert_eq!(told["denied"], "invalid_arguments", "{refused}");
        let message = told["message"].as_str().unwrap();
        assert!(
            message.contains("$.properties") && message.contains(why),
            "{message}"
        );
    }
    let (status, listed) = s
        .admin(Method::GET, &format!("/v1/approvals?session={id}"), None)
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["pending"], json!([]), "nobody was asked");
    assert_eq!(
        upstream.seen().len(),
        1,
        "nothing more reached the upstream"
    );
    let refusals: Vec<_> = s
        .trace(&id)
        .await
        .into_iter()
        .filter(|e| {
            e["tool"] == "mcp__jsonargs__jsonargs_create" && e["rule"] == "invalid_arguments"
        })
        .collect();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert_eq!(
        refusals[0]["detail"]["path"], "$.properties",
        "{refusals:?}"
    );
}
