"""server.py through a real subprocess, driven by client.Client: the three tools, their
input checks, refused document names, and a missing or out-of-date index."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import index_build
import index_search
from conftest import DOCS, ROOT, LiveServer, ranked_by_meaning, server_command, text_of

DOC_NAMES = sorted(p.name for p in DOCS.iterdir() if p.suffix in (".txt", ".md"))


def index_of(server):
    """The --index folder a LiveServer was started with."""
    command = server.client.command
    return Path(command[command.index("--index") + 1])


def assert_no_paths_leak(text, *folders):
    for folder in (ROOT, DOCS, *folders):
        assert str(folder) not in text


# --- startup ---

def test_importing_server_loads_no_heavy_library():
    # initialize and tools/list must be answered at once: torch & co. load in the background.
    code = ("import sys, server; print(sorted(m for m in "
            "('torch', 'faiss', 'sentence_transformers', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.parametrize("options, message", [
    (["--index", ""], "--index is an empty string; give it the index folder (default: index)"),
    (["--index", "README.md"], "--index README.md is not a folder; give it the folder that "
                               "index_build.py writes (default: index)"),
    (["--docs", ""], "--docs is an empty string; give it the folder the index was built from, "
                     "or leave it out to use the one the index records"),
    (["--docs", "README.md"], "--docs README.md is not an existing folder; give it the folder "
                              "the index was built from, or leave it out to use the one the "
                              "index records"),
    (["--docs", "no-such-folder"], "--docs no-such-folder is not an existing folder; give it "
                                   "the folder the index was built from, or leave it out to "
                                   "use the one the index records"),
])
def test_a_folder_option_no_build_can_mend_stops_the_server(built_index, options, message):
    # Served, each of these made every call advise `make index`, which cannot help.
    command = server_command(built_index)
    command[command.index("--index"):] = ["--index", str(built_index), *options]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [f"server: error: {message}"]


def test_tools_are_listed_before_the_model_has_loaded(built_index):
    # Against the server's own "model loaded" line, not a fixed number of seconds: a busy machine
    # slows both alike. The line is seen a moment after it is written: a second of margin.
    started = time.perf_counter()
    server = LiveServer(server_command(built_index))
    try:
        tools = server.list_tools()
        listed = time.perf_counter() - started
        while not any("model loaded in" in line for line in server.client.stderr_tail):
            assert time.perf_counter() - started < 300, server.client.stderr_tail
            time.sleep(0.05)
        loaded = time.perf_counter() - started
    finally:
        server.close()
    assert [t["name"] for t in tools] == ["search", "list_documents", "get_document"]
    assert listed + 1 < loaded, f"tools/list after {listed:.1f} s, the model after {loaded:.1f} s"


def test_tool_definitions(live_server):
    tools = {t["name"]: t for t in live_server.list_tools()}
    search = tools["search"]
    assert search["inputSchema"]["required"] == ["query"]
    assert search["outputSchema"]["properties"]["results"]["type"] == "array"
    for topic in ("menu", "prices", "hours", "wifi", "allergies", "staff handbook", "history",
                  "events"):
        assert topic in search["description"]
    assert tools["get_document"]["inputSchema"]["required"] == ["name"]


def test_each_parameter_has_its_own_description_and_top_k_its_range_on_the_wire(built_index):
    """tools/list as a client reads it, raw: each parameter of the three tools says what it is
    (some clients show nothing else), and top_k's range is in the schema, not only in prose."""
    answers, _ = wire_session(built_index, [("tools/list", {})])
    tools = {tool["name"]: tool["inputSchema"]["properties"] for tool in answers[2]["tools"]}
    assert tools["search"]["top_k"] == {"type": "integer", "default": 5, "minimum": 1,
                                        "maximum": 50,
                                        "description": "how many passages to return, best first"}
    assert tools["search"]["query"] == {
        "type": "string", "description": "the question, in plain words (1,000 characters at most)"}
    assert tools["search"]["folder"]["default"] == ""
    assert tools["search"]["folder"]["description"].startswith("only the documents in this folder")
    assert tools["list_documents"]["folder"]["description"].startswith('a folder ("guide/")')
    assert tools["get_document"]["name"]["description"] == 'its exact name ("guide/install.md")'
    for properties in tools.values():
        assert all(len(schema["description"]) > 20 for schema in properties.values())


