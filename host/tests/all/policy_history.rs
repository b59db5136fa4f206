//! The session's history as operator policies read it (issue 56,
//! `context.history`): the store's window counts on both backends (the
//! windows' edges, what is counted and what is not, old rows deleted, two
//! hosts deciding a brand's calls at once allowing exactly the limit), then
//! window rules through real `serve` processes, the official MCP client
//! sending AgentMail messages at once and a fake AgentMail counting them:
//!
//! - one host on SQLite, "at most 5 sends per session per hour": of 7 sends
//!   fired at once in one session exactly 5 reach AgentMail and 2 are
//!   refused naming the policy, whose trace rows name it and its revision;
//!   another session of the brand still sends;
//! - two hosts on one PostgreSQL database, "at most 5 sends per brand per
//!   hour": 5 sends fired at once on each host's session, exactly 5 reach
//!   AgentMail and the other 5 are refused naming the policy.

use super::crash_safety::Admin;
use crate::common;
use reqwest::Method;
use scout_host::policy::operator::HistoryFacts;
use scout_host::store::policy_counts::{CallEffect, CountedCall, DAY_MS, HOUR_MS};
use scout_host::store::{PgOptions, PgStore, SqliteStore, Store, block};
use scout_host::store::{TraceEvent, TraceState};
use scout_tests::{ServeProcess, TempDb};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where one test's stores live.
enum Db {
    Sqlite(TempDb),
    Postgres(scout_tests::pg::PgDatabase),
}

impl Db {
    /// One more host on the same data.
    fn store(&self) -> Arc<dyn Store> {
        match self {
            Db::Sqlite(db) => Arc::new(SqliteStore::open(db.path()).unwrap()),
            Db::Postgres(db) => Arc::new(PgStore::connect(PgOptions::new(db.url())).unwrap()),
        }
    }
}

macro_rules! on_both_backends {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(#[test]
            fn $test() {
                super::$test(&super::Db::Sqlite(scout_tests::TempDb::new(&format!(
                    "policy-history-{}",
                    stringify!($test)
                ))));
            })*
        }
        mod postgres {
            $(#[test]
            fn $test() {
                if let Some(db) = scout_tests::pg::database_or_skip(stringify!($test)) {
                    super::$test(&super::Db::Postgres(db));
                }
            })*
        }
    };
}

on_both_backends!(
    the_windows_count_what_was_allowed_before_the_call_and_nothing_older,
    a_refused_call_is_not_counted,
    the_session_totals_count_effects_spend_and_approvals,
    two_hosts_deciding_at_once_allow_exactly_five,
);

const NOW: i64 = 1_800_000_000_000;

fn call<'a>(brand: &'a str, session: &'a str, tool: &'a str, at_ms: i64) -> CountedCall<'a> {
    CountedCall {
        brand,
        session,
        connector: "agentmail",
        tool,
        effect: CallEffect::Write,
        at_ms,
    }
}

/// Records `call` as allowed; the history it was decided on.
fn allow(store: &dyn Store, call: &CountedCall<'_>) -> HistoryFacts {
    block(store.decide_on_history(call, &|_| true)).unwrap()
}

/// What `call` would be decided on, recording nothing.
fn look(store: &dyn Store, call: &CountedCall<'_>) -> HistoryFacts {
    block(store.decide_on_history(call, &|_| false)).unwrap()
}

