//! The Figma connector's committed replay cases (DESIGN D9), run through the
//! real binary: `scout-host test figma.wasm --fixtures
//! connectors/figma/fixtures`. Every tool has a passing case, every fixture
//! says it was written from Figma's REST API documentation (UNVERIFIED),
//! never recorded, and the component declares exactly what seed 000's
//! catalogue says of Figma.

use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 8] = [
    "figma_whoami",
    "figma_file_outline",
    "figma_read_nodes",
    "figma_export_images",
    "figma_comments",
    "figma_components_styles",
    "figma_team_projects",
    "figma_project_files",
];

fn suite() -> Suite {
    Suite::of("figma")
}

#[test]
fn every_figma_fixture_is_unverified_and_names_its_docs_page() {
    let files = suite().assert_unverified("https://www.figma.com/developers/api#", 8);
    // A read-only connector: every request it is answered for is a GET.
    for (name, fixture) in &files {
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            assert_eq!(exchange["request"]["method"], "GET", "{name}: {exchange}");
        }
    }
}

#[test]
fn the_figma_component_is_the_seed_catalogues_figma() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::FIGMA))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    assert_eq!(
        &seed.admit(&c.info().manifest).unwrap(),
        seed.connector("figma").unwrap()
    );

    // Reads only, every one of them grantable, no billing.
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "figma");
    assert!(manifest.billing.is_none(), "Figma does not bill");
    let tools: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, TOOLS, "exactly the seed's eight read tools");
    let spec = seed.connector("figma").unwrap();
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
            "posting or deleting comments and reactions",
            "variables",
            "dev resources and webhooks",
            "library analytics",
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
