//! What a session's client hears about its own calls of a remote server's
//! tools (issue 55, item 2), through the real `serve` binary and the
//! official Python MCP client: the server's progress for the client's token,
//! its log messages at and above the level the client set, marked as the
//! server's and scrubbed of the credential, bounded in rate; nothing below
//! the level, nothing unasked, nothing of another session's calls; at
//! 2026-07-28, the level named in the request itself; over stdio, the same;
//! and what the server said right before its answer, before the answer.

use super::crash_safety::Admin;
use super::remote_mcp::{listed, python_fixture, review, tool};
use crate::common;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The chatty server's credential, sent by the host as a bearer token.
const CHATTY_TOKEN: &str = "chatty-owner-token-4e1b7d90c2";

/// Messages the host relays of one call at once (`relay::BURST`).
const BURST: usize = 20;

/// Calls of the chatty server's `burst` (`BURSTS` in relay_client.py).
const BURSTS: usize = 25;

fn heard(summary: &Value, run: &str) -> Vec<Value> {
    summary[run]["heard"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_client_hears_its_own_calls_progress_and_messages_at_its_level_only() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = python_fixture(
        dir.path(),
        "chatty_server.py",
        "chatty",
        &[],
        "the chatty MCP server",
    )
    .await;
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\ndeployment_owner_brand = \"acme\"\n\
             [connectors.chatty]\nmcp = \"http://127.0.0.1:{}/mcp\"\nhost_env = \"CHATTY_TOKEN\"\nallow_private_network = true\n",
            upstream.port
        ),
    );
    let serve = common::serve(&config)
        .envs(&[("CHATTY_TOKEN", CHATTY_TOKEN.to_string())])
        .start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    let reviews = listed(&admin, "chatty").await;
    for name in ["chatter", "flood", "burst"] {
        review(&admin, "chatty", tool(&reviews, name), "read").await;
    }
    let view = admin.session().await;
    let other = admin.session().await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/relay_client.py");
    let mut command = Command::new(scout_tests::python());
    command
        .arg(script)
        .args(["--url", view["mcp"]["chatty"].as_str().unwrap()])
        .args(["--token", view["token"].as_str().unwrap()])
        .args(["--other-url", other["mcp"]["chatty"].as_str().unwrap()])
        .args(["--other-token", other["token"].as_str().unwrap()])
        .args(["--scout-host", env!("CARGO_BIN_EXE_scout-host"), "--config"])
        .arg(&config)
        .env("SCOUT_ADMIN_TOKEN", crate::crash_safety::ADMIN_TOKEN)
        .env("SCOUT_STORE_KEY", "5c".repeat(32))
        .env("CHATTY_TOKEN", CHATTY_TOKEN);
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("run relay_client.py");
    assert!(
        out.status.success(),
        "relay_client.py: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        serve.stderr()
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");

    // Level info, with a progress token: the server's three steps on the
    // client's token, its info and warning (not its debug), marked as the
    // server's, the credential scrubbed.
    assert_eq!(summary["info"]["answer"], "chattered", "{summary}");
    let progress: Vec<f64> = summary["info"]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, vec![1.0, 2.0, 3.0], "{summary}");
    assert_eq!(summary["info"]["progress"][0]["total"], 3.0, "{summary}");
    assert_eq!(
        summary["info"]["progress"][0]["message"], "step 1 of 3",
        "{summary}"
    );
    let info = heard(&summary, "info");
    let levels: Vec<&str> = info.iter().map(|m| m["level"].as_str().unwrap()).collect();
    assert_eq!(levels, vec!["info", "warning"], "{summary}");
    assert!(
        info.iter().all(|m| m["logger"] == "remote/chatty"),
        "{summary}"
    );
    assert_eq!(info[0]["data"], "chatter: halfway", "{summary}");
    let warning = info[1]["data"].as_str().unwrap();
    assert!(warning.starts_with("chatter: sent Bearer "), "{summary}");
    assert!(!summary.to_string().contains(CHATTY_TOKEN), "{summary}");

    // No level set, no token: nothing told, the call answered as before.
    assert_eq!(summary["unasked"]["answer"], "chattered", "{summary}");
    assert!(heard(&summary, "unasked").is_empty(), "{summary}");
    assert!(
        summary["unasked"]["progress"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Level error: everything the server said is below it.
    assert_eq!(summary["error_level"]["answer"], "chattered", "{summary}");
    assert!(heard(&summary, "error_level").is_empty(), "{summary}");

    // A flood: cut to the burst, and the drop said by the host.
    assert_eq!(summary["flood"]["answer"], "flooded", "{summary}");
    let flood = heard(&summary, "flood");
    let relayed = flood
        .iter()
        .filter(|m| m["logger"] == "remote/chatty")
        .count();
    assert!(
        (BURST..=BURST + 2).contains(&relayed),
        "{relayed} relayed: {summary}"
    );
    let said = flood.last().unwrap();
    assert_eq!(said["logger"], "scout", "{summary}");
    assert!(
        said["data"].as_str().unwrap().contains("were not relayed"),
        "{summary}"
    );

    // 2026-07-28: the request names its level; the same relay.
    assert_eq!(summary["stateless"]["answer"], "chattered", "{summary}");
    let modern: Vec<String> = heard(&summary, "stateless")
        .iter()
        .map(|m| m["level"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(modern, vec!["info", "warning"], "{summary}");
    assert_eq!(
        summary["stateless"]["progress"].as_array().unwrap().len(),
        3,
        "{summary}"
    );

    // Over stdio: the same.
    assert_eq!(summary["stdio"]["answer"], "chattered", "{summary}");
    let stdio: Vec<String> = summary["stdio"]["heard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["level"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(stdio, vec!["info", "warning"], "{summary}");
    assert_eq!(
        summary["stdio"]["progress"].as_array().unwrap().len(),
        3,
        "{summary}"
    );

    // A server whose last notices come right before its answer: each call's
    // five steps and its message were all heard before the call's answer
    // (the messages are counted over the session's calls), every time.
    let bursts = summary["burst"].as_array().unwrap();
    assert_eq!(bursts.len(), BURSTS, "{summary}");
    for (n, call) in bursts.iter().enumerate() {
        assert_eq!(call["answer"], "burst", "{summary}");
        assert_eq!(call["progress"], 5, "call {n}: {summary}");
        assert_eq!(call["heard"], n + 1, "call {n}: {summary}");
    }

    // Another agent session, listening at debug all along, heard nothing.
    assert!(
        summary["other_heard"].as_array().unwrap().is_empty(),
        "{summary}"
    );
}
