"""The docs folder as a tree (issue 25): nested names, hidden folders, symlinks in and out, a
loop, limits, YAML front matter, and incremental builds checked against fresh ones."""
import json

import numpy as np
import pytest

import index_build
import index_search
from conftest import server_command, wire_by_meaning
from test_resources import HANDSHAKE, request

TREE = {
    "index.md": "---\ntitle: Home page\nms.date: 01/02/2024\n---\n# Welcome\n\n"
                "The start page of the kettle handbook, about everything.\n",
    "guide/install.md": "---\ntitle: Installing the kettle\nauthor: x\n---\n# Install\n\n"
                        "Plug the kettle in and fill it with water up to the line.\n",
    "guide/deep/a/b/c/notes.txt": "Deep notes\n\nA note kept five folders down about "
                                  "descaling the kettle with vinegar.\n",
    "7.4/cmdlets/Get-Tea.md": "---\ntitle: Get-Tea\n---\n# Get-Tea\n\n"
                              "Returns a cup of green tea, without milk.\n",
    "7.5/cmdlets/Get-Tea.md": "---\ntitle: Get-Tea\n---\n# Get-Tea\n\n"
                              "Returns a cup of black tea, now with milk and sugar.\n",
    "with space/Café menü.markdown": "# Café menü\n\nCroissants and crêpes all morning.\n",
    "broken.md": "---\ntitle: [unclosed\n---\n# Broken front matter\n\nIt is not YAML.\n",
    "list.md": "---\n- a\n- b\n---\n# A list on top\n\nFront matter that is a list.\n",
    ".git/HEAD.md": "hidden\n", ".obsidian/workspace.md": "hidden\n",
    "node_modules/pkg/README.md": "a package\n", "guide/.draft.md": "hidden\n",
}
NAMES = ["7.4/cmdlets/Get-Tea.md", "7.5/cmdlets/Get-Tea.md", "alias/a/b/c/notes.txt",
         "broken.md", "guide/deep/a/b/c/notes.txt", "guide/install.md", "index.md",
         "linked.md", "list.md", "with space/Café menü.markdown"]
SKIPPED = [("alias/loop/", "a folder reached twice (a symlink loop)"),
           ("guide/deep/loop/", "a folder reached twice (a symlink loop)"),
           ("outdir/", "a symlink to a folder outside the docs folder"),
           ("secret.md", "not a regular file inside the docs folder")]


def make_tree(root):
    """The tree above under root/docs, with symlinks in and out and a loop; returns docs."""
    docs, outside = root / "docs", root / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("The safe code is 1234.\n")
    for name, text in TREE.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    (docs / "linked.md").symlink_to(docs / "guide" / "install.md")  # inside: followed
    (docs / "alias").symlink_to(docs / "guide" / "deep")             # a folder inside: followed
    (docs / "secret.md").symlink_to(outside / "secret.md")           # out of the tree: refused
    (docs / "outdir").symlink_to(outside)
    (docs / "guide" / "deep" / "loop").symlink_to(docs / "guide")    # a loop
    return docs


def test_the_scan_reads_the_whole_tree_and_reports_what_it_passes_over(tmp_path):
    docs = make_tree(tmp_path)
    usable, skipped = index_build.scan_docs(docs)
    assert list(usable) == NAMES
    assert skipped == SKIPPED
    assert usable["alias/a/b/c/notes.txt"] == docs / "alias/a/b/c/notes.txt"


def test_depth_and_file_limits_are_reported_never_a_hang(tmp_path, monkeypatch):
    docs = make_tree(tmp_path)
    monkeypatch.setattr(index_build, "MAX_DEPTH", 2)
    monkeypatch.setattr(index_build, "MAX_FILES", 3)
    usable, skipped = index_build.scan_docs(docs)
    assert len(usable) == 3
    assert ("guide/deep/a/", "more than 2 folders deep") in skipped
    assert sum(reason == "over the limit of 3 documents" for _, reason in skipped) >= 3


