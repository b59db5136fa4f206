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

use super::rules;
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
    (1, include_str!("postgres/001_initial.sql")),
    (2, include_str!("postgres/002_capability_requests.sql")),
    (3, include_str!("postgres/003_review_effect.sql")),
    (4, include_str!("postgres/004_artifact_pins.sql")),
    (5, include_str!("postgres/005_review_facts.sql")),
    (6, include_str!("postgres/006_deployed_connectors.sql")),
    (7, include_str!("postgres/007_fleet_sessions.sql")),
    (8, include_str!("postgres/008_trace_origin.sql")),
];

/// The channels every host listens on.
const APPROVAL_CHANNEL: &str = "scout_approval";
const INVALIDATE_CHANNEL: &str = "scout_invalidate";

/// A NOTIFY payload must stay under 8000 bytes; above this the message
/// says "everything" instead.
const MAX_PAYLOAD: usize = 7000;

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
        .query_one(rules::SCHEMA_VERSION_FOUND.pg, &[])
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
        .query_one(rules::SCHEMA_VERSION_FOUND.pg, &[])
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
            tx.execute(rules::RECORD_SCHEMA_VERSION.pg, &[version])
                .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// The trace writer: one connection of its own, groups of batches in one
/// transaction that first takes the fence (this host's row, live and not
/// recovered, `FOR SHARE`). Recovery updates that row, so the two exclude
/// each other: no row of this host commits once another host recovered it.
async fn write_loop(
    shared: Arc<Shared>,
    config: Config,
    tls: Tls,
    mut batches: mpsc::UnboundedReceiver<Batch>,
) {
    let mut client: Option<Client> = None;
    while let Some(first) = batches.recv().await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match batches.try_recv() {
                Ok(batch) => group.push(batch),
                Err(_) => break,
            }
        }
        if shared.fenced.load(Ordering::SeqCst) {
            group
                .into_iter()
                .for_each(|b| drop(b.reply.send(Err(StoreError::Fenced))));
            continue;
        }
        if client.as_ref().is_none_or(|c| c.is_closed()) {
            match connect(
                &config,
                &tls,
                &format!("scout-trace-writer {}", shared.id()),
                None,
            )
            .await
            {
                Ok(c) => client = Some(c),
                Err(e) => {
                    let e = Arc::new(e);
                    group
                        .into_iter()
                        .for_each(|b| drop(b.reply.send(Err(StoreError::TraceWriter(e.clone())))));
                    continue;
                }
            }
        }
        let Some(conn) = client.as_mut() else {
            continue;
        };
        let all: Vec<&Row> = group.iter().flat_map(|b| b.rows.iter()).collect();
        let started = std::time::Instant::now();
        match commit_rows(conn, &shared, &all).await {
            Ok(()) => {
                shared.commits.fetch_add(1, Ordering::SeqCst);
                shared
                    .writer_metrics
                    .committed(group.len(), started.elapsed());
                group.into_iter().for_each(|b| drop(b.reply.send(Ok(()))));
            }
            Err(StoreError::Fenced) => {
                group
                    .into_iter()
                    .for_each(|b| drop(b.reply.send(Err(StoreError::Fenced))));
            }
            Err(e) if group.len() == 1 => {
                if let Some(batch) = group.pop() {
                    let _ = batch.reply.send(Err(e));
                }
            }
            Err(_) => {
                // One batch may be what failed: the others keep their own outcome.
                for batch in group {
                    let rows: Vec<&Row> = batch.rows.iter().collect();
                    let outcome = commit_rows(conn, &shared, &rows).await;
                    if outcome.is_ok() {
                        shared.commits.fetch_add(1, Ordering::SeqCst);
                    }
                    let _ = batch.reply.send(outcome);
                }
            }
        }
    }
}

async fn commit_rows(
    client: &mut Client,
    shared: &Shared,
    rows: &[&Row],
) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    // One identity for the fence and the rows: the host may rejoin under
    // a new one meanwhile.
    let me = shared.id();
    // The fence: this host's row, share-locked until the commit, so a
    // recovery (which updates it) waits for these rows and then sees them.
    let row = tx
        .query_opt(
            "SELECT recovered_by IS NOT NULL, lease_until > now() FROM hosts WHERE host_id = $1 FOR SHARE",
            &[&&*me],
        )
        .await?;
    match row.map(|r| (r.get::<_, bool>(0), r.get::<_, bool>(1))) {
        // Recovered by another host (or its row gone): for good, unless
        // the host has rejoined under a new identity since.
        None | Some((true, _)) => {
            if *shared.id() == *me {
                shared.fenced.store(true, Ordering::SeqCst);
            }
            return Err(StoreError::Fenced);
        }
        // The lease lapsed (the database was out of reach longer than the
        // lease): nothing is written until a renewal holds it again.
        Some((false, false)) => return Err(StoreError::LeaseLapsed),
        Some((false, true)) => {}
    }
    let sessions: Vec<&str> = rows.iter().map(|r| r.session.as_str()).collect();
    let brands: Vec<&str> = rows.iter().map(|r| r.brand.as_str()).collect();
    let calls: Vec<Option<&str>> = rows.iter().map(|r| r.call_id.as_deref()).collect();
    let tools: Vec<Option<&str>> = rows.iter().map(|r| r.tool.as_deref()).collect();
    let states: Vec<&str> = rows.iter().map(|r| r.state).collect();
    let rules: Vec<Option<&str>> = rows.iter().map(|r| r.rule.as_deref()).collect();
    let details: Vec<&str> = rows.iter().map(|r| r.detail.as_str()).collect();
    let at: Vec<i64> = rows.iter().map(|r| r.at_ms).collect();
    let trace_ids: Vec<Option<&str>> = rows.iter().map(|r| r.trace_id.as_deref()).collect();
    let span_ids: Vec<Option<&str>> = rows.iter().map(|r| r.span_id.as_deref()).collect();
    tx.execute(
        "INSERT INTO trace (host_id, session, brand, call_id, tool, state, rule, detail, at_ms, trace_id, span_id)
         SELECT $1, s, b, c, t, st, r, d, a, ti, si
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int8[], $10::text[], $11::text[])
              WITH ORDINALITY AS u(s, b, c, t, st, r, d, a, ti, si, ord)
         ORDER BY ord",
        &[&&*me, &sessions, &brands, &calls, &tools, &states, &rules, &details, &at, &trace_ids, &span_ids],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The listener: one connection that does nothing but LISTEN. Whatever was
/// sent while it was away is lost, so after every (re)connect every waiter
/// is rung (each re-reads the store) and every cache dropped.
async fn listen_loop(shared: Arc<Shared>, config: Config, tls: Tls) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let (tx, mut rx) = mpsc::unbounded_channel();
        match connect(
            &config,
            &tls,
            &format!("scout-listener {}", shared.id()),
            Some(tx),
        )
        .await
        {
            Ok(client) => {
                let listening = client
                    .batch_execute(&format!(
                        "LISTEN {APPROVAL_CHANNEL}; LISTEN {INVALIDATE_CHANNEL}"
                    ))
                    .await;
                if listening.is_ok() {
                    backoff = Duration::from_millis(100);
                    shared.broker.ring_all();
                    let _ = shared.invalidations.send(Invalidation::All);
                    while let Some(message) = rx.recv().await {
                        if let AsyncMessage::Notification(n) = message {
                            dispatch(&shared, n.channel(), n.payload());
                        }
                    }
                }
                // The connection closed (killed, server restart).
                shared.broker.ring_all();
            }
            Err(e) => tracing::warn!(error = %e, "PostgreSQL listener could not connect; retrying"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}

fn dispatch(shared: &Shared, channel: &str, payload: &str) {
    let message: serde_json::Value = serde_json::from_str(payload).unwrap_or_default();
    let text = |k: &str| message.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    match channel {
        APPROVAL_CHANNEL => match text("op") {
            "one" => shared.broker.ring(text("s"), text("t"), text("d")),
            "session" => shared.broker.ring_session(text("s")),
            _ => shared.broker.ring_all(),
        },
        INVALIDATE_CHANNEL => {
            let what = match text("op") {
                "connections" => Invalidation::Connections,
                "profiles" => Invalidation::Profiles,
                "reviews" => Invalidation::Reviews,
                "connectors" => Invalidation::Connectors,
                "session" => Invalidation::Session(text("s").to_string()),
                _ => Invalidation::All,
            };
            let _ = shared.invalidations.send(what);
        }
        _ => {}
    }
}

/// A notification's payload: `message`, or "everything" when it would not
/// fit (NOTIFY takes under 8000 bytes).
fn payload(message: serde_json::Value) -> String {
    let text = message.to_string();
    if text.len() > MAX_PAYLOAD {
        r#"{"op":"all"}"#.to_string()
    } else {
        text
    }
}

/// The ring for one call's approvals.
fn approval_payload(session: &str, tool: &str, digest: &str) -> String {
    payload(serde_json::json!({"op": "one", "s": session, "t": tool, "d": digest}))
}

/// The ring for every approval of a session.
fn session_payload(session: &str) -> String {
    payload(serde_json::json!({"op": "session", "s": session}))
}

/// Renews this host's lease, and recovers any host whose lease expired.
async fn lease_loop(shared: Arc<Shared>) {
    let every = shared.lease / 3;
    // Since when renewals fail: the store unreachable is logged once as it
    // starts and once as it ends, not at every turn.
    let mut failing_since: Option<std::time::Instant> = None;
    loop {
        tokio::time::sleep(every).await;
        if shared.released.load(Ordering::SeqCst) {
            return;
        }
        let renewed = renew(&shared).await;
        if renewed.is_ok()
            && let Some(since) = failing_since.take()
        {
            tracing::warn!(
                host = %shared.id(),
                away_secs = since.elapsed().as_secs(),
                "the database answers again: lease renewal works"
            );
        }
        match renewed {
            Ok(true) => shared.lease_held.store(true, Ordering::SeqCst),
            // Released at a clean stop meanwhile: the process is ending.
            Ok(false) if shared.released.load(Ordering::SeqCst) => return,
            Ok(false) => {
                // Another host recovered this one: nothing it held may do
                // anything more; it comes back as a new host.
                shared.lease_held.store(false, Ordering::SeqCst);
                if !shared.fenced.swap(true, Ordering::SeqCst) {
                    tracing::error!(host = %shared.id(), "this host's lease was lost and its calls recovered by another host; what it served is ended");
                }
                if let Err(e) = rejoin(&shared).await {
                    tracing::warn!(error = %e, "rejoining the fleet failed; trying again at the next renewal");
                }
            }
            Err(e) => {
                shared.lease_held.store(false, Ordering::SeqCst);
                if failing_since.is_none() {
                    failing_since = Some(std::time::Instant::now());
                    tracing::error!(host = %shared.id(), error = %e, "the database does not answer: this host cannot renew its lease, and starts no call until it can");
                } else {
                    tracing::debug!(error = %e, "lease renewal failed again");
                }
            }
        }
        if !shared.fenced.load(Ordering::SeqCst) {
            if let Err(e) = recover_lost(&shared).await {
                tracing::warn!(error = %e, "recovering lost hosts failed");
            }
            if let Err(e) = forget_old_hosts(&shared).await {
                tracing::warn!(error = %e, "forgetting long-recovered hosts failed");
            }
        }
    }
}

/// Hosts recovered a day ago and their closed sessions are of no more use
/// (the trace keeps their host ids as text).
async fn forget_old_hosts(shared: &Shared) -> Result<(), StoreError> {
    let client = shared.pool.get().await?;
    client
        .batch_execute(
            "DELETE FROM sessions WHERE closed_at_ms IS NOT NULL
                 AND closed_at_ms < (extract(epoch FROM now()) * 1000)::bigint - 86400000;
             DELETE FROM session_refusals r WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = r.session);
             DELETE FROM hosts WHERE recovered_at < now() - interval '1 day';",
        )
        .await?;
    // A session's run ends with the session, whichever host served it last
    // (one that ended or expired where no host held it): the day then
    // counts what the run recorded, and its open holds in full.
    let ended: Vec<String> = client
        .query(
            "SELECT r.run_id FROM runs r WHERE NOT r.ended AND NOT EXISTS (
                 SELECT 1 FROM sessions s WHERE s.id = split_part(r.run_id, ':', 1)
                   AND s.closed_at_ms IS NULL AND s.ended_at_ms IS NULL
                   AND s.expires_at_ms > (extract(epoch FROM now()) * 1000)::bigint)
             AND EXISTS (SELECT 1 FROM sessions s WHERE s.id = split_part(r.run_id, ':', 1))",
            &[],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    drop(client);
    for run_id in ended {
        pg_end_run(shared, run_id).await?;
    }
    Ok(())
}

