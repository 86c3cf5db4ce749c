"""Tasks (mcp_tasks, SEP-2663) on the wire: raw lines into tests/tasks_server.py over stdio, exact
lines out (a task's id and times are the server's to choose: each is checked for its form, then
put into the line expected). A task made, polled, asked, answered, failed, cancelled and expired;
every refusal; the Mcp-Name header over HTTP; tasks kept for their caller only, and at most so
many; and a server that stops cancels the tasks still running.
"""
import asyncio, json, queue, re, subprocess, sys, threading, time
from pathlib import Path

import pytest

from conftest import http_server_port, post_mcp as post

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import mcp_tasks  # noqa: E402
from mcp_min import Context, Server, new_session  # noqa: E402

SERVER = [sys.executable, str(ROOT / "tests" / "tasks_server.py")]
META = "io.modelcontextprotocol/"
TASKS = META + "tasks"
SERVER_INFO = {META + "serverInfo": {"name": "tasks-test", "version": "1.0.0"}}
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
ID = re.compile(r"[A-Za-z0-9_-]{32}")
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
NEEDS_TASKS = {"code": -32021, "message": f"Missing required client capability: {TASKS}",
               "data": {"requiredCapabilities": {"extensions": {TASKS: {}}}}}
NO_TASK = {"code": -32602, "message": "Invalid params: no such task (unknown, or expired)"}
ACK = {}  # tasks/update's and tasks/cancel's result, before resultType and _meta
TIMES = {}  # task id -> (ttlMs, pollIntervalMs) of the tool that made it


def line(message):
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def meta(tasks=True, elicitation=True):
    """A 2026-07-28 request's _meta: the client names the extension, and elicitation, or not."""
    capabilities = {**({"elicitation": {}} if elicitation else {}),
                    **({"extensions": {TASKS: {}}} if tasks else {})}
    return {META + "protocolVersion": "2026-07-28", META + "clientCapabilities": capabilities}


def request(request_id, method, params=None, **capabilities):
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**(params or {}), "_meta": meta(**capabilities)}}


def call(request_id, name, arguments=None, **capabilities):
    return request(request_id, "tools/call", {"name": name, "arguments": arguments or {}},
                   **capabilities)


def answer(name):
    return {"action": "accept", "content": {"name": name}}


def ask(message):
    return {"method": "elicitation/create", "params": {
        "mode": "form", "message": message, "requestedSchema": NAME_FORM}}


