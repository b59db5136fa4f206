//! Two real `serve` processes on one real PostgreSQL database.
//!
//! - A session is the fleet's: opened on one host, served by either (the
//!   other takes it up at its first request), its pause, refusals and run
//!   spent exactly across both, and it outlives the host that opened it.
//! - The other host answers the admin API for a session: the
//!   session's view, its pending approvals with the exact arguments (sealed
//!   in the approval row), the decision, which wakes the call waiting on the
//!   first host (how fast is measured by the `serve_process` bench).
//! - A call waiting for a person waits on through a database restart, and
//!   runs once approved.
//! - A connection disabled on one host refuses the next call on the other;
//!   a session ended on one host is ended on the host that serves it before
//!   the answer comes back.
//! - A host killed with SIGKILL while approval-gated calls are in flight is
//!   recovered by the other once its lease runs out: its pending approvals
//!   revoked, each unfinished call marked `interrupted` once (`may_have_run`
//!   where `allowed` was written), every upstream effect backed by an
//!   `allowed` row, and the live host's own session and calls untouched.
//! - A killed host's approvals, pending or approved in the moment before
//!   the others knew, end by `host_lost`: deciding one answers 409 naming
//!   it, and none runs.
//! - A host stopped with SIGTERM gives its lease back and says so: only
//!   a host that died is recovered and counted as lost.

use super::crash_safety::{Admin, GITHUB_TOKEN, Mcp, NAME, args_for, ok_text, wait_for};
use crate::common;
use reqwest::Method;
use scout_host::store::{TraceEvent, TraceState};
use scout_tests::ServeProcess;
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// Two hosts' configuration files on one database.
fn write_configs(
    dir: &Path,
    github_origin: &str,
    billed_origin: &str,
    lease_secs: u64,
    (per_run, per_day): (u64, u64),
) -> [std::path::PathBuf; 2] {
    let component = std::path::Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .expect("the GitHub component was built");
    let billed = std::path::Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .expect("the capabilities test guest was built");
    ["a", "b"].map(|name| {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "listen = \"127.0.0.1:0\"\nrequire_review = false\n\n[store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\nlease_secs = {lease_secs}\n\n\
                 [connectors.github]\ncomponent = {:?}\norigin = {github_origin:?}\nallow_private_network = true\n\n\
                 [connectors.capabilities]\ncomponent = {:?}\norigin = {billed_origin:?}\nallow_private_network = true\n\
                 [connectors.capabilities.person_allowance]\nper_run_credits = {per_run}\nper_day_credits = {per_day}\n",
                component.display().to_string(),
                billed.display().to_string(),
            ),
        )
        .unwrap();
        path
    })
}

struct TwoHosts {
    a: ServeProcess,
    b: ServeProcess,
    admin_a: Admin,
    admin_b: Admin,
    http: reqwest::Client,
    github: FakeGitHub,
    /// The billed connector's upstream (the capabilities test guest's `spend`).
    billed: scout_tests::upstream::Upstream,
    _dir: tempfile::TempDir,
}

/// Two hosts on `db` whose person chat bills the capabilities guest at
/// `allowance` (per run, per day).
async fn two_hosts_billing(
    db: &scout_tests::pg::PgDatabase,
    lease_secs: u64,
    allowance: (u64, u64),
) -> TwoHosts {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let billed = scout_tests::upstream::Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let [config_a, config_b] = write_configs(
        dir.path(),
        &github.origin(),
        &billed.origin(),
        lease_secs,
        allowance,
    );
    // Warnings too: what an operator sees of the fleet's events.
    let env = [
        ("SCOUT_PG_URL", db.url()),
        ("SCOUT_LOG", "warn".to_string()),
    ];
    let a = common::serve(&config_a).envs(&env).start();
    let b = common::serve(&config_b).envs(&env).start();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let admin_a = Admin {
        http: http.clone(),
        base: a.base.clone(),
    };
    let admin_b = Admin {
        http: http.clone(),
        base: b.base.clone(),
    };
    TwoHosts {
        a,
        b,
        admin_a,
        admin_b,
        http,
        github,
        billed,
        _dir: dir,
    }
}

async fn two_hosts(db: &scout_tests::pg::PgDatabase, lease_secs: u64) -> TwoHosts {
    two_hosts_billing(db, lease_secs, (10_000, 100_000)).await
}

