//! Record and replay of the `http` capability (DESIGN D9).
//!
//! Connector tests must be fast, deterministic and offline, and must still
//! exercise the real host: the same path rules, header stripping and size caps
//! as a live call. So an [`HttpCapability`](super::http::HttpCapability) in
//! replay mode runs [`prepare`](super::http::HttpCapability::prepare) exactly as
//! live, and then answers from fixtures instead of the network: it holds no
//! network client at all (no `reqwest::Client`, no resolver), so it cannot
//! send. In record mode it runs live and appends each completed exchange,
//! already scrubbed of the secret, to the tool's fixture file (`TOOL.json`,
//! created at the first), with the origin it went to and the response body
//! byte for byte. The file is marked `CAPTURED` only while every exchange
//! in it was answered from a public address; one answered from a loopback
//! or private address (a local fake, a mirror) makes it `UNVERIFIED`.
//!
//! # Fixture files
//!
//! One JSON file holds one or more exchanges:
//!
//! ```json
//! {"provenance": "UNVERIFIED",
//!  "source": "https://docs.github.com/en/rest/repos/contents#get-repository-content",
//!  "exchanges": [
//!    {"request": {"method": "GET", "path": "/repos/o/r/contents/README.md", "query": [["ref", "main"]]},
//!     "response": {"status": 200, "headers": [["content-type", "application/json"]], "json": {"name": "README.md"}}}]}
//! ```
//!
//! - `provenance` is required: `CAPTURED` (recorded from the real service)
//!   needs `captured_at`, a `YYYY-MM-DD` date (UTC); `UNVERIFIED` (written by
//!   hand) needs `source`, the vendor documentation it follows. A file
//!   without provenance, with an unknown field or otherwise malformed is
//!   refused with an error naming the file (and the exchange).
//! - `request`: `method` (GET, HEAD, POST, PUT, PATCH, DELETE), `path` (the
//!   guest's path, below the origin; it must pass the live path rules),
//!   `origin` (where a recording went; for the reader, never matched),
//!   `query` (pairs; default none), and optionally the body as `json`,
//!   `text` or `base64`.
//! - `response`: `status`, `headers` (pairs; default none), and the body as
//!   `json` (served compact, with `content-type: application/json` added when
//!   the headers name no content type), `text` or `base64` (default empty).
//!   Framing headers (`content-length`, `transfer-encoding`, `connection`,
//!   `keep-alive`) are not served, and are not recorded, nor is `date`.
//!
//! # Matching
//!
//! A request matches an exchange when the method and the path are equal,
//! the query parameters are equal as a multiset (order does not matter,
//! repeats do), and, only when the fixture gives a body, the bodies are equal
//! (`json` compared as JSON values, so key order and spacing do not matter;
//! a GraphQL body, `{"query", "variables", ...}`, by its document's tokens
//! and its variables, so the document's layout, commas and comments do not
//! matter either; `text` and `base64` byte for byte). Exchanges are considered in load order
//! (files in the order given, exchanges in file order). A request is
//! answered by the first matching exchange that has not answered yet; once
//! every matching exchange has answered, the last of them answers again. So
//! a sequence (a branch read before and after a commit) is written as
//! several exchanges in order, and a read repeated any number of times needs
//! one. A request nothing matches is refused to the guest as
//! `denied("replay: no fixture matches GET /x?a=1")`, and remembered
//! ([`Replay::misses`]) so that a test can fail on it; where fixtures
//! differ from it only by body, the miss also shows the body sent beside
//! the closest fixture's.

use super::bindings::http::{HttpError, Method, Request, Response};
use crate::capabilities::path::validate_path_allowing;
use crate::capabilities::scrub::Scrubber;
use base64::Engine as _;
use parking_lot::Mutex;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Why fixtures could not be read or written. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The file could not be read.
    #[error("fixture {path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// The file is not a fixture file (not JSON, unknown field, wrong type).
    #[error("fixture {path}: malformed: {message}")]
    Malformed { path: String, message: String },
    /// The file does not say where its exchanges come from.
    #[error("fixture {path}: provenance: {message}")]
    Provenance { path: String, message: String },
    /// One exchange is not usable.
    #[error("fixture {path}: exchange {index}: {message}")]
    Exchange {
        path: String,
        index: usize,
        message: String,
    },
    /// A recorded exchange could not be written.
    #[error("fixture {path}: cannot write: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Where a fixture file's exchanges come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provenance {
    /// Recorded from the real service on this date (`YYYY-MM-DD`, UTC).
    Captured { captured_at: String },
    /// Written by hand from the vendor's documentation at `source`.
    Unverified { source: String },
}

