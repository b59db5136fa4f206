//! `scout-host inspect` on the built components, through the real binary.

use serde_json::Value;
use std::process::Command;

fn inspect(path: &str, json: bool) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scout-host"));
    cmd.arg("inspect").arg(path);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("run scout-host");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn inspect_json_lists_exactly_the_github_tools_and_withheld_list() {
    let (code, stdout) = inspect(scout_tests::components::GITHUB, true);
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(report["connector"]["name"], "github");
    assert_eq!(report["connector"]["version"], "0.1.0");
    let tools: Vec<(String, String)> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["effect"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("github_read_file", "read"),
        ("github_list_path", "read"),
        ("github_list_branches", "read"),
        ("github_list_issues", "read"),
        ("github_read_issue", "read"),
        ("github_list_pull_requests", "read"),
        ("github_read_pull_request", "read"),
        ("github_create_branch", "write"),
        ("github_commit_files", "write"),
        ("github_open_pull_request", "write"),
        ("github_comment", "write"),
    ]
    .iter()
    .map(|(n, e)| (n.to_string(), e.to_string()))
    .collect();
    assert_eq!(tools, expected);
    // Policy facts: one capability, no billing, the seed's gates, every
    // read grantable, every tool with its declared routes and nothing else.
    assert_eq!(
        report["connector"]["capabilities"],
        serde_json::json!(["http"])
    );
    assert!(report["connector"].get("billing").is_none());
    assert_eq!(report["connector"]["catalogue"], "seed catalogue");
    let routes = |name: &str| -> Vec<String> {
        let tool = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap();
        tool["routes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r["method"].as_str().unwrap(),
                    r["path"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        routes("github_read_file"),
        ["GET /repos/{owner}/{repo}/contents/{*path}"]
    );
    assert_eq!(
        routes("github_comment"),
        ["POST /repos/{owner}/{repo}/issues/{number}/comments"]
    );
    assert_eq!(routes("github_commit_files").len(), 6);
    for tool in report["tools"].as_array().unwrap() {
        assert!(
            !tool["routes"].as_array().unwrap().is_empty(),
            "{} declares its routes",
            tool["name"]
        );
        if tool["effect"] == "read" {
            assert_eq!(tool["grantable"], true);
            assert!(
                tool["routes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|r| r["method"] == "GET" && r.get("read_only").is_none())
            );
        } else {
            assert_eq!(tool["gate"], "approval, switch GITHUB_ALLOW_WRITES");
            assert_eq!(tool["served_gate"], tool["gate"]);
            assert_eq!(tool["registers"], "with-connector");
        }
        assert_eq!(tool["output_schema"]["type"], "object");
    }
    for tool in report["tools"].as_array().unwrap() {
        assert!(!tool["description"].as_str().unwrap().is_empty());
        assert_eq!(tool["input_schema"]["type"], "object");
        assert_eq!(tool["input_schema"]["additionalProperties"], false);
    }
    let withheld: Vec<&str> = report["withheld"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["effect"].as_str().unwrap())
        .collect();
    assert_eq!(
        withheld,
        [
            "merging",
            "force-push and history rewrites",
            "deletes",
            "repository settings",
            "collaborators",
            "branch protection",
            "secrets",
            "triggering workflows",
            "releases",
            "search",
            "GraphQL"
        ]
    );
    assert!(
        report["withheld"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| !w["reason"].as_str().unwrap().is_empty())
    );
    let imports = report["imports"].as_array().unwrap();
    assert!(imports.iter().any(|i| {
        i["name"]
            .as_str()
            .unwrap()
            .starts_with("scout:connector/http@")
    }));
    assert!(imports.iter().all(|i| i["allowed"] == true), "{imports:?}");
    // The schema of a typed argument is derived from WIT.
    let list_issues = &report["tools"][3]["input_schema"]["properties"];
    assert_eq!(
        list_issues["state"]["enum"],
        serde_json::json!(["open", "closed", "all"])
    );
    assert_eq!(list_issues["limit"]["maximum"], 255);
}

#[test]
fn inspect_shows_and_refuses_forbidden_imports() {
    let (code, stdout) = inspect(scout_tests::components::IMPORTS_SOCKETS, false);
    assert_eq!(
        code, 2,
        "a component with forbidden imports makes inspect fail"
    );
    assert!(stdout.contains("!! wasi:sockets/tcp@"), "{stdout}");
    assert!(stdout.contains("REFUSED"), "{stdout}");
}

/// The sockets-importing guest with its manifest section renamed away: a
/// foreign component that is no connector at all.
fn foreign_component(name: &str) -> std::path::PathBuf {
    let bytes = std::fs::read(scout_tests::components::IMPORTS_SOCKETS).unwrap();
    let patched = scout_tests::patch_bytes(
        &bytes,
        b"scout-connector-manifest",
        b"scout-connector-manifesx",
    );
    let path =
        std::env::temp_dir().join(format!("scout-foreign-{name}-{}.wasm", std::process::id()));
    std::fs::write(&path, patched).unwrap();
    path
}

#[test]
fn inspect_names_every_forbidden_import_of_a_component_without_a_manifest() {
    let path = foreign_component("inspect");
    let (code, stdout) = inspect(path.to_str().unwrap(), false);
    assert_eq!(code, 2, "{stdout}");
    for import in [
        "wasi:sockets/tcp@",
        "wasi:sockets/udp@",
        "wasi:sockets/ip-name-lookup@",
        "wasi:sockets/network@",
    ] {
        assert!(
            stdout.contains(&format!("!! {import}")),
            "{import} named: {stdout}"
        );
    }
    let imports_at = stdout.find("imports").unwrap();
    let manifest_at = stdout
        .find("scout-connector-manifest")
        .unwrap_or_else(|| panic!("the manifest problem is named: {stdout}"));
    assert!(
        imports_at < manifest_at,
        "imports first, then the manifest problem: {stdout}"
    );

    let (code, stdout) = inspect(path.to_str().unwrap(), true);
    assert_eq!(code, 2);
    let report: Value = serde_json::from_str(&stdout).expect("JSON");
    let forbidden: Vec<&str> = report["imports"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["allowed"] == false)
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(
        forbidden.iter().any(|n| n.starts_with("wasi:sockets/tcp@")),
        "{report}"
    );
    let refused = report["refused"].as_array().unwrap();
    assert!(
        refused[0].as_str().unwrap().contains("wasi:sockets/tcp@"),
        "imports first: {report}"
    );
    assert!(
        refused
            .iter()
            .any(|r| r.as_str().unwrap().contains("manifest")),
        "then the manifest: {report}"
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn loading_a_component_without_a_manifest_names_its_forbidden_imports_first() {
    let path = foreign_component("load");
    let runtime = scout_host::Runtime::new(scout_host::RuntimeConfig {
        max_concurrent_calls: 1,
        ..Default::default()
    })
    .unwrap();
    let err = match runtime.load_file(&path) {
        Err(e) => e,
        Ok(_) => panic!("a foreign component must not load"),
    };
    let scout_host::LoadError::ForbiddenImports { imports, also } = &err else {
        panic!("imports first, got {err:?}")
    };
    assert!(
        imports.iter().any(|n| n.starts_with("wasi:sockets/tcp@")),
        "{imports:?}"
    );
    assert!(
        imports
            .iter()
            .any(|n| n.starts_with("wasi:sockets/ip-name-lookup@")),
        "every one: {imports:?}"
    );
    assert!(
        also.as_deref().unwrap_or("").contains("manifest"),
        "then the manifest problem: {err}"
    );
    let message = err.to_string();
    assert!(
        message.find("wasi:sockets").unwrap() < message.find("manifest").unwrap(),
        "{message}"
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn surface_prints_a_roles_tools() {
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["surface", "--role", "inbound-email"])
        .env("AGENTMAIL_WEBHOOK_URL_SECRET", "x")
        .env("AGENTMAIL_ALLOW_SENDS", "true")
        .output()
        .unwrap();
    assert!(out.status.success());
    let names: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(names.len(), 11, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("mcp__agentmail__")));
    assert!(
        !names.iter().any(|n| n.contains("send")),
        "the send tools are never given to an inbound turn"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["surface", "--role", "root"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown role"));
}
