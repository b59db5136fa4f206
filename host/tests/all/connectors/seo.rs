//! The SEO brief tools' committed replay cases (DESIGN D9), run through the
//! real binary: `scout-host test seo.wasm --fixtures connectors/seo/fixtures`.
//! Both tools have passing cases over a fresh project folder per case
//! (`folders`, `expect_files`): a saved brief's exact text, a hand-off that
//! changes only the status line, smuggled status lines refused, traversal
//! names refused with nothing written, a read-only folder refusing every
//! write with the file unchanged. The component makes no request (no `http`
//! import, no fixture file) and spends nothing (no `meter`), its tools are
//! the seed's two SEO brief tools, both grantable reads with no route, and
//! no status it writes is APPROVED.

use scout_host::policy::names::{SEO_HAND_OFF_BRIEF, SEO_SAVE_BRIEF, mcp};
use scout_host::policy::{Catalog, Platform, catalog::ToolKind};
use scout_manifest::Effect;
use scout_tests::replay_suite::Suite;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 2] = ["seo_save_brief", "seo_hand_off_brief"];

fn suite() -> Suite {
    Suite::of("seo")
}

#[test]
fn the_seo_cases_send_nothing_and_show_the_folder_after_every_write() {
    assert!(
        suite().fixture_files().is_empty(),
        "the SEO brief tools make no request, so there is no fixture to replay"
    );
    let cases = suite().case_list();
    let mut checked_files = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        assert_eq!(
            case["fixtures"],
            serde_json::json!([]),
            "{name}: no request is expected"
        );
        // Every file a case expects, in every case: no status line these
        // tools write is APPROVED.
        for (path, text) in case["expect_files"]["project"]
            .as_object()
            .into_iter()
            .flatten()
        {
            if let Some(text) = text.as_str() {
                let seeded = case["folders"]["project"]["files"][path].as_str();
                if seeded != Some(text) {
                    let first = text.lines().next().unwrap_or_default();
                    assert!(
                        first == "Status: SAVED" || first == "Status: HANDED OFF",
                        "{name}: {path} written with {first:?}"
                    );
                    assert!(!text.contains("APPROVED"), "{name}: {path}");
                }
                checked_files += 1;
            }
        }
        // A refusal by the connector or the folder leaves every seeded file as it was.
        let refused = case["expect"].get("err").is_some();
        if refused && let Some(files) = case["folders"]["project"]["files"].as_object() {
            for (path, text) in files {
                assert_eq!(
                    &case["expect_files"]["project"][path], text,
                    "{name}: a refused call shows {path} unchanged"
                );
            }
        }
    }
    assert!(checked_files >= 10, "cases check the folder after the call");

    let by_tool = |tool: &str, pred: &dyn Fn(&Value) -> bool| {
        cases
            .iter()
            .filter(|c| c["tool"] == tool && pred(c))
            .count()
    };
    let read_only = |c: &Value| c["folders"]["project"]["writable"] == false;
    for tool in TOOLS {
        assert!(
            by_tool(tool, &|c| read_only(c)
                && c["expect"]["err"]["capability"]["kind"] == "denied")
                >= 1,
            "{tool}: a read-only folder refuses it"
        );
        assert!(
            by_tool(tool, &|c| c.get("folders").is_none()
                && c["expect"]["err"]["capability"]["capability"] == "folder")
                >= 1,
            "{tool}: no folder, no call"
        );
        assert!(
            by_tool(tool, &|c| c["arguments"]["name"]
                .as_str()
                .is_some_and(|n| n.contains(".."))
                && c["expect"]["err"]["invalid-input"].is_string())
                >= 1,
            "{tool}: a traversal name is refused"
        );
        assert!(
            by_tool(tool, &|c| c["expect"]["host_error"].is_string()) >= 1,
            "{tool}: ill-typed arguments are the host's refusal"
        );
    }
    assert!(
        by_tool("seo_save_brief", &|c| c["expect"]["err"]["invalid-input"]
            .as_str()
            .is_some_and(|m| m.contains("status line")))
            >= 2
    );
}

#[test]
fn the_seo_component_is_the_seed_s_two_brief_tools_on_a_folder_only() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::SEO))
        .unwrap();
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "seo", "the MCP server is `seo`");
    assert!(manifest.billing.is_none(), "no billing");

    // Exactly the seed's SEO brief tools, by the host's own names.
    let wire: BTreeSet<String> = manifest
        .tools
        .iter()
        .map(|t| manifest.wire_name(&t.function))
        .collect();
    assert_eq!(
        wire,
        TOOLS.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );
    assert_eq!(
        wire,
        Platform::Seo
            .tools()
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
    );
    assert_eq!(
        wire,
        BTreeSet::from([SEO_SAVE_BRIEF.to_string(), SEO_HAND_OFF_BRIEF.to_string()])
    );
    let listed: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(listed, TOOLS);
    for tool in TOOLS {
        let full = mcp("seo", tool);
        assert!(
            matches!(
                Catalog::seed().classify(&full),
                ToolKind::Platform(Platform::Seo, _)
            ),
            "{full}: the seed's SEO brief tool"
        );
    }

    // Reads that propose: grantable (the grant rules decide who gets them),
    // no route, no gate.
    for tool in &manifest.tools {
        let name = manifest.wire_name(&tool.function);
        assert_eq!(tool.effect, Effect::Read, "{name}");
        assert!(
            tool.grantable,
            "{name}: grantable, given by the seo-method grant rule"
        );
        assert!(tool.routes.is_empty(), "{name}: no request at all");
        assert!(tool.gate.is_none() && tool.reads_from.is_empty(), "{name}");
    }

    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "approving or publishing",
            "starting the content writer's run",
            "deleting or renaming briefs",
            "writing anywhere but `briefs/`",
        ]
    );
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "each withheld effect has a real reason"
    );

    // Its only capability besides types and log is the folder: no http, no meter.
    let capabilities: BTreeSet<&str> = c
        .info()
        .capabilities()
        .into_iter()
        .filter(|c| *c != "log")
        .collect();
    assert_eq!(
        capabilities,
        BTreeSet::from(["folder"]),
        "imports: {:?}",
        c.info().imports
    );
    assert!(c.info().forbidden_imports.is_empty());
}