def wire_session(index_dir, calls, *options):
    """Raw JSON lines to server.py (initialize, then each (method, params) of calls, then EOF):
    ({id: result}, the lines of its stderr)."""
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": 2 + n, "method": method, "params": params}
              for n, (method, params) in enumerate(calls)]
    done = subprocess.run(server_command(index_dir, *options), cwd=ROOT, capture_output=True,
                          text=True, timeout=120,
                          input="".join(json.dumps(line) + "\n" for line in lines))
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    return {answer["id"]: answer["result"] for answer in answers}, done.stderr.splitlines()


def test_an_expected_refusal_is_one_line_on_stderr_not_a_traceback(built_index):
    """An unknown document, an unknown folder, a bad top_k, an empty query: the model reads what
    to fix; the operator's stderr gets one line each, as for any refusal, and no traceback."""
    calls = [("tools/call", {"name": "get_document", "arguments": {"name": "nope.md"}}),
             ("tools/call", {"name": "search", "arguments": {"query": "dog", "folder": "x/"}}),
             ("tools/call", {"name": "search", "arguments": {"query": "dog", "top_k": 51}}),
             ("tools/call", {"name": "search", "arguments": {"query": " "}})]
    answers, stderr = wire_session(built_index, calls, "--no-watch")
    assert all(answers[n]["isError"] for n in range(2, 6))
    assert text_of(answers[2]).startswith("Tool get_document refused: unknown document 'nope.md'. "
                                          "Valid names: ")
    assert text_of(answers[4]) == "Tool search refused: top_k must be between 1 and 50, not 51"
    assert not any("Traceback" in line for line in stderr), stderr
    refused = [line for line in stderr if " refused: " in line]
    assert [line.split(" refused: ")[0] for line in refused] == [
        "server: get_document", "server: search", "server: search", "server: search"]
    assert refused[0].startswith("server: get_document refused: unknown document 'nope.md'.")
    assert refused[3] == "server: search refused: query is empty: pass the question, in plain words"


# --- the first answer, before the model has loaded ---

def test_a_search_at_spawn_is_a_keyword_ranking_then_by_meaning_once_the_model_loads(
        built_index, tmp_path, model):
    """tests/gated_model_server.py is server.py whose model waits for a file: every search until
    then comes before the model, whatever the machine's speed. It is answered by BM25, saying so;
    once the model has loaded, searches rank as before, by meaning."""
    gate = tmp_path / "load-the-model"
    command = [sys.executable, str(ROOT / "tests" / "gated_model_server.py"), str(gate),
               "--index", str(built_index), "--no-watch"]
    server = LiveServer(command)
    query = {"query": "can I bring a dog", "top_k": 3}
    try:
        first = server.call("search", query)
        assert first["isError"] is False
        text = text_of(first)
        assert text.startswith("Keyword ranking (BM25), not by meaning: the embedding model is "
                               "still loading.\n\n[1] source: faq.txt (keyword score: ")
        keyword = first["structuredContent"]
        assert keyword["ranking"] == "keyword" and len(keyword["results"]) == 3
        scores = [r["score"] for r in keyword["results"]]
        assert scores == sorted(scores, reverse=True) and scores[-1] > 0
        assert not any("distance" in r for r in keyword["results"])
        for r in keyword["results"]:
            header = f"[{r['rank']}] source: {r['source']} (keyword score: {r['score']:.2f})"
            assert f"{header}\n{r['text']}" in text
        assert [c["type"] for c in first["content"]].count("resource_link") >= 1
        assert server.call("list_documents")["isError"] is False  # the other tools need no model
        gate.touch()
        later = ranked_by_meaning(server.call, query)
    finally:
        server.close()
    _, faiss_index, passages = index_search.load_index(built_index)
    expected = index_search.rank_passages(
        query["query"], index_build.embed(model, [query["query"]]), faiss_index, passages, 3,
        index_build.RANKING, index_search.lexical_index(passages), "",
        index_search.page_versions(passages))
    results = later["structuredContent"]["results"]
    assert [r["source"] for r in results] == [r["source"] for r in expected]
    assert all(abs(r["distance"] - e["distance"]) < 1e-3 for r, e in zip(results, expected))
    assert text_of(later).startswith("[1] source: faq.txt (distance: 0.")


