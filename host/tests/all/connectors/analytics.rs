//! The Google Analytics connector's committed replay cases (DESIGN D9), run
//! through the real binary: `scout-host test analytics.wasm --fixtures
//! connectors/analytics/fixtures`. Every tool has a passing case; every
//! fixture says it was written from Google's Analytics API documentation
//! (UNVERIFIED), never recorded; reports are read-only POSTs of
//! `properties/{digits}:runReport` on the Data API and property listings are
//! GETs of the Admin API's `admin` destination; refusals send nothing; the
//! chosen property is kept in the connector's folder; and the component
//! declares exactly what seed 000's catalogue says of Google Analytics.

use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 7] = [
    "analytics_properties",
    "analytics_use_property",
    "analytics_overview",
    "analytics_trend",
    "analytics_traffic_sources",
    "analytics_landing_pages",
    "analytics_report",
];
const USE_PROPERTY: &str = "analytics_use_property";

fn suite() -> Suite {
    Suite::of("analytics")
}

#[test]
fn every_analytics_fixture_is_unverified_and_names_its_docs_page() {
    let files = suite().assert_unverified("https://developers.google.com/analytics/devguides/", 10);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            source.contains('#'),
            "{name}: source {source:?} names the page's section"
        );
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let path = request["path"].as_str().unwrap();
            match (
                request["destination"].as_str(),
                request["method"].as_str().unwrap(),
            ) {
                (Some("admin"), "GET") => assert_eq!(path, "/v1beta/accountSummaries", "{name}"),
                (None, "POST") => {
                    let id = path
                        .strip_prefix("/v1beta/properties/")
                        .and_then(|p| p.strip_suffix(":runReport"))
                        .unwrap_or_else(|| panic!("{name}: {path} is not a runReport"));
                    assert!(
                        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()),
                        "{name}: {path}"
                    );
                }
                other => {
                    panic!("{name}: {other:?} {path}: only admin GETs and Data API runReport POSTs")
                }
            }
        }
    }
}

/// A refusal names no fixture, so any request it made would fail it as a
/// miss; every upstream error class is mapped; the folder cases check the
/// file the tool leaves behind.
#[test]
fn refusals_send_nothing_and_the_choice_lives_in_the_folder() {
    let cases = suite().case_list();
    let mut refusals = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let expect = &case["expect"];
        let err = &expect["err"];
        if err.get("invalid-input").is_some()
            || err.get("refused").is_some()
            || expect.get("host_error").is_some()
        {
            assert_eq!(
                case["fixtures"],
                serde_json::json!([]),
                "{name}: a refusal replays nothing, so it sends nothing"
            );
            refusals += 1;
        }
        if case["tool"] == USE_PROPERTY && expect.get("ok").is_some() {
            let id = expect["ok"]["property-id"].as_str().unwrap();
            assert_eq!(
                case["expect_files"]["analytics"]["property.txt"],
                format!("{id}\n"),
                "{name}: the choice is written"
            );
        }
    }
    assert!(refusals >= 25, "only {refusals} refusal cases");
    for status in [400, 403, 429, 503] {
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
        "a not-found case"
    );
    // A read-only folder: refused, and the earlier choice is still there.
    assert!(cases.iter().any(|c| c["tool"] == USE_PROPERTY
        && c["folders"]["analytics"]["writable"] == false
        && c["expect"]["err"].get("refused").is_some()
        && c["expect_files"]["analytics"]["property.txt"].is_string()));
    // Other tools read the choice (folder given, no property argument).
    for tool in TOOLS
        .iter()
        .filter(|t| **t != USE_PROPERTY && **t != "analytics_properties")
    {
        assert!(
            cases.iter().any(|c| c["tool"] == *tool
                && c["arguments"].get("property").is_none()
                && c["expect"].get("ok").is_some()
                && c.get("folders").is_some()),
            "{tool}: a case reports on the remembered property"
        );
    }
}

#[test]
fn the_analytics_component_is_the_seed_catalogues_google_analytics() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::ANALYTICS))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    let spec = seed.connector("analytics").unwrap();
    assert_eq!(&seed.admit(&c.info().manifest).unwrap(), spec);

    // Seven reads, no writes; every read grantable but use-property.
    assert!(spec.writes.is_empty());
    assert_eq!(spec.grantable.len(), 6);
    assert!(!spec.grantable.contains(USE_PROPERTY));
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "analytics");
    assert!(manifest.billing.is_none(), "Google Analytics does not bill");
    let tools: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, TOOLS);
    for tool in &manifest.tools {
        let wire = manifest.wire_name(&tool.function);
        assert_eq!(tool.effect, Effect::Read, "{wire}");
        assert_eq!(tool.grantable, wire != USE_PROPERTY, "{wire}");
        assert_eq!(tool.routes.len(), 1, "{wire}: one route");
        let route = &tool.routes[0];
        match wire.as_str() {
            "analytics_properties" | USE_PROPERTY => {
                assert_eq!(route.destination.as_deref(), Some("admin"), "{wire}");
                assert_eq!(
                    (route.method, route.path.as_str()),
                    (RouteMethod::Get, "/v1beta/accountSummaries"),
                    "{wire}"
                );
            }
            _ => {
                assert_eq!(
                    route.destination, None,
                    "{wire}: the Data API is the main origin"
                );
                assert_eq!(
                    (route.method, route.path.as_str()),
                    (RouteMethod::Post, "/v1beta/properties/{property}:runReport"),
                    "{wire}"
                );
                assert!(
                    route.read_only,
                    "{wire}: the report POST is declared read-only"
                );
            }
        }
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
            "admin writes",
            "user-level exports",
            "realtime reports",
            "pivot reports",
            "funnel reports"
        ]
    );
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "every withheld effect has a real reason"
    );

    // http (two destinations) and the folder that keeps the chosen property.
    let capabilities: BTreeSet<&str> = c
        .info()
        .capabilities()
        .into_iter()
        .filter(|c| *c != "log")
        .collect();
    assert_eq!(
        capabilities,
        BTreeSet::from(["http", "folder"]),
        "imports: {:?}",
        c.info().imports
    );
    assert!(c.info().forbidden_imports.is_empty());
}
