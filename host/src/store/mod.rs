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

pub mod broker;
mod postgres;
mod rules;
mod statements;
mod sealed;
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
pub use postgres::{DEFAULT_LEASE_SECS, LOST_HOST_REVOKER, PgOptions, PgStore, new_host_id};
pub use sqlite::SqliteStore;

/// What a trace row committed before its call goes on survives, on SQLite
/// (`[store] trace_durable_against`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
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

/// A state recorded for a tool call or a connector in the trace (D6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceState {
    Registered,
    Eligible,
    Offered,
    Requested,
    Allowed,
    Denied,
    Executed,
    Result,
    PermissionDenied,
    /// Appended when a host starts after one that stopped (killed, crashed,
    /// lost power) while this call was in flight: the call never reached a
    /// terminal state, and the trace says so rather than leaving it open.
    Interrupted,
    /// At a session's start: a tool the session is not given, with the rule
    /// that removed it (an operator switch by name, registration, or the
    /// role's ceiling); see [`crate::policy::removed`].
    Removed,
    /// A person's (or the timeout's) answer to a call's approval request:
    /// who decided, when, and how long the call waited.
    Decided,
    /// A connector added, upgraded or retired at runtime, by whom (the
    /// verified caller), with its artifact digests and what it revoked:
    /// recorded under no session (`tool` names the connector).
    Deployed,
    /// What the host holds changed through the admin API, and who changed
    /// it (`detail.actor`): a session opened or ended (under its id), a
    /// connection stored, disabled, shared or unshared, a tool reviewed,
    /// a profile saved or deleted (under the brand, or no brand for a
    /// review); `rule` names the change, `detail.before` and `detail.after`
    /// what it was and became, never a secret.
    Changed,
}

impl TraceState {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceState::Registered => "registered",
            TraceState::Eligible => "eligible",
            TraceState::Offered => "offered",
            TraceState::Requested => "requested",
            TraceState::Allowed => "allowed",
            TraceState::Denied => "denied",
            TraceState::Executed => "executed",
            TraceState::Result => "result",
            TraceState::PermissionDenied => "permission_denied",
            TraceState::Interrupted => "interrupted",
            TraceState::Removed => "removed",
            TraceState::Decided => "decided",
            TraceState::Deployed => "deployed",
            TraceState::Changed => "changed",
        }
    }

    /// The state stored as `name`, if any.
    pub fn parse(name: &str) -> Option<TraceState> {
        Some(match name {
            "registered" => TraceState::Registered,
            "eligible" => TraceState::Eligible,
            "offered" => TraceState::Offered,
            "requested" => TraceState::Requested,
            "allowed" => TraceState::Allowed,
            "denied" => TraceState::Denied,
            "executed" => TraceState::Executed,
            "result" => TraceState::Result,
            "permission_denied" => TraceState::PermissionDenied,
            "interrupted" => TraceState::Interrupted,
            "removed" => TraceState::Removed,
            "decided" => TraceState::Decided,
            "deployed" => TraceState::Deployed,
            "changed" => TraceState::Changed,
            _ => return None,
        })
    }
}

impl fmt::Display for TraceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whose events a trace query reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFilter<'a> {
    Session(&'a str),
    Brand(&'a str),
    /// Every row, whoever's: the audit export.
    All,
}

/// One recorded decision or step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    pub session: String,
    pub brand: String,
    pub call_id: Option<String>,
    pub tool: Option<String>,
    pub state: TraceState,
    /// The rule that decided (for `allowed`, `denied`, `permission_denied`).
    pub rule: Option<String>,
    pub detail: serde_json::Value,
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// Where it came from: the host and the OpenTelemetry span.
    #[serde(flatten)]
    pub origin: Origin,
}

/// Where a trace row came from, so an auditor can pivot from it to the
/// host's logs and to the request's spans in OpenTelemetry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The host that wrote the row. Each store writes its own id (the
    /// fleet's `hosts.host_id`, or a single host's id for this start), so
    /// this is filled when a row is read and ignored when one is written.
    pub host: Option<String>,
    /// The W3C trace id (32 hex digits) of the request the row belongs to:
    /// the call's exported span's, else the one the caller's `traceparent`
    /// named. `None` when neither was there.
    pub trace_id: Option<String>,
    /// The span (16 hex digits): the host's exported span for the call (or
    /// a person's wait), else the caller's span its `traceparent` named.
    pub span_id: Option<String>,
}

