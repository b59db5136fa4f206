//! The Contentsquare connector's committed replay cases (DESIGN D9), run
//! through the real binary: `scout-host test contentsquare.wasm --fixtures
//! connectors/contentsquare/fixtures`. Every tool has a passing case; every
//! fixture says it was written from Contentsquare's Metrics API
//! documentation (UNVERIFIED), never recorded, and is a GET; and the seed
//! catalogue serves the component conservatively: its reads, no writes, and
//! nothing grantable (seed 000's read table: Contentsquare is not grantable).

use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 5] = [
    "contentsquare_mappings",
    "contentsquare_page_groups",
    "contentsquare_segments",
    "contentsquare_site_metrics",
    "contentsquare_page_group_metrics",
];

fn suite() -> Suite {
    Suite::of("contentsquare")
}

#[test]
fn every_contentsquare_fixture_is_unverified_and_a_get_of_the_metrics_api() {
    let files = suite().assert_unverified("https://docs.contentsquare.com/en/api/metrics/", 8);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            source.contains('#'),
            "{name}: source {source:?} names the page's section"
        );
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            assert_eq!(request["method"], "GET", "{name}: reads only");
            let path = request["path"].as_str().unwrap();
            assert!(path.starts_with("/v1/"), "{name}: {path}");
            for never in [
                "/v1/exports",
                "/v1/enrichments",
                "/v1/oauth",
                "/v1/speed-analysis",
            ] {
                assert!(!path.starts_with(never), "{name}: {path} is withheld");
            }
        }
    }
}

#[test]
fn the_seed_catalogue_serves_contentsquare_with_nothing_grantable() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::CONTENTSQUARE))
        .unwrap();
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "contentsquare");
    assert!(manifest.billing.is_none(), "Contentsquare does not bill");

    // The seed lists no Contentsquare tool (every tool the brand's server
    // offers): the component's reads are served as declared, none grantable.
    let seed = scout_host::policy::Catalog::seed();
    let admitted = seed.admit(manifest).unwrap();
    assert_eq!(admitted.name, "contentsquare");
    assert_eq!(admitted.title, "Contentsquare");
    assert_eq!(
        admitted.reads,
        TOOLS.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    );
    assert!(admitted.writes.is_empty(), "no write tools");
    assert!(
        admitted.grantable.is_empty(),
        "nothing grantable: {:?}",
        admitted.grantable
    );
    assert!(!admitted.is_grantable());
    assert!(admitted.billing.is_none());

    // The component itself declares none grantable either, and only GETs.
    let mut seen = BTreeSet::new();
    for tool in &manifest.tools {
        let wire = manifest.wire_name(&tool.function);
        assert_eq!(tool.effect, Effect::Read, "{wire}: no write tools");
        assert!(!tool.grantable, "{wire}: declared Grantable: no");
        assert!(!tool.routes.is_empty(), "{wire}: declares its route");
        for route in &tool.routes {
            assert_eq!(route.method, RouteMethod::Get, "{wire}: GET only");
        }
        seen.insert(wire);
    }
    assert_eq!(
        seen,
        TOOLS.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );

    // The writes and exports the API offers that are not built, each with a reason.
    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "data exports",
            "enrichment",
            "Speed Analysis event writes",
            "OAuth token and credential identity calls",
            "zone and zoning metrics",
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
