//! The joint tool `seo_page_opportunities`: one store page's Shopify copy,
//! its Search Console queries and the keywords DataForSEO says it ranks
//! for, merged into ranked opportunities. It is the one tool that reads
//! other connectors (`Http::connect_to`, each `denied` unless that connector
//! is live in the session), in this order, and spends only on the last:
//! 1. Shopify (destination `shopify`, the Shopify connector's origin and
//!    credential): one fixed GraphQL query by the page's handle, sent as
//!    variables, never spliced into the document (the SDK's GraphQL);
//! 2. Search Console (destination `searchconsole`): the page's queries over
//!    the period, filtered to that one page (Google's error format);
//! 3. DataForSEO: the page's ranked keywords (billed).
//!
//! The DataForSEO estimate is reserved before the first request, so a call
//! the allowance cannot cover sends nothing to anyone; if Shopify or Search
//! Console fails, the reservation is settled at zero (nothing billed was
//! sent). A peer's error names the peer (`Shopify: ...`, `Search Console:
//! ...`), so that the agent knows which of the three answered.

use crate::api::{TargetTask, client, task_body};
use crate::billing::{billed_after, check_meter, labs_estimate};
use crate::bindings::exports::scout::dataforseo::read_tools::{
    Opportunity, OpportunityKind, PageOpportunities, RankedKeyword, StorePageKind,
};
use crate::input::{host_name, page_url, place};
use crate::labs::{ApiRankedResult, RANKED_KEYWORDS, ranked_keywords_of};
use scout_sdk::args::date_range;
use scout_sdk::{ErrorFormat, Http, ToolError, UpstreamError, cut_message, encode_segment};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

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

/// The period: two dates `YYYY-MM-DD` (trimmed), the start not after the
/// end, checked by the SDK's [`date_range`].
fn dates(start: &str, end: &str) -> Result<(String, String), ToolError> {
    let (start, end) = (start.trim(), end.trim());
    date_range(start, end)?;
    Ok((start.to_string(), end.to_string()))
}

/// A peer's error with the peer named (`Shopify: Throttled`): the joint tool
/// reads three upstreams, and the agent is told which one answered. The
/// host's capability errors (a peer that is not live, say) stand as they are.
fn from_peer(peer: &str, error: ToolError) -> ToolError {
    let named = |m: String| cut_message(format!("{peer}: {m}"));
    match error {
        ToolError::NotFound(m) => ToolError::NotFound(named(m)),
        ToolError::Upstream(UpstreamError { status, message }) => {
            ToolError::Upstream(UpstreamError {
                status,
                message: named(message),
            })
        }
        ToolError::BadResponse(m) => ToolError::BadResponse(named(m)),
        other => other,
    }
}

// ---------------------------------------------------------------------------
// Shopify
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct HandleVariables<'a> {
    handle: &'a str,
}

