"""A remote MCP server asks the session's person a question mid-call
(`elicitation/create`): the official Python MCP client, which takes form
elicitation, answers as the person would and records what it was shown.

Driven by host/tests/all/remote_mcp.rs:

    python3 remote_ask.py --url MCP_URL --token SESSION_TOKEN

Prints one JSON summary line: the tool's answer and every question shown.
"""

import argparse
import asyncio
import json

from mcp import types

from scout_mcp import Mcp, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--url", required=True)
ARGS.add_argument("--token", required=True)
OPTS = ARGS.parse_args()


async def main():
    shown = []

    async def person(context, params):
        shown.append({"message": params.message, "schema": params.requested_schema})
        return types.ElicitResult(action="accept", content={"colour": "teal"})

    async with Mcp(OPTS.url, OPTS.token, elicitation=person) as session:
        answer = await session.call_tool("ask", {})
    print(json.dumps({"answer": text_of(answer), "error": bool(answer.is_error), "shown": shown}))


asyncio.run(main())