/// Renews the lease; `false` if another host recovered this one. The
/// deadline on this host's clock counts from before the request was sent,
/// so it never ends later than the database's.
async fn renew(shared: &Shared) -> Result<bool, StoreError> {
    let sent = std::time::Instant::now();
    let client = shared.pool.get().await?;
    let renewed = client
        .query_opt(
            "UPDATE hosts SET lease_until = now() + make_interval(secs => $2)
             WHERE host_id = $1 AND recovered_by IS NULL RETURNING 1",
            &[&&*shared.id(), &shared.lease.as_secs_f64()],
        )
        .await?;
    if renewed.is_some() {
        *shared.lease_deadline.lock() = lease_deadline(sent, shared.lease);
    }
    Ok(renewed.is_some())
}

/// After another host recovered this one (everything it held was closed
/// then), it rejoins under a new identity with a fresh lease: sessions it
/// opened before stay refused (their generation is gone), new ones are
/// served.
async fn rejoin(shared: &Shared) -> Result<Arc<str>, StoreError> {
    let fresh: Arc<str> = new_host_id().into();
    let sent = std::time::Instant::now();
    let client = shared.pool.get().await?;
    client
        .execute(
            "INSERT INTO hosts (host_id, lease_until) VALUES ($1, now() + make_interval(secs => $2))",
            &[&&*fresh, &shared.lease.as_secs_f64()],
        )
        .await?;
    let old = std::mem::replace(&mut *shared.host_id.write(), fresh.clone());
    shared.generation.fetch_add(1, Ordering::SeqCst);
    *shared.lease_deadline.lock() = lease_deadline(sent, shared.lease);
    shared.fenced.store(false, Ordering::SeqCst);
    shared.lease_held.store(true, Ordering::SeqCst);
    shared.writer_metrics.rejoined();
    tracing::warn!(old = %old, new = %fresh, "this host was recovered by another while it could not reach the database or was stopped; it rejoined under a new identity, and the sessions it served before stay ended");
    // Every cache and waiter reads the store again.
    let _ = shared.invalidations.send(Invalidation::All);
    shared.broker.ring_all();
    Ok(fresh)
}

/// In one transaction: claims every host whose lease expired (the row lock
/// waits for a trace write that holds the fence), ends its approvals that
/// could still be used, marks its open calls `interrupted`, ends its live
/// runs, and rings every waiter on every host. A host that released its
/// lease at a clean stop is not among them: it is never counted as lost.
async fn recover_lost(shared: &Shared) -> Result<Recovered, StoreError> {
    let mut client = shared.pool.get().await?;
    let tx = client.transaction().await?;
    let dead: Vec<String> = tx
        .query(
            "UPDATE hosts SET recovered_by = $1, recovered_at = now()
             WHERE lease_until < now() AND recovered_by IS NULL AND host_id <> $1 RETURNING host_id",
            &[&&*shared.id()],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    if dead.is_empty() {
        tx.commit().await?;
        return Ok(Recovered::default());
    }
    let recovered = close_hosts(
        &tx,
        &dead,
        &shared.id(),
        LOST_HOST_REVOKER,
        "the host serving the call was lost before the call finished",
    )
    .await?;
    tx.commit().await?;
    shared.broker.ring_all();
    shared.writer_metrics.recovered_hosts(dead.len());
    tracing::warn!(hosts = ?dead, approvals_revoked = recovered.approvals_revoked, calls = recovered.calls_interrupted, calls_maybe_run = recovered.calls_maybe_run, "recovered lost hosts");
    Ok(recovered)
}

/// At a clean stop: this host gives up its lease (its row marked as
/// recovered by itself, so no sweep claims or counts it, and every later
/// trace write of it is fenced) and closes, in the same transaction, what
/// it still holds as a recovery would, approvals ending by
/// `host_shutdown`. `None` if another host recovered it first.
async fn release(shared: &Shared) -> Result<Option<Recovered>, StoreError> {
    // From here the lease keeper neither renews, sweeps nor rejoins: a
    // renewal that finds the row released must not make a new host.
    shared.released.store(true, Ordering::SeqCst);
    let me = shared.id();
    let mut client = shared.pool.get().await?;
    let tx = client.transaction().await?;
    let mine = tx
        .query_opt(
            "UPDATE hosts SET recovered_by = $1, recovered_at = now(), lease_until = now()
             WHERE host_id = $1 AND recovered_by IS NULL RETURNING 1",
            &[&&*me],
        )
        .await?;
    if mine.is_none() {
        tx.commit().await?;
        return Ok(None);
    }
    let closed = close_hosts(
        &tx,
        &[me.to_string()],
        &me,
        &crate::policy::Rule::HostShutdown.name(),
        "the host stopped before the call finished",
    )
    .await?;
    tx.commit().await?;
    shared.fenced.store(true, Ordering::SeqCst);
    shared.lease_held.store(false, Ordering::SeqCst);
    shared.broker.ring_all();
    Ok(Some(closed))
}

/// Closes what `hosts` left open, inside `tx`, with rows written as `me`:
/// their approvals that could still be used (pending, or approved and
/// unused) revoked by `by`, each with a `decided` row on its call; each of
/// their calls without an ending state marked `interrupted` once, saying
/// how far it got by its states (never by row order: a row the store took
/// late may follow the call's `result`); their runs ended where the fleet
/// no longer serves the session; every waiter rung.
async fn close_hosts(
    tx: &tokio_postgres::Transaction<'_>,
    hosts: &[String],
    me: &str,
    by: &str,
    reason: &str,
) -> Result<Recovered, StoreError> {
    let at_ms = super::now_ms();
    // The calls first: the `decided` rows written below are no progress.
    let open = tx
        .query(
            &format!(
                "WITH mine AS (SELECT DISTINCT session, call_id FROM trace
                               WHERE host_id = ANY($1) AND call_id IS NOT NULL
                                 AND state IN ('requested', 'allowed')),
                      calls AS (SELECT t.session, t.call_id FROM trace t
                                JOIN mine m ON t.session = m.session AND t.call_id = m.call_id
                                GROUP BY t.session, t.call_id
                                HAVING NOT bool_or(t.state IN {ends})),
                      ranked AS (SELECT t.seq, t.session, t.brand, t.call_id, t.tool, t.state, t.rule,
                                        row_number() OVER (PARTITION BY t.session, t.call_id
                                                           ORDER BY {progress} DESC, t.seq DESC) AS n
                                 FROM trace t JOIN calls c ON t.session = c.session AND t.call_id = c.call_id)
                 SELECT session, brand, call_id, tool, state, rule FROM ranked WHERE n = 1 ORDER BY seq",
                ends = super::CALL_ENDS,
                progress = super::CALL_PROGRESS,
            ),
            &[&hosts],
        )
        .await?;
    let ended: Vec<super::EndedApproval> = tx
        .query(
            "WITH open AS (SELECT id, state, decided_by FROM approvals
                           WHERE host_id = ANY($1) AND NOT used AND state IN ('pending', 'approved')
                           FOR UPDATE)
             UPDATE approvals a SET state = 'revoked', decided_by = $2, decided_at_ms = $3,
                    args_nonce = NULL, args_sealed = NULL
             FROM open WHERE a.id = open.id AND NOT a.used
             RETURNING a.id, a.session, a.tool, open.state, open.decided_by, a.requested_at_ms",
            &[&hosts, &by, &at_ms],
        )
        .await?
        .iter()
        .map(|row| super::EndedApproval {
            id: row.get(0),
            session: row.get(1),
            tool: row.get(2),
            was: row.get(3),
            decided_by: row.get(4),
            requested_at_ms: row.get(5),
        })
        .collect();
    let insert = tx
        .prepare(
            "INSERT INTO trace (host_id, session, brand, call_id, tool, state, rule, detail, at_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .await?;
    if !ended.is_empty() {
        // The call that asked for each, for its `decided` row; else the
        // session's brand alone.
        let sessions: Vec<&str> = ended.iter().map(|a| a.session.as_str()).collect();
        let asked = super::asked_by(
            tx.query(
                "SELECT brand, call_id, detail FROM trace
                 WHERE session = ANY($1) AND state = 'requested' AND rule = 'approval_requested'",
                &[&sessions],
            )
            .await?
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2))),
        );
        for approval in &ended {
            let found = match asked.get(&approval.id) {
                Some(found) => Some(found.clone()),
                None => tx
                    .query_opt(
                        "SELECT brand FROM sessions WHERE id = $1",
                        &[&approval.session],
                    )
                    .await?
                    .map(|row| (row.get(0), None)),
            };
            let Some((brand, call_id)) = found else {
                continue;
            };
            tx.execute(
                &insert,
                &[
                    &me,
                    &approval.session,
                    &brand,
                    &call_id,
                    &approval.tool,
                    &TraceState::Decided.as_str(),
                    &"revoked",
                    &approval.detail(by, at_ms),
                    &at_ms,
                ],
            )
            .await?;
        }
    }
    let mut calls_maybe_run = 0;
    for row in &open {
        let (session, brand, call_id, tool, last_state, last_rule): (
            String,
            String,
            String,
            Option<String>,
            String,
            Option<String>,
        ) = (
            row.get(0),
            row.get(1),
            row.get(2),
            row.get(3),
            row.get(4),
            row.get(5),
        );
        let (detail, may_have_run) =
            super::interrupted_detail(reason, &last_state, last_rule.as_deref());
        calls_maybe_run += usize::from(may_have_run);
        tx.execute(
            &insert,
            &[
                &me,
                &session,
                &brand,
                &call_id,
                &tool,
                &TraceState::Interrupted.as_str(),
                &None::<&str>,
                &detail.to_string(),
                &at_ms,
            ],
        )
        .await?;
    }
    // Their runs go on with the sessions the fleet still serves. What their
    // interrupted calls held and never settled stays held (the run can
    // spend less, never more) until the run ends, when it is charged.
    tx.execute(
        "UPDATE runs r SET ended = true, ended_at_ms = $2 WHERE host_id = ANY($1) AND NOT ended
           AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = split_part(r.run_id, ':', 1)
             AND s.record IS NOT NULL AND s.closed_at_ms IS NULL AND s.ended_at_ms IS NULL
             AND s.expires_at_ms > $2)",
        &[&hosts, &at_ms],
    )
    .await?;
    // Their sessions stay live: any other host takes one up at its next
    // request (only their calls in flight went with them).
    tx.execute(
        "SELECT pg_notify($1, '{\"op\":\"all\"}')",
        &[&APPROVAL_CHANNEL],
    )
    .await?;
    Ok(Recovered {
        approvals_revoked: ended.len(),
        calls_interrupted: open.len(),
        calls_maybe_run,
    })
}

