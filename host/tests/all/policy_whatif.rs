//! What-if before a policy change (issue 56, item 5), through the real
//! `serve` binary, the official Python MCP client and the real
//! `scout-host policy` command line.
//!
//! A person-chat session is recorded under an operator policy in force
//! (reading `src/*` forbidden): five GitHub reads, one refused by it. With
//! `serve` stopped, `policy test` replays the store's calls under a
//! candidate that replaces that document (workflow files and issues
//! forbidden instead) and prints exactly the three decisions that change,
//! not the two that do not; without the store key, the calls of the tool
//! the candidate's argument rule covers are undecidable, never guessed.
//! `policy check` refuses a candidate naming an argument the tool does not
//! have, with its line, and lists a valid one's policies with their tools.
//! Started again on the same store, the admin API's
//! `POST /v1/policies/test` answers what the command line printed.

use crate::common;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const ADMIN_TOKEN: &str = "policy-whatif-admin-token-0123456789";
const GITHUB_TOKEN: &str = "ghp_policyWhatIfToken0123456789";
/// The store key's byte, repeated 32 times (hex).
const STORE_KEY_BYTE: &str = "6e";

const READ_FILE: &str = "mcp__github__github_read_file";
const READ_ISSUE: &str = "mcp__github__github_read_issue";
const LIST_BRANCHES: &str = "mcp__github__github_list_branches";

/// In force while the session is recorded: reading under `src/` refused.
const IN_FORCE: &str = r#"@id("no-src")
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.path like "src/*" };
"#;

/// The candidate replacing it: workflow files and every issue instead.
const CANDIDATE: &str = r#"@id("no-workflows")
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.path like ".github/*" };

@id("no-issues")
forbid (principal, action in [Scout::Action::"mcp__github__github_read_issue"], resource);
"#;

/// A candidate naming an argument `github_read_file` does not have, on
/// its third line.
const UNKNOWN_ARGUMENT: &str = r#"@id("no-branch")
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.branch == "main" };
"#;

/// The calls the session makes, in order: (tool's wire name, arguments).
fn calls() -> Vec<(&'static str, Value)> {
    let file = |path: &str| json!({"owner": "octo", "repo": "hello", "path": path});
    vec![
        ("github_read_file", file("README.md")),
        ("github_read_file", file("src/lib.rs")),
        ("github_read_file", file(".github/workflows/ci.yml")),
        (
            "github_list_branches",
            json!({"owner": "octo", "repo": "hello"}),
        ),
        (
            "github_read_issue",
            json!({"owner": "octo", "repo": "hello", "number": 1}),
        ),
    ]
}

/// A scratch directory removed on drop.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn digest(args: &Value) -> String {
    scout_host::store::args_digest(args)
}