fn the_windows_count_what_was_allowed_before_the_call_and_nothing_older(db: &Db) {
    let store = db.store();
    let send = "mcp__agentmail__send_message";
    let list = "mcp__agentmail__list_threads";
    // Exactly a day before NOW: out of every window, and deleted.
    allow(&*store, &call("acme", "s1", send, NOW - DAY_MS));
    // Exactly an hour before: in the day, out of the hour.
    allow(&*store, &call("acme", "s1", send, NOW - HOUR_MS));
    // A millisecond later: in the hour.
    allow(&*store, &call("acme", "s1", send, NOW - HOUR_MS + 1));
    // Another session of the brand, and another tool of the connector.
    allow(&*store, &call("acme", "s2", send, NOW - 10));
    allow(&*store, &call("acme", "s1", list, NOW - 5));
    // Another brand's sends count for nothing here.
    allow(&*store, &call("globex", "s9", send, NOW - 5));

    let h = look(&*store, &call("acme", "s1", send, NOW));
    // Since the session opened: all three of s1's sends (the day-old one too).
    assert_eq!(h.tool.in_session, 3, "{h:?}");
    assert_eq!(h.tool.in_session_last_hour, 1, "{h:?}");
    assert_eq!(h.tool.in_brand_last_hour, 2, "{h:?}");
    assert_eq!(h.tool.in_brand_last_day, 3, "{h:?}");
    assert_eq!(h.connector.in_session, 4, "{h:?}");
    assert_eq!(h.connector.in_session_last_hour, 2, "{h:?}");
    assert_eq!(h.connector.in_brand_last_hour, 3, "{h:?}");
    assert_eq!(h.connector.in_brand_last_day, 4, "{h:?}");
    assert_eq!(h.session_calls, 4, "{h:?}");

    // An hour short of a day on, the send of exactly an hour before NOW is
    // out of the day too, and the session's totals still count it.
    let later = look(&*store, &call("acme", "s1", send, NOW + DAY_MS - HOUR_MS));
    assert_eq!(later.tool.in_brand_last_day, 2, "{later:?}");
    assert_eq!(later.tool.in_brand_last_hour, 0, "{later:?}");
    assert_eq!(later.tool.in_session, 3, "{later:?}");
}

fn a_refused_call_is_not_counted(db: &Db) {
    let store = db.store();
    let send = "mcp__agentmail__send_message";
    for i in 0..3 {
        let seen = block(
            store.decide_on_history(&call("acme", "s1", send, NOW + i), &|h| {
                h.tool.in_session_last_hour < 2
            }),
        )
        .unwrap();
        assert_eq!(
            seen.tool.in_session_last_hour,
            i.min(2),
            "call {i}: {seen:?}"
        );
    }
    let h = look(&*store, &call("acme", "s1", send, NOW + 10));
    assert_eq!(h.tool.in_session_last_hour, 2, "{h:?}");
    assert_eq!(h.session_calls, 2, "{h:?}");
}

fn the_session_totals_count_effects_spend_and_approvals(db: &Db) {
    let store = db.store();
    let read = CountedCall {
        effect: CallEffect::Read,
        ..call("acme", "s1", "mcp__agentmail__list_threads", NOW)
    };
    allow(&*store, &read);
    allow(
        &*store,
        &call("acme", "s1", "mcp__agentmail__send_message", NOW + 1),
    );
    let billed = CountedCall {
        effect: CallEffect::Billed,
        connector: "scrape",
        ..call("acme", "s1", "mcp__scrape__crawl", NOW + 2)
    };
    allow(&*store, &billed);
    // What the session's meter on the connector charged (its run is
    // `session:connector`), and another session's charge on the same one.
    block(store.charge("s1:scrape", "scrape", "acme", "2027-01-15", 40, "k1")).unwrap();
    block(store.charge("s1:scrape", "scrape", "acme", "2027-01-15", 2, "k2")).unwrap();
    block(store.charge("s2:scrape", "scrape", "acme", "2027-01-15", 500, "k3")).unwrap();
    // Two approvals given, one declined, one still pending.
    for (i, answer) in [Some(true), Some(true), Some(false), None]
        .into_iter()
        .enumerate()
    {
        let id =
            block(store.request_approval("s1", "mcp__scrape__crawl", &format!("d{i}"))).unwrap();
        if let Some(approved) = answer {
            block(store.decide(id, approved, "ops")).unwrap();
        }
    }
    let h = look(
        &*store,
        &CountedCall {
            at_ms: NOW + 3,
            ..billed
        },
    );
    assert_eq!(h.session_calls, 3, "{h:?}");
    assert_eq!(h.session_effects, 2, "{h:?}");
    assert_eq!(h.session_spent_units, 42, "{h:?}");
    assert_eq!(h.session_approvals, 2, "{h:?}");
    assert_eq!(h.connector.in_session, 1, "{h:?}");
    // Another session starts from nothing.
    let other = look(
        &*store,
        &call("acme", "s2", "mcp__agentmail__send_message", NOW + 3),
    );
    assert_eq!(
        (
            other.session_calls,
            other.session_effects,
            other.session_approvals
        ),
        (0, 0, 0),
        "{other:?}"
    );
}

