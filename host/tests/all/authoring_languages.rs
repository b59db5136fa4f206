//! The author's loop in TypeScript and Python through the real binary:
//! `new --lang`, `build` (the pinned componentizer provisioned once under
//! the target directory through `SCOUT_TOOLCHAINS`), `test` against the
//! starter fixtures, `inspect`, `call --replay` of the write, and the build
//! errors an author meets first.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(mut cmd: Command) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run the command");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// `scout-host`, with the componentizers provisioned once under the
/// target directory (as CI provisions them), never in the user's cache.
fn scout_host() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scout-host"));
    cmd.env("SCOUT_TOOLCHAINS", toolchains())
        .env_remove("SCOUT_LOG");
    cmd
}

fn toolchains() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("scout-toolchains")
}

/// A fresh directory under the cargo target directory.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("authoring-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

// ---------------------------------------------------------------------------
// TypeScript (`scout-host new --lang ts`, esbuild and componentize-js,
// sdk/typescript), and the language detection every build starts with.
// ---------------------------------------------------------------------------

/// `new NAME --lang ts` into a fresh folder; returns it.
fn ts_scaffold(test: &str, name: &str) -> PathBuf {
    let dir = temp_dir(test).join(name);
    let mut cmd = scout_host();
    cmd.args(["new", name, "--lang", "ts", "--dir"]).arg(&dir);
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("in TypeScript"),
        "new says what it made: {}",
        out.stdout
    );
    dir
}

fn ts_build(dir: &Path) -> Run {
    let mut cmd = scout_host();
    cmd.arg("build").arg("--dir").arg(dir);
    run(cmd)
}

/// The starter scaffold `starter`, built once for the tests that need a
/// built TypeScript connector (and the provisioned toolchain); its folder
/// and its build's output.
fn ts_built_starter() -> &'static (PathBuf, Run) {
    static BUILT: std::sync::OnceLock<(PathBuf, Run)> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = ts_scaffold("ts-new", "starter");
        let started = std::time::Instant::now();
        let out = ts_build(&dir);
        eprintln!(
            "typescript starter build: {:.1} s",
            started.elapsed().as_secs_f64()
        );
        (dir, out)
    })
}

