"""Wire-level tests: raw lines into a real server subprocess (tests/wire_server.py), exact lines
out.

Every stdout line is checked to be one JSON-RPC message on one line (the stdio transport allows
nothing else on stdout), and responses are matched by id: they arrive in completion order.
Spec: https://modelcontextprotocol.io/specification (revisions 2025-11-25 and 2026-07-28).
"""
import functools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import script_server

ROOT = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, str(ROOT / "tests" / "wire_server.py")]

LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
MODERN = "2026-07-28"
META = "io.modelcontextprotocol/"
SERVER_INFO = {"name": "wire-test", "version": "1.2.3"}
CAPABILITIES = {"tools": {"listChanged": True}}  # server code may announce changes
if os.environ.get("MCP_MIN_DIR"):  # tests/test_cut.py: mcp_min.py cut after its core, which has
    CAPABILITIES = {"tools": {}}  # no change notifications (see wire_server.py)
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
UNSUPPORTED_VERSION = -32022

# The exact tools/list of tests/wire_server.py: names in registration order, schemas derived
# from hints.
TOOLS = [
    {"name": "echo", "title": "Echo", "description": "Return the text unchanged.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"], "additionalProperties": False},
     "annotations": {"readOnlyHint": True}},
    {"name": "add", "description": "Add two integers.",
     "inputSchema": {"type": "object",
                     "properties": {"a": {"type": "integer"},
                                    "b": {"type": "integer", "default": 1}},
                     "required": ["a"], "additionalProperties": False}},
    {"name": "describe",
     "description": "Echo the arguments back as structured data, with the Python type each"
                    " arrived as.",
     "inputSchema": {"type": "object", "properties": {
         "name": {"type": "string"},
         "tags": {"type": "array", "items": {"type": "string"}},
         "mode": {"enum": ["fast", "exact"], "default": "fast"},
         "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
         "ratio": {"type": "number", "default": 0.5},
         "verbose": {"type": "boolean", "default": False}},
         "required": ["name", "tags"], "additionalProperties": False},
     "outputSchema": {"type": "object"}},
    {"name": "blocks", "description": "Return two content blocks: a text and an image.",
     "inputSchema": {"type": "object", "additionalProperties": False}},
    {"name": "nothing", "description": "Do nothing and return nothing.",
     "inputSchema": {"type": "object", "additionalProperties": False}},
    {"name": "slow", "description": "Sleep ms milliseconds in a worker thread, then answer.",
     "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}},
                     "required": ["ms"], "additionalProperties": False}},
    {"name": "count", "description": "Report progress once per step (async).",
     "inputSchema": {"type": "object", "properties": {"steps": {"type": "integer"}},
                     "required": ["steps"], "additionalProperties": False}},
    {"name": "count_sync",
     "description": "Report progress once per step (sync, from a worker thread).",
     "inputSchema": {"type": "object", "properties": {"steps": {"type": "integer"}},
                     "required": ["steps"], "additionalProperties": False}},
    {"name": "fail", "description": "Always raise ValueError(message).",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                     "required": ["message"], "additionalProperties": False}},
    {"name": "noisy",
     "description": "Write to stdout three ways (print, sys.__stdout__, fd 1), then answer.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"], "additionalProperties": False}},
    {"name": "hang", "description": "Never return (until cancelled).",
     "inputSchema": {"type": "object", "additionalProperties": False}},
    {"name": "hang_sync",
     "description": "Block a worker thread until cancelled (it checks ctx.cancelled) or seconds"
                    " pass.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}},
                     "required": ["seconds"], "additionalProperties": False}},
    {"name": "stubborn", "description": "Block a worker thread for seconds, ignoring cancellation.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}},
                     "required": ["seconds"], "additionalProperties": False}},
    {"name": "crash", "description": "Write a last word to stderr and kill the process at once.",
     "inputSchema": {"type": "object", "properties": {"code": {"type": "integer", "default": 3}},
                     "additionalProperties": False}},
]


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def to_bytes(message):
    """A dict becomes one compact JSON line; str and bytes are sent as they are (plus a newline)."""
    if isinstance(message, bytes):
        return message + b"\n"
    if isinstance(message, str):
        return message.encode() + b"\n"
    return json.dumps(message).encode() + b"\n"


def refuse_constant(name):
    raise AssertionError(f"{name} on the wire is not JSON")


def check_line(raw):
    """One stdout line -> the message, after checking it is one valid JSON-RPC message on one
    line."""
    assert raw.endswith(b"\n"), f"a message without its newline: {raw[:200]!r}"
    body = raw[:-1]
    assert b"\n" not in body and b"\r" not in body, f"an embedded line break: {raw[:200]!r}"
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise AssertionError(f"stdout line is not UTF-8: {raw[:200]!r}") from None
    try:
        message = json.loads(text, parse_constant=refuse_constant)
    except ValueError:
        raise AssertionError(f"stdout holds something that is not JSON: {raw[:200]!r}") from None
    assert isinstance(message, dict), f"not a JSON object: {raw[:200]!r}"
    assert message.get("jsonrpc") == "2.0", message
    if "id" in message:  # a response: exactly one of result and error
        assert set(message) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), message
        if "result" in message:
            assert isinstance(message["result"], dict), message
        else:
            error = message["error"]
            assert isinstance(error, dict) and set(error) <= {"code", "message", "data"}, message
            assert (type(error["code"]) is int and isinstance(error["message"], str)
                    and error["message"]), message
    else:  # a notification; this server sends no requests
        assert (set(message) <= {"jsonrpc", "method", "params"}
                and isinstance(message["method"], str)), message
        assert isinstance(message.get("params", {}), dict), message
    return message


def check_stdout(stdout):
    """All of stdout -> the list of messages, in order; fails on anything that is not a message."""
    if not stdout:
        return []
    assert stdout.endswith(b"\n"), f"stdout ends mid-line: {stdout[-200:]!r}"
    return [check_line(line + b"\n") for line in stdout[:-1].split(b"\n")]


