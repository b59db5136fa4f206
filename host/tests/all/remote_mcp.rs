//! Remote MCP servers behind the boundary (issue 32), through the real
//! `serve` binary, against servers nobody here wrote: the MCP project's
//! reference `server-everything` (npm) over streamable HTTP, and a server
//! built on the official Python SDK (`tests/mcp_client/remote_server.py`)
//! whose tools misbehave on purpose.
//!
//! What must hold: nothing a server lists is offered before an operator
//! reviews it with an effect; a reviewed read runs and its result comes back
//! as the server gave it, marked untrusted; a write waits for a person; the
//! credential reaches the server and no output, trace or error; an oversized
//! answer, a sampling request, a server that never answers and a redirect
//! off the server's origin each end as the host's refusal; a tool whose
//! description changes is held until reviewed again, and nothing held or
//! refused reaches the server.

use super::common::EVENTUALLY;
use super::crash_safety::{Admin, Mcp, ok_text, result_text, wait_for};
use crate::common;
use reqwest::Method;
use scout_host::store::TraceState;
use scout_tests::ServeProcess;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The deployment owner's own token for the hostile server (`host_env`).
pub(super) const HOSTILE_TOKEN: &str = "hostile-owner-token-7f3a9c2e51";

/// A server process of the test's, killed when dropped.
pub(super) struct Server {
    child: Child,
    pub(super) port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `server-everything streamableHttp` on a free port.
async fn everything() -> Server {
    let (child, port) = tokio::task::spawn_blocking(scout_tests::start_server_everything)
        .await
        .unwrap();
    Server { child, port }
}

/// The hostile Python server, on the port it picked.
pub(super) async fn hostile(dir: &Path) -> Server {
    python_server(dir, "hostile").await
}

/// The Python server with `profile`'s tools, on the port it picked.
async fn python_server(dir: &Path, profile: &str) -> Server {
    python_server_with(dir, profile, &[]).await
}

/// [`python_server`] with more arguments (`--transport sse`).
async fn python_server_with(dir: &Path, profile: &str, more: &[&str]) -> Server {
    let mut args = vec!["--profile", profile];
    args.extend_from_slice(more);
    python_fixture(
        dir,
        "remote_server.py",
        profile,
        &args,
        "the hostile MCP server",
    )
    .await
}

/// `tests/mcp_client/SCRIPT ARGS`, a server that writes the port it picked
/// to `dir/NAME.port`; `what` names it when it does not start.
pub(super) async fn python_fixture(
    dir: &Path,
    script: &str,
    name: &str,
    args: &[&str],
    what: &str,
) -> Server {
    let port_file = dir.join(format!("{name}.port"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp_client")
        .join(script);
    let child = Command::new(scout_tests::python())
        .arg(script)
        .arg("--port-file")
        .arg(&port_file)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {what}: {e}"));
    let port = wait_for(&format!("{what}'s port"), EVENTUALLY, async || {
        std::fs::read_to_string(&port_file)
            .ok()?
            .trim()
            .parse()
            .ok()
    })
    .await;
    Server { child, port }
}

fn write_config(dir: &Path, connectors: &str) -> std::path::PathBuf {
    scout_tests::serve::write_config(
        dir,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\ndeployment_owner_brand = \"acme\"\n{connectors}"
        ),
    )
}

/// `serve` fronting the hostile server on `port` as connector `hostile`
/// with `settings` (TOML lines) and `env`, and its admin client.
pub(super) fn front_hostile(
    dir: &Path,
    port: u16,
    settings: &str,
    env: &[(&str, String)],
) -> (ServeProcess, Admin) {
    let config = write_config(
        dir,
        &format!(
            "[connectors.hostile]\nmcp = \"http://127.0.0.1:{port}/mcp\"\nallow_private_network = true\n{settings}"
        ),
    );
    let serve = common::serve(&config).envs(env).start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    (serve, admin)
}

/// The remote connector's reviews once its server has been listed.
pub(super) async fn listed(admin: &Admin, connector: &str) -> Vec<Value> {
    wait_for(
        "the remote server's tools to be listed",
        EVENTUALLY,
        async || {
            let (status, body) = admin.request(Method::GET, "/v1/reviews", None).await;
            assert_eq!(status, 200, "{body}");
            // Listed, and served as listed: the two are replaced one after
            // the other, so a listing can show before its tools do.
            let listed = body["remote"][connector]["listed_at_ms"].as_i64()? > 0;
            let tools = body["connectors"][connector]
                .as_array()
                .cloned()
                .unwrap_or_default();
            (listed && !tools.is_empty()).then_some(tools)
        },
    )
    .await
}

pub(super) fn tool<'a>(reviews: &'a [Value], name: &str) -> &'a Value {
    reviews
        .iter()
        .find(|t| t["tool"] == name)
        .unwrap_or_else(|| panic!("no candidate {name}: {reviews:?}"))
}

pub(super) async fn review(admin: &Admin, connector: &str, candidate: &Value, effect: &str) {
    let body = json!({"connector": connector, "tool": candidate["tool"], "digest": candidate["digest"], "effect": effect});
    let (status, answer) = admin.request(Method::POST, "/v1/reviews", Some(body)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["effect"], effect, "{answer}");
}

