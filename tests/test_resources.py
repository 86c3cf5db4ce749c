"""server.py's resources, prompt and completion (issue 17), and what it tells a model its index
holds (issue 19): raw lines in and exact lines out, client.Client, and the official SDK's client
(mcp 2.3.0) in both eras; refused names; a folder of 3,000 files listed page by page.

Every indexed file is the resource docs:///<name>, its name percent-encoded whole; search adds a
resource_link per source; the ask prompt embeds a document or sends the model to search.
Spec: server/resources, server/prompts, server/utilities/{completion,pagination} of 2025-11-25
and 2026-07-28; SEP-2164 (a resource not found is -32602, its URI in data).
"""
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import PromptReference, ResourceTemplateReference

import doc_readers
import index_build
import index_search
import mcp_min
import server as server_module
from client import Client, HTTPClient
from conftest import (DOCS, DOCS_DESCRIPTION, DOCS_NAME, ROOT, LiveServer, server_command,
                      server_py_over_http, text_of)
from mcp_min import MCPError

INVALID_PARAMS = -32602
HANDSHAKE = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
TEMPLATE = {"name": "document",
            "description": "One indexed document, by its file name: the text get_document "
                           "returns.", "uriTemplate": "docs:///{name}"}
ASK_ARGUMENTS = [{"name": "question", "description": "the question to answer", "required": True},
                 {"name": "document", "description": "one document to answer from, by its file "
                                                      "name", "required": False}]
ASK_SEARCH = ("Answer this question with the search tool: answer only from the passages it "
              "returns, naming the source file of each fact.\n\nQuestion: ")
INSTRUCTIONS = (" Call search with a question and answer from the passages it returns, naming "
                "the source file; get_document gives a whole file.")
# A folder that is no cafe, with every kind of name a URI must carry: a space, %, #, ?, a "%2F"
# that must stay three characters, accents, a character beyond the BMP, brackets and quotes.
BIKE_SHOP = {
    "repair guide.md": "# Repair guide\n\nA flat tyre: take the wheel off, find the hole, "
                       "patch the tube.\n",
    "50% off #1.txt": "Spring sale\n\nEvery helmet is half price until the end of April.\n",
    "a%2Fb.txt": "Not a path\n\nThis file's name holds a percent sign, not a slash.\n",
    "why?.txt": "Why ride\n\nCycling to work is quicker than the bus across town.\n",
    "Ölwechsel für Räder.txt": "Ölwechsel\n\nChains want a drop of oil every 300 km.\n",
    "\U0001F6B2 fleet.txt": "Fleet\n\nWe rent out twelve city bikes and four cargo bikes.\n",
    "[draft] 'rules' & more.md": "House rules\n\nNo bikes inside the showroom, please.\n",
    "plain.txt": "Opening times\n\nThe workshop opens at eight and closes at six.\n",
}


def uri_of(name):
    return "docs:///" + urllib.parse.quote(name, safe="")


def mime_of(name):
    return "text/plain" if name.endswith(".txt") else "text/markdown"


def line(message):
    """A message exactly as mcp_min writes it: compact JSON, non-ASCII escaped."""
    return json.dumps(message, separators=(",", ":"))


def answers(index_dir, requests, timeout=120):
    """Every request at once to `server.py --index index_dir` after the legacy handshake, then
    EOF: {id: the raw line of its answer}."""
    messages = [*HANDSHAKE, *requests]
    done = subprocess.run(server_command(index_dir), cwd=ROOT, capture_output=True, timeout=timeout,
                          input="".join(json.dumps(m) + "\n" for m in messages).encode())
    lines = done.stdout.decode().splitlines()
    assert len(lines) == len(messages) - 1, done.stderr.decode()[-3000:]
    return {json.loads(raw)["id"]: raw for raw in lines}


def result_line(request_id, result):
    return line({"jsonrpc": "2.0", "id": request_id, "result": result})


def error_line(request_id, code, message, data):
    return line({"jsonrpc": "2.0", "id": request_id,
                 "error": {"code": code, "message": message, "data": data}})


def request(request_id, method, params=None):
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def run(coroutine, timeout=180):
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


