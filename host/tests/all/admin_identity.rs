//! Identity on the admin API (issue 21 item 3), driven through the real
//! `scout-host serve` binary: OIDC bearer tokens verified against a JWK set
//! served by a loopback issuer this test starts, each role's part of the
//! API, the verified subject recorded as who decided an approval, every
//! kind of token that must be refused (and that nothing happened when it
//! was), key rotation and the configuration's checks.
//!
//! Keys are made by the `openssl` command line for each run (CI installs
//! it); none is committed.

use super::crash_safety::{ADMIN_TOKEN, Admin, GITHUB_TOKEN, Mcp, ok_text, wait_for};
use crate::common;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use scout_tests::ServeProcess;
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

const AUDIENCE: &str = "scout-admin";

// --- keys --------------------------------------------------------------------

/// A private key made by `openssl`, its public JWK and PEM.
pub(super) struct TestKey {
    kid: String,
    algorithm: Algorithm,
    signing: EncodingKey,
    pub(super) jwk: Value,
    public_pem: Vec<u8>,
}

fn openssl(args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
    let mut child = Command::new("openssl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the openssl command line (CI installs it)");
    {
        let mut stdin = child.stdin.take().unwrap();
        if let Some(input) = input {
            stdin.write_all(input).unwrap();
        }
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

impl TestKey {
    fn rsa(kid: &str) -> TestKey {
        let pem = openssl(
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
            ],
            None,
        );
        let signing = EncodingKey::from_rsa_pem(&pem).unwrap();
        TestKey::finish(kid, Algorithm::RS256, signing, &pem)
    }

    fn p256(kid: &str) -> TestKey {
        let pem = openssl(
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
            ],
            None,
        );
        let signing = EncodingKey::from_ec_pem(&pem).unwrap();
        TestKey::finish(kid, Algorithm::ES256, signing, &pem)
    }

    fn finish(kid: &str, algorithm: Algorithm, signing: EncodingKey, pem: &[u8]) -> TestKey {
        let mut jwk =
            serde_json::to_value(Jwk::from_encoding_key(&signing, algorithm).unwrap()).unwrap();
        jwk["kid"] = kid.into();
        jwk["use"] = "sig".into();
        let public_pem = openssl(&["pkey", "-pubout"], Some(pem));
        TestKey {
            kid: kid.to_string(),
            algorithm,
            signing,
            jwk,
            public_pem,
        }
    }

    /// A token signed by this key, naming `kid` (its own unless forged).
    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(self.algorithm);
        header.kid = Some(kid.to_string());
        jsonwebtoken::encode(&header, claims, &self.signing).unwrap()
    }

    pub(super) fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }
}

/// The keys every test shares (RSA key generation takes a moment).
pub(super) struct Keys {
    pub(super) issuer: TestKey,
    issuer_ec: TestKey,
    attacker: TestKey,
    rotated: TestKey,
}

pub(super) fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys {
        issuer: TestKey::rsa("issuer-1"),
        issuer_ec: TestKey::p256("issuer-ec"),
        attacker: TestKey::rsa("attacker"),
        rotated: TestKey::rsa("issuer-2"),
    })
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

// --- the issuer ----------------------------------------------------------------