fn trace_event(row: &tokio_postgres::Row) -> Result<(i64, TraceEvent), StoreError> {
    let state: String = row.get(5);
    let detail: String = row.get(7);
    let state = TraceState::parse(&state)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown trace state {state:?}")))?;
    let detail = serde_json::from_str(&detail)
        .map_err(|e| StoreError::Corrupt(format!("trace detail is not JSON: {e}")))?;
    Ok((
        row.get(0),
        TraceEvent {
            session: row.get(1),
            brand: row.get(2),
            call_id: row.get(3),
            tool: row.get(4),
            state,
            rule: row.get(6),
            detail,
            at_ms: row.get(8),
            origin: super::Origin {
                host: row.get(9),
                trace_id: row.get(10),
                span_id: row.get(11),
            },
        },
    ))
}

const TRACE_COLUMNS: &str = super::rules::TRACE_COLUMNS;

/// Where a trace page stops. An identity is taken at insert, not at
/// commit: a page that read past a row another host has not committed yet
/// would skip it for good. So a page stops below the oldest transaction
/// that was running at its snapshot and may hold a trace row: every one of
/// them but those still running now without a write lock on this
/// database's `trace` (locks are held to the end of a transaction, and an
/// identity is taken under that lock, so those never took one before the
/// snapshot; one that ended since is counted, to be safe). Not the
/// cluster's oldest transaction: another database's, a `pg_dump`'s or an
/// idle session's would hold every page back for as long as it stays open.
/// The xid8 of the snapshot is compared with `pg_locks`' 32-bit xids
/// modulo 2^32.
const TRACE_HORIZON: &str = "WITH snap AS MATERIALIZED (SELECT pg_current_snapshot() AS s),
  locks AS MATERIALIZED (SELECT locktype, mode, granted, pid, relation, database, transactionid FROM pg_locks),
  writers AS MATERIALIZED (
    SELECT DISTINCT pid FROM locks
    WHERE locktype = 'relation' AND relation = 'trace'::regclass AND mode = 'RowExclusiveLock'
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())),
  quiet AS MATERIALIZED (
    SELECT transactionid::text::int8 AS xid32 FROM locks
    WHERE locktype = 'transactionid' AND mode = 'ExclusiveLock' AND granted
      AND pid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM writers w WHERE w.pid IS NOT DISTINCT FROM locks.pid)
      AND NOT EXISTS (SELECT 1 FROM writers w WHERE w.pid IS NULL)),
  horizon AS (
    SELECT COALESCE(
      (SELECT min(x) FROM pg_snapshot_xip(snap.s) AS x
       WHERE (x::text::numeric % 4294967296)::int8 NOT IN (SELECT xid32 FROM quiet)),
      pg_snapshot_xmax(snap.s)) AS h
    FROM snap)";

impl PgStore {
    async fn trace_rows(
        &self,
        column: &'static str,
        value: &str,
        after: i64,
        limit: i64,
        horizon: bool,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let shared = self.shared.clone();
        let value = value.to_string();
        self.run(async move {
            let sql = if horizon {
                format!(
                    "{TRACE_HORIZON} SELECT {TRACE_COLUMNS} FROM trace, horizon WHERE {column} = $1 AND seq > $2 AND txid < horizon.h ORDER BY seq LIMIT $3"
                )
            } else {
                format!(
                    "SELECT {TRACE_COLUMNS} FROM trace WHERE {column} = $1 AND seq > $2 ORDER BY seq LIMIT $3"
                )
            };
            let client = shared.pool.get().await?;
            let statement = client.prepare_cached(&sql).await?;
            client
                .query(&statement, &[&value, &after, &limit])
                .await?
                .iter()
                .map(trace_event)
                .collect()
        }).await
    }
}

#[async_trait::async_trait]
impl TraceStore for PgStore {
    async fn record(&self, event: &TraceEvent) -> Result<(), StoreError> {
        self.record_all(std::slice::from_ref(event)).await
    }

    /// Handed to the trace writer, and answered once its group commits.
    async fn record_all(&self, events: &[TraceEvent]) -> Result<(), StoreError> {
        let answer = self.enqueue(events)?;
        answer.await.map_err(|_| StoreError::WriterStopped)?
    }

    fn trace_commits(&self) -> u64 {
        self.shared.commits.load(Ordering::SeqCst)
    }

    fn writer_metrics(&self) -> Option<super::WriterMetrics> {
        Some(self.shared.writer_metrics.clone())
    }

