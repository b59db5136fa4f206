//! The DataForSEO connector: thirteen read tools over the DataForSEO v3 API,
//! all grantable, and no write tools. `account` is free; eleven more each
//! send one billed task; `seo_page_opportunities` (a joint tool) also reads
//! the brand's Shopify store and Search Console through those connectors'
//! own origins and credentials, and bills one DataForSEO task.
//!
//! Every request goes through the host's HTTP capability, bound to the
//! DataForSEO API origin with the operator's basic credential
//! (`credential = "basic:LOGIN"`); this code never sees a secret.
//!
//! # Spending
//!
//! Every tool but `account` (`GET /v3/appendix/user_data`, which DataForSEO
//! does not charge for) spends money, so each one, in this order:
//!
//! 1. validates its arguments and builds the one task it sends (nothing an
//!    agent writes travels except the typed fields);
//! 2. checks that the session's meter counts in `micro-usd` (no meter: a
//!    `capability` error of kind `denied`; another unit: kind `invalid`);
//! 3. opens the HTTP client, then reserves the task's estimate (below). A
//!    reservation the allowance cannot cover is refused by the host, and the
//!    refusal (`run-exhausted` / `day-exhausted`) is the tool's error:
//!    nothing has been sent;
//! 4. sends the task and settles the reservation at the `cost` DataForSEO
//!    reports at the top of its answer (USD, converted to micro-USD and
//!    rounded up), whatever the task's status: DataForSEO bills some failed
//!    tasks (40101). An answer without a readable `cost`, or a request that
//!    may have reached DataForSEO without an answer (transport error,
//!    timeout, a body over the size limit), is settled at the whole estimate.
//!    A request the host refused before sending it is settled at zero.
//!    A settlement refused because the cost exceeded what the allowance still
//!    covers is logged; the answer, already paid for, is still returned.
//!
//! # Errors
//!
//! DataForSEO answers HTTP 200 with a `status_code` at the top and one per
//! task (https://docs.dataforseo.com/v3/appendix/errors/). 20000 is ok.
//! Other codes, at the top or in the task, map to tool errors:
//! - 40500–40599 (`Invalid Field`, `POST Data Is Invalid`, ...): the task's
//!   fields were refused, which with typed and validated arguments means a
//!   value DataForSEO does not accept (an unknown location code, say):
//!   `invalid-input`, with DataForSEO's code and message;
//! - 40400–40499 (`Not Found`, ...) and 40102 (`No Search Results`): `not-found`;
//! - anything else (balance, rate limits, 5xxxx): `upstream` with the HTTP
//!   status (200) and DataForSEO's code and message.
//!
//! HTTP 401, 402 and 500 become `upstream` with that status and the body's
//! `status_message`; HTTP 404 becomes `not-found`.
//!
//! What DataForSEO answers was written from its documentation and never
//! observed (ALLOWANCE_UNVERIFIED.dataforseo_absent_cost among them).

#![cfg_attr(not(target_family = "wasm"), allow(dead_code))]

scout_sdk::bindings!();

use bindings::exports::scout::dataforseo::read_tools::{
    self, AccountInfo, Competitor, Device, Difficulty, IntentProbability, KeywordDetail,
    KeywordIntent, KeywordMetrics, MonthlyVolume, Opportunity, OpportunityKind, OrganicResult,
    PageOpportunities, PageReport, RankMonth, RankedKeyword, RankedKeywordList, Serp,
    StorePageKind, TimeRange, TrendGraph, TrendPoint, TrendsType, Volume,
};
use scout_sdk::{
    Capability, CapabilityError, Http, Method, ToolError, UpstreamError, encode_segment, meter,
};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

// ---------------------------------------------------------------------------
// Limits and defaults
// ---------------------------------------------------------------------------

/// The unit the meter must count in.
const UNIT: &str = "micro-usd";
/// Location when none is given: the United States.
const DEFAULT_LOCATION: u32 = 2840;
/// Language when none is given.
const DEFAULT_LANGUAGE: &str = "en";
/// Longest keyword DataForSEO accepts (characters).
const MAX_KEYWORD: usize = 80;
/// Longest keyword DataForSEO Trends accepts (characters).
const MAX_TRENDS_KEYWORD: usize = 100;
/// Shortest keyword the search intent endpoint accepts (characters).
const MIN_INTENT_KEYWORD: usize = 3;
/// Longest URL accepted.
const MAX_URL: usize = 2048;
/// Longest host name (a DNS name's length).
const MAX_HOST: usize = 253;
/// Longest upstream message carried into a tool error.
const MAX_MESSAGE: usize = 500;

/// Seed keywords of `keyword-ideas`.
const MAX_IDEA_SEEDS: usize = 200;
/// Keywords of `search-volume`.
const MAX_VOLUME_KEYWORDS: usize = 1000;
/// Keywords of `keyword-overview`.
const MAX_OVERVIEW_KEYWORDS: usize = 700;
/// Keywords of `keyword-difficulty` and `search-intent`.
const MAX_BULK_KEYWORDS: usize = 1000;
/// Keywords of `trends`.
const MAX_TRENDS_KEYWORDS: usize = 5;
/// Results of `keyword-ideas` and `ranked-keywords`: default and most.
const DEFAULT_LIMIT: u16 = 100;
const MAX_LIMIT: u16 = 1000;
/// Competitors: default and most.
const DEFAULT_COMPETITORS: u8 = 20;
const MAX_COMPETITORS: u8 = 100;
/// SERP depth: default and most.
const DEFAULT_DEPTH: u8 = 10;
const MAX_DEPTH: u8 = 100;

// ---------------------------------------------------------------------------
// Estimates, in micro-USD
// ---------------------------------------------------------------------------
//
// UNVERIFIED: written from DataForSEO's pricing page
// (https://dataforseo.com/pricing) and help-centre articles as read, never
// checked against an invoice. An estimate is what the connector reserves
// before a call; the call is then settled at the cost DataForSEO reports, so
// an estimate decides only whether a call may start. Where the price was
// unclear the estimate leans high, so that a call the allowance could not
// pay is refused before it is sent rather than charged past the allowance.

/// DataForSEO Labs (keyword ideas, overview, ranked keywords, competitors,
/// bulk keyword difficulty, historical rank overview): $0.01 per task
/// (UNVERIFIED)...
const LABS_TASK: u64 = 10_000;
/// ... plus $0.0001 per item returned (UNVERIFIED); the estimate counts the
/// most items the task can return.
const LABS_ITEM: u64 = 100;
/// DataForSEO Labs search intent: $0.001 per task plus $0.0001 per keyword
/// (UNVERIFIED; the help centre's example charged $0.0014 for four keywords).
const INTENT_TASK: u64 = 1_000;
const INTENT_KEYWORD: u64 = 100;
/// Months `historical_rank_overview` may return (monthly since late 2020),
/// counted as items.
const RANK_HISTORY_ITEMS: u64 = 100;
/// Google Ads search volume, live: $0.075 per task of up to 1000 keywords
/// (UNVERIFIED).
const SEARCH_VOLUME_TASK: u64 = 75_000;
/// SERP Google organic, live: $0.002 for the first page of 10 results and
/// $0.0015 for each further page (UNVERIFIED; pricing since 2025-09-19).
const SERP_FIRST_PAGE: u64 = 2_000;
const SERP_NEXT_PAGE: u64 = 1_500;
/// On-Page instant pages: $0.000125 per page (UNVERIFIED); reserved at
/// $0.001 in case the page needs more than the basic fetch.
const INSTANT_PAGE: u64 = 1_000;
/// DataForSEO Trends explore: charged per request whatever the number of
/// keywords; the price was not found, so $0.01 is reserved (UNVERIFIED).
const TRENDS_TASK: u64 = 10_000;

fn labs_estimate(items: u64) -> u64 {
    LABS_TASK + LABS_ITEM * items
}

fn intent_estimate(keywords: usize) -> u64 {
    INTENT_TASK + INTENT_KEYWORD * keywords as u64
}

/// Pages of 10 results a SERP of `depth` results reads, and their price.
fn serp_estimate(depth: u8) -> u64 {
    let pages = (depth as u64).div_ceil(10).max(1);
    SERP_FIRST_PAGE + SERP_NEXT_PAGE * (pages - 1)
}

/// A cost in USD as micro-USD, rounded up. A product within a thousandth of
/// a micro-USD of a whole number is that number (0.0103 USD is 10300, not
/// 10301 from the float's error). A negative, non-finite or absurd figure is
/// no cost at all (`None`): the caller then settles at the estimate.
fn usd_to_micro(usd: f64) -> Option<u64> {
    if !usd.is_finite() || usd < 0.0 || usd > 1e9 {
        return None;
    }
    let micro = usd * 1e6;
    let nearest = micro.round();
    let whole = if (micro - nearest).abs() < 1e-3 {
        nearest
    } else {
        micro.ceil()
    };
    Some(whole as u64)
}

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

fn location(code: Option<u32>) -> Result<u32, ToolError> {
    match code {
        None => Ok(DEFAULT_LOCATION),
        Some(0) => Err(ToolError::invalid(
            "location-code must be a DataForSEO location code such as 2840 (United States)",
        )),
        Some(c) => Ok(c),
    }
}

/// A language code such as `en`, `de` or `zh-TW`: 2 to 7 ASCII letters and `-`.
fn language(code: Option<String>) -> Result<String, ToolError> {
    let Some(code) = code else {
        return Ok(DEFAULT_LANGUAGE.to_string());
    };
    let code = code.trim().to_string();
    let shaped = (2..=7).contains(&code.len())
        && code.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
        && !code.starts_with('-')
        && !code.ends_with('-');
    if !shaped {
        return Err(ToolError::invalid(format!(
            "language-code `{code}` is not a language code such as `en` or `zh-TW`"
        )));
    }
    Ok(code)
}

/// Trims each keyword and checks the list: 1 to `max` keywords, each
/// `min`..=`max_len` characters without control characters.
fn keyword_list(
    keywords: Vec<String>,
    max: usize,
    min_len: usize,
    max_len: usize,
) -> Result<Vec<String>, ToolError> {
    if keywords.is_empty() {
        return Err(ToolError::invalid(
            "keywords is empty: give at least one keyword",
        ));
    }
    if keywords.len() > max {
        return Err(ToolError::invalid(format!(
            "{} keywords given; at most {max} in one call",
            keywords.len()
        )));
    }
    keywords
        .into_iter()
        .map(|k| keyword(k, min_len, max_len))
        .collect()
}

fn keyword(keyword: String, min_len: usize, max_len: usize) -> Result<String, ToolError> {
    let keyword = keyword.trim().to_string();
    let chars = keyword.chars().count();
    if chars == 0 {
        return Err(ToolError::invalid("a keyword is empty"));
    }
    if chars < min_len {
        return Err(ToolError::invalid(format!(
            "keyword `{keyword}` is shorter than {min_len} characters"
        )));
    }
    if chars > max_len {
        return Err(ToolError::invalid(format!(
            "keyword `{keyword}` is longer than {max_len} characters"
        )));
    }
    if keyword.chars().any(char::is_control) {
        return Err(ToolError::invalid("a keyword contains a control character"));
    }
    Ok(keyword)
}

