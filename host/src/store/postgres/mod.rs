//! [`PgStore`]: several hosts on one PostgreSQL database.
//!
//! The same traits as [`super::SqliteStore`], with what one file never
//! needed: every host holds a lease on the database clock; the trace is
//! written only while that lease is held (the fence), so a host the others
//! declared lost can no longer record the `allowed` that precedes an
//! effect; a sweeper on every host recovers the approvals, calls and runs of
//! a lost host and leaves live hosts' alone; and LISTEN/NOTIFY rings the
//! approvals broker and drops caches on every host when one host changes
//! what they depend on.
//!
//! The traits are async. The pool and the connection tasks live on a small
//! runtime of the store's own, and each statement runs there: a caller on
//! any runtime awaits it without holding its own worker, a statement sent
//! finishes even if its caller stops waiting, and code that cannot await
//! waits through [`super::block`].

mod approvals;
mod brand_limits;
mod capability_requests;
mod connections;
mod deployments;
mod inventory;
mod lease;
mod ledger;
mod notify;
mod policies;
mod policy_counts;
mod profiles;
mod reviews;
mod sessions;
mod trace;

use lease::{lease_loop, recover_lost, renew};
use notify::{Notice, listen_loop, notify};
use trace::write_loop;

use super::statements;
use super::{
    Approval, ApprovalError, ApprovalId, ApprovalState, ApprovalStore, ApprovalWatch, Charge,
    ConnectionStore, Invalidation, LedgerStore, ProfileKind, ProfileStore, Recovered, ReviewStore,
    SaveProfileError, SavedProfile, SessionStore, StartRunError, StoreError, TraceEvent,
    TraceFilter, TraceState, TraceStore,
};
use crate::policy::{Catalog, Profile};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use futures_util::StreamExt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{AsyncMessage, Client, Config, NoTls};

/// How long a host's lease lasts unrenewed when `[store] lease_secs` is not set.
pub const DEFAULT_LEASE_SECS: u64 = 15;

/// The advisory lock every host takes to apply migrations: two hosts
/// starting together apply each migration once.
const MIGRATION_LOCK: i64 = 0x5C07_0001;

/// Versioned migrations, applied in order, each in the transaction that
/// holds [`MIGRATION_LOCK`].
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("001_initial.sql")),
    (2, include_str!("002_capability_requests.sql")),
    (3, include_str!("003_review_effect.sql")),
    (4, include_str!("004_artifact_pins.sql")),
    (5, include_str!("005_review_facts.sql")),
    (6, include_str!("006_deployed_connectors.sql")),
    (7, include_str!("007_fleet_sessions.sql")),
    (8, include_str!("008_trace_origin.sql")),
    (9, include_str!("009_policies.sql")),
    (10, include_str!("010_policy_counts.sql")),
    (11, include_str!("011_brand_limits.sql")),
];

/// Most trace batches committed in one transaction.
const MAX_GROUP: usize = 512;

/// The `decided_by` of an approval revoked because its host was lost.
pub const LOST_HOST_REVOKER: &str = super::HOST_LOST;

/// How a [`PgStore`] reaches its database and keeps its lease.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// A libpq connection URL or key-value string (`postgresql://user:pw@db/scout`,
    /// `postgresql:///scout?host=/run/pg`, `host=/run/pg dbname=scout`).
    pub url: String,
    /// This process: fresh per start, so a restarted host is a new one and
    /// its predecessor is recovered like any lost host.
    pub host_id: String,
    /// How long a lease lasts without renewal: a host silent for longer is
    /// lost, fenced, and recovered by the others.
    pub lease: Duration,
    /// Connections in the pool of ordinary statements.
    pub pool_size: usize,
    /// PEM certificates of the authority that signs the server's
    /// certificate (a cloud provider's own CA); when set, only these are
    /// trusted, instead of the public web roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// Reads only (the audit export, `surface`): registers no host, holds
    /// no lease, recovers nothing, and refuses every write.
    pub reader: bool,
}

impl PgOptions {
    /// Defaults for one host: a fresh host id, a 15 s lease.
    pub fn new(url: impl Into<String>) -> PgOptions {
        PgOptions {
            url: url.into(),
            host_id: new_host_id(),
            lease: Duration::from_secs(DEFAULT_LEASE_SECS),
            pool_size: 16,
            ca_file: None,
            reader: false,
        }
    }
}

