"""The client hears of changes: subscribe(uri), unsubscribe(uri) and on_notification, both eras.

Legacy (2025-11-25): resources/subscribe and resources/unsubscribe; notifications/resources/updated
and notifications/{tools,prompts,resources}/list_changed come unasked (stdio; over HTTP on the
session's GET stream). 2026-07-28 (basic/patterns/subscriptions): one subscriptions/listen
request that stays open; the acknowledgement first; every notification tagged with the listen
request's id; ended with notifications/cancelled (stdio) or by hanging up (HTTP); re-opened after
a drop with a backoff that doubles up to a bound. Wire tests (raw server lines in, the exact
lines the client sends out) and interop with the official SDK's low-level server.
"""
import asyncio
import functools
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import client as client_module  # noqa: E402
from client import Client, HTTPClient  # noqa: E402
from mcp_min import MCPError  # noqa: E402
from conftest import serving_on_free_port  # noqa: E402

SDK_CHANGES = [sys.executable, str(ROOT / "tests" / "sdk_changes_server.py")]
OUR_CHANGES = [sys.executable, str(ROOT / "tests" / "changes_server.py")]
OUR_MCP_MIN = Path(os.environ.get("MCP_MIN_DIR") or ROOT) / "mcp_min.py"  # what it runs
TAG = "io.modelcontextprotocol/subscriptionId"
UPDATED, TOOLS = "notifications/resources/updated", "notifications/tools/list_changed"
PROMPTS = "notifications/prompts/list_changed"


def run(coroutine, timeout=90):
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


# --- Wire tests over stdio: a server that writes scripted lines ---

# SCRIPT maps a method ("tools/call NAME" for a tool) to a list of replies, one per time it is
# asked (the last repeats); each reply is a list of raw lines. {id} is the request's id, {listen}
# the id of the last subscriptions/listen, {cancelled} the requestId a notifications/cancelled
# names. The server writes nothing else.
SCRIPTED = textwrap.dedent('''
    import json, sys
    script, seen, listen = json.loads(sys.argv[1]), {}, None
    for line in sys.stdin:
        message = json.loads(line)
        method, params = message.get("method", ""), message.get("params", {})
        listen = message["id"] if method == "subscriptions/listen" else listen
        key = method + (" " + params["name"] if method == "tools/call" else "")
        replies = script.get(key, [[]])
        seen[key] = seen.get(key, -1) + 1
        for reply in replies[min(seen[key], len(replies) - 1)]:
            values = {"{id}": message.get("id"), "{listen}": listen,
                      "{cancelled}": params.get("requestId")}
            for name, value in values.items():
                reply = reply.replace(name, json.dumps(value))
            sys.stdout.write(reply + "\\n")
        sys.stdout.flush()
''')
MODERN_META = ('"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
               '"io.modelcontextprotocol/clientCapabilities":'
               '{"extensions":{"io.modelcontextprotocol/tasks":{}}},'  # declared by default
               '"io.modelcontextprotocol/clientInfo":{"name":"mcp-min","version":"0.1.0"}}')
DISCOVERED = ('{"jsonrpc":"2.0","id":{id},"result":{"resultType":"complete","supportedVersions":'
              '["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"ttlMs":0,'
              '"cacheScope":"public"}}')
INITIALIZED = ('{"jsonrpc":"2.0","id":{id},"result":{"protocolVersion":"2025-11-25",'
               '"capabilities":{"resources":{"subscribe":true,"listChanged":true}},'
               '"serverInfo":{"name":"old","version":"1"}}}')
ACK = ('{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":'
       '{"io.modelcontextprotocol/subscriptionId":{id}},'
       '"notifications":{"toolsListChanged":true}}}')
COMPLETE = ('{"jsonrpc":"2.0","id":{cancelled},"result":{"resultType":"complete","_meta":'
            '{"io.modelcontextprotocol/subscriptionId":{cancelled}}}}')
DONE = '{"jsonrpc":"2.0","id":{id},"result":{"content":[]}}'


def change(method, tag="{listen}", uri=None):
    """A change notification line, tagged with a listen id (None: untagged)."""
    params = {"uri": uri} if uri else {}
    line = json.dumps({"jsonrpc": "2.0", "method": method, "params": params})
    return line if tag is None else line.replace('"params": {', '"params": {"_meta": {"%s": %s}%s'
                                                 % (TAG, tag, ", " if uri else ""))


def listen_line(request_id, uris=()):
    wanted = ('{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,'
              f'"resourceSubscriptions":{json.dumps(list(uris), separators=(",", ":"))}}}')
    return (f'{{"jsonrpc":"2.0","id":{request_id},"method":"subscriptions/listen","params":'
            f'{{"notifications":{wanted},{MODERN_META}}}}}')


