"""Faults: stdin closing under load, hanging tools, a server that crashes, never starts, or writes
garbage, tools that misbehave, and a client that stops reading. The server never loses a reply it
owes and never corrupts stdout; client.Client fails fast, says what happened, and reaps the
process."""
import asyncio, collections, json, os, signal, sys, threading, time

import pytest

from hard_server import COMMAND, RawServer, call, id_key, line, mcp_min, reaped, rss_kib

from client import Client  # noqa: E402
MCPError = mcp_min.MCPError
# Seconds. What "at once" must beat: the client timeouts these tests set are LONG (or longer), so
# a failure that waits for one still fails, and a busy machine never takes FAST to answer.
FAST = 60
LONG = 2 * FAST


def text(result):
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


async def eventually(condition, timeout=FAST):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


# --- stdin closes with many requests in flight ---

def test_stdin_closed_with_1000_requests_in_flight():
    """Every request read before EOF is answered, then the server exits 0."""
    server = RawServer()
    try:
        kinds = [lambda i: call(i, "sleep", {"seconds": 0.2}),
                 lambda i: call(i, "echo", {"text": f"t{i}"}),
                 lambda i: line({"jsonrpc": "2.0", "id": i, "method": "ping"}),
                 lambda i: call(i, "sleep_sync", {"seconds": 0.001})]
        server.send(b"".join(kinds[i % 4](i) for i in range(1000)))
        server.proc.stdin.close()
        answered = collections.Counter()
        while (message := server.recv(20)) is not None:
            answered[id_key(message["id"])] += 1
            assert "result" in message and not message["result"].get("isError"), message
        assert answered == collections.Counter(id_key(i) for i in range(1000))
        assert server.close(10) == 0, server.stderr_tail()
        assert server.problems == []
    finally:
        server.kill()


# --- hanging tools ---

def test_hanging_tool_times_out_is_cancelled_and_the_server_stays_usable():
    async def main():
        trace = []
        async with Client(COMMAND, trace=lambda direction, text: trace.append((direction, text)),
                          timeout=LONG) as client:
            started = time.monotonic()
            with pytest.raises(TimeoutError) as caught:
                await client.call_tool("hang", timeout=0.5)
            # its own timeout, not the client-wide one
            assert 0.5 <= time.monotonic() - started < FAST
            assert "no answer within 0.5" in str(caught.value) and "cancel" in str(caught.value)
            sent = [json.loads(text) for direction, text in trace if direction == "→"]
            hang_id = next(m["id"] for m in sent if m.get("params", {}).get("name") == "hang")
            cancels = [m for m in sent if m.get("method") == "notifications/cancelled"]
            assert [m["params"]["requestId"] for m in cancels] == [hang_id]
            assert await eventually(
                lambda: any("hang was cancelled" in line for line in client.stderr_tail))
            assert text(await client.call_tool("echo", {"text": "after"})) == "after"
            assert text(await client.call_tool("echo_async", {"text": "after"})) == "after"
            # No late answer for the cancelled request turned up.
            assert not any(json.loads(t).get("id") == hang_id for d, t in trace if d == "←")
    asyncio.run(main())


def test_timeout_message_names_the_tool():
    """'tools/call: no answer within 0.5 s' does not say which of many concurrent calls timed
    out."""
    async def main():
        async with Client(COMMAND, timeout=10) as client:
            with pytest.raises(TimeoutError) as caught:
                await client.call_tool("hang", timeout=0.3)
            assert "hang" in str(caught.value), str(caught.value)
    asyncio.run(main())


def test_cooperative_sync_tool_stops_when_cancelled():
    async def main():
        async with Client(COMMAND, timeout=10) as client:
            with pytest.raises(TimeoutError):
                await client.call_tool("hang_sync_coop", timeout=0.3)
            assert await eventually(
                lambda: any("saw the cancel" in line for line in client.stderr_tail))
            assert text(await client.call_tool("echo", {"text": "ok"})) == "ok"
    asyncio.run(main())


