"""Streamable HTTP (mcp_http.py) on the wire: exact statuses, headers and bodies for both eras, plus
security limits, concurrency, cancellation, our Client over HTTP, and the official SDK's client.

The server runs in-process, on a free port and in its own event-loop thread. Most tests speak raw
HTTP with http.client or a socket.
"""
import asyncio, base64, gc, http.client, json, os, resource, select, signal, socket, subprocess, sys
import threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mcp_http  # noqa: E402
from client import HTTPClient  # noqa: E402
from conformance_server import server  # noqa: E402
from mcp_min import MAX_MESSAGE_BYTES, Context, MCPError, Server  # noqa: E402

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}
cancelled = []  # request ids of test_slow calls that saw their cancellation
WAIT = 300  # seconds: a generous bound on a wait for an event, never a race on a busy machine


@server.tool(name="test_slow")
async def slow(seconds: float, ctx: Context) -> str:
    """Sleeps, reporting progress first; records a cancellation."""
    ctx.report_progress(0, 1)
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        cancelled.append(ctx.message["id"])
        raise
    return "slept"


@pytest.fixture(scope="module")
def live():
    """The conformance server over HTTP, with its default timeouts (a busy machine meets none)."""
    loop = asyncio.new_event_loop()
    transport = mcp_http.HTTPTransport(server)
    listener = loop.run_until_complete(transport.start("127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield SimpleNamespace(port=listener.sockets[0].getsockname()[1], transport=transport, loop=loop)

    async def shutdown():  # end every connection and request still running, then the loop
        listener.close()
        tasks = asyncio.all_tasks() - {asyncio.current_task()}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def post(live, body, headers=None, accept="application/json, text/event-stream", conn=None):
    """POST to /mcp; returns (status, headers dict with lower-case names, body bytes)."""
    conn = conn or http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", "/mcp", data,
                 {"Content-Type": "application/json", "Accept": accept, **(headers or {})})
    response = conn.getresponse()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


def modern(method, params=None, request_id=1, **headers):
    """A 2026-07-28 request and its conformant headers (keyword arguments override or drop them)."""
    params = {**(params or {}), "_meta": {**META, **(params or {}).get("_meta", {})}}
    standard = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        standard["Mcp-Name"] = params["name"]
    for name, value in headers.items():
        name = name.replace("_", "-")
        standard = {k: v for k, v in standard.items() if k.lower() != name.lower()}
        if value is not None:
            standard[name] = value
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, standard


def sse(body):
    """The JSON messages of an SSE body, in order."""
    return [json.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")]


def initialize(live, version="2025-11-25"):
    params = {"protocolVersion": version, "capabilities": {},
              "clientInfo": {"name": "t", "version": "1"}}
    status, headers, body = post(live, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                        "params": params})
    assert status == 200, body
    return headers["mcp-session-id"], json.loads(body)


# --- Legacy sessions (2025-03-26 ... 2025-11-25) ---

def test_legacy_session_lifecycle(live):
    session_id, answer = initialize(live)
    assert answer["result"]["protocolVersion"] == "2025-11-25"
    assert len(session_id) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
    assert initialize(live)[0] != session_id  # every initialize opens a new session
    session = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
    assert post(live, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session) == (202, {
        "content-length": "0", "connection": "close"}, b"")
    status, headers, body = post(live, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
    assert status == 200 and headers["content-type"] == "application/json"
    assert "test_simple_text" in [tool["name"] for tool in json.loads(body)["result"]["tools"]]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert json.loads(post(live, ping, session)[2])["result"] == {}
    # The session id is required; a wrong one is unknown; an unsupported version header is refused.
    status, _, body = post(live, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert status == 400 and json.loads(body)["error"]["code"] == -32600
    tools_list = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    assert post(live, tools_list, {"Mcp-Session-Id": "nope"})[0] == 404
    assert post(live, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                {**session, "MCP-Protocol-Version": "1999-01-01"})[0] == 400
    # DELETE ends it; afterwards the id is unknown.
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    conn.request("DELETE", "/mcp", headers=session)
    assert (conn.getresponse().status, post(live, tools_list, session)[0]) == (200, 404)
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    conn.request("DELETE", "/mcp", headers=session)
    assert conn.getresponse().status == 404


def test_legacy_errors_are_200_with_jsonrpc_error(live):
    session_id, _ = initialize(live)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}}
    status, _, body = post(live, call,
                           {"Mcp-Session-Id": session_id})
    assert status == 200 and json.loads(body)["error"]["code"] == -32602


def test_legacy_progress_streams_as_sse(live):
    session = {"Mcp-Session-Id": initialize(live)[0]}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "test_tool_with_progress", "_meta": {"progressToken": "p"}}}
    status, headers, body = post(live, call, session)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    assert headers["x-accel-buffering"] == "no" and headers["connection"] == "close"  # its end
    messages = sse(body)
    assert [m["params"]["progress"] for m in messages[:3]] == [0, 50, 100]
    assert all(m["method"] == "notifications/progress" for m in messages[:3])
    assert messages[3]["id"] == 2
    assert messages[3]["result"]["content"][0]["text"] == "Progress test completed"
    # No progressToken: nothing to stream, so plain JSON.
    status, headers, body = post(live, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                        "params": {"name": "test_tool_with_progress"}}, session)
    assert headers["content-type"] == "application/json" and json.loads(body)["id"] == 4


def test_logging_is_not_offered(live):
    # Left out of mcp_min to stay small; 2026-07-28 deprecates it (SEP-2577).
    session = {"Mcp-Session-Id": initialize(live)[0]}
    reply = json.loads(post(live, {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
                                   "params": {"level": "info"}}, session)[2])
    assert reply["error"]["code"] == -32601


def start_slow_call(live, pool, request_id):
    """A new legacy session, and a 30 s test_slow call with request_id posted on it from the
    pool's thread; returns (session headers, the call, its future) once the call runs."""
    session = {"Mcp-Session-Id": initialize(live)[0]}
    call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "test_slow", "arguments": {"seconds": 30.0}}}
    running = pool.submit(post, live, call, session, "application/json")
    in_flight = live.transport.sessions[session["Mcp-Session-Id"]]["in_flight"]
    deadline = time.monotonic() + WAIT
    while request_id not in in_flight and time.monotonic() < deadline:  # wait until it runs
        time.sleep(0.01)
    return session, call, running


