//! The content writer tools' committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test writer.wasm --fixtures connectors/writer/fixtures`.
//! Every tool has passing cases over a fresh project folder per case
//! (`folders`, `expect_files`). What they prove:
//! - a voice guide is saved only as `Status: DRAFT`: a smuggled APPROVED at
//!   its start (any case, spacing, CRLF, zero-width, markdown) is stored as
//!   DRAFT with the exact text shown; one anywhere else, a BOM or a lone CR
//!   is refused with nothing written; an approved guide is never replaced;
//! - a guide is used (`writer_save_draft`) only when its first line is
//!   exactly `Status: APPROVED`; otherwise the draft is refused and no file
//!   is written;
//! - briefs are read only once handed off, in the very text the SEO brief
//!   tools write (checked against the SEO cases);
//! - traversal names are refused with nothing written, a read-only folder
//!   refuses every write with the files unchanged;
//! - `writer_page_content` sends one fixed GraphQL query to the `shopify`
//!   destination and nothing else, from UNVERIFIED fixtures written from
//!   shopify.dev; Shopify's errors map to tool errors.
//!
//! And the component: the seed's five writer tools (the host's
//! `WRITER_TOOLS`), all grantable reads, only `writer_page_content` with a
//! route (`Reads-from: shopify`, `(graphql-query)`), importing `http` and
//! `folder` and no `meter`.

use scout_host::policy::names::{WRITER_TOOLS, mcp};
use scout_host::policy::{Catalog, Platform, catalog::ToolKind};
use scout_manifest::Effect;
use scout_manifest::policy::{GraphqlBody, RouteMethod};
use scout_tests::replay_suite::Suite;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 5] = [
    "writer_read_voice_guide",
    "writer_save_voice_guide",
    "writer_page_content",
    "writer_read_brief",
    "writer_save_draft",
];
const ENDPOINT: &str = "/admin/api/2026-10/graphql.json";

fn suite() -> Suite {
    Suite::of("writer")
}

/// The project folder's seeded files and expected files of a case.
fn seeded<'a>(case: &'a Value, path: &str) -> Option<&'a str> {
    case["folders"]["project"]["files"][path].as_str()
}

fn written(case: &Value) -> Vec<(&String, Option<&str>)> {
    case["expect_files"]["project"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(p, t)| (p, t.as_str()))
        .collect()
}

#[test]
fn every_writer_fixture_is_one_unverified_shopify_query_by_handle() {
    let files = suite().assert_unverified("https://shopify.dev/docs/api/admin-graphql/2026-10", 7);
    for (name, fixture) in &files {
        assert!(
            fixture["source"].as_str().unwrap().contains('#')
                || fixture["source"].as_str().unwrap().contains("/queries/"),
            "{name}"
        );
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            assert_eq!(
                request["destination"], "shopify",
                "{name}: the Shopify connector's origin, never the writer's own"
            );
            assert_eq!(
                (request["method"].as_str(), request["path"].as_str()),
                (Some("POST"), Some(ENDPOINT)),
                "{name}"
            );
            let body = &request["json"];
            let query = body["query"].as_str().expect("a query document");
            assert!(
                query.starts_with("query writerPageContent("),
                "{name}: {query}"
            );
            assert!(!query.to_lowercase().contains("mutation"), "{name}");
            assert_eq!(
                body.as_object().unwrap().len(),
                2,
                "{name}: query and variables only"
            );
            let handle = body["variables"]["identifier"]["handle"]
                .as_str()
                .expect("the handle travels as a variable");
            assert!(
                !query.contains(handle),
                "{name}: the handle is never spliced into the document"
            );
            assert_eq!(body["variables"].as_object().unwrap().len(), 1, "{name}");
        }
    }
    // Only page-content makes requests, and only with arguments it accepts:
    // every other case replays nothing.
    for case in suite().case_list() {
        let refused_early = case["expect"]["err"].get("invalid-input").is_some()
            || case["expect"].get("host_error").is_some();
        if case["tool"] != "writer_page_content" || refused_early {
            assert_eq!(
                case["fixtures"],
                serde_json::json!([]),
                "{}: nothing is sent",
                case["name"]
            );
        }
    }
}

