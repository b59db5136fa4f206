//! Connecting a brand to a remote MCP server that asks for OAuth, as the
//! MCP authorization specification describes it, done once by a person
//! through the admin API (or the console's "Connect"):
//!
//! 1. the server is asked without a token; its 401's `WWW-Authenticate`
//!    names its protected resource metadata (RFC 9728), else the
//!    well-known paths are tried; the metadata must name the server's own
//!    URL as its resource. A server that publishes none is taken as MCP
//!    2025-03-26 had it: its own origin is its authorization server (its
//!    metadata there, else `/authorize`, `/token`, `/register`);
//! 2. its first authorization server's metadata (RFC 8414, then OpenID
//!    discovery) must name itself as issuer and offer PKCE with `S256`;
//! 3. the client: one the person registered beforehand and gives, first;
//!    else, where the server takes client ID metadata documents
//!    (`client_id_metadata_document_supported`), the URL of the host's own
//!    document ([`client_metadata`], served at [`CLIENT_METADATA_PATH`]),
//!    a public client; else the host registers itself (RFC 7591). Its
//!    secret goes to the token endpoint as the server takes it, HTTP Basic
//!    first ([`ClientAuth`]);
//! 4. the person is sent to the authorization page with PKCE (`S256`), the
//!    `resource` indicator (RFC 8707) and a `state`;
//! 5. the callback exchanges the code (with the verifier and `resource`)
//!    and the brand's connection becomes the refresh grant, sealed, that
//!    the host keeps alive like any OAuth connection
//!    ([`crate::credentials::tokens`]), rotated refresh tokens included;
//!    where the server issued no refresh token, the access token alone,
//!    until it expires (then the connection says "reconnect").
//!
//! What is pending between 4 and 5 travels in `state` itself, sealed with
//! the store key for this purpose alone ([`crate::store::seal_text`]): any
//! host of a fleet completes it, nothing of it is readable or changeable
//! on the way, and it expires after ten minutes. The verifier and a
//! registered client's secret never leave the host readable.
//!
//! Every request goes through the host's guarded client: no redirect
//! followed, no private address unless the connector allows it, answers
//! capped at 64 KiB. Errors name the step and the server's status or the
//! field at fault; no answer body is ever repeated.

use crate::credentials::tokens::{ClientAuth, IssuedToken, RefreshGrant};
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::time::Duration;
use url::Url;

/// What `state` is sealed for.
const STATE_PURPOSE: &[u8] = b"scout-remote-oauth-state:v1";
/// How long a person has to finish at the authorization page.
pub const PENDING_FOR: Duration = Duration::from_secs(600);
/// The most a metadata, registration or token answer may hold.
const MAX_ANSWER_BYTES: usize = 64 << 10;
/// How long each request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// Where the host serves its client metadata document, under its base URL.
pub const CLIENT_METADATA_PATH: &str = "/oauth/client-metadata.json";

