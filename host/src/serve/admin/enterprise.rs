//! Connecting a brand to a remote MCP server by the person's identity
//! assertion from the organisation's identity provider (enterprise-managed
//! authorization, [`crate::remote::enterprise`]): no authorization page, so
//! one admin API request does the whole exchange and stores the token as
//! the brand's connection. The body names which identity provider and
//! clients the connection uses (per brand, like any connection); the
//! assertion is used once and never stored, logged or answered back.

use super::error::{ApiError, Body};
use crate::remote::enterprise::{self, AssertionConnect};
use crate::serve::ServeHost;
use crate::serve::identity::Principal;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

/// `POST /v1/brands/{brand}/connections/{connector}/identity-assertion`.
pub(super) async fn connect_by_assertion(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, connector)): Path<(String, String)>,
    Body(request): Body<AssertionConnect>,
) -> Result<Json<Value>, ApiError> {
    let Some(settings) = host.host().settings(&connector) else {
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
    let mcp = crate::remote::endpoint(url).map_err(ApiError::bad_request)?;
    let allow_private_network = settings.allow_private_network;
    let http = crate::remote::oauth::client(allow_private_network).map_err(refused)?;
    let idp = request.identity_provider.issuer.clone();
    let connected = enterprise::connect(&http, allow_private_network, &mcp, &request)
        .await
        .map_err(|e| {
            tracing::warn!(%brand, %connector, by = %caller.subject, identity_provider = %idp, error = %e, "enterprise-managed connection refused");
            refused(e)
        })?;
    let refreshable = !connected.grant.refresh_token.is_empty();
    let sealed = crate::credentials::TokenSource::Oauth(connected.grant).seal_text();
    host.host()
        .put_connection(&brand, &connector, &sealed)
        .map_err(|e| {
            tracing::error!(error = %e, "the enterprise-managed connection cannot be stored");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                "the store is unavailable: nothing was stored; connect again shortly",
            )
        })?;
    tracing::info!(
        %brand,
        %connector,
        by = %caller.subject,
        identity_provider = %idp,
        authorization_server = %connected.authorization_server,
        resource = %connected.resource,
        "enterprise-managed connection stored"
    );
    // The trace says how the connection was made and from whom; never the
    // assertion or the token.
    super::record_change(
        &host,
        &caller,
        "",
        &brand,
        crate::trace::Change::ConnectionStored,
        json!({
            "connector": connector,
            "by": "identity_assertion",
            "identity_provider": idp,
            "authorization_server": connected.authorization_server,
            "resource": connected.resource,
            "expires_at_ms": connected.expires_at_ms,
            "refreshable": refreshable,
        }),
    )
    .await?;
    Ok(Json(json!({
        "brand": brand,
        "connector": connector,
        "resource": connected.resource,
        "authorization_server": connected.authorization_server,
        "identity_provider": idp,
        "expires_at_ms": connected.expires_at_ms,
        "refreshable": refreshable,
    })))
}

fn refused(e: crate::remote::oauth::OauthError) -> ApiError {
    ApiError::new(StatusCode::BAD_GATEWAY, "oauth_failed", e.to_string())
}