class Run:
    """The outcome of one server process: its messages (in stdout order), stderr and exit code."""

    def __init__(self, messages, stderr, returncode):
        self.messages, self.stderr, self.returncode = messages, stderr, returncode
        self.responses = [m for m in messages if "id" in m]
        self.notifications = [m for m in messages if "id" not in m]

    def by_id(self):
        """id -> response; every id must appear once (id null excluded: see errors_without_id)."""
        found = {}
        for response in self.responses:
            if response["id"] is None:
                continue
            key = json.dumps(response["id"])
            assert key not in found, (
                f"two responses for id {response['id']!r}: {found[key]} and {response}")
            found[key] = response
        return {json.loads(key): response for key, response in found.items()}

    def response(self, request_id):
        matches = [r for r in self.responses
                   if r["id"] == request_id and type(r["id"]) is type(request_id)]
        assert len(matches) == 1, (f"expected one response for id {request_id!r}, got {matches}\n"
                                   f"stderr: {self.stderr[-2000:]}")
        return matches[0]

    def result(self, request_id):
        response = self.response(request_id)
        assert "result" in response, response
        return response["result"]

    def error(self, request_id):
        response = self.response(request_id)
        assert "error" in response, response
        return response["error"]

    def errors_without_id(self):
        return [r["error"] for r in self.responses if r["id"] is None]


def exchange(messages, *args, timeout=30):
    """Write every message at once, close stdin, and collect everything until the server exits."""
    data = b"".join(to_bytes(m) for m in messages)
    proc = subprocess.run([*SERVER, *args], input=data, capture_output=True, timeout=timeout,
                          cwd=ROOT)
    run = Run(check_stdout(proc.stdout), proc.stderr.decode("utf-8", "replace"), proc.returncode)
    assert run.returncode == 0, (
        f"server exited with {run.returncode}; stderr:\n{run.stderr[-3000:]}")
    return run


