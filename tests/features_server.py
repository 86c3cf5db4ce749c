"""A small mcp_min server for the tests of resources, prompts and completion (test_features.py).

    python tests/features_server.py

Resources: a fixed text, a fixed blob, one that returns its contents in full, one that fails;
templates: notes by name (listed, completed by a function), colors (two Literal variables) and
items (async, 205 of them listed: three pages). Prompts: one with a Literal argument and a
completer that reads the other arguments, one that returns messages, one with 150 completions,
one that fails. A tool whose argument is described with Annotated.
"""
import sys
from pathlib import Path
from typing import Annotated, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_min import Server  # noqa: E402

server = Server("features-test", version="2.0.0")
NOTES = {"groceries": "milk, eggs", "to do": "write the tests", "café": "open at 8"}
PNG = b"\x89PNG\r\n\x1a\n"


@server.tool()
def shout(text: Annotated[str, "what to shout"]) -> str:
    """Shout the text."""
    return text.upper()


@server.resource("info:///readme", title="Read me", mime_type="text/markdown")
def readme() -> str:
    """What this server is."""
    return "# features-test"


@server.resource("info:///logo", name="logo", description="A PNG signature.",
                 mime_type="image/png")
def logo_bytes() -> bytes:
    return PNG


@server.resource("info:///both")
def both() -> list:
    """Two contents, as given."""
    return [{"uri": "info:///both#1", "mimeType": "text/plain", "text": "one"},
            {"uri": "info:///both#2", "mimeType": "text/plain", "text": "two"}]


@server.resource("info:///broken")
def broken() -> str:
    """Always fails."""
    raise ValueError("the disk is on fire")


def list_notes():
    return [{"uri": f"note:///{name.replace(' ', '%20')}", "name": name} for name in NOTES]


def complete_note(value, arguments):
    return sorted(name for name in NOTES if name.startswith(value))


@server.resource("note:///{name}", mime_type="text/plain", listing=list_notes,
                 complete={"name": complete_note})
def note(name: str) -> str | None:
    """A note, by name."""
    return NOTES.get(name)


@server.resource("color:///{shade}/{tone}")
def color(shade: Literal["red", "green", "rose"], tone: Literal["light", "dark"]) -> str:
    """A color."""
    return f"{tone} {shade}"


@server.resource("item:///{index}", mime_type="text/plain",
                 listing=lambda: [{"uri": f"item:///{i}", "name": f"item {i}"} for i in range(205)])
async def item(index: str) -> str:
    """An item (async)."""
    return f"item {index}"


def complete_name(value, arguments):
    names = ["Ada", "Alan", "Grace"] if arguments.get("style") != "warm" else ["Dear Ada"]
    return [name for name in names if name.startswith(value)]


@server.prompt(title="Greeting", complete={"name": complete_name})
def greet(name: Annotated[str, "who to greet"], style: Literal["plain", "warm"] = "plain") -> str:
    """Greet someone."""
    return f"Hello, {name}." if style == "plain" else f"Hello, dear {name}!"


@server.prompt()
def review(code: str) -> list:
    """Review some code, with a resource and an answer to start from."""
    return [{"role": "user", "content": {"type": "resource", "resource": {
                "uri": "info:///code", "mimeType": "text/x-python", "text": code}}},
            {"role": "assistant", "content": {"type": "text", "text": "Let me look."}}]


@server.prompt(complete={"letter": lambda value, arguments: [f"{value}{i}" for i in range(150)]})
def pick(letter: str) -> str:
    """Pick one of many."""
    return letter


@server.prompt()
def explode() -> str:
    """Always fails."""
    raise RuntimeError("no prompt today")


if __name__ == "__main__":
    server.run()
