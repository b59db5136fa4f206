"""AgentMail sends fired at once by the official Python client on one
session of `serve`, each approved by its person (elicitation) if asked:
what `policy_history.rs` holds to a window rule.

    python3 policy_history.py --url URL --token T --sends N --tag host-a

Prints one JSON line: `{"ok": true, "answers": [{"to", "is_error", "text"}], "asked": N}`.
"""

import argparse
import asyncio
import json

from mcp import types

from scout_mcp import Mcp, text_of

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--url", required=True)
ARGS.add_argument("--token", required=True)
ARGS.add_argument("--sends", type=int, required=True)
ARGS.add_argument("--tag", required=True)
OPTS = ARGS.parse_args()


async def main():
    asked = []

    async def person(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with Mcp(OPTS.url, OPTS.token, elicitation=person) as session:

        async def send(i):
            to = f"{OPTS.tag}-{i}@example.com"
            arguments = {"inbox-id": "support@agentmail.to", "to": [to], "subject": "Hello", "text": "Hi"}
            result = await session.call_tool("agentmail_send_message", arguments)
            return {"to": to, "is_error": bool(result.is_error), "text": text_of(result)}

        answers = await asyncio.gather(*(send(i) for i in range(OPTS.sends)))
    print(json.dumps({"ok": True, "answers": list(answers), "asked": len(asked)}))


if __name__ == "__main__":
    asyncio.run(main())
