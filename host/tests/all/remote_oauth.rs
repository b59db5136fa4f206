//! The host's OAuth client for remote MCP servers as the current MCP
//! authorization specification has it (issue 55, item 5), through the real
//! `serve` binary against an authorization server built on the official
//! Python SDK (`tests/mcp_client/oauth_server.py`): a token answer without
//! a refresh token, the token endpoint's client authentication, the
//! host's client ID metadata document. What the whole flow does with a
//! refresh grant is `remote_mcp`'s
//! `a_person_connects_a_brand_by_oauth_and_the_host_keeps_the_token_alive`.

use super::crash_safety::{Admin, Mcp, ok_text, result_text};
use super::remote_mcp::{Server, call, listed, python_fixture, review, stats, tool};
use crate::common;
use reqwest::Method;
use serde_json::{Value, json};
use std::path::Path;

/// The SDK's OAuth-protected server with `args` (`--no-refresh`, ...).
async fn oauth_server(dir: &Path, args: &[&str]) -> Server {
    python_fixture(
        dir,
        "oauth_server.py",
        "oauth",
        args,
        "the OAuth MCP server",
    )
    .await
}

/// `serve` fronting the server on `port` as connector `tracker`, with
/// `settings` (top-level TOML lines).
fn front(dir: &Path, port: u16, settings: &str) -> (scout_tests::ServeProcess, Admin, String) {
    let mcp_url = format!("http://127.0.0.1:{port}/mcp");
    let config = scout_tests::serve::write_config(
        dir,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\ndeployment_owner_brand = \"acme\"\n{settings}[connectors.tracker]\nmcp = \"{mcp_url}\"\ncredential = \"bearer\"\nallow_private_network = true\n"
        ),
    );
    let serve = common::serve(&config).start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    (serve, admin, mcp_url)
}

fn query_of(url: &str) -> std::collections::HashMap<String, String> {
    url::Url::parse(url)
        .unwrap_or_else(|e| panic!("{url}: {e}"))
        .query_pairs()
        .into_owned()
        .collect()
}

