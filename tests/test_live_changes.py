"""The search server announces its own changes (issue 23, part 4): a file edited and a file
added under a running server.py reach the clients that listen, while they send nothing. Over
stdio with raw lines (a legacy client and a 2026-07-28 listen on the same pipe), and over HTTP
with the official SDK's client (a legacy session's GET stream and a 2026-07-28 listen).

And every replica hears every change (issue 30, item 3): two server.py on one index, one over
stdio and one over HTTP, each tell their own clients whichever of them rebuilt; and servers
that never rebuild (--no-watch) tell theirs of an index that index_build.py, run beside them as
`make index` runs it, published.
"""
import asyncio, json, os, queue, shutil, subprocess, sys, threading, time, warnings

import mcp

import index_build
import server as server_module
from conftest import DOCS, ROOT, server_command, server_py_over_http

META = "io.modelcontextprotocol/"
FAQ = "docs:///faq.txt"
MODERN_META = {META + "protocolVersion": "2026-07-28", META + "clientCapabilities": {}}
WAIT = 300  # seconds: a model loads slowly on a busy machine


def docs_and_index(tmp_path, model, name):
    docs = tmp_path / name / "docs"
    docs.mkdir(parents=True)
    for file in ("faq.txt", "hours_access.txt", "menu_prices.txt"):
        shutil.copy(DOCS / file, docs / file)
    index_build.build_index(docs, tmp_path / name / "index", model=model)
    return docs, tmp_path / name / "index"


def edit_and_add(docs):
    (docs / "faq.txt").write_bytes((docs / "faq.txt").read_bytes()
                                   + b"\nQ: Do you sell dog treats? A: Yes, at the counter.\n")
    (docs / "loyalty.md").write_text("# Stamps\n\nTen stamps earn a free scone.\n")


