"""The orchestrator's story, told by the official Python MCP client (`mcp`).

Driven by host/tests/all/mcp_serve.rs, which starts a fake GitHub API and the
real `scout-host serve` binary, then runs this script against it:

    python3 story.py --base http://127.0.0.1:PORT --admin-token T --github-token G

Every step asserts what it names; the script exits non-zero on the first
failure and prints one JSON summary line on success, which the Rust test
reads (it also checks the fake GitHub's side: which branches exist).
"""

import argparse
import asyncio
import json
import sys
import time
import urllib.error
import urllib.request

import httpx2
from scout_mcp import Mcp, text_of
import mcp.types as types

PERSON_CHAT_GITHUB = {
    "github_read_file", "github_list_path", "github_list_branches", "github_list_issues",
    "github_read_issue", "github_list_pull_requests", "github_read_pull_request",
    "github_create_branch", "github_commit_files", "github_open_pull_request", "github_comment",
}
READS = {n for n in PERSON_CHAT_GITHUB if "_read_" in n or "_list_" in n}

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--github-token", required=True)
ARGS.add_argument("--approval-timeout-ms", type=int, required=True)
OPTS = ARGS.parse_args()


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def admin(method, path, body=None, token=None, headers=None, raw=None):
    """One admin API request; returns (status, parsed JSON)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(OPTS.base + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {OPTS.admin_token if token is None else token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def error_code(reply):
    status, body = reply
    check(isinstance(body, dict) and set(body) == {"error"} and set(body["error"]) == {"code", "message"},
          f"error body has the stable shape: {body}")
    return status, body["error"]["code"]


def trace(session_id):
    status, body = admin("GET", f"/v1/trace?session={session_id}")
    check(status == 200, f"trace query: {status} {body}")
    return body["events"]


async def approve_when_asked(session_id, expect_tool, expect_branch, seen):
    """A person, through the approvals API: waits for the request, checks it shows the call, approves."""
    for _ in range(500):
        status, body = admin("GET", f"/v1/approvals?session={session_id}")
        check(status == 200, f"approvals list: {status}")
        for a in body["pending"]:
            check(a["tool"] == expect_tool, f"approval is for {expect_tool}: {a}")
            check(a["arguments"] and a["arguments"]["branch"] == expect_branch, f"approval shows the arguments: {a}")
            seen.append(a["id"])
            status, reply = admin("POST", f"/v1/approvals/{a['id']}", {"approve": True, "by": "person via API"})
            check(status == 200, f"approve: {status} {reply}")
            again = error_code(admin("POST", f"/v1/approvals/{a['id']}", {"approve": False, "by": "late"}))
            check(again == (409, "not_pending"), f"a decided approval cannot be decided again: {again}")
            return
        await asyncio.sleep(0.02)
    raise AssertionError("no approval request appeared")


async def main():
    summary = {}
    # --- the admin API's edges: token, Host header, JSON errors, size limit ---
    check(error_code(admin("GET", "/v1/health", token="wrong-token")) == (401, "unauthorized"), "wrong admin token refused")
    check(error_code(admin("GET", "/v1/health", headers={"Host": "evil.example:80"})) == (403, "host_not_allowed"),
          "foreign Host header refused")
    check(admin("GET", "/v1/health") == (200, {"ok": True}), "health with the admin token")
    check(error_code(admin("POST", "/v1/sessions", raw=b"{not json")) == (400, "invalid_json"), "malformed JSON refused")
    check(error_code(admin("POST", "/v1/sessions", {"brand": "acme", "role": 7})) == (400, "invalid_json"), "wrong type refused")
    check(error_code(admin("POST", "/v1/sessions", raw=b"{" + b" " * (2 << 20) + b"}")) == (413, "too_large"), "oversized body refused")
    check(error_code(admin("POST", "/v1/sessions", {"brand": "acme", "role": "admin"})) == (400, "bad_request"), "unknown role refused")
    check(error_code(admin("GET", "/v1/nowhere")) == (404, "not_found"), "unknown endpoint is a JSON 404")

    # --- a connection, stored sealed; the secret is never echoed ---
    status, body = admin("PUT", "/v1/brands/acme/connections/github", {"secret": OPTS.github_token})
    check(status == 200 and OPTS.github_token not in json.dumps(body), f"connection stored: {status} {body}")
    status, body = admin("GET", "/v1/brands/acme/connections")
    check(body["connections"] == [{"connector": "github", "source": "own"}], f"connections listed without secrets: {body}")
    check(OPTS.github_token not in json.dumps(body), "no secret in the listing")

    # --- discovery produces no authority: unreviewed tools are not offered ---
    status, unreviewed = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201, f"session before review: {status} {unreviewed}")
    check(not any(t.startswith("mcp__github__") for t in unreviewed["tools"]), "the allowlist leaves out held tools")
    async with Mcp(unreviewed["mcp"]["github"], unreviewed["token"]) as s:
        tools = (await s.list_tools()).tools
        check(tools == [], f"nothing offered before an operator reviews: {[t.name for t in tools]}")
    held = [e for e in trace(unreviewed["id"]) if e["state"] == "denied" and e["rule"] == "unreviewed_new"]
    check(len(held) == len(PERSON_CHAT_GITHUB), f"the trace says why each tool is held: {len(held)}")
    admin("DELETE", f"/v1/sessions/{unreviewed['id']}")

    status, reviews = admin("GET", "/v1/reviews")
    check(status == 200 and {t["status"] for t in reviews["connectors"]["github"]} == {"new"}, f"reviews: {reviews}")
    stale = error_code(admin("POST", "/v1/reviews", {"connector": "github", "tool": "github_read_file", "digest": "0" * 64, "by": "op"}))
    check(stale == (409, "stale_review"), f"a review of another digest does not approve: {stale}")
    for t in reviews["connectors"]["github"]:
        status, _ = admin("POST", "/v1/reviews", {"connector": "github", "tool": t["tool"], "digest": t["digest"], "by": "operator"})
        check(status == 200, "review approved")

    # --- profiles are validated when saved ---
    limits = {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 0}
    bad = {"name": "writer", "tools": ["mcp__github__github_create_branch"], "grant": {"connectors": ["github"]}, "limits": limits}
    check(error_code(admin("PUT", "/v1/brands/acme/profiles/writer", {"kind": "coworker", "profile": bad})) == (422, "invalid_profile"),
          "a profile asking for a write tool is refused when saved")
    check(error_code(admin("GET", "/v1/brands/acme/profiles/writer")) == (404, "not_found"), "the refused profile stored nothing")
    reader = {"name": "repo-reader", "tools": ["Read", "mcp__github__github_read_file"], "grant": {"connectors": ["github"]}, "limits": limits}
    status, body = admin("PUT", "/v1/brands/acme/profiles/repo-reader", {"kind": "coworker", "profile": reader})
    check(status == 200, f"profile saved: {status} {body}")
    status, body = admin("GET", "/v1/brands/acme/profiles/repo-reader")
    check(status == 200 and body["profile"]["name"] == "repo-reader", f"profile read back: {body}")

    # --- two roles, two surfaces ---
    status, chat = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201 and set(chat["mcp"]) == {"github", "scout"}, f"person chat session: {status} {chat}")
    check(chat["mcp"]["github"] == f"{OPTS.base}/mcp/{chat['id']}/github", "one endpoint per session and connector")
    check({f"mcp__github__{n}" for n in PERSON_CHAT_GITHUB} <= set(chat["tools"]), "the allowlist names the seed's MCP names")
    status, spec = admin("POST", "/v1/sessions", {"brand": "acme", "role": "specialist", "profile": "repo-reader"})
    check(status == 201 and set(spec["mcp"]) == {"github", "scout"}, f"specialist session: {status} {spec}")
    status, plain = admin("POST", "/v1/sessions", {"brand": "acme", "role": "coworker", "profile": "repo-reader"})
    check(error_code((status, plain)) == (400, "bad_request"), "a profile with a grant runs as a specialist, not a plain coworker")

    no_token = httpx2.post(chat["mcp"]["github"], json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers={"Authorization": f"Bearer {spec['token']}"})
    check(no_token.status_code == 401, f"another session's token does not open this endpoint: {no_token.status_code}")

    async with Mcp(chat["mcp"]["github"], chat["token"]) as s:
        listed = (await s.list_tools()).tools
        names = {t.name for t in listed}
        check(names == PERSON_CHAT_GITHUB, f"person chat lists exactly the GitHub tools: {sorted(names)}")
        by_name = {t.name: t for t in listed}
        check(by_name["github_read_file"].input_schema["properties"]["path"]["type"] == "string", "WIT-derived schema")
        check(by_name["github_create_branch"].annotations.read_only_hint is False, "writes are not marked read-only")
        summary["person_chat_tools"] = sorted(names)

        read = await s.call_tool("github_read_file", {"owner": "octo", "repo": "hello", "path": "README.md"})
        check(not read.is_error and "hello" in text_of(read).lower(), f"read call: {read}")
        check(OPTS.github_token not in text_of(read), "no secret in a result")

        bad_args = await s.call_tool("github_read_file", {"owner": "octo", "repo": 5, "path": "README.md"})
        check(bad_args.is_error, "arguments that do not fit the WIT type are refused")

        # Gated write, nobody answers: denied when the approval times out; no branch.
        started = time.monotonic()
        denied = await s.call_tool("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/unanswered"})
        waited = time.monotonic() - started
        check(denied.is_error and "approval_timed_out" in text_of(denied), f"unanswered write refused: {text_of(denied)}")
        check(waited >= OPTS.approval_timeout_ms / 1000 * 0.9, f"it waited for a person first ({waited:.2f}s)")

        # Gated write approved through the API while the call waits.
        seen = []
        person = asyncio.create_task(approve_when_asked(chat["id"], "mcp__github__github_create_branch", "scout/approved", seen))
        ok = await s.call_tool("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/approved"})
        await person
        check(not ok.is_error, f"approved write ran: {text_of(ok)}")
        check((await s.list_tools()).tools == listed, "results do not change the tool list")
        summary["approved_through_api"] = seen

    async with Mcp(spec["mcp"]["github"], spec["token"]) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        check(names == READS, f"the specialist lists exactly the GitHub reads: {sorted(names)}")
        summary["specialist_tools"] = sorted(names)
        read = await s.call_tool("github_read_file", {"owner": "octo", "repo": "hello", "path": "README.md"})
        check(not read.is_error, "specialist read call")
        try:
            await s.call_tool("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/specialist"})
            raise AssertionError("a tool not offered was called")
        except Exception as e:  # the SDK raises the JSON-RPC error
            check("permission_denied" in str(e), f"not offered: {e}")

    # --- elicitation: the client is asked, and its person answers ---
    asked = []

    async def person_says(answer):
        async def callback(context, params):
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={"approve": answer})
        return callback

    status, chat2 = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    async with Mcp(chat2["mcp"]["github"], chat2["token"], elicitation=await person_says(True)) as s:
        ok = await s.call_tool("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/elicited"})
        check(not ok.is_error, f"approved through elicitation: {text_of(ok)}")
        check(asked and "scout/elicited" in asked[-1] and "github_create_branch" in asked[-1], f"the question shows the call: {asked}")
    async with Mcp(chat2["mcp"]["github"], chat2["token"], elicitation=await person_says(False)) as s:
        no = await s.call_tool("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/declined"})
        check(no.is_error and "approval_denied" in text_of(no), f"declined through elicitation: {text_of(no)}")

    # --- the whole story in the trace ---
    events = trace(chat["id"])
    writes = [e for e in events if e["tool"] == "mcp__github__github_create_branch"]
    states = [(e["state"], e["rule"]) for e in writes]
    check(("denied", "approval_timed_out") in states, f"the unanswered write is denied in the trace: {states}")
    check(("allowed", "approved_by_person") in states, f"the approved write is allowed in the trace: {states}")
    check([s for s, _ in states].count("executed") == 1, f"only the approved write executed: {states}")
    check(any(e["state"] == "offered" for e in events), "the trace records what was offered")
    reads = [e["state"] for e in events if e["tool"] == "mcp__github__github_read_file"]
    check(reads[:4] == ["requested", "allowed", "executed", "result"], f"the read's states: {reads}")
    spec_events = trace(spec["id"])
    check(any(e["state"] == "permission_denied" and e["tool"] == "mcp__github__github_create_branch" for e in spec_events),
          "the specialist's attempt is a permission_denied event")
    summary["trace_states_for_write"] = states

    # --- ending a session ends its endpoints and authority ---
    status, _ = admin("DELETE", f"/v1/sessions/{chat['id']}")
    check(status == 200, "session ended")
    gone = httpx2.post(chat["mcp"]["github"], json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                       headers={"Authorization": f"Bearer {chat['token']}"})
    check(gone.status_code == 401, f"an ended session's token opens nothing: {gone.status_code}")
    check(error_code(admin("DELETE", f"/v1/sessions/{chat['id']}")) == (404, "not_found"), "ending twice is a 404")

    summary["ok"] = True
    print(json.dumps(summary))


try:
    asyncio.run(main())
except AssertionError as e:
    print(f"STORY FAILED: {e}", file=sys.stderr)
    sys.exit(1)
