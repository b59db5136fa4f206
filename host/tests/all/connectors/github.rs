//! The GitHub connector's committed replay cases (DESIGN D9), run through the
//! real binary: `scout-host test github.wasm --fixtures connectors/github/fixtures`.
//! Every tool has a passing case, and every fixture says it was written from
//! GitHub's documentation (UNVERIFIED), never recorded.

use scout_tests::replay_suite::Suite;

fn suite() -> Suite {
    Suite::of("github")
}

#[test]
fn every_github_fixture_is_unverified_and_names_its_docs_page() {
    let files = suite().assert_unverified("https://docs.github.com/", 10);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap_or_default();
        assert!(
            source.contains('#'),
            "{name}: source {source:?} names the page's operation"
        );
    }
}