/// The host's client metadata document (draft-ietf-oauth-client-id-metadata-
/// document, as MCP's 2025-11-25 authorization uses it): its own URL as
/// `client_id`, the callback, a public client (no secret to keep).
pub fn client_metadata(client_id: &str, redirect_uri: &str) -> Value {
    serde_json::json!({
        "client_id": client_id,
        "client_name": "Scout Connector Host",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
}

/// The URL the host's client metadata document is reachable at: the one
/// configured (`oauth_client_metadata_url`), else the host's own under an
/// https base URL; `None` where there is none (a plain-http host cannot be
/// one: the document's URL must be https). An error names what is wrong
/// with a configured one.
pub fn client_metadata_url(
    configured: Option<&str>,
    base_url: &str,
) -> Result<Option<Url>, OauthError> {
    let Some(text) = configured else {
        return Ok(Url::parse(&format!("{base_url}{CLIENT_METADATA_PATH}"))
            .ok()
            .filter(|u| u.scheme() == "https"));
    };
    let url = Url::parse(text).ok().filter(|u| {
        u.scheme() == "https"
            && u.path() != "/"
            && u.fragment().is_none()
            && u.username().is_empty()
            && u.password().is_none()
    });
    url.map(Some).ok_or_else(|| {
        failed(
            "registration",
            "`oauth_client_metadata_url` must be an https URL with a path (a client ID metadata document's URL): fix it in the host's configuration",
        )
    })
}

/// How many times a person is sent to authorize the same further scopes
/// for one server: after that the host stops asking (the authorization
/// server does not grant them, or the server asks for what it cannot have).
pub const MAX_STEP_UPS: u32 = 2;

/// What servers asked for beyond the tokens they were given (a 403
/// `insufficient_scope`), by the server's URL: the scopes the next Connect
/// adds, and how often each set was asked for already. The scope a server
/// needs for a call is the server's, whichever brand called; kept in this
/// process only (a restart forgets it: the server asks again).
static STEP_UPS: std::sync::LazyLock<
    parking_lot::Mutex<std::collections::HashMap<String, StepUp>>,
> = std::sync::LazyLock::new(Default::default);

#[derive(Default)]
struct StepUp {
    needed: BTreeSet<String>,
    asked: std::collections::HashMap<BTreeSet<String>, u32>,
}

fn step_up_key(server: &str) -> String {
    Url::parse(server)
        .map(|u| u.to_string())
        .unwrap_or_else(|_| server.to_string())
}

/// The scope a 403's challenge says the token lacks: its `scope`, where it
/// is a Bearer challenge with `error="insufficient_scope"` (RFC 6750 §3.1)
/// or names a scope.
pub fn insufficient_scope(www_authenticate: &str) -> Option<String> {
    if !www_authenticate
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("bearer")
    {
        return None;
    }
    let scope = auth_param(www_authenticate, "scope").filter(|s| !s.trim().is_empty())?;
    let error = auth_param(www_authenticate, "error");
    (error.is_none() || error.as_deref() == Some("insufficient_scope")).then_some(scope)
}

/// Records that the server at `server` asked for `scope` (space-separated)
/// beyond its token; what the call (or the listing) is told.
pub fn needs_scope(server: &str, scope: &str) -> String {
    let scopes: BTreeSet<String> = scope
        .split_whitespace()
        .filter(|s| s.len() <= 512 && !s.contains(['"', '\\']))
        .take(64)
        .map(str::to_string)
        .collect();
    let joined = scopes
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    let mut step_ups = STEP_UPS.lock();
    let step_up = step_ups.entry(step_up_key(server)).or_default();
    let asked = step_up.asked.get(&scopes).copied().unwrap_or(0);
    step_up.needed = scopes;
    tracing::warn!(server, scope = %joined, asked, "a remote server needs more scope than its token holds");
    if asked >= MAX_STEP_UPS {
        format!(
            "{STEP_UP_PREFIX}{joined}: it was asked for {asked} times already and the server still refuses, so the host stops asking (its authorization server may not grant it: ask the server's operator)"
        )
    } else {
        format!(
            "{STEP_UP_PREFIX}{joined}: a person connects it again (POST /v1/brands/BRAND/connections/CONNECTOR/authorize asks for it with the scopes held)"
        )
    }
}

/// How a call refused for want of scope begins.
pub const STEP_UP_PREFIX: &str = "the connection needs more scope: ";

/// What the server at `server` last asked for beyond its token, if anything.
pub fn scope_needed(server: &str) -> Option<BTreeSet<String>> {
    STEP_UPS
        .lock()
        .get(&step_up_key(server))
        .map(|s| s.needed.clone())
        .filter(|n| !n.is_empty())
}

/// A call to the server at `server` succeeded: the step-ups counted for it
/// are forgotten, so a need that comes later (another brand's token, a
/// scope the server asks for anew) is bounded afresh, not by what other
/// brands were asked before. Costs a lock only when a step-up is held.
pub fn scope_sufficed(server: &str) {
    let mut step_ups = STEP_UPS.lock();
    if step_ups.is_empty() {
        return;
    }
    if let Some(step_up) = step_ups.get_mut(&step_up_key(server)) {
        step_up.asked.clear();
    }
}

/// The scopes a Connect asks for, with what the server needs beyond its
/// token added and counted; refused once the same scopes were asked for
/// [`MAX_STEP_UPS`] times.
fn with_step_up(server: &Url, scopes: BTreeSet<String>) -> Result<BTreeSet<String>, OauthError> {
    let mut step_ups = STEP_UPS.lock();
    let Some(step_up) = step_ups.get_mut(&step_up_key(server.as_str())) else {
        return Ok(scopes);
    };
    if step_up.needed.is_empty() {
        return Ok(scopes);
    }
    let needed = step_up.needed.clone();
    let asked = step_up.asked.entry(needed.clone()).or_default();
    if *asked >= MAX_STEP_UPS {
        let joined = needed
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ");
        return Err(failed(
            "authorization",
            format!(
                "the server asked for more scope ({joined}) {asked} times and refused each token that had it: the host stops asking (its authorization server may not grant it: ask the server's operator)"
            ),
        ));
    }
    *asked += 1;
    // Asked for now: the server says so again if the new token lacks it.
    step_up.needed.clear();
    Ok(scopes.into_iter().chain(needed).collect())
}

/// The MCP version the unauthenticated probe speaks (one with `initialize`).
const PROTOCOL_VERSION: &str = "2025-11-25";

/// Why connecting failed, at which step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{step}: {why}")]
pub struct OauthError {
    /// `discovery`, `registration`, `authorization` or `token`.
    pub step: &'static str,
    pub why: String,
}

fn failed(step: &'static str, why: impl Into<String>) -> OauthError {
    OauthError {
        step,
        why: why.into(),
    }
}

/// A client the person registered with the authorization server beforehand.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GivenClient {
    pub client_id: String,
    #[serde(default)]
    pub client_secret: String,
}

/// What is pending between the authorization page and the callback.
#[derive(Clone, Serialize, Deserialize)]
pub struct Pending {
    pub brand: String,
    pub connector: String,
    /// Who started it (the admin API's caller).
    pub by: String,
    verifier: String,
    client_id: String,
    client_secret: String,
    /// How the client authenticates at the token endpoint.
    #[serde(default = "secret_in_form")]
    client_auth: ClientAuth,
    token_url: String,
    resource: String,
    scopes: BTreeSet<String>,
    redirect_uri: String,
    expires_at_ms: i64,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the verifier or the client's secret.
        f.debug_struct("Pending")
            .field("brand", &self.brand)
            .field("connector", &self.connector)
            .field("client_id", &self.client_id)
            .field("resource", &self.resource)
            .field("expires_at_ms", &self.expires_at_ms)
            .finish_non_exhaustive()
    }
}