impl Origin {
    /// The trace and span a W3C `traceparent` header names, when it is
    /// well formed (version `00`, ids not all zeros); `None` otherwise.
    pub fn from_traceparent(value: &str) -> Option<Origin> {
        let mut parts = value.trim().split('-');
        let (version, trace, span, _flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                && s.bytes().any(|b| b != b'0')
        };
        (version == "00" && parts.next().is_none() && hex(trace, 32) && hex(span, 16)).then(|| {
            Origin {
                host: None,
                trace_id: Some(trace.to_string()),
                span_id: Some(span.to_string()),
            }
        })
    }
}

/// The id of one approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ApprovalId(pub i64);

impl fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where an approval stands. `used` is kept apart: an approved approval is
/// spent by exactly one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    Pending,
    Approved,
    Denied,
    /// Revoked with its session; never comes back.
    Revoked,
}

impl ApprovalState {
    fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Denied => "denied",
            ApprovalState::Revoked => "revoked",
        }
    }

    fn parse(name: &str) -> Option<ApprovalState> {
        Some(match name {
            "pending" => ApprovalState::Pending,
            "approved" => ApprovalState::Approved,
            "denied" => ApprovalState::Denied,
            "revoked" => ApprovalState::Revoked,
            _ => return None,
        })
    }
}

/// One approval request as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub id: ApprovalId,
    pub session: String,
    pub tool: String,
    pub args_digest: String,
    pub state: ApprovalState,
    pub used: bool,
    pub decided_by: Option<String>,
    /// Who decided, as structured fields (kind, subject, sub, issuer, via,
    /// role) when the decider gave them; `None` for a decision made before
    /// they were kept, or by the host itself.
    pub decided_actor: Option<serde_json::Value>,
    pub requested_at_ms: i64,
    /// When it was decided or revoked (milliseconds since the Unix epoch).
    pub decided_at_ms: Option<i64>,
}

/// Why an approval could not be decided or consumed. The variants map onto
/// the bounded denial reasons of D6 ("approval required", "approval denied").
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// Nothing was ever asked for this session, tool and arguments.
    #[error("approval required")]
    Required,
    /// Asked, not yet answered.
    #[error("approval pending")]
    Pending,
    /// A person said no.
    #[error("approval denied")]
    Denied,
    /// The session's approvals were revoked.
    #[error("approval revoked")]
    Revoked,
    /// The approval was already spent by an earlier call.
    #[error("approval already used")]
    AlreadyUsed,
    /// `decide` on an id that does not exist.
    #[error("unknown approval {0}")]
    Unknown(ApprovalId),
    /// `decide` on an approval that is no longer pending.
    #[error("approval {0} is no longer pending")]
    NotPending(ApprovalId),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A capability an agent asked its run owner for (seed 003: "Dynamic
/// requests went to a person, not an installer"). Asking grants nothing;
/// the answer is a person's words, returned to the agent as evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityRequest {
    pub id: i64,
    pub session: String,
    pub brand: String,
    /// What the agent wrote: goal, missing observation, proposed effect
    /// class, the safe alternative it tried.
    pub request: serde_json::Value,
    pub requested_at_ms: i64,
    pub answer: Option<String>,
    pub answered_by: Option<String>,
    pub answered_at_ms: Option<i64>,
}

/// What answering a capability request did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    Now(CapabilityRequest),
    Unknown,
    /// Someone answered it before.
    Already(CapabilityRequest),
}

/// Capability requests parked for run owners.
#[async_trait::async_trait]
pub trait CapabilityRequestStore: Send + Sync {
    /// Parks `request` of `session`; its id.
    async fn park_capability_request(
        &self,
        session: &str,
        brand: &str,
        request: &serde_json::Value,
    ) -> Result<i64, StoreError>;
    /// The requests of `session` (every session's when `None`), oldest
    /// first; only unanswered ones when `pending_only`.
    async fn capability_requests(
        &self,
        session: Option<&str>,
        pending_only: bool,
    ) -> Result<Vec<CapabilityRequest>, StoreError>;
    /// Records a person's `answer` to request `id`, once.
    async fn answer_capability_request(
        &self,
        id: i64,
        answer: &str,
        by: &str,
    ) -> Result<Answered, StoreError>;
}

/// One recorded charge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    pub idempotency_key: String,
    pub run_id: String,
    pub connector: String,
    pub brand: String,
    pub day: String,
    pub amount: u64,
}