@pytest.fixture(scope="module")
def bike_shop(tmp_path_factory, model):
    """(docs, index) of the bike shop, built with the defaults: no --name, no --description."""
    folder = tmp_path_factory.mktemp("bikes")
    docs = folder / "bike_shop"
    docs.mkdir()
    for name, text in BIKE_SHOP.items():
        (docs / name).write_text(text, encoding="utf-8")
    index_build.build_index(docs, folder / "index", model=model)
    return docs, folder / "index"


@pytest.fixture(scope="module")
def bike_server(bike_shop):
    server = LiveServer(server_command(bike_shop[1]))
    yield server
    server.close()


# --- The cafe's index on the wire, legacy era: exact lines ---

def test_the_cafes_resources_prompt_and_completion_exact_on_the_wire(built_index):
    files = json.loads((built_index / "manifest.json").read_text())["files"]
    faq = (DOCS / "faq.txt").read_text(encoding="utf-8")
    ask = {"question": "Can I bring my dog?", "document": "faq.txt"}
    got = answers(built_index, [
        request(1, "resources/templates/list"),
        request(2, "resources/list"),
        request(3, "resources/read", {"uri": "docs:///faq.txt"}),
        request(4, "resources/read", {"uri": "docs:///nope.txt"}),
        request(5, "resources/read", {"uri": "docs:///%2e%2e%2fetc%2fpasswd"}),
        request(6, "prompts/list"),
        request(7, "prompts/get", {"name": "ask", "arguments": ask}),
        request(8, "completion/complete", {"ref": {"type": "ref/prompt", "name": "ask"},
                                           "argument": {"name": "document", "value": "H"}}),
        request(9, "completion/complete", {"ref": {"type": "ref/resource", "uri": TEMPLATE[
            "uriTemplate"]}, "argument": {"name": "name", "value": "faq"}}),
    ])
    assert got[0] == result_line(0, {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {"listChanged": True},
                         "resources": {"listChanged": True, "subscribe": True},
                         "prompts": {"listChanged": True}, "completions": {}},
        "instructions": f"{DOCS_NAME} holds {DOCS_DESCRIPTION}.{INSTRUCTIONS}",
        "serverInfo": {"name": "rag-search-server", "version": server_module.__version__}})
    assert got[1] == result_line(1, {"resourceTemplates": [TEMPLATE]})
    assert got[2] == result_line(2, {"resources": [
        {"uri": f"docs:///{name}", "name": name, "title": info["title"],
         "mimeType": "text/plain", "size": info["bytes"]} for name, info in files.items()]})
    assert len(files) == 9 and files["faq.txt"]["title"].startswith("The Wandering Kettle")
    assert got[3] == result_line(3, {"contents": [
        {"uri": "docs:///faq.txt", "mimeType": "text/plain", "text": faq}]})
    names = ", ".join(files)
    assert got[4] == error_line(4, INVALID_PARAMS, "Resource not found: unknown document "
                                f"'nope.txt'. Valid names: {names}", {"uri": "docs:///nope.txt"})
    # Decoded, the name holds slashes: mcp_min refuses it before server.py sees it.
    assert got[5] == error_line(5, INVALID_PARAMS, "Resource not found: docs:///%2e%2e%2fetc%2f"
                                "passwd; resources/list and resources/templates/list say what "
                                "exists", {"uri": "docs:///%2e%2e%2fetc%2fpasswd"})
    assert got[6] == result_line(6, {"prompts": [{
        "name": "ask", "title": "Ask the documents",
        "description": f"Answer a question from {DOCS_NAME}, naming the files the answer comes "
                       "from.", "arguments": ASK_ARGUMENTS}]})
    assert got[7] == result_line(7, {"messages": [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": "docs:///faq.txt", "mimeType": "text/plain", "text": faq}}},
        {"role": "user", "content": {"type": "text", "text": (
            "Answer this question from the document faq.txt above, naming it; if the answer is "
            "not there, use the search tool.\n\nQuestion: Can I bring my dog?")}}]})
    assert got[8] == result_line(8, {"completion": {
        "values": ["history.txt", "hours_access.txt"], "total": 2, "hasMore": False}})
    assert got[9] == result_line(9, {"completion": {
        "values": ["faq.txt"], "total": 1, "hasMore": False}})


