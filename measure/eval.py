"""
eval.py - how often does search put the right file first? Each ranking variant, measured.

    python measure/eval.py [--json out.json]             (make eval)
    python measure/eval.py --set DOCS QUESTIONS.json     your own documents and questions
    python measure/eval.py --only "latex pdf,werkzeug"   some of the built-in sets
    python measure/eval.py --scale 100000                the ranking cost at 100k passages

Every question set is a folder of documents and a JSON list of {"question", "file"}, the
file that answers it (and, where a question is asked about one version or part of the
documents, its "folder"). Four ship with the project: the cafe in docs/ with
tests/retrieval_questions.json, a bike shop in tests/eval/bike_shop/, whose questions
were written without borrowing the documents' words (paraphrases, prices, names,
negations, questions two files almost answer), and tests/eval/readmes/: 150 real README
files of npm and PyPI packages, unedited (badges, HTML headers, long code examples,
link-reference blocks, tables; SOURCES.md names each one's package, version and licence),
with developer questions worded the same way; and tests/eval/ts_jest/: three versions of a
real documentation tree (version-28.0/, version-29.0/, version-29.4/), each question naming
the version it asks about. For every set it also prints recall with and without the question's
folder (where questions have one) and the top-5 slots spent on repeats, before and after one
page once (versions_and_repeats).

Five more (issue 33) are public documentation trees in the formats that are not markdown,
copied unedited from PyPI, npm and Debian packages (each folder's SOURCES.md): Flask's Sphinx
sources (.rst), two sections of the AI SDK's docs (.mdx), Werkzeug's built HTML site, 18 LaTeX
PDF manuals, and the nbsphinx and emcee notebooks (.ipynb). For every set, with the shipped
ranking as server.py runs it, it prints what the model reads (passage_quality, check_listing):
the top-5 passages that hold markup outside code (HTML or JSX tags, rst directives, roles and
title underlines, undecoded entities, a PDF's unmapped glyphs or run-together words) or a site's
navigation, the same over every passage, and whether every document is listed under its own
title (titles.json beside the docs folder) and nothing else (no image, style, script or font),
against the issue's targets.

For each set and each ranking variant it prints:

    r@1, r@3   share of questions whose file is the first result / among the first three
    MRR        mean of 1 / (rank of the first result from the right file), 0 beyond 10
    p50 ms     median time per question: embedding it plus ranking (what search costs warm)
    rank ms    median time of the ranking step alone (search, fusion, de-duplication)

Variants differ in the text embedded for a passage (plain, or under its document's
title and heading path: "heading"), in whether BM25 is fused with cosine similarity, and
in whether results repeat a file. All go through the functions server.py uses
(index_build's passages, index_search's ranking), so the variant
index_build.RANKING names is exactly what the server does. Embeddings are computed once
per passage text and shared by the variants that use it.
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the project: eval.py lives in measure/
sys.path.insert(0, str(ROOT))  # so that `python measure/eval.py` finds index_build and server

import index_build
import index_search
import server

EVAL_SETS = ROOT / "tests" / "eval"
QUESTION_SETS = [
    ("cafe", ROOT / "docs", ROOT / "tests" / "retrieval_questions.json"),
    ("bike shop", EVAL_SETS / "bike_shop" / "docs", EVAL_SETS / "bike_shop" / "questions.json"),
    ("readmes", EVAL_SETS / "readmes" / "docs", EVAL_SETS / "readmes" / "questions.json"),
    ("ts-jest", EVAL_SETS / "ts_jest" / "docs", EVAL_SETS / "ts_jest" / "questions.json"),
    # Issue 33: one public tree per format that is not markdown (SOURCES.md in each folder).
    ("flask rst", EVAL_SETS / "flask" / "docs", EVAL_SETS / "flask" / "questions.json"),
    ("ai-sdk mdx", EVAL_SETS / "ai_sdk" / "docs", EVAL_SETS / "ai_sdk" / "questions.json"),
    ("werkzeug", EVAL_SETS / "werkzeug" / "docs", EVAL_SETS / "werkzeug" / "questions.json"),
    ("latex pdf", EVAL_SETS / "latex_guides" / "docs",
     EVAL_SETS / "latex_guides" / "questions.json"),
    ("notebooks", EVAL_SETS / "notebooks" / "docs", EVAL_SETS / "notebooks" / "questions.json"),
]
# Issue 33's targets for the sets of the new formats, with the shipped ranking as server.py
# runs it: (recall@1, recall@3), PDFs a little lower. Every set: at most 2 in 100 of the
# top-5 passages hold markup outside code, none holds a site's navigation.
TARGETS = {"flask rst": (0.85, 0.95), "ai-sdk mdx": (0.85, 0.95), "werkzeug": (0.85, 0.95),
           "latex pdf": (0.80, 0.90), "notebooks": (0.85, 0.95)}
MARKUP_TARGET = 0.02
TOP = 5  # the results a search returns by default: where repeats are counted
TABLE_SETS = 3  # question sets side by side in one block of the table
DEPTH = 10  # results looked at for MRR

PLAIN = index_search.PLAIN_DENSE
HEADING = dict(PLAIN, passage_text="heading")
VARIANTS = [
    ("dense (before)", PLAIN),
    ("dense, distinct", dict(PLAIN, distinct_sources=True)),
    ("heading", HEADING),
    ("heading, distinct", dict(HEADING, distinct_sources=True)),
    ("dense+bm25 0.1", dict(PLAIN, fusion="weighted", bm25_weight=0.1)),
    ("dense+bm25 0.2", dict(PLAIN, fusion="weighted", bm25_weight=0.2)),
    ("dense+bm25 rrf", dict(PLAIN, fusion="rrf")),
    ("heading+bm25 0.05", dict(HEADING, fusion="weighted", bm25_weight=0.05)),
    ("heading+bm25 0.1", dict(HEADING, fusion="weighted", bm25_weight=0.1)),
    ("heading+bm25 0.15", dict(HEADING, fusion="weighted", bm25_weight=0.15)),
    ("heading+bm25 0.2", dict(HEADING, fusion="weighted", bm25_weight=0.2)),
    ("heading+bm25 0.3", dict(HEADING, fusion="weighted", bm25_weight=0.3)),
    ("heading+bm25 rrf", dict(HEADING, fusion="rrf")),
    ("heading+bm25 0.1, distinct", dict(HEADING, fusion="weighted", bm25_weight=0.1,
                                      distinct_sources=True)),
]


def progress(message):
    print(f"eval: {message}", file=sys.stderr, flush=True)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


class QuestionsError(Exception):
    """A question file eval.py cannot use; the message names the file and the fix."""


def load_questions(path, docs_dir=None):
    """[(question, file, folder)] from a JSON list of {"question", "file"} and, where a question
    is asked about one version or part of the documents, "folder" ("version-29.4/"); "file"
    may be a list, where two pages answer alike (any of them counts). With docs_dir, every
    file must be one of its documents, or a typo would pass as a miss."""
    name = Path(path).name
    try:
        questions = json.loads(Path(path).read_text(encoding="utf-8"))
        pairs = [(q["question"], q["file"], q.get("folder", "")) for q in questions]
    except OSError as e:
        raise QuestionsError(f"cannot read {name}: {e.strerror}") from None
    except ValueError as e:
        raise QuestionsError(f"cannot read {name}: {e}") from None
    except (KeyError, TypeError):
        raise QuestionsError(f"{name} must be a JSON list of "
                             '{"question": ..., "file": ...} objects') from None
    if docs_dir is not None:
        documents = set(index_build.scan_docs(docs_dir)[0])
        named = {name for _, file, _ in pairs for name in wanted_files(file)}
        unknown = sorted(named - documents)
        if unknown:
            raise QuestionsError(f"{name} names files that are not in "
                                 f"{Path(docs_dir).name}/: {', '.join(unknown)}")
    return pairs


def wanted_files(file):
    """The files that answer a question: its "file", one name or a list of names."""
    return [file] if isinstance(file, str) else list(file)


def file_rank(results, wanted, exact=False):
    """1-based position of the first result from a wanted file (one name, or a list of
    names), or None. Unless exact, the same page in another version folder counts too
    ("version-28.0/x.md" for "version-29.4/x.md"), as does a file a result names in its
    also_in."""
    files = set(wanted_files(wanted))
    pages = set(map(page_of, files))
    for result in results:
        sources = [result["source"], *result.get("also_in", [])]
        if files.intersection(sources) or not exact and pages.intersection(map(page_of, sources)):
            return result["rank"]
    return None


def page_of(name):
    return index_search.version_split(name)[0]


def repeats(results):
    """How many results repeat an earlier one: its text word for word, or its page from
    another version folder."""
    texts, pages, count = set(), {}, 0
    for result in results:
        page = page_of(result["source"])
        count += result["text"] in texts or pages.setdefault(page, result["source"]) != \
            result["source"]
        texts.add(result["text"])
    return count


def build_indexes(model, docs_dir):
    """Per passage text ("plain", "heading"): the FAISS index, the BM25 index and build times."""
    files, passages, _ = index_build.read_documents(docs_dir)
    built = {}
    for passage_text in ("plain", "heading"):
        started = time.perf_counter()
        texts = index_build.embedding_texts(passages, passage_text)
        faiss_index = index_build.make_faiss_index(index_build.embed(model, texts))
        embedded = time.perf_counter()
        lexical = index_search.lexical_index(passages, passage_text)
        finished = time.perf_counter()
        built[passage_text] = {"faiss": faiss_index, "lexical": lexical,
                               "embed_s": embedded - started, "bm25_s": finished - embedded}
    return files, passages, built


def embed_questions(model, questions):
    """One vector per question, each embedded alone as the server does, with its time."""
    vectors, seconds = [], []
    for question, _, _ in questions:
        started = time.perf_counter()
        vectors.append(index_build.embed(model, [question]))
        seconds.append(time.perf_counter() - started)
    return vectors, seconds


def evaluate(questions, vectors, embed_seconds, passages, built, ranking):
    """Scores of one variant on one question set, plus its misses at rank 1."""
    index = built[ranking["passage_text"]]
    ranks, rank_seconds, misses = [], [], []
    for (question, wanted, _), vector in zip(questions, vectors):
        started = time.perf_counter()
        results = index_search.rank_passages(question, vector, index["faiss"], passages, DEPTH,
                                            ranking, index["lexical"])
        rank_seconds.append(time.perf_counter() - started)
        rank = file_rank(results, wanted)
        ranks.append(rank)
        if rank != 1:
            misses.append({"question": question, "want": wanted,
                           "got": [r["source"] for r in results[:3]]})
    count = len(questions)
    total = [e + r for e, r in zip(embed_seconds, rank_seconds)]
    return {"questions": count,
            "found_at_1": sum(rank == 1 for rank in ranks),
            "found_at_3": sum(rank is not None and rank <= 3 for rank in ranks),
            "reciprocal_sum": sum(1 / rank for rank in ranks if rank is not None),
            "p50_ms": median(total) * 1e3, "rank_p50_ms": median(rank_seconds) * 1e3,
            "misses": misses}


MODES = [("all versions", False, False), ("all versions, one page once", False, True),
         ("in its folder", True, False), ("in its folder, one page once", True, True)]


def versions_and_repeats(questions, vectors, passages, built):
    """The shipped ranking (index_build.RANKING) over one question set, as server.py's search
    runs it: without `folder` (a hit in any version of the wanted page counts) and with the
    question's folder (only the wanted file counts), each before and after one page once.
    Per mode: the questions answered at rank 1 and in the top 3, and of the top-TOP slots,
    how many repeat an earlier result's text or page (repeats())."""
    index = built[index_build.RANKING["passage_text"]]
    pages = index_search.page_versions(passages)
    rows = {}
    for mode, scoped, once in MODES:
        if scoped and not any(folder for _, _, folder in questions):
            continue  # a set with no folders: nothing to scope
        row = {"questions": len(questions), "found_at_1": 0, "found_at_3": 0, "slots": 0,
               "repeats": 0}
        for (question, wanted, folder), vector in zip(questions, vectors):
            results = index_search.rank_passages(
                question, vector, index["faiss"], passages, TOP, index_build.RANKING,
                index["lexical"], folder if scoped else "", pages if once else None)
            rank = file_rank(results, wanted, exact=scoped)
            row["found_at_1"] += rank == 1
            row["found_at_3"] += rank is not None and rank <= 3
            row["slots"] += len(results)
            row["repeats"] += repeats(results)
        rows[mode] = row
    return rows


