"""What index_build.py and server.py do with whatever a user's folder holds: files that are
not text, names that are not UTF-8, huge files, symlinks, damaged indexes, builds that race
each other or a searching server, builds killed half way, and bad settings.

Every fixture is made here, at test time. Reading permissions cannot be taken from root, so
when the tests run as root the processes that must meet an unreadable file run as `nobody`
(setpriv), in a folder every user may enter, from copies of the scripts put there: the
checkout itself may sit in a folder only its owner may enter.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

import doc_readers
import index_build
import index_search
import mcp_min
import server as server_module
from conftest import DOCS, ROOT, LiveServer, ranked_by_meaning, server_command, text_of

NOBODY = 65534


def run_cli(*args, python=(sys.executable,), scripts=ROOT, env=None, timeout=300):
    return subprocess.run([*python, str(scripts / "index_build.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=scripts)


def start_cli(*args):
    return subprocess.Popen([sys.executable, str(ROOT / "index_build.py"), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def snapshot(folder):
    """Every file under folder, by relative path, with its bytes; not the lock, which holds the
    process id of the last build."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.name != ".lock"}


def leftovers(*folders):
    return sorted(p.name for folder in folders for p in folder.iterdir()
                  if p.name.startswith(".building-") or "-building-" in p.name)


def wait_for(condition, seconds=120, what="a condition"):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def assert_no_paths(text, *folders):
    for folder in (ROOT, *folders):
        assert str(folder) not in text, text


