//! The Firecrawl connector: five read tools over the Firecrawl API v2
//! (`/v2`), each metered in credits, and no write tools.
//!
//! Every request goes through the host's HTTP capability, which is bound to
//! the Firecrawl API origin and adds the API key; this code never sees a
//! secret. The requests are POSTs of a JSON body (declared `(read-only)`):
//! they ask Firecrawl to fetch public pages and change nothing upstream.
//!
//! Spending. Every billed call, before anything is sent:
//! 1. checks that the session's meter counts `credits` (a meter in another
//!    unit is refused; no meter at all is the host's `denied`);
//! 2. reserves the call's worst-case cost, worked out from Firecrawl's
//!    published prices for exactly the options this code sends (1 credit a
//!    page, a PDF's pages, 2 credits per 10 search results, 1 credit a map,
//!    `limit` pages for a crawl). A reservation the allowance does not cover
//!    fails, and the call returns the meter's capability error with nothing
//!    sent.
//! 3. settles what Firecrawl reports it cost (`creditsUsed`, a PDF's
//!    `numPages`), else the estimate; an upstream refusal (4xx) is settled at
//!    zero, a failure that may have been processed (5xx, timeout) at the
//!    estimate.
//!
//! Options that cost more than the base price are never sent: no JSON,
//! question, highlights or audio formats, no ZDR, no PII redaction, and the
//! `basic` proxy only. PDFs are parsed only by `scrape`, up to `pdf-pages`
//! pages; search and crawl send `parsers: []` (a PDF is one flat credit).
//!
//! URLs are checked before anything is reserved or sent: `http` or `https`,
//! no credentials, no private or loopback address, printable ASCII, at most
//! 2,048 characters.
//!
//! What Firecrawl answers was written from its documentation
//! (docs.firecrawl.dev, API v2) and never observed.

scout_sdk::bindings!();

use bindings::exports::scout::firecrawl::read_tools::{
    self, CrawlJob, CrawlPage, CreditBalance, Page, PageFormat, SearchResult, SearchResults,
    SiteLink, SiteMap, SitemapMode, TimeRange,
};
use scout_sdk::args::bounded;
use scout_sdk::billing::{expect_unit, failure_cost, metered_charging};
use scout_sdk::errors::cut_to;
use scout_sdk::{
    ErrorFormat, Http, Method, ToolError, UpstreamError, cut_message, encode_segment, parse_json,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// Longest URL accepted.
const MAX_URL: usize = 2048;
/// Longest Markdown or HTML returned for a scraped page, in bytes.
const MAX_CONTENT: usize = 200_000;
/// Longest Markdown returned per search result or crawled page, in bytes.
const MAX_PAGE_MARKDOWN: usize = 20_000;
/// Most links returned for a scraped page.
const MAX_LINKS: usize = 1000;
/// PDF pages a scrape parses when none is given, and at most.
const DEFAULT_PDF_PAGES: u8 = 5;
const MAX_PDF_PAGES: u8 = 50;
/// Search results when no limit is given, and at most.
const DEFAULT_SEARCH_RESULTS: u8 = 5;
const MAX_SEARCH_RESULTS: u8 = 20;
/// Longest search query (and map search word).
const MAX_QUERY: usize = 500;
/// Most domains in `include-domains`.
const MAX_DOMAINS: usize = 20;
/// Map links when no limit is given, and at most.
const DEFAULT_MAP_LINKS: u16 = 200;
const MAX_MAP_LINKS: u16 = 5000;
/// Crawl pages when no limit is given, and at most.
const DEFAULT_CRAWL_PAGES: u16 = 10;
const MAX_CRAWL_PAGES: u16 = 500;
/// Deepest crawl.
const MAX_CRAWL_DEPTH: u8 = 10;
/// Most include or exclude patterns, and the longest one.
const MAX_PATTERNS: usize = 20;
const MAX_PATTERN: usize = 200;
/// Crawl pages returned by one read.
const CRAWL_PAGES_PER_READ: usize = 25;
/// How long Firecrawl may take (ms): below the host's 30 s deadline.
const UPSTREAM_TIMEOUT_MS: u32 = 25_000;
/// The unit Firecrawl bills in, and the meter must count.
const UNIT: &str = "credits";

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// Checks a URL to fetch: `http`/`https`, a DNS name or public IPv4 host,
/// an optional port, no credentials, printable ASCII, at most 2,048 characters.
fn validate_url(what: &str, url: &str) -> Result<(), ToolError> {
    if url.is_empty() {
        return Err(ToolError::invalid(format!("{what} is empty")));
    }
    if url.len() > MAX_URL {
        return Err(ToolError::invalid(format!(
            "{what} is longer than {MAX_URL} characters"
        )));
    }
    if !url.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ToolError::invalid(format!(
            "{what} may contain only printable ASCII without spaces (percent-encode the rest, punycode the host)"
        )));
    }
    let lower = url.to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &url[8..]
    } else if lower.starts_with("http://") {
        &url[7..]
    } else {
        return Err(ToolError::invalid(format!(
            "{what} must start with http:// or https://"
        )));
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.contains('@') {
        return Err(ToolError::invalid(format!(
            "{what} must not carry credentials (user:password@)"
        )));
    }
    if authority.starts_with('[') {
        return Err(ToolError::invalid(format!(
            "{what}: IPv6 address literals are not accepted; use the host's name"
        )));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    };
    if let Some(p) = port
        && !(p.len() <= 5
            && !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=65535).contains(&n)))
    {
        return Err(ToolError::invalid(format!("{what} has a bad port `{p}`")));
    }
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() {
        return Err(ToolError::invalid(format!("{what} has no host")));
    }
    if host.len() > 253 || !host.split('.').all(is_dns_label) {
        return Err(ToolError::invalid(format!(
            "{what}: host `{host}` is not a DNS name or IPv4 address"
        )));
    }
    if host == "localhost"
        || host.ends_with(".localhost")
        || host.ends_with(".internal")
        || host.ends_with(".local")
    {
        return Err(ToolError::invalid(format!(
            "{what}: host `{host}` is not a public site"
        )));
    }
    if let Some(ip) = ipv4(&host)
        && !is_public_ipv4(ip)
    {
        return Err(ToolError::invalid(format!(
            "{what}: `{host}` is a private, loopback or link-local address"
        )));
    }
    Ok(())
}

