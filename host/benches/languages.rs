//! Issue 54's measurements: what a connector written in TypeScript
//! (componentize-js) or Python (componentize-py) costs against the Rust
//! connector of the same tools, in the same process and the same run.
//!
//! The three components are the hello guests (`greet`: one GET; `now`),
//! built from source here: `tests/guests/hello` by the tests' build script,
//! `tests/guests-js/hello` and `tests/guests-py/hello` by the pinned
//! componentizers, their manifests embedded from their WIT as `scout-host
//! manifest` does. Each is loaded and called through the host's real
//! `Runtime` with an `http` grant to a loopback upstream that runs on a
//! thread of its own, so its CPU is left out of the server's.
//!
//! Python is measured twice: built with `--stub-wasi` (every WASI import a
//! trapping stub, the clocks and random seed fixed at build time) and
//! built by default with its sockets removed (`scout_build::without_sockets`:
//! the host's clocks and randomness at each call), "Python+clocks".
//!
//! Per language, three runs interleaved (Rust, TypeScript, Python, Rust,
//! ...), each ratio against the Rust figure of the same run:
//! - compile time, cold (a fresh cache directory: compile and write the
//!   cache) and cached (the compile cache's hit), wall and CPU;
//! - server CPU per read call (`greet`, one GET) and per refused call (a
//!   name with a digit, refused by the guest, nothing sent), the process's
//!   CPU over a run of calls, with the wall-time median and the part of it
//!   spent instantiating; and CPU per fresh store + instantiation alone;
//! - RSS per live instance: N `greet` calls held open at once by the
//!   upstream, (RSS while held - RSS before) / N (each call's store,
//!   instance and request in flight);
//! - the component's size in bytes.
//!
//! `SCOUT_BENCH_QUICK=1` makes one short run.

use scout_host::{
    Capabilities, HttpCapability, HttpConfig, LoadedComponent, Runtime, RuntimeConfig,
};
use scout_tests::componentizers::{build_js, build_py, guest_dir};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The name of the upstream's thread, whose CPU is not the server's.
const UPSTREAM_THREAD: &str = "bench-upstream";

/// How long the bench runs each kind of call, and how many at once.
struct Plan {
    runs: usize,
    call_budget: Duration,
    min_calls: usize,
    held: usize,
}

impl Plan {
    fn from_env() -> Plan {
        if std::env::var_os("SCOUT_BENCH_QUICK").is_some() {
            Plan {
                runs: 1,
                call_budget: Duration::from_millis(300),
                min_calls: 20,
                held: 4,
            }
        } else {
            Plan {
                runs: 3,
                call_budget: Duration::from_secs(2),
                min_calls: 200,
                held: 16,
            }
        }
    }
}

/// One language's component, its manifest embedded.
struct Subject {
    language: &'static str,
    path: PathBuf,
    /// The tools' prefix: the WIT package's name.
    prefix: &'static str,
}

impl Subject {
    fn tool(&self, name: &str) -> String {
        format!("{}_{name}", self.prefix)
    }
}

