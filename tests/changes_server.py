"""An mcp_min server that announces changes, for the client's notification tests: two resources
(notes://a, notes://b), a prompt, and a tool change(what, uri) that calls
server.list_changed(what) ("tools", "prompts", "resources") or, for "updated",
server.resource_updated(uri). MCP_MIN_DIR, if set, is the folder whose mcp_min.py it runs.

    python tests/changes_server.py              # stdio
    python tests/changes_server.py --port 8123  # Streamable HTTP at http://127.0.0.1:8123/mcp
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, os.environ.get("MCP_MIN_DIR") or str(Path(__file__).resolve().parents[1]))

from mcp_min import Server  # noqa: E402

server = Server("changes-test", version="1.0.0")


@server.resource("notes://a", mime_type="text/plain")
def note_a() -> str:
    return "the note a"


@server.resource("notes://b", mime_type="text/plain")
def note_b() -> str:
    return "the note b"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}."


@server.tool()
def change(what: str, uri: str = "", later: bool = False) -> str:
    """Announce a change: a list ("tools", "prompts", "resources"), or "updated" for uri."""
    announce = (lambda: server.resource_updated(uri)) if what == "updated" else (
        lambda: server.list_changed(what))
    if later:  # from another thread, after the call was answered: no request is open then
        import threading
        threading.Timer(0.2, announce).start()
    else:
        announce()
    return f"{what} {uri}"


if __name__ == "__main__":
    if "--port" in sys.argv:
        import mcp_http
        mcp_http.serve(server, port=int(sys.argv[sys.argv.index("--port") + 1]))
    else:
        server.run()
