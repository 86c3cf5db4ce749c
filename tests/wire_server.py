"""A small mcp_min server for the wire and interop tests: one tool per feature worth proving.

    python tests/wire_server.py [--instructions TEXT]

Tools: typed parameters (Literal, list[str], X | None, defaults), a dict result (outputSchema +
structuredContent), content blocks, None, an int, a slow sync tool, progress from an async and a
sync tool, a tool that raises, one that prints to stdout, tools that hang (for cancellation) and
one that kills the process (for the client's crash handling).
"""
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Literal

# MCP_MIN_DIR: a folder holding another mcp_min.py to serve with (tests/test_cut.py puts a copy
# cut at the end of its core there); else the project's own.
sys.path.insert(0, os.environ.get("MCP_MIN_DIR") or str(Path(__file__).resolve().parents[1]))

from mcp_min import Context, Server, ToolResult  # noqa: E402

instructions = None
if "--instructions" in sys.argv:
    instructions = sys.argv[sys.argv.index("--instructions") + 1]

server = Server("wire-test", version="1.2.3", instructions=instructions)


@server.tool(title="Echo", annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@server.tool(output_schema={"type": "object"})
def describe(
    name: str,
    tags: list[str],
    mode: Literal["fast", "exact"] = "fast",
    limit: int | None = None,
    ratio: float = 0.5,
    verbose: bool = False,
) -> dict:
    """Echo the arguments back as structured data, with the Python type each arrived as."""
    args = {"name": name, "tags": tags, "mode": mode, "limit": limit, "ratio": ratio,
            "verbose": verbose}
    return {"args": args, "types": {key: type(value).__name__ for key, value in args.items()}}


@server.tool()
def blocks() -> ToolResult:
    """Return two content blocks: a text and an image."""
    return ToolResult([{"type": "text", "text": "a red dot"},
                       {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}])


@server.tool()
def nothing() -> None:
    """Do nothing and return nothing."""


@server.tool()
def slow(ms: int) -> str:
    """Sleep ms milliseconds in a worker thread, then answer."""
    time.sleep(ms / 1000)
    return f"slept {ms} ms"


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress once per step (async)."""
    for step in range(1, steps + 1):
        ctx.report_progress(step, steps, f"step {step}")
        await asyncio.sleep(0.005)
    return f"counted to {steps}"


@server.tool()
def count_sync(steps: int, ctx: Context) -> str:
    """Report progress once per step (sync, from a worker thread)."""
    for step in range(1, steps + 1):
        ctx.report_progress(step, steps)
        time.sleep(0.005)
    return f"counted to {steps}"


@server.tool()
def fail(message: str) -> str:
    """Always raise ValueError(message)."""
    raise ValueError(message)


@server.tool()
def noisy(text: str) -> str:
    """Write to stdout three ways (print, sys.__stdout__, fd 1), then answer."""
    print(f"print says {text}")
    sys.__stdout__.write(f"sys.__stdout__ says {text}\n")
    sys.__stdout__.flush()
    os.write(1, f"fd 1 says {text}\n".encode())
    return f"quiet {text}"


@server.tool()
async def hang() -> str:
    """Never return (until cancelled)."""
    await asyncio.sleep(3600)
    return "woke up"


@server.tool()
def hang_sync(seconds: float, ctx: Context) -> str:
    """Block a worker thread until cancelled (it checks ctx.cancelled) or seconds pass."""
    deadline = time.monotonic() + seconds
    while not ctx.cancelled and time.monotonic() < deadline:
        time.sleep(0.01)
    return "cancelled" if ctx.cancelled else "done"


@server.tool()
def stubborn(seconds: float) -> str:
    """Block a worker thread for seconds, ignoring cancellation."""
    time.sleep(seconds)
    return "finally"


@server.tool()
def crash(code: int = 3) -> str:
    """Write a last word to stderr and kill the process at once."""
    sys.stderr.write("fatal: the crash tool was called\n")
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    server.run()
