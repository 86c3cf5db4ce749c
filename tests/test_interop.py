"""Interop: the official Python SDK (mcp 2.3.0) against our server, our Client against the SDK's
server, and our Client against our server and against broken or legacy-only servers.

Spec: basic/transports/stdio (Backward Compatibility, Shutdown), basic/versioning, server/tools,
basic/patterns/{cancellation,progress} of revision 2026-07-28; basic/lifecycle of 2025-11-25.
"""
import asyncio
import json
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import mcp  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError as SDKError  # noqa: E402

import mcp_min  # noqa: E402
from client import Client  # noqa: E402
from mcp_min import MCPError  # noqa: E402
# the server object; not run on import
from wire_server import server as wire_definitions  # noqa: E402

WIRE = [sys.executable, str(ROOT / "tests" / "wire_server.py")]
SDK_SERVER = [sys.executable, str(ROOT / "tests" / "sdk_server.py")]
WIRE_PARAMS = StdioServerParameters(command=sys.executable, args=[WIRE[1]], cwd=str(ROOT))
SERVER_INFO = {"name": "wire-test", "version": "1.2.3"}
DEFINITIONS = [tool[1] for tool in wire_definitions.tools.values()]
DESCRIBE_ARGS = {"name": "x", "tags": ["a", "b"], "mode": "exact", "limit": 3}
DESCRIBE_STRUCTURED = {
    "args": {"name": "x", "tags": ["a", "b"], "mode": "exact", "limit": 3, "ratio": 0.5,
             "verbose": False},
    "types": {"name": "str", "tags": "list", "mode": "str", "limit": "int", "ratio": "float",
              "verbose": "bool"},
}


def run(coroutine, timeout=60):
    """Run one async test body, with a ceiling that turns a hang into a failure."""
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


def texts(result):
    """The text blocks of a CallToolResult, as a dict from our Client or a model from the SDK."""
    if isinstance(result, dict):
        return [block["text"] for block in result["content"] if block["type"] == "text"]
    return [block.text for block in result.content if block.type == "text"]


def script(tmp_path, name, source):
    """Write a small Python server script; return the command that runs it."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return [sys.executable, str(path)]


# ---------------------------------------------------------------------------
# The SDK's client drives our server
# ---------------------------------------------------------------------------

async def exercise_with_sdk(session, modern):
    """The same checks through the SDK's ClientSession, whichever era it negotiated."""
    listed = await session.list_tools()
    assert [tool.name for tool in listed.tools] == [d["name"] for d in DEFINITIONS]
    for tool, definition in zip(listed.tools, DEFINITIONS):
        dumped = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key in ("name", "description", "inputSchema", "outputSchema", "title", "annotations"):
            assert dumped.get(key) == definition.get(key), (
                tool.name, key, dumped.get(key), definition.get(key))

    echoed = await session.call_tool("echo", {"text": "héllo\nworld"})
    assert texts(echoed) == ["héllo\nworld"] and echoed.is_error is False

    added = await session.call_tool("add", {"a": 2})
    assert texts(added) == ["3"] and not added.is_error

    # the SDK checks it against outputSchema
    described = await session.call_tool("describe", DESCRIBE_ARGS)
    assert described.structured_content == DESCRIBE_STRUCTURED and not described.is_error
    assert json.loads(texts(described)[0]) == DESCRIBE_STRUCTURED

    blocks = await session.call_tool("blocks", {})
    assert [block.type for block in blocks.content] == ["text", "image"]
    assert blocks.content[1].data == "iVBORw0KGgo=" and blocks.content[1].mime_type == "image/png"

    nothing = await session.call_tool("nothing", {})
    assert nothing.content == [] and not nothing.is_error

    wrong = await session.call_tool("add", {"a": "5"})  # no coercion on our side
    assert wrong.is_error is True and "a" in texts(wrong)[0]

    failed = await session.call_tool("fail", {"message": "the disk is on fire"})
    assert failed.is_error is True and "the disk is on fire" in texts(failed)[0]

    with pytest.raises(SDKError) as info:
        await session.call_tool("no_such_tool", {})
    assert info.value.error.code == -32602

    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    counted = await session.call_tool("count", {"steps": 4}, progress_callback=on_progress)
    assert texts(counted) == ["counted to 4"]
    await asyncio.sleep(0.05)  # progress callbacks may run just after the result arrives
    assert seen == [(i, 4, f"step {i}") for i in range(1, 5)]

    assert session.protocol_version == ("2026-07-28" if modern else "2025-11-25")
    assert session.server_info.name == "wire-test" and session.server_info.version == "1.2.3"


