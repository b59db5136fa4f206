"""`scout_sdk` for Python: what a Python connector carries, as the Rust
`scout-sdk` does for Rust connectors.

- `errors`: the WIT `tool-error` cases as exceptions to raise
  (`raise errors.invalid_input("...")`), and upstream error bodies mapped as
  the Rust SDK maps them (`ErrorFormat`, `status_error`).
- `Http`: JSON over the host's `http` handle, statuses mapped to tool errors
  (with `Retry-After`), `encode_segment` / `encode_path`, `field`.
- `args`: bounded numbers, identifiers, texts, dates, `json` arguments.
- `tools`: a class decorator that turns a Python exception in a tool into
  a `bad-response` naming it and its line, instead of a trap.
- `graphql`, `pages`, `log`, and, for the worlds that include them,
  `meter` / `billing` and `folder`.

It imports the bindings componentize-py generates for the connector's world
(`wit_world`, `componentize_py_types`), so it runs inside a component built
by `scout-host build`; `componentize-py --wit-path wit --world WORLD bindings
DIR` writes the same bindings for an editor. Pure Python, no dependency.
"""

from . import args, errors, graphql, log, pages
from .errors import ErrorFormat, bad_response, cut_message, invalid_input, not_found, refused, upstream
from .http_client import Http, encode_path, encode_segment, field, header, parse_json
from .tools import tools

__version__ = "0.2.0"

__all__ = [
    "ErrorFormat",
    "Http",
    "args",
    "bad_response",
    "cut_message",
    "encode_path",
    "encode_segment",
    "errors",
    "field",
    "graphql",
    "header",
    "invalid_input",
    "log",
    "not_found",
    "pages",
    "parse_json",
    "refused",
    "tools",
    "upstream",
]
