//! Several hosts on one real PostgreSQL database, store to store: a decision
//! on one host wakes the call waiting on another, approvals and charges stay
//! single across hosts, the day's allowance stays exact, a listener that
//! loses its connection still wakes its waiters, a lost host is fenced and
//! recovered by a live one (which keeps its own state), and a trace page
//! never skips a row another host commits late.

use scout_host::store::prelude::*;
use scout_host::store::{
    ApprovalError, ApprovalState, Invalidation, LOST_HOST_REVOKER, PgOptions, PgStore, Recovered,
    StartRunError, StoreError, TraceEvent, TraceFilter, TraceState, args_digest,
};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A host whose lease outlives the test: its sweeper never runs by itself,
/// so recovery happens exactly when a test asks for it.
fn host(db: &scout_tests::pg::PgDatabase) -> Arc<PgStore> {
    let mut options = PgOptions::new(db.url());
    options.lease = Duration::from_secs(600);
    Arc::new(PgStore::connect(options).unwrap())
}

fn database(name: &str) -> Option<scout_tests::pg::PgDatabase> {
    scout_tests::pg::database_or_skip(name)
}

fn step(session: &str, call: &str, state: TraceState) -> TraceEvent {
    TraceEvent {
        session: session.into(),
        brand: "acme".into(),
        call_id: Some(call.into()),
        tool: Some("mcp__github__github_create_branch".into()),
        state,
        rule: None,
        detail: json!(null),
        at_ms: 10,
        origin: Default::default(),
    }
}

