"""The official Python client in stateless mode (protocol 2026-07-28,
`discover()` in place of `initialize()`) over stdio (`scout-host serve
--stdio`, which the client starts): `server/discover` validated against the
SDK's 2026-07-28 wire type here, `tools/list` and `tools/call` by the client
session itself (it raises on a result that does not conform).

Driven by host/tests/all/mcp_serve.rs:

    python3 stdio_stateless.py --scout-host BIN --config serve.toml

The environment's SCOUT_ADMIN_TOKEN, SCOUT_STORE_KEY and GITHUB_TOKEN are
passed on. Prints one JSON summary line.
"""

import argparse
import asyncio
import json
import os

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import methods

from scout_mcp import check, text_of

VERSION = "2026-07-28"

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--scout-host", required=True)
ARGS.add_argument("--config", required=True)
OPTS = ARGS.parse_args()


async def main():
    server = StdioServerParameters(
        command=OPTS.scout_host,
        args=["serve", "--config", OPTS.config, "--stdio", "--brand", "acme", "--role", "person-chat", "--connector", "github"],
        env={k: os.environ[k] for k in ("SCOUT_ADMIN_TOKEN", "SCOUT_STORE_KEY", "GITHUB_TOKEN", "PATH")},
    )
    summary = {}
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as s:
            raw = await s.send_discover(VERSION)
            methods.validate_server_result("server/discover", VERSION, raw)
            summary["discover"] = {k: raw[k] for k in ("resultType", "ttlMs", "cacheScope")}
            await s.discover()
            check(s.protocol_version == VERSION, f"negotiated {s.protocol_version}")
            summary["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
            read = await s.call_tool("github_read_file", {"owner": "octo", "repo": "hello", "path": "README.md"})
            check(not read.is_error, f"the read failed: {read}")
            summary["read"] = text_of(read)
            try:
                await s.call_tool("github_delete_everything", {})
                raise AssertionError("a tool not offered was served")
            except MCPError as e:
                summary["not_offered"] = e.error.message
    print(json.dumps(summary))


asyncio.run(main())
