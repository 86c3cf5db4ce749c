"""Elicitation, server side (issue 22), on the wire: raw lines into tests/elicitation_server.py,
exact lines out. Legacy (2025-11-25): the server's elicitation/create request over stdio and on
a call's SSE stream, and every way a client can answer it badly. 2026-07-28: input_required
results, their signed requestState, and every way a retry can be wrong.
"""
import base64, hmac, json, queue, re, signal, subprocess, sys, threading, time
from pathlib import Path

import pytest

from conftest import http_server_port, post_mcp as post

ROOT = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, str(ROOT / "tests" / "elicitation_server.py")]
META = "io.modelcontextprotocol/"
KEY = b"wire-test-key"  # the server's state_key
SERVER_INFO = {META + "serverInfo": {"name": "elicitation-test", "version": "1.0.0"}}
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string", "default": "Ann"}},
             "required": ["name"]}
ASK_NAME = {"method": "elicitation/create", "params": {
    "mode": "form", "message": "What is your name?", "requestedSchema": NAME_FORM}}
BAD_STATE = {"code": -32602,
             "message": "Invalid params: invalid, expired or misplaced requestState"}


def line(message):
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class Stdio:
    """The server on pipes: send lines, read the lines it writes, one at a time."""

    def __init__(self, argv=SERVER):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=ROOT)
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(raw) for raw in self.proc.stdout],
                         daemon=True).start()

    def send(self, *messages):
        for message in messages:
            self.proc.stdin.write(message if isinstance(message, bytes) else line(message))
        self.proc.stdin.flush()

    def next(self, timeout=15):
        return self.lines.get(timeout=timeout)

    def next_json(self):
        return json.loads(self.next())

    def silent(self, seconds=0.3):
        with pytest.raises(queue.Empty):
            self.lines.get(timeout=seconds)

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(15) == 0
        return list(self.proc.stdout)


@pytest.fixture
def stdio():
    opened = []
    yield lambda *argv: opened.append(Stdio(*argv)) or opened[-1]
    for server in opened:
        if server.proc.poll() is None:
            server.proc.kill()
        server.proc.wait()


def request(request_id, method, params):
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def initialize(capabilities):
    return request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                                     "clientInfo": {"name": "t", "version": "0"}})


def call(request_id, name, arguments=None, **extra):
    return request(request_id, "tools/call", {"name": name, "arguments": arguments or {}, **extra})


def text_result(request_id, text, is_error=False):
    return line({"jsonrpc": "2.0", "id": request_id, "result": {
        "content": [{"type": "text", "text": text}], "isError": is_error}})


def error(request_id, body):
    return line({"jsonrpc": "2.0", "id": request_id, "error": body})


