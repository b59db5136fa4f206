//! The Cloudflare connector: `docs` and `search` (reads) and `execute` (a
//! write a person approves on every call, registered only when approvals
//! are on), as seed 000 lists them.
//!
//! Wire names: seed 000 names these tools `docs`, `search` and `execute`
//! (no `cloudflare_` prefix); each declares it with a `Name:` line.
//!
//! NOTE FOR THE LEAD (credential): the `docs` destination is Cloudflare's
//! public documentation MCP server, which needs no credential. Bound "with
//! the same credential as the connector", the host would send the
//! account's API token to docs.mcp.cloudflare.com; the operator config needs
//! a way to bind a destination with no credential.
//!
//! - `search` GETs any Cloudflare API v4 resource below `/client/v4` on the
//!   main origin (`https://api.cloudflare.com`), with the host's token.
//! - `execute` sends one request of any method there, with a JSON body.
//! - `docs` asks Cloudflare's documentation MCP server
//!   (`https://docs.mcp.cloudflare.com/mcp`, JSON-RPC over streamable HTTP:
//!   `initialize`, `notifications/initialized`, then `tools/call` of its
//!   `search_cloudflare_documentation` tool).
//!
//! Paths are checked segment by segment before any request (no empty, `.`
//! or `..` segment, only the characters Cloudflare's paths use, no `?` or
//! `#`: query parameters travel as typed pairs the host encodes), and the
//! withheld areas (tokens, credentials, members, billing, registrar, the
//! user's login, whole zones and accounts) are refused with `refused`.

scout_sdk::bindings!();

use bindings::exports::scout::cloudflare::read_tools::{
    self, ApiResult, DocResult, QueryParam, ResultInfo,
};
use bindings::exports::scout::cloudflare::write_tools::{self, ApiMethod, ApiRequest};
use scout_sdk::{
    ErrorFormat, Http, Method, Response, ToolError, UpstreamError, cut_message, encode_segment,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// The API's base path on the main origin.
const BASE: &str = "/client/v4";
/// The documentation server's destination and path.
const DOCS: &str = "docs";
const DOCS_PATH: &str = "/mcp";
/// The documentation server's search tool (its `tools/list` name).
const DOCS_TOOL: &str = "search_cloudflare_documentation";
/// How the documentation server writes an HTTP error: a JSON-RPC error
/// (`{"error": {"code", "message"}}`), else text.
const DOCS_ERRORS: ErrorFormat = ErrorFormat::Error;
/// The MCP protocol version this client speaks.
const MCP_VERSION: &str = "2025-06-18";
/// Limits on what the guest sends.
const MAX_PATH: usize = 1024;
const MAX_SEGMENTS: usize = 24;
const MAX_QUERY_PARAMS: usize = 30;
const MAX_QUERY_NAME: usize = 64;
const MAX_QUERY_VALUE: usize = 2048;
const MAX_BODY: usize = 1 << 20;
const MAX_DOCS_QUERY: usize = 1000;
/// The longest non-JSON body returned as text.
const MAX_TEXT: usize = 1 << 20;

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// The segments of a path below `/client/v4`, checked; `path` may start with
/// `/`, `/client/v4/` or neither.
fn api_segments(path: &str) -> Result<Vec<String>, ToolError> {
    if path.len() > MAX_PATH {
        return Err(ToolError::invalid(format!(
            "path is longer than {MAX_PATH} characters"
        )));
    }
    if path.contains('?') || path.contains('#') {
        return Err(ToolError::invalid(
            "path holds `?` or `#`: pass query parameters in `query`",
        ));
    }
    let mut rest = path.strip_prefix('/').unwrap_or(path);
    if let Some(r) = rest.strip_prefix("client/v4/") {
        rest = r;
    } else if rest == "client/v4" {
        rest = "";
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() {
        return Err(ToolError::invalid(
            "path is empty: name a resource below /client/v4, e.g. `zones`",
        ));
    }
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.len() > MAX_SEGMENTS {
        return Err(ToolError::invalid(format!(
            "path has more than {MAX_SEGMENTS} segments"
        )));
    }
    let mut out = Vec::with_capacity(segments.len());
    for s in segments {
        if s.is_empty() {
            return Err(ToolError::invalid(format!(
                "path `{path}` has an empty segment"
            )));
        }
        if s == "." || s == ".." {
            return Err(ToolError::invalid(format!(
                "path `{path}` has a `.` or `..` segment"
            )));
        }
        if let Some(c) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | ':')))
        {
            return Err(ToolError::invalid(format!(
                "path segment `{s}` holds `{}`: Cloudflare API paths use letters, digits, `-`, `_`, `.`, `~` and `:`",
                c.escape_default()
            )));
        }
        out.push(s.to_string());
    }
    Ok(out)
}