#[test]
fn typescript_a_new_scaffold_builds_passes_its_starter_cases_and_replays_its_write() {
    let (dir, out) = ts_built_starter();
    for file in [
        "src/index.ts",
        "package.json",
        "tsconfig.json",
        ".gitignore",
        "wit/starter.wit",
        "wit/deps/scout-connector/types.wit",
        "vendor/scout-sdk/src/index.ts",
        "vendor/scout-sdk/src/contract/scout-connector-http.d.ts",
        "fixtures/cases.json",
        "fixtures/items.json",
    ] {
        assert!(dir.join(file).is_file(), "{file} in the scaffold");
    }
    let fixture = std::fs::read_to_string(dir.join("fixtures/items.json")).unwrap();
    assert!(
        fixture.contains("\"provenance\": \"UNVERIFIED\"") && fixture.contains("src/index.ts"),
        "{fixture}"
    );
    let package = std::fs::read_to_string(dir.join("package.json")).unwrap();
    assert!(
        package.contains("\"name\": \"scout-connector-starter\"")
            && package.contains("target/scout/starter.wasm"),
        "{package}"
    );

    // The language was recognised from the folder: no --lang.
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let wasm = dir.join("target/scout/starter.wasm");
    assert!(wasm.is_file(), "{}: {}", wasm.display(), out.stdout);
    assert!(
        out.stdout.contains("2 tools")
            && out.stdout.contains("esbuild 0.28.2")
            && out.stdout.contains("componentize-js 0.23.0"),
        "{}",
        out.stdout
    );
    let size = std::fs::metadata(&wasm).unwrap().len();
    eprintln!("typescript starter component: {size} bytes");

    let mut cmd = scout_host();
    cmd.arg("test")
        .arg(&wasm)
        .arg("--fixtures")
        .arg(dir.join("fixtures"));
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("test result: ok. 4 passed; 0 failed"),
        "{}",
        out.stdout
    );

    // The manifest is the one made from the scaffold's WIT.
    let mut cmd = scout_host();
    cmd.arg("inspect").arg(&wasm).arg("--json");
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("inspect --json");
    assert_eq!(report["connector"]["name"], "starter");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["starter_get_item", "starter_create_note"]);
    assert_eq!(
        report["tools"][0]["description"],
        "Read one item by its id."
    );
    assert_eq!(
        report["tools"][1]["input_schema"]["properties"]["item-id"]["description"],
        "the id of the item the note is added to."
    );
    assert!(
        report.to_string().contains("deleting items or notes"),
        "the WITHHELD list: {report}"
    );

    // The write, replayed: no person asked, nothing sent, the note back.
    let mut cmd = scout_host();
    cmd.arg("call")
        .arg(&wasm)
        .arg("starter_create_note")
        .arg(r#"{"item-id": "42", "body": "Booked a roofer."}"#)
        .arg("--replay")
        .arg(dir.join("fixtures"));
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let answer: Value = serde_json::from_str(&out.stdout).expect("call's JSON");
    assert_eq!(
        answer["ok"],
        serde_json::json!({"id": "n-1", "item-id": "42", "body": "Booked a roofer."})
    );
    assert!(
        out.stderr.contains("is a write: no person is asked here")
            && out.stderr.contains("log[info]: added note n-1 to item 42"),
        "{}",
        out.stderr
    );

    // A request the host refuses is the `capability` tool error the SDK
    // makes of the handle's error, not a trap.
    let mut cmd = scout_host();
    cmd.arg("call")
        .arg(&wasm)
        .arg("starter_get_item")
        .arg(r#"{"id": "9"}"#)
        .arg("--replay")
        .arg(dir.join("fixtures"));
    let out = run(cmd);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let answer: Value = serde_json::from_str(&out.stdout).expect("call's JSON");
    assert_eq!(answer["err"]["capability"]["capability"], "http");
    assert_eq!(answer["err"]["capability"]["kind"], "denied");
}

#[test]
fn typescript_an_error_in_src_index_ts_is_a_build_error_naming_the_file() {
    let dir = ts_scaffold("ts-broken", "broken");
    let index = std::fs::read_to_string(dir.join("src/index.ts")).unwrap();
    let mut lines: Vec<&str> = index.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("function itemPath"))
        .expect("the template's itemPath");
    lines[at] = "function itemPath(id: string: string {";
    std::fs::write(dir.join("src/index.ts"), lines.join("\n")).unwrap();
    let out = ts_build(&dir);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(&format!("src/index.ts:{}:", at + 1)),
        "the author's file and line: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("esbuild could not bundle src/index.ts"),
        "{}",
        out.stderr
    );
    assert!(!dir.join("target/scout/broken.wasm").exists());
}

#[test]
fn build_in_a_folder_with_no_connector_names_the_three_languages() {
    let dir = temp_dir("no-connector");
    std::fs::write(dir.join("README.md"), "notes\n").unwrap();
    let out = ts_build(&dir);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    for named in [
        "Cargo.toml (Rust)",
        "package.json or src/index.ts (TypeScript)",
        "pyproject.toml or app.py (Python)",
        "--lang rust|ts|python",
    ] {
        assert!(out.stderr.contains(named), "{named}: {}", out.stderr);
    }
}

