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
//! - the same CPU per proxied call as clients make calls: back to back and
//!   **paced** (sequential calls with an idle gap between them, as the
//!   official Python client leaves the server idle for its own work: 1.5 ms
//!   unless `SCOUT_BENCH_GAP_US` says otherwise; the real mean gap is
//!   printed), with one session and with 32 sessions calling at once; with
//!   `SCOUT_BENCH_BASELINE=PATH` (another build's `scout-host`, e.g. the
//!   release build of the commit before a change) each shape is measured
//!   against a `serve` of that binary too, blocks of the two interleaved,
//!   with the ratio;
//! - calls per second with 64 sessions calling at once, direct and proxied,
//!   with the ratio;
//! - what an open, idle agent session holding an upstream MCP session costs
//!   in memory: `SCOUT_BENCH_IDLE_SESSIONS` (default 2000) agent sessions
//!   opened, each with an MCP session and one call (so its upstream session
//!   exists), then left idle; `VmRSS` of `serve` before and after, over the
//!   sessions (this build and the baseline, each on a fresh `serve`).
//!
//! `SCOUT_BENCH_ONLY=direct,paced,throughput,idle` runs a subset (in that
//! order). The load average is printed beside the figures: the machine is
//! shared, and only ratios within one run mean much.
//!
//! Run with `cargo bench -p scout-host --bench remote_proxy`
//! (`SCOUT_BENCH_QUICK=1` for fewer calls).

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ADMIN: &str = "bench-admin-token-0123456789abcdef";
const BIN: &str = env!("CARGO_BIN_EXE_scout-host");
const PROTOCOL: &str = "2025-06-18";

fn quick() -> bool {
    std::env::var_os("SCOUT_BENCH_QUICK").is_some()
}

/// Whether section `name` runs (`SCOUT_BENCH_ONLY`, else all).
fn runs(name: &str) -> bool {
    match std::env::var("SCOUT_BENCH_ONLY") {
        Ok(only) => only.split(',').any(|o| o.trim() == name),
        Err(_) => true,
    }
}

