//! Enterprise-managed authorization for a remote MCP server (SEP-990,
//! ID-JAG), through the real `serve`: the admin API takes the person's
//! identity assertion from the organisation's identity provider, the host
//! exchanges it there (RFC 8693) for an ID-JAG naming the server's
//! authorization server and resource, presents that (RFC 7523 JWT bearer,
//! the client by HTTP Basic) for the server's token, and stores the token
//! as the brand's connection; the server's tools are then listed and called
//! with it. A refused assertion stores nothing and asks nothing further;
//! the assertion, the ID-JAG and the token appear in no answer or log.
//!
//! The identity provider, the authorization server and the MCP server are
//! the test's own (axum, in process, one port), speaking the documented
//! wire format the conformance suite's `auth/cross-app-access-complete-flow`
//! speaks.

use super::crash_safety::{Admin, Mcp, ok_text};
use super::remote_mcp::{call, listed, review, tool};
use crate::common;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use reqwest::Method;
use scout_host::store::TraceState;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const ASSERTION: &str = "id-token-of-alice.signed-by-the-idp.7c1e";
const ID_JAG: &str = "id-jag-for-alice.signed-by-the-idp.90ab";
const ACCESS_TOKEN: &str = "mcp-access-token-for-alice-4f2d";
const IDP_CLIENT: &str = "scout-at-the-idp";
const AS_CLIENT: &str = "scout-at-the-as";
const AS_SECRET: &str = "as-client-secret-e81b";
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// What the fakes were asked.
#[derive(Default)]
struct Seen {
    port: u16,
    exchanges: Vec<HashMap<String, String>>,
    grants: Vec<(HashMap<String, String>, Option<String>)>,
    /// The `Authorization` of every MCP request that carried one.
    mcp_authorizations: Vec<String>,
}

type Shared = Arc<Mutex<Seen>>;

fn base(seen: &Shared) -> String {
    format!("http://127.0.0.1:{}", seen.lock().unwrap().port)
}

async fn protected_resource(State(seen): State<Shared>) -> Response {
    let base = base(&seen);
    axum::Json(json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [format!("{base}/as")],
    }))
    .into_response()
}

async fn authorization_server(State(seen): State<Shared>) -> Response {
    let base = base(&seen);
    axum::Json(json!({
        "issuer": format!("{base}/as"),
        "token_endpoint": format!("{base}/as/token"),
        "grant_types_supported": ["urn:ietf:params:oauth:grant-type:jwt-bearer", "client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    }))
    .into_response()
}

fn oauth_error(code: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"error": code, "error_description": "refused by the test"})),
    )
        .into_response()
}

/// The identity provider's token endpoint: RFC 8693 token exchange only.
async fn idp_token(
    State(seen): State<Shared>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let base = base(&seen);
    seen.lock().unwrap().exchanges.push(form.clone());
    let wanted = [
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        ("requested_token_type", ID_JAG_TYPE),
        (
            "subject_token_type",
            "urn:ietf:params:oauth:token-type:id_token",
        ),
        ("client_id", IDP_CLIENT),
    ];
    if wanted
        .iter()
        .any(|(k, v)| form.get(*k).map(String::as_str) != Some(*v))
        || form.get("audience") != Some(&format!("{base}/as"))
        || form.get("resource") != Some(&format!("{base}/mcp"))
    {
        return oauth_error("invalid_request");
    }
    if form.get("subject_token").map(String::as_str) != Some(ASSERTION) {
        return oauth_error("invalid_grant");
    }
    axum::Json(json!({
        "access_token": ID_JAG,
        "issued_token_type": ID_JAG_TYPE,
        "token_type": "N_A",
        "expires_in": 300,
    }))
    .into_response()
}

/// The authorization server's token endpoint: the JWT bearer grant only,
/// its client by HTTP Basic.
async fn as_token(
    State(seen): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    seen.lock()
        .unwrap()
        .grants
        .push((form.clone(), authorization.clone()));
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{AS_CLIENT}:{AS_SECRET}"))
    );
    if authorization.as_deref() != Some(basic.as_str()) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    match form.get("grant_type").map(String::as_str) {
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {}
        // The deployment's own client: its Basic credentials are the grant.
        Some("client_credentials") => {
            return axum::Json(
                json!({"access_token": ACCESS_TOKEN, "token_type": "Bearer", "expires_in": 3600}),
            )
            .into_response();
        }
        _ => return oauth_error("unsupported_grant_type"),
    }
    if form.get("assertion").map(String::as_str) != Some(ID_JAG) {
        return oauth_error("invalid_grant");
    }
    axum::Json(json!({"access_token": ACCESS_TOKEN, "token_type": "Bearer", "expires_in": 3600}))
        .into_response()
}

