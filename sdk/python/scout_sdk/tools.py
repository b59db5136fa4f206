"""`@tools`: what a tool class's exceptions become.

componentize-py turns a raised `Err(ToolError_...)` into the tool's error.
Any other exception (a `KeyError` on an answer shaped unlike the code
expected, a bug) traps the call: the host reports a backtrace of the Python
runtime and no word of the author's code. A class decorated with
`@tools` turns such an exception into a `bad-response` tool error naming the
exception and the line it came from (`app.py:63 in get_item`), and logs the
frames to the trace; an `Err` carrying a capability's own error (the raw
`http.connect()` raising `HttpError_Denied`) becomes that capability's
error, as the SDK's wrappers would have made it.
"""

import functools

from componentize_py_types import Err

from . import errors, log


def _frames(tb):
    """`file:line in function` for each frame of a traceback, innermost last,
    read from the code objects (no source file is opened: there is no
    filesystem to open it from)."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        name = code.co_filename.replace("\\", "/").rsplit("/", 1)[-1]
        out.append(f"{name}:{tb.tb_lineno} in {code.co_name}")
        tb = tb.tb_next
    return out


def _capability_error(err):
    name = type(err.value).__name__
    if name.startswith("HttpError_"):
        from .http_client import http_error

        return http_error(err)
    if name.startswith("MeterError_"):
        from .meter import meter_error

        return meter_error(err)
    if name.startswith("FolderError_"):
        from .folder import folder_error

        return folder_error(err)
    return None


def _guarded(method):
    @functools.wraps(method)
    def call(*a, **kw):
        try:
            return method(*a, **kw)
        except Err as e:
            if errors.is_tool_error(e):
                raise
            converted = _capability_error(e)
            if converted is not None:
                raise converted from None
            frames = _frames(e.__traceback__)
            log.error(f"{method.__name__} raised Err({e.value!r}), not a tool error: " + " <- ".join(reversed(frames)))
            raise errors.bad_response(
                f"the connector raised Err({type(e.value).__name__}), not a tool error ({frames[-1] if frames else '?'})"
            ) from None
        except Exception as e:  # noqa: BLE001 - every exception is reported, none traps
            frames = _frames(e.__traceback__)
            what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            log.error(f"{method.__name__} failed: {what}; " + " <- ".join(reversed(frames)))
            raise errors.bad_response(
                errors.cut_message(f"the connector failed: {what} ({frames[-1] if frames else '?'})")
            ) from None

    return call


def tools(cls):
    """Class decorator for `ReadTools` / `WriteTools`: every public method's
    exceptions that are not tool errors become `bad-response` (logged with
    their frames) instead of a trap."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and callable(value):
            setattr(cls, name, _guarded(value))
    return cls
