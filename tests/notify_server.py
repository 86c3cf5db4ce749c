"""A small mcp_min server whose tools announce changes, for tests/test_notifications.py and the
SDK interop tests of change notifications. Both eras: stdio by default, Streamable HTTP with
--http PORT (and --write-timeout SECONDS, so that a test can see a reader that reads nothing
cut off quickly).

    python tests/notify_server.py [--http PORT [--write-timeout SECONDS]]
"""
import asyncio
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mcp_min import Context, Server  # noqa: E402

server = Server("notify-test", "1.0.0")
NOTES = {"a": "Note a.", "b": "Note b."}


@server.tool()
def touch(uri: str) -> str:
    """Announce that the resource at uri changed."""
    server.resource_updated(uri)
    return f"touched {uri}"


@server.tool()
def change(kind: str) -> str:
    """Announce that the list of "tools", "prompts" or "resources" changed."""
    server.list_changed(kind)
    return f"{kind} changed"


@server.tool()
def flood(times: int, uri: str) -> str:
    """Announce, from a thread of its own, that uri changed, `times` times in a row."""
    worker = threading.Thread(target=lambda: [server.resource_updated(uri) for _ in range(times)])
    worker.start()
    worker.join()
    return f"announced {times} times"


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress `steps` times, then answer."""
    for step in range(1, steps + 1):
        ctx.report_progress(step, steps)
        await asyncio.sleep(0)
    return f"counted to {steps}"


@server.tool()
async def poll(ctx: Context) -> str:
    """End this call's SSE stream at once (SSE polling), then report progress and answer: both
    wait for the client to resume the stream with GET and Last-Event-ID."""
    ctx.close_stream()
    await asyncio.sleep(0.2)
    ctx.report_progress(1, 1)
    return "polled"


@server.resource("note:///{name}", mime_type="text/plain",
                 listing=lambda: [{"uri": f"note:///{name}", "name": name} for name in NOTES])
def note(name: str) -> str | None:
    """A note by name; None (not found) for names that are not notes."""
    return NOTES.get(name)


@server.prompt()
def hello() -> str:
    """Say hello."""
    return "Hello."


if __name__ == "__main__":
    if "--http" in sys.argv:
        import mcp_http
        options = sys.argv[sys.argv.index("--http") + 1:]
        timeout = float(options[2]) if options[1:2] == ["--write-timeout"] else 30.0
        mcp_http.serve(server, port=options[0], write_timeout=timeout)
    else:
        server.run()
