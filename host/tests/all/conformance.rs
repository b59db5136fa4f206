//! The MCP project's own conformance suite (`@modelcontextprotocol/conformance`,
//! pinned and provisioned by `scout_tests::conformance`) run against the host
//! on both of its sides, so the protocol is checked by a party this project
//! did not choose.
//!
//! As a server: every server scenario against a real `serve` session
//! endpoint, through `tests/conformance/proxy.mjs` (the suite cannot send a
//! header; the proxy adds the session's bearer token), a fresh session per
//! scenario (the boundary pauses a session after a few refusals, which would
//! let one scenario decide the next). The endpoint is the host fronting
//! `tests/conformance/upstream.mjs`, a remote server with every tool,
//! resource and prompt the scenarios name, reviewed by the operator; the
//! scenarios that need no upstream also run against the host's own GitHub
//! component. Every scenario `conformance list` names runs, the suite's
//! pending ones too (`json-schema-2020-12`, `server-sse-polling`; the latter
//! checks nothing of the host, which answers a call inside a session as one
//! JSON message, so its SSE polling checks do not apply).
//!
//! As a client: every client scenario with `tests/conformance/adapter.py` as
//! the suite's client command: it does what an operator and a person do
//! (config, `serve`, Connect for authorization scenarios, review, a session,
//! calls), so the host's remote client is what the suite's servers judge.
//!
//! Both runs pass `--expected-failures tests/conformance/expected-failures.yaml`:
//! a listed scenario that fails is expected, a listed one that passes fails
//! the run (the list cannot rot), and any other failure fails it. The failure
//! message is every scenario's verdict and the suite's output for each one
//! that did not pass.

use super::crash_safety::{Admin, GITHUB_TOKEN};
use super::remote_mcp::{listed, review};
use crate::common;
use reqwest::Method;
use scout_tests::ConformanceSuite;
use scout_tests::fake_github::FakeGitHub;
use std::ffi::OsString;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Server scenarios that need no upstream tool, resource or prompt: also
/// run against the host's own component connector.
const NO_UPSTREAM: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "dns-rebinding-protection",
];

/// Suite runs at once: the machine has two cores, and a client scenario
/// starts a `serve` of its own.
const AT_ONCE: usize = 2;

/// The bound of one suite run; only a hang reaches it (the suite bounds a
/// client command at `--timeout`).
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The folder of the harness's scripts and expected failures.
fn harness() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance")
}

fn expected_failures() -> PathBuf {
    harness().join("expected-failures.yaml")
}

/// A Node process of the harness's (the upstream server, the proxy),
/// killed when dropped.
struct NodeProcess {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl NodeProcess {
    /// `node SCRIPT ARGS` with the suite's Node, once its first line says
    /// `says PORT`: the process and the port.
    fn start(suite: &ConformanceSuite, script: &str, args: &[&str], says: &str) -> (Self, u16) {
        let mut child = Command::new(&suite.node)
            .arg(harness().join(script))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {script} with {}: {e}", suite.node.display()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("its stderr");
        let kept = stderr.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        let mut first = String::new();
        let stdout = child.stdout.take().expect("its stdout");
        let mut lines = std::io::BufReader::new(stdout);
        let _ = lines.read_line(&mut first);
        // Drained for the process's whole life, so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines.lines() {});
        let process = NodeProcess { child, stderr };
        let port = first
            .trim()
            .strip_prefix(says)
            .and_then(|port| port.trim().parse().ok())
            .unwrap_or_else(|| {
                std::thread::sleep(Duration::from_millis(200));
                panic!(
                    "{script} did not say `{says} PORT` but {first:?}:\n{}",
                    process.stderr.lock().unwrap_or_else(|e| e.into_inner())
                )
            });
        (process, port)
    }
}

/// The scenario names `conformance list --server` (or `--client`) gives.
fn scenarios(suite: &ConformanceSuite, side: &str) -> Vec<String> {
    let out = Command::new(&suite.node)
        .arg(&suite.cli)
        .args(["list", side])
        .output()
        .expect("conformance list");
    assert!(out.status.success(), "conformance list {side}: {out:?}");
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(names.len() > 10, "conformance list {side}: {out:?}");
    names
}

/// One suite run: which scenario, against what, its exit code and output.
struct Outcome {
    scenario: String,
    against: String,
    code: Option<i32>,
    output: String,
}

impl Outcome {
    /// What the suite's baseline check said of the scenario.
    fn verdict(&self) -> &'static str {
        if self.output.contains("Stale baseline entries") {
            "STALE: passes, remove it from expected-failures.yaml"
        } else if self.output.contains("Unexpected failures") {
            "FAILED"
        } else if self.output.contains("Expected failures (in baseline)") {
            "expected failure"
        } else if self.code == Some(0) {
            "pass"
        } else {
            "FAILED (the suite did not finish)"
        }
    }
}

/// `node cli ARGS` with `env`, its output kept in `out_dir/LABEL.log`,
/// killed at [`RUN_LIMIT`].
fn run_suite(
    suite: &ConformanceSuite,
    args: &[OsString],
    env: &[(&str, &str)],
    log: &Path,
) -> (Option<i32>, String) {
    let file = std::fs::File::create(log).expect("a log file");
    let mut child = Command::new(&suite.node)
        .arg(&suite.cli)
        .args(args)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("the log file"))
        .stderr(file)
        .spawn()
        .expect("start the conformance suite");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the suite's status") {
            break Some(status);
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = strip_ansi(&std::fs::read_to_string(log).unwrap_or_default());
    (status.and_then(|s| s.code()), output)
}

