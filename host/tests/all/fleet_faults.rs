//! Issue 34 item 4: three real `serve` processes on one real PostgreSQL
//! behind a round-robin balancer this test starts (a TCP proxy, one new
//! connection per request, so no affinity of any kind), sessions making
//! reads, approved writes and billed calls, while each host is restarted
//! in turn (SIGTERM, then started again), one is killed (SIGKILL) and
//! PostgreSQL is restarted once. Afterwards: no session ended, every call
//! answered or cut with its host (and every `requested` in the trace has
//! its end), no effect sent twice, the ledger within what was allowed and
//! each run within its allowance.
//!
//! Short form by default; the long form is the same test with more:
//! `SCOUT_SOAK_SESSIONS=64 SCOUT_SOAK_CALLS=60 SCOUT_SOAK_FAULT_GAP_MS=1500
//! cargo test -p scout-host --test all fleet_faults -- --nocapture`
//! (figures on stderr). A client sends a call the fleet refused as not run
//! (`host_shutdown`, `lease_not_held`, `unrecorded`) again after 100 ms,
//! as the refusal tells it to; the figures count those refusals.

use super::crash_safety::{Admin, GITHUB_TOKEN, Mcp, ok_text, wait_for};
use crate::common;
use reqwest::Method;
use scout_host::store::{TraceEvent, TraceState};
use scout_tests::ServeProcess;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A round-robin TCP balancer on loopback: each connection goes to the
/// next backend that accepts it.
struct Balancer {
    address: String,
    backends: Arc<parking_lot::Mutex<Vec<String>>>,
    _task: tokio::task::JoinHandle<()>,
}

impl Balancer {
    async fn start() -> Balancer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let backends: Arc<parking_lot::Mutex<Vec<String>>> = Default::default();
        let next = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let backends = backends.clone();
            async move {
                loop {
                    let Ok((mut client, _)) = listener.accept().await else {
                        return;
                    };
                    let backends = backends.lock().clone();
                    let start = next.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(async move {
                        for i in 0..backends.len() {
                            let to = &backends[(start + i) % backends.len()];
                            if let Ok(mut upstream) = tokio::net::TcpStream::connect(to).await {
                                // As a proxy does: small writes go out at once.
                                let _ = client.set_nodelay(true);
                                let _ = upstream.set_nodelay(true);
                                let _ =
                                    tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                                return;
                            }
                        }
                    });
                }
            }
        });
        Balancer {
            address,
            backends,
            _task: task,
        }
    }

    fn set(&self, bases: &[String]) {
        *self.backends.lock() = bases
            .iter()
            .map(|b| b.trim_start_matches("http://").to_string())
            .collect();
    }
}

fn config(dir: &std::path::Path, balancer: &str, github: &str, billed: &str) -> std::path::PathBuf {
    let github_wasm = std::path::Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .unwrap();
    let billed_wasm = std::path::Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .unwrap();
    let path = dir.join("fleet.toml");
    std::fs::write(
        &path,
        format!(
            "listen = \"127.0.0.1:0\"\npublic_url = \"http://{balancer}\"\nallowed_hosts = [\"{balancer}\"]\n\
             require_review = false\nshutdown_grace_secs = 5\n\n\
             [store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\nlease_secs = 2\n\n\
             [connectors.github]\ncomponent = {:?}\norigin = {github:?}\nallow_private_network = true\n\n\
             [connectors.capabilities]\ncomponent = {:?}\norigin = {billed:?}\nallow_private_network = true\n\
             [connectors.capabilities.person_allowance]\nper_run_credits = {PER_RUN}\nper_day_credits = 1000000\nper_call_threshold_credits = 5\n",
            github_wasm.display().to_string(),
            billed_wasm.display().to_string(),
        ),
    )
    .unwrap();
    path
}

/// Credits one session's run may spend: more than its billed calls, so
/// the run's own figure is checked, not reached.
const PER_RUN: usize = 1000;

