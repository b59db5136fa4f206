//! The session's history as operator policies read it (issue 56,
//! `context.history`): the store's window counts on both backends (the
//! windows' edges, what is counted and what is not, old rows deleted, two
//! hosts deciding a brand's calls at once allowing exactly the limit), then
//! a window rule through real `serve` processes and the official MCP client.

use scout_host::policy::operator::HistoryFacts;
use scout_host::store::policy_counts::{CallEffect, CountedCall, DAY_MS, HOUR_MS};
use scout_host::store::{PgOptions, PgStore, SqliteStore, Store, block};
use scout_tests::TempDb;
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
