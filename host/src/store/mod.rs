//! The host's single storage interface (DESIGN D7).
//!
//! Everything the host must remember across a restart goes through [`Store`]:
//! the trace of every decision (D6), per-call approvals, the allowance ledger
//! (the durable twin of the in-memory `capabilities::meter`), and brand
//! connections with their credentials sealed at rest and the shares between
//! brands (D4), and saved profiles, validated when saved (D8). Callers depend on
//! the trait, not on SQLite, so that a deployment that outgrows one machine
//! can put several hosts on one PostgreSQL database behind the same methods.
//!
//! [`SqliteStore`] is the embedded implementation: one file, WAL journal,
//! `synchronous=FULL`, and every ledger or approval change in one
//! transaction, so a host killed at any instant leaves either the whole
//! change or none of it.
//!
//! The traits are async (the PostgreSQL driver is): a call's path awaits
//! the store, and code that cannot await (the CLI, wasmtime host calls that
//! are not async, the session registry's sync paths) waits with [`block`].
//! Each backend keeps its schema as numbered `.sql` files (`sqlite/`,
//! `postgres/`), applied once each, in order.

mod approvals;
pub mod brand_limits;
pub mod broker;
mod capability_requests;
mod connections;
mod deployments;
mod inventory;
mod ledger;
mod open;
mod policies;
pub mod policy_counts;
mod postgres;
mod profiles;
mod reviews;
mod rules;
mod sealed;
mod sessions;
mod statements;
mod trace;
pub use sealed::{open_text, seal_text};
mod sqlite;
mod writer;

pub use broker::{ApprovalBroker, ApprovalWatch};

/// Every part of [`Store`], for code that calls a store's methods by name.
pub mod prelude {
    pub use super::{
        ApprovalStore, CapabilityRequestStore, ConnectionStore, InventoryStore, LedgerStore,
        ProfileStore, ReviewStore, SessionStore, Store, TraceStore,
    };
}
pub use approvals::*;
pub use capability_requests::*;
pub use connections::*;
pub use deployments::*;
pub use inventory::*;
pub use ledger::*;
pub use open::{Access, OpenError, StoreLocation, open};
pub use policies::*;
pub use postgres::{DEFAULT_LEASE_SECS, LOST_HOST_REVOKER, PgOptions, PgStore, new_host_id};
pub use profiles::*;
pub use reviews::*;
pub use sessions::*;
pub use sqlite::SqliteStore;
pub use trace::*;

/// What a trace row committed before its call goes on survives, on SQLite
/// (`[store] trace_durable_against`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Deserialize,
    serde::Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TraceDurability {
    /// Every trace commit is fsynced before the call goes on (DESIGN D6).
    #[default]
    PowerLoss,
    /// Trace commits reach the operating system, not the disk: the host's
    /// own crash loses nothing; a power loss or an operating system crash
    /// may lose the last rows (the database stays whole: SQLite's WAL
    /// with `synchronous=NORMAL`).
    ProcessCrash,
}

