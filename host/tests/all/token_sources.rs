//! Credentials the host keeps alive (issue 22): connections stored as an
//! OAuth refresh-token grant (Google), a client-credentials grant
//! (Tailscale) or a token broker's connection (Nango, Figma), through the
//! real [`ServeHost`] with the real connector components, against a
//! loopback server speaking the token endpoint's and the broker's
//! documented formats ([`scout_tests::fake_tokens`]). Tokens are obtained
//! after authorization, cached, shared by concurrent calls, renewed once on
//! a 401, narrowed to the session's Google products, scrubbed from what the
//! guest returns, and a failure fails the call with a bounded reason,
//! traced with the endpoint's status and never its body, with nothing sent
//! upstream. The admin API validates each source when it is saved.

use crate::common;
use scout_host::boundary::{CallRequest, Executed};
use scout_host::credentials::TokenSource;
use scout_host::credentials::tokens::{BrokerConnection, ClientGrant, RefreshGrant};
use scout_host::policy::{Grant, Limits, Profile};
use scout_host::serve::{OpenSession, ServeHost};
use scout_host::store::{ProfileKind, TraceFilter};
use scout_tests::TempDb;
use scout_tests::fake_tokens::{CANARY, FakeTokens, TokenMode};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const ADMIN_TOKEN: &str = "admin-token-for-token-sources-0123";
const BROKER_SECRET: &str = "nango-secret-key-for-the-tests-0123";
const REFRESH_TOKEN: &str = "1//refresh-token-of-acme-0123456789";
const CLIENT_SECRET: &str = "GOCSPX-client-secret-of-acme-0123";
const WEBMASTERS: &str = "https://www.googleapis.com/auth/webmasters.readonly";
const ANALYTICS: &str = "https://www.googleapis.com/auth/analytics.readonly";
const ADWORDS: &str = "https://www.googleapis.com/auth/adwords";

struct Fixture {
    host: Arc<ServeHost>,
    fake: FakeTokens,
    _db: TempDb,
}