/// A body in a fixture: JSON, text or base64 bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A JSON value (compared as a value, served compact).
    Json(Value),
    /// UTF-8 text.
    Text(String),
    /// Any bytes.
    Bytes(Vec<u8>),
}

impl Body {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Body::Json(v) => serde_json::to_vec(v).unwrap_or_default(),
            Body::Text(t) => t.as_bytes().to_vec(),
            Body::Bytes(b) => b.clone(),
        }
    }

    /// The most readable form of `bytes` that replays them byte for byte:
    /// JSON only when they are exactly the compact JSON replay would serve,
    /// text when UTF-8, else base64.
    fn exact(bytes: &[u8]) -> Option<Body> {
        if bytes.is_empty() {
            return None;
        }
        if let Ok(v) = serde_json::from_slice::<Value>(bytes)
            && serde_json::to_vec(&v).is_ok_and(|compact| compact == bytes)
        {
            return Some(Body::Json(v));
        }
        match std::str::from_utf8(bytes) {
            Ok(t) => Some(Body::Text(t.to_string())),
            Err(_) => Some(Body::Bytes(bytes.to_vec())),
        }
    }

    /// The most readable faithful form of `bytes`: JSON when they parse as
    /// JSON and `json_hint` (a JSON content type) says so, text when UTF-8,
    /// else base64.
    fn of(bytes: &[u8], json_hint: bool) -> Option<Body> {
        if bytes.is_empty() {
            return None;
        }
        if json_hint && let Ok(v) = serde_json::from_slice::<Value>(bytes) {
            return Some(Body::Json(v));
        }
        match std::str::from_utf8(bytes) {
            Ok(t) => Some(Body::Text(t.to_string())),
            Err(_) => Some(Body::Bytes(bytes.to_vec())),
        }
    }

    fn matches(&self, got: &[u8]) -> bool {
        match self {
            Body::Json(want) => serde_json::from_slice::<Value>(got)
                .is_ok_and(|v| &v == want || same_graphql_request(want, &v)),
            Body::Text(t) => t.as_bytes() == got,
            Body::Bytes(b) => b == got,
        }
    }
}

/// A request body as an author reads it beside a fixture's: compact JSON
/// when it is JSON, else its text, cut at [`SHOWN_BODY_CHARS`].
fn shown_body(bytes: &[u8]) -> String {
    let text = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => v.to_string(),
        Err(_) if bytes.is_empty() => "(none)".to_string(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    };
    match text.char_indices().nth(SHOWN_BODY_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], bytes.len()),
        None => text,
    }
}

/// How much of a body a miss shows.
const SHOWN_BODY_CHARS: usize = 600;

/// How many leading characters `a` and `b` share.
fn common_prefix(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// Whether two GraphQL-over-HTTP bodies (`{"query", "variables",
/// "operationName"}`) ask the same: the documents equal token for token
/// (whitespace, commas and comments aside), the variables equal as JSON (a
/// missing one as `null`), and every other field equal. A fixture written
/// by hand need not repeat the guest's layout of its document.
fn same_graphql_request(want: &Value, got: &Value) -> bool {
    let (Some(want), Some(got)) = (want.as_object(), got.as_object()) else {
        return false;
    };
    let (Some(want_doc), Some(got_doc)) = (
        want.get("query").and_then(Value::as_str),
        got.get("query").and_then(Value::as_str),
    ) else {
        return false;
    };
    let same_doc = match (graphql_tokens(want_doc), graphql_tokens(got_doc)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    let keys: std::collections::BTreeSet<&String> = want
        .keys()
        .chain(got.keys())
        .filter(|k| *k != "query")
        .collect();
    same_doc
        && keys.into_iter().all(|k| {
            let (a, b) = (
                want.get(k).unwrap_or(&Value::Null),
                got.get(k).unwrap_or(&Value::Null),
            );
            a == b
        })
}

/// A GraphQL document's significant tokens; `None` if it does not parse.
fn graphql_tokens(document: &str) -> Option<Vec<String>> {
    use apollo_parser::SyntaxKind;
    use apollo_parser::cst::CstNode;
    let tree = apollo_parser::Parser::new(document).parse();
    if tree.errors().next().is_some() {
        return None;
    }
    Some(
        tree.document()
            .syntax()
            .descendants_with_tokens()
            .filter_map(|element| element.into_token())
            .filter(|t| {
                !matches!(
                    t.kind(),
                    SyntaxKind::WHITESPACE | SyntaxKind::COMMA | SyntaxKind::COMMENT
                )
            })
            .map(|t| t.text().to_string())
            .collect(),
    )
}

/// One recorded or written exchange.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// The named destination it went to (`None`: the connector's own origin).
    pub destination: Option<String>,
    /// Where a recorded exchange went (`https://api.example.com`), for the
    /// reader; replay never matches on it.
    pub origin: Option<String>,
    /// The request's method, upper case.
    pub method: String,
    /// The guest's path.
    pub path: String,
    /// Query pairs.
    pub query: Vec<(String, String)>,
    /// The request body, when the fixture constrains it.
    pub body: Option<Body>,
    /// The response's status.
    pub status: u16,
    /// The response's headers.
    pub headers: Vec<(String, String)>,
    /// The response's body.
    pub response_body: Option<Body>,
}

/// A parsed fixture file.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Where its exchanges come from.
    pub provenance: Provenance,
    /// Free text for the reader.
    pub note: Option<String>,
    /// Its exchanges, in order.
    pub exchanges: Vec<Exchange>,
}

