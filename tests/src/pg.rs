//! Real, throwaway PostgreSQL databases for integration tests, driven with
//! PostgreSQL's own binaries (no client crate): one cluster per test process
//! under `/tmp/scout-pg-<pid>-<rand>`, stopped and removed by a detached
//! watcher once the process exits, however it exits; or, with
//! `SCOUT_TEST_PG` set, databases made on that external server instead.

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
const PORT: &str = "5432";
/// Longest database name made (PostgreSQL's limit is 63 bytes).
const MAX_NAME: usize = 60;

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
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
    pub fn psql(&self, sql: &str) -> String {
        let cluster = cluster()
            .as_ref()
            .expect("a database exists, so its cluster started");
        let mut command = cluster.command(&cluster.psql);
        command.args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"]);
        match &cluster.server {
            Server::Local { dir } => {
                command
                    .arg("-h")
                    .arg(dir)
                    .args(["-p", PORT, "-U", USER, "-d", &self.name]);
            }
            Server::External { .. } => {
                command.arg("-d").arg(&self.url);
            }
        }
        command.arg("-c").arg(sql);
        match run(&mut command) {
            Ok(stdout) => stdout.trim().to_owned(),
            Err(e) => panic!("psql on database {} failed running {sql:?}: {e}", self.name),
        }
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
enum Server {
    /// A cluster this process started, in `dir` (socket in `dir`, data in
    /// `dir/data`, log in `dir/log`).
    Local { dir: PathBuf },
    /// `SCOUT_TEST_PG`'s server.
    External { base: String },
}

/// The server this process's databases live on, and how to reach it.
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
        if let Server::Local { dir } = &self.server {
            // Somewhere `postgres` may enter, not the test's working directory.
            command.current_dir(dir);
        }
        command
    }

    fn create(&self, test_name: &str) -> Result<PgDatabase, String> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        match &self.server {
            Server::Local { dir } => {
                let name = database_name(&n.to_string(), test_name);
                let createdb = self
                    .createdb
                    .as_ref()
                    .expect("a local cluster has createdb");
                let mut command = self.command(createdb);
                command
                    .arg("-h")
                    .arg(dir)
                    .args(["-p", PORT, "-U", USER, &name]);
                run(&mut command).map_err(|e| format!("createdb {name} failed: {e}"))?;
                let dir_text = dir.to_str().expect("the socket dir is ASCII");
                Ok(PgDatabase {
                    url: format!("postgresql://{USER}@/{name}?host={dir_text}"),
                    conninfo: format!("host={dir_text} port={PORT} user={USER} dbname={name}"),
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
    let log = dir.join("log");
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
        server: Server::Local { dir: dir.clone() },
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

    let options = format!(
        "-c listen_addresses='' -k {} -c port={PORT} -c fsync={} -c max_connections=200",
        dir.display(),
        if DURABLE.load(Ordering::SeqCst) {
            "on"
        } else {
            "off"
        }
    );
    let mut command = cluster.command(&pg_ctl);
    command
        .arg("-D")
        .arg(&data)
        .arg("-l")
        .arg(&log)
        .args(["-w", "-o", &options, "start"])
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
    Ok(cluster)
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