/// A loopback issuer publishing a JWK set at `/jwks`, counting fetches.
pub(super) struct Issuer {
    base: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    failing: Arc<AtomicBool>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

#[derive(Clone)]
struct IssuerState {
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    failing: Arc<AtomicBool>,
}

async fn jwks(State(state): State<IssuerState>) -> Response {
    state.fetches.fetch_add(1, Ordering::SeqCst);
    if state.failing.load(Ordering::SeqCst) {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let keys = state.keys.lock().unwrap().clone();
    Json(json!({"keys": keys})).into_response()
}

impl Issuer {
    pub(super) async fn start(keys: Vec<Value>) -> Issuer {
        let state = IssuerState {
            keys: Arc::new(Mutex::new(keys)),
            fetches: Arc::new(AtomicUsize::new(0)),
            failing: Arc::new(AtomicBool::new(false)),
        };
        let router = axum::Router::new()
            .route("/jwks", axum::routing::get(jwks))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Issuer {
            base: format!("http://{addr}"),
            keys: state.keys,
            fetches: state.fetches,
            failing: state.failing,
            server,
        }
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    fn publish(&self, keys: Vec<Value>) {
        *self.keys.lock().unwrap() = keys;
    }

    /// Claims a valid token of this issuer carries, with `extra` on top
    /// (a `null` removes a claim).
    pub(super) fn claims(&self, sub: &str, roles: Value, extra: Value) -> Value {
        let mut claims = json!({
            "iss": self.base,
            "aud": [AUDIENCE, "another-service"],
            "sub": sub,
            "iat": now(),
            "nbf": now() - 5,
            "exp": now() + 300,
            "scout_roles": roles,
        });
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                claims.as_object_mut().unwrap().remove(k);
            } else {
                claims[k] = v.clone();
            }
        }
        claims
    }
}

// --- serve ---------------------------------------------------------------------

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> Dir {
    let dir = std::env::temp_dir().join(format!(
        "scout-admin-identity-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Dir(dir)
}

/// The `[oidc]` table naming `issuer`.
pub(super) fn oidc_table(issuer: &Issuer) -> String {
    format!(
        "\n[oidc]\nissuer = {:?}\naudience = {AUDIENCE:?}\njwks_url = \"{}/jwks\"\nrole_claim = \"scout_roles\"\nleeway_secs = 60\njwks_min_refresh_secs = 1\n# The test's issuer is on loopback.\nallow_private_network = true\n",
        issuer.base, issuer.base
    )
}

/// `serve` with the GitHub connector against `github` and `[oidc]` naming `issuer`.
fn start_serve(dir: &Path, github: &FakeGitHub, issuer: &Issuer) -> ServeProcess {
    start_serve_with(dir, github, issuer, "")
}

/// [`start_serve`] with `more` lines in the `[oidc]` table.
fn start_serve_with(dir: &Path, github: &FakeGitHub, issuer: &Issuer, more: &str) -> ServeProcess {
    let config = scout_tests::serve::write_config(
        dir,
        scout_tests::serve_config_for_github(&github.origin()) + &oidc_table(issuer) + more,
    );
    common::serve(&config).start()
}

/// What one admin API request got back.
struct Answer {
    status: u16,
    challenge: Option<String>,
    body: Value,
}

impl Answer {
    fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
    fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }
}

async fn call(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Answer {
    let mut request = http
        .request(method, format!("{base}{path}"))
        .header(AUTHORIZATION, format!("Bearer {token}"));
    if let Some(body) = body {
        request = request
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = response.text().await.unwrap();
    Answer {
        status,
        challenge,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

/// The error shape, nothing else in it, and the token never echoed.
fn assert_refusal(answer: &Answer, status: u16, code: &str, says: &str, token: &str, case: &str) {
    assert_eq!(
        (answer.status, answer.code()),
        (status, code),
        "{case}: {}",
        answer.body
    );
    assert_eq!(
        answer.body.as_object().map(|o| o.len()),
        Some(1),
        "{case}: {}",
        answer.body
    );
    assert!(
        answer.message().contains(says),
        "{case}: the message should say {says:?}: {}",
        answer.message()
    );
    assert!(
        !answer.body.to_string().contains(token),
        "{case}: the token is never echoed"
    );
    if status == 401 {
        let challenge = answer.challenge.as_deref().unwrap_or("");
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\", error_description=\""),
            "{case}: {challenge}"
        );
        assert!(!challenge.contains(token), "{case}");
    }
}

// --- the tests -------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_tokens_get_their_roles_and_every_bad_token_is_refused_with_nothing_done() {
    let keys = keys();
    let issuer = Issuer::start(vec![keys.issuer.jwk.clone(), keys.issuer_ec.jwk.clone()]).await;
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = temp_dir("roles");
    let serve = start_serve(&dir.0, &github, &issuer);
    let http = reqwest::Client::new();
    let base = serve.base.clone();
    let admin = Admin {
        http: http.clone(),
        base: base.clone(),
    };
    // The static admin token still works, as role admin.
    admin.set_up().await;

    let admin_token =
        keys.issuer
            .sign(&issuer.claims("root@example.com", json!("admin"), json!({})));
    let approver_token = keys.issuer_ec.sign(&issuer.claims(
        "alice@example.com",
        json!(["approver", "unrelated-group"]),
        json!({}),
    ));
    let viewer_token =
        keys.issuer
            .sign(&issuer.claims("audrey@example.com", json!("viewer"), json!({})));

    // Role admin: everything.
    let answer = call(
        &http,
        &base,
        &admin_token,
        Method::GET,
        "/v1/sessions",
        None,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answer = call(
        &http,
        &base,
        &admin_token,
        Method::PUT,
        "/v1/brands/acme/connections/github",
        Some(json!({"secret": GITHUB_TOKEN})),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);

    // A write waiting for a person.
    let view = admin.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let (waiting, pending) = admin
        .write_waiting(
            &view,
            json!({"owner": "octo", "repo": "hello", "branch": "scout/identity", "from": "main"}),
        )
        .await;
    let approval = pending["id"].as_i64().unwrap();
    let decide = format!("/v1/approvals/{approval}");
    let still_pending = async || {
        admin
            .pending(&session)
            .await
            .iter()
            .any(|p| p["id"] == approval)
    };

    // Role approver: lists approvals, reads the trace, but stores no connection.
    let answer = call(
        &http,
        &base,
        &approver_token,
        Method::GET,
        &format!("/v1/approvals?session={session}"),
        None,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["pending"][0]["id"], approval);
    for path in [
        format!("/v1/trace?session={session}"),
        "/v1/trace/export".to_string(),
        "/v1/sessions".to_string(),
        format!("/v1/sessions/{session}"),
    ] {
        let answer = call(&http, &base, &approver_token, Method::GET, &path, None).await;
        assert_eq!(answer.status, 200, "approver reads {path}");
    }
    let before = github.requests().len();
    let answer = call(
        &http,
        &base,
        &approver_token,
        Method::PUT,
        "/v1/brands/acme/connections/github",
        Some(json!({"secret": "ghp_replacedByTheApprover000000"})),
    )
    .await;
    assert_refusal(
        &answer,
        403,
        "forbidden",
        "role `approver` may only list and decide approvals",
        &approver_token,
        "approver stores a connection",
    );
    assert!(
        answer.message().contains("needs role admin"),
        "{}",
        answer.message()
    );
    for (path, why) in [
        ("/v1/reviews", "reviews"),
        ("/v1/brands/acme/connections", "connections"),
        ("/v1/audit?role=read-only", "the authority audit"),
    ] {
        let answer = call(&http, &base, &approver_token, Method::GET, path, None).await;
        assert_eq!((answer.status, answer.code()), (403, "forbidden"), "{why}");
    }
    // Only the admin role changes what the fleet runs.
    for token in [&approver_token, &viewer_token] {
        for method in [Method::PUT, Method::DELETE] {
            let answer = call(
                &http,
                &base,
                token,
                method.clone(),
                "/v1/connectors/github",
                Some(json!({"component": "oci://registry.example/connectors/github:1"})),
            )
            .await;
            assert_eq!(
                (answer.status, answer.code()),
                (403, "forbidden"),
                "{method} /v1/connectors by a role that is not admin"
            );
        }
    }

    // What each role is told it may do (the console's buttons follow it).
    for (token, subject, role, decide, end) in [
        (&admin_token, "root@example.com", "admin", true, true),
        (
            &approver_token,
            "alice@example.com",
            "approver",
            true,
            false,
        ),
        (&viewer_token, "audrey@example.com", "viewer", false, false),
    ] {
        let answer = call(&http, &base, token, Method::GET, "/v1/whoami", None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(
            answer.body,
            json!({"subject": subject, "role": role, "every_brand": role, "brands": {}, "reads_arguments": role == "admin", "reads_arguments_of": [], "via": "oidc", "may_decide": decide, "may_end_sessions": end}),
            "{role}"
        );
    }

    // Role viewer: reads, and cannot decide.
    for path in [
        "/v1/sessions".to_string(),
        format!("/v1/sessions/{session}/agent-config?format=mcp-json"),
        format!("/v1/trace?session={session}"),
        "/v1/reviews".to_string(),
        "/v1/connectors".to_string(),
        "/metrics".to_string(),
        "/v1/audit?role=read-only".to_string(),
    ] {
        let answer = call(&http, &base, &viewer_token, Method::GET, &path, None).await;
        assert_eq!(answer.status, 200, "viewer reads {path}");
    }
    let answer = call(
        &http,
        &base,
        &viewer_token,
        Method::POST,
        &decide,
        Some(json!({"approve": true})),
    )
    .await;
    assert_refusal(
        &answer,
        403,
        "forbidden",
        "role `viewer` may only read",
        &viewer_token,
        "viewer decides",
    );
    assert!(
        answer.message().contains("needs role approver or admin"),
        "{}",
        answer.message()
    );
    assert!(still_pending().await, "a refused decision decides nothing");

    // Tokens refused: each tries to approve, and the approval stays pending.
    let with = |extra: Value| issuer.claims("mallory@example.com", json!("admin"), extra);
    let hmac_token = |secret: &[u8]| {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(keys.issuer.kid.clone());
        jsonwebtoken::encode(
            &header,
            &with(json!({})),
            &EncodingKey::from_secret(secret).unwrap(),
        )
        .unwrap()
    };
    let modulus = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(keys.issuer.jwk["n"].as_str().unwrap())
        .unwrap();
    let unsigned = format!(
        "{}.{}.",
        b64(json!({"alg": "none", "kid": keys.issuer.kid, "typ": "JWT"})
            .to_string()
            .as_bytes()),
        b64(with(json!({})).to_string().as_bytes())
    );
    let refused: Vec<(&str, String, u16, &str, &str)> = vec![
        (
            "another audience",
            keys.issuer.sign(&with(json!({"aud": "another-service"}))),
            401,
            "unauthorized",
            "audience (`aud`) does not include",
        ),
        (
            "no audience",
            keys.issuer.sign(&with(json!({"aud": null}))),
            401,
            "unauthorized",
            "no `aud` claim",
        ),
        (
            "another issuer",
            keys.issuer
                .sign(&with(json!({"iss": "https://id.elsewhere.example"}))),
            401,
            "unauthorized",
            "issuer (`iss`) is not",
        ),
        (
            // jsonwebtoken alone takes an array with the issuer among its members.
            "an array issuer naming this one among others",
            keys.issuer.sign(&with(
                json!({"iss": ["https://id.elsewhere.example", issuer.base.as_str()]}),
            )),
            401,
            "unauthorized",
            "`iss` claim is malformed",
        ),
        (
            "an audience array holding a non-string",
            keys.issuer
                .sign(&with(json!({"aud": [AUDIENCE, {"not": "a string"}]}))),
            401,
            "unauthorized",
            "`aud` claim",
        ),
        (
            "a number for the audience",
            keys.issuer.sign(&with(json!({"aud": 7}))),
            401,
            "unauthorized",
            "`aud` claim",
        ),
        (
            "expired beyond the leeway",
            keys.issuer
                .sign(&with(json!({"exp": now() - 120, "iat": now() - 600}))),
            401,
            "unauthorized",
            "has expired",
        ),
        (
            "no exp",
            keys.issuer.sign(&with(json!({"exp": null}))),
            401,
            "unauthorized",
            "no `exp` claim",
        ),
        (
            "not valid yet (nbf)",
            keys.issuer.sign(&with(json!({"nbf": now() + 600}))),
            401,
            "unauthorized",
            "not valid yet",
        ),
        (
            "issued in the future (iat)",
            keys.issuer.sign(&with(json!({"iat": now() + 600}))),
            401,
            "unauthorized",
            "not valid yet",
        ),
        (
            "forged: another key under the issuer's kid",
            keys.attacker.sign_as(&keys.issuer.kid, &with(json!({}))),
            401,
            "unauthorized",
            "signature does not verify",
        ),
        (
            "alg none",
            unsigned,
            401,
            "unauthorized",
            "algorithm (`none`) is never accepted",
        ),
        (
            "HS256 keyed with the issuer's public key (PEM)",
            hmac_token(&keys.issuer.public_pem),
            401,
            "unauthorized",
            "algorithm (HMAC) is never accepted",
        ),
        (
            "HS256 keyed with the issuer's public modulus (JWK n)",
            hmac_token(&modulus),
            401,
            "unauthorized",
            "algorithm (HMAC) is never accepted",
        ),
        (
            "RS256 under the EC key's kid",
            keys.issuer.sign_as(&keys.issuer_ec.kid, &with(json!({}))),
            401,
            "unauthorized",
            "not one its key signs with (ES256)",
        ),
        (
            "malformed",
            "abc.def.ghi".to_string(),
            401,
            "unauthorized",
            "malformed",
        ),
        (
            "no role claim",
            keys.issuer.sign(&with(json!({"scout_roles": null}))),
            403,
            "forbidden",
            "`scout_roles` claim gives no role of this host: one of admin, approver or viewer",
        ),
        (
            "no recognised role",
            keys.issuer
                .sign(&with(json!({"scout_roles": ["owner", "platform-admins"]}))),
            403,
            "forbidden",
            "`scout_roles` claim gives no role",
        ),
    ];
    let fetches = issuer.fetches();
    for (case, token, status, code, says) in &refused {
        let answer = call(
            &http,
            &base,
            token,
            Method::POST,
            &decide,
            Some(json!({"approve": true, "by": "mallory"})),
        )
        .await;
        assert_refusal(&answer, *status, code, says, token, case);
        assert!(
            still_pending().await,
            "{case}: the approval is still pending"
        );
    }
    assert_eq!(
        issuer.fetches(),
        fetches,
        "no refusal above names an unknown key, so none fetched the keys again"
    );

    // An unknown kid fetches the keys again, once: a second one at once is
    // answered from the same fetch (at most one per jwks_min_refresh_secs).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let unknown = keys.attacker.sign(&with(json!({})));
    for attempt in 0..3 {
        let answer = call(
            &http,
            &base,
            &unknown,
            Method::POST,
            &decide,
            Some(json!({"approve": true})),
        )
        .await;
        assert_refusal(
            &answer,
            401,
            "unauthorized",
            "key id (`kid`) is not among the keys the issuer publishes",
            &unknown,
            "unknown kid",
        );
        assert_eq!(issuer.fetches(), fetches + 1, "attempt {attempt}");
    }
    assert!(still_pending().await);

    // A token expired within the leeway is still good.
    let lately_expired = keys.issuer.sign(&issuer.claims(
        "audrey@example.com",
        json!("viewer"),
        json!({"exp": now() - 20, "iat": now() - 600, "nbf": now() - 600}),
    ));
    let answer = call(
        &http,
        &base,
        &lately_expired,
        Method::GET,
        "/v1/sessions",
        None,
    )
    .await;
    assert_eq!(answer.status, 200, "within the leeway: {}", answer.body);

    // The approver decides; the record names the token's subject, not the body's `by`.
    let answer = call(
        &http,
        &base,
        &approver_token,
        Method::POST,
        &decide,
        Some(json!({"approve": true, "by": "somebody else"})),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["decided_by"], "alice@example.com");
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, waiting)
        .await
        .expect("the write ends")
        .unwrap()
        .unwrap();
    assert!(ok_text(&reply).is_some(), "{reply}");
    assert!(
        github
            .branch_sha("octo", "hello", "scout/identity")
            .is_some()
    );
    assert!(github.requests().len() > before);
    let trace = admin.trace("acme").await;
    let decided: Vec<_> = trace
        .iter()
        .filter(|e| e.session == session)
        .filter(|e| e.state == scout_host::store::TraceState::Decided)
        .collect();
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(
        decided[0].detail["by"], "alice@example.com (approvals API)",
        "the verified subject, never the body's `by`"
    );
    // The same decider as fields, kept with the approval by the store.
    assert_eq!(
        decided[0].detail["actor"],
        json!({
            "kind": "person",
            "subject": "alice@example.com",
            "sub": "alice@example.com",
            "issuer": issuer.base,
            "via": "oidc",
            "role": "approver",
        }),
        "{:?}",
        decided[0]
    );
    // A token is never written to the log.
    let stderr = serve.stderr();
    for (_, token, ..) in &refused {
        assert!(!stderr.contains(token.as_str()));
    }
    assert!(!stderr.contains(&approver_token) && !stderr.contains(ADMIN_TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_fetched_when_a_token_names_it() {
    let keys = keys();
    let issuer = Issuer::start(vec![keys.issuer.jwk.clone()]).await;
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = temp_dir("rotation");
    let serve = start_serve(&dir.0, &github, &issuer);
    let http = reqwest::Client::new();
    let base = serve.base.clone();
    let old = keys
        .issuer
        .sign(&issuer.claims("root@example.com", json!("admin"), json!({})));
    let mut rotated_jwk = keys.rotated.jwk.clone();
    // Without `alg`, the algorithm is the key type's (RSA: RS256 among others).
    rotated_jwk.as_object_mut().unwrap().remove("alg");
    let new = keys
        .rotated
        .sign(&issuer.claims("root@example.com", json!("admin"), json!({})));
    let get =
        async |token: &str| call(&http, &base, token, Method::GET, "/v1/sessions", None).await;

    assert_eq!(get(&old).await.status, 200);
    assert_eq!(issuer.fetches(), 1, "fetched when the first token came");
    assert_eq!(get(&old).await.status, 200);
    assert_eq!(issuer.fetches(), 1, "then cached");

    // The issuer rotates: only the new key is published.
    issuer.publish(vec![rotated_jwk]);
    assert_eq!(
        get(&old).await.status,
        200,
        "the cached old key still verifies"
    );
    assert_eq!(issuer.fetches(), 1);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let answer = get(&new).await;
    assert_eq!(
        answer.status, 200,
        "the new kid fetched the keys again: {}",
        answer.body
    );
    assert_eq!(issuer.fetches(), 2);
    // That fetch dropped the old key.
    let answer = get(&old).await;
    assert_refusal(
        &answer,
        401,
        "unauthorized",
        "is not among the keys the issuer publishes",
        &old,
        "the withdrawn key",
    );

    // The issuer fails: cached keys still serve; a key that needs a fetch is
    // a 503 that says the keys could not be fetched.
    issuer.failing.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let stranger =
        keys.attacker
            .sign(&issuer.claims("root@example.com", json!("admin"), json!({})));
    let answer = get(&stranger).await;
    assert_refusal(
        &answer,
        503,
        "identity_unavailable",
        "signing keys could not be fetched",
        &stranger,
        "issuer down",
    );
    assert!(
        answer.message().contains("HTTP 500"),
        "{}",
        answer.message()
    );
    assert_eq!(get(&new).await.status, 200, "a cached key needs no fetch");
    drop(serve);
}

#[test]
fn serve_refuses_an_identity_provider_reached_without_tls() {
    let dir = temp_dir("config");
    let config = dir.0.join("serve.toml");
    for (table, says) in [
        (
            "[oidc]\nissuer = \"http://id.example.com\"\naudience = \"scout-admin\"\njwks_url = \"https://id.example.com/jwks\"\n",
            "oidc.issuer: `http://id.example.com` must be an https URL (plain http is accepted only for a loopback host",
        ),
        (
            "[oidc]\nissuer = \"https://id.example.com\"\naudience = \"scout-admin\"\njwks_url = \"http://192.0.2.7/jwks\"\n",
            "oidc.jwks_url: `http://192.0.2.7/jwks` must be an https URL",
        ),
        (
            "[oidc]\nissuer = \"https://id.example.com\"\naudience = \"\"\njwks_url = \"https://id.example.com/jwks\"\n",
            "oidc.audience must not be empty",
        ),
    ] {
        std::fs::write(&config, format!("listen = \"127.0.0.1:0\"\n{table}")).unwrap();
        let stderr = common::serve_as(&config, crate::crash_safety::ADMIN_TOKEN, "5c").refused();
        assert!(stderr.contains(says), "{says:?} in {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_on_a_private_address_is_not_asked_unless_the_operator_allows_it() {
    let keys = keys();
    let issuer = Issuer::start(vec![keys.issuer.jwk.clone()]).await;
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = temp_dir("private-issuer");
    let config = dir.0.join("serve.toml");
    // The same issuer, on loopback, without `allow_private_network`.
    let table = oidc_table(&issuer).replace("allow_private_network = true\n", "");
    std::fs::write(
        &config,
        scout_tests::serve_config_for_github(&github.origin()) + &table,
    )
    .unwrap();
    let serve = common::serve(&config).start();
    let token = keys
        .issuer
        .sign(&issuer.claims("root@example.com", json!("admin"), json!({})));
    let http = reqwest::Client::new();
    let answer = call(
        &http,
        &serve.base,
        &token,
        Method::GET,
        "/v1/sessions",
        None,
    )
    .await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(
        answer.message().contains("address is refused")
            && answer.message().contains("allow_private_network"),
        "says why and what to set: {}",
        answer.message()
    );
    assert_eq!(issuer.fetches(), 0, "the issuer was never asked");
}

/// A role over one brand (`approver:acme`): the approver sees and decides
/// acme's writes and nothing of globex's, through every route that carries
/// a brand; a route about every brand at once (the export, the connectors)
/// is refused; the static admin token still sees both. The subject shown
/// and recorded is the token's `email` (`subject_claim`), not its opaque
/// `sub`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brand_scoped_approver_sees_and_decides_only_its_brand() {
    let keys = keys();
    let issuer = Issuer::start(vec![keys.issuer.jwk.clone()]).await;
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = temp_dir("brands");
    let serve = start_serve_with(&dir.0, &github, &issuer, "subject_claim = \"email\"\n");
    let http = reqwest::Client::new();
    let base = serve.base.clone();
    let admin = Admin {
        http: http.clone(),
        base: base.clone(),
    };
    admin.set_up().await;
    let (status, body) = admin
        .request(
            Method::PUT,
            "/v1/brands/globex/connections/github",
            Some(json!({"secret": GITHUB_TOKEN})),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // One write waiting in each brand, and a capability request parked in each.
    let mut waiting = Vec::new();
    let mut sessions = BTreeMap::new();
    for (brand, branch) in [("acme", "scout/acme"), ("globex", "scout/globex")] {
        let (status, view) = admin
            .request(
                Method::POST,
                "/v1/sessions",
                Some(json!({"brand": brand, "role": "person-chat"})),
            )
            .await;
        assert_eq!(status, 201, "{view}");
        let session = view["id"].as_str().unwrap().to_string();
        let scout = Mcp::for_connector(&http, &view, "scout").connect().await;
        let asked = scout
            .request(
                "tools/call",
                json!({"name": "scout_request_capability", "arguments": {"goal": format!("{brand} goal"), "missing_observation": "m", "proposed_effect": "read", "safe_alternative_tried": "s"}}),
            )
            .await
            .unwrap();
        assert!(ok_text(&asked).is_some(), "{asked}");
        let (call, pending) = admin
            .write_waiting(
                &view,
                json!({"owner": "octo", "repo": "hello", "branch": branch, "from": "main"}),
            )
            .await;
        waiting.push(call);
        sessions.insert(brand, (session, pending["id"].as_i64().unwrap()));
    }
    let (acme_session, acme_approval) = sessions["acme"].clone();
    let (globex_session, globex_approval) = sessions["globex"].clone();

    let approver = keys.issuer.sign(&issuer.claims(
        "00u1a2b3c4opaque",
        json!(["approver:acme", "unrelated-group"]),
        json!({"email": "alice@acme.example"}),
    ));
    let get =
        async |token: &str, path: &str| call(&http, &base, token, Method::GET, path, None).await;

    // Who it is and what it holds.
    let who = get(&approver, "/v1/whoami").await;
    assert_eq!(who.status, 200, "{}", who.body);
    assert_eq!(who.body["subject"], "alice@acme.example");
    assert_eq!(who.body["every_brand"], Value::Null);
    assert_eq!(who.body["brands"], json!({"acme": "approver"}));

    // Approvals: acme's only, by any query.
    let listed = get(&approver, "/v1/approvals").await;
    let ids: Vec<i64> = listed.body["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [acme_approval], "{}", listed.body);
    let listed = get(
        &approver,
        &format!("/v1/approvals?session={globex_session}"),
    )
    .await;
    assert_eq!(listed.body["pending"], json!([]), "{}", listed.body);

    // Deciding globex's: answered as one that does not exist, nothing decided or sent.
    let before = github.requests().len();
    let answer = call(
        &http,
        &base,
        &approver,
        Method::POST,
        &format!("/v1/approvals/{globex_approval}"),
        Some(json!({"approve": true})),
    )
    .await;
    assert_refusal(
        &answer,
        404,
        "not_found",
        &format!("no approval {globex_approval}"),
        &approver,
        "another brand's approval",
    );
    assert!(
        admin
            .pending(&globex_session)
            .await
            .iter()
            .any(|p| p["id"] == globex_approval),
        "globex's approval is still pending"
    );
    assert_eq!(github.requests().len(), before, "nothing was sent");

    // Capability requests: acme's only; globex's cannot be answered.
    let listed = get(&approver, "/v1/capability-requests").await;
    let requests = listed.body["requests"].as_array().unwrap().clone();
    assert_eq!(requests.len(), 1, "{}", listed.body);
    assert_eq!(requests[0]["brand"], "acme");
    let (_, all) = admin
        .request(Method::GET, "/v1/capability-requests", None)
        .await;
    let globex_request = all["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["brand"] == "globex")
        .expect("globex's request")["id"]
        .as_i64()
        .unwrap();
    let answer = call(
        &http,
        &base,
        &approver,
        Method::POST,
        &format!("/v1/capability-requests/{globex_request}"),
        Some(json!({"answer": "no"})),
    )
    .await;
    assert_refusal(
        &answer,
        404,
        "not_found",
        "no capability request",
        &approver,
        "another brand's request",
    );
    let (_, all) = admin
        .request(Method::GET, "/v1/capability-requests", None)
        .await;
    assert_eq!(
        all["requests"].as_array().unwrap().len(),
        2,
        "still both waiting: {all}"
    );

    // Sessions: acme's listed and shown; globex's neither shown nor resumed.
    let listed = get(&approver, "/v1/sessions").await;
    let ids: Vec<&str> = listed.body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [acme_session.as_str()], "{}", listed.body);
    assert_eq!(
        get(&approver, &format!("/v1/sessions/{acme_session}"))
            .await
            .status,
        200
    );
    let answer = get(&approver, &format!("/v1/sessions/{globex_session}")).await;
    assert_refusal(
        &answer,
        404,
        "not_found",
        "no open session",
        &approver,
        "another brand's session",
    );
    let answer = call(
        &http,
        &base,
        &approver,
        Method::POST,
        &format!("/v1/sessions/{globex_session}/resume"),
        None,
    )
    .await;
    assert_refusal(
        &answer,
        404,
        "not_found",
        "no open session",
        &approver,
        "resuming another brand's session",
    );

    // The trace: acme's by brand; globex's refused by brand and empty by session.
    let acme_trace = get(&approver, "/v1/trace?brand=acme").await;
    assert_eq!(acme_trace.status, 200);
    assert!(!acme_trace.body["events"].as_array().unwrap().is_empty());
    let answer = get(&approver, "/v1/trace?brand=globex").await;
    assert_refusal(
        &answer,
        403,
        "brand_not_granted",
        "your roles cover brand(s) `acme`, not `globex`",
        &approver,
        "another brand's trace",
    );
    let by_session = get(&approver, &format!("/v1/trace?session={globex_session}")).await;
    assert_eq!(by_session.status, 200);
    assert_eq!(by_session.body["events"], json!([]), "{}", by_session.body);
    let (_, full) = admin
        .request(
            Method::GET,
            &format!("/v1/trace?session={globex_session}"),
            None,
        )
        .await;
    assert!(
        !full["events"].as_array().unwrap().is_empty(),
        "the admin token sees it"
    );

    // Routes about every brand at once.
    let answer = get(&approver, "/v1/trace/export").await;
    assert_refusal(
        &answer,
        403,
        "forbidden",
        "concerns every brand",
        &approver,
        "the export",
    );

    // A viewer of acme: acme's brand routes, not globex's; not the connectors.
    let viewer = keys
        .issuer
        .sign(&issuer.claims("v1", json!("viewer:acme"), json!({})));
    assert_eq!(
        get(&viewer, "/v1/brands/acme/connections").await.status,
        200
    );
    let answer = get(&viewer, "/v1/brands/globex/connections").await;
    assert_refusal(
        &answer,
        403,
        "brand_not_granted",
        "not `globex`",
        &viewer,
        "another brand's connections",
    );
    let answer = get(&viewer, "/v1/connectors").await;
    assert_refusal(
        &answer,
        403,
        "forbidden",
        "concerns every brand",
        &viewer,
        "the connectors",
    );
    // Nor may it open a session for acme (a viewer reads).
    let answer = call(
        &http,
        &base,
        &viewer,
        Method::POST,
        "/v1/sessions",
        Some(json!({"brand": "acme", "role": "person-chat"})),
    )
    .await;
    assert_eq!(answer.status, 403, "{}", answer.body);

    // An admin of acme opens acme's sessions, not globex's.
    let acme_admin = keys
        .issuer
        .sign(&issuer.claims("a1", json!("admin:acme"), json!({})));
    let answer = call(
        &http,
        &base,
        &acme_admin,
        Method::POST,
        "/v1/sessions",
        Some(json!({"brand": "globex", "role": "person-chat"})),
    )
    .await;
    assert_refusal(
        &answer,
        403,
        "brand_not_granted",
        "not `globex`",
        &acme_admin,
        "a session for another brand",
    );
    let answer = call(
        &http,
        &base,
        &acme_admin,
        Method::POST,
        "/v1/sessions",
        Some(json!({"brand": "acme", "role": "person-chat"})),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.body);

    // Deciding acme's runs it, recorded under the person's email.
    let answer = call(
        &http,
        &base,
        &approver,
        Method::POST,
        &format!("/v1/approvals/{acme_approval}"),
        Some(json!({"approve": true})),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["decided_by"], "alice@acme.example");
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, waiting.remove(0))
        .await
        .expect("acme's write ends")
        .unwrap()
        .unwrap();
    assert!(ok_text(&reply).is_some(), "{reply}");
    assert!(github.branch_sha("octo", "hello", "scout/acme").is_some());
    assert!(github.branch_sha("octo", "hello", "scout/globex").is_none());
    let decided: Vec<_> = admin
        .trace("acme")
        .await
        .into_iter()
        .filter(|e| e.state == scout_host::store::TraceState::Decided)
        .filter(|e| e.session == acme_session)
        .collect();
    assert_eq!(
        decided[0].detail["by"],
        "alice@acme.example (approvals API)"
    );
    // globex's is still the admin token's to decide.
    let (status, _) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{globex_approval}"),
            Some(json!({"approve": false})),
        )
        .await;
    assert_eq!(status, 200);

    // The decisions history: hers are acme's; globex's is not shown to her.
    let decided = wait_for(
        "both decisions traced",
        crate::common::EVENTUALLY,
        async || {
            let (_, all) = admin.request(Method::GET, "/v1/decisions", None).await;
            (all["decisions"].as_array().map_or(0, Vec::len) >= 2).then_some(all)
        },
    )
    .await;
    assert_eq!(
        decided["decisions"][0]["outcome"], "denied",
        "newest first: {decided}"
    );
    for path in ["/v1/decisions", "/v1/decisions?mine=true"] {
        let answer = get(&approver, path).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let listed = answer.body["decisions"].as_array().unwrap().clone();
        assert_eq!(listed.len(), 1, "{path}: {listed:?}");
        assert_eq!(listed[0]["brand"], "acme");
        assert_eq!(listed[0]["outcome"], "approved");
        assert_eq!(listed[0]["by"], "alice@acme.example (approvals API)");
    }
    let answer = get(
        &approver,
        &format!("/v1/decisions?session={globex_session}"),
    )
    .await;
    assert_eq!(answer.body["decisions"], json!([]), "{}", answer.body);
    let (_, own) = admin
        .request(Method::GET, "/v1/decisions?mine=true", None)
        .await;
    assert_eq!(own["decisions"].as_array().unwrap().len(), 1, "{own}");
    assert_eq!(own["decisions"][0]["brand"], "globex");
}

/// Sharing a connection lends its credential to another brand's sessions
/// (issue 52 item 3). An admin of acme alone cannot lend acme's GitHub
/// connection to initech, which has none: 403 naming both brands, nothing
/// shared or recorded, initech's next session has no GitHub tool. An admin
/// of both brands, and a global admin, can: initech's next session has
/// GitHub's tools, and both brands' trails record the share with the
/// actor. The lending brand's own admin may withdraw it, recorded on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharing_a_connection_needs_an_admin_of_both_brands_and_is_recorded_on_both() {
    let keys = keys();
    let issuer = Issuer::start(vec![keys.issuer.jwk.clone()]).await;
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = temp_dir("share");
    let serve = start_serve(&dir.0, &github, &issuer);
    let http = reqwest::Client::new();
    let base = serve.base.clone();
    let admin = Admin {
        http: http.clone(),
        base: base.clone(),
    };
    admin.set_up().await;
    let token = |sub: &str, roles: Value| keys.issuer.sign(&issuer.claims(sub, roles, json!({})));
    let acme_admin = token("acme-admin", json!("admin:acme"));
    let both_admin = token("both-admin", json!(["admin:acme", "admin:initech"]));
    let global_admin = token("global-admin", json!("admin"));
    let share = "/v1/brands/acme/connections/github/shares/initech";
    // initech's next session, as the admin token opens it: its GitHub tools.
    let initech_github = async || {
        let (status, view) = admin
            .request(
                Method::POST,
                "/v1/sessions",
                Some(json!({"brand": "initech", "role": "person-chat"})),
            )
            .await;
        assert_eq!(status, 201, "{view}");
        view["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| t.starts_with("mcp__github__"))
            .count()
    };
    let shares = async |brand: &str| -> Vec<scout_host::store::TraceEvent> {
        admin
            .trace(brand)
            .await
            .into_iter()
            .filter(|e| {
                matches!(
                    e.rule.as_deref(),
                    Some("connection_shared" | "connection_unshared")
                )
            })
            .collect()
    };
    assert_eq!(initech_github().await, 0, "initech has no connection");

    // An admin of acme alone: refused, naming both brands; nothing shared.
    let answer = call(&http, &base, &acme_admin, Method::PUT, share, None).await;
    assert_refusal(
        &answer,
        403,
        "brand_not_granted",
        "needs the admin role over both brands",
        &acme_admin,
        "a share by an admin of the lending brand alone",
    );
    assert!(
        answer.message().contains("`initech`") && answer.message().contains("admin:acme"),
        "{}",
        answer.message()
    );
    assert_eq!(initech_github().await, 0, "no GitHub tool was lent");
    assert!(shares("acme").await.is_empty());
    assert!(shares("initech").await.is_empty());
    let (_, listed) = admin
        .request(Method::GET, "/v1/brands/initech/connections", None)
        .await;
    assert_eq!(listed["connections"], json!([]), "{listed}");

    // An admin of both brands may; so may a global admin. Each share is
    // recorded under both brands, with the actor.
    for (who, bearer) in [("both-admin", &both_admin), ("global-admin", &global_admin)] {
        let answer = call(&http, &base, bearer, Method::PUT, share, None).await;
        assert_eq!(answer.status, 200, "{who}: {}", answer.body);
        assert_eq!(answer.body["shared_with"], "initech", "{}", answer.body);
        assert!(
            initech_github().await > 0,
            "{who}: initech has GitHub's tools"
        );
        for brand in ["acme", "initech"] {
            let rows = shares(brand).await;
            let last = rows
                .last()
                .unwrap_or_else(|| panic!("{who}: no row under {brand}"));
            assert_eq!(last.brand, brand);
            assert_eq!(last.rule.as_deref(), Some("connection_shared"));
            assert_eq!(last.detail["actor"]["subject"], who, "{:?}", last.detail);
            assert_eq!(last.detail["actor"]["via"], "oidc", "{:?}", last.detail);
            assert_eq!(last.detail["owner"], "acme");
            assert_eq!(last.detail["with"], "initech");
            assert_eq!(last.detail["connector"], "github");
            assert_eq!(last.detail["after"], json!({"shared_with": "initech"}));
        }

        // The lending brand's admin withdraws its own credential.
        let answer = call(&http, &base, &acme_admin, Method::DELETE, share, None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(initech_github().await, 0, "withdrawn");
        for brand in ["acme", "initech"] {
            let last = shares(brand).await.pop().unwrap();
            assert_eq!(last.rule.as_deref(), Some("connection_unshared"));
            assert_eq!(last.detail["actor"]["subject"], "acme-admin");
            assert_eq!(last.detail["after"], Value::Null);
        }
    }
    assert_eq!(
        shares("initech").await.len(),
        4,
        "two shares, two withdrawals"
    );
    assert!(
        github.requests().is_empty(),
        "nothing reached GitHub: {:?}",
        github.requests()
    );
}

/// The exact arguments of a decided call are kept in the trace's row of the
/// decision, sealed with the store key: the admin token and an `auditor`
/// read them through the trace and the export; an approver sees only their
/// digest; the row as stored (the CLI's export) holds no plain arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decisions_arguments_are_kept_sealed_and_read_only_by_the_admin_token_and_an_auditor() {
    let keys = keys();
    let issuer = Issuer::start(vec![keys.issuer.jwk.clone()]).await;
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = temp_dir("sealed");
    let serve = start_serve(&dir.0, &github, &issuer);
    let http = reqwest::Client::new();
    let base = serve.base.clone();
    let admin = Admin {
        http: http.clone(),
        base: base.clone(),
    };
    admin.set_up().await;
    let view = admin.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let arguments =
        json!({"owner": "octo", "repo": "hello", "branch": "scout/sealed-7f3a9c", "from": "main"});
    let (waiting, pending) = admin.write_waiting(&view, arguments.clone()).await;
    let digest = pending["args_digest"].as_str().unwrap().to_string();
    let (status, _) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", pending["id"]),
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, 200);
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(ok_text(&reply).is_some(), "{reply}");

    let auditor =
        keys.issuer
            .sign(&issuer.claims("audit@example.com", json!("auditor"), json!({})));
    let approver =
        keys.issuer
            .sign(&issuer.claims("alice@example.com", json!("approver"), json!({})));
    let decided_in = |rows: Vec<Value>| -> Value {
        let decided: Vec<Value> = rows
            .into_iter()
            .filter(|r| r["session"] == session.as_str() && r["state"] == "decided")
            .collect();
        assert_eq!(decided.len(), 1, "{decided:?}");
        decided[0]["detail"].clone()
    };
    let export_rows = |text: String| -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let export = async |token: &str| {
        let response = http
            .get(format!("{base}/v1/trace/export"))
            .header(AUTHORIZATION, format!("Bearer {token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        response.text().await.unwrap()
    };
    let trace = async |token: &str| {
        let answer = call(
            &http,
            &base,
            token,
            Method::GET,
            &format!("/v1/trace?session={session}"),
            None,
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body["events"].as_array().unwrap().clone()
    };

    // The admin token and the auditor read the arguments, in both.
    for token in [ADMIN_TOKEN.to_string(), auditor.clone()] {
        for detail in [
            decided_in(export_rows(export(&token).await)),
            decided_in(trace(&token).await),
        ] {
            assert_eq!(detail["arguments"], arguments, "{detail}");
            assert_eq!(detail["args_digest"], digest.as_str());
            assert!(detail.get("sealed_arguments").is_none(), "{detail}");
            assert_eq!(detail["actor"]["kind"], "admin_token", "{detail}");
            assert_eq!(detail["actor"]["via"], "admin_token", "{detail}");
        }
    }
    // An auditor of acme alone reads acme's decided arguments in its trace
    // (and nothing of another brand, nor the every-brand export); an
    // auditor of globex sees none of acme's rows.
    assert_eq!(view["brand"], "acme", "{view}");
    let acme_auditor = keys.issuer.sign(&issuer.claims(
        "acme-audit@example.com",
        json!(["auditor:acme"]),
        json!({}),
    ));
    let globex_auditor = keys.issuer.sign(&issuer.claims(
        "globex-audit@example.com",
        json!("auditor:globex"),
        json!({}),
    ));
    let detail = decided_in(trace(&acme_auditor).await);
    assert_eq!(detail["arguments"], arguments, "{detail}");
    let whoami = call(&http, &base, &acme_auditor, Method::GET, "/v1/whoami", None).await;
    assert_eq!(whoami.body["reads_arguments"], false, "{}", whoami.body);
    assert_eq!(
        whoami.body["reads_arguments_of"],
        json!(["acme"]),
        "{}",
        whoami.body
    );
    assert_eq!(
        whoami.body["brands"],
        json!({"acme": "viewer"}),
        "{}",
        whoami.body
    );
    assert!(trace(&globex_auditor).await.is_empty());
    let response = http
        .get(format!("{base}/v1/trace/export"))
        .header(AUTHORIZATION, format!("Bearer {acme_auditor}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    for token in [&acme_auditor, &globex_auditor] {
        let answer = call(
            &http,
            &base,
            token,
            Method::POST,
            "/v1/approvals/1",
            Some(json!({"approve": false})),
        )
        .await;
        assert_eq!(answer.status, 403, "{}", answer.body);
    }
    // An approver: the digest only.
    for detail in [
        decided_in(export_rows(export(&approver).await)),
        decided_in(trace(&approver).await),
    ] {
        assert!(detail.get("arguments").is_none(), "{detail}");
        assert!(detail.get("sealed_arguments").is_none(), "{detail}");
        assert_eq!(detail["args_digest"], digest.as_str());
    }
    // An auditor decides nothing.
    let answer = call(
        &http,
        &base,
        &auditor,
        Method::POST,
        "/v1/approvals/1",
        Some(json!({"approve": false})),
    )
    .await;
    assert_eq!(answer.status, 403, "{}", answer.body);

    // As stored: sealed, and no row holds the arguments in the clear.
    drop(serve);
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["trace", "export", "--config"])
        .arg(dir.0.join("serve.toml"))
        .current_dir(&dir.0)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = String::from_utf8(out.stdout).unwrap();
    let detail = decided_in(export_rows(stored.clone()));
    assert!(
        detail["sealed_arguments"]["ciphertext"].is_string(),
        "{detail}"
    );
    assert!(
        !stored.contains("scout/sealed-7f3a9c"),
        "no stored row holds the arguments in the clear"
    );
}

/// Every change made through the admin API is a `changed` row of the audit
/// export, with its actor as structured fields (kind, subject, issuer, via,
/// role), what it was and became, an RFC 3339 time, and never a secret:
/// sessions opened and ended, connections stored, shared, unshared and
/// disabled, tools reviewed, profiles saved and deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_through_the_admin_api_is_an_audit_row_with_its_actor() {
    let keys = keys();
    let issuer = Issuer::start(vec![keys.issuer.jwk.clone()]).await;
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = temp_dir("changes");
    let serve = start_serve_with(&dir.0, &github, &issuer, "subject_claim = \"email\"\n");
    let http = reqwest::Client::new();
    let base = serve.base.clone();
    let admin = Admin {
        http: http.clone(),
        base: base.clone(),
    };
    admin.set_up().await;
    let person = keys.issuer.sign(&issuer.claims(
        "00u-opaque-root",
        json!("admin"),
        json!({"email": "root@example.com"}),
    ));
    const SECRET: &str = "ghp_globexSecretNeverInTheTrail0001";
    let steps: Vec<(Method, String, Option<Value>)> = vec![
        (
            Method::PUT,
            "/v1/brands/globex/connections/github".into(),
            Some(json!({"secret": SECRET})),
        ),
        (
            Method::PUT,
            "/v1/brands/globex/connections/github/shares/initech".into(),
            None,
        ),
        (
            Method::DELETE,
            "/v1/brands/globex/connections/github/shares/initech".into(),
            None,
        ),
        (
            Method::PUT,
            "/v1/brands/acme/profiles/helper".into(),
            Some(
                json!({"kind": "coworker", "profile": {"name": "helper", "tools": ["Read"], "limits": {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 0}}}),
            ),
        ),
        (
            Method::DELETE,
            "/v1/brands/acme/profiles/helper".into(),
            None,
        ),
        (
            Method::DELETE,
            "/v1/brands/globex/connections/github".into(),
            None,
        ),
    ];
    for (method, path, body) in steps {
        let answer = call(&http, &base, &person, method.clone(), &path, body).await;
        assert_eq!(answer.status, 200, "{method} {path}: {}", answer.body);
    }
    // The orchestrator's request names its trace: the row keeps it.
    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const SPAN: &str = "00f067aa0ba902b7";
    let opened = http
        .post(format!("{base}/v1/sessions"))
        .header(AUTHORIZATION, format!("Bearer {person}"))
        .header("traceparent", format!("00-{TRACE}-{SPAN}-01"))
        .json(&json!({"brand": "acme", "role": "person-chat"}))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status().as_u16(), 201);
    let opened: Value = opened.json().await.unwrap();
    let session = opened["id"].as_str().unwrap().to_string();
    let ended = call(
        &http,
        &base,
        &person,
        Method::DELETE,
        &format!("/v1/sessions/{session}"),
        None,
    )
    .await;
    assert_eq!(ended.status, 200, "{}", ended.body);

    let response = http
        .get(format!("{base}/v1/trace/export"))
        .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"))
        .send()
        .await
        .unwrap();
    let export = response.text().await.unwrap();
    assert!(!export.contains(SECRET), "no secret in the audit trail");
    assert!(
        !export.contains(GITHUB_TOKEN),
        "no secret in the audit trail"
    );
    let rows: Vec<Value> = export
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let changed: Vec<&Value> = rows.iter().filter(|r| r["state"] == "changed").collect();
    let by_person = |rule: &str| -> Value {
        changed
            .iter()
            .find(|r| r["rule"] == rule && r["detail"]["actor"]["kind"] == "person")
            .map(|r| (*r).clone())
            .unwrap_or_else(|| panic!("no `{rule}` row by the person: {changed:?}"))
    };
    let person_actor = json!({"kind": "person", "subject": "root@example.com", "sub": "00u-opaque-root", "issuer": issuer.base, "via": "oidc", "role": "admin"});
    for rule in [
        "connection_stored",
        "connection_shared",
        "connection_unshared",
        "profile_saved",
        "profile_deleted",
        "connection_disabled",
        "session_opened",
        "session_ended",
    ] {
        let row = by_person(rule);
        assert_eq!(row["detail"]["actor"], person_actor, "{rule}: {row}");
        let time = row["time"].as_str().unwrap();
        assert!(
            time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
            "{rule}: an RFC 3339 time beside at_ms: {time}"
        );
    }
    let stored = by_person("connection_stored");
    assert_eq!(stored["brand"], "globex");
    assert_eq!(stored["detail"]["before"], Value::Null);
    assert_eq!(stored["detail"]["after"]["source"], "own", "{stored}");
    assert_eq!(
        by_person("connection_disabled")["detail"]["before"]["source"],
        "own"
    );
    assert_eq!(
        by_person("profile_saved")["detail"]["after"]["profile"]["tools"],
        json!(["Read"])
    );
    assert_eq!(
        by_person("profile_deleted")["detail"]["before"]["profile"]["name"],
        "helper"
    );
    let opened_row = by_person("session_opened");
    assert_eq!(opened_row["session"], session.as_str());
    assert_eq!(
        (&opened_row["trace_id"], &opened_row["span_id"]),
        (&json!(TRACE), &json!(SPAN)),
        "{opened_row}"
    );
    // So do the session's set-up rows, written by the same request.
    let offered = rows
        .iter()
        .find(|r| r["session"] == session.as_str() && r["state"] == "offered")
        .expect("the session's offered row");
    assert_eq!(offered["trace_id"], TRACE, "{offered}");
    // A request that named no trace: none.
    let ended_row = by_person("session_ended");
    assert_eq!(ended_row["trace_id"], Value::Null, "{ended_row}");
    // Every row names the host that wrote it: this one, the same id.
    let host = rows[0]["host"].as_str().unwrap_or_default().to_string();
    assert!(
        host.len() == 18
            && host.starts_with("h-")
            && host[2..].bytes().all(|b| b.is_ascii_hexdigit()),
        "{:?}",
        rows[0]
    );
    assert!(rows.iter().all(|r| r["host"] == host.as_str()), "{rows:?}");
    assert_eq!(opened_row["detail"]["after"]["role"], "person-chat");
    assert_eq!(by_person("session_ended")["session"], session.as_str());
    // The operator's own set-up is there too, by the admin token.
    let reviewed = changed
        .iter()
        .filter(|r| r["rule"] == "tool_reviewed")
        .collect::<Vec<_>>();
    assert!(!reviewed.is_empty());
    assert_eq!(reviewed[0]["detail"]["actor"]["kind"], "admin_token");
    assert!(reviewed[0]["detail"]["after"]["digest"].is_string());
}

/// The policy what-if (`POST /v1/policies/test`) replays every brand's
/// recorded calls: the admin token and an auditor of every brand may ask
/// it; an approver or a viewer is refused. It stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_what_if_is_for_an_admin_or_an_auditor() {
    let keys = keys();
    let issuer = Issuer::start(vec![keys.issuer.jwk.clone()]).await;
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = temp_dir("what-if");
    let serve = start_serve(&dir.0, &github, &issuer);
    let http = reqwest::Client::new();
    let candidate = json!({
        "name": "what-if.cedar",
        "text": "forbid (principal, action == Scout::Action::\"mcp__github__github_read_file\", resource);",
    });
    let signed = |who: &str, role: &str| {
        keys.issuer
            .sign(&issuer.claims(who, json!(role), json!({})))
    };
    for (token, status) in [
        (ADMIN_TOKEN.to_string(), 200),
        (signed("audit@example.com", "auditor"), 200),
        (signed("alice@example.com", "approver"), 403),
        (signed("audrey@example.com", "viewer"), 403),
    ] {
        let answer = call(
            &http,
            &serve.base,
            &token,
            Method::POST,
            "/v1/policies/test",
            Some(candidate.clone()),
        )
        .await;
        assert_eq!(answer.status, status, "{}", answer.body);
        if status == 200 {
            assert_eq!(answer.body["replayed"], 0, "{}", answer.body);
        } else {
            assert_eq!(answer.code(), "forbidden", "{}", answer.body);
        }
    }
    let listed = call(
        &http,
        &serve.base,
        ADMIN_TOKEN,
        Method::GET,
        "/v1/policies",
        None,
    )
    .await;
    assert_eq!(listed.body["policies"], json!([]), "{}", listed.body);
}
