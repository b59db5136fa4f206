"""The `meter` handle (`scout:connector/meter@0.2.0`): spending against the
allowance a person granted, its `meter-error`s raised as tool errors. Only a
world that includes `with-meter` has it; see `billing.metered` for one billed
call settled on every path."""

from componentize_py_types import Err
from wit_world.imports import types

from . import errors

try:
    from wit_world.imports import meter as _meter
except ImportError:  # the world does not include scout:connector/with-meter
    _meter = None


def _contract():
    if _meter is None:
        raise errors.refused(
            "this connector's world does not include scout:connector/with-meter@0.2.0, so it has no meter"
        )
    return _meter


def meter_error(error):
    """The tool error (an `Err` to raise) for a `meter-error`."""
    value = error.value if isinstance(error, Err) else error
    name = type(value).__name__
    if name == "MeterError_RunExhausted":
        kind, message, amount = "run-exhausted", f"the run's allowance has {value.value} left", value.value
    elif name == "MeterError_DayExhausted":
        kind, message, amount = "day-exhausted", f"the day's allowance has {value.value} left", value.value
    elif name == "MeterError_Denied":
        kind, message, amount = "denied", value.value, None
    elif name == "MeterError_Invalid":
        kind, message, amount = "invalid", value.value, None
    else:
        kind, message, amount = "unknown", repr(value), None
    return errors.capability(types.Capability.METER, kind, message, amount)


def unit():
    """The unit amounts are counted in (`credits`, `micro-usd`)."""
    return _contract().unit()


def remaining():
    """What the run may still spend, in units."""
    return _contract().remaining()


def reserve(estimate):
    """Reserves `estimate` units (a reservation to `settle`), or raises the
    refusal with nothing reserved."""
    try:
        return _contract().reserve(int(estimate))
    except Err as e:
        raise meter_error(e) from None


def settle(reservation, actual):
    """Charges `actual` against `reservation`; a refusal is raised as a tool error."""
    try:
        reservation.settle(int(actual))
    except Err as e:
        raise meter_error(e) from None