/// The request path: `/client/v4/` and the segments, each encoded.
fn api_path(segments: &[String]) -> String {
    let mut path = String::from(BASE);
    for s in segments {
        path.push('/');
        path.push_str(&encode_segment(s));
    }
    path
}

/// Query parameters, checked.
fn query_pairs(query: Option<&[QueryParam]>) -> Result<Vec<(String, String)>, ToolError> {
    let query = query.unwrap_or(&[]);
    if query.len() > MAX_QUERY_PARAMS {
        return Err(ToolError::invalid(format!(
            "at most {MAX_QUERY_PARAMS} query parameters ({} given)",
            query.len()
        )));
    }
    let mut out = Vec::with_capacity(query.len());
    for q in query {
        if q.name.is_empty()
            || q.name.len() > MAX_QUERY_NAME
            || !q
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']'))
        {
            return Err(ToolError::invalid(format!(
                "query parameter name `{}` must be 1 to {MAX_QUERY_NAME} letters, digits, `_`, `-`, `.`, `[` or `]`",
                q.name.escape_default()
            )));
        }
        if q.value.len() > MAX_QUERY_VALUE {
            return Err(ToolError::invalid(format!(
                "query parameter `{}` is longer than {MAX_QUERY_VALUE} bytes",
                q.name
            )));
        }
        if q.value.chars().any(char::is_control) {
            return Err(ToolError::invalid(format!(
                "query parameter `{}` holds a control character",
                q.name
            )));
        }
        out.push((q.name.clone(), q.value.clone()));
    }
    Ok(out)
}

/// Whether a request falls in a withheld area, and which; `write` is any
/// method but GET.
fn withheld_area(write: bool, segments: &[String]) -> Option<&'static str> {
    let s: Vec<String> = segments.iter().map(|x| x.to_ascii_lowercase()).collect();
    let at = |i: usize| s.get(i).map(String::as_str).unwrap_or("");
    let any = |name: &str| s.iter().any(|x| x == name);
    if any("billing") {
        return Some("billing details and payments");
    }
    let follows = |a: &str, b: &str| s.windows(2).any(|w| w[0] == a && w[1] == b);
    if at(s.len() - 1) == "token"
        || any("temp-access-credentials")
        || (any("images") && follows("v1", "keys"))
        || follows("stream", "keys")
        || follows("challenges", "widgets")
    {
        return Some(
            "credentials the API hands out (tunnel, connector and temporary tokens, signing keys, Turnstile secrets)",
        );
    }
    if !write {
        return None;
    }
    if any("subscription") || any("subscriptions") {
        return Some("subscriptions (they spend money)");
    }
    if any("service_tokens") {
        return Some("Access service tokens (credentials)");
    }
    if (at(0) == "user" && at(1) == "tokens") || (at(0) == "accounts" && at(2) == "tokens") {
        return Some("API tokens and account tokens");
    }
    if at(0) == "user" || at(0) == "memberships" {
        return Some("the user's own login, organisations and memberships");
    }
    if at(0) == "accounts" && matches!(at(2), "members" | "roles" | "iam") {
        return Some("account members and roles");
    }
    if at(0) == "accounts" && at(2) == "registrar" {
        return Some("the registrar (buying and transferring domains)");
    }
    None
}