fn two_hosts_deciding_at_once_allow_exactly_five(db: &Db) {
    let hosts = [db.store(), db.store()];
    let seen_at_allow = Arc::new(parking_lot::Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        for worker in 0..8 {
            let store = hosts[worker % 2].clone();
            let seen_at_allow = seen_at_allow.clone();
            scope.spawn(move || {
                for i in 0..4 {
                    let session = format!("s{}", worker % 3);
                    let at = NOW + (worker * 10 + i) as i64;
                    let decided = block(store.decide_on_history(
                        &call("acme", &session, "mcp__agentmail__send_message", at),
                        &|h| {
                            let allow = h.tool.in_brand_last_hour < 5;
                            if allow {
                                seen_at_allow.lock().push(h.tool.in_brand_last_hour);
                            }
                            allow
                        },
                    ));
                    decided.unwrap();
                }
            });
        }
    });
    let mut seen = seen_at_allow.lock().clone();
    seen.sort();
    assert_eq!(
        seen,
        vec![0, 1, 2, 3, 4],
        "each allowed call saw the ones before it, and no two saw the same count"
    );
    let h = look(
        &*hosts[0],
        &call("acme", "s0", "mcp__agentmail__send_message", NOW + 1000),
    );
    assert_eq!(h.tool.in_brand_last_hour, 5, "{h:?}");
}

// --- through `serve` -------------------------------------------------------

/// At most 5 sends in a session's hour.
const PER_SESSION: &str = r#"@id("five-sends-a-session-hour")
forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
when { context.history.tool.in_session_last_hour >= 5 };
"#;

/// At most 5 sends in a brand's hour, every session and host counted.
const PER_BRAND: &str = r#"@id("five-sends-a-brand-hour")
forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
when { context.history.tool.in_brand_last_hour >= 5 };
"#;

/// AgentMail's send endpoint, counting what reaches it (every other path
/// is not found): answers as AgentMail's documentation shows.
struct FakeAgentMail {
    origin: String,
    sent: Arc<parking_lot::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeAgentMail {
    async fn start() -> FakeAgentMail {
        let sent = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let recorded = sent.clone();
        let app = axum::Router::new().fallback(
            move |method: axum::http::Method, uri: axum::http::Uri, body: axum::body::Bytes| {
                let recorded = recorded.clone();
                async move {
                    if method != axum::http::Method::POST || !uri.path().ends_with("/messages/send")
                    {
                        return (axum::http::StatusCode::NOT_FOUND, String::new());
                    }
                    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let n = {
                        let mut sent = recorded.lock();
                        sent.push(body["to"][0].as_str().unwrap_or_default().to_string());
                        sent.len()
                    };
                    let answer = json!({"message_id": format!("<sent{n}@example.com>"), "thread_id": format!("t-{n}")});
                    (axum::http::StatusCode::OK, answer.to_string())
                }
            },
        );
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeAgentMail { origin, sent, task }
    }

    fn sent(&self) -> Vec<String> {
        self.sent.lock().clone()
    }
}

impl Drop for FakeAgentMail {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A host serving AgentMail at `agentmail` under `policy`, its store `store`.
fn config(dir: &Path, name: &str, store: &str, agentmail: &str, policy: &str) -> PathBuf {
    std::fs::write(dir.join(format!("{name}.cedar")), policy).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "listen = \"127.0.0.1:0\"\nrequire_review = false\npause_after_repeated_denials = 0\n\n{store}\n\n\
             [connectors.agentmail]\ncomponent = {:?}\norigin = {agentmail:?}\nallow_private_network = true\n\n\
             [policy]\nfiles = [\"{name}.cedar\"]\n",
            common::component(scout_tests::components::AGENTMAIL),
        ),
    )
    .unwrap();
    path
}

fn serve(config: &Path, env: &[(&str, String)]) -> ServeProcess {
    common::serve(config)
        .env("AGENTMAIL_ALLOW_SENDS", "true")
        .envs(env)
        .start()
}

fn admin(host: &ServeProcess) -> Admin {
    Admin {
        http: common::client(),
        base: host.base.clone(),
    }
}

