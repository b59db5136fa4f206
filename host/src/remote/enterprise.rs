//! Enterprise-managed authorization for a remote MCP server (the MCP
//! extension of that name, SEP-990; the IETF draft "Identity Assertion JWT
//! Authorization Grant", ID-JAG): a person signs in once at the
//! organisation's identity provider, and the host turns that sign-in into
//! the server's token without sending anyone to an authorization page.
//!
//! 1. Discovery: the server asked without a token names its protected
//!    resource metadata (RFC 9728), else the well-known paths are tried;
//!    its `resource` must be the server's URL. Its first authorization
//!    server's metadata (RFC 8414, then OpenID discovery) must name itself
//!    as issuer and have a token endpoint; if it lists grant types, the
//!    JWT bearer grant must be one. (Not [`super::oauth`]'s discovery,
//!    which asks for what an authorization page needs: PKCE, an
//!    authorization endpoint.)
//! 2. Token exchange at the identity provider (RFC 8693): the person's
//!    identity assertion (an ID token) for an ID-JAG whose `audience` is
//!    the authorization server's issuer and whose `resource` is the server.
//! 3. JWT bearer grant (RFC 7523 §2.1) at the authorization server: the
//!    ID-JAG as `assertion`, the client registered there authenticated by
//!    `client_secret_basic` (or `client_secret_post` where only that is
//!    offered).
//!
//! The access token becomes the brand's connection as an OAuth connection
//! the host stores like any Connect's: with no refresh token (the usual
//! answer to this grant), it serves until it expires and the person signs
//! in again. The identity assertion and the ID-JAG are never stored,
//! logged or repeated in an error. Every request goes through the host's
//! guarded client (no redirect, no private address unless the connector
//! allows it, answers capped at 64 KiB); every endpoint is https, or plain
//! http on loopback only.

use super::oauth::{
    GivenClient, OauthError, auth_param, covers, oauth_error, secure as endpoint, well_known,
};
use crate::credentials::tokens::{ClientAuth, IssuedToken, RefreshGrant};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use url::Url;

/// RFC 8693's grant type.
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// RFC 7523's grant type.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The subject token's type: an OpenID Connect ID token.
pub const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token asked of the identity provider: an ID-JAG.
pub const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The most an answer may hold.
const MAX_ANSWER_BYTES: usize = 64 << 10;
/// The longest identity assertion or ID-JAG taken.
const MAX_ASSERTION_BYTES: usize = 16 << 10;

/// The organisation's identity provider, as the brand's connection uses it.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityProvider {
    /// Its issuer URL.
    pub issuer: String,
    /// Its token endpoint; by default the one its metadata names.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// The host's client at the identity provider.
    pub client_id: String,
    /// Its secret, where it has one (sent by HTTP Basic).
    #[serde(default)]
    pub client_secret: String,
}

/// What connecting by an identity assertion needs.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssertionConnect {
    /// The person's identity assertion from the identity provider (an
    /// OpenID Connect ID token). Used once; never stored.
    pub identity_assertion: String,
    pub identity_provider: IdentityProvider,
    /// The host's client registered with the server's authorization server.
    pub client: GivenClient,
    /// The scopes to ask for; by default those the server's challenge or
    /// metadata names.
    #[serde(default)]
    pub scopes: Option<BTreeSet<String>>,
}

