//! Routes that name their GraphQL root fields, through a real guest that
//! sends whatever body it is given: at the `http` handle, before anything
//! is sent, a body selecting another root field (by name, alias or
//! fragment) or holding a second operation is refused, even in a call
//! whose gate passed a mutation.

use scout_host::{
    Capabilities, HttpCapability, HttpConfig, LoadedComponent, Runtime, RuntimeConfig,
};
use scout_tests::components;
use scout_tests::upstream::Upstream;
use serde_json::{Value, json};
use std::path::Path;

fn component() -> LoadedComponent {
    let rt = Runtime::new(RuntimeConfig::default()).unwrap();
    rt.load_file(Path::new(components::GQLWRITER)).unwrap()
}

fn body(document: &str) -> String {
    json!({"query": document}).to_string()
}

async fn call(c: &LoadedComponent, tool: &str, args: Value, caps: &Capabilities) -> Value {
    let outcome = c.call(tool, &args, caps).await.expect("the call runs");
    serde_json::to_value(&outcome.output).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_is_sent_only_when_its_one_operation_selects_the_routes_root_fields() {
    let upstream = Upstream::start().await;
    let c = component();
    let http = HttpCapability::new(HttpConfig::new(upstream.origin()).allow_private_network(true))
        .unwrap();
    let read = Capabilities::with_http(http.clone());
    // As the boundary grants a write whose gate passed it as a mutation.
    let write = Capabilities {
        graphql_mutations: true,
        ..Capabilities::with_http(http)
    };

    let ok = call(
        &c,
        "gqlwriter_issues",
        json!({"request": body("{ issues { nodes { id } } }")}),
        &read,
    )
    .await;
    assert_eq!(ok, json!({"ok": 200}));
    let refused = call(
        &c,
        "gqlwriter_issues",
        json!({"request": body("{ issues { nodes { id } } viewer { id } }")}),
        &read,
    )
    .await;
    assert!(
        refused.to_string().contains("the body selects viewer"),
        "{refused}"
    );
    assert_eq!(upstream.seen().len(), 1, "the refused read sent nothing");

    let comment =
        |document: &str| json!({"issue-id": "ISS-1", "body": "ok", "request": body(document)});
    let sent = call(
        &c,
        "gqlwriter_create_comment",
        comment("mutation { commentCreate(input: {}) { success } }"),
        &write,
    )
    .await;
    assert_eq!(sent, json!({"ok": 200}));
    assert_eq!(upstream.seen().len(), 2);
    for (document, says) in [
        (
            "mutation { issueDelete(id: \"1\") { success } }",
            "the body selects issueDelete",
        ),
        (
            "mutation { commentCreate: issueDelete(id: \"1\") { success } }",
            "the body selects issueDelete",
        ),
        (
            "fragment F on Mutation { issueDelete(id: \"1\") { success } }\nmutation { commentCreate(input: {}) { success } ...F }",
            "the body selects issueDelete",
        ),
        (
            "mutation A { commentCreate(input: {}) { success } }\nmutation B { issueDelete(id: \"1\") { success } }",
            "the body holds 2",
        ),
    ] {
        let out = call(&c, "gqlwriter_create_comment", comment(document), &write).await;
        assert!(out.to_string().contains(says), "{document}: {out}");
        assert_eq!(upstream.seen().len(), 2, "{document}: nothing sent");
    }
}
