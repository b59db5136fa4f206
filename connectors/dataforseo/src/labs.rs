//! DataForSEO Labs (Google): keyword ideas, keyword overview, ranked
//! keywords, competitors, bulk keyword difficulty, search intent and
//! historical rank overview. Each tool checks its arguments, builds its one
//! task and sends it billed; the answer shapes here are Labs' own (the
//! ranked keywords' are read by the joint tool too).

use crate::api::{ApiItems, KeywordsTask, TargetTask, items, monthly, score, task_body};
use crate::billing::{RANK_HISTORY_ITEMS, billed, intent_estimate, labs_estimate};
use crate::bindings::exports::scout::dataforseo::read_tools::{
    Competitor, Difficulty, IntentProbability, KeywordDetail, KeywordIntent, KeywordMetrics,
    MonthlyVolume, RankMonth, RankedKeyword, RankedKeywordList,
};
use crate::input::{MAX_KEYWORD, domain, keyword_list, language, place, ranked_target};
use crate::serp::ApiSerpItem;
use scout_sdk::ToolError;
use scout_sdk::args::bounded;
use serde::{Deserialize, Serialize};

const KEYWORD_IDEAS: &str = "/v3/dataforseo_labs/google/keyword_ideas/live";
const KEYWORD_OVERVIEW: &str = "/v3/dataforseo_labs/google/keyword_overview/live";
pub const RANKED_KEYWORDS: &str = "/v3/dataforseo_labs/google/ranked_keywords/live";
const COMPETITORS: &str = "/v3/dataforseo_labs/google/competitors_domain/live";
const KEYWORD_DIFFICULTY: &str = "/v3/dataforseo_labs/google/bulk_keyword_difficulty/live";
const SEARCH_INTENT: &str = "/v3/dataforseo_labs/google/search_intent/live";
const RANK_HISTORY: &str = "/v3/dataforseo_labs/google/historical_rank_overview/live";

/// Seed keywords of `keyword-ideas`.
const MAX_IDEA_SEEDS: usize = 200;
/// Keywords of `keyword-overview`.
const MAX_OVERVIEW_KEYWORDS: usize = 700;
/// Keywords of `keyword-difficulty` and `search-intent`.
const MAX_BULK_KEYWORDS: usize = 1000;
/// Shortest keyword the search intent endpoint accepts (characters).
const MIN_INTENT_KEYWORD: usize = 3;
/// Results of `keyword-ideas` and `ranked-keywords`: default and most.
const DEFAULT_LIMIT: u16 = 100;
const MAX_LIMIT: u16 = 1000;
/// Competitors: default and most.
const DEFAULT_COMPETITORS: u8 = 20;
const MAX_COMPETITORS: u8 = 100;

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

pub fn keyword_ideas(
    keywords: Vec<String>,
    location_code: Option<u32>,
    language_code: Option<String>,
    limit: Option<u16>,
) -> Result<Vec<KeywordMetrics>, ToolError> {
    let keywords = keyword_list(keywords, MAX_IDEA_SEEDS, 1, MAX_KEYWORD)?;
    let (location_code, language_code) = place(location_code, language_code)?;
    let limit = bounded("limit", limit, DEFAULT_LIMIT, 1, MAX_LIMIT)?;
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

pub fn keyword_overview(
    keywords: Vec<String>,
    location_code: Option<u32>,
    language_code: Option<String>,
) -> Result<Vec<KeywordDetail>, ToolError> {
    let keywords = keyword_list(keywords, MAX_OVERVIEW_KEYWORDS, 1, MAX_KEYWORD)?;
    let (location_code, language_code) = place(location_code, language_code)?;
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

pub fn ranked_keywords(
    target: String,
    location_code: Option<u32>,
    language_code: Option<String>,
    limit: Option<u16>,
) -> Result<RankedKeywordList, ToolError> {
    let target = ranked_target(&target)?;
    let (location_code, language_code) = place(location_code, language_code)?;
    let limit = bounded("limit", limit, DEFAULT_LIMIT, 1, MAX_LIMIT)?;
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

pub fn competitors(
    target: String,
    location_code: Option<u32>,
    language_code: Option<String>,
    limit: Option<u8>,
) -> Result<Vec<Competitor>, ToolError> {
    let target = domain(&target)?;
    let (location_code, language_code) = place(location_code, language_code)?;
    let limit = bounded("limit", limit, DEFAULT_COMPETITORS, 1, MAX_COMPETITORS)?;
    let task = TargetTask {
        target: &target,
        location_code,
        language_code: &language_code,
        limit: Some(limit.into()),
        item_types: None,
    };
    let results: Vec<ApiItems<ApiCompetitor>> =
        billed(COMPETITORS, task_body(&task)?, labs_estimate(limit as u64))?;
    Ok(items(results).into_iter().map(Competitor::from).collect())
}

pub fn keyword_difficulty(
    keywords: Vec<String>,
    location_code: Option<u32>,
    language_code: Option<String>,
) -> Result<Vec<Difficulty>, ToolError> {
    let keywords = keyword_list(keywords, MAX_BULK_KEYWORDS, 1, MAX_KEYWORD)?;
    let (location_code, language_code) = place(location_code, language_code)?;
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

#[derive(Serialize)]
struct IntentTask<'a> {
    keywords: &'a [String],
    language_code: &'a str,
}

pub fn search_intent(
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

pub fn rank_history(
    target: String,
    location_code: Option<u32>,
    language_code: Option<String>,
) -> Result<Vec<RankMonth>, ToolError> {
    let target = domain(&target)?;
    let (location_code, language_code) = place(location_code, language_code)?;
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

// ---------------------------------------------------------------------------
// Answer shapes
// ---------------------------------------------------------------------------

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
    monthly_searches: Option<Vec<crate::api::ApiMonthly>>,
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
pub struct ApiRankedResult {
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

pub fn ranked_keywords_of(results: Vec<ApiRankedResult>, target: &str) -> RankedKeywordList {
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

#[derive(Deserialize)]
pub struct ApiDifficulty {
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