def test_search_results_link_to_their_source_documents(live_server):
    found = live_server.call("search", {"query": "can I bring a dog", "top_k": 5})
    results = found["structuredContent"]["results"]
    assert found["isError"] is False and set(results[0]) == {"rank", "source", "distance",
                                                             "text", "score"}
    assert found["content"][0] == {"type": "text", "text": server_module.format_results(results)}
    resources = {r["name"]: r for r in live_server.run(live_server.client.list_resources())}
    sources = list(dict.fromkeys(r["source"] for r in results))  # distinct, best first
    assert len(sources) >= 2 and sources[0] == "faq.txt"
    assert found["content"][1:] == [{"type": "resource_link", **resources[s]} for s in sources]
    assert found["content"][1] == {
        "type": "resource_link", "uri": "docs:///faq.txt", "name": "faq.txt",
        "title": "The Wandering Kettle - Frequently Asked Questions", "mimeType": "text/plain",
        "size": (DOCS / "faq.txt").stat().st_size}
    assert text_of(found) == found["content"][0]["text"]  # what a model reads: as before


# --- Any folder: names that need encoding, through client.Client (modern era) ---

def test_every_name_round_trips_through_its_uri(bike_shop, bike_server):
    docs, _ = bike_shop
    listed = bike_server.run(bike_server.client.list_resources())
    assert sorted(r["name"] for r in listed) == sorted(BIKE_SHOP)
    for resource in listed:
        name = resource["name"]
        text = (docs / name).read_text(encoding="utf-8")
        title = text.splitlines()[0].removeprefix("# ")  # a title is words, without markup
        assert resource == {"uri": uri_of(name), "name": name, "title": title,
                            "mimeType": mime_of(name), "size": len(text.encode())}
        assert re.fullmatch(r"docs:///[A-Za-z0-9%._~-]+", resource["uri"])  # nothing left raw
        assert urllib.parse.unquote(resource["uri"][len("docs:///"):]) == name
        read = bike_server.run(bike_server.client.read_resource(resource["uri"]))
        assert read["contents"] == [{"uri": resource["uri"], "mimeType": mime_of(name),
                                     "text": text}]
    assert uri_of("a%2Fb.txt") == "docs:///a%252Fb.txt"  # read above as a%2Fb.txt, no slash


def test_templates_prompt_and_completion_through_our_client(bike_shop, bike_server):
    client = bike_server.client
    assert bike_server.run(client.list_resource_templates()) == [TEMPLATE]
    assert bike_server.run(client.list_prompts()) == [{
        "name": "ask", "title": "Ask the documents", "description": "Answer a question from "
        "bike_shop, naming the files the answer comes from.", "arguments": ASK_ARGUMENTS}]

    asked = bike_server.run(client.get_prompt("ask", {"question": "Do you rent cargo bikes?"}))
    assert asked["messages"] == [{"role": "user", "content": {
        "type": "text", "text": ASK_SEARCH + "Do you rent cargo bikes?"}}]
    name = "repair guide.md"
    asked = bike_server.run(client.get_prompt("ask", {"question": "Flat tyre?", "document": name}))
    assert asked["messages"][0] == {"role": "user", "content": {"type": "resource", "resource": {
        "uri": "docs:///repair%20guide.md", "mimeType": "text/markdown",
        "text": BIKE_SHOP[name]}}}
    assert asked["messages"][1]["content"]["text"].endswith("\n\nQuestion: Flat tyre?")
    with pytest.raises(MCPError) as refused:
        bike_server.run(client.get_prompt("ask", {"question": "x", "document": "../secret.txt"}))
    assert refused.value.code == INVALID_PARAMS and "unknown document" in refused.value.message
    with pytest.raises(MCPError) as refused:  # the question is required
        bike_server.run(client.get_prompt("ask", {"document": name}))
    assert refused.value.code == INVALID_PARAMS

    prompt = {"type": "ref/prompt", "name": "ask"}
    completed = bike_server.run(client.complete(prompt, "document", "ö"))  # any case
    assert completed["completion"] == {"values": ["Ölwechsel für Räder.txt"], "total": 1,
                                       "hasMore": False}
    template = {"type": "ref/resource", "uri": "docs:///{name}"}
    completed = bike_server.run(client.complete(template, "name", ""))
    assert completed["completion"]["values"] == sorted(BIKE_SHOP)
    completed = bike_server.run(client.complete(template, "name", "zzz"))
    assert completed["completion"] == {"values": [], "total": 0, "hasMore": False}


