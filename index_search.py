"""
index_search.py - an index that index_build.py wrote, in use: read back, checked, and searched.

    import index_search
    manifest, faiss_index, passages = index_search.load_index("index")

server.py, measure/eval.py and the tests use it; there is nothing to run. It is the other
half of an index's life: index_build.py writes the index, this reads it. It imports
index_build (the index's file names, its readers of documents and data), never the reverse.

    reading back    load_index: the manifest, the vectors and the passages. A file that is not
                    the one the build wrote (missing, cut short, edited, from another build
                    or another version) is named, with the command that rebuilds the index.
    staleness       changed_files: which documents were added, removed or changed since
                    the build, so that a server can refresh its index (and say so meanwhile);
                    read_text serves an indexed document's text, checked as the build did.
    ranking         rank_passages: the passages for a query, as index_build.RANKING says
                    (cosine similarity plus a little BM25, each file's best passage first;
                    BM25 alone, a keyword ranking, when there is no query vector yet),
                    in one folder if asked (folders_of: the folders list_documents lists),
                    one page once (a passage's text, or a page in several version folders,
                    is one result: one_page_once); eval.py measures the other rankings
                    through the same function.

Like index_build.py, nothing heavy is imported at the top: faiss, numpy and bm25s are
imported inside the functions that need them.
"""

import hashlib
import json
import os
import re
import stat
from pathlib import Path

import doc_readers
import index_build
from index_build import (MANIFEST_FILE, MODEL_NAME, RANKING, Unusable, embedding_texts,
                         file_stamp, manifest_sha256, open_document, os_reason,
                         read_document_bytes, scan_docs)

# The ranking eval.py compares the others with: cosine similarity alone, passages as they are.
PLAIN_DENSE = {"passage_text": "plain", "fusion": "none", "distinct_sources": False}
# How many passages each ranker (dense, BM25) proposes before fusion or de-duplication
# picks top_k of them. 50 covers every passage of a small corpus; on a large one a passage
# that neither ranker puts in its top 50 is not a plausible answer anyway.
FUSION_CANDIDATES = 50
RRF_K = 60  # reciprocal rank fusion's usual damping constant (eval.py's "rrf" variants)


class IndexProblem(Exception):
    """The index is missing, damaged or out of date; the message says what to run."""


# ----------------------------------------------------------------------------
# Reading an index back

def load_index(index_dir):
    """(manifest, faiss_index, passages) from an index folder built by index_build.

    A build that publishes while this reads can delete the data folder the old manifest
    named; then the manifest has changed, and the new one is read instead.
    """
    for attempt in range(3):
        stamp = file_stamp(Path(index_dir) / MANIFEST_FILE)
        manifest = read_manifest(index_dir)
        try:  # index_build reads the data folder; ValueError names a file that is not the build's
            return (manifest, *index_build.read_index_data(index_dir, manifest))
        except ValueError as e:
            if attempt == 2 or file_stamp(Path(index_dir) / MANIFEST_FILE) == stamp:
                raise damaged(index_dir, str(e)) from None


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


def damaged(index_dir, problem):
    return IndexProblem(f"the search index is damaged ({problem}); "
                        f"run `{rebuild_command(index_dir)}` to rebuild it")


def rebuild_command(index_dir):
    """The command that rebuilds an index folder, for messages: `make index` for the default
    one, else index_build.py naming the folder as it was given. Messages may reach a client,
    which must not learn the server's paths: an absolute path is shown by its last part."""
    index_dir = str(index_dir)
    if index_dir == "index":
        return "make index"
    if Path(index_dir).is_absolute():
        index_dir = ".../" + Path(index_dir).name
    return f"python index_build.py --docs DOCS --index {index_dir}"


def resolve_docs_dir(manifest, index_dir):
    """The docs folder recorded in the manifest; relative paths are relative to the index folder."""
    return (Path(index_dir) / manifest["docs_dir"]).resolve()


