"""Bad input, line by line, to a live mcp_min server (tests/hard_server.py): each bad line gets the
answer JSON-RPC and MCP ask for (or none, for a notification or a response), and the stream goes on.

Every case is also a row of the bad-input table in tests/BEHAVIOUR.md (what is sent -> what comes
back). With BAD_INPUT_TABLE=path set, the table is written there from what the server really
answered in this run.
"""
import collections, json, os, pathlib, subprocess, time

import pytest

from hard_server import RawServer, call, id_key, line, mcp_min

MAX = mcp_min.MAX_MESSAGE_BYTES
TABLE = os.environ.get("BAD_INPUT_TABLE")


def request(request_id, method="ping", params=None, **extra):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, **extra}
    return line(message if params is None else {**message, "params": params})


def cancel(request_id):
    return line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": request_id}})


def padded_ping(request_id, length):
    """A ping whose line is exactly `length` bytes long, not counting its newline."""
    head, tail = (f'{{"jsonrpc":"2.0","id":"{request_id}",'
                  f'"method":"ping","params":{{"pad":"'.encode(), b'"}}')
    return head + b"a" * (length - len(head) - len(tail)) + tail + b"\n"


def nested(depth, inner=b"1"):
    return b"[" * depth + inner + b"]" * depth


# What can come back for one request: an error with a code, a result, or a result with
# isError: true.
def err(code, request_id=None):
    return (id_key(request_id), code)


def ok(request_id):
    return (id_key(request_id), "result")


def tool_err(request_id):
    return (id_key(request_id), "isError")


def kind(message):
    if "error" in message:
        return (id_key(message["id"]), message["error"]["code"])
    return (id_key(message["id"]), "isError" if message["result"].get("isError") else "result")


class Case:
    def __init__(self, key, what, lines, expect, initialize=True):
        self.key, self.what, self.lines, self.expect, self.initialize = (
            key, what, lines, expect, initialize)