def test_legacy_cancelled_notification_stops_a_request(live):
    with ThreadPoolExecutor(1) as pool:
        session, _, running = start_slow_call(live, pool, "slow-1")
        assert post(live, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": "slow-1"}}, session)[0] == 202
        status, _, body = running.result(WAIT)
    assert (status, body) == (204, b"") and "slow-1" in cancelled  # a cancelled request: no answer


def test_legacy_request_with_an_id_in_use_is_refused_as_on_stdio(live):
    # A second request with the id of one still running took its place in the session, so the
    # first could no longer be cancelled. stdio refuses it (Server.receive_line): so does HTTP.
    with ThreadPoolExecutor(1) as pool:
        session, call, running = start_slow_call(live, pool, "dup")
        again = {**call, "params": {"name": "test_slow", "arguments": {"seconds": 0.01}}}
        status, _, body = post(live, again, session)
        assert status == 400 and json.loads(body) == {"jsonrpc": "2.0", "id": "dup", "error": {
            "code": -32600, "message": "Invalid Request: id 'dup' is in use"}}
        assert post(live, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": "dup"}}, session)[0] == 202
        assert running.result(WAIT)[:2] == (204, {"content-length": "0", "connection": "close"})
    assert "dup" in cancelled
    # Once it is over, the id is free again.
    again_status, _, body = post(live, again, session)
    assert again_status == 200 and json.loads(body)["result"]["content"][0]["text"] == "slept"


ticked = []  # the calls of test_ticks that ran to their end


@server.tool(name="test_ticks")
async def ticks(count: int, ctx: Context) -> str:
    """Reports progress every 5 ms."""
    for i in range(count):
        ctx.report_progress(i, count)
        await asyncio.sleep(0.005)
    ticked.append(ctx.message["id"])
    return "ticked"


def test_legacy_progress_after_a_hang_up_is_not_written(live, caplog):
    # A legacy call runs on after its client hangs up (a disconnect is no cancellation there). Its
    # progress was still written to the closed connection, and asyncio logged a warning for each
    # write: a log without bound for a long call.
    headers = "".join(f"{k}: {v}\r\n" for k, v in {
        "Mcp-Session-Id": initialize(live)[0], "MCP-Protocol-Version": "2025-11-25"}.items())
    data = json.dumps({"jsonrpc": "2.0", "id": "ticks", "method": "tools/call", "params": {
        "name": "test_ticks", "arguments": {"count": 100}, "_meta": {"progressToken": 1}}}).encode()
    with socket.create_connection(("127.0.0.1", live.port)) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Accept: text/event-stream\r\n" + headers.encode()
                     + b"Content-Length: %d\r\n\r\n" % len(data) + data)
        received = b""
        while b"notifications/progress" not in received:  # the stream has started
            received += sock.recv(65536)
    deadline = time.monotonic() + WAIT
    while "ticks" not in ticked and time.monotonic() < deadline:  # the call runs to its end unheard
        time.sleep(0.05)
    assert "ticks" in ticked
    assert "socket.send() raised exception" not in caplog.text


# --- Modern requests (2026-07-28): stateless, headers mirror the body ---

def test_modern_request_is_stateless(live):
    status, headers, body = post(live, *modern("server/discover"))
    answer = json.loads(body)
    assert status == 200 and "mcp-session-id" not in headers
    assert answer["result"]["supportedVersions"] == [MODERN]
    assert answer["result"]["resultType"] == "complete"
    status, _, body = post(live, *modern("tools/call", {"name": "test_simple_text"}, 7))
    assert status == 200 and json.loads(body)["result"]["content"] == [
        {"type": "text", "text": "This is a simple text response for testing."}]
    # A stray session id is ignored.
    body, headers = modern("tools/list")
    assert post(live, body, {**headers, "Mcp-Session-Id": "whatever"})[0] == 200


@pytest.mark.parametrize("change, expected", [
    ({"MCP_Protocol_Version": None}, 400),
    ({"MCP_Protocol_Version": "2025-11-25"}, 400),
    ({"Mcp_Method": None}, 400),
    ({"Mcp_Method": "tools/list"}, 400),
    ({"Mcp_Method": "TOOLS/CALL"}, 400),  # values are case-sensitive
    ({"Mcp_Name": None}, 400),
    ({"Mcp_Name": "test_error_handling"}, 400),
    ({"Mcp_Name": "=?base64?dGVzdF9zaW1wbGVfdGV4dA==?="}, 200),  # the Base64 form of the same name
    ({"Mcp_Name": "=?base64?dGVzdF9zaW1wbGVfdGV4dA?="}, 400),  # bad padding
    ({"Mcp_Name": "  test_simple_text "}, 200),  # surrounding whitespace is not part of a value
    ({"mcp_name": "test_simple_text"}, 200),  # names are case-insensitive
])
def test_modern_headers_must_match_the_body(live, change, expected):
    body, headers = modern("tools/call", {"name": "test_simple_text"}, 5, **change)
    status, _, answer = post(live, body, headers)
    answer = json.loads(answer)
    assert status == expected
    if expected == 400:
        assert answer["error"]["code"] == -32020 and answer["id"] == 5


def test_modern_custom_parameter_headers(live):
    def call(region, **headers):
        params = {"name": "test_header_param", "arguments": {"region": region}}
        body, standard = modern("tools/call", params)
        status, _, answer = post(live, body, {**standard, **headers})
        return status, json.loads(answer)
    assert call("us-west1", **{"Mcp-Param-Region": "us-west1"})[0] == 200
    base64_form = "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert call("Hello, 世界", **{"Mcp-Param-Region": base64_form})[0] == 200
    for headers in ({}, {"Mcp-Param-Region": "eu"}, {"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}):
        status, answer = call("us-west1", **headers)
        assert status == 400 and answer["error"]["code"] == -32020, headers


@pytest.mark.parametrize("method, params, headers, status, code", [
    ("tools/list", {"_meta": {}}, {}, 400, -32602),  # no _meta fields at all
    ("server/discover", {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}, {}, 400,
     -32602),
    ("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "v9",
                              "io.modelcontextprotocol/clientCapabilities": {}}},
     {"MCP-Protocol-Version": "v9"}, 400, -32022),
    ("unknown/method", {}, {}, 404, -32601),
    ("initialize", {}, {}, 404, -32601),  # removed in this era
    ("ping", {}, {}, 404, -32601),
    ("logging/setLevel", {"level": "info"}, {}, 404, -32601),
])
def test_modern_errors_have_their_http_status(live, method, params, headers, status, code):
    body, standard = modern(method, params, 9)
    if "_meta" in params:  # exactly these _meta fields
        body["params"]["_meta"] = params["_meta"]
    got, _, answer = post(live, body, {**standard, **headers})
    answer = json.loads(answer)
    assert (got, answer["error"]["code"], answer["id"]) == (status, code, 9)
    if code == -32022:
        assert answer["error"]["data"] == {"supported": [MODERN], "requested": "v9"}


def test_modern_progress_streams_as_sse_then_result(live):
    params = {"name": "test_tool_with_progress", "_meta": {"progressToken": "p1"}}
    body, headers = modern("tools/call", params, 3)
    status, response_headers, answer = post(live, body, headers)
    messages = sse(answer)
    assert status == 200 and response_headers["content-type"] == "text/event-stream"
    assert [(m["params"]["progressToken"], m["params"]["progress"]) for m in messages[:3]] == [
        ("p1", 0), ("p1", 50), ("p1", 100)]
    assert messages[3]["id"] == 3 and messages[3]["result"]["resultType"] == "complete"
    # A client that accepts only JSON gets the result alone.
    status, response_headers, answer = post(live, body, headers, accept="application/json")
    assert response_headers["content-type"] == "application/json" and json.loads(answer)["id"] == 3


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_content_types_pass_through(live, era):
    session = {"Mcp-Session-Id": initialize(live)[0]} if era == "legacy" else {}
    expected = {"test_image_content": ["image"], "test_audio_content": ["audio"],
                "test_embedded_resource": ["resource"], "test_resource_link": ["resource_link"],
                "test_multiple_content_types": ["text", "image", "resource"]}
    for name, kinds in expected.items():
        if era == "modern":
            body, headers = modern("tools/call", {"name": name})
        else:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}}
            headers = session
        content = json.loads(post(live, body, headers)[2])["result"]["content"]
        assert [block["type"] for block in content] == kinds
    assert base64.b64decode(content[1]["data"]).startswith(b"\x89PNG")


