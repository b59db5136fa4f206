//! The `http` capability: a client bound to one destination origin.
//!
//! The guest supplies method, path and query, headers and body. This module
//! refuses paths that could change the authority or escape the origin's path
//! prefix, drops headers that carry authority or credentials, injects the
//! credential itself, negotiates and decodes content codings itself, never
//! follows redirects, ignores proxy variables, sends no Referer, bounds time
//! and response size, checks every resolved address against the deny list,
//! and scrubs the secret, in every encoded form, from everything it hands back.

use super::bindings::http::{Host, HostClient};
pub use super::bindings::http::{HttpError, Method, Request, Response};
use super::state::CallState;
use crate::capabilities::encoding;
use crate::capabilities::net::denied_reason;
use crate::capabilities::replay::{Recorder, Replay};
pub use crate::capabilities::scrub::REDACTED;
use crate::capabilities::scrub::Scrubber;
use crate::error::ConfigError;
use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;
use wasmtime::component::Resource;

/// Longest request path accepted.
const MAX_PATH_LEN: usize = 2048;
/// Most headers a guest may send on one request.
const MAX_HEADERS: usize = 64;
/// Default cap on the total size of a guest's request headers (names and values).
pub(crate) const DEFAULT_MAX_HEADER_BYTES: usize = 16 << 10;

/// How the host injects the credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "snake_case")]
pub enum CredentialScheme {
    /// `Authorization: Bearer SECRET`
    Bearer,
    /// `Authorization: Basic base64(USERNAME:SECRET)`
    Basic { username: String },
    /// `NAME: SECRET`
    Header { name: String },
    /// `?PARAM=SECRET` appended to every request's query.
    Query { param: String },
}

impl CredentialScheme {
    /// Reads the credential setting's syntax (`serve`'s `credential`,
    /// `call --scheme`): `bearer`, `basic:USER`, `header:NAME`,
    /// `query:PARAM`, or `none` (a public API: nothing is injected, and
    /// nothing needs to be stored), which is `Ok(None)`.
    pub fn parse(text: &str) -> Result<Option<CredentialScheme>, String> {
        let (kind, arg) = match text.split_once(':') {
            Some((k, a)) => (k.trim(), Some(a.trim())),
            None => (text.trim(), None),
        };
        match (kind, arg) {
            ("none", None) => Ok(None),
            ("bearer", None) => Ok(Some(CredentialScheme::Bearer)),
            ("basic", Some(user)) if !user.is_empty() => Ok(Some(CredentialScheme::Basic {
                username: user.to_string(),
            })),
            ("header", Some(name)) if !name.is_empty() => Ok(Some(CredentialScheme::Header {
                name: name.to_string(),
            })),
            ("query", Some(param)) if !param.is_empty() => Ok(Some(CredentialScheme::Query {
                param: param.to_string(),
            })),
            _ => Err(format!(
                "`{text}` is not one of bearer, basic:USER, header:NAME, query:PARAM or none (a public API)"
            )),
        }
    }
}

/// Where the secret comes from. The value is never logged or shown.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretSource {
    /// The secret itself, from the host's configuration.
    Value(String),
    /// The name of an environment variable of the host process.
    Env(String),
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Value(_) => f.write_str("Value([REDACTED])"),
            SecretSource::Env(name) => write!(f, "Env({name:?})"),
        }
    }
}

/// A credential: scheme plus secret source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialConfig {
    /// How it is injected.
    #[serde(flatten)]
    pub scheme: CredentialScheme,
    /// Where the secret comes from.
    pub secret: SecretSource,
}