/// A fresh random host id (`h-` and 16 hex digits).
pub fn new_host_id() -> String {
    let mut bytes = [0u8; 8];
    // getrandom failing leaves zeros; the time keeps ids apart then.
    let _ = getrandom::fill(&mut bytes);
    let mixed = u64::from_le_bytes(bytes) ^ super::now_ms() as u64;
    format!("h-{mixed:016x}")
}

/// PostgreSQL's `text` holds no NUL character: in the plain columns (names,
/// ids a caller chose) one becomes U+FFFD. A trace's `detail` is JSON, where
/// serde already writes a NUL as `\u0000`, so it is kept exactly.
fn pg_text(value: &str) -> std::borrow::Cow<'_, str> {
    if value.contains('\0') {
        std::borrow::Cow::Owned(value.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(value)
    }
}

/// How this host reaches the server: TLS for anything but a unix socket or
/// the loopback interface.
#[derive(Clone)]
enum Tls {
    None(NoTls),
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

fn parse_config(url: &str, ca_file: Option<&std::path::Path>) -> Result<(Config, Tls), StoreError> {
    // libpq's verify-ca and verify-full: TLS here always verifies the
    // chain and the server's name (stricter than verify-ca), which
    // tokio-postgres spells `require`.
    let url = url
        .replace("sslmode=verify-full", "sslmode=require")
        .replace("sslmode=verify-ca", "sslmode=require");
    let mut config: Config = url.parse().map_err(|e: tokio_postgres::Error| {
        StoreError::Config(format!(
            "the PostgreSQL URL is not valid: {}",
            super::with_causes(&e)
        ))
    })?;
    // Local only if every place it may connect is: a unix socket, or the
    // loopback interface by name and by any `hostaddr` (which is where
    // tokio-postgres connects when it is given, `host` naming it for TLS).
    let local = !config.get_hosts().is_empty()
        && config.get_hosts().iter().all(|host| match host {
            Host::Unix(_) => true,
            Host::Tcp(name) => matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1"),
        })
        && config.get_hostaddrs().iter().all(|addr| {
            *addr == std::net::IpAddr::from([127, 0, 0, 1])
                || *addr == std::net::IpAddr::from(std::net::Ipv6Addr::LOCALHOST)
        });
    if local && ca_file.is_some() {
        return Err(StoreError::Config(
            "store.ca_file is for a server reached over TLS; this URL names a local one (a unix socket or loopback), reached without it: remove ca_file".into(),
        ));
    }
    let mixed = config
        .get_hosts()
        .iter()
        .any(|h| matches!(h, Host::Unix(_)))
        && config.get_hosts().iter().any(|h| matches!(h, Host::Tcp(_)));
    if !local && mixed {
        return Err(StoreError::Config(
            "the PostgreSQL URL mixes a unix socket with a server off this machine; name one kind"
                .into(),
        ));
    }
    // Each statement and lock wait is bounded, so a stuck server fails a
    // call rather than hanging it.
    config.options(
        "-c lock_timeout=5s -c statement_timeout=15s -c idle_in_transaction_session_timeout=30s",
    );
    if config.get_application_name().is_none() {
        config.application_name("scout-host");
    }
    if local {
        return Ok((config, Tls::None(NoTls)));
    }
    if config.get_ssl_mode() == SslMode::Disable {
        return Err(StoreError::Config(
            "a PostgreSQL server off this machine is reached over TLS: remove sslmode=disable from the URL".into(),
        ));
    }
    config.ssl_mode(SslMode::Require);
    let roots = match ca_file {
        None => rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(path) => trusted_authorities(path)?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok((
        config,
        Tls::Rustls(tokio_postgres_rustls::MakeRustlsConnect::new(tls)),
    ))
}

/// The certificates of `path` (PEM) as the only roots trusted.
fn trusted_authorities(path: &std::path::Path) -> Result<rustls::RootCertStore, StoreError> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let unusable = |why: String| {
        StoreError::Config(format!(
            "store.ca_file {}: {why}; name a PEM file of the authority that signs the server's certificate",
            path.display()
        ))
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| unusable(e.to_string()))? {
        let cert = cert.map_err(|e| unusable(e.to_string()))?;
        roots.add(cert).map_err(|e| unusable(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(unusable("it holds no certificate".into()));
    }
    Ok(roots)
}

/// One un-pooled connection; `messages` receives what the server sends
/// outside a query (notifications) until the connection closes.
async fn connect(
    config: &Config,
    tls: &Tls,
    name: &str,
    messages: Option<mpsc::UnboundedSender<AsyncMessage>>,
) -> Result<Client, StoreError> {
    let mut config = config.clone();
    // Named after the host too, so an operator (or a test) can tell whose
    // listener is whose in pg_stat_activity.
    config.application_name(name);
    macro_rules! drive {
        ($tls:expr) => {{
            let (client, mut connection) = config.connect($tls).await?;
            tokio::spawn(async move {
                let mut stream =
                    futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                while let Some(Ok(message)) = stream.next().await {
                    if let Some(tx) = &messages {
                        let _ = tx.send(message);
                    }
                }
            });
            client
        }};
    }
    Ok(match tls {
        Tls::None(tls) => drive!(*tls),
        Tls::Rustls(tls) => drive!(tls.clone()),
    })
}

/// One trace row, serialised by its caller.
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

struct Batch {
    rows: Vec<Row>,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// What the store's tasks share.
struct Shared {
    pool: Pool,
    /// This host's identity in the `hosts` table: a new one each time it
    /// rejoins after another host recovered it.
    host_id: parking_lot::RwLock<Arc<str>>,
    /// Bumped at each rejoin: what was opened under an earlier identity
    /// was recovered by another host and must do nothing more here.
    generation: AtomicU64,
    /// Until when the lease surely holds, on this host's clock: the moment
    /// the last successful renewal was sent, plus the lease, less a
    /// margin. Past it, no effect starts, whatever the database says later.
    lease_deadline: parking_lot::Mutex<std::time::Instant>,
    lease: Duration,
    broker: Arc<super::ApprovalBroker>,
    invalidations: broadcast::Sender<Invalidation>,
    /// Set when this host learns it lost its lease (a renewal found the row
    /// recovered): every later trace write fails at once.
    fenced: AtomicBool,
    /// Whether the last renewal succeeded.
    lease_held: AtomicBool,
    /// Set as this host gives up its lease at a clean stop: the lease
    /// keeper stops (no renewal, sweep or rejoin after it).
    released: AtomicBool,
    commits: AtomicU64,
    writer_metrics: super::WriterMetrics,
}

impl Shared {
    /// This host's identity now.
    fn id(&self) -> Arc<str> {
        self.host_id.read().clone()
    }

    /// Whether the lease holds at this moment, by this host's own clock.
    fn lease_in_hand(&self) -> bool {
        self.lease_held.load(Ordering::SeqCst)
            && !self.fenced.load(Ordering::SeqCst)
            && std::time::Instant::now() < *self.lease_deadline.lock()
    }
}

/// The margin kept from a lease's end: a fifth of it (the keeper renews
/// every third), so clocks that drift apart, or a renewal answered late,
/// still leave this host stopping before another may recover it.
fn lease_deadline(sent: std::time::Instant, lease: Duration) -> std::time::Instant {
    sent + lease - lease / 5
}

/// Several hosts on one PostgreSQL database (see the module docs).
pub struct PgStore {
    _runtime: OwnedRuntime,
    handle: tokio::runtime::Handle,
    shared: Arc<Shared>,
    writer: mpsc::UnboundedSender<Batch>,
}

/// The store's own runtime, shut down without waiting when dropped: that
/// is allowed in any context, unlike dropping a runtime inside another
/// (a store that fails to connect, or is dropped in an async test).
struct OwnedRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("host_id", &self.shared.id())
            .finish()
    }
}

/// Runs `work` on the store's runtime and waits for it without holding the
/// caller's tokio worker.
fn run_on<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    work: impl Future<Output = T> + Send + 'static,
) -> Result<T, StoreError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = tx.send(work.await);
    });
    super::off_worker(|| rx.recv().map_err(|_| StoreError::WriterStopped))
}

