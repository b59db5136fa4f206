//! The host's own names are no connector's (issue 52 item 13), through the
//! real `serve` binary. `scout` is the endpoint of the host's own tools
//! (`scout_budget`, `scout_request_capability`): a component that names
//! itself so, or a remote server declared under it, would take that
//! endpoint over in every session. It is refused wherever a connector is
//! named: the configuration file (serve does not start), the admin API's
//! runtime connectors and session-component templates (422, nothing
//! pulled), and a component loaded alone (`scout-host audit`); so are the
//! names of the platform servers the policy gives by its own rules.

use super::artifacts::push;
use super::crash_safety::{ADMIN_TOKEN, Admin};
use crate::common;
use reqwest::Method;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Figma component renamed `scout` in its manifest and its WIT package
/// (both five letters): a component that names itself as the host's
/// endpoint, with tools `scout_whoami`, `scout_file_outline`, ...
fn scout_named(dir: &Path) -> PathBuf {
    let bytes = std::fs::read(scout_tests::components::FIGMA).unwrap();
    let bytes = scout_tests::patch_bytes(
        &bytes,
        b"\"connector\":\"figma\"",
        b"\"connector\":\"scout\"",
    );
    let bytes = scout_tests::patch_bytes(&bytes, b"scout:figma/", b"scout:scout/");
    let file = dir.join("scout.wasm");
    std::fs::write(&file, bytes).unwrap();
    file
}

/// Runs `serve --config config`, which must refuse to start: its stderr.
/// A serve that starts instead is stopped and the test fails (bounded, so
/// a host that wrongly starts fails the test rather than hanging it).
pub(super) fn refused_start(config: &Path) -> String {
    common::serve_as(config, ADMIN_TOKEN, "5c")
        .env("SCOUT_ARTIFACT_CACHE", config.with_extension("cache"))
        .refused()
}

#[test]
fn serve_refuses_a_connector_named_as_the_hosts_own_server_in_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let component = scout_named(dir.path());
    let config = dir.path().join("serve.toml");
    let head = "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\n";
    for (table, reserved) in [
        // A component that names itself `scout`, as the file names it.
        (
            format!(
                "[connectors.scout]\ncomponent = {:?}\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n",
                component.display().to_string()
            ),
            "`scout` is reserved",
        ),
        // A remote server needs no component to take the name.
        (
            "[connectors.scout]\nmcp = \"http://127.0.0.1:9/mcp\"\ncredential = \"none\"\nallow_private_network = true\n"
                .to_string(),
            "`scout` is reserved",
        ),
        // Nor may one take a platform server's, whose tools the policy gives.
        (
            "[connectors.team]\nmcp = \"http://127.0.0.1:9/mcp\"\ncredential = \"none\"\nallow_private_network = true\n"
                .to_string(),
            "`team` is reserved",
        ),
        // Nor a name whose `mcp__NAME__tool` reads as `scout`'s.
        (
            "[connectors.scout_]\nmcp = \"http://127.0.0.1:9/mcp\"\ncredential = \"none\"\nallow_private_network = true\n"
                .to_string(),
            "`scout_` cannot name a connector",
        ),
    ] {
        std::fs::write(&config, format!("{head}{table}")).unwrap();
        let stderr = refused_start(&config);
        assert!(
            stderr.contains(reserved) && stderr.contains("another name"),
            "{table}: {stderr}"
        );
    }

    // Loaded alone, the component is refused by the same check.
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["audit", "--role", "person-chat", "--component"])
        .arg(&component)
        .output()
        .expect("run scout-host audit");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "audit accepted it: {stderr}");
    assert!(stderr.contains("`scout` is reserved"), "{stderr}");
}

/// Every regular file under `dir` (none when it does not exist).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_refuses_the_hosts_own_names_and_pulls_nothing_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let addr = registry.address.clone();
    let component = scout_named(dir.path());
    let digest = push(
        &dir.path().join("publisher-cache"),
        component.to_str().unwrap(),
        &format!("oci://{addr}/connectors/scout:1"),
    )["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\nrequire_review = false\n\
             [registries.\"{addr}\"]\nplain_http = true\nallow_private_network = true\n"
        ),
    );
    let cache = dir.path().join("host-cache");
    let serve = common::serve(&config)
        .envs(&[("SCOUT_ARTIFACT_CACHE", cache.display().to_string())])
        .start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    let settings = |reference: String| json!({"component": reference, "origin": "http://127.0.0.1:9", "allow_private_network": true});
    let pinned = format!("oci://{addr}/connectors/scout@{digest}");
    for (path, body, reserved) in [
        (
            "/v1/connectors/scout",
            settings(format!("oci://{addr}/connectors/scout:1")),
            "`scout` is reserved",
        ),
        (
            "/v1/session-components/scout",
            settings(pinned.clone()),
            "`scout` is reserved",
        ),
        (
            "/v1/connectors/memory",
            settings(pinned.clone()),
            "`memory` is reserved",
        ),
        (
            "/v1/session-components/scout_",
            settings(pinned.clone()),
            "`scout_` cannot name a connector",
        ),
    ] {
        let (status, answer) = admin.request(Method::PUT, path, Some(body)).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (422, Some("invalid_connector")),
            "{path}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(reserved) && message.contains("another name"),
            "{path}: {message}"
        );
    }
    // Refused before anything was pulled: the host's cache holds nothing.
    assert_eq!(files_under(&cache), Vec::<PathBuf>::new());
    let (_, connectors) = admin.request(Method::GET, "/v1/connectors", None).await;
    assert!(
        !connectors.to_string().contains("\"scout\""),
        "{connectors}"
    );
    let (_, templates) = admin
        .request(Method::GET, "/v1/session-components", None)
        .await;
    assert_eq!(templates["session_components"], json!([]), "{templates}");

    // A session's `scout` endpoint is still the host's, with its own tools
    // and no component's; naming the refused template opens nothing.
    let (status, view) = admin
        .request(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "person-chat"})),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    let scout_tools: Vec<&str> = view["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|t| t.starts_with("mcp__scout__"))
        .collect();
    assert_eq!(
        scout_tools,
        vec!["mcp__scout__scout_request_capability"],
        "{view}"
    );
    let (status, refused) = admin
        .request(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "person-chat", "components": [pinned]})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(files_under(&cache), Vec::<PathBuf>::new());
}
