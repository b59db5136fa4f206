//! The contract's `json` type through a real guest: the agent's schema
//! shows any JSON value, an object reaches the guest as its canonical text
//! (and is what it sends), and text that is not JSON is refused with the
//! argument's path before the guest runs, so nothing reaches the upstream.

use scout_host::{
    CallError, Capabilities, HttpCapability, HttpConfig, LoadedComponent, Runtime, RuntimeConfig,
};
use scout_tests::components;
use scout_tests::upstream::Upstream;
use serde_json::{Value, json};
use std::path::Path;

fn component() -> LoadedComponent {
    let rt = Runtime::new(RuntimeConfig::default()).unwrap();
    rt.load_file(Path::new(components::JSONARGS)).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_argument_reaches_the_guest_canonical_and_bad_json_is_refused_before_it_runs() {
    let upstream = Upstream::start().await;
    let c = component();
    let tool = c.tool("jsonargs_query").expect("the tool is served");
    assert_eq!(
        tool.input_schema["properties"]["filter"],
        json!({"description": "which items, as the upstream's JSON filter, e.g. `{\"property\": \"Status\"}` (any JSON value)"}),
        "any JSON value, not a string"
    );
    assert!(
        tool.input_schema["properties"]["sorts"]
            .get("type")
            .is_none()
    );
    assert_eq!(tool.input_schema["required"], json!(["filter"]));

    let http = HttpCapability::new(HttpConfig::new(upstream.origin()).allow_private_network(true))
        .unwrap();
    let caps = Capabilities::with_http(http);
    let filter = json!({"property": "Status", "and": [{"select": {"equals": "Done"}}, 2.5, null]});
    let outcome = c
        .call("jsonargs_query", &json!({"filter": filter}), &caps)
        .await
        .expect("the call runs");
    let output = serde_json::to_value(&outcome.output).unwrap();
    assert_eq!(
        output,
        json!({"ok": r#"{"and":[{"select":{"equals":"Done"}},2.5,null],"property":"Status"}"#}),
        "the guest received the canonical text"
    );
    assert_eq!(upstream.seen().len(), 1);

    for bad in [
        json!({"filter": "{bad"}),
        json!({"filter": {}, "sorts": "[1,"}),
    ] {
        let refused = c.call("jsonargs_query", &bad, &caps).await;
        let (path, message) = match refused {
            Err(CallError::InvalidArguments { path, message }) => (path, message),
            Err(other) => panic!("{bad}: refused as invalid arguments, not: {other}"),
            Ok(_) => panic!("{bad}: refused, not run"),
        };
        let expected: &str = if bad["sorts"].is_null() {
            "$.filter"
        } else {
            "$.sorts"
        };
        assert_eq!(path, expected, "{bad}: {message}");
        assert!(message.contains("not JSON"), "{message}");
    }
    let seen: Vec<Value> = upstream.seen().iter().map(|s| json!(s.uri)).collect();
    assert_eq!(seen, [json!("/query")], "nothing more reached the upstream");
}
