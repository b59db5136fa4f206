//! The Microsoft Ads connector: four read tools over the Microsoft
//! Advertising (Bing Ads) API v13 REST endpoints, and no write tools.
//!
//! The API's services are on different hosts; each is a destination the
//! operator binds (host feature "several destinations per connector"):
//!
//! | destination | service | assumed origin |
//! | --- | --- | --- |
//! | (main) | Campaign Management | `https://campaign.api.bingads.microsoft.com` |
//! | `customer` | Customer Management | `https://clientcenter.api.bingads.microsoft.com` |
//! | `reporting` | Reporting | `https://reporting.api.bingads.microsoft.com` |
//! | `download` | report files | `https://bingadsappsstorageprod.blob.core.windows.net` |
//!
//! **Operator requirements.** Every API call needs a developer token in the
//! `DeveloperToken` header: a deployment secret the operator configures and
//! the host injects, never seen or sent by this code. The OAuth access
//! token (`Authorization: Bearer`) is injected by the host too. The
//! `download` destination serves pre-signed URLs (the signature is in the
//! URL's query), so it needs no credential of its own; see the report for
//! what the host sends it.
//!
//! Every API operation is a POST with a JSON body, as the REST API defines
//! them. The ones declared are queries: `AccountsInfo/Query`,
//! `Campaigns/QueryByAccountId`, `GenerateReport/Poll`, and
//! `GenerateReport/Submit`, which queues a report job on the reporting
//! service (a job that expires within a day) and changes nothing in the
//! account: no campaign, budget, bid, setting or bill. That is why the
//! `performance-report` tool is a read and its POST is `(read-only)`.
//!
//! `report-fetch` polls; once the report is built it takes the download
//! URL the service answers with, refuses it (`bad-response`) unless it is
//! `https` on the `download` host named above, and fetches it through the
//! `download` destination (path and query only: the host chooses where it
//! goes). Microsoft documents that the download URL's domain may change
//! (`ReportRequestStatus.ReportDownloadUrl`, valid five minutes); if it
//! does, downloads fail closed with `bad-response` until `DOWNLOAD_HOST`
//! and the operator's `download` origin name the new host. The file is a ZIP archive holding one CSV: the connector reads
//! the archive's directory, inflates the CSV entry (raw DEFLATE, with
//! `miniz_oxide`) up to 8 MiB, checks its CRC-32, and parses the CSV.
//!
//! Customer, account and campaign ids are typed `u64` arguments (never put
//! in a path); dates are checked calendar dates; report columns come from
//! an allow-list checked against the report type. Microsoft's faults
//! (`{"Errors"|"OperationErrors"|"BatchErrors": [{"Code", "ErrorCode",
//! "Message"}]}`) become `upstream` (or `not-found` for 404) with the codes
//! and messages: that shape is none of the SDK's `ErrorFormat`s, so it is
//! read here, and cut with the SDK's `cut_message`.
//!
//! What Microsoft answers was written from its documentation and never
//! observed (the fixtures are UNVERIFIED).

scout_sdk::bindings!();

use bindings::exports::scout::microsoftads::read_tools::{
    self, Account, Aggregation, Campaign, CampaignType, ReportColumn, ReportData, ReportStatus,
    ReportTime, ReportType, SubmittedReport,
};
use scout_sdk::args::{bounded, date, date_range};
use scout_sdk::{Http, Method, ToolError, UpstreamError, cut_message, encode_segment, parse_json};
use serde::Deserialize;
use serde_json::{Value, json};

const ACCOUNTS_PATH: &str = "/CustomerManagement/v13/AccountsInfo/Query";
const CAMPAIGNS_PATH: &str = "/CampaignManagement/v13/Campaigns/QueryByAccountId";
const SUBMIT_PATH: &str = "/Reporting/v13/GenerateReport/Submit";
const POLL_PATH: &str = "/Reporting/v13/GenerateReport/Poll";
/// The host the reporting service's download URLs point to, and the one a
/// URL must name (the `download` destination's origin).
const DOWNLOAD_HOST: &str = "bingadsappsstorageprod.blob.core.windows.net";
/// Longest report request id (the API's documented maximum).
const MAX_REQUEST_ID: usize = 40;
/// Rows returned when no `max-rows` is given.
const DEFAULT_ROWS: u32 = 1000;
/// Most rows returned.
const MAX_ROWS: u32 = 10_000;
/// Largest CSV inflated from the archive.
const MAX_CSV: usize = 8 * 1024 * 1024;

// ---------------------------------------------------------------------------
// Validation and request bodies (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

fn check_id(what: &str, id: u64) -> Result<u64, ToolError> {
    if id == 0 {
        return Err(ToolError::invalid(format!(
            "{what} 0 is not a Microsoft Advertising id"
        )));
    }
    Ok(id)
}

/// A calendar date `YYYY-MM-DD` (the SDK's check), years 2000 to 2099:
/// (year, month, day).
fn report_date(what: &str, text: &str) -> Result<(u32, u32, u32), ToolError> {
    let (year, month, day) = date(what, text)?;
    if !(2000..=2099).contains(&year) {
        return Err(ToolError::invalid(format!(
            "{what} must be a date YYYY-MM-DD from 2000 to 2099, not `{text}`"
        )));
    }
    Ok((year, month, day))
}

