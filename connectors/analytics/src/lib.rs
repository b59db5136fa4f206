//! The Google Analytics connector: seven read tools over the GA4 Data API
//! v1beta and the Admin API v1beta's account summaries.
//!
//! The Data API's method is `POST /v1beta/properties/{property}:runReport`,
//! declared exactly so (a `{name}:verb` segment): the host refuses the
//! withheld pivot, realtime and batch methods of the same property.
//!
//! Every request goes through the host's HTTP capability: the main origin is
//! the Data API (`https://analyticsdata.googleapis.com`), the `admin`
//! destination the Admin API (`https://analyticsadmin.googleapis.com`), both
//! with the host's OAuth bearer token; this code never sees a secret.
//!
//! Google's errors (`{"error": {"code", "status", "message"}}`) are read with
//! the SDK's `ErrorFormat::Google`: 404 is `not-found`, any other non-2xx
//! `upstream` with Google's status name and message.
//!
//! The property the reports default to is kept in the connector's folder
//! (`analytics`, file `property.txt`): `use-property` writes it (which is why
//! that tool is never grantable), the others read it when they are not given
//! a property.

scout_sdk::bindings!();

use bindings::exports::scout::analytics::read_tools::{
    self, ChosenProperty, DateRange, Dimension, DimensionFilter, Granularity, LandingPage,
    LandingPagesReport, MatchType, Metric, OrderBy, OrderField, OverviewTotals, Property,
    PropertyList, ReportRow, ReportTable, SourceBreakdown, TrafficSource, TrafficSourcesReport,
    TrendPoint, TrendSeries,
};
use scout_sdk::args::{bounded, date};
use scout_sdk::{ErrorFormat, Http, ToolError, folder, pages};
use serde::Deserialize;
use serde_json::{Value, json};

/// The folder the host grants this connector, and the file in it.
const FOLDER: &str = "analytics";
const PROPERTY_FILE: &str = "property.txt";
/// The Admin API destination (host feature: several destinations).
const ADMIN: &str = "admin";
/// The longest property id accepted (GA4 ids are 9 to 12 digits today).
const MAX_PROPERTY_ID: usize = 20;
/// At most this many rows per report.
const MAX_LIMIT: u32 = 10_000;
/// Default rows of the ranked tools and of `report`.
const DEFAULT_RANKED: u32 = 25;
const DEFAULT_REPORT: u32 = 100;
/// The Data API's own caps per request.
const MAX_DIMENSIONS: usize = 9;
const MAX_METRICS: usize = 10;
const MAX_TREND_METRICS: usize = 5;
/// Filters per report, and a filter value's length.
const MAX_FILTERS: usize = 10;
const MAX_FILTER_VALUE: usize = 500;
/// Account summaries per page (the API's maximum) and pages followed.
const PAGE_SIZE: &str = "200";
const MAX_PAGES: usize = 10;
/// How Google writes its errors.
const ERRORS: ErrorFormat = ErrorFormat::Google;
/// The default range: the last 28 whole days.
const DEFAULT_START: &str = "28daysAgo";
const DEFAULT_END: &str = "yesterday";

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// A property id: digits, optionally written `properties/123`.
fn property_id(input: &str) -> Result<String, ToolError> {
    let id = input.trim();
    let id = id.strip_prefix("properties/").unwrap_or(id);
    if id.is_empty() {
        return Err(ToolError::invalid(
            "property is empty; `analytics_properties` lists the property ids",
        ));
    }
    if id.len() > MAX_PROPERTY_ID || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ToolError::invalid(format!(
            "property `{input}` is not a GA4 property id (digits, e.g. `123456789`; `analytics_properties` lists them)"
        )));
    }
    Ok(id.to_string())
}

/// The Data API path of one property's `runReport`.
fn run_report_path(property: &str) -> String {
    // `property` is digits only (checked by `property_id`).
    format!("/v1beta/properties/{property}:runReport")
}

/// One end of a date range: `YYYY-MM-DD`, `today`, `yesterday`, `NdaysAgo`.
fn check_date(field: &str, value: &str) -> Result<(), ToolError> {
    if value == "today" || value == "yesterday" {
        return Ok(());
    }
    if let Some(n) = value.strip_suffix("daysAgo") {
        if !n.is_empty() && n.len() <= 4 && n.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(());
        }
    } else if date(field, value).is_ok_and(|(year, _, _)| year >= 2000) {
        // A calendar date (the SDK's check), from 2000 on.
        return Ok(());
    }
    // The SDK's wording would name YYYY-MM-DD only; this one names the
    // relative forms the Data API takes too.
    Err(ToolError::invalid(format!(
        "{field} `{value}` is not a date: use YYYY-MM-DD, `today`, `yesterday` or `NdaysAgo` (e.g. `28daysAgo`)"
    )))
}

/// How many days before today an end names (`today` 0), or the date.
enum DateEnd {
    Relative(u32),
    Absolute(String),
}

