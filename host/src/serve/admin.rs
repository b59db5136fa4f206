//! The admin HTTP API and the router that also carries the MCP endpoints.
//!
//! Every request passes the `Host` check first (DNS rebinding), then a
//! bearer token: for `/v1/...` the admin token or, with `[oidc]`, a token
//! of the issuer, whose role must permit the route ([`super::identity`]);
//! the session's own token for `/mcp/{session}/{connector}`. Handlers read
//! the caller as a [`Principal`] extension. Every error is JSON of one shape,
//! `{"error": {"code": "...", "message": "..."}}`, with a stable `code`;
//! bodies are capped at `max_request_bytes`.

use super::identity::{Principal, Refusal};
use super::{HostError, OpenSession, ServeHost};
use crate::policy::Profile;
use crate::store::{ApprovalError, ApprovalId, ProfileKind, SaveProfileError, TraceFilter};
use axum::extract::rejection::JsonRejection;
use axum::extract::{
    DefaultBodyLimit, Extension, FromRequest, MatchedPath, Path, RawQuery, Request, State,
};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tower::ServiceExt;

/// A refusal, as JSON: `{"error": {"code", "message"}}`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// The request field at fault, where one is (`oauth.token_url`).
    field: Option<String>,
}

impl ApiError {
    pub(super) fn new(
        status: StatusCode,
        code: &'static str,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
        }
    }
    /// 422: the body's `field` is not acceptable.
    pub(super) fn invalid_field(
        code: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            field: Some(field.into()),
            ..ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
        }
    }
    pub(super) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
    pub(super) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(field) = self.field {
            error["field"] = json!(field);
        }
        (self.status, Json(json!({ "error": error }))).into_response()
    }
}

impl From<HostError> for ApiError {
    fn from(e: HostError) -> ApiError {
        match e {
            HostError::BadRequest(m) => ApiError::bad_request(m),
            HostError::NotFound(m) => ApiError::not_found(m),
            HostError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
            HostError::InvalidProfile(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_profile", m)
            }
            HostError::Unavailable(m) => {
                tracing::error!(error = %m, "unavailable");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", m)
            }
            HostError::Store(e) => {
                tracing::error!(error = %e, "store error");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    "the store is unavailable",
                )
            }
        }
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> ApiError {
        HostError::from(e).into()
    }
}

/// A JSON body whose rejections are [`ApiError`]s.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(Body(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "the request body is too large",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send `Content-Type: application/json`",
        ),
        _ => ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            rejection.body_text(),
        ),
    }
}

fn query<T: DeserializeOwned>(raw: Option<String>) -> Result<T, ApiError> {
    let text = raw.unwrap_or_default();
    serde_json::from_value(Value::Object(
        url::form_urlencoded::parse(text.as_bytes())
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect(),
    ))
    .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", e.to_string()))
}

/// The whole router: admin API under `/v1`, MCP under `/mcp`.
pub(crate) fn router(host: Arc<ServeHost>) -> Router {
    let limit = host.config.max_request_bytes;
    let admin = Router::new()
        .route("/v1/health", get(health))
        .route("/v1/whoami", get(whoami))
        .route("/v1/sessions", post(create_session).get(list_sessions))
        .route("/v1/sessions/{id}", get(get_session).delete(end_session))
        .route("/v1/sessions/{id}/resume", post(resume_session))
        .route("/v1/sessions/{id}/agent-config", get(agent_config))
        .route("/v1/brands/{brand}/profiles", get(list_profiles))
        .route(
            "/v1/brands/{brand}/profiles/{name}",
            put(save_profile).get(get_profile).delete(delete_profile),
        )
        .route("/v1/brands/{brand}/connections", get(list_connections))
        .route(
            "/v1/brands/{brand}/connections/{connector}",
            put(put_connection).delete(disable_connection),
        )
        .route(
            "/v1/brands/{brand}/connections/{connector}/authorize",
            post(super::connect::authorize),
        )
        .route(
            "/v1/brands/{brand}/connections/{connector}/shares/{with}",
            put(share).delete(unshare),
        )
        .route("/v1/approvals", get(list_approvals))
        .route("/v1/capability-requests", get(list_capability_requests))
        .route(
            "/v1/capability-requests/{id}",
            post(answer_capability_request),
        )
        .route("/v1/approvals/{id}", post(decide_approval))
        .route("/v1/reviews", get(list_reviews).post(approve_review))
        .route("/v1/trace", get(trace))
        .route("/v1/trace/export", get(trace_export))
        .route("/v1/audit", get(super::authority::audit_endpoint))
        // Behind the admin credential, like the rest of the admin API.
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(
            host.clone(),
            require_identity,
        ));
    let mcp = Router::new()
        .route("/mcp/{session}/{connector}", any(mcp_endpoint))
        // A browser's redirect from an authorization server: no admin
        // credential; trusted only for what its sealed `state` says.
        .route(super::connect::CALLBACK, get(super::connect::callback));
    let checked = admin
        .merge(mcp)
        .merge(super::console::routes())
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "method not allowed",
            )
        })
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn(json_errors))
        .layer(middleware::from_fn_with_state(host.clone(), check_host));
    // Probes answer whatever the Host header: a kubelet sends the pod's IP.
    // Every answer is counted until it is handed over, so a drain waits for it.
    super::drain::probes()
        .merge(checked)
        .layer(middleware::from_fn_with_state(
            host.clone(),
            super::drain::track,
        ))
        .with_state(host)
}

