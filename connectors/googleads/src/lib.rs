//! The Google Ads connector: eight read tools over the Google Ads API's REST
//! interface (version v26, `https://googleads.googleapis.com`), and no write
//! tools.
//!
//! Every request goes through the host's HTTP capability, bound to the
//! Google Ads origin; the host adds the OAuth access token. **Operator
//! requirement:** the Google Ads API also needs a developer token on every
//! call, in the `developer-token` header. It is a deployment secret: the
//! operator configures it and the host injects it. This code never sees or
//! sends it. The one header the connector adds besides `accept` is
//! `login-customer-id`, the manager account to act through (an account id,
//! not a secret), from a typed optional argument.
//!
//! Two endpoints only:
//! - `GET /v26/customers:listAccessibleCustomers` (`accounts`);
//! - `POST /v26/customers/{customer-id}/googleAds:search`, a GAQL search
//!   (every other tool). A search only reads; mutations are separate
//!   `:mutate` endpoints that no route declares, so the host refuses them.
//!
//! Every GAQL query is assembled here from fixed field names and typed
//! arguments: customer ids are 10 digits (dashes stripped), dates are
//! checked `YYYY-MM-DD` calendar dates, campaign ids are digits, limits are
//! bounded. No text an agent supplies is spliced into a query. The report
//! tool takes a level, metrics and segments from enums (allow-lists)
//! rather than raw GAQL: raw GAQL would still be read-only, but could read
//! any resource the token reaches.
//!
//! `compare-periods`, `summarize` and `search-term-audit` are computed here
//! from search results (sums, deltas, ratios, spend without conversions).
//! Results come back in proto3 JSON: int64 values as strings, enum values
//! as names, and zero or empty fields left out (read as 0, "" or false).
//!
//! Google's errors (`{"error": {"status": ..., "details": [{"errors":
//! [{"errorCode": {...}, "message": ...}]}]}}`) become `upstream` (or
//! `not-found` for 404) with the status, the error codes and messages: the
//! SDK's `ErrorFormat::Google` reads them.
//!
//! What Google answers was written from its documentation and never
//! observed (the fixtures are UNVERIFIED).

scout_sdk::bindings!();

use bindings::exports::scout::googleads::read_tools::{
    self, AccessibleCustomer, AuditResult, Campaign, CampaignComparison, CampaignStatusFilter,
    ClientAccount, Comparison, DateRange, Dimension, MetricChange, MetricValue, Performance,
    ReportMetric, ReportResource, ReportRow, ReportSegment, ReportTable, SearchTerm, Summary,
    WastedTerm,
};
use scout_sdk::args::{bounded, date, date_range};
use scout_sdk::{ErrorFormat, Http, ToolError, encode_segment};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The Google Ads API version every path names.
const VERSION: &str = "v26";
/// Rows listed when no limit is given.
const DEFAULT_LIMIT: u32 = 50;
/// Most rows any tool asks for.
const MAX_LIMIT: u32 = 1000;
/// Rows read for the computed tools (campaigns of a summary or comparison,
/// search terms of an audit): the costliest ones.
const EXAMINE: u32 = 1000;
/// Deepest manager hierarchy listed.
const MAX_DEPTH: u8 = 10;
/// Campaigns a summary lists.
const TOP_CAMPAIGNS: usize = 5;
/// How Google Ads writes its errors.
const ERRORS: ErrorFormat = ErrorFormat::Google;
/// Micros per currency unit.
const MICROS: f64 = 1_000_000.0;

/// Rounds a computed value to 6 decimals (a micro of money, a ten-thousandth
/// of a percent of a ratio), so results carry no floating-point noise such as
/// `92.94999999999993`.
fn round6(x: f64) -> f64 {
    (x * MICROS).round() / MICROS
}

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// A customer id: 10 digits, with or without the dashes Google Ads shows
/// (`123-456-7890`); returned without dashes.
fn customer_id(what: &str, raw: &str) -> Result<String, ToolError> {
    if raw.trim().is_empty() {
        return Err(ToolError::invalid(format!("{what} is empty")));
    }
    let digits: String = raw.trim().chars().filter(|c| *c != '-').collect();
    if digits.len() != 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ToolError::invalid(format!(
            "{what} `{raw}` is not a Google Ads customer id (10 digits, dashes allowed: 123-456-7890)"
        )));
    }
    Ok(digits)
}

/// An optional manager account id for `login-customer-id`.
fn login_id(raw: Option<&str>) -> Result<Option<String>, ToolError> {
    raw.map(|r| customer_id("login-customer-id", r)).transpose()
}

/// A numeric entity id (campaign id): 1 to 20 digits.
fn entity_id(what: &str, raw: &str) -> Result<String, ToolError> {
    if raw.is_empty() || raw.len() > 20 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ToolError::invalid(format!(
            "{what} `{raw}` is not a Google Ads id (digits only)"
        )));
    }
    Ok(raw.to_string())
}

/// A custom range: two calendar dates `YYYY-MM-DD` (the SDK's check), the
/// start not after the end, both in the years 2000 to 2099.
fn custom_range(start: &str, end: &str) -> Result<(), ToolError> {
    date_range(start, end)?;
    for (what, text) in [("the start date", start), ("the end date", end)] {
        let (year, _, _) = date(what, text)?;
        if !(2000..=2099).contains(&year) {
            return Err(ToolError::invalid(format!(
                "{what} must be a date YYYY-MM-DD from 2000 to 2099, not `{text}`"
            )));
        }
    }
    Ok(())
}