use crate::policy::{Catalog, Profile, ProfileError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Why a storage operation failed. Never a panic: a corrupt file, a locked
/// database or a value out of range all come back as one of these.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused (corrupt or non-database file, disk full, busy past the timeout, ...).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The trace writer's transaction failed (SQLite's refusal, shared by
    /// every batch of the group it refused).
    #[error("trace write failed: {0}")]
    Write(#[source] std::sync::Arc<rusqlite::Error>),
    /// The trace writer has stopped.
    #[error("the trace writer has stopped")]
    WriterStopped,
    /// The trace writer's thread could not start.
    #[error("cannot start the trace writer: {0}")]
    WriterStart(#[source] std::io::Error),
    /// The file was written by a newer host with a schema this one does not know.
    #[error("database schema version {found} is newer than this host's {supported}")]
    SchemaTooNew { found: i64, supported: i64 },
    /// A stored row does not have a shape this host wrote.
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// An amount does not fit the database's signed 64-bit integers.
    #[error("amount {0} is out of range")]
    OutOfRange(u64),
    /// The same idempotency key was used for a different charge.
    #[error("idempotency key {0:?} was already used for a different charge")]
    IdempotencyConflict(String),
    /// No run with this id was started.
    #[error("unknown run {0:?}")]
    UnknownRun(String),
    /// A run with this id was already started.
    #[error("run {0:?} already exists")]
    RunExists(String),
    /// A stored credential could not be opened: wrong key, or the row was tampered with.
    #[error(
        "stored credential for {brand}/{connector} could not be decrypted (wrong key or tampered)"
    )]
    Decrypt { brand: String, connector: String },
    /// The credential could not be sealed.
    #[error("credential could not be encrypted")]
    Encrypt,
    /// PostgreSQL refused or could not be reached (with its causes: the
    /// driver's own text leaves them out, e.g. why a TLS handshake failed).
    #[error("PostgreSQL: {}", with_causes(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// No pooled PostgreSQL connection could be had in time.
    #[error("PostgreSQL connection pool: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    /// The trace writer could not reach the database for a group of batches.
    #[error("trace write failed: {0}")]
    TraceWriter(#[source] std::sync::Arc<StoreError>),
    /// This host's lease expired and another host recovered its calls: it
    /// records nothing more, so nothing more reaches an upstream.
    #[error(
        "this host lost its lease and another host recovered its calls; it takes no more calls: restart it"
    )]
    Fenced,
    /// This host's lease ran out unrenewed (the database was out of reach
    /// for longer than the lease): it records nothing until a renewal holds it again.
    #[error(
        "this host's lease on the database lapsed; it records nothing until the lease is renewed"
    )]
    LeaseLapsed,
    /// The store's configuration cannot be used (the URL, TLS, the server's settings).
    #[error("{0}")]
    Config(String),
}

/// Everything the host stores (D7), as one object: each concern is its own
/// narrow trait below, so a consumer names only what it uses (the meter a
/// [`LedgerStore`], credential resolution a [`ConnectionStore`], ...).
/// Every method is one atomic unit: it either happens completely or not at
/// all. [`SqliteStore`] and [`PgStore`] implement every part.
pub trait Store:
    TraceStore
    + ApprovalStore
    + CapabilityRequestStore
    + LedgerStore
    + ConnectionStore
    + ProfileStore
    + ReviewStore
    + SessionStore
    + InventoryStore
    + brand_limits::BrandLimitStore
    + DeploymentStore
    + PolicyStore
    + policy_counts::PolicyCountStore
{
}

impl<T> Store for T where
    T: TraceStore
        + CapabilityRequestStore
        + ApprovalStore
        + LedgerStore
        + ConnectionStore
        + ProfileStore
        + ReviewStore
        + SessionStore
        + InventoryStore
        + brand_limits::BrandLimitStore
        + DeploymentStore
        + PolicyStore
        + policy_counts::PolicyCountStore
{
}

/// Associated data binding an approval's sealed arguments to its call.
pub(crate) fn arguments_aad(session: &str, tool: &str, args_digest: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for part in [session, tool, args_digest] {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(part.as_bytes());
    }
    out
}

/// Sealed arguments opened, if they open under `key` and match the digest
/// the approval is for.
pub(crate) fn open_arguments(
    key: &[u8; 32],
    session: &str,
    tool: &str,
    args_digest_of_row: &str,
    nonce: &[u8],
    sealed: &[u8],
) -> Option<serde_json::Value> {
    let plain = sealed::open(
        key,
        &arguments_aad(session, tool, args_digest_of_row),
        nonce,
        sealed,
    )?;
    let value: serde_json::Value = serde_json::from_slice(&plain).ok()?;
    (args_digest(&value) == args_digest_of_row).then_some(value)
}

/// Arguments sealed for an approval row: (nonce, ciphertext).
pub(crate) fn seal_arguments(
    key: &[u8; 32],
    session: &str,
    tool: &str,
    args_digest: &str,
    arguments: &serde_json::Value,
) -> Result<(Vec<u8>, Vec<u8>), StoreError> {
    let plain = serde_json::to_vec(arguments).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    sealed::seal(key, &arguments_aad(session, tool, args_digest), &plain)
}

