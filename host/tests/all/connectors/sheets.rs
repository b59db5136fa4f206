//! The Google Sheets connector's committed replay cases (DESIGN D9), run
//! through the real binary: `scout-host test sheets.wasm --fixtures
//! connectors/sheets/fixtures`. Every tool has a passing case; every fixture
//! says it was written from Google's Drive and Sheets API references
//! (UNVERIFIED), never recorded; the read lists files on the `drive`
//! destination and reads no cell; each write sends one POST (a create, or an
//! append with RAW values and inserted rows), never an update, a
//! batchUpdate or a formula; refusals send nothing; and the component
//! declares exactly what seed 000's catalogue says of Google Sheets.

use scout_host::policy::{Registers, WriteGate};
use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 3] = ["sheets_list", "sheets_export", "sheets_append"];
const FILES: &str = "/drive/v3/files";
const CREATE: &str = "/v4/spreadsheets";
const APPEND: &str = "/v4/spreadsheets/{spreadsheet-id}/values/{range}:append";

fn suite() -> Suite {
    Suite::of("sheets")
}

/// Each exchange is one of three requests: the Drive listing (on `drive`,
/// spreadsheets only, not trashed), a create whose cells are all string
/// values, or an append to `...:append` with RAW values and inserted rows.
#[test]
fn every_sheets_fixture_is_unverified_and_one_of_three_requests() {
    let files = suite().assert_unverified("https://developers.google.com/", 12);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            [
                "https://developers.google.com/sheets/api/",
                "https://developers.google.com/drive/api/"
            ]
            .iter()
            .any(|p| source.starts_with(p)),
            "{name}: {source}"
        );
        assert!(
            source.contains('#'),
            "{name}: source {source:?} names the page's section"
        );
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let path = request["path"].as_str().unwrap();
            let method = request["method"].as_str().unwrap();
            let query: Vec<(String, String)> = request["query"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p[0].as_str().unwrap().to_string(),
                        p[1].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            let param = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
            match (request["destination"].as_str(), method) {
                (Some("drive"), "GET") => {
                    assert_eq!(path, FILES, "{name}");
                    let q = param("q").unwrap();
                    assert!(
                        q.starts_with(
                            "mimeType='application/vnd.google-apps.spreadsheet' and trashed=false"
                        ),
                        "{name}: {q}"
                    );
                }
                (None, "POST") if path == CREATE => {
                    let body = request["json"].to_string();
                    assert!(
                        body.contains("\"stringValue\""),
                        "{name}: cells are string values"
                    );
                    for never in [
                        "formulaValue",
                        "numberValue",
                        "boolValue",
                        "userEnteredFormat",
                        "conditionalFormats",
                    ] {
                        assert!(!body.contains(never), "{name}: {never}");
                    }
                }
                (None, "POST") => {
                    let rest = path
                        .strip_prefix("/v4/spreadsheets/")
                        .unwrap_or_else(|| panic!("{name}: {path}"));
                    let (_, range) = rest
                        .split_once("/values/")
                        .unwrap_or_else(|| panic!("{name}: {path}"));
                    assert!(
                        range.ends_with(":append") && !range.contains('/'),
                        "{name}: {path} is an append"
                    );
                    assert_eq!(
                        param("valueInputOption"),
                        Some("RAW"),
                        "{name}: values are never parsed as formulas"
                    );
                    assert_eq!(
                        param("insertDataOption"),
                        Some("INSERT_ROWS"),
                        "{name}: rows are inserted, never overwritten"
                    );
                    assert_eq!(request["json"]["majorDimension"], "ROWS", "{name}");
                }
                other => panic!("{name}: {other:?} {path}: not a request of this connector"),
            }
        }
    }
}