/// The GAQL condition on `segments.date` for a range, and how results name
/// the period.
fn date_condition(range: &DateRange) -> Result<(String, String), ToolError> {
    let named = |n: &str| Ok((format!("segments.date DURING {n}"), n.to_string()));
    match range {
        DateRange::Today => named("TODAY"),
        DateRange::Yesterday => named("YESTERDAY"),
        DateRange::LastSevenDays => named("LAST_7_DAYS"),
        DateRange::LastFourteenDays => named("LAST_14_DAYS"),
        DateRange::LastThirtyDays => named("LAST_30_DAYS"),
        DateRange::ThisMonth => named("THIS_MONTH"),
        DateRange::LastMonth => named("LAST_MONTH"),
        DateRange::Custom(d) => {
            custom_range(&d.start, &d.end)?;
            Ok((
                format!("segments.date BETWEEN '{}' AND '{}'", d.start, d.end),
                format!("{}..{}", d.start, d.end),
            ))
        }
    }
}

fn range_or_default(range: Option<DateRange>) -> DateRange {
    range.unwrap_or(DateRange::LastThirtyDays)
}

/// A limit: default when absent, 1 to `MAX_LIMIT`.
fn limit(value: Option<u32>) -> Result<u32, ToolError> {
    bounded("limit", value, DEFAULT_LIMIT, 1, MAX_LIMIT)
}

// ---------------------------------------------------------------------------
// The GAQL queries (fixed fields; only validated values are formatted in)
// ---------------------------------------------------------------------------

const CAMPAIGN_FIELDS: &str = "campaign.id, campaign.name, campaign.status, campaign.advertising_channel_type, campaign_budget.amount_micros, metrics.impressions, metrics.clicks, metrics.cost_micros, metrics.conversions, metrics.conversions_value";
const SEARCH_TERM_FIELDS: &str = "search_term_view.search_term, search_term_view.status, campaign.id, campaign.name, ad_group.id, ad_group.name, metrics.impressions, metrics.clicks, metrics.cost_micros, metrics.conversions, metrics.conversions_value";
const CLIENT_FIELDS: &str = "customer_client.id, customer_client.descriptive_name, customer_client.level, customer_client.manager, customer_client.currency_code, customer_client.time_zone, customer_client.status, customer_client.test_account, customer_client.hidden";

fn status_condition(status: CampaignStatusFilter) -> &'static str {
    match status {
        CampaignStatusFilter::Enabled => "campaign.status = 'ENABLED'",
        CampaignStatusFilter::Paused => "campaign.status = 'PAUSED'",
        CampaignStatusFilter::AllButRemoved => "campaign.status != 'REMOVED'",
    }
}

fn campaigns_query(date: &str, status: CampaignStatusFilter, limit: u32) -> String {
    format!(
        "SELECT {CAMPAIGN_FIELDS} FROM campaign WHERE {date} AND {} ORDER BY metrics.cost_micros DESC LIMIT {limit}",
        status_condition(status)
    )
}

/// Every campaign's totals over a period (removed ones too: they may have
/// spent in it), the costliest first.
fn period_query(date: &str) -> String {
    format!(
        "SELECT {CAMPAIGN_FIELDS} FROM campaign WHERE {date} ORDER BY metrics.cost_micros DESC LIMIT {EXAMINE}"
    )
}

fn search_terms_query(date: &str, campaign: Option<&str>, limit: u32) -> String {
    let campaign = campaign
        .map(|id| format!(" AND campaign.id = {id}"))
        .unwrap_or_default();
    format!(
        "SELECT {SEARCH_TERM_FIELDS} FROM search_term_view WHERE {date}{campaign} ORDER BY metrics.cost_micros DESC LIMIT {limit}"
    )
}

fn audit_query(date: &str) -> String {
    format!(
        "SELECT {SEARCH_TERM_FIELDS} FROM search_term_view WHERE {date} AND metrics.cost_micros > 0 ORDER BY metrics.cost_micros DESC LIMIT {EXAMINE}"
    )
}

fn hierarchy_query(depth: u8) -> String {
    format!("SELECT {CLIENT_FIELDS} FROM customer_client WHERE customer_client.level <= {depth}")
}

const CUSTOMER_QUERY: &str =
    "SELECT customer.id, customer.descriptive_name, customer.currency_code FROM customer";

/// A report level: the GAQL resource and the attributes each row names.
fn level_fields(level: ReportResource) -> (&'static str, &'static [&'static str]) {
    match level {
        ReportResource::Customer => ("customer", &["customer.id", "customer.descriptive_name"]),
        ReportResource::Campaign => (
            "campaign",
            &["campaign.id", "campaign.name", "campaign.status"],
        ),
        ReportResource::AdGroup => (
            "ad_group",
            &[
                "campaign.id",
                "campaign.name",
                "ad_group.id",
                "ad_group.name",
                "ad_group.status",
            ],
        ),
        ReportResource::Keyword => (
            "keyword_view",
            &[
                "campaign.id",
                "campaign.name",
                "ad_group.id",
                "ad_group.name",
                "ad_group_criterion.criterion_id",
                "ad_group_criterion.keyword.text",
                "ad_group_criterion.keyword.match_type",
                "ad_group_criterion.status",
            ],
        ),
        ReportResource::Ad => (
            "ad_group_ad",
            &[
                "campaign.id",
                "campaign.name",
                "ad_group.id",
                "ad_group.name",
                "ad_group_ad.ad.id",
                "ad_group_ad.ad.type",
                "ad_group_ad.status",
            ],
        ),
    }
}

/// A metric's name in results, its GAQL field, and whether it is money in micros.
fn metric_field(metric: ReportMetric) -> (&'static str, &'static str, bool) {
    match metric {
        ReportMetric::Impressions => ("impressions", "metrics.impressions", false),
        ReportMetric::Clicks => ("clicks", "metrics.clicks", false),
        ReportMetric::Cost => ("cost", "metrics.cost_micros", true),
        ReportMetric::Conversions => ("conversions", "metrics.conversions", false),
        ReportMetric::ConversionsValue => ("conversions-value", "metrics.conversions_value", false),
        ReportMetric::Ctr => ("ctr", "metrics.ctr", false),
        ReportMetric::AverageCpc => ("average-cpc", "metrics.average_cpc", true),
        ReportMetric::CostPerConversion => {
            ("cost-per-conversion", "metrics.cost_per_conversion", true)
        }
        ReportMetric::AllConversions => ("all-conversions", "metrics.all_conversions", false),
        ReportMetric::Interactions => ("interactions", "metrics.interactions", false),
        ReportMetric::ViewThroughConversions => (
            "view-through-conversions",
            "metrics.view_through_conversions",
            false,
        ),
    }
}

fn segment_field(segment: ReportSegment) -> &'static str {
    match segment {
        ReportSegment::Date => "segments.date",
        ReportSegment::Week => "segments.week",
        ReportSegment::Month => "segments.month",
        ReportSegment::DayOfWeek => "segments.day_of_week",
        ReportSegment::Device => "segments.device",
        ReportSegment::AdNetworkType => "segments.ad_network_type",
    }
}

