//! One billed upstream call, settled on every path.
//!
//! A connector that bills reserves an estimate before it sends (nothing is
//! sent when the allowance does not cover it), and settles what the call
//! cost afterwards, whether it succeeded or failed: a reservation left
//! unsettled is charged in full by the host. [`metered`] does that once for
//! every connector.

use crate::{ToolError, UpstreamError, meter};

/// Refuses when this session's meter counts another unit than the one the
/// vendor bills in (`credits`, `usd`): nothing is reserved or sent.
pub fn expect_unit(vendor: &str, unit: &str) -> Result<(), ToolError> {
    let counted = meter::unit();
    if !counted.is_empty() && counted != unit {
        return Err(ToolError::refused(format!(
            "this session's meter counts {counted}; {vendor} bills {unit}, so nothing was sent"
        )));
    }
    Ok(())
}

/// What a failed call is settled at, the usual way: nothing when the
/// upstream refused it (a 4xx other than 408, not-found, invalid input, a
/// refusal), the whole estimate when it may have done the work (a 5xx, 408,
/// a timeout or transport failure, an unreadable answer).
pub fn failure_cost(error: &ToolError, estimate: u64) -> u64 {
    match error {
        ToolError::Upstream(UpstreamError { status, .. })
            if (400..500).contains(status) && *status != 408 =>
        {
            0
        }
        ToolError::NotFound(_) | ToolError::InvalidInput(_) | ToolError::Refused(_) => 0,
        _ => estimate,
    }
}

/// Reserves `estimate`, runs `call` and settles the reservation on every
/// path: on success at what `call` reports it cost (`None`: the estimate),
/// on failure at `on_failure(&error)`. A settlement the meter refuses (the
/// cost went past what the allowance still covers, which the host then
/// charged up to the allowance) is logged, and the call's answer stands.
pub fn metered<T>(
    estimate: u64,
    on_failure: impl FnOnce(&ToolError) -> u64,
    call: impl FnOnce() -> Result<(T, Option<u64>), ToolError>,
) -> Result<T, ToolError> {
    metered_charging(estimate, on_failure, call).map(|(value, _)| value)
}

/// [`metered`], also returning what the meter charged on success: the
/// cost, or, where the meter refused the settlement, what it charged
/// instead (a cost past the allowance up to what the run had left; a cost
/// above an estimate made under a per-call threshold at that estimate; a run that had
/// ended at the whole reservation).
pub fn metered_charging<T>(
    estimate: u64,
    on_failure: impl FnOnce(&ToolError) -> u64,
    call: impl FnOnce() -> Result<(T, Option<u64>), ToolError>,
) -> Result<(T, u64), ToolError> {
    let reservation = meter::reserve(estimate)?;
    let (result, actual) = match call() {
        Ok((value, cost)) => {
            let actual = cost.unwrap_or(estimate);
            (Ok(value), actual)
        }
        Err(error) => {
            let actual = on_failure(&error);
            (Err(error), actual)
        }
    };
    // What the run has left beyond this reservation, read before settling.
    let left = if actual > estimate {
        meter::remaining()
    } else {
        0
    };
    let charged = match reservation.settle(actual) {
        Ok(()) => actual,
        Err(e) => {
            let charged = match &e {
                meter::MeterError::RunExhausted(_) | meter::MeterError::DayExhausted(_) => {
                    estimate + actual.saturating_sub(estimate).min(left)
                }
                _ => estimate,
            };
            crate::log::warn(&format!(
                "settling {actual} against a reservation of {estimate}: {}",
                ToolError::from(e)
            ));
            charged
        }
    };
    result.map(|value| (value, charged))
}
