//! [`SqliteStore`]: the embedded, single-file implementation of [`Store`].

use super::rules;
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
    (1, include_str!("sqlite/001_initial.sql")),
    (2, include_str!("sqlite/002_capability_requests.sql")),
    (3, include_str!("sqlite/003_review_effect.sql")),
    (4, include_str!("sqlite/004_artifact_pins.sql")),
    (5, include_str!("sqlite/005_review_facts.sql")),
    (6, include_str!("sqlite/006_deployed_connectors.sql")),
    (7, include_str!("sqlite/007_run_reserved.sql")),
    (8, include_str!("sqlite/008_trace_origin.sql")),
];

/// The schema this host writes: the last migration's version.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Statements on the approval and ledger paths, prepared once per connection.
const REQUEST_APPROVAL: &str = "INSERT INTO approvals (session, tool, args_digest, state, requested_at_ms) VALUES (?1, ?2, ?3, 'pending', ?4)";
const DECIDE_APPROVAL: &str = "UPDATE approvals SET state = ?1, decided_by = ?2, decided_at_ms = ?3, decided_actor = ?5, args_nonce = NULL, args_sealed = NULL WHERE id = ?4 AND state = 'pending'";
const USE_APPROVAL: &str = "UPDATE approvals SET used = 1, used_at_ms = ?1 WHERE id = ?2 AND state = 'approved' AND used = 0";
const INSERT_CHARGE: &str = rules::INSERT_CHARGE.lite;
const START_RUN: &str = "INSERT INTO runs (run_id, brand, connector, day, per_run, per_day, started_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
const END_RUN: &str = rules::END_RUN.lite;

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
        tx.query_row(rules::SCHEMA_VERSION_FOUND.lite, [], |row| row.get(0))?;
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        tx.execute_batch(sql)?;
        tx.execute(rules::RECORD_SCHEMA_VERSION.lite, [version])?;
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
            .query_row(rules::SCHEMA_VERSION_FOUND.lite, [], |row| row.get(0))
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

    fn trace_query(&self, column: &str, value: &str) -> Result<Vec<TraceEvent>, StoreError> {
        Ok(self
            .trace_rows(column, value, 0, i64::MAX)?
            .into_iter()
            .map(|(_, event)| event)
            .collect())
    }

    fn trace_rows(
        &self,
        column: &str,
        value: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let sql = format!(
            "SELECT {TRACE_COLUMNS} FROM trace
             WHERE {column} = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"
        );
        self.trace_select(&sql, params![value, after, limit])
    }

    /// The trace rows `sql` selects (the columns of [`Self::trace_rows`]).
    fn trace_select(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt.query_map(params, |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, Option<String>>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, Option<String>>(6)?,
                row.get::<_, String>(7)?,
                row.get::<_, i64>(8)?,
                super::Origin {
                    host: row.get(9)?,
                    trace_id: row.get(10)?,
                    span_id: row.get(11)?,
                },
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, session, brand, call_id, tool, state, rule, detail, at_ms, origin) = row?;
            let state = TraceState::parse(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("unknown trace state {state:?}")))?;
            let detail = serde_json::from_str(&detail)
                .map_err(|e| StoreError::Corrupt(format!("trace detail is not JSON: {e}")))?;
            out.push((
                seq,
                TraceEvent {
                    session,
                    brand,
                    call_id,
                    tool,
                    state,
                    rule,
                    detail,
                    at_ms,
                    origin,
                },
            ));
        }
        Ok(out)
    }

    fn approvals_query(
        &self,
        sql: &str,
        param: &dyn rusqlite::ToSql,
    ) -> Result<Vec<Approval>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt.query_map([param], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, bool>(5)?,
                row.get::<_, Option<String>>(6)?,
                row.get::<_, i64>(7)?,
                row.get::<_, Option<i64>>(8)?,
                row.get::<_, Option<String>>(9)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (
                id,
                session,
                tool,
                args_digest,
                state,
                used,
                decided_by,
                requested_at_ms,
                decided_at_ms,
                decided_actor,
            ) = row?;
            let state = ApprovalState::parse(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("unknown approval state {state:?}")))?;
            out.push(Approval {
                id: ApprovalId(id),
                session,
                tool,
                args_digest,
                state,
                used,
                decided_by,
                decided_actor: decided_actor.and_then(|a| serde_json::from_str(&a).ok()),
                requested_at_ms,
                decided_at_ms,
            });
        }
        Ok(out)
    }
}

/// The session, tool and argument digest approval `id` is for: what its
/// waiters subscribed to.
fn approval_key(conn: &Connection, id: ApprovalId) -> rusqlite::Result<(String, String, String)> {
    conn.query_row(
        "SELECT session, tool, args_digest FROM approvals WHERE id = ?1",
        [id.0],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )
}

/// The columns [`SqliteStore::trace_select`] reads, in its order.
pub(super) const TRACE_COLUMNS: &str = super::rules::TRACE_COLUMNS;