/// A report's plan: the query, the dimension fields and the metrics in order.
#[derive(Debug)]
struct ReportPlan {
    query: String,
    dimensions: Vec<&'static str>,
    metrics: Vec<(&'static str, &'static str, bool)>,
}

fn report_plan(
    level: ReportResource,
    metrics: &[ReportMetric],
    segments: &[ReportSegment],
    date: &str,
    order_by: Option<ReportMetric>,
    limit: u32,
) -> Result<ReportPlan, ToolError> {
    if metrics.is_empty() {
        return Err(ToolError::invalid(
            "metrics is empty; name at least one metric",
        ));
    }
    let mut chosen = Vec::new();
    for m in metrics {
        let field = metric_field(*m);
        if chosen.contains(&field) {
            return Err(ToolError::invalid(format!(
                "metric `{}` is listed twice",
                field.0
            )));
        }
        chosen.push(field);
    }
    let mut segment_fields = Vec::new();
    for s in segments {
        let field = segment_field(*s);
        if segment_fields.contains(&field) {
            return Err(ToolError::invalid(format!(
                "segment `{field}` is listed twice"
            )));
        }
        segment_fields.push(field);
    }
    let order = match order_by {
        Some(m) => {
            let field = metric_field(m);
            if !chosen.contains(&field) {
                return Err(ToolError::invalid(format!(
                    "order-by `{}` is not one of the metrics asked for",
                    field.0
                )));
            }
            format!("{} DESC", field.1)
        }
        None => match segment_fields
            .iter()
            .find(|f| matches!(**f, "segments.date" | "segments.week" | "segments.month"))
        {
            Some(time) => format!("{time} ASC"),
            None => format!("{} DESC", chosen[0].1),
        },
    };
    let (resource, attributes) = level_fields(level);
    let mut dimensions: Vec<&'static str> = attributes.to_vec();
    dimensions.extend(segment_fields);
    let select: Vec<&str> = dimensions
        .iter()
        .copied()
        .chain(chosen.iter().map(|m| m.1))
        .collect();
    let query = format!(
        "SELECT {} FROM {resource} WHERE {date} ORDER BY {order} LIMIT {limit}",
        select.join(", ")
    );
    Ok(ReportPlan {
        query,
        dimensions,
        metrics: chosen,
    })
}

// ---------------------------------------------------------------------------
// Reading search results (proto3 JSON: camelCase, int64 as strings, defaults left out)
// ---------------------------------------------------------------------------

/// `ad_group_criterion.keyword.match_type` -> `adGroupCriterion.keyword.matchType`.
fn json_path(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The value at a dotted camelCase path, if present.
fn at<'a>(row: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(row, |v, key| v.get(key))
}

fn text(row: &Value, path: &str) -> String {
    match at(row, path) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

fn flag(row: &Value, path: &str) -> bool {
    matches!(at(row, path), Some(Value::Bool(true)))
}

fn not_a_number(path: &str) -> ToolError {
    ToolError::BadResponse(format!("{path} in Google's answer is not a number"))
}

/// An int64 field (a string in JSON; a number accepted too); absent is 0.
fn int(row: &Value, path: &str) -> Result<u64, ToolError> {
    match at(row, path) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(s)) => s.parse().map_err(|_| not_a_number(path)),
        Some(Value::Number(n)) => n.as_u64().ok_or_else(|| not_a_number(path)),
        Some(_) => Err(not_a_number(path)),
    }
}

/// A double field (an int64 as a string accepted too); absent is 0.
fn num(row: &Value, path: &str) -> Result<f64, ToolError> {
    match at(row, path) {
        None | Some(Value::Null) => Ok(0.0),
        Some(Value::String(s)) => s.parse().map_err(|_| not_a_number(path)),
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| not_a_number(path)),
        Some(_) => Err(not_a_number(path)),
    }
}

/// An optional int64 field in micros, as money; absent is none.
fn money_opt(row: &Value, path: &str) -> Result<Option<f64>, ToolError> {
    match at(row, path) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => Ok(Some(int(row, path)? as f64 / MICROS)),
    }
}

/// Totals of the base metrics, summed exactly (cost in micros).
#[derive(Default, Clone, Copy, Debug, PartialEq)]
struct Totals {
    impressions: u64,
    clicks: u64,
    cost_micros: u64,
    conversions: f64,
    conversions_value: f64,
}

impl Totals {
    fn of(row: &Value) -> Result<Totals, ToolError> {
        Ok(Totals {
            impressions: int(row, "metrics.impressions")?,
            clicks: int(row, "metrics.clicks")?,
            cost_micros: int(row, "metrics.costMicros")?,
            conversions: num(row, "metrics.conversions")?,
            conversions_value: num(row, "metrics.conversionsValue")?,
        })
    }

