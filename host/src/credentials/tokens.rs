//! Access tokens the host obtains and keeps alive itself (DESIGN D4), for a
//! connection whose stored secret is not the token an upstream takes:
//!
//! - an OAuth 2.0 refresh-token grant (RFC 6749 §6; Google): the stored
//!   refresh token and client are exchanged at the token endpoint, asking
//!   for the scopes the session holds (a narrowed Google grant asks for
//!   exactly its products' scopes, never more than were stored);
//! - an OAuth 2.0 client-credentials grant (RFC 6749 §4.4; Tailscale's OAuth
//!   clients), with the stored scopes;
//! - a token broker (Nango): the connection's current access token, asked
//!   of the broker with the deployment's broker secret.
//!
//! [`Tokens`] caches each token until shortly before it expires, shares one
//! in-flight request among the calls that need the same token, and renews
//! it once when an upstream answers 401 ([`Tokens::renew`]). A token is
//! obtained only for a call the policy already allowed (the granter asks,
//! after authorization), and goes only into the HTTP handle, which scrubs
//! it, like the refresh token and the client secret, from everything the
//! guest sees. A request that fails says so with a bounded reason (the
//! endpoint's status and, for OAuth, its RFC 6749 §5.2 error code); no
//! response body is ever kept, logged or traced.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Secret;

/// What a stored connection seals when the host obtains its tokens (the
/// admin API's `oauth`, `client_credentials` and `broker` bodies).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TokenSource {
    /// OAuth 2.0 refresh-token grant.
    Oauth(RefreshGrant),
    /// OAuth 2.0 client-credentials grant.
    ClientCredentials(ClientGrant),
    /// A token broker's connection (Nango).
    Broker(BrokerConnection),
}

/// An OAuth client and the refresh token it was issued.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefreshGrant {
    /// Empty where the authorization server issued none (a remote MCP
    /// server's Connect, [`crate::remote::oauth`]): the access token in
    /// `issued` is then all the connection holds, and once it expires a
    /// person connects again ([`TokenError::Expired`]).
    #[serde(default)]
    pub refresh_token: String,
    pub client_id: String,
    /// Empty for a public client (RFC 6749 §2.1; a client registered with
    /// `token_endpoint_auth_method: none`): then no secret is sent.
    #[serde(default)]
    pub client_secret: String,
    pub token_url: String,
    /// The scopes the refresh token was granted. A request never asks for
    /// one outside this set.
    #[serde(default)]
    pub scopes: BTreeSet<String>,
    /// The resource indicator (RFC 8707) every token request names: a
    /// remote MCP server's canonical URL, so a token is good for it alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The last access token the endpoint issued and until when, kept with
    /// the grant where the endpoint rotates its refresh tokens (the host's
    /// own record, never given through the admin API): every host of a
    /// fleet uses it until it expires instead of refreshing, and so
    /// retiring, the refresh token another host holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued: Option<IssuedToken>,
    /// How the client authenticates at the token endpoint
    /// ([`ClientAuth`]): by default its secret in the form, as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<ClientAuth>,
}

/// How a client authenticates at a token endpoint (RFC 6749 §2.3.1, the
/// names of RFC 7591 §2 that RFC 8414's
/// `token_endpoint_auth_methods_supported` lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// HTTP Basic with the form-encoded id and secret (what RFC 6749 says
    /// every server MUST take).
    ClientSecretBasic,
    /// The secret as `client_secret` in the form.
    ClientSecretPost,
    /// A public client: no secret.
    None,
}

impl ClientAuth {
    /// Its RFC 7591 name.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::ClientSecretBasic => "client_secret_basic",
            ClientAuth::ClientSecretPost => "client_secret_post",
            ClientAuth::None => "none",
        }
    }

    /// The one a client holding a secret (or not) uses with a server that
    /// takes `supported` (RFC 8414's default where it says nothing: basic):
    /// basic first, then post; `None` when the server takes neither.
    pub fn chosen(supported: &[String], has_secret: bool) -> Option<ClientAuth> {
        let takes = |m: ClientAuth| supported.iter().any(|s| s == m.as_str());
        if !has_secret {
            return Some(ClientAuth::None);
        }
        [ClientAuth::ClientSecretBasic, ClientAuth::ClientSecretPost]
            .into_iter()
            .find(|m| takes(*m))
    }

    /// Authenticates `client_id` with `client_secret` on a token request:
    /// `client_id` always in the form (RFC 6749 §3.2.1 allows it, and some
    /// servers look the client up by it), the secret in the form or as
    /// HTTP Basic of the form-encoded pair (RFC 6749 §2.3.1).
    pub fn apply<'a>(
        self,
        request: reqwest::RequestBuilder,
        form: &mut Vec<(&'static str, &'a str)>,
        client_id: &'a str,
        client_secret: &'a str,
    ) -> reqwest::RequestBuilder {
        form.push(("client_id", client_id));
        if client_secret.is_empty() {
            return request;
        }
        match self {
            ClientAuth::ClientSecretBasic => {
                use base64::Engine;
                let encode = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let pair = format!("{}:{}", encode(client_id), encode(client_secret));
                let value = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                );
                request.header("authorization", value)
            }
            ClientAuth::ClientSecretPost => {
                form.push(("client_secret", client_secret));
                request
            }
            ClientAuth::None => request,
        }
    }
}