impl PgStore {
    /// Connects, applies the migrations this host knows under the
    /// migration lock, refuses a server that does not make commits durable,
    /// registers this host with a fresh lease, and starts the trace writer,
    /// the listener and the lease keeper.
    pub fn connect(options: PgOptions) -> Result<PgStore, StoreError> {
        let (mut config, tls) = parse_config(&options.url, options.ca_file.as_deref())?;
        if options.reader {
            // The server refuses a reader's write too, whatever asks for one.
            let given = config.get_options().unwrap_or_default();
            let options = format!("{given} -c default_transaction_read_only=on");
            config.options(options.trim());
        }
        let runtime = OwnedRuntime(Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("scout-pg")
                .enable_all()
                .build()
                .map_err(StoreError::WriterStart)?,
        ));
        let handle = match &runtime.0 {
            Some(runtime) => runtime.handle().clone(),
            None => return Err(StoreError::WriterStopped),
        };
        let lease = options.lease.max(Duration::from_secs(1));
        let host_id = options.host_id.clone();
        let pool_size = options.pool_size.max(2);
        let reader = options.reader;
        let (config2, tls2) = (config.clone(), tls.clone());
        let registering = std::time::Instant::now();
        let shared = run_on(&handle, async move {
            let mut setup =
                connect(&config2, &tls2, &format!("scout-setup {host_id}"), None).await?;
            if reader {
                schema_is_current(&setup).await?;
            } else {
                migrate(&mut setup).await?;
            }
            let synchronous: String = setup
                .query_one("SHOW synchronous_commit", &[])
                .await?
                .get(0);
            if synchronous == "off" {
                return Err(StoreError::Config(
                    "the database has synchronous_commit = off: a pre-effect trace row could be lost on a crash; turn it on".into(),
                ));
            }
            if !reader {
                setup
                    .execute(
                        "INSERT INTO hosts (host_id, lease_until) VALUES ($1, now() + make_interval(secs => $2))",
                        &[&host_id, &(lease.as_secs_f64())],
                    )
                    .await?;
            }
            let manager = match &tls2 {
                Tls::None(t) => Manager::from_config(
                    config2.clone(),
                    *t,
                    ManagerConfig {
                        recycling_method: RecyclingMethod::Fast,
                    },
                ),
                Tls::Rustls(t) => Manager::from_config(
                    config2.clone(),
                    t.clone(),
                    ManagerConfig {
                        recycling_method: RecyclingMethod::Fast,
                    },
                ),
            };
            let pool = Pool::builder(manager)
                .max_size(pool_size)
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(Duration::from_secs(15)))
                .create_timeout(Some(Duration::from_secs(15)))
                .build()
                .map_err(|e| StoreError::Config(format!("connection pool: {e}")))?;
            Ok::<_, StoreError>(Arc::new(Shared {
                pool,
                host_id: parking_lot::RwLock::new(host_id.into()),
                generation: AtomicU64::new(0),
                lease_deadline: parking_lot::Mutex::new(lease_deadline(registering, lease)),
                lease,
                broker: Default::default(),
                invalidations: broadcast::channel(256).0,
                fenced: AtomicBool::new(false),
                lease_held: AtomicBool::new(true),
                released: AtomicBool::new(false),
                commits: AtomicU64::new(0),
                writer_metrics: super::WriterMetrics::default(),
            }))
        })??;
        let (writer, batches) = mpsc::unbounded_channel();
        if reader {
            // No writer: every trace write fails as "the trace writer has stopped".
            drop(batches);
            shared.lease_held.store(false, Ordering::SeqCst);
            // It holds no lease to give up.
            shared.released.store(true, Ordering::SeqCst);
        } else {
            handle.spawn(write_loop(
                shared.clone(),
                config.clone(),
                tls.clone(),
                batches,
            ));
            handle.spawn(listen_loop(shared.clone(), config.clone(), tls.clone()));
            handle.spawn(lease_loop(shared.clone()));
        }
        Ok(PgStore {
            _runtime: runtime,
            handle,
            shared,
            writer,
        })
    }

    /// This host's id, as its rows carry it now (a host that rejoins after
    /// being recovered takes a new one).
    pub fn host_id(&self) -> String {
        self.shared.id().to_string()
    }

    /// Runs `work` on this store's own runtime, where its pool and
    /// connections live, and waits for it without holding the caller's
    /// thread. The work finishes even if the caller stops waiting: a
    /// statement sent is never cut half way by a client going away.
    async fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.run_as(work).await
    }

    /// [`PgStore::run`] for work that fails with an error of its own.
    async fn run_as<T: Send + 'static, E: From<StoreError> + Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, E>> + Send + 'static,
    ) -> Result<T, E> {
        match self.handle.spawn(work).await {
            Ok(done) => done,
            Err(_) => Err(StoreError::WriterStopped.into()),
        }
    }

    /// Renews this host's lease now (the lease keeper does every third of
    /// the lease); `false` if another host has recovered this one.
    pub fn renew_lease(&self) -> Result<bool, StoreError> {
        let shared = self.shared.clone();
        run_on(&self.handle, async move {
            let renewed = renew(&shared).await?;
            shared.lease_held.store(renewed, Ordering::SeqCst);
            Ok(renewed)
        })?
    }

    /// Recovers every host whose lease expired, now (the sweeper does the
    /// same every few seconds).
    pub fn recover_lost_hosts(&self) -> Result<Recovered, StoreError> {
        let shared = self.shared.clone();
        run_on(&self.handle, async move { recover_lost(&shared).await })?
    }

    fn enqueue(
        &self,
        events: &[TraceEvent],
    ) -> Result<oneshot::Receiver<Result<(), StoreError>>, StoreError> {
        if self.shared.fenced.load(Ordering::SeqCst) {
            return Err(StoreError::Fenced);
        }
        let mut rows = Vec::with_capacity(events.len());
        for event in events {
            rows.push(Row {
                session: pg_text(&event.session).into_owned(),
                brand: pg_text(&event.brand).into_owned(),
                call_id: event.call_id.as_deref().map(|v| pg_text(v).into_owned()),
                tool: event.tool.as_deref().map(|v| pg_text(v).into_owned()),
                state: event.state.as_str(),
                rule: event.rule.as_deref().map(|v| pg_text(v).into_owned()),
                detail: serde_json::to_string(&event.detail)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                at_ms: event.at_ms,
                trace_id: event
                    .origin
                    .trace_id
                    .as_deref()
                    .map(|v| pg_text(v).into_owned()),
                span_id: event
                    .origin
                    .span_id
                    .as_deref()
                    .map(|v| pg_text(v).into_owned()),
            });
        }
        let (reply, answer) = oneshot::channel();
        self.writer
            .send(Batch { rows, reply })
            .map_err(|_| StoreError::WriterStopped)?;
        Ok(answer)
    }

    fn notify_invalidation(&self, what: Invalidation) {
        let _ = self.shared.invalidations.send(what);
    }
}