fn is_dns_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 63
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// A dotted-quad IPv4 address.
fn ipv4(host: &str) -> Option<[u8; 4]> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut out = [0u8; 4];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        out[i] = p.parse().ok()?;
    }
    Some(out)
}

fn is_public_ipv4([a, b, _, _]: [u8; 4]) -> bool {
    !(a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || a >= 224)
}

/// Checks a host name for `include-domains`: a DNS name, no scheme or path.
fn validate_domain(domain: &str) -> Result<String, ToolError> {
    let d = domain.trim_end_matches('.').to_ascii_lowercase();
    if d.is_empty() || d.len() > 253 || !d.contains('.') || !d.split('.').all(is_dns_label) {
        return Err(ToolError::invalid(format!(
            "include-domains: `{domain}` is not a host name (e.g. `example.com`, no scheme or path)"
        )));
    }
    Ok(d)
}

/// Checks a search query or map search word.
fn validate_text(what: &str, text: &str) -> Result<(), ToolError> {
    if text.trim().is_empty() {
        return Err(ToolError::invalid(format!("{what} is empty")));
    }
    if text.chars().count() > MAX_QUERY {
        return Err(ToolError::invalid(format!(
            "{what} is longer than {MAX_QUERY} characters"
        )));
    }
    if text.chars().any(char::is_control) {
        return Err(ToolError::invalid(format!(
            "{what} contains control characters"
        )));
    }
    Ok(())
}

/// A two-letter ISO 3166-1 country code, upper-cased.
fn country_code(country: &str) -> Result<String, ToolError> {
    if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(ToolError::invalid(format!(
            "country `{country}` is not an ISO 3166-1 alpha-2 code (e.g. `US`, `DE`)"
        )));
    }
    Ok(country.to_ascii_uppercase())
}

/// Checks crawl include/exclude patterns (URL-path regular expressions
/// Firecrawl evaluates).
fn validate_patterns(what: &str, patterns: &[String]) -> Result<(), ToolError> {
    if patterns.len() > MAX_PATTERNS {
        return Err(ToolError::invalid(format!(
            "{what} has more than {MAX_PATTERNS} patterns"
        )));
    }
    for p in patterns {
        if p.is_empty() || p.len() > MAX_PATTERN || p.chars().any(char::is_control) {
            return Err(ToolError::invalid(format!(
                "{what}: each pattern must be 1 to {MAX_PATTERN} characters without control characters"
            )));
        }
    }
    Ok(())
}

/// Checks a crawl job id: a UUID (8-4-4-4-12 hexadecimal digits).
fn validate_job_id(id: &str) -> Result<(), ToolError> {
    let groups: Vec<&str> = id.split('-').collect();
    let shape = [8, 4, 4, 4, 12];
    let ok = groups.len() == 5
        && groups
            .iter()
            .zip(shape)
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    if !ok {
        return Err(ToolError::invalid(format!(
            "job-id `{id}` is not a crawl job id (a UUID, as the crawl's start returned it)"
        )));
    }
    Ok(())
}

fn format_name(f: PageFormat) -> &'static str {
    match f {
        PageFormat::Markdown => "markdown",
        PageFormat::Summary => "summary",
        PageFormat::Html => "html",
        PageFormat::Links => "links",
    }
}

