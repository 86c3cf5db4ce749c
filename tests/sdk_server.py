"""The official SDK's MCPServer with the same tools as tests/wire_server.py, for the interop tests:
client.Client must get the same results from it as from our own server. It also has a resource, a
resource template, a prompt with arguments and completions for both, which client.Client must read.

    python tests/sdk_server.py
"""
import asyncio
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import Completion

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


@server.resource("notes://readme", name="readme", description="What this server is for.",
                 mime_type="text/plain")
def readme() -> str:
    return "The official SDK's server, for the interop tests."


@server.resource("notes://{topic}", name="note", description="A note on one topic.",
                 mime_type="text/plain")
def note(topic: str) -> str:
    return f"A note on {topic}."


@server.prompt()
def greet(name: str, style: str = "plain") -> str:
    """Greet someone by name."""
    return f"Say hello to {name}, in a {style} way."


TOPICS = ["cake", "cats", "coffee"]  # what completion/complete offers for notes://{topic}
STYLES = ["plain", "poetic"]  # and for greet's style


@server.completion()
async def complete(ref, argument, context):
    """Topics for the notes://{topic} template, styles for the greet prompt; nothing else."""
    known = {"topic": TOPICS, "style": STYLES}.get(argument.name, [])
    return Completion(values=[value for value in known if value.startswith(argument.value)])


if __name__ == "__main__":
    server.run()
