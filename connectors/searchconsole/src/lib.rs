//! The Google Search Console connector: six read tools over the Search
//! Console API, and no write tools.
//!
//! Every request goes through the host's HTTP capability, bound to
//! `https://searchconsole.googleapis.com` (the discovery document of
//! `searchconsole:v1` has that `rootUrl` and serves both
//! `webmasters/v3/sites...` and `v1/urlInspection/index:inspect` under it)
//! with the brand's OAuth token, which the host injects; this code never sees
//! a secret.
//!
//! A property (`site-url`) is either a Domain property, `sc-domain:NAME`, or a
//! URL-prefix property, `https://HOST[:PORT]/PATH/`. It is validated before
//! any request and then sent as ONE path segment, percent-encoded with the
//! SDK's `encode_segment` (`https%3A%2F%2Fwww.example.com%2F`, as Google's
//! reference shows); the route declares it `{site:encoded}`, the only place
//! the host lets a `%2F` through.
//!
//! Errors: Google answers `{"error": {"code", "status", "message"}}`, read
//! with the SDK's `ErrorFormat::Google`. A 404 is `not-found`; every other
//! status is `upstream` with Google's status name and message. In
//! particular a 403 `PERMISSION_DENIED` (a property the user cannot see, or
//! a URL outside it) is `upstream`, not `refused`:
//! `refused` is for this connector's own rules, and here it is Google that
//! said no, about the user's access, which the user can change in Search
//! Console.

scout_sdk::bindings!();

use bindings::exports::scout::searchconsole::read_tools::{
    self, BreakdownDimension, DataState, Filter, FilterDimension, FilterOperator, Inspection,
    PeriodTotals, PermissionLevel, Property, PropertyKind, Report, Row, SearchType,
};
use scout_sdk::args::{date, date_range};
use scout_sdk::{ErrorFormat, Http, ToolError, encode_segment};
use serde::{Deserialize, Serialize};

/// Longest property string accepted.
const MAX_SITE: usize = 512;
/// Longest URL to inspect (Search Console's own limit is about 2 KB).
const MAX_URL: usize = 2048;
/// Rows per page when none is asked for.
const DEFAULT_ROWS: u32 = 100;
/// The most rows one call returns: one page; paging walks are withheld.
const MAX_ROWS: u32 = 1000;
/// The most filters one call takes.
const MAX_FILTERS: usize = 20;
/// Longest filter expression.
const MAX_EXPRESSION: usize = 1000;
/// How Google writes its errors.
const ERRORS: ErrorFormat = ErrorFormat::Google;

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// A DNS name: labels of ASCII letters, digits and `-` (not at either end),
/// 1 to 63 characters each, at least two labels, 253 characters at most.
fn is_dns_name(name: &str) -> bool {
    if name.is_empty() || name.len() > 253 || !name.contains('.') {
        return false;
    }
    name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

/// Checks a property string and says which kind it is.
fn validate_site(site: &str) -> Result<PropertyKind, ToolError> {
    if site.is_empty() {
        return Err(ToolError::invalid(
            "site-url is empty; `properties` lists the properties you can read",
        ));
    }
    if site.len() > MAX_SITE {
        return Err(ToolError::invalid(format!(
            "site-url is longer than {MAX_SITE} characters"
        )));
    }
    if let Some(domain) = site.strip_prefix("sc-domain:") {
        if !is_dns_name(domain) {
            return Err(ToolError::invalid(format!(
                "site-url `{site}`: `{domain}` is not a domain name (a Domain property is `sc-domain:example.com`)"
            )));
        }
        return Ok(PropertyKind::Domain);
    }
    let rest = site.strip_prefix("https://").or_else(|| site.strip_prefix("http://")).ok_or_else(|| {
        ToolError::invalid(format!(
            "site-url `{site}` is neither a Domain property (`sc-domain:example.com`) nor a URL-prefix property (`https://www.example.com/`)"
        ))
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => {
            return Err(ToolError::invalid(format!(
                "site-url `{site}`: a URL-prefix property ends in `/`, e.g. `https://www.example.com/`"
            )));
        }
    };
    let host = match authority.rsplit_once(':') {
        Some((host, port)) => {
            if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ToolError::invalid(format!(
                    "site-url `{site}`: `{port}` is not a port"
                )));
            }
            host
        }
        None => authority,
    };
    if !is_dns_name(host) {
        return Err(ToolError::invalid(format!(
            "site-url `{site}`: `{host}` is not a host name"
        )));
    }
    if !path.ends_with('/') {
        return Err(ToolError::invalid(format!(
            "site-url `{site}`: a URL-prefix property ends in `/`, e.g. `https://www.example.com/`"
        )));
    }
    let inner = path.get(1..path.len() - 1).unwrap_or_default();
    if path.contains("//") || !inner.is_empty() {
        for segment in inner.split('/') {
            if segment.is_empty() || segment == "." || segment == ".." {
                return Err(ToolError::invalid(format!(
                    "site-url `{site}` has an empty, `.` or `..` path segment"
                )));
            }
        }
    }
    if !path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~/!$&'()+,;=:@".contains(&b))
    {
        return Err(ToolError::invalid(format!(
            "site-url `{site}`: the path may hold only ASCII letters, digits and `-._~/!$&'()+,;=:@` (no `%`, `?`, `#`, spaces)"
        )));
    }
    Ok(PropertyKind::UrlPrefix)
}

