"""One session over stdio (`scout-host serve --stdio`), with the official
Python MCP client starting the real binary. Driven by host/tests/all/mcp_serve.rs
after story.py, on the same configuration and database (the connection and
the tool reviews are already stored). Prints one JSON summary line.

    python3 stdio.py --scout-host BIN --config serve.toml
"""

import argparse
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
import mcp.types as types

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--scout-host", required=True)
ARGS.add_argument("--config", required=True)
OPTS = ARGS.parse_args()


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def main():
    asked = []

    async def person(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    server = StdioServerParameters(
        command=OPTS.scout_host,
        args=["serve", "--config", OPTS.config, "--stdio", "--brand", "acme", "--role", "person-chat", "--connector", "github"],
        env={k: os.environ[k] for k in ("SCOUT_ADMIN_TOKEN", "SCOUT_STORE_KEY", "GITHUB_ALLOW_WRITES", "APPROVAL_TIMEOUT_MS")},
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, elicitation_callback=person) as s:
            info = await s.initialize()
            check(info.server_info.name == "github", f"the server is named after its connector: {info.server_info}")
            names = {t.name for t in (await s.list_tools()).tools}
            check(len(names) == 11 and "github_read_file" in names, f"person chat over stdio: {sorted(names)}")
            read = await s.call_tool("github_list_branches", {"owner": "octo", "repo": "hello"})
            check(not read.is_error and "main" in read.content[0].text, f"read over stdio: {read}")
            write = await s.call_tool("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/stdio"})
            check(not write.is_error, f"write approved through elicitation over stdio: {write}")
            check(len(asked) == 1 and "scout/stdio" in asked[0], f"the person was asked once: {asked}")
    print(json.dumps({"ok": True, "tools": sorted(names)}))


try:
    asyncio.run(main())
except AssertionError as e:
    print(f"STDIO FAILED: {e}", file=sys.stderr)
    sys.exit(1)
