"""A list of tool calls made in order by the official Python client on one
endpoint, each answer kept: what `policy_whatif.rs` records a session with
before replaying it under a candidate policy.

    python3 calls.py --url URL --token T --calls '[{"tool": "...", "arguments": {...}}]'

Prints one JSON summary line: `{"ok": true, "answers": [{"tool", "is_error",
"text"}]}`; a protocol error (a tool not offered) is an answer with
`protocol_error`.
"""

import argparse
import asyncio
import json

from mcp.shared.exceptions import MCPError

from scout_mcp import Mcp, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--url", required=True)
ARGS.add_argument("--token", required=True)
ARGS.add_argument("--calls", required=True)
OPTS = ARGS.parse_args()


async def main():
    answers = []
    async with Mcp(OPTS.url, OPTS.token) as s:
        for call in json.loads(OPTS.calls):
            try:
                result = await s.call_tool(call["tool"], call["arguments"])
            except MCPError as e:
                # A protocol error (a tool not offered): kept, not raised.
                answers.append({"tool": call["tool"], "is_error": True, "text": "", "protocol_error": str(e)})
                continue
            answers.append({"tool": call["tool"], "is_error": bool(result.is_error), "text": text_of(result)})
    print(json.dumps({"ok": True, "answers": answers}))


if __name__ == "__main__":
    asyncio.run(main())