/// How long `watch` took to ring, or `None` if it did not within `limit`.
async fn rung_within(
    watch: &mut scout_host::store::ApprovalWatch,
    limit: Duration,
) -> Option<Duration> {
    let started = Instant::now();
    tokio::time::timeout(limit, watch.rung())
        .await
        .ok()
        .map(|_| started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_on_one_host_wakes_the_call_waiting_on_another() {
    let Some(db) = database("wake") else { return };
    let (a, b) = (host(&db), host(&db));
    let digest = args_digest(&json!({ "branch": "x" }));
    let id = a.request_approval("s", "t", &digest).await.unwrap();
    let mut watch = a.watch_approval("s", "t", &digest);
    assert!(matches!(
        a.consume_approval("s", "t", &digest).await,
        Err(ApprovalError::Pending)
    ));
    // The person answers through host B's API.
    b.decide(id, true, "alice").await.unwrap();
    rung_within(&mut watch, Duration::from_secs(5))
        .await
        .expect("host A's waiter woke on B's decision (only a notification rings it)");
    assert_eq!(a.consume_approval("s", "t", &digest).await.unwrap(), id);
    // Single use, whichever host asks next.
    assert!(matches!(
        a.consume_approval("s", "t", &digest).await,
        Err(ApprovalError::AlreadyUsed)
    ));
    assert!(matches!(
        b.consume_approval("s", "t", &digest).await,
        Err(ApprovalError::AlreadyUsed)
    ));

    // A session's approvals revoked on B ring A's waiters of that session.
    let other = args_digest(&json!({ "branch": "y" }));
    a.request_approval("s", "t", &other).await.unwrap();
    let mut watch = a.watch_approval("s", "t", &other);
    assert_eq!(b.revoke_session_approvals("s").await.unwrap(), 1);
    rung_within(&mut watch, Duration::from_secs(5))
        .await
        .expect("the revocation rang on A");
    assert!(matches!(
        a.consume_approval("s", "t", &other).await,
        Err(ApprovalError::Revoked)
    ));

    // A key too long for a notification still rings: as "everything".
    let long_session = "s".repeat(9_000);
    let id = a
        .request_approval(&long_session, "t", &digest)
        .await
        .unwrap();
    let mut watch = a.watch_approval(&long_session, "t", &digest);
    b.decide(id, false, "bob").await.unwrap();
    rung_within(&mut watch, Duration::from_secs(5))
        .await
        .expect("the oversized key rang as all");
    assert!(matches!(
        a.consume_approval(&long_session, "t", &digest).await,
        Err(ApprovalError::Denied)
    ));
}

#[test]
fn concurrent_consumes_from_two_hosts_have_exactly_one_winner() {
    let Some(db) = database("consume-race") else {
        return;
    };
    let (a, b) = (host(&db), host(&db));
    for round in 0..100 {
        let digest = args_digest(&json!({ "round": round }));
        let id = scout_host::store::block(a.request_approval("s", "t", &digest)).unwrap();
        scout_host::store::block(b.decide(id, true, "alice")).unwrap();
        let barrier = std::sync::Barrier::new(4);
        let wins: Vec<bool> = std::thread::scope(|scope| {
            let handles: Vec<_> = [&a, &b, &a, &b]
                .into_iter()
                .map(|store| {
                    let (digest, barrier) = (digest.clone(), &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        match scout_host::store::block(store.consume_approval("s", "t", &digest)) {
                            Ok(spent) => {
                                assert_eq!(spent, id);
                                true
                            }
                            Err(ApprovalError::AlreadyUsed) => false,
                            Err(e) => panic!("round {round}: {e}"),
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            wins.iter().filter(|w| **w).count(),
            1,
            "round {round}: {wins:?}"
        );
    }
}

#[test]
fn runs_across_two_hosts_start_exactly_as_many_as_the_day_holds() {
    let Some(db) = database("day-race") else {
        return;
    };
    let (a, b) = (host(&db), host(&db));
    for round in 0..20 {
        let day = format!("2026-12-{:02}", round + 1);
        let barrier = std::sync::Barrier::new(8);
        let started: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let store = if i % 2 == 0 { &a } else { &b };
                    let (day, barrier) = (day.clone(), &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        match scout_host::store::block(store.start_run(
                            &format!("r{round}-{i}"),
                            "acme",
                            "firecrawl",
                            &day,
                            10,
                            50,
                        )) {
                            Ok(()) => 1,
                            Err(StartRunError::DayExhausted { .. }) => 0,
                            Err(e) => panic!("{e}"),
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(started, 5, "round {round}: 5 runs of 10 fit a day of 50");
    }
    // One charge key, two hosts: recorded once; another amount under it is refused.
    assert!(
        scout_host::store::block(a.charge("r0-0", "firecrawl", "acme", "2026-12-01", 3, "k"))
            .unwrap()
    );
    assert!(
        !scout_host::store::block(b.charge("r0-0", "firecrawl", "acme", "2026-12-01", 3, "k"))
            .unwrap()
    );
    assert!(matches!(
        scout_host::store::block(b.charge("r0-0", "firecrawl", "acme", "2026-12-01", 4, "k")),
        Err(StoreError::IdempotencyConflict(_))
    ));
    assert_eq!(scout_host::store::block(a.spent_in_run("r0-0")).unwrap(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_killed_mid_wait_still_wakes_its_call() {
    let Some(db) = database("listener-killed") else {
        return;
    };
    let (a, b) = (host(&db), host(&db));
    let digest = args_digest(&json!({ "x": 1 }));
    let id = a.request_approval("s", "t", &digest).await.unwrap();
    let mut watch = a.watch_approval("s", "t", &digest);
    let killed = db.psql(&format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'scout-listener {}'",
        a.host_id()
    ));
    assert_eq!(killed, "1", "host A's listener was found and killed");
    // Decided while A's listener is away: the notification is lost, and the
    // reconnect rings every waiter so each reads the store again.
    b.decide(id, true, "alice").await.unwrap();
    rung_within(&mut watch, Duration::from_secs(5))
        .await
        .expect("the waiter woke after the listener came back");
    assert_eq!(a.consume_approval("s", "t", &digest).await.unwrap(), id);
    // And the listener is back: the next decision rings at once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let id = a
        .request_approval("s", "t", &args_digest(&json!({ "x": 2 })))
        .await
        .unwrap();
    let mut watch = a.watch_approval("s", "t", &args_digest(&json!({ "x": 2 })));
    b.decide(id, true, "alice").await.unwrap();
    rung_within(&mut watch, Duration::from_secs(5))
        .await
        .expect("listening again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_changed_on_one_host_invalidates_the_others() {
    let Some(db) = database("invalidate") else {
        return;
    };
    let (a, b) = (host(&db), host(&db));
    let mut changes = a.invalidations().expect("a shared store tells of changes");
    // The listener's first (re)connect says "everything": drain it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    while changes.try_recv().is_ok() {}
    b.put_connection("acme", "github", "ghp_x", &[1u8; 32])
        .await
        .unwrap();
    let got = tokio::time::timeout(crate::common::EVENTUALLY, changes.recv()).await;
    assert_eq!(got.expect("told").unwrap(), Invalidation::Connections);
    b.share_connection("acme", "github", "globex")
        .await
        .unwrap();
    let got = tokio::time::timeout(crate::common::EVENTUALLY, changes.recv()).await;
    assert_eq!(got.expect("told").unwrap(), Invalidation::Connections);
}

#[test]
fn a_lost_host_is_fenced_and_recovered_and_a_live_hosts_state_is_kept() {
    let Some(db) = database("lost-host") else {
        return;
    };
    let (a, b) = (host(&db), host(&db));
    // Host A: a call waiting for a person, a call allowed but unfinished, a
    // finished call, a live run. Host B: the same kinds, its own.
    for (store, s) in [(&a, "sa"), (&b, "sb")] {
        scout_host::store::block(store.record_all(&[step(s, "waiting", TraceState::Requested)]))
            .unwrap();
        scout_host::store::block(store.record_all(&[
            step(s, "running", TraceState::Requested),
            step(s, "running", TraceState::Allowed),
        ]))
        .unwrap();
        scout_host::store::block(store.record_all(&[
            step(s, "done", TraceState::Requested),
            step(s, "done", TraceState::Result),
        ]))
        .unwrap();
        scout_host::store::block(store.request_approval(s, "t", &args_digest(&json!({ "s": s }))))
            .unwrap();
        scout_host::store::block(store.start_run(
            &format!("run-{s}"),
            "acme",
            "firecrawl",
            "2026-12-02",
            10,
            100,
        ))
        .unwrap();
    }
    // A stops renewing (as if its machine went away).
    db.psql(&format!(
        "UPDATE hosts SET lease_until = now() - interval '1 second' WHERE host_id = '{}'",
        a.host_id()
    ));
    let recovered = b.recover_lost_hosts().unwrap();
    assert_eq!(
        recovered,
        Recovered {
            approvals_revoked: 1,
            calls_interrupted: 2,
            calls_maybe_run: 1
        }
    );

    // A's pending approval is revoked, its open calls closed, its run ended.
    let pending_a = &scout_host::store::block(a.pending("sa")).unwrap();
    assert!(pending_a.is_empty());
    let revoked = scout_host::store::block(b.approval(scout_host::store::ApprovalId(1)))
        .unwrap()
        .unwrap();
    assert_eq!(
        (revoked.state, revoked.decided_by.as_deref()),
        (ApprovalState::Revoked, Some(LOST_HOST_REVOKER))
    );
    let trace = scout_host::store::block(b.trace_for_session("sa")).unwrap();
    let interrupted: Vec<_> = trace
        .iter()
        .filter(|e| e.state == TraceState::Interrupted)
        .collect();
    assert_eq!(interrupted.len(), 2);
    assert_eq!(interrupted[0].call_id.as_deref(), Some("waiting"));
    assert_eq!(interrupted[0].detail["may_have_run"], false);
    assert_eq!(interrupted[1].call_id.as_deref(), Some("running"));
    assert_eq!(
        interrupted[1].detail["may_have_run"], true,
        "allowed was written: it may have run"
    );
    assert_eq!(
        db.psql("SELECT ended FROM runs WHERE run_id = 'run-sa'"),
        "t"
    );

    // B's own state is untouched.
    assert_eq!(scout_host::store::block(b.pending("sb")).unwrap().len(), 1);
    assert!(
        scout_host::store::block(b.trace_for_session("sb"))
            .unwrap()
            .iter()
            .all(|e| e.state != TraceState::Interrupted)
    );
    assert_eq!(
        db.psql("SELECT ended FROM runs WHERE run_id = 'run-sb'"),
        "f"
    );

    // A is fenced: its next pre-effect write fails, so nothing reaches an upstream.
    let fenced = scout_host::store::block(a.record_all(&[
        step("sa", "late", TraceState::Requested),
        step("sa", "late", TraceState::Allowed),
    ]));
    assert!(matches!(fenced, Err(StoreError::Fenced)), "{fenced:?}");
    assert!(
        scout_host::store::block(b.trace_for_session("sa"))
            .unwrap()
            .iter()
            .all(|e| e.call_id.as_deref() != Some("late"))
    );
    // Recovering again finds nothing more.
    assert_eq!(b.recover_lost_hosts().unwrap(), Recovered::default());
    assert!(
        scout_host::store::block(b.record(&step("sb", "after", TraceState::Requested))).is_ok()
    );
}

/// Issue 52 item 10: a host that stops cleanly gives its lease back and
/// closes what it still holds itself (its approvals ended by
/// `host_shutdown`, its open calls `interrupted`); the other hosts'
/// sweep then never claims it, so it is never counted as lost; nothing
/// more of it is recorded.
#[test]
fn a_host_that_releases_its_lease_is_never_recovered_as_lost() {
    let Some(db) = database("released") else {
        return;
    };
    let (a, b) = (host(&db), host(&db));
    scout_host::store::block(a.record_all(&[
        step("sa", "running", TraceState::Requested),
        step("sa", "running", TraceState::Allowed),
    ]))
    .unwrap();
    scout_host::store::block(a.record_all(&[
        step("sa", "done", TraceState::Requested),
        step("sa", "done", TraceState::Result),
    ]))
    .unwrap();
    let id =
        scout_host::store::block(a.request_approval("sa", "t", &args_digest(&json!({})))).unwrap();
    let released = scout_host::store::block(a.release_lease(5)).unwrap();
    assert_eq!(
        released,
        Some(Recovered {
            approvals_revoked: 1,
            calls_interrupted: 1,
            calls_maybe_run: 1
        })
    );
    let ended = scout_host::store::block(b.approval(id)).unwrap().unwrap();
    assert_eq!(
        (ended.state, ended.decided_by.as_deref()),
        (ApprovalState::Revoked, Some("host_shutdown"))
    );
    let trace = scout_host::store::block(b.trace_for_session("sa")).unwrap();
    let marks: Vec<_> = trace
        .iter()
        .filter(|e| e.state == TraceState::Interrupted)
        .collect();
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0].call_id.as_deref(), Some("running"));
    assert_eq!(marks[0].detail["may_have_run"], true);
    // Its lease runs out: the sweep finds nothing to recover.
    db.psql(&format!(
        "UPDATE hosts SET lease_until = now() - interval '1 second' WHERE host_id = '{}'",
        a.host_id()
    ));
    assert_eq!(b.recover_lost_hosts().unwrap(), Recovered::default());
    // Nothing more of it is written, and releasing again does nothing.
    let late = scout_host::store::block(a.record(&step("sa", "late", TraceState::Requested)));
    assert!(matches!(late, Err(StoreError::Fenced)), "{late:?}");
    assert_eq!(scout_host::store::block(a.release_lease(6)).unwrap(), None);
    assert_eq!(
        scout_host::store::block(b.trace_for_session("sa")).unwrap(),
        trace
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brand_page_never_skips_a_row_another_host_commits_late() {
    let Some(db) = database("late-commit") else {
        return;
    };
    let a = host(&db);
    // Another host's transaction takes a sequence number and stays open.
    let (mut late, connection) = tokio_postgres::connect(&db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let tx = late.transaction().await.unwrap();
    tx.execute(
        "INSERT INTO trace (host_id, session, brand, state, detail, at_ms) VALUES ('other', 's-late', 'acme', 'requested', 'null', 1)",
        &[],
    )
    .await
    .unwrap();
    // This host commits a row after it.
    a.record(&step("s-now", "c", TraceState::Requested))
        .await
        .unwrap();
    let page = a
        .trace_page(TraceFilter::Brand("acme"), 0, 10)
        .await
        .unwrap();
    assert!(
        page.is_empty(),
        "a page stops below the open transaction: {page:?}"
    );
    tx.commit().await.unwrap();
    // Committed: the next page has both, at once (the horizon is this
    // database's trace writers, and none is open now).
    let page = a
        .trace_page(TraceFilter::Brand("acme"), 0, 10)
        .await
        .unwrap();
    let sessions: Vec<String> = page.iter().map(|(_, e)| e.session.clone()).collect();
    assert_eq!(sessions, ["s-late", "s-now"], "both, in sequence");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_is_not_held_back_by_transactions_that_write_no_trace() {
    let Some(db) = database("horizon-own") else {
        return;
    };
    let Some(elsewhere) = database("horizon-elsewhere") else {
        return;
    };
    let a = host(&db);
    drop(host(&elsewhere));
    // Open write transactions that cannot hold a trace row of this
    // database: one in another database on the same cluster (another
    // tenant, another test), one here on another table (a `pg_dump`, an
    // operator's session, a host's approval), each holding a transaction id.
    let open = async |url: String, sql: &'static str| {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client.batch_execute("BEGIN").await.unwrap();
        client.batch_execute(sql).await.unwrap();
        client
    };
    let other_db = open(
        elsewhere.url(),
        "INSERT INTO hosts (host_id, lease_until) VALUES ('elsewhere', now())",
    )
    .await;
    let other_table = open(
        db.url(),
        "INSERT INTO hosts (host_id, lease_until) VALUES ('operator', now())",
    )
    .await;
    a.record(&step("s-now", "c", TraceState::Requested))
        .await
        .unwrap();
    let page = a
        .trace_page(TraceFilter::Brand("acme"), 0, 10)
        .await
        .unwrap();
    let sessions: Vec<String> = page.iter().map(|(_, e)| e.session.clone()).collect();
    assert_eq!(
        sessions,
        ["s-now"],
        "the committed row is on the page at once"
    );
    // Both are still open: the page did not wait for them.
    other_db.batch_execute("ROLLBACK").await.unwrap();
    other_table.batch_execute("ROLLBACK").await.unwrap();
}

#[test]
fn two_hosts_starting_together_apply_the_schema_once() {
    let Some(db) = database("migrate-race") else {
        return;
    };
    let hosts: Vec<Arc<PgStore>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| host(&db))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // Each migration applied once, by one of the four: as many rows as
    // the backend has migration files.
    let migrations = std::fs::read_dir(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/postgres"),
    )
    .unwrap()
    .filter(|e| {
        e.as_ref()
            .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql"))
    })
    .count();
    assert!(migrations >= 11, "{migrations} migration files");
    assert_eq!(
        db.psql("SELECT count(*) FROM schema_version"),
        migrations.to_string()
    );
    assert_eq!(db.psql("SELECT count(*) FROM hosts"), "4");
    assert!(hosts.iter().all(|h| h.lease_held()));
    // A schema newer than this host's is refused with a clear error.
    db.psql("INSERT INTO schema_version (version) VALUES (999)");
    let newer = PgStore::connect(PgOptions::new(db.url()));
    assert!(
        matches!(newer, Err(StoreError::SchemaTooNew { found: 999, .. })),
        "{newer:?}"
    );
}

#[test]
fn a_server_that_loses_commits_or_a_bad_url_is_refused_clearly() {
    let Some(db) = database("settings") else {
        return;
    };
    db.psql(&format!(
        "ALTER DATABASE {} SET synchronous_commit = off",
        db.name()
    ));
    let refused = PgStore::connect(PgOptions::new(db.url())).unwrap_err();
    assert!(
        refused.to_string().contains("synchronous_commit"),
        "{refused}"
    );
    let bad = PgStore::connect(PgOptions::new("postgresql://[::1")).unwrap_err();
    assert!(bad.to_string().contains("PostgreSQL URL"), "{bad}");
    let plaintext = PgStore::connect(PgOptions::new(
        "postgresql://u:p@db.example.com/scout?sslmode=disable",
    ))
    .unwrap_err();
    assert!(plaintext.to_string().contains("TLS"), "{plaintext}");
}

/// A lease that lapsed while nobody recovered the host stops its writes
/// until it is renewed; nothing is lost, and the host goes on.
#[test]
fn a_lapsed_lease_stops_writes_until_it_is_renewed() {
    let Some(db) = database("lapsed") else { return };
    let a = host(&db);
    db.psql(&format!(
        "UPDATE hosts SET lease_until = now() - interval '1 second' WHERE host_id = '{}'",
        a.host_id()
    ));
    let lapsed = scout_host::store::block(a.record(&step("s", "c", TraceState::Requested)));
    assert!(matches!(lapsed, Err(StoreError::LeaseLapsed)), "{lapsed:?}");
    assert!(a.renew_lease().unwrap());
    scout_host::store::block(a.record(&step("s", "c", TraceState::Requested))).unwrap();
    assert_eq!(
        scout_host::store::block(a.trace_for_session("s"))
            .unwrap()
            .len(),
        1,
        "only the write made under a held lease"
    );
    assert!(a.lease_held());
}

/// A database that cannot be reached is an error, also when the caller is
/// itself on a runtime (the store's own runtime is shut down, not dropped
/// inside the caller's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_out_of_reach_is_an_error_not_a_panic() {
    let unreachable = PgStore::connect(PgOptions::new(
        "postgresql://scout@/scout?host=/nonexistent-scout-socket-dir",
    ));
    let error = unreachable.expect_err("nothing listens there");
    assert!(error.to_string().contains("PostgreSQL"), "{error}");
}

/// 127.0.0.2 is not an address the host counts as this machine: it is
/// reached over TLS, its certificate checked against `store.ca_file` (or the
/// web roots), and never in plaintext. The server takes nothing but TLS.
#[test]
fn a_server_off_this_machine_is_reached_over_tls_and_verified() {
    let Some(server) = scout_tests::pg::tls_server() else {
        return;
    };
    let db = server.database("tls");
    let trusted = PgStore::connect(PgOptions {
        ca_file: Some(server.ca_file().into()),
        ..PgOptions::new(server.url(&db))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    scout_host::store::block(trusted.record(&step("s-tls", "c", TraceState::Requested))).unwrap();
    assert_eq!(
        scout_host::store::block(trusted.trace_for_session("s-tls"))
            .unwrap()
            .len(),
        1
    );
    let ssl = server.psql(
        &db,
        &format!(
            "SELECT ssl FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
             WHERE application_name LIKE 'scout-%' AND datname = '{db}'"
        ),
    );
    let rows: Vec<&str> = ssl.lines().collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|ssl| *ssl == "t"),
        "every connection of the host is TLS: {rows:?}"
    );

    // An authority that signed nothing the server presents.
    let other = PgStore::connect(PgOptions {
        ca_file: Some(server.other_ca_file().into()),
        ..PgOptions::new(server.url(&db))
    })
    .expect_err("a certificate of another authority is refused");
    // The error says why, not only that the handshake failed.
    let other = other.to_string();
    eprintln!("another authority: {other}");
    assert!(
        other.contains("TLS handshake")
            && other.contains("invalid peer certificate: UnknownIssuer"),
        "{other}"
    );

    // The web roots: a throwaway authority is none of them.
    let public = PgStore::connect(PgOptions::new(server.url(&db)))
        .expect_err("a private authority is not a public root");
    let public = public.to_string();
    eprintln!("the web roots: {public}");
    assert!(
        public.contains("TLS handshake")
            && public.contains("invalid peer certificate: UnknownIssuer"),
        "{public}"
    );

    // Plaintext is refused by the host before it connects.
    let plaintext = PgStore::connect(PgOptions {
        ca_file: Some(server.ca_file().into()),
        ..PgOptions::new(format!("{}?sslmode=disable", server.url(&db)))
    })
    .expect_err("sslmode=disable off this machine");
    assert!(
        matches!(plaintext, StoreError::Config(_)) && plaintext.to_string().contains("TLS"),
        "{plaintext}"
    );
    // libpq's verify-full, as a cloud provider's URL has it, is accepted
    // (TLS here always checks the chain and the name).
    PgStore::connect(PgOptions {
        ca_file: Some(server.ca_file().into()),
        ..PgOptions::new(format!("{}?sslmode=verify-full", server.url(&db)))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    // A loopback name with a `hostaddr` elsewhere is not local: it is not
    // reached in plaintext (the server refuses anything but TLS, so a
    // plaintext attempt would fail with "no encryption").
    let port = server.port();
    let by_address = PgStore::connect(PgOptions {
        ca_file: Some(server.ca_file().into()),
        ..PgOptions::new(format!(
            "postgresql://scout@127.0.0.2:{port}/{db}?hostaddr=127.0.0.2"
        ))
    });
    assert!(
        by_address.is_ok(),
        "{:?}",
        by_address.err().map(|e| e.to_string())
    );
    let disguised = PgStore::connect(PgOptions::new(format!(
        "postgresql://scout@localhost:{port}/{db}?hostaddr=127.0.0.2"
    )))
    .expect_err("a loopback name cannot carry a connection elsewhere in plaintext");
    assert!(
        !disguised.to_string().contains("no encryption"),
        "TLS was attempted, not plaintext: {disguised}"
    );
    // The hosts that connected are the only ones the server knows.
    assert_eq!(server.psql(&db, "SELECT count(*) FROM hosts"), "3");
}

/// A session's own `max_calls` (issue 39) holds across the fleet: calls
/// taken on two hosts at once stop at the limit, and a host that takes the
/// session up learns how many were taken, as it does its effects.
#[test]
fn a_sessions_calls_are_counted_once_across_hosts() {
    let Some(db) = database("session-calls") else {
        return;
    };
    let (a, b) = (host(&db), host(&db));
    let expires = scout_host::store::now_ms() + 60_000;
    scout_host::store::block(a.session_opened("s-calls", "acme", &serde_json::json!({}), expires))
        .unwrap();
    let input = scout_host::policy::SessionInput::new(scout_host::policy::Role::PersonChat);
    let record = scout_host::store::SessionRecord {
        token_digest: "00".repeat(32),
        role: "person-chat".into(),
        profile: None,
        input: scout_host::policy::SessionInput {
            limits: scout_host::policy::SessionLimits {
                max_calls: Some(5),
                ..Default::default()
            },
            ..input
        },
        opened: Default::default(),
        removed: Default::default(),
        connectors: Vec::new(),
        left_out: Default::default(),
        allowlist: Vec::new(),
        expires_at_ms: expires,
        components: Vec::new(),
    };
    scout_host::store::block(a.keep_session("s-calls", &record)).unwrap();
    let taken: usize = std::thread::scope(|scope| {
        let tasks: Vec<_> = (0..8)
            .map(|n| {
                let store = if n % 2 == 0 { a.clone() } else { b.clone() };
                scope.spawn(move || {
                    scout_host::store::block(store.session_take_call("s-calls", 5)).unwrap()
                })
            })
            .collect();
        tasks
            .into_iter()
            .map(|t| usize::from(t.join().unwrap()))
            .sum()
    });
    assert_eq!(taken, 5, "exactly the limit, across both hosts");
    let kept = scout_host::store::block(b.kept_session("s-calls"))
        .unwrap()
        .expect("kept");
    assert_eq!(kept.state.calls, 5);
    assert_eq!(
        kept.record.input.limits.max_calls,
        Some(5),
        "the limit travels with the session"
    );
}