def cancel_line(request_id):
    return ('{"jsonrpc":"2.0","method":"notifications/cancelled","params":'
            f'{{"requestId":{request_id}}}}}')


def scripted(script, **options):
    """A Client of the scripted server; the lines it sends; what on_notification heard."""
    sent, heard = [], []
    trace = lambda direction, line: sent.append(line) if direction == "→" else None  # noqa: E731
    command = [sys.executable, "-c", SCRIPTED, json.dumps(script)]
    client = Client(command, trace=trace, on_notification=lambda *seen: heard.append(seen),
                    **options)
    return client, sent, heard


def test_modern_stdio_listen_acknowledged_tagged_and_cancelled_on_the_wire():
    script = {"server/discover": [[DISCOVERED]], "subscriptions/listen": [[ACK]],
              "notifications/cancelled": [[COMPLETE]],
              "tools/call change": [[change(UPDATED, uri="docs:///a"),
                                     change(UPDATED, tag="999", uri="docs:///b"),  # not ours
                                     change(TOOLS, tag=None),  # untagged: not on a stream
                                     change(PROMPTS), DONE]]}
    client, sent, heard = scripted(script)

    async def body():
        async with client:
            assert sent[1:] == [listen_line(2)]  # on_notification: a stream from the start
            assert await client.subscribe("docs:///a") == {"toolsListChanged": True}
            await client.call_tool("change")
            await client.unsubscribe("docs:///a")
            sent_before_close = len(sent)
        return sent_before_close
    sent_before_close = run(body())
    assert sent[2:] == [cancel_line(2), listen_line(3, ["docs:///a"]),
                        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"change",'
                        f'"arguments":{{}},{MODERN_META}}}}}',
                        cancel_line(3), listen_line(5)]
    assert len(sent) == sent_before_close  # closing stdin ends the stream: nothing more is sent
    assert heard == [(UPDATED, {"_meta": {TAG: 3}, "uri": "docs:///a"}),
                     (PROMPTS, {"_meta": {TAG: 3}})]


def test_legacy_stdio_subscribe_unsubscribe_and_changes_that_come_unasked():
    updated = '{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x:a"}}'
    script = {"initialize": [[INITIALIZED]],
              "resources/subscribe": [['{"jsonrpc":"2.0","id":{id},"result":{}}']],
              "resources/unsubscribe": [['{"jsonrpc":"2.0","id":{id},"error":{"code":-32602,'
                                         '"message":"Resource not found"}}']],
              "tools/call change": [[updated, change(TOOLS, tag=None),
                                     '{"jsonrpc":"2.0","method":"notifications/progress",'
                                     '"params":{"progressToken":"p","progress":1}}', DONE]]}
    client, sent, heard = scripted(script, legacy=True)

    async def body():
        async with client:
            assert await client.subscribe("x:a") == {}
            await client.call_tool("change")
            with pytest.raises(MCPError) as refused:
                await client.unsubscribe("x:a")
            assert refused.value.code == -32602
    run(body())
    assert sent[2:] == ['{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":'
                        '{"uri":"x:a"}}',
                        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"change",'
                        '"arguments":{}}}',
                        '{"jsonrpc":"2.0","id":4,"method":"resources/unsubscribe","params":'
                        '{"uri":"x:a"}}']  # and never a subscriptions/listen
    assert heard == [(UPDATED, {"uri": "x:a"}), (TOOLS, {})]


def test_subscriptions_made_at_once_share_the_stream_that_has_them_all():
    client, sent, heard = scripted({"server/discover": [[DISCOVERED]],
                                    "subscriptions/listen": [[ACK]]})

    async def body():
        async with client:
            await asyncio.gather(client.subscribe("docs:///a"), client.subscribe("docs:///b"))
    run(body())
    listens = [line for line in sent if '"subscriptions/listen"' in line]
    assert listens == [listen_line(2), listen_line(3, ["docs:///a", "docs:///b"])]


def test_a_server_that_refuses_to_listen_still_connects_and_subscribe_says_why():
    refused = ('{"jsonrpc":"2.0","id":{id},"error":{"code":-32601,'
               '"message":"Method not found: subscriptions/listen"}}')
    client, sent, heard = scripted({"server/discover": [[DISCOVERED]],
                                    "subscriptions/listen": [[refused]]})

    async def body():
        async with client:
            with pytest.raises(MCPError) as error:
                await client.subscribe("docs:///a")
            assert error.value.code == -32601
    run(body())
    assert sent[1:] == [listen_line(2), cancel_line(2), listen_line(3, ["docs:///a"])]