def test_hung_sync_tools_do_not_starve_other_sync_tools():
    """40 sync tools stuck for good (timed out and cancelled by the client) must not leave every
    later sync tool waiting for a free worker thread."""
    async def main():
        async with Client(COMMAND, timeout=10) as client:
            results = await asyncio.gather(*(client.call_tool("hang_sync", timeout=0.5)
                                             for _ in range(40)),
                                           return_exceptions=True)
            assert all(isinstance(r, TimeoutError) for r in results), results
            assert text(await client.call_tool("echo_async", {"text": "async ok"})) == "async ok"
            echoed = await client.call_tool("echo", {"text": "sync ok"}, timeout=FAST)
            assert text(echoed) == "sync ok"
    asyncio.run(main())


def test_eof_with_a_hung_sync_tool_cancelled_closes_stdout_and_sigterm_ends_it():
    """Spec: a server SHOULD exit promptly when stdin closes. A cancelled request owes no answer,
    so stdout closes at once. Sync tools run in Python's thread pool (the self-managed daemon pool
    was dropped to fit the size budget): a thread stuck for good keeps the process, and SIGTERM,
    which every client sends next, ends it at once."""
    server = RawServer()
    try:
        server.send(call(1, "hang_sync", {}))
        time.sleep(0.3)
        server.send(line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 1}}))
        assert server.alive()
        server.proc.stdin.close()
        assert server.recv(FAST) is None  # stdout closed: EOF
        server.proc.terminate()
        assert server.proc.wait(5) == -15
        assert server.problems == []
    finally:
        server.kill()


# --- the server dies, never starts, or corrupts stdout: the client fails fast and says why ---

def check_gone(client):
    assert client.process.returncode is not None
    assert reaped(client.process.pid), "the server process is still there (a zombie?)"


def test_server_crashes_mid_call():
    async def main():
        client = Client(COMMAND, timeout=LONG)
        async with client:
            others = [asyncio.ensure_future(client.call_tool("sleep", {"seconds": LONG}))
                      for _ in range(5)]
            await asyncio.sleep(0.1)
            started = time.monotonic()
            with pytest.raises(ConnectionError) as caught:
                await client.call_tool("crash", {"code": 3})
            message = str(caught.value)
            assert time.monotonic() - started < FAST
            assert "exited with code 3" in message, message
            assert "crash tool called, exiting with code 3" in message, message  # the stderr tail
            for other in others:  # every waiting call fails too, at once
                with pytest.raises(ConnectionError):
                    await asyncio.wait_for(other, FAST)
            started = time.monotonic()
            with pytest.raises(ConnectionError) as later:
                await client.call_tool("echo", {"text": "x"})
            assert time.monotonic() - started < FAST and "exited with code 3" in str(later.value)
        check_gone(client)
    asyncio.run(main())


LEAVES_A_CHILD = """
import os, pathlib, subprocess, sys
sys.path.insert(0, sys.argv[1])
from mcp_min import Server
server = Server("parent")

@server.tool()
def start_child(then_exit: bool) -> str:
    'Start a child that outlives the server and holds its stderr; maybe exit at once.'
    child = subprocess.Popen(["sleep", "600"])
    pathlib.Path(sys.argv[2]).write_text(str(child.pid))
    if then_exit:
        os._exit(3)
    return "started"

server.run()
"""


@pytest.mark.parametrize("then_exit", [False, True], ids=["close", "crash"])
def test_a_child_left_running_with_the_servers_stderr_does_not_hold_the_client(tmp_path,
                                                                              then_exit):
    # process.wait() waits for the pipes too: close() took as long as the child lived (and
    # waited for the stderr reader forever), and a crash was seen only at the call's timeout.
    script, pid_file = tmp_path / "leaves_a_child.py", tmp_path / "child.pid"
    script.write_text(LEAVES_A_CHILD)
    command = [sys.executable, str(script), os.path.dirname(mcp_min.__file__), str(pid_file)]

    async def main():
        client = Client(command, timeout=LONG)
        async with client:
            started = time.monotonic()
            if then_exit:
                with pytest.raises(ConnectionError) as caught:
                    await client.call_tool("start_child", {"then_exit": True})
                assert "exited with code 3" in str(caught.value)
            else:
                await client.call_tool("start_child", {"then_exit": False})
        assert time.monotonic() - started < FAST
        check_gone(client)
    try:
        asyncio.run(main())
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_server_killed_by_a_signal():
    async def main():
        client = Client(COMMAND, timeout=LONG)
        async with client:
            waiting = asyncio.ensure_future(client.call_tool("sleep", {"seconds": LONG}))
            await asyncio.sleep(0.1)
            os.kill(client.process.pid, signal.SIGKILL)
            with pytest.raises(ConnectionError) as caught:
                await asyncio.wait_for(waiting, FAST)
            assert "was killed by SIGKILL" in str(caught.value), str(caught.value)
        check_gone(client)
    asyncio.run(main())


