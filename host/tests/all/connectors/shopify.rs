//! The Shopify connector's committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test shopify.wasm --fixtures connectors/shopify/fixtures`.
//! Every tool has a passing case; every fixture says it was written from
//! Shopify's GraphQL Admin API documentation (UNVERIFIED), never recorded;
//! every request is one POST of a GraphQL body to the Admin API; the read
//! tools send only their fixed query documents, arguments as variables;
//! `shopify_admin_graphql` is replayed with both a query and a mutation
//! document (there is no gate in `scout-host test`: the gate is the host's,
//! proved by the serve tests); refusals send nothing; and the component
//! declares exactly what seed 000's catalogue says of Shopify.

use scout_host::policy::{Registers, WriteGate};
use scout_manifest::Effect;
use scout_manifest::policy::{GraphqlBody, RouteMethod};
use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const READS: [&str; 3] = [
    "shopify_shop_info",
    "shopify_search_products",
    "shopify_recent_orders",
];
const ADMIN: &str = "shopify_admin_graphql";
const ENDPOINT: &str = "/admin/api/2026-10/graphql.json";

fn suite() -> Suite {
    Suite::of("shopify")
}

fn all_tools() -> Vec<&'static str> {
    READS.iter().copied().chain([ADMIN]).collect()
}

#[test]
fn every_shopify_fixture_is_unverified_and_names_its_docs_page() {
    let files = suite().assert_unverified("https://shopify.dev/docs/api/admin-graphql", 10);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            source.starts_with("https://shopify.dev/docs/api/admin-graphql/2026-10"),
            "{name}: {source} is the version the connector calls"
        );
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            assert_eq!(
                request["method"], "POST",
                "{name}: the Admin API is one GraphQL endpoint"
            );
            assert_eq!(request["path"], ENDPOINT, "{name}");
            assert_eq!(
                request["query"],
                serde_json::json!([]),
                "{name}: no URL query"
            );
            assert!(
                request.get("destination").is_none(),
                "{name}: the shop's origin only"
            );
            let body = &request["json"];
            assert!(
                body["query"].is_string(),
                "{name}: the request body is matched as json, with its document"
            );
            assert!(
                body["variables"].is_object(),
                "{name}: variables are always an object"
            );
        }
    }
}

