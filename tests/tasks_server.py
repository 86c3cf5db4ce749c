"""A small mcp_min server whose tools run as tasks (mcp_tasks), for tests/test_tasks.py. Stdio by
default, Streamable HTTP with --http PORT.

    python tests/tasks_server.py [--http PORT]

Its task clock is its own: it stands still until the tool advance_clock moves it, so that a test
sees a task before its ttl has passed and after, whatever the machine's speed. A task tool that
is cancelled says so on stderr ("<tool>: cancelled"), where a test can read it.
"""
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mcp_tasks  # noqa: E402
from mcp_min import INTERNAL_ERROR, Context, MCPError, Server, log  # noqa: E402

server = Server("tasks-test", "1.0.0")
now = [0.0]  # seconds, on the task clock
mcp_tasks.clock = lambda: now[0]
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool()
def advance_clock(ms: int) -> str:
    """Moves the task clock on by ms milliseconds."""
    now[0] += ms / 1000
    return f"the task clock is at {round(now[0] * 1000)} ms"


@server.tool()
def plain() -> str:
    """Never a task."""
    return "plain"


@mcp_tasks.task_tool(server, ttl_ms=1000, poll_ms=50)
async def sleeper(seconds: float) -> str:
    """Sleeps, then says so; says on stderr when it is cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        log("sleeper: cancelled")
        raise
    return f"slept {seconds:g} s"


@mcp_tasks.task_tool(server, support="required")
def must_be_task(word: str) -> str:
    """Runs only as a task (a def: in a worker thread)."""
    return word.upper()


@mcp_tasks.task_tool(server)
async def ask_twice(ctx: Context) -> str:
    """Two questions one after the other, both under the key "answer": the second goes out as
    "answer-2", as a key is never used twice in a task."""
    first = await ctx.elicit("First name?", NAME_FORM)
    second = await ctx.elicit("Last name?", NAME_FORM)
    return f"{first['content']['name']} {second['content']['name']}"


@mcp_tasks.task_tool(server)
async def ask_pair(ctx: Context) -> str:
    """Two questions at once (Context.ask), answered together or one at a time."""
    answers = await ctx.ask({key: {"method": "elicitation/create", "params": {
        "mode": "form", "message": f"{key}?", "requestedSchema": NAME_FORM}} for key in "ab"})
    return " & ".join(answers[key]["content"]["name"] for key in "ab")


@mcp_tasks.task_tool(server)
def ask_sync(ctx: Context) -> str:
    """As ask_twice's first question, from a worker thread (elicit_sync)."""
    return "hi " + ctx.elicit_sync("Name?", NAME_FORM)["content"]["name"]


@mcp_tasks.task_tool(server)
async def ask_either(ctx: Context) -> str:
    """Asks for a name and a nickname, as two questions; takes the first answer and stops waiting
    for the other (as a tool that gives up on a question after a while), then asks once more."""
    name = asyncio.ensure_future(ctx.elicit("Name?", NAME_FORM, key="name"))
    nickname = asyncio.ensure_future(ctx.elicit("Nickname?", NAME_FORM, key="nickname"))
    done, pending = await asyncio.wait({name, nickname}, return_when=asyncio.FIRST_COMPLETED)
    for question in pending:
        question.cancel()
    await asyncio.wait(pending)
    again = await ctx.elicit("Again?", NAME_FORM, key="again")
    return f"{done.pop().result()['content']['name']}, {again['content']['name']}"


@mcp_tasks.task_tool(server)
async def rpc_error() -> str:
    """Fails with a JSON-RPC error: the task fails."""
    raise MCPError(INTERNAL_ERROR, "no database")


@mcp_tasks.task_tool(server)
async def tool_error() -> str:
    """Raises: a tool error (isError), so the task completes."""
    raise RuntimeError("disk full")


@mcp_tasks.task_tool(server, asks_first=True)
async def ask_then_task(ctx: Context) -> str:
    """Asks in the call (input_required), then starts its task, then asks again in the task."""
    first = await ctx.elicit("Name?", NAME_FORM, key="name")
    ctx.start_task()
    second = await ctx.elicit("Again?", NAME_FORM, key="again")
    return f"{first['content']['name']}, {second['content']['name']}"


if __name__ == "__main__":
    if "--http" in sys.argv:
        import mcp_http
        mcp_http.serve(server, port=sys.argv[sys.argv.index("--http") + 1])
    else:
        server.run()