/// Host configuration of one connector's HTTP destination.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// `scheme://host[:port][/prefix]`; the guest's paths go below the prefix.
    pub origin: String,
    /// The credential to inject, if any.
    pub credential: Option<CredentialConfig>,
    /// Operator allowance for an origin on a loopback or private address (tests,
    /// local development). Off by default: such addresses are refused.
    pub allow_private_network: bool,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Time between two reads of the response.
    pub read_timeout: Duration,
    /// Time for the whole exchange.
    pub total_timeout: Duration,
    /// Largest response body, after decompression.
    pub max_response_bytes: u64,
    /// Largest request body.
    pub max_request_bytes: usize,
    /// Largest total size of the guest's request headers (names and values).
    pub max_request_header_bytes: usize,
    /// Further header names the operator lists as carrying credentials; a
    /// guest's header of any of these names is dropped.
    pub strip_headers: Vec<String>,
    /// Live (the default), record or replay (DESIGN D9).
    pub mode: HttpMode,
    /// The destination name this capability serves (`None`: the connector's
    /// own origin), which replay fixtures and recordings name.
    pub destination: Option<String>,
    /// Further headers the host injects whose values are deployment secrets
    /// (Google Ads' `developer-token`): scrubbed like the credential, and a
    /// guest's header of the same name is dropped.
    pub secret_headers: Vec<(String, String)>,
}

/// How a capability answers requests (DESIGN D9; see `capabilities::replay`).
#[derive(Debug, Clone, Default)]
pub enum HttpMode {
    /// Sends to the origin.
    #[default]
    Live,
    /// Sends to the origin, and appends each completed exchange (scrubbed)
    /// to the recorder's fixture file.
    Record(Arc<Recorder>),
    /// Answers from fixtures only. The capability holds no network client,
    /// so it cannot send; requests pass the same checks as live first.
    Replay(Arc<Replay>),
}

impl HttpConfig {
    /// A configuration with the default limits.
    pub fn new(origin: impl Into<String>) -> HttpConfig {
        HttpConfig {
            origin: origin.into(),
            credential: None,
            allow_private_network: false,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(15),
            total_timeout: Duration::from_secs(30),
            max_response_bytes: 8 << 20,
            max_request_bytes: 4 << 20,
            max_request_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            strip_headers: Vec::new(),
            mode: HttpMode::Live,
            destination: None,
            secret_headers: Vec::new(),
        }
    }

    /// Names the destination this capability serves (replay and recording).
    pub fn destination(mut self, name: impl Into<String>) -> HttpConfig {
        self.destination = Some(name.into());
        self
    }

    /// Sets the mode: live, record or replay.
    pub fn mode(mut self, mode: HttpMode) -> HttpConfig {
        self.mode = mode;
        self
    }

