//! The D7 store: one conformance suite run against a real SQLite file and a
//! real PostgreSQL database (every query, approval single use, the
//! allowance arithmetic, connections, profiles, reviews), then what only
//! one backend has: SQLite's file sealed at rest and a host killed with
//! SIGKILL mid-write; PostgreSQL's several hosts on one database.

use scout_host::store::prelude::*;
use scout_host::store::{
    ApprovalError, ApprovalState, PgOptions, PgStore, RESTART_REVOKER, Recovered, SqliteStore,
    StartRunError, Store, StoreError, TraceEvent, TraceFilter, TraceState, args_digest,
};
use scout_tests::TempDb;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

fn temp_db(name: &str) -> TempDb {
    TempDb::new(&format!("store-{name}"))
}

/// Where one conformance test's stores live.
enum Db {
    Sqlite(TempDb),
    Postgres(scout_tests::pg::PgDatabase),
}

impl Db {
    /// One more store on the same data: another connection to the SQLite
    /// file, another host on the PostgreSQL database.
    fn store(&self) -> Arc<dyn Store> {
        match self {
            Db::Sqlite(db) => Arc::new(SqliteStore::open(db.path()).unwrap()),
            Db::Postgres(db) => Arc::new(PgStore::connect(PgOptions::new(db.url())).unwrap()),
        }
    }

    /// `n` stores for `n` concurrent workers: one each on SQLite; on
    /// PostgreSQL four hosts, shared round-robin (each host holds a pool).
    fn stores(&self, n: usize) -> Vec<Arc<dyn Store>> {
        let distinct = match self {
            Db::Sqlite(_) => n,
            Db::Postgres(_) => n.min(4),
        };
        let opened: Vec<_> = (0..distinct).map(|_| self.store()).collect();
        (0..n).map(|i| opened[i % distinct].clone()).collect()
    }
}