def print_versions(versions):
    print(f"\nVersions and repeats ({index_build.RANKING['fusion']} ranking, top {TOP}): "
          "r@1 and r@3 without a folder count the wanted page in any version; in its "
          "folder, only the wanted file. Repeats: top-5 slots whose text or page (in another "
          "version folder) an earlier result holds.")
    for set_name, rows in versions.items():
        for mode, row in rows.items():
            count = row["questions"]
            share = row["repeats"] / max(row["slots"], 1)
            print(f"{set_name:<10} {mode:<30} r@1 {row['found_at_1'] / count:.3f}  r@3 "
                  f"{row['found_at_3'] / count:.3f}  repeats {row['repeats']:>3} of "
                  f"{row['slots']:>3} slots ({share:.1%})")


# --- What the model reads, per format (issue 33) ---
#
# A search result's passage should be text: no HTML or JSX tag, no rst directive or role, no
# bytes a PDF reader misread, and nothing of the site around a page (its navigation). Code
# is left alone: a fenced block, or a code span, may hold any of these.

FENCED_CODE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?(?:^ {0,3}\1[ \t]*$|\Z)", re.M | re.S)
# A code span, unless it is the text of an rst role (:func:`x`, {class}`x`) or link (`x`_).
CODE_SPAN = re.compile(r"(?<![\w:}])`[^`\n]+`(?!_)")
URL = re.compile(r"\bhttps?://[^\s)>\]]+")  # a link's address: neither markup nor garbage
FENCE_LINE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})", re.M)
# An HTML element's tag, or a JSX component's (<Tabs>, <Note />): not a Python repr such as
# <class 'dict'> or a URL rule's <name>, which are text in these pages.
HTML_ELEMENTS = ("a abbr article aside audio b blockquote body br button canvas caption center "
                 "code col dd details div dl dt em embed figcaption figure font footer form h1 "
                 "h2 h3 h4 h5 h6 head header hr html i iframe img input kbd label li link main "
                 "meta nav ol option p pre script section select small source span strong style "
                 "sub summary sup svg table tbody td textarea th thead title tr u ul video")
