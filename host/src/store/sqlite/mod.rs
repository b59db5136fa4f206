//! [`SqliteStore`]: the embedded, single-file implementation of [`Store`].

mod approvals;
mod brand_limits;
mod capability_requests;
mod connections;
mod deployments;
mod inventory;
mod ledger;
mod policies;
mod policy_counts;
mod profiles;
mod reviews;
mod sessions;
mod trace;

use super::statements;
use super::{
    Approval, ApprovalError, ApprovalId, ApprovalState, ApprovalStore, Charge, ConnectionStore,
    LedgerStore, ProfileKind, ProfileStore, RESTART_REVOKER, Recovered, ReviewStore,
    SaveProfileError, SavedProfile, SessionStore, StartRunError, StoreError, TraceEvent,
    TraceFilter, TraceState, TraceStore,
};
use crate::policy::{Catalog, Profile};
use parking_lot::{Mutex, MutexGuard};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::Path;
use std::time::Duration;

/// The schema, one file per version, each applied once in order (the
/// PostgreSQL backend keeps its own in `postgres/`). Add a file to change
/// the tables; never edit one a database may have applied.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("001_initial.sql")),
    (2, include_str!("002_capability_requests.sql")),
    (3, include_str!("003_review_effect.sql")),
    (4, include_str!("004_artifact_pins.sql")),
    (5, include_str!("005_review_facts.sql")),
    (6, include_str!("006_deployed_connectors.sql")),
    (7, include_str!("007_run_reserved.sql")),
    (8, include_str!("008_trace_origin.sql")),
    (9, include_str!("009_policies.sql")),
    (10, include_str!("010_policy_counts.sql")),
    (11, include_str!("011_brand_limits.sql")),
];

/// The schema this host writes: the last migration's version.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Statements on the approval and ledger paths, prepared once per connection.
const REQUEST_APPROVAL: &str = "INSERT INTO approvals (session, tool, args_digest, state, requested_at_ms) VALUES (?1, ?2, ?3, 'pending', ?4)";
const DECIDE_APPROVAL: &str = "UPDATE approvals SET state = ?1, decided_by = ?2, decided_at_ms = ?3, decided_actor = ?5, args_nonce = NULL, args_sealed = NULL WHERE id = ?4 AND state = 'pending'";
const USE_APPROVAL: &str = "UPDATE approvals SET used = 1, used_at_ms = ?1 WHERE id = ?2 AND state = 'approved' AND used = 0";
const INSERT_CHARGE: &str = statements::INSERT_CHARGE.lite;
const START_RUN: &str = "INSERT INTO runs (run_id, brand, connector, day, per_run, per_day, started_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
const END_RUN: &str = statements::END_RUN.lite;

/// One SQLite file. Each `SqliteStore` holds one connection that commits
/// approvals, the ledger and the rest, one that only reads, and its trace
/// writer a third on a thread of its own; several stores
/// (threads, processes) may open the same file, and SQLite's locks plus
/// `BEGIN IMMEDIATE` serialise their writes.
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// Reads outside a write (the trace, approvals, the ledger's figures,
    /// credentials, profiles, reviews) on a connection of its own: under WAL
    /// a reader sees the last commit and neither waits for nor holds up the
    /// commits on `conn`.
    reader: Mutex<Connection>,
    /// Writes the trace on a thread of its own, in groups (see [`super::writer`]).
    writer: super::writer::TraceWriter,
    /// Wakes the calls waiting on an approval this store changes.
    broker: std::sync::Arc<super::ApprovalBroker>,
    /// This host's id for this start (`h-` and 16 hex digits, as a fleet
    /// host's): the `host` of each trace row it writes, and its
    /// OpenTelemetry `service.instance.id`.
    host_id: String,
}

/// Applies every migration newer than the database's version, in `tx`
/// (one transaction: a database is at one version or the next, never
/// between). A database from a newer schema is refused.
fn migrate(tx: &rusqlite::Transaction<'_>) -> Result<(), StoreError> {
    tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);")?;
    let found: Option<i64> =
        tx.query_row(statements::SCHEMA_VERSION_FOUND.lite, [], |row| row.get(0))?;
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        tx.execute_batch(sql)?;
        tx.execute(statements::RECORD_SCHEMA_VERSION.lite, [version])?;
    }
    Ok(())
}

