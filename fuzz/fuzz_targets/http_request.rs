//! The HTTP capability's request checks (`HttpCapability::prepare`: path,
//! query and header validation and credential injection), on arbitrary
//! guest requests. Nothing is sent.
//!
//! Input: a request whose path is built from tricky pieces (dot segments raw
//! and encoded, `;`, `//`, `@`, `%2F`, ...) or raw bytes, with query pairs and
//! headers drawn from the names that matter (authority, credential,
//! forwarding, hop-by-hop) and arbitrary ones. Checked against three
//! destinations (header, bearer and query credentials), whenever a request
//! is accepted: the URL keeps the origin's scheme, host and port and stays
//! below its path prefix, has no dot segment, `;` or `%3B`; the credential is
//! present exactly once with the configured value; no guest value survives
//! under a header that carries authority, credentials or routing, or under
//! the credential's query parameter; the guest's other headers and query
//! pairs arrive unchanged. These are what stop a hostile connector from
//! reaching another origin or path, or stealing or spoofing the credential.

#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use scout_host::capabilities::encoding::ACCEPT_ENCODING;
use scout_host::capabilities::http::{Method, Request, carries_authority};
use scout_host::{CredentialScheme, HttpCapability, HttpConfig, SecretSource};
use std::sync::{Arc, OnceLock};

const ORIGIN: &str = "https://api.example.com/prefix";
const SECRET: &str = "fuzz-secret-0123456789abcdef";
const HEADER: &str = "x-api-key";
const PARAM: &str = "api_key";

/// Path pieces that have broken path checks somewhere.
const PIECES: &[&str] = &[
    "/", "//", "a", "prefix", ".", "..", "%2e", "%2E", "%2e%2e", ".%2E", "%2f", "%2F", "%5c", "\\", ";", "%3b", "%3B", "..;",
    "@", "%40", "?", "#", "*", "%", "%0", "%00", "%1f", "%7f", "%25", "%252e", "~", ":", "http:", "https://evil.example",
    "evil.example", "%20", " ", "\t", "\u{ff0e}", "\u{2025}", "é", "%c3%a9", "%ff", "-", "_", "+", "!", "$", "&", "'", "(",
    "=", ",", "[", "]", "{", "}", "|", "^", "`", "\"", "<", ">",
];

/// Header names that matter, in mixed case.
const HEADERS: &[&str] = &[
    "host", "Host", "authorization", "AUTHORIZATION", "cookie", "cookie2", "proxy-authorization", "Proxy-Connection",
    "x-forwarded-for", "X-Forwarded-Host", "forwarded", "x-original-url", "x-rewrite-url", "http2-settings", "x-api-key",
    "X-Api-Key", "x-auth-token", "api-key", "apikey", "x-access-token", "accept-encoding", "content-length",
    "transfer-encoding", "connection", "te", "upgrade", "via", "referer", "x-http-method-override", "accept",
    "content-type", "user-agent", "x-custom", "x-api-key ", " x-api-key", "x_api_key", "", "bad name", "é",
];

/// Query names that matter.
const QUERY: &[&str] = &[PARAM, "API_KEY", "api_key ", "api%5Fkey", "api_key[]", "q", "", "&", "=", "a=b", "#", "é"];

/// The headers no guest value may appear under, lowercase: the capability's
/// own list plus those this target names explicitly (a safety net should
/// the list shrink).
fn guarded(name: &str) -> bool {
    carries_authority(name)
        || matches!(
            name,
            "host"
                | "authorization"
                | "cookie"
                | "forwarded"
                | "x-original-url"
                | "x-rewrite-url"
                | "http2-settings"
                | "x-api-key"
                | "x-auth-token"
                | "api-key"
                | "x-access-token"
                | "accept-encoding"
        )
        || name.starts_with("proxy-")
        || name.starts_with("x-forwarded-")
}

#[derive(Clone, Copy, PartialEq)]
enum Cred {
    Header,
    Bearer,
    Query,
}

fn caps() -> &'static [(Cred, Arc<HttpCapability>)] {
    static CAPS: OnceLock<Vec<(Cred, Arc<HttpCapability>)>> = OnceLock::new();
    CAPS.get_or_init(|| {
        let secret = || SecretSource::Value(SECRET.into());
        let build = |scheme| HttpCapability::new(HttpConfig::new(ORIGIN).credential(scheme, secret())).expect("the fuzz origin is valid");
        vec![
            (Cred::Header, build(CredentialScheme::Header { name: HEADER.into() })),
            (Cred::Bearer, build(CredentialScheme::Bearer)),
            (Cred::Query, build(CredentialScheme::Query { param: PARAM.into() })),
        ]
    })
}

fn text(u: &mut Unstructured, pool: &[&str]) -> Result<String> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => String::arbitrary(u)?,
        1 => format!("{}{}", u.choose(pool)?, u.choose(pool)?),
        _ => u.choose(pool)?.to_string(),
    })
}