/// The report's `Time` element.
fn report_time(time: &ReportTime) -> Result<Value, ToolError> {
    let predefined = |name: &str| Ok(json!({ "PredefinedTime": name }));
    match time {
        ReportTime::Today => predefined("Today"),
        ReportTime::Yesterday => predefined("Yesterday"),
        ReportTime::LastSevenDays => predefined("LastSevenDays"),
        ReportTime::LastFourteenDays => predefined("Last14Days"),
        ReportTime::LastThirtyDays => predefined("Last30Days"),
        ReportTime::ThisMonth => predefined("ThisMonth"),
        ReportTime::LastMonth => predefined("LastMonth"),
        ReportTime::LastThreeMonths => predefined("LastThreeMonths"),
        ReportTime::Custom(d) => {
            date_range(&d.start, &d.end)?;
            let start = report_date("the start date", &d.start)?;
            let end = report_date("the end date", &d.end)?;
            let date = |(y, m, d): (u32, u32, u32)| json!({ "Day": d, "Month": m, "Year": y });
            Ok(json!({ "CustomDateRangeStart": date(start), "CustomDateRangeEnd": date(end) }))
        }
    }
}

fn report_type_name(t: ReportType) -> &'static str {
    match t {
        ReportType::AccountPerformance => "AccountPerformanceReportRequest",
        ReportType::CampaignPerformance => "CampaignPerformanceReportRequest",
        ReportType::AdGroupPerformance => "AdGroupPerformanceReportRequest",
        ReportType::KeywordPerformance => "KeywordPerformanceReportRequest",
    }
}

fn aggregation_name(a: Aggregation) -> &'static str {
    match a {
        Aggregation::Summary => "Summary",
        Aggregation::Daily => "Daily",
        Aggregation::Weekly => "Weekly",
        Aggregation::Monthly => "Monthly",
    }
}

/// How deep an entity a column names: 0 account, 1 campaign, 2 ad group, 3 keyword.
fn column(c: ReportColumn) -> (&'static str, u8) {
    match c {
        ReportColumn::TimePeriod => ("TimePeriod", 0),
        ReportColumn::AccountId => ("AccountId", 0),
        ReportColumn::AccountName => ("AccountName", 0),
        ReportColumn::CurrencyCode => ("CurrencyCode", 0),
        ReportColumn::CampaignId => ("CampaignId", 1),
        ReportColumn::CampaignName => ("CampaignName", 1),
        ReportColumn::CampaignStatus => ("CampaignStatus", 1),
        ReportColumn::AdGroupId => ("AdGroupId", 2),
        ReportColumn::AdGroupName => ("AdGroupName", 2),
        ReportColumn::KeywordId => ("KeywordId", 3),
        ReportColumn::Keyword => ("Keyword", 3),
        ReportColumn::DeviceType => ("DeviceType", 0),
        ReportColumn::Network => ("Network", 0),
        ReportColumn::Impressions => ("Impressions", 0),
        ReportColumn::Clicks => ("Clicks", 0),
        ReportColumn::Spend => ("Spend", 0),
        ReportColumn::Ctr => ("Ctr", 0),
        ReportColumn::AverageCpc => ("AverageCpc", 0),
        ReportColumn::Conversions => ("Conversions", 0),
        ReportColumn::Revenue => ("Revenue", 0),
    }
}

fn report_depth(t: ReportType) -> u8 {
    match t {
        ReportType::AccountPerformance => 0,
        ReportType::CampaignPerformance => 1,
        ReportType::AdGroupPerformance => 2,
        ReportType::KeywordPerformance => 3,
    }
}

/// The columns' names, checked: at least one, none twice, each available
/// in the report type, and no `TimePeriod` in a summary.
fn report_columns(
    t: ReportType,
    columns: &[ReportColumn],
    aggregation: Aggregation,
) -> Result<Vec<&'static str>, ToolError> {
    if columns.is_empty() {
        return Err(ToolError::invalid(
            "columns is empty; name at least one column",
        ));
    }
    let mut names = Vec::with_capacity(columns.len());
    for c in columns {
        let (name, depth) = column(*c);
        if names.contains(&name) {
            return Err(ToolError::invalid(format!("column {name} is listed twice")));
        }
        if depth > report_depth(t) {
            return Err(ToolError::invalid(format!(
                "column {name} is not in a {}",
                report_type_name(t)
            )));
        }
        if name == "TimePeriod" && aggregation == Aggregation::Summary {
            return Err(ToolError::invalid(
                "column TimePeriod needs a daily, weekly or monthly aggregation",
            ));
        }
        names.push(name);
    }
    Ok(names)
}

fn submit_body(
    t: ReportType,
    columns: &[&str],
    aggregation: Aggregation,
    account_id: u64,
    time: Value,
) -> Value {
    json!({
        "ReportRequest": {
            "Type": report_type_name(t),
            "ExcludeColumnHeaders": false,
            "ExcludeReportFooter": true,
            "ExcludeReportHeader": true,
            "Format": "Csv",
            "FormatVersion": "2.0",
            "ReturnOnlyCompleteData": false,
            "Aggregation": aggregation_name(aggregation),
            "Columns": columns,
            "Scope": { "AccountIds": [account_id] },
            "Time": time,
        }
    })
}