/// Read tools' fixtures hold only their fixed query documents (arguments in
/// `variables`); `admin-graphql` cases cover a query and a mutation
/// document; a refusal names no fixture, so any request it made would fail
/// it as a miss.
#[test]
fn reads_send_fixed_queries_admin_replays_both_kinds_and_refusals_send_nothing() {
    let files = suite().fixture_files();
    let mut read_documents: std::collections::BTreeMap<String, BTreeSet<String>> =
        Default::default();
    let (mut admin_queries, mut admin_mutations, mut refusals) = (0, 0, 0);
    for case in suite().case_list() {
        let tool = case["tool"].as_str().unwrap();
        let name = case["name"].as_str().unwrap();
        let expect = &case["expect"];
        if expect["err"]
            .get("invalid-input")
            .is_some_and(|m| !m.as_str().unwrap().starts_with("Shopify rejected"))
            || expect.get("host_error").is_some()
            || expect["err"].get("capability").is_some()
        {
            assert_eq!(
                case["fixtures"],
                serde_json::json!([]),
                "{name}: a refusal replays nothing, so it sends nothing"
            );
            refusals += 1;
            continue;
        }
        if tool == ADMIN {
            let document = case["arguments"]["query"].as_str().unwrap();
            if document.trim_start().starts_with("mutation") {
                admin_mutations += 1;
            } else {
                admin_queries += 1;
            }
            continue;
        }
        for (file, fixture) in Suite::fixtures_of(&case, &files) {
            for exchange in fixture["exchanges"].as_array().unwrap() {
                let document = exchange["request"]["json"]["query"].as_str().unwrap();
                assert!(
                    document.starts_with("query "),
                    "{name}: {file} sends {document}"
                );
                assert!(
                    !document.to_ascii_lowercase().contains("mutation"),
                    "{name}: {file}: a read tool's document names a mutation"
                );
                read_documents
                    .entry(tool.to_string())
                    .or_default()
                    .insert(document.to_string());
            }
        }
    }
    assert_eq!(
        read_documents
            .keys()
            .map(String::as_str)
            .collect::<BTreeSet<_>>(),
        READS.into_iter().collect::<BTreeSet<_>>()
    );
    for (tool, documents) in &read_documents {
        assert_eq!(
            documents.len(),
            1,
            "{tool} sends one fixed document, whatever its arguments: {documents:?}"
        );
    }
    assert!(
        admin_queries >= 3 && admin_mutations >= 2,
        "{admin_queries} query and {admin_mutations} mutation cases of {ADMIN}"
    );
    assert!(refusals >= 12, "only {refusals} refusal cases");
    for status in [401, 402, 403, 503] {
        assert!(
            suite()
                .case_list()
                .iter()
                .any(|c| c["expect"]["err"]["upstream"]["status"] == status),
            "a case maps HTTP {status} to upstream"
        );
    }
    assert!(
        suite()
            .case_list()
            .iter()
            .any(|c| c["expect"]["err"].get("not-found").is_some()),
        "a case maps 404 to not-found"
    );
    let throttled = suite()
        .case_list()
        .iter()
        .filter(|c| {
            c["expect"]["err"]["upstream"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Throttled (THROTTLED)"))
        })
        .count();
    assert!(
        throttled >= 2,
        "THROTTLED answers (HTTP 200) are upstream errors for a read and for admin-graphql"
    );
}

#[test]
fn the_shopify_component_agrees_with_the_seed_catalogue() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::SHOPIFY))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    let spec = seed.connector("shopify").unwrap();
    assert_eq!(&seed.admit(&c.info().manifest).unwrap(), spec);
    assert_eq!(spec.reads, READS);
    assert_eq!(
        spec.grantable,
        READS.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );
    assert_eq!(spec.writes.len(), 1);
    assert_eq!(spec.writes[0].name, ADMIN);
    assert_eq!(spec.writes[0].registers, Registers::WithConnector);
    assert!(matches!(
        spec.writes[0].gate,
        WriteGate::MutationsNeedApproval { .. }
    ));

    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "shopify");
    assert!(manifest.billing.is_none(), "Shopify does not bill");
    let mut seen = BTreeSet::new();
    for tool in &manifest.tools {
        let wire = manifest.wire_name(&tool.function);
        seen.insert(wire.clone());
        assert_eq!(tool.routes.len(), 1, "{wire}: one route");
        let route = &tool.routes[0];
        assert_eq!(
            (route.method, route.path.as_str()),
            (RouteMethod::Post, ENDPOINT),
            "{wire}"
        );
        assert!(route.destination.is_none(), "{wire}: the shop's origin");
        match tool.effect {
            Effect::Read => {
                assert!(READS.contains(&wire.as_str()), "{wire}");
                assert_eq!(
                    route.graphql,
                    Some(GraphqlBody::QueriesOnly),
                    "{wire}: (graphql-query)"
                );
                assert!(route.read_only, "{wire}");
                // Each read names the one root field its fixed query selects.
                let root = match wire.as_str() {
                    "shopify_shop_info" => "shop",
                    "shopify_search_products" => "products",
                    _ => "orders",
                };
                assert_eq!(route.graphql_fields, [root], "{wire}");
                assert!(tool.grantable, "{wire}: grantable, as the read table says");
            }
            Effect::Write => {
                assert_eq!(wire, ADMIN);
                assert_eq!(route.graphql, Some(GraphqlBody::Gated), "{wire}: (graphql)");
                // By seed design any root field: the document is the argument,
                // and a person approving a mutation sees the document itself.
                assert!(route.graphql_fields.is_empty(), "{wire}");
                assert!(!route.read_only && !tool.grantable, "{wire}");
            }
        }
    }
    assert_eq!(
        seen,
        all_tools()
            .into_iter()
            .map(str::to_string)
            .collect::<BTreeSet<_>>()
    );

    // The one gated tool takes the document as `query` (the host parses it to
    // decide the gate) and the variables as JSON text.
    let admin = c
        .info()
        .tools
        .iter()
        .find(|t| t.name == ADMIN)
        .expect("the admin tool");
    let schema = &admin.input_schema;
    assert_eq!(schema["properties"]["query"]["type"], "string", "{schema}");
    assert_eq!(schema["required"], serde_json::json!(["query"]), "{schema}");

    // Seed 000: nothing beyond the single Admin GraphQL tool; each withheld
    // effect with a reason.
    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "the REST Admin API",
            "the Storefront and Customer Account APIs",
            "webhook subscriptions",
            "app billing",
            "bulk operations",
            "staged and file uploads",
            "typed write tools",
            "other shops",
        ]
    );
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 40),
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