fn read_args() -> Value {
    json!({"owner": "octo", "repo": "hello", "path": "README.md"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_share_sessions_approvals_and_connections() {
    let Some(db) = scout_tests::pg::database_or_skip("two_hosts") else {
        return;
    };
    let h = two_hosts(&db, 15).await;
    // Set up through A (connection and reviews); B sees both.
    h.admin_a.set_up().await;
    let view = h.admin_a.session().await;
    let id = view["id"].as_str().unwrap().to_string();
    assert!(
        view["mcp"]["github"]
            .as_str()
            .unwrap()
            .starts_with(&h.a.base),
        "served by the host that opened it: {view}"
    );
    // B answers for A's session.
    let (status, shown) = h
        .admin_b
        .request(Method::GET, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["mcp"], view["mcp"]);
    assert!(shown.get("token").is_none(), "never the token: {shown}");
    let (_, listed) = h.admin_b.request(Method::GET, "/v1/sessions", None).await;
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == id.as_str()),
        "{listed}"
    );

    let mcp = Mcp::new(&h.http, &view).connect().await;
    let read = mcp
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": read_args()}),
        )
        .await
        .unwrap();
    assert!(
        ok_text(&read).is_some_and(|t| t.contains("# Hello")),
        "{read}"
    );

    // A gated write waits on A; the person answers on B and sees the exact arguments.
    let args = args_for(7);
    let waiting = tokio::spawn({
        let mcp = mcp.clone();
        let args = args.clone();
        async move { mcp.call(args).await }
    });
    let pending = wait_for("the approval on B", crate::common::EVENTUALLY, async || {
        let pending = h.admin_b.pending(&id).await;
        (!pending.is_empty()).then_some(pending)
    })
    .await;
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0]["arguments"], args,
        "B shows the arguments A's call waits on"
    );
    assert_eq!(pending[0]["tool"], NAME);
    let approval = pending[0]["id"].as_i64().unwrap();
    // Listed on B without naming the session, too.
    let (status, all) = h.admin_b.request(Method::GET, "/v1/approvals", None).await;
    assert_eq!(status, 200, "{all}");
    assert!(
        all["pending"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == approval && a["arguments"] == args),
        "{all}"
    );
    let (status, body) = h
        .admin_b
        .request(
            Method::POST,
            &format!("/v1/approvals/{approval}"),
            Some(json!({"approve": true, "by": "alice"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, waiting)
        .await
        .expect("the call on A answered")
        .unwrap()
        .unwrap();
    assert!(ok_text(&reply).is_some(), "{reply}");
    assert_eq!(h.github.ref_creations().len(), 1);
    // The row no longer holds the arguments once decided.
    assert_eq!(
        db.psql(&format!(
            "SELECT count(*) FROM approvals WHERE id = {approval} AND args_sealed IS NULL"
        )),
        "1"
    );

    // A connection disabled on B: A's next call is refused, and reaches nothing.
    h.github.clear_requests();
    let (status, body) = h
        .admin_b
        .request(Method::DELETE, "/v1/brands/acme/connections/github", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let refused = wait_for(
        "A to hear of the change",
        Duration::from_secs(5),
        async || {
            let reply = mcp
                .request(
                    "tools/call",
                    json!({"name": "github_read_file", "arguments": read_args()}),
                )
                .await
                .unwrap();
            ok_text(&reply).is_none().then_some(reply)
        },
    )
    .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        h.github.requests().len() <= 1,
        "at most one read raced the change"
    );
    h.admin_a
        .request(
            Method::PUT,
            "/v1/brands/acme/connections/github",
            Some(json!({"secret": GITHUB_TOKEN})),
        )
        .await;

    // The session ended on B is ended on A before B answers.
    let (status, body) = h
        .admin_b
        .request(Method::DELETE, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["ended"], id.as_str());
    h.github.clear_requests();
    let after = mcp
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": read_args()}),
        )
        .await;
    assert!(
        after.is_err() || ok_text(after.as_ref().unwrap()).is_none(),
        "the next call on A is refused: {after:?}"
    );
    assert!(
        h.github.requests().is_empty(),
        "no upstream request after the end"
    );
    let (status, _) = h
        .admin_a
        .request(Method::GET, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, 404);
    // Both hosts are ready; the readiness endpoint needs no credential.
    for base in [&h.a.base, &h.b.base] {
        let ready = h.http.get(format!("{base}/v1/ready")).send().await.unwrap();
        assert_eq!(ready.status().as_u16(), 200);
    }
}

/// Calls host A has in flight when it is killed.
const IN_FLIGHT: usize = 200;
/// Of those, billed calls (the rest are approval-gated GitHub writes).
const BILLED: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_call_is_recovered_by_the_other() {
    let Some(db) = scout_tests::pg::database_or_skip("host_killed") else {
        return;
    };
    let mut h = two_hosts(&db, 2).await;
    h.admin_a.set_up().await;
    h.admin_a.connect_billed().await;
    let view_a = h.admin_a.session().await;
    let view_b = h.admin_b.session().await;
    let session_a = view_a["id"].as_str().unwrap().to_string();
    let session_b = view_b["id"].as_str().unwrap().to_string();
    let mcp_a = Mcp::new(&h.http, &view_a).connect().await;
    let mcp_b = Mcp::new(&h.http, &view_b).connect().await;

    // B's own call waits for a person across A's death.
    let b_waiting = tokio::spawn({
        let mcp = mcp_b.clone();
        async move { mcp.call(args_for(100_000)).await }
    });
    let billed_a = Mcp::for_connector(&h.http, &view_a, "capabilities")
        .connect()
        .await;
    let mut calls = Vec::new();
    for i in 0..IN_FLIGHT - BILLED {
        let mcp = mcp_a.clone();
        calls.push(tokio::spawn(async move { mcp.call(args_for(i)).await }));
    }
    // Billed calls: person chat asks a person before each, then the call
    // reserves and settles one credit of the operator's allowance.
    for i in 0..BILLED {
        let mcp = billed_a.clone();
        calls.push(tokio::spawn(async move {
            mcp.request(
                "tools/call",
                json!({"name": "capabilities_spend", "arguments": {"estimate": 1, "actual": 1, "path": format!("/bill/{i}")}}),
            )
            .await
        }));
    }
    let pending = wait_for(
        "every call on A to wait",
        Duration::from_secs(120),
        async || {
            let pending = h.admin_b.pending(&session_a).await;
            (pending.len() == IN_FLIGHT).then_some(pending)
        },
    )
    .await;
    // Half are approved through B: some run, some are approved but not yet run.
    for approval in pending.iter().step_by(2) {
        let id = approval["id"].as_i64().unwrap();
        let (status, body) = h
            .admin_b
            .request(
                Method::POST,
                &format!("/v1/approvals/{id}"),
                Some(json!({"approve": true, "by": "alice"})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    wait_for("some branches", crate::common::EVENTUALLY, async || {
        (h.github.ref_creations().len() >= 20).then_some(())
    })
    .await;
    h.a.kill();
    let killed = Instant::now();
    for call in calls {
        let _ = call.await;
    }

    // B recovers A once A's 2 s lease runs out.
    wait_for("B to recover A", crate::common::EVENTUALLY, async || {
        let approvals = db.psql(&format!(
            "SELECT count(*) FROM approvals WHERE session = '{session_a}' AND state = 'pending'"
        ));
        (approvals == "0").then_some(())
    })
    .await;
    let recovery_took = killed.elapsed();
    // Every call of A's that was requested has ended (a result, or B's
    // `interrupted`) once the trace's pages have caught up: a page stops
    // below any transaction still open in the cluster, so the newest rows
    // may show a moment late, never skipped.
    let trace_wait = Instant::now();
    let trace = wait_for(
        "A's calls closed in the trace",
        crate::common::EVENTUALLY,
        async || {
            let trace = h.admin_b.trace("acme").await;
            let mut open: BTreeMap<&str, bool> = BTreeMap::new();
            for e in trace.iter().filter(|e| e.session == session_a) {
                if let Some(call) = e.call_id.as_deref() {
                    let ended = matches!(e.state, TraceState::Result | TraceState::Interrupted);
                    let entry = open.entry(call).or_insert(false);
                    *entry = *entry || ended;
                }
            }
            let requested = trace
                .iter()
                .filter(|e| e.session == session_a && e.state == TraceState::Requested)
                .filter_map(|e| e.call_id.as_deref())
                .collect::<BTreeSet<_>>();
            requested
                .iter()
                .all(|call| open.get(call).copied().unwrap_or(false))
                .then_some(trace.clone())
        },
    )
    .await;
    let trace_took = trace_wait.elapsed();
    let mut by_call: BTreeMap<String, Vec<&TraceEvent>> = BTreeMap::new();
    for event in trace.iter().filter(|e| e.session == session_a) {
        if let Some(call) = &event.call_id {
            by_call.entry(call.clone()).or_default().push(event);
        }
    }
    let branches: BTreeSet<String> = h.github.ref_creations().into_iter().collect();
    let mut interrupted = 0;
    for (call, events) in &by_call {
        if !events.iter().any(|e| e.state == TraceState::Requested) {
            continue;
        }
        let closing: Vec<_> = events
            .iter()
            .filter(|e| e.state == TraceState::Interrupted)
            .collect();
        let finished = events.iter().any(|e| e.state == TraceState::Result);
        assert_eq!(
            closing.len(),
            usize::from(!finished),
            "{call}: one interrupted event exactly when it did not finish"
        );
        if let Some(mark) = closing.first() {
            interrupted += 1;
            let allowed = events.iter().any(|e| e.state == TraceState::Allowed);
            assert_eq!(mark.detail["may_have_run"], allowed, "{call}");
            assert_eq!(
                events.last().unwrap().state,
                TraceState::Interrupted,
                "{call}: last"
            );
        }
    }
    assert!(interrupted > 0, "some calls were cut");

    // The ledger: A's run goes on with its session (the fleet's, served
    // by B from now on); every billed call that finished has its charge,
    // and no charge exists without an `allowed` call or twice (the
    // idempotency key is unique).
    let run = format!("{session_a}:capabilities");
    assert_eq!(
        db.psql(&format!("SELECT ended FROM runs WHERE run_id = '{run}'")),
        "f"
    );
    let charges: usize = db
        .psql(&format!(
            "SELECT count(*) FROM charges WHERE run_id = '{run}'"
        ))
        .parse()
        .unwrap();
    let spent: usize = db
        .psql(&format!(
            "SELECT COALESCE(SUM(amount), 0) FROM charges WHERE run_id = '{run}'"
        ))
        .parse()
        .unwrap();
    let billed_calls = |state: TraceState| {
        by_call
            .values()
            .filter(|events| {
                events
                    .iter()
                    .any(|e| e.tool.as_deref().is_some_and(|t| t.ends_with("spend")))
                    && events.iter().any(|e| e.state == state)
            })
            .count()
    };
    let (billed_results, billed_allowed) = (
        billed_calls(TraceState::Result),
        billed_calls(TraceState::Allowed),
    );
    assert!(
        billed_results <= charges && charges <= billed_allowed,
        "{billed_results} billed results <= {charges} charges <= {billed_allowed} allowed billed calls"
    );
    assert_eq!(spent, charges, "one credit each, none doubled");
    assert!(
        h.billed.seen().len() <= billed_allowed,
        "no upstream request without its allowed row"
    );
    // Every branch the upstream created was allowed first: no effect without its intent.
    let allowed_calls = by_call
        .values()
        .filter(|events| events.iter().any(|e| e.state == TraceState::Allowed))
        .count();
    assert!(
        branches.len() <= allowed_calls,
        "{} branches, {allowed_calls} allowed calls",
        branches.len()
    );
    let distinct: BTreeSet<&String> = branches.iter().collect();
    assert_eq!(distinct.len(), branches.len(), "no branch asked for twice");
    // No approval of A's is left to decide, and none comes back.
    let (status, _) = h
        .admin_b
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", pending[1]["id"]),
            Some(json!({"approve": true, "by": "late"})),
        )
        .await;
    assert_eq!(status, 409, "a revoked approval cannot be decided");

    // B's own session is untouched: its approval still waits, and it runs when approved.
    let b_pending = h.admin_b.pending(&session_b).await;
    assert_eq!(b_pending.len(), 1, "B's approval survived A's recovery");
    let id = b_pending[0]["id"].as_i64().unwrap();
    let (status, _) = h
        .admin_b
        .request(
            Method::POST,
            &format!("/v1/approvals/{id}"),
            Some(json!({"approve": true, "by": "alice"})),
        )
        .await;
    assert_eq!(status, 200);
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, b_waiting)
        .await
        .expect("B's call answered")
        .unwrap()
        .unwrap();
    assert!(ok_text(&reply).is_some(), "{reply}");
    // A's session outlived A: still listed, and B serves its next call.
    let (_, listed) = h.admin_b.request(Method::GET, "/v1/sessions", None).await;
    let ids: BTreeSet<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        BTreeSet::from([session_a.as_str(), session_b.as_str()]),
        "{listed}"
    );
    let on_b = Mcp::new(&h.http, &view_a)
        .moved(&h.a.base, &h.b.base)
        .connect()
        .await;
    let reply = on_b
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": read_args()}),
        )
        .await
        .unwrap();
    assert!(ok_text(&reply).is_some(), "B serves A's session: {reply}");
    eprintln!(
        "two hosts: {IN_FLIGHT} calls in flight on A at the kill ({BILLED} billed), {} branches created, {charges} charges, {interrupted} calls marked interrupted by B, recovered {recovery_took:.1?} after the kill, in the trace pages {trace_took:.1?} later",
        branches.len()
    );
}