fn date_end(value: &str) -> DateEnd {
    match value {
        "today" => DateEnd::Relative(0),
        "yesterday" => DateEnd::Relative(1),
        v => match v.strip_suffix("daysAgo") {
            Some(n) => DateEnd::Relative(n.parse().unwrap_or(0)),
            None => DateEnd::Absolute(v.to_string()),
        },
    }
}

/// The range asked for, or the last 28 days; checked.
fn date_range(range: Option<DateRange>) -> Result<DateRange, ToolError> {
    let range = range.unwrap_or_else(|| DateRange {
        start_date: DEFAULT_START.into(),
        end_date: DEFAULT_END.into(),
    });
    check_date("start-date", &range.start_date)?;
    check_date("end-date", &range.end_date)?;
    let backwards = match (date_end(&range.start_date), date_end(&range.end_date)) {
        (DateEnd::Relative(s), DateEnd::Relative(e)) => s < e,
        (DateEnd::Absolute(s), DateEnd::Absolute(e)) => s > e,
        _ => false,
    };
    if backwards {
        return Err(ToolError::invalid(format!(
            "the date range ends before it starts ({} to {})",
            range.start_date, range.end_date
        )));
    }
    Ok(range)
}

/// A row limit: `default` when none is given, 1 to 10000.
fn row_limit(limit: Option<u32>, default: u32) -> Result<u32, ToolError> {
    bounded("limit", limit, default, 1, MAX_LIMIT)
}

fn dimension_name(d: Dimension) -> &'static str {
    match d {
        Dimension::Date => "date",
        Dimension::YearWeek => "yearWeek",
        Dimension::YearMonth => "yearMonth",
        Dimension::DayOfWeekName => "dayOfWeekName",
        Dimension::Hour => "hour",
        Dimension::Country => "country",
        Dimension::Region => "region",
        Dimension::City => "city",
        Dimension::Language => "language",
        Dimension::DeviceCategory => "deviceCategory",
        Dimension::OperatingSystem => "operatingSystem",
        Dimension::Browser => "browser",
        Dimension::Platform => "platform",
        Dimension::SessionDefaultChannelGroup => "sessionDefaultChannelGroup",
        Dimension::SessionSource => "sessionSource",
        Dimension::SessionMedium => "sessionMedium",
        Dimension::SessionSourceMedium => "sessionSourceMedium",
        Dimension::SessionCampaignName => "sessionCampaignName",
        Dimension::FirstUserDefaultChannelGroup => "firstUserDefaultChannelGroup",
        Dimension::FirstUserSource => "firstUserSource",
        Dimension::FirstUserMedium => "firstUserMedium",
        Dimension::LandingPage => "landingPage",
        Dimension::LandingPagePlusQueryString => "landingPagePlusQueryString",
        Dimension::PagePath => "pagePath",
        Dimension::PagePathPlusQueryString => "pagePathPlusQueryString",
        Dimension::PageTitle => "pageTitle",
        Dimension::HostName => "hostName",
        Dimension::EventName => "eventName",
        Dimension::NewVsReturning => "newVsReturning",
        Dimension::ItemName => "itemName",
    }
}

fn metric_name(m: Metric) -> &'static str {
    match m {
        Metric::ActiveUsers => "activeUsers",
        Metric::NewUsers => "newUsers",
        Metric::TotalUsers => "totalUsers",
        Metric::Sessions => "sessions",
        Metric::EngagedSessions => "engagedSessions",
        Metric::EngagementRate => "engagementRate",
        Metric::BounceRate => "bounceRate",
        Metric::AverageSessionDuration => "averageSessionDuration",
        Metric::SessionsPerUser => "sessionsPerUser",
        Metric::ScreenPageViews => "screenPageViews",
        Metric::ScreenPageViewsPerSession => "screenPageViewsPerSession",
        Metric::UserEngagementDuration => "userEngagementDuration",
        Metric::EventCount => "eventCount",
        Metric::KeyEvents => "keyEvents",
        Metric::TotalRevenue => "totalRevenue",
        Metric::PurchaseRevenue => "purchaseRevenue",
        Metric::EcommercePurchases => "ecommercePurchases",
        Metric::Transactions => "transactions",
        Metric::AddToCarts => "addToCarts",
        Metric::Checkouts => "checkouts",
    }
}

fn match_type_name(m: MatchType) -> &'static str {
    match m {
        MatchType::Exact => "EXACT",
        MatchType::BeginsWith => "BEGINS_WITH",
        MatchType::EndsWith => "ENDS_WITH",
        MatchType::Contains => "CONTAINS",
    }
}

fn breakdown_dimension(b: SourceBreakdown) -> &'static str {
    match b {
        SourceBreakdown::ChannelGroup => "sessionDefaultChannelGroup",
        SourceBreakdown::SourceMedium => "sessionSourceMedium",
        SourceBreakdown::Source => "sessionSource",
        SourceBreakdown::Medium => "sessionMedium",
        SourceBreakdown::Campaign => "sessionCampaignName",
    }
}

