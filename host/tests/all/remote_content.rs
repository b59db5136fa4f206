//! A remote MCP server's resources, resource templates and prompts behind
//! the boundary (issue 55 item 3), through the real `serve` binary: a
//! server on the official Python SDK that counts what reaches it
//! (`tests/mcp_client/content_server.py`), and the MCP project's reference
//! `server-everything`.
//!
//! What must hold: each is a candidate, offered to no session until an
//! operator reviews it as it is now; a prompt is flagged as text for the
//! model; a reviewed resource, a URI its reviewed template covers and a
//! reviewed prompt are read upstream, traced and marked untrusted; a URI
//! or prompt not reviewed is refused in the boundary's words and nothing
//! reaches the server; a changed prompt is held; a read-only route is
//! handed none of it.

use super::common::EVENTUALLY;
use super::crash_safety::{Admin, Mcp, wait_for};
use super::remote_mcp::{Server, python_fixture, review, tool};
use crate::common;
use reqwest::Method;
use scout_host::store::TraceState;
use serde_json::{Value, json};
use std::path::Path;

fn write_config(dir: &Path, connector: &str, port: u16) -> std::path::PathBuf {
    scout_tests::serve::write_config(
        dir,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\ndeployment_owner_brand = \"acme\"\n\
             [connectors.{connector}]\nmcp = \"http://127.0.0.1:{port}/mcp\"\ncredential = \"none\"\n\
             allow_private_network = true\ndiscover_every_secs = 1\n"
        ),
    )
}

/// `connector`'s resources, templates and prompts as `GET /v1/reviews`
/// shows them, once `ready` holds of them.
async fn content(admin: &Admin, connector: &str, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    wait_for(
        "the remote server's resources and prompts to be listed",
        EVENTUALLY,
        async || {
            let (status, body) = admin.request(Method::GET, "/v1/reviews", None).await;
            assert_eq!(status, 200, "{body}");
            let items = body["content"][connector].as_array().cloned()?;
            ready(&items).then_some(items)
        },
    )
    .await
}

fn item<'a>(items: &'a [Value], kind: &str, name: &str) -> &'a Value {
    items
        .iter()
        .find(|c| c["kind"] == kind && c["item"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}: {items:?}"))
}

async fn review_item(admin: &Admin, connector: &str, item: &Value) -> (u16, Value) {
    let body = json!({"connector": connector, "kind": item["kind"], "item": item["item"], "digest": item["digest"]});
    admin.request(Method::POST, "/v1/reviews", Some(body)).await
}

/// Reviews every resource, template and prompt `connector`'s server lists
/// as it is now (the conformance run's operator does).
pub(super) async fn review_all(admin: &Admin, connector: &str) {
    for item in content(admin, connector, |items| !items.is_empty()).await {
        let (status, answer) = review_item(admin, connector, &item).await;
        assert_eq!(status, 200, "{answer}");
    }
}

