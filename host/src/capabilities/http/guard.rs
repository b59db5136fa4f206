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