def legacy(stdio, capabilities=None, *argv):
    """A legacy session whose client declared `capabilities` (elicitation by default)."""
    server = stdio(*argv)
    server.send(initialize({"elicitation": {}} if capabilities is None else capabilities),
                {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert json.loads(server.next())["result"]["protocolVersion"] == "2025-11-25"
    return server


def asked(server, question=ASK_NAME):
    """The server's elicitation/create line, exactly; returns its id."""
    raw = server.next()
    request_id = json.loads(raw)["id"]
    assert re.fullmatch(r"mcp-min-[0-9a-f]{16}", request_id)
    assert raw == line({"jsonrpc": "2.0", "id": request_id, **question})
    return request_id


def answer(request_id, result):
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


ACCEPT_BO = {"action": "accept", "content": {"name": "Bo"}}


# --- Legacy: a real request to the client, its answer routed back by id ---

@pytest.mark.parametrize("tool", ["ask_name", "ask_name_sync"])
def test_legacy_elicitation_round_trip(stdio, tool):
    server = legacy(stdio)
    server.send(call(1, tool, {"greeting": "Hi"}))
    server.send(answer(asked(server), ACCEPT_BO))
    assert server.next() == text_result(1, "Hi, Bo!")
    assert server.close() == []


def test_legacy_decline_and_the_prompt_that_asks(stdio):
    server = legacy(stdio)
    server.send(call(1, "ask_name", {"greeting": "Hi"}))
    server.send(answer(asked(server), {"action": "decline"}))
    assert server.next() == text_result(1, "no name: decline")
    server.send(request(2, "prompts/get", {"name": "greet_prompt"}))
    server.send(answer(asked(server), ACCEPT_BO))
    assert server.next() == line({"jsonrpc": "2.0", "id": 2, "result": {"messages": [
        {"role": "user", "content": {"type": "text", "text": "Greet Bo warmly."}}]}})


def test_a_client_that_never_answers_fails_only_that_call(stdio):
    server = legacy(stdio)
    server.send(call(1, "ask_name", {"greeting": "Hi"}))
    late = asked(server)
    server.send(request(2, "ping", {}))  # the server goes on serving meanwhile
    assert server.next() == line({"jsonrpc": "2.0", "id": 2, "result": {}})
    assert server.next() == text_result(  # ANSWER_TIMEOUT is 1 s in elicitation_server.py
        1, "Tool ask_name failed: TimeoutError: elicitation/create: no answer in 1 s", True)
    server.send(answer(late, ACCEPT_BO))  # too late: nobody waits for it any more
    server.silent()
    assert server.close() == []


@pytest.mark.parametrize("tool", ["ask_name", "ask_name_sync"])
@pytest.mark.parametrize("leaving", ["eof", "sigterm"])
def test_a_question_nobody_can_answer_any_more_keeps_no_server_waiting(stdio, tool, leaving):
    """With ten minutes to answer (--patient), a client that leaves while asked (stdin's EOF)
    or a server stopped by SIGTERM ends the question at once, and the process exits. Before, a
    client's EOF waited out ANSWER_TIMEOUT, and after SIGTERM a def tool's thread waited for an
    answer for good, keeping the process. The 60 s bound is no race: it exits in milliseconds."""
    server = legacy(stdio, None, SERVER + ["--patient"])
    server.send(call(1, tool, {"greeting": "Hi"}))
    asked(server)
    if leaving == "eof":
        server.proc.stdin.close()
        failed = f"Tool {tool} failed: ConnectionError: the client left before it answered"
        assert server.next(60) == text_result(1, failed, True)
    else:
        server.proc.send_signal(signal.SIGTERM)
        assert json.loads(server.next(60))["error"]["message"] == \
            "Cancelled: the server is shutting down"
    assert server.proc.wait(60) == 0


def test_an_answer_twice_an_unknown_id_and_an_error_answer(stdio):
    server = legacy(stdio)
    server.send(call(1, "ask_name", {"greeting": "Hi"}))
    request_id = asked(server)
    for unknown in ("mcp-min-0000000000000000", 7, None, [request_id], {"a": 1}):  # ignored
        server.send(answer(unknown, ACCEPT_BO))
    server.silent()
    server.send(answer(request_id, ACCEPT_BO), answer(request_id, {"action": "cancel"}))
    assert server.next() == text_result(1, "Hi, Bo!")
    server.silent()  # the second answer went nowhere
    server.send(call(2, "ask_name", {"greeting": "Hi"}))
    server.send({"jsonrpc": "2.0", "id": asked(server),
                 "error": {"code": -32601, "message": "Method not found"}})
    assert server.next() == text_result(2, "Tool ask_name failed: RuntimeError: elicitation/"
                                           "create failed: {'code': -32601, 'message': 'Method "
                                           "not found'}", True)
    assert server.close() == []


def test_a_malformed_answer_is_an_error_for_that_call(stdio):
    server = legacy(stdio)
    server.send(call(1, "ask_name", {"greeting": "Hi"}))
    server.send(answer(asked(server), {"action": "maybe"}))
    assert server.next() == error(1, {"code": -32602, "message": "Invalid params: a malformed "
                                                                 "answer to elicitation/create"})


def test_no_elicitation_capability_is_minus_32021_and_nothing_is_sent(stdio):
    server = legacy(stdio, capabilities={})
    server.send(call(1, "ask_name", {"greeting": "Hi"}))
    assert server.next() == error(1, {"code": -32021, "message": "Missing required client "
                                      "capability: elicitation", "data": {
                                          "requiredCapabilities": {"elicitation": {}}}})


def test_a_form_beyond_flat_primitives_is_refused_before_it_is_sent(stdio):
    server = legacy(stdio)
    server.send(call(1, "bad_form"))
    assert server.next() == text_result(
        1, "Tool bad_form failed: TypeError: form field 'address': a primitive or enum with only "
           "['default', 'description', 'title', 'type']", True)


# --- 2026-07-28: input_required, and the retry ---

def modern(request_id, name, arguments=None, capabilities=None, **extra):
    meta = {META + "protocolVersion": "2026-07-28", META + "clientCapabilities":
            {"elicitation": {}} if capabilities is None else capabilities}
    return call(request_id, name, arguments, _meta=meta, **extra)


def input_required(server, request_id, requests):
    """The input_required line, exactly but for its requestState; returns the state."""
    raw = server.next()
    state = json.loads(raw)["result"]["requestState"]
    assert raw == line({"jsonrpc": "2.0", "id": request_id, "result": {
        "resultType": "input_required", "inputRequests": requests, "requestState": state,
        "_meta": SERVER_INFO}})
    return state


def complete(request_id, text):
    return line({"jsonrpc": "2.0", "id": request_id, "result": {
        "content": [{"type": "text", "text": text}], "isError": False, "resultType": "complete",
        "_meta": SERVER_INFO}})


def signed(fields):
    """A requestState as the server makes one, signed with its key: for states it never gave."""
    body = base64.urlsafe_b64encode(json.dumps(fields, separators=(",", ":")).encode()).decode()
    return body + "." + hmac.new(KEY, body.encode(), "sha256").hexdigest()


def test_input_required_then_the_retry_completes(stdio):
    server = stdio()
    server.send(modern(1, "ask_name", {"greeting": "Hi"}))
    state = input_required(server, 1, {"name": ASK_NAME})
    server.send(modern(2, "ask_name", {"greeting": "Hi"}, inputResponses={"name": ACCEPT_BO},
                       requestState=state))
    assert server.next() == complete(2, "Hi, Bo!")
    # The same state again answers the same again: it is stateless, so a replay of the whole
    # retry is not refused, but it can only repeat what the client already got.
    server.send(modern(3, "ask_name_sync", {"greeting": "Hi"}))
    state = input_required(server, 3, {"name": ASK_NAME})
    server.send(modern(4, "ask_name_sync", {"greeting": "Hi"},
                       inputResponses={"name": ACCEPT_BO}, requestState=state))
    assert server.next() == complete(4, "Hi, Bo!")


def test_two_rounds_and_two_questions_in_one_round(stdio):
    server = stdio()
    ask_color = {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Which colour?", "requestedSchema": {
            "type": "object", "properties": {"color": {"type": "string",
                                                       "enum": ["red", "blue"]}}}}}
    server.send(modern(1, "two_rounds"))
    state = input_required(server, 1, {"name": ASK_NAME})
    server.send(modern(2, "two_rounds", inputResponses={"name": ACCEPT_BO}, requestState=state))
    state = input_required(server, 2, {"color": ask_color})  # round 1's answer is in the state
    blue = {"action": "accept", "content": {"color": "blue"}}
    server.send(modern(3, "two_rounds", inputResponses={"color": blue}, requestState=state))
    assert server.next() == complete(3, "Bo likes blue")
    server.send(modern(4, "two_at_once"))
    state = input_required(server, 4, {"name": ASK_NAME, "color": ask_color})
    server.send(modern(5, "two_at_once", inputResponses={"name": ACCEPT_BO, "color": blue},
                       requestState=state))
    assert server.next() == complete(5, '{"name": {"name": "Bo"}, "color": {"color": "blue"}}')