def test_front_matter_gives_the_title_and_is_not_passage_text(tmp_path, capfd):
    docs = make_tree(tmp_path)
    files, passages, skipped = index_build.read_documents(docs)
    titles = {name: info["title"] for name, info in files.items()}
    assert titles["index.md"] == "Home page"
    assert titles["guide/install.md"] == "Installing the kettle"
    assert titles["7.5/cmdlets/Get-Tea.md"] == "Get-Tea"
    assert titles["broken.md"] == "Broken front matter"  # the block stays text, not a title
    assert not any("ms.date" in p["text"] or "author:" in p["text"] for p in passages)
    by_source = {p["source"]: p for p in passages}
    # The folders are part of the heading each passage is embedded (and BM25-matched) under.
    assert by_source["7.5/cmdlets/Get-Tea.md"]["heading"] == "7.5 > cmdlets > Get-Tea"
    assert by_source["index.md"]["heading"] == "Home page > Welcome"
    warnings = capfd.readouterr().err.splitlines()
    front = [line for line in warnings if "front matter read as text" in line]
    assert len(front) == 2 and front[0].startswith("index_build: broken.md: front matter read as "
                                                   "text (not valid YAML: ")
    assert front[1] == ("index_build: list.md: front matter read as text (not a mapping of "
                        "names to values)")


def test_front_matter_is_bounded(tmp_path, capfd):
    (tmp_path / "docs").mkdir()
    endless = "---\ntitle: endless\n" + "key: value\n" * 10_000 + "---\n# Body\n\nText.\n"
    (tmp_path / "docs" / "endless.md").write_text(endless)
    files, passages, _ = index_build.read_documents(tmp_path / "docs")
    assert files["endless.md"]["title"] == "title: endless"
    assert "not closed within 65,536 characters" in capfd.readouterr().err


def counting_embed(monkeypatch):
    """index_build.embed, unchanged, counting the texts it embeds."""
    embedded, real = [], index_build.embed

    def embed(model, texts):
        embedded.extend(texts)
        return real(model, texts)
    monkeypatch.setattr(index_build, "embed", embed)
    return embedded


def counting_split(monkeypatch):
    """index_build.split_into_passages, unchanged, keeping the title of each text it splits."""
    split, real = [], index_build.split_into_passages

    def split_into_passages(text, title, *args):
        split.append(title)
        return real(text, title, *args)
    monkeypatch.setattr(index_build, "split_into_passages", split_into_passages)
    return split


def index_contents(index_dir):
    manifest, faiss_index, passages = index_search.load_index(index_dir)
    return manifest, faiss_index.reconstruct_n(0, faiss_index.ntotal), passages


def test_an_incremental_build_equals_a_fresh_build(tmp_path, model, monkeypatch):
    docs = make_tree(tmp_path)
    index_build.build_index(docs, tmp_path / "index", model=model)
    (docs / "guide" / "install.md").write_text("# Install\n\nPlug it in; the light goes red.\n")
    (docs / "guide" / "new.md").write_text("---\ntitle: New page\n---\nA new page on scones.\n")
    (docs / "index.md").unlink()
    before = set(index_build.embedding_texts(index_contents(tmp_path / "index")[2], "heading"))
    embedded, split = counting_embed(monkeypatch), counting_split(monkeypatch)
    incremental = index_build.build_index(docs, tmp_path / "index", model=model)
    # Only the changed files are split again: the edited one, read as itself and through
    # linked.md, and the new one. The other seven keep the passages the index holds.
    assert sorted(split) == ["Install", "Install", "New page"]
    after = set(index_build.embedding_texts(index_contents(tmp_path / "index")[2], "heading"))
    # Only the new text is embedded: the edited file (linked.md reaches it too) and the new one.
    assert sorted(embedded) == sorted(after - before) and 2 <= len(embedded) <= 3
    fresh = index_build.build_index(docs, tmp_path / "fresh", model=model)
    assert incremental["files"] == fresh["files"]
    _, vectors, passages = index_contents(tmp_path / "index")
    _, fresh_vectors, fresh_passages = index_contents(tmp_path / "fresh")
    assert passages == fresh_passages
    assert np.allclose(vectors, fresh_vectors, atol=1e-5)
    assert not (tmp_path / "index" / index_build.EMBEDDED_FILE).exists()


