//! The real `scout-host serve` binary, driven by the official Python MCP
//! client (`tests/mcp_client/story.py`, in the environment
//! `scout_tests::python` provisions): two roles, their tool lists, a read, a gated write refused,
//! approved through the API and through elicitation, and the trace.

use scout_tests::fake_github::FakeGitHub;
use scout_tests::{ServeProcess, python};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const GITHUB_TOKEN: &str = "ghp_serveStoryToken0123456789";
const ADMIN_TOKEN: &str = "admin-token-for-the-story-0123456789";
const APPROVAL_TIMEOUT_MS: u64 = 1500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_client_tells_the_whole_story() {
    let probe = Command::new(python())
        .args(["-c", "import mcp, httpx2"])
        .output()
        .expect("python3 runs");
    assert!(
        probe.status.success(),
        "the official MCP client does not import in the interpreter scout_tests::python provisioned\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = std::env::temp_dir().join(format!("scout-serve-story-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.toml");
    std::fs::write(
        &config,
        scout_tests::serve_config_for_github(&github.origin()),
    )
    .unwrap();

    let mut command = ServeProcess::command(
        env!("CARGO_BIN_EXE_scout-host"),
        &config,
        ADMIN_TOKEN,
        &"5c".repeat(32),
    );
    command
        .env("GITHUB_ALLOW_WRITES", "true")
        .env("APPROVAL_TIMEOUT_MS", APPROVAL_TIMEOUT_MS.to_string());
    let serve = ServeProcess::start(command);
    let base = serve.base.clone();
    // Start-up names every connector it loaded and to whom it serves it.
    // Written before the address; the reader thread may still be on it.
    let mut stderr = serve.stderr();
    for _ in 0..100 {
        if stderr.contains("scout-host: connector github: ") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        stderr = serve.stderr();
    }
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("scout-host: connector github: ")
                && l.contains(&format!("origin {}", github.origin()))
                && l.ends_with("served to brands whose connection resolves")),
        "{stderr}"
    );

    let story = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/story.py");
    let python_run = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(&story)
            .args([
                "--base",
                &base,
                "--admin-token",
                ADMIN_TOKEN,
                "--github-token",
                GITHUB_TOKEN,
            ])
            .args(["--approval-timeout-ms", &APPROVAL_TIMEOUT_MS.to_string()])
            .output()
            .expect("run the story")
    });
    let output = tokio::time::timeout(Duration::from_secs(300), python_run)
        .await
        .expect("the story finishes")
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the story failed:\n{out}\n{err}");
    let summary: serde_json::Value =
        serde_json::from_str(out.lines().last().unwrap_or("")).expect("a JSON summary");
    assert_eq!(summary["ok"], true);
    assert_eq!(summary["person_chat_tools"].as_array().unwrap().len(), 11);
    assert_eq!(summary["specialist_tools"].as_array().unwrap().len(), 7);

    // The upstream side: only approved writes reached GitHub.
    assert!(
        github
            .branch_sha("octo", "hello", "scout/approved")
            .is_some(),
        "the write approved through the API happened"
    );
    assert!(
        github
            .branch_sha("octo", "hello", "scout/elicited")
            .is_some(),
        "the write approved through elicitation happened"
    );
    for refused in ["scout/unanswered", "scout/declined", "scout/specialist"] {
        assert!(
            github.branch_sha("octo", "hello", refused).is_none(),
            "{refused} must not exist"
        );
    }
    let ref_writes = github
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/git/refs"))
        .count();
    assert_eq!(
        ref_writes, 2,
        "no upstream write request for a refused call"
    );
    let before_stdio = github.requests().len();
    // The token reached GitHub, on every request, from the host.
    assert!(
        github
            .requests()
            .iter()
            .all(|r| r.header("authorization") == Some(&format!("Bearer {GITHUB_TOKEN}")))
    );

    // One session over stdio, on the same configuration and database.
    let stdio = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/stdio.py");
    let config_path = config.clone();
    let stdio_run = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(&stdio)
            .args(["--scout-host", env!("CARGO_BIN_EXE_scout-host"), "--config"])
            .arg(&config_path)
            .env("SCOUT_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("SCOUT_STORE_KEY", "5c".repeat(32))
            .env("GITHUB_ALLOW_WRITES", "true")
            .env("APPROVAL_TIMEOUT_MS", APPROVAL_TIMEOUT_MS.to_string())
            .output()
            .expect("run the stdio story")
    });
    let output = tokio::time::timeout(Duration::from_secs(300), stdio_run)
        .await
        .expect("the stdio story finishes")
        .unwrap();
    assert!(
        output.status.success(),
        "the stdio story failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        github.branch_sha("octo", "hello", "scout/stdio").is_some(),
        "the stdio write happened"
    );
    assert!(github.requests().len() > before_stdio);
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}