/// Eight sessions, four on each host, each start a run of 10 credits
/// against a day of 50: exactly five runs start, whichever host serves them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_across_two_hosts_start_exactly_as_many_as_the_day_holds() {
    let Some(db) = scout_tests::pg::database_or_skip("serve_day") else {
        return;
    };
    let h = two_hosts_billing(&db, 15, (10, 50)).await;
    h.admin_a.connect_billed().await;
    let mut sessions = Vec::new();
    for i in 0..8 {
        let admin = if i % 2 == 0 { &h.admin_a } else { &h.admin_b };
        let view = admin.session().await;
        let mcp = Mcp::for_connector(&h.http, &view, "capabilities")
            .connect()
            .await;
        sessions.push((view["id"].as_str().unwrap().to_string(), mcp));
    }
    let calls: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(i, (_, mcp))| {
            let mcp = mcp.clone();
            tokio::spawn(async move {
                mcp.request(
                    "tools/call",
                    json!({"name": "capabilities_spend", "arguments": {"estimate": 10, "actual": 10, "path": format!("/run/{i}")}}),
                )
                .await
            })
        })
        .collect();
    // A person approves each call, on whichever host; the runs then race for the day.
    let ids: Vec<i64> = wait_for("eight approvals", crate::common::EVENTUALLY, async || {
        let mut ids = Vec::new();
        for (session, _) in &sessions {
            ids.extend(
                h.admin_b
                    .pending(session)
                    .await
                    .iter()
                    .filter_map(|a| a["id"].as_i64()),
            );
        }
        (ids.len() == 8).then_some(ids)
    })
    .await;
    let decisions = ids.iter().enumerate().map(|(i, id)| {
        let admin = if i % 2 == 0 {
            h.admin_b.clone()
        } else {
            h.admin_a.clone()
        };
        async move {
            admin
                .request(
                    Method::POST,
                    &format!("/v1/approvals/{id}"),
                    Some(json!({"approve": true, "by": "alice"})),
                )
                .await
        }
    });
    for (status, body) in futures_util::future::join_all(decisions).await {
        assert_eq!(status, 200, "{body}");
    }
    let mut started = 0;
    for call in calls {
        let reply = call.await.unwrap().unwrap();
        if ok_text(&reply).is_some() {
            started += 1;
        } else {
            assert!(
                reply.to_string().contains("day"),
                "refused for the day: {reply}"
            );
        }
    }
    assert_eq!(started, 5, "five runs of 10 fit a day of 50");
    assert_eq!(db.psql("SELECT count(*) FROM runs"), "5");
    assert_eq!(
        db.psql("SELECT COALESCE(SUM(amount), 0) FROM charges"),
        "50"
    );
}