/// The paced client's idle gap between calls.
fn gap() -> Duration {
    let us = std::env::var("SCOUT_BENCH_GAP_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    Duration::from_micros(us)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `VmRSS` of process `pid`, in KB.
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
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
    serve_bin(Path::new(BIN), upstream)
}

fn serve_bin(bin: &Path, upstream: u16) -> Serve {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\nmax_concurrent_calls = 128\n\
             max_live_sessions_per_brand = 1000000\n\
             [connectors.everything]\nmcp = \"http://127.0.0.1:{upstream}/mcp\"\ncredential = \"none\"\nallow_private_network = true\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(bin)
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

fn direct_and_throughput(rt: &tokio::runtime::Runtime, http: &reqwest::Client, port: u16) {
    let serve = serve(port);
    let direct_url = format!("http://127.0.0.1:{port}/mcp");
    let http = http.clone();
    rt.block_on(review_echo(&http, &serve.base));
    let (proxied_url, token) = rt.block_on(session(&http, &serve.base));
    let (direct, proxied) = rt.block_on(async {
        (
            Client::connect(&http, &direct_url, None).await,
            Client::connect(&http, &proxied_url, Some(token)).await,
        )
    });
    let calls: u64 = if !runs("direct") {
        0
    } else if quick() {
        200
    } else {
        2000
    };
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
    if let Some(per_call) = cpu.checked_div(calls) {
        let (d, p) = (median(direct_wall), median(proxied_wall));
        println!(
            "remote_proxy: a read tools/call (echo), {calls} sequential: direct p50 {:?}, through the host p50 {:?} (ratio {:.2}); the host's CPU per proxied call {} us",
            d,
            p,
            p.as_secs_f64() / d.as_secs_f64(),
            per_call / 1000
        );
    }
    if !runs("throughput") {
        return;
    }

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

/// One agent session's MCP client on a thread of its own (a current-thread
/// runtime, its own connection): the paced gap is a real sleep of the
/// thread, as precise as the kernel's timer, and no other session's work
/// runs in it.
struct Worker {
    orders: std::sync::mpsc::Sender<Order>,
}

/// Calls to make: how many, the gap before each but the first, and where
/// to say the gaps slept (their total, their count).
type Order = (
    u64,
    Option<Duration>,
    std::sync::mpsc::Sender<(Duration, u64)>,
);

impl Worker {
    fn start(url: String, token: Option<String>) -> Worker {
        let (orders, received) = std::sync::mpsc::channel::<Order>();
        let (ready, started) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let http = reqwest::Client::new();
            let client = rt.block_on(Client::connect(&http, &url, token));
            // Its first call opens the upstream session: not measured.
            rt.block_on(client.echo(1));
            ready.send(()).unwrap();
            let mut id = 10;
            for (calls, gap, done) in received {
                let mut slept = Duration::ZERO;
                for n in 0..calls {
                    if let (Some(gap), true) = (gap, n > 0) {
                        let t = Instant::now();
                        std::thread::sleep(gap);
                        slept += t.elapsed();
                    }
                    id += 1;
                    rt.block_on(client.echo(id));
                }
                let gaps = if gap.is_some() {
                    calls.saturating_sub(1)
                } else {
                    0
                };
                let _ = done.send((slept, gaps));
            }
        });
        started.recv().expect("the worker connected");
        Worker { orders }
    }
}

/// Runs `calls` calls on each of `workers` at once; the host's CPU over
/// them (ns), the calls made, the gaps slept and their count.
fn block(
    workers: &[Worker],
    calls: u64,
    gap: Option<Duration>,
    pid: u32,
) -> (u64, u64, Duration, u64) {
    let (done, answers) = std::sync::mpsc::channel();
    let before = cpu_ns(pid);
    for w in workers {
        w.orders.send((calls, gap, done.clone())).unwrap();
    }
    let (mut slept, mut gaps) = (Duration::ZERO, 0);
    for _ in workers {
        let (s, g) = answers.recv().unwrap();
        slept += s;
        gaps += g;
    }
    (
        cpu_ns(pid) - before,
        calls * workers.len() as u64,
        slept,
        gaps,
    )
}

/// A `serve` of one build fronting the server, its sessions' clients ready.
struct Target {
    label: String,
    serve: Serve,
    one: Vec<Worker>,
    many: Vec<Worker>,
}

fn target(
    rt: &tokio::runtime::Runtime,
    http: &reqwest::Client,
    label: &str,
    bin: &Path,
    port: u16,
    sessions: usize,
) -> Target {
    let serve = serve_bin(bin, port);
    rt.block_on(review_echo(http, &serve.base));
    let open = |n: usize| -> Vec<Worker> {
        (0..n)
            .map(|_| {
                let (url, token) = rt.block_on(session(http, &serve.base));
                Worker::start(url, Some(token))
            })
            .collect()
    };
    let one = open(1);
    let many = open(sessions);
    Target {
        label: label.to_string(),
        serve,
        one,
        many,
    }
}

/// The host's CPU per proxied call as clients make them: back to back and
/// paced, one session and many, this build against the baseline's where
/// one is given, blocks interleaved.
fn paced(rt: &tokio::runtime::Runtime, http: &reqwest::Client, port: u16) {
    let gap = gap();
    let sessions = 32;
    let mut targets = vec![target(
        rt,
        http,
        "this build",
        Path::new(BIN),
        port,
        sessions,
    )];
    if let Some(baseline) = std::env::var_os("SCOUT_BENCH_BASELINE").map(PathBuf::from) {
        targets.push(target(rt, http, "baseline", &baseline, port, sessions));
    }
    let rounds = if quick() { 3 } else { 7 };
    let one_calls: u64 = if quick() { 100 } else { 300 };
    let many_calls: u64 = if quick() { 5 } else { 15 };
    let shapes: [(&str, bool, Option<Duration>); 4] = [
        ("1 session, back to back", false, None),
        ("1 session, paced", false, Some(gap)),
        ("32 sessions, back to back", true, None),
        ("32 sessions, paced", true, Some(gap)),
    ];
    // Per shape and target: CPU per call of each block (ns), gaps slept.
    let mut per_call: HashMap<(usize, usize), Vec<f64>> = HashMap::new();
    let mut slept: HashMap<usize, (Duration, u64)> = HashMap::new();
    for round in 0..rounds {
        for (s, (_, many, gap)) in shapes.iter().enumerate() {
            let mut order: Vec<usize> = (0..targets.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for t in order {
                let target = &targets[t];
                let (workers, calls) = if *many {
                    (&target.many, many_calls)
                } else {
                    (&target.one, one_calls)
                };
                let (cpu, made, gaps_slept, gaps) =
                    block(workers, calls, *gap, target.serve.proc.0.id());
                per_call
                    .entry((s, t))
                    .or_default()
                    .push(cpu as f64 / made as f64);
                let entry = slept.entry(s).or_default();
                entry.0 += gaps_slept;
                entry.1 += gaps;
            }
        }
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "remote_proxy: paced and back to back, the host's CPU per proxied call (median of {rounds} interleaved blocks; load {})",
        loadavg()
    );
    for (s, (shape, _, gap)) in shapes.iter().enumerate() {
        let mine = med(per_call.remove(&(s, 0)).unwrap());
        let mut line = format!(
            "remote_proxy:   {shape}: {} {:.0} us",
            targets[0].label,
            mine / 1000.0
        );
        if targets.len() > 1 {
            let base = med(per_call.remove(&(s, 1)).unwrap());
            line.push_str(&format!(
                ", {} {:.0} us (ratio {:.2})",
                targets[1].label,
                base / 1000.0,
                mine / base
            ));
        }
        if let Some(gap) = gap {
            let (total, n) = slept[&s];
            line.push_str(&format!(
                "; mean gap {:.0} us (asked {} us)",
                total.as_secs_f64() * 1e6 / n.max(1) as f64,
                gap.as_micros()
            ));
        }
        println!("{line}");
    }
}

/// Resident memory per open, idle agent session, with and without the
/// upstream session a call opens, on a fresh `serve` of `bin` each.
fn idle(rt: &tokio::runtime::Runtime, label: &str, bin: &Path, port: u16) -> Vec<(String, f64)> {
    let sessions: usize = std::env::var("SCOUT_BENCH_IDLE_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick() { 200 } else { 2000 });
    let mut figures = Vec::new();
    for call in [false, true] {
        let serve = serve_bin(bin, port);
        let http = reqwest::Client::new();
        rt.block_on(review_echo(&http, &serve.base));
        let pid = serve.proc.0.id();
        let open_one = |n: u64| {
            let http = http.clone();
            let base = serve.base.clone();
            async move {
                let (url, token) = session(&http, &base).await;
                let client = Client::connect(&http, &url, Some(token)).await;
                if call {
                    client.echo(n).await;
                }
                client
            }
        };
        // Warm: pools, caches, the database's pages.
        let warm: Vec<Client> = rt.block_on(async {
            use futures_util::StreamExt;
            futures_util::stream::iter(0..50u64)
                .map(&open_one)
                .buffer_unordered(8)
                .collect()
                .await
        });
        std::thread::sleep(Duration::from_secs(3));
        let before = rss_kb(pid);
        let opened: Vec<Client> = rt.block_on(async {
            use futures_util::StreamExt;
            futures_util::stream::iter(0..sessions as u64)
                .map(&open_one)
                .buffer_unordered(8)
                .collect()
                .await
        });
        // Settled: whatever a call leaves open for a while is closed.
        std::thread::sleep(Duration::from_secs(3));
        let after = rss_kb(pid);
        let per = (after.saturating_sub(before)) as f64 / sessions as f64;
        let what = if call {
            "MCP session and one proxied call (an upstream session)"
        } else {
            "MCP session, no call"
        };
        println!(
            "remote_proxy: idle, {label}: {sessions} sessions, each an {what}: VmRSS {before} KB -> {after} KB, {per:.1} KB a session (load {})",
            loadavg()
        );
        figures.push((what.to_string(), per));
        drop((warm, opened));
    }
    figures
}

fn report(_c: &mut Criterion) {
    println!("remote_proxy: load average {}", loadavg());
    let (_upstream, port) = everything();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::new();
    if runs("direct") || runs("throughput") {
        direct_and_throughput(&rt, &http, port);
    }
    if runs("paced") {
        paced(&rt, &http, port);
    }
    if runs("idle") {
        let mine = idle(&rt, "this build", Path::new(BIN), port);
        if let Some(baseline) = std::env::var_os("SCOUT_BENCH_BASELINE").map(PathBuf::from) {
            let base = idle(&rt, "baseline", &baseline, port);
            for ((what, m), (_, b)) in mine.iter().zip(&base) {
                println!(
                    "remote_proxy: idle, {what}: this build {m:.1} KB, baseline {b:.1} KB a session"
                );
            }
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = report
}
criterion_main!(benches);