/// Runs each named test once against SQLite and once against PostgreSQL
/// (skipped with a note where PostgreSQL is absent, failed under `CI=true`).
macro_rules! on_both_backends {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(#[test]
            fn $test() {
                super::$test(&super::Db::Sqlite(super::temp_db(stringify!($test))));
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
    trace_is_returned_in_insertion_order_per_session_and_brand,
    trace_detail_keeps_any_text_a_guest_sent,
    an_approval_is_used_once_and_only_for_its_arguments,
    concurrent_consumers_spend_an_approval_once,
    revoked_approvals_never_revive,
    charges_are_recorded_once_per_idempotency_key,
    fifty_threads_charging_one_key_record_one_row,
    one_shared_store_is_safe_across_threads,
    start_run_applies_the_seeds_day_arithmetic,
    concurrent_starts_never_overcommit_the_day,
    connections_and_shares_resolve_as_stored,
    profiles_and_reviews_are_kept,
    trace_pages_follow_the_sequence,
    the_arguments_a_person_approves_are_sealed_in_the_row_until_decided,
    the_audit_export_resumes_from_its_cursor,
    a_capability_request_is_parked_and_answered_once,
    a_run_holds_settles_and_ends_exactly,
    a_spend_racing_its_approval_spends_it,
    recovery_goes_by_a_calls_states_and_ends_its_approvals_by_host_lost,
);

impl Db {
    /// A store whose lease outlives the test (on PostgreSQL): nothing is
    /// recovered until the test says so.
    fn lasting_store(&self) -> Arc<dyn Store> {
        match self {
            Db::Sqlite(db) => Arc::new(SqliteStore::open(db.path()).unwrap()),
            Db::Postgres(db) => {
                let mut options = PgOptions::new(db.url());
                options.lease = std::time::Duration::from_secs(600);
                Arc::new(PgStore::connect(options).unwrap())
            }
        }
    }

    /// `lost` stops without draining and `by` recovers what it left: the
    /// next start on SQLite, a lease run out and swept on PostgreSQL.
    fn lose(&self, lost: &dyn Store, by: &dyn Store) -> Recovered {
        if let Db::Postgres(db) = self {
            db.psql(&format!(
                "UPDATE hosts SET lease_until = now() - interval '1 second' WHERE host_id = '{}'",
                lost.host().unwrap()
            ));
        }
        scout_host::store::block(by.recover_interrupted(99)).unwrap()
    }
}

/// Issue 52 items 8 and 9: a row the store took late (kept while the
/// database was away, written once it took it) follows its call's
/// `result`, `denied` or `allowed`; the recovery of its host goes by the
/// call's states, not by which row came last: a call that ended is never
/// marked `interrupted`, one that reached `allowed` is never
/// `may_have_run: false`. The lost host's approvals that could still be
/// used, pending or approved and unused, end by `host_lost`, each with a
/// `decided` row on its call.
fn recovery_goes_by_a_calls_states_and_ends_its_approvals_by_host_lost(db: &Db) {
    use TraceState::*;
    use scout_host::store::block;
    let (lost, by) = (db.lasting_store(), db.lasting_store());
    let tool = "mcp__github__github_create_branch";
    let step = |call: &str, state: TraceState, rule: Option<&str>, detail: Value| TraceEvent {
        session: "s-late".into(),
        brand: "acme".into(),
        call_id: Some(call.into()),
        tool: Some(tool.into()),
        state,
        rule: rule.map(str::to_string),
        detail,
        at_ms: 10,
        origin: Default::default(),
    };
    let write = |events: &[TraceEvent]| block(lost.record_all(events)).unwrap();
    // Ran and answered; its `requested` row committed after its `result`.
    write(&[
        step("c-ran", Allowed, Some("approved_by_person"), Value::Null),
        step("c-ran", Executed, None, Value::Null),
        step("c-ran", Result, None, json!({"ok": true})),
    ]);
    write(&[step("c-ran", Requested, None, Value::Null)]);
    // Refused; its request came after the refusal.
    write(&[step(
        "c-refused",
        Denied,
        Some("approval_denied"),
        Value::Null,
    )]);
    write(&[step("c-refused", Requested, None, Value::Null)]);
    // Allowed (durable before its effect), then its host was lost; its
    // request came after the `allowed`.
    write(&[step("c-allowed", Allowed, Some("open"), Value::Null)]);
    write(&[step("c-allowed", Requested, None, Value::Null)]);
    // Two calls waiting for a person: one still pending, one a person
    // approved just as the host went (approved, never used).
    let digest = |n: i64| args_digest(&json!({ "branch": n }));
    let pending = block(lost.request_approval("s-late", tool, &digest(1))).unwrap();
    write(&[
        step("c-pending", Requested, None, Value::Null),
        step(
            "c-pending",
            Requested,
            Some("approval_requested"),
            json!({"approval": pending.0}),
        ),
    ]);
    let approved = block(lost.request_approval("s-late", tool, &digest(2))).unwrap();
    write(&[
        step("c-approved", Requested, None, Value::Null),
        step(
            "c-approved",
            Requested,
            Some("approval_requested"),
            json!({"approval": approved.0}),
        ),
    ]);
    block(by.decide(approved, true, "alice")).unwrap();
    // Spent and refused approvals stay as they are.
    let used = block(lost.request_approval("s-late", tool, &digest(3))).unwrap();
    block(by.decide(used, true, "alice")).unwrap();
    block(lost.consume_approval("s-late", tool, &digest(3))).unwrap();
    let denied = block(lost.request_approval("s-late", tool, &digest(4))).unwrap();
    block(by.decide(denied, false, "alice")).unwrap();
    let kept: Vec<_> = [used, denied]
        .iter()
        .map(|id| block(by.approval(*id)).unwrap().unwrap())
        .collect();

    assert_eq!(
        db.lose(&*lost, &*by),
        Recovered {
            approvals_revoked: 2,
            calls_interrupted: 3,
            calls_maybe_run: 1
        }
    );

    let trace = block(by.trace_for_session("s-late")).unwrap();
    let mut calls: std::collections::BTreeMap<&str, Vec<&TraceEvent>> = Default::default();
    for e in &trace {
        calls
            .entry(e.call_id.as_deref().unwrap())
            .or_default()
            .push(e);
    }
    for (call, events) in &calls {
        let has = |state: TraceState| events.iter().any(|e| e.state == state);
        let interrupted: Vec<_> = events.iter().filter(|e| e.state == Interrupted).collect();
        assert!(
            !(has(Interrupted) && (has(Result) || has(Denied))),
            "{call}: ended and interrupted: {events:?}"
        );
        assert!(interrupted.len() <= 1, "{call}: {events:?}");
        if let Some(mark) = interrupted.first() {
            assert_eq!(
                mark.detail["may_have_run"],
                has(Allowed) || has(Executed),
                "{call}: {:?}",
                mark.detail
            );
        }
    }
    let interrupted: BTreeSet<&str> = calls
        .iter()
        .filter(|(_, events)| events.iter().any(|e| e.state == Interrupted))
        .map(|(call, _)| *call)
        .collect();
    assert_eq!(
        interrupted,
        BTreeSet::from(["c-allowed", "c-approved", "c-pending"])
    );
    let mark = |call: &str| {
        calls[call]
            .iter()
            .find(|e| e.state == Interrupted)
            .unwrap()
            .detail
            .clone()
    };
    assert_eq!(
        (
            &mark("c-allowed")["last_state"],
            &mark("c-allowed")["may_have_run"]
        ),
        (&json!("allowed"), &json!(true)),
        "the furthest state, not the last row"
    );
    assert_eq!(mark("c-pending")["last_rule"], "approval_requested");

    // Both usable approvals ended by `host_lost`: neither decided nor spent again.
    for id in [pending, approved] {
        let ended = block(by.approval(id)).unwrap().unwrap();
        assert_eq!(
            (ended.state, ended.used, ended.decided_by.as_deref()),
            (
                ApprovalState::Revoked,
                false,
                Some(scout_host::store::HOST_LOST)
            ),
            "approval {id:?}"
        );
        assert!(matches!(
            block(by.decide(id, true, "late")),
            Err(ApprovalError::NotPending(_))
        ));
    }
    assert!(matches!(
        block(by.consume_approval("s-late", tool, &digest(2))),
        Err(ApprovalError::Revoked)
    ));
    let now: Vec<_> = [used, denied]
        .iter()
        .map(|id| block(by.approval(*id)).unwrap().unwrap())
        .collect();
    assert_eq!(now, kept);
    // Each on its call's record, before its `interrupted`: ended by the
    // host, by `host_lost`, never run, and who had approved it.
    for (call, id, was) in [
        ("c-pending", pending, "pending"),
        ("c-approved", approved, "approved"),
    ] {
        let states: Vec<TraceState> = calls[call].iter().map(|e| e.state).collect();
        assert_eq!(
            &states[states.len() - 2..],
            [Decided, Interrupted],
            "{call}"
        );
        let decided = calls[call].iter().find(|e| e.state == Decided).unwrap();
        assert_eq!(decided.rule.as_deref(), Some("revoked"));
        assert_eq!(decided.detail["approval"], id.0);
        assert_eq!(decided.detail["by"], "host_lost");
        assert_eq!(decided.detail["was"], was);
        assert_eq!(decided.detail["ran"], false);
    }
    let decided = calls["c-approved"]
        .iter()
        .find(|e| e.state == Decided)
        .unwrap();
    assert_eq!(decided.detail["approved_by"], "alice");

    // Nothing is left for a second recovery.
    assert_eq!(
        block(by.recover_interrupted(100)).unwrap(),
        Recovered::default()
    );
    assert_eq!(block(by.trace_for_session("s-late")).unwrap(), trace);
}

/// A call that reads its approval while a person's decision commits (on
/// another host) spends it, or finds it still pending and reads again:
/// never "already used" for an approval nobody spent.
fn a_spend_racing_its_approval_spends_it(db: &Db) {
    use scout_host::store::block;
    let [decider, spender] = [db.store(), db.store()];
    for round in 0..200 {
        let digest = args_digest(&json!({ "round": round }));
        let id = block(spender.request_approval("s-race", "t", &digest)).unwrap();
        let decide = std::thread::spawn({
            let decider = decider.clone();
            move || {
                std::thread::sleep(std::time::Duration::from_micros(300 + (round % 7) * 150));
                block(decider.decide(id, true, "alice")).unwrap();
            }
        });
        let spent = loop {
            match block(spender.consume_approval("s-race", "t", &digest)) {
                Err(ApprovalError::Pending) => continue,
                other => break other,
            }
        };
        decide.join().unwrap();
        assert_eq!(spent.unwrap(), id, "round {round}");
    }
}

/// A run's holds and settlements, as any host of a fleet makes them: a
/// hold fits what is left or is refused with it, a settlement charges
/// within the allowance once per key (a retry answers the same, even after
/// the run ended), and the end of a run charges the holds no call settled.
fn a_run_holds_settles_and_ends_exactly(db: &Db) {
    use scout_host::store::{RunHold, block};
    let store = db.store();
    let day = "2026-12-05";
    block(store.start_run("r1", "acme", "c", day, 10, 100)).unwrap();
    assert_eq!(block(store.reserve_in_run("r1", 4)).unwrap(), RunHold::Held);
    assert_eq!(block(store.run_left("r1")).unwrap(), Some(6));
    assert_eq!(
        block(store.reserve_in_run("r1", 7)).unwrap(),
        RunHold::Short(6)
    );
    let settle = |run: &str, held: u64, actual: u64, key: &str| {
        block(store.settle_in_run(run, "c", "acme", day, held, actual, key)).unwrap()
    };
    assert_eq!(settle("r1", 4, 3, "k1"), Some(3));
    assert_eq!(block(store.run_left("r1")).unwrap(), Some(7));
    assert_eq!(
        settle("r1", 4, 3, "k1"),
        Some(3),
        "a retry answers the same"
    );
    assert_eq!(
        block(store.spent_in_run("r1")).unwrap(),
        3,
        "and charges nothing more"
    );
    // Past its hold, a call is charged at most what the run has left.
    assert_eq!(block(store.reserve_in_run("r1", 5)).unwrap(), RunHold::Held);
    assert_eq!(settle("r1", 5, 9, "k2"), Some(7));
    assert_eq!(block(store.spent_in_run("r1")).unwrap(), 10);
    assert_eq!(
        block(store.reserve_in_run("r1", 1)).unwrap(),
        RunHold::Short(0)
    );

    block(store.start_run("r2", "acme", "c", day, 10, 100)).unwrap();
    assert_eq!(block(store.reserve_in_run("r2", 2)).unwrap(), RunHold::Held);
    assert_eq!(settle("r2", 2, 1, "k3"), Some(1));
    assert_eq!(block(store.reserve_in_run("r2", 6)).unwrap(), RunHold::Held);
    block(store.end_run("r2")).unwrap();
    // The open hold was charged in full, once, at the end.
    assert_eq!(block(store.spent_in_run("r2")).unwrap(), 7);
    assert_eq!(block(store.run_left("r2")).unwrap(), None);
    assert_eq!(
        block(store.reserve_in_run("r2", 1)).unwrap(),
        RunHold::Ended
    );
    assert_eq!(
        settle("r2", 6, 6, "k4"),
        None,
        "its hold was charged at the end"
    );
    assert_eq!(
        settle("r2", 2, 1, "k3"),
        Some(1),
        "a retry after the end answers the same"
    );
    assert_eq!(block(store.spent_in_run("r2")).unwrap(), 7);
    block(store.end_run("r2")).unwrap();
    assert_eq!(
        block(store.spent_in_run("r2")).unwrap(),
        7,
        "ending twice charges nothing"
    );

    // The day: r1 live at its whole figure (10), r2 ended at what it recorded (7).
    assert_eq!(block(store.spent_on_day("acme", "c", day)).unwrap(), 17);
    match block(store.start_run("r3", "acme", "c", day, 90, 100)) {
        Err(StartRunError::DayExhausted {
            committed: 17,
            per_day: 100,
        }) => {}
        other => panic!("the day holds 17 of 100: {other:?}"),
    }
    block(store.start_run("r3", "acme", "c", day, 83, 100)).unwrap();
}

fn a_capability_request_is_parked_and_answered_once(db: &Db) {
    use scout_host::store::Answered;
    let store = db.store();
    let asked = json!({"goal": "publish the post", "missing_observation": "no write tool",
                       "proposed_effect": "write", "safe_alternative_tried": "drafted it"});
    let first =
        scout_host::store::block(store.park_capability_request("s-1", "acme", &asked)).unwrap();
    let second = scout_host::store::block(store.park_capability_request(
        "s-2",
        "globex",
        &json!({"goal": "other"}),
    ))
    .unwrap();
    assert_ne!(first, second);
    let of_one = scout_host::store::block(store.capability_requests(Some("s-1"), true)).unwrap();
    assert_eq!(of_one.len(), 1);
    assert_eq!(of_one[0].request, asked);
    assert_eq!(of_one[0].brand, "acme");
    assert_eq!(
        scout_host::store::block(store.capability_requests(None, true))
            .unwrap()
            .len(),
        2
    );
    let Answered::Now(answered) = scout_host::store::block(store.answer_capability_request(
        first,
        "yes, ask Dana for the grant",
        "alice",
    ))
    .unwrap() else {
        panic!("answered")
    };
    assert_eq!(
        answered.answer.as_deref(),
        Some("yes, ask Dana for the grant")
    );
    assert_eq!(answered.answered_by.as_deref(), Some("alice"));
    assert!(matches!(
        scout_host::store::block(store.answer_capability_request(first, "no", "mallory")).unwrap(),
        Answered::Already(a) if a.answer.as_deref() == Some("yes, ask Dana for the grant")
    ));
    assert!(matches!(
        scout_host::store::block(store.answer_capability_request(999_999, "x", "y")).unwrap(),
        Answered::Unknown
    ));
    assert_eq!(
        scout_host::store::block(store.capability_requests(None, true))
            .unwrap()
            .len(),
        1,
        "one still pending"
    );
    assert_eq!(
        scout_host::store::block(store.capability_requests(Some("s-1"), false))
            .unwrap()
            .len(),
        1
    );
}

fn event(session: &str, brand: &str, state: TraceState, n: i64) -> TraceEvent {
    TraceEvent {
        session: session.into(),
        brand: brand.into(),
        call_id: Some(format!("call-{n}")),
        tool: Some("mcp__github__github_read_file".into()),
        state,
        rule: (state == TraceState::Denied).then(|| "not_offered".into()),
        detail: json!({ "n": n, "nested": { "b": 1, "a": [1, 2] } }),
        at_ms: 1_000 + n,
        // Which trace and span the row belongs to; the host is the store's.
        origin: scout_host::store::Origin {
            host: None,
            trace_id: Some(format!("{:032x}", n + 1)),
            span_id: Some(format!("{:016x}", n + 1)),
        },
    }
}

/// `events` as `store` reads them back: each names the host that wrote it.
fn as_written(store: &dyn scout_host::store::Store, events: &[TraceEvent]) -> Vec<TraceEvent> {
    let host = store.host();
    assert!(
        host.is_some(),
        "every store names the host its rows come from"
    );
    events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.origin.host = host.clone();
            e
        })
        .collect()
}