    /// Drops a guest's headers of these names too (credential headers of
    /// the operator's own).
    pub fn strip_headers(
        mut self,
        names: impl IntoIterator<Item = impl Into<String>>,
    ) -> HttpConfig {
        self.strip_headers.extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets the credential.
    pub fn credential(mut self, scheme: CredentialScheme, secret: SecretSource) -> HttpConfig {
        self.credential = Some(CredentialConfig { scheme, secret });
        self
    }

    /// Allows an origin on a loopback or private address.
    pub fn allow_private_network(mut self, allow: bool) -> HttpConfig {
        self.allow_private_network = allow;
        self
    }
}

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
    /// Lowercased names of further headers the guest may not send.
    strip_headers: Vec<String>,
    /// The destination name fixtures and recordings give it.
    destination: Option<String>,
    /// Deployment-secret headers injected into every request.
    secret_headers: Vec<(HeaderName, String)>,
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

/// The `client` resource: a handle to the call's HTTP capability.
pub struct ClientHandle {
    /// `None`: the connector's own origin; otherwise a named destination.
    destination: Option<String>,
}

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
        let mut strip_headers = Vec::new();
        for name in &config.strip_headers {
            let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                ConfigError::Credential(format!(
                    "`{}` is not a valid header name to strip",
                    name.escape_debug()
                ))
            })?;
            strip_headers.push(parsed.as_str().to_string());
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
                .map_err(|e| ConfigError::Client(e.to_string()))
        };
        // Replay builds no client: no resolver, no socket, nothing to send with.
        let backend = match &config.mode {
            HttpMode::Live => Backend::Live(live_client()?),
            HttpMode::Record(recorder) => Backend::Record(live_client()?, recorder.clone()),
            HttpMode::Replay(replay) => Backend::Replay(replay.clone()),
        };

        Ok(Arc::new(HttpCapability {
            origin,
            prefix,
            backend,
            credential,
            scrubber,
            max_response_bytes: config.max_response_bytes,
            max_request_bytes: config.max_request_bytes,
            max_header_bytes: config.max_request_header_bytes,
            strip_headers,
            destination: config.destination.clone(),
            secret_headers,
        }))
    }

    /// The configured origin, as the operator wrote it (no secret in it).
    pub fn origin(&self) -> &Url {
        &self.origin
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

    /// Checks a guest request and builds what would be sent, without
    /// sending anything: every refusal of [`HttpCapability::send`] happens here.
    pub fn prepare(&self, req: &Request) -> Result<PreparedRequest, HttpError> {
        self.prepare_with(req, &[])
    }

    /// [`HttpCapability::prepare`], letting the segments at `encoded` (a
    /// route's `{name:encoded}` parameters) hold a percent-encoded `/`.
    fn prepare_with(&self, req: &Request, encoded: &[usize]) -> Result<PreparedRequest, HttpError> {
        let url = self.build_url(req, encoded)?;
        let headers = self.build_headers(&req.headers)?;
        let body = req.body.clone().unwrap_or_default();
        if body.len() > self.max_request_bytes {
            return Err(HttpError::Denied(format!(
                "request body is larger than {} bytes",
                self.max_request_bytes
            )));
        }
        let method = match req.method {
            Method::Get => reqwest::Method::GET,
            Method::Head => reqwest::Method::HEAD,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Patch => reqwest::Method::PATCH,
            Method::Delete => reqwest::Method::DELETE,
        };
        Ok(PreparedRequest {
            method,
            url,
            headers,
            body,
        })
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
    /// decided it as one and it passed), and neither a subscription.
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
        )
        .await
    }

    /// [`HttpCapability::send_for_tool`] with the request's route already
    /// matched (once per request: the trace names the same match).
    async fn send_matched(
        &self,
        req: Request,
        tool: &str,
        routes: &super::routes::RouteSet,
        destination: Option<&str>,
        matched: Option<&super::routes::Matched>,
        mutations_approved: bool,
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
            let ops = super::graphql::request_operations(
                &req.query,
                &req.headers,
                req.body.as_deref().unwrap_or_default(),
            )
            .map_err(|e| HttpError::Denied(format!("tool `{tool}`: {e}")))?;
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

    async fn dispatch(
        &self,
        req: Request,
        prepared: PreparedRequest,
    ) -> Result<Response, HttpError> {
        match &self.backend {
            Backend::Live(client) => self
                .send_live(client, prepared)
                .await
                .map(|(response, _)| response),
            Backend::Record(client, recorder) => {
                let (response, peer) = self.send_live(client, prepared).await?;
                let origin = format!(
                    "{}{}",
                    self.origin.origin().ascii_serialization(),
                    self.prefix
                );
                recorder.record_for(
                    self.destination.as_deref(),
                    &origin,
                    peer,
                    &req,
                    &response,
                    &self.scrubber,
                );
                Ok(response)
            }
            Backend::Replay(replay) => {
                drop(prepared);
                let response =
                    replay.answer_for(self.destination.as_deref(), &req, &self.scrubber)?;
                if response.body.len() as u64 > self.max_response_bytes {
                    return Err(HttpError::TooLarge(self.max_response_bytes));
                }
                let headers = response
                    .headers
                    .into_iter()
                    .filter(|(name, _)| {
                        !name.eq_ignore_ascii_case("set-cookie")
                            && !name.eq_ignore_ascii_case("set-cookie2")
                    })
                    .map(|(name, value)| (name.to_ascii_lowercase(), self.scrub_text(&value)))
                    .collect();
                Ok(Response {
                    status: response.status,
                    headers,
                    body: self.scrub(&response.body),
                })
            }
        }
    }

    /// Sends `prepared`; the response as the guest gets it, and the
    /// address that answered (a recording says whether it was public).
    async fn send_live(
        &self,
        client: &reqwest::Client,
        prepared: PreparedRequest,
    ) -> Result<(Response, Option<std::net::SocketAddr>), HttpError> {
        let PreparedRequest {
            method,
            url,
            headers,
            body,
        } = prepared;
        let exchange = async {
            let mut response = client
                .request(method, url)
                .headers(headers)
                .body(body)
                .send()
                .await
                .map_err(|e| self.transport_error(e))?;
            if let Some(len) = response.content_length()
                && len > self.max_response_bytes
            {
                return Err(HttpError::TooLarge(self.max_response_bytes));
            }
            let status = response.status().as_u16();
            let peer = response.remote_addr();
            // Refused before the body is read: a coding the host cannot
            // undo would hide the secret from the scrub.
            let codings = encoding::content_codings(response.headers())?;
            let headers = response
                .headers()
                .iter()
                .filter(|(name, _)| {
                    !matches!(name.as_str(), "set-cookie" | "set-cookie2")
                        // Decoded here: the guest gets plain bytes.
                        && !(!codings.is_empty() && matches!(name.as_str(), "content-encoding" | "content-length"))
                })
                .map(|(name, value)| {
                    let value = String::from_utf8_lossy(&self.scrub(value.as_bytes())).into_owned();
                    (name.as_str().to_string(), value)
                })
                .collect();
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| self.transport_error(e))?
            {
                if body.len() as u64 + chunk.len() as u64 > self.max_response_bytes {
                    return Err(HttpError::TooLarge(self.max_response_bytes));
                }
                body.extend_from_slice(&chunk);
            }
            let body = encoding::decode(&codings, body, self.max_response_bytes)?;
            Ok((
                Response {
                    status,
                    headers,
                    body: self.scrub(&body),
                },
                peer,
            ))
        };
        // reqwest's total timeout runs until the body is read, so no
        // second timer here; its expiry maps to `timeout`.
        exchange.await
    }

    fn build_url(&self, req: &Request, encoded: &[usize]) -> Result<Url, HttpError> {
        validate_path_allowing(&req.path, encoded).map_err(HttpError::Denied)?;
        let mut url = self.origin.clone();
        let full_path = format!("{}{}", self.prefix, req.path);
        url.set_path(&full_path);
        url.set_query(None);
        let credential_param = match &self.credential {
            Some(Credential {
                scheme: CredentialScheme::Query { param },
                ..
            }) => Some(param.as_str()),
            _ => None,
        };
        if !req.query.is_empty() || credential_param.is_some() {
            let mut pairs = url.query_pairs_mut();
            for (name, value) in &req.query {
                if Some(name.as_str()) == credential_param {
                    continue;
                }
                pairs.append_pair(name, value);
            }
            if let (Some(param), Some(cred)) = (credential_param, &self.credential) {
                pairs.append_pair(param, &cred.secret.0);
            }
        }
        // Defence in depth: the authority and the prefix cannot have moved.
        if url.scheme() != self.origin.scheme()
            || url.host() != self.origin.host()
            || url.port_or_known_default() != self.origin.port_or_known_default()
            || url.path() != full_path
        {
            return Err(HttpError::Denied(
                "the path would leave the connector's origin".to_string(),
            ));
        }
        Ok(url)
    }

    fn build_headers(&self, guest: &[(String, String)]) -> Result<HeaderMap, HttpError> {
        if guest.len() > MAX_HEADERS {
            return Err(HttpError::Denied(format!(
                "more than {MAX_HEADERS} headers"
            )));
        }
        let credential_header = match &self.credential {
            Some(Credential {
                scheme: CredentialScheme::Header { name },
                ..
            }) => Some(name.to_ascii_lowercase()),
            _ => None,
        };
        let total: usize = guest.iter().map(|(n, v)| n.len() + v.len()).sum();
        if total > self.max_header_bytes {
            return Err(HttpError::Denied(format!(
                "the request headers are larger than {} bytes",
                self.max_header_bytes
            )));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in guest {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                HttpError::Denied(format!(
                    "`{}` is not a valid header name",
                    name.escape_debug()
                ))
            })?;
            if carries_authority(name.as_str())
                || credential_header.as_deref() == Some(name.as_str())
                || self.strip_headers.iter().any(|s| s == name.as_str())
                || self.secret_headers.iter().any(|(s, _)| s == name)
            {
                continue;
            }
            let value = HeaderValue::from_str(value).map_err(|_| {
                HttpError::Denied(format!("the value of header `{name}` is not valid"))
            })?;
            headers.append(name, value);
        }
        headers.insert(
            http::header::ACCEPT_ENCODING,
            HeaderValue::from_static(encoding::ACCEPT_ENCODING),
        );
        for (name, value) in &self.secret_headers {
            let mut value = HeaderValue::from_str(value).expect("validated at configuration");
            value.set_sensitive(true);
            headers.insert(name.clone(), value);
        }
        if let Some(cred) = &self.credential {
            let (name, value) = match &cred.scheme {
                CredentialScheme::Bearer => (
                    http::header::AUTHORIZATION,
                    format!("Bearer {}", cred.secret.0),
                ),
                CredentialScheme::Basic { username } => (
                    http::header::AUTHORIZATION,
                    format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD
                            .encode(format!("{username}:{}", cred.secret.0))
                    ),
                ),
                CredentialScheme::Header { name } => (
                    HeaderName::from_bytes(name.as_bytes()).expect("validated at configuration"),
                    cred.secret.0.clone(),
                ),
                CredentialScheme::Query { .. } => return Ok(headers),
            };
            let mut value = HeaderValue::from_str(&value).expect("validated at configuration");
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        Ok(headers)
    }

    fn transport_error(&self, e: reqwest::Error) -> HttpError {
        if e.is_timeout() {
            return HttpError::Timeout;
        }
        let e = e.without_url();
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        HttpError::Transport(self.scrub_text(&text))
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

/// Headers a guest may not set: they carry authority, credentials, identity,
/// routing or framing, or they are the host's to negotiate.
pub fn carries_authority(name: &str) -> bool {
    matches!(
        name,
        "host"
            | "authorization"
            | "cookie"
            | "cookie2"
            // Credential headers of common APIs, whatever this connector's scheme.
            | "x-api-key"
            | "api-key"
            | "apikey"
            | "x-auth-token"
            | "x-access-token"
            | "x-amz-security-token"
            | "private-token"
            // Framing and hop-by-hop.
            | "connection"
            | "keep-alive"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "http2-settings"
            | "content-length"
            | "expect"
            // The host negotiates content codings (see `encoding`).
            | "accept-encoding"
            // Identity and routing that proxies and frameworks trust.
            | "referer"
            | "forwarded"
            | "via"
            | "x-real-ip"
            | "x-client-ip"
            | "true-client-ip"
            | "x-original-url"
            | "x-rewrite-url"
            | "x-http-method-override"
            | "x-http-method"
            | "x-method-override"
    ) || name.starts_with("proxy-")
        || name.starts_with("x-forwarded-")
}

/// Checks a guest path. Returns the reason it is refused.
///
/// A path starts with `/`, is visible ASCII, and has no `//`, `\`, `@`, `*`,
/// `?`, `#`, `;`, no malformed or suspicious percent-escapes (`%2F`, `%5C`,
/// `%25`, `%3B`, `%00`..`%1F`, `%7F`), and no `.` or `..` segment, raw or
/// encoded. `;` starts a path parameter, which Tomcat- and Spring-style
/// servers strip before routing: `/allowed/..;/admin` escapes a prefix there.
pub(crate) fn validate_path(path: &str) -> Result<(), String> {
    validate_path_allowing(path, &[])
}

/// [`validate_path`], except that the segments at `encoded` (0 is the first
/// after the leading `/`) may hold `%2F`: a route's `{name:encoded}`
/// parameter, a URL used as an id (Search Console's
/// `https%3A%2F%2Fwww.example.com%2F`). Decoded, such a segment still may not
/// hold a `.` or `..` part between its slashes, nor a `\`.
pub(crate) fn validate_path_allowing(path: &str, encoded: &[usize]) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err("the path must start with `/` (absolute URLs are refused)".to_string());
    }
    if path.len() > MAX_PATH_LEN {
        return Err(format!("the path is longer than {MAX_PATH_LEN} bytes"));
    }
    if path.contains("//") {
        return Err("the path contains `//`".to_string());
    }
    for c in path.chars() {
        match c {
            '\\' | '@' | '*' | '?' | '#' | ';' => return Err(format!("the path contains `{c}`")),
            c if !c.is_ascii_graphic() => {
                return Err(format!(
                    "the path contains {:?}, which must be percent-encoded",
                    c
                ));
            }
            _ => {}
        }
    }
    for (i, segment) in path[1..].split('/').enumerate() {
        let slash_ok = encoded.contains(&i);
        let decoded = percent_decode_segment(segment, slash_ok)?;
        if decoded == "." || decoded == ".." {
            return Err("the path contains a dot segment".to_string());
        }
        if slash_ok && decoded.split('/').any(|part| part == "." || part == "..") {
            return Err("an encoded segment of the path holds a dot segment".to_string());
        }
    }
    Ok(())
}

