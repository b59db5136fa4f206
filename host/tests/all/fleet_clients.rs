//! The official Python MCP client (`mcp`, pinned in
//! `tests/mcp_client/requirements.txt`) on a fleet as docs/operating.md
//! describes it: two real `serve` processes on one real PostgreSQL database
//! behind HAProxy (`scout_tests::haproxy`), which the test starts.
//!
//! - Stateless mode (protocol 2026-07-28, `discover()`, no
//!   `Mcp-Session-Id`) through round robin with no affinity: every request
//!   may land on either host, and every answer conforms to the 2026-07-28
//!   wire types the SDK validates (`mcp_types`: `resultType`, `ttlMs`,
//!   `cacheScope`): lists and calls of a component, a gated write approved
//!   through the admin API, the host's own `scout` tools, and a remote MCP
//!   server's tool (the reference `server-everything`), whose older
//!   protocol's result the host passes on in its own; a write from a
//!   client that declares elicitation (answered by rmcp's service, not the
//!   host's direct path); and every other request a 2026-07-28 client may
//!   send, answered as the protocol's method-not-found.
//! - Session mode (`initialize()`, README's tour) through HAProxy sticking
//!   on `Mcp-Session-Id` with docs/operating.md's lines: two client
//!   sessions placed on the two hosts, 10 calls of 10 each; and through the
//!   same fleet without stickiness, the same client fails, which is why the
//!   docs say a session-mode client needs that affinity.

use super::common::EVENTUALLY;
use super::crash_safety::{ADMIN_TOKEN, Admin, GITHUB_TOKEN, wait_for};
use super::remote_mcp::{listed, review, tool};
use crate::common;
use scout_host::store::TraceState;
use scout_tests::ServeProcess;
use scout_tests::fake_github::FakeGitHub;
use scout_tests::haproxy::{Balance, Haproxy, free_port};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Two hosts on one database behind one balancer.
struct Fleet {
    hosts: Vec<ServeProcess>,
    /// Through the balancer, as an operator's tools reach the fleet.
    admin: Admin,
    http: reqwest::Client,
    github: FakeGitHub,
    /// `127.0.0.1:PORT` of each balancer the hosts answer to, in the order
    /// given to [`Fleet::start`]; the sessions' endpoints name the first.
    balancers: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Fleet {
    /// Two hosts on `db`, announcing `balancers[0]` as their address and
    /// answering to every one of `balancers`, with GitHub and, when
    /// `remote` is a port, `server-everything` there as connector
    /// `everything` (listed again every 2 s, so each host sees a review
    /// whichever host took it).
    fn start(
        db: &scout_tests::pg::PgDatabase,
        balancers: &[String],
        github: FakeGitHub,
        remote: Option<u16>,
    ) -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let component = Path::new(scout_tests::components::GITHUB)
            .canonicalize()
            .expect("the GitHub component was built");
        let everything = remote
            .map(|port| {
                format!(
                    "\n[connectors.everything]\nmcp = \"http://127.0.0.1:{port}/mcp\"\ncredential = \"none\"\n\
                     allow_private_network = true\ndiscover_every_secs = 2\n"
                )
            })
            .unwrap_or_default();
        let hosts = ["a", "b"]
            .map(|name| {
                let config = dir.path().join(format!("{name}.toml"));
                std::fs::write(
                    &config,
                    format!(
                        "listen = \"127.0.0.1:0\"\npublic_url = \"http://{}\"\nallowed_hosts = {balancers:?}\n\n\
                         [store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\n\n\
                         [connectors.github]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n{everything}",
                        balancers[0],
                        component.display().to_string(),
                        github.origin(),
                    ),
                )
                .unwrap();
                config
            })
            .map(|config| common::serve(&config).envs(&[("SCOUT_PG_URL", db.url())]).start())
            .into_iter()
            .collect();
        let http = reqwest::Client::new();
        Fleet {
            hosts,
            admin: Admin {
                http: http.clone(),
                base: format!("http://{}", balancers[0]),
            },
            http,
            github,
            balancers: balancers.to_vec(),
            _dir: dir,
        }
    }