# ----------------------------------------------------------------------------
# Telling whether the documents changed since the build

def changed_files(manifest, docs_dir, hashes=None):
    """(changed, added, removed): the names of the documents edited, new, and gone (or not
    usable any more) since the build.

    hashes: a dict kept between calls, so that a file is hashed again only when its stat
    moved. A file that cannot be read is not called changed (there is nothing to compare),
    so it fails only the get_document call that needs it; a folder that cannot be listed
    any more is taken as it was indexed.
    """
    docs_dir = Path(docs_dir)
    hashes = {} if hashes is None else hashes
    indexed = manifest["files"]
    if not docs_dir.is_dir():
        return [], [], list(indexed)
    try:
        present, unusable = scan_docs(docs_dir)
    except OSError:
        return [], [], []
    known = set(indexed) | set(manifest.get("skipped", {}))
    added = [name for name in [*present, *dict(unusable)] if name not in known]
    removed = [name for name in indexed if name not in present]
    changed = []
    for name, path in present.items():
        if name not in indexed:
            continue
        stamp = file_stamp(path)
        if hashes.get(path, (None,))[0] != stamp:
            hashes[path] = (stamp, file_sha256(path))
        sha = hashes[path][1]
        if sha is not None and sha != indexed[name]["sha256"]:
            changed.append(name)
    return changed, added, removed


def document_path(docs_dir, name):
    """The path of the document `name` if it is still one inside docs_dir, else None: what
    get_document checks for one file, where a scan would read the whole folder."""
    parts = name.split("/")
    skipped = index_build.SKIPPED_FOLDERS
    if any(part.startswith(".") or part in skipped or not part for part in parts):
        return None
    path = Path(docs_dir) / name
    try:
        root = Path(docs_dir).resolve()
        real = path.resolve()
        inside = real.is_relative_to(root) and stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, RuntimeError):
        return None
    return path if inside else None


def manifest_changes(old, new):
    """(changed, added, removed): the names of the documents that two builds' "files" differ in,
    by their text's sha256 (a file rebuilt unchanged, or only touched, is not changed)."""
    changed = [name for name in new if name in old and new[name]["sha256"] != old[name]["sha256"]]
    added = [name for name in new if name not in old]
    removed = [name for name in old if name not in new]
    return changed, added, removed


def folders_of(files):
    """{folder: how many documents it holds, at any depth} for every folder in the documents'
    names ("guide/", "guide/install/"), in name order: the folders list_documents lists and
    search takes as its `folder`."""
    counts = {}
    for name in files:
        end = name.find("/")
        while end != -1:
            counts[name[:end + 1]] = counts.get(name[:end + 1], 0) + 1
            end = name.find("/", end + 1)
    return counts


def folder_listing(files, prefix, limit):
    """(documents, folders, left out): the documents whose name starts with prefix and that
    sit in the prefix's folder ("guide/" of "guide/inst"), then each folder inside that one
    with how many documents it holds, at most limit entries in all."""
    base = prefix[:prefix.rfind("/") + 1]
    documents = [{"name": name, "title": info["title"], "passages": info["passages"]}
                 for name, info in files.items()
                 if name.startswith(prefix) and "/" not in name[len(base):]]
    folders = [{"name": name, "documents": count} for name, count in folders_of(files).items()
               if name.startswith(prefix) and name != base and "/" not in name[len(base):-1]]
    left_out = max(0, len(documents) + len(folders) - limit)
    documents = documents[:limit]
    return documents, folders[:limit - len(documents)], left_out


def read_text(path):
    """The text of an indexed document, to serve it (doc_readers.served_text: a PDF's or a
    web page's text, never its bytes); Unusable says why it is not one any more."""
    return doc_readers.served_text(path.name, read_document_bytes(path))


def file_sha256(path):
    """sha256 of a file's bytes, or None when it cannot be read (nothing to compare then)."""
    try:
        with open_document(path) as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except (Unusable, OSError):
        return None