async fn session(admin: &Admin, role: &str) -> Value {
    let (status, view) = admin
        .request(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": role})),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    view
}

/// The names (or URIs) a list answer holds under `key`.
async fn names(mcp: &Mcp, method: &str, key: &str, field: &str) -> Vec<String> {
    let answer = mcp.request(method, json!({})).await.expect(method);
    let mut names: Vec<String> = answer["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("{method}: {answer}"))
        .iter()
        .map(|i| i[field].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    names
}

async fn read(mcp: &Mcp, uri: &str) -> Value {
    mcp.request("resources/read", json!({"uri": uri}))
        .await
        .expect("an answer")
}

fn refused_as_not_offered(answer: &Value) -> bool {
    answer["error"]["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("permission_denied"))
        && answer["error"]["data"]["reason"] == "not_offered"
}

async fn fixture_stats(server: &Server) -> Value {
    let text = reqwest::get(format!("http://127.0.0.1:{}/stats", server.port))
        .await
        .expect("GET /stats")
        .text()
        .await
        .expect("the stats");
    serde_json::from_str(&text).expect("stats JSON")
}

#[tokio::test]
async fn a_remote_servers_resources_and_prompts_are_offered_only_as_an_operator_reviewed_them() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = python_fixture(
        dir.path(),
        "content_server.py",
        "content",
        &[],
        "the content MCP server",
    )
    .await;
    let config = write_config(dir.path(), "notes", upstream.port);
    let serve = common::serve(&config).start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    let items = content(&admin, "notes", |items| items.len() >= 5).await;
    // Each kind is a candidate, new until reviewed; a prompt is flagged
    // as text addressed to the model.
    assert!(items.iter().all(|c| c["status"] == "new"), "{items:?}");
    let summarize = item(&items, "prompt", "summarize");
    assert!(
        summarize["flags"]
            .as_array()
            .unwrap()
            .contains(&json!("text_for_the_model")),
        "{summarize}"
    );
    assert_eq!(
        summarize["described"]["arguments"][0]["name"], "topic",
        "{summarize}"
    );
    item(&items, "resource", "notes://readme");
    item(&items, "resource_template", "notes://item/{id}");

    // The session is given the server (its tool reviewed): still nothing
    // of its resources or prompts is offered before their review, though
    // the endpoint declares both.
    let tools = super::remote_mcp::listed(&admin, "notes").await;
    review(&admin, "notes", tool(&tools, "lookup"), "read").await;
    let view = session(&admin, "person-chat").await;
    let declared = initialize_capabilities(&http, &view, "notes").await;
    assert!(
        declared["resources"].is_object() && declared["prompts"].is_object(),
        "{declared}"
    );
    assert!(declared["resources"]["subscribe"] != true, "{declared}");
    let mcp = Mcp::for_connector(&http, &view, "notes").connect().await;
    assert!(
        names(&mcp, "resources/list", "resources", "uri")
            .await
            .is_empty()
    );
    assert!(
        names(&mcp, "prompts/list", "prompts", "name")
            .await
            .is_empty()
    );
    let early = read(&mcp, "notes://readme").await;
    assert!(refused_as_not_offered(&early), "{early}");

    // A review says the kind; a resource is read, never written; a digest
    // from before a change is stale.
    let readme = item(&items, "resource", "notes://readme");
    let bad = [
        (
            json!({"connector": "notes", "kind": "resource", "item": "notes://readme", "digest": readme["digest"], "effect": "write"}),
            422,
        ),
        (
            json!({"connector": "notes", "kind": "resource", "item": "notes://readme", "digest": "sha256:00"}),
            409,
        ),
        (
            json!({"connector": "notes", "kind": "scroll", "item": "notes://readme", "digest": readme["digest"]}),
            422,
        ),
        (
            json!({"connector": "notes", "kind": "resource", "item": "notes://nowhere", "digest": readme["digest"]}),
            404,
        ),
    ];
    for (body, expected) in bad {
        let (status, answer) = admin
            .request(Method::POST, "/v1/reviews", Some(body.clone()))
            .await;
        assert_eq!(status, expected, "{body} -> {answer}");
    }
    for (kind, name) in [
        ("resource", "notes://readme"),
        ("resource_template", "notes://item/{id}"),
        ("prompt", "summarize"),
    ] {
        let (status, answer) = review_item(&admin, "notes", item(&items, kind, name)).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["kind"], kind, "{answer}");
    }
    let after = content(&admin, "notes", |items| {
        items.iter().filter(|c| c["status"] == "reviewed").count() == 3
    })
    .await;
    assert_eq!(
        item(&after, "resource", "notes://secret")["status"],
        "new",
        "{after:?}"
    );

    // Offered from the next request: exactly what was reviewed.
    assert_eq!(
        names(&mcp, "resources/list", "resources", "uri").await,
        vec!["notes://readme"]
    );
    assert_eq!(
        names(
            &mcp,
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate"
        )
        .await,
        vec!["notes://item/{id}"]
    );
    assert_eq!(
        names(&mcp, "prompts/list", "prompts", "name").await,
        vec!["summarize"]
    );
    let answer = read(&mcp, "notes://readme").await;
    assert_eq!(
        answer["result"]["contents"][0]["text"], "Read me: the notes are kept here.",
        "{answer}"
    );
    assert_eq!(
        answer["result"]["_meta"]["scout/untrusted"], true,
        "{answer}"
    );
    let by_template = read(&mcp, "notes://item/42").await;
    assert_eq!(
        by_template["result"]["contents"][0]["text"], "note number 42",
        "{by_template}"
    );
    let prompt = mcp
        .request(
            "prompts/get",
            json!({"name": "summarize", "arguments": {"topic": "birds"}}),
        )
        .await
        .unwrap();
    assert!(
        prompt["result"]["messages"].to_string().contains("birds"),
        "{prompt}"
    );
    assert_eq!(
        prompt["result"]["_meta"]["scout/untrusted"], true,
        "{prompt}"
    );

    // The same through the official client in stateless mode (2026-07-28).
    let stateless = session(&admin, "person-chat").await;
    let summary = common::client_story(
        "remote_content_stateless.py",
        vec![
            "--url".into(),
            stateless["mcp"]["notes"].as_str().unwrap().into(),
            "--token".into(),
            stateless["token"].as_str().unwrap().into(),
        ],
    )
    .await;
    assert_eq!(summary["resources"], json!(["notes://readme"]), "{summary}");
    assert_eq!(
        summary["templates"],
        json!(["notes://item/{id}"]),
        "{summary}"
    );
    assert_eq!(summary["prompts"], json!(["summarize"]), "{summary}");
    assert_eq!(summary["item"], "note number 7", "{summary}");
    assert!(
        summary["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("owls")),
        "{summary}"
    );
    assert_eq!(summary["readme_meta"]["scout/untrusted"], true, "{summary}");
    assert_eq!(summary["prompt_meta"]["scout/untrusted"], true, "{summary}");
    assert!(
        summary["refused"]
            .as_str()
            .is_some_and(|r| r.contains("permission_denied")),
        "{summary}"
    );

    // Not reviewed: refused, and nothing reaches the server (a fresh
    // session each time: a third refusal would pause one).
    let refusing = session(&admin, "person-chat").await;
    let refusing = Mcp::for_connector(&http, &refusing, "notes")
        .connect()
        .await;
    let secret = read(&refusing, "notes://secret").await;
    assert!(refused_as_not_offered(&secret), "{secret}");
    let outside = read(&refusing, "notes://item/4/2").await;
    assert!(refused_as_not_offered(&outside), "{outside}");
    let other = session(&admin, "person-chat").await;
    let other = Mcp::for_connector(&http, &other, "notes").connect().await;
    let unreviewed = other
        .request("prompts/get", json!({"name": "other"}))
        .await
        .unwrap();
    assert!(refused_as_not_offered(&unreviewed), "{unreviewed}");
    let stats = fixture_stats(&upstream).await;
    assert_eq!(
        stats["read"],
        json!([
            "notes://readme",
            "notes://item/42",
            "notes://readme",
            "notes://item/7"
        ]),
        "{stats}"
    );
    assert_eq!(
        stats["prompts"],
        json!(["summarize", "summarize"]),
        "{stats}"
    );

    // Traced: the requests, the refusals, and each read's pass and size.
    let trace = admin.trace("acme").await;
    let reads: Vec<_> = trace
        .iter()
        .filter(|e| e.tool.as_deref() == Some("mcp__notes__resources/read"))
        .collect();
    let count = |state: TraceState| reads.iter().filter(|e| e.state == state).count();
    assert_eq!(count(TraceState::Requested), 8, "{reads:?}");
    assert_eq!(count(TraceState::PermissionDenied), 4, "{reads:?}");
    assert_eq!(count(TraceState::Allowed), 4, "{reads:?}");
    let results: Vec<_> = reads
        .iter()
        .filter(|e| e.state == TraceState::Result)
        .collect();
    assert_eq!(results.len(), 4, "{reads:?}");
    assert!(
        results.iter().all(|e| e.detail["bytes"].as_u64() > Some(0)
            && e.detail["http"]
                .as_array()
                .is_some_and(|h| h.iter().any(|r| r["status"] == 200))),
        "{results:?}"
    );
    let allowed = reads
        .iter()
        .find(|e| e.state == TraceState::Allowed)
        .unwrap();
    assert_eq!(allowed.detail["kind"], "resource", "{:?}", allowed.detail);

    // A read-only route is not handed the server at all (its role covers
    // no connector's tools): no endpoint, so none of its resources either.
    let read_only = session(&admin, "read-only").await;
    assert!(read_only["mcp"]["notes"].is_null(), "{read_only}");
    assert!(read_only["left_out"]["notes"].is_string(), "{read_only}");

    // The server changes its prompt: held until reviewed again.
    let drifted = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{}/drift", upstream.port))
        .send()
        .await
        .unwrap();
    assert_eq!(drifted.status().as_u16(), 200);
    let changed = content(&admin, "notes", |items| {
        items
            .iter()
            .any(|c| c["item"] == "summarize" && c["status"] == "changed")
    })
    .await;
    let summarize = item(&changed, "prompt", "summarize");
    assert!(
        summarize["flags"]
            .as_array()
            .unwrap()
            .contains(&json!("addressed_to_the_model")),
        "{summarize}"
    );
    assert!(
        names(&mcp, "prompts/list", "prompts", "name")
            .await
            .is_empty()
    );
    let held = mcp
        .request(
            "prompts/get",
            json!({"name": "summarize", "arguments": {"topic": "cats"}}),
        )
        .await
        .unwrap();
    assert!(refused_as_not_offered(&held), "{held}");
    assert_eq!(
        fixture_stats(&upstream).await["prompts"],
        json!(["summarize", "summarize"])
    );
    drop(serve);
}

/// The capabilities `initialize` declares on `view`'s endpoint for `connector`.
async fn initialize_capabilities(http: &reqwest::Client, view: &Value, connector: &str) -> Value {
    let url = view["mcp"][connector].as_str().unwrap();
    let token = view["token"].as_str().unwrap();
    let text = http
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "remote-content", "version": "0"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let message: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain([text.as_str()])
        .find_map(|l| serde_json::from_str(l.trim()).ok())
        .unwrap_or_else(|| panic!("{text}"));
    message["result"]["capabilities"].clone()
}

/// A server process of this test's, killed when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn server_everythings_resources_and_prompts_are_candidates_and_read_once_reviewed() {
    let (child, port) = tokio::task::spawn_blocking(scout_tests::start_server_everything)
        .await
        .unwrap();
    let _upstream = KillOnDrop(child);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "everything", port);
    let serve = common::serve(&config).start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    let items = content(&admin, "everything", |items| {
        ["resource", "resource_template", "prompt"]
            .iter()
            .all(|kind| items.iter().any(|c| c["kind"] == *kind))
    })
    .await;
    assert!(items.iter().all(|c| c["status"] == "new"), "{items:?}");
    assert!(
        items
            .iter()
            .filter(|c| c["kind"] == "prompt")
            .all(|c| c["flags"]
                .as_array()
                .unwrap()
                .contains(&json!("text_for_the_model"))),
        "{items:?}"
    );
    let tools = super::remote_mcp::listed(&admin, "everything").await;
    review(&admin, "everything", tool(&tools, "echo"), "read").await;
    let view = session(&admin, "person-chat").await;
    let mcp = Mcp::for_connector(&http, &view, "everything")
        .connect()
        .await;
    assert!(
        names(&mcp, "resources/list", "resources", "uri")
            .await
            .is_empty()
    );

    // One resource, one template and one prompt without arguments, reviewed.
    let resource = items.iter().find(|c| c["kind"] == "resource").unwrap();
    let template = items
        .iter()
        .find(|c| c["kind"] == "resource_template")
        .unwrap();
    let prompt = items
        .iter()
        .find(|c| {
            c["kind"] == "prompt"
                && c["described"]["arguments"]
                    .as_array()
                    .is_none_or(|a| a.iter().all(|arg| arg["required"] != true))
        })
        .unwrap_or_else(|| panic!("a prompt without required arguments: {items:?}"));
    for reviewed in [resource, template, prompt] {
        let (status, answer) = review_item(&admin, "everything", reviewed).await;
        assert_eq!(status, 200, "{answer}");
    }
    let uri = resource["item"].as_str().unwrap();
    assert_eq!(
        names(&mcp, "resources/list", "resources", "uri").await,
        vec![uri.to_string()]
    );
    let answer = read(&mcp, uri).await;
    let contents = answer["result"]["contents"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"));
    assert!(
        !contents.is_empty() && contents[0]["uri"] == uri,
        "{answer}"
    );
    assert_eq!(
        answer["result"]["_meta"]["scout/untrusted"], true,
        "{answer}"
    );
    let got = mcp
        .request("prompts/get", json!({"name": prompt["item"]}))
        .await
        .unwrap();
    assert!(
        got["result"]["messages"]
            .as_array()
            .is_some_and(|m| !m.is_empty()),
        "{got}"
    );
    drop(serve);
}
