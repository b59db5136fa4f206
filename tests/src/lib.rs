//! Fixtures for the workspace's integration tests, the demo and the benches:
//! the paths of the components built from source, and fake upstream servers
//! that speak real wire formats over loopback.

/// Paths of the components built by this crate's build script.
pub mod components {
    include!(concat!(env!("OUT_DIR"), "/components.rs"));
}

pub mod fake_github;
pub mod upstream;

/// MCP over streamable HTTP as the tests speak it by hand.
pub mod mcp_wire {
    use serde_json::Value;

    /// The JSON-RPC messages of a response: a JSON body, or the `data:` of
    /// each server-sent event.
    pub fn jsonrpc_messages(content_type: &str, text: &str) -> Vec<Value> {
        if content_type.starts_with("application/json") {
            return serde_json::from_str(text).into_iter().collect();
        }
        let mut messages = Vec::new();
        let mut data: Vec<&str> = Vec::new();
        for line in text.lines().chain(std::iter::once("")) {
            if line.is_empty() {
                if !data.is_empty()
                    && let Ok(message) = serde_json::from_str::<Value>(&data.join("\n"))
                {
                    messages.push(message);
                }
                data.clear();
            } else if let Some(rest) = line.strip_prefix("data:") {
                data.push(rest.strip_prefix(' ').unwrap_or(rest));
            }
        }
        messages
    }
}

/// A `serve` configuration file's text: SQLite file `scout.db` beside it,
/// the GitHub component built from source bound to `github_origin`.
pub fn serve_config_for_github(github_origin: &str) -> String {
    let component = std::path::Path::new(components::GITHUB).canonicalize().expect("the GitHub component was built");
    format!(
        "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\n\n[connectors.github]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n",
        component.display().to_string(),
        github_origin
    )
}

/// Replaces every `from` in `bytes` by `to` (same length, so a component
/// stays a valid binary): how tests tamper with a built component.
pub fn patch_bytes(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "a patch keeps the length");
    let mut out = bytes.to_vec();
    let mut found = false;
    let mut at = 0;
    while let Some(pos) = out[at..].windows(from.len()).position(|w| w == from) {
        out[at + pos..at + pos + to.len()].copy_from_slice(to);
        at += pos + to.len();
        found = true;
    }
    assert!(found, "pattern present");
    out
}

/// A SQLite file under the temp directory, unique to this process and call,
/// removed with its WAL and shared-memory files on drop: tests leave
/// nothing behind.
pub struct TempDb(std::path::PathBuf);

impl TempDb {
    /// A fresh path named after `name` (nothing is created yet).
    pub fn new(name: &str) -> TempDb {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let db = TempDb(std::env::temp_dir().join(format!("scout-test-{name}-{}-{n}.db", std::process::id())));
        db.remove();
        db
    }

    /// The database file's path.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    fn remove(&self) {
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", self.0.display()));
        }
    }
}

impl AsRef<std::path::Path> for TempDb {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.remove();
    }
}

/// What a tool's `capability` error says, when it is an error of this
/// `capability` (`http`, `meter`, `folder`) and `kind` (`denied`,
/// `run-exhausted`, ...): the number it carries if any (what an allowance
/// has left, a size limit), else its message. `Null` for any other output.
pub fn capability_error(output: &serde_json::Value, capability: &str, kind: &str) -> serde_json::Value {
    let e = &output["err"]["capability"];
    if e["capability"] != capability || e["kind"] != kind {
        return serde_json::Value::Null;
    }
    if e["amount"].is_null() { e["message"].clone() } else { e["amount"].clone() }
}

/// The Python interpreter that runs the official MCP client
/// (`$SCOUT_TEST_PYTHON`, default `python3`).
pub fn python() -> String {
    std::env::var("SCOUT_TEST_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// A running `scout-host serve`, killed when dropped.
pub struct ServeProcess {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`, from the line `serve` prints when it listens.
    pub base: String,
    // Held open, so that what `serve` writes later does not hit a closed pipe.
    _stdout: std::io::BufReader<std::process::ChildStdout>,
    _stderr: std::process::ChildStderr,
}

impl ServeProcess {
    /// `BIN serve --config CONFIG` with an empty environment but `PATH`, the
    /// admin token and the store key; add the switches a test needs.
    pub fn command(bin: &str, config: &std::path::Path, admin_token: &str, store_key_hex: &str) -> std::process::Command {
        let mut command = std::process::Command::new(bin);
        command
            .args(["serve", "--config"])
            .arg(config)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SCOUT_ADMIN_TOKEN", admin_token)
            .env("SCOUT_STORE_KEY", store_key_hex);
        command
    }

    /// Spawns `command` (a `scout-host serve --config ...`) with its output
    /// piped and waits for the address it prints first; panics with its
    /// stderr if it does not start.
    pub fn start(mut command: std::process::Command) -> ServeProcess {
        use std::io::{BufRead, BufReader, Read};
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start scout-host serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut first = String::new();
        let mut stdout = BufReader::new(stdout);
        let _ = stdout.read_line(&mut first);
        let base = first.trim().rsplit(' ').next().filter(|u| u.starts_with("http://127.0.0.1:")).map(str::to_string);
        match base {
            Some(base) => ServeProcess { child, base, _stdout: stdout, _stderr: stderr },
            None => {
                let mut err = String::new();
                let mut stderr = stderr;
                let _ = stderr.read_to_string(&mut err);
                let _ = child.kill();
                panic!("serve did not start: {first:?}\n{err}")
            }
        }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
