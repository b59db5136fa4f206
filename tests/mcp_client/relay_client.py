"""What the official Python MCP client hears about its own calls of a remote
server's tools through `serve`: progress for its token, log messages at the
level it set (`logging/setLevel`, or at 2026-07-28 the request's own
`logLevel`), and nothing of another session's calls.

Driven by host/tests/all/relay_notices.rs:

    python3 relay_client.py --url MCP_URL --token T --other-url URL --other-token T2 \
        --scout-host BIN --config serve.toml

The last two: one session over stdio (`serve --stdio --connector chatty`,
its environment this script's).

Prints one JSON summary line: what each client heard.
"""

import argparse
import asyncio
import json
import os
import warnings

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from scout_mcp import text_of

warnings.simplefilter("ignore")

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--url", required=True)
ARGS.add_argument("--token", required=True)
ARGS.add_argument("--other-url", required=True, help="another agent session's endpoint")
ARGS.add_argument("--other-token", required=True)
ARGS.add_argument("--scout-host", required=True)
ARGS.add_argument("--config", required=True)
OPTS = ARGS.parse_args()

# Calls of `burst`, one after another in one session.
BURSTS = 25


class Listening:
    """One client session that records every log message it hears."""

    def __init__(self, url, token, stateless=False, log_level=None):
        self.url, self.token, self.stateless, self.log_level = url, token, stateless, log_level
        self.heard = []

    async def __aenter__(self):
        async def heard(params):
            self.heard.append({"level": params.level, "logger": params.logger, "data": params.data})

        self.http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=60)
        self.transport = streamable_http_client(self.url, http_client=self.http)
        read, write = await self.transport.__aenter__()
        self.session = ClientSession(read, write, logging_callback=heard, log_level=self.log_level)
        await self.session.__aenter__()
        if self.stateless:
            await self.session.discover()
        else:
            await self.session.initialize()
        return self

    async def __aexit__(self, *exc):
        await self.session.__aexit__(*exc)
        await self.transport.__aexit__(*exc)
        await self.http.aclose()

    async def call(self, tool, with_progress=True, settle=True):
        progress = []

        async def told(value, total, message):
            progress.append({"progress": value, "total": total, "message": message})

        result = await self.session.call_tool(tool, {}, progress_callback=told if with_progress else None)
        # What was heard by the time the answer came.
        before = {"progress": len(progress), "heard": len(self.heard)}
        # Anything still on its way (none is expected after the answer).
        if settle:
            await asyncio.sleep(0.2)
        return {"answer": text_of(result), "error": bool(result.is_error), "progress": progress, "before": before}


async def over_stdio():
    """The same over stdio: the level set, a call with a progress token."""
    heard = []

    async def hear(params):
        heard.append({"level": params.level, "logger": params.logger, "data": params.data})

    server = StdioServerParameters(
        command=OPTS.scout_host,
        args=["serve", "--config", OPTS.config, "--stdio", "--brand", "acme", "--role", "person-chat", "--connector", "chatty"],
        env={k: os.environ[k] for k in ("SCOUT_ADMIN_TOKEN", "SCOUT_STORE_KEY", "CHATTY_TOKEN")},
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, logging_callback=hear) as session:
            await session.initialize()
            # This process lists the remote server afresh: its tools are
            # offered once listed (and found reviewed in the store).
            for _ in range(100):
                listed = await session.list_tools()
                if any(t.name == "chatter" for t in listed.tools):
                    break
                await asyncio.sleep(0.1)
            await session.set_logging_level("info")
            progress = []

            async def told(value, total, message):
                progress.append({"progress": value, "total": total, "message": message})

            result = await session.call_tool("chatter", {}, progress_callback=told)
            await asyncio.sleep(0.2)
    return {"answer": text_of(result), "progress": progress, "heard": heard}


async def main():
    summary = {}
    async with Listening(OPTS.other_url, OPTS.other_token) as other:
        # Another agent session, listening at the lowest level all along.
        await other.session.set_logging_level("debug")
        async with Listening(OPTS.url, OPTS.token) as info:
            await info.session.set_logging_level("info")
            summary["info"] = await info.call("chatter")
            summary["info"]["heard"] = info.heard
        async with Listening(OPTS.url, OPTS.token) as quiet:
            # No level set, no progress token: nothing is told.
            summary["unasked"] = await quiet.call("chatter", with_progress=False)
            summary["unasked"]["heard"] = quiet.heard
        async with Listening(OPTS.url, OPTS.token) as high:
            await high.session.set_logging_level("error")
            summary["error_level"] = await high.call("chatter", with_progress=False)
            summary["error_level"]["heard"] = high.heard
        async with Listening(OPTS.url, OPTS.token) as flooded:
            await flooded.session.set_logging_level("debug")
            summary["flood"] = await flooded.call("flood", with_progress=False)
            summary["flood"]["heard"] = flooded.heard
        async with Listening(OPTS.url, OPTS.token, stateless=True, log_level="info") as modern:
            summary["stateless"] = await modern.call("chatter")
            summary["stateless"]["heard"] = modern.heard
        async with Listening(OPTS.url, OPTS.token) as bursts:
            # The server's last notices travel right before each answer:
            # all of them are heard before it, every time.
            await bursts.session.set_logging_level("info")
            summary["burst"] = []
            for _ in range(BURSTS):
                call = await bursts.call("burst", settle=False)
                summary["burst"].append({"answer": call["answer"], **call["before"]})
        summary["other_heard"] = other.heard
    summary["stdio"] = await over_stdio()
    print(json.dumps(summary))


asyncio.run(main())
