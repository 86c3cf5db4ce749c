"""A small mcp_min server whose tools ask the user (elicitation), for tests/test_elicitation.py
and the SDK interop tests. Both eras: stdio by default, Streamable HTTP with --http PORT.

    python tests/elicitation_server.py [--http PORT] [--patient]

Its state key is fixed ("wire-test-key"), so that a test can sign a requestState of its own
(an expired one, say), and its ANSWER_TIMEOUT is one second, so that a client that never answers
fails its call quickly (--patient: 600 s, as in mcp_min).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mcp_min  # noqa: E402
from mcp_min import Context, Server  # noqa: E402

mcp_min.ANSWER_TIMEOUT = 1.0
server = Server("elicitation-test", "1.0.0", state_key="wire-test-key")
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string", "default": "Ann"}},
             "required": ["name"]}
COLOR_FORM = {"type": "object", "properties": {"color": {"type": "string",
                                                         "enum": ["red", "blue"]}}}


@server.tool()
async def ask_name(greeting: str, ctx: Context) -> str:
    """Ask the user's name (key "name"), then greet them."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="name")
    if answer["action"] != "accept":
        return f"no name: {answer['action']}"
    return f"{greeting}, {answer['content']['name']}!"


@server.tool()
def ask_name_sync(greeting: str, ctx: Context) -> str:
    """As ask_name, from a worker thread (elicit_sync)."""
    answer = ctx.elicit_sync("What is your name?", NAME_FORM, key="name")
    return f"{greeting}, {answer.get('content', {}).get('name')}!"


@server.tool()
async def two_rounds(ctx: Context) -> str:
    """A name (key "name"), then a colour (key "color"): two rounds in 2026-07-28."""
    name = await ctx.elicit("What is your name?", NAME_FORM, key="name")
    color = await ctx.elicit("Which colour?", COLOR_FORM, key="color")
    return f"{name['content']['name']} likes {color['content']['color']}"


@server.tool()
async def two_at_once(ctx: Context) -> str:
    """Both questions in one round (Context.ask)."""
    requests = {key: {"method": "elicitation/create", "params": {
        "mode": "form", "message": message, "requestedSchema": schema}}
        for key, message, schema in (("name", "What is your name?", NAME_FORM),
                                     ("color", "Which colour?", COLOR_FORM))}
    answers = await ctx.ask(requests)
    return json.dumps({key: answer["content"] for key, answer in answers.items()})


@server.tool()
async def later(ctx: Context) -> str:
    """Come back later once (a result with only requestState), then answer with the memo."""
    if ctx.memo is None:
        ctx.retry_later({"job": 7})
    return f"job {ctx.memo['job']} done"


@server.tool()
async def bad_form(ctx: Context) -> str:
    """Asks with a nested object, which a form cannot hold: refused before anything is sent."""
    await ctx.elicit("Address?", {"type": "object", "properties": {
        "address": {"type": "object", "properties": {"street": {"type": "string"}}}}})
    return "unreachable"


@server.prompt()
async def greet_prompt(ctx: Context) -> str:
    """A prompt that asks the user's name first."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="name")
    return f"Greet {answer['content']['name']} warmly."


if __name__ == "__main__":
    if "--patient" in sys.argv:  # ten minutes to answer, as a person gets (mcp_min's default)
        mcp_min.ANSWER_TIMEOUT = 600.0
    if "--http" in sys.argv:
        import mcp_http
        mcp_http.serve(server, port=sys.argv[sys.argv.index("--http") + 1])
    else:
        server.run()
