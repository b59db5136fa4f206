//! The AgentMail connector: ten read tools, an open draft tool and four
//! switched, approved send tools over AgentMail's REST API (`/v0`).
//!
//! Every request goes through the host's HTTP capability, which is bound to
//! the AgentMail API origin and adds the key; this code never sees a secret.
//!
//! - Every argument is checked before any request: inbox ids are email
//!   addresses, other ids are single path segments (percent-encoded),
//!   recipients are email addresses (at least one To), limits are bounded,
//!   subjects are one line, and bodies are capped at 256 KiB each.
//! - AgentMail has no full-text search endpoint, so the two search tools list
//!   the newest pages (filtered upstream by the labels AgentMail's list
//!   endpoints accept) and match the query here, case-insensitively, against
//!   subject, preview and addresses; they scan at most 500 items.
//! - `get-attachment` reads the message first for the attachment's metadata
//!   and refuses one larger than 1 MiB without downloading it; the content
//!   comes back as base64.
//! - Read tools send GET only; each write tool sends exactly its one POST.
//!   Nothing here deletes, or creates or changes an inbox.
//!
//! Errors: 404 is `not-found`; any other non-2xx status is `upstream` with
//! AgentMail's `message` (or its error `name`, and for a 422 the first
//! validation error).
//!
//! What AgentMail answers was written from its documentation and never
//! observed (AGENTMAIL_UNVERIFIED.live_calls).

// Outside wasm the tools are not exported, so their helpers look unused.
#![cfg_attr(not(target_family = "wasm"), allow(dead_code))]

scout_sdk::bindings!();

use base64::Engine as _;
use bindings::exports::scout::agentmail::read_tools::{
    self, Attachment, AttachmentInfo, Draft, DraftPage, DraftSummary, Inbox, Message, MessagePage,
    MessageSummary, Thread, ThreadPage, ThreadSummary,
};
use bindings::exports::scout::agentmail::write_tools::{self, Sent};
use scout_sdk::errors::decoded_status_error;
use scout_sdk::pages::collect;
use scout_sdk::{Http, Method, ToolError, encode_segment, method_name, parse_json};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Items listed when no limit is given.
const DEFAULT_LIMIT: u8 = 20;
/// Most items a page or a search returns.
const MAX_LIMIT: u8 = 100;
/// Pages a search scans (of MAX_LIMIT items each).
const SEARCH_PAGES: usize = 5;
/// Longest search query.
const MAX_QUERY: usize = 200;
/// Longest id (thread, message, draft, attachment).
const MAX_ID: usize = 256;
/// Longest page token.
const MAX_PAGE_TOKEN: usize = 1024;
/// Most labels in a filter, and the longest label.
const MAX_LABELS: usize = 20;
const MAX_LABEL: usize = 100;
/// Most addresses in one recipient field.
const MAX_RECIPIENTS: usize = 50;
/// Longest subject (RFC 5322's line limit).
const MAX_SUBJECT: usize = 998;
/// Largest text or HTML body, each.
const MAX_BODY: usize = 256 * 1024;
/// Largest attachment returned.
const MAX_ATTACHMENT: u64 = 1024 * 1024;

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// Checks an email address: `local@domain`, ASCII, no spaces or brackets,
/// a dotted domain of letters, digits and hyphens.
fn is_email(s: &str) -> bool {
    if s.len() > 254 {
        return false;
    }
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~.".contains(&b));
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    local_ok && domain_ok
}

/// An inbox id is its email address.
fn validate_inbox(inbox_id: &str) -> Result<(), ToolError> {
    if inbox_id.is_empty() {
        return Err(ToolError::invalid("inbox-id is empty"));
    }
    if !is_email(inbox_id) || inbox_id.contains('/') {
        return Err(ToolError::invalid(format!(
            "inbox-id `{inbox_id}` is not an inbox address (such as support@agentmail.to)"
        )));
    }
    Ok(())
}

/// A thread, message, draft or attachment id: one path segment, printable,
/// no spaces, at most 256 bytes.
fn validate_id(what: &str, id: &str) -> Result<(), ToolError> {
    if id.is_empty() {
        return Err(ToolError::invalid(format!("{what} is empty")));
    }
    if id.len() > MAX_ID {
        return Err(ToolError::invalid(format!(
            "{what} is longer than {MAX_ID} bytes"
        )));
    }
    if id == "."
        || id == ".."
        || id.contains('/')
        || id.contains('\\')
        || !id.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(ToolError::invalid(format!(
            "{what} `{id}` is not an AgentMail id"
        )));
    }
    Ok(())
}

fn page_limit(limit: Option<u8>) -> Result<u8, ToolError> {
    match limit {
        None => Ok(DEFAULT_LIMIT),
        Some(0) => Err(ToolError::invalid("limit must be at least 1")),
        Some(n) => Ok(n.min(MAX_LIMIT)),
    }
}

