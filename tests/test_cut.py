"""mcp_min.py can be cut off (issue 29): cut at the end of its core, or at the start of any section
after it (that line and everything below removed), the file is still a working server for what is
above the cut. It imports, serves tools in both eras over stdio and over mcp_http.py, advertises
only the capabilities it has, and answers method-not-found for the rest. The whole wire suite,
tests/test_wire.py, runs once more against the core alone. Last, the module docstring's wire
examples are replayed: what it shows a reader is what the server says.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, http_server_port, post_mcp

SOURCE = (ROOT / "mcp_min.py").read_text(encoding="utf-8")
LINES = SOURCE.splitlines(keepends=True)
CORE_END = next(i for i, line in enumerate(LINES) if line.startswith("# === The core ends here"))
# Where a cut can go: the core's end, and each section that starts after it.
CUTS = {"the core alone": CORE_END, **{
    line.strip("# =\n").split(" (spec")[0].split(":")[0]: number
    for number, line in enumerate(LINES) if number > CORE_END and line.startswith("# === ")}}
# What a client sees of a section: the capability it advertises once something is registered.
ADVERTISES = {"Resources": "resources", "Prompts": "prompts", "Completion": "completions"}
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}
SERVER_INFO = {"name": "cut", "version": "1"}
# The server each cut file runs: a tool, and a resource and a prompt where the file has them.
SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import mcp_min

server = mcp_min.Server("cut", "1")


@server.tool()
def add(a: int, b: int = 1) -> int:
    '''Add two numbers.'''
    return a + b


if hasattr(mcp_min.Server, "resource"):
    server.resource("note:///a", mime_type="text/plain")(lambda: "a note")
if hasattr(mcp_min.Server, "prompt"):
    server.prompt("greet")(lambda: "Hello")
if sys.argv[2:] == ["--http"]:
    import mcp_http
    mcp_http.serve(server, "127.0.0.1", 0)
else:
    server.run()
"""


def cut_copy(folder, cut):
    """A folder with mcp_min.py cut at line `cut` (0-based: that line and all below are gone),
    mcp_http.py beside it, and the server script."""
    folder.mkdir()
    (folder / "mcp_min.py").write_text("".join(LINES[:cut]), encoding="utf-8")
    shutil.copy(ROOT / "mcp_http.py", folder)
    (folder / "cut_server.py").write_text(SCRIPT, encoding="utf-8")
    return folder


def sections_above(cut):
    return [title for title, number in CUTS.items() if number < cut]


def expected_capabilities(cut):
    present = " ".join(sections_above(cut))
    kinds = [kind for title, kind in ADVERTISES.items() if title in present]
    return {"tools": {}, **{kind: {} for kind in kinds}}  # no change notifications below a cut


def request(request_id, method, params=None, modern=False):
    params = dict(params or {})
    if modern:
        params["_meta"] = META
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def line(message):
    return json.dumps(message, separators=(",", ":"))


def test_the_cuts_are_where_the_sections_start():
    assert list(CUTS)[0] == "the core alone"
    assert len(CUTS) >= 6, list(CUTS)  # the core, then pagination ... change notifications
    for title in list(CUTS)[1:]:
        assert re.fullmatch(r"\d+\. .+", title), title
    # Each section of Part B says, in a few lines, what it adds and which part of the spec.
    for number in list(CUTS.values())[1:]:
        assert "spec:" in LINES[number] + LINES[number + 1], LINES[number]
        assert LINES[number + 2].startswith("#"), LINES[number]


