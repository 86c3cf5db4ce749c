"""The tools, resources and prompts the official MCP conformance suite asks for, served by mcp_min
over Streamable HTTP.

    python tests/conformance_server.py 3001
    npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp \
        --scenario tools-call-image

Tool names and results follow the suite's scenario descriptions (src/scenarios/server/*.ts in
github.com/modelcontextprotocol/conformance). Elicitation uses Context.elicit, the same code in
both eras: a real elicitation/create request in 2025-11-25, an input_required result in
2026-07-28. Not here: the deprecated features of 2026-07-28: sampling (test_sampling and the
input-required sampling and roots rows; only test_input_required_result_multiple_inputs and
test_missing_capability ask for them, through Context.ask), logging (test_tool_with_logging),
which mcp_min left out to stay small.

Tasks (mcp_tasks.py, the extension io.modelcontextprotocol/tasks): greet, slow_compute,
failing_job, protocol_error_job, confirm_delete, multi_input and test_tool_with_task, as the
suite's tasks-* scenarios (src/scenarios/server/tasks/*.ts) describe them.
"""
import asyncio, base64, io, json, struct, sys, wave, zlib
from pathlib import Path
from typing import Annotated

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mcp_min import INTERNAL_ERROR, Context, MCPError, Server, ToolResult  # noqa: E402
import mcp_http  # noqa: E402
import mcp_skills  # noqa: E402
import mcp_tasks  # noqa: E402

server = Server("mcp-min-conformance", "1.0.0")


def png_1x1_red():
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))


def wav_silence():
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 80)  # 10 ms
    return out.getvalue()


PNG = base64.b64encode(png_1x1_red()).decode()
WAV = base64.b64encode(wav_silence()).decode()


@server.tool()
def test_simple_text() -> str:
    """Returns a simple text block."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> ToolResult:
    """Returns a 1x1 red PNG image."""
    return ToolResult([{"type": "image", "data": PNG, "mimeType": "image/png"}])


@server.tool()
def test_audio_content() -> ToolResult:
    """Returns 10 ms of silence as a WAV file."""
    return ToolResult([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])


@server.tool()
def test_embedded_resource() -> ToolResult:
    """Returns an embedded text resource."""
    return ToolResult([{"type": "resource", "resource": {
        "uri": "test://embedded-resource", "mimeType": "text/plain",
        "text": "This is an embedded resource content."}}])


@server.tool()
def test_resource_link() -> ToolResult:
    """Returns a link to a resource (not in the suite; our tests use it)."""
    return ToolResult([{"type": "resource_link", "uri": "test://linked-resource",
                        "name": "linked-resource", "mimeType": "text/plain"}])


@server.tool()
def test_multiple_content_types() -> ToolResult:
    """Returns text, an image and an embedded resource."""
    return ToolResult([{"type": "text", "text": "Multiple content types test:"},
                       {"type": "image", "data": PNG, "mimeType": "image/png"},
                       {"type": "resource", "resource": {
                           "uri": "test://mixed-content-resource", "mimeType": "application/json",
                           "text": '{"test":"data","value":123}'}}])


@server.tool()
def test_error_handling() -> ToolResult:
    """Always fails, as a tool result with isError."""
    return ToolResult("This tool intentionally returns an error for testing", is_error=True)


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100, 50 ms apart."""
    for progress in (0, 50, 100):
        ctx.report_progress(progress, 100)
        if progress < 100:
            await asyncio.sleep(0.05)
    return "Progress test completed"