def test_passages_are_reused_only_from_a_build_by_the_same_splitter(tmp_path, model,
                                                                    monkeypatch):
    docs = make_tree(tmp_path)
    first = index_build.build_index(docs, tmp_path / "index", model=model)
    assert first["splitter"] == index_build.SPLITTER
    split = counting_split(monkeypatch)
    index_build.build_index(docs, tmp_path / "index", model=model)
    assert split == []  # nothing changed: nothing is split again
    # Another version of index_build.py may cut the same file differently: all is split again.
    monkeypatch.setattr(index_build, "SPLITTER", "another index_build.py")
    again = index_build.build_index(docs, tmp_path / "index", model=model)
    assert len(split) == len(first["files"])
    assert again["files"] == first["files"]


def test_an_interrupted_build_resumes_losing_at_most_one_batch(tmp_path, model, monkeypatch):
    docs = make_tree(tmp_path)
    monkeypatch.setattr(index_build, "EMBED_BATCH", 2)
    real, calls = index_build.embed, []

    def embed_then_stop(model, texts):
        calls.append(texts)
        if len(calls) == 3:  # the third batch is cut short, as by SIGTERM
            raise index_build.Interrupted(15)
        return real(model, texts)
    monkeypatch.setattr(index_build, "embed", embed_then_stop)
    with pytest.raises(index_build.Interrupted):
        index_build.build_index(docs, tmp_path / "index", model=model)
    assert not (tmp_path / "index" / index_build.MANIFEST_FILE).exists()
    monkeypatch.setattr(index_build, "embed", real)
    embedded = counting_embed(monkeypatch)
    manifest = index_build.build_index(docs, tmp_path / "index", model=model)
    assert len(embedded) == len(set(index_build.embedding_texts(
        index_contents(tmp_path / "index")[2], "heading"))) - 4  # two batches were kept
    fresh = index_build.build_index(docs, tmp_path / "fresh", model=model)
    assert manifest["files"] == fresh["files"]
    assert np.allclose(index_contents(tmp_path / "index")[1], index_contents(tmp_path / "fresh")[1],
                       atol=1e-5)


def test_nested_names_round_trip_on_the_wire_and_none_leaves_the_tree(tmp_path, model):
    docs = make_tree(tmp_path)
    index_build.build_index(docs, tmp_path / "index", model=model)
    menu = "with space/Café menü.markdown"
    uri = "docs:///with%20space%2FCaf%C3%A9%20men%C3%BC.markdown"
    hostile = ["../outside/secret.md", "/etc/passwd", "secret.md", "guide/../linked.md",
               ".git/HEAD.md", "node_modules/pkg/README.md", "guide//install.md", "guide/"]
    requests = [
        request(1, "tools/call", {"name": "list_documents", "arguments": {}}),
        request(2, "tools/call", {"name": "list_documents", "arguments": {"folder": "guide/"}}),
        request(3, "tools/call", {"name": "get_document", "arguments": {"name": menu}}),
        request(4, "resources/list"),
        request(5, "resources/read", {"uri": uri}),
        request(6, "completion/complete", {"ref": {"type": "ref/resource", "uri": "docs:///{name}"},
                                           "argument": {"name": "name", "value": "guide/"}}),
        request(7, "tools/call", {"name": "search", "arguments": {
            "query": "black tea with milk in 7.5", "top_k": 1}}),
        request(8, "resources/read", {"uri": "docs:///guide%2F..%2F..%2Foutside%2Fsecret.md"}),
        request(9, "resources/read", {"uri": "docs:///guide/install.md"}),
        *[request(10 + i, "tools/call", {"name": "get_document", "arguments": {"name": name}})
          for i, name in enumerate(hostile)],
    ]
    written, _ = wire_by_meaning(server_command(tmp_path / "index", "--no-watch"),
                                 [*HANDSHAKE, *requests])
    got = {m["id"]: m for m in written}
    top = got[1]["result"]["structuredContent"]
    assert [d["name"] for d in top["documents"]] == ["broken.md", "index.md", "linked.md",
                                                     "list.md"]
    assert [f["name"] for f in top["folders"]] == ["7.4/", "7.5/", "alias/", "guide/",
                                                   "with space/"]
    guide = got[2]["result"]["structuredContent"]
    assert [d["name"] for d in guide["documents"]] == ["guide/install.md"]
    assert guide["folders"] == [{"name": "guide/deep/", "documents": 1}]
    assert got[3]["result"]["content"][0]["text"] == TREE[menu]
    listed = {r["name"]: r["uri"] for r in got[4]["result"]["resources"]}
    assert list(listed) == NAMES and listed[menu] == uri
    assert got[5]["result"]["contents"][0]["text"] == TREE[menu]
    assert got[6]["result"]["completion"]["values"] == ["guide/deep/a/b/c/notes.txt",
                                                        "guide/install.md"]
    assert got[7]["result"]["structuredContent"]["results"][0]["source"] == \
        "7.5/cmdlets/Get-Tea.md"
    assert got[8]["error"]["code"] == -32602 and got[9]["error"]["code"] == -32602
    for i, name in enumerate(hostile):
        answer = got[10 + i]["result"]
        assert answer["isError"] is True and "1234" not in json.dumps(answer), name
        assert "unknown document" in answer["content"][0]["text"], name
    assert "1234" not in json.dumps(written)


