"""Operators' Cedar policies (issue 56), told by the official Python MCP
client against the real `serve` binary with the policies of
host/tests/all/policy_rules.rs in force:

- `branches-under-scout` refuses `github_create_branch` for `main2` before
  any person is asked, and `scout/x` asks a person (the seed's gate) and runs;
- `no-branch-listing` forbids `github_list_branches` whatever its
  arguments: absent from tools/list;
- `readme-asks` (`@ask_person`) turns a read of README.md into a person's
  approval, and in a role with nobody to ask refuses it;
- `mail-own-domain` refuses an AgentMail send to another domain and lets
  one to our own ask and run;
- the trace names the policy id and the revision in force.

Driven by host/tests/all/policy_rules.rs:

    python3 policy_rules.py --base URL --admin-token T --github-token G

Prints one JSON summary line on success.
"""

import argparse
import asyncio
import json
import sys

from mcp import types
from mcp.shared.exceptions import MCPError
from scout_mcp import Mcp, admin_api_status, check, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--github-token", required=True)
OPTS = ARGS.parse_args()

admin = admin_api_status(OPTS.base, OPTS.admin_token)
REPO = {"owner": "octo", "repo": "hello"}
PROFILE = {
    "name": "reader",
    "tools": ["Read"],
    "grant": {"connectors": ["github"]},
    "limits": {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 0},
}


async def main():
    summary = {}
    for connector, secret in [("github", OPTS.github_token), ("agentmail", "am_policyRulesKey0123456789")]:
        status, body = admin("PUT", f"/v1/brands/acme/connections/{connector}", {"secret": secret})
        check(status == 200, f"{connector} connection stored: {status} {body}")
    status, chat = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201, f"session: {status} {chat}")

    asked = []

    async def person_approves(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with Mcp(chat["mcp"]["github"], chat["token"], elicitation=person_approves) as s:
        listed = sorted(t.name for t in (await s.list_tools()).tools)
        check("github_list_branches" not in listed, f"forbidden for every value: absent: {listed}")
        check("github_create_branch" in listed and "github_read_file" in listed, f"the rest offered: {listed}")
        summary["listed"] = len(listed)
        try:
            listing = await s.call_tool("github_list_branches", REPO)
            raise AssertionError(f"an absent tool was answered: {text_of(listing)}")
        except MCPError as e:
            check("not offered" in str(e) or "permission_denied" in str(e), f"absent: not offered: {e}")

        refused = await s.call_tool("github_create_branch", {**REPO, "branch": "main2"})
        check(refused.is_error, f"main2 refused: {text_of(refused)}")
        told = text_of(refused)
        check("operator policy" in told and "branches-under-scout" in told, f"told the policy: {told}")
        check(not asked, f"nobody was asked about a refused call: {asked}")
        summary["told"] = told

        created = await s.call_tool("github_create_branch", {**REPO, "branch": "scout/x"})
        check(not created.is_error, f"scout/x runs once a person approves: {text_of(created)}")
        check(len(asked) == 1 and "scout/x" in asked[0], f"the seed's gate asked: {asked}")

        read = await s.call_tool("github_read_file", {**REPO, "path": "README.md"})
        check(not read.is_error, f"the asked read runs once approved: {text_of(read)}")
        check(len(asked) == 2 and "README.md" in asked[1], f"@ask_person asked about the read: {asked}")
        other = await s.call_tool("github_read_file", {**REPO, "path": "docs/guide.md"})
        check(len(asked) == 2, f"another read asks nobody: {asked} {text_of(other)}")

    async with Mcp(chat["mcp"]["agentmail"], chat["token"], elicitation=person_approves) as s:
        send = {"inbox-id": "team@scout.test", "subject": "hello", "text": "hi"}
        outside = await s.call_tool("agentmail_send_message", {**send, "to": ["someone@elsewhere.org"]})
        check(outside.is_error and "mail-own-domain" in text_of(outside), f"outside refused: {text_of(outside)}")
        check(len(asked) == 2, f"nobody asked about the refused send: {asked}")
        inside = await s.call_tool("agentmail_send_message", {**send, "to": ["lead@scout.test"]})
        check(len(asked) == 3 and "lead@scout.test" in asked[2], f"the send inside asked and ran: {asked} {text_of(inside)}")
        summary["inside_send_error"] = inside.is_error

    # A role with nobody to ask: the asked read is refused.
    status, saved = admin("PUT", "/v1/brands/acme/profiles/reader", {"kind": "coworker", "profile": PROFILE})
    check(status == 200, f"profile saved: {status} {saved}")
    status, spec = admin("POST", "/v1/sessions", {"brand": "acme", "role": "specialist", "profile": "reader"})
    check(status == 201, f"specialist session: {status} {spec}")
    async with Mcp(spec["mcp"]["github"], spec["token"]) as s:
        nobody = await s.call_tool("github_read_file", {**REPO, "path": "README.md"})
        told = text_of(nobody)
        check(nobody.is_error and "readme-asks" in told and "nobody to ask" in told, f"nobody to ask: {told}")

    status, body = admin("GET", f"/v1/trace?session={chat['id']}")
    check(status == 200, f"trace: {status} {body}")
    events = body["events"]
    (denied,) = [e for e in events if e["state"] == "denied" and e.get("rule") == "operator_policy"
                 and e["tool"] == "mcp__github__github_create_branch"]
    check(denied["detail"]["policy"] == "branches-under-scout", f"the row names the policy: {denied}")
    revision = denied["detail"]["policy_revision"]
    check(revision.startswith("r0-") and len(revision) == 15, f"and the revision: {revision}")
    decisions = [e["detail"]["policy"] for e in events if e["state"] == "requested" and e.get("rule") is None
                 and "policy" in e.get("detail", {})]
    check(all(d["policy_revision"] == revision for d in decisions), f"every decision names it: {decisions}")
    check("args" not in decisions[0]["facts"] and decisions[0]["facts"]["principal"]["session"] == chat["id"],
          f"the facts without arguments: {decisions[0]}")
    summary["decisions"] = sorted(d["decision"] for d in decisions)
    (removed,) = [e for e in events if e["state"] == "removed" and e["tool"] == "mcp__github__github_list_branches"]
    check(removed["rule"] == "operator_policy" and removed["detail"]["policy"] == "no-branch-listing",
          f"the absent tool is traced as removed by the policy: {removed}")
    summary["revision"] = revision
    print(json.dumps({"ok": True, **summary}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