fn percent_decode_segment(segment: &str, slash_ok: bool) -> Result<String, String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            let Some(value) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) else {
                return Err("the path has a malformed percent-escape".to_string());
            };
            if (value == b'/' && !slash_ok)
                || matches!(value, b'\\' | b'%' | b';')
                || value < 0x20
                || value == 0x7f
            {
                return Err(format!(
                    "the path encodes a forbidden character (%{value:02X})"
                ));
            }
            out.push(value);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Resolves names and refuses any non-public address unless allowed.
struct GuardedResolver {
    allow_private_network: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow = self.allow_private_network;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err(format!("{host} did not resolve").into());
            }
            if !allow {
                for addr in &addrs {
                    if let Some(reason) = denied_reason(addr.ip()) {
                        return Err(format!("{host} resolves to {}, a {reason}", addr.ip()).into());
                    }
                }
            }
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// One request as the trace records it (no headers, no bodies, no secret).
#[derive(Debug, Clone, Serialize)]
pub struct HttpExchange {
    /// The named destination, when not the connector's own origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// Method.
    pub method: String,
    /// Path as the guest asked for it (query not included).
    pub path: String,
    /// The declared route it matched (`GET /repos/{owner}/{repo}`), if any:
    /// a request that matched none was refused before it was sent.
    pub route: Option<String>,
    /// Status, when the upstream answered.
    pub status: Option<u16>,
    /// Bytes of the request body the guest sent.
    pub request_bytes: u64,
    /// Bytes of the response body the guest received (after decoding).
    pub response_bytes: u64,
    /// The error the guest saw, when it did not.
    pub error: Option<String>,
    /// Time spent, in microseconds.
    pub micros: u64,
}

