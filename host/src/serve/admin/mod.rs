//! The admin HTTP API and the router that also carries the MCP endpoints.
//!
//! Every request passes the `Host` check first (DNS rebinding), then a
//! bearer token: for `/v1/...` the admin token or, with `[oidc]`, a token
//! of the issuer, whose role must permit the route ([`super::identity`]);
//! the session's own token for `/mcp/{session}/{connector}`. Handlers read
//! the caller as a [`Principal`] extension. Every error is JSON of one shape,
//! `{"error": {"code": "...", "message": "..."}}`, with a stable `code`;
//! bodies are capped at `max_request_bytes`.

use super::identity::{Principal, Refusal, bearer};
use super::{HostError, OpenSession, ServeHost};
use crate::approvals::ApprovalId;
use crate::policy::Profile;
use crate::profiles::{ProfileKind, SaveProfileError};
use crate::trace::TraceFilter;
use axum::extract::{DefaultBodyLimit, Extension, MatchedPath, Path, RawQuery, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tower::ServiceExt;

mod approvals;
mod connections;
mod connectors;
mod enterprise;
pub(crate) mod error;
mod policies;
mod policy_test;
mod reviews;
mod sessions;
mod sign_in;
mod trace;

use approvals::*;
use connections::*;
use connectors::*;
use error::query;
pub(crate) use error::{ApiError, Body};
use policies::*;
use policy_test::*;
use reviews::*;
use sessions::*;
use trace::*;

/// The whole router: admin API under `/v1`, MCP under `/mcp`.
pub(crate) fn router(host: Arc<ServeHost>) -> Router {
    let limit = host.host().config().max_request_bytes;
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
            "/v1/brands/{brand}/connections/{connector}/identity-assertion",
            post(enterprise::connect_by_assertion),
        )
        .route(
            "/v1/brands/{brand}/connections/{connector}/client-credentials",
            post(enterprise::connect_by_client_credentials),
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
        .route("/v1/decisions", get(list_decisions))
        .route("/v1/reviews", get(list_reviews).post(approve_review))
        .route("/v1/connectors", get(list_connectors))
        .route(
            "/v1/connectors/{name}",
            get(get_connector)
                .put(put_connector)
                .delete(retire_connector),
        )
        .route("/v1/policies", get(list_policies))
        .route("/v1/policies/test", post(test_policy))
        .route("/v1/policies/{name}", put(put_policy).delete(retire_policy))
        .route("/v1/session-components", get(list_session_components))
        .route(
            "/v1/session-components/{name}",
            put(put_session_component).delete(drop_session_component),
        )
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
        .route(super::connect::CALLBACK, get(super::connect::callback))
        // The host's OAuth client metadata document: public, fetched by
        // authorization servers.
        .route(
            crate::remote::oauth::CLIENT_METADATA_PATH,
            get(super::connect::client_metadata),
        );
    let checked = admin
        .merge(mcp)
        .merge(super::console::routes())
        .merge(sign_in::sign_in_routes())
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
        .layer(middleware::from_fn(access_log))
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

/// Refuses a `Host` header outside the configured list (DNS rebinding),
/// and an `Origin` header of another site (the MCP transport requires it:
/// a page elsewhere must not reach the MCP endpoints, the admin API or the
/// console with what its browser holds). A request without `Origin` (a
/// non-browser client, a browser's same-origin `GET`) is served; the
/// console's own page sends its origin, which is this server's.
async fn check_host(State(host): State<Arc<ServeHost>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase)
        // HTTP/2 (under `[tls]`) carries it as `:authority`, in the URI.
        .or_else(|| {
            request
                .uri()
                .authority()
                .map(|a| a.as_str().to_ascii_lowercase())
        });
    if !given.is_some_and(|h| host.answers_to(&h)) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "the Host header is not one this server answers to",
        )
        .into_response();
    }
    let mut origins = request.headers().get_all(header::ORIGIN).iter();
    let origin_allowed = match (origins.next(), origins.next()) {
        (None, _) => true,
        (Some(origin), None) => origin
            .to_str()
            .is_ok_and(|origin| host.answers_to_origin(origin)),
        // Two `Origin` headers: no browser sends that.
        (Some(_), Some(_)) => false,
    };
    if !origin_allowed {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
            "the Origin header names a site this server does not answer to: only its own pages \
             (its allowed hosts, its public_url) may use it from a browser",
        )
        .into_response();
    }
    next.run(request).await
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
    let method = request.method().as_str().to_string();
    if let Err(why) = super::identity::permit(principal.role, &method, &route) {
        return ApiError::new(StatusCode::FORBIDDEN, "forbidden", why).into_response();
    }
    // A role over some brands: a route about every brand is refused, and
    // a brand's own route is checked against the role over that brand.
    if !super::identity::brand_checked(&route) {
        let every = principal.every_brand;
        if let Err(why) = every
            .ok_or_else(String::new)
            .and_then(|role| super::identity::permit(role, &method, &route))
        {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "{method} {route} concerns every brand, and your roles cover only brand(s) {}{}{why}",
                    principal.brand_names(),
                    if why.is_empty() { "" } else { "; over every brand, " }
                ),
            )
            .into_response();
        }
    } else if route.contains("{brand}") {
        let (mut parts, body) = request.into_parts();
        let brand = <Path<BTreeMap<String, String>> as axum::extract::FromRequestParts<()>>::from_request_parts(&mut parts, &())
            .await
            .ok()
            .and_then(|Path(params)| params.get("brand").cloned())
            .unwrap_or_default();
        request = Request::from_parts(parts, body);
        if !principal.may_in(&brand, &method, &route) {
            return ApiError::brand_refused(&principal, &brand).into_response();
        }
    }
    let caller = Caller(principal.subject.clone());
    let acting = super::identity::Acting {
        actor: principal.actor(),
        origin: request
            .headers()
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .and_then(crate::trace::Origin::from_traceparent)
            .unwrap_or_default(),
    };
    request.extensions_mut().insert(principal);
    let mut response = acting.during(next.run(request)).await;
    response.extensions_mut().insert(caller);
    response
}

