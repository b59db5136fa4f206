//! The `http` capability: a client bound to one destination origin.
//!
//! The guest supplies method, path and query, headers and body. This module
//! refuses paths that could change the authority or escape the origin's path
//! prefix, drops headers that carry authority, injects the credential itself,
//! never follows redirects, ignores proxy variables, sends no Referer, bounds
//! time and response size, checks every resolved address against the deny
//! list, and scrubs the secret from everything it hands back.

use crate::bindings::http::{Host, HostClient, HttpError, Method, Request, Response};
use crate::capabilities::net::denied_reason;
use crate::error::ConfigError;
use crate::runtime::CallState;
use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;
use wasmtime::component::Resource;

/// Replaces the secret wherever it would be shown.
pub const REDACTED: &str = "[REDACTED]";

/// Longest request path accepted.
const MAX_PATH_LEN: usize = 2048;
/// Most headers a guest may send on one request.
const MAX_HEADERS: usize = 64;

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
        }
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
    client: reqwest::Client,
    credential: Option<Credential>,
    /// Every form in which the secret could come back: raw, base64, URL-encoded.
    scrub_forms: Vec<Vec<u8>>,
    max_response_bytes: u64,
    max_request_bytes: usize,
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
pub struct ClientHandle;

impl HttpCapability {
    /// Validates the configuration, resolves the secret and builds the client.
    pub fn new(config: HttpConfig) -> Result<Arc<HttpCapability>, ConfigError> {
        let origin_err = |reason: &str| ConfigError::Origin { origin: config.origin.clone(), reason: reason.to_string() };
        let origin = Url::parse(&config.origin).map_err(|e| origin_err(&e.to_string()))?;
        if !matches!(origin.scheme(), "http" | "https") {
            return Err(origin_err("scheme must be http or https"));
        }
        if !origin.username().is_empty() || origin.password().is_some() {
            return Err(origin_err("credentials in the URL are not allowed; configure a credential"));
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
                "{ip} is a {reason}; the operator must allow private-network origins explicitly"
            )));
        }
        let prefix = origin.path().trim_end_matches('/').to_string();
        validate_path(&format!("{prefix}/")).map_err(|e| origin_err(&format!("path prefix: {e}")))?;

        let credential = match &config.credential {
            None => None,
            Some(c) => {
                let secret = match &c.secret {
                    SecretSource::Value(v) => v.clone(),
                    SecretSource::Env(name) => std::env::var(name).map_err(|_| {
                        ConfigError::Credential(format!("environment variable `{name}` is not set or not UTF-8"))
                    })?,
                };
                if secret.is_empty() {
                    return Err(ConfigError::Credential("the secret is empty".to_string()));
                }
                if let CredentialScheme::Header { name } = &c.scheme {
                    HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| ConfigError::Credential(format!("`{name}` is not a valid header name")))?;
                }
                HeaderValue::from_str(&secret)
                    .map_err(|_| ConfigError::Credential("the secret has characters a header cannot carry".to_string()))?;
                Some(Credential { scheme: c.scheme.clone(), secret: Secret(secret) })
            }
        };
        let scrub_forms = credential.as_ref().map(scrub_forms_of).unwrap_or_default();

        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .referer(false)
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .timeout(config.total_timeout)
            .dns_resolver(Arc::new(GuardedResolver { allow_private_network: config.allow_private_network }))
            .https_only(origin.scheme() == "https")
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;

        Ok(Arc::new(HttpCapability {
            origin,
            prefix,
            client,
            credential,
            scrub_forms,
            max_response_bytes: config.max_response_bytes,
            max_request_bytes: config.max_request_bytes,
        }))
    }

    /// The configured origin, as the operator wrote it (no secret in it).
    pub fn origin(&self) -> &Url {
        &self.origin
    }

    /// Sends one guest request. Every refusal happens before any byte is sent.
    pub async fn send(&self, req: Request) -> Result<Response, HttpError> {
        let url = self.build_url(&req)?;
        let headers = self.build_headers(&req.headers)?;
        let body = req.body.unwrap_or_default();
        if body.len() > self.max_request_bytes {
            return Err(HttpError::Denied(format!("request body is larger than {} bytes", self.max_request_bytes)));
        }
        let method = match req.method {
            Method::Get => reqwest::Method::GET,
            Method::Head => reqwest::Method::HEAD,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Patch => reqwest::Method::PATCH,
            Method::Delete => reqwest::Method::DELETE,
        };
        let exchange = async {
            let mut response = self
                .client
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
            let headers = response
                .headers()
                .iter()
                .filter(|(name, _)| !matches!(name.as_str(), "set-cookie" | "set-cookie2"))
                .map(|(name, value)| {
                    let value = String::from_utf8_lossy(&self.scrub(value.as_bytes())).into_owned();
                    (name.as_str().to_string(), value)
                })
                .collect();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| self.transport_error(e))? {
                if body.len() as u64 + chunk.len() as u64 > self.max_response_bytes {
                    return Err(HttpError::TooLarge(self.max_response_bytes));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Response { status, headers, body: self.scrub(&body) })
        };
        // reqwest's total timeout runs until the body is read, so no
        // second timer here; its expiry maps to `timeout`.
        exchange.await
    }

    fn build_url(&self, req: &Request) -> Result<Url, HttpError> {
        validate_path(&req.path).map_err(HttpError::Denied)?;
        let mut url = self.origin.clone();
        let full_path = format!("{}{}", self.prefix, req.path);
        url.set_path(&full_path);
        url.set_query(None);
        let credential_param = match &self.credential {
            Some(Credential { scheme: CredentialScheme::Query { param }, .. }) => Some(param.as_str()),
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
            return Err(HttpError::Denied("the path would leave the connector's origin".to_string()));
        }
        Ok(url)
    }

    fn build_headers(&self, guest: &[(String, String)]) -> Result<HeaderMap, HttpError> {
        if guest.len() > MAX_HEADERS {
            return Err(HttpError::Denied(format!("more than {MAX_HEADERS} headers")));
        }
        let credential_header = match &self.credential {
            Some(Credential { scheme: CredentialScheme::Header { name }, .. }) => Some(name.to_ascii_lowercase()),
            _ => None,
        };
        let mut headers = HeaderMap::new();
        for (name, value) in guest {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HttpError::Denied(format!("`{}` is not a valid header name", name.escape_debug())))?;
            if carries_authority(name.as_str()) || credential_header.as_deref() == Some(name.as_str()) {
                continue;
            }
            let value = HeaderValue::from_str(value)
                .map_err(|_| HttpError::Denied(format!("the value of header `{name}` is not valid")))?;
            headers.append(name, value);
        }
        if let Some(cred) = &self.credential {
            let (name, value) = match &cred.scheme {
                CredentialScheme::Bearer => (http::header::AUTHORIZATION, format!("Bearer {}", cred.secret.0)),
                CredentialScheme::Basic { username } => (
                    http::header::AUTHORIZATION,
                    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{username}:{}", cred.secret.0))),
                ),
                CredentialScheme::Header { name } => {
                    (HeaderName::from_bytes(name.as_bytes()).expect("validated at configuration"), cred.secret.0.clone())
                }
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
        let mut out = bytes.to_vec();
        for form in &self.scrub_forms {
            if memchr::memmem::find(&out, form).is_none() {
                continue;
            }
            let mut next = Vec::with_capacity(out.len());
            let mut last = 0;
            for at in memchr::memmem::find_iter(&out, form) {
                if at < last {
                    continue;
                }
                next.extend_from_slice(&out[last..at]);
                next.extend_from_slice(REDACTED.as_bytes());
                last = at + form.len();
            }
            next.extend_from_slice(&out[last..]);
            out = next;
        }
        out
    }

    /// [`Self::scrub`] for text.
    pub fn scrub_text(&self, text: &str) -> String {
        String::from_utf8_lossy(&self.scrub(text.as_bytes())).into_owned()
    }
}