// ----- the file format ------------------------------------------------------

/// `Some(value)` even for `null`, so that `"json": null` is a body.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provenance: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    captured_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    /// Free text for the reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    exchanges: Vec<RawExchange>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExchange {
    request: RawRequest,
    response: RawResponse,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBody {
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    json: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base64: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    destination: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<String>,
    method: String,
    path: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    query: Vec<(String, String)>,
    #[serde(flatten)]
    body: RawBody,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResponse {
    status: u16,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    headers: Vec<(String, String)>,
    #[serde(flatten)]
    body: RawBody,
}

impl RawBody {
    fn parse(self) -> Result<Option<Body>, String> {
        match (self.json, self.text, self.base64) {
            (None, None, None) => Ok(None),
            (Some(v), None, None) => Ok(Some(Body::Json(v))),
            (None, Some(t), None) => Ok(Some(Body::Text(t))),
            (None, None, Some(b)) => base64::engine::general_purpose::STANDARD
                .decode(b.as_bytes())
                .map(|b| Some(Body::Bytes(b)))
                .map_err(|e| format!("`base64` is not standard base64: {e}")),
            _ => Err("give the body as one of `json`, `text` or `base64`, not several".to_string()),
        }
    }

    fn from(body: &Option<Body>) -> RawBody {
        match body {
            None => RawBody::default(),
            Some(Body::Json(v)) => RawBody {
                json: Some(v.clone()),
                ..RawBody::default()
            },
            Some(Body::Text(t)) => RawBody {
                text: Some(t.clone()),
                ..RawBody::default()
            },
            Some(Body::Bytes(b)) => RawBody {
                base64: Some(base64::engine::general_purpose::STANDARD.encode(b)),
                ..RawBody::default()
            },
        }
    }
}

/// Whether `text` is a `YYYY-MM-DD` calendar date.
fn is_date(text: &str) -> bool {
    crate::dates::is_day(text)
}

const METHODS: [&str; 6] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

impl FixtureFile {
    /// Reads and checks one fixture file.
    pub fn load(path: &Path) -> Result<FixtureFile, FixtureError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| FixtureError::Read {
            path: name.clone(),
            source,
        })?;
        FixtureFile::parse(path, &text)
    }

    /// Parses and checks fixture text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<FixtureFile, FixtureError> {
        let name = path.display().to_string();
        let raw: RawFile = serde_json::from_str(text).map_err(|e| FixtureError::Malformed {
            path: name.clone(),
            message: e.to_string(),
        })?;
        let bad = |message: &str| FixtureError::Provenance {
            path: name.clone(),
            message: message.to_string(),
        };
        let provenance = match raw.provenance.as_deref() {
            None => {
                return Err(bad(
                    "missing: say \"provenance\": \"CAPTURED\" with \"captured_at\" (YYYY-MM-DD), or \"UNVERIFIED\" with \"source\" (the vendor documentation it follows)",
                ));
            }
            Some("CAPTURED") => match raw.captured_at {
                Some(date) if is_date(&date) => Provenance::Captured { captured_at: date },
                Some(date) => {
                    return Err(bad(&format!(
                        "`captured_at` must be a date (YYYY-MM-DD), not `{date}`"
                    )));
                }
                None => {
                    return Err(bad(
                        "CAPTURED needs `captured_at`, the date it was recorded (YYYY-MM-DD)",
                    ));
                }
            },
            Some("UNVERIFIED") => match raw.source {
                Some(source) if !source.trim().is_empty() => Provenance::Unverified { source },
                _ => {
                    return Err(bad(
                        "UNVERIFIED needs `source`, the vendor documentation the exchanges follow",
                    ));
                }
            },
            Some(other) => {
                return Err(bad(&format!(
                    "`{other}` is neither CAPTURED nor UNVERIFIED"
                )));
            }
        };
        if raw.exchanges.is_empty() {
            return Err(FixtureError::Malformed {
                path: name,
                message: "no exchanges".to_string(),
            });
        }
        let mut exchanges = Vec::with_capacity(raw.exchanges.len());
        for (index, ex) in raw.exchanges.into_iter().enumerate() {
            let fail = |message: String| FixtureError::Exchange {
                path: name.clone(),
                index,
                message,
            };
            let method = ex.request.method.to_ascii_uppercase();
            if !METHODS.contains(&method.as_str()) {
                return Err(fail(format!(
                    "method `{}` is not one of {}",
                    ex.request.method,
                    METHODS.join(", ")
                )));
            }
            // A recorded request passed the capability's checks, including a
            // route's `{name:encoded}` segments: any segment may hold `%2F` here.
            let every_segment: Vec<usize> = (0..ex.request.path.split('/').count()).collect();
            validate_path_allowing(&ex.request.path, &every_segment)
                .map_err(|e| fail(format!("path `{}`: {e}", ex.request.path)))?;
            if let Some(d) = &ex.request.destination
                && !scout_manifest::policy::is_destination(d)
            {
                return Err(fail(format!("destination `{d}` is not a destination name")));
            }
            if !(100..=599).contains(&ex.response.status) {
                return Err(fail(format!(
                    "status {} is not an HTTP status",
                    ex.response.status
                )));
            }
            let body = ex
                .request
                .body
                .parse()
                .map_err(|e| fail(format!("request: {e}")))?;
            let response_body = ex
                .response
                .body
                .parse()
                .map_err(|e| fail(format!("response: {e}")))?;
            exchanges.push(Exchange {
                destination: ex.request.destination,
                origin: ex.request.origin,
                method,
                path: ex.request.path,
                query: ex.request.query,
                body,
                status: ex.response.status,
                headers: ex.response.headers,
                response_body,
            });
        }
        Ok(FixtureFile {
            path: path.to_path_buf(),
            provenance,
            note: raw.note,
            exchanges,
        })
    }

    /// The file's JSON text.
    pub fn to_json(&self) -> String {
        let (provenance, captured_at, source) = match &self.provenance {
            Provenance::Captured { captured_at } => ("CAPTURED", Some(captured_at.clone()), None),
            Provenance::Unverified { source } => ("UNVERIFIED", None, Some(source.clone())),
        };
        let raw = RawFile {
            provenance: Some(provenance.to_string()),
            captured_at,
            source,
            note: self.note.clone(),
            exchanges: self
                .exchanges
                .iter()
                .map(|e| RawExchange {
                    request: RawRequest {
                        destination: e.destination.clone(),
                        origin: e.origin.clone(),
                        method: e.method.clone(),
                        path: e.path.clone(),
                        query: e.query.clone(),
                        body: RawBody::from(&e.body),
                    },
                    response: RawResponse {
                        status: e.status,
                        headers: e.headers.clone(),
                        body: RawBody::from(&e.response_body),
                    },
                })
                .collect(),
        };
        let mut text = serde_json::to_string_pretty(&raw).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// The fixture files (`*.json`) in `dir`, sorted by name, `skip` (e.g.
/// `cases.json`) left out.
pub fn fixture_paths(dir: &Path, skip: &[&str]) -> Result<Vec<PathBuf>, FixtureError> {
    let read_err = |source: std::io::Error| FixtureError::Read {
        path: dir.display().to_string(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let path = entry.map_err(read_err)?.path();
        let is_json = path.extension().is_some_and(|e| e == "json");
        let skipped = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| skip.contains(&n));
        if is_json && !skipped && path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

// ----- replay ---------------------------------------------------------------

fn method_name(method: Method) -> &'static str {
    match method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Patch => "PATCH",
        Method::Delete => "DELETE",
    }
}

fn sorted(query: &[(String, String)]) -> Vec<(&str, &str)> {
    let mut q: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    q.sort();
    q
}

/// `GET /x?a=1`, as a refusal names a request.
fn describe(method: &str, path: &str, query: &[(String, String)]) -> String {
    if query.is_empty() {
        return format!("{method} {path}");
    }
    let q: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(query)
        .finish();
    format!("{method} {path}?{q}")
}

/// The exchanges one capability answers from, and which have answered.
/// Build one per call (or per test case): its state is the order of answers.
#[derive(Debug)]
pub struct Replay {
    exchanges: Vec<Exchange>,
    state: Mutex<ReplayState>,
}

#[derive(Debug, Default)]
struct ReplayState {
    used: Vec<u32>,
    misses: Vec<String>,
    answered: usize,
}

impl Replay {
    /// Replays `exchanges` in the order given.
    pub fn new(exchanges: Vec<Exchange>) -> Replay {
        let used = vec![0; exchanges.len()];
        Replay {
            exchanges,
            state: Mutex::new(ReplayState {
                used,
                ..ReplayState::default()
            }),
        }
    }

    /// Replays every exchange of `files`, in order.
    pub fn from_files<'a>(files: impl IntoIterator<Item = &'a FixtureFile>) -> Replay {
        Replay::new(
            files
                .into_iter()
                .flat_map(|f| f.exchanges.iter().cloned())
                .collect(),
        )
    }

    /// Loads `paths` (in order) and replays them.
    pub fn load(paths: &[PathBuf]) -> Result<Replay, FixtureError> {
        let files = paths
            .iter()
            .map(|p| FixtureFile::load(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Replay::from_files(&files))
    }

    /// The requests nothing matched, as refused (`GET /x?a=1`).
    pub fn misses(&self) -> Vec<String> {
        self.state.lock().misses.clone()
    }

    /// How many requests were answered.
    pub fn answered(&self) -> usize {
        self.state.lock().answered
    }

    /// How many exchanges never answered.
    pub fn unused(&self) -> usize {
        self.state.lock().used.iter().filter(|n| **n == 0).count()
    }

    /// The answer to a request that passed the capability's checks, or the
    /// refusal the guest gets. `scrubber` cleans the request's description.
    pub fn answer(&self, req: &Request, scrubber: &Scrubber) -> Result<Response, HttpError> {
        self.answer_for(None, req, scrubber)
    }

    /// [`Replay::answer`] for a request to a named destination.
    pub(crate) fn answer_for(
        &self,
        destination: Option<&str>,
        req: &Request,
        scrubber: &Scrubber,
    ) -> Result<Response, HttpError> {
        let method = method_name(req.method);
        let query = sorted(&req.query);
        let body = req.body.as_deref().unwrap_or_default();
        let mut state = self.state.lock();
        let mut matching = Vec::new();
        let mut body_differs = 0;
        // Of the exchanges that differ only by body, the one whose body
        // shares the longest start with the body sent.
        let sent = shown_body(body);
        let mut closest: Option<(usize, String)> = None;
        for (i, ex) in self.exchanges.iter().enumerate() {
            if ex.destination.as_deref() != destination
                || ex.method != method
                || ex.path != req.path
                || sorted(&ex.query) != query
            {
                continue;
            }
            match &ex.body {
                Some(want) if !want.matches(body) => {
                    body_differs += 1;
                    let fixture = shown_body(&want.bytes());
                    let shared = common_prefix(&sent, &fixture);
                    if closest.as_ref().is_none_or(|(best, _)| shared > *best) {
                        closest = Some((shared, fixture));
                    }
                }
                _ => matching.push(i),
            }
        }
        let chosen = matching
            .iter()
            .copied()
            .find(|i| state.used[*i] == 0)
            .or(matching.last().copied());
        let Some(i) = chosen else {
            let to = destination
                .map(|d| format!(" to `{d}`"))
                .unwrap_or_default();
            let mut reason = format!(
                "replay: no fixture matches {}{to}",
                scrubber.scrub_text(&describe(method, &req.path, &req.query))
            );
            if body_differs > 0 {
                reason.push_str(&format!(
                    " ({body_differs} match method, path and query but not the body)"
                ));
            }
            // The author (`test`, `call --replay`) sees the two bodies side
            // by side; the guest gets the reason alone.
            let miss = match &closest {
                Some((_, fixture)) => format!(
                    "{reason}\n    body sent:        {}\n    closest fixture:  {}",
                    scrubber.scrub_text(&sent),
                    scrubber.scrub_text(fixture)
                ),
                None => reason.clone(),
            };
            state.misses.push(miss);
            return Err(HttpError::Denied(reason));
        };
        state.used[i] += 1;
        state.answered += 1;
        let ex = &self.exchanges[i];
        let mut headers: Vec<(String, String)> = ex
            .headers
            .iter()
            .filter(|(n, _)| {
                !UNRECORDED_HEADERS[..4]
                    .iter()
                    .any(|u| n.eq_ignore_ascii_case(u))
            })
            .cloned()
            .collect();
        if matches!(ex.response_body, Some(Body::Json(_)))
            && !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        {
            headers.push(("content-type".to_string(), "application/json".to_string()));
        }
        Ok(Response {
            status: ex.status,
            headers,
            body: ex
                .response_body
                .as_ref()
                .map(Body::bytes)
                .unwrap_or_default(),
        })
    }
}

// ----- record ---------------------------------------------------------------

/// Response headers neither recorded nor replayed: framing (the host frames
/// what it serves) and the date.
const UNRECORDED_HEADERS: [&str; 5] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "date",
];