/// Bounds only a hang: each wait below ends within a few lease periods
/// when the hosts work.
const HANG: Duration = Duration::from_secs(180);

/// `GET /readyz` of `base`: its status.
async fn ready(http: &reqwest::Client, base: &str) -> u16 {
    match http.get(format!("{base}/readyz")).send().await {
        Ok(response) => response.status().as_u16(),
        Err(_) => 0,
    }
}

/// A read of `mcp`'s session: the text of its result, or why there is none
/// (an error result, an HTTP error, a cut connection).
async fn read(mcp: &Mcp) -> Result<String, String> {
    let reply = mcp
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": read_args()}),
        )
        .await?;
    ok_text(&reply).ok_or_else(|| reply.to_string())
}

/// The value of the metric line `name` in A's `/metrics`.
async fn metric(admin: &Admin, name: &str) -> f64 {
    let response = admin
        .http
        .get(format!("{}/metrics", admin.base))
        .header(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {}", super::crash_safety::ADMIN_TOKEN),
        )
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in /metrics:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_paused_past_its_lease_sends_nothing_and_rejoins_by_itself() {
    let Some(db) = scout_tests::pg::database_or_skip("paused_host") else {
        return;
    };
    let h = two_hosts(&db, 2).await;
    h.admin_a.set_up().await;
    let view = h.admin_a.session().await;
    let mcp = Mcp::new(&h.http, &view).connect().await;
    assert!(read(&mcp).await.is_ok(), "a read runs before the pause");
    h.github.clear_requests();

    // A stops (SIGSTOP) past its 2 s lease; B recovers it.
    h.a.signal("STOP");
    wait_for("B to recover A", HANG, async || {
        (db.psql("SELECT count(*) FROM hosts WHERE recovered_by IS NOT NULL") == "1").then_some(())
    })
    .await;
    h.a.signal("CONT");
    // A's session was recovered: nothing of it reaches the upstream, at
    // once after A resumes and later.
    let refused = read(&mcp).await;
    assert!(
        refused.is_err(),
        "the read of a recovered session is refused: {refused:?}"
    );
    assert!(
        h.github.requests().is_empty(),
        "no upstream request from a host that lost its lease: {:?}",
        h.github.requests()
    );

    // A rejoins by itself, under a new identity, and serves new sessions.
    wait_for("A to be ready again", HANG, async || {
        (ready(&h.http, &h.a.base).await == 200).then_some(())
    })
    .await;
    assert_eq!(
        db.psql("SELECT count(*) FROM hosts WHERE recovered_by IS NULL"),
        "2",
        "B, and A under its new identity"
    );
    assert_eq!(metric(&h.admin_a, "scout_lease_rejoins_total").await, 1.0);
    let fresh = h.admin_a.session().await;
    let fresh_mcp = Mcp::new(&h.http, &fresh).connect().await;
    assert!(read(&fresh_mcp).await.is_ok(), "a new session on A reads");
    assert_eq!(h.github.requests().len(), 1);
    // The old session is the fleet's, not A's old identity's: A takes it up
    // afresh, under its new identity. The MCP transport session A's old
    // identity held is unknown now (404), and the client initializes again.
    let stale = read(&mcp).await;
    assert!(
        stale.as_ref().is_err_and(|e| e.starts_with("HTTP 404")),
        "{stale:?}"
    );
    assert_eq!(
        h.github.requests().len(),
        1,
        "nothing from the stale transport"
    );
    let again = Mcp::new(&h.http, &view).connect().await;
    assert!(read(&again).await.is_ok(), "the old session reads again");
    assert_eq!(h.github.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_whose_database_stops_for_twice_the_lease_comes_back_whole() {
    let Some(server) = scout_tests::pg::own_server() else {
        return;
    };
    let db = server.database("outage");
    let h = two_hosts(&db, 2).await;
    h.admin_a.set_up().await;
    for base in [&h.a.base, &h.b.base] {
        assert_eq!(ready(&h.http, base).await, 200);
    }

    // The database goes away for twice the lease (the scenario, not a bound).
    server.stop();
    tokio::time::sleep(Duration::from_secs(4)).await;
    for base in [&h.a.base, &h.b.base] {
        let answer = h.http.get(format!("{base}/readyz")).send().await.unwrap();
        assert_eq!(
            answer.status().as_u16(),
            503,
            "not ready without the database"
        );
        let body: Value = serde_json::from_str(&answer.text().await.unwrap()).unwrap();
        // One of the fixed reasons, never the driver's error text.
        assert!(
            [
                "the store does not answer",
                "this host does not hold its lease: it takes no calls"
            ]
            .contains(&body["reason"].as_str().unwrap_or("")),
            "{body}"
        );
    }
    server.start();

    // Both hosts come back by themselves (one of them may have recovered
    // the other first; that one rejoins under a new identity).
    for base in [&h.a.base, &h.b.base] {
        wait_for("both hosts to be ready again", HANG, async || {
            (ready(&h.http, base).await == 200).then_some(())
        })
        .await;
    }
    // Each host said so in its log: the database away, then back; and the
    // host that recovered the other (if one did) named it.
    for host in [&h.a, &h.b] {
        wait_for("the outage and the return in the log", HANG, async || {
            let log = host.stderr();
            (log.contains("the database does not answer: this host cannot renew its lease")
                && log.contains("the database answers again"))
            .then_some(())
        })
        .await;
    }
    // And both serve new sessions.
    for admin in [&h.admin_a, &h.admin_b] {
        let view = admin.session().await;
        let mcp = Mcp::new(&h.http, &view).connect().await;
        let answer = read(&mcp).await;
        assert!(answer.is_ok(), "{}: {answer:?}", admin.base);
    }
    assert_eq!(
        server.psql(
            db.name(),
            "SELECT count(*) FROM hosts WHERE recovered_by IS NULL"
        ),
        "2",
        "two live hosts"
    );
}

/// A call waiting for a person goes on waiting while the database restarts
/// (its lease outlasts the outage): the person approves it once the
/// database is back, and it runs, once. Before, a read of the store that
/// failed during the wait ended the call as if nobody had answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_a_person_waits_through_a_database_restart() {
    let Some(server) = scout_tests::pg::own_server() else {
        return;
    };
    let db = server.database("approval_outage");
    let h = two_hosts(&db, 30).await;
    h.admin_a.set_up().await;
    let view = h.admin_a.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp::new(&h.http, &view).connect().await;
    let call = tokio::spawn({
        let mcp = mcp.clone();
        async move { mcp.call(args_for(34)).await }
    });
    wait_for("the approval", crate::common::EVENTUALLY, async || {
        (h.admin_a.pending(&session).await.len() == 1).then_some(())
    })
    .await;

    // Every host shows the fleet's one pending approval, read from the store.
    for host in [&h.a, &h.b] {
        let text = scrape(&h.http, &host.base).await;
        for line in [
            "scout_approvals_pending 1",
            "scout_store_up 1",
            "scout_lease_held 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} on {}:\n{text}",
                host.base
            );
        }
    }

    // Longer than the waiting call's recheck of the store (1 s): it reads
    // the store at least once while the database is away.
    tokio::task::block_in_place(|| server.stop());
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!call.is_finished(), "the call still waits");
    let text = scrape(&h.http, &h.a.base).await;
    assert!(
        text.lines().any(|l| l == "scout_store_up 0"),
        "the store away shows: {text}"
    );
    tokio::task::block_in_place(|| server.start());

    approve_next(&h.admin_a, &session).await;
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, call)
        .await
        .expect("the approved call answered")
        .unwrap()
        .unwrap();
    assert!(ok_text(&reply).is_some(), "it ran: {reply}");
    assert_eq!(
        h.github.ref_creations(),
        vec!["refs/heads/crash/34".to_string()],
        "once"
    );
}