async fn connect(admin: &Admin) {
    let (status, body) = admin
        .request(
            Method::PUT,
            "/v1/brands/acme/connections/agentmail",
            Some(json!({"secret": "agentmail-secret-0123456789"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

async fn session(admin: &Admin) -> Value {
    let (status, view) = admin
        .request(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "person-chat"})),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    view
}

/// `sends` AgentMail sends fired at once in `view`'s session, each
/// approved by its person: the answers, each `(is_error, text)`.
async fn send_at_once(view: &Value, sends: usize, tag: &str) -> Vec<(bool, String)> {
    let summary = common::client_story(
        "policy_history.py",
        vec![
            "--url".into(),
            view["mcp"]["agentmail"].as_str().unwrap().into(),
            "--token".into(),
            view["token"].as_str().unwrap().into(),
            "--sends".into(),
            sends.to_string(),
            "--tag".into(),
            tag.into(),
        ],
    )
    .await;
    summary["answers"]
        .as_array()
        .unwrap_or_else(|| panic!("answers: {summary}"))
        .iter()
        .map(|a| {
            (
                a["is_error"].as_bool().unwrap(),
                a["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// How many answers ran, and that every refused one names `policy`.
fn ran_and_refused_by(answers: &[(bool, String)], policy: &str) -> (usize, usize) {
    for (refused, text) in answers.iter().filter(|(refused, _)| *refused) {
        assert!(
            *refused && text.contains(policy),
            "a refused send names the policy {policy}: {text}"
        );
    }
    let refused = answers.iter().filter(|(refused, _)| *refused).count();
    (answers.len() - refused, refused)
}

/// The brand's trace rows of calls the policies refused.
async fn refused_by_policy(admin: &Admin) -> Vec<TraceEvent> {
    admin
        .trace("acme")
        .await
        .into_iter()
        .filter(|e| e.rule.as_deref() == Some("operator_policy"))
        .filter(|e| e.state != TraceState::Requested)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_host_allows_five_sends_a_session_hour_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let agentmail = FakeAgentMail::start().await;
    let host = serve(
        &config(dir.path(), "one", "", &agentmail.origin, PER_SESSION),
        &[],
    );
    let admin = admin(&host);
    connect(&admin).await;
    let first = session(&admin).await;
    let answers = send_at_once(&first, 7, "first").await;
    assert_eq!(
        ran_and_refused_by(&answers, "five-sends-a-session-hour"),
        (5, 2),
        "{answers:?}\n{}",
        host.stderr()
    );
    assert_eq!(agentmail.sent().len(), 5, "a refused send sent nothing");
    let traced = refused_by_policy(&admin).await;
    assert_eq!(traced.len(), 2, "{traced:?}");
    for event in &traced {
        assert_eq!(
            event.detail["policy"], "five-sends-a-session-hour",
            "{event:?}"
        );
        assert!(
            event.detail["policy_revision"]
                .as_str()
                .is_some_and(|r| r.starts_with("r0-")),
            "{event:?}"
        );
    }
    // The rule counts the session's sends: another session of the brand sends.
    let second = session(&admin).await;
    let answers = send_at_once(&second, 2, "second").await;
    assert_eq!(
        ran_and_refused_by(&answers, "five-sends-a-session-hour"),
        (2, 0),
        "{answers:?}"
    );
    assert_eq!(agentmail.sent().len(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_on_one_database_allow_exactly_five_sends_a_brand_hour() {
    let Some(db) = scout_tests::pg::database_or_skip("policy_history_two_hosts") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let agentmail = FakeAgentMail::start().await;
    let store = "[store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"";
    let env = [("SCOUT_PG_URL", db.url())];
    let a = serve(
        &config(dir.path(), "a", store, &agentmail.origin, PER_BRAND),
        &env,
    );
    let b = serve(
        &config(dir.path(), "b", store, &agentmail.origin, PER_BRAND),
        &env,
    );
    let (admin_a, admin_b) = (admin(&a), admin(&b));
    connect(&admin_a).await;
    let (on_a, on_b) = (session(&admin_a).await, session(&admin_b).await);
    let (answers_a, answers_b) = tokio::join!(
        send_at_once(&on_a, 5, "host-a"),
        send_at_once(&on_b, 5, "host-b")
    );
    let all: Vec<_> = answers_a.iter().chain(&answers_b).cloned().collect();
    assert_eq!(
        ran_and_refused_by(&all, "five-sends-a-brand-hour"),
        (5, 5),
        "exactly five across both hosts: {answers_a:?} {answers_b:?}\n{}\n{}",
        a.stderr(),
        b.stderr()
    );
    assert_eq!(
        agentmail.sent().len(),
        5,
        "exactly five reached AgentMail: {:?}",
        agentmail.sent()
    );
    assert_eq!(
        db.psql("SELECT count(*) FROM policy_calls WHERE brand = 'acme'"),
        "5",
        "only the allowed sends are counted"
    );
    assert_eq!(refused_by_policy(&admin_a).await.len(), 5);
}