/// What a state sealed before the client's method was recorded meant.
fn secret_in_form() -> ClientAuth {
    ClientAuth::ClientSecretPost
}

/// Where to send the person, and until when it is good.
pub struct Started {
    pub authorization_url: Url,
    pub expires_at_ms: i64,
    /// The resource the token will be for.
    pub resource: String,
    /// Whether the host registered a client (RFC 7591) for it.
    pub registered: bool,
}

/// The guarded client for the connector's OAuth requests.
pub fn client(allow_private_network: bool) -> Result<reqwest::Client, OauthError> {
    crate::capabilities::net::guarded_client(allow_private_network)
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| failed("discovery", format!("the HTTP client cannot be built: {e}")))
}

/// Steps 1 to 4 for `brand`'s connection to the server at `mcp`: the
/// authorization URL to send the person to, with `state` sealed under `key`.
#[allow(clippy::too_many_arguments)]
pub async fn start(
    http: &reqwest::Client,
    allow_private_network: bool,
    key: &[u8; 32],
    mcp: &Url,
    brand: &str,
    connector: &str,
    by: &str,
    redirect_uri: &str,
    client_metadata_url: Option<&Url>,
    scopes: Option<BTreeSet<String>>,
    given: Option<GivenClient>,
) -> Result<Started, OauthError> {
    let ask = Asker {
        http,
        allow_private_network,
    };
    let (metadata_url, challenge_scope) = ask.challenge(mcp).await?;
    let (resource, server) = match ask.protected_resource(mcp, metadata_url).await? {
        Some(resource) => {
            let server = ask.authorization_server(&resource.issuer).await?;
            (resource, server)
        }
        None => ask.without_resource_metadata(mcp).await?,
    };
    let scopes = scopes
        .or(challenge_scope)
        .unwrap_or_else(|| resource.scopes_supported.clone());
    let scopes = with_step_up(mcp, scopes)?;
    let registered = given.is_none() && !(server.cimd && client_metadata_url.is_some());
    let (client, client_auth) = match given {
        Some(given) => {
            if given.client_id.is_empty() || given.client_id.len() > 4096 {
                return Err(failed(
                    "registration",
                    "`client.client_id` must be 1 to 4096 bytes",
                ));
            }
            // A given client's secret goes the way the server takes
            // (basic first); one it names neither way of is sent as basic,
            // which RFC 6749 §2.3.1 says every server takes.
            let auth = ClientAuth::chosen(&server.auth_methods, !given.client_secret.is_empty())
                .unwrap_or(ClientAuth::ClientSecretBasic);
            (given, auth)
        }
        None if server.cimd && client_metadata_url.is_some() => {
            let url = client_metadata_url.map(Url::as_str).unwrap_or_default();
            let client = GivenClient {
                client_id: url.to_string(),
                client_secret: String::new(),
            };
            (client, ClientAuth::None)
        }
        None => ask.register(&server, redirect_uri, &scopes).await?,
    };
    let verifier = {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| failed("authorization", format!("no randomness for PKCE: {e}")))?;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    };
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    let expires_at_ms = crate::store::now_ms() + PENDING_FOR.as_millis() as i64;
    let pending = Pending {
        brand: brand.to_string(),
        connector: connector.to_string(),
        by: by.to_string(),
        verifier,
        client_id: client.client_id,
        client_secret: client.client_secret,
        client_auth,
        token_url: server.token_endpoint.to_string(),
        resource: resource.resource.clone(),
        scopes,
        redirect_uri: redirect_uri.to_string(),
        expires_at_ms,
    };
    let plain = serde_json::to_vec(&pending)
        .map_err(|e| failed("authorization", format!("the state cannot be written: {e}")))?;
    let state = crate::store::seal_text(key, STATE_PURPOSE, &plain)
        .map_err(|e| failed("authorization", format!("the state cannot be sealed: {e}")))?;
    let mut url = server.authorization_endpoint;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &pending.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &pending.resource)
            .append_pair("state", &state);
        if !pending.scopes.is_empty() {
            let joined: Vec<&str> = pending.scopes.iter().map(String::as_str).collect();
            query.append_pair("scope", &joined.join(" "));
        }
    }
    Ok(Started {
        authorization_url: url,
        expires_at_ms,
        resource: pending.resource,
        registered,
    })
}