class Session:
    """A live server for tests that must wait for one answer before sending the next line."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([*SERVER, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        self.incoming, self.messages, self.stderr_chunks = queue.Queue(), [], []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.err_reader = threading.Thread(
            target=lambda: self.stderr_chunks.extend(self.proc.stderr), daemon=True)
        self.err_reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            try:
                message = check_line(raw)
            except AssertionError as e:
                message = e
            self.incoming.put(message)
        self.incoming.put(None)

    def send(self, *messages):
        for message in messages:
            self.proc.stdin.write(to_bytes(message))
        self.proc.stdin.flush()

    def next_message(self, timeout=10):
        message = self.incoming.get(timeout=timeout)
        if isinstance(message, AssertionError):
            raise message
        assert message is not None, f"the server closed stdout; stderr:\n{self.stderr}"
        self.messages.append(message)
        return message

    def request(self, message, timeout=10):
        """Send one request; return its response (notifications on the way are kept in
        self.messages)."""
        self.send(message)
        while True:
            got = self.next_message(timeout)
            if "id" in got:
                assert got["id"] == message["id"], f"an answer to another request: {got}"
                return got

    def assert_silent(self, seconds=0.3):
        """Nothing more arrives for a while (used after notifications, which get no answer)."""
        try:
            got = self.incoming.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected message: {got}")

    def close(self, timeout=10):
        """Close stdin; the server must exit by itself. Returns (the rest of its messages, exit
        code)."""
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"the server did not exit within {timeout}s of stdin EOF") from None
        self.reader.join(5)
        self.err_reader.join(5)
        rest = []
        while True:
            message = self.incoming.get(timeout=5)
            if message is None:
                break
            if isinstance(message, AssertionError):
                raise message
            rest.append(message)
        self.messages += rest
        return rest, code

    @property
    def stderr(self):
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except Exception:
                pass


@pytest.fixture
def session():
    opened = []

    def start(*args):
        opened.append(Session(*args))
        return opened[-1]
    yield start
    for s in opened:
        s.kill()


def req(request_id, method, params=None):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def note(method, params=None):
    message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(request_id="init", version="2025-11-25"):
    return req(request_id, "initialize",
               {"protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "wire-test-client", "version": "0"}})


HANDSHAKE = [initialize(), note("notifications/initialized")]


def call(request_id, name, arguments=None, **extra):
    params = {"name": name, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return req(request_id, "tools/call", params)


def modern_meta(**extra):
    return {META + "protocolVersion": MODERN, META + "clientCapabilities": {},
            META + "clientInfo": {"name": "wire-test-client", "version": "0"}, **extra}


def modern(request_id, method, params=None, **extra_meta):
    params = dict(params or {})
    params["_meta"] = {**modern_meta(**extra_meta), **params.get("_meta", {})}
    return req(request_id, method, params)


def text_result(text, is_error=False):
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def modern_result(result):
    return {**result, "resultType": "complete", "_meta": {META + "serverInfo": SERVER_INFO}}


def assert_tool_error(result, *fragments):
    """A tool execution error: a normal result, isError true, one text block that says what is
    wrong."""
    assert set(result) == {"content", "isError"}, result
    assert result["isError"] is True, result
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text", result
    assert set(result["content"][0]) == {"type", "text"}, result
    for fragment in fragments:
        assert fragment in result["content"][0]["text"], (fragment, result)


def assert_error(error, code):
    assert error["code"] == code, error
    assert set(error) <= {"code", "message", "data"}, error


# ---------------------------------------------------------------------------
# Legacy era: the initialize handshake (spec 2025-11-25 basic/lifecycle)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_initialize_echoes_a_supported_legacy_version(version):
    run = exchange([initialize(1, version)])
    assert run.messages == [{"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": version, "capabilities": CAPABILITIES, "serverInfo": SERVER_INFO}}]


@pytest.mark.parametrize("version", ["1999-01-01", "2025-12-31", "not-a-date"])
def test_initialize_with_an_unknown_version_answers_the_latest_legacy_version(version):
    run = exchange([initialize(1, version)])
    assert run.messages == [{"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-11-25", "capabilities": CAPABILITIES, "serverInfo": SERVER_INFO}}]


def test_initialize_carries_instructions_only_when_set():
    run = exchange([initialize(1)], "--instructions", "Call echo to test the line.")
    assert run.result(1) == {"protocolVersion": "2025-11-25", "capabilities": CAPABILITIES,
                             "serverInfo": SERVER_INFO,
                             "instructions": "Call echo to test the line."}
    assert "instructions" not in exchange([initialize(1)]).result(1)


@pytest.mark.parametrize("params", [{}, {"protocolVersion": 20251125, "capabilities": {}}])
def test_initialize_without_a_version_string_is_invalid_params(params):
    run = exchange([req(1, "initialize", params), req(2, "ping")])
    assert_error(run.error(1), INVALID_PARAMS)
    assert run.result(2) == {}


def test_handshake_sequence_step_by_step(session):
    s = session()
    # ping: allowed before init
    assert s.request(req(1, "ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    # Lenient, to fit the size budget: a request before initialize is served in the legacy era.
    before = s.request(req(2, "tools/list"))
    assert before == {"jsonrpc": "2.0", "id": 2, "result": {"tools": TOOLS}}, before
    assert s.request(initialize(3)) == {"jsonrpc": "2.0", "id": 3, "result": {
        "protocolVersion": "2025-11-25", "capabilities": CAPABILITIES, "serverInfo": SERVER_INFO}}
    s.send(note("notifications/initialized"))
    s.assert_silent()  # a notification gets no reply
    assert s.request(req(4, "ping")) == {"jsonrpc": "2.0", "id": 4, "result": {}}
    again = s.request(initialize(5))  # a second initialize is answered again
    assert again["result"]["protocolVersion"] == "2025-11-25", again
    assert s.request(req(6, "tools/list")) == {"jsonrpc": "2.0", "id": 6,
                                               "result": {"tools": TOOLS}}
    rest, code = s.close()
    assert rest == [] and code == 0


def test_tools_list_exact_legacy():
    run = exchange([*HANDSHAKE, req(1, "tools/list"), req(2, "tools/list", {"cursor": "made-up"})])
    assert run.result(1) == {"tools": TOOLS}  # one page; no nextCursor
    # A cursor this server did not give (spec: utilities/pagination, Error Handling).
    assert run.error(2) == {"code": INVALID_PARAMS,
                            "message": 'Invalid params: unknown cursor "made-up"'}


def test_logging_is_not_offered():
    # Dropped to fit the size budget, and deprecated by 2026-07-28 (SEP-2577): a server logs to
    # stderr, which hosts show. logging/setLevel is an unknown method in both eras.
    run = exchange([*HANDSHAKE, req(1, "logging/setLevel", {"level": "warning"})])
    assert_error(run.error(1), METHOD_NOT_FOUND)


@pytest.mark.parametrize("request_id", [0, -7, 2**53, "abc", "", "ünïcode-id"])
def test_any_string_or_integer_id_is_echoed_exactly(request_id):
    run = exchange([*HANDSHAKE, req(request_id, "ping")])
    assert run.messages == [run.response("init"),
                            {"jsonrpc": "2.0", "id": request_id, "result": {}}]


# --- tools/call (spec: server/tools) ---

SUCCESSES = [
    ("str", "echo", {"text": "héllo\nworld ☃ \u2028 \"quoted\""},
     text_result("héllo\nworld ☃ \u2028 \"quoted\"")),
    ("int", "add", {"a": 2, "b": 3}, text_result("5")),
    ("default", "add", {"a": 2}, text_result("3")),
    ("integral float for int", "add", {"a": 2.0}, text_result("3")),
    ("negative", "add", {"a": -10, "b": 4}, text_result("-6")),
    ("content blocks", "blocks", {},
     {"content": [{"type": "text", "text": "a red dot"},
                  {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}],
      "isError": False}),
    ("None", "nothing", {}, {"content": [], "isError": False}),
    ("arguments omitted", "nothing", None, {"content": [], "isError": False}),
    ("sync", "slow", {"ms": 1}, text_result("slept 1 ms")),
]


@pytest.mark.parametrize("label,name,arguments,expected", SUCCESSES, ids=[s[0] for s in SUCCESSES])
def test_tools_call_success(label, name, arguments, expected):
    assert calls_run().result(f"ok-{label}") == expected


def describe_structured(args):
    return {"args": args, "types": {key: type(value).__name__ for key, value in args.items()}}


def assert_structured(result, structured, modern=False):
    """A dict result: structuredContent, plus the same JSON as one text block for clients that
    read only content."""
    extra = {"resultType", "_meta"} if modern else set()
    assert set(result) == {"content", "isError", "structuredContent"} | extra, result
    assert result["isError"] is False and result["structuredContent"] == structured, result
    assert len(result["content"]) == 1 and set(result["content"][0]) == {"type", "text"}, result
    assert (result["content"][0]["type"] == "text"
            and json.loads(result["content"][0]["text"]) == structured)
    if modern:
        assert (result["resultType"] == "complete"
                and result["_meta"] == {META + "serverInfo": SERVER_INFO})


def test_tools_call_dict_result_has_structured_content_and_the_same_json_as_text():
    run = exchange([*HANDSHAKE,
                    call(1, "describe", {"name": "x", "tags": ["a", "b"]}),
                    call(2, "describe", {"name": "ÿ", "tags": [], "mode": "exact", "limit": 7,
                                         "ratio": 0.25, "verbose": True}),
                    call(3, "describe", {"name": "n", "tags": ["t"], "limit": None}),
                    req(4, "tools/list")])
    assert_structured(run.result(1),
                      describe_structured({"name": "x", "tags": ["a", "b"], "mode": "fast",
                                           "limit": None, "ratio": 0.5, "verbose": False}))
    assert_structured(run.result(2),
                      describe_structured({"name": "ÿ", "tags": [], "mode": "exact", "limit": 7,
                                           "ratio": 0.25, "verbose": True}))
    assert "ÿ" in run.result(2)["content"][0]["text"]  # readable text, not \u escapes
    assert run.result(3)["structuredContent"]["args"]["limit"] is None
    described = next(tool for tool in run.result(4)["tools"] if tool["name"] == "describe")
    # declared, so structuredContent is mandatory
    assert described["outputSchema"] == {"type": "object"}


def test_an_integer_is_accepted_for_a_float_parameter():
    # JSON has one number type; JSON Schema 2020-12 counts every integer as a "number".
    run = exchange([*HANDSHAKE, call(1, "describe", {"name": "n", "tags": [], "ratio": 2})])
    result = run.result(1)
    assert result["isError"] is False, result
    assert result["structuredContent"]["args"]["ratio"] == 2


BAD_ARGUMENTS = [
    ("string for int is not coerced", "add", {"a": "5"}, ["a", "integer"]),
    ("bool for int", "add", {"a": True}, ["a"]),
    ("fraction for int", "add", {"a": 2.5}, ["a"]),
    ("null for int", "add", {"a": None}, ["a"]),
    ("missing required", "add", {"b": 2}, ["a"]),
    ("missing everything", "add", {}, ["a"]),
    ("arguments omitted but required", "add", None, ["a"]),
    ("extra argument", "add", {"a": 1, "c": 2}, ["c"]),
    ("extra argument on a no-parameter tool", "nothing", {"x": 1}, ["x"]),
    ("literal outside the choices", "describe", {"name": "n", "tags": [], "mode": "slow"},
     ["mode"]),
    ("list item of the wrong type", "describe", {"name": "n", "tags": ["a", 1]}, ["tags"]),
    ("string for a list", "describe", {"name": "n", "tags": "a"}, ["tags"]),
    ("string for int | None", "describe", {"name": "n", "tags": [], "limit": "3"}, ["limit"]),
    ("string for float", "describe", {"name": "n", "tags": [], "ratio": "0.5"}, ["ratio"]),
    ("int for bool", "describe", {"name": "n", "tags": [], "verbose": 1}, ["verbose"]),
    ("null for str", "echo", {"text": None}, ["text"]),
    ("object for str", "echo", {"text": {"a": 1}}, ["text"]),
]


@pytest.mark.parametrize("label,name,arguments,fragments", BAD_ARGUMENTS,
                         ids=[b[0] for b in BAD_ARGUMENTS])
def test_tools_call_bad_arguments_are_tool_errors_not_protocol_errors(label, name, arguments,
                                                                       fragments):
    assert_tool_error(calls_run().result(f"bad-{label}"), *fragments)


def test_tools_call_exception_is_a_tool_error_with_its_message_and_no_traceback_on_stdout():
    run = exchange([*HANDSHAKE, call(1, "fail", {"message": "the disk is on fire"}),
                    req(2, "ping")])
    assert_tool_error(run.result(1), "the disk is on fire")
    assert run.result(2) == {}
    # the operator's story: stderr
    assert "Traceback" in run.stderr and "the disk is on fire" in run.stderr


FAILING_TOOLS = """
class Odd(BaseException):
    pass

