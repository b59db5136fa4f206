"""A remote MCP server's write, through the host, with the official Python MCP
client: the session's endpoint lists exactly the reviewed tools, a read
answers at once, and the write waits until a person approves it through the
admin API (which this script does itself, once the approval is pending).

Driven by host/tests/all/remote_mcp.rs:

    python3 remote_write.py --base URL --admin-token T --url MCP_URL --token SESSION_TOKEN \
        --session ID --stats STATS_URL

Prints one JSON summary line on success.
"""

import argparse
import asyncio
import json
import urllib.request

from scout_mcp import Mcp, admin_api, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--url", required=True)
ARGS.add_argument("--token", required=True)
ARGS.add_argument("--session", required=True)
ARGS.add_argument("--stats", required=True, help="the remote server's own record of its calls")
OPTS = ARGS.parse_args()


admin = admin_api(OPTS.base, OPTS.admin_token)


async def approve_when_pending():
    for _ in range(3000):
        pending = admin("GET", f"/v1/approvals?session={OPTS.session}")["pending"]
        if pending:
            approval = pending[0]
            with urllib.request.urlopen(OPTS.stats, timeout=30) as resp:
                approval["server_calls_before"] = json.loads(resp.read())["calls"].get("publish", 0)
            admin("POST", f"/v1/approvals/{approval['id']}", {"approve": True})
            return approval
        await asyncio.sleep(0.05)
    raise AssertionError("no approval was asked for")


async def main():
    async with Mcp(OPTS.url, OPTS.token) as session:
        tools = sorted(t.name for t in (await session.list_tools()).tools)
        read = await session.call_tool("lookup", {"query": "from python"})
        approving = asyncio.create_task(approve_when_pending())
        write = await session.call_tool("publish", {"text": "from python"})
        approval = await approving
    print(
        json.dumps(
            {
                "tools": tools,
                "read": text_of(read),
                "write": text_of(write),
                "write_error": bool(write.is_error),
                "approved_tool": approval["tool"],
                "server_calls_before_approval": approval["server_calls_before"],
            }
        )
    )


asyncio.run(main())
