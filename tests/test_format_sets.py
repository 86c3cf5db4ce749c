"""The public documentation trees of issue 33, read as a build reads them: every document is
listed under its own title, and nothing else is listed.

    python -m pytest -q tests/test_format_sets.py

Five trees nobody here wrote live in tests/eval/ (each with its SOURCES.md and licence): Flask's
Sphinx sources (.rst), two sections of the AI SDK's docs (.mdx), Werkzeug's built HTML site
(pages among their CSS, JavaScript, images and favicon), LaTeX PDF manuals, and the nbsphinx
and emcee notebooks (.ipynb). Beside each docs/ folder, titles.json gives every document's own
title: a text, a list of texts that are all its own (a PDF's metadata title and the one printed
on its first page), or null for a page with no title of its own (an rst file that only
includes another). `make eval` measures how well search finds their pages; this test only
reads them, without the model, in about ten seconds: index_build.scan_docs picks the
documents, doc_readers.read_document reads each one. Reading a PDF takes a second or more, so
the titles are checked on the smaller PDFs only (`make eval` checks them all); the questions,
which must not copy their page's words, are checked against every page they name.
"""

import json
import re
from pathlib import Path

import pytest

from measure import eval as eval_script  # measure/eval.py; "eval" alone would hide the builtin
import doc_readers
import index_build
from conftest import ROOT

EVAL_SETS = ROOT / "tests" / "eval"
SETS = ["flask", "ai_sdk", "werkzeug", "latex_guides", "notebooks"]
PDF_READ_BYTES = 300_000  # the PDFs read here: cfgguide, cyrguide, makeindx, modguide, natbib


def own_titles(name):
    return json.loads((EVAL_SETS / name / "titles.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", SETS)
def test_every_document_is_listed_and_nothing_else(name):
    """The documents a build lists are exactly the pages of titles.json: no image,
    stylesheet, script, font or Sphinx conf.py among them, and none of the pages left out."""
    others = []
    usable, skipped = index_build.scan_docs(EVAL_SETS / name / "docs", others)
    assert skipped == []
    assert sorted(usable) == sorted(own_titles(name))
    assert not [file for file in usable
                if Path(file).suffix.lower() in eval_script.NOT_DOCUMENTS]
    if name == "werkzeug":  # a built site: its assets are there, and passed over
        suffixes = {Path(file).suffix for file in others}
        assert {".css", ".js", ".png", ".ico"} <= suffixes


@pytest.mark.parametrize("name", SETS)
def test_every_document_is_listed_under_its_own_title(name):
    docs = EVAL_SETS / name / "docs"
    wrong = []
    for file, own in own_titles(name).items():
        path = docs / file
        if path.suffix == ".pdf" and path.stat().st_size > PDF_READ_BYTES:
            continue
        if not has_own_title(name, file, own):
            wrong.append((file, doc_readers.read_document(file, path.read_bytes()).title, own))
    assert wrong == []


def has_own_title(name, file, own):
    """Whether the reader gives a document its own title (any one, where titles.json lists
    several; any title at all where it says null)."""
    path = EVAL_SETS / name / "docs" / file
    title = doc_readers.read_document(file, path.read_bytes()).title
    owns = [own] if isinstance(own, str) else own or []
    return not owns or any(eval_script.same_title(title, one) for one in owns)


def test_a_title_is_compared_as_text():
    """How titles.json is matched: case, spaces, quote marks and footnote marks aside."""
    assert eval_script.same_title("LATEX 2ε font selection", "LaTeX2ε font selection")
    assert eval_script.same_title("The ltpara.dtx code∗", "The ltpara.dtx code")
    assert eval_script.same_title("Packages in the ‘graphics’ bundle",
                                  "Packages in the `graphics' bundle")
    assert not eval_script.same_title("Natural Sciences Citations and",
                                      "Natural Sciences Citations and References")
    assert not eval_script.same_title("Werkzeug Documentation (2.2.x)", "nginx")


@pytest.mark.parametrize("name", SETS)
def test_questions_name_pages_of_the_set_and_borrow_no_phrases(name):
    """Every question names pages of its set (eval.load_questions checks), and none copies
    five words in a row from the page that answers it: asked as a user would, who has not
    read the page. The PDFs are read whole here, so this is the slow part (some seconds)."""
    docs = EVAL_SETS / name / "docs"
    questions = eval_script.load_questions(EVAL_SETS / name / "questions.json", docs)
    assert len(questions) >= 30
    texts = {}
    copied = []
    for question, wanted, _ in questions:
        words = re.findall(r"[a-z0-9']+", question.lower())
        for file in eval_script.wanted_files(wanted):
            if file not in texts:
                parts = doc_readers.read_document(file, (docs / file).read_bytes()).parts
                page_words = re.findall(r"[a-z0-9']+", " ".join(text for _, text in parts).lower())
                texts[file] = f" {' '.join(page_words)} "
            copied += [(file, " ".join(words[i:i + 5])) for i in range(len(words) - 4)
                       if f" {' '.join(words[i:i + 5])} " in texts[file]]
    assert copied == []
