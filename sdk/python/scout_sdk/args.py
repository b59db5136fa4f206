"""Checks of the arguments an agent writes that every connector makes the
same way: bounded numbers with defaults, identifiers that go into a path,
calendar dates and `json` values. Each refusal is an `invalid-input` error
naming the argument and what it may be, raised before anything is reserved
or sent (the host has already checked the WIT types and any declared range)."""

import json as _json
import math

from . import errors


def bounded(what, value, default, minimum, maximum):
    """`value`, or `default` when it is None; refused outside `minimum..=maximum`
    (a NaN or an infinity too)."""
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise errors.invalid_input(f"{what} must be a number between {minimum} and {maximum}, not {value!r}")
    if isinstance(value, float) and not math.isfinite(value) or not (minimum <= value <= maximum):
        raise errors.invalid_input(f"{what} must be between {minimum} and {maximum}, not {value}")
    return value


def identifier(what, text, max_len=64, also=""):
    """`text` checked to be 1 to `max_len` ASCII letters, digits, `-`, `_`
    (and the characters in `also`): an id that goes into a path segment or
    a query. Build the path with `encode_segment` all the same."""
    if not text:
        raise errors.invalid_input(f"{what} is empty")
    if len(text) > max_len:
        raise errors.invalid_input(f"{what} is longer than {max_len} characters")
    allowed = "-_" + also
    if not all((c.isascii() and c.isalnum()) or c in allowed for c in text):
        extra = "".join(f", `{c}`" for c in also)
        raise errors.invalid_input(
            f"{what} `{text}` may contain only ASCII letters, digits, `-`, `_`{extra}"
        )
    return text


def text(what, value, max_bytes, allow_blank=False):
    """A free text argument, refused when blank (unless `allow_blank`) or
    longer than `max_bytes` bytes of UTF-8."""
    if not allow_blank and not value.strip():
        raise errors.invalid_input(f"{what} is empty")
    if len(value.encode("utf-8")) > max_bytes:
        raise errors.invalid_input(f"{what} is longer than {max_bytes} bytes")
    return value


def json(what, value, kind=None):
    """A `json` argument (the contract's `json` type, `filter: json`) read as
    its value. The host has already checked that it is JSON and handed over
    its canonical text; `kind` (dict, list, ...) refuses a value of another
    shape."""
    try:
        parsed = _json.loads(value)
    except ValueError as e:
        raise errors.invalid_input(f"{what} is not the JSON this tool takes: {e}") from None
    if kind is not None and not isinstance(parsed, kind):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        names = {"dict": "an object", "list": "an array", "str": "a string"}
        raise errors.invalid_input(
            f"{what} is not the JSON this tool takes: expected {names.get(want, want)}"
        )
    return parsed


def _leap(year):
    return (year % 4 == 0 and year % 100 != 0) or year % 400 == 0


def days_in_month(year, month):
    """The days of `month` (1-12) in `year`; 0 for a month that is not one."""
    if month in (1, 3, 5, 7, 8, 10, 12):
        return 31
    if month in (4, 6, 9, 11):
        return 30
    if month == 2:
        return 29 if _leap(year) else 28
    return 0


def date(what, value):
    """A calendar date `YYYY-MM-DD` as `(year, month, day)`; anything else is
    refused naming `what`."""
    bad = errors.invalid_input(f"{what} must be a date YYYY-MM-DD, not `{value}`")
    if len(value) != 10 or value[4] != "-" or value[7] != "-":
        raise bad
    parts = (value[0:4], value[5:7], value[8:10])
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise bad
    y, m, d = (int(p) for p in parts)
    if y == 0 or not 1 <= m <= 12 or d == 0 or d > days_in_month(y, m):
        raise bad
    return (y, m, d)


def date_range(start, end):
    """Two dates, the start not after the end."""
    if date("the start date", start) > date("the end date", end):
        raise errors.invalid_input(f"the start date {start} is after the end date {end}")