/// Appends each completed exchange of a live capability to one fixture
/// file. The file is rewritten whole after each exchange (written beside
/// it, then renamed), so it is always valid.
///
/// Its provenance is the weakest of its parts: `CAPTURED` (with the latest
/// day an exchange was recorded) while every exchange in it, earlier ones
/// included, was answered from a public address; `UNVERIFIED` as soon as
/// one was answered from a loopback or private address, or the file was
/// written by hand.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    state: Mutex<RecordState>,
}

#[derive(Debug)]
struct RecordState {
    /// What the file held before this recorder, then what it recorded.
    exchanges: Vec<Exchange>,
    recorded: usize,
    note: Option<String>,
    /// The provenance the file had, when it was `UNVERIFIED`.
    unverified: Option<String>,
    error: Option<FixtureError>,
}

/// Why a recording is not `CAPTURED`, as its `source` says.
fn not_the_service(origin: &str) -> String {
    format!(
        "recorded with `scout-host call --record` from {origin}, a loopback or private address: not the vendor's service"
    )
}

impl Recorder {
    /// Records into `path`: appended to the exchanges the file already
    /// holds (a file that is not a fixture file is an error, and is left
    /// alone), or created at the first exchange.
    pub fn new(path: impl Into<PathBuf>) -> Result<Recorder, FixtureError> {
        let path = path.into();
        let mut state = RecordState {
            exchanges: Vec::new(),
            recorded: 0,
            note: None,
            unverified: None,
            error: None,
        };
        if path.exists() {
            let file = FixtureFile::load(&path)?;
            state.exchanges = file.exchanges;
            state.note = file.note;
            if let Provenance::Unverified { source } = file.provenance {
                state.unverified = Some(source);
            }
        }
        Ok(Recorder {
            path,
            state: Mutex::new(state),
        })
    }