/// Gives every error the one JSON shape, including those written by
/// extractors (a path that is not UTF-8) and by the MCP transport (a
/// missing `Accept` header): a client parses one kind of error.
async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        // A page for a browser (the OAuth callback's) is left as written.
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let www_authenticate = response.headers().get(header::WWW_AUTHENTICATE).cloned();
    let text = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let code = match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::NOT_ACCEPTABLE => "not_acceptable",
        StatusCode::CONFLICT => "conflict",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::UNPROCESSABLE_ENTITY => "unprocessable",
        s if s.is_server_error() => "internal_error",
        _ => "bad_request",
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text
    };
    let mut response = ApiError::new(status, code, message).into_response();
    if let Some(value) = www_authenticate {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Refuses a `Host` header outside the configured list (DNS rebinding).
async fn check_host(State(host): State<Arc<ServeHost>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase);
    match given {
        Some(h) if host.answers_to(&h) => next.run(request).await,
        _ => ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "the Host header is not one this server answers to",
        )
        .into_response(),
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn unauthorized() -> Response {
    let mut response = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "a valid bearer token is required",
    )
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}

/// 401 for a token that is not acceptable, saying why (RFC 6750); the
/// description is one of [`super::identity::InvalidToken`]'s fixed sentences.
fn invalid_token(why: &str) -> Response {
    let mut response = ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", why).into_response();
    let challenge = format!(
        "Bearer error=\"invalid_token\", error_description=\"{}\"",
        why.replace(['"', '\\'], "'")
    );
    let value = header::HeaderValue::from_str(&challenge)
        .unwrap_or_else(|_| header::HeaderValue::from_static("Bearer error=\"invalid_token\""));
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, value);
    response
}

/// Who the bearer token proves: the admin token, or a token of the
/// `[oidc]` issuer. The refusal is the response to send.
async fn authenticate(host: &ServeHost, token: Option<&str>) -> Result<Principal, Response> {
    let Some(token) = token else {
        return Err(unauthorized());
    };
    if host.admin_token_matches(token) {
        return Ok(Principal::admin_token());
    }
    let Some(verifier) = host
        .identity()
        .filter(|_| super::identity::OidcVerifier::looks_like_jwt(token))
    else {
        return Err(unauthorized());
    };
    match verifier.verify(token).await {
        Ok(principal) => Ok(principal),
        Err(Refusal::Invalid(why)) => {
            tracing::info!(reason = %why, "admin API token refused");
            Err(invalid_token(&why.to_string()))
        }
        Err(refusal @ Refusal::KeysUnavailable(_)) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "identity_unavailable",
            refusal.to_string(),
        )
        .into_response()),
        Err(refusal @ Refusal::NoRole { .. }) => {
            Err(
                ApiError::new(StatusCode::FORBIDDEN, "forbidden", refusal.to_string())
                    .into_response(),
            )
        }
    }
}

/// The admin API's gate: a caller whose role permits the route, inserted
/// into the request as a [`Principal`].
async fn require_identity(
    State(host): State<Arc<ServeHost>>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = match authenticate(&host, bearer(request.headers())).await {
        Ok(principal) => principal,
        Err(response) => return response,
    };
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| request.uri().path().to_string());
    if let Err(why) = super::identity::permit(principal.role, request.method().as_str(), &route) {
        return ApiError::new(StatusCode::FORBIDDEN, "forbidden", why).into_response();
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// Forwards to the session's MCP service after checking its token. The
/// body is capped before it is handed on.
async fn mcp_endpoint(
    State(host): State<Arc<ServeHost>>,
    Path((session, connector)): Path<(String, String)>,
    request: Request,
) -> Response {
    // An unknown (or ended) session and a wrong token get the same answer,
    // so a session id alone reveals nothing.
    let Some(live) = host.session(&session) else {
        return unauthorized();
    };
    match bearer(request.headers()) {
        Some(token) if live.token_matches(token) => {}
        _ => return unauthorized(),
    }
    let Some((_, endpoint)) = host.endpoint(&session, &connector) else {
        return ApiError::not_found(format!(
            "connector `{connector}` is not served to this session"
        ))
        .into_response();
    };
    let limit = host.config.max_request_bytes;
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                "the request body is too large",
            )
            .into_response();
        }
    };
    // Cancelled if this request's answer is dropped before it ends: the
    // client went away, and a call waiting for a person withdraws.
    let gone = super::mcp::CallerGone::default();
    if let Some(request) = super::stateless::direct(&parts, &bytes) {
        let guard = gone.0.clone().drop_guard();
        let response = super::stateless::answer(
            endpoint.server.clone(),
            request,
            gone.0,
            &parts.headers,
            std::time::Duration::from_millis(host.config.sse_keep_alive_ms.max(10)),
        )
        .await;
        guard.disarm();
        return response;
    }
    let closing = parts.method == axum::http::Method::DELETE;
    let mut parts = parts;
    parts.extensions.insert(gone.clone());
    let guard = gone.0.clone().drop_guard();
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    let mut response = match endpoint.service.oneshot(request).await {
        Ok(response) => response.map(|body| {
            axum::body::Body::from_stream(UntilEnd {
                body: axum::body::Body::new(body).into_data_stream(),
                guard: Some(guard),
            })
        }),
        Err(never) => match never {},
    };
    // rmcp answers a closed MCP session with 202; the official Python
    // client expects 200 or 204 and logs a failure otherwise.
    if closing && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// A response body that cancels its guard's token if it is dropped before
