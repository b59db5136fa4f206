//! The connector author's commands through the real binary: `call` live,
//! recording and replaying (DESIGN D9), `test` against fixtures (passing,
//! failing, refusing bad fixtures, and opening no network socket), and `new`.
//! Components are built from source by scout-tests; the live upstream is the
//! fake GitHub on loopback.

use scout_tests::components;
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TOKEN: &str = "ghp_author_cli_0123456789SECRET";
const SECRET_ENV: &str = "SCOUT_AUTHOR_CLI_TOKEN";

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scout-host"));
    cmd.env(SECRET_ENV, TOKEN).env_remove("SCOUT_LOG");
    cmd
}

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
    } = cmd.output().expect("run scout-host");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8(stdout).unwrap(),
        stderr: String::from_utf8(stderr).unwrap(),
    }
}

/// Runs off the async runtime, so the fake server keeps answering.
async fn run_async(cmd: Command) -> Run {
    tokio::task::spawn_blocking(move || run(cmd)).await.unwrap()
}

/// A fresh directory under the cargo target directory.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("author-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn github_call(tool: &str, args: Value) -> Command {
    let mut cmd = bin();
    cmd.arg("call")
        .arg(components::GITHUB)
        .arg(tool)
        .arg(args.to_string());
    cmd
}

fn live(cmd: &mut Command, origin: &str) {
    cmd.args([
        "--origin",
        origin,
        "--secret-env",
        SECRET_ENV,
        "--allow-private-network",
    ]);
}

fn readme_args() -> Value {
    json!({"owner": "octo", "repo": "hello", "path": "README.md"})
}

