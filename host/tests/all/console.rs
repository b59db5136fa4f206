//! The approvals console (`/console`) in a real browser: headless Chromium
//! driven through ChromeDriver by Selenium (`tests/mcp_client/console_browser.py`)
//! while the official MCP client waits on GitHub writes of a person-chat
//! session on the real `serve` binary. A write approved in the page reaches
//! GitHub; one denied in the page does not; one decided through the API
//! leaves the page by itself. `SCOUT_CONSOLE_SCREENSHOT=docs/console.png`
//! keeps the screenshot the test takes (how README's picture is made).

use scout_tests::fake_github::FakeGitHub;
use scout_tests::{ServeProcess, python};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const GITHUB_TOKEN: &str = "ghp_consoleBrowserToken0123456789";
const ADMIN_TOKEN: &str = "admin-token-for-the-console-0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_and_denies_in_the_browser_while_the_client_waits() {
    let Some((chromium, chromedriver)) = scout_tests::chromium() else {
        return;
    };
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = std::env::temp_dir().join(format!("scout-console-{}", std::process::id()));
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
        &"6d".repeat(32),
    );
    command
        .current_dir(&dir)
        .env("GITHUB_ALLOW_WRITES", "true")
        // Long enough that only the person's click ends a wait.
        .env("APPROVAL_TIMEOUT_MS", "120000");
    let serve = ServeProcess::start(command);
    let base = serve.base.clone();

    let screenshot = std::env::var_os("SCOUT_CONSOLE_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.join("console.png"));
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/console_browser.py");
    let shot = screenshot.clone();
    let run = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(&script)
            .args(["--base", &base, "--admin-token", ADMIN_TOKEN])
            .args(["--github-token", GITHUB_TOKEN, "--chromium"])
            .arg(&chromium)
            .arg("--chromedriver")
            .arg(&chromedriver)
            .arg("--screenshot")
            .arg(&shot)
            .output()
            .expect("run the browser test")
    });
    let output = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("the browser test finishes")
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser test failed:\n{out}\n{err}\nserve:\n{}",
        serve.stderr()
    );
    let summary: serde_json::Value =
        serde_json::from_str(out.lines().last().unwrap_or("")).expect("a JSON summary");
    assert_eq!(summary["ok"], true);

    // The upstream side: the approved writes happened, the denied one never
    // reached GitHub at all.
    for made in ["scout/console-approved", "scout/api-approved"] {
        assert!(
            github.branch_sha("octo", "hello", made).is_some(),
            "{made} exists"
        );
    }
    assert!(
        github
            .branch_sha("octo", "hello", "scout/console-denied")
            .is_none()
    );
    let ref_writes: Vec<_> = github
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/git/refs"))
        .collect();
    assert_eq!(
        ref_writes.len(),
        2,
        "no upstream request for the denied write"
    );
    assert!(
        ref_writes
            .iter()
            .all(|r| !String::from_utf8_lossy(&r.body).contains("console-denied"))
    );
    let png = std::fs::read(&screenshot).expect("the screenshot was taken");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG screenshot");
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}
