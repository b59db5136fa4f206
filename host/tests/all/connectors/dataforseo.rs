//! The DataForSEO connector's committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test dataforseo.wasm --fixtures
//! connectors/dataforseo/fixtures`. Every tool has a passing case; every
//! fixture says it was written from DataForSEO's documentation (UNVERIFIED),
//! never recorded; every billed case runs under a micro-USD meter and checks
//! what it spent, and every refusal spends nothing and sends nothing; every
//! POST body is one task; and the component declares exactly what seed
//! 000's catalogue says of DataForSEO.

use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 13] = [
    "dataforseo_account",
    "dataforseo_keyword_ideas",
    "dataforseo_search_volume",
    "dataforseo_keyword_overview",
    "dataforseo_ranked_keywords",
    "dataforseo_serp_organic",
    "dataforseo_competitors",
    "dataforseo_page_audit",
    "dataforseo_keyword_difficulty",
    "dataforseo_search_intent",
    "dataforseo_rank_history",
    "dataforseo_trends",
    "seo_page_opportunities",
];
/// The joint tool, and the peers it reads.
const JOINT: &str = "seo_page_opportunities";
const PEERS: [&str; 2] = ["searchconsole", "shopify"];
/// The one tool DataForSEO does not charge for.
const FREE: &str = "dataforseo_account";

fn suite() -> Suite {
    Suite::of("dataforseo")
}

/// Where a fixture's docs must be: DataForSEO's, or, for the joint tool's
/// peers, Shopify's and Google's.
fn docs_of(destination: Option<&str>) -> &'static str {
    match destination {
        None => "https://docs.dataforseo.com/v3/",
        Some("shopify") => "https://shopify.dev/docs/api/admin-graphql/",
        Some("searchconsole") => "https://developers.google.com/webmaster-tools/",
        Some(other) => {
            panic!("a fixture names destination {other:?}, which no route of this connector names")
        }
    }
}

#[test]
fn every_dataforseo_fixture_is_unverified_and_sends_one_task() {
    let files = suite().fixture_files();
    assert!(files.len() >= 17, "only {} fixture files", files.len());
    let mut peer_exchanges = 0;
    for (name, fixture) in &files {
        assert_eq!(
            fixture["provenance"], "UNVERIFIED",
            "{name}: written from the docs, never recorded"
        );
        assert!(
            fixture.get("captured_at").is_none(),
            "{name}: an UNVERIFIED fixture has no capture date"
        );
        let source = fixture["source"].as_str().unwrap_or_default();
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let destination = request["destination"].as_str();
            assert!(
                source.starts_with(docs_of(destination)),
                "{name}: source {source:?} is not a page under {}",
                docs_of(destination)
            );
            let path = request["path"].as_str().unwrap();
            assert_eq!(
                request["method"],
                if path == "/v3/appendix/user_data" {
                    "GET"
                } else {
                    "POST"
                },
                "{name}: {path}"
            );
            match destination {
                Some("shopify") => {
                    assert_eq!(path, "/admin/api/2026-10/graphql.json", "{name}");
                    let query = request["json"]["query"]
                        .as_str()
                        .expect("a GraphQL document");
                    assert!(
                        query.starts_with("query ") && !query.contains("mutation"),
                        "{name}: {query}"
                    );
                    assert!(
                        request["json"]["variables"].is_object(),
                        "{name}: the handle travels as a variable"
                    );
                    peer_exchanges += 1;
                }
                Some(_) => {
                    assert!(
                        path.starts_with("/webmasters/v3/sites/")
                            && path.ends_with("/searchAnalytics/query"),
                        "{name}: {path}"
                    );
                    let filter = &request["json"]["dimensionFilterGroups"][0]["filters"][0];
                    assert_eq!(
                        (filter["dimension"].as_str(), filter["operator"].as_str()),
                        (Some("page"), Some("equals")),
                        "{name}: one page's queries"
                    );
                    peer_exchanges += 1;
                }
                None if path == "/v3/appendix/user_data" => {}
                None => {
                    assert!(path.starts_with("/v3/"), "{name}: {path}");
                    let body = request["json"].as_array().unwrap_or_else(|| {
                        panic!("{name}: a POST body is matched as a JSON array")
                    });
                    assert_eq!(body.len(), 1, "{name}: one task per request");
                    assert!(body[0].is_object(), "{name}");
                    for field in ["postback_url", "pingback_url", "filters", "order_by"] {
                        assert!(
                            body[0].get(field).is_none(),
                            "{name}: the connector never sends {field}"
                        );
                    }
                }
            }
        }
    }
    assert!(peer_exchanges >= 3, "the joint tool's peers are replayed");
}