/// its last chunk: how the MCP route learns that a client went away.
struct UntilEnd {
    body: axum::body::BodyDataStream,
    guard: Option<tokio_util::sync::DropGuard>,
}

impl futures_util::Stream for UntilEnd {
    type Item = Result<axum::body::Bytes, axum::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = std::pin::Pin::new(&mut self.body).poll_next(cx);
        if let std::task::Poll::Ready(None) = next
            && let Some(guard) = self.guard.take()
        {
            guard.disarm();
        }
        next
    }
}

async fn metrics(State(host): State<Arc<ServeHost>>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        host.metrics_text(),
    )
        .into_response()
}

async fn health() -> Json<Value> {
    Json(json!({"ok": true}))
}

async fn create_session(
    State(host): State<Arc<ServeHost>>,
    Body(request): Body<OpenSession>,
) -> Result<Response, ApiError> {
    let view = host.open_session(&request)?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

async fn list_sessions(State(host): State<Arc<ServeHost>>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({"sessions": host.all_sessions()?})))
}

async fn get_session(
    State(host): State<Arc<ServeHost>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let view = host
        .session_view(&id)?
        .ok_or_else(|| ApiError::not_found(format!("no open session `{id}`")))?;
    Ok(Json(view))
}

async fn end_session(
    State(host): State<Arc<ServeHost>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    use super::SessionEnd;
    match host.end_any_session(&id).await? {
        SessionEnd::Ended => Ok(Json(json!({"ended": id})).into_response()),
        SessionEnd::Ending { host } => Ok((
            StatusCode::ACCEPTED,
            Json(json!({
                "ending": id,
                "host": host,
                "note": "the host serving this session has not ended it yet; it ends it when it next hears from the database, and a host that stays silent is fenced when its lease runs out",
            })),
        )
            .into_response()),
        SessionEnd::Unknown => Err(ApiError::not_found(format!("no open session `{id}`"))),
    }
}

