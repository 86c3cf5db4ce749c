"""Change notifications (issue 23), server side, on the wire: raw lines into
tests/notify_server.py, exact lines out. Legacy (2025-11-25): resources/subscribe and unsubscribe,
notifications/resources/updated to the subscribers only, list_changed to every client, over stdio
and on a session's GET stream; SSE polling (SEP-1699): priming events, a stream the server closes,
resumption with Last-Event-ID. 2026-07-28: subscriptions/listen, over stdio and as a long-lived
SSE response. And the bounds: listens per client, a listener that reads nothing.
"""
import http.client, json, queue, re, socket, subprocess, sys, threading, time
from pathlib import Path

import pytest

from conftest import http_server_port, post_mcp as post

ROOT = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, str(ROOT / "tests" / "notify_server.py")]
META = "io.modelcontextprotocol/"
MODERN_META = {META + "protocolVersion": "2026-07-28", META + "clientCapabilities": {}}
SERVER_INFO = {"name": "notify-test", "version": "1.0.0"}
CAPABILITIES = {"tools": {"listChanged": True},
                "resources": {"listChanged": True, "subscribe": True},
                "prompts": {"listChanged": True}, "completions": {}}


def line(message):
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def request(request_id, method, params=None):
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def notification(method, params):
    return {"jsonrpc": "2.0", "method": method, "params": params}


def result(request_id, value):
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def text(request_id, words):
    return result(request_id, {"content": [{"type": "text", "text": words}], "isError": False})


def modern(message):
    """The message as a 2026-07-28 request: its _meta, and the two fields every result has."""
    message["params"]["_meta"] = MODERN_META
    return message


def modern_text(request_id, words):
    answer = text(request_id, words)
    answer["result"].update(resultType="complete", _meta={META + "serverInfo": SERVER_INFO})
    return answer


def tagged(method, params, subscription_id):
    return notification(method, {**params, "_meta": {META + "subscriptionId": subscription_id}})


def listen_ended(request_id):
    return result(request_id, {"_meta": {META + "subscriptionId": request_id,
                                         META + "serverInfo": SERVER_INFO},
                               "resultType": "complete"})


def call(request_id, name, **arguments):
    return request(request_id, "tools/call", {"name": name, "arguments": arguments})


UPDATED_A = notification("notifications/resources/updated", {"uri": "note:///a"})
INITIALIZE = request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "t", "version": "0"}})
INITIALIZED = result(0, {"protocolVersion": "2025-11-25", "capabilities": CAPABILITIES,
                         "serverInfo": SERVER_INFO})
NOT_FOUND = {"code": -32602, "message": "Resource not found: note:///zzz; resources/list and "
                                        "resources/templates/list say what exists",
             "data": {"uri": "note:///zzz"}}


class Stdio:
    """The server on pipes: send lines, read the lines it writes, one at a time."""

    def __init__(self):
        self.proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=ROOT)
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(raw) for raw in self.proc.stdout],
                         daemon=True).start()

    def send(self, *messages):
        for message in messages:
            self.proc.stdin.write(line(message))
        self.proc.stdin.flush()

    def expect(self, *messages):
        """The next lines are exactly these, in this order."""
        for message in messages:
            assert self.lines.get(timeout=15) == line(message)

    def silent(self, seconds=0.3):
        with pytest.raises(queue.Empty):
            self.lines.get(timeout=seconds)


@pytest.fixture
def stdio():
    server = Stdio()
    yield server
    if server.proc.poll() is None:
        server.proc.kill()
    server.proc.wait()