async fn offered(mcp: &Mcp) -> Vec<String> {
    let listed = mcp
        .request("tools/list", json!({}))
        .await
        .expect("tools/list");
    let mut names: Vec<String> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

pub(super) async fn call(mcp: &Mcp, name: &str, args: Value) -> Result<Value, String> {
    mcp.request("tools/call", json!({"name": name, "arguments": args}))
        .await
}

/// The hostile server's own record of what it was asked.
pub(super) async fn stats(server: &Server) -> Value {
    let text = reqwest::get(format!("http://127.0.0.1:{}/stats", server.port))
        .await
        .expect("GET /stats")
        .text()
        .await
        .expect("the stats");
    serde_json::from_str(&text).expect("stats JSON")
}

fn calls_of(stats: &Value, tool: &str) -> u64 {
    stats["calls"][tool].as_u64().unwrap_or(0)
}

#[tokio::test]
async fn a_remote_servers_tools_are_offered_only_as_an_operator_reviewed_them() {
    let upstream = everything().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[connectors.everything]\nmcp = \"http://127.0.0.1:{}/mcp\"\ncredential = \"none\"\nallow_private_network = true\n",
            upstream.port
        ),
    );
    let serve = common::serve(&config).start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    let reviews = listed(&admin, "everything").await;
    // Every candidate is new and has no effect until reviewed; what the
    // server says of itself is shown as its claim.
    assert!(reviews.len() >= 5, "{reviews:?}");
    assert!(
        reviews
            .iter()
            .all(|t| t["status"] == "new" && t["effect"].is_null()),
        "{reviews:?}"
    );
    assert_eq!(
        tool(&reviews, "get-env")["server_claims"]["readOnlyHint"],
        true,
        "the server claims get-env only reads"
    );

    // Nothing is offered before review, and a call is refused.
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "everything")
        .connect()
        .await;
    assert_eq!(offered(&mcp).await, Vec::<String>::new());
    let refused = call(&mcp, "echo", json!({"message": "too early"}))
        .await
        .expect("an answer");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("permission_denied")),
        "{refused}"
    );

    // A remote tool reviewed without an effect is refused, naming the field.
    let echo = tool(&reviews, "echo");
    let (status, body) = admin
        .request(
            Method::POST,
            "/v1/reviews",
            Some(json!({"connector": "everything", "tool": "echo", "digest": echo["digest"]})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("`effect`"), "{body}");

    review(&admin, "everything", echo, "read").await;
    review(
        &admin,
        "everything",
        tool(&reviews, "get-tiny-image"),
        "read",
    )
    .await;
    // Offered from the session's next request: exactly what was reviewed.
    assert_eq!(offered(&mcp).await, vec!["echo", "get-tiny-image"]);
    let answer = call(&mcp, "echo", json!({"message": "hello"}))
        .await
        .unwrap();
    assert_eq!(ok_text(&answer).as_deref(), Some("Echo: hello"), "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["scout/untrusted"], true,
        "{answer}"
    );
    // An image comes back as the server gave it.
    let image = call(&mcp, "get-tiny-image", json!({})).await.unwrap();
    let content = image["result"]["content"].as_array().expect("content");
    assert!(
        content
            .iter()
            .any(|c| c["type"] == "image" && c["data"].as_str().is_some_and(|d| !d.is_empty())),
        "{image}"
    );

    // The trace holds the call with the request it made upstream.
    let trace = admin.trace("acme").await;
    let events: Vec<_> = trace
        .iter()
        .filter(|e| e.tool.as_deref() == Some("mcp__everything__echo"))
        .collect();
    let states: Vec<TraceState> = events.iter().map(|e| e.state).collect();
    assert!(states.contains(&TraceState::Allowed), "{states:?}");
    let executed = events
        .iter()
        .find(|e| e.state == TraceState::Executed)
        .unwrap_or_else(|| panic!("{states:?}"));
    let requests = executed.detail["http"]
        .as_array()
        .expect("the requests made");
    assert!(
        requests
            .iter()
            .any(|r| r["route"] == "POST /mcp" && r["status"] == 200),
        "{}",
        executed.detail
    );
    drop(serve);
}

#[tokio::test]
async fn a_hostile_remote_server_gets_only_what_the_boundary_allows() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = hostile(dir.path()).await;
    let config = write_config(
        dir.path(),
        &format!(
            "[connectors.hostile]\nmcp = \"http://127.0.0.1:{port}/mcp\"\nhost_env = \"HOSTILE_TOKEN\"\nallow_private_network = true\ncall_timeout_secs = 120\ndiscover_every_secs = 1\n\
             [connectors.slow]\nmcp = \"http://127.0.0.1:{port}/mcp\"\ncredential = \"none\"\nallow_private_network = true\ncall_timeout_secs = 2\n\
             [connectors.moved]\nmcp = \"http://127.0.0.1:{port}/moved/mcp\"\ncredential = \"none\"\nallow_private_network = true\ndiscover_every_secs = 1\n",
            port = upstream.port
        ),
    );
    let serve = common::serve(&config)
        .envs(&[("HOSTILE_TOKEN", HOSTILE_TOKEN.to_string())])
        .start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    let reviews = listed(&admin, "hostile").await;
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "hostile").connect().await;

    // Unreviewed: refused, and the server never hears of it.
    let refused = call(&mcp, "publish", json!({"text": "early"}))
        .await
        .expect("an answer");
    assert!(refused.get("error").is_some(), "{refused}");
    assert_eq!(calls_of(&stats(&upstream).await, "publish"), 0);

    for name in ["lookup", "whoami", "huge", "sample", "stall"] {
        review(&admin, "hostile", tool(&reviews, name), "read").await;
    }
    review(&admin, "hostile", tool(&reviews, "publish"), "write").await;
    assert_eq!(
        offered(&mcp).await,
        vec!["huge", "lookup", "publish", "sample", "stall", "whoami"]
    );

    let found = call(&mcp, "lookup", json!({"query": "q1"})).await.unwrap();
    assert_eq!(ok_text(&found).as_deref(), Some("found: q1"), "{found}");

    // The credential is injected by the host, reaches the server, and is
    // scrubbed from what the server sends back.
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    let text = result_text(&who);
    assert!(text.contains("[REDACTED]"), "{who}");
    assert!(!who.to_string().contains(HOSTILE_TOKEN), "{who}");
    let seen = stats(&upstream).await;
    assert!(
        seen["authorization"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == &json!(format!("Bearer {HOSTILE_TOKEN}"))),
        "{seen}"
    );
    // Echoed base64-encoded (issue 52 item 11), at each offset modulo 3
    // and each ending, in both alphabets, padded or not: no character that
    // carries a bit of the token is left beside `[REDACTED]` (the edge
    // character of a partial quantum, as in `[REDACTED]Q=`, holds up to 4).
    for encoding in ["standard", "standard-nopad", "urlsafe", "urlsafe-nopad"] {
        for before in ["", "a", "ab"] {
            for after in ["", "x", "xy"] {
                let who = call(
                    &mcp,
                    "whoami",
                    json!({"encoding": encoding, "before": before, "after": after}),
                )
                .await
                .unwrap();
                let text = ok_text(&who).unwrap_or_else(|| panic!("{who}"));
                let echoed = text.strip_prefix("you sent: ").unwrap_or(&text);
                assert_no_bit_of_the_token_left(encoding, before, after, echoed);
            }
        }
    }

    // 50 MB is past the host's limit: an error, not the bytes.
    let huge = call(&mcp, "huge", json!({})).await.unwrap();
    assert_eq!(huge["result"]["isError"], true, "{}", result_text(&huge));
    assert!(
        result_text(&huge).contains("limit"),
        "{}",
        result_text(&huge)
    );

    // Sampling is refused by the host's client; the server says so.
    let sampled = call(&mcp, "sample", json!({})).await.unwrap();
    assert!(
        result_text(&sampled).contains("sampling: refused"),
        "{sampled}"
    );
    assert!(
        stats(&upstream).await["sampling"]
            .as_str()
            .is_some_and(|s| s.starts_with("refused")),
    );

    // A server that never answers: the call ends at its deadline (the same
    // server as `slow`, whose calls have 2 s).
    let slow = listed(&admin, "slow").await;
    review(&admin, "slow", tool(&slow, "stall"), "read").await;
    let slow = Mcp::for_connector(&http, &view, "slow").connect().await;
    let stalled = call(&slow, "stall", json!({})).await.unwrap();
    assert_eq!(stalled["result"]["isError"], true, "{stalled}");
    assert!(result_text(&stalled).contains("deadline"), "{stalled}");

    // A write waits for a person, then runs once: the official Python
    // client calls it, the approval is given through the admin API.
    let session = view["id"].as_str().unwrap().to_string();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/remote_write.py");
    let mut command = Command::new(scout_tests::python());
    command
        .arg(script)
        .args([
            "--base",
            &serve.base,
            "--admin-token",
            super::crash_safety::ADMIN_TOKEN,
        ])
        .args(["--url", view["mcp"]["hostile"].as_str().unwrap()])
        .args([
            "--token",
            view["token"].as_str().unwrap(),
            "--session",
            &session,
        ])
        .args([
            "--stats",
            &format!("http://127.0.0.1:{}/stats", upstream.port),
        ]);
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("run remote_write.py");
    assert!(
        out.status.success(),
        "remote_write.py: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        serve.stderr()
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert_eq!(
        summary["tools"],
        json!(["huge", "lookup", "publish", "sample", "stall", "whoami"]),
        "{summary}"
    );
    assert_eq!(summary["read"], "found: from python", "{summary}");
    assert_eq!(
        summary["approved_tool"], "mcp__hostile__publish",
        "{summary}"
    );
    assert_eq!(
        summary["server_calls_before_approval"], 0,
        "nothing before the person decides"
    );
    assert_eq!(summary["write"], "published 11 characters", "{summary}");
    assert_eq!(summary["write_error"], false, "{summary}");
    assert_eq!(calls_of(&stats(&upstream).await, "publish"), 1);

    // The server changes a reviewed tool's description: held until reviewed again.
    let drifted = http
        .post(format!("http://127.0.0.1:{}/drift", upstream.port))
        .send()
        .await
        .unwrap();
    assert_eq!(drifted.status().as_u16(), 200);
    wait_for("the changed tool to be held", EVENTUALLY, async || {
        (!offered(&mcp).await.contains(&"lookup".to_string())).then_some(())
    })
    .await;
    let (_, now) = admin.request(Method::GET, "/v1/reviews", None).await;
    let changed = now["connectors"]["hostile"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "lookup")
        .cloned()
        .unwrap();
    assert_eq!(changed["status"], "changed", "{changed}");
    // What the reviewer is told to look at twice in the new description.
    assert_eq!(
        changed["flags"],
        json!(["addressed_to_the_model", "names_other_tools"]),
        "{changed}"
    );
    assert_eq!(
        tool(&reviews, "lookup")["flags"],
        json!([]),
        "the first description was plain"
    );
    let before = calls_of(&stats(&upstream).await, "lookup");
    let held = call(&mcp, "lookup", json!({"query": "q2"}))
        .await
        .expect("an answer");
    assert!(
        held.get("error").is_some() || held["result"]["isError"] == true,
        "{held}"
    );
    assert_eq!(
        calls_of(&stats(&upstream).await, "lookup"),
        before,
        "a held tool reaches no server"
    );

    // A server that redirects off its origin is never followed.
    let (_, now) = admin.request(Method::GET, "/v1/reviews", None).await;
    let moved = wait_for("the redirect to be refused", EVENTUALLY, async || {
        let (_, now) = admin.request(Method::GET, "/v1/reviews", None).await;
        now["remote"]["moved"]["error"].as_str().map(str::to_string)
    })
    .await;
    assert!(moved.contains("redirect"), "{moved} / {now}");
    assert_eq!(
        stats(&upstream).await["landed"],
        0,
        "the redirect's target was never asked"
    );

    // No trace, no error the host wrote holds the token.
    let trace = admin.trace("acme").await;
    let trace_text = serde_json::to_string(&trace).unwrap();
    assert!(!trace_text.contains(HOSTILE_TOKEN));
    assert!(!serve.stderr().contains(HOSTILE_TOKEN));
    // The held call is in the trace with the rule that held it.
    assert!(
        trace
            .iter()
            .any(|e| e.tool.as_deref() == Some("mcp__hostile__lookup")
                && e.rule.as_deref() == Some("unreviewed_changed")),
        "{trace_text}"
    );
}