/// The suite colours its output whatever `NO_COLOR` says.
fn strip_ansi(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

/// Every verdict, then the suite's output for each scenario that did not
/// pass as expected; panics with it when any run failed.
fn judge(side: &str, mut outcomes: Vec<Outcome>) {
    outcomes.sort_by(|a, b| (&a.scenario, &a.against).cmp(&(&b.scenario, &b.against)));
    let mut summary = format!("conformance {side} scenarios:\n");
    for o in &outcomes {
        summary.push_str(&format!(
            "  {:<45} {:<12} {}\n",
            o.scenario,
            o.against,
            o.verdict()
        ));
    }
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.code != Some(0)).collect();
    eprintln!("{summary}");
    if failed.is_empty() {
        return;
    }
    for o in &failed {
        // The suite's own results of the scenario: what it checked and why it failed.
        let lines: Vec<&str> = o.output.lines().collect();
        let interesting: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| {
                l.contains("FAILURE")
                    || l.contains("WARNING")
                    || l.contains("Error:")
                    || l.contains("[adapter] FAILED")
                    || l.trim_start().starts_with('✗')
            })
            .take(40)
            .collect();
        summary.push_str(&format!(
            "\n--- {} against {}: {} (exit {:?})\n{}\n",
            o.scenario,
            o.against,
            o.verdict(),
            o.code,
            interesting.join("\n")
        ));
    }
    panic!(
        "{} of {} conformance {side} runs failed (a listed scenario that passes must leave tests/conformance/expected-failures.yaml)\n{summary}",
        failed.len(),
        outcomes.len()
    );
}

/// Runs `work` on [`AT_ONCE`] threads, each item once.
fn at_once<T: Send, R: Send>(items: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let queue = Mutex::new(items);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..AT_ONCE {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
                    let Some(item) = next else { break };
                    let result = work(item);
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(result);
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suites_server_scenarios_pass_against_session_endpoints() {
    let suite = tokio::task::spawn_blocking(scout_tests::conformance)
        .await
        .unwrap();
    let modules = suite.node_modules.display().to_string();
    let (_upstream, upstream_port) =
        NodeProcess::start(&suite, "upstream.mjs", &[&modules], "upstream on ");
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!(
            "{}\n[connectors.conformance]\nmcp = \"http://127.0.0.1:{upstream_port}/mcp\"\ncredential = \"none\"\nallow_private_network = true\n",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    );
    let serve = common::serve(&config).start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    // The operator's part: GitHub connected and reviewed, every candidate
    // of the fronted server reviewed as a read.
    admin.set_up().await;
    for candidate in listed(&admin, "conformance").await {
        review(&admin, "conformance", &candidate, "read").await;
    }
    // Its resources, templates and prompts too.
    super::remote_content::review_all(&admin, "conformance").await;
    let (_proxy, proxy_port) = NodeProcess::start(&suite, "proxy.mjs", &[&serve.base], "proxy on ");

    let mut runs = Vec::new();
    for scenario in scenarios(&suite, "--server") {
        if NO_UPSTREAM.contains(&scenario.as_str()) {
            runs.push((scenario.clone(), "github"));
        }
        runs.push((scenario, "conformance"));
    }
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let runtime = tokio::runtime::Handle::current();
    let outcomes = tokio::task::spawn_blocking(move || {
        at_once(runs, |(scenario, connector)| {
            // A fresh session per scenario, ended after it.
            let view = runtime.block_on(admin.session());
            let token = view["token"].as_str().expect("a session token");
            let endpoint = view["mcp"][connector]
                .as_str()
                .unwrap_or_else(|| panic!("no {connector} endpoint: {view}"));
            let url = endpoint.replacen(
                &admin.base,
                &format!("http://127.0.0.1:{proxy_port}/{token}"),
                1,
            );
            let label = format!("server-{scenario}-{connector}");
            let args: Vec<OsString> = vec![
                "server".into(),
                "--url".into(),
                url.into(),
                "--scenario".into(),
                scenario.clone().into(),
                "--expected-failures".into(),
                expected_failures().into(),
                "-o".into(),
                results.join(&label).into(),
            ];
            let (code, output) =
                run_suite(&suite, &args, &[], &results.join(format!("{label}.log")));
            let id = view["id"].as_str().expect("a session id");
            runtime.block_on(admin.request(Method::DELETE, &format!("/v1/sessions/{id}"), None));
            Outcome {
                scenario,
                against: connector.to_string(),
                code,
                output,
            }
        })
    })
    .await
    .unwrap();
    judge("server", outcomes);
}

#[test]
fn the_suites_client_scenarios_pass_with_the_host_as_the_client() {
    let suite = scout_tests::conformance();
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let adapter = harness()
        .join("adapter.py")
        .canonicalize()
        .expect("the adapter");
    // The suite splits the command on spaces and appends the server's URL.
    let command = format!("python3 {}", adapter.display());
    assert!(!adapter.display().to_string().contains(' '), "{command}");
    let outcomes = at_once(scenarios(&suite, "--client"), |scenario| {
        let label = format!("client-{}", scenario.replace('/', "-"));
        let args: Vec<OsString> = vec![
            "client".into(),
            "--command".into(),
            command.clone().into(),
            "--scenario".into(),
            scenario.clone().into(),
            "--timeout".into(),
            "60000".into(),
            "--expected-failures".into(),
            expected_failures().into(),
            "-o".into(),
            results.join(&label).into(),
        ];
        let (code, output) = run_suite(
            &suite,
            &args,
            &[("SCOUT_HOST", common::SCOUT_HOST), ("SCOUT_LOG", "warn")],
            &results.join(format!("{label}.log")),
        );
        Outcome {
            scenario,
            against: "adapter".to_string(),
            code,
            output,
        }
    });
    judge("client", outcomes);
}
