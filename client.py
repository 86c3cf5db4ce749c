"""
client.py - talk to an MCP server step by step, and show what each step says.

    python client.py                            # start server.py, list its tools, search once
    python client.py "is there wifi" --top-k 3  # ask your own question
    python client.py --trace                    # also print every JSON line: -> sent, <- received
    python client.py --legacy                   # open with the initialize handshake (2025-11-25)
    python client.py --url http://127.0.0.1:8000/mcp    # a server on Streamable HTTP (server.py --http)
    python client.py --server CMD ARG...        # any other stdio MCP server instead of server.py

The client starts the server as a subprocess (you never start it yourself) and
speaks JSON-RPC to it over the server's stdin and stdout, one JSON text per line:

    1. connect     server/discover (2026-07-28); a server that does not know it gets the
                   legacy handshake instead: initialize, then notifications/initialized
    2. tools/list  what tools exist, and the JSON Schema of each one's arguments
    3. tools/call  run one tool: here search, with the question

Leaving the `async with` block closes the server's stdin, which is how a stdio server
is told to exit. Nothing here knows about embeddings or FAISS: all of that happens on
the other side of the pipe.
"""

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from mcp_min import Client, MCPError

HERE = Path(__file__).resolve().parent
DEFAULT_QUESTION = "can I bring a dog"

ERA_NOTES = {
    "modern": "stateless: no handshake, every request carries its protocol version in _meta",
    "legacy": "initialize handshake, then the notifications/initialized notification",
}


def describe_arguments(input_schema):
    """'query (string, required), top_k (integer, default 5)' from a tool's inputSchema."""
    properties = input_schema.get("properties", {})
    required = input_schema.get("required", [])
    parts = []
    for name, schema in properties.items():
        kind = schema.get("type") or " | ".join(option.get("type", "?") for option in schema.get("anyOf", []))
        if name in required:
            parts.append(f"{name} ({kind}, required)")
        elif "default" in schema:
            parts.append(f"{name} ({kind}, default {json.dumps(schema['default'])})")
        else:
            parts.append(f"{name} ({kind}, optional)")
    return ", ".join(parts) or "none"


def first_line(text):
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


def indent(text, prefix="    "):
    return "\n".join(prefix + line if line else "" for line in text.splitlines())


def field(label, value):
    print(f"    {label:<10} : {value}")


def milliseconds(since):
    return f"{(time.perf_counter() - since) * 1000:.0f} ms"


async def demo(command, label, question, top_k, trace, legacy=False):
    opening = f"reach {label}" if label.startswith(("http://", "https://")) else f"start `{label}`"
    print(f"[1] connect: {opening} and open the conversation")
    started = time.perf_counter()
    async with Client(command, trace=trace, legacy=legacy) as client:
        info = client.server_info or {}
        field("server", f"{info.get('name', '?')} {info.get('version', '')}".rstrip())
        field("protocol", client.protocol_version)
        field("era", f"{client.era} ({ERA_NOTES.get(client.era, '?')})")
        field("offers", ", ".join(client.capabilities or {}) or "nothing")
        field("time", f"{milliseconds(started)} (start the server, if ours to start, and connect)")

        print("\n[2] tools/list")
        started = time.perf_counter()
        tools = await client.list_tools()
        for tool in tools:
            print(f"    {tool['name']}: {first_line(tool.get('description'))}")
            print(f"        arguments: {describe_arguments(tool.get('inputSchema', {}))}")
        field("time", milliseconds(started))

        search = next((tool for tool in tools if tool["name"] == "search"), None)
        if search is None or "query" not in search.get("inputSchema", {}).get("properties", {}):
            print("\n(no tool called search with a query argument: stopping after the listing)")
            return 0
        arguments = {"query": question}
        if "top_k" in search["inputSchema"].get("properties", {}):
            arguments["top_k"] = top_k

        print(f"\n[3] tools/call search {json.dumps(arguments, ensure_ascii=False)}")
        started = time.perf_counter()
        result = await client.call_tool("search", arguments)
        content = result.get("content", [])
        field("isError", result.get("isError", False))
        field("content", f"{len(content)} block(s), type {', '.join(b.get('type', '?') for b in content) or '-'}")
        if "structuredContent" in result:
            field("structured", "keys " + ", ".join(result["structuredContent"]))
        field("time", f"{milliseconds(started)} (a first search also waits for the model to load)")
        print()
        for block in content:
            print(indent(block["text"]) if block.get("type") == "text" else f"    <{block.get('type')} block>")
        if result.get("isError"):
            return 1
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description="Show the MCP conversation with a stdio server, step by step.")
    parser.add_argument("question", nargs="?", default=DEFAULT_QUESTION,
                        help=f"what to search for (default: {DEFAULT_QUESTION!r})")
    parser.add_argument("--top-k", type=int, default=3, help="passages to ask for (default: 3)")
    parser.add_argument("--index", default="index", help="index folder for server.py (default: index)")
    parser.add_argument("--trace", action="store_true", help="print every JSON line sent (→) and received (←)")
    parser.add_argument("--legacy", action="store_true",
                        help="open with the initialize handshake (2025-11-25) instead of probing for 2026-07-28")
    parser.add_argument("--url", help="talk Streamable HTTP to a server at this URL, e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument("--server", nargs=argparse.REMAINDER, metavar="CMD",
                        help="command of another stdio MCP server; everything after it belongs to that command")
    args = parser.parse_args(argv)
    if args.server == []:
        parser.error("--server needs the command that starts the server")

    if args.url:
        command = label = args.url
    elif args.server:
        command = args.server
        label = " ".join(args.server)
    else:
        # Our own server cannot search without an index: say so before starting it.
        if not (Path(args.index) / "manifest.json").is_file():
            print(f"client.py: error: no search index in {args.index}/; run `make index` first", file=sys.stderr)
            return 1
        command = [sys.executable, str(HERE / "server.py"), "--index", args.index]
        label = f"python server.py --index {args.index}"

    def trace(direction, line):
        print(f"{direction} {line}", flush=True)

    try:
        return asyncio.run(demo(command, label, args.question, args.top_k, trace if args.trace else None,
                                args.legacy))
    except (ConnectionError, MCPError, TimeoutError) as e:
        print(f"client.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
