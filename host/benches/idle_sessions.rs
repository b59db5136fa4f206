//! What an open, idle agent session costs the host in memory: the real
//! `scout-host serve` (the GitHub component, the fake GitHub) in a process of
//! its own, 2,000 sessions opened through the admin API (`POST
//! /v1/sessions`) by a bounded number of concurrent clients on loopback,
//! then left idle; the process's resident memory (`VmRSS`, and its
//! anonymous part `RssAnon`) before and after, over the sessions opened.
//!
//! A session costs what the host keeps for it between calls (its policy
//! state, its surface, its endpoints, the MCP session rmcp keeps for its
//! client) and what the allocator cannot give back around it; a deployment
//! sizes its memory by it (issue 58: at most 64 KB per idle component
//! session).
//!
//! Each way a session is used is measured on a fresh `serve`:
//! - `opened`: opened, never called;
//! - `mcp session`: opened, then an MCP session of its `github` endpoint as
//!   the official Python client opens one (2025-11-25 `initialize`,
//!   `notifications/initialized`) and one read `tools/call` in it;
//! - `stateless`: opened, then one stateless (2026-07-28) read `tools/call`;
//! - `mcp session + GET stream`: as `mcp session`, the client also holding
//!   the session's event stream open (`GET`), as the official Python client
//!   does between calls: one TCP connection per session;
//! - `mcp session, tools/list`: as `mcp session`, with a `tools/list` before
//!   the call, as an agent lists its tools first (the endpoint keeps the
//!   list it answered, per revision).
//!
//! Before counting, `WARM` sessions of the same use are opened and called
//! (caches, pools, the instance of the component, the database's pages);
//! then the resident memory is read, the sessions are opened, and after a
//! settling pause it is read again. With `SCOUT_BENCH_BASELINE=PATH`
//! (another build's `scout-host`), each use is measured against a `serve` of
//! that binary in the same run, the two interleaved (this build first in odd
//! runs, the baseline first in even ones), with the ratio. Figures are
//! printed, never asserted: the bench shares the machine with whatever else
//! runs there, and the load average is printed beside them.
//!
//! Environment: `SCOUT_BENCH_SESSIONS` (default 2000), `SCOUT_BENCH_RUNS`
//! (default 1), `SCOUT_BENCH_QUICK=1` (200 sessions),
//! `SCOUT_BENCH_USES=opened,mcp,stateless,stream,listed` (a subset, in that
//! order), `SCOUT_BENCH_ATTACH="heaptrack -p {pid} -o /tmp/idle"` (a command
//! started against this build's `serve` once it is warm and before the
//! sessions are opened, e.g. a heap profiler; `{pid}` is its process id).
//!
//! Run with `cargo bench -p scout-host --bench idle_sessions`.

use futures_util::StreamExt;
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "ghp_benchmark_token_0123456789";
const ADMIN: &str = "bench-admin-token-0123456789abcdef";

/// This build's `scout-host`.
const BIN: &str = env!("CARGO_BIN_EXE_scout-host");

/// The protocol version the official Python client negotiates.
const SESSION_PROTOCOL: &str = "2025-11-25";

/// Sessions opened and used before the first reading, not counted.
const WARM: usize = 100;

/// Clients opening sessions at once.
const CONCURRENCY: usize = 16;

/// How a session is used before it is left idle.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Use {
    Opened,
    McpSession,
    Stateless,
    McpSessionStream,
    McpSessionListed,
}

impl Use {
    fn label(self) -> &'static str {
        match self {
            Use::Opened => "opened, never called",
            Use::McpSession => "mcp session (2025-11-25), one read",
            Use::Stateless => "stateless (2026-07-28), one read",
            Use::McpSessionStream => "mcp session, one read, GET stream held",
            Use::McpSessionListed => "mcp session, tools/list and one read",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Use::Opened => "opened",
            Use::McpSession => "mcp",
            Use::Stateless => "stateless",
            Use::McpSessionStream => "stream",
            Use::McpSessionListed => "listed",
        }
    }
}