/// Why a run may not start.
#[derive(Debug, thiserror::Error)]
pub enum StartRunError {
    /// Starting the run could spend past the day's allowance.
    #[error(
        "the day's allowance is exhausted: {committed} of {per_day} already spent or held by runs"
    )]
    DayExhausted { committed: u64, per_day: u64 },
    /// The allowance itself is not acceptable (per-run zero or above per-day).
    #[error(
        "invalid allowance: per-run {per_run} must be above zero and at most the per-day {per_day}"
    )]
    InvalidAllowance { per_run: u64, per_day: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
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
    + DeploymentStore
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
        + DeploymentStore
{
}

/// The trace of every decision (D6): appended durably before the call goes
/// on, read in pages.
#[async_trait::async_trait]
pub trait TraceStore: Send + Sync {
    /// Appends one event to the trace.
    async fn record(&self, event: &TraceEvent) -> Result<(), StoreError>;
    /// Appends events in order, all or none (one durable write for a call's
    /// steps that happen together).
    async fn record_all(&self, events: &[TraceEvent]) -> Result<(), StoreError> {
        for event in events {
            self.record(event).await?;
        }
        Ok(())
    }
    /// Trace transactions committed by this store so far (each one fsync):
    /// what tells a read's one commit from a write's two. 0 for a store
    /// that does not count them.
    fn trace_commits(&self) -> u64 {
        0
    }
    /// What this store's trace writer measures, for `/metrics`.
    fn writer_metrics(&self) -> Option<WriterMetrics> {
        None
    }
    /// Up to `limit` events matching `filter` recorded after sequence number
    /// `after` (0: from the start), in order, each with its sequence number:
    /// how a long trace is read in bounded pages.
    async fn trace_page(
        &self,
        filter: TraceFilter<'_>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError>;
    /// A session's events in the order they were recorded.
    async fn trace_for_session(&self, session: &str) -> Result<Vec<TraceEvent>, StoreError>;
    /// The last `limit` decisions on approvals (`decided` rows), of every
    /// session, newest first.
    async fn recent_decisions(&self, limit: usize) -> Result<Vec<(i64, TraceEvent)>, StoreError>;
    /// A session's last `limit` calls as requested (their `requested`
    /// rows), oldest first: the context a person deciding one reads.
    async fn recent_requests(
        &self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<TraceEvent>, StoreError>;
    /// A brand's events in the order they were recorded.
    async fn trace_for_brand(&self, brand: &str) -> Result<Vec<TraceEvent>, StoreError>;
}

/// Per-call approvals: parked, decided by a person, spent exactly once.
#[async_trait::async_trait]
pub trait ApprovalStore: Send + Sync {
    /// Parks a pending approval for one call (`args_digest` from [`args_digest`]).
    async fn request_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, StoreError>;
    /// Answers a pending approval. Anything not pending (answered, revoked) stays as it is.
    async fn decide(&self, id: ApprovalId, approved: bool, by: &str) -> Result<(), ApprovalError> {
        self.decide_as(id, approved, by, None).await
    }
    /// [`TraceStore::decide`], keeping who decided as structured fields
    /// (`actor`) beside the `by` text.
    async fn decide_as(
        &self,
        id: ApprovalId,
        approved: bool,
        by: &str,
        actor: Option<&serde_json::Value>,
    ) -> Result<(), ApprovalError>;
    /// Spends one approved, unused approval for exactly this session, tool and
    /// arguments. Atomic: two concurrent callers never both succeed.
    async fn consume_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, ApprovalError>;
    /// A session's approvals still waiting for a person, oldest first.
    async fn pending(&self, session: &str) -> Result<Vec<Approval>, StoreError>;
    /// One approval by id.
    async fn approval(&self, id: ApprovalId) -> Result<Option<Approval>, StoreError>;
    /// Revokes every unused approval of the session (pending or approved);
    /// returns how many. Revoked approvals can never be decided or consumed.
    async fn revoke_session_approvals(&self, session: &str) -> Result<usize, StoreError>;
    /// Revokes one approval if it is still unused (pending, or approved and
    /// not yet consumed), recording `by` as who withdrew it; `Ok(true)` if it
    /// was revoked now. A revoked approval never comes back.
    async fn revoke_approval(&self, id: ApprovalId, by: &str) -> Result<bool, StoreError>;
    /// Rings when an approval for this session, tool and arguments may have
    /// changed in this process (decided, revoked, the session's approvals
    /// revoked), so a waiting call reads the store at once instead of
    /// polling it. Subscribe before reading. A store that cannot tell
    /// returns [`ApprovalWatch::never`].
    fn watch_approval(&self, _session: &str, _tool: &str, _args_digest: &str) -> ApprovalWatch {
        ApprovalWatch::never()
    }
    /// [`ApprovalStore::request_approval`], keeping the exact arguments in
    /// the approval row, sealed with `key`, so the person deciding sees them
    /// whichever host answers; they are erased when the approval is decided,
    /// revoked or times out.
    async fn request_approval_showing(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
        arguments: &serde_json::Value,
        key: &[u8; 32],
    ) -> Result<ApprovalId, StoreError>;
    /// The arguments a pending approval was asked for, opened with `key`;
    /// `None` once decided or revoked, or if they were never kept (or do
    /// not open, or do not match the row's digest).
    async fn approval_arguments(
        &self,
        id: ApprovalId,
        key: &[u8; 32],
    ) -> Result<Option<serde_json::Value>, StoreError>;
}

/// The allowance ledger: runs against a per-day figure, idempotent charges.
#[async_trait::async_trait]
pub trait LedgerStore: Send + Sync {
    /// Records a charge once per `idempotency_key`: `Ok(true)` if recorded now,
    /// `Ok(false)` if this very charge was already recorded (a retry), and
    /// [`StoreError::IdempotencyConflict`] if the key was used for a different one.
    async fn charge(
        &self,
        run_id: &str,
        connector: &str,
        brand: &str,
        day: &str,
        amount: u64,
        idempotency_key: &str,
    ) -> Result<bool, StoreError>;
    /// What one run has recorded.
    async fn spent_in_run(&self, run_id: &str) -> Result<u64, StoreError>;
    /// What all runs of a brand recorded against one connector on one day.
    async fn spent_on_day(
        &self,
        brand: &str,
        connector: &str,
        day: &str,
    ) -> Result<u64, StoreError>;
    /// One run's charges in the order recorded.
    async fn charges_in_run(&self, run_id: &str) -> Result<Vec<Charge>, StoreError>;
    /// Starts a run, or refuses it if the day's figure could be exceeded:
    /// runs already ended that day count at what they recorded (or their whole
    /// per-run figure if they recorded nothing), live runs at their whole
    /// per-run figure. Checked and recorded in one exclusive transaction.
    async fn start_run(
        &self,
        run_id: &str,
        brand: &str,
        connector: &str,
        day: &str,
        per_run: u64,
        per_day: u64,
    ) -> Result<(), StartRunError>;
    /// Ends a run; from then on the day counts what it recorded. Its
    /// reservations still open (a call on any host that has not settled)
    /// are charged in full, once (`{run_id}:end`).
    async fn end_run(&self, run_id: &str) -> Result<(), StoreError>;
    /// Holds `amount` against run `run_id`'s allowance, atomically with
    /// every other host's holds and charges for the same run.
    async fn reserve_in_run(&self, run_id: &str, amount: u64) -> Result<RunHold, StoreError>;
    /// What run `run_id` may still reserve; `None` if it ended (or never
    /// started).
    async fn run_left(&self, run_id: &str) -> Result<Option<u64>, StoreError>;
    /// Releases a hold of `reserved` on run `run_id` and charges what
    /// `actual` costs within the run's allowance (at most `reserved` plus
    /// what is left), once per `idempotency_key`; what was charged, or
    /// `None` if the run ended first (which charged the hold in full).
    #[allow(clippy::too_many_arguments)]
    async fn settle_in_run(
        &self,
        run_id: &str,
        connector: &str,
        brand: &str,
        day: &str,
        reserved: u64,
        actual: u64,
        idempotency_key: &str,
    ) -> Result<Option<u64>, StoreError>;
    /// Ends every run still live: at start, a live run's session died with
    /// the host that ran it, and would otherwise hold its whole per-run
    /// figure against the day until the day ends. Each then counts at what
    /// it recorded, or its per-run figure if it recorded nothing. Returns
    /// how many were ended.
    async fn end_live_runs(&self, at_ms: i64) -> Result<usize, StoreError>;
}

/// Brand connections, sealed at rest, and the shares between brands (D4).
#[async_trait::async_trait]
pub trait ConnectionStore: Send + Sync {
    /// Stores (or replaces, re-enabling) a brand's credential for a connector,
    /// sealed with `key`.
    async fn put_connection(
        &self,
        brand: &str,
        connector: &str,
        secret: &str,
        key: &[u8; 32],
    ) -> Result<(), StoreError>;
    /// The credential, if stored and not disabled. A wrong key is an error.
    async fn get_connection(
        &self,
        brand: &str,
        connector: &str,
        key: &[u8; 32],
    ) -> Result<Option<String>, StoreError>;
    /// Disables a connection; returns whether one existed.
    async fn disable_connection(&self, brand: &str, connector: &str) -> Result<bool, StoreError>;

    /// Records that `owner_brand` (the account owner's brand) shares its
    /// stored connection for `connector` with `with_brand`. Idempotent. The
    /// share lends the stored connection only, never a host environment.
    async fn share_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<(), StoreError>;
    /// Withdraws a share; returns whether one existed. The next resolution
    /// no longer finds it.
    async fn unshare_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<bool, StoreError>;
    /// The brands that share their `connector` connection with `with_brand`,
    /// oldest share first (what resolution walks after the brand's own).
    async fn shared_with(
        &self,
        with_brand: &str,
        connector: &str,
    ) -> Result<Vec<String>, StoreError>;
}

/// Saved profiles, validated when saved (D7, D8).
#[async_trait::async_trait]
pub trait ProfileStore: Send + Sync {
    /// Validates `profile` by `kind`'s rules against `catalog` and stores it
    /// (replacing one of the same name). A refused profile stores nothing and
    /// comes back as [`SaveProfileError::Invalid`] with the rule's message.
    async fn save_profile(
        &self,
        brand: &str,
        profile: &Profile,
        kind: ProfileKind,
        catalog: &Catalog,
    ) -> Result<(), SaveProfileError>;
    /// A saved profile and the rules it was saved under.
    async fn load_profile(
        &self,
        brand: &str,
        name: &str,
    ) -> Result<Option<SavedProfile>, StoreError>;
    /// A brand's saved profiles, by name.
    async fn list_profiles(&self, brand: &str) -> Result<Vec<SavedProfile>, StoreError>;
    /// Deletes a saved profile; returns whether one existed.
    async fn delete_profile(&self, brand: &str, name: &str) -> Result<bool, StoreError>;
}

/// Operators' reviews of discovered tools (discovery produces no authority).
#[async_trait::async_trait]
pub trait ReviewStore: Send + Sync {
    /// What an operator last approved of `tool`, if anything.
    async fn reviewed(&self, connector: &str, tool: &str) -> Result<Option<Reviewed>, StoreError>;
    /// Records an operator's approval of `tool` as described by `digest`;
    /// for a remote MCP server's tool, with the effect the operator gave it
    /// (`read`, `write`, `billed`).
    async fn approve_tool(
        &self,
        connector: &str,
        tool: &str,
        digest: &str,
        effect: Option<&str>,
        facts: Option<&str>,
        by: &str,
    ) -> Result<(), StoreError>;
    /// Every tool of `connector` an operator reviewed.
    async fn reviewed_tools(&self, connector: &str) -> Result<Vec<String>, StoreError>;
    /// The digest an OCI artifact's tag (`oci://REGISTRY/REPO:TAG`) was
    /// first resolved to, recording `digest` when none was: every host of
    /// the store then runs the same bytes however the tag moves.
    async fn pin_artifact(
        &self,
        reference: &str,
        digest: &str,
        by: &str,
    ) -> Result<String, StoreError>;
    /// The digest recorded for `reference`, if one was.
    async fn pinned_artifact(&self, reference: &str) -> Result<Option<String>, StoreError>;
}

/// A connector added through the admin API (`PUT /v1/connectors/{name}`),
/// as the fleet's store holds it: every host serves the same artifact
/// digest with the same settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredConnector {
    pub name: String,
    /// Its settings as given: the fields of a TOML connector table, JSON.
    pub settings: String,
    /// The artifact as named (`oci://REGISTRY/REPO:TAG` or `…@sha256:…`).
    pub artifact: String,
    /// The manifest digest the name was resolved to when it was changed:
    /// what every host runs.
    pub digest: String,
    /// One more at each change (added, upgraded, retired).
    pub revision: i64,
    /// Retired: served by no host; its next call is refused.
    pub retired: bool,
    /// The verified caller who made the last change.
    pub changed_by: String,
    pub changed_at_ms: i64,
}

/// Connectors added, upgraded and retired at runtime (issue 33): the
/// configuration file stays the bootstrap, these are the fleet's.
#[async_trait::async_trait]
pub trait DeploymentStore: Send + Sync {
    /// Records `name` as served from now on with `settings` and the
    /// artifact `digest` (added, upgraded or brought back), and rings the
    /// other hosts; what is stored now.
    async fn put_connector(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<StoredConnector, StoreError>;
    /// Retires `name`, and rings the other hosts; `None` if no live
    /// connector by that name is stored.
    async fn retire_connector(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<StoredConnector>, StoreError>;
    /// Every connector stored, retired ones included, by name.
    async fn stored_connectors(&self) -> Result<Vec<StoredConnector>, StoreError>;
    /// Records `name` as a component an orchestrator may load for one
    /// session (issue 39): its settings, as a connector's, and the artifact
    /// digest an operator chose; what is stored now.
    async fn put_session_component(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<StoredConnector, StoreError>;
    /// Withdraws session component `name` (`retired`); `None` if none is live.
    async fn drop_session_component(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<StoredConnector>, StoreError>;
    /// Every session component stored, withdrawn ones included, by name.
    async fn session_components(&self) -> Result<Vec<StoredConnector>, StoreError>;
}

/// A review store with no review in it: what is known offline.
pub struct NoReviews;

#[async_trait::async_trait]
impl ReviewStore for NoReviews {
    async fn reviewed(&self, _: &str, _: &str) -> Result<Option<Reviewed>, StoreError> {
        Ok(None)
    }
    async fn approve_tool(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: Option<&str>,
        _: Option<&str>,
        _: &str,
    ) -> Result<(), StoreError> {
        Err(StoreError::Config("no store to record a review in".into()))
    }
    async fn reviewed_tools(&self, _: &str) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    async fn pin_artifact(&self, _: &str, digest: &str, _: &str) -> Result<String, StoreError> {
        Ok(digest.to_string())
    }
    async fn pinned_artifact(&self, _: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

/// An operator's approval of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    /// The digest of the tool as it was approved.
    pub digest: String,
    /// The effect given to a remote MCP server's tool; `None` for a
    /// component's, whose WIT says it.
    pub effect: Option<String>,
    /// What the review of a component's tool covered
    /// ([`crate::review::ReviewedFacts`], JSON); `None` for a remote tool
    /// or a review recorded before it was kept.
    pub facts: Option<String>,
}

/// A stored connection as the inventory lists it: where it is and whom it
/// serves, never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredConnection {
    pub brand: String,
    /// The connection key (`github`, `google`, ...).
    pub connection: String,
    /// Disabled through the admin API: it resolves for no one.
    pub disabled: bool,
    /// When it was last stored, replaced or disabled (milliseconds since the Unix epoch).
    pub updated_at_ms: i64,
    /// The brands it is shared with, oldest share first.
    pub shared_with: Vec<String>,
}

/// An operator's review of one tool, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredReview {
    pub connector: String,
    /// The tool's wire name (`github_read_file`).
    pub tool: String,
    /// The digest of the tool as it was approved.
    pub digest: String,
    /// The effect given to a remote MCP server's tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    pub approved_by: String,
    pub approved_at_ms: i64,
}

/// Everything of a kind the store holds, listed whole: what the audit of
/// dead authority reads (`crate::authority`). Read only; nothing secret.
#[async_trait::async_trait]
pub trait InventoryStore: Send + Sync {
    /// Every stored connection of every brand (disabled ones too), by
    /// brand and connection, with the brands each is shared with.
    async fn stored_connections(&self) -> Result<Vec<StoredConnection>, StoreError>;
    /// Every saved profile of every brand, as `(brand, profile)`, by brand and name.
    async fn all_profiles(&self) -> Result<Vec<(String, SavedProfile)>, StoreError>;
    /// Every tool review, by connector and tool.
    async fn stored_reviews(&self) -> Result<Vec<StoredReview>, StoreError>;
    /// Every approval still pending, whichever session asked, oldest first.
    async fn all_pending(&self) -> Result<Vec<Approval>, StoreError>;
    /// When `brand`'s last `executed` event of each tool was recorded, by
    /// the tool's trace name (`mcp__github__github_read_file`).
    async fn last_executed(
        &self,
        brand: &str,
    ) -> Result<std::collections::BTreeMap<String, i64>, StoreError>;
}

/// What holding an amount against a run's allowance did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunHold {
    Held,
    /// It does not fit: what the run has left.
    Short(u64),
    /// The run ended (or never started).
    Ended,
}

/// What a host leaves behind when it stops: recovery of the calls and
/// approvals of a host that stopped mid-call.
#[async_trait::async_trait]
pub trait SessionStore: Send + Sync {
    /// Run once by `serve` when it starts, before it takes any call, to close
    /// what a previous host left open when it was killed mid-call. In one
    /// transaction: every approval still `pending`, or approved and not yet
    /// used, is revoked by [`HOST_LOST`] with a `decided` row saying so (the
    /// call that waited for it was in the process that died, so deciding or
    /// spending it later would authorise nothing, or worse, a call it was
    /// not asked for), and every call that has no ending state (`result`,
    /// `denied`, `permission_denied`, `interrupted`), whatever order its
    /// rows were committed in, gets one `interrupted` event at `at_ms`,
    /// saying how far it got by its states (`may_have_run` once it reached
    /// `allowed`). Running it twice changes nothing the second time.
    async fn recover_interrupted(&self, at_ms: i64) -> Result<Recovered, StoreError>;

    /// At a clean stop, once the host has drained: gives up this host's
    /// lease, so no other host counts it as lost, and closes what it still
    /// holds as a recovery would (approvals ended by `host_shutdown`, calls
    /// still open `interrupted`); after it, nothing more of this host is
    /// recorded. `None` when there is no lease to give up (one host on its
    /// own file, whose next start closes what it left; or a host another
    /// already recovered).
    async fn release_lease(&self, _at_ms: i64) -> Result<Option<Recovered>, StoreError> {
        Ok(None)
    }

    /// The host this store speaks for: the id its trace rows carry (a
    /// fleet's `hosts.host_id`, or a single host's id for this start).
    fn host(&self) -> Option<String> {
        None
    }

    /// Whether this host may start an effect at this moment: its lease is
    /// held (checked in memory against the lease's deadline on this host's
    /// clock, with a margin) and it was not fenced. Always, for a store
    /// only this host uses.
    fn lease_held(&self) -> bool {
        true
    }

    /// Which identity of this host's the lease belongs to: bumped each time
    /// the host rejoins after another recovered it, so that what was opened
    /// under an earlier one (recovered then) does nothing more.
    fn lease_generation(&self) -> u64 {
        0
    }

    /// Changes made by other hosts that this host's caches depend on
    /// (connections, profiles, reviews, sessions), as they happen; `None`
    /// for a store only this host uses.
    fn invalidations(&self) -> Option<tokio::sync::broadcast::Receiver<Invalidation>> {
        None
    }

    /// Whether the store answers now (the readiness endpoint).
    async fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Records that this host serves session `id` (`view`: what the admin
    /// API shows of it, never its token), so any host can answer for it.
    async fn session_opened(
        &self,
        _id: &str,
        _brand: &str,
        _view: &serde_json::Value,
        _expires_at_ms: i64,
    ) -> Result<(), StoreError> {
        Ok(())
    }
    /// Records that the host serving session `id` ended it.
    async fn session_closed(&self, _id: &str) -> Result<(), StoreError> {
        Ok(())
    }
    /// A session as recorded, whichever host serves it.
    async fn shared_session(&self, _id: &str) -> Result<Option<SharedSession>, StoreError> {
        Ok(None)
    }
    /// Every session still served by a live host.
    async fn shared_sessions(&self) -> Result<Vec<SharedSession>, StoreError> {
        Ok(Vec::new())
    }
    /// Asks the host serving session `id` to end it (recorded, then rung);
    /// the row as it stands, `None` if no such session was recorded.
    async fn request_session_end(&self, _id: &str) -> Result<Option<SharedSession>, StoreError> {
        Ok(None)
    }

    /// Whether every host of the fleet may serve any session (the store
    /// keeps each one's record and changing state); `false` for a store
    /// only one host uses, whose sessions live in that host.
    fn shares_sessions(&self) -> bool {
        false
    }
    /// Keeps what any host needs to serve session `id`'s next call.
    async fn keep_session(&self, _id: &str, _record: &SessionRecord) -> Result<(), StoreError> {
        Ok(())
    }
    /// Session `id` as the fleet keeps it, if it was kept.
    async fn kept_session(&self, _id: &str) -> Result<Option<KeptSession>, StoreError> {
        Ok(None)
    }
    /// This host serves session `id` from now on (the host that served it
    /// before lets go when rung); `false` if it ended meanwhile.
    async fn take_up_session(&self, _id: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    /// [`crate::session::SharedState::take_effect`], in the store.
    async fn session_take_effect(&self, _id: &str, _max: Option<u32>) -> Result<bool, StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::take_call`], in the store.
    async fn session_take_call(&self, _id: &str, _max: u32) -> Result<bool, StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::end_delegation`], in the store.
    async fn session_end_delegation(&self, _id: &str) -> Result<bool, StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::count_refusals`], in the store.
    async fn session_count_refusals(
        &self,
        _id: &str,
        _keys: &[String],
    ) -> Result<Vec<u32>, StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::set_paused`], in the store (rung).
    async fn session_set_paused(&self, _id: &str, _paused: bool) -> Result<(), StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::withdraw`], in the store (rung).
    async fn session_withdraw(&self, _id: &str, _connector: &str) -> Result<(), StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
}

/// What any host of a fleet needs to serve a session's next call, kept
/// when it opens: never its token (a digest of it), and nothing that
/// changes (that is [`SharedStateNow`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// SHA-256 of its bearer token, hex.
    pub token_digest: String,
    /// The role as asked for (`person-chat`).
    pub role: String,
    pub profile: Option<String>,
    /// The policy input it was decided with (brand facts, profile or grant).
    pub input: crate::policy::SessionInput,
    /// What it was offered when it opened.
    pub opened: BTreeSet<String>,
    /// What it was not given at its start, with the rule's name.
    pub removed: BTreeMap<String, String>,
    /// The connectors it is served.
    pub connectors: Vec<String>,
    pub left_out: BTreeMap<String, String>,
    pub allowlist: Vec<String>,
    pub expires_at_ms: i64,
    /// The components loaded for it alone (`oci://…@sha256:…`), which the
    /// host taking it up pulls and verifies itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
}

/// A session as the fleet keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptSession {
    pub id: String,
    pub brand: String,
    /// The host serving it now.
    pub host_id: String,
    pub record: SessionRecord,
    pub state: SharedStateNow,
    /// Someone asked for it to end, or it was closed.
    pub ended: bool,
}

/// A session's changing state as the fleet's store holds it: what a host
/// learns when it takes the session up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedStateNow {
    pub paused: bool,
    pub withdrawn: BTreeSet<String>,
    pub effects: u32,
    pub delegation_ended: bool,
    /// Calls run so far (the session's `max_calls`).
    #[serde(default)]
    pub calls: u32,
}

/// A session as the database records it, for hosts that do not serve it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedSession {
    pub id: String,
    /// The host serving it (the only one holding its MCP endpoints).
    pub host_id: String,
    /// What the admin API shows of it.
    pub view: serde_json::Value,
    /// Someone asked for it to end.
    pub ended: bool,
    /// Its host ended it (or was lost).
    pub closed: bool,
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

/// What another host changed (see [`SessionStore::invalidations`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalidation {
    /// A connection stored, disabled, shared or unshared.
    Connections,
    /// A profile saved or deleted.
    Profiles,
    /// A tool review approved.
    Reviews,
    /// A connector added, upgraded or retired through the admin API.
    Connectors,
    /// A session ended or revoked by another host's admin API.
    Session(String),
    /// Anything: the listener reconnected and may have missed changes.
    All,
}

pub(crate) fn decode_profile(kind: &str, body: &str) -> Result<SavedProfile, StoreError> {
    let kind = ProfileKind::parse(kind)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown profile kind {kind:?}")))?;
    let profile = serde_json::from_str(body)
        .map_err(|e| StoreError::Corrupt(format!("stored profile: {e}")))?;
    Ok(SavedProfile { kind, profile })
}

/// What [`Store::recover_interrupted`] closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovered {
    /// Approvals that could still have been used (pending, or approved and
    /// not yet used), now revoked.
    pub approvals_revoked: usize,
    /// Calls that had not reached a terminal state, now marked `interrupted`.
    pub calls_interrupted: usize,
    /// Of those, the calls that were allowed (and may have reached their
    /// upstream) but recorded no result: their effect is unknown.
    pub calls_maybe_run: usize,
}