# --- search ---

def test_search_finds_the_dog_answer(live_server):
    result = live_server.call("search", {"query": "can I bring a dog", "top_k": 3})
    assert result["isError"] is False
    text = text_of(result)
    assert re.match(r"\[1\] source: faq\.txt \(distance: 0\.\d\d\)\n", text)
    assert "dogs are welcome" in text
    results = result["structuredContent"]["results"]
    assert [r["rank"] for r in results] == [1, 2, 3]
    # The index fuses cosine with BM25 (index_build.RANKING): results are ranked by score,
    # and distance stays 1 - cosine, so distances need not rise with rank.
    assert set(results[0]) == {"rank", "source", "distance", "text", "score"}
    assert results[0]["source"] == "faq.txt"
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    distances = [r["distance"] for r in results]
    assert all(0 <= d <= 2 for d in distances)
    assert all(round(d, 4) == d for d in distances)
    # The text shows each result's header, its passage, and a blank line between results.
    for r in results:
        header = f"[{r['rank']}] source: {r['source']} (distance: {r['distance']:.2f})"
        assert f"{header}\n{r['text']}" in text
    assert text.count("\n\n[") == 2


def test_search_defaults_to_five_results(live_server):
    result = live_server.call("search", {"query": "opening hours on Sunday"})
    assert len(result["structuredContent"]["results"]) == 5
    assert result["structuredContent"]["results"][0]["source"] == "hours_access.txt"


@pytest.mark.parametrize("top_k", [1, 50])
def test_top_k_limits_are_accepted(live_server, top_k):
    result = live_server.call("search", {"query": "wifi password", "top_k": top_k})
    assert result["isError"] is False
    manifest = json.loads((index_of(live_server) / "manifest.json").read_text())
    passages = manifest["counts"]["passages"]
    assert len(result["structuredContent"]["results"]) == min(top_k, passages)


@pytest.mark.parametrize("arguments, message", [
    ({"query": "wifi", "top_k": 0}, "top_k must be between 1 and 50"),
    ({"query": "wifi", "top_k": 51}, "top_k must be between 1 and 50"),
    ({"query": "wifi", "top_k": -3}, "top_k must be between 1 and 50"),
    ({"query": "wifi", "top_k": "3"}, "top_k must be"),  # mcp_min checks the type
    ({"query": ""}, "query is empty"),
    ({"query": "   \n"}, "query is empty"),
    ({"query": "x" * 1001}, "the limit is 1000"),
    ({"query": "dog \ud83d"}, "character 5 is a lone surrogate (\\ud83d), half of a character; "
                              "send the question as whole characters"),
    ({}, "missing required argument(s): query"),
    ({"query": "wifi", "folder": "7.4/"}, "unknown folder '7.4'. The folders there are (0, the "
                                          "closest first): none; pass one of them, or no folder"),
])
def test_bad_search_input_is_a_tool_error(live_server, arguments, message):
    result = live_server.call("search", arguments)
    assert result["isError"] is True
    assert message in text_of(result)
    assert "structuredContent" not in result


def test_an_unknown_folder_names_the_folders_there_are_closest_first():
    import server as server_module  # only its checks: the model and the index are not loaded

    files = dict.fromkeys(["docs/7.4/a.md", "docs/7.5/a.md", "guide/b.md", "c.md"])
    assert server_module.checked_folder(files, "") == ""
    assert server_module.checked_folder(files, " /docs/7.5 ") == "docs/7.5/"
    with pytest.raises(ValueError) as refused:
        server_module.checked_folder(files, "docs/7.6/")
    assert str(refused.value) == (
        "unknown folder 'docs/7.6'. The folders there are (4, the closest first): docs/7.5/, "
        "docs/7.4/, docs/, guide/; pass one of them, or no folder to search all the documents")


def test_query_of_exactly_the_limit_is_accepted(live_server):
    result = live_server.call("search", {"query": ("is there wifi " * 100)[:1000], "top_k": 1})
    assert result["isError"] is False


# --- list_documents and get_document ---

def test_list_documents(live_server):
    result = live_server.call("list_documents")
    assert result["isError"] is False
    documents = result["structuredContent"]["documents"]
    assert [d["name"] for d in documents] == DOC_NAMES
    assert all(d["title"].startswith("The Wandering Kettle") for d in documents)
    assert text_of(result).splitlines()[0] == f"{documents[0]['name']}: {documents[0]['title']}"