/// An empty page token is none.
fn page_token(token: Option<String>) -> Result<Option<String>, ToolError> {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if token.len() > MAX_PAGE_TOKEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ToolError::invalid(
            "page-token is not a token AgentMail gave",
        ));
    }
    Ok(Some(token))
}

fn labels(labels: Option<Vec<String>>) -> Result<Vec<String>, ToolError> {
    let labels = labels.unwrap_or_default();
    if labels.len() > MAX_LABELS {
        return Err(ToolError::invalid(format!("at most {MAX_LABELS} labels")));
    }
    for l in &labels {
        if l.trim().is_empty() || l.len() > MAX_LABEL || l.chars().any(char::is_control) {
            return Err(ToolError::invalid(format!(
                "label `{l}` is empty, longer than {MAX_LABEL} bytes or has a control character"
            )));
        }
    }
    Ok(labels)
}

/// A search query, trimmed and lowercased.
fn search_query(query: &str) -> Result<String, ToolError> {
    let q = query.trim();
    if q.is_empty() {
        return Err(ToolError::invalid("query is empty"));
    }
    if q.len() > MAX_QUERY {
        return Err(ToolError::invalid(format!(
            "query is longer than {MAX_QUERY} bytes"
        )));
    }
    if q.chars().any(char::is_control) {
        return Err(ToolError::invalid("query contains a control character"));
    }
    Ok(q.to_lowercase())
}

fn recipients(field: &str, list: &[String], required: bool) -> Result<(), ToolError> {
    if required && list.is_empty() {
        return Err(ToolError::invalid(format!(
            "{field} needs at least one address"
        )));
    }
    if list.len() > MAX_RECIPIENTS {
        return Err(ToolError::invalid(format!(
            "{field} has more than {MAX_RECIPIENTS} addresses"
        )));
    }
    for a in list {
        if !is_email(a) {
            return Err(ToolError::invalid(format!(
                "{field}: `{a}` is not an email address"
            )));
        }
    }
    Ok(())
}

fn optional_recipients(field: &str, list: Option<Vec<String>>) -> Result<Vec<String>, ToolError> {
    let list = list.unwrap_or_default();
    recipients(field, &list, false)?;
    Ok(list)
}

fn subject(s: Option<String>) -> Result<Option<String>, ToolError> {
    let Some(s) = s else { return Ok(None) };
    if s.len() > MAX_SUBJECT {
        return Err(ToolError::invalid(format!(
            "subject is longer than {MAX_SUBJECT} bytes"
        )));
    }
    if s.chars().any(char::is_control) {
        return Err(ToolError::invalid(
            "subject must be one line (no control characters)",
        ));
    }
    Ok(Some(s))
}

fn body(field: &str, s: Option<String>) -> Result<Option<String>, ToolError> {
    let Some(s) = s.filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    if s.len() > MAX_BODY {
        return Err(ToolError::invalid(format!(
            "{field} is {} bytes, more than the {MAX_BODY}-byte cap",
            s.len()
        )));
    }
    Ok(Some(s))
}

/// Text and HTML, checked; with `required`, at least one of them.
fn bodies(
    text: Option<String>,
    html: Option<String>,
    required: bool,
) -> Result<(Option<String>, Option<String>), ToolError> {
    let text = body("text", text)?;
    let html = body("html", html)?;
    if required && text.is_none() && html.is_none() {
        return Err(ToolError::invalid("a text or html body is required"));
    }
    Ok((text, html))
}

// ---------------------------------------------------------------------------
// Paths and queries
// ---------------------------------------------------------------------------

fn inbox_path(inbox_id: &str, rest: &str) -> String {
    format!("/v0/inboxes/{}{rest}", encode_segment(inbox_id))
}

/// `limit`, `page_token` and one `labels` pair per label.
fn list_query(limit: u8, token: &Option<String>, labels: &[String]) -> Vec<(String, String)> {
    let mut q = vec![("limit".to_string(), limit.to_string())];
    if let Some(t) = token {
        q.push(("page_token".to_string(), t.clone()));
    }
    for l in labels {
        q.push(("labels".to_string(), l.clone()));
    }
    q
}

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------

#[derive(Deserialize, Default)]
struct ApiError {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    errors: Option<serde_json::Value>,
}

