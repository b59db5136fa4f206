"""A write that waits for a person, seen by clients with their libraries'
default timeouts: the official Python client over a plain `httpx2.AsyncClient`
(5 s read timeout) and over the SDK's own `create_mcp_http_client` with a
progress callback. A person answers through the admin API after
`--answer-after` seconds; both calls must get their result. A third client
goes away while it waits: its approval is withdrawn and nothing runs.

Driven by host/tests/all/mcp_serve.rs:

    python3 wait.py --base URL --admin-token T --answer-after 40

Prints one JSON summary line on success; the Rust test checks the fake
GitHub's side (which branches exist).
"""

import argparse
import asyncio
import json
import sys
import time
import urllib.error
import urllib.request

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--github-token", required=True)
ARGS.add_argument("--answer-after", type=float, required=True)
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


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def pending(session_id, branch):
    """The pending approval of `session_id` for `branch`, once it is asked."""
    for _ in range(3000):
        _, body = admin("GET", f"/v1/approvals?session={session_id}")
        for a in body["pending"]:
            if a["arguments"] and a["arguments"].get("branch") == branch:
                return a
        await asyncio.sleep(0.02)
    raise AssertionError(f"no approval for {branch}")


async def a_person(session_id, branch, after):
    approval = await pending(session_id, branch)
    await asyncio.sleep(after)
    status, reply = admin("POST", f"/v1/approvals/{approval['id']}", {"approve": True})
    check(status == 200, f"approved: {status} {reply}")


async def call_with(http, url, branch, progress=None):
    async with http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                started = time.monotonic()
                result = await s.call_tool(
                    "github_create_branch", {"owner": "octo", "repo": "hello", "branch": branch},
                    progress_callback=progress)
                return result, time.monotonic() - started


def session():
    status, body = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201, f"session: {status} {body}")
    return body


async def main():
    status, _ = admin("PUT", "/v1/brands/acme/connections/github", {"secret": OPTS.github_token})
    check(status == 200, "connection stored")
    _, reviews = admin("GET", "/v1/reviews")
    for t in reviews["connectors"]["github"]:
        admin("POST", "/v1/reviews", {"connector": "github", "tool": t["tool"], "digest": t["digest"]})

    plain, sdk = session(), session()
    auth = {"Authorization": f"Bearer {plain['token']}"}
    # httpx's own defaults: every timeout 5 s.
    plain_http = httpx2.AsyncClient(headers=auth)
    check(plain_http.timeout.read == 5.0, f"httpx's default read timeout: {plain_http.timeout}")
    # The SDK's own client, with the SDK's defaults.
    sdk_http = create_mcp_http_client(headers={"Authorization": f"Bearer {sdk['token']}"})
    progress = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    (plain_result, plain_waited), (sdk_result, sdk_waited), _, _ = await asyncio.gather(
        call_with(plain_http, plain["mcp"]["github"], "scout/waited-plain"),
        call_with(sdk_http, sdk["mcp"]["github"], "scout/waited-sdk", on_progress),
        a_person(plain["id"], "scout/waited-plain", OPTS.answer_after),
        a_person(sdk["id"], "scout/waited-sdk", OPTS.answer_after),
    )
    check(not plain_result.is_error, f"the plain client got the result: {text_of(plain_result)}")
    check(not sdk_result.is_error, f"the SDK's client got the result: {text_of(sdk_result)}")
    check(plain_waited >= OPTS.answer_after, f"it waited for the person ({plain_waited:.1f}s)")
    check(len(progress) >= OPTS.answer_after / 4, f"progress while waiting: {progress}")
    check(all(m == "waiting for a person to decide" for _, m in progress), f"{progress}")
    check([v for v, _ in progress] == sorted(v for v, _ in progress), "progress only grows")

    # A client that goes away while it waits: its approval is withdrawn.
    gone = session()
    gone_http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {gone['token']}"})
    task = asyncio.create_task(call_with(gone_http, gone["mcp"]["github"], "scout/went-away"))
    approval = await pending(gone["id"], "scout/went-away")
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Exception):
        pass
    for _ in range(500):
        _, body = admin("GET", f"/v1/approvals?session={gone['id']}")
        if not body["pending"]:
            break
        await asyncio.sleep(0.02)
    check(body["pending"] == [], f"withdrawn once the client went away: {body}")
    status, _ = admin("POST", f"/v1/approvals/{approval['id']}", {"approve": True})
    check(status == 409, f"a person answering later finds nothing to decide: {status}")
    _, trace = admin("GET", f"/v1/trace?session={gone['id']}")
    check(any(e["rule"] == "approval_withdrawn" for e in trace["events"]), "traced as withdrawn")
    print(json.dumps({"ok": True, "plain_waited": round(plain_waited, 1),
                      "sdk_waited": round(sdk_waited, 1), "progress": len(progress)}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