def line(message):
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def listen_over_stdio(server):
    """Raw lines: a legacy client subscribes, a 2026-07-28 client listens, both on one pipe.
    Returns the queue of the lines the server writes from then on, once it has answered."""
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(raw) for raw in server.stdout], daemon=True).start()
    listen = {"_meta": MODERN_META, "notifications": {"resourcesListChanged": True,
                                                      "resourceSubscriptions": [FAQ]}}
    for message in [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": FAQ}},
            {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": listen}]:
        server.stdin.write(line(message))
    server.stdin.flush()
    answered = set()
    while not {0, 1} <= answered:  # the answers; the acknowledgement has no id
        answered.add(json.loads(lines.get(timeout=WAIT)).get("id"))
    # The model has loaded once a search ranks by meaning (before, by keywords); the watcher
    # runs from then on.
    search = {"name": "search", "arguments": {"query": "dog"}}
    for _ in range(10 * WAIT):
        server.stdin.write(line({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                 "params": search}))
        server.stdin.flush()
        while (answer := json.loads(lines.get(timeout=WAIT))).get("id") != 2:
            pass
        if answer["result"]["structuredContent"]["ranking"] == "meaning":
            return lines
        time.sleep(0.1)
    raise AssertionError(f"no model after {WAIT} s")


def heard_over_stdio(lines):
    """(what the stdio clients heard until they heard all they expect, what they expect):
    faq.txt changed and the list changed, in both eras."""
    tag = {"_meta": {META + "subscriptionId": "L"}}
    expected = {line({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                      "params": {"uri": FAQ}}),
                line({"jsonrpc": "2.0", "method": "notifications/resources/list_changed",
                      "params": {}}),
                line({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                      "params": {"uri": FAQ, **tag}}),
                line({"jsonrpc": "2.0", "method": "notifications/resources/list_changed",
                      "params": tag})}
    heard = set()
    while not expected <= heard:
        heard.add(lines.get(timeout=WAIT))
    return heard, expected


async def hear_over_http(url, change):
    """The SDK's clients: a legacy one subscribes (its GET stream), a 2026-07-28 one listens;
    then change() runs (in a thread: it may take a while) and they hear what it changed."""
    heard = asyncio.Queue()

    async def on_message(message):
        params = getattr(message, "params", None)
        await heard.put(f"{type(message).__name__} {getattr(params, 'uri', None)}")
    async with mcp.Client(url, mode="legacy", message_handler=on_message) as legacy, \
            mcp.Client(url, mode="2026-07-28") as modern:
        with warnings.catch_warnings():  # the SDK deprecates subscribe in favour of listen
            warnings.simplefilter("ignore")
            await legacy.subscribe_resource(FAQ)
        async with modern.listen(resources_list_changed=True,
                                 resource_subscriptions=[FAQ]) as listening:
            for _ in range(10 * WAIT):  # the model is up once a search ranks by meaning
                found = await modern.call_tool("search", {"query": "dog"})
                if found.structured_content["ranking"] == "meaning":
                    break
                await asyncio.sleep(0.1)
            await asyncio.to_thread(change)  # from here on the clients send nothing
            events = set()
            async for change in listening:
                events.add(repr(change))
                if len(events) == 2:
                    break
            return events, {await asyncio.wait_for(heard.get(), WAIT) for _ in range(2)}


def test_clients_of_both_eras_hear_an_edit_and_an_addition_over_stdio_and_http(tmp_path, model):
    stdio_docs, stdio_index = docs_and_index(tmp_path, model, "stdio")
    http_docs, http_index = docs_and_index(tmp_path, model, "http")
    # Both servers load their model at once; each watches its own copy of the folder.
    server = subprocess.Popen(server_command(stdio_index), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        with server_py_over_http(http_index) as url:
            lines = listen_over_stdio(server)
            edit_and_add(stdio_docs)  # from here on the client sends nothing
            heard, expected = heard_over_stdio(lines)
            assert heard == expected  # and nothing else (a second look at the folder that saw
            # the addition apart from the edit repeats the same lines)
            events, legacy_heard = asyncio.run(asyncio.wait_for(
                hear_over_http(url, lambda: edit_and_add(http_docs)), 2 * WAIT))
    finally:
        server.kill()
        server.wait()
    assert_heard_over_http(events, legacy_heard)


def assert_heard_over_http(events, legacy_heard):
    assert events == {f"ResourceUpdated(uri='{FAQ}')", "ResourcesListChanged()"}
    assert legacy_heard == {f"ResourceUpdatedNotification {FAQ}",
                            "ResourceListChangedNotification None"}


def hear_on_both_servers(index_dir, change, *options):
    """A server.py over stdio and one over HTTP, both on index_dir (with `options`), their
    clients listening; then change() runs. Both servers' clients must hear all of it."""
    server = subprocess.Popen(server_command(index_dir, *options), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        with server_py_over_http(index_dir, *options) as url:
            lines = listen_over_stdio(server)
            events, legacy_heard = asyncio.run(asyncio.wait_for(hear_over_http(url, change),
                                                                2 * WAIT))
            heard, expected = heard_over_stdio(lines)
    finally:
        server.kill()
        server.wait()
    assert_heard_over_http(events, legacy_heard)
    assert heard == expected


def test_two_servers_on_one_index_each_tell_their_clients_whichever_rebuilt(tmp_path, model):
    """Both watch the same folder: the first to see the edit rebuilds the index, the other
    finds the index already new (or the build lock taken) and builds nothing. Before issue 30
    that one's clients heard nothing; now each server announces how the index it loads
    differs from the one it served."""
    docs, index_dir = docs_and_index(tmp_path, model, "shared")
    hear_on_both_servers(index_dir, lambda: edit_and_add(docs))


def test_servers_that_never_rebuild_hear_an_index_build_run_beside_them(tmp_path, model):
    """--no-watch servers (a read-only replica) never build: only index_build.py does, as `make
    index` runs it. faq.txt is edited and hours_access.txt removed before that build."""
    docs, index_dir = docs_and_index(tmp_path, model, "replica")

    def make_index():
        (docs / "faq.txt").write_text("Q: Do you sell dog treats? A: Yes, at the counter.\n")
        (docs / "hours_access.txt").unlink()
        built = subprocess.run([sys.executable, str(ROOT / "index_build.py"), "--docs",
                                str(docs), "--index", str(index_dir)], capture_output=True,
                               text=True, timeout=WAIT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert built.returncode == 0, built.stderr
    hear_on_both_servers(index_dir, make_index, "--no-watch")


def test_what_is_announced_is_the_difference_between_the_indexes(tmp_path, model, monkeypatch):
    """The watcher's look (Library.refresh) in one process, without a server: a build by
    "someone else" (index_build here) is announced as the files it changed, added and
    removed; a build that changed nothing, and a look with no new build, announce nothing.
    An index that appears where there was none (main() served no files) is all added."""
    docs, index_dir = docs_and_index(tmp_path, model, "one")
    announced = []
    monkeypatch.setattr(server_module, "documents_changed", lambda *names: announced.append(names))
    library = server_module.Library(index_dir, rebuild=False)  # never builds: notes, announces
    library.served = library.current_manifest()[1]["files"]  # what main() does
    (docs / "faq.txt").write_text("Q: Dogs? A: Yes.\n")
    (docs / "menu_prices.txt").unlink()
    (docs / "loyalty.md").write_text("# Stamps\n\nTen stamps earn a free scone.\n")
    library.refresh()
    assert announced == []  # nothing built yet
    index_build.build_index(docs, index_dir, model=model)
    library.refresh()
    library.refresh()
    index_build.build_index(docs, index_dir, model=model)  # same files, a new manifest
    library.refresh()
    assert announced == [(["faq.txt"], ["loyalty.md"], ["menu_prices.txt"])]
    late = server_module.Library(tmp_path / "none", docs, rebuild=False)
    late.served = {}  # main(): no index at startup, so resources/list listed nothing
    shutil.copytree(index_dir, tmp_path / "none")
    late.refresh()
    assert announced[1] == ([], ["faq.txt", "hours_access.txt", "loyalty.md"], [])