    /// HAProxy on `balancers[index]`'s port in front of both hosts.
    fn balancer(&self, haproxy: &Path, index: usize, balance: Balance) -> Haproxy {
        let port = self.balancers[index]
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port");
        let backends: Vec<String> = self.hosts.iter().map(|h| h.base.clone()).collect();
        Haproxy::start(haproxy, self._dir.path(), port, &backends, balance)
    }

    /// How many reads' results each host recorded (by host id).
    async fn reads_by_host(&self) -> BTreeMap<String, usize> {
        let mut by_host = BTreeMap::new();
        for event in self.admin.trace("acme").await {
            if event.state == TraceState::Result
                && event.tool.as_deref() == Some("mcp__github__github_read_file")
            {
                *by_host
                    .entry(event.origin.host.clone().unwrap_or_default())
                    .or_default() += 1;
            }
        }
        by_host
    }
}

/// The tests' PostgreSQL database and HAProxy, or `None` (skipped, saying
/// why; on CI a missing one fails).
fn prerequisites(name: &str) -> Option<(scout_tests::pg::PgDatabase, PathBuf)> {
    let haproxy = scout_tests::haproxy::binary()?;
    let db = scout_tests::pg::database_or_skip(name)?;
    Some((db, haproxy))
}

/// Runs `script` (in `tests/mcp_client/`) with `args` in the official
/// client's environment; its stdout's last line as JSON, or a panic with
/// its stderr.
fn run_client(script: &str, args: &[&str]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp_client")
        .join(script);
    let out = Command::new(scout_tests::python())
        .arg(&path)
        .args(args)
        .output()
        .expect("run the official MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{script}: {stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{script}'s summary: {e}: {stdout}"))
}