def test_modern_disconnect_cancels_the_request(live):
    body, headers = modern("tools/call", {"name": "test_slow", "arguments": {"seconds": 30.0},
                                          "_meta": {"progressToken": 1}}, "hang-up")
    data = json.dumps(body).encode()
    with socket.create_connection(("127.0.0.1", live.port)) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Accept: application/json, text/event-stream\r\n"
                     + "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
                     + b"Content-Length: %d\r\n\r\n" % len(data) + data)
        received = b""
        while b"notifications/progress" not in received:  # the stream has started
            received += sock.recv(65536)
    deadline = time.monotonic() + WAIT
    while "hang-up" not in cancelled and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "hang-up" in cancelled


# --- HTTP rules: methods, paths, bodies ---

def test_methods_and_paths(live):
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    # GET and DELETE need a legacy session: without one (as in 2026-07-28), 405 as well.
    for method in ("GET", "DELETE", "PUT", "OPTIONS"):
        conn.request(method, "/mcp")
        response = conn.getresponse()
        response.read()
        assert (response.status, response.getheader("Allow")) == (405, "POST, GET, DELETE")
    conn.request("POST", "/other", b"{}", {"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 404 and json.loads(response.read())["error"]["code"] == -32600


@pytest.mark.parametrize("body, content_type, status, code", [
    (b"{not json", "application/json", 400, -32700),
    (b"\xff\xfe", "application/json", 400, -32700),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', "application/json", 400, -32600),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', "application/json", 400, -32600),
    (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', "application/json", 400, -32600),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "text/plain", 415, -32600),
])
def test_malformed_requests(live, body, content_type, status, code):
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    conn.request("POST", "/mcp", body, {"Content-Type": content_type, "Accept": "application/json"})
    response = conn.getresponse()
    answer = json.loads(response.read())
    assert (response.status, answer["error"]["code"]) == (status, code)


def test_notifications_and_responses_get_202(live):
    body, headers = modern("tools/list")
    for message in ({"jsonrpc": "2.0", "method": "notifications/whatever"},
                    {"jsonrpc": "2.0", "id": 1, "result": {}}):
        assert post(live, message, headers)[::2] == (202, b"")


def test_each_response_closes_its_connection(live):
    # No keep-alive and no pipelining, on purpose (tests/BEHAVIOUR.md: Over HTTP): a second request
    # sent on the same connection is not read, and the connection ends after the first answer.
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    for i in range(3):  # http.client opens a new connection for each
        body, headers = modern("tools/list", request_id=i)
        assert json.loads(post(live, body, headers, conn=conn)[2])["id"] == i
    data = [json.dumps(modern("tools/list", request_id=i)[0]).encode() for i in (10, 11)]
    head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" \
           "MCP-Protocol-Version: {v}\r\nMcp-Method: tools/list\r\nContent-Length: {n}\r\n\r\n"
    received = raw(live, b"".join(head.format(v=MODERN, n=len(d)).encode() + d for d in data))
    assert received.count(b"HTTP/1.1 200 ") == 1 and b"Connection: close" in received
    assert b'"id":10' in received and b'"id":11' not in received


# --- Safe by default: DNS rebinding, limits, slow clients ---

@pytest.mark.parametrize("headers, status", [
    ({"Host": "evil.example"}, 403),
    ({"Host": "evil.example:8000"}, 403),
    ({"Origin": "http://evil.example"}, 403),
    ({"Origin": "null"}, 403),
    ({"Origin": "http://localhost:5173"}, 200),  # a local web app on another port
    ({"Host": "localhost:1234", "Origin": "http://127.0.0.1"}, 200),
    ({"Host": "[::1]:8000"}, 200),
])
def test_host_and_origin_are_checked(live, headers, status):
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    body, standard = modern("tools/list")
    conn.putrequest("POST", "/mcp", skip_host="Host" in headers)
    for name, value in {"Content-Type": "application/json", **standard, **headers}.items():
        conn.putheader(name, value)
    data = json.dumps(body).encode()
    conn.putheader("Content-Length", str(len(data)))
    conn.endheaders(data)
    assert conn.getresponse().status == status


def test_configured_allowed_hosts():
    transport = mcp_http.HTTPTransport(server, allowed_hosts=["mcp.example.com"])
    transport.check_host_and_origin({"host": "mcp.example.com",
                                     "origin": "https://mcp.example.com"})
    with pytest.raises(mcp_http.HTTPError) as refused:
        transport.check_host_and_origin({"host": "localhost:8000"})
    assert refused.value.status == 403
    mcp_http.HTTPTransport(server, allowed_hosts=["*"]).check_host_and_origin({"host": "anything"})


def raw(live, data, timeout=5):
    """Send raw bytes; return everything the server sends until it closes."""
    with socket.create_connection(("127.0.0.1", live.port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def test_size_limits(live):
    too_big = raw(live, b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                        b"Content-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n{" % (MAX_MESSAGE_BYTES + 1))
    assert too_big.startswith(b"HTTP/1.1 413 ")
    huge_header = raw(live, b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Big: "
                      + b"a" * 20000 + b"\r\n\r\n")
    assert huge_header.startswith(b"HTTP/1.1 431 ")
    chunked = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert raw(live, chunked).startswith(b"HTTP/1.1 411 ")
    assert raw(live, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400 ")


@pytest.mark.parametrize("head, status", [
    (b"Host: localhost\r\nContent-Type: application/json", 200),
    (b"Host: localhost\r\nContent-Type: application/json\r\nContent-Length: 99999999", 413),
    (b"Host: evil.example\r\nContent-Type: application/json", 403),
    (b"Host: localhost\r\nContent-Type: text/plain", 415),
])
def test_expect_100_continue_is_answered_before_the_body(live, head, status):
    # RFC 9110, 10.1.1: the server sends 100 Continue, or its final status if the head alone
    # decides it. It did neither: curl waits a second for it, and a client that waits for good got
    # a 408 at request_timeout.
    body, headers = modern("tools/list")
    data = json.dumps(body).encode()
    mirrored = "".join(f"\r\n{name}: {value}" for name, value in headers.items()).encode()
    length = b"" if b"Content-Length" in head else b"\r\nContent-Length: %d" % len(data)
    with socket.create_connection(("127.0.0.1", live.port), timeout=5) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nExpect: 100-continue\r\n" + head + length
                     + mirrored + b"\r\n\r\n")
        sock.settimeout(WAIT)  # a 408, at request_timeout, cannot pass for the answer
        first = sock.recv(65536)
        if status == 200:
            assert first == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(data)
            first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 %d " % status), first


def test_slow_client_times_out_without_blocking_others(live):
    # A transport whose request_timeout, 3 s, is far longer than five quick requests take.
    transport = mcp_http.HTTPTransport(server, request_timeout=3)
    listener = asyncio.run_coroutine_threadsafe(transport.start("127.0.0.1", 0), live.loop).result()
    other = SimpleNamespace(port=listener.sockets[0].getsockname()[1])
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", other.port), timeout=WAIT) as slow:
            slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: loc")  # ...and never more
            for _ in range(5):  # meanwhile everyone else is served, while it still waits
                assert post(other, *modern("tools/list"))[0] == 200
            assert select.select([slow], [], [], 0)[0] == []
            answer = slow.recv(65536)
            assert answer.startswith(b"HTTP/1.1 408 ") and slow.recv(1) == b""  # then closed
    finally:
        live.loop.call_soon_threadsafe(listener.close)
    assert time.monotonic() - started >= 3


waiting = []  # the test_together calls that wait for the others


@server.tool(name="test_together")
async def together(count: int) -> str:
    """Answers once `count` calls wait here at the same time: they run side by side."""
    arrived = asyncio.get_running_loop().create_future()
    waiting.append(arrived)
    if len(waiting) == count:
        for future in waiting:
            future.set_result("together")
    return await asyncio.wait_for(arrived, WAIT)


def test_100_concurrent_requests(live):
    def call(i):
        params = {"name": "test_together", "arguments": {"count": 100}}
        body, headers = modern("tools/call", params, i)
        status, _, answer = post(live, body, headers, accept="application/json")
        return status, json.loads(answer)["id"], json.loads(answer)["result"]["content"]
    waiting.clear()
    with ThreadPoolExecutor(100) as pool:
        results = list(pool.map(call, range(100)))
    # Each answer waited for all 100 calls to be in flight at once, not one after another.
    assert results == [(200, i, [{"type": "text", "text": "together"}]) for i in range(100)]


# --- Clients: ours, and the official SDK's ---

def test_our_client_over_http(live):
    async def main():
        progress = []
        async with HTTPClient(f"http://127.0.0.1:{live.port}/mcp") as client:
            assert (client.era, client.protocol_version) == ("modern", MODERN)
            assert "test_header_param" in [tool["name"] for tool in await client.list_tools()]
            result = await client.call_tool("test_tool_with_progress",
                                            on_progress=lambda *a: progress.append(a))
            assert result["content"][0]["text"] == "Progress test completed"
            # x-mcp-header: the client mirrors the argument into Mcp-Param-Region, in Base64 here.
            result = await client.call_tool("test_header_param", {"region": "Hello, 世界"})
            assert result["isError"] is False
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("nope")
            assert unknown.value.code == -32602
            with pytest.raises(TimeoutError):  # a timed-out modern request hangs up: cancelled
                await client.request("tools/call", {"name": "test_slow",
                                                    "arguments": {"seconds": 30.0}}, timeout=0.3)
        assert progress == [(0, 100, None), (50, 100, None), (100, 100, None)]
    asyncio.run(main())
    deadline = time.monotonic() + WAIT
    while len([c for c in cancelled if isinstance(c, int)]) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert any(isinstance(c, int) for c in cancelled)


def test_our_client_falls_back_to_a_legacy_server(live):
    class LegacyOnly(mcp_http.HTTPTransport):  # like a 2025 server: sessions only
        def check_modern_request(self, message, headers):
            raise mcp_http.HTTPError(400, "Bad Request: No valid session ID provided")
    loop = live.loop
    transport = LegacyOnly(server)
    listener = asyncio.run_coroutine_threadsafe(transport.start("127.0.0.1", 0), loop).result()
    port = listener.sockets[0].getsockname()[1]

    async def main():
        async with HTTPClient(f"http://127.0.0.1:{port}/mcp") as client:
            assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
            assert len(transport.sessions) == 1
            progress = []
            await client.call_tool("test_tool_with_progress",
                                   on_progress=lambda *a: progress.append(a))
            assert len(progress) == 3
            # The server forgets the session (a restart, say): the next call gets 404, and the
            # client opens a new session once, then sends the call again (spec: Session Management).
            old_id = client.session_id
            transport.sessions.clear()
            assert (await client.call_tool("test_simple_text"))["isError"] is False
            assert client.session_id != old_id and list(transport.sessions) == [client.session_id]
    try:
        asyncio.run(main())
    finally:
        loop.call_soon_threadsafe(listener.close)


@pytest.mark.parametrize("mode", ["legacy", "auto", MODERN])
def test_official_sdk_client(live, mode):
    from mcp import Client as SDKClient

    async def main():
        progress = []

        async def on_progress(value, total, message):
            progress.append(value)
        async with SDKClient(f"http://127.0.0.1:{live.port}/mcp", mode=mode) as client:
            expected = "2025-11-25" if mode == "legacy" else MODERN
            assert client._session.protocol_version == expected
            assert "test_simple_text" in [tool.name for tool in (await client.list_tools()).tools]
            result = await client.call_tool("test_tool_with_progress", {},
                                            progress_callback=on_progress)
            assert result.content[0].text == "Progress test completed" and progress == [0, 50, 100]
            image = await client.call_tool("test_image_content", {})
            assert image.content[0].type == "image" and image.content[0].mime_type == "image/png"
            error = await client.call_tool("test_error_handling", {})
            assert error.is_error
            region = await client.call_tool("test_header_param", {"region": "us-west1"})
            assert region.is_error is False
    asyncio.run(main())


def test_server_py_over_http_allows_only_the_hosts_it_is_told(tmp_path):
    # python server.py --http PORT --allow-host NAME: the public name a proxy forwards is accepted,
    # any other Host is refused (DNS rebinding), localhost always works. No index is needed.
    import subprocess
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server_py = str(Path(__file__).resolve().parents[1] / "server.py")
    process = subprocess.Popen([sys.executable, server_py, "--index", str(tmp_path / "none"),
                                "--http", str(port), "--allow-host", "mcp.example.com"],
                               stderr=subprocess.PIPE, text=True)
    try:
        while "MCP over HTTP on" not in process.stderr.readline():
            assert process.poll() is None, "server.py --http exited"
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                           "params": {"_meta": META}})
        statuses = {}
        for host in ("mcp.example.com", "evil.example.com", f"localhost:{port}"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/mcp", body, {"Host": host, "Content-Type": "application/json",
                                                "Accept": "application/json, text/event-stream",
                                                "MCP-Protocol-Version": "2026-07-28",
                                                "Mcp-Method": "server/discover"})
            statuses[host] = conn.getresponse().status
            conn.close()
        assert statuses == {"mcp.example.com": 200, "evil.example.com": 403,
                            f"localhost:{port}": 200}
    finally:
        process.terminate()
        process.wait(10)


# --- Hostile peers (issue 12): bounded replies, the client's recovery, the server's limits ---

def serve_raw(respond):
    """A scripted HTTP server for the client tests: respond(message, writer) writes the raw
    response to each POST. Returns (url, list of messages received, close)."""
    received = []

    async def connection(reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().partition(b"content-length:")[2].split(b"\r\n")[0] or 0)
        message = json.loads(await reader.readexactly(length)) if length else None
        received.append(message)
        try:
            if message and message.get("method") == "server/discover":
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {
                    "supportedVersions": [MODERN], "capabilities": {"tools": {}}}}
                writer.write(json_response(answer))
            else:
                await respond(message, writer)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
    return connection, received


