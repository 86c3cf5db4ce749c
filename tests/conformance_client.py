"""Our HTTPClient as the client program of the official conformance suite's client scenarios.

    node node_modules/@modelcontextprotocol/conformance/dist/index.js client \\
        --command "python tests/conformance_client.py" --scenario tools_call

The suite starts a test server of its own, then runs this program with the server's URL as the
last argument, the scenario's name in MCP_CONFORMANCE_SCENARIO and, for some scenarios, what to
do in MCP_CONFORMANCE_CONTEXT (JSON). HTTPClient runs in its default mode: server/discover first,
the initialize handshake only if the server is legacy. Every scenario gets the same start:
connect (answering questions with accept_defaults), tools/list; then SCENARIOS[scenario], if it
is there, does what the scenario asks. Exit code 0 once it is done; the suite itself judges what
it saw on the wire.
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
from client import HTTPClient, SkillError  # noqa: E402


def accept_defaults(message, schema):
    """The on_elicit of every scenario: accept, with each field's default (SEP-1034), and true
    for a boolean that has none (the suite's questions are "confirm?")."""
    content = {}
    for name, field in schema.get("properties", {}).items():
        if "default" in field:
            content[name] = field["default"]
        elif field.get("type") == "boolean":
            content[name] = True
    return {"action": "accept", "content": content}


async def call(client, name, arguments):
    result = await client.call_tool(name, arguments)
    if result.get("isError"):
        raise SystemExit(f"conformance_client.py: {name} failed: {result.get('content')}")


async def call_each_tool(client, tools, context):
    """Every tool listed, with a string for each required argument: the tools a client must
    drop (http-invalid-tool-headers) are never listed, so never called."""
    for tool in tools:
        required = tool.get("inputSchema", {}).get("required", [])
        await call(client, tool["name"], {name: "us-west1" for name in required})


async def call_context_tools(client, tools, context):
    """The calls the scenario names in its context (http-custom-headers)."""
    for tool_call in context.get("toolCalls", []):
        await call(client, tool_call["name"], tool_call["arguments"])


async def echo_schema(client, tools, context):
    """json-schema-2020-12-preservation: hand the focal tool's inputSchema back, verbatim."""
    schema = next(tool["inputSchema"] for tool in tools if tool["name"] != "json_schema_echo")
    await call(client, "json_schema_echo", {"schema": schema})


async def use_everything(client, tools, context):
    """http-standard-headers: one request of each kind whose headers it checks."""
    await call_each_tool(client, tools, context)
    for resource in (await client.list_resources())[:1]:
        await client.read_resource(resource["uri"])
    for prompt in (await client.list_prompts())[:1]:
        await client.get_prompt(prompt["name"])


async def list_skills_only(client, tools, context):
    """sep-2640-client-no-prefetch: the skills are listed, and none is loaded: nothing is read."""
    if not await client.list_skills():
        raise SystemExit("conformance_client.py: the server listed no skill")


async def load_tampered_skill(client, tools, context):
    """sep-2640-client-verify-*: the server serves a SKILL.md unlike its entry (digest, size or
    front matter): loading the skill must fail at that file, before any other is read."""
    skill = (await client.list_skills())[0]
    try:
        await client.read_skill(skill)
    except SkillError as e:
        return print(f"conformance_client.py: refused, as it should be: {e}", file=sys.stderr)
    raise SystemExit("conformance_client.py: a tampered skill was loaded")


def call_fixed(name, arguments):
    """What a scenario whose server waits for one tool call asks for."""
    async def run(client, tools, context):
        await call(client, name, arguments)
    return run


SCENARIOS = {  # scenario -> what it asks for once the client is connected and has listed tools
    "tools_call": call_fixed("add_numbers", {"a": 2, "b": 3}),
    "sse-retry": call_fixed("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": call_fixed("test_client_elicitation_defaults", {}),
    "sep-2322-client-request-state": call_each_tool,
    "http-invalid-tool-headers": call_each_tool,
    "http-custom-headers": call_context_tools,
    "http-standard-headers": use_everything,
    "json-schema-2020-12-preservation": echo_schema,
    "sep-2640-client-no-prefetch": list_skills_only,
    "sep-2640-client-verify-digest": load_tampered_skill,
    "sep-2640-client-verify-size": load_tampered_skill,
    "sep-2640-client-verify-frontmatter": load_tampered_skill,
}


async def run(url, scenario, context):
    auth = auth_for(context)
    async with HTTPClient(url, timeout=20, on_elicit=accept_defaults, auth=auth) as client:
        tools = await client.list_tools()
        if scenario.startswith("auth/"):  # every auth/* server has one tool, behind its login
            await call(client, "test-tool", {})
        if scenario in SCENARIOS:
            await SCENARIOS[scenario](client, tools, context)


# --- The auth/* scenarios: the suite's mock authorization server approves at once ---

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"  # basic-cimd's


def auth_for(context):
    """The OAuthClient for a scenario: the user's part is done by fetching the authorization URL
    and reading the code from where it redirects to (the mock approves without asking anyone).
    Pre-registered credentials come from the scenario's context (auth/pre-registration)."""
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
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    try:
        asyncio.run(run(sys.argv[-1], scenario, context))
    except Exception as e:
        print(f"conformance_client.py: {scenario}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
