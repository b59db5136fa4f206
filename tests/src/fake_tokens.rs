//! A loopback authorization server, token broker and API in one, for the
//! tests of the tokens the host obtains itself: an OAuth 2.0 token endpoint
//! (`POST /oauth/token`, RFC 6749 §5.1 answers and §5.2 errors, form-encoded
//! requests), Nango's connection endpoint (`GET /nango/connections/{id}`,
//! UNVERIFIED against a live Nango: written from its API reference), and an
//! upstream that answers connector fixtures only to a bearer token it
//! issued (401 otherwise). Every request is recorded.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the token endpoint answers.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenMode {
    /// 200 with a new token; `expires_in` when `Some`; after `delay`.
    Issue {
        expires_in: Option<u64>,
        delay: Duration,
    },
    /// 400 `invalid_grant`, with an `error_description` holding [`CANARY`].
    InvalidGrant,
    /// 503 with a body holding [`CANARY`].
    Unavailable,
    /// Answers only after this long.
    Stall(Duration),
}

/// Text the endpoint puts in its error bodies: it must appear nowhere the
/// host shows (trace, errors, guest output).
pub const CANARY: &str = "token-endpoint-body-canary-7f3a";

/// One request to the token endpoint or the broker.
#[derive(Debug, Clone)]
pub struct TokenCall {
    /// `oauth` or `broker`.
    pub endpoint: &'static str,
    /// The form fields (OAuth) or query pairs (broker).
    pub fields: BTreeMap<String, String>,
    /// The broker's connection id (from the path).
    pub connection: Option<String>,
    pub authorization: Option<String>,
}

/// One request to the API side.
#[derive(Debug, Clone)]
pub struct ApiCall {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    /// Whether it was answered (a token the server issued), or 401.
    pub accepted: bool,
}

struct Shared {
    mode: Mutex<TokenMode>,
    issued: Mutex<u64>,
    valid: Mutex<BTreeSet<String>>,
    token_calls: Mutex<Vec<TokenCall>>,
    api_calls: Mutex<Vec<ApiCall>>,
    /// Fixture answers by (method, path).
    answers: Mutex<BTreeMap<(String, String), (u16, Value)>>,
    broker_secret: String,
    /// What every token it issues starts with.
    prefix: &'static str,
}