DEEP = 100_000
HUGE = "9" * 10_000
BIG_BUT_OK = int("7" * 4_000)
C = Case
CASES = [
    # Not JSON, or not UTF-8
    C("not-json", "a line that is not JSON: `hello`", [b"hello\n"], [err(-32700)]),
    C("invalid-utf8", "invalid UTF-8: bytes `\\xff\\xfe` inside a request",
      [b'{"jsonrpc":"2.0","id":1,"method":"ping","p":"\xff\xfe"}\n'], [err(-32700)]),
    C("utf8-surrogate", "UTF-8-encoded surrogate bytes `\\xed\\xa0\\x80`",
      [b'{"jsonrpc":"2.0","id":1,"method":"ping","p":"\xed\xa0\x80"}\n'], [err(-32700)]),
    C("bom", "a UTF-8 byte order mark before the JSON", [b"\xef\xbb\xbf" + request(1)],
      [err(-32700)]),
    C("nul", "a NUL byte inside the line", [b'{"jsonrpc":"2.0",\x00"id":1,"method":"ping"}\n'],
      [err(-32700)]),
    C("control-char", "a raw control character (0x01) inside a string",
      [b'{"jsonrpc":"2.0","id":"a\x01b","method":"ping"}\n'], [err(-32700)]),
    C("two-messages", "two JSON objects on one line", [request(1).rstrip(b"\n") + request(2)],
      [err(-32700)]),
    C("truncated", "a truncated message: `{\"jsonrpc\":\"2.0\",\"id\":1,\"meth`",
      [b'{"jsonrpc":"2.0","id":1,"meth\n'], [err(-32700)]),
    C("empty-line", "an empty line", [b"\n"], [err(-32700)]),
    C("whitespace-line", "a line of only spaces and tabs", [b"  \t \n"], [err(-32700)]),
    C("crlf", "a request ending in `\\r\\n` (a CRLF client)",
      [request("crlf").replace(b"\n", b"\r\n")], [ok("crlf")]),
    C("nan", "`NaN` as a value",
      [b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}\n'], [err(-32700)]),
    C("infinity", "`Infinity` / `-Infinity` as values",
      [b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}\n',
       b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":-Infinity}}\n'],
      [err(-32700), err(-32700)]),
    C("float-overflow", "a number too big for a double, `1e400`, as a tool argument",
      [b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
       b'"params":{"name":"add","arguments":{"a":1e400}}}\n'], [tool_err(1)]),
    C("float-overflow-param", "`1e400` in params a method ignores",
      [b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}\n'], [ok(1)]),
    C("float-overflow-echoed", "`1e400` as a progress token, which the answer must not carry",
      [b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
       b'"arguments":{"text":"x"},"_meta":{"progressToken":1e400}}}\n'], [ok(1)]),
    C("long-float", "a 300-digit number with a fraction (a whole number as a double)",
      [b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":'
       + b"1" * 300 + b'.5}}}\n'], [ok(1)]),
    C("deep-array", f"{DEEP:,} nested `[`", [b"[" * DEEP + b"\n"], [err(-32700)]),
    C("deep-object", f"{DEEP:,} nested `{{\"a\":`",
      [b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"\n"], [err(-32700)]),
    C("deep-params", f"a request whose params nest {DEEP:,} levels",
      [b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + nested(DEEP) + b"}}\n"],
      [err(-32700)]),
    # Python reads no integer of over 4,300 digits: a parse error, even where JSON allows one
    # (keeping its magnitude as a float was dropped to fit mcp_min.py's size budget).
    C("huge-int-id", "a 10,000-digit integer as id",
      [b'{"jsonrpc":"2.0","id":' + HUGE.encode() + b',"method":"ping"}\n'], [err(-32700)]),
    C("huge-int-arg", "a 10,000-digit integer as a tool argument",
      [b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":'
       + HUGE.encode() + b"}}}\n"], [err(-32700)]),
    C("big-int-id", "a 4,000-digit integer as id (under Python's 4,300-digit limit)",
      [request(BIG_BUT_OK)], [ok(BIG_BUT_OK)]),
    # Not a single JSON-RPC request object
    C("batch", "a batch: `[{...ping...}]`", [b"[" + request(1).rstrip(b"\n") + b"]\n"],
      [err(-32600)]),
    C("empty-batch", "an empty array `[]`", [b"[]\n"], [err(-32600)]),
    C("scalar", "a JSON value that is not an object: `42`, `\"ping\"`, `null`",
      [b"42\n", b'"ping"\n', b"null\n"], [err(-32600)] * 3),
    C("empty-object", "`{}`", [b"{}\n"], [err(-32600)]),
    C("id-null", "`\"id\": null`", [request(None)], [err(-32600)]),
    C("id-float", "a fractional id: `\"id\": 1.5`", [request(1.5)], [err(-32600)]),
    C("id-object", "an object or array id: `{}`, `[1]`", [request({}), request([1])],
      [err(-32600)] * 2),
    C("id-bool", "a boolean id: `true`", [request(True)], [err(-32600)]),
    C("id-empty-string", "`\"id\": \"\"` (valid: any string)", [request("")], [ok("")]),
    C("id-negative", "`\"id\": -7` (valid: any integer)", [request(-7)], [ok(-7)]),
    C("no-jsonrpc", "no `jsonrpc` member", [line({"id": 1, "method": "ping"})], [err(-32600, 1)]),
    C("jsonrpc-1", "`\"jsonrpc\": \"1.0\"`, or the number `2.0`",
      [request(1, jsonrpc="1.0"), line({"jsonrpc": 2.0, "id": 2, "method": "ping"})],
      [err(-32600, 1), err(-32600, 2)]),
    C("no-method", "a request without `method`", [line({"jsonrpc": "2.0", "id": 1})],
      [err(-32600, 1)]),
    C("method-not-string", "`\"method\": 123`", [line({"jsonrpc": "2.0", "id": 1, "method": 123})],
      [err(-32600, 1)]),
    C("params-array", "`params` that is not an object: `[1]`, `\"x\"`, `null`",
      [request(1, params=[1]), request(2, params="x"),
       line({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": None})],
      [err(-32602, 1), err(-32602, 2), err(-32602, 3)]),
    C("notification-bad-params", "a notification with `params: [1]`",
      [line({"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]})], []),
    C("notification-unknown", "an unknown notification",
      [line({"jsonrpc": "2.0", "method": "notifications/whatever"})], []),
    # Well-formed, but not something this server does
    C("unknown-method", "an unknown method", [request(1, "no/such/method")], [err(-32601, 1)]),
    C("unknown-tool", "`tools/call` of an unknown tool", [call(1, "no_such_tool", {})],
      [err(-32602, 1)]),
    C("call-no-name", "`tools/call` without `name`",
      [request(1, "tools/call", {"arguments": {}})], [err(-32602, 1)]),
    C("call-args-not-object", "`tools/call` with `arguments: [1, 2]`",
      [request(1, "tools/call", {"name": "add", "arguments": [1, 2]})], [err(-32602, 1)]),
    C("arg-wrong-type", "an argument of the wrong type: `add(a=\"5\")`, `add(a=true)`",
      [call(1, "add", {"a": "5"}), call(2, "add", {"a": True})],
      [tool_err(1), tool_err(2)]),
    C("arg-int-for-float",
      "an integer for a `float` (JSON Schema `number`) argument: `sleep(seconds=0)`",
      [call(1, "sleep", {"seconds": 0})], [ok(1)]),
    C("arg-integral-float", "`5.0` for an integer argument",
      [call(1, "add", {"a": 5.0, "b": 1})], [ok(1)]),
    C("arg-missing", "a missing required argument: `add()`", [call(1, "add", {})], [tool_err(1)]),
    C("arg-extra", "an extra argument: `add(a=1, c=2)`", [call(1, "add", {"a": 1, "c": 2})],
      [tool_err(1)]),
    C("second-initialize", "a second `initialize` (answered again: nothing to refuse)",
      [request(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "x", "version": "1"}})],
      [ok(1)]),
    C("cancel-unknown", "`notifications/cancelled` for an id not in flight",
      [line({"jsonrpc": "2.0", "method": "notifications/cancelled",
             "params": {"requestId": 12345}})], []),
    C("cancel-no-params", "`notifications/cancelled` without params",
      [line({"jsonrpc": "2.0", "method": "notifications/cancelled"})], []),
    C("cancel-unhashable",
      "`notifications/cancelled` whose `requestId` is an array or an object"
      " (while a request runs)",
      [call("busy", "sleep", {"seconds": 0.3}), cancel([1]), cancel({"a": 1})], [ok("busy")]),
    C("cancel-bool-float",
      "`notifications/cancelled` with `requestId` `true` or `1.0` while request `1` runs",
      [call(1, "sleep", {"seconds": 0.3}), cancel(True), cancel(1.0)], [ok(1)]),
    C("response-result", "a response object: `{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}`",
      [line({"jsonrpc": "2.0", "id": 5, "result": {}})], []),
    C("response-error", "an error response object",
      [line({"jsonrpc": "2.0", "id": 6, "error": {"code": -1, "message": "x"}})], []),
    # Strange but valid text
    C("u2028", "U+2028 / U+2029 (JavaScript line separators) inside a string",
      [call(1, "echo_async", {"text": "a\u2028b\u2029c"})], [ok(1)]),
    C("lone-surrogate-text", "a lone surrogate `\\ud800` (escaped) in a tool argument",
      [call(1, "echo_async", {"text": "a\ud800b"})], None),
    C("lone-surrogate-id", "a lone surrogate `\\ud800` (escaped) as the id", [request("\ud800")],
      [ok("\ud800")]),
    C("lone-surrogate-id-bad", "the same id on an invalid request (`\"jsonrpc\": \"1.0\"`)",
      [request("\ud800", jsonrpc="1.0")], [err(-32600, "\ud800")]),
    # Size
    C("oversized", f"a request line of 5 MiB (over `MAX_MESSAGE_BYTES` = {MAX:,})",
      [call(1, "echo_async", {"text": "x" * (5 << 20)})], [err(-32600)]),
    C("at-limit", f"a line of exactly {MAX:,} bytes plus its newline",
      [padded_ping("at-limit", MAX)], [ok("at-limit")]),
    C("over-limit", f"a line of {MAX + 1:,} bytes plus its newline",
      [padded_ping("over-limit", MAX + 1)], [err(-32600)]),
    # Lifecycle
    C("before-initialize", "`tools/list` before `initialize` (served: a legacy request)",
      [request(1, "tools/list")], [ok(1)], initialize=False),
    C("ping-before-initialize", "`ping` before `initialize` (allowed)", [request(1)], [ok(1)],
      initialize=False),
    C("modern-without-initialize",
      "a 2026-07-28 request (protocol version in `params._meta`) without `initialize`",
      [request(1, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                           "io.modelcontextprotocol/clientCapabilities": {}}})],
      [ok(1)], initialize=False),
]


class Table:
    def __init__(self):
        self.rows = {}

    def record(self, key, what, messages):
        self.rows[key] = (what, describe(messages))

    def write(self, order):
        lines = [
            "### What the server does with bad input",
            "",
            f"One message per line, at most `MAX_MESSAGE_BYTES` = {MAX:,} bytes (4 MiB) per line,"
            " not counting",
            "the newline; a longer line is skipped without being held in memory and answered with"
            " one `-32600`.",
            "After every row the stream goes on: the next request is answered as usual.",
            "An error that cannot be tied to a request carries `\"id\": null`.",
            "",
            "| What is sent | What comes back |",
            "|---|---|",
        ]
        for key in order:
            if key in self.rows:
                what, back = self.rows[key]
                lines.append(f"| {escape(what)} | {escape(back)} |")
        if TABLE:
            pathlib.Path(TABLE).write_text("\n".join(lines) + "\n")


def escape(text):
    return text.replace("|", "\\|").replace("\n", " ")


def describe(messages):
    if not messages:
        return "nothing (ignored)"
    parts = []
    for message in messages:
        shown_id = (json.dumps(message["id"]) if len(json.dumps(message["id"])) < 20
                    else "(the same id)")
        if "error" in message:
            text = message["error"]["message"]
            text = text if len(text) < 100 else text[:97] + "..."
            parts.append(f"`{message['error']['code']}` error, id `{shown_id}`: *{text}*")
        elif message["result"].get("isError"):
            text = message["result"]["content"][0]["text"]
            parts.append(f"a result with `isError: true`, id `{shown_id}`: *{text[:100]}*")
        else:
            parts.append(f"a normal result, id `{shown_id}`")
    if len(set(parts)) == 1 and len(parts) > 1:
        return f"{len(parts)} × " + parts[0]
    return "; ".join(parts)


EXTRA_ROWS = ["duplicate-id"]


@pytest.fixture(scope="module")
def table():
    table = Table()
    yield table
    table.write([case.key for case in CASES] + EXTRA_ROWS)


def finish(server):
    """The server still answers, exits 0 when stdin closes, and wrote only JSON-RPC lines to
    stdout."""
    assert server.alive(), server.stderr_tail()
    assert server.close() == 0, server.stderr_tail()
    assert server.problems == [], server.problems


@pytest.mark.parametrize("case", CASES, ids=[case.key for case in CASES])
def test_bad_input(case, table):
    server = RawServer(initialize=case.initialize)
    try:
        ids = [1] if case.expect is None else [i for (_, i), _ in case.expect if i is not None]
        try:
            got = server.exchange(case.lines, timeout=3.0, wait_for_ids=ids)
        except (TimeoutError, AssertionError):
            try:
                server.proc.wait(1)
            except subprocess.TimeoutExpired:
                pass
            table.rows[case.key] = (
                case.what,
                "**no answer** (a bug: see the test of the same name)"
                if server.proc.poll() is None else "**the server crashed** (a bug: see the test)")
            raise
        table.record(case.key, case.what, got)
        if case.expect is None:  # any one answer for id 1 will do
            assert [kind(m)[0] for m in got] == [id_key(1)], got
        else:
            assert (collections.Counter(kind(m) for m in got)
                    == collections.Counter(case.expect)), got
        finish(server)
    finally:
        server.kill()


def test_duplicate_in_flight_id(table):
    """A second request with the id of one still running gets an error; the first still gets its
    answer."""
    server = RawServer()
    try:
        started = time.monotonic()
        got = server.exchange([call(7, "sleep", {"seconds": 0.5}),
                               call(7, "echo_async", {"text": "second"})])
        assert [kind(m) for m in got] == [err(-32600, 7)], got
        assert "in use" in got[0]["error"]["message"]
        first = server.recv(5)
        assert kind(first) == ok(7) and first["result"]["content"][0]["text"] == "slept", first
        assert time.monotonic() - started >= 0.5
        table.rows["duplicate-id"] = ("a request reusing the id of one still in progress",
                                      describe(got)
                                      + "; the first request still gets its own answer")
        # Once the first has finished, its id may be used again.
        assert [kind(m) for m in server.exchange([call(7, "echo_async", {"text": "again"})],
                                                 wait_for_ids=[7])] == [ok(7)]
        finish(server)
    finally:
        server.kill()


def test_stream_goes_on_after_every_bad_line():
    """All the bad lines above, one after another to ONE server: every request is still answered
    once."""
    server = RawServer()
    try:
        for case in CASES:
            # those have tests of their own
            if not case.initialize \
                    or case.key in ("oversized", "at-limit", "over-limit", "second-initialize") \
                    or case.key.startswith("lone-surrogate-id"):
                continue
            got = server.exchange(case.lines, timeout=5.0,
                                  wait_for_ids=[i for (_, i), _ in case.expect or []
                                                if i is not None])
            assert len(got) == (1 if case.expect is None else len(case.expect)), (case.key, got)
        finish(server)
    finally:
        server.kill()