def test_missing_extra_and_malformed_input_responses(stdio):
    server = stdio()
    server.send(modern(1, "ask_name", {"greeting": "Hi"}))
    state = input_required(server, 1, {"name": ASK_NAME})
    # Missing: the question comes again, with a new state.
    server.send(modern(2, "ask_name", {"greeting": "Hi"}, inputResponses={}, requestState=state))
    again = input_required(server, 2, {"name": ASK_NAME})
    # Extra keys are ignored.
    server.send(modern(3, "ask_name", {"greeting": "Hi"}, requestState=again, inputResponses={
        "name": ACCEPT_BO, "other": {"action": "accept", "content": {"x": 1}}}))
    assert server.next() == complete(3, "Hi, Bo!")
    # Malformed: an error for that request.
    malformed = {"code": -32602, "message": "Invalid params: a malformed answer to "
                                            "elicitation/create"}
    for request_id, response in enumerate((12345, {"action": "yes"},
                                           {"action": "accept", "content": [1]}), 4):
        server.send(modern(request_id, "ask_name", {"greeting": "Hi"}, requestState=again,
                           inputResponses={"name": response}))
        assert server.next() == error(request_id, malformed)


def test_forged_expired_truncated_and_replayed_state_get_one_error(stdio):
    server = stdio()
    server.send(modern(1, "ask_name", {"greeting": "Hi"}))
    state = input_required(server, 1, {"name": ASK_NAME})
    body, mac = state.split(".")
    fields = json.loads(base64.urlsafe_b64decode(body))
    assert set(fields) == {"for", "expires", "asked", "answers", "memo"}
    expired = signed({**fields, "expires": time.time() - 1})
    forged = base64.urlsafe_b64encode(json.dumps({**fields, "answers": {
        "name": ACCEPT_BO}}).encode()).decode() + "." + mac
    wrong_key = body + "." + hmac.new(b"another key", body.encode(), "sha256").hexdigest()
    cases = [("truncated", state[:-3], "ask_name", {"greeting": "Hi"}),
             ("forged", forged, "ask_name", {"greeting": "Hi"}),
             ("signed with another key", wrong_key, "ask_name", {"greeting": "Hi"}),
             ("expired", expired, "ask_name", {"greeting": "Hi"}),
             ("other arguments", state, "ask_name", {"greeting": "Hello"}),
             ("another tool", state, "ask_name_sync", {"greeting": "Hi"}),
             ("not base64", "%%%." + mac, "ask_name", {"greeting": "Hi"}),
             ("not a string", {"a": 1}, "ask_name", {"greeting": "Hi"}),
             ("empty", "", "ask_name", {"greeting": "Hi"})]
    for request_id, (label, bad, tool, arguments) in enumerate(cases, 2):
        server.send(modern(request_id, tool, arguments, requestState=bad,
                           inputResponses={"name": ACCEPT_BO}))
        assert server.next() == error(request_id, BAD_STATE), label
    assert server.close() == []


