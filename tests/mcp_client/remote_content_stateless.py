"""The official Python client in stateless mode (protocol 2026-07-28:
`discover()`, no `Mcp-Session-Id`) on a session's endpoint for a remote MCP
server whose resources, template and prompt an operator reviewed (issue 55
item 3). Every result is validated by the SDK against its 2026-07-28 wire
types as it arrives.

Driven by host/tests/all/remote_content.rs:

    python3 remote_content_stateless.py --url ENDPOINT --token SESSION_TOKEN

Lists the resources, templates and prompts, reads the reviewed resource and
a URI its template covers, gets the reviewed prompt, and reads a URI nobody
reviewed (refused). Prints one JSON summary line on success.
"""

import argparse
import asyncio
import json

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from scout_mcp import check

VERSION = "2026-07-28"

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--url", required=True)
ARGS.add_argument("--token", required=True)
OPTS = ARGS.parse_args()


async def main():
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {OPTS.token}"}, timeout=60) as http:
        async with streamable_http_client(OPTS.url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                discovered = await session.discover()
                check(session.protocol_version == VERSION, f"negotiated {session.protocol_version}")
                capabilities = discovered.capabilities
                check(capabilities.resources is not None and capabilities.prompts is not None, f"declared: {capabilities}")
                resources = sorted(str(r.uri) for r in (await session.list_resources()).resources)
                templates = sorted(t.uri_template for t in (await session.list_resource_templates()).resource_templates)
                prompts = sorted(p.name for p in (await session.list_prompts()).prompts)
                readme = await session.read_resource("notes://readme")
                item = await session.read_resource("notes://item/7")
                prompt = await session.get_prompt("summarize", {"topic": "owls"})
                try:
                    await session.read_resource("notes://secret")
                    refused = None
                except MCPError as e:
                    refused = str(e)
                print(json.dumps({
                    "ok": True,
                    "resources": resources,
                    "templates": templates,
                    "prompts": prompts,
                    "readme": readme.contents[0].text,
                    "readme_meta": readme.meta,
                    "item": item.contents[0].text,
                    "prompt": prompt.messages[0].content.text,
                    "prompt_meta": prompt.meta,
                    "refused": refused,
                }))


asyncio.run(main())
