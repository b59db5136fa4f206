//! A remote MCP server connected by the deployment itself, not a person:
//! the OAuth client-credentials grant (RFC 6749 §4.4; the MCP extension
//! SEP-1046), for the deployment owner's connection only (a person's brand
//! is connected by a person's grant: Connect, or an identity assertion).
//!
//! The server's authorization server is found as for an identity assertion
//! ([`super::enterprise::discover`]: the resource checked against the
//! server's URL, the issuer against its metadata, the grant offered); the
//! client authenticates by its secret (`client_secret_basic` first, then
//! `client_secret_post`, as the server lists them) or by a signed assertion
//! (`private_key_jwt`, RFC 7523 §2.2, addressed to the issuer). The client
//! becomes the connection ([`TokenSource::ClientCredentials`]), which the
//! host renews by itself like any client-credentials connection; a first
//! token is asked here, through the same token client the calls use, so a
//! client the server refuses is never stored.

use super::oauth::OauthError;
use crate::credentials::TokenSource;
use crate::credentials::tokens::{ClientAuth, ClientGrant, PrivateKeyJwt, Tokens};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::time::Duration;
use url::Url;

/// RFC 6749's grant type.
pub const CLIENT_CREDENTIALS: &str = "client_credentials";

/// The deployment's client at the server's authorization server.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConnect {
    pub client_id: String,
    /// Its secret; or give `private_key_pem`.
    #[serde(default)]
    pub client_secret: String,
    /// Its PKCS#8 private key (PEM), for `private_key_jwt`.
    #[serde(default)]
    pub private_key_pem: Option<String>,
    /// The key's algorithm: `ES256` (the default, and the only one taken).
    #[serde(default)]
    pub signing_algorithm: Option<String>,
    /// The scopes to ask for; by default those the server's challenge or
    /// metadata names.
    #[serde(default)]
    pub scopes: Option<BTreeSet<String>>,
}

impl std::fmt::Debug for MachineConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret or the key.
        f.debug_struct("MachineConnect")
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// The connection obtained.
pub struct Connected {
    pub source: TokenSource,
    pub resource: String,
    pub authorization_server: String,
    /// `client_secret_basic`, `client_secret_post` or `private_key_jwt`.
    pub auth_method: &'static str,
}

fn failed(step: &'static str, why: impl Into<String>) -> OauthError {
    OauthError {
        step,
        why: why.into(),
    }
}

/// Discovery, the client checked, a first token asked: the connection for
/// `brand`'s `connector` (the server at `mcp`).
pub async fn connect(
    http: &reqwest::Client,
    allow_private_network: bool,
    mcp: &Url,
    brand: &str,
    connector: &str,
    request: &MachineConnect,
) -> Result<Connected, OauthError> {
    let server =
        super::enterprise::discover(http, allow_private_network, mcp, CLIENT_CREDENTIALS).await?;
    let scopes = request
        .scopes
        .clone()
        .or_else(|| server.challenge_scopes.clone())
        .unwrap_or_else(|| server.scopes_supported.clone());
    let takes = |m: &str| server.auth_methods.iter().any(|s| s == m);
    let (private_key, auth, auth_method) = match &request.private_key_pem {
        Some(pem) => {
            if !takes("private_key_jwt") {
                return Err(failed(
                    "registration",
                    "the authorization server does not take `private_key_jwt` at its token endpoint: give the client's `client_secret` instead",
                ));
            }
            let key = PrivateKeyJwt {
                pem: pem.clone(),
                algorithm: request
                    .signing_algorithm
                    .clone()
                    .unwrap_or_else(|| "ES256".into()),
                audience: server.issuer.to_string(),
            };
            (Some(key), None, "private_key_jwt")
        }
        None => {
            let auth = ClientAuth::chosen(&server.auth_methods, !request.client_secret.is_empty())
                .ok_or_else(|| {
                    failed(
                        "registration",
                        "the authorization server takes neither `client_secret_basic` nor `client_secret_post`: give the client's `private_key_pem`",
                    )
                })?;
            (None, Some(auth), auth.as_str())
        }
    };
    let source = TokenSource::ClientCredentials(ClientGrant {
        client_id: request.client_id.clone(),
        client_secret: request.client_secret.clone(),
        token_url: server.token_endpoint.to_string(),
        scopes,
        token_endpoint_auth_method: auth,
        resource: Some(server.resource.clone()),
        private_key,
    });
    source
        .validate()
        .map_err(|e| failed("registration", format!("the client is not usable: {e}")))?;
    // A first token, through the token client every call uses.
    let tokens =
        Tokens::new(None, Duration::from_secs(15)).map_err(|e| failed("token", e.to_string()))?;
    let no_scopes = BTreeSet::new();
    let (token, _) = tokens
        .token(&crate::credentials::TokenRequest {
            brand,
            connector,
            source: &source,
            scopes: &no_scopes,
            allow_private_network,
        })
        .await;
    token.map_err(|e| failed("token", format!("{e}: nothing was stored")))?;
    Ok(Connected {
        source,
        resource: server.resource,
        authorization_server: server.issuer.to_string(),
        auth_method,
    })
}
