"""The official Python client in stateless mode (protocol 2026-07-28:
`discover()`, no `Mcp-Session-Id`) through a balancer with no affinity in
front of several `serve` hosts: every request may land on any host.

Each answer is validated by the SDK against its 2026-07-28 wire types
(`mcp_types`): `tools/list` and `tools/call` by the client session itself
(it raises on a result that does not conform), `server/discover` here with
the same function. It lists and calls on every endpoint it is given: a
component's read, a gated write approved through the admin API (which this
script does itself, once the approval is pending), the host's own `scout`
tools, and a remote MCP server's tool.

Driven by host/tests/all/fleet_clients.rs:

    python3 fleet_stateless.py --base URL --admin-token T --token SESSION_TOKEN \
        --session ID --github URL --scout URL [--remote URL] [--rounds N]

Prints one JSON summary line on success.
"""

import argparse
import asyncio
import json

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import methods

from scout_mcp import admin_api, check, text_of

VERSION = "2026-07-28"

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True, help="the admin API, through the balancer")
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--token", required=True)
ARGS.add_argument("--session", required=True)
ARGS.add_argument("--github", required=True, help="the session's github endpoint")
ARGS.add_argument("--scout", required=True, help="the session's scout endpoint (the host's own tools)")
ARGS.add_argument("--remote", help="the session's endpoint of a remote MCP server offering `echo`")
ARGS.add_argument("--rounds", type=int, default=4, help="lists and reads, each on whichever host")
OPTS = ARGS.parse_args()

admin = admin_api(OPTS.base, OPTS.admin_token)


class Stateless:
    """A client session in stateless mode on one endpoint: `discover()`
    instead of `initialize()`, its answer validated as the SDK validates
    every other result."""

    def __init__(self, url, elicitation=None):
        self.url, self.elicitation = url, elicitation

    async def __aenter__(self):
        self.http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {OPTS.token}"}, timeout=60)
        self.transport = streamable_http_client(self.url, http_client=self.http)
        read, write = await self.transport.__aenter__()
        self.session = ClientSession(read, write, elicitation_callback=self.elicitation)
        await self.session.__aenter__()
        raw = await self.session.send_discover(VERSION)
        # Raises pydantic's ValidationError on anything 2026-07-28 does not allow.
        methods.validate_server_result("server/discover", VERSION, raw)
        discovered = await self.session.discover()
        check(self.session.protocol_version == VERSION, f"negotiated {self.session.protocol_version}")
        check(discovered.cache_scope == "private", f"discover's cacheScope: {raw}")
        return self.session

    async def __aexit__(self, *exc):
        await self.session.__aexit__(*exc)
        await self.transport.__aexit__(*exc)
        await self.http.aclose()


async def tools_of(session):
    listed = await session.list_tools()
    return sorted(t.name for t in listed.tools)


async def approve_when_pending():
    for _ in range(3000):
        pending = admin("GET", f"/v1/approvals?session={OPTS.session}")["pending"]
        if pending:
            admin("POST", f"/v1/approvals/{pending[0]['id']}", {"approve": True})
            return pending[0]["tool"]
        await asyncio.sleep(0.05)
    raise AssertionError("no approval was asked for")


# Every other request a 2026-07-28 client may send, with what it names.
OTHER_REQUESTS = [
    ("prompts/list", {}),
    ("prompts/get", {"name": "nothing"}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "file:///nothing"}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "nothing"}, "argument": {"name": "a", "value": ""}}),
    ("subscriptions/listen", {}),
    # Not methods of 2026-07-28 at all.
    ("ping", {}),
    ("initialize", {}),
    ("no/such/method", {}),
]