/// DataForSEO Trends refuses keywords with these characters.
const TRENDS_FORBIDDEN: &[char] = &[
    '<', '>', '|', '\\', '"', '-', '+', '=', '~', '!', ':', '*', '(', ')', '[', ']', '{', '}',
];

fn trends_keywords(keywords: Vec<String>) -> Result<Vec<String>, ToolError> {
    let keywords = keyword_list(keywords, MAX_TRENDS_KEYWORDS, 2, MAX_TRENDS_KEYWORD)?;
    for k in &keywords {
        if let Some(c) = k.chars().find(|c| TRENDS_FORBIDDEN.contains(c)) {
            return Err(ToolError::invalid(format!(
                "keyword `{k}` contains `{c}`, which DataForSEO Trends does not accept"
            )));
        }
        if k.contains(',') {
            return Err(ToolError::invalid(format!(
                "keyword `{k}` contains a comma, which DataForSEO Trends drops"
            )));
        }
    }
    Ok(keywords)
}

fn count(limit: Option<u16>, default: u16, max: u16, what: &str) -> Result<u16, ToolError> {
    match limit {
        None => Ok(default),
        Some(0) => Err(ToolError::invalid(format!("{what} must be at least 1"))),
        Some(n) if n > max => Err(ToolError::invalid(format!(
            "{what} {n} is above the most, {max}"
        ))),
        Some(n) => Ok(n),
    }
}

/// A host name: 1 to 253 characters, dot-separated labels of ASCII letters,
/// digits and `-` (not first or last), at least two labels, the last with a
/// letter (so no IP address). Lowercased.
fn host_name(host: &str) -> Result<String, ToolError> {
    let host = host.to_ascii_lowercase();
    let labels: Vec<&str> = host.split('.').collect();
    let shaped = !host.is_empty()
        && host.len() <= MAX_HOST
        && labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
        // A top-level domain has a letter: no IP addresses.
        && labels.last().is_some_and(|l| l.bytes().any(|b| b.is_ascii_alphabetic()));
    if !shaped {
        return Err(ToolError::invalid(format!(
            "`{host}` is not a domain name such as example.com"
        )));
    }
    Ok(host)
}

/// A domain target: `example.com`, without a scheme or path.
fn domain(target: &str) -> Result<String, ToolError> {
    let target = target.trim();
    if target.contains("://") || target.contains('/') {
        return Err(ToolError::invalid(format!(
            "target `{target}` must be a domain such as example.com, without https:// or a path"
        )));
    }
    host_name(target)
}

/// An absolute `https://` or `http://` page URL with a domain host, no
/// credentials, port, fragment, whitespace or non-ASCII characters (send
/// those percent-encoded).
fn page_url(url: &str) -> Result<String, ToolError> {
    let url = url.trim();
    if url.len() > MAX_URL {
        return Err(ToolError::invalid(format!(
            "the URL is longer than {MAX_URL} bytes"
        )));
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| {
            ToolError::invalid(format!(
                "`{url}` is not an absolute http(s) URL such as https://example.com/page"
            ))
        })?;
    if url.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err(ToolError::invalid(
            "the URL contains whitespace, control or non-ASCII characters; percent-encode them",
        ));
    }
    if url.contains('#') {
        return Err(ToolError::invalid(
            "the URL has a fragment (`#...`); give the page's URL without it",
        ));
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.contains('@') || authority.contains(':') {
        return Err(ToolError::invalid(
            "the URL's host must be a plain domain name, without credentials or a port",
        ));
    }
    let host = host_name(authority)?;
    let scheme_len = url.len() - rest.len();
    Ok(format!("{}{host}{}", &url[..scheme_len], &rest[end..]))
}

/// `ranked-keywords` takes a domain or a page URL.
fn ranked_target(target: &str) -> Result<String, ToolError> {
    let t = target.trim();
    if t.starts_with("https://") || t.starts_with("http://") {
        page_url(t)
    } else {
        domain(t)
    }
}

fn device_name(device: Option<Device>) -> &'static str {
    match device {
        None | Some(Device::Desktop) => "desktop",
        Some(Device::Mobile) => "mobile",
    }
}

fn trends_type_name(kind: Option<TrendsType>) -> &'static str {
    match kind {
        None | Some(TrendsType::Web) => "web",
        Some(TrendsType::News) => "news",
        Some(TrendsType::Ecommerce) => "ecommerce",
    }
}

fn time_range_name(range: Option<TimeRange>) -> &'static str {
    match range {
        Some(TimeRange::Past7Days) => "past_7_days",
        Some(TimeRange::Past30Days) => "past_30_days",
        Some(TimeRange::Past90Days) => "past_90_days",
        None | Some(TimeRange::Past12Months) => "past_12_months",
        Some(TimeRange::Past5Years) => "past_5_years",
    }
}

// ---------------------------------------------------------------------------
// Tasks (the one element of each POST array)
// ---------------------------------------------------------------------------

/// Keywords in one location and language.
#[derive(Serialize)]
struct KeywordsTask<'a> {
    keywords: &'a [String],
    location_code: u32,
    language_code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<u16>,
}

#[derive(Serialize)]
struct IntentTask<'a> {
    keywords: &'a [String],
    language_code: &'a str,
}

/// A domain or page in one location and language.
#[derive(Serialize)]
struct TargetTask<'a> {
    target: &'a str,
    location_code: u32,
    language_code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<u16>,
    /// Ranked keywords: organic results only, so that positions are organic ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    item_types: Option<[&'static str; 1]>,
}

#[derive(Serialize)]
struct SerpTask<'a> {
    keyword: &'a str,
    location_code: u32,
    language_code: &'a str,
    device: &'static str,
    depth: u8,
}

#[derive(Serialize)]
struct PageTask<'a> {
    url: &'a str,
}

#[derive(Serialize)]
struct TrendsTask<'a> {
    keywords: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    location_code: Option<u32>,
    #[serde(rename = "type")]
    kind: &'static str,
    time_range: &'static str,
}

/// The POST body: a JSON array of exactly one task.
fn task_body<T: Serialize>(task: &T) -> Result<Vec<u8>, ToolError> {
    serde_json::to_vec(&[task])
        .map_err(|e| ToolError::invalid(format!("cannot encode the task: {e}")))
}

// ---------------------------------------------------------------------------
// Answers: the envelope, status codes and cost
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct Envelope<T> {
    #[serde(default)]
    status_code: Option<u32>,
    #[serde(default)]
    status_message: Option<String>,
    #[serde(default = "Option::default")]
    tasks: Option<Vec<Task<T>>>,
}

#[derive(Deserialize)]
struct Task<T> {
    status_code: u32,
    #[serde(default)]
    status_message: Option<String>,
    #[serde(default = "Option::default")]
    result: Option<Vec<T>>,
}

/// Only the top-level `cost` of an answer.
#[derive(Deserialize)]
struct CostOnly {
    #[serde(default)]
    cost: Option<f64>,
}

/// Only the status of an error answer.
#[derive(Deserialize)]
struct StatusOnly {
    #[serde(default)]
    status_code: Option<u32>,
    #[serde(default)]
    status_message: Option<String>,
}

const OK: u32 = 20000;