    fn add(&mut self, other: &Totals) {
        self.impressions += other.impressions;
        self.clicks += other.clicks;
        self.cost_micros += other.cost_micros;
        self.conversions += other.conversions;
        self.conversions_value += other.conversions_value;
    }

    fn cost(&self) -> f64 {
        self.cost_micros as f64 / MICROS
    }

    fn is_empty(&self) -> bool {
        self.impressions == 0
            && self.clicks == 0
            && self.cost_micros == 0
            && self.conversions == 0.0
    }

    fn metrics(&self) -> Performance {
        let cost = self.cost();
        let ratio = |a: f64, b: f64| if b > 0.0 { Some(round6(a / b)) } else { None };
        Performance {
            impressions: self.impressions,
            clicks: self.clicks,
            cost,
            conversions: self.conversions,
            conversions_value: self.conversions_value,
            ctr: ratio(self.clicks as f64, self.impressions as f64),
            average_cpc: ratio(cost, self.clicks as f64),
            cost_per_conversion: ratio(cost, self.conversions),
            roas: ratio(self.conversions_value, cost),
        }
    }
}

fn campaign_of(row: &Value) -> Result<Campaign, ToolError> {
    Ok(Campaign {
        campaign_id: text(row, "campaign.id"),
        name: text(row, "campaign.name"),
        status: text(row, "campaign.status"),
        channel_type: text(row, "campaign.advertisingChannelType"),
        daily_budget: money_opt(row, "campaignBudget.amountMicros")?,
        metrics: Totals::of(row)?.metrics(),
    })
}

fn search_term_of(row: &Value) -> Result<SearchTerm, ToolError> {
    Ok(SearchTerm {
        search_term: text(row, "searchTermView.searchTerm"),
        status: text(row, "searchTermView.status"),
        campaign_id: text(row, "campaign.id"),
        campaign_name: text(row, "campaign.name"),
        ad_group_id: text(row, "adGroup.id"),
        ad_group_name: text(row, "adGroup.name"),
        metrics: Totals::of(row)?.metrics(),
    })
}

fn client_of(row: &Value) -> Result<ClientAccount, ToolError> {
    let level = int(row, "customerClient.level")?;
    Ok(ClientAccount {
        customer_id: text(row, "customerClient.id"),
        descriptive_name: text(row, "customerClient.descriptiveName"),
        level: u32::try_from(level).map_err(|_| not_a_number("customerClient.level"))?,
        manager: flag(row, "customerClient.manager"),
        currency_code: text(row, "customerClient.currencyCode"),
        time_zone: text(row, "customerClient.timeZone"),
        status: text(row, "customerClient.status"),
        test_account: flag(row, "customerClient.testAccount"),
        hidden: flag(row, "customerClient.hidden"),
    })
}

fn report_row(plan: &ReportPlan, row: &Value) -> Result<ReportRow, ToolError> {
    let dimensions = plan
        .dimensions
        .iter()
        .map(|f| Dimension {
            field: f.to_string(),
            value: text(row, &json_path(f)),
        })
        .collect();
    let mut metrics = Vec::with_capacity(plan.metrics.len());
    for (name, field, money) in &plan.metrics {
        let path = json_path(field);
        let value = if *money {
            num(row, &path)? / MICROS
        } else {
            num(row, &path)?
        };
        metrics.push(MetricValue {
            metric: name.to_string(),
            value: round6(value),
        });
    }
    Ok(ReportRow {
        dimensions,
        metrics,
    })
}

/// One metric in two periods.
fn change(metric: &str, current: f64, previous: f64) -> MetricChange {
    let delta = current - previous;
    MetricChange {
        metric: metric.to_string(),
        current,
        previous,
        change: round6(delta),
        change_fraction: if previous != 0.0 {
            Some(round6(delta / previous))
        } else {
            None
        },
    }
}

/// The changes of every metric; a ratio only when both periods define it.
fn changes(current: &Totals, previous: &Totals) -> Vec<MetricChange> {
    let (c, p) = (current.metrics(), previous.metrics());
    let mut out = vec![
        change("impressions", c.impressions as f64, p.impressions as f64),
        change("clicks", c.clicks as f64, p.clicks as f64),
        change("cost", c.cost, p.cost),
        change("conversions", c.conversions, p.conversions),
        change(
            "conversions-value",
            c.conversions_value,
            p.conversions_value,
        ),
    ];
    let ratios = [
        ("ctr", c.ctr, p.ctr),
        ("average-cpc", c.average_cpc, p.average_cpc),
        (
            "cost-per-conversion",
            c.cost_per_conversion,
            p.cost_per_conversion,
        ),
        ("roas", c.roas, p.roas),
    ];
    for (name, cur, prev) in ratios {
        if let (Some(cur), Some(prev)) = (cur, prev) {
            out.push(change(name, cur, prev));
        }
    }
    out
}

/// Per-campaign totals of a period, by campaign id, with the campaign's name.
fn by_campaign(rows: &[Value]) -> Result<BTreeMap<String, (String, Totals)>, ToolError> {
    let mut out: BTreeMap<String, (String, Totals)> = BTreeMap::new();
    for row in rows {
        let totals = Totals::of(row)?;
        let entry = out
            .entry(text(row, "campaign.id"))
            .or_insert_with(|| (text(row, "campaign.name"), Totals::default()));
        entry.1.add(&totals);
    }
    Ok(out)
}

