"""GraphQL over the `http` handle: a body of `query` and `variables` (never
arguments spliced into the document), and an answer whose `errors` are an
upstream error even under a 200, as the Rust SDK reads it."""

from componentize_py_types import Err

from . import errors
from .http_client import encode_json, parse_json


def request(query, variables=None):
    """The request body: `{"query": ..., "variables": ...}` as bytes."""
    return encode_json({"query": query, "variables": {} if variables is None else variables})


def data(status, body):
    """The `data` of a GraphQL answer. A non-2xx status is `not-found` (404)
    or `upstream` with the `errors` messages; `errors` under a 2xx are
    `upstream` with that status; no `data` is `bad-response`."""
    e = errors.status_error(status, body, errors.ErrorFormat.GRAPHQL)
    if e is not None:
        raise e
    try:
        answer = parse_json(body)
    except Err:
        raise errors.bad_response("the GraphQL answer is not the expected JSON") from None
    if not isinstance(answer, dict):
        raise errors.bad_response("the GraphQL answer is not a JSON object")
    found = answer.get("errors") or []
    if not isinstance(found, list):
        raise errors.bad_response("the GraphQL answer's `errors` is not a list")
    if found:
        messages = [e.get("message", "") if isinstance(e, dict) else "" for e in found]
        raise errors.upstream(status, "; ".join(m if isinstance(m, str) else "" for m in messages))
    if answer.get("data") is None:
        raise errors.bad_response("the GraphQL answer has no data")
    return answer["data"]