/// `serve` in its own process, killed when dropped.
struct Serve {
    child: Child,
    base: String,
    dir: PathBuf,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Serve {
    /// `bin serve` with the GitHub component alone, bound to
    /// `github_origin`, no per-brand cap on live sessions; `label` names its
    /// scratch directory.
    fn start(bin: &Path, label: &str, github_origin: &str) -> Serve {
        let dir =
            std::env::temp_dir().join(format!("scout-bench-idle-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("scratch directory {}: {e}", dir.display()));
        let config = dir.join("serve.toml");
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:0\"\nrequire_review = false\n\
                 max_live_sessions_per_brand = 1000000\ndatabase = \"scout.db\"\n\
                 [connectors.github]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n",
                scout_tests::components::GITHUB,
                github_origin
            ),
        )
        .expect("write serve.toml");
        let log_path = dir.join("serve.log");
        let log = std::fs::File::create(&log_path).expect("create serve.log");
        let mut child = Command::new(bin)
            .args(["serve", "--config"])
            .arg(&config)
            .current_dir(&dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SCOUT_ADMIN_TOKEN", ADMIN)
            .env("SCOUT_STORE_KEY", "22".repeat(32))
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {} serve: {e}", bin.display()));
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line);
        let Some(base) = line
            .trim()
            .rsplit(' ')
            .next()
            .filter(|u| u.starts_with("http://"))
            .map(str::to_string)
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} serve said {line:?}\n{}",
                bin.display(),
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        };
        Serve { child, base, dir }
    }

    /// `VmRSS` and `RssAnon` of the process, in KB.
    fn rss(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc/PID/status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or_else(|| panic!("{name} in /proc/PID/status"))
        };
        (field("VmRSS:"), field("RssAnon:"))
    }

    /// The process's threads now.
    fn threads(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/task", self.child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

/// One admin API request; its JSON answer. Panics on a status other than 2xx.
async fn admin(
    http: &reqwest::Client,
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> Value {
    let response = http
        .request(method.clone(), format!("{base}{path}"))
        .header("authorization", format!("Bearer {ADMIN}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = response.status();
    let text = response
        .text()
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    assert!(status.is_success(), "{method} {path}: {status} {text}");
    if text.is_empty() {
        return Value::Null;
    }
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
}

/// What the client keeps of one open session: its `github` endpoint and
/// token, its MCP session id, and the event stream it holds open, if any.
struct Held {
    _url: String,
    _mcp_session: Option<String>,
    _stream: Option<reqwest::Response>,
}

/// Opens one person-chat session of `acme` on `base` and uses it as `how`.
async fn open_and_use(http: &reqwest::Client, base: &str, how: Use) -> Held {
    let view = admin(
        http,
        base,
        reqwest::Method::POST,
        "/v1/sessions",
        json!({"brand": "acme", "role": "person-chat"}),
    )
    .await;
    let url = view["mcp"]["github"]
        .as_str()
        .unwrap_or_else(|| panic!("a github endpoint: {view}"))
        .to_string();
    let token = view["token"]
        .as_str()
        .unwrap_or_else(|| panic!("a session token: {view}"))
        .to_string();
    let post = |body: Value, session: Option<&str>| {
        let mut request = http
            .post(&url)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", SESSION_PROTOCOL);
        }
        request.body(body.to_string()).send()
    };
    let read = json!({"name": "github_read_file",
                      "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}});
    match how {
        Use::Opened => Held {
            _url: url,
            _mcp_session: None,
            _stream: None,
        },
        Use::Stateless => {
            let mut params = read;
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}});
            let reply = http
                .post(&url)
                .header("authorization", format!("Bearer {token}"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "github_read_file")
                .body(
                    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
                        .to_string(),
                )
                .send()
                .await
                .expect("a stateless call reaches serve")
                .text()
                .await
                .expect("its answer");
            let reply = message(&reply);
            assert_eq!(reply["result"]["isError"], false, "{reply}");
            Held {
                _url: url,
                _mcp_session: None,
                _stream: None,
            }
        }
        Use::McpSession | Use::McpSessionStream | Use::McpSessionListed => {
            let opened = post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": SESSION_PROTOCOL, "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"}}}),
                None,
            )
            .await
            .expect("initialize reaches serve");
            let id = opened
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_else(|| panic!("an MCP session id: {}", opened.status()))
                .to_string();
            let answer = message(&opened.text().await.expect("the initialize answer"));
            assert_eq!(
                answer["result"]["protocolVersion"], SESSION_PROTOCOL,
                "{answer}"
            );
            let initialized = post(
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                Some(&id),
            )
            .await
            .expect("notifications/initialized reaches serve");
            assert_eq!(initialized.status().as_u16(), 202);
            let stream = if how == Use::McpSessionStream {
                let response = http
                    .get(&url)
                    .header("authorization", format!("Bearer {token}"))
                    .header("accept", "text/event-stream")
                    .header("mcp-session-id", &id)
                    .header("mcp-protocol-version", SESSION_PROTOCOL)
                    .send()
                    .await
                    .expect("the event stream reaches serve");
                assert!(
                    response.status().is_success(),
                    "GET stream: {}",
                    response.status()
                );
                Some(response)
            } else {
                None
            };
            if how == Use::McpSessionListed {
                let listed = post(
                    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
                    Some(&id),
                )
                .await
                .expect("tools/list in the session reaches serve")
                .text()
                .await
                .expect("its answer");
                let listed = message(&listed);
                assert!(listed["result"]["tools"].is_array(), "{listed}");
            }
            let reply = post(
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": read}),
                Some(&id),
            )
            .await
            .expect("a call in the session reaches serve")
            .text()
            .await
            .expect("its answer");
            let reply = message(&reply);
            assert_eq!(reply["result"]["isError"], false, "{reply}");
            Held {
                _url: url,
                _mcp_session: Some(id),
                _stream: stream,
            }
        }
    }
}

/// Opens `n` sessions on `base`, `CONCURRENCY` at a time, each used as `how`.
async fn open_many(http: &reqwest::Client, base: &str, how: Use, n: usize) -> Vec<Held> {
    futures_util::stream::iter(0..n)
        .map(|_| open_and_use(http, base, how))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await
}

/// One reading: resident memory per session, in KB.
struct Figure {
    rss_per: f64,
    anon_per: f64,
    before_mb: f64,
    after_mb: f64,
    threads: (usize, usize),
    opened_in: Duration,
}

/// A fresh `serve` of `bin`: `WARM` sessions used as `how`, a reading,
/// `n` more, a settling pause, another reading.
async fn measure(
    bin: &Path,
    label: &str,
    origin: &str,
    how: Use,
    n: usize,
    attach: Option<&str>,
) -> Figure {
    let serve = Serve::start(bin, &format!("{label}-{}", how.key()), origin);
    // A client of its own per serve: connections held by one never count
    // against another, and holding a stream per session needs one
    // connection each.
    let http = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(CONCURRENCY * 2)
        .build()
        .expect("an HTTP client");
    admin(
        &http,
        &serve.base,
        reqwest::Method::PUT,
        "/v1/brands/acme/connections/github",
        json!({"secret": TOKEN}),
    )
    .await;
    let warm = open_many(&http, &serve.base, how, WARM).await;
    settle().await;
    let mut profiler = attach.map(|command| {
        let command = command.replace("{pid}", &serve.child.id().to_string());
        let child = Command::new("sh")
            .args(["-c", &command])
            .spawn()
            .unwrap_or_else(|e| panic!("start `{command}`: {e}"));
        // Let it attach before anything is counted.
        std::thread::sleep(Duration::from_secs(5));
        child
    });
    let (threads0, (rss0, anon0)) = (serve.threads(), serve.rss());
    let t0 = Instant::now();
    let held = open_many(&http, &serve.base, how, n).await;
    let opened_in = t0.elapsed();
    settle().await;
    let (threads1, (rss1, anon1)) = (serve.threads(), serve.rss());
    drop(serve);
    if let Some(profiler) = profiler.as_mut() {
        let _ = profiler.wait();
    }
    drop((warm, held));
    Figure {
        rss_per: (rss1 as f64 - rss0 as f64) / n as f64,
        anon_per: (anon1 as f64 - anon0 as f64) / n as f64,
        before_mb: rss0 as f64 / 1024.0,
        after_mb: rss1 as f64 / 1024.0,
        threads: (threads0, threads1),
        opened_in,
    }
}

/// The settling pause between the last request and a reading: background
/// work (the trace writer's commits, tasks ending) finishes.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// The JSON-RPC message of an answer: plain JSON, or the last `data:` line
/// of an event stream.
fn message(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body) {
        return value;
    }
    let data = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| d.starts_with('{'));
    let data = data.unwrap_or_else(|| panic!("no JSON-RPC message in {body:?}"));
    serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes no
    // `--bench` and expects a quick pass.
    let benching = std::env::args().any(|a| a == "--bench");
    let quick = std::env::var_os("SCOUT_BENCH_QUICK").is_some() || !benching;
    let n: usize = std::env::var("SCOUT_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 200 } else { 2000 });
    let runs: usize = std::env::var("SCOUT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let uses: Vec<Use> = {
        let all = [
            Use::Opened,
            Use::McpSession,
            Use::Stateless,
            Use::McpSessionStream,
            Use::McpSessionListed,
        ];
        match std::env::var("SCOUT_BENCH_USES") {
            Ok(list) => all
                .into_iter()
                .filter(|u| list.split(',').any(|k| k.trim() == u.key()))
                .collect(),
            Err(_) => all.to_vec(),
        }
    };
    let attach = std::env::var("SCOUT_BENCH_ATTACH").ok();
    let baseline = std::env::var_os("SCOUT_BENCH_BASELINE").map(PathBuf::from);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let github = rt.block_on(FakeGitHub::start(TOKEN));
    let origin = github.origin();
    let mut builds: Vec<(&str, PathBuf)> = vec![("this build", PathBuf::from(BIN))];
    if let Some(baseline) = baseline {
        builds.push(("baseline", baseline));
    }
    println!(
        "idle sessions: {n} sessions per reading ({WARM} warm first, {CONCURRENCY} clients at once), {runs} run(s); load average {}",
        loadavg()
    );
    for how in uses {
        let mut per: Vec<Vec<f64>> = vec![Vec::new(); builds.len()];
        for run in 0..runs {
            let order: Vec<usize> = if run % 2 == 0 {
                (0..builds.len()).collect()
            } else {
                (0..builds.len()).rev().collect()
            };
            for i in order {
                let (label, bin) = &builds[i];
                let key = if i == 0 { "current" } else { "baseline" };
                let f = rt.block_on(measure(
                    bin,
                    key,
                    &origin,
                    how,
                    n,
                    attach.as_deref().filter(|_| i == 0),
                ));
                println!(
                    "idle sessions, {}, {label}, run {}: {:.1} KB RSS per session ({:.1} KB anonymous); {:.1} MB -> {:.1} MB; threads {} -> {}; opened in {:.1} s; load average {}",
                    how.label(),
                    run + 1,
                    f.rss_per,
                    f.anon_per,
                    f.before_mb,
                    f.after_mb,
                    f.threads.0,
                    f.threads.1,
                    f.opened_in.as_secs_f64(),
                    loadavg()
                );
                per[i].push(f.rss_per);
            }
        }
        let current = median(per[0].clone());
        match per.get(1) {
            Some(base) => {
                let base = median(base.clone());
                println!(
                    "idle sessions, {}: this build {current:.1} KB per session against the baseline's {base:.1} KB ({:.2}x), median of {runs}",
                    how.label(),
                    current / base
                );
            }
            None => println!(
                "idle sessions, {}: this build {current:.1} KB per session, median of {runs}",
                how.label()
            ),
        }
    }
}