# ----------------------------------------------------------------------------
# Ranking the passages for a query (server.py's search; eval.py measures the variants)

def rank_passages(query, query_vector, faiss_index, passages, top_k, ranking, lexical,
                  folder="", pages=None):
    """The top_k results for a query under a ranking (RANKING or one of eval.py's variants),
    best first: [{"rank", "source", "distance", "text"}, plus "score" when fusing and
    "page" for a PDF's passage].
    query_vector None (server.py, while its model loads): a keyword ranking, BM25 alone, of
    the passages that hold a word of the query: "score" is BM25's, and there is no "distance".

    The vectors are unit length, so FAISS' inner product is the cosine similarity, and
    distance = 1 - similarity: 0 means same direction, 1 unrelated, 2 opposite.
    ranking["fusion"]: "none" ranks by cosine similarity alone; "weighted" adds
    bm25_weight times the passage's BM25 score divided by the query's best BM25 score
    (so the lexical part lies between 0 and bm25_weight); "rrf" adds 1 / (RRF_K + rank)
    from each ranker. With fusion, results are ordered by the fused score, so distances
    need not rise with rank. ranking["distinct_sources"]: one passage per file first,
    then the rest. lexical is lexical_index() of the same passages.
    folder ("7.4/", a checked_folder): only the passages of the documents under it.
    pages (page_versions() of the same passages): one page, once (one_page_once); None
    ranks every passage on its own, as before there were versions.
    """
    import numpy as np

    inside = None
    if folder:
        inside = np.fromiter((p["source"].startswith(folder) for p in passages), bool,
                             len(passages))
    count = len(passages) if inside is None else int(inside.sum())
    if not count:  # a folder of documents with no passage (empty files): nothing to rank
        return []
    depth = min(count, max(FUSION_CANDIDATES, 4 * top_k))
    while True:  # repeats fold into one result: look deeper until top_k distinct ones are found
        dense, scores = fused_scores(query, query_vector, faiss_index, passages, depth,
                                     ranking, lexical, inside)
        order = sorted(scores, key=lambda i: -scores[i])
        if ranking["distinct_sources"]:
            firsts = {}
            for i in order:
                firsts.setdefault(passages[i]["source"], i)
            order = list(firsts.values()) + [i for i in order if i not in firsts.values()]
        results = one_page_once(order, passages, pages) if pages is not None else \
            [{"source": passages[i]["source"], "text": passages[i]["text"], "i": i} for i in order]
        if len(results) >= top_k or depth >= count:
            break
        depth = min(count, depth * 4)
    for rank, result in enumerate(results[:top_k], start=1):
        i = result.pop("i")
        result["rank"] = rank
        if query_vector is not None:
            result["distance"] = round(1.0 - dense[i], 4)
        if "page" in passages[i]:  # a PDF's
            result["page"] = passages[i]["page"]
        if ranking["fusion"] != "none" or query_vector is None:
            result["score"] = round(scores[i], 4)
    return results[:top_k]