/// A person's "Connect" with `body`: started, allowed at the authorization
/// page (the fixture allows at once) and completed at the callback. The
/// admin API's answer to the start.
async fn connect(admin: &Admin, body: Value) -> Value {
    let (status, started) = admin
        .request(
            Method::POST,
            "/v1/brands/acme/connections/tracker/authorize",
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let allowed = browser
        .get(started["authorization_url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert!(allowed.status().is_redirection(), "{}", allowed.status());
    let back = allowed.headers()["location"].to_str().unwrap().to_string();
    let done = browser.get(&back).send().await.unwrap();
    let status = done.status();
    let page = done.text().await.unwrap();
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("connected to tracker"), "{page}");
    started
}

/// The brand's connection to `tracker` as the admin API lists it.
async fn connection(admin: &Admin) -> Value {
    let (status, body) = admin
        .request(Method::GET, "/v1/brands/acme/connections", None)
        .await;
    assert_eq!(status, 200, "{body}");
    body["connections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["connector"] == "tracker")
        .cloned()
        .unwrap_or(Value::Null)
}

/// An authorization server that issues access tokens alone (the MCP
/// conformance suite's does): the connection holds the access token and
/// calls use it; once it expires the call is refused with "reconnect", the
/// server hears nothing, no token endpoint is asked, the trace says so and the admin API's connection list says what to do.
#[tokio::test]
async fn a_token_without_a_refresh_token_is_used_until_it_expires_then_reconnect_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = oauth_server(dir.path(), &["--no-refresh", "--access-lifetime", "4"]).await;
    let (_serve, admin, _) = front(dir.path(), upstream.port, "");
    connect(&admin, json!({})).await;
    let seen = stats(&upstream).await;
    assert_eq!(seen["code_exchanges"], 1, "{seen}");
    assert_eq!(seen["issued"].as_array().unwrap().len(), 1, "{seen}");
    let shown = connection(&admin).await;
    assert!(shown.is_object(), "connected: {shown}");
    assert!(shown.get("state").is_none(), "{shown}");

    let reviews = listed(&admin, "tracker").await;
    review(&admin, "tracker", tool(&reviews, "whoami"), "read").await;
    let http = reqwest::Client::new();
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "tracker").connect().await;
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert!(
        ok_text(&who).is_some_and(|t| t.starts_with("signed in as client")),
        "{who}"
    );

    tokio::time::sleep(std::time::Duration::from_millis(4200)).await;
    let before = stats(&upstream).await;
    let expired = call(&mcp, "whoami", json!({})).await.unwrap();
    let text = result_text(&expired);
    assert!(
        expired["result"]["isError"] == true && text.contains("expired: reconnect"),
        "{expired}"
    );
    let after = stats(&upstream).await;
    assert_eq!(
        after["calls"]["whoami"], before["calls"]["whoami"],
        "{after}"
    );
    assert_eq!(after["refreshes"], 0, "{after}");
    assert_eq!(
        after["token_auth"].as_array().unwrap().len(),
        1,
        "only the code exchange asked the token endpoint: {after}"
    );
    let trace = admin.trace("acme").await;
    assert!(
        trace.iter().any(|e| {
            e.tool.as_deref() == Some("mcp__tracker__whoami")
                && e.detail["host_error"]
                    .as_str()
                    .is_some_and(|h| h.contains("expired: reconnect"))
        }),
        "the trace says the token expired: {trace:?}"
    );
    let shown = connection(&admin).await;
    assert!(
        shown["state"]
            .as_str()
            .is_some_and(|s| s.contains("expired: reconnect")),
        "{shown}"
    );

    // Connecting again makes it usable again.
    connect(&admin, json!({})).await;
    assert!(connection(&admin).await.get("state").is_none());
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert!(ok_text(&who).is_some(), "{who}");
}

/// The token endpoint's client authentication follows the authorization
/// server's `token_endpoint_auth_methods_supported` (the SDK's lists
/// `client_secret_post` and `client_secret_basic`): HTTP Basic first, for
/// a client the host registered (code exchange and refreshes alike) and
/// for one the person registered beforehand and gives; the secret never in
/// the form then.
#[tokio::test]
async fn the_token_endpoint_is_asked_with_http_basic_where_the_server_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = oauth_server(dir.path(), &["--access-lifetime", "2"]).await;
    let (_serve, admin, _) = front(dir.path(), upstream.port, "");
    connect(&admin, json!({})).await;
    let seen = stats(&upstream).await;
    assert_eq!(
        seen["registrations"][0]["token_endpoint_auth_method"], "client_secret_basic",
        "{seen}"
    );
    assert_eq!(seen["token_auth"], json!(["client_secret_basic"]), "{seen}");
    // A plain-http host publishes no client metadata document (its URL
    // must be https), so it registered instead.
    let document = reqwest::get(format!("{}/oauth/client-metadata.json", admin.base))
        .await
        .unwrap();
    assert_eq!(document.status(), 404);

    // The host refreshes with HTTP Basic too.
    let reviews = listed(&admin, "tracker").await;
    review(&admin, "tracker", tool(&reviews, "whoami"), "read").await;
    let http = reqwest::Client::new();
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "tracker").connect().await;
    tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert!(ok_text(&who).is_some(), "{who}");
    let seen = stats(&upstream).await;
    assert!(seen["refreshes"].as_u64().unwrap() >= 1, "{seen}");
    assert!(
        seen["token_auth"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a == "client_secret_basic"),
        "{seen}"
    );

    // A client registered beforehand (here through the server's own
    // registration, as a person would on its console) is used as given.
    let callback = format!("{}/v1/oauth/callback", admin.base);
    let registered: Value = http
        .post(format!("http://127.0.0.1:{}/register", upstream.port))
        .json(&json!({
            "redirect_uris": [callback],
            "token_endpoint_auth_method": "client_secret_basic",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let given = json!({"client": {
        "client_id": registered["client_id"],
        "client_secret": registered["client_secret"],
    }});
    let started = connect(&admin, given).await;
    assert_eq!(started["registered_client"], false, "{started}");
    assert_eq!(
        query_of(started["authorization_url"].as_str().unwrap())["client_id"],
        registered["client_id"].as_str().unwrap()
    );
    let seen = stats(&upstream).await;
    assert_eq!(seen["code_exchanges"], 2, "{seen}");
    assert_eq!(
        seen["token_auth"].as_array().unwrap().last().unwrap(),
        "client_secret_basic",
        "{seen}"
    );
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert_eq!(
        ok_text(&who),
        Some(format!(
            "signed in as client {}",
            registered["client_id"].as_str().unwrap()
        )),
        "{who}"
    );
}

/// Where the authorization server takes client ID metadata documents, the
/// host's client ID is the URL of its own document (served, public, at
/// `/oauth/client-metadata.json`, naming that URL and the callback): no
/// registration, a public client (no secret at the token endpoint).
#[tokio::test]
async fn the_hosts_client_metadata_document_url_is_its_client_id_where_the_server_takes_one() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = oauth_server(dir.path(), &["--cimd"]).await;
    let document_url = "https://scout.example.test/oauth/client-metadata.json";
    let (_serve, admin, _) = front(
        dir.path(),
        upstream.port,
        &format!("oauth_client_metadata_url = \"{document_url}\"\n"),
    );
    let http = reqwest::Client::new();
    // The fixture fetches the document from this host, standing in for
    // the URL's own origin.
    http.post(format!("http://127.0.0.1:{}/cimd-origin", upstream.port))
        .body(admin.base.clone())
        .send()
        .await
        .unwrap();
    let callback = format!("{}/v1/oauth/callback", admin.base);
    let answer = http
        .get(format!("{}/oauth/client-metadata.json", admin.base))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "public: no admin credential");
    let document: Value = answer.json().await.unwrap();
    assert_eq!(document["client_id"], document_url, "{document}");
    assert_eq!(document["redirect_uris"], json!([callback]), "{document}");
    assert_eq!(document["token_endpoint_auth_method"], "none", "{document}");

    let started = connect(&admin, json!({})).await;
    assert_eq!(started["registered_client"], false, "{started}");
    assert_eq!(
        query_of(started["authorization_url"].as_str().unwrap())["client_id"],
        document_url
    );
    let seen = stats(&upstream).await;
    assert_eq!(seen["registrations"], json!([]), "no registration: {seen}");
    assert_eq!(seen["cimd_fetches"][0]["status"], 200, "{seen}");
    assert_eq!(seen["token_auth"], json!(["none"]), "{seen}");

    let reviews = listed(&admin, "tracker").await;
    review(&admin, "tracker", tool(&reviews, "whoami"), "read").await;
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "tracker").connect().await;
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert_eq!(
        ok_text(&who),
        Some(format!("signed in as client {document_url}")),
        "{who}"
    );
}

