//! Connecting a brand to a remote MCP server without an authorization page,
//! in one admin API request that does the whole exchange and stores the
//! connection:
//!
//! - by the person's identity assertion from the organisation's identity
//!   provider (enterprise-managed authorization,
//!   [`crate::remote::enterprise`]); the body names which identity provider
//!   and clients the connection uses (per brand, like any connection); the
//!   assertion is used once and never stored, logged or answered back;
//! - by the deployment's own client (client credentials,
//!   [`crate::remote::machine`]): the deployment owner's connection only,
//!   a machine's grant never standing for a person's.

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
    let (mcp, allow_private_network) = super::super::connect::remote_url(&host, &connector)?;
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

/// `POST /v1/brands/{brand}/connections/{connector}/client-credentials`.
pub(super) async fn connect_by_client_credentials(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, connector)): Path<(String, String)>,
    Body(request): Body<crate::remote::machine::MachineConnect>,
) -> Result<Json<Value>, ApiError> {
    if host.host().config().deployment_owner_brand.as_deref() != Some(brand.as_str()) {
        return Err(ApiError::invalid_field(
            "not_deployment_owner",
            "brand",
            format!(
                "`{brand}` is not the deployment owner (`deployment_owner_brand`): a client-credentials grant connects the deployment itself, not a person's brand; connect `{brand}` with POST .../authorize or .../identity-assertion"
            ),
        ));
    }
    let (mcp, allow_private_network) = super::super::connect::remote_url(&host, &connector)?;
    let http = crate::remote::oauth::client(allow_private_network).map_err(refused)?;
    let connected = crate::remote::machine::connect(
        &http,
        allow_private_network,
        &mcp,
        &brand,
        &connector,
        &request,
    )
    .await
    .map_err(|e| {
        tracing::warn!(%brand, %connector, by = %caller.subject, error = %e, "client-credentials connection refused");
        refused(e)
    })?;
    host.host()
        .put_connection(&brand, &connector, &connected.source.seal_text())
        .map_err(|e| {
            tracing::error!(error = %e, "the client-credentials connection cannot be stored");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                "the store is unavailable: nothing was stored; connect again shortly",
            )
        })?;
    super::record_change(
        &host,
        &caller,
        "",
        &brand,
        crate::trace::Change::ConnectionStored,
        json!({
            "connector": connector,
            "by": "client_credentials",
            "auth_method": connected.auth_method,
            "authorization_server": connected.authorization_server,
            "resource": connected.resource,
        }),
    )
    .await?;
    Ok(Json(json!({
        "brand": brand,
        "connector": connector,
        "resource": connected.resource,
        "authorization_server": connected.authorization_server,
        "auth_method": connected.auth_method,
    })))
}
