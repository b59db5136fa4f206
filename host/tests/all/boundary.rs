//! The execution boundary through the real runtime, a real SQLite file and
//! the loopback GitHub: approvals (timeout, denial, single use), revocation
//! at the next boundary, permission_denied for names outside the ceiling,
//! and the whole story in the trace. Every denial asserts that no request
//! reached GitHub and nothing changed there.

use scout_host::boundary::{Boundary, CallRequest, Executed, Session};
use scout_host::policy::{BrandFacts, Catalog, ReviewHold, Role, Rule, SessionInput, Switches};
use scout_host::store::{SqliteStore, Store, TraceState};
use scout_host::{
    Capabilities, CredentialScheme, HttpCapability, HttpConfig, LoadedComponent, Runtime,
    RuntimeConfig, SecretSource,
};
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "ghp_boundary_test_token_123456";

struct World {
    github: FakeGitHub,
    component: LoadedComponent,
    caps: Capabilities,
    boundary: Arc<Boundary>,
    _db: scout_tests::TempDb,
}

async fn world(name: &str, switches: &[(&str, &str)]) -> World {
    let github = FakeGitHub::start(TOKEN).await;
    let runtime = Runtime::new(RuntimeConfig {
        max_concurrent_calls: 4,
        ..Default::default()
    })
    .unwrap();
    let component = runtime
        .load_file(Path::new(scout_tests::components::GITHUB))
        .unwrap();
    let http = HttpCapability::new(
        HttpConfig::new(github.origin())
            .credential(
                CredentialScheme::Bearer,
                SecretSource::Value(TOKEN.to_string()),
            )
            .allow_private_network(true),
    )
    .unwrap();
    let db = scout_tests::TempDb::new(&format!("boundary-{name}"));
    let path = db.path().to_path_buf();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let boundary = Arc::new(Boundary::new(
        store,
        Catalog::seed(),
        Switches::from_vars(switches.iter().copied()),
    ));
    World {
        github,
        component,
        caps: Capabilities::with_http(http),
        boundary,
        _db: db,
    }
}

fn person_chat(id: &str, connected: &[&str], approval_channel: bool) -> Session {
    let input = SessionInput::new(Role::PersonChat)
        .brand(BrandFacts::with_connectors(connected.iter().copied()))
        .approval_channel(approval_channel);
    Session::new(id, "acme", input)
}

fn branch_args(name: &str) -> Value {
    json!({"owner": "octo", "repo": "hello", "branch": name})
}

fn writes(w: &World) -> usize {
    w.github
        .requests()
        .iter()
        .filter(|r| r.method != "GET")
        .count()
}

fn states(w: &World, session: &str) -> Vec<(String, Option<String>)> {
    scout_host::store::block(w.boundary.store().trace_for_session(session))
        .unwrap()
        .into_iter()
        .map(|e| (e.state.as_str().to_string(), e.rule))
        .collect()
}

fn states_in(store: &Arc<dyn Store>, session: &str) -> Vec<(String, Option<String>)> {
    scout_host::store::block(store.trace_for_session(session))
        .unwrap()
        .into_iter()
        .map(|e| (e.state.as_str().to_string(), e.rule))
        .collect()
}

