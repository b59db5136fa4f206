//! The Figma connector's committed replay cases (DESIGN D9), run through the
//! real binary: `scout-host test figma.wasm --fixtures
//! connectors/figma/fixtures`. Every tool has a passing case, every fixture
//! says it was written from Figma's REST API documentation (UNVERIFIED),
//! never recorded, and the component declares exactly what seed 000's
//! catalogue says of Figma.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const TOOLS: [&str; 8] = [
    "figma_whoami",
    "figma_file_outline",
    "figma_read_nodes",
    "figma_export_images",
    "figma_comments",
    "figma_components_styles",
    "figma_team_projects",
    "figma_project_files",
];

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../connectors/figma/fixtures")
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
fn every_figma_tool_passes_its_replay_cases() {
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .arg("test")
        .arg(scout_tests::components::FIGMA)
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
fn every_figma_fixture_is_unverified_and_names_its_docs_page() {
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
        assert!(
            source.starts_with("https://www.figma.com/developers/api#"),
            "{name}: source {source:?} is not a figma.com/developers/api page"
        );
        assert!(source.contains('#'), "{name}: source {source:?} names the page's operation");
        // A read-only connector: every request it is answered for is a GET.
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            assert_eq!(exchange["request"]["method"], "GET", "{name}: {exchange}");
        }
    }
    assert!(files >= 8, "only {files} fixture files");
}

#[test]
fn the_figma_component_is_the_seed_catalogues_figma() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt.load_file(Path::new(scout_tests::components::FIGMA)).unwrap();
    let seed = scout_host::policy::Catalog::seed();
    assert_eq!(&seed.admit(&c.info().manifest).unwrap(), seed.connector("figma").unwrap());

    // Reads only, every one of them grantable, no billing.
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "figma");
    assert!(manifest.billing.is_none(), "Figma does not bill");
    let tools: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, TOOLS, "exactly the seed's eight read tools");
    let spec = seed.connector("figma").unwrap();
    assert!(spec.writes.is_empty());
    assert_eq!(spec.grantable.len(), TOOLS.len());

    // The WITHHELD list of seed 000's "What is never given", each with a reason.
    let withheld: Vec<&str> = manifest.withheld.iter().map(|w| w.effect.as_str()).collect();
    assert_eq!(
        withheld,
        [
            "posting or deleting comments and reactions",
            "variables",
            "dev resources and webhooks",
            "library analytics",
        ]
    );
    assert!(manifest.withheld.iter().all(|w| w.reason.len() > 20), "every withheld effect has a real reason");

    // Its only capability besides types and log is http.
    let capabilities: BTreeSet<&str> = c
        .info()
        .imports
        .iter()
        .filter_map(|i| i.strip_prefix("scout:connector/"))
        .map(|i| i.split('@').next().unwrap())
        .filter(|i| !matches!(*i, "types" | "log"))
        .collect();
    assert_eq!(capabilities, BTreeSet::from(["http"]), "imports: {:?}", c.info().imports);
    assert!(c.info().forbidden_imports.is_empty());
}