impl SqliteStore {
    /// Opens the existing database at `path` to read only (the audit and
    /// the trace export): never creates the file, changes no setting,
    /// migrates nothing and starts no writer's work, so a running `serve`
    /// and a reader that may only read are both left as they are. Every
    /// write through it fails. A schema other than this host's is refused.
    pub fn open_to_read(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        // A read-only connection to a WAL database creates `-wal` and
        // `-shm` beside it when they are absent, and cannot remove them
        // again. Absent, no writer has the store open (the last one to
        // close checkpoints and deletes them), so the file alone is the
        // whole store: read as immutable, it gets neither. A writer that
        // starts meanwhile is not seen by this reader.
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let stopped = !Path::new(&wal).exists();
        let target = if stopped {
            let absolute = std::path::absolute(path).map_err(|e| {
                StoreError::Config(format!("cannot resolve {}: {e}", path.display()))
            })?;
            let mut uri = String::from("file:");
            for c in absolute.to_string_lossy().chars() {
                match c {
                    '%' => uri.push_str("%25"),
                    '?' => uri.push_str("%3f"),
                    '#' => uri.push_str("%23"),
                    c => uri.push(c),
                }
            }
            uri.push_str("?mode=ro&immutable=1");
            std::path::PathBuf::from(uri)
        } else {
            path.to_path_buf()
        };
        let uri_flag = if stopped {
            rusqlite::OpenFlags::SQLITE_OPEN_URI
        } else {
            rusqlite::OpenFlags::empty()
        };
        let read_only = || {
            let conn = Connection::open_with_flags(
                &target,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
                    | uri_flag,
            )?;
            conn.busy_timeout(Duration::from_secs(30))?;
            Ok::<_, StoreError>(conn)
        };
        let conn = read_only()?;
        let found: Option<i64> = conn
            .query_row(statements::SCHEMA_VERSION_FOUND.lite, [], |row| row.get(0))
            .map_err(|e| {
                StoreError::Corrupt(format!(
                    "{} is not a Scout store ({e}): check the path",
                    path.display()
                ))
            })?;
        match found {
            Some(found) if found > SCHEMA_VERSION => {
                return Err(StoreError::SchemaTooNew {
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            Some(found) if found == SCHEMA_VERSION => {}
            found => {
                return Err(StoreError::Config(format!(
                    "{} has schema version {}, older than this host's {SCHEMA_VERSION}; it is only read here: start `serve` of this version on it once (which upgrades it), or read it with the version that wrote it",
                    path.display(),
                    found.unwrap_or(0)
                )));
            }
        }
        // The writer's connection is read-only too: a trace write fails.
        let host_id = super::new_host_id();
        let writer = super::writer::TraceWriter::start(read_only()?, host_id.clone(), false)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            reader: Mutex::new(read_only()?),
            writer,
            broker: Default::default(),
            host_id,
        })
    }

    /// Opens (creating if needed) the database at `path`: WAL journal,
    /// `synchronous=FULL`, foreign keys on, schema created if absent. A file
    /// that is not a database, or one from a newer schema, is an error.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        Self::open_durable(path, super::TraceDurability::PowerLoss)
    }