fn granularity_dimension(g: Granularity) -> &'static str {
    match g {
        Granularity::Day => "date",
        Granularity::Week => "yearWeek",
        Granularity::Month => "yearMonth",
    }
}

/// Names, refusing an empty list (when `required`), too many, or a repeat.
fn unique_names(
    what: &str,
    names: Vec<&'static str>,
    max: usize,
    required: bool,
) -> Result<Vec<&'static str>, ToolError> {
    if required && names.is_empty() {
        return Err(ToolError::invalid(format!("at least one {what} is needed")));
    }
    if names.len() > max {
        return Err(ToolError::invalid(format!(
            "at most {max} {what}s per report ({} given)",
            names.len()
        )));
    }
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(ToolError::invalid(format!("{what} `{n}` is given twice")));
        }
    }
    Ok(names)
}

/// A single string filter expression.
fn string_filter(
    field: &str,
    match_type: MatchType,
    value: &str,
    case_sensitive: bool,
) -> Result<Value, ToolError> {
    if value.is_empty() {
        return Err(ToolError::invalid(format!(
            "the filter on `{field}` has an empty value"
        )));
    }
    if value.chars().count() > MAX_FILTER_VALUE {
        return Err(ToolError::invalid(format!(
            "the filter on `{field}` is longer than {MAX_FILTER_VALUE} characters"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(ToolError::invalid(format!(
            "the filter on `{field}` holds a control character"
        )));
    }
    Ok(json!({"filter": {"fieldName": field, "stringFilter": {
        "matchType": match_type_name(match_type), "value": value, "caseSensitive": case_sensitive}}}))
}

/// The `dimensionFilter` of several filters: one expression, or an `andGroup`.
fn dimension_filter(filters: &[DimensionFilter]) -> Result<Option<Value>, ToolError> {
    if filters.len() > MAX_FILTERS {
        return Err(ToolError::invalid(format!(
            "at most {MAX_FILTERS} filters ({} given)",
            filters.len()
        )));
    }
    let mut expressions = Vec::new();
    for f in filters {
        expressions.push(string_filter(
            dimension_name(f.dimension),
            f.match_type,
            &f.value,
            f.case_sensitive.unwrap_or(false),
        )?);
    }
    Ok(match expressions.len() {
        0 => None,
        1 => expressions.pop(),
        _ => Some(json!({"andGroup": {"expressions": expressions}})),
    })
}

/// A runReport request body.
struct ReportRequest<'a> {
    range: &'a DateRange,
    dimensions: &'a [&'static str],
    metrics: &'a [&'static str],
    filter: Option<Value>,
    order_by: Option<Value>,
    limit: Option<u32>,
    offset: Option<u32>,
    totals: bool,
}

impl ReportRequest<'_> {
    fn body(&self) -> Value {
        let mut body = json!({
            "dateRanges": [{"startDate": self.range.start_date, "endDate": self.range.end_date}],
        });
        let obj = body.as_object_mut().expect("an object");
        if !self.dimensions.is_empty() {
            obj.insert(
                "dimensions".into(),
                self.dimensions.iter().map(|n| json!({"name": n})).collect(),
            );
        }
        obj.insert(
            "metrics".into(),
            self.metrics.iter().map(|n| json!({"name": n})).collect(),
        );
        if let Some(f) = &self.filter {
            obj.insert("dimensionFilter".into(), f.clone());
        }
        if let Some(o) = &self.order_by {
            obj.insert("orderBys".into(), json!([o]));
        }
        // int64 fields travel as strings in Google's JSON mapping.
        if let Some(l) = self.limit {
            obj.insert("limit".into(), Value::String(l.to_string()));
        }
        if let Some(o) = self.offset.filter(|o| *o > 0) {
            obj.insert("offset".into(), Value::String(o.to_string()));
        }
        if self.totals {
            obj.insert("metricAggregations".into(), json!(["TOTAL"]));
        }
        body
    }
}

fn order_by_metric(name: &str, desc: bool) -> Value {
    json!({"metric": {"metricName": name}, "desc": desc})
}

fn order_by_dimension(name: &str, desc: bool) -> Value {
    json!({"dimension": {"dimensionName": name}, "desc": desc})
}

/// `report`'s sort: the column must be one of the report's own.
fn report_order(
    order: Option<&OrderBy>,
    dimensions: &[&str],
    metrics: &[&str],
) -> Result<Option<Value>, ToolError> {
    let Some(order) = order else { return Ok(None) };
    Ok(Some(match order.field {
        OrderField::Metric(m) => {
            let name = metric_name(m);
            if !metrics.contains(&name) {
                return Err(ToolError::invalid(format!(
                    "order-by metric `{name}` is not one of the report's metrics"
                )));
            }
            order_by_metric(name, order.descending)
        }
        OrderField::Dimension(d) => {
            let name = dimension_name(d);
            if !dimensions.contains(&name) {
                return Err(ToolError::invalid(format!(
                    "order-by dimension `{name}` is not one of the report's dimensions"
                )));
            }
            order_by_dimension(name, order.descending)
        }
    }))
}

