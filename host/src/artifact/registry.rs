//! The registry protocol (OCI distribution: manifests, blobs, uploads and
//! the token handshake) over the host's own guarded HTTP client.
//!
//! Why not the `oci-client` crate's requests: its reqwest client is its own,
//! follows up to ten redirects to any address over any scheme (a registry
//! answering 307 to `http://169.254.169.254/…` had every pulling host
//! connect there), and reads a manifest whole before any limit applies.
//! Here every request (to the registry, to the token endpoint it names, to
//! an upload's `Location`, to wherever a redirect points) is one hop checked
//! by the rules every host-made request follows
//! ([`crate::capabilities::net`]): an address written in the URL is checked
//! as written, a name when it resolves, and loopback, private, link-local
//! and metadata addresses are reached only for a `HOST[:PORT]` the operator
//! allowed (`allow_private_network`), each by its own allowance: a registry
//! allowed a private network does not lend that to where it redirects.
//! Redirects are followed by hand, at most [`MAX_REDIRECTS`], never from
//! https down to plain http; the registry's `Authorization` goes only to
//! the registry's own origin, so a blob handed to a CDN is fetched without
//! it. Every body is read against its limit as it arrives.

use super::{ArtifactError, RegistryOptions};
use crate::capabilities::net::{guarded_client, literal_denied, refused_by_guard};
use oci_client::Reference;
use oci_client::secrets::RegistryAuth;
use parking_lot::Mutex;
use reqwest::header::{self, HeaderValue};
use reqwest::{Method, StatusCode};
use std::time::Duration;
use url::Url;

/// Redirects followed for one request, at most.
pub(crate) const MAX_REDIRECTS: usize = 5;
/// The largest token endpoint answer read.
const MAX_TOKEN_BYTES: u64 = 64 << 10;
/// The most of an error answer read to say what the registry said.
const MAX_ERROR_BYTES: u64 = 4 << 10;

/// One registry, for the requests about one artifact.
pub(crate) struct Session {
    /// The artifact as errors name it.
    shown: String,
    /// `scheme://HOST[:PORT]/` of the registry.
    base: Url,
    /// Whether the registry itself may be on a private network.
    registry_allowed: bool,
    /// The other `HOST[:PORT]`s allowed a private network.
    private_network: Vec<String>,
    /// Refuses every non-public address.
    guarded: reqwest::Client,
    /// Reaches an allowed private address (still no redirect, no proxy).
    open: reqwest::Client,
    credential: RegistryAuth,
    /// What the registry's origin (and only it) is sent.
    authorization: Mutex<Option<HeaderValue>>,
}

/// A body sent.
#[derive(Clone)]
pub(crate) struct Body {
    pub(crate) bytes: bytes::Bytes,
    pub(crate) content_type: &'static str,
}

impl Session {
    /// A session with `reference`'s registry, over https unless the caller
    /// named it for plain HTTP.
    pub(crate) fn new(
        reference: &Reference,
        shown: &str,
        options: &RegistryOptions,
        credential: RegistryAuth,
    ) -> Result<Session, ArtifactError> {
        let registry = reference.registry();
        let scheme = if options.plain_http.iter().any(|r| r == registry) {
            "http"
        } else {
            "https"
        };
        let host = reference.resolve_registry();
        let base =
            Url::parse(&format!("{scheme}://{host}/")).map_err(|e| ArtifactError::Refused {
                registry: registry.to_string(),
                why: format!("not a registry address: {e}"),
            })?;
        let client = |allow: bool| {
            guarded_client(allow)
                .connect_timeout(Duration::from_secs(10))
                .read_timeout(Duration::from_secs(60))
                .user_agent(concat!("scout-host/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| ArtifactError::Registry {
                    reference: shown.to_string(),
                    message: format!("no HTTP client: {e}"),
                })
        };
        Ok(Session {
            shown: shown.to_string(),
            base,
            registry_allowed: options.private_network.iter().any(|r| r == registry),
            private_network: options.private_network.clone(),
            guarded: client(false)?,
            open: client(true)?,
            credential,
            authorization: Mutex::new(None),
        })
    }

