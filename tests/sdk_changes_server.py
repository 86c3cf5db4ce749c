"""The official SDK's low-level server, announcing changes, for the client's notification tests.

It has two resources (notes://a, notes://b) and one tool, change(what, uri, later), that
announces a change: "tools", "prompts" or "resources" (that list changed), or "updated" (the
resource at uri changed); later=true: 0.2 s after the call has been answered, when no request is
open (over HTTP a legacy session then hears it on its GET stream). Both eras hear it: legacy
sessions as plain notifications (resources/updated only to the subscribers of uri, through
resources/subscribe), 2026-07-28 clients on their subscriptions/listen streams (the SDK's
ListenHandler filters and tags them).

    python tests/sdk_changes_server.py              # stdio
    python tests/sdk_changes_server.py --port 8123  # Streamable HTTP at http://127.0.0.1:8123/mcp
"""
import asyncio
import sys

import mcp.types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.subscriptions import (InMemorySubscriptionBus, ListenHandler, PromptsListChanged,
                                      ResourcesListChanged, ResourceUpdated, ToolsListChanged)

bus = InMemorySubscriptionBus()
subscribers = {}  # legacy: uri -> {the client's handshake (one per connection): its session}
URIS = ["notes://a", "notes://b"]
later_tasks = set()  # changes announced after their call was answered


async def list_tools(ctx, params):
    schema = {"type": "object", "properties": {"what": {"type": "string"},
                                               "uri": {"type": "string"},
                                               "later": {"type": "boolean"}}, "required": ["what"]}
    return types.ListToolsResult(tools=[types.Tool(name="change", inputSchema=schema)])


async def call_tool(ctx, params):
    what, uri = params.arguments["what"], params.arguments.get("uri", "")
    if params.arguments.get("later"):
        task = asyncio.get_running_loop().create_task(announce_later(ctx, what, uri))
        later_tasks.add(task)
        task.add_done_callback(later_tasks.discard)
    else:
        await announce(ctx, what, uri)
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{what} {uri}")])


async def announce_later(ctx, what, uri):
    await asyncio.sleep(0.2)
    await announce(ctx, what, uri)


async def announce(ctx, what, uri):
    if what == "updated":
        await bus.publish(ResourceUpdated(uri=uri))
        for session in list(subscribers.get(uri, {}).values()):
            await session.send_resource_updated(uri)
    else:
        events = {"tools": ToolsListChanged(), "prompts": PromptsListChanged(),
                  "resources": ResourcesListChanged()}
        await bus.publish(events[what])
        if ctx.protocol_version < "2026":  # a legacy session: a notification on its channel
            await getattr(ctx.session, f"send_{what.rstrip('s')}_list_changed")()


async def list_resources(ctx, params):
    return types.ListResourcesResult(resources=[types.Resource(uri=uri, name=uri[-1])
                                                for uri in URIS])


async def read_resource(ctx, params):
    return types.ReadResourceResult(contents=[types.TextResourceContents(
        uri=str(params.uri), mimeType="text/plain", text=f"the note {params.uri}")])


async def subscribe(ctx, params):
    subscribers.setdefault(str(params.uri), {})[id(ctx.session.client_params)] = ctx.session
    return types.EmptyResult()


async def unsubscribe(ctx, params):
    subscribers.get(str(params.uri), {}).pop(id(ctx.session.client_params), None)
    return types.EmptyResult()


server = Server("sdk-changes", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool,
                on_list_resources=list_resources, on_read_resource=read_resource,
                on_subscribe_resource=subscribe, on_unsubscribe_resource=unsubscribe,
                on_subscriptions_listen=ListenHandler(bus))


async def serve_stdio():
    from mcp.server.stdio import stdio_server
    options = server.create_initialization_options(NotificationOptions(True, True, True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    import anyio
    if "--port" in sys.argv:
        import uvicorn
        port = int(sys.argv[sys.argv.index("--port") + 1])
        uvicorn.run(server.streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=port,
                    log_level="warning")
    else:
        anyio.run(serve_stdio)
