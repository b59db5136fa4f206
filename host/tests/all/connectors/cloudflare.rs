//! The Cloudflare connector's committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test cloudflare.wasm --fixtures
//! connectors/cloudflare/fixtures`. Every tool has a passing case; every
//! fixture says it was written from Cloudflare's documentation (UNVERIFIED),
//! never recorded (CLOUDFLARE_UNVERIFIED.live_handshake); `search` only GETs
//! below /client/v4, `docs` only POSTs JSON-RPC to the documentation
//! server's /mcp; refusals (invalid input and the withheld areas) send
//! nothing; and the component declares exactly what seed 000's catalogue
//! says of Cloudflare: `docs` and `search` never grantable, `execute` asking
//! a person on every call and absent when approvals are off.

use scout_host::policy::{Registers, WriteGate};
use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const TOOLS: [&str; 3] = ["docs", "search", "execute"];

fn suite() -> Suite {
    Suite::of("cloudflare")
}

#[test]
fn every_cloudflare_fixture_is_unverified_and_names_its_docs_page() {
    let files = suite().assert_unverified("https://developers.cloudflare.com/", 15);
    for (name, fixture) in &files {
        let source = fixture["source"].as_str().unwrap();
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let (method, path) = (
                request["method"].as_str().unwrap(),
                request["path"].as_str().unwrap(),
            );
            match request["destination"].as_str() {
                Some("docs") => {
                    assert!(
                        source.starts_with(
                            "https://developers.cloudflare.com/agents/model-context-protocol/"
                        ),
                        "{name}: {source}"
                    );
                    assert_eq!((method, path), ("POST", "/mcp"), "{name}");
                    assert_eq!(
                        request["json"]["jsonrpc"], "2.0",
                        "{name}: a JSON-RPC message, matched as json"
                    );
                }
                None => {
                    assert!(
                        source.starts_with("https://developers.cloudflare.com/api/resources/"),
                        "{name}: {source}"
                    );
                    assert!(path.starts_with("/client/v4/"), "{name}: {path}");
                    if method == "GET" || method == "DELETE" {
                        assert!(
                            request.get("json").is_none(),
                            "{name}: a {method} has no body"
                        );
                    } else {
                        assert!(
                            request["json"].is_object(),
                            "{name}: a write's body is matched as json"
                        );
                    }
                }
                Some(other) => panic!("{name}: destination {other} is not one of Cloudflare's"),
            }
        }
    }
}

/// `search` cases only GET; a refusal names no fixture (so any request it
/// made would fail it as a miss); every withheld area has a refusal case.
#[test]
fn search_only_gets_and_refusals_send_nothing() {
    let files = suite().fixture_files();
    let cases = suite().case_list();
    let mut refusals = 0;
    for case in &cases {
        let (tool, name, expect) = (
            case["tool"].as_str().unwrap(),
            case["name"].as_str().unwrap(),
            &case["expect"],
        );
        let err = &expect["err"];
        if err.get("invalid-input").is_some()
            || err.get("refused").is_some()
            || expect.get("host_error").is_some()
        {
            assert_eq!(
                case["fixtures"],
                serde_json::json!([]),
                "{name}: a refusal replays nothing, so it sends nothing"
            );
            refusals += 1;
            continue;
        }
        for (file, fixture) in Suite::fixtures_of(case, &files) {
            for exchange in fixture["exchanges"].as_array().unwrap() {
                let request = &exchange["request"];
                match tool {
                    "search" => assert_eq!(request["method"], "GET", "{name}: {file}"),
                    "docs" => assert_eq!(request["destination"], "docs", "{name}: {file}"),
                    _ => assert!(request.get("destination").is_none(), "{name}: {file}"),
                }
            }
        }
    }
    assert!(refusals >= 30, "only {refusals} refusal cases");
    let refused: Vec<String> = cases
        .iter()
        .filter_map(|c| c["expect"]["err"]["refused"].as_str().map(str::to_string))
        .collect();
    for area in [
        "API tokens and account tokens",
        "credentials the API hands out",
        "Access service tokens",
        "account members and roles",
        "billing details and payments",
        "subscriptions",
        "the registrar",
        "the user's own login",
        "whole zone or account",
    ] {
        assert!(
            refused.iter().any(|m| m.contains(area)),
            "a refusal case for {area:?}"
        );
    }
    for status in [400, 403, 429, 502, 503] {
        assert!(
            cases
                .iter()
                .any(|c| c["expect"]["err"]["upstream"]["status"] == status),
            "a case maps HTTP {status} to upstream"
        );
    }
    assert!(
        cases
            .iter()
            .any(|c| c["expect"]["err"].get("not-found").is_some()),
        "a case maps 404 to not-found"
    );
    for method in ["get", "post", "patch", "delete"] {
        assert!(
            cases.iter().any(|c| c["tool"] == "execute"
                && c["arguments"]["request"]["method"] == method
                && c["expect"].get("ok").is_some()),
            "execute sends a {method}"
        );
    }
}