#[test]
fn a_voice_guide_is_saved_only_as_a_draft_and_used_only_when_a_person_approved_it() {
    let cases = suite().case_list();
    let (mut smuggled, mut refused_smuggles, mut drafts, mut unapproved) = (0, 0, 0, 0);
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let tool = case["tool"].as_str().unwrap();
        let ok = case["expect"].get("ok").is_some();
        for (path, text) in written(case) {
            let Some(text) = text else { continue };
            if seeded(case, path) == Some(text) {
                continue;
            }
            // A file these tools wrote: its first line is DRAFT, and no other
            // line reads as a status line.
            let mut lines = text.lines();
            assert_eq!(lines.next(), Some("Status: DRAFT"), "{name}: {path}");
            for line in lines {
                let start = line
                    .trim_start_matches(|c: char| !c.is_alphabetic())
                    .to_lowercase();
                assert!(
                    !start.starts_with("status"),
                    "{name}: {path} holds {line:?}"
                );
                assert!(!line.contains("APPROVED"), "{name}: {path} holds {line:?}");
            }
            assert!(
                path == "voice-guide.md" || path.starts_with("drafts/"),
                "{name}: wrote {path}"
            );
        }
        if tool == "writer_save_voice_guide" {
            let text = case["arguments"]["text"].as_str().unwrap_or_default();
            if text.contains("APPROVED") || text.to_lowercase().contains("status") {
                if ok {
                    assert!(
                        case["expect"]["ok"]["dropped-status-line"].is_string(),
                        "{name}"
                    );
                    assert!(
                        written(case).iter().any(|(p, t)| *p == "voice-guide.md"
                            && t.is_some_and(|t| t.starts_with("Status: DRAFT\n"))),
                        "{name}"
                    );
                    smuggled += 1;
                } else {
                    refused_smuggles += 1;
                    let before = seeded(case, "voice-guide.md");
                    assert!(
                        written(case)
                            .iter()
                            .any(|(p, t)| *p == "voice-guide.md" && *t == before),
                        "{name}: the guide is as it was"
                    );
                }
            }
        }
        if tool == "writer_save_draft" && case.get("folders").is_some() {
            let guide = seeded(case, "voice-guide.md");
            let approved = guide.is_some_and(|g| g.starts_with("Status: APPROVED\n"));
            if ok {
                assert!(
                    approved,
                    "{name}: copy is saved only with an approved guide"
                );
                drafts += 1;
            } else if !approved {
                let err = &case["expect"]["err"]["refused"];
                assert!(
                    err.as_str().is_some_and(|m| m.contains("voice guide")),
                    "{name}: {err}"
                );
                assert!(
                    written(case)
                        .iter()
                        .any(|(p, t)| p.starts_with("drafts/") && t.is_none()),
                    "{name}: no draft written"
                );
                unapproved += 1;
            }
        }
    }
    assert!(
        smuggled >= 4,
        "smuggled status lines stored as DRAFT: {smuggled}"
    );
    assert!(
        refused_smuggles >= 3,
        "status lines refused: {refused_smuggles}"
    );
    assert!(
        drafts >= 2 && unapproved >= 4,
        "drafts {drafts}, refused for the guide {unapproved}"
    );

    // Refusals of every writing tool on a read-only folder, on traversal names
    // and without a folder.
    let count = |tool: &str, pred: &dyn Fn(&Value) -> bool| {
        cases
            .iter()
            .filter(|c| c["tool"] == tool && pred(c))
            .count()
    };
    for tool in ["writer_save_voice_guide", "writer_save_draft"] {
        assert!(
            count(tool, &|c| c["folders"]["project"]["writable"] == false
                && c["expect"]["err"]["capability"]["kind"] == "denied")
                >= 1,
            "{tool}"
        );
    }
    for tool in [
        "writer_read_voice_guide",
        "writer_save_voice_guide",
        "writer_read_brief",
        "writer_save_draft",
    ] {
        assert!(
            count(tool, &|c| c.get("folders").is_none()
                && c["expect"]["err"]["capability"]["capability"] == "folder")
                >= 1,
            "{tool}"
        );
    }
    for tool in [
        "writer_page_content",
        "writer_read_brief",
        "writer_save_draft",
    ] {
        let traversal = |c: &Value| {
            c["arguments"]
                .as_object()
                .unwrap()
                .values()
                .any(|v| v.as_str().is_some_and(|s| s.contains("..")))
        };
        assert!(
            count(tool, &|c| traversal(c)
                && c["expect"]["err"]["invalid-input"].is_string())
                >= 1,
            "{tool}: a traversal name is refused"
        );
    }
    for tool in TOOLS {
        assert!(
            count(tool, &|c| c["expect"]["host_error"].is_string()) >= 1,
            "{tool}: ill-typed arguments are the host's refusal"
        );
    }
}