fn cut(text: &str) -> String {
    let mut end = text.len().min(MAX_MESSAGE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The micro-USD an answer says it cost, if it says so readably.
fn reported_cost(body: &[u8]) -> Option<u64> {
    serde_json::from_slice::<CostOnly>(body)
        .ok()?
        .cost
        .and_then(usd_to_micro)
}

/// A DataForSEO status code other than 20000 as a tool error.
fn status_error(http_status: u16, code: u32, message: Option<&str>) -> ToolError {
    let message = cut(&format!(
        "DataForSEO {code}: {}",
        message.unwrap_or("no message").trim()
    ));
    match code {
        40500..=40599 => ToolError::InvalidInput(message),
        40400..=40499 | 40102 => ToolError::NotFound(message),
        _ => ToolError::Upstream(UpstreamError {
            status: http_status,
            message,
        }),
    }
}

/// Turns DataForSEO's answer into its one task's `result` list (empty when
/// the task has none), or a tool error: a non-2xx HTTP status, then a
/// top-level status code other than 20000, then the task's.
fn interpret<T: DeserializeOwned>(status: u16, body: &[u8]) -> Result<Vec<T>, ToolError> {
    if !(200..300).contains(&status) {
        let message = match serde_json::from_slice::<StatusOnly>(body) {
            Ok(StatusOnly {
                status_code,
                status_message: Some(m),
            }) => match status_code {
                Some(code) => format!("DataForSEO {code}: {}", m.trim()),
                None => m.trim().to_string(),
            },
            _ => String::from_utf8_lossy(body).trim().to_string(),
        };
        let message = cut(&message);
        if status == 404 {
            return Err(ToolError::NotFound(message));
        }
        return Err(ToolError::Upstream(UpstreamError { status, message }));
    }
    // The status first, so that an error answer whose task has an
    // unexpected shape is still reported as the error it is.
    if let Ok(head) = serde_json::from_slice::<Envelope<IgnoredAny>>(body) {
        if let Some(code) = head.status_code
            && code != OK
        {
            return Err(status_error(status, code, head.status_message.as_deref()));
        }
        if let Some(task) = head.tasks.as_ref().and_then(|t| t.first())
            && task.status_code != OK
        {
            return Err(status_error(
                status,
                task.status_code,
                task.status_message.as_deref(),
            ));
        }
    }
    let envelope: Envelope<T> = serde_json::from_slice(body)
        .map_err(|e| ToolError::BadResponse(format!("response is not the expected JSON: {e}")))?;
    let task = envelope
        .tasks
        .and_then(|t| t.into_iter().next())
        .ok_or_else(|| ToolError::BadResponse("the answer holds no task".into()))?;
    Ok(task.result.unwrap_or_default())
}

/// The refusal of a meter in the wrong unit, or of no meter (the host
/// answers an empty unit when the session holds none).
fn meter_refusal(unit: &str) -> Option<ToolError> {
    if unit == UNIT {
        return None;
    }
    let (kind, message) = if unit.is_empty() {
        ("denied", "this session holds no DataForSEO allowance, and every DataForSEO call but the account bills".to_string())
    } else {
        (
            "invalid",
            format!(
                "the meter counts in `{}`; DataForSEO bills in `{UNIT}`",
                cut(unit)
            ),
        )
    };
    Some(ToolError::Capability(CapabilityError {
        capability: Capability::Meter,
        kind: kind.into(),
        message,
        amount: None,
    }))
}

/// What to settle a reservation of `estimate` at, after `sent`.
fn settlement(sent: &Result<scout_sdk::Response, ToolError>, estimate: u64) -> u64 {
    match sent {
        Ok(response) => reported_cost(&response.body).unwrap_or(estimate),
        // The host refused the request before sending it: nothing was spent.
        Err(ToolError::Capability(e)) if e.capability == Capability::Http && e.kind == "denied" => {
            0
        }
        // Transport error, timeout, an answer over the size limit: the task
        // may have run and been billed.
        Err(_) => estimate,
    }
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

fn client() -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-dataforseo"))
}

/// Refuses before anything when the session's meter is not in micro-USD.
fn check_meter() -> Result<(), ToolError> {
    match meter_refusal(&meter::unit()) {
        Some(refusal) => Err(refusal),
        None => Ok(()),
    }
}

/// Sends one billed task: meter check, reservation of `estimate`, the POST,
/// settlement at the reported cost, then the answer's result list.
fn billed<T: DeserializeOwned>(
    path: &str,
    body: Vec<u8>,
    estimate: u64,
) -> Result<Vec<T>, ToolError> {
    check_meter()?;
    // Connect before reserving: a reservation dropped unsettled is charged.
    let http = client()?;
    let reservation = meter::reserve(estimate)?;
    send_billed(&http, reservation, path, body, estimate)
}

/// Sends a task whose `estimate` is reserved, and settles the reservation.
fn send_billed<T: DeserializeOwned>(
    http: &Http,
    reservation: meter::Reservation,
    path: &str,
    body: Vec<u8>,
    estimate: u64,
) -> Result<Vec<T>, ToolError> {
    let sent = http.send(Method::Post, path, &[], Some(body));
    settle(reservation, settlement(&sent, estimate), path, estimate);
    let response = sent?;
    interpret(response.status, &response.body)
}

/// Settles a reservation; a refusal (the cost exceeded what the allowance
/// still covers, which the host then charged up to the allowance) is logged:
/// the answer was paid for either way.
fn settle(reservation: meter::Reservation, actual: u64, path: &str, estimate: u64) {
    if let Err(e) = reservation.settle(actual) {
        scout_sdk::log::warn(&format!(
            "settling {actual} {UNIT} for {path} (reserved {estimate}): {}",
            ToolError::from(e)
        ));
    }
}

/// The first result of a task that answers one object.
fn first<T>(results: Vec<T>, what: &str) -> Result<T, ToolError> {
    results
        .into_iter()
        .next()
        .ok_or_else(|| ToolError::NotFound(format!("DataForSEO returned no {what}")))
}

// ---------------------------------------------------------------------------
// Answer shapes
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct ApiUserData {
    login: String,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    money: Option<ApiMoney>,
}

#[derive(Deserialize)]
struct ApiMoney {
    #[serde(default)]
    total: Option<f64>,
    #[serde(default)]
    balance: Option<f64>,
}

#[derive(Deserialize)]
struct ApiMonthly {
    year: u16,
    month: u8,
    #[serde(default)]
    search_volume: Option<u64>,
}

impl From<ApiMonthly> for MonthlyVolume {
    fn from(m: ApiMonthly) -> MonthlyVolume {
        MonthlyVolume {
            year: m.year,
            month: m.month,
            search_volume: m.search_volume,
        }
    }
}

fn monthly(list: Option<Vec<ApiMonthly>>) -> Vec<MonthlyVolume> {
    list.unwrap_or_default()
        .into_iter()
        .map(MonthlyVolume::from)
        .collect()
}

#[derive(Deserialize, Default)]
struct ApiKeywordInfo {
    #[serde(default)]
    search_volume: Option<u64>,
    #[serde(default)]
    cpc: Option<f64>,
    #[serde(default)]
    competition: Option<f64>,
    #[serde(default)]
    competition_level: Option<String>,
    #[serde(default)]
    monthly_searches: Option<Vec<ApiMonthly>>,
}

#[derive(Deserialize, Default)]
struct ApiKeywordProperties {
    #[serde(default)]
    keyword_difficulty: Option<f64>,
}

#[derive(Deserialize, Default)]
struct ApiIntentInfo {
    #[serde(default)]
    main_intent: Option<String>,
}

/// A DataForSEO Labs keyword item (keyword ideas, keyword overview) or a
/// ranked keyword's `keyword_data`.
#[derive(Deserialize)]
struct ApiLabsKeyword {
    keyword: String,
    #[serde(default)]
    keyword_info: Option<ApiKeywordInfo>,
    #[serde(default)]
    keyword_properties: Option<ApiKeywordProperties>,
    #[serde(default)]
    search_intent_info: Option<ApiIntentInfo>,
}

/// A 0–100 score as a whole number.
fn score(x: Option<f64>) -> Option<u8> {
    x.filter(|v| v.is_finite())
        .map(|v| v.round().clamp(0.0, 100.0) as u8)
}

impl ApiLabsKeyword {
    fn split(self) -> (KeywordMetrics, Vec<MonthlyVolume>) {
        let info = self.keyword_info.unwrap_or_default();
        let metrics = KeywordMetrics {
            keyword: self.keyword,
            search_volume: info.search_volume,
            cpc_usd: info.cpc,
            competition: info.competition,
            competition_level: info.competition_level,
            keyword_difficulty: score(
                self.keyword_properties
                    .unwrap_or_default()
                    .keyword_difficulty,
            ),
            main_intent: self.search_intent_info.unwrap_or_default().main_intent,
        };
        (metrics, monthly(info.monthly_searches))
    }
}

#[derive(Deserialize)]
struct ApiItems<T> {
    #[serde(default = "Option::default")]
    items: Option<Vec<T>>,
}

fn items<T>(results: Vec<ApiItems<T>>) -> Vec<T> {
    results
        .into_iter()
        .flat_map(|r| r.items.unwrap_or_default())
        .collect()
}

#[derive(Deserialize)]
struct ApiSearchVolume {
    keyword: String,
    #[serde(default)]
    search_volume: Option<u64>,
    #[serde(default)]
    cpc: Option<f64>,
    #[serde(default)]
    competition: Option<String>,
    #[serde(default)]
    competition_index: Option<f64>,
    #[serde(default)]
    low_top_of_page_bid: Option<f64>,
    #[serde(default)]
    high_top_of_page_bid: Option<f64>,
    #[serde(default)]
    monthly_searches: Option<Vec<ApiMonthly>>,
}

#[derive(Deserialize)]
struct ApiRankedResult {
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    total_count: Option<u64>,
    #[serde(default)]
    items: Option<Vec<ApiRankedItem>>,
}

#[derive(Deserialize)]
struct ApiRankedItem {
    keyword_data: ApiLabsKeyword,
    ranked_serp_element: ApiRankedElement,
}

#[derive(Deserialize)]
struct ApiRankedElement {
    serp_item: ApiSerpItem,
}

#[derive(Deserialize)]
struct ApiSerpItem {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    rank_group: Option<u32>,
    #[serde(default)]
    rank_absolute: Option<u32>,
    #[serde(default)]
    domain: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    etv: Option<f64>,
}

impl ApiRankedItem {
    fn into_ranked(self) -> RankedKeyword {
        let (metrics, _) = self.keyword_data.split();
        let s = self.ranked_serp_element.serp_item;
        RankedKeyword {
            keyword: metrics.keyword,
            search_volume: metrics.search_volume,
            rank_group: s.rank_group.unwrap_or_default(),
            rank_absolute: s.rank_absolute.unwrap_or_default(),
            url: s.url,
            title: s.title,
            etv: s.etv,
            keyword_difficulty: metrics.keyword_difficulty,
        }
    }
}

fn ranked_keywords_of(results: Vec<ApiRankedResult>, target: &str) -> RankedKeywordList {
    let mut out = RankedKeywordList {
        target: target.to_string(),
        total_count: 0,
        items: Vec::new(),
    };
    if let Some(r) = results.into_iter().next() {
        out.target = r.target.unwrap_or(out.target);
        out.items = r
            .items
            .unwrap_or_default()
            .into_iter()
            .map(ApiRankedItem::into_ranked)
            .collect();
        out.total_count = r.total_count.unwrap_or(out.items.len() as u64);
    }
    out
}

#[derive(Deserialize)]
struct ApiSerp {
    keyword: String,
    #[serde(default)]
    check_url: Option<String>,
    #[serde(default)]
    se_results_count: Option<u64>,
    #[serde(default)]
    item_types: Option<Vec<String>>,
    #[serde(default)]
    items: Option<Vec<ApiSerpItem>>,
}

impl From<ApiSerp> for Serp {
    fn from(s: ApiSerp) -> Serp {
        let organic = s
            .items
            .unwrap_or_default()
            .into_iter()
            .filter(|i| i.kind.as_deref() == Some("organic"))
            .map(|i| OrganicResult {
                rank_group: i.rank_group.unwrap_or_default(),
                rank_absolute: i.rank_absolute.unwrap_or_default(),
                domain: i.domain,
                title: i.title,
                url: i.url,
                description: i.description,
            })
            .collect();
        Serp {
            keyword: s.keyword,
            check_url: s.check_url,
            se_results_count: s.se_results_count,
            item_types: s.item_types.unwrap_or_default(),
            organic,
        }
    }
}

#[derive(Deserialize)]
struct ApiCompetitor {
    domain: String,
    #[serde(default)]
    avg_position: Option<f64>,
    #[serde(default)]
    intersections: Option<u64>,
    #[serde(default)]
    full_domain_metrics: Option<ApiMetrics>,
}

#[derive(Deserialize, Default)]
struct ApiMetrics {
    #[serde(default)]
    organic: Option<ApiOrganicMetrics>,
}

#[derive(Deserialize, Default)]
struct ApiOrganicMetrics {
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    etv: Option<f64>,
    #[serde(default)]
    pos_1: Option<u64>,
    #[serde(default)]
    pos_2_3: Option<u64>,
    #[serde(default)]
    pos_4_10: Option<u64>,
    #[serde(default)]
    pos_11_20: Option<u64>,
}

impl From<ApiCompetitor> for Competitor {
    fn from(c: ApiCompetitor) -> Competitor {
        let organic = c
            .full_domain_metrics
            .unwrap_or_default()
            .organic
            .unwrap_or_default();
        Competitor {
            domain: c.domain,
            avg_position: c.avg_position,
            intersections: c.intersections,
            organic_keywords: organic.count,
            organic_etv: organic.etv,
        }
    }
}

/// A check's value: only `true` counts; anything else (false, null, a
/// number) does not.
enum Flag {
    Bool(bool),
    Other,
}

/// Any JSON value, skipped, for the visitors below (a hand-written visitor
/// instead of `#[serde(untagged)]`, whose buffering costs some 40 KB).
fn skip_map<'de, A: serde::de::MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_seq<'de, A: serde::de::SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Flag, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Flag;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Flag, E> {
                Ok(Flag::Bool(v))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_unit<E>(self) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_none<E>(self) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Flag, A::Error> {
                skip_map(map).map(|_| Flag::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Flag, A::Error> {
                skip_seq(seq).map(|_| Flag::Other)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct ApiPage {
    url: String,
    #[serde(default)]
    status_code: Option<u16>,
    #[serde(default)]
    onpage_score: Option<f64>,
    #[serde(default)]
    meta: Option<ApiMeta>,
    #[serde(default)]
    page_timing: Option<ApiTiming>,
    #[serde(default)]
    checks: Option<BTreeMap<String, Flag>>,
}

#[derive(Deserialize, Default)]
struct ApiMeta {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    canonical: Option<String>,
    #[serde(default)]
    htags: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default)]
    internal_links_count: Option<u64>,
    #[serde(default)]
    external_links_count: Option<u64>,
    #[serde(default)]
    images_count: Option<u64>,
    #[serde(default)]
    content: Option<ApiContent>,
}

#[derive(Deserialize, Default)]
struct ApiContent {
    #[serde(default)]
    plain_text_word_count: Option<f64>,
}

#[derive(Deserialize, Default)]
struct ApiTiming {
    #[serde(default)]
    duration_time: Option<f64>,
}

/// The checks of an instant page that are problems when true. Checks such
/// as `is_https`, `canonical` or `seo_friendly_url` are good news when true
/// and are not listed.
const PROBLEM_CHECKS: &[&str] = &[
    "deprecated_html_tags",
    "duplicate_meta_tags",
    "duplicate_title_tag",
    "flash",
    "frame",
    "has_meta_refresh_redirect",
    "has_render_blocking_resources",
    "high_loading_time",
    "high_waiting_time",
    "https_to_http_links",
    "irrelevant_description",
    "irrelevant_meta_keywords",
    "irrelevant_title",
    "is_4xx_code",
    "is_5xx_code",
    "is_broken",
    "is_http",
    "is_redirect",
    "large_page_size",
    "lorem_ipsum",
    "low_character_count",
    "low_content_rate",
    "low_readability_rate",
    "no_content_encoding",
    "no_description",
    "no_doctype",
    "no_encoding_meta_tag",
    "no_favicon",
    "no_h1_tag",
    "no_image_alt",
    "no_image_title",
    "no_title",
    "size_greater_than_3mb",
    "small_page_size",
    "title_too_long",
    "title_too_short",
];

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

impl From<ApiPage> for PageReport {
    fn from(p: ApiPage) -> PageReport {
        let meta = p.meta.unwrap_or_default();
        let mut htags = meta.htags.unwrap_or_default();
        let problems = p
            .checks
            .unwrap_or_default()
            .into_iter()
            .filter(|(name, flag)| {
                matches!(flag, Flag::Bool(true)) && PROBLEM_CHECKS.contains(&name.as_str())
            })
            .map(|(name, _)| name)
            .collect();
        PageReport {
            url: p.url,
            status_code: p.status_code.unwrap_or_default(),
            onpage_score: p.onpage_score,
            title: non_empty(meta.title),
            description: non_empty(meta.description),
            h1: htags.remove("h1").unwrap_or_default(),
            word_count: meta
                .content
                .and_then(|c| c.plain_text_word_count)
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v as u64),
            internal_links: meta.internal_links_count,
            external_links: meta.external_links_count,
            images: meta.images_count,
            load_time_ms: p
                .page_timing
                .and_then(|t| t.duration_time)
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v.round() as u64),
            canonical: non_empty(meta.canonical),
            problems,
        }
    }
}

#[derive(Deserialize)]
struct ApiDifficulty {
    keyword: String,
    #[serde(default)]
    keyword_difficulty: Option<f64>,
}

#[derive(Deserialize)]
struct ApiIntentLabel {
    label: String,
    probability: f64,
}

impl From<ApiIntentLabel> for IntentProbability {
    fn from(i: ApiIntentLabel) -> IntentProbability {
        IntentProbability {
            intent: i.label,
            probability: i.probability,
        }
    }
}

#[derive(Deserialize)]
struct ApiIntent {
    keyword: String,
    #[serde(default)]
    keyword_intent: Option<ApiIntentLabel>,
    #[serde(default)]
    secondary_keyword_intents: Option<Vec<ApiIntentLabel>>,
}

#[derive(Deserialize)]
struct ApiRankMonth {
    year: u16,
    month: u8,
    #[serde(default)]
    metrics: Option<ApiMetrics>,
}

impl From<ApiRankMonth> for RankMonth {
    fn from(m: ApiRankMonth) -> RankMonth {
        let o = m.metrics.unwrap_or_default().organic.unwrap_or_default();
        RankMonth {
            year: m.year,
            month: m.month,
            organic_keywords: o.count,
            organic_etv: o.etv,
            pos_1: o.pos_1,
            pos_2_3: o.pos_2_3,
            pos_4_10: o.pos_4_10,
            pos_11_20: o.pos_11_20,
        }
    }
}

#[derive(Deserialize)]
struct ApiTrends {
    #[serde(default)]
    keywords: Option<Vec<String>>,
    #[serde(default)]
    items: Option<Vec<ApiTrendsItem>>,
}

#[derive(Deserialize)]
struct ApiTrendsItem {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    keywords: Option<Vec<String>>,
    #[serde(default)]
    data: Option<Vec<ApiTrendsPoint>>,
    #[serde(default)]
    averages: Option<Vec<Option<f64>>>,
}

#[derive(Deserialize)]
struct ApiTrendsPoint {
    date_from: String,
    date_to: String,
    #[serde(default)]
    values: Vec<Option<f64>>,
}

fn popularity(v: Option<f64>) -> Option<u32> {
    v.filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v.round() as u32)
}

fn trends_of(result: ApiTrends, asked: &[String]) -> TrendGraph {
    let graph = result
        .items
        .unwrap_or_default()
        .into_iter()
        .find(|i| i.kind == "dataforseo_trends_graph");
    let keywords = graph
        .as_ref()
        .and_then(|g| g.keywords.clone())
        .or(result.keywords)
        .unwrap_or_else(|| asked.to_vec());
    let Some(graph) = graph else {
        return TrendGraph {
            keywords,
            points: Vec::new(),
            averages: Vec::new(),
        };
    };
    TrendGraph {
        keywords,
        points: graph
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|p| TrendPoint {
                date_from: p.date_from,
                date_to: p.date_to,
                values: p.values.into_iter().map(popularity).collect(),
            })
            .collect(),
        averages: graph
            .averages
            .unwrap_or_default()
            .into_iter()
            .map(popularity)
            .collect(),
    }
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

const USER_DATA: &str = "/v3/appendix/user_data";
const KEYWORD_IDEAS: &str = "/v3/dataforseo_labs/google/keyword_ideas/live";
const SEARCH_VOLUME: &str = "/v3/keywords_data/google_ads/search_volume/live";
const KEYWORD_OVERVIEW: &str = "/v3/dataforseo_labs/google/keyword_overview/live";
const RANKED_KEYWORDS: &str = "/v3/dataforseo_labs/google/ranked_keywords/live";
const SERP_ORGANIC: &str = "/v3/serp/google/organic/live/advanced";
const COMPETITORS: &str = "/v3/dataforseo_labs/google/competitors_domain/live";
const INSTANT_PAGES: &str = "/v3/on_page/instant_pages";
const KEYWORD_DIFFICULTY: &str = "/v3/dataforseo_labs/google/bulk_keyword_difficulty/live";
const SEARCH_INTENT: &str = "/v3/dataforseo_labs/google/search_intent/live";
const RANK_HISTORY: &str = "/v3/dataforseo_labs/google/historical_rank_overview/live";
const TRENDS_EXPLORE: &str = "/v3/keywords_data/dataforseo_trends/explore/live";

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct DataForSeo;

impl read_tools::Guest for DataForSeo {
    fn seo_page_opportunities(
        page_url: String,
        site_url: Option<String>,
        start_date: String,
        end_date: String,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<PageOpportunities, ToolError> {
        page_opportunities(
            page_url,
            site_url,
            start_date,
            end_date,
            location_code,
            language_code,
        )
    }

    fn account() -> Result<AccountInfo, ToolError> {
        // Free: no reservation, and no meter needed.
        let response = client()?.send(Method::Get, USER_DATA, &[], None)?;
        let user: ApiUserData = first(interpret(response.status, &response.body)?, "account data")?;
        let money = user.money.ok_or_else(|| {
            ToolError::BadResponse("the account data holds no money figures".into())
        })?;
        Ok(AccountInfo {
            login: user.login,
            timezone: non_empty(user.timezone),
            balance_usd: money.balance.ok_or_else(|| {
                ToolError::BadResponse("the account data holds no balance".into())
            })?,
            total_deposited_usd: money.total,
        })
    }

    fn keyword_ideas(
        keywords: Vec<String>,
        location_code: Option<u32>,
        language_code: Option<String>,
        limit: Option<u16>,
    ) -> Result<Vec<KeywordMetrics>, ToolError> {
        let keywords = keyword_list(keywords, MAX_IDEA_SEEDS, 1, MAX_KEYWORD)?;
        let (location_code, language_code) = (location(location_code)?, language(language_code)?);
        let limit = count(limit, DEFAULT_LIMIT, MAX_LIMIT, "limit")?;
        let body = task_body(&KeywordsTask {
            keywords: &keywords,
            location_code,
            language_code: &language_code,
            limit: Some(limit),
        })?;
        let results: Vec<ApiItems<ApiLabsKeyword>> =
            billed(KEYWORD_IDEAS, body, labs_estimate(limit as u64))?;
        Ok(items(results).into_iter().map(|k| k.split().0).collect())
    }

    fn search_volume(
        keywords: Vec<String>,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<Vec<Volume>, ToolError> {
        let keywords = keyword_list(keywords, MAX_VOLUME_KEYWORDS, 1, MAX_KEYWORD)?;
        let (location_code, language_code) = (location(location_code)?, language(language_code)?);
        let body = task_body(&KeywordsTask {
            keywords: &keywords,
            location_code,
            language_code: &language_code,
            limit: None,
        })?;
        let results: Vec<ApiSearchVolume> = billed(SEARCH_VOLUME, body, SEARCH_VOLUME_TASK)?;
        Ok(results
            .into_iter()
            .map(|v| Volume {
                keyword: v.keyword,
                search_volume: v.search_volume,
                cpc_usd: v.cpc,
                competition: v.competition,
                competition_index: score(v.competition_index),
                low_top_of_page_bid_usd: v.low_top_of_page_bid,
                high_top_of_page_bid_usd: v.high_top_of_page_bid,
                monthly_searches: monthly(v.monthly_searches),
            })
            .collect())
    }

    fn keyword_overview(
        keywords: Vec<String>,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<Vec<KeywordDetail>, ToolError> {
        let keywords = keyword_list(keywords, MAX_OVERVIEW_KEYWORDS, 1, MAX_KEYWORD)?;
        let (location_code, language_code) = (location(location_code)?, language(language_code)?);
        let body = task_body(&KeywordsTask {
            keywords: &keywords,
            location_code,
            language_code: &language_code,
            limit: None,
        })?;
        let results: Vec<ApiItems<ApiLabsKeyword>> =
            billed(KEYWORD_OVERVIEW, body, labs_estimate(keywords.len() as u64))?;
        Ok(items(results)
            .into_iter()
            .map(|k| {
                let (metrics, monthly_searches) = k.split();
                KeywordDetail {
                    metrics,
                    monthly_searches,
                }
            })
            .collect())
    }

    fn ranked_keywords(
        target: String,
        location_code: Option<u32>,
        language_code: Option<String>,
        limit: Option<u16>,
    ) -> Result<RankedKeywordList, ToolError> {
        let target = ranked_target(&target)?;
        let (location_code, language_code) = (location(location_code)?, language(language_code)?);
        let limit = count(limit, DEFAULT_LIMIT, MAX_LIMIT, "limit")?;
        let task = TargetTask {
            target: &target,
            location_code,
            language_code: &language_code,
            limit: Some(limit),
            item_types: Some(["organic"]),
        };
        let results: Vec<ApiRankedResult> = billed(
            RANKED_KEYWORDS,
            task_body(&task)?,
            labs_estimate(limit as u64),
        )?;
        Ok(ranked_keywords_of(results, &target))
    }

    fn serp_organic(
        keyword: String,
        location_code: Option<u32>,
        language_code: Option<String>,
        device: Option<Device>,
        depth: Option<u8>,
    ) -> Result<Serp, ToolError> {
        let keyword = self::keyword(keyword, 1, MAX_KEYWORD)?;
        let (location_code, language_code) = (location(location_code)?, language(language_code)?);
        let depth = count(
            depth.map(u16::from),
            DEFAULT_DEPTH as u16,
            MAX_DEPTH as u16,
            "depth",
        )? as u8;
        let task = SerpTask {
            keyword: &keyword,
            location_code,
            language_code: &language_code,
            device: device_name(device),
            depth,
        };
        let results: Vec<ApiSerp> = billed(SERP_ORGANIC, task_body(&task)?, serp_estimate(depth))?;
        Ok(first(results, "SERP")?.into())
    }

    fn competitors(
        target: String,
        location_code: Option<u32>,
        language_code: Option<String>,
        limit: Option<u8>,
    ) -> Result<Vec<Competitor>, ToolError> {
        let target = domain(&target)?;
        let (location_code, language_code) = (location(location_code)?, language(language_code)?);
        let limit = count(
            limit.map(u16::from),
            DEFAULT_COMPETITORS as u16,
            MAX_COMPETITORS as u16,
            "limit",
        )?;
        let task = TargetTask {
            target: &target,
            location_code,
            language_code: &language_code,
            limit: Some(limit),
            item_types: None,
        };
        let results: Vec<ApiItems<ApiCompetitor>> =
            billed(COMPETITORS, task_body(&task)?, labs_estimate(limit as u64))?;
        Ok(items(results).into_iter().map(Competitor::from).collect())
    }

    fn page_audit(url: String) -> Result<PageReport, ToolError> {
        let url = page_url(&url)?;
        let results: Vec<ApiItems<ApiPage>> = billed(
            INSTANT_PAGES,
            task_body(&PageTask { url: &url })?,
            INSTANT_PAGE,
        )?;
        Ok(first(items(results), "page")?.into())
    }

    fn keyword_difficulty(
        keywords: Vec<String>,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<Vec<Difficulty>, ToolError> {
        let keywords = keyword_list(keywords, MAX_BULK_KEYWORDS, 1, MAX_KEYWORD)?;
        let (location_code, language_code) = (location(location_code)?, language(language_code)?);
        let body = task_body(&KeywordsTask {
            keywords: &keywords,
            location_code,
            language_code: &language_code,
            limit: None,
        })?;
        let results: Vec<ApiItems<ApiDifficulty>> = billed(
            KEYWORD_DIFFICULTY,
            body,
            labs_estimate(keywords.len() as u64),
        )?;
        Ok(items(results)
            .into_iter()
            .map(|d| Difficulty {
                keyword: d.keyword,
                difficulty: score(d.keyword_difficulty),
            })
            .collect())
    }

    fn search_intent(
        keywords: Vec<String>,
        language_code: Option<String>,
    ) -> Result<Vec<KeywordIntent>, ToolError> {
        let keywords = keyword_list(keywords, MAX_BULK_KEYWORDS, MIN_INTENT_KEYWORD, MAX_KEYWORD)?;
        let language_code = language(language_code)?;
        let body = task_body(&IntentTask {
            keywords: &keywords,
            language_code: &language_code,
        })?;
        let results: Vec<ApiItems<ApiIntent>> =
            billed(SEARCH_INTENT, body, intent_estimate(keywords.len()))?;
        Ok(items(results)
            .into_iter()
            .map(|i| KeywordIntent {
                keyword: i.keyword,
                main: i.keyword_intent.map(IntentProbability::from),
                secondary: i
                    .secondary_keyword_intents
                    .unwrap_or_default()
                    .into_iter()
                    .map(IntentProbability::from)
                    .collect(),
            })
            .collect())
    }

    fn rank_history(
        target: String,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<Vec<RankMonth>, ToolError> {
        let target = domain(&target)?;
        let (location_code, language_code) = (location(location_code)?, language(language_code)?);
        let task = TargetTask {
            target: &target,
            location_code,
            language_code: &language_code,
            limit: None,
            item_types: None,
        };
        let results: Vec<ApiItems<ApiRankMonth>> = billed(
            RANK_HISTORY,
            task_body(&task)?,
            labs_estimate(RANK_HISTORY_ITEMS),
        )?;
        Ok(items(results).into_iter().map(RankMonth::from).collect())
    }

    fn trends(
        keywords: Vec<String>,
        location_code: Option<u32>,
        kind: Option<TrendsType>,
        time_range: Option<TimeRange>,
    ) -> Result<TrendGraph, ToolError> {
        let keywords = trends_keywords(keywords)?;
        let location_code = match location_code {
            None => None,
            Some(c) => Some(location(Some(c))?),
        };
        let task = TrendsTask {
            keywords: &keywords,
            location_code,
            kind: trends_type_name(kind),
            time_range: time_range_name(time_range),
        };
        let results: Vec<ApiTrends> = billed(TRENDS_EXPLORE, task_body(&task)?, TRENDS_TASK)?;
        Ok(trends_of(first(results, "trends")?, &keywords))
    }
}

// ---------------------------------------------------------------------------
// The joint tool: seo_page_opportunities
// ---------------------------------------------------------------------------
//
// It reads three connectors, in this order, and spends only on the last:
// 1. Shopify (destination `shopify`, the Shopify connector's origin and
//    credential): one fixed GraphQL query by the page's handle, sent as
//    variables, never spliced into the document;
// 2. Search Console (destination `searchconsole`): the page's queries over
//    the period, filtered to that one page;
// 3. DataForSEO: the page's ranked keywords (billed).
// The DataForSEO estimate is reserved before the first request, so a call
// the allowance cannot cover sends nothing to anyone; if Shopify or Search
// Console fails, the reservation is settled at zero (nothing billed was sent).

/// The Shopify Admin API version of the Shopify connector's own routes.
const SHOPIFY_GRAPHQL: &str = "/admin/api/2026-10/graphql.json";
/// A product by its handle.
const PRODUCT_QUERY: &str = "query pageProduct($handle: String!) { productByIdentifier(identifier: {handle: $handle}) { id title handle description seo { title description } } }";
/// An online-store page by its handle (the `pages` search, `handle:` filter).
const PAGE_QUERY: &str = "query pageContent($query: String!) { pages(first: 1, query: $query) { nodes { id title handle body } } }";
/// Ranked keywords read for the page.
const OPPORTUNITY_KEYWORDS: u16 = 100;
/// Search Console rows read for the page.
const OPPORTUNITY_ROWS: u32 = 250;
/// A Search Console query counts only from this many impressions.
const MIN_IMPRESSIONS: u64 = 10;
/// Below this click-through rate a top-three query is a low-CTR opportunity.
const LOW_CTR: f64 = 0.03;
/// Most opportunities returned.
const MAX_OPPORTUNITIES: usize = 50;
/// Longest Shopify handle accepted.
const MAX_HANDLE: usize = 255;

/// The host of a URL `page_url` accepted.
fn url_host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    &rest[..end]
}

/// The Shopify object a store URL shows: `.../products/HANDLE` or
/// `.../pages/HANDLE` (a locale or collection prefix is allowed).
fn store_handle(url: &str) -> Result<(StorePageKind, String), ToolError> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    let path = path.split('?').next().unwrap_or_default();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let found = segments.windows(2).rev().find_map(|w| match w[0] {
        "products" => Some((StorePageKind::Product, w[1])),
        "pages" => Some((StorePageKind::Page, w[1])),
        _ => None,
    });
    let Some((kind, handle)) = found.filter(|(_, h)| segments.last() == Some(h)) else {
        return Err(ToolError::invalid(format!(
            "`{url}` is not a store product or page URL (.../products/HANDLE or .../pages/HANDLE)"
        )));
    };
    let handle = handle.to_ascii_lowercase();
    if handle.is_empty()
        || handle.len() > MAX_HANDLE
        || !handle
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(ToolError::invalid(format!(
            "`{handle}` is not a Shopify handle (letters, digits, `-` and `_`)"
        )));
    }
    Ok((kind, handle))
}

/// The Search Console property to read: the page's origin (`https://host/`)
/// by default, or a Domain property (`sc-domain:example.com`) or URL-prefix
/// property (`https://example.com/`) that holds the page.
fn property_for(page: &str, site: Option<&str>) -> Result<String, ToolError> {
    let host = url_host(page);
    let Some(site) = site.map(str::trim) else {
        let scheme = if page.starts_with("https://") {
            "https"
        } else {
            "http"
        };
        return Ok(format!("{scheme}://{host}/"));
    };
    if let Some(domain) = site.strip_prefix("sc-domain:") {
        let domain = host_name(domain)?;
        if host != domain && !host.ends_with(&format!(".{domain}")) {
            return Err(ToolError::invalid(format!(
                "the page's host `{host}` is not in the property `sc-domain:{domain}`"
            )));
        }
        return Ok(format!("sc-domain:{domain}"));
    }
    let prefix = page_url(site)?;
    if !prefix.ends_with('/') {
        return Err(ToolError::invalid(format!(
            "site-url `{site}` is not a URL-prefix property: it ends with `/`"
        )));
    }
    if !page.starts_with(&prefix) {
        return Err(ToolError::invalid(format!(
            "the page `{page}` is not under the property `{prefix}`"
        )));
    }
    Ok(prefix)
}

/// A date `yyyy-mm-dd`.
fn date(what: &str, d: &str) -> Result<String, ToolError> {
    let d = d.trim();
    let b = d.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && digits(0..4)
        && digits(5..7)
        && digits(8..10);
    let month = if shaped {
        d[5..7].parse::<u8>().unwrap_or(0)
    } else {
        0
    };
    let day = if shaped {
        d[8..10].parse::<u8>().unwrap_or(0)
    } else {
        0
    };
    if !shaped || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(ToolError::invalid(format!(
            "{what} `{d}` is not a date yyyy-mm-dd"
        )));
    }
    Ok(d.to_string())
}

fn date_range(start: &str, end: &str) -> Result<(String, String), ToolError> {
    let (start, end) = (date("start-date", start)?, date("end-date", end)?);
    if start > end {
        return Err(ToolError::invalid(format!(
            "start-date {start} is after end-date {end}"
        )));
    }
    Ok((start, end))
}

#[derive(Serialize)]
struct GraphqlRequest<V: Serialize> {
    query: &'static str,
    variables: V,
}

#[derive(Serialize)]
struct HandleVariables<'a> {
    handle: &'a str,
}

#[derive(Serialize)]
struct SearchVariables {
    query: String,
}

fn shopify_body(kind: StorePageKind, handle: &str) -> Result<Vec<u8>, ToolError> {
    let body = match kind {
        StorePageKind::Product => serde_json::to_vec(&GraphqlRequest {
            query: PRODUCT_QUERY,
            variables: HandleVariables { handle },
        }),
        StorePageKind::Page => serde_json::to_vec(&GraphqlRequest {
            query: PAGE_QUERY,
            variables: SearchVariables {
                query: format!("handle:{handle}"),
            },
        }),
    };
    body.map_err(|e| ToolError::invalid(format!("cannot encode the Shopify query: {e}")))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GscQuery<'a> {
    start_date: &'a str,
    end_date: &'a str,
    dimensions: [&'static str; 1],
    dimension_filter_groups: [GscFilterGroup<'a>; 1],
    row_limit: u32,
}

#[derive(Serialize)]
struct GscFilterGroup<'a> {
    filters: [GscFilter<'a>; 1],
}

#[derive(Serialize)]
struct GscFilter<'a> {
    dimension: &'static str,
    operator: &'static str,
    expression: &'a str,
}

fn gsc_body(page: &str, start: &str, end: &str) -> Result<Vec<u8>, ToolError> {
    let q = GscQuery {
        start_date: start,
        end_date: end,
        dimensions: ["query"],
        dimension_filter_groups: [GscFilterGroup {
            filters: [GscFilter {
                dimension: "page",
                operator: "equals",
                expression: page,
            }],
        }],
        row_limit: OPPORTUNITY_ROWS,
    };
    serde_json::to_vec(&q)
        .map_err(|e| ToolError::invalid(format!("cannot encode the Search Console query: {e}")))
}

/// Shopify's `errors`, in each shape it sends them: a list of errors with
/// messages, a string, or an object.
enum GqlErrors {
    List(Vec<GqlError>),
    Text(String),
    Other,
}

impl<'de> Deserialize<'de> for GqlErrors {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<GqlErrors, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = GqlErrors;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("GraphQL errors")
            }
            fn visit_str<E>(self, v: &str) -> Result<GqlErrors, E> {
                Ok(GqlErrors::Text(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<GqlErrors, A::Error> {
                let mut list = Vec::new();
                while let Some(e) = seq.next_element::<GqlError>()? {
                    list.push(e);
                }
                Ok(GqlErrors::List(list))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<GqlErrors, A::Error> {
                skip_map(map).map(|_| GqlErrors::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<GqlErrors, E> {
                Ok(GqlErrors::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<GqlErrors, E> {
                Ok(GqlErrors::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<GqlErrors, E> {
                Ok(GqlErrors::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<GqlErrors, E> {
                Ok(GqlErrors::Other)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct GqlError {
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct GqlAnswer<T> {
    #[serde(default = "Option::default")]
    data: Option<T>,
}

/// Only the `errors` of an answer.
#[derive(Deserialize)]
struct GqlErrorsOnly {
    #[serde(default)]
    errors: Option<GqlErrors>,
}

/// Shopify's answer as its `data`, or a tool error (`errors` first, which
/// GraphQL answers with 200; then a non-2xx status).
fn shopify_data<T: DeserializeOwned>(status: u16, body: &[u8]) -> Result<T, ToolError> {
    let message = match serde_json::from_slice::<GqlErrorsOnly>(body)
        .ok()
        .and_then(|e| e.errors)
    {
        Some(GqlErrors::List(list)) if !list.is_empty() => Some(
            list.iter()
                .map(|e| e.message.trim())
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Some(GqlErrors::List(_)) | None => None,
        Some(GqlErrors::Text(t)) => Some(t),
        Some(GqlErrors::Other) => Some("Shopify answered errors".to_string()),
    };
    if let Some(m) = message {
        return Err(ToolError::Upstream(UpstreamError {
            status,
            message: cut(&format!("Shopify: {m}")),
        }));
    }
    if !(200..300).contains(&status) {
        let message = cut(&format!(
            "Shopify: {}",
            String::from_utf8_lossy(body).trim()
        ));
        return Err(if status == 404 {
            ToolError::NotFound(message)
        } else {
            ToolError::Upstream(UpstreamError { status, message })
        });
    }
    let answer: GqlAnswer<T> = serde_json::from_slice(body).map_err(|e| {
        ToolError::BadResponse(format!("Shopify's answer is not the expected JSON: {e}"))
    })?;
    answer.data.ok_or_else(|| {
        ToolError::BadResponse("Shopify's answer has neither data nor errors".into())
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProductData {
    #[serde(default)]
    product_by_identifier: Option<ApiProduct>,
}

#[derive(Deserialize)]
struct ApiProduct {
    title: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    seo: Option<ApiSeo>,
}

#[derive(Deserialize, Default)]
struct ApiSeo {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct PagesData {
    pages: PageNodes,
}

#[derive(Deserialize)]
struct PageNodes {
    #[serde(default)]
    nodes: Vec<ApiStorePage>,
}

#[derive(Deserialize)]
struct ApiStorePage {
    title: String,
    handle: String,
    #[serde(default)]
    body: Option<String>,
}

/// HTML without its tags (each tag becomes a space).
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// A store page's title and the text its copy is matched against.
struct StoreCopy {
    title: String,
    text: String,
}

fn store_copy(
    kind: StorePageKind,
    handle: &str,
    status: u16,
    body: &[u8],
) -> Result<StoreCopy, ToolError> {
    match kind {
        StorePageKind::Product => {
            let data: ProductData = shopify_data(status, body)?;
            let p = data.product_by_identifier.ok_or_else(|| {
                ToolError::NotFound(format!("the store has no product with handle `{handle}`"))
            })?;
            let seo = p.seo.unwrap_or_default();
            let text = [
                Some(p.title.clone()),
                p.description,
                seo.title,
                seo.description,
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
            Ok(StoreCopy {
                title: p.title,
                text,
            })
        }
        StorePageKind::Page => {
            let data: PagesData = shopify_data(status, body)?;
            let page = data
                .pages
                .nodes
                .into_iter()
                .find(|p| p.handle.eq_ignore_ascii_case(handle))
                .ok_or_else(|| {
                    ToolError::NotFound(format!("the store has no page with handle `{handle}`"))
                })?;
            let text = format!(
                "{} {}",
                page.title,
                strip_tags(&page.body.unwrap_or_default())
            );
            Ok(StoreCopy {
                title: page.title,
                text,
            })
        }
    }
}

#[derive(Deserialize)]
struct GscAnswer {
    #[serde(default)]
    rows: Vec<GscRow>,
}

#[derive(Deserialize)]
struct GscRow {
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    clicks: f64,
    #[serde(default)]
    impressions: f64,
    #[serde(default)]
    ctr: f64,
    #[serde(default)]
    position: f64,
}

#[derive(Deserialize)]
struct GoogleErrorBody {
    error: GoogleError,
}

#[derive(Deserialize)]
struct GoogleError {
    #[serde(default)]
    message: String,
}

/// Search Console's rows, or its error (`error.message`) as a tool error.
fn gsc_rows(status: u16, body: &[u8]) -> Result<Vec<GscRow>, ToolError> {
    if !(200..300).contains(&status) {
        let m = match serde_json::from_slice::<GoogleErrorBody>(body) {
            Ok(b) => b.error.message,
            Err(_) => String::from_utf8_lossy(body).trim().to_string(),
        };
        let message = cut(&format!("Search Console: {m}"));
        return Err(if status == 404 {
            ToolError::NotFound(message)
        } else {
            ToolError::Upstream(UpstreamError { status, message })
        });
    }
    let answer: GscAnswer = serde_json::from_slice(body).map_err(|e| {
        ToolError::BadResponse(format!(
            "Search Console's answer is not the expected JSON: {e}"
        ))
    })?;
    Ok(answer.rows)
}

/// Words: runs of ASCII letters and digits and of any non-ASCII characters,
/// ASCII-lowercased (Unicode case tables would add some 20 KB; the queries
/// Search Console and DataForSEO report are lowercase already).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_ascii() && !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Whether every word of `query` is in `copy`, a plural `s` aside.
fn in_copy(query: &str, copy: &BTreeSet<String>) -> bool {
    words(query).iter().all(|w| {
        copy.contains(w)
            || w.strip_suffix('s').is_some_and(|stem| copy.contains(stem))
            || copy.contains(&format!("{w}s"))
    })
}

fn opportunity_for(query: &str) -> Opportunity {
    Opportunity {
        query: query.to_string(),
        kinds: Vec::new(),
        impressions: None,
        clicks: None,
        ctr: None,
        position: None,
        search_volume: None,
        rank_group: None,
        in_copy: false,
    }
}

/// Search Console rows and DataForSEO ranked keywords, merged by query and
/// ranked by demand (the larger of impressions and search volume).
fn rank_opportunities(
    copy: &str,
    rows: Vec<GscRow>,
    ranked: Vec<RankedKeyword>,
) -> Vec<Opportunity> {
    let copy: BTreeSet<String> = words(copy).into_iter().collect();
    let mut by_query: BTreeMap<String, Opportunity> = BTreeMap::new();
    for row in rows {
        let Some(query) = row
            .keys
            .first()
            .map(|q| q.trim().to_ascii_lowercase())
            .filter(|q| !q.is_empty())
        else {
            continue;
        };
        let impressions = row.impressions.max(0.0).round() as u64;
        if impressions < MIN_IMPRESSIONS {
            continue;
        }
        let o = by_query
            .entry(query.clone())
            .or_insert_with(|| opportunity_for(&query));
        o.impressions = Some(impressions);
        o.clicks = Some(row.clicks.max(0.0).round() as u64);
        o.ctr = Some(row.ctr);
        o.position = Some(row.position);
    }
    for k in ranked {
        let query = k.keyword.trim().to_ascii_lowercase();
        if query.is_empty() {
            continue;
        }
        let o = by_query
            .entry(query.clone())
            .or_insert_with(|| opportunity_for(&query));
        o.search_volume = k.search_volume;
        o.rank_group = Some(k.rank_group);
    }
    let mut out: Vec<Opportunity> = by_query
        .into_values()
        .filter_map(|mut o| {
            o.in_copy = in_copy(&o.query, &copy);
            let striking = match o.position {
                Some(p) => (4.0..=20.0).contains(&p),
                None => o.rank_group.is_some_and(|r| (4..=20).contains(&r)),
            };
            if striking {
                o.kinds.push(OpportunityKind::StrikingDistance);
            }
            if o.position.is_some_and(|p| p < 4.0) && o.ctr.is_some_and(|c| c < LOW_CTR) {
                o.kinds.push(OpportunityKind::LowCtr);
            }
            if !o.in_copy {
                o.kinds.push(OpportunityKind::MissingFromCopy);
            }
            (!o.kinds.is_empty()).then_some(o)
        })
        .collect();
    let demand = |o: &Opportunity| o.impressions.unwrap_or(0).max(o.search_volume.unwrap_or(0));
    out.sort_by(|a, b| {
        demand(b)
            .cmp(&demand(a))
            .then_with(|| a.query.cmp(&b.query))
    });
    out.truncate(MAX_OPPORTUNITIES);
    out
}

fn page_opportunities(
    page_url: String,
    site_url: Option<String>,
    start_date: String,
    end_date: String,
    location_code: Option<u32>,
    language_code: Option<String>,
) -> Result<PageOpportunities, ToolError> {
    // Everything is checked and built before anything is reserved or sent.
    let page = self::page_url(&page_url)?;
    let (kind, handle) = store_handle(&page)?;
    let site = property_for(&page, site_url.as_deref())?;
    let (start, end) = date_range(&start_date, &end_date)?;
    let (location_code, language_code) = (location(location_code)?, language(language_code)?);
    let shopify_request = shopify_body(kind, &handle)?;
    let gsc_request = gsc_body(&page, &start, &end)?;
    let task = TargetTask {
        target: &page,
        location_code,
        language_code: &language_code,
        limit: Some(OPPORTUNITY_KEYWORDS),
        item_types: Some(["organic"]),
    };
    let dataforseo_request = task_body(&task)?;
    let gsc_path = format!(
        "/webmasters/v3/sites/{}/searchAnalytics/query",
        encode_segment(&site)
    );

    check_meter()?;
    let dataforseo = client()?;
    let estimate = labs_estimate(OPPORTUNITY_KEYWORDS as u64);
    let reservation = meter::reserve(estimate)?;

    // The peers' clients (each `denied` unless that connector is live in the
    // session), then their free reads.
    let free_reads = (|| {
        let shopify = Http::connect_to("shopify")?.with_header("accept", "application/json");
        let searchconsole =
            Http::connect_to("searchconsole")?.with_header("accept", "application/json");
        let answer = shopify.send(Method::Post, SHOPIFY_GRAPHQL, &[], Some(shopify_request))?;
        let copy = store_copy(kind, &handle, answer.status, &answer.body)?;
        let answer = searchconsole.send(Method::Post, &gsc_path, &[], Some(gsc_request))?;
        Ok::<_, ToolError>((copy, gsc_rows(answer.status, &answer.body)?))
    })();
    let (copy, rows) = match free_reads {
        Ok(read) => read,
        Err(e) => {
            // Nothing billed was sent.
            settle(reservation, 0, RANKED_KEYWORDS, estimate);
            return Err(e);
        }
    };
    let results: Vec<ApiRankedResult> = send_billed(
        &dataforseo,
        reservation,
        RANKED_KEYWORDS,
        dataforseo_request,
        estimate,
    )?;
    let ranked = ranked_keywords_of(results, &page).items;
    Ok(PageOpportunities {
        page_url: page,
        kind,
        title: copy.title,
        opportunities: rank_opportunities(&copy.text, rows, ranked),
    })
}

scout_sdk::export!(DataForSeo);

#[cfg(test)]
mod tests {
    use super::*;

    fn fails<T>(result: Result<T, ToolError>) -> ToolError {
        match result {
            Err(e) => e,
            Ok(_) => panic!("expected a tool error"),
        }
    }

    fn json(bytes: &[u8]) -> serde_json::Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn costs_convert_to_micro_usd_rounded_up() {
        assert_eq!(usd_to_micro(0.0), Some(0));
        assert_eq!(usd_to_micro(0.0103), Some(10_300));
        assert_eq!(usd_to_micro(0.0014), Some(1_400));
        assert_eq!(usd_to_micro(0.01), Some(10_000));
        assert_eq!(usd_to_micro(0.075), Some(75_000));
        assert_eq!(usd_to_micro(0.000125), Some(125));
        assert_eq!(
            usd_to_micro(0.0000001),
            Some(1),
            "a tenth of a micro-USD rounds up"
        );
        assert_eq!(usd_to_micro(0.0012345), Some(1_235));
        assert_eq!(usd_to_micro(1.5), Some(1_500_000));
        for bad in [-0.01, f64::NAN, f64::INFINITY, 1e10] {
            assert_eq!(usd_to_micro(bad), None, "{bad}");
        }
    }

    #[test]
    fn estimates() {
        assert_eq!(labs_estimate(100), 20_000);
        assert_eq!(labs_estimate(1000), 110_000);
        assert_eq!(intent_estimate(4), 1_400);
        assert_eq!(serp_estimate(10), 2_000);
        assert_eq!(serp_estimate(1), 2_000);
        assert_eq!(serp_estimate(11), 3_500);
        assert_eq!(serp_estimate(100), 2_000 + 9 * 1_500);
    }

    #[test]
    fn locations_languages_and_counts() {
        assert_eq!(location(None).unwrap(), 2840);
        assert_eq!(location(Some(2826)).unwrap(), 2826);
        assert!(location(Some(0)).is_err());
        assert_eq!(language(None).unwrap(), "en");
        assert_eq!(language(Some(" de ".into())).unwrap(), "de");
        assert_eq!(language(Some("zh-TW".into())).unwrap(), "zh-TW");
        for bad in [
            "",
            "e",
            "english!",
            "en_US",
            "-en",
            "en-",
            "toolonglang",
            "e1",
        ] {
            assert!(language(Some(bad.into())).is_err(), "{bad:?}");
        }
        assert_eq!(count(None, 100, 1000, "limit").unwrap(), 100);
        assert_eq!(count(Some(1000), 100, 1000, "limit").unwrap(), 1000);
        assert!(count(Some(0), 100, 1000, "limit").is_err());
        assert!(count(Some(1001), 100, 1000, "limit").is_err());
    }

    #[test]
    fn keywords_are_checked() {
        assert_eq!(
            keyword_list(vec![" running shoes ".into()], 5, 1, 80).unwrap(),
            ["running shoes"]
        );
        assert!(keyword_list(vec![], 5, 1, 80).is_err());
        assert!(keyword_list(vec!["a".into(); 6], 5, 1, 80).is_err());
        assert!(keyword_list(vec!["  ".into()], 5, 1, 80).is_err());
        assert!(keyword_list(vec!["x".repeat(81)], 5, 1, 80).is_err());
        assert!(
            keyword_list(vec!["é".repeat(80)], 5, 1, 80).is_ok(),
            "characters, not bytes"
        );
        assert!(keyword_list(vec!["a\nb".into()], 5, 1, 80).is_err());
        assert!(keyword_list(vec!["ab".into()], 5, 3, 80).is_err());
        assert!(trends_keywords(vec!["iphone 14".into(), "samsung s23".into()]).is_ok());
        for bad in ["a-b", "x:y", "(x)", "a,b", "q\"", "a+b"] {
            assert!(trends_keywords(vec![bad.into()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn domains_and_urls() {
        assert_eq!(domain("Example.COM").unwrap(), "example.com");
        assert_eq!(domain("shop.example.co.uk").unwrap(), "shop.example.co.uk");
        for bad in [
            "",
            "example",
            "https://example.com",
            "example.com/page",
            "-a.com",
            "10.0.0.1",
            "169.254.169.254",
            "a-.com",
            "a..com",
            "ex ample.com",
            "exa_mple.com",
            ".com",
        ] {
            assert!(domain(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            page_url("https://Shop.Example.com/products/red-shoe?v=1").unwrap(),
            "https://shop.example.com/products/red-shoe?v=1"
        );
        assert_eq!(
            page_url("http://example.com").unwrap(),
            "http://example.com"
        );
        for bad in [
            "example.com/page",
            "ftp://example.com/",
            "https://user:pw@example.com/",
            "https://example.com:8443/",
            "https://example.com/a b",
            "https://example.com/#top",
            "https://exämple.com/",
            "https://localhost/",
            "https:///x",
        ] {
            assert!(page_url(bad).is_err(), "{bad:?}");
        }
        assert!(page_url(&format!("https://example.com/{}", "a".repeat(MAX_URL))).is_err());
        assert_eq!(ranked_target("example.com").unwrap(), "example.com");
        assert_eq!(
            ranked_target("https://example.com/p").unwrap(),
            "https://example.com/p"
        );
    }

    #[test]
    fn task_bodies_are_one_element_arrays() {
        let kw = vec!["running shoes".to_string()];
        let body = task_body(&KeywordsTask {
            keywords: &kw,
            location_code: 2840,
            language_code: "en",
            limit: Some(100),
        })
        .unwrap();
        assert_eq!(
            json(&body),
            serde_json::json!([{"keywords": ["running shoes"], "location_code": 2840, "language_code": "en", "limit": 100}])
        );
        let body = task_body(&TargetTask {
            target: "example.com",
            location_code: 2840,
            language_code: "en",
            limit: Some(5),
            item_types: Some(["organic"]),
        })
        .unwrap();
        assert_eq!(
            json(&body),
            serde_json::json!([{"target": "example.com", "location_code": 2840, "language_code": "en", "limit": 5, "item_types": ["organic"]}])
        );
        let body = task_body(&TrendsTask {
            keywords: &kw,
            location_code: None,
            kind: "web",
            time_range: "past_12_months",
        })
        .unwrap();
        assert_eq!(
            json(&body),
            serde_json::json!([{"keywords": ["running shoes"], "type": "web", "time_range": "past_12_months"}])
        );
    }

    #[test]
    fn status_codes_map_to_tool_errors() {
        let task_error = |code: u32, message: &str| {
            format!(
                r#"{{"status_code":20000,"status_message":"Ok.","cost":0,"tasks":[{{"status_code":{code},"status_message":"{message}","cost":0,"result":null}}]}}"#
            )
        };
        let e = fails(interpret::<IgnoredAny>(
            200,
            task_error(40501, "Invalid Field: 'location_code'.").as_bytes(),
        ));
        assert!(
            matches!(e, ToolError::InvalidInput(ref m) if m == "DataForSEO 40501: Invalid Field: 'location_code'."),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(
            200,
            task_error(40102, "No Search Results.").as_bytes(),
        ));
        assert!(matches!(e, ToolError::NotFound(_)), "{e}");
        let e = fails(interpret::<IgnoredAny>(
            200,
            task_error(40200, "Your balance is depleted.").as_bytes(),
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 200 && u.message == "DataForSEO 40200: Your balance is depleted."),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(
            200,
            br#"{"status_code":40503,"status_message":"POST Data Is Invalid.","tasks":null}"#,
        ));
        assert!(matches!(e, ToolError::InvalidInput(_)), "{e}");
        let e = fails(interpret::<IgnoredAny>(
            401,
            br#"{"status_code":40100,"status_message":"You are not authorized.","cost":0}"#,
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 401 && u.message == "DataForSEO 40100: You are not authorized."),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(500, b"Internal Server Error"));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 500 && u.message == "Internal Server Error"),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(404, b"nope"));
        assert!(matches!(e, ToolError::NotFound(_)), "{e}");
        let e = fails(interpret::<IgnoredAny>(
            200,
            br#"{"status_code":20000,"tasks":[]}"#,
        ));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
        let e = fails(interpret::<ApiDifficulty>(
            200,
            br#"{"status_code":20000,"tasks":[{"status_code":20000,"result":[{"keyword":7}]}]}"#,
        ));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
        let ok: Vec<ApiDifficulty> = interpret(
            200,
            br#"{"status_code":20000,"tasks":[{"status_code":20000,"result":null}]}"#,
        )
        .unwrap();
        assert!(ok.is_empty());
    }

    #[test]
    fn settlements() {
        assert_eq!(
            reported_cost(br#"{"cost":0.0103,"tasks":[]}"#),
            Some(10_300)
        );
        assert_eq!(reported_cost(br#"{"cost":0}"#), Some(0));
        assert_eq!(reported_cost(br#"{"tasks":[]}"#), None);
        assert_eq!(reported_cost(b"Bad Gateway"), None);
        assert_eq!(reported_cost(br#"{"cost":"free"}"#), None);
        let response = |body: &[u8]| {
            Ok(scout_sdk::Response {
                status: 200,
                headers: vec![],
                body: body.to_vec(),
            })
        };
        assert_eq!(settlement(&response(br#"{"cost":0.002}"#), 5_000), 2_000);
        assert_eq!(
            settlement(&response(b"oops"), 5_000),
            5_000,
            "no readable cost: the estimate"
        );
        let refused = ToolError::Capability(CapabilityError {
            capability: Capability::Http,
            kind: "denied".into(),
            message: "route".into(),
            amount: None,
        });
        assert_eq!(settlement(&Err(refused), 5_000), 0, "nothing was sent");
        let timeout = ToolError::Capability(CapabilityError {
            capability: Capability::Http,
            kind: "timeout".into(),
            message: "t".into(),
            amount: None,
        });
        assert_eq!(settlement(&Err(timeout), 5_000), 5_000);
    }

    #[test]
    fn meter_units() {
        assert!(meter_refusal("micro-usd").is_none());
        match meter_refusal("") {
            Some(ToolError::Capability(e)) => assert_eq!(
                (e.capability, e.kind.as_str()),
                (Capability::Meter, "denied")
            ),
            _ => panic!("no meter is denied"),
        }
        match meter_refusal("credits") {
            Some(ToolError::Capability(e)) => assert_eq!(
                (e.capability, e.kind.as_str()),
                (Capability::Meter, "invalid")
            ),
            _ => panic!("credits are refused"),
        }
    }

    #[test]
    fn page_problems_are_only_true_problem_checks() {
        let page: ApiPage = serde_json::from_str(
            r#"{"url":"https://example.com/","status_code":200,"meta":{"title":" Shoes ","htags":{"h2":["x"]},"content":{"plain_text_word_count":412}},
                "page_timing":{"duration_time":1234.6},
                "checks":{"no_h1_tag":true,"is_https":true,"title_too_long":false,"no_image_alt":true,"canonical":true,"odd":3,"high_loading_time":null}}"#,
        )
        .unwrap();
        let audit = PageReport::from(page);
        assert_eq!(audit.problems, ["no_h1_tag", "no_image_alt"]);
        assert_eq!(audit.title.as_deref(), Some("Shoes"));
        assert!(audit.h1.is_empty());
        assert_eq!(audit.word_count, Some(412));
        assert_eq!(audit.load_time_ms, Some(1235));
        assert!(
            PROBLEM_CHECKS.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
    }

    #[test]
    fn scores_and_popularity() {
        assert_eq!(score(Some(47.0)), Some(47));
        assert_eq!(score(Some(120.0)), Some(100));
        assert_eq!(score(Some(-3.0)), Some(0));
        assert_eq!(score(None), None);
        assert_eq!(popularity(Some(61.4)), Some(61));
        assert_eq!(popularity(None), None);
    }

    #[test]
    fn store_handles_properties_and_dates() {
        let p = "https://shop.example.com/products/trail-runner";
        assert!(
            matches!(store_handle(p), Ok((StorePageKind::Product, ref h)) if h == "trail-runner")
        );
        assert!(
            matches!(store_handle("https://shop.example.com/en-gb/collections/trail/products/Trail-Runner?variant=1"), Ok((StorePageKind::Product, ref h)) if h == "trail-runner")
        );
        assert!(
            matches!(store_handle("https://shop.example.com/pages/size-guide"), Ok((StorePageKind::Page, ref h)) if h == "size-guide")
        );
        for bad in [
            "https://shop.example.com/",
            "https://shop.example.com/collections/trail",
            "https://shop.example.com/products/",
            "https://shop.example.com/products/a/reviews",
            "https://shop.example.com/products/caf%C3%A9",
        ] {
            assert!(store_handle(bad).is_err(), "{bad}");
        }
        assert_eq!(property_for(p, None).unwrap(), "https://shop.example.com/");
        assert_eq!(
            property_for(p, Some("sc-domain:example.com")).unwrap(),
            "sc-domain:example.com"
        );
        assert_eq!(
            property_for(p, Some("https://shop.example.com/products/")).unwrap(),
            "https://shop.example.com/products/"
        );
        for bad in [
            "sc-domain:other.com",
            "sc-domain:ample.com",
            "https://www.example.com/",
            "https://shop.example.com",
            "sc-domain:",
            "shop.example.com",
        ] {
            assert!(property_for(p, Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(
            encode_segment(&property_for(p, None).unwrap()),
            "https%3A%2F%2Fshop.example.com%2F"
        );
        assert!(date_range("2026-10-01", "2026-10-31").is_ok());
        assert!(date_range("2026-10-31", "2026-10-01").is_err());
        for bad in [
            "2026-13-01",
            "2026-00-10",
            "2026-1-01",
            "26-10-01",
            "2026/10/01",
            "2026-10-32",
            "yesterday",
        ] {
            assert!(date("d", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn opportunities_merge_rank_and_explain() {
        let row = |q: &str, clicks: f64, impressions: f64, ctr: f64, position: f64| GscRow {
            keys: vec![q.into()],
            clicks,
            impressions,
            ctr,
            position,
        };
        let ranked = |k: &str, v: u64, r: u32| RankedKeyword {
            keyword: k.into(),
            search_volume: Some(v),
            rank_group: r,
            rank_absolute: r,
            url: None,
            title: None,
            etv: None,
            keyword_difficulty: None,
        };
        let copy = "Trail Runner. A lightweight trail running shoe with a grippy outsole.";
        let out = rank_opportunities(
            copy,
            vec![
                row("trail running shoes", 12.0, 900.0, 0.013, 7.2),
                row("trail runner", 40.0, 300.0, 0.133, 1.4),
                row("example trail runner", 2.0, 150.0, 0.013, 1.9),
                row("rare query", 0.0, 4.0, 0.0, 9.0),
                row("waterproof trail shoes", 1.0, 60.0, 0.016, 25.0),
            ],
            vec![
                ranked("trail running shoes", 74000, 6),
                ranked("grippy shoes", 50, 3),
                ranked("vibram trail shoes", 880, 12),
            ],
        );
        let summary: Vec<(&str, Vec<OpportunityKind>, u64)> = out
            .iter()
            .map(|o| {
                (
                    o.query.as_str(),
                    o.kinds.clone(),
                    o.impressions.unwrap_or(0).max(o.search_volume.unwrap_or(0)),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "trail running shoes",
                    vec![OpportunityKind::StrikingDistance],
                    74000
                ),
                (
                    "vibram trail shoes",
                    vec![
                        OpportunityKind::StrikingDistance,
                        OpportunityKind::MissingFromCopy
                    ],
                    880
                ),
                (
                    "example trail runner",
                    vec![OpportunityKind::LowCtr, OpportunityKind::MissingFromCopy],
                    150
                ),
                (
                    "waterproof trail shoes",
                    vec![OpportunityKind::MissingFromCopy],
                    60
                ),
            ]
        );
        assert!(out[0].in_copy && out[0].impressions == Some(900) && out[0].rank_group == Some(6));
        assert!(in_copy(
            "Trail Shoes",
            &words("trail shoe").into_iter().collect()
        ));
        assert!(!in_copy(
            "trail boots",
            &words("trail shoe").into_iter().collect()
        ));
        assert_eq!(
            strip_tags("<p>Size <b>guide</b></p>for shoes"),
            " Size  guide  for shoes"
        );
    }

    #[test]
    fn shopify_and_search_console_errors() {
        let e = fails(shopify_data::<ProductData>(
            200,
            br#"{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]}"#,
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 200 && u.message == "Shopify: Throttled"),
            "{e}"
        );
        let e = fails(shopify_data::<ProductData>(401, br#"{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}"#));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 401),
            "{e}"
        );
        let e = fails(shopify_data::<ProductData>(502, b"Bad Gateway"));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 502 && u.message == "Shopify: Bad Gateway"),
            "{e}"
        );
        let none = store_copy(
            StorePageKind::Product,
            "x",
            200,
            br#"{"data":{"productByIdentifier":null}}"#,
        );
        assert!(matches!(none, Err(ToolError::NotFound(_))));
        let page = store_copy(StorePageKind::Page, "size-guide", 200, br#"{"data":{"pages":{"nodes":[{"id":"gid://shopify/Page/1","title":"Size guide","handle":"size-guide","body":"<p>Half sizes</p>"}]}}}"#).unwrap();
        assert_eq!(
            (page.title.as_str(), page.text.as_str()),
            ("Size guide", "Size guide  Half sizes ")
        );
        let e = fails(gsc_rows(403, br#"{"error":{"code":403,"message":"User does not have sufficient permission for site.","status":"PERMISSION_DENIED"}}"#));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 403 && u.message == "Search Console: User does not have sufficient permission for site."),
            "{e}"
        );
        assert!(
            gsc_rows(200, br#"{"responseAggregationType":"byPage"}"#)
                .unwrap()
                .is_empty()
        );
    }
}
