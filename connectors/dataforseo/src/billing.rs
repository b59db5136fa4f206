//! What each call may cost and what it did cost: the estimates reserved
//! before a task is sent, the meter's unit, and DataForSEO's settlement
//! rules (the `cost` it reports at the top of an answer, whatever the
//! task's status; the whole estimate when it may have run unreported;
//! nothing when the host refused to send it). Reserving and settling on
//! every path is the SDK's [`metered`]; this module only says at what.

use crate::api::{interpret, naming};
use scout_sdk::billing::metered;
use scout_sdk::{
    Capability, CapabilityError, Http, Method, Response, ToolError, cut_message, meter,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::cell::Cell;

/// The unit the meter must count in.
pub const UNIT: &str = "micro-usd";

// ---------------------------------------------------------------------------
// Estimates, in micro-USD
// ---------------------------------------------------------------------------
//
// UNVERIFIED: written from DataForSEO's pricing page
// (https://dataforseo.com/pricing) and help-centre articles as read, never
// checked against an invoice. An estimate is what the connector reserves
// before a call; the call is then settled at the cost DataForSEO reports, so
// an estimate decides only whether a call may start. Where the price was
// unclear the estimate leans high, so that a call the allowance could not
// pay is refused before it is sent rather than charged past the allowance.

/// DataForSEO Labs (keyword ideas, overview, ranked keywords, competitors,
/// bulk keyword difficulty, historical rank overview): $0.01 per task
/// (UNVERIFIED)...
const LABS_TASK: u64 = 10_000;
/// ... plus $0.0001 per item returned (UNVERIFIED); the estimate counts the
/// most items the task can return.
const LABS_ITEM: u64 = 100;
/// DataForSEO Labs search intent: $0.001 per task plus $0.0001 per keyword
/// (UNVERIFIED; the help centre's example charged $0.0014 for four keywords).
const INTENT_TASK: u64 = 1_000;
const INTENT_KEYWORD: u64 = 100;
/// Months `historical_rank_overview` may return (monthly since late 2020),
/// counted as items.
pub const RANK_HISTORY_ITEMS: u64 = 100;
/// Google Ads search volume, live: $0.075 per task of up to 1000 keywords
/// (UNVERIFIED).
pub const SEARCH_VOLUME_TASK: u64 = 75_000;
/// SERP Google organic, live: $0.002 for the first page of 10 results and
/// $0.0015 for each further page (UNVERIFIED; pricing since 2025-09-19).
const SERP_FIRST_PAGE: u64 = 2_000;
const SERP_NEXT_PAGE: u64 = 1_500;
/// On-Page instant pages: $0.000125 per page (UNVERIFIED); reserved at
/// $0.001 in case the page needs more than the basic fetch.
pub const INSTANT_PAGE: u64 = 1_000;
/// DataForSEO Trends explore: charged per request whatever the number of
/// keywords; the price was not found, so $0.01 is reserved (UNVERIFIED).
pub const TRENDS_TASK: u64 = 10_000;

pub fn labs_estimate(items: u64) -> u64 {
    LABS_TASK + LABS_ITEM * items
}

pub fn intent_estimate(keywords: usize) -> u64 {
    INTENT_TASK + INTENT_KEYWORD * keywords as u64
}

/// Pages of 10 results a SERP of `depth` results reads, and their price.
pub fn serp_estimate(depth: u8) -> u64 {
    let pages = (depth as u64).div_ceil(10).max(1);
    SERP_FIRST_PAGE + SERP_NEXT_PAGE * (pages - 1)
}

// ---------------------------------------------------------------------------
// Costs and settlement
// ---------------------------------------------------------------------------

/// A cost in USD as micro-USD, rounded up. A product within a thousandth of
/// a micro-USD of a whole number is that number (0.0103 USD is 10300, not
/// 10301 from the float's error). A negative, non-finite or absurd figure is
/// no cost at all (`None`): the caller then settles at the estimate.
fn usd_to_micro(usd: f64) -> Option<u64> {
    if !usd.is_finite() || !(0.0..=1e9).contains(&usd) {
        return None;
    }
    let micro = usd * 1e6;
    let nearest = micro.round();
    let whole = if (micro - nearest).abs() < 1e-3 {
        nearest
    } else {
        micro.ceil()
    };
    Some(whole as u64)
}

/// Only the top-level `cost` of an answer.
#[derive(Deserialize)]
struct CostOnly {
    #[serde(default)]
    cost: Option<f64>,
}

/// The micro-USD an answer says it cost, if it says so readably.
fn reported_cost(body: &[u8]) -> Option<u64> {
    serde_json::from_slice::<CostOnly>(body)
        .ok()?
        .cost
        .and_then(usd_to_micro)
}

/// What to settle a reservation of `estimate` at, after `sent`: the cost
/// the answer reports (an error answer's too: DataForSEO bills some failed
/// tasks), else the estimate; nothing when the host refused to send it.
fn settlement(sent: &Result<Response, ToolError>, estimate: u64) -> u64 {
    match sent {
        Ok(response) => reported_cost(&response.body).unwrap_or(estimate),
        // The host refused the request before sending it: nothing was spent.
        Err(ToolError::Capability(e)) if e.capability == Capability::Http && e.kind == "denied" => {
            0
        }
        // Transport error, timeout, an answer over the size limit: the task
        // may have run and been billed.
        Err(_) => estimate,
    }
}

// ---------------------------------------------------------------------------
// The meter
// ---------------------------------------------------------------------------

/// The refusal of a meter in the wrong unit, or of no meter (the host
/// answers an empty unit when the session holds none). Not the SDK's
/// `expect_unit`: that one is `refused` and lets a session without a meter
/// through to a reservation; DataForSEO's tools answer a `capability` error
/// before anything is reserved.
fn meter_refusal(unit: &str) -> Option<ToolError> {
    if unit == UNIT {
        return None;
    }
    let (kind, message) = if unit.is_empty() {
        ("denied", "this session holds no DataForSEO allowance, and every DataForSEO call but the account bills".to_string())
    } else {
        (
            "invalid",
            format!(
                "the meter counts in `{}`; DataForSEO bills in `{UNIT}`",
                cut_message(unit)
            ),
        )
    };
    Some(ToolError::Capability(CapabilityError {
        capability: Capability::Meter,
        kind: kind.into(),
        message,
        amount: None,
    }))
}

/// Refuses before anything when the session's meter is not in micro-USD.
pub fn check_meter() -> Result<(), ToolError> {
    match meter_refusal(&meter::unit()) {
        Some(refusal) => Err(refusal),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------------------
// Billed calls
// ---------------------------------------------------------------------------

/// Sends one billed task: meter check, DataForSEO's client, then
/// [`billed_after`] with nothing before the task; the answer's result list.
pub fn billed<T: DeserializeOwned>(
    path: &str,
    body: Vec<u8>,
    estimate: u64,
) -> Result<Vec<T>, ToolError> {
    check_meter()?;
    // Connect before reserving: a refused client has nothing to settle.
    let http = crate::api::client()?;
    let ((), results) = billed_after(&http, estimate, || Ok(()), path, body)?;
    Ok(results)
}

/// Reserves `estimate`, runs `free` (reads that bill nothing, such as the
/// joint tool's peers), then POSTs the billed task `body` to `path` on
/// `http`; settles the reservation on every path ([`metered`]): at zero
/// while nothing billed was sent (`free` failed), else at [`settlement`] of
/// what the POST answered. Returns what `free` read and the task's results.
pub fn billed_after<R, T: DeserializeOwned>(
    http: &Http,
    estimate: u64,
    free: impl FnOnce() -> Result<R, ToolError>,
    path: &str,
    body: Vec<u8>,
) -> Result<(R, Vec<T>), ToolError> {
    // What the reservation is settled at: nothing until the task is sent.
    let cost = Cell::new(0);
    metered(
        estimate,
        |_| cost.get(),
        || {
            let read = free()?;
            let sent = http.send(Method::Post, path, &[], Some(body));
            cost.set(settlement(&sent, estimate));
            let response = sent?;
            let results =
                interpret(response.status, &response.body).map_err(|e| naming("POST", path, e))?;
            Ok(((read, results), Some(cost.get())))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_convert_to_micro_usd_rounded_up() {
        assert_eq!(usd_to_micro(0.0), Some(0));
        assert_eq!(usd_to_micro(0.0103), Some(10_300));
        assert_eq!(usd_to_micro(0.0014), Some(1_400));
        assert_eq!(usd_to_micro(0.01), Some(10_000));
        assert_eq!(usd_to_micro(0.075), Some(75_000));
        assert_eq!(usd_to_micro(0.000125), Some(125));
        assert_eq!(
            usd_to_micro(0.0000001),
            Some(1),
            "a tenth of a micro-USD rounds up"
        );
        assert_eq!(usd_to_micro(0.0012345), Some(1_235));
        assert_eq!(usd_to_micro(1.5), Some(1_500_000));
        for bad in [-0.01, f64::NAN, f64::INFINITY, 1e10] {
            assert_eq!(usd_to_micro(bad), None, "{bad}");
        }
    }

    #[test]
    fn estimates() {
        assert_eq!(labs_estimate(100), 20_000);
        assert_eq!(labs_estimate(1000), 110_000);
        assert_eq!(intent_estimate(4), 1_400);
        assert_eq!(serp_estimate(10), 2_000);
        assert_eq!(serp_estimate(1), 2_000);
        assert_eq!(serp_estimate(11), 3_500);
        assert_eq!(serp_estimate(100), 2_000 + 9 * 1_500);
    }

    #[test]
    fn settlements() {
        assert_eq!(
            reported_cost(br#"{"cost":0.0103,"tasks":[]}"#),
            Some(10_300)
        );
        assert_eq!(reported_cost(br#"{"cost":0}"#), Some(0));
        assert_eq!(reported_cost(br#"{"tasks":[]}"#), None);
        assert_eq!(reported_cost(b"Bad Gateway"), None);
        assert_eq!(reported_cost(br#"{"cost":"free"}"#), None);
        let response = |body: &[u8]| {
            Ok(Response {
                status: 200,
                headers: vec![],
                body: body.to_vec(),
            })
        };
        assert_eq!(settlement(&response(br#"{"cost":0.002}"#), 5_000), 2_000);
        assert_eq!(
            settlement(&response(b"oops"), 5_000),
            5_000,
            "no readable cost: the estimate"
        );
        let refused = ToolError::Capability(CapabilityError {
            capability: Capability::Http,
            kind: "denied".into(),
            message: "route".into(),
            amount: None,
        });
        assert_eq!(settlement(&Err(refused), 5_000), 0, "nothing was sent");
        let timeout = ToolError::Capability(CapabilityError {
            capability: Capability::Http,
            kind: "timeout".into(),
            message: "t".into(),
            amount: None,
        });
        assert_eq!(settlement(&Err(timeout), 5_000), 5_000);
    }

    #[test]
    fn meter_units() {
        assert!(meter_refusal("micro-usd").is_none());
        match meter_refusal("") {
            Some(ToolError::Capability(e)) => assert_eq!(
                (e.capability, e.kind.as_str()),
                (Capability::Meter, "denied")
            ),
            _ => panic!("no meter is denied"),
        }
        match meter_refusal("credits") {
            Some(ToolError::Capability(e)) => assert_eq!(
                (e.capability, e.kind.as_str()),
                (Capability::Meter, "invalid")
            ),
            _ => panic!("credits are refused"),
        }
    }
}