def test_the_same_over_http_in_both_eras(bike_shop):
    # A 2026-07-28 request over HTTP repeats the URI in its Mcp-Name header: a header is ASCII,
    # and so is every URI here, the name percent-encoded whole.
    async def body(url, legacy):
        async with HTTPClient(url, legacy=legacy) as client:
            listed = await client.list_resources()
            assert sorted(r["name"] for r in listed) == sorted(BIKE_SHOP)
            for resource in listed:
                read = await client.read_resource(resource["uri"])
                assert read["contents"][0]["text"] == BIKE_SHOP[resource["name"]]
            name = "Ölwechsel für Räder.txt"
            asked = await client.get_prompt("ask", {"question": "Oil?", "document": name})
            assert asked["messages"][0]["content"]["resource"]["uri"] == uri_of(name)
    with server_py_over_http(bike_shop[1]) as url:
        for legacy in (False, True):
            run(body(url, legacy))


# --- Refusals: the rules of get_document, for resources too ---

@pytest.fixture
def changed_shop(tmp_path, model):
    """A bike shop whose files changed since its build: one replaced by bytes that are no text,
    one by a symlink out of the folder; and a symlink that was there at the build."""
    docs = tmp_path / "docs"
    docs.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("The safe code is 1234.\n")
    for name in ("guide.txt", "binary.txt", "linked.txt"):
        (docs / name).write_text(f"{name}\n\nThe workshop fixes every kind of bike.\n")
    (docs / "secret.txt").symlink_to(secret)  # skipped by the build
    index_build.build_index(docs, tmp_path / "index", model=model)
    (docs / "binary.txt").write_bytes(b"The safe code is 1234.\0\0\0")
    (docs / "linked.txt").unlink()
    (docs / "linked.txt").symlink_to(secret)
    # --no-watch: the server would rebuild the index within seconds, and then skip both files
    server = LiveServer(server_command(tmp_path / "index", "--no-watch"))
    yield server
    server.close()


@pytest.mark.parametrize("uri, reason", [
    ("docs:///nope.txt", "unknown document 'nope.txt'"),
    ("docs:///GUIDE.TXT", "unknown document 'GUIDE.TXT'"),
    ("docs:///secret.txt", "unknown document 'secret.txt'"),  # a symlink out, since the build
    ("docs:///linked.txt", "document 'linked.txt' is not available any more. Valid names"),
    ("docs:///binary.txt", "document 'binary.txt' cannot be served: holds NUL bytes"),
    ("docs:///..%2Fsecret.txt", "docs:///..%2Fsecret.txt; resources/list"),
    ("docs:///%2e%2e%2fetc%2fpasswd", "docs:///%2e%2e%2fetc%2fpasswd; resources/list"),
    ("docs:///..", "docs:///..; resources/list"),
    ("docs:///%2E%2E", "docs:///%2E%2E; resources/list"),
    ("docs:///guide.txt%00", "docs:///guide.txt%00; resources/list"),
    ("docs:///guide.txt/x", "docs:///guide.txt/x; resources/list"),
    ("docs:////etc/passwd", "docs:////etc/passwd; resources/list"),
    ("file:///etc/passwd", "file:///etc/passwd; resources/list"),
])
def test_a_resource_that_cannot_be_served_is_not_found(changed_shop, uri, reason):
    with pytest.raises(MCPError) as refused:
        changed_shop.run(changed_shop.client.read_resource(uri))
    assert refused.value.code == INVALID_PARAMS and refused.value.data == {"uri": uri}
    assert refused.value.message.startswith(f"Resource not found: {reason}")
    assert "1234" not in refused.value.message and "/tmp" not in refused.value.message