def json_response(message, status="200 OK"):
    body = json.dumps(message).encode() if isinstance(message, dict) else message
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
            f"\r\nConnection: close\r\n\r\n").encode() + body


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


def with_raw_server(respond, test, **client_options):
    """Run test(client, received) against serve_raw(respond)."""
    async def main():
        connection, received = serve_raw(respond)
        listener = await asyncio.start_server(connection, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/mcp"
        try:
            async with HTTPClient(url, timeout=10, **client_options) as client:
                await test(client, received)
        finally:
            listener.close()
    asyncio.run(main())


async def endless(writer, piece):
    while True:  # until the client hangs up
        writer.write(piece)
        await writer.drain()


@pytest.mark.parametrize("reply, expected", [
    ("big-json", "the reply is 5000 bytes, over the 4096-byte max_message_bytes"),
    ("endless-chunked", "over the 4096-byte max_message_bytes"),
    ("endless-unframed", "over the 4096-byte max_message_bytes"),
    ("endless-sse-event", "over the 4096-byte max_message_bytes"),
    ("no-result", "a malformed answer"),
    ("result-not-object", "a malformed answer"),
    ("not-json", "Parse error"),
    ("not-http", "no HTTP response"),
    ("bad-chunk-size", "HTTP request failed"),
])
def test_client_survives_bad_replies(reply, expected):
    # Each bad reply fails its own request (ConnectionError; MCPError for a malformed answer, as
    # on stdio); the next request still works.
    async def respond(message, writer):
        name = message["params"]["name"]
        if name == "good":
            writer.write(json_response({"jsonrpc": "2.0", "id": message["id"], "result": {
                "content": [], "isError": False}}))
        elif name == "big-json":
            writer.write(json_response(b" " * 5000))
        elif name == "endless-chunked":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            await endless(writer, b"400\r\n" + b" " * 1024 + b"\r\n")
        elif name == "endless-unframed":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
            await endless(writer, b" " * 1024)
        elif name == "endless-sse-event":
            writer.write(SSE_HEAD + b"event: message\ndata: ")
            await endless(writer, b"x" * 1024)
        elif name in ("no-result", "result-not-object"):
            broken = {"jsonrpc": "2.0", "id": message["id"]}
            writer.write(json_response(broken if name == "no-result" else {**broken, "result": 5}))
        elif name == "not-json":
            writer.write(json_response(b"<html>502 Bad Gateway</html>", "502 Bad Gateway"))
        elif name == "not-http":
            writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        elif name == "bad-chunk-size":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\nzz\r\n")

    async def test(client, received):
        with pytest.raises((ConnectionError, MCPError)) as failed:
            await client.call_tool(reply)
        assert expected in str(failed.value)
        assert (await client.call_tool("good"))["isError"] is False
    with_raw_server(respond, test, max_message_bytes=4096)


def test_client_answers_the_servers_ping_and_refuses_other_requests():
    async def respond(message, writer):
        if message.get("method") == "tools/call":  # asks two questions first, then answers
            for request_id, method in (("p1", "ping"), ("s1", "sampling/createMessage")):
                event = {"jsonrpc": "2.0", "id": request_id, "method": method}
                writer.write((SSE_HEAD if request_id == "p1" else b"")
                             + b"event: message\ndata: " + json.dumps(event).encode() + b"\n\n")
                await writer.drain()
                await asyncio.sleep(0.2)
            result = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}
            writer.write(b"data: " + json.dumps(result).encode() + b"\n\n")
        else:  # our client's answers arrive as POSTs of their own
            writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")

    async def test(client, received):
        assert await client.call_tool("asks") == {"content": []}
        answers = {m["id"]: m for m in received if m and "method" not in m}
        assert answers["p1"] == {"jsonrpc": "2.0", "id": "p1", "result": {}}
        assert answers["s1"]["error"]["code"] == -32601
    with_raw_server(respond, test)


