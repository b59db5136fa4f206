//! The SERP API: Google's organic results for one keyword, read live and
//! billed by the page of 10 results. Its result item is also the
//! `serp_item` of a DataForSEO Labs ranked keyword.

use crate::api::{first, task_body};
use crate::billing::{billed, serp_estimate};
use crate::bindings::exports::scout::dataforseo::read_tools::{Device, OrganicResult, Serp};
use crate::input::{MAX_KEYWORD, keyword, place};
use scout_sdk::ToolError;
use scout_sdk::args::bounded;
use serde::{Deserialize, Serialize};

const SERP_ORGANIC: &str = "/v3/serp/google/organic/live/advanced";

/// SERP depth: default and most.
const DEFAULT_DEPTH: u8 = 10;
const MAX_DEPTH: u8 = 100;

#[derive(Serialize)]
struct SerpTask<'a> {
    keyword: &'a str,
    location_code: u32,
    language_code: &'a str,
    device: &'static str,
    depth: u8,
}

fn device_name(device: Option<Device>) -> &'static str {
    match device {
        None | Some(Device::Desktop) => "desktop",
        Some(Device::Mobile) => "mobile",
    }
}

pub fn serp_organic(
    keyword: String,
    location_code: Option<u32>,
    language_code: Option<String>,
    device: Option<Device>,
    depth: Option<u8>,
) -> Result<Serp, ToolError> {
    let keyword = self::keyword(keyword, 1, MAX_KEYWORD)?;
    let (location_code, language_code) = place(location_code, language_code)?;
    let depth = bounded("depth", depth, DEFAULT_DEPTH, 1, MAX_DEPTH)?;
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

/// One result of a SERP (or a ranked keyword's `serp_item`).
#[derive(Deserialize)]
pub struct ApiSerpItem {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    pub rank_group: Option<u32>,
    #[serde(default)]
    pub rank_absolute: Option<u32>,
    #[serde(default)]
    domain: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    pub etv: Option<f64>,
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
