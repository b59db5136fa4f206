"""Tool errors, and upstream error bodies in the shapes vendors write them.

A tool fails by raising the WIT `tool-error` variant the way componentize-py
expects it, `raise Err(types.ToolError_InvalidInput("..."))`; the helpers
here build those exceptions (`raise invalid_input("...")`) so a connector
never spells the variant out. An upstream's non-2xx answer becomes the one
shape an agent sees, as the Rust SDK maps it: `not-found` for a 404,
`upstream` with the status and a bounded message for any other status, the
message read from the body in the vendor's format (`ErrorFormat`) and cut at
`MAX_MESSAGE` bytes on a character boundary.
"""

import json as _json

from componentize_py_types import Err
from wit_world.imports import types

#: Longest upstream message carried into a tool error, in bytes (UTF-8).
MAX_MESSAGE = 500


def cut_to(text, max_bytes):
    """`text` cut at `max_bytes` bytes of UTF-8 on a character boundary."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", errors="ignore")


def cut_message(text):
    """`text`, trimmed and cut at `MAX_MESSAGE` bytes on a character boundary."""
    return cut_to(str(text).strip(), MAX_MESSAGE)


# ---------------------------------------------------------------------------
# The `tool-error` cases, as exceptions to raise.
# ---------------------------------------------------------------------------


def invalid_input(message):
    """The arguments were well typed but not acceptable: `raise invalid_input("...")`."""
    return Err(types.ToolError_InvalidInput(str(message)))


def not_found(message):
    """The thing asked for does not exist upstream."""
    return Err(types.ToolError_NotFound(str(message)))


def refused(message):
    """The connector refuses this by a rule in its own code."""
    return Err(types.ToolError_Refused(str(message)))


def upstream(status, message):
    """The upstream answered an error status; the message is cut."""
    return Err(types.ToolError_Upstream(types.UpstreamError(status=int(status), message=cut_message(message))))


def bad_response(message):
    """The upstream answered something the connector could not read."""
    return Err(types.ToolError_BadResponse(str(message)))


def capability(which, kind, message, amount=None):
    """A host capability (`types.Capability.HTTP`, `METER`, `FOLDER`) refused or failed."""
    return Err(
        types.ToolError_Capability(
            types.CapabilityError(capability=which, kind=kind, message=str(message), amount=amount)
        )
    )


def describe(error):
    """One line for a tool error (an `Err` or its `ToolError_*` value), for logs."""
    value = error.value if isinstance(error, Err) else error
    if isinstance(value, types.ToolError_InvalidInput):
        return f"invalid input: {value.value}"
    if isinstance(value, types.ToolError_NotFound):
        return f"not found: {value.value}"
    if isinstance(value, types.ToolError_Refused):
        return f"refused: {value.value}"
    if isinstance(value, types.ToolError_Upstream):
        return f"upstream answered {value.value.status}: {value.value.message}"
    if isinstance(value, types.ToolError_Capability):
        e = value.value
        return f"{e.capability.name.lower()} {e.kind}: {e.message}"
    if isinstance(value, types.ToolError_BadResponse):
        return f"bad response: {value.value}"
    return repr(value)


def is_tool_error(error):
    """Whether `error` is a raised tool error (an `Err` carrying a `ToolError_*`)."""
    return isinstance(error, Err) and isinstance(
        error.value,
        (
            types.ToolError_InvalidInput,
            types.ToolError_NotFound,
            types.ToolError_Refused,
            types.ToolError_Upstream,
            types.ToolError_Capability,
            types.ToolError_BadResponse,
        ),
    )


# ---------------------------------------------------------------------------
# Upstream error bodies.
# ---------------------------------------------------------------------------


def _object(body):
    """The body as a JSON object, or None."""
    try:
        value = _json.loads(bytes(body))
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _code_text(code):
    if isinstance(code, bool):
        return "?"
    if isinstance(code, str):
        return code
    if isinstance(code, int):
        return str(code)
    return "?"


def _message_field(body):
    obj = _object(body)
    if obj is None or not isinstance(obj.get("message"), str):
        return None
    return obj["message"]


def _error_field(body, with_status):
    obj = _object(body)
    if obj is None or "error" not in obj:
        return None
    error = obj["error"]
    if isinstance(error, str):
        return error
    if not isinstance(error, dict):
        return None
    message = error.get("message") if isinstance(error.get("message"), str) else ""
    status = error.get("status") if isinstance(error.get("status"), str) else ""
    codes = []
    details = error.get("details")
    for detail in details if isinstance(details, list) else []:
        errors = detail.get("errors") if isinstance(detail, dict) else None
        for e in errors if isinstance(errors, list) else []:
            if not isinstance(e, dict):
                continue
            text = e.get("message") if isinstance(e.get("message"), str) else ""
            code = e.get("errorCode")
            parts = (
                [f"{kind}.{_code_text(v)}" for kind, v in sorted(code.items())] if isinstance(code, dict) else []
            )
            codes.append(f"{','.join(parts)}: {text}" if parts else text)
    detail_text = "; ".join(codes) if codes else message
    if not status or not with_status:
        return detail_text
    return f"{status}: {detail_text}"


def _errors_list(body, with_code):
    obj = _object(body)
    errors = obj.get("errors") if obj is not None else None
    if not isinstance(errors, list) or not errors or not all(isinstance(e, dict) for e in errors):
        return None
    out = []
    for e in errors:
        text = e.get("message") if isinstance(e.get("message"), str) else ""
        code = e.get("code")
        out.append(f"{_code_text(code)}: {text}" if with_code and code is not None else text)
    return "; ".join(out)


class ErrorFormat:
    """How an upstream writes the message of an error body: each is a
    function from the body (bytes) to its message, or None when the body is
    not in that shape."""

    #: `{"message": "..."}` (GitHub, Railway's REST, many others).
    MESSAGE = staticmethod(_message_field)
    #: `{"error": "..."}` or `{"error": {"message": "..."}}` (Firecrawl, AgentMail, OAuth).
    ERROR = staticmethod(lambda body: _error_field(body, False))
    #: Google APIs: `{"error": {"code", "message", "status", "details"}}`, as `STATUS: message`.
    GOOGLE = staticmethod(lambda body: _error_field(body, True))
    #: Cloudflare's v4 envelope `{"errors": [{"code", "message"}]}`, as `code: message; ...`.
    CLOUDFLARE = staticmethod(lambda body: _errors_list(body, True))
    #: GraphQL: `{"errors": [{"message"}]}`, the messages joined by `; `.
    GRAPHQL = staticmethod(lambda body: _errors_list(body, False))


def error_message(decoder, body):
    """The message `decoder` reads from `body`, or else the body's text; always cut."""
    found = decoder(body)
    if found is None or not found.strip():
        found = bytes(body).decode("utf-8", errors="replace")
    return cut_message(found)


def status_error(status, body, decoder=ErrorFormat.MESSAGE, retry_after=None):
    """The exception a non-2xx answer is (None for a 2xx): `not-found` for a
    404, `upstream` with the status and the message otherwise. `retry_after`
    (the answer's `Retry-After` header, if any) is added to an upstream
    message as ` (retry after N)`, so the agent knows when to try again."""
    if 200 <= status < 300:
        return None
    message = error_message(decoder, body)
    if status == 404:
        return not_found(message)
    if retry_after and retry_after.strip():
        suffix = f" (retry after {cut_to(retry_after.strip(), 64)})"
        message = cut_to(message, MAX_MESSAGE - len(suffix.encode("utf-8"))) + suffix
    return upstream(status, message)