/// A person resumes a session that repeated refusals paused: its calls are
/// decided again and its refusals count afresh. Recorded in its trace
/// under the verified caller.
async fn resume_session(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let Some(live) = host.session(&id) else {
        return Err(match host.session_view(&id)? {
            Some(_) => ApiError::new(
                StatusCode::CONFLICT,
                "served_elsewhere",
                format!("session `{id}` is served by another host: resume it through that host"),
            ),
            None => ApiError::not_found(format!("no open session `{id}`")),
        });
    };
    let was_paused = live.session.resume();
    if was_paused {
        let event = crate::store::TraceEvent {
            session: live.session.id.clone(),
            brand: live.session.brand.clone(),
            call_id: None,
            tool: None,
            state: crate::store::TraceState::Decided,
            rule: Some("session_resumed".to_string()),
            detail: json!({"by": format!("{} (admin API)", caller.subject)}),
            at_ms: crate::store::now_ms(),
        };
        host.store.record(&event)?;
    }
    Ok(Json(
        json!({"session": id, "resumed": was_paused, "by": caller.subject}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentConfigQuery {
    #[serde(default)]
    format: Option<String>,
}

/// The session's allowlist and MCP endpoints as an agent runtime takes
/// them (see [`super::agent_config`]); never its token.
async fn agent_config(
    State(host): State<Arc<ServeHost>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    use super::agent_config::{FORMAT_NAMES, Format, TOKEN_ENV};
    let q: AgentConfigQuery = query(raw)?;
    let format = q
        .format
        .as_deref()
        .and_then(Format::from_name)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                format!("`format` must be one of {FORMAT_NAMES}"),
            )
        })?;
    let config = host
        .agent_config(&id, format)
        .ok_or_else(|| ApiError::not_found(format!("no open session `{id}`")))?;
    Ok((
        [(
            header::HeaderName::from_static("scout-token-env"),
            TOKEN_ENV,
        )],
        Json(config),
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SaveProfile {
    /// `coworker` (coworker and specialist), `goal_agent` or `reviewer`.
    kind: ProfileKind,
    profile: Profile,
}

async fn save_profile(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, name)): Path<(String, String)>,
    Body(mut request): Body<SaveProfile>,
) -> Result<Json<Value>, ApiError> {
    // Who made the grant is the verified caller, whatever the body says.
    request.profile.grant.granted_by = Some(caller.subject.clone());
    if request.profile.name != name {
        return Err(ApiError::bad_request(format!(
            "the profile is named `{}` but the path says `{name}`",
            request.profile.name
        )));
    }
    match host
        .store
        .save_profile(&brand, &request.profile, request.kind, &host.catalog)
    {
        Ok(()) => {
            // A session opened from it keeps what it was opened with; the
            // revision is bumped so anything derived from profiles is redone.
            host.boundary().changed();
            Ok(Json(json!({"saved": name, "kind": request.kind})))
        }
        Err(SaveProfileError::Invalid(rule)) => {
            Err(HostError::InvalidProfile(rule.to_string()).into())
        }
        Err(SaveProfileError::Store(e)) => Err(e.into()),
    }
}

async fn get_profile(
    State(host): State<Arc<ServeHost>>,
    Path((brand, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let saved = host
        .store
        .load_profile(&brand, &name)?
        .ok_or_else(|| ApiError::not_found(format!("brand `{brand}` has no profile `{name}`")))?;
    Ok(Json(json!(saved)))
}

async fn list_profiles(
    State(host): State<Arc<ServeHost>>,
    Path(brand): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({"profiles": host.store.list_profiles(&brand)?})))
}

async fn delete_profile(
    State(host): State<Arc<ServeHost>>,
    Path((brand, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    if host.store.delete_profile(&brand, &name)? {
        Ok(Json(json!({"deleted": name})))
    } else {
        Err(ApiError::not_found(format!(
            "brand `{brand}` has no profile `{name}`"
        )))
    }
}

/// A connection as the admin API takes it: exactly one of a `secret` (the
/// token itself; for `google` with its `scopes`) or a token source the host
/// obtains tokens from (`oauth`, `client_credentials`, `broker`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutConnection {
    /// The credential. For `google`: the token.
    #[serde(default)]
    secret: Option<String>,
    /// For `google` only, with `secret`: the scopes the token holds.
    #[serde(default)]
    scopes: Option<Vec<String>>,
    #[serde(default)]
    oauth: Option<Value>,
    #[serde(default)]
    client_credentials: Option<Value>,
    #[serde(default)]
    broker: Option<Value>,
}

/// The Tailscale API's read scopes (seed 000: "every token is requested
/// with read scopes only").
fn is_read_scope(scope: &str) -> bool {
    scope.ends_with(":read")
}

/// The token source a body names, checked field by field (422 naming the
/// field at fault).
fn token_source(
    connector: &str,
    kind: &'static str,
    body: Value,
) -> Result<crate::credentials::TokenSource, ApiError> {
    use crate::credentials::TokenSource;
    use crate::credentials::tokens::{BrokerConnection, ClientGrant, RefreshGrant};
    let invalid = |field: String, message: String| {
        ApiError::invalid_field("invalid_connection", field, message)
    };
    // serde names a missing or unknown field in its message; a wrong type
    // or value is told without repeating what was sent (it may be a
    // secret in the wrong field).
    let read = |e: serde_json::Error| {
        let text = e.to_string();
        let named = text.starts_with("missing field") || text.starts_with("unknown field");
        let field = text
            .split('`')
            .nth(1)
            .filter(|_| named)
            .map_or_else(|| kind.to_string(), |f| format!("{kind}.{f}"));
        let message = if named {
            format!("`{kind}`: {text}")
        } else {
            let expected = text
                .split(", expected ")
                .nth(1)
                .map(|e| format!(" (expected {e})"))
                .unwrap_or_default();
            format!("`{kind}`: a field has the wrong type or value{expected}")
        };
        invalid(field, message)
    };
    let source = match kind {
        "oauth" => {
            let grant = serde_json::from_value::<RefreshGrant>(body).map_err(read)?;
            if grant.issued.is_some() {
                return Err(invalid(
                    "oauth.issued".into(),
                    "`oauth.issued` is the host's own record of a token it was issued: leave it out".into(),
                ));
            }
            TokenSource::Oauth(grant)
        }
        "client_credentials" => TokenSource::ClientCredentials(
            serde_json::from_value::<ClientGrant>(body).map_err(read)?,
        ),
        _ => TokenSource::Broker(serde_json::from_value::<BrokerConnection>(body).map_err(read)?),
    };
    source
        .validate()
        .map_err(|e| invalid(e.field.clone(), e.to_string()))?;
    if connector == crate::credentials::GOOGLE && source.scopes().is_empty() {
        return Err(invalid(
            format!("{kind}.scopes"),
            "a google connection names the scopes it was granted (they decide which Google products it serves)".into(),
        ));
    }
    if connector == "tailscale"
        && (source.scopes().is_empty() || !source.scopes().iter().all(|s| is_read_scope(s)))
    {
        return Err(invalid(
            format!("{kind}.scopes"),
            "a tailscale connection asks for read scopes only (`devices:core:read`, `users:read`, `policy_file:read`, `dns:read`)".into(),
        ));
    }
    Ok(source)
}

async fn put_connection(
    State(host): State<Arc<ServeHost>>,
    Path((brand, connector)): Path<(String, String)>,
    Body(request): Body<PutConnection>,
) -> Result<Json<Value>, ApiError> {
    let google = connector == crate::credentials::GOOGLE;
    if !google && host.catalog.connector(&connector).is_none() {
        return Err(ApiError::not_found(format!(
            "`{connector}` is not a connector this host serves or the seed catalogue names: add a `[connectors.{connector}]` table with its component to serve's configuration and restart"
        )));
    }
    let PutConnection {
        secret,
        scopes,
        oauth,
        client_credentials,
        broker,
    } = request;
    let sources: Vec<(&'static str, Value)> = [
        ("oauth", oauth),
        ("client_credentials", client_credentials),
        ("broker", broker),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    let sealed = match (secret, sources.len()) {
        (Some(secret), 0) => {
            if secret.is_empty() || secret.len() > 16 * 1024 {
                return Err(ApiError::bad_request("`secret` must be 1 to 16384 bytes"));
            }
            // Stored as given, it would read back as a token source that
            // was never checked.
            if crate::credentials::TokenSource::from_sealed(&secret).is_some() {
                return Err(ApiError::invalid_field(
                    "invalid_connection",
                    "secret",
                    "a `secret` cannot be written as a stored token source: give the source as `oauth`, `client_credentials` or `broker`",
                ));
            }
            match (google, scopes) {
                (true, Some(scopes)) => {
                    crate::credentials::GoogleConnection::new(secret, scopes).encode()
                }
                (true, None) => {
                    return Err(ApiError::bad_request("a google connection needs `scopes`"));
                }
                (false, Some(_)) => {
                    return Err(ApiError::bad_request(
                        "`scopes` is for the google connection only",
                    ));
                }
                (false, None) => secret,
            }
        }
        (None, 1) => {
            if scopes.is_some() {
                return Err(ApiError::invalid_field(
                    "invalid_connection",
                    "scopes",
                    "a token source names its scopes inside it",
                ));
            }
            let (kind, body) = sources
                .into_iter()
                .next()
                .unwrap_or(("broker", Value::Null));
            token_source(&connector, kind, body)?.seal_text()
        }
        _ => {
            return Err(ApiError::invalid_field(
                "invalid_connection",
                "secret",
                "give exactly one of `secret`, `oauth`, `client_credentials` or `broker`",
            ));
        }
    };
    host.put_connection(&brand, &connector, &sealed)?;
    // Nothing of it is ever echoed.
    Ok(Json(
        json!({"brand": brand, "connector": connector, "stored": true}),
    ))
}

async fn disable_connection(
    State(host): State<Arc<ServeHost>>,
    Path((brand, connector)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    if host.disable_connection(&brand, &connector)? {
        Ok(Json(
            json!({"brand": brand, "connector": connector, "disabled": true}),
        ))
    } else {
        Err(ApiError::not_found(format!(
            "brand `{brand}` has no `{connector}` connection"
        )))
    }
}

async fn list_connections(
    State(host): State<Arc<ServeHost>>,
    Path(brand): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let list: Vec<Value> = host
        .connections(&brand)?
        .into_iter()
        .map(|(c, source)| json!({"connector": c, "source": source}))
        .collect();
    Ok(Json(json!({"brand": brand, "connections": list})))
}

async fn share(
    State(host): State<Arc<ServeHost>>,
    Path((brand, connector, with)): Path<(String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    if brand == with {
        return Err(ApiError::bad_request(
            "a brand cannot share a connection with itself",
        ));
    }
    host.share_connection(&brand, &connector, &with)?;
    Ok(Json(
        json!({"owner": brand, "connector": connector, "shared_with": with}),
    ))
}

async fn unshare(
    State(host): State<Arc<ServeHost>>,
    Path((brand, connector, with)): Path<(String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    if host.unshare_connection(&brand, &connector, &with)? {
        Ok(Json(
            json!({"owner": brand, "connector": connector, "unshared_with": with}),
        ))
    } else {
        Err(ApiError::not_found("no such share"))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalsQuery {
    #[serde(default)]
    session: Option<String>,
}

async fn list_approvals(
    State(host): State<Arc<ServeHost>>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let q: ApprovalsQuery = query(raw)?;
    // Every live host's sessions: any host answers for any approval.
    let views = host.all_sessions()?;
    let sessions: Vec<&Value> = match &q.session {
        Some(s) => views.iter().filter(|v| v["id"] == s.as_str()).collect(),
        None => views.iter().collect(),
    };
    let now_ms = crate::store::now_ms();
    let mut pending = Vec::new();
    let mut listed: Vec<(&str, Option<&Value>)> = sessions
        .iter()
        .filter_map(|v| v["id"].as_str().map(|id| (id, Some(*v))))
        .collect();
    // A session asked for by id that no live host serves still answers
    // for its approvals (none are pending once it has ended).
    if let (Some(s), true) = (&q.session, listed.is_empty()) {
        listed.push((s.as_str(), None));
    }
    for (session, view) in listed {
        for approval in host.store.pending(session)? {
            let arguments = host.approval_arguments(&approval);
            let mut value = json!(approval);
            value["waited_ms"] = json!((now_ms - approval.requested_at_ms).max(0));
            value["connector"] = json!(connector_of(&host, &approval.tool));
            value["role"] = view.map(|v| v["role"].clone()).unwrap_or(Value::Null);
            value["brand"] = view.map(|v| v["brand"].clone()).unwrap_or(Value::Null);
            // The exact text whose SHA-256 is `args_digest`: what a person
            // approves is what the call will be bound to.
            value["arguments_text"] = arguments
                .as_ref()
                .map(|a| json!(crate::store::canonical_args_text(a)))
                .unwrap_or(Value::Null);
            value["graphql"] = graphql_shown(&host, &approval.tool, arguments.as_ref());
            value["arguments"] = arguments.unwrap_or(Value::Null);
            pending.push(value);
        }
    }
    Ok(Json(json!({"pending": pending})))
}

/// What an approved call may send over GraphQL, for the person deciding:
/// per GraphQL route of the tool, the operation it may carry and the root
/// fields it may select; for a route that names none (the tool's `query`
/// argument is the whole document), the operations that document holds,
/// as the host reads them. `null` for a tool with no GraphQL route.
pub(super) fn graphql_shown(host: &ServeHost, tool: &str, arguments: Option<&Value>) -> Value {
    let Some((server, wire)) = tool
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    else {
        return Value::Null;
    };
    let Some(component) = host.component(server) else {
        return Value::Null;
    };
    let Some(found) = component.tool(wire) else {
        return Value::Null;
    };
    let shown: Vec<Value> = found
        .routes
        .iter()
        .filter_map(|route| {
            let body = route.graphql?;
            let mut entry = json!({"route": route.to_string()});
            if route.graphql_fields.is_empty() {
                let document = arguments
                    .and_then(|a| a.get("query"))
                    .and_then(Value::as_str);
                entry["root_fields"] = json!("any");
                entry["document"] = match document.map(crate::capabilities::graphql::document) {
                    Some(Ok(ops)) => json!(crate::capabilities::graphql::summary(&ops)),
                    Some(Err(why)) => json!(format!("unreadable: {why}")),
                    None => Value::Null,
                };
            } else {
                entry["operation"] = json!(match body {
                    scout_manifest::GraphqlBody::QueriesOnly => "query",
                    scout_manifest::GraphqlBody::Gated => "mutation or query",
                });
                entry["root_fields"] = json!(route.graphql_fields);
            }
            Some(entry)
        })
        .collect();
    if shown.is_empty() {
        Value::Null
    } else {
        Value::Array(shown)
    }
}

/// [`graphql_shown`] in words, for a question put to a person (MCP
/// elicitation); `None` for a tool with no GraphQL route.
pub(super) fn graphql_words(shown: &Value) -> Option<String> {
    let routes = shown.as_array()?;
    let lines: Vec<String> = routes
        .iter()
        .map(|r| {
            let route = r["route"].as_str().unwrap_or("");
            match r["root_fields"].as_array() {
                Some(fields) => {
                    let fields: Vec<&str> = fields.iter().filter_map(Value::as_str).collect();
                    format!(
                        "{route}: {} selecting only {}",
                        r["operation"].as_str().unwrap_or(""),
                        fields.join(", ")
                    )
                }
                None => format!(
                    "{route}: any root field; this document holds {}",
                    r["document"].as_str().unwrap_or("nothing readable")
                ),
            }
        })
        .collect();
    Some(format!("It may send over GraphQL: {}.", lines.join("; ")))
}

/// The connector of an approval's tool: the server of its MCP name
/// (`mcp__{server}__{tool}`), or the loaded component that offers it.
fn connector_of(host: &ServeHost, tool: &str) -> Option<String> {
    if let Some((server, _)) = tool
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        return Some(server.to_string());
    }
    host.components()
        .iter()
        .find(|(_, component)| component.tool(tool).is_some())
        .map(|(name, _)| name.clone())
}

/// Who the bearer token proves and what its role may do: the console asks
/// this after sign-in to know whether to offer the decide buttons.
async fn whoami(Extension(caller): Extension<Principal>) -> Json<Value> {
    let may = |method, route| super::identity::permit(caller.role, method, route).is_ok();
    Json(json!({
        "subject": caller.subject,
        "role": caller.role.name(),
        "via": match caller.via {
            super::identity::Via::AdminToken => "admin-token",
            super::identity::Via::Oidc => "oidc",
        },
        "may_decide": may("POST", "/v1/approvals/{id}"),
        "may_end_sessions": may("DELETE", "/v1/sessions/{id}"),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CapabilityRequestsQuery {
    #[serde(default)]
    session: Option<String>,
    /// `false`: answered ones too (default: only those waiting).
    #[serde(default)]
    pending: Option<String>,
}

/// The capability requests agents parked (every session's, or one's).
async fn list_capability_requests(
    State(host): State<Arc<ServeHost>>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let q: CapabilityRequestsQuery = query(raw)?;
    let pending_only = match q.pending.as_deref() {
        None | Some("true") => true,
        Some("false") => false,
        Some(_) => return Err(ApiError::bad_request("`pending` is true or false")),
    };
    let requests = host
        .store
        .capability_requests(q.session.as_deref(), pending_only)?;
    Ok(Json(json!({"requests": requests})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerCapability {
    /// The person's answer, returned to the agent as evidence. It grants
    /// nothing: a grant or connection change is made apart.
    answer: String,
}

async fn answer_capability_request(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    Body(request): Body<AnswerCapability>,
) -> Result<Json<Value>, ApiError> {
    use crate::store::Answered;
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::bad_request("a capability request id is a number"))?;
    let answer = request.answer.trim();
    if answer.is_empty() || answer.chars().count() > 4000 {
        return Err(ApiError::invalid_field(
            "invalid_answer",
            "answer",
            "`answer` is text of 1 to 4000 characters",
        ));
    }
    let by = format!("{} (admin API)", caller.subject);
    match host.store.answer_capability_request(id, answer, &by)? {
        Answered::Now(answered) => {
            let event = crate::store::TraceEvent {
                session: answered.session.clone(),
                brand: answered.brand.clone(),
                call_id: None,
                tool: Some(crate::policy::names::mcp(
                    super::host_tools::SCOUT_SERVER,
                    super::host_tools::REQUEST_CAPABILITY,
                )),
                state: crate::store::TraceState::Decided,
                rule: Some("capability_answered".to_string()),
                detail: json!({"request": id, "by": by, "granted": false}),
                at_ms: crate::store::now_ms(),
            };
            host.store.record(&event)?;
            Ok(Json(json!({
                "request": id,
                "answered_by": caller.subject,
                "granted": false,
                "note": "recorded as the person's answer; nothing was granted (a grant or connection is changed apart)"
            })))
        }
        Answered::Already(_) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "already_answered",
            format!("capability request {id} was already answered"),
        )),
        Answered::Unknown => Err(ApiError::not_found(format!("no capability request {id}"))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Decide {
    approve: bool,
    /// Accepted so that older clients keep working, and not recorded: who
    /// decided is the verified caller.
    #[serde(default)]
    #[allow(dead_code)]
    by: Option<String>,
}

async fn decide_approval(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    Body(request): Body<Decide>,
) -> Result<Json<Value>, ApiError> {
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::bad_request("an approval id is a number"))?;
    // The trace's `decided` event says who, and through which channel.
    match host.store.decide(
        ApprovalId(id),
        request.approve,
        &format!("{} (approvals API)", caller.subject),
    ) {
        Ok(()) => Ok(Json(
            json!({"approval": id, "approved": request.approve, "decided_by": caller.subject}),
        )),
        Err(ApprovalError::Unknown(_)) => Err(ApiError::not_found(format!("no approval {id}"))),
        Err(ApprovalError::NotPending(_)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_pending",
            format!("approval {id} is no longer pending"),
        )),
        Err(ApprovalError::Store(e)) => Err(e.into()),
        Err(other) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_pending",
            other.to_string(),
        )),
    }
}

async fn list_reviews(State(host): State<Arc<ServeHost>>) -> Result<Json<Value>, ApiError> {
    let mut out = BTreeMap::new();
    let mut remote = BTreeMap::new();
    // Tools reviewed once that a new version of the component removed.
    let mut removed = BTreeMap::new();
    for (name, component) in host.components() {
        let reviews = crate::review::review(host.store.as_ref(), &component)?;
        let server = host.remote(&name);
        let discovered = server.map(|s| s.discovered());
        let tools: Vec<Value> = reviews
            .into_iter()
            .map(|r| {
                let tool = component.tool(&r.tool);
                let mut shown = json!({
                    "tool": r.tool,
                    "status": r.status,
                    "digest": r.digest,
                    "effect": tool.map(|t| t.effect.as_str()),
                    "description": tool.map(|t| t.description.as_str()),
                    "input_schema": tool.map(|t| &t.input_schema),
                });
                if let Some(now) = tool.and_then(|t| crate::review::facts_of(&component, t)) {
                    // A component's tool: the bytes it is reviewed in and,
                    // once changed, what changed since the review.
                    shown["component"] = json!(now.component);
                    shown["routes"] = json!(now.routes);
                    shown["gate"] = json!(now.gate);
                    shown["imports"] = json!(now.imports);
                    shown["reviewed_component"] = json!(r.reviewed.as_ref().map(|f| &f.component));
                    shown["changes"] = json!(r.changes);
                }
                if let Some(found) = &discovered {
                    // A remote tool: the effect is the operator's review
                    // (none until reviewed as it is now); what the server
                    // says of itself is its claim, never trusted.
                    shown["effect"] = json!(r.effect);
                    if let Some(c) = found.tools.iter().find(|c| c.name == r.tool) {
                        shown["output_schema"] = c
                            .described
                            .get("outputSchema")
                            .cloned()
                            .unwrap_or(Value::Null);
                        shown["server_claims"] = c.annotations().cloned().unwrap_or(Value::Null);
                        shown["flags"] = json!(crate::remote::flags(c, &found.tools));
                    }
                }
                shown
            })
            .collect();
        if let (Some(server), Some(found)) = (server, discovered) {
            remote.insert(
                name.clone(),
                json!({
                    "mcp": server.url().as_str(),
                    "listed_at_ms": found.listed_at_ms,
                    "error": found.error,
                    "left_out": found.left_out.iter().map(|(n, why)| json!({"tool": n, "why": why})).collect::<Vec<_>>(),
                }),
            );
        }
        out.insert(name.clone(), tools);
        if !component.is_remote() {
            let gone = crate::review::removed(host.store.as_ref(), &component)?;
            if !gone.is_empty() {
                removed.insert(name.clone(), gone);
            }
        }
    }
    Ok(Json(
        json!({"required": host.config.require_review, "connectors": out, "remote": remote, "removed": removed}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveReview {
    connector: String,
    tool: String,
    /// The digest the operator reviewed (from `GET /v1/reviews`): a tool
    /// that changed since is not approved by an older review.
    digest: String,
    /// A remote MCP server's tool: what calling it does (`read`, `write`,
    /// `billed`), the operator's classification. Required for a remote
    /// tool, refused for a component's (its WIT says).
    #[serde(default)]
    effect: Option<String>,
    /// Accepted and not recorded, as for approvals: who reviewed is the
    /// verified caller.
    #[serde(default)]
    #[allow(dead_code)]
    by: Option<String>,
}

async fn approve_review(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Body(request): Body<ApproveReview>,
) -> Result<Json<Value>, ApiError> {
    let component = host
        .component(&request.connector)
        .ok_or_else(|| ApiError::not_found(format!("no connector `{}`", request.connector)))?;
    let remote = host.remote(&request.connector).is_some();
    let effect = match (remote, request.effect.as_deref()) {
        (true, None) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_review",
                "`effect`: a remote MCP server's tool is reviewed with what calling it does: \"read\", \"write\" or \"billed\"",
            ));
        }
        (true, Some(e)) => Some(
            crate::remote::RemoteEffect::parse(e)
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_review",
                        format!("`effect`: `{e}` is not \"read\", \"write\" or \"billed\""),
                    )
                })?
                .as_str(),
        ),
        (false, Some(_)) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_review",
                "`effect`: a component's tool has the effect its WIT declares; leave `effect` out",
            ));
        }
        (false, None) => None,
    };
    let tool = component.tool(&request.tool).ok_or_else(|| {
        ApiError::not_found(format!(
            "`{}` has no tool `{}`",
            request.connector, request.tool
        ))
    })?;
    let current = crate::review::tool_digest(&component, tool);
    if current != request.digest {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "stale_review",
            "the tool changed since this digest: review it again",
        ));
    }
    crate::review::approve(
        host.store.as_ref(),
        &component,
        tool,
        effect,
        &caller.subject,
    )?;
    // A remote tool is served with its reviewed effect from now on.
    if remote {
        host.refresh_remote(&request.connector);
    }
    // Sessions that held the tool offer it from their next request.
    host.boundary().changed();
    let mut answer = json!({"connector": request.connector, "tool": request.tool, "reviewed": true, "reviewed_by": caller.subject});
    if let Some(effect) = effect {
        answer["effect"] = json!(effect);
    }
    Ok(Json(answer))
}

/// Events per trace page unless `limit` says otherwise, and at most.
const TRACE_PAGE: usize = 500;
const TRACE_PAGE_MAX: usize = 5000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceQuery {
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    brand: Option<String>,
    /// Only events after this sequence number (the last page's `next_after`).
    #[serde(default)]
    after: Option<String>,
    /// Events per page, 1 to 5000 (default 500).
    #[serde(default)]
    limit: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportQuery {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// Most rows one export request answers.
const EXPORT_MAX: usize = 10_000;

/// The audit export (see [`crate::audit`]): every trace row after `since`,
/// as JSON lines; `Scout-Next-Cursor` is where to resume.
async fn trace_export(
    State(host): State<Arc<ServeHost>>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let q: ExportQuery = query(raw)?;
    let since = match q.since.as_deref() {
        None => 0,
        Some(t) => t.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "`since` is a row's `seq` (0 or more)".to_string(),
            )
        })?,
    };
    let limit = match q.limit.as_deref() {
        None => crate::audit::EXPORT_PAGE,
        Some(t) => t
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=EXPORT_MAX).contains(n))
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_query",
                    format!("`limit` must be a number from 1 to {EXPORT_MAX}"),
                )
            })?,
    };
    let store = host.store.clone();
    let (body, done) = tokio::task::spawn_blocking(move || {
        let mut body = Vec::new();
        crate::audit::export(store.as_ref(), since, Some(limit), &mut body).map(|done| (body, done))
    })
    .await
    .map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unavailable",
            "the export stopped".to_string(),
        )
    })?
    .map_err(|e| match e {
        crate::audit::ExportError::Store(e) => ApiError::from(super::HostError::from(e)),
        other => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unavailable",
            other.to_string(),
        ),
    })?;
    Ok((
        [
            (
                axum::http::header::CONTENT_TYPE,
                "application/x-ndjson".to_string(),
            ),
            (
                axum::http::HeaderName::from_static("scout-next-cursor"),
                done.cursor.to_string(),
            ),
            (
                axum::http::HeaderName::from_static("scout-rows"),
                done.rows.to_string(),
            ),
        ],
        body,
    )
        .into_response())
}