fn scrub_forms_of(cred: &Credential) -> Vec<Vec<u8>> {
    let secret = cred.secret.0.as_str();
    let mut forms = vec![secret.as_bytes().to_vec()];
    let encoded: String = url::form_urlencoded::byte_serialize(secret.as_bytes()).collect();
    forms.push(encoded.into_bytes());
    if let CredentialScheme::Basic { username } = &cred.scheme {
        forms.push(base64::engine::general_purpose::STANDARD.encode(format!("{username}:{secret}")).into_bytes());
    }
    forms.sort();
    forms.dedup();
    // Longest first, so a form containing another is replaced whole.
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms
}

/// Headers a guest may not set: they carry authority, identity or framing.
fn carries_authority(name: &str) -> bool {
    matches!(
        name,
        "host"
            | "authorization"
            | "cookie"
            | "cookie2"
            | "connection"
            | "keep-alive"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
            | "expect"
            | "referer"
            | "forwarded"
            | "via"
            | "x-real-ip"
    ) || name.starts_with("proxy-")
        || name.starts_with("x-forwarded-")
}

/// Checks a guest path. Returns the reason it is refused.
///
/// A path starts with `/`, is visible ASCII, and has no `//`, `\`, `@`, `*`,
/// `?`, `#`, no malformed or suspicious percent-escapes (`%2F`, `%5C`, `%25`,
/// `%00`..`%1F`, `%7F`), and no `.` or `..` segment, raw or encoded.
pub fn validate_path(path: &str) -> Result<(), String> {
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
            '\\' | '@' | '*' | '?' | '#' => return Err(format!("the path contains `{c}`")),
            c if !c.is_ascii_graphic() => {
                return Err(format!("the path contains {:?}, which must be percent-encoded", c));
            }
            _ => {}
        }
    }
    for segment in path[1..].split('/') {
        let decoded = percent_decode_segment(segment)?;
        if decoded == "." || decoded == ".." {
            return Err("the path contains a dot segment".to_string());
        }
    }
    Ok(())
}

