"""Resources, prompts and completion: raw lines into tests/features_server.py, exact lines out, in
both eras; then the official SDK's client (mcp 2.3.0) reading them, in both eras.

Spec: server/resources, server/prompts, server/utilities/{completion,pagination,caching} of
revisions 2025-11-25 and 2026-07-28; SEP-2164 (a resource not found is -32602).
"""
import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from test_wire import Run, check_stdout, req

ROOT = Path(__file__).resolve().parents[1]
FEATURES = [sys.executable, str(ROOT / "tests" / "features_server.py")]
WIRE = [sys.executable, str(ROOT / "tests" / "wire_server.py")]  # tools only
META = "io.modelcontextprotocol/"
SERVER_INFO = {"name": "features-test", "version": "2.0.0"}
CAPABILITIES = {"tools": {"listChanged": True},
                "resources": {"listChanged": True, "subscribe": True},
                "prompts": {"listChanged": True}, "completions": {}}
INVALID_PARAMS, METHOD_NOT_FOUND, INTERNAL_ERROR = -32602, -32601, -32603
HANDSHAKE = [req("init", "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "t", "version": "0"}}),
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]

FIXED = [
    {"uri": "info:///readme", "name": "readme", "title": "Read me",
     "description": "What this server is.", "mimeType": "text/markdown"},
    {"uri": "info:///logo", "name": "logo", "description": "A PNG signature.",
     "mimeType": "image/png"},
    {"uri": "info:///both", "name": "both", "description": "Two contents, as given."},
    {"uri": "info:///broken", "name": "broken", "description": "Always fails."},
]
NOTES = [{"uri": "note:///groceries", "name": "groceries"},
         {"uri": "note:///to%20do", "name": "to do"}, {"uri": "note:///café", "name": "café"}]
ITEMS = [{"uri": f"item:///{i}", "name": f"item {i}"} for i in range(205)]
RESOURCES = FIXED + NOTES + ITEMS  # 212: pages of 100, 100 and 12
TEMPLATES = [
    {"uriTemplate": "note:///{name}", "name": "note", "description": "A note, by name.",
     "mimeType": "text/plain"},
    {"uriTemplate": "color:///{shade}/{tone}", "name": "color", "description": "A color."},
    {"uriTemplate": "item:///{index}", "name": "item", "description": "An item (async).",
     "mimeType": "text/plain"},
]
PROMPTS = [
    {"name": "greet", "title": "Greeting", "description": "Greet someone.",
     "arguments": [{"name": "name", "description": "who to greet", "required": True},
                   {"name": "style", "required": False}]},
    {"name": "review", "description": "Review some code, with a resource and an answer to start "
                                      "from.", "arguments": [{"name": "code", "required": True}]},
    {"name": "pick", "description": "Pick one of many.",
     "arguments": [{"name": "letter", "required": True}]},
    {"name": "explode", "description": "Always fails.", "arguments": []},
]


def exchange(messages, server=FEATURES):
    """Every message at once, then EOF; the server's messages, checked line by line."""
    data = b"".join(json.dumps(message).encode() + b"\n" for message in messages)
    done = subprocess.run(server, input=data, capture_output=True, timeout=60, cwd=ROOT)
    run = Run(check_stdout(done.stdout), done.stderr.decode("utf-8", "replace"), done.returncode)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def modern(request_id, method, params=None):
    meta = {META + "protocolVersion": "2026-07-28", META + "clientCapabilities": {}}
    return req(request_id, method, {**(params or {}), "_meta": meta})


def in_era(era, requests):
    """The same requests as a legacy session (after the handshake) or as modern requests."""
    if era == "legacy":
        return HANDSHAKE + [req(*request) for request in requests]
    return [modern(*request) for request in requests]


def complete(result, era, cache_ttl=None):
    """A result as the era sends it: 2026-07-28 adds resultType, serverInfo and caching hints."""
    if era == "legacy":
        return result
    hints = {} if cache_ttl is None else {"ttlMs": cache_ttl, "cacheScope": "public"}
    return {**result, "resultType": "complete", "_meta": {META + "serverInfo": SERVER_INFO},
            **hints}


def error(request_id, code, message, data=None):
    body = {"code": code, "message": message, **({"data": data} if data is not None else {})}
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


ERAS = ["legacy", "modern"]


# --- Capabilities: what is registered, and nothing else ---

def test_capabilities_name_what_is_registered_in_both_eras():
    run = exchange([*HANDSHAKE, modern(1, "server/discover")])
    assert run.result("init")["capabilities"] == CAPABILITIES
    assert run.result(1)["capabilities"] == CAPABILITIES


@pytest.mark.parametrize("era", ERAS)
def test_a_tools_only_server_has_no_resources_prompts_or_completion(era):
    requests = [(1, "resources/list"), (2, "resources/templates/list"),
                (3, "resources/read", {"uri": "x:///y"}), (4, "prompts/list"),
                (5, "prompts/get", {"name": "x"}), (6, "resources/subscribe", {"uri": "x:///y"}),
                (7, "completion/complete", {"ref": {"type": "ref/prompt", "name": "x"},
                                            "argument": {"name": "a", "value": ""}})]
    run = exchange(in_era(era, requests), server=WIRE)
    for request_id in range(1, 8):
        assert run.error(request_id)["code"] == METHOD_NOT_FOUND


# --- resources/list, resources/templates/list: pages (spec: utilities/pagination) ---

@pytest.mark.parametrize("era", ERAS)
def test_resources_list_pages_through_fixed_and_listed_resources(era):
    run = exchange(in_era(era, [(1, "resources/list"), (2, "resources/list", {"cursor": "100"}),
                                (3, "resources/list", {"cursor": "200"})]))
    assert run.result(1) == complete({"resources": RESOURCES[:100], "nextCursor": "100"}, era, 0)
    assert run.result(2) == complete({"resources": RESOURCES[100:200], "nextCursor": "200"}, era,
                                     0)
    assert run.result(3) == complete({"resources": RESOURCES[200:]}, era, 0)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("cursor", ["0", "50", "300", "", "abc", 100, None, ["100"]])
def test_a_cursor_this_server_did_not_give_is_invalid_params(era, cursor):
    params = {"cursor": cursor}
    run = exchange(in_era(era, [(1, "resources/list", params), (2, "prompts/list", params)]))
    if cursor is None:  # null is no cursor: the first page
        assert run.result(1)["resources"] == RESOURCES[:100]
        return
    for request_id in (1, 2):
        assert run.response(request_id) == error(
            request_id, INVALID_PARAMS, f"Invalid params: unknown cursor {json.dumps(cursor)}")


@pytest.mark.parametrize("era", ERAS)
def test_templates_and_prompts_list_exact(era):
    run = exchange(in_era(era, [(1, "resources/templates/list"), (2, "prompts/list"),
                                (3, "tools/list")]))
    assert run.result(1) == complete({"resourceTemplates": TEMPLATES}, era, 3_600_000)
    assert run.result(2) == complete({"prompts": PROMPTS}, era, 3_600_000)
    shout = run.result(3)["tools"][0]["inputSchema"]["properties"]["text"]
    assert shout == {"type": "string", "description": "what to shout"}  # Annotated's text


# --- resources/read (spec: server/resources, Reading Resources, Error Handling) ---

READS = [
    ("text", "info:///readme", [{"uri": "info:///readme", "mimeType": "text/markdown",
                                 "text": "# features-test"}]),
    ("blob", "info:///logo", [{"uri": "info:///logo", "mimeType": "image/png",
                               "blob": "iVBORw0KGgo="}]),
    ("contents as given", "info:///both",
     [{"uri": "info:///both#1", "mimeType": "text/plain", "text": "one"},
      {"uri": "info:///both#2", "mimeType": "text/plain", "text": "two"}]),
    ("template", "note:///groceries", [{"uri": "note:///groceries", "mimeType": "text/plain",
                                        "text": "milk, eggs"}]),
    ("percent-decoded", "note:///to%20do", [{"uri": "note:///to%20do", "mimeType": "text/plain",
                                             "text": "write the tests"}]),
    ("not ASCII", "note:///caf%C3%A9", [{"uri": "note:///caf%C3%A9", "mimeType": "text/plain",
                                         "text": "open at 8"}]),
    ("two variables", "color:///rose/light", [{"uri": "color:///rose/light",
                                               "text": "light rose"}]),
    ("async", "item:///7", [{"uri": "item:///7", "mimeType": "text/plain", "text": "item 7"}]),
]


@pytest.mark.parametrize("era", ERAS)
def test_resources_read_exact(era):
    run = exchange(in_era(era, [(label, "resources/read", {"uri": uri})
                                for label, uri, _ in READS]))
    for label, _, contents in READS:
        assert run.result(label) == complete({"contents": contents}, era, 0), label


NOT_FOUND = [
    ("no resource", "info:///nothing"),
    ("the function says None", "note:///shopping"),
    ("a slash in a variable", "note:///a/b"),
    ("an encoded slash", "note:///..%2Fetc%2Fpasswd"),
    ("dot dot", "note:///.."),
    ("encoded dot dot", "note:///%2E%2E"),
    ("dot", "note:///."),
    ("NUL", "note:///a%00b"),
    ("empty variable", "note:///"),
    ("a query", "note:///groceries?x=1"),
    ("a fragment", "note:///groceries#top"),
    ("template text", "note:///{name}"),
    ("fixed URI plus more", "info:///readme/more"),
    ("one variable of two", "color:///rose"),
]


@pytest.mark.parametrize("era", ERAS)
def test_a_uri_nothing_serves_is_invalid_params_with_the_uri_in_data(era):
    """SEP-2164: -32602, data {uri}, and never an empty contents list. A template's variable is
    one path segment: a value that would leave it matches nothing (and reaches no function)."""
    run = exchange(in_era(era, [(label, "resources/read", {"uri": uri})
                                for label, uri in NOT_FOUND]))
    for label, uri in NOT_FOUND:
        message = (f"Resource not found: {uri}; resources/list and resources/templates/list say "
                   "what exists")
        assert run.response(label) == error(label, INVALID_PARAMS, message, {"uri": uri}), label


@pytest.mark.parametrize("era", ERAS)
def test_read_errors_exact(era):
    run = exchange(in_era(era, [(1, "resources/read", {}), (2, "resources/read", {"uri": 5}),
                                (3, "resources/read", {"uri": "info:///broken"}),
                                (4, "resources/read", {"uri": "x" * 1000})]))
    assert run.response(1) == error(1, INVALID_PARAMS, 'Invalid params: "uri" must be a string')
    assert run.response(2) == error(2, INVALID_PARAMS, 'Invalid params: "uri" must be a string')
    # A function that fails: resources have no isError, so a JSON-RPC error names the problem.
    assert run.response(3) == error(3, INTERNAL_ERROR,
                                    "Internal error: ValueError: the disk is on fire")
    assert run.error(4)["message"].startswith("Resource not found: " + "x" * 200 + ";")
    assert run.error(4)["data"] == {"uri": "x" * 1000}
    assert "Traceback" in run.stderr and "the disk is on fire" in run.stderr


# --- prompts/get (spec: server/prompts) ---

@pytest.mark.parametrize("era", ERAS)
def test_prompts_get_exact(era):
    run = exchange(in_era(era, [(1, "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
                                (2, "prompts/get", {"name": "greet", "arguments": {
                                    "name": "Ada", "style": "warm"}}),
                                (3, "prompts/get", {"name": "review", "arguments": {
                                    "code": "print(1)"}}),
                                (4, "prompts/get", {"name": "explode"}),
                                (5, "prompts/get", {"name": "explode", "arguments": None})]))
    assert run.result(1) == complete({"messages": [
        {"role": "user", "content": {"type": "text", "text": "Hello, Ada."}}]}, era)
    assert run.result(2)["messages"][0]["content"]["text"] == "Hello, dear Ada!"
    assert run.result(3) == complete({"messages": [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": "info:///code", "mimeType": "text/x-python", "text": "print(1)"}}},
        {"role": "assistant", "content": {"type": "text", "text": "Let me look."}}]}, era)
    for request_id in (4, 5):  # arguments left out or null: none; the prompt then fails
        assert run.response(request_id) == error(request_id, INTERNAL_ERROR,
                                                 "Internal error: RuntimeError: no prompt today")


PROMPT_ERRORS = [
    ("unknown prompt", {"name": "greeet"}, "Unknown prompt: greeet; see prompts/list"),
    ("no name", {}, 'Invalid params: "name" must be a string'),
    ("missing argument", {"name": "greet", "arguments": {"style": "warm"}},
     "Invalid arguments for prompt greet: missing required argument(s): name"),
    ("unknown argument", {"name": "greet", "arguments": {"name": "Ada", "mood": "glad"}},
     "Invalid arguments for prompt greet: unknown argument(s): mood; expected: name, style"),
    ("not a string", {"name": "greet", "arguments": {"name": 7}},
     "Invalid arguments for prompt greet: name must be of type string, not 7"),
    ("not one of a Literal's values", {"name": "greet", "arguments": {"name": "A", "style": "x"}},
     'Invalid arguments for prompt greet: style must be one of ["plain", "warm"]'),
    ("arguments not an object", {"name": "greet", "arguments": ["Ada"]},
     'Invalid arguments for prompt greet: arguments must be of type object, not ["Ada"]'),
]


@pytest.mark.parametrize("era", ERAS)
def test_prompt_errors_are_invalid_params_naming_the_fix(era):
    run = exchange(in_era(era, [(label, "prompts/get", params)
                                for label, params, _ in PROMPT_ERRORS]))
    for label, _, message in PROMPT_ERRORS:
        assert run.response(label) == error(label, INVALID_PARAMS, message), label


# --- completion/complete (spec: server/utilities/completion) ---

def completion(ref, name, value, context=None):
    return {"ref": ref, "argument": {"name": name, "value": value},
            **({"context": {"arguments": context}} if context is not None else {})}


GREET = {"type": "ref/prompt", "name": "greet"}
NOTE = {"type": "ref/resource", "uri": "note:///{name}"}
COLOR = {"type": "ref/resource", "uri": "color:///{shade}/{tone}"}
COMPLETIONS = [
    ("a function", completion(GREET, "name", "A"), ["Ada", "Alan"]),
    ("the other arguments", completion(GREET, "name", "", {"style": "warm"}), ["Dear Ada"]),
    ("a Literal", completion(GREET, "style", "w"), ["warm"]),
    ("nothing typed", completion(GREET, "style", ""), ["plain", "warm"]),
    ("no match", completion(GREET, "style", "z"), []),
    ("a template's function", completion(NOTE, "name", "g"), ["groceries"]),
    ("a template's Literal", completion(COLOR, "shade", "r"), ["red", "rose"]),
    ("a template's second Literal", completion(COLOR, "tone", "d", {"shade": "red"}), ["dark"]),
    ("an argument with no completer", completion({"type": "ref/prompt", "name": "review"},
                                                 "code", "pr"), []),
    ("an argument it does not have", completion(GREET, "mood", "g"), []),
]


@pytest.mark.parametrize("era", ERAS)
def test_completion_exact(era):
    run = exchange(in_era(era, [(label, "completion/complete", params)
                                for label, params, _ in COMPLETIONS]))
    for label, _, values in COMPLETIONS:
        expected = {"completion": {"values": values, "total": len(values), "hasMore": False}}
        assert run.result(label) == complete(expected, era), label


@pytest.mark.parametrize("era", ERAS)
def test_completion_sends_at_most_100_values_and_says_how_many_there_are(era):
    run = exchange(in_era(era, [(1, "completion/complete", completion(
        {"type": "ref/prompt", "name": "pick"}, "letter", "q"))]))
    values = [f"q{i}" for i in range(100)]
    assert run.result(1) == complete({"completion": {"values": values, "total": 150,
                                                     "hasMore": True}}, era)


COMPLETION_ERRORS = [
    ("unknown prompt", completion({"type": "ref/prompt", "name": "nope"}, "a", ""),
     "Invalid params: no such prompt or resource template; see prompts/list and "
     "resources/templates/list"),
    ("unknown template", completion({"type": "ref/resource", "uri": "note:///{nom}"}, "a", ""),
     "Invalid params: no such prompt or resource template; see prompts/list and "
     "resources/templates/list"),
    ("unknown ref type", completion({"type": "ref/tool", "name": "greet"}, "a", ""),
     "Invalid params: no such prompt or resource template; see prompts/list and "
     "resources/templates/list"),
    ("a prompt ref without a name", completion({"type": "ref/prompt"}, "a", ""),
     'Invalid params: "name" must be a string'),
    ("no argument", {"ref": GREET}, 'Invalid params: "name" must be a string'),
    ("ref not an object", {"ref": "greet", "argument": {"name": "name", "value": ""}},
     'Invalid params: "type" must be a string'),
    ("no value", {"ref": GREET, "argument": {"name": "name"}},
     'Invalid params: "value" must be a string'),
]


@pytest.mark.parametrize("era", ERAS)
def test_completion_errors_are_invalid_params(era):
    run = exchange(in_era(era, [(label, "completion/complete", params)
                                for label, params, _ in COMPLETION_ERRORS]))
    for label, _, message in COMPLETION_ERRORS:
        assert run.response(label) == error(label, INVALID_PARAMS, message), label


def test_a_malformed_completion_context_is_ignored():
    run = exchange(in_era("modern", [(1, "completion/complete", {**completion(GREET, "name", "A"),
                                                                 "context": ["style"]}),
                                     (2, "completion/complete", completion(GREET, "name", "A",
                                                                           "warm"))]))
    for request_id in (1, 2):
        assert run.result(request_id)["completion"]["values"] == ["Ada", "Alan"]


# --- The official SDK's client (mcp 2.3.0) reads all of it, in both eras ---

def run_async(coroutine, timeout=60):
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


async def exercise_sdk(session, types):
    listed = await session.list_resources()
    assert [r.uri for r in listed.resources] == [r["uri"] for r in RESOURCES[:100]]
    assert listed.next_cursor == "100"
    last = await session.list_resources(params=types.PaginatedRequestParams(cursor="200"))
    assert [r.name for r in last.resources] == [r["name"] for r in RESOURCES[200:]]
    assert last.next_cursor is None
    templates = await session.list_resource_templates()
    assert [t.uri_template for t in templates.resource_templates] == [
        t["uriTemplate"] for t in TEMPLATES]

    text = await session.read_resource("info:///readme")
    assert text.contents[0].text == "# features-test"
    assert text.contents[0].mime_type == "text/markdown"
    blob = await session.read_resource("info:///logo")
    assert blob.contents[0].blob == "iVBORw0KGgo=" and blob.contents[0].mime_type == "image/png"
    note = await session.read_resource("note:///to%20do")
    assert note.contents[0].text == "write the tests"
    with pytest.raises(Exception) as missing:
        await session.read_resource("note:///nowhere")
    assert missing.value.error.code == INVALID_PARAMS
    assert missing.value.error.data == {"uri": "note:///nowhere"}

    prompts = await session.list_prompts()
    assert [p.name for p in prompts.prompts] == [p["name"] for p in PROMPTS]
    assert prompts.prompts[0].arguments[0].description == "who to greet"
    greeting = await session.get_prompt("greet", {"name": "Grace", "style": "warm"})
    assert greeting.messages[0].role == "user"
    assert greeting.messages[0].content.text == "Hello, dear Grace!"
    reviewed = await session.get_prompt("review", {"code": "x = 1"})
    assert reviewed.messages[0].content.resource.text == "x = 1"
    assert reviewed.messages[1].role == "assistant"
    with pytest.raises(Exception) as missing_argument:
        await session.get_prompt("greet", {})
    assert missing_argument.value.error.code == INVALID_PARAMS

    names = await session.complete(types.PromptReference(type="ref/prompt", name="greet"),
                                   {"name": "name", "value": "A"})
    assert names.completion.values == ["Ada", "Alan"] and names.completion.has_more is False
    warm = await session.complete(types.PromptReference(type="ref/prompt", name="greet"),
                                  {"name": "name", "value": ""}, {"style": "warm"})
    assert warm.completion.values == ["Dear Ada"]
    shades = await session.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="color:///{shade}/{tone}"),
        {"name": "shade", "value": "r"})
    assert shades.completion.values == ["red", "rose"] and shades.completion.total == 2


