//! The GitHub connector's committed replay cases (DESIGN D9), run through the
//! real binary: `scout-host test github.wasm --fixtures connectors/github/fixtures`.
//! Every tool has a passing case, and every fixture says it was written from
//! GitHub's documentation (UNVERIFIED), never recorded.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const TOOLS: [&str; 11] = [
    "github_read_file",
    "github_list_path",
    "github_list_branches",
    "github_list_issues",
    "github_read_issue",
    "github_list_pull_requests",
    "github_read_pull_request",
    "github_create_branch",
    "github_commit_files",
    "github_open_pull_request",
    "github_comment",
];

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../connectors/github/fixtures")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Case name -> tool, from cases.json.
fn cases() -> BTreeMap<String, String> {
    let cases = read_json(&fixtures_dir().join("cases.json"));
    let mut by_name = BTreeMap::new();
    for case in cases.as_array().expect("cases.json is a list") {
        let name = case["name"].as_str().expect("a case has a name").to_string();
        let tool = case["tool"].as_str().expect("a case has a tool").to_string();
        assert!(by_name.insert(name.clone(), tool).is_none(), "two cases named {name}");
    }
    by_name
}

#[test]
fn every_github_tool_passes_its_replay_cases() {
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .arg("test")
        .arg(scout_tests::components::GITHUB)
        .arg("--fixtures")
        .arg(fixtures_dir())
        .output()
        .expect("run scout-host test");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "scout-host test failed:\n{stdout}\n{stderr}");

    // `ok      NAME (1.2 ms)`
    let passed: BTreeSet<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ok "))
        .map(|rest| {
            let rest = rest.trim_start();
            rest.rsplit_once(" (").map_or(rest, |(name, _)| name).to_string()
        })
        .collect();
    assert!(!stdout.lines().any(|l| l.starts_with("FAILED")), "{stdout}");
    let cases = cases();
    assert_eq!(passed, cases.keys().cloned().collect::<BTreeSet<_>>(), "every case in cases.json passed:\n{stdout}");
    assert!(stdout.contains(&format!("test result: ok. {} passed; 0 failed", cases.len())), "{stdout}");

    let covered: BTreeSet<&str> = passed.iter().map(|name| cases[name].as_str()).collect();
    for tool in TOOLS {
        assert!(covered.contains(tool), "{tool} has no passing replay case");
    }
    let unknown: Vec<&&str> = covered.iter().filter(|t| !TOOLS.contains(t)).collect();
    assert!(unknown.is_empty(), "cases name tools the connector does not have (use wire names): {unknown:?}");
}

#[test]
fn every_github_fixture_is_unverified_and_names_its_docs_page() {
    let mut files = 0;
    for entry in std::fs::read_dir(fixtures_dir()).expect("the fixtures directory") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name == "cases.json" || path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        files += 1;
        let fixture = read_json(&path);
        assert_eq!(fixture["provenance"], "UNVERIFIED", "{name}: written from the docs, never recorded");
        assert!(fixture.get("captured_at").is_none(), "{name}: an UNVERIFIED fixture has no capture date");
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(source.starts_with("https://docs.github.com/"), "{name}: source {source:?} is not a docs.github.com page");
        assert!(source.contains('#'), "{name}: source {source:?} names the page's operation");
    }
    assert!(files >= 10, "only {files} fixture files");
}