def test_legacy_subscribe_updates_only_the_subscribed_uri_and_unsubscribe_twice(stdio):
    stdio.send(INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    stdio.expect(INITIALIZED)
    stdio.send(request(1, "resources/subscribe", {"uri": "note:///zzz"}))  # not a note
    stdio.expect({"jsonrpc": "2.0", "id": 1, "error": NOT_FOUND})
    stdio.send(request(2, "resources/subscribe", {}))
    stdio.expect({"jsonrpc": "2.0", "id": 2, "error": {
        "code": -32602, "message": 'Invalid params: "uri" must be a string'}})
    stdio.send(request(3, "resources/subscribe", {"uri": "note:///a"}))
    stdio.expect(result(3, {}))
    stdio.send(call(4, "touch", uri="note:///b"))  # nobody subscribed to b: no notification
    stdio.expect(text(4, "touched note:///b"))
    stdio.send(call(5, "touch", uri="note:///a"))
    stdio.expect(UPDATED_A, text(5, "touched note:///a"))
    stdio.send(call(6, "change", kind="resources"))  # every legacy client hears of list changes
    stdio.expect(notification("notifications/resources/list_changed", {}),
                 text(6, "resources changed"))
    stdio.send(request(7, "resources/unsubscribe", {"uri": "note:///a"}))
    stdio.expect(result(7, {}))
    stdio.send(request(8, "resources/unsubscribe", {"uri": "note:///a"}))  # twice: no error
    stdio.expect(result(8, {}))
    stdio.send(call(9, "touch", uri="note:///a"))
    stdio.expect(text(9, "touched note:///a"))
    stdio.silent()


def test_modern_listen_over_stdio_filtered_tagged_and_ended_by_cancel_and_by_eof(stdio):
    filters = {"toolsListChanged": True, "resourceSubscriptions": ["note:///a", "note:///a",
                                                                   "note:///zzz"]}
    stdio.send(modern(request("L", "subscriptions/listen", {"notifications": filters})))
    stdio.expect(tagged("notifications/subscriptions/acknowledged", {"notifications": {
        "toolsListChanged": True, "resourceSubscriptions": ["note:///a", "note:///zzz"]}}, "L"))
    stdio.send(modern(request("E", "subscriptions/listen", {"notifications": {}})))  # empty
    stdio.expect(tagged("notifications/subscriptions/acknowledged", {"notifications": {}}, "E"))
    stdio.send(modern(call(1, "change", kind="tools")))
    stdio.expect(tagged("notifications/tools/list_changed", {}, "L"),
                 modern_text(1, "tools changed"))
    stdio.send(modern(call(2, "change", kind="prompts")))  # nobody asked for prompts
    stdio.expect(modern_text(2, "prompts changed"))
    stdio.send(modern(call(3, "touch", uri="note:///a")))
    stdio.expect(tagged("notifications/resources/updated", {"uri": "note:///a"}, "L"),
                 modern_text(3, "touched note:///a"))
    # Progress belongs to its request: it never carries a subscription id.
    counting = modern(call(4, "count", steps=1))
    counting["params"]["_meta"] = {**MODERN_META, "progressToken": "p"}
    stdio.send(counting)
    stdio.expect(notification("notifications/progress", {"progressToken": "p", "progress": 1,
                                                         "total": 1}),
                 modern_text(4, "counted to 1"))
    stdio.send(notification("notifications/cancelled", {"requestId": "L"}))
    stdio.expect(listen_ended("L"))
    stdio.send(modern(call(5, "touch", uri="note:///a")))  # L has ended
    stdio.expect(modern_text(5, "touched note:///a"))
    stdio.proc.stdin.close()  # EOF: the listens still open end with their result
    stdio.expect(listen_ended("E"))
    assert stdio.proc.wait(15) == 0


def test_listens_per_client_are_capped_and_a_filter_must_be_one(stdio):
    for number in range(16):
        stdio.send(modern(request(number, "subscriptions/listen", {"notifications": {}})))
        stdio.expect(tagged("notifications/subscriptions/acknowledged", {"notifications": {}},
                            number))
    refusal = {"code": -32602, "message": 'Invalid params: "notifications" must be a filter, of '
                                          "at most 1000 URIs; 16 listens a client"}
    for params in ({"notifications": {}}, {"notifications": []},
                   {"notifications": {"resourceSubscriptions": [1]}}, {}):
        stdio.send(modern(request("x", "subscriptions/listen", params)))
        stdio.expect({"jsonrpc": "2.0", "id": "x", "error": refusal})
    stdio.send({**INITIALIZE, "id": "init"})  # subscribe is legacy; listen is 2026-07-28
    stdio.expect({**INITIALIZED, "id": "init"})
    stdio.send(request("a", "subscriptions/listen", {"notifications": {}}))
    stdio.expect({"jsonrpc": "2.0", "id": "a", "error": {
        "code": -32601, "message": "Method not found: subscriptions/listen"}})
    stdio.send(modern(request("b", "resources/subscribe", {"uri": "note:///a"})))
    stdio.expect({"jsonrpc": "2.0", "id": "b", "error": {
        "code": -32601, "message": "Method not found: resources/subscribe"}})


def test_a_stdio_listener_that_reads_nothing_loses_notifications_not_memory(stdio):
    times = 200_000
    stdio.send(modern(request("L", "subscriptions/listen",
                              {"notifications": {"resourceSubscriptions": ["note:///a"]}})),
               modern(call(1, "flood", times=times, uri="note:///a")))
    time.sleep(2)  # the client reads nothing meanwhile
    status = Path(f"/proc/{stdio.proc.pid}/status").read_text()
    rss_kb = int(re.search(r"VmRSS:\s+(\d+)", status)[1])
    assert rss_kb < 200_000, f"the server holds {rss_kb} kB"
    seen, answered = 0, None
    while answered is None:
        message = json.loads(stdio.lines.get(timeout=30))
        if message.get("method") == "notifications/resources/updated":
            seen += 1
        elif message.get("id") == 1:
            answered = message
    assert answered == modern_text(1, f"announced {times} times")
    assert 0 < seen < times  # some arrived, the rest were dropped, and the server lives on
    stdio.send(notification("notifications/cancelled", {"requestId": "L"}))
    while json.loads(stdio.lines.get(timeout=30)).get("id") != "L":
        pass


# --- Streamable HTTP: the session's GET stream, SSE polling, listen as an SSE response ---

@pytest.fixture(scope="module")
def port():
    yield from http_server_port([*SERVER, "--http", "0", "--write-timeout", "1"])


def get(port, headers):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    connection.request("GET", "/mcp", headers={"Accept": "text/event-stream", **headers})
    return connection.getresponse()


def event(response):
    """The next SSE event of a response: (its id or None, its data or "")."""
    event_id, data = None, None
    while True:
        raw = response.fp.readline().decode()
        assert raw, "the stream ended"
        if raw == "\n" and data is not None:
            return event_id, data
        field, _, value = raw.rstrip("\n").partition(": ")
        event_id = value if field == "id" else event_id
        data = value if field == "data" else data


def session(port):
    """A legacy session: its headers."""
    opened = post(port, INITIALIZE)
    assert json.loads(opened.read()) == INITIALIZED
    return {"Mcp-Session-Id": opened.getheader("Mcp-Session-Id"),
            "MCP-Protocol-Version": "2025-11-25"}


def test_the_get_stream_carries_a_sessions_notifications_and_resumes(port):
    headers = session(port)
    stream = get(port, headers)
    assert (stream.status, stream.getheader("Content-Type")) == (200, "text/event-stream")
    priming_id, data = event(stream)
    assert data == "" and priming_id.endswith("-0")
    stream_id = priming_id[:-2]
    assert json.loads(post(port, request(1, "resources/subscribe", {"uri": "note:///a"}),
                           headers).read()) == result(1, {})
    post(port, call(2, "touch", uri="note:///a"), headers).read()
    assert event(stream) == (f"{stream_id}-1", line(UPDATED_A).decode().strip())
    stream.close()
    post(port, call(3, "change", kind="tools"), headers).read()  # missed while away
    # Back with the last id seen: what was missed comes first, once; then what is new.
    stream = get(port, {**headers, "Last-Event-ID": f"{stream_id}-1"})
    changed = notification("notifications/tools/list_changed", {})
    assert event(stream) == (f"{stream_id}-2", line(changed).decode().strip())
    post(port, call(4, "touch", uri="note:///a"), headers).read()
    assert event(stream) == (f"{stream_id}-3", line(UPDATED_A).decode().strip())
    stream.close()
    # An id from the future replays nothing; what comes next still comes, once.
    stream = get(port, {**headers, "Last-Event-ID": f"{stream_id}-99"})
    post(port, call(5, "touch", uri="note:///a"), headers).read()
    assert event(stream) == (f"{stream_id}-4", line(UPDATED_A).decode().strip())
    stream.close()
    for unknown in ("nope-1", f"{stream_id}-x", "", "-"):  # an unknown stream: 400, no stream
        refused = get(port, {**headers, "Last-Event-ID": unknown})
        assert refused.status == 400 and "Last-Event-ID" in json.loads(refused.read())[
            "error"]["message"]


def test_sse_polling_the_server_closes_a_calls_stream_and_the_get_resumes_it(port):
    headers = session(port)
    closed = post(port, request(1, "tools/call", {"name": "poll", "arguments": {},
                                                  "_meta": {"progressToken": "p"}}), headers)
    assert closed.getheader("Content-Type") == "text/event-stream"
    body = closed.read().decode()  # the server ends the connection after the priming event
    found = re.fullmatch(r"id: (\w+)-0\nretry: 1000\ndata: \n\n", body)
    assert found, body
    stream_id = found[1]
    resumed = get(port, {**headers, "Last-Event-ID": f"{stream_id}-0"})
    events = [event(resumed) for _ in range(3)]
    events = [found for found in events if found[1]]  # a priming event may come first again
    progress = notification("notifications/progress", {"progressToken": "p", "progress": 1,
                                                       "total": 1})
    assert events[:2] == [(f"{stream_id}-1", line(progress).decode().strip()),
                          (f"{stream_id}-2", line(text(1, "polled")).decode().strip())]
    # Resumed after the progress: only the result comes again; after the result, nothing.
    again = get(port, {**headers, "Last-Event-ID": f"{stream_id}-1"})
    assert event(again) == (f"{stream_id}-2", line(text(1, "polled")).decode().strip())
    assert again.read() == b""
    assert get(port, {**headers, "Last-Event-ID": f"{stream_id}-2"}).read() == b""


def test_event_ids_only_at_2025_11_25(port):
    headers = {**session(port), "MCP-Protocol-Version": "2025-06-18"}
    counting = call(1, "count", steps=1)
    counting["params"]["_meta"] = {"progressToken": "p"}
    assert "id:" not in post(port, counting, headers).read().decode()
    counting = modern(call(2, "count", steps=1))
    counting["params"]["_meta"] = {**MODERN_META, "progressToken": "p"}
    body = post(port, counting, {"MCP-Protocol-Version": "2026-07-28",
                                 "Mcp-Method": "tools/call", "Mcp-Name": "count"}).read().decode()
    assert "notifications/progress" in body and "id:" not in body


MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28"}


def test_modern_listen_is_a_long_lived_sse_response(port):
    listen = modern(request(7, "subscriptions/listen",
                            {"notifications": {"resourceSubscriptions": ["note:///a"]}}))
    stream = post(port, listen, {**MODERN_HEADERS, "Mcp-Method": "subscriptions/listen"})
    assert stream.getheader("Content-Type") == "text/event-stream"
    assert event(stream) == (None, line(tagged("notifications/subscriptions/acknowledged", {
        "notifications": {"resourceSubscriptions": ["note:///a"]}}, 7)).decode().strip())
    touched = post(port, modern(call(1, "touch", uri="note:///a")),
                   {**MODERN_HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": "touch"})
    assert json.loads(touched.read()) == modern_text(1, "touched note:///a")
    assert event(stream) == (None, line(tagged("notifications/resources/updated",
                                               {"uri": "note:///a"}, 7)).decode().strip())
    stream.close()  # the client ends the listen; no result is owed
    json_only = post(port, listen, {**MODERN_HEADERS, "Mcp-Method": "subscriptions/listen",
                                    "Accept": "application/json"})
    assert json_only.status == 400
    assert json.loads(json_only.read())["error"]["message"] == (
        "Bad Request: subscriptions/listen needs Accept: text/event-stream")


def test_an_http_listener_that_reads_nothing_is_cut_off_and_others_are_answered(port):
    uri = "note:///" + "x" * 4000  # big notifications, to fill every buffer on the way
    listen = json.dumps(modern(request(1, "subscriptions/listen", {
        "notifications": {"resourceSubscriptions": [uri]}}))).encode()
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.connect(("127.0.0.1", port))
    reader.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   b"Accept: text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                   b"Mcp-Method: subscriptions/listen\r\n"
                   + f"Content-Length: {len(listen)}\r\n\r\n".encode() + listen)
    headers = {**MODERN_HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": "flood"}
    for _ in range(20):  # meanwhile, another client's calls are answered
        flooded = post(port, modern(call(2, "flood", times=1000, uri=uri)), headers)
        assert json.loads(flooded.read()) == modern_text(2, "announced 1000 times")
    time.sleep(1.5)  # past the server's write timeout of one second; then one more change
    post(port, modern(call(3, "flood", times=1, uri=uri)), headers).read()
    received = b""
    reader.settimeout(15)
    try:  # what the server wrote before it gave up on this reader, then the end
        while chunk := reader.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    assert received.startswith(b"HTTP/1.1 200 OK")
    assert 0 < received.count(b"notifications/resources/updated") < 20_000
    reader.close()


# --- The official SDK's client (PyPI mcp 2.3.0) hears our changes, in both eras and both
#     transports: legacy through resources/subscribe (stdio, or the session's GET stream),
#     2026-07-28 through Client.listen ---

def sdk_hears_changes(server, era):
    import asyncio, warnings
    import mcp

    async def legacy():
        heard = asyncio.Queue()

        async def on_message(message):
            await heard.put(message)
        async with mcp.Client(server, mode="legacy", message_handler=on_message) as client:
            with warnings.catch_warnings():  # the SDK deprecates subscribe in favour of listen
                warnings.simplefilter("ignore")
                await client.subscribe_resource("note:///a")
            await client.call_tool("touch", {"uri": "note:///b"})  # not subscribed: nothing
            await client.call_tool("touch", {"uri": "note:///a"})
            await client.call_tool("change", {"kind": "resources"})
            return [(type(message).__name__, getattr(message.params, "uri", None))
                    for message in [await asyncio.wait_for(heard.get(), 15) for _ in range(2)]]

    async def modern():
        async with mcp.Client(server, mode="2026-07-28") as client:
            async with client.listen(resource_subscriptions=["note:///a"],
                                     tools_list_changed=True) as listening:
                assert listening.honored.resource_subscriptions == ["note:///a"]
                await client.call_tool("change", {"kind": "prompts"})  # not asked for
                await client.call_tool("touch", {"uri": "note:///a"})
                await client.call_tool("change", {"kind": "tools"})
                events = []
                async for change in listening:
                    events.append(type(change).__name__)
                    if len(events) == 2:
                        return events

    return asyncio.run(asyncio.wait_for(legacy() if era == "legacy" else modern(), 60))


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_sdk_client_hears_our_changes(port, era, transport):
    from mcp import StdioServerParameters
    server = (StdioServerParameters(command=SERVER[0], args=SERVER[1:]) if transport == "stdio"
              else f"http://127.0.0.1:{port}/mcp")
    heard = sdk_hears_changes(server, era)
    assert heard == ([("ResourceUpdatedNotification", "note:///a"),
                      ("ResourceListChangedNotification", None)] if era == "legacy"
                     else ["ResourceUpdated", "ToolsListChanged"])


def test_sigterm_ends_a_listen_with_its_result_and_a_get_stream():
    proc = subprocess.Popen([*SERVER, "--http", "0"], stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        http_port = int(re.search(r"127\.0\.0\.1:(\d+)/mcp", proc.stderr.readline())[1])
        listen = modern(request(7, "subscriptions/listen", {"notifications": {}}))
        listening = post(http_port, listen,
                         {**MODERN_HEADERS, "Mcp-Method": "subscriptions/listen"})
        assert event(listening)[1] == line(tagged("notifications/subscriptions/acknowledged",
                                                  {"notifications": {}}, 7)).decode().strip()
        stream = get(http_port, session(http_port))
        assert event(stream)[1] == ""  # the priming event
        proc.terminate()
        assert event(listening) == (None, line(listen_ended(7)).decode().strip())
        assert listening.read() == b"" and stream.read() == b""
        assert proc.wait(15) == 0
    finally:
        proc.kill()
        proc.wait()