/// The property as one path segment (`https%3A%2F%2Fwww.example.com%2F`).
fn site_segment(site: &str) -> Result<String, ToolError> {
    validate_site(site)?;
    Ok(encode_segment(site))
}

/// Checks a date range: two calendar dates `YYYY-MM-DD` (the SDK's check),
/// the start not after the end, neither before 2000.
fn validate_range(start: &str, end: &str) -> Result<(), ToolError> {
    date_range(start, end)?;
    for (what, text) in [("the start date", start), ("the end date", end)] {
        let (year, _, _) = date(what, text)?;
        if year < 2000 {
            return Err(ToolError::invalid(format!(
                "{what} must be a date YYYY-MM-DD from 2000 on, not `{text}`"
            )));
        }
    }
    Ok(())
}

/// A row limit, 1 to one page. Not the SDK's `args::bounded`: the host's
/// tests of this connector assert this wording, which says why the bound is
/// one page.
fn row_limit(limit: Option<u32>) -> Result<u32, ToolError> {
    match limit {
        None => Ok(DEFAULT_ROWS),
        Some(n) if (1..=MAX_ROWS).contains(&n) => Ok(n),
        Some(n) => Err(ToolError::invalid(format!(
            "row-limit {n} is not between 1 and {MAX_ROWS} (one page; walking further pages is withheld)"
        ))),
    }
}

fn search_type_wire(t: SearchType) -> &'static str {
    match t {
        SearchType::Web => "web",
        SearchType::Image => "image",
        SearchType::Video => "video",
        SearchType::News => "news",
        SearchType::Discover => "discover",
        SearchType::GoogleNews => "googleNews",
    }
}

fn data_state_wire(d: DataState) -> &'static str {
    match d {
        DataState::Final => "final",
        DataState::All => "all",
    }
}

fn filter_dimension_wire(d: FilterDimension) -> &'static str {
    match d {
        FilterDimension::Query => "query",
        FilterDimension::Page => "page",
        FilterDimension::Country => "country",
        FilterDimension::Device => "device",
        FilterDimension::SearchAppearance => "searchAppearance",
    }
}

fn operator_wire(o: FilterOperator) -> &'static str {
    match o {
        FilterOperator::Equals => "equals",
        FilterOperator::NotEquals => "notEquals",
        FilterOperator::Contains => "contains",
        FilterOperator::NotContains => "notContains",
        FilterOperator::IncludingRegex => "includingRegex",
        FilterOperator::ExcludingRegex => "excludingRegex",
    }
}

fn breakdown_wire(d: BreakdownDimension) -> &'static str {
    match d {
        BreakdownDimension::Country => "country",
        BreakdownDimension::Device => "device",
        BreakdownDimension::SearchAppearance => "searchAppearance",
        BreakdownDimension::Date => "date",
    }
}