/// AgentMail's error body as one line: its `message`, else its `name`, and
/// the first validation error when there is one (none of the SDK's
/// [`scout_sdk::ErrorFormat`]s reads `name` or `errors[0]`); `None` when the body is not
/// that shape, and the SDK falls back to its text.
fn error_message(body: &[u8]) -> Option<String> {
    let e = serde_json::from_slice::<ApiError>(body).ok()?;
    let mut text = e.message.or(e.name).unwrap_or_default();
    let first = match &e.errors {
        Some(serde_json::Value::Array(a)) => a.first().cloned(),
        Some(v @ serde_json::Value::Object(_)) => Some(v.clone()),
        _ => None,
    };
    if let Some(first) = first {
        let detail = first
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_string)
            .unwrap_or_else(|| first.to_string());
        text = if text.is_empty() {
            detail
        } else {
            format!("{text}: {detail}")
        };
    }
    Some(text)
}

/// A status's tool error, in the SDK's one shape (404 not-found, any other
/// non-2xx upstream, the message cut) with AgentMail's message.
fn status_error(status: u16, body: &[u8]) -> Option<ToolError> {
    decoded_status_error(error_message, status, body)
}

/// A 2xx answer decoded as `T`, or the status's error; `bad-response` names
/// the request, as the SDK's `Http::json` does.
fn interpret<T: DeserializeOwned>(
    method: Method,
    path: &str,
    status: u16,
    body: &[u8],
) -> Result<T, ToolError> {
    if let Some(e) = status_error(status, body) {
        return Err(e);
    }
    parse_json(body).map_err(|e| match e {
        ToolError::BadResponse(m) => {
            ToolError::BadResponse(format!("{} {path}: {m}", method_name(method)))
        }
        other => other,
    })
}

#[derive(Deserialize)]
struct ApiInbox {
    inbox_id: String,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    created_at: String,
}

#[derive(Deserialize)]
struct Inboxes {
    #[serde(default)]
    inboxes: Vec<ApiInbox>,
}

#[derive(Deserialize)]
struct ApiAttachment {
    attachment_id: String,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    size: u64,
}

impl From<ApiAttachment> for AttachmentInfo {
    fn from(a: ApiAttachment) -> AttachmentInfo {
        AttachmentInfo {
            attachment_id: a.attachment_id,
            filename: a.filename,
            content_type: a.content_type,
            size: a.size,
        }
    }
}

fn infos(a: Vec<ApiAttachment>) -> Vec<AttachmentInfo> {
    a.into_iter().map(AttachmentInfo::from).collect()
}

#[derive(Deserialize)]
struct ApiThreadItem {
    thread_id: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    preview: Option<String>,
    #[serde(default)]
    senders: Vec<String>,
    #[serde(default)]
    recipients: Vec<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    message_count: u32,
    #[serde(default)]
    timestamp: String,
}

impl ApiThreadItem {
    fn matches(&self, q: &str) -> bool {
        contains(&self.subject, q)
            || contains(&self.preview, q)
            || any_contains(&self.senders, q)
            || any_contains(&self.recipients, q)
    }
}

impl From<ApiThreadItem> for ThreadSummary {
    fn from(t: ApiThreadItem) -> ThreadSummary {
        ThreadSummary {
            thread_id: t.thread_id,
            subject: t.subject,
            preview: t.preview,
            senders: t.senders,
            recipients: t.recipients,
            labels: t.labels,
            message_count: t.message_count,
            timestamp: t.timestamp,
        }
    }
}

#[derive(Deserialize)]
struct Threads {
    #[serde(default)]
    threads: Vec<ApiThreadItem>,
    #[serde(default)]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct ApiMessageItem {
    message_id: String,
    thread_id: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: Vec<String>,
    #[serde(default)]
    cc: Vec<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    preview: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    timestamp: String,
    #[serde(default)]
    attachments: Vec<ApiAttachment>,
}

impl ApiMessageItem {
    fn matches(&self, q: &str) -> bool {
        contains(&self.subject, q)
            || contains(&self.preview, q)
            || self.from.to_lowercase().contains(q)
            || any_contains(&self.to, q)
            || any_contains(&self.cc, q)
    }
}

impl From<ApiMessageItem> for MessageSummary {
    fn from(m: ApiMessageItem) -> MessageSummary {
        MessageSummary {
            message_id: m.message_id,
            thread_id: m.thread_id,
            from: m.from,
            to: m.to,
            cc: m.cc,
            subject: m.subject,
            preview: m.preview,
            labels: m.labels,
            timestamp: m.timestamp,
            attachments: infos(m.attachments),
        }
    }
}

#[derive(Deserialize)]
struct Messages {
    #[serde(default)]
    messages: Vec<ApiMessageItem>,
    #[serde(default)]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct ApiMessage {
    message_id: String,
    thread_id: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: Vec<String>,
    #[serde(default)]
    cc: Vec<String>,
    #[serde(default)]
    bcc: Vec<String>,
    #[serde(default)]
    reply_to: Vec<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    timestamp: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    html: Option<String>,
    #[serde(default)]
    in_reply_to: Option<String>,
    #[serde(default)]
    attachments: Vec<ApiAttachment>,
}

