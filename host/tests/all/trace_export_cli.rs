//! `scout-host trace export --config FILE`: every trace row of `serve`'s
//! store on stdout as JSON lines, the cursor to resume from on stderr; on
//! SQLite and on PostgreSQL (where it registers no host). A reader changes
//! nothing: no schema upgrade, no write, on either store.

use scout_host::store::prelude::*;
use scout_host::store::{PgOptions, PgStore, SqliteStore, TraceEvent, TraceState};
use scout_tests::TempDb;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

fn event(n: i64) -> TraceEvent {
    TraceEvent {
        session: format!("s{}", n % 3),
        brand: if n % 2 == 0 { "acme" } else { "globex" }.into(),
        call_id: Some(format!("c{n}")),
        tool: Some("mcp__github__github_read_file".into()),
        state: TraceState::Requested,
        rule: None,
        detail: json!({ "n": n }),
        at_ms: n,
        origin: Default::default(),
    }
}

/// Runs the export; its rows and the cursor stderr names.
fn export(config: &Path, args: &[&str], env: &[(&str, String)]) -> (Vec<Value>, i64) {
    let output = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["trace", "export", "--config"])
        .arg(config)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("run scout-host trace export");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "{stderr}");
    let rows = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cursor = stderr
        .rsplit("--since ")
        .next()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("a cursor on stderr: {stderr}"));
    (rows, cursor)
}

/// All rows, then the same in chunks resumed from each cursor.
fn check(config: &Path, env: &[(&str, String)], expected: usize) {
    let (all, cursor) = export(config, &[], env);
    assert_eq!(all.len(), expected);
    assert_eq!(Some(cursor), all.last().and_then(|r| r["seq"].as_i64()));
    let n: Vec<i64> = all
        .iter()
        .map(|r| r["detail"]["n"].as_i64().unwrap())
        .collect();
    assert_eq!(
        n,
        (0..expected as i64).collect::<Vec<_>>(),
        "once each, in order"
    );
    let (mut since, mut chunked) = (0i64, Vec::new());
    loop {
        let (rows, next) = export(
            config,
            &["--since", &since.to_string(), "--limit", "4"],
            env,
        );
        if rows.is_empty() {
            assert_eq!(next, since);
            break;
        }
        chunked.extend(rows);
        since = next;
    }
    assert_eq!(chunked, all);
}

fn config_text(store: &str) -> String {
    let component = Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .unwrap();
    format!(
        "{store}\n[connectors.github]\ncomponent = {:?}\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n",
        component.display().to_string()
    )
}

#[test]
fn the_export_of_a_sqlite_store_is_every_row_resumable() {
    let db = TempDb::new("trace-export");
    let store = SqliteStore::open(&db).unwrap();
    for n in 0..10 {
        scout_host::store::block(store.record(&event(n))).unwrap();
    }
    let config = db.path().with_extension("toml");
    std::fs::write(
        &config,
        config_text(&format!("database = {:?}", db.path().display().to_string())),
    )
    .unwrap();
    check(&config, &[], 10);
    // A bad cursor is refused with what to give.
    let output = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["trace", "export", "--since", "-5", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let _ = std::fs::remove_file(&config);
}

#[test]
fn the_export_of_a_postgres_store_registers_no_host() {
    let Some(db) = scout_tests::pg::database_or_skip("trace_export") else {
        return;
    };
    let store = PgStore::connect(PgOptions::new(db.url())).unwrap();
    for n in 0..10 {
        scout_host::store::block(store.record(&event(n))).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        config_text("[store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\""),
    );
    check(&config, &[("SCOUT_PG_URL", db.url())], 10);
    assert_eq!(
        db.psql("SELECT count(*) FROM hosts"),
        "1",
        "only the writing host; the exports registered none"
    );
}

/// Runs the export expecting a refusal; its stderr.
fn refused_export(config: &Path, env: &[(&str, String)]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["trace", "export", "--config"])
        .arg(config)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("run scout-host trace export");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(!output.status.success(), "refused: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn a_reader_of_a_sqlite_store_upgrades_nothing_and_creates_nothing() {
    let db = TempDb::new("trace-export-old");
    SqliteStore::open(&db).unwrap();
    // As if an older host had written it.
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    conn.execute_batch(
        "DELETE FROM schema_version; INSERT INTO schema_version (version) VALUES (1);",
    )
    .unwrap();
    drop(conn);
    let config = db.path().with_extension("toml");
    std::fs::write(
        &config,
        config_text(&format!("database = {:?}", db.path().display().to_string())),
    )
    .unwrap();
    let stderr = refused_export(&config, &[]);
    assert!(
        stderr.contains("has schema version 1, older than this host's")
            && stderr.contains("start `serve` of this version on it once"),
        "{stderr}"
    );
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    let version: i64 = conn
        .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 1, "the reader upgraded nothing");
    drop(conn);

    // A store that is not there is not created.
    let missing = db.path().with_extension("missing.db");
    std::fs::write(
        &config,
        config_text(&format!("database = {:?}", missing.display().to_string())),
    )
    .unwrap();
    refused_export(&config, &[]);
    assert!(!missing.exists(), "the reader created no store");
    let _ = std::fs::remove_file(&config);
}

