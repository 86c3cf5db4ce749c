"""Shared fixtures: one embedding model and one index of docs/ per test session, and a way
to keep one server.py subprocess (driven by client.Client) alive across many tests.

Loading the model takes seconds, so every fixture that needs it is session-scoped.
"""

import asyncio
import contextlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT))
# One compute thread for torch, faiss and BLAS, here and in every process a test starts: `make
# test` runs two workers on two cores, and a second thread each only contends for a core (its
# waits spin): a build of tests/eval/ts_jest took 16% more CPU time with two.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import index_build  # noqa: E402  (needs the sys.path line above)
from client import Client  # noqa: E402

# What `make index` tells index_build.py about docs/ (--name, --description); the Makefile
# says the same (tests/test_server.py checks that).
DOCS_NAME = "The Wandering Kettle"
DOCS_DESCRIPTION = ("the documents of a cafe: its menu and prices, opening hours, the address "
                    "and how to get there, accessibility, wifi and power sockets, allergies and "
                    "dietary options, the staff handbook (shifts, uniform, tips), the history of "
                    "the shop, suppliers and sustainability, and events, table bookings and "
                    "private hire")


@pytest.fixture(scope="session")
def model():
    return index_build.load_model()


@pytest.fixture(scope="session")
def built_index(tmp_path_factory, model):
    """An index of the real docs/ folder as `make index` builds it, once, into a temporary
    folder."""
    index_dir = tmp_path_factory.mktemp("docs-index") / "index"
    index_build.build_index(DOCS, index_dir, model=model, name=DOCS_NAME,
                            description=DOCS_DESCRIPTION)
    return index_dir


@pytest.fixture
def small_docs(tmp_path):
    """A docs folder of three real cafe files, in a temporary folder of its own."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("faq.txt", "hours_access.txt", "menu_prices.txt"):
        shutil.copy(DOCS / name, docs / name)
    return docs


class LiveServer:
    """A server subprocess shared by many tests.

    client.Client is asyncio-based and its connection belongs to one event loop, so the
    loop runs in a background thread and each test hands it one coroutine at a time.
    """

    def __init__(self, command, timeout=120, env=None):
        self.timeout = timeout
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = Client(command, timeout=timeout, env=env)
        self.run(self.client.__aenter__())

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(self.timeout)

    def call(self, tool, arguments=None):
        return self.run(self.client.call_tool(tool, arguments or {}))

    def list_tools(self):
        return self.run(self.client.list_tools())

    def close(self):
        self.run(self.client.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def http_server_port(command):
    """Run `command`, an mcp_min server given `--http 0`, until the test module ends: yields the
    port it chose, from the line it logs first ("... on http://127.0.0.1:PORT/mcp")."""
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", process.stderr.readline())
        assert found
        yield int(found.group(1))
    finally:
        process.terminate()
        process.wait(10)


def post_mcp(port, message, headers=None):
    """POST one JSON-RPC message to /mcp on loopback `port`; the response, unread."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    connection.request("POST", "/mcp", json.dumps(message), {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **(headers or {})})
    return connection.getresponse()


def serving_on_free_port(command, port_option, start_seconds=60):
    """Run an HTTP server, `command port_option PORT` on a free loopback port, until the test
    module ends; yields its URL once the port accepts connections (start_seconds at most)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([*command, port_option, str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + start_seconds
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()  # how a server shuts down is not what these tests are about
        process.wait(10)


@contextlib.contextmanager
def server_py_over_http(index_dir, *extra):
    """python server.py --http on a free port, as someone else would start it (with the
    options `extra`): yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(server_command(index_dir, "--http", str(port), *extra),
                              stderr=subprocess.PIPE, text=True)
    try:
        while "MCP over HTTP on" not in server.stderr.readline():
            assert server.poll() is None, "server.py --http exited"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(10)


def server_command(index_dir, *extra):
    return [sys.executable, str(ROOT / "server.py"), "--index", str(index_dir), *extra]


def ranked_by_meaning(call, arguments=None, timeout=300):
    """The first answer of server.py's search (call: a LiveServer's) that ranks by meaning: a
    search before its model has loaded ranks by keywords, saying so. Asked again every 0.1 s
    until then: the model has loaded, and the watcher runs."""
    deadline = time.monotonic() + timeout
    while True:
        result = call("search", arguments or {"query": "warm up"})
        assert result["isError"] is False, result
        if result["structuredContent"]["ranking"] == "meaning":
            return result
        assert time.monotonic() < deadline, f"no model after {timeout} s"
        time.sleep(0.1)