impl From<ApiMessage> for Message {
    fn from(m: ApiMessage) -> Message {
        Message {
            message_id: m.message_id,
            thread_id: m.thread_id,
            from: m.from,
            to: m.to,
            cc: m.cc,
            bcc: m.bcc,
            reply_to: m.reply_to,
            subject: m.subject,
            labels: m.labels,
            timestamp: m.timestamp,
            text: m.text,
            html: m.html,
            in_reply_to: m.in_reply_to,
            attachments: infos(m.attachments),
        }
    }
}

#[derive(Deserialize)]
struct ApiThread {
    thread_id: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    senders: Vec<String>,
    #[serde(default)]
    recipients: Vec<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    messages: Vec<ApiMessage>,
}

#[derive(Deserialize)]
struct ApiDraftItem {
    draft_id: String,
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    to: Vec<String>,
    #[serde(default)]
    cc: Vec<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    preview: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    updated_at: String,
}

#[derive(Deserialize)]
struct Drafts {
    #[serde(default)]
    drafts: Vec<ApiDraftItem>,
    #[serde(default)]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct ApiDraft {
    draft_id: String,
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    to: Vec<String>,
    #[serde(default)]
    cc: Vec<String>,
    #[serde(default)]
    bcc: Vec<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    html: Option<String>,
    #[serde(default)]
    in_reply_to: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    updated_at: String,
}

impl From<ApiDraft> for Draft {
    fn from(d: ApiDraft) -> Draft {
        Draft {
            draft_id: d.draft_id,
            thread_id: d.thread_id,
            to: d.to,
            cc: d.cc,
            bcc: d.bcc,
            subject: d.subject,
            text: d.text,
            html: d.html,
            in_reply_to: d.in_reply_to,
            labels: d.labels,
            updated_at: d.updated_at,
        }
    }
}

#[derive(Deserialize)]
struct ApiSent {
    message_id: String,
    thread_id: String,
}

fn contains(field: &Option<String>, q: &str) -> bool {
    field
        .as_deref()
        .is_some_and(|f| f.to_lowercase().contains(q))
}

fn any_contains(list: &[String], q: &str) -> bool {
    list.iter().any(|a| a.to_lowercase().contains(q))
}

// ---------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct DraftBody {
    to: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cc: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    bcc: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    html: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    in_reply_to: Option<String>,
}

#[derive(Serialize)]
struct SendBody {
    to: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cc: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    bcc: Vec<String>,
    subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    html: Option<String>,
}

#[derive(Serialize)]
struct ReplyBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    html: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    reply_all: bool,
}

