//! Who is calling the admin API, and what their role lets them do.
//!
//! One static admin token cannot say who decided an approval: whoever holds
//! it types a name. With `[oidc]`, the admin API also takes bearer tokens
//! (JWTs) from the organisation's OpenID Connect issuer, so the subject
//! recorded for a decision is one the issuer signed, and each caller gets
//! only their role's part of the API.
//!
//! A token is accepted when its signature verifies with one of the keys the
//! issuer publishes at `jwks_url`, its `iss` is the configured issuer, its
//! `aud` contains the configured audience, it has not expired (`exp` is
//! required) and is already valid (`nbf`, `iat`), within `leeway_secs` of
//! clock skew. The algorithm comes from the key, never from the token: an
//! RSA key verifies RS256/384/512 and PS256/384/512 (only its own `alg` if
//! the key names one), a P-256 key ES256, a P-384 key ES384, an Ed25519 key
//! EdDSA. `alg: none` and HMAC (`HS*`) are always refused, and shared-secret
//! (`oct`) keys in the set are ignored, so the issuer's public key can never
//! be used as an HMAC secret (the key-confusion attack).
//!
//! Keys are cached. A token naming a key id the cache lacks, or a cache
//! older than [`KEYS_MAX_AGE`], fetches the set again; one fetch runs at a
//! time and the requests waiting for it share its result, and fetches start
//! at most once per `jwks_min_refresh_secs`, so made-up key ids cannot
//! hammer the issuer. When the keys cannot be fetched and none cached
//! verifies the token, the answer is 503 (`identity_unavailable`): the
//! token may be fine, and the client may try again.
//!
//! The token itself is never logged or echoed; refusal messages are fixed
//! sentences that name the check that failed.

use super::config::{OidcConfig, OidcRoles};
use base64::Engine;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The cached keys are fetched again on the first request after this long,
/// so a key the issuer withdrew stops verifying.
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(60 * 60);
/// Longest token considered at all.
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Largest key set read from the issuer.
const MAX_JWKS_BYTES: usize = 1 << 20;
/// Longest subject recorded.
const MAX_SUBJECT_BYTES: usize = 256;
/// How long one key fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// What a caller may do on the admin API. Ordered: a later role may do
/// everything an earlier one may on the routes both have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Read-only: GET requests of the admin API.
    Viewer,
    /// Sees and decides approvals, reads the trace and sessions.
    Approver,
    /// Everything.
    Admin,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }

    /// What the role may do, for a refusal.
    fn may(self) -> &'static str {
        match self {
            Role::Viewer => "may only read (GET requests)",
            Role::Approver => {
                "may only list and decide approvals, read the trace and its export, and read sessions"
            }
            Role::Admin => "may do everything",
        }
    }
}

/// How the caller proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The static admin token (`admin_token_env`).
    AdminToken,
    /// A token of the `[oidc]` issuer.
    Oidc,
}

/// The verified caller, as the auth middleware inserts it into the
/// request's extensions for handlers to read.
///
/// A role may cover every brand (`approver`) or one (`approver:acme`). A
/// route is permitted by the highest role held anywhere ([`Principal::role`]);
/// what it touches is then checked against the role held over that
/// resource's brand ([`Principal::role_for`]), and a route that concerns
/// every brand at once (the connectors, the reviews, the export) needs a
/// role over every brand ([`Principal::every_brand`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Who, as shown and recorded: the configured subject claim
    /// (`subject_claim`, e.g. `email`), else the token's `sub`; or
    /// `admin-token`.
    pub subject: String,
    /// The highest role held over any brand.
    pub role: Role,
    pub via: Via,
    /// The role held over every brand, if any.
    pub every_brand: Option<Role>,
    /// Roles held over one brand each (beyond `every_brand`).
    pub brands: std::collections::BTreeMap<String, Role>,
    /// An auditor of every brand: may read the exact arguments a decision
    /// kept sealed (with read-only access to every brand besides).
    pub auditor: bool,
    /// The brands it audits one by one (`auditor:acme`): their sealed
    /// arguments, with read-only access to each.
    pub audited: std::collections::BTreeSet<String>,
    /// The issuer that vouched for it (`None` for the admin token).
    pub issuer: Option<String>,
    /// The token's own `sub`, when `subject` is another claim's.
    pub sub: Option<String>,
}

impl Principal {
    /// The holder of the static admin token: admin of every brand.
    pub fn admin_token() -> Principal {
        Principal {
            subject: "admin-token".to_string(),
            role: Role::Admin,
            via: Via::AdminToken,
            every_brand: Some(Role::Admin),
            brands: Default::default(),
            auditor: false,
            audited: Default::default(),
            issuer: None,
            sub: None,
        }
    }