fn campaign_type_name(t: CampaignType) -> &'static str {
    match t {
        CampaignType::Search => "Search",
        CampaignType::Shopping => "Shopping",
        CampaignType::DynamicSearchAds => "DynamicSearchAds",
        CampaignType::Audience => "Audience",
        CampaignType::PerformanceMax => "PerformanceMax",
    }
}

/// `CampaignType` flags, space-separated, each once, in the order given
/// (every type when none is given).
fn campaign_types(types: Option<&[CampaignType]>) -> Result<String, ToolError> {
    const ALL: [CampaignType; 5] = [
        CampaignType::Search,
        CampaignType::Shopping,
        CampaignType::DynamicSearchAds,
        CampaignType::Audience,
        CampaignType::PerformanceMax,
    ];
    let types = types.unwrap_or(&ALL);
    if types.is_empty() {
        return Err(ToolError::invalid(
            "campaign-types is empty; leave it out for every type",
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    for t in types {
        let name = campaign_type_name(*t);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names.join(" "))
}

fn check_request_id(id: &str) -> Result<(), ToolError> {
    if id.is_empty() {
        return Err(ToolError::invalid(
            "report-request-id is empty; `performance-report` answers one",
        ));
    }
    if id.chars().count() > MAX_REQUEST_ID {
        return Err(ToolError::invalid(format!(
            "report-request-id is longer than {MAX_REQUEST_ID} characters"
        )));
    }
    if id.chars().any(char::is_control) {
        return Err(ToolError::invalid(
            "report-request-id contains a control character",
        ));
    }
    Ok(())
}

fn max_rows(value: Option<u32>) -> Result<u32, ToolError> {
    bounded("max-rows", value, DEFAULT_ROWS, 1, MAX_ROWS)
}

// ---------------------------------------------------------------------------
// The download URL
// ---------------------------------------------------------------------------

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes URL text (`+` stays `+`); none when an escape is malformed
/// or the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let (hi, lo) = (hex(*b.get(i + 1)?)?, hex(*b.get(i + 2)?)?);
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Where to fetch a report: the path (re-encoded segment by segment) and
/// the query pairs (decoded; the host encodes them) of a download URL,
/// which must be `https://` on `DOWNLOAD_HOST` (port 443 at most).
fn download_target(url: &str) -> Result<(String, Vec<(String, String)>), ToolError> {
    let refuse = |why: &str| {
        ToolError::BadResponse(format!(
            "the report download URL {why}; only https://{DOWNLOAD_HOST}/ is fetched"
        ))
    };
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| refuse("is not https"))?;
    let (authority, path_query) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => return Err(refuse("has no path")),
    };
    let host = authority.to_ascii_lowercase();
    let host = host.strip_suffix(":443").unwrap_or(&host);
    if host != DOWNLOAD_HOST {
        return Err(refuse(&format!(
            "is on another host ({})",
            authority.chars().take(100).collect::<String>()
        )));
    }
    if path_query.contains('#')
        || path_query
            .chars()
            .any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(refuse("is malformed"));
    }
    let (path, query) = path_query.split_once('?').unwrap_or((path_query, ""));
    let mut segments = Vec::new();
    for raw in path[1..].split('/') {
        let segment = percent_decode(raw).ok_or_else(|| refuse("has a malformed escape"))?;
        if segment.is_empty() || segment == "." || segment == ".." || segment.contains(['/', '\\'])
        {
            return Err(refuse("has an empty, dot or slashed path segment"));
        }
        segments.push(encode_segment(&segment));
    }
    let mut pairs = Vec::new();
    for part in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let k = percent_decode(k).ok_or_else(|| refuse("has a malformed escape"))?;
        let v = percent_decode(v).ok_or_else(|| refuse("has a malformed escape"))?;
        pairs.push((k, v));
    }
    Ok((format!("/{}", segments.join("/")), pairs))
}

// ---------------------------------------------------------------------------
// The report file: a ZIP archive with one CSV
// ---------------------------------------------------------------------------