MARKUP = {
    "HTML or JSX tag": re.compile(r"(?<![\w<])</?(?:(?:" + HTML_ELEMENTS.replace(" ", "|") +
                                  r")\b|[A-Z][\w.]*)(?:\s[^<>]{0,300})?/?>"),
    "HTML entity": re.compile(r"&(?:[A-Za-z]{2,8}|#\d{2,6}|#x[0-9A-Fa-f]{2,5});"),
    "JSX expression, import or export": re.compile(
        r"\{/\*|\*/\}|=\{[\[{]|^\s*(?:import|export)\s.+(?:\sfrom\s|\s=\s)", re.M),
    "rst directive, role or link": re.compile(
        r"^\s*\.\. [\w:-]+::|^\s*\.\. _[^:\n]+:|:[\w:+-]+:`|\{[\w:+-]+\}`|`[^`\n]+`__?(?!\w)",
        re.M),
    "rst title underline": re.compile(r"(?<=\S\n)([=\-~^\"'*+#])\1{3,}[ \t]*$", re.M),
    # What a PDF reader gets wrong: replacement characters, unmapped glyphs, control
    # characters, words run together, a base64 blob.
    "PDF garbage": re.compile(r"\ufffd|\(cid:\d+\)|[\ue000-\uf8ff]|[\x00-\x08\x0b\x0c\x0e-\x1f]"
                              r"|[a-z]{26,}|[A-Za-z0-9+/]{100,}"),
}
# Lines that are a documentation site's chrome, not a page's text (Sphinx, Docusaurus, MkDocs).
NAVIGATION = re.compile(
    r"^[ \t]*(?:navigation|quick search|table of contents|this page|show source|previous topic"
    r"|next topic|on this page|edit this page|skip to (?:main )?content|related topics"
    r"|(?:previous|next)[ \t]*:[ \t]+\S.*|(?:index|modules|next|previous)[ \t]*\|.*"
    r"|created using sphinx.*|powered by .*)[ \t]*$", re.I | re.M)
