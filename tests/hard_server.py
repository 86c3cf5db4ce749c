"""A small mcp_min server for the hardening tests, and RawServer, the harness that drives it line
by line.

    python tests/hard_server.py [mode]

Modes (argv[1]):
    short-timeouts   WRITE_TIMEOUT 2 s instead of 30 s
    stderr-long-line write a 5 MB line to stderr, drawn with \r, before serving
    (none)           serve normally
    exit-at-start    write a line to stderr and exit with code 3 before reading anything
    garbage-stdout   write a non-JSON line to the real stdout, then serve normally
    garbage-flood    write 6 MB without a newline to the real stdout, then serve normally
    hang-at-start    never read stdin, never answer (sleeps for an hour)
    stderr-flood     write 4 MB to stderr before serving

Tools: echo, echo_async, add, sleep, sleep_sync, hang, hang_sync, hang_sync_coop, crash, big,
big_sync, noisy, bad_result, sys_exit, flood, flood_sync. The tests import this file for
RawServer; only running it serves.
"""
import asyncio
import collections
import datetime
import io
import json
import os
import pathlib
import queue
import subprocess
import sys
import threading
import time
import typing

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import mcp_min  # noqa: E402,F401  (re-exported: the tests read its limits)
from mcp_min import Context, Server, ToolResult  # noqa: E402

server = Server("hard", "1.0.0")


@server.tool()
def echo(text: str) -> str:
    """Return the text (a sync tool: it runs in a worker thread)."""
    return text


@server.tool()
async def echo_async(text: str) -> str:
    """Return the text (an async tool)."""
    return text


@server.tool()
def add(a: int, b: int = 0) -> int:
    """a + b."""
    return a + b


@server.tool()
async def sleep(seconds: float) -> str:
    """asyncio.sleep, then "slept"."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def sleep_sync(seconds: float) -> str:
    """time.sleep in the worker thread, then "slept"."""
    time.sleep(seconds)
    return "slept"


@server.tool()
async def hang() -> str:
    """Never returns (async); says so on stderr when cancelled."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        print("hard_server: hang was cancelled", file=sys.stderr, flush=True)
        raise
    return "unreachable"


@server.tool()
def hang_sync() -> str:
    """Never returns: blocks its worker thread forever, as a stuck network call would."""
    threading.Event().wait()
    return "unreachable"


@server.tool()
def hang_sync_coop(ctx: Context) -> str:
    """Blocks its worker thread until the request is cancelled (it watches ctx.cancelled)."""
    while not ctx.cancelled:
        time.sleep(0.01)
    print("hard_server: hang_sync_coop saw the cancel", file=sys.stderr, flush=True)
    return "cancelled"


@server.tool()
def crash(code: int = 3) -> str:
    """Kill the whole server process mid-call with os._exit(code)."""
    print(f"hard_server: crash tool called, exiting with code {code}", file=sys.stderr, flush=True)
    os._exit(code)


@server.tool()
async def big(size: int) -> str:
    """A text result of `size` bytes (async)."""
    return "x" * size


@server.tool()
def big_sync(size: int) -> str:
    """A text result of `size` bytes (sync)."""
    return "x" * size


@server.tool()
def noisy(text: str) -> str:
    """Writes to stdout in every way a careless tool could (print, fd 1, a child process), then
    returns the text."""
    print("noisy: print() to stdout")
    sys.stdout.write("noisy: sys.stdout.write\n")
    sys.stdout.flush()
    os.write(1, b"noisy: os.write(1)\n")
    subprocess.run(["echo", "noisy: a child process writing to its stdout"], check=False)
    return text


@server.tool()
def bad_result(kind: typing.Literal["datetime", "nan", "set", "deep"]) -> ToolResult:
    """Return a result that JSON cannot encode: the request must still get exactly one answer."""
    if kind == "datetime":
        return ToolResult("a datetime", structured={"when": datetime.datetime(2026, 1, 1)})
    if kind == "nan":
        return ToolResult("a NaN", structured={"value": float("nan")})
    if kind == "set":
        return ToolResult([{"type": "text", "text": {1, 2}}])
    deep = []
    for _ in range(100_000):
        deep = [deep]
    return ToolResult("deep", structured={"deep": deep})