/// Records a change made through the admin API (a session opened or
/// ended, a connection, review or profile changed) as a `changed` trace
/// row: `rule` names the change, `detail` says what (never a secret), and
/// the verified caller is added as `detail.actor`.
pub(super) async fn record_change(
    host: &ServeHost,
    caller: &Principal,
    session: &str,
    brand: &str,
    rule: crate::trace::Change,
    detail: Value,
) -> Result<(), ApiError> {
    let event = crate::trace::changed(
        session,
        brand,
        rule,
        detail,
        caller.actor(),
        request_origin(),
    );
    host.host().trace().record(&event).await.map_err(|e| {
        tracing::error!(error = %e, rule = %rule, "a change was made but could not be recorded in the trace");
        ApiError::from(HostError::from(e))
    })
}

/// The trace and span of the admin API request this task serves (its
/// `traceparent`), for the rows it writes.
pub(super) fn request_origin() -> crate::trace::Origin {
    super::identity::Acting::now()
        .map(|acting| acting.origin)
        .unwrap_or_default()
}

/// Refuses, as if it did not exist, an open session whose brand the
/// caller's roles do not let send `method` to `route`: a role over one
/// brand neither sees nor touches another's. `what` names it for the 404.
pub(super) fn require_session_brand(
    host: &ServeHost,
    caller: &Principal,
    session: &str,
    method: &str,
    route: &str,
    what: &str,
) -> Result<(), ApiError> {
    if caller.covers_every_brand()
        && caller
            .every_brand
            .is_some_and(|role| super::identity::permit(role, method, route).is_ok())
    {
        return Ok(());
    }
    let brand = host
        .session_view(session)?
        .and_then(|view| view["brand"].as_str().map(str::to_string));
    match brand {
        Some(brand) if caller.may_in(&brand, method, route) => Ok(()),
        _ => Err(ApiError::not_found(what.to_string())),
    }
}

/// Who a request was verified as, for the access log: the admin API's
/// principal, or the session whose token an MCP request carried.
#[derive(Clone)]
struct Caller(String);

/// One access-log line per admin API and MCP request: the method, the
/// route as declared (never the path as sent or its query), the status,
/// how long it took, and who it was verified as (`-` for nobody). Never
/// an argument, a token or a body.
async fn access_log(request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let response = next.run(request).await;
    let caller = response
        .extensions()
        .get::<Caller>()
        .map_or("-", |c| c.0.as_str());
    tracing::info!(
        target: crate::logs::ACCESS,
        method = %method,
        route = %route,
        status = response.status().as_u16(),
        duration_ms = started.elapsed().as_millis() as u64,
        caller = %caller,
        "request"
    );
    response
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
    // Held here, or kept by the fleet and taken up here now.
    let live = match bearer(request.headers()) {
        Some(token) => host.session_for(&session, token).await,
        None => None,
    };
    let Some(live) = live else {
        return unauthorized();
    };
    let caller = Caller(format!("session {}", live.session.id));
    let mut response = forward_to_session(&host, &live, &connector, request).await;
    response.extensions_mut().insert(caller);
    response
}

/// [`mcp_endpoint`] once the session's token checked out.
async fn forward_to_session(
    host: &ServeHost,
    live: &super::LiveSession,
    connector: &str,
    request: Request,
) -> Response {
    let Some(endpoint) = live.endpoints.get(connector).cloned() else {
        return ApiError::not_found(format!(
            "connector `{connector}` is not served to this session"
        ))
        .into_response();
    };
    let limit = host.host().config().max_request_bytes;
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
    // A client's answer to a question one of its calls put on its event
    // stream: taken here, as the protocol takes a response (202).
    if endpoint.sessions.answered(&parts, &bytes) {
        return StatusCode::ACCEPTED.into_response();
    }
    // Cancelled if this request's answer is dropped before it ends: the
    // client went away, and a call waiting for a person withdraws.
    let gone = super::mcp::CallerGone::default();
    // A stateless request, else one inside a session of an earlier
    // protocol version (its answer shaped as rmcp shapes it for that peer).
    let direct = match super::stateless::direct(&parts, &bytes) {
        Some(request) => Some((request, false, None)),
        None => endpoint
            .sessions
            .direct(&parts, &bytes, &gone.0)
            .await
            .map(|(request, running)| (request, true, running)),
    };
    if let Some((request, legacy, running)) = direct {
        let guard = gone.0.clone().drop_guard();
        let response = super::stateless::answer(
            endpoint.server.clone(),
            request,
            gone.0,
            &parts.headers,
            std::time::Duration::from_millis(host.host().config().sse_keep_alive_ms.max(10)),
            legacy,
            running,
        )
        .await;
        guard.disarm();
        return response;
    }
    let closing = parts.method == axum::http::Method::DELETE;
    let mut parts = parts;
    parts.extensions.insert(gone.clone());
    let guard = gone.0.clone().drop_guard();
    let handed = (parts.method.clone(), parts.headers.clone(), bytes.clone());
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    let answer = endpoint.service.oneshot(request).await;
    if let Ok(answer) = &answer {
        endpoint
            .sessions
            .handed(&handed.0, &handed.1, &handed.2, answer);
    }
    let mut response = match answer {
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
    super::scrape::openmetrics(&host).await
}

async fn health() -> Json<Value> {
    Json(json!({"ok": true}))
}