    /// `/v2/REPOSITORY/SUFFIX` at the registry.
    fn url(&self, reference: &Reference, suffix: &str) -> Result<Url, ArtifactError> {
        self.base
            .join(&format!("v2/{}/{suffix}", reference.repository()))
            .map_err(|e| self.failed(format!("not a registry path: {e}")))
    }

    fn failed(&self, message: String) -> ArtifactError {
        ArtifactError::Registry {
            reference: self.shown.clone(),
            message,
        }
    }

    /// The manifest `reference` names (its tag or digest), read up to
    /// `limit` bytes: its bytes and the digest the registry says it has.
    /// `None` when the registry has none.
    pub(crate) async fn manifest(
        &self,
        reference: &Reference,
        accept: &str,
        limit: u64,
        what: &'static str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, ArtifactError> {
        let at = reference
            .digest()
            .or(reference.tag())
            .unwrap_or("latest")
            .to_string();
        let url = self.url(reference, &format!("manifests/{at}"))?;
        let response = self.request(Method::GET, url, Some(accept), None).await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let response = self.expect(response, &[StatusCode::OK]).await?;
        let digest = response
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = self.read(response, limit, what).await?;
        Ok(Some((body, digest)))
    }

    /// Blob `digest` of `reference`'s repository, read up to `limit` bytes.
    pub(crate) async fn blob(
        &self,
        reference: &Reference,
        digest: &str,
        limit: u64,
        what: &'static str,
    ) -> Result<Vec<u8>, ArtifactError> {
        let url = self.url(reference, &format!("blobs/{digest}"))?;
        let response = self.request(Method::GET, url, None, None).await?;
        let response = self.expect(response, &[StatusCode::OK]).await?;
        self.read(response, limit, what).await
    }

    /// Uploads `bytes` as a blob of `reference`'s repository, unless the
    /// registry has it.
    pub(crate) async fn put_blob(
        &self,
        reference: &Reference,
        bytes: &[u8],
    ) -> Result<(), ArtifactError> {
        let digest = super::sha256_digest(bytes);
        let head = self.url(reference, &format!("blobs/{digest}"))?;
        if self
            .request(Method::HEAD, head, None, None)
            .await?
            .status()
            .is_success()
        {
            return Ok(());
        }
        let start = self.url(reference, "blobs/uploads/")?;
        let response = self
            .request(Method::POST, start.clone(), None, None)
            .await?;
        let response = self.expect(response, &[StatusCode::ACCEPTED]).await?;
        // The upload goes where the registry says, under the same rules
        // as a redirect.
        let mut location = location(&start, &response)
            .ok_or_else(|| self.failed("an upload started with no `Location`".into()))?;
        check_hop(&start, &location).map_err(|why| self.redirect_refused(&location, why))?;
        location.query_pairs_mut().append_pair("digest", &digest);
        let body = Body {
            bytes: bytes::Bytes::copy_from_slice(bytes),
            content_type: "application/octet-stream",
        };
        let response = self
            .request(Method::PUT, location, None, Some(body))
            .await?;
        self.expect(response, &[StatusCode::CREATED]).await?;
        Ok(())
    }

    /// Writes `manifest` (of `media_type`) at `reference`'s tag.
    pub(crate) async fn put_manifest(
        &self,
        reference: &Reference,
        manifest: Vec<u8>,
        media_type: &'static str,
    ) -> Result<(), ArtifactError> {
        let at = reference.tag().unwrap_or("latest").to_string();
        let url = self.url(reference, &format!("manifests/{at}"))?;
        let body = Body {
            bytes: manifest.into(),
            content_type: media_type,
        };
        let response = self.request(Method::PUT, url, None, Some(body)).await?;
        self.expect(response, &[StatusCode::CREATED]).await?;
        Ok(())
    }

