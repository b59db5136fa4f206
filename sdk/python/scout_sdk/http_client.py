"""JSON over the host's `http` handle (`scout:connector/http@0.2.0`).

The host decides where requests go and how they are authenticated; these
helpers only shape requests (a JSON body, encoded path segments) and turn
answers into values or tool errors, as the Rust SDK's `Http` does. A world
without `with-http` has no `wit_world.imports.http`: importing this module
still works there, and `Http.connect()` says what to include.
"""

import json as _json

from componentize_py_types import Err
from wit_world.imports import types

from . import errors

try:
    from wit_world.imports import http as _http
except ImportError:  # the world does not include scout:connector/with-http
    _http = None

_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _contract():
    if _http is None:
        raise errors.refused(
            "this connector's world does not include scout:connector/with-http@0.2.0, so it has no http handle"
        )
    return _http


def http_error(error):
    """The tool error (an `Err` to raise) for an `http-error` the host answered."""
    value = error.value if isinstance(error, Err) else error
    name = type(value).__name__
    if name == "HttpError_Denied":
        return errors.capability(types.Capability.HTTP, "denied", value.value)
    if name == "HttpError_Transport":
        return errors.capability(types.Capability.HTTP, "transport", value.value)
    if name == "HttpError_Timeout":
        return errors.capability(types.Capability.HTTP, "timeout", "the request timed out")
    if name == "HttpError_TooLarge":
        return errors.capability(
            types.Capability.HTTP, "too-large", f"the response exceeded {value.value} bytes", value.value
        )
    return errors.capability(types.Capability.HTTP, "unknown", repr(value))


def encode_segment(segment):
    """Percent-encodes one path segment: everything but `A-Z a-z 0-9 - _ . ~`.
    A segment that is `.` or `..` stays as it is, and the host refuses it."""
    out = []
    for b in str(segment).encode("utf-8"):
        c = chr(b)
        if (c.isascii() and c.isalnum()) or c in "-_.~":
            out.append(c)
        else:
            out.append(f"%{b:02X}")
    return "".join(out)


def encode_path(path):
    """Encodes a `/`-separated path segment by segment; an empty, `.` or `..`
    segment is refused with `invalid-input`."""
    parts = []
    for seg in str(path).strip("/").split("/"):
        if seg in ("", ".", ".."):
            raise errors.invalid_input(f"path `{path}` has an empty, `.` or `..` segment")
        parts.append(encode_segment(seg))
    return "/".join(parts)


def parse_json(body):
    """Parses a JSON answer; one that is not JSON is `bad-response`."""
    try:
        return _json.loads(bytes(body))
    except (ValueError, UnicodeDecodeError) as e:
        raise errors.bad_response(f"response is not the expected JSON: {e}") from None


def encode_json(value):
    """A JSON body's bytes (compact, UTF-8)."""
    try:
        return _json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise errors.invalid_input(f"cannot encode body: {e}") from None


def header(response, name):
    """The first value of header `name` (any case) in `response`, or None."""
    name = name.lower()
    for key, value in response.headers:
        if key.lower() == name:
            return value
    return None


_MISSING = object()


def field(obj, name, kind=str, default=_MISSING):
    """`obj[name]` checked to be a `kind` (a type or a tuple of types), or
    `default` when absent or null; an upstream answer without it is
    `bad-response` naming the field, never a Python exception (which would
    trap the call)."""
    if not isinstance(obj, dict):
        raise errors.bad_response(f"expected an object with `{name}`, got {type(obj).__name__}")
    value = obj.get(name)
    if value is None:
        if default is not _MISSING:
            return default
        raise errors.bad_response(f"the answer has no `{name}`")
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise errors.bad_response(f"`{name}` is {type(value).__name__}, not {want}")
    return value


class Http:
    """The connector's HTTP client, bound by the host to one origin."""

    def __init__(self, client):
        self._client = client
        self._headers = []
        self._decoder = errors.ErrorFormat.MESSAGE

    @classmethod
    def connect(cls):
        """Opens the client the host granted this connector for this call."""
        try:
            return cls(_contract().connect())
        except Err as e:
            raise http_error(e) from None

    @classmethod
    def connect_to(cls, destination):
        """Opens the client for another destination the tool's routes name
        (`Route: drive GET /drive/v3/files`)."""
        try:
            return cls(_contract().connect_to(destination))
        except Err as e:
            raise http_error(e) from None

    def with_header(self, name, value):
        """Adds a header sent with every request (e.g. `accept`). The host
        drops headers that carry authority whatever is set here."""
        self._headers.append((str(name), str(value)))
        return self

    def with_errors(self, decoder):
        """Reads the upstream's error bodies with `decoder` (an `ErrorFormat`
        member, or a function from the body to its message or None)."""
        self._decoder = decoder
        return self

    def check(self, response):
        """Raises the tool error a non-2xx `response` is: `not-found` for a
        404, `upstream` with the message (and any `Retry-After`) otherwise."""
        e = errors.status_error(
            response.status, response.body, self._decoder, header(response, "retry-after")
        )
        if e is not None:
            raise e

    def send(self, method, path, query=(), body=None, headers=()):
        """Sends one request as is (`method` a name such as "GET", `body`
        bytes or None) and returns the response whatever its status."""
        http = _contract()
        name = str(method).upper()
        if name not in _METHODS:
            raise errors.invalid_input(f"method `{method}` is not one of {', '.join(_METHODS)}")
        sent = list(self._headers) + [(str(k), str(v)) for k, v in headers]
        if body is not None and not any(k.lower() == "content-type" for k, _ in sent):
            sent.append(("content-type", "application/json"))
        request = http.Request(
            method=getattr(http.Method, name),
            path=path,
            query=[(str(k), str(v)) for k, v in query],
            headers=sent,
            body=None if body is None else bytes(body),
        )
        try:
            return self._client.send(request)
        except Err as e:
            raise http_error(e) from None

    def json(self, method, path, query=(), body=None):
        """Sends a request with an optional JSON `body` (any JSON-encodable
        value) and parses a 2xx JSON answer (None for an empty one); any
        other status is raised as `not-found` or `upstream`, an answer that
        is not JSON as `bad-response` naming the request."""
        payload = None if body is None else encode_json(body)
        response = self.send(method, path, query, payload)
        self.check(response)
        if not bytes(response.body).strip():
            return None
        try:
            return parse_json(response.body)
        except Err as e:
            raise errors.bad_response(f"{str(method).upper()} {path}: {e.value.value}") from None

    def get(self, path, query=()):
        """GET and parse JSON."""
        return self.json("GET", path, query)

    def post(self, path, body, query=()):
        """POST a JSON body and parse JSON."""
        return self.json("POST", path, query, body)

    def put(self, path, body, query=()):
        """PUT a JSON body and parse JSON."""
        return self.json("PUT", path, query, body)

    def patch(self, path, body, query=()):
        """PATCH a JSON body and parse JSON."""
        return self.json("PATCH", path, query, body)

    def delete(self, path, query=()):
        """DELETE; any 2xx is success."""
        self.check(self.send("DELETE", path, query))

    def graphql(self, path, query, variables=None):
        """POSTs a GraphQL document with its `variables` (never arguments
        spliced into the document) and returns the answer's `data`; its
        `errors` are an `upstream` error even under a 200."""
        from . import graphql

        response = self.send("POST", path, (), graphql.request(query, variables))
        return graphql.data(response.status, response.body)
