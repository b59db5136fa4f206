//! An MCP `tools/call` round trip over streamable HTTP on loopback, against
//! the same call made in process through the same host (boundary, trace,
//! credential resolution, component, loopback GitHub); and calls per second
//! with 1, 8 and 64 concurrent sessions, each on its own MCP endpoint.
//!
//! The MCP client here is a minimal JSON-RPC-over-HTTP one (the official
//! Python client checks the protocol in `host/tests/all/mcp_serve.rs`): it
//! measures the server, not a client library.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use scout_host::boundary::{CallRequest, Executed};
use scout_host::policy::Switches;
use scout_host::serve::{OpenSession, ServeConfig, ServeHost};
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TOKEN: &str = "ghp_benchmark_token_0123456789";
const ADMIN: &str = "bench-admin-token-0123456789abcdef";

/// One MCP session over streamable HTTP.
struct McpClient {
    http: reqwest::Client,
    url: String,
    token: String,
    mcp_session: String,
}

impl McpClient {
    async fn post(&self, body: &Value, session: Option<&str>) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(serde_json::to_vec(body).unwrap());
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request.send().await.expect("MCP request")
    }

    async fn connect(http: reqwest::Client, url: String, token: String) -> McpClient {
        let mut client = McpClient {
            http,
            url,
            token,
            mcp_session: String::new(),
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        let response = client.post(&init, None).await;
        client.mcp_session = response
            .headers()
            .get("mcp-session-id")
            .expect("an MCP session id")
            .to_str()
            .unwrap()
            .to_string();
        message(&response.text().await.unwrap());
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let sid = client.mcp_session.clone();
        assert!(
            client
                .post(&initialized, Some(&sid))
                .await
                .status()
                .is_success()
        );
        client
    }

    async fn read_file(&self) {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "github_read_file", "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}}});
        let reply = message(
            &self
                .post(&call, Some(&self.mcp_session))
                .await
                .text()
                .await
                .unwrap(),
        );
        assert_eq!(reply["result"]["isError"], false, "{reply}");
    }
}

/// The JSON-RPC message of a response: JSON, or the last `data:` line of SSE.
fn message(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body) {
        return value;
    }
    let data = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| d.starts_with('{'));
    serde_json::from_str(data.unwrap_or_else(|| panic!("no JSON-RPC message in {body:?}"))).unwrap()
}

struct Setup {
    _github: FakeGitHub,
    host: Arc<ServeHost>,
    http: reqwest::Client,
    _db: std::path::PathBuf,
}

impl Setup {
    async fn session(&self) -> (String, McpClient) {
        let view = self
            .host
            .open_session(&OpenSession {
                brand: "acme".into(),
                role: "person-chat".into(),
                profile: None,
                ..Default::default()
            })
            .unwrap();
        let client = McpClient::connect(
            self.http.clone(),
            view.mcp["github"].clone(),
            view.token.clone().unwrap(),
        )
        .await;
        (view.id, client)
    }

    async fn in_process(&self, session: &str) {
        let live = self.host.host().session(session).unwrap();
        let args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
        match self
            .host
            .host()
            .call(&live, "github", CallRequest::new("github_read_file", &args))
            .await
        {
            Ok(Executed::Ran(outcome)) => assert!(outcome.output.ok().is_some()),
            other => panic!("in-process call failed: {other:?}"),
        }
    }
}

async fn setup() -> Setup {
    let github = FakeGitHub::start(TOKEN).await;
    let db = std::env::temp_dir().join(format!("scout-bench-mcp-{}.db", std::process::id()));
    let mut config = ServeConfig::parse(&format!(
        "listen = \"127.0.0.1:0\"\nrequire_review = false\n[connectors.github]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n",
        scout_tests::components::GITHUB,
        github.origin()
    ))
    .unwrap();
    config.database = db.clone();
    let key = "11".repeat(32);
    let host = ServeHost::start(
        config,
        Switches::from_vars([("GITHUB_ALLOW_WRITES", "false")]),
        |name| match name {
            "SCOUT_ADMIN_TOKEN" => Some(ADMIN.to_string()),
            "SCOUT_STORE_KEY" => Some(key.clone()),
            _ => None,
        },
    )
    .unwrap();
    host.host().put_connection("acme", "github", TOKEN).unwrap();
    let listener = host.bind().await.unwrap();
    tokio::spawn(scout_host::serve::serve_http(
        host.clone(),
        listener,
        std::future::pending(),
    ));
    let http = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    Setup {
        _github: github,
        host,
        http,
        _db: db,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn interleaved(rt: &tokio::runtime::Runtime, s: &Setup) {
    let pairs = 400;
    let (mut over_mcp, mut in_process) = (Vec::with_capacity(pairs), Vec::with_capacity(pairs));
    rt.block_on(async {
        let (id, client) = s.session().await;
        for _ in 0..50 {
            client.read_file().await;
            s.in_process(&id).await;
        }
        for _ in 0..pairs {
            let t = Instant::now();
            client.read_file().await;
            over_mcp.push(t.elapsed());
            let t = Instant::now();
            s.in_process(&id).await;
            in_process.push(t.elapsed());
        }
    });
    let (m, p) = (median(over_mcp), median(in_process));
    println!(
        "interleaved {pairs} pairs: MCP tools/call over streamable HTTP median {:.1} us, in-process call median {:.1} us, ratio {:.2}x (+{:.1} us)",
        m.as_secs_f64() * 1e6,
        p.as_secs_f64() * 1e6,
        m.as_secs_f64() / p.as_secs_f64(),
        (m.as_secs_f64() - p.as_secs_f64()) * 1e6,
    );
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let s = rt.block_on(setup());
    interleaved(&rt, &s);

    let (id, client) = rt.block_on(s.session());
    let mut group = c.benchmark_group("github_read_file_round_trip");
    group.bench_function("mcp_streamable_http", |b| {
        b.to_async(&rt).iter(|| client.read_file())
    });
    group.bench_function("in_process", |b| b.to_async(&rt).iter(|| s.in_process(&id)));
    group.finish();

    let mut group = c.benchmark_group("mcp_concurrent_sessions");
    for sessions in [1usize, 8, 64] {
        let clients: Vec<Arc<McpClient>> = rt.block_on(async {
            let mut v = Vec::new();
            for _ in 0..sessions {
                v.push(Arc::new(s.session().await.1));
            }
            v
        });
        // One call per session per iteration, all sessions at once: criterion's
        // elements per second are calls per second.
        group.throughput(Throughput::Elements(sessions as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(sessions),
            &clients,
            |b, clients| {
                b.to_async(&rt).iter(|| async {
                    let calls: Vec<_> = clients
                        .iter()
                        .cloned()
                        .map(|c| tokio::spawn(async move { c.read_file().await }))
                        .collect();
                    for call in calls {
                        call.await.unwrap();
                    }
                })
            },
        );
    }
    group.finish();
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", s._db.display()));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