def test_retry_later_gives_a_state_only_result_and_the_memo_comes_back(stdio):
    server = stdio()
    server.send(modern(1, "later", capabilities={}))
    state = json.loads(server.next())["result"]
    assert set(state) == {"resultType", "requestState", "_meta"}
    assert state["resultType"] == "input_required"
    server.send(modern(2, "later", capabilities={}, requestState=state["requestState"]))
    assert server.next() == complete(2, "job 7 done")


def test_modern_without_the_capability_is_minus_32021(stdio):
    server = stdio()
    server.send(modern(1, "ask_name", {"greeting": "Hi"}, capabilities={}))
    assert server.next() == error(1, {"code": -32021, "message": "Missing required client "
                                      "capability: elicitation", "data": {
                                          "requiredCapabilities": {"elicitation": {}}}})


def test_the_state_is_bound_to_the_user():
    """requestState names the identity an HTTP token check found (session["auth"]): another
    user's retry is refused. In-process, through Server.handle, with two sessions."""
    import asyncio
    sys.path.insert(0, str(ROOT / "tests"))
    from elicitation_server import server

    async def run():
        alice, bob = {"auth": {"subject": "alice", "scopes": []}}, {"auth": {"subject": "bob"}}
        first = await server.handle(modern(1, "ask_name", {"greeting": "Hi"}), print, alice)
        state = first["result"]["requestState"]
        retry = modern(2, "ask_name", {"greeting": "Hi"}, requestState=state,
                       inputResponses={"name": ACCEPT_BO})
        assert (await server.handle(retry, print, bob))["error"] == BAD_STATE
        # the same subject with other scopes is the same user
        same = {"auth": {"subject": "alice", "scopes": ["x"]}}
        assert (await server.handle(retry, print, same))["result"]["content"][0]["text"] == (
            "Hi, Bo!")
    asyncio.run(run())