/// Creating or deleting a whole zone or account (`POST zones`, `DELETE
/// zones/{id}`, `POST accounts`, `DELETE accounts/{id}`).
fn whole_zone_or_account(method: ApiMethod, segments: &[String]) -> bool {
    let first = segments[0].to_ascii_lowercase();
    if first != "zones" && first != "accounts" {
        return false;
    }
    matches!(
        (method, segments.len()),
        (ApiMethod::Post, 1) | (ApiMethod::Delete, 2)
    )
}

fn refuse_withheld(method: ApiMethod, segments: &[String]) -> Result<(), ToolError> {
    if whole_zone_or_account(method, segments) {
        return Err(ToolError::refused(
            "creating or deleting a whole zone or account is withheld from this connector; a person does it in the dashboard",
        ));
    }
    if let Some(area) = withheld_area(method != ApiMethod::Get, segments) {
        return Err(ToolError::refused(format!(
            "{area}: withheld from this connector; a person does it in the Cloudflare dashboard"
        )));
    }
    Ok(())
}

/// A JSON body (object or array), checked, as bytes.
fn json_body(method: ApiMethod, body: Option<&str>) -> Result<Option<Vec<u8>>, ToolError> {
    let Some(body) = body else { return Ok(None) };
    if method == ApiMethod::Get {
        return Err(ToolError::invalid("a GET request takes no body"));
    }
    if body.len() > MAX_BODY {
        return Err(ToolError::invalid(format!(
            "the body is larger than {MAX_BODY} bytes"
        )));
    }
    let value: Value = serde_json::from_str(body)
        .map_err(|e| ToolError::invalid(format!("the body is not JSON: {e}")))?;
    if !value.is_object() && !value.is_array() {
        return Err(ToolError::invalid(
            "the body must be a JSON object or array",
        ));
    }
    Ok(Some(
        serde_json::to_vec(&value).expect("a JSON value serialises"),
    ))
}

fn docs_query(query: &str) -> Result<&str, ToolError> {
    let q = query.trim();
    if q.is_empty() {
        return Err(ToolError::invalid(
            "query is empty: ask a question or give keywords",
        ));
    }
    if q.chars().count() > MAX_DOCS_QUERY {
        return Err(ToolError::invalid(format!(
            "query is longer than {MAX_DOCS_QUERY} characters"
        )));
    }
    if q.chars().any(|c| c.is_control() && c != '\n') {
        return Err(ToolError::invalid("query holds a control character"));
    }
    Ok(q)
}

// ---------------------------------------------------------------------------
// Cloudflare's v4 envelope
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct Envelope {
    success: bool,
    #[serde(default)]
    messages: Vec<ApiMessage>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    result_info: Option<ApiResultInfo>,
}

#[derive(Deserialize)]
struct ApiMessage {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default)]
    message: String,
}

impl ApiMessage {
    fn line(&self) -> String {
        match self.code {
            Some(c) => format!("{c}: {}", self.message),
            None => self.message.clone(),
        }
    }
}

#[derive(Deserialize)]
struct ApiResultInfo {
    #[serde(default)]
    page: Option<u32>,
    #[serde(default)]
    per_page: Option<u32>,
    #[serde(default)]
    count: Option<u32>,
    #[serde(default)]
    total_count: Option<u32>,
    #[serde(default)]
    total_pages: Option<u32>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    cursors: Option<Cursors>,
}

#[derive(Deserialize)]
struct Cursors {
    #[serde(default)]
    after: Option<String>,
}