/// `echoed` is base64 of `before + HOSTILE_TOKEN + after` in `encoding`
/// (as `remote_server.py`'s `whoami` writes it) with the token's part
/// replaced by one `[REDACTED]`, and no character kept on either side
/// carries a bit of the token: character `i` of base64 carries bits
/// `6i..6i+6` of the data, the token's are `8b..8(b+len)`.
fn assert_no_bit_of_the_token_left(encoding: &str, before: &str, after: &str, echoed: &str) {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let engine = match encoding {
        "standard" => &STANDARD,
        "standard-nopad" => &STANDARD_NO_PAD,
        "urlsafe" => &URL_SAFE,
        _ => &URL_SAFE_NO_PAD,
    };
    let encoded = engine.encode(format!("{before}{HOSTILE_TOKEN}{after}"));
    let case = format!("{encoding} {before:?}+token+{after:?}: {encoded} came back as {echoed}");
    assert_eq!(echoed.matches("[REDACTED]").count(), 1, "{case}");
    let (kept_before, kept_after) = echoed.split_once("[REDACTED]").unwrap();
    assert!(
        encoded.starts_with(kept_before) && encoded.ends_with(kept_after),
        "{case}"
    );
    assert!(
        6 * kept_before.len() <= 8 * before.len(),
        "{case}: a character before [REDACTED] carries the token's first bits"
    );
    assert!(
        6 * (encoded.len() - kept_after.len()) >= 8 * (before.len() + HOSTILE_TOKEN.len()),
        "{case}: a character after [REDACTED] carries the token's last bits"
    );
}

/// `scout-host inspect mcp+URL --json`, with `serve`'s configuration when
/// given: its exit code and report.
fn inspect_remote(url: &str, config: Option<&Path>) -> (Option<i32>, Value) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scout-host"));
    command
        .args([
            "inspect",
            &format!("mcp+{url}"),
            "--json",
            "--allow-private-network",
        ])
        .env("SCOUT_STORE_KEY", "5c".repeat(32));
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    let out = command.output().expect("run inspect");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), report)
}

