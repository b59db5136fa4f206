//! Trace rows are written by one thread with its own connection, in groups.
//!
//! Every tool call writes its trace twice (its intent before the effect,
//! its outcome after), and each write must be durable before the call goes
//! on: with `synchronous=FULL` that is one fsync per write. Done inline,
//! each fsync held the store's connection lock on a tokio worker. Here a
//! caller hands its rows to the writer and waits (blocking or awaiting) for
//! the answer; the writer commits everything queued since its last commit
//! in one transaction, so concurrent calls share an fsync (group commit),
//! and no tokio worker ever waits on the disk. A caller still returns only
//! once its rows are durable. If a group's transaction fails, each batch is
//! retried alone, so one caller's refused rows never cost another's.
//!
//! The write-ahead log is copied into the database file (a checkpoint, with
//! its own fsync of the file) never inside a caller's commit: SQLite's
//! automatic checkpoint is off on the store's connections, and the writer
//! checkpoints after it has answered a group, once [`CHECKPOINT_EVERY`]
//! commits have passed (and when idle for [`CHECKPOINT_AT_LEAST_EVERY`], for
//! the store's other writes). Done between commits, the checkpoint copies
//! the whole log, so the next commit starts the log again from its
//! beginning: the log's file stays the size of [`CHECKPOINT_EVERY`] commits
//! and its blocks are rewritten, not grown. (A checkpoint on a thread of its
//! own, beside the commits, measured slower under load; likely because a
//! passive checkpoint while the writer appends leaves the newest frames
//! uncovered, and SQLite starts the log again only once all are copied.)
//!
//! A caller that finds no other write in flight and the writer idle commits
//! its rows itself, on its own thread, with the writer's connection: a
//! client that calls one tool at a time (and leaves the host idle between
//! calls, as every real client does) would otherwise pay two thread wake-ups
//! per write (the writer's, then the caller's task's) for a group of one.
//! The fsync then holds that one tokio worker for its length, never while
//! another write is waiting: as soon as two are in flight, the writer groups
//! them as before.

use super::{StoreError, TraceEvent};
use rusqlite::{Connection, TransactionBehavior, params};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

/// Most batches committed in one transaction.
const MAX_GROUP: usize = 512;

/// Commits between checkpoints; SQLite's own automatic checkpoint (1000
/// pages) comes after a few hundred trace commits.
const CHECKPOINT_EVERY: u64 = 200;

/// An idle writer checkpoints this long after its last group.
const CHECKPOINT_AT_LEAST_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// One trace row, serialised by the caller (so a value that cannot be
/// serialised fails its own caller, never the group).
struct Row {
    session: String,
    brand: String,
    call_id: Option<String>,
    tool: Option<String>,
    state: &'static str,
    rule: Option<String>,
    detail: String,
    at_ms: i64,
    trace_id: Option<String>,
    span_id: Option<String>,
}

/// Where a batch's outcome goes.
struct Reply(tokio::sync::oneshot::Sender<Result<(), std::sync::Arc<rusqlite::Error>>>);

impl Reply {
    fn send(self, outcome: Result<(), std::sync::Arc<rusqlite::Error>>) {
        // A caller that went away does not need its answer.
        drop(self.0.send(outcome));
    }
}

struct Batch {
    rows: Vec<Row>,
    reply: Reply,
}

/// What the writer thread and an inline caller share: the connection (one
/// committer at a time), the commits counted, and the writes in flight.
struct Shared {
    conn: parking_lot::Mutex<Connection>,
    host: String,
    commits: AtomicU64,
    /// Callers between handing their rows over and hearing the outcome.
    in_flight: AtomicUsize,
    metrics: super::WriterMetrics,
    /// Checkpoints made (tests read it).
    checkpoints: AtomicU64,
    /// The thread that made the last commit (tests read it).
    #[cfg(test)]
    last_committer: parking_lot::Mutex<Option<std::thread::ThreadId>>,
}

