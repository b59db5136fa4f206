//! The Google Search Console connector's committed replay cases (DESIGN D9),
//! run through the real binary: `scout-host test searchconsole.wasm
//! --fixtures connectors/searchconsole/fixtures`. Every tool has a passing
//! case; every fixture says it was written from Google's Search Console API
//! reference (UNVERIFIED), never recorded; the only requests are the sites
//! GET and the two read-only POSTs; a property is sent as one encoded
//! segment; refusals send nothing; and the component declares exactly what
//! seed 000's catalogue says of Search Console.

use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 6] = [
    "searchconsole_properties",
    "searchconsole_totals",
    "searchconsole_queries",
    "searchconsole_pages",
    "searchconsole_breakdown",
    "searchconsole_inspect_url",
];
const SITES: &str = "/webmasters/v3/sites";
const QUERY: &str = "/webmasters/v3/sites/{site:encoded}/searchAnalytics/query";
const INSPECT: &str = "/v1/urlInspection/index:inspect";

fn suite() -> Suite {
    Suite::of("searchconsole")
}

#[test]
fn every_searchconsole_fixture_is_unverified_and_names_its_docs_page() {
    let files = suite().assert_unverified("https://developers.google.com/webmaster-tools/v1/", 15);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            source.contains('#'),
            "{name}: source {source:?} names the page's section"
        );
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let path = request["path"].as_str().unwrap();
            assert!(
                request.get("destination").is_none(),
                "{name}: Search Console has one origin"
            );
            match request["method"].as_str().unwrap() {
                "GET" => assert_eq!(path, SITES, "{name}"),
                "POST" => {
                    assert!(
                        request["json"].is_object(),
                        "{name}: a query's body is matched as json"
                    );
                    if path != INSPECT {
                        let site = path
                            .strip_prefix("/webmasters/v3/sites/")
                            .and_then(|p| p.strip_suffix("/searchAnalytics/query"))
                            .unwrap_or_else(|| panic!("{name}: {path} is neither query route"));
                        assert!(
                            !site.contains('/'),
                            "{name}: the property is one segment: {site}"
                        );
                        assert!(
                            site.starts_with("sc-domain%3A") || site.starts_with("https%3A%2F%2F"),
                            "{name}: {site}"
                        );
                        let rows = request["json"]["rowLimit"].as_u64().unwrap_or(0);
                        assert!(rows <= 1000, "{name}: one page of at most 1000 rows");
                        assert!(
                            request["json"].get("startRow").is_none(),
                            "{name}: no paging walk"
                        );
                    }
                }
                other => {
                    panic!("{name}: {other} {path}: Search Console's fixtures only GET and POST")
                }
            }
        }
    }
}

/// A case that expects `invalid-input` (or a host refusal) names no fixture,
/// so any request it made would fail it as a miss; Google's error statuses
/// map to `upstream` (403 included) and 404 to `not-found`.
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
    assert!(refusals >= 25, "only {refusals} refusal cases");
    for tool in TOOLS {
        let n = cases.iter().filter(|c| c["tool"] == tool).count();
        assert!(n >= 3, "{tool}: only {n} cases");
    }
    for status in [400, 401, 403, 429, 500, 503] {
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
            .any(|c| c["expect"]["err"]["upstream"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("PERMISSION_DENIED: "))),
        "a property the user cannot see is upstream 403 with Google's status"
    );
    assert!(
        cases
            .iter()
            .any(|c| c["expect"]["err"].get("not-found").is_some()),
        "a case maps 404 to not-found"
    );
    for needle in [
        "a URL-prefix property ends in `/`",
        "is not under the property",
        "not between 1 and 1000",
        "path segment",
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
fn the_searchconsole_component_is_the_seed_catalogues_searchconsole() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::SEARCHCONSOLE))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    let spec = seed.connector("searchconsole").unwrap();
    assert_eq!(&seed.admit(&c.info().manifest).unwrap(), spec);

    // Six reads, every one grantable, no writes, no billing.
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "searchconsole");
    assert!(manifest.billing.is_none(), "Search Console does not bill");
    assert!(spec.writes.is_empty());
    assert_eq!(spec.grantable.len(), TOOLS.len());
    let tools: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, TOOLS, "exactly the seed's six read tools");

    // Routes: the sites GET, and the two query POSTs marked read-only; the
    // property is the one `{site:encoded}` parameter.
    let mut seen = BTreeSet::new();
    for tool in &manifest.tools {
        let wire = manifest.wire_name(&tool.function);
        assert_eq!(tool.effect, Effect::Read, "{wire}");
        assert!(tool.grantable, "{wire}");
        assert_eq!(tool.routes.len(), 1, "{wire}: one route");
        let route = &tool.routes[0];
        assert!(
            route.destination.is_none(),
            "{wire}: the connector's own origin"
        );
        let expected = match wire.as_str() {
            "searchconsole_properties" => (RouteMethod::Get, SITES, false),
            "searchconsole_inspect_url" => (RouteMethod::Post, INSPECT, true),
            _ => (RouteMethod::Post, QUERY, true),
        };
        assert_eq!(
            (route.method, route.path.as_str(), route.read_only),
            expected,
            "{wire}"
        );
        seen.insert(wire);
    }
    assert_eq!(seen, TOOLS.iter().map(|s| s.to_string()).collect());

    // The WITHHELD list of seed 000's "What is never given", each with a reason.
    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(withheld, ["sitemap submit and delete", "paging walks"]);
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "every withheld effect has a real reason"
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