#[test]
fn the_cloudflare_component_agrees_with_the_seed_catalogue() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::CLOUDFLARE))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    let spec = seed.connector("cloudflare").unwrap();
    assert_eq!(&seed.admit(&c.info().manifest).unwrap(), spec);

    // Never grantable; execute asks a person on every call and is absent
    // when approvals are off.
    assert!(spec.grantable.is_empty());
    assert_eq!(spec.writes.len(), 1);
    assert_eq!(
        (
            &spec.writes[0].name[..],
            &spec.writes[0].registers,
            &spec.writes[0].gate
        ),
        (
            "execute",
            &Registers::WhenApprovalsOn,
            &WriteGate::Approval { needs: None }
        )
    );

    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "cloudflare");
    assert!(manifest.billing.is_none());
    let tools: Vec<&str> = c.info().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, TOOLS, "the seed's bare names, from `Name:` lines");
    for tool in &manifest.tools {
        assert!(
            !tool.grantable,
            "{}: Cloudflare is never grantable",
            tool.function
        );
        let routes: Vec<(Option<&str>, RouteMethod, &str, bool)> = tool
            .routes
            .iter()
            .map(|r| {
                (
                    r.destination.as_deref(),
                    r.method,
                    r.path.as_str(),
                    r.read_only,
                )
            })
            .collect();
        match tool.function.as_str() {
            "docs" => {
                assert_eq!(tool.effect, Effect::Read);
                assert_eq!(routes, [(Some("docs"), RouteMethod::Post, "/mcp", true)]);
            }
            "search" => {
                assert_eq!(tool.effect, Effect::Read);
                assert_eq!(
                    routes,
                    [(None, RouteMethod::Get, "/client/v4/{*path}", false)]
                );
            }
            "execute" => {
                assert_eq!(tool.effect, Effect::Write);
                let methods: Vec<RouteMethod> = routes.iter().map(|r| r.1).collect();
                assert_eq!(
                    methods,
                    [
                        RouteMethod::Get,
                        RouteMethod::Post,
                        RouteMethod::Put,
                        RouteMethod::Patch,
                        RouteMethod::Delete
                    ]
                );
                assert!(
                    routes
                        .iter()
                        .all(|r| r.0.is_none() && r.2 == "/client/v4/{*path}" && !r.3),
                    "{routes:?}"
                );
            }
            other => panic!("unexpected tool {other}"),
        }
    }

    // No WITHHELD row in the seed: what a reviewer expects held back, each with a reason.
    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "API tokens and account tokens",
            "credentials the API hands out",
            "account members and roles",
            "billing and subscriptions",
            "registrar",
            "the user's own login and memberships",
            "creating or deleting whole accounts or zones",
            "uploads that are not JSON",
        ]
    );
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "every withheld effect has a real reason"
    );

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