def test_client_keeps_its_answer_to_a_ping_until_it_is_sent():
    # asyncio keeps only weak references to tasks: the POST of the answer to a ping, started and
    # dropped, could be garbage-collected while it waited, and the answer was never sent.
    async def test():
        client, waiting, ended = HTTPClient("http://127.0.0.1:1/mcp"), [], []

        async def post(message):  # waits on a future that nothing else holds, as a socket might
            waiting.append(message)
            try:
                await asyncio.get_running_loop().create_future()
            finally:
                ended.append(message)  # also when the coroutine is collected (GeneratorExit)
        client.post = post
        assert client.receive(b'{"jsonrpc": "2.0", "id": "p1", "method": "ping"}', 7, 200) is False
        for _ in range(3):  # the task that answers, then the POST it starts
            await asyncio.sleep(0)
            gc.collect()
        assert [m["id"] for m in waiting] == ["p1"] and ended == []
        tasks = list(client.posts.values())
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)  # once done, the task leaves the dict
        assert [m["id"] for m in ended] == ["p1"] and not client.posts and not client.background
    asyncio.run(test())


def test_client_takes_an_answer_only_for_the_request_it_was_posted_for():
    # A confused server or proxy answers the POST of one request with another request's id: that
    # completed the other request with this one's answer.
    async def respond(message, writer):
        if message["params"]["name"] == "slow":
            await asyncio.sleep(0.5)
        wrong = message["id"] + (message["params"]["name"] == "fast")  # the next request's id
        text = {"type": "text", "text": "answer to " + message["params"]["name"]}
        writer.write(json_response({"jsonrpc": "2.0", "id": wrong, "result": {"content": [text]}}))

    async def test(client, received):
        fast = asyncio.ensure_future(client.call_tool("fast"))
        slow = asyncio.ensure_future(client.call_tool("slow"))  # the id the fast answer names
        with pytest.raises(ConnectionError, match="HTTP 200, and no answer to request"):
            await fast
        assert (await slow)["content"][0]["text"] == "answer to slow"
    with_raw_server(respond, test)