@server.tool()
def first(items: list) -> str:
    'A next() that finds nothing raises StopIteration.'
    return next(iter(items))

@server.tool()
def interrupted() -> str:
    'Raise KeyboardInterrupt, as a library might.'
    raise KeyboardInterrupt('from a tool')

@server.tool()
async def odd() -> str:
    'Raise an exception that is not an Exception.'
    raise Odd('odd')

@server.tool()
async def awaits_cancelled() -> str:
    'Await a task that something else cancelled: CancelledError, though nobody cancelled us.'
    task = asyncio.ensure_future(asyncio.sleep(10))
    await asyncio.sleep(0)
    task.cancel()
    return await task

@server.tool()
def raises_cancelled() -> str:
    'A sync tool whose library raises CancelledError.'
    raise asyncio.CancelledError('from a library')
"""


def test_whatever_a_tool_raises_fails_only_its_own_call(tmp_path):
    # asyncio cannot set StopIteration on a future: carried out of the worker thread as it was,
    # it left the call waiting forever. A KeyboardInterrupt from a tool stopped the server, and
    # another BaseException lost its answer. A CancelledError that no cancellation caused left its
    # call without an answer, and its id in use for good.
    argv = script_server(tmp_path, FAILING_TOOLS)
    names = ("first", "interrupted", "odd", "awaits_cancelled", "raises_cancelled")
    lines = b"".join(to_bytes(call(name, name, {"items": []} if name == "first" else {}))
                     for name in names) + to_bytes(req("last", "ping"))
    done = subprocess.run(argv, input=lines, capture_output=True, timeout=30)
    failed = '{"jsonrpc":"2.0","id":"%s","result":{"content":[{"type":"text","text":"Tool %s ' \
             'failed: %s"}],"isError":true}}'
    assert sorted(done.stdout.decode().splitlines()) == [  # answers come as tools finish
        failed % ("awaits_cancelled", "awaits_cancelled", "CancelledError: "),
        failed % ("first", "first", "RuntimeError: the function raised StopIteration"),
        failed % ("interrupted", "interrupted", "KeyboardInterrupt: from a tool"),
        '{"jsonrpc":"2.0","id":"last","result":{}}',
        failed % ("odd", "odd", "Odd: odd"),
        failed % ("raises_cancelled", "raises_cancelled", "CancelledError: from a library")]
    assert done.returncode == 0 and "StopIteration" in done.stderr.decode()

PROTOCOL_ERRORS = [
    ("unknown tool", {"name": "no_such_tool", "arguments": {}}),
    ("name missing", {"arguments": {"text": "x"}}),
    ("name not a string", {"name": 5, "arguments": {}}),
    ("arguments a string", {"name": "echo", "arguments": "x"}),
    ("arguments an array", {"name": "echo", "arguments": ["x"]}),
    ("arguments null", {"name": "echo", "arguments": None}),
    ("no params at all", None),
]


@pytest.mark.parametrize("label,params", PROTOCOL_ERRORS, ids=[p[0] for p in PROTOCOL_ERRORS])
def test_tools_call_malformed_or_unknown_tool_is_invalid_params(label, params):
    run = calls_run()
    assert_error(run.error(f"proto-{label}"), INVALID_PARAMS)
    assert run.result("last") == {}


@functools.cache
def calls_run():
    """One legacy server for every tools/call case above: each case has its own id."""
    messages = [*HANDSHAKE]
    messages += [call(f"ok-{label}", name, arguments) for label, name, arguments, _ in SUCCESSES]
    messages += [call(f"bad-{label}", name, arguments)
                 for label, name, arguments, _ in BAD_ARGUMENTS]
    messages += [req(f"proto-{label}", "tools/call", params) for label, params in PROTOCOL_ERRORS]
    return exchange([*messages, req("last", "ping")])


def test_unknown_method_is_method_not_found():
    run = exchange([*HANDSHAKE, req(1, "resources/list"), req(2, "no/such/method"), req(3, "ping")])
    assert_error(run.error(1), METHOD_NOT_FOUND)
    assert_error(run.error(2), METHOD_NOT_FOUND)
    assert run.result(3) == {}


# ---------------------------------------------------------------------------
# Modern era: 2026-07-28, stateless, every request carries _meta (spec 2026-07-28 basic, versioning)
# ---------------------------------------------------------------------------

DISCOVER_RESULT = {
    "supportedVersions": [MODERN],
    "capabilities": CAPABILITIES,
    "resultType": "complete",
    "_meta": {META + "serverInfo": SERVER_INFO},
    "ttlMs": 3_600_000,
    "cacheScope": "public",
}


def test_server_discover_exact():
    run = exchange([modern(1, "server/discover")])
    assert run.messages == [{"jsonrpc": "2.0", "id": 1, "result": DISCOVER_RESULT}]


def test_server_discover_carries_instructions_when_set():
    run = exchange([modern(1, "server/discover")], "--instructions", "Be brief.")
    assert run.result(1) == {**DISCOVER_RESULT, "instructions": "Be brief."}


def test_modern_needs_no_initialize_and_every_result_says_complete_and_who_we_are():
    run = exchange([
        modern(1, "tools/list"),
        modern(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
        modern(3, "tools/call", {"name": "describe", "arguments": {"name": "x", "tags": []}}),
        modern(4, "tools/call", {"name": "add", "arguments": {"a": "5"}}),
        modern(5, "tools/call", {"name": "nothing"}),
        modern(6, "tools/call", {"name": "fail", "arguments": {"message": "nope"}}),
    ])
    assert run.result(1) == {"tools": TOOLS, "resultType": "complete",
                             "_meta": {META + "serverInfo": SERVER_INFO},
                             "ttlMs": 3_600_000, "cacheScope": "public"}
    assert run.result(2) == modern_result(text_result("hi"))
    assert_structured(run.result(3),
                      describe_structured({"name": "x", "tags": [], "mode": "fast", "limit": None,
                                           "ratio": 0.5, "verbose": False}), modern=True)
    bad = run.result(4)
    assert bad["resultType"] == "complete" and bad["_meta"] == {META + "serverInfo": SERVER_INFO}
    assert_tool_error({k: v for k, v in bad.items() if k not in ("resultType", "_meta")}, "a")
    assert run.result(5) == modern_result({"content": [], "isError": False})
    failed = run.result(6)
    assert (failed["isError"] is True and failed["resultType"] == "complete"
            and "nope" in failed["content"][0]["text"])


def test_modern_unknown_tool_is_invalid_params():
    run = exchange([modern(1, "tools/call", {"name": "no_such_tool", "arguments": {}}),
                    modern(2, "tools/call", {"arguments": {}})])
    assert_error(run.error(1), INVALID_PARAMS)
    assert_error(run.error(2), INVALID_PARAMS)


MISSING_META = [
    ("clientCapabilities missing", {META + "protocolVersion": MODERN}),
    ("protocolVersion missing", {META + "clientCapabilities": {}}),
    ("only clientInfo", {META + "clientInfo": {"name": "c", "version": "1"}}),
    ("only logLevel", {META + "logLevel": "info"}),
]


@functools.cache
def modern_errors_run():
    """One server for the modern-era error cases below (stateless, so they cannot disturb each
    other)."""
    messages = []
    for label, meta in MISSING_META:
        for method in MODERN_METHODS:
            params = {"_meta": meta, **({"name": "echo", "arguments": {"text": "x"}}
                                        if method == "tools/call" else {})}
            messages.append(req(f"missing {label} {method}", method, params))
    for version in UNSUPPORTED:
        for method in MODERN_METHODS:
            params = {"name": "echo", "arguments": {"text": "x"}} if method == "tools/call" else {}
            params["_meta"] = {META + "protocolVersion": version, META + "clientCapabilities": {}}
            messages.append(req(f"version {version} {method}", method, params))
    for method in REMOVED:
        messages.append(modern(f"removed {method}", method,
                               {"level": "info"} if method == "logging/setLevel" else {}))
    return exchange([*messages, modern("last", "tools/list")])


MODERN_METHODS = ["tools/list", "tools/call", "server/discover"]
UNSUPPORTED = ["2099-01-01", "2025-11-25", "2024-11-05", ""]
REMOVED = ["ping", "logging/setLevel", "no/such/method", "resources/list"]


@pytest.mark.parametrize("label,meta", MISSING_META, ids=[m[0] for m in MISSING_META])
@pytest.mark.parametrize("method", MODERN_METHODS)
def test_modern_request_missing_a_required_meta_field_is_invalid_params(label, meta, method):
    run = modern_errors_run()
    assert_error(run.error(f"missing {label} {method}"), INVALID_PARAMS)
    assert run.result("last")["resultType"] == "complete"


def test_server_discover_without_any_meta_is_invalid_params():
    run = exchange([req(1, "server/discover"), req(2, "server/discover", {})])
    assert_error(run.error(1), INVALID_PARAMS)
    assert_error(run.error(2), INVALID_PARAMS)


@pytest.mark.parametrize("version", UNSUPPORTED)
@pytest.mark.parametrize("method", MODERN_METHODS)
def test_modern_unsupported_version_is_32022_naming_what_we_support(version, method):
    error = modern_errors_run().error(f"version {version} {method}")
    assert error["code"] == UNSUPPORTED_VERSION, error
    assert error["data"] == {"supported": [MODERN], "requested": version}


@pytest.mark.parametrize("method", REMOVED)
def test_modern_removed_or_unknown_methods_are_method_not_found(method):
    run = modern_errors_run()
    assert_error(run.error(f"removed {method}"), METHOD_NOT_FOUND)
    assert run.result("last")["resultType"] == "complete"


def test_both_eras_on_one_process():
    run = exchange([modern(1, "tools/call", {"name": "add", "arguments": {"a": 1}}),
                    req(2, "tools/list"),  # legacy, and no initialize yet: served all the same
                    *HANDSHAKE,
                    req(3, "tools/call", {"name": "add", "arguments": {"a": 1}}),
                    modern(4, "tools/call", {"name": "add", "arguments": {"a": 1}})])
    assert run.result(1) == modern_result(text_result("2"))
    assert run.result(2) == {"tools": TOOLS}
    assert run.result(3) == text_result("2")  # legacy results carry no resultType and no _meta
    assert run.result(4) == modern_result(text_result("2"))


# ---------------------------------------------------------------------------
# JSON-RPC: every broken line gets the right error, and the server carries on
# (spec: basic, "Messages")
# ---------------------------------------------------------------------------

PING_AFTER = req("after", "ping")

BAD_LINES = [
    ("not JSON", b"hello there", PARSE_ERROR, None),
    ("truncated JSON", b'{"jsonrpc":"2.0","id":1,"method":"ping"', PARSE_ERROR, None),
    ("invalid UTF-8", b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', PARSE_ERROR, None),
    ("lone invalid byte", b"\xc3", PARSE_ERROR, None),
    ("NaN", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', PARSE_ERROR, None),
    ("Infinity", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":-Infinity}}',
     PARSE_ERROR, None),
    ("nested too deeply", b"[" * 100_000, PARSE_ERROR, None),
    ("batch", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', INVALID_REQUEST, None),
    ("empty batch", b"[]", INVALID_REQUEST, None),
    ("a number", b"3", INVALID_REQUEST, None),
    ("a string", b'"x"', INVALID_REQUEST, None),
    ("null", b"null", INVALID_REQUEST, None),
    ("true", b"true", INVALID_REQUEST, None),
    ("empty object", b"{}", INVALID_REQUEST, None),
    ("id null", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST, None),
    ("id a fraction", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID_REQUEST, None),
    ("id a bool", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST, None),
    ("id an array", b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', INVALID_REQUEST, None),
    ("id an object", b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', INVALID_REQUEST, None),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":7,"method":"ping"}', INVALID_REQUEST, 7),
    ("jsonrpc missing", b'{"id":8,"method":"ping"}', INVALID_REQUEST, 8),
    ("jsonrpc a number", b'{"jsonrpc":2.0,"id":"j","method":"ping"}', INVALID_REQUEST, "j"),
    ("method missing", b'{"jsonrpc":"2.0","id":9}', INVALID_REQUEST, 9),
    ("method missing, string id", b'{"jsonrpc":"2.0","id":"m"}', INVALID_REQUEST, "m"),
    ("method a number", b'{"jsonrpc":"2.0","id":10,"method":5}', INVALID_REQUEST, 10),
    ("method null", b'{"jsonrpc":"2.0","id":11,"method":null}', INVALID_REQUEST, 11),
    ("no id, method a number", b'{"jsonrpc":"2.0","method":1,"params":"bar"}', INVALID_REQUEST,
     None),
]


@pytest.mark.parametrize("label,line,code,error_id", BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_bad_line_gets_one_error_and_the_server_carries_on(label, line, code, error_id):
    run = exchange([line, PING_AFTER])
    assert run.messages == [
        {"jsonrpc": "2.0", "id": error_id, "error": run.messages[0].get("error")},
        {"jsonrpc": "2.0", "id": "after", "result": {}},
    ], run.messages
    assert_error(run.messages[0]["error"], code)


@pytest.mark.parametrize("params", [[1, 2], "x", 5])
def test_params_that_are_not_an_object_is_an_error_with_the_id(params):
    run = exchange([req(12, "ping", params), PING_AFTER])
    assert run.response(12)["error"]["code"] in (INVALID_PARAMS, INVALID_REQUEST)
    assert run.result("after") == {}


def test_a_line_over_the_size_limit_is_refused_and_skipped():
    huge = json.dumps(call(1, "echo", {"text": "x" * (5 * 1024 * 1024)}))
    run = exchange([huge, PING_AFTER])
    assert len(run.messages) == 2, run.messages
    assert run.messages[0]["id"] is None and run.messages[0]["error"]["code"] == INVALID_REQUEST
    assert run.messages[1] == {"jsonrpc": "2.0", "id": "after", "result": {}}


def test_every_bad_line_in_one_stream_is_answered_and_the_good_ones_too():
    lines = []
    for i, (_, line, _, _) in enumerate(BAD_LINES):
        lines += [line, req(f"good-{i}", "ping")]
    run = exchange(lines)
    for i in range(len(BAD_LINES)):
        assert run.result(f"good-{i}") == {}
    answered = [r for r in run.responses if not str(r["id"]).startswith("good-")]
    assert len(answered) == len(BAD_LINES)
    assert sorted(r["error"]["code"] for r in answered) == sorted(b[2] for b in BAD_LINES)


def test_a_batch_is_not_executed():
    run = exchange([*HANDSHAKE, b'[{"jsonrpc":"2.0","id":"inner","method":"tools/call",'
                               b'"params":{"name":"echo","arguments":{"text":"x"}}}]', PING_AFTER])
    assert sorted(json.dumps(r["id"]) for r in run.responses) == sorted(
        json.dumps(i) for i in ["init", None, "after"])
    assert run.errors_without_id()[0]["code"] == INVALID_REQUEST


def test_a_last_line_without_newline_and_crlf_lines_are_read():
    data = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n{"jsonrpc":"2.0","id":2,"method":"ping"}'
    proc = subprocess.run(SERVER, input=data, capture_output=True, timeout=30, cwd=ROOT)
    assert proc.returncode == 0
    assert check_stdout(proc.stdout) == [{"jsonrpc": "2.0", "id": 1, "result": {}},
                                         {"jsonrpc": "2.0", "id": 2, "result": {}}]


NOTIFICATIONS = [
    ("initialized before initialize", note("notifications/initialized")),
    ("unknown notification", note("notifications/whatever", {"x": 1})),
    ("unknown method without id", note("no/such/method")),
    ("a request method sent as notification",
     note("tools/call", {"name": "echo", "arguments": {"text": "x"}})),
    ("progress from the client",
     note("notifications/progress", {"progressToken": 1, "progress": 1})),
    ("cancelled without params", note("notifications/cancelled")),
    ("cancelled for an unknown id",
     note("notifications/cancelled", {"requestId": 999, "reason": "test"})),
    ("cancelled with a null id", note("notifications/cancelled", {"requestId": None})),
    ("cancelled with a list id", note("notifications/cancelled", {"requestId": [1]})),
    ("cancelled with an object id", note("notifications/cancelled", {"requestId": {"a": 1}})),
    ("params an array", note("notifications/cancelled", [1])),
    ("params a string", note("notifications/initialized", "x")),
    ("a response from the client", {"jsonrpc": "2.0", "id": 5, "result": {}}),
    ("an error response from the client",
     {"jsonrpc": "2.0", "id": 6, "error": {"code": -1, "message": "x"}}),
    ("modern notification with bad meta",
     note("notifications/cancelled", {"requestId": 1, "_meta": {META + "x": 1}})),
]


@pytest.mark.parametrize("label,message", NOTIFICATIONS, ids=[n[0] for n in NOTIFICATIONS])
def test_notifications_are_never_answered(label, message):
    run = exchange([message, PING_AFTER, *HANDSHAKE, message, req("after2", "ping")])
    assert run.messages == [{"jsonrpc": "2.0", "id": "after", "result": {}}, run.response("init"),
                            {"jsonrpc": "2.0", "id": "after2", "result": {}}], run.messages


def test_a_request_sent_as_a_notification_is_not_run():
    run = exchange([*HANDSHAKE, note("tools/call", {"name": "crash", "arguments": {}}), PING_AFTER])
    assert run.result("after") == {} and "crash tool was called" not in run.stderr


def test_an_id_already_in_flight_is_refused_and_the_first_request_still_answered():
    run = exchange([*HANDSHAKE, call(1, "slow", {"ms": 300}), req(1, "ping")])
    ones = [r for r in run.responses if r["id"] == 1]
    assert len(ones) == 2, ones
    assert {"result", "error"} == {next(k for k in r if k in ("result", "error")) for r in ones}
    assert next(r for r in ones if "error" in r)["error"]["code"] == INVALID_REQUEST
    assert next(r for r in ones if "result" in r)["result"] == text_result("slept 300 ms")


# ---------------------------------------------------------------------------
# Cancellation (spec: basic/patterns/cancellation): no response, ever, for a cancelled request
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("tool,arguments", [("hang", {}), ("hang_sync", {"seconds": 60.0})])
def test_cancelled_request_gets_no_response_and_the_server_carries_on(session, era, tool,
                                                                      arguments):
    s = session()
    if era == "legacy":
        s.request(initialize())
        s.send(note("notifications/initialized"))
        hung = call(1, tool, arguments)
    else:
        hung = modern(1, "tools/call", {"name": tool, "arguments": arguments})
    s.send(hung)
    ping = req(2, "ping") if era == "legacy" else modern(2, "tools/list")
    assert "result" in s.request(ping)  # the hung request is in progress by now
    time.sleep(0.1)
    s.send(note("notifications/cancelled", {"requestId": 1, "reason": "the user gave up"}))
    s.assert_silent(0.5)
    echo = call(3, "echo", {"text": "still here"})
    if era == "modern":
        echo = modern(3, "tools/call", echo["params"])
    assert s.request(echo)["result"]["content"] == [{"type": "text", "text": "still here"}]
    rest, code = s.close(timeout=10)  # the cancelled work is not waited for
    assert code == 0
    assert all(m.get("id") != 1 for m in s.messages), s.messages


SWALLOWING_TOOLS = """
@server.tool()
async def swallow() -> str:
    'Return a partial result when cancelled, as a careless `except BaseException:` does.'
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        return 'partial'
    return 'full'

