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

use super::{StoreError, TraceEvent};
use rusqlite::{Connection, TransactionBehavior, params};
use std::sync::mpsc;
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

/// The handle to the writer thread; dropping it lets the thread finish
/// what is queued and waits for it.
pub struct TraceWriter {
    queue: Option<mpsc::Sender<Batch>>,
    thread: Option<JoinHandle<()>>,
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
    metrics: super::WriterMetrics,
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
        let (queue, batches) = mpsc::channel();
        let commits = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = commits.clone();
        let metrics = super::WriterMetrics::default();
        let measured = metrics.clone();
        let thread = std::thread::Builder::new()
            .name("scout-trace-writer".into())
            .spawn(move || write_loop(conn, &host, batches, &counted, &measured, checkpoints))
            .map_err(StoreError::WriterStart)?;
        Ok(TraceWriter {
            queue: Some(queue),
            thread: Some(thread),
            commits,
            metrics,
        })
    }

    /// Group sizes and commit durations, for `/metrics`.
    pub(crate) fn metrics(&self) -> super::WriterMetrics {
        self.metrics.clone()
    }

    /// Transactions committed so far (each one fsync).
    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Writes `events` in order, all or none, and returns once they are
    /// durable; nothing blocks while the disk works.
    pub async fn write(&self, events: &[TraceEvent]) -> Result<(), StoreError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.enqueue(events, Reply(tx))?;
        rx.await.map_err(|_| gone())?.map_err(StoreError::Write)
    }

    fn enqueue(&self, events: &[TraceEvent], reply: Reply) -> Result<(), StoreError> {
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
        let queue = self.queue.as_ref().ok_or_else(gone)?;
        queue.send(Batch { rows, reply }).map_err(|_| gone())
    }
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

/// Copies the log into the database file without waiting for anyone; a
/// checkpoint that cannot finish (a reader holding the log) is tried again
/// at the next turn.
fn checkpoint(conn: &Connection) {
    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::debug!(error = %e, "the trace's checkpoint is tried again later");
    }
}

fn gone() -> StoreError {
    StoreError::WriterStopped
}

fn write_loop(
    mut conn: Connection,
    host: &str,
    batches: mpsc::Receiver<Batch>,
    commits: &std::sync::atomic::AtomicU64,
    metrics: &super::WriterMetrics,
    checkpoints: bool,
) {
    let counted = |outcome: Result<(), std::sync::Arc<rusqlite::Error>>| {
        if outcome.is_ok() {
            commits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        outcome
    };
    let mut checkpointed_at = 0;
    loop {
        let first = match batches.recv_timeout(CHECKPOINT_AT_LEAST_EVERY) {
            Ok(first) => first,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if checkpoints {
                    checkpoint(&conn);
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match batches.try_recv() {
                Ok(batch) => group.push(batch),
                Err(_) => break,
            }
        }
        let started = std::time::Instant::now();
        match counted(commit(&mut conn, host, group.iter().map(|b| &b.rows))) {
            Ok(()) => {
                metrics.committed(group.len(), started.elapsed());
                group.into_iter().for_each(|b| b.reply.send(Ok(())))
            }
            // One batch may be what failed (a constraint, a trigger): the
            // others are retried alone and keep their own outcome.
            Err(e) if group.len() == 1 => {
                group.into_iter().for_each(|b| b.reply.send(Err(e.clone())))
            }
            Err(_) => {
                for batch in group {
                    let outcome = counted(commit(&mut conn, host, std::iter::once(&batch.rows)));
                    batch.reply.send(outcome);
                }
            }
        }
        // The group is answered; the next one waits for this instead.
        let done = commits.load(std::sync::atomic::Ordering::SeqCst);
        if checkpoints && done - checkpointed_at >= CHECKPOINT_EVERY {
            checkpoint(&conn);
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