/// `20240131` -> `2024-01-31`, `202405` (yearWeek) -> `2024-W05`,
/// `202401` (yearMonth) -> `2024-01`; anything else as it came.
fn period_label(granularity: Granularity, value: &str) -> String {
    let digits = value.bytes().all(|b| b.is_ascii_digit());
    match granularity {
        Granularity::Day if digits && value.len() == 8 => {
            format!("{}-{}-{}", &value[..4], &value[4..6], &value[6..])
        }
        Granularity::Week if digits && value.len() == 6 => {
            format!("{}-W{}", &value[..4], &value[4..])
        }
        Granularity::Month if digits && value.len() == 6 => {
            format!("{}-{}", &value[..4], &value[4..])
        }
        _ => value.to_string(),
    }
}

/// `PROPERTY_TYPE_ORDINARY` -> `ordinary`.
fn property_type(api: Option<&str>) -> String {
    match api {
        None | Some("PROPERTY_TYPE_UNSPECIFIED") => "ordinary".to_string(),
        Some(t) => t
            .strip_prefix("PROPERTY_TYPE_")
            .unwrap_or(t)
            .to_ascii_lowercase(),
    }
}

/// `properties/123` -> `123`, `accounts/9` -> `9`.
fn last_segment(name: &str) -> String {
    name.rsplit('/').next().unwrap_or(name).to_string()
}

/// The text `property.txt` holds for a property.
fn property_file_text(id: &str) -> String {
    format!("{id}\n")
}

// ---------------------------------------------------------------------------
// Google's wire format (only the fields used; extra fields are ignored)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccountSummaries {
    #[serde(default)]
    account_summaries: Vec<AccountSummary>,
    #[serde(default)]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccountSummary {
    #[serde(default)]
    account: String,
    #[serde(default)]
    display_name: String,
    #[serde(default)]
    property_summaries: Vec<PropertySummary>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PropertySummary {
    property: String,
    #[serde(default)]
    display_name: String,
    #[serde(default)]
    property_type: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunReportResponse {
    #[serde(default)]
    dimension_headers: Vec<Header>,
    #[serde(default)]
    metric_headers: Vec<Header>,
    #[serde(default)]
    rows: Vec<Row>,
    #[serde(default)]
    totals: Vec<Row>,
    #[serde(default)]
    row_count: Option<u32>,
    #[serde(default)]
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    #[serde(default)]
    dimension_values: Vec<Cell>,
    #[serde(default)]
    metric_values: Vec<Cell>,
}

#[derive(Deserialize)]
struct Cell {
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    #[serde(default)]
    currency_code: Option<String>,
    #[serde(default)]
    time_zone: Option<String>,
}

/// A 404 names what was not found (`property 123: NOT_FOUND: ...`).
fn naming(what: &str) -> impl FnOnce(ToolError) -> ToolError + '_ {
    move |e| match e {
        ToolError::NotFound(m) => ToolError::NotFound(format!("{what}: {m}")),
        other => other,
    }
}

fn number(cell: Option<&Cell>, metric: &str) -> Result<f64, ToolError> {
    let Some(cell) = cell else { return Ok(0.0) };
    if cell.value.is_empty() {
        return Ok(0.0);
    }
    cell.value.parse::<f64>().map_err(|_| {
        ToolError::BadResponse(format!(
            "metric `{metric}` has a value that is not a number: `{}`",
            cell.value
        ))
    })
}

/// A report's table, checked against what was asked for.
struct Table {
    rows: Vec<(Vec<String>, Vec<f64>)>,
    totals: Vec<f64>,
    row_count: u32,
    currency_code: Option<String>,
    time_zone: Option<String>,
}