    /// [`SqliteStore::open`], its trace rows durable against `durability`
    /// (every other write is fsynced whatever it says).
    pub fn open_durable(
        path: impl AsRef<Path>,
        durability: super::TraceDurability,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        // journal_mode returns a row; query it rather than `pragma_update`.
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Corrupt(format!(
                "could not switch to WAL (journal mode {mode})"
            )));
        }
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        // No commit copies the log into the file on a caller's path: the
        // trace writer does it between its groups.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        migrate(&tx)?;
        tx.commit()?;
        // The trace writer's own connection: the same file; each commit
        // fsynced, or (durable against a process crash only) handed to the
        // operating system. Under WAL, NORMAL never corrupts the file.
        let trace_conn = Connection::open(path)?;
        trace_conn.busy_timeout(Duration::from_secs(30))?;
        let synchronous = match durability {
            super::TraceDurability::PowerLoss => "FULL",
            super::TraceDurability::ProcessCrash => "NORMAL",
        };
        trace_conn.pragma_update(None, "synchronous", synchronous)?;
        trace_conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let host_id = super::new_host_id();
        let writer = super::writer::TraceWriter::start(trace_conn, host_id.clone(), true)?;
        let reader = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        reader.busy_timeout(Duration::from_secs(30))?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            reader: Mutex::new(reader),
            writer,
            broker: Default::default(),
            host_id,
        })
    }

    /// The connection for reads outside a write: under WAL it sees the last
    /// commit and never waits behind one, so a lookup (an approval's state,
    /// a credential, a review) does not queue behind another call's fsync.
    fn read(&self) -> MutexGuard<'_, Connection> {
        self.reader.lock()
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic elsewhere while holding the lock leaves no half-done
        // transaction (it rolls back on drop), so the connection is usable.
        self.conn.lock()
    }

    /// Every change goes through here: `work` runs in one `BEGIN IMMEDIATE`
    /// transaction on the writing connection, off the tokio worker (a
    /// commit is an fsync), committed if it returns `Ok` and rolled back
    /// otherwise. What must follow the commit (ringing a waiter) is done by
    /// the caller once this returns.
    fn write_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        super::off_worker(|| {
            let mut conn = self.lock();
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(StoreError::from)?;
            let out = work(&tx)?;
            tx.commit().map_err(StoreError::from)?;
            Ok(out)
        })
    }

    /// Runs SQLite's `PRAGMA integrity_check`; `Ok(())` if it reports `ok`.
    pub fn integrity_check(&self) -> Result<(), StoreError> {
        let conn = self.lock();
        let result: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))?;
        if result == "ok" {
            Ok(())
        } else {
            Err(StoreError::Corrupt(result))
        }
    }
}
#[cfg(test)]
mod tests {
    use super::{MIGRATIONS, SCHEMA_VERSION, SqliteStore};
    use crate::store::{ApprovalStore, LedgerStore};

    /// Each table's columns, in order, as SQLite reports them.
    fn columns(conn: &rusqlite::Connection) -> Vec<(String, Vec<String>)> {
        let mut tables = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .unwrap();
        let names: Vec<String> = tables
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        names
            .into_iter()
            .map(|table| {
                let mut info = conn
                    .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
                    .unwrap();
                let cols = info
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                (table, cols)
            })
            .collect()
    }

    /// A database left at any earlier version by an older host, with rows
    /// in it, opens at this version: its rows kept, its tables exactly a
    /// new database's, and the store works on it.
    #[test]
    fn a_database_of_every_earlier_version_is_upgraded_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh.db");
        drop(SqliteStore::open(&fresh).unwrap());
        let expected = columns(&rusqlite::Connection::open(&fresh).unwrap());
        for at in 1..SCHEMA_VERSION {
            let path = dir.path().join(format!("v{at}.db"));
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE schema_version (version INTEGER NOT NULL);")
                .unwrap();
            for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v <= at) {
                conn.execute_batch(sql).unwrap();
                conn.execute(
                    "INSERT INTO schema_version (version) VALUES (?1)",
                    [version],
                )
                .unwrap();
            }
            conn.execute(
                "INSERT INTO approvals (session, tool, args_digest, state, requested_at_ms) VALUES ('s1', 't', 'd', 'pending', 1)",
                [],
            )
            .unwrap();
            drop(conn);

            let store = SqliteStore::open(&path).unwrap();
            assert_eq!(
                crate::store::block(store.pending("s1")).unwrap().len(),
                1,
                "from v{at}: rows kept"
            );
            crate::store::block(store.start_run("r1", "acme", "c", "2026-12-05", 10, 100)).unwrap();
            assert!(
                matches!(
                    crate::store::block(store.reserve_in_run("r1", 3)).unwrap(),
                    crate::store::RunHold::Held
                ),
                "from v{at}"
            );
            assert_eq!(
                crate::store::block(store.run_left("r1")).unwrap(),
                Some(7),
                "from v{at}"
            );
            drop(store);
            let conn = rusqlite::Connection::open(&path).unwrap();
            let version: i64 = conn
                .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
                .unwrap();
            assert_eq!(version, SCHEMA_VERSION, "from v{at}");
            assert_eq!(
                columns(&conn),
                expected,
                "from v{at}: the tables of a new database"
            );
        }
    }
}