/// Builds the TypeScript and Python hello guests into `dir` and embeds
/// their manifests; the Rust one is the tests' build.
fn subjects(dir: &Path) -> Result<Vec<Subject>, String> {
    let js = dir.join("hello-js.wasm");
    let started = Instant::now();
    // As the languages test builds it: stdio, randomness and clocks on, its
    // own network off.
    build_js("hello", "hello-js", &["http", "fetch-event"], &js)?;
    println!(
        "built hello-js with componentize-js in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let py = dir.join("hello-py.wasm");
    let started = Instant::now();
    // `--stub-wasi`: what the tests built before `without_sockets`.
    build_py("hello", "hello-py", true, &py)?;
    println!(
        "built hello-py with componentize-py --stub-wasi in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // The default build, its sockets satisfied inside it by trapping stubs
    // (`scout_build::without_sockets`): real clocks and randomness.
    let py_clocks = dir.join("hello-py-clocks.wasm");
    let started = Instant::now();
    build_py("hello", "hello-py", false, &py_clocks)?;
    let built = std::fs::read(&py_clocks).map_err(|e| format!("{}: {e}", py_clocks.display()))?;
    let without = scout_build::without_sockets(&built)?;
    std::fs::write(&py_clocks, without).map_err(|e| format!("{}: {e}", py_clocks.display()))?;
    println!(
        "built hello-py with componentize-py and without_sockets in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(vec![
        Subject {
            language: "Rust",
            path: PathBuf::from(scout_tests::components::HELLO),
            prefix: "hello",
        },
        Subject {
            language: "TypeScript",
            path: embed("js", "hello-js", &js, dir, "js")?,
            prefix: "hello_js",
        },
        Subject {
            language: "Python",
            path: embed("py", "hello-py", &py, dir, "stub-wasi")?,
            prefix: "hello_py",
        },
        Subject {
            language: "Python+clocks",
            path: embed("py", "hello-py", &py_clocks, dir, "clocks")?,
            prefix: "hello_py",
        },
    ])
}

/// What `scout-host manifest` does: the manifest made from the guest's WIT,
/// embedded in the component the componentizer built.
fn embed(
    language: &str,
    world: &str,
    built: &Path,
    dir: &Path,
    variant: &str,
) -> Result<PathBuf, String> {
    let wit = guest_dir(language, "hello").join("wit");
    let manifest = scout_manifest::Manifest::from_wit(&wit, Some(world))
        .map_err(|e| format!("the manifest of {}: {e}", wit.display()))?;
    let bytes = std::fs::read(built).map_err(|e| format!("{}: {e}", built.display()))?;
    let embedded = scout_build::with_custom_section(
        &bytes,
        scout_manifest::SECTION,
        manifest.to_json().as_bytes(),
    )?;
    let out = dir.join(format!("{world}-{variant}.connector.wasm"));
    std::fs::write(&out, embedded).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(out)
}

/// The loopback upstream: `/hello/hold` waits until [`Upstream::release`],
/// anything else answers 200 `ok`. Every request is counted.
struct Upstream {
    origin: String,
    requests: Arc<AtomicU64>,
    holding: Arc<AtomicU64>,
    release: tokio::sync::watch::Sender<u64>,
}

impl Upstream {
    /// Starts on its own thread ([`UPSTREAM_THREAD`]) and runtime.
    fn start() -> Upstream {
        let requests = Arc::new(AtomicU64::new(0));
        let holding = Arc::new(AtomicU64::new(0));
        let (release, released) = tokio::sync::watch::channel(0u64);
        let (origin_tx, origin_rx) = std::sync::mpsc::channel();
        let state = (requests.clone(), holding.clone(), released);
        std::thread::Builder::new()
            .name(UPSTREAM_THREAD.to_string())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the upstream's runtime");
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
                        .await
                        .expect("bind 127.0.0.1:0");
                    let origin = format!("http://{}", listener.local_addr().unwrap());
                    origin_tx.send(origin).unwrap();
                    let app = axum::Router::new().fallback(answer).with_state(state);
                    let _ = axum::serve(listener, app).await;
                });
            })
            .expect("the upstream's thread");
        Upstream {
            origin: origin_rx.recv().expect("the upstream's origin"),
            requests,
            holding,
            release,
        }
    }

    fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Answers every request held so far.
    fn release(&self) {
        self.release.send_modify(|generation| *generation += 1);
    }
}

type UpstreamState = (
    Arc<AtomicU64>,
    Arc<AtomicU64>,
    tokio::sync::watch::Receiver<u64>,
);

async fn answer(
    axum::extract::State((requests, holding, mut released)): axum::extract::State<UpstreamState>,
    uri: axum::http::Uri,
) -> &'static str {
    requests.fetch_add(1, Ordering::SeqCst);
    if uri.path() == "/hello/hold" {
        let generation = *released.borrow_and_update();
        holding.fetch_add(1, Ordering::SeqCst);
        let _ = released.wait_for(|g| *g > generation).await;
        holding.fetch_sub(1, Ordering::SeqCst);
    }
    "ok"
}

/// CPU time of this process's threads, the upstream's left out.
struct CpuMark {
    /// Nanoseconds on a CPU of each server thread (`schedstat`).
    threads: HashMap<u64, u64>,
    /// The upstream thread's nanoseconds.
    upstream: u64,
    /// The whole process's user + system time (`/proc/self/stat`), which
    /// counts exited threads too, to 1/CLK_TCK.
    process: Duration,
    /// The process's minor page faults (a fresh instance's first touch of
    /// each page of its memory is one).
    minor_faults: u64,
}

fn cpu_mark() -> CpuMark {
    let mut threads = HashMap::new();
    let mut upstream = 0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            // A thread that has just exited has no files any more.
            let Some(ns) = std::fs::read_to_string(task.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split(' ').next()?.parse::<u64>().ok())
            else {
                continue;
            };
            let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if name.trim_end() == UPSTREAM_THREAD {
                upstream += ns;
            } else {
                threads.insert(tid, ns);
            }
        }
    }
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
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
        upstream,
        minor_faults: fields[7].parse().expect("minflt"),
        process: Duration::from_secs_f64(ticks as f64 / clock_ticks_per_second()),
    }
}

