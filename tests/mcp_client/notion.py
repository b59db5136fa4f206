"""The Notion connector, written in TypeScript, served by the real `serve`.

Driven by host/tests/all/notion_ts.rs, which builds connectors/notion with
`scout-host build`, starts a loopback fake of Notion's API and the real
`scout-host serve`, then runs this script with the official Python MCP
client:

    python3 notion.py --base URL --admin-token T --secret S

It asserts, step by step: the six tools reach person chat after an operator
reviews them; a search and a database query with a JSON filter run and
return structured content; creating a page asks a person, who sees the
page's properties as JSON (not an escaped string), and runs once approved;
appending blocks asks a person, who declines, and fails without running.
The Rust test checks the upstream's side (what was, and was not, sent).
Prints one JSON summary line on success.
"""

import argparse
import asyncio
import json
import sys

from scout_mcp import Mcp, admin_api_status, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--secret", required=True)
OPTS = ARGS.parse_args()
admin = admin_api_status(OPTS.base, OPTS.admin_token)

CONNECTOR = "notion"
TOOLS = {f"notion_{t}" for t in ("search", "get_page", "query_database", "list_block_children", "create_page", "append_blocks")}
DATABASE = "897e5a76ae524b48a6d40b46543ebcda"
PAGE = "59833787-2cf9-4fdf-8782-e53db20768a5"
FILTER = {"property": "Status", "status": {"equals": "Done"}}
PROPERTIES = {"Name": {"title": [{"text": {"content": "Purple sprouting broccoli"}}]}}
CHILDREN = [{"object": "block", "type": "paragraph", "paragraph": {"rich_text": [{"text": {"content": "Budget agreed."}}]}}]


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def answer_when_asked(session_id, tool, approve, check_arguments):
    """A person, through the approvals API: sees the call's arguments and answers."""
    for _ in range(300):
        status, body = admin("GET", f"/v1/approvals?session={session_id}")
        check(status == 200, f"approvals list: {status} {body}")
        for a in body["pending"]:
            check(a["tool"] == tool, f"the approval is for {tool}: {a}")
            check_arguments(a["arguments"])
            status, reply = admin("POST", f"/v1/approvals/{a['id']}", {"approve": approve, "by": "person via API"})
            check(status == 200, f"answer: {status} {reply}")
            return a
        await asyncio.sleep(0.05)
    raise AssertionError(f"no approval request for {tool} appeared")


def create_page_arguments(arguments):
    # A json parameter is shown to the person as the value it is, never as
    # an escaped string.
    check(arguments["parent-kind"] == "database", f"the approval shows the parent: {arguments}")
    check(arguments["properties"] == PROPERTIES, f"the approval shows the properties as JSON: {arguments}")


def append_blocks_arguments(arguments):
    check(arguments["children"] == CHILDREN, f"the approval shows the blocks as JSON: {arguments}")


async def main():
    summary = {}
    status, body = admin("PUT", f"/v1/brands/acme/connections/{CONNECTOR}", {"secret": OPTS.secret})
    check(status == 200, f"the Notion connection is stored: {status} {body}")

    # An operator reviews the connector's tools before any session sees them.
    status, reviews = admin("GET", "/v1/reviews")
    check(status == 200 and CONNECTOR in reviews["connectors"], f"reviews list Notion: {reviews}")
    for t in reviews["connectors"][CONNECTOR]:
        status, _ = admin("POST", "/v1/reviews", {"connector": CONNECTOR, "tool": t["tool"], "digest": t["digest"], "by": "operator"})
        check(status == 200, "review approved")

    status, chat = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201 and CONNECTOR in chat["mcp"], f"person chat session: {status} {chat}")
    async with Mcp(chat["mcp"][CONNECTOR], chat["token"]) as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        check(set(listed) == TOOLS, f"person chat lists every Notion tool: {sorted(listed)}")
        check(listed["notion_search"].annotations.read_only_hint is True, "search is marked read-only")
        check(listed["notion_create_page"].annotations.read_only_hint is False, "create-page is not read-only")
        schema = listed["notion_query_database"].input_schema["properties"]["filter"]
        check(schema.get("type") != "string", f"the filter's schema is any JSON value, not a string: {schema}")
        summary["tools"] = sorted(listed)

        found = await s.call_tool("notion_search", {"query": "grocery", "object": "database"})
        check(not found.is_error, f"search runs: {text_of(found)}")
        check(found.structured_content["results"][0]["title"] == "Grocery list", f"search's results: {found.structured_content}")
        check(OPTS.secret not in text_of(found), "no secret in a result")

        rows = await s.call_tool("notion_query_database", {"database-id": DATABASE, "filter": FILTER, "page-size": 10})
        check(not rows.is_error, f"the query runs: {text_of(rows)}")
        row = rows.structured_content["results"][0]
        check(row["title"] == "Tuscan kale", f"the query's pages: {rows.structured_content}")
        check({"name": "Status", "kind": "status", "text": "Done"} in row["properties"], f"a page's properties as text: {row}")
        summary["query"] = row["title"]

        asked, created = await asyncio.gather(
            answer_when_asked(chat["id"], "mcp__notion__notion_create_page", True, create_page_arguments),
            s.call_tool("notion_create_page", {"parent-kind": "database", "parent-id": DATABASE, "properties": PROPERTIES}),
        )
        check(not created.is_error, f"the page was created after a person approved it: {text_of(created)}")
        check(created.structured_content["title"] == "Purple sprouting broccoli", f"the new page: {created.structured_content}")
        summary["approved"] = asked["id"]

        asked, appended = await asyncio.gather(
            answer_when_asked(chat["id"], "mcp__notion__notion_append_blocks", False, append_blocks_arguments),
            s.call_tool("notion_append_blocks", {"block-id": PAGE, "children": CHILDREN}),
        )
        check(appended.is_error, f"the declined append fails: {text_of(appended)}")
        summary["declined"] = text_of(appended)[:200]

    status, body = admin("GET", f"/v1/trace?session={chat['id']}")
    check(status == 200, f"trace: {status} {body}")
    by_tool = {}
    for e in body["events"]:
        by_tool.setdefault(e.get("tool") or "", []).append((e["state"], e.get("rule")))
    created_states = by_tool.get("mcp__notion__notion_create_page", [])
    check(("allowed", "approved_by_person") in created_states, f"the trace shows the person's approval: {created_states}")
    appended_states = by_tool.get("mcp__notion__notion_append_blocks", [])
    check(("decided", "denied") in appended_states, f"the trace shows the person's refusal: {appended_states}")
    check(not any(state == "allowed" for state, _ in appended_states), f"the declined append was never allowed: {appended_states}")
    summary["ok"] = True
    print(json.dumps(summary))


try:
    asyncio.run(main())
except Exception as e:
    print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(1)
