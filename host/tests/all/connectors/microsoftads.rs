//! The Microsoft Ads connector's committed replay cases (DESIGN D9), run
//! through the real binary: `scout-host test microsoftads.wasm --fixtures
//! connectors/microsoftads/fixtures`. Every tool has a passing case, every
//! fixture says it was written from Microsoft's documentation (UNVERIFIED),
//! never recorded, every request goes to the destination of its service
//! (Customer Management, Campaign Management, Reporting, the report
//! download host) with a query operation or a GET of a report file, and
//! the component declares exactly what seed 000's catalogue says of
//! Microsoft Ads.

use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 4] = [
    "microsoftads_accounts",
    "microsoftads_campaigns",
    "microsoftads_performance_report",
    "microsoftads_report_fetch",
];

fn suite() -> Suite {
    Suite::of("microsoftads")
}

#[test]
fn every_microsoftads_fixture_is_unverified_and_goes_to_its_service() {
    let files = suite().assert_unverified("https://learn.microsoft.com/en-us/advertising/", 6);
    let mut destinations = BTreeSet::new();
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            source.contains("view=bingads-13#"),
            "{name}: source {source:?} names the v13 page's section"
        );
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let destination = request["destination"].as_str().unwrap_or("(main)");
            let (method, path) = (
                request["method"].as_str().unwrap(),
                request["path"].as_str().unwrap(),
            );
            let expected = match (destination, method) {
                ("customer", "POST") => path == "/CustomerManagement/v13/AccountsInfo/Query",
                ("(main)", "POST") => path == "/CampaignManagement/v13/Campaigns/QueryByAccountId",
                ("reporting", "POST") => {
                    path == "/Reporting/v13/GenerateReport/Submit"
                        || path == "/Reporting/v13/GenerateReport/Poll"
                }
                ("download", "GET") => path.starts_with("/download-url/"),
                _ => false,
            };
            assert!(expected, "{name}: {destination} {method} {path}");
            destinations.insert(destination.to_string());
        }
    }
    assert_eq!(
        destinations,
        BTreeSet::from(["(main)", "customer", "reporting", "download"].map(String::from))
    );
}

#[test]
fn refused_microsoftads_calls_send_nothing() {
    let cases = suite().case_list();
    let refusals: Vec<_> = cases
        .iter()
        .filter(|c| {
            c["expect"].get("ok").is_none()
                && c["fixtures"].as_array().is_some_and(|f| f.is_empty())
        })
        .collect();
    assert!(
        refusals.len() >= 15,
        "only {} refusals that send nothing",
        refusals.len()
    );
    // A download URL off the download host is refused with only the poll answered: no download fixture.
    for name in [
        "report-fetch: a download URL on another host is refused, nothing downloaded",
        "report-fetch: a look-alike host is refused",
    ] {
        let case = cases
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(
            case["fixtures"],
            serde_json::json!(["report-poll.json"]),
            "{name}"
        );
        assert!(case["expect"]["err"]["bad-response"].is_string(), "{name}");
    }
}

#[test]
fn the_microsoftads_component_is_the_seed_catalogues_microsoft_ads() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::MICROSOFTADS))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    assert_eq!(
        &seed.admit(&c.info().manifest).unwrap(),
        seed.connector("microsoftads").unwrap()
    );

    // Reads only, every one of them grantable, no billing.
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "microsoftads");
    assert!(manifest.billing.is_none(), "Microsoft Ads does not bill");
    let tools: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, TOOLS, "exactly the seed's four read tools");
    let spec = seed.connector("microsoftads").unwrap();
    assert!(spec.writes.is_empty());
    assert_eq!(spec.grantable.len(), TOOLS.len());

    // Each tool's routes, with their destinations: query POSTs marked read-only, one GET of the report file.
    let routes: Vec<(String, Vec<String>)> = manifest
        .tools
        .iter()
        .map(|t| {
            (
                t.function.clone(),
                t.routes.iter().map(|r| r.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        routes,
        [
            (
                "accounts".to_string(),
                vec![
                    "customer POST /CustomerManagement/v13/AccountsInfo/Query (read-only)"
                        .to_string()
                ]
            ),
            (
                "campaigns".to_string(),
                vec![
                    "POST /CampaignManagement/v13/Campaigns/QueryByAccountId (read-only)"
                        .to_string()
                ]
            ),
            (
                "performance-report".to_string(),
                vec!["reporting POST /Reporting/v13/GenerateReport/Submit (read-only)".to_string()]
            ),
            (
                "report-fetch".to_string(),
                vec![
                    "reporting POST /Reporting/v13/GenerateReport/Poll (read-only)".to_string(),
                    "download GET /{*path}".to_string()
                ]
            ),
        ]
    );

    // The WITHHELD list of seed 000's "What is never given", item by item, each with a reason.
    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "budgets",
            "bids",
            "status changes",
            "create and delete",
            "bulk upload",
            "extensions and assets",
            "users and billing",
            "the search query report",
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