fn table(
    response: RunReportResponse,
    dimensions: &[&str],
    metrics: &[&str],
) -> Result<Table, ToolError> {
    // Headers are absent when there are no rows; when present they must be ours.
    if !response.dimension_headers.is_empty()
        && response
            .dimension_headers
            .iter()
            .map(|h| h.name.as_str())
            .ne(dimensions.iter().copied())
    {
        return Err(ToolError::BadResponse(
            "the report's dimension columns are not the ones asked for".into(),
        ));
    }
    if !response.metric_headers.is_empty()
        && response
            .metric_headers
            .iter()
            .map(|h| h.name.as_str())
            .ne(metrics.iter().copied())
    {
        return Err(ToolError::BadResponse(
            "the report's metric columns are not the ones asked for".into(),
        ));
    }
    let mut rows = Vec::with_capacity(response.rows.len());
    for row in &response.rows {
        if row.dimension_values.len() != dimensions.len()
            || row.metric_values.len() != metrics.len()
        {
            return Err(ToolError::BadResponse(
                "a report row does not have the columns asked for".into(),
            ));
        }
        let dims = row
            .dimension_values
            .iter()
            .map(|c| c.value.clone())
            .collect();
        let values = metrics
            .iter()
            .enumerate()
            .map(|(i, m)| number(row.metric_values.get(i), m))
            .collect::<Result<_, _>>()?;
        rows.push((dims, values));
    }
    let totals = match response.totals.first() {
        Some(t) => metrics
            .iter()
            .enumerate()
            .map(|(i, m)| number(t.metric_values.get(i), m))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let metadata = response.metadata.unwrap_or(Metadata {
        currency_code: None,
        time_zone: None,
    });
    Ok(Table {
        row_count: response.row_count.unwrap_or(rows.len() as u32),
        rows,
        totals,
        currency_code: metadata.currency_code.filter(|c| !c.is_empty()),
        time_zone: metadata.time_zone.filter(|t| !t.is_empty()),
    })
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

fn data_api() -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-analytics")
        .with_errors(ERRORS))
}

fn admin_api() -> Result<Http, ToolError> {
    Ok(Http::connect_to(ADMIN)?
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-analytics")
        .with_errors(ERRORS))
}

/// Every property of every account the credential can read (at most 10
/// pages of 200 accounts); `true` when pages were left.
fn all_properties() -> Result<(Vec<(AccountSummary, PropertySummary)>, bool), ToolError> {
    let http = admin_api()?;
    let (accounts, more) = pages::collect(usize::MAX, MAX_PAGES, |token: Option<String>| {
        let mut query = vec![("pageSize", PAGE_SIZE)];
        if let Some(t) = token.as_deref() {
            query.push(("pageToken", t));
        }
        let page: AccountSummaries = http
            .get("/v1beta/accountSummaries", &query)
            .map_err(naming("account summaries"))?;
        let next = page.next_page_token.filter(|t| !t.is_empty());
        Ok((page.account_summaries, next))
    })?;
    let mut out = Vec::new();
    for mut account in accounts {
        let properties = std::mem::take(&mut account.property_summaries);
        for p in properties {
            let a = AccountSummary {
                account: account.account.clone(),
                display_name: account.display_name.clone(),
                property_summaries: Vec::new(),
            };
            out.push((a, p));
        }
    }
    Ok((out, more.is_some()))
}