# Files a reader must never list as documents: a site's images, styles, scripts and fonts.
NOT_DOCUMENTS = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".css", ".js",
                 ".mjs", ".map", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".json"}


def in_code(passages):
    """The passages that begin inside a code block: a block too long for one passage goes on
    in the next ones, the first of them without its opening fence. {(source, text)}"""
    starts = set()
    open_in = {}  # source: whether its last passage so far ended inside a fenced block
    for passage in passages:
        inside = open_in.get(passage["source"], False)
        if inside:
            starts.add((passage["source"], passage["text"]))
        fences = len(FENCE_LINE.findall(passage["text"]))
        open_in[passage["source"]] = inside != (fences % 2 == 1)
    return starts


def outside_code(text, inside=False):
    """A passage's text without its fenced code and code spans; inside: it begins in code."""
    return URL.sub(" ", CODE_SPAN.sub(" ", FENCED_CODE.sub(" ", "```\n" * inside + text)))


def markup_in(text, inside=False):
    """The kinds of markup a passage holds outside its code, e.g. ["HTML or JSX tag"]."""
    prose = outside_code(text, inside)
    return [kind for kind, pattern in MARKUP.items() if pattern.search(prose)]


def navigation_in(text, inside=False):
    """The lines of a passage that are a site's navigation, outside code."""
    return [line.strip() for line in NAVIGATION.findall(outside_code(text, inside))]


