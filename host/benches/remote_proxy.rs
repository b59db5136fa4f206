//! What fronting a remote MCP server costs: the same read `tools/call`
//! (`echo` of the MCP project's reference `server-everything`) made by the
//! same minimal client straight to the server, and through `scout-host
//! serve` (the boundary, the trace, the guarded handle, one upstream session
//! per agent session), in one run, interleaved.
//!
//! Printed (medians, never a timed assertion):
//! - wall time per call, direct and proxied, sequential, with the ratio;
//! - the `serve` process's CPU per proxied call (every thread's
//!   `/proc/PID/task/*/schedstat`), which is what the host adds: the server's
//!   own work is in another process;
//! - calls per second with 64 sessions calling at once, direct and proxied,
//!   with the ratio.
//!
//! Run with `cargo bench -p scout-host --bench remote_proxy`
//! (`SCOUT_BENCH_QUICK=1` for fewer calls).

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ADMIN: &str = "bench-admin-token-0123456789abcdef";
const BIN: &str = env!("CARGO_BIN_EXE_scout-host");
const PROTOCOL: &str = "2025-06-18";

fn quick() -> bool {
    std::env::var_os("SCOUT_BENCH_QUICK").is_some()
}

/// A child process, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn everything() -> (Proc, u16) {
    let (child, port) = scout_tests::start_server_everything();
    (Proc(child), port)
}

/// Nanoseconds the process has spent on a CPU, every thread.
fn cpu_ns(pid: u32) -> u64 {
    let mut total = 0;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Some(ns) = std::fs::read_to_string(task.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split(' ').next()?.parse::<u64>().ok())
            {
                total += ns;
            }
        }
    }
    total
}

struct Serve {
    proc: Proc,
    base: String,
    _dir: tempfile::TempDir,
}

fn serve(upstream: u16) -> Serve {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\nmax_concurrent_calls = 128\n\
             [connectors.everything]\nmcp = \"http://127.0.0.1:{upstream}/mcp\"\ncredential = \"none\"\nallow_private_network = true\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SCOUT_ADMIN_TOKEN", ADMIN)
        .env("SCOUT_STORE_KEY", "5c".repeat(32))
        .env("SCOUT_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim().rsplit(' ').next().unwrap().to_string();
    Serve {
        proc: Proc(child),
        base,
        _dir: dir,
    }
}

/// A minimal MCP client session (initialize, then requests), as the same
/// code speaks to the server directly and to the host.
#[derive(Clone)]
struct Client {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
    session: String,
}

fn messages(text: &str) -> Vec<Value> {
    let json: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    if json.is_empty() {
        serde_json::from_str(text).into_iter().collect()
    } else {
        json
    }
}

impl Client {
    async fn post(&self, body: &Value, session: Option<&str>) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", PROTOCOL)
            .body(body.to_string());
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send().await.expect("a request")
    }

    async fn connect(http: &reqwest::Client, url: &str, token: Option<String>) -> Client {
        let mut client = Client {
            http: http.clone(),
            url: url.to_string(),
            token,
            session: String::new(),
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        let response = client.post(&init, None).await;
        client.session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_string();
        let _ = response.text().await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = client.post(&note, Some(&client.session)).await.text().await;
        client
    }

    async fn echo(&self, id: u64) {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "benchmark"}}});
        let text = self
            .post(&call, Some(&self.session))
            .await
            .text()
            .await
            .unwrap();
        let answered = messages(&text).into_iter().any(|m| {
            m["id"] == id
                && m["result"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("benchmark"))
        });
        assert!(answered, "no echo: {text}");
    }
}