def start_fails(mode, expected_exception, limit=FAST, **client_options):
    async def main():
        client = Client(COMMAND + [mode], **{"timeout": LONG, "probe_timeout": LONG,
                                             **client_options})
        started = time.monotonic()
        with pytest.raises(expected_exception) as caught:
            async with client:
                pass
        elapsed = time.monotonic() - started
        assert elapsed < limit, f"took {elapsed:.1f} s"
        check_gone(client)
        return str(caught.value)
    return asyncio.run(main())


def test_server_exits_at_start():
    message = start_fails("exit-at-start", ConnectionError)
    assert "exited with code 3" in message, message
    assert "exit-at-start mode, exiting with code 3" in message, message  # the stderr tail


def test_server_exits_at_start_repeatedly():
    """The race between the exit and the first write: the message must name the exit every time."""
    for _ in range(5):
        message = start_fails("exit-at-start", ConnectionError)
        assert "exited with code 3" in message and "exit-at-start mode" in message, message


def test_server_writes_garbage_to_stdout():
    message = start_fails("garbage-stdout", ConnectionError)
    assert "hard_server: this is not JSON-RPC" in message, message
    assert "stdout" in message and "stderr" in message, message  # what happened, and what to do
    assert "garbage-stdout mode" in message, message  # the stderr tail


def test_server_floods_stdout_with_garbage():
    message = start_fails("garbage-flood", ConnectionError)
    assert "stdout" in message and str(mcp_min.MAX_MESSAGE_BYTES) in message, message


def test_server_never_answers():
    """A server that never reads stdin: bounded by the client's timeouts, then the process is
    stopped."""
    message = start_fails("hang-at-start", TimeoutError, timeout=1, probe_timeout=0.5)
    assert "no answer within" in message, message
    assert "hang-at-start mode, never answering" in message, message  # the stderr tail says why


def test_command_that_does_not_exist():
    async def main():
        client = Client(["/nonexistent/mcp-server-binary"])
        with pytest.raises(ConnectionError) as caught:
            async with client:
                pass
        return str(caught.value)
    message = asyncio.run(main())
    assert "/nonexistent/mcp-server-binary" in message and "No such file" in message, message


def test_server_floods_stderr():
    """4 MB of logs before serving: the client drains stderr, so the server never blocks on it."""
    async def main():
        async with Client(COMMAND + ["stderr-flood"], timeout=20) as client:
            assert text(await client.call_tool("echo", {"text": "fine"})) == "fine"
            assert any("stderr flood line 039999" in line for line in client.stderr_tail)
    asyncio.run(main())


def test_client_closed_while_calls_wait():
    """Leaving `async with` while calls still wait (one on a tool that never ends) fails them at
    once; none is left waiting for its 60 s timeout. The client closes the server's stdin, waits
    2 s, then sends SIGTERM: the server answers each running call with its shutdown error. (With
    the 5 s grace period mcp_min had, SIGKILL came first, and the calls failed with
    ConnectionError.)"""
    async def main():
        async with Client(COMMAND, timeout=LONG) as client:
            waiting = [asyncio.ensure_future(client.call_tool("hang")),
                       asyncio.ensure_future(client.call_tool("sleep", {"seconds": LONG}))]
            await asyncio.sleep(0.2)
        started = time.monotonic()
        for call_ in waiting:
            with pytest.raises(mcp_min.MCPError, match="Cancelled: the server is shutting down"):
                await asyncio.wait_for(call_, FAST)
        assert time.monotonic() - started < FAST
        check_gone(client)
    asyncio.run(main())


# --- tools that misbehave: still exactly one answer, nothing but JSON-RPC on stdout ---

def test_tool_writing_to_stdout_cannot_corrupt_the_stream():
    server = RawServer()
    try:
        got = server.exchange([call(1, "noisy", {"text": "clean"})], wait_for_ids=[1])
        assert [m["result"]["content"][0]["text"] for m in got] == ["clean"]
        time.sleep(0.2)
        assert any("noisy: print()" in line for line in server.stderr)
        assert any("noisy: os.write(1)" in line for line in server.stderr)
        assert any("a child process" in line for line in server.stderr)
        assert server.close() == 0 and server.problems == []
    finally:
        server.kill()