@pytest.mark.parametrize("name", DOC_NAMES)
def test_get_document_returns_the_whole_file(live_server, name):
    result = live_server.call("get_document", {"name": name})
    assert result["isError"] is False
    assert text_of(result) == (DOCS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", [
    "../README.md", "../docs/faq.txt", "./faq.txt", "docs/faq.txt", str(DOCS / "faq.txt"),
    "/etc/passwd",
    "FAQ.TXT", "Faq.txt", "faq.txt\x00", "faq.txt\x00.png", " faq.txt", "faq", "nope.txt", "",
    "..", ".", "manifest.json", "faq.txt/", "..\\faq.txt",
])
def test_get_document_refuses_anything_but_an_indexed_name(live_server, name):
    result = live_server.call("get_document", {"name": name})
    assert result["isError"] is True
    text = text_of(result)
    assert "Valid names: " + ", ".join(DOC_NAMES) in text
    if name != str(DOCS / "faq.txt"):  # echoing back the caller's own input is fine
        assert_no_paths_leak(text)


# --- a small docs folder of our own: symlinks and an out-of-date index ---

@pytest.fixture
def small_server(small_docs, tmp_path, model):
    secret = tmp_path / "secret.txt"
    secret.write_text("The safe code is 1234.\n")
    (small_docs / "secret.txt").symlink_to(secret)
    index_build.build_index(small_docs, tmp_path / "index", model=model)
    server = LiveServer(server_command(tmp_path / "index"))
    yield server, small_docs, secret
    server.close()


def test_symlink_out_of_the_docs_folder_is_refused(small_server):
    server, docs, secret = small_server
    result = server.call("get_document", {"name": "secret.txt"})
    assert result["isError"] is True
    assert "1234" not in text_of(result)
    assert "Valid names: faq.txt, hours_access.txt, menu_prices.txt" in text_of(result)


def test_a_running_server_picks_up_an_edited_an_added_and_a_removed_file(small_server):
    server, docs, secret = small_server
    index_dir = index_of(server)
    ranked_by_meaning(server.call)  # the model has loaded: the watcher runs
    (docs / "faq.txt").write_bytes((docs / "faq.txt").read_bytes()
                                   + b"\nQ: Do you sell dog treats? A: Yes, at the counter.\n")
    (docs / "guide").mkdir()
    (docs / "guide" / "new.md").write_text("---\ntitle: Loyalty card\n---\n# Stamps\n\n"
                                           "Ten stamps on the loyalty card earn a free scone.\n")
    (docs / "hours_access.txt").unlink()
    for _ in range(600):  # the server rebuilds in the background; searches never refuse
        result = server.call("search", {"query": "do you sell dog treats", "top_k": 3})
        assert result["isError"] is False, text_of(result)
        listed = server.call("list_documents", {"folder": "guide/"})["structuredContent"]
        if "dog treats" in text_of(result) and listed["documents"]:
            break
        time.sleep(0.2)
    assert [d["name"] for d in listed["documents"]] == ["guide/new.md"]
    assert listed["documents"][0]["title"] == "Loyalty card"
    top = server.call("list_documents")["structuredContent"]
    assert [d["name"] for d in top["documents"]] == ["faq.txt", "menu_prices.txt"]
    assert top["folders"] == [{"name": "guide/", "documents": 1}]
    found = server.call("search", {"query": "free scone loyalty card", "top_k": 1})
    assert found["structuredContent"]["results"][0]["source"] == "guide/new.md"
    assert "note" not in found["structuredContent"]["results"][0]
    assert "guide/new.md" in index_search.read_manifest(index_dir)["files"]
    read = server.call("get_document", {"name": "guide/new.md"})
    assert read["isError"] is False and "free scone" in text_of(read)


