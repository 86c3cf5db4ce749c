"""The client side of the official extensions (issue 34): a tool that answers with a task
(io.modelcontextprotocol/tasks), and skills (io.modelcontextprotocol/skills, SEP-2640).

Tasks: Client.call_tool follows the task to its result, polling tasks/get, answering its input
requests with tasks/update through on_elicit, and sending tasks/cancel when the caller cancels.
Wire tests: a scripted stdio server plays raw lines, and the client's trace gives the exact lines
it sent. Then the same against this project's own server, tests/tasks_server.py (mcp_tasks),
over stdio and Streamable HTTP (where the server refuses a tasks/* request whose Mcp-Name header
does not name its task).

Skills: list_skills and read_skill against this project's mcp_skills serving tests/skills/, and
against tests/tampered_skills_server.py, a real mcp_min server whose skills' entries tell the
truth or lie (digest, size, front matter).
"""
import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from client import TASKS, Client, HTTPClient, SkillError  # noqa: E402
from conftest import http_server_port  # noqa: E402
from mcp_min import MCPError  # noqa: E402
from test_elicit_client import DISCOVERED, play, run  # noqa: E402

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ASK_NAME = {"method": "elicitation/create", "params": {
    "mode": "form", "message": "Your name?", "requestedSchema": NAME_FORM}}


def task(status, **fields):
    """One line: the answer to the request at hand, a task of id t-1 in `status`."""
    result = {"resultType": "complete", "taskId": "t-1", "status": status,
              "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
              "ttlMs": 60000, "pollIntervalMs": 10, **fields}
    return json.dumps({"jsonrpc": "2.0", "id": 0, "result": result}).replace('"id": 0',
                                                                             '"id": "@id"')


CREATED = task("working").replace('"resultType": "complete"', '"resultType": "task"')
ACK = '{"jsonrpc":"2.0","id":"@id","result":{"resultType":"complete"}}'
DONE = task("completed", result={"content": [{"type": "text", "text": "Hello, Ann!"}]})


def requests(sent, method):
    """The params of each request of `method` the client sent."""
    messages = [json.loads(line) for line in sent]
    return [message["params"] for message in messages if message.get("method") == method]


