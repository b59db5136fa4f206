//! The real `scout-host serve` in a process of its own, driven over MCP by a
//! minimal Rust client: stateless 2026-07-28 requests, and requests inside
//! an MCP session (`Mcp-Session-Id`, 2025-11-25) shaped as the official
//! Python client sends them. What a deployment pays per call.
//!
//! Printed before criterion's own group (median of the runs, never a timed
//! assertion):
//! - server CPU per `tools/call`: the `serve` process's user + system time
//!   (`/proc/PID/task/*/schedstat`, every thread, so the client's CPU is not
//!   counted; `/proc/PID/stat` when a thread exited meanwhile) over a run of
//!   sequential calls, and over 64 sessions calling at once, with calls per
//!   second; and the trace writer's group commit (calls' batches per
//!   transaction, from `/metrics`) with 1, 8 and 64 sessions calling;
//! - p50 of a call with the disk quiet against p50 while another process
//!   writes and fsyncs a file on the same disk, in interleaved blocks, with
//!   the ratio: the trace's fsyncs share that disk;
//! - server CPU per request, layer by layer (`GET /v1/health`, `tools/list`,
//!   a refused and a read `tools/call`, the read with the database on tmpfs,
//!   `tools/list` and a read inside an MCP session), and a read and a refused
//!   call with `trace_durable_against = "process_crash"` beside the default;
//! - with `SCOUT_BENCH_BASELINE=PATH` (another build's `scout-host`, e.g. an
//!   earlier commit's): the same six requests, a read over stdio (`serve
//!   --stdio`, the official Python client's handshake and request shapes)
//!   and 64 sessions at once (stateless, then inside MCP sessions) against
//!   a `serve` of that binary, in the same run, interleaved, with the ratio
//!   current/baseline;
//! - a person-chat session holding every connector built from source against
//!   one holding GitHub alone: `tools/list`, a refused and a read
//!   `tools/call` on their `github` endpoint, interleaved, with the ratio;
//! - 100 operator policies (Cedar, `[policy] files`) against none: two
//!   fresh `serve` of this build on tmpfs, a read `tools/call` and
//!   `tools/list` in interleaved blocks, three runs, server CPU per request
//!   with and without and the difference (the issue's bound: 20 us per
//!   call), and before it `OperatorPolicies::decide` in this process for
//!   the same read under the 100, under the slice scoped to its tool, under
//!   one, and under none; `SCOUT_BENCH_ONLY=policies` runs these alone;
//! - where PostgreSQL is at hand (`scout_tests::pg`): a read `tools/call` on
//!   a host on PostgreSQL against the same on SQLite (server CPU and wall
//!   p50, interleaved); 64 sessions on one PostgreSQL host against 32 + 32
//!   on two hosts sharing the database; a read served by a host other than
//!   the one that opened the session against the opener; 64 sessions over
//!   three hosts without affinity (each call to the next host) against all
//!   64 on one host; and how long an approval decided on one host takes to
//!   answer the call waiting on the other (p50, p99), against a decision
//!   on the host holding the call.
//!
//! Every `serve` here sets `pause_after_repeated_denials = 0`: the refused
//! call is measured over and over, which would otherwise pause its session.
//!
//! Run with `cargo bench -p scout-host --bench serve_process`
//! (`SCOUT_BENCH_QUICK=1` for fewer calls).

use criterion::{Criterion, criterion_group, criterion_main};
use scout_tests::catalogue::Connector;
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const TOKEN: &str = "ghp_benchmark_token_0123456789";
const ADMIN: &str = "bench-admin-token-0123456789abcdef";

/// This build's `scout-host`.
const BIN: &str = env!("CARGO_BIN_EXE_scout-host");

/// What the catalogue's deployment sets besides the admin token and the
/// store key: Figma's Nango key and the two Ads developer tokens, so that
/// every connector is offered.
const CATALOGUE_ENV: &[(&str, &str)] = &[
    ("NANGO_SECRET_KEY", "bench-nango-secret"),
    ("GOOGLE_ADS_DEVELOPER_TOKEN", "bench-gads-developer-token"),
    (
        "MICROSOFT_ADS_DEVELOPER_TOKEN",
        "bench-msads-developer-token",
    ),
];

/// The bench opens sessions by the hundred and never ends them: no
/// per-brand cap on live sessions (the default, 100, would refuse them).
const NO_BRAND_CAP: &str = "max_live_sessions_per_brand = 1000000\n";

/// `serve` in its own process, killed when dropped.
struct Serve {
    child: Child,
    base: String,
    dir: PathBuf,
    /// The database, when it is outside `dir`.
    database: Option<PathBuf>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(db) = &self.database {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
            }
        }
    }
}

/// A fresh scratch directory for the `serve` labelled `label`.
fn scratch(label: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("scout-bench-serve-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("scratch directory {}: {e}", dir.display()));
    dir
}

impl Serve {
    /// `bin serve` with the GitHub component alone, bound to
    /// `github_origin`, its database in `database_dir` (its own scratch
    /// directory when `None`); `label` names the scratch directory.
    fn start(bin: &Path, label: &str, github_origin: &str, database_dir: Option<&Path>) -> Serve {
        Serve::start_with(bin, label, github_origin, database_dir, "")
    }

    /// [`Serve::start`] with `settings` (top-level TOML lines) in its
    /// configuration.
    fn start_with(
        bin: &Path,
        label: &str,
        github_origin: &str,
        database_dir: Option<&Path>,
        settings: &str,
    ) -> Serve {
        let dir = scratch(label);
        let database =
            database_dir.map(|d| d.join(format!("scout-bench-{label}-{}.db", std::process::id())));
        let config = dir.join("serve.toml");
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:0\"\nrequire_review = false\npause_after_repeated_denials = 0\n{NO_BRAND_CAP}database = {:?}\n{settings}\
                 [connectors.github]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n",
                database.clone().unwrap_or_else(|| PathBuf::from("scout.db")),
                scout_tests::components::GITHUB,
                github_origin
            ),
        )
        .expect("write serve.toml");
        Serve::spawn(bin, dir, &config, &[], database)
    }

    /// `bin serve` with the GitHub component alone on the PostgreSQL
    /// database at `url` (writes allowed, so a write waits for a person).
    fn start_postgres(bin: &Path, label: &str, github_origin: &str, url: &str) -> Serve {
        let dir = scratch(label);
        let config = dir.join("serve.toml");
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:0\"\nrequire_review = false\npause_after_repeated_denials = 0\n{NO_BRAND_CAP}\
                 [store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\n\
                 [connectors.github]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n",
                scout_tests::components::GITHUB,
                github_origin
            ),
        )
        .expect("write serve.toml");
        Serve::spawn(
            bin,
            dir,
            &config,
            &[
                ("SCOUT_PG_URL", url),
                ("GITHUB_ALLOW_WRITES", "true"),
                ("APPROVAL_TIMEOUT_MS", "600000"),
            ],
            None,
        )
    }

    /// `bin serve` with every connector of `connectors`
    /// (`scout_tests::catalogue`), every origin `origin`.
    fn start_catalogue(bin: &Path, label: &str, origin: &str, connectors: &[Connector]) -> Serve {
        let dir = scratch(label);
        let config = scout_tests::catalogue::serve_config(
            &dir,
            origin,
            connectors,
            &format!("pause_after_repeated_denials = 0\n{NO_BRAND_CAP}"),
        );
        Serve::spawn(bin, dir, &config, CATALOGUE_ENV, None)
    }

    /// Spawns `bin serve --config config` in `dir` with an empty
    /// environment but `PATH`, the admin token, the store key and `env`,
    /// and waits for the address it prints; its stderr goes to
    /// `dir/serve.log`, shown if it does not start.
    fn spawn(
        bin: &Path,
        dir: PathBuf,
        config: &Path,
        env: &[(&str, &str)],
        database: Option<PathBuf>,
    ) -> Serve {
        let log_path = dir.join("serve.log");
        let log = std::fs::File::create(&log_path).expect("create serve.log");
        let mut child = Command::new(bin)
            .args(["serve", "--config"])
            .arg(config)
            .current_dir(&dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SCOUT_ADMIN_TOKEN", ADMIN)
            .env("SCOUT_STORE_KEY", "22".repeat(32))
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {} serve: {e}", bin.display()));
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line);
        let base = line
            .trim()
            .rsplit(' ')
            .next()
            .filter(|u| u.starts_with("http://"))
            .map(str::to_string);
        let Some(base) = base else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} serve said {line:?}\n{}",
                bin.display(),
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        };
        Serve {
            child,
            base,
            dir,
            database,
        }
    }

    /// Where the process's CPU time stands now.
    fn mark(&self) -> CpuMark {
        cpu_mark(self.child.id())
    }

    /// User + system CPU of the whole process since `mark` ([`cpu_since`]).
    fn cpu_since(&self, mark: &CpuMark) -> Duration {
        cpu_since(self.child.id(), mark)
    }

    /// Stores the brand's GitHub connection (the fake's token).
    async fn connect_github(&self, http: &reqwest::Client) {
        admin(
            http,
            &self.base,
            reqwest::Method::PUT,
            "/v1/brands/acme/connections/github",
            json!({"secret": TOKEN}),
        )
        .await;
    }
}

