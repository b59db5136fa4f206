//! HAProxy in front of several `serve` hosts on loopback: the balancer an
//! operator puts in front of a fleet, started by the test that needs it.
//!
//! Debian's `haproxy` package (`.ci/run` installs it): `$SCOUT_HAPROXY`, a
//! `haproxy` on `PATH`, or `/usr/sbin/haproxy`. Without one a test is
//! skipped (and says so), except with `CI=true`, where it fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The HAProxy binary, or `None` (the caller skips) when there is none and
/// `CI` is not `true`; on CI a missing binary fails the test.
pub fn binary() -> Option<PathBuf> {
    let candidates = std::env::var_os("SCOUT_HAPROXY")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("PATH").into_iter().flat_map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("haproxy"))
                .collect::<Vec<_>>()
        }))
        .chain(["/usr/sbin/haproxy", "/usr/bin/haproxy"].map(PathBuf::from));
    for candidate in candidates {
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    let why =
        "no haproxy binary (apt-get install haproxy, what .ci/run does, or set SCOUT_HAPROXY)";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true, but {why}");
    }
    eprintln!("scout-tests: skipped a test behind HAProxy: {why}");
    None
}

/// How the balancer picks a host for each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balance {
    /// Round robin, request by request: no affinity of any kind.
    RoundRobin,
    /// Round robin for a request without `Mcp-Session-Id`; a request with
    /// one goes to the host that answered with it (docs/operating.md's
    /// configuration for session-mode clients).
    StickyOnMcpSessionId,
}

/// The lines of the `backend` section that make [`Balance::StickyOnMcpSessionId`]:
/// the ones docs/operating.md gives an operator.
pub const STICKY_LINES: &str = "\
  stick-table type string len 128 size 100k expire 30m
  stick on req.hdr(mcp-session-id)
  stick store-response res.hdr(mcp-session-id)
";

/// A loopback port nobody listens on now (for a balancer whose address the
/// hosts must be told before it starts).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A running HAProxy, killed when dropped.
pub struct Haproxy {
    child: Child,
    /// `127.0.0.1:PORT`, where it listens.
    pub address: String,
}

impl Haproxy {
    /// HAProxy `binary` on `127.0.0.1:port` in front of `backends`
    /// (`http://127.0.0.1:PORT` each), balancing as `balance` says, its
    /// configuration written in `dir`; returns once it accepts connections.
    pub fn start(
        binary: &Path,
        dir: &Path,
        port: u16,
        backends: &[String],
        balance: Balance,
    ) -> Haproxy {
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, base)| {
                let address = base.trim_start_matches("http://");
                format!("  server host{i} {address}\n")
            })
            .collect();
        let sticky = match balance {
            Balance::RoundRobin => "",
            Balance::StickyOnMcpSessionId => STICKY_LINES,
        };
        // Long client and server timeouts: a call waits for a person on an
        // open stream.
        let config = format!(
            "global\n  maxconn 512\n\n\
             defaults\n  mode http\n  timeout connect 5s\n  timeout client 10m\n  timeout server 10m\n\n\
             frontend fleet\n  bind 127.0.0.1:{port}\n  default_backend hosts\n\n\
             backend hosts\n  balance roundrobin\n{sticky}{servers}"
        );
        let file = dir.join(format!("haproxy-{port}.cfg"));
        std::fs::write(&file, &config).expect("write the HAProxy configuration");
        let check = Command::new(binary)
            .args(["-c", "-f"])
            .arg(&file)
            .output()
            .expect("run haproxy -c");
        assert!(
            check.status.success(),
            "haproxy refused its configuration:\n{config}\n{}",
            String::from_utf8_lossy(&check.stderr)
        );
        // -db: in the foreground, so killing the child stops it.
        let child = Command::new(binary)
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start haproxy");
        let mut proxy = Haproxy {
            child,
            address: format!("127.0.0.1:{port}"),
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(&proxy.address).is_err() {
            if let Ok(Some(status)) = proxy.child.try_wait() {
                panic!("haproxy exited at start ({status}) with:\n{config}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "haproxy did not listen on {}",
                proxy.address
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        proxy
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