/// An access token as issued, with its expiry (milliseconds since the epoch).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuedToken {
    pub access_token: String,
    pub expires_at_ms: i64,
}

/// An OAuth client that obtains tokens for itself.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientGrant {
    pub client_id: String,
    /// Empty for a client that authenticates by its `private_key` alone.
    #[serde(default)]
    pub client_secret: String,
    pub token_url: String,
    #[serde(default)]
    pub scopes: BTreeSet<String>,
    /// How it authenticates with its secret: by default in the form
    /// (`client_secret_post`), as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<ClientAuth>,
    /// The resource indicator (RFC 8707) every token request names: a
    /// remote MCP server's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// A client that authenticates by a signed assertion
    /// (`private_key_jwt`, RFC 7523 §2.2) instead of a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<PrivateKeyJwt>,
}

/// A client's signing key and where its assertions are addressed
/// (`private_key_jwt`, RFC 7523 §3): each token request carries a fresh
/// JWT, `iss` and `sub` the client id, `aud` the authorization server,
/// living a minute, with a random `jti`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateKeyJwt {
    /// The PKCS#8 private key, PEM (`-----BEGIN PRIVATE KEY-----`).
    pub pem: String,
    /// `ES256` (the only algorithm taken).
    pub algorithm: String,
    /// The assertion's audience: the authorization server's issuer.
    pub audience: String,
}

/// RFC 7523 §2.2's client assertion type.
pub const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

impl PrivateKeyJwt {
    /// A fresh client assertion for `client_id`.
    pub fn assertion(&self, client_id: &str) -> Result<String, &'static str> {
        let der = pem_body(&self.pem).ok_or("the private key is not a PEM `PRIVATE KEY`")?;
        if self.algorithm != "ES256" {
            return Err("the signing algorithm is not ES256");
        }
        let key = jsonwebtoken::EncodingKey::from_ec_der(&der);
        let now = jsonwebtoken::get_current_timestamp();
        let mut jti = [0u8; 16];
        getrandom::fill(&mut jti).map_err(|_| "no randomness for the assertion's jti")?;
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": self.audience,
            "iat": now,
            "exp": now + 60,
            "jti": jti.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        });
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
            &claims,
            &key,
        )
        .map_err(|_| "the private key does not sign (not a P-256 PKCS#8 key?)")
    }
}

/// The DER inside a `-----BEGIN PRIVATE KEY-----` PEM.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let body = pem
        .trim()
        .strip_prefix("-----BEGIN PRIVATE KEY-----")?
        .strip_suffix("-----END PRIVATE KEY-----")?;
    let text: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// A connection the token broker holds.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerConnection {
    pub connection_id: String,
    pub provider_config_key: String,
    /// For the Google connection: the scopes the broker's connection was
    /// granted (which Google products it serves).
    #[serde(default)]
    pub scopes: BTreeSet<String>,
}

/// What marks a sealed connection as a token source rather than a secret.
const SEALED_PREFIX: &str = "scout-token-source:v1:";

/// A field of a token source that is not acceptable, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {why}")]
pub struct FieldError {
    /// Dotted path in the admin API's body, e.g. `oauth.token_url`.
    pub field: String,
    pub why: String,
}

/// A connection marked as holding a token source whose sealed text does not
/// read as one (where it failed is not said: the text holds a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stored token source does not read as one")]
pub struct UnreadableTokenSource;

