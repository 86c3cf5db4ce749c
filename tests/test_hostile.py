"""Hostile peers over stdio, round 2: a server that floods or misbehaves must not hang, kill or
bloat our Client, and a client that floods, stalls or signals must not bloat our server or lose
answers. Spec: basic/transports/stdio, basic/utilities (ping, progress, cancellation).
"""
import asyncio
import json
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from hard_server import COMMAND, RawServer, call, line, rss_kib

from conftest import script_server

from client import Client  # noqa: E402
from mcp_min import MCPError  # noqa: E402


def run(coroutine):
    return asyncio.run(coroutine)


# --- The server: notifications, a stalled client, signals ---

def progress_call(request_id, name, count):
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                        "params": {"name": name, "arguments": {"count": count},
                                   "_meta": {"progressToken": "p"}}}) + "\n").encode()


@pytest.mark.parametrize("tool, count", [("flood", 300_000), ("flood_sync", 20_000)])
def test_a_tool_flooding_progress_to_a_stalled_client_keeps_memory_flat(tool, count):
    """While the client reads nothing, notifications beyond a 1 MiB backlog are skipped (async
    tools) or wait for the event loop (sync tools): memory stays flat, the answer still comes, and
    the progress that does arrive only increases."""
    server = RawServer()
    try:
        baseline = rss_kib(server.proc.pid)
        server.reading.clear()
        server.send(progress_call("flood", tool, count))
        peak, deadline = baseline, time.monotonic() + 3
        while time.monotonic() < deadline:
            peak = max(peak, rss_kib(server.proc.pid))
            time.sleep(0.02)
        server.reading.set()
        progress = []
        while True:
            message = server.recv(60)
            if "id" in message:
                break
            if message["method"] == "notifications/progress":
                progress.append(message["params"]["progress"])
        assert message["result"]["content"][0]["text"] == f"flooded {count}"
        assert progress == sorted(progress) and progress, progress[:5]
        assert peak - baseline < 40_000, f"RSS grew {(peak - baseline) / 1024:.0f} MiB"
        assert server.alive()
    finally:
        server.close()


def test_a_client_that_stops_reading_is_dropped_after_the_write_timeout():
    """Answers pile up for a client that reads nothing: after WRITE_TIMEOUT (2 s in this mode)
    the server says why on stderr and exits, instead of holding its memory forever."""
    server = RawServer("short-timeouts")
    server.reading.clear()
    started = time.monotonic()
    threading.Thread(target=server.send, daemon=True,
                     args=(b"".join(call(i, "big", {"size": 1_000_000}) for i in range(40)),)
                     ).start()
    code = server.proc.wait(120)
    assert time.monotonic() - started < 60  # generous: what it rules out is waiting forever
    assert code == 0
    assert any("read nothing for 2 s" in line for line in server.stderr), server.stderr_tail()
    assert not any("Traceback" in line for line in server.stderr), server.stderr_tail()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_cancels_what_runs_with_an_error(signum):
    """Shutdown: no new requests; each call still running gets an error that says why; exit 0
    with one line on stderr and no traceback. The grace period that let running calls finish
    first was dropped to fit mcp_min.py's size budget: a client sends SIGTERM only after closing
    stdin and waiting, and after EOF every request read is answered (mcp_http keeps its grace)."""
    server = RawServer()
    server.send(call("quick", "sleep", {"seconds": 1}))
    server.send(call("stuck", "hang", {}))
    time.sleep(0.3)
    server.proc.send_signal(signum)
    answers = {}
    while (message := server.recv(10)) is not None:
        answers[message["id"]] = message
    assert server.proc.wait(10) == 0
    for request_id in ("quick", "stuck"):
        assert answers[request_id]["error"] == {
            "code": -32603, "message": "Cancelled: the server is shutting down"}
    said = [line for line in server.stderr if "stopped by" in line]
    assert said == [f"hard: stopped by {signal.Signals(signum).name}; cancelled 2"]
    assert not any("Traceback" in line for line in server.stderr), server.stderr_tail()