const APPROVAL_COLUMNS: &str = "id, session, tool, args_digest, state, used, decided_by, requested_at_ms, decided_at_ms, decided_actor";

#[async_trait::async_trait]
impl TraceStore for SqliteStore {
    async fn record(&self, event: &TraceEvent) -> Result<(), StoreError> {
        self.record_all(std::slice::from_ref(event)).await
    }

    fn trace_commits(&self) -> u64 {
        self.writer.commits()
    }

    fn writer_metrics(&self) -> Option<super::WriterMetrics> {
        Some(self.writer.metrics())
    }

    /// Handed to the writer thread, and answered once its group commits:
    /// the caller's task waits without holding a runtime worker.
    async fn record_all(&self, events: &[TraceEvent]) -> Result<(), StoreError> {
        self.writer.write(events).await
    }

    async fn trace_page(
        &self,
        filter: TraceFilter<'_>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        super::off_worker(|| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            match filter {
                TraceFilter::Session(session) => self.trace_rows("session", session, after, limit),
                TraceFilter::Brand(brand) => self.trace_rows("brand", brand, after, limit),
                // `'all' = 'all'`: the same query, every row.
                TraceFilter::All => self.trace_rows("'all'", "all", after, limit),
            }
        })
    }

    async fn trace_for_session(&self, session: &str) -> Result<Vec<TraceEvent>, StoreError> {
        super::off_worker(|| self.trace_query("session", session))
    }

    async fn recent_decisions(&self, limit: usize) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        super::off_worker(|| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            self.trace_select(super::rules::RECENT_DECISIONS.lite, params![limit])
        })
    }

    async fn recent_requests(
        &self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<TraceEvent>, StoreError> {
        super::off_worker(|| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut rows =
                self.trace_select(super::rules::RECENT_REQUESTS.lite, params![session, limit])?;
            rows.reverse();
            Ok(rows.into_iter().map(|(_, e)| e).collect())
        })
    }

    async fn trace_for_brand(&self, brand: &str) -> Result<Vec<TraceEvent>, StoreError> {
        super::off_worker(|| self.trace_query("brand", brand))
    }
}

#[async_trait::async_trait]
impl ApprovalStore for SqliteStore {
    async fn request_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, StoreError> {
        self.write_tx(|tx| {
            tx.prepare_cached(REQUEST_APPROVAL)
                .map_err(StoreError::from)?
                .execute(params![session, tool, args_digest, super::now_ms()])?;
            let id = tx.last_insert_rowid();
            Ok(ApprovalId(id))
        })
    }