impl TokenSource {
    /// `oauth`, `client_credentials` or `broker`.
    pub fn kind(&self) -> &'static str {
        match self {
            TokenSource::Oauth(_) => "oauth",
            TokenSource::ClientCredentials(_) => "client_credentials",
            TokenSource::Broker(_) => "broker",
        }
    }

    /// The scopes the stored source was granted.
    pub fn scopes(&self) -> &BTreeSet<String> {
        match self {
            TokenSource::Oauth(g) => &g.scopes,
            TokenSource::ClientCredentials(g) => &g.scopes,
            TokenSource::Broker(b) => &b.scopes,
        }
    }

    /// The secrets it holds (never sent to an upstream; scrubbed anyway).
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            TokenSource::Oauth(g) => {
                let mut secrets = Vec::new();
                if !g.refresh_token.is_empty() {
                    secrets.push(g.refresh_token.as_str());
                }
                if !g.client_secret.is_empty() {
                    secrets.push(&g.client_secret);
                }
                if let Some(issued) = &g.issued {
                    secrets.push(&issued.access_token);
                }
                secrets
            }
            TokenSource::ClientCredentials(g) => {
                let mut secrets = Vec::new();
                if !g.client_secret.is_empty() {
                    secrets.push(g.client_secret.as_str());
                }
                if let Some(key) = &g.private_key {
                    secrets.push(&key.pem);
                }
                secrets
            }
            TokenSource::Broker(_) => Vec::new(),
        }
    }

    /// Checks every field; the first at fault, by its path in the body.
    pub fn validate(&self) -> Result<(), FieldError> {
        let kind = self.kind();
        let field = |name: &str, why: &str| FieldError {
            field: format!("{kind}.{name}"),
            why: why.to_string(),
        };
        let text = |name: &str, value: &str| -> Result<(), FieldError> {
            if value.is_empty() || value.len() > 4096 {
                return Err(field(name, "must be 1 to 4096 bytes"));
            }
            if value.chars().any(char::is_control) {
                return Err(field(name, "must not hold control characters"));
            }
            Ok(())
        };
        let scopes = |scopes: &BTreeSet<String>| -> Result<(), FieldError> {
            if scopes.len() > 64 {
                return Err(field("scopes", "holds at most 64 scopes"));
            }
            for scope in scopes {
                // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
                let ok = !scope.is_empty()
                    && scope.len() <= 512
                    && scope.bytes().all(|b| {
                        b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b)
                    });
                if !ok {
                    return Err(field(
                        "scopes",
                        "must be scope tokens (RFC 6749 §3.3: no spaces, quotes or backslashes)",
                    ));
                }
            }
            Ok(())
        };
        match self {
            TokenSource::Oauth(g) => {
                // No refresh token only with the access token it stands
                // in for (never through the admin API, which refuses
                // `issued`).
                if !g.refresh_token.is_empty() || g.issued.is_none() {
                    text("refresh_token", &g.refresh_token)?;
                }
                if let Some(issued) = &g.issued {
                    text("issued.access_token", &issued.access_token)?;
                }
                text("client_id", &g.client_id)?;
                if !g.client_secret.is_empty() {
                    text("client_secret", &g.client_secret)?;
                }
                token_url(&g.token_url).map_err(|why| field("token_url", why))?;
                if let Some(resource) = &g.resource
                    && !resource_indicator(resource)
                {
                    return Err(field(
                        "resource",
                        "must be an http(s) URL without credentials, query or fragment (RFC 8707)",
                    ));
                }
                scopes(&g.scopes)
            }
            TokenSource::ClientCredentials(g) => {
                text("client_id", &g.client_id)?;
                match &g.private_key {
                    Some(key) => {
                        if key.pem.len() > 16 << 10 {
                            return Err(field("private_key.pem", "must be at most 16 KiB"));
                        }
                        key.assertion(&g.client_id)
                            .map_err(|why| field("private_key", why))?;
                        token_url(&key.audience)
                            .map_err(|why| field("private_key.audience", why))?;
                    }
                    None => text("client_secret", &g.client_secret)?,
                }
                if !g.client_secret.is_empty() {
                    text("client_secret", &g.client_secret)?;
                }
                if let Some(resource) = &g.resource
                    && !resource_indicator(resource)
                {
                    return Err(field(
                        "resource",
                        "must be an http(s) URL without credentials, query or fragment (RFC 8707)",
                    ));
                }
                token_url(&g.token_url).map_err(|why| field("token_url", why))?;
                scopes(&g.scopes)
            }
            TokenSource::Broker(b) => {
                text("connection_id", &b.connection_id)?;
                text("provider_config_key", &b.provider_config_key)?;
                scopes(&b.scopes)
            }
        }
    }

    /// The access token kept with a rotating grant, while it is still
    /// worth using (what a host that did not obtain it starts from).
    fn issued(&self) -> Option<Cached> {
        let TokenSource::Oauth(RefreshGrant {
            issued: Some(issued),
            ..
        }) = self
        else {
            return None;
        };
        let left = issued.expires_at_ms.saturating_sub(crate::store::now_ms());
        let token = usable(&issued.access_token).ok()?;
        let left = Duration::from_millis(left.max(0) as u64);
        // A token nothing can renew is used until it expires.
        let renew = if self.expires_for_good() {
            Instant::now()
                .checked_add(left)
                .unwrap_or_else(Instant::now)
        } else {
            renew_at(Instant::now(), left)
        };
        (!left.is_zero()).then_some(Cached {
            token,
            renew_at: renew,
        })
    }

    /// An OAuth connection that holds an access token and no refresh
    /// token: when the token expires, only a person can renew it.
    pub fn expires_for_good(&self) -> bool {
        matches!(self, TokenSource::Oauth(g) if g.refresh_token.is_empty())
    }

    /// Whether the connection no longer holds a usable token and nothing
    /// can get it one but a person connecting again.
    pub fn expired_for_good(&self) -> bool {
        match self {
            TokenSource::Oauth(g) if g.refresh_token.is_empty() => g
                .issued
                .as_ref()
                .is_none_or(|i| i.expires_at_ms <= crate::store::now_ms()),
            _ => false,
        }
    }

    /// The string a connection seals.
    pub fn seal_text(&self) -> String {
        // Structs of strings and sets of strings always serialise.
        format!(
            "{SEALED_PREFIX}{}",
            serde_json::to_string(self).unwrap_or_default()
        )
    }

    /// A sealed connection's token source, if it is one (`None`: a secret);
    /// an error if it is marked as one and does not read as one.
    pub fn from_sealed(sealed: &str) -> Option<Result<TokenSource, UnreadableTokenSource>> {
        let json = sealed.strip_prefix(SEALED_PREFIX)?;
        Some(serde_json::from_str(json).map_err(|_| UnreadableTokenSource))
    }

    /// A digest naming this source and the scopes asked for: the cache's key
    /// (a changed refresh token or client is a different source).
    fn digest(&self, scopes: &BTreeSet<String>) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(self.seal_text().as_bytes());
        for scope in scopes {
            hash.update(b"\n");
            hash.update(scope.as_bytes());
        }
        hash.finalize().into()
    }
}

