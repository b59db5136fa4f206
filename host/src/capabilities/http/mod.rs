//! The `http` capability: a client bound to one destination origin.
//!
//! The guest supplies method, path and query, headers and body. This module
//! refuses paths that could change the authority or escape the origin's path
//! prefix, drops headers that carry authority or credentials, injects the
//! credential itself, negotiates and decodes content codings itself, never
//! follows redirects, ignores proxy variables, sends no Referer, bounds time
//! and response size, checks every resolved address against the deny list,
//! and scrubs the secret, in every encoded form, from everything it hands back.

//!
//! Split by concern: [`config`] (what an operator configures), `guard`
//! (a guest request checked and built, before anything is sent),
//! `transport` (live, recorded or replayed sending, the address guard at
//! resolution), and `host` (the WIT interface over a call's handles).

mod config;
mod guard;
mod host;
mod transport;

pub use super::bindings::http::{HttpError, Method, Request, Response};
use crate::capabilities::net::GuardedResolver;
use crate::capabilities::net::denied_reason;
pub(crate) use crate::capabilities::path::validate_path;
use crate::capabilities::replay::{Recorder, Replay};
pub use crate::capabilities::scrub::REDACTED;
use crate::capabilities::scrub::Scrubber;
use crate::error::ConfigError;
use base64::Engine as _;
pub use config::{CredentialConfig, CredentialScheme, HttpConfig, HttpMode, SecretSource};
pub use guard::carries_authority;
pub(crate) use host::HttpCtx;
pub use host::{ExchangeServer, HttpExchange};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::net::IpAddr;
use std::sync::Arc;
use url::Url;

struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

#[derive(Debug)]
struct Credential {
    scheme: CredentialScheme,
    secret: Secret,
}

/// A configured HTTP destination; shared by every call that is granted it.
pub struct HttpCapability {
    origin: Url,
    prefix: String,
    /// Where requests go: the network (with or without a recorder), or
    /// fixtures only, with no client at all.
    backend: Backend,
    credential: Option<Credential>,
    /// Finds the secret in every form it could come back in.
    scrubber: Scrubber,
    max_response_bytes: u64,
    max_request_bytes: usize,
    max_header_bytes: usize,
    /// The destination name fixtures and recordings give it.
    destination: Option<String>,
    /// What the host puts in every request, in order, computed once here:
    /// the negotiated encodings, the deployment's secret headers, the
    /// credential (the last two marked sensitive).
    injected: Vec<(HeaderName, HeaderValue)>,
    /// Names a guest may not send besides [`carries_authority`]: the
    /// credential's header, the secret headers, the operator's list.
    withheld: Vec<HeaderName>,
    /// How to get a handle with a fresh credential after a 401.
    renewal: Option<Arc<dyn Renewal>>,
    /// The names of the headers the host owns that the guest set (and the
    /// host dropped), for the author (`call`, `test`): a few names at most,
    /// from the fixed lists above.
    dropped_headers: parking_lot::Mutex<std::collections::BTreeSet<String>>,
}

/// A credential the host can renew when an upstream refuses it (401): the
/// host obtained it (OAuth, a broker) and can obtain another.
#[async_trait::async_trait]
pub trait Renewal: Send + Sync {
    /// A handle like the one refused, with a fresh credential; or `None`.
    /// `event` is what the trace records of it (never a token).
    async fn renewed(&self) -> Renewed;
}

/// What a guest is told when the credential the host obtained could not
/// be obtained or renewed (the one wording, [`crate::credentials::TokenError::REASON`]).
pub const CREDENTIAL_NOT_REFRESHED: &str = "credential could not be refreshed";

/// What [`Renewal::renewed`] gives.
pub struct Renewed {
    pub http: Option<Arc<HttpCapability>>,
    pub event: serde_json::Value,
}

enum Backend {
    Live(reqwest::Client),
    Record(reqwest::Client, Arc<Recorder>),
    Replay(Arc<Replay>),
}