async fn trace(
    State(host): State<Arc<ServeHost>>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let q: TraceQuery = query(raw)?;
    let number =
        |name: &str, text: Option<&String>, default: u64, max: u64| -> Result<u64, ApiError> {
            match text {
                None => Ok(default),
                Some(t) => t.parse::<u64>().ok().filter(|n| *n <= max).ok_or_else(|| {
                    ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "invalid_query",
                        format!("`{name}` must be a number up to {max}"),
                    )
                }),
            }
        };
    let after = number("after", q.after.as_ref(), 0, i64::MAX as u64)? as i64;
    let limit = number(
        "limit",
        q.limit.as_ref(),
        TRACE_PAGE as u64,
        TRACE_PAGE_MAX as u64,
    )?
    .max(1) as usize;
    let filter = match (&q.session, &q.brand) {
        (Some(session), None) => TraceFilter::Session(session),
        (None, Some(brand)) => TraceFilter::Brand(brand),
        _ => {
            return Err(ApiError::bad_request(
                "give exactly one of `session` or `brand`",
            ));
        }
    };
    let page = host.store.trace_page(filter, after, limit)?;
    let next_after = (page.len() == limit)
        .then(|| page.last().map(|(seq, _)| *seq))
        .flatten();
    let events: Vec<Value> = page
        .into_iter()
        .map(|(seq, event)| {
            let mut value = json!(event);
            value["seq"] = json!(seq);
            value
        })
        .collect();
    Ok(Json(json!({"events": events, "next_after": next_after})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_is_told_what_a_graphql_tool_may_send() {
        let pinned = json!([{"route": "POST /graphql (graphql: commentCreate)",
                             "operation": "mutation or query", "root_fields": ["commentCreate"]}]);
        assert_eq!(
            graphql_words(&pinned).as_deref(),
            Some(
                "It may send over GraphQL: POST /graphql (graphql: commentCreate): mutation or query selecting only commentCreate."
            )
        );
        let any = json!([{"route": "POST /admin/api/2026-10/graphql.json (graphql)",
                          "root_fields": "any", "document": "mutation productUpdate"}]);
        assert_eq!(
            graphql_words(&any).as_deref(),
            Some(
                "It may send over GraphQL: POST /admin/api/2026-10/graphql.json (graphql): any root field; this document holds mutation productUpdate."
            )
        );
        assert_eq!(graphql_words(&Value::Null), None);
    }
}