impl fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Oauth(g) => f
                .debug_struct("Oauth")
                .field("token_url", &g.token_url)
                .field("client_id", &g.client_id)
                .field("scopes", &g.scopes)
                .finish_non_exhaustive(),
            TokenSource::ClientCredentials(g) => f
                .debug_struct("ClientCredentials")
                .field("token_url", &g.token_url)
                .field("client_id", &g.client_id)
                .field("scopes", &g.scopes)
                .finish_non_exhaustive(),
            TokenSource::Broker(b) => f
                .debug_struct("Broker")
                .field("connection_id", &b.connection_id)
                .field("provider_config_key", &b.provider_config_key)
                .finish(),
        }
    }
}

/// A token endpoint is https, or plain http only on loopback (a local
/// development issuer, the tests' fakes); no credentials or fragment in it.
fn token_url(text: &str) -> Result<url::Url, &'static str> {
    let url = url::Url::parse(text).map_err(|_| "is not a URL")?;
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

/// The deployment's token broker: where it answers and its secret.
#[derive(Clone)]
pub struct BrokerConfig {
    /// `https://api.nango.dev`, or a self-hosted instance.
    pub url: url::Url,
    pub secret: Secret,
    /// The operator allowed a broker on a private or loopback address.
    pub allow_private_network: bool,
}

impl fmt::Debug for BrokerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerConfig")
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

/// Why a token could not be obtained. Every message is bounded: a status,
/// a registered OAuth error code, a fixed sentence; never a response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The endpoint answered with an error status.
    #[error("the token endpoint answered {status}{}", code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Refused { status: u16, code: Option<String> },
    /// It could not be reached, or did not answer in time.
    #[error("the token endpoint could not be reached ({0})")]
    Unreachable(&'static str),
    /// Its answer is not a token.
    #[error("the token endpoint's answer is not a token ({0})")]
    Malformed(&'static str),
    /// A broker connection, and no broker configured.
    #[error("no token broker is configured")]
    NoBroker,
    /// The session needs scopes the stored grant does not hold: asking
    /// without them would get the grant's full scope.
    #[error("none of the scopes this session needs are among the connection's stored scopes")]
    NoScope,
    /// The endpoint's address is private, loopback, link-local or
    /// otherwise not public, and the operator did not allow that: nothing
    /// was sent to it.
    #[error(
        "the token endpoint's address is refused ({0}); nothing was sent: a token endpoint on a private network needs `allow_private_network` on its connector (or on `[token_broker]`)"
    )]
    AddressRefused(String),
    /// The connection's access token expired and its authorization server
    /// issued no refresh token: nothing was asked.
    #[error(
        "the connection's access token expired and its authorization server issued no refresh token: a person connects it again (POST /v1/brands/BRAND/connections/CONNECTOR/authorize)"
    )]
    Expired,
}

impl TokenError {
    /// What the guest and the agent are told.
    pub const REASON: &'static str = crate::capabilities::http::CREDENTIAL_NOT_REFRESHED;
    /// What they are told when only a person can renew the connection.
    pub const EXPIRED: &'static str =
        "the connection's authorization expired: reconnect it (a person authorizes again)";

    /// What the guest and the agent are told of this failure.
    pub fn reason(&self) -> &'static str {
        match self {
            TokenError::Expired => Self::EXPIRED,
            _ => Self::REASON,
        }
    }

    /// The endpoint's status, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            TokenError::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The error codes of RFC 6749 §5.2: the only part of an error answer kept.
const OAUTH_ERRORS: &[&str] = &[
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
];

/// How long a token is used when its answer says nothing of its lifetime.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
/// How long before its expiry a token is renewed.
const RENEW_BEFORE: Duration = Duration::from_secs(60);
/// The longest a token is used before it is asked for again, whatever its
/// answer says (a day: no OAuth access token this host uses lives longer).
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// How long a failure is the answer for every call needing that token:
/// the calls that waited on the failed request share it, and a revoked
/// grant is not asked for again by every call.
const FAILURE_HOLD: Duration = Duration::from_secs(5);
/// The most a token endpoint's answer may hold.
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// When a token obtained `now` that lives `lifetime` is renewed: a minute
/// before it expires, or halfway for a short-lived one.
fn renew_at(now: Instant, lifetime: Duration) -> Instant {
    let lead = RENEW_BEFORE.min(lifetime / 2);
    now.checked_add(lifetime.saturating_sub(lead))
        .unwrap_or(now)
}

/// What obtaining a token did, for the call's trace: never the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenEvent {
    /// The connector whose credential it is.
    pub connector: String,
    /// `oauth`, `client_credentials` or `broker`.
    pub source: &'static str,
    /// `cached`, `obtained`, `renewed` (after a 401), `failed`, `expired`
    /// (an access token nothing but a person can renew: nothing asked), or
    /// `failed_recently` (a request for it failed within the last few
    /// seconds: not asked again).
    pub outcome: &'static str,
    /// The endpoint's status, when it was asked and answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it failed (bounded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Time spent asking, in microseconds (0 from the cache).
    pub micros: u64,
    /// The endpoint rotated the refresh token: the grant as it now stands,
    /// for the caller to store in place of the one it resolved (the old
    /// refresh token no longer works). Never traced.
    #[serde(skip)]
    pub rotated: Option<TokenSource>,
}

struct Cached {
    token: Secret,
    renew_at: Instant,
}