    async fn decide_as(
        &self,
        id: ApprovalId,
        approved: bool,
        by: &str,
        actor: Option<&serde_json::Value>,
    ) -> Result<(), ApprovalError> {
        let actor = actor.map(serde_json::Value::to_string);
        let (session, tool, digest) = self.write_tx(|tx| {
            let state = if approved {
                ApprovalState::Approved
            } else {
                ApprovalState::Denied
            };
            let changed = tx
                .prepare_cached(DECIDE_APPROVAL)
                .map_err(StoreError::from)?
                .execute(params![state.as_str(), by, super::now_ms(), id.0, actor])
                .map_err(StoreError::from)?;
            if changed == 1 {
                return Ok(approval_key(tx, id).map_err(StoreError::from)?);
            }
            let exists: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM approvals WHERE id = ?1)",
                    [id.0],
                    |row| row.get(0),
                )
                .map_err(StoreError::from)?;
            Err(if exists {
                ApprovalError::NotPending(id)
            } else {
                ApprovalError::Unknown(id)
            })
        })?;
        // Rung once committed, so a woken waiter reads the decision.
        self.broker.ring(&session, &tool, &digest);
        Ok(())
    }

    async fn consume_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, ApprovalError> {
        self.write_tx(|tx| {
            let candidate: Option<i64> = tx
                .query_row(
                    "SELECT id FROM approvals WHERE session = ?1 AND tool = ?2 AND args_digest = ?3
                 AND state = 'approved' AND used = 0 ORDER BY id LIMIT 1",
                    params![session, tool, args_digest],
                    |row| row.get(0),
                )
                .optional()
                .map_err(StoreError::from)?;
            if let Some(id) = candidate {
                let changed = tx
                    .prepare_cached(USE_APPROVAL)
                    .map_err(StoreError::from)?
                    .execute(params![super::now_ms(), id])
                    .map_err(StoreError::from)?;
                if changed == 1 {
                    return Ok(ApprovalId(id));
                }
            }
            // Nothing to spend: say why, from the newest matching request.
            let latest: Option<(String, bool)> = tx
                .query_row(
                    rules::LATEST_APPROVAL_STATE.lite,
                    params![session, tool, args_digest],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()
                .map_err(StoreError::from)?;
            Err(super::unspendable(
                latest.as_ref().map(|(state, _)| state.as_str()),
            ))
        })
    }

    async fn pending(&self, session: &str) -> Result<Vec<Approval>, StoreError> {
        let sql = format!(
            "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE session = ?1 AND state = 'pending' ORDER BY id"
        );
        self.approvals_query(&sql, &session)
    }

    async fn approval(&self, id: ApprovalId) -> Result<Option<Approval>, StoreError> {
        let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = ?1");
        Ok(self.approvals_query(&sql, &id.0)?.into_iter().next())
    }

    async fn revoke_session_approvals(&self, session: &str) -> Result<usize, StoreError> {
        let changed = self.write_tx(|tx| -> Result<_, StoreError> {
            Ok(tx.execute(
                rules::REVOKE_SESSION_APPROVALS.lite,
                params![super::now_ms(), session],
            )?)
        })?;
        self.broker.ring_session(session);
        Ok(changed)
    }

    async fn revoke_approval(&self, id: ApprovalId, by: &str) -> Result<bool, StoreError> {
        let key = self.write_tx(|tx| -> Result<_, StoreError> {
            let changed = tx.execute(
                "UPDATE approvals SET state = 'revoked', decided_by = ?1, decided_at_ms = ?2,
                    args_nonce = NULL, args_sealed = NULL
             WHERE id = ?3 AND used = 0 AND state IN ('pending', 'approved')",
                params![by, super::now_ms(), id.0],
            )?;
            Ok(if changed == 1 {
                Some(approval_key(tx, id)?)
            } else {
                None
            })
        })?;
        if let Some((session, tool, digest)) = &key {
            self.broker.ring(session, tool, digest);
        }
        Ok(key.is_some())
    }

    fn watch_approval(&self, session: &str, tool: &str, args_digest: &str) -> super::ApprovalWatch {
        self.broker.subscribe(session, tool, args_digest)
    }

    async fn request_approval_showing(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
        arguments: &serde_json::Value,
        key: &[u8; 32],
    ) -> Result<ApprovalId, StoreError> {
        let (nonce, sealed) = super::seal_arguments(key, session, tool, args_digest, arguments)?;
        self.write_tx(|tx| {
            tx.execute(
                "INSERT INTO approvals (session, tool, args_digest, state, requested_at_ms, args_nonce, args_sealed)
                 VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6)",
                params![session, tool, args_digest, super::now_ms(), nonce, sealed],
            )?;
            Ok(ApprovalId(tx.last_insert_rowid()))
        })
    }

    async fn approval_arguments(
        &self,
        id: ApprovalId,
        key: &[u8; 32],
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let row: Option<(String, String, String, Option<Vec<u8>>, Option<Vec<u8>>)> = self
            .read()
            .query_row(rules::PENDING_APPROVAL_ARGUMENTS.lite, [id.0], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })
            .optional()?;
        Ok(match row {
            Some((session, tool, digest, Some(nonce), Some(sealed))) => {
                super::open_arguments(key, &session, &tool, &digest, &nonce, &sealed)
            }
            _ => None,
        })
    }
}

#[async_trait::async_trait]
impl LedgerStore for SqliteStore {
    async fn charge(
        &self,
        run_id: &str,
        connector: &str,
        brand: &str,
        day: &str,
        amount: u64,
        idempotency_key: &str,
    ) -> Result<bool, StoreError> {
        let signed = super::to_i64(amount)?;
        self.write_tx(|tx| {
            let inserted = tx
                .prepare_cached(INSERT_CHARGE)
                .map_err(StoreError::from)?
                .execute(params![
                    idempotency_key,
                    run_id,
                    connector,
                    brand,
                    day,
                    signed,
                    super::now_ms()
                ])?;
            if inserted == 1 {
                return Ok(true);
            }
            let same: bool = tx.query_row(
                rules::CHARGE_MATCHES_KEY.lite,
                params![idempotency_key, run_id, connector, brand, day, signed],
                |row| row.get(0),
            )?;
            if same {
                Ok(false)
            } else {
                Err(StoreError::IdempotencyConflict(idempotency_key.to_owned()))
            }
        })
    }

    async fn spent_in_run(&self, run_id: &str) -> Result<u64, StoreError> {
        let conn = self.read();
        let total: i64 = conn.query_row(rules::SPENT_IN_RUN.lite, [run_id], |row| row.get(0))?;
        super::to_u64(total)
    }

    async fn spent_on_day(
        &self,
        brand: &str,
        connector: &str,
        day: &str,
    ) -> Result<u64, StoreError> {
        let conn = self.read();
        let total: i64 =
            conn.query_row(rules::SPENT_ON_DAY.lite, [brand, connector, day], |row| {
                row.get(0)
            })?;
        super::to_u64(total)
    }

