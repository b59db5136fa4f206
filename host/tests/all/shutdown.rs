//! Stopping within a bounded grace and the probes a platform asks
//! (hardening 3, items 8 and 9), through the real `serve` binary on SQLite.
//!
//! A SIGTERM while one write waits for a person and one billed call runs
//! against a slow upstream: the host refuses new sessions and calls at
//! once and reports itself not ready, ends the waiting write without
//! running it (`host_shutdown`, its approval revoked by `host_shutdown`),
//! lets the running call finish and hands its answer to its client, then
//! exits 0, long before the approval timeout (600 s here) a waiting write
//! used to hold it for. A SIGHUP before it changes nothing. `/livez` and
//! `/readyz` answer without a credential whatever the Host header, on the
//! main listener and on `probe_listen`.

use crate::common;
use crate::crash_safety::{Admin, GITHUB_TOKEN, Mcp, args_for, ok_text, result_text, wait_for};
use reqwest::Method;
use reqwest::header::HOST;
use scout_host::store::prelude::*;
use scout_host::store::{SqliteStore, TraceFilter, TraceState};
use scout_tests::ServeProcess;
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// Bounds only a hang: every wait here ends far sooner when the host works.
const HANG: Duration = Duration::from_secs(120);

fn write_config(dir: &Path, github: &str, billed: &str) -> std::path::PathBuf {
    let component = Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .expect("the GitHub component was built");
    let capabilities = Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .expect("the capabilities test guest was built");
    scout_tests::serve::write_config(
        dir,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = {:?}\nrequire_review = false\nshutdown_grace_secs = 60\nprobe_listen = \"127.0.0.1:0\"\n\n\
             [connectors.github]\ncomponent = {:?}\norigin = {github:?}\nallow_private_network = true\n\n\
             [connectors.capabilities]\ncomponent = {:?}\norigin = {billed:?}\nallow_private_network = true\n\
             [connectors.capabilities.person_allowance]\nper_run_credits = 100\nper_day_credits = 1000\n",
            dir.join("scout.db").display().to_string(),
            component.display().to_string(),
            capabilities.display().to_string(),
        ),
    )
}

/// The address `serve` printed for its probe listener.
fn probe_base(serve: &ServeProcess) -> String {
    let stderr = serve.stderr();
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("scout-host: probes (/livez, /readyz) on "))
        .unwrap_or_else(|| panic!("a probe listener line: {stderr}"))
        .trim()
        .to_string()
}