def test_get_document_refuses_a_file_replaced_by_binary(changed_shop):
    result = changed_shop.call("get_document", {"name": "binary.txt"})
    assert result["isError"] is True and "1234" not in text_of(result)
    assert text_of(result) == ("Tool get_document refused: document 'binary.txt' "
                               "cannot be served: holds NUL bytes (the first at offset 22), so it "
                               "is binary or UTF-16 without a byte order mark; save it as UTF-8")
    guide = changed_shop.run(changed_shop.client.read_resource("docs:///guide.txt"))
    assert guide["contents"][0]["text"].startswith("guide.txt\n\n")  # the others still serve


# --- What the model reads comes from the index ---

CAFE_WORDS = re.compile(r"cafe|café|kettle|wandering|customer|dog", re.IGNORECASE)


def everything_a_model_reads(index_dir):
    """The initialize result, and the tools, prompts and resource templates lists, as text."""
    got = answers(index_dir, [request(1, "tools/list"), request(2, "prompts/list"),
                              request(3, "resources/templates/list")])
    return {key: json.loads(raw)["result"] for key, raw in got.items()}


def test_an_index_of_another_folder_says_nothing_of_a_cafe(bike_shop):
    read = everything_a_model_reads(bike_shop[1])
    assert not CAFE_WORDS.search(json.dumps(read, ensure_ascii=False))
    words = "bike_shop holds the documents in the folder bike_shop."
    assert read[0]["instructions"] == words + INSTRUCTIONS
    descriptions = {tool["name"]: tool["description"] for tool in read[1]["tools"]}
    assert descriptions["search"].startswith(
        "Search bike_shop for the passages closest in meaning to a question.\n\n"
        "It holds the documents in the folder bike_shop. Use this")
    assert descriptions["list_documents"].startswith("List the document files of bike_shop ")
    assert descriptions["get_document"].startswith("Return one document file of bike_shop ")
    assert read[2]["prompts"][0]["description"].startswith("Answer a question from bike_shop,")
    assert "{index" not in json.dumps(read)  # every placeholder filled


def test_without_an_index_the_words_are_generic(tmp_path):
    read = everything_a_model_reads(tmp_path / "no-index")
    text = json.dumps(read)
    assert not CAFE_WORDS.search(text) and "{" + "index" not in text
    assert read[0]["instructions"] == ("the index holds the documents it was built from."
                                       + INSTRUCTIONS)
    search = next(tool for tool in read[1]["tools"] if tool["name"] == "search")
    assert search["description"].startswith("Search the index for the passages closest")


@pytest.mark.parametrize("problem, fix", [
    ("missing", "(missing index/manifest.json); run `python index_build.py --docs DOCS --index "
                ".../index` to build it"),
    ("damaged", "(manifest.json is not valid JSON: Expecting value: line 1 column 1 (char 0)); "
                "run `python index_build.py --docs DOCS --index .../index` to rebuild it"),
    ("another version", "the search index was made by another version of index_build.py; "
                        "run `python index_build.py --docs DOCS --index .../index` to rebuild it"),
])
def test_without_a_usable_index_nothing_is_listed_and_the_rest_says_how_to_build_it(
        bike_shop, tmp_path, problem, fix):
    """resources/list has nothing to list (it failed with -32603, which stopped client.py at
    its second step); the tools and resources/read still name the command that builds it."""
    index = tmp_path / "index"
    if problem != "missing":
        shutil.copytree(bike_shop[1], index)
        manifest = json.loads((index / "manifest.json").read_text())
        manifest["ranking"] = {**manifest["ranking"], "passage_text": "title"}
        text = "not json" if problem == "damaged" else json.dumps(manifest)
        (index / "manifest.json").write_text(text)
    got = answers(index, [request(1, "resources/list"),
                          request(2, "resources/read", {"uri": uri_of("plain.txt")}),
                          request(3, "tools/call", {"name": "search", "arguments": {"query": "x"}}),
                          request(4, "completion/complete", {
                              "ref": {"type": "ref/resource", "uri": "docs:///{name}"},
                              "argument": {"name": "name", "value": "p"}})])
    assert got[1] == result_line(1, {"resources": []})
    error = json.loads(got[2])["error"]
    assert error["code"] == -32603 and error["message"].endswith(fix)
    call = json.loads(got[3])["result"]
    assert call["isError"] and call["content"][0]["text"].endswith(fix)
    assert json.loads(got[4])["result"]["completion"]["values"] == []
    assert str(tmp_path) not in got[2] + got[3]