def test_client_skips_interim_1xx_responses():
    # RFC 9110, 15.2: a client must parse 1xx responses before the final one, expected or not.
    # The client took the 100's head for the response, and the real one for its body.
    async def respond(message, writer):
        result = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                     + json_response(result))

    async def test(client, received):
        assert await client.call_tool("x") == {"content": []}
    with_raw_server(respond, test)


def test_client_hangs_up_once_its_answer_has_come():
    # A server may leave an SSE stream open after the answer (keepalives, or no end at all): the
    # client kept reading it, one connection held per call until the server chose to close.
    hung_up = []

    async def respond(message, writer):
        if message.get("method") != "tools/call":
            return writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
        result = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}
        writer.write(SSE_HEAD + b"data: " + json.dumps(result).encode() + b"\n\n")
        try:
            for _ in range(WAIT * 20):  # keepalives, until the client hangs up
                await asyncio.sleep(0.05)
                writer.write(b": keepalive\n\n")
                await writer.drain()
        except ConnectionError:
            hung_up.append(message["id"])

    async def test(client, received):
        assert await client.call_tool("x") == {"content": []}
        deadline = time.monotonic() + WAIT
        while not hung_up and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert hung_up and not client.posts
    with_raw_server(respond, test)


def test_client_reopens_a_legacy_session_only_once():
    async def respond(message, writer):
        if message["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {}}
            writer.write(json_response({"jsonrpc": "2.0", "id": message["id"], "result": result})
                         .replace(b"\r\n\r\n", b"\r\nMcp-Session-Id: s%d\r\n\r\n" % message["id"]))
        elif "id" in message:  # every session is forgotten at once
            writer.write(json_response({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "unknown session"}}, "404 Not Found"))
        else:
            writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")

    async def test(client, received):
        with pytest.raises(MCPError) as failed:
            await client.call_tool("anything")
        assert "unknown session" in str(failed.value)
        methods = [m.get("method") for m in received if m]
        assert methods.count("initialize") == 2 and methods.count("tools/call") == 2
    with_raw_server(respond, test, legacy=True)


flooded = []  # progress values test_flood has sent
flood_ended = threading.Event()  # test_flood has sent its last progress
# Progress events of 1 kB each: 10 MB, far past MAX_BACKLOG and the kernel's buffers (4 MB at most)
FLOOD = 10_000
PADDING = "." * 1000


@server.tool(name="test_flood")
def flood(count: int, ctx: Context) -> str:
    """Sends progress as fast as it can (a def tool; past the backlog, progress is skipped)."""
    for i in range(count):
        if ctx.cancelled:
            return "stopped"
        ctx.report_progress(i, count, PADDING)
        flooded.append(i)
    flood_ended.set()
    return "flooded"


def test_a_flooding_tool_never_waits_and_a_slow_reader_gets_the_latest(live):
    # Backpressure on SSE, as on stdio: while the client reads nothing, progress past MAX_BACKLOG
    # unread is skipped, so the server's memory stays flat and the tool never blocks; the client
    # then reads fewer events than were sent, in increasing order, and the answer. A transport of
    # its own whose write_timeout outlasts the wait: on a busy machine the flood may take long,
    # and the live one's 30 s would cut the reader off first; a tool that waited fails the wait.
    flooded.clear()
    flood_ended.clear()
    transport = mcp_http.HTTPTransport(server, write_timeout=2 * WAIT)
    listener = asyncio.run_coroutine_threadsafe(transport.start("127.0.0.1", 0), live.loop).result()
    body, headers = modern("tools/call", {"name": "test_flood", "arguments": {"count": FLOOD},
                                          "_meta": {"progressToken": 1}})
    data = json.dumps(body).encode()
    try:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", listener.sockets[0].getsockname()[1]))
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                         b"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                         + "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
                         + b"Content-Length: %d\r\n\r\n" % len(data) + data)
            assert flood_ended.wait(WAIT)  # the tool runs to its end while nothing is read
            assert len(flooded) == FLOOD
            sock.settimeout(WAIT)
            received = b""
            while chunk := sock.recv(1 << 20):
                received += chunk
    finally:
        live.loop.call_soon_threadsafe(listener.close)
    progress = [json.loads(line[6:])["params"]["progress"] for line in received.split(b"\n")
                if line.startswith(b"data: ") and b"notifications/progress" in line]
    assert 0 < len(progress) < FLOOD and progress == sorted(progress)
    assert b'"flooded"' in received


def test_sessions_are_evicted_least_recently_used_first(monkeypatch):
    transport = mcp_http.HTTPTransport(server)
    monkeypatch.setattr(mcp_http, "MAX_SESSIONS", 100)
    active = transport.open_session({"in_flight": {}})
    for i in range(10_000):  # each initialize costs O(1): no scan of the sessions
        transport.open_session({"in_flight": {}})
        if i % 50 == 0:  # the active client keeps using its session
            request = mcp_http.Request("POST", "/mcp", {"mcp-session-id": active}, b"")
            transport.legacy_session(request)
    assert len(transport.sessions) == 100 and active in transport.sessions


@pytest.mark.parametrize("headers, status", [
    ({"Content-Length": str(MAX_MESSAGE_BYTES + 1)}, 413),
    ({"Transfer-Encoding": "chunked"}, 411),
])
def test_an_early_refusal_reaches_a_client_that_sends_its_whole_body(live, headers, status):
    # The server answers before it reads the body. It then closed the connection with the body
    # unread, so the kernel reset it (TCP RST): a client that sends its body before reading, as
    # http.client, httpx and our HTTPClient do, got "connection reset" instead of the answer.
    body = b"[" * (MAX_MESSAGE_BYTES + 1)
    if "Transfer-Encoding" in headers:
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    conn.putrequest("POST", "/mcp")
    for name, value in {"Content-Type": "application/json", **headers}.items():
        conn.putheader(name, value)
    conn.endheaders()
    conn.send(body)
    response = conn.getresponse()
    assert response.status == status and json.loads(response.read())["error"]["code"] == -32600
    conn.close()


