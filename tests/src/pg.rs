//! Real, throwaway PostgreSQL databases for integration tests, driven with
//! PostgreSQL's own binaries (no client crate): one cluster per test process
//! under `/tmp/scout-pg-<pid>-<rand>`, stopped and removed by a detached
//! watcher once the process exits, however it exits; or, with
//! `SCOUT_TEST_PG` set, databases made on that external server instead.
//! [`tls_server`] starts a second cluster of the same kind that takes TCP
//! connections over TLS only, on 127.0.0.2, with a certificate of its own.

use std::collections::hash_map::RandomState;
use std::ffi::OsStr;
use std::hash::{BuildHasher, Hasher};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The role the self-started cluster is initialised with (trust auth).
const USER: &str = "scout";
/// The port the cluster's unix socket is named after (`.s.PGSQL.5432`); it
/// listens on no TCP address. Passed explicitly so `PGPORT` cannot move it.
const PORT: u16 = 5432;
/// The only address the [`tls_server`] listens on: loopback, but not one
/// the host counts as this machine, so it is reached over TLS.
pub const TLS_HOST: &str = "127.0.0.2";
/// Longest database name made (PostgreSQL's limit is 63 bytes).
const MAX_NAME: usize = 60;

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
static TLS_SERVER: OnceLock<Result<TlsServer, String>> = OnceLock::new();
static COUNTER: AtomicU64 = AtomicU64::new(1);
/// Whether this process's cluster fsyncs (see [`durable`]).
static DURABLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes the cluster this process starts fsync its commits, as a
/// deployment's does (the tests' cluster does not: nothing there must
/// survive a power cut). For benchmarks; call it before the first
/// [`database`]. Nothing changes for an external `SCOUT_TEST_PG` server.
pub fn durable() {
    DURABLE.store(true, Ordering::SeqCst);
}

/// One empty database made for one test.
#[derive(Debug, Clone)]
pub struct PgDatabase {
    name: String,
    url: String,
    conninfo: String,
    socket_dir: PathBuf,
}

impl PgDatabase {
    /// A libpq-style URL for this database that tokio-postgres accepts:
    /// `postgresql://scout@/<name>?host=<socket dir>` on the self-started
    /// cluster, or `SCOUT_TEST_PG` with its path replaced by `/<name>`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The same in key-value form: `host=<socket dir> port=5432 user=scout
    /// dbname=<name>` on the self-started cluster; the URL on an external
    /// server.
    pub fn conninfo(&self) -> String {
        self.conninfo.clone()
    }

    /// The database's name: `t_<n>_<sanitised test name>` (lowercase ASCII
    /// letters, digits and `_`, at most 60 bytes).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The directory holding the cluster's unix socket; empty when
    /// `SCOUT_TEST_PG` names the server.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// Runs `sql` with `psql -X -A -t -v ON_ERROR_STOP=1` on this database and
    /// returns its output, trimmed; panics with psql's stderr if it fails.
    /// (On the process's shared cluster: for an [`OwnServer`]'s database,
    /// use [`OwnServer::psql`].)
    pub fn psql(&self, sql: &str) -> String {
        cluster()
            .as_ref()
            .expect("a database exists, so its cluster started")
            .psql(&self.name, sql)
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// A fresh, empty database for one test, on the cluster this test process
/// shares; panics if none can be had (see [`available`]).
pub fn database(name: &str) -> PgDatabase {
    let cluster = match cluster() {
        Ok(cluster) => cluster,
        Err(e) => panic!("{e}"),
    };
    match cluster.create(name) {
        Ok(database) => database,
        Err(e) => panic!("{e}"),
    }
}

/// The TLS-only server this process shares (see [`TlsServer`]), started on
/// first use; `None`, with one line on stderr, when PostgreSQL's server
/// binaries or `openssl` are absent and `CI` is not `true`. On CI, and for
/// any other failure, it panics. `SCOUT_TEST_PG` plays no part: this server
/// is always one this process starts.
pub fn tls_server() -> Option<TlsServer> {
    if let Some(why) = tls_absent() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true, but the PostgreSQL TLS server cannot be had: {why}");
        }
        eprintln!("scout-tests: skipped a PostgreSQL TLS test: {why}");
        return None;
    }
    match TLS_SERVER.get_or_init(start_tls) {
        Ok(server) => Some(server.clone()),
        Err(e) => panic!("{e}"),
    }
}