/// The MCP server: 401 with its metadata named, unless the token is the one
/// the authorization server issued.
async fn mcp(State(seen): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let base = base(&seen);
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(a) = &authorization {
        seen.lock().unwrap().mcp_authorizations.push(a.clone());
    }
    if authorization.as_deref() != Some(format!("Bearer {ACCESS_TOKEN}").as_str()) {
        let challenge =
            format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
        return (
            StatusCode::UNAUTHORIZED,
            [("www-authenticate", challenge)],
            axum::Json(json!({"error": "invalid_token"})),
        )
            .into_response();
    }
    let message: Value = serde_json::from_str(&body).unwrap_or_default();
    let id = message["id"].clone();
    if id.is_null() {
        return StatusCode::ACCEPTED.into_response();
    }
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "enterprise-test", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "whoami", "description": "Says who the token is for.",
            "inputSchema": {"type": "object", "properties": {}},
        }]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "signed in as alice"}]}),
        _ => json!({}),
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

async fn fakes() -> (u16, Shared) {
    let seen = Shared::default();
    let app = axum::Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            axum::routing::get(protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server/as",
            axum::routing::get(authorization_server),
        )
        .route("/idp/token", axum::routing::post(idp_token))
        .route("/as/token", axum::routing::post(as_token))
        .route("/mcp", axum::routing::post(mcp))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    seen.lock().unwrap().port = port;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (port, seen)
}

/// `serve` fronting the fakes' MCP server as `tracker`, acme the owner.
fn serve_tracker(dir: &std::path::Path, mcp_url: &str) -> (scout_tests::ServeProcess, Admin) {
    let config = scout_tests::serve::write_config(
        dir,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\ndeployment_owner_brand = \"acme\"\n[connectors.tracker]\nmcp = \"{mcp_url}\"\ncredential = \"bearer\"\nallow_private_network = true\ndiscover_every_secs = 1\n"
        ),
    );
    let serve = common::serve(&config).start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    (serve, admin)
}