@server.tool()
async def test_logging_tool() -> str:
    """The 2026-07-28 suite checks that no log message comes unasked: mcp_min sends none at all."""
    return "Logging test completed"


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes its SSE stream at once (SSE polling, SEP-1699): the result comes on the next."""
    ctx.close_stream()
    await asyncio.sleep(0.1)
    return "Reconnection test completed successfully"


@server.tool()
def test_trigger_tool_change() -> str:
    """Announces that the tool list changed (notifications/tools/list_changed)."""
    server.list_changed("tools")
    return "tools/list_changed sent"


@server.tool()
def test_trigger_prompt_change() -> str:
    """Announces that the prompt list changed (notifications/prompts/list_changed)."""
    server.list_changed("prompts")
    return "prompts/list_changed sent"


@server.tool()
def test_trigger_resource_update(uri: str = "test://watched-resource") -> str:
    """Announces that a resource changed (notifications/resources/updated); not in the suite."""
    server.resource_updated(uri)
    return f"resources/updated sent for {uri}"


@server.tool()
def test_header_param(region: str, query: str = "") -> str:
    """Echoes region, which travels as the header Mcp-Param-Region in protocol 2026-07-28."""
    return f"region={region}"


@server.tool()
def json_schema_2020_12_tool(name: str = "") -> str:
    """Tool with JSON Schema 2020-12 features"""
    return f"hello {name}"


# Elicitation, 2025-11-25: the server sends elicitation/create and waits for the answer.

@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email address."""
    answer = await ctx.elicit(message, {"type": "object", "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}},
        "required": ["username", "email"]})
    return f"User response: action={answer['action']}, content={json.dumps(answer.get('content'))}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks with a default for every primitive type (SEP-1034)."""
    answer = await ctx.elicit("Please review your details", {"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"],
                   "default": "active"},
        "verified": {"type": "boolean", "default": True}}})
    return f"Elicitation completed: action={answer['action']}, content={answer.get('content')}"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Asks with the five enum forms of SEP-1330."""
    options = ["option1", "option2", "option3"]
    titled = [{"const": f"value{n}", "title": title}
              for n, title in enumerate(["First Option", "Second Option", "Third Option"], 1)]
    answer = await ctx.elicit("Pick some options", {"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": options},
        "titledSingle": {"type": "string", "oneOf": titled},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
        "titledMulti": {"type": "array", "items": {"anyOf": titled}}}})
    return f"Elicitation completed: action={answer['action']}, content={answer.get('content')}"


# Elicitation, 2026-07-28 (SEP-2322): the same ctx.elicit; the call answers input_required, and
# the client's retry brings the answer under the question's key.

def form(**fields):
    """A form of string fields, each required."""
    return {"type": "object", "properties": {name: {"type": kind} for name, kind in fields.items()},
            "required": list(fields)}


@server.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks for a name (key user_name)."""
    answer = await ctx.elicit("What is your name?", form(name="string"), key="user_name")
    return f"Hello, {answer.get('content', {}).get('name')}!"


@server.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks for a name: in 2026-07-28 an input_required result, never a request on the stream."""
    answer = await ctx.elicit("What is your name?", form(name="string"), key="user_name")
    return f"Hello, {answer.get('content', {}).get('name')}!"


@server.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a confirmation (key confirm); the signed requestState comes back with it."""
    answer = await ctx.elicit("Please confirm", form(ok="boolean"), key="confirm")
    return f"state-ok: confirmed={answer.get('content', {}).get('ok')}"


@server.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """As test_input_required_result_request_state: a changed requestState gets -32602."""
    answer = await ctx.elicit("Please confirm", form(ok="boolean"), key="confirm")
    return f"state-ok: confirmed={answer.get('content', {}).get('ok')}"


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Two rounds: a name (step1), then a colour (step2)."""
    name = await ctx.elicit("Step 1: What is your name?", form(name="string"), key="step1")
    color = await ctx.elicit("Step 2: What is your favorite color?", form(color="string"),
                             key="step2")
    return f"{name['content']['name']} likes {color['content']['color']}"


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Three questions in one round, of three kinds (Context.ask)."""
    answers = await ctx.ask({
        "user_name": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "What is your name?",
            "requestedSchema": form(name="string")}},
        "greeting": {"method": "sampling/createMessage", "params": {"messages": [
            {"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
            "maxTokens": 50}},
        "client_roots": {"method": "roots/list", "params": {}}})
    return f"got answers for {', '.join(sorted(answers))}"


@server.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only what the client declared it can answer: elicitation, else sampling."""
    if "elicitation" in ctx.capabilities:
        await ctx.elicit("What is your name?", form(name="string"), key="user_name")
    else:
        await ctx.ask({"capital_question": {"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {
                "type": "text", "text": "What is the capital of France?"}}], "maxTokens": 100}}})
    return "answered"


@server.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs sampling: a client that did not declare it gets -32021."""
    await ctx.ask({"question": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
        "maxTokens": 10}}})
    return "sampled"


