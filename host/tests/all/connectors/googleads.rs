//! The Google Ads connector's committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test googleads.wasm --fixtures
//! connectors/googleads/fixtures`. Every tool has a passing case, every
//! fixture says it was written from Google's API documentation
//! (UNVERIFIED), never recorded, every request is the one GET of
//! `customers:listAccessibleCustomers` or a GAQL search (never a mutate),
//! and the component declares exactly what seed 000's catalogue says of
//! Google Ads.

use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 8] = [
    "googleads_accounts",
    "googleads_report",
    "googleads_campaigns",
    "googleads_search_terms",
    "googleads_account_hierarchy",
    "googleads_compare_periods",
    "googleads_summarize",
    "googleads_search_term_audit",
];

fn suite() -> Suite {
    Suite::of("googleads")
}

#[test]
fn every_googleads_fixture_is_unverified_and_reads_only() {
    let files = suite().assert_unverified("https://developers.google.com/google-ads/api/", 10);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            source.contains('#'),
            "{name}: source {source:?} names the page's section"
        );
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let (method, path) = (
                request["method"].as_str().unwrap(),
                request["path"].as_str().unwrap(),
            );
            match method {
                "GET" => assert_eq!(path, "/v26/customers:listAccessibleCustomers", "{name}"),
                "POST" => {
                    assert!(
                        path.starts_with("/v26/customers/") && path.ends_with("/googleAds:search"),
                        "{name}: {path}"
                    );
                    let query = request["json"]["query"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{name}: a search names its query"));
                    assert!(query.starts_with("SELECT "), "{name}: {query}");
                }
                other => panic!("{name}: {other} {path}"),
            }
            assert!(!path.contains(":mutate"), "{name}: {path}");
        }
    }
}

#[test]
fn refused_googleads_calls_send_nothing() {
    // A case that names no fixture would fail on any request it made.
    let cases = suite().case_list();
    let refusals: Vec<_> = cases
        .iter()
        .filter(|c| {
            c["expect"].get("ok").is_none()
                && c["fixtures"].as_array().is_some_and(|f| f.is_empty())
        })
        .collect();
    assert!(
        refusals.len() >= 20,
        "only {} refusals that send nothing",
        refusals.len()
    );
    let invalid = refusals
        .iter()
        .filter(|c| c["expect"]["err"].get("invalid-input").is_some())
        .count();
    let host = refusals
        .iter()
        .filter(|c| c["expect"].get("host_error").is_some())
        .count();
    assert!(
        invalid >= 10 && host >= 5,
        "invalid-input {invalid}, host errors {host}"
    );
}

#[test]
fn the_googleads_component_is_the_seed_catalogues_google_ads() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::GOOGLEADS))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    assert_eq!(
        &seed.admit(&c.info().manifest).unwrap(),
        seed.connector("googleads").unwrap()
    );

    // Reads only, every one of them grantable, no billing.
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "googleads");
    assert!(manifest.billing.is_none(), "Google Ads does not bill");
    let tools: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, TOOLS, "exactly the seed's eight read tools");
    let spec = seed.connector("googleads").unwrap();
    assert!(spec.writes.is_empty());
    assert_eq!(spec.grantable.len(), TOOLS.len());
    // Every route is the accessible-customers GET or the read-only search POST.
    for tool in &manifest.tools {
        for route in &tool.routes {
            let shown = route.to_string();
            assert!(
                shown == "GET /v26/customers:listAccessibleCustomers"
                    || shown == "POST /v26/customers/{customer-id}/googleAds:search (read-only)",
                "{}: {shown}",
                tool.function
            );
        }
        assert!(
            !tool.routes.is_empty(),
            "{} declares its routes",
            tool.function
        );
    }

    // The WITHHELD list of seed 000's "What is never given", item by item, each with a reason.
    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "bids",
            "budgets",
            "campaign status",
            "recommendations",
            "assets",
            "account and user changes",
            "billing"
        ]
    );
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
