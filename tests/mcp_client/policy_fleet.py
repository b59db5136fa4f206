"""Reads files through `github_read_file` with the official Python client on
one session endpoint, in order, each answer kept: how `policy_fleet.rs`
makes the calls a runtime policy change decides on another host.

    python3 policy_fleet.py --url URL --token T --paths '["README.md", ...]'

Prints one JSON summary line: `{"ok": true, "answers": [{"path", "is_error",
"text"}]}`.
"""

import argparse
import asyncio
import json

from scout_mcp import Mcp, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--url", required=True)
ARGS.add_argument("--token", required=True)
ARGS.add_argument("--paths", required=True)
OPTS = ARGS.parse_args()


async def main():
    answers = []
    async with Mcp(OPTS.url, OPTS.token) as s:
        for path in json.loads(OPTS.paths):
            arguments = {"owner": "octo", "repo": "hello", "path": path}
            result = await s.call_tool("github_read_file", arguments)
            answers.append({"path": path, "is_error": bool(result.is_error), "text": text_of(result)})
    print(json.dumps({"ok": True, "answers": answers}))


if __name__ == "__main__":
    asyncio.run(main())