    async fn charges_in_run(&self, run_id: &str) -> Result<Vec<Charge>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(rules::CHARGES_IN_RUN.lite)?;
        let rows = stmt.query_map([run_id], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get::<_, i64>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (idempotency_key, run_id, connector, brand, day, amount) = row?;
            out.push(Charge {
                idempotency_key,
                run_id,
                connector,
                brand,
                day,
                amount: super::to_u64(amount)?,
            });
        }
        Ok(out)
    }

    async fn start_run(
        &self,
        run_id: &str,
        brand: &str,
        connector: &str,
        day: &str,
        per_run: u64,
        per_day: u64,
    ) -> Result<(), StartRunError> {
        if per_run == 0 || per_run > per_day {
            return Err(StartRunError::InvalidAllowance { per_run, per_day });
        }
        let (run_signed, day_signed) = (super::to_i64(per_run)?, super::to_i64(per_day)?);
        self.write_tx(|tx| {
            let exists: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM runs WHERE run_id = ?1)",
                    [run_id],
                    |row| row.get(0),
                )
                .map_err(StoreError::from)?;
            if exists {
                return Err(StoreError::RunExists(run_id.to_owned()).into());
            }
            // Ended runs at what they recorded, or their per-run figure if they
            // recorded nothing (as `capabilities::meter`); live runs at per-run.
            let committed: i64 = tx
                .query_row(rules::DAY_COMMITTED.lite, [brand, connector, day], |row| {
                    row.get(0)
                })
                .map_err(StoreError::from)?;
            super::day_allows(committed, per_run, per_day)?;
            tx.prepare_cached(START_RUN)
                .map_err(StoreError::from)?
                .execute(params![
                    run_id,
                    brand,
                    connector,
                    day,
                    run_signed,
                    day_signed,
                    super::now_ms()
                ])
                .map_err(StoreError::from)?;
            Ok(())
        })
    }

    async fn end_run(&self, run_id: &str) -> Result<(), StoreError> {
        self.write_tx(|tx| {
            let run: Option<(String, String, String, i64, bool)> = tx
                .query_row(
                    "SELECT connector, brand, day, reserved, ended = 1 FROM runs WHERE run_id = ?1",
                    [run_id],
                    |row| {
                        Ok((
                            row.get(0)?,
                            row.get(1)?,
                            row.get(2)?,
                            row.get(3)?,
                            row.get(4)?,
                        ))
                    },
                )
                .optional()?;
            let Some((connector, brand, day, open, ended)) = run else {
                return Err(StoreError::UnknownRun(run_id.to_owned()));
            };
            if !ended && open > 0 {
                // Holds no call settled: charged in full, once.
                tx.prepare_cached(INSERT_CHARGE)?.execute(params![
                    format!("{run_id}:end"),
                    run_id,
                    connector,
                    brand,
                    day,
                    open,
                    super::now_ms()
                ])?;
            }
            tx.prepare_cached(END_RUN)
                .map_err(StoreError::from)?
                .execute(params![super::now_ms(), run_id])?;
            Ok(())
        })
    }

    async fn reserve_in_run(
        &self,
        run_id: &str,
        amount: u64,
    ) -> Result<super::RunHold, StoreError> {
        let signed = super::to_i64(amount)?;
        self.write_tx(|tx| {
            let Some(left) = run_left_in(tx, run_id)? else {
                return Ok(super::RunHold::Ended);
            };
            if amount > left {
                return Ok(super::RunHold::Short(left));
            }
            tx.execute(rules::HOLD_IN_RUN.lite, params![run_id, signed])?;
            Ok(super::RunHold::Held)
        })
    }

    async fn run_left(&self, run_id: &str) -> Result<Option<u64>, StoreError> {
        let conn = self.read();
        run_left_in(&conn, run_id)
    }

    async fn settle_in_run(
        &self,
        run_id: &str,
        connector: &str,
        brand: &str,
        day: &str,
        reserved: u64,
        actual: u64,
        idempotency_key: &str,
    ) -> Result<Option<u64>, StoreError> {
        let held = super::to_i64(reserved)?;
        self.write_tx(|tx| {
            let done: Option<i64> = tx
                .query_row(rules::CHARGED_UNDER_KEY.lite, [idempotency_key], |row| {
                    row.get(0)
                })
                .optional()?;
            if let Some(done) = done {
                // A retry of a settlement already recorded.
                return Ok(Some(super::to_u64(done)?));
            }
            // What the run has beside this hold: read before the hold is
            // released, which would count it twice.
            let Some(left) = run_left_in(tx, run_id)? else {
                return Ok(None);
            };
            tx.execute(rules::RELEASE_HOLD.lite, params![run_id, held])?;
            let charged = super::settled_charge(reserved, actual, left);
            if charged > 0 {
                tx.prepare_cached(INSERT_CHARGE)?.execute(params![
                    idempotency_key,
                    run_id,
                    connector,
                    brand,
                    day,
                    super::to_i64(charged)?,
                    super::now_ms()
                ])?;
            }
            Ok(Some(charged))
        })
    }

    async fn end_live_runs(&self, at_ms: i64) -> Result<usize, StoreError> {
        self.write_tx(|tx| {
            let ended = tx.execute(
                "UPDATE runs SET ended = 1, ended_at_ms = ?1 WHERE ended = 0",
                params![at_ms],
            )?;
            Ok(ended)
        })
    }
}