/// The formats to ask for: markdown by default, each once, in the order given.
fn scrape_formats(formats: Option<Vec<PageFormat>>) -> Result<Vec<&'static str>, ToolError> {
    let formats = formats.unwrap_or_else(|| vec![PageFormat::Markdown]);
    if formats.is_empty() {
        return Err(ToolError::invalid(
            "formats is empty; leave it out for Markdown",
        ));
    }
    let mut out = Vec::new();
    for f in formats {
        let name = format_name(f);
        if !out.contains(&name) {
            out.push(name);
        }
    }
    Ok(out)
}

fn tbs(t: TimeRange) -> &'static str {
    match t {
        TimeRange::PastHour => "qdr:h",
        TimeRange::PastDay => "qdr:d",
        TimeRange::PastWeek => "qdr:w",
        TimeRange::PastMonth => "qdr:m",
        TimeRange::PastYear => "qdr:y",
    }
}

fn sitemap_name(s: SitemapMode) -> &'static str {
    match s {
        SitemapMode::Include => "include",
        SitemapMode::Skip => "skip",
        SitemapMode::Only => "only",
    }
}

// ---------------------------------------------------------------------------
// Costs (Firecrawl's published prices for the options sent; unit-tested)
// ---------------------------------------------------------------------------

/// A scrape: 1 credit, plus up to one per PDF page parsed.
fn scrape_estimate(pdf_pages: u8) -> u64 {
    1 + u64::from(pdf_pages)
}

/// What a scrape cost: 1 credit for a web page; for a PDF, 1 plus the pages
/// parsed (at most `pdf_pages`; all of them when Firecrawl does not say).
fn scrape_cost(content_type: Option<&str>, pages_parsed: Option<u32>, pdf_pages: u8) -> u64 {
    let is_pdf = content_type.is_some_and(|c| c.to_ascii_lowercase().contains("pdf"))
        || pages_parsed.is_some();
    if !is_pdf {
        return 1;
    }
    let pages = pages_parsed.map_or(u64::from(pdf_pages), |n| {
        u64::from(n).min(u64::from(pdf_pages))
    });
    1 + pages
}

/// A search: 2 credits per 10 results, rounded up, plus 1 per result scraped.
fn search_estimate(limit: u8, scrape: bool) -> u64 {
    let limit = u64::from(limit);
    2 * limit.div_ceil(10) + if scrape { limit } else { 0 }
}

/// A crawl: 1 credit per page, `limit` pages at most.
fn crawl_estimate(limit: u16) -> u64 {
    u64::from(limit)
}

/// A map: 1 credit per call, whatever it returns.
const MAP_COST: u64 = 1;

// ---------------------------------------------------------------------------
// Request bodies (pure; the replay fixtures match them exactly)
// ---------------------------------------------------------------------------

fn scrape_body(url: &str, formats: &[&str], only_main_content: bool, pdf_pages: u8) -> Value {
    json!({
        "url": url,
        "formats": formats,
        "onlyMainContent": only_main_content,
        "parsers": [{"type": "pdf", "maxPages": pdf_pages}],
        "proxy": "basic",
        "timeout": UPSTREAM_TIMEOUT_MS,
    })
}

/// The scrape options of a search's results and a crawl's pages: Markdown,
/// main content, no PDF parsing (a PDF is one flat credit), basic proxy.
fn page_scrape_options() -> Value {
    json!({"formats": ["markdown"], "onlyMainContent": true, "parsers": [], "proxy": "basic"})
}

fn search_body(
    query: &str,
    limit: u8,
    scrape: bool,
    country: Option<&str>,
    domains: &[String],
    time: Option<TimeRange>,
) -> Value {
    let mut body =
        json!({"query": query, "limit": limit, "sources": ["web"], "timeout": UPSTREAM_TIMEOUT_MS});
    if let Some(c) = country {
        body["country"] = json!(c);
    }
    if !domains.is_empty() {
        body["includeDomains"] = json!(domains);
    }
    if let Some(t) = time {
        body["tbs"] = json!(tbs(t));
    }
    if scrape {
        body["scrapeOptions"] = page_scrape_options();
    }
    body
}

fn map_body(
    url: &str,
    search: Option<&str>,
    limit: u16,
    include_subdomains: Option<bool>,
    sitemap: Option<SitemapMode>,
) -> Value {
    let mut body = json!({"url": url, "limit": limit, "timeout": UPSTREAM_TIMEOUT_MS});
    if let Some(s) = search {
        body["search"] = json!(s);
    }
    if let Some(i) = include_subdomains {
        body["includeSubdomains"] = json!(i);
    }
    if let Some(s) = sitemap {
        body["sitemap"] = json!(sitemap_name(s));
    }
    body
}

fn crawl_body(
    url: &str,
    limit: u16,
    max_depth: Option<u8>,
    include: &[String],
    exclude: &[String],
) -> Value {
    let mut body = json!({"url": url, "limit": limit, "scrapeOptions": page_scrape_options()});
    if let Some(d) = max_depth {
        body["maxDiscoveryDepth"] = json!(d);
    }
    if !include.is_empty() {
        body["includePaths"] = json!(include);
    }
    if !exclude.is_empty() {
        body["excludePaths"] = json!(exclude);
    }
    body
}