def test_a_child_process_of_a_tool_cannot_eat_the_requests(tmp_path):
    """A tool's child inherits fd 0. Pointed at the wire, it read requests meant for the server
    (57 of 101 pipelined pings went unanswered); now it reads /dev/null."""
    argv = script_server(tmp_path, """
        @server.tool()
        def child() -> str:
            'Run a child that reads its stdin to the end.'
            code = 'import sys; print(len(sys.stdin.buffer.read()))'
            done = subprocess.run([sys.executable, '-c', code], stdout=subprocess.PIPE)
            return done.stdout.decode().strip()
        """)
    pings = b"".join(line({"jsonrpc": "2.0", "id": i, "method": "ping"}) for i in range(100))
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdin.write(call("child", "child", {}))
    proc.stdin.flush()
    time.sleep(0.5)  # the child runs now
    out, _ = proc.communicate(pings, timeout=30)
    answers = {answer["id"]: answer for answer in map(json.loads, out.splitlines())}
    assert answers["child"]["result"]["content"] == [{"type": "text", "text": "0"}]
    assert sorted(key for key in answers if key != "child") == list(range(100))


def test_a_closed_stderr_does_not_lose_a_failing_tools_answer(tmp_path):
    """The traceback of a failing tool goes to stderr. A host that closed its end of the pipe made
    that write fail inside the error handler, and the call never got its answer."""
    argv = script_server(tmp_path, """
        @server.tool()
        def fail() -> str:
            'Always fail.'
            raise ValueError('no luck')
        """)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stderr.close()
    out, _ = proc.communicate(call(1, "fail", {}), timeout=30)
    assert out.decode().splitlines() == [
        '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Tool fail failed: '
        'ValueError: no luck"}],"isError":true}}']


def test_sigterm_while_the_last_answers_wait_for_a_client_that_does_not_read(tmp_path):
    """After EOF the server flushes its answers. A client that closed stdin, reads nothing and
    sends SIGTERM (the spec's next step) got a traceback and exit status 1: now exit 0, silently."""
    argv = script_server(tmp_path, """
        @server.tool()
        def big() -> str:
            'Half a megabyte of text, more than a pipe holds.'
            return 'x' * 500_000
        """)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdin.write(call(1, "big", {}))
    proc.stdin.close()
    time.sleep(1)  # the answer is written as far as the pipe takes it; the rest waits
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0
    stderr = proc.stderr.read().decode()
    proc.stdout.close()
    assert "Traceback" not in stderr and "destroyed" not in stderr, stderr


def test_a_tool_that_ignores_its_cancellation_at_shutdown_is_answered_once(tmp_path):
    """On SIGTERM, a call still running gets the shutdown error, and only that: a tool that
    swallows its cancellation and returns must not answer the same id again."""
    argv = script_server(tmp_path, """
        @server.tool()
        async def stubborn() -> str:
            'Ignore the first cancellation, then answer.'
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                pass
            return 'too late'
        """)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdin.write(call(1, "stubborn", {}))
    proc.stdin.flush()
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert out.decode().splitlines() == [
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,'
        '"message":"Cancelled: the server is shutting down"}}']



def test_progress_reported_after_the_call_ended_is_dropped(tmp_path):
    """A tool may hand its Context to a thread or a task that outlives the call. What they report
    after the answer went out is dropped: the spec sends progress only while a request runs."""
    argv = script_server(tmp_path, """
        import threading
        from mcp_min import Context
        reported = threading.Event()

        def report_late(ctx):
            ctx.report_progress(2, 2)  # the call has ended by now
            reported.set()

        @server.tool()
        def late_sync(ctx: Context) -> str:
            'Answer at once; a thread reports progress afterwards.'
            ctx.report_progress(1, 2)
            threading.Timer(0.2, report_late, [ctx]).start()
            return 'answered'

        @server.tool()
        async def late_async(ctx: Context) -> str:
            'Answer at once; a task reports progress afterwards.'
            ctx.report_progress(1, 2)
            asyncio.get_running_loop().call_later(0.2, report_late, ctx)
            return 'answered'

        @server.tool()
        def after() -> str:
            'Answer once the late report is made.'
            reported.wait(10)
            reported.clear()
            return 'after'
        """)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    seen = []  # the id of each answer, and the progress of each notification
    for name in ("late_sync", "late_async"):
        progress = {"_meta": {"progressToken": name}}
        proc.stdin.write(line({"jsonrpc": "2.0", "id": name, "method": "tools/call",
                               "params": {"name": name, "arguments": {}, **progress}}))
        proc.stdin.write(call(f"after {name}", "after", {}))
        proc.stdin.flush()
        while not seen or seen[-1] != f"after {name}":
            message = json.loads(proc.stdout.readline())
            seen.append(message.get("id", message.get("params", {}).get("progress")))
    out, err = proc.communicate(timeout=30)
    assert seen == [1, "late_sync", "after late_sync", 1, "late_async", "after late_async"]
    assert out == b""
    assert proc.returncode == 0 and b"Traceback" not in err, err.decode()


