//! The AgentMail connector's committed replay cases (DESIGN D9), run through
//! the real binary: `scout-host test agentmail.wasm --fixtures connectors/agentmail/fixtures`.
//! Every tool has a passing case; every fixture says it was written from
//! AgentMail's documentation (UNVERIFIED), never recorded
//! (AGENTMAIL_UNVERIFIED.live_calls); read tools only GET, each write sends
//! its one POST with a JSON body the fixture checks; refusals send nothing;
//! and the component declares exactly what seed 000's catalogue says of
//! AgentMail.

use scout_host::policy::{Registers, WriteGate};
use scout_manifest::Effect;
use scout_manifest::policy::RouteMethod;
use scout_tests::replay_suite::Suite;
use std::collections::BTreeSet;
use std::path::Path;

const READS: [&str; 10] = [
    "agentmail_list_threads",
    "agentmail_search_threads",
    "agentmail_get_thread",
    "agentmail_list_messages",
    "agentmail_search_messages",
    "agentmail_get_message",
    "agentmail_get_attachment",
    "agentmail_whoami",
    "agentmail_list_drafts",
    "agentmail_get_draft",
];
const SENDS: [&str; 4] = [
    "agentmail_send_message",
    "agentmail_reply_to_message",
    "agentmail_forward_message",
    "agentmail_send_draft",
];
const DRAFT: &str = "agentmail_create_draft";

/// Each write tool and the one route it declares.
const WRITE_ROUTES: [(&str, &str); 5] = [
    ("agentmail_create_draft", "/v0/inboxes/{inbox_id}/drafts"),
    (
        "agentmail_send_message",
        "/v0/inboxes/{inbox_id}/messages/send",
    ),
    (
        "agentmail_reply_to_message",
        "/v0/inboxes/{inbox_id}/messages/{message_id}/reply",
    ),
    (
        "agentmail_forward_message",
        "/v0/inboxes/{inbox_id}/messages/{message_id}/forward",
    ),
    (
        "agentmail_send_draft",
        "/v0/inboxes/{inbox_id}/drafts/{draft_id}/send",
    ),
];

fn suite() -> Suite {
    Suite::of("agentmail")
}