def boilerplate(passages):
    """Lines of prose (20 characters or more) found in half of a set's documents or more, at
    least four: what a site repeats on every page (a footer, a banner), shown to judge by."""
    documents = {}
    for passage in passages:
        lines = documents.setdefault(passage["source"], set())
        lines.update(line.strip() for line in outside_code(passage["text"]).splitlines()
                     if len(line.strip()) >= 20)
    counts = {}
    for lines in documents.values():
        for line in lines:
            counts[line] = counts.get(line, 0) + 1
    enough = max(4, len(documents) / 2)
    return sorted(line for line, count in counts.items() if count >= enough)


def same_title(listed, expected):
    """Titles compared as text: case, spaces, quote marks and footnote marks aside
    ("LATEX 2ε font selection" is "LaTeX2ε font selection")."""
    def key(title):
        title = re.sub(r"[\u2018\u2019`]", "'", title.casefold())
        return re.sub(r"[\s\u2217*\u2020\u2021]", "", title)
    return key(listed) == key(expected)


def check_listing(files, docs_dir):
    """What a set lists: every document under its own title (titles.json beside the docs
    folder, where there is one: {file: title, or a list of titles that are all its own, or
    null for a page with no title of its own}), and no image, stylesheet, script or font."""
    titles_file = Path(docs_dir).parent / "titles.json"
    expected = json.loads(titles_file.read_text(encoding="utf-8")) if titles_file.exists() \
        else {}
    wrong = []
    for name, want in expected.items():
        listed = files.get(name, {}).get("title")
        wants = [want] if isinstance(want, str) else want or []
        if listed is None or wants and not any(same_title(listed, w) for w in wants):
            wrong.append({"file": name, "listed": listed, "own": want})
    return {"documents": len(files), "expected": len(expected), "wrong_titles": wrong,
            "not_documents": sorted(name for name in files
                                    if Path(name).suffix.lower() in NOT_DOCUMENTS),
            "unexpected": sorted(set(files) - set(expected)) if expected else []}


def passage_quality(questions, vectors, passages, built):
    """The shipped ranking as server.py runs it (one page once): recall at 1 and 3, MRR, and
    of the top-TOP passages, how many hold markup outside code or a site's navigation; also
    the same two counts over every passage of the set, with examples of each."""
    index = built[index_build.RANKING["passage_text"]]
    pages = index_search.page_versions(passages)
    starts = in_code(passages)
    row = {"questions": len(questions), "found_at_1": 0, "found_at_3": 0, "reciprocal_sum": 0,
           "slots": 0, "markup": 0, "navigation": 0, "markup_kinds": {}}
    for (question, wanted, _), vector in zip(questions, vectors):
        results = index_search.rank_passages(question, vector, index["faiss"], passages, DEPTH,
                                            index_build.RANKING, index["lexical"], "", pages)
        rank = file_rank(results, wanted)
        row["found_at_1"] += rank == 1
        row["found_at_3"] += rank is not None and rank <= 3
        row["reciprocal_sum"] += 1 / rank if rank else 0
        for result in results[:TOP]:
            inside = (result["source"], result["text"]) in starts
            kinds = markup_in(result["text"], inside)
            row["slots"] += 1
            row["markup"] += bool(kinds)
            row["navigation"] += bool(navigation_in(result["text"], inside))
            for kind in kinds:
                row["markup_kinds"][kind] = row["markup_kinds"].get(kind, 0) + 1
    marked = []
    lost = []
    for passage in passages:
        inside = (passage["source"], passage["text"]) in starts
        kinds = markup_in(passage["text"], inside)
        navigation = navigation_in(passage["text"], inside)
        marked += [example(passage, kinds)] if kinds else []
        lost += [example(passage, navigation)] if navigation else []
    row.update({"passages": len(passages), "markup_all": len(marked), "navigation_all": len(lost),
                "markup_examples": marked[:3], "navigation_examples": lost[:3],
                "boilerplate": boilerplate(passages)[:5]})
    return row


