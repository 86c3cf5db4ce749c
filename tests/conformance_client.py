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
import http.client
import json
import os
import sys
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mcp_auth  # noqa: E402
from client import HTTPClient  # noqa: E402

TOOL_CALLS = {  # scenario -> the tool call its server waits for
    "tools_call": ("add_numbers", {"a": 2, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
}


async def run(url, scenario):
    async with HTTPClient(url, timeout=20, auth=auth_for(scenario)) as client:
        tools = [tool.get("name") for tool in await client.list_tools()]
        if scenario in TOOL_CALLS or scenario.startswith("auth/"):
            name, arguments = TOOL_CALLS.get(scenario, ("test-tool", {}))
            if name not in tools:
                raise SystemExit(f"conformance_client.py: the server has no tool {name!r}")
            result = await client.call_tool(name, arguments)
            if result.get("isError"):
                raise SystemExit(f"conformance_client.py: {name} failed: {result.get('content')}")


# --- The auth/* scenarios: the suite's mock authorization server approves at once ---

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"  # basic-cimd's


def auth_for(scenario):
    """The OAuthClient for a scenario: the user's part is done by fetching the authorization URL
    and reading the code from where it redirects to (the mock approves without asking anyone).
    Pre-registered credentials come from the scenario's context (MCP_CONFORMANCE_CONTEXT)."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    clients = {}
    if context.get("client_id") and context.get("issuer"):
        clients[context["issuer"]] = {"client_id": context["client_id"],
                                      "client_secret": context.get("client_secret")}
    return mcp_auth.OAuthClient(on_authorize=approve, clients=clients,
                                client_metadata_url=CLIENT_METADATA_URL,
                                redirect_uri="http://127.0.0.1:3000/callback")


def approve(url, redirect_uri):
    """GET the authorization URL, not following its redirect: the Location is the answer."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        location = response.getheader("Location", "")
    finally:
        connection.close()
    if response.status not in (302, 303) or not location.startswith(redirect_uri):
        raise mcp_auth.AuthError(f"the authorization endpoint answered HTTP {response.status}")
    return location


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