/// Where process `pid`'s CPU time stands now.
fn cpu_mark(pid: u32) -> CpuMark {
    let mut threads = HashMap::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            // The first field: nanoseconds on a CPU; the third: how many
            // times it was put on one (its wake-ups, and preemptions). A
            // thread that has just exited has no file any more.
            if let Some((ns, runs)) = std::fs::read_to_string(task.path().join("schedstat"))
                .ok()
                .and_then(|s| {
                    let mut fields = s.split_whitespace();
                    let ns = fields.next()?.parse().ok()?;
                    Some((ns, fields.nth(1)?.parse().ok()?))
                })
            {
                threads.insert(tid, (ns, runs));
            }
        }
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // Fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .expect("a stat line")
        .1
        .split(' ')
        .collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    CpuMark {
        threads,
        ticks: Duration::from_secs_f64(ticks as f64 / clock_ticks_per_second()),
    }
}

/// User + system CPU of process `pid` (every thread) since `mark`: the
/// sum of its threads' nanoseconds (`/proc/PID/task/TID/schedstat`) when
/// every thread of `mark` is still there, else the process's
/// `/proc/PID/stat` ticks, which count exited threads too but only to
/// 1/CLK_TCK.
fn cpu_since(pid: u32, mark: &CpuMark) -> Duration {
    let now = cpu_mark(pid);
    if mark.threads.keys().all(|t| now.threads.contains_key(t)) {
        let ns: u64 = now
            .threads
            .iter()
            .map(|(t, (ns, _))| ns.saturating_sub(mark.threads.get(t).map_or(0, |m| m.0)))
            .sum();
        Duration::from_nanos(ns)
    } else {
        now.ticks.saturating_sub(mark.ticks)
    }
}

/// How many times the threads of process `pid` were put on a CPU since
/// `mark` (`/proc/PID/task/TID/schedstat`): each wake-up of a parked
/// thread is one. A thread started meanwhile counts from zero; one that
/// exited meanwhile is left out.
fn runs_since(pid: u32, mark: &CpuMark) -> u64 {
    cpu_mark(pid)
        .threads
        .iter()
        .map(|(t, (_, runs))| runs.saturating_sub(mark.threads.get(t).map_or(0, |m| m.1)))
        .sum()
}