impl Host for CallState {
    fn connect(&mut self) -> wasmtime::Result<Result<Resource<ClientHandle>, HttpError>> {
        if self.caps.http.is_none() {
            return Ok(Err(HttpError::Denied(
                "this session holds no HTTP capability for this connector".to_string(),
            )));
        }
        match self.push_handle(ClientHandle { destination: None })? {
            Some(handle) => Ok(Ok(handle)),
            None => Ok(Err(HttpError::Denied(format!(
                "at most {} handles per call",
                super::state::MAX_HANDLES
            )))),
        }
    }

    fn connect_to(
        &mut self,
        destination: String,
    ) -> wasmtime::Result<Result<Resource<ClientHandle>, HttpError>> {
        if !self.routes.names_destination(Some(&destination)) {
            let (shown, _) = self.caps.scrub_and_cut(&destination, 64, false);
            return Ok(Err(HttpError::Denied(format!(
                "tool `{}` declares no route to destination `{shown}`",
                self.tool
            ))));
        }
        if !self.caps.destinations.contains_key(&destination) {
            return Ok(Err(HttpError::Denied(format!(
                "this session holds no HTTP capability for destination `{destination}` (not configured, or the connector it names is not live)"
            ))));
        }
        match self.push_handle(ClientHandle {
            destination: Some(destination),
        })? {
            Some(handle) => Ok(Ok(handle)),
            None => Ok(Err(HttpError::Denied(format!(
                "at most {} handles per call",
                super::state::MAX_HANDLES
            )))),
        }
    }
}