/// Approves (or denies) the first pending approval of `session` once it appears.
fn answer_when_asked(w: &World, session: &str, approve: bool) -> tokio::task::JoinHandle<()> {
    let store = w.boundary.store().clone();
    let session = session.to_string();
    tokio::spawn(async move {
        for _ in 0..500 {
            if let Some(a) = scout_host::store::block(store.pending(&session))
                .unwrap()
                .first()
            {
                scout_host::store::block(store.decide(a.id, approve, "alice")).unwrap();
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no approval was asked for");
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_runs_without_approval_and_the_trace_tells_the_story() {
    let w = world("read", &[("GITHUB_ALLOW_WRITES", "true")]).await;
    let s = person_chat("s-read", &["github"], true);
    let surface = w.boundary.open_session(&s).unwrap();
    assert!(surface.surface.contains("mcp__github__github_read_file"));
    let r = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new(
                "github_read_file",
                &json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
            ),
            &w.caps,
        )
        .await
        .unwrap();
    let Executed::Ran(outcome) = r else {
        panic!("ran")
    };
    assert_eq!(outcome.output.ok().unwrap()["text"], "# Hello\n");
    let all = states(&w, "s-read");
    // The session's start names every tool it was not given, each with the
    // rule that removed it (here: the brand has no coworker, skill or goals).
    let removed: Vec<(String, Option<String>)> = all
        .iter()
        .filter(|(s, _)| s == "removed")
        .cloned()
        .collect();
    assert!(
        removed
            .iter()
            .any(|(_, rule)| rule.as_deref() == Some("no_coworkers")),
        "{removed:?}"
    );
    let trace: Vec<String> = all
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| s != "removed")
        .collect();
    assert_eq!(
        trace,
        [
            "registered",
            "eligible",
            "offered",
            "requested",
            "allowed",
            "executed",
            "result"
        ]
    );
    let events: Vec<_> = scout_host::store::block(w.boundary.store().trace_for_brand("acme"))
        .unwrap()
        .into_iter()
        .filter(|e| e.state != TraceState::Removed)
        .collect();
    assert_eq!(events.len(), 7);
    assert_eq!(events[0].detail["connectors"], json!(["github"]));
    assert!(
        events[2].detail["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__github__github_create_branch")
    );
    // The executed event tells what the guest did on the wire: the declared
    // route it matched, the status and the bytes, never a header or the token.
    let http = &events[5].detail["http"];
    assert_eq!(http[0]["method"], "GET");
    assert_eq!(
        http[0]["route"],
        "GET /repos/{owner}/{repo}/contents/{*path}"
    );
    assert_eq!(http[0]["status"], 200);
    assert!(http[0]["response_bytes"].as_u64().unwrap() > 0, "{http}");
    assert!(!events[5].detail.to_string().contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_switch_that_is_off_is_traced_as_that_switch_at_the_start() {
    let w = world("removed", &[]).await;
    let s = Session::new(
        "s-removed",
        "acme",
        SessionInput::new(Role::PersonChat)
            .brand(BrandFacts::with_connectors(["github", "agentmail"])),
    );
    w.boundary.open_session(&s).unwrap();
    let removed: Vec<(String, Option<String>)> =
        scout_host::store::block(w.boundary.store().trace_for_session("s-removed"))
            .unwrap()
            .into_iter()
            .filter(|e| e.state == TraceState::Removed)
            .map(|e| (e.tool.unwrap(), e.rule))
            .collect();
    let rule = |tool: &str| {
        removed
            .iter()
            .find(|(t, _)| t == tool)
            .and_then(|(_, r)| r.clone())
    };
    assert_eq!(
        rule("mcp__agentmail__agentmail_send_message").as_deref(),
        Some("switch:AGENTMAIL_ALLOW_SENDS")
    );
    assert_eq!(
        rule("mcp__team__team_roster").as_deref(),
        Some("no_coworkers")
    );
    // Registered and refusing is not removed: GitHub's writes stay offered.
    assert_eq!(rule("mcp__github__github_create_branch"), None);

    // A coworker run: the ceiling, not a switch.
    let profile = scout_host::policy::Preset::Writer.profile();
    let c = Session::new(
        "s-coworker",
        "acme",
        SessionInput::new(Role::CoworkerRun {
            route: scout_host::policy::Route::Standard,
        })
        .profile(profile),
    );
    w.boundary.open_session(&c).unwrap();
    let rules: Vec<(String, Option<String>)> =
        scout_host::store::block(w.boundary.store().trace_for_session("s-coworker"))
            .unwrap()
            .into_iter()
            .filter(|e| e.state == TraceState::Removed)
            .map(|e| (e.tool.unwrap(), e.rule))
            .collect();
    assert!(
        rules.contains(&(
            "mcp__transcripts__transcript_search".to_string(),
            Some("outside_role".to_string())
        )),
        "{rules:?}"
    );
    assert!(
        rules.contains(&(
            "mcp__project__project_delete".to_string(),
            Some("outside_role".to_string())
        )),
        "{rules:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_waits_for_a_person_and_runs_once_approved() {
    let w = world(
        "approve",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "10000"),
        ],
    )
    .await;
    let s = person_chat("s-approve", &["github"], true);
    let person = answer_when_asked(&w, "s-approve", true);
    let r = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_create_branch", &branch_args("scout/a")),
            &w.caps,
        )
        .await
        .unwrap();
    person.await.unwrap();
    assert!(
        matches!(r, Executed::Ran(ref o) if o.output.ok().is_some()),
        "{r:?}"
    );
    assert!(w.github.branch_sha("octo", "hello", "scout/a").is_some());
    let trace = states(&w, "s-approve");
    let names: Vec<&str> = trace.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        names,
        [
            "requested",
            "requested",
            "decided",
            "allowed",
            "executed",
            "result"
        ],
        "{trace:?}"
    );
    assert_eq!(trace[1].1.as_deref(), Some("approval_requested"));
    assert_eq!(trace[2].1.as_deref(), Some("approved"));
    assert_eq!(trace[3].1.as_deref(), Some("approved_by_person"));
    // Who decided, and when.
    let decided = scout_host::store::block(w.boundary.store().trace_for_session("s-approve"))
        .unwrap()
        .into_iter()
        .find(|e| e.state == TraceState::Decided)
        .unwrap();
    assert_eq!(decided.detail["by"], "alice");
    assert!(
        decided.detail["decided_at_ms"].as_i64().unwrap() > 0,
        "{decided:?}"
    );

    // The approval was for those exact arguments and is used up: the same
    // call again asks again, and a denial stops it with nothing sent.
    let before = writes(&w);
    let person = answer_when_asked(&w, "s-approve", false);
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_create_branch", &branch_args("scout/a")),
            &w.caps,
        )
        .await
        .unwrap_err();
    person.await.unwrap();
    assert_eq!(denied.rule, Rule::ApprovalDenied);
    assert_eq!(writes(&w), before, "no write request after a denial");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_for_other_arguments_does_not_serve() {
    let w = world(
        "digest",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "300"),
        ],
    )
    .await;
    let s = person_chat("s-digest", &["github"], true);
    let store = w.boundary.store();
    let name = "mcp__github__github_create_branch";
    let id = store
        .request_approval(
            "s-digest",
            name,
            &scout_host::store::args_digest(&branch_args("scout/ok")),
        )
        .await
        .unwrap();
    store.decide(id, true, "alice").await.unwrap();
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_create_branch", &branch_args("scout/other")),
            &w.caps,
        )
        .await
        .unwrap_err();
    assert_eq!(denied.rule, Rule::ApprovalTimedOut);
    assert!(
        w.github
            .branch_sha("octo", "hello", "scout/other")
            .is_none()
    );
    assert_eq!(writes(&w), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_zero_timeout_denies_at_once() {
    let w = world(
        "zero",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "0"),
        ],
    )
    .await;
    let s = person_chat("s-zero", &["github"], true);
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_create_branch", &branch_args("scout/z")),
            &w.caps,
        )
        .await
        .unwrap_err();
    assert_eq!(denied.rule, Rule::ApprovalTimedOut);
    assert!(w.github.requests().is_empty(), "nothing reached GitHub");
    assert!(
        w.boundary
            .store()
            .pending("s-zero")
            .await
            .unwrap()
            .is_empty(),
        "the timed-out request cannot be approved later"
    );
    // The trace says nobody answered: the timeout decided.
    let decided = scout_host::store::block(w.boundary.store().trace_for_session("s-zero"))
        .unwrap()
        .into_iter()
        .find(|e| e.state == TraceState::Decided)
        .expect("a decided event");
    assert_eq!(
        (decided.rule.as_deref(), decided.detail["by"].as_str()),
        (Some("timed_out"), Some("timeout")),
        "{decided:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_without_an_approval_channel_refuses_gated_calls() {
    let w = world("nochannel", &[("GITHUB_ALLOW_WRITES", "true")]).await;
    let s = person_chat("s-nochannel", &["github"], false);
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_create_branch", &branch_args("scout/n")),
            &w.caps,
        )
        .await
        .unwrap_err();
    assert_eq!(denied.rule, Rule::ApprovalRequired);
    assert!(w.github.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn github_writes_refuse_without_their_switch() {
    let w = world("switch", &[]).await;
    let s = person_chat("s-switch", &["github"], true);
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_create_branch", &branch_args("scout/s")),
            &w.caps,
        )
        .await
        .unwrap_err();
    assert_ne!(
        denied.rule,
        Rule::NotOffered,
        "registered but refusing, as the seed says"
    );
    assert!(w.github.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_outside_the_ceiling_is_a_permission_denied_event() {
    let w = world("ceiling", &[("GITHUB_ALLOW_WRITES", "true")]).await;
    // The brand has not connected GitHub: none of its tools exist for this session.
    let s = person_chat("s-ceiling", &[], true);
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new(
                "github_read_file",
                &json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
            ),
            &w.caps,
        )
        .await
        .unwrap_err();
    assert_eq!(denied.rule, Rule::NotOffered);
    assert!(
        !denied.to_string().contains("github"),
        "the reason names no hidden tool: {denied}"
    );
    let trace = states(&w, "s-ceiling");
    assert_eq!(
        trace.last().unwrap().0,
        TraceState::PermissionDenied.as_str()
    );
    assert!(w.github.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_to_a_removed_tool_is_traced_with_the_rule_that_removed_it() {
    let w = world("removed-call", &[("GITHUB_ALLOW_WRITES", "true")]).await;
    // A host that runs GitHub: what a session lacks of it has a reason.
    let boundary = Boundary::new(
        w.boundary.store().clone(),
        Catalog::seed(),
        Switches::from_vars([("GITHUB_ALLOW_WRITES", "true")]),
    )
    .hosting(["github"]);
    let read = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    let cases = [
        // The brand has no GitHub connection: not registered.
        (person_chat("s-unregistered", &[], true), "not_registered"),
        // A plain coworker's ceiling holds no connector tool.
        (
            Session::new(
                "s-coworker-call",
                "acme",
                SessionInput::new(Role::CoworkerRun {
                    route: scout_host::policy::Route::Standard,
                })
                .profile(scout_host::policy::Preset::Writer.profile())
                .brand(BrandFacts::with_connectors(["github"])),
            ),
            "outside_role",
        ),
    ];
    for (session, rule) in cases {
        boundary.open_session(&session).unwrap();
        let denied = boundary
            .call(
                &session,
                &w.component,
                CallRequest::new("github_read_file", &read),
                &w.caps,
            )
            .await
            .unwrap_err();
        assert_eq!(denied.rule.name(), rule, "{}", session.id);
        assert_eq!(denied.rule.told(), Rule::NotOffered, "{}", session.id);
        assert!(
            !denied.to_string().contains(rule),
            "the agent is not told why: {denied}"
        );
        let last = scout_host::store::block(boundary.store().trace_for_session(&session.id))
            .unwrap()
            .pop()
            .unwrap();
        assert_eq!(
            (last.state, last.rule.as_deref()),
            (TraceState::PermissionDenied, Some(rule)),
            "{}",
            session.id
        );
    }
    assert!(w.github.requests().is_empty(), "nothing reached GitHub");
}

#[tokio::test(flavor = "multi_thread")]
async fn revocation_takes_effect_at_the_next_boundary_even_after_approval() {
    let w = world(
        "revoke",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "10000"),
        ],
    )
    .await;
    let s = Arc::new(person_chat("s-revoke", &["github"], true));
    // The person approves, but the connection is disabled before the call executes.
    let store = w.boundary.store().clone();
    let boundary = w.boundary.clone();
    let session = s.clone();
    let revoker = tokio::spawn(async move {
        loop {
            if let Some(a) = store.pending("s-revoke").await.unwrap().first() {
                boundary.revoke_connector("github", &[&session]);
                store.decide(a.id, true, "alice").await.ok();
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_create_branch", &branch_args("scout/r")),
            &w.caps,
        )
        .await
        .unwrap_err();
    revoker.await.unwrap();
    assert_eq!(denied.rule, Rule::Revoked);
    assert_eq!(writes(&w), 0, "nothing was written");
    assert!(w.github.branch_sha("octo", "hello", "scout/r").is_none());

    // Re-enabled, the earlier approval does not revive: a new call asks again (and times out here).
    w.boundary.restore_connector("github");
    let store = w.boundary.store();
    let name = "mcp__github__github_create_branch";
    let digest = scout_host::store::args_digest(&branch_args("scout/r"));
    assert!(
        store
            .consume_approval("s-revoke", name, &digest)
            .await
            .is_err(),
        "the old approval stays revoked"
    );

    // A revoked session is denied outright.
    w.boundary.revoke_session(&s);
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new(
                "github_read_file",
                &json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
            ),
            &w.caps,
        )
        .await
        .unwrap_err();
    assert_eq!(denied.rule, Rule::Revoked);
    assert_eq!(
        w.github
            .requests()
            .iter()
            .filter(|r| r.path.contains("README"))
            .count(),
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn disabling_a_stored_connection_denies_the_next_call() {
    use scout_host::credentials::{Resolver, ResolverConfig};
    let github = FakeGitHub::start(TOKEN).await;
    let runtime = Runtime::new(RuntimeConfig {
        max_concurrent_calls: 2,
        ..Default::default()
    })
    .unwrap();
    let component = runtime
        .load_file(Path::new(scout_tests::components::GITHUB))
        .unwrap();
    let _db = scout_tests::TempDb::new("boundary-disable");
    let path = _db.path().to_path_buf();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let key = [7u8; 32];
    store
        .put_connection("acme", "github", TOKEN, &key)
        .await
        .unwrap();

    // Credentials are resolved afresh at every revision.
    struct StoredConnections {
        store: Arc<dyn Store>,
        key: [u8; 32],
    }
    impl scout_host::boundary::Connections for StoredConnections {
        fn live(
            &self,
            brand: &str,
            candidates: &std::collections::BTreeSet<String>,
            catalog: &Catalog,
        ) -> std::collections::BTreeSet<String> {
            let config = ResolverConfig::default();
            let resolver = Resolver::new(&*self.store, catalog, &config, self.key, |_| None);
            candidates
                .iter()
                .filter(|c| matches!(resolver.resolve_server(brand, c), Ok(Some(_))))
                .cloned()
                .collect()
        }
    }
    let live = StoredConnections {
        store: store.clone(),
        key,
    };
    let boundary = Boundary::new(
        store.clone(),
        Catalog::seed(),
        Switches::from_vars([("GITHUB_ALLOW_WRITES", "true")]),
    )
    .with_connections(live);
    let resolved = {
        let catalog = Catalog::seed();
        let config = ResolverConfig::default();
        Resolver::new(&*store, &catalog, &config, key, |_| None)
            .brand_facts("acme")
            .unwrap()
    };
    assert!(resolved.connected.contains("github"));
    let s = Session::new(
        "s-disable",
        "acme",
        SessionInput::new(Role::PersonChat)
            .brand(resolved)
            .approval_channel(true),
    );
    assert!(
        boundary
            .open_session(&s)
            .unwrap()
            .surface
            .contains("mcp__github__github_read_file")
    );
    let caps = Capabilities::with_http(
        HttpCapability::new(
            HttpConfig::new(github.origin())
                .credential(CredentialScheme::Bearer, SecretSource::Value(TOKEN.into()))
                .allow_private_network(true),
        )
        .unwrap(),
    );
    let args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    assert!(matches!(
        boundary
            .call(
                &s,
                &component,
                CallRequest::new("github_read_file", &args),
                &caps
            )
            .await,
        Ok(Executed::Ran(_))
    ));
    let sent = github.requests().len();

    assert!(store.disable_connection("acme", "github").await.unwrap());
    // What the host does after any change to a connection.
    boundary.changed();
    let denied = boundary
        .call(
            &s,
            &component,
            CallRequest::new("github_read_file", &args),
            &caps,
        )
        .await
        .unwrap_err();
    assert_eq!(
        denied.rule,
        Rule::Revoked,
        "offered at the start, revoked now"
    );
    assert_eq!(
        github.requests().len(),
        sent,
        "no request after the connection was disabled"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn withdrawing_a_connector_from_a_grant_denies_the_next_call() {
    let w = world("withdraw", &[("GITHUB_ALLOW_WRITES", "true")]).await;
    let s = person_chat("s-withdraw", &["github"], true);
    w.boundary.open_session(&s).unwrap();
    let args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    assert!(matches!(
        w.boundary
            .call(
                &s,
                &w.component,
                CallRequest::new("github_read_file", &args),
                &w.caps
            )
            .await,
        Ok(Executed::Ran(_))
    ));
    let sent = w.github.requests().len();
    w.boundary.withdraw_grant(&s, "github");
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_read_file", &args),
            &w.caps,
        )
        .await
        .unwrap_err();
    assert_eq!(denied.rule, Rule::Revoked);
    assert_eq!(w.github.requests().len(), sent);
    // Other sessions keep theirs.
    let other = person_chat("s-other", &["github"], true);
    assert!(matches!(
        w.boundary
            .call(
                &other,
                &w.component,
                CallRequest::new("github_read_file", &args),
                &w.caps
            )
            .await,
        Ok(Executed::Ran(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_or_changed_tool_is_held_until_an_operator_approves_it() {
    use scout_host::review::{ReviewStatus, approve_all, review};
    let github = FakeGitHub::start(TOKEN).await;
    let runtime = Runtime::new(RuntimeConfig {
        max_concurrent_calls: 2,
        ..Default::default()
    })
    .unwrap();
    let bytes = std::fs::read(scout_tests::components::GITHUB).unwrap();
    let component = runtime.load_bytes(&bytes).unwrap();
    let _db = scout_tests::TempDb::new("boundary-review");
    let path = _db.path().to_path_buf();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let boundary =
        Boundary::new(store.clone(), Catalog::seed(), Switches::default()).require_review();
    let s = person_chat("s-review", &["github"], true);
    let caps = Capabilities::with_http(
        HttpCapability::new(
            HttpConfig::new(github.origin())
                .credential(CredentialScheme::Bearer, SecretSource::Value(TOKEN.into()))
                .allow_private_network(true),
        )
        .unwrap(),
    );
    let args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});

    // Discovered, not reviewed: not offered, and the trace says why.
    assert!(
        review(&*store, &component)
            .unwrap()
            .iter()
            .all(|r| r.status == ReviewStatus::New)
    );
    let held = boundary
        .call(
            &s,
            &component,
            CallRequest::new("github_read_file", &args),
            &caps,
        )
        .await
        .unwrap_err();
    assert_eq!(held.rule, Rule::Held(ReviewHold::New));
    assert_eq!(held.rule.told(), Rule::NotOffered);
    assert_eq!(
        states_in(&store, "s-review").last().unwrap().1.as_deref(),
        Some("unreviewed_new")
    );
    assert!(github.requests().is_empty());

    // An operator approves: it runs.
    assert_eq!(approve_all(&*store, &component, "operator").unwrap(), 11);
    // What the host's reviews API does after an operator's review.
    boundary.changed();
    assert!(matches!(
        boundary
            .call(
                &s,
                &component,
                CallRequest::new("github_read_file", &args),
                &caps
            )
            .await,
        Ok(Executed::Ran(_))
    ));

    // An update changes the tool's description: held again until approved again.
    let updated = scout_tests::patch_bytes(
        &bytes,
        b"Read one file from a repository",
        b"READ one file from a repository",
    );
    let component = runtime.load_bytes(&updated).unwrap();
    let statuses = review(&*store, &component).unwrap();
    assert_eq!(
        statuses
            .iter()
            .filter(|r| r.status == ReviewStatus::Changed)
            .count(),
        1,
        "only read-file changed"
    );
    let sent = github.requests().len();
    let held = boundary
        .call(
            &s,
            &component,
            CallRequest::new("github_read_file", &args),
            &caps,
        )
        .await
        .unwrap_err();
    assert_eq!(held.rule, Rule::Held(ReviewHold::Changed));
    assert_eq!(held.rule.told(), Rule::NotOffered);
    assert_eq!(
        states_in(&store, "s-review").last().unwrap().1.as_deref(),
        Some("unreviewed_changed")
    );
    assert_eq!(github.requests().len(), sent);
    // Unchanged tools of the update still run.
    assert!(matches!(
        boundary
            .call(
                &s,
                &component,
                CallRequest::new(
                    "github_list_branches",
                    &json!({"owner": "octo", "repo": "hello"})
                ),
                &caps
            )
            .await,
        Ok(Executed::Ran(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn neither_the_result_nor_any_trace_row_carries_the_secret() {
    let w = world("scrub", &[]).await;
    let s = person_chat("s-scrub", &["github"], true);
    w.boundary.open_session(&s).unwrap();
    // An agent that learned the token elsewhere passes it in, escaped; the
    // connector quotes the bad owner name in its error.
    for owner in [
        format!("{TOKEN}!"),
        format!("{}!", TOKEN.replace('_', "%5F")),
    ] {
        let r = w
            .boundary
            .call(
                &s,
                &w.component,
                CallRequest::new(
                    "github_list_branches",
                    &json!({"owner": owner, "repo": "hello"}),
                ),
                &w.caps,
            )
            .await
            .unwrap();
        let Executed::Ran(outcome) = r else {
            panic!("ran")
        };
        let shown = serde_json::to_string(&outcome).unwrap();
        assert!(outcome.output.err().is_some(), "{shown}");
        assert!(!shown.contains(TOKEN), "the result: {shown}");
        assert!(
            shown.contains(scout_host::capabilities::http::REDACTED),
            "{shown}"
        );
    }
    let rows = serde_json::to_string(
        &w.boundary
            .store()
            .trace_for_session("s-scrub")
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(
        !rows.contains(TOKEN) && !rows.contains(&TOKEN.replace('_', "%5F")),
        "a trace row: {rows}"
    );
    assert!(
        rows.contains(scout_host::capabilities::http::REDACTED),
        "the tool errors are recorded, scrubbed: {rows}"
    );
    assert!(w.github.requests().is_empty(), "nothing reached GitHub");
}

/// Refuses exactly the trace's `allowed` rows on the real file (a real
/// SQLite failure, raised by a trigger), until the trigger is dropped.
fn refuse_allowed_rows(w: &World) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(w._db.path()).unwrap();
    db.execute_batch(
        "CREATE TRIGGER refuse_allowed BEFORE INSERT ON trace WHEN NEW.state = 'allowed'
         BEGIN SELECT RAISE(ABORT, 'the disk refused the write'); END;",
    )
    .unwrap();
    db
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_whose_intent_cannot_be_recorded_does_not_run() {
    let w = world("unrecorded", &[("GITHUB_ALLOW_WRITES", "true")]).await;
    let s = person_chat("s-unrecorded", &["github"], true);
    w.boundary.open_session(&s).unwrap();
    let db = refuse_allowed_rows(&w);
    let approver = answer_when_asked(&w, "s-unrecorded", true);
    let args = branch_args("scout/unrecorded");
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_create_branch", &args),
            &w.caps,
        )
        .await
        .unwrap_err();
    approver.await.unwrap();
    assert_eq!(denied.rule, Rule::Unrecorded);
    assert!(
        w.github.requests().is_empty(),
        "no effect without its durable intent"
    );
    let trace = states(&w, "s-unrecorded");
    assert!(
        trace.contains(&("denied".to_string(), Some("unrecorded".to_string()))),
        "{trace:?}"
    );
    assert!(
        !trace
            .iter()
            .any(|(state, _)| state == "allowed" || state == "executed"),
        "{trace:?}"
    );
    // Once the disk takes writes again, the same call runs (asking again:
    // the approval was consumed by the call that could not run).
    db.execute_batch("DROP TRIGGER refuse_allowed;").unwrap();
    let approver = answer_when_asked(&w, "s-unrecorded", true);
    let r = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_create_branch", &args),
            &w.caps,
        )
        .await
        .unwrap();
    approver.await.unwrap();
    assert!(matches!(r, Executed::Ran(_)));
    assert_eq!(writes(&w), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_is_recorded_in_one_commit_and_unanswered_if_that_commit_fails() {
    let w = world("read-commit", &[]).await;
    let s = person_chat("s-read-commit", &["github"], true);
    w.boundary.open_session(&s).unwrap();
    let args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    // A plain read: its request, decision and outcome in one commit.
    let before = w.boundary.store().trace_commits();
    let r = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_read_file", &args),
            &w.caps,
        )
        .await
        .unwrap();
    assert!(matches!(r, Executed::Ran(_)));
    assert_eq!(
        w.boundary.store().trace_commits() - before,
        1,
        "one commit for the whole read"
    );
    let call: Vec<_> = states(&w, "s-read-commit")
        .into_iter()
        .skip_while(|(state, _)| state != "requested")
        .map(|(state, _)| state)
        .collect();
    assert_eq!(call, ["requested", "allowed", "executed", "result"]);

    // That commit fails: the read ran, and its answer is withheld.
    let db = refuse_allowed_rows(&w);
    let denied = w
        .boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_read_file", &args),
            &w.caps,
        )
        .await
        .unwrap_err();
    assert_eq!(denied.rule, Rule::Unrecorded);
    let trace = states(&w, "s-read-commit");
    assert_eq!(
        trace.last(),
        Some(&("denied".to_string(), Some("unrecorded".to_string()))),
        "{trace:?}"
    );
    assert_eq!(
        trace.iter().filter(|(state, _)| state == "result").count(),
        1,
        "only the first read has a result: {trace:?}"
    );
    db.execute_batch("DROP TRIGGER refuse_allowed;").unwrap();
}

/// Calls `tool` in session `s`, which must be denied.
async fn denied_call(
    w: &World,
    s: &Session,
    tool: &str,
    args: Value,
) -> scout_host::boundary::Denied {
    w.boundary
        .call(s, &w.component, CallRequest::new(tool, &args), &w.caps)
        .await
        .unwrap_err()
}

/// What the trace and the agent say of one denied call: the last trace
/// event (state and rule) and the reason the agent was given.
fn denial_seen(
    w: &World,
    session: &str,
    denied: &scout_host::boundary::Denied,
) -> (String, String, String) {
    let (state, rule) = states(w, session).pop().unwrap();
    (state, rule.unwrap_or_default(), denied.to_string())
}

fn seen(state: &str, rule: &str, told: Rule) -> (String, String, String) {
    (state.into(), rule.into(), told.safe_reason().into())
}

#[tokio::test(flavor = "multi_thread")]
async fn each_rule_a_call_meets_is_named_in_the_trace_and_told_to_the_agent() {
    let w = world(
        "rules",
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("APPROVAL_TIMEOUT_MS", "1500"),
        ],
    )
    .await;
    let read = json!({"owner": "octo", "repo": "hello", "path": "README.md"});

    // Each case: a fresh session (with or without someone to ask), the
    // call, whether a person answers no, and the rule, in the trace and
    // in the agent's text.
    struct Case {
        session: &'static str,
        channel: bool,
        tool: &'static str,
        args: Value,
        person_says_no: bool,
        rule: Rule,
        state: &'static str,
        /// As the trace writes it: the operator's vocabulary, pinned.
        name: &'static str,
    }
    let cases = [
        // A name the session has no tool by.
        Case {
            session: "s-rule-unknown",
            channel: true,
            tool: "github_no_such_tool",
            args: json!({}),
            person_says_no: false,
            rule: Rule::NotOffered,
            state: "permission_denied",
            name: "not_offered",
        },
        // No one to ask.
        Case {
            session: "s-rule-no-channel",
            channel: false,
            tool: "github_create_branch",
            args: branch_args("scout/r1"),
            person_says_no: false,
            rule: Rule::ApprovalRequired,
            state: "denied",
            name: "approval_required",
        },
        // A person says no.
        Case {
            session: "s-rule-denied",
            channel: true,
            tool: "github_create_branch",
            args: branch_args("scout/r2"),
            person_says_no: true,
            rule: Rule::ApprovalDenied,
            state: "denied",
            name: "approval_denied",
        },
        // Nobody answers.
        Case {
            session: "s-rule-timeout",
            channel: true,
            tool: "github_create_branch",
            args: branch_args("scout/r3"),
            person_says_no: false,
            rule: Rule::ApprovalTimedOut,
            state: "denied",
            name: "approval_timed_out",
        },
    ];
    for case in cases {
        let s = person_chat(case.session, &["github"], case.channel);
        w.boundary.open_session(&s).unwrap();
        let denier = case
            .person_says_no
            .then(|| answer_when_asked(&w, &s.id, false));
        let denied = denied_call(&w, &s, case.tool, case.args).await;
        if let Some(denier) = denier {
            denier.await.unwrap();
        }
        assert_eq!(denied.rule, case.rule, "{}", case.session);
        assert_eq!(
            denial_seen(&w, &s.id, &denied),
            seen(case.state, case.name, case.rule),
            "{}",
            case.session
        );
    }

    // A caller that joined another call's request goes away: caller gone,
    // told as a withdrawal.
    let s = person_chat("s-rule-gone", &["github"], true);
    w.boundary.open_session(&s).unwrap();
    let args = branch_args("scout/r4");
    let gone = tokio_util::sync::CancellationToken::new();
    let first = w.boundary.call(
        &s,
        &w.component,
        CallRequest::new("github_create_branch", &args),
        &w.caps,
    );
    let second = async {
        // Once the first call's request is filed, the second joins it, and
        // its caller is gone (whenever it looks, it finds it gone).
        for _ in 0..400 {
            if w.boundary.store().pending(&s.id).await.unwrap().len() == 1 {
                gone.cancel();
                return w
                    .boundary
                    .call(
                        &s,
                        &w.component,
                        CallRequest::new("github_create_branch", &args).while_present(gone.clone()),
                        &w.caps,
                    )
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("no approval was asked for");
    };
    let (first, second) = tokio::join!(first, second);
    let second = second.unwrap_err();
    assert_eq!(second.rule, Rule::CallerGone);
    assert_eq!(second.to_string(), Rule::ApprovalWithdrawn.safe_reason());
    assert!(
        states(&w, &s.id).contains(&("denied".to_string(), Some("caller_gone".to_string()))),
        "{:?}",
        states(&w, &s.id)
    );
    assert_eq!(
        first.unwrap_err().rule,
        Rule::ApprovalTimedOut,
        "the first caller still waited for its answer"
    );

    // The session's authority ended.
    let s = person_chat("s-rule-revoked", &["github"], true);
    w.boundary.open_session(&s).unwrap();
    w.boundary.revoke_session(&s);
    let denied = denied_call(&w, &s, "github_read_file", read).await;
    assert_eq!(denied.rule, Rule::Revoked);
    assert_eq!(
        denial_seen(&w, &s.id, &denied),
        seen("denied", "revoked", Rule::Revoked)
    );

    assert_eq!(writes(&w), 0, "no denied call reached GitHub");
    assert!(
        w.github.requests().is_empty(),
        "no request at all: {:?}",
        w.github.requests()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_review_store_that_cannot_be_read_holds_the_tool() {
    let w = world("review-unreadable", &[]).await;
    let boundary = Boundary::new(
        w.boundary.store().clone(),
        Catalog::seed(),
        Switches::default(),
    )
    .require_review();
    let s = person_chat("s-review-unreadable", &["github"], true);
    boundary.open_session(&s).unwrap();
    let db = rusqlite::Connection::open(w._db.path()).unwrap();
    db.execute_batch("DROP TABLE tool_reviews;").unwrap();
    let args = json!({"owner": "octo", "repo": "hello", "path": "README.md"});
    let denied = boundary
        .call(
            &s,
            &w.component,
            CallRequest::new("github_read_file", &args),
            &w.caps,
        )
        .await
        .unwrap_err();
    assert_eq!(denied.rule, Rule::Held(ReviewHold::StoreUnavailable));
    assert_eq!(
        denied.to_string(),
        Rule::NotOffered.safe_reason(),
        "the agent is told only that it is not offered"
    );
    assert_eq!(
        states(&w, &s.id).pop().unwrap(),
        (
            "permission_denied".to_string(),
            Some("unreviewed_store_unavailable".to_string())
        )
    );
    assert!(w.github.requests().is_empty(), "fails closed: nothing sent");
}