def wire_by_meaning(command, messages, timeout=300):
    """Raw JSON lines to server.py (command): ([the messages it wrote], its stderr). The first
    two (initialize, notifications/initialized) go in at once; then a search, again every 0.1 s
    until one ranks by meaning (ranked_by_meaning, on the wire: those answers are left out);
    then the rest, and stdin closes."""
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=ROOT)
    watchdog = threading.Timer(timeout, process.kill)  # a stuck server fails the test, at worst
    watchdog.start()
    written = []
    probe = {"jsonrpc": "2.0", "id": "model?", "method": "tools/call",
             "params": {"name": "search", "arguments": {"query": "warm up"}}}
    try:
        process.stdin.write("".join(json.dumps(m) + "\n" for m in messages[:2]).encode())
        ranking = None
        while ranking != "meaning":
            time.sleep(0.1 if ranking else 0)
            process.stdin.write((json.dumps(probe) + "\n").encode())
            process.stdin.flush()
            while (message := json.loads(process.stdout.readline()))["id"] != "model?":
                written.append(message)
            ranking = message["result"]["structuredContent"]["ranking"]
        out, err = process.communicate("".join(json.dumps(m) + "\n" for m in messages[2:])
                                       .encode())
    finally:
        watchdog.cancel()
        process.kill()
    return written + [json.loads(line) for line in out.decode().splitlines()], err.decode()


@pytest.fixture(scope="session")
def live_server(built_index):
    """One server.py over the session index, its model loaded: searches rank by meaning."""
    server = LiveServer(server_command(built_index))
    ranked_by_meaning(server.call)
    yield server
    server.close()


def script_server(folder, tools):
    """argv of a small mcp_min server: `tools` is module-level source that registers tools on
    `server`; asyncio, subprocess, sys and mcp_min are imported, and Server too."""
    script = folder / "tool_server.py"
    home = os.environ.get("MCP_MIN_DIR") or str(ROOT)  # tests/test_cut.py: a cut copy's folder
    script.write_text(f"import asyncio, subprocess, sys\nsys.path.insert(0, {home!r})\n"
                      "import mcp_min\nfrom mcp_min import Server\nserver = Server('x')\n"
                      f"{textwrap.dedent(tools)}\nserver.run()\n")
    return [sys.executable, str(script)]


# Lines that tests want shown after the run, even in a quiet `pytest -q` (see test_retrieval.py).
SUMMARY_LINES = []


def pytest_sessionfinish(session):
    """In a pytest-xdist worker (make test runs two), hand its lines to the controller."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["summary_lines"] = SUMMARY_LINES


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist's controller: a worker is done; keep the lines it handed over."""
    SUMMARY_LINES.extend(getattr(node, "workeroutput", {}).get("summary_lines", []))


def pytest_terminal_summary(terminalreporter):
    if SUMMARY_LINES:
        terminalreporter.write_sep("-", "sizes and retrieval quality")
        for line in SUMMARY_LINES:
            terminalreporter.write_line(line)


def text_of(result):
    """The text of a CallToolResult's content blocks, joined."""
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


# The files that take longest, longest first (seconds each on 2 quiet cores, roughly). `make
# test` hands whole files to its two workers in collection order (--dist loadfile
# --no-loadscope-reorder): with the longest first, no long file starts last while the other
# worker has nothing left to do. xdist's own order, most tests first, ran the longest last.
SLOWEST_FILES = ["test_interactive.py", "test_messy_docs.py", "test_live_changes.py",
                 "test_bench.py", "test_retrieval.py", "test_server.py", "test_conformance.py",
                 "test_client.py", "test_resources.py", "test_faults.py", "test_docs_tree.py",
                 "test_http.py", "test_cut.py", "test_interop.py", "test_hostile.py",
                 "test_index_build.py", "test_wire.py"]


def pytest_collection_modifyitems(items):
    """The SLOWEST_FILES first, in that order; every other file after them, as collected."""
    rank = {name: number for number, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file stays whole


def pytest_addoption(parser):
    # tests/test_fuzz.py and tests/test_load.py: --soak runs them about 100 times longer;
    # tests/test_retrieval.py: --soak also checks the recall of the READMEs' question set.
    parser.addoption("--soak", action="store_true", default=False,
                     help="run the fuzz and load tests much longer (minutes, not seconds), and "
                          "check the READMEs' recall (its index takes a minute or two)")