/// The property chosen with `use-property`, if the folder holds one.
/// `Ok(None)` when the folder is not granted or holds no choice.
fn remembered_property() -> Result<Option<String>, ToolError> {
    let dir = match folder::open(FOLDER) {
        Ok(d) => d,
        Err(folder::FolderError::Denied(_)) | Err(folder::FolderError::NotFound(_)) => {
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let bytes = match dir.read(PROPERTY_FILE) {
        Ok(b) => b,
        Err(folder::FolderError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    property_id(text).map(Some).map_err(|_| {
        ToolError::invalid(format!(
            "the remembered property in {FOLDER}/{PROPERTY_FILE} is not a property id; choose one again with `analytics_use_property`"
        ))
    })
}

/// The property a report runs on: the argument, or the remembered choice.
fn resolve_property(property: Option<String>) -> Result<String, ToolError> {
    match property {
        Some(p) => property_id(&p),
        None => remembered_property()?.ok_or_else(|| {
            ToolError::invalid(
                "no property given and none chosen: pass `property`, or choose one with `analytics_use_property` (`analytics_properties` lists them)",
            )
        }),
    }
}

fn run_report(property: &str, request: &ReportRequest) -> Result<Table, ToolError> {
    let what = format!("property {property}");
    let parsed: RunReportResponse = data_api()?
        .post(&run_report_path(property), &request.body())
        .map_err(naming(&what))?;
    table(parsed, request.dimensions, request.metrics)
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Analytics;

const OVERVIEW_METRICS: [&str; 10] = [
    "activeUsers",
    "newUsers",
    "sessions",
    "engagedSessions",
    "engagementRate",
    "averageSessionDuration",
    "screenPageViews",
    "eventCount",
    "keyEvents",
    "totalRevenue",
];
const SOURCE_METRICS: [&str; 6] = [
    "sessions",
    "activeUsers",
    "engagedSessions",
    "engagementRate",
    "keyEvents",
    "totalRevenue",
];
const LANDING_METRICS: [&str; 7] = [
    "sessions",
    "activeUsers",
    "newUsers",
    "engagementRate",
    "bounceRate",
    "averageSessionDuration",
    "keyEvents",
];

impl read_tools::Guest for Analytics {
    fn properties() -> Result<PropertyList, ToolError> {
        let (all, truncated) = all_properties()?;
        // A broken or missing choice only means nothing is marked chosen.
        let chosen = remembered_property().ok().flatten();
        let properties = all
            .into_iter()
            .map(|(a, p)| {
                let id = last_segment(&p.property);
                Property {
                    chosen: chosen.as_deref() == Some(id.as_str()),
                    property_id: id,
                    display_name: p.display_name,
                    property_type: property_type(p.property_type.as_deref()),
                    account_id: last_segment(&a.account),
                    account_name: a.display_name,
                }
            })
            .collect();
        Ok(PropertyList {
            properties,
            truncated,
        })
    }

    fn use_property(property: String) -> Result<ChosenProperty, ToolError> {
        let id = property_id(&property)?;
        let dir = folder::open(FOLDER)?;
        if !dir.writable() {
            return Err(ToolError::refused(format!(
                "the `{FOLDER}` folder is read-only in this session, so the choice cannot be kept; pass `property` to each tool instead"
            )));
        }
        let (all, truncated) = all_properties()?;
        let Some((account, found)) = all
            .into_iter()
            .find(|(_, p)| last_segment(&p.property) == id)
        else {
            let more = if truncated {
                " (only the first 2000 accounts were looked at)"
            } else {
                ""
            };
            return Err(ToolError::NotFound(format!(
                "property {id} is not one the credential can read{more}; `analytics_properties` lists them"
            )));
        };
        let previous = remembered_property().ok().flatten().filter(|p| *p != id);
        dir.write(PROPERTY_FILE, property_file_text(&id).as_bytes())?;
        Ok(ChosenProperty {
            property_id: id,
            display_name: found.display_name,
            account_name: account.display_name,
            previous,
        })
    }

    fn overview(
        property: Option<String>,
        date_range: Option<DateRange>,
    ) -> Result<OverviewTotals, ToolError> {
        let range = self::date_range(date_range)?;
        let property = resolve_property(property)?;
        let request = ReportRequest {
            range: &range,
            dimensions: &[],
            metrics: &OVERVIEW_METRICS,
            filter: None,
            order_by: None,
            limit: None,
            offset: None,
            totals: false,
        };
        let t = run_report(&property, &request)?;
        let v = |i: usize| t.rows.first().map(|r| r.1[i]).unwrap_or(0.0);
        Ok(OverviewTotals {
            property_id: property.clone(),
            active_users: v(0),
            new_users: v(1),
            sessions: v(2),
            engaged_sessions: v(3),
            engagement_rate: v(4),
            average_session_duration: v(5),
            screen_page_views: v(6),
            event_count: v(7),
            key_events: v(8),
            total_revenue: v(9),
            currency_code: t.currency_code,
            time_zone: t.time_zone,
            date_range: range,
        })
    }

    fn trend(
        property: Option<String>,
        metrics: Option<Vec<Metric>>,
        granularity: Option<Granularity>,
        date_range: Option<DateRange>,
    ) -> Result<TrendSeries, ToolError> {
        let metrics = metrics.unwrap_or_else(|| vec![Metric::ActiveUsers, Metric::Sessions]);
        let metrics = unique_names(
            "metric",
            metrics.into_iter().map(metric_name).collect(),
            MAX_TREND_METRICS,
            true,
        )?;
        let granularity = granularity.unwrap_or(Granularity::Day);
        let range = self::date_range(date_range)?;
        let property = resolve_property(property)?;
        let dimension = [granularity_dimension(granularity)];
        let request = ReportRequest {
            range: &range,
            dimensions: &dimension,
            metrics: &metrics,
            filter: None,
            order_by: Some(order_by_dimension(dimension[0], false)),
            limit: Some(MAX_LIMIT),
            offset: None,
            totals: false,
        };
        let t = run_report(&property, &request)?;
        let points = t
            .rows
            .into_iter()
            .map(|(d, values)| TrendPoint {
                period: period_label(granularity, &d[0]),
                values,
            })
            .collect();
        Ok(TrendSeries {
            property_id: property,
            date_range: range,
            metrics: metrics.iter().map(|m| m.to_string()).collect(),
            points,
        })
    }

    fn traffic_sources(
        property: Option<String>,
        breakdown: Option<SourceBreakdown>,
        date_range: Option<DateRange>,
        limit: Option<u32>,
    ) -> Result<TrafficSourcesReport, ToolError> {
        let limit = row_limit(limit, DEFAULT_RANKED)?;
        let range = self::date_range(date_range)?;
        let property = resolve_property(property)?;
        let dimension = [breakdown_dimension(
            breakdown.unwrap_or(SourceBreakdown::ChannelGroup),
        )];
        let request = ReportRequest {
            range: &range,
            dimensions: &dimension,
            metrics: &SOURCE_METRICS,
            filter: None,
            order_by: Some(order_by_metric("sessions", true)),
            limit: Some(limit),
            offset: None,
            totals: false,
        };
        let t = run_report(&property, &request)?;
        let rows = t
            .rows
            .into_iter()
            .map(|(mut d, v)| TrafficSource {
                source: d.remove(0),
                sessions: v[0],
                active_users: v[1],
                engaged_sessions: v[2],
                engagement_rate: v[3],
                key_events: v[4],
                total_revenue: v[5],
            })
            .collect();
        Ok(TrafficSourcesReport {
            property_id: property,
            date_range: range,
            dimension: dimension[0].to_string(),
            rows,
            row_count: t.row_count,
        })
    }

    fn landing_pages(
        property: Option<String>,
        date_range: Option<DateRange>,
        path_contains: Option<String>,
        limit: Option<u32>,
    ) -> Result<LandingPagesReport, ToolError> {
        let limit = row_limit(limit, DEFAULT_RANKED)?;
        let range = self::date_range(date_range)?;
        let filter = match path_contains.as_deref() {
            Some(p) => Some(string_filter("landingPage", MatchType::Contains, p, false)?),
            None => None,
        };
        let property = resolve_property(property)?;
        let request = ReportRequest {
            range: &range,
            dimensions: &["landingPage"],
            metrics: &LANDING_METRICS,
            filter,
            order_by: Some(order_by_metric("sessions", true)),
            limit: Some(limit),
            offset: None,
            totals: false,
        };
        let t = run_report(&property, &request)?;
        let rows = t
            .rows
            .into_iter()
            .map(|(mut d, v)| LandingPage {
                page: d.remove(0),
                sessions: v[0],
                active_users: v[1],
                new_users: v[2],
                engagement_rate: v[3],
                bounce_rate: v[4],
                average_session_duration: v[5],
                key_events: v[6],
            })
            .collect();
        Ok(LandingPagesReport {
            property_id: property,
            date_range: range,
            rows,
            row_count: t.row_count,
        })
    }

    fn report(
        property: Option<String>,
        dimensions: Vec<Dimension>,
        metrics: Vec<Metric>,
        date_range: Option<DateRange>,
        filters: Option<Vec<DimensionFilter>>,
        order_by: Option<OrderBy>,
        limit: Option<u32>,
        offset: Option<u32>,
    ) -> Result<ReportTable, ToolError> {
        let dimensions = unique_names(
            "dimension",
            dimensions.into_iter().map(dimension_name).collect(),
            MAX_DIMENSIONS,
            false,
        )?;
        let metrics = unique_names(
            "metric",
            metrics.into_iter().map(metric_name).collect(),
            MAX_METRICS,
            true,
        )?;
        let range = self::date_range(date_range)?;
        let filter = dimension_filter(filters.as_deref().unwrap_or(&[]))?;
        let order = report_order(order_by.as_ref(), &dimensions, &metrics)?;
        let limit = row_limit(limit, DEFAULT_REPORT)?;
        let property = resolve_property(property)?;
        let request = ReportRequest {
            range: &range,
            dimensions: &dimensions,
            metrics: &metrics,
            filter,
            order_by: order,
            limit: Some(limit),
            offset,
            totals: true,
        };
        let t = run_report(&property, &request)?;
        Ok(ReportTable {
            property_id: property,
            date_range: range,
            dimensions: dimensions.iter().map(|d| d.to_string()).collect(),
            metrics: metrics.iter().map(|m| m.to_string()).collect(),
            rows: t
                .rows
                .into_iter()
                .map(|(dimensions, metrics)| ReportRow {
                    dimensions,
                    metrics,
                })
                .collect(),
            totals: t.totals,
            row_count: t.row_count,
            currency_code: t.currency_code,
            time_zone: t.time_zone,
        })
    }
}

scout_sdk::export!(Analytics);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_ids() {
        assert_eq!(property_id("123456789").unwrap(), "123456789");
        assert_eq!(property_id("properties/123456789").unwrap(), "123456789");
        assert_eq!(property_id(" 42 ").unwrap(), "42");
        for bad in [
            "",
            "properties/",
            "12a",
            "123/456",
            "../1",
            "1:runPivotReport",
            "١٢٣",
            "-1",
            &"9".repeat(21),
        ] {
            assert!(property_id(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(run_report_path("42"), "/v1beta/properties/42:runReport");
    }

    #[test]
    fn dates() {
        for good in [
            "today",
            "yesterday",
            "0daysAgo",
            "28daysAgo",
            "2024-02-29",
            "2023-12-31",
        ] {
            assert!(check_date("d", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "daysAgo",
            "-1daysAgo",
            "99999daysAgo",
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "2024/01/01",
            "tomorrow",
            "1999-01-01",
        ] {
            assert!(check_date("d", bad).is_err(), "{bad:?}");
        }
        assert!(date_range(None).is_ok());
        let r = |s: &str, e: &str| {
            date_range(Some(DateRange {
                start_date: s.into(),
                end_date: e.into(),
            }))
        };
        assert!(r("2024-01-01", "2024-01-31").is_ok());
        assert!(r("2024-02-01", "2024-01-31").is_err());
        assert!(r("7daysAgo", "today").is_ok());
        assert!(r("yesterday", "7daysAgo").is_err());
        assert!(r("2024-01-01", "today").is_ok());
    }

    #[test]
    fn limits_and_names() {
        assert_eq!(row_limit(None, 25).unwrap(), 25);
        assert_eq!(row_limit(Some(10_000), 25).unwrap(), 10_000);
        assert!(row_limit(Some(0), 25).is_err());
        assert!(
            matches!(row_limit(Some(10_001), 25), Err(ToolError::InvalidInput(m)) if m == "limit must be between 1 and 10000, not 10001")
        );
        assert!(unique_names("metric", vec![], 10, true).is_err());
        assert!(unique_names("metric", vec!["a", "a"], 10, true).is_err());
        assert!(unique_names("dimension", vec![], 9, false).is_ok());
        assert!(unique_names("dimension", vec!["a"; 10], 9, false).is_err());
    }

    #[test]
    fn bodies() {
        let range = DateRange {
            start_date: "7daysAgo".into(),
            end_date: "yesterday".into(),
        };
        let req = ReportRequest {
            range: &range,
            dimensions: &["country"],
            metrics: &["sessions"],
            filter: dimension_filter(&[DimensionFilter {
                dimension: Dimension::Country,
                match_type: MatchType::Exact,
                value: "France".into(),
                case_sensitive: None,
            }])
            .unwrap(),
            order_by: Some(order_by_metric("sessions", true)),
            limit: Some(10),
            offset: Some(0),
            totals: true,
        };
        assert_eq!(
            req.body(),
            json!({"dateRanges": [{"startDate": "7daysAgo", "endDate": "yesterday"}],
                   "dimensions": [{"name": "country"}], "metrics": [{"name": "sessions"}],
                   "dimensionFilter": {"filter": {"fieldName": "country", "stringFilter": {"matchType": "EXACT", "value": "France", "caseSensitive": false}}},
                   "orderBys": [{"metric": {"metricName": "sessions"}, "desc": true}],
                   "limit": "10", "metricAggregations": ["TOTAL"]})
        );
        assert!(string_filter("x", MatchType::Exact, "", false).is_err());
        assert!(string_filter("x", MatchType::Exact, "a\nb", false).is_err());
        assert!(string_filter("x", MatchType::Exact, &"é".repeat(500), false).is_ok());
        assert!(string_filter("x", MatchType::Exact, &"é".repeat(501), false).is_err());
    }

    #[test]
    fn labels() {
        assert_eq!(period_label(Granularity::Day, "20240131"), "2024-01-31");
        assert_eq!(period_label(Granularity::Week, "202405"), "2024-W05");
        assert_eq!(period_label(Granularity::Month, "202401"), "2024-01");
        assert_eq!(period_label(Granularity::Day, "(other)"), "(other)");
        assert_eq!(property_type(Some("PROPERTY_TYPE_ROLLUP")), "rollup");
        assert_eq!(property_type(None), "ordinary");
        assert_eq!(last_segment("properties/123"), "123");
        assert_eq!(property_file_text("123"), "123\n");
    }

    #[test]
    fn google_errors() {
        // The connector reads the Data and Admin APIs' errors in the SDK's Google format.
        let body = br#"{"error": {"code": 403, "message": "User does not have sufficient permissions for this property.", "status": "PERMISSION_DENIED"}}"#;
        assert_eq!(
            ERRORS.message(body),
            "PERMISSION_DENIED: User does not have sufficient permissions for this property."
        );
        assert_eq!(ERRORS.message(b"Bad Gateway"), "Bad Gateway");
        assert!(
            matches!(naming("property 1")(ERRORS.status_error(404, b"gone").unwrap()), ToolError::NotFound(m) if m == "property 1: gone")
        );
    }

    #[test]
    fn tables() {
        let r: RunReportResponse = serde_json::from_str(
            r#"{"dimensionHeaders":[{"name":"country"}],"metricHeaders":[{"name":"sessions","type":"TYPE_INTEGER"}],
                "rows":[{"dimensionValues":[{"value":"France"}],"metricValues":[{"value":"12"}]}],
                "totals":[{"dimensionValues":[{"value":"RESERVED_TOTAL"}],"metricValues":[{"value":"12"}]}],
                "rowCount":1,"metadata":{"currencyCode":"EUR","timeZone":"Europe/Paris"}}"#,
        )
        .unwrap();
        let t = table(r, &["country"], &["sessions"]).unwrap();
        assert_eq!(t.rows, vec![(vec!["France".to_string()], vec![12.0])]);
        assert_eq!(t.totals, vec![12.0]);
        let r: RunReportResponse =
            serde_json::from_str(r#"{"metricHeaders":[{"name":"users"}],"rows":[]}"#).unwrap();
        assert!(table(r, &[], &["sessions"]).is_err());
        let r: RunReportResponse =
            serde_json::from_str(r#"{"rows":[{"metricValues":[{"value":"abc"}]}]}"#).unwrap();
        assert!(table(r, &[], &["sessions"]).is_err());
    }
}