impl std::fmt::Debug for AssertionConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the assertion or a secret.
        f.debug_struct("AssertionConnect")
            .field("identity_provider", &self.identity_provider.issuer)
            .field("client_id", &self.client.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// The connection obtained, and what it was obtained from.
pub struct Connected {
    /// What the brand's connection becomes.
    pub grant: RefreshGrant,
    /// The resource the token is for.
    pub resource: String,
    /// The authorization server that issued it.
    pub authorization_server: String,
    /// When its access token expires (milliseconds since the epoch).
    pub expires_at_ms: i64,
}

fn failed(step: &'static str, why: impl Into<String>) -> OauthError {
    OauthError {
        step,
        why: why.into(),
    }
}

/// Steps 1 to 3 for the server at `mcp`: the connection to store.
pub async fn connect(
    http: &reqwest::Client,
    allow_private_network: bool,
    mcp: &Url,
    request: &AssertionConnect,
) -> Result<Connected, OauthError> {
    let assertion = request.identity_assertion.trim();
    if assertion.is_empty()
        || assertion.len() > MAX_ASSERTION_BYTES
        || assertion
            .chars()
            .any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(failed(
            "token_exchange",
            "`identity_assertion` must be the identity provider's ID token (1 to 16384 bytes, no spaces)",
        ));
    }
    for (field, value) in [
        (
            "identity_provider.client_id",
            &request.identity_provider.client_id,
        ),
        ("client.client_id", &request.client.client_id),
    ] {
        if value.is_empty() || value.len() > 4096 || value.chars().any(char::is_control) {
            return Err(failed(
                "discovery",
                format!("`{field}` must be 1 to 4096 bytes"),
            ));
        }
    }
    let ask = Asker {
        http,
        allow_private_network,
    };
    let server = ask.discover(mcp, JWT_BEARER).await?;
    let idp_token_endpoint = match &request.identity_provider.token_endpoint {
        Some(text) => endpoint(text).map_err(|why| {
            failed(
                "discovery",
                format!("`identity_provider.token_endpoint` {why}"),
            )
        })?,
        None => {
            ask.idp_token_endpoint(&request.identity_provider.issuer)
                .await?
        }
    };
    let scopes = request
        .scopes
        .clone()
        .or_else(|| server.challenge_scopes.clone())
        .unwrap_or_else(|| server.scopes_supported.clone());
    let joined: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let joined = joined.join(" ");

    // 2. The identity assertion for an ID-JAG, at the identity provider.
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE),
        ("requested_token_type", ID_JAG),
        ("audience", server.issuer.as_str()),
        ("resource", server.resource.as_str()),
        ("subject_token", assertion),
        ("subject_token_type", ID_TOKEN),
    ];
    if !joined.is_empty() {
        form.push(("scope", &joined));
    }
    let idp = &request.identity_provider;
    // The identity provider's metadata is not read for its methods: the
    // one RFC 6749 says every server takes, where there is a secret.
    let idp_auth = if idp.client_secret.is_empty() {
        ClientAuth::None
    } else {
        ClientAuth::ClientSecretBasic
    };
    let (status, body) = ask
        .post_form(
            &idp_token_endpoint,
            form,
            (idp_auth, &idp.client_id, &idp.client_secret),
            "token_exchange",
        )
        .await?;
    if !(200..300).contains(&status) {
        return Err(failed(
            "token_exchange",
            format!(
                "the identity provider's token endpoint answered {status}{}: sign in at the identity provider again",
                oauth_error(&body)
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default()
            ),
        ));
    }
    let id_jag = id_jag(&body)?;

    // 3. The ID-JAG for the server's access token, at its authorization server.
    let mut form = vec![("grant_type", JWT_BEARER), ("assertion", id_jag.as_str())];
    if !joined.is_empty() {
        form.push(("scope", &joined));
    }
    let client = &request.client;
    let auth = ClientAuth::chosen(&server.auth_methods, !client.client_secret.is_empty())
        .ok_or_else(|| {
            failed(
                "token",
                "the authorization server takes neither `client_secret_basic` nor `client_secret_post` at its token endpoint: nothing was sent",
            )
        })?;
    let (status, body) = ask
        .post_form(
            &server.token_endpoint,
            form,
            (auth, &client.client_id, &client.client_secret),
            "token",
        )
        .await?;
    if !(200..300).contains(&status) {
        return Err(failed(
            "token",
            format!(
                "the authorization server's token endpoint answered {status}{}: nothing was stored",
                oauth_error(&body)
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default()
            ),
        ));
    }
    let answer = crate::credentials::tokens::oauth_token(&body)
        .map_err(|e| failed("token", e.to_string()))?;
    let expires_at_ms = crate::store::now_ms().saturating_add(answer.lifetime.as_millis() as i64);
    let grant = RefreshGrant {
        refresh_token: answer.refresh_token.unwrap_or_default(),
        client_id: client.client_id.clone(),
        client_secret: client.client_secret.clone(),
        token_url: server.token_endpoint.to_string(),
        scopes,
        resource: Some(server.resource.clone()),
        token_endpoint_auth_method: Some(auth),
        issued: Some(IssuedToken {
            access_token: answer.token.expose().to_string(),
            expires_at_ms,
        }),
    };
    crate::credentials::TokenSource::Oauth(grant.clone())
        .validate()
        .map_err(|e| failed("token", format!("the grant is not usable: {e}")))?;
    Ok(Connected {
        grant,
        resource: server.resource,
        authorization_server: server.issuer.to_string(),
        expires_at_ms,
    })
}

