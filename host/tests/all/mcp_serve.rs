//! The real `scout-host serve` binary, driven by the official Python MCP
//! client (`tests/mcp_client/story.py`, in the environment
//! `scout_tests::python` provisions): two roles, their tool lists, a read, a gated write refused,
//! approved through the API and through elicitation, and the trace; and
//! the MCP Inspector's command line (`scout_tests::mcp_inspector`) against
//! one session.

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

/// Runs the MCP Inspector's command line against `url`; its JSON answer.
fn inspector(url: &str, token: &str, args: &[&str]) -> serde_json::Value {
    let output = Command::new(scout_tests::mcp_inspector())
        .arg("--cli")
        .arg(url)
        .args(["--transport", "http", "--header"])
        .arg(format!("Authorization: Bearer {token}"))
        .args(args)
        .env(
            "MCP_CATALOG_PATH",
            std::env::temp_dir().join(format!("scout-inspector-{}.json", std::process::id())),
        )
        .output()
        .expect("run the MCP Inspector");
    let out = String::from_utf8_lossy(&output.stdout);
    // A tool result with `isError` is printed, and the exit status says so.
    let tool_error = String::from_utf8_lossy(&output.stderr).contains("\"tool_is_error\"");
    assert!(
        output.status.success() || tool_error,
        "the MCP Inspector failed ({:?}):\n{out}\n{}",
        args,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("the Inspector's answer is not JSON ({e}): {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_cli_lists_and_calls_the_tools_of_a_session() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = std::env::temp_dir().join(format!("scout-serve-inspector-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.toml");
    // Tools are offered without an operator's review here (the story
    // covers review); a top-level key goes before the connector's table.
    std::fs::write(
        &config,
        format!(
            "require_review = false\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    )
    .unwrap();
    let serve = ServeProcess::start(ServeProcess::command(
        env!("CARGO_BIN_EXE_scout-host"),
        &config,
        ADMIN_TOKEN,
        &"5d".repeat(32),
    ));
    let http = reqwest::Client::new();
    let admin = |method: reqwest::Method, path: &str, body: serde_json::Value| {
        http.request(method, format!("{}{path}", serve.base))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let stored = admin(
        reqwest::Method::PUT,
        "/v1/brands/acme/connections/github",
        serde_json::json!({"secret": GITHUB_TOKEN}),
    )
    .await
    .unwrap();
    assert!(stored.status().is_success(), "{:?}", stored.text().await);
    let view: serde_json::Value = serde_json::from_str(
        &admin(
            reqwest::Method::POST,
            "/v1/sessions",
            serde_json::json!({"brand": "acme", "role": "person-chat"}),
        )
        .await
        .unwrap()
        .text()
        .await
        .unwrap(),
    )
    .unwrap();
    let (url, token) = (
        view["mcp"]["github"].as_str().unwrap().to_string(),
        view["token"].as_str().unwrap().to_string(),
    );

    let listed = {
        let (url, token) = (url.clone(), token.clone());
        tokio::task::spawn_blocking(move || inspector(&url, &token, &["--method", "tools/list"]))
            .await
            .unwrap()
    };
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names.len(), 11, "{listed}");
    assert!(names.contains(&"github_read_file"), "{listed}");

    let read = {
        let (url, token) = (url.clone(), token.clone());
        tokio::task::spawn_blocking(move || {
            inspector(
                &url,
                &token,
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "github_read_file",
                    "--tool-arg",
                    "owner=octo",
                    "repo=hello",
                    "path=README.md",
                ],
            )
        })
        .await
        .unwrap()
    };
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(read["structuredContent"]["text"], "# Hello\n", "{read}");

    // Writes are off in this deployment: the write refuses as a tool result.
    let refused = tokio::task::spawn_blocking(move || {
        inspector(
            &url,
            &token,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "github_create_branch",
                "--tool-arg",
                "owner=octo",
                "repo=hello",
                "branch=scout/inspector",
            ],
        )
    })
    .await
    .unwrap();
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        github
            .branch_sha("octo", "hello", "scout/inspector")
            .is_none(),
        "nothing was written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// How long the person in `wait.py` takes to answer: longer than every
/// read timeout a client library has by default that is shorter than a
/// person (httpx's 5 s, the SDK's 30 s).
const ANSWER_AFTER_SECS: u64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waiting_for_a_person_reaches_clients_with_default_timeouts() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = std::env::temp_dir().join(format!("scout-serve-wait-{}", std::process::id()));
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
        &"5e".repeat(32),
    );
    command.current_dir(&dir).env("GITHUB_ALLOW_WRITES", "true");
    let serve = ServeProcess::start(command);
    let base = serve.base.clone();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/wait.py");
    let run = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(&script)
            .args(["--base", &base, "--admin-token", ADMIN_TOKEN])
            .args(["--github-token", GITHUB_TOKEN])
            .args(["--answer-after", &ANSWER_AFTER_SECS.to_string()])
            .output()
            .expect("run wait.py")
    });
    let output = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("wait.py finishes")
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "wait.py failed:\n{out}\n{}\nserve:\n{}",
        String::from_utf8_lossy(&output.stderr),
        serve.stderr()
    );
    let summary: serde_json::Value =
        serde_json::from_str(out.lines().last().unwrap_or("")).expect("a JSON summary");
    assert_eq!(summary["ok"], true);
    for made in ["scout/waited-plain", "scout/waited-sdk"] {
        assert!(github.branch_sha("octo", "hello", made).is_some(), "{made}");
    }
    assert!(
        github
            .branch_sha("octo", "hello", "scout/went-away")
            .is_none(),
        "the client that went away caused nothing"
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_cli_gets_a_write_a_person_approves_after_its_request_timeout() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir =
        std::env::temp_dir().join(format!("scout-serve-inspector-wait-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "require_review = false\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    )
    .unwrap();
    let mut command = ServeProcess::command(
        env!("CARGO_BIN_EXE_scout-host"),
        &config,
        ADMIN_TOKEN,
        &"5f".repeat(32),
    );
    command.current_dir(&dir).env("GITHUB_ALLOW_WRITES", "true");
    let serve = ServeProcess::start(command);
    let http = reqwest::Client::new();
    let admin = |method: reqwest::Method, path: &str, body: Option<serde_json::Value>| {
        let mut request = http
            .request(method, format!("{}{path}", serve.base))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        request.send()
    };
    let json = |text: String| -> serde_json::Value { serde_json::from_str(&text).unwrap() };
    admin(
        reqwest::Method::PUT,
        "/v1/brands/acme/connections/github",
        Some(serde_json::json!({"secret": GITHUB_TOKEN})),
    )
    .await
    .unwrap();
    let view = json(
        admin(
            reqwest::Method::POST,
            "/v1/sessions",
            Some(serde_json::json!({"brand": "acme", "role": "person-chat"})),
        )
        .await
        .unwrap()
        .text()
        .await
        .unwrap(),
    );
    let (id, url, token) = (
        view["id"].as_str().unwrap().to_string(),
        view["mcp"]["github"].as_str().unwrap().to_string(),
        view["token"].as_str().unwrap().to_string(),
    );
    let call = tokio::task::spawn_blocking(move || {
        inspector(
            &url,
            &token,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "github_create_branch",
                "--tool-arg",
                "owner=octo",
                "repo=hello",
                "branch=scout/inspector-waited",
            ],
        )
    });
    let asked = std::time::Instant::now();
    let approval = loop {
        assert!(
            asked.elapsed() < crate::common::EVENTUALLY,
            "the Inspector's call never asked for an approval"
        );
        let listed = json(
            admin(
                reqwest::Method::GET,
                &format!("/v1/approvals?session={id}"),
                None,
            )
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        );
        if let Some(first) = listed["pending"].as_array().and_then(|p| p.first()) {
            break first["id"].as_i64().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Longer than the Inspector's own request timeout (10 s by default).
    tokio::time::sleep(Duration::from_secs(15)).await;
    let decided = admin(
        reqwest::Method::POST,
        &format!("/v1/approvals/{approval}"),
        Some(serde_json::json!({"approve": true})),
    )
    .await
    .unwrap();
    assert_eq!(decided.status().as_u16(), 200, "{:?}", decided.text().await);
    let result = tokio::time::timeout(Duration::from_secs(120), call)
        .await
        .expect("the Inspector finishes")
        .unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        github
            .branch_sha("octo", "hello", "scout/inspector-waited")
            .is_some()
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_meets_the_boundary_repeated_refusals_a_pause_and_its_budget() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = std::env::temp_dir().join(format!("scout-serve-boundary-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.toml");
    let capabilities = Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .unwrap();
    // Writes stay off (GITHUB_ALLOW_WRITES unset): every write refuses.
    // The `capabilities` test guest bills in credits, with an allowance
    // for a person's chat.
    std::fs::write(
        &config,
        format!(
            "require_review = false\n{}\n[connectors.capabilities]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\ncredential = \"none\"\n[connectors.capabilities.person_allowance]\nper_run_credits = 50\nper_day_credits = 200\n",
            scout_tests::serve_config_for_github(&github.origin()),
            capabilities.display().to_string(),
            github.origin()
        ),
    )
    .unwrap();
    let (serve, summary) = serve_and_run(&dir, &config, "6a", "boundary.py").await;
    assert_eq!(summary["lineage"], serde_json::json!([1, 2, 3]));
    assert!(
        github.requests().iter().all(|r| r.method == "GET"),
        "no refused write reached GitHub"
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An orchestrator narrows a session to two GitHub reads (issue 39): the
/// official Python client lists and runs only those on it while another
/// session of the same role, opened alongside, keeps everything; a call to
/// an unselected tool is refused as not offered with nothing sent; a
/// selection naming what the role lacks is refused (`narrowed.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_sees_only_what_the_orchestrator_selected() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = std::env::temp_dir().join(format!("scout-serve-narrowed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.toml");
    // Tools offered without an operator's review, writes left switched off.
    std::fs::write(
        &config,
        format!(
            "require_review = false\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    )
    .unwrap();
    let (serve, summary) = serve_and_run(&dir, &config, "6b", "narrowed.py").await;
    assert!(summary["not_selected"].as_u64() > Some(0), "{summary}");
    let requests = github.requests();
    // Every read the script saw answered reached GitHub once; the ones
    // refused past a session's limits reached it not at all.
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.path.contains("/contents/README.md"))
            .count() as u64,
        summary["reads_sent"].as_u64().unwrap(),
        "{requests:?}"
    );
    assert!(
        !requests.iter().any(|r| r.path.contains("/issues")),
        "the unselected tool sent nothing: {requests:?}"
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `serve` on `config` in `dir` (its store key `key_byte` repeated)
/// and runs the official-client script `script` of `tests/mcp_client`
/// against it with the admin and GitHub tokens; the host and the script's
/// JSON summary (its last line). A failing script fails the test with its
/// output and the host's log.
async fn serve_and_run(
    dir: &Path,
    config: &Path,
    key_byte: &str,
    script: &'static str,
) -> (ServeProcess, serde_json::Value) {
    let mut command = ServeProcess::command(
        env!("CARGO_BIN_EXE_scout-host"),
        config,
        ADMIN_TOKEN,
        &key_byte.repeat(32),
    );
    command.current_dir(dir);
    let serve = ServeProcess::start(command);
    let base = serve.base.clone();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp_client")
        .join(script);
    let run = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(&path)
            .args(["--base", &base, "--admin-token", ADMIN_TOKEN])
            .args(["--github-token", GITHUB_TOKEN])
            .output()
            .unwrap_or_else(|e| panic!("run {script}: {e}"))
    });
    let output = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .unwrap_or_else(|_| panic!("{script} finishes"))
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script} failed:\n{out}\n{}\nserve:\n{}",
        String::from_utf8_lossy(&output.stderr),
        serve.stderr()
    );
    let summary = serde_json::from_str(out.lines().last().unwrap_or("")).expect("a JSON summary");
    (serve, summary)
}