def test_a_task_is_followed_to_its_result_and_its_question_answered_once(tmp_path):
    asked = []

    def on_elicit(message, schema):
        asked.append(message)
        return {"action": "accept", "content": {"name": "Ann"}}
    question = task("input_required", inputRequests={"name": ASK_NAME})
    steps = [[DISCOVERED], [CREATED], [task("working")], [question], [ACK], [question], [DONE]]
    client, sent = play(tmp_path, steps, on_elicit=on_elicit)

    async def body():
        async with client:
            return await client.call_tool("hello")
    assert run(body()) == {"content": [{"type": "text", "text": "Hello, Ann!"}]}
    assert asked == ["Your name?"]  # the same key on the next poll is not asked again
    call = requests(sent, "tools/call")[0]
    capabilities = call["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert capabilities["extensions"] == {TASKS: {}}
    gets = requests(sent, "tasks/get")
    assert len(gets) == 4 and all(params["taskId"] == "t-1" for params in gets)
    update = requests(sent, "tasks/update")
    assert [(p["taskId"], p["inputResponses"]) for p in update] == [
        ("t-1", {"name": {"action": "accept", "content": {"name": "Ann"}}})]
    assert not requests(sent, "tasks/cancel")


def test_a_failed_task_is_the_calls_error_and_a_tool_error_its_result(tmp_path):
    failed = task("failed", error={"code": -32603, "message": "the disk is full"})
    tool_error = task("completed", result={"content": [], "isError": True})
    bare = task("failed", statusMessage="out of luck")  # no error: a broken server
    client, _ = play(tmp_path, [[DISCOVERED], [CREATED], [failed], [CREATED], [tool_error],
                                [CREATED], [bare]])

    async def body():
        async with client:
            with pytest.raises(MCPError) as failure:
                await client.call_tool("fill")
            result = await client.call_tool("fill")
            with pytest.raises(MCPError) as broken:
                await client.call_tool("fill")
            return failure.value, result, broken.value
    error, result, broken = run(body())
    assert (error.code, error.message) == (-32603, "the disk is full")
    assert result == {"content": [], "isError": True}
    assert (broken.code, broken.message) == (-32603, "its task failed: out of luck")


def test_a_task_that_ended_at_once_is_still_asked_for_its_result(tmp_path):
    ended = CREATED.replace('"status": "working"', '"status": "completed"')  # and no result
    client, sent = play(tmp_path, [[DISCOVERED], [ended], [DONE]])

    async def body():
        async with client:
            return await client.call_tool("quick")
    assert run(body())["content"][0]["text"] == "Hello, Ann!"
    assert [params["taskId"] for params in requests(sent, "tasks/get")] == ["t-1"]


def test_a_cancelled_call_cancels_its_task_with_tasks_cancel(tmp_path):
    client, sent = play(tmp_path, [[DISCOVERED], [CREATED], [task("working")]])

    async def body():
        async with client:
            call = asyncio.ensure_future(client.call_tool("slow"))
            while not requests(sent, "tasks/get"):  # the task is being polled
                await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
    run(body())
    assert requests(sent, "tasks/cancel")[0]["taskId"] == "t-1"
    assert not requests(sent, "notifications/cancelled")  # the spec: never for a task


def test_a_task_that_runs_past_task_timeout_is_cancelled(tmp_path):
    client, sent = play(tmp_path, [[DISCOVERED], [CREATED], [task("working")]],
                        task_timeout=0.2)

    async def body():
        async with client:
            with pytest.raises(TimeoutError, match="task_timeout"):
                await client.call_tool("slow")
    run(body())
    assert requests(sent, "tasks/cancel")[0]["taskId"] == "t-1"


def test_tasks_false_declares_no_extension(tmp_path):
    client, sent = play(tmp_path, [[DISCOVERED], [DONE]], tasks=False)

    async def body():
        async with client:
            await client.list_tools()
    run(body())
    assert "extensions" not in json.dumps(requests(sent, "tools/list"))


# --- Tasks against this project's server: tests/tasks_server.py, stdio and HTTP ---

TASKS_SERVER = [sys.executable, str(ROOT / "tests" / "tasks_server.py")]


@pytest.fixture(scope="module")
def tasks_url():
    ports = http_server_port(TASKS_SERVER + ["--http", "0"])
    yield f"http://127.0.0.1:{next(ports)}/mcp"
    ports.close()  # stops the server


def tasks_client(transport, url, **options):
    """A client of tasks_server.py, and the messages it sent and received, as on the wire."""
    lines = []
    trace = lambda direction, line: lines.append((direction, json.loads(line)))  # noqa: E731
    if transport == "stdio":
        return Client(TASKS_SERVER, trace=trace, **options), lines
    return HTTPClient(url, auth=False, trace=trace, **options), lines


NAMES = {"First name?": "Ann", "Last name?": "Lee"}  # what the user answers ask_twice


def sent(lines, method):
    return [message["params"] for direction, message in lines
            if direction == "→" and message.get("method") == method]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_call_tool_returns_a_task_tools_result_answering_its_questions(transport, tasks_url):
    def on_elicit(message, schema):
        return {"action": "accept", "content": {"name": NAMES[message]}}
    client, lines = tasks_client(transport, tasks_url, on_elicit=on_elicit)

    async def body():
        async with client:
            with pytest.raises(MCPError, match="no database"):
                await client.call_tool("rpc_error")  # the task failed: the call's error
            return await client.call_tool("ask_twice")
    assert run(body())["content"] == [{"type": "text", "text": "Ann Lee"}]
    created = [message["result"] for direction, message in lines
               if direction == "←" and message.get("result", {}).get("resultType") == "task"]
    assert len(created) == 2  # each call made a task
    updates = sent(lines, "tasks/update")
    assert [update["taskId"] for update in updates] == [created[1]["taskId"]] * 2
    assert [list(update["inputResponses"]) for update in updates] == [["answer"], ["answer-2"]]
    assert all(get["taskId"] in (created[0]["taskId"], created[1]["taskId"])
               for get in sent(lines, "tasks/get"))


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_cancelled_call_cancels_its_task_on_the_server(transport, tasks_url):
    client, lines = tasks_client(transport, tasks_url)

    async def body():
        async with client:
            call = asyncio.ensure_future(client.call_tool("sleeper", {"seconds": 600}))
            while not sent(lines, "tasks/get"):  # the task is made, and being polled
                await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            task_id = sent(lines, "tasks/get")[0]["taskId"]
            assert sent(lines, "tasks/cancel") == [{"taskId": task_id, "_meta": sent(
                lines, "tasks/get")[0]["_meta"]}]
            status = None
            stopped = transport == "http"  # over stdio, the tool says on stderr that it stopped
            for _ in range(300):  # the spec lets a cancellation take effect later: 15 s at most
                status = (await client.request("tasks/get", {"taskId": task_id}))["status"]
                stopped = stopped or "sleeper: cancelled" in "\n".join(client.stderr_tail)
                if status == "cancelled" and stopped:
                    break
                await asyncio.sleep(0.05)
            return status, stopped
    assert run(body()) == ("cancelled", True)


@pytest.fixture(scope="module")
def conformance_url():
    """tests/conformance_server.py: the task tools the suite's tasks-* scenarios call."""
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "conformance_server.py"),
                                "0"], stderr=subprocess.PIPE, text=True)
    try:
        yield re.search(r"(http://\S+/mcp)", process.stderr.readline()).group(1)
    finally:
        process.terminate()
        process.wait(10)