/// Checks the filters and puts them in one `and` group.
fn filter_groups(filters: &[Filter]) -> Result<Vec<FilterGroup<'_>>, ToolError> {
    if filters.is_empty() {
        return Ok(Vec::new());
    }
    if filters.len() > MAX_FILTERS {
        return Err(ToolError::invalid(format!(
            "{} filters given; at most {MAX_FILTERS}",
            filters.len()
        )));
    }
    let mut out = Vec::with_capacity(filters.len());
    for (i, f) in filters.iter().enumerate() {
        let e = f.expression.as_str();
        if e.is_empty() {
            return Err(ToolError::invalid(format!(
                "filter {i}: the expression is empty"
            )));
        }
        if e.chars().count() > MAX_EXPRESSION {
            return Err(ToolError::invalid(format!(
                "filter {i}: the expression is longer than {MAX_EXPRESSION} characters"
            )));
        }
        if e.chars().any(char::is_control) {
            return Err(ToolError::invalid(format!(
                "filter {i}: the expression holds a control character"
            )));
        }
        let exact = matches!(
            f.operator,
            FilterOperator::Equals | FilterOperator::NotEquals
        );
        if exact
            && f.dimension == FilterDimension::Country
            && !(e.len() == 3 && e.bytes().all(|b| b.is_ascii_alphabetic()))
        {
            return Err(ToolError::invalid(format!(
                "filter {i}: country `{e}` is not an ISO 3166-1 alpha-3 code such as `fra`"
            )));
        }
        if exact
            && f.dimension == FilterDimension::Device
            && !["desktop", "mobile", "tablet"].contains(&e.to_ascii_lowercase().as_str())
        {
            return Err(ToolError::invalid(format!(
                "filter {i}: device `{e}` is not `desktop`, `mobile` or `tablet`"
            )));
        }
        out.push(ApiFilter {
            dimension: filter_dimension_wire(f.dimension),
            operator: operator_wire(f.operator),
            expression: e,
        });
    }
    Ok(vec![FilterGroup {
        group_type: "and",
        filters: out,
    }])
}

/// The host of an `http(s)://` URL, lower-cased; none if it is not one.
fn url_host(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.contains('@') {
        return None;
    }
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        Some(_) => return None,
        None => authority,
    };
    is_dns_name(host).then(|| host.to_ascii_lowercase())
}

/// Checks the URL to inspect: an `http(s)` URL under the property.
fn validate_inspection_url(site: &str, kind: PropertyKind, url: &str) -> Result<(), ToolError> {
    if url.is_empty() {
        return Err(ToolError::invalid("inspection-url is empty"));
    }
    if url.len() > MAX_URL {
        return Err(ToolError::invalid(format!(
            "inspection-url is longer than {MAX_URL} characters"
        )));
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(ToolError::invalid(
            "inspection-url holds whitespace or a control character",
        ));
    }
    let Some(host) = url_host(url) else {
        return Err(ToolError::invalid(format!(
            "inspection-url `{url}` is not an http(s) URL with a host name"
        )));
    };
    let under = match kind {
        PropertyKind::Domain => {
            let domain = site.trim_start_matches("sc-domain:").to_ascii_lowercase();
            host == domain || host.ends_with(&format!(".{domain}"))
        }
        PropertyKind::UrlPrefix => url.starts_with(site),
    };
    if !under {
        return Err(ToolError::invalid(format!(
            "inspection-url `{url}` is not under the property `{site}`"
        )));
    }
    Ok(())
}

/// A BCP-47 language tag such as `en-US`.
fn validate_language(code: &str) -> Result<(), ToolError> {
    let ok = !code.is_empty()
        && code.len() <= 35
        && code
            .split('-')
            .all(|p| !p.is_empty() && p.len() <= 8 && p.bytes().all(|b| b.is_ascii_alphanumeric()));
    if !ok {
        return Err(ToolError::invalid(format!(
            "language-code `{code}` is not a BCP-47 language tag such as `en-US`"
        )));
    }
    Ok(())
}

fn permission_level(level: Option<&str>) -> PermissionLevel {
    match level.unwrap_or_default() {
        "siteOwner" | "SITE_OWNER" => PermissionLevel::SiteOwner,
        "siteFullUser" | "SITE_FULL_USER" => PermissionLevel::SiteFullUser,
        "siteRestrictedUser" | "SITE_RESTRICTED_USER" => PermissionLevel::SiteRestrictedUser,
        "siteUnverifiedUser" | "SITE_UNVERIFIED_USER" => PermissionLevel::SiteUnverifiedUser,
        _ => PermissionLevel::Unspecified,
    }
}