    async fn trace_page(
        &self,
        filter: TraceFilter<'_>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        match filter {
            TraceFilter::Session(session) => {
                self.trace_rows("session", session, after, limit, true)
                    .await
            }
            TraceFilter::Brand(brand) => self.trace_rows("brand", brand, after, limit, true).await,
            // `'all' = 'all'`: the same query, every row.
            TraceFilter::All => self.trace_rows("'all'", "all", after, limit, true).await,
        }
    }

    async fn trace_for_session(&self, session: &str) -> Result<Vec<TraceEvent>, StoreError> {
        Ok(self
            .trace_rows("session", session, 0, i64::MAX, false)
            .await?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }

    async fn recent_decisions(&self, limit: usize) -> Result<Vec<(i64, TraceEvent)>, StoreError> {
        let shared = self.shared.clone();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client
                .prepare_cached(super::rules::RECENT_DECISIONS.pg)
                .await?;
            client
                .query(&statement, &[&limit])
                .await?
                .iter()
                .map(trace_event)
                .collect::<Result<Vec<_>, StoreError>>()
        })
        .await
    }

    async fn recent_requests(
        &self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<TraceEvent>, StoreError> {
        let shared = self.shared.clone();
        let session = session.to_string();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut rows = self
            .run(async move {
                let client = shared.pool.get().await?;
                let statement = client
                    .prepare_cached(super::rules::RECENT_REQUESTS.pg)
                    .await?;
                client
                    .query(&statement, &[&session, &limit])
                    .await?
                    .iter()
                    .map(trace_event)
                    .collect::<Result<Vec<_>, StoreError>>()
            })
            .await?;
        rows.reverse();
        Ok(rows.into_iter().map(|(_, e)| e).collect())
    }

    async fn trace_for_brand(&self, brand: &str) -> Result<Vec<TraceEvent>, StoreError> {
        Ok(self
            .trace_rows("brand", brand, 0, i64::MAX, false)
            .await?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }
}

const APPROVAL_COLUMNS: &str = "id, session, tool, args_digest, state, used, decided_by, requested_at_ms, decided_at_ms, decided_actor";

fn approval_row(row: &tokio_postgres::Row) -> Result<Approval, StoreError> {
    let state: String = row.get(4);
    let state = ApprovalState::parse(&state)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown approval state {state:?}")))?;
    Ok(Approval {
        id: ApprovalId(row.get(0)),
        session: row.get(1),
        tool: row.get(2),
        args_digest: row.get(3),
        state,
        used: row.get(5),
        decided_by: row.get(6),
        requested_at_ms: row.get(7),
        decided_at_ms: row.get(8),
        decided_actor: row
            .get::<_, Option<String>>(9)
            .and_then(|a| serde_json::from_str(&a).ok()),
    })
}

impl PgStore {
    async fn approvals_where(
        &self,
        clause: &'static str,
        param: ApprovalParam,
    ) -> Result<Vec<Approval>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            let sql =
                format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE {clause} ORDER BY id");
            let statement = client.prepare_cached(&sql).await?;
            let rows = match &param {
                ApprovalParam::Session(s) => client.query(&statement, &[s]).await?,
                ApprovalParam::Id(id) => client.query(&statement, &[id]).await?,
            };
            rows.iter().map(approval_row).collect()
        })
        .await
    }
}

enum ApprovalParam {
    Session(String),
    Id(i64),
}

#[async_trait::async_trait]
impl ApprovalStore for PgStore {
    async fn request_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, StoreError> {
        let shared = self.shared.clone();
        let (session, tool, digest) = (
            pg_text(session).into_owned(),
            pg_text(tool).into_owned(),
            args_digest.to_string(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client
                .prepare_cached(
                    "INSERT INTO approvals (host_id, session, tool, args_digest, state, requested_at_ms)
                     VALUES ($1, $2, $3, $4, 'pending', $5) RETURNING id",
                )
                .await?;
            let row = client
                .query_one(&statement, &[&&*shared.id(), &session, &tool, &digest, &super::now_ms()])
                .await?;
            Ok(ApprovalId(row.get(0)))
        }).await
    }

    async fn decide_as(
        &self,
        id: ApprovalId,
        approved: bool,
        by: &str,
        actor: Option<&serde_json::Value>,
    ) -> Result<(), ApprovalError> {
        let shared = self.shared.clone();
        let by = pg_text(by).into_owned();
        let actor = actor.map(|a| pg_text(&a.to_string()).into_owned());
        let rung = self
            .run_as(async move {
                let mut client = shared.pool.get().await.map_err(StoreError::from)?;
                let tx = client.transaction().await.map_err(StoreError::from)?;
                let state = if approved {
                    ApprovalState::Approved
                } else {
                    ApprovalState::Denied
                };
                // Only a pending one changes; the arguments shown to the person
                // are erased with the decision.
                let changed = tx
                    .query_opt(
                        "UPDATE approvals SET state = $2, decided_by = $3, decided_at_ms = $4,
                            decided_actor = $5, args_nonce = NULL, args_sealed = NULL
                     WHERE id = $1 AND state = 'pending' RETURNING session, tool, args_digest",
                        &[&id.0, &state.as_str(), &by, &super::now_ms(), &actor],
                    )
                    .await
                    .map_err(StoreError::from)?;
                let Some(row) = changed else {
                    let exists = tx
                        .query_opt("SELECT 1 FROM approvals WHERE id = $1", &[&id.0])
                        .await
                        .map_err(StoreError::from)?
                        .is_some();
                    return Err(if exists {
                        ApprovalError::NotPending(id)
                    } else {
                        ApprovalError::Unknown(id)
                    });
                };
                let key: (String, String, String) = (row.get(0), row.get(1), row.get(2));
                // The doorbell rings on every host iff the decision commits.
                tx.execute(
                    "SELECT pg_notify($1, $2)",
                    &[&APPROVAL_CHANNEL, &approval_payload(&key.0, &key.1, &key.2)],
                )
                .await
                .map_err(StoreError::from)?;
                tx.commit().await.map_err(StoreError::from)?;
                Ok::<_, ApprovalError>(key)
            })
            .await?;
        self.shared.broker.ring(&rung.0, &rung.1, &rung.2);
        Ok(())
    }

    async fn consume_approval(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<ApprovalId, ApprovalError> {
        let shared = self.shared.clone();
        let (session, tool, digest) = (
            pg_text(session).into_owned(),
            pg_text(tool).into_owned(),
            args_digest.to_string(),
        );
        self.run_as(async move {
            let mut client = shared.pool.get().await.map_err(StoreError::from)?;
            let tx = client.transaction().await.map_err(StoreError::from)?;
            // Each statement reads what was committed when it began (READ
            // COMMITTED): a decision that commits between the spend and the
            // read of the latest state shows an approval approved and
            // unused, which the next spend takes.
            for _ in 0..3 {
                // FOR UPDATE (not SKIP LOCKED): a concurrent consumer waits
                // for the row, then finds it used and takes the next, or none.
                let spent = tx
                    .query_opt(
                        "WITH c AS (SELECT id FROM approvals
                                    WHERE session = $1 AND tool = $2 AND args_digest = $3 AND state = 'approved' AND NOT used
                                    ORDER BY id LIMIT 1 FOR UPDATE)
                         UPDATE approvals a SET used = true, used_at_ms = $4 FROM c
                         WHERE a.id = c.id AND a.state = 'approved' AND NOT a.used RETURNING a.id",
                        &[&session, &tool, &digest, &super::now_ms()],
                    )
                    .await
                    .map_err(StoreError::from)?;
                if let Some(row) = spent {
                    tx.commit().await.map_err(StoreError::from)?;
                    return Ok(ApprovalId(row.get(0)));
                }
                let latest = tx
                    .query_opt(
                        rules::LATEST_APPROVAL_STATE.pg,
                        &[&session, &tool, &digest],
                    )
                    .await
                    .map_err(StoreError::from)?;
                match latest.map(|row| (row.get::<_, String>(0), row.get::<_, bool>(1))) {
                    Some((state, false)) if state == "approved" => continue,
                    latest => {
                        return Err(super::unspendable(
                            latest.as_ref().map(|(state, _)| state.as_str()),
                        ));
                    }
                }
            }
            // Decided again and again meanwhile: read again later.
            Err(ApprovalError::Pending)
        }).await
    }

    async fn pending(&self, session: &str) -> Result<Vec<Approval>, StoreError> {
        self.approvals_where(
            "session = $1 AND state = 'pending'",
            ApprovalParam::Session(pg_text(session).into_owned()),
        )
        .await
    }

    async fn approval(&self, id: ApprovalId) -> Result<Option<Approval>, StoreError> {
        Ok(self
            .approvals_where("id = $1", ApprovalParam::Id(id.0))
            .await?
            .into_iter()
            .next())
    }

    async fn revoke_session_approvals(&self, session: &str) -> Result<usize, StoreError> {
        let shared = self.shared.clone();
        let session = pg_text(session).into_owned();
        let (changed, session) = self
            .run(async move {
                let mut client = shared.pool.get().await?;
                let tx = client.transaction().await?;
                let changed = tx
                    .execute(
                        rules::REVOKE_SESSION_APPROVALS.pg,
                        &[&super::now_ms(), &session],
                    )
                    .await?;
                tx.execute(
                    "SELECT pg_notify($1, $2)",
                    &[&APPROVAL_CHANNEL, &session_payload(&session)],
                )
                .await?;
                tx.commit().await?;
                Ok((changed as usize, session))
            })
            .await?;
        self.shared.broker.ring_session(&session);
        Ok(changed)
    }

    async fn revoke_approval(&self, id: ApprovalId, by: &str) -> Result<bool, StoreError> {
        let shared = self.shared.clone();
        let by = pg_text(by).into_owned();
        let key = self
            .run(async move {
                let mut client = shared.pool.get().await?;
                let tx = client.transaction().await?;
                let row = tx
                .query_opt(
                    "UPDATE approvals SET state = 'revoked', decided_by = $1, decided_at_ms = $2,
                            args_nonce = NULL, args_sealed = NULL
                     WHERE id = $3 AND NOT used AND state IN ('pending', 'approved')
                     RETURNING session, tool, args_digest",
                    &[&by, &super::now_ms(), &id.0],
                )
                .await?;
                let key = row.map(|r| {
                    (
                        r.get::<_, String>(0),
                        r.get::<_, String>(1),
                        r.get::<_, String>(2),
                    )
                });
                if let Some((s, t, d)) = &key {
                    tx.execute(
                        "SELECT pg_notify($1, $2)",
                        &[&APPROVAL_CHANNEL, &approval_payload(s, t, d)],
                    )
                    .await?;
                }
                tx.commit().await?;
                Ok(key)
            })
            .await?;
        if let Some((s, t, d)) = &key {
            self.shared.broker.ring(s, t, d);
        }
        Ok(key.is_some())
    }

