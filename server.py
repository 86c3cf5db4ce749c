"""
server.py - an MCP server that lets a language model search the documents of a cafe.

    python index_build.py                       # once, and whenever docs/ changes (make index)
    python server.py [--index index] [--docs DIR]

It speaks MCP over stdio (through mcp_min): a client starts it as a subprocess, writes
JSON-RPC requests to its stdin and reads the answers from its stdout. So stdout is the
protocol wire and nothing else may be written there; every log line goes to stderr.

Three tools:

    search(query, top_k=5)   the passages closest in meaning to the query, best first
    list_documents()         the files that can be searched, with their titles
    get_document(name)       one whole file, by its exact name

The embedding model and the index take a few seconds to load, so the server starts
loading them in a background thread and answers initialize and tools/list at once;
only search waits for the load to finish. If the index is missing or older than the
files in the docs folder, search answers with an error telling to run `make index`
(and picks the new index up on the next call, without a restart).

Environment: RAG_TORCH_THREADS (default 1; 0 = one per core) caps the CPU threads one
query may use; RAG_RATE_LIMIT (default 20) is how many tool calls per second the server
accepts, in bursts of up to twice that (0 = no limit).
"""

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import index_build  # stdlib-only at import time: torch and faiss load in the background
from mcp_min import Server, ToolResult

__version__ = "0.1.0"

MAX_QUERY_CHARS = 1000     # a question, not a document: longer input is a mistake or abuse
MAX_TOP_K = 50
MAX_DOCUMENT_CHARS = 200_000  # get_document refuses bigger files: they would flood the model's context
MODEL_LOAD_TIMEOUT = 300   # seconds a search waits for the model before giving up
DEFAULT_TORCH_THREADS = 1  # one query is a small job: extra threads add more overhead than speed


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
                raise RuntimeError(f"rate limit: at most {self.rate:g} calls per second; retry in {wait:.1f} s")
            self.tokens -= 1


def rate_limit_from_environment():
    value = os.environ.get("RAG_RATE_LIMIT", "20")
    try:
        rate = max(0.0, float(value))
    except ValueError:
        log(f"ignoring RAG_RATE_LIMIT={value!r}: not a number")
        rate = 20.0
    return RateLimit(rate, burst=max(1, int(2 * rate)))