def test_search_shows_a_versioned_page_once_and_a_folder_scopes_it(tmp_path, model):
    """Over the wire: a page in 7.4/ and 7.5/ is one result naming both; `folder` searches one
    version only; an unknown folder is one line naming the folders there are, closest first."""
    docs = make_tree(tmp_path)
    index_build.build_index(docs, tmp_path / "index", model=model)
    query = "a cup of tea with milk"
    searches = [{"query": query, "top_k": 3}, {"query": query, "folder": "7.4"},
                {"query": query, "folder": "7.4/cmdlets/"}, {"query": query, "folder": "7.6/"},
                {"query": query, "folder": "../outside"}, {"query": query, "folder": "guide/"}]
    requests = [request(1 + i, "tools/call", {"name": "search", "arguments": arguments})
                for i, arguments in enumerate(searches)]
    written, _ = wire_by_meaning(server_command(tmp_path / "index", "--no-watch"),
                                 [*HANDSHAKE, *requests])
    got = {m["id"]: m["result"] for m in written}
    everywhere = got[1]["structuredContent"]["results"]
    tea = [r for r in everywhere if "Get-Tea" in r["source"]]
    assert len(tea) == 1 and len(everywhere) == 3
    other = ({"7.4/cmdlets/Get-Tea.md", "7.5/cmdlets/Get-Tea.md"} - {tea[0]["source"]}).pop()
    assert tea[0]["also_in"] == [other] and tea[0]["versions"] == ["7.4/", "7.5/"]
    assert f"; also in {other}; in versions 7.4/, 7.5/\n" in got[1]["content"][0]["text"]
    for answer in got[2], got[3]:  # "7.4" is the folder "7.4/"
        results = answer["structuredContent"]["results"]
        assert [r["source"] for r in results] == ["7.4/cmdlets/Get-Tea.md"]
        assert "also_in" not in results[0] and results[0]["versions"] == ["7.4/", "7.5/"]
    for answer, folder in (got[4], "'7.6'"), (got[5], "'../outside'"):
        text = answer["content"][0]["text"]
        assert answer["isError"] is True and text.count("\n") == 0
        assert f"unknown folder {folder}. The folders there are (14, the closest first): " in text
        assert str(tmp_path) not in text and "secret" not in text
    closest = got[4]["content"][0]["text"].split("closest first): ")[1].split(", ")
    assert set(closest[:2]) == {"7.4/", "7.5/"}
    assert {r["source"] for r in got[6]["structuredContent"]["results"]} == {
        "guide/install.md", "guide/deep/a/b/c/notes.txt"}