fn write(dir: &Path, name: &str, value: &Value) {
    std::fs::write(dir.join(name), serde_json::to_string_pretty(value).unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_live_reads_through_the_fake_github_with_the_host_token() {
    let github = FakeGitHub::start(TOKEN).await;
    let mut cmd = github_call("github_read_file", readme_args());
    live(&mut cmd, &github.origin());
    let out = run_async(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let output: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    assert_eq!(output["ok"]["text"], "# Hello\n");
    assert_eq!(output["ok"]["path"], "README.md");
    assert!(
        out.stderr
            .contains("GET /repos/octo/hello/contents/README.md -> 200"),
        "{}",
        out.stderr
    );
    // The fake saw the host's credential; nothing printed holds it.
    let requests = github.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN));

    // A tool error is exit 1, with the error on stdout.
    let mut cmd = github_call(
        "read-file",
        json!({"owner": "octo", "repo": "hello", "path": "nope.txt"}),
    );
    live(&mut cmd, &github.origin());
    let out = run_async(cmd).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    let output: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(output["err"]["not-found"].is_string(), "{output}");
}

#[test]
fn call_usage_and_load_errors_exit_2_with_a_clear_message() {
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "call".into(),
                components::GITHUB.into(),
                "github_read_file".into(),
                "{not json".into(),
            ],
            "not JSON",
        ),
        (
            vec![
                "call".into(),
                components::GITHUB.into(),
                "github_nope".into(),
                "{}".into(),
            ],
            "has no tool `github_nope`",
        ),
        (
            vec![
                "call".into(),
                "/nonexistent/x.wasm".into(),
                "t".into(),
                "{}".into(),
            ],
            "no component at /nonexistent/x.wasm",
        ),
        (
            vec![
                "call".into(),
                components::GITHUB.into(),
                "github_read_file".into(),
                readme_args().to_string(),
                "--replay".into(),
                "/nonexistent-dir".into(),
            ],
            "/nonexistent-dir",
        ),
        (
            vec![
                "call".into(),
                components::GITHUB.into(),
                "github_read_file".into(),
                json!({"owner": 1}).to_string(),
            ],
            "invalid arguments at $.owner",
        ),
        (
            vec![
                "call".into(),
                components::GITHUB.into(),
                "github_read_file".into(),
                "{}".into(),
                "--origin".into(),
                "http://127.0.0.1:9".into(),
                "--secret-env".into(),
                SECRET_ENV.into(),
                "--scheme".into(),
                "digest".into(),
            ],
            "--scheme `digest` is not one of",
        ),
    ];
    for (args, needle) in cases {
        let mut cmd = bin();
        cmd.args(&args);
        let out = run(cmd);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(needle),
            "{args:?}: expected {needle:?} in {}",
            out.stderr
        );
        assert!(
            out.stdout.is_empty(),
            "{args:?}: nothing on stdout, got {}",
            out.stdout
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_then_replay_gives_the_same_output_and_the_recording_holds_no_secret() {
    let github = FakeGitHub::start(TOKEN).await;
    let dir = temp_dir("record");
    let mut cmd = github_call("github_read_file", readme_args());
    live(&mut cmd, &github.origin());
    cmd.arg("--record").arg(&dir);
    let recorded = run_async(cmd).await;
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    assert_eq!(github.requests().len(), 1);

    let file = dir.join("github_read_file.json");
    let text = std::fs::read_to_string(&file).expect("the recording is DIR/TOOL.json");
    assert!(!text.contains(TOKEN), "the recording holds the secret");
    let fixture: Value = serde_json::from_str(&text).unwrap();
    // Recorded from a loopback fake: never CAPTURED, and it says where from.
    assert_eq!(fixture["provenance"], "UNVERIFIED", "{text}");
    let source = fixture["source"].as_str().unwrap();
    assert!(
        source.contains(&github.origin()) && source.contains("loopback or private"),
        "{source}"
    );
    assert!(
        recorded.stderr.contains("UNVERIFIED"),
        "{}",
        recorded.stderr
    );
    assert_eq!(
        fixture["exchanges"][0]["request"],
        json!({"method": "GET", "path": "/repos/octo/hello/contents/README.md", "origin": github.origin()})
    );
    assert_eq!(fixture["exchanges"][0]["response"]["status"], 200);

    // The same call replayed: same output, no request reached the server.
    let mut cmd = github_call("github_read_file", readme_args());
    cmd.arg("--replay").arg(&dir);
    let replayed = run_async(cmd).await;
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(
        replayed.stdout, recorded.stdout,
        "replay answers as live did"
    );
    assert!(
        replayed.stderr.contains("nothing was sent"),
        "{}",
        replayed.stderr
    );
    assert_eq!(github.requests().len(), 1, "replay sent nothing");

    // A second recording of the same tool is appended to the same file.
    let mut cmd = github_call("github_read_file", readme_args());
    live(&mut cmd, &github.origin());
    cmd.arg("--record").arg(&dir);
    assert_eq!(run_async(cmd).await.code, 0);
    let again: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(again["exchanges"].as_array().unwrap().len(), 2, "{again}");
    assert_eq!(again["exchanges"][0], fixture["exchanges"][0]);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "one fixture file per tool"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_write_is_scrubbed_where_the_upstream_reflects_the_secret() {
    let github = FakeGitHub::start(TOKEN).await;
    let dir = temp_dir("record-write");
    // A comment whose text holds the token: GitHub echoes the body back.
    let body = format!("deploy key is {TOKEN}, ok?");
    let mut cmd = github_call(
        "github_comment",
        json!({"owner": "octo", "repo": "hello", "number": 1, "body": body}),
    );
    live(&mut cmd, &github.origin());
    // A write: the author says it runs without a person's approval.
    cmd.arg("--record").arg(&dir).arg("--yes");
    let out = run_async(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        github.comments("octo", "hello", 1).last(),
        Some(&body),
        "the write reached the fake"
    );
    let text = std::fs::read_to_string(dir.join("github_comment.json")).unwrap();
    assert!(
        !text.contains(TOKEN),
        "the recording holds the secret:\n{text}"
    );
    let fixture: Value = serde_json::from_str(&text).unwrap();
    let exchange = &fixture["exchanges"][0];
    assert_eq!(exchange["request"]["method"], "POST");
    assert_eq!(
        exchange["request"]["json"]["body"], "deploy key is [REDACTED], ok?",
        "request body kept as JSON, scrubbed"
    );
    assert_eq!(
        exchange["response"]["json"]["body"], "deploy key is [REDACTED], ok?",
        "response scrubbed"
    );
}

/// A hand-written fixture of GitHub's contents API and cases over it.
fn github_fixtures(dir: &Path) {
    write(
        dir,
        "contents.json",
        &json!({
            "provenance": "UNVERIFIED",
            "source": "https://docs.github.com/en/rest/repos/contents#get-repository-content",
            "exchanges": [
                {"request": {"method": "GET", "path": "/repos/octo/hello/contents/README.md"},
                 "response": {"status": 200, "headers": [["content-type", "application/json"]],
                              "json": {"type": "file", "name": "README.md", "path": "README.md", "size": 8,
                                       "sha": "f413382f3b7102586ef892db59032c5106320931", "encoding": "base64", "content": "IyBIZWxsbwo=\n"}}},
                {"request": {"method": "GET", "path": "/repos/octo/hello/contents/nope.txt"},
                 "response": {"status": 404, "json": {"message": "Not Found"}}}
            ]
        }),
    );
}

fn good_cases() -> Vec<Value> {
    vec![
        json!({"name": "reads the README", "tool": "github_read_file", "arguments": readme_args(),
               "expect": {"ok": {"path": "README.md", "sha": "f413382f3b7102586ef892db59032c5106320931", "size": 8, "text": "# Hello\n"}}}),
        json!({"name": "a missing file is not-found", "tool": "read-file", "fixtures": ["contents.json"],
               "arguments": {"owner": "octo", "repo": "hello", "path": "nope.txt"},
               "expect": {"err": {"not-found": "`nope.txt` in octo/hello: Not Found"}}}),
        json!({"name": "arguments of the wrong type never reach the guest", "tool": "github_read_file",
               "arguments": {"owner": "octo", "repo": "hello", "path": 7},
               "expect": {"host_error": "invalid arguments at $.path"}}),
    ]
}

fn test_cmd(dir: &Path) -> Command {
    let mut cmd = bin();
    cmd.arg("test")
        .arg(components::GITHUB)
        .arg("--fixtures")
        .arg(dir);
    cmd
}

#[test]
fn test_passes_on_good_fixtures() {
    let dir = temp_dir("test-good");
    github_fixtures(&dir);
    write(&dir, "cases.json", &Value::Array(good_cases()));
    let out = run(test_cmd(&dir));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    for name in [
        "reads the README",
        "a missing file is not-found",
        "arguments of the wrong type never reach the guest",
    ] {
        assert!(
            out.stdout
                .lines()
                .any(|l| l.starts_with("ok ") && l.contains(name)),
            "{name}: {}",
            out.stdout
        );
    }
    assert!(
        out.stdout.contains("test result: ok. 3 passed; 0 failed"),
        "{}",
        out.stdout
    );
}

#[test]
fn test_fails_naming_the_case_on_a_wrong_expectation_and_on_an_unmatched_request() {
    let dir = temp_dir("test-bad");
    github_fixtures(&dir);
    let mut cases = good_cases();
    cases.push(json!({"name": "wrong text", "tool": "github_read_file", "arguments": readme_args(),
                      "expect": {"ok": {"path": "README.md", "sha": "f413382f3b7102586ef892db59032c5106320931", "size": 8, "text": "# Goodbye\n"}}}));
    cases.push(json!({"name": "no fixture for this ref", "tool": "github_read_file",
                      "arguments": {"owner": "octo", "repo": "hello", "path": "README.md", "git-ref": "feature"},
                      "expect": {"ok": {"path": "README.md", "sha": "f413382f3b7102586ef892db59032c5106320931", "size": 8, "text": "# Hello\n"}}}));
    write(&dir, "cases.json", &Value::Array(cases));
    let out = run(test_cmd(&dir));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let line = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name}: {}", out.stdout))
            .to_string()
    };
    assert!(
        line("reads the README").starts_with("ok "),
        "{}",
        out.stdout
    );
    let wrong = line("wrong text");
    assert!(wrong.starts_with("FAILED  wrong text"), "{wrong}");
    assert!(
        wrong
            .contains("output differs at $.ok.text: expected \"# Goodbye\\n\", got \"# Hello\\n\""),
        "{wrong}"
    );
    let unmatched = line("no fixture for this ref");
    assert!(
        unmatched.starts_with("FAILED  no fixture for this ref"),
        "{unmatched}"
    );
    assert!(
        unmatched.contains("unmatched request: replay: no fixture matches GET /repos/octo/hello/contents/README.md?ref=feature"),
        "{unmatched}"
    );
    assert!(
        out.stdout
            .contains("3 passed; 2 failed: wrong text, no fixture for this ref"),
        "{}",
        out.stdout
    );
}