#[test]
fn the_writer_reads_briefs_exactly_as_the_seo_brief_tools_hand_them_off() {
    // Every brief text the writer cases seed as handed off is one the SEO
    // cases show `seo_hand_off_brief` writing.
    let handed_off: BTreeSet<String> = Suite::of("seo")
        .case_list()
        .iter()
        .filter(|c| c["tool"] == "seo_hand_off_brief" && c["expect"].get("ok").is_some())
        .flat_map(|c| {
            written(c)
                .into_iter()
                .filter_map(|(_, t)| t.map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut read = 0;
    for case in suite()
        .case_list()
        .iter()
        .filter(|c| c["tool"] == "writer_read_brief" || c["tool"] == "writer_save_draft")
    {
        for (path, text) in case["folders"]["project"]["files"]
            .as_object()
            .into_iter()
            .flatten()
        {
            let text = text.as_str().unwrap();
            if path.starts_with("briefs/") && text.starts_with("Status: HANDED OFF\n") {
                assert!(
                    handed_off.contains(text),
                    "{}: {path} is not a text seo_hand_off_brief writes",
                    case["name"]
                );
                read += 1;
            }
        }
    }
    assert!(read >= 3);
}

#[test]
fn the_writer_component_is_the_seed_s_five_opt_in_tools_beside_shopify() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::WRITER))
        .unwrap();
    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "writer", "the MCP server is `writer`");
    assert!(manifest.billing.is_none(), "no billing");

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
        WRITER_TOOLS
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
    );
    assert_eq!(
        wire,
        Platform::Writer
            .tools()
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
    );
    let listed: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(listed, TOOLS);
    let catalog = Catalog::seed();
    for tool in TOOLS {
        let full = mcp("writer", tool);
        assert!(
            matches!(catalog.classify(&full), ToolKind::OptIn(o, _) if o.beside == "shopify"),
            "{full}: an opt-in tool beside Shopify"
        );
    }

    for tool in &manifest.tools {
        let name = manifest.wire_name(&tool.function);
        assert_eq!(
            tool.effect,
            Effect::Read,
            "{name}: a specialist reads and proposes"
        );
        assert!(tool.grantable, "{name}: in the read table");
        assert!(tool.gate.is_none(), "{name}");
        if name == "writer_page_content" {
            assert_eq!(tool.reads_from, ["shopify"], "{name}");
            assert_eq!(tool.routes.len(), 1, "{name}");
            let route = &tool.routes[0];
            assert_eq!(route.destination.as_deref(), Some("shopify"), "{name}");
            assert_eq!(
                (route.method, route.path.as_str()),
                (RouteMethod::Post, ENDPOINT),
                "{name}"
            );
            assert_eq!(
                route.graphql,
                Some(GraphqlBody::QueriesOnly),
                "{name}: the host sends queries only"
            );
            assert!(route.read_only, "{name}");
        } else {
            assert!(tool.routes.is_empty(), "{name}: folder only, no request");
            assert!(tool.reads_from.is_empty(), "{name}");
        }
    }

    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "writing to the store",
            "approving the voice guide",
            "deleting or renaming files in the project folder",
            "other store data",
            "writing briefs",
        ]
    );
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "each withheld effect has a real reason"
    );

    let capabilities: BTreeSet<&str> = c
        .info()
        .capabilities()
        .into_iter()
        .filter(|c| *c != "log")
        .collect();
    assert_eq!(
        capabilities,
        BTreeSet::from(["folder", "http"]),
        "no meter: imports {:?}",
        c.info().imports
    );
    assert!(c.info().forbidden_imports.is_empty());
}