/// The running server; stops when dropped.
pub struct FakeTokens {
    origin: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeTokens {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeTokens {
    /// Starts on 127.0.0.1:0; tokens it issues start with `prefix`; the
    /// broker answers only `broker_secret`.
    pub async fn start(prefix: &'static str, broker_secret: &str) -> FakeTokens {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind 127.0.0.1:0");
        let origin = format!("http://{}", listener.local_addr().expect("local address"));
        let shared = Arc::new(Shared {
            mode: Mutex::new(TokenMode::Issue {
                expires_in: Some(3600),
                delay: Duration::ZERO,
            }),
            issued: Mutex::new(0),
            valid: Mutex::new(BTreeSet::new()),
            token_calls: Mutex::new(Vec::new()),
            api_calls: Mutex::new(Vec::new()),
            answers: Mutex::new(BTreeMap::new()),
            broker_secret: broker_secret.to_string(),
            prefix,
        });
        let app = Router::new()
            .route("/oauth/token", axum::routing::post(token))
            .route("/nango/connections/{id}", axum::routing::get(broker))
            .fallback(api)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeTokens {
            origin,
            shared,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`: the API's origin.
    pub fn origin(&self) -> String {
        self.origin.clone()
    }

    /// The token endpoint's URL.
    pub fn token_url(&self) -> String {
        format!("{}/oauth/token", self.origin)
    }

    /// The broker's URL (`[token_broker] url`).
    pub fn broker_url(&self) -> String {
        format!("{}/nango", self.origin)
    }

    pub fn set_mode(&self, mode: TokenMode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// Answers `method path` with `status` and `body` (a fixture's
    /// response). A string `{{TOKEN}}` anywhere in it is replaced by the
    /// bearer token the request carried.
    pub fn answer(&self, method: &str, path: &str, status: u16, body: Value) {
        self.shared
            .answers
            .lock()
            .unwrap()
            .insert((method.to_string(), path.to_string()), (status, body));
    }

    /// Answers the first exchange of a connector fixture file.
    pub fn answer_fixture(&self, connector: &str, file: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../connectors")
            .join(connector)
            .join("fixtures")
            .join(file);
        let fixture: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let exchange = &fixture["exchanges"][0];
        let body = exchange["response"]["json"].clone();
        self.answer(
            exchange["request"]["method"].as_str().unwrap(),
            exchange["request"]["path"].as_str().unwrap(),
            exchange["response"]["status"].as_u64().unwrap() as u16,
            body,
        );
    }

    /// Every token it issued stops being accepted (the upstream's next
    /// answer is 401).
    pub fn revoke_all(&self) {
        self.shared.valid.lock().unwrap().clear();
    }

    pub fn token_calls(&self) -> Vec<TokenCall> {
        self.shared.token_calls.lock().unwrap().clone()
    }

    pub fn api_calls(&self) -> Vec<ApiCall> {
        self.shared.api_calls.lock().unwrap().clone()
    }

    /// The tokens it issued so far, in order.
    pub fn issued(&self) -> Vec<String> {
        let n = *self.shared.issued.lock().unwrap();
        (1..=n)
            .map(|i| format!("{}{i}", self.shared.prefix))
            .collect()
    }
}

fn issue(shared: &Shared) -> String {
    let mut n = shared.issued.lock().unwrap();
    *n += 1;
    let token = format!("{}{}", shared.prefix, *n);
    shared.valid.lock().unwrap().insert(token.clone());
    token
}

async fn token(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let fields: BTreeMap<String, String> = url::form_urlencoded::parse(&body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    shared.token_calls.lock().unwrap().push(TokenCall {
        endpoint: "oauth",
        fields: fields.clone(),
        connection: None,
        authorization: header(&headers, "authorization"),
    });
    let mode = shared.mode.lock().unwrap().clone();
    match mode {
        TokenMode::Issue { expires_in, delay } => {
            tokio::time::sleep(delay).await;
            let mut answer = json!({"access_token": issue(&shared), "token_type": "Bearer"});
            if let Some(secs) = expires_in {
                answer["expires_in"] = json!(secs);
            }
            if let Some(scope) = fields.get("scope") {
                answer["scope"] = json!(scope);
            }
            axum::Json(answer).into_response()
        }
        TokenMode::InvalidGrant => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({
                "error": "invalid_grant",
                "error_description": format!("Token has been expired or revoked. {CANARY}")
            })),
        )
            .into_response(),
        TokenMode::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("<html>{CANARY}</html>"),
        )
            .into_response(),
        TokenMode::Stall(d) => {
            tokio::time::sleep(d).await;
            axum::Json(json!({"access_token": issue(&shared), "token_type": "Bearer"}))
                .into_response()
        }
    }
}

/// Nango's `GET /connections/{connectionId}?provider_config_key=...`.
async fn broker(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let fields: BTreeMap<String, String> =
        url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
    let authorization = header(&headers, "authorization");
    shared.token_calls.lock().unwrap().push(TokenCall {
        endpoint: "broker",
        fields: fields.clone(),
        connection: Some(id.clone()),
        authorization: authorization.clone(),
    });
    if authorization.as_deref() != Some(&format!("Bearer {}", shared.broker_secret)) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": {"code": "unknown_environment", "message": CANARY}})),
        )
            .into_response();
    }
    let expires_at = chrono_free_rfc3339(3600);
    axum::Json(json!({
        "id": 7,
        "connection_id": id,
        "provider_config_key": fields.get("provider_config_key"),
        "provider": "figma",
        "credentials": {
            "type": "OAUTH2",
            "access_token": issue(&shared),
            "refresh_token": format!("nango-refresh-{CANARY}"),
            "expires_at": expires_at,
            "raw": {}
        }
    }))
    .into_response()
}

/// An RFC 3339 UTC time `secs` from now, without a date library.
fn chrono_free_rfc3339(secs: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + secs;
    let (days, rem) = (now / 86_400, now % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

async fn api(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let authorization = header(&headers, "authorization");
    let bearer = authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "))
        .map(str::to_string);
    let accepted = bearer
        .as_ref()
        .is_some_and(|t| shared.valid.lock().unwrap().contains(t));
    shared.api_calls.lock().unwrap().push(ApiCall {
        method: method.to_string(),
        path: uri.path().to_string(),
        authorization,
        accepted,
    });
    if !accepted {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"message": "invalid or expired token"})),
        )
            .into_response();
    }
    let answer = shared
        .answers
        .lock()
        .unwrap()
        .get(&(method.to_string(), uri.path().to_string()))
        .cloned();
    match answer {
        Some((status, body)) => {
            let text = body
                .to_string()
                .replace("{{TOKEN}}", bearer.as_deref().unwrap_or_default());
            (
                StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
                [("content-type", "application/json")],
                text,
            )
                .into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"message": "no such fixture"})),
        )
            .into_response(),
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}