#[test]
fn malformed_fixtures_and_cases_are_refused_naming_the_file() {
    let exchange = json!({"request": {"method": "GET", "path": "/x"}, "response": {"status": 200, "text": "hi"}});
    let bad_fixtures: Vec<(&str, String, &str)> = vec![
        ("no-provenance", json!({"exchanges": [exchange]}).to_string(), "provenance: missing"),
        ("captured-no-date", json!({"provenance": "CAPTURED", "exchanges": [exchange]}).to_string(), "CAPTURED needs `captured_at`"),
        ("captured-bad-date", json!({"provenance": "CAPTURED", "captured_at": "yesterday", "exchanges": [exchange]}).to_string(), "must be a date"),
        ("unverified-no-source", json!({"provenance": "UNVERIFIED", "exchanges": [exchange]}).to_string(), "UNVERIFIED needs `source`"),
        ("other-provenance", json!({"provenance": "TRUST-ME", "source": "x", "exchanges": [exchange]}).to_string(), "neither CAPTURED nor UNVERIFIED"),
        ("not-json", "{\"provenance\": ".to_string(), "malformed"),
        ("unknown-field", json!({"provenance": "UNVERIFIED", "source": "s", "exchanges": [exchange], "exchnages": []}).to_string(), "unknown field"),
        (
            "bad-method",
            json!({"provenance": "UNVERIFIED", "source": "s", "exchanges": [{"request": {"method": "TRACE", "path": "/x"}, "response": {"status": 200}}]}).to_string(),
            "exchange 0: method `TRACE`",
        ),
        (
            "bad-path",
            json!({"provenance": "UNVERIFIED", "source": "s", "exchanges": [{"request": {"method": "GET", "path": "/a/../b"}, "response": {"status": 200}}]}).to_string(),
            "dot segment",
        ),
        (
            "two-bodies",
            json!({"provenance": "UNVERIFIED", "source": "s", "exchanges": [{"request": {"method": "GET", "path": "/x"}, "response": {"status": 200, "text": "a", "json": 1}}]}).to_string(),
            "not several",
        ),
    ];
    for (name, text, needle) in bad_fixtures {
        let dir = temp_dir(&format!("bad-{name}"));
        let file = format!("{name}.json");
        std::fs::write(dir.join(&file), text).unwrap();
        write(&dir, "cases.json", &json!([]));
        for out in [run(test_cmd(&dir)), {
            let mut cmd = github_call("github_read_file", readme_args());
            cmd.arg("--replay").arg(&dir);
            run(cmd)
        }] {
            assert_eq!(out.code, 2, "{name}: {}{}", out.stdout, out.stderr);
            assert!(
                out.stderr.contains(&file),
                "{name}: the error names the file: {}",
                out.stderr
            );
            assert!(
                out.stderr.contains(needle),
                "{name}: expected {needle:?} in {}",
                out.stderr
            );
        }
    }

    // Cases files.
    let dir = temp_dir("bad-cases");
    github_fixtures(&dir);
    let bad_cases: Vec<(Value, &str)> = vec![
        (json!({"name": "x"}), "is not a list of cases"),
        (
            json!([{"name": "x", "tool": "t", "expect": {"maybe": 1}}]),
            "is not a list of cases",
        ),
        (
            json!([{"name": "x", "tool": "t", "expect": {"ok": 1}, "fixtures": ["absent.json"]}]),
            "names fixture `absent.json`",
        ),
        (
            json!([{"name": "x", "tool": "t", "expect": {"ok": 1}}, {"name": "x", "tool": "t", "expect": {"ok": 1}}]),
            "two cases are named `x`",
        ),
    ];
    for (cases, needle) in bad_cases {
        write(&dir, "cases.json", &cases);
        let out = run(test_cmd(&dir));
        assert_eq!(out.code, 2, "{cases}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("cases.json") && out.stderr.contains(needle),
            "{cases}: expected {needle:?} in {}",
            out.stderr
        );
    }
    std::fs::remove_file(dir.join("cases.json")).unwrap();
    let out = run(test_cmd(&dir));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("cases.json"), "{}", out.stderr);
}