async fn admin(http: &reqwest::Client, base: &str, path: &str, body: Option<Value>) -> Value {
    let mut request = match &body {
        Some(_) => http.post(format!("{base}{path}")),
        None => http.get(format!("{base}{path}")),
    }
    .header("authorization", format!("Bearer {ADMIN}"));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let text = request.send().await.expect("admin").text().await.unwrap();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Reviews `echo` as a read once the host has listed the server.
async fn review_echo(http: &reqwest::Client, base: &str) {
    let start = Instant::now();
    loop {
        let reviews = admin(http, base, "/v1/reviews", None).await;
        if let Some(echo) = reviews["connectors"]["everything"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["tool"] == "echo"))
        {
            let body = json!({"connector": "everything", "tool": "echo", "digest": echo["digest"], "effect": "read"});
            admin(http, base, "/v1/reviews", Some(body)).await;
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "{reviews}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An agent session's endpoint and token for the remote connector.
async fn session(http: &reqwest::Client, base: &str) -> (String, String) {
    let body = json!({"brand": "acme", "role": "person-chat"});
    let view = admin(http, base, "/v1/sessions", Some(body)).await;
    (
        view["mcp"]["everything"]
            .as_str()
            .expect("an endpoint")
            .to_string(),
        view["token"].as_str().unwrap().to_string(),
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn report(_c: &mut Criterion) {
    let (_upstream, port) = everything();
    let serve = serve(port);
    let direct_url = format!("http://127.0.0.1:{port}/mcp");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::new();
    rt.block_on(review_echo(&http, &serve.base));
    let (proxied_url, token) = rt.block_on(session(&http, &serve.base));
    let (direct, proxied) = rt.block_on(async {
        (
            Client::connect(&http, &direct_url, None).await,
            Client::connect(&http, &proxied_url, Some(token)).await,
        )
    });
    let calls: u64 = if quick() { 200 } else { 2000 };
    // Warm both paths (the host's upstream session opens at its first call).
    rt.block_on(async {
        for i in 0..20 {
            direct.echo(i).await;
            proxied.echo(i).await;
        }
    });
    // Sequential, interleaved in blocks of 50.
    let (mut direct_wall, mut proxied_wall) = (Vec::new(), Vec::new());
    let mut cpu = 0u64;
    let pid = serve.proc.0.id();
    rt.block_on(async {
        let mut id = 100;
        while (proxied_wall.len() as u64) < calls {
            for _ in 0..50 {
                id += 1;
                let t = Instant::now();
                direct.echo(id).await;
                direct_wall.push(t.elapsed());
            }
            let before = cpu_ns(pid);
            for _ in 0..50 {
                id += 1;
                let t = Instant::now();
                proxied.echo(id).await;
                proxied_wall.push(t.elapsed());
            }
            cpu += cpu_ns(pid) - before;
        }
    });
    let (d, p) = (median(direct_wall), median(proxied_wall));
    println!(
        "remote_proxy: a read tools/call (echo), {calls} sequential: direct p50 {:?}, through the host p50 {:?} (ratio {:.2}); the host's CPU per proxied call {} us",
        d,
        p,
        p.as_secs_f64() / d.as_secs_f64(),
        cpu / calls / 1000
    );

    // 64 sessions at once, each with its own MCP session at the server.
    let sessions = 64;
    let per: u64 = if quick() { 10 } else { 40 };
    let proxied_sessions: Vec<(String, String)> = rt.block_on(async {
        let mut all = Vec::new();
        for _ in 0..sessions {
            all.push(session(&http, &serve.base).await);
        }
        all
    });
    let throughput = |proxied: bool| -> f64 {
        rt.block_on(async {
            let mut clients = Vec::new();
            for (url, token) in proxied_sessions.iter().take(sessions) {
                clients.push(if proxied {
                    Client::connect(&http, url, Some(token.clone())).await
                } else {
                    Client::connect(&http, &direct_url, None).await
                });
            }
            // Each session's first call opens its upstream session: not timed.
            for c in &clients {
                c.echo(1).await;
            }
            let clients = Arc::new(clients);
            let started = Instant::now();
            let mut tasks = Vec::new();
            for i in 0..sessions {
                let clients = clients.clone();
                tasks.push(tokio::spawn(async move {
                    for n in 0..per {
                        clients[i].echo(10 + n).await;
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            (sessions as u64 * per) as f64 / started.elapsed().as_secs_f64()
        })
    };
    let mut rates: HashMap<bool, Vec<f64>> = HashMap::new();
    for _ in 0..3 {
        for proxied in [false, true] {
            rates.entry(proxied).or_default().push(throughput(proxied));
        }
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (d, p) = (
        med(rates.remove(&false).unwrap()),
        med(rates.remove(&true).unwrap()),
    );
    println!(
        "remote_proxy: {sessions} sessions at once: direct {d:.0} calls/s, through the host {p:.0} calls/s (ratio {:.2})",
        p / d
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = report
}
criterion_main!(benches);
