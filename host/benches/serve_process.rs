//! The real `scout-host serve` in a process of its own, driven over MCP by a
//! minimal Rust client (stateless 2026-07-28 requests, as current clients
//! send them): what a deployment pays per call.
//!
//! Printed before criterion's own group (median of the runs, never a timed
//! assertion):
//! - server CPU per `tools/call`: the `serve` process's user + system time
//!   (`/proc/PID/stat`, every thread, so the client's CPU is not counted)
//!   over a run of sequential calls, and over 64 sessions calling at once,
//!   with calls per second;
//! - p50 of a call with the disk quiet against p50 while another process
//!   writes and fsyncs a file on the same disk, in interleaved blocks, with
//!   the ratio: the trace's fsyncs share that disk.
//!
//! Run with `cargo bench -p scout-host --bench serve_process`
//! (`SCOUT_BENCH_QUICK=1` for fewer calls).

use criterion::{Criterion, criterion_group, criterion_main};
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const TOKEN: &str = "ghp_benchmark_token_0123456789";
const ADMIN: &str = "bench-admin-token-0123456789abcdef";

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

impl Serve {
    /// `serve` with its database in `database_dir` (its own scratch
    /// directory when `None`).
    fn start(github_origin: &str, database_dir: Option<&Path>) -> Serve {
        let tag = if database_dir.is_some() {
            "mem"
        } else {
            "disk"
        };
        let dir =
            std::env::temp_dir().join(format!("scout-bench-serve-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("serve.toml");
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:0\"\nrequire_review = false\ndatabase = {:?}\n\
                 [connectors.github]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n",
                database_dir
                    .map(|d| d.join(format!("scout-bench-{}.db", std::process::id())))
                    .unwrap_or_else(|| PathBuf::from("scout.db")),
                scout_tests::components::GITHUB,
                github_origin
            ),
        )
        .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_scout-host"))
            .args(["serve", "--config"])
            .arg(&config)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SCOUT_ADMIN_TOKEN", ADMIN)
            .env("SCOUT_STORE_KEY", "22".repeat(32))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start scout-host serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .trim()
            .rsplit(' ')
            .next()
            .filter(|u| u.starts_with("http://"))
            .unwrap_or_else(|| panic!("serve said {line:?}"))
            .to_string();
        let database =
            database_dir.map(|d| d.join(format!("scout-bench-{}.db", std::process::id())));
        Serve {
            child,
            base,
            dir,
            database,
        }
    }

    /// User + system CPU of the whole process (every thread), from `/proc`.
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        // Fields after the command name, which is in parentheses.
        let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        Duration::from_secs_f64(ticks as f64 / clock_ticks_per_second())
    }
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

/// One session's MCP endpoint and token.
#[derive(Clone)]
struct Session {
    url: String,
    token: String,
}

async fn admin(
    http: &reqwest::Client,
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> Value {
    let response = http
        .request(method, format!("{base}{path}"))
        .header("authorization", format!("Bearer {ADMIN}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    serde_json::from_str(&response.text().await.unwrap()).unwrap()
}

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
        url: view["mcp"]["github"].as_str().unwrap().to_string(),
        token: view["token"].as_str().unwrap().to_string(),
    }
}

/// One stateless MCP request (`tools/call` of `name`, or `tools/list`
/// when `name` is `None`); the JSON-RPC answer.
async fn mcp_request(
    http: &reqwest::Client,
    s: &Session,
    name: Option<&str>,
    args: Value,
) -> Value {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}});
    let (method, params) = match name {
        Some(name) => (
            "tools/call",
            json!({"name": name, "arguments": args, "_meta": meta}),
        ),
        None => ("tools/list", json!({"_meta": meta})),
    };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = http
        .post(&s.url)
        .header("authorization", format!("Bearer {}", s.token))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let reply = request
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
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
    let cpu0 = serve.cpu();
    for _ in 0..n {
        one().await;
    }
    micros(serve.cpu() - cpu0) / n as f64
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
    serde_json::from_str(data.unwrap_or_else(|| panic!("no JSON-RPC message in {body:?}"))).unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Writes and fsyncs a file in `dir` in a loop while `on`: another process's