/// One stateless (2026-07-28) `tools/list` on `url`: the tool names, or
/// `None` for any other answer.
async fn stateless_tools(http: &reqwest::Client, url: &str, token: &str) -> Option<Vec<String>> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fleet-test", "version": "0"}}}});
    let answer: Value = http
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(body.to_string())
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    answer["result"]["tools"].as_array().map(|tools| {
        tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_in_stateless_mode_is_served_by_any_host_without_affinity() {
    let Some((db, haproxy)) = prerequisites("fleet_stateless_client") else {
        return;
    };
    let (everything, everything_port) =
        tokio::task::spawn_blocking(scout_tests::start_server_everything)
            .await
            .unwrap();
    let _everything = KillOnDrop(everything);
    let balancer = format!("127.0.0.1:{}", free_port());
    let fleet = Fleet::start(
        &db,
        std::slice::from_ref(&balancer),
        FakeGitHub::start(GITHUB_TOKEN).await,
        Some(everything_port),
    );
    let proxy = fleet.balancer(&haproxy, 0, Balance::RoundRobin);
    fleet.admin.set_up().await;
    let reviews = listed(&fleet.admin, "everything").await;
    review(&fleet.admin, "everything", tool(&reviews, "echo"), "read").await;
    let view = fleet.admin.session().await;
    let token = view["token"].as_str().unwrap();
    let url = |connector: &str| {
        let url = view["mcp"][connector]
            .as_str()
            .unwrap_or_else(|| panic!("no {connector} endpoint: {view}"));
        assert!(url.contains(&balancer), "the fleet's address: {url}");
        url.to_string()
    };
    // Both hosts offer the reviewed remote tool: four lists in a row
    // through round robin, two on each host.
    let everything_url = url("everything");
    wait_for("both hosts to offer echo", EVENTUALLY, async || {
        for _ in 0..4 {
            let tools = stateless_tools(&fleet.http, &everything_url, token).await?;
            if !tools.iter().any(|t| t == "echo") {
                return None;
            }
        }
        Some(())
    })
    .await;

    let summary = run_client(
        "fleet_stateless.py",
        &[
            "--base",
            &format!("http://{balancer}"),
            "--admin-token",
            ADMIN_TOKEN,
            "--token",
            token,
            "--session",
            view["id"].as_str().unwrap(),
            "--github",
            &url("github"),
            "--scout",
            &url("scout"),
            "--remote",
            &everything_url,
        ],
    );
    assert!(
        summary["read"]
            .as_str()
            .is_some_and(|t| t.contains("Hello")),
        "{summary}"
    );
    assert_eq!(
        summary["approved_tool"], "mcp__github__github_create_branch",
        "{summary}"
    );
    // The same write from a client that declared it can be asked: asked
    // through an `input_required` result, its answer on the retry (on
    // whichever host) approving it, and conforming too.
    assert!(
        summary["asking_write"]
            .as_str()
            .is_some_and(|t| t.contains("scout/asking")),
        "{summary}"
    );
    assert_eq!(summary["asking_elicited"], 1, "{summary}");
    assert_eq!(
        fleet.github.ref_creations().len(),
        2,
        "each approved write reached GitHub once"
    );
    assert!(
        summary["not_offered"]
            .as_str()
            .is_some_and(|m| m.contains("permission_denied")),
        "{summary}"
    );
    // The host serves tools only: every other request of a 2026-07-28
    // client (and `ping` or `initialize`, which that protocol does not
    // have) is the protocol's method-not-found, with its HTTP status.
    let others = summary["other_answers"].as_object().expect("other answers");
    assert_eq!(others.len(), 10, "{summary}");
    for (method, answer) in others {
        assert_eq!(
            answer,
            &json!({"http": 404, "error": -32601}),
            "{method}: {summary}"
        );
    }
    assert!(
        summary["scout_tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "scout_request_capability")),
        "{summary}"
    );
    assert!(summary["scout_asked"]["request"].is_i64(), "{summary}");
    assert_eq!(summary["remote_tools"], json!(["echo"]), "{summary}");
    assert_eq!(
        summary["remote_echo"], "Echo: through the fleet",
        "{summary}"
    );
    // Without affinity, the reads were served by both hosts.
    let by_host = fleet.reads_by_host().await;
    assert_eq!(by_host.len(), 2, "reads on both hosts: {by_host:?}");
    drop(proxy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_in_session_mode_is_served_through_haproxy_sticking_on_the_mcp_session_id()
 {
    let Some((db, haproxy)) = prerequisites("fleet_session_client") else {
        return;
    };
    let balancers = [free_port(), free_port()].map(|port| format!("127.0.0.1:{port}"));
    let fleet = Fleet::start(&db, &balancers, FakeGitHub::start(GITHUB_TOKEN).await, None);
    let sticky = fleet.balancer(&haproxy, 0, Balance::StickyOnMcpSessionId);
    fleet.admin.set_up().await;
    let view = fleet.admin.session().await;
    let token = view["token"].as_str().unwrap().to_string();
    let url = view["mcp"]["github"].as_str().unwrap().to_string();
    assert!(url.contains(&balancers[0]), "the fleet's address: {url}");

    // Two client sessions one after the other: round robin places their
    // `initialize` on the two hosts, and every request after it follows
    // its `Mcp-Session-Id` to the host that issued it.
    for _ in 0..2 {
        let summary = run_client(
            "fleet_session.py",
            &["--url", &url, "--token", &token, "--calls", "10"],
        );
        assert_eq!(summary["ok"], 10, "{summary}");
        assert_eq!(summary["failed"], json!([]), "{summary}");
        assert_eq!(summary["protocol_version"], "2025-11-25", "{summary}");
    }
    let by_host = fleet.reads_by_host().await;
    assert_eq!(
        by_host.values().copied().collect::<Vec<_>>(),
        vec![10, 10],
        "each client session's calls all on one host, one per host: {by_host:?}"
    );

    // The same client through the same fleet without stickiness: its
    // requests after `initialize` land on a host that does not know its
    // MCP session (404), so it is not served, as the docs say.
    let round_robin = fleet.balancer(&haproxy, 1, Balance::RoundRobin);
    let unsticky = url.replacen(&balancers[0], &balancers[1], 1);
    let summary = run_client(
        "fleet_session.py",
        &["--url", &unsticky, "--token", &token, "--calls", "10"],
    );
    assert!(
        summary["ok"].as_u64().is_some_and(|ok| ok < 10),
        "{summary}"
    );
    drop((sticky, round_robin));
}

/// A child process killed when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