/// With SQLite's automatic checkpoint off on the store's connections, the
/// trace writer's own checkpoints keep the write-ahead log from growing,
/// also while writers keep it busy: after 2,000 batches from 8 writers at
/// once (every commit at least one frame) the log holds fewer frames than
/// that, and its file fewer pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_log_is_checkpointed_while_commits_stream() {
    let db = temp_db("checkpoints");
    let store = Arc::new(SqliteStore::open(&db).unwrap());
    const WRITERS: i64 = 8;
    const BATCHES: i64 = 250;
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..BATCHES {
                let batch = [event(
                    &format!("w{writer}"),
                    "acme",
                    TraceState::Requested,
                    n,
                )];
                store.record_all(&batch).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    // `log` is the frames in the log now: fewer than the commits only if a
    // checkpoint completed and a later commit restarted the log.
    let total = WRITERS * BATCHES;
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    let log: i64 = conn
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
        .unwrap();
    assert!(
        log < total,
        "the log holds {log} frames after {total} batches"
    );
    let wal = std::fs::metadata(format!("{}-wal", db.path().display())).unwrap();
    assert!(
        wal.len() < total as u64 * 4096,
        "the log's file is {} bytes after {total} batches",
        wal.len()
    );
    for writer in 0..WRITERS {
        let rows = store
            .trace_for_session(&format!("w{writer}"))
            .await
            .unwrap();
        assert_eq!(rows.len(), BATCHES as usize);
    }
}

/// Concurrent writers share the trace writer's transactions (group commit):
/// every batch lands whole and in order, and a batch SQLite refuses (here a
/// real trigger) fails only its own writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_trace_writes_land_whole_and_a_refused_batch_fails_alone() {
    let db = temp_db("group-commit");
    let store = Arc::new(SqliteStore::open(&db).unwrap());
    rusqlite::Connection::open(db.path())
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON trace WHEN NEW.rule = 'poison'
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
        )
        .unwrap();
    let mut tasks = Vec::new();
    for writer in 0..32i64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let session = format!("w{writer}");
            let mut batch: Vec<TraceEvent> = (0..5)
                .map(|n| event(&session, "acme", TraceState::Requested, writer * 10 + n))
                .collect();
            if writer % 8 == 7 {
                batch[2].rule = Some("poison".into());
            }
            // Half await the writer; half wait for it as code that cannot
            // await does.
            let outcome = if writer % 2 == 0 {
                store.record_all(&batch).await
            } else {
                scout_host::store::block(store.record_all(&batch))
            };
            (session, batch, outcome)
        }));
    }
    for task in tasks {
        let (session, batch, outcome) = task.await.unwrap();
        let stored = store.trace_for_session(&session).await.unwrap();
        if batch.iter().any(|e| e.rule.as_deref() == Some("poison")) {
            assert!(
                matches!(outcome, Err(StoreError::Write(ref e)) if e.to_string().contains("refused by the test")),
                "{session}: {outcome:?}"
            );
            assert!(stored.is_empty(), "{session}: all or none: {stored:?}");
        } else {
            outcome.unwrap_or_else(|e| panic!("{session}: {e}"));
            assert_eq!(
                stored,
                as_written(store.as_ref(), &batch),
                "{session}: whole and in order"
            );
        }
    }
}