/// The last failure of a slot's request, answered until `until`.
struct Failed {
    error: TokenError,
    status: Option<u16>,
    until: Instant,
}

#[derive(Default)]
struct SlotState {
    cached: Option<Cached>,
    failed: Option<Failed>,
}

impl SlotState {
    /// The recent failure, as this call's answer.
    fn recent_failure(
        &self,
        request: &TokenRequest<'_>,
    ) -> Option<(Result<Secret, TokenError>, TokenEvent)> {
        let failed = self.failed.as_ref().filter(|f| Instant::now() < f.until)?;
        let mut event = request.event("failed_recently", 0);
        event.status = failed.status;
        event.error = Some(failed.error.to_string());
        Some((Err(failed.error.clone()), event))
    }
}

type Slot = Arc<tokio::sync::Mutex<SlotState>>;

/// The host's tokens: one cache slot per (brand, connection, source and
/// scopes); a slot's lock is held while its token is fetched, so calls that
/// need it at once share one request.
pub struct Tokens {
    /// For endpoints on public addresses only.
    client: reqwest::Client,
    /// For a connector (or broker) the operator allowed on a private network.
    private_client: reqwest::Client,
    broker: Option<BrokerConfig>,
    slots: parking_lot::Mutex<HashMap<[u8; 32], Slot>>,
    /// Requests made to token endpoints (tests read it).
    requests: std::sync::atomic::AtomicU64,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("broker", &self.broker)
            .finish_non_exhaustive()
    }
}

/// One token asked for: whose, from what, with which scopes.
pub struct TokenRequest<'a> {
    pub brand: &'a str,
    pub connector: &'a str,
    pub source: &'a TokenSource,
    /// The scopes to ask for (a narrowed grant's); empty: the source's own.
    pub scopes: &'a BTreeSet<String>,
    /// The operator allowed this connector's private or loopback
    /// destinations (`allow_private_network`): its token endpoint may be
    /// one too. Otherwise every address is checked as for the guest's
    /// requests, and a refused one is never asked.
    pub allow_private_network: bool,
}

impl TokenRequest<'_> {
    fn key(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(self.brand.as_bytes());
        hash.update([0]);
        hash.update(self.connector.as_bytes());
        hash.update([0]);
        hash.update(self.source.digest(self.scopes));
        hash.finalize().into()
    }

    fn event(&self, outcome: &'static str, micros: u64) -> TokenEvent {
        TokenEvent {
            connector: self.connector.to_string(),
            source: self.source.kind(),
            outcome,
            status: None,
            error: None,
            micros,
            rotated: None,
        }
    }
}

impl Tokens {
    /// `timeout` bounds each request to a token endpoint or the broker.
    /// Fails only if the HTTP client cannot be built; never falls back to
    /// one that follows redirects (which would resend the grant's secrets).
    pub fn new(broker: Option<BrokerConfig>, timeout: Duration) -> Result<Tokens, String> {
        let client = |allow_private_network| {
            crate::capabilities::net::guarded_client(allow_private_network)
                .timeout(timeout)
                .connect_timeout(timeout.min(Duration::from_secs(5)))
                .build()
                .map_err(|e| format!("the token endpoints' HTTP client cannot be built: {e}"))
        };
        Ok(Tokens {
            client: client(false)?,
            private_client: client(true)?,
            broker,
            slots: Default::default(),
            requests: Default::default(),
        })
    }

    /// The client for a request to `url`: the guarded one, which refuses a
    /// private address at resolution, and refuses here an address written
    /// in the URL itself; or, where the operator allowed it, the other.
    fn client_for(
        &self,
        url: &url::Url,
        allow_private_network: bool,
    ) -> Result<&reqwest::Client, TokenError> {
        if allow_private_network {
            return Ok(&self.private_client);
        }
        match crate::capabilities::net::literal_denied(url) {
            Some(why) => Err(TokenError::AddressRefused(why)),
            None => Ok(&self.client),
        }
    }

    /// Whether a broker is configured (a broker connection resolves only then).
    pub fn has_broker(&self) -> bool {
        self.broker.is_some()
    }

