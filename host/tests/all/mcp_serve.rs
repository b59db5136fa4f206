//! The real `scout-host serve` binary, driven by the official Python MCP
//! client (`tests/mcp_client/story.py`, in the environment
//! `scout_tests::python` provisions): two roles, their tool lists, a read, a gated write refused,
//! approved through the API and through elicitation, and the trace; and
//! the MCP Inspector's command line (`scout_tests::mcp_inspector`) against
//! one session.

use crate::common;
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
    let (dir, config) = scout_tests::serve::fresh_config(
        "serve-story",
        &scout_tests::serve_config_for_github(&github.origin()),
    );

    let serve = common::serve_as(&config, ADMIN_TOKEN, "5c")
        .env("GITHUB_ALLOW_WRITES", "true")
        .env("APPROVAL_TIMEOUT_MS", APPROVAL_TIMEOUT_MS.to_string())
        .start();
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

    // The same requests, line by line, from a client that can be asked
    // and from one that cannot: the same answers.
    let raw = dir.join("raw.toml");
    std::fs::write(
        &raw,
        format!(
            "sse_keep_alive_ms = 100\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    )
    .unwrap();
    let before_direct = github.requests().len();
    let direct = tokio::task::spawn_blocking({
        let raw = raw.clone();
        move || raw_stdio_session(&raw, serde_json::json!({}))
    })
    .await
    .unwrap();
    // The session that cannot be asked: its one read reached GitHub; its
    // cancelled write did not.
    let after: Vec<_> = github.requests()[before_direct..].to_vec();
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].method, "GET");
    assert!(
        github
            .branch_sha("octo", "hello", "scout/cancelled")
            .is_none(),
        "a cancelled write has no effect"
    );
    let asked = tokio::task::spawn_blocking({
        let raw = raw.clone();
        move || raw_stdio_session(&raw, serde_json::json!({"elicitation": {}}))
    })
    .await
    .unwrap();
    assert_eq!(asked, direct, "the same answers either way");
    assert!(
        github.branch_sha("octo", "hello", "scout/asked").is_some(),
        "the write its person approved over stdio happened"
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `serve --stdio` driven line by line, as JSON-RPC.
struct StdioLines {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<serde_json::Value>,
}

impl StdioLines {
    fn start(config: &Path) -> StdioLines {
        let mut child = common::serve_as(config, ADMIN_TOKEN, "5c")
            .args(["--stdio", "--brand", "acme", "--role", "person-chat"])
            .args(["--connector", "github"])
            .env("GITHUB_ALLOW_WRITES", "true")
            .env("APPROVAL_TIMEOUT_MS", "3000")
            .command()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start serve --stdio");
        let stdout = child.stdout.take().unwrap();
        let (sent, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let message = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout holds only JSON-RPC ({e}): {line}"));
                if sent.send(message).is_err() {
                    return;
                }
            }
        });
        StdioLines {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    fn send(&mut self, line: &[u8]) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message with `id`; the messages before it.
    fn answer(&mut self, id: serde_json::Value) -> (serde_json::Value, Vec<serde_json::Value>) {
        let mut before = Vec::new();
        loop {
            let message = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no answer to {id}; before it: {before:?}"));
            if message.get("id") == Some(&id) && message.get("method").is_none() {
                return (message, before);
            }
            before.push(message);
        }
    }
}

impl Drop for StdioLines {
    fn drop(&mut self) {
        // A failed assertion leaves no server behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One stdio session declaring `capabilities`: its answers to a list, a
/// read, a malformed line, a call with no parameters, an oversized line,
/// an unknown tool and arguments of the wrong type, in that order. A
/// client that can be asked then sends a gated write, is asked on the same
/// lines and approves it. One that cannot sends a gated write with a
/// progress token, hears progress while it waits, and cancels it: no
/// answer comes.
fn raw_stdio_session(config: &Path, capabilities: serde_json::Value) -> Vec<serde_json::Value> {
    use serde_json::json;
    let can_be_asked = capabilities.get("elicitation").is_some();
    let mut session = StdioLines::start(config);
    let request = |id: u64, method: &str, params: serde_json::Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            .to_string()
            .into_bytes()
    };
    session.send(&request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
               "clientInfo": {"name": "raw", "version": "0"}}),
    ));
    let (initialized, _) = session.answer(json!(0));
    assert_eq!(initialized["result"]["serverInfo"]["name"], "github");
    session.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let mut answers = Vec::new();
    session.send(&request(1, "tools/list", json!({})));
    answers.push(session.answer(json!(1)).0);
    let tools = answers[0]["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 11, "{tools:?}");
    let read = json!({"name": "github_list_branches",
                      "arguments": {"owner": "octo", "repo": "hello"}});
    session.send(&request(2, "tools/call", read));
    let (read, _) = session.answer(json!(2));
    assert_eq!(read["result"]["isError"], false, "{read}");
    assert!(
        read["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("main")
    );
    // What identifies this call (its id in the trace) differs by session.
    answers.push(read["result"]["structuredContent"].clone());
    // Malformed JSON is ignored; a call without parameters is refused.
    session.send(b"{not json");
    session.send(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#);
    let (refused, skipped) = session.answer(json!(3));
    assert!(refused["error"]["code"].is_i64(), "{refused}");
    assert!(
        skipped.is_empty(),
        "nothing answers malformed JSON: {skipped:?}"
    );
    answers.push(refused);
    // A line over rmcp's limit (16 MiB) is skipped; the session goes on.
    let mut oversized = br#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{"pad":""#.to_vec();
    oversized.extend(std::iter::repeat_n(b'x', 16 * 1024 * 1024));
    oversized.extend_from_slice(br#""}}"#);
    session.send(&oversized);
    session.send(&request(5, "ping", json!({})));
    let (pong, skipped) = session.answer(json!(5));
    assert!(
        skipped.is_empty(),
        "the oversized line has no answer: {skipped:?}"
    );
    answers.push(pong);
    session.send(&request(
        6,
        "tools/call",
        json!({"name": "github_delete_repo", "arguments": {}}),
    ));
    answers.push(session.answer(json!(6)).0);
    session.send(&request(
        7,
        "tools/call",
        json!({"name": "github_list_branches", "arguments": "octo/hello"}),
    ));
    answers.push(session.answer(json!(7)).0);
    if can_be_asked {
        let write = json!({"name": "github_create_branch",
                           "arguments": {"owner": "octo", "repo": "hello", "branch": "scout/asked"},
                           "_meta": {"progressToken": "asked-8"}});
        session.send(&request(8, "tools/call", write));
        // The person is asked (no progress for a client that asks them).
        let question = session
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the person is asked");
        assert_eq!(question["method"], "elicitation/create", "{question}");
        let text = question["params"]["message"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("Allow mcp__github__github_create_branch with")
                && text.contains("scout/asked"),
            "{question}"
        );
        let approve = json!({"jsonrpc": "2.0", "id": question["id"],
                             "result": {"action": "accept", "content": {"approve": true}}});
        session.send(approve.to_string().as_bytes());
        let (written, between) = session.answer(json!(8));
        assert_eq!(written["result"]["isError"], false, "{written}");
        assert!(between.is_empty(), "{between:?}");
    } else {
        let write = json!({"name": "github_create_branch",
                           "arguments": {"owner": "octo", "repo": "hello", "branch": "scout/cancelled"},
                           "_meta": {"progressToken": "waiting-8"}});
        session.send(&request(8, "tools/call", write));
        // Progress while a person decides (every 100 ms here).
        let progress = session
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("progress while the write waits");
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        assert_eq!(progress["params"]["progressToken"], "waiting-8");
        session.send(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8,"reason":"the user stopped it"}}"#,
        );
        // Past the approval's timeout (3 s): the cancelled call has no answer.
        std::thread::sleep(Duration::from_millis(3500));
        session.send(&request(9, "ping", json!({})));
        let (_, before) = session.answer(json!(9));
        assert!(
            before.iter().all(|m| m.get("id").is_none()),
            "a cancelled call is not answered: {before:?}"
        );
    }
    // The client closes its input: the server ends.
    drop(session.stdin.take());
    let status = session.child.wait().unwrap();
    assert!(status.success(), "serve --stdio ends cleanly: {status}");
    answers
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
    // Tools are offered without an operator's review here (the story
    // covers review); a top-level key goes before the connector's table.
    let (dir, config) = scout_tests::serve::fresh_config(
        "serve-inspector",
        &format!(
            "require_review = false\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    );
    let serve = common::serve_as(&config, ADMIN_TOKEN, "5d").start();
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
    let (dir, config) = scout_tests::serve::fresh_config(
        "serve-wait",
        &scout_tests::serve_config_for_github(&github.origin()),
    );
    let serve = common::serve_as(&config, ADMIN_TOKEN, "5e")
        .current_dir(&dir)
        .env("GITHUB_ALLOW_WRITES", "true")
        .start();
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
    let (dir, config) = scout_tests::serve::fresh_config(
        "serve-inspector-wait",
        &format!(
            "require_review = false\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    );
    let serve = common::serve_as(&config, ADMIN_TOKEN, "5f")
        .current_dir(&dir)
        .env("GITHUB_ALLOW_WRITES", "true")
        .start();
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
    let capabilities = Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .unwrap();
    // Writes stay off (GITHUB_ALLOW_WRITES unset): every write refuses.
    // The `capabilities` test guest bills in credits, with an allowance
    // for a person's chat.
    let (dir, config) = scout_tests::serve::fresh_config(
        "serve-boundary",
        &format!(
            "require_review = false\n{}\n[connectors.capabilities]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\ncredential = \"none\"\n[connectors.capabilities.person_allowance]\nper_run_credits = 50\nper_day_credits = 200\n",
            scout_tests::serve_config_for_github(&github.origin()),
            capabilities.display().to_string(),
            github.origin()
        ),
    );
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
    // Tools offered without an operator's review, writes left switched off.
    let (dir, config) = scout_tests::serve::fresh_config(
        "serve-narrowed",
        &format!(
            "require_review = false\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    );
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
    let serve = common::serve_as(config, ADMIN_TOKEN, key_byte)
        .current_dir(dir)
        .start();
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

/// The MCP transport requires a server to validate `Origin`: a browser page
/// of another site, holding a valid token (or making its browser send one),
/// is refused 403 on the MCP endpoints, the admin API and the console alike,
/// before anything is served (no request reaches GitHub, no approval is
/// decided); the host's own origin, and a request with no `Origin` (any
/// non-browser client), are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_origin_is_refused_and_the_hosts_own_is_served() {
    use super::crash_safety::{ADMIN_TOKEN as ADMIN, Admin, GITHUB_TOKEN as TOKEN};
    use reqwest::Method;
    use serde_json::{Value, json};
    let github = FakeGitHub::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        scout_tests::serve_config_for_github(&github.origin()),
    );
    let serve = common::serve(&config).start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    let view = admin.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let token = view["token"].as_str().unwrap().to_string();
    let url = view["mcp"]["github"].as_str().unwrap().to_string();
    let port = serve.base.rsplit(':').next().unwrap().to_string();
    let read = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "github_read_file", "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "origin-test", "version": "0"}}}});
    // A stateless read with the session's valid token, from `origin`.
    let mcp_read = |origin: Option<&str>| {
        let mut request = http
            .post(&url)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "github_read_file")
            .body(read.to_string());
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    // One admin API request with the admin token, from `origin`.
    let admin_from = |method: Method, path: &str, body: Option<Value>, origin: &str| {
        let mut request = http
            .request(method, format!("{}{path}", serve.base))
            .bearer_auth(ADMIN)
            .header("origin", origin);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        request.send()
    };
    let foreign = [
        "http://evil.example",
        "null",
        // The same host on another port, or another scheme's default port.
        &format!("http://127.0.0.1:{}", port.parse::<u16>().unwrap() + 1),
        "http://127.0.0.1",
    ];

    // A write waits for a person: a foreign page may not decide it.
    let waiting = {
        let (waiting, pending) = admin
            .write_waiting(
                &view,
                json!({"owner": "octo", "repo": "hello", "branch": "scout/origin"}),
            )
            .await;
        (waiting, pending["id"].as_i64().unwrap())
    };
    github.clear_requests();
    for origin in foreign {
        let refused = mcp_read(Some(origin)).await.unwrap();
        assert_eq!(refused.status().as_u16(), 403, "MCP from {origin}");
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["code"], "origin_not_allowed", "{body}");
        for (method, path, body) in [
            (
                Method::GET,
                format!("/v1/approvals?session={session}"),
                None,
            ),
            (
                Method::POST,
                format!("/v1/approvals/{}", waiting.1),
                Some(json!({"approve": true})),
            ),
            (Method::GET, "/console".to_string(), None),
        ] {
            let refused = admin_from(method.clone(), &path, body, origin)
                .await
                .unwrap();
            assert_eq!(
                refused.status().as_u16(),
                403,
                "{method} {path} from {origin}"
            );
        }
    }
    assert_eq!(github.requests().len(), 0, "nothing reached GitHub");
    assert_eq!(
        admin.pending(&session).await.len(),
        1,
        "the waiting write is still undecided"
    );

    // The host's own origin (its listen address, `localhost` at its port),
    // and no Origin at all, are served.
    for origin in [
        Some(serve.base.clone()),
        Some(format!("http://localhost:{port}")),
        None,
    ] {
        let served = mcp_read(origin.as_deref()).await.unwrap();
        assert_eq!(served.status().as_u16(), 200, "MCP from {origin:?}");
        let body: Value = served.json().await.unwrap();
        assert!(
            body["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("Hello")),
            "{body}"
        );
    }
    assert_eq!(github.requests().len(), 3, "three reads reached GitHub");
    let console = admin_from(Method::GET, "/console", None, &serve.base)
        .await
        .unwrap();
    assert_eq!(console.status().as_u16(), 200);
    let decided = admin_from(
        Method::POST,
        &format!("/v1/approvals/{}", waiting.1),
        Some(json!({"approve": true})),
        &serve.base,
    )
    .await
    .unwrap();
    assert_eq!(decided.status().as_u16(), 200);
    let written = waiting
        .0
        .await
        .unwrap()
        .expect("the approved write's answer");
    assert_eq!(written["result"]["isError"], false, "{written}");
    assert_eq!(github.ref_creations().len(), 1);
    drop(serve);
}

/// The official client in stateless mode (2026-07-28, `discover()`) over
/// stdio: what rmcp answers there (the host's line front leaves a request
/// of its own protocol version to rmcp) conforms to the SDK's 2026-07-28
/// wire types as the HTTP answers do: `server/discover` with its caching
/// hints, a tool list, a read through the boundary, and a tool not offered
/// refused with the protocol's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_in_stateless_mode_over_stdio_gets_conforming_answers() {
    let token = "ghp_stdioStatelessToken0123456789";
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
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/stdio_stateless.py");
    let run = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(&script)
            .args(["--scout-host", env!("CARGO_BIN_EXE_scout-host"), "--config"])
            .arg(&config)
            .env("SCOUT_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("SCOUT_STORE_KEY", "5c".repeat(32))
            .env("GITHUB_TOKEN", token)
            .output()
            .expect("run the stateless stdio client")
    });
    let output = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("the stateless stdio client finishes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the stateless stdio client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("its summary");
    assert_eq!(
        summary["discover"],
        serde_json::json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}),
        "{summary}"
    );
    assert_eq!(
        summary["tools"].as_array().map(Vec::len),
        Some(11),
        "{summary}"
    );
    assert!(
        summary["read"]
            .as_str()
            .is_some_and(|t| t.contains("Hello")),
        "{summary}"
    );
    assert!(
        summary["not_offered"]
            .as_str()
            .is_some_and(|m| m.contains("permission_denied")),
        "{summary}"
    );
    assert_eq!(
        github.requests().len(),
        1,
        "the read, and nothing else, reached GitHub"
    );
}
