"""Our HTTPClient as the client program of the official conformance suite's client scenarios.

    node node_modules/@modelcontextprotocol/conformance/dist/index.js client \\
        --command "python tests/conformance_client.py" --scenario tools_call

The suite starts a test server of its own, then runs this program with the server's URL as the
last argument and the scenario's name in MCP_CONFORMANCE_SCENARIO. HTTPClient runs in its default
mode: server/discover first, the initialize handshake only if the server is legacy. Every
scenario gets the same conversation: connect, tools/list, and the one tool call its server waits
for, if any. Exit code 0 once it is done; the suite itself judges what it saw on the wire.
"""
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from client import HTTPClient  # noqa: E402

TOOL_CALLS = {  # scenario -> the tool call its server waits for
    "tools_call": ("add_numbers", {"a": 2, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
}


async def run(url, scenario):
    async with HTTPClient(url, timeout=20) as client:
        tools = [tool.get("name") for tool in await client.list_tools()]
        if scenario in TOOL_CALLS:
            name, arguments = TOOL_CALLS[scenario]
            if name not in tools:
                raise SystemExit(f"conformance_client.py: the server has no tool {name!r}")
            result = await client.call_tool(name, arguments)
            if result.get("isError"):
                raise SystemExit(f"conformance_client.py: {name} failed: {result.get('content')}")


def main():
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        asyncio.run(run(sys.argv[-1], scenario))
    except Exception as e:
        print(f"conformance_client.py: {scenario}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
