"""client.py as a user runs it: its step-by-step output, --trace, --server, and a missing index."""

import json
import subprocess
import sys
import textwrap

from conftest import ROOT


def run_client(*args, timeout=180):
    return subprocess.run([sys.executable, str(ROOT / "client.py"), *map(str, args)],
                          capture_output=True, text=True, encoding="utf-8", timeout=timeout, cwd=ROOT)


def test_demo_shows_each_step(built_index):
    result = run_client("--index", built_index)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for line in [
        "[1] connect: start `python server.py --index",
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
    result = run_client("is there a password for the wifi", "--top-k", "2", "--trace", "--index", built_index)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    sent = [json.loads(line[2:]) for line in lines if line.startswith("→ ")]
    received = [json.loads(line[2:]) for line in lines if line.startswith("← ")]
    assert [m.get("method") for m in sent] == ["server/discover", "tools/list", "tools/call"]
    assert sent[-1]["params"]["arguments"] == {"query": "is there a password for the wifi", "top_k": 2}
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
    assert [m["method"] for m in sent] == ["initialize", "notifications/initialized", "tools/list", "tools/call"]
    assert "id" not in sent[1]
    assert [m["id"] for m in received] == [1, 2, 3]
    assert received[0]["result"]["protocolVersion"] == "2025-11-25"
    assert "    era        : legacy" in result.stdout
    assert received[-1]["result"]["structuredContent"]["results"][0]["source"] == "faq.txt"


def test_missing_index_is_a_clear_error(tmp_path):
    result = run_client("--index", tmp_path / "nowhere", timeout=60)
    assert result.returncode == 1
    assert "run `make index` first" in result.stderr
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
    assert result.stderr.startswith("client.py: error: ") and "/nonexistent/mcp-server" in result.stderr
    assert "Traceback" not in result.stderr


def test_url_talks_streamable_http(built_index):
    # client.py --url: the same demo against server.py --http, a server someone else started.
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(ROOT / "server.py"), "--index", str(built_index), "--http", str(port)],
                              stderr=subprocess.PIPE, text=True)
    try:
        while "MCP over HTTP on" not in server.stderr.readline():
            assert server.poll() is None, "server.py --http exited"
        result = run_client("--url", f"http://127.0.0.1:{port}/mcp", "--top-k", "1", "--trace")
        assert result.returncode == 0, result.stderr
        assert f"[1] connect: reach http://127.0.0.1:{port}/mcp" in result.stdout
        assert "    protocol   : 2026-07-28" in result.stdout
        assert "    [1] source: faq.txt (distance: 0." in result.stdout
        sent = [json.loads(line[2:]) for line in result.stdout.splitlines() if line.startswith("→ ")]
        assert [m["method"] for m in sent] == ["server/discover", "tools/list", "tools/call"]
    finally:
        server.terminate()
        server.wait(10)
