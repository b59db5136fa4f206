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

const TOOLS: [&str; 12] = [
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
];
/// The one tool DataForSEO does not charge for.
const FREE: &str = "dataforseo_account";

fn suite() -> Suite {
    Suite::of("dataforseo")
}

#[test]
fn every_dataforseo_tool_passes_its_replay_cases() {
    suite().assert_all_pass(
        env!("CARGO_BIN_EXE_scout-host"),
        scout_tests::components::DATAFORSEO,
        &TOOLS,
    );
}

#[test]
fn every_dataforseo_fixture_is_unverified_and_sends_one_task() {
    let files = suite().assert_unverified("https://docs.dataforseo.com/v3/", 14);
    for (name, fixture) in &files {
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let path = request["path"].as_str().unwrap();
            assert!(path.starts_with("/v3/"), "{name}: {path}");
            if path == "/v3/appendix/user_data" {
                assert_eq!(request["method"], "GET", "{name}");
                continue;
            }
            assert_eq!(request["method"], "POST", "{name}: {path}");
            let body = request["json"]
                .as_array()
                .unwrap_or_else(|| panic!("{name}: a POST body is matched as a JSON array"));
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
