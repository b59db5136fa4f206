//! Roles of an operator's own (issue 56 item 3), through the real `serve`
//! binary: a role declared in the configuration on one of the seed's roles
//! is offered its base's surface narrowed to its ceiling, told by the
//! official Python MCP client (`tests/mcp_client/operator_roles.py`); a
//! configuration declaring a role that could never work stops `serve`
//! with the key named. The seed's own tables (`policy_surface.rs`,
//! `catalogue_surfaces.rs`) are untouched by any of it.

use crate::common;
use scout_tests::fake_github::FakeGitHub;
use scout_tests::python;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const GITHUB_TOKEN: &str = "ghp_operatorRolesToken01234567";
const ADMIN_TOKEN: &str = "admin-token-for-operator-roles-0123";

/// `triage`, on the seed's specialist role (the unattended role that can
/// be granted a connector's reads), limited to two GitHub reads and two
/// calls a session.
const TRIAGE: &str = "\n[roles.triage]\nbase = \"specialist\"\ntools = [\"mcp__github__github_read_file\", \"mcp__github__github_list_issues\"]\nmax_calls = 2\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_role_is_offered_exactly_its_ceiling_of_its_base() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let (dir, config) = scout_tests::serve::fresh_config(
        "operator-roles",
        &format!(
            "require_review = false\n{}{TRIAGE}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    );
    let serve = common::serve_as(&config, ADMIN_TOKEN, "4e")
        .compile_cache()
        .current_dir(&dir)
        .start();
    let base = serve.base.clone();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/operator_roles.py");
    let run = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(&script)
            .args(["--base", &base, "--admin-token", ADMIN_TOKEN])
            .args(["--github-token", GITHUB_TOKEN])
            .output()
            .expect("run operator_roles.py")
    });
    let output = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("operator_roles.py finishes")
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "operator_roles.py failed:\n{out}\n{}\nserve:\n{}",
        String::from_utf8_lossy(&output.stderr),
        serve.stderr()
    );
    let summary: serde_json::Value =
        serde_json::from_str(out.lines().last().unwrap_or("")).expect("a JSON summary");
    assert_eq!(
        summary["offered"],
        serde_json::json!([
            "mcp__github__github_list_issues",
            "mcp__github__github_read_file"
        ])
    );
    assert!(summary["removed_by_role"].as_u64() > Some(0), "{summary}");
    let requests = github.requests();
    // Every read that ran reached GitHub once; the one past the role's
    // limit and the one outside its ceiling sent nothing.
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.path.contains("/contents/README.md"))
            .count() as u64,
        summary["reads_sent"].as_u64().unwrap(),
        "{requests:?}"
    );
    assert!(
        !requests.iter().any(|r| r.path.contains("/branches")),
        "the tool outside the ceiling sent nothing: {requests:?}"
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_role_that_could_never_work_stops_serve_with_its_key_named() {
    let github_config = scout_tests::serve_config_for_github("http://127.0.0.1:9");
    for (name, role, named, why) in [
        (
            "unknown-tool",
            "[roles.triage]\nbase = \"specialist\"\ntools = [\"mcp__github__github_read_fiel\"]\n",
            "roles.triage.tools",
            "mcp__github__github_read_fiel",
        ),
        (
            // The seed's coworker is given no connector's tool at all.
            "outside-the-base",
            "[roles.triage]\nbase = \"coworker\"\ntools = [\"mcp__github__github_read_file\"]\n",
            "roles.triage.tools",
            "base `coworker`",
        ),
        (
            "seed-name",
            "[roles.coworker]\nbase = \"specialist\"\n",
            "roles.coworker",
            "seed role",
        ),
        (
            "nobody-to-ask",
            "[roles.night]\nbase = \"coworker\"\nperson_can_be_asked = true\n",
            "roles.night.person_can_be_asked",
            "person-chat",
        ),
        (
            "unknown-base",
            "[roles.night]\nbase = \"janitor\"\n",
            "roles.night.base",
            "janitor",
        ),
    ] {
        let (dir, config) = scout_tests::serve::fresh_config(
            &format!("operator-roles-{name}"),
            &format!("{github_config}\n{role}"),
        );
        let stderr = common::serve_as(&config, ADMIN_TOKEN, "4f")
            .compile_cache()
            .current_dir(&dir)
            .refused();
        assert!(
            stderr.contains(named) && stderr.contains(why),
            "{name}: the refusal names {named} and says {why}:\n{stderr}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `scout-host surface` and `scout-host audit` with `serve`'s configuration
/// take an operator role's name and show its base narrowed by it.
#[test]
fn surface_and_audit_show_an_operator_role_from_the_configuration() {
    use scout_host::store::SqliteStore;
    use scout_host::store::prelude::*;
    const KEY_HEX: &str = "4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b";
    let db = scout_tests::TempDb::new("operator-roles-cli");
    let key: [u8; 32] = hex::decode(KEY_HEX).unwrap().try_into().unwrap();
    scout_host::store::block(SqliteStore::open(&db).unwrap().put_connection(
        "acme",
        "github",
        "ghp_operator_roles_cli",
        &key,
    ))
    .unwrap();
    let config = db.path().with_extension("toml");
    let component = Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .unwrap();
    std::fs::write(
        &config,
        format!(
            "database = {:?}\n[connectors.github]\ncomponent = {:?}\norigin = \"https://api.github.com\"\n[roles.reader]\nbase = \"person-chat\"\ntools = [\"Read\", \"mcp__github__github_read_file\"]\nmax_effects = 1\n",
            db.path().display().to_string(),
            component.display().to_string()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let output = Command::new(common::SCOUT_HOST)
            .args(args)
            .arg("--config")
            .arg(&config)
            .env("SCOUT_ADMIN_TOKEN", "operator-roles-cli-admin-token-0123")
            .env("SCOUT_STORE_KEY", KEY_HEX)
            .env("SCOUT_LOG", "error")
            .output()
            .expect("run scout-host");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (ok, surface, stderr) = run(&["surface", "--role", "reader", "--brand", "acme"]);
    assert!(ok, "{stderr}");
    assert_eq!(
        surface.lines().collect::<Vec<_>>(),
        ["Read", "mcp__github__github_read_file"]
    );
    let (ok, _, stderr) = run(&["surface", "--role", "janitor", "--brand", "acme"]);
    assert!(
        !ok && stderr.contains("reader") && stderr.contains("person-chat"),
        "an unknown role names the operator's beside the seed's: {stderr}"
    );
    let (ok, audit, stderr) = run(&["audit", "--role", "reader", "--brand", "acme", "--json"]);
    assert!(ok, "{stderr}");
    let audit: serde_json::Value = serde_json::from_str(&audit).unwrap();
    assert_eq!(
        audit["operator_role"],
        serde_json::json!({
            "name": "reader",
            "base": "person-chat",
            "person_can_be_asked": false,
            "ceiling": {"tools": ["Read", "mcp__github__github_read_file"]},
            "limits": {"max_effects": 1}
        })
    );
    let tools: Vec<&str> = audit["tools"]
        .as_array()
        .unwrap()
        .iter()
        .chain(audit["other_tools"].as_array().unwrap())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["mcp__github__github_read_file", "Read"]);
    let _ = std::fs::remove_file(&config);
}

/// Any host serves any session: an operator role's session opened on one
/// host of a PostgreSQL fleet is taken up by the other under the same
/// ceiling (it travels in the session's record), and a call outside it
/// sends nothing there either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_host_serves_an_operator_roles_session_under_its_ceiling() {
    use crate::crash_safety::{Admin, Mcp, ok_text};
    use serde_json::json;
    let Some(db) = scout_tests::pg::database_or_skip("operator_roles_fleet") else {
        return;
    };
    let github = FakeGitHub::start(crate::crash_safety::GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let component = Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .unwrap();
    let [config_a, config_b] = ["a", "b"].map(|name| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "listen = \"127.0.0.1:0\"\nrequire_review = false\n\n[store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\nlease_secs = 15\n\n\
                 [connectors.github]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n\n\
                 [roles.reader]\nbase = \"person-chat\"\ntools = [\"mcp__github__github_read_file\", \"mcp__github__github_list_issues\"]\n",
                component.display().to_string(),
                github.origin()
            ),
        )
        .unwrap();
        path
    });
    let env = [("SCOUT_PG_URL", db.url())];
    let a = common::serve(&config_a).envs(&env).start();
    let b = common::serve(&config_b).envs(&env).start();
    let http = common::client();
    let admin_a = Admin {
        http: http.clone(),
        base: a.base.clone(),
    };
    admin_a.set_up().await;
    let (status, view) = admin_a
        .request(
            reqwest::Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "reader"})),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    let on_b = Mcp::new(&http, &view)
        .moved(&a.base, &b.base)
        .connect()
        .await;
    let listed = on_b.request("tools/list", json!({})).await.unwrap();
    let mut names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list on B: {listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["github_list_issues", "github_read_file"],
        "{listed}"
    );
    let read = on_b
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}}),
        )
        .await
        .unwrap();
    assert!(
        ok_text(&read).is_some(),
        "B runs a read in the ceiling: {read}"
    );
    let refused = on_b
        .request(
            "tools/call",
            json!({"name": "github_list_branches", "arguments": {"owner": "octo", "repo": "hello"}}),
        )
        .await
        .unwrap();
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not offered")),
        "outside the ceiling on B too: {refused}"
    );
    assert!(
        !github
            .requests()
            .iter()
            .any(|r| r.path.contains("/branches")),
        "nothing sent for the call outside the ceiling"
    );
    drop((a, b));
}