    /// Who it is, as the audit trail records an actor: what kind of
    /// caller, the subject, the issuer that vouched for it, how it proved
    /// it, and its role.
    pub fn actor(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": match self.via { Via::AdminToken => "admin_token", Via::Oidc => "person" },
            "subject": self.subject,
            "sub": self.sub,
            "issuer": self.issuer,
            "via": match self.via { Via::AdminToken => "admin_token", Via::Oidc => "oidc" },
            "role": self.role.name(),
        })
    }

    /// Whether it may read the arguments of a decision of `brand`, kept
    /// sealed in the trace: the admin token, an admin of every brand or of
    /// `brand`, an auditor of every brand or of `brand`.
    pub fn reads_sealed_arguments(&self, brand: &str) -> bool {
        self.auditor || self.audited.contains(brand) || self.role_for(brand) == Some(Role::Admin)
    }

    /// Whether it reads the sealed arguments of every brand's decisions.
    pub fn reads_every_brands_arguments(&self) -> bool {
        self.auditor || self.every_brand == Some(Role::Admin)
    }

    /// The role held over `brand`: the higher of the every-brand role and
    /// that brand's own.
    pub fn role_for(&self, brand: &str) -> Option<Role> {
        self.every_brand.max(self.brands.get(brand).copied())
    }

    /// Whether the role held over `brand` may send `method` to `route`.
    pub fn may_in(&self, brand: &str, method: &str, route: &str) -> bool {
        self.role_for(brand)
            .is_some_and(|role| allows(role, method, route))
    }

    /// Whether it may see anything of `brand`.
    pub fn sees(&self, brand: &str) -> bool {
        self.role_for(brand).is_some()
    }

    /// Whether it holds a role over every brand (else only over some).
    pub fn covers_every_brand(&self) -> bool {
        self.every_brand.is_some()
    }

    /// The brands a brand-scoped caller's roles cover, for a refusal.
    pub fn brand_names(&self) -> String {
        self.brands
            .keys()
            .map(|b| format!("`{b}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Who is acting, and in which trace, for the length of one admin API
/// request: what every row the request writes says of its actor and
/// origin, including rows written far from the handler (a connector's
/// change, in the deployment).
#[derive(Debug, Clone)]
pub struct Acting {
    /// [`Principal::actor`] of the verified caller.
    pub actor: serde_json::Value,
    /// The trace and span of the request's W3C `traceparent` header, if it
    /// sent a well-formed one.
    pub origin: crate::trace::Origin,
}

tokio::task_local! {
    static ACTING: Acting;
}

impl Acting {
    /// Runs `request` (one admin API request's handling) as `self`.
    pub async fn during<F: std::future::Future>(self, request: F) -> F::Output {
        ACTING.scope(self, request).await
    }

    /// Who is acting in the request this task serves, if it is one.
    pub fn now() -> Option<Acting> {
        ACTING.try_with(Clone::clone).ok()
    }
}

/// The routes whose handlers check each resource's brand against
/// [`Principal::role_for`], so a role over one brand may use them; and
/// every route with a `{brand}` in its path, checked by the middleware.
/// Any other route concerns every brand and needs a role over all.
pub const BRAND_CHECKED_ROUTES: &[&str] = &[
    "/v1/health",
    "/v1/whoami",
    "/v1/approvals",
    "/v1/approvals/{id}",
    "/v1/decisions",
    "/v1/capability-requests",
    "/v1/capability-requests/{id}",
    "/v1/sessions",
    "/v1/sessions/{id}",
    "/v1/sessions/{id}/resume",
    "/v1/sessions/{id}/agent-config",
    "/v1/trace",
];

/// Whether `route` is checked brand by brand.
pub fn brand_checked(route: &str) -> bool {
    BRAND_CHECKED_ROUTES.contains(&route) || route.starts_with("/v1/brands/{brand}")
}

/// The token of an `Authorization: Bearer TOKEN` header, if there is one.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The routes (method, route pattern) an approver may use.
const APPROVER_ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/health"),
    ("GET", "/v1/whoami"),
    ("GET", "/v1/approvals"),
    ("POST", "/v1/approvals/{id}"),
    ("GET", "/v1/decisions"),
    ("GET", "/v1/trace"),
    ("GET", "/v1/trace/export"),
    ("GET", "/v1/sessions"),
    ("GET", "/v1/sessions/{id}"),
    ("POST", "/v1/sessions/{id}/resume"),
    ("GET", "/v1/capability-requests"),
    ("POST", "/v1/capability-requests/{id}"),
];

/// The routes that read by `POST` (a body too large for a query): any
/// role passes the route check, and the handler decides who may read
/// (`POST /v1/policies/test`: an admin or an auditor).
const READ_BY_POST: &[(&str, &str)] = &[("POST", "/v1/policies/test")];

fn allows(role: Role, method: &str, route: &str) -> bool {
    let method = if method == "HEAD" { "GET" } else { method };
    match role {
        Role::Admin => true,
        _ if READ_BY_POST.contains(&(method, route)) => true,
        Role::Approver => APPROVER_ROUTES.contains(&(method, route)),
        Role::Viewer => method == "GET",
    }
}

/// Whether `role` may send `method` to the route `route` (its pattern, as
/// the router matched it); the refusal names the role, what it may do and
/// which roles may do this.
pub fn permit(role: Role, method: &str, route: &str) -> Result<(), String> {
    if allows(role, method, route) {
        return Ok(());
    }
    let needed: Vec<&str> = [Role::Viewer, Role::Approver, Role::Admin]
        .into_iter()
        .filter(|r| allows(*r, method, route))
        .map(Role::name)
        .collect();
    Err(format!(
        "role `{}` {}; {method} {route} needs role {}",
        role.name(),
        role.may(),
        needed.join(" or ")
    ))
}

/// Why a token was not accepted. Every message is a fixed sentence: none
/// repeats the token or anything read from it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidToken {
    #[error("the token is malformed: {0}")]
    Malformed(&'static str),
    #[error(
        "the token's algorithm ({0}) is never accepted: only signatures by the issuer's published keys are"
    )]
    DisallowedAlgorithm(&'static str),
    #[error("the token's algorithm is not one its key signs with ({0})")]
    AlgorithmMismatch(String),
    #[error("the token's key id (`kid`) is not among the keys the issuer publishes")]
    UnknownKey,
    #[error(
        "the token names no key id (`kid`) and the issuer publishes more than one key or none without one"
    )]
    NoKeyId,
    #[error("the token's signature does not verify with the issuer's key")]
    BadSignature,
    #[error("the token has expired (`exp`)")]
    Expired,
    #[error("the token is not valid yet (`nbf` or `iat` is in the future)")]
    NotYetValid,
    #[error("the token's issuer (`iss`) is not the one this host trusts")]
    WrongIssuer,
    #[error("the token's audience (`aud`) does not include this host's")]
    WrongAudience,
    #[error("the token has no `{0}` claim")]
    MissingClaim(&'static str),
    #[error("the token's `{0}` claim is malformed")]
    BadClaim(&'static str),
}

/// Why a request with a token is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// 401: the token is not acceptable.
    #[error(transparent)]
    Invalid(#[from] InvalidToken),
    /// 503: the issuer's keys could not be fetched, and none cached verifies.
    #[error(
        "the issuer's signing keys could not be fetched from jwks_url ({0}); try again shortly"
    )]
    KeysUnavailable(String),
    /// 403: a valid token that gives no role.
    #[error(
        "the token's `{claim}` claim gives no role of this host: one of admin, approver or viewer is needed{mapped}"
    )]
    NoRole { claim: String, mapped: &'static str },
}