#[test]
fn refusals_send_nothing_and_google_errors_map() {
    let cases = suite().case_list();
    let mut refusals = 0;
    for case in &cases {
        let expect = &case["expect"];
        if expect["err"].get("invalid-input").is_some() || expect.get("host_error").is_some() {
            assert_eq!(
                case["fixtures"],
                serde_json::json!([]),
                "{}: a refusal replays nothing",
                case["name"]
            );
            refusals += 1;
        }
    }
    assert!(refusals >= 20, "only {refusals} refusal cases");
    for tool in TOOLS {
        let n = cases.iter().filter(|c| c["tool"] == tool).count();
        assert!(n >= 8, "{tool}: only {n} cases");
    }
    for status in [400, 401, 403, 429, 500] {
        assert!(
            cases
                .iter()
                .any(|c| c["expect"]["err"]["upstream"]["status"] == status),
            "a case maps HTTP {status} to upstream"
        );
    }
    assert!(
        cases
            .iter()
            .any(|c| c["expect"]["err"].get("not-found").is_some()),
        "a case maps 404 to not-found"
    );
    for needle in [
        "is not a Google spreadsheet id",
        "may not hold `/`",
        "at most 200 columns",
        "control character",
        "rows is empty",
    ] {
        assert!(
            cases.iter().any(|c| c["expect"]["err"]["invalid-input"]
                .as_str()
                .is_some_and(|m| m.contains(needle))),
            "a refusal case for {needle:?}"
        );
    }
}

#[test]
fn the_sheets_component_agrees_with_the_seed_catalogue() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::SHEETS))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    let spec = seed.connector("sheets").unwrap();
    assert_eq!(&seed.admit(&c.info().manifest).unwrap(), spec);

    // The seed: the list grantable; export and append registered with the
    // connector and asking a person on every call, no switch.
    assert_eq!(
        spec.grantable
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["sheets_list"]
    );
    assert_eq!(spec.writes.len(), 2);
    for w in &spec.writes {
        assert!(
            ["sheets_export", "sheets_append"].contains(&w.name.as_str()),
            "{}",
            w.name
        );
        assert_eq!(
            (&w.registers, &w.gate),
            (
                &Registers::WithConnector,
                &WriteGate::Approval { needs: None }
            ),
            "{}",
            w.name
        );
    }

    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "sheets");
    assert!(manifest.billing.is_none(), "no billing");
    let mut seen = BTreeSet::new();
    for tool in &manifest.tools {
        let wire = manifest.wire_name(&tool.function);
        assert_eq!(tool.routes.len(), 1, "{wire}: one route");
        let route = &tool.routes[0];
        let got = (
            route.destination.as_deref(),
            route.method,
            route.path.as_str(),
            route.read_only,
        );
        match wire.as_str() {
            "sheets_list" => {
                assert_eq!(tool.effect, Effect::Read);
                assert!(tool.grantable);
                assert_eq!(got, (Some("drive"), RouteMethod::Get, FILES, false));
            }
            "sheets_export" => {
                assert_eq!(tool.effect, Effect::Write);
                assert_eq!(got, (None, RouteMethod::Post, CREATE, false));
            }
            "sheets_append" => {
                assert_eq!(tool.effect, Effect::Write);
                assert_eq!(got, (None, RouteMethod::Post, APPEND, false));
            }
            other => panic!("{other} is not a tool of the seed's Google Sheets"),
        }
        seen.insert(wire);
    }
    assert_eq!(seen, TOOLS.iter().map(|s| s.to_string()).collect());
    // Nothing overwrites, deletes or formats: no PUT, PATCH or DELETE, no batchUpdate.
    for route in manifest.tools.iter().flat_map(|t| &t.routes) {
        assert!(
            matches!(route.method, RouteMethod::Get | RouteMethod::Post),
            "{}",
            route.path
        );
        assert!(
            !route.path.contains("batchUpdate") && !route.path.contains("encoded"),
            "{}",
            route.path
        );
    }

    // The WITHHELD list of seed 000's "What is never given", each with a reason.
    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "reading files this app did not create",
            "delete",
            "sharing",
            "overwriting cells",
            "formatting"
        ]
    );
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "each withheld effect has a real reason"
    );

    // Its only capability besides types and log is http.
    let capabilities: BTreeSet<&str> = c
        .info()
        .capabilities()
        .into_iter()
        .filter(|c| *c != "log")
        .collect();
    assert_eq!(
        capabilities,
        BTreeSet::from(["http"]),
        "imports: {:?}",
        c.info().imports
    );
    assert!(c.info().forbidden_imports.is_empty());
}