    fn watch_approval(&self, session: &str, tool: &str, args_digest: &str) -> ApprovalWatch {
        self.shared
            .broker
            .subscribe(&pg_text(session), &pg_text(tool), args_digest)
    }
    async fn request_approval_showing(
        &self,
        session: &str,
        tool: &str,
        args_digest: &str,
        arguments: &serde_json::Value,
        key: &[u8; 32],
    ) -> Result<ApprovalId, StoreError> {
        let shared = self.shared.clone();
        let (session, tool, digest) = (
            pg_text(session).into_owned(),
            pg_text(tool).into_owned(),
            args_digest.to_string(),
        );
        let (nonce, sealed) = super::seal_arguments(key, &session, &tool, &digest, arguments)?;
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client
                .prepare_cached(
                    "INSERT INTO approvals (host_id, session, tool, args_digest, state, requested_at_ms, args_nonce, args_sealed)
                     VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7) RETURNING id",
                )
                .await?;
            let row = client
                .query_one(
                    &statement,
                    &[&&*shared.id(), &session, &tool, &digest, &super::now_ms(), &nonce, &sealed],
                )
                .await?;
            Ok(ApprovalId(row.get(0)))
        }).await
    }

    async fn approval_arguments(
        &self,
        id: ApprovalId,
        key: &[u8; 32],
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let shared = self.shared.clone();
        type Sealed = (String, String, String, Option<Vec<u8>>, Option<Vec<u8>>);
        let row: Option<Sealed> = self
            .run(async move {
                let client = shared.pool.get().await?;
                Ok(client
                    .query_opt(rules::PENDING_APPROVAL_ARGUMENTS.pg, &[&id.0])
                    .await?
                    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))))
            })
            .await?;
        Ok(match row {
            Some((session, tool, digest, Some(nonce), Some(sealed))) => {
                super::open_arguments(key, &session, &tool, &digest, &nonce, &sealed)
            }
            _ => None,
        })
    }
}

#[async_trait::async_trait]
impl LedgerStore for PgStore {
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
        let shared = self.shared.clone();
        let (run_id, connector, brand, day, key) = (
            pg_text(run_id).into_owned(),
            pg_text(connector).into_owned(),
            pg_text(brand).into_owned(),
            pg_text(day).into_owned(),
            pg_text(idempotency_key).into_owned(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client
                .prepare_cached(
                    "INSERT INTO charges (idempotency_key, run_id, connector, brand, day, amount, at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (idempotency_key) DO NOTHING RETURNING seq",
                )
                .await?;
            let inserted = client
                .query_opt(&statement, &[&key, &run_id, &connector, &brand, &day, &signed, &super::now_ms()])
                .await
                .map_err(|e| unknown_run(e, &run_id))?;
            if inserted.is_some() {
                return Ok(true);
            }
            // A concurrent insert of the same key waited on the unique
            // index, then did nothing: its row is committed and seen here.
            let same: bool = client
                .query_one(
                    rules::CHARGE_MATCHES_KEY.pg,
                    &[&key, &run_id, &connector, &brand, &day, &signed],
                )
                .await?
                .get(0);
            if same { Ok(false) } else { Err(StoreError::IdempotencyConflict(key)) }
        }).await
    }

    async fn spent_in_run(&self, run_id: &str) -> Result<u64, StoreError> {
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            let total: i64 = client
                .query_one(rules::SPENT_IN_RUN.pg, &[&run_id])
                .await?
                .get(0);
            super::to_u64(total)
        })
        .await
    }

    async fn spent_on_day(
        &self,
        brand: &str,
        connector: &str,
        day: &str,
    ) -> Result<u64, StoreError> {
        let shared = self.shared.clone();
        let (brand, connector, day) = (
            pg_text(brand).into_owned(),
            pg_text(connector).into_owned(),
            pg_text(day).into_owned(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            let total: i64 = client
                .query_one(rules::SPENT_ON_DAY.pg, &[&brand, &connector, &day])
                .await?
                .get(0);
            super::to_u64(total)
        })
        .await
    }

    async fn charges_in_run(&self, run_id: &str) -> Result<Vec<Charge>, StoreError> {
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            let rows = client.query(rules::CHARGES_IN_RUN.pg, &[&run_id]).await?;
            rows.iter()
                .map(|row| {
                    Ok(Charge {
                        idempotency_key: row.get(0),
                        run_id: row.get(1),
                        connector: row.get(2),
                        brand: row.get(3),
                        day: row.get(4),
                        amount: super::to_u64(row.get(5))?,
                    })
                })
                .collect()
        })
        .await
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
        let shared = self.shared.clone();
        let (run_id, brand, connector, day) = (
            pg_text(run_id).into_owned(),
            pg_text(brand).into_owned(),
            pg_text(connector).into_owned(),
            pg_text(day).into_owned(),
        );
        self.run_as(async move {
            let mut client = shared.pool.get().await.map_err(StoreError::from)?;
            let tx = client.transaction().await.map_err(StoreError::from)?;
            // One lock row per (brand, connector, day) serialises the runs
            // that start against it on every host; each then reads the
            // figure its predecessor committed.
            tx.execute(
                "INSERT INTO ledger_days (brand, connector, day) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&brand, &connector, &day],
            )
            .await
            .map_err(StoreError::from)?;
            tx.execute(
                "SELECT 1 FROM ledger_days WHERE brand = $1 AND connector = $2 AND day = $3 FOR UPDATE",
                &[&brand, &connector, &day],
            )
            .await
            .map_err(StoreError::from)?;
            if tx
                .query_opt("SELECT 1 FROM runs WHERE run_id = $1", &[&run_id])
                .await
                .map_err(StoreError::from)?
                .is_some()
            {
                return Err(StoreError::RunExists(run_id).into());
            }
            let committed: i64 = tx
                .query_one(
                    rules::DAY_COMMITTED.pg,
                    &[&brand, &connector, &day],
                )
                .await
                .map_err(StoreError::from)?
                .get(0);
            super::day_allows(committed, per_run, per_day)?;
            tx.execute(
                "INSERT INTO runs (run_id, host_id, brand, connector, day, per_run, per_day, started_at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[&run_id, &&*shared.id(), &brand, &connector, &day, &run_signed, &day_signed, &super::now_ms()],
            )
            .await
            .map_err(StoreError::from)?;
            tx.commit().await.map_err(StoreError::from)?;
            Ok(())
        }).await
    }

    async fn end_run(&self, run_id: &str) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move { pg_end_run(&shared, run_id).await })
            .await
    }

    async fn reserve_in_run(
        &self,
        run_id: &str,
        amount: u64,
    ) -> Result<super::RunHold, StoreError> {
        let signed = super::to_i64(amount)?;
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let Some(left) = pg_run_left(&tx, &run_id, true).await? else {
                return Ok(super::RunHold::Ended);
            };
            if amount > left {
                return Ok(super::RunHold::Short(left));
            }
            tx.execute(rules::HOLD_IN_RUN.pg, &[&run_id, &signed])
                .await?;
            tx.commit().await?;
            Ok(super::RunHold::Held)
        })
        .await
    }

    async fn run_left(&self, run_id: &str) -> Result<Option<u64>, StoreError> {
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            pg_run_left(&tx, &run_id, false).await
        })
        .await
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
        let shared = self.shared.clone();
        let (run_id, connector, brand, day, key) = (
            pg_text(run_id).into_owned(),
            pg_text(connector).into_owned(),
            pg_text(brand).into_owned(),
            pg_text(day).into_owned(),
            pg_text(idempotency_key).into_owned(),
        );
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            // The run's row first: settlements of one run queue here.
            let live = pg_run_left(&tx, &run_id, true).await?;
            if let Some(done) = tx.query_opt(rules::CHARGED_UNDER_KEY.pg, &[&key]).await? {
                // A retry of a settlement already recorded, whether or not
                // the run ended since: the same answer.
                return Ok(Some(super::to_u64(done.get(0))?));
            }
            // What the run has beside this hold: read (above) before the
            // hold is released, which would count it twice.
            let Some(left) = live else {
                return Ok(None);
            };
            tx.execute(rules::RELEASE_HOLD.pg, &[&run_id, &held])
                .await?;
            let charged = super::settled_charge(reserved, actual, left);
            if charged > 0 {
                tx.execute(
                    rules::INSERT_CHARGE.pg,
                    &[
                        &key,
                        &run_id,
                        &connector,
                        &brand,
                        &day,
                        &super::to_i64(charged)?,
                        &super::now_ms(),
                    ],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(Some(charged))
        })
        .await
    }

    /// Only the runs of hosts already recovered as lost: a live host's runs
    /// are its own, and a silent host's wait for its recovery.
    async fn end_live_runs(&self, at_ms: i64) -> Result<usize, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            // A run whose session the fleet still serves goes on (another
            // host takes the session up); one of a lost host's sessions
            // that has ended or expired ends, as does one whose session
            // the fleet never kept.
            let ended = client
                .execute(
                    "UPDATE runs r SET ended = true, ended_at_ms = $1
                     WHERE NOT ended AND host_id IN
                       (SELECT host_id FROM hosts WHERE recovered_by IS NOT NULL)
                       AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = split_part(r.run_id, ':', 1)
                         AND s.record IS NOT NULL AND s.closed_at_ms IS NULL AND s.ended_at_ms IS NULL
                         AND s.expires_at_ms > $1)",
                    &[&at_ms],
                )
                .await?;
            Ok(ended as usize)
        }).await
    }
}