# --- Streamable HTTP: the call's SSE stream carries the request; the answer is POSTed ---

@pytest.fixture(scope="module")
def http_url():
    yield from http_server_port([*SERVER, "--http", "0"])


def sse_event(response):
    """The next `data:` of an SSE response, parsed (a 2025-11-25 stream's priming event, whose
    data is empty, is skipped)."""
    while True:
        text = response.fp.readline().decode()
        assert text, "the stream ended"
        if text.startswith("data: ") and text[6:].strip():
            return json.loads(text[6:])


def http_session(port):
    """A legacy HTTP session whose client declared elicitation: the headers its requests carry."""
    opened = post(port, initialize({"elicitation": {}}))
    opened.read()
    return {"Mcp-Session-Id": opened.getheader("Mcp-Session-Id"),
            "MCP-Protocol-Version": "2025-11-25"}


def test_http_legacy_elicitation_on_the_calls_stream(http_url):
    session = http_session(http_url)
    stream = post(http_url, call(1, "ask_name", {"greeting": "Hi"}), session)
    assert stream.getheader("Content-Type") == "text/event-stream"
    question = sse_event(stream)
    assert question == {"jsonrpc": "2.0", "id": question["id"], **ASK_NAME}
    for unknown_session in ({}, {"Mcp-Session-Id": "nobody"}):  # goes nowhere
        refused = post(http_url, answer(question["id"], {"action": "cancel"}), unknown_session)
        assert refused.status == 202
    answered = post(http_url, answer(question["id"], ACCEPT_BO), session)
    assert answered.status == 202
    assert sse_event(stream) == json.loads(text_result(1, "Hi, Bo!"))
    # A client that accepts only JSON cannot get the question: the call fails at once.
    json_only = post(http_url, call(2, "ask_name", {"greeting": "Hi"}),
                     {**session, "Accept": "application/json"})
    assert json.loads(json_only.read()) == json.loads(text_result(
        2, "Tool ask_name failed: ConnectionError: the client reads no SSE stream here, which a "
           "request needs", True))