/// One key of the issuer's set and the algorithms it verifies.
struct SigningKey {
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

/// The issuer's keys as last fetched.
struct KeySet {
    by_id: HashMap<String, Arc<SigningKey>>,
    /// Keys published without a `kid`.
    unnamed: Vec<Arc<SigningKey>>,
    fetched_at: Instant,
    /// Counts fetches: a request that waited for a fetch sees it changed.
    generation: u64,
}

impl KeySet {
    fn find(&self, kid: Option<&str>) -> Result<Arc<SigningKey>, InvalidToken> {
        match kid {
            Some(kid) => self.by_id.get(kid).cloned().ok_or(InvalidToken::UnknownKey),
            None => match (self.unnamed.as_slice(), self.by_id.len()) {
                ([only], 0) => Ok(only.clone()),
                ([], 1) => Ok(self
                    .by_id
                    .values()
                    .next()
                    .cloned()
                    .ok_or(InvalidToken::NoKeyId)?),
                _ => Err(InvalidToken::NoKeyId),
            },
        }
    }
}

#[derive(Default)]
struct FetchState {
    last_attempt: Option<Instant>,
    /// Why the last fetch failed, if it did.
    last_error: Option<String>,
}

/// Verifies the `[oidc]` issuer's tokens.
pub struct OidcVerifier {
    config: OidcConfig,
    roles: OidcRoles,
    http: reqwest::Client,
    keys: parking_lot::RwLock<Option<Arc<KeySet>>>,
    /// Held while a fetch runs: one at a time, shared by those waiting.
    fetch: tokio::sync::Mutex<FetchState>,
    /// The issuer's discovery document once read (and when it was last
    /// tried, so an unreachable issuer is asked at most once per
    /// `jwks_min_refresh_secs`).
    discovery: tokio::sync::Mutex<DiscoveryState>,
}

/// The document once read, and the last failed attempt (when, and why).
type DiscoveryState = (Option<Arc<Discovery>>, Option<(Instant, String)>);

/// What the issuer's discovery document
/// (`ISSUER/.well-known/openid-configuration`) says that is used here.
#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    #[serde(default)]
    pub token_endpoint: Option<String>,
    #[serde(default)]
    pub jwks_uri: Option<String>,
}