/// A second throwaway cluster of this process, in a temp dir of its own
/// with the same cleanup as the first, that takes TCP connections on
/// [`TLS_HOST`] only, and only over TLS (`hostssl` is its one TCP line of
/// pg_hba.conf; trust auth). Its certificate, for `IP:127.0.0.2`, is signed
/// by a throwaway authority made with `openssl` at start ([`Self::ca_file`]);
/// [`Self::other_ca_file`] is an unrelated one, for a client that must
/// refuse it. Its unix socket (trust) is how databases are made and
/// inspected.
#[derive(Clone)]
pub struct TlsServer {
    cluster: Cluster,
    port: u16,
    ca_file: PathBuf,
    other_ca_file: PathBuf,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("dir", &self.cluster.dir())
            .field("port", &self.port)
            .field("ca_file", &self.ca_file)
            .field("other_ca_file", &self.other_ca_file)
            .finish()
    }
}

impl TlsServer {
    /// `postgresql://scout@127.0.0.2:<port>/<dbname>`: no `sslmode`, so
    /// whether TLS is used is the client's choice (the server takes nothing
    /// else).
    pub fn url(&self, dbname: &str) -> String {
        format!("postgresql://{USER}@{TLS_HOST}:{}/{dbname}", self.port)
    }

    /// The TCP port it listens on (on [`TLS_HOST`] only).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// PEM of the authority that signed the server's certificate.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// PEM of another authority, which signed nothing the server presents.
    pub fn other_ca_file(&self) -> &Path {
        &self.other_ca_file
    }

    /// A fresh, empty database (made over the unix socket); its name, as
    /// [`PgDatabase::name`] makes them.
    pub fn database(&self, name: &str) -> String {
        match self.cluster.create(name) {
            Ok(database) => database.name,
            Err(e) => panic!("{e}"),
        }
    }