/// `host`'s `/metrics` (admin token).
async fn scrape(http: &reqwest::Client, base: &str) -> String {
    let answer = http
        .get(format!("{base}/metrics"))
        .bearer_auth(super::crash_safety::ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    answer.text().await.unwrap()
}

/// Waits for the one approval `session` asks for now, and approves it on `admin`.
async fn approve_next(admin: &Admin, session: &str) {
    let pending = wait_for("the approval", crate::common::EVENTUALLY, async || {
        let pending = admin.pending(session).await;
        (pending.len() == 1).then_some(pending)
    })
    .await;
    let (status, body) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", pending[0]["id"]),
            Some(json!({"approve": true, "by": "alice"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

/// A billed call of `mcp`'s session, approved by a person on `admin`.
async fn billed(mcp: &Mcp, admin: &Admin, session: &str, n: usize) -> Value {
    let call = tokio::spawn({
        let mcp = mcp.clone();
        async move {
            mcp.request(
                "tools/call",
                json!({"name": "capabilities_spend", "arguments": {"estimate": 1, "actual": 1, "path": format!("/fleet/{n}")}}),
            )
            .await
        }
    });
    approve_next(admin, session).await;
    tokio::time::timeout(crate::common::EVENTUALLY, call)
        .await
        .expect("the billed call answered")
        .unwrap()
        .unwrap()
}

/// Issue 34: a session is the fleet's. It is opened on A and served by B
/// as well (B takes it up at its first request, the token checked against
/// the digest the store keeps); an MCP transport session B does not know
/// gets the protocol's 404 and the client initializes again, keeping its
/// Scout session. Its state is the same on both hosts: a pause counted on
/// both, a resume on B seen on A, and one run whose allowance is spent
/// exactly whichever host serves each billed call. Killed, A takes only
/// its calls with it: the session goes on through B, its run live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_the_fleets_any_host_serves_it_and_it_outlives_its_host() {
    let Some(db) = scout_tests::pg::database_or_skip("fleet_session") else {
        return;
    };
    let mut h = two_hosts_billing(&db, 2, (3, 100)).await;
    h.admin_a.set_up().await;
    h.admin_a.connect_billed().await;
    let view = h.admin_a.session().await;
    let id = view["id"].as_str().unwrap().to_string();
    let (a, b) = (h.a.base.clone(), h.b.base.clone());
    let on_a = Mcp::new(&h.http, &view).connect().await;
    assert!(read(&on_a).await.is_ok());

    // B does not know A's MCP transport session: 404, and the client
    // initializes again there, keeping its Scout session and token.
    let moved = on_a.moved(&a, &b);
    let unknown = moved
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": read_args()}),
        )
        .await;
    assert!(
        unknown.as_ref().is_err_and(|e| e.starts_with("HTTP 404")),
        "{unknown:?}"
    );
    let on_b = moved.connect().await;
    assert!(read(&on_b).await.is_ok(), "B serves A's session");
    // A wrong token is refused by B as by A, and takes nothing up.
    let (status, _) = h
        .admin_b
        .request(Method::GET, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, 200);
    let stranger = h
        .http
        .post(format!("{b}/mcp/{id}/github"))
        .bearer_auth("not-the-token")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status().as_u16(), 401);

    // One run, spent exactly across both hosts: 3 credits, a call each on
    // A, B, A, then B's is refused, and reaches nothing.
    let billed_on_a = Mcp::for_connector(&h.http, &view, "capabilities")
        .connect()
        .await;
    let billed_on_b = Mcp::for_connector(&h.http, &view, "capabilities")
        .moved(&a, &b)
        .connect()
        .await;
    let mut answers = Vec::new();
    for (n, (mcp, admin)) in [
        (&billed_on_a, &h.admin_b),
        (&billed_on_b, &h.admin_a),
        (&billed_on_a, &h.admin_b),
        (&billed_on_b, &h.admin_a),
    ]
    .into_iter()
    .enumerate()
    {
        answers.push(billed(mcp, admin, &id, n).await);
    }
    assert!(
        answers[..3].iter().all(|r| ok_text(r).is_some()),
        "{answers:?}"
    );
    assert!(
        ok_text(&answers[3]).is_none(),
        "the fourth credit is refused: {}",
        answers[3]
    );
    let run = format!("{id}:capabilities");
    assert_eq!(
        db.psql(&format!(
            "SELECT COALESCE(SUM(amount), 0) FROM charges WHERE run_id = '{run}'"
        )),
        "3"
    );
    assert_eq!(h.billed.seen().len(), 3, "the refused call sent nothing");
    assert_eq!(
        db.psql("SELECT count(*) FROM runs"),
        "1",
        "one run, joined by both hosts"
    );

    // Refusals of one consequence count on both hosts: the third pauses the
    // session everywhere; a person resumes it on B, and A serves it again.
    for mcp in [&on_a, &on_b, &on_a] {
        let _ = mcp
            .request(
                "tools/call",
                json!({"name": "github_delete_repository", "arguments": {}}),
            )
            .await;
    }
    for mcp in [&on_a, &on_b] {
        wait_for(
            "both hosts to see the pause",
            crate::common::EVENTUALLY,
            async || read(mcp).await.err().filter(|e| e.contains("paused")),
        )
        .await;
    }
    h.github.clear_requests();
    assert!(read(&on_a).await.is_err());
    assert!(
        h.github.requests().is_empty(),
        "a paused session reaches nothing"
    );
    let (status, body) = h
        .admin_b
        .request(Method::POST, &format!("/v1/sessions/{id}/resume"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    wait_for(
        "A to see the resume",
        crate::common::EVENTUALLY,
        async || read(&on_a).await.ok(),
    )
    .await;

    // A is killed: the session goes on through B, and its run stays live.
    h.a.kill();
    wait_for("B to recover A", HANG, async || {
        (db.psql("SELECT count(*) FROM hosts WHERE recovered_by IS NOT NULL") == "1").then_some(())
    })
    .await;
    assert!(read(&on_b).await.is_ok(), "the session outlived A");
    assert_eq!(
        db.psql(&format!("SELECT ended FROM runs WHERE run_id = '{run}'")),
        "f"
    );
    let (_, listed) = h.admin_b.request(Method::GET, "/v1/sessions", None).await;
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == id.as_str()),
        "{listed}"
    );

    // Ended on B: its next call is refused, and its run ends with it.
    let (status, body) = h
        .admin_b
        .request(Method::DELETE, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(read(&on_b).await.is_err());
    assert_eq!(
        db.psql(&format!("SELECT ended FROM runs WHERE run_id = '{run}'")),
        "t"
    );
}

/// Whether the host `id` is recovered (by another host, or released by
/// itself), as the `hosts` table says.
fn host_row(db: &scout_tests::pg::PgDatabase, id: &str) -> String {
    db.psql(&format!(
        "SELECT COALESCE(recovered_by, '') FROM hosts WHERE host_id = '{id}'"
    ))
}

/// The ids in the `hosts` table, in the order they registered.
fn host_ids(db: &scout_tests::pg::PgDatabase) -> Vec<String> {
    db.psql("SELECT host_id FROM hosts ORDER BY started_at, host_id")
        .lines()
        .map(str::to_string)
        .collect()
}

/// Issue 52 item 9: two writes wait for a person on A, and A is killed.
/// One is approved through B at once, before any sweep (A's lease lasts
/// 10 s); then B's sweep ends both by `host_lost`: deciding either
/// answers 409 naming the rule, the decisions list shows each ended by
/// it, each call is `interrupted` without having run, and GitHub saw no
/// write. The same write sent again asks a person afresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_hosts_approvals_end_by_host_lost_and_none_runs() {
    let Some(db) = scout_tests::pg::database_or_skip("host_lost_approvals") else {
        return;
    };
    let mut h = two_hosts(&db, 10).await;
    let a_id = host_ids(&db)[0].clone();
    h.admin_a.set_up().await;
    let view = h.admin_a.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp::new(&h.http, &view).connect().await;
    let calls: Vec<_> = [0, 1]
        .map(|i| {
            let mcp = mcp.clone();
            tokio::spawn(async move { mcp.call(args_for(5200 + i)).await })
        })
        .into();
    let pending = wait_for("two writes waiting on A", HANG, async || {
        let pending = h.admin_b.pending(&session).await;
        (pending.len() == 2).then_some(pending)
    })
    .await;
    let ids: Vec<i64> = pending.iter().map(|a| a["id"].as_i64().unwrap()).collect();
    h.a.kill();
    for call in calls {
        assert!(call.await.unwrap().is_err(), "cut with its host");
    }
    // Approved before anyone knew A was gone: 200, approved and unused.
    let (status, body) = h
        .admin_b
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", ids[0]),
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        host_row(&db, &a_id),
        "",
        "A was not recovered yet when the approval was decided"
    );

    // B's sweep, once A's lease runs out.
    wait_for("B to recover A", HANG, async || {
        (!host_row(&db, &a_id).is_empty()).then_some(())
    })
    .await;
    assert_ne!(host_row(&db, &a_id), a_id, "recovered by B, not released");
    for id in &ids {
        let (status, body) = h
            .admin_b
            .request(
                Method::POST,
                &format!("/v1/approvals/{id}"),
                Some(json!({"approve": true})),
            )
            .await;
        assert_eq!(status, 409, "{body}");
        assert_eq!(body["error"]["code"], "not_pending", "{body}");
        assert_eq!(body["error"]["rule"], "host_lost", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("host_lost")),
            "{body}"
        );
    }
    assert_eq!(
        db.psql(&format!(
            "SELECT string_agg(state || ':' || used || ':' || decided_by, ',' ORDER BY id) FROM approvals WHERE session = '{session}'"
        )),
        "revoked:false:host_lost,revoked:false:host_lost"
    );
    // Listed as ended by the rule, the approved one with who approved it.
    let decisions = wait_for("both ends in the decisions", HANG, async || {
        let (_, body) = h
            .admin_b
            .request(
                Method::GET,
                &format!("/v1/decisions?session={session}"),
                None,
            )
            .await;
        let listed = body["decisions"].as_array().cloned().unwrap_or_default();
        (listed.len() == 2).then_some(listed)
    })
    .await;
    for decision in &decisions {
        assert_eq!(
            (decision["outcome"].as_str(), decision["by"].as_str()),
            (Some("revoked"), Some("host_lost")),
            "{decision}"
        );
        assert!(ids.contains(&decision["approval"].as_i64().unwrap()));
    }
    // Neither ran: no `allowed`, each call `interrupted` as never run, and
    // nothing reached GitHub.
    let trace = h.admin_b.trace("acme").await;
    let mine: Vec<&TraceEvent> = trace.iter().filter(|e| e.session == session).collect();
    assert!(mine.iter().all(|e| e.state != TraceState::Allowed));
    let marks: Vec<_> = mine
        .iter()
        .filter(|e| e.state == TraceState::Interrupted)
        .collect();
    assert_eq!(marks.len(), 2, "{mine:?}");
    assert!(marks.iter().all(|e| e.detail["may_have_run"] == false));
    assert!(h.github.ref_creations().is_empty(), "GitHub saw no write");

    // The same write, sent again on B, asks a person afresh.
    let on_b = Mcp::new(&h.http, &view)
        .moved(&h.a.base, &h.b.base)
        .connect()
        .await;
    let again = tokio::spawn(async move { on_b.call(args_for(5200)).await });
    let fresh = wait_for("a fresh approval", HANG, async || {
        h.admin_b.pending(&session).await.into_iter().next()
    })
    .await;
    assert!(fresh["id"].as_i64().unwrap() > ids[1], "{fresh}");
    assert!(!again.is_finished(), "it waits for a person");
    assert!(h.github.ref_creations().is_empty());
    again.abort();
}