def test_the_suites_task_tools_through_http_client(conformance_url):
    """Each kind of task the suite's scenarios make, through call_tool: questions before the
    task (SEP-2322) and in it, two at once, a tool error, and a JSON-RPC error."""
    def on_elicit(message, schema):
        content = {"name": "Ann", "confirm": True}
        return {"action": "accept", "content": {key: content[key] for key in schema["properties"]}}

    async def body():
        async with HTTPClient(conformance_url, auth=False, on_elicit=on_elicit) as client:
            texts = [(await client.call_tool(name, arguments))["content"][0]["text"]
                     for name, arguments in [("test_tool_with_task", {}), ("multi_input", {}),
                                             ("confirm_delete", {"filename": "a.txt"})]]
            failed = await client.call_tool("failing_job")
            with pytest.raises(MCPError, match="an internal error, on purpose"):
                await client.call_tool("protocol_error_job")
            return texts, failed["isError"]
    texts, is_error = run(body())
    assert texts == ["Hello, Ann!", "answers: accept, accept", "Deleted a.txt"]
    assert is_error is True


# --- Skills, against a real server whose entries tell the truth or lie ---

SKILLS_SERVER = [sys.executable, str(ROOT / "tests" / "tampered_skills_server.py")]


def with_skills_server(body, legacy=False):
    """body(client, reads) against tampered_skills_server.py; reads: the URIs read so far."""
    reads = []

    def trace(direction, line):
        message = json.loads(line)
        if direction == "→" and message.get("method") == "resources/read":
            reads.append(message["params"]["uri"])

    async def run_body():
        async with Client(SKILLS_SERVER, trace=trace, legacy=legacy) as client:
            return await body(client, reads)
    return run(run_body())


SKILLS_PY = """
import sys
sys.path.insert(0, {root!r})
import mcp_skills
from mcp_min import Server
server = Server("skills")
mcp_skills.add_skills(server, {folder!r})
server.run()
"""