def fused_scores(query, query_vector, faiss_index, passages, depth, ranking, lexical, inside):
    """({passage: cosine similarity}, {passage: fused score}) of the depth best passages by
    each ranker (rank_passages); inside: a mask of the passages that may be found, or None.
    Without a query vector, ({}, {passage: BM25 score}) of those that hold a word of the query."""
    import faiss
    import numpy as np

    fusion = ranking["fusion"] if query_vector is not None else "keyword"
    dense = {}
    if fusion != "keyword":  # FAISS looks only at the folder's vectors: depth of them come back
        params = None
        if inside is not None:
            selector = faiss.IDSelectorBatch(np.flatnonzero(inside).astype("int64"))
            params = faiss.SearchParameters(sel=selector)
        if inside is not None and isinstance(faiss_index, faiss.IndexHNSW):
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=faiss_index.hnsw.efSearch)
        similarities, ids = faiss_index.search(query_vector, depth, params=params)
        dense = {int(i): float(s) for s, i in zip(similarities[0], ids[0]) if i >= 0}
    if fusion == "none":
        return dense, dict(dense)
    bm25 = lexical_scores(lexical, query, len(passages))
    if inside is not None:
        bm25 = np.where(inside, bm25, 0)
    top = np.argpartition(-bm25, depth - 1)[:depth]  # linear time: no sort of every passage
    best_lexical = [int(i) for i in top[np.argsort(-bm25[top], kind="stable")] if bm25[i] > 0]
    if fusion == "keyword":  # no query vector (no model yet): BM25 alone
        return dense, {i: float(bm25[i]) for i in best_lexical}
    missing = [i for i in best_lexical if i not in dense]
    if missing:  # found by BM25 only: their cosine comes from the stored vectors
        vectors = faiss_index.reconstruct_batch(np.array(missing, dtype="int64"))
        dense.update(zip(missing, (vectors @ query_vector[0]).tolist()))
    if fusion == "weighted":
        peak = float(bm25.max()) or 1.0
        weight = ranking["bm25_weight"]
        return dense, {i: dense[i] + weight * float(bm25[i]) / peak for i in dense}
    by_dense = sorted(dense, key=lambda i: -dense[i])  # "rrf"
    scores = {i: 1.0 / (RRF_K + rank) for rank, i in enumerate(by_dense, start=1)}
    for rank, i in enumerate(best_lexical, start=1):
        scores[i] += 1.0 / (RRF_K + rank)
    return dense, scores


# ----------------------------------------------------------------------------
# One page, once. A versioned docs tree holds each page once per version ("7.4/x/y.md",
# "7.5/x/y.md"), mostly with the same text: without this, its copies fill the top results.

# A folder named like a version: "7.4", "v2", "version-29.4", "2.x", "4x", "2024".
VERSION_FOLDER = re.compile(r"(?:v|version[-_]?)?\d[\w.-]*", re.I)


def version_split(name):
    """(page, version) of a document name: its first folder named like a version taken out,
    and the path up to that folder: "docs/7.4/x.md" -> ("docs/*/x.md", "docs/7.4/"). A name
    with no such folder is a page of its own, version ""."""
    parts = name.split("/")
    for position, part in enumerate(parts[:-1]):
        if VERSION_FOLDER.fullmatch(part):
            page = "/".join([*parts[:position], "*", *parts[position + 1:]])
            return page, "/".join(parts[:position + 1]) + "/"
    return name, ""


def page_versions(passages):
    """{page: [the version folders it is in]} over the documents of an index, in name order."""
    versions = {}
    for source in dict.fromkeys(passage["source"] for passage in passages):
        page, version = version_split(source)
        if version:
            versions.setdefault(page, []).append(version)
    return versions


def one_page_once(order, passages, pages):
    """The distinct results of passages in ranked order: a passage whose text an earlier result
    holds, or that is an earlier result's page in another version, is no result of its own;
    its file goes into that result's "also_in". A result of a page in version folders says
    which ("versions", from pages), so that a model can pick one or search with `folder`."""
    results, by_text, by_page = [], {}, {}
    for i in order:
        source = passages[i]["source"]
        text = passages[i]["text"]
        page, version = version_split(source)
        earlier = by_text.get(text)
        if earlier is None and version and by_page.get(page, {}).get("source") != source:
            earlier = by_page.get(page)
        if earlier is None:
            earlier = {"source": source, "text": text, "i": i}
            if version:
                earlier["versions"] = pages.get(page, [version])
            results.append(earlier)
            by_text[text] = earlier
            by_page.setdefault(page, earlier)
        elif source != earlier["source"] and source not in earlier.get("also_in", []):
            earlier.setdefault("also_in", []).append(source)
    return results


def lexical_index(passages, passage_text=RANKING["passage_text"]):
    """A BM25 index (bm25s) over the passages' embedding texts, English stopwords dropped."""
    import bm25s

    texts = embedding_texts(passages, passage_text)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False),
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