@pytest.mark.parametrize("data, status", [
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", 413),
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n", 411),
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: \xd9\xa3\r\n\r\n", 411),
    (b"POST /mcp HTTP/1.1 extra\r\nHost: localhost\r\n\r\n", 400),
    (b"POST /mcp HTTP/2\r\nHost: localhost\r\n\r\n", 400),
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n: no name\r\n\r\n", 400),
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
     b"Content-Length: 3\r\n\r\nab", 400),  # cut short
    (b"\r\n\r\n", 400),
])
def test_malformed_http_always_gets_an_answer(live, data, status):
    with socket.create_connection(("127.0.0.1", live.port), timeout=5) as sock:
        sock.sendall(data)
        if data.endswith(b"ab"):
            sock.shutdown(socket.SHUT_WR)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer


@pytest.mark.parametrize("name", [["test_simple_text"], {"a": 1}, 5, None, True])
def test_modern_tools_call_with_a_name_that_is_not_a_string(live, name):
    body, headers = modern("tools/call", {"name": "x"})
    body["params"]["name"] = name
    headers["Mcp-Name"] = json.dumps(name)
    status, _, answer = post(live, body, headers)
    assert status == 400 and json.loads(answer)["id"] == 1


def test_connections_over_the_cap_get_503(live):
    transport = mcp_http.HTTPTransport(server, max_connections=5, request_timeout=10)
    listener = asyncio.run_coroutine_threadsafe(transport.start("127.0.0.1", 0), live.loop).result()
    port = listener.sockets[0].getsockname()[1]
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
    try:
        deadline = time.monotonic() + WAIT
        while len(transport.connections) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        refused = raw(SimpleNamespace(port=port), b"")
        assert refused.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in refused
        body, headers = modern("tools/list")
        data = json.dumps(body).encode()
        idle[0].sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                        b"Content-Type: application/json\r\n"
                        + "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
                        + b"Content-Length: %d\r\n\r\n" % len(data) + data)
        assert idle[0].recv(65536).startswith(b"HTTP/1.1 200 ")  # a client under the cap is served
    finally:
        for sock in idle:
            sock.close()
        live.loop.call_soon_threadsafe(listener.close)
    assert transport.max_connections == 5
    assert 0 < mcp_http.default_max_connections() < resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# --- A real server process: backpressure, write timeouts, descriptors, shutdown, startup ---

SERVER_SCRIPT = '''
import asyncio, os, resource, sys
sys.path[:0] = [{root!r}, {tests!r}]
import mcp_http
from conformance_server import server
from mcp_min import Context


@server.tool()
def flood(count: int, ctx: Context) -> str:
    """Sends `count` progress notifications as fast as it can."""
    for i in range(count):
        if ctx.cancelled:  # the client hung up
            return "stopped"
        ctx.report_progress(i, count)
    return "flooded"


@server.tool()
async def nap(seconds: float, ctx: Context) -> str:
    """Sleeps, once it has reported progress (if it was asked to): then it runs."""
    ctx.report_progress(0)
    await asyncio.sleep(seconds)
    return "rested"


if os.environ.get("NOFILE"):
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(os.environ["NOFILE"]),) * 2)
options = {{key: float(value) for key, value in (arg.split("=") for arg in sys.argv[3:])}}
mcp_http.serve(server, sys.argv[1], sys.argv[2], **options)
'''


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def start_server(tmp_path):
    """start_server(*options, env=None) -> (process, port): the script above on a free port."""
    script = tmp_path / "http_server.py"
    tests = Path(__file__).resolve().parent
    script.write_text(SERVER_SCRIPT.format(root=str(tests.parent), tests=str(tests)))
    processes = []

    def start(*options, env=None, host="127.0.0.1", port=None):
        port = port or free_port()
        process = subprocess.Popen([sys.executable, str(script), host, str(port), *options],
                                   stderr=subprocess.PIPE, text=True,
                                   env={**os.environ, **(env or {})})
        processes.append(process)
        line = process.stderr.readline()
        assert "MCP over HTTP on" in line or "cannot serve" in line, line
        return process, port, line
    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def send_call(port, name, arguments, request_id=1, progress=False, rcvbuf=None):
    """Open a socket and POST a modern tools/call; returns the socket, unread."""
    params = {"name": name, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": request_id}
    body, headers = modern("tools/call", params, request_id)
    data = json.dumps(body).encode()
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 b"Accept: application/json, text/event-stream\r\n"
                 + "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
                 + b"Content-Length: %d\r\n\r\n" % len(data) + data)
    return sock


def read_until(sock, marker):
    """What `sock` receives until `marker` has come (WAIT seconds at most)."""
    sock.settimeout(WAIT)
    received = b""
    while marker not in received:
        chunk = sock.recv(65536)
        assert chunk, received
        received += chunk
    return received


def read_all(sock, timeout=30):
    sock.settimeout(timeout)
    received = b""
    try:
        while chunk := sock.recv(1 << 20):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def rss_mib(process):
    status = Path(f"/proc/{process.pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) // 1024


def open_files(process):
    return len(os.listdir(f"/proc/{process.pid}/fd"))


def open_sockets(process):
    fds = Path(f"/proc/{process.pid}/fd")
    return sum(1 for fd in fds.iterdir() if os.readlink(fd).startswith("socket:"))


def test_sse_backpressure_and_write_timeout(start_server):
    # A tool floods progress: past MAX_BACKLOG unread, progress is skipped, so memory stays flat
    # (the flood that took a server to 123 MiB). A client that stops reading is cut off after
    # write_timeout, and the server goes on serving others. The client that reads later has a
    # server of its own that waits for it: on a busy machine its flood may outlast the 2 s.
    process, port, _ = start_server("write_timeout=2")
    patient, patient_port, _ = start_server(f"write_timeout={WAIT}")
    before, sockets_before = rss_mib(process), open_sockets(process)
    patient_before = rss_mib(patient)
    slow = send_call(patient_port, "flood", {"count": 20_000}, progress=True, rcvbuf=4096)
    stuck = send_call(port, "flood", {"count": 10**9}, request_id=2, progress=True, rcvbuf=4096)
    peak = before  # the memory while neither reads; `stuck` will never read again
    deadline = time.monotonic() + WAIT  # the kernel's buffers fill first, then write_timeout runs
    while open_sockets(process) > sockets_before and time.monotonic() < deadline:
        peak = max(peak, rss_mib(process))
        time.sleep(0.1)
    assert open_sockets(process) == sockets_before, "the server kept writing to a stalled client"
    assert peak < before + 20 and rss_mib(patient) < patient_before + 20
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)  # now read at full speed
    received = read_all(slow, WAIT)
    assert 0 < received.count(b"notifications/progress") <= 20_000 and b'"flooded"' in received
    assert b'"rested"' in read_all(send_call(port, "nap", {"seconds": 0}))
    assert rss_mib(process) < before + 20
    stuck.close()
    slow.close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_graceful_shutdown(start_server, signum):
    process, port, _ = start_server("grace=3")
    quick = send_call(port, "nap", {"seconds": 0.2}, progress=True)
    late = send_call(port, "nap", {"seconds": 60}, request_id=2, progress=True)
    running = [read_until(sock, b"notifications/progress") for sock in (quick, late)]
    process.send_signal(signum)
    time.sleep(0.2)
    with pytest.raises(OSError):  # no new connections
        socket.create_connection(("127.0.0.1", port), timeout=2).recv(1)
    assert b'"rested"' in running[0] + read_all(quick)  # ended within the grace period: answered
    answer = sse(running[1] + read_all(late))[-1]
    assert answer["id"] == 2 and answer["error"]["code"] == -32603
    assert answer["error"]["message"].startswith("Cancelled: the server is shutting down")
    assert process.wait(10) == 0
    stderr = process.stderr.read()
    assert stderr.count("\n") == 1 and "stopped" in stderr and "Traceback" not in stderr, stderr


