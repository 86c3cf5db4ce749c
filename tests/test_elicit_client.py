"""The client answers the server (issue 22, client side): on_elicit over stdio in both eras,
input_required retried with inputResponses and requestState, ping, -32022 asked again in a listed
version, and over HTTP: the tools whose x-mcp-header annotations break the rules left out.

Wire tests: a scripted stdio server writes raw lines, one list per message of ours that has an id
(requests and answers alike); the client's trace gives the exact lines it sent.
"""
import asyncio
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import client as client_module  # noqa: E402
from client import Client, HTTPClient  # noqa: E402
from mcp_min import MCPError  # noqa: E402
from conftest import serving_on_free_port  # noqa: E402

PLAY = """
import json, sys
STEPS = json.loads({steps!r})  # a list of raw lines per message with an id; the last repeats
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    lines = STEPS.pop(0) if len(STEPS) > 1 else STEPS[0]
    for raw in lines:
        sys.stdout.write(raw.replace('"@id"', json.dumps(message["id"])) + "\\n")
    sys.stdout.flush()
"""
INITIALIZED = ('{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25",'
               '"capabilities":{"tools":{}},"serverInfo":{"name":"play","version":"1"}}}')
DISCOVERED = ('{"jsonrpc":"2.0","id":"@id","result":{"resultType":"complete","supportedVersions":'
              '["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}}')
QUESTION = {"message": "Which account?", "requestedSchema": {"type": "object", "properties": {
    "account": {"type": "string", "enum": ["a", "b"], "default": "a"}}}}
DONE = '{"jsonrpc":"2.0","id":"@id","result":{"content":[{"type":"text","text":"done"}]}}'
TASKS = {"extensions": {client_module.TASKS: {}}}  # declared by default (issue 34)


def play(tmp_path, steps, **options):
    """A Client for a server that plays `steps`, and the messages it sends, as sent."""
    script = tmp_path / "play.py"
    script.write_text(PLAY.format(steps=json.dumps(steps)))
    sent = []
    trace = lambda direction, line: sent.append(line) if direction == "→" else None  # noqa: E731
    # The script answers server/discover when it has started: on a busy machine that may take
    # longer than the client's default probe, which would then fall back to initialize and
    # shift every scripted answer by one. A test of the probe's own timeout passes its own.
    options.setdefault("probe_timeout", 60)
    return Client([sys.executable, str(script)], trace=trace, **options), sent


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def legacy_question(tmp_path, **options):
    """A legacy tools/call during which the server asks QUESTION: the client's lines, the
    result."""
    ask = json.dumps({"jsonrpc": "2.0", "id": "q1", "method": "elicitation/create",
                      "params": QUESTION})
    steps = [[INITIALIZED], [ask], [DONE.replace('"@id"', "2")]]
    client, sent = play(tmp_path, steps, legacy=True, **options)

    async def body():
        async with client:
            return await client.call_tool("pick")
    return sent, run(body())


def test_legacy_elicitation_is_answered_by_a_sync_callback(tmp_path):
    seen = []

    def on_elicit(message, schema):
        seen.append((message, schema))
        return {"action": "accept", "content": {"account": "b"}}
    sent, result = legacy_question(tmp_path, on_elicit=on_elicit)
    assert result["content"][0]["text"] == "done"
    assert seen == [(QUESTION["message"], QUESTION["requestedSchema"])]
    assert json.loads(sent[0])["params"]["capabilities"] == {"elicitation": {}, **TASKS}
    assert sent[3] == ('{"jsonrpc":"2.0","id":"q1","result":{"action":"accept",'
                       '"content":{"account":"b"}}}')


def test_legacy_elicitation_is_answered_by_an_async_callback(tmp_path):
    async def on_elicit(message, schema):
        await asyncio.sleep(0)
        return {"action": "decline"}
    sent, _ = legacy_question(tmp_path, on_elicit=on_elicit)
    assert sent[3] == '{"jsonrpc":"2.0","id":"q1","result":{"action":"decline"}}'


def test_without_a_callback_nothing_is_declared_and_every_question_is_declined(tmp_path):
    sent, result = legacy_question(tmp_path)
    assert json.loads(sent[0])["params"]["capabilities"] == TASKS  # the tasks extension only
    assert sent[3] == '{"jsonrpc":"2.0","id":"q1","result":{"action":"decline"}}'
    assert result["content"][0]["text"] == "done"