    /// `response` if its status is one of `expected`, else what the
    /// registry said.
    async fn expect(
        &self,
        response: reqwest::Response,
        expected: &[StatusCode],
    ) -> Result<reqwest::Response, ArtifactError> {
        if expected.contains(&response.status()) {
            return Ok(response);
        }
        let status = response.status();
        let said = read_capped(response, MAX_ERROR_BYTES)
            .await
            .map(|body| String::from_utf8_lossy(&body).trim().to_string())
            .unwrap_or_default();
        let hint = if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            " (credentials: SCOUT_REGISTRY_USERNAME and SCOUT_REGISTRY_PASSWORD, or `docker login`)"
        } else {
            ""
        };
        Err(self.failed(format!("{status}{hint} {said}").trim().to_string()))
    }

    /// The body, refused once past `limit`: a declared length past it is
    /// refused before anything is read, and no more than `limit + 1` bytes
    /// are read otherwise.
    async fn read(
        &self,
        response: reqwest::Response,
        limit: u64,
        what: &'static str,
    ) -> Result<Vec<u8>, ArtifactError> {
        read_capped(response, limit).await.map_err(|e| match e {
            Read::TooLarge => ArtifactError::TooLarge {
                reference: self.shown.clone(),
                what,
                limit,
            },
            Read::Failed(e) => self.failed(error_text(&e)),
        })
    }

    /// Sends one request to the registry: once more with a credential when
    /// the registry asks for one (a bearer token from the endpoint it
    /// names, or basic credentials), following redirects for GET and HEAD.
    async fn request(
        &self,
        method: Method,
        url: Url,
        accept: Option<&str>,
        body: Option<Body>,
    ) -> Result<reqwest::Response, ArtifactError> {
        let mut asked = false;
        loop {
            let authorization = self.authorization.lock().clone();
            let sent_with = authorization.clone();
            let credential = authorization.map(|value| (value, self.base.clone()));
            let response = self
                .follow(
                    method.clone(),
                    url.clone(),
                    accept,
                    body.clone(),
                    credential,
                )
                .await?;
            if response.status() != StatusCode::UNAUTHORIZED || asked {
                return Ok(response);
            }
            let Some(challenge) = response
                .headers()
                .get(header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
            else {
                return Ok(response);
            };
            asked = true;
            // Another request may have had a token meanwhile.
            if *self.authorization.lock() != sent_with {
                continue;
            }
            let value = self.authenticate(&challenge).await?;
            *self.authorization.lock() = Some(value);
        }
    }

    /// The `Authorization` a challenge asks for.
    async fn authenticate(&self, challenge: &str) -> Result<HeaderValue, ArtifactError> {
        let (scheme, params) = parse_challenge(challenge);
        let basic = match &self.credential {
            RegistryAuth::Basic(user, password) => {
                use base64::Engine;
                let pair =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                HeaderValue::from_str(&format!("Basic {pair}")).ok()
            }
            _ => None,
        };
        if scheme.eq_ignore_ascii_case("basic") {
            return basic.ok_or_else(|| {
                self.failed("the registry asks for credentials: set SCOUT_REGISTRY_USERNAME and SCOUT_REGISTRY_PASSWORD, or `docker login` it".into())
            });
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(self.failed(format!(
                "the registry asks for `{scheme}` authentication, which the host does not speak"
            )));
        }
        let realm = params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("realm"))
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| self.failed("a bearer challenge with no realm".into()))?;
        let mut realm = self
            .base
            .join(realm)
            .map_err(|e| self.failed(format!("a token endpoint `{realm}` that is no URL: {e}")))?;
        // The token endpoint is a hop from the registry: no downgrade.
        check_hop(&self.base, &realm).map_err(|why| self.redirect_refused(&realm, why))?;
        for (key, value) in &params {
            if key.eq_ignore_ascii_case("service") || key.eq_ignore_ascii_case("scope") {
                realm
                    .query_pairs_mut()
                    .append_pair(&key.to_ascii_lowercase(), value);
            }
        }
        // The registry's credential goes to the token endpoint it names
        // (the protocol's handshake), and never further along a redirect.
        let credential = basic.map(|value| (value, realm.clone()));
        let response = self
            .follow(Method::GET, realm, None, None, credential)
            .await?;
        let response = self.expect(response, &[StatusCode::OK]).await?;
        let answer = self.read(response, MAX_TOKEN_BYTES, "token answer").await?;
        let answer: serde_json::Value = serde_json::from_slice(&answer)
            .map_err(|e| self.failed(format!("the token endpoint answered no JSON: {e}")))?;
        let token = answer["token"]
            .as_str()
            .or(answer["access_token"].as_str())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| self.failed("the token endpoint answered no token".into()))?;
        HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            self.failed("the token endpoint answered a token no header can carry".into())
        })
    }

    /// One request and the redirects it leads to (GET and HEAD only; a
    /// redirect of anything else is answered to the caller as it is), each
    /// hop checked; `credential` is sent only to its own origin.
    async fn follow(
        &self,
        method: Method,
        mut url: Url,
        accept: Option<&str>,
        body: Option<Body>,
        credential: Option<(HeaderValue, Url)>,
    ) -> Result<reqwest::Response, ArtifactError> {
        let mut hops = 0;
        loop {
            let client = self.client_for(&url, hops > 0)?;
            let mut request = client.request(method.clone(), url.clone());
            if let Some(accept) = accept {
                request = request.header(header::ACCEPT, accept);
            }
            if let Some((value, origin)) = &credential
                && url.origin() == origin.origin()
            {
                request = request.header(header::AUTHORIZATION, value.clone());
            }
            if let Some(body) = &body {
                request = request
                    .header(header::CONTENT_TYPE, body.content_type)
                    .body(body.bytes.clone());
            }
            let response = request
                .send()
                .await
                .map_err(|e| self.transport(&url, hops > 0, e))?;
            if !response.status().is_redirection()
                || !(method == Method::GET || method == Method::HEAD)
            {
                return Ok(response);
            }
            let Some(next) = location(&url, &response) else {
                return Ok(response);
            };
            check_hop(&url, &next).map_err(|why| self.redirect_refused(&next, why))?;
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(
                    self.redirect_refused(&next, format!("more than {MAX_REDIRECTS} redirects"))
                );
            }
            url = next;
        }
    }

    /// The client for `url`: the open one only for an origin allowed a
    /// private network, after an address written in the URL is checked
    /// (no resolver sees one).
    fn client_for(&self, url: &Url, redirected: bool) -> Result<&reqwest::Client, ArtifactError> {
        let allowed = if url.origin() == self.base.origin() {
            self.registry_allowed
        } else {
            self.private_network.iter().any(|r| *r == authority(url))
        };
        if allowed {
            return Ok(&self.open);
        }
        match literal_denied(url) {
            Some(why) => Err(self.refused(url, redirected, why)),
            None => Ok(&self.guarded),
        }
    }

    /// A failed exchange with `url`: the address guard's refusal as such.
    fn transport(&self, url: &Url, redirected: bool, error: reqwest::Error) -> ArtifactError {
        match refused_by_guard(&error) {
            Some(why) => self.refused(url, redirected, why),
            None => self.failed(error_text(&error)),
        }
    }

    fn refused(&self, url: &Url, redirected: bool, why: String) -> ArtifactError {
        if redirected || url.origin() != self.base.origin() {
            self.redirect_refused(url, why)
        } else {
            ArtifactError::Refused {
                registry: authority(url),
                why,
            }
        }
    }

    fn redirect_refused(&self, to: &Url, why: String) -> ArtifactError {
        ArtifactError::Redirect {
            reference: self.shown.clone(),
            to: format!("{}://{}", to.scheme(), authority(to)),
            why,
        }
    }
}

