//! The componentizers of connectors in other languages, pinned and
//! provisioned once under the cargo target directory with the machine's
//! `npm` and `python3 -m venv`, as the MCP clients are: componentize-js
//! for JavaScript and componentize-py for Python. Each builds a test
//! guest's source from `tests/guests-js/` or `tests/guests-py/` (never a
//! committed `.wasm`) into a component without a manifest; `scout-host
//! manifest` then embeds it.

use crate::{provision_npm, provision_venv};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The componentize-js release the tests (and the trial) use.
pub const COMPONENTIZE_JS: &str = "@bytecodealliance/componentize-js@0.23.0";

/// The componentize-py release the tests (and the trial) use.
pub const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";

/// The test guests of other languages: `tests/guests-js/NAME` and
/// `tests/guests-py/NAME`, each with its `wit/` folder.
pub fn guest_dir(language: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("guests-{language}/{name}"))
}

/// componentize-js's command: `$SCOUT_TEST_COMPONENTIZE_JS`, or else
/// [`COMPONENTIZE_JS`] installed once under the target directory.
pub fn componentize_js() -> String {
    if let Ok(cli) = std::env::var("SCOUT_TEST_COMPONENTIZE_JS") {
        return cli;
    }
    static PROVISIONED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PROVISIONED
        .get_or_init(|| {
            provision_npm(
                "componentize-js",
                &[COMPONENTIZE_JS],
                "node_modules/.bin/componentize-js",
                "SCOUT_TEST_COMPONENTIZE_JS",
            )
            .unwrap_or_else(|e| panic!("{e}"))
        })
        .clone()
}

/// componentize-py's command: `$SCOUT_TEST_COMPONENTIZE_PY`, or else
/// [`COMPONENTIZE_PY`] installed once in a virtual environment under the
/// target directory.
pub fn componentize_py() -> String {
    if let Ok(cli) = std::env::var("SCOUT_TEST_COMPONENTIZE_PY") {
        return cli;
    }
    static PROVISIONED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PROVISIONED
        .get_or_init(|| provision_componentize_py().unwrap_or_else(|e| panic!("{e}")))
        .clone()
}

fn provision_componentize_py() -> Result<String, String> {
    let venv = provision_venv(
        "componentize-py-venv",
        "bin/componentize-py",
        COMPONENTIZE_PY,
        &[COMPONENTIZE_PY.as_ref()],
        "pip install componentize-py (or set SCOUT_TEST_COMPONENTIZE_PY)",
    )?;
    Ok(venv.join("bin/componentize-py").display().to_string())
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
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
}

/// Builds the JavaScript guest `name` (its `NAME.js`, world `world`) into
/// `out` with componentize-js, the runtime's features in `disable` off
/// (`stdio`, `random`, `clocks`, `http`, `fetch-event`).
pub fn build_js(name: &str, world: &str, disable: &[&str], out: &Path) -> Result<(), String> {
    let dir = guest_dir("js", name);
    let mut command = Command::new(componentize_js());
    command
        .arg(dir.join(format!("{name}.js")))
        .arg("--wit")
        .arg(dir.join("wit"))
        .args(["--world-name", world]);
    if !disable.is_empty() {
        command.arg("--disable").args(disable);
    }
    run(command.arg("--out").arg(out), "componentize-js")
}

/// Builds the Python guest `name` (its module `app`, world `world`) into
/// `out` with componentize-py; `stub_wasi` stubs out every WASI import of
/// the Python runtime (its clocks and random seed then fixed at build
/// time); without it the runtime imports `wasi:sockets`, which the host
/// refuses, unless [`build_py_without_sockets`] is what builds it.
pub fn build_py(name: &str, world: &str, stub_wasi: bool, out: &Path) -> Result<(), String> {
    let dir = guest_dir("py", name);
    let mut command = Command::new(componentize_py());
    command
        .arg("--wit-path")
        .arg(dir.join("wit"))
        .args(["--world", world, "componentize"]);
    if stub_wasi {
        command.arg("--stub-wasi");
    }
    command
        .arg("--python-path")
        .arg(&dir)
        .arg("app")
        .arg("--output")
        .arg(out);
    run(&mut command, "componentize-py")
}

/// Builds the Python guest `name` as [`build_py`] does without stubs, then
/// satisfies its runtime's `wasi:sockets` imports inside it with trapping
/// functions ([`scout_build::without_sockets`]): the host links its clocks
/// and randomness, fresh at each call, and a socket traps at the call.
pub fn build_py_without_sockets(name: &str, world: &str, out: &Path) -> Result<(), String> {
    build_py(name, world, false, out)?;
    let built = std::fs::read(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let without = scout_build::without_sockets(&built)
        .map_err(|e| format!("{name}: its sockets not removed: {e}"))?;
    std::fs::write(out, without).map_err(|e| format!("{}: {e}", out.display()))
}