impl HostClient for CallState {
    async fn send(
        &mut self,
        handle: Resource<ClientHandle>,
        req: Request,
    ) -> wasmtime::Result<Result<Response, HttpError>> {
        let destination = self.table.get(&handle)?.destination.clone();
        let http = match &destination {
            None => self.caps.http.clone(),
            Some(d) => self.caps.destinations.get(d).cloned(),
        };
        let Some(http) = http else {
            return Ok(Err(HttpError::Denied(
                "this session holds no HTTP capability for this connector".to_string(),
            )));
        };
        let started = Instant::now();
        let (method, path) = (
            crate::capabilities::routes::method_name(req.method).to_string(),
            req.path.clone(),
        );
        // Matched once: the same match decides and is traced.
        let matched = self.routes.find(destination.as_deref(), req.method, &path);
        let route = matched.as_ref().map(|m| m.route.clone());
        let request_bytes = req.body.as_ref().map_or(0, |b| b.len() as u64);
        let result = http
            .send_matched(
                req,
                &self.tool,
                &self.routes,
                destination.as_deref(),
                matched.as_ref(),
                self.caps.graphql_mutations,
            )
            .await;
        self.http_log.push(HttpExchange {
            destination,
            method,
            path: http.scrub_text(&path),
            route,
            status: result.as_ref().ok().map(|r| r.status),
            request_bytes,
            response_bytes: result.as_ref().map_or(0, |r| r.body.len() as u64),
            error: result.as_ref().err().map(|e| format!("{e:?}")),
            micros: started.elapsed().as_micros() as u64,
        });
        Ok(result)
    }