#[derive(Serialize)]
struct ForwardBody {
    to: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cc: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    bcc: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

#[derive(Serialize)]
struct Empty {}

fn encode<B: Serialize>(body: &B) -> Result<Vec<u8>, ToolError> {
    serde_json::to_vec(body)
        .map_err(|e| ToolError::invalid(format!("cannot encode the request: {e}")))
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

fn agentmail() -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-agentmail"))
}

fn get<T: DeserializeOwned>(
    http: &Http,
    path: &str,
    query: &[(String, String)],
) -> Result<T, ToolError> {
    let query: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let response = http.send(Method::Get, path, &query, None)?;
    interpret(Method::Get, path, response.status, &response.body)
}

fn post<B: Serialize, T: DeserializeOwned>(path: &str, body: &B) -> Result<T, ToolError> {
    let response = agentmail()?.send(Method::Post, path, &[], Some(encode(body)?))?;
    interpret(Method::Post, path, response.status, &response.body)
}

/// Scans up to SEARCH_PAGES pages, keeping the items `keep` accepts, until
/// `limit` are kept or the pages run out.
fn scan<P, I>(
    path: &str,
    labels: &[String],
    limit: u8,
    mut split: impl FnMut(P) -> (Vec<I>, Option<String>),
    keep: impl Fn(&I) -> bool,
) -> Result<Vec<I>, ToolError>
where
    P: DeserializeOwned,
{
    let http = agentmail()?;
    let (found, _) = collect(usize::from(limit), SEARCH_PAGES, |token: Option<String>| {
        let page: P = get(&http, path, &list_query(MAX_LIMIT, &token, labels))?;
        let (mut items, next) = split(page);
        items.retain(&keep);
        Ok((items, next.filter(|t| !t.is_empty())))
    })?;
    Ok(found)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The size check for an attachment's metadata and for its downloaded bytes.
fn attachment_fits(id: &str, size: u64) -> Result<(), ToolError> {
    if size > MAX_ATTACHMENT {
        return Err(ToolError::refused(format!(
            "attachment {id} is {size} bytes, larger than the {MAX_ATTACHMENT}-byte cap; it was not downloaded"
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct AgentMail;

impl read_tools::Guest for AgentMail {
    fn list_threads(
        inbox_id: String,
        limit: Option<u8>,
        page_token_: Option<String>,
        labels_: Option<Vec<String>>,
    ) -> Result<ThreadPage, ToolError> {
        validate_inbox(&inbox_id)?;
        let limit = page_limit(limit)?;
        let token = page_token(page_token_)?;
        let labels = labels(labels_)?;
        let page: Threads = get(
            &agentmail()?,
            &inbox_path(&inbox_id, "/threads"),
            &list_query(limit, &token, &labels),
        )?;
        Ok(ThreadPage {
            threads: page.threads.into_iter().map(ThreadSummary::from).collect(),
            next_page_token: page.next_page_token.filter(|t| !t.is_empty()),
        })
    }

    fn search_threads(
        inbox_id: String,
        query: String,
        labels_: Option<Vec<String>>,
        limit: Option<u8>,
    ) -> Result<Vec<ThreadSummary>, ToolError> {
        validate_inbox(&inbox_id)?;
        let q = search_query(&query)?;
        let labels = labels(labels_)?;
        let limit = page_limit(limit)?;
        let found = scan(
            &inbox_path(&inbox_id, "/threads"),
            &labels,
            limit,
            |p: Threads| (p.threads, p.next_page_token),
            |t| t.matches(&q),
        )?;
        Ok(found.into_iter().map(ThreadSummary::from).collect())
    }

    fn get_thread(inbox_id: String, thread_id: String) -> Result<Thread, ToolError> {
        validate_inbox(&inbox_id)?;
        validate_id("thread-id", &thread_id)?;
        let t: ApiThread = get(
            &agentmail()?,
            &inbox_path(
                &inbox_id,
                &format!("/threads/{}", encode_segment(&thread_id)),
            ),
            &[],
        )?;
        Ok(Thread {
            thread_id: t.thread_id,
            subject: t.subject,
            senders: t.senders,
            recipients: t.recipients,
            labels: t.labels,
            messages: t.messages.into_iter().map(Message::from).collect(),
        })
    }

    fn list_messages(
        inbox_id: String,
        limit: Option<u8>,
        page_token_: Option<String>,
        labels_: Option<Vec<String>>,
    ) -> Result<MessagePage, ToolError> {
        validate_inbox(&inbox_id)?;
        let limit = page_limit(limit)?;
        let token = page_token(page_token_)?;
        let labels = labels(labels_)?;
        let page: Messages = get(
            &agentmail()?,
            &inbox_path(&inbox_id, "/messages"),
            &list_query(limit, &token, &labels),
        )?;
        Ok(MessagePage {
            messages: page
                .messages
                .into_iter()
                .map(MessageSummary::from)
                .collect(),
            next_page_token: page.next_page_token.filter(|t| !t.is_empty()),
        })
    }

    fn search_messages(
        inbox_id: String,
        query: String,
        labels_: Option<Vec<String>>,
        limit: Option<u8>,
    ) -> Result<Vec<MessageSummary>, ToolError> {
        validate_inbox(&inbox_id)?;
        let q = search_query(&query)?;
        let labels = labels(labels_)?;
        let limit = page_limit(limit)?;
        let found = scan(
            &inbox_path(&inbox_id, "/messages"),
            &labels,
            limit,
            |p: Messages| (p.messages, p.next_page_token),
            |m| m.matches(&q),
        )?;
        Ok(found.into_iter().map(MessageSummary::from).collect())
    }

    fn get_message(inbox_id: String, message_id: String) -> Result<Message, ToolError> {
        validate_inbox(&inbox_id)?;
        validate_id("message-id", &message_id)?;
        let m: ApiMessage = get(
            &agentmail()?,
            &inbox_path(
                &inbox_id,
                &format!("/messages/{}", encode_segment(&message_id)),
            ),
            &[],
        )?;
        Ok(m.into())
    }

    fn get_attachment(
        inbox_id: String,
        message_id: String,
        attachment_id: String,
    ) -> Result<Attachment, ToolError> {
        validate_inbox(&inbox_id)?;
        validate_id("message-id", &message_id)?;
        validate_id("attachment-id", &attachment_id)?;
        let http = agentmail()?;
        let message_path = inbox_path(
            &inbox_id,
            &format!("/messages/{}", encode_segment(&message_id)),
        );
        let m: ApiMessage = get(&http, &message_path, &[])?;
        let info = m
            .attachments
            .into_iter()
            .find(|a| a.attachment_id == attachment_id)
            .ok_or_else(|| {
                ToolError::NotFound(format!(
                    "message {message_id} has no attachment {attachment_id}"
                ))
            })?;
        attachment_fits(&attachment_id, info.size)?;
        let path = format!(
            "{message_path}/attachments/{}",
            encode_segment(&attachment_id)
        );
        let response = http.send(Method::Get, &path, &[], None)?;
        if let Some(e) = status_error(response.status, &response.body) {
            return Err(e);
        }
        if header(&response.headers, "content-type")
            .is_some_and(|t| t.starts_with("application/json"))
            && info.content_type.as_deref() != Some("application/json")
        {
            return Err(ToolError::BadResponse(
                "AgentMail answered JSON (a download link?) instead of the attachment's content"
                    .into(),
            ));
        }
        attachment_fits(&attachment_id, response.body.len() as u64)?;
        Ok(Attachment {
            attachment_id: info.attachment_id,
            filename: info.filename,
            content_type: info.content_type,
            size: response.body.len() as u64,
            content_base64: base64::engine::general_purpose::STANDARD.encode(&response.body),
        })
    }

    fn whoami() -> Result<Vec<Inbox>, ToolError> {
        let page: Inboxes = get(
            &agentmail()?,
            "/v0/inboxes",
            &[("limit".into(), MAX_LIMIT.to_string())],
        )?;
        Ok(page
            .inboxes
            .into_iter()
            .map(|i| Inbox {
                inbox_id: i.inbox_id,
                display_name: i.display_name.filter(|d| !d.is_empty()),
                created_at: i.created_at,
            })
            .collect())
    }

    fn list_drafts(
        inbox_id: String,
        limit: Option<u8>,
        page_token_: Option<String>,
    ) -> Result<DraftPage, ToolError> {
        validate_inbox(&inbox_id)?;
        let limit = page_limit(limit)?;
        let token = page_token(page_token_)?;
        let page: Drafts = get(
            &agentmail()?,
            &inbox_path(&inbox_id, "/drafts"),
            &list_query(limit, &token, &[]),
        )?;
        Ok(DraftPage {
            drafts: page
                .drafts
                .into_iter()
                .map(|d| DraftSummary {
                    draft_id: d.draft_id,
                    thread_id: d.thread_id,
                    to: d.to,
                    cc: d.cc,
                    subject: d.subject,
                    preview: d.preview,
                    labels: d.labels,
                    updated_at: d.updated_at,
                })
                .collect(),
            next_page_token: page.next_page_token.filter(|t| !t.is_empty()),
        })
    }

    fn get_draft(inbox_id: String, draft_id: String) -> Result<Draft, ToolError> {
        validate_inbox(&inbox_id)?;
        validate_id("draft-id", &draft_id)?;
        let d: ApiDraft = get(
            &agentmail()?,
            &inbox_path(&inbox_id, &format!("/drafts/{}", encode_segment(&draft_id))),
            &[],
        )?;
        Ok(d.into())
    }
}

impl write_tools::Guest for AgentMail {
    fn create_draft(
        inbox_id: String,
        to: Vec<String>,
        cc: Option<Vec<String>>,
        bcc: Option<Vec<String>>,
        subject_: Option<String>,
        text: Option<String>,
        html: Option<String>,
        in_reply_to: Option<String>,
    ) -> Result<Draft, ToolError> {
        validate_inbox(&inbox_id)?;
        recipients("to", &to, true)?;
        let cc = optional_recipients("cc", cc)?;
        let bcc = optional_recipients("bcc", bcc)?;
        let subject = subject(subject_)?;
        let (text, html) = bodies(text, html, false)?;
        if let Some(id) = &in_reply_to {
            validate_id("in-reply-to", id)?;
        }
        let body = DraftBody {
            to,
            cc,
            bcc,
            subject,
            text,
            html,
            in_reply_to,
        };
        let d: ApiDraft = post(&inbox_path(&inbox_id, "/drafts"), &body)?;
        Ok(d.into())
    }

    fn send_message(
        inbox_id: String,
        to: Vec<String>,
        cc: Option<Vec<String>>,
        bcc: Option<Vec<String>>,
        subject_: String,
        text: Option<String>,
        html: Option<String>,
    ) -> Result<Sent, ToolError> {
        validate_inbox(&inbox_id)?;
        recipients("to", &to, true)?;
        let cc = optional_recipients("cc", cc)?;
        let bcc = optional_recipients("bcc", bcc)?;
        let subject = subject(Some(subject_))?
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| ToolError::invalid("subject is empty"))?;
        let (text, html) = bodies(text, html, true)?;
        let s: ApiSent = post(
            &inbox_path(&inbox_id, "/messages/send"),
            &SendBody {
                to,
                cc,
                bcc,
                subject,
                text,
                html,
            },
        )?;
        Ok(Sent {
            message_id: s.message_id,
            thread_id: s.thread_id,
        })
    }

    fn reply_to_message(
        inbox_id: String,
        message_id: String,
        text: Option<String>,
        html: Option<String>,
        reply_all: Option<bool>,
    ) -> Result<Sent, ToolError> {
        validate_inbox(&inbox_id)?;
        validate_id("message-id", &message_id)?;
        let (text, html) = bodies(text, html, true)?;
        let path = inbox_path(
            &inbox_id,
            &format!("/messages/{}/reply", encode_segment(&message_id)),
        );
        let s: ApiSent = post(
            &path,
            &ReplyBody {
                text,
                html,
                reply_all: reply_all.unwrap_or(false),
            },
        )?;
        Ok(Sent {
            message_id: s.message_id,
            thread_id: s.thread_id,
        })
    }

    fn forward_message(
        inbox_id: String,
        message_id: String,
        to: Vec<String>,
        cc: Option<Vec<String>>,
        bcc: Option<Vec<String>>,
        text: Option<String>,
    ) -> Result<Sent, ToolError> {
        validate_inbox(&inbox_id)?;
        validate_id("message-id", &message_id)?;
        recipients("to", &to, true)?;
        let cc = optional_recipients("cc", cc)?;
        let bcc = optional_recipients("bcc", bcc)?;
        let text = body("text", text)?;
        let path = inbox_path(
            &inbox_id,
            &format!("/messages/{}/forward", encode_segment(&message_id)),
        );
        let s: ApiSent = post(&path, &ForwardBody { to, cc, bcc, text })?;
        Ok(Sent {
            message_id: s.message_id,
            thread_id: s.thread_id,
        })
    }

    fn send_draft(inbox_id: String, draft_id: String) -> Result<Sent, ToolError> {
        validate_inbox(&inbox_id)?;
        validate_id("draft-id", &draft_id)?;
        let s: ApiSent = post(
            &inbox_path(
                &inbox_id,
                &format!("/drafts/{}/send", encode_segment(&draft_id)),
            ),
            &Empty {},
        )?;
        Ok(Sent {
            message_id: s.message_id,
            thread_id: s.thread_id,
        })
    }
}

scout_sdk::export!(AgentMail);

#[cfg(test)]
mod tests {
    use super::*;
    use scout_sdk::testing::fails;

    #[test]
    fn email_addresses() {
        for ok in [
            "support@agentmail.to",
            "a.b+tag@mail.example.co.uk",
            "x_y-z@sub-domain.example.com",
        ] {
            assert!(is_email(ok), "{ok}");
        }
        for bad in [
            "",
            "support",
            "@agentmail.to",
            "support@",
            "support@localhost",
            "a b@example.com",
            "Ann <ann@example.com>",
            "a@@example.com",
            "a@exa_mple.com",
            "a@-example.com",
            ".a@example.com",
            "a..b@example.com",
            "a@example..com",
            "a@example.com\n",
            "a@example.com/../x",
        ] {
            assert!(!is_email(bad), "{bad:?} should be refused");
        }
        assert!(!is_email(&format!("{}@example.com", "a".repeat(65))));
        assert!(validate_inbox("support@agentmail.to").is_ok());
        assert!(
            matches!(fails(validate_inbox("")), ToolError::InvalidInput(ref m) if m == "inbox-id is empty")
        );
        assert!(validate_inbox("a/b@example.com").is_err());
    }

    #[test]
    fn ids_are_one_segment() {
        for ok in [
            "<CAF=abc@mail.gmail.com>",
            "3f2b8c1e-0a4d-4e6f-9b7a-1c2d3e4f5a6b",
            "att_1",
        ] {
            assert!(validate_id("id", ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "a\nb", "a\\b", "é"] {
            assert!(validate_id("id", bad).is_err(), "{bad:?}");
        }
        assert!(validate_id("id", &"x".repeat(MAX_ID + 1)).is_err());
        assert_eq!(
            encode_segment("<CAF=abc@mail.gmail.com>"),
            "%3CCAF%3Dabc%40mail.gmail.com%3E"
        );
        assert_eq!(
            inbox_path("support@agentmail.to", "/threads"),
            "/v0/inboxes/support%40agentmail.to/threads"
        );
    }

    #[test]
    fn limits_tokens_labels_queries() {
        assert_eq!(page_limit(None).unwrap(), 20);
        assert_eq!(page_limit(Some(255)).unwrap(), 100);
        assert!(page_limit(Some(0)).is_err());
        assert_eq!(page_token(Some(String::new())).unwrap(), None);
        assert!(page_token(Some("a b".into())).is_err());
        assert!(page_token(Some("x".repeat(MAX_PAGE_TOKEN + 1))).is_err());
        assert_eq!(labels(None).unwrap(), Vec::<String>::new());
        assert!(labels(Some(vec![" ".into()])).is_err());
        assert!(labels(Some(vec!["x".into(); MAX_LABELS + 1])).is_err());
        assert_eq!(search_query("  Invoice ").unwrap(), "invoice");
        assert!(search_query(" ").is_err());
        assert!(search_query("a\tb").is_err());
        assert_eq!(
            list_query(5, &Some("t".into()), &["unread".into(), "received".into()]),
            [
                ("limit", "5"),
                ("page_token", "t"),
                ("labels", "unread"),
                ("labels", "received")
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }

    #[test]
    fn recipients_subjects_bodies() {
        assert!(
            matches!(fails(recipients("to", &[], true)), ToolError::InvalidInput(ref m) if m == "to needs at least one address")
        );
        assert!(recipients("cc", &[], false).is_ok());
        assert!(recipients("to", &["Ann <ann@example.com>".into()], true).is_err());
        assert!(
            recipients(
                "to",
                &vec!["a@example.com".to_string(); MAX_RECIPIENTS + 1],
                true
            )
            .is_err()
        );
        assert!(subject(Some("Re: hi\r\nBcc: x@example.com".into())).is_err());
        assert!(subject(Some("x".repeat(MAX_SUBJECT + 1))).is_err());
        assert!(bodies(None, None, true).is_err());
        assert_eq!(
            bodies(Some(String::new()), None, false).unwrap(),
            (None, None)
        );
        assert!(bodies(Some("x".repeat(MAX_BODY + 1)), None, false).is_err());
        assert!(bodies(None, Some("x".repeat(MAX_BODY)), true).is_ok());
        assert!(attachment_fits("a", MAX_ATTACHMENT).is_ok());
        assert!(matches!(
            fails(attachment_fits("a", MAX_ATTACHMENT + 1)),
            ToolError::Refused(_)
        ));
    }

    #[test]
    fn request_bodies() {
        let b = DraftBody {
            to: vec!["a@example.com".into()],
            cc: vec![],
            bcc: vec![],
            subject: None,
            text: Some("hi".into()),
            html: None,
            in_reply_to: None,
        };
        assert_eq!(
            serde_json::to_value(&b).unwrap(),
            serde_json::json!({"to": ["a@example.com"], "text": "hi"})
        );
        let r = ReplyBody {
            text: Some("t".into()),
            html: None,
            reply_all: false,
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"text": "t"})
        );
        let r = ReplyBody {
            text: None,
            html: Some("<p>t</p>".into()),
            reply_all: true,
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"html": "<p>t</p>", "reply_all": true})
        );
        assert_eq!(encode(&Empty {}).unwrap(), b"{}");
    }

    #[test]
    fn errors() {
        assert!(
            matches!(fails(interpret::<Inboxes>(Method::Get, "/v0/inboxes", 404, br#"{"name":"NotFoundError","message":"Thread not found"}"#)), ToolError::NotFound(ref m) if m == "Thread not found")
        );
        let e = fails(interpret::<Inboxes>(
            Method::Get,
            "/v0/inboxes",
            403,
            br#"{"name":"ForbiddenError","message":"Forbidden"}"#,
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 403 && u.message == "Forbidden")
        );
        let e = fails(interpret::<Inboxes>(
            Method::Get,
            "/v0/inboxes",
            422,
            br#"{"name":"ValidationError","errors":[{"message":"to: invalid email"}]}"#,
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 422 && u.message == "ValidationError: to: invalid email"),
            "{e}"
        );
        let e = fails(interpret::<Inboxes>(
            Method::Get,
            "/v0/inboxes",
            502,
            b"Bad Gateway",
        ));
        assert!(matches!(e, ToolError::Upstream(ref u) if u.message == "Bad Gateway"));
        assert!(
            matches!(fails(interpret::<Inboxes>(Method::Get, "/v0/inboxes", 200, b"[1]")), ToolError::BadResponse(ref m) if m.starts_with("GET /v0/inboxes: response is not the expected JSON"))
        );
        let long = format!(r#"{{"message":"{}"}}"#, "é".repeat(400));
        assert!(
            matches!(fails(interpret::<Inboxes>(Method::Get, "/v0/inboxes", 500, long.as_bytes())), ToolError::Upstream(ref u) if u.message.len() <= scout_sdk::errors::MAX_MESSAGE)
        );
    }

    #[test]
    fn search_matches_fields() {
        let t: ApiThreadItem = serde_json::from_str(
            r#"{"thread_id":"t","subject":"Invoice #42","senders":["Billing@Vendor.com"]}"#,
        )
        .unwrap();
        assert!(t.matches("invoice") && t.matches("billing@vendor") && !t.matches("refund"));
        let m: ApiMessageItem = serde_json::from_str(r#"{"message_id":"m","thread_id":"t","from":"Ann <ann@example.com>","to":["support@agentmail.to"]}"#).unwrap();
        assert!(m.matches("ann") && m.matches("support@") && !m.matches("invoice"));
    }
}