/// The pending authorization `state` carries, if it is one this host's key
/// sealed and it has not expired.
pub fn pending(key: &[u8; 32], state: &str) -> Result<Pending, OauthError> {
    let plain = crate::store::open_text(key, STATE_PURPOSE, state).ok_or_else(|| {
        failed(
            "authorization",
            "the `state` is not one this host issued (or it was changed): start connecting again",
        )
    })?;
    let pending: Pending = serde_json::from_slice(&plain).map_err(|_| {
        failed(
            "authorization",
            "the `state` does not read as a pending authorization",
        )
    })?;
    if crate::store::now_ms() > pending.expires_at_ms {
        return Err(failed(
            "authorization",
            "the authorization took longer than ten minutes: start connecting again",
        ));
    }
    Ok(pending)
}

/// Step 5: the code exchanged for the grant the brand's connection becomes.
pub async fn finish(
    http: &reqwest::Client,
    allow_private_network: bool,
    pending: &Pending,
    code: &str,
) -> Result<RefreshGrant, OauthError> {
    let ask = Asker {
        http,
        allow_private_network,
    };
    let url = Url::parse(&pending.token_url)
        .map_err(|_| failed("token", "the token endpoint is not a URL"))?;
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", pending.redirect_uri.as_str()),
        ("code_verifier", pending.verifier.as_str()),
        ("resource", pending.resource.as_str()),
    ];
    let request = pending.client_auth.apply(
        ask.client_for(&url, "token")?.post(url),
        &mut form,
        &pending.client_id,
        &pending.client_secret,
    );
    let request = request.form(&form);
    let (status, body) = ask.send(request, "token").await?;
    if !(200..300).contains(&status) {
        return Err(failed(
            "token",
            format!(
                "the token endpoint answered {status}{}: start connecting again",
                oauth_error(&body)
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default()
            ),
        ));
    }
    let answer = crate::credentials::tokens::oauth_token(&body)
        .map_err(|e| failed("token", e.to_string()))?;
    // Without a refresh token the connection holds the access token alone,
    // until it expires: then a person connects again (the call and the
    // admin API's connection list say so).
    let grant = RefreshGrant {
        refresh_token: answer.refresh_token.unwrap_or_default(),
        client_id: pending.client_id.clone(),
        client_secret: pending.client_secret.clone(),
        token_url: pending.token_url.clone(),
        scopes: pending.scopes.clone(),
        resource: Some(pending.resource.clone()),
        token_endpoint_auth_method: Some(pending.client_auth),
        issued: Some(IssuedToken {
            access_token: answer.token.expose().to_string(),
            expires_at_ms: crate::store::now_ms()
                .saturating_add(answer.lifetime.as_millis() as i64),
        }),
    };
    crate::credentials::TokenSource::Oauth(grant.clone())
        .validate()
        .map_err(|e| failed("token", format!("the grant is not usable: {e}")))?;
    Ok(grant)
}

/// An RFC 6749 §5.2 error code, the only part of an error answer kept.
pub(crate) fn oauth_error(body: &[u8]) -> Option<String> {
    const CODES: &[&str] = &[
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
        "invalid_redirect_uri",
        "invalid_client_metadata",
        "invalid_target",
    ];
    serde_json::from_slice::<Value>(body)
        .ok()?
        .get("error")?
        .as_str()
        .filter(|c| CODES.contains(c))
        .map(str::to_string)
}

/// The protected resource's metadata, as far as it is used.
struct Resource {
    resource: String,
    issuer: Url,
    scopes_supported: BTreeSet<String>,
}