// ---------------------------------------------------------------------------
// Firecrawl's wire format (only the fields used; extra fields are ignored)
// ---------------------------------------------------------------------------

/// Firecrawl's metadata fields are "a string or an array of strings".
#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    One(String),
    Many(Vec<String>),
}

impl Text {
    fn first(self) -> Option<String> {
        match self {
            Text::One(s) => Some(s),
            Text::Many(v) => v.into_iter().next(),
        }
        .filter(|s| !s.is_empty())
    }
}

#[derive(Deserialize)]
struct CreditUsage {
    data: CreditData,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreditData {
    remaining_credits: f64,
    plan_credits: Option<f64>,
    billing_period_start: Option<String>,
    billing_period_end: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    title: Option<Text>,
    description: Option<Text>,
    language: Option<Text>,
    #[serde(rename = "sourceURL")]
    source_url: Option<String>,
    url: Option<String>,
    status_code: Option<u16>,
    content_type: Option<String>,
    num_pages: Option<u32>,
    total_pages: Option<u32>,
}

#[derive(Deserialize)]
struct ScrapeResponse {
    success: Option<bool>,
    error: Option<String>,
    data: Option<ScrapeData>,
}

#[derive(Deserialize)]
struct ScrapeData {
    markdown: Option<String>,
    summary: Option<String>,
    html: Option<String>,
    links: Option<Vec<String>>,
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SearchResponse {
    success: Option<bool>,
    error: Option<String>,
    data: Option<SearchData>,
    credits_used: Option<u64>,
}

#[derive(Deserialize)]
struct SearchData {
    #[serde(default)]
    web: Vec<WebResult>,
}

#[derive(Deserialize)]
struct WebResult {
    url: String,
    title: Option<String>,
    description: Option<String>,
    markdown: Option<String>,
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct MapResponse {
    success: Option<bool>,
    error: Option<String>,
    #[serde(default)]
    links: Vec<MapLink>,
}

/// A map link: an object, or (as API v1 sent them) a bare URL.
#[derive(Deserialize)]
#[serde(untagged)]
enum MapLink {
    Full {
        url: String,
        title: Option<String>,
        description: Option<String>,
    },
    Bare(String),
}

#[derive(Deserialize)]
struct CrawlStarted {
    success: Option<bool>,
    error: Option<String>,
    id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CrawlStatus {
    status: String,
    #[serde(default)]
    total: u32,
    #[serde(default)]
    completed: u32,
    credits_used: Option<u64>,
    expires_at: Option<String>,
    next: Option<String>,
    #[serde(default)]
    data: Vec<CrawlDoc>,
}

#[derive(Deserialize)]
struct CrawlDoc {
    markdown: Option<String>,
    #[serde(default)]
    metadata: Metadata,
}

// ---------------------------------------------------------------------------
// Mapping (pure; unit-tested)
// ---------------------------------------------------------------------------

/// Cuts `text` to at most `max` bytes on a character boundary, noting it.
fn cut(text: Option<String>, max: usize, truncated: &mut bool) -> Option<String> {
    let text = text?;
    if text.len() > max {
        *truncated = true;
        return Some(cut_to(text, max));
    }
    Some(text)
}

/// A 2xx answer that says `success: false`.
fn unsuccessful(
    status: u16,
    success: Option<bool>,
    error: Option<String>,
) -> Result<(), ToolError> {
    if success == Some(false) {
        let message =
            cut_message(error.unwrap_or_else(|| "Firecrawl answered success: false".to_string()));
        return Err(ToolError::Upstream(UpstreamError { status, message }));
    }
    Ok(())
}

/// The answer to `request` (`POST /v2/scrape`) as `T`; one that does not fit
/// is `bad-response` naming the request, as the SDK's `Http::json` does.
fn parse<T: serde::de::DeserializeOwned>(request: &str, body: &[u8]) -> Result<T, ToolError> {
    parse_json(body).map_err(|e| match e {
        ToolError::BadResponse(m) => ToolError::BadResponse(format!("{request}: {m}")),
        other => other,
    })
}

fn page_from(data: ScrapeData, asked: &str, credits: u64) -> Page {
    let mut truncated = false;
    let m = data.metadata;
    let mut links = data.links.unwrap_or_default();
    if links.len() > MAX_LINKS {
        links.truncate(MAX_LINKS);
        truncated = true;
    }
    let source_url = m.source_url.unwrap_or_else(|| asked.to_string());
    Page {
        url: m.url.unwrap_or_else(|| source_url.clone()),
        source_url,
        status_code: m.status_code,
        title: m.title.and_then(Text::first),
        description: m.description.and_then(Text::first),
        language: m.language.and_then(Text::first),
        content_type: m.content_type,
        markdown: cut(data.markdown, MAX_CONTENT, &mut truncated),
        summary: data.summary,
        html: cut(data.html, MAX_CONTENT, &mut truncated),
        links,
        pdf_pages_parsed: m.num_pages,
        pdf_total_pages: m.total_pages,
        truncated,
        credits_charged: credits,
    }
}

fn search_result(r: WebResult) -> SearchResult {
    let mut truncated = false;
    SearchResult {
        url: r.url,
        title: r.title.filter(|t| !t.is_empty()),
        description: r.description.filter(|d| !d.is_empty()),
        markdown: cut(r.markdown, MAX_PAGE_MARKDOWN, &mut truncated),
        status_code: r.metadata.and_then(|m| m.status_code),
        truncated,
    }
}

fn site_link(l: MapLink) -> SiteLink {
    match l {
        MapLink::Full {
            url,
            title,
            description,
        } => SiteLink {
            url,
            title: title.filter(|t| !t.is_empty()),
            description: description.filter(|d| !d.is_empty()),
        },
        MapLink::Bare(url) => SiteLink {
            url,
            title: None,
            description: None,
        },
    }
}

fn crawl_page(d: CrawlDoc) -> CrawlPage {
    let mut truncated = false;
    let m = d.metadata;
    let source_url = m.source_url.unwrap_or_default();
    CrawlPage {
        url: m.url.unwrap_or_else(|| source_url.clone()),
        source_url,
        status_code: m.status_code,
        title: m.title.and_then(Text::first),
        markdown: cut(d.markdown, MAX_PAGE_MARKDOWN, &mut truncated),
        truncated,
    }
}

/// A crawl job read back: at most [`CRAWL_PAGES_PER_READ`] pages from `skip`.
fn crawl_job(id: &str, status: CrawlStatus, skip: u32) -> CrawlJob {
    let more_here = status.data.len() > CRAWL_PAGES_PER_READ;
    let returned = status.data.len().min(CRAWL_PAGES_PER_READ);
    let next_skip = if more_here || status.next.is_some() {
        Some(skip.saturating_add(returned as u32))
    } else {
        None
    };
    CrawlJob {
        id: id.to_string(),
        status: status.status,
        total: status.total,
        completed: status.completed,
        job_credits_used: status.credits_used,
        expires_at: status.expires_at,
        pages: status
            .data
            .into_iter()
            .take(CRAWL_PAGES_PER_READ)
            .map(crawl_page)
            .collect(),
        next_skip,
        credits_charged: 0,
    }
}

// ---------------------------------------------------------------------------
// Requests and the meter
// ---------------------------------------------------------------------------

/// The client for the Firecrawl API origin the host granted.
fn firecrawl() -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_errors(ErrorFormat::Error)
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-firecrawl"))
}

/// POSTs a JSON body and returns the 2xx answer decoded, with its status;
/// a non-2xx status is the SDK's error, Firecrawl's `error` its message.
fn post<T: serde::de::DeserializeOwned>(path: &str, body: &Value) -> Result<(u16, T), ToolError> {
    let bytes = serde_json::to_vec(body)
        .map_err(|e| ToolError::invalid(format!("cannot encode the request: {e}")))?;
    let http = firecrawl()?;
    let response = http.send(Method::Post, path, &[], Some(bytes))?;
    http.check(&response)?;
    Ok((
        response.status,
        parse(&format!("POST {path}"), &response.body)?,
    ))
}

/// Runs one billed call on the SDK's [`metered`]: checks the meter's unit,
/// reserves `estimate` (refusing with nothing sent when the allowance does
/// not cover it), runs `call`, and settles what it reports it cost (or the
/// estimate; a failure at [`failure_cost`]). Returns the call's value and
/// the credits charged: a cost above the estimate is charged only up to
/// what the run had left beyond the reservation.
fn billed<T>(
    estimate: u64,
    call: impl FnOnce() -> Result<(T, Option<u64>), ToolError>,
) -> Result<(T, u64), ToolError> {
    expect_unit("Firecrawl", UNIT)?;
    // The credits charged are what the meter settled: a cost above the
    // estimate only up to what the run had left, or (under a person chat's
    // per-call threshold) exactly the estimate.
    metered_charging(estimate, |error| failure_cost(error, estimate), call)
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Firecrawl;

impl read_tools::Guest for Firecrawl {
    fn account() -> Result<CreditBalance, ToolError> {
        let usage: CreditUsage = firecrawl()?.get("/v2/team/credit-usage", &[])?;
        Ok(CreditBalance {
            remaining_credits: usage.data.remaining_credits,
            plan_credits: usage.data.plan_credits,
            billing_period_start: usage.data.billing_period_start,
            billing_period_end: usage.data.billing_period_end,
        })
    }

    fn scrape(
        url: String,
        formats: Option<Vec<PageFormat>>,
        only_main_content: Option<bool>,
        pdf_pages: Option<u8>,
    ) -> Result<Page, ToolError> {
        validate_url("url", &url)?;
        let formats = scrape_formats(formats)?;
        let pdf_pages = bounded("pdf-pages", pdf_pages, DEFAULT_PDF_PAGES, 1, MAX_PDF_PAGES)?;
        let body = scrape_body(&url, &formats, only_main_content.unwrap_or(true), pdf_pages);
        let (data, credits) = billed(scrape_estimate(pdf_pages), || {
            let (status, answer): (u16, ScrapeResponse) = post("/v2/scrape", &body)?;
            unsuccessful(status, answer.success, answer.error)?;
            let data = answer.data.ok_or_else(|| {
                ToolError::BadResponse("Firecrawl's answer has no data".to_string())
            })?;
            let cost = scrape_cost(
                data.metadata.content_type.as_deref(),
                data.metadata.num_pages,
                pdf_pages,
            );
            Ok((data, Some(cost)))
        })?;
        Ok(page_from(data, &url, credits))
    }

    fn search(
        query: String,
        limit: Option<u8>,
        scrape_results: Option<bool>,
        country: Option<String>,
        include_domains: Option<Vec<String>>,
        time_range: Option<TimeRange>,
    ) -> Result<SearchResults, ToolError> {
        validate_text("query", &query)?;
        let limit = bounded(
            "limit",
            limit,
            DEFAULT_SEARCH_RESULTS,
            1,
            MAX_SEARCH_RESULTS,
        )?;
        let country = country.as_deref().map(country_code).transpose()?;
        let domains = include_domains.unwrap_or_default();
        if domains.len() > MAX_DOMAINS {
            return Err(ToolError::invalid(format!(
                "include-domains has more than {MAX_DOMAINS} domains"
            )));
        }
        let domains = domains
            .iter()
            .map(|d| validate_domain(d))
            .collect::<Result<Vec<_>, _>>()?;
        let scrape = scrape_results.unwrap_or(false);
        let body = search_body(
            &query,
            limit,
            scrape,
            country.as_deref(),
            &domains,
            time_range,
        );
        let (web, credits) = billed(search_estimate(limit, scrape), || {
            let (status, answer): (u16, SearchResponse) = post("/v2/search", &body)?;
            unsuccessful(status, answer.success, answer.error)?;
            let web = answer.data.map(|d| d.web).unwrap_or_default();
            Ok((web, answer.credits_used))
        })?;
        Ok(SearchResults {
            results: web.into_iter().map(search_result).collect(),
            credits_charged: credits,
        })
    }

    fn map(
        url: String,
        search: Option<String>,
        limit: Option<u16>,
        include_subdomains: Option<bool>,
        sitemap: Option<SitemapMode>,
    ) -> Result<SiteMap, ToolError> {
        validate_url("url", &url)?;
        if let Some(s) = &search {
            validate_text("search", s)?;
        }
        let limit = bounded("limit", limit, DEFAULT_MAP_LINKS, 1, MAX_MAP_LINKS)?;
        let body = map_body(&url, search.as_deref(), limit, include_subdomains, sitemap);
        let (links, credits) = billed(MAP_COST, || {
            let (status, answer): (u16, MapResponse) = post("/v2/map", &body)?;
            unsuccessful(status, answer.success, answer.error)?;
            Ok((answer.links, Some(MAP_COST)))
        })?;
        let mut links: Vec<SiteLink> = links.into_iter().map(site_link).collect();
        links.truncate(usize::from(limit));
        Ok(SiteMap {
            links,
            credits_charged: credits,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn crawl(
        url: Option<String>,
        limit: Option<u16>,
        max_depth: Option<u8>,
        include_paths: Option<Vec<String>>,
        exclude_paths: Option<Vec<String>>,
        job_id: Option<String>,
        skip: Option<u32>,
    ) -> Result<CrawlJob, ToolError> {
        match (url, job_id) {
            (Some(_), Some(_)) => Err(ToolError::invalid(
                "give either url (start a crawl) or job-id (read one), not both",
            )),
            (None, None) => Err(ToolError::invalid(
                "give url to start a crawl, or job-id to read one",
            )),
            (None, Some(id)) => {
                if limit.is_some()
                    || max_depth.is_some()
                    || include_paths.is_some()
                    || exclude_paths.is_some()
                {
                    return Err(ToolError::invalid(
                        "limit, max-depth, include-paths and exclude-paths start a crawl; reading one with job-id takes only skip",
                    ));
                }
                validate_job_id(&id)?;
                let skip = skip.unwrap_or(0);
                let path = format!("/v2/crawl/{}", encode_segment(&id));
                let skip_text = skip.to_string();
                let query: Vec<(&str, &str)> = if skip > 0 {
                    vec![("skip", skip_text.as_str())]
                } else {
                    Vec::new()
                };
                let status: CrawlStatus = firecrawl()?.get(&path, &query).map_err(|e| match e {
                    ToolError::NotFound(m) => ToolError::NotFound(format!("crawl job `{id}`: {m}")),
                    other => other,
                })?;
                Ok(crawl_job(&id, status, skip))
            }
            (Some(url), None) => {
                if skip.is_some() {
                    return Err(ToolError::invalid(
                        "skip reads a crawl's pages; give it with job-id",
                    ));
                }
                validate_url("url", &url)?;
                let limit = bounded("limit", limit, DEFAULT_CRAWL_PAGES, 1, MAX_CRAWL_PAGES)?;
                let max_depth = max_depth
                    .map(|d| bounded("max-depth", Some(d), d, 0, MAX_CRAWL_DEPTH))
                    .transpose()?;
                let include = include_paths.unwrap_or_default();
                let exclude = exclude_paths.unwrap_or_default();
                validate_patterns("include-paths", &include)?;
                validate_patterns("exclude-paths", &exclude)?;
                let body = crawl_body(&url, limit, max_depth, &include, &exclude);
                // The job bills as its pages complete, after this call has
                // returned: the whole `limit` is held and charged now.
                let (id, credits) = billed(crawl_estimate(limit), || {
                    let (status, answer): (u16, CrawlStarted) = post("/v2/crawl", &body)?;
                    unsuccessful(status, answer.success, answer.error)?;
                    validate_job_id(&answer.id).map_err(|_| {
                        ToolError::BadResponse(format!(
                            "Firecrawl's crawl id `{}` is not a UUID",
                            cut_message(answer.id.as_str())
                        ))
                    })?;
                    Ok((answer.id, None))
                })?;
                Ok(CrawlJob {
                    id,
                    status: "started".to_string(),
                    total: 0,
                    completed: 0,
                    job_credits_used: None,
                    expires_at: None,
                    pages: Vec::new(),
                    next_skip: None,
                    credits_charged: credits,
                })
            }
        }
    }
}

scout_sdk::export!(Firecrawl);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        for good in [
            "https://example.com",
            "http://example.com/",
            "HTTPS://Example.COM/a/b?c=d#e",
            "https://docs.firecrawl.dev/features/scrape",
            "https://example.com:8443/x",
            "https://8.8.8.8/",
            "https://xn--bcher-kva.example/",
            "https://example.com./",
        ] {
            assert!(
                validate_url("url", good).is_ok(),
                "{good} should be accepted"
            );
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL));
        for bad in [
            "",
            "example.com",
            "ftp://example.com/",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "https://user:pass@example.com/",
            "https://user@example.com/",
            "https:///path",
            "https://exa mple.com/",
            "https://example.com/ a",
            "https://bücher.example/",
            "https://localhost/",
            "http://127.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1/",
            "http://192.168.1.1/",
            "http://172.16.0.1/",
            "http://[::1]/",
            "https://example.com:0/",
            "https://example.com:99999/",
            "https://example.com:/",
            "https://exa_mple.com/",
            "https://metadata.google.internal/",
            "https://-bad.example/",
            long.as_str(),
        ] {
            assert!(
                validate_url("url", bad).is_err(),
                "{bad:?} should be refused"
            );
        }
        assert!(validate_url("url", "https://172.32.0.1/").is_ok());
    }

    #[test]
    fn other_inputs() {
        assert_eq!(validate_domain("Example.COM").unwrap(), "example.com");
        for bad in [
            "",
            "https://example.com",
            "example.com/path",
            "localhost",
            "a b.com",
        ] {
            assert!(validate_domain(bad).is_err(), "{bad:?}");
        }
        assert_eq!(country_code("de").unwrap(), "DE");
        assert!(country_code("USA").is_err());
        assert!(country_code("1A").is_err());
        assert!(validate_text("query", "  ").is_err());
        assert!(validate_text("query", &"q".repeat(501)).is_err());
        assert!(validate_text("query", "a\u{0}b").is_err());
        assert!(validate_job_id("123e4567-e89b-12d3-a456-426614174000").is_ok());
        for bad in [
            "",
            "123",
            "../team",
            "123e4567-e89b-12d3-a456-42661417400g",
            "123e4567e89b12d3a456426614174000",
        ] {
            assert!(validate_job_id(bad).is_err(), "{bad:?}");
        }
        assert!(validate_patterns("include-paths", &["blog/.*".to_string()]).is_ok());
        assert!(validate_patterns("include-paths", &[String::new()]).is_err());
        assert!(validate_patterns("include-paths", &vec!["a".to_string(); 21]).is_err());
        assert_eq!(scrape_formats(None).unwrap(), ["markdown"]);
        assert_eq!(
            scrape_formats(Some(vec![
                PageFormat::Links,
                PageFormat::Markdown,
                PageFormat::Links
            ]))
            .unwrap(),
            ["links", "markdown"]
        );
        assert!(scrape_formats(Some(vec![])).is_err());
    }

    #[test]
    fn costs() {
        assert_eq!(scrape_estimate(5), 6);
        assert_eq!(scrape_cost(Some("text/html; charset=utf-8"), None, 5), 1);
        assert_eq!(scrape_cost(Some("application/pdf"), Some(3), 5), 4);
        assert_eq!(scrape_cost(Some("application/pdf"), Some(30), 5), 6);
        assert_eq!(scrape_cost(Some("application/pdf"), None, 5), 6);
        assert_eq!(search_estimate(5, false), 2);
        assert_eq!(search_estimate(10, false), 2);
        assert_eq!(search_estimate(11, false), 4);
        assert_eq!(search_estimate(5, true), 7);
        assert_eq!(search_estimate(20, true), 24);
        assert_eq!(crawl_estimate(10), 10);
        let refused = ToolError::Upstream(UpstreamError {
            status: 402,
            message: String::new(),
        });
        assert_eq!(failure_cost(&refused, 6), 0);
        let slow = ToolError::Upstream(UpstreamError {
            status: 408,
            message: String::new(),
        });
        assert_eq!(failure_cost(&slow, 6), 6);
        let broken = ToolError::Upstream(UpstreamError {
            status: 502,
            message: String::new(),
        });
        assert_eq!(failure_cost(&broken, 6), 6);
        assert_eq!(failure_cost(&ToolError::BadResponse(String::new()), 6), 6);
    }

    #[test]
    fn bodies() {
        assert_eq!(
            scrape_body("https://example.com", &["markdown"], true, 5),
            json!({"url": "https://example.com", "formats": ["markdown"], "onlyMainContent": true,
                   "parsers": [{"type": "pdf", "maxPages": 5}], "proxy": "basic", "timeout": 25000})
        );
        let b = search_body(
            "rust wasm",
            5,
            true,
            Some("DE"),
            &["example.com".to_string()],
            Some(TimeRange::PastWeek),
        );
        assert_eq!(b["tbs"], "qdr:w");
        assert_eq!(b["scrapeOptions"]["parsers"], json!([]));
        assert_eq!(b["includeDomains"], json!(["example.com"]));
        let b = search_body("q", 5, false, None, &[], None);
        assert!(
            b.get("scrapeOptions").is_none()
                && b.get("country").is_none()
                && b.get("tbs").is_none()
        );
        let c = crawl_body(
            "https://example.com",
            10,
            Some(2),
            &[],
            &["^/private/.*".to_string()],
        );
        assert_eq!(c["maxDiscoveryDepth"], 2);
        assert!(c.get("includePaths").is_none());
        assert_eq!(c["excludePaths"], json!(["^/private/.*"]));
    }

    #[test]
    fn mapping() {
        let data: ScrapeData = serde_json::from_str(
            r##"{"markdown":"# Hi","metadata":{"title":["A","B"],"language":"en","sourceURL":"https://a.example","url":"https://a.example/","statusCode":200,"contentType":"text/html"}}"##,
        )
        .unwrap();
        let p = page_from(data, "https://a.example", 1);
        assert_eq!(
            (p.title.as_deref(), p.url.as_str(), p.status_code),
            (Some("A"), "https://a.example/", Some(200))
        );
        let mut t = false;
        assert_eq!(
            cut(Some("héllo".to_string()), 2, &mut t).as_deref(),
            Some("h")
        );
        assert!(t);
        let links: Vec<MapLink> = serde_json::from_str(
            r#"[{"url":"https://a.example/x","title":""},"https://a.example/y"]"#,
        )
        .unwrap();
        let links: Vec<SiteLink> = links.into_iter().map(site_link).collect();
        assert_eq!(links[0].title, None);
        assert_eq!(links[1].url, "https://a.example/y");
        assert_eq!(
            ErrorFormat::Error.message(br#"{"success":false,"error":"Payment required"}"#),
            "Payment required"
        );
        assert!(
            matches!(unsuccessful(200, Some(false), None), Err(ToolError::Upstream(UpstreamError { status: 200, ref message })) if message == "Firecrawl answered success: false")
        );
        assert!(unsuccessful(200, None, Some("ignored".into())).is_ok());
        assert!(
            matches!(parse::<CrawlStarted>("POST /v2/crawl", b"{}"), Err(ToolError::BadResponse(ref m)) if m.starts_with("POST /v2/crawl: response is not the expected JSON"))
        );
        let status: CrawlStatus = serde_json::from_value(json!({
            "status": "scraping", "total": 40, "completed": 30, "creditsUsed": 30,
            "data": (0..30).map(|i| json!({"markdown": format!("p{i}"), "metadata": {"sourceURL": format!("https://a.example/{i}")}})).collect::<Vec<_>>()
        }))
        .unwrap();
        let job = crawl_job("id", status, 0);
        assert_eq!((job.pages.len(), job.next_skip), (25, Some(25)));
        let status: CrawlStatus = serde_json::from_value(
            json!({"status": "completed", "total": 2, "completed": 2, "data": []}),
        )
        .unwrap();
        assert_eq!(crawl_job("id", status, 25).next_skip, None);
    }
}