#[derive(Serialize)]
struct SearchVariables {
    query: String,
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

/// The store page's copy, read with the page's one query (its `errors`, a
/// non-2xx status or no `data` are Shopify's error).
fn store_copy(shopify: &Http, kind: StorePageKind, handle: &str) -> Result<StoreCopy, ToolError> {
    let peer = |e| from_peer("Shopify", e);
    match kind {
        StorePageKind::Product => {
            let data = shopify
                .graphql(SHOPIFY_GRAPHQL, PRODUCT_QUERY, HandleVariables { handle })
                .map_err(peer)?;
            product_copy(data, handle)
        }
        StorePageKind::Page => {
            let variables = SearchVariables {
                query: format!("handle:{handle}"),
            };
            let data = shopify
                .graphql(SHOPIFY_GRAPHQL, PAGE_QUERY, variables)
                .map_err(peer)?;
            page_copy(data, handle)
        }
    }
}

fn product_copy(data: ProductData, handle: &str) -> Result<StoreCopy, ToolError> {
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

fn page_copy(data: PagesData, handle: &str) -> Result<StoreCopy, ToolError> {
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

// ---------------------------------------------------------------------------
// Search Console
// ---------------------------------------------------------------------------

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

fn gsc_query<'a>(page: &'a str, start: &'a str, end: &'a str) -> GscQuery<'a> {
    GscQuery {
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

// ---------------------------------------------------------------------------
// Merging and ranking
// ---------------------------------------------------------------------------

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

pub fn page_opportunities(
    page_url: String,
    site_url: Option<String>,
    start_date: String,
    end_date: String,
    location_code: Option<u32>,
    language_code: Option<String>,
) -> Result<PageOpportunities, ToolError> {
    // Everything is checked, and the billed task built, before anything is
    // reserved or sent.
    let page = self::page_url(&page_url)?;
    let (kind, handle) = store_handle(&page)?;
    let site = property_for(&page, site_url.as_deref())?;
    let (start, end) = dates(&start_date, &end_date)?;
    let (location_code, language_code) = place(location_code, language_code)?;
    let gsc_request = gsc_query(&page, &start, &end);
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
    // Reserved; then the peers' clients and their free reads; then the
    // billed task. Settled at zero if a free read fails.
    let free_reads = || {
        let shopify = Http::connect_to("shopify")?.with_header("accept", "application/json");
        let searchconsole = Http::connect_to("searchconsole")?
            .with_header("accept", "application/json")
            .with_errors(ErrorFormat::Google);
        let copy = store_copy(&shopify, kind, &handle)?;
        let answer: GscAnswer = searchconsole
            .post(&gsc_path, &gsc_request)
            .map_err(|e| from_peer("Search Console", e))?;
        Ok((copy, answer.rows))
    };
    let ((copy, rows), results): (_, Vec<ApiRankedResult>) = billed_after(
        &dataforseo,
        estimate,
        free_reads,
        RANKED_KEYWORDS,
        dataforseo_request,
    )?;
    let ranked = ranked_keywords_of(results, &page).items;
    Ok(PageOpportunities {
        page_url: page,
        kind,
        title: copy.title,
        opportunities: rank_opportunities(&copy.text, rows, ranked),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use scout_sdk::graphql::data;
    use scout_sdk::testing::fails;
    use scout_sdk::{Capability, CapabilityError};

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
        assert_eq!(
            dates(" 2026-10-01", "2026-10-31 ").unwrap(),
            ("2026-10-01".to_string(), "2026-10-31".to_string())
        );
        assert!(dates("2026-10-31", "2026-10-01").is_err());
        for bad in [
            "2026-13-01",
            "2026-00-10",
            "2026-1-01",
            "26-10-01",
            "2026/10/01",
            "2026-10-32",
            "2026-02-30",
            "yesterday",
        ] {
            assert!(dates(bad, "2026-10-31").is_err(), "{bad}");
            assert!(dates("2026-01-01", bad).is_err(), "{bad}");
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
        let shopify = |status: u16, body: &[u8]| {
            data::<ProductData>(status, body).map_err(|e| from_peer("Shopify", e))
        };
        let e = fails(shopify(
            200,
            br#"{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]}"#,
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 200 && u.message == "Shopify: Throttled"),
            "{e}"
        );
        let e = fails(shopify(401, br#"{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}"#));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 401),
            "{e}"
        );
        let e = fails(shopify(502, b"Bad Gateway"));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 502 && u.message == "Shopify: Bad Gateway"),
            "{e}"
        );
        let none = product_copy(
            data(200, br#"{"data":{"productByIdentifier":null}}"#).unwrap(),
            "x",
        );
        assert!(
            matches!(none, Err(ToolError::NotFound(ref m)) if m == "the store has no product with handle `x`")
        );
        let page = page_copy(data(200, br#"{"data":{"pages":{"nodes":[{"id":"gid://shopify/Page/1","title":"Size guide","handle":"size-guide","body":"<p>Half sizes</p>"}]}}}"#).unwrap(), "size-guide").unwrap();
        assert_eq!(
            (page.title.as_str(), page.text.as_str()),
            ("Size guide", "Size guide  Half sizes ")
        );
        let e = from_peer(
            "Search Console",
            ErrorFormat::Google
                .status_error(403, br#"{"error":{"code":403,"message":"User does not have sufficient permission for site.","status":"PERMISSION_DENIED"}}"#)
                .unwrap(),
        );
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 403 && u.message == "Search Console: PERMISSION_DENIED: User does not have sufficient permission for site."),
            "{e}"
        );
        assert!(
            scout_sdk::parse_json::<GscAnswer>(br#"{"responseAggregationType":"byPage"}"#)
                .unwrap()
                .rows
                .is_empty()
        );
        let denied = ToolError::Capability(CapabilityError {
            capability: Capability::Http,
            kind: "denied".into(),
            message: "not live".into(),
            amount: None,
        });
        assert!(
            matches!(from_peer("Shopify", denied), ToolError::Capability(ref c) if c.message == "not live"),
            "the host's refusals are not the peer's"
        );
    }
}
