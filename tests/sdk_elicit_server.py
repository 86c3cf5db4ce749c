"""The official SDK's MCPServer asking its user, for the interop tests of client.Client's on_elicit.

    python tests/sdk_elicit_server.py              # stdio
    python tests/sdk_elicit_server.py --http PORT  # Streamable HTTP on 127.0.0.1:PORT/mcp

pick asks through a resolver (the SDK's Resolve and Elicit), which the SDK carries in both eras:
an elicitation/create request mid-call in 2025-11-25, an input_required result in 2026-07-28.
confirm calls ctx.elicit itself, and ping_me pings the client outside the call (over HTTP: on the
session's standalone GET stream); only the legacy era can carry either.
"""
import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve

server = MCPServer("sdk-elicit", version="1.0.0")


class Account(BaseModel):
    account: str = "personal"


class Sure(BaseModel):
    sure: bool


def ask_account() -> Elicit[Account]:
    return Elicit("Which account?", Account)


@server.tool()
def pick(account: Annotated[Account, Resolve(ask_account)]) -> str:
    """Say which account the user picked."""
    return f"picked {account.account}"


@server.tool()
async def confirm(ctx: Context) -> str:
    """Ask whether the user is sure, and say what came back."""
    answer = await ctx.elicit("Are you sure?", Sure)
    return f"{answer.action} {answer.data.sure if answer.action == 'accept' else '-'}"


@server.tool()
async def ping_me(ctx: Context) -> str:
    """Ping the client, unrelated to this call, and say that the answer came."""
    await ctx.request_context.session.send_ping()
    return "the client answered the ping"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
