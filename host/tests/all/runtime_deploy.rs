//! Connectors added, upgraded and retired on a running fleet (issue 33
//! item 4), through the real `serve` binaries, a real registry on loopback
//! and a real PostgreSQL database:
//! - a connector added on one host is served by the other within moments,
//!   each host pulling and verifying the artifact into its own cache;
//! - an upgrade while a session holds two waiting approvals revokes the one
//!   whose tool changed (nothing reaches the upstream) and keeps the other,
//!   which then runs;
//! - a retired connector's next call is refused on both hosts by its own
//!   rule, with no upstream request;
//! - the configuration file's connectors are refused by the API, and every
//!   change is in the trace export with the verified caller.
//!
//! And on one host: an artifact whose signature is required and missing,
//! settings that do not parse, and a file path instead of an artifact are
//! refused, changing nothing.

use super::artifacts::{keygen, push, scout, sign};
use super::common::EVENTUALLY;
use super::crash_safety::{
    ADMIN_TOKEN, Admin, GITHUB_TOKEN, Mcp, args_for, ok_text, result_text, wait_for,
};
use crate::common;
use reqwest::Method;
use scout_tests::ServeProcess;
use serde_json::{Value, json};
use std::path::Path;

/// `connectors` of a host's `GET /v1/connectors`, by name.
async fn connector(admin: &Admin, name: &str) -> Option<Value> {
    let (status, body) = admin.request(Method::GET, "/v1/connectors", None).await;
    assert_eq!(status, 200, "{body}");
    body["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
}

/// Waits until `admin`'s host serves `name` at `digest`.
async fn served_at(admin: &Admin, name: &str, digest: &str) -> Value {
    wait_for(&format!("{name} at {digest}"), EVENTUALLY, async || {
        connector(admin, name)
            .await
            .filter(|c| c["digest"] == digest && c["status"] == "served")
    })
    .await
}

/// The trace export's rows (JSON Lines) from `base`.
async fn exported(http: &reqwest::Client, base: &str) -> Vec<Value> {
    let text = http
        .get(format!("{base}/v1/trace/export?since=0&limit=10000"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn host_config(path: &Path, registry: &str, store: &str, capabilities: &str) {
    std::fs::write(
        path,
        format!(
            "listen = \"127.0.0.1:0\"\nrequire_review = false\n{store}\n\
             [registries.\"{registry}\"]\nplain_http = true\nallow_private_network = true\n\n\
             [connectors.capabilities]\ncomponent = {capabilities:?}\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n"
        ),
    )
    .unwrap();
}

/// Two `serve` hosts on `db`'s PostgreSQL, pulling from the registry at
/// `registry`, each with its own artifact cache under `dir` (`cache-a`,
/// `cache-b`): each pulls and verifies for itself.
fn two_hosts(
    dir: &Path,
    registry: &str,
    db: &scout_tests::pg::PgDatabase,
) -> (ServeProcess, ServeProcess) {
    let capabilities = Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let store = "[store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\nlease_secs = 15\n";
    let (config_a, config_b) = (dir.join("a.toml"), dir.join("b.toml"));
    host_config(&config_a, registry, store, &capabilities);
    host_config(&config_b, registry, store, &capabilities);
    let env = |cache: &str| {
        [
            ("SCOUT_PG_URL", db.url()),
            (
                "SCOUT_ARTIFACT_CACHE",
                dir.join(cache).display().to_string(),
            ),
        ]
    };
    (
        common::serve(&config_a).envs(&env("cache-a")).start(),
        common::serve(&config_b).envs(&env("cache-b")).start(),
    )
}

fn comment_args() -> Value {
    json!({"owner": "octo", "repo": "hello", "number": 1, "body": "Kept across the upgrade."})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_is_added_upgraded_and_retired_on_a_running_fleet() {
    let Some(db) = scout_tests::pg::database_or_skip("runtime_deploy") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let addr = registry.address.clone();
    let publisher = dir.path().join("publisher-cache");
    // Version 1, and version 2 whose `github_create_branch` posts to
    // another route; every other tool is the same.
    let v1_bytes = std::fs::read(scout_tests::components::GITHUB).unwrap();
    let v2_bytes = scout_tests::patch_bytes(
        &v1_bytes,
        b"\"path\":\"/repos/{owner}/{repo}/git/refs\"}",
        b"\"path\":\"/repos/{owner}/{repo}/git/tags\"}",
    );
    assert_ne!(
        v1_bytes, v2_bytes,
        "the route is in the component's manifest"
    );
    let v2_file = dir.path().join("github-v2.wasm");
    std::fs::write(&v2_file, &v2_bytes).unwrap();
    let v1_ref = format!("oci://{addr}/connectors/github:1");
    let v2_ref = format!("oci://{addr}/connectors/github:2");
    let v1 = push(&publisher, scout_tests::components::GITHUB, &v1_ref)["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let v2 = push(&publisher, v2_file.to_str().unwrap(), &v2_ref)["digest"]
        .as_str()
        .unwrap()
        .to_string();

    let github = scout_tests::fake_github::FakeGitHub::start(GITHUB_TOKEN).await;
    let (a, b) = two_hosts(dir.path(), &addr, &db);
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .unwrap();
    let admin_a = Admin {
        http: http.clone(),
        base: a.base.clone(),
    };
    let admin_b = Admin {
        http: http.clone(),
        base: b.base.clone(),
    };

    // The file's connector is not the API's to change.
    let (status, body) = admin_b
        .request(
            Method::PUT,
            "/v1/connectors/capabilities",
            Some(json!({"component": v1_ref})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "file_owned", "{body}");
    let (status, body) = admin_b
        .request(Method::DELETE, "/v1/connectors/capabilities", None)
        .await;
    assert_eq!(status, 409, "{body}");

    // Added on B with the command line; the tag resolved to v1's digest.
    let cli_cache = dir.path().join("cli-cache");
    let added = tokio::task::spawn_blocking({
        let (cache, base, v1_ref, origin) = (
            cli_cache.clone(),
            b.base.clone(),
            v1_ref.clone(),
            github.origin(),
        );
        move || {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_scout-host"))
                .args(["connectors", "add", "github", &v1_ref, "--origin", &origin])
                .args(["--allow-private-network", "--host", &base])
                .env("SCOUT_ADMIN_TOKEN", ADMIN_TOKEN)
                .env("SCOUT_ARTIFACT_CACHE", cache)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice::<Value>(&out.stdout).unwrap()
        }
    })
    .await
    .unwrap();
    assert_eq!(added["digest"], v1.as_str(), "{added}");
    assert_eq!(added["source"], "api");
    assert_eq!(added["changed_by"], "admin-token");
    assert_eq!(added["status"], "served", "{added}");
    // A hears of it and serves the same bytes, pulled into its own cache.
    served_at(&admin_a, "github", &v1).await;
    assert!(
        dir.path().join("cache-a").exists() && dir.path().join("cache-b").exists(),
        "each host pulled into its own cache"
    );

    // Sessions on both hosts, and two writes waiting for a person on A.
    admin_a.set_up().await;
    let view_a = admin_a.session().await;
    let view_b = admin_b.session().await;
    let session_a = view_a["id"].as_str().unwrap().to_string();
    let mcp_a = Mcp::new(&http, &view_a).connect().await;
    let mcp_b = Mcp::new(&http, &view_b).connect().await;
    let read = json!({"name": "github_read_file", "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}});
    for mcp in [&mcp_a, &mcp_b] {
        let reply = mcp.request("tools/call", read.clone()).await.unwrap();
        assert!(
            ok_text(&reply).is_some_and(|t| t.contains("# Hello")),
            "{reply}"
        );
    }
    let branch = tokio::spawn({
        let mcp = mcp_a.clone();
        async move { mcp.call(args_for(1)).await }
    });
    let comment = tokio::spawn({
        let mcp = mcp_a.clone();
        async move {
            mcp.request(
                "tools/call",
                json!({"name": "github_comment", "arguments": comment_args()}),
            )
            .await
        }
    });
    let pending = wait_for("both approvals", EVENTUALLY, async || {
        let pending = admin_b.pending(&session_a).await;
        (pending.len() == 2).then_some(pending)
    })
    .await;
    let id_of = |tool: &str| {
        pending
            .iter()
            .find(|p| p["tool"] == tool)
            .unwrap_or_else(|| panic!("no approval of {tool}: {pending:?}"))["id"]
            .as_i64()
            .unwrap()
    };
    let (branch_approval, comment_approval) = (
        id_of("mcp__github__github_create_branch"),
        id_of("mcp__github__github_comment"),
    );

    // Upgraded on B: the changed tool's approval is revoked, the other kept.
    let (status, upgraded) = admin_b
        .request(
            Method::PUT,
            "/v1/connectors/github",
            Some(json!({"component": v2_ref, "origin": github.origin(), "allow_private_network": true})),
        )
        .await;
    assert_eq!(status, 200, "{upgraded}");
    assert_eq!(upgraded["digest"], v2.as_str());
    assert_eq!(upgraded["revision"], 2);
    let refused = tokio::time::timeout(EVENTUALLY, branch)
        .await
        .expect("the waiting branch call answered")
        .unwrap()
        .unwrap();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        github.ref_creations().is_empty(),
        "the revoked write reached nothing"
    );
    assert_eq!(
        db.psql(&format!(
            "SELECT state FROM approvals WHERE id = {branch_approval}"
        )),
        "revoked"
    );
    assert_eq!(
        db.psql(&format!(
            "SELECT state FROM approvals WHERE id = {comment_approval}"
        )),
        "pending",
        "an approval of an unchanged tool is kept"
    );
    let (status, body) = admin_b
        .request(
            Method::POST,
            &format!("/v1/approvals/{comment_approval}"),
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let commented = tokio::time::timeout(EVENTUALLY, comment)
        .await
        .expect("the waiting comment call answered")
        .unwrap()
        .unwrap();
    assert!(ok_text(&commented).is_some(), "{commented}");
    assert!(
        github
            .comments("octo", "hello", 1)
            .iter()
            .any(|c| c == "Kept across the upgrade."),
        "the kept approval's call ran"
    );
    served_at(&admin_a, "github", &v2).await;
    // The changed tool is served as v2 declares it: its route is now `git/tags`.
    let (_, reviews) = admin_a.request(Method::GET, "/v1/reviews", None).await;
    let create = reviews["connectors"]["github"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "github_create_branch")
        .cloned()
        .unwrap();
    assert!(
        create["routes"]
            .as_array()
            .unwrap()
            .contains(&json!("POST /repos/{owner}/{repo}/git/tags")),
        "{create}"
    );

    // Retired through the command line: the next call on either host is
    // refused by its own rule, and reaches nothing.
    let (code, retired, stderr) = scout(
        &cli_cache,
        &[
            "connectors",
            "retire",
            "github",
            "--host",
            &a.base,
            "--token-env",
            "SCOUT_TEST_ADMIN",
        ],
    );
    assert_eq!(code, 2, "no credential in SCOUT_TEST_ADMIN: {stderr}");
    assert!(stderr.contains("SCOUT_TEST_ADMIN"), "{stderr}");
    assert_eq!(retired, Value::Null);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["connectors", "retire", "github", "--host", &a.base])
        .env("SCOUT_ADMIN_TOKEN", ADMIN_TOKEN)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    github.clear_requests();
    for (host, mcp) in [("A", &mcp_a), ("B", &mcp_b)] {
        let reply = wait_for(&format!("{host} to refuse"), EVENTUALLY, async || {
            let reply = mcp.request("tools/call", read.clone()).await.unwrap();
            ok_text(&reply).is_none().then_some(reply)
        })
        .await;
        assert!(result_text(&reply).contains("retired"), "{host}: {reply}");
    }
    assert!(
        github.requests().is_empty(),
        "no upstream request after the retirement: {:?}",
        github.requests().len()
    );
    for admin in [&admin_a, &admin_b] {
        let shown = connector(admin, "github").await.unwrap();
        assert_eq!(shown["status"], "retired", "{shown}");
    }
    let refusals = db.psql(
        "SELECT count(*) FROM trace WHERE rule = 'connector_retired' AND state IN ('denied', 'permission_denied')",
    );
    assert!(
        refusals.parse::<u32>().unwrap() >= 2,
        "each host traced its refusal: {refusals}"
    );
    // Retiring again: nothing to retire.
    let (status, body) = admin_b
        .request(Method::DELETE, "/v1/connectors/github", None)
        .await;
    assert_eq!(status, 404, "{body}");

    // Every change is in the export, with who made it.
    let rows = exported(&http, &b.base).await;
    let changes: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r["state"] == "deployed")
        .map(|r| {
            (
                r["rule"].as_str().unwrap_or_default(),
                r["detail"]["by"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("connector_added", "admin-token"),
            ("connector_upgraded", "admin-token"),
            ("connector_retired", "admin-token"),
        ],
        "{rows:?}"
    );
    let upgrade = rows
        .iter()
        .find(|r| r["rule"] == "connector_upgraded")
        .unwrap();
    assert_eq!(
        upgrade["detail"]["tools_changed"],
        json!(["github_create_branch"])
    );
    assert_eq!(
        upgrade["detail"]["approvals_revoked"],
        json!([branch_approval])
    );
    assert_eq!(upgrade["detail"]["digest"], v2.as_str());
    drop((a, b));
}

#[tokio::test]
async fn a_runtime_change_that_cannot_be_served_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let addr = registry.address.clone();
    let publisher = dir.path().join("publisher-cache");
    let (signer_key, signer_pub) = keygen(dir.path(), "signer");
    let reference = format!("oci://{addr}/connectors/github:1");
    let digest = push(&publisher, scout_tests::components::GITHUB, &reference)["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let capabilities = Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let config = dir.path().join("serve.toml");
    host_config(
        &config,
        &addr,
        &format!(
            "database = \"scout.db\"\nrequire_signature = false\nsignature_keys = [{signer_pub:?}]\n"
        ),
        &capabilities,
    );
    let cache = dir.path().join("host-cache");
    let serve = common::serve(&config)
        .envs(&[("SCOUT_ARTIFACT_CACHE", cache.display().to_string())])
        .start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    let put = async |body: Value| {
        admin
            .request(Method::PUT, "/v1/connectors/github", Some(body))
            .await
    };
    let settings = json!({"component": reference, "origin": "http://127.0.0.1:9", "allow_private_network": true, "require_signature": true});

    // Unsigned, with a signature required: refused, nothing cached or served.
    let (status, body) = put(settings.clone()).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "invalid_connector");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("signature"),
        "{body}"
    );
    assert!(connector(&admin, "github").await.is_none());
    let cached = walk(&cache);
    assert!(
        !cached
            .iter()
            .any(|f| f.contains(digest.trim_start_matches("sha256:"))),
        "nothing of the refused artifact cached: {cached:?}"
    );

    // Settings that are not a connector's, a path instead of an artifact,
    // and a name that is not one: each refused by what is wrong.
    let (status, body) = put(json!({"component": reference, "orign": "http://x"})).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("orign"),
        "{body}"
    );
    let (status, body) = put(json!({"component": "/tmp/github.wasm"})).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("OCI artifact"),
        "{body}"
    );
    let (status, body) = admin
        .request(
            Method::PUT,
            "/v1/connectors/Git%20Hub",
            Some(settings.clone()),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = admin
        .request(
            Method::PUT,
            "/v1/connectors/github",
            Some(json!(["not", "an", "object"])),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(connector(&admin, "github").await.is_none());

    // Signed by the configured key: served.
    let (code, _, stderr) = sign(&publisher, &reference, &signer_key);
    assert_eq!(code, 0, "{stderr}");
    let narrowed = {
        let mut s = settings.clone();
        s["tools"] = json!(["github_read_file"]);
        s
    };
    let (status, body) = put(narrowed).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["digest"], digest.as_str());
    assert_eq!(body["status"], "served");
    assert_eq!(
        body["tools"],
        json!(["github_read_file"]),
        "narrowed by the operator"
    );
    // Widened again: admitted against the seed, not the narrowed version.
    let (status, body) = put(settings).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["revision"], 2);
    assert!(
        body["tools"].as_array().unwrap().len() > 1,
        "every tool again: {body}"
    );
    // Served from the next session on.
    let (status, _) = admin
        .request(
            Method::PUT,
            "/v1/brands/acme/connections/github",
            Some(json!({"secret": GITHUB_TOKEN})),
        )
        .await;
    assert_eq!(status, 200);
    let view = admin.session().await;
    assert!(view["mcp"]["github"].is_string(), "{view}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(walk(&path));
            } else {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// A component for one session (issue 39 item 3): an operator stores a
/// template pinned at a digest; a session that names that digest is served
/// it, another opened at the same time is not; a digest no operator stored
/// is refused with nothing pulled; the component leaves the host with the
/// last session holding it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_named_at_open_is_served_to_that_session_alone() {
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let addr = registry.address.clone();
    let publisher = dir.path().join("publisher-cache");
    let v1 = push(
        &publisher,
        scout_tests::components::GITHUB,
        &format!("oci://{addr}/connectors/github:1"),
    )["digest"]
        .as_str()
        .unwrap()
        .to_string();
    // Another build nobody stored as a session component.
    let other_bytes = scout_tests::patch_bytes(
        &std::fs::read(scout_tests::components::GITHUB).unwrap(),
        b"\"path\":\"/repos/{owner}/{repo}/git/refs\"}",
        b"\"path\":\"/repos/{owner}/{repo}/git/tags\"}",
    );
    let other_file = dir.path().join("github-other.wasm");
    std::fs::write(&other_file, &other_bytes).unwrap();
    let other = push(
        &publisher,
        other_file.to_str().unwrap(),
        &format!("oci://{addr}/connectors/github:other"),
    )["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let github = scout_tests::fake_github::FakeGitHub::start(GITHUB_TOKEN).await;
    let capabilities = Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let config = dir.path().join("serve.toml");
    host_config(&config, &addr, "database = \"scout.db\"\n", &capabilities);
    // Review on: storing the template is the operator's review of the
    // tools at that digest.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("require_review = false", "require_review = true"),
    )
    .unwrap();
    let cache = dir.path().join("host-cache");
    let serve = common::serve(&config)
        .envs(&[("SCOUT_ARTIFACT_CACHE", cache.display().to_string())])
        .start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    let (status, _) = admin
        .request(
            Method::PUT,
            "/v1/brands/acme/connections/github",
            Some(json!({"secret": GITHUB_TOKEN})),
        )
        .await;
    assert_eq!(status, 200);
    let pinned = |digest: &str| format!("oci://{addr}/connectors/github@{digest}");
    let template =
        json!({"component": pinned(&v1), "origin": github.origin(), "allow_private_network": true});

    // The template names its digest; a tag alone is refused.
    let (status, body) = admin
        .request(
            Method::PUT,
            "/v1/session-components/github",
            Some(json!({"component": format!("oci://{addr}/connectors/github:1"), "origin": github.origin(), "allow_private_network": true})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("names no digest"),
        "{body}"
    );
    let (status, stored) = admin
        .request(Method::PUT, "/v1/session-components/github", Some(template))
        .await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["digest"], v1.as_str());
    assert!(
        stored["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "github_read_file"),
        "{stored}"
    );
    // A session component and a connector every session may have never
    // share a name, either way round.
    for (path, code) in [
        ("/v1/connectors/github", "name_taken"),
        ("/v1/session-components/capabilities", "file_owned"),
    ] {
        let (status, body) = admin
            .request(
                Method::PUT,
                path,
                Some(json!({"component": pinned(&v1), "origin": github.origin(), "allow_private_network": true})),
            )
            .await;
        assert_eq!(
            (status, body["error"]["code"].clone()),
            (409, json!(code)),
            "{path}: {body}"
        );
    }

    // Two sessions of the same brand and role, opened together: the one
    // that names the component is served it, the other is not.
    let open = async |body: Value| {
        admin
            .request(Method::POST, "/v1/sessions", Some(body))
            .await
    };
    let (status, own) =
        open(json!({"brand": "acme", "role": "person-chat", "components": [pinned(&v1)]})).await;
    assert_eq!(status, 201, "{own}");
    let (status, plain) = open(json!({"brand": "acme", "role": "person-chat"})).await;
    assert_eq!(status, 201, "{plain}");
    assert!(own["mcp"]["github"].is_string(), "{own}");
    assert!(
        own["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__github__github_read_file"),
        "{own}"
    );
    assert!(plain["mcp"].get("github").is_none(), "{plain}");
    assert!(
        !plain["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().starts_with("mcp__github__")),
        "{plain}"
    );
    assert!(
        plain
            .get("left_out")
            .and_then(|l| l.get("github"))
            .is_none(),
        "another session's component is nothing to this one: {plain}"
    );
    // As the official client lists it.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/list_tools.py");
    let (url, token) = (
        own["mcp"]["github"].as_str().unwrap().to_string(),
        own["token"].as_str().unwrap().to_string(),
    );
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(scout_tests::python())
            .arg(&script)
            .args(["--url", &url, "--token", &token])
            .output()
            .expect("run list_tools.py")
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(listed.iter().any(|t| t == "github_read_file"), "{listed:?}");
    let mcp = Mcp::new(&http, &own).connect().await;
    let read = mcp
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}}),
        )
        .await
        .unwrap();
    assert!(ok_text(&read).is_some(), "{read}");
    assert_eq!(github.requests().len(), 1, "the read reached GitHub once");
    // The other session has no endpoint for it at all.
    let answer = http
        .post(format!(
            "{}/mcp/{}/github",
            serve.base,
            plain["id"].as_str().unwrap()
        ))
        .bearer_auth(plain["token"].as_str().unwrap())
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 404);

    // A digest no operator stored: refused, nothing pulled, nothing opened.
    let (_, before) = admin.request(Method::GET, "/v1/sessions", None).await;
    let (status, body) =
        open(json!({"brand": "acme", "role": "person-chat", "components": [pinned(&other)]})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "invalid_selection", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a component an operator stored"),
        "{body}"
    );
    let other_hex = other.trim_start_matches("sha256:");
    assert!(
        !walk(&cache).iter().any(|p| p.contains(other_hex)),
        "nothing pulled for it: {:?}",
        walk(&cache)
    );
    let (_, after) = admin.request(Method::GET, "/v1/sessions", None).await;
    assert_eq!(before["sessions"], after["sessions"]);

    // Loaded while a session holds it; dropped with the last one.
    let listed = async || {
        let (status, body) = admin
            .request(Method::GET, "/v1/session-components", None)
            .await;
        assert_eq!(status, 200, "{body}");
        body["session_components"][0].clone()
    };
    let now = listed().await;
    assert_eq!(
        (now["loaded_here"].clone(), now["sessions_here"].clone()),
        (json!(true), json!(1)),
        "{now}"
    );
    let (status, _) = admin
        .request(
            Method::DELETE,
            &format!("/v1/sessions/{}", own["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let now = listed().await;
    assert_eq!(
        (now["loaded_here"].clone(), now["sessions_here"].clone()),
        (json!(false), json!(0)),
        "{now}"
    );

    // Withdrawn: no session opened after loads it.
    let (status, _) = admin
        .request(Method::DELETE, "/v1/session-components/github", None)
        .await;
    assert_eq!(status, 200);
    let (status, body) =
        open(json!({"brand": "acme", "role": "person-chat", "components": [pinned(&v1)]})).await;
    assert_eq!(status, 422, "{body}");
    // Each change is in the audit trail, with who made it.
    let rows = exported(&http, &serve.base).await;
    for rule in ["session_component_stored", "session_component_withdrawn"] {
        let row = rows
            .iter()
            .find(|r| r["rule"] == rule)
            .unwrap_or_else(|| panic!("no `{rule}` row"));
        assert_eq!(row["detail"]["actor"]["kind"], "admin_token", "{row}");
        assert_eq!(row["detail"]["digest"], v1.as_str(), "{row}");
    }
}

/// On a fleet, the host that takes a session up pulls and verifies its own
/// component itself (issue 39 item 3): a session opened on A with a
/// component is called through B, which serves it from its own cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_own_component_is_pulled_by_whichever_host_serves_it() {
    let Some(db) = scout_tests::pg::database_or_skip("session_component_fleet") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let addr = registry.address.clone();
    let publisher = dir.path().join("publisher-cache");
    let digest = push(
        &publisher,
        scout_tests::components::GITHUB,
        &format!("oci://{addr}/connectors/github:1"),
    )["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let github = scout_tests::fake_github::FakeGitHub::start(GITHUB_TOKEN).await;
    let (a, b) = two_hosts(dir.path(), &addr, &db);
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: a.base.clone(),
    };
    let (status, _) = admin
        .request(
            Method::PUT,
            "/v1/brands/acme/connections/github",
            Some(json!({"secret": GITHUB_TOKEN})),
        )
        .await;
    assert_eq!(status, 200);
    let component = format!("oci://{addr}/connectors/github@{digest}");
    let (status, body) = admin
        .request(
            Method::PUT,
            "/v1/session-components/github",
            Some(json!({"component": component, "origin": github.origin(), "allow_private_network": true})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let hex = digest.trim_start_matches("sha256:").to_string();
    assert!(
        !walk(&dir.path().join("cache-b"))
            .iter()
            .any(|p| p.contains(&hex)),
        "B has pulled nothing yet"
    );
    let (status, own) = admin
        .request(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "person-chat", "components": [component]})),
        )
        .await;
    assert_eq!(status, 201, "{own}");
    // The same session, reached through B: B takes it up and pulls the
    // component into its own cache.
    let mut through_b = own.clone();
    through_b["mcp"]["github"] = json!(
        own["mcp"]["github"]
            .as_str()
            .unwrap()
            .replace(&a.base, &b.base)
    );
    let mcp = Mcp::new(&http, &through_b).connect().await;
    let read = mcp
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}}),
        )
        .await
        .unwrap();
    assert!(ok_text(&read).is_some(), "{read}");
    assert!(
        walk(&dir.path().join("cache-b"))
            .iter()
            .any(|p| p.contains(&hex)),
        "B pulled it itself: {:?}",
        walk(&dir.path().join("cache-b"))
    );
    // Another session opened on B is not served it.
    let admin_b = Admin {
        http: http.clone(),
        base: b.base.clone(),
    };
    let (status, plain) = admin_b
        .request(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "person-chat"})),
        )
        .await;
    assert_eq!(status, 201, "{plain}");
    assert!(plain["mcp"].get("github").is_none(), "{plain}");
}