@server.prompt()
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks what context to use (key user_context)."""
    answer = await ctx.elicit("What context should the prompt use?", form(context="string"),
                              key="user_context")
    return f"Use this context: {answer.get('content', {}).get('context')}"


# Tasks (SEP-2663, the suite's tasks-* scenarios, run at 2026-07-28): tools that answer with a
# task for a client that names io.modelcontextprotocol/tasks, and their result for any other.

@server.tool()
def greet(name: str) -> str:
    """Greets by name, at once: never a task."""
    return f"Hello, {name}!"


@mcp_tasks.task_tool(server)
async def slow_compute(seconds: float, label: str = "") -> str:
    """Sleeps for `seconds`, then says so; tasks/cancel stops it (the task ends cancelled)."""
    await asyncio.sleep(seconds)
    return f"{label or 'slow_compute'}: slept {seconds:g} s"


@mcp_tasks.task_tool(server, support="required")
async def failing_job() -> ToolResult:
    """Fails as a tool (isError), shortly after it starts: its task ends completed."""
    await asyncio.sleep(0.1)
    return ToolResult("failing_job failed, as it always does", is_error=True)


@mcp_tasks.task_tool(server)
async def protocol_error_job() -> str:
    """Fails with a JSON-RPC error: its task ends failed, with that error."""
    raise MCPError(INTERNAL_ERROR, "protocol_error_job: an internal error, on purpose")


@mcp_tasks.task_tool(server)
async def confirm_delete(filename: str, ctx: Context) -> str:
    """Asks whether to delete a file (in a task: input_required until tasks/update answers)."""
    answer = await ctx.elicit(f"Delete {filename}?", form(confirm="boolean"), key="confirm")
    confirmed = answer["action"] == "accept" and answer.get("content", {}).get("confirm")
    return f"{'Deleted' if confirmed else 'Kept'} {filename}"


@mcp_tasks.task_tool(server)
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once: both wait in inputRequests, each answered on its own."""
    first, second = await asyncio.gather(
        ctx.elicit("First: your name?", form(name="string"), key="first"),
        ctx.elicit("Second: confirm?", form(confirm="boolean"), key="second"))
    return f"answers: {first['action']}, {second['action']}"


@mcp_tasks.task_tool(server, support="required", asks_first=True)
async def test_tool_with_task(ctx: Context) -> str:
    """Asks for a name in the call (input_required, SEP-2322), then runs on as a task."""
    answer = await ctx.elicit("What is your name?", form(name="string"), key="user_name")
    ctx.start_task()
    await asyncio.sleep(0.1)
    return f"Hello, {answer.get('content', {}).get('name')}!"


# Definitions the type hints cannot express: written by hand, as any mcp_min user may do.
region = server.tools["test_header_param"][1]["inputSchema"]["properties"]["region"]
region["x-mcp-header"] = "Region"
server.tools["json_schema_2020_12_tool"][1]["inputSchema"] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"},
                                         "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

# Resources, prompts and completion (the suite's resources-*, prompts-*, completion-complete,
# caching and sep-2164-resource-not-found scenarios).

@server.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A fixed text resource."""
    return "This is the content of the static text resource."


@server.resource("test://watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource to subscribe to (resources-subscribe, resources-unsubscribe)."""
    return "This resource is watched."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A fixed binary resource: a 1x1 red PNG."""
    return png_1x1_red()


@server.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> str:
    """Data for any id: the template's variable comes back in the text."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt(complete={"arg1": lambda value, arguments: [
    word for word in ("test", "testing", "tested", "paris") if word.startswith(value)]})
def test_prompt_with_arguments(arg1: Annotated[str, "First test argument"],
                               arg2: Annotated[str, "Second test argument"]) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(
        resourceUri: Annotated[str, "URI of the resource to embed"]) -> list:
    """A prompt that embeds a resource."""
    return [{"role": "user", "content": {"type": "resource", "resource": {
                "uri": resourceUri, "mimeType": "text/plain",
                "text": "Embedded resource content for testing."}}},
            {"role": "user", "content": {"type": "text",
                                         "text": "Please process the embedded resource above."}}]


@server.prompt()
def test_prompt_with_image() -> list:
    """A prompt with an image."""
    return [{"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "text",
                                         "text": "Please analyze the image above."}}]


# Skills (SEP-2640; the suite's sep-2640-skills-* scenarios): tests/skills/, one skill with a
# folder in it, for resources/directory/read.
mcp_skills.add_skills(server, Path(__file__).resolve().parent / "skills")


if __name__ == "__main__":
    mcp_http.serve(server, port=sys.argv[1] if len(sys.argv) > 1 else 3001)