@pytest.mark.parametrize("kind", ["nan", "datetime", "set", "deep"])
def test_result_json_cannot_encode_still_gets_one_answer(kind):
    """A tool result holding NaN, a datetime, a set, or nesting too deep: one error answer, not
    silence."""
    server = RawServer()
    try:
        got = server.exchange([call(1, "bad_result", {"kind": kind})], timeout=FAST,
                              wait_for_ids=[1])
        assert len(got) == 1 and got[0]["id"] == 1, got
        assert "error" in got[0] or got[0]["result"]["isError"], got
        assert server.alive() and server.close() == 0 and server.problems == []
    finally:
        server.kill()


def test_tool_raising_systemexit_is_a_tool_error():
    """argparse and careless libraries call sys.exit(): that is the tool failing, not the server."""
    server = RawServer()
    try:
        server.send(call(0, "sleep", {"seconds": 0.5}))
        got = server.exchange([call(1, "sys_exit", {"code": 2})], timeout=FAST, wait_for_ids=[1])
        assert [m["id"] for m in got] == [1], got
        assert "error" in got[0] or got[0]["result"]["isError"], got
        assert server.recv(FAST)["id"] == 0  # the request running alongside is still answered
        assert server.alive() and server.close() == 0 and server.problems == []
    finally:
        server.kill()


def test_result_over_the_message_limit():
    """A result larger than MAX_MESSAGE_BYTES: that one call fails, saying so; the connection lives
    on. (The client refuses lines over MAX_MESSAGE_BYTES, so the server must not send one.)"""
    async def main():
        async with Client(COMMAND, timeout=20) as client:
            size = mcp_min.MAX_MESSAGE_BYTES + 1000
            try:
                result = await client.call_tool("big", {"size": size})
                assert result["isError"], "a result over the limit came back whole"
                message = text(result)
            except MCPError as e:
                message = str(e)
            assert "bytes" in message or "large" in message, message
            assert text(await client.call_tool("echo", {"text": "still here"})) == "still here"
    asyncio.run(main())


# --- a client that stops reading ---

def slow_reader(server, count, size, stall):
    """Send `count` calls of `size`-byte results without reading stdout for `stall` seconds, then
    read everything. Returns (baseline RSS, peak RSS) of the server in KiB."""
    pid = server.proc.pid
    assert server.exchange([call("warm", "big", {"size": size})], wait_for_ids=["warm"])
    baseline, peak, done = rss_kib(pid), [0], threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], rss_kib(pid))
            except (FileNotFoundError, RuntimeError):
                return
            time.sleep(0.02)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    server.reading.clear()
    writer = threading.Thread(target=server.send,
                              args=(b"".join(call(i, "big", {"size": size})
                                             for i in range(count)),),
                              daemon=True)
    writer.start()
    time.sleep(stall)
    stalled_peak = peak[0]
    server.reading.set()
    answered = collections.Counter()
    for _ in range(count):
        message = server.recv(30)
        assert len(message["result"]["content"][0]["text"]) == size
        answered[message["id"]] += 1
    writer.join(30)
    done.set()
    sampler.join()
    assert answered == collections.Counter(range(count))
    return baseline, stalled_peak, peak[0]


@pytest.mark.parametrize("count, size", [(8_000, 64_000), (300, 1_000_000)],
                         ids=["64kB-answers", "1MB-answers"])
def test_slow_reader_server_memory_stays_bounded(count, size):
    """Half a GB of 64 kB answers, or 300 answers of 1 MB, to a client that reads nothing for 2 s:
    the server stops reading requests instead of buffering answers (it lets answers out every 16
    lines, so its 1 MiB write-buffer check sees them); its RSS stays within +100 MB; then all are
    answered."""
    server = RawServer()
    try:
        baseline, stalled, peak = slow_reader(server, count, size, stall=2)
        assert stalled - baseline < 100_000, (
            f"RSS grew {(stalled - baseline) / 1024:.0f} MiB while stalled")
        assert peak - baseline < 100_000, f"RSS grew {(peak - baseline) / 1024:.0f} MiB"
        assert server.close() == 0 and server.problems == []
    finally:
        server.kill()