/// An authorization server's metadata, as far as it is used.
struct AuthorizationServer {
    authorization_endpoint: Url,
    token_endpoint: Url,
    registration_endpoint: Option<Url>,
    auth_methods: Vec<String>,
    /// It takes a client ID metadata document's URL as `client_id`.
    cimd: bool,
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
                    origin(url)
                ),
            ));
        }
        Ok(self.http)
    }

    /// Why a request could not be sent, in the host's words.
    fn unsent(&self, e: &reqwest::Error, step: &'static str) -> OauthError {
        if let Some(why) = crate::capabilities::net::refused_by_guard(e) {
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
    }

    /// Sends `request`: the status and the capped body.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        step: &'static str,
    ) -> Result<(u16, Vec<u8>), OauthError> {
        let mut response = request
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| self.unsent(&e, step))?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                        return Err(failed(step, "the answer is larger than 64 KiB"));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok((status, body)),
                Err(_) => return Err(failed(step, "the answer was cut short")),
            }
        }
    }

    /// A JSON object from `url`, or why not; `None` for a 404 (the next
    /// well-known path is tried).
    async fn metadata(&self, url: &Url) -> Result<Option<Value>, OauthError> {
        let request = self.client_for(url, "discovery")?.get(url.clone());
        let (status, body) = self.send(request, "discovery").await?;
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
        if !value.is_object() {
            return Err(failed(
                "discovery",
                format!("{} is not a JSON object", url.as_str()),
            ));
        }
        Ok(Some(value))
    }

    /// One JSON-RPC message POSTed to the MCP server without a token.
    async fn post_mcp(
        &self,
        mcp: &Url,
        message: &Value,
        session: Option<&str>,
    ) -> Result<reqwest::Response, OauthError> {
        let mut request = self
            .client_for(mcp, "discovery")?
            .post(mcp.clone())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(message.to_string());
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", PROTOCOL_VERSION);
        }
        request
            .send()
            .await
            .map_err(|e| self.unsent(&e, "discovery"))
    }

    /// The server asked without a token: the metadata URL and scope its
    /// challenge names.
    async fn challenge(
        &self,
        mcp: &Url,
    ) -> Result<(Option<Url>, Option<BTreeSet<String>>), OauthError> {
        let initialize = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "scout-connector-host", "version": env!("CARGO_PKG_VERSION")}
            }
        });
        let mut response = self.post_mcp(mcp, &initialize, None).await?;
        // A server may let `initialize` through and ask only at its first
        // request (the MCP conformance suite's step-up servers do): the
        // session it opened is asked for its tools, whose answer is the
        // challenge. Only statuses and headers are read: bodies (event
        // streams, perhaps) are dropped unread.
        if response.status().is_success() {
            let session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            drop(response);
            let initialized =
                serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            drop(self.post_mcp(mcp, &initialized, session.as_deref()).await?);
            let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
            response = self.post_mcp(mcp, &list, session.as_deref()).await?;
        }
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Err(failed(
                "discovery",
                "the server answered without asking for authorization: it needs no OAuth (store a token as the connection's `secret` if it takes one)",
            ));
        }
        let www = response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.trim_start().to_ascii_lowercase().starts_with("bearer"))
            .map(str::to_string);
        let metadata = www
            .as_deref()
            .and_then(|h| auth_param(h, "resource_metadata"))
            .and_then(|u| Url::parse(u.as_str()).ok())
            .filter(|u| matches!(u.scheme(), "https" | "http"));
        let scope = www
            .as_deref()
            .and_then(|h| auth_param(h, "scope"))
            .map(|s| s.split_whitespace().map(str::to_string).collect());
        if status != 401 {
            return Err(failed(
                "discovery",
                format!(
                    "the server answered {status}, not 401 with a challenge naming its authorization"
                ),
            ));
        }
        Ok((metadata, scope))
    }

    /// RFC 9728: the protected resource metadata, from the challenge's URL
    /// or the well-known paths; its resource must be the server's URL.
    async fn protected_resource(
        &self,
        mcp: &Url,
        named: Option<Url>,
    ) -> Result<Option<Resource>, OauthError> {
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
        let mut found = None;
        for url in candidates.into_iter().flatten() {
            if let Some(value) = self.metadata(&url).await? {
                found = Some(value);
                break;
            }
        }
        let Some(value) = found else {
            return Ok(None);
        };
        let resource = value["resource"].as_str().ok_or_else(|| {
            failed(
                "discovery",
                "the protected resource metadata has no `resource`",
            )
        })?;
        if !covers(resource, mcp) {
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
        let scopes_supported = value["scopes_supported"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(Resource {
            resource: resource.to_string(),
            issuer,
            scopes_supported,
        }))
    }

    /// MCP 2025-03-26, for a server that publishes no protected resource
    /// metadata: its own origin is its authorization server, described by
    /// the metadata there (RFC 8414), else by the default endpoints
    /// `/authorize`, `/token` and `/register`. Nothing off the origin the
    /// operator configured is asked; the token is for the server's URL
    /// (`resource`), with PKCE S256 as always.
    async fn without_resource_metadata(
        &self,
        mcp: &Url,
    ) -> Result<(Resource, AuthorizationServer), OauthError> {
        let issuer = Url::parse(&origin(mcp))
            .map_err(|_| failed("discovery", "the server's URL has no origin"))?;
        let server = match self.authorization_server_metadata(&issuer, true).await? {
            Some(server) => {
                // Trusted as the server's own: nothing of it elsewhere.
                let own = |url: &Url| url.origin() == mcp.origin();
                if !own(&server.authorization_endpoint)
                    || !own(&server.token_endpoint)
                    || !server.registration_endpoint.as_ref().is_none_or(own)
                {
                    return Err(failed(
                        "discovery",
                        "the server publishes no protected resource metadata, and the authorization server metadata at its origin names endpoints elsewhere: refused",
                    ));
                }
                server
            }
            None => {
                let at = |path: &str| {
                    secure(&format!("{}{path}", origin(mcp)))
                        .map_err(|why| failed("discovery", format!("`{path}` {why}")))
                };
                AuthorizationServer {
                    authorization_endpoint: at("/authorize")?,
                    token_endpoint: at("/token")?,
                    registration_endpoint: Some(at("/register")?),
                    auth_methods: vec!["client_secret_basic".to_string()],
                    cimd: false,
                }
            }
        };
        let resource = Resource {
            resource: mcp.to_string(),
            issuer,
            scopes_supported: BTreeSet::new(),
        };
        Ok((resource, server))
    }

    /// RFC 8414 (then OpenID discovery): the server's endpoints. Its issuer
    /// must be the one the resource named, and it must offer `S256`.
    async fn authorization_server(&self, issuer: &Url) -> Result<AuthorizationServer, OauthError> {
        self.authorization_server_metadata(issuer, false)
            .await?
            .ok_or_else(|| {
                failed(
                    "discovery",
                    format!(
                        "the authorization server {} publishes no metadata (RFC 8414)",
                        issuer.as_str()
                    ),
                )
            })
    }

    /// [`Asker::authorization_server`], `None` where no metadata is found.
    /// `at_origin`: the metadata at an MCP server's origin (2025-03-26),
    /// whose issuer may name a path on that origin.
    async fn authorization_server_metadata(
        &self,
        issuer: &Url,
        at_origin: bool,
    ) -> Result<Option<AuthorizationServer>, OauthError> {
        let path = issuer.path().trim_end_matches('/');
        let mut candidates = vec![
            well_known(issuer, "oauth-authorization-server", path),
            well_known(issuer, "openid-configuration", path),
        ];
        if !path.is_empty() {
            candidates.push(
                Url::parse(&format!(
                    "{}{path}/.well-known/openid-configuration",
                    origin(issuer)
                ))
                .ok(),
            );
        }
        let mut found = None;
        for url in candidates.into_iter().flatten() {
            if let Some(value) = self.metadata(&url).await? {
                found = Some(value);
                break;
            }
        }
        let Some(value) = found else {
            return Ok(None);
        };
        let named = value["issuer"].as_str().unwrap_or_default();
        let same_origin = Url::parse(named).is_ok_and(|n| n.origin() == issuer.origin());
        if named.trim_end_matches('/') != issuer.as_str().trim_end_matches('/')
            && !(at_origin && same_origin)
        {
            return Err(failed(
                "discovery",
                "the authorization server's metadata names another issuer: refused (RFC 8414 §3.3)",
            ));
        }
        let s256 = value["code_challenge_methods_supported"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m == "S256"));
        if !s256 {
            return Err(failed(
                "discovery",
                "the authorization server does not offer PKCE with S256 (`code_challenge_methods_supported`), which MCP requires: refused",
            ));
        }
        let endpoint = |name: &str| -> Result<Url, OauthError> {
            let text = value[name].as_str().ok_or_else(|| {
                failed(
                    "discovery",
                    format!("the authorization server's metadata has no `{name}`"),
                )
            })?;
            secure(text).map_err(|why| failed("discovery", format!("`{name}` {why}")))
        };
        let authorization_endpoint = endpoint("authorization_endpoint")?;
        let token_endpoint = endpoint("token_endpoint")?;
        let registration_endpoint = match value.get("registration_endpoint") {
            Some(_) => Some(endpoint("registration_endpoint")?),
            None => None,
        };
        let auth_methods = value["token_endpoint_auth_methods_supported"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_else(|| vec!["client_secret_basic".to_string()]);
        Ok(Some(AuthorizationServer {
            authorization_endpoint,
            token_endpoint,
            registration_endpoint,
            auth_methods,
            cimd: value["client_id_metadata_document_supported"] == true,
        }))
    }

    /// RFC 7591: registers the host as a client. A client that can keep a
    /// secret where the server offers it (HTTP Basic first, RFC 6749
    /// §2.3.1, then `client_secret_post`), else a public client (`none`).
    /// The method the server registered is the one used.
    async fn register(
        &self,
        server: &AuthorizationServer,
        redirect_uri: &str,
        scopes: &BTreeSet<String>,
    ) -> Result<(GivenClient, ClientAuth), OauthError> {
        let Some(url) = &server.registration_endpoint else {
            return Err(failed(
                "registration",
                "the authorization server offers no dynamic client registration (RFC 7591): register a client with it for the redirect URI and give its `client_id` (and `client_secret`) as `client`",
            ));
        };
        let method = match ClientAuth::chosen(&server.auth_methods, true) {
            Some(method) => method,
            None if server.auth_methods.iter().any(|m| m == "none") => ClientAuth::None,
            None => {
                return Err(failed(
                    "registration",
                    "the authorization server takes none of `client_secret_basic`, `client_secret_post` or `none` at its token endpoint: register a client with it and give it as `client`",
                ));
            }
        };
        let mut body = serde_json::json!({
            "client_name": "Scout Connector Host",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method.as_str(),
        });
        if !scopes.is_empty() {
            let joined: Vec<&str> = scopes.iter().map(String::as_str).collect();
            body["scope"] = Value::String(joined.join(" "));
        }
        let request = self
            .client_for(url, "registration")?
            .post(url.clone())
            .header("content-type", "application/json")
            .body(body.to_string());
        let (status, answer) = self.send(request, "registration").await?;
        if !(200..300).contains(&status) {
            return Err(failed(
                "registration",
                format!(
                    "the registration endpoint answered {status}{}",
                    oauth_error(&answer)
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default()
                ),
            ));
        }
        let value: Value = serde_json::from_slice(&answer)
            .map_err(|_| failed("registration", "the registration answer is not JSON"))?;
        let client_id = value["client_id"]
            .as_str()
            .filter(|id| !id.is_empty() && id.len() <= 4096)
            .ok_or_else(|| failed("registration", "the registration answer has no `client_id`"))?;
        let client_secret = value["client_secret"].as_str().unwrap_or_default();
        if client_secret.len() > 4096 || client_secret.chars().any(char::is_control) {
            return Err(failed(
                "registration",
                "the registered `client_secret` is not usable",
            ));
        }
        // The server may register another method than asked (RFC 7591
        // §3.2.1): its answer is what holds; without a secret, none.
        let registered = match value["token_endpoint_auth_method"].as_str() {
            Some("client_secret_basic") => ClientAuth::ClientSecretBasic,
            Some("client_secret_post") => ClientAuth::ClientSecretPost,
            Some("none") => ClientAuth::None,
            Some(_) => {
                return Err(failed(
                    "registration",
                    "the server registered a `token_endpoint_auth_method` the host does not speak",
                ));
            }
            None => method,
        };
        let registered = if client_secret.is_empty() {
            ClientAuth::None
        } else {
            registered
        };
        Ok((
            GivenClient {
                client_id: client_id.to_string(),
                client_secret: client_secret.to_string(),
            },
            registered,
        ))
    }
}