/// Step-up: a server whose `tools/call` needs a scope the token lacks
/// answers 403 `insufficient_scope` naming it. The call is refused saying
/// the connection needs more scope and what to do, nothing is retried, the
/// admin API's connection list says so; the person's next Connect asks
/// for the scopes held and the one named, and the call then runs.
#[tokio::test]
async fn a_call_refused_for_want_of_scope_asks_a_person_to_connect_again_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = oauth_server(dir.path(), &["--call-scope", "tracker:write"]).await;
    let (_serve, admin, _) = front(dir.path(), upstream.port, "");
    connect(&admin, json!({})).await;
    let reviews = listed(&admin, "tracker").await;
    review(&admin, "tracker", tool(&reviews, "whoami"), "read").await;
    let http = reqwest::Client::new();
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "tracker").connect().await;
    let refused = call(&mcp, "whoami", json!({})).await.unwrap();
    let text = result_text(&refused);
    assert!(
        refused["result"]["isError"] == true
            && text.contains("the connection needs more scope: tracker:write")
            && text.contains("connects it again"),
        "{refused}"
    );
    let seen = stats(&upstream).await;
    assert_eq!(
        seen["insufficient_scope"], 1,
        "asked once, not retried: {seen}"
    );
    assert!(seen["calls"].get("whoami").is_none(), "{seen}");
    let shown = connection(&admin).await;
    assert_eq!(
        shown["state"], "the connection needs more scope: tracker:write",
        "{shown}"
    );

    let started = connect(&admin, json!({})).await;
    let asked = query_of(started["authorization_url"].as_str().unwrap());
    assert_eq!(asked["scope"], "tracker:write", "{asked:?}");
    assert!(connection(&admin).await.get("state").is_none());
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert!(ok_text(&who).is_some(), "{who}");
}

/// A server as MCP 2025-03-26 had it, publishing no protected resource
/// metadata: its own origin is its authorization server (the metadata
/// there), the token is for the server's URL, and the connection works.
#[tokio::test]
async fn a_server_without_resource_metadata_is_connected_through_its_own_origin() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = oauth_server(dir.path(), &["--no-prm"]).await;
    let (_serve, admin, mcp_url) = front(dir.path(), upstream.port, "");
    let prm = reqwest::get(format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        upstream.port
    ))
    .await
    .unwrap();
    assert_eq!(prm.status(), 404, "the fixture publishes none");
    let started = connect(&admin, json!({})).await;
    assert_eq!(started["resource"], mcp_url.as_str(), "{started}");
    let seen = stats(&upstream).await;
    assert_eq!(seen["code_exchanges"], 1, "{seen}");
    assert_eq!(seen["exchange_resources"], json!([mcp_url]), "{seen}");
    let reviews = listed(&admin, "tracker").await;
    review(&admin, "tracker", tool(&reviews, "whoami"), "read").await;
    let http = reqwest::Client::new();
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "tracker").connect().await;
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert!(ok_text(&who).is_some(), "{who}");
}

/// Every request of Connect goes through the host's guarded client and
/// address rules: a server (and so its authorization server) on a private
/// or loopback address is refused unless its connector allows that, and
/// nothing is sent to it.
#[tokio::test]
async fn connect_sends_nothing_to_a_private_address_the_connector_does_not_allow() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = oauth_server(dir.path(), &[]).await;
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\ndeployment_owner_brand = \"acme\"\n[connectors.tracker]\nmcp = \"http://127.0.0.1:{}/mcp\"\ncredential = \"bearer\"\n",
            upstream.port
        ),
    );
    let serve = common::serve(&config).start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    let (status, body) = admin
        .request(
            Method::POST,
            "/v1/brands/acme/connections/tracker/authorize",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 502, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("refused") && message.contains("allow_private_network"),
        "{body}"
    );
    let seen = stats(&upstream).await;
    assert_eq!(
        seen["unauthorized"], 0,
        "nothing reached the server: {seen}"
    );
    assert_eq!(seen["registrations"], json!([]), "{seen}");
}