    /// Requests sent to token endpoints and the broker so far.
    pub fn requests_made(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn slot(&self, key: [u8; 32]) -> Slot {
        self.slots.lock().entry(key).or_default().clone()
    }

    /// The token for `request`: the cached one while it is fresh, else a
    /// new one (one request for all the calls waiting on it).
    pub async fn token(
        &self,
        request: &TokenRequest<'_>,
    ) -> (Result<Secret, TokenError>, TokenEvent) {
        let slot = self.slot(request.key());
        let mut state = slot.lock().await;
        if state.cached.is_none() {
            state.cached = request.source.issued();
        }
        if let Some(c) = state.cached.as_ref()
            && Instant::now() < c.renew_at
        {
            return (Ok(c.token.clone()), request.event("cached", 0));
        }
        if let Some(failure) = state.recent_failure(request) {
            return failure;
        }
        self.fetch_into(request, &mut state, "obtained").await
    }

    /// A new token after an upstream refused `stale` (401): fetched once,
    /// unless another call already replaced it.
    pub async fn renew(
        &self,
        request: &TokenRequest<'_>,
        stale: &Secret,
    ) -> (Result<Secret, TokenError>, TokenEvent) {
        let slot = self.slot(request.key());
        let mut state = slot.lock().await;
        if let Some(c) = state.cached.as_ref()
            && c.token != *stale
            && Instant::now() < c.renew_at
        {
            return (Ok(c.token.clone()), request.event("cached", 0));
        }
        if let Some(failure) = state.recent_failure(request) {
            return failure;
        }
        self.fetch_into(request, &mut state, "renewed").await
    }

    async fn fetch_into(
        &self,
        request: &TokenRequest<'_>,
        state: &mut SlotState,
        outcome: &'static str,
    ) -> (Result<Secret, TokenError>, TokenEvent) {
        let started = Instant::now();
        let (fetched, status) = self.fetch(request, outcome == "renewed").await;
        let mut event = request.event(outcome, started.elapsed().as_micros() as u64);
        event.status = status;
        match fetched {
            Ok(Fetched {
                token,
                lifetime,
                refresh_token,
            }) => {
                let lifetime = lifetime.min(MAX_LIFETIME);
                let now = Instant::now();
                state.cached = Some(Cached {
                    token: token.clone(),
                    renew_at: renew_at(now, lifetime),
                });
                state.failed = None;
                if let (TokenSource::Oauth(grant), Some(next)) = (request.source, refresh_token)
                    && next != grant.refresh_token
                {
                    event.rotated = Some(TokenSource::Oauth(RefreshGrant {
                        refresh_token: next,
                        issued: Some(IssuedToken {
                            access_token: token.expose().to_string(),
                            expires_at_ms: crate::store::now_ms()
                                .saturating_add(lifetime.as_millis() as i64),
                        }),
                        ..grant.clone()
                    }));
                }
                (Ok(token), event)
            }
            Err(e) => {
                // A token that failed to renew is not used again, and the
                // failure answers the calls behind this one for a moment.
                state.cached = None;
                let now = Instant::now();
                state.failed = Some(Failed {
                    error: e.clone(),
                    status,
                    until: now.checked_add(FAILURE_HOLD).unwrap_or(now),
                });
                event.outcome = if e == TokenError::Expired {
                    "expired"
                } else {
                    "failed"
                };
                event.error = Some(e.to_string());
                tracing::warn!(
                    connector = request.connector,
                    source = request.source.kind(),
                    error = %e,
                    "{}",
                    TokenError::REASON
                );
                (Err(e), event)
            }
        }
    }

    /// One request to the source's endpoint: the token and its lifetime,
    /// and the status the endpoint answered with. `renewing`: an upstream
    /// refused the last token, so a broker is asked to refresh it.
    async fn fetch(
        &self,
        request: &TokenRequest<'_>,
        renewing: bool,
    ) -> (Result<Fetched, TokenError>, Option<u16>) {
        let scopes = if request.scopes.is_empty() {
            request.source.scopes()
        } else {
            request.scopes
        };
        // Never wider than what was stored.
        let scope: Vec<&str> = scopes
            .iter()
            .filter(|s| request.source.scopes().is_empty() || request.source.scopes().contains(*s))
            .map(String::as_str)
            .collect();
        // Narrowed to nothing, the request would omit `scope` and get the
        // grant's whole scope: refused instead, with nothing asked.
        if scope.is_empty() && !request.scopes.is_empty() {
            return (Err(TokenError::NoScope), None);
        }
        let builder = match request.source {
            TokenSource::Oauth(g) if g.refresh_token.is_empty() => {
                return (Err(TokenError::Expired), None);
            }
            TokenSource::Oauth(g) => {
                let mut form = vec![
                    ("grant_type", "refresh_token"),
                    ("refresh_token", g.refresh_token.as_str()),
                ];
                if let Some(resource) = &g.resource {
                    form.push(("resource", resource.as_str()));
                }
                let joined = scope.join(" ");
                if !joined.is_empty() {
                    form.push(("scope", &joined));
                }
                let Ok(url) = token_url(&g.token_url) else {
                    return (
                        Err(TokenError::Unreachable("the token URL is not acceptable")),
                        None,
                    );
                };
                let client = match self.client_for(&url, request.allow_private_network) {
                    Ok(client) => client,
                    Err(refused) => return (Err(refused), None),
                };
                let auth = g
                    .token_endpoint_auth_method
                    .unwrap_or(ClientAuth::ClientSecretPost);
                let builder =
                    auth.apply(client.post(url), &mut form, &g.client_id, &g.client_secret);
                builder.form(&form)
            }
            TokenSource::ClientCredentials(g) => {
                let mut form = vec![("grant_type", "client_credentials")];
                let joined = scope.join(" ");
                if !joined.is_empty() {
                    form.push(("scope", &joined));
                }
                if let Some(resource) = &g.resource {
                    form.push(("resource", resource.as_str()));
                }
                let Ok(url) = token_url(&g.token_url) else {
                    return (
                        Err(TokenError::Unreachable("the token URL is not acceptable")),
                        None,
                    );
                };
                let client = match self.client_for(&url, request.allow_private_network) {
                    Ok(client) => client,
                    Err(refused) => return (Err(refused), None),
                };
                let assertion = match g.private_key.as_ref().map(|k| k.assertion(&g.client_id)) {
                    Some(Ok(assertion)) => Some(assertion),
                    Some(Err(_)) => {
                        return (
                            Err(TokenError::Unreachable("the client's key does not sign")),
                            None,
                        );
                    }
                    None => None,
                };
                let builder = client.post(url);
                let builder = match &assertion {
                    Some(assertion) => {
                        form.push(("client_id", g.client_id.as_str()));
                        form.push(("client_assertion_type", JWT_BEARER_ASSERTION));
                        form.push(("client_assertion", assertion.as_str()));
                        builder
                    }
                    None => g
                        .token_endpoint_auth_method
                        .unwrap_or(ClientAuth::ClientSecretPost)
                        .apply(builder, &mut form, &g.client_id, &g.client_secret),
                };
                builder.form(&form)
            }
            TokenSource::Broker(b) => {
                let Some(broker) = &self.broker else {
                    return (Err(TokenError::NoBroker), None);
                };
                let mut url = broker.url.clone();
                match url.path_segments_mut() {
                    Ok(mut path) => {
                        path.pop_if_empty()
                            .push("connections")
                            .push(&b.connection_id);
                    }
                    Err(()) => {
                        return (
                            Err(TokenError::Unreachable("the broker URL has no path")),
                            None,
                        );
                    }
                }
                url.query_pairs_mut()
                    .append_pair("provider_config_key", &b.provider_config_key);
                // Nango refreshes a token it still thinks valid only when
                // told to (`force_refresh`, its connection API reference;
                // UNVERIFIED against a live Nango).
                if renewing {
                    url.query_pairs_mut().append_pair("force_refresh", "true");
                }
                let client = match self.client_for(&url, broker.allow_private_network) {
                    Ok(client) => client,
                    Err(refused) => return (Err(refused), None),
                };
                client.get(url).bearer_auth(broker.secret.expose())
            }
        };
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let response = match builder.header("accept", "application/json").send().await {
            Ok(r) => r,
            Err(e) if e.is_timeout() => {
                return (
                    Err(TokenError::Unreachable("it did not answer in time")),
                    None,
                );
            }
            Err(e) => {
                if let Some(refused) = crate::capabilities::net::refused_by_guard(&e) {
                    return (Err(TokenError::AddressRefused(refused)), None);
                }
                return (Err(TokenError::Unreachable("no connection")), None);
            }
        };
        let status = response.status().as_u16();
        let body = match read_capped(response).await {
            Ok(body) => body,
            Err(e) => return (Err(e), Some(status)),
        };
        if !(200..300).contains(&status) {
            let code = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["error"].as_str().map(str::to_string))
                .filter(|c| OAUTH_ERRORS.contains(&c.as_str()));
            return (Err(TokenError::Refused { status, code }), Some(status));
        }
        let parsed = match request.source {
            TokenSource::Broker(_) => broker_token(&body).map(|(token, lifetime)| Fetched {
                token,
                lifetime,
                refresh_token: None,
            }),
            _ => oauth_token(&body),
        };
        (parsed, Some(status))
    }
}