@server.tool()
async def quick() -> str:
    'Answer at once.'
    return 'quick'
"""


def test_a_cancelled_tool_that_swallows_the_cancel_gets_no_answer(tmp_path):
    # The task ran on and its answer went out: an answer for a cancelled request, and when the
    # client then reused the id, the new request got the old result first, then its own.
    argv = script_server(tmp_path, SWALLOWING_TOOLS)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdin.write(to_bytes(call(1, "swallow")) + to_bytes(req("a", "ping")))
    proc.stdin.flush()
    assert check_line(proc.stdout.readline())["id"] == "a"  # swallow is waiting by now
    rest, _ = proc.communicate(to_bytes(note("notifications/cancelled", {"requestId": 1}))
                               + to_bytes(call(1, "quick")) + to_bytes(req("b", "ping")),
                               timeout=30)
    answers = [check_line(line + b"\n") for line in rest.splitlines()]
    assert sorted(answers, key=lambda m: str(m["id"])) == [
        {"jsonrpc": "2.0", "id": 1, "result": text_result("quick")},
        {"jsonrpc": "2.0", "id": "b", "result": {}}]


def test_cancel_for_an_unknown_or_finished_request_is_ignored():
    run = exchange([*HANDSHAKE, note("notifications/cancelled", {"requestId": 77}),
                    call(1, "echo", {"text": "x"}), req(2, "ping"),
                    note("notifications/cancelled", {"requestId": "nope", "reason": "x"}),
                    req(3, "ping")])
    assert run.result(1) == text_result("x")
    assert run.result(2) == {} and run.result(3) == {}
    assert len(run.messages) == 4


def test_cancelled_then_stdin_closed_exits_promptly_and_silently():
    start = time.monotonic()
    run = exchange([*HANDSHAKE, call(1, "hang"), call(2, "hang_sync", {"seconds": 600.0}),
                    note("notifications/cancelled", {"requestId": 1}),
                    note("notifications/cancelled", {"requestId": 2}), req(3, "ping")], timeout=120)
    assert [r["id"] for r in run.responses] == ["init", 3]
    assert time.monotonic() - start < 60  # generous: it must not wait out the 600 s


def test_stdin_eof_with_a_cancelled_thread_that_ignores_cancellation(session):
    # Spec (basic/transports/stdio, Shutdown): servers SHOULD exit promptly when stdin is closed.
    # A cancelled request is owed no answer: stdout closes at once. Sync tools run in Python's
    # thread pool (the self-managed pool was dropped to fit the size budget), and a thread that
    # ignores cancellation keeps the process until it returns; SIGTERM then ends it at once.
    s = session()
    s.request(initialize())
    s.send(call(1, "stubborn", {"seconds": 30.0}))
    s.request(req(2, "ping"))
    s.send(note("notifications/cancelled", {"requestId": 1}))
    s.assert_silent(0.3)
    s.proc.stdin.close()
    s.reader.join(6)
    assert not s.reader.is_alive(), "stdout stayed open after stdin closed"
    assert s.proc.poll() is None  # the stubborn thread is still sleeping
    s.proc.terminate()
    assert s.proc.wait(6) == -15


# ---------------------------------------------------------------------------
# Progress (spec: basic/patterns/progress)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("tool", ["count", "count_sync"])
@pytest.mark.parametrize("token", ["tok-1", 42])
def test_progress_notifications_come_before_the_response_and_increase(tool, token):
    run = exchange([*HANDSHAKE, call(1, tool, {"steps": 5}, _meta={"progressToken": token}),
                    call(2, tool, {"steps": 3})])  # no token: no progress
    assert run.result(1) == text_result("counted to 5")
    assert run.result(2) == text_result("counted to 3")
    progress = [m for m in run.messages if m.get("method") == "notifications/progress"]
    assert [p["params"]["progressToken"] for p in progress] == [token] * 5
    assert all(type(p["params"]["progressToken"]) is type(token) for p in progress)
    values = [p["params"]["progress"] for p in progress]
    assert values == sorted(set(values)) and len(values) == 5, values  # strictly increasing
    assert all(p["params"]["total"] == 5 for p in progress)
    response_at = run.messages.index(run.response(1))
    assert all(run.messages.index(p) < response_at for p in progress)
    assert len(run.notifications) == 5  # nothing for the call without a token


def test_progress_in_the_modern_era():
    run = exchange([modern(1, "tools/call", {"name": "count", "arguments": {"steps": 3},
                                             "_meta": {"progressToken": "m"}})])
    assert run.messages == [
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "m", "progress": i, "total": 3, "message": f"step {i}"}}
        for i in (1, 2, 3)
    ] + [{"jsonrpc": "2.0", "id": 1, "result": modern_result(text_result("counted to 3"))}]


# ---------------------------------------------------------------------------
# stdout belongs to the protocol; stdin EOF; files instead of pipes (spec: basic/transports/stdio)
# ---------------------------------------------------------------------------

def test_a_tool_that_prints_does_not_corrupt_stdout():
    run = exchange([*HANDSHAKE, call(1, "noisy", {"text": "hi"}),
                    call(2, "echo", {"text": "after"})])
    assert run.messages == [run.response("init"), run.response(1), run.response(2)] or \
        run.messages == [run.response("init"), run.response(2), run.response(1)]
    assert run.result(1) == text_result("quiet hi") and run.result(2) == text_result("after")
    for said in ("print says hi", "sys.__stdout__ says hi", "fd 1 says hi"):
        assert said in run.stderr


def test_500_pipelined_calls_then_eof_all_answered_exactly_once():
    calls = []
    for i in range(1, 501):
        if i % 10 == 0:
            calls.append(call(i, "slow", {"ms": 20}))
        elif i % 10 == 5:
            calls.append(call(i, "count", {"steps": 2}))
        else:
            calls.append(call(i, "add", {"a": i}))
    run = exchange([*HANDSHAKE, *calls], timeout=60)
    answered = run.by_id()
    assert sorted(answered, key=str) == sorted(["init", *range(1, 501)], key=str)
    for i in range(1, 501):
        expected = ("slept 20 ms" if i % 10 == 0 else "counted to 2" if i % 10 == 5 else str(i + 1))
        assert answered[i]["result"] == text_result(expected), answered[i]
    assert run.returncode == 0


def test_stdin_that_is_not_a_pipe_is_a_clear_error():
    # /dev/null is a character device that epoll refuses, like a regular file: reading requests
    # from a file was dropped to fit the size budget (`cat requests.jsonl | server.py` does it).
    proc = subprocess.run(SERVER, stdin=subprocess.DEVNULL, capture_output=True, timeout=6,
                          cwd=ROOT)
    assert (proc.returncode, proc.stdout) == (1, b"")
    assert proc.stderr == b"mcp_min: stdin must be a pipe, a socket or a terminal\n"


@pytest.mark.parametrize("stdin_kind,stdout_kind",
                         [("file", "file"), ("pipe", "file"), ("file", "pipe")])
def test_regular_files_for_stdin_or_stdout_are_a_clear_error(tmp_path, stdin_kind, stdout_kind):
    # Dropped to fit the size budget: stdin and stdout must be pipes (what every MCP host gives).
    in_path, out_path = tmp_path / "requests.jsonl", tmp_path / "responses.jsonl"
    in_path.write_bytes(to_bytes(req(1, "ping")))
    with open(in_path, "rb") as fin, open(out_path, "wb") as fout:
        proc = subprocess.run(SERVER, stdin=fin if stdin_kind == "file" else None,
                              input=to_bytes(req(1, "ping")) if stdin_kind == "pipe" else None,
                              stdout=fout if stdout_kind == "file" else subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=30, cwd=ROOT)
    name = "stdin" if stdin_kind == "file" else "stdout"
    assert proc.returncode == 1
    assert proc.stderr == f"mcp_min: {name} must be a pipe, a socket or a terminal\n".encode()
    assert out_path.read_bytes() == b""


def test_a_crash_leaves_what_was_answered_intact(session):
    s = session()
    assert s.request(req(1, "ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    s.request(initialize())
    s.send(call(2, "crash", {"code": 4}))
    rest, code = s.close()
    assert code == 4 and rest == []
    assert "crash tool was called" in s.stderr


def test_run_closes_stdout_and_keeps_prints_on_stderr(tmp_path):
    # While it serves, fd 1 and sys.stdout point at stderr. When run() returns, the wire is
    # closed, so the client sees EOF even if a stuck worker thread keeps the process alive;
    # print() goes on to stderr.
    script = tmp_path / "after.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom mcp_min import Server\n"
                      "print('before', flush=True)\nServer('x').run()\n"
                      "print('after run', flush=True)\n")
    done = subprocess.run([sys.executable, str(script)],
                          input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
                          capture_output=True, timeout=30)
    assert done.stdout.decode().splitlines() == ["before", '{"jsonrpc":"2.0","id":1,"result":{}}']
    assert "after run" in done.stderr.decode()
