//! GraphQL routes pinned to the root fields they declare (hardening 3,
//! item 10), through the real `serve` binary: a write tool that says
//! `(graphql: commentCreate)`, approved by a person for its arguments,
//! cannot send `issueDelete`, not under an alias, not through a fragment,
//! not as a second operation; nothing reaches the upstream, and the
//! approval and the trace say which operation and root fields it carries.
//! The test guest sends whatever body it is given, as a compromised
//! connector would.

use crate::common;
use crate::crash_safety::{Admin, Mcp, ok_text, result_text, wait_for};
use reqwest::Method;
use scout_host::store::TraceState;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

fn write_config(dir: &Path, upstream: &str) -> std::path::PathBuf {
    let component = Path::new(scout_tests::components::GQLWRITER)
        .canonicalize()
        .expect("the gqlwriter test guest was built");
    scout_tests::serve::write_config(
        dir,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = {:?}\nrequire_review = false\n\n\
             [connectors.gqlwriter]\ncomponent = {:?}\norigin = {upstream:?}\nallow_private_network = true\n",
            dir.join("scout.db").display().to_string(),
            component.display().to_string(),
        ),
    )
}

/// A GraphQL request body holding `document`.
fn request(document: &str) -> String {
    json!({"query": document, "variables": {}}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graphql_write_carries_only_the_root_fields_its_route_declares() {
    let upstream = scout_tests::upstream::Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let serve = common::serve(&write_config(dir.path(), &upstream.origin())).start();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    let (status, body) = admin
        .request(
            Method::PUT,
            "/v1/brands/acme/connections/gqlwriter",
            Some(json!({"secret": "lin_api_test_secret_0123456789"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let view = admin.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp::for_connector(&http, &view, "gqlwriter")
        .connect()
        .await;

    // A write approved for "a comment on ISS-1": what its body holds decides
    // whether anything is sent.
    let write = async |document: &str| -> (Value, Value) {
        let args =
            json!({"issue-id": "ISS-1", "body": "Looks good to me", "request": request(document)});
        let call = tokio::spawn({
            let mcp = mcp.clone();
            async move {
                mcp.request(
                    "tools/call",
                    json!({"name": "gqlwriter_create_comment", "arguments": args}),
                )
                .await
            }
        });
        let approval = wait_for(
            "the write to wait for a person",
            crate::common::EVENTUALLY,
            async || admin.pending(&session).await.into_iter().next(),
        )
        .await;
        let (status, body) = admin
            .request(
                Method::POST,
                &format!("/v1/approvals/{}", approval["id"]),
                Some(json!({"approve": true, "by": "alice"})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let reply = call.await.unwrap().expect("the write is answered");
        (approval, reply)
    };

    for (case, document, says) in [
        (
            "another root field",
            "mutation { issueDelete(id: \"ISS-1\") { success } }",
            "the body selects issueDelete",
        ),
        (
            "an alias",
            "mutation { commentCreate: issueDelete(id: \"ISS-1\") { success } }",
            "the body selects issueDelete",
        ),
        (
            "a fragment",
            "fragment Also on Mutation { issueDelete(id: \"ISS-1\") { success } }\nmutation { commentCreate(input: {issueId: \"ISS-1\", body: \"ok\"}) { success } ...Also }",
            "the body selects issueDelete",
        ),
        (
            "a second operation",
            "mutation A { commentCreate(input: {issueId: \"ISS-1\", body: \"ok\"}) { success } }\nmutation B { issueDelete(id: \"ISS-1\") { success } }",
            "the body holds 2",
        ),
    ] {
        let (approval, reply) = write(document).await;
        // The person saw what the tool may send, not only its arguments.
        assert_eq!(
            approval["graphql"],
            json!([{"route": "POST /graphql (graphql: commentCreate)",
                    "operation": "mutation or query", "root_fields": ["commentCreate"]}]),
            "{case}: {approval}"
        );
        assert!(ok_text(&reply).is_none(), "{case}: refused: {reply}");
        assert!(result_text(&reply).contains(says), "{case}: {reply}");
        assert!(
            upstream.seen().is_empty(),
            "{case}: nothing reached the upstream: {:?}",
            upstream.seen()
        );
    }

    // The comment it says it writes is sent, once.
    let (_, reply) = write(
        "mutation { commentCreate(input: {issueId: \"ISS-1\", body: \"Looks good to me\"}) { success comment { id } } }",
    )
    .await;
    assert!(ok_text(&reply).is_some(), "{reply}");
    assert_eq!(upstream.seen().len(), 1);

    // A read route names its root fields too.
    let read = async |document: &str| {
        mcp.request(
            "tools/call",
            json!({"name": "gqlwriter_issues", "arguments": {"request": request(document)}}),
        )
        .await
        .expect("the read is answered")
    };
    let listed =
        read("query { issues(first: 5) { nodes { id title } } issue(id: \"ISS-1\") { id } }").await;
    assert!(ok_text(&listed).is_some(), "{listed}");
    assert_eq!(upstream.seen().len(), 2);
    let widened =
        read("query { issues(first: 5) { nodes { id } } viewer { apiKeys { nodes { id } } } }")
            .await;
    assert!(ok_text(&widened).is_none(), "{widened}");
    assert!(
        result_text(&widened).contains("the body selects viewer"),
        "{widened}"
    );
    assert_eq!(upstream.seen().len(), 2, "nothing more was sent");

    // The trace says which operation each request carried.
    let trace = admin.trace("acme").await;
    let exchanges: Vec<&Value> = trace
        .iter()
        .filter(|e| e.session == session && e.state == TraceState::Executed)
        .flat_map(|e| e.detail["http"].as_array().into_iter().flatten())
        .collect();
    let carried: Vec<&str> = exchanges
        .iter()
        .filter_map(|x| x["graphql"].as_str())
        .collect();
    for expected in [
        "mutation issueDelete",
        "mutation commentCreate",
        "query issue, issues",
        "query issues, viewer",
    ] {
        assert!(carried.contains(&expected), "{expected} in {carried:?}");
    }
}