def test_with_no_watch_a_changed_file_is_noted_never_refused_and_never_rebuilt(
        small_docs, tmp_path, model):
    secret = tmp_path / "secret.txt"
    secret.write_text("The safe code is 1234.\n")
    index_dir = tmp_path / "index"
    index_build.build_index(small_docs, index_dir, model=model)
    before = (index_dir / "manifest.json").read_bytes()
    server = LiveServer(server_command(index_dir, "--no-watch"))
    try:
        ranked_by_meaning(server.call)  # the model has loaded: the watcher runs
        (small_docs / "faq.txt").write_bytes(b"Dogs\n\nDogs are no longer welcome inside.\n")
        for _ in range(600):
            result = server.call("search", {"query": "are dogs welcome", "top_k": 50})
            assert result["isError"] is False, text_of(result)
            notes = [r for r in result["structuredContent"]["results"] if "note" in r]
            if notes:
                break
            time.sleep(0.2)
        assert {r["source"] for r in notes} == {"faq.txt"}
        assert "[this file changed since it was indexed" in text_of(result)
        # A file swapped for a symlink that points out of the folder: never served.
        (small_docs / "faq.txt").unlink()
        (small_docs / "faq.txt").symlink_to(secret)
        refused = server.call("get_document", {"name": "faq.txt"})
        assert refused["isError"] is True and "1234" not in text_of(refused)
        assert "not available" in text_of(refused)
        assert server.call("search", {"query": "dog"})["isError"] is False
        assert (index_dir / "manifest.json").read_bytes() == before
    finally:
        server.close()


def test_missing_index_is_a_tool_error_not_a_crash(tmp_path):
    server = LiveServer(server_command(tmp_path / "no-index"))
    try:
        for tool, arguments in [("search", {"query": "dog"}), ("list_documents", {}),
                                ("get_document", {"name": "faq.txt"})]:
            result = server.call(tool, arguments)
            assert result["isError"] is True
            assert text_of(result).endswith("(missing no-index/manifest.json); run `python "
                                            "index_build.py --docs DOCS --index .../no-index` "
                                            "to build it")
            assert_no_paths_leak(text_of(result), tmp_path)
        assert server.list_tools()  # still serving
    finally:
        server.close()


@pytest.mark.parametrize("index, command", [
    ("index", "make index"),
    ("docs", "python index_build.py --docs DOCS --index docs"),
    ("my/index", "python index_build.py --docs DOCS --index my/index"),
])
def test_the_advice_names_a_command_that_builds_the_folder_it_reads(tmp_path, index, command):
    # `make index` builds index/ from docs/: for any other --index it would not help.
    (tmp_path / "docs").mkdir()
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "list_documents", "arguments": {}}}]
    done = subprocess.run([sys.executable, str(ROOT / "server.py"), "--index", index],
                          input="".join(json.dumps(line) + "\n" for line in lines), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    answer = [json.loads(line) for line in done.stdout.splitlines()][-1]
    assert answer["id"] == 2 and answer["result"]["isError"] is True
    assert text_of(answer["result"]).endswith(
        f"no search index found (missing {index.split('/')[-1]}/manifest.json); "
        f"run `{command}` to build it")


def test_docs_option_overrides_the_manifest(built_index, small_docs):
    # --docs points at a folder that lacks most of the index's files: search answers, and
    # a result from a file not in that folder says so. (--no-watch: the shared index stays.)
    server = LiveServer(server_command(built_index, "--docs", str(small_docs), "--no-watch"))
    try:
        for _ in range(600):
            result = server.call("search", {"query": "when was the cafe founded", "top_k": 9})
            assert result["isError"] is False, text_of(result)
            noted = {r["source"] for r in result["structuredContent"]["results"] if "note" in r}
            if noted:
                break
            time.sleep(0.2)
        assert noted and not noted & {path.name for path in small_docs.iterdir()}
    finally:
        server.close()


def test_tool_calls_are_rate_limited(built_index):
    # RAG_RATE_LIMIT=1: one call per second on average, bursts of two. The third call in a row
    # is refused as a tool error the model can read; after a pause, calls go through again.
    import os
    server = LiveServer(server_command(built_index), env={**os.environ, "RAG_RATE_LIMIT": "1"})
    try:
        results = [server.call("list_documents") for _ in range(3)]
        assert [r["isError"] for r in results] == [False, False, True]
        assert re.fullmatch(r"Tool list_documents refused: "
                            r"rate limit: at most 1 calls per second; "
                            r"retry in \d\.\d s", text_of(results[2]))
        time.sleep(1.1)
        assert server.call("list_documents")["isError"] is False
    finally:
        server.close()