    fn drop(&mut self, handle: Resource<ClientHandle>) -> wasmtime::Result<()> {
        self.drop_handle(handle)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{validate_path, validate_path_allowing};

    #[test]
    fn an_encoded_segment_may_hold_a_slash_and_nothing_else_new() {
        let site = "/webmasters/v3/sites/https%3A%2F%2Fwww.example.com%2F/searchAnalytics/query";
        assert!(
            validate_path(site).is_err(),
            "%2F is refused where no route declares an encoded segment"
        );
        assert!(validate_path_allowing(site, &[3]).is_ok());
        assert!(
            validate_path_allowing(site, &[2]).is_err(),
            "only the declared segment"
        );
        for bad in [
            "/sites/https%3A%2F%2Fa.example%2F..%2Fadmin/q",
            "/sites/..%2Fadmin/q",
            "/sites/a%2F.%2Fb/q",
            "/sites/%2E%2E%2Fadmin/q",
            "/sites/a%5Cb/q",
            "/sites/a%252F/q",
            "/sites/a%2F%00/q",
        ] {
            assert!(
                validate_path_allowing(bad, &[1]).is_err(),
                "{bad} should be refused"
            );
        }
    }

    #[test]
    fn path_rules() {
        for ok in [
            "/",
            "/repos/octo/hello/contents/src/lib.rs",
            "/a/b%20c",
            "/a/.hidden",
            "/a/b..c",
            "/v1:x",
        ] {
            assert!(validate_path(ok).is_ok(), "{ok} should pass");
        }
        for bad in [
            "",
            "repos",
            "//evil.example/x",
            "/a//b",
            "/a\\b",
            "/@evil.example",
            "/a@b",
            "/*",
            "/a?b=c",
            "/a#f",
            "http://evil.example/",
            "/../etc",
            "/a/./b",
            "/a/..",
            "/%2e%2e/x",
            "/%2E%2e",
            "/.%2e/x",
            "/a%2fb",
            "/a%5cb",
            "/a%00",
            "/a%zz",
            "/a%2",
            "/a b",
            "/a\tb",
            "/ä",
            "/a%252e%252e",
            "/a;b",
            "/..;/admin",
            "/allowed/..;/admin",
            "/a/b;jsessionid=1",
            "/a%3bb",
            "/a/%3B/b",
            "/%2e%2e%3b/x",
        ] {
            assert!(validate_path(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
