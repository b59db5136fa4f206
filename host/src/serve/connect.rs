//! "Connect": a person connects a brand to a remote MCP server that takes
//! OAuth ([`crate::remote::oauth`]). The admin API starts it and answers
//! the authorization page's URL; the authorization server sends the
//! person's browser back to `GET /v1/oauth/callback`, which carries no
//! admin credential (a browser redirect cannot) and so is trusted only for
//! what its sealed `state` says; the exchanged grant becomes the brand's
//! connection, as if an operator had stored it, and nothing of it is shown.

use super::ServeHost;
use super::admin::error::{ApiError, Body};
use super::identity::Principal;
use crate::remote::oauth;
use axum::Json;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Where the authorization server sends the person back.
pub(crate) const CALLBACK: &str = "/v1/oauth/callback";

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct Authorize {
    /// The scopes to ask for; by default those the server's challenge or
    /// metadata names.
    #[serde(default)]
    scopes: Option<BTreeSet<String>>,
    /// A client registered beforehand, where the server offers no
    /// registration (or the operator prefers their own).
    #[serde(default)]
    client: Option<oauth::GivenClient>,
}

/// `POST /v1/brands/{brand}/connections/{connector}/authorize`.
pub(crate) async fn authorize(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, connector)): Path<(String, String)>,
    Body(request): Body<Authorize>,
) -> Result<Json<Value>, ApiError> {
    let (mcp, allow_private_network) = remote_url(&host, &connector)?;
    let redirect_uri = format!("{}{CALLBACK}", host.base_url());
    let metadata_url = oauth::client_metadata_url(
        host.host().config().oauth_client_metadata_url.as_deref(),
        &host.base_url(),
    )
    .map_err(|e| ApiError::new(StatusCode::CONFLICT, "oauth_misconfigured", e.to_string()))?;
    let http = oauth::client(allow_private_network).map_err(refused)?;
    let started = oauth::start(
        &http,
        allow_private_network,
        host.host().key(),
        &mcp,
        &brand,
        &connector,
        &caller.subject,
        &redirect_uri,
        metadata_url.as_ref(),
        request.scopes,
        request.client,
    )
    .await
    .map_err(refused)?;
    tracing::info!(%brand, %connector, by = %caller.subject, resource = %started.resource, "OAuth connection started");
    Ok(Json(json!({
        "brand": brand,
        "connector": connector,
        "authorization_url": started.authorization_url.as_str(),
        "redirect_uri": redirect_uri,
        "resource": started.resource,
        "registered_client": started.registered,
        "expires_at_ms": started.expires_at_ms,
    })))
}

/// `GET /oauth/client-metadata.json`: the host's client metadata
/// document, public (an authorization server fetches it), naming the URL
/// it is known by as its `client_id`; 404 where the host has none.
pub(crate) async fn client_metadata(State(host): State<Arc<ServeHost>>) -> Response {
    let configured = host.host().config().oauth_client_metadata_url.clone();
    let Ok(Some(url)) = oauth::client_metadata_url(configured.as_deref(), &host.base_url()) else {
        return ApiError::not_found(
            "this host publishes no client metadata document: it needs an https `public_url` (or `oauth_client_metadata_url`)",
        )
        .into_response();
    };
    let redirect_uri = format!("{}{CALLBACK}", host.base_url());
    let mut response = Json(oauth::client_metadata(url.as_str(), &redirect_uri)).into_response();
    response.headers_mut().insert(
        "cache-control",
        axum::http::HeaderValue::from_static("public, max-age=300"),
    );
    response
}

/// `GET /v1/oauth/callback?code=…&state=…` (or `?error=…&state=…`): an
/// HTML page for the person's browser.
pub(crate) async fn callback(
    State(host): State<Arc<ServeHost>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let query: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    match complete(&host, &query).await {
        Ok((brand, connector)) => page(
            StatusCode::OK,
            "Connected",
            &format!("Brand {brand} is connected to {connector}. You may close this window."),
        ),
        Err((status, why)) => page(
            status,
            "Not connected",
            &format!("{why} Nothing was stored."),
        ),
    }
}

async fn complete(
    host: &ServeHost,
    query: &std::collections::HashMap<String, String>,
) -> Result<(String, String), (StatusCode, String)> {
    let state = query.get("state").ok_or((
        StatusCode::BAD_REQUEST,
        "The answer carries no `state`.".to_string(),
    ))?;
    let pending = oauth::pending(host.host().key(), state)
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("{}.", e.why)))?;
    if let Some(error) = query.get("error") {
        // RFC 6749 §4.1.2.1: only the registered codes are repeated.
        const CODES: &[&str] = &[
            "invalid_request",
            "unauthorized_client",
            "access_denied",
            "unsupported_response_type",
            "invalid_scope",
            "server_error",
            "temporarily_unavailable",
        ];
        let code = CODES
            .iter()
            .find(|c| **c == error)
            .copied()
            .unwrap_or("an error");
        return Err((
            StatusCode::BAD_REQUEST,
            format!("The authorization server answered {code}."),
        ));
    }
    let code = query
        .get("code")
        .filter(|c| !c.is_empty() && c.len() <= 4096)
        .ok_or((
            StatusCode::BAD_REQUEST,
            "The answer carries no `code`.".to_string(),
        ))?;
    let (_, allow_private_network) = remote_url(host, &pending.connector).map_err(|_| {
        (
            StatusCode::CONFLICT,
            format!(
                "This host no longer serves {} as a remote MCP server.",
                pending.connector
            ),
        )
    })?;
    let http = oauth::client(allow_private_network)
        .map_err(|e| (StatusCode::BAD_GATEWAY, format!("{e}.")))?;
    let grant = oauth::finish(&http, allow_private_network, &pending, code)
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, format!("{e}.")))?;
    let sealed = crate::credentials::TokenSource::Oauth(grant).seal_text();
    host.host()
        .put_connection(&pending.brand, &pending.connector, &sealed)
        .map_err(|e| {
            tracing::error!(error = %e, "the OAuth connection cannot be stored");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "The store is unavailable: connect again shortly.".to_string(),
            )
        })?;
    tracing::info!(brand = %pending.brand, connector = %pending.connector, by = %pending.by, "OAuth connection stored");
    Ok((pending.brand, pending.connector))
}

/// The remote server `connector` is, and whether it may be on a private
/// network; a 404 or 422 naming what to do otherwise.
pub(super) fn remote_url(host: &ServeHost, connector: &str) -> Result<(url::Url, bool), ApiError> {
    let Some(settings) = host.host().settings(connector) else {
        return Err(ApiError::not_found(format!(
            "`{connector}` is not a connector this host serves: add a `[connectors.{connector}]` table with its `mcp` URL"
        )));
    };
    let Some(url) = &settings.mcp else {
        return Err(ApiError::invalid_field(
            "not_remote",
            "connector",
            format!(
                "`{connector}` is a component, not a remote MCP server: store its credential with PUT /v1/brands/BRAND/connections/{connector}"
            ),
        ));
    };
    let url = crate::remote::endpoint(url).map_err(ApiError::bad_request)?;
    Ok((url, settings.allow_private_network))
}

fn refused(e: oauth::OauthError) -> ApiError {
    ApiError::new(StatusCode::BAD_GATEWAY, "oauth_failed", e.to_string())
}

fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title></head><body><h1>{}</h1><p>{}</p></body></html>",
        escape(title),
        escape(title),
        escape(text)
    );
    let mut response = (status, Html(body)).into_response();
    let headers = response.headers_mut();
    use axum::http::HeaderValue;
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'"),
    );
    response
}