/// The TypeScript SDK's helpers with logic (sdk/typescript/test), bundled
/// by the provisioned esbuild with a stand-in for the contract's imports
/// and run by the machine's Node (`node --test`).
#[test]
fn typescript_sdk_unit_tests_pass() {
    let (_, built) = ts_built_starter();
    assert_eq!(built.code, 0, "{}", built.stderr);
    let esbuild =
        toolchains().join("npm-bytecodealliance-componentize-js+esbuild/node_modules/.bin/esbuild");
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk/typescript");
    let bundle = temp_dir("ts-sdk").join("sdk.test.mjs");
    let mut cmd = Command::new(&esbuild);
    cmd.current_dir(&sdk).args([
        "test/sdk.test.ts",
        "--bundle",
        "--format=esm",
        "--platform=node",
        "--log-level=warning",
    ]);
    for capability in ["http", "log", "meter", "folder"] {
        cmd.arg(format!(
            "--alias:scout:connector/{capability}@0.2.0=./test/contract-stub.ts"
        ));
    }
    cmd.arg(format!("--outfile={}", bundle.display()));
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut cmd = Command::new("node");
    cmd.arg("--test").arg(&bundle);
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("# fail 0") && !out.stdout.contains("# pass 0"),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------
// Python (`scout-host new --lang python`, componentize-py, sdk/python).
// ---------------------------------------------------------------------------

/// `new NAME --lang python` into a fresh folder; returns it.
fn python_scaffold(test: &str, name: &str) -> PathBuf {
    let dir = temp_dir(test).join(name);
    let mut cmd = scout_host();
    cmd.args(["new", name, "--lang", "python", "--dir"])
        .arg(&dir);
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("in Python"),
        "new says what it made: {}",
        out.stdout
    );
    dir
}

fn build(dir: &Path) -> Run {
    let mut cmd = scout_host();
    cmd.arg("build").arg("--dir").arg(dir);
    run(cmd)
}