@pytest.mark.parametrize("era", ERAS)
def test_the_sdk_client_lists_reads_gets_and_completes(era):
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    params = StdioServerParameters(command=sys.executable, args=[FEATURES[1]], cwd=str(ROOT))

    async def body():
        with tempfile.TemporaryFile("w+") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    if era == "legacy":
                        result = await session.initialize()
                        assert result.capabilities.resources is not None
                        assert result.capabilities.prompts is not None
                        assert result.capabilities.completions is not None
                    else:
                        discovered = await session.discover()
                        assert discovered.capabilities.completions is not None
                    await exercise_sdk(session, types)
                    assert session.protocol_version == (
                        "2025-11-25" if era == "legacy" else "2026-07-28")
    run_async(body())


# --- Mistakes in the code are caught when the decorator runs ---

def path_function(path: str) -> str:
    return path


def two_variables(a: str, b: str) -> str:
    return a + b


@pytest.mark.parametrize("uri, func", [
    ("file:///{+path}", path_function),  # level 2: not served, so not accepted
    ("file:///{name}", path_function),  # a variable the function does not take
    ("file:///fixed", path_function),  # a parameter no variable fills
    ("pair:///{a}", two_variables),
])
def test_a_template_and_its_function_must_agree(uri, func):
    sys.path.insert(0, str(ROOT))
    from mcp_min import Server
    with pytest.raises(TypeError, match="one parameter for each"):
        Server("t").resource(uri)(func)