def test_no_acknowledgement_is_a_timeout_and_a_raising_callback_costs_nothing_else(capfd):
    script = {"server/discover": [[DISCOVERED]], "subscriptions/listen": [[ACK], []],
              "tools/call change": [[change(TOOLS), change(PROMPTS), DONE]]}
    heard = []

    def on_notification(method, params):
        heard.append(method)
        if method == TOOLS:
            raise ValueError("a bug in the host")
    client, sent, _ = scripted(script, timeout=3)
    client.on_notification = on_notification

    async def body():
        async with client:
            await client.call_tool("change")
            with pytest.raises(TimeoutError):  # the second listen is never acknowledged
                await client.subscribe("docs:///a")
    run(body())
    assert heard == [TOOLS, PROMPTS]
    assert "a callback raised ValueError('a bug in the host')" in capfd.readouterr().err


def test_a_listen_stream_that_ends_is_opened_again_and_only_its_own_changes_are_heard(
        monkeypatch):
    # The first stream is acknowledged and ended by the server at once (its complete result),
    # the second stays open; a change tagged with the first stream's id is no longer heard.
    ended = '{"jsonrpc":"2.0","id":{id},"result":{"resultType":"complete"}}'
    script = {"server/discover": [[DISCOVERED]], "subscriptions/listen": [[ACK, ended], [ACK]],
              "tools/call change": [[change(TOOLS, tag="2"), change(TOOLS), DONE]]}
    client, sent, heard = scripted(script)
    monkeypatch.setattr(client_module, "LISTEN_RETRY", 0.01)

    async def body():
        async with client:
            while len(sent) < 3:  # the second listen, after LISTEN_RETRY
                await asyncio.sleep(0.01)
            await client.call_tool("change")
    run(body())
    assert sent[1:3] == [listen_line(2), listen_line(3)]
    assert heard == [(TOOLS, {"_meta": {TAG: 3}})]


def test_the_wait_before_opening_again_doubles_up_to_its_bound_and_starts_over_after_an_ack(
        monkeypatch):
    failed = '{"jsonrpc":"2.0","id":{id},"error":{"code":-32603,"message":"Subscription limit"}}'
    script = {"server/discover": [[DISCOVERED]],
              "subscriptions/listen": [[ACK, failed], [failed], [failed], [failed], [failed],
                                       [ACK, failed], [ACK]]}
    client, sent, heard = scripted(script)
    monkeypatch.setattr(client_module, "LISTEN_RETRY", 0.01)
    monkeypatch.setattr(client_module, "MAX_LISTEN_RETRY", 0.04)
    waits, real_sleep = [], asyncio.sleep

    async def recorded_sleep(delay, *args):  # the client's waits, as they happen
        if delay in (0.01, 0.02, 0.04):
            waits.append(delay)
        await real_sleep(delay, *args)
    monkeypatch.setattr(asyncio, "sleep", recorded_sleep)

    async def body():
        async with client:
            while sum('"subscriptions/listen"' in line for line in sent) < 7:
                await real_sleep(0.01)
    run(body())
    # after an acknowledged stream: the first wait; each failure without one: twice as long,
    # never more than the bound
    assert waits[:6] == [0.01, 0.02, 0.04, 0.04, 0.04, 0.01]
    assert [line for line in sent if "listen" in line] == [listen_line(n) for n in range(2, 9)]


# --- Wire tests over HTTP (2026-07-28): the listen stream is an SSE response to a POST ---

def sse_event(line):
    return f"data: {line}\n\n".encode()


async def listen_http_server(listens):
    """A 2026-07-28 HTTP server: discover answered; each subscriptions/listen POST gets an SSE
    stream with the acknowledgement and a tools list change; the first is then dropped, the
    others stay open until the client hangs up. `listens` gets (id, headers, hung up)."""
    async def handle(reader, writer):
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {name.lower(): value.strip() for name, _, value in
                   (line.partition(":") for line in head[1:] if line)}
        message = json.loads(await reader.readexactly(int(headers["content-length"])))
        if message.get("method") == "subscriptions/listen":
            request_id = message["id"]
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
            writer.write(sse_event(ACK.replace("{id}", str(request_id))))
            writer.write(sse_event(change(TOOLS, tag=str(request_id))))
            await writer.drain()
            entry = [request_id, headers, False]
            listens.append(entry)
            if len(listens) > 1:
                entry[2] = await reader.read() == b""  # the client hangs up: EOF
        elif "id" in message:
            line = (DISCOVERED if message["method"] == "server/discover" else DONE).replace(
                "{id}", str(message["id"]))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         b"%d\r\n\r\n%s" % (len(line), line.encode()))
        else:
            writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()
    return await asyncio.start_server(handle, "127.0.0.1", 0)