/// `HOST[:PORT]` of `url`, as an allowance names it.
fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// Where a redirect (or an upload) points, resolved against `url`.
fn location(url: &Url, response: &reqwest::Response) -> Option<Url> {
    let location = response.headers().get(header::LOCATION)?.to_str().ok()?;
    url.join(location).ok()
}

/// Whether a request may go on from `from` to `to`: over http or https
/// only, and never from https down to plain http (the addresses are
/// checked when `to` is sent).
pub(crate) fn check_hop(from: &Url, to: &Url) -> Result<(), String> {
    match (from.scheme(), to.scheme()) {
        (_, "https") | ("http", "http") => Ok(()),
        ("https", "http") => Err("a redirect from https down to plain http".into()),
        (_, other) => Err(format!("`{other}:` is not http or https")),
    }
}

/// Why a body could not be read.
enum Read {
    TooLarge,
    Failed(reqwest::Error),
}

/// At most `limit` bytes of `response`'s body: a declared length past it is
/// refused before the body is read; otherwise reading stops at the first
/// chunk past it, and the connection is dropped unread.
async fn read_capped(mut response: reqwest::Response, limit: u64) -> Result<Vec<u8>, Read> {
    if response.content_length().is_some_and(|len| len > limit) {
        return Err(Read::TooLarge);
    }
    let reserve = response.content_length().unwrap_or(0).min(1 << 20);
    let mut body = Vec::with_capacity(reserve as usize);
    while let Some(chunk) = response.chunk().await.map_err(Read::Failed)? {
        if body.len() as u64 + chunk.len() as u64 > limit {
            return Err(Read::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An error and its sources, without its URL (which could carry a query).
fn error_text(error: &reqwest::Error) -> String {
    let mut text = if error.is_timeout() {
        "timed out".to_string()
    } else {
        let mut text = String::new();
        let mut source: Option<&dyn std::error::Error> = Some(error);
        while let Some(s) = source {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&s.to_string());
            source = s.source();
        }
        text
    };
    if let Some(url) = error.url() {
        text = text.replace(url.as_str(), &authority(url).to_string());
    }
    text
}

/// `SCHEME k="v", k2="v2"` of a `WWW-Authenticate` header.
fn parse_challenge(header: &str) -> (String, Vec<(String, String)>) {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    let mut params = Vec::new();
    let mut rest = rest.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key.trim().trim_start_matches(',').trim().to_string();
        let after = after.trim_start();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        params.push((key, value));
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    (scheme.to_string(), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hop_never_goes_from_https_down_to_http() {
        let url = |s: &str| Url::parse(s).unwrap();
        let https = url("https://registry.example/v2/x/blobs/sha256:ab");
        let http = url("http://registry.example:5000/v2/x/blobs/sha256:ab");
        assert!(check_hop(&https, &url("https://cdn.example/blob")).is_ok());
        assert!(check_hop(&http, &url("https://cdn.example/blob")).is_ok());
        assert!(check_hop(&http, &url("http://cdn.example/blob")).is_ok());
        let refused = check_hop(&https, &url("http://169.254.169.254/latest")).unwrap_err();
        assert!(refused.contains("https down to plain http"), "{refused}");
        assert!(check_hop(&https, &url("ftp://cdn.example/blob")).is_err());
        assert!(check_hop(&http, &url("file:///etc/passwd")).is_err());
    }

    #[test]
    fn a_bearer_challenge_is_read_with_its_quoted_scope() {
        let (scheme, params) = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(scheme, "Bearer");
        assert_eq!(
            params,
            [
                (
                    "realm".to_string(),
                    "https://auth.example/token".to_string()
                ),
                ("service".to_string(), "registry.example".to_string()),
                ("scope".to_string(), "repository:a/b:pull,push".to_string()),
            ]
        );
        let (scheme, params) = parse_challenge(r#"Basic realm="Registry Realm""#);
        assert_eq!(scheme, "Basic");
        assert_eq!(params[0].1, "Registry Realm");
    }

    #[test]
    fn an_allowance_names_a_host_and_its_port() {
        assert_eq!(
            authority(&Url::parse("http://127.0.0.1:5000/v2/").unwrap()),
            "127.0.0.1:5000"
        );
        assert_eq!(
            authority(&Url::parse("https://ghcr.io/v2/").unwrap()),
            "ghcr.io"
        );
        assert_eq!(
            authority(&Url::parse("http://[::1]:5000/").unwrap()),
            "[::1]:5000"
        );
    }
}