/// A charge against a run no host started is the caller's error, named as such.
fn unknown_run(e: tokio_postgres::Error, run_id: &str) -> StoreError {
    if e.code() == Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION) {
        StoreError::UnknownRun(run_id.to_string())
    } else {
        StoreError::from(e)
    }
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
        let op = what.op().to_string();
        let changed = self
            .run(async move {
                let mut client = shared.pool.get().await?;
                let tx = client.transaction().await?;
                let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p.as_ref() as &(dyn tokio_postgres::types::ToSql + Sync))
                    .collect();
                let changed = tx.execute(sql, &refs).await?;
                tx.execute(
                    "SELECT pg_notify($1, $2)",
                    &[
                        &INVALIDATE_CHANNEL,
                        &serde_json::json!({"op": op}).to_string(),
                    ],
                )
                .await?;
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

/// Ends run `run_id`: its open holds charged in full, once.
async fn pg_end_run(shared: &Shared, run_id: String) -> Result<(), StoreError> {
    let mut client = shared.pool.get().await?;
    let tx = client.transaction().await?;
    let Some(row) = tx
        .query_opt(
            "SELECT connector, brand, day, reserved, ended FROM runs WHERE run_id = $1 FOR UPDATE",
            &[&run_id],
        )
        .await?
    else {
        return Err(StoreError::UnknownRun(run_id));
    };
    let (connector, brand, day, open, ended): (String, String, String, i64, bool) =
        (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
    if !ended && open > 0 {
        // Holds no call settled: charged in full, once.
        tx.execute(
            rules::INSERT_CHARGE.pg,
            &[
                &format!("{run_id}:end"),
                &run_id,
                &connector,
                &brand,
                &day,
                &open,
                &super::now_ms(),
            ],
        )
        .await?;
    }
    tx.execute(rules::END_RUN.pg, &[&super::now_ms(), &run_id])
        .await?;
    tx.commit().await?;
    Ok(())
}

/// What live run `run_id` has left (its per-run figure less what it
/// recorded and what is held), the run's row locked for the transaction
/// when `lock`; `None` if it ended or never started.
async fn pg_run_left(
    tx: &tokio_postgres::Transaction<'_>,
    run_id: &str,
    lock: bool,
) -> Result<Option<u64>, StoreError> {
    let sql = if lock {
        "SELECT per_run, reserved, ended FROM runs WHERE run_id = $1 FOR UPDATE"
    } else {
        "SELECT per_run, reserved, ended FROM runs WHERE run_id = $1"
    };
    let Some(row) = tx.query_opt(sql, &[&run_id]).await? else {
        return Ok(None);
    };
    let (per_run, reserved, ended): (i64, i64, bool) = (row.get(0), row.get(1), row.get(2));
    if ended {
        return Ok(None);
    }
    let spent: i64 = tx
        .query_one(rules::SPENT_IN_RUN.pg, &[&run_id])
        .await?
        .get(0);
    Ok(Some(super::to_u64((per_run - reserved - spent).max(0))?))
}

#[async_trait::async_trait]
impl ConnectionStore for PgStore {
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
        self.change_and_invalidate(
            rules::PUT_CONNECTION.pg,
            vec![
                owned(brand),
                owned(connector),
                Box::new(nonce),
                Box::new(ciphertext),
                Box::new(super::now_ms()),
            ],
            Invalidation::Connections,
        )
        .await?;
        Ok(())
    }

    async fn get_connection(
        &self,
        brand: &str,
        connector: &str,
        key: &[u8; 32],
    ) -> Result<Option<String>, StoreError> {
        let shared = self.shared.clone();
        let (b, c) = (pg_text(brand).into_owned(), pg_text(connector).into_owned());
        let row: Option<(Vec<u8>, Vec<u8>, bool)> = self
            .run(async move {
                let client = shared.pool.get().await?;
                let statement = client.prepare_cached(rules::SEALED_CONNECTION.pg).await?;
                Ok(client
                    .query_opt(&statement, &[&b, &c])
                    .await?
                    .map(|row| (row.get(0), row.get(1), row.get(2))))
            })
            .await?;
        match row {
            None | Some((_, _, true)) => Ok(None),
            Some((nonce, ciphertext, false)) => {
                super::sealed::open_connection(brand, connector, key, &nonce, &ciphertext).map(Some)
            }
        }
    }

    async fn disable_connection(&self, brand: &str, connector: &str) -> Result<bool, StoreError> {
        Ok(self
            .change_and_invalidate(
                rules::DISABLE_CONNECTION.pg,
                vec![Box::new(super::now_ms()), owned(brand), owned(connector)],
                Invalidation::Connections,
            )
            .await?
            == 1)
    }

    async fn share_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<(), StoreError> {
        self.change_and_invalidate(
            rules::SHARE_CONNECTION.pg,
            vec![
                owned(owner_brand),
                owned(connector),
                owned(with_brand),
                Box::new(super::now_ms()),
            ],
            Invalidation::Connections,
        )
        .await?;
        Ok(())
    }

    async fn unshare_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<bool, StoreError> {
        Ok(self
            .change_and_invalidate(
                rules::UNSHARE_CONNECTION.pg,
                vec![owned(owner_brand), owned(connector), owned(with_brand)],
                Invalidation::Connections,
            )
            .await?
            == 1)
    }

    async fn shared_with(
        &self,
        with_brand: &str,
        connector: &str,
    ) -> Result<Vec<String>, StoreError> {
        let shared = self.shared.clone();
        let (w, c) = (
            pg_text(with_brand).into_owned(),
            pg_text(connector).into_owned(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client.prepare_cached(rules::SHARED_WITH.pg).await?;
            Ok(client
                .query(&statement, &[&w, &c])
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })
        .await
    }
}

#[async_trait::async_trait]
impl ProfileStore for PgStore {
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
        self.change_and_invalidate(
            rules::SAVE_PROFILE.pg,
            vec![
                owned(brand),
                owned(&profile.name),
                owned(kind.as_str()),
                owned(&body),
                Box::new(super::now_ms()),
            ],
            Invalidation::Profiles,
        )
        .await?;
        Ok(())
    }

    async fn load_profile(
        &self,
        brand: &str,
        name: &str,
    ) -> Result<Option<SavedProfile>, StoreError> {
        let shared = self.shared.clone();
        let (b, n) = (pg_text(brand).into_owned(), pg_text(name).into_owned());
        let row: Option<(String, String)> = self
            .run(async move {
                let client = shared.pool.get().await?;
                Ok(client
                    .query_opt(rules::LOAD_PROFILE.pg, &[&b, &n])
                    .await?
                    .map(|r| (r.get(0), r.get(1))))
            })
            .await?;
        row.map(|(kind, body)| super::decode_profile(&kind, &body))
            .transpose()
    }

    async fn list_profiles(&self, brand: &str) -> Result<Vec<SavedProfile>, StoreError> {
        let shared = self.shared.clone();
        let b = pg_text(brand).into_owned();
        let rows: Vec<(String, String)> = self
            .run(async move {
                let client = shared.pool.get().await?;
                Ok(client
                    .query(rules::LIST_PROFILES.pg, &[&b])
                    .await?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect())
            })
            .await?;
        rows.iter()
            .map(|(kind, body)| super::decode_profile(kind, body))
            .collect()
    }

    async fn delete_profile(&self, brand: &str, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .change_and_invalidate(
                rules::DELETE_PROFILE.pg,
                vec![owned(brand), owned(name)],
                Invalidation::Profiles,
            )
            .await?
            == 1)
    }
}

fn capability_request_row(row: &tokio_postgres::Row) -> super::CapabilityRequest {
    let request: String = row.get(3);
    super::CapabilityRequest {
        id: row.get(0),
        session: row.get(1),
        brand: row.get(2),
        request: serde_json::from_str(&request).unwrap_or(serde_json::Value::Null),
        requested_at_ms: row.get(4),
        answer: row.get(5),
        answered_by: row.get(6),
        answered_at_ms: row.get(7),
    }
}

const CAPABILITY_COLUMNS: &str =
    "id, session, brand, request, requested_at_ms, answer, answered_by, answered_at_ms";

#[async_trait::async_trait]
impl super::CapabilityRequestStore for PgStore {
    async fn park_capability_request(
        &self,
        session: &str,
        brand: &str,
        request: &serde_json::Value,
    ) -> Result<i64, StoreError> {
        let shared = self.shared.clone();
        let (session, brand) = (pg_text(session).into_owned(), pg_text(brand).into_owned());
        let request = pg_text(&request.to_string()).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            let row = client
                .query_one(
                    "INSERT INTO capability_requests (session, brand, request, requested_at_ms) VALUES ($1, $2, $3, $4) RETURNING id",
                    &[&session, &brand, &request, &super::now_ms()],
                )
                .await?;
            Ok(row.get(0))
        }).await
    }

    async fn capability_requests(
        &self,
        session: Option<&str>,
        pending_only: bool,
    ) -> Result<Vec<super::CapabilityRequest>, StoreError> {
        let shared = self.shared.clone();
        let session = session.map(|s| pg_text(s).into_owned());
        self.run(async move {
            let client = shared.pool.get().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT {CAPABILITY_COLUMNS} FROM capability_requests
                         WHERE ($1::text IS NULL OR session = $1) AND (NOT $2 OR answer IS NULL) ORDER BY id"
                    ),
                    &[&session, &pending_only],
                )
                .await?;
            Ok(rows.iter().map(capability_request_row).collect())
        }).await
    }

    async fn answer_capability_request(
        &self,
        id: i64,
        answer: &str,
        by: &str,
    ) -> Result<super::Answered, StoreError> {
        let shared = self.shared.clone();
        let (answer, by) = (pg_text(answer).into_owned(), pg_text(by).into_owned());
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let Some(row) = tx
                .query_opt(
                    &format!("SELECT {CAPABILITY_COLUMNS} FROM capability_requests WHERE id = $1 FOR UPDATE"),
                    &[&id],
                )
                .await?
            else {
                return Ok(super::Answered::Unknown);
            };
            let mut found = capability_request_row(&row);
            if found.answer.is_some() {
                return Ok(super::Answered::Already(found));
            }
            let at = super::now_ms();
            tx.execute(
                rules::ANSWER_CAPABILITY_REQUEST.pg,
                &[&answer, &by, &at, &id],
            )
            .await?;
            tx.commit().await?;
            found.answer = Some(answer);
            found.answered_by = Some(by);
            found.answered_at_ms = Some(at);
            Ok(super::Answered::Now(found))
        }).await
    }
}