BROKEN_TOOLS = """
    from mcp_min import ToolResult

    @server.tool()
    def not_json() -> ToolResult:
        'An answer JSON cannot carry: the server logs why, and answers an error.'
        return ToolResult('nan', {'value': float('nan')})

    @server.tool()
    def broken(text: str) -> str:
        'A hand-written schema that breaks the server: its catch-all logs a traceback.'
        return text
    server.tools['broken'][1]['inputSchema']['properties'] = ['text']

    @server.tool()
    async def hang() -> str:
        'Run until the shutdown cancels it, which the server logs.'
        await asyncio.sleep(60)
        return 'woke up'
    """


def test_a_closed_stderr_loses_no_answer_wherever_the_server_logs(tmp_path):
    """Besides a failing tool's traceback (above), the server logs an answer it cannot encode, a
    bug caught by its catch-all, and its shutdown. With stderr closed, each of those writes
    raised in place of answering, and the last one made the exit status 1."""
    proc = subprocess.Popen(script_server(tmp_path, BROKEN_TOOLS), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    proc.stderr.close()

    def next_error():
        assert select.select([proc.stdout], [], [], 10)[0], "no answer within 10 s"
        answer = json.loads(proc.stdout.readline())
        return answer["id"], answer["error"]
    for request_id, name in enumerate(["not_json", "broken", "hang"]):
        proc.stdin.write(call(request_id, name, {"text": "x"} if name == "broken" else {}))
    answers = dict([next_error(), next_error()])
    proc.send_signal(signal.SIGTERM)
    answers.update([next_error()])
    assert proc.wait(10) == 0
    assert answers[0]["message"].startswith("Internal error: Out of range float values")
    assert answers[1]["message"].startswith("Internal error: AttributeError")
    assert answers[2]["message"] == "Cancelled: the server is shutting down"


def test_a_client_that_closed_the_servers_stdout_stops_it_with_one_line(tmp_path):
    """Nobody reads the answers any more. asyncio logged a warning for each one (1,995 lines for
    2,000 pings); now the server notices, says so once, stops reading and exits 0."""
    proc = subprocess.Popen(script_server(tmp_path, ""), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    pings = b"".join(line({"jsonrpc": "2.0", "id": i, "method": "ping"}) for i in range(2000))
    _, err = proc.communicate(pings, timeout=30)  # a server that stopped reading: no error here
    assert proc.returncode == 0
    assert err.decode().splitlines() == ["x: the client closed stdout; cancelled 0"]

# --- The client: a server that floods stderr, raises in callbacks, or sends what it should not ---

def test_a_huge_stderr_line_without_newline_does_not_stop_the_client():
    async def main():
        async with Client(COMMAND + ["stderr-long-line"], timeout=20) as client:
            for _ in range(3):
                result = await client.call_tool("echo", {"text": "still here"})
                assert result["content"][0]["text"] == "still here"
            assert client.stderr_tail and len(client.stderr_tail[-1]) < 3000
    run(main())


def test_a_progress_callback_that_raises_is_logged_and_the_reader_goes_on(capfd):
    def broken(progress, total, message):
        raise RuntimeError("the callback broke")

    async def main():
        async with Client(COMMAND, timeout=20) as client:
            result = await client.call_tool("flood_sync", {"count": 3}, on_progress=broken)
            assert result["content"][0]["text"] == "flooded 3"
            after = await client.call_tool("echo", {"text": "after"})
            assert after["content"][0]["text"] == "after"
    run(main())
    assert "the callback broke" in capfd.readouterr().err


def test_an_answer_over_the_limit_fails_only_its_own_request():
    async def main():
        async with Client(COMMAND, timeout=20, max_message_bytes=100_000) as client:
            too_big = asyncio.ensure_future(client.call_tool("big", {"size": 200_000}))
            small = await client.call_tool("big", {"size": 1000})
            with pytest.raises(MCPError) as refused:
                await too_big
            assert len(small["content"][0]["text"]) == 1000
            assert "over this client's 100000-byte limit" in str(refused.value)
            assert "max_message_bytes" in str(refused.value)
            assert (await client.call_tool("echo", {"text": "ok"}))["content"][0]["text"] == "ok"
    run(main())


FAKE_SERVER = '''
import json, os, sys, time
replies = []
def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": "2025-11-25",
              "capabilities": ["not", "an", "object"], "serverInfo": "not an object"}})
    elif method == "notifications/initialized":
        send({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"})
        send({"jsonrpc": "2.0", "id": "srv-sample", "method": "sampling/createMessage"})
    elif method is None:
        replies.append(message)
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "replies":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [
                  {"type": "text", "text": json.dumps(replies)}]}})
        elif name == "no-result":
            send({"jsonrpc": "2.0", "id": request_id})
        elif name == "scalar-result":
            send({"jsonrpc": "2.0", "id": request_id, "result": 5})
        elif name == "bad-error":
            send({"jsonrpc": "2.0", "id": request_id, "error": "not an object"})
        elif name == "ping-id-1e400":  # valid JSON, but no id a reply could echo
            sys.stdout.write('{"jsonrpc": "2.0", "id": 1e400, "method": "ping"}\\n')
            send({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}})
        elif name == "ping-then-exit":  # our pong finds its stdin closed; then it exits
            os.close(0)
            send({"jsonrpc": "2.0", "id": "srv-ping-2", "method": "ping"})
            time.sleep(0.5)
            print("fake server: exiting", file=sys.stderr, flush=True)
            os._exit(4)
'''


@pytest.fixture
def fake_server(tmp_path):
    path = tmp_path / "fake_server.py"
    path.write_text(textwrap.dedent(FAKE_SERVER))
    return [sys.executable, str(path)]


def test_the_servers_ping_gets_an_empty_result_and_other_requests_method_not_found(fake_server):
    async def main():
        async with Client(fake_server, timeout=10) as client:
            assert (client.era, client.capabilities, client.server_info) == ("legacy", {}, {})
            for _ in range(50):  # our replies reach the fake server after our first call, or soon
                result = await client.call_tool("replies")
                replies = json.loads(result["content"][0]["text"])
                if len(replies) == 2:
                    return replies
                await asyncio.sleep(0.1)
            return replies
    replies = {reply["id"]: reply for reply in run(main())}
    assert replies["srv-ping"] == {"jsonrpc": "2.0", "id": "srv-ping", "result": {}}
    assert replies["srv-sample"]["error"]["code"] == -32601


def test_a_server_request_whose_id_cannot_be_echoed_is_ignored(fake_server):
    # The pong could not be encoded: the ValueError ended the client's reader, and every answer
    # after it was lost (each request waited out its timeout).
    async def main():
        async with Client(fake_server, timeout=10) as client:
            assert await client.call_tool("ping-id-1e400") == {"content": []}
            assert (await client.call_tool("replies"))["content"]
            assert not client.reader_task.done()
    run(main())


def test_a_reply_to_a_server_that_closed_its_stdin_does_not_stop_the_client(fake_server):
    # The pong's ConnectionError ended the reader: the server's exit went unseen, and the call
    # waited out its timeout instead of failing at once with the server's last words.
    async def main():
        async with Client(fake_server, timeout=120) as client:
            started = time.monotonic()
            with pytest.raises(ConnectionError) as caught:
                await client.call_tool("ping-then-exit")
            assert time.monotonic() - started < 60  # not the call's timeout
            assert "exited with code 4" in str(caught.value)
            assert "fake server: exiting" in str(caught.value)
    run(main())


@pytest.mark.parametrize("tool", ["no-result", "scalar-result", "bad-error"])
def test_a_malformed_answer_fails_its_request_with_mcperror(fake_server, tool):
    async def main():
        async with Client(fake_server, timeout=10) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool(tool)
            assert "malformed answer" in str(caught.value)
            assert (await client.call_tool("replies"))["content"]  # the client goes on
    run(main())