def log(message):
    print(f"server: {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------
# The library: where the index is, and the model and index once loaded

class Library:
    """Everything the tools share. Tools run in worker threads, hence the locks.

    The model is loaded once, in the background. The index is (re)read whenever its
    manifest changes, and each search first checks that the docs still match the
    manifest: comparing every file's sha256 would cost a read of every file per query,
    so the hashes are only recomputed when a file's size or modification time moved.
    """

    def __init__(self, index_dir, docs_dir=None):
        self.index_dir = Path(index_dir)
        self.docs_override = Path(docs_dir) if docs_dir else None
        self.model_ready = threading.Event()
        self.model = None
        self.encode_lock = threading.Lock()  # the HF tokenizer is not safe to share between threads
        self.index_lock = threading.Lock()
        self.loaded = None        # (manifest file stamp, faiss index, passages)
        self.checked = None       # (stamp of manifest + docs files, list of stale reasons)

    # --- the model, loaded in the background ---

    def start_loading(self):
        threading.Thread(target=self.load_in_background, name="load-model", daemon=True).start()

    def load_in_background(self):
        started = time.perf_counter()
        try:
            threads = torch_threads()
            model = index_build.load_model(threads=threads)
            import faiss
            # One query is a small job. With faiss' default of a thread per core, a search on a busy
            # machine waits for the busy core: 8-18 ms instead of 0.5 ms at 10k passages (make bench).
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

    def manifest_and_docs(self):
        """(manifest, docs folder), or IndexProblem when there is no readable index."""
        manifest = index_build.read_manifest(self.index_dir)
        docs_dir = self.docs_override or index_build.resolve_docs_dir(manifest, self.index_dir)
        return manifest, docs_dir

    def searchable_index(self):
        """(faiss index, passages) if the index exists and matches the docs, else IndexProblem."""
        manifest, docs_dir = self.manifest_and_docs()
        with self.index_lock:
            stamp = file_stamps([self.index_dir / index_build.MANIFEST_FILE]
                                + ([docs_dir / name for name in sorted(os.listdir(docs_dir))]
                                   if docs_dir.is_dir() else []))
            if self.checked is None or self.checked[0] != stamp:
                self.checked = (stamp, index_build.stale_reasons(manifest, docs_dir))
            reasons = self.checked[1]
            if reasons:
                raise index_build.IndexProblem("the search index is out of date (" + "; ".join(reasons[:5])
                                               + "); run `make index` to rebuild it")
            manifest_stamp = stamp[0]
            if self.loaded is None or self.loaded[0] != manifest_stamp:
                _, faiss_index, passages = index_build.load_index(self.index_dir)
                self.loaded = (manifest_stamp, faiss_index, passages)
                log(f"index loaded: {len(passages)} passages from {len(manifest['files'])} files")
            return self.loaded[1], self.loaded[2]


def torch_threads():
    """RAG_TORCH_THREADS as a number: 0 leaves torch's default (one thread per core)."""
    value = os.environ.get("RAG_TORCH_THREADS", "")
    try:
        return max(0, int(value))
    except ValueError:
        if value:
            log(f"ignoring RAG_TORCH_THREADS={value!r}: not a whole number")
        return DEFAULT_TORCH_THREADS


def file_stamps(paths):
    """(name, size, modification time) per path: cheap to get, and it changes when a file does."""
    stamps = []
    for path in paths:
        try:
            info = path.stat()
            stamps.append((path.name, info.st_size, info.st_mtime_ns))
        except OSError:
            stamps.append((path.name, None, None))
    return tuple(stamps)


# ----------------------------------------------------------------------------
# Searching: plain functions, also used by tests/test_retrieval.py

def search_passages(query_vector, faiss_index, passages, top_k):
    """[{"rank", "source", "distance", "text"}] for the top_k passages nearest the query, best first.

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


def format_results(results):
    """The text a model reads: a numbered header per passage, then the passage, blank lines between."""
    if not results:
        return "No passages found."
    return "\n\n".join(f"[{r['rank']}] source: {r['source']} (distance: {r['distance']:.2f})\n{r['text']}"
                       for r in results)


def check_query(query):
    query = query.strip()
    if not query:
        raise ValueError("query is empty: pass the customer's question, e.g. 'can I bring a dog'")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}. "
                         "Pass only the question itself")
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
                  "customer's question and answer from the passages it returns, naming the source file. "
                  "Use get_document when a whole file is needed."))

library = Library("index")  # replaced by main() with the folders from the command line
rate_limit = rate_limit_from_environment()

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
                    "distance": {"type": "number", "description": "1 - cosine similarity; smaller is closer"},
                    "text": {"type": "string"},
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
    faiss_index, passages = library.searchable_index()
    results = search_passages(library.embed_query(query), faiss_index, passages, top_k)
    return ToolResult(format_results(results), structured={"results": results})


@server.tool(output_schema=DOCUMENTS_OUTPUT_SCHEMA)
def list_documents() -> ToolResult:
    """List the document files of The Wandering Kettle cafe that search looks through.

    Returns one line per file: its exact name (what get_document expects) and its title.
    """
    rate_limit.check()
    manifest, _ = library.manifest_and_docs()
    documents = [{"name": name, "title": info["title"], "passages": info["passages"]}
                 for name, info in manifest["files"].items()]
    text = "\n".join(f"{d['name']}: {d['title']}" for d in documents)
    return ToolResult(text, structured={"documents": documents})


@server.tool()
def get_document(name: str) -> str:
    """Return one document file of The Wandering Kettle cafe in full, by its exact file name.

    Use it when the passages from search are not enough and the whole file is needed,
    for example the complete menu (menu_prices.txt). The name must be one of those
    list_documents returns, such as "faq.txt"; paths are not accepted.
    """
    rate_limit.check()
    manifest, docs_dir = library.manifest_and_docs()
    valid = ", ".join(manifest["files"])
    # Only exact names from the manifest: this one check refuses "../x", "/etc/passwd",
    # "FAQ.TXT", "faq.txt\0" and anything else that is not literally an indexed file.
    if name not in manifest["files"]:
        raise ValueError(f"unknown document {show_name(name)}. Valid names: {valid}")
    # The file may have been replaced by a symlink since the index was built.
    path = (docs_dir / name).resolve()
    if path.parent != docs_dir.resolve() or not path.is_file():
        raise ValueError(f"document {show_name(name)} is not available any more; "
                         f"run `make index` to refresh the index. Valid names: {valid}")
    if path.stat().st_size > MAX_DOCUMENT_CHARS * 4:  # the most bytes MAX_DOCUMENT_CHARS UTF-8 characters take
        raise ValueError(f"document {show_name(name)} is too large to return whole; use search instead")
    try:
        text = index_build.read_text(path)
    except index_build.BuildError as e:
        raise ValueError(str(e)) from None
    if len(text) > MAX_DOCUMENT_CHARS:
        raise ValueError(f"document {show_name(name)} is too large to return whole; use search instead")
    return text


# ----------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="MCP server (stdio) searching the cafe documents.")
    parser.add_argument("--index", default="index", help="index folder built by index_build.py (default: index)")
    parser.add_argument("--docs", default=None,
                        help="docs folder (default: the one recorded in the index manifest)")
    parser.add_argument("--http", nargs="?", type=int, const=8000, metavar="PORT",
                        help="serve Streamable HTTP on http://127.0.0.1:PORT/mcp (default port 8000) instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="with --http: the address to bind (default: 127.0.0.1)")
    parser.add_argument("--allow-host", action="append", metavar="NAME",
                        help="with --http: a host name clients may use besides localhost (behind a proxy: its "
                             "public name); repeat for more")
    args = parser.parse_args(argv)

    global library
    library = Library(args.index, args.docs)
    library.start_loading()
    if args.http is not None:  # mcp_http.py logs the URL it serves
        log(f"{server.info['name']} {__version__} (index: {args.index})")
        allowed = ["localhost", "127.0.0.1", "[::1]", *(args.allow_host or [])]
        import mcp_http  # Streamable HTTP, only when asked for
        mcp_http.serve(server, args.host, args.http, allowed_hosts=allowed)
    else:
        log(f"{server.info['name']} {__version__} ready on stdio (index: {args.index})")
        server.run()


if __name__ == "__main__":
    main()