#[tokio::test]
async fn the_seeds_cloudflare_is_a_remote_server_served_with_the_seeds_gates() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = python_server(dir.path(), "cloudflare").await;
    let url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    let config = write_config(
        dir.path(),
        &format!(
            "[connectors.cloudflare]\nmcp = \"{url}\"\nhost_env = \"CLOUDFLARE_TOKEN\"\nallow_private_network = true\n\
             [connectors.contentsquare]\nmcp = \"{url}\"\ncredential = \"none\"\nallow_private_network = true\n"
        ),
    );
    // Before any review: every tool needs one (exit 2), as the server describes it.
    let (code, report) = inspect_remote(&url, None);
    assert_eq!(code, Some(2), "{report}");
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 4, "{report}");
    for name in ["docs", "search", "execute", "purge_cache"] {
        assert!(names.contains(&name), "{report}");
    }

    let serve = common::serve(&config)
        .envs(&[("CLOUDFLARE_TOKEN", "cf-owner-token-0042".to_string())])
        .start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    let reviews = listed(&admin, "cloudflare").await;
    for (name, effect) in [
        ("docs", "read"),
        ("search", "read"),
        ("execute", "write"),
        ("purge_cache", "read"),
    ] {
        review(&admin, "cloudflare", tool(&reviews, name), effect).await;
    }
    // The seed's three, with the seed's gates; a tool the seed does not list
    // for Cloudflare is not served, reviewed or not.
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "cloudflare")
        .connect()
        .await;
    assert_eq!(offered(&mcp).await, vec!["docs", "execute", "search"]);
    let found = call(&mcp, "search", json!({"query": "zones"}))
        .await
        .unwrap();
    assert_eq!(
        ok_text(&found).as_deref(),
        Some("resources matching zones"),
        "{found}"
    );
    let refused = call(&mcp, "purge_cache", json!({"zone": "z1"}))
        .await
        .expect("an answer");
    assert!(refused.get("error").is_some(), "{refused}");
    assert_eq!(calls_of(&stats(&upstream).await, "purge_cache"), 0);
    // `execute` asks a person on every call.
    let waiting = {
        let mcp = mcp.clone();
        tokio::spawn(async move { call(&mcp, "execute", json!({"code": "1+1"})).await })
    };
    let session = view["id"].as_str().unwrap().to_string();
    let pending = wait_for("execute's approval", EVENTUALLY, async || {
        admin.pending(&session).await.into_iter().next()
    })
    .await;
    assert_eq!(pending["tool"], "mcp__cloudflare__execute", "{pending}");
    assert_eq!(calls_of(&stats(&upstream).await, "execute"), 0);
    let (status, body) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", pending["id"]),
            Some(json!({"approve": false})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let denied = waiting.await.unwrap().unwrap();
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(
        calls_of(&stats(&upstream).await, "execute"),
        0,
        "a refused write reaches no server"
    );

    // Contentsquare serves every tool its server lists that an operator
    // reviewed, with the effect the review gave it (a write asks a person).
    let reviews = listed(&admin, "contentsquare").await;
    review(&admin, "contentsquare", tool(&reviews, "docs"), "read").await;
    review(
        &admin,
        "contentsquare",
        tool(&reviews, "purge_cache"),
        "write",
    )
    .await;
    let squared = Mcp::for_connector(&http, &view, "contentsquare")
        .connect()
        .await;
    assert_eq!(offered(&squared).await, vec!["docs", "purge_cache"]);
    let read = call(&squared, "docs", json!({"query": "heatmaps"}))
        .await
        .unwrap();
    assert_eq!(
        ok_text(&read).as_deref(),
        Some("docs about heatmaps"),
        "{read}"
    );
    let waiting = {
        let squared = squared.clone();
        tokio::spawn(async move { call(&squared, "purge_cache", json!({"zone": "z2"})).await })
    };
    let pending = wait_for("purge_cache's approval", EVENTUALLY, async || {
        admin.pending(&session).await.into_iter().next()
    })
    .await;
    assert_eq!(
        pending["tool"], "mcp__contentsquare__purge_cache",
        "{pending}"
    );
    let (status, body) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", pending["id"]),
            Some(json!({"approve": false})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let denied = waiting.await.unwrap().unwrap();
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(calls_of(&stats(&upstream).await, "purge_cache"), 0);
    // None of it is grantable: a profile granting it is refused.
    let (status, refused) = admin
        .request(
            Method::PUT,
            "/v1/brands/acme/profiles/squared",
            Some(json!({"kind": "coworker", "profile": {
                "name": "squared", "tools": [],
                "grant": {"connectors": ["contentsquare"]},
                "limits": {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 1}
            }})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert!(
        refused.to_string().contains("cannot be granted"),
        "{refused}"
    );

    // `inspect --config` compares with the store's reviews: all reviewed now.
    let (code, report) = inspect_remote(&url, Some(&config));
    assert_eq!(report["connector"], "cloudflare", "{report}");
    let execute = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "execute")
        .cloned()
        .unwrap();
    assert_eq!(execute["status"], "reviewed", "{report}");
    assert_eq!(execute["effect"], "write", "{report}");
    assert_eq!(code, Some(0), "{report}");
    drop(serve);
}

/// The OAuth fixture (`tests/mcp_client/oauth_server.py`): a server on the
/// official Python SDK that is its own authorization server, issuing
/// access tokens that live `lifetime` seconds and rotating refresh tokens.
pub(super) async fn oauth_server(dir: &Path, lifetime: u32) -> Server {
    let lifetime = lifetime.to_string();
    python_fixture(
        dir,
        "oauth_server.py",
        "oauth",
        &["--access-lifetime", &lifetime],
        "the OAuth MCP server",
    )
    .await
}

fn query_of(url: &str) -> std::collections::HashMap<String, String> {
    url::Url::parse(url)
        .unwrap_or_else(|e| panic!("{url}: {e}"))
        .query_pairs()
        .into_owned()
        .collect()
}

/// A remote server that takes a credential is listed with the deployment
/// owner's connection (issue 52 item 12): declared without
/// `deployment_owner_brand`, a brand's OAuth Connect would say "connected"
/// while the server, asked with no credential, never lists a tool. serve
/// refuses to start instead, naming the key and the server; with the key
/// (every other test here) it starts, and a server that takes no
/// credential needs none.
#[test]
fn a_remote_server_taking_a_credential_needs_the_deployment_owner_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    for credential in ["", "credential = \"bearer\"\n"] {
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\n[connectors.tracker]\nmcp = \"http://127.0.0.1:9/mcp\"\n{credential}allow_private_network = true\n"
            ),
        )
        .unwrap();
        let stderr = super::reserved_names::refused_start(&config);
        assert!(
            stderr.contains("connectors.tracker")
                && stderr.contains("deployment_owner_brand = \"BRAND\""),
            "{credential:?}: {stderr}"
        );
    }
}