class Stdio:
    """tests/tasks_server.py on pipes: send lines, read the lines it writes, one at a time."""

    def __init__(self):
        self.proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=ROOT)
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(raw) for raw in self.proc.stdout],
                         daemon=True).start()
        self.ids = iter(range(100, 10_000))

    def send(self, message):
        self.proc.stdin.write(line(message))
        self.proc.stdin.flush()

    def next(self, timeout=60):
        return self.lines.get(timeout=timeout)

    def exchange(self, message):
        self.send(message)
        return self.next()

    def start(self, name, arguments=None):
        """Call a task tool; check its CreateTaskResult, exactly; return the task's id."""
        raw = self.exchange(call(1, name, arguments))
        created = json.loads(raw)["result"]
        assert ID.fullmatch(created["taskId"]), created
        TIMES[created["taskId"]] = (1000, 50) if name == "sleeper" else (3_600_000, 500)
        assert raw == line(response(1, {"resultType": "task", **task(created, "working")}))
        return created["taskId"]

    def get(self, task_id):
        """tasks/get: the raw line and its result."""
        request_id = next(self.ids)
        raw = self.exchange(request(request_id, "tasks/get", {"taskId": task_id}))
        return raw, request_id, json.loads(raw)["result"]

    def wait_for(self, task_id, status, timeout=60):
        """Poll tasks/get until the task's status is `status` (a generous deadline, no race)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            raw, request_id, got = self.get(task_id)
            if got["status"] == status:
                return raw, request_id, got
            time.sleep(0.02)
        raise AssertionError(f"task {task_id} never became {status}: {got}")

    def update(self, task_id, responses):
        request_id = next(self.ids)
        params = {"taskId": task_id, "inputResponses": responses}
        return self.exchange(request(request_id, "tasks/update", params)), request_id

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(15) == 0
        return self.proc.stderr.read().decode()


@pytest.fixture
def stdio():
    server = Stdio()
    yield server
    if server.proc.poll() is None:
        server.proc.kill()
    server.proc.wait()


def task(got, status, **extra):
    """The Task fields, in the server's order, with the times it sent (checked for their form)
    and the ttl and poll interval of the tool that made it."""
    assert TIME.fullmatch(got["createdAt"]) and TIME.fullmatch(got["lastUpdatedAt"]), got
    ttl_ms, poll_ms = TIMES[got["taskId"]]
    message = {"statusMessage": extra.pop("statusMessage")} if "statusMessage" in extra else {}
    return {"taskId": got["taskId"], "status": status, **message, "createdAt": got["createdAt"],
            "lastUpdatedAt": got["lastUpdatedAt"], "ttlMs": ttl_ms, "pollIntervalMs": poll_ms,
            **extra}


def response(request_id, result):
    return {"jsonrpc": "2.0", "id": request_id,
            "result": {**result, "resultType": result.get("resultType", "complete"),
                       "_meta": SERVER_INFO}}


def error(request_id, body):
    return line({"jsonrpc": "2.0", "id": request_id, "error": body})


def text(words, is_error=False):
    return {"content": [{"type": "text", "text": words}], "isError": is_error}


# --- A task's life: made, polled, completed; its definition says it may be one ---

def test_a_task_tool_says_so_and_the_server_advertises_the_extension(stdio):
    tools = json.loads(stdio.exchange(request(1, "tools/list")))["result"]["tools"]
    support = {tool["name"]: tool.get("execution") for tool in tools}
    assert support["sleeper"] == {"taskSupport": "optional"}
    assert support["must_be_task"] == {"taskSupport": "required"}
    assert support["plain"] is None
    discovered = json.loads(stdio.exchange(request(2, "server/discover")))["result"]
    assert discovered["capabilities"]["extensions"] == {TASKS: {}}
    assert "tasks" not in discovered["capabilities"]


def test_a_task_is_there_at_once_runs_on_and_completes_with_its_result(stdio):
    task_id = stdio.start("sleeper", {"seconds": 600})
    raw, request_id, got = stdio.get(task_id)  # no wait: the task exists once it is announced
    assert raw == line(response(request_id, task(got, "working")))
    quick = stdio.start("sleeper", {"seconds": 0})
    raw, request_id, got = stdio.wait_for(quick, "completed")
    assert raw == line(response(request_id, task(got, "completed", result=text("slept 0 s"))))


def test_a_json_rpc_error_fails_the_task_and_a_tool_error_completes_it(stdio):
    raw, request_id, got = stdio.wait_for(stdio.start("rpc_error"), "failed")
    failure = {"code": -32603, "message": "no database"}
    assert raw == line(response(request_id, task(got, "failed", statusMessage="no database",
                                                 error=failure)))
    raw, request_id, got = stdio.wait_for(stdio.start("tool_error"), "completed")
    result = text("Tool tool_error failed: RuntimeError: disk full", is_error=True)
    assert raw == line(response(request_id, task(got, "completed", result=result)))


# --- Questions: input_required, answered by tasks/update ---

def test_questions_wait_in_the_task_until_tasks_update_answers_them(stdio):
    task_id = stdio.start("ask_twice")
    raw, request_id, got = stdio.wait_for(task_id, "input_required")
    asked = {"answer": ask("First name?")}
    assert raw == line(response(request_id, task(got, "input_required", inputRequests=asked)))
    raw, request_id = stdio.update(task_id, {"answer": answer("Ann")})
    assert raw == line(response(request_id, ACK))
    # The second question has the same key in the tool; on the wire a key is never used twice.
    raw, request_id, got = stdio.wait_for(task_id, "input_required")
    asked = {"answer-2": ask("Last name?")}
    assert raw == line(response(request_id, task(got, "input_required", inputRequests=asked)))
    stdio.update(task_id, {"answer": answer("again"), "answer-2": answer("Lee")})
    raw, request_id, got = stdio.wait_for(task_id, "completed")
    assert raw == line(response(request_id, task(got, "completed", result=text("Ann Lee"))))


def test_questions_asked_together_are_answered_one_at_a_time_or_all_at_once(stdio):
    task_id = stdio.start("ask_pair")
    raw, request_id, got = stdio.wait_for(task_id, "input_required")
    assert got["inputRequests"] == {"a": ask("a?"), "b": ask("b?")}
    raw, request_id = stdio.update(task_id, {"a": answer("Ann"), "unknown": answer("x")})
    assert raw == line(response(request_id, ACK))
    raw, request_id, got = stdio.get(task_id)  # at once: the answered key is gone
    assert raw == line(response(request_id, task(got, "input_required",
                                                 inputRequests={"b": ask("b?")})))
    stdio.update(task_id, {"b": answer("Bo")})
    assert stdio.wait_for(task_id, "completed")[2]["result"] == text("Ann & Bo")
    both = stdio.start("ask_pair")
    stdio.wait_for(both, "input_required")
    stdio.update(both, {"a": answer("Cy"), "b": answer("Di")})
    assert stdio.wait_for(both, "completed")[2]["result"] == text("Cy & Di")


def test_a_sync_tool_asks_in_its_task_too(stdio):
    task_id = stdio.start("ask_sync")
    assert stdio.wait_for(task_id, "input_required")[2]["inputRequests"] == {
        "answer": ask("Name?")}
    stdio.update(task_id, {"answer": answer("Ed")})
    assert stdio.wait_for(task_id, "completed")[2]["result"] == text("hi Ed")


def test_a_malformed_answer_is_refused_and_the_question_stays(stdio):
    task_id = stdio.start("ask_sync")
    stdio.wait_for(task_id, "input_required")
    raw, request_id = stdio.update(task_id, {"answer": {"action": "maybe"}})
    assert raw == error(request_id, {"code": -32602, "message": "Invalid params: a malformed "
                                                                "answer to elicitation/create"})
    raw, request_id = stdio.update(task_id, [])
    not_an_object = 'Invalid params: "inputResponses" must be an object'
    assert raw == error(request_id, {"code": -32602, "message": not_an_object})
    assert stdio.get(task_id)[2]["inputRequests"] == {"answer": ask("Name?")}


def test_a_tool_asks_in_its_call_first_then_in_its_task(stdio):
    raw = stdio.exchange(call(1, "ask_then_task"))
    first = json.loads(raw)["result"]  # SEP-2322's input_required, no task yet
    assert first["inputRequests"] == {"name": ask("Name?")} and "taskId" not in first
    retry = call(2, "ask_then_task")
    retry["params"].update(inputResponses={"name": answer("Al")},
                           requestState=first["requestState"])
    created = json.loads(stdio.exchange(retry))["result"]
    assert created["resultType"] == "task" and "requestState" not in created
    task_id = created["taskId"]
    assert stdio.wait_for(task_id, "input_required")[2]["inputRequests"] == {
        "again": ask("Again?")}
    stdio.update(task_id, {"again": answer("Bea")})
    assert stdio.wait_for(task_id, "completed")[2]["result"] == text("Al, Bea")


def test_a_question_the_tool_stopped_waiting_for_is_asked_no_more(stdio):
    task_id = stdio.start("ask_either")
    both = {"name": ask("Name?"), "nickname": ask("Nickname?")}
    assert stdio.wait_for(task_id, "input_required")[2]["inputRequests"] == both
    stdio.update(task_id, {"name": answer("Ann")})
    got = stdio.wait_for(task_id, "input_required")[2]
    while "again" not in got["inputRequests"]:  # the tool gave up on the nickname, then asked
        got = stdio.wait_for(task_id, "input_required")[2]
    assert got["inputRequests"] == {"again": ask("Again?")}  # no nickname: nobody waits for it
    raw, request_id = stdio.update(task_id, {"nickname": answer("Nan")})  # late: ignored
    assert raw == line(response(request_id, ACK))
    stdio.update(task_id, {"again": answer("Bo")})
    assert stdio.wait_for(task_id, "completed")[2]["result"] == text("Ann, Bo")


# --- Cancellation, expiry, and the server's stop ---

def test_tasks_cancel_stops_a_running_task_and_acknowledges_a_finished_one(stdio):
    task_id = stdio.start("sleeper", {"seconds": 600})
    raw = stdio.exchange(request(5, "tasks/cancel", {"taskId": task_id}))
    assert raw == line(response(5, ACK))
    raw, request_id, got = stdio.get(task_id)
    assert raw == line(response(request_id, task(got, "cancelled",
                                                 statusMessage="cancelled by the client")))
    assert stdio.exchange(request(6, "tasks/cancel", {"taskId": task_id})) == line(
        response(6, ACK))
    assert "sleeper: cancelled" in stdio.close()


@pytest.mark.parametrize("how", ["cancelled", "expired"])
def test_a_sync_tool_waiting_for_an_answer_stops_with_its_task(stdio, how):
    # Its worker thread waits for the answer: the task's end must free it, else each such task
    # holds one of the server's worker threads for good, and the server cannot exit.
    task_id = stdio.start("ask_sync")
    stdio.wait_for(task_id, "input_required")
    if how == "cancelled":
        raw = stdio.exchange(request(5, "tasks/cancel", {"taskId": task_id}))
        assert raw == line(response(5, ACK))
    else:  # past its ttl (an hour) on the server's task clock
        stdio.exchange(call(5, "advance_clock", {"ms": 3_600_001}))
        assert stdio.exchange(request(6, "tasks/get", {"taskId": task_id})) == error(6, NO_TASK)
    served = json.loads(stdio.exchange(call(7, "must_be_task", {"word": "on"})))
    assert served["result"]["resultType"] == "task"  # the server serves on
    assert "Traceback" not in stdio.close()  # and exits (0): no thread waits for an answer


def test_a_task_is_kept_until_its_ttl_has_passed_never_less(stdio):
    task_id = stdio.start("sleeper", {"seconds": 600})  # ttl 1000 ms, on the server's own clock
    stdio.exchange(call(2, "advance_clock", {"ms": 1000}))
    assert stdio.get(task_id)[2]["status"] == "working"  # at its ttl: still there
    stdio.exchange(call(3, "advance_clock", {"ms": 1}))
    raw = stdio.exchange(request(4, "tasks/get", {"taskId": task_id}))
    assert raw == error(4, NO_TASK)  # past it: gone, and its tool stopped
    assert "sleeper: cancelled" in stdio.close()


def test_a_client_that_leaves_cancels_its_running_tasks(stdio):
    task_id = stdio.start("sleeper", {"seconds": 600})
    assert stdio.get(task_id)[2]["status"] == "working"
    assert "sleeper: cancelled" in stdio.close()  # stdin's EOF: the server stops at once


def test_sigterm_cancels_the_running_tasks():
    server = Stdio()
    try:
        server.start("sleeper", {"seconds": 600})
        server.proc.terminate()
        assert server.proc.wait(15) == 0
        assert "sleeper: cancelled" in server.proc.stderr.read().decode()
    finally:
        server.proc.kill()
        server.proc.wait()


# --- Refusals ---

def test_the_refusals(stdio):
    assert stdio.exchange(request(1, "tasks/get", {"taskId": "nope"})) == error(1, NO_TASK)
    assert stdio.exchange(request(2, "tasks/get", {"taskId": 7})) == error(2, NO_TASK)
    assert stdio.exchange(request(3, "tasks/update", {"taskId": "nope", "inputResponses": {}})) \
        == error(3, NO_TASK)
    assert stdio.exchange(request(4, "tasks/cancel", {"taskId": "nope"})) == error(4, NO_TASK)
    for request_id, method in ((5, "tasks/result"), (6, "tasks/list")):  # not in this extension
        assert stdio.exchange(request(request_id, method, {"taskId": "nope"})) == error(
            request_id, {"code": -32601, "message": f"Method not found: {method}"})
    task_id = stdio.start("sleeper", {"seconds": 600})
    for request_id, method in ((7, "tasks/get"), (8, "tasks/cancel")):  # no extension named
        assert stdio.exchange(request(request_id, method, {"taskId": task_id}, tasks=False)) \
            == error(request_id, NEEDS_TASKS)
    legacy = {"jsonrpc": "2.0", "id": 9, "method": "tasks/get", "params": {"taskId": task_id}}
    assert stdio.exchange(legacy) == error(9, {"code": -32601,
                                               "message": "Method not found: tasks/get"})


@pytest.mark.parametrize("arguments", [None, [], "x", 7])
def test_a_call_whose_arguments_are_no_object_is_refused_not_made_a_task(stdio, arguments):
    bad = request(1, "tools/call", {"name": "sleeper", "arguments": arguments})
    assert stdio.exchange(bad) == error(1, {
        "code": -32602, "message": "Invalid params: tools/call needs a name and arguments"})


def test_without_the_extension_a_tool_runs_as_before_or_needs_a_task(stdio):
    raw = stdio.exchange(call(1, "sleeper", {"seconds": 0}, tasks=False))
    assert raw == line(response(1, text("slept 0 s")))
    raw = stdio.exchange(call(2, "must_be_task", {"word": "hi"}, tasks=False))
    assert raw == error(2, NEEDS_TASKS)
    task_id = stdio.start("must_be_task", {"word": "hi"})
    assert stdio.wait_for(task_id, "completed")[2]["result"] == text("HI")


def test_a_legacy_client_never_gets_a_task(stdio):
    stdio.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "clientInfo": {"name": "t", "version": "0"},
        "capabilities": {"extensions": {TASKS: {}}}}})
    stdio.next()
    legacy_call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "sleeper", "arguments": {"seconds": 0}}}
    assert stdio.exchange(legacy_call) == line({"jsonrpc": "2.0", "id": 2,
                                                "result": text("slept 0 s")})
    legacy_call.update(id=3, params={"name": "must_be_task", "arguments": {"word": "x"}})
    assert stdio.exchange(legacy_call) == error(3, NEEDS_TASKS)


# --- Over HTTP: Mcp-Name names the task ---

@pytest.fixture(scope="module")
def http_port():
    yield from http_server_port(SERVER + ["--http", "0"])


def test_over_http_mcp_name_must_name_the_task(http_port):
    def send(message, name=None):
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": message["method"]}
        headers.update({"Mcp-Name": name} if name is not None else {})
        reply = post(http_port, message, headers)
        return reply.status, json.loads(reply.read())

    status, created = send(call(1, "sleeper", {"seconds": 600}), "sleeper")
    task_id = created["result"]["taskId"]
    status, got = send(request(2, "tasks/get", {"taskId": task_id}), task_id)
    assert status == 200 and got["result"]["status"] == "working"
    status, refused = send(request(3, "tasks/get", {"taskId": task_id}), "another-task")
    assert status == 400 and refused["error"] == {
        "code": -32020, "message": f"Header mismatch: Mcp-Name is 'another-task' but the body "
                                   f"says {task_id!r}"}
    status, refused = send(request(4, "tasks/cancel", {"taskId": task_id}))
    assert status == 400 and refused["error"] == {
        "code": -32020, "message": "Header mismatch: Mcp-Name is missing"}
    status, cancelled = send(request(5, "tasks/cancel", {"taskId": task_id}), task_id)
    assert status == 200 and cancelled["result"]["resultType"] == "complete"


# --- Tasks belong to their caller, and only so many are kept (in process: Server.handle) ---

def test_a_task_is_its_callers_only_and_only_so_many_are_kept(monkeypatch):
    server = Server("owners")

    @mcp_tasks.task_tool(server)
    async def wait(ctx: Context) -> str:
        await asyncio.sleep(600)

    async def scenario():
        def as_user(user, request_id, method, params):
            session = new_session(auth={"sub": user})
            return server.handle(request(request_id, method, params), lambda _: None, session)
        created = await as_user("ann", 1, "tools/call", {"name": "wait", "arguments": {}})
        task_id = created["result"]["taskId"]
        assert (await as_user("ann", 2, "tasks/get", {"taskId": task_id}))["result"]["status"] \
            == "working"
        for request_id, method in ((3, "tasks/get"), (4, "tasks/cancel")):
            refused = await as_user("bob", request_id, method, {"taskId": task_id})
            assert refused["error"] == NO_TASK  # as if it did not exist
        monkeypatch.setattr(mcp_tasks, "MAX_TASKS_EACH", 2)
        await as_user("ann", 5, "tools/call", {"name": "wait", "arguments": {}})
        refused = await as_user("ann", 6, "tools/call", {"name": "wait", "arguments": {}})
        assert refused["error"] == {"code": -32603, "message": "Too many tasks kept: retry "
                                                               "when some have expired"}
        assert "result" in await as_user("bob", 7, "tools/call", {"name": "wait", "arguments": {}})
        mcp_tasks.end_tasks(server, None)  # the server stops: every task ends
        assert {task.status for task in mcp_tasks.kept(server).values()} == {"cancelled"}
    asyncio.run(scenario())
