"""A write that needs a person's approval, asked the 2026-07-28 way: the
official Python client in stateless mode (`server/discover`, no session),
declaring form elicitation, gets an `input_required` result carrying the
approval's question and a `requestState`, asks its person (the elicitation
callback here) and retries the call with the answer (SEP-2322). The SDK's
`Client` drives the rounds itself; the edge cases are driven by hand on its
session with `allow_input_required=True`.

Driven by host/tests/all/input_required.rs:

    python3 input_required.py --base URL --admin-token T --github-token G

Prints one JSON summary line on success; the Rust test checks the fake
GitHub's side (which branches were created, and how many times).
"""

import argparse
import asyncio
import json

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult

from scout_mcp import admin_api, check, text_of

VERSION = "2026-07-28"
TOOL = "github_create_branch"

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--github-token", required=True)
OPTS = ARGS.parse_args()

admin = admin_api(OPTS.base, OPTS.admin_token)


def branch(name):
    return {"owner": "octo", "repo": "hello", "branch": name}


ACCEPT = {"approval": ElicitResult(action="accept", content={"approve": True})}


async def main():
    admin("PUT", "/v1/brands/acme/connections/github", {"secret": OPTS.github_token})
    for t in admin("GET", "/v1/reviews")["connectors"]["github"]:
        admin("POST", "/v1/reviews", {"connector": "github", "tool": t["tool"], "digest": t["digest"]})
    session = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    summary = {}
    asked = []
    answers = []

    async def elicitation(context, params):
        asked.append({"message": params.message, "schema": params.requested_schema})
        action = answers.pop(0)
        content = {"approve": True} if action == "accept" else None
        return ElicitResult(action=action, content=content)

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {session['token']}"}, timeout=60)
    transport = streamable_http_client(session["mcp"]["github"], http_client=http)
    async with Client(transport, elicitation_callback=elicitation, cache=None) as client:
        s = client.session
        check(s.protocol_version == VERSION, f"negotiated {s.protocol_version}")
        # Approved: the SDK asks the person and retries; the write runs once.
        answers.append("accept")
        approved = await client.call_tool(TOOL, branch("scout/ir-approved"))
        check(not approved.is_error, f"the approved write failed: {text_of(approved)}")
        summary["approved"] = text_of(approved)
        summary["question"] = asked[0]["message"]
        summary["schema"] = asked[0]["schema"]
        # Declined: refused, nothing runs.
        answers.append("decline")
        declined = await client.call_tool(TOOL, branch("scout/ir-declined"))
        check(declined.is_error, f"a declined write ran: {text_of(declined)}")
        summary["declined"] = text_of(declined)
        summary["asked"] = len(asked)

        # Replay: the same requestState answered twice runs once.
        first = await s.call_tool(TOOL, branch("scout/ir-replayed"), allow_input_required=True)
        check(isinstance(first, InputRequiredResult), f"asked: {first}")
        check(list(first.input_requests or {}) == ["approval"], f"one question: {first}")
        state = first.request_state
        summary["request_state_len"] = len(state)
        once = await s.call_tool(
            TOOL, branch("scout/ir-replayed"), input_responses=ACCEPT, request_state=state, allow_input_required=True
        )
        check(isinstance(once, CallToolResult) and not once.is_error, f"the answered write: {once}")
        again = await s.call_tool(
            TOOL, branch("scout/ir-replayed"), input_responses=ACCEPT, request_state=state, allow_input_required=True
        )
        check(isinstance(again, CallToolResult) and again.is_error, f"a replay ran: {again}")
        summary["replayed"] = text_of(again)

        # Altered arguments on the retry: refused, and the approval stays
        # pending (nothing decided).
        first = await s.call_tool(TOOL, branch("scout/ir-asked"), allow_input_required=True)
        check(isinstance(first, InputRequiredResult), f"asked: {first}")
        altered = await s.call_tool(
            TOOL, branch("scout/ir-altered"), input_responses=ACCEPT, request_state=first.request_state,
            allow_input_required=True,
        )
        check(isinstance(altered, CallToolResult) and altered.is_error, f"altered arguments ran: {altered}")
        summary["altered"] = text_of(altered)
        pending = admin("GET", f"/v1/approvals?session={session['id']}")["pending"]
        summary["pending_after_altered"] = [a["arguments"] for a in pending]

        # A requestState this host never gave: the protocol's error.
        try:
            await s.call_tool(
                TOOL, branch("scout/ir-asked"), input_responses=ACCEPT, request_state=state[:-2] + "AA",
                allow_input_required=True,
            )
            raise AssertionError("a forged requestState was taken")
        except MCPError as e:
            summary["forged"] = e.error.message
    await http.aclose()
    decisions = admin("GET", f"/v1/decisions?session={session['id']}")["decisions"]
    summary["decisions"] = sorted({(d["outcome"], d["by"]) for d in decisions})
    trace = admin("GET", f"/v1/trace?session={session['id']}")["events"]
    summary["decided_via"] = sorted(
        {(e.get("rule"), ((e.get("detail") or {}).get("actor") or {}).get("via")) for e in trace if e.get("state") == "decided"},
        key=str,
    )
    summary["refused"] = sorted({e.get("rule") for e in trace if e.get("state") == "denied"}, key=str)
    print(json.dumps(summary))


asyncio.run(main())