def example(passage, found):
    return {"source": passage["source"], "found": found, "text": passage["text"][:300]}


def meets_targets(set_name, row, listing):
    """PASS or FAIL against issue 33's targets, or "-" for a set that has none."""
    if set_name not in TARGETS:
        return "-"
    recall_1, recall_3, _ = scores(row)
    target_1, target_3 = TARGETS[set_name]
    ok = recall_1 >= target_1 and recall_3 >= target_3 and not row["navigation"] and \
        row["markup"] <= MARKUP_TARGET * row["slots"] and not listing["wrong_titles"] and \
        not listing["not_documents"] and not listing["unexpected"]
    return "PASS" if ok else "FAIL"


def print_formats(formats):
    print(f"\nWhat the model reads (issue 33), the shipped ranking as server.py runs it (one page "
          f"once). Titles: documents listed under their own title (titles.json); not docs: "
          f"images, styles, scripts or fonts listed. Markup and navigation: of the top-{TOP} "
          f"passages, and of all passages. Targets: r@1 and r@3 {TARGETS['flask rst']} "
          f"({TARGETS['latex pdf']} for PDFs), markup <= {MARKUP_TARGET:.0%}, no navigation.")
    print(f"{'set':<11} {'docs':>5} {'titles':>7} {'not docs':>8}  r@1    r@3    MRR    "
          f"{'markup top 5':>18} {'markup all':>17} {'nav top 5 / all':>15}  target")
    for set_name, (row, listing) in formats.items():
        recall_1, recall_3, mrr = scores(row)
        titles = "-" if not listing["expected"] else \
            f"{listing['expected'] - len(listing['wrong_titles'])}/{listing['expected']}"
        top = f"{row['markup']} of {row['slots']} ({row['markup'] / max(row['slots'], 1):.1%})"
        every = f"{row['markup_all']} of {row['passages']} " \
            f"({row['markup_all'] / max(row['passages'], 1):.0%})"
        print(f"{set_name:<11} {listing['documents']:>5} {titles:>7} "
              f"{len(listing['not_documents']) + len(listing['unexpected']):>8}  "
              f"{recall_1:.3f}  {recall_3:.3f}  {mrr:.3f}  {top:>18} {every:>17} "
              f"{row['navigation']:>7} / {row['navigation_all']:<5}  "
              f"{meets_targets(set_name, row, listing)}")
    for set_name, (row, listing) in formats.items():
        if set_name not in TARGETS:
            continue
        for wrong in listing["wrong_titles"][:5]:
            print(f"  {set_name}: {wrong['file']} listed as {wrong['listed']!r}, "
                  f"its title is {wrong['own']!r}")
        for name in (listing["not_documents"] + listing["unexpected"])[:5]:
            print(f"  {set_name}: listed, but not a document of the set: {name}")
        for kind, count in sorted(row["markup_kinds"].items()):
            print(f"  {set_name}: {count} of the top-{TOP} passages hold: {kind}")
        for found in row["markup_examples"][:2] + row["navigation_examples"][:2]:
            print(f"  {set_name}: e.g. {found['source']}: {found['found']}: "
                  f"{one_line(found['text'])[:150]}")
        for line in row["boilerplate"][:2]:
            print(f"  {set_name}: on half the pages or more: {line[:120]!r}")


def one_line(text):
    return " ".join(text.split())


def scores(row):
    count = row["questions"]
    return row["found_at_1"] / count, row["found_at_3"] / count, row["reciprocal_sum"] / count


def combine(rows):
    """All question sets together: every question counts once; latency is the sets' mean."""
    return {"questions": sum(r["questions"] for r in rows),
            "found_at_1": sum(r["found_at_1"] for r in rows),
            "found_at_3": sum(r["found_at_3"] for r in rows),
            "reciprocal_sum": sum(r["reciprocal_sum"] for r in rows),
            "p50_ms": sum(r["p50_ms"] for r in rows) / len(rows),
            "rank_p50_ms": sum(r["rank_p50_ms"] for r in rows) / len(rows)}