/// The rule that ends the approvals of a host that stopped without
/// draining (killed, or lost to the fleet): the call waiting for each one
/// went with its host, so none may be decided or spent any more. Their
/// `decided_by`, and what deciding one answers (`409`, naming it); beside
/// `host_shutdown`, which ends them at a clean stop.
pub const HOST_LOST: &str = "host_lost";

/// The `decided_by` of an approval revoked by [`Store::recover_interrupted`]
/// on a single host: its previous process was lost like any fleet host.
pub const RESTART_REVOKER: &str = HOST_LOST;

/// The rule a `decided_by` names, when the host (not a person) ended the
/// approval: `host_lost` (also under its older texts) or `host_shutdown`.
pub fn ended_by_rule(decided_by: Option<&str>) -> Option<&'static str> {
    match decided_by? {
        HOST_LOST | "host lost: caller gone" | "host restart: caller gone" => Some(HOST_LOST),
        "host_shutdown" => Some("host_shutdown"),
        _ => None,
    }
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

/// Which rules a profile is saved under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    /// A coworker or specialist: [`Profile::validate`] (limits and the five rules).
    Coworker,
    /// The goal agent: [`Profile::validate_goal_agent`].
    GoalAgent,
    /// The goal reviewer: [`Profile::validate_reviewer`].
    Reviewer,
}

