"""A write that needs a person's approval, asked over stdio the 2026-07-28
way: the official Python client in stateless mode (`server/discover`, no
`initialize`) starts `scout-host serve --stdio`, declares form elicitation,
and its `Client` answers the host's `input_required` result through the
elicitation callback and retries (SEP-2322): approved, the write runs;
declined, it is refused.

Driven by host/tests/all/input_required.rs:

    python3 stdio_input_required.py --scout-host BIN --config serve.toml

The environment's SCOUT_ADMIN_TOKEN, SCOUT_STORE_KEY, GITHUB_TOKEN and
GITHUB_ALLOW_WRITES are passed on. Prints one JSON summary line.
"""

import argparse
import asyncio
import json
import os

from mcp import Client, StdioServerParameters
from mcp.types import ElicitResult

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
        env={
            k: os.environ[k]
            for k in ("SCOUT_ADMIN_TOKEN", "SCOUT_STORE_KEY", "GITHUB_TOKEN", "GITHUB_ALLOW_WRITES", "PATH")
        },
    )
    asked, answers, summary = [], [], {}

    async def elicitation(context, params):
        asked.append(params.message)
        action = answers.pop(0)
        return ElicitResult(action=action, content={"approve": True} if action == "accept" else None)

    async with Client(server, elicitation_callback=elicitation, cache=None) as client:
        check(client.session.protocol_version == VERSION, f"negotiated {client.session.protocol_version}")
        answers.append("accept")
        approved = await client.call_tool("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/stdio-approved"})
        check(not approved.is_error, f"the approved write failed: {text_of(approved)}")
        summary["approved"] = text_of(approved)
        answers.append("decline")
        declined = await client.call_tool("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/stdio-declined"})
        check(declined.is_error, f"a declined write ran: {text_of(declined)}")
        summary["declined"] = text_of(declined)
    summary["asked"] = asked
    print(json.dumps(summary))


asyncio.run(main())