fn compare(
    current_period: String,
    previous_period: String,
    current: &[Value],
    previous: &[Value],
) -> Result<Comparison, ToolError> {
    let (cur, prev) = (by_campaign(current)?, by_campaign(previous)?);
    let mut ids: Vec<&String> = cur.keys().chain(prev.keys()).collect();
    ids.sort();
    ids.dedup();
    let (mut total_cur, mut total_prev) = (Totals::default(), Totals::default());
    let mut campaigns = Vec::new();
    for id in ids {
        let c = cur.get(id).map(|e| e.1).unwrap_or_default();
        let p = prev.get(id).map(|e| e.1).unwrap_or_default();
        total_cur.add(&c);
        total_prev.add(&p);
        if c.is_empty() && p.is_empty() {
            continue;
        }
        let name = cur
            .get(id)
            .or_else(|| prev.get(id))
            .map(|e| e.0.clone())
            .unwrap_or_default();
        campaigns.push((
            c.cost_micros,
            CampaignComparison {
                campaign_id: id.clone(),
                name,
                changes: changes(&c, &p),
            },
        ));
    }
    // Most current cost first; ties by id (already in id order, and the sort is stable).
    campaigns.sort_by_key(|c| std::cmp::Reverse(c.0));
    Ok(Comparison {
        current_period,
        previous_period,
        totals: changes(&total_cur, &total_prev),
        campaigns: campaigns.into_iter().map(|(_, c)| c).collect(),
    })
}

fn summarize_rows(customer: &Value, period: String, rows: &[Value]) -> Result<Summary, ToolError> {
    let mut totals = Totals::default();
    let (mut with_cost, mut without_conversions, mut cost_without) = (0u32, 0u32, 0u64);
    let mut campaigns = Vec::new();
    for row in rows {
        let t = Totals::of(row)?;
        totals.add(&t);
        if t.cost_micros > 0 {
            with_cost += 1;
            if t.conversions == 0.0 {
                without_conversions += 1;
                cost_without += t.cost_micros;
            }
        }
        campaigns.push((t.cost_micros, campaign_of(row)?));
    }
    campaigns.sort_by_key(|c| std::cmp::Reverse(c.0));
    Ok(Summary {
        customer_id: text(customer, "customer.id"),
        descriptive_name: text(customer, "customer.descriptiveName"),
        currency_code: text(customer, "customer.currencyCode"),
        period,
        totals: totals.metrics(),
        campaigns_with_cost: with_cost,
        campaigns_without_conversions: without_conversions,
        cost_without_conversions: cost_without as f64 / MICROS,
        top_campaigns: campaigns
            .into_iter()
            .filter(|(cost, _)| *cost > 0)
            .take(TOP_CAMPAIGNS)
            .map(|(_, c)| c)
            .collect(),
    })
}

fn audit_rows(
    period: String,
    rows: &[Value],
    min_cost_micros: u64,
    limit: u32,
) -> Result<AuditResult, ToolError> {
    let (mut total, mut wasted) = (0u64, 0u64);
    let mut terms = Vec::new();
    for row in rows {
        let t = Totals::of(row)?;
        total += t.cost_micros;
        if t.conversions == 0.0 && t.cost_micros > 0 {
            wasted += t.cost_micros;
            if t.cost_micros >= min_cost_micros {
                terms.push((
                    t.cost_micros,
                    WastedTerm {
                        search_term: text(row, "searchTermView.searchTerm"),
                        status: text(row, "searchTermView.status"),
                        campaign_id: text(row, "campaign.id"),
                        campaign_name: text(row, "campaign.name"),
                        ad_group_id: text(row, "adGroup.id"),
                        ad_group_name: text(row, "adGroup.name"),
                        impressions: t.impressions,
                        clicks: t.clicks,
                        cost: t.cost(),
                    },
                ));
            }
        }
    }
    terms.sort_by_key(|t| std::cmp::Reverse(t.0));
    Ok(AuditResult {
        period,
        terms_examined: rows.len() as u32,
        total_cost: total as f64 / MICROS,
        wasted_cost: wasted as f64 / MICROS,
        wasted_fraction: if total > 0 {
            Some(round6(wasted as f64 / total as f64))
        } else {
            None
        },
        wasted_terms: terms
            .into_iter()
            .take(limit as usize)
            .map(|(_, t)| t)
            .collect(),
    })
}

