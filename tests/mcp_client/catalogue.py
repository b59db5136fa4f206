"""Every seed connector served at once, each role's surface listed over MCP.

Driven by host/tests/all/catalogue_surfaces.rs, which builds every component,
starts a loopback fake upstream and the real `scout-host serve` with every
connector configured, then runs this script with the official Python MCP
client:

    python3 catalogue.py --base URL --admin-token T --plan PLAN.json

PLAN.json says which connections to store, which profiles to save, which
sessions to open and which calls to make. For every session the script lists
the tools of every MCP endpoint the session was given (with the official
client's `list_tools`), and prints one JSON line: per session, per endpoint,
the sorted tool names, and per call its outcome. The Rust test holds the
oracle (seed 000's tables) and compares.
"""

import argparse
import asyncio
import json
import sys
import urllib.error
import urllib.request

from scout_mcp import Mcp, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--plan", required=True)
OPTS = ARGS.parse_args()


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def admin(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(OPTS.base + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {OPTS.admin_token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


async def approve_when_asked(session_id, tool):
    """A person, through the approvals API, approves the one call waiting for `tool`."""
    for _ in range(400):
        status, body = admin("GET", f"/v1/approvals?session={session_id}")
        check(status == 200, f"approvals list: {status} {body}")
        for a in body["pending"]:
            if a["tool"] == tool:
                status, reply = admin("POST", f"/v1/approvals/{a['id']}", {"approve": True, "by": "person via API"})
                check(status == 200, f"approve: {status} {reply}")
                return a
        await asyncio.sleep(0.05)
    raise AssertionError(f"no approval request for {tool} appeared")


async def call(opened, step):
    """One call of the plan: its outcome, and whether a person was asked."""
    url = opened["mcp"].get(step["connector"])
    if url is None:
        return {"error": True, "text": "no endpoint for this connector in the session", "asked": False, "denied": True}
    async with Mcp(url, opened["token"]) as s:
        try:
            coro = s.call_tool(step["tool"], step["arguments"])
            if step.get("approve"):
                asked, result = await asyncio.gather(
                    approve_when_asked(opened["id"], f"mcp__{step['connector']}__{step['tool']}"), coro
                )
            else:
                asked, result = None, await coro
        except Exception as e:
            # A denial is a JSON-RPC error, not a tool result.
            if type(e).__name__ not in ("McpError", "MCPError"):
                raise
            return {"error": True, "text": str(e)[:400], "asked": False, "denied": True}
    return {"error": bool(result.is_error), "text": text_of(result)[:400], "asked": asked is not None, "denied": False}


async def main():
    with open(OPTS.plan) as f:
        plan = json.load(f)
    for c in plan["connections"]:
        status, body = admin("PUT", f"/v1/brands/{plan['brand']}/connections/{c['connector']}", c["body"])
        check(status == 200, f"connection {c['connector']}: {status} {body}")
    for p in plan["profiles"]:
        status, body = admin("PUT", f"/v1/brands/{plan['brand']}/profiles/{p['profile']['name']}", p)
        check(status == 200, f"profile {p['profile']['name']}: {status} {body}")
    out = {"sessions": {}, "calls": {}}
    opened = {}
    for s in plan["sessions"]:
        request = {"brand": plan["brand"], "role": s["role"]}
        if s.get("profile"):
            request["profile"] = s["profile"]
        status, body = admin("POST", "/v1/sessions", request)
        check(status == 201, f"session {s['label']}: {status} {body}")
        opened[s["label"]] = body
        listed = {}
        for connector, url in sorted(body["mcp"].items()):
            async with Mcp(url, body["token"]) as m:
                listed[connector] = sorted(t.name for t in (await m.list_tools()).tools)
        out["sessions"][s["label"]] = listed
    for step in plan.get("calls", []):
        out["calls"][step["label"]] = await call(opened[step["session"]], step)
    print(json.dumps(out))


try:
    asyncio.run(main())
except Exception as e:
    def leaves(e):
        subs = getattr(e, "exceptions", None)
        return [x for sub in subs for x in leaves(sub)] if subs else [e]
    for leaf in leaves(e):
        print(f"FAILED: {type(leaf).__name__}: {leaf}", file=sys.stderr)
    sys.exit(1)
