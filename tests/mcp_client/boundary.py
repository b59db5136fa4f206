"""The boundary an agent works against (seed 003), told by the official Python
MCP client against the real `serve` binary: a refused write asked again in
other words gets the clearer constraint, the third time pauses the session,
a person resumes it; and the session's budget through `mcp__scout__scout_budget`.

Driven by host/tests/all/mcp_serve.rs:

    python3 boundary.py --base URL --admin-token T --github-token G

Prints one JSON summary line on success.
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
ARGS.add_argument("--github-token", required=True)
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


async def main():
    summary = {}
    status, _ = admin("PUT", "/v1/brands/acme/connections/github", {"secret": OPTS.github_token})
    check(status == 200, "connection stored")
    status, chat = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201, f"session: {status} {chat}")

    # --- a refused write asked again, in other words: constrained, then paused ---
    async with Mcp(chat["mcp"]["github"], chat["token"]) as s:
        told = []
        for branch in ["scout/one", "scout/two", "scout/three"]:
            result = await s.call_tool("github_create_branch", {"owner": "octo", "repo": "hello", "branch": branch})
            check(result.is_error, f"writes are switched off: {text_of(result)}")
            told.append(json.loads(text_of(result)))
        check("asking again" not in told[0]["message"], f"the first refusal is plain: {told[0]}")
        check("asking again, or asking in other words or with another tool, will not change it" in told[1]["message"]
              and told[1]["repeated"] == 2, f"the second is the clearer constraint: {told[1]}")
        check(told[2]["paused"] is True and "now paused" in told[2]["message"], f"the third pauses: {told[2]}")
        read = await s.call_tool("github_read_file", {"owner": "octo", "repo": "hello", "path": "README.md"})
        check(read.is_error and "session_paused" in text_of(read), f"paused: even a read is refused: {text_of(read)}")
        status, body = admin("POST", f"/v1/sessions/{chat['id']}/resume")
        check(status == 200 and body["resumed"] is True, f"resumed: {status} {body}")
        read = await s.call_tool("github_read_file", {"owner": "octo", "repo": "hello", "path": "README.md"})
        check(not read.is_error, f"after the person resumed it, the read runs: {text_of(read)}")
        summary["lineage"] = [t.get("repeated", 1) for t in told]

    # --- the budget the agent can see ---
    status, spender = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check("mcp__scout__scout_budget" in spender["tools"], f"the budget tool is allowlisted: {spender['tools']}")
    async with Mcp(spender["mcp"]["scout"], spender["token"]) as s:
        result = await s.call_tool("scout_budget", {})
        check(not result.is_error, f"budget: {text_of(result)}")
        budget = result.structured_content
        (line,) = [c for c in budget["connectors"] if c["connector"] == "capabilities"]
        check(line["unit"] == "credits" and line["run_left"] == 50 and line["day_left"] == 200,
              f"the run's and the day's figures: {budget}")
        summary["budget"] = line
    print(json.dumps({"ok": True, **summary}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