@pytest.mark.parametrize("tool", ["ask_name", "ask_name_sync"])
def test_http_server_stopped_while_a_call_waits_for_an_answer_answers_and_exits(tool):
    """SIGTERM over HTTP while a call waits for its client's answer (600 s to answer): no answer
    can come in any more, so the call fails at once with its reason, and the process exits,
    without waiting out the grace period or, for a def tool, for good."""
    command = SERVER + ["--http", "0", "--patient"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        port = int(re.search(r":(\d+)/mcp", process.stderr.readline())[1])
        stream = post(port, call(1, tool, {"greeting": "Hi"}), http_session(port))
        assert sse_event(stream)["method"] == "elicitation/create"
        process.send_signal(signal.SIGTERM)
        assert sse_event(stream) == json.loads(text_result(
            1, f"Tool {tool} failed: ConnectionError: the server is stopping", True))
        assert process.wait(60) == 0
    finally:
        process.kill()
        process.wait()


def test_http_modern_missing_capability_is_400(http_url):
    message = modern(1, "ask_name", {"greeting": "Hi"}, capabilities={})
    refused = post(http_url, message, {"MCP-Protocol-Version": "2026-07-28",
                                       "Mcp-Method": "tools/call", "Mcp-Name": "ask_name"})
    assert refused.status == 400
    assert json.loads(refused.read())["error"]["code"] == -32021
    asked_ = post(http_url, modern(2, "ask_name", {"greeting": "Hi"}), {
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ask_name"})
    assert asked_.status == 200
    assert json.loads(asked_.read())["result"]["resultType"] == "input_required"



# --- server.py: get_document asks which document was meant ---

def test_get_document_asks_which_document_was_meant(stdio, built_index):
    from conftest import DOCS, server_command
    server = legacy(stdio, None, server_command(built_index))
    server.send(call(1, "get_document", {"name": "menu_price.txt"}))
    question = {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Which one did you mean?", "requestedSchema": {
            "type": "object", "properties": {"name": {"type": "string",
                                                      "enum": ["menu_prices.txt"]}}}}}
    server.send(answer(asked(server, question), {"action": "accept",
                                                 "content": {"name": "menu_prices.txt"}}))
    text = (DOCS / "menu_prices.txt").read_text()
    assert server.next(timeout=60) == text_result(1, text)
    # Declined, or a client that cannot be asked: the error of an unknown name, as before.
    server.send(call(2, "get_document", {"name": "menu_price.txt"}))
    server.send(answer(asked(server, question), {"action": "decline"}))
    declined = json.loads(server.next(timeout=60))["result"]
    assert declined["isError"] and "unknown document" in declined["content"][0]["text"]
    unasked = legacy(stdio, {}, server_command(built_index))
    unasked.send(call(3, "get_document", {"name": "menu_price.txt"}))
    assert json.loads(unasked.next(timeout=60))["result"]["content"] == declined["content"]


def test_a_name_that_differs_only_in_case_is_offered(stdio, built_index):
    """Issue 30, item 4: FAQ.txt is not an indexed name, but faq.txt is (names are compared
    exactly, so the error stays for a client that cannot be asked); the near names ignore case."""
    from conftest import DOCS, server_command
    server = legacy(stdio, None, server_command(built_index))
    for request_id, typed, meant in [(1, "FAQ.txt", "faq.txt"),
                                     (2, "Menu_Price.TXT", "menu_prices.txt")]:
        server.send(call(request_id, "get_document", {"name": typed}))
        question = {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Which one did you mean?", "requestedSchema": {
                "type": "object", "properties": {"name": {"type": "string", "enum": [meant]}}}}}
        server.send(answer(asked(server, question), {"action": "accept",
                                                     "content": {"name": meant}}))
        assert server.next(timeout=60) == text_result(request_id, (DOCS / meant).read_text())
    unasked = legacy(stdio, {}, server_command(built_index))
    unasked.send(call(3, "get_document", {"name": "FAQ.txt"}))
    refused = json.loads(unasked.next(timeout=60))["result"]
    assert refused["isError"] and "unknown document 'FAQ.txt'. Valid names: allergies" in \
        refused["content"][0]["text"]


# --- The official SDK (mcp 2.3.0): its client answers our questions ---

@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_sdk_client_answers_our_questions(transport, mode, http_url):
    """Its elicitation callback gets our question; in legacy as an elicitation/create request
    (over stdio, or on the call's SSE stream), in 2026-07-28 as an input_required result that its
    client retries. Two rounds, a prompt, and a sync tool all come back answered."""
    import asyncio
    import mcp
    from mcp import StdioServerParameters, types

    questions = []

    async def on_elicit(context, params):
        questions.append(params.message)
        if params.message == "Which colour?":
            return types.ElicitResult(action="accept", content={"color": "red"})
        return types.ElicitResult(action="accept", content={"name": "Sam"})

    server = (StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=str(ROOT))
              if transport == "stdio" else f"http://127.0.0.1:{http_url}/mcp")

    async def body():
        async with mcp.Client(server, mode=mode, elicitation_callback=on_elicit) as client:
            greeted = await client.call_tool("ask_name", {"greeting": "Hello"})
            assert [block.text for block in greeted.content] == ["Hello, Sam!"]
            synced = await client.call_tool("ask_name_sync", {"greeting": "Hey"})
            assert [block.text for block in synced.content] == ["Hey, Sam!"]
            both = await client.call_tool("two_rounds", {})
            assert [block.text for block in both.content] == ["Sam likes red"]
            prompt = await client.get_prompt("greet_prompt")
            assert prompt.messages[0].content.text == "Greet Sam warmly."
    asyncio.run(asyncio.wait_for(body(), 60))
    assert questions == ["What is your name?"] * 3 + ["Which colour?", "What is your name?"]
