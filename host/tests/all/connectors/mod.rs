//! One module per connector (`connectors/NAME`): what is particular to it,
//! and the replay suite every connector gets, generated here from the list
//! the build script discovered (`scout_tests::foreach_connector!`) and from
//! each component's own manifest (its tools), so nothing restates it. A
//! connector without a module of its own fails the build.

use scout_host::{Runtime, RuntimeConfig};
use scout_tests::replay_suite::Suite;
use std::path::Path;

mod agentmail;
mod analytics;
mod cloudflare;
mod contentsquare;
mod dataforseo;
mod figma;
mod firecrawl;
mod github;
mod googleads;
mod microsoftads;
mod railway;
mod searchconsole;
mod seo;
mod sheets;
mod shopify;
mod tailscale;
mod writer;

/// Every tool the component declares has a passing case in its committed
/// fixtures, run through the real `scout-host test`.
fn every_tool_passes_its_replay_cases(connector: &str, component: &str) {
    let runtime = Runtime::new(RuntimeConfig {
        max_concurrent_calls: 1,
        ..Default::default()
    })
    .expect("a runtime");
    let info = runtime
        .inspect_file(Path::new(component))
        .unwrap_or_else(|e| panic!("{component}: {e}"));
    let tools: Vec<&str> = info.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(!tools.is_empty(), "{connector} declares no tools");
    Suite::of(connector).assert_all_pass(env!("CARGO_BIN_EXE_scout-host"), component, &tools);
}

/// Every committed fixture was written from the vendor's documentation and
/// says which page (`UNVERIFIED`, with an `https://` source): none was
/// recorded from the real service here. (A connector that reaches no
/// upstream, such as the SEO brief tools, has cases and no fixture.)
fn every_fixture_names_the_documentation_it_follows(connector: &str) {
    Suite::of(connector).assert_unverified("https://", 0);
}

macro_rules! replay_suite {
    ($($name:ident => $component:expr),* $(,)?) => {
        $(
            // A connector without its own module fails the build here.
            #[allow(unused_imports)]
            use self::$name as _;
        )*
        mod replay {
            $(
                mod $name {
                    #[test]
                    fn every_tool_passes_its_replay_cases() {
                        super::super::every_tool_passes_its_replay_cases(stringify!($name), $component);
                    }

                    #[test]
                    fn every_fixture_names_the_documentation_it_follows() {
                        super::super::every_fixture_names_the_documentation_it_follows(stringify!($name));
                    }
                }
            )*
        }
    };
}
scout_tests::foreach_connector!(replay_suite);