#[async_trait::async_trait]
impl ReviewStore for PgStore {
    async fn reviewed(
        &self,
        connector: &str,
        tool: &str,
    ) -> Result<Option<super::Reviewed>, StoreError> {
        let shared = self.shared.clone();
        let (c, t) = (pg_text(connector).into_owned(), pg_text(tool).into_owned());
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client.prepare_cached(rules::REVIEWED.pg).await?;
            Ok(client
                .query_opt(&statement, &[&c, &t])
                .await?
                .map(|r| super::Reviewed {
                    digest: r.get(0),
                    effect: r.get(1),
                    facts: r.get(2),
                }))
        })
        .await
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
        self.change_and_invalidate(
            rules::APPROVE_TOOL.pg,
            vec![
                owned(connector),
                owned(tool),
                owned(digest),
                owned(by),
                Box::new(super::now_ms()),
                Box::new(effect.map(str::to_string)),
                Box::new(facts.map(|f| pg_text(f).into_owned())),
            ],
            Invalidation::Reviews,
        )
        .await?;
        Ok(())
    }

    async fn reviewed_tools(&self, connector: &str) -> Result<Vec<String>, StoreError> {
        let shared = self.shared.clone();
        let c = pg_text(connector).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(rules::REVIEWED_TOOLS.pg, &[&c])
                .await?
                .iter()
                .map(|row| row.get(0))
                .collect())
        })
        .await
    }

    async fn pin_artifact(
        &self,
        reference: &str,
        digest: &str,
        by: &str,
    ) -> Result<String, StoreError> {
        let shared = self.shared.clone();
        let (r, d, b) = (
            pg_text(reference).into_owned(),
            pg_text(digest).into_owned(),
            pg_text(by).into_owned(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .execute(rules::PIN_ARTIFACT.pg, &[&r, &d, &b, &super::now_ms()])
                .await?;
            Ok(client
                .query_one(rules::PINNED_ARTIFACT.pg, &[&r])
                .await?
                .get(0))
        })
        .await
    }

    async fn pinned_artifact(&self, reference: &str) -> Result<Option<String>, StoreError> {
        let shared = self.shared.clone();
        let r = pg_text(reference).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query_opt(rules::PINNED_ARTIFACT.pg, &[&r])
                .await?
                .map(|row| row.get(0)))
        })
        .await
    }
}

const DEPLOYED_COLUMNS: &str =
    "name, settings, artifact, digest, revision, retired, changed_by, changed_at_ms";

fn deployed_row(row: &tokio_postgres::Row) -> super::StoredConnector {
    super::StoredConnector {
        name: row.get(0),
        settings: row.get(1),
        artifact: row.get(2),
        digest: row.get(3),
        revision: row.get(4),
        retired: row.get(5),
        changed_by: row.get(6),
        changed_at_ms: row.get(7),
    }
}

impl PgStore {
    async fn stored_connector(
        &self,
        name: &str,
    ) -> Result<Option<super::StoredConnector>, StoreError> {
        let shared = self.shared.clone();
        let name = pg_text(name).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query_opt(
                    &format!("SELECT {DEPLOYED_COLUMNS} FROM deployed_connectors WHERE name = $1"),
                    &[&name],
                )
                .await?
                .map(|row| deployed_row(&row)))
        })
        .await
    }
}

impl PgStore {
    /// Runs `change` on session component `name` (hosts read templates when
    /// a session names one: nobody is rung); the row after, `None` if
    /// nothing changed.
    async fn change_session_component(
        &self,
        name: &str,
        change: &'static str,
        params: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
    ) -> Result<Option<super::StoredConnector>, StoreError> {
        let shared = self.shared.clone();
        let name = pg_text(name).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                .iter()
                .map(|p| p.as_ref() as &(dyn tokio_postgres::types::ToSql + Sync))
                .collect();
            if client.execute(change, &refs).await? == 0 {
                return Ok(None);
            }
            Ok(client
                .query_opt(
                    &format!("SELECT {DEPLOYED_COLUMNS} FROM session_components WHERE name = $1"),
                    &[&name],
                )
                .await?
                .map(|row| deployed_row(&row)))
        })
        .await
    }
}

#[async_trait::async_trait]
impl super::DeploymentStore for PgStore {
    async fn put_connector(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<super::StoredConnector, StoreError> {
        self.change_and_invalidate(
            rules::DEPLOY_CONNECTOR.pg,
            vec![
                owned(name),
                owned(settings),
                owned(artifact),
                owned(digest),
                owned(by),
                Box::new(super::now_ms()),
            ],
            Invalidation::Connectors,
        )
        .await?;
        self.stored_connector(name).await?.ok_or_else(|| {
            StoreError::Corrupt(format!("connector `{name}` vanished as it was stored"))
        })
    }

    async fn retire_connector(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<super::StoredConnector>, StoreError> {
        let changed = self
            .change_and_invalidate(
                rules::RETIRE_CONNECTOR.pg,
                vec![owned(by), Box::new(super::now_ms()), owned(name)],
                Invalidation::Connectors,
            )
            .await?;
        if changed == 0 {
            return Ok(None);
        }
        self.stored_connector(name).await
    }

    async fn stored_connectors(&self) -> Result<Vec<super::StoredConnector>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(
                    &format!("SELECT {DEPLOYED_COLUMNS} FROM deployed_connectors ORDER BY name"),
                    &[],
                )
                .await?
                .iter()
                .map(deployed_row)
                .collect())
        })
        .await
    }

    async fn put_session_component(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<super::StoredConnector, StoreError> {
        self.change_session_component(
            name,
            rules::PUT_SESSION_COMPONENT.pg,
            vec![
                owned(name),
                owned(settings),
                owned(artifact),
                owned(digest),
                owned(by),
                Box::new(super::now_ms()),
            ],
        )
        .await?
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
        self.change_session_component(
            name,
            rules::DROP_SESSION_COMPONENT.pg,
            vec![owned(by), Box::new(super::now_ms()), owned(name)],
        )
        .await
    }

    async fn session_components(&self) -> Result<Vec<super::StoredConnector>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(rules::SESSION_COMPONENTS.pg, &[])
                .await?
                .iter()
                .map(deployed_row)
                .collect())
        })
        .await
    }
}

#[async_trait::async_trait]
impl SessionStore for PgStore {
    /// With several hosts, recovery closes only what hosts whose lease
    /// expired left open; live hosts' approvals, calls and runs stay.
    async fn recover_interrupted(&self, _at_ms: i64) -> Result<Recovered, StoreError> {
        self.recover_lost_hosts()
    }

    async fn release_lease(&self, _at_ms: i64) -> Result<Option<Recovered>, StoreError> {
        if self.shared.released.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let shared = self.shared.clone();
        self.run(async move { release(&shared).await }).await
    }

    fn lease_held(&self) -> bool {
        self.shared.lease_in_hand()
    }

    fn lease_generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    fn host(&self) -> Option<String> {
        Some(self.shared.id().to_string())
    }

    fn invalidations(&self) -> Option<broadcast::Receiver<Invalidation>> {
        Some(self.shared.invalidations.subscribe())
    }