def test_server_py_stops_gracefully_on_sigterm(tmp_path):
    port = free_port()
    server_py = str(Path(__file__).resolve().parents[1] / "server.py")
    process = subprocess.Popen([sys.executable, server_py,
                                "--index", str(tmp_path / "none"), "--http", str(port)],
                               stderr=subprocess.PIPE, text=True)
    try:
        while "MCP over HTTP on" not in process.stderr.readline():
            assert process.poll() is None, "server.py --http exited"
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        stderr = process.stderr.read()
        assert "stopped" in stderr and "Traceback" not in stderr, stderr
    finally:
        process.kill()
        process.wait(10)


@pytest.mark.parametrize("host, port, reason", [
    ("127.0.0.1", "in use", "the port is in use"),
    ("127.0.0.1", "70000", "port must be 0-65535"),
    ("127.0.0.1", "http", "a port is a number from 0 to 65535"),
    ("no-such-host.invalid", "0", "Name or service not known"),
])
def test_startup_errors_are_one_line(start_server, host, port, reason):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        if port == "in use":
            port = str(taken.getsockname()[1])
        process, _, line = start_server(host=host, port=port)
        assert process.wait(10) == 1
    assert reason in line and line.count("\n") == 1 and process.stderr.read() == ""


def test_descriptor_exhaustion_is_logged_at_a_bounded_rate(start_server):
    # With a cap above the descriptor limit, accept() fails with EMFILE: asyncio reports it, and
    # mcp_http logs it at most once a second instead of tens of MB of tracebacks. With the default
    # cap (below the limit) the extra connections get 503 instead.
    for limit, options, count in (("64", ["max_connections=1000"], 100), ("512", [], 400)):
        expect_503 = count == 400
        process, port, _ = start_server(*options, env={"NOFILE": limit})
        sockets = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
        if expect_503:  # some connections get their 503 (and are closed)
            select.select(sockets, [], [], WAIT)
        deadline = time.monotonic() + WAIT  # else: accept() takes them until no descriptor is left
        while not expect_503 and open_files(process) < int(limit) and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = sum(1 for sock in sockets if select_ready(sock))
        assert (refused > 0) == expect_503
        for sock in sockets:
            sock.close()
        # asyncio retries accept() after a second; the call waits in the listen queue until then
        assert b'"rested"' in read_all(send_call(port, "nap", {"seconds": 0}))
        process.terminate()
        assert process.wait(10) == 0
        stderr = process.stderr.read()
        assert len(stderr) < 2000 and "Traceback" not in stderr, stderr[:2000]
        assert ("out of system resource" in stderr) != expect_503, stderr


def select_ready(sock):
    return bool(select.select([sock], [], [], 0)[0])


def test_a_failure_inside_the_transport_still_gets_an_answer(live, capfd):
    # A hand-written schema whose "properties" is not an object breaks the header check: the
    # client still gets a 500 with a JSON-RPC error, and the log one line, not a traceback.
    broken = Server("broken")

    @broken.tool()
    def echo(text: str) -> str:
        """Echoes."""
        return text
    broken.tools["echo"][1]["inputSchema"]["properties"] = ["text"]
    transport = mcp_http.HTTPTransport(broken)
    listener = asyncio.run_coroutine_threadsafe(transport.start("127.0.0.1", 0), live.loop).result()
    try:
        body, headers = modern("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        status, _, answer = post(SimpleNamespace(port=listener.sockets[0].getsockname()[1]),
                                 body, headers)
    finally:
        live.loop.call_soon_threadsafe(listener.close)
    assert status == 500 and json.loads(answer)["error"]["code"] == -32600
    logged = capfd.readouterr().err
    assert "failed to answer a request: AttributeError" in logged and "Traceback" not in logged


# --- Resources and prompts over HTTP: Mcp-Name mirrors the uri or the name; statuses ---

def test_modern_resources_read_and_prompts_get_mirror_their_name(live):
    body, headers = modern("resources/read", {"uri": "test://static-text"},
                           Mcp_Name="test://static-text")
    status, _, answer = post(live, body, headers)
    assert status == 200 and json.loads(answer)["result"]["contents"] == [{
        "uri": "test://static-text", "mimeType": "text/plain",
        "text": "This is the content of the static text resource."}]
    # Not ASCII: the header carries the URI in Base64 (spec: Value Encoding).
    uri = "test://template/café/data"
    encoded = "=?base64?" + base64.b64encode(uri.encode()).decode() + "?="
    status, _, answer = post(live, *modern("resources/read", {"uri": uri}, Mcp_Name=encoded))
    assert status == 200
    assert json.loads(json.loads(answer)["result"]["contents"][0]["text"])["id"] == "café"
    body, headers = modern("prompts/get", {"name": "test_simple_prompt"},
                           Mcp_Name="test_simple_prompt")
    status, _, answer = post(live, body, headers)
    assert status == 200 and json.loads(answer)["result"]["messages"][0]["role"] == "user"


@pytest.mark.parametrize("method, params, name", [
    ("resources/read", {"uri": "test://static-text"}, "test://static-binary"),
    ("resources/read", {"uri": "test://static-text"}, None),
    ("prompts/get", {"name": "test_simple_prompt"}, "test_prompt_with_image"),
])
def test_modern_mcp_name_must_match_the_uri_or_the_name(live, method, params, name):
    status, _, answer = post(live, *modern(method, params, Mcp_Name=name))
    assert status == 400 and json.loads(answer)["error"]["code"] == -32020


def test_a_resource_not_found_is_400_when_modern_and_200_in_a_legacy_session(live):
    uri = "test://nothing-here"
    status, _, answer = post(live, *modern("resources/read", {"uri": uri}, Mcp_Name=uri))
    assert status == 400 and json.loads(answer)["error"]["code"] == -32602
    assert json.loads(answer)["error"]["data"] == {"uri": uri}
    session = {"Mcp-Session-Id": initialize(live)[0]}
    request = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
    status, _, answer = post(live, request, session)
    assert status == 200 and json.loads(answer)["error"]["data"] == {"uri": uri}
