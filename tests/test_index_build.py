"""index_build.py: passage splitting, the files it writes, and failing with nothing left behind."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import index_build
import index_search
from conftest import DOCS, ROOT


def leftovers(folder):
    """Temporary build/backup folders that a clean run must not leave next to or in the index."""
    return sorted(p.name for p in folder.iterdir()
                  if "-building-" in p.name or "-old-" in p.name or p.name.startswith(".building-"))


def run_cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "index_build.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


# --- splitting text into passages ---

def test_paragraphs_are_split_on_blank_lines():
    text = "Title\n\nFirst paragraph\nstill first.\n \n\n\nSecond one.\n"
    assert index_build.split_blocks(text, markdown=False) == [
        "Title", "First paragraph\nstill first.", "Second one."]


def test_title_is_merged_into_the_first_paragraph_and_numbers_are_kept():
    body = "A paragraph long enough to stand on its own. " * 4
    text = f"The Title\n\n{body}\n\n{body}\n\nA short note."
    passages, cut = index_build.split_into_passages(text, "The Title", False,
                                                    index_build.load_tokenizer())
    assert [number for number, _, _, _ in passages] == [1, 3] and cut == 0
    assert passages[0][2].startswith("The Title\n\n")
    assert passages[1][2].endswith("\n\nA short note.")  # a short last piece joins the one before
    assert {context for _, context, _, _ in passages} == {"The Title"}


def test_long_paragraphs_are_cut_at_sentence_boundaries():
    sentence = "This sentence is about the opening hours of the cafe on a weekday. "
    paragraph = (sentence * 40).strip()
    parts = [part for part, _ in index_build.fit_to_window(paragraph, 250,
                                                           index_build.load_tokenizer())]
    assert len(parts) > 1
    assert all(len(part) <= index_build.MAX_PASSAGE_CHARS for part in parts)
    assert all(part.endswith(".") for part in parts)
    assert " ".join(parts) == paragraph


@pytest.mark.parametrize("budget", [250, 20])  # cut by characters, by word pieces
def test_a_sentence_longer_than_the_limit_is_cut_at_spaces(budget):
    words = ("word " * 500).strip()
    pieces = index_build.fit_to_window(words, budget, index_build.load_tokenizer())
    assert all(0 < len(part) <= index_build.MAX_PASSAGE_CHARS for part, _ in pieces)
    assert all(tokens == len(part.split()) <= budget for part, tokens in pieces)
    assert " ".join(part for part, _ in pieces) == words


def test_a_long_heading_costs_each_block_no_more_than_a_short_one():
    """Under a heading of 1 MB each block tokenized all of it again (10 KB over 1,000 short
    paragraphs: 12 s; this: an hour); only its first window counts, the same cut. The 60 s
    bound is no race: this text is split in seconds."""
    tokenizer = index_build.load_tokenizer()
    text = "# " + "word " * 200_000 + "\n\n" + "A short paragraph.\n\n" * 2_000
    found = []
    splitter = threading.Thread(target=lambda: found.append(index_build.split_into_passages(
        text, "Long", True, tokenizer)), daemon=True)
    splitter.start()
    splitter.join(60)
    assert found, "splitting did not end within 60 s"
    heading = found[0][0][-1][1]
    budget = index_build.MODEL_WINDOW_TOKENS // 4
    assert heading == index_build.fit_to_window("Long > " + "word " * 300, budget, tokenizer)[0][0]


def test_a_run_of_brackets_is_stripped_of_markup_in_linear_time():
    """A markdown block's words are found with its markup stripped, where each "[" of a run was
    tried as a link over the next 1,000 characters: 6 s a MB, this block minutes."""
    text = "[" * 32_000_000 + " and [a link](https://example.com)"
    found = []
    splitter = threading.Thread(target=lambda: found.append(index_build.split_blocks(
        text, markdown=True)), daemon=True)
    splitter.start()
    splitter.join(60)
    assert found, "splitting did not end within 60 s"
    assert found[0] == [text]


def test_every_docs_passage_fits_the_model():
    _, passages, _ = index_build.read_documents(DOCS)
    assert all(len(p["text"]) <= index_build.MAX_PASSAGE_CHARS for p in passages)


# --- a successful build ---

def test_build_writes_index_passages_and_manifest(built_index):
    manifest = json.loads((built_index / "manifest.json").read_text())
    names = sorted(p.name for p in DOCS.iterdir() if p.suffix in (".txt", ".md"))
    assert list(manifest["files"]) == names
    assert manifest["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert manifest["dimension"] == 384
    assert manifest["index_type"] == "IndexFlatIP"
    assert manifest["created"].endswith("+00:00")
    for name, info in manifest["files"].items():
        assert info["sha256"] == hashlib.sha256((DOCS / name).read_bytes()).hexdigest()
        assert info["title"].startswith("The Wandering Kettle")
    # The docs folder is recorded relative to the index, and resolves back to docs/.
    assert not os.path.isabs(manifest["docs_dir"])
    assert index_search.resolve_docs_dir(manifest, built_index) == DOCS.resolve()

    manifest, faiss_index, passages = index_search.load_index(built_index)
    assert faiss_index.ntotal == len(passages) == manifest["counts"]["passages"]
    assert sum(info["passages"] for info in manifest["files"].values()) == len(passages)
    assert set(passages[0]) == {"source", "passage", "paragraph", "heading", "text"}
    assert index_search.changed_files(manifest, DOCS) == ([], [], [])
    assert leftovers(built_index.parent) == [] and leftovers(built_index) == []
    # One data folder, named by the manifest; the lock file stays, empty of meaning.
    assert sorted(p.name for p in built_index.iterdir()) == [".lock", manifest["data"],
                                                             "manifest.json"]


def test_rebuild_replaces_the_old_index(small_docs, tmp_path, model):
    index_dir = tmp_path / "index"
    first = index_build.build_index(small_docs, index_dir, model=model)
    (small_docs / "extra.md").write_text("# Extra\n\nThe cafe has a piano that guests may play.\n")
    second = index_build.build_index(small_docs, index_dir, model=model)
    assert first["counts"]["files"] == 3 and second["counts"]["files"] == 4
    assert "extra.md" in json.loads((index_dir / "manifest.json").read_text())["files"]
    assert leftovers(tmp_path) == []


def test_vectors_are_unit_length(model):
    import numpy as np
    vectors = index_build.embed(model, ["can I bring a dog", "opening hours"])
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_hnsw_is_used_above_the_threshold(small_docs, tmp_path, model, monkeypatch):
    monkeypatch.setattr(index_build, "HNSW_THRESHOLD", 5)
    manifest = index_build.build_index(small_docs, tmp_path / "index", model=model)
    assert manifest["index_type"] == "IndexHNSWFlat"
    _, faiss_index, passages = index_search.load_index(tmp_path / "index")
    query = index_build.embed(model, ["can I bring my dog"])
    similarities, ids = faiss_index.search(query, 1)
    assert passages[ids[0][0]]["source"] == "faq.txt"
    assert faiss_index.hnsw.efSearch == index_build.HNSW_EF_SEARCH  # saved with the index


def test_symlinks_out_of_the_docs_folder_are_skipped(small_docs, tmp_path, model):
    secret = tmp_path / "secret.txt"
    secret.write_text("The safe code is 1234.\n")
    (small_docs / "secret.txt").symlink_to(secret)
    manifest = index_build.build_index(small_docs, tmp_path / "index", model=model)
    assert "secret.txt" not in manifest["files"]


def test_cli_prints_a_summary(small_docs, tmp_path, model, monkeypatch, capsys):
    # reuse the loaded model
    monkeypatch.setattr(index_build, "load_model", lambda threads=None: model)
    assert index_build.main(["--docs", str(small_docs), "--index", str(tmp_path / "index")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("indexed 3 files -> ") and "IndexFlatIP" in out


def test_a_signal_while_the_model_loads_stops_the_build_after_the_load(
        small_docs, tmp_path, model, monkeypatch, capsys):
    # A signal inside the import of torch or numpy left them half-imported: the build died of
    # that (RecursionError, "cannot load module more than once") with a traceback.
    loaded = []

    def load_model(threads=None):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)  # an import in progress, where the signal used to land
        loaded.append(model)
        return model
    monkeypatch.setattr(index_build, "load_model", load_model)
    code = index_build.main(["--docs", str(small_docs), "--index", str(tmp_path / "index")])
    assert code == 128 + signal.SIGTERM and loaded == [model]
    assert capsys.readouterr().err == ("index_build: stopped by SIGTERM; "
                                       "the index was not changed\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


def test_a_signal_just_after_the_manifest_swap_keeps_the_new_index(
        small_docs, tmp_path, model, monkeypatch, capsys):
    # In the microseconds after os.replace in publish, a signal made the clean-up meant for a
    # failed swap delete the data folder the new manifest names, and the build said that the
    # index was not changed. Here the signal lands right there, every time.
    index_dir = tmp_path / "index"
    index_build.build_index(small_docs, index_dir, model=model)
    (small_docs / "new.txt").write_text("New\n\nA new paragraph about the garden tables.\n")
    real_replace = os.replace

    def replace_then_signal(source, target):
        real_replace(source, target)
        os.kill(os.getpid(), signal.SIGTERM)
    monkeypatch.setattr(index_build, "load_model", lambda threads=None: model)
    monkeypatch.setattr(os, "replace", replace_then_signal)
    code = index_build.main(["--docs", str(small_docs), "--index", str(index_dir)])
    monkeypatch.setattr(os, "replace", real_replace)
    assert code == 128 + signal.SIGTERM
    assert capsys.readouterr().err == ("index_build: stopped by SIGTERM after the new index was "
                                       "in place; it is complete\n")
    manifest, faiss_index, passages = index_search.load_index(index_dir)
    assert "new.txt" in manifest["files"] and faiss_index.ntotal == len(passages)
    assert leftovers(index_dir) == []


# --- failures: a clear message, exit code 1, nothing written ---
# These stop before the model is loaded, so they run the real command line quickly.

def test_missing_docs_folder(tmp_path):
    result = run_cli("--docs", tmp_path / "nope", "--index", tmp_path / "index")
    assert result.returncode == 1
    assert "docs folder not found" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_empty_docs_folder(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "photo.png").write_bytes(b"\x89PNG")  # a format no reader reads
    (tmp_path / "docs" / "site.css").write_text("body {}")
    result = run_cli("--docs", tmp_path / "docs", "--index", tmp_path / "index")
    assert result.returncode == 1
    assert "no .txt, .md, .markdown, .mdx, .rst, .html, .htm, .pdf or .ipynb files" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


def test_file_that_is_not_utf8_is_skipped_and_named(small_docs, tmp_path):
    # One bad file costs that file, not the build: it is named on stderr and counted.
    (small_docs / "latin1.txt").write_bytes("Caf\xe9 au lait".encode("latin-1"))
    result = run_cli("--docs", small_docs, "--index", tmp_path / "index")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ("index_build: skipping latin1.txt: not valid UTF-8 (byte 0xe9 at "
                             "offset 3); save it as UTF-8\n")
    assert result.stdout.startswith("indexed 3 files -> ")
    assert result.stdout.rstrip().endswith("; skipped 1 file(s), named above")
    manifest = index_search.read_manifest(tmp_path / "index")
    assert "latin1.txt" not in manifest["files"] and "latin1.txt" in manifest["skipped"]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("option", ["--docs", "--index"])
def test_an_empty_folder_option_is_refused(small_docs, tmp_path, option):
    # Path("") is the current folder: `--docs "$UNSET"` indexed it and replaced the index.
    folders = {"--docs": str(small_docs), "--index": str(tmp_path / "index"), option: ""}
    result = subprocess.run([sys.executable, str(ROOT / "index_build.py"),
                             *(word for pair in folders.items() for word in pair)],
                            capture_output=True, text=True, timeout=120, cwd=small_docs)
    assert result.returncode == 2
    assert result.stderr == (f"index_build: error: {option} is an empty string; give it a "
                             f"folder (default: {option[2:]})\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]
    assert sorted(p.name for p in small_docs.iterdir()) == ["faq.txt", "hours_access.txt",
                                                           "menu_prices.txt"]


def test_unwritable_index_folder(small_docs, tmp_path):
    (tmp_path / "somefile").write_text("not a folder")
    result = run_cli("--docs", small_docs, "--index", tmp_path / "somefile" / "sub")
    assert result.returncode == 1
    assert "cannot write the index" in result.stderr
    assert (tmp_path / "somefile").read_text() == "not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "somefile"]


def test_index_path_that_is_a_file(small_docs, tmp_path):
    (tmp_path / "index").write_text("precious")
    result = run_cli("--docs", small_docs, "--index", tmp_path / "index")
    assert result.returncode == 1
    assert "exists and is not a folder" in result.stderr
    assert (tmp_path / "index").read_text() == "precious"


def test_refuses_to_replace_a_folder_that_is_not_an_index(small_docs, tmp_path):
    # `--index docs` by mistake must not wipe the documents.
    result = run_cli("--docs", small_docs, "--index", small_docs)
    assert result.returncode == 1
    assert "not an index folder" in result.stderr
    assert sorted(p.name for p in small_docs.iterdir()) == ["faq.txt", "hours_access.txt",
                                                           "menu_prices.txt"]


def snapshot(folder):
    """Every file under folder, by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_failed_write_keeps_the_old_index(small_docs, tmp_path, model, monkeypatch):
    index_dir = tmp_path / "index"
    index_build.build_index(small_docs, index_dir, model=model)
    before = snapshot(index_dir)

    def disk_full(*args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(index_build, "write_index_files", disk_full)
    (small_docs / "new.txt").write_text(
        "New things\n\nA brand new paragraph about scones and jam.\n")
    with pytest.raises(index_build.BuildError, match="No space left on device"):
        index_build.build_index(small_docs, index_dir, model=model)
    # The index is as it was; only the vectors just embedded are kept aside, so that the next
    # build does not embed them again (index_build.EMBEDDED_FILE).
    after = snapshot(index_dir)
    assert after.pop(index_build.EMBEDDED_FILE) and after == before
    assert leftovers(tmp_path) == [] and leftovers(index_dir) == []


def test_nothing_usable_keeps_the_old_index(small_docs, tmp_path, model):
    index_dir = tmp_path / "index"
    index_build.build_index(small_docs, index_dir, model=model)
    before = snapshot(index_dir)
    for path in small_docs.iterdir():
        path.write_bytes(b"\xff\xfe broken" if path.name == "faq.txt" else b"\0" * 1000)
    result = run_cli("--docs", small_docs, "--index", index_dir)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 4 and all(line.startswith("index_build: skipping ") for line in lines[:3])
    assert lines[3].startswith("index_build: error: none of the 3 documents in ")
    assert lines[3].endswith("can be used (see the lines above): nothing to index")
    assert snapshot(index_dir) == before


def test_index_search_imports_index_build_never_the_reverse():
    """One door between the index's two halves: the build (reading, splitting, embedding,
    writing) imports nothing of index_search, at its top or inside a function; index_search
    imports index_build at its top."""
    import ast

    def imported(name):
        tree = ast.parse((ROOT / name).read_text(encoding="utf-8"))
        return {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import)
                              else [ast.alias(node.module or "")])}

    assert "index_search" not in imported("index_build.py")
    assert "index_build" in imported("index_search.py")
    done = subprocess.run([sys.executable, "-c", "import sys, index_build; "
                           "print('index_search' in sys.modules)"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout == "False\n"