#[test]
fn python_a_new_scaffold_builds_passes_its_starter_cases_and_replays_its_write() {
    let dir = python_scaffold("py-new", "starter");
    for file in [
        "app.py",
        "pyproject.toml",
        ".gitignore",
        "wit/starter.wit",
        "wit/deps/scout-connector/types.wit",
        "vendor/scout_sdk/__init__.py",
        "fixtures/cases.json",
        "fixtures/items.json",
    ] {
        assert!(dir.join(file).is_file(), "{file} in the scaffold");
    }
    let fixture = std::fs::read_to_string(dir.join("fixtures/items.json")).unwrap();
    assert!(
        fixture.contains("\"provenance\": \"UNVERIFIED\""),
        "{fixture}"
    );

    // The language is recognised from the folder: no --lang.
    let out = build(&dir);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let wasm = dir.join("target/scout/starter.wasm");
    assert!(wasm.is_file(), "{}: {}", wasm.display(), out.stdout);
    assert!(
        out.stdout.contains("2 tools")
            && out
                .stdout
                .contains("componentize-py 0.25.1, its sockets trapping"),
        "{}",
        out.stdout
    );
    let size = std::fs::metadata(&wasm).unwrap().len();
    eprintln!("python starter component: {size} bytes");

    let mut cmd = scout_host();
    cmd.arg("test")
        .arg(&wasm)
        .arg("--fixtures")
        .arg(dir.join("fixtures"));
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("test result: ok. 4 passed; 0 failed"),
        "{}",
        out.stdout
    );

    // The manifest is the one made from the scaffold's WIT.
    let mut cmd = scout_host();
    cmd.arg("inspect").arg(&wasm).arg("--json");
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("inspect --json");
    assert_eq!(report["connector"]["name"], "starter");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["starter_get_item", "starter_create_note"]);
    assert_eq!(
        report["tools"][0]["description"],
        "Read one item by its id."
    );
    assert_eq!(
        report["tools"][1]["input_schema"]["properties"]["item-id"]["description"],
        "the id of the item the note is added to."
    );
    // componentize-py's sockets are gone; its clocks and randomness are the
    // host's inert imports, per call.
    let imports: Vec<&str> = report["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(
        !imports.iter().any(|i| i.starts_with("wasi:sockets/")),
        "{imports:?}"
    );
    assert!(
        imports
            .iter()
            .any(|i| i.starts_with("wasi:clocks/wall-clock@"))
            && imports.iter().any(|i| i.starts_with("wasi:random/random@")),
        "{imports:?}"
    );
    let text = report.to_string();
    assert!(
        text.contains("deleting items or notes"),
        "the WITHHELD list: {text}"
    );

    // The write, replayed: no person asked, nothing sent, the note back.
    let mut cmd = scout_host();
    cmd.arg("call")
        .arg(&wasm)
        .arg("starter_create_note")
        .arg(r#"{"item-id": "42", "body": "Booked a roofer."}"#)
        .arg("--replay")
        .arg(dir.join("fixtures"));
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let answer: Value = serde_json::from_str(&out.stdout).expect("call's JSON");
    assert_eq!(
        answer["ok"],
        serde_json::json!({"id": "n-1", "item-id": "42", "body": "Booked a roofer."})
    );
    assert!(
        out.stderr.contains("is a write: no person is asked here"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("log[info]: added note n-1 to item 42"),
        "the SDK's log reaches the author: {}",
        out.stderr
    );

    // A Python exception in a tool is a tool error naming its line, not a trap.
    let app = std::fs::read_to_string(dir.join("app.py")).unwrap();
    let broken = app.replace(
        "        item = client().get(item_path(id))\n",
        "        item = client().get(item_path(id))\n        item = item[\"no-such-key\"]\n",
    );
    assert_ne!(
        broken, app,
        "the template reads an item where the test expects"
    );
    std::fs::write(dir.join("app.py"), broken).unwrap();
    let out = build(&dir);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let mut cmd = scout_host();
    cmd.arg("call")
        .arg(&wasm)
        .arg("starter_get_item")
        .arg(r#"{"id": "42"}"#)
        .arg("--replay")
        .arg(dir.join("fixtures"));
    let out = run(cmd);
    let answer: Value = serde_json::from_str(&out.stdout).expect("call's JSON");
    let message = answer["err"]["bad-response"].as_str().unwrap_or_default();
    assert!(
        message.contains("KeyError") && message.contains("app.py:") && message.contains("get_item"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn python_a_syntax_error_is_a_build_error_naming_the_file_and_line() {
    let dir = python_scaffold("py-syntax", "broken");
    let app = std::fs::read_to_string(dir.join("app.py")).unwrap();
    let mut lines: Vec<&str> = app.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("def item_path"))
        .expect("the template's item_path");
    lines[at] = "def item_path(item_id:";
    std::fs::write(dir.join("app.py"), lines.join("\n")).unwrap();
    let out = build(&dir);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let file = dir.canonicalize().unwrap().join("app.py");
    assert!(
        out.stderr
            .contains(&format!("File \"{}\", line {}", file.display(), at + 1)),
        "the author's file and line: {}",
        out.stderr
    );
    assert!(out.stderr.contains("SyntaxError"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("Stack backtrace"),
        "componentize-py's own backtrace is left out: {}",
        out.stderr
    );
    assert!(!dir.join("target/scout/broken.wasm").exists());
}

/// The SDK's own unit tests (sdk/python/tests), run with the machine's
/// python3 against the bindings the pinned componentize-py generates for
/// the contract's `imports` world.
#[test]
fn python_sdk_unit_tests_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bindings = temp_dir("py-sdk-bindings");
    let generated = Command::new(scout_tests::componentizers::componentize_py())
        .arg("--wit-path")
        .arg(root.join("wit"))
        .args(["--world", "scout:connector/imports", "bindings"])
        .arg(&bindings)
        .output()
        .expect("run componentize-py");
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let out = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s"])
        .arg(root.join("sdk/python/tests"))
        .env(
            "PYTHONPATH",
            format!(
                "{}:{}",
                bindings.display(),
                root.join("sdk/python").display()
            ),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.trim_end().ends_with("OK"), "{stderr}");
}