/// A minimum cost in currency units (0 to a billion), as micros.
fn min_cost_micros(min_cost: Option<f64>) -> Result<u64, ToolError> {
    if min_cost.is_some_and(|c| !c.is_finite()) {
        return Err(ToolError::invalid("min-cost must be a finite number"));
    }
    let cost = bounded("min-cost", min_cost, 0.0, 0.0, 1e9)?;
    Ok((cost * MICROS).round() as u64)
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct SearchResponse {
    #[serde(default)]
    results: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccessibleList {
    #[serde(default)]
    resource_names: Vec<String>,
}

/// The headers every request carries: `accept`, and `login-customer-id`
/// (the manager account to act through) when given. Never `developer-token`
/// or `authorization`: the host injects those.
fn request_headers(login: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![("accept", "application/json".to_string())];
    if let Some(id) = login {
        headers.push(("login-customer-id", id.to_string()));
    }
    headers
}

/// The client for the Google Ads origin, acting through `login` when given.
fn google(login: Option<&str>) -> Result<Http, ToolError> {
    Ok(request_headers(login).iter().fold(
        Http::connect()?.with_errors(ERRORS),
        |http, (name, value)| http.with_header(name, value),
    ))
}

/// One customer and the client to query it with, both validated.
struct Account {
    id: String,
    http: Http,
}

fn account(customer: &str, login: Option<&str>) -> Result<Account, ToolError> {
    let id = customer_id("customer-id", customer)?;
    let login = login_id(login)?;
    Ok(Account {
        id,
        http: google(login.as_deref())?,
    })
}

impl Account {
    /// Runs one GAQL search; its rows (one page: every query has a LIMIT
    /// of at most 1,000 rows, below the API's page size).
    fn search(&self, query: &str) -> Result<Vec<Value>, ToolError> {
        let path = format!(
            "/{VERSION}/customers/{}/googleAds:search",
            encode_segment(&self.id)
        );
        let page: SearchResponse = self
            .http
            .post(&path, &serde_json::json!({ "query": query }))
            .map_err(|e| match e {
                ToolError::NotFound(m) => ToolError::NotFound(format!("customer {}: {m}", self.id)),
                other => other,
            })?;
        Ok(page.results)
    }
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct GoogleAds;

impl read_tools::Guest for GoogleAds {
    fn accounts() -> Result<Vec<AccessibleCustomer>, ToolError> {
        let path = format!("/{VERSION}/customers:listAccessibleCustomers");
        let list: AccessibleList = google(None)?.get(&path, &[])?;
        Ok(list
            .resource_names
            .into_iter()
            .map(|name| AccessibleCustomer {
                customer_id: name.strip_prefix("customers/").unwrap_or(&name).to_string(),
                resource_name: name,
            })
            .collect())
    }

    fn report(
        customer_id: String,
        login_customer_id: Option<String>,
        level: ReportResource,
        metrics: Vec<ReportMetric>,
        segments: Option<Vec<ReportSegment>>,
        date_range: Option<DateRange>,
        order_by: Option<ReportMetric>,
        limit: Option<u32>,
    ) -> Result<ReportTable, ToolError> {
        let (date, _) = date_condition(&range_or_default(date_range))?;
        let plan = report_plan(
            level,
            &metrics,
            &segments.unwrap_or_default(),
            &date,
            order_by,
            self::limit(limit)?,
        )?;
        let account = account(&customer_id, login_customer_id.as_deref())?;
        let rows = account.search(&plan.query)?;
        let rows = rows
            .iter()
            .map(|r| report_row(&plan, r))
            .collect::<Result<_, _>>()?;
        Ok(ReportTable {
            query: plan.query,
            rows,
        })
    }

    fn campaigns(
        customer_id: String,
        login_customer_id: Option<String>,
        date_range: Option<DateRange>,
        status: Option<CampaignStatusFilter>,
        limit: Option<u32>,
    ) -> Result<Vec<Campaign>, ToolError> {
        let (date, _) = date_condition(&range_or_default(date_range))?;
        let query = campaigns_query(
            &date,
            status.unwrap_or(CampaignStatusFilter::AllButRemoved),
            self::limit(limit)?,
        );
        let account = account(&customer_id, login_customer_id.as_deref())?;
        account.search(&query)?.iter().map(campaign_of).collect()
    }

    fn search_terms(
        customer_id: String,
        login_customer_id: Option<String>,
        date_range: Option<DateRange>,
        campaign_id: Option<String>,
        limit: Option<u32>,
    ) -> Result<Vec<SearchTerm>, ToolError> {
        let (date, _) = date_condition(&range_or_default(date_range))?;
        let campaign = campaign_id
            .as_deref()
            .map(|c| entity_id("campaign-id", c))
            .transpose()?;
        let query = search_terms_query(&date, campaign.as_deref(), self::limit(limit)?);
        let account = account(&customer_id, login_customer_id.as_deref())?;
        account.search(&query)?.iter().map(search_term_of).collect()
    }

    fn account_hierarchy(
        customer_id: String,
        login_customer_id: Option<String>,
        depth: Option<u8>,
    ) -> Result<Vec<ClientAccount>, ToolError> {
        let depth = bounded("depth", depth, 1, 0, MAX_DEPTH)?;
        let account = account(&customer_id, login_customer_id.as_deref())?;
        let mut clients = account
            .search(&hierarchy_query(depth))?
            .iter()
            .map(client_of)
            .collect::<Result<Vec<_>, _>>()?;
        clients.sort_by_key(|c| c.level);
        Ok(clients)
    }

    fn compare_periods(
        customer_id: String,
        login_customer_id: Option<String>,
        current: DateRange,
        previous: DateRange,
    ) -> Result<Comparison, ToolError> {
        let (current_date, current_label) = date_condition(&current)?;
        let (previous_date, previous_label) = date_condition(&previous)?;
        let account = account(&customer_id, login_customer_id.as_deref())?;
        let current_rows = account.search(&period_query(&current_date))?;
        let previous_rows = account.search(&period_query(&previous_date))?;
        compare(current_label, previous_label, &current_rows, &previous_rows)
    }

    fn summarize(
        customer_id: String,
        login_customer_id: Option<String>,
        date_range: Option<DateRange>,
    ) -> Result<Summary, ToolError> {
        let (date, label) = date_condition(&range_or_default(date_range))?;
        let account = account(&customer_id, login_customer_id.as_deref())?;
        let customer = account
            .search(CUSTOMER_QUERY)?
            .into_iter()
            .next()
            .unwrap_or(Value::Null);
        let rows = account.search(&period_query(&date))?;
        summarize_rows(&customer, label, &rows)
    }

    fn search_term_audit(
        customer_id: String,
        login_customer_id: Option<String>,
        date_range: Option<DateRange>,
        min_cost: Option<f64>,
        limit: Option<u32>,
    ) -> Result<AuditResult, ToolError> {
        let (date, label) = date_condition(&range_or_default(date_range))?;
        let min = min_cost_micros(min_cost)?;
        let limit = self::limit(limit)?;
        let account = account(&customer_id, login_customer_id.as_deref())?;
        let rows = account.search(&audit_query(&date))?;
        audit_rows(label, &rows, min, limit)
    }
}

scout_sdk::export!(GoogleAds);

#[cfg(test)]
mod tests {
    use super::*;
    use bindings::exports::scout::googleads::read_tools::CustomDates;
    use serde_json::json;

    fn custom(start: &str, end: &str) -> DateRange {
        DateRange::Custom(CustomDates {
            start: start.into(),
            end: end.into(),
        })
    }

    fn invalid(e: ToolError) -> String {
        match e {
            ToolError::InvalidInput(m) => m,
            other => panic!("not invalid-input: {other:?}"),
        }
    }

    #[test]
    fn customer_ids_are_ten_digits_with_dashes_stripped() {
        assert_eq!(
            customer_id("customer-id", "123-456-7890").unwrap(),
            "1234567890"
        );
        assert_eq!(
            customer_id("customer-id", "1234567890").unwrap(),
            "1234567890"
        );
        assert_eq!(
            customer_id("customer-id", " 1234567890 ").unwrap(),
            "1234567890"
        );
        for bad in [
            "",
            "123456789",
            "12345678901",
            "123-456-789a",
            "../1234567",
            "1234567890/googleAds:mutate",
            "١٢٣٤٥٦٧٨٩٠",
        ] {
            assert!(customer_id("customer-id", bad).is_err(), "{bad}");
        }
        assert_eq!(login_id(None).unwrap(), None);
        assert_eq!(
            login_id(Some("987-654-3210")).unwrap().as_deref(),
            Some("9876543210")
        );
    }

    #[test]
    fn dates_are_calendar_dates_from_2000_to_2099() {
        for good in ["2026-11-01", "2024-02-29", "2000-01-31", "2099-12-31"] {
            custom_range(good, good).unwrap();
        }
        assert_eq!(
            invalid(custom_range("1999-12-31", "2026-01-01").unwrap_err()),
            "the start date must be a date YYYY-MM-DD from 2000 to 2099, not `1999-12-31`"
        );
        for bad in [
            "2026-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-1-01",
            "26-11-01",
            "2026/11/01",
            "2026-11-01' OR '1'='1",
            "1999-12-31",
            "2026-04-31",
            "+026-11-01",
            "2100-01-01",
        ] {
            assert!(custom_range(bad, "2026-12-31").is_err(), "{bad}");
            assert!(custom_range("2026-01-01", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn date_ranges_become_gaql_conditions() {
        assert_eq!(
            date_condition(&DateRange::LastThirtyDays).unwrap(),
            (
                "segments.date DURING LAST_30_DAYS".into(),
                "LAST_30_DAYS".into()
            )
        );
        assert_eq!(
            date_condition(&DateRange::LastSevenDays).unwrap().0,
            "segments.date DURING LAST_7_DAYS"
        );
        assert_eq!(
            date_condition(&custom("2026-11-01", "2026-11-07")).unwrap(),
            (
                "segments.date BETWEEN '2026-11-01' AND '2026-11-07'".into(),
                "2026-11-01..2026-11-07".into()
            )
        );
        assert_eq!(
            invalid(date_condition(&custom("2026-11-07", "2026-11-01")).unwrap_err()),
            "the start date 2026-11-07 is after the end date 2026-11-01"
        );
        assert!(date_condition(&custom("2026-11-01'", "2026-11-07")).is_err());
    }

    #[test]
    fn limits_are_bounded() {
        assert_eq!(limit(None).unwrap(), 50);
        assert_eq!(limit(Some(1000)).unwrap(), 1000);
        assert!(limit(Some(0)).is_err());
        assert_eq!(
            invalid(limit(Some(1001)).unwrap_err()),
            "limit must be between 1 and 1000, not 1001"
        );
        assert!(entity_id("campaign-id", "123 OR 1=1").is_err());
        assert!(entity_id("campaign-id", "").is_err());
        assert_eq!(
            entity_id("campaign-id", "17436329841").unwrap(),
            "17436329841"
        );
    }

    #[test]
    fn report_plans_come_from_allow_lists() {
        let plan = report_plan(
            ReportResource::Campaign,
            &[ReportMetric::Clicks, ReportMetric::Cost],
            &[ReportSegment::Date],
            "segments.date DURING LAST_7_DAYS",
            None,
            100,
        )
        .unwrap();
        assert_eq!(
            plan.query,
            "SELECT campaign.id, campaign.name, campaign.status, segments.date, metrics.clicks, metrics.cost_micros FROM campaign WHERE segments.date DURING LAST_7_DAYS ORDER BY segments.date ASC LIMIT 100"
        );
        let plan = report_plan(
            ReportResource::Keyword,
            &[ReportMetric::Impressions, ReportMetric::Ctr],
            &[],
            "d",
            Some(ReportMetric::Ctr),
            5,
        )
        .unwrap();
        assert!(
            plan.query
                .ends_with("FROM keyword_view WHERE d ORDER BY metrics.ctr DESC LIMIT 5"),
            "{}",
            plan.query
        );
        assert!(report_plan(ReportResource::Ad, &[], &[], "d", None, 5).is_err());
        assert!(
            report_plan(
                ReportResource::Ad,
                &[ReportMetric::Cost, ReportMetric::Cost],
                &[],
                "d",
                None,
                5
            )
            .is_err()
        );
        assert!(
            report_plan(
                ReportResource::Ad,
                &[ReportMetric::Cost],
                &[ReportSegment::Device, ReportSegment::Device],
                "d",
                None,
                5
            )
            .is_err()
        );
        assert_eq!(
            invalid(
                report_plan(
                    ReportResource::Ad,
                    &[ReportMetric::Cost],
                    &[],
                    "d",
                    Some(ReportMetric::Clicks),
                    5
                )
                .unwrap_err()
            ),
            "order-by `clicks` is not one of the metrics asked for"
        );
    }

    #[test]
    fn json_paths_are_camel_case() {
        assert_eq!(
            json_path("ad_group_criterion.keyword.match_type"),
            "adGroupCriterion.keyword.matchType"
        );
        assert_eq!(json_path("metrics.cost_micros"), "metrics.costMicros");
        assert_eq!(json_path("segments.date"), "segments.date");
    }

    #[test]
    fn rows_read_proto3_json() {
        let row = json!({"campaign": {"id": "11", "name": "Brand", "status": "ENABLED", "advertisingChannelType": "SEARCH"},
            "campaignBudget": {"amountMicros": "50000000"},
            "metrics": {"impressions": "1000", "clicks": "50", "costMicros": "25000000", "conversions": 5.0, "conversionsValue": 250.0}});
        let c = campaign_of(&row).unwrap();
        assert_eq!(c.daily_budget, Some(50.0));
        assert_eq!(c.metrics.cost, 25.0);
        assert_eq!(c.metrics.ctr, Some(0.05));
        assert_eq!(c.metrics.average_cpc, Some(0.5));
        assert_eq!(c.metrics.cost_per_conversion, Some(5.0));
        assert_eq!(c.metrics.roas, Some(10.0));
        // Zero metrics are left out in proto3 JSON.
        let empty = campaign_of(&json!({"campaign": {"id": "12"}})).unwrap();
        assert_eq!(
            (
                empty.metrics.impressions,
                empty.metrics.cost,
                empty.metrics.ctr,
                empty.daily_budget
            ),
            (0, 0.0, None, None)
        );
        assert!(matches!(
            Totals::of(&json!({"metrics": {"clicks": "many"}})),
            Err(ToolError::BadResponse(_))
        ));
    }

    #[test]
    fn comparisons_and_audits_are_computed() {
        let row = |id: &str, cost: &str, conv: f64| json!({"campaign": {"id": id, "name": format!("C{id}")}, "metrics": {"impressions": "100", "clicks": "10", "costMicros": cost, "conversions": conv}});
        let cmp = compare(
            "A".into(),
            "B".into(),
            &[row("1", "20000000", 2.0), row("2", "5000000", 0.0)],
            &[row("1", "10000000", 1.0)],
        )
        .unwrap();
        let cost = cmp.totals.iter().find(|m| m.metric == "cost").unwrap();
        assert_eq!(
            (
                cost.current,
                cost.previous,
                cost.change,
                cost.change_fraction
            ),
            (25.0, 10.0, 15.0, Some(1.5))
        );
        assert_eq!(
            cmp.campaigns
                .iter()
                .map(|c| c.campaign_id.as_str())
                .collect::<Vec<_>>(),
            ["1", "2"]
        );
        let c2 = &cmp.campaigns[1].changes;
        assert_eq!(
            c2.iter()
                .find(|m| m.metric == "cost")
                .unwrap()
                .change_fraction,
            None
        );
        assert!(
            c2.iter().all(|m| m.metric != "cost-per-conversion"),
            "a ratio undefined in a period is left out"
        );

        let term = |t: &str, cost: &str, conv: f64| json!({"searchTermView": {"searchTerm": t, "status": "NONE"}, "metrics": {"costMicros": cost, "conversions": conv}});
        let audit = audit_rows(
            "P".into(),
            &[
                term("a", "3000000", 0.0),
                term("b", "1000000", 1.0),
                term("c", "500000", 0.0),
            ],
            1_000_000,
            10,
        )
        .unwrap();
        assert_eq!(
            (audit.total_cost, audit.wasted_cost, audit.terms_examined),
            (4.5, 3.5, 3)
        );
        assert_eq!(
            audit
                .wasted_terms
                .iter()
                .map(|t| t.search_term.as_str())
                .collect::<Vec<_>>(),
            ["a"]
        );
        assert_eq!(min_cost_micros(Some(1.25)).unwrap(), 1_250_000);
        assert!(min_cost_micros(Some(-1.0)).is_err());
        assert!(min_cost_micros(Some(f64::NAN)).is_err());
        assert!(min_cost_micros(Some(f64::INFINITY)).is_err());
        assert!(min_cost_micros(Some(2e9)).is_err());
        assert_eq!(min_cost_micros(None).unwrap(), 0);
    }

    #[test]
    fn only_the_manager_id_header_is_added() {
        assert_eq!(
            request_headers(None),
            [("accept", "application/json".to_string())]
        );
        let login = login_id(Some("987-654-3210")).unwrap();
        assert_eq!(
            request_headers(login.as_deref()),
            [
                ("accept", "application/json".to_string()),
                ("login-customer-id", "9876543210".to_string())
            ]
        );
    }

    #[test]
    fn google_errors_name_status_codes_and_messages() {
        // The connector reads Google Ads' error bodies in the SDK's Google format.
        let body = json!({"error": {"code": 403, "message": "The caller does not have permission", "status": "PERMISSION_DENIED",
            "details": [{"@type": "type.googleapis.com/google.ads.googleads.v26.errors.GoogleAdsFailure",
                "errors": [{"errorCode": {"authorizationError": "USER_PERMISSION_DENIED"}, "message": "User doesn't have permission to access customer."}],
                "requestId": "abc"}]}});
        let bytes = serde_json::to_vec(&body).unwrap();
        assert_eq!(
            ERRORS.message(&bytes),
            "PERMISSION_DENIED: authorizationError.USER_PERMISSION_DENIED: User doesn't have permission to access customer."
        );
        let plain = serde_json::to_vec(&json!({"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}})).unwrap();
        assert_eq!(
            ERRORS.message(&plain),
            "UNAUTHENTICATED: Request had invalid authentication credentials."
        );
        assert_eq!(ERRORS.message(b"  Bad Gateway  "), "Bad Gateway");
        assert!(matches!(
            ERRORS.status_error(404, b"{}"),
            Some(ToolError::NotFound(_))
        ));
        assert!(matches!(
            ERRORS.status_error(429, b"{}"),
            Some(ToolError::Upstream(scout_sdk::UpstreamError {
                status: 429,
                ..
            }))
        ));
        assert!(ERRORS.status_error(200, b"{}").is_none());
    }
}