/// A person connects a brand to a remote server that takes OAuth: the host
/// discovers the authorization server from the server's challenge,
/// registers itself, sends the person with PKCE (S256) and the resource
/// indicator, exchanges the code at the callback, and from then on keeps
/// the token alive itself, storing each rotated refresh token so a restart
/// goes on with it. No token reaches the agent, the trace or the log.
#[tokio::test]
async fn a_person_connects_a_brand_by_oauth_and_the_host_keeps_the_token_alive() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = oauth_server(dir.path(), 2).await;
    let mcp_url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    let config = write_config(
        dir.path(),
        &format!(
            "[connectors.tracker]\nmcp = \"{mcp_url}\"\ncredential = \"bearer\"\nallow_private_network = true\n"
        ),
    );
    let mut serve = common::serve(&config).start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };

    // A component is not connected this way; nor is an unknown connector.
    let (status, body) = admin
        .request(
            Method::POST,
            "/v1/brands/acme/connections/nothing/authorize",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 404, "{body}");

    let (status, started) = admin
        .request(
            Method::POST,
            "/v1/brands/acme/connections/tracker/authorize",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let callback = format!("{}/v1/oauth/callback", serve.base);
    assert_eq!(started["redirect_uri"], callback.as_str(), "{started}");
    assert_eq!(started["resource"], mcp_url.as_str(), "{started}");
    assert_eq!(started["registered_client"], true, "{started}");
    let authorization_url = started["authorization_url"].as_str().unwrap();
    let asked = query_of(authorization_url);
    assert_eq!(asked["code_challenge_method"], "S256", "{asked:?}");
    assert_eq!(asked["code_challenge"].len(), 43, "{asked:?}");
    assert_eq!(asked["resource"], mcp_url, "{asked:?}");
    assert_eq!(asked["redirect_uri"], callback, "{asked:?}");
    let seen = stats(&upstream).await;
    let registered = &seen["registrations"][0];
    assert_eq!(registered["redirect_uris"], json!([callback]), "{seen}");
    assert_eq!(
        registered["token_endpoint_auth_method"], "client_secret_basic",
        "{seen}"
    );
    assert_eq!(
        registered["client_id"],
        asked["client_id"].as_str(),
        "{seen}"
    );

    // The person allows; the authorization server sends the browser back.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let allowed = browser.get(authorization_url).send().await.unwrap();
    assert!(allowed.status().is_redirection(), "{}", allowed.status());
    let back = allowed.headers()["location"].to_str().unwrap().to_string();
    assert!(back.starts_with(&callback), "{back}");
    let returned = query_of(&back);

    // A `state` changed on the way, or missing, stores nothing.
    let mut forged = returned["state"].clone().into_bytes();
    let at = forged.len() / 2;
    forged[at] = if forged[at] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    for query in [
        format!("code={}&state={forged}", returned["code"]),
        format!("code={}", returned["code"]),
    ] {
        let answer = browser
            .get(format!("{callback}?{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400);
        let page = answer.text().await.unwrap();
        assert!(page.contains("Nothing was stored"), "{page}");
    }
    let (_, connections) = admin
        .request(Method::GET, "/v1/brands/acme/connections", None)
        .await;
    assert!(
        !connections.to_string().contains("tracker"),
        "{connections}"
    );
    assert_eq!(stats(&upstream).await["code_exchanges"], 0);

    let done = browser.get(&back).send().await.unwrap();
    assert_eq!(done.status(), 200);
    let page = done.text().await.unwrap();
    assert!(page.contains("connected to tracker"), "{page}");
    let seen = stats(&upstream).await;
    assert_eq!(seen["code_exchanges"], 1, "{seen}");
    assert_eq!(
        seen["authorizations"][0]["resource"],
        mcp_url.as_str(),
        "{seen}"
    );
    let (_, connections) = admin
        .request(Method::GET, "/v1/brands/acme/connections", None)
        .await;
    assert!(connections.to_string().contains("tracker"), "{connections}");
    // The callback is good once: the code is spent.
    let again = browser.get(&back).send().await.unwrap();
    assert_eq!(
        again.status(),
        502,
        "the authorization server refuses a spent code"
    );

    // The stored connection lists the server (with the owner's token) and
    // its tools are reviewed as any remote server's.
    let reviews = listed(&admin, "tracker").await;
    review(&admin, "tracker", tool(&reviews, "whoami"), "read").await;
    review(
        &admin,
        "tracker",
        tool(&reviews, "echo_authorization"),
        "read",
    )
    .await;
    // The audit says where each reviewed tool goes, with which credential.
    let (status, audit) = admin
        .request(Method::GET, "/v1/audit?role=person-chat&brand=acme", None)
        .await;
    assert_eq!(status, 200, "{audit}");
    let whoami = audit["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__tracker__whoami")
        .unwrap_or_else(|| panic!("{audit}"));
    assert_eq!(whoami["effect"], "read", "{whoami}");
    assert_eq!(whoami["review"], "reviewed", "{whoami}");
    assert_eq!(whoami["routes"][0]["path"], "/mcp", "{whoami}");
    assert_eq!(
        whoami["routes"][0]["origin"],
        format!("http://127.0.0.1:{}", upstream.port).as_str(),
        "{whoami}"
    );
    assert_eq!(
        whoami["credential"]["resolved"]["form"], "oauth",
        "{whoami}"
    );
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "tracker").connect().await;
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    let client_id = registered["client_id"].as_str().unwrap();
    assert_eq!(
        ok_text(&who).as_deref(),
        Some(format!("signed in as client {client_id}").as_str()),
        "{who}"
    );
    // The token reaches the server, and never what the server sends back.
    let echoed = call(&mcp, "echo_authorization", json!({})).await.unwrap();
    assert_eq!(
        ok_text(&echoed).as_deref(),
        Some("Bearer [REDACTED]"),
        "{echoed}"
    );

    // Each token lives two seconds: the host refreshes it, with the
    // refresh token the last refresh rotated in (a spent one is refused).
    for _ in 0..2 {
        tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
        let who = call(&mcp, "whoami", json!({})).await.unwrap();
        assert!(ok_text(&who).is_some(), "{who}");
    }
    let seen = stats(&upstream).await;
    assert!(seen["refreshes"].as_u64().unwrap() >= 2, "{seen}");
    assert_eq!(seen["refused_refreshes"], 0, "{seen}");

    // A restart goes on from the stored, rotated grant.
    let issued = seen["issued"].clone();
    serve.kill();
    drop(serve);
    tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
    let serve = common::serve(&config).start();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    listed(&admin, "tracker").await;
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "tracker").connect().await;
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert!(ok_text(&who).is_some(), "{who}");
    let seen = stats(&upstream).await;
    assert_eq!(seen["refused_refreshes"], 0, "{seen}");

    // An access token the server ends before its expiry is refused (401):
    // the host renews it once and sends the call again, and the trace says so.
    let ended = http
        .post(format!("http://127.0.0.1:{}/revoke-access", upstream.port))
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    let before = stats(&upstream).await;
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert!(ok_text(&who).is_some(), "{who}");
    let after = stats(&upstream).await;
    assert_eq!(
        after["refreshes"].as_u64().unwrap(),
        before["refreshes"].as_u64().unwrap() + 1,
        "{after}"
    );
    assert!(
        after["unauthorized"].as_u64().unwrap() > before["unauthorized"].as_u64().unwrap(),
        "{after}"
    );
    assert_eq!(calls_of(&after, "whoami"), calls_of(&before, "whoami") + 1);
    let trace = admin.trace("acme").await;
    let renewed = trace
        .iter()
        .rev()
        .find(|e| {
            e.tool.as_deref() == Some("mcp__tracker__whoami") && e.state == TraceState::Executed
        })
        .expect("the executed call");
    assert!(
        renewed.detail["credentials"]
            .as_array()
            .is_some_and(|c| c.iter().any(|e| e["outcome"] == "renewed")),
        "{}",
        renewed.detail
    );
    let statuses: Vec<&Value> = renewed.detail["http"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["status"])
        .collect();
    assert!(
        statuses.contains(&&json!(401)) && statuses.contains(&&json!(200)),
        "{statuses:?}"
    );

    // A grant the authorization server revoked fails the call with the
    // bounded reason once the token expires, and the server hears nothing.
    let revoked = http
        .post(format!("http://127.0.0.1:{}/revoke-all", upstream.port))
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
    let calls_before = calls_of(&stats(&upstream).await, "whoami");
    let failed = call(&mcp, "whoami", json!({})).await.unwrap();
    assert!(
        result_text(&failed).contains("credential could not be refreshed"),
        "{failed}"
    );
    let seen = stats(&upstream).await;
    assert_eq!(calls_of(&seen, "whoami"), calls_before, "{seen}");

    // No token the server issued is in the trace or the log.
    let export = http
        .get(format!("{}/v1/trace/export", serve.base))
        .bearer_auth(super::crash_safety::ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(export.status(), 200);
    let export = export.text().await.unwrap();
    assert!(
        export.contains("mcp__tracker__whoami"),
        "the export holds the calls"
    );
    let log = serve.stderr();
    let all_issued: Vec<String> = issued
        .as_array()
        .unwrap()
        .iter()
        .chain(seen["issued"].as_array().unwrap())
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    assert!(all_issued.len() >= 4, "{all_issued:?}");
    for token in &all_issued {
        assert!(
            !export.contains(token.as_str()),
            "a token in the trace export"
        );
        assert!(!log.contains(token.as_str()), "a token in the log");
    }
}

/// A server that has only the 2024-11-05 HTTP+SSE transport
/// (`transport = "sse"`) is served behind the same boundary: its event
/// stream and its posted messages ride the connector's guarded handle, what
/// it lists waits for review, the credential reaches it and never what it
/// sends back, and an unreviewed tool never reaches it. A session whose
/// stream could end before a call does is opened again.
#[tokio::test]
async fn a_server_with_only_the_legacy_sse_transport_is_served_behind_the_same_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = python_server_with(dir.path(), "hostile", &["--transport", "sse"]).await;
    let config = write_config(
        dir.path(),
        &format!(
            "[connectors.legacy]\nmcp = \"http://127.0.0.1:{}/sse\"\ntransport = \"sse\"\nhost_env = \"HOSTILE_TOKEN\"\nallow_private_network = true\n",
            upstream.port
        ),
    );
    let serve = common::serve(&config)
        .envs(&[("HOSTILE_TOKEN", HOSTILE_TOKEN.to_string())])
        .start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    let reviews = listed(&admin, "legacy").await;
    assert!(reviews.iter().all(|t| t["status"] == "new"), "{reviews:?}");
    review(&admin, "legacy", tool(&reviews, "lookup"), "read").await;
    review(&admin, "legacy", tool(&reviews, "whoami"), "read").await;
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "legacy").connect().await;
    assert_eq!(offered(&mcp).await, vec!["lookup", "whoami"]);

    let found = call(&mcp, "lookup", json!({"query": "q1"})).await.unwrap();
    assert_eq!(ok_text(&found).as_deref(), Some("found: q1"), "{found}");
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert_eq!(
        ok_text(&who).as_deref(),
        Some("you sent: Bearer [REDACTED]"),
        "{who}"
    );
    let seen = stats(&upstream).await;
    assert!(
        seen["authorization"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == &json!(format!("Bearer {HOSTILE_TOKEN}"))),
        "{seen}"
    );
    // Unreviewed: refused, and the server never hears of it.
    let refused = call(&mcp, "publish", json!({"text": "early"}))
        .await
        .expect("an answer");
    assert!(refused.get("error").is_some(), "{refused}");
    assert_eq!(calls_of(&stats(&upstream).await, "publish"), 0);

    // Past the margin a stream is kept for, the next call opens another.
    tokio::time::sleep(scout_host::remote::STREAM_MARGIN + std::time::Duration::from_millis(500))
        .await;
    let again = call(&mcp, "lookup", json!({"query": "q2"})).await.unwrap();
    assert_eq!(ok_text(&again).as_deref(), Some("found: q2"), "{again}");
    assert_eq!(calls_of(&stats(&upstream).await, "lookup"), 2);

    // The trace holds the message posted for the call, never its body.
    let trace = admin.trace("acme").await;
    let executed = trace
        .iter()
        .find(|e| {
            e.tool.as_deref() == Some("mcp__legacy__lookup") && e.state == TraceState::Executed
        })
        .expect("an executed lookup");
    let requests = executed.detail["http"]
        .as_array()
        .expect("the requests made");
    assert!(
        requests
            .iter()
            .any(|r| r["route"] == "POST /messages/" && r["status"] == 202),
        "{}",
        executed.detail
    );
    assert!(
        !executed.detail.to_string().contains("q1"),
        "{}",
        executed.detail
    );
    assert!(!serve.stderr().contains(HOSTILE_TOKEN));
}