/// The `socket(...)` lines of an strace log that open an IP socket.
fn ip_sockets(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .filter(|l| l.contains("socket(") && (l.contains("AF_INET") || l.contains("AF_INET6")))
        .collect()
}

fn strace() -> &'static str {
    let path = "/usr/bin/strace";
    let found = Path::new(path).is_file()
        || Command::new("sh")
            .args(["-c", "command -v strace"])
            .output()
            .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "strace is not installed: `apt-get install -y strace` (.ci/run does); this test needs it to count sockets"
    );
    if Path::new(path).is_file() {
        path
    } else {
        "strace"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_opens_no_network_socket() {
    let strace = strace();
    let dir = temp_dir("strace");
    github_fixtures(&dir);
    write(&dir, "cases.json", &Value::Array(good_cases()));

    let traced = |log: &Path, cmd: &Command| {
        let mut wrapped = Command::new(strace);
        wrapped
            .args(["-f", "-e", "trace=socket,connect", "-o"])
            .arg(log)
            .arg(cmd.get_program())
            .args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        wrapped
    };

    let log = dir.join("test.strace");
    let out = run_async(traced(&log, &test_cmd(&dir))).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("3 passed; 0 failed"), "{}", out.stdout);
    let trace = std::fs::read_to_string(&log).expect("strace wrote its log");
    assert!(
        ip_sockets(&trace).is_empty(),
        "scout-host test opened IP sockets:\n{}",
        ip_sockets(&trace).join("\n")
    );

    // The check can see a socket: the same tracing of a live call shows one.
    let github = FakeGitHub::start(TOKEN).await;
    let mut live_cmd = github_call("github_read_file", readme_args());
    live(&mut live_cmd, &github.origin());
    let log = dir.join("live.strace");
    let out = run_async(traced(&log, &live_cmd)).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let trace = std::fs::read_to_string(&log).unwrap();
    assert!(
        !ip_sockets(&trace).is_empty(),
        "a live call shows its socket in the trace:\n{trace}"
    );
}

// ----- new -------------------------------------------------------------------

fn new_cmd(name: &str, dir: &Path, options: &[&str]) -> Command {
    let mut cmd = bin();
    cmd.arg("new")
        .arg("--dir")
        .arg(dir)
        .args(options)
        .arg("--")
        .arg(name);
    cmd
}