fn not_zip(why: &str) -> ToolError {
    ToolError::BadResponse(format!(
        "the report file is not a readable ZIP archive: {why}"
    ))
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, ToolError> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| not_zip("truncated"))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, ToolError> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| not_zip("truncated"))
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The first `.csv` entry of a ZIP archive, read through its central
/// directory, inflated up to `limit` bytes and checked against its CRC-32.
fn unzip_csv(zip: &[u8], limit: usize) -> Result<Vec<u8>, ToolError> {
    const EOCD: u32 = 0x0605_4b50;
    const CENTRAL: u32 = 0x0201_4b50;
    const LOCAL: u32 = 0x0403_4b50;
    if zip.len() < 22 || u32_at(zip, 0)? != LOCAL {
        return Err(not_zip("no ZIP signature"));
    }
    // The end-of-central-directory record: the last 22 bytes, or earlier by its comment's length.
    let lowest = zip.len().saturating_sub(22 + 0xFFFF);
    let eocd = (lowest..=zip.len() - 22)
        .rev()
        .find(|&i| u32_at(zip, i).is_ok_and(|s| s == EOCD))
        .ok_or_else(|| not_zip("no central directory"))?;
    let entries = u16_at(zip, eocd + 10)?;
    let mut at = u32_at(zip, eocd + 16)? as usize;
    for _ in 0..entries {
        if u32_at(zip, at)? != CENTRAL {
            return Err(not_zip("a damaged central directory"));
        }
        let method = u16_at(zip, at + 10)?;
        let crc = u32_at(zip, at + 16)?;
        let compressed = u32_at(zip, at + 20)?;
        let size = u32_at(zip, at + 24)?;
        let (name_len, extra_len, comment_len) = (
            u16_at(zip, at + 28)? as usize,
            u16_at(zip, at + 30)? as usize,
            u16_at(zip, at + 32)? as usize,
        );
        let local = u32_at(zip, at + 42)? as usize;
        let name = zip
            .get(at + 46..at + 46 + name_len)
            .ok_or_else(|| not_zip("truncated"))?;
        at += 46 + name_len + extra_len + comment_len;
        if !name.to_ascii_lowercase().ends_with(b".csv") {
            continue;
        }
        if compressed == u32::MAX || size == u32::MAX {
            return Err(not_zip("a ZIP64 entry"));
        }
        if size as usize > limit {
            return Err(ToolError::BadResponse(format!(
                "the report's CSV is {size} bytes, more than the {limit} this connector reads; ask for fewer columns or a shorter period"
            )));
        }
        if u32_at(zip, local)? != LOCAL {
            return Err(not_zip("a damaged entry"));
        }
        let start =
            local + 30 + u16_at(zip, local + 26)? as usize + u16_at(zip, local + 28)? as usize;
        let data = zip
            .get(start..start + compressed as usize)
            .ok_or_else(|| not_zip("truncated"))?;
        let csv = match method {
            0 => data.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, limit)
                .map_err(|_| not_zip("its CSV does not inflate"))?,
            other => return Err(not_zip(&format!("compression method {other}"))),
        };
        if csv.len() != size as usize || crc32(&csv) != crc {
            return Err(not_zip("its CSV fails its size or CRC-32 check"));
        }
        return Ok(csv);
    }
    Err(not_zip("no CSV entry"))
}

/// Parses CSV (RFC 4180: `,`, `"` quoting with `""`, CRLF or LF rows; a
/// UTF-8 byte order mark dropped); blank lines are skipped.
fn parse_csv(bytes: &[u8]) -> Result<Vec<Vec<String>>, ToolError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ToolError::BadResponse("the report's CSV is not UTF-8".to_string()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rows = Vec::new();
    let (mut row, mut field) = (Vec::new(), String::new());
    let (mut quoted, mut was_quoted) = (false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => {
                quoted = true;
                was_quoted = true;
            }
            ',' => {
                row.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                if !(row.is_empty() && field.is_empty() && !was_quoted) {
                    row.push(std::mem::take(&mut field));
                    rows.push(std::mem::take(&mut row));
                }
                was_quoted = false;
            }
            _ => field.push(c),
        }
    }
    if quoted {
        return Err(ToolError::BadResponse(
            "the report's CSV ends inside a quoted field".to_string(),
        ));
    }
    if !(row.is_empty() && field.is_empty() && !was_quoted) {
        row.push(field);
        rows.push(row);
    }
    Ok(rows)
}

fn report_data(csv: &[u8], max_rows: u32) -> Result<ReportData, ToolError> {
    let mut rows = parse_csv(csv)?.into_iter();
    let columns = rows.next().unwrap_or_default();
    let data: Vec<Vec<String>> = rows.collect();
    let total = data.len();
    let rows: Vec<Vec<String>> = data.into_iter().take(max_rows as usize).collect();
    Ok(ReportData {
        status: ReportStatus::Ready,
        columns,
        truncated: rows.len() < total,
        total_rows: u32::try_from(total).unwrap_or(u32::MAX),
        rows,
    })
}

// ---------------------------------------------------------------------------
// Microsoft's wire format (only the fields used; extra fields are ignored)
// ---------------------------------------------------------------------------