async fn get(http: &reqwest::Client, url: &str, host: Option<&str>) -> (u16, Value) {
    let mut request = http.get(url);
    if let Some(host) = host {
        request = request.header(HOST, host);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_waiting_writes_lets_running_calls_answer_and_exits_0() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let billed = scout_tests::upstream::Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &github.origin(), &billed.origin());
    let mut serve = common::serve(&config).start();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    admin.connect_billed().await;
    let view = admin.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let writes = Mcp::new(&http, &view).connect().await;
    let bills = Mcp::for_connector(&http, &view, "capabilities")
        .connect()
        .await;

    // Probes: no credential, and a Host header the admin API refuses.
    let probes = probe_base(&serve);
    for base in [serve.base.as_str(), probes.as_str()] {
        for host in [None, Some("10.1.2.3:8080")] {
            let (status, body) = get(&http, &format!("{base}/livez"), host).await;
            assert_eq!(
                (status, &body),
                (200, &json!({"live": true})),
                "{base} {host:?}"
            );
            let (status, body) = get(&http, &format!("{base}/readyz"), host).await;
            assert_eq!(
                (status, &body),
                (200, &json!({"ready": true})),
                "{base} {host:?}"
            );
        }
    }
    let (status, _) = get(
        &http,
        &format!("{}/v1/health", serve.base),
        Some("10.1.2.3:8080"),
    )
    .await;
    assert_eq!(status, 403, "the admin API still checks the Host header");
    let (status, _) = get(&http, &format!("{probes}/v1/health"), None).await;
    assert_eq!(status, 404, "the probe listener serves only the probes");

    // SIGHUP: logged and ignored; the host keeps serving.
    serve.signal("HUP");
    wait_for("SIGHUP to be logged", HANG, async || {
        serve.stderr().contains("SIGHUP ignored").then_some(())
    })
    .await;
    let (status, _) = get(&http, &format!("{}/readyz", serve.base), None).await;
    assert_eq!(status, 200, "still ready after SIGHUP");

    // One write waits for a person; one billed call is approved and runs
    // against an upstream that takes 10 s to answer.
    let waiting = tokio::spawn({
        let writes = writes.clone();
        async move { writes.call(args_for(1)).await }
    });
    let running = tokio::spawn({
        let bills = bills.clone();
        async move {
            bills
                .request(
                    "tools/call",
                    json!({"name": "capabilities_spend", "arguments": {"estimate": 1, "actual": 1, "path": "/slow"}}),
                )
                .await
        }
    });
    let pending = wait_for("both calls to wait for a person", HANG, async || {
        let pending = admin.pending(&session).await;
        (pending.len() == 2).then_some(pending)
    })
    .await;
    let bill = pending
        .iter()
        .find(|a| a["tool"].as_str().unwrap_or("").ends_with("spend"))
        .unwrap_or_else(|| panic!("the billed call's approval: {pending:?}"));
    let write_approval = pending
        .iter()
        .find(|a| a["id"] != bill["id"])
        .unwrap()
        .clone();
    let (status, body) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", bill["id"]),
            Some(json!({"approve": true, "by": "alice"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    wait_for("the billed call to reach its upstream", HANG, async || {
        billed
            .seen()
            .iter()
            .any(|s| s.uri.starts_with("/slow"))
            .then_some(())
    })
    .await;

    serve.signal("TERM");
    // At once: not ready, no new session, no new call.
    let (status, body) = wait_for("the host to report itself draining", HANG, async || {
        let answer = get(&http, &format!("{}/readyz", serve.base), None).await;
        (answer.0 == 503).then_some(answer)
    })
    .await;
    assert_eq!(status, 503);
    assert_eq!(body["reason"], "this host is shutting down", "{body}");
    let (status, body) = admin
        .request(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "person-chat"})),
        )
        .await;
    assert_eq!(status, 503, "no new session while draining: {body}");
    let refused = writes
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}}),
        )
        .await
        .expect("a new call is answered, not cut");
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        result_text(&refused).contains("host shutting down"),
        "{refused}"
    );

    // The waiting write ended without running; the running call answered.
    let waited = waiting
        .await
        .unwrap()
        .expect("the waiting write got an answer");
    assert_eq!(waited["result"]["isError"], true, "{waited}");
    assert!(
        result_text(&waited).contains("host shutting down"),
        "{waited}"
    );
    let ran = running
        .await
        .unwrap()
        .expect("the running call's answer reached its client");
    assert!(
        ok_text(&ran).is_some(),
        "the billed call ran to its end: {ran}"
    );

    let status = serve
        .exited_within(HANG)
        .await
        .unwrap_or_else(|| panic!("serve did not stop: {}", serve.stderr()));
    assert!(status.success(), "exit 0: {status:?}\n{}", serve.stderr());
    assert!(
        github.ref_creations().is_empty(),
        "the waiting write never ran"
    );

    // The store as the stopped host left it.
    let store = SqliteStore::open(dir.path().join("scout.db")).unwrap();
    let approval = store
        .approval(scout_host::store::ApprovalId(
            write_approval["id"].as_i64().unwrap(),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(approval.decided_by.as_deref(), Some("host_shutdown"));
    let trace = store
        .trace_page(TraceFilter::Session(&session), 0, 10_000)
        .await
        .unwrap();
    let rules_of = |tool: &str| -> Vec<(TraceState, Option<String>)> {
        let calls: Vec<&str> = trace
            .iter()
            .filter(|(_, e)| e.tool.as_deref() == Some(tool))
            .filter_map(|(_, e)| e.call_id.as_deref())
            .collect();
        trace
            .iter()
            .filter(|(_, e)| e.call_id.as_deref().is_some_and(|c| calls.contains(&c)))
            .map(|(_, e)| (e.state, e.rule.clone()))
            .collect()
    };
    let write = rules_of("mcp__github__github_create_branch");
    assert_eq!(
        write.last(),
        Some(&(TraceState::Denied, Some("host_shutdown".to_string()))),
        "{write:?}"
    );
    assert!(
        !write.iter().any(|(s, _)| *s == TraceState::Allowed),
        "{write:?}"
    );
    let bill = rules_of("mcp__capabilities__capabilities_spend");
    assert_eq!(
        bill.last().map(|(s, _)| *s),
        Some(TraceState::Result),
        "{bill:?}"
    );
    let read = rules_of("mcp__github__github_read_file");
    assert_eq!(
        read.last(),
        Some(&(TraceState::Denied, Some("host_shutdown".to_string()))),
        "{read:?}"
    );
    assert!(
        !trace
            .iter()
            .any(|(_, e)| e.rule.as_deref() == Some("approval_withdrawn")),
        "nothing is told the caller went away"
    );
    assert!(
        github.requests().iter().all(|r| !r.path.contains("README")),
        "the refused read reached no upstream"
    );
}