fn rows_of(response: QueryResponse, limit: u32) -> Report {
    let may_have_more = response.rows.len() as u64 >= u64::from(limit);
    Report {
        rows: response
            .rows
            .into_iter()
            .map(|r| Row {
                key: r.keys.into_iter().next().unwrap_or_default(),
                clicks: r.clicks,
                impressions: r.impressions,
                ctr: r.ctr,
                position: r.position,
            })
            .collect(),
        aggregation: response.response_aggregation_type,
        may_have_more,
    }
}

fn totals_of(response: QueryResponse) -> PeriodTotals {
    let aggregation = response.response_aggregation_type;
    match response.rows.into_iter().next() {
        None => PeriodTotals {
            clicks: 0.0,
            impressions: 0.0,
            ctr: 0.0,
            position: None,
            aggregation,
        },
        Some(r) => PeriodTotals {
            clicks: r.clicks,
            impressions: r.impressions,
            ctr: r.ctr,
            position: (r.impressions > 0.0).then_some(r.position),
            aggregation,
        },
    }
}

fn inspection_of(result: ApiInspectionResult) -> Inspection {
    let index = result.index_status_result.unwrap_or_default();
    let rich = result.rich_results_result;
    Inspection {
        verdict: index
            .verdict
            .unwrap_or_else(|| "VERDICT_UNSPECIFIED".to_string()),
        coverage_state: index.coverage_state,
        indexing_state: index.indexing_state,
        robots_txt_state: index.robots_txt_state,
        page_fetch_state: index.page_fetch_state,
        last_crawl_time: index.last_crawl_time,
        crawled_as: index.crawled_as,
        google_canonical: index.google_canonical,
        user_canonical: index.user_canonical,
        sitemaps: index.sitemap,
        referring_urls: index.referring_urls,
        mobile_usability_verdict: result.mobile_usability_result.and_then(|m| m.verdict),
        rich_result_types: rich
            .as_ref()
            .map(|r| {
                r.detected_items
                    .iter()
                    .filter_map(|d| d.rich_result_type.clone())
                    .collect()
            })
            .unwrap_or_default(),
        rich_results_verdict: rich.and_then(|r| r.verdict),
        amp_verdict: result.amp_result.and_then(|a| a.verdict),
        link: result.inspection_result_link,
    }
}

// ---------------------------------------------------------------------------
// Google's wire format (only the fields used; extra fields are ignored)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SitesList {
    #[serde(default)]
    site_entry: Vec<ApiSite>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiSite {
    site_url: String,
    #[serde(default)]
    permission_level: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiFilter<'a> {
    dimension: &'static str,
    operator: &'static str,
    expression: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FilterGroup<'a> {
    group_type: &'static str,
    filters: Vec<ApiFilter<'a>>,
}

/// The body of `searchAnalytics/query`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueryBody<'a> {
    start_date: &'a str,
    end_date: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dimensions: Vec<&'static str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    search_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dimension_filter_groups: Vec<FilterGroup<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_state: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    row_limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryResponse {
    #[serde(default)]
    rows: Vec<ApiRow>,
    #[serde(default)]
    response_aggregation_type: Option<String>,
}