async def other_answers(url):
    """Each of `OTHER_REQUESTS` sent as the SDK stamps a 2026-07-28 request,
    its answer validated: a result against the method's 2026-07-28 wire type,
    an error against the JSON-RPC error's. Returns what each was answered."""
    import mcp_types._v2026_07_28 as wire  # the SDK's own validators

    answered = {}
    headers = {
        "Authorization": f"Bearer {OPTS.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Mcp-Protocol-Version": VERSION,
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fleet-test", "version": "0"},
    }
    async with httpx2.AsyncClient(timeout=60) as http:
        for i, (method, params) in enumerate(OTHER_REQUESTS):
            named = {"Mcp-Name": v for k, v in params.items() if k in ("name", "uri")}
            body = {"jsonrpc": "2.0", "id": i + 1, "method": method, "params": {**params, "_meta": meta}}
            response = await http.post(url, json=body, headers={**headers, "Mcp-Method": method, **named})
            # A 2026-07-28 error may come with an HTTP status of its own (404
            # for a method the server does not have), its body still JSON-RPC.
            message = response.json()
            if "result" in message:
                check(response.status_code == 200, f"{method}: a result with HTTP {response.status_code}")
                wire.JSONRPCResultResponse.model_validate(message)
                try:
                    methods.validate_server_result(method, VERSION, message["result"])
                except KeyError:
                    raise AssertionError(f"{method} is not a 2026-07-28 method, yet answered {message}")
                answered[method] = {"http": response.status_code, "result": True}
            else:
                wire.JSONRPCErrorResponse.model_validate(message)
                check(message["id"] == i + 1, f"{method}: answered for another id: {message}")
                answered[method] = {"http": response.status_code, "error": message["error"]["code"]}
    return answered


async def main():
    summary = {}
    read_args = {"owner": "octo", "repo": "hello", "path": "README.md"}
    async with Stateless(OPTS.github) as github:
        for _ in range(OPTS.rounds):
            tools = await tools_of(github)
            check("github_read_file" in tools and "github_create_branch" in tools, f"github lists {tools}")
            # Two reads a round: under round robin, reads land on every host.
            for _ in range(2):
                read = await github.call_tool("github_read_file", read_args)
                check(not read.is_error, f"the read failed: {read}")
        summary["github_tools"] = tools
        summary["read"] = text_of(read)
        # A write waits for a person, on whichever host took it, and runs
        # once approved through the admin API (on whichever host).
        approving = asyncio.create_task(approve_when_pending())
        write = await github.call_tool(
            "github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/fleet"}
        )
        summary["approved_tool"] = await approving
        check(not write.is_error, f"the approved write failed: {write}")
        summary["write"] = text_of(write)
        # A tool the session was not given: the protocol's error, read by the client.
        try:
            await github.call_tool("github_delete_everything", {})
            raise AssertionError("a tool not offered was served")
        except MCPError as e:
            summary["not_offered"] = e.error.message
        summary["other_answers"] = await other_answers(OPTS.github)
    # A client that declares it can ask its person (elicitation) is asked
    # the 2026-07-28 way: an `input_required` result carrying the question
    # and a `requestState`, and its retry with the person's answer, which
    # may land on the other host (nothing of it is kept in memory).
    asked = []

    async def elicitation(context, params):
        asked.append(params.message)
        from mcp.types import ElicitResult

        return ElicitResult(action="accept", content={"approve": True})

    async with Stateless(OPTS.github, elicitation) as asking:
        from mcp.types import InputRequiredResult

        args = {"owner": "octo", "repo": "hello", "branch": "scout/asking"}
        first = await asking.call_tool("github_create_branch", args, allow_input_required=True)
        check(isinstance(first, InputRequiredResult), f"the asking client was not asked: {first}")
        answer = await elicitation(None, first.input_requests["approval"].params)
        write = await asking.call_tool(
            "github_create_branch",
            args,
            input_responses={"approval": answer},
            request_state=first.request_state,
            allow_input_required=True,
        )
        check(not write.is_error, f"the asking client's approved write failed: {write}")
        summary["asking_write"] = text_of(write)
        summary["asking_elicited"] = len(asked)
    async with Stateless(OPTS.scout) as scout:
        summary["scout_tools"] = await tools_of(scout)
        asked = await scout.call_tool(
            "scout_request_capability",
            {
                "goal": "open a pull request",
                "missing_observation": "no tool opens one",
                "proposed_effect": "write",
                "safe_alternative_tried": "created a branch",
            },
        )
        check(not asked.is_error, f"the ask failed: {asked}")
        summary["scout_asked"] = asked.structured_content
    if OPTS.remote:
        async with Stateless(OPTS.remote) as remote:
            for _ in range(OPTS.rounds):
                summary["remote_tools"] = await tools_of(remote)
                echo = await remote.call_tool("echo", {"message": "through the fleet"})
                check(not echo.is_error, f"the remote echo failed: {echo}")
            summary["remote_echo"] = text_of(echo)
    print(json.dumps(summary))


asyncio.run(main())
