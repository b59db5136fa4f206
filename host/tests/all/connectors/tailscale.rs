//! The Tailscale connector's committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test tailscale.wasm --fixtures
//! connectors/tailscale/fixtures`. Every tool has a passing case, every
//! fixture says it was written from Tailscale's API documentation
//! (UNVERIFIED), never recorded, and the component declares exactly what
//! seed 000's catalogue says of Tailscale.

use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 5] = [
    "tailscale_devices",
    "tailscale_device",
    "tailscale_users",
    "tailscale_policy",
    "tailscale_dns",
];

fn suite() -> Suite {
    Suite::of("tailscale")
}

#[test]
fn every_tailscale_fixture_is_unverified_and_names_its_docs_page() {
    let files = suite().assert_unverified("https://tailscale.com/api", 5);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            source.contains('#'),
            "{name}: source {source:?} names the page's operation"
        );
    }
}

#[test]
fn the_tailscale_component_is_the_seed_catalogues_tailscale() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::TAILSCALE))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    assert_eq!(
        &seed.admit(&c.info().manifest).unwrap(),
        seed.connector("tailscale").unwrap()
    );

    // Reads only, every one of them grantable, no billing.
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "tailscale");
    assert!(manifest.billing.is_none(), "Tailscale does not bill");
    let tools: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, TOOLS, "exactly the seed's five read tools");
    let spec = seed.connector("tailscale").unwrap();
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
            "authorizing, tagging or removing devices",
            "auth keys",
            "policy, DNS and settings edits",
            "a worker's sandbox joining the tailnet",
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