/// The server's CPU since `mark`: its threads' nanoseconds when every
/// thread of `mark` is still there, else the process's ticks less the
/// upstream's nanoseconds.
fn cpu_since(mark: &CpuMark) -> Duration {
    let now = cpu_mark();
    if mark.threads.keys().all(|t| now.threads.contains_key(t)) {
        let ns: u64 = now
            .threads
            .iter()
            .map(|(t, ns)| ns.saturating_sub(mark.threads.get(t).copied().unwrap_or(0)))
            .sum();
        Duration::from_nanos(ns)
    } else {
        now.process
            .saturating_sub(mark.process)
            .saturating_sub(Duration::from_nanos(now.upstream - mark.upstream))
    }
}

fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// This process's resident set and its private pages, in bytes
/// (`/proc/self/smaps_rollup`).
fn memory() -> (u64, u64) {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let field = |name: &str| -> u64 {
        rollup
            .lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>()
            * 1024
    };
    (
        field("Rss:"),
        field("Private_Clean:") + field("Private_Dirty:"),
    )
}

/// A run of one kind of call: CPU and wall time per call.
#[derive(Clone, Copy, Default)]
struct PerCall {
    calls: usize,
    cpu_us: f64,
    wall_median_us: f64,
    /// The median of the time to a running instance, within the call.
    instantiate_median_us: f64,
    /// Minor page faults per call.
    faults: f64,
}