/// disk traffic on the disk the trace is written to.
fn disk_load(dir: &Path, on: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let path = dir.join("load.bin");
    std::thread::spawn(move || {
        let mut file = std::fs::File::create(&path).unwrap();
        let block = vec![0x5a_u8; 256 * 1024];
        let mut syncs = 0;
        while on.load(Ordering::Relaxed) {
            file.write_all(&block).unwrap();
            file.sync_all().unwrap();
            syncs += 1;
            if syncs % 64 == 0 {
                file.set_len(0).unwrap();
                use std::io::Seek;
                file.seek(std::io::SeekFrom::Start(0)).unwrap();
            }
        }
        let _ = std::fs::remove_file(&path);
        syncs
    })
}

fn figures(rt: &tokio::runtime::Runtime, serve: &Serve, http: &reqwest::Client) {
    let quick = std::env::var_os("SCOUT_BENCH_QUICK").is_some();
    let (sequential, per_session, block, blocks) = if quick {
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
        let (cpu0, t0) = (serve.cpu(), Instant::now());
        for _ in 0..sequential {
            read_file(http, &one).await;
        }
        let (cpu, wall) = (serve.cpu() - cpu0, t0.elapsed());
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
        let (cpu0, t0) = (serve.cpu(), Instant::now());
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
            t.await.unwrap();
        }
        let calls = 64 * per_session;
        let (cpu, wall) = (serve.cpu() - cpu0, t0.elapsed());
        println!(
            "serve process, 64 sessions x {per_session} calls: {:.0} calls/s, server CPU {:.0} us per call",
            calls as f64 / wall.as_secs_f64(),
            micros(cpu) / calls as f64
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
            syncs += load.join().unwrap();
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
    let n = if std::env::var_os("SCOUT_BENCH_QUICK").is_some() {
        300
    } else {
        2000
    };
    let memory = Path::new("/dev/shm");
    let in_memory = memory.is_dir().then(|| Serve::start(origin, Some(memory)));
    rt.block_on(async {
        let one = open_session(http, &serve.base).await;
        let health = cpu_per(serve, n, || async {
            let reply = admin(http, &serve.base, reqwest::Method::GET, "/v1/health", Value::Null).await;
            assert!(reply.is_object(), "{reply}");
        })
        .await;
        let list = cpu_per(serve, n, || list_tools(http, &one)).await;
        let refused = cpu_per(serve, n, || refused_call(http, &one)).await;
        let read = cpu_per(serve, n, || read_file(http, &one)).await;
        println!(
            "serve process, server CPU per request ({n} each): GET /v1/health {health:.0} us; tools/list {list:.0} us; refused tools/call {refused:.0} us; read tools/call {read:.0} us"
        );
        if let Some(mem) = &in_memory {
            admin(
                http,
                &mem.base,
                reqwest::Method::PUT,
                "/v1/brands/acme/connections/github",
                json!({"secret": TOKEN}),
            )
            .await;
            let one = open_session(http, &mem.base).await;
            let read_mem = cpu_per(mem, n, || read_file(http, &one)).await;
            println!(
                "serve process, read tools/call with the database on tmpfs: server CPU {read_mem:.0} us per call (the disk's share: {:.0} us)",
                read - read_mem
            );
        }
    });
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let github = rt.block_on(FakeGitHub::start(TOKEN));
    let serve = Serve::start(&github.origin(), None);
    let http = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    rt.block_on(admin(
        &http,
        &serve.base,
        reqwest::Method::PUT,
        "/v1/brands/acme/connections/github",
        json!({"secret": TOKEN}),
    ));
    figures(&rt, &serve, &http);
    breakdown(&rt, &serve, &github.origin(), &http);

    let one = rt.block_on(open_session(&http, &serve.base));
    c.bench_function("serve_process_stateless_tools_call", |b| {
        b.to_async(&rt).iter(|| read_file(&http, &one))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