def test_sdk_client_session_legacy_handshake_against_our_server():
    async def body():
        with tempfile.TemporaryFile("w+") as errlog:
            async with stdio_client(WIRE_PARAMS, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    result = await session.initialize()
                    assert result.protocol_version == "2025-11-25"
                    assert result.server_info.name == "wire-test"
                    assert result.capabilities.tools is not None
                    assert result.instructions is None
                    await exercise_with_sdk(session, modern=False)
    run(body())


def test_sdk_client_session_modern_discover_against_our_server():
    async def body():
        with tempfile.TemporaryFile("w+") as errlog:
            async with stdio_client(WIRE_PARAMS, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    discovered = await session.discover()
                    assert discovered.supported_versions == ["2026-07-28"]
                    assert discovered.ttl_ms == 3_600_000 and discovered.cache_scope == "public"
                    await exercise_with_sdk(session, modern=True)
    run(body())


@pytest.mark.parametrize("mode", ["legacy", "auto", "2026-07-28"])
def test_sdk_high_level_client_every_mode_against_our_server(mode):
    async def body():
        async with mcp.Client(WIRE_PARAMS, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            if mode != "2026-07-28":  # a pinned version adopts a synthesized discover result
                assert client.server_info.name == "wire-test"
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == [d["name"] for d in DEFINITIONS]
            described = await client.call_tool("describe", DESCRIBE_ARGS)
            assert described.structured_content == DESCRIBE_STRUCTURED
            failed = await client.call_tool("fail", {"message": "boom"})
            assert failed.is_error and "boom" in texts(failed)[0]
    run(body())


# ---------------------------------------------------------------------------
# Our Client drives the SDK's MCPServer (dual-era: our probe finds it modern)
# ---------------------------------------------------------------------------

async def same_calls(client):
    """Calls whose results must agree between our server and the SDK's."""
    out = {}
    for name, arguments in [("echo", {"text": "héllo"}), ("add", {"a": 2, "b": 40}),
                            ("add", {"a": 2}), ("describe", DESCRIBE_ARGS)]:
        result = await client.call_tool(name, arguments)
        out[name, json.dumps(arguments)] = {"texts": texts(result), "isError": result["isError"]}
    described = await client.call_tool("describe", DESCRIBE_ARGS)
    out["structured"] = described["structuredContent"]
    progress = []
    counted = await client.call_tool("count", {"steps": 3},
                                     on_progress=lambda *p: progress.append(p))
    out["count"] = texts(counted)
    out["progress"] = progress
    failed = await client.call_tool("fail", {"message": "boom"})
    out["fail isError"] = failed["isError"]
    with pytest.raises(TimeoutError):
        await client.call_tool("hang", timeout=0.3)
    out["after timeout"] = texts(await client.call_tool("echo", {"text": "still there"}))
    return out


def test_our_client_gets_the_same_results_from_the_sdk_server_and_ours():
    async def body():
        async with Client(SDK_SERVER, cwd=ROOT) as client:
            assert client.era == "modern" and client.protocol_version == "2026-07-28"
            assert client.server_info == {"name": "sdk-test", "version": "9.9.9"}
            assert "tools" in client.capabilities
            sdk_tools = {tool["name"]: tool for tool in await client.list_tools()}
            assert set(sdk_tools) == {"echo", "add", "describe", "count", "fail", "hang"}
            assert sdk_tools["describe"]["inputSchema"]["required"] == ["name", "tags"]
            from_sdk = await same_calls(client)
        async with Client(WIRE, cwd=ROOT) as client:
            from_ours = await same_calls(client)
        assert from_sdk == from_ours
        assert from_ours["progress"] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        assert from_ours["fail isError"] is True
        assert from_ours["structured"] == DESCRIBE_STRUCTURED
    run(body())


# ---------------------------------------------------------------------------
# Our Client against legacy-only servers: the probe must fall back to initialize
# ---------------------------------------------------------------------------

LEGACY_SERVER = """
    import json, sys
    MODE = {mode!r}
    initialized = False
    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        print("got", method, file=sys.stderr, flush=True)
        if rid is None:
            continue
        if method == "initialize":
            initialized = True
            send({{"jsonrpc": "2.0", "id": rid, "result": {{"protocolVersion": "2025-06-18",
                  "capabilities": {{"tools": {{}}}},
                  "serverInfo": {{"name": "old", "version": "0.9"}}}}}})
        elif method == "tools/list" and initialized:
            send({{"jsonrpc": "2.0", "id": rid, "result": {{"tools": [{{"name": "hello",
                  "inputSchema": {{"type": "object"}}}}]}}}})
        elif method == "tools/call" and initialized:
            ok = "_meta" not in message["params"] or not any(
                k.startswith("io.modelcontextprotocol/") for k in message["params"]["_meta"])
            send({{"jsonrpc": "2.0", "id": rid, "result": {{"content": [{{"type": "text",
                  "text": "hello, legacy" if ok else "modern _meta sent to a legacy server"}}],
                  "isError": not ok}}}})
        elif MODE == "silent":
            continue
        elif MODE == "32602":
            send({{"jsonrpc": "2.0", "id": rid,
                  "error": {{"code": -32602, "message": "not initialized"}}}})
        elif MODE == "odd":
            send({{"jsonrpc": "2.0", "id": rid, "error": {{"code": -1, "message": "who knows"}}}})
        else:
            send({{"jsonrpc": "2.0", "id": rid,
                  "error": {{"code": -32601, "message": "Method not found"}}}})
"""


@pytest.mark.parametrize("mode", ["32601", "32602", "odd", "silent"])
def test_our_client_falls_back_to_initialize_on_a_legacy_server(tmp_path, mode):
    command = script(tmp_path, "legacy.py", LEGACY_SERVER.format(mode=mode))
    sent = []

    async def body():
        client = Client(command, probe_timeout=0.5, timeout=10,
                        trace=lambda direction, line: (
                            sent.append(json.loads(line)) if direction == "→" else None))
        async with client:
            assert client.era == "legacy" and client.protocol_version == "2025-06-18"
            assert client.server_info == {"name": "old", "version": "0.9"}
            assert [tool["name"] for tool in await client.list_tools()] == ["hello"]
            result = await client.call_tool("hello")
            assert texts(result) == ["hello, legacy"] and result["isError"] is False
        assert client.process.returncode is not None
        methods = [m.get("method") for m in sent]
        assert methods[0] == "server/discover"
        assert "initialize" in methods and "notifications/initialized" in methods
        assert (methods.index("initialize") < methods.index("notifications/initialized")
                < methods.index("tools/list"))
        initialize = sent[methods.index("initialize")]
        assert initialize["params"]["protocolVersion"] == "2025-11-25"
        assert initialize["params"]["clientInfo"]["name"]
    run(body())


LEGACY_PROXY = """
    import json, subprocess, sys, threading
    # The SDK's server behind a front that answers server/discover as a legacy-only server would
    # (-32601), so the SDK server sees initialize first and serves the whole connection in the
    # legacy era.
    child = subprocess.Popen([sys.executable, {sdk!r}], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    lock = threading.Lock()
    def write(data):
        with lock:
            sys.stdout.buffer.write(data); sys.stdout.buffer.flush()
    def pump():
        for line in child.stdout:
            write(line)
    forward = threading.Thread(target=pump)
    forward.start()
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if message.get("method") == "server/discover":
            write(json.dumps({{"jsonrpc": "2.0", "id": message["id"],
                              "error": {{"code": -32601,
                                        "message": "Method not found"}}}}).encode() + b"\\n")
            continue
        child.stdin.write(line); child.stdin.flush()
    child.stdin.close()
    forward.join()
    sys.exit(child.wait())
"""


def test_our_client_against_the_sdk_server_in_the_legacy_era(tmp_path):
    command = script(tmp_path, "legacy_front.py", LEGACY_PROXY.format(sdk=SDK_SERVER[1]))

    async def body():
        async with Client(command, cwd=ROOT, probe_timeout=5, timeout=20) as client:
            assert client.era == "legacy" and client.protocol_version == "2025-11-25"
            assert client.server_info["name"] == "sdk-test"
            from_sdk = await same_calls(client)
        async with Client(WIRE, cwd=ROOT) as client:
            from_ours = await same_calls(client)
        assert from_sdk == from_ours
    run(body())


MODERN_ONLY_SERVER = """
    import json, sys
    REPLY = {reply!r}
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        print("got", method, file=sys.stderr, flush=True)
        if rid is None:
            continue
        if method == "server/discover" and REPLY == "32022":
            sys.stdout.write(json.dumps({{"jsonrpc": "2.0", "id": rid, "error": {{"code": -32022,
                "message": "Unsupported protocol version",
                "data": {{"supported": ["2099-01-01"], "requested": "2026-07-28"}}}}}}) + "\\n")
        else:
            sys.stdout.write(json.dumps({{"jsonrpc": "2.0", "id": rid, "error": {{"code": -32603,
                "message": "unexpected " + str(method)}}}}) + "\\n")
        sys.stdout.flush()
"""


def test_a_modern_server_without_a_common_version_is_an_error_not_a_fallback(tmp_path):
    # Spec (stdio, Backward Compatibility): a recognized modern error such as -32022 means the
    # server is modern; do not fall back to initialize.
    command = script(tmp_path, "modern_only.py", MODERN_ONLY_SERVER.format(reply="32022"))
    sent = []

    async def body():
        client = Client(command, probe_timeout=5, timeout=5,
                        trace=lambda direction, line: (
                            sent.append(json.loads(line)) if direction == "→" else None))
        with pytest.raises(MCPError) as info:
            async with client:
                pass
        assert info.value.code == -32022
        assert "2099-01-01" in str(info.value) or info.value.data["supported"] == ["2099-01-01"]
        assert "initialize" not in [m.get("method") for m in sent]
        assert client.process.returncode is not None
    run(body())


DUAL_ADVERTISING_SERVER = """
    import json, sys
    VERSIONS = {versions!r}
    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue
        if method == "server/discover":
            send({{"jsonrpc": "2.0", "id": rid, "result": {{"resultType": "complete",
                  "supportedVersions": VERSIONS, "capabilities": {{"tools": {{}}}}, "ttlMs": 0,
                  "cacheScope": "public"}}}})
        elif method == "initialize":
            send({{"jsonrpc": "2.0", "id": rid, "result": {{"protocolVersion": "2025-11-25",
                  "capabilities": {{"tools": {{}}}},
                  "serverInfo": {{"name": "dual", "version": "1"}}}}}})
        elif method == "tools/list":
            meta = message.get("params", {{}}).get("_meta", {{}})
            if any(key.startswith("io.modelcontextprotocol/") for key in meta):
                send({{"jsonrpc": "2.0", "id": rid, "error": {{"code": -32022,
                      "message": "Unsupported protocol version",
                      "data": {{"supported": VERSIONS, "requested": "2026-07-28"}}}}}})
            else:
                send({{"jsonrpc": "2.0", "id": rid, "result": {{"tools": []}}}})
        else:
            send({{"jsonrpc": "2.0", "id": rid,
                  "error": {{"code": -32601, "message": "Method not found"}}}})
"""


def test_a_discover_result_listing_only_legacy_versions_leads_to_the_handshake(tmp_path):
    # Spec (stdio, Backward Compatibility): after a DiscoverResult, "select a mutually supported
    # version from supportedVersions and continue". The only version in common here is 2025-11-25,
    # which is spoken through initialize; the SDK's client (and, per its notes, the TypeScript and
    # Go ones) falls back in this case. What must not happen: 2026-07-28 requests to a server that
    # just said it does not speak 2026-07-28.
    command = script(tmp_path, "dual.py", DUAL_ADVERTISING_SERVER.format(versions=["2025-11-25"]))

    async def body():
        async with Client(command, probe_timeout=5, timeout=5) as client:
            assert client.era == "legacy" and client.protocol_version == "2025-11-25"
            assert await client.list_tools() == []
    run(body())


def test_a_discover_result_with_no_version_in_common_is_an_error(tmp_path):
    command = script(tmp_path, "future.py", DUAL_ADVERTISING_SERVER.format(versions=["2099-01-01"]))

    # Spec (basic/versioning): select a mutually supported version, "or surface an error to the
    # user if no compatible version exists"; so connecting fails, rather than speaking 2026-07-28
    # regardless.
    async def body():
        client = Client(command, probe_timeout=5, timeout=5)
        try:
            with pytest.raises((MCPError, ConnectionError, RuntimeError)):
                await asyncio.wait_for(client.__aenter__(), 10)
        finally:
            await client.close()
        assert client.process.returncode is not None
    run(body())


# ---------------------------------------------------------------------------
# Our Client against our server: era, progress, timeouts, and servers that die or misbehave
# ---------------------------------------------------------------------------

def test_our_client_against_our_server():
    sent, received = [], []

    def trace(direction, line):
        (sent if direction == "→" else received).append(json.loads(line))

    async def body():
        client = Client(WIRE, cwd=ROOT, trace=trace)
        async with client:
            assert client.era == "modern" and client.protocol_version == "2026-07-28"
            assert client.server_info == SERVER_INFO
            assert client.capabilities == {"tools": {"listChanged": True}}
            assert await client.list_tools() == DEFINITIONS
            assert await client.call_tool("add", {"a": 1, "b": 2}) == {
                "content": [{"type": "text", "text": "3"}], "isError": False,
                "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}
            described = await client.call_tool("describe", DESCRIBE_ARGS)
            assert described["structuredContent"] == DESCRIBE_STRUCTURED

            progress = []
            counted = await client.call_tool("count_sync", {"steps": 3},
                                             on_progress=lambda *p: progress.append(p))
            assert texts(counted) == ["counted to 3"]
            assert progress == [(1, 3, None), (2, 3, None), (3, 3, None)]

            with pytest.raises(MCPError) as info:
                await client.call_tool("no_such_tool")
            assert info.value.code == -32602

            with pytest.raises(TimeoutError):
                await client.call_tool("hang", timeout=0.3)
            hung_id = sent[-2]["id"]
            assert sent[-2]["params"]["name"] == "hang"
            assert (sent[-1]["method"] == "notifications/cancelled"
                    and sent[-1]["params"]["requestId"] == hung_id)
            assert texts(await client.call_tool("echo", {"text": "alive"})) == ["alive"]
            await asyncio.sleep(0.2)
        assert client.process.returncode == 0  # it exited by itself when stdin closed
        # cancelled: never answered
        assert all(message.get("id") != hung_id for message in received)
        for message in sent:  # every modern request carried the per-request fields
            if "id" in message:
                meta = message["params"]["_meta"]
                assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
                assert isinstance(meta["io.modelcontextprotocol/clientCapabilities"], dict)
    run(body())


def test_pipelined_calls_through_our_client():
    async def body():
        async with Client(WIRE, cwd=ROOT) as client:
            results = await asyncio.gather(
                *[client.call_tool("add", {"a": i}) for i in range(200)],
                *[client.call_tool("slow", {"ms": 20}) for _ in range(20)])
        assert [texts(r) for r in results[:200]] == [[str(i + 1)] for i in range(200)]
        assert all(texts(r) == ["slept 20 ms"] for r in results[200:])
    run(body())


def test_a_server_that_exits_at_start_is_a_connection_error_with_its_stderr(tmp_path):
    command = script(tmp_path, "dies.py", """
        import sys
        sys.stderr.write("config.toml: no such file\\n")
        sys.exit(2)
    """)

    async def body():
        client = Client(command, probe_timeout=5, timeout=5)
        with pytest.raises(ConnectionError) as info:
            await asyncio.wait_for(client.__aenter__(), 10)
        assert "config.toml: no such file" in str(info.value)
        assert client.process.returncode == 2
    run(body())


def test_a_command_that_does_not_exist_is_a_connection_error():
    async def body():
        with pytest.raises(ConnectionError):
            async with Client(["/no/such/mcp-server-binary"]):
                pass
    run(body())


def test_a_server_that_crashes_mid_call_fails_that_call_and_every_later_one():
    async def body():
        client = Client(WIRE, cwd=ROOT, timeout=10)
        async with client:
            await client.call_tool("echo", {"text": "fine"})
            waiting = asyncio.ensure_future(client.call_tool("hang"))
            await asyncio.sleep(0.1)
            with pytest.raises(ConnectionError) as info:
                await asyncio.wait_for(client.call_tool("crash", {"code": 3}), 10)
            assert "crash tool was called" in str(info.value)
            with pytest.raises(ConnectionError):  # the call that was waiting fails too, at once
                await asyncio.wait_for(waiting, 5)
            with pytest.raises(ConnectionError):
                await asyncio.wait_for(client.call_tool("echo", {"text": "x"}), 5)
        assert client.process.returncode == 3
    run(body())


def test_a_server_that_writes_garbage_to_stdout_is_a_connection_error(tmp_path):
    command = script(tmp_path, "garbage.py", """
        import sys, time
        sys.stderr.write("starting up, about to misbehave\\n"); sys.stderr.flush()
        sys.stdout.write("Welcome to my server!\\n"); sys.stdout.flush()
        for line in sys.stdin:
            pass
    """)

    async def body():
        client = Client(command, probe_timeout=5, timeout=5)
        with pytest.raises(ConnectionError) as info:
            await asyncio.wait_for(client.__aenter__(), 10)
        assert "Welcome to my server" in str(info.value)
        assert "about to misbehave" in str(info.value)
        assert client.process.returncode is not None  # it was stopped, not left behind
    run(body())


def test_a_server_that_never_answers_is_a_timeout_not_a_hang(tmp_path):
    command = script(tmp_path, "mute.py", """
        import sys
        for line in sys.stdin:
            pass
    """)

    async def body():
        client = Client(command, probe_timeout=0.3, timeout=0.5)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(client.__aenter__(), 10)
        assert client.process.returncode is not None
    run(body())


def test_a_server_that_ignores_eof_and_sigterm_is_killed(tmp_path):
    command = script(tmp_path, "stubborn.py", """
        import json, signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for line in sys.stdin:
            message = json.loads(line)
            if "id" in message:
                sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {}, "ttlMs": 0, "cacheScope": "public"}}) + "\\n")
                sys.stdout.flush()
        while True:
            time.sleep(1)
    """)

    async def body():
        client = Client(command, timeout=5)
        async with client:
            assert client.era == "modern"
        assert client.process.returncode == -9  # stdin closed, SIGTERM ignored: SIGKILL
    run(body(), timeout=30)


def test_the_module_under_test_is_the_repository_copy():
    assert Path(mcp_min.__file__).resolve() == ROOT / "mcp_min.py"


# ---------------------------------------------------------------------------
# Our Client reads the SDK server's resources, resource templates, prompts and completions,
# in both eras (spec: server/resources, server/prompts, server/utilities/completion)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_our_client_reads_the_sdk_servers_resources_prompts_and_completions(legacy):
    async def body():
        async with Client(SDK_SERVER, cwd=ROOT, legacy=legacy) as client:
            assert client.era == ("legacy" if legacy else "modern")
            assert {"resources", "prompts", "completions"} <= set(client.capabilities)
            assert await client.list_resources() == [{
                "uri": "notes://readme", "name": "readme", "mimeType": "text/plain",
                "description": "What this server is for."}]
            assert await client.list_resource_templates() == [{
                "uriTemplate": "notes://{topic}", "name": "note", "mimeType": "text/plain",
                "description": "A note on one topic."}]
            readme = await client.read_resource("notes://readme")
            assert readme["contents"] == [{"uri": "notes://readme", "mimeType": "text/plain",
                                           "text": "The official SDK's server, for the interop "
                                                   "tests."}]
            cats = await client.read_resource("notes://cats")  # through the template
            assert cats["contents"][0]["text"] == "A note on cats."
            with pytest.raises(MCPError) as unknown:
                await client.read_resource("notes://a/b")  # no template matches a path
            assert unknown.value.code == -32602

            assert await client.list_prompts() == [{
                "name": "greet", "description": "Greet someone by name.",
                "arguments": [{"name": "name", "required": True},
                              {"name": "style", "required": False}]}]
            greeting = await client.get_prompt("greet", {"name": "Ada", "style": "poetic"})
            assert greeting["messages"] == [{"role": "user", "content": {
                "type": "text", "text": "Say hello to Ada, in a poetic way."}}]
            with pytest.raises(MCPError):  # a required argument is missing
                await client.get_prompt("greet")

            topics = await client.complete({"type": "ref/resource", "uri": "notes://{topic}"},
                                           "topic", "ca")
            assert topics["completion"]["values"] == ["cake", "cats"]
            styles = await client.complete({"type": "ref/prompt", "name": "greet"}, "style", "p",
                                           context_arguments={"name": "Ada"})
            assert styles["completion"]["values"] == ["plain", "poetic"]
    run(body())