@pytest.mark.parametrize("cut", CUTS.values(), ids=CUTS.keys())
def test_a_cut_file_serves_what_is_above_the_cut_over_stdio(tmp_path, cut):
    folder = cut_copy(tmp_path / "cut", cut)
    capabilities = expected_capabilities(cut)
    legacy = [request(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "t", "version": "1"}}),
              {"jsonrpc": "2.0", "method": "notifications/initialized"},
              request(2, "tools/call", {"name": "add", "arguments": {"a": 2}}),
              request(3, "resources/list"), request(4, "prompts/list"),
              request(5, "completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                                 "argument": {"name": "x", "value": ""}}),
              request(6, "resources/subscribe", {"uri": "note:///a"}),
              request(7, "tools/list", {"cursor": "nope"}),
              request(8, "server/discover", modern=True),
              request(9, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 5}}, modern=True),
              request(10, "subscriptions/listen", {"notifications": {}}, modern=True)]
    stdin = "".join(line(message) + "\n" for message in legacy)
    run = subprocess.run([sys.executable, str(folder / "cut_server.py"), str(folder)],
                         input=stdin, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    answers = {message["id"]: message for message in map(json.loads, run.stdout.splitlines())}
    assert run.stdout.splitlines()[0] == line({"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "serverInfo": SERVER_INFO}})
    assert line(answers[2]) == ('{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text",'
                                '"text":"3"}],"isError":false}}')
    for request_id, kind in ((3, "resources"), (4, "prompts"), (5, "completions")):
        if kind in capabilities:
            assert "result" in answers[request_id], answers[request_id]
        else:
            assert answers[request_id]["error"]["code"] == -32601, answers[request_id]
    assert answers[6]["error"]["code"] == -32601  # subscriptions: the last section, always cut
    assert answers[10]["error"]["code"] == -32601
    # A cursor this server never gave: the core lists every tool at once, and refuses any cursor.
    assert answers[7]["error"] == {"code": -32602,
                                   "message": 'Invalid params: unknown cursor "nope"'}
    modern_meta = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
    assert answers[8]["result"] == {"supportedVersions": [MODERN], "capabilities": capabilities,
                                    "resultType": "complete", "_meta": modern_meta,
                                    "ttlMs": 3_600_000, "cacheScope": "public"}
    assert line(answers[9]) == (
        '{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"7"}],'
        '"isError":false,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":'
        '{"name":"cut","version":"1"}}}}')


@pytest.mark.parametrize("cut", CUTS.values(), ids=CUTS.keys())
def test_a_cut_file_serves_tools_over_http_in_both_eras(tmp_path, cut):
    folder = cut_copy(tmp_path / "cut", cut)
    serving = http_server_port([sys.executable, str(folder / "cut_server.py"), str(folder),
                                "--http"])
    port = next(serving)
    try:
        opened = post_mcp(port, request(1, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}))
        assert opened.status == 200
        assert json.loads(opened.read())["result"]["capabilities"] == expected_capabilities(cut)
        session = {"Mcp-Session-Id": opened.getheader("Mcp-Session-Id"),
                   "MCP-Protocol-Version": "2025-11-25"}
        called = post_mcp(port, request(2, "tools/call", {"name": "add", "arguments": {"a": 1}}),
                          session)
        assert json.loads(called.read())["result"]["content"] == [{"type": "text", "text": "2"}]
        modern = post_mcp(port, request(3, "tools/call", {"name": "add", "arguments": {"a": 4}},
                                        modern=True),
                          {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                           "Mcp-Name": "add"})
        assert modern.status == 200
        result = json.loads(modern.read())["result"]
        assert (result["content"], result["resultType"]) == ([{"type": "text", "text": "5"}],
                                                             "complete")
        missing = post_mcp(port, request(4, "prompts/list", modern=True),
                           {"MCP-Protocol-Version": MODERN, "Mcp-Method": "prompts/list"})
        if "prompts" not in expected_capabilities(cut):
            assert (missing.status, json.loads(missing.read())["error"]["code"]) == (404, -32601)
        else:
            assert missing.status == 200
    finally:
        serving.close()


def test_the_wire_suite_passes_against_the_core_alone(tmp_path):
    """tests/test_wire.py, every test, with its servers importing the core alone."""
    folder = cut_copy(tmp_path / "core", CORE_END)
    env = {**os.environ, "MCP_MIN_DIR": str(folder)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", str(ROOT / "tests" / "test_wire.py")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-3000:]
    assert re.search(r"^\d+ passed", run.stdout.splitlines()[-1]), run.stdout[-500:]


def docstring_wire():
    """The module docstring's wire examples: [(sent, answered)] per era, each message parsed."""
    doc = textwrap.dedent(SOURCE.split('"""')[1])
    examples = []
    for block in re.split(r"\n(?=  \S)", doc):  # each era's example is indented two spaces
        messages = re.findall(r"^    (->|<-) (.+?)(?=\n    (?:->|<-)|\n\n|\n  \S|\Z)", block,
                              re.S | re.M)
        if messages:
            examples.append([(way, json.loads(re.sub(r"\n\s+", "", text)))
                             for way, text in messages])
    return examples


def test_the_docstrings_wire_examples_are_what_the_server_says(tmp_path):
    examples = docstring_wire()
    assert len(examples) == 2, "the docstring shows one tools/call in each era"
    script = re.search(r"^    from mcp_min import .*?^    server\.run\(\)", SOURCE, re.M | re.S)
    server = tmp_path / "demo.py"
    server.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                      f"{textwrap.dedent(script[0])}\n")
    for example in examples:
        sent = "".join(line(message) + "\n" for way, message in example if way == "->")
        run = subprocess.run([sys.executable, str(server)], input=sent, capture_output=True,
                             text=True, timeout=30)
        answered = [message for way, message in example if way == "<-"]
        assert [json.loads(text) for text in run.stdout.splitlines()] == answered, run.stderr