def test_the_cafes_words_are_given_by_make_index_only():
    # conftest builds docs/ with the words the Makefile passes; server.py holds none of them.
    planned = subprocess.run(["make", "-n", "index"], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
    assert planned.returncode == 0, planned.stderr
    assert (f'index_build.py --docs docs --index index --name "{DOCS_NAME}"' in planned.stdout
            and f'--description "{DOCS_DESCRIPTION}"' in planned.stdout)
    assert not CAFE_WORDS.search((ROOT / "server.py").read_text())


def test_index_build_records_the_name_and_description_it_is_given(tmp_path, model, monkeypatch):
    docs = tmp_path / "manuals"
    docs.mkdir()
    (docs / "brakes.txt").write_text("Brakes\n\nDisc brakes need new pads every 2,000 km.\n")
    monkeypatch.setattr(index_build, "load_model", lambda **options: model)  # the shared one
    status = index_build.main(["--docs", str(docs), "--index", str(tmp_path / "index"),
                               "--name", " Acme Bikes ", "--description",
                               "the manuals of every bike Acme sells"])
    manifest = index_search.read_manifest(tmp_path / "index")
    assert status == 0 and (manifest["name"], manifest["description"]) == (
        "Acme Bikes", "the manuals of every bike Acme sells")
    read = everything_a_model_reads(tmp_path / "index")
    assert read[0]["instructions"].startswith(
        "Acme Bikes holds the manuals of every bike Acme sells. Call search")
    index_build.build_index(docs, tmp_path / "index", model=model)  # no words: the defaults
    manifest = index_search.read_manifest(tmp_path / "index")
    assert (manifest["name"], manifest["description"]) == ("manuals",
                                                           "the documents in the folder manuals")


@pytest.mark.parametrize("option, value", [
    ("--name", ""), ("--name", "   "), ("--name", "two\nlines"), ("--description", "a\tb"),
    ("--description", "x" * 401), ("--name", "bell\x07"),
])
def test_a_name_or_description_that_is_not_one_line_is_refused(tmp_path, option, value):
    done = subprocess.run([sys.executable, str(ROOT / "index_build.py"), "--docs", str(DOCS),
                           "--index", str(tmp_path / "index"), option, value], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == (f"index_build.py: error: argument {option}: must be "
                                            "one line of printable text, 1 to 400 characters")
    assert not (tmp_path / "index").exists()


# --- Thousands of files ---

MANY = 3000


@pytest.fixture(scope="module")
def many_files(tmp_path_factory, model):
    """(docs, index) of 3,000 tiny files with 200-character titles. The first 100, the largest
    page, have names of 120 accented letters and titles of bicycles, 12 bytes each as escaped
    JSON, after a word (a title is a line with words), and a text each. The other 2,900 share
    one title and one text: the build embeds each distinct text once, 101 in all, not 3,000."""
    folder = tmp_path_factory.mktemp("many")
    docs = folder / "docs"
    docs.mkdir()
    for i in range(MANY):
        if i < 100:
            name = f"{i:04d} {'é' * 120}.txt"
            text = "Bikes" + "\U0001F6B2" * 300 + f"\n\nPart {i}.\n"
        else:
            name = f"{i:04d}.txt"
            text = "Note" + "x" * (doc_readers.TITLE_MAX_CHARS - 4) + "\n\nA part.\n"
        (docs / name).write_text(text, encoding="utf-8")
    index_build.build_index(docs, folder / "index", model=model)
    return docs, folder / "index"


def test_3000_files_list_page_by_page_far_below_the_message_limit(many_files):
    docs, index_dir = many_files
    cursors = [None, *(str(n) for n in range(100, MANY, 100))]
    got = answers(index_dir, [request(i, "resources/list", {"cursor": cursor} if cursor else {})
                              for i, cursor in enumerate(cursors, 1)])
    listed = []
    for i, cursor in enumerate(cursors, 1):
        assert len(got[i]) < mcp_min.MAX_MESSAGE_BYTES // 8, (i, len(got[i]))
        page = json.loads(got[i])["result"]
        assert page.get("nextCursor") == (cursors[i] if i < len(cursors) else None)
        assert len(page["resources"]) == 100
        listed += page["resources"]
    names = sorted(path.name for path in docs.iterdir())
    assert [r["name"] for r in listed] == names and len(set(names)) == MANY
    assert all(r["uri"] == uri_of(r["name"]) for r in listed)
    assert all(len(r["title"]) == doc_readers.TITLE_MAX_CHARS for r in listed)
    assert max(len(got[i]) for i in got if i) == len(got[1])  # the accents and the bicycles


def test_3000_files_through_our_client(many_files):
    async def body():
        async with Client(server_command(many_files[1]), cwd=ROOT) as client:
            listed = await client.list_resources()  # follows nextCursor, 30 pages
            assert len(listed) == MANY and listed[-1]["uri"] == "docs:///2999.txt"
            read = await client.read_resource(listed[0]["uri"])
            assert read["contents"][0]["text"].endswith("\n\nPart 0.\n")
            ask = {"type": "ref/prompt", "name": "ask"}
            everything = await client.complete(ask, "document", "")  # bounded: 100 of 3,000
            assert everything["completion"] == {"values": [r["name"] for r in listed[:100]],
                                                "total": MANY, "hasMore": True}
            some = await client.complete(ask, "document", "29")
            assert some["completion"]["values"] == [f"29{n:02d}.txt" for n in range(100)]
    run(body())


def test_the_listing_is_made_once_per_manifest(bike_shop, model):
    docs, index_dir = bike_shop
    library = server_module.Library(index_dir)
    first = library.documents()
    assert library.documents() is first  # each page of resources/list asks again
    index_build.build_index(docs, index_dir, model=model)  # a new manifest: a new listing
    assert library.documents() is not first and library.documents() == first


# --- The official SDK's client reads them, in both eras ---

@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_sdk_client_reads_resources_and_the_prompt(bike_shop, era):
    docs, index_dir = bike_shop
    params = StdioServerParameters(command=sys.executable, args=server_command(index_dir)[1:],
                                   cwd=str(ROOT))

    async def body():
        with tempfile.TemporaryFile("w+") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    if era == "legacy":
                        assert (await session.initialize()).protocol_version == "2025-11-25"
                    else:
                        assert (await session.discover()).supported_versions == ["2026-07-28"]
                    await exercise(session)

    async def exercise(session):
        listed = (await session.list_resources()).resources
        assert sorted(r.name for r in listed) == sorted(BIKE_SHOP)
        for resource in listed:
            assert str(resource.uri) == uri_of(resource.name)
            contents = (await session.read_resource(str(resource.uri))).contents
            assert [(c.text, c.mime_type) for c in contents] == [
                (BIKE_SHOP[resource.name], mime_of(resource.name))]
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["docs:///{name}"]
        prompts = (await session.list_prompts()).prompts
        assert [(p.name, [a.name for a in p.arguments]) for p in prompts] == [
            ("ask", ["question", "document"])]
        name = "\U0001F6B2 fleet.txt"
        prompt = await session.get_prompt("ask", {"question": "How many?", "document": name})
        embedded = prompt.messages[0].content
        assert embedded.type == "resource" and embedded.resource.text == BIKE_SHOP[name]
        completed = await session.complete(PromptReference(type="ref/prompt", name="ask"),
                                           {"name": "document", "value": "\U0001F6B2"})
        assert completed.completion.values == [name]
        template = ResourceTemplateReference(type="ref/resource", uri="docs:///{name}")
        completed = await session.complete(template, {"name": "name", "value": "50"})
        assert completed.completion.values == ["50% off #1.txt"]
        found = await session.call_tool("search", {"query": "cargo bikes to rent", "top_k": 3})
        assert not found.is_error and found.content[0].type == "text"
        links = found.content[1:]
        assert links and all(link.type == "resource_link" for link in links)
        assert str(links[0].uri) == uri_of(name) and links[0].name == name
    run(body())