#[test]
fn billed_cases_check_their_spending_and_refusals_spend_nothing() {
    let mut refused = 0;
    let mut unmetered = 0;
    for case in suite().case_list() {
        let name = case["name"].as_str().unwrap();
        let tool = case["tool"].as_str().unwrap();
        if let Some(meter) = case.get("meter") {
            assert!(
                case.get("expect_spent").is_some() || case["expect"].get("host_error").is_some(),
                "{name}: a metered case checks what it spent"
            );
            if case["expect"]["err"]["capability"]["kind"] == "run-exhausted" {
                assert_eq!(meter["unit"], "micro-usd", "{name}");
                assert_eq!(
                    case["fixtures"],
                    serde_json::json!([]),
                    "{name}: an estimate the allowance cannot cover sends nothing"
                );
                assert_eq!(case["expect_spent"], 0, "{name}");
                refused += 1;
            }
        }
        if tool == FREE {
            if let Some(spent) = case.get("expect_spent") {
                assert_eq!(spent, 0, "{name}: the account is free");
            }
            continue;
        }
        if case["expect"].get("ok").is_some() {
            assert_eq!(
                case["meter"]["unit"], "micro-usd",
                "{name}: a billed success runs under a micro-USD meter"
            );
            assert!(
                case["expect_spent"].as_u64().unwrap() > 0,
                "{name}: a billed success spends"
            );
        }
        let sends_nothing = case["fixtures"].as_array().is_some_and(Vec::is_empty);
        if sends_nothing && case["expect"].get("err").is_some() && case.get("meter").is_some() {
            assert_eq!(case["expect_spent"], 0, "{name}: a refusal spends nothing");
        }
        if case.get("meter").is_none() && case["expect"].get("err").is_some() {
            assert!(sends_nothing, "{name}");
            assert_eq!(
                case["expect"]["err"]["capability"]["capability"], "meter",
                "{name}"
            );
            assert_eq!(
                case["expect"]["err"]["capability"]["kind"], "denied",
                "{name}"
            );
            unmetered += 1;
        }
    }
    assert!(
        refused >= 7,
        "estimates above the allowance are refused with nothing sent ({refused})"
    );
    assert!(
        unmetered >= TOOLS.len() - 1,
        "every billed tool refuses without a meter ({unmetered})"
    );
}

#[test]
fn the_dataforseo_component_is_the_seed_catalogues_dataforseo() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::DATAFORSEO))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    assert_eq!(
        &seed.admit(&c.info().manifest).unwrap(),
        seed.connector("dataforseo").unwrap()
    );

    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "dataforseo");
    assert_eq!(
        manifest.billing,
        Some(scout_manifest::Billing::Usd),
        "every call bills in dollars"
    );
    let mut seen = BTreeSet::new();
    for tool in &manifest.tools {
        let wire = manifest.wire_name(&tool.function);
        assert_eq!(tool.effect, Effect::Read, "{wire}: no write tools");
        assert!(tool.grantable, "{wire}: grantable, as the read table says");
        for route in &tool.routes {
            match route.method {
                RouteMethod::Get => assert_eq!(wire, FREE, "{wire}: only the account is a GET"),
                RouteMethod::Post => assert!(
                    route.read_only,
                    "{wire}: a read tool's POST is declared (read-only)"
                ),
                other => panic!("{wire}: {other:?}"),
            }
            // Only the Shopify peer's route is GraphQL, and queries only.
            let graphql = route
                .graphql
                .map(|g| g == scout_manifest::policy::GraphqlBody::QueriesOnly);
            assert_eq!(
                graphql,
                (route.destination.as_deref() == Some("shopify")).then_some(true),
                "{wire}: {route}"
            );
        }
        if wire == JOINT {
            assert_eq!(
                tool.reads_from, PEERS,
                "{wire}: Reads-from: searchconsole, shopify"
            );
            let destinations: BTreeSet<Option<&str>> = tool
                .routes
                .iter()
                .map(|r| r.destination.as_deref())
                .collect();
            assert_eq!(
                destinations,
                BTreeSet::from([None, Some("searchconsole"), Some("shopify")]),
                "{wire}"
            );
        } else {
            assert!(tool.reads_from.is_empty(), "{wire}");
            assert!(
                tool.routes.iter().all(|r| r.destination.is_none()),
                "{wire}: DataForSEO's own origin only"
            );
        }
        seen.insert(wire);
    }
    assert_eq!(
        seen,
        TOOLS.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );

    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "standard task queues (task_post, tasks_ready, task_get)",
            "pingback and postback URLs",
            "On-Page site crawls (on_page/task_post)",
            "Backlinks, Merchant, App Data and Business Data APIs",
            "Content Generation API",
            "free-form task fields (filters, order_by, custom parameters)",
        ]
    );
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "every withheld effect has a real reason"
    );

    // It imports http and meter, and nothing the contract does not give.
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
