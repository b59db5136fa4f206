//! A guest request checked and built before anything is sent: the path
//! rules (no authority change, no escape from the origin's prefix, one
//! plain segment per template parameter), the headers a guest may not set,
//! and the credential injected by the host.

use super::config::CredentialScheme;
use super::config::MAX_HEADERS;
use super::{Credential, HttpError, Method, Request};
use super::{HttpCapability, PreparedRequest};
use crate::capabilities::encoding;
use crate::capabilities::path::validate_path_allowing;
use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

impl HttpCapability {
    /// Checks a guest request and builds what would be sent, without
    /// sending anything: every refusal of [`HttpCapability::send`] happens here.
    pub fn prepare(&self, req: &Request) -> Result<PreparedRequest, HttpError> {
        self.prepare_with(req, &[])
    }

    /// [`HttpCapability::prepare`], letting the segments at `encoded` (a
    /// route's `{name:encoded}` parameters) hold a percent-encoded `/`.
    pub(super) fn prepare_with(
        &self,
        req: &Request,
        encoded: &[usize],
    ) -> Result<PreparedRequest, HttpError> {
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
            if carries_authority(name.as_str()) || self.withheld.contains(&name) {
                self.dropped_headers
                    .lock()
                    .insert(name.as_str().to_string());
                continue;
            }
            let value = HeaderValue::from_str(value).map_err(|_| {
                HttpError::Denied(format!("the value of header `{name}` is not valid"))
            })?;
            headers.append(name, value);
        }
        for (name, value) in &self.injected {
            headers.insert(name.clone(), value.clone());
        }
        Ok(headers)
    }
}

/// What the host injects into every request of a destination, and the
/// names a guest may not send to it besides [`carries_authority`]: computed
/// once per handle, not per request. The values were validated with the
/// configuration, so one that would not parse is left out, never sent
/// half-built.
pub(super) fn injected_headers(
    credential: Option<&Credential>,
    secret_headers: &[(HeaderName, String)],
    strip_headers: &[HeaderName],
) -> (Vec<(HeaderName, HeaderValue)>, Vec<HeaderName>) {
    let sensitive = |value: &str| {
        HeaderValue::from_str(value).ok().map(|mut v| {
            v.set_sensitive(true);
            v
        })
    };
    let mut injected = vec![(
        http::header::ACCEPT_ENCODING,
        HeaderValue::from_static(encoding::ACCEPT_ENCODING),
    )];
    let mut withheld = strip_headers.to_vec();
    for (name, value) in secret_headers {
        withheld.push(name.clone());
        injected.extend(sensitive(value).map(|v| (name.clone(), v)));
    }
    if let Some(cred) = credential {
        let header = match &cred.scheme {
            CredentialScheme::Bearer => Some((
                http::header::AUTHORIZATION,
                format!("Bearer {}", cred.secret.0),
            )),
            CredentialScheme::Basic { username } => Some((
                http::header::AUTHORIZATION,
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD
                        .encode(format!("{username}:{}", cred.secret.0))
                ),
            )),
            CredentialScheme::Header { name } => HeaderName::from_bytes(name.as_bytes())
                .ok()
                .map(|name| (name, cred.secret.0.clone())),
            CredentialScheme::Query { .. } => None,
        };
        if let Some((name, value)) = header {
            if !carries_authority(name.as_str()) {
                withheld.push(name.clone());
            }
            injected.extend(sensitive(&value).map(|v| (name, v)));
        }
    }
    (injected, withheld)
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

#[cfg(test)]
mod tests {
    use super::super::config::HttpConfig;
    use super::*;

    /// A header the host owns is dropped and remembered for the author;
    /// the guest's own headers are sent and not reported.
    #[test]
    fn a_header_the_host_owns_is_dropped_and_reported() {
        let http = HttpCapability::new(HttpConfig::new("https://api.example.com")).unwrap();
        let request = Request {
            method: Method::Get,
            path: "/items".to_string(),
            query: Vec::new(),
            headers: vec![
                ("Authorization".to_string(), "Bearer guest".to_string()),
                ("Notion-Version".to_string(), "2022-06-28".to_string()),
                ("Content-Length".to_string(), "3".to_string()),
            ],
            body: None,
        };
        let prepared = http.prepare(&request).unwrap();
        assert!(prepared.headers.get("authorization").is_none());
        assert_eq!(prepared.headers["notion-version"], "2022-06-28");
        assert_eq!(http.dropped_headers(), ["authorization", "content-length"]);
    }
}