async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, TokenError> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(TokenError::Malformed("the answer is too large"));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) if e.is_timeout() => {
                return Err(TokenError::Unreachable("it did not answer in time"));
            }
            Err(_) => return Err(TokenError::Unreachable("the answer was cut short")),
        }
    }
}

/// A token the host can inject: non-empty, and a valid header value.
fn usable(token: &str) -> Result<Secret, TokenError> {
    if token.is_empty() || http::HeaderValue::from_str(token).is_err() || token.len() > 8192 {
        return Err(TokenError::Malformed(
            "the access token is empty or not a header value",
        ));
    }
    Ok(Secret::new(token))
}

/// A token endpoint's answer: the access token, how long it lives, and the
/// new refresh token where the endpoint rotates them (RFC 6749 §6, OAuth
/// 2.1 §4.3.1).
pub(crate) struct Fetched {
    pub(crate) token: Secret,
    pub(crate) lifetime: Duration,
    pub(crate) refresh_token: Option<String>,
}

/// RFC 6749 §5.1: `access_token`, `token_type` (bearer), `expires_in`, and
/// a `refresh_token` where one is issued.
pub(crate) fn oauth_token(body: &[u8]) -> Result<Fetched, TokenError> {
    #[derive(Deserialize)]
    struct Answer {
        access_token: Option<String>,
        token_type: Option<String>,
        expires_in: Option<serde_json::Value>,
        refresh_token: Option<String>,
    }
    let answer: Answer =
        serde_json::from_slice(body).map_err(|_| TokenError::Malformed("not JSON"))?;
    let token = answer
        .access_token
        .ok_or(TokenError::Malformed("no access_token"))?;
    if let Some(kind) = &answer.token_type
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(TokenError::Malformed("token_type is not bearer"));
    }
    // Some endpoints send the number as a string.
    let lifetime = match &answer.expires_in {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.parse().ok(),
        _ => None,
    }
    .map(|secs| Duration::from_secs(secs.min(MAX_LIFETIME.as_secs())))
    .unwrap_or(DEFAULT_LIFETIME);
    let refresh_token = answer
        .refresh_token
        .filter(|r| !r.is_empty() && r.len() <= 4096 && !r.chars().any(char::is_control));
    Ok(Fetched {
        token: usable(&token)?,
        lifetime,
        refresh_token,
    })
}