/// Largest discovery document or token answer read from the issuer.
const MAX_ISSUER_ANSWER_BYTES: usize = 256 * 1024;

impl OidcVerifier {
    /// No network yet: the keys are fetched when the first token comes.
    pub fn new(config: &OidcConfig) -> Result<OidcVerifier, reqwest::Error> {
        // No redirect (one could lead from https to plain http), and the
        // same address rules as a guest's request unless the operator
        // allowed a private issuer.
        let http = crate::capabilities::net::guarded_client(config.allow_private_network)
            .timeout(FETCH_TIMEOUT)
            .build()?;
        let roles = config.roles.clone().unwrap_or_else(|| OidcRoles {
            admin: vec!["admin".into()],
            approver: vec!["approver".into()],
            viewer: vec!["viewer".into()],
            auditor: vec!["auditor".into()],
        });
        Ok(OidcVerifier {
            config: config.clone(),
            roles,
            http,
            keys: parking_lot::RwLock::new(None),
            fetch: tokio::sync::Mutex::new(FetchState::default()),
            discovery: tokio::sync::Mutex::new((None, None)),
        })
    }

    /// The configuration this verifier was made from.
    pub fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// The issuer's discovery document, read once. Its `issuer` must be
    /// the configured one exactly (OpenID Connect Discovery 1.0, 4.3) and
    /// every endpoint it names https (plain http only on loopback).
    pub async fn discovery(&self) -> Result<Arc<Discovery>, String> {
        let mut held = self.discovery.lock().await;
        if let Some(found) = &held.0 {
            return Ok(found.clone());
        }
        let min_interval = Duration::from_secs(self.config.jwks_min_refresh_secs);
        if let Some((at, why)) = &held.1
            && at.elapsed() < min_interval
        {
            return Err(why.clone());
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.config.issuer.trim_end_matches('/')
        );
        let read = async {
            let body = self
                .get_bounded(&url, MAX_ISSUER_ANSWER_BYTES, "the discovery document")
                .await?;
            let found: Discovery = serde_json::from_slice(&body)
                .map_err(|e| bounded(&format!("the discovery document cannot be read: {e}")))?;
            if found.issuer != self.config.issuer {
                return Err(format!(
                    "the discovery document names issuer `{}`, not the configured `{}`",
                    bounded(&found.issuer),
                    self.config.issuer
                ));
            }
            for (key, endpoint) in [
                ("authorization_endpoint", &found.authorization_endpoint),
                ("token_endpoint", &found.token_endpoint),
                ("jwks_uri", &found.jwks_uri),
            ] {
                if let Some(endpoint) = endpoint {
                    crate::config::check_identity_url(key, endpoint)?;
                }
            }
            Ok(Arc::new(found))
        };
        match read.await {
            Ok(found) => {
                *held = (Some(found.clone()), None);
                Ok(found)
            }
            Err(why) => {
                tracing::warn!(issuer = %self.config.issuer, error = %why, "cannot read the issuer's discovery document");
                held.1 = Some((Instant::now(), why.clone()));
                Err(why)
            }
        }
    }

    /// Where the keys are: `jwks_url`, else the discovery document's `jwks_uri`.
    async fn jwks_url(&self) -> Result<String, String> {
        if let Some(url) = &self.config.jwks_url {
            return Ok(url.clone());
        }
        self.discovery().await?.jwks_uri.clone().ok_or_else(|| {
            "the discovery document names no jwks_uri; set jwks_url in [oidc]".to_string()
        })
    }

