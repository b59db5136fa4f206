"""A role of the operator's own (issue 56 item 3), told by the official
Python MCP client against the real `serve` binary: `triage`, declared in
the configuration on the seed's specialist role and limited to two GitHub
reads, is offered exactly those; a GitHub read its base would have had is
refused as not offered and traced as removed by the operator role's
ceiling; its limit caps what an orchestrator asks for; a plain specialist
session from the same profile, opened alongside, keeps its whole surface.

Driven by host/tests/all/operator_roles.rs:

    python3 operator_roles.py --base URL --admin-token T --github-token G

Prints one JSON summary line on success.
"""

import argparse
import asyncio
import json
import sys
import urllib.request

from mcp.shared.exceptions import MCPError
from scout_mcp import Mcp, admin_api_status, check, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--github-token", required=True)
OPTS = ARGS.parse_args()

CEILING = ["mcp__github__github_list_issues", "mcp__github__github_read_file"]
PROFILE = {
    "name": "triager",
    "tools": ["Read"],
    "grant": {"connectors": ["github"]},
    "limits": {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 0},
}
READ = {"owner": "octo", "repo": "hello", "path": "README.md"}

admin = admin_api_status(OPTS.base, OPTS.admin_token)


async def main():
    summary = {}
    status, _ = admin("PUT", "/v1/brands/acme/connections/github", {"secret": OPTS.github_token})
    check(status == 200, "connection stored")
    status, saved = admin("PUT", "/v1/brands/acme/profiles/triager", {"kind": "coworker", "profile": PROFILE})
    check(status == 200, f"profile saved: {status} {saved}")

    # The base role from the same profile, for comparison.
    status, whole = admin("POST", "/v1/sessions", {"brand": "acme", "role": "specialist", "profile": "triager"})
    check(status == 201, f"the specialist session: {status} {whole}")
    whole_github = sorted(t for t in whole["tools"] if t.startswith("mcp__github__"))
    check(set(CEILING) < set(whole_github) and "mcp__github__github_list_branches" in whole_github,
          f"the base role has more GitHub reads: {whole_github}")

    # The operator role: exactly its ceiling, its limit capping the asked one.
    status, triage = admin("POST", "/v1/sessions",
                           {"brand": "acme", "role": "triage", "profile": "triager", "max_calls": 10})
    check(status == 201, f"the triage session: {status} {triage}")
    check(triage["role"] == "triage", f"shown under its own name: {triage['role']}")
    offered = sorted(t for t in triage["tools"] if not t.startswith("mcp__scout__"))
    check(offered == CEILING, f"offered exactly the ceiling: {triage['tools']}")
    check(set(triage["mcp"]) <= {"github", "scout"}, f"only GitHub's endpoint: {triage['mcp']}")
    check(triage["limits"] == {"max_calls": 2}, f"the role's limit caps the asked 10: {triage['limits']}")
    summary["base_github_tools"] = len(whole_github)
    summary["offered"] = offered

    reads = 0
    async with Mcp(triage["mcp"]["github"], triage["token"]) as s:
        listed = sorted(t.name for t in (await s.list_tools()).tools)
        check(listed == sorted(n.split("__")[2] for n in CEILING), f"tools/list: {listed}")
        read = await s.call_tool("github_read_file", READ)
        check(not read.is_error, f"a read within the ceiling runs: {text_of(read)}")
        reads += 1
        # A read its base has, outside the ceiling: a protocol error that
        # says only "not offered", as for a name that never existed.
        try:
            refused = await s.call_tool("github_list_branches", {"owner": "octo", "repo": "hello"})
            raise AssertionError(f"a tool outside the ceiling was answered: {text_of(refused)}")
        except MCPError as e:
            check("not offered" in str(e) and "github_list_branches" not in str(e),
                  f"outside the ceiling is not offered: {e}")
        read = await s.call_tool("github_read_file", READ)
        check(not read.is_error, f"the second call runs: {text_of(read)}")
        reads += 1
        third = await s.call_tool("github_read_file", READ)
        check(third.is_error and "session calls used up" in text_of(third),
              f"past the role's max_calls: {text_of(third)}")
    async with Mcp(whole["mcp"]["github"], whole["token"]) as s:
        listed = [t.name for t in (await s.list_tools()).tools]
        check("github_list_branches" in listed, f"the base role's session lists it: {listed}")

    # The trace: each GitHub read of the base outside the ceiling removed
    # by the operator role's own rule; the refusal under it too.
    status, trace = admin("GET", f"/v1/trace?session={triage['id']}")
    check(status == 200, f"trace: {status}")
    events = trace["events"]
    by_role = {e["tool"] for e in events if e["state"] == "removed" and e["rule"] == "operator_role"}
    check(set(whole_github) - set(CEILING) <= by_role,
          f"each GitHub read outside the ceiling removed as operator_role: {sorted(by_role)}")
    check(not (by_role & set(CEILING)), "nothing in the ceiling is removed")
    denied = [e for e in events if e["tool"] == "mcp__github__github_list_branches"
              and e["state"] in ("denied", "permission_denied")]
    check(len(denied) == 1 and denied[0]["rule"] == "operator_role", f"the refusal's rule: {denied}")
    exhausted = [e["rule"] for e in events
                 if e["state"] == "denied" and e["tool"] == "mcp__github__github_read_file"]
    check(exhausted == ["session_calls_exhausted"], f"the limit's own rule: {exhausted}")
    summary["removed_by_role"] = len(by_role)

    # The audit of the role: its declaration, and only its ceiling's tools.
    status, audit = admin("GET", "/v1/audit?role=triage&brand=acme&profile=triager")
    check(status == 200, f"audit: {status} {audit}")
    declared = audit.get("operator_role") or {}
    check(declared.get("base") == "specialist" and declared.get("person_can_be_asked") is False
          and declared.get("ceiling", {}).get("tools") == CEILING
          and declared.get("limits") == {"max_calls": 2}, f"the audit shows the role: {declared}")
    audited = sorted([t["name"] for t in audit["tools"]] + [t["name"] for t in audit["other_tools"]])
    check(audited == CEILING, f"the audit's tools are the ceiling: {audited}")
    status, seed = admin("GET", "/v1/audit?role=specialist&brand=acme&profile=triager")
    check(status == 200 and "operator_role" not in seed, f"a seed role's audit is as it was: {seed.keys()}")
    req = urllib.request.Request(OPTS.base + "/v1/audit?role=triage&brand=acme&profile=triager&format=text")
    req.add_header("Authorization", f"Bearer {OPTS.admin_token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
    summary["audit_line"] = next((l for l in text.splitlines() if l.startswith("operator role")), None)
    check(summary["audit_line"] is not None, f"the text audit names the role: {text}")

    # An unknown role is refused naming the operator's roles beside the seed's.
    status, answer = admin("POST", "/v1/sessions", {"brand": "acme", "role": "janitor"})
    check(status in (400, 422) and "triage" in answer["error"]["message"]
          and "person-chat" in answer["error"]["message"], f"an unknown role: {status} {answer}")
    summary["reads_sent"] = reads
    print(json.dumps({"ok": True, **summary}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