fn component(path: &str) -> String {
    Path::new(path)
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

/// `serve` with Search Console, Tailscale and Figma bound to the fake;
/// `broker`: whether the deployment sets the broker's secret.
async fn serve(name: &str, broker: bool) -> Fixture {
    serve_allowing(name, broker, true).await
}

/// [`serve`]; `private`: whether the connectors and the broker are allowed
/// private and loopback addresses (the fake is on loopback).
async fn serve_allowing(name: &str, broker: bool, private: bool) -> Fixture {
    let fake = FakeTokens::start("ya29.fake-access-", BROKER_SECRET).await;
    let db = TempDb::new(&format!("tokens-{name}"));
    let mut text = format!(
        "listen = \"127.0.0.1:0\"\nrequire_review = false\ntoken_timeout_secs = 1\n\n[token_broker]\nurl = {:?}\nallow_private_network = {private}\n",
        fake.broker_url()
    );
    for (connector, path) in [
        ("searchconsole", scout_tests::components::SEARCHCONSOLE),
        ("tailscale", scout_tests::components::TAILSCALE),
        ("figma", scout_tests::components::FIGMA),
    ] {
        text.push_str(&format!(
            "\n[connectors.{connector}]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = {private}\n",
            component(path),
            if private {
                fake.origin()
            } else {
                format!("https://{connector}.example.com")
            }
        ));
    }
    let host = common::start_host(&text, &db, &[], move |var: &str| match var {
        "SCOUT_ADMIN_TOKEN" => Some(ADMIN_TOKEN.to_string()),
        "SCOUT_STORE_KEY" => Some("4b".repeat(32)),
        "NANGO_SECRET_KEY" if broker => Some(BROKER_SECRET.to_string()),
        _ => None,
    });
    fake.answer_fixture("searchconsole", "sites-list.json");
    fake.answer_fixture("figma", "me.json");
    fake.answer_fixture("tailscale", "users-list.json");
    Fixture {
        host,
        fake,
        _db: db,
    }
}

impl Fixture {
    fn google_oauth(&self, brand: &str, scopes: &[&str]) {
        let source = TokenSource::Oauth(RefreshGrant {
            refresh_token: REFRESH_TOKEN.into(),
            client_id: "acme-client.apps.googleusercontent.com".into(),
            client_secret: CLIENT_SECRET.into(),
            token_url: self.fake.token_url(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            resource: None,
            issued: None,
            token_endpoint_auth_method: None,
        });
        self.host
            .host()
            .put_connection(brand, "google", &source.seal_text())
            .unwrap();
    }

    fn open(&self, brand: &str, role: &str, profile: Option<&str>) -> String {
        self.host
            .open_session(&OpenSession {
                brand: brand.into(),
                role: role.into(),
                profile: profile.map(String::from),
                ..Default::default()
            })
            .unwrap_or_else(|e| panic!("session opens: {e}"))
            .id
    }

    /// The tool's answer as JSON (`{"ok": ..}` or `{"err": ..}`).
    async fn call(&self, session: &str, connector: &str, tool: &str) -> Value {
        let live = self
            .host
            .host()
            .session(session)
            .expect("the session is open");
        let args = json!({});
        match self
            .host
            .host()
            .call(&live, connector, CallRequest::new(tool, &args))
            .await
        {
            Ok(Executed::Ran(outcome)) => serde_json::to_value(&outcome.output).unwrap(),
            Ok(Executed::Failed(e)) => json!({"host-error": e.to_string()}),
            Err(denied) => json!({"denied": denied.to_string()}),
        }
    }

    /// The session's whole trace, as text.
    fn trace(&self, session: &str) -> String {
        let page = scout_host::store::block(self.host.host().store().trace_page(
            TraceFilter::Session(session),
            0,
            5000,
        ))
        .unwrap();
        serde_json::to_string(&page.iter().map(|(_, e)| e).collect::<Vec<_>>()).unwrap()
    }

    /// The `credentials` entries of the session's `executed` events.
    fn credential_events(&self, session: &str) -> Vec<Value> {
        scout_host::store::block(self.host.host().store().trace_page(
            TraceFilter::Session(session),
            0,
            5000,
        ))
        .unwrap()
        .into_iter()
        .filter(|(_, e)| e.state.as_str() == "executed")
        .flat_map(|(_, e)| {
            e.detail["credentials"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
    }

    /// Nothing secret anywhere in `text`: not a token the fake issued, the
    /// refresh token, the client secret, the broker's secret, nor the
    /// endpoint's error body.
    fn assert_no_secret(&self, text: &str) {
        for token in self.fake.issued() {
            assert!(!text.contains(&token), "an access token leaked: {text}");
        }
        for secret in [REFRESH_TOKEN, CLIENT_SECRET, BROKER_SECRET, CANARY] {
            assert!(!text.contains(secret), "`{secret}` leaked: {text}");
        }
    }
}

fn ok(output: &Value) -> bool {
    output.get("ok").is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_token_is_exchanged_once_cached_renewed_on_a_401_and_narrowed_to_the_product() {
    let f = serve("refresh", false).await;
    f.google_oauth("acme", &[WEBMASTERS, ANALYTICS, ADWORDS]);
    let session = f.open("acme", "person-chat", None);
    assert!(
        f.fake.token_calls().is_empty(),
        "opening a session fetches nothing"
    );

    let first = f
        .call(&session, "searchconsole", "searchconsole_properties")
        .await;
    assert!(ok(&first), "{first}");
    let second = f
        .call(&session, "searchconsole", "searchconsole_properties")
        .await;
    assert!(ok(&second), "{second}");
    let calls = f.fake.token_calls();
    assert_eq!(calls.len(), 1, "the token is cached while fresh: {calls:?}");
    let form = &calls[0].fields;
    assert_eq!(form["grant_type"], "refresh_token");
    assert_eq!(form["refresh_token"], REFRESH_TOKEN);
    assert_eq!(form["client_id"], "acme-client.apps.googleusercontent.com");
    assert_eq!(form["client_secret"], CLIENT_SECRET);
    assert_eq!(
        form["scope"], WEBMASTERS,
        "Search Console's token asks for Search Console's scope alone"
    );
    let issued = f.fake.issued();
    let api = f.fake.api_calls();
    assert_eq!(api.len(), 2);
    assert!(
        api.iter()
            .all(|c| c.authorization.as_deref() == Some(&format!("Bearer {}", issued[0])))
    );

    // The upstream stops taking the token: renewed once, the call goes on.
    f.fake.revoke_all();
    let third = f
        .call(&session, "searchconsole", "searchconsole_properties")
        .await;
    assert!(ok(&third), "renewed after the 401: {third}");
    assert_eq!(f.fake.token_calls().len(), 2, "one renewal");
    let api = f.fake.api_calls();
    assert_eq!((api[2].accepted, api[3].accepted), (false, true), "{api:?}");
    let events = f.credential_events(&session);
    let outcomes: Vec<&str> = events
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["obtained", "renewed"], "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| e["status"] == 200 && e["source"] == "oauth")
    );
    f.assert_no_secret(&f.trace(&session));
    f.assert_no_secret(&format!("{first}{second}{third}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_specialists_google_grant_asks_for_exactly_the_granted_scopes() {
    let f = serve("narrow", false).await;
    // Stored with three scopes; the grant names Search Console only.
    f.google_oauth("acme", &[WEBMASTERS, ANALYTICS, ADWORDS]);
    let profile = Profile {
        name: "console-reader".into(),
        tools: vec![
            "Read".into(),
            "mcp__searchconsole__searchconsole_properties".into(),
        ],
        grant: Grant {
            connectors: vec!["searchconsole".into()],
            allowances: Default::default(),
            skills: vec![],
            ..Default::default()
        },
        limits: Limits::preset(),
    };
    scout_host::store::block(f.host.host().store().save_profile(
        "acme",
        &profile,
        ProfileKind::Coworker,
        &f.host.host().catalog(),
    ))
    .expect("the profile is valid");
    let session = f.open("acme", "specialist", Some("console-reader"));
    let out = f
        .call(&session, "searchconsole", "searchconsole_properties")
        .await;
    assert!(ok(&out), "{out}");
    let calls = f.fake.token_calls();
    assert_eq!(calls.len(), 1);
    let asked: Vec<&str> = calls[0].fields["scope"].split(' ').collect();
    assert_eq!(asked, [WEBMASTERS], "exactly the granted product's scope");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_share_one_token_request() {
    let f = serve("single-flight", false).await;
    f.google_oauth("acme", &[WEBMASTERS]);
    f.fake.set_mode(TokenMode::Issue {
        expires_in: Some(3600),
        delay: Duration::from_millis(400),
    });
    let session = f.open("acme", "person-chat", None);
    let calls = (0..4).map(|_| f.call(&session, "searchconsole", "searchconsole_properties"));
    let outputs = futures_util::future::join_all(calls).await;
    assert!(outputs.iter().all(ok), "{outputs:?}");
    assert_eq!(f.fake.token_calls().len(), 1, "one request for four calls");
    assert_eq!(f.fake.api_calls().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_expires_in_is_used_for_the_default_lifetime() {
    let f = serve("no-expiry", false).await;
    f.google_oauth("acme", &[WEBMASTERS]);
    f.fake.set_mode(TokenMode::Issue {
        expires_in: None,
        delay: Duration::ZERO,
    });
    let session = f.open("acme", "person-chat", None);
    for _ in 0..2 {
        let out = f
            .call(&session, "searchconsole", "searchconsole_properties")
            .await;
        assert!(ok(&out), "{out}");
    }
    assert_eq!(
        f.fake.token_calls().len(),
        1,
        "cached without expires_in too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_endpoint_that_refuses_fails_or_stalls_fails_the_call_and_sends_nothing() {
    let f = serve("failures", false).await;
    for (brand, mode, expect) in [
        (
            "brand-invalid-grant",
            TokenMode::InvalidGrant,
            "answered 400 (invalid_grant)",
        ),
        ("brand-unavailable", TokenMode::Unavailable, "answered 503"),
        (
            "brand-slow",
            TokenMode::Stall(Duration::from_secs(3)),
            "did not answer in time",
        ),
    ] {
        f.google_oauth(brand, &[WEBMASTERS]);
        f.fake.set_mode(mode);
        let session = f.open(brand, "person-chat", None);
        let out = f
            .call(&session, "searchconsole", "searchconsole_properties")
            .await;
        assert!(!ok(&out), "{out}");
        assert!(
            out.to_string()
                .contains("credential could not be refreshed"),
            "the bounded reason: {out}"
        );
        assert!(
            f.fake.api_calls().is_empty(),
            "nothing reached the upstream"
        );
        let events = f.credential_events(&session);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0]["outcome"], "failed");
        assert!(
            events[0]["error"].as_str().unwrap().contains(expect),
            "{brand}: {events:?}"
        );
        f.assert_no_secret(&f.trace(&session));
        f.assert_no_secret(&out.to_string());
    }
    // The invalid grant's status is traced as the endpoint's.
    let calls = f.fake.token_calls();
    assert_eq!(calls.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tailscale_oauth_client_gets_read_scoped_tokens_that_the_guest_never_sees() {
    let f = serve("client-credentials", false).await;
    let source = TokenSource::ClientCredentials(ClientGrant {
        client_id: "kSzcL2bCNTRL".into(),
        client_secret: CLIENT_SECRET.into(),
        token_url: f.fake.token_url(),
        scopes: ["users:read".to_string(), "devices:core:read".to_string()].into(),
        token_endpoint_auth_method: None,
        resource: None,
        private_key: None,
    });
    f.host
        .host()
        .put_connection("acme", "tailscale", &source.seal_text())
        .unwrap();
    // A hostile upstream reflects the token it got.
    f.fake.answer(
        "GET",
        "/api/v2/tailnet/-/users",
        200,
        json!({"users": [{"id": "1", "displayName": "{{TOKEN}}", "loginName": "a@example.com",
            "type": "member", "role": "member", "status": "active"}]}),
    );
    let session = f.open("acme", "person-chat", None);
    let out = f.call(&session, "tailscale", "tailscale_users").await;
    assert!(ok(&out), "{out}");
    let calls = f.fake.token_calls();
    assert_eq!(calls.len(), 1);
    let form = &calls[0].fields;
    assert_eq!(form["grant_type"], "client_credentials");
    assert_eq!(form["client_id"], "kSzcL2bCNTRL");
    assert_eq!(form["client_secret"], CLIENT_SECRET);
    assert_eq!(form["scope"], "devices:core:read users:read");
    assert_eq!(
        f.fake.api_calls()[0].authorization.as_deref(),
        Some(format!("Bearer {}", f.fake.issued()[0]).as_str())
    );
    assert!(out.to_string().contains("[REDACTED]"), "{out}");
    f.assert_no_secret(&out.to_string());
    f.assert_no_secret(&f.trace(&session));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_connection_is_served_only_where_the_broker_secret_is_set() {
    let broker = TokenSource::Broker(BrokerConnection {
        connection_id: "acme-figma".into(),
        provider_config_key: "figma-prod".into(),
        scopes: Default::default(),
    });
    // Without the broker's secret, Figma is loaded and never registered.
    let without = serve("no-broker", false).await;
    without
        .host
        .host()
        .put_connection("acme", "figma", &broker.seal_text())
        .unwrap();
    let view = without
        .host
        .open_session(&OpenSession {
            brand: "acme".into(),
            role: "person-chat".into(),
            profile: None,
            ..Default::default()
        })
        .unwrap();
    assert!(!view.mcp.contains_key("figma"), "{:?}", view.mcp);
    assert!(view.left_out.contains_key("figma"), "{:?}", view.left_out);
    assert!(without.fake.token_calls().is_empty());

    let with = serve("broker", true).await;
    with.host
        .host()
        .put_connection("acme", "figma", &broker.seal_text())
        .unwrap();
    let session = with.open("acme", "person-chat", None);
    let out = with.call(&session, "figma", "figma_whoami").await;
    assert!(ok(&out), "{out}");
    let calls = with.fake.token_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].endpoint, "broker");
    assert_eq!(calls[0].connection.as_deref(), Some("acme-figma"));
    assert_eq!(calls[0].fields["provider_config_key"], "figma-prod");
    assert_eq!(
        calls[0].authorization.as_deref(),
        Some(format!("Bearer {BROKER_SECRET}").as_str())
    );
    assert_eq!(
        with.fake.api_calls()[0].authorization.as_deref(),
        Some(format!("Bearer {}", with.fake.issued()[0]).as_str())
    );
    // Cached: the broker is not asked again while the token is fresh.
    let again = with.call(&session, "figma", "figma_whoami").await;
    assert!(ok(&again));
    assert_eq!(with.fake.token_calls().len(), 1);
    assert!(!calls[0].fields.contains_key("force_refresh"));
    // Refused upstream: the broker is told to refresh, not asked for the
    // token it believes is still valid.
    with.fake.revoke_all();
    let renewed = with.call(&session, "figma", "figma_whoami").await;
    assert!(ok(&renewed), "{renewed}");
    let calls = with.fake.token_calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[1].fields["force_refresh"], "true", "{calls:?}");
    with.assert_no_secret(&with.trace(&session));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_that_fails_fails_the_call_with_the_bounded_reason_and_is_not_retried_by_every_call()
 {
    let f = serve("renewal-fails", false).await;
    f.google_oauth("acme", &[WEBMASTERS]);
    let session = f.open("acme", "person-chat", None);
    let first = f
        .call(&session, "searchconsole", "searchconsole_properties")
        .await;
    assert!(ok(&first), "{first}");

    // The upstream refuses the token and the grant is revoked meanwhile.
    f.fake.revoke_all();
    f.fake.set_mode(TokenMode::InvalidGrant);
    let refused = f
        .call(&session, "searchconsole", "searchconsole_properties")
        .await;
    assert!(!ok(&refused), "{refused}");
    assert!(
        refused
            .to_string()
            .contains("credential could not be refreshed"),
        "the bounded reason, not the upstream's 401: {refused}"
    );
    let api = f.fake.api_calls();
    assert_eq!(
        api.len(),
        2,
        "the refused request is not sent again: {api:?}"
    );
    assert_eq!(f.fake.token_calls().len(), 2);

    // The next call, at once, gets the same failure without asking again.
    let again = f
        .call(&session, "searchconsole", "searchconsole_properties")
        .await;
    assert!(!ok(&again), "{again}");
    assert!(
        again
            .to_string()
            .contains("credential could not be refreshed")
    );
    assert_eq!(f.fake.token_calls().len(), 2, "not asked again at once");
    assert_eq!(f.fake.api_calls().len(), 2, "nothing sent upstream");
    let outcomes: Vec<String> = f
        .credential_events(&session)
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(outcomes, ["obtained", "failed", "failed_recently"]);
    f.assert_no_secret(&f.trace(&session));
    f.assert_no_secret(&format!("{refused}{again}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lifetime_too_long_to_count_is_capped_not_a_crash() {
    let f = serve("long-lifetime", false).await;
    f.google_oauth("acme", &[WEBMASTERS]);
    f.fake.set_mode(TokenMode::Issue {
        expires_in: Some(u64::MAX),
        delay: Duration::ZERO,
    });
    let session = f.open("acme", "person-chat", None);
    for _ in 0..2 {
        let out = f
            .call(&session, "searchconsole", "searchconsole_properties")
            .await;
        assert!(ok(&out), "{out}");
    }
    assert_eq!(f.fake.token_calls().len(), 1, "cached, for at most a day");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_validates_token_sources_when_saved_and_returns_none_of_them() {
    let f = serve("admin", true).await;
    let listening = common::listen(f.host.clone()).await;
    let client = common::client();
    let put = |connector: &str, body: Value| {
        client
            .put(format!(
                "{}/v1/brands/acme/connections/{connector}",
                listening.base
            ))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let oauth = json!({"refresh_token": REFRESH_TOKEN, "client_id": "c", "client_secret": CLIENT_SECRET,
        "token_url": f.fake.token_url(), "scopes": [WEBMASTERS]});
    for (connector, body, field) in [
        (
            "google",
            json!({"oauth": {"refresh_token": REFRESH_TOKEN, "client_id": "c", "client_secret": "s", "scopes": [WEBMASTERS]}}),
            "oauth.token_url",
        ),
        (
            "google",
            json!({"oauth": {"refresh_token": REFRESH_TOKEN, "client_id": "c", "client_secret": "s",
            "token_url": "http://id.example.com/token", "scopes": [WEBMASTERS]}}),
            "oauth.token_url",
        ),
        (
            "google",
            json!({"oauth": {"refresh_token": "", "client_id": "c", "client_secret": "s",
            "token_url": f.fake.token_url(), "scopes": [WEBMASTERS]}}),
            "oauth.refresh_token",
        ),
        (
            "google",
            json!({"oauth": {"refresh_token": "r", "client_id": "c", "client_secret": "s",
            "token_url": f.fake.token_url()}}),
            "oauth.scopes",
        ),
        (
            "tailscale",
            json!({"client_credentials": {"client_id": "c", "client_secret": "s",
            "token_url": f.fake.token_url(), "scopes": ["devices:core"]}}),
            "client_credentials.scopes",
        ),
        (
            "figma",
            json!({"broker": {"connection_id": "acme-figma"}}),
            "broker.provider_config_key",
        ),
        (
            "google",
            json!({"secret": "t", "oauth": oauth.clone()}),
            "secret",
        ),
        // A secret in a field of another type is not repeated in the answer.
        (
            "google",
            json!({"oauth": {"refresh_token": REFRESH_TOKEN, "client_id": "c", "client_secret": "s",
            "token_url": f.fake.token_url(), "scopes": CLIENT_SECRET}}),
            "oauth",
        ),
        // A secret cannot pose as a stored token source, skipping its checks.
        (
            "github",
            json!({"secret": format!("scout-token-source:v1:{{\"broker\":{{}}}}{CLIENT_SECRET}")}),
            "secret",
        ),
    ] {
        let response = put(connector, body.clone()).await.unwrap();
        let status = response.status().as_u16();
        let answer: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid_connection", "{answer}");
        assert_eq!(answer["error"]["field"], field, "{body}: {answer}");
        f.assert_no_secret(&answer.to_string());
    }
    let response = put("google", json!({"oauth": oauth})).await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let answer = response.text().await.unwrap();
    f.assert_no_secret(&answer);
    let listed = client
        .get(format!("{}/v1/brands/acme/connections", listening.base))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        listed.contains("\"google\"") || listed.contains("searchconsole"),
        "{listed}"
    );
    f.assert_no_secret(&listed);
    // What was stored works.
    let session = f.open("acme", "person-chat", None);
    let out = f
        .call(&session, "searchconsole", "searchconsole_properties")
        .await;
    assert!(ok(&out), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_endpoint_on_a_private_address_is_never_asked() {
    // The connectors are not allowed private addresses: neither is their
    // token endpoint, whatever the stored connection names.
    let f = serve_allowing("private-endpoint", true, false).await;
    let port = url::Url::parse(&f.fake.token_url())
        .unwrap()
        .port()
        .unwrap();
    let hostile = [
        (
            "metadata",
            "https://169.254.169.254/latest/meta-data/token".to_string(),
        ),
        ("decimal", "https://2852039166/token".to_string()),
        (
            "mapped",
            "https://[::ffff:169.254.169.254]/token".to_string(),
        ),
        ("ten", "https://10.0.0.7/oauth/token".to_string()),
        ("home", "https://192.168.1.1/oauth/token".to_string()),
        // The fake really listens here: without the guard it would be asked.
        ("loopback", f.fake.token_url()),
        ("named", format!("http://localhost:{port}/oauth/token")),
    ];
    for (brand, token_url) in &hostile {
        let source = TokenSource::Oauth(RefreshGrant {
            refresh_token: REFRESH_TOKEN.into(),
            client_id: "acme-client.apps.googleusercontent.com".into(),
            client_secret: CLIENT_SECRET.into(),
            token_url: token_url.clone(),
            scopes: [WEBMASTERS.to_string()].into(),
            resource: None,
            issued: None,
            token_endpoint_auth_method: None,
        });
        f.host
            .host()
            .put_connection(brand, "google", &source.seal_text())
            .unwrap();
        let session = f.open(brand, "person-chat", None);
        let out = f
            .call(&session, "searchconsole", "searchconsole_properties")
            .await;
        assert!(!ok(&out), "{brand}: {out}");
        assert!(
            out.to_string()
                .contains("credential could not be refreshed"),
            "{brand}: the bounded reason: {out}"
        );
        let events = f.credential_events(&session);
        assert_eq!(events.len(), 1, "{brand}: {events:?}");
        assert!(
            events[0]["error"]
                .as_str()
                .unwrap()
                .contains("address is refused"),
            "{brand}: {events:?}"
        );
        f.assert_no_secret(&f.trace(&session));
    }
    // A broker on loopback without the operator's leave: not asked either.
    f.host
        .host()
        .put_connection(
            "broker-brand",
            "figma",
            &TokenSource::Broker(BrokerConnection {
                connection_id: "acme-figma".into(),
                provider_config_key: "figma".into(),
                scopes: Default::default(),
            })
            .seal_text(),
        )
        .unwrap();
    let session = f.open("broker-brand", "person-chat", None);
    let out = f.call(&session, "figma", "figma_whoami").await;
    assert!(!ok(&out), "{out}");
    assert!(
        f.fake.token_calls().is_empty(),
        "no token endpoint or broker on a private address was asked: {:?}",
        f.fake.token_calls()
    );
    assert!(f.fake.api_calls().is_empty(), "nothing reached an upstream");
}
