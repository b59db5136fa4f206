//! The DataForSEO connector: thirteen read tools over the DataForSEO v3 API,
//! all grantable, and no write tools. `account` is free; eleven more each
//! send one billed task; `seo_page_opportunities` (a joint tool) also reads
//! the brand's Shopify store and Search Console through those connectors'
//! own origins and credentials, and bills one DataForSEO task.
//!
//! Every request goes through the host's HTTP capability, bound to the
//! DataForSEO API origin with the operator's basic credential
//! (`credential = "basic:LOGIN"`); this code never sees a secret.
//!
//! # Spending
//!
//! Every tool but `account` (`GET /v3/appendix/user_data`, which DataForSEO
//! does not charge for) spends money, so each one, in this order:
//!
//! 1. validates its arguments and builds the one task it sends (nothing an
//!    agent writes travels except the typed fields);
//! 2. checks that the session's meter counts in `micro-usd` (no meter: a
//!    `capability` error of kind `denied`; another unit: kind `invalid`);
//! 3. opens the HTTP client, then reserves the task's estimate (below). A
//!    reservation the allowance cannot cover is refused by the host, and the
//!    refusal (`run-exhausted` / `day-exhausted`) is the tool's error:
//!    nothing has been sent;
//! 4. sends the task and settles the reservation at the `cost` DataForSEO
//!    reports at the top of its answer (USD, converted to micro-USD and
//!    rounded up), whatever the task's status: DataForSEO bills some failed
//!    tasks (40101). An answer without a readable `cost`, or a request that
//!    may have reached DataForSEO without an answer (transport error,
//!    timeout, a body over the size limit), is settled at the whole estimate.
//!    A request the host refused before sending it is settled at zero.
//!    A settlement refused because the cost exceeded what the allowance still
//!    covers is logged; the answer, already paid for, is still returned.
//!
//! # Errors
//!
//! DataForSEO answers HTTP 200 with a `status_code` at the top and one per
//! task (https://docs.dataforseo.com/v3/appendix/errors/). 20000 is ok.
//! Other codes, at the top or in the task, map to tool errors:
//! - 40500–40599 (`Invalid Field`, `POST Data Is Invalid`, ...): the task's
//!   fields were refused, which with typed and validated arguments means a
//!   value DataForSEO does not accept (an unknown location code, say):
//!   `invalid-input`, with DataForSEO's code and message;
//! - 40400–40499 (`Not Found`, ...) and 40102 (`No Search Results`): `not-found`;
//! - anything else (balance, rate limits, 5xxxx): `upstream` with the HTTP
//!   status (200) and DataForSEO's code and message.
//!
//! HTTP 401, 402 and 500 become `upstream` with that status and the body's
//! `status_message`; HTTP 404 becomes `not-found` (the SDK's one error
//! shape, messages cut at `scout_sdk::errors::MAX_MESSAGE` bytes). An answer
//! that is not the JSON expected is `bad-response` naming the request
//! (`POST /v3/...: ...`).
//!
//! What DataForSEO answers was written from its documentation and never
//! observed (ALLOWANCE_UNVERIFIED.dataforseo_absent_cost among them).
//!
//! # Layout
//!
//! This file holds the exported tools, each a call into the module of its
//! API: [`account`], [`labs`] (DataForSEO Labs), [`keywords_data`] (Google
//! Ads search volume, DataForSEO Trends), [`serp`], [`onpage`] and
//! [`opportunities`] (the joint tool). They share [`input`] (argument
//! checks), [`api`] (the envelope, its status codes and the task bodies) and
//! [`billing`] (estimates, the meter and settlement).

#![cfg_attr(not(target_family = "wasm"), allow(dead_code))]

scout_sdk::bindings!();

mod account;
mod api;
mod billing;
mod input;
mod keywords_data;
mod labs;
mod onpage;
mod opportunities;
mod serp;

use bindings::exports::scout::dataforseo::read_tools::{
    self, AccountInfo, Competitor, Device, Difficulty, KeywordDetail, KeywordIntent,
    KeywordMetrics, PageOpportunities, PageReport, RankMonth, RankedKeywordList, Serp, TimeRange,
    TrendGraph, TrendsType, Volume,
};
use scout_sdk::ToolError;

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct DataForSeo;

impl read_tools::Guest for DataForSeo {
    fn seo_page_opportunities(
        page_url: String,
        site_url: Option<String>,
        start_date: String,
        end_date: String,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<PageOpportunities, ToolError> {
        opportunities::page_opportunities(
            page_url,
            site_url,
            start_date,
            end_date,
            location_code,
            language_code,
        )
    }

    fn account() -> Result<AccountInfo, ToolError> {
        account::account()
    }

    fn keyword_ideas(
        keywords: Vec<String>,
        location_code: Option<u32>,
        language_code: Option<String>,
        limit: Option<u16>,
    ) -> Result<Vec<KeywordMetrics>, ToolError> {
        labs::keyword_ideas(keywords, location_code, language_code, limit)
    }

    fn search_volume(
        keywords: Vec<String>,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<Vec<Volume>, ToolError> {
        keywords_data::search_volume(keywords, location_code, language_code)
    }

    fn keyword_overview(
        keywords: Vec<String>,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<Vec<KeywordDetail>, ToolError> {
        labs::keyword_overview(keywords, location_code, language_code)
    }

    fn ranked_keywords(
        target: String,
        location_code: Option<u32>,
        language_code: Option<String>,
        limit: Option<u16>,
    ) -> Result<RankedKeywordList, ToolError> {
        labs::ranked_keywords(target, location_code, language_code, limit)
    }

    fn serp_organic(
        keyword: String,
        location_code: Option<u32>,
        language_code: Option<String>,
        device: Option<Device>,
        depth: Option<u8>,
    ) -> Result<Serp, ToolError> {
        serp::serp_organic(keyword, location_code, language_code, device, depth)
    }

    fn competitors(
        target: String,
        location_code: Option<u32>,
        language_code: Option<String>,
        limit: Option<u8>,
    ) -> Result<Vec<Competitor>, ToolError> {
        labs::competitors(target, location_code, language_code, limit)
    }

    fn page_audit(url: String) -> Result<PageReport, ToolError> {
        onpage::page_audit(url)
    }

    fn keyword_difficulty(
        keywords: Vec<String>,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<Vec<Difficulty>, ToolError> {
        labs::keyword_difficulty(keywords, location_code, language_code)
    }

    fn search_intent(
        keywords: Vec<String>,
        language_code: Option<String>,
    ) -> Result<Vec<KeywordIntent>, ToolError> {
        labs::search_intent(keywords, language_code)
    }

    fn rank_history(
        target: String,
        location_code: Option<u32>,
        language_code: Option<String>,
    ) -> Result<Vec<RankMonth>, ToolError> {
        labs::rank_history(target, location_code, language_code)
    }

    fn trends(
        keywords: Vec<String>,
        location_code: Option<u32>,
        kind: Option<TrendsType>,
        time_range: Option<TimeRange>,
    ) -> Result<TrendGraph, ToolError> {
        keywords_data::trends(keywords, location_code, kind, time_range)
    }
}

scout_sdk::export!(DataForSeo);
