//! The GitHub connector's committed replay cases (DESIGN D9), run through the
//! real binary: `scout-host test github.wasm --fixtures connectors/github/fixtures`.
//! Every tool has a passing case, and every fixture says it was written from
//! GitHub's documentation (UNVERIFIED), never recorded.

use scout_tests::replay_suite::Suite;

const TOOLS: [&str; 11] = [
    "github_read_file",
    "github_list_path",
    "github_list_branches",
    "github_list_issues",
    "github_read_issue",
    "github_list_pull_requests",
    "github_read_pull_request",
    "github_create_branch",
    "github_commit_files",
    "github_open_pull_request",
    "github_comment",
];

fn suite() -> Suite {
    Suite::of("github")
}

#[test]
fn every_github_tool_passes_its_replay_cases() {
    suite().assert_all_pass(
        env!("CARGO_BIN_EXE_scout-host"),
        scout_tests::components::GITHUB,
        &TOOLS,
    );
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