/// `scout-host policy ARGS` with the store key set (or not).
fn policy(args: &[&str], config: &Path, with_key: bool) -> Output {
    let mut command = Command::new(common::SCOUT_HOST);
    command
        .arg("policy")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SCOUT_LOG", "error")
        .current_dir(config.parent().unwrap());
    for key in ["HOME", "XDG_CACHE_HOME", "SCOUT_CACHE_DIR"] {
        if let Ok(value) = std::env::var(key) {
            command.env(key, value);
        }
    }
    if with_key {
        command.env("SCOUT_STORE_KEY", STORE_KEY_BYTE.repeat(32));
    }
    command.output().expect("run scout-host policy")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn admin(
    http: &reqwest::Client,
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (reqwest::StatusCode, Value) {
    let mut request = http
        .request(method, format!("{base}{path}"))
        .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"));
    if let Some(body) = body {
        request = request
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// What a replayed call is compared by: its tool, its arguments' digest,
/// its decision before and after.
fn changes(report: &Value) -> Vec<(String, String, Value, Value)> {
    report["calls"]
        .as_array()
        .unwrap_or_else(|| panic!("a report: {report}"))
        .iter()
        .map(|call| {
            (
                call["tool"].as_str().unwrap().to_string(),
                call["args_digest"].as_str().unwrap_or_default().to_string(),
                call["before"].clone(),
                call["after"].clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_test_prints_exactly_the_decisions_a_candidate_changes() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    // Tools offered unreviewed: what is tested is the policies' decisions.
    let config_text = format!(
        "require_review = false\n{}\n[policy]\nfiles = [\"policies/*.cedar\"]\n",
        scout_tests::serve_config_for_github(&github.origin())
    );
    let (dir, config) = scout_tests::serve::fresh_config("policy-whatif", &config_text);
    let _scratch = Scratch(dir.clone());
    std::fs::create_dir_all(dir.join("policies")).unwrap();
    let in_force = dir.join("policies/github.cedar");
    std::fs::write(&in_force, IN_FORCE).unwrap();
    // The same candidate kept elsewhere, replacing the document by name.
    let elsewhere = dir.join("candidate.cedar");
    std::fs::write(&elsewhere, CANDIDATE).unwrap();
    let bad = dir.join("candidate-bad.cedar");
    std::fs::write(&bad, UNKNOWN_ARGUMENT).unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();

    // --- the session, recorded under the policy in force ---
    let mut serve = common::serve_as(&config, ADMIN_TOKEN, STORE_KEY_BYTE)
        .compile_cache()
        .env("SCOUT_LOG", "error")
        .start();
    let (status, _) = admin(
        &http,
        &serve.base,
        reqwest::Method::PUT,
        "/v1/brands/acme/connections/github",
        Some(json!({"secret": GITHUB_TOKEN})),
    )
    .await;
    assert!(status.is_success(), "{status}\n{}", serve.stderr());
    let (status, session) = admin(
        &http,
        &serve.base,
        reqwest::Method::POST,
        "/v1/sessions",
        Some(json!({"brand": "acme", "role": "person-chat"})),
    )
    .await;
    assert_eq!(status, 201, "{session}");
    let plan: Vec<Value> = calls()
        .into_iter()
        .map(|(tool, arguments)| json!({"tool": tool, "arguments": arguments}))
        .collect();
    let summary = common::client_story(
        "calls.py",
        vec![
            "--url".into(),
            session["mcp"]["github"].as_str().unwrap().into(),
            "--token".into(),
            session["token"].as_str().unwrap().into(),
            "--calls".into(),
            Value::Array(plan).to_string(),
        ],
    )
    .await;
    let refused: Vec<bool> = summary["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["is_error"].as_bool().unwrap())
        .collect();
    assert_eq!(
        refused,
        [false, true, false, false, false],
        "only the read under src/ is refused by the policy in force: {summary}\n{session}\n{}",
        serve.stderr()
    );
    assert!(
        summary["answers"][1]["text"]
            .as_str()
            .unwrap()
            .contains("no-src"),
        "the refusal names the policy: {summary}"
    );
    let session_id = session["id"].as_str().unwrap().to_string();
    serve.signal("TERM");
    let stopped = serve.exited_within(Duration::from_secs(60)).await;
    assert!(
        stopped.is_some_and(|s| s.success()),
        "serve stops on SIGTERM: {stopped:?}\n{}",
        serve.stderr()
    );

    // --- policy test: exactly the three decisions that change ---
    // The operator edits the document in place: it replaces itself.
    std::fs::write(&in_force, CANDIDATE).unwrap();
    let config_arg = config.to_str().unwrap();
    let out = policy(
        &["test", "policies/github.cedar", "--config", config_arg],
        &config,
        true,
    );
    let printed = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{printed}\n{}",
        text(&out.stderr)
    );
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 4, "three changes and the summary:\n{printed}");
    let expected_lines = [
        format!("{READ_FILE}: forbid (policy no-src) -> allow"),
        format!("{READ_FILE}: allow -> forbid (policy no-workflows)"),
        format!("{READ_ISSUE}: allow -> forbid (policy no-issues)"),
    ];
    for (line, expected) in lines.iter().zip(&expected_lines) {
        assert!(
            line.contains(&format!("session {session_id} ")) && line.ends_with(expected.as_str()),
            "{line:?} ends with {expected:?}:\n{printed}"
        );
    }
    assert!(
        lines[3].starts_with("5 calls replayed under r0-")
            && lines[3].contains(": 3 would change, 0 undecidable without arguments, 2 unchanged"),
        "{printed}"
    );
    assert!(!printed.contains(LIST_BRANCHES), "{printed}");

    // The same as JSON, each call told by its arguments' digest.
    let out = policy(
        &[
            "test",
            "policies/github.cedar",
            "--config",
            config_arg,
            "--json",
        ],
        &config,
        true,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let cli_report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let plan = calls();
    assert_eq!(
        changes(&cli_report),
        vec![
            (
                READ_FILE.to_string(),
                digest(&plan[1].1),
                json!({"decision": "forbid", "policy": "no-src"}),
                json!({"decision": "allow"}),
            ),
            (
                READ_FILE.to_string(),
                digest(&plan[2].1),
                json!({"decision": "allow"}),
                json!({"decision": "forbid", "policy": "no-workflows"}),
            ),
            (
                READ_ISSUE.to_string(),
                digest(&plan[4].1),
                json!({"decision": "allow"}),
                json!({"decision": "forbid", "policy": "no-issues"}),
            ),
        ],
        "{cli_report:#}"
    );
    assert_eq!(
        (
            &cli_report["replayed"],
            &cli_report["changed"],
            &cli_report["undecidable"],
            &cli_report["unchanged"],
            &cli_report["without_arguments"],
        ),
        (&json!(5), &json!(3), &json!(0), &json!(2), &json!(0)),
        "{cli_report:#}"
    );
    for call in cli_report["calls"].as_array().unwrap() {
        assert_eq!(call["arguments"], "opened", "{call}");
        assert_eq!(call["session"], session_id.as_str(), "{call}");
    }

    // --- without the store key: the argument rule's tool is undecidable ---
    let out = policy(
        &[
            "test",
            elsewhere.to_str().unwrap(),
            "--replaces",
            "policies/github.cedar",
            "--config",
            config_arg,
            "--json",
        ],
        &config,
        false,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let keyless: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let undecidable =
        json!({"decision": "undecidable_without_arguments", "policies": ["no-workflows"]});
    assert_eq!(
        changes(&keyless),
        vec![
            (
                READ_FILE.to_string(),
                digest(&plan[0].1),
                json!({"decision": "allow"}),
                undecidable.clone(),
            ),
            (
                READ_FILE.to_string(),
                digest(&plan[1].1),
                json!({"decision": "forbid", "policy": "no-src"}),
                undecidable.clone(),
            ),
            (
                READ_FILE.to_string(),
                digest(&plan[2].1),
                json!({"decision": "allow"}),
                undecidable,
            ),
            (
                READ_ISSUE.to_string(),
                digest(&plan[4].1),
                json!({"decision": "allow"}),
                json!({"decision": "forbid", "policy": "no-issues"}),
            ),
        ],
        "a policy that does not read the arguments still decides; one that does is never guessed: {keyless:#}"
    );
    assert_eq!(
        (
            &keyless["changed"],
            &keyless["undecidable"],
            &keyless["unchanged"],
            &keyless["without_arguments"]
        ),
        (&json!(1), &json!(3), &json!(1), &json!(5)),
        "{keyless:#}"
    );

    // --- policy check and policy schema ---
    let out = policy(
        &["check", bad.to_str().unwrap(), "--config", config_arg],
        &config,
        false,
    );
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("candidate-bad.cedar:3:") && said.contains("no-branch"),
        "the error names the file, its line and the policy: {said}"
    );
    let out = policy(
        &["check", "policies/github.cedar", "--config", config_arg],
        &config,
        false,
    );
    let listed = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{listed}{}", text(&out.stderr));
    assert!(
        listed.contains(&format!("no-workflows: {READ_FILE}\n"))
            && listed.contains(&format!("no-issues: {READ_ISSUE}\n")),
        "each policy with the tools it applies to: {listed}"
    );
    let out = policy(&["schema", "--config", config_arg], &config, false);
    let schema = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        schema.contains(&format!("action \"{READ_FILE}\"")) && schema.contains("\"path\": String"),
        "{schema}"
    );

    // --- the admin API's what-if on the same store answers the same ---
    // The file back as it was in force: the candidate goes in the request.
    std::fs::write(&in_force, IN_FORCE).unwrap();
    let serve = common::serve_as(&config, ADMIN_TOKEN, STORE_KEY_BYTE)
        .compile_cache()
        .env("SCOUT_LOG", "error")
        .start();
    let (status, api_report) = admin(
        &http,
        &serve.base,
        reqwest::Method::POST,
        "/v1/policies/test",
        Some(json!({"name": "policies/github.cedar", "text": CANDIDATE})),
    )
    .await;
    assert_eq!(status, 200, "{api_report}\n{}", serve.stderr());
    assert_eq!(changes(&api_report), changes(&cli_report), "{api_report:#}");
    for key in [
        "replayed",
        "changed",
        "undecidable",
        "unchanged",
        "candidate_revision",
    ] {
        assert_eq!(api_report[key], cli_report[key], "{key}: {api_report:#}");
    }
    let (status, refused) = admin(
        &http,
        &serve.base,
        reqwest::Method::POST,
        "/v1/policies/test",
        Some(json!({"name": "policies/github.cedar", "text": UNKNOWN_ARGUMENT})),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(":3:") && m.contains("no-branch")),
        "{refused}"
    );
}