/// Nango's connection: `credentials.access_token` and `credentials.expires_at`.
fn broker_token(body: &[u8]) -> Result<(Secret, Duration), TokenError> {
    let answer: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| TokenError::Malformed("not JSON"))?;
    let credentials = &answer["credentials"];
    let token = credentials["access_token"]
        .as_str()
        .ok_or(TokenError::Malformed("no credentials.access_token"))?;
    let lifetime = credentials["expires_at"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|at| {
            let left = at.timestamp() - chrono::Utc::now().timestamp();
            Duration::from_secs((left.max(0) as u64).min(MAX_LIFETIME.as_secs()))
        })
        .unwrap_or(DEFAULT_LIFETIME);
    Ok((usable(token)?, lifetime))
}

/// Whether `text` is a resource indicator this host sends (RFC 8707: an
/// absolute URI without a fragment; here also http(s), without credentials
/// or a query, as the MCP server endpoints it names are).
fn resource_indicator(text: &str) -> bool {
    url::Url::parse(text).is_ok_and(|u| {
        matches!(u.scheme(), "http" | "https")
            && u.host().is_some()
            && u.username().is_empty()
            && u.password().is_none()
            && u.query().is_none()
            && u.fragment().is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refresh(url: &str) -> TokenSource {
        TokenSource::Oauth(RefreshGrant {
            refresh_token: "1//refresh".into(),
            client_id: "client".into(),
            client_secret: "shh".into(),
            token_url: url.into(),
            scopes: ["a".to_string()].into(),
            resource: None,
            issued: None,
            token_endpoint_auth_method: None,
        })
    }

    #[test]
    fn a_token_source_seals_and_reads_back_and_a_secret_is_not_one() {
        let source = refresh("https://oauth2.googleapis.com/token");
        let sealed = source.seal_text();
        assert_eq!(TokenSource::from_sealed(&sealed), Some(Ok(source.clone())));
        assert_eq!(TokenSource::from_sealed("ghp_plainSecret"), None);
        assert!(matches!(
            TokenSource::from_sealed("scout-token-source:v1:{"),
            Some(Err(_))
        ));
        let shown = format!("{source:?}");
        assert!(
            !shown.contains("1//refresh") && !shown.contains("shh"),
            "{shown}"
        );
    }

    /// A session needing scopes the stored grant lacks is refused before
    /// anything is asked: a request without `scope` would get them all.
    #[tokio::test]
    async fn scopes_narrowed_to_nothing_ask_for_nothing() {
        let tokens = Tokens::new(None, Duration::from_secs(1)).unwrap();
        let source = refresh("https://oauth2.googleapis.com/token");
        let needed: BTreeSet<String> = ["b".to_string()].into();
        let request = TokenRequest {
            brand: "acme",
            connector: "searchconsole",
            source: &source,
            scopes: &needed,
            allow_private_network: false,
        };
        let (token, event) = tokens.token(&request).await;
        assert_eq!(token, Err(TokenError::NoScope));
        assert_eq!(event.outcome, "failed");
        assert_eq!(tokens.requests_made(), 0, "nothing was asked");
    }

    #[test]
    fn fields_are_checked_with_the_field_named() {
        assert_eq!(
            refresh("http://id.example.com/token")
                .validate()
                .unwrap_err()
                .field,
            "oauth.token_url"
        );
        assert!(refresh("http://127.0.0.1:9/token").validate().is_ok());
        let mut bad = refresh("https://x.example/token");
        if let TokenSource::Oauth(g) = &mut bad {
            g.scopes.insert("two words".into());
        }
        assert_eq!(bad.validate().unwrap_err().field, "oauth.scopes");
        let broker = TokenSource::Broker(BrokerConnection {
            connection_id: String::new(),
            provider_config_key: "figma".into(),
            scopes: BTreeSet::new(),
        });
        assert_eq!(broker.validate().unwrap_err().field, "broker.connection_id");
    }

    #[test]
    fn answers_are_read_as_the_rfc_and_nango_write_them() {
        let answer =
            oauth_token(br#"{"access_token":"ya29.x","token_type":"Bearer","expires_in":3599}"#)
                .unwrap();
        assert_eq!(
            (answer.token.expose(), answer.lifetime),
            ("ya29.x", Duration::from_secs(3599))
        );
        assert_eq!(answer.refresh_token, None);
        let answer =
            oauth_token(br#"{"access_token":"t","token_type":"bearer","refresh_token":"r2"}"#)
                .unwrap();
        assert_eq!(
            answer.lifetime, DEFAULT_LIFETIME,
            "no expires_in: the default lifetime"
        );
        assert_eq!(
            answer.refresh_token.as_deref(),
            Some("r2"),
            "a rotated refresh token is read"
        );
        assert!(oauth_token(br#"{"token_type":"bearer"}"#).is_err());
        assert!(oauth_token(br#"{"access_token":"t","token_type":"mac"}"#).is_err());
        assert!(oauth_token(b"<html>").is_err());
        assert!(
            oauth_token(br#"{"access_token":"a\nb"}"#).is_err(),
            "not a header value"
        );
        let at = (chrono::Utc::now() + chrono::Duration::seconds(1800)).to_rfc3339();
        let body = format!(
            r#"{{"credentials":{{"type":"OAUTH2","access_token":"figd_x","expires_at":"{at}"}}}}"#
        );
        let (t, life) = broker_token(body.as_bytes()).unwrap();
        assert_eq!(t.expose(), "figd_x");
        assert!(life <= Duration::from_secs(1800) && life >= Duration::from_secs(1790));
    }
}