impl Shared {
    /// Commits `batches` on `conn` (held by the caller), counted.
    fn commit<'a>(
        &self,
        conn: &mut Connection,
        batches: impl Iterator<Item = &'a Vec<Row>>,
    ) -> Result<(), std::sync::Arc<rusqlite::Error>> {
        let outcome = commit(conn, &self.host, batches);
        if outcome.is_ok() {
            self.commits.fetch_add(1, Ordering::SeqCst);
        }
        #[cfg(test)]
        {
            *self.last_committer.lock() = Some(std::thread::current().id());
        }
        outcome
    }

    /// Copies the log into the database file without waiting for anyone; a
    /// checkpoint that cannot finish (a reader holding the log) is tried
    /// again at the next turn.
    fn checkpoint(&self, conn: &Connection) {
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            Ok(()) => {
                self.checkpoints.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => tracing::debug!(error = %e, "the trace's checkpoint is tried again later"),
        }
    }
}

/// One caller's write counted in flight until it is answered or dropped.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What the writer thread is sent: a caller's rows, or (after
/// [`CHECKPOINT_EVERY`] commits made inline) a turn to checkpoint.
enum Job {
    Batch(Batch),
    Checkpoint,
}

/// The handle to the writer thread; dropping it lets the thread finish
/// what is queued and waits for it.
pub struct TraceWriter {
    queue: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    /// Whether this writer checkpoints the log (see the module's doc).
    checkpoints: bool,
    /// Commits when the thread was last asked to checkpoint.
    checkpoint_asked_at: AtomicU64,
}

impl TraceWriter {
    /// Starts the writer on `conn` (a connection of its own to the store's file).
    /// Each row it writes names `host`, this host's id. With `checkpoints`,
    /// it also checkpoints the log between groups (see the module's doc).
    pub fn start(
        conn: Connection,
        host: String,
        checkpoints: bool,
    ) -> Result<TraceWriter, StoreError> {
        let (queue, jobs) = mpsc::channel();
        let shared = Arc::new(Shared {
            conn: parking_lot::Mutex::new(conn),
            host,
            commits: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            metrics: super::WriterMetrics::default(),
            checkpoints: AtomicU64::new(0),
            #[cfg(test)]
            last_committer: parking_lot::Mutex::new(None),
        });
        let writer = shared.clone();
        let thread = std::thread::Builder::new()
            .name("scout-trace-writer".into())
            .spawn(move || write_loop(&writer, jobs, checkpoints))
            .map_err(StoreError::WriterStart)?;
        Ok(TraceWriter {
            queue: Some(queue),
            thread: Some(thread),
            shared,
            checkpoints,
            checkpoint_asked_at: AtomicU64::new(0),
        })
    }

    /// Group sizes and commit durations, for `/metrics`.
    pub(crate) fn metrics(&self) -> super::WriterMetrics {
        self.shared.metrics.clone()
    }

    /// Transactions committed so far (each one fsync).
    pub(crate) fn commits(&self) -> u64 {
        self.shared.commits.load(Ordering::SeqCst)
    }