    async fn check(&self) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            client.query_one("SELECT 1", &[]).await?;
            Ok(())
        })
        .await
    }
    async fn session_opened(
        &self,
        id: &str,
        brand: &str,
        view: &serde_json::Value,
        expires_at_ms: i64,
    ) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        let (id, brand, view) = (
            pg_text(id).into_owned(),
            pg_text(brand).into_owned(),
            view.to_string(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .execute(
                    "INSERT INTO sessions (id, host_id, brand, view, expires_at_ms, opened_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                    &[
                        &id,
                        &&*shared.id(),
                        &brand,
                        &view,
                        &expires_at_ms,
                        &super::now_ms(),
                    ],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn session_closed(&self, id: &str) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let changed = tx
                .execute(
                    "UPDATE sessions SET ended_at_ms = COALESCE(ended_at_ms, $2),
                            closed_at_ms = COALESCE(closed_at_ms, $2)
                     WHERE id = $1 AND closed_at_ms IS NULL",
                    &[&id, &super::now_ms()],
                )
                .await?;
            if changed > 0 {
                // Every other host holding it ends it too.
                let payload = serde_json::json!({"op": "session", "s": id}).to_string();
                tx.execute("SELECT pg_notify($1, $2)", &[&INVALIDATE_CHANNEL, &payload])
                    .await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn shared_session(&self, id: &str) -> Result<Option<super::SharedSession>, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .query_opt(
                    &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"),
                    &[&id],
                )
                .await?
                .as_ref()
                .map(shared_session)
                .transpose()
        })
        .await
    }

    async fn shared_sessions(&self) -> Result<Vec<super::SharedSession>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .query(
                    &format!(
                        "SELECT {SESSION_COLUMNS} FROM sessions s
                         WHERE closed_at_ms IS NULL AND expires_at_ms > $1
                         ORDER BY id"
                    ),
                    &[&super::now_ms()],
                )
                .await?
                .iter()
                .map(shared_session)
                .collect()
        })
        .await
    }

    fn shares_sessions(&self) -> bool {
        true
    }

    async fn keep_session(
        &self,
        id: &str,
        record: &super::SessionRecord,
    ) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        let record = serde_json::to_string(record)
            .map_err(|e| StoreError::Corrupt(format!("session record: {e}")))?;
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .execute(
                    "UPDATE sessions SET record = $2 WHERE id = $1",
                    &[&id, &record],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn kept_session(&self, id: &str) -> Result<Option<super::KeptSession>, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            match client
                .query_opt(
                    &format!("SELECT {KEPT_COLUMNS} FROM sessions WHERE id = $1"),
                    &[&id, &super::now_ms()],
                )
                .await?
            {
                Some(row) => kept_session(&row),
                None => Ok(None),
            }
        })
        .await
    }

    async fn take_up_session(&self, id: &str) -> Result<bool, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let me = shared.id();
            let previous: Option<String> = tx
                .query_opt(
                    "SELECT host_id FROM sessions WHERE id = $1 AND ended_at_ms IS NULL
                       AND closed_at_ms IS NULL AND expires_at_ms > $2 FOR UPDATE",
                    &[&id, &super::now_ms()],
                )
                .await?
                .map(|row| row.get(0));
            let Some(previous) = previous else {
                return Ok(false);
            };
            if previous != *me {
                tx.execute(
                    "UPDATE sessions SET host_id = $2 WHERE id = $1",
                    &[&id, &&*me],
                )
                .await?;
                // The host that served it lets go when it hears this.
                let payload = serde_json::json!({"op": "session", "s": id}).to_string();
                tx.execute("SELECT pg_notify($1, $2)", &[&INVALIDATE_CHANNEL, &payload])
                    .await?;
            }
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    async fn session_take_effect(&self, id: &str, max: Option<u32>) -> Result<bool, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        let max = max.map_or(i32::MAX, |m| i32::try_from(m).unwrap_or(i32::MAX));
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .execute(
                    "UPDATE sessions SET effects = effects + 1 WHERE id = $1 AND effects < $2",
                    &[&id, &max],
                )
                .await?
                == 1)
        })
        .await
    }

    async fn session_take_call(&self, id: &str, max: u32) -> Result<bool, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        let max = i32::try_from(max).unwrap_or(i32::MAX);
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .execute(
                    "UPDATE sessions SET calls = calls + 1 WHERE id = $1 AND calls < $2",
                    &[&id, &max],
                )
                .await?
                == 1)
        })
        .await
    }

    async fn session_end_delegation(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.change_session(
            id,
            "UPDATE sessions SET delegation_ended = true WHERE id = $1 AND NOT delegation_ended",
            None,
        ).await? == 1)
    }

    async fn session_count_refusals(
        &self,
        id: &str,
        keys: &[String],
    ) -> Result<Vec<u32>, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        let keys: Vec<String> = keys.iter().map(|k| pg_text(k).into_owned()).collect();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let mut counts = Vec::with_capacity(keys.len());
            for key in &keys {
                let count: i32 = tx
                    .query_one(
                        "INSERT INTO session_refusals (session, consequence, count) VALUES ($1, $2, 1)
                         ON CONFLICT (session, consequence) DO UPDATE SET count = session_refusals.count + 1
                         RETURNING count",
                        &[&id, key],
                    )
                    .await?
                    .get(0);
                counts.push(u32::try_from(count).unwrap_or(0));
            }
            tx.commit().await?;
            Ok(counts)
        }).await
    }

    async fn session_set_paused(&self, id: &str, paused: bool) -> Result<(), StoreError> {
        if paused {
            self.change_session(id, "UPDATE sessions SET paused = true WHERE id = $1", None)
                .await?;
        } else {
            // Resumed: its refusals count afresh on every host.
            self.change_session(
                id,
                "WITH cleared AS (DELETE FROM session_refusals WHERE session = $1)
                 UPDATE sessions SET paused = false WHERE id = $1",
                None,
            )
            .await?;
        }
        Ok(())
    }

    async fn session_withdraw(&self, id: &str, connector: &str) -> Result<(), StoreError> {
        self.change_session(
            id,
            "UPDATE sessions SET withdrawn = (
                 SELECT COALESCE(json_agg(DISTINCT c ORDER BY c), '[]'::json)::text
                 FROM (SELECT json_array_elements_text(withdrawn::json) AS c UNION SELECT $2::text) w)
             WHERE id = $1",
            Some(connector.to_string()),
        ).await?;
        Ok(())
    }

    async fn request_session_end(
        &self,
        id: &str,
    ) -> Result<Option<super::SharedSession>, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let row = tx
                .query_opt(
                    &format!(
                        "UPDATE sessions SET ended_at_ms = COALESCE(ended_at_ms, $2)
                         WHERE id = $1 RETURNING {SESSION_COLUMNS}"
                    ),
                    &[&id, &super::now_ms()],
                )
                .await?;
            if row.is_some() {
                let payload = serde_json::json!({"op": "session", "s": id}).to_string();
                tx.execute("SELECT pg_notify($1, $2)", &[&INVALIDATE_CHANNEL, &payload])
                    .await?;
            }
            tx.commit().await?;
            row.as_ref().map(shared_session).transpose()
        })
        .await
    }
}

const SESSION_COLUMNS: &str =
    "id, host_id, view, ended_at_ms IS NOT NULL, closed_at_ms IS NOT NULL";

const KEPT_COLUMNS: &str =
    "id, brand, host_id, record, paused, withdrawn, effects, delegation_ended,
     ended_at_ms IS NOT NULL OR closed_at_ms IS NOT NULL OR expires_at_ms <= $2, calls";

fn kept_session(row: &tokio_postgres::Row) -> Result<Option<super::KeptSession>, StoreError> {
    let Some(record): Option<String> = row.get(3) else {
        return Ok(None);
    };
    let withdrawn: String = row.get(5);
    let effects: i32 = row.get(6);
    Ok(Some(super::KeptSession {
        id: row.get(0),
        brand: row.get(1),
        host_id: row.get(2),
        record: serde_json::from_str(&record)
            .map_err(|e| StoreError::Corrupt(format!("stored session record: {e}")))?,
        state: super::SharedStateNow {
            paused: row.get(4),
            withdrawn: serde_json::from_str(&withdrawn)
                .map_err(|e| StoreError::Corrupt(format!("stored withdrawals: {e}")))?,
            effects: u32::try_from(effects).unwrap_or(0),
            delegation_ended: row.get(7),
            calls: u32::try_from(row.get::<_, i32>(9)).unwrap_or(0),
        },
        ended: row.get(8),
    }))
}

impl PgStore {
    /// Runs `sql` on session `id` and rings every host about it (so a host
    /// serving it takes in what changed).
    async fn change_session(
        &self,
        id: &str,
        sql: &'static str,
        more: Option<String>,
    ) -> Result<u64, StoreError> {
        let shared = self.shared.clone();
        let id = pg_text(id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let changed = match &more {
                Some(more) => tx.execute(sql, &[&id, more]).await?,
                None => tx.execute(sql, &[&id]).await?,
            };
            let payload = serde_json::json!({"op": "session", "s": id}).to_string();
            tx.execute("SELECT pg_notify($1, $2)", &[&INVALIDATE_CHANNEL, &payload])
                .await?;
            tx.commit().await?;
            Ok(changed)
        })
        .await
    }
}

fn shared_session(row: &tokio_postgres::Row) -> Result<super::SharedSession, StoreError> {
    let view: String = row.get(2);
    Ok(super::SharedSession {
        id: row.get(0),
        host_id: row.get(1),
        view: serde_json::from_str(&view)
            .map_err(|e| StoreError::Corrupt(format!("stored session view: {e}")))?,
        ended: row.get(3),
        closed: row.get(4),
    })
}

#[async_trait::async_trait]
impl super::InventoryStore for PgStore {
    async fn stored_connections(&self) -> Result<Vec<super::StoredConnection>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            let mut out: Vec<super::StoredConnection> = client
                .query(rules::ALL_CONNECTIONS.pg, &[])
                .await?
                .iter()
                .map(|r| super::StoredConnection {
                    brand: r.get(0),
                    connection: r.get(1),
                    disabled: r.get(2),
                    updated_at_ms: r.get(3),
                    shared_with: Vec::new(),
                })
                .collect();
            for r in client.query(rules::ALL_SHARES.pg, &[]).await? {
                let (owner, connection): (String, String) = (r.get(0), r.get(1));
                if let Some(c) = out
                    .iter_mut()
                    .find(|c| c.brand == owner && c.connection == connection)
                {
                    c.shared_with.push(r.get(2));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn all_profiles(&self) -> Result<Vec<(String, SavedProfile)>, StoreError> {
        let shared = self.shared.clone();
        let rows: Vec<(String, String, String)> = self
            .run(async move {
                let client = shared.pool.get().await?;
                Ok(client
                    .query(rules::ALL_PROFILES.pg, &[])
                    .await?
                    .iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2)))
                    .collect())
            })
            .await?;
        rows.into_iter()
            .map(|(brand, kind, body)| Ok((brand, super::decode_profile(&kind, &body)?)))
            .collect()
    }

    async fn stored_reviews(&self) -> Result<Vec<super::StoredReview>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(rules::ALL_REVIEWS.pg, &[])
                .await?
                .iter()
                .map(|r| super::StoredReview {
                    connector: r.get(0),
                    tool: r.get(1),
                    digest: r.get(2),
                    approved_by: r.get(3),
                    approved_at_ms: r.get(4),
                    effect: r.get(5),
                })
                .collect())
        })
        .await
    }

    async fn all_pending(&self) -> Result<Vec<Approval>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            let sql = format!(
                "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE state = 'pending' ORDER BY id"
            );
            client
                .query(&sql, &[])
                .await?
                .iter()
                .map(approval_row)
                .collect()
        })
        .await
    }

    async fn last_executed(
        &self,
        brand: &str,
    ) -> Result<std::collections::BTreeMap<String, i64>, StoreError> {
        let shared = self.shared.clone();
        let brand = pg_text(brand).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(rules::LAST_EXECUTED.pg, &[&brand])
                .await?
                .iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
                .collect())
        })
        .await
    }
}
