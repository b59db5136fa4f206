"""A connector that is not in the seed catalogue, served by the real `serve`.

Driven by host/tests/all/plugin_connector.rs, which scaffolds a connector with
`scout-host new`, builds it, starts a loopback fake of its upstream and the
real `scout-host serve`, then runs this script with the official Python MCP
client:

    python3 plugin.py --base URL --admin-token T --connector NAME --secret S

It asserts, step by step: the connector's tools reach person chat after an
operator reviews them; a read runs and returns structured content matching
its output schema; a write asks a person and runs once approved; a request
outside the tool's declared routes is denied; and a specialist granted the
connector gets only the read its component declares grantable. The Rust
test checks the upstream's side (what was, and was not, sent). Prints one
JSON summary line on success.
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
ARGS.add_argument("--connector", required=True)
ARGS.add_argument("--secret", required=True)
OPTS = ARGS.parse_args()
NAME = OPTS.connector.replace("-", "_")
GET_ITEM, CREATE_NOTE, PEEK = f"{NAME}_get_item", f"{NAME}_create_note", f"{NAME}_peek"


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


async def approve_when_asked(session_id, tool, seen):
    """A person, through the approvals API: sees the call's arguments and approves it."""
    for _ in range(300):
        status, body = admin("GET", f"/v1/approvals?session={session_id}")
        check(status == 200, f"approvals list: {status} {body}")
        for a in body["pending"]:
            check(a["tool"] == tool, f"the approval is for {tool}: {a}")
            check(a["arguments"]["body"] == "Needs a ladder", f"the approval shows the arguments: {a}")
            status, reply = admin("POST", f"/v1/approvals/{a['id']}", {"approve": True, "by": "person via API"})
            check(status == 200, f"approve: {status} {reply}")
            seen.append(a["id"])
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no approval request appeared")


async def main():
    summary = {}
    status, body = admin("PUT", f"/v1/brands/acme/connections/{OPTS.connector}", {"secret": OPTS.secret})
    check(status == 200, f"a connection for a connector outside the seed is stored: {status} {body}")

    # An operator reviews the new connector's tools before any session sees them.
    status, reviews = admin("GET", "/v1/reviews")
    check(status == 200 and OPTS.connector in reviews["connectors"], f"reviews list the new connector: {reviews}")
    for t in reviews["connectors"][OPTS.connector]:
        status, _ = admin("POST", "/v1/reviews", {"connector": OPTS.connector, "tool": t["tool"], "digest": t["digest"], "by": "operator"})
        check(status == 200, "review approved")

    status, chat = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201 and set(chat["mcp"]) == {OPTS.connector, "scout"}, f"person chat session: {status} {chat}")
    async with Mcp(chat["mcp"][OPTS.connector], chat["token"]) as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        check(set(listed) == {GET_ITEM, CREATE_NOTE, PEEK}, f"person chat lists every tool: {sorted(listed)}")
        out = listed[GET_ITEM].output_schema
        check(out and out["type"] == "object" and {"id", "title", "priority"} <= set(out["properties"]), f"output schema: {out}")
        check(listed[CREATE_NOTE].annotations.read_only_hint is False, "the write is not marked read-only")
        summary["person_chat_tools"] = sorted(listed)

        read = await s.call_tool(GET_ITEM, {"id": "42"})
        check(not read.is_error, f"the read runs: {text_of(read)}")
        check(read.structured_content["title"] == "Fix the roof", f"structured content: {read.structured_content}")
        check(read.structured_content["priority"] == "high", f"enum in structured content: {read.structured_content}")
        check(OPTS.secret not in text_of(read), "no secret in a result")

        seen = []
        # The call waits for a person; the person answers. A failure of
        # either ends the script at once.
        _, wrote = await asyncio.gather(
            approve_when_asked(chat["id"], f"mcp__{OPTS.connector}__{CREATE_NOTE}", seen),
            s.call_tool(CREATE_NOTE, {"item-id": "42", "body": "Needs a ladder"}),
        )
        check(not wrote.is_error and seen, f"the write ran after a person approved it: {text_of(wrote)}")
        check(wrote.structured_content["item-id"] == "42", f"the note: {wrote.structured_content}")

        peek = await s.call_tool(PEEK, {"path": "/admin/keys"})
        check(peek.is_error and "route not declared" in text_of(peek), f"an undeclared route is denied: {text_of(peek)}")
        summary["undeclared"] = text_of(peek)

    # A specialist granted the connector: only the read its component declares grantable.
    limits = {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 0}
    profile = {"name": "notes-reader", "tools": ["Read"], "grant": {"connectors": [OPTS.connector]}, "limits": limits}
    status, body = admin("PUT", "/v1/brands/acme/profiles/notes-reader", {"kind": "coworker", "profile": profile})
    check(status == 200, f"a grant of the new connector is saved: {status} {body}")
    status, spec = admin("POST", "/v1/sessions", {"brand": "acme", "role": "specialist", "profile": "notes-reader"})
    check(status == 201, f"specialist session: {status} {spec}")
    async with Mcp(spec["mcp"][OPTS.connector], spec["token"]) as s:
        names = sorted(t.name for t in (await s.list_tools()).tools)
        check(names == [GET_ITEM], f"a grant covers only the declared-grantable read: {names}")
        summary["specialist_tools"] = names

    status, body = admin("GET", f"/v1/trace?session={chat['id']}")
    states = [(e["state"], e.get("rule")) for e in body["events"] if (e.get("tool") or "").endswith(CREATE_NOTE)]
    check(("allowed", "approved_by_person") in states, f"the trace shows the person's approval: {states}")
    summary["ok"] = True
    print(json.dumps(summary))


try:
    asyncio.run(main())
except Exception as e:
    print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(1)