    /// Writes `events` in order, all or none, and returns once they are
    /// durable. Alone (no other write in flight, the writer idle), the
    /// caller commits them itself; else the writer groups them with the
    /// others' and nothing blocks while the disk works.
    pub async fn write(&self, events: &[TraceEvent]) -> Result<(), StoreError> {
        let rows = rows(events)?;
        let alone = self.shared.in_flight.fetch_add(1, Ordering::SeqCst) == 0;
        let _in_flight = InFlight(&self.shared.in_flight);
        if alone && let Some(mut conn) = self.shared.conn.try_lock() {
            let started = std::time::Instant::now();
            let outcome = self.shared.commit(&mut conn, std::iter::once(&rows));
            drop(conn);
            if outcome.is_ok() {
                self.shared.metrics.committed(1, started.elapsed());
                self.checkpoint_if_due();
            }
            return outcome.map_err(StoreError::Write);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let queue = self.queue.as_ref().ok_or_else(gone)?;
        queue
            .send(Job::Batch(Batch {
                rows,
                reply: Reply(tx),
            }))
            .map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?.map_err(StoreError::Write)
    }

    /// After [`CHECKPOINT_EVERY`] commits made inline, the writer thread
    /// (idle, since this caller was alone) is asked to checkpoint once.
    fn checkpoint_if_due(&self) {
        if !self.checkpoints {
            return;
        }
        let done = self.shared.commits.load(Ordering::SeqCst);
        let asked = self.checkpoint_asked_at.load(Ordering::SeqCst);
        if done.saturating_sub(asked) >= CHECKPOINT_EVERY
            && self
                .checkpoint_asked_at
                .compare_exchange(asked, done, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            && let Some(queue) = &self.queue
        {
            // A writer that stopped has nothing left to checkpoint.
            drop(queue.send(Job::Checkpoint));
        }
    }
}

/// `events` as rows, serialised here (so a value that cannot be serialised
/// fails its own caller, never a group).
fn rows(events: &[TraceEvent]) -> Result<Vec<Row>, StoreError> {
    let mut rows = Vec::with_capacity(events.len());
    for event in events {
        rows.push(Row {
            session: event.session.clone(),
            brand: event.brand.clone(),
            call_id: event.call_id.clone(),
            tool: event.tool.clone(),
            state: event.state.as_str(),
            rule: event.rule.clone(),
            detail: serde_json::to_string(&event.detail)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?,
            at_ms: event.at_ms,
            trace_id: event.origin.trace_id.clone(),
            span_id: event.origin.span_id.clone(),
        });
    }
    Ok(rows)
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        // Closing the queue ends the loop once it is empty.
        drop(self.queue.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn gone() -> StoreError {
    StoreError::WriterStopped
}

fn write_loop(shared: &Shared, jobs: mpsc::Receiver<Job>, checkpoints: bool) {
    let mut checkpointed_at = 0;
    loop {
        let first = match jobs.recv_timeout(CHECKPOINT_AT_LEAST_EVERY) {
            Ok(Job::Batch(first)) => first,
            Ok(Job::Checkpoint) | Err(mpsc::RecvTimeoutError::Timeout) => {
                if checkpoints {
                    shared.checkpoint(&shared.conn.lock());
                    checkpointed_at = shared.commits.load(Ordering::SeqCst);
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(Job::Batch(batch)) => group.push(batch),
                // The checkpoint below comes soon enough.
                Ok(Job::Checkpoint) => {}
                Err(_) => break,
            }
        }
        let mut conn = shared.conn.lock();
        let started = std::time::Instant::now();
        match shared.commit(&mut conn, group.iter().map(|b| &b.rows)) {
            Ok(()) => {
                shared.metrics.committed(group.len(), started.elapsed());
                group.into_iter().for_each(|b| b.reply.send(Ok(())))
            }
            // One batch may be what failed (a constraint, a trigger): the
            // others are retried alone and keep their own outcome.
            Err(e) if group.len() == 1 => {
                group.into_iter().for_each(|b| b.reply.send(Err(e.clone())))
            }
            Err(_) => {
                for batch in group {
                    let outcome = shared.commit(&mut conn, std::iter::once(&batch.rows));
                    batch.reply.send(outcome);
                }
            }
        }
        // The group is answered; the next one waits for this instead.
        let done = shared.commits.load(Ordering::SeqCst);
        if checkpoints && done - checkpointed_at >= CHECKPOINT_EVERY {
            shared.checkpoint(&conn);
            checkpointed_at = done;
        }
    }
}

fn commit<'a>(
    conn: &mut Connection,
    host: &str,
    batches: impl Iterator<Item = &'a Vec<Row>>,
) -> Result<(), std::sync::Arc<rusqlite::Error>> {
    let run = |conn: &mut Connection| -> rusqlite::Result<()> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO trace (session, brand, call_id, tool, state, rule, detail, at_ms, host_id, trace_id, span_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?;
            for row in batches.flat_map(|rows| rows.iter()) {
                insert.execute(params![
                    row.session,
                    row.brand,
                    row.call_id,
                    row.tool,
                    row.state,
                    row.rule,
                    row.detail,
                    row.at_ms,
                    host,
                    row.trace_id,
                    row.span_id
                ])?;
            }
        }
        tx.commit()
    };
    run(conn).map_err(std::sync::Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Origin, TraceState};

    fn writer(dir: &std::path::Path) -> TraceWriter {
        let path = dir.join("trace.db");
        // Creates the schema.
        drop(crate::store::sqlite::SqliteStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        TraceWriter::start(conn, "host-test".into(), true).unwrap()
    }

    fn event(n: usize) -> TraceEvent {
        TraceEvent {
            session: "s-1".into(),
            brand: "acme".into(),
            call_id: Some(format!("c-{n}")),
            tool: Some("github_read_file".into()),
            state: TraceState::Requested,
            rule: None,
            detail: serde_json::json!({ "n": n }),
            at_ms: 1,
            origin: Origin::default(),
        }
    }

    fn rows_written(writer: &TraceWriter) -> i64 {
        writer
            .shared
            .conn
            .lock()
            .query_row("SELECT count(*) FROM trace", [], |r| r.get(0))
            .unwrap()
    }

    fn last_committer(writer: &TraceWriter) -> std::thread::ThreadId {
        writer
            .shared
            .last_committer
            .lock()
            .expect("a commit was made")
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_alone_is_committed_by_its_caller_and_durable_when_it_returns() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer(dir.path());
        writer.write(&[event(1), event(2)]).await.unwrap();
        assert_eq!(rows_written(&writer), 2);
        assert_eq!(writer.commits(), 1);
        assert_eq!(last_committer(&writer), std::thread::current().id());
        assert_eq!(writer.shared.in_flight.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_beside_another_in_flight_goes_to_the_writer_thread() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer(dir.path());
        // Another caller's write between handing its rows over and its answer.
        writer.shared.in_flight.fetch_add(1, Ordering::SeqCst);
        writer.write(&[event(1)]).await.unwrap();
        assert_eq!(rows_written(&writer), 1);
        assert_ne!(last_committer(&writer), std::thread::current().id());
        writer.shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        // Alone again: its caller commits.
        writer.write(&[event(2)]).await.unwrap();
        assert_eq!(last_committer(&writer), std::thread::current().id());
        assert_eq!(rows_written(&writer), 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_while_the_connection_is_busy_waits_for_the_writer_and_is_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let writer = std::sync::Arc::new(writer(dir.path()));
        let held = writer.shared.conn.lock();
        let writing = {
            let writer = writer.clone();
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap()
                    .block_on(writer.write(&[event(1)]))
            })
        };
        // The write cannot finish while the connection is held.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!writing.is_finished());
        drop(held);
        writing.join().unwrap().unwrap();
        assert_eq!(rows_written(&writer), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn commits_made_by_callers_still_get_the_logs_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer(dir.path());
        for n in 0..CHECKPOINT_EVERY as usize {
            writer.write(&[event(n)]).await.unwrap();
        }
        assert_eq!(last_committer(&writer), std::thread::current().id());
        // Asked once the count is reached; the writer thread does it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while writer.shared.checkpoints.load(Ordering::SeqCst) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "no checkpoint was made"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_refused_write_fails_its_caller_alone_or_grouped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.db");
        drop(crate::store::sqlite::SqliteStore::open(&path).unwrap());
        let read_only =
            Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let writer = TraceWriter::start(read_only, "host-test".into(), false).unwrap();
        assert!(matches!(
            writer.write(&[event(1)]).await,
            Err(StoreError::Write(_))
        ));
        writer.shared.in_flight.fetch_add(1, Ordering::SeqCst);
        assert!(matches!(
            writer.write(&[event(2)]).await,
            Err(StoreError::Write(_))
        ));
        assert_eq!(writer.commits(), 0);
    }
}