/// Maps an answer: a non-2xx status to `not-found` (404) or `upstream`, an
/// envelope's `success: false` under a 2xx to `upstream`, both with the
/// envelope's errors read by [`ErrorFormat::Cloudflare`]; a success to its
/// result; a 2xx body that is not an envelope to its text.
fn api_result(response: Response) -> Result<ApiResult, ToolError> {
    let status = response.status;
    if let Some(e) = ErrorFormat::Cloudflare.status_error(status, &response.body) {
        return Err(e);
    }
    let envelope: Option<Envelope> = serde_json::from_slice(&response.body).ok();
    match envelope {
        Some(env) if env.success => Ok(ApiResult {
            status,
            result: env.result.map(|r| r.to_string()),
            result_info: env.result_info.map(|i| ResultInfo {
                page: i.page,
                per_page: i.per_page,
                count: i.count,
                total_count: i.total_count,
                total_pages: i.total_pages,
                cursor: i
                    .cursor
                    .or(i.cursors.and_then(|c| c.after))
                    .filter(|c| !c.is_empty()),
            }),
            messages: env.messages.iter().map(ApiMessage::line).collect(),
            text: None,
        }),
        Some(_) => Err(ToolError::Upstream(UpstreamError {
            status,
            message: ErrorFormat::Cloudflare.message(&response.body),
        })),
        None => {
            if response.body.len() > MAX_TEXT {
                return Err(ToolError::BadResponse(format!(
                    "the body is larger than {MAX_TEXT} bytes"
                )));
            }
            Ok(ApiResult {
                status,
                result: None,
                result_info: None,
                messages: Vec::new(),
                text: Some(String::from_utf8_lossy(&response.body).into_owned()),
            })
        }
    }
}

fn http_method(m: ApiMethod) -> Method {
    match m {
        ApiMethod::Get => Method::Get,
        ApiMethod::Post => Method::Post,
        ApiMethod::Put => Method::Put,
        ApiMethod::Patch => Method::Patch,
        ApiMethod::Delete => Method::Delete,
    }
}

fn api() -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_errors(ErrorFormat::Cloudflare)
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-cloudflare"))
}

fn send_api(
    method: ApiMethod,
    path: &str,
    query: Option<&[QueryParam]>,
    body: Option<&str>,
) -> Result<ApiResult, ToolError> {
    let segments = api_segments(path)?;
    let query = query_pairs(query)?;
    let body = json_body(method, body)?;
    refuse_withheld(method, &segments)?;
    let pairs: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let response = api()?.send(http_method(method), &api_path(&segments), &pairs, body)?;
    api_result(response)
}

// ---------------------------------------------------------------------------
// The documentation server (MCP over streamable HTTP)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct RpcResponse {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    code: i64,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct InitializeResult {
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
}

#[derive(Deserialize)]
struct ToolResult {
    #[serde(default)]
    content: Vec<Content>,
    #[serde(default, rename = "isError")]
    is_error: bool,
}

#[derive(Deserialize)]
struct Content {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

fn header<'a>(response: &'a Response, name: &str) -> Option<&'a str> {
    response
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The JSON-RPC messages of a body: one JSON message, or the `data:` of
/// each server-sent event.
fn rpc_messages(content_type: &str, body: &[u8]) -> Vec<RpcResponse> {
    let text = String::from_utf8_lossy(body);
    if !content_type
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
    {
        return serde_json::from_str(&text)
            .map(|m| vec![m])
            .unwrap_or_default();
    }
    let mut out = Vec::new();
    let mut data = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                if let Ok(m) = serde_json::from_str::<RpcResponse>(&data) {
                    out.push(m);
                }
                data.clear();
            }
        } else if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    out
}

/// The `result` of the answer to request `id`.
fn rpc_result(response: &Response, id: i64, what: &str) -> Result<Value, ToolError> {
    if let Some(e) = DOCS_ERRORS.status_error(response.status, &response.body) {
        return Err(e);
    }
    let content_type = header(response, "content-type").unwrap_or("application/json");
    let message = rpc_messages(content_type, &response.body)
        .into_iter()
        .find(|m| m.id.as_ref().and_then(Value::as_i64) == Some(id))
        .ok_or_else(|| {
            ToolError::BadResponse(format!("the documentation server sent no answer to {what}"))
        })?;
    if let Some(e) = message.error {
        return Err(ToolError::Upstream(UpstreamError {
            status: response.status,
            message: cut_message(format!("{what}: JSON-RPC error {}: {}", e.code, e.message)),
        }));
    }
    message
        .result
        .ok_or_else(|| ToolError::BadResponse(format!("the answer to {what} has no result")))
}

/// The text between `<tag>` and `</tag>` in `s`, trimmed.
fn between<'a>(s: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = s.find(&open)? + open.len();
    let end = s[start..].find(&close)? + start;
    Some(s[start..end].trim())
}