    /// Redeems an authorization code, or a refresh token, at the issuer's
    /// token endpoint for the console (a public client: no secret). Only
    /// the two grants, only to the endpoint the discovery document names;
    /// the answer is the issuer's JSON, or why there is none.
    pub async fn exchange(&self, form: &[(&str, &str)]) -> Result<Value, ExchangeRefused> {
        let endpoint = self
            .discovery()
            .await
            .map_err(ExchangeRefused::Unavailable)?
            .token_endpoint
            .clone()
            .ok_or_else(|| {
                ExchangeRefused::Unavailable(
                    "the discovery document names no token_endpoint".into(),
                )
            })?;
        self.guard(&endpoint)
            .map_err(ExchangeRefused::Unavailable)?;
        let response = self
            .http
            .post(&endpoint)
            .header(reqwest::header::ACCEPT, "application/json")
            .form(form)
            .send()
            .await
            .map_err(|e| ExchangeRefused::Unavailable(self.fetch_error(&e)))?;
        let status = response.status();
        let body = read_bounded(response, MAX_ISSUER_ANSWER_BYTES, "the token answer")
            .await
            .map_err(ExchangeRefused::Unavailable)?;
        let answer: Value = serde_json::from_slice(&body).map_err(|_| {
            ExchangeRefused::Unavailable(format!(
                "the token endpoint answered HTTP {} without JSON",
                status.as_u16()
            ))
        })?;
        if status.is_success() {
            return Ok(answer);
        }
        let text = |key: &str| answer.get(key).and_then(Value::as_str).map(bounded);
        Err(ExchangeRefused::Refused(format!(
            "{}{}",
            text("error").unwrap_or_else(|| format!("HTTP {}", status.as_u16())),
            text("error_description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        )))
    }

    /// Refuses a private address unless the operator allowed one.
    fn guard(&self, url: &str) -> Result<(), String> {
        if !self.config.allow_private_network
            && let Ok(parsed) = url::Url::parse(url)
            && let Some(why) = crate::capabilities::net::literal_denied(&parsed)
        {
            return Err(format!(
                "the issuer's address is refused ({why}); set `allow_private_network = true` in [oidc] for an issuer on a private network"
            ));
        }
        Ok(())
    }

    fn fetch_error(&self, e: &reqwest::Error) -> String {
        match crate::capabilities::net::refused_by_guard(e) {
            Some(why) => format!(
                "the issuer's address is refused ({why}); set `allow_private_network = true` in [oidc] for an issuer on a private network"
            ),
            None => bounded(&e.to_string()),
        }
    }

    /// One GET of the issuer, its body capped at `max` bytes.
    async fn get_bounded(&self, url: &str, max: usize, what: &str) -> Result<Vec<u8>, String> {
        self.guard(url)?;
        let response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| self.fetch_error(&e.without_url()))?;
        if !response.status().is_success() {
            return Err(format!(
                "the issuer answered HTTP {} for {what}",
                response.status().as_u16()
            ));
        }
        read_bounded(response, max, what).await
    }

    /// Whether `token` looks like a JWT at all (three dot-separated parts),
    /// so that anything else is answered as a wrong admin token.
    pub fn looks_like_jwt(token: &str) -> bool {
        token.bytes().filter(|b| *b == b'.').count() == 2
    }

    /// The caller `token` proves, or why it proves nothing.
    pub async fn verify(&self, token: &str) -> Result<Principal, Refusal> {
        let header = read_header(token)?;
        let key = self.key_for(header.kid.as_deref()).await?;
        if !key.algorithms.contains(&header.algorithm) {
            let names: Vec<String> = key.algorithms.iter().map(|a| format!("{a:?}")).collect();
            return Err(InvalidToken::AlgorithmMismatch(names.join(", ")).into());
        }
        let mut validation = Validation::new(header.algorithm);
        validation.leeway = self.config.leeway_secs;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = true;
        validation.set_issuer(&[self.config.issuer.as_str()]);
        validation.set_audience(&[self.config.audience.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| invalid_from(e.kind()))?
            .claims;
        // The library also takes an array `iss` (any member matching) and
        // any JSON in an `aud` array: an issuer is one string, exactly the
        // configured one; an audience a string or an array of strings.
        match claims.get("iss") {
            Some(Value::String(iss)) if *iss == self.config.issuer => {}
            Some(Value::String(_)) => return Err(InvalidToken::WrongIssuer.into()),
            Some(_) => return Err(InvalidToken::BadClaim("iss").into()),
            None => return Err(InvalidToken::MissingClaim("iss").into()),
        }
        let audience = &self.config.audience;
        match claims.get("aud") {
            Some(Value::String(aud)) if aud == audience => {}
            Some(Value::Array(auds)) if !auds.is_empty() && auds.iter().all(Value::is_string) => {
                if !auds.iter().any(|a| a.as_str() == Some(audience.as_str())) {
                    return Err(InvalidToken::WrongAudience.into());
                }
            }
            Some(Value::String(_)) => return Err(InvalidToken::WrongAudience.into()),
            Some(_) => return Err(InvalidToken::BadClaim("aud").into()),
            None => return Err(InvalidToken::MissingClaim("aud").into()),
        }
        if let Some(iat) = claims.get("iat") {
            let iat = iat.as_f64().ok_or(InvalidToken::BadClaim("iat"))?;
            let now = jsonwebtoken::get_current_timestamp() as f64;
            if iat > now + self.config.leeway_secs as f64 {
                return Err(InvalidToken::NotYetValid.into());
            }
        }
        let usable = |s: &String| {
            !s.is_empty() && s.len() <= MAX_SUBJECT_BYTES && !s.chars().any(char::is_control)
        };
        let sub = match claims.get("sub") {
            Some(Value::String(s)) if usable(s) => s.clone(),
            Some(_) => return Err(InvalidToken::BadClaim("sub").into()),
            None => return Err(InvalidToken::MissingClaim("sub").into()),
        };
        // `sub` may be an opaque or pairwise id: a person is shown and
        // recorded by the claim the operator names, when the token has it.
        let subject = self
            .config
            .subject_claim
            .as_deref()
            .and_then(|claim| claims.get(claim))
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(usable)
            .unwrap_or_else(|| sub.clone());
        let (mut every_brand, mut brands) = self.roles_of(claims.get(&self.config.role_claim));
        // An auditor reads what it audits (every brand, or some), and the
        // arguments their decisions sealed.
        let (auditor, audited) = self.audits(claims.get(&self.config.role_claim));
        if auditor {
            every_brand = every_brand.max(Some(Role::Viewer));
        }
        for brand in &audited {
            if every_brand.is_none() {
                brands.entry(brand.clone()).or_insert(Role::Viewer);
            }
        }
        let Some(role) = every_brand.max(brands.values().copied().max()) else {
            return Err(Refusal::NoRole {
                claim: self.config.role_claim.clone(),
                mapped: if self.config.roles.is_some() || !self.config.brand_roles.is_empty() {
                    ", as [oidc.roles] and [oidc.brand_roles] map its values"
                } else {
                    " (or ROLE:BRAND, e.g. approver:acme)"
                },
            });
        };
        Ok(Principal {
            subject,
            role,
            via: Via::Oidc,
            every_brand,
            brands,
            auditor,
            audited,
            issuer: Some(self.config.issuer.clone()),
            sub: Some(sub),
        })
    }

    /// What the claim makes its holder audit: every brand (`auditor`, or a
    /// value `[oidc.roles] auditor` lists), and the brands named one by one
    /// (`auditor:acme` without `[oidc.roles]`, or a value
    /// `[oidc.brand_roles.BRAND] auditor` lists).
    fn audits(&self, claim: Option<&Value>) -> (bool, std::collections::BTreeSet<String>) {
        let values = claim_values(claim);
        let every = values
            .iter()
            .any(|v| self.roles.auditor.iter().any(|a| a == v));
        let mut brands = std::collections::BTreeSet::new();
        for value in &values {
            if self.config.roles.is_none()
                && let Some((role, brand)) = value.split_once(':')
                && self.roles.auditor.iter().any(|a| a == role)
                && crate::config::check_brand_name(brand).is_ok()
            {
                brands.insert(brand.to_string());
            }
            for (brand, roles) in &self.config.brand_roles {
                if roles.auditor.iter().any(|a| a == value) {
                    brands.insert(brand.clone());
                }
            }
        }
        if every {
            brands.clear();
        }
        (every, brands)
    }

    /// The roles the claim's value (a string or an array of strings)
    /// gives: the highest over every brand, and the highest over each
    /// brand it names. Without `[oidc.roles]`, the values are the role
    /// names themselves, `approver` for every brand and `approver:acme` for
    /// one; with it, only the values it lists (every brand) and those
    /// `[oidc.brand_roles.BRAND]` lists (that brand).
    fn roles_of(
        &self,
        claim: Option<&Value>,
    ) -> (Option<Role>, std::collections::BTreeMap<String, Role>) {
        let mut brands = std::collections::BTreeMap::new();
        let values = claim_values(claim);
        let highest = |roles: &OidcRoles, value: &str| -> Option<Role> {
            [
                (Role::Admin, &roles.admin),
                (Role::Approver, &roles.approver),
                (Role::Viewer, &roles.viewer),
            ]
            .into_iter()
            .find(|(_, listed)| listed.iter().any(|l| l == value))
            .map(|(role, _)| role)
        };
        let mut every_brand: Option<Role> = None;
        for value in values {
            every_brand = every_brand.max(highest(&self.roles, value));
            if self.config.roles.is_none()
                && let Some((role, brand)) = value.split_once(':')
                && let Some(role) = highest(&self.roles, role)
                && crate::config::check_brand_name(brand).is_ok()
            {
                let held = brands.entry(brand.to_string()).or_insert(role);
                *held = (*held).max(role);
            }
            for (brand, roles) in &self.config.brand_roles {
                if let Some(role) = highest(roles, value) {
                    let held = brands.entry(brand.clone()).or_insert(role);
                    *held = (*held).max(role);
                }
            }
        }
        // A brand's role no higher than the every-brand one adds nothing.
        brands.retain(|_, role| every_brand.is_none_or(|every| *role > every));
        (every_brand, brands)
    }

    /// The key `kid` names, from the cache, or fetched when the cache lacks
    /// it or is old.
    async fn key_for(&self, kid: Option<&str>) -> Result<Arc<SigningKey>, Refusal> {
        let cached = self.keys.read().clone();
        if let Some(keys) = &cached
            && keys.fetched_at.elapsed() < KEYS_MAX_AGE
            && let Ok(key) = keys.find(kid)
        {
            return Ok(key);
        }
        match self.refresh(cached.as_ref().map(|k| k.generation)).await {
            Ok(keys) => Ok(keys.find(kid)?),
            // The issuer is unreachable: a key still cached serves.
            Err(why) => match cached.as_ref().map(|k| k.find(kid)) {
                Some(Ok(key)) => Ok(key),
                _ => Err(Refusal::KeysUnavailable(why)),
            },
        }
    }

    /// Fetches the key set, unless another request fetched it while this
    /// one waited (`seen` is the generation it had) or the last fetch was
    /// under `jwks_min_refresh_secs` ago (then the keys as they are, or why
    /// that fetch failed).
    async fn refresh(&self, seen: Option<u64>) -> Result<Arc<KeySet>, String> {
        let mut state = self.fetch.lock().await;
        let current = self.keys.read().clone();
        if let Some(keys) = &current
            && Some(keys.generation) != seen
        {
            return Ok(keys.clone());
        }
        let min_interval = Duration::from_secs(self.config.jwks_min_refresh_secs);
        if let Some(at) = state.last_attempt
            && at.elapsed() < min_interval
        {
            return match (&state.last_error, current) {
                (None, Some(keys)) => Ok(keys),
                (Some(why), _) => Err(why.clone()),
                (None, None) => Err("no key set fetched yet".into()),
            };
        }
        state.last_attempt = Some(Instant::now());
        match self.fetch_keys().await {
            Ok((by_id, unnamed)) => {
                let keys = Arc::new(KeySet {
                    by_id,
                    unnamed,
                    fetched_at: Instant::now(),
                    generation: current.map_or(1, |k| k.generation + 1),
                });
                *self.keys.write() = Some(keys.clone());
                state.last_error = None;
                Ok(keys)
            }
            Err(why) => {
                tracing::warn!(issuer = %self.config.issuer, error = %why, "cannot fetch the issuer's keys");
                state.last_error = Some(why.clone());
                Err(why)
            }
        }
    }

    /// One GET of the key set: the usable signing keys, by key id and without.
    async fn fetch_keys(&self) -> Result<KeysRead, String> {
        let url = self.jwks_url().await?;
        let body = self
            .get_bounded(&url, MAX_JWKS_BYTES, "the key set")
            .await
            .map_err(|why| why.replace("the issuer's address", "jwks_url's address"))?;
        let document: JwksDocument = serde_json::from_slice(&body)
            .map_err(|e| bounded(&format!("the key set is not a JWK set: {e}")))?;
        let mut by_id = HashMap::new();
        let mut unnamed = Vec::new();
        for entry in document.keys {
            let Ok(jwk) = serde_json::from_value::<Jwk>(entry) else {
                tracing::debug!("a key of the issuer's set cannot be read; skipped");
                continue;
            };
            match signing_key(&jwk) {
                Ok(key) => match jwk.common.key_id {
                    Some(kid) => {
                        by_id.insert(kid, Arc::new(key));
                    }
                    None => unnamed.push(Arc::new(key)),
                },
                Err(why) => {
                    tracing::debug!(kid = ?jwk.common.key_id, why, "a key of the issuer's set is not used")
                }
            }
        }
        if by_id.is_empty() && unnamed.is_empty() {
            return Err("the key set holds no usable signing key".into());
        }
        Ok((by_id, unnamed))
    }
}

type KeysRead = (HashMap<String, Arc<SigningKey>>, Vec<Arc<SigningKey>>);

/// Why the console's code or refresh token was not exchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExchangeRefused {
    /// The issuer said no (`invalid_grant: ...`): sign in again.
    Refused(String),
    /// The issuer could not be asked or answered nothing usable.
    Unavailable(String),
}

/// A response's body, refused beyond `max` bytes.
async fn read_bounded(
    mut response: reqwest::Response,
    max: usize,
    what: &str,
) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| bounded(&e.without_url().to_string()))?
    {
        if body.len() + chunk.len() > max {
            return Err(format!("{what} is larger than {max} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[derive(Deserialize)]
struct JwksDocument {
    keys: Vec<Value>,
}

fn bounded(text: &str) -> String {
    let mut out: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
    if text.chars().count() > 200 {
        out.push('…');
    }
    out
}

const RSA_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// The key a JWK describes and the algorithms it verifies, or why it is
/// not used (an HMAC secret, an encryption key, an unknown curve).
fn signing_key(jwk: &Jwk) -> Result<SigningKey, &'static str> {
    if let Some(usage) = &jwk.common.public_key_use
        && *usage != PublicKeyUse::Signature
    {
        return Err("not a signature key (`use`)");
    }
    let by_type: &[Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => RSA_ALGORITHMS,
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => &[Algorithm::ES256],
            EllipticCurve::P384 => &[Algorithm::ES384],
            _ => return Err("an unsupported curve"),
        },
        AlgorithmParameters::OctetKeyPair(p) => match p.curve {
            EllipticCurve::Ed25519 => &[Algorithm::EdDSA],
            _ => return Err("an unsupported curve"),
        },
        AlgorithmParameters::OctetKey(_) => return Err("a shared secret, never used"),
        _ => return Err("an unsupported key type"),
    };
    let algorithms = match jwk.common.key_algorithm {
        None => by_type.to_vec(),
        Some(named) => match Algorithm::try_from(named) {
            Ok(a) if by_type.contains(&a) => vec![a],
            _ => return Err("its `alg` does not fit its key type"),
        },
    };
    let key = DecodingKey::from_jwk(jwk).map_err(|_| "its parameters are not a valid key")?;
    Ok(SigningKey { key, algorithms })
}

/// What is read of a token's header before any key is looked up.
#[derive(Debug, PartialEq)]
struct TokenHeader {
    algorithm: Algorithm,
    kid: Option<String>,
}

#[derive(Deserialize)]
struct RawHeader {
    #[serde(default)]
    alg: Option<Value>,
    #[serde(default)]
    kid: Option<Value>,
}

/// The token's algorithm and key id; refuses `none`, HMAC and anything
/// that is not a signed JWT before any key is looked up or fetched.
fn read_header(token: &str) -> Result<TokenHeader, InvalidToken> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(InvalidToken::Malformed("it is too long"));
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() == 5 {
        return Err(InvalidToken::Malformed(
            "an encrypted token (JWE) is not accepted",
        ));
    }
    let [header, _, _] = parts.as_slice() else {
        return Err(InvalidToken::Malformed(
            "a JWT is three base64url parts separated by dots",
        ));
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| InvalidToken::Malformed("its header is not base64url"))?;
    let raw: RawHeader = serde_json::from_slice(&bytes)
        .map_err(|_| InvalidToken::Malformed("its header is not a JSON object"))?;
    let alg = match raw.alg {
        Some(Value::String(alg)) => alg,
        Some(_) => {
            return Err(InvalidToken::Malformed(
                "its header's `alg` is not a string",
            ));
        }
        None => return Err(InvalidToken::Malformed("its header has no `alg`")),
    };
    let algorithm = match alg.as_str() {
        "RS256" => Algorithm::RS256,
        "RS384" => Algorithm::RS384,
        "RS512" => Algorithm::RS512,
        "PS256" => Algorithm::PS256,
        "PS384" => Algorithm::PS384,
        "PS512" => Algorithm::PS512,
        "ES256" => Algorithm::ES256,
        "ES384" => Algorithm::ES384,
        "EdDSA" => Algorithm::EdDSA,
        other if other.eq_ignore_ascii_case("none") => {
            return Err(InvalidToken::DisallowedAlgorithm("`none`"));
        }
        other if other.len() >= 2 && other[..2].eq_ignore_ascii_case("HS") => {
            return Err(InvalidToken::DisallowedAlgorithm("HMAC"));
        }
        _ => return Err(InvalidToken::DisallowedAlgorithm("an unsupported one")),
    };
    let kid = match raw.kid {
        None | Some(Value::Null) => None,
        Some(Value::String(kid)) if kid.len() <= 256 => Some(kid),
        Some(_) => {
            return Err(InvalidToken::Malformed(
                "its header's `kid` is not a short string",
            ));
        }
    };
    Ok(TokenHeader { algorithm, kid })
}

/// The strings a role claim holds: one, or each of an array's (anything
/// else holds none).
fn claim_values(claim: Option<&Value>) -> Vec<&str> {
    match claim {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The refusal a failed `jsonwebtoken::decode` means.
fn invalid_from(kind: &jsonwebtoken::errors::ErrorKind) -> InvalidToken {
    use jsonwebtoken::errors::ErrorKind as E;
    match kind {
        E::ExpiredSignature => InvalidToken::Expired,
        E::ImmatureSignature => InvalidToken::NotYetValid,
        E::InvalidIssuer => InvalidToken::WrongIssuer,
        E::InvalidAudience => InvalidToken::WrongAudience,
        E::MissingRequiredClaim(claim) => InvalidToken::MissingClaim(claim_name(claim)),
        E::InvalidClaimFormat(claim) => InvalidToken::BadClaim(claim_name(claim)),
        E::InvalidAlgorithm | E::InvalidAlgorithmName | E::UnsupportedAlgorithm => {
            InvalidToken::DisallowedAlgorithm("one its key does not sign with")
        }
        E::InvalidToken | E::Base64(_) | E::Json(_) | E::Utf8(_) => {
            InvalidToken::Malformed("it cannot be decoded as a signed JWT")
        }
        _ => InvalidToken::BadSignature,
    }
}

/// The registered claim `name` as a fixed string (the library names only these).
fn claim_name(name: &str) -> &'static str {
    match name {
        "exp" => "exp",
        "nbf" => "nbf",
        "iss" => "iss",
        "aud" => "aud",
        "sub" => "sub",
        _ => "registered",
    }
}

#[cfg(test)]
mod tests;