/// Milliseconds since the Unix epoch, as every backend stamps its rows.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// An amount as the databases' signed 64-bit integers hold it.
pub(crate) fn to_i64(amount: u64) -> Result<i64, StoreError> {
    i64::try_from(amount).map_err(|_| StoreError::OutOfRange(amount))
}

/// A stored amount back; a negative one was never written by a host.
pub(crate) fn to_u64(value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt(format!("negative amount {value}")))
}

/// An error and every cause under it, joined with `: `.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let more = next.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = next.source();
    }
    text
}

/// How far a call got, by its states and never by the order its rows were
/// committed in (a row the store took late, after a database outage, can
/// follow the call's `result`): `executed` past `allowed` (both may have
/// reached the upstream) past `decided` past `requested`. An SQL
/// expression over the trace row `t`, the same in both backends.
pub(crate) const CALL_PROGRESS: &str = "CASE t.state WHEN 'executed' THEN 4 WHEN 'allowed' THEN 3 \
     WHEN 'decided' THEN 2 WHEN 'requested' THEN 1 ELSE 0 END";

/// The states that end a call: once one is written, nothing marks the call
/// `interrupted`.
pub(crate) const CALL_ENDS: &str = "('result', 'denied', 'permission_denied', 'interrupted')";

/// The `detail` of the `interrupted` row of a call whose furthest state was
/// `last_state`, and whether it may have run (`allowed` is written before
/// the effect, `executed` after it).
pub(crate) fn interrupted_detail(
    reason: &str,
    last_state: &str,
    last_rule: Option<&str>,
) -> (serde_json::Value, bool) {
    let may_have_run = matches!(last_state, "allowed" | "executed");
    (
        serde_json::json!({
            "reason": reason,
            "last_state": last_state,
            "last_rule": last_rule,
            "may_have_run": may_have_run,
        }),
        may_have_run,
    )
}

/// An approval a recovery or a clean stop ended before anyone used it.
#[derive(Debug, Clone)]
pub(crate) struct EndedApproval {
    pub id: i64,
    pub session: String,
    pub tool: String,
    /// `pending` or `approved` (by a person, not yet used).
    pub was: String,
    pub decided_by: Option<String>,
    pub requested_at_ms: i64,
}

impl EndedApproval {
    /// The `decided` row's detail: ended by the host under rule `by`
    /// (shown by `GET /v1/decisions` as outcome `revoked`, by `by`), and
    /// who had approved it, if a person had.
    pub(crate) fn detail(&self, by: &str, at_ms: i64) -> String {
        let mut detail = serde_json::json!({
            "approval": self.id,
            "actor": {"kind": "host", "subject": null, "sub": null, "issuer": null, "via": "host", "role": null},
            "by": by,
            "decided_at_ms": at_ms,
            "waited_ms": (at_ms - self.requested_at_ms).max(0),
            "was": self.was,
            "ran": false,
        });
        if self.was == "approved" {
            detail["approved_by"] = serde_json::json!(self.decided_by);
        }
        detail.to_string()
    }
}

/// The call that asked for each approval: from its `requested` rows with
/// rule `approval_requested` (`brand`, `call_id`, `detail`), the approval
/// id their detail names.
pub(crate) fn asked_by(
    rows: impl IntoIterator<Item = (String, Option<String>, String)>,
) -> std::collections::HashMap<i64, (String, Option<String>)> {
    rows.into_iter()
        .filter_map(|(brand, call_id, detail)| {
            let detail: serde_json::Value = serde_json::from_str(&detail).ok()?;
            Some((detail["approval"].as_i64()?, (brand, call_id)))
        })
        .collect()
}

/// Hex SHA-256 of the canonical JSON of `args`: object keys sorted
/// recursively, no whitespace. Two argument objects that differ only in key
/// order get the same digest, so an approval matches the call it was asked for.
pub fn args_digest(args: &serde_json::Value) -> String {
    hex::encode(Sha256::digest(canonical_args_text(args).as_bytes()))
}