#[derive(Deserialize)]
struct ApiRow {
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

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InspectBody<'a> {
    inspection_url: &'a str,
    site_url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    language_code: Option<&'a str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InspectResponse {
    inspection_result: ApiInspectionResult,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiInspectionResult {
    #[serde(default)]
    inspection_result_link: Option<String>,
    #[serde(default)]
    index_status_result: Option<ApiIndexStatus>,
    #[serde(default)]
    mobile_usability_result: Option<ApiVerdict>,
    #[serde(default)]
    rich_results_result: Option<ApiRichResults>,
    #[serde(default)]
    amp_result: Option<ApiAmp>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ApiIndexStatus {
    #[serde(default)]
    verdict: Option<String>,
    #[serde(default)]
    coverage_state: Option<String>,
    #[serde(default)]
    indexing_state: Option<String>,
    #[serde(default)]
    robots_txt_state: Option<String>,
    #[serde(default)]
    page_fetch_state: Option<String>,
    #[serde(default)]
    last_crawl_time: Option<String>,
    #[serde(default)]
    crawled_as: Option<String>,
    #[serde(default)]
    google_canonical: Option<String>,
    #[serde(default)]
    user_canonical: Option<String>,
    #[serde(default)]
    sitemap: Vec<String>,
    #[serde(default)]
    referring_urls: Vec<String>,
}

#[derive(Deserialize)]
struct ApiVerdict {
    #[serde(default)]
    verdict: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiRichResults {
    #[serde(default)]
    verdict: Option<String>,
    #[serde(default)]
    detected_items: Vec<ApiDetectedItems>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiDetectedItems {
    #[serde(default)]
    rich_result_type: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiAmp {
    #[serde(default, rename = "ampIndexStatusVerdict")]
    verdict: Option<String>,
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// The client for the Search Console origin the host granted.
fn searchconsole() -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_header("accept", "application/json")
        .with_errors(ERRORS))
}

/// Arguments every search-analytics tool shares.
struct Query<'a> {
    site: &'a str,
    start: &'a str,
    end: &'a str,
    search_type: Option<SearchType>,
    filters: &'a [Filter],
    data_state: Option<DataState>,
}

impl Query<'_> {
    /// Validates everything, then sends one `searchAnalytics/query`.
    fn run(
        &self,
        dimension: Option<&'static str>,
        rows: Option<u32>,
    ) -> Result<QueryResponse, ToolError> {
        let segment = site_segment(self.site)?;
        validate_range(self.start, self.end)?;
        let body = QueryBody {
            start_date: self.start,
            end_date: self.end,
            dimensions: dimension.into_iter().collect(),
            search_type: self.search_type.map(search_type_wire),
            dimension_filter_groups: filter_groups(self.filters)?,
            data_state: self.data_state.map(data_state_wire),
            row_limit: rows,
        };
        searchconsole()?.post(
            &format!("/webmasters/v3/sites/{segment}/searchAnalytics/query"),
            &body,
        )
    }

    fn report(&self, dimension: &'static str, limit: Option<u32>) -> Result<Report, ToolError> {
        let limit = row_limit(limit)?;
        Ok(rows_of(self.run(Some(dimension), Some(limit))?, limit))
    }
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct SearchConsole;

impl read_tools::Guest for SearchConsole {
    fn properties() -> Result<Vec<Property>, ToolError> {
        let list: SitesList = searchconsole()?.get("/webmasters/v3/sites", &[])?;
        Ok(list
            .site_entry
            .into_iter()
            .map(|s| Property {
                kind: if s.site_url.starts_with("sc-domain:") {
                    PropertyKind::Domain
                } else {
                    PropertyKind::UrlPrefix
                },
                permission_level: permission_level(s.permission_level.as_deref()),
                site_url: s.site_url,
            })
            .collect())
    }

    fn totals(
        site_url: String,
        start_date: String,
        end_date: String,
        search_type: Option<SearchType>,
        filters: Option<Vec<Filter>>,
        data_state: Option<DataState>,
    ) -> Result<PeriodTotals, ToolError> {
        let filters = filters.unwrap_or_default();
        let q = Query {
            site: &site_url,
            start: &start_date,
            end: &end_date,
            search_type,
            filters: &filters,
            data_state,
        };
        Ok(totals_of(q.run(None, None)?))
    }

    fn queries(
        site_url: String,
        start_date: String,
        end_date: String,
        search_type: Option<SearchType>,
        filters: Option<Vec<Filter>>,
        data_state: Option<DataState>,
        row_limit: Option<u32>,
    ) -> Result<Report, ToolError> {
        let filters = filters.unwrap_or_default();
        let q = Query {
            site: &site_url,
            start: &start_date,
            end: &end_date,
            search_type,
            filters: &filters,
            data_state,
        };
        q.report("query", row_limit)
    }

    fn pages(
        site_url: String,
        start_date: String,
        end_date: String,
        search_type: Option<SearchType>,
        filters: Option<Vec<Filter>>,
        data_state: Option<DataState>,
        row_limit: Option<u32>,
    ) -> Result<Report, ToolError> {
        let filters = filters.unwrap_or_default();
        let q = Query {
            site: &site_url,
            start: &start_date,
            end: &end_date,
            search_type,
            filters: &filters,
            data_state,
        };
        q.report("page", row_limit)
    }

    fn breakdown(
        site_url: String,
        start_date: String,
        end_date: String,
        dimension: BreakdownDimension,
        search_type: Option<SearchType>,
        filters: Option<Vec<Filter>>,
        data_state: Option<DataState>,
        row_limit: Option<u32>,
    ) -> Result<Report, ToolError> {
        let filters = filters.unwrap_or_default();
        let q = Query {
            site: &site_url,
            start: &start_date,
            end: &end_date,
            search_type,
            filters: &filters,
            data_state,
        };
        q.report(breakdown_wire(dimension), row_limit)
    }

    fn inspect_url(
        site_url: String,
        inspection_url: String,
        language_code: Option<String>,
    ) -> Result<Inspection, ToolError> {
        let kind = validate_site(&site_url)?;
        validate_inspection_url(&site_url, kind, &inspection_url)?;
        if let Some(code) = &language_code {
            validate_language(code)?;
        }
        let body = InspectBody {
            inspection_url: &inspection_url,
            site_url: &site_url,
            language_code: language_code.as_deref(),
        };
        let response: InspectResponse =
            searchconsole()?.post("/v1/urlInspection/index:inspect", &body)?;
        Ok(inspection_of(response.inspection_result))
    }
}

scout_sdk::export!(SearchConsole);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_domain_or_url_prefix() {
        assert_eq!(
            validate_site("sc-domain:example.com").unwrap(),
            PropertyKind::Domain
        );
        assert_eq!(
            validate_site("sc-domain:xn--bcher-kva.example").unwrap(),
            PropertyKind::Domain
        );
        for good in [
            "https://www.example.com/",
            "http://example.com/",
            "https://example.com:8443/",
            "https://example.com/blog/",
            "https://example.com/a/b-c_d/",
        ] {
            assert_eq!(
                validate_site(good).unwrap(),
                PropertyKind::UrlPrefix,
                "{good}"
            );
        }
        let long = format!("https://example.com/{}/", "a".repeat(600));
        for bad in [
            "",
            "example.com",
            "www.example.com/",
            "https://www.example.com",
            "https://www.example.com/blog",
            "ftp://example.com/",
            "https://example.com/../",
            "https://example.com/./",
            "https://example.com//",
            "https://example.com/a//b/",
            "https://example.com/%2F/",
            "https://example.com/?q=1/",
            "https://example.com/#x/",
            "https://user@example.com/",
            "https://exa mple.com/",
            "https://example.com:/",
            "https://example.com:99999x/",
            "https://-example.com/",
            "https://localhost/",
            "sc-domain:",
            "sc-domain:example",
            "sc-domain:exa_mple.com",
            "sc-domain:example.com/",
            "android-app://com.example/",
            "https://example.com/ü/",
            "https://example.com/a b/",
            &long,
        ] {
            assert!(validate_site(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn a_property_is_one_encoded_segment() {
        assert_eq!(
            site_segment("https://www.example.com/").unwrap(),
            "https%3A%2F%2Fwww.example.com%2F"
        );
        assert_eq!(
            site_segment("sc-domain:example.com").unwrap(),
            "sc-domain%3Aexample.com"
        );
        assert_eq!(
            site_segment("https://example.com/blog/").unwrap(),
            "https%3A%2F%2Fexample.com%2Fblog%2F"
        );
        assert!(
            !site_segment("https://example.com/a/b/")
                .unwrap()
                .contains('/')
        );
    }

    #[test]
    fn dates() {
        for good in ["2026-11-01", "2024-02-29", "2000-01-31", "2026-12-31"] {
            assert!(validate_range(good, good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "2026-1-01",
            "2026/11/01",
            "2026-13-01",
            "2026-00-10",
            "2026-02-29",
            "2026-04-31",
            "1999-12-31",
            "2026-11-01T00:00:00Z",
            "２０２６-11-01",
            "+026-11-01",
        ] {
            assert!(validate_range(bad, "2026-12-31").is_err(), "{bad:?}");
            assert!(validate_range("2000-01-01", bad).is_err(), "{bad:?}");
        }
        assert!(
            matches!(validate_range("1999-12-31", "2026-01-01"), Err(ToolError::InvalidInput(m)) if m == "the start date must be a date YYYY-MM-DD from 2000 on, not `1999-12-31`")
        );
        assert!(validate_range("2026-10-01", "2026-10-31").is_ok());
        assert!(validate_range("2026-10-01", "2026-10-01").is_ok());
        assert!(validate_range("2026-11-01", "2026-10-31").is_err());
    }

    #[test]
    fn row_limits() {
        assert_eq!(row_limit(None).unwrap(), 100);
        assert_eq!(row_limit(Some(1)).unwrap(), 1);
        assert_eq!(row_limit(Some(1000)).unwrap(), 1000);
        assert!(row_limit(Some(0)).is_err());
        assert!(row_limit(Some(1001)).is_err());
    }

    #[test]
    fn filters_are_one_and_group() {
        let f = |dimension, operator, e: &str| Filter {
            dimension,
            operator,
            expression: e.to_string(),
        };
        let filters = [
            f(FilterDimension::Query, FilterOperator::Contains, "shoes"),
            f(FilterDimension::Country, FilterOperator::Equals, "fra"),
        ];
        let groups = filter_groups(&filters).unwrap();
        assert_eq!(
            serde_json::to_string(&groups).unwrap(),
            r#"[{"groupType":"and","filters":[{"dimension":"query","operator":"contains","expression":"shoes"},{"dimension":"country","operator":"equals","expression":"fra"}]}]"#
        );
        assert!(filter_groups(&[]).unwrap().is_empty());
        assert!(filter_groups(&[f(FilterDimension::Query, FilterOperator::Equals, "")]).is_err());
        assert!(
            filter_groups(&[f(
                FilterDimension::Country,
                FilterOperator::Equals,
                "france"
            )])
            .is_err()
        );
        assert!(
            filter_groups(&[f(FilterDimension::Country, FilterOperator::Contains, "fr")]).is_ok()
        );
        assert!(
            filter_groups(&[f(FilterDimension::Device, FilterOperator::Equals, "phone")]).is_err()
        );
        assert!(
            filter_groups(&[f(
                FilterDimension::Device,
                FilterOperator::NotEquals,
                "MOBILE"
            )])
            .is_ok()
        );
        assert!(
            filter_groups(&[f(FilterDimension::Page, FilterOperator::Contains, "a\nb")]).is_err()
        );
        assert!(
            filter_groups(&[f(
                FilterDimension::Page,
                FilterOperator::IncludingRegex,
                &"a".repeat(1001)
            )])
            .is_err()
        );
        let many: Vec<Filter> = (0..21)
            .map(|_| f(FilterDimension::Query, FilterOperator::Contains, "x"))
            .collect();
        assert!(filter_groups(&many).is_err());
    }

    #[test]
    fn query_bodies() {
        let body = QueryBody {
            start_date: "2026-10-01",
            end_date: "2026-10-31",
            dimensions: vec!["searchAppearance"],
            search_type: Some(search_type_wire(SearchType::GoogleNews)),
            dimension_filter_groups: Vec::new(),
            data_state: Some(data_state_wire(DataState::All)),
            row_limit: Some(10),
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"startDate":"2026-10-01","endDate":"2026-10-31","dimensions":["searchAppearance"],"type":"googleNews","dataState":"all","rowLimit":10}"#
        );
        let totals = QueryBody {
            dimensions: vec![],
            search_type: None,
            data_state: None,
            row_limit: None,
            ..body
        };
        assert_eq!(
            serde_json::to_string(&totals).unwrap(),
            r#"{"startDate":"2026-10-01","endDate":"2026-10-31"}"#
        );
    }

    #[test]
    fn inspection_urls() {
        let prefix = PropertyKind::UrlPrefix;
        assert!(
            validate_inspection_url(
                "https://www.example.com/",
                prefix,
                "https://www.example.com/shoes/red"
            )
            .is_ok()
        );
        assert!(
            validate_inspection_url(
                "https://www.example.com/blog/",
                prefix,
                "https://www.example.com/shop"
            )
            .is_err()
        );
        assert!(
            validate_inspection_url(
                "https://www.example.com/",
                prefix,
                "http://www.example.com/x"
            )
            .is_err()
        );
        let d = PropertyKind::Domain;
        assert!(
            validate_inspection_url("sc-domain:example.com", d, "https://example.com/").is_ok()
        );
        assert!(
            validate_inspection_url("sc-domain:example.com", d, "http://shop.Example.com/a?b=c")
                .is_ok()
        );
        assert!(
            validate_inspection_url("sc-domain:example.com", d, "https://badexample.com/").is_err()
        );
        assert!(
            validate_inspection_url("sc-domain:example.com", d, "https://example.com@evil.com/")
                .is_err()
        );
        assert!(
            validate_inspection_url("sc-domain:example.com", d, "https://example.com.evil.com/")
                .is_err()
        );
        assert!(validate_inspection_url("sc-domain:example.com", d, "").is_err());
        assert!(
            validate_inspection_url("sc-domain:example.com", d, "https://example.com/a b").is_err()
        );
        assert!(
            validate_inspection_url("sc-domain:example.com", d, "javascript:alert(1)").is_err()
        );
        assert!(validate_language("en-US").is_ok());
        assert!(validate_language("de-CH").is_ok());
        assert!(validate_language("en_US").is_err());
        assert!(validate_language("").is_err());
    }

    #[test]
    fn google_errors() {
        // The connector reads Search Console's error bodies in the SDK's Google format.
        let google_error = |status, body: &[u8]| ERRORS.status_error(status, body).unwrap();
        let body = br#"{"error":{"code":403,"message":"User does not have sufficient permission for site 'https://www.example.com/'.","status":"PERMISSION_DENIED"}}"#;
        match google_error(403, body) {
            ToolError::Upstream(u) => {
                assert_eq!(u.status, 403);
                assert!(
                    u.message
                        .starts_with("PERMISSION_DENIED: User does not have"),
                    "{}",
                    u.message
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(google_error(404, br#"{"error":{"code":404,"message":"nope","status":"NOT_FOUND"}}"#), ToolError::NotFound(m) if m == "NOT_FOUND: nope")
        );
        assert!(
            matches!(google_error(502, b"<html>Bad Gateway</html>"), ToolError::Upstream(u) if u.message == "<html>Bad Gateway</html>")
        );
        assert!(
            matches!(google_error(500, "x".repeat(900).as_bytes()), ToolError::Upstream(u) if u.message.len() == 500)
        );
    }

    #[test]
    fn maps_responses() {
        assert_eq!(
            permission_level(Some("siteOwner")),
            PermissionLevel::SiteOwner
        );
        assert_eq!(
            permission_level(Some("SITE_FULL_USER")),
            PermissionLevel::SiteFullUser
        );
        assert_eq!(
            permission_level(Some("other")),
            PermissionLevel::Unspecified
        );
        assert_eq!(permission_level(None), PermissionLevel::Unspecified);
        let empty: QueryResponse =
            serde_json::from_str(r#"{"responseAggregationType":"byProperty"}"#).unwrap();
        let t = totals_of(empty);
        assert_eq!(
            (
                t.clicks,
                t.impressions,
                t.position,
                t.aggregation.as_deref()
            ),
            (0.0, 0.0, None, Some("byProperty"))
        );
        let r: QueryResponse = serde_json::from_str(r#"{"rows":[{"keys":["a"],"clicks":2,"impressions":4,"ctr":0.5,"position":1.5},{"keys":["b"],"clicks":1,"impressions":4,"ctr":0.25,"position":3}]}"#).unwrap();
        let report = rows_of(r, 2);
        assert!(report.may_have_more);
        assert_eq!(report.rows[1].key, "b");
        let i: InspectResponse = serde_json::from_str(r#"{"inspectionResult":{"indexStatusResult":{"verdict":"PASS"},"richResultsResult":{"verdict":"PASS","detectedItems":[{"richResultType":"FAQ"}]}}}"#).unwrap();
        let i = inspection_of(i.inspection_result);
        assert_eq!(
            (
                i.verdict.as_str(),
                i.rich_result_types.as_slice(),
                i.amp_verdict
            ),
            ("PASS", &["FAQ".to_string()][..], None)
        );
    }
}