/// What one run measured of one language.
#[derive(Clone, Copy, Default)]
struct Figures {
    size: u64,
    cold_wall_ms: f64,
    cold_cpu_ms: f64,
    cached_wall_ms: f64,
    cached_cpu_ms: f64,
    read: PerCall,
    refused: PerCall,
    instantiate: PerCall,
    rss_per_instance: f64,
    private_per_instance: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// What a call must answer.
#[derive(Clone, Copy)]
enum Expect {
    Ok,
    InvalidInput,
}

/// Calls `tool` with `args` for at least the plan's budget and calls, after
/// a few unmeasured ones.
async fn per_call(
    plan: &Plan,
    loaded: &LoadedComponent,
    tool: &str,
    args: &Value,
    caps: &Capabilities,
    expect: Expect,
) -> PerCall {
    let one = || async {
        let outcome = loaded.call(tool, args, caps).await.expect("the call runs");
        match expect {
            Expect::Ok => assert_eq!(outcome.output.ok(), Some(&json!("ok")), "{tool}"),
            Expect::InvalidInput => assert!(
                outcome
                    .output
                    .err()
                    .is_some_and(|e| e.get("invalid-input").is_some()),
                "{tool}: {:?}",
                outcome.output
            ),
        }
        outcome.instantiate_micros
    };
    for _ in 0..5 {
        one().await;
    }
    let (mut walls, mut instantiations) = (Vec::new(), Vec::new());
    let mark = cpu_mark();
    let started = Instant::now();
    while started.elapsed() < plan.call_budget || walls.len() < plan.min_calls {
        let t = Instant::now();
        let instantiated = one().await;
        walls.push(t.elapsed().as_secs_f64() * 1e6);
        instantiations.push(instantiated as f64);
    }
    let cpu = cpu_since(&mark);
    let faults = (cpu_mark().minor_faults - mark.minor_faults) as f64 / walls.len() as f64;
    PerCall {
        calls: walls.len(),
        cpu_us: cpu.as_secs_f64() * 1e6 / walls.len() as f64,
        wall_median_us: median(walls),
        instantiate_median_us: median(instantiations),
        faults,
    }
}

/// A fresh store and instantiation alone, what every call pays first.
async fn instantiate_only(plan: &Plan, loaded: &LoadedComponent) -> PerCall {
    for _ in 0..5 {
        loaded.instantiate_fresh().await.expect("instantiates");
    }
    let mut walls = Vec::new();
    let mark = cpu_mark();
    let started = Instant::now();
    while started.elapsed() < plan.call_budget / 2 || walls.len() < plan.min_calls {
        let t = Instant::now();
        loaded.instantiate_fresh().await.expect("instantiates");
        walls.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let cpu = cpu_since(&mark);
    let faults = (cpu_mark().minor_faults - mark.minor_faults) as f64 / walls.len() as f64;
    let wall_median_us = median(walls.clone());
    PerCall {
        calls: walls.len(),
        cpu_us: cpu.as_secs_f64() * 1e6 / walls.len() as f64,
        wall_median_us,
        instantiate_median_us: wall_median_us,
        faults,
    }
}

/// RSS and private bytes per live instance: `n` `greet` calls held open at
/// once by the upstream, against the process before they started.
async fn memory_per_instance(
    loaded: Arc<LoadedComponent>,
    tool: String,
    caps: &Capabilities,
    upstream: &Upstream,
    n: usize,
) -> (f64, f64) {
    let (rss_before, private_before) = memory();
    let calls: Vec<_> = (0..n)
        .map(|_| {
            let (loaded, caps, tool) = (loaded.clone(), caps.clone(), tool.clone());
            tokio::spawn(async move {
                loaded
                    .call(&tool, &json!({"name": "hold"}), &caps)
                    .await
                    .expect("the held call runs")
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while upstream.holding.load(Ordering::SeqCst) < n as u64 {
        assert!(
            Instant::now() < deadline,
            "the held calls did not all start"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (rss_held, private_held) = memory();
    upstream.release();
    for call in calls {
        let outcome = call.await.expect("the held call's task");
        assert_eq!(outcome.output.ok(), Some(&json!("ok")));
    }
    (
        (rss_held as f64 - rss_before as f64) / n as f64,
        (private_held as f64 - private_before as f64) / n as f64,
    )
}

/// One run of one language: compile cold and cached, calls, memory.
async fn measure(plan: &Plan, subject: &Subject, upstream: &Upstream, scratch: &Path) -> Figures {
    let cache = scratch.join(format!("cache-{}", subject.language));
    let _ = std::fs::remove_dir_all(&cache);
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.clone()),
        // Room for the held calls of the largest component (3 slots each).
        max_concurrent_calls: 64,
        ..Default::default()
    })
    .expect("a runtime");
    let load = || {
        let mark = cpu_mark();
        let t = Instant::now();
        let loaded = runtime.load_file(&subject.path).expect("loads");
        let wall = t.elapsed();
        (loaded, wall, cpu_since(&mark))
    };
    let (_, cold_wall, cold_cpu) = load();
    let (loaded, cached_wall, cached_cpu) = load();
    let _ = std::fs::remove_dir_all(&cache);
    let loaded = Arc::new(loaded);
    let caps = Capabilities::with_http(
        HttpCapability::new(HttpConfig::new(upstream.origin.clone()).allow_private_network(true))
            .expect("the http grant"),
    );
    // RSS first, while no call has left a slot waiting for its reset; one
    // instantiation before it, so what every instance shares is in place.
    loaded.instantiate_fresh().await.expect("instantiates");
    let (rss_per_instance, private_per_instance) = memory_per_instance(
        loaded.clone(),
        subject.tool("greet"),
        &caps,
        upstream,
        plan.held,
    )
    .await;

    let greet = subject.tool("greet");
    let read = per_call(
        plan,
        &loaded,
        &greet,
        &json!({"name": "ada"}),
        &caps,
        Expect::Ok,
    )
    .await;
    let sent = upstream.requests();
    let refused = per_call(
        plan,
        &loaded,
        &greet,
        &json!({"name": "ada1"}),
        &caps,
        Expect::InvalidInput,
    )
    .await;
    assert_eq!(upstream.requests(), sent, "a refused call sent nothing");
    let instantiate = instantiate_only(plan, &loaded).await;
    Figures {
        size: std::fs::metadata(&subject.path).map_or(0, |m| m.len()),
        cold_wall_ms: cold_wall.as_secs_f64() * 1e3,
        cold_cpu_ms: cold_cpu.as_secs_f64() * 1e3,
        cached_wall_ms: cached_wall.as_secs_f64() * 1e3,
        cached_cpu_ms: cached_cpu.as_secs_f64() * 1e3,
        read,
        refused,
        instantiate,
        rss_per_instance,
        private_per_instance,
    }
}

/// The rows of the table: a name and how to read the figure.
type Row = (&'static str, fn(&Figures) -> f64);

const ROWS: &[Row] = &[
    ("read: server CPU per call (us)", |f| f.read.cpu_us),
    ("read: wall median (us)", |f| f.read.wall_median_us),
    ("read: instantiate median (us)", |f| {
        f.read.instantiate_median_us
    }),
    ("read: minor page faults per call", |f| f.read.faults),
    ("refused: server CPU per call (us)", |f| f.refused.cpu_us),
    ("refused: wall median (us)", |f| f.refused.wall_median_us),
    ("refused: minor page faults per call", |f| f.refused.faults),
    ("fresh store + instantiate: CPU (us)", |f| {
        f.instantiate.cpu_us
    }),
    ("fresh store + instantiate: page faults", |f| {
        f.instantiate.faults
    }),
    ("compile cold: wall (ms)", |f| f.cold_wall_ms),
    ("compile cold: CPU (ms)", |f| f.cold_cpu_ms),
    ("compile cached: wall (ms)", |f| f.cached_wall_ms),
    ("compile cached: CPU (ms)", |f| f.cached_cpu_ms),
    ("RSS per live instance (KiB)", |f| {
        f.rss_per_instance / 1024.0
    }),
    ("private per live instance (KiB)", |f| {
        f.private_per_instance / 1024.0
    }),
    ("component size (bytes)", |f| f.size as f64),
];

fn print_run(run: usize, subjects: &[Subject], figures: &[Figures]) {
    println!("\nrun {run}");
    let mut header = format!("{:<38}", "");
    for subject in subjects {
        header.push_str(&format!("{:>14}", subject.language));
    }
    for subject in &subjects[1..] {
        header.push_str(&format!(
            "{:>14}",
            format!("{}/Rust", short(subject.language))
        ));
    }
    println!("{header}");
    for (name, figure) in ROWS {
        let mut line = format!("{name:<38}");
        for f in figures {
            line.push_str(&format!("{:>14.1}", figure(f)));
        }
        let rust = figure(&figures[0]);
        for f in &figures[1..] {
            line.push_str(&ratio(figure(f), rust));
        }
        println!("{line}");
    }
    let calls: Vec<String> = subjects
        .iter()
        .zip(figures)
        .map(|(s, f)| {
            format!(
                "{} {} read, {} refused, {} instantiations",
                s.language, f.read.calls, f.refused.calls, f.instantiate.calls
            )
        })
        .collect();
    println!("calls measured: {}", calls.join("; "));
}

/// `figure / rust` as a column, `-` when the Rust figure is zero.
fn ratio(figure: f64, rust: f64) -> String {
    if rust > 0.0 {
        format!("{:>13.2}x", figure / rust)
    } else {
        format!("{:>14}", "-")
    }
}

fn short(language: &str) -> &str {
    match language {
        "TypeScript" => "TS",
        "Python" => "Py",
        "Python+clocks" => "Py+c",
        other => other,
    }
}

/// The median over the runs of each figure and of each ratio to the Rust
/// figure of the same run.
fn print_medians(subjects: &[Subject], runs: &[Vec<Figures>]) {
    println!(
        "\nmedians of {} runs (ratios: the median of each run's ratio)",
        runs.len()
    );
    let mut header = format!("{:<38}", "");
    for subject in subjects {
        header.push_str(&format!("{:>14}", subject.language));
    }
    for subject in &subjects[1..] {
        header.push_str(&format!(
            "{:>14}",
            format!("{}/Rust", short(subject.language))
        ));
    }
    println!("{header}");
    for (name, figure) in ROWS {
        let mut line = format!("{name:<38}");
        for i in 0..subjects.len() {
            line.push_str(&format!(
                "{:>14.1}",
                median(runs.iter().map(|r| figure(&r[i])).collect())
            ));
        }
        for i in 1..subjects.len() {
            let ratios: Vec<f64> = runs
                .iter()
                .filter(|r| figure(&r[0]) > 0.0)
                .map(|r| figure(&r[i]) / figure(&r[0]))
                .collect();
            line.push_str(&if ratios.is_empty() {
                format!("{:>14}", "-")
            } else {
                format!("{:>13.2}x", median(ratios))
            });
        }
        println!("{line}");
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter or `--list` runs nothing.
    if std::env::args().skip(1).any(|a| a == "--list") {
        return;
    }
    let plan = Plan::from_env();
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bench-languages-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("a scratch directory");
    let subjects = subjects(&scratch).unwrap_or_else(|e| panic!("{e}"));
    for subject in &subjects {
        let size = std::fs::metadata(&subject.path).map_or(0, |m| m.len());
        println!(
            "{}: {} ({size} bytes)",
            subject.language,
            subject.path.display()
        );
    }
    let upstream = Upstream::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", load.trim());
    let mut runs = Vec::new();
    for run in 1..=plan.runs {
        let figures: Vec<Figures> = subjects
            .iter()
            .map(|subject| rt.block_on(measure(&plan, subject, &upstream, &scratch)))
            .collect();
        print_run(run, &subjects, &figures);
        runs.push(figures);
    }
    print_medians(&subjects, &runs);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at the end: {}", load.trim());
    let _ = std::fs::remove_dir_all(&scratch);
}
