//! A person asked the 2026-07-28 way, through the real `serve` binary and
//! the official Python client in stateless mode (`input_required.py`): a
//! write needing approval answered with an `input_required` result (the
//! same question as today's elicitation), the client's retry with its
//! person's answer deciding that same approval once. Approved, the write
//! reaches GitHub once; declined, replayed or retried with other arguments,
//! nothing more reaches it; the decision names the `input_required` channel
//! in the trace and the approvals API.

use crate::common;
use scout_tests::fake_github::FakeGitHub;
use scout_tests::python;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const GITHUB_TOKEN: &str = "ghp_inputRequiredToken0123456789";
const ADMIN_TOKEN: &str = "admin-token-for-input-required-0123";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_client_is_asked_by_an_input_required_result_and_its_answer_decides_once() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let (dir, config) = scout_tests::serve::fresh_config(
        "serve-input-required",
        &scout_tests::serve_config_for_github(&github.origin()),
    );
    let serve = common::serve_as(&config, ADMIN_TOKEN, "7d")
        .current_dir(&dir)
        .env("GITHUB_ALLOW_WRITES", "true")
        .start();
    let base = serve.base.clone();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/input_required.py");
    let run = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(&script)
            .args(["--base", &base, "--admin-token", ADMIN_TOKEN])
            .args(["--github-token", GITHUB_TOKEN])
            .output()
            .expect("run input_required.py")
    });
    let output = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("input_required.py finishes")
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "input_required.py failed:\n{out}\n{}\nserve:\n{}",
        String::from_utf8_lossy(&output.stderr),
        serve.stderr()
    );
    let summary: Value =
        serde_json::from_str(out.lines().last().unwrap_or("")).expect("a JSON summary");
    eprintln!("input_required.py: {summary}");

    // The question is today's elicitation's: its words and its schema.
    let question = summary["question"].as_str().unwrap_or_default();
    assert!(
        question.starts_with("Allow mcp__github__github_create_branch with ")
            && question.contains("scout/ir-approved")
            && question.contains("(approval #"),
        "{summary}"
    );
    assert_eq!(
        summary["schema"]["properties"]["approve"]["type"], "boolean",
        "{summary}"
    );
    assert_eq!(
        summary["schema"]["required"],
        json!(["approve"]),
        "{summary}"
    );
    assert_eq!(
        summary["asked"], 2,
        "each call asked its person once: {summary}"
    );
    assert!(
        summary["declined"]
            .as_str()
            .is_some_and(|t| t.contains("approval_denied")),
        "{summary}"
    );
    for refused in ["replayed", "altered"] {
        assert!(
            summary[refused]
                .as_str()
                .is_some_and(|t| t.contains("approval_answer_refused")),
            "{refused}: {summary}"
        );
    }
    // Retried with other arguments: the approval asked for stays pending.
    assert_eq!(
        summary["pending_after_altered"],
        json!([{"owner": "octo", "repo": "hello", "branch": "scout/ir-asked"}]),
        "{summary}"
    );
    assert!(
        summary["forged"]
            .as_str()
            .is_some_and(|m| m.contains("requestState")),
        "{summary}"
    );

    // Each approved write reached GitHub exactly once; nothing else did.
    assert_eq!(
        github.ref_creations(),
        vec![
            "refs/heads/scout/ir-approved".to_string(),
            "refs/heads/scout/ir-replayed".to_string()
        ],
        "{summary}"
    );
    // Who answered and how: the decision's channel, in the approvals API
    // and in the trace's `decided` rows.
    let decisions = summary["decisions"].to_string();
    assert!(
        decisions.contains("person (MCP input_required: accept)")
            && decisions.contains("person (MCP input_required: decline)"),
        "{summary}"
    );
    let via = summary["decided_via"].as_array().expect("decided rows");
    assert!(
        via.contains(&json!(["approved", "input_required"]))
            && via.contains(&json!(["denied", "input_required"])),
        "{summary}"
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same over stdio (`serve --stdio`, which the client starts): a
/// 2026-07-28 call from a client that takes form elicitation is answered by
/// the host's line front with the `input_required` result, and the retry
/// with the person's answer runs the write once, or refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_a_stateless_client_is_asked_by_an_input_required_result() {
    let token = "ghp_stdioInputRequired0123456789";
    let github = FakeGitHub::start(token).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    let component = Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .expect("the GitHub component was built");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\nrequire_review = false\n\
             deployment_owner_brand = \"acme\"\n\n[connectors.github]\ncomponent = {:?}\n\
             origin = {:?}\nallow_private_network = true\nhost_env = \"GITHUB_TOKEN\"\n",
            component.display().to_string(),
            github.origin()
        ),
    )
    .unwrap();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/stdio_input_required.py");
    let run = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(&script)
            .args(["--scout-host", env!("CARGO_BIN_EXE_scout-host"), "--config"])
            .arg(&config)
            .env("SCOUT_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("SCOUT_STORE_KEY", "7e".repeat(32))
            .env("GITHUB_TOKEN", token)
            .env("GITHUB_ALLOW_WRITES", "true")
            .output()
            .expect("run stdio_input_required.py")
    });
    let output = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("stdio_input_required.py finishes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "stdio_input_required.py failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("its summary");
    let asked = summary["asked"].as_array().expect("the questions asked");
    assert_eq!(asked.len(), 2, "{summary}");
    assert!(
        asked[0]
            .as_str()
            .is_some_and(|q| q.starts_with("Allow mcp__github__github_create_branch with ")),
        "{summary}"
    );
    assert!(
        summary["declined"]
            .as_str()
            .is_some_and(|t| t.contains("approval_denied")),
        "{summary}"
    );
    assert_eq!(
        github.ref_creations(),
        vec!["refs/heads/scout/stdio-approved".to_string()],
        "the approved write reached GitHub once, the declined one not at all"
    );
}