    /// Records into `DIR/NAME.json`, one file per tool: exchanges are
    /// appended to what it already holds.
    pub fn in_dir(dir: &Path, name: &str) -> Result<Recorder, FixtureError> {
        std::fs::create_dir_all(dir).map_err(|source| FixtureError::Write {
            path: dir.display().to_string(),
            source,
        })?;
        let stem: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Recorder::new(dir.join(format!("{stem}.json")))
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many exchanges this recorder recorded.
    pub fn len(&self) -> usize {
        self.state.lock().recorded
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `CAPTURED` or `UNVERIFIED`, as the file says now.
    pub fn provenance(&self) -> &'static str {
        let state = self.state.lock();
        if state.unverified.is_some() {
            "UNVERIFIED"
        } else {
            "CAPTURED"
        }
    }

    /// The first error writing the file, if any.
    pub fn error(&self) -> Option<String> {
        self.state.lock().error.as_ref().map(|e| e.to_string())
    }

    /// Records one exchange: the guest's request (which never holds the
    /// injected credential) and the response as the guest got it (already
    /// scrubbed); `scrubber` runs over both again, in case. `origin` is
    /// where it went; `peer` the address that answered (`None`: unknown,
    /// which never counts as the real service).
    pub fn record(
        &self,
        origin: &str,
        peer: Option<std::net::SocketAddr>,
        req: &Request,
        response: &Response,
        scrubber: &Scrubber,
    ) {
        self.record_for(None, origin, peer, req, response, scrubber)
    }

    /// [`Recorder::record`] for an exchange with a named destination.
    pub(crate) fn record_for(
        &self,
        destination: Option<&str>,
        origin: &str,
        peer: Option<std::net::SocketAddr>,
        req: &Request,
        response: &Response,
        scrubber: &Scrubber,
    ) {
        let clean = |s: &str| scrubber.scrub_text(s);
        let json_hint = |headers: &[(String, String)]| {
            headers.iter().any(|(n, v)| {
                n.eq_ignore_ascii_case("content-type") && v.to_ascii_lowercase().contains("json")
            })
        };
        let req_body = req
            .body
            .as_deref()
            .map(|b| scrubber.scrub(b))
            .unwrap_or_default();
        let req_json =
            json_hint(&req.headers) || serde_json::from_slice::<Value>(&req_body).is_ok();
        // Framing and the date are the moment's, not the exchange's.
        let headers: Vec<(String, String)> = response
            .headers
            .iter()
            .filter(|(n, _)| !UNRECORDED_HEADERS.iter().any(|u| n.eq_ignore_ascii_case(u)))
            .map(|(n, v)| (n.clone(), clean(v)))
            .collect();
        let origin = clean(origin);
        let from_the_service = peer.is_some_and(|p| super::net::denied_reason(p.ip()).is_none());
        let exchange = Exchange {
            destination: destination.map(str::to_string),
            origin: Some(origin.clone()),
            method: method_name(req.method).to_string(),
            path: clean(&req.path),
            query: req
                .query
                .iter()
                .map(|(k, v)| (clean(k), clean(v)))
                .collect(),
            // A request body is matched as a value, so JSON reads best.
            body: Body::of(&req_body, req_json),
            status: response.status,
            // Replayed byte for byte, as the guest got it live.
            response_body: Body::exact(&scrubber.scrub(&response.body)),
            headers,
        };
        let mut state = self.state.lock();
        state.exchanges.push(exchange);
        state.recorded += 1;
        if !from_the_service && state.unverified.is_none() {
            state.unverified = Some(not_the_service(&origin));
        }
        let provenance = match &state.unverified {
            Some(source) => Provenance::Unverified {
                source: source.clone(),
            },
            None => Provenance::Captured {
                captured_at: utc_date_today(),
            },
        };
        let file = FixtureFile {
            path: self.path.clone(),
            provenance,
            note: state.note.clone(),
            exchanges: state.exchanges.clone(),
        };
        if let Err(e) = write_atomically(&self.path, &file.to_json())
            && state.error.is_none()
        {
            state.error = Some(e);
        }
    }
}

fn write_atomically(path: &Path, text: &str) -> Result<(), FixtureError> {
    let fail = |source: std::io::Error| FixtureError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

/// Today's date in UTC, `YYYY-MM-DD`.
pub(crate) fn utc_date_today() -> String {
    crate::dates::utc_day(std::time::SystemTime::now())
}

#[cfg(test)]
mod graphql_bodies {
    use super::Body;
    use serde_json::json;

    /// A GraphQL request matches a fixture that asks the same operation
    /// with the same variables, however either lays out its document.
    #[test]
    fn a_graphql_body_matches_on_its_operation_and_variables() {
        let fixture = Body::Json(json!({
            "query": "query Shop($first: Int) { products(first: $first) { edges { node { id title } } } }",
            "variables": {"first": 5}
        }));
        let sent = |query: &str, variables: serde_json::Value| {
            serde_json::to_vec(&json!({"variables": variables, "query": query})).unwrap()
        };
        let laid_out = "query Shop($first: Int) {\n  products(first: $first) {\n    edges { node { id, title } } # the page\n  }\n}";
        assert!(fixture.matches(&sent(laid_out, json!({"first": 5}))));
        assert!(
            !fixture.matches(&sent(laid_out, json!({"first": 6}))),
            "other variables"
        );
        assert!(
            !fixture.matches(&sent(
                &laid_out.replace("title", "handle"),
                json!({"first": 5})
            )),
            "another field"
        );
        assert!(
            !fixture.matches(&sent("query Shop(", json!({"first": 5}))),
            "not GraphQL"
        );
        // Not a GraphQL body: compared as JSON, as before.
        assert!(Body::Json(json!({"a": 1})).matches(br#"{ "a" : 1 }"#));
        assert!(!Body::Json(json!({"a": 1})).matches(br#"{"a": 2}"#));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_dates_are_calendar_days() {
        assert!(
            is_date("2026-12-01")
                && !is_date("2026-13-01")
                && !is_date("01-12-2026")
                && !is_date("2026-12-01T00:00")
        );
        assert!(is_date(&utc_date_today()));
    }

    fn get(path: &str) -> Request {
        Request {
            method: Method::Get,
            path: path.to_string(),
            query: Vec::new(),
            headers: Vec::new(),
            body: None,
        }
    }

    fn answer(body: &str) -> Response {
        Response {
            status: 404,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    fn temp_file(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("scout-record-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("tool.json")
    }

    /// What replay serves is what the guest got live, byte for byte: a body
    /// that is not compact JSON is kept as text, not re-serialised.
    #[test]
    fn a_recorded_body_replays_byte_for_byte() {
        let path = temp_file("bytes");
        let scrubber = Scrubber::new("s3cret-value", []);
        let public: std::net::SocketAddr = "93.184.216.34:443".parse().unwrap();
        let recorder = Recorder::new(&path).unwrap();
        for (at, body) in [
            ("/spaced", "{\"error\": \"x\"}"),
            ("/compact", "{\"error\":\"x\"}"),
            ("/keys", "{\"b\":1,\"a\":2}"),
            ("/float", "{\"n\":1e5}"),
        ] {
            recorder.record(
                "https://api.example.com",
                Some(public),
                &get(at),
                &answer(body),
                &scrubber,
            );
        }
        assert_eq!(recorder.error(), None);
        let replay = Replay::load(std::slice::from_ref(&path)).unwrap();
        for (at, body) in [
            ("/spaced", "{\"error\": \"x\"}"),
            ("/compact", "{\"error\":\"x\"}"),
            ("/keys", "{\"b\":1,\"a\":2}"),
            ("/float", "{\"n\":1e5}"),
        ] {
            let got = replay.answer(&get(at), &scrubber).unwrap();
            assert_eq!(String::from_utf8(got.body).unwrap(), body, "{at}");
        }
    }

    /// One file per tool, appended to; `CAPTURED` only while every exchange
    /// in it came from a public address, and each says where it went.
    #[test]
    fn recordings_append_and_a_loopback_answer_is_never_captured() {
        let path = temp_file("provenance");
        let scrubber = Scrubber::new("s3cret-value", []);
        let public: std::net::SocketAddr = "93.184.216.34:443".parse().unwrap();
        let loopback: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let first = Recorder::new(&path).unwrap();
        first.record(
            "https://api.example.com",
            Some(public),
            &get("/a"),
            &answer("{}"),
            &scrubber,
        );
        assert_eq!(first.provenance(), "CAPTURED");
        let file = FixtureFile::load(&path).unwrap();
        assert!(matches!(file.provenance, Provenance::Captured { .. }));
        assert_eq!(
            file.exchanges[0].origin.as_deref(),
            Some("https://api.example.com")
        );

        // A second run appends to the same file, and a local fake's answer
        // makes the whole file UNVERIFIED, naming where it came from.
        let second = Recorder::new(&path).unwrap();
        second.record(
            "http://127.0.0.1:8080",
            Some(loopback),
            &get("/b"),
            &answer("{}"),
            &scrubber,
        );
        assert_eq!((second.len(), second.provenance()), (1, "UNVERIFIED"));
        let file = FixtureFile::load(&path).unwrap();
        assert_eq!(file.exchanges.len(), 2);
        match &file.provenance {
            Provenance::Unverified { source } => assert!(
                source.contains("http://127.0.0.1:8080")
                    && source.contains("not the vendor's service"),
                "{source}"
            ),
            other => panic!("{other:?}"),
        }
        // Once UNVERIFIED, a later public answer does not make it CAPTURED;
        // an unknown peer never counts as the service either.
        let third = Recorder::new(&path).unwrap();
        third.record(
            "https://api.example.com",
            Some(public),
            &get("/c"),
            &answer("{}"),
            &scrubber,
        );
        third.record(
            "https://api.example.com",
            None,
            &get("/d"),
            &answer("{}"),
            &scrubber,
        );
        assert_eq!(third.provenance(), "UNVERIFIED");
        assert_eq!(FixtureFile::load(&path).unwrap().exchanges.len(), 4);
        let unknown = temp_file("unknown-peer");
        let fourth = Recorder::new(&unknown).unwrap();
        fourth.record(
            "https://api.example.com",
            None,
            &get("/e"),
            &answer("{}"),
            &scrubber,
        );
        assert_eq!(fourth.provenance(), "UNVERIFIED");

        // A file that is not a fixture is refused, and left as it was.
        std::fs::write(&path, "not json").unwrap();
        assert!(Recorder::new(&path).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not json");
    }

    /// A body no fixture matches is shown to the author beside the closest
    /// fixture's body; the guest's refusal stays one line.
    #[test]
    fn a_body_that_matches_no_fixture_is_shown_beside_the_closest() {
        let dir = temp_file("closest");
        let path = dir.with_file_name("search.json");
        std::fs::write(
            &path,
            r#"{"provenance": "UNVERIFIED", "source": "https://example.com/docs",
                "exchanges": [
                  {"request": {"method": "POST", "path": "/search", "json": {"query": "zebra"}},
                   "response": {"status": 200, "json": {}}},
                  {"request": {"method": "POST", "path": "/search", "json": {"query": "cats", "size": 10}},
                   "response": {"status": 200, "json": {}}}
                ]}"#,
        )
        .unwrap();
        let replay = Replay::load(std::slice::from_ref(&path)).unwrap();
        let scrubber = Scrubber::new("s3cret-value", []);
        let request = Request {
            method: Method::Post,
            body: Some(br#"{"query":"cats","size":20}"#.to_vec()),
            ..get("/search")
        };
        let Err(HttpError::Denied(reason)) = replay.answer(&request, &scrubber) else {
            panic!("refused");
        };
        assert!(!reason.contains('\n'), "{reason}");
        let misses = replay.misses();
        assert_eq!(
            misses[0],
            format!(
                "{reason}\n    body sent:        {{\"query\":\"cats\",\"size\":20}}\n    closest fixture:  {{\"query\":\"cats\",\"size\":10}}"
            )
        );
    }
}