/// The server's `<result><url/><title/><text/></result>` passages; a text in
/// another shape comes back whole as one passage.
fn doc_results(text: &str) -> Vec<DocResult> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<result>") {
        let after = &rest[start + "<result>".len()..];
        let Some(end) = after.find("</result>") else {
            break;
        };
        let chunk = &after[..end];
        out.push(DocResult {
            url: between(chunk, "url")
                .filter(|u| !u.is_empty())
                .map(str::to_string),
            title: between(chunk, "title")
                .filter(|t| !t.is_empty())
                .map(str::to_string),
            text: between(chunk, "text").unwrap_or(chunk.trim()).to_string(),
        });
        rest = &after[end + "</result>".len()..];
    }
    if out.is_empty() && !text.trim().is_empty() {
        out.push(DocResult {
            url: None,
            title: None,
            text: text.trim().to_string(),
        });
    }
    out
}

fn docs_client() -> Result<Http, ToolError> {
    Ok(Http::connect_to(DOCS)?
        .with_errors(DOCS_ERRORS)
        .with_header("accept", "application/json, text/event-stream")
        .with_header("user-agent", "scout-connector-cloudflare"))
}

fn post_rpc(http: &Http, message: &Value) -> Result<Response, ToolError> {
    http.send(
        Method::Post,
        DOCS_PATH,
        &[],
        Some(serde_json::to_vec(message).expect("JSON serialises")),
    )
}

fn search_docs(query: &str) -> Result<Vec<DocResult>, ToolError> {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": MCP_VERSION, "capabilities": {},
        "clientInfo": {"name": "scout-connector-cloudflare", "version": "0.1.0"}}});
    let response = post_rpc(&docs_client()?, &initialize)?;
    let init: InitializeResult = serde_json::from_value(rpc_result(&response, 1, "initialize")?)
        .map_err(|e| {
            ToolError::BadResponse(format!(
                "the answer to initialize is not an MCP initialize result: {e}"
            ))
        })?;
    let mut session = docs_client()?.with_header("mcp-protocol-version", &init.protocol_version);
    if let Some(id) = header(&response, "mcp-session-id") {
        session = session.with_header("mcp-session-id", id);
    }
    let initialized = post_rpc(
        &session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )?;
    session.check(&initialized)?;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": DOCS_TOOL, "arguments": {"query": query}}});
    let response = post_rpc(&session, &call)?;
    let result: ToolResult =
        serde_json::from_value(rpc_result(&response, 2, DOCS_TOOL)?).map_err(|e| {
            ToolError::BadResponse(format!(
                "the answer to {DOCS_TOOL} is not a tool result: {e}"
            ))
        })?;
    let text = result
        .content
        .iter()
        .filter(|c| c.kind == "text")
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    if result.is_error {
        return Err(ToolError::Upstream(UpstreamError {
            status: response.status,
            message: cut_message(format!("{DOCS_TOOL}: {text}")),
        }));
    }
    Ok(doc_results(&text))
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Cloudflare;

impl read_tools::Guest for Cloudflare {
    fn docs(query: String) -> Result<Vec<DocResult>, ToolError> {
        search_docs(docs_query(&query)?)
    }

    fn search(path: String, query: Option<Vec<QueryParam>>) -> Result<ApiResult, ToolError> {
        send_api(ApiMethod::Get, &path, query.as_deref(), None)
    }
}

impl write_tools::Guest for Cloudflare {
    fn execute(request: ApiRequest) -> Result<ApiResult, ToolError> {
        send_api(
            request.method,
            &request.path,
            request.query.as_deref(),
            request.body.as_deref(),
        )
    }
}