/// The canonical JSON of `args` whose SHA-256 is [`args_digest`]: what a
/// person is shown is exactly what the approval is bound to.
pub fn canonical_args_text(args: &serde_json::Value) -> String {
    // Serialising a `Value` cannot fail (all keys are strings).
    serde_json::to_string(&canonicalize(args)).unwrap_or_default()
}

fn canonicalize(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut sorted = serde_json::Map::new();
            for key in keys {
                sorted.insert(key.clone(), canonicalize(&map[key]));
            }
            serde_json::Value::Object(sorted)
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(canonicalize).collect())
        }
        other => other.clone(),
    }
}

/// Waits for store work from code that cannot await it (the CLI, a
/// wasmtime host call that is not async, tests): the same work, with the
/// caller's thread blocked instead of suspended, and a tokio worker handed
/// on meanwhile as [`off_worker`] does. Async code awaits the store
/// instead.
pub fn block<F: std::future::Future>(work: F) -> F::Output {
    off_worker(|| futures_executor::block_on(work))
}

/// Runs store work that waits on the disk (a commit is an fsync) without
/// holding a tokio worker: on a multi-thread runtime the worker's queue moves
/// to another thread while `work` blocks (`block_in_place`, as wasmtime-wasi
/// does for its blocking calls), so other sessions' calls keep running.
/// Elsewhere (no runtime, a current-thread runtime) it runs inline.
pub(crate) fn off_worker<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::off_worker;
    use std::time::Duration;

    /// With one worker, work that blocks inside `off_worker` still lets the
    /// runtime's other tasks run: here the blocked work waits for a message
    /// only another task can send (inline, it would wait out its 10 s).
    #[test]
    fn blocking_store_work_leaves_the_worker_to_other_tasks() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let got = runtime.block_on(async {
            let (tx, rx) = std::sync::mpsc::channel::<u32>();
            let blocked = tokio::spawn(async move {
                off_worker(|| rx.recv_timeout(Duration::from_secs(10)).ok())
            });
            // Give the blocked task the worker first.
            tokio::time::sleep(Duration::from_millis(50)).await;
            tokio::spawn(async move { tx.send(7).unwrap() })
                .await
                .unwrap();
            blocked.await.unwrap()
        });
        assert_eq!(got, Some(7));
    }

    /// A current-thread runtime (and no runtime) runs the work inline, without panicking.
    #[test]
    fn elsewhere_the_work_runs_inline() {
        assert_eq!(off_worker(|| 1), 1);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(runtime.block_on(async { off_worker(|| 2) }), 2);
    }
}

/// What a trace writer measures for `/metrics`: how many calls' batches
/// each group commit carried, and how long each commit took (the fsync, or
/// the round trip to PostgreSQL). Both backends' writers feed one.
#[derive(Clone, Debug)]
pub struct WriterMetrics {
    pub group_size: prometheus_client::metrics::histogram::Histogram,
    pub commit_seconds: prometheus_client::metrics::histogram::Histogram,
    /// Times this host rejoined under a new identity after being recovered.
    pub rejoins: prometheus_client::metrics::counter::Counter,
    /// Hosts whose lease ran out that this host recovered.
    pub recovered: prometheus_client::metrics::counter::Counter,
}

impl Default for WriterMetrics {
    fn default() -> WriterMetrics {
        use prometheus_client::metrics::histogram::Histogram;
        WriterMetrics {
            group_size: Histogram::new([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0]),
            commit_seconds: Histogram::new([
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
            ]),
            rejoins: Default::default(),
            recovered: Default::default(),
        }
    }
}

impl WriterMetrics {
    /// This host rejoined the fleet after another recovered it.
    pub(crate) fn rejoined(&self) {
        self.rejoins.inc();
    }

    /// This host recovered `hosts` whose lease had run out.
    pub(crate) fn recovered_hosts(&self, hosts: usize) {
        self.recovered.inc_by(hosts as u64);
    }

    /// One group of `batches` committed in `took`.
    pub(crate) fn committed(&self, batches: usize, took: std::time::Duration) {
        self.group_size.observe(batches as f64);
        self.commit_seconds.observe(took.as_secs_f64());
    }
}
