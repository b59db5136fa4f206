//! The Railway connector's committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test railway.wasm --fixtures connectors/railway/fixtures`.
//! Every tool has a passing case; every fixture says it was written from
//! Railway's documentation (UNVERIFIED), never recorded
//! (RAILWAY_UNVERIFIED.live_calls); no read tool's request is a mutation;
//! `railway_variable_names` returns no value; and the component declares
//! exactly what seed 000's catalogue says of Railway.

use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const READS: [&str; 5] = [
    "railway_workspaces",
    "railway_project",
    "railway_deployments",
    "railway_variable_names",
    "railway_logs",
];
const WRITES: [&str; 2] = ["railway_reveal_variables", "railway_redeploy"];

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../connectors/railway/fixtures")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn case_list() -> Vec<Value> {
    read_json(&fixtures_dir().join("cases.json")).as_array().expect("cases.json is a list").clone()
}

/// Case name -> tool, from cases.json.
fn cases() -> BTreeMap<String, String> {
    let mut by_name = BTreeMap::new();
    for case in case_list() {
        let name = case["name"].as_str().expect("a case has a name").to_string();
        let tool = case["tool"].as_str().expect("a case has a tool").to_string();
        assert!(by_name.insert(name.clone(), tool).is_none(), "two cases named {name}");
    }
    by_name
}

/// Every fixture file but cases.json: name -> contents.
fn fixture_files() -> BTreeMap<String, Value> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(fixtures_dir()).expect("the fixtures directory") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name == "cases.json" || path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        files.insert(name, read_json(&path));
    }
    files
}

/// The fixture files a case names (every one when it names none).
fn fixtures_of<'a>(case: &Value, files: &'a BTreeMap<String, Value>) -> Vec<(&'a String, &'a Value)> {
    match case.get("fixtures").and_then(Value::as_array) {
        Some(names) => names
            .iter()
            .map(|n| {
                let n = n.as_str().unwrap();
                files.get_key_value(n).unwrap_or_else(|| panic!("case {} names a missing fixture {n}", case["name"]))
            })
            .collect(),
        None => files.iter().collect(),
    }
}

#[test]
fn every_railway_tool_passes_its_replay_cases() {
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .arg("test")
        .arg(scout_tests::components::RAILWAY)
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
    for tool in READS.iter().chain(&WRITES) {
        assert!(covered.contains(tool), "{tool} has no passing replay case");
    }
    let unknown: Vec<&&str> = covered.iter().filter(|t| !READS.contains(t) && !WRITES.contains(t)).collect();
    assert!(unknown.is_empty(), "cases name tools the connector does not have (use wire names): {unknown:?}");
}

#[test]
fn every_railway_fixture_is_unverified_and_names_its_docs_page() {
    let files = fixture_files();
    for (name, fixture) in &files {
        assert_eq!(fixture["provenance"], "UNVERIFIED", "{name}: written from the docs, never recorded");
        assert!(fixture.get("captured_at").is_none(), "{name}: an UNVERIFIED fixture has no capture date");
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(source.starts_with("https://docs.railway.com/"), "{name}: source {source:?} is not a docs.railway.com page");
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            assert_eq!(request["method"], "POST", "{name}: Railway's API is one GraphQL endpoint");
            assert_eq!(request["path"], "/graphql/v2", "{name}");
            let body = &request["json"];
            assert!(body["query"].is_string(), "{name}: the request body is matched as json, with its query document");
            assert!(body["variables"].is_object(), "{name}: arguments travel as GraphQL variables");
        }
    }
    assert!(files.len() >= 7, "only {} fixture files", files.len());
}

#[test]
fn no_read_tool_sends_a_mutation_and_variable_names_carry_no_value() {
    let files = fixture_files();
    let mut read_exchanges = 0;
    for case in case_list() {
        let tool = case["tool"].as_str().unwrap();
        if !READS.contains(&tool) {
            continue;
        }
        for (name, fixture) in fixtures_of(&case, &files) {
            for exchange in fixture["exchanges"].as_array().unwrap() {
                let body = exchange["request"]["json"].to_string();
                assert!(!body.to_ascii_lowercase().contains("mutation"), "{name}: a read tool's fixture request contains `mutation`: {body}");
                assert!(exchange["request"]["json"]["query"].as_str().unwrap().starts_with("query "), "{name}: {body}");
                read_exchanges += 1;
            }
        }
    }
    assert!(read_exchanges > 0);

    // Every value in every `variables` answer, and no expected name list of
    // `railway_variable_names` holding any of them.
    let mut values = Vec::new();
    for fixture in files.values() {
        for exchange in fixture["exchanges"].as_array().unwrap() {
            if let Some(vars) = exchange["response"]["json"]["data"]["variables"].as_object() {
                values.extend(vars.values().filter_map(Value::as_str).map(str::to_string));
            }
        }
    }
    assert!(values.len() >= 5, "the variables fixtures hold values to leak");
    let mut checked = 0;
    for case in case_list().iter().filter(|c| c["tool"] == "railway_variable_names") {
        let Some(ok) = case["expect"].get("ok") else { continue };
        let names = ok.as_array().expect("variable-names answers a list");
        assert!(!names.is_empty());
        let text = ok.to_string();
        for value in &values {
            assert!(!text.contains(value.as_str()), "case {}: the output carries the value {value:?}", case["name"]);
        }
        for name in names {
            assert!(name.as_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')), "{name} is a name");
        }
        checked += 1;
    }
    assert!(checked >= 2, "a passing variable-names case proves names only");
}

#[test]
fn the_railway_component_agrees_with_the_seed_catalogue() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt.load_file(Path::new(scout_tests::components::RAILWAY)).unwrap();
    assert_eq!(
        &scout_host::policy::Catalog::seed().admit(&c.info().manifest).unwrap(),
        scout_host::policy::Catalog::seed().connector("railway").unwrap()
    );

    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "railway");
    assert!(manifest.billing.is_none(), "no billing");
    let mut seen = BTreeSet::new();
    for tool in &manifest.tools {
        let wire = manifest.wire_name(&tool.function);
        seen.insert(wire.clone());
        assert_eq!(tool.routes.len(), 1, "{wire}: one route");
        let route = &tool.routes[0];
        assert_eq!((route.method, route.path.as_str()), (RouteMethod::Post, "/graphql/v2"), "{wire}");
        match tool.effect {
            Effect::Read => {
                assert!(READS.contains(&wire.as_str()), "{wire}");
                assert!(route.read_only, "{wire}: a read tool's POST is declared (read-only)");
                assert!(tool.grantable, "{wire}: grantable, as the read table says");
            }
            Effect::Write => {
                assert!(WRITES.contains(&wire.as_str()), "{wire}");
                assert!(!route.read_only, "{wire}");
                assert!(!tool.grantable, "{wire}");
            }
        }
    }
    assert_eq!(seen, READS.iter().chain(&WRITES).map(|s| s.to_string()).collect::<BTreeSet<_>>());

    let withheld: Vec<&str> = manifest.withheld.iter().map(|w| w.effect.as_str()).collect();
    assert_eq!(
        withheld,
        [
            "variable writes",
            "service and project changes",
            "domains",
            "volumes",
            "deploy controls other than redeploy",
            "service settings",
            "members and tokens",
            "networking",
        ]
    );
    assert!(manifest.withheld.iter().all(|w| w.reason.len() > 20), "each withheld effect has a real reason");
}