/// Issue 52 item 10: A is stopped with SIGTERM, drains and exits 0, saying
/// it gave its lease back; D fails to start once registered (its
/// `probe_listen` is taken) and E (its connector cannot be pulled) give
/// their leases back too; C is killed. B's sweep recovers C alone (the
/// same sweep would have claimed A too, whose lease ended first, had A
/// not released it): `scout_hosts_recovered_total` on B is 1, and B's
/// only `recovered lost hosts` warning names C.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_stopped_cleanly_is_never_counted_as_lost() {
    let Some(db) = scout_tests::pg::database_or_skip("released_lease") else {
        return;
    };
    let mut h = two_hosts(&db, 2).await;
    let [a_id, b_id]: [String; 2] = host_ids(&db).try_into().unwrap();
    h.admin_a.set_up().await;
    let view = h.admin_a.session().await;
    let mcp = Mcp::new(&h.http, &view).connect().await;
    assert!(read(&mcp).await.is_ok(), "A serves before it stops");

    h.a.signal("TERM");
    let status = h.a.exited_within(HANG).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "A drained and exited 0"
    );
    let said = h.a.stderr();
    assert_eq!(
        said.lines()
            .filter(|l| l.contains("released this host's lease"))
            .count(),
        1,
        "{said}"
    );
    assert_eq!(host_row(&db, &a_id), a_id, "A released its own lease");

    // D registers, then fails to start (its probe address is B's): it
    // gives its lease back too.
    let config_a = h._dir.path().join("a.toml");
    let config_d = h._dir.path().join("d.toml");
    std::fs::write(
        &config_d,
        format!(
            "probe_listen = {:?}\n{}",
            h.b.base.trim_start_matches("http://"),
            std::fs::read_to_string(&config_a).unwrap()
        ),
    )
    .unwrap();
    let (url, home) = (db.url(), std::env::var("HOME").unwrap_or_default());
    let said = tokio::task::block_in_place(|| {
        common::serve_as(&config_d, crate::crash_safety::ADMIN_TOKEN, "5c")
            .envs(&[("SCOUT_PG_URL", &url), ("HOME", &home)])
            .refused()
    });
    assert!(
        said.contains("probe_listen") && said.contains("released this host's lease"),
        "{said}"
    );
    let d_id = host_ids(&db)
        .into_iter()
        .find(|id| *id != a_id && *id != b_id)
        .unwrap();
    assert_eq!(host_row(&db, &d_id), d_id, "D released its own lease");
    // E registers, then cannot pull its connector (no registry answers):
    // refused before it serves anything, it gives its lease back.
    let config_e = h._dir.path().join("e.toml");
    std::fs::write(
        &config_e,
        "listen = \"127.0.0.1:0\"\n\n[store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\nlease_secs = 2\n\n\
         [registries.\"127.0.0.1:9\"]\nplain_http = true\nallow_private_network = true\n\n\
         [connectors.github]\ncomponent = \"oci://127.0.0.1:9/connectors/github:1\"\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n",
    )
    .unwrap();
    let said = tokio::task::block_in_place(|| {
        common::serve_as(&config_e, crate::crash_safety::ADMIN_TOKEN, "5c")
            .envs(&[("SCOUT_PG_URL", &url), ("HOME", &home)])
            .refused()
    });
    assert!(
        said.contains("released this host's lease: it did not start"),
        "{said}"
    );
    let e_id = host_ids(&db)
        .into_iter()
        .find(|id| ![&a_id, &b_id, &d_id].contains(&id))
        .unwrap();
    assert_eq!(host_row(&db, &e_id), e_id, "E released its own lease");

    // C dies without a word.
    let env = [
        ("SCOUT_PG_URL", db.url()),
        ("SCOUT_LOG", "warn".to_string()),
    ];
    let mut c = common::serve(&config_a).envs(&env).start();
    let c_id = host_ids(&db)
        .into_iter()
        .find(|id| ![&a_id, &b_id, &d_id, &e_id].contains(&id))
        .unwrap();
    c.kill();
    wait_for("B to recover C", HANG, async || {
        (host_row(&db, &c_id) == b_id).then_some(())
    })
    .await;
    assert_eq!(metric(&h.admin_b, "scout_hosts_recovered_total").await, 1.0);
    let warned: Vec<String> =
        h.b.stderr()
            .lines()
            .filter(|l| l.contains("recovered lost hosts"))
            .map(str::to_string)
            .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains(&c_id)
            && [&a_id, &d_id, &e_id]
                .iter()
                .all(|id| !warned[0].contains(id.as_str())),
        "{warned:?}"
    );
    assert_eq!(host_row(&db, &a_id), a_id, "A was never claimed");
    assert_eq!(host_row(&db, &d_id), d_id, "D was never claimed");
    assert_eq!(host_row(&db, &e_id), e_id, "E was never claimed");
}