    /// Runs `sql` on database `db` over the unix socket, as
    /// [`PgDatabase::psql`] does.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        self.cluster.psql(db, sql).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// A cluster of one test's own, on a unix socket in its own temp dir,
/// which the test may stop and start again (a database outage or a
/// failover) without touching any other test's databases. Removed with
/// the others once this process exits.
pub struct OwnServer {
    cluster: Cluster,
    pg_ctl: PathBuf,
    options: String,
}

impl OwnServer {
    /// A fresh, empty database on it.
    pub fn database(&self, name: &str) -> PgDatabase {
        self.cluster.create(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs `sql` on database `db`, as [`PgDatabase::psql`] does.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        self.cluster.psql(db, sql).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`): every
    /// connection is cut, as when a database host fails.
    pub fn stop(&self) {
        let mut command = self.cluster.command(&self.pg_ctl);
        command
            .arg("-D")
            .arg(self.cluster.dir().join("data"))
            .args(["-m", "immediate", "-w", "stop"]);
        run(&mut command).unwrap_or_else(|e| panic!("pg_ctl stop: {e}"));
    }

    /// Starts it again, and waits until it takes connections.
    pub fn start(&self) {
        self.cluster
            .start(&self.pg_ctl, &self.options)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A new [`OwnServer`], started; `None`, with one line on stderr, when
/// PostgreSQL's server binaries are absent and `CI` is not `true`.
pub fn own_server() -> Option<OwnServer> {
    let why = "no PostgreSQL server binaries: found no initdb (neither in `pg_config --bindir` nor on PATH); install them (`apt-get install postgresql`)";
    if binary("initdb").is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true, but a PostgreSQL server cannot be started: {why}");
        }
        eprintln!("scout-tests: skipped a PostgreSQL outage test: {why}");
        return None;
    }
    let (cluster, pg_ctl) = init_local(PORT).unwrap_or_else(|e| panic!("{e}"));
    let options = format!(
        "-c listen_addresses='' -k {} -c port={PORT} -c fsync=off -c max_connections=200",
        cluster.dir().display()
    );
    cluster
        .start(&pg_ctl, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    Some(OwnServer {
        cluster,
        pg_ctl,
        options,
    })
}

/// Like [`database`], but `None`, with one line on stderr, when PostgreSQL
/// is simply absent (no `SCOUT_TEST_PG`, no `initdb`) and `CI` is not
/// `true`; on CI, and for any other failure, it panics.
pub fn database_or_skip(name: &str) -> Option<PgDatabase> {
    if let Some(why) = absent()
        && std::env::var("CI").as_deref() != Ok("true")
    {
        eprintln!("scout-tests: skipped the PostgreSQL test {name:?}: {why}");
        return None;
    }
    Some(database(name))
}

/// Whether a database can be had: starts this process's cluster (or checks
/// for `psql` when `SCOUT_TEST_PG` is set) if that has not happened yet.
pub fn available() -> Result<(), String> {
    cluster().as_ref().map(|_| ()).map_err(Clone::clone)
}

/// Where databases are made.
#[derive(Clone)]
enum Server {
    /// A cluster this process started, in `dir` (socket in `dir`, named
    /// after `port`; data in `dir/data`, log in `dir/log`).
    Local { dir: PathBuf, port: u16 },
    /// `SCOUT_TEST_PG`'s server.
    External { base: String },
}

/// The server this process's databases live on, and how to reach it.
#[derive(Clone)]
struct Cluster {
    server: Server,
    psql: PathBuf,
    createdb: Option<PathBuf>,
    /// Run the server-side binaries (and psql) as `postgres`: this process
    /// is root, and initdb refuses to run as root.
    as_postgres: bool,
}

impl Cluster {
    /// A command running `binary`, through `runuser -u postgres --` as root.
    fn command(&self, binary: &Path) -> Command {
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(binary);
            command
        } else {
            Command::new(binary)
        };
        if let Server::Local { dir, .. } = &self.server {
            // Somewhere `postgres` may enter, not the test's working directory.
            command.current_dir(dir);
        }
        command
    }

    /// A local cluster's directory; empty for an external server.
    fn dir(&self) -> &Path {
        match &self.server {
            Server::Local { dir, .. } => dir,
            Server::External { .. } => Path::new(""),
        }
    }

    /// Runs `sql` with `psql -X -A -t -v ON_ERROR_STOP=1` on `database` (over
    /// the unix socket of a local cluster) and returns its output, trimmed.
    fn psql(&self, database: &str, sql: &str) -> Result<String, String> {
        let mut command = self.command(&self.psql);
        command.args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"]);
        match &self.server {
            Server::Local { dir, port } => {
                command.arg("-h").arg(dir).args([
                    "-p",
                    &port.to_string(),
                    "-U",
                    USER,
                    "-d",
                    database,
                ]);
            }
            Server::External { base } => {
                command.arg("-d").arg(replace_url_database(base, database));
            }
        }
        command.arg("-c").arg(sql);
        run(&mut command)
            .map(|stdout| stdout.trim().to_owned())
            .map_err(|e| format!("psql on database {database} failed running {sql:?}: {e}"))
    }

    fn create(&self, test_name: &str) -> Result<PgDatabase, String> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        match &self.server {
            Server::Local { dir, port } => {
                let name = database_name(&n.to_string(), test_name);
                let createdb = self
                    .createdb
                    .as_ref()
                    .expect("a local cluster has createdb");
                let mut command = self.command(createdb);
                command
                    .arg("-h")
                    .arg(dir)
                    .args(["-p", &port.to_string(), "-U", USER, &name]);
                run(&mut command).map_err(|e| format!("createdb {name} failed: {e}"))?;
                let dir_text = dir.to_str().expect("the socket dir is ASCII");
                // The default port needs no mention (the URL keeps its shape).
                let url_port = if *port == PORT {
                    String::new()
                } else {
                    format!("&port={port}")
                };
                Ok(PgDatabase {
                    url: format!("postgresql://{USER}@/{name}?host={dir_text}{url_port}"),
                    conninfo: format!("host={dir_text} port={port} user={USER} dbname={name}"),
                    socket_dir: dir.clone(),
                    name,
                })
            }
            Server::External { base } => {
                // The pid keeps test processes sharing one server apart; a
                // database left by an earlier process with the same pid goes.
                let name = database_name(&format!("{}_{n}", std::process::id()), test_name);
                let sql = format!("DROP DATABASE IF EXISTS {name}");
                let mut command = self.command(&self.psql);
                command.args(["-X", "-v", "ON_ERROR_STOP=1", "-d", base, "-c", &sql]);
                run(&mut command).map_err(|e| format!("{sql} on SCOUT_TEST_PG failed: {e}"))?;
                let sql = format!("CREATE DATABASE {name}");
                let mut command = self.command(&self.psql);
                command.args(["-X", "-v", "ON_ERROR_STOP=1", "-d", base, "-c", &sql]);
                run(&mut command).map_err(|e| format!("{sql} on SCOUT_TEST_PG failed: {e}"))?;
                let url = replace_url_database(base, &name);
                Ok(PgDatabase {
                    conninfo: url.clone(),
                    url,
                    socket_dir: PathBuf::new(),
                    name,
                })
            }
        }
    }
}

/// `t_<n>_<name>`: lowercase ASCII letters, digits and `_`, at most 60 bytes.
fn database_name(n: &str, test_name: &str) -> String {
    let mut name = format!("t_{n}");
    let sanitised: String = test_name
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '_',
        })
        .collect();
    if !sanitised.is_empty() {
        name.push('_');
        name.push_str(&sanitised);
    }
    name.truncate(MAX_NAME);
    name
}

/// `base` (`scheme://authority/path?query`) with its path replaced by
/// `/<database>`; the query, if any, stays.
fn replace_url_database(base: &str, database: &str) -> String {
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let rest = &base[after_scheme..];
    let authority_end = rest
        .find(['/', '?'])
        .map_or(base.len(), |i| after_scheme + i);
    let query = base[authority_end..]
        .find('?')
        .map_or("", |i| &base[authority_end + i..]);
    format!("{}/{database}{query}", &base[..authority_end])
}

fn cluster() -> &'static Result<Cluster, String> {
    CLUSTER.get_or_init(|| {
        if let Ok(base) = std::env::var("SCOUT_TEST_PG") {
            return external(base);
        }
        start_local()
    })
}

/// Why PostgreSQL is absent, if it is: neither `SCOUT_TEST_PG` nor `initdb`.
fn absent() -> Option<String> {
    if std::env::var_os("SCOUT_TEST_PG").is_some() || binary("initdb").is_some() {
        return None;
    }
    Some(
        "no PostgreSQL: found no initdb (neither in `pg_config --bindir` nor on PATH); \
         install it (`apt-get install postgresql`) or set SCOUT_TEST_PG to a server's URL \
         (e.g. postgresql://user:pw@127.0.0.1:5432/postgres)"
            .to_owned(),
    )
}

fn external(base: String) -> Result<Cluster, String> {
    let psql = binary("psql").ok_or(
        "SCOUT_TEST_PG is set, but psql was not found (neither in `pg_config --bindir` nor on \
         PATH): install it (`apt-get install postgresql-client`)",
    )?;
    let mut command = Command::new(&psql);
    command.args([
        "-X",
        "-A",
        "-t",
        "-v",
        "ON_ERROR_STOP=1",
        "-d",
        &base,
        "-c",
        "SELECT 1",
    ]);
    run(&mut command).map_err(|e| format!("SCOUT_TEST_PG's server cannot be reached: {e}"))?;
    // After this process exits, its databases (`t_<pid>_...`) go.
    let script = r#"while kill -0 "$1" 2>/dev/null; do sleep 1; done
"$3" -X -A -t -d "$2" -c "SELECT datname FROM pg_database WHERE datname LIKE 't\_$1\_%'" |
while read -r d; do "$3" -X -q -d "$2" -c "DROP DATABASE IF EXISTS $d"; done"#;
    spawn_watcher(script, &[OsStr::new(&base), psql.as_os_str()])?;
    Ok(Cluster {
        server: Server::External { base },
        psql,
        createdb: None,
        as_postgres: false,
    })
}

fn start_local() -> Result<Cluster, String> {
    let (cluster, pg_ctl) = init_local(PORT)?;
    let options = format!(
        "-c listen_addresses='' -k {} -c port={PORT} -c fsync={} -c max_connections=200",
        cluster.dir().display(),
        if DURABLE.load(Ordering::SeqCst) {
            "on"
        } else {
            "off"
        }
    );
    cluster.start(&pg_ctl, &options)?;
    Ok(cluster)
}

/// A new cluster, initialised but not started: its temp dir (owned by
/// `postgres` when this process is root), the watcher that stops it and
/// removes the dir once this process exits, and `initdb` run in `dir/data`
/// (trust auth, role [`USER`]). Returns it with `pg_ctl`.
fn init_local(port: u16) -> Result<(Cluster, PathBuf), String> {
    if let Some(why) = absent() {
        return Err(why);
    }
    let found = |name: &str| binary(name).ok_or(format!("found initdb but no {name}"));
    let initdb = found("initdb")?;
    let pg_ctl = found("pg_ctl")?;
    let createdb = found("createdb")?;
    let psql = found("psql")?;
    let as_postgres = effective_uid_is_root();

    let dir = make_temp_dir()?;
    let data = dir.join("data");
    if as_postgres {
        let uid = id(&["-u", "postgres"])?;
        let gid = id(&["-g", "postgres"])?;
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
            .map_err(|e| format!("chown {} to postgres: {e}", dir.display()))?;
    }
    // Before anything is in the dir, so that whatever gets there goes too.
    let script = if as_postgres {
        r#"while kill -0 "$1" 2>/dev/null; do sleep 1; done
runuser -u postgres -- "$3" -D "$2/data" -m immediate stop
rm -rf "$2""#
    } else {
        r#"while kill -0 "$1" 2>/dev/null; do sleep 1; done
"$3" -D "$2/data" -m immediate stop
rm -rf "$2""#
    };
    spawn_watcher(script, &[dir.as_os_str(), pg_ctl.as_os_str()])?;

    let cluster = Cluster {
        server: Server::Local { dir, port },
        psql,
        createdb: Some(createdb),
        as_postgres,
    };
    let mut command = cluster.command(&initdb);
    command.arg("-D").arg(&data).args([
        "-A",
        "trust",
        "-U",
        USER,
        "--no-sync",
        "-E",
        "UTF8",
        "--locale=C",
    ]);
    run(&mut command).map_err(|e| format!("initdb failed: {e}"))?;
    Ok((cluster, pg_ctl))
}

impl Cluster {
    /// `pg_ctl start -w` of a local cluster with the server `options`
    /// (which name its port and socket dir); its log in the error if it
    /// does not start.
    fn start(&self, pg_ctl: &Path, options: &str) -> Result<(), String> {
        let dir = self.dir();
        let log = dir.join("log");
        let mut command = self.command(pg_ctl);
        command
            .arg("-D")
            .arg(dir.join("data"))
            .arg("-l")
            .arg(&log)
            .args(["-w", "-o", options, "start"])
            // The postmaster stays out of the terminal's process group (Ctrl-C).
            .process_group(0);
        if let Err(e) = run(&mut command) {
            let log_text = std::fs::read_to_string(&log)
                .unwrap_or_else(|read| format!("(could not read {}: {read})", log.display()));
            return Err(format!(
                "the PostgreSQL cluster in {} did not start: {e}\n--- {} ---\n{log_text}",
                dir.display(),
                log.display()
            ));
        }
        Ok(())
    }
}

/// Why the [`tls_server`] cannot be had, if it cannot: no server binaries
/// (`SCOUT_TEST_PG` does not count) or no `openssl`.
fn tls_absent() -> Option<String> {
    if binary("initdb").is_none() {
        return Some(
            "no PostgreSQL server binaries: found no initdb (neither in `pg_config --bindir` \
             nor on PATH); install them (`apt-get install postgresql`)"
                .to_owned(),
        );
    }
    if binary("openssl").is_none() {
        return Some(
            "no openssl on PATH to make the TLS server's certificates; install it \
             (`apt-get install openssl`)"
                .to_owned(),
        );
    }
    None
}

/// The `openssl` configuration the TLS server's certificates are made
/// with: no system defaults, only these extensions.
const OPENSSL_CONFIG: &str = "[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.2
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
";

fn start_tls() -> Result<TlsServer, String> {
    let openssl = binary("openssl").ok_or("no openssl on PATH")?;
    // The port is set once the server has one (see below).
    let (mut cluster, pg_ctl) = init_local(0)?;
    let dir = cluster.dir().to_owned();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    };
    write("openssl.cnf", OPENSSL_CONFIG)?;
    // Run as the server's user (in `dir`): the key is the server's own.
    let openssl_step = |args: &[&str]| {
        let mut command = cluster.command(&openssl);
        command.args(args);
        run(&mut command)
            .map(drop)
            .map_err(|e| format!("making the TLS server's certificates: {e}"))
    };
    let new_key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    for (name, subject) in [
        ("ca", "/CN=Scout test CA"),
        ("other_ca", "/CN=Scout unrelated test CA"),
    ] {
        let (key, cert) = (format!("{name}.key"), format!("{name}.crt"));
        let mut args = vec![
            "req",
            "-x509",
            "-config",
            "openssl.cnf",
            "-extensions",
            "ca",
        ];
        args.extend(new_key);
        args.extend([
            "-keyout", &key, "-out", &cert, "-days", "7", "-subj", subject,
        ]);
        openssl_step(&args)?;
    }
    let mut args = vec!["req", "-new", "-config", "openssl.cnf"];
    args.extend(new_key);
    args.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.2",
    ]);
    openssl_step(&args)?;
    openssl_step(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-CAserial",
        "ca.srl",
        "-out",
        "server.crt",
        "-days",
        "7",
        "-extfile",
        "openssl.cnf",
        "-extensions",
        "server",
    ])?;
    // PostgreSQL refuses a key others may read.
    {
        use std::os::unix::fs::PermissionsExt as _;
        let key = dir.join("server.key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("chmod 0600 {}: {e}", key.display()))?;
    }
    // Only TLS over TCP; the unix socket for making and inspecting databases.
    // A client of 127.0.0.2 speaks from 127.0.0.1 (the kernel picks lo's
    // primary address), and pg_hba.conf matches the client's address: so the
    // whole loopback net, which only reaches the server on 127.0.0.2.
    write(
        "data/pg_hba.conf",
        "local all all trust\nhostssl all all 127.0.0.0/8 trust\n",
    )?;

    // A free port is picked by binding it and letting go; another process
    // may take it in between, so a start that could not bind tries again.
    let mut last_error = String::new();
    for _ in 0..5 {
        let port = std::net::TcpListener::bind((TLS_HOST, 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("no free port on {TLS_HOST}: {e}"))?
            .port();
        let options = format!(
            "-c listen_addresses={TLS_HOST} -k {dir} -c port={port} -c fsync=off \
             -c max_connections=100 -c ssl=on -c ssl_cert_file={dir}/server.crt \
             -c ssl_key_file={dir}/server.key",
            dir = dir.display()
        );
        match cluster.start(&pg_ctl, &options) {
            Ok(()) => {
                cluster.server = Server::Local {
                    dir: dir.clone(),
                    port,
                };
                let ssl = cluster.psql("postgres", "SHOW ssl")?;
                if ssl != "on" {
                    return Err(format!(
                        "the PostgreSQL TLS server in {} has ssl = {ssl:?}",
                        dir.display()
                    ));
                }
                return Ok(TlsServer {
                    cluster,
                    port,
                    ca_file: dir.join("ca.crt"),
                    other_ca_file: dir.join("other_ca.crt"),
                });
            }
            Err(e) if e.contains("could not bind") => last_error = e,
            Err(e) => return Err(e),
        }
    }
    Err(last_error)
}

/// A detached `sh -c script` (its own process group, no stdio) whose `$1` is
/// this process's pid and `$2`... are `args`: it waits for this process to
/// exit, then cleans up. Paths go in as parameters: nothing to quote.
fn spawn_watcher(script: &str, args: &[&OsStr]) -> Result<(), String> {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("scout-pg-watcher")
        .arg(std::process::id().to_string())
        .args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map(drop)
        .map_err(|e| format!("could not spawn the cleanup watcher: {e}"))
}

/// `/tmp/scout-pg-<pid>-<rand>`: short, since the socket path in it must
/// stay under 107 bytes.
fn make_temp_dir() -> Result<PathBuf, String> {
    let mut last_error = String::new();
    for _ in 0..16 {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let rand = hasher.finish() as u32;
        let dir = PathBuf::from(format!("/tmp/scout-pg-{}-{rand:08x}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => last_error = format!("{}: {e}", dir.display()),
        }
    }
    Err(format!(
        "could not make the cluster's temp dir: {last_error}"
    ))
}

/// A PostgreSQL binary: in `pg_config --bindir` (Debian keeps them off
/// PATH), else on PATH.
fn binary(name: &str) -> Option<PathBuf> {
    static BINDIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    let bindir = BINDIR.get_or_init(|| {
        let output = Command::new("pg_config")
            .arg("--bindir")
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let dir = String::from_utf8(output.stdout).ok()?;
        (output.status.success() && !dir.trim().is_empty()).then(|| PathBuf::from(dir.trim()))
    });
    let in_bindir = bindir.as_ref().map(|dir| dir.join(name));
    in_bindir
        .into_iter()
        .chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|dir| dir.join(name)),
        )
        .find(|path| is_executable(path))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether this process runs as root: the effective uid on the `Uid:` line of
/// /proc/self/status (real, effective, saved, filesystem).
fn effective_uid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// `id <args>` as a number, e.g. `id -u postgres`.
fn id(args: &[&str]) -> Result<u32, String> {
    let mut command = Command::new("id");
    command.args(args);
    let out = run(&mut command).map_err(|e| {
        format!(
            "running as root, so initdb must run as `postgres`, but `id {}` failed: {e}",
            args.join(" ")
        )
    })?;
    out.trim()
        .parse()
        .map_err(|e| format!("`id {}` printed {out:?}: {e}", args.join(" ")))
}

/// Runs `command` to completion; its stdout, or an error with its status and
/// output.
fn run(command: &mut Command) -> Result<String, String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run {command:?}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        return Ok(stdout);
    }
    Err(format!(
        "{command:?} exited with {}\nstderr: {}\nstdout: {stdout}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim_end()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn two_fresh_databases_on_one_cluster() {
        let started = Instant::now();
        let Some(first) = database_or_skip("pg: First Database!") else {
            return;
        };
        eprintln!(
            "first database (cluster start included) in {:?}",
            started.elapsed()
        );
        let second = database_or_skip("second").expect("the first database was had");
        assert_ne!(first.name(), second.name());
        assert!(first.name().starts_with("t_") && first.name().ends_with("_pg__first_database_"));
        for db in [&first, &second] {
            assert!(db.name().len() <= MAX_NAME);
            assert!(
                db.name()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            );
            assert_eq!(db.psql("SELECT current_database()"), db.name());
        }
        if std::env::var_os("SCOUT_TEST_PG").is_none() {
            assert_eq!(first.psql("SHOW fsync"), "off");
            let dir = first.socket_dir().to_str().unwrap();
            assert_eq!(
                first.url(),
                format!("postgresql://scout@/{}?host={dir}", first.name())
            );
            assert!(dir.starts_with("/tmp/scout-pg-") && dir.len() + "/.s.PGSQL.5432".len() < 107);
        }
    }

    /// libpq's view of the TLS server: plaintext TCP is turned away, TLS
    /// verified against its authority is taken, the other authority fails.
    #[test]
    fn the_tls_server_takes_only_tls_with_a_certificate_its_authority_signed() {
        let Some(server) = tls_server() else { return };
        let db = server.database("tls unit");
        assert_eq!(server.psql(&db, "SHOW ssl"), "on");
        let cluster = &server.cluster;
        let over_tcp = |params: &str| {
            let mut command = cluster.command(&cluster.psql);
            command.args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"]);
            command.arg(format!(
                "host={TLS_HOST} port={} user={USER} dbname={db} {params}",
                server.port()
            ));
            command.args([
                "-c",
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            ]);
            run(&mut command).map(|out| out.trim().to_owned())
        };
        let plaintext = over_tcp("sslmode=disable").unwrap_err();
        assert!(
            plaintext.contains("no pg_hba.conf entry") && plaintext.contains("no encryption"),
            "{plaintext}"
        );
        let ca = server.ca_file().display().to_string();
        assert_eq!(
            over_tcp(&format!("sslmode=verify-full sslrootcert={ca}")).unwrap(),
            "t"
        );
        let other = server.other_ca_file().display().to_string();
        let refused = over_tcp(&format!("sslmode=verify-full sslrootcert={other}")).unwrap_err();
        assert!(refused.contains("certificate verify failed"), "{refused}");
        // One server per process, its own dir, apart from the other cluster.
        let again = tls_server().unwrap();
        assert_eq!(
            (again.port(), again.ca_file()),
            (server.port(), server.ca_file())
        );
        let dir = server.cluster.dir().to_str().unwrap();
        assert!(dir.starts_with("/tmp/scout-pg-"), "{dir}");
        if let Ok(main) = super::cluster() {
            assert_ne!(main.dir(), server.cluster.dir());
        }
        assert!(server.url(&db).starts_with("postgresql://scout@127.0.0.2:"));
    }

    #[test]
    fn names_and_urls() {
        assert_eq!(database_name("7", "Hello, World"), "t_7_hello__world");
        assert_eq!(database_name("7", ""), "t_7");
        assert_eq!(database_name("7", &"x".repeat(100)).len(), MAX_NAME);
        assert_eq!(
            replace_url_database("postgresql://u:pw@127.0.0.1:5432/postgres", "t_1"),
            "postgresql://u:pw@127.0.0.1:5432/t_1"
        );
        assert_eq!(
            replace_url_database("postgres://u@h?sslmode=disable", "t_1"),
            "postgres://u@h/t_1?sslmode=disable"
        );
        assert_eq!(
            replace_url_database("postgresql://h/db?a=b", "t_2"),
            "postgresql://h/t_2?a=b"
        );
    }
}