def test_http_listen_stream_dropped_is_opened_again_and_closing_hangs_it_up(monkeypatch):
    monkeypatch.setattr(client_module, "LISTEN_RETRY", 0.01)
    listens, heard = [], []

    async def body():
        listener = await listen_http_server(listens)
        url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/mcp"
        async with HTTPClient(url, on_notification=lambda *seen: heard.append(seen)) as client:
            while len(heard) < 2:  # the first stream's change, then the second's
                await asyncio.sleep(0.01)
            second = client.listening
        for _ in range(200):  # the server's handler sees the hang-up
            if listens[1][2]:
                break
            await asyncio.sleep(0.01)
        listener.close()
        return second
    second = run(body())
    assert [entry[0] for entry in listens] == [2, 3]
    assert listens[0][1]["mcp-method"] == "subscriptions/listen"
    assert heard == [(TOOLS, {"_meta": {TAG: 2}}), (TOOLS, {"_meta": {TAG: 3}})]
    assert listens[1][2] and second.done()  # close() hung up the open stream, and it stays shut


# --- Interop: the official SDK's low-level server (tests/sdk_changes_server.py) ---

async def exercise_changes(client, heard):
    """subscribe, three kinds of change, unsubscribe: what the client heard. A marker change
    (prompts) ends each step: changes on one stream arrive in order, so once it is heard,
    everything before it has been. It is announced after its call was answered: the client
    hears it while it sends nothing (a legacy HTTP session: on its GET stream)."""
    async def until_heard(method):
        while not any(seen[0] == method for seen in heard):
            await asyncio.sleep(0.01)

    await client.subscribe("notes://a")
    for what, uri in [("updated", "notes://a"), ("updated", "notes://b"), ("tools", "")]:
        await client.call_tool("change", {"what": what, "uri": uri})
    await client.call_tool("change", {"what": "prompts", "later": True})
    await until_heard(PROMPTS)
    before = [seen[0] for seen in heard]
    heard.clear()
    await client.unsubscribe("notes://a")
    await client.call_tool("change", {"what": "updated", "uri": "notes://a"})
    await client.call_tool("change", {"what": "prompts", "later": True})
    await until_heard(PROMPTS)
    return before, [seen[0] for seen in heard]


@pytest.mark.parametrize("legacy", [True, False], ids=["legacy", "2026-07-28"])
def test_sdk_server_over_stdio_both_eras(legacy):
    heard = []

    async def body():
        async with Client(SDK_CHANGES, legacy=legacy, probe_timeout=30,
                          on_notification=lambda *seen: heard.append(seen)) as client:
            assert client.era == ("legacy" if legacy else "modern")
            return await exercise_changes(client, heard)
    before, after = run(body())
    assert before == [UPDATED, TOOLS, PROMPTS]  # notes://a only: notes://b is not subscribed to
    assert after == [PROMPTS]
    if not legacy:
        assert {seen[1]["_meta"][TAG] for seen in heard} == {8}  # unsubscribe's listen request


@pytest.fixture(scope="module")
def sdk_http():
    yield from serving_on_free_port(SDK_CHANGES, "--port")


@pytest.mark.parametrize("legacy", [True, False], ids=["legacy", "2026-07-28"])
def test_sdk_server_over_http_both_eras(sdk_http, legacy):
    heard = []

    async def body():
        async with HTTPClient(sdk_http, legacy=legacy, probe_timeout=30,
                              on_notification=lambda *seen: heard.append(seen)) as client:
            assert client.era == ("legacy" if legacy else "modern")
            return await exercise_changes(client, heard)
    before, after = run(body())
    assert before == [UPDATED, TOOLS, PROMPTS]
    assert after == [PROMPTS]


# --- Our own server (mcp_min's server.resource_updated and server.list_changed) ---

NOT_YET = pytest.mark.skipif("def resource_updated" not in OUR_MCP_MIN.read_text(),
                             reason="this mcp_min.py announces no changes yet (issue 23)")


@pytest.fixture(scope="module")
def our_http():
    yield from serving_on_free_port(OUR_CHANGES, "--port")


@NOT_YET
@pytest.mark.parametrize("http", [False, True], ids=["stdio", "HTTP"])
@pytest.mark.parametrize("legacy", [True, False], ids=["legacy", "2026-07-28"])
def test_our_server_both_eras(request, legacy, http):
    heard = []
    make = functools.partial(HTTPClient, request.getfixturevalue("our_http")) if http else (
        functools.partial(Client, OUR_CHANGES))

    async def body():
        async with make(legacy=legacy, on_notification=lambda *seen: heard.append(seen)) as client:
            assert client.era == ("legacy" if legacy else "modern")
            return await exercise_changes(client, heard)
    before, after = run(body())
    assert before == [UPDATED, TOOLS, PROMPTS]
    assert after == [PROMPTS]