fn trace_is_returned_in_insertion_order_per_session_and_brand(db: &Db) {
    let store = db.store();
    let states = [
        TraceState::Registered,
        TraceState::Eligible,
        TraceState::Offered,
        TraceState::Requested,
        TraceState::Allowed,
        TraceState::Denied,
        TraceState::Executed,
        TraceState::Result,
        TraceState::PermissionDenied,
        TraceState::Interrupted,
        TraceState::Removed,
        TraceState::Decided,
    ];
    let mut s1 = Vec::new();
    for (i, state) in states.iter().enumerate() {
        let e = event("s1", "acme", *state, i as i64);
        scout_host::store::block(store.record(&e)).unwrap();
        s1.push(e);
        scout_host::store::block(store.record(&event("s2", "globex", *state, 100 + i as i64)))
            .unwrap();
    }
    scout_host::store::block(store.record(&event("s3", "acme", TraceState::Offered, 500))).unwrap();
    let s1 = as_written(store.as_ref(), &s1);
    assert_eq!(
        scout_host::store::block(store.trace_for_session("s1")).unwrap(),
        s1
    );
    let acme = scout_host::store::block(store.trace_for_brand("acme")).unwrap();
    assert_eq!(acme.len(), states.len() + 1);
    assert_eq!(&acme[..states.len()], &s1[..]);
    assert_eq!(acme.last().unwrap().session, "s3");
    assert_eq!(
        scout_host::store::block(store.trace_for_brand("globex"))
            .unwrap()
            .len(),
        states.len()
    );
    assert!(
        scout_host::store::block(store.trace_for_session("nobody"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(s1[5].rule.as_deref(), Some("not_offered"));
}

#[test]
fn args_digest_is_canonical() {
    let a = args_digest(&json!({ "path": "README.md", "ref": { "z": 1, "a": 2 } }));
    let b =
        args_digest(&serde_json::from_str(r#"{"ref":{"a":2,"z":1},"path":"README.md"}"#).unwrap());
    assert_eq!(a, b);
    assert_eq!(a.len(), 64);
    assert_ne!(
        a,
        args_digest(&json!({ "path": "README.md", "ref": { "z": 1, "a": 3 } }))
    );
}

fn an_approval_is_used_once_and_only_for_its_arguments(db: &Db) {
    let store = db.store();
    let tool = "mcp__github__github_comment";
    let args = args_digest(&json!({ "issue": 1, "body": "hi" }));
    let other = args_digest(&json!({ "issue": 2, "body": "hi" }));

    assert!(matches!(
        scout_host::store::block(store.consume_approval("s", tool, &args)),
        Err(ApprovalError::Required)
    ));
    let id = scout_host::store::block(store.request_approval("s", tool, &args)).unwrap();
    assert_eq!(
        scout_host::store::block(store.pending("s"))
            .unwrap()
            .iter()
            .map(|a| a.id)
            .collect::<Vec<_>>(),
        vec![id]
    );
    assert!(
        scout_host::store::block(store.pending("other-session"))
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        scout_host::store::block(store.consume_approval("s", tool, &args)),
        Err(ApprovalError::Pending)
    ));

    scout_host::store::block(store.decide(id, true, "alice")).unwrap();
    assert!(
        scout_host::store::block(store.pending("s"))
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        scout_host::store::block(store.decide(id, false, "bob")),
        Err(ApprovalError::NotPending(_))
    ));
    assert!(matches!(
        scout_host::store::block(store.decide(scout_host::store::ApprovalId(9_999), true, "bob")),
        Err(ApprovalError::Unknown(_))
    ));

    // Wrong arguments, tool or session never match.
    assert!(matches!(
        scout_host::store::block(store.consume_approval("s", tool, &other)),
        Err(ApprovalError::Required)
    ));
    assert!(
        scout_host::store::block(store.consume_approval(
            "s",
            "mcp__github__github_commit_files",
            &args
        ))
        .is_err()
    );
    assert!(scout_host::store::block(store.consume_approval("s2", tool, &args)).is_err());

    assert_eq!(
        scout_host::store::block(store.consume_approval("s", tool, &args)).unwrap(),
        id
    );
    assert!(matches!(
        scout_host::store::block(store.consume_approval("s", tool, &args)),
        Err(ApprovalError::AlreadyUsed)
    ));
    let stored = scout_host::store::block(store.approval(id))
        .unwrap()
        .unwrap();
    assert!(stored.used);
    assert_eq!(stored.state, ApprovalState::Approved);
    assert_eq!(stored.decided_by.as_deref(), Some("alice"));

    let denied = scout_host::store::block(store.request_approval("s", tool, &other)).unwrap();
    scout_host::store::block(store.decide(denied, false, "alice")).unwrap();
    assert!(matches!(
        scout_host::store::block(store.consume_approval("s", tool, &other)),
        Err(ApprovalError::Denied)
    ));
}

fn concurrent_consumers_spend_an_approval_once(db: &Db) {
    let store = db.store();
    let args = args_digest(&json!({ "x": 1 }));
    let id = scout_host::store::block(store.request_approval("s", "t", &args)).unwrap();
    scout_host::store::block(store.decide(id, true, "alice")).unwrap();
    let wins: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = db
            .stores(16)
            .into_iter()
            .map(|store| {
                let args = args.clone();
                scope.spawn(move || {
                    usize::from(
                        scout_host::store::block(store.consume_approval("s", "t", &args)).is_ok(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(wins, 1);
}

fn revoked_approvals_never_revive(db: &Db) {
    let store = db.store();
    let args = args_digest(&json!({ "to": "a@example.com" }));
    let approved = scout_host::store::block(store.request_approval("s", "send", &args)).unwrap();
    scout_host::store::block(store.decide(approved, true, "alice")).unwrap();
    let pending = scout_host::store::block(store.request_approval("s", "send", &args)).unwrap();
    let used_args = args_digest(&json!({ "to": "b@example.com" }));
    let used = scout_host::store::block(store.request_approval("s", "send", &used_args)).unwrap();
    scout_host::store::block(store.decide(used, true, "alice")).unwrap();
    scout_host::store::block(store.consume_approval("s", "send", &used_args)).unwrap();
    let elsewhere =
        scout_host::store::block(store.request_approval("s-other", "send", &args)).unwrap();

    assert_eq!(
        scout_host::store::block(store.revoke_session_approvals("s")).unwrap(),
        2
    );
    assert!(matches!(
        scout_host::store::block(store.consume_approval("s", "send", &args)),
        Err(ApprovalError::Revoked)
    ));
    // Deciding a revoked approval does not bring it back.
    assert!(matches!(
        scout_host::store::block(store.decide(pending, true, "alice")),
        Err(ApprovalError::NotPending(_))
    ));
    assert!(scout_host::store::block(store.consume_approval("s", "send", &args)).is_err());
    assert!(
        scout_host::store::block(store.pending("s"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        scout_host::store::block(store.approval(approved))
            .unwrap()
            .unwrap()
            .state,
        ApprovalState::Revoked
    );
    assert_eq!(
        scout_host::store::block(store.approval(pending))
            .unwrap()
            .unwrap()
            .state,
        ApprovalState::Revoked
    );
    // A used approval stays what it was; another session is untouched.
    let used = scout_host::store::block(store.approval(used))
        .unwrap()
        .unwrap();
    assert!(used.used && used.state == ApprovalState::Approved);
    assert_eq!(
        scout_host::store::block(store.approval(elsewhere))
            .unwrap()
            .unwrap()
            .state,
        ApprovalState::Pending
    );
    // Revoking twice changes nothing more.
    assert_eq!(
        scout_host::store::block(store.revoke_session_approvals("s")).unwrap(),
        0
    );
}

#[test]
fn recovery_closes_what_a_killed_host_left_open() {
    let _db = temp_db("recover");
    let store = SqliteStore::open(&_db).unwrap();
    let tool = "mcp__github__github_create_branch";
    let step = |session: &str, call: &str, state: TraceState, rule: Option<&str>| TraceEvent {
        session: session.into(),
        brand: "acme".into(),
        call_id: Some(call.into()),
        tool: (call != "session").then(|| tool.into()),
        state,
        rule: rule.map(str::to_string),
        detail: json!(null),
        at_ms: 10,
        origin: Default::default(),
    };
    use TraceState::*;
    let asked = Some("approval_requested");
    let steps = [
        // Session-level events share the call id "session" and are no call.
        ("s1", "session", Registered, None),
        ("s1", "session", Offered, None),
        // Finished, denied, refused: left alone.
        ("s1", "c-done", Requested, None),
        ("s1", "c-done", Requested, asked),
        ("s1", "c-done", Allowed, Some("approved_by_person")),
        ("s1", "c-done", Executed, None),
        ("s1", "c-done", Result, None),
        ("s1", "c-denied", Requested, None),
        ("s1", "c-denied", Denied, Some("revoked")),
        ("s1", "c-refused", Requested, None),
        ("s1", "c-refused", PermissionDenied, Some("not_offered")),
        // Open: waiting for a person, allowed but never finished, just requested.
        ("s1", "c-waiting", Requested, None),
        ("s1", "c-waiting", Requested, asked),
        ("s1", "c-running", Requested, None),
        ("s1", "c-running", Requested, asked),
        ("s1", "c-running", Allowed, Some("approved_by_person")),
        ("s1", "c-new", Requested, None),
        // The same call id finished in another session closes nothing in s1.
        ("s2", "c-waiting", Requested, None),
        ("s2", "c-waiting", Result, None),
    ];
    for (session, call, state, rule) in steps {
        scout_host::store::block(store.record(&step(session, call, state, rule))).unwrap();
    }
    let digest = args_digest(&json!({ "branch": "a" }));
    let pending = scout_host::store::block(store.request_approval("s1", tool, &digest)).unwrap();
    let approved_args = args_digest(&json!({ "branch": "b" }));
    let approved =
        scout_host::store::block(store.request_approval("s1", tool, &approved_args)).unwrap();
    scout_host::store::block(store.decide(approved, true, "alice")).unwrap();
    let used_args = args_digest(&json!({ "branch": "c" }));
    let used = scout_host::store::block(store.request_approval("s1", tool, &used_args)).unwrap();
    scout_host::store::block(store.decide(used, true, "alice")).unwrap();
    scout_host::store::block(store.consume_approval("s1", tool, &used_args)).unwrap();
    let denied = scout_host::store::block(store.request_approval(
        "s1",
        tool,
        &args_digest(&json!({ "branch": "d" })),
    ))
    .unwrap();
    scout_host::store::block(store.decide(denied, false, "alice")).unwrap();
    let before: Vec<_> = [used, denied]
        .iter()
        .map(|id| {
            scout_host::store::block(store.approval(*id))
                .unwrap()
                .unwrap()
        })
        .collect();

    let recovered = scout_host::store::block(store.recover_interrupted(99)).unwrap();
    assert_eq!(
        recovered,
        Recovered {
            approvals_revoked: 2,
            calls_interrupted: 3,
            calls_maybe_run: 1
        }
    );

    // The pending approval, and the one approved but never used, are
    // revoked for good: not decidable, not spendable.
    for id in [pending, approved] {
        let revoked = scout_host::store::block(store.approval(id))
            .unwrap()
            .unwrap();
        assert_eq!(
            (revoked.state, revoked.used, revoked.decided_by.as_deref()),
            (ApprovalState::Revoked, false, Some(RESTART_REVOKER))
        );
    }
    assert!(matches!(
        scout_host::store::block(store.consume_approval("s1", tool, &approved_args)),
        Err(ApprovalError::Revoked)
    ));
    assert!(matches!(
        scout_host::store::block(store.decide(pending, true, "late")),
        Err(ApprovalError::NotPending(_))
    ));
    assert!(matches!(
        scout_host::store::block(store.consume_approval("s1", tool, &digest)),
        Err(ApprovalError::Revoked)
    ));
    assert!(
        scout_host::store::block(store.pending("s1"))
            .unwrap()
            .is_empty()
    );
    // Used and denied approvals stay as they were.
    let after: Vec<_> = [used, denied]
        .iter()
        .map(|id| {
            scout_host::store::block(store.approval(*id))
                .unwrap()
                .unwrap()
        })
        .collect();
    assert_eq!(after, before);

    // One `interrupted` event per open call, after its own events, saying how far it got.
    let trace = scout_host::store::block(store.trace_for_session("s1")).unwrap();
    assert_eq!(
        trace.len(),
        steps.iter().filter(|s| s.0 == "s1").count() + 3
    );
    let added: Vec<&TraceEvent> = trace.iter().filter(|e| e.state == Interrupted).collect();
    let calls: Vec<&str> = added
        .iter()
        .map(|e| e.call_id.as_deref().unwrap())
        .collect();
    assert_eq!(calls, ["c-waiting", "c-running", "c-new"]);
    for e in &added {
        assert_eq!(
            (
                e.session.as_str(),
                e.brand.as_str(),
                e.tool.as_deref(),
                e.at_ms,
                e.rule.as_deref()
            ),
            ("s1", "acme", Some(tool), 99, None)
        );
        assert!(
            e.detail["reason"]
                .as_str()
                .unwrap()
                .contains("stopped before the call finished"),
            "{:?}",
            e.detail
        );
    }
    assert_eq!(added[0].detail["last_state"], "requested");
    assert_eq!(added[0].detail["last_rule"], "approval_requested");
    assert_eq!(added[0].detail["may_have_run"], false);
    assert_eq!(added[1].detail["last_state"], "allowed");
    assert_eq!(
        added[1].detail["may_have_run"], true,
        "allowed is written before the effect: it may have happened"
    );
    assert_eq!(added[2].detail["may_have_run"], false);
    assert_eq!(
        scout_host::store::block(store.trace_for_session("s2"))
            .unwrap()
            .len(),
        2
    );
    assert_eq!(TraceState::parse("interrupted"), Some(Interrupted));

    // A second restart finds nothing open.
    assert_eq!(
        scout_host::store::block(store.recover_interrupted(100)).unwrap(),
        Recovered::default()
    );
    assert_eq!(
        scout_host::store::block(store.trace_for_session("s1")).unwrap(),
        trace
    );
}

fn charges_are_recorded_once_per_idempotency_key(db: &Db) {
    let store = db.store();
    assert!(
        scout_host::store::block(store.charge("r1", "firecrawl", "acme", "2026-11-30", 5, "k1"))
            .unwrap()
    );
    assert!(
        !scout_host::store::block(store.charge("r1", "firecrawl", "acme", "2026-11-30", 5, "k1"))
            .unwrap()
    );
    assert!(
        scout_host::store::block(store.charge("r1", "firecrawl", "acme", "2026-11-30", 7, "k2"))
            .unwrap()
    );
    assert!(
        scout_host::store::block(store.charge("r2", "firecrawl", "acme", "2026-11-30", 1, "k3"))
            .unwrap()
    );
    assert!(
        scout_host::store::block(store.charge("r3", "firecrawl", "acme", "2026-12-01", 100, "k4"))
            .unwrap()
    );
    assert!(
        scout_host::store::block(store.charge("r4", "dataforseo", "acme", "2026-11-30", 100, "k5"))
            .unwrap()
    );
    assert!(matches!(
        scout_host::store::block(store.charge("r1", "firecrawl", "acme", "2026-11-30", 6, "k1")),
        Err(StoreError::IdempotencyConflict(_))
    ));
    assert!(matches!(
        scout_host::store::block(store.charge(
            "r1",
            "firecrawl",
            "acme",
            "2026-11-30",
            u64::MAX,
            "k9"
        )),
        Err(StoreError::OutOfRange(_))
    ));
    assert_eq!(
        scout_host::store::block(store.spent_in_run("r1")).unwrap(),
        12
    );
    assert_eq!(
        scout_host::store::block(store.spent_in_run("none")).unwrap(),
        0
    );
    assert_eq!(
        scout_host::store::block(store.spent_on_day("acme", "firecrawl", "2026-11-30")).unwrap(),
        13
    );
    assert_eq!(
        scout_host::store::block(store.spent_on_day("globex", "firecrawl", "2026-11-30")).unwrap(),
        0
    );
    let keys: Vec<_> = scout_host::store::block(store.charges_in_run("r1"))
        .unwrap()
        .into_iter()
        .map(|c| c.idempotency_key)
        .collect();
    assert_eq!(keys, ["k1", "k2"]);
}

fn fifty_threads_charging_one_key_record_one_row(db: &Db) {
    let recorded: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = db
            .stores(50)
            .into_iter()
            .map(|store| {
                scope.spawn(move || {
                    usize::from(
                        scout_host::store::block(store.charge(
                            "r",
                            "firecrawl",
                            "acme",
                            "2026-11-30",
                            3,
                            "same-key",
                        ))
                        .unwrap(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(recorded, 1);
    let store = db.store();
    assert_eq!(
        scout_host::store::block(store.charges_in_run("r"))
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        scout_host::store::block(store.spent_in_run("r")).unwrap(),
        3
    );
}

fn one_shared_store_is_safe_across_threads(db: &Db) {
    let store = db.store();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let store = store.clone();
            scope.spawn(move || {
                for i in 0..10 {
                    scout_host::store::block(store.charge(
                        "r",
                        "firecrawl",
                        "acme",
                        "2026-11-30",
                        1,
                        &format!("{t}-{i}"),
                    ))
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(
        scout_host::store::block(store.spent_in_run("r")).unwrap(),
        80
    );
}

fn start_run_applies_the_seeds_day_arithmetic(db: &Db) {
    let store = db.store();
    let day = "2026-11-30";
    let (b, c) = ("acme", "firecrawl");
    // Researcher preset: 25 per run, 100 per day.
    for run in ["a", "b", "c", "d"] {
        scout_host::store::block(store.start_run(run, b, c, day, 25, 100)).unwrap();
    }
    // Four live runs hold the whole day.
    match scout_host::store::block(store.start_run("e", b, c, day, 25, 100)) {
        Err(StartRunError::DayExhausted { committed, per_day }) => {
            assert_eq!((committed, per_day), (100, 100))
        }
        other => panic!("expected DayExhausted, got {other:?}"),
    }
    // A refused start leaves nothing behind: "e" can be tried again later.
    scout_host::store::block(store.charge("a", c, b, day, 10, "a-1")).unwrap();
    scout_host::store::block(store.end_run("a")).unwrap(); // counts 10
    scout_host::store::block(store.end_run("b")).unwrap(); // recorded nothing: counts its whole 25
    // 10 + 25 + 25 + 25 = 85; a 25 run does not fit, a 15 run does.
    assert!(matches!(
        scout_host::store::block(store.start_run("e", b, c, day, 25, 100)),
        Err(StartRunError::DayExhausted { committed: 85, .. })
    ));
    scout_host::store::block(store.start_run("e", b, c, day, 15, 100)).unwrap();
    assert!(matches!(
        scout_host::store::block(store.start_run("f", b, c, day, 1, 100)),
        Err(StartRunError::DayExhausted { committed: 100, .. })
    ));
    // Other days, brands and connectors are separate.
    scout_host::store::block(store.start_run("g", b, c, "2026-12-01", 25, 100)).unwrap();
    scout_host::store::block(store.start_run("h", "globex", c, day, 25, 100)).unwrap();
    scout_host::store::block(store.start_run("i", b, "dataforseo", day, 25, 100)).unwrap();
    // Duplicate ids, bad allowances, unknown runs.
    assert!(matches!(
        scout_host::store::block(store.start_run("g", b, c, "2026-12-02", 1, 100)),
        Err(StartRunError::Store(StoreError::RunExists(_)))
    ));
    assert!(matches!(
        scout_host::store::block(store.start_run("x", b, c, day, 0, 100)),
        Err(StartRunError::InvalidAllowance { .. })
    ));
    assert!(matches!(
        scout_host::store::block(store.start_run("x", b, c, day, 101, 100)),
        Err(StartRunError::InvalidAllowance { .. })
    ));
    assert!(matches!(
        scout_host::store::block(store.end_run("nope")),
        Err(StoreError::UnknownRun(_))
    ));
}

fn concurrent_starts_never_overcommit_the_day(db: &Db) {
    let started: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = db
            .stores(12)
            .into_iter()
            .enumerate()
            .map(|(i, store)| {
                scope.spawn(move || {
                    usize::from(
                        scout_host::store::block(store.start_run(
                            &format!("run-{i}"),
                            "acme",
                            "firecrawl",
                            "2026-11-30",
                            25,
                            100,
                        ))
                        .is_ok(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(started, 4);
}

/// Whatever a guest or an upstream put in a detail comes back as it was:
/// a NUL, other control characters, astral characters, a lone quote.
fn trace_detail_keeps_any_text_a_guest_sent(db: &Db) {
    let store = db.store();
    let mut e = event("s-nul", "acme", TraceState::Result, 1);
    e.detail = json!({ "upstream": "a\u{0}b\u{1}\u{7f}\u{1F600}\"'\\", "nested": ["\u{0}"] });
    scout_host::store::block(store.record(&e)).unwrap();
    assert_eq!(
        scout_host::store::block(store.trace_for_session("s-nul")).unwrap(),
        as_written(store.as_ref(), &[e])
    );
}

/// Pages of a trace follow its sequence and end where it ends.
fn trace_pages_follow_the_sequence(db: &Db) {
    let store = db.store();
    for n in 0..7 {
        scout_host::store::block(store.record(&event("s-page", "acme", TraceState::Requested, n)))
            .unwrap();
    }
    // On PostgreSQL the newest rows may show a moment late (a page stops
    // below any transaction still open in the cluster): wait for them.
    let started = std::time::Instant::now();
    while scout_host::store::block(store.trace_page(TraceFilter::Brand("acme"), 0, 100))
        .unwrap()
        .len()
        < 7
        && started.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut after = 0;
    let mut seen = Vec::new();
    loop {
        let page = scout_host::store::block(store.trace_page(TraceFilter::Brand("acme"), after, 3))
            .unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 3);
        assert!(page.windows(2).all(|w| w[0].0 < w[1].0), "in sequence");
        after = page.last().unwrap().0;
        seen.extend(page.into_iter().map(|(_, e)| e.at_ms));
    }
    assert_eq!(seen, (0..7).map(|n| 1_000 + n).collect::<Vec<_>>());
    assert!(
        scout_host::store::block(store.trace_page(TraceFilter::Session("s-page"), after, 3))
            .unwrap()
            .is_empty()
    );
}

/// Stored, replaced, disabled, shared and unshared, as resolution sees them.
fn connections_and_shares_resolve_as_stored(db: &Db) {
    let store = db.store();
    let key = [7u8; 32];
    scout_host::store::block(store.put_connection("acme", "github", "ghp_one", &key)).unwrap();
    assert_eq!(
        scout_host::store::block(store.get_connection("acme", "github", &key))
            .unwrap()
            .as_deref(),
        Some("ghp_one")
    );
    assert_eq!(
        scout_host::store::block(store.get_connection("acme", "firecrawl", &key)).unwrap(),
        None
    );
    assert!(matches!(
        scout_host::store::block(store.get_connection("acme", "github", &[8u8; 32])),
        Err(StoreError::Decrypt { .. })
    ));
    assert!(scout_host::store::block(store.disable_connection("acme", "github")).unwrap());
    assert_eq!(
        scout_host::store::block(store.get_connection("acme", "github", &key)).unwrap(),
        None
    );
    assert!(!scout_host::store::block(store.disable_connection("acme", "nothing")).unwrap());
    scout_host::store::block(store.put_connection("acme", "github", "ghp_two", &key)).unwrap();
    assert_eq!(
        scout_host::store::block(store.get_connection("acme", "github", &key))
            .unwrap()
            .as_deref(),
        Some("ghp_two")
    );

    assert!(
        scout_host::store::block(store.shared_with("globex", "github"))
            .unwrap()
            .is_empty()
    );
    scout_host::store::block(store.share_connection("acme", "github", "globex")).unwrap();
    scout_host::store::block(store.share_connection("acme", "github", "globex")).unwrap();
    scout_host::store::block(store.share_connection("initech", "github", "globex")).unwrap();
    assert_eq!(
        scout_host::store::block(store.shared_with("globex", "github")).unwrap(),
        ["acme", "initech"]
    );
    assert!(
        scout_host::store::block(store.shared_with("globex", "firecrawl"))
            .unwrap()
            .is_empty()
    );
    assert!(
        scout_host::store::block(store.unshare_connection("acme", "github", "globex")).unwrap()
    );
    assert!(
        !scout_host::store::block(store.unshare_connection("acme", "github", "globex")).unwrap()
    );
    assert_eq!(
        scout_host::store::block(store.shared_with("globex", "github")).unwrap(),
        ["initech"]
    );
}

/// Profiles are validated when saved and come back as saved; reviews keep
/// the last digest approved.
fn profiles_and_reviews_are_kept(db: &Db) {
    use scout_host::policy::{Catalog, Grant, Limits, Profile};
    use scout_host::store::{ProfileKind, SaveProfileError};
    let store = db.store();
    let catalog = Catalog::seed();
    let profile = |name: &str| Profile {
        name: name.into(),
        tools: vec!["Read".into(), "Grep".into()],
        grant: Grant::default(),
        limits: Limits::preset(),
    };
    scout_host::store::block(store.save_profile(
        "acme",
        &profile("b"),
        ProfileKind::Coworker,
        &catalog,
    ))
    .unwrap();
    scout_host::store::block(store.save_profile(
        "acme",
        &profile("a"),
        ProfileKind::Coworker,
        &catalog,
    ))
    .unwrap();
    let mut refused = profile("bad");
    refused
        .tools
        .push("mcp__github__github_commit_files".into());
    assert!(matches!(
        scout_host::store::block(store.save_profile(
            "acme",
            &refused,
            ProfileKind::Coworker,
            &catalog
        )),
        Err(SaveProfileError::Invalid(_))
    ));
    let names: Vec<String> = scout_host::store::block(store.list_profiles("acme"))
        .unwrap()
        .into_iter()
        .map(|p| p.profile.name)
        .collect();
    assert_eq!(names, ["a", "b"]);
    let loaded = scout_host::store::block(store.load_profile("acme", "a"))
        .unwrap()
        .unwrap();
    assert_eq!(
        (loaded.kind, loaded.profile),
        (ProfileKind::Coworker, profile("a"))
    );
    assert!(
        scout_host::store::block(store.load_profile("globex", "a"))
            .unwrap()
            .is_none()
    );
    assert!(scout_host::store::block(store.delete_profile("acme", "a")).unwrap());
    assert!(!scout_host::store::block(store.delete_profile("acme", "a")).unwrap());

    assert_eq!(
        scout_host::store::block(store.reviewed("github", "read_file")).unwrap(),
        None
    );
    scout_host::store::block(store.approve_tool("github", "read_file", "d1", None, None, "alice"))
        .unwrap();
    scout_host::store::block(store.approve_tool("github", "read_file", "d2", None, None, "bob"))
        .unwrap();
    assert_eq!(
        scout_host::store::block(store.reviewed("github", "read_file")).unwrap(),
        Some(scout_host::store::Reviewed {
            digest: "d2".into(),
            effect: None,
            facts: None,
        })
    );
    // A remote MCP server's tool keeps the effect it was reviewed with.
    scout_host::store::block(store.approve_tool(
        "remote",
        "lookup",
        "d3",
        Some("billed"),
        None,
        "carol",
    ))
    .unwrap();
    assert_eq!(
        scout_host::store::block(store.reviewed("remote", "lookup"))
            .unwrap()
            .and_then(|r| r.effect)
            .as_deref(),
        Some("billed")
    );

    // What a component tool's review covered is kept with it.
    scout_host::store::block(store.approve_tool(
        "github",
        "create_branch",
        "d4",
        None,
        Some(r#"{"component":"sha256:aa"}"#),
        "dave",
    ))
    .unwrap();
    assert_eq!(
        scout_host::store::block(store.reviewed("github", "create_branch"))
            .unwrap()
            .and_then(|r| r.facts)
            .as_deref(),
        Some(r#"{"component":"sha256:aa"}"#)
    );
    assert_eq!(
        scout_host::store::block(store.reviewed_tools("github")).unwrap(),
        ["create_branch", "read_file"]
    );

    // An artifact tag keeps the digest it was first resolved to.
    let tag = "oci://registry.example/connectors/github:1";
    assert_eq!(
        scout_host::store::block(store.pinned_artifact(tag)).unwrap(),
        None
    );
    assert_eq!(
        scout_host::store::block(store.pin_artifact(tag, "sha256:first", "serve")).unwrap(),
        "sha256:first"
    );
    assert_eq!(
        scout_host::store::block(store.pin_artifact(tag, "sha256:moved", "serve")).unwrap(),
        "sha256:first",
        "the first record stands"
    );
    assert_eq!(
        scout_host::store::block(store.pinned_artifact(tag))
            .unwrap()
            .as_deref(),
        Some("sha256:first")
    );
}

/// The arguments a person sees live in the approval row, sealed with the
/// store key: any host opens them with the key while the approval is
/// pending; a wrong key opens nothing; a decision or a revocation erases them.
fn the_arguments_a_person_approves_are_sealed_in_the_row_until_decided(db: &Db) {
    let store = db.store();
    let other_host = db.store();
    let key = [9u8; 32];
    let args = json!({ "to": "ops@example.com", "body": "the canary 7f3a" });
    let digest = args_digest(&args);
    let asked =
        scout_host::store::block(store.request_approval_showing("s", "send", &digest, &args, &key))
            .unwrap();
    assert_eq!(
        scout_host::store::block(other_host.approval_arguments(asked, &key)).unwrap(),
        Some(args.clone())
    );
    assert_eq!(
        scout_host::store::block(other_host.approval_arguments(asked, &[1u8; 32])).unwrap(),
        None
    );
    // Sealed under another call's identity, the same bytes do not open.
    let wrong = scout_host::store::block(store.request_approval_showing(
        "s",
        "send",
        &args_digest(&json!({})),
        &args,
        &key,
    ))
    .unwrap();
    assert_eq!(
        scout_host::store::block(store.approval_arguments(wrong, &key)).unwrap(),
        None,
        "digest mismatch"
    );
    scout_host::store::block(store.decide(asked, true, "alice")).unwrap();
    assert_eq!(
        scout_host::store::block(other_host.approval_arguments(asked, &key)).unwrap(),
        None,
        "erased when decided"
    );
    let again =
        scout_host::store::block(store.request_approval_showing("s", "send", &digest, &args, &key))
            .unwrap();
    assert!(scout_host::store::block(store.revoke_approval(again, "test")).unwrap());
    assert_eq!(
        scout_host::store::block(store.approval_arguments(again, &key)).unwrap(),
        None,
        "erased when revoked"
    );
    let third = scout_host::store::block(
        store.request_approval_showing("s2", "send", &digest, &args, &key),
    )
    .unwrap();
    scout_host::store::block(store.revoke_session_approvals("s2")).unwrap();
    assert_eq!(
        scout_host::store::block(store.approval_arguments(third, &key)).unwrap(),
        None,
        "erased with the session"
    );
}

/// The audit export writes every row once, in order, across sessions and
/// brands, and resumes exactly where a cursor says.
fn the_audit_export_resumes_from_its_cursor(db: &Db) {
    use scout_host::audit::{Exported, export};
    let store = db.store();
    for n in 0..25 {
        let (session, brand) = if n % 2 == 0 {
            ("s1", "acme")
        } else {
            ("s2", "globex")
        };
        scout_host::store::block(store.record(&event(session, brand, TraceState::Requested, n)))
            .unwrap();
    }
    let lines = |bytes: Vec<u8>| -> Vec<Value> {
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    // All at once. On PostgreSQL a page stops below the oldest transaction
    // still open anywhere in the cluster (other tests' included), so the
    // last rows may show a moment later: never skipped, possibly late.
    let started = std::time::Instant::now();
    let (done, all) = loop {
        let mut all = Vec::new();
        let done = export(store.as_ref(), 0, None, &mut all).unwrap();
        if done.rows == 25 || started.elapsed() > std::time::Duration::from_secs(10) {
            break (done, lines(all));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(done.rows, 25);
    assert_eq!(all.len(), 25);
    assert_eq!(done.cursor, all.last().unwrap()["seq"].as_i64().unwrap());
    let at: Vec<i64> = all.iter().map(|r| r["at_ms"].as_i64().unwrap()).collect();
    assert_eq!(
        at,
        (0..25).map(|n| 1_000 + n).collect::<Vec<_>>(),
        "every row once, in order"
    );
    // Each row is the trace's row as stored, plus its seq and its time.
    let (seq, first) =
        &scout_host::store::block(store.trace_page(TraceFilter::All, 0, 1)).unwrap()[0];
    let mut expected = serde_json::to_value(first).unwrap();
    expected["seq"] = json!(seq);
    expected["time"] = json!("1970-01-01T00:00:01.000Z");
    assert_eq!(all[0], expected);
    // In chunks of 7, resumed from each cursor: the same rows.
    let (mut cursor, mut chunked) = (0, Vec::new());
    loop {
        let mut out = Vec::new();
        let Exported { rows, cursor: next } =
            export(store.as_ref(), cursor, Some(7), &mut out).unwrap();
        chunked.extend(lines(out));
        if rows == 0 {
            assert_eq!(next, cursor, "nothing more: the cursor stays");
            break;
        }
        cursor = next;
    }
    assert_eq!(chunked, all);
}

fn file_bytes(path: &PathBuf) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    for suffix in ["-wal", "-shm"] {
        let mut side = path.clone().into_os_string();
        side.push(suffix);
        if let Ok(more) = std::fs::read(PathBuf::from(side)) {
            bytes.extend(more);
        }
    }
    bytes
}

#[test]
fn connections_are_encrypted_at_rest() {
    let db = temp_db("conn");
    let path = db.path().to_path_buf();
    let key = [7u8; 32];
    let secret = "ghp_SuperSecretToken_0123456789abcdef";
    {
        let store = SqliteStore::open(&path).unwrap();
        scout_host::store::block(store.put_connection("acme", "github", secret, &key)).unwrap();
        assert_eq!(
            scout_host::store::block(store.get_connection("acme", "github", &key))
                .unwrap()
                .as_deref(),
            Some(secret)
        );
        assert_eq!(
            scout_host::store::block(store.get_connection("acme", "firecrawl", &key)).unwrap(),
            None
        );
        // Wrong key: an error, not a panic, and not the secret.
        assert!(matches!(
            scout_host::store::block(store.get_connection("acme", "github", &[8u8; 32])),
            Err(StoreError::Decrypt { .. })
        ));
    }
    let bytes = file_bytes(&path);
    assert!(
        !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
        "plaintext found in the database files"
    );

    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        scout_host::store::block(store.get_connection("acme", "github", &key))
            .unwrap()
            .as_deref(),
        Some(secret)
    );
    // A row moved to another brand does not open (AAD binds brand and connector).
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute(
        "INSERT INTO connections (brand, connector, nonce, ciphertext, disabled, updated_at_ms)
         SELECT 'globex', connector, nonce, ciphertext, 0, 0 FROM connections WHERE brand = 'acme'",
        [],
    )
    .unwrap();
    assert!(matches!(
        scout_host::store::block(store.get_connection("globex", "github", &key)),
        Err(StoreError::Decrypt { .. })
    ));

    assert!(scout_host::store::block(store.disable_connection("acme", "github")).unwrap());
    assert_eq!(
        scout_host::store::block(store.get_connection("acme", "github", &key)).unwrap(),
        None
    );
    assert!(!scout_host::store::block(store.disable_connection("acme", "nothing")).unwrap());
    scout_host::store::block(store.put_connection("acme", "github", "new-token", &key)).unwrap();
    assert_eq!(
        scout_host::store::block(store.get_connection("acme", "github", &key))
            .unwrap()
            .as_deref(),
        Some("new-token")
    );
}

#[test]
fn a_corrupt_file_is_an_error_not_a_panic() {
    let db = temp_db("corrupt");
    let path = db.path().to_path_buf();
    std::fs::write(&path, vec![0xA5u8; 8192]).unwrap();
    assert!(SqliteStore::open(&path).is_err());

    let db = temp_db("future");
    let path = db.path().to_path_buf();
    SqliteStore::open(&path).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE schema_version SET version = 999", [])
        .unwrap();
    assert!(matches!(
        SqliteStore::open(&path),
        Err(StoreError::SchemaTooNew { found: 999, .. })
    ));

    // Reopening a good file keeps its data and schema.
    let db = temp_db("reopen");
    let path = db.path().to_path_buf();
    scout_host::store::block(SqliteStore::open(&path).unwrap().charge(
        "r",
        "c",
        "b",
        "2026-11-30",
        1,
        "k",
    ))
    .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    store.integrity_check().unwrap();
    assert_eq!(
        scout_host::store::block(store.spent_in_run("r")).unwrap(),
        1
    );
}

const CHILD_ENV: &str = "SCOUT_CRASH_CHILD";

/// The child side of `a_killed_host_leaves_no_partial_or_duplicate_record`:
/// does nothing unless that test started this binary with `SCOUT_CRASH_CHILD`.
#[test]
fn crash_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let store = SqliteStore::open(PathBuf::from(path)).unwrap();
    let mut out = std::io::stdout().lock();
    // Bounded so an orphaned child ends on its own.
    for i in 0..200_000u64 {
        let key = format!("key-{i}");
        scout_host::store::block(store.charge(
            "crash-run",
            "firecrawl",
            "acme",
            "2026-11-30",
            i % 7 + 1,
            &key,
        ))
        .unwrap();
        writeln!(out, "CHARGED {key}").unwrap();
        out.flush().unwrap();
        let args = args_digest(&json!({ "i": i }));
        let id = scout_host::store::block(store.request_approval("crash-session", "send", &args))
            .unwrap();
        scout_host::store::block(store.decide(id, true, "child")).unwrap();
        let used = scout_host::store::block(store.consume_approval("crash-session", "send", &args))
            .unwrap();
        writeln!(out, "CONSUMED {} {i}", used.0).unwrap();
        out.flush().unwrap();
    }
}

/// A line the child reported, if it is one.
enum Report {
    Charged(String),
    Consumed(i64, u64),
}

fn parse_report(line: &str) -> Option<Report> {
    // libtest prints "test crash_child ... " without a newline before the first report.
    let at = line.find("CHARGED ").or_else(|| line.find("CONSUMED "))?;
    let line = &line[at..];
    if let Some(key) = line.strip_prefix("CHARGED ") {
        return Some(Report::Charged(key.to_owned()));
    }
    let mut parts = line.strip_prefix("CONSUMED ")?.split(' ');
    Some(Report::Consumed(
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
    ))
}

#[test]
fn a_killed_host_leaves_no_partial_or_duplicate_record() {
    // Kill at a few different points of the child's loop.
    for kill_after in [1, 25, 60] {
        killed_host_round(kill_after);
    }
}

fn killed_host_round(kill_after: usize) {
    let db = temp_db("crash");
    let path = db.path().to_path_buf();
    SqliteStore::open(&path).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut charged = Vec::new();
    let mut consumed = Vec::new();
    let mut killed = false;
    // Read until `kill_after` charges were reported, SIGKILL the child (it
    // keeps running meanwhile), then drain what it reported before it died.
    for line in lines {
        let Ok(line) = line else { break };
        match parse_report(&line) {
            Some(Report::Charged(key)) => charged.push(key),
            Some(Report::Consumed(id, i)) => consumed.push((id, i)),
            None => {}
        }
        if !killed && charged.len() >= kill_after {
            child.kill().unwrap(); // SIGKILL on Unix: no destructor, no rollback, no flush.
            killed = true;
        }
    }
    assert!(killed, "child ended before reporting {kill_after} charges");
    child.wait().unwrap();

    let store = SqliteStore::open(&path).unwrap();
    store.integrity_check().unwrap();
    let rows = scout_host::store::block(store.charges_in_run("crash-run")).unwrap();
    let distinct: HashSet<&str> = rows.iter().map(|c| c.idempotency_key.as_str()).collect();
    assert_eq!(rows.len(), distinct.len(), "a key was recorded twice");
    for key in &charged {
        assert_eq!(
            rows.iter().filter(|c| &c.idempotency_key == key).count(),
            1,
            "{key} reported but not stored once"
        );
    }
    // The child charges in order: what is stored is exactly key-0 .. key-(n-1),
    // each whole (the amount it was charged with), and at most one charge
    // past the last report (committed, killed before it could print).
    let n = rows.len();
    assert!(
        n == charged.len() || n == charged.len() + 1,
        "{n} rows for {} reported charges",
        charged.len()
    );
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.idempotency_key, format!("key-{i}"));
        assert_eq!(row.amount, i as u64 % 7 + 1);
    }
    assert_eq!(
        scout_host::store::block(store.spent_in_run("crash-run")).unwrap(),
        rows.iter().map(|c| c.amount).sum::<u64>()
    );
    // Retrying the charges after the crash records nothing new.
    for (i, key) in charged.iter().enumerate() {
        assert!(
            !scout_host::store::block(store.charge(
                "crash-run",
                "firecrawl",
                "acme",
                "2026-11-30",
                i as u64 % 7 + 1,
                key
            ))
            .unwrap()
        );
    }
    assert_eq!(
        scout_host::store::block(store.charges_in_run("crash-run"))
            .unwrap()
            .len(),
        n
    );

    // Every approval the child reported consumed is used, and cannot be used again.
    let ids: BTreeSet<i64> = consumed.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids.len(), consumed.len());
    let raw = rusqlite::Connection::open(&path).unwrap();
    let used: usize = raw
        .query_row(
            "SELECT COUNT(*) FROM approvals WHERE session = 'crash-session' AND used = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        used == consumed.len() || used == consumed.len() + 1,
        "{used} used approvals, {} reported",
        consumed.len()
    );
    for (id, i) in &consumed {
        let approval = scout_host::store::block(store.approval(scout_host::store::ApprovalId(*id)))
            .unwrap()
            .unwrap();
        assert!(approval.used && approval.state == ApprovalState::Approved);
        let args = args_digest(&json!({ "i": i }));
        assert!(matches!(
            scout_host::store::block(store.consume_approval("crash-session", "send", &args)),
            Err(ApprovalError::AlreadyUsed)
        ));
    }
}