/// The ID-JAG in a token exchange's answer (RFC 8693 §2.2.1).
fn id_jag(body: &[u8]) -> Result<String, OauthError> {
    let value: Value = serde_json::from_slice(body).map_err(|_| {
        failed(
            "token_exchange",
            "the identity provider's answer is not JSON",
        )
    })?;
    let issued = value["issued_token_type"].as_str().unwrap_or_default();
    if issued != ID_JAG {
        return Err(failed(
            "token_exchange",
            format!(
                "the identity provider issued no ID-JAG (`issued_token_type` is not `{ID_JAG}`): does it offer enterprise-managed authorization for this client?"
            ),
        ));
    }
    value["access_token"]
        .as_str()
        .filter(|t| {
            !t.is_empty()
                && t.len() <= MAX_ASSERTION_BYTES
                && t.bytes().all(|b| b.is_ascii_graphic())
        })
        .map(str::to_string)
        .ok_or_else(|| {
            failed(
                "token_exchange",
                "the identity provider's answer has no usable `access_token` (the ID-JAG)",
            )
        })
}

/// What discovery found of the server and its authorization server.
pub(crate) struct Discovered {
    pub(crate) resource: String,
    pub(crate) issuer: Url,
    pub(crate) token_endpoint: Url,
    /// `token_endpoint_auth_methods_supported` (RFC 8414's default,
    /// `client_secret_basic`, where it says nothing).
    pub(crate) auth_methods: Vec<String>,
    pub(crate) challenge_scopes: Option<BTreeSet<String>>,
    pub(crate) scopes_supported: BTreeSet<String>,
}

/// Step 1 for a grant without an authorization page (`grant`, which the
/// authorization server must offer if it lists what it offers): the
/// server's resource and its authorization server, through the guarded
/// client.
pub(crate) async fn discover(
    http: &reqwest::Client,
    allow_private_network: bool,
    mcp: &Url,
    grant: &str,
) -> Result<Discovered, OauthError> {
    Asker {
        http,
        allow_private_network,
    }
    .discover(mcp, grant)
    .await
}

struct Asker<'a> {
    http: &'a reqwest::Client,
    allow_private_network: bool,
}