/// A remote server that asks something mid-call (`elicitation/create`)
/// reaches the session's person only where the session has one and the
/// client can put the question to them: over the official Python client in
/// person chat it is shown as the server's own words (hidden characters
/// made visible) and the person's answer goes back; through a client that
/// takes no elicitation it is declined unasked. The trace keeps what became
/// of it, never the question or the answer.
#[tokio::test]
async fn a_remote_servers_question_reaches_a_person_only_as_its_own_words() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = hostile(dir.path()).await;
    let (serve, admin) = front_hostile(dir.path(), upstream.port, "credential = \"none\"\n", &[]);
    let http = admin.http.clone();
    let reviews = listed(&admin, "hostile").await;
    review(&admin, "hostile", tool(&reviews, "ask"), "read").await;
    let view = admin.session().await;

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/remote_ask.py");
    let mut command = Command::new(scout_tests::python());
    command
        .arg(script)
        .args(["--url", view["mcp"]["hostile"].as_str().unwrap()])
        .args(["--token", view["token"].as_str().unwrap()]);
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("run remote_ask.py");
    assert!(
        out.status.success(),
        "remote_ask.py: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        serve.stderr()
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert_eq!(
        summary["answer"], "the person answered: accept teal",
        "{summary}"
    );
    let shown = summary["shown"].as_array().unwrap();
    assert_eq!(shown.len(), 1, "{summary}");
    assert_eq!(
        shown[0]["message"],
        "The remote MCP server `hostile` asks, in its own words (not Scout's): Which colour⟦U+200B ZERO WIDTH SPACE⟧ should the report use?",
        "{summary}"
    );
    assert_eq!(
        shown[0]["schema"]["properties"]["colour"]["type"], "string",
        "the server's form, as it asked: {summary}"
    );

    // A client that takes no elicitation: declined, nobody asked.
    let mcp = Mcp::for_connector(&http, &view, "hostile").connect().await;
    let declined = call(&mcp, "ask", json!({})).await.unwrap();
    assert_eq!(
        ok_text(&declined).as_deref(),
        Some("the person answered: decline"),
        "{declined}"
    );
    assert_eq!(calls_of(&stats(&upstream).await, "ask"), 2);

    let trace = admin.trace("acme").await;
    let logs: Vec<String> = trace
        .iter()
        .filter(|e| {
            e.tool.as_deref() == Some("mcp__hostile__ask") && e.state == TraceState::Executed
        })
        .flat_map(|e| e.detail["logs"].as_array().cloned().unwrap_or_default())
        .map(|l| l["message"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        logs,
        vec![
            "the server asked the session's person (elicitation/create): accept".to_string(),
            "the server asked the session's person (elicitation/create): declined: nobody to ask (no person in this session, or a client that takes no form elicitation)".to_string(),
        ],
        "{trace:?}"
    );
    let all = serde_json::to_string(&trace.iter().map(|e| &e.detail).collect::<Vec<_>>()).unwrap();
    assert!(
        !all.contains("teal") && !all.contains("Which colour"),
        "{all}"
    );
}

/// The operator's `tools` narrows a remote server as it narrows a
/// component (a reviewed tool left out is neither offered, allowlisted nor
/// sent); a tool the server stops listing is gone from the next surface and
/// its call reaches nothing.
#[tokio::test]
async fn a_remote_server_is_narrowed_by_the_operator_and_a_removed_tool_disappears() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = hostile(dir.path()).await;
    let (serve, admin) = front_hostile(
        dir.path(),
        upstream.port,
        "credential = \"none\"\ndiscover_every_secs = 1\ntools = [\"lookup\", \"whoami\", \"stall\"]\n",
        &[],
    );
    let http = admin.http.clone();
    let reviews = listed(&admin, "hostile").await;
    for name in ["lookup", "whoami", "stall", "huge"] {
        review(&admin, "hostile", tool(&reviews, name), "read").await;
    }
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "hostile").connect().await;
    assert_eq!(offered(&mcp).await, vec!["lookup", "stall", "whoami"]);
    let allowlisted = |view: &Value| -> Vec<String> {
        let mut names: Vec<String> = view["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{view}"))
            .iter()
            .filter_map(|t| t.as_str())
            .filter(|t| t.starts_with("mcp__hostile__"))
            .map(str::to_string)
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        allowlisted(&view),
        [
            "mcp__hostile__lookup",
            "mcp__hostile__stall",
            "mcp__hostile__whoami"
        ]
    );
    let session = view["id"].as_str().unwrap();
    let (status, sdk) = admin
        .request(
            Method::GET,
            &format!("/v1/sessions/{session}/agent-config?format=claude-agent-sdk"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{sdk}");
    assert_eq!(allowlisted(&sdk), allowlisted(&view), "{sdk}");

    // Reviewed, but narrowed out: refused, and the server hears nothing.
    let narrowed = call(&mcp, "huge", json!({})).await.expect("an answer");
    assert!(
        narrowed.get("error").is_some() || narrowed["result"]["isError"] == true,
        "{narrowed}"
    );
    assert_eq!(calls_of(&stats(&upstream).await, "huge"), 0);

    // The server stops listing `stall`: gone from the surface, and a call
    // of it (the model remembers the name) reaches nothing.
    let removed = http
        .post(format!(
            "http://127.0.0.1:{}/remove?tool=stall",
            upstream.port
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status().as_u16(), 200);
    wait_for("the removed tool to be gone", EVENTUALLY, async || {
        (!offered(&mcp).await.contains(&"stall".to_string())).then_some(())
    })
    .await;
    assert_eq!(offered(&mcp).await, vec!["lookup", "whoami"]);
    let gone = call(&mcp, "stall", json!({})).await.expect("an answer");
    assert!(
        gone.get("error").is_some() || gone["result"]["isError"] == true,
        "{gone}"
    );
    assert_eq!(calls_of(&stats(&upstream).await, "stall"), 0);
    let later = admin.session().await;
    assert_eq!(
        allowlisted(&later),
        ["mcp__hostile__lookup", "mcp__hostile__whoami"]
    );
    // What stays works.
    let found = call(&mcp, "lookup", json!({"query": "q3"})).await.unwrap();
    assert_eq!(ok_text(&found).as_deref(), Some("found: q3"), "{found}");
    drop(serve);
}

/// The `tools/call` requests for `tool` that reached the server (counted as
/// they arrive, whether or not the tool then ran).
fn requested(stats: &Value, tool: &str) -> u64 {
    stats["requested"][tool].as_u64().unwrap_or(0)
}

/// Calls `name` on `mcp` in the background, waits until its session asks a
/// person (failing at once if the call is answered without one), checks
/// that the server has not been asked meanwhile, approves on `admin`, and
/// returns the answer and the approval's id.
async fn asks_then_runs(
    mcp: &Mcp,
    admin: &Admin,
    session: &str,
    upstream: &Server,
    name: &str,
    args: Value,
) -> (Value, i64) {
    let before = requested(&stats(upstream).await, name);
    let running = tokio::spawn({
        let (mcp, name) = (mcp.clone(), name.to_string());
        async move { call(&mcp, &name, args).await }
    });
    let approval = wait_for("the call to ask a person", EVENTUALLY, async || {
        if running.is_finished() {
            return Some(None);
        }
        admin
            .pending(session)
            .await
            .into_iter()
            .next()
            .map(|a| Some(a["id"].as_i64().unwrap()))
    })
    .await;
    let Some(approval) = approval else {
        let answer = running.await.unwrap();
        panic!(
            "`{name}` was answered with nobody asked: {answer:?}; the server was asked {} time(s)",
            requested(&stats(upstream).await, name) - before
        );
    };
    assert_eq!(
        requested(&stats(upstream).await, name),
        before,
        "nothing reaches the server before a person decides"
    );
    let (status, body) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{approval}"),
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let answer = tokio::time::timeout(EVENTUALLY, running)
        .await
        .expect("the approved call answered")
        .unwrap()
        .expect("an answer");
    (answer, approval)
}

/// Calls `name` on `mcp`, failing if its session asks a person meanwhile.
async fn runs_unasked(mcp: &Mcp, admin: &Admin, session: &str, name: &str, args: Value) -> Value {
    let running = tokio::spawn({
        let (mcp, name) = (mcp.clone(), name.to_string());
        async move { call(&mcp, &name, args).await }
    });
    wait_for("the read to be answered", EVENTUALLY, async || {
        let pending = admin.pending(session).await;
        assert!(pending.is_empty(), "a read asked a person: {pending:?}");
        running.is_finished().then_some(())
    })
    .await;
    running.await.unwrap().expect("an answer")
}

/// Issue 52, item 1: a review changed through one host of a fleet holds on
/// every host from the next call, whatever that host served before and
/// whether or not the store's notification has reached it yet (each host
/// decides a remote call under the review the store holds at that moment).
/// Three real `serve` processes on one PostgreSQL front the same server:
/// `lookup` reviewed `read` runs on each with nobody asked; re-reviewed
/// `write` through host 1, the next call on each of the others (then on
/// host 1) asks a person, reaches the server only once approved, and is
/// answered only then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tightened_review_holds_on_every_host_of_a_fleet_from_the_next_call() {
    let Some(db) = scout_tests::pg::database_or_skip("remote_review_fleet") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let upstream = hostile(dir.path()).await;
    let config = dir.path().join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\ndeployment_owner_brand = \"acme\"\n\n\
             [store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\n\n\
             [connectors.hostile]\nmcp = \"http://127.0.0.1:{}/mcp\"\nhost_env = \"HOSTILE_TOKEN\"\nallow_private_network = true\n",
            upstream.port
        ),
    )
    .unwrap();
    let env = [
        ("SCOUT_PG_URL", db.url()),
        ("HOSTILE_TOKEN", HOSTILE_TOKEN.to_string()),
    ];
    let http = reqwest::Client::new();
    let admin_of = |serve: &ServeProcess| Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    // Hosts 1 and 2 list the server, and `lookup` is reviewed a read
    // through host 1; host 3 starts after (a rolling restart) and lists
    // it already reviewed. Each host lists the server itself.
    let mut hosts: Vec<ServeProcess> = (0..2)
        .map(|_| common::serve(&config).envs(&env).start())
        .collect();
    let mut admins: Vec<Admin> = hosts.iter().map(admin_of).collect();
    let mut reviews = Vec::new();
    for admin in &admins {
        reviews = listed(admin, "hostile").await;
    }
    review(&admins[0], "hostile", tool(&reviews, "lookup"), "read").await;
    hosts.push(common::serve(&config).envs(&env).start());
    admins.push(admin_of(&hosts[2]));
    listed(&admins[2], "hostile").await;

    // One session of the fleet, served by each host in turn.
    let view = admins[0].session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let first = Mcp::for_connector(&http, &view, "hostile");
    let mut mcps = Vec::new();
    for host in &hosts {
        mcps.push(first.moved(&hosts[0].base, &host.base).connect().await);
    }
    // Reviewed a read through host 1: a read on every host (host 2 too,
    // which served it unreviewed until then).
    for (n, mcp) in mcps.iter().enumerate() {
        let query = format!("read on host {}", n + 1);
        let answer =
            runs_unasked(mcp, &admins[n], &session, "lookup", json!({"query": query})).await;
        assert_eq!(
            ok_text(&answer).as_deref(),
            Some(format!("found: {query}").as_str()),
            "host {}: {answer}",
            n + 1
        );
    }
    assert_eq!(requested(&stats(&upstream).await, "lookup"), 3);

    // Tightened through host 1: the next call on every host asks a person.
    review(&admins[0], "hostile", tool(&reviews, "lookup"), "write").await;
    for n in [1, 2, 0] {
        let query = format!("write on host {}", n + 1);
        let (answer, approval) = asks_then_runs(
            &mcps[n],
            &admins[n],
            &session,
            &upstream,
            "lookup",
            json!({"query": query}),
        )
        .await;
        assert_eq!(
            ok_text(&answer).as_deref(),
            Some(format!("found: {query}").as_str()),
            "host {}: {answer}",
            n + 1
        );
        // The person's decision is the call's, in the fleet's trace.
        let trace = admins[n].trace("acme").await;
        assert!(
            trace
                .iter()
                .any(|e| e.tool.as_deref() == Some("mcp__hostile__lookup")
                    && e.state == TraceState::Decided
                    && e.detail["approval"] == approval),
            "host {}: no decision for approval {approval}",
            n + 1
        );
    }
    assert_eq!(
        requested(&stats(&upstream).await, "lookup"),
        6,
        "each approved call reached the server once"
    );
    drop(hosts);
}