/// `bin serve --stdio` on the configuration and database of a running
/// `serve` (whose brand's connection is stored), driven as the official
/// Python client drives it: its handshake (declaring `capabilities`: none
/// unless it was given an elicitation callback), then one request per line.
struct StdioServe {
    child: Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Drop for StdioServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl StdioServe {
    fn start(bin: &Path, beside: &Serve, capabilities: Value) -> StdioServe {
        let log = std::fs::File::create(beside.dir.join("stdio.log")).expect("create stdio.log");
        let mut child = Command::new(bin)
            .args(["serve", "--config"])
            .arg(beside.dir.join("serve.toml"))
            .args(["--stdio", "--brand", "acme", "--role", "person-chat"])
            .args(["--connector", "github"])
            .current_dir(&beside.dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SCOUT_ADMIN_TOKEN", ADMIN)
            .env("SCOUT_STORE_KEY", "22".repeat(32))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {} serve --stdio: {e}", bin.display()));
        let mut stdio = StdioServe {
            input: child.stdin.take().expect("piped stdin"),
            output: BufReader::new(child.stdout.take().expect("piped stdout")),
            child,
            next: 1,
        };
        let answer = stdio.request(json!({"method": "initialize", "params": {
            "protocolVersion": SESSION_PROTOCOL, "capabilities": capabilities,
            "clientInfo": {"name": "bench", "version": "0"}}}));
        assert_eq!(
            answer["result"]["protocolVersion"], SESSION_PROTOCOL,
            "{answer}"
        );
        stdio.send(&json!({"method": "notifications/initialized", "jsonrpc": "2.0"}));
        stdio
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.input
            .write_all(line.as_bytes())
            .and_then(|()| self.input.flush())
            .expect("serve --stdio reads its input");
    }

    /// Sends `request` with the next id and returns its answer.
    fn request(&mut self, mut request: Value) -> Value {
        let id = self.next;
        self.next += 1;
        request["jsonrpc"] = json!("2.0");
        request["id"] = json!(id);
        self.send(&request);
        let mut line = String::new();
        loop {
            line.clear();
            let read = self
                .output
                .read_line(&mut line)
                .expect("serve --stdio answers");
            assert!(read > 0, "serve --stdio ended before answering {request}");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// One `tools/call` of `github_read_file`, shaped as the official
    /// Python client (mcp 2.3.0) sends it.
    fn read_file(&mut self) {
        let answer = self.request(json!({"method": "tools/call", "params": {
            "name": "github_read_file",
            "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}}}));
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
}

/// Server CPU per read (µs) over stdio of each of `stdio`, in interleaved
/// blocks as [`interleaved`] takes them.
fn stdio_interleaved(stdio: &mut [StdioServe], block: usize, blocks: usize) -> Vec<f64> {
    let pids: Vec<u32> = stdio.iter().map(|s| s.child.id()).collect();
    interleaved_pids(&pids, block, blocks, |i| stdio[i].read_file())
        .into_iter()
        .map(|u| u.cpu)
        .collect()
}

/// [`interleaved_use`] for a client that blocks its thread: `one(i)`
/// makes one request to `pids[i]`.
fn interleaved_pids(
    pids: &[u32],
    block: usize,
    blocks: usize,
    mut one: impl FnMut(usize),
) -> Vec<PerCall> {
    let n = pids.len();
    for i in 0..n {
        for _ in 0..block * blocks / 10 {
            one(i);
        }
    }
    let (mut cpu, mut runs) = (vec![Duration::ZERO; n], vec![0; n]);
    for round in 0..blocks {
        for k in 0..n {
            let i = if round % 2 == 0 { k } else { n - 1 - k };
            let mark = cpu_mark(pids[i]);
            for _ in 0..block {
                one(i);
            }
            cpu[i] += cpu_since(pids[i], &mark);
            runs[i] += runs_since(pids[i], &mark);
        }
    }
    per_call(&cpu, &runs, block * blocks)
}

/// A process's CPU time at one moment: each live thread's time on a CPU,
/// and the whole process's in clock ticks.
struct CpuMark {
    /// Nanoseconds on a CPU and times put on one, by thread id.
    threads: HashMap<u32, (u64, u64)>,
    ticks: Duration,
}

/// `getconf CLK_TCK` (100 on Linux unless configured otherwise).
fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// One session's MCP endpoint (its `github` one) and token.
#[derive(Clone)]
struct Session {
    url: String,
    token: String,
    /// How many connector endpoints the session was given.
    endpoints: usize,
    /// The MCP session (`Mcp-Session-Id`) its requests are sent in, as the
    /// official Python client sends them (protocol 2025-11-25); stateless
    /// 2026-07-28 requests when `None`.
    mcp_session: Option<String>,
}

impl Session {
    /// The same session and endpoint, on the host at `to` instead of
    /// `from` (any host of a fleet serves any session).
    fn on(&self, from: &str, to: &str) -> Session {
        Session {
            url: self.url.replacen(from, to, 1),
            ..self.clone()
        }
    }
}

/// One admin API request; its JSON answer (`null` when empty). Panics on
/// a status other than 2xx.
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

/// A person-chat session of brand `acme`.
async fn open_session(http: &reqwest::Client, base: &str) -> Session {
    let view = admin(
        http,
        base,
        reqwest::Method::POST,
        "/v1/sessions",
        json!({"brand": "acme", "role": "person-chat"}),
    )
    .await;
    Session {
        url: view["mcp"]["github"]
            .as_str()
            .unwrap_or_else(|| panic!("a github endpoint: {view}"))
            .to_string(),
        token: view["token"]
            .as_str()
            .unwrap_or_else(|| panic!("a session token: {view}"))
            .to_string(),
        endpoints: view["mcp"].as_object().map_or(0, |m| m.len()),
        mcp_session: None,
    }
}

/// The protocol version the official Python client (mcp 2.3.0) negotiates.
const SESSION_PROTOCOL: &str = "2025-11-25";

/// `s` inside an MCP session of its endpoint, opened as the official
/// Python client opens one: `initialize` (declaring no capabilities, so
/// nothing can be asked of it), then `notifications/initialized`.
async fn in_mcp_session(http: &reqwest::Client, s: &Session) -> Session {
    in_mcp_session_declaring(http, s, json!({})).await
}

/// [`in_mcp_session`], the client declaring `capabilities` (the official
/// Python client declares `elicitation` when given a callback for it).
async fn in_mcp_session_declaring(
    http: &reqwest::Client,
    s: &Session,
    capabilities: Value,
) -> Session {
    let post = |body: Value, session: Option<&str>| {
        let mut request = http
            .post(&s.url)
            .header("authorization", format!("Bearer {}", s.token))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", SESSION_PROTOCOL);
        }
        request.body(body.to_string()).send()
    };
    let opened = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": SESSION_PROTOCOL, "capabilities": capabilities,
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
    assert!(
        answer["result"]["protocolVersion"] == SESSION_PROTOCOL,
        "{answer}"
    );
    let initialized = post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(&id),
    )
    .await
    .expect("notifications/initialized reaches serve");
    assert_eq!(initialized.status().as_u16(), 202);
    Session {
        mcp_session: Some(id),
        ..s.clone()
    }
}

/// The trace writer's transactions so far and the calls' batches they
/// carried (`scout_trace_group_size` on `/metrics`).
async fn trace_groups(http: &reqwest::Client, serve: &Serve) -> (f64, f64) {
    let text = http
        .get(format!("{}/metrics", serve.base))
        .header("authorization", format!("Bearer {ADMIN}"))
        .send()
        .await
        .expect("/metrics answers")
        .text()
        .await
        .expect("the metrics' text");
    let value = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{name} on /metrics"))
    };
    (
        value("scout_trace_group_size_count "),
        value("scout_trace_group_size_sum "),
    )
}

/// Calls' batches per trace transaction since `before` (a mark of
/// [`trace_groups`]).
async fn group_size_since(http: &reqwest::Client, serve: &Serve, before: (f64, f64)) -> f64 {
    let (transactions, batches) = trace_groups(http, serve).await;
    (batches - before.1) / (transactions - before.0)
}

/// One `GET /v1/health`: an HTTP request through the router, without MCP.
async fn health(http: &reqwest::Client, serve: &Serve) {
    let reply = admin(
        http,
        &serve.base,
        reqwest::Method::GET,
        "/v1/health",
        Value::Null,
    )
    .await;
    assert!(reply.is_object(), "{reply}");
}

/// One stateless MCP request (`tools/call` of `name`, or `tools/list`
/// when `name` is `None`); the JSON-RPC answer.
async fn mcp_request(
    http: &reqwest::Client,
    s: &Session,
    name: Option<&str>,
    args: Value,
) -> Value {
    let request = http
        .post(&s.url)
        .header("authorization", format!("Bearer {}", s.token))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    let method = if name.is_some() {
        "tools/call"
    } else {
        "tools/list"
    };
    let (request, body) = if let Some(session) = &s.mcp_session {
        // The official Python client's shape: no `_meta`, no `Mcp-Method`.
        let params = match name {
            Some(name) => json!({"name": name, "arguments": args}),
            None => json!({}),
        };
        (
            request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", SESSION_PROTOCOL),
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        )
    } else {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
                          "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}});
        let params = match name {
            Some(name) => json!({"name": name, "arguments": args, "_meta": meta}),
            None => json!({"_meta": meta}),
        };
        let mut request = request
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        (
            request,
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        )
    };
    let reply = request
        .body(body.to_string())
        .send()
        .await
        .expect("an MCP request reaches serve")
        .text()
        .await
        .expect("an MCP answer's body");
    message(&reply)
}

/// One stateless `tools/call` of `github_read_file`.
async fn read_file(http: &reqwest::Client, s: &Session) {
    let reply = mcp_request(
        http,
        s,
        Some("github_read_file"),
        json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
    )
    .await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
}

/// One `tools/list`: HTTP, the session's token, MCP framing and the policy
/// surface, without a tool call.
async fn list_tools(http: &reqwest::Client, s: &Session) {
    let reply = mcp_request(http, s, None, Value::Null).await;
    assert!(reply["result"]["tools"].is_array(), "{reply}");
}

/// One call of a write person chat is not given here (writes are off):
/// everything `tools/list` does plus the decision and one trace commit
/// (`requested`, `permission_denied`), without the guest or upstream.
async fn refused_call(http: &reqwest::Client, s: &Session) {
    let reply = mcp_request(
        http,
        s,
        Some("github_create_branch"),
        json!({"owner": "octo", "repo": "hello", "branch": "b", "from": "main"}),
    )
    .await;
    assert!(
        reply["result"]["isError"] == true || reply.get("error").is_some(),
        "{reply}"
    );
}

/// Server CPU per request (µs) over `n` sequential requests made by `one`.
async fn cpu_per<F, Fut>(serve: &Serve, n: usize, mut one: F) -> f64
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..n / 10 {
        one().await;
    }
    let mark = serve.mark();
    for _ in 0..n {
        one().await;
    }
    micros(serve.cpu_since(&mark)) / n as f64
}

/// Server CPU per request (µs) of each of `serves`, over `blocks` rounds
/// in which each serve takes `block` sequential requests in turn (in
/// reverse order every other round), so that drift on the machine weighs
/// on each alike; `one(i)` makes one request to `serves[i]`. A tenth of
/// the requests each first, unmeasured.
async fn interleaved<F, Fut>(serves: &[&Serve], block: usize, blocks: usize, one: F) -> Vec<f64>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let pids: Vec<u32> = serves.iter().map(|s| s.child.id()).collect();
    interleaved_use(&pids, block, blocks, one)
        .await
        .into_iter()
        .map(|u| u.cpu)
        .collect()
}

/// What a process spent per request: CPU (µs, every thread) and its
/// threads' runs on a CPU (wake-ups).
#[derive(Clone, Copy)]
struct PerCall {
    cpu: f64,
    runs: f64,
}

/// [`interleaved`] by process id (a pid may be there twice: two ways of
/// calling one process), with the threads' runs on a CPU per request.
async fn interleaved_use<F, Fut>(
    pids: &[u32],
    block: usize,
    blocks: usize,
    mut one: F,
) -> Vec<PerCall>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let n = pids.len();
    for i in 0..n {
        for _ in 0..block * blocks / 10 {
            one(i).await;
        }
    }
    let (mut cpu, mut runs) = (vec![Duration::ZERO; n], vec![0; n]);
    for round in 0..blocks {
        for k in 0..n {
            let i = if round % 2 == 0 { k } else { n - 1 - k };
            let mark = cpu_mark(pids[i]);
            for _ in 0..block {
                one(i).await;
            }
            cpu[i] += cpu_since(pids[i], &mark);
            runs[i] += runs_since(pids[i], &mark);
        }
    }
    per_call(&cpu, &runs, block * blocks)
}

/// [`PerCall`] of each process from its totals over `calls` requests.
fn per_call(cpu: &[Duration], runs: &[u64], calls: usize) -> Vec<PerCall> {
    cpu.iter()
        .zip(runs)
        .map(|(c, r)| PerCall {
            cpu: micros(*c) / calls as f64,
            runs: *r as f64 / calls as f64,
        })
        .collect()
}

/// The wall p50 of two kinds of request, `blocks` rounds of `block` each
/// in turn (in reverse order every other round); `one(i)` makes one of
/// kind `i`.
async fn wall_p50<F, Fut>(block: usize, blocks: usize, mut one: F) -> [Duration; 2]
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut wall = [Vec::new(), Vec::new()];
    for round in 0..blocks {
        for k in 0..2 {
            let i = if round % 2 == 0 { k } else { 1 - k };
            for _ in 0..block {
                let t = Instant::now();
                one(i).await;
                wall[i].push(t.elapsed());
            }
        }
    }
    wall.map(median)
}

/// What [`six_requests`] measures, in its order.
const SIX_REQUESTS: [&str; 6] = [
    "GET /v1/health",
    "tools/list",
    "refused tools/call",
    "read tools/call",
    "tools/list in an MCP session",
    "read tools/call in an MCP session",
];

/// The six requests of the breakdown, each as CPU per request of
/// `serves[i]` through its session `sessions[i]` (and the MCP session
/// `in_sessions[i]` of the same endpoint), interleaved block by block:
/// `GET /v1/health`, `tools/list`, a refused and a read `tools/call`
/// (stateless), then `tools/list` and a read inside an MCP session.
async fn six_requests(
    http: &reqwest::Client,
    serves: &[&Serve],
    sessions: &[Session],
    in_sessions: &[Session],
    block: usize,
    blocks: usize,
) -> [Vec<f64>; 6] {
    [
        interleaved(serves, block, blocks, |i| health(http, serves[i])).await,
        interleaved(serves, block, blocks, |i| list_tools(http, &sessions[i])).await,
        interleaved(serves, block, blocks, |i| refused_call(http, &sessions[i])).await,
        interleaved(serves, block, blocks, |i| read_file(http, &sessions[i])).await,
        interleaved(serves, block, blocks, |i| list_tools(http, &in_sessions[i])).await,
        interleaved(serves, block, blocks, |i| read_file(http, &in_sessions[i])).await,
    ]
}

/// `sessions` calling `github_read_file` at once, `per_session` calls
/// each: calls per second, and the server's CPU per call (µs).
async fn at_once(
    http: &reqwest::Client,
    serve: &Serve,
    sessions: &[Session],
    per_session: usize,
) -> (f64, f64) {
    let mark = serve.mark();
    let rate = at_once_across(http, sessions, per_session).await;
    let calls = sessions.len() * per_session;
    (rate, micros(serve.cpu_since(&mark)) / calls as f64)
}

/// The JSON-RPC message of an answer: plain JSON, or the last `data:` line
/// of an event stream (a host without `json_response`).
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

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Whether `SCOUT_BENCH_QUICK` asks for a short run.
fn quick() -> bool {
    std::env::var_os("SCOUT_BENCH_QUICK").is_some()
}

/// `(block, blocks)` of the interleaved comparisons.
fn blocks() -> (usize, usize) {
    if quick() { (100, 4) } else { (200, 10) }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn figures(rt: &tokio::runtime::Runtime, serve: &Serve, http: &reqwest::Client) {
    let (sequential, per_session, block, blocks) = if quick() {
        (300, 5, 50, 2)
    } else {
        (2000, 40, 200, 5)
    };
    rt.block_on(async {
        let one = open_session(http, &serve.base).await;
        for _ in 0..100 {
            read_file(http, &one).await;
        }

        // Server CPU per call, one call at a time.
        let groups = trace_groups(http, serve).await;
        let (mark, t0) = (serve.mark(), Instant::now());
        for _ in 0..sequential {
            read_file(http, &one).await;
        }
        let (cpu, wall) = (serve.cpu_since(&mark), t0.elapsed());
        let group_of_one = group_size_since(http, serve, groups).await;
        println!(
            "serve process, {sequential} sequential stateless tools/call: server CPU {:.0} us per call, wall {:.0} us per call",
            micros(cpu) / sequential as f64,
            micros(wall) / sequential as f64
        );

        // 64 sessions at once.
        let mut sessions = Vec::new();
        for _ in 0..64 {
            sessions.push(open_session(http, &serve.base).await);
        }
        at_once(http, serve, &sessions, 1).await;
        let groups = trace_groups(http, serve).await;
        at_once(http, serve, &sessions[..8], per_session * 8).await;
        let group_of_eight = group_size_since(http, serve, groups).await;
        let groups = trace_groups(http, serve).await;
        let (rate, cpu) = at_once(http, serve, &sessions, per_session).await;
        let group_of_64 = group_size_since(http, serve, groups).await;
        println!(
            "serve process, 64 sessions x {per_session} calls: {rate:.0} calls/s, server CPU {cpu:.0} us per call"
        );
        println!(
            "serve process, calls' batches per trace transaction (group commit), mean: 1 session {group_of_one:.2}, 8 sessions {group_of_eight:.2}, 64 sessions {group_of_64:.2}"
        );
        let mut in_sessions = Vec::new();
        for s in &sessions {
            in_sessions.push(in_mcp_session(http, s).await);
        }
        at_once(http, serve, &in_sessions, 1).await;
        let (rate, cpu) = at_once(http, serve, &in_sessions, per_session).await;
        println!(
            "serve process, 64 sessions x {per_session} calls in MCP sessions ({SESSION_PROTOCOL}): {rate:.0} calls/s, server CPU {cpu:.0} us per call"
        );

        // p50 on a quiet disk against p50 while another writer fsyncs the same disk.
        let (mut quiet, mut loaded, mut syncs) = (Vec::new(), Vec::new(), 0);
        for _ in 0..blocks {
            for _ in 0..block {
                let t = Instant::now();
                read_file(http, &one).await;
                quiet.push(t.elapsed());
            }
            let on = Arc::new(AtomicBool::new(true));
            let load = disk_load(&serve.dir, on.clone());
            tokio::time::sleep(Duration::from_millis(50)).await;
            for _ in 0..block {
                let t = Instant::now();
                read_file(http, &one).await;
                loaded.push(t.elapsed());
            }
            on.store(false, Ordering::Relaxed);
            syncs += load.join().expect("the disk writer");
        }
        let (q, l) = (median(quiet), median(loaded));
        println!(
            "serve process, p50 of a call: quiet disk {:.0} us, another writer fsyncing the same disk ({syncs} fsyncs) {:.0} us, ratio {:.2}x",
            micros(q),
            micros(l),
            l.as_secs_f64() / q.as_secs_f64()
        );
    });
}

/// Where a call's server CPU goes, layer by layer, each measured in this
/// run as CPU per request of the same `serve`:
/// - `GET /v1/health`: an HTTP request through the same router and its
///   middleware, answered without MCP;
/// - `tools/list`: HTTP, the session's token, MCP framing, the surface;
/// - a refused call: that, plus the decision and one trace commit;
/// - a read call: that, plus a second commit, the guest and the upstream call;
/// - the same read call with the database on tmpfs (`/dev/shm`): what the
///   disk's fsyncs cost, by difference.
fn breakdown(rt: &tokio::runtime::Runtime, serve: &Serve, origin: &str, http: &reqwest::Client) {
    let n = if quick() { 300 } else { 2000 };
    let memory = Path::new("/dev/shm");
    let in_memory = memory
        .is_dir()
        .then(|| Serve::start(Path::new(BIN), "mem", origin, Some(memory)));
    rt.block_on(async {
        let one = open_session(http, &serve.base).await;
        let health = cpu_per(serve, n, || health(http, serve)).await;
        let list = cpu_per(serve, n, || list_tools(http, &one)).await;
        let refused = cpu_per(serve, n, || refused_call(http, &one)).await;
        let read = cpu_per(serve, n, || read_file(http, &one)).await;
        println!(
            "serve process, server CPU per request ({n} each): GET /v1/health {health:.0} us; tools/list {list:.0} us; refused tools/call {refused:.0} us; read tools/call {read:.0} us"
        );
        let in_session = in_mcp_session(http, &one).await;
        let list = cpu_per(serve, n, || list_tools(http, &in_session)).await;
        let read_in_session = cpu_per(serve, n, || read_file(http, &in_session)).await;
        println!(
            "serve process, server CPU per request inside an MCP session (protocol {SESSION_PROTOCOL}, {n} each): tools/list {list:.0} us; read tools/call {read_in_session:.0} us"
        );
        if let Some(mem) = &in_memory {
            mem.connect_github(http).await;
            let one = open_session(http, &mem.base).await;
            let read_mem = cpu_per(mem, n, || read_file(http, &one)).await;
            println!(
                "serve process, read tools/call with the database on tmpfs: server CPU {read_mem:.0} us per call (the disk's share: {:.0} us)",
                read - read_mem
            );
        }
        // The operator setting that trades the trace's fsync for durability
        // against a process crash only, beside the default, interleaved.
        let crash_only = Serve::start_with(
            Path::new(BIN),
            "process-crash",
            origin,
            None,
            "[store]\ntrace_durable_against = \"process_crash\"\n",
        );
        crash_only.connect_github(http).await;
        let fresh = Serve::start(Path::new(BIN), "power-loss", origin, None);
        fresh.connect_github(http).await;
        let serves = [&fresh, &crash_only];
        let sessions = [
            open_session(http, &fresh.base).await,
            open_session(http, &crash_only.base).await,
        ];
        let (block, blocks) = blocks();
        let reads = interleaved(&serves, block, blocks, |i| read_file(http, &sessions[i])).await;
        let refusals =
            interleaved(&serves, block, blocks, |i| refused_call(http, &sessions[i])).await;
        println!(
            "serve process, trace_durable_against = \"process_crash\" against the default \"power_loss\" ({blocks} interleaved blocks of {block}): read tools/call {:.0} us against {:.0} us ({:.2}x); refused tools/call {:.0} us against {:.0} us ({:.2}x)",
            reads[1],
            reads[0],
            reads[1] / reads[0],
            refusals[1],
            refusals[0],
            refusals[1] / refusals[0],
        );
    });
}

/// This build against `baseline` (another build's `scout-host`, from
/// `SCOUT_BENCH_BASELINE`), both serving the same fake GitHub with the
/// same configuration, measured in this run: the breakdown's four requests
/// in interleaved blocks, and 64 sessions at once, each serve in turn,
/// three rounds, the median. Both are started here, so neither carries
/// the other measurements' trace, sessions or warm caches. With this
/// build's `serve` reused, an A/A run (the same binary on both sides)
/// gave a refused call 0.93x, a read 1.05x and `/v1/health` 1.30x; with
/// both fresh, 0.96x to 1.02x.
fn against_baseline(
    rt: &tokio::runtime::Runtime,
    baseline_bin: &Path,
    origin: &str,
    http: &reqwest::Client,
) {
    let current = Serve::start(Path::new(BIN), "current", origin, None);
    let serve = &current;
    let baseline = Serve::start(baseline_bin, "baseline", origin, None);
    let (block, blocks) = blocks();
    let per_session = if quick() { 5 } else { 40 };
    rt.block_on(async {
        serve.connect_github(http).await;
        baseline.connect_github(http).await;
        let serves = [serve, &baseline];
        let sessions = [
            open_session(http, &serve.base).await,
            open_session(http, &baseline.base).await,
        ];
        let in_sessions = [
            in_mcp_session(http, &sessions[0]).await,
            in_mcp_session(http, &sessions[1]).await,
        ];
        println!(
            "serve process, against the baseline {} ({blocks} interleaved blocks of {block} requests each):",
            baseline_bin.display()
        );
        let figures = six_requests(http, &serves, &sessions, &in_sessions, block, blocks).await;
        for (what, v) in SIX_REQUESTS.iter().zip(figures) {
            println!(
                "serve process, server CPU per request, {what}: {:.0} us against {:.0} us for the baseline ({:.2}x)",
                v[0],
                v[1],
                v[0] / v[1]
            );
        }
        // The official Python client declares elicitation when it is given
        // a callback: its read asks nobody anything.
        let asking = json!({"elicitation": {}});
        let in_asking_sessions = [
            in_mcp_session_declaring(http, &sessions[0], asking.clone()).await,
            in_mcp_session_declaring(http, &sessions[1], asking.clone()).await,
        ];
        let v = interleaved(&serves, block, blocks, |i| {
            read_file(http, &in_asking_sessions[i])
        })
        .await;
        println!(
            "serve process, server CPU per request, read tools/call in an MCP session of a client that can be asked: {:.0} us against {:.0} us for the baseline ({:.2}x)",
            v[0],
            v[1],
            v[0] / v[1]
        );
        for (what, capabilities) in [("", json!({})), (" from a client that can be asked", asking)] {
            let mut stdio = [
                StdioServe::start(Path::new(BIN), serve, capabilities.clone()),
                StdioServe::start(baseline_bin, &baseline, capabilities),
            ];
            let v = stdio_interleaved(&mut stdio, block, blocks);
            println!(
                "serve process, server CPU per request, read tools/call over stdio ({SESSION_PROTOCOL}){what}: {:.0} us against {:.0} us for the baseline ({:.2}x)",
                v[0],
                v[1],
                v[0] / v[1]
            );
        }

        let mut many = [Vec::new(), Vec::new()];
        for (i, s) in serves.iter().enumerate() {
            for _ in 0..64 {
                many[i].push(open_session(http, &s.base).await);
            }
            // Unmeasured: every session's first call.
            at_once(http, s, &many[i], 1).await;
        }
        let mut many_in_sessions = [Vec::new(), Vec::new()];
        for (i, sessions) in many.iter().enumerate() {
            for s in sessions {
                many_in_sessions[i].push(in_mcp_session(http, s).await);
            }
        }
        for (what, many) in [("", &many), (" in MCP sessions", &many_in_sessions)] {
            let (mut rate, mut cpu) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
            for round in 0..3 {
                for k in 0..2 {
                    let i = if round % 2 == 0 { k } else { 1 - k };
                    let (r, c) = at_once(http, serves[i], &many[i], per_session).await;
                    rate[i].push(r);
                    cpu[i].push(c);
                }
            }
            let [rate, baseline_rate] = rate.map(median_f64);
            let [cpu, baseline_cpu] = cpu.map(median_f64);
            println!(
                "serve process, 64 sessions x {per_session} calls{what} (median of 3 rounds): {rate:.0} calls/s against {baseline_rate:.0} for the baseline ({:.2}x); server CPU {cpu:.0} us per call against {baseline_cpu:.0} us ({:.2}x)",
                rate / baseline_rate,
                cpu / baseline_cpu
            );
        }
    });
}

/// A session given every connector against one given only GitHub: the
/// same `tools/list`, refused and read `tools/call` on their `github`
/// endpoint, in interleaved blocks. Nothing in a call's path should grow
/// with the connectors or tools of the session. Both processes start
/// here: against the bench's own `serve`, which has served thousands of
/// calls by then, a fresh process with GitHub alone also costs 1.03x to
/// 1.11x per refused call.
fn catalogue_against_one(rt: &tokio::runtime::Runtime, origin: &str, http: &reqwest::Client) {
    let connectors = scout_tests::catalogue::connectors(|bytes| {
        scout_host::runtime::read_manifest(bytes)
            .expect("a connector component carries its manifest")
            .to_json()
    });
    let started = Instant::now();
    let all = Serve::start_catalogue(Path::new(BIN), "catalogue", origin, &connectors);
    let up = started.elapsed();
    let one = Serve::start(Path::new(BIN), "github-alone", origin, None);
    let serve = &one;
    let (block, blocks) = blocks();
    rt.block_on(async {
        for c in scout_tests::catalogue::connections(&connectors) {
            let connection = c["connector"].as_str().expect("a connection name");
            let path = format!("/v1/brands/acme/connections/{connection}");
            admin(http, &all.base, reqwest::Method::PUT, &path, c["body"].clone()).await;
        }
        // The fake GitHub's token, so that the read call succeeds.
        all.connect_github(http).await;
        serve.connect_github(http).await;
        let sessions = [
            open_session(http, &all.base).await,
            open_session(http, &serve.base).await,
        ];
        assert!(
            sessions[0].endpoints >= 10,
            "a person chat with every connector connected has most of the {} endpoints, not {}",
            connectors.len(),
            sessions[0].endpoints
        );
        let serves = [&all, serve];
        let figures = [
            (
                "tools/list",
                interleaved(&serves, block, blocks, |i| list_tools(http, &sessions[i])).await,
            ),
            (
                "refused tools/call",
                interleaved(&serves, block, blocks, |i| refused_call(http, &sessions[i])).await,
            ),
            (
                "read tools/call",
                interleaved(&serves, block, blocks, |i| read_file(http, &sessions[i])).await,
            ),
        ];
        let figures: Vec<String> = figures
            .iter()
            .map(|(what, v)| {
                format!(
                    "{what} {:.0} us against {:.0} us ({:.2}x)",
                    v[0],
                    v[1],
                    v[0] / v[1]
                )
            })
            .collect();
        println!(
            "serve process, {} components loaded, up in {:.1} s; server CPU per request, {blocks} interleaved blocks of {block}:",
            connectors.len(),
            up.as_secs_f64()
        );
        println!(
            "serve process, session with {} connectors against one with {}: {}",
            sessions[0].endpoints,
            sessions[1].endpoints,
            figures.join("; ")
        );
    });
}

/// How many operator policies the policies variant carries.
const POLICIES: usize = 100;

/// [`POLICIES`] Cedar policies of the kinds an operator writes (the issue's
/// examples), over the GitHub tools this bench serves: forbids over
/// arguments (a repository, a path prefix, a branch prefix, a page cap)
/// and over the principal (brand, role, profile) and the connector's
/// effect, and `@ask_person` forbids on reads. None matches the benched
/// read (`octo/hello`, `README.md`); a dozen are scoped to it and
/// evaluated on every call, and none reads `context.history` (a window
/// rule reads the store: that cost is the store's, measured apart).
fn hundred_policies() -> String {
    let read = r#"Scout::Action::"mcp__github__github_read_file""#;
    let branch = r#"Scout::Action::"mcp__github__github_create_branch""#;
    let issues = r#"Scout::Action::"mcp__github__github_list_issues""#;
    let list = r#"Scout::Action::"mcp__github__github_list_path""#;
    let commit = r#"Scout::Action::"mcp__github__github_commit_files""#;
    let mut text = String::new();
    for i in 0..POLICIES {
        let policy = match i % 10 {
            0 => format!(
                "@id(\"read-repo-{i}\")\nforbid (principal, action == {read}, resource)\nwhen {{ context.args.repo == \"private-{i}\" }};"
            ),
            1 => format!(
                "@id(\"read-path-{i}\")\nforbid (principal, action == {read}, resource)\nwhen {{ context.args.path like \"secrets-{i}/*\" }};"
            ),
            2 => format!(
                "@id(\"branch-prefix-{i}\")\nforbid (principal, action == {branch}, resource)\nwhen {{ context.args.owner == \"org-{i}\" }}\nunless {{ context.args.branch like \"scout/*\" }};"
            ),
            3 => format!(
                "@id(\"brand-writes-{i}\")\nforbid (principal, action, resource)\nwhen {{ principal.brand == \"brand-{i}\" && resource.effect == \"write\" }};"
            ),
            4 => format!(
                "@id(\"role-github-{i}\")\nforbid (principal, action in Scout::Action::\"connector:github\", resource)\nwhen {{ principal.role == \"role-{i}\" }};"
            ),
            5 => format!(
                "@id(\"profile-{i}\")\nforbid (principal, action, resource)\nwhen {{ principal has profile && principal.profile == \"profile-{i}\" }};"
            ),
            6 => format!(
                "@id(\"ask-release-{i}\")\n@ask_person\nforbid (principal, action == {read}, resource)\nwhen {{ context.args has \"git-ref\" && context.args[\"git-ref\"] == \"release-{i}\" }};"
            ),
            7 => format!(
                "@id(\"issue-page-cap-{i}\")\nforbid (principal, action == {issues}, resource)\nwhen {{ context.args has limit && context.args.limit > {} }};",
                50 + i
            ),
            8 => format!(
                "@id(\"list-vault-{i}\")\nforbid (principal, action == {list}, resource)\nwhen {{ context.args.repo == \"vault-{i}\" }};"
            ),
            _ => format!(
                "@id(\"commit-brand-{i}\")\nforbid (principal, action == {commit}, resource)\nwhen {{ principal.brand == \"b-{i}\" && context.args.branch like \"main*\" }};"
            ),
        };
        text.push_str(&policy);
        text.push_str("\n\n");
    }
    text
}

/// The policies' own cost, in this process: `OperatorPolicies::decide`
/// for the benched read under [`hundred_policies`], against the same
/// decision under only the policies whose action scope can name
/// `github_read_file` (the slice an index by action would evaluate),
/// against one policy (what a decision costs besides its policies), and
/// against none. CPU of this thread per decision, median of three runs.
fn decide_in_process() {
    use scout_host::policy::operator::schema::ServedTool;
    use scout_host::policy::operator::{
        CallFacts, DeploymentSchema, OperatorPolicies, PolicyDoc, PolicyRevision, PolicySource,
        PrincipalFacts, ResourceFacts,
    };
    let string = json!({"type": "string"});
    let long = json!({"type": "integer"});
    let tool = |name: &str, properties: Value, required: &[&str]| ServedTool {
        connector: "github".into(),
        tool: name.into(),
        input_schema: json!({"type": "object", "properties": properties, "required": required}),
    };
    let schema = DeploymentSchema::from_tools([
        tool(
            "github_read_file",
            json!({"owner": string, "repo": string, "path": string, "git-ref": string}),
            &["owner", "repo", "path"],
        ),
        tool(
            "github_list_path",
            json!({"owner": string, "repo": string, "path": string, "git-ref": string}),
            &["owner", "repo"],
        ),
        tool(
            "github_create_branch",
            json!({"owner": string, "repo": string, "branch": string, "from": string}),
            &["owner", "repo", "branch"],
        ),
        tool(
            "github_list_issues",
            json!({"owner": string, "repo": string, "state": string, "limit": long}),
            &["owner", "repo"],
        ),
        tool(
            "github_commit_files",
            json!({"owner": string, "repo": string, "branch": string, "message": string}),
            &["owner", "repo", "branch", "message"],
        ),
    ])
    .expect("the bench's schema");
    let all = hundred_policies();
    // Scoped to the read, to every action, or to GitHub's group.
    let slice: String = all
        .split("\n\n")
        .filter(|p| {
            p.contains("github_read_file")
                || p.contains("(principal, action, resource)")
                || p.contains("connector:github")
        })
        .map(|p| format!("{p}\n\n"))
        .collect();
    let compile = |text: &str| {
        let docs = [PolicyDoc {
            name: "bench.cedar".into(),
            source: PolicySource::Api,
            text: text.into(),
        }];
        OperatorPolicies::compile(&docs, &schema, PolicyRevision::of(0, &docs))
            .unwrap_or_else(|e| panic!("the bench's policies compile: {e}"))
    };
    let facts = CallFacts {
        principal: PrincipalFacts {
            session: "s-bench".into(),
            brand: "acme".into(),
            role: "person-chat".into(),
            base_role: "person-chat".into(),
            profile: None,
            requester: None,
            person_can_be_asked: true,
        },
        action: "mcp__github__github_read_file".into(),
        resource: ResourceFacts {
            connector: "github".into(),
            origin: "component".into(),
            effect: "read".into(),
            billing_unit: None,
            routes: vec!["GET /repos/{owner}/{repo}/contents/{path}".into()],
            destination: None,
        },
        args: json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
        history: Default::default(),
        now_ms: 1_765_000_000_000,
    };
    // One policy scoped to the read: what a decision costs besides its
    // policies (the context, entities and request built for it).
    let one = all.split("\n\n").next().unwrap_or_default().to_string();
    let sets = [
        compile(&all),
        compile(&slice),
        compile(&one),
        OperatorPolicies::none(),
    ];
    let counts = [POLICIES, slice.matches("@id(").count(), 1, 0];
    let n = if quick() { 2_000 } else { 20_000 };
    let mut per = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..3 {
        for (i, set) in sets.iter().enumerate() {
            for _ in 0..n / 10 {
                std::hint::black_box(set.decide(&facts));
            }
            let start = thread_cpu();
            for _ in 0..n {
                std::hint::black_box(set.decide(&facts));
            }
            per[i].push(micros(thread_cpu() - start) / n as f64);
        }
    }
    let [all, slice, one, none] = per.map(median_f64);
    println!(
        "policy decision in process (OperatorPolicies::decide, the benched read), CPU per decision, median of 3 runs of {n}: {} policies {all:.1} us; the {} scoped to the read, to every action or to GitHub {slice:.1} us; {} scoped to the read {one:.1} us; none {none:.2} us",
        counts[0], counts[1], counts[2]
    );
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, read from
/// `/proc/thread-self/schedstat`: nanoseconds on a CPU).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = stat
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

/// The same build's `serve`, twice, fresh, on tmpfs (`/dev/shm`, so the
/// disk's fsyncs add no noise): one carrying [`hundred_policies`], one
/// without any. Three runs, each interleaved blocks of a read
/// `tools/call` (allowed: every policy in its scope evaluated, none
/// matching) and of `tools/list` (the surface: policies decided at surface
/// time), server CPU per request with and without, and the difference.
/// The issue's bound: at most 20 us of server CPU per call.
fn policies_against_none(rt: &tokio::runtime::Runtime, origin: &str, http: &reqwest::Client) {
    let shm = Path::new("/dev/shm");
    let tmp = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let file = tmp.join(format!("scout-bench-policies-{}.cedar", std::process::id()));
    std::fs::write(&file, hundred_policies()).expect("write the policies");
    let with = Serve::start_with(
        Path::new(BIN),
        "policies",
        origin,
        Some(&tmp),
        &format!("[policy]\nfiles = [{:?}]\n", file.display().to_string()),
    );
    let without = Serve::start_with(Path::new(BIN), "no-policies", origin, Some(&tmp), "");
    let (block, blocks) = blocks();
    rt.block_on(async {
        with.connect_github(http).await;
        without.connect_github(http).await;
        let sessions = [
            open_session(http, &with.base).await,
            open_session(http, &without.base).await,
        ];
        let serves = [&with, &without];
        let (mut reads, mut lists) = (Vec::new(), Vec::new());
        for run in 1..=3 {
            let read = interleaved(&serves, block, blocks, |i| read_file(http, &sessions[i])).await;
            let list = interleaved(&serves, block, blocks, |i| list_tools(http, &sessions[i])).await;
            println!(
                "serve process, {POLICIES} operator policies against none, run {run}, server CPU per request, {blocks} interleaved blocks of {block}: read tools/call {:.1} us against {:.1} us ({:+.1} us); tools/list {:.1} us against {:.1} us ({:+.1} us)",
                read[0],
                read[1],
                read[0] - read[1],
                list[0],
                list[1],
                list[0] - list[1]
            );
            reads.push(read[0] - read[1]);
            lists.push(list[0] - list[1]);
        }
        println!(
            "serve process, {POLICIES} operator policies: median of 3 runs, read tools/call {:+.1} us of server CPU per call (bound: 20 us), tools/list {:+.1} us",
            median_f64(reads),
            median_f64(lists)
        );
    });
    let _ = std::fs::remove_file(&file);
}

/// The client's idle wait before each paced call: `SCOUT_BENCH_GAP_US`
/// microseconds, 1500 unless set (the official Python client spends 1 to 2
/// ms of its own between calls); 0 makes the paced client back to back.
fn gap() -> Duration {
    match std::env::var("SCOUT_BENCH_GAP_US") {
        Ok(v) => Duration::from_micros(
            v.trim()
                .parse()
                .unwrap_or_else(|e| panic!("SCOUT_BENCH_GAP_US={v:?}: {e}")),
        ),
        Err(_) => Duration::from_micros(1500),
    }
}

/// A sequential client's idle wait before a call, and how long its waits
/// really took. `std::thread::sleep` on the client's own thread (the
/// bench's futures run on the thread of `block_on`, not on the runtime's
/// workers, and `serve` is another process): it oversleeps by the kernel's
/// timer slack, tens of microseconds, where tokio's timer (1 ms ticks)
/// would make 1.5 ms into 2 ms.
struct Pacer {
    gap: Duration,
    waited: Cell<Duration>,
    waits: Cell<u32>,
}

impl Pacer {
    fn new() -> Pacer {
        Pacer {
            gap: gap(),
            waited: Cell::new(Duration::ZERO),
            waits: Cell::new(0),
        }
    }

    /// The client's idle wait before its next call.
    fn pause(&self) {
        if self.gap.is_zero() {
            return;
        }
        let t = Instant::now();
        std::thread::sleep(self.gap);
        self.waited.set(self.waited.get() + t.elapsed());
        self.waits.set(self.waits.get() + 1);
    }

    /// The mean wait (µs) since the last time this was asked.
    fn mean(&self) -> f64 {
        let (waited, waits) = (self.waited.take(), self.waits.take());
        if waits == 0 {
            0.0
        } else {
            micros(waited) / f64::from(waits)
        }
    }
}

/// The GET event stream the official Python client opens on its MCP
/// session as soon as it has sent `notifications/initialized` (where the
/// server's own messages would come), held open, unread, while the session
/// is used; dropping it closes it.
async fn event_stream(http: &reqwest::Client, s: &Session) -> reqwest::Response {
    let session = s.mcp_session.as_deref().expect("an MCP session");
    let response = http
        .get(&s.url)
        .header("authorization", format!("Bearer {}", s.token))
        .header("accept", "text/event-stream")
        .header("cache-control", "no-store")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", SESSION_PROTOCOL)
        .send()
        .await
        .expect("the GET event stream reaches serve");
    assert!(
        response.status().is_success(),
        "the GET event stream: {}",
        response.status()
    );
    response
}

/// The official Python MCP client's figure for the same read on the same
/// `serve`, from the side-by-side's driver (`mcp_latency.py` of
/// `../shared/peer`, named by `SCOUT_BENCH_MCP_LATENCY`, run by the Python
/// with the SDK named by `SCOUT_BENCH_PYTHON`; `None` unless both are set):
/// over streamable HTTP to `session`'s endpoint (the driver opens its own
/// MCP session there, and its GET event stream), or over stdio beside
/// `serve` when `session` is `None`. `calls` measured calls after a tenth
/// as many unmeasured. The server CPU per call (µs, the driver's reading
/// of `/proc/PID/stat`), the client's own CPU per call (µs) and its mean
/// latency (µs).
fn official_client(serve: &Serve, session: Option<&Session>, calls: usize) -> Option<[f64; 3]> {
    let python = std::env::var_os("SCOUT_BENCH_PYTHON")?;
    let driver = std::env::var_os("SCOUT_BENCH_MCP_LATENCY")?;
    let mut command = Command::new(python);
    command.arg(driver).arg("--json").args([
        "--tool",
        "github_read_file",
        "--args",
        r#"{"owner": "octo", "repo": "hello", "path": "README.md"}"#,
        "--expect",
        "Hello",
        "-n",
        &calls.to_string(),
        "-w",
        &(calls / 10).to_string(),
    ]);
    match session {
        Some(s) => command.args([
            "--url",
            &s.url,
            "--bearer",
            &s.token,
            "--pid",
            &serve.child.id().to_string(),
        ]),
        None => command
            .arg("--stdio")
            .arg(format!(
                "{BIN} serve --config {} --stdio --brand acme --role person-chat --connector github",
                serve.dir.join("serve.toml").display()
            ))
            .arg("--cwd")
            .arg(&serve.dir)
            .args([
                "--env".to_string(),
                format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
                "--env".to_string(),
                format!("SCOUT_ADMIN_TOKEN={ADMIN}"),
                "--env".to_string(),
                format!("SCOUT_STORE_KEY={}", "22".repeat(32)),
            ]),
    };
    let out = command.output().expect("run the official client's driver");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the driver's JSON: {e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success() && report["errors"] == 0,
        "the official client's calls failed: {report}"
    );
    // Over HTTP the one `--pid`; over stdio the driver's child, `serve --stdio`.
    let cpu: f64 = report["server_cpu_ms_per_call"]
        .as_object()
        .expect("the driver's server CPU")
        .values()
        .filter_map(Value::as_f64)
        .sum();
    Some([
        cpu * 1000.0,
        report["client_cpu_ms_per_call"]
            .as_f64()
            .unwrap_or(f64::NAN)
            * 1000.0,
        report["latency_ms"]["mean"].as_f64().unwrap_or(f64::NAN) * 1000.0,
    ])
}

/// Prints [`official_client`]'s figure beside the paced client's `paced`
/// (µs) for the shape `what`.
fn beside_official(what: &str, official: Option<[f64; 3]>, paced: f64) {
    let Some([cpu, own, latency]) = official else {
        return;
    };
    println!(
        "serve process, the official Python client (mcp_latency.py), read tools/call {what}, same serve: server CPU {cpu:.0} us per call, the client's own CPU {own:.0} us per call, mean latency {latency:.0} us; the paced client's {paced:.0} us is {:.2}x it",
        paced / cpu
    );
}

/// What one real sequential client costs: the official Python client
/// leaves the server idle for its own 1 to 2 ms between calls, and a call
/// that wakes an idle host costs more server CPU than one in a stream of
/// back-to-back calls. One fresh `serve`, a read `tools/call` in three
/// shapes: inside an MCP session (2025-11-25, with the GET event stream the
/// official client holds open), stateless (2026-07-28) and over stdio
/// (`serve --stdio`); each paced (an idle [`Pacer`] wait before each call)
/// against back to back, the same process, in interleaved blocks: server
/// CPU per call (every thread; the client's CPU is not counted) with the
/// ratio, the server's threads' runs on a CPU per call, the real mean wait
/// and each kind's wall p50. With `baseline` (`SCOUT_BENCH_BASELINE`), the
/// three shapes paced against a fresh `serve` of that binary, interleaved,
/// with the ratio current/baseline.
fn paced_figures(
    rt: &tokio::runtime::Runtime,
    origin: &str,
    http: &reqwest::Client,
    baseline: Option<&Path>,
) {
    let pacer = Pacer::new();
    let (block, blocks) = blocks();
    let gap = micros(pacer.gap);
    let in_session_shape = "in an MCP session (2025-11-25, the GET event stream open)";
    let stdio_shape = format!("over stdio ({SESSION_PROTOCOL})");
    let serve = Serve::start(Path::new(BIN), "paced", origin, None);
    let pid = serve.child.id();
    // Each kind's wall times: 0 paced, 1 back to back.
    let walls = RefCell::new([Vec::new(), Vec::new()]);
    let report = |what: &str, v: &[PerCall], mean_gap: f64| {
        let [paced, back_to_back] = walls.take().map(median);
        println!(
            "serve process, paced client, read tools/call {what} ({blocks} interleaved blocks of {block}): server CPU {:.0} us per call with an idle gap of {gap:.0} us before each (real mean {mean_gap:.0} us) against {:.0} us back to back ({:.2}x); server threads' runs on a CPU per call {:.1} against {:.1}; wall p50 {:.0} us against {:.0} us",
            v[0].cpu,
            v[1].cpu,
            v[0].cpu / v[1].cpu,
            v[0].runs,
            v[1].runs,
            micros(paced),
            micros(back_to_back)
        );
    };
    rt.block_on(async {
        serve.connect_github(http).await;
        let stateless = open_session(http, &serve.base).await;
        let in_session = in_mcp_session(http, &stateless).await;
        let _stream = event_stream(http, &in_session).await;
        for (what, s) in [
            (in_session_shape, &in_session),
            ("stateless (2026-07-28)", &stateless),
        ] {
            pacer.mean();
            let v = interleaved_use(&[pid, pid], block, blocks, |i| {
                if i == 0 {
                    pacer.pause();
                }
                let walls = &walls;
                async move {
                    let t = Instant::now();
                    read_file(http, s).await;
                    walls.borrow_mut()[i].push(t.elapsed());
                }
            })
            .await;
            report(what, &v, pacer.mean());
            if what == in_session_shape {
                let official = official_client(&serve, Some(s), (block * blocks).max(1000));
                beside_official(what, official, v[0].cpu);
            }
        }
    });
    let mut stdio = StdioServe::start(Path::new(BIN), &serve, json!({}));
    let stdio_pid = stdio.child.id();
    let v = interleaved_pids(&[stdio_pid, stdio_pid], block, blocks, |i| {
        if i == 0 {
            pacer.pause();
        }
        let t = Instant::now();
        stdio.read_file();
        walls.borrow_mut()[i].push(t.elapsed());
    });
    report(&stdio_shape, &v, pacer.mean());
    drop(stdio);
    let official = official_client(&serve, None, (block * blocks).max(1000));
    beside_official(&stdio_shape, official, v[0].cpu);
    drop(serve);

    let Some(baseline_bin) = baseline else {
        return;
    };
    // Both fresh, so that neither carries the other's calls.
    let current = Serve::start(Path::new(BIN), "paced-current", origin, None);
    let baseline = Serve::start(baseline_bin, "paced-baseline", origin, None);
    let serves = [&current, &baseline];
    let pids = [current.child.id(), baseline.child.id()];
    let against = |what: &str, v: &[PerCall], mean_gap: f64| {
        println!(
            "serve process, paced client (idle gap {gap:.0} us, real mean {mean_gap:.0} us), read tools/call {what}: server CPU {:.0} us per call against {:.0} us for the baseline {} ({:.2}x, {blocks} interleaved blocks of {block}); server threads' runs on a CPU per call {:.1} against {:.1}",
            v[0].cpu,
            v[1].cpu,
            baseline_bin.display(),
            v[0].cpu / v[1].cpu,
            v[0].runs,
            v[1].runs
        );
    };
    rt.block_on(async {
        let mut stateless = Vec::new();
        let mut in_session = Vec::new();
        let mut streams = Vec::new();
        for s in serves {
            s.connect_github(http).await;
            let one = open_session(http, &s.base).await;
            let inside = in_mcp_session(http, &one).await;
            streams.push(event_stream(http, &inside).await);
            stateless.push(one);
            in_session.push(inside);
        }
        for (what, sessions) in [
            (in_session_shape, &in_session),
            ("stateless (2026-07-28)", &stateless),
        ] {
            pacer.mean();
            let v = interleaved_use(&pids, block, blocks, |i| {
                pacer.pause();
                read_file(http, &sessions[i])
            })
            .await;
            against(what, &v, pacer.mean());
        }
    });
    let mut stdio = [
        StdioServe::start(Path::new(BIN), &current, json!({})),
        StdioServe::start(baseline_bin, &baseline, json!({})),
    ];
    let stdio_pids: Vec<u32> = stdio.iter().map(|s| s.child.id()).collect();
    let v = interleaved_pids(&stdio_pids, block, blocks, |i| {
        pacer.pause();
        stdio[i].read_file();
    });
    against(&stdio_shape, &v, pacer.mean());
}

/// Writes and fsyncs a file in `dir` in a loop while `on`: another process's
/// disk traffic on the disk the trace is written to.
fn disk_load(dir: &Path, on: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let path = dir.join("load.bin");
    std::thread::spawn(move || {
        let mut file = std::fs::File::create(&path).expect("create the load file");
        let block = vec![0x5a_u8; 256 * 1024];
        let mut syncs = 0;
        while on.load(Ordering::Relaxed) {
            file.write_all(&block).expect("write the load file");
            file.sync_all().expect("fsync the load file");
            syncs += 1;
            if syncs % 64 == 0 {
                file.set_len(0).expect("truncate the load file");
                use std::io::Seek;
                file.seek(std::io::SeekFrom::Start(0))
                    .expect("rewind the load file");
            }
        }
        let _ = std::fs::remove_file(&path);
        syncs
    })
}

/// Every session's calls at once, spread over several hosts: calls per
/// second over all of them.
async fn at_once_across(http: &reqwest::Client, sessions: &[Session], per_session: usize) -> f64 {
    let t0 = Instant::now();
    let tasks: Vec<_> = sessions
        .iter()
        .cloned()
        .map(|s| {
            let http = http.clone();
            tokio::spawn(async move {
                for _ in 0..per_session {
                    read_file(&http, &s).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("a session's calls");
    }
    (sessions.len() * per_session) as f64 / t0.elapsed().as_secs_f64()
}

/// `sessions` calling `github_read_file` at once, `per_session` calls each,
/// call `k` of session `s` sent to `bases[(s + k) % bases.len()]` (the
/// session's endpoint with its host swapped): a fleet behind a balancer
/// without affinity. Calls per second.
async fn at_once_rotating(
    http: &reqwest::Client,
    sessions: &[Session],
    per_session: usize,
    opener: &str,
    bases: &[String],
) -> f64 {
    let t0 = Instant::now();
    let tasks: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(s, session)| {
            let http = http.clone();
            let moved: Vec<Session> = bases.iter().map(|base| session.on(opener, base)).collect();
            tokio::spawn(async move {
                for k in 0..per_session {
                    read_file(&http, &moved[(s + k) % moved.len()]).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("a session's calls");
    }
    (sessions.len() * per_session) as f64 / t0.elapsed().as_secs_f64()
}

/// One gated write waiting on `holder`, decided through `decider`'s admin
/// API as soon as it is pending: from the decision sent to the call's answer.
async fn decided_to_answered(
    http: &reqwest::Client,
    holder: &Session,
    session_id: &str,
    decider: &Serve,
    round: usize,
) -> Duration {
    let (http2, holder) = (http.clone(), holder.clone());
    let call = tokio::spawn(async move {
        mcp_request(
            &http2,
            &holder,
            Some("github_create_branch"),
            json!({"owner": "octo", "repo": "hello", "branch": format!("bench/{round}"), "from": "main"}),
        )
        .await
    });
    let id = loop {
        let pending = admin(
            http,
            &decider.base,
            reqwest::Method::GET,
            &format!("/v1/approvals?session={session_id}"),
            Value::Null,
        )
        .await;
        if let Some(id) = pending["pending"][0]["id"].as_i64() {
            break id;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let t0 = Instant::now();
    admin(
        http,
        &decider.base,
        reqwest::Method::POST,
        &format!("/v1/approvals/{id}"),
        json!({"approve": true, "by": "bench"}),
    )
    .await;
    let reply = call.await.expect("the gated call");
    let took = t0.elapsed();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    took
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Several hosts on one PostgreSQL database, against one host on SQLite,
/// all measured in this run.
fn postgres_figures(
    rt: &tokio::runtime::Runtime,
    sqlite: &Serve,
    origin: &str,
    http: &reqwest::Client,
) {
    // The tests' cluster runs with fsync off; a deployment's does not, and
    // SQLite here fsyncs every commit: measure like for like.
    scout_tests::pg::durable();
    let Some(db) = scout_tests::pg::database_or_skip("bench") else {
        println!("serve process, PostgreSQL: skipped (no server; see scout_tests::pg)");
        return;
    };
    assert_eq!(db.psql("SHOW fsync"), "on", "the bench's database fsyncs");
    let a = Serve::start_postgres(Path::new(BIN), "pg-a", origin, &db.url());
    let b = Serve::start_postgres(Path::new(BIN), "pg-b", origin, &db.url());
    let (block, blocks) = blocks();
    let per_session = if quick() { 5 } else { 40 };
    let rounds = if quick() { 20 } else { 100 };
    rt.block_on(async {
        a.connect_github(http).await;
        // Server CPU and wall time of a read call, PostgreSQL against SQLite.
        let sessions = [
            open_session(http, &a.base).await,
            open_session(http, &sqlite.base).await,
        ];
        let serves = [&a, sqlite];
        let cpu = interleaved(&serves, block, blocks, |i| read_file(http, &sessions[i])).await;
        let [pg_wall, sqlite_wall] = wall_p50(block, blocks, |i| read_file(http, &sessions[i])).await;
        println!(
            "serve process, read tools/call on PostgreSQL (unix socket, fsync on) against SQLite ({blocks} interleaved blocks of {block}): server CPU {:.0} us against {:.0} us ({:.2}x); wall p50 {:.0} us against {:.0} us ({:.2}x)",
            cpu[0],
            cpu[1],
            cpu[0] / cpu[1],
            micros(pg_wall),
            micros(sqlite_wall),
            pg_wall.as_secs_f64() / sqlite_wall.as_secs_f64()
        );

        // 64 sessions on one host against 32 + 32 on two, one database.
        let mut one_host = Vec::new();
        for _ in 0..64 {
            one_host.push(open_session(http, &a.base).await);
        }
        let mut two_hosts = Vec::new();
        for i in 0..64 {
            two_hosts.push(open_session(http, if i % 2 == 0 { &a.base } else { &b.base }).await);
        }
        at_once_across(http, &one_host, 1).await;
        at_once_across(http, &two_hosts, 1).await;
        let (mut one, mut two) = (Vec::new(), Vec::new());
        for round in 0..3 {
            if round % 2 == 0 {
                one.push(at_once_across(http, &one_host, per_session).await);
                two.push(at_once_across(http, &two_hosts, per_session).await);
            } else {
                two.push(at_once_across(http, &two_hosts, per_session).await);
                one.push(at_once_across(http, &one_host, per_session).await);
            }
        }
        let (one, two) = (median_f64(one), median_f64(two));
        println!(
            "serve process, PostgreSQL, 64 sessions x {per_session} calls (median of 3 rounds, this machine's 2 cores shared by client, hosts and database): one host {one:.0} calls/s; two hosts 32 + 32 {two:.0} calls/s ({:.2}x)",
            two / one
        );

        // A read served by a host other than the one that opened the
        // session, against the opener (server CPU of the host serving it,
        // and wall p50), interleaved.
        let opened = open_session(http, &a.base).await;
        let served = [opened.clone(), opened.on(&a.base, &b.base)];
        let serves = [&a, &b];
        let cpu = interleaved(&serves, block, blocks, |i| read_file(http, &served[i])).await;
        let [opener_wall, other_wall] = wall_p50(block, blocks, |i| read_file(http, &served[i])).await;
        println!(
            "serve process, PostgreSQL, a read tools/call on a host other than the session's opener against the opener ({blocks} interleaved blocks of {block}): server CPU {:.0} us against {:.0} us ({:.2}x); wall p50 {:.0} us against {:.0} us ({:.2}x)",
            cpu[1],
            cpu[0],
            cpu[1] / cpu[0],
            micros(other_wall),
            micros(opener_wall),
            other_wall.as_secs_f64() / opener_wall.as_secs_f64()
        );

        // 64 sessions over three hosts without affinity (each call to the
        // next host) against the same 64 all on the host that opened them.
        let c = Serve::start_postgres(Path::new(BIN), "pg-c", origin, &db.url());
        let bases = [a.base.clone(), b.base.clone(), c.base.clone()];
        at_once_rotating(http, &one_host, 1, &a.base, &bases).await;
        let (mut on_one, mut over_three) = (Vec::new(), Vec::new());
        for round in 0..3 {
            if round % 2 == 0 {
                on_one.push(at_once_across(http, &one_host, per_session).await);
                over_three.push(at_once_rotating(http, &one_host, per_session, &a.base, &bases).await);
            } else {
                over_three.push(at_once_rotating(http, &one_host, per_session, &a.base, &bases).await);
                on_one.push(at_once_across(http, &one_host, per_session).await);
            }
        }
        let (on_one, over_three) = (median_f64(on_one), median_f64(over_three));
        println!(
            "serve process, PostgreSQL, 64 sessions x {per_session} calls (median of 3 rounds, the same 2 cores): over three hosts without affinity {over_three:.0} calls/s against all on one host {on_one:.0} calls/s ({:.2}x)",
            over_three / on_one
        );
        drop(c);

        // A decision on the other host against one on the host holding the call.
        let view = admin(
            http,
            &a.base,
            reqwest::Method::POST,
            "/v1/sessions",
            json!({"brand": "acme", "role": "person-chat"}),
        )
        .await;
        let id = view["id"].as_str().expect("a session id").to_string();
        let holder = Session {
            url: view["mcp"]["github"].as_str().expect("an endpoint").to_string(),
            token: view["token"].as_str().expect("a token").to_string(),
            endpoints: 1,
            mcp_session: None,
        };
        let (mut same, mut other) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            if round % 2 == 0 {
                same.push(decided_to_answered(http, &holder, &id, &a, 2 * round).await);
                other.push(decided_to_answered(http, &holder, &id, &b, 2 * round + 1).await);
            } else {
                other.push(decided_to_answered(http, &holder, &id, &b, 2 * round).await);
                same.push(decided_to_answered(http, &holder, &id, &a, 2 * round + 1).await);
            }
        }
        println!(
            "serve process, PostgreSQL, an approval decided to its call answered ({rounds} each, interleaved): on the other host p50 {:.1} ms, p99 {:.1} ms; on the host holding the call p50 {:.1} ms, p99 {:.1} ms",
            micros(percentile(other.clone(), 0.5)) / 1000.0,
            micros(percentile(other, 0.99)) / 1000.0,
            micros(percentile(same.clone(), 0.5)) / 1000.0,
            micros(percentile(same, 0.99)) / 1000.0,
        );
    });
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let github = rt.block_on(FakeGitHub::start(TOKEN));
    let serve = Serve::start(Path::new(BIN), "disk", &github.origin(), None);
    let http = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(256)
        .build()
        .expect("an HTTP client");
    rt.block_on(serve.connect_github(&http));
    let baseline = std::env::var_os("SCOUT_BENCH_BASELINE").map(PathBuf::from);
    // `SCOUT_BENCH_ONLY=policies`: the operator policies' figures alone;
    // `paced`: the paced client's.
    match std::env::var("SCOUT_BENCH_ONLY").as_deref() {
        Ok("policies") => {
            decide_in_process();
            policies_against_none(&rt, &github.origin(), &http);
            return;
        }
        Ok("paced") => {
            paced_figures(&rt, &github.origin(), &http, baseline.as_deref());
            return;
        }
        Ok(other) => panic!("SCOUT_BENCH_ONLY={other:?}: \"policies\" or \"paced\""),
        Err(_) => {}
    }
    figures(&rt, &serve, &http);
    paced_figures(&rt, &github.origin(), &http, baseline.as_deref());
    breakdown(&rt, &serve, &github.origin(), &http);
    if let Some(baseline) = &baseline {
        against_baseline(&rt, baseline, &github.origin(), &http);
    }
    catalogue_against_one(&rt, &github.origin(), &http);
    decide_in_process();
    policies_against_none(&rt, &github.origin(), &http);
    postgres_figures(&rt, &serve, &github.origin(), &http);

    let one = rt.block_on(open_session(&http, &serve.base));
    c.bench_function("serve_process_stateless_tools_call", |b| {
        b.to_async(&rt).iter(|| read_file(&http, &one))
    });
    let in_session = rt.block_on(in_mcp_session(&http, &one));
    c.bench_function("serve_process_session_tools_call", |b| {
        b.to_async(&rt).iter(|| read_file(&http, &in_session))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