/// A guest request checked and made ready to send: what would go on the
/// wire. It carries the credential, so its `Debug` hides headers and query.
pub struct PreparedRequest {
    method: reqwest::Method,
    url: Url,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl PreparedRequest {
    /// The method.
    pub fn method(&self) -> &reqwest::Method {
        &self.method
    }
    /// The full URL (the credential's query parameter included, if any).
    pub fn url(&self) -> &Url {
        &self.url
    }
    /// The headers sent (the credential included).
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
    /// The body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

impl std::fmt::Debug for PreparedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedRequest")
            .field("method", &self.method)
            .field("path", &self.url.path())
            .field("headers", &self.headers.len())
            .field("body", &self.body.len())
            .finish()
    }
}

impl std::fmt::Debug for HttpCapability {
    // By hand: the scrub forms are the secret itself.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpCapability")
            .field("origin", &self.origin.as_str())
            .field("credential", &self.credential)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

pub use super::handles::ClientHandle;

impl HttpCapability {
    /// Validates the configuration, resolves the secret and builds the client.
    pub fn new(config: HttpConfig) -> Result<Arc<HttpCapability>, ConfigError> {
        let origin_err = |reason: &str| ConfigError::Origin {
            origin: config.origin.clone(),
            reason: reason.to_string(),
        };
        let origin = Url::parse(&config.origin).map_err(|e| origin_err(&e.to_string()))?;
        if !matches!(origin.scheme(), "http" | "https") {
            return Err(origin_err("scheme must be http or https"));
        }
        if !origin.username().is_empty() || origin.password().is_some() {
            return Err(origin_err(
                "credentials in the URL are not allowed; configure a credential",
            ));
        }
        if origin.query().is_some() || origin.fragment().is_some() {
            return Err(origin_err("an origin has no query or fragment"));
        }
        let host = origin.host().ok_or_else(|| origin_err("no host"))?;
        let literal_ip: Option<IpAddr> = match host {
            url::Host::Ipv4(ip) => Some(ip.into()),
            url::Host::Ipv6(ip) => Some(ip.into()),
            url::Host::Domain(_) => None,
        };
        if let Some(ip) = literal_ip
            && let Some(reason) = denied_reason(ip)
            && !config.allow_private_network
        {
            return Err(origin_err(&format!(
                "{ip} is a {reason}; the operator must allow private-network origins explicitly (`--allow-private-network` for `scout-host call`, `allow_private_network = true` for the connector in serve's config)"
            )));
        }
        let prefix = origin.path().trim_end_matches('/').to_string();
        validate_path(&format!("{prefix}/"))
            .map_err(|e| origin_err(&format!("path prefix: {e}")))?;

        let credential = match &config.credential {
            None => None,
            Some(c) => {
                let secret = match &c.secret {
                    SecretSource::Value(v) => v.clone(),
                    SecretSource::Env(name) => std::env::var(name).map_err(|_| {
                        ConfigError::Credential(format!(
                            "environment variable `{name}` is not set or not UTF-8"
                        ))
                    })?,
                };
                if secret.is_empty() {
                    return Err(ConfigError::Credential("the secret is empty".to_string()));
                }
                if let CredentialScheme::Header { name } = &c.scheme {
                    HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        ConfigError::Credential(format!("`{name}` is not a valid header name"))
                    })?;
                }
                HeaderValue::from_str(&secret).map_err(|_| {
                    ConfigError::Credential(
                        "the secret has characters a header cannot carry".to_string(),
                    )
                })?;
                Some(Credential {
                    scheme: c.scheme.clone(),
                    secret: Secret(secret),
                })
            }
        };
        let mut scrubber = credential.as_ref().map(scrubber_of).unwrap_or_default();
        let mut secret_headers = Vec::new();
        for (name, value) in &config.secret_headers {
            let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                ConfigError::Credential(format!(
                    "`{}` is not a valid header name",
                    name.escape_debug()
                ))
            })?;
            if value.is_empty() || HeaderValue::from_str(value).is_err() {
                return Err(ConfigError::Credential(format!(
                    "the value of secret header `{parsed}` is empty or not a header value"
                )));
            }
            scrubber.add(value);
            secret_headers.push((parsed, value.clone()));
        }
        for secret in &config.scrub_also {
            if !secret.is_empty() {
                scrubber.add(secret);
            }
        }
        let mut strip_headers = Vec::new();
        for name in &config.strip_headers {
            let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                ConfigError::Credential(format!(
                    "`{}` is not a valid header name to strip",
                    name.escape_debug()
                ))
            })?;
            strip_headers.push(parsed);
        }

        let live_client = || {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .referer(false)
                // The host decodes content codings itself (see `encoding`), so
                // that every coding is undone before the scrub, whatever a
                // guest or an upstream tries.
                .no_gzip()
                .no_brotli()
                .no_deflate()
                .no_zstd()
                .connect_timeout(config.connect_timeout)
                .read_timeout(config.read_timeout)
                .timeout(config.total_timeout)
                .dns_resolver(Arc::new(GuardedResolver {
                    allow_private_network: config.allow_private_network,
                }))
                .https_only(origin.scheme() == "https")
                .build()
                .map_err(ConfigError::Client)
        };
        // Replay builds no client: no resolver, no socket, nothing to send with.
        let backend = match &config.mode {
            HttpMode::Live => Backend::Live(live_client()?),
            HttpMode::Record(recorder) => Backend::Record(live_client()?, recorder.clone()),
            HttpMode::Replay(replay) => Backend::Replay(replay.clone()),
        };

        let (injected, withheld) =
            guard::injected_headers(credential.as_ref(), &secret_headers, &strip_headers);
        Ok(Arc::new(HttpCapability {
            origin,
            prefix,
            backend,
            credential,
            scrubber,
            max_response_bytes: config.max_response_bytes,
            max_request_bytes: config.max_request_bytes,
            max_header_bytes: config.max_request_header_bytes,
            destination: config.destination.clone(),
            injected,
            withheld,
            renewal: config.renewal.clone(),
            dropped_headers: Default::default(),
        }))
    }

    /// How to renew this handle's credential after a 401, if it can be.
    pub fn renewal(&self) -> Option<&Arc<dyn Renewal>> {
        self.renewal.as_ref()
    }

    /// The configured origin, as the operator wrote it (no secret in it).
    pub fn origin(&self) -> &Url {
        &self.origin
    }

    /// The headers the host owns (credentials, framing, routing) that the
    /// guest set on a request of this handle, each dropped: a connector's
    /// author is told (`call`, `test`), the guest never is.
    pub fn dropped_headers(&self) -> Vec<String> {
        self.dropped_headers.lock().iter().cloned().collect()
    }

    /// The fixtures this capability replays, in replay mode.
    pub fn replay(&self) -> Option<&Arc<Replay>> {
        match &self.backend {
            Backend::Replay(replay) => Some(replay),
            _ => None,
        }
    }

    /// The recorder this capability appends to, in record mode.
    pub fn recorder(&self) -> Option<&Arc<Recorder>> {
        match &self.backend {
            Backend::Record(_, recorder) => Some(recorder),
            _ => None,
        }
    }

    /// The secret scrubber of this destination.
    pub(crate) fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }

    /// Sends one guest request. Every refusal happens before any byte is
    /// sent. In replay mode the checks are the same, and the answer comes
    /// from the fixtures (capped and scrubbed like a live one).
    pub async fn send(&self, req: Request) -> Result<Response, HttpError> {
        let prepared = self.prepare(&req)?;
        self.dispatch(req, prepared).await
    }

    /// [`HttpCapability::send`] for a call of `tool`, whose declared
    /// `routes` the request must match (DESIGN D13). The match comes after
    /// the path rules of [`HttpCapability::prepare`], so a template
    /// parameter only ever matches a plain segment, and before anything is
    /// sent.
    ///
    /// `destination` is the name this capability is reached under (`None`
    /// for the connector's own origin). A route that carries a GraphQL body
    /// is parsed: a `(graphql-query)` route sends only queries, a `(graphql)`
    /// route a mutation only when `mutations_approved` (the call's gate
    /// decided it as one and it passed), and neither a subscription; a route
    /// that names its root fields, one operation selecting only those.
    pub async fn send_for_tool(
        &self,
        req: Request,
        tool: &str,
        routes: &super::routes::RouteSet,
        destination: Option<&str>,
        mutations_approved: bool,
    ) -> Result<Response, HttpError> {
        let matched = routes.find(destination, req.method, &req.path);
        self.send_matched(
            req,
            tool,
            routes,
            destination,
            matched.as_ref(),
            mutations_approved,
            &mut None,
        )
        .await
    }

    /// [`HttpCapability::send_for_tool`] with the request's route already
    /// matched (once per request: the trace names the same match); a GraphQL
    /// body's operations, as read to decide, are left in `graphql_read`.
    #[expect(
        clippy::too_many_arguments,
        reason = "one request's already-decided facts, each from a different caller's state; a struct would only rename them"
    )]
    async fn send_matched(
        &self,
        req: Request,
        tool: &str,
        routes: &super::routes::RouteSet,
        destination: Option<&str>,
        matched: Option<&super::routes::Matched>,
        mutations_approved: bool,
        graphql_read: &mut Option<Vec<super::graphql::Operation>>,
    ) -> Result<Response, HttpError> {
        let encoded = matched
            .as_ref()
            .map(|m| m.encoded.as_slice())
            .unwrap_or_default();
        let prepared = self.prepare_with(&req, encoded)?;
        let Some(matched) = matched else {
            let to = destination
                .map(|d| format!(" to `{d}`"))
                .unwrap_or_default();
            return Err(HttpError::Denied(format!(
                "route not declared: tool `{tool}` declares {}, not {} {}{to}",
                routes.describe_for(destination),
                super::routes::method_name(req.method),
                self.scrub_text(&req.path)
            )));
        };
        if let Some(rule) = matched.graphql {
            let document = super::graphql::request_document(
                &req.query,
                &req.headers,
                req.body.as_deref().unwrap_or_default(),
            )
            .map_err(|e| HttpError::Denied(format!("tool `{tool}`: {e}")))?;
            *graphql_read = Some(document.clone());
            // A route that names its root fields carries one operation of them.
            if let Some(why) = super::graphql::outside_fields(&document, &matched.graphql_fields) {
                return Err(HttpError::Denied(format!("tool `{tool}`: {why}")));
            }
            let ops = super::graphql::count(&document);
            let refused = match rule {
                _ if ops.subscriptions > 0 => Some("a GraphQL subscription is never sent"),
                scout_manifest::GraphqlBody::QueriesOnly if ops.mutations > 0 => {
                    Some("this route sends GraphQL queries only, and the body holds a mutation")
                }
                scout_manifest::GraphqlBody::Gated if ops.mutations > 0 && !mutations_approved => {
                    Some(
                        "the body holds a GraphQL mutation, and this call was decided and gated as a query",
                    )
                }
                _ => None,
            };
            if let Some(why) = refused {
                return Err(HttpError::Denied(format!("tool `{tool}`: {why}")));
            }
        }
        self.dispatch(req, prepared).await
    }

    /// Replaces every form of the secret in `bytes` with `[REDACTED]`.
    pub fn scrub(&self, bytes: &[u8]) -> Vec<u8> {
        self.scrubber.scrub(bytes)
    }

    /// [`Self::scrub`] for text.
    pub(crate) fn scrub_text(&self, text: &str) -> String {
        self.scrubber.scrub_text(text)
    }
}

fn scrubber_of(cred: &Credential) -> Scrubber {
    let secret = cred.secret.0.as_str();
    let also = match &cred.scheme {
        CredentialScheme::Basic { username } => {
            vec![base64::engine::general_purpose::STANDARD.encode(format!("{username}:{secret}"))]
        }
        _ => Vec::new(),
    };
    Scrubber::new(secret, also)
}
