//! The configuration reference (`docs/configuration.md`) cannot drift from
//! the configuration's types: it is regenerated here and compared with the
//! committed page, and every top-level key of `ServeConfig` must be in it.
//! `scout-host config check FILE`, through the real binary: a valid file
//! lists what it would serve; errors in several sections are all reported,
//! each with its key and line; nothing is started and no store is created.

use scout_host::docs::config_reference::{configuration_page, top_level_keys};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn committed_page() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md")
}

#[test]
fn the_committed_reference_is_what_the_types_generate() {
    let generated = configuration_page()
        .unwrap_or_else(|missing| panic!("the generator refused: {}", missing.join("; ")));
    let committed =
        std::fs::read_to_string(committed_page()).expect("docs/configuration.md is committed");
    assert!(
        committed == generated,
        "docs/configuration.md is stale: run `cargo run -p scout-host -- config reference`"
    );
}

#[test]
fn every_top_level_key_is_in_the_reference() {
    let page = configuration_page().unwrap_or_else(|missing| panic!("{}", missing.join("; ")));
    let keys = top_level_keys();
    assert!(keys.len() > 30, "ServeConfig's keys: {keys:?}");
    for key in keys {
        let as_key = format!("### `{key}`\n");
        let as_table = format!("## `[{key}]`\n");
        let as_entries = format!("## `[{key}.");
        assert!(
            page.contains(&as_key) || page.contains(&as_table) || page.contains(&as_entries),
            "`{key}` is not in the configuration reference"
        );
    }
    for secret in [
        "`admin_token_env`",
        "`store_key_env`",
        "`[store] url_env`",
        "`[token_broker] secret_env`",
    ] {
        let entry = page
            .split("### ")
            .find(|entry| entry.starts_with(secret))
            .unwrap_or_else(|| panic!("{secret} is not in the reference"));
        assert!(
            entry.contains("(names an environment variable)"),
            "{secret} does not say it names an environment variable: {entry}"
        );
    }
    assert!(
        page.contains("- `\"process_crash\"`: "),
        "enum values are listed with their descriptions"
    );
}

fn config_check(args: &[&str], file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["config", "check"])
        .args(args)
        .arg(file)
        .env_remove("SCOUT_ADMIN_TOKEN")
        .env_remove("SCOUT_STORE_KEY")
        .output()
        .expect("run scout-host config check")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A free loopback port: `check` must not listen on it.
fn free_port() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap()
}

#[test]
fn a_valid_configuration_prints_what_it_would_serve_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let component = Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .unwrap();
    // A port that was free a moment ago: after the check, nothing listens on it.
    let port = free_port().local_addr().unwrap().port();
    std::fs::create_dir(dir.path().join("policies")).unwrap();
    std::fs::write(
        dir.path().join("policies/reads.cedar"),
        "forbid (principal, action in [Scout::Action::\"mcp__github__github_read_issue\"], resource);\n",
    )
    .unwrap();
    let file = dir.path().join("scout.toml");
    std::fs::write(
        &file,
        format!(
            r#"listen = "127.0.0.1:{port}"
database = "scout.db"

[connectors.github]
component = "{}"
origin = "https://api.github.com"

[connectors.docs]
mcp = "https://mcp.example.com/mcp"
credential = "none"

[roles.triage]
base = "coworker"
max_calls = 5

[policy]
files = ["policies/*.cedar"]
"#,
            component.display()
        ),
    )
    .unwrap();
    let output = config_check(&[], &file);
    let text = stdout(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("is valid"), "{text}");
    assert!(
        text.contains(&format!("listener http://127.0.0.1:{port}")),
        "{text}"
    );
    assert!(text.contains("connector github: component"), "{text}");
    for tool in ["github_read_file", "github_read_issue", "github_comment"] {
        assert!(
            text.contains(tool),
            "{tool} missing from the report: {text}"
        );
    }
    assert!(
        text.contains("connector docs: remote MCP server https://mcp.example.com/mcp"),
        "{text}"
    );
    assert!(
        text.contains("connectors.docs: the remote server is checked at start"),
        "{text}"
    );
    assert!(text.contains("role triage (base coworker)"), "{text}");
    assert!(text.contains("policy policies/reads.cedar"), "{text}");
    assert!(
        !dir.path().join("scout.db").exists(),
        "check created the store"
    );
    assert!(
        std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
        "something listens on the configured port"
    );

    let output = config_check(&["--json"], &file);
    assert_eq!(output.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["valid"], true);
    let github = report["serves"]["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "github")
        .unwrap();
    assert!(
        github["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "github_read_file")
    );
}

#[test]
fn errors_in_three_sections_are_all_reported_with_their_keys_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scout.toml");
    std::fs::write(
        &file,
        r#"listen = "127.0.0.1:0"
colour = "blue"

[store]
lease_secs = "soon"

[brands.acme]
skills = ["seo"]
max_live_sessions = 0

[connectors.bad__name]
mcp = "https://mcp.example.com/mcp"
credential = "none"
"#,
    )
    .unwrap();
    let output = config_check(&[], &file);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let at = file.display();
    for expected in [
        format!("{at}:2:1: [colour] unknown field `colour`"),
        format!("{at}:5:14: [store.lease_secs] invalid type: string \"soon\""),
        format!("{at}:9:1: [brands.acme.max_live_sessions] "),
        format!(
            "{at}:11:13: [connectors.bad__name] connectors.bad__name: `bad__name` cannot name a connector"
        ),
    ] {
        assert!(text.contains(&expected), "missing `{expected}` in:\n{text}");
    }
    assert!(text.contains("4 errors"), "{text}");
    assert!(
        !dir.path().join("scout.db").exists(),
        "check created the store"
    );

    let output = config_check(&["--json"], &file);
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let keys: Vec<&str> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "colour",
            "store.lease_secs",
            "brands.acme.max_live_sessions",
            "connectors.bad__name"
        ]
    );
}

#[test]
fn malformed_toml_gives_its_line_and_a_missing_file_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.toml");
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:0\"\n\n[store\nbackend = \"sqlite\"\n",
    )
    .unwrap();
    let output = config_check(&[], &file);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("{}:3:", file.display())), "{text}");

    let missing = dir.path().join("absent.toml");
    let output = config_check(&[], &missing);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("cannot read {}", missing.display())),
        "{text}"
    );
}