/// `scheme://host[:port]` of `url`.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// `ORIGIN/.well-known/NAME/PATH` (RFC 8414 §3.1, RFC 9728 §3.1).
pub(crate) fn well_known(base: &Url, name: &str, path: &str) -> Option<Url> {
    Url::parse(&format!("{}/.well-known/{name}{path}", origin(base))).ok()
}

/// Whether the resource identifier `resource` names the server at `mcp`:
/// the same origin, and its path the server's or a prefix of it at a
/// segment boundary.
pub(crate) fn covers(resource: &str, mcp: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != mcp.origin() {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = mcp.path().trim_end_matches('/');
    path == prefix || path.starts_with(&format!("{prefix}/"))
}

/// An endpoint a person or a secret is sent to: https, or plain http on
/// loopback only; no credentials or fragment.
pub(crate) fn secure(text: &str) -> Result<Url, &'static str> {
    let url = Url::parse(text).map_err(|_| "is not a URL")?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => return Err("has no host"),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => return Err("must be https (plain http only on 127.0.0.1, ::1 or localhost)"),
    }
    if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
        return Err("must not carry credentials or a fragment");
    }
    Ok(url)
}

/// The value of `name` in a `WWW-Authenticate: Bearer k="v", …` challenge.
pub(crate) fn auth_param(header: &str, name: &str) -> Option<String> {
    let rest = header.trim_start().get(6..)?;
    let mut chars = rest.char_indices().peekable();
    loop {
        while let Some((_, c)) = chars.peek() {
            if c.is_whitespace() || *c == ',' {
                chars.next();
            } else {
                break;
            }
        }
        let (start, _) = *chars.peek()?;
        let mut end = start;
        while let Some((i, c)) = chars.peek() {
            if *c == '=' {
                break;
            }
            end = *i + c.len_utf8();
            chars.next();
        }
        let key = rest[start..end].trim();
        chars.next()?; // '='
        let mut value = String::new();
        if chars.peek().map(|(_, c)| *c) == Some('"') {
            chars.next();
            while let Some((_, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some((_, c)) = chars.peek() {
                if *c == ',' || c.is_whitespace() {
                    break;
                }
                value.push(*c);
                chars.next();
            }
        }
        if key.eq_ignore_ascii_case(name) {
            return Some(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_is_read_as_rfc_6750_writes_it() {
        let header = r#"Bearer error="invalid_token", error_description="Authentication required", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp", scope="read write""#;
        assert_eq!(
            auth_param(header, "resource_metadata").as_deref(),
            Some("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(auth_param(header, "scope").as_deref(), Some("read write"));
        assert_eq!(auth_param(header, "realm"), None);
        assert_eq!(
            auth_param("Bearer realm=x,scope=a", "scope").as_deref(),
            Some("a")
        );
        assert_eq!(auth_param("Bearer", "scope"), None);
        assert_eq!(auth_param("", "scope"), None);
    }

    #[test]
    fn a_step_up_is_read_from_an_insufficient_scope_challenge_and_bounded() {
        assert_eq!(
            insufficient_scope(
                r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="x""#
            )
            .as_deref(),
            Some("mcp:basic mcp:write")
        );
        assert_eq!(
            insufficient_scope(r#"Bearer error="invalid_token", scope="a""#),
            None
        );
        assert_eq!(insufficient_scope(r#"Basic realm="x""#), None);
        assert_eq!(
            insufficient_scope(r#"Bearer error="insufficient_scope""#),
            None
        );

        let server = Url::parse("https://step-up.example.com/mcp").unwrap();
        let held: BTreeSet<String> = ["a".to_string()].into();
        assert_eq!(
            with_step_up(&server, held.clone()).unwrap(),
            held,
            "nothing asked"
        );
        for round in 0..MAX_STEP_UPS {
            let said = needs_scope(server.as_str(), "b");
            assert!(said.contains("connects it again"), "{round}: {said}");
            assert_eq!(
                scope_needed(server.as_str()),
                Some(["b".to_string()].into())
            );
            let asked = with_step_up(&server, held.clone()).unwrap();
            assert_eq!(asked, ["a".to_string(), "b".to_string()].into());
            assert_eq!(scope_needed(server.as_str()), None, "asked for now");
        }
        let said = needs_scope(server.as_str(), "b");
        assert!(said.contains("stops asking"), "{said}");
        let refused = with_step_up(&server, held.clone()).unwrap_err();
        assert!(refused.why.contains("stops asking"), "{refused}");

        // A call that then succeeds (another brand's token had it) starts
        // the count anew: the next need is asked for again.
        scope_sufficed(server.as_str());
        let said = needs_scope(server.as_str(), "b");
        assert!(said.contains("connects it again"), "{said}");
        assert_eq!(
            with_step_up(&server, held).unwrap(),
            ["a".to_string(), "b".to_string()].into()
        );
    }

    #[tokio::test]
    async fn an_authorization_server_on_a_private_address_is_not_asked_unless_allowed() {
        let http = client(false).unwrap();
        let ask = Asker {
            http: &http,
            allow_private_network: false,
        };
        for issuer in ["http://10.1.2.3/", "http://127.0.0.1:9/", "http://[::1]:9/"] {
            let refused = ask
                .authorization_server(&Url::parse(issuer).unwrap())
                .await
                .err()
                .unwrap_or_else(|| panic!("{issuer} was asked"));
            assert!(
                refused.why.contains("nothing was sent")
                    && refused.why.contains("allow_private_network"),
                "{issuer}: {refused}"
            );
        }
    }

    #[test]
    fn a_resource_covers_its_own_url_and_what_lies_below_it_only() {
        let mcp = Url::parse("https://mcp.example.com/v1/mcp").unwrap();
        assert!(covers("https://mcp.example.com/v1/mcp", &mcp));
        assert!(covers("https://mcp.example.com/v1/", &mcp));
        assert!(covers("https://mcp.example.com", &mcp));
        assert!(
            !covers("https://mcp.example.com/v1/mc", &mcp),
            "a segment boundary"
        );
        assert!(!covers("https://other.example.com/v1/mcp", &mcp));
        assert!(!covers("http://mcp.example.com/v1/mcp", &mcp));
    }

    #[test]
    fn a_state_opens_only_unchanged_under_its_key_and_not_after_it_expired() {
        let key = [3u8; 32];
        let mut pending = Pending {
            brand: "acme".into(),
            connector: "linear".into(),
            by: "ops".into(),
            verifier: "v".into(),
            client_id: "c".into(),
            client_secret: String::new(),
            client_auth: ClientAuth::None,
            token_url: "https://as.example.com/token".into(),
            resource: "https://mcp.example.com/mcp".into(),
            scopes: BTreeSet::new(),
            redirect_uri: "https://scout.example.com/v1/oauth/callback".into(),
            expires_at_ms: crate::store::now_ms() + 60_000,
        };
        let sealed = |p: &Pending| {
            crate::store::seal_text(&key, STATE_PURPOSE, &serde_json::to_vec(p).unwrap()).unwrap()
        };
        let state = sealed(&pending);
        assert_eq!(super::pending(&key, &state).unwrap().brand, "acme");
        assert!(
            super::pending(&[4u8; 32], &state).is_err(),
            "another host's key"
        );
        pending.expires_at_ms = crate::store::now_ms() - 1;
        let expired = super::pending(&key, &sealed(&pending)).unwrap_err();
        assert!(expired.why.contains("ten minutes"), "{expired}");
        let shown = format!("{pending:?}");
        assert!(!shown.contains("verifier: "), "{shown}");
    }
}