impl Asker<'_> {
    /// The guarded client, after refusing an address written in `url`.
    fn client_for(&self, url: &Url, step: &'static str) -> Result<&reqwest::Client, OauthError> {
        if !self.allow_private_network
            && let Some(why) = crate::capabilities::net::literal_denied(url)
        {
            return Err(failed(
                step,
                format!(
                    "the address of {} is refused ({why}); nothing was sent: a server on a private network needs `allow_private_network` on its connector",
                    url.origin().ascii_serialization()
                ),
            ));
        }
        Ok(self.http)
    }

    /// Sends `request`: the status, the headers' challenge and the capped body.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        step: &'static str,
    ) -> Result<(u16, Option<String>, Vec<u8>), OauthError> {
        let mut response = request.send().await.map_err(|e| {
            if let Some(why) = crate::capabilities::net::refused_by_guard(&e) {
                failed(
                    step,
                    format!(
                        "the address is refused ({why}); nothing was sent: a server on a private network needs `allow_private_network` on its connector"
                    ),
                )
            } else if e.is_timeout() {
                failed(step, "the server did not answer in time")
            } else {
                failed(step, "the server could not be reached")
            }
        })?;
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.trim_start().to_ascii_lowercase().starts_with("bearer"))
            .map(str::to_string);
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                        return Err(failed(step, "the answer is larger than 64 KiB"));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok((status, challenge, body)),
                Err(_) => return Err(failed(step, "the answer was cut short")),
            }
        }
    }

    /// A form posted to a token endpoint, the client authenticated as
    /// `client` says ([`ClientAuth::apply`]).
    async fn post_form(
        &self,
        url: &Url,
        mut form: Vec<(&'static str, &str)>,
        client: (ClientAuth, &str, &str),
        step: &'static str,
    ) -> Result<(u16, Vec<u8>), OauthError> {
        let (auth, id, secret) = client;
        let request = self
            .client_for(url, step)?
            .post(url.clone())
            .header("accept", "application/json");
        let request = auth.apply(request, &mut form, id, secret).form(&form);
        let (status, _, body) = self.send(request, step).await?;
        Ok((status, body))
    }

    /// A JSON object from `url`; `None` for a 404 or 405 (the next
    /// well-known path is tried).
    async fn metadata(&self, url: &Url) -> Result<Option<Value>, OauthError> {
        let request = self
            .client_for(url, "discovery")?
            .get(url.clone())
            .header("accept", "application/json");
        let (status, _, body) = self.send(request, "discovery").await?;
        match status {
            200 => {}
            404 | 405 => return Ok(None),
            _ => {
                return Err(failed(
                    "discovery",
                    format!("{} answered {status}", url.as_str()),
                ));
            }
        }
        let value: Value = serde_json::from_slice(&body)
            .map_err(|_| failed("discovery", format!("{} is not JSON", url.as_str())))?;
        Ok(value.is_object().then_some(value))
    }

    /// The first of `candidates` that answers with metadata.
    async fn first_metadata(
        &self,
        candidates: Vec<Option<Url>>,
    ) -> Result<Option<Value>, OauthError> {
        for url in candidates.into_iter().flatten() {
            if let Some(value) = self.metadata(&url).await? {
                return Ok(Some(value));
            }
        }
        Ok(None)
    }

    /// Step 1: the server's resource and its authorization server.
    async fn discover(&self, mcp: &Url, grant: &str) -> Result<Discovered, OauthError> {
        // Asked without a token: its challenge names the metadata.
        let initialize = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "scout-connector-host", "version": env!("CARGO_PKG_VERSION")}
            }
        });
        let request = self
            .client_for(mcp, "discovery")?
            .post(mcp.clone())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(initialize.to_string());
        let (status, challenge, _) = self.send(request, "discovery").await?;
        if status != 401 {
            return Err(failed(
                "discovery",
                format!(
                    "the server answered {status} without a token, not 401: it does not ask for authorization as MCP describes it"
                ),
            ));
        }
        let named = challenge
            .as_deref()
            .and_then(|h| auth_param(h, "resource_metadata"))
            .and_then(|u| Url::parse(&u).ok())
            .filter(|u| matches!(u.scheme(), "https" | "http"));
        let challenge_scopes = challenge
            .as_deref()
            .and_then(|h| auth_param(h, "scope"))
            .map(|s| s.split_whitespace().map(str::to_string).collect());
        let candidates = match named {
            Some(url) => vec![Some(url)],
            None => {
                let path = mcp.path().trim_end_matches('/');
                let mut urls = Vec::new();
                if !path.is_empty() {
                    urls.push(well_known(mcp, "oauth-protected-resource", path));
                }
                urls.push(well_known(mcp, "oauth-protected-resource", ""));
                urls
            }
        };
        let value = self.first_metadata(candidates).await?.ok_or_else(|| {
            failed(
                "discovery",
                "the server publishes no protected resource metadata (RFC 9728)",
            )
        })?;
        let resource = value["resource"]
            .as_str()
            .ok_or_else(|| {
                failed(
                    "discovery",
                    "the protected resource metadata has no `resource`",
                )
            })?
            .to_string();
        if !covers(&resource, mcp) {
            return Err(failed(
                "discovery",
                format!(
                    "the protected resource metadata is for `{resource}`, not this server's URL: refused (RFC 9728 §3.3)"
                ),
            ));
        }
        let issuer = value["authorization_servers"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .and_then(|s| Url::parse(s).ok())
            .ok_or_else(|| {
                failed(
                    "discovery",
                    "the protected resource metadata names no `authorization_servers`",
                )
            })?;
        let scopes_supported = strings(&value["scopes_supported"]).into_iter().collect();

        let path = issuer.path().trim_end_matches('/');
        let value = self
            .first_metadata(vec![
                well_known(&issuer, "oauth-authorization-server", path),
                well_known(&issuer, "openid-configuration", path),
            ])
            .await?
            .ok_or_else(|| {
                failed(
                    "discovery",
                    format!(
                        "the authorization server {} publishes no metadata (RFC 8414)",
                        issuer.as_str()
                    ),
                )
            })?;
        let named = value["issuer"].as_str().unwrap_or_default();
        if named.trim_end_matches('/') != issuer.as_str().trim_end_matches('/') {
            return Err(failed(
                "discovery",
                "the authorization server's metadata names another issuer: refused (RFC 8414 §3.3)",
            ));
        }
        let grants = strings(&value["grant_types_supported"]);
        if !grants.is_empty() && !grants.iter().any(|g| g == grant) {
            return Err(failed(
                "discovery",
                format!(
                    "the authorization server does not take the `{grant}` grant (`grant_types_supported`): connect otherwise (Connect, with its authorization page)"
                ),
            ));
        }
        let token_endpoint = value["token_endpoint"]
            .as_str()
            .ok_or_else(|| {
                failed(
                    "discovery",
                    "the authorization server's metadata has no `token_endpoint`",
                )
            })
            .and_then(|t| {
                endpoint(t).map_err(|why| failed("discovery", format!("`token_endpoint` {why}")))
            })?;
        let mut auth_methods = strings(&value["token_endpoint_auth_methods_supported"]);
        if auth_methods.is_empty() {
            auth_methods.push("client_secret_basic".to_string());
        }
        Ok(Discovered {
            resource,
            issuer,
            token_endpoint,
            auth_methods,
            challenge_scopes,
            scopes_supported,
        })
    }

    /// The identity provider's token endpoint, from its metadata.
    async fn idp_token_endpoint(&self, issuer: &str) -> Result<Url, OauthError> {
        let issuer = endpoint(issuer)
            .map_err(|why| failed("discovery", format!("`identity_provider.issuer` {why}")))?;
        let path = issuer.path().trim_end_matches('/');
        let value = self
            .first_metadata(vec![
                well_known(&issuer, "oauth-authorization-server", path),
                well_known(&issuer, "openid-configuration", path),
                Url::parse(&format!(
                    "{}{path}/.well-known/openid-configuration",
                    issuer.origin().ascii_serialization()
                ))
                .ok(),
            ])
            .await?
            .ok_or_else(|| {
                failed(
                    "discovery",
                    "the identity provider publishes no metadata: give its `token_endpoint`",
                )
            })?;
        let named = value["issuer"].as_str().unwrap_or_default();
        if named.trim_end_matches('/') != issuer.as_str().trim_end_matches('/') {
            return Err(failed(
                "discovery",
                "the identity provider's metadata names another issuer: refused",
            ));
        }
        value["token_endpoint"]
            .as_str()
            .ok_or_else(|| {
                failed(
                    "discovery",
                    "the identity provider's metadata has no `token_endpoint`",
                )
            })
            .and_then(|t| {
                endpoint(t).map_err(|why| {
                    failed(
                        "discovery",
                        format!("the identity provider's `token_endpoint` {why}"),
                    )
                })
            })
    }
}

