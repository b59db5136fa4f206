"""One MCP endpoint's tools as the official Python client lists them.

    python3 list_tools.py --url URL --token T

Prints the tool names as one JSON array.
"""

import argparse
import asyncio
import json

from scout_mcp import Mcp

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--url", required=True)
ARGS.add_argument("--token", required=True)
OPTS = ARGS.parse_args()


async def main():
    async with Mcp(OPTS.url, OPTS.token) as s:
        print(json.dumps(sorted(t.name for t in (await s.list_tools()).tools)))


if __name__ == "__main__":
    asyncio.run(main())