impl ProfileKind {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileKind::Coworker => "coworker",
            ProfileKind::GoalAgent => "goal_agent",
            ProfileKind::Reviewer => "reviewer",
        }
    }

    /// The kind stored as `name`, if any.
    pub fn parse(name: &str) -> Option<ProfileKind> {
        Some(match name {
            "coworker" => ProfileKind::Coworker,
            "goal_agent" => ProfileKind::GoalAgent,
            "reviewer" => ProfileKind::Reviewer,
            _ => return None,
        })
    }

    /// Runs this kind's save rules.
    pub fn validate(self, profile: &Profile, catalog: &Catalog) -> Result<(), ProfileError> {
        match self {
            ProfileKind::Coworker => profile.validate(catalog),
            ProfileKind::GoalAgent => profile.validate_goal_agent(catalog),
            ProfileKind::Reviewer => profile.validate_reviewer(),
        }
    }
}

/// A saved profile and the rules it was saved under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedProfile {
    pub kind: ProfileKind,
    pub profile: Profile,
}

/// Why a profile was not saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveProfileError {
    /// A save rule refused it; the message names the rule. Nothing was stored.
    #[error(transparent)]
    Invalid(#[from] ProfileError),
    #[error(transparent)]
    Store(#[from] StoreError),
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