/// The strings of a JSON array (none for anything else).
fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenges_parameters_are_read_quoted_or_not() {
        let header = r#"Bearer error="invalid_token", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp", scope="a b""#;
        assert_eq!(
            auth_param(header, "resource_metadata").as_deref(),
            Some("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(auth_param(header, "scope").as_deref(), Some("a b"));
        assert_eq!(
            auth_param("Bearer realm=x,scope=a", "scope").as_deref(),
            Some("a")
        );
        assert_eq!(auth_param("Bearer", "scope"), None);
    }

    #[test]
    fn only_an_id_jag_is_taken_from_the_identity_provider() {
        let jag = id_jag(
            br#"{"access_token":"eyJ.a.b","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#,
        )
        .unwrap();
        assert_eq!(jag, "eyJ.a.b");
        let other = id_jag(
            br#"{"access_token":"eyJ.a.b","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#,
        )
        .unwrap_err();
        assert!(other.why.contains("no ID-JAG"), "{other}");
        assert!(!other.why.contains("eyJ"), "{other}");
    }

    #[test]
    fn a_secret_goes_only_to_https_or_loopback() {
        assert!(endpoint("https://idp.example.com/token").is_ok());
        assert!(endpoint("http://127.0.0.1:8080/token").is_ok());
        assert!(endpoint("http://idp.example.com/token").is_err());
        assert!(endpoint("https://u:p@idp.example.com/token").is_err());
    }
}