/// A long that the JSON may carry as a number or a string.
fn id_of(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn bad_id(what: &str) -> ToolError {
    ToolError::BadResponse(format!("{what} in Microsoft's answer has no numeric Id"))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AccountsInfoResponse {
    #[serde(default)]
    accounts_info: Option<Vec<ApiAccount>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ApiAccount {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    number: Option<String>,
    #[serde(default)]
    account_life_cycle_status: Option<String>,
    #[serde(default)]
    pause_reason: Option<Value>,
}

impl ApiAccount {
    fn into_account(self) -> Result<Account, ToolError> {
        Ok(Account {
            id: id_of(&self.id).ok_or_else(|| bad_id("an account"))?,
            name: self.name.unwrap_or_default(),
            number: self.number.unwrap_or_default(),
            status: self.account_life_cycle_status.unwrap_or_default(),
            pause_reason: self
                .pause_reason
                .as_ref()
                .and_then(id_of)
                .and_then(|r| u32::try_from(r).ok()),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CampaignsResponse {
    #[serde(default)]
    campaigns: Option<Vec<ApiCampaign>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ApiCampaign {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    campaign_type: Option<String>,
    #[serde(default)]
    budget_type: Option<String>,
    #[serde(default)]
    daily_budget: Option<f64>,
    #[serde(default)]
    time_zone: Option<String>,
    #[serde(default)]
    bidding_scheme: Option<BiddingScheme>,
}

#[derive(Deserialize)]
struct BiddingScheme {
    #[serde(default, rename = "Type")]
    kind: Option<String>,
}

impl ApiCampaign {
    fn into_campaign(self) -> Result<Campaign, ToolError> {
        Ok(Campaign {
            id: id_of(&self.id).ok_or_else(|| bad_id("a campaign"))?,
            name: self.name.unwrap_or_default(),
            status: self.status.unwrap_or_default(),
            campaign_type: self.campaign_type.unwrap_or_default(),
            budget_type: self.budget_type.filter(|s| !s.is_empty()),
            daily_budget: self.daily_budget,
            time_zone: self.time_zone.filter(|s| !s.is_empty()),
            bidding_scheme: self
                .bidding_scheme
                .and_then(|b| b.kind)
                .filter(|s| !s.is_empty()),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct SubmitResponse {
    #[serde(default)]
    report_request_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PollResponse {
    #[serde(default)]
    report_request_status: Option<RequestStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RequestStatus {
    #[serde(default)]
    report_download_url: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

/// A fault: `AdApiFaultDetail` (`Errors`) or `ApiFaultDetail`
/// (`OperationErrors`, `BatchErrors`).
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Fault {
    #[serde(default)]
    errors: Option<Vec<FaultError>>,
    #[serde(default)]
    operation_errors: Option<Vec<FaultError>>,
    #[serde(default)]
    batch_errors: Option<Vec<FaultError>>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct FaultError {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default)]
    error_code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// `ErrorCode (Code): Message; ...` from a fault, or the body's text.
fn fault_message(body: &[u8]) -> String {
    let text = || cut_message(String::from_utf8_lossy(body));
    let Ok(fault) = serde_json::from_slice::<Fault>(body) else {
        return text();
    };
    let errors: Vec<String> = [fault.errors, fault.operation_errors, fault.batch_errors]
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let name = e.error_code.unwrap_or_default();
            let code = e.code.map(|c| format!(" ({c})")).unwrap_or_default();
            format!("{name}{code}: {}", e.message.unwrap_or_default())
        })
        .collect();
    if !errors.is_empty() {
        return cut_message(errors.join("; "));
    }
    fault.message.map(cut_message).unwrap_or_else(text)
}

/// 404 `not-found`, any other non-2xx `upstream`, in the SDK's one shape
/// with the fault's message (a body none of the SDK's `ErrorFormat`s reads).
fn check(status: u16, body: &[u8]) -> Result<(), ToolError> {
    if (200..300).contains(&status) {
        return Ok(());
    }
    Err(scout_sdk::errors::status_error_with(
        status,
        fault_message(body),
    ))
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// The headers an API request carries: `accept`, and the `CustomerId` and
/// `CustomerAccountId` the operation is about, when given. Never
/// `DeveloperToken` or `Authorization`: the host injects those.
fn request_headers(customer: Option<u64>, account: Option<u64>) -> Vec<(&'static str, String)> {
    let mut headers = vec![("accept", "application/json".to_string())];
    if let Some(c) = customer {
        headers.push(("CustomerId", c.to_string()));
    }
    if let Some(a) = account {
        headers.push(("CustomerAccountId", a.to_string()));
    }
    headers
}

/// A client for a destination (None: the main origin, Campaign Management),
/// with the account headers when given.
fn client(
    destination: Option<&str>,
    customer: Option<u64>,
    account: Option<u64>,
) -> Result<Http, ToolError> {
    let http = match destination {
        Some(d) => Http::connect_to(d)?,
        None => Http::connect()?,
    };
    Ok(request_headers(customer, account)
        .iter()
        .fold(http, |http, (name, value)| http.with_header(name, value)))
}

/// POSTs an operation's JSON body and parses its JSON answer.
fn call<T: serde::de::DeserializeOwned>(
    http: &Http,
    path: &str,
    body: &Value,
) -> Result<T, ToolError> {
    let body = serde_json::to_vec(body)
        .map_err(|e| ToolError::invalid(format!("cannot encode the request: {e}")))?;
    let response = http.send(Method::Post, path, &[], Some(body))?;
    check(response.status, &response.body)?;
    // A bad answer names the request, as the SDK's `Http::post` does.
    parse_json(&response.body).map_err(|e| match e {
        ToolError::BadResponse(m) => ToolError::BadResponse(format!("POST {path}: {m}")),
        other => other,
    })
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct MicrosoftAds;

impl read_tools::Guest for MicrosoftAds {
    fn accounts(customer_id: Option<u64>) -> Result<Vec<Account>, ToolError> {
        let customer = customer_id
            .map(|c| check_id("customer-id", c))
            .transpose()?;
        let body = json!({ "CustomerId": customer, "OnlyParentAccounts": false });
        let answer: AccountsInfoResponse =
            call(&client(Some("customer"), None, None)?, ACCOUNTS_PATH, &body)?;
        answer
            .accounts_info
            .unwrap_or_default()
            .into_iter()
            .map(ApiAccount::into_account)
            .collect()
    }

    fn campaigns(
        customer_id: u64,
        account_id: u64,
        campaign_types: Option<Vec<CampaignType>>,
    ) -> Result<Vec<Campaign>, ToolError> {
        let customer = check_id("customer-id", customer_id)?;
        let account = check_id("account-id", account_id)?;
        let types = self::campaign_types(campaign_types.as_deref())?;
        let body = json!({ "AccountId": account, "CampaignType": types });
        let answer: CampaignsResponse = call(
            &client(None, Some(customer), Some(account))?,
            CAMPAIGNS_PATH,
            &body,
        )
        .map_err(|e| match e {
            ToolError::NotFound(m) => ToolError::NotFound(format!("account {account}: {m}")),
            other => other,
        })?;
        answer
            .campaigns
            .unwrap_or_default()
            .into_iter()
            .map(ApiCampaign::into_campaign)
            .collect()
    }

    fn performance_report(
        customer_id: u64,
        account_id: u64,
        report_type: ReportType,
        columns: Vec<ReportColumn>,
        time: ReportTime,
        aggregation: Option<Aggregation>,
    ) -> Result<SubmittedReport, ToolError> {
        let customer = check_id("customer-id", customer_id)?;
        let account = check_id("account-id", account_id)?;
        let aggregation = aggregation.unwrap_or(Aggregation::Summary);
        let names = report_columns(report_type, &columns, aggregation)?;
        let body = submit_body(
            report_type,
            &names,
            aggregation,
            account,
            report_time(&time)?,
        );
        let answer: SubmitResponse = call(
            &client(Some("reporting"), Some(customer), Some(account))?,
            SUBMIT_PATH,
            &body,
        )?;
        let id = answer
            .report_request_id
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                ToolError::BadResponse(
                    "the reporting service answered no ReportRequestId".to_string(),
                )
            })?;
        Ok(SubmittedReport {
            report_request_id: id,
            report_type: report_type_name(report_type).to_string(),
            columns: names.into_iter().map(str::to_string).collect(),
        })
    }

    fn report_fetch(
        customer_id: u64,
        account_id: u64,
        report_request_id: String,
        max_rows: Option<u32>,
    ) -> Result<ReportData, ToolError> {
        let customer = check_id("customer-id", customer_id)?;
        let account = check_id("account-id", account_id)?;
        check_request_id(&report_request_id)?;
        let max_rows = self::max_rows(max_rows)?;
        let body = json!({ "ReportRequestId": report_request_id });
        let answer: PollResponse = call(
            &client(Some("reporting"), Some(customer), Some(account))?,
            POLL_PATH,
            &body,
        )?;
        let status = answer.report_request_status.ok_or_else(|| {
            ToolError::BadResponse(
                "the reporting service answered no ReportRequestStatus".to_string(),
            )
        })?;
        let empty = |status| ReportData {
            status,
            columns: Vec::new(),
            rows: Vec::new(),
            total_rows: 0,
            truncated: false,
        };
        match status.status.as_deref() {
            Some("Pending") | Some("InProgress") => Ok(empty(ReportStatus::Pending)),
            Some("Error") => Err(ToolError::Upstream(UpstreamError {
                status: 200,
                message: format!(
                    "the reporting service could not build report {report_request_id} (Status Error)"
                ),
            })),
            Some("Success") => match status.report_download_url.filter(|u| !u.is_empty()) {
                // Success without a URL: the report has no data for the period.
                None => Ok(empty(ReportStatus::Empty)),
                Some(url) => {
                    let (path, query) = download_target(&url)?;
                    let query: Vec<(&str, &str)> = query
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect();
                    let response =
                        Http::connect_to("download")?.send(Method::Get, &path, &query, None)?;
                    check(response.status, &response.body).map_err(|e| match e {
                        ToolError::NotFound(_) => ToolError::NotFound(format!(
                            "report {report_request_id}: the report file is gone (download links expire); ask for the report again"
                        )),
                        other => other,
                    })?;
                    report_data(&unzip_csv(&response.body, MAX_CSV)?, max_rows)
                }
            },
            other => Err(ToolError::BadResponse(format!(
                "unknown report status {:?}",
                other.unwrap_or("")
            ))),
        }
    }
}

scout_sdk::export!(MicrosoftAds);

#[cfg(test)]
mod tests {
    use super::*;
    use bindings::exports::scout::microsoftads::read_tools::CustomDates;

    /// A ZIP archive of one entry, stored (method 0) or deflated (method 8).
    fn zip(name: &str, data: &[u8], deflate: bool) -> Vec<u8> {
        let body = if deflate {
            miniz_oxide::deflate::compress_to_vec(data, 6)
        } else {
            data.to_vec()
        };
        let method: u16 = if deflate { 8 } else { 0 };
        let crc = crc32(data);
        let mut out = Vec::new();
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend([20, 0, 0, 0]);
        out.extend(method.to_le_bytes());
        out.extend([0, 0, 0, 0]);
        out.extend(crc.to_le_bytes());
        out.extend((body.len() as u32).to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend((name.len() as u16).to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(name.as_bytes());
        out.extend(&body);
        let central = out.len();
        out.extend(0x0201_4b50u32.to_le_bytes());
        out.extend([20, 0, 20, 0, 0, 0]);
        out.extend(method.to_le_bytes());
        out.extend([0, 0, 0, 0]);
        out.extend(crc.to_le_bytes());
        out.extend((body.len() as u32).to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend((name.len() as u16).to_le_bytes());
        out.extend([0; 12]);
        out.extend(0u32.to_le_bytes());
        out.extend(name.as_bytes());
        let size = out.len() - central;
        out.extend(0x0605_4b50u32.to_le_bytes());
        out.extend([0, 0, 0, 0, 1, 0, 1, 0]);
        out.extend((size as u32).to_le_bytes());
        out.extend((central as u32).to_le_bytes());
        out.extend([0, 0]);
        out
    }

    #[test]
    fn crc32_is_the_zip_checksum() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn report_archives_unzip() {
        let csv = b"\xef\xbb\xbf\"CampaignName\",\"Spend\"\r\n\"Brand, Search\",\"12.50\"\r\n";
        for deflate in [false, true] {
            let archive = zip("Report.csv", csv, deflate);
            assert_eq!(unzip_csv(&archive, MAX_CSV).unwrap(), csv);
        }
        let archive = zip("Report.csv", csv, true);
        assert!(
            matches!(unzip_csv(&archive, 10), Err(ToolError::BadResponse(m)) if m.contains("more than the 10"))
        );
        assert!(unzip_csv(&zip("Report.txt", csv, false), MAX_CSV).is_err());
        assert!(unzip_csv(b"\"a\",\"b\"\r\n", MAX_CSV).is_err());
        let mut corrupt = zip("Report.csv", csv, false);
        corrupt[40] ^= 1; // a byte of the stored CSV
        assert!(
            unzip_csv(&corrupt, MAX_CSV).is_err(),
            "the CRC-32 check catches it"
        );
        assert!(unzip_csv(&archive[..archive.len() - 30], MAX_CSV).is_err());
    }

    #[test]
    fn csv_parses_quotes_and_line_ends() {
        let rows = parse_csv(
            "\u{feff}\"A\",\"B\"\r\n\"x, y\",\"say \"\"hi\"\"\"\n1,\n\n\"\",2".as_bytes(),
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec!["A", "B"],
                vec!["x, y", "say \"hi\""],
                vec!["1", ""],
                vec!["", "2"]
            ]
        );
        assert!(parse_csv(b"\"open").is_err());
        let data = report_data(b"A,B\n1,2\n3,4\n5,6\n", 2).unwrap();
        assert_eq!(
            (data.total_rows, data.truncated, data.rows.len()),
            (3, true, 2)
        );
    }

    #[test]
    fn download_urls_must_be_the_download_host() {
        let (path, query) = download_target(
            "https://bingadsappsstorageprod.blob.core.windows.net:443/download-url/Report%2012.zip?sv=2023-11-03&se=2026-12-01T17%3A05%3A00Z&sig=a%2Bb%2Fc%3D",
        )
        .unwrap();
        assert_eq!(path, "/download-url/Report%2012.zip");
        assert_eq!(
            query,
            [
                ("sv".into(), "2023-11-03".into()),
                ("se".into(), "2026-12-01T17:05:00Z".into()),
                ("sig".into(), "a+b/c=".into())
            ]
        );
        for bad in [
            "http://bingadsappsstorageprod.blob.core.windows.net/r.zip",
            "https://evil.example/r.zip",
            "https://bingadsappsstorageprod.blob.core.windows.net.evil.example/r.zip",
            "https://user@bingadsappsstorageprod.blob.core.windows.net/r.zip",
            "https://bingadsappsstorageprod.blob.core.windows.net:8443/r.zip",
            "https://bingadsappsstorageprod.blob.core.windows.net",
            "https://bingadsappsstorageprod.blob.core.windows.net/a/../b.zip",
            "https://bingadsappsstorageprod.blob.core.windows.net/a/%2e%2e/b.zip",
            "https://bingadsappsstorageprod.blob.core.windows.net/a%2Fb.zip",
            "https://bingadsappsstorageprod.blob.core.windows.net//b.zip",
            "https://bingadsappsstorageprod.blob.core.windows.net/b.zip#frag",
            "https://bingadsappsstorageprod.blob.core.windows.net/b%zz.zip",
        ] {
            assert!(
                matches!(download_target(bad), Err(ToolError::BadResponse(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn report_requests_are_checked_and_shaped() {
        let cols = report_columns(
            ReportType::CampaignPerformance,
            &[ReportColumn::CampaignName, ReportColumn::Spend],
            Aggregation::Summary,
        )
        .unwrap();
        assert_eq!(cols, ["CampaignName", "Spend"]);
        assert!(
            report_columns(
                ReportType::CampaignPerformance,
                &[ReportColumn::Keyword],
                Aggregation::Summary
            )
            .is_err()
        );
        assert!(
            report_columns(
                ReportType::AccountPerformance,
                &[ReportColumn::CampaignId],
                Aggregation::Daily
            )
            .is_err()
        );
        assert!(
            report_columns(
                ReportType::KeywordPerformance,
                &[ReportColumn::Keyword, ReportColumn::Keyword],
                Aggregation::Daily
            )
            .is_err()
        );
        assert!(
            report_columns(
                ReportType::KeywordPerformance,
                &[ReportColumn::TimePeriod],
                Aggregation::Summary
            )
            .is_err()
        );
        assert!(report_columns(ReportType::KeywordPerformance, &[], Aggregation::Daily).is_err());
        let time = report_time(&ReportTime::Custom(CustomDates {
            start: "2026-11-01".into(),
            end: "2026-11-30".into(),
        }))
        .unwrap();
        assert_eq!(
            time,
            json!({"CustomDateRangeStart": {"Day": 1, "Month": 11, "Year": 2026}, "CustomDateRangeEnd": {"Day": 30, "Month": 11, "Year": 2026}})
        );
        assert!(
            report_time(&ReportTime::Custom(CustomDates {
                start: "2026-11-30".into(),
                end: "2026-11-01".into()
            }))
            .is_err()
        );
        assert!(
            report_time(&ReportTime::Custom(CustomDates {
                start: "2026-02-29".into(),
                end: "2026-03-01".into()
            }))
            .is_err()
        );
        assert_eq!(
            report_time(&ReportTime::LastSevenDays).unwrap(),
            json!({"PredefinedTime": "LastSevenDays"})
        );
        assert_eq!(
            campaign_types(None).unwrap(),
            "Search Shopping DynamicSearchAds Audience PerformanceMax"
        );
        assert_eq!(
            campaign_types(Some(&[CampaignType::Shopping, CampaignType::Shopping])).unwrap(),
            "Shopping"
        );
        assert!(campaign_types(Some(&[])).is_err());
        assert!(check_request_id("").is_err());
        assert!(check_request_id(&"x".repeat(41)).is_err());
        assert!(check_request_id("a\nb").is_err());
        check_request_id("30000001234567_8bd2b6b6").unwrap();
        assert!(check_id("account-id", 0).is_err());
        assert_eq!(max_rows(None).unwrap(), 1000);
        assert!(max_rows(Some(0)).is_err() && max_rows(Some(10_001)).is_err());
        assert!(
            matches!(max_rows(Some(0)), Err(ToolError::InvalidInput(m)) if m == "max-rows must be between 1 and 10000, not 0")
        );
        assert!(
            matches!(report_time(&ReportTime::Custom(CustomDates { start: "1999-12-31".into(), end: "2026-01-01".into() })), Err(ToolError::InvalidInput(m)) if m == "the start date must be a date YYYY-MM-DD from 2000 to 2099, not `1999-12-31`")
        );
    }

    #[test]
    fn faults_name_codes_and_messages() {
        let body = br#"{"TrackingId":"t-1","Type":"AdApiFaultDetail","Errors":[{"Code":105,"Detail":null,"ErrorCode":"InvalidCredentials","Message":"Authentication failed.","Type":"AdApiError"}]}"#;
        assert_eq!(
            fault_message(body),
            "InvalidCredentials (105): Authentication failed."
        );
        let body = br#"{"TrackingId":"t-2","Type":"ApiFaultDetail","BatchErrors":null,"OperationErrors":[{"Code":1102,"ErrorCode":"CampaignServiceInvalidAccountId","Message":"The account ID is invalid."}]}"#;
        assert_eq!(
            fault_message(body),
            "CampaignServiceInvalidAccountId (1102): The account ID is invalid."
        );
        assert_eq!(
            fault_message(b"<Error><Code>AuthenticationFailed</Code></Error>"),
            "<Error><Code>AuthenticationFailed</Code></Error>"
        );
        assert!(matches!(check(404, b"{}"), Err(ToolError::NotFound(_))));
        assert!(matches!(
            check(400, b"{}"),
            Err(ToolError::Upstream(UpstreamError { status: 400, .. }))
        ));
    }

    #[test]
    fn only_the_account_headers_are_added() {
        assert_eq!(
            request_headers(None, None),
            [("accept", "application/json".to_string())]
        );
        assert_eq!(
            request_headers(Some(21034567), Some(149123456)),
            [
                ("accept", "application/json".to_string()),
                ("CustomerId", "21034567".to_string()),
                ("CustomerAccountId", "149123456".to_string())
            ]
        );
    }

    #[test]
    fn ids_come_as_numbers_or_strings() {
        assert_eq!(id_of(&json!(141234567)), Some(141234567));
        assert_eq!(id_of(&json!("141234567")), Some(141234567));
        assert_eq!(id_of(&json!(null)), None);
        assert_eq!(id_of(&json!(-1)), None);
    }
}