@pytest.mark.parametrize("legacy", [False, True], ids=["2026-07-28", "2025-11-25"])
def test_the_skills_mcp_skills_serves_are_read_and_checked(tmp_path, legacy):
    script = tmp_path / "skills_server.py"
    script.write_text(SKILLS_PY.format(root=str(ROOT), folder=str(ROOT / "tests" / "skills")))

    async def body():
        async with Client([sys.executable, str(script)], legacy=legacy) as client:
            skills = await client.list_skills()
            return skills, await client.read_skill(skills[0]["uri"])
    skills, files = run(body())
    assert [skill["uri"] for skill in skills] == ["skill://pdf-processing/SKILL.md"]
    on_disk = ROOT / "tests" / "skills" / "pdf-processing"
    assert files == {"skill://pdf-processing/SKILL.md": (on_disk / "SKILL.md").read_text(),
                     "skill://pdf-processing/references/FORMS.md":
                         (on_disk / "references" / "FORMS.md").read_text()}


@pytest.mark.parametrize("legacy", [False, True], ids=["2026-07-28", "2025-11-25"])
def test_skills_are_listed_page_by_page_and_nothing_is_read_before_it_is_asked_for(legacy):
    async def body(client, reads):
        skills = await client.list_skills()
        return [skill["uri"] for skill in skills], list(reads)
    uris, reads = with_skills_server(body, legacy)
    assert uris == [f"skill://{name}/SKILL.md" for name in
                    ("good-skill", "bad-digest", "bad-size", "bad-frontmatter")]
    assert reads == []


def test_a_true_skill_is_read_whole_by_entry_or_by_uri():
    async def body(client, reads):
        skill = (await client.list_skills())[0]
        by_entry = await client.read_skill(skill)
        by_uri = await client.read_skill(skill["uri"])  # skills/get finds its entry
        return by_entry, by_uri, reads
    by_entry, by_uri, reads = with_skills_server(body)
    assert by_entry == by_uri
    assert list(by_entry)[0] == "skill://good-skill/SKILL.md"  # read first
    assert by_entry["skill://good-skill/SKILL.md"].startswith("---\nname: good-skill\n")
    assert by_entry["skill://good-skill/references/notes.md"] == "Notes for later.\n"
    assert by_entry["skill://good-skill/assets/logo.bin"] == bytes(range(256))
    assert reads[0] == "skill://good-skill/SKILL.md" and len(reads) == 6


@pytest.mark.parametrize("name, refused, message", [
    ("bad-digest", "references/notes.md", "sha256 digest is not the one its skill lists"),
    ("bad-size", "SKILL.md", "bytes, but its skill lists"),
    ("bad-frontmatter", "SKILL.md", "front matter differs from its skill's entry (description)")])
def test_a_skill_whose_file_lies_is_refused_and_nothing_after_it_is_read(name, refused, message):
    async def body(client, reads):
        with pytest.raises(SkillError, match=re.escape(message)) as error:
            await client.read_skill(f"skill://{name}/SKILL.md")
        return str(error.value), reads
    error, reads = with_skills_server(body)
    assert error.startswith(f"skill://{name}/{refused}: ") and error.endswith("refused unused")
    assert reads[-1] == f"skill://{name}/{refused}"  # the file that failed was the last read


@pytest.mark.parametrize("entry, message", [
    ({"uri": "skill://a/SKILL.md", "resources": [{"uri": "file:///etc/passwd"}]},
     "'file:///etc/passwd', outside its folder"),
    ({"uri": "skill://a/SKILL.md", "resources": [{"uri": "skill://ab/x"}]}, "outside"),
    ({"uri": "https://example.com/a/SKILL.md"}, "is not a skill's URI"),
    ({"uri": "skill://a/README.md"}, "is not a skill's URI")])
def test_a_skill_that_names_a_file_outside_its_folder_is_refused_before_any_read(entry, message):
    async def body(client, reads):
        with pytest.raises(SkillError, match=message):
            await client.read_skill(entry)
        return reads
    assert with_skills_server(body) == []


def test_a_front_matter_value_nested_past_pythons_limit_is_no_match_not_a_crash():
    """A hostile server's SKILL.md may nest a value 100,000 deep: json.loads raises
    RecursionError, which must make the value differ (SkillError), not escape read_skill."""
    import client
    assert client.same_value("[" * 100_000 + "]" * 100_000, []) is False
    assert client.same_value('{"a": [1]}', {"a": [1]}) is True