fn body(port: u16, assertion: &str, token_endpoint: &str) -> Value {
    json!({
        "identity_assertion": assertion,
        "identity_provider": {
            "issuer": format!("http://127.0.0.1:{port}/idp"),
            "token_endpoint": token_endpoint,
            "client_id": IDP_CLIENT,
        },
        "client": {"client_id": AS_CLIENT, "client_secret": AS_SECRET},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_identity_assertion_becomes_the_remote_servers_token_without_an_authorization_page()
 {
    let dir = tempfile::tempdir().unwrap();
    let (port, seen) = fakes().await;
    let mcp_url = format!("http://127.0.0.1:{port}/mcp");
    let (serve, admin) = serve_tracker(dir.path(), &mcp_url);
    let http = admin.http.clone();
    let path = "/v1/brands/acme/connections/tracker/identity-assertion";
    let idp_token = format!("http://127.0.0.1:{port}/idp/token");
    let stored = async || {
        let (_, connections) = admin
            .request(Method::GET, "/v1/brands/acme/connections", None)
            .await;
        connections.to_string().contains("tracker")
    };

    // An identity provider's endpoint a secret may not go to: nothing sent.
    let (status, answer) = admin
        .request(
            Method::POST,
            path,
            Some(body(port, ASSERTION, "http://idp.example.com/token")),
        )
        .await;
    assert_eq!(status, 502, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("must be https"),
        "{answer}"
    );
    assert!(seen.lock().unwrap().exchanges.is_empty());

    // An assertion the identity provider refuses: its error code named,
    // nothing presented to the authorization server, nothing stored.
    let (status, answer) = admin
        .request(
            Method::POST,
            path,
            Some(body(port, "not-alices-token", &idp_token)),
        )
        .await;
    assert_eq!(status, 502, "{answer}");
    assert_eq!(answer["error"]["code"], "oauth_failed", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("invalid_grant"), "{answer}");
    assert!(!message.contains("not-alices-token"), "{answer}");
    assert_eq!(seen.lock().unwrap().exchanges.len(), 1);
    assert!(seen.lock().unwrap().grants.is_empty());
    assert!(!stored().await);

    // Alice's assertion: exchanged, presented, stored.
    let (status, answer) = admin
        .request(Method::POST, path, Some(body(port, ASSERTION, &idp_token)))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["resource"], mcp_url.as_str(), "{answer}");
    assert_eq!(
        answer["authorization_server"],
        format!("http://127.0.0.1:{port}/as").as_str(),
        "{answer}"
    );
    assert_eq!(answer["refreshable"], false, "{answer}");
    assert!(answer["expires_at_ms"].as_i64().unwrap() > 0, "{answer}");
    for secret in [ASSERTION, ID_JAG, ACCESS_TOKEN, AS_SECRET] {
        assert!(!answer.to_string().contains(secret), "{answer}");
    }
    {
        let seen = seen.lock().unwrap();
        let exchange = &seen.exchanges[1];
        assert_eq!(exchange["subject_token"], ASSERTION);
        assert_eq!(
            exchange["audience"],
            format!("http://127.0.0.1:{port}/as"),
            "the ID-JAG is for the server's authorization server"
        );
        assert_eq!(exchange["resource"], mcp_url, "and for the server");
        let (grant, authorization) = &seen.grants[0];
        assert_eq!(grant["assertion"], ID_JAG);
        assert!(
            !grant.contains_key("client_secret"),
            "the secret goes by HTTP Basic alone: {grant:?}"
        );
        assert!(
            authorization
                .as_deref()
                .is_some_and(|a| a.starts_with("Basic ")),
            "{authorization:?}"
        );
    }
    assert!(stored().await);

    // The server is listed and called with the token.
    let reviews = listed(&admin, "tracker").await;
    review(&admin, "tracker", tool(&reviews, "whoami"), "read").await;
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&http, &view, "tracker").connect().await;
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert_eq!(
        ok_text(&who).as_deref(),
        Some("signed in as alice"),
        "{who}"
    );
    assert!(
        seen.lock()
            .unwrap()
            .mcp_authorizations
            .iter()
            .all(|a| a == &format!("Bearer {ACCESS_TOKEN}")),
        "only the issued token reaches the server"
    );
    // One exchange and one grant for the whole: the token is reused.
    assert_eq!(seen.lock().unwrap().grants.len(), 1);

    // The trace says who connected it, how and from which identity
    // provider; neither it nor the log holds a secret.
    let trace = admin.trace("acme").await;
    let stored = trace
        .iter()
        .find(|e| {
            e.state == TraceState::Changed
                && e.rule.as_deref() == Some("connection_stored")
                && e.detail["connector"] == "tracker"
        })
        .expect("the connection's change in the trace");
    assert_eq!(
        stored.detail["by"], "identity_assertion",
        "{}",
        stored.detail
    );
    assert_eq!(
        stored.detail["identity_provider"],
        format!("http://127.0.0.1:{port}/idp").as_str(),
        "{}",
        stored.detail
    );
    assert!(!stored.detail["actor"].is_null(), "{}", stored.detail);
    let log = serve.stderr();
    for secret in [ASSERTION, ID_JAG, ACCESS_TOKEN, AS_SECRET] {
        assert!(!log.contains(secret), "{secret} in the log");
        assert!(
            !trace.iter().any(|e| e.detail.to_string().contains(secret)),
            "{secret} in the trace"
        );
    }
}

/// The deployment's own client connects the deployment owner's connection
/// (client credentials, its secret by HTTP Basic, the resource named); no
/// other brand is connected by a machine's grant, and nothing is asked for
/// one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployment_owner_alone_connects_a_remote_server_by_its_own_client() {
    let dir = tempfile::tempdir().unwrap();
    let (port, seen) = fakes().await;
    let mcp_url = format!("http://127.0.0.1:{port}/mcp");
    let (serve, admin) = serve_tracker(dir.path(), &mcp_url);
    let client = json!({"client_id": AS_CLIENT, "client_secret": AS_SECRET});

    let (status, answer) = admin
        .request(
            Method::POST,
            "/v1/brands/globex/connections/tracker/client-credentials",
            Some(client.clone()),
        )
        .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"]["code"], "not_deployment_owner", "{answer}");
    assert!(seen.lock().unwrap().grants.is_empty(), "nothing asked");

    let (status, answer) = admin
        .request(
            Method::POST,
            "/v1/brands/acme/connections/tracker/client-credentials",
            Some(client),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["auth_method"], "client_secret_basic", "{answer}");
    assert_eq!(answer["resource"], mcp_url.as_str(), "{answer}");
    assert!(!answer.to_string().contains(AS_SECRET), "{answer}");
    {
        let seen = seen.lock().unwrap();
        let (grant, authorization) = &seen.grants[0];
        assert_eq!(grant["grant_type"], "client_credentials", "{grant:?}");
        assert_eq!(grant["resource"], mcp_url, "{grant:?}");
        assert!(!grant.contains_key("client_secret"), "{grant:?}");
        assert!(
            authorization
                .as_deref()
                .is_some_and(|a| a.starts_with("Basic ")),
            "{authorization:?}"
        );
    }

    let reviews = listed(&admin, "tracker").await;
    review(&admin, "tracker", tool(&reviews, "whoami"), "read").await;
    let view = admin.session().await;
    let mcp = Mcp::for_connector(&admin.http, &view, "tracker")
        .connect()
        .await;
    let who = call(&mcp, "whoami", json!({})).await.unwrap();
    assert_eq!(
        ok_text(&who).as_deref(),
        Some("signed in as alice"),
        "{who}"
    );

    let trace = admin.trace("acme").await;
    assert!(
        trace
            .iter()
            .any(|e| e.rule.as_deref() == Some("connection_stored")
                && e.detail["by"] == "client_credentials"
                && e.detail["auth_method"] == "client_secret_basic"),
        "the change in the trace"
    );
    assert!(!serve.stderr().contains(AS_SECRET));
}