/// A reader (the audit, the trace export) changes nothing: it checks that
/// the schema is this host's and never migrates it.
async fn schema_is_current(client: &Client) -> Result<(), StoreError> {
    let found: Option<i64> = client
        .query_one(statements::SCHEMA_VERSION_FOUND.pg, &[])
        .await
        .map_err(|e| {
            StoreError::Config(format!(
                "the database holds no Scout schema ({}): start `serve` on it first",
                super::with_causes(&e)
            ))
        })?
        .get(0);
    let found = found.unwrap_or(0);
    let supported = MIGRATIONS.last().map(|(v, _)| *v).unwrap_or(0);
    if found > supported {
        return Err(StoreError::SchemaTooNew { found, supported });
    }
    if found < supported {
        return Err(StoreError::Config(format!(
            "the database has schema version {found}, older than this host's {supported}; it is only read here: start `serve` of this version on it once (which upgrades it), or read it with the version that wrote it"
        )));
    }
    Ok(())
}

async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version bigint NOT NULL)")
        .await?;
    let found: Option<i64> = tx
        .query_one(statements::SCHEMA_VERSION_FOUND.pg, &[])
        .await?
        .get(0);
    let found = found.unwrap_or(0);
    let supported = MIGRATIONS.last().map(|(v, _)| *v).unwrap_or(0);
    if found > supported {
        return Err(StoreError::SchemaTooNew { found, supported });
    }
    for (version, sql) in MIGRATIONS {
        if *version > found {
            tx.batch_execute(sql).await?;
            tx.execute(statements::RECORD_SCHEMA_VERSION.pg, &[version])
                .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

impl PgStore {
    /// Runs one statement in a transaction that also rings the other
    /// hosts' caches, and drops this host's at once.
    async fn change_and_invalidate(
        &self,
        sql: &'static str,
        params: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
        what: Invalidation,
    ) -> Result<u64, StoreError> {
        let shared = self.shared.clone();
        let notice = Notice::Invalidate(what.clone());
        let changed = self
            .run(async move {
                let mut client = shared.pool.get().await?;
                let tx = client.transaction().await?;
                let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p.as_ref() as &(dyn tokio_postgres::types::ToSql + Sync))
                    .collect();
                let changed = tx.execute(sql, &refs).await?;
                notify(&tx, &notice).await?;
                tx.commit().await?;
                Ok(changed)
            })
            .await?;
        self.notify_invalidation(what);
        Ok(changed)
    }
}

fn owned(value: &str) -> Box<dyn tokio_postgres::types::ToSql + Send + Sync> {
    Box::new(pg_text(value).into_owned())
}
