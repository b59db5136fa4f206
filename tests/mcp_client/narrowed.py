"""A session its orchestrator narrowed (issue 39), told by the official
Python MCP client against the real `serve` binary: two sessions of the same
brand and role opened at the same time, one narrowed to two GitHub reads;
the narrowed one lists and runs only those, a call to another tool is
refused as not offered and counted so, its allowlist and agent config
follow the narrowing, and a selection naming what the session could not
be given is refused with nothing opened.

Driven by host/tests/all/mcp_serve.rs:

    python3 narrowed.py --base URL --admin-token T --github-token G

Prints one JSON summary line on success.
"""

import argparse
import asyncio
import datetime
import json
import sys

from mcp.shared.exceptions import MCPError
from scout_mcp import Mcp, admin_api_status, check, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--github-token", required=True)
OPTS = ARGS.parse_args()

SELECTED = ["mcp__github__github_read_file", "mcp__github__github_list_branches"]


admin = admin_api_status(OPTS.base, OPTS.admin_token)


async def main():
    summary = {}
    status, _ = admin("PUT", "/v1/brands/acme/connections/github", {"secret": OPTS.github_token})
    check(status == 200, "connection stored")
    status, whole = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201, f"the whole session: {status} {whole}")
    status, narrow = admin("POST", "/v1/sessions", {
        "brand": "acme", "role": "person-chat", "connectors": ["github"], "tools": SELECTED})
    check(status == 201, f"the narrowed session: {status} {narrow}")

    # The allowlist: the selected tools and the host's own, nothing else.
    connector_tools = [t for t in narrow["tools"] if not t.startswith("mcp__scout__")]
    check(sorted(connector_tools) == sorted(SELECTED), f"the narrowed allowlist: {narrow['tools']}")
    check(set(narrow["mcp"]) <= {"github", "scout"}, f"only GitHub's endpoint: {narrow['mcp']}")
    whole_github = [t for t in whole["tools"] if t.startswith("mcp__github__")]
    check(len(whole_github) > len(SELECTED) and set(SELECTED) < set(whole_github),
          f"the other session keeps everything: {whole['tools']}")
    status, config = admin("GET", f"/v1/sessions/{narrow['id']}/agent-config?format=claude-agent-sdk")
    check(status == 200 and sorted(config["tools"]) == sorted(narrow["tools"]),
          f"the agent config follows the narrowing: {config}")
    summary["whole"] = len(whole["tools"])
    summary["narrowed"] = len(narrow["tools"])

    async with Mcp(narrow["mcp"]["github"], narrow["token"]) as s:
        listed = sorted(t.name for t in (await s.list_tools()).tools)
        check(listed == sorted(n.split("__")[2] for n in SELECTED), f"tools/list: {listed}")
        read = await s.call_tool("github_read_file", {"owner": "octo", "repo": "hello", "path": "README.md"})
        check(not read.is_error, f"a selected read runs: {text_of(read)}")
        # As for any name the session lacks: a protocol error that says
        # only "not offered".
        try:
            refused = await s.call_tool("github_list_issues", {"owner": "octo", "repo": "hello"})
            raise AssertionError(f"an unselected tool was answered: {text_of(refused)}")
        except MCPError as e:
            check("not offered" in str(e) and "github_list_issues" not in str(e),
                  f"an unselected tool is not offered: {e}")
    async with Mcp(whole["mcp"]["github"], whole["token"]) as s:
        listed = [t.name for t in (await s.list_tools()).tools]
        check("github_list_issues" in listed, f"the other session, opened alongside, lists it: {listed}")

    # The trace: every unselected tool removed by its own rule; the refusal
    # counted as a tool not offered.
    status, trace = admin("GET", f"/v1/trace?session={narrow['id']}")
    check(status == 200, f"trace: {status}")
    events = trace["events"]
    not_selected = {e["tool"] for e in events if e["state"] == "removed" and e["rule"] == "not_selected"}
    check(set(whole_github) - set(SELECTED) <= not_selected,
          f"each unselected GitHub tool removed as not_selected: {sorted(not_selected)}")
    check(not (not_selected & set(SELECTED)), "nothing selected is removed")
    denied = [e for e in events if e["tool"] == "mcp__github__github_list_issues"
              and e["state"] in ("denied", "permission_denied")]
    check(len(denied) == 1 and denied[0]["rule"] == "not_selected", f"the refusal's rule: {denied}")
    lineage = denied[0]["detail"].get("lineage") or {}
    check(lineage.get("consequence") == "not_offered github a tool not offered" and lineage.get("repeat") == 1,
          f"counted as a tool not offered: {denied[0]}")
    summary["not_selected"] = len(not_selected)
    # The audit trail keeps what the orchestrator selected.
    opened = [e for e in events if e["state"] == "changed" and e["rule"] == "session_opened"]
    check(len(opened) == 1 and opened[0]["detail"]["after"]["tools"] == SELECTED
          and opened[0]["detail"]["after"]["connectors"] == ["github"], f"the selection, audited: {opened}")

    # A selection naming what the session could not be given: refused,
    # naming only what was sent; no session opened.
    status, before = admin("GET", "/v1/sessions")
    for body, named in [
        # A tool the role lacks (a read-only route has no GitHub tool).
        ({"role": "read-only", "tools": ["mcp__github__github_read_file"]}, "mcp__github__github_read_file"),
        ({"connectors": ["stripe"]}, "stripe"),
        ({"tools": ["mcp__github__github_delete_repository"]}, "mcp__github__github_delete_repository"),
        # A write whose operator switch is off: a whole session lists it,
        # refusing every call; a task is never narrowed to it.
        ({"tools": ["mcp__github__github_read_file", "mcp__github__github_create_branch"]},
         "mcp__github__github_create_branch"),
        ({"tools": []}, "`tools`"),
    ]:
        status, answer = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat", **body})
        check(status == 422 and answer["error"]["code"] == "invalid_selection", f"{body}: {status} {answer}")
        message = answer["error"]["message"]
        check(named in message and "nothing was opened" in message, f"{body}: {message}")
        if named == "mcp__github__github_create_branch":
            check("GITHUB_ALLOW_WRITES" in message, f"names the switch that is off: {message}")
            check("mcp__github__github_create_branch" in whole["tools"],
                  f"the whole session lists the switched-off write: {whole['tools']}")
        others = [t for t in whole_github if t != named]
        check(not any(t in message for t in others), f"names nothing it was not sent: {message}")
    status, after = admin("GET", "/v1/sessions")
    check(len(after["sessions"]) == len(before["sessions"]), "no session opened by a refused selection")

    # Limits on one session: its calls end at their count, and at its time.
    reads = 1  # the narrowed session's read above
    read_args = {"owner": "octo", "repo": "hello", "path": "README.md"}
    status, counted = admin("POST", "/v1/sessions", {
        "brand": "acme", "role": "person-chat", "tools": SELECTED, "max_calls": 2})
    check(status == 201 and counted["limits"] == {"max_calls": 2}, f"a counted session: {status} {counted}")
    async with Mcp(counted["mcp"]["github"], counted["token"]) as s:
        for _ in range(2):
            read = await s.call_tool("github_read_file", read_args)
            check(not read.is_error, f"within its calls: {text_of(read)}")
            reads += 1
        third = await s.call_tool("github_read_file", read_args)
        check(third.is_error and "session calls used up" in text_of(third), f"past its calls: {text_of(third)}")
    async with Mcp(counted["mcp"]["scout"], counted["token"]) as s:
        budget = (await s.call_tool("scout_budget", {})).structured_content
        check(budget["session"]["calls_left"] == 0 and budget["session"]["max_calls"] == 2,
              f"scout_budget shows the session's limits: {budget}")
    ends = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)
    status, timed = admin("POST", "/v1/sessions", {
        "brand": "acme", "role": "person-chat", "tools": SELECTED,
        "expires_at": ends.isoformat().replace("+00:00", "Z")})
    check(status == 201 and timed["limits"]["expires_at_ms"] > 0, f"a timed session: {status} {timed}")
    async with Mcp(timed["mcp"]["github"], timed["token"]) as s:
        read = await s.call_tool("github_read_file", read_args)
        check(not read.is_error, f"before its end: {text_of(read)}")
        reads += 1
        # Past the end the session itself set (not a timing assertion: it
        # waits for the clock to pass it).
        while datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000 <= timed["limits"]["expires_at_ms"] + 50:
            await asyncio.sleep(0.1)
        late = await s.call_tool("github_read_file", read_args)
        check(late.is_error and "session expired" in text_of(late), f"after its end: {text_of(late)}")
    status, trace = admin("GET", f"/v1/trace?session={counted['id']}")
    rules = [e["rule"] for e in trace["events"] if e["state"] == "denied"]
    check(rules == ["session_calls_exhausted"], f"the count's own rule: {rules}")
    status, trace = admin("GET", f"/v1/trace?session={timed['id']}")
    rules = [e["rule"] for e in trace["events"] if e["state"] == "denied"]
    check(rules == ["session_expired"], f"the time's own rule: {rules}")
    past = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)).isoformat()
    beyond = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=30)).isoformat()
    for body, said in [({"max_calls": 0}, "1 or more"), ({"expires_at": past}, "already passed"),
                       ({"expires_at": beyond}, "after the session's own end"), ({"expires_at": "soon"}, "RFC 3339")]:
        status, answer = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat", **body})
        check(status == 422 and answer["error"]["code"] == "invalid_limits" and said in answer["error"]["message"],
              f"{body}: {status} {answer}")
    summary["reads_sent"] = reads
    print(json.dumps({"ok": True, **summary}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
