//! The `meter` and `folder` capabilities through a real guest.

use scout_host::capabilities::folder::FolderCapability;
use scout_host::capabilities::meter::{Allowance, AllowanceError, DayLedger};
use scout_host::{
    Capabilities, HttpCapability, HttpConfig, LoadedComponent, Runtime, RuntimeConfig,
};
use scout_tests::components;
use scout_tests::upstream::Upstream;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn component(slots: u32) -> LoadedComponent {
    let rt = Runtime::new(RuntimeConfig {
        max_concurrent_calls: slots,
        ..Default::default()
    })
    .unwrap();
    rt.load_file(Path::new(components::CAPABILITIES)).unwrap()
}

async fn call(c: &LoadedComponent, tool: &str, args: Value, caps: &Capabilities) -> Value {
    match c.call(tool, &args, caps).await {
        Ok(outcome) => serde_json::to_value(&outcome.output).unwrap(),
        Err(e) => json!({"host-error": e.to_string()}),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scrape_is_charged_then_an_over_allowance_crawl_is_refused_with_nothing_spent() {
    let upstream = Upstream::start().await;
    let c = component(4);
    let ledger = DayLedger::new("credits");
    let run = ledger
        .start_run(Allowance {
            per_run: 25,
            per_day: 100,
        })
        .unwrap();
    let http = HttpCapability::new(HttpConfig::new(upstream.origin()).allow_private_network(true))
        .unwrap();
    let caps = Capabilities {
        http: Some(http),
        meter: Some(run.clone()),
        ..Capabilities::default()
    };

    // A scrape: reserve 5, call upstream, settle 1.
    let scrape = call(
        &c,
        "capabilities_spend",
        json!({"estimate": 5, "actual": 1, "path": "/scrape"}),
        &caps,
    )
    .await;
    assert_eq!(scrape, json!({"ok": 24}));
    assert_eq!(run.spent(), 1);
    assert_eq!(upstream.seen().len(), 1);

    // A crawl estimated above what is left: refused before anything is sent.
    let crawl = call(
        &c,
        "capabilities_spend",
        json!({"estimate": 50, "actual": 50, "path": "/crawl"}),
        &caps,
    )
    .await;
    assert_eq!(
        scout_tests::capability_error(&crawl, "meter", "run-exhausted"),
        json!(24),
        "{crawl}"
    );
    assert_eq!(run.spent(), 1, "nothing charged");
    assert_eq!(run.reserved(), 0, "nothing held");
    assert_eq!(upstream.seen().len(), 1, "nothing sent upstream");
}

#[tokio::test(flavor = "multi_thread")]
async fn unsettled_and_trapped_reservations_are_charged_in_full() {
    let c = component(4);
    let ledger = DayLedger::new("credits");
    let run = ledger
        .start_run(Allowance {
            per_run: 25,
            per_day: 100,
        })
        .unwrap();
    let caps = Capabilities {
        meter: Some(run.clone()),
        ..Default::default()
    };
    let forgot = call(&c, "capabilities_spend", json!({"estimate": 4}), &caps).await;
    assert_eq!(forgot, json!({"ok": 21}));
    let crashed = call(
        &c,
        "capabilities_spend_then_crash",
        json!({"estimate": 6}),
        &caps,
    )
    .await;
    assert!(
        crashed["host-error"].as_str().unwrap().contains("trapped"),
        "{crashed}"
    );
    assert_eq!(run.spent(), 10);
    assert_eq!(run.reserved(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_concurrent_calls_never_exceed_the_allowance() {
    let c = Arc::new(component(64));
    let ledger = DayLedger::new("credits");
    let run = ledger
        .start_run(Allowance {
            per_run: 20,
            per_day: 20,
        })
        .unwrap();
    let caps = Capabilities {
        meter: Some(run.clone()),
        ..Default::default()
    };
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (c, caps) = (c.clone(), caps.clone());
        tasks.push(tokio::spawn(async move {
            call(
                &c,
                "capabilities_spend",
                json!({"estimate": 1, "actual": 1}),
                &caps,
            )
            .await
        }));
    }
    let mut ok = 0;
    let mut refused = 0;
    for task in tasks {
        let output = task.await.unwrap();
        if output.get("ok").is_some() {
            ok += 1;
        } else {
            assert!(
                scout_tests::capability_error(&output, "meter", "run-exhausted").is_number(),
                "{output}"
            );
            refused += 1;
        }
    }
    assert_eq!((ok, refused), (20, 30));
    assert_eq!(run.spent(), 20);
    assert_eq!(run.remaining(), 0);
}

#[test]
fn the_day_cap_refuses_a_start() {
    let ledger = DayLedger::new("micro-usd");
    let allowance = Allowance {
        per_run: 1_000_000,
        per_day: 3_000_000,
    };
    let runs: Vec<_> = (0..3)
        .map(|_| ledger.start_run(allowance).unwrap())
        .collect();
    assert!(matches!(
        ledger.start_run(allowance),
        Err(AllowanceError::DayExhausted {
            committed: 3_000_000,
            ..
        })
    ));
    runs[0].reserve(200_000).unwrap();
    runs[0].settle(200_000, 200_000).unwrap();
    runs[0].end();
    // Ended runs count at what they recorded: 0.2 + 2 live at 1.0 = 2.2; a new run would reach 3.2.
    assert!(matches!(
        ledger.start_run(allowance),
        Err(AllowanceError::DayExhausted {
            committed: 2_200_000,
            ..
        })
    ));
    runs[1].reserve(300_000).unwrap();
    runs[1].settle(300_000, 300_000).unwrap();
    runs[1].end();
    // 0.2 + 0.3 + 1 live = 1.5: one more run fits, a second does not.
    ledger.start_run(allowance).expect("room for one more run");
    assert!(ledger.start_run(allowance).is_err());
    // A run that ended having recorded nothing counts at its whole per-run figure.
    runs[2].end();
    assert_eq!(
        ledger.committed(),
        200_000 + 300_000 + 1_000_000 + 1_000_000
    );
    assert!(matches!(
        ledger.start_run(Allowance {
            per_run: 5,
            per_day: 4
        }),
        Err(AllowanceError::Unstartable(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_without_a_meter_cannot_spend() {
    let c = component(2);
    let output = call(
        &c,
        "capabilities_spend",
        json!({"estimate": 1}),
        &Capabilities::default(),
    )
    .await;
    assert!(
        scout_tests::capability_error(&output, "meter", "denied").is_string(),
        "{output}"
    );
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scout-folder-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("root/notes")).unwrap();
    std::fs::write(dir.join("root/notes/a.md"), "inside").unwrap();
    std::fs::write(dir.join("secret.txt"), "TOP-SECRET-OUTSIDE").unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn a_folder_is_confined_to_its_root() {
    let dir = scratch("confined");
    std::os::unix::fs::symlink(dir.join("secret.txt"), dir.join("root/link-out")).unwrap();
    std::os::unix::fs::symlink("../..", dir.join("root/notes/up")).unwrap();
    let folder = FolderCapability::open("project", &dir.join("root"), true).unwrap();
    let caps = Capabilities {
        folders: vec![folder],
        ..Default::default()
    };
    let c = component(4);

    assert_eq!(
        call(
            &c,
            "capabilities_read_text",
            json!({"folder": "project", "path": "notes/a.md"}),
            &caps
        )
        .await,
        json!({"ok": "inside"})
    );
    assert_eq!(
        call(
            &c,
            "capabilities_list_entries",
            json!({"folder": "project", "path": ""}),
            &caps
        )
        .await,
        json!({"ok": ["link-out", "notes"]})
    );
    for path in [
        "../secret.txt",
        "notes/../../secret.txt",
        "/etc/passwd",
        dir.join("secret.txt").to_str().unwrap(),
        "link-out",
        "notes/up/secret.txt",
        "notes\\..\\..\\secret.txt",
        "",
    ] {
        let output = call(
            &c,
            "capabilities_read_text",
            json!({"folder": "project", "path": path}),
            &caps,
        )
        .await;
        let refused = ["denied", "invalid-path", "not-found"]
            .iter()
            .any(|kind| scout_tests::capability_error(&output, "folder", kind).is_string());
        assert!(refused, "{path:?}: {output}");
        assert!(
            !output.to_string().contains("TOP-SECRET"),
            "{path:?} leaked the outside file"
        );
    }
    // Writes are confined the same way.
    for path in ["../escape.txt", "notes/up/escape.txt", "link-out"] {
        let output = call(
            &c,
            "capabilities_write_text",
            json!({"folder": "project", "path": path, "text": "x"}),
            &caps,
        )
        .await;
        assert!(output.get("err").is_some(), "{path}: {output}");
    }
    assert!(!dir.join("escape.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("secret.txt")).unwrap(),
        "TOP-SECRET-OUTSIDE"
    );
    assert_eq!(
        call(
            &c,
            "capabilities_write_text",
            json!({"folder": "project", "path": "drafts/new.md", "text": "hi"}),
            &caps
        )
        .await,
        json!({"ok": true})
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("root/drafts/new.md")).unwrap(),
        "hi"
    );
    // A name that was not granted opens nothing.
    let output = call(
        &c,
        "capabilities_read_text",
        json!({"folder": "voice-guides", "path": "notes/a.md"}),
        &caps,
    )
    .await;
    assert!(
        scout_tests::capability_error(&output, "folder", "denied").is_string(),
        "{output}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_write_folder_is_never_used_through_a_link_even_one_inside() {
    let dir = scratch("links");
    // Both links stay inside the root: confinement alone would allow them.
    std::os::unix::fs::symlink("notes", dir.join("root/alias")).unwrap();
    std::os::unix::fs::symlink("a.md", dir.join("root/notes/same.md")).unwrap();
    let c = component(4);
    let writable = Capabilities {
        folders: vec![FolderCapability::open("project", &dir.join("root"), true).unwrap()],
        ..Default::default()
    };
    for path in [
        "alias/new.md",
        "alias/deeper/new.md",
        "notes/same.md",
        "alias",
    ] {
        let output = call(
            &c,
            "capabilities_write_text",
            json!({"folder": "project", "path": path, "text": "changed"}),
            &writable,
        )
        .await;
        let reason = scout_tests::capability_error(&output, "folder", "denied");
        assert!(
            reason.as_str().is_some_and(|r| r.contains("symbolic link")),
            "write {path}: {output}"
        );
    }
    assert!(!dir.join("root/notes/new.md").exists());
    assert!(!dir.join("root/notes/deeper").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("root/notes/a.md")).unwrap(),
        "inside",
        "nothing was written through a link"
    );
    for (tool, path) in [
        ("capabilities_read_text", "alias/a.md"),
        ("capabilities_read_text", "notes/same.md"),
        ("capabilities_list_entries", "alias"),
    ] {
        let output = call(
            &c,
            tool,
            json!({"folder": "project", "path": path}),
            &writable,
        )
        .await;
        let reason = scout_tests::capability_error(&output, "folder", "denied");
        assert!(
            reason.as_str().is_some_and(|r| r.contains("symbolic link")),
            "{tool} {path}: {output}"
        );
    }
    // Real directories are still walked, and created where missing.
    assert_eq!(
        call(
            &c,
            "capabilities_write_text",
            json!({"folder": "project", "path": "notes/drafts/b.md", "text": "new"}),
            &writable
        )
        .await,
        json!({"ok": true})
    );
    assert_eq!(
        call(
            &c,
            "capabilities_read_text",
            json!({"folder": "project", "path": "notes/drafts/b.md"}),
            &writable
        )
        .await,
        json!({"ok": "new"})
    );
    // A read-only folder follows a link that stays inside.
    let read_only = Capabilities {
        folders: vec![FolderCapability::open("project", &dir.join("root"), false).unwrap()],
        ..Default::default()
    };
    assert_eq!(
        call(
            &c,
            "capabilities_read_text",
            json!({"folder": "project", "path": "alias/a.md"}),
            &read_only
        )
        .await,
        json!({"ok": "inside"})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_folder_refuses_every_write() {
    let dir = scratch("readonly");
    let folder = FolderCapability::open("briefs", &dir.join("root"), false).unwrap();
    let caps = Capabilities {
        folders: vec![folder],
        ..Default::default()
    };
    let c = component(2);
    let output = call(
        &c,
        "capabilities_write_text",
        json!({"folder": "briefs", "path": "notes/a.md", "text": "changed"}),
        &caps,
    )
    .await;
    assert!(
        scout_tests::capability_error(&output, "folder", "denied")
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{output}"
    );
    let output = call(
        &c,
        "capabilities_write_text",
        json!({"folder": "briefs", "path": "new.md", "text": "x"}),
        &caps,
    )
    .await;
    assert!(scout_tests::capability_error(&output, "folder", "denied").is_string());
    assert_eq!(
        std::fs::read_to_string(dir.join("root/notes/a.md")).unwrap(),
        "inside"
    );
    assert!(!dir.join("root/new.md").exists());
    assert_eq!(
        call(
            &c,
            "capabilities_read_text",
            json!({"folder": "briefs", "path": "notes/a.md"}),
            &caps
        )
        .await,
        json!({"ok": "inside"})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_recorded_in_sqlite_keeps_every_charge_across_a_restart() {
    use scout_host::capabilities::meter::RunMeter;
    use scout_host::store::{SqliteStore, Store};
    let path = std::env::temp_dir().join(format!("scout-meter-{}.db", std::process::id()));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    let upstream = Upstream::start().await;
    let c = component(4);
    let allowance = Allowance {
        per_run: 25,
        per_day: 40,
    };
    {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
        let run = RunMeter::start_in_store(
            store.clone(),
            "run-1",
            "acme",
            "firecrawl",
            "2026-11-30",
            "credits",
            allowance,
        )
        .unwrap();
        let http =
            HttpCapability::new(HttpConfig::new(upstream.origin()).allow_private_network(true))
                .unwrap();
        let caps = Capabilities {
            http: Some(http),
            meter: Some(run.clone()),
            ..Capabilities::default()
        };
        assert_eq!(
            call(
                &c,
                "capabilities_spend",
                json!({"estimate": 5, "actual": 3, "path": "/scrape"}),
                &caps
            )
            .await,
            json!({"ok": 22})
        );
        let refused = call(
            &c,
            "capabilities_spend",
            json!({"estimate": 30, "path": "/crawl"}),
            &caps,
        )
        .await;
        assert_eq!(
            scout_tests::capability_error(&refused, "meter", "run-exhausted"),
            json!(22),
            "{refused}"
        );
        assert_eq!(upstream.seen().len(), 1, "the refused crawl sent nothing");
        assert_eq!(
            store.spent_in_run("run-1").await.unwrap(),
            3,
            "the charge is in the ledger, the refusal is not"
        );
        // A second run would take the day past 40 while run-1 is live (25 + 25).
        assert!(
            RunMeter::start_in_store(
                store.clone(),
                "run-2",
                "acme",
                "firecrawl",
                "2026-11-30",
                "credits",
                allowance
            )
            .is_err()
        );
        run.end();
    }
    // After a restart the ledger still holds the charge; the ended run counts at 3.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    assert_eq!(
        store
            .spent_on_day("acme", "firecrawl", "2026-11-30")
            .await
            .unwrap(),
        3
    );
    let run2 = RunMeter::start_in_store(
        store.clone(),
        "run-2",
        "acme",
        "firecrawl",
        "2026-11-30",
        "credits",
        allowance,
    )
    .expect("3 + 25 fits in 40");
    assert!(
        RunMeter::start_in_store(
            store,
            "run-3",
            "acme",
            "firecrawl",
            "2026-11-30",
            "credits",
            allowance
        )
        .is_err(),
        "3 + 25 + 25 does not"
    );
    drop(run2);
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_concurrent_calls_never_exceed_an_allowance_recorded_in_sqlite() {
    use scout_host::capabilities::meter::RunMeter;
    use scout_host::store::{SqliteStore, Store};
    let path = std::env::temp_dir().join(format!("scout-meter-50-{}.db", std::process::id()));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let run = RunMeter::start_in_store(
        store.clone(),
        "run-50",
        "acme",
        "firecrawl",
        "2026-11-30",
        "credits",
        Allowance {
            per_run: 20,
            per_day: 20,
        },
    )
    .unwrap();
    let caps = Capabilities {
        meter: Some(run.clone()),
        ..Default::default()
    };
    let c = Arc::new(component(64));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (c, caps) = (c.clone(), caps.clone());
            tokio::spawn(async move {
                call(
                    &c,
                    "capabilities_spend",
                    json!({"estimate": 1, "actual": 1}),
                    &caps,
                )
                .await
            })
        })
        .collect();
    let mut ok = 0;
    for task in tasks {
        if task.await.unwrap().get("ok").is_some() {
            ok += 1;
        }
    }
    assert_eq!(ok, 20);
    assert_eq!(
        store.spent_in_run("run-50").await.unwrap(),
        20,
        "the ledger holds exactly what was allowed"
    );
    assert_eq!(store.charges_in_run("run-50").await.unwrap().len(), 20);
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
}
