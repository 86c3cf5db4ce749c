"""The official SDK's MCPServer with the same tools as tests/wire_server.py, for the interop tests:
client.Client must get the same results from it as from our own server.

    python tests/sdk_server.py
"""
import asyncio
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-test", version="9.9.9")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def describe(
    name: str,
    tags: list[str],
    mode: Literal["fast", "exact"] = "fast",
    limit: int | None = None,
    ratio: float = 0.5,
    verbose: bool = False,
) -> dict[str, Any]:
    """Echo the arguments back as structured data, with the Python type each arrived as."""
    args = {"name": name, "tags": tags, "mode": mode, "limit": limit, "ratio": ratio,
            "verbose": verbose}
    return {"args": args, "types": {key: type(value).__name__ for key, value in args.items()}}


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress once per step (async)."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await asyncio.sleep(0.005)
    return f"counted to {steps}"


@server.tool()
def fail(message: str) -> str:
    """Always raise ValueError(message)."""
    raise ValueError(message)


@server.tool()
async def hang() -> str:
    """Never return (until cancelled)."""
    await asyncio.sleep(3600)
    return "woke up"


if __name__ == "__main__":
    server.run()