#[test]
fn new_scaffolds_a_connector_with_every_name_replaced() {
    let root = temp_dir("new");
    let dir = root.join("my-shop");
    let out = run(new_cmd("my-shop", &dir, &[]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let read =
        |p: &str| std::fs::read_to_string(dir.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));

    let cargo = read("Cargo.toml");
    assert!(
        cargo.contains("name = \"scout-connector-my-shop\""),
        "{cargo}"
    );
    // The SDK is vendored into the scaffold: nothing refers to the checkout
    // this binary was built from, which no other machine has.
    assert!(
        cargo.contains("scout-sdk = { path = \"vendor/scout-sdk\" }"),
        "a vendored SDK: {cargo}"
    );
    assert!(cargo.contains("[workspace]"), "a project of its own");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (vendored, original) in [
        ("vendor/scout-sdk/src/lib.rs", "sdk/src/lib.rs"),
        (
            "vendor/scout-sdk/macros/src/lib.rs",
            "sdk/macros/src/lib.rs",
        ),
        (
            "vendor/scout-sdk/manifest/src/policy.rs",
            "sdk/manifest/src/policy.rs",
        ),
        ("vendor/scout-sdk/wit/http.wit", "wit/http.wit"),
    ] {
        assert_eq!(
            read(vendored),
            std::fs::read_to_string(repo.join(original)).unwrap(),
            "{vendored}"
        );
    }
    for manifest in [
        "vendor/scout-sdk/Cargo.toml",
        "vendor/scout-sdk/macros/Cargo.toml",
        "vendor/scout-sdk/manifest/Cargo.toml",
    ] {
        let text = read(manifest);
        let table: toml::Table = text.parse().unwrap_or_else(|e| panic!("{manifest}: {e}"));
        assert!(!text.contains("workspace = true"), "{manifest}:\n{text}");
        assert_eq!(
            table["package"]["edition"].as_str(),
            Some("2024"),
            "{manifest}"
        );
    }

    let wit = read("wit/my-shop.wit");
    assert!(wit.starts_with("package my-shop:my-shop@0.1.0;"), "{wit}");
    assert!(wit.contains("world my-shop {"), "{wit}");
    let lib = read("src/lib.rs");
    assert!(
        lib.contains("use bindings::exports::my_shop::my_shop::read_tools::"),
        "{lib}"
    );
    assert!(
        lib.contains("struct MyShop;") && lib.contains("scout_sdk::export!(MyShop);"),
        "{lib}"
    );
    for (file, text) in [("Cargo.toml", &cargo), ("wit", &wit), ("lib.rs", &lib)] {
        for word in [
            "acme",
            "Example",
            "example:",
            "::example",
            "world example",
            "connector-example",
        ] {
            assert!(!text.contains(word), "{file} still says `{word}`");
        }
    }
    assert_eq!(
        read("rust-toolchain.toml"),
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../rust-toolchain.toml")
        )
        .unwrap()
    );

    // The contract is copied, every file of it, not linked.
    let contract = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
    let mut want: Vec<String> = std::fs::read_dir(&contract)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut got: Vec<String> = std::fs::read_dir(dir.join("wit/deps/scout-connector"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    want.sort();
    got.sort();
    assert_eq!(
        got, want,
        "the scaffold's contract files are the repository's"
    );
    for file in &want {
        let copied = dir.join("wit/deps/scout-connector").join(file);
        assert!(!copied.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(
            std::fs::read_to_string(&copied).unwrap(),
            std::fs::read_to_string(contract.join(file)).unwrap(),
            "{file}"
        );
    }

    // Starter cases for the template's tools, with a fixture that has provenance.
    let cases: Value = serde_json::from_str(&read("fixtures/cases.json")).unwrap();
    let tools: Vec<&str> = cases
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"my_shop_get_item") && tools.contains(&"my_shop_create_note"),
        "{tools:?}"
    );
    let fixture: Value = serde_json::from_str(&read("fixtures/items.json")).unwrap();
    assert_eq!(fixture["provenance"], "UNVERIFIED");

    // A git SDK instead.
    let git_dir = root.join("git-one");
    let out = run(new_cmd(
        "git-one",
        &git_dir,
        &["--sdk-git", "https://example.invalid/scout.git"],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let cargo = std::fs::read_to_string(git_dir.join("Cargo.toml")).unwrap();
    assert!(
        cargo.contains("scout-sdk = { git = \"https://example.invalid/scout.git\" }"),
        "{cargo}"
    );
}

#[test]
fn new_refuses_bad_names_and_a_non_empty_directory() {
    let root = temp_dir("new-refused");
    for (name, needle) in [
        ("My-Shop", "not a WIT identifier"),
        ("my_shop", "not a WIT identifier"),
        ("-shop", "not a WIT identifier"),
        ("shop-", "not a WIT identifier"),
        ("2shop", "not a WIT identifier"),
        ("my--shop", "not a WIT identifier"),
        ("type", "keyword"),
        ("item", "would clash with `Item`"),
    ] {
        let dir = root.join(format!("n-{}", name.len()));
        let out = run(new_cmd(name, &dir, &[]));
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert!(
            out.stderr.contains(needle),
            "{name}: expected {needle:?} in {}",
            out.stderr
        );
        assert!(!dir.exists(), "{name}: nothing written");
    }
    let full = root.join("full");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(full.join("keep.txt"), "mine").unwrap();
    let out = run(new_cmd("shop", &full, &[]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("exists and is not an empty directory"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(full.join("keep.txt")).unwrap(),
        "mine"
    );
    assert_eq!(
        std::fs::read_dir(&full).unwrap().count(),
        1,
        "nothing added"
    );
}

/// The scaffold builds for wasm32-wasip2 as it stands, loads, and passes its
/// own starter cases: `new` gives an author something that works.
#[test]
fn a_new_scaffold_builds_and_passes_its_starter_cases() {
    let root = temp_dir("new-build");
    let dir = root.join("starter");
    let out = run(new_cmd("starter", &dir, &[]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The workspace's lock pins the versions this repository already
    // fetched, so the nested build needs no network.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"),
        dir.join("Cargo.lock"),
    )
    .unwrap();
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scaffold-target");
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string()));
    cargo
        .current_dir(&dir)
        .args([
            "build",
            "--release",
            "--offline",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target_dir);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if (key.starts_with("CARGO_") && key != "CARGO_HOME")
            || matches!(
                key,
                "RUSTFLAGS" | "RUSTC_WORKSPACE_WRAPPER" | "OUT_DIR" | "TARGET" | "HOST"
            )
        {
            cargo.env_remove(key);
        }
    }
    let built = cargo.output().expect("run cargo");
    assert!(
        built.status.success(),
        "the scaffold does not build:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let wasm = target_dir.join("wasm32-wasip2/release/scout_connector_starter.wasm");
    assert!(wasm.is_file(), "{} was built", wasm.display());

    // Every crate the build read by path lies inside the scaffold.
    let mut metadata = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string()));
    metadata
        .current_dir(&dir)
        .args(["metadata", "--offline", "--format-version", "1"]);
    for (key, _) in std::env::vars_os() {
        if key
            .to_str()
            .is_some_and(|k| k.starts_with("CARGO_") && k != "CARGO_HOME")
        {
            metadata.env_remove(key);
        }
    }
    let metadata = metadata.output().expect("run cargo metadata");
    assert!(
        metadata.status.success(),
        "{}",
        String::from_utf8_lossy(&metadata.stderr)
    );
    let metadata: Value = serde_json::from_slice(&metadata.stdout).unwrap();
    let inside = dir.canonicalize().unwrap();
    let local: Vec<&str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["source"].is_null())
        .map(|p| p["manifest_path"].as_str().unwrap())
        .collect();
    assert_eq!(
        local.len(),
        4,
        "the connector and the SDK's three crates: {local:?}"
    );
    for path in local {
        assert!(
            Path::new(path).starts_with(&inside),
            "{path} is outside the scaffold"
        );
    }

    let mut cmd = bin();
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

    let mut cmd = bin();
    cmd.arg("inspect").arg(&wasm).arg("--json");
    let report: Value = serde_json::from_str(&run(cmd).stdout).unwrap();
    assert_eq!(report["connector"]["name"], "starter");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["starter_get_item", "starter_create_note"]);

    // What the WIT says of parameters, fields and cases reaches the schema
    // the agent sees; the `Parameters:` list leaves the tool's description.
    let get_item = &report["tools"][0];
    assert_eq!(get_item["description"], "Read one item by its id.");
    assert_eq!(
        get_item["input_schema"]["properties"]["id"]["description"],
        "the item's id, as the service shows it (letters, digits, `-` and `_`)."
    );
    let item = &get_item["output_schema"];
    assert_eq!(item["description"], "One item of the Starter service.");
    assert_eq!(
        item["properties"]["tags"]["description"],
        "Tags, in the order the service lists them."
    );
    let priority = item["properties"]["priority"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(
        priority.starts_with("Its priority.")
            && priority.contains("- `high`: Before anything else."),
        "{priority}"
    );
    assert_eq!(
        item["properties"]["description"]["anyOf"][0]["type"], "string",
        "an option's schema is unchanged: {item}"
    );
    assert_eq!(
        item["properties"]["description"]["description"],
        "The long description; none when the item has none."
    );
    let note = &report["tools"][1]["input_schema"]["properties"];
    assert_eq!(
        note["item-id"]["description"],
        "the id of the item the note is added to."
    );
}

/// Matching, straight at the capability: the checks are live's, identical
/// requests are answered in order and the last answer is reused, queries
/// compare as multisets, JSON bodies as values, and the caps still apply.
#[tokio::test]
async fn replay_matches_in_order_then_reuses_the_last_and_checks_like_live() {
    use scout_host::capabilities::http::{HttpError, HttpMode, Method, Request};
    use scout_host::capabilities::replay::{FixtureFile, Replay};
    use scout_host::{HttpCapability, HttpConfig};
    let fixture = FixtureFile::parse(
        Path::new("inline.json"),
        &json!({
            "provenance": "CAPTURED", "captured_at": "2026-12-01",
            "exchanges": [
                {"request": {"method": "GET", "path": "/seq"}, "response": {"status": 200, "text": "first"}},
                {"request": {"method": "GET", "path": "/seq"}, "response": {"status": 200, "text": "second"}},
                {"request": {"method": "POST", "path": "/items", "json": {"a": 1, "b": [2]}}, "response": {"status": 201, "json": {"ok": true}}},
                {"request": {"method": "GET", "path": "/q", "query": [["a", "1"], ["b", "2"]]}, "response": {"status": 204}},
                {"request": {"method": "GET", "path": "/big"}, "response": {"status": 200, "text": "0123456789abcdef"}}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let replay = std::sync::Arc::new(Replay::from_files([&fixture]));
    let mut config =
        HttpConfig::new("https://replay.invalid").mode(HttpMode::Replay(replay.clone()));
    config.max_response_bytes = 12;
    config.max_request_bytes = 64;
    let http = HttpCapability::new(config).unwrap();
    let req = |method, path: &str, query: &[(&str, &str)], body: Option<&str>| Request {
        method,
        path: path.to_string(),
        query: query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.map(|b| b.as_bytes().to_vec()),
    };
    let text = |r: Result<scout_host::capabilities::http::Response, HttpError>| {
        String::from_utf8(r.unwrap().body).unwrap()
    };
    let denied = |r: Result<scout_host::capabilities::http::Response, HttpError>| match r {
        Err(HttpError::Denied(reason)) => reason,
        other => panic!("expected denied, got {other:?}"),
    };

    assert_eq!(
        text(http.send(req(Method::Get, "/seq", &[], None)).await),
        "first"
    );
    assert_eq!(
        text(http.send(req(Method::Get, "/seq", &[], None)).await),
        "second"
    );
    assert_eq!(
        text(http.send(req(Method::Get, "/seq", &[], None)).await),
        "second",
        "the last answer is reused"
    );

    let created = http
        .send(req(
            Method::Post,
            "/items",
            &[],
            Some(r#"{ "b": [2], "a": 1 }"#),
        ))
        .await
        .unwrap();
    assert_eq!(created.status, 201);
    assert!(
        created
            .headers
            .contains(&("content-type".to_string(), "application/json".to_string()))
    );
    let reason = denied(
        http.send(req(
            Method::Post,
            "/items",
            &[],
            Some(r#"{"a": 2, "b": [2]}"#),
        ))
        .await,
    );
    assert!(
        reason.contains("replay: no fixture matches POST /items")
            && reason.contains("not the body"),
        "{reason}"
    );

    assert_eq!(
        http.send(req(Method::Get, "/q", &[("b", "2"), ("a", "1")], None))
            .await
            .unwrap()
            .status,
        204,
        "query order does not matter"
    );
    assert_eq!(
        denied(http.send(req(Method::Get, "/q", &[("a", "1")], None)).await),
        "replay: no fixture matches GET /q?a=1"
    );

    // Live's checks first: these never reach the fixtures.
    let reason = denied(http.send(req(Method::Get, "/a/../seq", &[], None)).await);
    assert!(reason.contains("dot segment"), "{reason}");
    let reason = denied(
        http.send(req(Method::Post, "/items", &[], Some(&"x".repeat(65))))
            .await,
    );
    assert!(reason.contains("larger than 64 bytes"), "{reason}");
    assert!(
        matches!(
            http.send(req(Method::Get, "/big", &[], None)).await,
            Err(HttpError::TooLarge(12))
        ),
        "the response cap applies"
    );

    assert_eq!(replay.misses().len(), 2, "{:?}", replay.misses());
}

/// `call` asks no person, where `serve` asks one before each write: a write
/// tool runs upstream only with `--yes`, and says so; without it nothing is
/// sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_runs_a_write_upstream_only_with_yes() {
    let github = FakeGitHub::start(TOKEN).await;
    let args = json!({"owner": "octo", "repo": "hello", "branch": "author/yes", "from": "main"});
    let mut cmd = github_call("github_create_branch", args.clone());
    live(&mut cmd, &github.origin());
    let out = run_async(cmd).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("is a write, and `call` runs it upstream without the person's approval `serve` would ask for: add --yes"),
        "{}",
        out.stderr
    );
    assert!(github.requests().is_empty(), "nothing was sent");

    let mut cmd = github_call("github_create_branch", args);
    live(&mut cmd, &github.origin());
    cmd.arg("--yes");
    let out = run_async(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("run without a person's approval (--yes)"),
        "{}",
        out.stderr
    );
    assert_eq!(github.ref_creations(), ["refs/heads/author/yes"]);
}

/// A new case (no `expect`) fails until `test --bless` records what it does
/// now, once every request it made matched a fixture; the cases that have
/// an `expect` are checked, never rewritten; then the case passes.
#[test]
fn test_bless_records_the_outcome_of_new_cases_only() {
    let dir = temp_dir("test-bless");
    github_fixtures(&dir);
    let mut cases = good_cases();
    cases.push(json!({"name": "new: reads the README", "tool": "github_read_file", "arguments": readme_args()}));
    cases.push(json!({"name": "new: no fixture for this ref", "tool": "github_read_file",
                      "arguments": {"owner": "octo", "repo": "hello", "path": "README.md", "git-ref": "feature"}}));
    write(&dir, "cases.json", &Value::Array(cases));

    let out = run(test_cmd(&dir));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("FAILED  new: reads the README: no `expect`: run with --bless"),
        "{}",
        out.stdout
    );

    let mut bless = test_cmd(&dir);
    bless.arg("--bless");
    let out = run(bless);
    assert_eq!(
        out.code, 1,
        "the unmatched case is not blessed: {}",
        out.stdout
    );
    assert!(
        out.stdout.contains("blessed new: reads the README"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("FAILED  new: no fixture for this ref: not blessed: unmatched request"),
        "{}",
        out.stdout
    );
    let written: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let by_name = |name: &str| written.iter().find(|c| c["name"] == name).unwrap().clone();
    assert_eq!(
        by_name("new: reads the README")["expect"],
        json!({"ok": {"path": "README.md", "sha": "f413382f3b7102586ef892db59032c5106320931", "size": 8, "text": "# Hello\n"}})
    );
    assert!(
        by_name("new: no fixture for this ref")
            .get("expect")
            .is_none()
    );
    for good in good_cases() {
        assert_eq!(by_name(good["name"].as_str().unwrap()), good, "untouched");
    }

    // Blessed, it is a case like the others.
    let mut cases: Vec<Value> = written
        .into_iter()
        .filter(|c| c["name"] != "new: no fixture for this ref")
        .collect();
    cases.sort_by_key(|c| c["name"].as_str().unwrap().to_string());
    write(&dir, "cases.json", &Value::Array(cases));
    let out = run(test_cmd(&dir));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("test result: ok. 4 passed"),
        "{}",
        out.stdout
    );
}

/// A parameter's declared range (`- limit (1 to 50, default 10)` in
/// Shopify's WIT) is in the schema as `minimum`/`maximum`/`default`, and
/// the host refuses a value outside it before the guest runs: nothing
/// reaches the upstream. The edge of the range itself is served.
#[tokio::test]
async fn a_value_outside_a_declared_range_is_refused_before_the_guest_runs() {
    let out = run(bin_inspect_json(components::SHOPIFY));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let tool = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shopify_search_products")
        .expect("shopify_search_products is listed");
    let limit = &tool["input_schema"]["properties"]["limit"];
    assert_eq!(
        (&limit["minimum"], &limit["maximum"], &limit["default"]),
        (&json!(1), &json!(50), &json!(10)),
        "{limit}"
    );

    let upstream = scout_tests::upstream::Upstream::start().await;
    for refused in [0, 51, 255] {
        let mut cmd = bin();
        cmd.arg("call")
            .arg(components::SHOPIFY)
            .arg("shopify_search_products")
            .arg(json!({"query": "mug", "limit": refused}).to_string());
        live(&mut cmd, &upstream.origin());
        let out = run_async(cmd).await;
        assert_ne!(out.code, 0, "limit {refused} was served");
        // The host's refusal (the guest's own would not name `$.limit`).
        assert!(
            format!("{}{}", out.stdout, out.stderr)
                .contains(&format!("$.limit: must be between 1 and 50, not {refused}")),
            "limit {refused}: {}{}",
            out.stdout,
            out.stderr
        );
    }
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());

    // The edge of the range runs the tool, which asks the upstream.
    let mut cmd = bin();
    cmd.arg("call")
        .arg(components::SHOPIFY)
        .arg("shopify_search_products")
        .arg(json!({"query": "mug", "limit": 50}).to_string());
    live(&mut cmd, &upstream.origin());
    let out = run_async(cmd).await;
    assert_eq!(upstream.seen().len(), 1, "{}{}", out.stdout, out.stderr);
}

fn bin_inspect_json(component: &str) -> Command {
    let mut cmd = bin();
    cmd.args(["inspect", "--json", component]);
    cmd
}

/// The author's traps (issue 54, item 7): a body no fixture matches is
/// shown beside the closest fixture's, and a header the host owns that the
/// guest set is reported (still dropped), by `test` and by `call --replay`.
#[test]
fn an_unmatched_body_and_a_header_the_host_owns_are_shown_to_the_author() {
    let dir = temp_dir("author-traps");
    write(
        &dir,
        "query.json",
        &json!({"provenance": "UNVERIFIED", "source": "https://example.com/docs/query",
                "exchanges": [
                  {"request": {"method": "POST", "path": "/query", "json": {"property": "Status"}},
                   "response": {"status": 200, "json": {}}}]}),
    );
    let filter = json!({"filter": {"property": "Owner"}});
    write(
        &dir,
        "cases.json",
        &json!([{"name": "another filter", "tool": "jsonargs_query", "arguments": filter,
                 "expect": {"ok": "{\"property\":\"Owner\"}"}}]),
    );
    let sent = "body sent:        {\"property\":\"Owner\"}";
    let closest = "closest fixture:  {\"property\":\"Status\"}";

    let mut test = bin();
    test.arg("test")
        .arg(components::JSONARGS)
        .arg("--fixtures")
        .arg(&dir);
    let out = run(test);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains(sent), "{}", out.stdout);
    assert!(out.stdout.contains(closest), "{}", out.stdout);
    assert!(
        out.stdout.contains(
            "note    another filter: the guest set header `authorization`, which the host owns: dropped, not sent"
        ),
        "{}",
        out.stdout
    );

    let mut call = bin();
    call.arg("call")
        .arg(components::JSONARGS)
        .arg("jsonargs_query")
        .arg(filter.to_string())
        .arg("--replay")
        .arg(&dir);
    let out = run(call);
    assert!(out.stderr.contains(sent), "{}", out.stderr);
    assert!(out.stderr.contains(closest), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "note: the guest set header `authorization`, which the host owns: dropped, not sent"
        ),
        "{}",
        out.stderr
    );
}