/// What one call of a session's client came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Came {
    /// A JSON-RPC answer: a result, or a refusal of the session's policy
    /// (an approval that timed out, ...).
    Answered,
    /// The connection was cut with the host serving it: the call may or
    /// may not have run, and the trace says which (`interrupted`).
    Cut,
}

/// One call of a session's client, as its client saw it.
#[derive(Debug)]
struct Done {
    kind: &'static str,
    came: Came,
    /// The phase it was first sent in.
    at: Phase,
    /// From first sent to its answer, refusals and waits included.
    took: Duration,
    /// How many times the fleet refused it as not run before it ran.
    fleet_refusals: usize,
}

/// Whether `reply` is a refusal that says the call did not run because of
/// the fleet (a host stopping, a host unsure of its lease, a trace the
/// database could not take) and may be sent again.
fn did_not_run(reply: &serde_json::Value) -> bool {
    if ok_text(reply).is_some() {
        return false;
    }
    // A refusal is told as `{"denied": RULE, "message": ...}`.
    let told: serde_json::Value =
        serde_json::from_str(&super::crash_safety::result_text(reply)).unwrap_or_default();
    ["host_shutdown", "lease_not_held", "unrecorded"]
        .iter()
        .any(|rule| told["denied"] == *rule)
}

/// When a fault phase began, for the latency figures.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Phase {
    Before,
    During,
    After,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_without_affinity_keeps_every_session_through_restarts_a_kill_and_a_database_restart()
 {
    let Some(server) = scout_tests::pg::own_server() else {
        return;
    };
    let sessions: usize = std::env::var("SCOUT_SOAK_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let calls_each: usize = std::env::var("SCOUT_SOAK_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    // Between one fault and the next, so that calls run through each.
    let gap = Duration::from_millis(
        std::env::var("SCOUT_SOAK_FAULT_GAP_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200),
    );
    let db = server.database("fleet_faults");
    let github = scout_tests::fake_github::FakeGitHub::start(GITHUB_TOKEN).await;
    let billed = scout_tests::upstream::Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let balancer = Balancer::start().await;
    let config = config(
        dir.path(),
        &balancer.address,
        &github.origin(),
        &billed.origin(),
    );
    let env = [("SCOUT_PG_URL", db.url())];
    // Starting, stopping and killing a process blocks; the clients go on.
    let start = || tokio::task::block_in_place(|| common::serve(&config).envs(&env).start());
    let mut hosts: Vec<ServeProcess> = (0..3).map(|_| start()).collect();
    balancer.set(&hosts.iter().map(|h| h.base.clone()).collect::<Vec<_>>());
    // The admin API: a new connection for every request, so the balancer
    // decides each one.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    // A session's client keeps its connection while it lasts, as an MCP
    // client does: the balancer placed it, and it goes elsewhere once its
    // host goes away (a new connection, to whichever host is next).
    let session_client = || {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap()
    };
    let admin = Admin {
        http: http.clone(),
        base: format!("http://{}", balancer.address),
    };
    admin.set_up().await;
    admin.connect_billed().await;
    let mut views = Vec::new();
    for _ in 0..sessions {
        let view = admin.session().await;
        assert!(
            view["mcp"]["github"]
                .as_str()
                .unwrap()
                .starts_with(&admin.base),
            "endpoints name the fleet: {view}"
        );
        views.push(view);
    }

    // A person approves every write as it waits, through the balancer.
    let approving = Arc::new(AtomicBool::new(true));
    let approver = tokio::spawn({
        let admin = admin.clone();
        let approving = approving.clone();
        async move {
            while approving.load(Ordering::SeqCst) {
                if let Ok((200, body)) = admin.try_request(Method::GET, "/v1/approvals", None).await
                {
                    for a in body["pending"].as_array().into_iter().flatten() {
                        let _ = admin
                            .try_request(
                                Method::POST,
                                &format!("/v1/approvals/{}", a["id"]),
                                Some(json!({"approve": true, "by": "alice"})),
                            )
                            .await;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });

    let phase = Arc::new(parking_lot::Mutex::new(Phase::Before));
    let reinitialized = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = views
        .iter()
        .enumerate()
        .map(|(s, view)| {
            let (http, view, phase, reinitialized) =
                (session_client(), view.clone(), phase.clone(), reinitialized.clone());
            tokio::spawn(async move {
                let mut done: Vec<Done> = Vec::new();
                let mut github = reconnect(&Mcp::new(&http, &view)).await;
                let mut capabilities =
                    reconnect(&Mcp::for_connector(&http, &view, "capabilities")).await;
                for i in 0..calls_each {
                    let (kind, name, arguments) = match i % 3 {
                        0 => (
                            "read",
                            "github_read_file",
                            json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
                        ),
                        1 => (
                            "write",
                            "github_create_branch",
                            json!({"owner": "octo", "repo": "hello", "branch": format!("fleet/{s}/{i}"), "from": "main"}),
                        ),
                        _ => (
                            "billed",
                            "capabilities_spend",
                            json!({"estimate": 1, "actual": 1, "path": format!("/fleet/{s}/{i}")}),
                        ),
                    };
                    let mcp = if kind == "billed" {
                        &mut capabilities
                    } else {
                        &mut github
                    };
                    let began = Instant::now();
                    let at = *phase.lock();
                    let mut fleet_refusals = 0;
                    let came = loop {
                        match mcp
                            .request("tools/call", json!({"name": name, "arguments": arguments}))
                            .await
                        {
                            // Refused by the fleet as it changed, and told it
                            // did not run: called again, as the refusal says.
                            Ok(reply) if did_not_run(&reply) => {
                                fleet_refusals += 1;
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            }
                            Ok(_) => break Came::Answered,
                            // The host this request reached does not know the
                            // transport session (nothing ran): initialize
                            // there and send it again.
                            Err(e) if e.starts_with("HTTP 404") => {
                                reinitialized.fetch_add(1, Ordering::Relaxed);
                                *mcp = reconnect(mcp).await;
                            }
                            // Cut with its host: may have run; not sent again.
                            Err(_) => {
                                *mcp = reconnect(mcp).await;
                                break Came::Cut;
                            }
                        }
                    };
                    done.push(Done {
                        kind,
                        came,
                        at,
                        took: began.elapsed(),
                        fleet_refusals,
                    });
                }
                done
            })
        })
        .collect();

    // The faults, while the clients run.
    tokio::time::sleep(Duration::from_millis(500)).await;
    *phase.lock() = Phase::During;
    let faults_began = Instant::now();
    for i in 0..3 {
        hosts[i].signal("TERM");
        let status = hosts[i].exited_within(Duration::from_secs(60)).await;
        assert!(
            status.is_some_and(|s| s.success()),
            "host {i} drained and exited 0"
        );
        hosts[i] = start();
        balancer.set(&hosts.iter().map(|h| h.base.clone()).collect::<Vec<_>>());
        tokio::time::sleep(gap).await;
    }
    tokio::task::block_in_place(|| hosts[1].kill());
    hosts[1] = start();
    balancer.set(&hosts.iter().map(|h| h.base.clone()).collect::<Vec<_>>());
    tokio::time::sleep(gap).await;
    tokio::task::block_in_place(|| server.stop());
    tokio::time::sleep(Duration::from_millis(500)).await;
    tokio::task::block_in_place(|| server.start());
    *phase.lock() = Phase::After;
    let faults_took = faults_began.elapsed();

    let mut outcomes = Vec::new();
    for client in clients {
        outcomes.extend(
            tokio::time::timeout(Duration::from_secs(600), client)
                .await
                .expect("every client finished")
                .unwrap(),
        );
    }
    approving.store(false, Ordering::SeqCst);
    let _ = approver.await;

    // The fleet is back: every host ready.
    for (i, host) in hosts.iter().enumerate() {
        let ready = async || {
            let answer = http
                .get(format!("{}/readyz", host.base))
                .send()
                .await
                .ok()?;
            (answer.status().as_u16() == 200).then_some(())
        };
        let started = Instant::now();
        loop {
            if ready().await.is_some() {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "host {i} never became ready again:\n{}",
                host.stderr()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // No session ended: each is listed, and reads through the balancer.
    for view in &views {
        let id = view["id"].as_str().unwrap();
        let (status, body) = admin
            .request(Method::GET, &format!("/v1/sessions/{id}"), None)
            .await;
        assert_eq!(status, 200, "session {id} kept: {body}");
        let client = Mcp::new(&session_client(), view);
        let mut mcp = reconnect(&client).await;
        let started = Instant::now();
        loop {
            match mcp
                .request(
                    "tools/call",
                    json!({"name": "github_read_file", "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}}),
                )
                .await
            {
                Ok(reply) if ok_text(&reply).is_some() => break,
                // Its connection went to another host: initialize there.
                Err(e) if e.starts_with("HTTP 404") => mcp = reconnect(&client).await,
                other => {
                    assert!(
                        started.elapsed() < crate::common::EVENTUALLY,
                        "session {id} reads once the fleet is back: {other:?}"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    // Every call requested has its end in the trace (a result, a refusal,
    // or `interrupted` by the host that recovered the one that was cut).
    let ids: BTreeSet<String> = views
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect();
    let trace = wait_for(
        "every call closed in the trace",
        crate::common::EVENTUALLY,
        async || {
            let trace: Vec<TraceEvent> = admin
                .trace("acme")
                .await
                .into_iter()
                .filter(|e| ids.contains(&e.session))
                .collect();
            let requested: BTreeSet<&String> = trace
                .iter()
                .filter(|e| e.state == TraceState::Requested)
                .filter_map(|e| e.call_id.as_ref())
                .collect();
            let mut ended: BTreeMap<String, bool> = BTreeMap::new();
            for e in &trace {
                if let Some(call) = e.call_id.as_ref().filter(|c| requested.contains(c)) {
                    let end = matches!(
                        e.state,
                        TraceState::Result
                            | TraceState::Denied
                            | TraceState::PermissionDenied
                            | TraceState::Interrupted
                    );
                    *ended.entry(call.clone()).or_insert(false) |= end;
                }
            }
            ended.values().all(|e| *e).then_some(trace)
        },
    )
    .await;

    // The trace never contradicts itself (issue 52 item 8): a row the
    // database took late, after its restart, may follow its call's end,
    // and still no call that has a `result` (or a refusal) is also
    // `interrupted`, and none that reached `allowed` is said never to
    // have run.
    let mut by_call: BTreeMap<(&str, &str), Vec<&TraceEvent>> = BTreeMap::new();
    for e in &trace {
        if let Some(call) = e.call_id.as_deref().filter(|c| *c != "session") {
            by_call.entry((&e.session, call)).or_default().push(e);
        }
    }
    for ((session, call), events) in &by_call {
        let has = |state: TraceState| events.iter().any(|e| e.state == state);
        let ended = has(TraceState::Result) || has(TraceState::Denied);
        assert!(
            !(ended && has(TraceState::Interrupted)),
            "{session}/{call} has both its end and `interrupted`: {events:?}"
        );
        if has(TraceState::Allowed) || has(TraceState::Executed) {
            for mark in events.iter().filter(|e| e.state == TraceState::Interrupted) {
                assert_eq!(
                    mark.detail["may_have_run"], true,
                    "{session}/{call} reached `allowed`: {events:?}"
                );
            }
        }
    }

    // No effect twice; every branch created was allowed first.
    let branches = github.ref_creations();
    let distinct: BTreeSet<&String> = branches.iter().collect();
    assert_eq!(distinct.len(), branches.len(), "no branch created twice");
    let allowed_writes = trace
        .iter()
        .filter(|e| {
            e.state == TraceState::Allowed
                && e.tool.as_deref() == Some("mcp__github__github_create_branch")
        })
        .count();
    assert!(
        branches.len() <= allowed_writes,
        "{} branches, {allowed_writes} allowed",
        branches.len()
    );

    // The ledger: each billed call that answered ok has its charge; no
    // charge without an allowed billed call; no run past its allowance.
    let billed_ok = trace
        .iter()
        .filter(|e| {
            e.state == TraceState::Result
                && e.tool.as_deref() == Some("mcp__capabilities__capabilities_spend")
                && e.detail["ok"] == true
        })
        .count();
    let billed_allowed = trace
        .iter()
        .filter(|e| {
            e.state == TraceState::Allowed
                && e.tool.as_deref() == Some("mcp__capabilities__capabilities_spend")
        })
        .count();
    let charged: usize = server
        .psql(db.name(), "SELECT COALESCE(SUM(amount), 0) FROM charges")
        .parse()
        .unwrap();
    assert!(
        billed_ok <= charged && charged <= billed_allowed.max(billed_ok),
        "{billed_ok} billed results <= {charged} credits charged <= {billed_allowed} allowed"
    );
    assert!(
        billed.seen().len() <= billed_allowed,
        "nothing billed without its allowed row"
    );
    let most: usize = server
        .psql(db.name(), "SELECT COALESCE(MAX(s), 0) FROM (SELECT SUM(amount) AS s FROM charges GROUP BY run_id) r")
        .parse()
        .unwrap();
    assert!(most <= PER_RUN, "a run within its allowance: {most}");
    assert_eq!(
        server.psql(db.name(), "SELECT count(*) FROM runs"),
        server.psql(db.name(), "SELECT count(DISTINCT run_id) FROM charges"),
        "one run per session, joined by every host that served it"
    );

    // The figures.
    // Refusals by rule: what the fleet told its clients while it changed.
    let mut refused: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &trace {
        if matches!(e.state, TraceState::Denied | TraceState::PermissionDenied) {
            *refused.entry(e.rule.as_deref().unwrap_or("")).or_default() += 1;
        }
    }
    let interrupted = trace
        .iter()
        .filter(|e| e.state == TraceState::Interrupted)
        .count();
    eprintln!(
        "fleet faults, refusals by rule: {refused:?}; {interrupted} calls traced interrupted"
    );
    // Approvals wait ten minutes here: one that waited through a fault
    // (the database away included) was still decided and spent, never
    // refused as if nobody had answered.
    assert!(
        !refused.contains_key("approval_timed_out"),
        "no approval timed out: {refused:?}"
    );
    let answered = outcomes.iter().filter(|o| o.came == Came::Answered).count();
    let cut = outcomes.len() - answered;
    let mut lines = Vec::new();
    for p in [Phase::Before, Phase::During, Phase::After] {
        let in_phase: Vec<&Done> = outcomes.iter().filter(|o| o.at == p).collect();
        let mut took: Vec<Duration> = in_phase
            .iter()
            .filter(|o| o.kind == "read" && o.came == Came::Answered)
            .map(|o| o.took)
            .collect();
        took.sort();
        if took.is_empty() {
            continue;
        }
        let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize];
        lines.push(format!(
            "{p:?}: {} calls ({} cut, {} sent again after {} fleet refusals), {} reads p50 {:.1?} p99 {:.1?}",
            in_phase.len(),
            in_phase.iter().filter(|o| o.came == Came::Cut).count(),
            in_phase.iter().filter(|o| o.fleet_refusals > 0).count(),
            in_phase.iter().map(|o| o.fleet_refusals).sum::<usize>(),
            took.len(),
            at(0.5),
            at(0.99)
        ));
    }
    eprintln!(
        "fleet faults: {sessions} sessions kept of {sessions}, {} calls, {answered} answered, {cut} cut with their host, {} transport sessions initialized again, {} branches, {charged} credits charged, faults took {:.1?}; {}",
        outcomes.len(),
        reinitialized.load(Ordering::Relaxed),
        branches.len(),
        faults_took,
        lines.join("; ")
    );
    assert_eq!(outcomes.len(), sessions * calls_each);
}

/// A new transport session for `mcp`'s Scout session, once a host answers.
async fn reconnect(mcp: &Mcp) -> Mcp {
    loop {
        if let Some(again) = mcp.clone().try_connect().await {
            return again;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