def test_a_prompt_argument_needs_a_type_hint_json_schema_can_say():
    sys.path.insert(0, str(ROOT))
    from mcp_min import Server

    def ask(question: str, when: object) -> str:
        return question
    with pytest.raises(TypeError, match="prompt ask, 'when'"):
        Server("t").prompt()(ask)


# --- Whatever a resource, a prompt or a completer raises fails only its own request ---

FAILING_FUNCTIONS = """
@server.resource("fail:///exit")
def exits() -> str:
    'Call sys.exit(), as argparse does.'
    sys.exit(3)

@server.resource("fail:///cancelled")
async def cancelled() -> str:
    'Raise a CancelledError that no cancellation of this request caused.'
    raise asyncio.CancelledError("from a library")

@server.prompt(complete={"word": lambda typed, arguments: next(iter([]))})
def interrupted(word: str) -> str:
    'Raise KeyboardInterrupt, as a library might.'
    raise KeyboardInterrupt("from a prompt")
"""


def test_whatever_a_resource_prompt_or_completer_raises_fails_only_its_own_request(tmp_path):
    # sys.exit() in a resource's function stopped the whole server with a traceback, and one
    # that raised its own CancelledError left its request without an answer, its id in use.
    from conftest import script_server
    requests = [(1, "resources/read", {"uri": "fail:///exit"}),
                (2, "resources/read", {"uri": "fail:///cancelled"}),
                (3, "prompts/get", {"name": "interrupted", "arguments": {"word": "x"}}),
                (4, "completion/complete", {"ref": {"type": "ref/prompt", "name": "interrupted"},
                                            "argument": {"name": "word", "value": ""}}),
                (5, "resources/read", {"uri": "fail:///exit"})]
    run = exchange([req(*request) for request in requests] + [req(6, "ping")],
                   server=script_server(tmp_path, FAILING_FUNCTIONS))
    assert [run.response(n) for n in range(1, 6)] == [
        error(1, INTERNAL_ERROR, "Internal error: SystemExit: 3"),
        error(2, INTERNAL_ERROR, "Internal error: CancelledError: from a library"),
        error(3, INTERNAL_ERROR, "Internal error: KeyboardInterrupt: from a prompt"),
        error(4, INTERNAL_ERROR, "Internal error: RuntimeError: the function raised StopIteration"),
        error(5, INTERNAL_ERROR, "Internal error: SystemExit: 3")]
    assert run.result(6) == {}
