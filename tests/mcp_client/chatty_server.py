"""A remote MCP server built on the official Python SDK (`MCPServer`, mcp 2.x)
whose tools talk while they run: `chatter` reports its progress in three
steps and logs one message at each of debug, info and warning (the warning
names the credential it was sent, which the host must scrub), `flood`
logs 300 messages as fast as it can, and `burst` reports five steps of
progress and logs one message with no pause, then answers at once (what
it said last travels right before its answer). A host fronts it as a
connector and relays what its clients asked to hear.

Driven by host/tests/all/relay_notices.rs:

    python3 chatty_server.py --port-file FILE

Binds 127.0.0.1 on a free port and writes it to FILE once listening.
"""

import argparse
import asyncio
import os
import socket
import sys
import warnings

import uvicorn

from mcp.server.mcpserver import Context, MCPServer

warnings.simplefilter("ignore")

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--port-file", required=True)
OPTS = ARGS.parse_args()

server = MCPServer("chatty-fixture")


@server.tool(description="Reports progress in three steps and logs as it goes.")
async def chatter(ctx: Context) -> str:
    auth = (ctx.headers or {}).get("authorization", "none")
    await ctx.debug("chatter: debug detail", logger_name="worker")
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"step {step} of 3")
        await asyncio.sleep(0.05)
    await ctx.info("chatter: halfway")
    await ctx.warning(f"chatter: sent {auth}")
    await asyncio.sleep(0.05)
    return "chattered"


@server.tool(description="Logs 300 messages as fast as it can.")
async def flood(ctx: Context) -> str:
    for n in range(300):
        await ctx.info(f"flood {n}")
    await asyncio.sleep(0.05)
    return "flooded"


@server.tool(description="Reports five steps and logs once, then answers at once.")
async def burst(ctx: Context) -> str:
    for step in range(1, 6):
        await ctx.report_progress(step, 5)
    await ctx.info("burst: done")
    return "burst"


def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    srv = uvicorn.Server(config)

    async def serve():
        task = asyncio.create_task(srv.serve(sockets=[sock]))
        while not srv.started:
            await asyncio.sleep(0.02)
        tmp = OPTS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, OPTS.port_file)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())
