//! The On-Page API's instant pages: one page fetched and audited by
//! DataForSEO (billed per page). Its checks are read without
//! `#[serde(untagged)]`, whose buffering would cost some 40 KB of the
//! component.

use crate::api::{ApiItems, first, items, non_empty, task_body};
use crate::billing::{INSTANT_PAGE, billed};
use crate::bindings::exports::scout::dataforseo::read_tools::PageReport;
use crate::input::page_url;
use scout_sdk::ToolError;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const INSTANT_PAGES: &str = "/v3/on_page/instant_pages";

#[derive(Serialize)]
struct PageTask<'a> {
    url: &'a str,
}

pub fn page_audit(url: String) -> Result<PageReport, ToolError> {
    let url = page_url(&url)?;
    let results: Vec<ApiItems<ApiPage>> = billed(
        INSTANT_PAGES,
        task_body(&PageTask { url: &url })?,
        INSTANT_PAGE,
    )?;
    Ok(first(items(results), "page")?.into())
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