/// Issue 52, item 2: a remote write waiting for a person is authorized
/// again when the person has decided, against the tool's review and the
/// server's listing as they are then. Reviewed anew while it waits, its
/// approval is revoked (approving answers 409) and it does not run; changed
/// by the server while it waits (`publish` now says it deletes every other
/// post), its approval is revoked once the host lists the server again,
/// approving answers 409, the call ends with `unreviewed_changed` in the
/// trace, and the server never receives a `tools/call`.
#[tokio::test]
async fn a_remote_write_that_waited_runs_only_as_its_review_and_listing_are_now() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = hostile(dir.path()).await;
    let (serve, admin) = front_hostile(
        dir.path(),
        upstream.port,
        "host_env = \"HOSTILE_TOKEN\"\ndiscover_every_secs = 1\n",
        &[("HOSTILE_TOKEN", HOSTILE_TOKEN.to_string())],
    );
    let http = admin.http.clone();
    let reviews = listed(&admin, "hostile").await;
    let publish = tool(&reviews, "publish").clone();
    review(&admin, "hostile", &publish, "write").await;
    let view = admin.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp::for_connector(&http, &view, "hostile").connect().await;
    let approve = async |id: i64| {
        admin
            .request(
                Method::POST,
                &format!("/v1/approvals/{id}"),
                Some(json!({"approve": true})),
            )
            .await
    };
    let waiting = |text: &str| {
        let (mcp, args) = (mcp.clone(), json!({"text": text}));
        tokio::spawn(async move { call(&mcp, "publish", args).await })
    };
    let pending = async || -> Vec<i64> {
        admin
            .pending(&session)
            .await
            .iter()
            .map(|a| a["id"].as_i64().unwrap())
            .collect()
    };

    // Reviewed anew (now `billed`) while a call waits: its approval ends.
    let first = waiting("first post");
    let asked = wait_for("the first approval", EVENTUALLY, async || {
        pending().await.first().copied()
    })
    .await;
    let body = json!({"connector": "hostile", "tool": "publish", "digest": publish["digest"], "effect": "billed"});
    let (status, answer) = admin.request(Method::POST, "/v1/reviews", Some(body)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["approvals_revoked"], json!([asked]), "{answer}");
    let (status, body) = approve(asked).await;
    assert_eq!(status, 409, "a revoked approval cannot be given: {body}");
    let refused = tokio::time::timeout(EVENTUALLY, first)
        .await
        .expect("the first call answered")
        .unwrap()
        .expect("an answer");
    assert!(
        refused.get("error").is_some() || refused["result"]["isError"] == true,
        "{refused}"
    );
    assert_eq!(requested(&stats(&upstream).await, "publish"), 0);

    // Changed by the server while a call waits: held, its approval ended,
    // and it never reaches the server.
    let second = waiting("second post");
    let asked = wait_for("the second approval", EVENTUALLY, async || {
        pending().await.first().copied()
    })
    .await;
    let drifted = http
        .post(format!(
            "http://127.0.0.1:{}/drift?tool=publish",
            upstream.port
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(drifted.status().as_u16(), 200);
    // The host lists the server again (every second): `publish` changed.
    wait_for("the changed tool to be held", EVENTUALLY, async || {
        let (_, now) = admin.request(Method::GET, "/v1/reviews", None).await;
        let listed = now["connectors"]["hostile"].as_array()?.clone();
        (tool(&listed, "publish")["status"] == "changed").then_some(())
    })
    .await;
    wait_for("the approval to end", EVENTUALLY, async || {
        (!pending().await.contains(&asked)).then_some(())
    })
    .await;
    let (status, body) = approve(asked).await;
    assert_eq!(
        status, 409,
        "the changed tool's approval cannot be given: {body}"
    );
    let held = tokio::time::timeout(EVENTUALLY, second)
        .await
        .expect("the second call answered")
        .unwrap()
        .expect("an answer");
    assert!(
        held.get("error").is_some() || held["result"]["isError"] == true,
        "{held}"
    );
    let seen = stats(&upstream).await;
    assert_eq!(
        requested(&seen, "publish"),
        0,
        "no tools/call reached the server: {seen}"
    );
    assert_eq!(calls_of(&seen, "publish"), 0);

    // The trace: each approval revoked, the first call refused as revoked,
    // the second held as changed.
    let trace = admin.trace("acme").await;
    let publish_rows: Vec<_> = trace
        .iter()
        .filter(|e| e.tool.as_deref() == Some("mcp__hostile__publish"))
        .collect();
    let revoked = publish_rows
        .iter()
        .filter(|e| e.state == TraceState::Decided && e.rule.as_deref() == Some("revoked"))
        .count();
    assert_eq!(revoked, 2, "{publish_rows:?}");
    assert!(
        publish_rows
            .iter()
            .any(|e| e.state == TraceState::Denied && e.rule.as_deref() == Some("revoked")),
        "{publish_rows:?}"
    );
    assert!(
        publish_rows
            .iter()
            .any(|e| e.rule.as_deref() == Some("unreviewed_changed")
                && matches!(e.state, TraceState::Denied | TraceState::PermissionDenied)),
        "{publish_rows:?}"
    );
    assert!(
        !publish_rows
            .iter()
            .any(|e| matches!(e.state, TraceState::Allowed | TraceState::Executed)),
        "nothing ran: {publish_rows:?}"
    );
    drop(serve);
}