#[test]
fn a_reader_of_a_postgres_store_upgrades_nothing_and_cannot_write() {
    let Some(db) = scout_tests::pg::database_or_skip("trace_export_reader") else {
        return;
    };
    drop(PgStore::connect(PgOptions::new(db.url())).unwrap());
    // The server refuses a reader's write, whatever asks for it.
    let mut options = PgOptions::new(db.url());
    options.reader = true;
    let reader = PgStore::connect(options).unwrap();
    let write = scout_host::store::block(reader.put_connection(
        "acme",
        "github",
        "ghp-reader-0123",
        &[7u8; 32],
    ));
    let error = write.expect_err("a reader cannot write").to_string();
    assert!(error.contains("read-only transaction"), "{error}");
    drop(reader);
    assert_eq!(db.psql("SELECT count(*) FROM connections"), "0");

    // As if an older host had written it: refused, and not upgraded.
    let newest = db.psql("SELECT MAX(version) FROM schema_version");
    db.psql(&format!(
        "DELETE FROM schema_version WHERE version = {newest}"
    ));
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        config_text("[store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\""),
    );
    let stderr = refused_export(&config, &[("SCOUT_PG_URL", db.url())]);
    assert!(stderr.contains("older than this host's"), "{stderr}");
    assert_ne!(
        db.psql("SELECT MAX(version) FROM schema_version"),
        newest,
        "the reader upgraded nothing"
    );
}

/// `-wal` and `-shm` beside `path`, those that exist.
fn side_files(path: &Path) -> Vec<String> {
    ["-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let mut side = path.as_os_str().to_owned();
            side.push(suffix);
            Path::new(&side).exists().then(|| suffix.to_string())
        })
        .collect()
}

#[test]
fn readers_of_a_cleanly_stopped_sqlite_store_leave_no_file_beside_it() {
    let db = TempDb::new("trace-export-stopped");
    {
        let store = SqliteStore::open(&db).unwrap();
        for n in 0..6 {
            scout_host::store::block(store.record(&event(n))).unwrap();
        }
    }
    assert_eq!(
        side_files(db.path()),
        Vec::<String>::new(),
        "stopped cleanly"
    );
    let config = db.path().with_extension("toml");
    std::fs::write(
        &config,
        config_text(&format!("database = {:?}", db.path().display().to_string())),
    )
    .unwrap();
    check(&config, &[], 6);
    assert_eq!(
        side_files(db.path()),
        Vec::<String>::new(),
        "after the export"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["audit", "--role", "read-only", "--config"])
        .arg(&config)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SCOUT_STORE_KEY", "7".repeat(64))
        .envs(
            ["HOME", "SCOUT_CACHE_DIR", "XDG_CACHE_HOME"]
                .iter()
                .filter_map(|v| std::env::var(v).ok().map(|value| (*v, value))),
        )
        .output()
        .expect("run scout-host audit");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        side_files(db.path()),
        Vec::<String>::new(),
        "after the audit"
    );

    // A store a writer holds open is read through its WAL, as before: the
    // newest row, not yet checkpointed into the file, is in the export.
    let store = SqliteStore::open(&db).unwrap();
    scout_host::store::block(store.record(&event(6))).unwrap();
    check(&config, &[], 7);
    drop(store);
    let _ = std::fs::remove_file(&config);
}