fn all_tools() -> BTreeSet<String> {
    READS
        .iter()
        .chain(&SENDS)
        .chain([&DRAFT])
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn every_agentmail_fixture_is_unverified_and_names_its_docs_page() {
    let files = suite().assert_unverified("https://docs.agentmail.to/", 10);
    for (name, fixture) in &files {
        for exchange in fixture["exchanges"].as_array().expect("exchanges") {
            let request = &exchange["request"];
            let path = request["path"].as_str().unwrap();
            assert!(
                path.starts_with("/v0/inboxes"),
                "{name}: {path} is below /v0/inboxes"
            );
            match request["method"].as_str().unwrap() {
                "GET" => assert!(request.get("json").is_none(), "{name}: a GET has no body"),
                "POST" => assert!(
                    request["json"].is_object(),
                    "{name}: a write's request body is matched as json"
                ),
                other => panic!("{name}: {other} {path}: AgentMail's fixtures only GET and POST"),
            }
        }
    }
}

/// Read tools' cases only GET; each write tool's cases POST only its own
/// route; a case that expects `invalid-input` (or a host refusal) names no
/// fixture, so any request it made would fail it as a miss.
#[test]
fn reads_only_get_writes_only_post_and_refusals_send_nothing() {
    let files = suite().fixture_files();
    let mut read_exchanges = 0;
    let mut refusals = 0;
    for case in suite().case_list() {
        let tool = case["tool"].as_str().unwrap();
        let name = case["name"].as_str().unwrap();
        let expect = &case["expect"];
        if expect["err"].get("invalid-input").is_some() || expect.get("host_error").is_some() {
            assert_eq!(
                case["fixtures"],
                serde_json::json!([]),
                "{name}: a refusal replays nothing, so it sends nothing"
            );
            refusals += 1;
            continue;
        }
        for (file, fixture) in Suite::fixtures_of(&case, &files) {
            for exchange in fixture["exchanges"].as_array().unwrap() {
                let method = exchange["request"]["method"].as_str().unwrap();
                if READS.contains(&tool) {
                    assert_eq!(
                        method, "GET",
                        "{name}: {file} holds a {method} for a read tool"
                    );
                    read_exchanges += 1;
                } else {
                    assert_eq!(method, "POST", "{name}: {file}");
                }
            }
        }
    }
    assert!(read_exchanges > 0);
    assert!(refusals >= 20, "only {refusals} refusal cases");
    for needle in [
        "to needs at least one address",
        "is not an AgentMail id",
        "262144-byte cap",
        "is not an inbox address",
    ] {
        assert!(
            suite()
                .case_list()
                .iter()
                .any(|c| c["expect"]["err"]["invalid-input"]
                    .as_str()
                    .is_some_and(|m| m.contains(needle))),
            "a refusal case for {needle:?}"
        );
    }
    for status in [403, 422] {
        assert!(
            suite()
                .case_list()
                .iter()
                .any(|c| c["expect"]["err"]["upstream"]["status"] == status),
            "a case maps HTTP {status} to an upstream error"
        );
    }
    assert!(
        suite()
            .case_list()
            .iter()
            .any(|c| c["expect"]["err"].get("not-found").is_some()),
        "a case maps 404 to not-found"
    );
}

#[test]
fn the_agentmail_component_agrees_with_the_seed_catalogue() {
    let rt = scout_host::Runtime::new(Default::default()).unwrap();
    let c = rt
        .load_file(Path::new(scout_tests::components::AGENTMAIL))
        .unwrap();
    let seed = scout_host::policy::Catalog::seed();
    let spec = seed.connector("agentmail").unwrap();
    assert_eq!(&seed.admit(&c.info().manifest).unwrap(), spec);

    // The seed: create-draft open, the four sends registered by
    // AGENTMAIL_ALLOW_SENDS and approved per call, the ten reads grantable.
    assert_eq!(spec.grantable.len(), READS.len());
    for w in &spec.writes {
        if w.name == DRAFT {
            assert_eq!(
                (&w.registers, &w.gate),
                (&Registers::WithConnector, &WriteGate::Open)
            );
        } else {
            assert!(SENDS.contains(&w.name.as_str()), "{}", w.name);
            assert!(
                matches!(w.registers, Registers::WhenSwitch(ref s) if s.var() == "AGENTMAIL_ALLOW_SENDS"),
                "{}",
                w.name
            );
            assert_eq!(w.gate, WriteGate::Approval { needs: None }, "{}", w.name);
        }
    }

    let manifest = &c.info().manifest;
    assert_eq!(manifest.connector, "agentmail");
    assert!(manifest.billing.is_none(), "no billing");
    let mut seen = BTreeSet::new();
    for tool in &manifest.tools {
        let wire = manifest.wire_name(&tool.function);
        seen.insert(wire.clone());
        assert!(!tool.routes.is_empty(), "{wire}: declares its routes");
        match tool.effect {
            Effect::Read => {
                assert!(READS.contains(&wire.as_str()), "{wire}");
                assert!(tool.grantable, "{wire}: grantable, as the read table says");
                for route in &tool.routes {
                    assert_eq!(
                        route.method,
                        RouteMethod::Get,
                        "{wire}: a read tool only GETs ({})",
                        route.path
                    );
                    assert!(
                        route.path.starts_with("/v0/inboxes"),
                        "{wire}: {}",
                        route.path
                    );
                }
            }
            Effect::Write => {
                assert!(!tool.grantable, "{wire}");
                let expected = WRITE_ROUTES
                    .iter()
                    .find(|(n, _)| *n == wire)
                    .unwrap_or_else(|| panic!("{wire} is not a write tool"));
                assert_eq!(tool.routes.len(), 1, "{wire}: exactly one route");
                assert_eq!(
                    (tool.routes[0].method, tool.routes[0].path.as_str()),
                    (RouteMethod::Post, expected.1),
                    "{wire}"
                );
                assert!(!tool.routes[0].read_only, "{wire}");
            }
        }
    }
    assert_eq!(seen, all_tools());
    // Nothing deletes: no route of any tool is a DELETE, PUT or PATCH.
    assert!(
        manifest
            .tools
            .iter()
            .flat_map(|t| &t.routes)
            .all(|r| matches!(r.method, RouteMethod::Get | RouteMethod::Post))
    );

    // The WITHHELD list of seed 000's "What is never given", each with a reason.
    let withheld: Vec<&str> = manifest
        .withheld
        .iter()
        .map(|w| w.effect.as_str())
        .collect();
    assert_eq!(
        withheld,
        [
            "deleting inboxes",
            "deleting threads",
            "deleting drafts",
            "deleting messages",
            "creating inboxes",
            "changing inboxes",
            "switching organisation",
        ]
    );
    assert!(
        manifest.withheld.iter().all(|w| w.reason.len() > 20),
        "each withheld effect has a real reason"
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
