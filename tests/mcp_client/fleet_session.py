"""The official Python client in session mode (`initialize()`, an MCP
transport session kept by `Mcp-Session-Id`, README's tour) through a
balancer in front of several `serve` hosts: `--calls` reads, each timed out
on its own, counted.

Driven by host/tests/all/fleet_clients.rs:

    python3 fleet_session.py --url URL --token SESSION_TOKEN [--calls 10]

Prints one JSON line: how many calls succeeded, and why the others failed.
Exits 0 either way; the test judges the counts.
"""

import argparse
import asyncio
import json

from scout_mcp import Mcp

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--url", required=True)
ARGS.add_argument("--token", required=True)
ARGS.add_argument("--calls", type=int, default=10)
OPTS = ARGS.parse_args()


async def main():
    ok, failed, version = 0, [], None
    read_args = {"owner": "octo", "repo": "hello", "path": "README.md"}
    try:
        async with Mcp(OPTS.url, OPTS.token) as session:
            version = session.protocol_version
            for _ in range(OPTS.calls):
                try:
                    result = await asyncio.wait_for(session.call_tool("github_read_file", read_args), 60)
                    if result.is_error:
                        failed.append(f"error result: {result.content}")
                    else:
                        ok += 1
                except Exception as e:  # noqa: BLE001 - counted, the test judges
                    failed.append(f"{type(e).__name__}: {e}")
    except BaseException as e:  # noqa: BLE001 - a failed initialize or close counts too
        failed.append(f"session: {type(e).__name__}: {e}")
    print(json.dumps({"ok": ok, "failed": failed, "protocol_version": version}))


asyncio.run(main())