fn request(u: &mut Unstructured) -> Result<Request> {
    let method = *u.choose(&[Method::Get, Method::Head, Method::Post, Method::Put, Method::Patch, Method::Delete])?;
    let path = if u.ratio(1, 8)? {
        String::arbitrary(u)?
    } else {
        let n = u.int_in_range(0..=8)?;
        let mut p = String::from("/");
        for _ in 0..n {
            p.push_str(u.choose(PIECES)?);
        }
        p
    };
    let mut query = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        query.push((text(u, QUERY)?, text(u, QUERY)?));
    }
    let mut headers = Vec::new();
    for _ in 0..u.int_in_range(0..=6)? {
        let value = if u.ratio(1, 4)? { SECRET.to_string() } else { text(u, &["v", "Bearer x", SECRET, "gzip", "\r\nx: y", "é"])? };
        headers.push((text(u, HEADERS)?, value));
    }
    let body = if u.arbitrary()? { Some(Vec::<u8>::arbitrary(u)?) } else { None };
    Ok(Request { method, path, query, headers, body })
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(req) = request(&mut u) else { return };
    for (cred, cap) in caps() {
        let Ok(prepared) = cap.prepare(&req) else { continue };
        let url = prepared.url();
        let what = format!("path {:?} -> {url}", req.path);

        // The origin and the prefix.
        assert_eq!(url.scheme(), "https", "origin: scheme changed: {what}");
        assert_eq!(url.host_str(), Some("api.example.com"), "origin: host changed: {what}");
        assert_eq!(url.port_or_known_default(), Some(443), "origin: port changed: {what}");
        assert!(url.username().is_empty() && url.password().is_none(), "origin: userinfo appeared: {what}");
        assert!(url.fragment().is_none(), "origin: fragment appeared: {what}");
        assert!(url.path().starts_with("/prefix/"), "prefix: the path left /prefix/: {what}");
        assert_eq!(url.path(), format!("/prefix{}", req.path), "prefix: the path was rewritten: {what}");
        assert!(!url.path().contains("//"), "path: empty segment: {what}");
        for segment in url.path().split('/').skip(1) {
            let decoded = percent_decode(segment);
            assert!(decoded != b"." && decoded != b"..", "path: dot segment {segment:?}: {what}");
            let lower = segment.to_ascii_lowercase();
            assert!(!segment.contains(';') && !lower.contains("%3b"), "path: `;` in segment {segment:?}: {what}");
        }

        // The headers.
        let headers = prepared.headers();
        for (name, value) in headers {
            if guarded(name.as_str()) {
                let own = match name.as_str() {
                    "accept-encoding" => value == ACCEPT_ENCODING,
                    "authorization" => *cred == Cred::Bearer && value == format!("Bearer {SECRET}").as_str(),
                    HEADER => *cred == Cred::Header && value == SECRET,
                    _ => false,
                };
                assert!(own, "headers: guest or unexpected value under `{name}`: {value:?} ({what})");
            }
        }
        assert_eq!(headers.get_all("accept-encoding").iter().count(), 1, "headers: accept-encoding not exactly once");
        match cred {
            Cred::Header => {
                let values: Vec<_> = headers.get_all(HEADER).iter().collect();
                assert!(values.len() == 1 && values[0] == SECRET, "credential: `{HEADER}` not exactly once with the secret: {}", values.len());
                assert!(headers.get("authorization").is_none(), "credential: authorization present with a header credential");
            }
            Cred::Bearer => {
                let values: Vec<_> = headers.get_all("authorization").iter().collect();
                assert!(values.len() == 1 && values[0] == format!("Bearer {SECRET}").as_str(), "credential: authorization not exactly once");
                assert!(headers.get(HEADER).is_none(), "credential: `{HEADER}` present with a bearer credential");
            }
            Cred::Query => {
                assert!(headers.get("authorization").is_none() && headers.get(HEADER).is_none(), "credential: a credential header with a query credential");
            }
        }
        // The guest's own headers pass unchanged.
        for (name, value) in &req.headers {
            let lower = name.to_ascii_lowercase();
            if guarded(&lower) {
                continue;
            }
            assert!(
                headers.get_all(lower.as_str()).iter().any(|v| v.as_bytes() == value.as_bytes()),
                "headers: guest header `{name}: {value:?}` was lost or changed"
            );
        }

        // The query.
        let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        if *cred == Cred::Query {
            let (cred_pairs, guest_pairs): (Vec<_>, Vec<_>) = pairs.into_iter().partition(|(k, _)| k == PARAM);
            let expected: Vec<(String, String)> = req.query.iter().filter(|(k, _)| k != PARAM).cloned().collect();
            assert_eq!(guest_pairs, expected, "query: the guest's pairs changed: {what}");
            assert!(
                cred_pairs.len() == 1 && cred_pairs[0].1 == SECRET,
                "query: `{PARAM}` not exactly once with the secret (a guest pair survived?): {what}"
            );
        } else {
            assert_eq!(pairs, req.query, "query: the guest's pairs changed: {what}");
        }
        assert_eq!(prepared.body(), req.body.as_deref().unwrap_or_default(), "body: changed");
    }
});