def pick_default(table):
    """The rule from issue 11: best recall@1 over all sets, among the variants whose recall@3
    is nowhere below today's dense search; ties go to higher recall@3, then MRR."""
    baseline = table[VARIANTS[0][0]]
    eligible = [name for name, rows in table.items()
                if all(rows[s]["found_at_3"] >= baseline[s]["found_at_3"] for s in rows)]
    return max(eligible, key=lambda name: scores(table[name]["all"]))


def print_table(table, set_names):
    header = f"{'variant':<26}" + "".join(f" | {name:^33}" for name in set_names)
    print(header)
    print(f"{'':<26}" + " | r@1    r@3    MRR    p50 ms rank ms" * len(set_names))
    print("-" * len(header))
    for name, rows in table.items():
        cells = []
        for set_name in set_names:
            row = rows[set_name]
            recall_1, recall_3, mrr = scores(row)
            cells.append(f" | {recall_1:.3f}  {recall_3:.3f}  {mrr:.3f}  {row['p50_ms']:6.2f}"
                         f" {row['rank_p50_ms']:6.3f}")
        print(f"{name:<26}" + "".join(cells))


def scale_timing(model, count):
    """Ranking cost at `count` passages: both corpora's passages repeated (vectors with a
    little noise, so copies differ), exact search, the shipped ranking against cosine alone.
    The dense index is flat here because an HNSW build at 100k takes minutes; the cost that
    fusion adds (BM25 over every passage, fusing 100 candidates) does not depend on it."""
    import faiss
    import numpy as np

    texts, questions = [], []
    for _, docs_dir, questions_path in QUESTION_SETS:
        _, passages, _ = index_build.read_documents(docs_dir)
        texts += index_build.embedding_texts(passages, index_build.RANKING["passage_text"])
        questions += load_questions(questions_path)
    base = index_build.embed(model, texts)
    copies = -(-count // len(texts))
    generator = np.random.default_rng(0)
    vectors = np.tile(base, (copies, 1))[:count]
    vectors += generator.normal(0, 0.02, vectors.shape).astype("float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    passages = [{"source": f"copy{n // len(texts)}.txt", "text": text}
                for n, text in enumerate((texts * copies)[:count])]
    faiss_index = faiss.IndexFlatIP(vectors.shape[1])
    faiss_index.add(vectors)
    started = time.perf_counter()
    lexical = index_search.lexical_index(passages, "plain")
    bm25_seconds = time.perf_counter() - started
    faiss.omp_set_num_threads(1)
    query_vectors = index_build.embed(model, [q for q, _, _ in questions])
    rankings = {"dense (before)": PLAIN, "shipped": index_build.RANKING}
    seconds = {name: [] for name in rankings}
    for (question, _, _), vector in zip(questions, query_vectors):
        for name, ranking in rankings.items():  # taking turns: the machine's load hits both alike
            started = time.perf_counter()
            index_search.rank_passages(question, vector[None, :], faiss_index, passages, 5,
                                      ranking, lexical)
            seconds[name].append(time.perf_counter() - started)
    times = {name: median(values) * 1e3 for name, values in seconds.items()}
    print(f"\nscale: {count} passages: BM25 index built in {bm25_seconds:.1f} s; ranking p50 "
          f"(exact search, query embedding excluded): cosine only "
          f"{times['dense (before)']:.2f} ms, shipped ranking {times['shipped']:.2f} ms")
    return {"passages": count, "bm25_build_s": bm25_seconds, "rank_p50_ms": times}


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Recall@1, recall@3 and MRR of each ranking variant.")
    parser.add_argument("--json", metavar="PATH",
                        help="also write every number, and the misses, here")
    parser.add_argument("--set", nargs=2, action="append", metavar=("DOCS", "QUESTIONS"),
                        help="evaluate this docs folder and questions file instead of the "
                             "built-in sets (repeat for more)")
    parser.add_argument("--only", metavar="NAMES",
                        help="only these built-in sets, by name, comma-separated "
                             "(e.g. \"latex pdf,werkzeug\")")
    parser.add_argument("--scale", type=int, metavar="N",
                        help="only time the ranking over N synthetic passages (e.g. 100000)")
    args = parser.parse_args(argv)
    if args.scale is not None and args.scale < 1:
        parser.error("--scale needs a positive number of passages")

    sets = QUESTION_SETS
    if args.only:
        names = [name.strip() for name in args.only.split(",")]
        unknown = sorted(set(names) - {name for name, _, _ in QUESTION_SETS})
        if unknown:
            parser.error(f"no built-in set named {', '.join(unknown)}; the sets are "
                         f"{', '.join(name for name, _, _ in QUESTION_SETS)}")
        sets = [question_set for question_set in QUESTION_SETS if question_set[0] in names]
    if args.set:
        sets = [(Path(docs).name, Path(docs), Path(questions)) for docs, questions in args.set]
    try:  # before the model loads: a typo should not cost its loading time
        for _, docs_dir, _ in sets:
            if not Path(docs_dir).is_dir():
                raise QuestionsError(f"docs folder not found: {Path(docs_dir).name}")
        question_sets = {name: load_questions(questions_path, docs_dir)
                         for name, docs_dir, questions_path in sets}
    except QuestionsError as e:
        print(f"eval: error: {e}", file=sys.stderr)
        return 1
    if len(question_sets) != len(sets):
        print("eval: error: two sets have the same docs folder name", file=sys.stderr)
        return 1
    progress("loading the model")
    model = index_build.load_model()
    import faiss
    import torch

    if args.scale:
        scale_timing(model, args.scale)
        return 0
    table = {name: {} for name, _ in VARIANTS}
    builds = {}
    versions = {}
    formats = {}
    for set_name, docs_dir, _ in sets:
        questions = question_sets[set_name]
        # Building uses the machine; querying, below, one thread, as server.py does.
        torch.set_num_threads(2)
        files, passages, built = build_indexes(model, docs_dir)
        builds[set_name] = {"files": len(files), "passages": len(passages),
                            **{f"{text}_embed_s": built[text]["embed_s"] for text in built},
                            **{f"{text}_bm25_s": built[text]["bm25_s"] for text in built}}
        torch.set_num_threads(server.DEFAULT_TORCH_THREADS)
        faiss.omp_set_num_threads(1)
        index_build.embed(model, ["warm up"])
        progress(f"{set_name}: {len(questions)} questions over {len(passages)} passages")
        vectors, embed_seconds = embed_questions(model, questions)
        for name, ranking in VARIANTS:
            table[name][set_name] = evaluate(questions, vectors, embed_seconds, passages, built,
                                             ranking)
        versions[set_name] = versions_and_repeats(questions, vectors, passages, built)
        formats[set_name] = (passage_quality(questions, vectors, passages, built),
                             check_listing(files, docs_dir))
    for name in table:
        table[name]["all"] = combine([table[name][s] for s in question_sets])

    set_names = [*question_sets, "all"]
    total = table[VARIANTS[0][0]]["all"]["questions"]
    print(f"\nRetrieval: is the answering file ranked first (r@1), in the top 3 (r@3)? "
          f"{total} questions")
    for first in range(0, len(set_names), TABLE_SETS):  # a few sets a block: 100 columns
        print_table(table, set_names[first:first + TABLE_SETS])
        print()
    for set_name, numbers in builds.items():
        print(f"build {set_name}: {numbers['files']} files, {numbers['passages']} passages; "
              f"embedding plain {numbers['plain_embed_s']:.1f} s, "
              f"heading {numbers['heading_embed_s']:.1f} s; "
              f"BM25 index {numbers['heading_bm25_s'] * 1e3:.0f} ms")
    print_versions(versions)
    print_formats(formats)
    chosen = pick_default(table)
    shipped = next((name for name, ranking in VARIANTS if ranking == index_build.RANKING), None)
    print(f"\nbest recall@1 without losing recall@3: {chosen}")
    print(f"index_build.RANKING (what the server does): {shipped or index_build.RANKING}")
    if args.json:
        numbers = {"variants": dict(VARIANTS), "table": table, "builds": builds, "best": chosen,
                   "versions": versions,
                   "formats": {name: {"results": row, "listing": listing}
                               for name, (row, listing) in formats.items()}}
        try:
            Path(args.json).write_text(json.dumps(numbers, indent=2) + "\n", encoding="utf-8")
        except OSError as e:
            print(f"eval: error: cannot write {Path(args.json).name}: {e.strerror}",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
