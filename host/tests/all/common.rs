//! What the test modules share: the real `serve` binary started the one
//! way they all start it ([`serve`], [`serve_as`]), a `ServeHost` started
//! in this process ([`start_host`]) and listening on 127.0.0.1 until
//! dropped ([`listen`]), the client that talks to it, and components by
//! path.
#![allow(dead_code)]

use scout_host::policy::Switches;
use scout_host::serve::{ServeConfig, ServeHost};
use scout_tests::{Serve, TempDb};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The bound of every wait for something that must happen (an answer, a
/// recovery, a notification): only a hang reaches it. The suite's work
/// shares two cores with some 300 other tests, so a bound near the time a
/// quiet machine takes fails a test for the machine being busy.
pub const EVENTUALLY: std::time::Duration = std::time::Duration::from_secs(180);

/// The `scout-host` binary this test binary was built with.
pub const SCOUT_HOST: &str = env!("CARGO_BIN_EXE_scout-host");

/// `scout-host serve --config CONFIG` with `admin_token` and the store key
/// `store_key_byte` repeated 32 times: add what the test needs, then
/// `.start()` (or `.refused()`).
pub fn serve_as(config: &Path, admin_token: &str, store_key_byte: &str) -> Serve {
    Serve::new(SCOUT_HOST, config)
        .admin_token(admin_token)
        .store_key(&store_key_byte.repeat(32))
}

/// [`serve_as`] the way most end-to-end modules run it: `crash_safety`'s
/// admin token and store key, GitHub writes on, a person awaited for ten
/// minutes, only errors logged, and this process's compile cache, so a
/// restart is quick.
pub fn serve(config: &Path) -> Serve {
    serve_as(config, crate::crash_safety::ADMIN_TOKEN, "5c")
        .compile_cache()
        .env("GITHUB_ALLOW_WRITES", "true")
        .env("APPROVAL_TIMEOUT_MS", "600000")
        .env("SCOUT_LOG", "error")
}

/// The configuration `text` as `serve` reads it, its store the file `db`;
/// panics with the text if it does not parse.
pub fn config_in(text: &str, db: &TempDb) -> ServeConfig {
    let mut config =
        ServeConfig::parse(text).unwrap_or_else(|e| panic!("config parses: {e}\n{text}"));
    config.database = db.path().to_path_buf();
    config
}

/// A `ServeHost` in this process from the configuration `text` (its store
/// in `db`), with the operator `switches` and the environment `env`.
pub fn start_host(
    text: &str,
    db: &TempDb,
    switches: &[(&str, &str)],
    env: impl Fn(&str) -> Option<String>,
) -> Arc<ServeHost> {
    ServeHost::start(
        config_in(text, db),
        Switches::from_vars(switches.iter().copied()),
        env,
    )
    .expect("serve starts")
}

/// `host` serving its admin API and MCP on 127.0.0.1; stops when dropped.
pub struct Listening {
    pub base: String,
    pub addr: std::net::SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Binds `host` to the address its config names (127.0.0.1:0 in tests) and serves it.
pub async fn listen(host: Arc<ServeHost>) -> Listening {
    let listener = host.bind().await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        scout_host::serve::serve_http(host, listener, std::future::pending())
            .await
            .unwrap();
    });
    Listening {
        base: format!("http://{addr}"),
        addr,
        server,
    }
}

/// The tests' HTTP client: generous timeout, so a hung host fails the test
/// rather than hanging it.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// The absolute path of a component `scout-tests` built.
pub fn component(path: &str) -> String {
    Path::new(path)
        .canonicalize()
        .unwrap_or_else(|e| panic!("{path}: {e} (built by scout-tests)"))
        .display()
        .to_string()
}

/// Where every test provisions the pinned componentizers `scout-host build`
/// runs (`SCOUT_TOOLCHAINS`): once per target directory, as a fresh CI
/// machine does, never in the user's cache.
pub fn toolchains() -> std::path::PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("scout-toolchains")
}

/// The connectors under `connectors/` written in another language (a
/// folder with no `Cargo.toml`: TypeScript or Python), by name, each built
/// once per test process the way its author builds it: `scout-host build
/// --dir connectors/NAME`, into a target directory of its own.
pub fn language_connectors() -> &'static [(String, std::path::PathBuf)] {
    static BUILT: std::sync::OnceLock<Vec<(String, std::path::PathBuf)>> =
        std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../connectors");
        let mut names: Vec<String> = std::fs::read_dir(&root)
            .expect("connectors/")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.is_dir() && !p.join("Cargo.toml").exists())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let target = Path::new(scout_tests::TARGET_ROOT)
                    .join("language-connectors")
                    .join(&name);
                let out = std::process::Command::new(SCOUT_HOST)
                    .args(["build", "--dir"])
                    .arg(root.join(&name))
                    .arg("--target-dir")
                    .arg(&target)
                    .env("SCOUT_TOOLCHAINS", toolchains())
                    .env_remove("SCOUT_LOG")
                    .output()
                    .expect("run scout-host build");
                assert!(
                    out.status.success(),
                    "scout-host build --dir connectors/{name} failed:\n{}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                let wasm = target.join(format!("scout/{name}.wasm"));
                assert!(wasm.is_file(), "the build wrote {}", wasm.display());
                (name, wasm)
            })
            .collect()
    })
}

/// [`language_connectors`]' component of the connector `name`.
pub fn language_connector(name: &str) -> std::path::PathBuf {
    language_connectors()
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("connectors/{name} is not a connector in another language"))
        .1
        .clone()
}

/// Runs `tests/mcp_client/SCRIPT` (an official-MCP-client story) with the
/// official client's Python and `args`, off the async runtime so the
/// test's fakes keep answering; asserts it succeeded and returns its
/// summary, the JSON of its last line (`{"ok": true, ...}` checked).
pub async fn client_story(script: &str, args: Vec<String>) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp_client")
        .join(script);
    let run = tokio::task::spawn_blocking(move || {
        std::process::Command::new(scout_tests::python())
            .arg(&path)
            .args(&args)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", path.display()))
    });
    let output = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("the script finishes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("a JSON summary");
    assert_eq!(summary["ok"], true, "{summary}");
    summary
}

/// `serve` of the one connector `name` (its `component`, bound to the
/// loopback `origin`, `connector_lines` added to its table; `top_lines`
/// before it), its store in `dir`, with `admin_token`. It shares this
/// process's compile cache, which `scout-host build` and `test` filled, so
/// a large component is not compiled once more; a person's answer is
/// awaited 20 s, long enough for a story script's person, short enough that
/// a broken script fails in seconds.
pub fn serve_connector(
    dir: &Path,
    admin_token: &str,
    (name, component, origin): (&str, &Path, &str),
    top_lines: &str,
    connector_lines: &str,
) -> scout_tests::ServeProcess {
    let config = scout_tests::serve::write_config(
        dir,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\n{top_lines}\n[connectors.{name}]\ncomponent = {:?}\norigin = {origin:?}\nallow_private_network = true\n{connector_lines}",
            component.display().to_string()
        ),
    );
    serve_as(&config, admin_token, "7d")
        .compile_cache()
        .env("APPROVAL_TIMEOUT_MS", "20000")
        .start()
}