scout_sdk::export!(Cloudflare);

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(p: &str) -> Vec<String> {
        api_segments(p).unwrap()
    }

    #[test]
    fn paths() {
        assert_eq!(segs("zones"), ["zones"]);
        assert_eq!(
            segs("/client/v4/zones/023e/dns_records/"),
            ["zones", "023e", "dns_records"]
        );
        assert_eq!(segs("/zones/abc"), ["zones", "abc"]);
        assert_eq!(
            api_path(&segs("accounts/a1/workers/scripts/my-worker")),
            "/client/v4/accounts/a1/workers/scripts/my-worker"
        );
        for bad in [
            "",
            "/",
            "/client/v4",
            "zones//x",
            "zones/../user/tokens",
            "zones/./x",
            "zones?name=a",
            "zones#x",
            "zones/a b",
            "zones/%2e%2e",
            "zones/a@b",
            "zones\\x",
            "zönes",
            "zones/a\nb",
            "zones/*",
        ] {
            assert!(api_segments(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(api_segments(&"a/".repeat(25)).is_err());
    }

    #[test]
    fn queries() {
        let q = |n: &str, v: &str| QueryParam {
            name: n.into(),
            value: v.into(),
        };
        assert_eq!(
            query_pairs(Some(&[q("per_page", "50"), q("name", "a b&c")]))
                .unwrap()
                .len(),
            2
        );
        assert!(query_pairs(None).unwrap().is_empty());
        for bad in [q("", "x"), q("a=b", "x"), q("a&b", "x"), q("n", "a\nb")] {
            assert!(query_pairs(Some(&[bad])).is_err());
        }
    }

    #[test]
    fn withheld_areas() {
        let refused = |m: ApiMethod, p: &str| refuse_withheld(m, &segs(p)).is_err();
        assert!(refused(ApiMethod::Post, "user/tokens"));
        assert!(refused(ApiMethod::Put, "user/tokens/abc/value"));
        assert!(refused(ApiMethod::Delete, "accounts/a1/tokens/t1"));
        assert!(!refused(ApiMethod::Get, "user/tokens"));
        assert!(!refused(ApiMethod::Get, "user/tokens/verify"));
        assert!(refused(ApiMethod::Get, "accounts/a1/cfd_tunnel/t1/token"));
        assert!(refused(
            ApiMethod::Post,
            "accounts/a1/r2/temp-access-credentials"
        ));
        assert!(refused(
            ApiMethod::Post,
            "accounts/a1/access/service_tokens"
        ));
        assert!(!refused(
            ApiMethod::Get,
            "accounts/a1/access/service_tokens"
        ));
        assert!(refused(ApiMethod::Post, "accounts/a1/members"));
        assert!(refused(ApiMethod::Patch, "Accounts/a1/Members/m1"));
        assert!(!refused(ApiMethod::Get, "accounts/a1/members"));
        assert!(refused(ApiMethod::Get, "accounts/a1/billing/profile"));
        assert!(refused(ApiMethod::Get, "user/billing/history"));
        assert!(refused(ApiMethod::Put, "zones/z1/subscription"));
        assert!(!refused(ApiMethod::Get, "zones/z1/subscription"));
        assert!(refused(
            ApiMethod::Post,
            "accounts/a1/registrar/domains/example.com"
        ));
        assert!(refused(ApiMethod::Patch, "user"));
        assert!(refused(ApiMethod::Delete, "memberships/m1"));
        assert!(refused(ApiMethod::Delete, "zones/z1"));
        assert!(refused(ApiMethod::Post, "zones"));
        assert!(refused(ApiMethod::Post, "accounts"));
        assert!(refused(ApiMethod::Delete, "accounts/a1"));
        assert!(!refused(ApiMethod::Get, "zones/z1"));
        assert!(!refused(ApiMethod::Patch, "zones/z1"));
        assert!(!refused(ApiMethod::Post, "zones/z1/dns_records"));
        assert!(!refused(ApiMethod::Delete, "zones/z1/dns_records/r1"));
        assert!(!refused(ApiMethod::Post, "zones/z1/purge_cache"));
    }

    #[test]
    fn handed_out_credentials() {
        let refused = |m: ApiMethod, p: &str| refuse_withheld(m, &segs(p)).is_err();
        assert!(refused(ApiMethod::Get, "accounts/a1/images/v1/keys"));
        assert!(refused(ApiMethod::Post, "accounts/a1/stream/keys"));
        assert!(refused(
            ApiMethod::Get,
            "accounts/a1/challenges/widgets/0x4AAF00AAAABn0R22HWm-YUc"
        ));
        assert!(!refused(ApiMethod::Get, "accounts/a1/images/v1"));
        assert!(!refused(ApiMethod::Get, "accounts/a1/stream"));
    }

    #[test]
    fn bodies() {
        assert_eq!(
            json_body(ApiMethod::Post, Some(r#"{"a": 1}"#))
                .unwrap()
                .unwrap(),
            br#"{"a":1}"#
        );
        assert!(json_body(ApiMethod::Post, None).unwrap().is_none());
        assert!(json_body(ApiMethod::Get, Some("{}")).is_err());
        assert!(json_body(ApiMethod::Post, Some("{")).is_err());
        assert!(json_body(ApiMethod::Post, Some("42")).is_err());
        assert!(json_body(ApiMethod::Delete, Some("[\"k1\"]")).is_ok());
    }

    #[test]
    fn envelopes() {
        let resp = |status: u16, body: &str| Response {
            status,
            headers: vec![],
            body: body.as_bytes().to_vec(),
        };
        let ok = api_result(resp(200, r#"{"success":true,"errors":[],"messages":[{"code":1,"message":"m"}],"result":[{"id":"z"}],
            "result_info":{"page":1,"per_page":20,"count":1,"total_count":1,"total_pages":1}}"#))
        .unwrap();
        assert_eq!(ok.result.as_deref(), Some(r#"[{"id":"z"}]"#));
        assert_eq!(ok.result_info.unwrap().total_count, Some(1));
        assert_eq!(ok.messages, ["1: m"]);
        let err = api_result(resp(
            403,
            r#"{"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"messages":[],"result":null}"#,
        ));
        assert!(
            matches!(err, Err(ToolError::Upstream(UpstreamError { status: 403, ref message })) if message == "10000: Authentication error")
        );
        let nf = api_result(resp(
            404,
            r#"{"success":false,"errors":[{"code":7003,"message":"Could not route"}],"result":null}"#,
        ));
        assert!(matches!(nf, Err(ToolError::NotFound(ref m)) if m == "7003: Could not route"));
        let text = api_result(resp(200, "export default {}")).unwrap();
        assert_eq!(text.text.as_deref(), Some("export default {}"));
        assert!(
            matches!(api_result(resp(502, "<html>bad gateway</html>")), Err(ToolError::Upstream(UpstreamError { status: 502, ref message })) if message == "<html>bad gateway</html>")
        );
        let refused = api_result(resp(
            200,
            r#"{"success":false,"errors":[{"code":1001,"message":"a"},{"code":1002,"message":"b"}]}"#,
        ));
        assert!(
            matches!(refused, Err(ToolError::Upstream(UpstreamError { status: 200, ref message })) if message == "1001: a; 1002: b")
        );
        let rpc = rpc_result(
            &resp(
                400,
                r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"No valid session ID"},"id":null}"#,
            ),
            1,
            "initialize",
        );
        assert!(
            matches!(rpc, Err(ToolError::Upstream(UpstreamError { status: 400, ref message })) if message == "No valid session ID")
        );
    }

    #[test]
    fn docs_answers() {
        let sse =
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n";
        let msgs = rpc_messages("text/event-stream", sse.as_bytes());
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0].id.as_ref().and_then(Value::as_i64), Some(2));
        let text = "<result>\n<url>https://developers.cloudflare.com/workers/</url>\n<title>workers</title>\n<text>\nWorkers run code.\n</text>\n</result>\n<result>\n<url>u2</url>\n<title>t2</title>\n<text>\nx\n</text>\n</result>";
        let r = doc_results(text);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0].url.as_deref(),
            Some("https://developers.cloudflare.com/workers/")
        );
        assert_eq!(r[0].text, "Workers run code.");
        assert_eq!(doc_results("plain answer")[0].text, "plain answer");
        assert!(doc_results("  ").is_empty());
        assert!(docs_query(" ").is_err());
        assert!(docs_query("a\u{7}").is_err());
        assert_eq!(docs_query(" R2 pricing ").unwrap(), "R2 pricing");
    }
}