@pytest.mark.parametrize("returned, message", [
    (ValueError("no terminal"), "the client's on_elicit failed: ValueError('no terminal')"),
    ("yes", "on_elicit gave 'yes', not an ElicitResult")])
def test_a_callback_that_fails_answers_the_server_with_an_error(tmp_path, returned, message):
    def on_elicit(message, schema):
        if isinstance(returned, Exception):
            raise returned
        return returned
    sent, result = legacy_question(tmp_path, on_elicit=on_elicit)
    assert json.loads(sent[3]) == {"jsonrpc": "2.0", "id": "q1",
                                   "error": {"code": -32603, "message": message}}
    assert result["content"][0]["text"] == "done"  # the call itself goes on


def test_ping_and_unknown_requests_are_answered_wherever_they_come(tmp_path):
    asks = ['{"jsonrpc":"2.0","id":"p1","method":"ping"}',
            '{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}']
    steps = [[INITIALIZED], asks, [], [DONE.replace('"@id"', "2")]]
    client, sent = play(tmp_path, steps, legacy=True)

    async def body():
        async with client:
            return await client.call_tool("x")
    run(body())
    assert sorted(sent[3:5]) == [
        '{"jsonrpc":"2.0","id":"p1","result":{}}',
        '{"jsonrpc":"2.0","id":"s1","error":{"code":-32601,'
        '"message":"Method not found: sampling/createMessage"}}']


def input_required(state=None, questions=True):
    result = {"resultType": "input_required"}
    if questions:
        result["inputRequests"] = {"pick": {"method": "elicitation/create", "params": QUESTION}}
    if state is not None:
        result["requestState"] = state
    return json.dumps({"jsonrpc": "2.0", "id": "@id", "result": result})


def test_input_required_is_retried_with_the_answers_and_the_exact_state(tmp_path):
    # Round 1 asks a question, round 2 says only "come back" (requestState alone), round 3 ends.
    steps = [[DISCOVERED], [input_required("s1 \u00e9")], [input_required("s2", questions=False)],
             [DONE]]
    answers = []
    client, sent = play(tmp_path, steps, on_elicit=lambda message, schema: answers.append(
        message) or {"action": "accept", "content": {"account": "b"}})

    async def body():
        async with client:
            return await client.call_tool("pick", {"n": 1})
    result = run(body())
    assert result["content"][0]["text"] == "done" and answers == ["Which account?"]
    calls = [json.loads(line) for line in sent[1:]]
    assert [call["id"] for call in calls] == [2, 3, 4]  # a new id for each round
    meta = calls[0]["params"].pop("_meta")
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {"elicitation": {}, **TASKS}
    assert all(call["params"].pop("_meta") == meta for call in calls[1:])
    assert [call["params"] for call in calls] == [
        {"name": "pick", "arguments": {"n": 1}},
        {"name": "pick", "arguments": {"n": 1}, "requestState": "s1 \u00e9",
         "inputResponses": {"pick": {"action": "accept", "content": {"account": "b"}}}},
        {"name": "pick", "arguments": {"n": 1}, "requestState": "s2"}]