@server.tool()
def sys_exit(code: int = 2) -> str:
    """Raise SystemExit, as argparse or a careless library does."""
    sys.exit(code)


@server.tool()
async def flood(count: int, ctx: Context) -> str:
    """Report progress `count` times without waiting (async), then answer."""
    for step in range(count):
        ctx.report_progress(step + 1, count)
    return f"flooded {count}"


@server.tool()
def flood_sync(count: int, ctx: Context) -> str:
    """Report progress `count` times from a worker thread, then answer."""
    for step in range(count):
        ctx.report_progress(step + 1, count)
    return f"flooded {count}"


def main(mode):
    if mode == "short-timeouts":  # a client that stops reading is dropped after 2 s, not 30
        mcp_min.WRITE_TIMEOUT = 2.0
    if mode == "stderr-long-line":  # 5 MB on stderr without a newline, as a progress bar draws
        for percent in range(50_000):
            sys.stderr.write(f"\rloading {percent:06d} " + "#" * 90)
        sys.stderr.write("\n")
        sys.stderr.flush()
    if mode == "exit-at-start":
        print("hard_server: exit-at-start mode, exiting with code 3 before serving",
              file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "garbage-stdout":
        print("hard_server: garbage-stdout mode, writing a non-JSON line to stdout",
              file=sys.stderr, flush=True)
        os.write(1, b"hard_server: this is not JSON-RPC\n")
    if mode == "garbage-flood":
        data = b"z" * (6 * 1024 * 1024)
        while data:
            data = data[os.write(1, data):]
    if mode == "hang-at-start":
        print("hard_server: hang-at-start mode, never answering", file=sys.stderr, flush=True)
        time.sleep(3600)
    if mode == "stderr-flood":
        for i in range(40_000):
            sys.stderr.write(f"hard_server: stderr flood line {i:06d} " + "." * 80 + "\n")
        sys.stderr.flush()
    server.run()


# --- The harness the tests use: a live server subprocess driven with raw lines ---

COMMAND = [sys.executable, str(HERE / "hard_server.py")]
INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}


def line(message):
    """One message as the bytes of one line."""
    return (json.dumps(message) + "\n").encode()


def call(request_id, name, arguments):
    """A tools/call request line."""
    return line({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                 "params": {"name": name, "arguments": arguments}})


def strict_loads(text):
    def no_constant(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=no_constant)


def shape_problem(line):
    """None if `line` (bytes, newline included) is one valid JSON-RPC 2.0 message from a server,
    else why not."""
    if not line.endswith(b"\n") or b"\n" in line[:-1]:
        return "not exactly one newline-terminated line"
    try:
        message = strict_loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        return f"not UTF-8 JSON: {e}"
    if not isinstance(message, dict):
        return "not a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0"'
    if "id" in message:
        request_id = message["id"]
        if not (request_id is None or isinstance(request_id, str)
                or (isinstance(request_id, int) and not isinstance(request_id, bool))):
            return f"bad id {request_id!r}"
        if ("result" in message) == ("error" in message):
            return "a response needs exactly one of result and error"
        if "error" in message:
            error = message["error"]
            if not (isinstance(error, dict) and isinstance(error.get("code"), int)
                    and isinstance(error.get("message"), str)):
                return "error needs an integer code and a string message"
        if "method" in message:
            return "a server request: this server has no reason to send one"
        return None
    if (isinstance(message.get("method"), str) and "result" not in message
            and "error" not in message):
        return None  # a notification
    return "neither a response nor a notification"


def id_key(request_id):
    """Dict key for an id that keeps 1 and "1" (and True) apart."""
    return (type(request_id).__name__, request_id)


