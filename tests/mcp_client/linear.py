"""Linear in Python (connectors/linear), served by the real `serve`.

Driven by host/tests/all/linear_py.rs, which builds the connector from its
Python source, starts a loopback fake of Linear's GraphQL endpoint and the
real `scout-host serve`, then runs this script with the official Python MCP
client:

    python3 linear.py --base URL --admin-token T --secret KEY

It asserts, step by step: person chat lists the five tools, the filter as a
JSON value; reads run and return structured content; a comment asks a
person and runs once approved; an issue a person declines is not created;
an id carrying GraphQL text is refused by the connector. The Rust test
checks the upstream's side (what was, and was not, sent, and the key the
host injected). Prints one JSON summary line on success.
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
ARGS.add_argument("--secret", required=True)
OPTS = ARGS.parse_args()

ISSUES, ISSUE, TEAMS = "linear_issues", "linear_issue", "linear_teams"
CREATE_ISSUE, CREATE_COMMENT = "linear_create_issue", "linear_create_comment"
ENG = "9cfb482a-81e3-4154-b5b9-2c805e70a02d"
COMMENT = "Fixed by raising the tax lookup's timeout; see PR #88."


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


async def answer_when_asked(session_id, tool, approve, expect_arguments):
    """A person, through the approvals API: sees the call's arguments and answers."""
    for _ in range(300):
        status, body = admin("GET", f"/v1/approvals?session={session_id}")
        check(status == 200, f"approvals list: {status} {body}")
        for a in body["pending"]:
            check(a["tool"] == tool, f"the approval is for {tool}: {a}")
            for key, value in expect_arguments.items():
                check(a["arguments"].get(key) == value, f"the approval shows {key}: {a}")
            status, reply = admin("POST", f"/v1/approvals/{a['id']}", {"approve": approve, "by": "person via API"})
            check(status == 200, f"answer: {status} {reply}")
            return a["id"]
        await asyncio.sleep(0.05)
    raise AssertionError("no approval request appeared")


async def main():
    summary = {}
    status, body = admin("PUT", "/v1/brands/acme/connections/linear", {"secret": OPTS.secret})
    check(status == 200, f"a connection for Linear is stored: {status} {body}")
    status, chat = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201 and "linear" in chat["mcp"], f"person chat session: {status} {chat}")

    async with Mcp(chat["mcp"]["linear"], chat["token"]) as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        check(set(listed) == {ISSUES, ISSUE, TEAMS, CREATE_ISSUE, CREATE_COMMENT}, f"person chat lists every tool: {sorted(listed)}")
        schema = listed[ISSUES].input_schema["properties"]
        check(schema["filter"].get("type") != "string", f"the filter is a JSON value, not a string: {schema['filter']}")
        check(schema["first"]["minimum"] == 1 and schema["first"]["maximum"] == 50, f"first's range: {schema['first']}")
        check(listed[ISSUES].annotations.read_only_hint is True, "a read is marked read-only")
        check(listed[CREATE_ISSUE].annotations.read_only_hint is False, "a write is not marked read-only")
        summary["tools"] = sorted(listed)

        read = await s.call_tool(ISSUES, {"team-key": "ENG", "first": 2, "filter": {"state": {"type": {"eq": "started"}}}})
        check(not read.is_error, f"the issues read runs: {text_of(read)}")
        issues = read.structured_content["issues"]
        check([i["identifier"] for i in issues] == ["ENG-123"], f"the page: {read.structured_content}")
        check(OPTS.secret not in text_of(read), "no key in a result")

        one = await s.call_tool(ISSUE, {"id": "ENG-123"})
        check(not one.is_error, f"the issue read runs: {text_of(one)}")
        check(one.structured_content["labels"] == ["Bug"], f"the issue: {one.structured_content}")

        refused = await s.call_tool(ISSUE, {"id": 'ENG-1") { id } } mutation { issueDelete(id: "ENG-1'})
        check(refused.is_error and "invalid-input" in text_of(refused), f"a bad id is refused: {text_of(refused)}")

        # The comment waits for a person, who approves it.
        approved, wrote = await asyncio.gather(
            answer_when_asked(chat["id"], f"mcp__linear__{CREATE_COMMENT}", True, {"issue-id": "ENG-123", "body": COMMENT}),
            s.call_tool(CREATE_COMMENT, {"issue-id": "ENG-123", "body": COMMENT}),
        )
        check(not wrote.is_error, f"the comment was written after a person approved it: {text_of(wrote)}")
        check(wrote.structured_content["id"] == "f0e1d2c3-b4a5-4968-8778-695a4b3c2d1e", f"the comment: {wrote.structured_content}")
        summary["approved"] = approved

        # The issue waits for a person, who declines it: nothing is sent.
        declined, created = await asyncio.gather(
            answer_when_asked(chat["id"], f"mcp__linear__{CREATE_ISSUE}", False, {"team-id": ENG, "title": "Drop the payments table"}),
            s.call_tool(CREATE_ISSUE, {"team-id": ENG, "title": "Drop the payments table"}),
        )
        check(created.is_error, f"a declined write fails: {text_of(created)}")
        summary["declined"] = declined
        summary["declined_text"] = text_of(created)

    status, body = admin("GET", f"/v1/trace?session={chat['id']}")
    check(status == 200, f"trace: {status} {body}")
    comment = [(e["state"], e.get("rule")) for e in body["events"] if (e.get("tool") or "").endswith(CREATE_COMMENT)]
    check(("allowed", "approved_by_person") in comment, f"the trace shows the person's approval: {comment}")
    issue = [(e["state"], e.get("rule")) for e in body["events"] if (e.get("tool") or "").endswith(CREATE_ISSUE)]
    check(("decided", "denied") in issue and not any(s == "allowed" for s, _ in issue), f"the trace shows the person's refusal: {issue}")
    summary["ok"] = True
    print(json.dumps(summary))


try:
    asyncio.run(main())
except Exception as e:
    print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(1)