def sha256(data):
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def open_folder():
    """A temporary folder that any user may enter and write (see the module docstring)."""
    folder = Path(tempfile.mkdtemp(prefix="messy-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_other_user(folder):
    """(python, scripts): the command that runs the project's Python as a user subject to file
    permissions, and the folder holding the scripts it can run. As root that user is `nobody`,
    and the scripts are copies in `folder`, which every user may read; the Python is the
    virtualenv's own folder with links resolved (.venv may be a link into a shared one).
    Skips, saying why, where `nobody` cannot run it: a virtualenv inside a private checkout."""
    if os.geteuid() != 0:
        return (sys.executable,), ROOT
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: cannot make a file unreadable")
    for name in ("index_build.py", "index_search.py", "doc_readers.py", "server.py", "mcp_min.py",
                 "mcp_http.py"):
        shutil.copy(ROOT / name, folder / name)
    python = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
              os.path.join(os.path.realpath(sys.prefix), "bin", "python"))
    probe = subprocess.run([*python, str(folder / "server.py"), "--help"], cwd=folder,
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        why = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"`nobody` cannot run {python[-1]} with the project's packages ({why}); "
                    "the virtualenv must sit where other users may read it")
    return python, folder


def copy_docs(folder, names=("faq.txt", "hours_access.txt", "menu_prices.txt")):
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    for name in names:
        shutil.copy(DOCS / name, folder / name)
        (folder / name).chmod(0o644)
    return folder


# --- the builder takes any folder ---

def make_messy(docs, outside):
    """Three good documents and one of every kind of file that cannot be one.
    Returns {shown name: part of the reason} for the files that must be skipped."""
    copy_docs(docs)
    (outside / "secret.txt").write_text("The safe code is 1234.\n")
    names = {}

    def add(name, data, shown, reason):
        with open(os.path.join(os.fsencode(docs), os.fsencode(name)), "wb") as f:
            f.write(data)
        names[shown] = reason

    add(b"caf\xe9.txt", b"Latin-1 name\n\nA file whose name is not UTF-8.\n",
        "caf\\xe9.txt", "its name is not valid UTF-8")
    add("bad\nname.txt", b"A newline in the name\n\nText.\n", "bad\\nname.txt",
        "its name holds control characters")
    add("esc\x1bname.md", b"An escape in the name\n\nText.\n", "esc\\x1bname.md",
        "its name holds control characters")
    add("zeros.txt", b"\0" * 100_000, "zeros.txt", "holds NUL bytes (the first at offset 0)")
    add("utf16.txt", "The cafe sells soup and dogs are welcome.\n".encode("utf-16-le"),
        "utf16.txt", "UTF-16 without a byte order mark")
    add("latin1.md", "Caf\xe9 cr\xe8me\n".encode("latin-1"), "latin1.md", "not valid UTF-8")
    add("controls.txt", bytes(range(1, 9)) * 500 + b"some text", "controls.txt",
        "are control characters, so it is not plain text")
    (docs / "secret.txt").symlink_to(outside / "secret.txt")
    names["secret.txt"] = "not a regular file inside the docs folder"
    (docs / "loop.txt").symlink_to(docs / "loop.txt")
    names["loop.txt"] = "not a regular file inside the docs folder"
    (docs / "folder.md").mkdir()  # a folder, read like any other: empty
    os.mkfifo(docs / "pipe.txt")
    names["pipe.txt"] = "not a regular file inside the docs folder"
    # Usable, though unusual: UTF-16 with its byte order mark, and an empty file.
    (docs / "utf16bom.txt").write_bytes("Wide text\n\nThe piano may be played.\n".encode("utf-16"))
    (docs / "empty.txt").write_bytes(b"")
    # Not candidates at all, passed over in silence.
    (docs / ".hidden.txt").write_bytes(b"\0\0")
    (docs / "photo.jpg").write_bytes(b"\xff\xd8\xff\0")
    return names


@pytest.fixture(scope="module")
def messy_index(tmp_path_factory):
    """A CLI build over a messy folder: (docs, index, the finished process, expected skips)."""
    tmp_path = tmp_path_factory.mktemp("messy")
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    outside.mkdir()
    skipped = make_messy(docs, outside)
    result = run_cli("--docs", docs, "--index", tmp_path / "index")
    return docs, tmp_path / "index", result, skipped


def test_a_messy_folder_builds_and_names_each_skipped_file_once(messy_index):
    docs, index_dir, result, skipped = messy_index
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == len(skipped)
    for shown, reason in skipped.items():
        matching = [line for line in lines if line.startswith(f"index_build: skipping {shown}: ")]
        assert len(matching) == 1 and reason in matching[0], (shown, lines)
    assert result.stdout.rstrip().endswith(f"; skipped {len(skipped)} file(s), named above")
    manifest = index_search.read_manifest(index_dir)
    assert sorted(manifest["files"]) == ["empty.txt", "faq.txt", "hours_access.txt",
                                         "menu_prices.txt", "utf16bom.txt"]
    assert sorted(manifest["skipped"]) == sorted(skipped)
    assert manifest["counts"]["skipped"] == len(skipped)
    _, _, passages = index_search.load_index(index_dir)
    assert not any("\0" in p["text"] for p in passages)
    # The skipped files do not make the index look out of date.
    assert index_search.changed_files(manifest, docs) == ([], [], [])


def test_a_server_over_a_messy_folder_serves_the_good_files(messy_index):
    docs, index_dir, result, skipped = messy_index
    assert result.returncode == 0, result.stderr
    live = LiveServer(server_command(index_dir))
    try:
        found = live.call("search", {"query": "can I bring a dog", "top_k": 5})
        assert found["isError"] is False, text_of(found)
        assert {r["source"] for r in found["structuredContent"]["results"]} <= {
            "faq.txt", "hours_access.txt", "menu_prices.txt", "utf16bom.txt"}
        listed = live.call("list_documents")
        assert [d["name"] for d in listed["structuredContent"]["documents"]] == [
            "empty.txt", "faq.txt", "hours_access.txt", "menu_prices.txt", "utf16bom.txt"]
        wide = live.call("get_document", {"name": "utf16bom.txt"})
        assert text_of(wide) == "Wide text\n\nThe piano may be played.\n"
        refused = live.call("get_document", {"name": "zeros.txt"})
        assert refused["isError"] is True and "unknown document" in text_of(refused)
    finally:
        live.close()


def test_unreadable_files_are_skipped_and_an_unreadable_folder_is_one_line(open_folder):
    python, scripts = as_other_user(open_folder)
    docs = copy_docs(open_folder / "docs")
    (docs / "locked.txt").write_text("Locked\n\nNobody may read this file.\n")
    (docs / "locked.txt").chmod(0)
    env = {**os.environ, "HOME": str(open_folder)}
    result = run_cli("--docs", docs, "--index", open_folder / "index", python=python,
                     scripts=scripts, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "index_build: skipping locked.txt: cannot be read (permission denied)\n"
    assert "locked.txt" not in index_search.read_manifest(open_folder / "index")["files"]

    docs.chmod(0)
    try:
        result = run_cli("--docs", docs, "--index", open_folder / "index", python=python,
                         scripts=scripts, env=env)
    finally:
        docs.chmod(0o777)
    assert result.returncode == 1
    assert result.stderr == (f"index_build: error: cannot read the docs folder {docs} "
                             "(permission denied)\n")


def test_nothing_usable_is_one_line_and_writes_nothing(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_bytes(b"\0" * 10)
    (docs / b"\xff.md".decode("utf-8", "surrogateescape")).write_bytes(b"text")
    result = run_cli("--docs", docs, "--index", tmp_path / "index")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "index_build: skipping \\xff.md: its name is not valid UTF-8; rename it",
        "index_build: skipping a.txt: holds NUL bytes (the first at offset 0), so it is binary or "
        "UTF-16 without a byte order mark; save it as UTF-8",
        f"index_build: error: none of the 2 documents in {docs} can be used (see the lines "
        "above): nothing to index"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


def test_a_file_over_the_size_limit_is_skipped(tmp_path, monkeypatch):
    docs = copy_docs(tmp_path / "docs")
    monkeypatch.setattr(index_build, "MAX_FILE_BYTES", 2 ** 20)
    (docs / "exactly.txt").write_bytes(b"a" * 2 ** 20)
    (docs / "over.txt").write_bytes(b"a" * (2 ** 20 + 1))
    files, _, skipped = index_build.read_documents(docs)
    assert "exactly.txt" in files
    assert skipped == {"over.txt": "larger than the 1 MiB limit for one document (1.0 MiB)"}


def test_shown_names():
    assert index_build.shown_name("faq.txt") == "faq.txt"
    assert index_build.shown_name("café menu.txt") == "café menu.txt"
    latin1_name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")  # as os.listdir gives it
    assert index_build.shown_name(latin1_name) == "caf\\xe9.txt"
    assert index_build.shown_name("a\nb\x1b\u2028.txt") == "a\\nb\\x1b\\u2028.txt"


# --- linear time and bounded sizes ---

@pytest.mark.parametrize("shape", ["no whitespace", "log lines", "one space run"])
def test_a_big_document_of_any_shape_splits_whole(shape, request):
    # How long it takes is bench.py's business (a shared machine makes timings flaky here);
    # this checks that nothing is lost or oversized at 4 MB, and at 16 MB with --soak.
    size = (16 if request.config.getoption("--soak") else 4) * 2 ** 20
    line = "2026-12-01 00:00:00 INFO worker-3 request done status=200 bytes=5123\n"
    text = {"no whitespace": "x" * size, "log lines": line * (size // len(line)),
            "one space run": "word" + " " * size + "word"}[shape]
    passages, _ = index_build.split_into_passages(text, "Title", False,
                                                  index_build.load_tokenizer())
    assert all(len(p) <= index_build.MAX_PASSAGE_CHARS for _, _, p, _ in passages)
    visible = sum(len("".join(p.split())) for _, _, p, _ in passages)
    assert visible == len("".join(text.split()))


def test_a_huge_first_line_makes_a_short_title():
    text = "T" * 2_500_000 + "\n\nbody"
    title = doc_readers.document_title(text, "huge.txt")
    assert len(title) == doc_readers.TITLE_MAX_CHARS and title.endswith("…")
    assert doc_readers.document_title("\n \n  Short title  \nbody", "x.txt") == "Short title"
    assert doc_readers.document_title(" \n\t", "blank.txt") == "blank"  # no words: the file name


def fake_index(index_dir, docs, files):
    """An index of `files` ({name: text}) with random vectors: for what needs no model."""
    import numpy as np

    docs.mkdir(exist_ok=True)
    passages, entries = [], {}
    for name, text in files.items():
        data = text.encode("utf-8")
        (docs / name).write_bytes(data)
        entries[name] = {"sha256": sha256(data), "bytes": len(data),
                         "title": doc_readers.document_title(text, name), "passages": 1}
        passages.append({"source": name, "passage": 1, "paragraph": 1, "heading": "",
                         "text": text[:1000]})
    vectors = np.random.default_rng(0).normal(size=(len(passages), 384)).astype("float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index_dir.mkdir()
    build_dir = index_dir / ".building-test"
    build_dir.mkdir()
    manifest = {"model": index_build.MODEL_NAME, "dimension": 384, "index_type": "IndexFlatIP",
                "docs_dir": os.path.relpath(docs, index_dir), "data": "data-test",
                "counts": {"files": len(files), "passages": len(passages)}, "files": entries,
                "ranking": index_build.RANKING}
    index_build.write_index_files(build_dir, index_build.make_faiss_index(vectors), passages,
                                  manifest)
    index_build.publish(build_dir, index_dir, manifest)
    return manifest


def answer_bytes(result):
    """The size of the JSON-RPC line that carried a tool result, escapes and all."""
    line = {"jsonrpc": "2.0", "id": 1, "result": result}
    return len(json.dumps(line, ensure_ascii=True, separators=(",", ":")))


def test_results_stay_far_below_the_message_limit(tmp_path):
    # 3,000 documents whose names and titles are as long as allowed, and one of the largest
    # document size accepted.
    # A word and 300 teacups (a title is a line with words): cut to 200 characters, 12 bytes
    # each escaped.
    title = "Tea" + "\U0001F375" * 300
    files = {f"{i:04d}-{'n' * 240}.txt": f"{title}\n\nDocument {i}.\n" for i in range(3000)}
    big, line = "big.txt", "A line of tea \U0001F375, and more.\n"
    files[big] = "Big\n\n" + line * ((index_build.MAX_FILE_BYTES - 5) // len(line.encode()))
    fake_index(tmp_path / "index", tmp_path / "docs", files)
    assert (tmp_path / "docs" / big).stat().st_size <= index_build.MAX_FILE_BYTES
    live = LiveServer(server_command(tmp_path / "index"))
    try:
        listed = live.call("list_documents")
        assert listed["isError"] is False
        assert answer_bytes(listed) < mcp_min.MAX_MESSAGE_BYTES // 2
        documents = listed["structuredContent"]["documents"]
        assert 0 < len(documents) < 3001 and listed["structuredContent"]["more"] == 3001 - len(
            documents)
        assert all(len(d["title"]) == doc_readers.TITLE_MAX_CHARS for d in documents)
        assert len(documents) == server_module.MAX_LISTED
        assert text_of(listed).endswith(" more, not listed to keep this answer short: pass a "
                                        "longer `folder` (a folder, or the start of the names) "
                                        "to narrow the list, or search, which looks through all "
                                        "of them")

        whole = live.call("get_document", {"name": big})
        assert whole["isError"] is False and answer_bytes(whole) < mcp_min.MAX_MESSAGE_BYTES // 2
        text = text_of(whole)
        assert text.startswith("Big\n\nA line of tea")
        assert text.endswith("are shown; search finds passages in the rest]")
        assert len(text) < server_module.MAX_DOCUMENT_CHARS + 200

        refused = live.call("get_document", {"name": "nope.txt"})
        assert "3,001 in all; list_documents shows them" in text_of(refused)
        assert len(text_of(refused)) < 3000
    finally:
        live.close()


def test_a_listing_of_3000_files_is_cut_and_says_how_to_narrow_it():
    files = {f"doc{i:04d}.txt": {"title": f"Document {i}", "passages": 2} for i in range(3000)}
    text, documents, folders, left_out = server_module.listing_of(files)
    assert left_out == 2900 and len(documents) == 100 and folders == []
    assert text.splitlines()[-1].startswith("... and 2,900 more, not listed")
    text, documents, folders, left_out = server_module.listing_of(files, "doc12")
    assert [d["name"] for d in documents] == [f"doc12{i:02d}.txt" for i in range(100)]


# --- searching is cheap and always sees a whole index ---

def test_search_and_get_document_never_scan_the_docs_folder(tmp_path, monkeypatch):
    files = {f"doc{i:04d}.txt": f"Document {i}\n\nSome text.\n" for i in range(300)}
    fake_index(tmp_path / "index", tmp_path / "docs", files)
    library = server_module.Library(tmp_path / "index")
    monkeypatch.setattr(server_module, "library", library)
    scans = []
    real_scan = index_search.scan_docs

    def counting_scan(folder):
        scans.append(folder)
        return real_scan(folder)
    monkeypatch.setattr(index_search, "scan_docs", counting_scan)  # what changed_files calls
    faiss_index, passages, *_ = library.searchable_index()  # loads the index: may take a while
    assert len(passages) == 300
    for _ in range(20):
        library.searchable_index()
        assert server_module.read_document("doc0007.txt") == "Document 7\n\nSome text.\n"
    assert scans == []
    (tmp_path / "docs" / "doc0007.txt").write_text("Changed\n")
    (tmp_path / "docs" / "new.txt").write_text("New\n")
    library.refresh()  # the watcher's one look: no model loaded here, so no rebuild
    assert len(scans) == 1 and library.changed == {"doc0007.txt"}
    assert server_module.read_document("doc0007.txt") == "Changed\n"  # served as it is now


def test_searches_never_fail_while_the_index_is_rebuilt(small_docs, tmp_path, model):
    index_dir = tmp_path / "index"
    index_build.build_index(small_docs, index_dir, model=model)
    live = LiveServer(server_command(index_dir), env={**os.environ, "RAG_RATE_LIMIT": "0"})
    failures, builds = [], []

    def rebuild():
        for _ in range(3):
            builds.append(index_build.build_index(small_docs, index_dir, model=model)["data"])
    try:
        ranked_by_meaning(live.call)  # the model has loaded: searches embed their query
        builder = threading.Thread(target=rebuild)
        builder.start()
        searches = 0
        while builder.is_alive() or searches < 20:
            result = live.call("search", {"query": "can I bring a dog", "top_k": 1})
            searches += 1
            if result["isError"]:
                failures.append(text_of(result))
        builder.join()
    finally:
        live.close()
    assert failures == [] and len(set(builds)) == 3
    data_folders = [p.name for p in index_dir.iterdir() if p.name.startswith("data-")]
    assert data_folders == [builds[-1]] and leftovers(index_dir, tmp_path) == []


def test_a_second_build_while_one_runs_is_refused_clearly(small_docs, tmp_path, model):
    import fcntl
    index_dir = tmp_path / "index"
    index_build.build_index(small_docs, index_dir, model=model)
    before = snapshot(index_dir)
    with open(index_dir / ".lock", "r+") as lock:  # what a running build holds
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write("4242\n")
        lock.flush()
        refused = r"another index_build \(process 4242\) is writing .*; wait for it"
        with pytest.raises(index_build.BuildError, match=refused):
            index_build.build_index(small_docs, index_dir, model=model)
    assert snapshot(index_dir) == before


def test_two_builds_at_once_leave_one_whole_index(small_docs, tmp_path):
    index_dir = tmp_path / "index"
    first, second = start_cli("--docs", small_docs, "--index", index_dir), start_cli(
        "--docs", small_docs, "--index", index_dir)
    outcomes = [process.communicate(timeout=300) + (process.returncode,)
                for process in (first, second)]
    assert any(code == 0 for _, _, code in outcomes), outcomes
    for out, err, code in outcomes:
        assert "Traceback" not in err
        assert code == 0 or (code == 1 and "another index_build (process " in err), err
    manifest, faiss_index, passages = index_search.load_index(index_dir)
    assert faiss_index.ntotal == len(passages) == manifest["counts"]["passages"]
    assert sorted(p.name for p in index_dir.iterdir()) == [".lock", manifest["data"],
                                                           "manifest.json"]
    assert leftovers(index_dir, tmp_path) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_build_stopped_by_a_signal_leaves_nothing(small_docs, tmp_path, model, signum):
    index_dir = tmp_path / "index"
    index_build.build_index(small_docs, index_dir, model=model)
    before = snapshot(index_dir)
    (small_docs / "new.txt").write_text("New\n\nA new paragraph about the garden tables.\n")
    build = start_cli("--docs", small_docs, "--index", index_dir)
    wait_for(lambda: leftovers(index_dir) or build.poll() is not None, what="the build to start")
    build.send_signal(signum)
    out, err = build.communicate(timeout=120)
    assert build.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert err.strip().splitlines()[-1] == (f"index_build: stopped by {name}; "
                                            "the index was not changed")
    assert "Traceback" not in err
    assert snapshot(index_dir) == before and leftovers(index_dir, tmp_path) == []


def test_a_first_build_stopped_by_a_signal_leaves_no_folder(small_docs, tmp_path):
    build = start_cli("--docs", small_docs, "--index", tmp_path / "index")
    wait_for(lambda: (tmp_path / "index").is_dir() and leftovers(tmp_path / "index")
             or build.poll() is not None, what="the build to start")
    build.send_signal(signal.SIGTERM)
    build.communicate(timeout=120)
    assert build.returncode == 128 + signal.SIGTERM
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


def test_leftovers_of_a_killed_build_are_removed_by_the_next(small_docs, tmp_path, model):
    index_dir = tmp_path / "index"
    index_build.build_index(small_docs, index_dir, model=model)
    # A new file: this build has a passage to embed, so it loads the model while its data
    # folder is being written (with nothing new, it would be done before the kill).
    (small_docs / "new.txt").write_text("Scones are baked fresh every morning at seven.\n")
    build = start_cli("--docs", small_docs, "--index", index_dir)
    wait_for(lambda: leftovers(index_dir) or build.poll() is not None, what="the build to start")
    build.kill()  # SIGKILL: no cleanup is possible
    build.communicate(timeout=60)
    assert leftovers(index_dir)
    (index_dir / "data-orphan").mkdir()  # renamed into place, then killed before the manifest
    manifest = index_build.build_index(small_docs, index_dir, model=model)
    assert sorted(p.name for p in index_dir.iterdir()) == [".lock", manifest["data"],
                                                           "manifest.json"]
    assert leftovers(index_dir, tmp_path) == []


def test_index_given_as_a_symlink_updates_its_target(small_docs, tmp_path, model):
    target = tmp_path / "elsewhere" / "real-index"
    target.mkdir(parents=True)
    link = tmp_path / "index"
    link.symlink_to(target)
    index_build.build_index(small_docs, link, model=model)
    (small_docs / "extra.md").write_text("# Extra\n\nThe cafe has a piano that guests may play.\n")
    manifest = index_build.build_index(small_docs, link, model=model)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert (target / "manifest.json").is_file() and "extra.md" in manifest["files"]
    assert index_search.resolve_docs_dir(manifest, link) == small_docs.resolve()
    linked_docs = index_search.resolve_docs_dir(manifest, link)
    assert index_search.changed_files(manifest, linked_docs) == ([], [], [])
    assert index_search.load_index(link)[1].ntotal == manifest["counts"]["passages"]

    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(index_build.BuildError, match="is a symlink to nothing; create the folder"):
        index_build.build_index(small_docs, dangling, model=model)


def test_an_index_of_the_old_layout_asks_for_a_rebuild_that_replaces_it(small_docs, tmp_path,
                                                                        model):
    index_dir = tmp_path / "index"
    manifest = index_build.build_index(small_docs, index_dir, model=model)
    # Before data folders, the three files sat side by side, and the manifest had no sha256.
    for name in ("vectors.faiss", "passages.jsonl"):
        (index_dir / manifest["data"] / name).rename(index_dir / name)
    (index_dir / manifest["data"]).rmdir()
    for key in ("data", "sha256", "data_sha256"):
        del manifest[key]
    (index_dir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(index_search.IndexProblem, match=r"^the search index was made by another "
                       r"version of index_build.py; run `.*` to rebuild it$"):
        index_search.load_index(index_dir)
    manifest = index_build.build_index(small_docs, index_dir, model=model)
    assert sorted(p.name for p in index_dir.iterdir()) == [".lock", manifest["data"],
                                                           "manifest.json"]


# --- damage is always named ---

@pytest.fixture(scope="module")
def template_index(tmp_path_factory, model):
    folder = tmp_path_factory.mktemp("template")
    docs = copy_docs(folder / "docs")
    index_build.build_index(docs, folder / "index", model=model)
    return folder


@pytest.fixture
def fresh_index(template_index, tmp_path):
    shutil.copytree(template_index / "docs", tmp_path / "docs")
    shutil.copytree(template_index / "index", tmp_path / "index")
    return tmp_path / "index"


def edit_manifest(change):
    def damage(index_dir):
        path = index_dir / "manifest.json"
        manifest = json.loads(path.read_text())
        path.write_text(json.dumps(change(manifest)))
    return damage


def edit_data(name, change):
    def damage(index_dir):
        data = index_dir / json.loads((index_dir / "manifest.json").read_text())["data"]
        change(data / name)
    return damage


def other_dimension(path):
    import faiss
    import numpy as np
    count = faiss.read_index(str(path)).ntotal
    small = faiss.IndexFlatIP(16)
    small.add(np.ones((count, 16), dtype="float32"))
    faiss.write_index(small, str(path))


def drop_source(path):
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    del first["source"]
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")


EDITED = "manifest.json was changed after the build: it does not match its sha256"
NOT_WRITTEN = "is not the file the build wrote: it does not match its sha256"
# The manifest holds the sha256 of its own content and of each data file, so every edit,
# cut or stray file is named by the file it hit, whatever was done to it.
DAMAGE = {
    "manifest is a list": (lambda d: (d / "manifest.json").write_text("[]"),
                           "manifest.json holds a list, not an object"),
    "manifest is empty": (lambda d: (d / "manifest.json").write_text(""),
                          "manifest.json is empty"),
    "manifest is truncated": (lambda d: (d / "manifest.json").write_text('{"model": "sen'),
                              "manifest.json is not valid JSON"),
    "manifest is not UTF-8": (lambda d: (d / "manifest.json").write_bytes(b'{"\xff": 1}'),
                              "manifest.json is not valid JSON: 'utf-8' codec can't decode"),
    "manifest has no files": (edit_manifest(lambda m: {k: v for k, v in m.items() if k != "files"}),
                              EDITED),
    "a file entry is a string": (edit_manifest(lambda m: {**m, "files": {"faq.txt": "x"}}),
                                 EDITED),
    "a file name is a path": (edit_manifest(lambda m: {**m, "files": {
        "../x.txt": m["files"]["faq.txt"]}}), EDITED),
    "manifest dimension": (edit_manifest(lambda m: {**m, "dimension": 768}), EDITED),
    "docs_dir with a NUL": (edit_manifest(lambda m: {**m, "docs_dir": "do\0cs"}), EDITED),
    "data is a path": (edit_manifest(lambda m: {**m, "data": "../../etc"}), EDITED),
    "data folder missing": (edit_data("vectors.faiss", lambda p: shutil.rmtree(p.parent)),
                            "vectors.faiss cannot be read: no such file or directory"),
    "vectors missing": (edit_data("vectors.faiss", Path.unlink),
                        "vectors.faiss cannot be read: no such file or directory"),
    "vectors empty": (edit_data("vectors.faiss", lambda p: p.write_bytes(b"")),
                      "vectors.faiss " + NOT_WRITTEN),
    "vectors truncated": (edit_data("vectors.faiss", lambda p: p.write_bytes(p.read_bytes()[:500])),
                          "vectors.faiss " + NOT_WRITTEN),
    "vectors of another dimension": (edit_data("vectors.faiss", other_dimension),
                                     "vectors.faiss " + NOT_WRITTEN),
    "passages missing": (edit_data("passages.jsonl", Path.unlink),
                         "passages.jsonl cannot be read: no such file or directory"),
    "passages empty": (edit_data("passages.jsonl", lambda p: p.write_text("")),
                       "passages.jsonl " + NOT_WRITTEN),
    "passage without source": (edit_data("passages.jsonl", drop_source),
                               "passages.jsonl " + NOT_WRITTEN),
    "passage line not JSON": (edit_data("passages.jsonl", lambda p: p.write_text("{oops\n")),
                              "passages.jsonl " + NOT_WRITTEN),
    "passage is a list": (edit_data("passages.jsonl", lambda p: p.write_text("[1]\n")),
                          "passages.jsonl " + NOT_WRITTEN),
}


@pytest.mark.parametrize("kind", DAMAGE)
def test_every_kind_of_damage_is_named(fresh_index, kind):
    damage, what = DAMAGE[kind]
    damage(fresh_index)
    with pytest.raises(index_search.IndexProblem) as caught:
        index_search.load_index(fresh_index)
    message = str(caught.value)
    assert message.startswith("the search index is damaged (") and what in message, message
    # The folder is not the default index/, and its path is absolute: named by its last part.
    assert message.endswith("); run `python index_build.py --docs DOCS --index .../index` "
                            "to rebuild it")
    assert_no_paths(message, fresh_index)


def test_a_server_names_damage_keeps_serving_and_recovers(fresh_index, model):
    DAMAGE["passage without source"][0](fresh_index)
    live = LiveServer(server_command(fresh_index))
    try:
        result = live.call("search", {"query": "dog"})
        assert result["isError"] is True
        assert ("the search index is damaged (passages.jsonl is not the file the build wrote"
                in text_of(result))
        assert_no_paths(text_of(result), fresh_index)
        # The manifest is fine, so the other tools still work.
        assert live.call("list_documents")["isError"] is False
        assert live.call("get_document", {"name": "faq.txt"})["isError"] is False

        DAMAGE["manifest is a list"][0](fresh_index)
        for tool, arguments in [("search", {"query": "dog"}), ("list_documents", {}),
                                ("get_document", {"name": "faq.txt"})]:
            result = live.call(tool, arguments)
            assert result["isError"] is True and "holds a list, not an object" in text_of(result)

        index_build.build_index(fresh_index.parent / "docs", fresh_index, model=model)
        assert live.call("search", {"query": "dog"})["isError"] is False
    finally:
        live.close()


def test_an_unreadable_document_fails_only_the_call_that_needs_it(open_folder, model):
    python, scripts = as_other_user(open_folder)
    docs = copy_docs(open_folder / "docs")
    index_dir = open_folder / "index"
    index_build.build_index(docs, index_dir, model=model)
    (docs / "faq.txt").chmod(0)
    live = LiveServer([*python, str(scripts / "server.py"), "--index", str(index_dir)],
                      env={**os.environ, "HOME": str(open_folder)})
    try:
        result = live.call("get_document", {"name": "faq.txt"})
        assert result["isError"] is True
        assert text_of(result).endswith("document 'faq.txt' cannot be served: cannot be read "
                                        "(permission denied)")
        assert_no_paths(text_of(result), open_folder)
        assert live.call("get_document", {"name": "menu_prices.txt"})["isError"] is False
        assert live.call("list_documents")["isError"] is False
        found = live.call("search", {"query": "can I bring a dog", "top_k": 1})
        assert found["isError"] is False, text_of(found)
    finally:
        live.close()
        (docs / "faq.txt").chmod(0o644)


# --- settings ---

@pytest.mark.parametrize("name, value", [
    ("RAG_RATE_LIMIT", "inf"), ("RAG_RATE_LIMIT", "nan"), ("RAG_RATE_LIMIT", "-1"),
    ("RAG_RATE_LIMIT", "abc"), ("RAG_RATE_LIMIT", "1e400"), ("RAG_RATE_LIMIT", "-inf"),
    ("RAG_TORCH_THREADS", "inf"), ("RAG_TORCH_THREADS", "-1"), ("RAG_TORCH_THREADS", "1.5"),
    ("RAG_TORCH_THREADS", "two"), ("RAG_TORCH_THREADS", "nan"),
])
def test_a_bad_setting_stops_the_server_with_one_line(name, value, tmp_path):
    result = subprocess.run(server_command(tmp_path / "index"), capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL, env={**os.environ, name: value})
    assert result.returncode != 0 and result.stdout == ""
    kind = "a whole number" if name == "RAG_TORCH_THREADS" else "a number"
    assert result.stderr.splitlines() == [
        f"server: error: {name}={value!r} is not allowed: it must be {kind} 0 or above "
        f"(unset, it is {20 if name == 'RAG_RATE_LIMIT' else 1})"]


def test_good_settings_are_accepted(built_index):
    env = {**os.environ, "RAG_RATE_LIMIT": "1e308", "RAG_TORCH_THREADS": "0"}
    live = LiveServer(server_command(built_index), env=env)
    try:
        for _ in range(50):  # a rate of 1e308 calls per second: never refused
            assert live.call("list_documents")["isError"] is False
    finally:
        live.close()


# --- bench.py's part 4 runs (how fast is its own business, not a test's) ---

def test_bench_split_part_runs_and_reports():
    from measure import bench
    split = bench.bench_split({"split_mb": [1]})
    assert [(r["mb"], r["shape"]) for r in split["rows"]] == [
        (1, "prose"), (1, "no whitespace"), (1, "log lines")]
    assert all(r["passages"] > 1000 and r["seconds"] > 0 for r in split["rows"])
    results = {"machine": bench.machine_info(), "seconds": 1.0, "split": split}
    results["targets"] = bench.targets(results)
    assert "4. split" in bench.report(results)
