//! The Firecrawl connector's committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test firecrawl.wasm --fixtures
//! connectors/firecrawl/fixtures`. Every tool has a passing case; every
//! fixture says it was written from Firecrawl's documentation (UNVERIFIED),
//! never recorded; every billed case runs under a credits meter and checks
//! what it spent; a crawl above the allowance is refused with nothing sent
//! and nothing spent; and the component declares exactly what seed 000's
//! catalogue says of Firecrawl.

use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 5] = [
    "firecrawl_account",
    "firecrawl_scrape",
    "firecrawl_search",
    "firecrawl_map",
    "firecrawl_crawl",
];
/// Reading the account costs nothing.
const FREE: &str = "firecrawl_account";

fn suite() -> Suite {
    Suite::of("firecrawl")
}

#[test]
fn every_firecrawl_fixture_is_unverified_and_asks_only_for_base_price_options() {
    let files = suite().assert_unverified("https://docs.firecrawl.dev/api-reference/endpoint/", 10);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            source.contains('#'),
            "{name}: source {source:?} names the page's section"
        );
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let path = request["path"].as_str().unwrap();
            assert!(path.starts_with("/v2/"), "{name}: {path}");
            if request["method"] == "GET" {
                assert!(
                    path == "/v2/team/credit-usage" || path.starts_with("/v2/crawl/"),
                    "{name}: {path}"
                );
                continue;
            }
            assert_eq!(request["method"], "POST", "{name}: {path}");
            let body = request["json"]
                .as_object()
                .unwrap_or_else(|| panic!("{name}: a POST body is matched as JSON"));
            // Nothing that costs more than the base price, nothing that acts on a page.
            for field in [
                "actions",
                "zeroDataRetention",
                "redactPII",
                "enterprise",
                "webhook",
                "prompt",
                "onlyCleanContent",
                "headers",
            ] {
                assert!(
                    body.get(field).is_none(),
                    "{name}: the connector never sends {field}"
                );
            }
            let options = if path == "/v2/scrape" {
                Some(request["json"].clone())
            } else {
                body.get("scrapeOptions").cloned()
            };
            if let Some(options) = options {
                assert_eq!(options["proxy"], "basic", "{name}: the basic proxy only");
                for format in options["formats"].as_array().unwrap() {
                    let format = format
                        .as_str()
                        .expect("formats are plain names, never json/question objects");
                    assert!(
                        ["markdown", "summary", "html", "links"].contains(&format),
                        "{name}: {format}"
                    );
                }
                if path != "/v2/scrape" {
                    assert_eq!(
                        options["parsers"],
                        serde_json::json!([]),
                        "{name}: search and crawl do not parse PDFs"
                    );
                }
            }
        }
    }
}

#[test]
fn billed_cases_check_their_spending_and_the_over_allowance_crawl_sends_nothing() {
    let mut unmetered = BTreeSet::new();
    let mut over_allowance_crawl = false;
    for case in suite().case_list() {
        let name = case["name"].as_str().unwrap();
        let tool = case["tool"].as_str().unwrap();
        let sends_nothing = case["fixtures"].as_array().is_some_and(Vec::is_empty);
        if case.get("meter").is_some() {
            assert!(
                case.get("expect_spent").is_some(),
                "{name}: a metered case checks what it spent"
            );
        }
        if tool == FREE {
            if let Some(spent) = case.get("expect_spent") {
                assert_eq!(spent, 0, "{name}: the account is free");
            }
            continue;
        }
        let reads_a_crawl = case["arguments"].get("job-id").is_some();
        if case["expect"].get("ok").is_some() && !reads_a_crawl {
            assert_eq!(
                case["meter"]["unit"], "credits",
                "{name}: a billed success runs under a credits meter"
            );
            let spent = case["expect_spent"].as_u64().unwrap();
            assert!(spent > 0, "{name}: a billed success spends");
            assert_eq!(
                case["expect"]["ok"]["credits-charged"].as_u64(),
                Some(spent),
                "{name}: the tool reports what the meter charged"
            );
        }
        if sends_nothing && case["expect"].get("err").is_some() && case.get("meter").is_some() {
            assert_eq!(case["expect_spent"], 0, "{name}: a refusal spends nothing");
        }
        if case.get("meter").is_none() && case["expect"].get("err").is_some() && !reads_a_crawl {
            let err = &case["expect"]["err"];
            if err.get("capability").is_some() {
                assert!(sends_nothing, "{name}");
                assert_eq!(err["capability"]["capability"], "meter", "{name}");
                assert_eq!(err["capability"]["kind"], "denied", "{name}");
                unmetered.insert(tool.to_string());
            }
        }
        if tool == "firecrawl_crawl"
            && case["arguments"].get("url").is_some()
            && case["expect"]["err"]["capability"]["kind"] == "run-exhausted"
        {
            assert!(
                sends_nothing,
                "{name}: the over-allowance crawl sends nothing"
            );
            assert_eq!(case["expect_spent"], 0, "{name}: and spends nothing");
            let limit = case["arguments"]["limit"].as_u64().unwrap();
            assert!(
                limit > case["meter"]["per_run"].as_u64().unwrap(),
                "{name}: the crawl asks for more than the run has"
            );
            over_allowance_crawl = true;
        }
    }
    assert!(
        over_allowance_crawl,
        "a crawl above the allowance is refused with nothing sent"
    );
    let billed: BTreeSet<String> = TOOLS
        .iter()
        .filter(|t| **t != FREE)
        .map(|t| t.to_string())
        .collect();
    assert_eq!(
        unmetered, billed,
        "every billed tool refuses without a meter"
    );
}

#[test]
fn the_firecrawl_component_is_the_seed_catalogues_firecrawl() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::FIRECRAWL))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    assert_eq!(
        &seed.admit(&c.info().manifest).unwrap(),
        seed.connector("firecrawl").unwrap()
    );

    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "firecrawl");
    assert_eq!(
        manifest.billing,
        Some(scout_manifest::Billing::Credits),
        "every call bills in credits"
    );
    let mut seen = BTreeSet::new();
    for tool in &manifest.tools {
        let wire = manifest.wire_name(&tool.function);
        assert_eq!(tool.effect, Effect::Read, "{wire}: no write tools");
        assert!(tool.grantable, "{wire}: grantable, as the read table says");
        for route in &tool.routes {
            match route.method {
                RouteMethod::Get => assert!(
                    wire == FREE || wire == "firecrawl_crawl",
                    "{wire}: only the account and a crawl's read are GETs"
                ),
                RouteMethod::Post => assert!(
                    route.read_only,
                    "{wire}: a read tool's POST is declared (read-only)"
                ),
                other => panic!("{wire}: {other:?}"),
            }
        }
        seen.insert(wire);
    }
    assert_eq!(
        seen,
        TOOLS.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );
    let spec = seed.connector("firecrawl").unwrap();
    assert!(spec.writes.is_empty());
    assert_eq!(spec.grantable.len(), TOOLS.len());

    // The WITHHELD list of seed 000's "What is never given", each with a reason.
    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "browser interaction",
            "monitors",
            "agent jobs",
            "parse and extract",
            "research papers"
        ]
    );
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "every withheld effect has a real reason"
    );

    // http to reach Firecrawl, meter to spend credits; nothing else.
    let capabilities: BTreeSet<&str> = c
        .info()
        .capabilities()
        .into_iter()
        .filter(|c| *c != "log")
        .collect();
    assert_eq!(
        capabilities,
        BTreeSet::from(["http", "meter"]),
        "imports: {:?}",
        c.info().imports
    );
    assert!(c.info().forbidden_imports.is_empty());
}
