//! The real `scout-host serve` as a child process, started one way by
//! every end-to-end test: a builder for its command line and environment
//! ([`Serve`]), the running process ([`ServeProcess`]), its configuration
//! file ([`write_config`]) and a fresh directory to run it in
//! ([`fresh_dir`]). The binary's path is the
//! caller's (`env!("CARGO_BIN_EXE_scout-host")` exists only in the host's
//! own test binary).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long `serve` may take to print its address: generous, as the
/// suite's tests share two cores; only a hang reaches it.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// A fresh directory `scout-NAME-PID` under the temp directory (what a
/// previous run left there removed first). The caller removes it.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scout-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` to `serve.toml` in `dir`: the file's path.
pub fn write_config(dir: &Path, text: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join("serve.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A [`fresh_dir`] holding `serve.toml` with `config`: the directory and
/// the file's path.
pub fn fresh_config(name: &str, config: &str) -> (PathBuf, PathBuf) {
    let dir = fresh_dir(name);
    let path = write_config(&dir, config);
    (dir, path)
}

/// `BIN serve --config CONFIG` with an empty environment but `PATH` and
/// what the builder adds; later settings of a variable win.
pub struct Serve {
    command: Command,
}

impl Serve {
    pub fn new(bin: impl AsRef<OsStr>, config: &Path) -> Serve {
        let mut command = Command::new(bin);
        command
            .args(["serve", "--config"])
            .arg(config)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default());
        Serve { command }
    }

    /// `SCOUT_ADMIN_TOKEN`.
    pub fn admin_token(self, token: &str) -> Serve {
        self.env("SCOUT_ADMIN_TOKEN", token)
    }

    /// `SCOUT_STORE_KEY`, 64 hex digits.
    pub fn store_key(self, hex: &str) -> Serve {
        self.env("SCOUT_STORE_KEY", hex)
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Serve {
        self.command.env(key, value);
        self
    }

    pub fn envs<'a, K, V>(mut self, vars: impl IntoIterator<Item = &'a (K, V)>) -> Serve
    where
        K: AsRef<OsStr> + 'a,
        V: AsRef<OsStr> + 'a,
    {
        for (key, value) in vars {
            self.command.env(key, value);
        }
        self
    }

    /// The test's own compile cache (`HOME`, `XDG_CACHE_HOME`,
    /// `SCOUT_CACHE_DIR` as this process has them), so a restart is quick.
    pub fn compile_cache(self) -> Serve {
        let kept: Vec<(&str, String)> = ["HOME", "XDG_CACHE_HOME", "SCOUT_CACHE_DIR"]
            .into_iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k, v)))
            .collect();
        self.envs(&kept)
    }

    /// Runs it in `dir` (where relative paths it writes land).
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Serve {
        self.command.current_dir(dir);
        self
    }

    /// More arguments after `--config CONFIG`.
    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Serve {
        self.command.args(args);
        self
    }

    /// The command as built, for a test that drives the process itself.
    pub fn command(self) -> Command {
        self.command
    }

    /// Spawns it with its output piped and waits for the address it prints
    /// first; panics with its stderr if it does not start.
    pub fn start(self) -> ServeProcess {
        ServeProcess::start(self.command)
    }

    /// Runs it expecting it to refuse to start: what it said on stderr.
    /// Panics if it exits 0, or if it is still running after the start's
    /// bound (it started instead: stopped, so the test fails rather than
    /// hangs).
    pub fn refused(mut self) -> String {
        use std::io::Read;
        let mut child = self
            .command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run scout-host serve");
        let mut pipe = child.stderr.take().expect("piped stderr");
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        });
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("poll serve") {
                break Some(status);
            }
            if started.elapsed() > START_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = reader.join().unwrap_or_default();
        match status {
            Some(status) => assert!(!status.success(), "serve exited 0: {stderr}"),
            None => panic!("serve started instead of refusing: {stderr}"),
        }
        stderr
    }
}

/// A running `scout-host serve`; killed (SIGKILL) and reaped on drop.
pub struct ServeProcess {
    child: Child,
    /// `http://127.0.0.1:PORT` (`https://` under `[tls]`), from the line
    /// `serve` prints when it listens.
    pub base: String,
    /// What `serve` wrote on stderr so far (read by a thread of its own,
    /// as stdout is, so neither pipe ever fills).
    stderr: Arc<Mutex<String>>,
}

impl ServeProcess {
    /// Spawns `command` (a `scout-host serve --config ...`) with its output
    /// piped and waits for the address it prints first; panics with its
    /// stderr if it does not start.
    fn start(mut command: Command) -> ServeProcess {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start scout-host serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr_pipe);
            let mut line = String::new();
            while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_str(&line);
                line.clear();
            }
        });
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let _ = tx.send(first);
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        let mut serve = ServeProcess {
            child,
            base: String::new(),
            stderr,
        };
        let first = rx.recv_timeout(START_TIMEOUT).unwrap_or_default();
        match first
            .trim()
            .rsplit(' ')
            .next()
            .filter(|u| u.starts_with("http://127.0.0.1:") || u.starts_with("https://127.0.0.1:"))
        {
            Some(base) => serve.base = base.to_string(),
            None => {
                let _ = serve.child.kill();
                let _ = serve.child.wait();
                std::thread::sleep(Duration::from_millis(200));
                panic!("serve did not start: {first:?}\n{}", serve.stderr());
            }
        }
        serve
    }

    /// What `serve` has written on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// SIGKILL: no destructor, no flush, no rollback.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL serve");
        let status = self.child.wait().expect("reap serve");
        assert!(!status.success(), "serve died of the signal: {status:?}");
    }

    /// Sends `signal` (`TERM`, `HUP`, `STOP`, `CONT`) to the process.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -s {signal}: {status:?}");
    }

    /// Waits for the process to exit by itself; its status, or `None` if it
    /// is still running after `within` (a bound far above what the test
    /// waits for, only there so a hang fails instead of blocking the suite).
    pub async fn exited_within(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll serve") {
                return Some(status);
            }
            if started.elapsed() > within {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