/// What live run `run_id` has left: its per-run figure less what it
/// recorded and what is held; `None` if it ended or never started.
fn run_left_in(conn: &Connection, run_id: &str) -> Result<Option<u64>, StoreError> {
    let row: Option<(i64, i64, bool, i64)> = conn
        .query_row(
            "SELECT per_run, reserved, ended = 1,
                    (SELECT COALESCE(SUM(amount), 0) FROM charges WHERE run_id = ?1)
             FROM runs WHERE run_id = ?1",
            [run_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()?;
    match row {
        Some((per_run, reserved, false, spent)) => {
            Ok(Some(super::to_u64((per_run - reserved - spent).max(0))?))
        }
        _ => Ok(None),
    }
}

#[async_trait::async_trait]
impl ConnectionStore for SqliteStore {
    async fn put_connection(
        &self,
        brand: &str,
        connector: &str,
        secret: &str,
        key: &[u8; 32],
    ) -> Result<(), StoreError> {
        let (nonce, ciphertext) = super::sealed::seal(
            key,
            &super::sealed::connection_aad(brand, connector),
            secret.as_bytes(),
        )?;
        self.write_tx(|tx| {
            tx.execute(
                rules::PUT_CONNECTION.lite,
                params![brand, connector, nonce, ciphertext, super::now_ms()],
            )?;
            Ok(())
        })
    }

    async fn get_connection(
        &self,
        brand: &str,
        connector: &str,
        key: &[u8; 32],
    ) -> Result<Option<String>, StoreError> {
        let row: Option<(Vec<u8>, Vec<u8>, bool)> = {
            let conn = self.read();
            conn.query_row(rules::SEALED_CONNECTION.lite, [brand, connector], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .optional()?
        };
        let Some((nonce, ciphertext, disabled)) = row else {
            return Ok(None);
        };
        if disabled {
            return Ok(None);
        }
        super::sealed::open_connection(brand, connector, key, &nonce, &ciphertext).map(Some)
    }

    async fn disable_connection(&self, brand: &str, connector: &str) -> Result<bool, StoreError> {
        self.write_tx(|tx| {
            let changed = tx.execute(
                rules::DISABLE_CONNECTION.lite,
                params![super::now_ms(), brand, connector],
            )?;
            Ok(changed == 1)
        })
    }

    async fn share_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<(), StoreError> {
        self.write_tx(|tx| {
            tx.execute(
                rules::SHARE_CONNECTION.lite,
                params![owner_brand, connector, with_brand, super::now_ms()],
            )?;
            Ok(())
        })
    }

    async fn unshare_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<bool, StoreError> {
        self.write_tx(|tx| {
            let changed = tx.execute(
                rules::UNSHARE_CONNECTION.lite,
                params![owner_brand, connector, with_brand],
            )?;
            Ok(changed == 1)
        })
    }

    async fn shared_with(
        &self,
        with_brand: &str,
        connector: &str,
    ) -> Result<Vec<String>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(rules::SHARED_WITH.lite)?;
        let rows = stmt.query_map([with_brand, connector], |row| row.get::<_, String>(0))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

#[async_trait::async_trait]
impl ProfileStore for SqliteStore {
    async fn save_profile(
        &self,
        brand: &str,
        profile: &Profile,
        kind: ProfileKind,
        catalog: &Catalog,
    ) -> Result<(), SaveProfileError> {
        kind.validate(profile, catalog)?;
        let body =
            serde_json::to_string(profile).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.write_tx(|tx| {
            tx.execute(
                rules::SAVE_PROFILE.lite,
                params![brand, profile.name, kind.as_str(), body, super::now_ms()],
            )
            .map_err(StoreError::from)?;
            Ok(())
        })
    }

    async fn load_profile(
        &self,
        brand: &str,
        name: &str,
    ) -> Result<Option<SavedProfile>, StoreError> {
        let row: Option<(String, String)> = {
            let conn = self.read();
            conn.query_row(rules::LOAD_PROFILE.lite, [brand, name], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?
        };
        row.map(|(kind, body)| super::decode_profile(&kind, &body))
            .transpose()
    }

    async fn list_profiles(&self, brand: &str) -> Result<Vec<SavedProfile>, StoreError> {
        let rows: Vec<(String, String)> = {
            let conn = self.read();
            let mut stmt = conn.prepare_cached(rules::LIST_PROFILES.lite)?;
            let rows = stmt.query_map([brand], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        rows.iter()
            .map(|(kind, body)| super::decode_profile(kind, body))
            .collect()
    }

    async fn delete_profile(&self, brand: &str, name: &str) -> Result<bool, StoreError> {
        self.write_tx(|tx| {
            let changed = tx.execute(rules::DELETE_PROFILE.lite, [brand, name])?;
            Ok(changed == 1)
        })
    }
}

fn capability_request_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<super::CapabilityRequest> {
    let request: String = row.get(3)?;
    Ok(super::CapabilityRequest {
        id: row.get(0)?,
        session: row.get(1)?,
        brand: row.get(2)?,
        request: serde_json::from_str(&request).unwrap_or(serde_json::Value::Null),
        requested_at_ms: row.get(4)?,
        answer: row.get(5)?,
        answered_by: row.get(6)?,
        answered_at_ms: row.get(7)?,
    })
}

const CAPABILITY_COLUMNS: &str =
    "id, session, brand, request, requested_at_ms, answer, answered_by, answered_at_ms";

#[async_trait::async_trait]
impl super::CapabilityRequestStore for SqliteStore {
    async fn park_capability_request(
        &self,
        session: &str,
        brand: &str,
        request: &serde_json::Value,
    ) -> Result<i64, StoreError> {
        let text = request.to_string();
        self.write_tx(|tx| {
            tx.execute(
                "INSERT INTO capability_requests (session, brand, request, requested_at_ms) VALUES (?1, ?2, ?3, ?4)",
                params![session, brand, text, super::now_ms()],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    async fn capability_requests(
        &self,
        session: Option<&str>,
        pending_only: bool,
    ) -> Result<Vec<super::CapabilityRequest>, StoreError> {
        let conn = self.read();
        let sql = format!(
            "SELECT {CAPABILITY_COLUMNS} FROM capability_requests WHERE (?1 IS NULL OR session = ?1) AND (?2 = 0 OR answer IS NULL) ORDER BY id"
        );
        let mut statement = conn.prepare_cached(&sql)?;
        let rows = statement.query_map(params![session, pending_only], capability_request_of)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    async fn answer_capability_request(
        &self,
        id: i64,
        answer: &str,
        by: &str,
    ) -> Result<super::Answered, StoreError> {
        self.write_tx(|tx| {
            let found = tx
                .query_row(
                    &format!("SELECT {CAPABILITY_COLUMNS} FROM capability_requests WHERE id = ?1"),
                    [id],
                    capability_request_of,
                )
                .optional()?;
            let Some(mut found) = found else {
                return Ok(super::Answered::Unknown);
            };
            if found.answer.is_some() {
                return Ok(super::Answered::Already(found));
            }
            let at = super::now_ms();
            tx.execute(
                rules::ANSWER_CAPABILITY_REQUEST.lite,
                params![answer, by, at, id],
            )?;
            found.answer = Some(answer.to_string());
            found.answered_by = Some(by.to_string());
            found.answered_at_ms = Some(at);
            Ok(super::Answered::Now(found))
        })
    }
}

#[async_trait::async_trait]
impl ReviewStore for SqliteStore {
    async fn reviewed(
        &self,
        connector: &str,
        tool: &str,
    ) -> Result<Option<super::Reviewed>, StoreError> {
        let conn = self.read();
        let reviewed = conn
            .query_row(rules::REVIEWED.lite, [connector, tool], |row| {
                Ok(super::Reviewed {
                    digest: row.get(0)?,
                    effect: row.get(1)?,
                    facts: row.get(2)?,
                })
            })
            .optional()?;
        Ok(reviewed)
    }

    async fn approve_tool(
        &self,
        connector: &str,
        tool: &str,
        digest: &str,
        effect: Option<&str>,
        facts: Option<&str>,
        by: &str,
    ) -> Result<(), StoreError> {
        self.write_tx(|tx| {
            tx.execute(
                rules::APPROVE_TOOL.lite,
                params![connector, tool, digest, by, super::now_ms(), effect, facts],
            )?;
            Ok(())
        })
    }

    async fn reviewed_tools(&self, connector: &str) -> Result<Vec<String>, StoreError> {
        let conn = self.read();
        let mut statement = conn.prepare(rules::REVIEWED_TOOLS.lite)?;
        let tools = statement
            .query_map([connector], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(tools)
    }

    async fn pin_artifact(
        &self,
        reference: &str,
        digest: &str,
        by: &str,
    ) -> Result<String, StoreError> {
        self.write_tx(|tx| {
            tx.execute(
                rules::PIN_ARTIFACT.lite,
                params![reference, digest, by, super::now_ms()],
            )?;
            Ok(tx.query_row(rules::PINNED_ARTIFACT.lite, [reference], |row| row.get(0))?)
        })
    }

    async fn pinned_artifact(&self, reference: &str) -> Result<Option<String>, StoreError> {
        let conn = self.read();
        Ok(conn
            .query_row(rules::PINNED_ARTIFACT.lite, [reference], |row| row.get(0))
            .optional()?)
    }
}

const DEPLOYED_COLUMNS: &str =
    "name, settings, artifact, digest, revision, retired, changed_by, changed_at_ms";

fn deployed_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<super::StoredConnector> {
    Ok(super::StoredConnector {
        name: row.get(0)?,
        settings: row.get(1)?,
        artifact: row.get(2)?,
        digest: row.get(3)?,
        revision: row.get(4)?,
        retired: row.get(5)?,
        changed_by: row.get(6)?,
        changed_at_ms: row.get(7)?,
    })
}

#[async_trait::async_trait]
impl super::DeploymentStore for SqliteStore {
    async fn put_connector(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<super::StoredConnector, StoreError> {
        let stamp = super::now_ms();
        self.change_deployed(
            "deployed_connectors",
            name,
            rules::DEPLOY_CONNECTOR.lite,
            params![name, settings, artifact, digest, by, stamp],
        )?
        .ok_or_else(|| StoreError::Corrupt(format!("connector `{name}` vanished as it was stored")))
    }

    async fn retire_connector(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<super::StoredConnector>, StoreError> {
        let stamp = super::now_ms();
        self.change_deployed(
            "deployed_connectors",
            name,
            rules::RETIRE_CONNECTOR.lite,
            params![by, stamp, name],
        )
    }

    async fn stored_connectors(&self) -> Result<Vec<super::StoredConnector>, StoreError> {
        self.deployed_rows(&format!(
            "SELECT {DEPLOYED_COLUMNS} FROM deployed_connectors ORDER BY name"
        ))
    }

    async fn put_session_component(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<super::StoredConnector, StoreError> {
        let stamp = super::now_ms();
        self.change_deployed(
            "session_components",
            name,
            rules::PUT_SESSION_COMPONENT.lite,
            params![name, settings, artifact, digest, by, stamp],
        )?
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "session component `{name}` vanished as it was stored"
            ))
        })
    }

    async fn drop_session_component(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<super::StoredConnector>, StoreError> {
        let stamp = super::now_ms();
        self.change_deployed(
            "session_components",
            name,
            rules::DROP_SESSION_COMPONENT.lite,
            params![by, stamp, name],
        )
    }

    async fn session_components(&self) -> Result<Vec<super::StoredConnector>, StoreError> {
        self.deployed_rows(rules::SESSION_COMPONENTS.lite)
    }
}

impl SqliteStore {
    /// Runs `change` on row `name` of `table` (the deployed connectors or
    /// the session components); the row after, `None` if nothing changed.
    fn change_deployed(
        &self,
        table: &str,
        name: &str,
        change: &str,
        params: impl rusqlite::Params,
    ) -> Result<Option<super::StoredConnector>, StoreError> {
        self.write_tx(|tx| {
            if tx.execute(change, params)? == 0 {
                return Ok(None);
            }
            Ok(Some(tx.query_row(
                &format!("SELECT {DEPLOYED_COLUMNS} FROM {table} WHERE name = ?1"),
                [name],
                deployed_row,
            )?))
        })
    }

    /// The rows `sql` selects ([`DEPLOYED_COLUMNS`], in order).
    fn deployed_rows(&self, sql: &str) -> Result<Vec<super::StoredConnector>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt.query_map([], deployed_row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

#[async_trait::async_trait]
impl SessionStore for SqliteStore {
    fn host(&self) -> Option<String> {
        Some(self.host_id.clone())
    }

    async fn recover_interrupted(&self, at_ms: i64) -> Result<Recovered, StoreError> {
        let recovered = self.write_tx(|tx| -> Result<_, StoreError> {
            // A call is a (session, call_id) with a `requested` or `allowed`
            // event (session-level events share the call_id "session" and
            // have neither); it is open while none of its events ends it,
            // whatever order they were committed in, and it got as far as
            // its furthest state (not its last row: a row written late, once
            // the store took it, may follow the call's `result`). Read
            // before the `decided` rows below are written.
            let open: Vec<(
                String,
                String,
                String,
                Option<String>,
                String,
                Option<String>,
            )> = {
                let mut stmt = tx.prepare(&format!(
                    "WITH calls AS (SELECT session, call_id FROM trace WHERE call_id IS NOT NULL
                                    GROUP BY session, call_id
                                    HAVING SUM(state IN ('requested', 'allowed')) > 0
                                       AND SUM(state IN {ends}) = 0),
                          ranked AS (SELECT t.seq, t.session, t.brand, t.call_id, t.tool, t.state, t.rule,
                                            ROW_NUMBER() OVER (PARTITION BY t.session, t.call_id
                                                               ORDER BY {progress} DESC, t.seq DESC) AS n
                                     FROM trace t JOIN calls c ON t.session = c.session AND t.call_id = c.call_id)
                     SELECT session, brand, call_id, tool, state, rule FROM ranked WHERE n = 1 ORDER BY seq",
                    ends = super::CALL_ENDS,
                    progress = super::CALL_PROGRESS,
                ))?;
                let rows = stmt.query_map([], |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        row.get(5)?,
                    ))
                })?;
                rows.collect::<Result<Vec<_>, _>>()?
            };
            // Every approval that could still be used: its call died with
            // the process, so nobody may decide or spend it any more.
            let ended: Vec<super::EndedApproval> = {
                let mut stmt = tx.prepare(
                    "SELECT id, session, tool, state, decided_by, requested_at_ms FROM approvals
                     WHERE NOT used AND state IN ('pending', 'approved') ORDER BY id",
                )?;
                let rows = stmt.query_map([], |row| {
                    Ok(super::EndedApproval {
                        id: row.get(0)?,
                        session: row.get(1)?,
                        tool: row.get(2)?,
                        was: row.get(3)?,
                        decided_by: row.get(4)?,
                        requested_at_ms: row.get(5)?,
                    })
                })?;
                rows.collect::<Result<Vec<_>, _>>()?
            };
            tx.execute(
                "UPDATE approvals SET state = 'revoked', decided_by = ?1, decided_at_ms = ?2, args_nonce = NULL, args_sealed = NULL
                 WHERE NOT used AND state IN ('pending', 'approved')",
                params![RESTART_REVOKER, at_ms],
            )?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO trace (session, brand, call_id, tool, state, rule, detail, at_ms, host_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            if !ended.is_empty() {
                // The call that asked for each, for its `decided` row.
                let asked = {
                    let mut stmt = tx.prepare(
                        "SELECT brand, call_id, detail FROM trace
                         WHERE state = 'requested' AND rule = 'approval_requested'
                           AND session IN (SELECT session FROM approvals WHERE decided_at_ms = ?1 AND decided_by = ?2)",
                    )?;
                    let rows = stmt.query_map(params![at_ms, RESTART_REVOKER], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })?;
                    super::asked_by(rows.collect::<Result<Vec<_>, _>>()?)
                };
                for approval in &ended {
                    let Some((brand, call_id)) = asked.get(&approval.id) else {
                        continue;
                    };
                    insert.execute(params![
                        approval.session,
                        brand,
                        call_id,
                        approval.tool,
                        TraceState::Decided.as_str(),
                        "revoked",
                        approval.detail(RESTART_REVOKER, at_ms),
                        at_ms,
                        self.host_id
                    ])?;
                }
            }
            let mut calls_maybe_run = 0;
            for (session, brand, call_id, tool, last_state, last_rule) in &open {
                let (detail, may_have_run) = super::interrupted_detail(
                    "the host stopped before the call finished",
                    last_state,
                    last_rule.as_deref(),
                );
                calls_maybe_run += usize::from(may_have_run);
                insert.execute(params![
                    session,
                    brand,
                    call_id,
                    tool,
                    TraceState::Interrupted.as_str(),
                    None::<&str>,
                    detail.to_string(),
                    at_ms,
                    self.host_id
                ])?;
            }
            Ok(Recovered {
                approvals_revoked: ended.len(),
                calls_interrupted: open.len(),
                calls_maybe_run,
            })
        })?;
        self.broker.ring_all();
        Ok(recovered)
    }
}

#[async_trait::async_trait]
impl super::InventoryStore for SqliteStore {
    async fn stored_connections(&self) -> Result<Vec<super::StoredConnection>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(rules::ALL_CONNECTIONS.lite)?;
        let mut out: Vec<super::StoredConnection> = stmt
            .query_map([], |row| {
                Ok(super::StoredConnection {
                    brand: row.get(0)?,
                    connection: row.get(1)?,
                    disabled: row.get(2)?,
                    updated_at_ms: row.get(3)?,
                    shared_with: Vec::new(),
                })
            })?
            .collect::<Result<_, _>>()?;
        let mut stmt = conn.prepare_cached(rules::ALL_SHARES.lite)?;
        let shares = stmt.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?;
        for share in shares {
            let (owner, connection, with) = share?;
            if let Some(c) = out
                .iter_mut()
                .find(|c| c.brand == owner && c.connection == connection)
            {
                c.shared_with.push(with);
            }
        }
        Ok(out)
    }

    async fn all_profiles(&self) -> Result<Vec<(String, SavedProfile)>, StoreError> {
        let rows: Vec<(String, String, String)> = {
            let conn = self.read();
            let mut stmt = conn.prepare_cached(rules::ALL_PROFILES.lite)?;
            let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        rows.into_iter()
            .map(|(brand, kind, body)| Ok((brand, super::decode_profile(&kind, &body)?)))
            .collect()
    }

    async fn stored_reviews(&self) -> Result<Vec<super::StoredReview>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(rules::ALL_REVIEWS.lite)?;
        let rows = stmt.query_map([], |row| {
            Ok(super::StoredReview {
                connector: row.get(0)?,
                tool: row.get(1)?,
                digest: row.get(2)?,
                approved_by: row.get(3)?,
                approved_at_ms: row.get(4)?,
                effect: row.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    async fn all_pending(&self) -> Result<Vec<Approval>, StoreError> {
        let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE state = ?1 ORDER BY id");
        self.approvals_query(&sql, &"pending")
    }

    async fn last_executed(
        &self,
        brand: &str,
    ) -> Result<std::collections::BTreeMap<String, i64>, StoreError> {
        super::off_worker(|| {
            let conn = self.read();
            let mut stmt = conn.prepare_cached(rules::LAST_EXECUTED.lite)?;
            let rows = stmt.query_map([brand], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
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