def test_input_required_without_state_is_retried_without_one_and_declined_without_callback(
        tmp_path):
    client, sent = play(tmp_path, [[DISCOVERED], [input_required()], [DONE]])

    async def body():
        async with client:
            return await client.get_prompt("greet")
    assert "content" in run(body())
    retry = json.loads(sent[2])["params"]
    assert "requestState" not in retry
    assert retry["inputResponses"] == {"pick": {"action": "decline"}}
    assert json.loads(sent[1])["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] \
        == TASKS


def test_a_server_that_never_stops_asking_is_an_error_after_bounded_rounds(tmp_path):
    client, sent = play(tmp_path, [[DISCOVERED], [input_required("again")]])

    async def body():
        async with client:
            with pytest.raises(MCPError, match="still asked for input after 10 rounds"):
                await client.read_resource("docs://x")
    run(body())
    assert len(sent) == 1 + client_module.MAX_INPUT_ROUNDS


def test_discover_refused_with_32022_is_asked_again_in_a_listed_version(tmp_path):
    refused = ('{"jsonrpc":"2.0","id":"@id","error":{"code":-32022,"message":"Unsupported",'
               '"data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}')
    client, sent = play(tmp_path, [[refused], [DISCOVERED], [DONE]])

    async def body():
        async with client:
            assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
    run(body())
    assert [json.loads(line)["method"] for line in sent] == ["server/discover"] * 2


def test_a_modern_server_slower_than_the_probe_is_reached_after_its_32022(tmp_path):
    # It does not answer the probe in time; it refuses the fallback initialize with -32022 listing
    # 2026-07-28: the client asks server/discover again, without the probe's short timeout.
    refused = ('{"jsonrpc":"2.0","id":"@id","error":{"code":-32022,"message":"Unsupported",'
               '"data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}')
    client, sent = play(tmp_path, [[], [refused], [DISCOVERED], [DONE]], probe_timeout=0.2)

    async def body():
        async with client:
            assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
    run(body())
    methods = [json.loads(line).get("method") for line in sent]
    assert methods == ["server/discover", "notifications/cancelled", "initialize",
                       "server/discover"]


# --- Over HTTP: x-mcp-header annotations (spec 2026-07-28, Custom Headers) ---

def tool(name, **properties):
    return {"name": name, "inputSchema": {"type": "object", "properties": properties}}


@pytest.mark.parametrize("bad, why", [
    (tool("t", v={"type": "string", "x-mcp-header": ""}), "x-mcp-header '' is not an HTTP header"),
    (tool("t", v={"type": "string", "x-mcp-header": "My Region"}), "'My Region' is not an HTTP"),
    (tool("t", v={"type": "string", "x-mcp-header": "R\u00e9gion"}), "is not an HTTP header name"),
    (tool("t", v={"type": "string", "x-mcp-header": 7}), "x-mcp-header 7 is not an HTTP header"),
    (tool("t", v={"type": "number", "x-mcp-header": "Score"}), "'Score' is on a number, not a"),
    (tool("t", v={"type": "object", "x-mcp-header": "Data"}), "'Data' is on a object, not a"),
    (tool("t", v={"x-mcp-header": "Any"}), "'Any' is on a None, not a string, integer or boolean"),
    (tool("t", a={"type": "string", "x-mcp-header": "Region"},
          b={"type": "object", "properties": {"c": {"type": "string", "x-mcp-header": "region"}}}),
     "two x-mcp-header names are the same, ignoring case")])
def test_a_tool_with_a_bad_header_annotation_is_left_out_saying_why(capsys, bad, why):
    assert client_module.bad_header_annotation(bad) is True
    line = capsys.readouterr().err
    assert line.startswith("mcp_min client: tool 't' left out: its ") and why in line
    assert line.count("\n") == 1


def test_good_header_annotations_keep_their_tool(capsys):
    good = tool("t", a={"type": "string", "x-mcp-header": "Region"},
                b={"type": "object", "properties": {"c": {"type": "integer", "x-mcp-header": "N"}}},
                d={"type": "boolean", "x-mcp-header": "Dry-Run"}, e={"type": "number"})
    assert client_module.bad_header_annotation(good) is False
    assert client_module.bad_header_annotation({"name": "x", "inputSchema": "junk"}) is False
    assert capsys.readouterr().err == ""


def test_http_client_declares_elicitation_only_with_a_callback():
    assert HTTPClient("http://127.0.0.1:1/mcp", on_elicit=print).client_capabilities == {
        "elicitation": {}, **TASKS}
    assert HTTPClient("http://127.0.0.1:1/mcp").client_capabilities == TASKS


# --- Interop: the official SDK's server (mcp 2.3.0) asks, our client answers ---

SDK_ELICIT_SERVER = [sys.executable, str(ROOT / "tests" / "sdk_elicit_server.py")]


@pytest.fixture(scope="module")
def sdk_http_url():
    """tests/sdk_elicit_server.py over Streamable HTTP on a free loopback port."""
    yield from serving_on_free_port(SDK_ELICIT_SERVER, "--http", start_seconds=30)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("legacy", [True, False], ids=["2025-11-25", "2026-07-28"])
def test_our_client_answers_the_sdk_servers_questions(request, transport, legacy):
    asked, lines = [], []

    def on_elicit(message, schema):
        asked.append((message, schema["properties"]))
        return {"action": "accept", "content": {"account": "work"} if "account" in schema[
            "properties"] else {"sure": True}}
    options = {"legacy": legacy, "on_elicit": on_elicit, "timeout": 20,
               "trace": lambda direction, line: lines.append(direction + " " + line)}
    if transport == "http":
        client = HTTPClient(request.getfixturevalue("sdk_http_url"), **options)
    else:
        client = Client(SDK_ELICIT_SERVER, **options)

    async def body():
        async with client:
            assert client.era == ("legacy" if legacy else "modern")
            texts = [(await client.call_tool("pick"))["content"][0]["text"]]
            if legacy:  # a question of ctx.elicit's own, and a ping outside the call
                texts.append((await client.call_tool("confirm"))["content"][0]["text"])
                texts.append((await client.call_tool("ping_me"))["content"][0]["text"])
            return texts
    texts = run(body())
    assert texts[0] == "picked work"
    assert asked[0] == ("Which account?", {"account": {
        "default": "personal", "title": "Account", "type": "string"}})
    if legacy:
        assert texts[1:] == ["accept True", "the client answered the ping"]
        assert [message for message, _ in asked] == ["Which account?", "Are you sure?"]
        answers = [line for line in lines if line.startswith('→ {"jsonrpc":"2.0","id":')
                   and '"result":' in line]
        assert answers[0].endswith('"result":{"action":"accept","content":{"account":"work"}}}')
        assert answers[-1].endswith('"result":{}}')  # the answer to the ping, traced too
    else:
        sent = [json.loads(line[2:]) for line in lines if line.startswith("→")]
        retry = next(message for message in sent if "inputResponses" in message["params"])
        assert retry["params"]["inputResponses"] == {"__main__:ask_account": {
            "action": "accept", "content": {"account": "work"}}}


# --- HTTPClient: a legacy session's standalone GET stream (spec 2025-11-25) ---

def test_http_client_listens_on_the_sessions_get_stream_and_reopens_it_where_it_ended():
    gets, posts = [], []

    async def handle(reader, writer):
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {name.lower(): value.strip() for name, _, value in
                   (line.partition(":") for line in head[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length", 0)))
        if head[0].startswith("GET"):
            gets.append(headers)
            ping = {"jsonrpc": "2.0", "id": f"p{len(gets)}", "method": "ping"}
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                         + f"id: g{len(gets)}\nretry: 0\ndata: {json.dumps(ping)}\n\n".encode())
            await writer.drain()
            if len(gets) == 2:  # the second stream stays open until the client leaves
                await reader.read()
            return writer.close()
        message = json.loads(body)
        posts.append(message)
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {},
                      "serverInfo": {"name": "listening", "version": "1"}}
            data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: "
                         b"s1\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
        else:  # server/discover gets 400 (a legacy server); our answers and notifications 202
            status = b"400 Bad Request" if message.get("method") else b"202 Accepted"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    async def body():
        listener = await asyncio.start_server(handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/mcp"
        try:
            async with HTTPClient(url, timeout=10) as client:
                assert client.era == "legacy"
                for _ in range(200):  # until both pings are answered
                    if len([m for m in posts if "result" in m]) == 2:
                        break
                    await asyncio.sleep(0.05)
        finally:
            listener.close()
    run(body())
    assert [m for m in posts if "result" in m] == [{"jsonrpc": "2.0", "id": "p1", "result": {}},
                                                   {"jsonrpc": "2.0", "id": "p2", "result": {}}]
    assert len(gets) == 2 and "last-event-id" not in gets[0]
    assert gets[1]["last-event-id"] == "g1" and gets[1]["mcp-session-id"] == "s1"
    assert "text/event-stream" in gets[0]["accept"]


def test_the_demo_shows_an_enum_without_type_and_a_list_of_types_readably():
    schema = {"required": ["mode"], "properties": {
        "mode": {"enum": ["fast", "exact"]}, "limit": {"type": ["integer", "null"]},
        "style": {"type": "string", "enum": ["plain"], "default": "plain"},
        "either": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    assert client_module.describe_arguments(schema) == (
        'mode (one of "fast", "exact", required), limit (integer | null, optional), '
        'style (string one of "plain", default "plain"), either (string | null, optional)')
