//! The Railway connector's committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test railway.wasm --fixtures connectors/railway/fixtures`.
//! Every tool has a passing case; every fixture says it was written from
//! Railway's documentation (UNVERIFIED), never recorded
//! (RAILWAY_UNVERIFIED.live_calls); no read tool's request is a mutation;
//! `railway_variable_names` returns no value; and the component declares
//! exactly what seed 000's catalogue says of Railway.

use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use scout_tests::replay_suite::Suite;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const READS: [&str; 5] = [
    "railway_workspaces",
    "railway_project",
    "railway_deployments",
    "railway_variable_names",
    "railway_logs",
];
const WRITES: [&str; 2] = ["railway_reveal_variables", "railway_redeploy"];

fn suite() -> Suite {
    Suite::of("railway")
}

#[test]
fn every_railway_fixture_is_unverified_and_names_its_docs_page() {
    let files = suite().assert_unverified("https://docs.railway.com/", 7);
    for (name, fixture) in &files {
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            assert_eq!(
                request["method"], "POST",
                "{name}: Railway's API is one GraphQL endpoint"
            );
            assert_eq!(request["path"], "/graphql/v2", "{name}");
            let body = &request["json"];
            assert!(
                body["query"].is_string(),
                "{name}: the request body is matched as json, with its query document"
            );
            assert!(
                body["variables"].is_object(),
                "{name}: arguments travel as GraphQL variables"
            );
        }
    }
}

#[test]
fn no_read_tool_sends_a_mutation_and_variable_names_carry_no_value() {
    let files = suite().fixture_files();
    let mut read_exchanges = 0;
    for case in suite().case_list() {
        let tool = case["tool"].as_str().unwrap();
        if !READS.contains(&tool) {
            continue;
        }
        for (name, fixture) in Suite::fixtures_of(&case, &files) {
            for exchange in fixture["exchanges"].as_array().unwrap() {
                let body = exchange["request"]["json"].to_string();
                assert!(
                    !body.to_ascii_lowercase().contains("mutation"),
                    "{name}: a read tool's fixture request contains `mutation`: {body}"
                );
                assert!(
                    exchange["request"]["json"]["query"]
                        .as_str()
                        .unwrap()
                        .starts_with("query "),
                    "{name}: {body}"
                );
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
    assert!(
        values.len() >= 5,
        "the variables fixtures hold values to leak"
    );
    let mut checked = 0;
    for case in suite()
        .case_list()
        .iter()
        .filter(|c| c["tool"] == "railway_variable_names")
    {
        let Some(ok) = case["expect"].get("ok") else {
            continue;
        };
        let names = ok.as_array().expect("variable-names answers a list");
        assert!(!names.is_empty());
        let text = ok.to_string();
        for value in &values {
            assert!(
                !text.contains(value.as_str()),
                "case {}: the output carries the value {value:?}",
                case["name"]
            );
        }
        for name in names {
            assert!(
                name.as_str().is_some_and(|n| n
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')),
                "{name} is a name"
            );
        }
        checked += 1;
    }
    assert!(
        checked >= 2,
        "a passing variable-names case proves names only"
    );
}

#[test]
fn the_railway_component_agrees_with_the_seed_catalogue() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::RAILWAY))
        .unwrap();
    assert_eq!(
        &scout_host::policy::Catalog::seed()
            .admit(&c.info().manifest)
            .unwrap(),
        scout_host::policy::Catalog::seed()
            .connector("railway")
            .unwrap()
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
        assert_eq!(
            (route.method, route.path.as_str()),
            (RouteMethod::Post, "/graphql/v2"),
            "{wire}"
        );
        match tool.effect {
            Effect::Read => {
                assert!(READS.contains(&wire.as_str()), "{wire}");
                assert!(
                    route.read_only,
                    "{wire}: a read tool's POST is declared (read-only)"
                );
                assert!(tool.grantable, "{wire}: grantable, as the read table says");
            }
            Effect::Write => {
                assert!(WRITES.contains(&wire.as_str()), "{wire}");
                assert!(!route.read_only, "{wire}");
                assert!(!tool.grantable, "{wire}");
            }
        }
    }
    assert_eq!(
        seen,
        READS
            .iter()
            .chain(&WRITES)
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
    );

    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
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
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "each withheld effect has a real reason"
    );
}
