"""What the MCP client scripts share: one session on one endpoint of `serve`.

The official client (`mcp`) over streamable HTTP, with the session's bearer
token on every request; `story.py` and `plugin.py` import it.
"""

import json
import urllib.error
import urllib.request

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


class Mcp:
    """An MCP client session on one endpoint, with the session's bearer token."""

    def __init__(self, url, token, elicitation=None):
        self.url, self.token, self.elicitation = url, token, elicitation

    async def __aenter__(self):
        self.http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=60)
        self.transport = streamable_http_client(self.url, http_client=self.http)
        read, write = await self.transport.__aenter__()
        self.session = ClientSession(read, write, elicitation_callback=self.elicitation)
        await self.session.__aenter__()
        await self.session.initialize()
        return self.session

    async def __aexit__(self, *exc):
        await self.session.__aexit__(*exc)
        await self.transport.__aexit__(*exc)
        await self.http.aclose()


def text_of(result):
    """The text content of a tool result."""
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def admin_api(base, token):
    """`admin(method, path, body=None)`: one admin API request with the admin
    token; the JSON it answered (an HTTP error raises)."""

    def admin(method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")

    return admin


def admin_api_status(base, token):
    """`admin(method, path, body=None)`: one admin API request with `token`;
    its status and the JSON it answered, an HTTP error included."""

    def admin(method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    return admin


def check(condition, what):
    """Fails the script with `what` unless `condition` holds."""
    if not condition:
        raise AssertionError(what)
