//! DataForSEO's Keywords Data API: Google Ads search volume (one task of up
//! to 1000 keywords, billed per task) and DataForSEO Trends explore (the
//! relative popularity of up to 5 keywords over time).

use crate::api::{ApiMonthly, KeywordsTask, first, monthly, score, task_body};
use crate::billing::{SEARCH_VOLUME_TASK, TRENDS_TASK, billed};
use crate::bindings::exports::scout::dataforseo::read_tools::{
    TimeRange, TrendGraph, TrendPoint, TrendsType, Volume,
};
use crate::input::{MAX_KEYWORD, keyword_list, location, place, trends_keywords};
use scout_sdk::ToolError;
use serde::{Deserialize, Serialize};

const SEARCH_VOLUME: &str = "/v3/keywords_data/google_ads/search_volume/live";
const TRENDS_EXPLORE: &str = "/v3/keywords_data/dataforseo_trends/explore/live";

/// Keywords of `search-volume`.
const MAX_VOLUME_KEYWORDS: usize = 1000;

// ---------------------------------------------------------------------------
// Google Ads search volume
// ---------------------------------------------------------------------------

pub fn search_volume(
    keywords: Vec<String>,
    location_code: Option<u32>,
    language_code: Option<String>,
) -> Result<Vec<Volume>, ToolError> {
    let keywords = keyword_list(keywords, MAX_VOLUME_KEYWORDS, 1, MAX_KEYWORD)?;
    let (location_code, language_code) = place(location_code, language_code)?;
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

// ---------------------------------------------------------------------------
// DataForSEO Trends
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct TrendsTask<'a> {
    keywords: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    location_code: Option<u32>,
    #[serde(rename = "type")]
    kind: &'static str,
    time_range: &'static str,
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

pub fn trends(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trends_task_is_a_one_element_array() {
        let kw = vec!["running shoes".to_string()];
        let body = task_body(&TrendsTask {
            keywords: &kw,
            location_code: None,
            kind: "web",
            time_range: "past_12_months",
        })
        .unwrap();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
            serde_json::json!([{"keywords": ["running shoes"], "type": "web", "time_range": "past_12_months"}])
        );
    }

    #[test]
    fn popularity_is_a_whole_number() {
        assert_eq!(popularity(Some(61.4)), Some(61));
        assert_eq!(popularity(None), None);
    }
}