class RawServer:
    """One hard_server subprocess. Every stdout line is checked by shape (see `problems`) and
    queued parsed; stderr is drained by a thread (a full stderr pipe would block the server) and
    kept in `stderr`."""

    def __init__(self, *args, initialize=True):
        self.proc = subprocess.Popen(COMMAND + list(args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        self.messages, self.problems, self.stdout_lines = queue.Queue(), [], 0
        self.stderr = collections.deque(maxlen=400)
        self.sync_count = 0
        # clear it to stop reading stdout (a slow reader); set it to go on
        self.reading = threading.Event()
        self.reading.set()
        self.threads = [threading.Thread(target=self._read_stdout, daemon=True),
                        threading.Thread(target=self._read_stderr, daemon=True)]
        for thread in self.threads:
            thread.start()
        if initialize:
            reply = self.request(INIT)
            assert "result" in reply, reply
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read_stdout(self):
        # a raw pipe's readline reads byte by byte
        stdout = io.BufferedReader(self.proc.stdout, 1 << 16)
        for line in iter(stdout.readline, b""):
            self.reading.wait()
            self.stdout_lines += 1
            problem = shape_problem(line)
            if problem:
                self.problems.append(f"{problem}: {line[:300]!r}")
                continue
            self.messages.put(strict_loads(line.decode()))
        self.messages.put(None)  # EOF

    def _read_stderr(self):
        for line in io.BufferedReader(self.proc.stderr, 1 << 16):
            self.stderr.append(line.decode(errors="replace").rstrip("\n"))

    def stderr_tail(self, n=15):
        return "\n".join(list(self.stderr)[-n:])

    def send(self, data):
        """A dict is encoded as one line; bytes are written exactly as given (add the newline
        yourself)."""
        if isinstance(data, dict):
            data = (json.dumps(data) + "\n").encode()
        self.proc.stdin.write(data)

    def recv(self, timeout=10.0):
        """The next message; None at EOF. Raises TimeoutError, with the server's stderr tail."""
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no message from the server within {timeout} s; "
                               f"alive: {self.proc.poll() is None}; "
                               f"stderr tail:\n{self.stderr_tail()}") from None

    def request(self, message, timeout=10.0):
        """Send one request and return its response (asserting nothing else arrives first)."""
        self.send(message)
        reply = self.recv(timeout)
        assert reply is not None and reply.get("id") == message["id"], (reply, self.stderr_tail())
        return reply

    def exchange(self, data, timeout=10.0, wait_for_ids=()):
        """Send `data` (bytes, or a list of dicts/bytes), then a ping; return every message that
        arrives before the ping's answer (and before the answers to `wait_for_ids`, if they come
        later)."""
        for item in data if isinstance(data, list) else [data]:
            self.send(item)
        self.sync_count += 1
        sync_id = f"sync-{self.sync_count}"
        self.send({"jsonrpc": "2.0", "id": sync_id, "method": "ping"})
        waiting, got = {id_key(sync_id)} | {id_key(i) for i in wait_for_ids}, []
        deadline = time.monotonic() + timeout
        while waiting:
            message = self.recv(max(0.01, deadline - time.monotonic()))
            assert message is not None, (
                f"the server closed stdout; stderr tail:\n{self.stderr_tail()}")
            if message.get("id") == sync_id and isinstance(message.get("id"), str):
                assert message.get("result") == {}, message
                waiting.discard(id_key(sync_id))
                continue
            if "id" in message:
                waiting.discard(id_key(message["id"]))
            got.append(message)
        return got

    def alive(self):
        """The process runs and answers a ping."""
        return self.proc.poll() is None and self.exchange([], timeout=5.0) == []

    def close(self, timeout=10.0):
        """Close stdin, wait for the exit; the exit code (kills the server and raises if it does not
        exit)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise TimeoutError(f"the server did not exit within {timeout} s of stdin closing; "
                               f"stderr tail:\n{self.stderr_tail()}") from None
        for thread in self.threads:
            thread.join(5)
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


def rss_kib(pid):
    """Resident set size of a process, from /proc/PID/status (KiB)."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def reaped(pid):
    """True when the process is gone for good: no /proc entry, so not running and not a zombie
    either."""
    return not pathlib.Path(f"/proc/{pid}").exists()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
