"""One billed upstream call, settled on every path, as the Rust SDK's
`billing` does it: reserve an estimate before sending (nothing is sent when
the allowance does not cover it), then settle what the call cost, whether it
succeeded or failed (a reservation left unsettled is charged in full)."""

from componentize_py_types import Err
from wit_world.imports import types

from . import errors, log, meter


def expect_unit(vendor, unit):
    """Refuses (before anything is sent) when this session's meter counts
    another unit than the one `vendor` bills in."""
    counted = meter.unit()
    if counted and counted != unit:
        raise errors.refused(
            f"this session's meter counts {counted}; {vendor} bills {unit}, so nothing was sent"
        )


def failure_cost(error, estimate):
    """What a failed call costs: nothing for a refusal before sending, a
    not-found or a 4xx other than 408 (the vendor did no billed work); the
    estimate otherwise."""
    value = error.value if isinstance(error, Err) else error
    if isinstance(value, types.ToolError_Upstream):
        status = value.value.status
        return 0 if 400 <= status < 500 and status != 408 else estimate
    if isinstance(value, (types.ToolError_NotFound, types.ToolError_InvalidInput, types.ToolError_Refused)):
        return 0
    return estimate


def metered_charging(estimate, call, on_failure=None):
    """Runs `call()` (returning `(value, cost)`, cost None for the estimate)
    under a reservation of `estimate`, settles it on every path and returns
    `(value, charged)`; a tool error from `call` is raised after settling
    what `on_failure(error, estimate)` (default `failure_cost`) says."""
    on_failure = on_failure or failure_cost
    reservation = meter.reserve(estimate)
    failure = None
    try:
        value, cost = call()
        actual = estimate if cost is None else int(cost)
    except Err as e:
        failure = e
        actual = on_failure(e, estimate)
    left = meter.remaining() if actual > estimate else 0
    try:
        reservation.settle(actual)
        charged = actual
    except Err as e:
        name = type(e.value).__name__
        if name in ("MeterError_RunExhausted", "MeterError_DayExhausted"):
            charged = estimate + min(max(actual - estimate, 0), left)
        else:
            charged = estimate
        log.warn(
            f"settling {actual} against a reservation of {estimate}: {errors.describe(meter.meter_error(e))}"
        )
    if failure is not None:
        raise failure
    return value, charged


def metered(estimate, call, on_failure=None):
    """`metered_charging` without the charge: the call's value."""
    return metered_charging(estimate, call, on_failure)[0]