fn percent_decode_segment(segment: &str) -> Result<String, String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let Some(value) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) else {
                return Err("the path has a malformed percent-escape".to_string());
            };
            if matches!(value, b'/' | b'\\' | b'%') || value < 0x20 || value == 0x7f {
                return Err(format!("the path encodes a forbidden character (%{value:02X})"));
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
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
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
    /// Method.
    pub method: String,
    /// Path as the guest asked for it (query not included).
    pub path: String,
    /// Status, when the upstream answered.
    pub status: Option<u16>,
    /// The error the guest saw, when it did not.
    pub error: Option<String>,
    /// Time spent, in microseconds.
    pub micros: u64,
}

impl Host for CallState {
    fn connect(&mut self) -> wasmtime::Result<Result<Resource<ClientHandle>, HttpError>> {
        if self.caps.http.is_none() {
            return Ok(Err(HttpError::Denied("this session holds no HTTP capability for this connector".to_string())));
        }
        match self.push_handle(ClientHandle)? {
            Some(handle) => Ok(Ok(handle)),
            None => Ok(Err(HttpError::Denied(format!("at most {} handles per call", crate::runtime::MAX_HANDLES)))),
        }
    }
}

impl HostClient for CallState {
    async fn send(&mut self, handle: Resource<ClientHandle>, req: Request) -> wasmtime::Result<Result<Response, HttpError>> {
        self.table.get(&handle)?;
        let Some(http) = self.caps.http.clone() else {
            return Ok(Err(HttpError::Denied("this session holds no HTTP capability for this connector".to_string())));
        };
        let started = Instant::now();
        let (method, path) = (format!("{:?}", req.method).to_uppercase(), req.path.clone());
        let result = http.send(req).await;
        self.http_log.push(HttpExchange {
            method,
            path: http.scrub_text(&path),
            status: result.as_ref().ok().map(|r| r.status),
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
    use super::validate_path;

    #[test]
    fn path_rules() {
        for ok in ["/", "/repos/octo/hello/contents/src/lib.rs", "/a/b%20c", "/a/.hidden", "/a/b..c", "/v1:x"] {
            assert!(validate_path(ok).is_ok(), "{ok} should pass");
        }
        for bad in [
            "", "repos", "//evil.example/x", "/a//b", "/a\\b", "/@evil.example", "/a@b", "/*", "/a?b=c", "/a#f",
            "http://evil.example/", "/../etc", "/a/./b", "/a/..", "/%2e%2e/x", "/%2E%2e", "/.%2e/x", "/a%2fb",
            "/a%5cb", "/a%00", "/a%zz", "/a%2", "/a b", "/a\tb", "/ä", "/a%252e%252e",
        ] {
            assert!(validate_path(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
