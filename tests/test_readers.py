"""doc_readers.py (issue 33): each format's title, headings, code kept whole and markup gone;
the skip reasons; a build over a mixed folder (markdown, MDX, rst, a built HTML page among its
css, js and images, a PDF, a notebook) that lists every document under its own title and
nothing else; hostile files that each cost one line; and, over the wire, a PDF result that
says its page and documents served as extracted text, also after a live re-index.

The PDFs are real: pdf_bytes writes one by hand (a text layer in Helvetica, an xref table),
and pypdf itself encrypts one.
"""
import io
import json
import re
import shutil
import threading
import tracemalloc

import pypdf
import pytest

import doc_readers
import index_build
import index_search
from conftest import LiveServer, server_command, text_of, wire_by_meaning
from test_messy_docs import wait_for
from test_resources import HANDSHAKE, request


def pdf_bytes(pages, title=None, font=b"/BaseFont /Helvetica"):
    """A real PDF of one page per list of lines (Helvetica, a text layer), with its title in
    the document information dictionary if given. A line that is a list is a TJ array: text
    and the gaps between, in thousandths of an em (["then", -234, "resets"])."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"",
               b"<< /Type /Font /Subtype /Type1 %s >>" % font]
    kids = []
    for lines in pages:
        content = ("BT /F1 11 Tf 72 720 Td 14 TL "
                   + " ".join(f"{shown(line)} T*" for line in lines) + " ET").encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources "
                       b"<< /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % len(objects))
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    info = b""
    if title is not None:
        objects.append(b"<< /Title (%s) >>" % title.encode("latin-1"))
        info = b" /Info %d 0 R" % len(objects)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objects) + 1, info, xref))
    return out.getvalue()


def shown(line):
    """A line as a content stream shows it: (text) Tj, or [(text) gap (text)] TJ."""
    if isinstance(line, list):
        items = " ".join(str(item) if isinstance(item, int) else pdf_string(item) for item in line)
        return f"[{items}] TJ"
    return f"{pdf_string(line)} Tj"


def pdf_string(text):
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


MANUAL_PAGES = [
    ["Acme Bike Manual", "Brakes", "Squeeze both levers evenly to stop. Check the pads every",
     "month: worn pads make a long stopping dis-", "tance on wet roads.", "Page 1 of 3"],
    ["Acme Bike Manual", "Gears", "Shift with the right hand while pedalling lightly; never",
     "shift under full load uphill.", "Page 2 of 3"],
    ["Acme Bike Manual", "Tyres", "Pump the tyres to 4.5 bar before a long ride, and check",
     "the valve caps.", "Page 3 of 3"],
]


def encrypted(data, user_password, owner_password=None):
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password=owner_password,
                   algorithm="RC4-128")  # RC4: pypdf needs no other package for it
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


MDX = """---
title: Installing Widgets
sidebar_position: 2
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';
export const meta = {
  draft: false,
};

{/* TODO: the Windows steps
    are missing */}

Widgets install with your <strong>package manager</strong>.

<Tabs groupId="pm">
  <TabItem value="npm" label="npm">

```bash
import widgets from "widgets"   # a line of code that looks like ESM stays
npm install widgets
<Tabs> stays too
```

  </TabItem>
  <TabItem value="yarn" label="Yarn classic">

Yarn works the same way.

  </TabItem>
</Tabs>

<Admonition type="tip" title="Offline installs">Copy the tarball first.</Admonition>

## Configuring

Set `WIDGETS_HOME`.
"""

RST = """.. _installing:

:orphan:

==========
Installing
==========

Read :ref:`the quick start <quickstart>` first, then :func:`~widgets.core.install` and
``widgets.setup()`` and `the
website <https://example.com>`_ [#note]_.

.. toctree::
   :maxdepth: 2

   intro
   usage

From source
-----------

Clone it and run::

    pip install -e .
    # a comment, not a heading

    widgets --check

.. code-block:: python
   :linenos:

   import widgets

   def main():
       # also not a heading
       return widgets.run()

.. note::
   Widgets need Python 3.10.

.. warning:: Old versions break.

   Remove them first.

.. automodule:: widgets.core
   :members:

.. include:: ../snippets/footer.rst

.. |version| replace:: 1.2

----------

Upgrading
~~~~~~~~~

.. py:function:: upgrade(force=False)

   Upgrades every widget.
"""

SPHINX_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>3. Data model &#8212; Widgets 1.2 documentation</title>
<link rel="stylesheet" href="_static/site.css"><script src="_static/site.js"></script>
<style>body { color: red }</style>
</head><body>
<header class="site-header"><h1>Widgets docs</h1><nav><a href="/">Home</a>
<a href="/api">API reference</a></nav></header>
<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3>
<ul><li><a href="#">Sidebar link</a></li></ul></div>
<div class="related" role="navigation"><a href="prev.html">previous page</a></div>
<div class="body" role="main">
<section id="data-model">
<h1>3. Data model<a class="headerlink" href="#data-model" title="Link">&para;</a></h1>
<p>Objects are Widgets&rsquo; <em>abstraction</em> for data &amp; state.</p>
<div class="highlight-python"><div class="highlight"><pre><span class="k">def</span> f(x):
    <span class="c1"># keep &lt;this&gt; indented</span>
    return x &lt; 3
</pre></div></div>
<h2>3.1. Types<a class="headerlink" href="#types">&para;</a></h2>
<ul><li>numbers</li><li>strings</li></ul>
</section>
</div>
<footer class="footer">&copy; Copyright 2024, Widgets team. Built with Sphinx.</footer>
<script>var search = "<p>not text</p>";</script>
</body></html>
"""

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Plotting widgets\n", "\n",
                                                             "Load the data first."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1,
         "source": ["# read the file\n", "import widgets\n", "data = widgets.load()"],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["OUTPUT-LINE\n"]}]},
        {"cell_type": "raw", "metadata": {}, "source": "RAW-CELL"},
        {"cell_type": "markdown", "metadata": {}, "source": "## Plot\n\n<div class=\"alert\">"
                                                            "Call `plot`.</div>"},
        {"cell_type": "markdown", "metadata": {"nbsphinx": "hidden"}, "source": "HIDDEN-CELL"},
    ],
    "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5,
}


def read(name, text_or_bytes):
    data = text_or_bytes if isinstance(text_or_bytes, bytes) else text_or_bytes.encode()
    return doc_readers.read_document(name, data)


def text_of_document(document):
    return "\n\n".join(text for _, text in document.parts)


def headings(text):
    """The markdown heading lines of a text, outside its code."""
    return [line for line in doc_readers.CODE_FENCE.sub("", text).splitlines()
            if index_build.HEADING.fullmatch(line)]


def code_blocks(text):
    return [match[0] for match in doc_readers.CODE_FENCE.finditer(text)]


# --- one format at a time ---

def test_mdx_keeps_text_labels_and_code_and_drops_esm_comments_and_tags():
    document = read("guide/install.mdx", MDX)
    text = text_of_document(document)
    assert document.title == "Installing Widgets" and document.markdown
    assert "import Tabs" not in text and "export const" not in text and "draft" not in text
    assert "TODO" not in text and "{/*" not in text
    assert "<" not in doc_readers.CODE_FENCE.sub("", text)  # no tag outside code
    for kept in ("Widgets install with your package manager.", "npm", "Yarn classic",
                 "Yarn works the same way.", "Offline installs", "Copy the tarball first.",
                 "## Configuring"):
        assert kept in text, kept
    assert code_blocks(text) == ['```bash\nimport widgets from "widgets"   # a line of code that '
                                 'looks like ESM stays\nnpm install widgets\n<Tabs> stays too\n```']


CELL = "# Cell\n\n```\ncode\n```\n\n<b>Bold</b> and :ref:`a role <target>`.\n"


@pytest.mark.parametrize("name, text", [
    ("guide/install.mdx", MDX),
    ("cell.ipynb", json.dumps({"cells": [{"cell_type": "markdown", "source": CELL}]}))])
def test_windows_line_ends_lose_no_text_and_keep_no_markup(name, text):
    """With "\r\n" line ends a blank line never ended an MDX import block, which then took
    all the text up to the first code block; and no code block closed, so the tags and roles
    after it stayed. Each file reads as it does with "\n" line ends."""
    crlf = text.replace("\\n", "\\r\\n") if name.endswith(".ipynb") else text.replace("\n", "\r\n")
    windows = read(name, crlf)
    unix = read(name, text)
    assert (windows.title, text_of_document(windows).replace("\r", "")) == \
        (unix.title, text_of_document(unix))


def test_mdx_without_a_title_in_front_matter_takes_its_first_line_with_words():
    assert read("a.mdx", "import X from 'x';\n\n<X />\n\n# Real title\n\nText.\n").title == \
        "Real title"


def test_rst_titles_code_admonitions_roles_and_dropped_directives():
    document = read("docs/install.rst", RST)
    text = text_of_document(document)
    assert document.title == "Installing" and document.markdown
    assert headings(text) == ["# Installing", "## From source", "### Upgrading"]
    assert "Read the quick start first, then install and `widgets.setup()` and the website." \
        in text.replace("\n", " ")
    assert code_blocks(text) == [
        "```\npip install -e .\n# a comment, not a heading\n\nwidgets --check\n```",
        "```python\nimport widgets\n\ndef main():\n    # also not a heading\n"
        "    return widgets.run()\n```"]
    assert "Clone it and run:" in text
    assert "Note:\nWidgets need Python 3.10." in text
    assert "Warning: Old versions break.\nRemove them first." in text
    assert "upgrade(force=False)\nUpgrades every widget." in text
    for gone in ("toctree", "maxdepth", "intro", "automodule", ":members:", "include",
                 "footer.rst", "linenos", ":ref:", ":func:", "<quickstart>", "https://",
                 "|version|", "----------", "_installing", "[#note]", ":orphan:"):
        assert gone not in text, gone


def test_rst_without_a_section_title_takes_its_first_line():
    assert read("notes.rst", "Just a note about widgets.\n\nMore.\n").title == \
        "Just a note about widgets."


def test_html_keeps_the_main_content_only():
    document = read("site/datamodel.html", SPHINX_PAGE)
    text = text_of_document(document)
    assert document.title == "3. Data model"
    assert headings(text) == ["# 3. Data model", "## 3.1. Types"]
    assert "Objects are Widgets’ abstraction for data & state." in text
    assert code_blocks(text) == ["```\ndef f(x):\n    # keep <this> indented\n"
                                 "    return x < 3\n\n```"]
    assert "- numbers" in text and "- strings" in text
    for gone in ("Widgets docs", "Home", "API reference", "Table of Contents", "Sidebar link",
                 "previous page", "Copyright", "color: red", "not text", "¶", "&", "<p>"):
        assert gone not in text.replace("data & state", ""), gone


def test_html_without_main_or_heading_is_its_body_under_title_without_the_site_name():
    page = ("<html><head><title>Getting started | Widgets</title></head><body>"
            "<nav><ul><li>Docs</li><li>Blog</li></ul></nav><div class='content'>"
            "<p>Start here &mdash; it is quick.</p></div>"
            "<footer>Widgets Inc.</footer></body></html>")
    document = read("start.htm", page)
    assert document.title == "Getting started"
    assert text_of_document(document) == "Start here — it is quick."
    suffixes = ["Data model — Widgets 1.2 documentation", "Data model - Widgets",
                "Data model · Widgets", "Data model"]
    for title in suffixes:
        page = f"<title>{title}</title><p>Text.</p>"
        assert read("x.html", page).title == "Data model", title


def test_html_with_no_text_or_a_redirect_is_skipped_saying_why():
    with pytest.raises(doc_readers.Unusable, match="holds no text outside navigation"):
        read("empty.html", "<html><nav>Home</nav><script>x = 1</script></html>")
    redirect = ('<html><head><meta http-equiv="refresh" content="0; url=new.html"><title>'
                'Redirecting...</title></head><body><p>Redirecting to <a href="new.html">'
                'new.html</a>...</p></body></html>')
    with pytest.raises(doc_readers.Unusable, match="is a redirect to another page"):
        read("old.html", redirect)


def test_main_content_inside_an_element_that_looks_like_navigation_is_kept():
    """Read the Docs' theme wraps its content in "wy-nav-content"; mdBook's <html> has the class
    "sidebar-visible": main content is never navigation."""
    page = ('<html class="sidebar-visible"><body class="wy-body-for-nav"><nav class="sidebar">'
            'Chapters</nav><div class="wy-nav-content"><div role="main"><h1>Guide</h1>'
            '<p>The text.</p></div></div></body></html>')
    document = read("guide.html", page)
    assert (document.title, text_of_document(document)) == ("Guide", "# Guide\n\nThe text.")


def test_broken_html_still_gives_its_text():
    document = read("broken.html", "<main><h2>Half a page<p>Unclosed <b>bold <div>and more")
    assert document.title == "Half a page"
    assert "Unclosed bold" in text_of_document(document)


def test_pdf_pages_hyphenation_running_lines_and_a_real_title():
    data = pdf_bytes(MANUAL_PAGES, title="Acme Model 3 Owner's Manual")
    document = read("manual.pdf", data)
    assert document.title == "Acme Model 3 Owner's Manual" and not document.markdown
    assert [page for page, _ in document.parts] == [1, 2, 3]
    first = document.parts[0][1]
    assert first.startswith("Brakes\n")
    assert "stopping distance on wet roads" in first
    for part in document.parts:
        assert "Acme Bike Manual" not in part[1] and "of 3" not in part[1], part
    served = doc_readers.served_text("manual.pdf", data)
    assert served.startswith("[page 1]\n\nBrakes\n") and "\n\n[page 3]\n\nTyres\n" in served


def test_html_ending_in_a_tag_left_open_is_read_in_linear_time():
    """A page cut off inside a tag, whose rest holds many "<": Python 3.11's HTMLParser.close()
    tries each "<" to the end of the text, quadratic time (this page: minutes). The open tag is
    dropped, as a browser drops it, and the text before it kept. The 60 s bound is no race: the
    page is read in milliseconds."""
    page = "<main><h1>Cut off</h1><p>Intro text.</p><p>" + "<a href='x " * 40_000
    document = read_within_a_minute("cut.html", page)
    assert (document.title, text_of_document(document)) == ("Cut off", "# Cut off\n\nIntro text.")


def read_within_a_minute(name, text):
    """The Document read from text on a thread given 60 s: no race, as each input here is
    read in well under a second once its reader is linear (and in minutes while it was not)."""
    found = []
    reader = threading.Thread(target=lambda: found.append(read(name, text)), daemon=True)
    reader.start()
    reader.join(60)
    assert found, f"reading {name} did not end within 60 s"
    return found[0]


@pytest.mark.parametrize("line", [
    "a:" * 200_000,              # a role's name tried from each ":" to the line's end
    "A `stray backtick" + " " * 400_000 + "and more.",   # "\s*" after a lazy text
    ":ref:`a role left open" + " " * 400_000 + "and more."])
def test_rst_roles_and_links_are_found_in_linear_time(line):
    """Each of these lines took minutes or hours (160 KB of "a:": 44 s; 40 KB of spaces: 24 s)."""
    document = read_within_a_minute("long.rst", f"Long\n====\n\n{line}\n")
    assert text_of_document(document).endswith(f"\n{line}")  # no role or link: left as it is


def test_html_spaces_between_tags_are_tidied_in_linear_time():
    """Each space of a run was tried to the run's end for a line end: 80,000 took 4 s."""
    page = "<main><h1>Spaces</h1><p>a" + "<b> </b>" * 600_000 + "b</p></main>"
    text = text_of_document(read_within_a_minute("spaces.html", page))
    assert text.split() == ["#", "Spaces", "a", "b"]


def test_mdx_tag_left_open_is_read_in_linear_time():
    """A "<" before a long word was tried at each split of the word into a tag's name and its
    attributes: 80 KB took 1.2 s, this 30 MB line minutes."""
    mdx = "# Open\n\n<" + "a" * 30_000_000 + "\n"
    document = read_within_a_minute("open.mdx", mdx)
    assert text_of_document(document) == mdx  # no tag, nothing gone


def test_html_of_many_tags_is_read_in_memory_a_small_multiple_of_its_size():
    """Each tag kept an empty piece of text: 30 bytes of memory a byte of "<b>x</b>" (a page of
    32 MB: 1 GB); now 11. tracemalloc counts the same bytes on every run: no race."""
    page = "<main><h1>Tags</h1><p>" + "<b>x</b>" * 100_000 + "</p></main>"
    tracemalloc.start()
    try:
        document = read("tags.html", page)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert text_of_document(document) == "# Tags\n\n" + "x" * 100_000
    assert peak < 20 * len(page)


def test_front_matter_with_a_number_python_will_not_read_stays_text(capfd):
    """PyYAML reads a number of over 4,300 digits with int(), which Python refuses (a
    ValueError, not a YAMLError): the whole file was lost, not just its front matter."""
    document = read("big.md", "---\nchecksum: " + "1" * 5_000 + "\n---\n# Big number\n\nText.\n")
    assert document.title == "Big number"
    assert text_of_document(document).endswith("# Big number\n\nText.\n")
    assert "big.md: front matter read as text (not valid YAML: Exceeds the limit" in \
        capfd.readouterr().err


def test_rst_directive_options_are_dropped_in_linear_time():
    """Options were dropped one at a time by copying the rest: 80,000 took 12 s."""
    rst = "Note\n====\n\n.. note::\n" + "   :class: wide\n" * 200_000 + "\n   Mind it.\n"
    text = text_of_document(read_within_a_minute("options.rst", rst))
    assert text.split() == ["#", "Note", "Note:", "Mind", "it."]


@pytest.mark.parametrize("metadata", ["Microsoft Word - manual.docx", "untitled", "Document1",
                                      "manual.pdf", None])
def test_a_pdf_title_a_program_gave_is_replaced_by_its_first_line(metadata):
    assert read("m.pdf", pdf_bytes(MANUAL_PAGES, title=metadata)).title == "Brakes"


def test_pdf_words_on_a_tight_line_stay_apart_and_glyphs_without_text_go():
    """A TeX font has a visible space (0.5 em) at the code of a space, so pypdf alone takes
    a gap under a quarter em, as on a tightly justified line, for no space ("thenresets");
    a kern stays inside its word. A math font's glyphs come as control characters."""
    font = b"/BaseFont /Helvetica /FirstChar 32 /LastChar 32 /Widths [500]"
    lines = [["then", -234, "res", -30, "ets"], "\x01x\x0c = y\x02"]
    assert read("tex.pdf", pdf_bytes([lines], font=font)).parts == [(1, "then resets\nx = y")]


def test_a_pdf_title_printed_over_two_lines_is_whole():
    """natbib's manual, with no title in its metadata, prints its title on two lines."""
    pages = [["Natural Sciences Citations and", "References", "Patrick W. Daly"]]
    assert read("natbib.pdf", pdf_bytes(pages)).title == \
        "Natural Sciences Citations and References"


def test_pdfs_that_cannot_be_read_are_skipped_saying_why(monkeypatch):
    cases = {
        "scanned": (pdf_bytes([[], []]), "holds no text"),
        "encrypted": (encrypted(pdf_bytes(MANUAL_PAGES), "secret"), "is encrypted"),
        "cut": (pdf_bytes(MANUAL_PAGES)[:300], r"cannot be read as \.pdf \(.+\); if it is damaged, "
                                               "save it again from the program that made it$"),
        "empty": (b"", "cannot be read as .pdf"),
        "not a pdf": (b"%PDF-1.7\nnot really\n", "cannot be read as .pdf"),
    }
    for what, (data, reason) in cases.items():
        with pytest.raises(doc_readers.Unusable, match=reason):
            read("x.pdf", data)
    # A password only its owner needs (to print or edit) is no lock on the text.
    opened = read("x.pdf", encrypted(pdf_bytes(MANUAL_PAGES), "", "owner"))
    assert opened.parts[0][1].startswith("Brakes")
    monkeypatch.setattr(doc_readers, "MAX_PDF_PAGES", 2)
    with pytest.raises(doc_readers.Unusable, match="has 3 pages, over the limit of 2"):
        read("x.pdf", pdf_bytes(MANUAL_PAGES))
    monkeypatch.setattr(doc_readers, "MAX_PDF_PAGES", 5000)
    monkeypatch.setattr(doc_readers, "MAX_PDF_SECONDS", -1)  # past its time at once
    with pytest.raises(doc_readers.Unusable, match="too big to read"):
        read("x.pdf", pdf_bytes(MANUAL_PAGES))
    monkeypatch.setattr(doc_readers, "MAX_PDF_SECONDS", 300)
    monkeypatch.setattr(doc_readers, "MAX_PDF_CHARS", 50)
    with pytest.raises(doc_readers.Unusable, match="by page 1"):
        read("x.pdf", pdf_bytes(MANUAL_PAGES))


def test_a_notebook_is_its_markdown_and_its_code_without_outputs():
    document = read("plots.ipynb", json.dumps(NOTEBOOK))
    text = text_of_document(document)
    assert document.title == "Plotting widgets" and document.markdown
    assert headings(text) == ["# Plotting widgets", "## Plot"]
    assert code_blocks(text) == ["```python\n# read the file\nimport widgets\n"
                                 "data = widgets.load()\n```"]
    assert "OUTPUT-LINE" not in text and "RAW-CELL" not in text and "execution_count" not in text
    assert "HIDDEN-CELL" not in text  # nbsphinx leaves it out of the built docs
    assert "Call `plot`." in text and "<div" not in text


def test_broken_notebooks_are_skipped_saying_why():
    with pytest.raises(doc_readers.Unusable, match=r"cannot be read as .ipynb \(Expecting"):
        read("a.ipynb", '{"cells": [')
    for data in ("[]", '{"cells": 3}', "{}"):
        with pytest.raises(doc_readers.Unusable, match="not a Jupyter notebook"):
            read("a.ipynb", data)
    with pytest.raises(doc_readers.Unusable, match="cannot be read as .ipynb"):
        read("a.ipynb", '{"cells": [{"cell_type": "code", "source": 7}]}')


def test_text_and_markdown_are_read_and_served_as_before():
    markdown = "---\ntitle: Front\n---\n# Heading\n\nBody <b>kept</b> as it is.\n"
    document = read("a.md", markdown)
    assert document == ("Front", [(None, "\n# Heading\n\nBody <b>kept</b> as it is.\n")], True)
    assert read("a.txt", "Title line\n\nBody.\n") == ("Title line", [(None, "Title line\n\n"
                                                                       "Body.\n")], False)
    assert doc_readers.served_text("a.md", markdown.encode()) == markdown
    for name in ("binary.html", "binary.rst", "binary.mdx", "binary.ipynb"):
        with pytest.raises(doc_readers.Unusable, match="holds NUL bytes"):
            read(name, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


# --- a build over a mixed folder ---

TITLES = {
    "README.md": "Widgets",
    "guide/install.mdx": "Installing Widgets",
    "guide/source install.rst": "Installing",
    "manual/Bike manüal 2024.pdf": "Acme Model 3 Owner's Manual",
    "notebooks/plots.ipynb": "Plotting widgets",
    "site/datamodel.html": "3. Data model",
    "site/start.htm": "Getting started",
}
OTHERS = ["site/_static/site.css", "site/_static/site.js", "site/_static/logo.png",
          "site/_static/font.woff2", "site/searchindex.json", "manual/cover.jpg"]
HOSTILE = {
    "bad/cut.pdf": (pdf_bytes(MANUAL_PAGES)[:300], "cannot be read as .pdf ("),
    "bad/scanned.pdf": (pdf_bytes([[]] * 3), "holds no text (scanned pages?)"),
    "bad/locked.pdf": (encrypted(pdf_bytes(MANUAL_PAGES), "secret"), "is encrypted"),
    "bad/image.html": (b"\x89PNG\r\n\x1a\n\x00\x00", "holds NUL bytes"),
    "bad/not a notebook.ipynb": (b'{"cells": [', "cannot be read as .ipynb (Expecting"),
    "bad/huge.rst": (b"Huge\n====\n\n" + b"word " * 40_000, "larger than the"),
}


def make_mixed(docs):
    files = {
        "README.md": "# Widgets\n\nSmall widgets for every shelf.\n",
        "guide/install.mdx": MDX, "guide/source install.rst": RST,
        "site/datamodel.html": SPHINX_PAGE,
        "site/start.htm": "<title>Getting started | Widgets</title><nav>Docs</nav>"
                          "<p>Start here: install, then configure.</p>",
        "notebooks/plots.ipynb": json.dumps(NOTEBOOK),
    }
    for name, text in files.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    (docs / "manual").mkdir()
    (docs / "manual" / "Bike manüal 2024.pdf").write_bytes(
        pdf_bytes(MANUAL_PAGES, title="Acme Model 3 Owner's Manual"))
    for name in OTHERS:
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_bytes(b"\x00not a document")
    return docs


def test_a_mixed_folder_lists_every_document_under_its_title_and_nothing_else(tmp_path,
                                                                              monkeypatch):
    docs = make_mixed(tmp_path / "docs")
    for name, (data, _) in HOSTILE.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_bytes(data)
    monkeypatch.setattr(index_build, "MAX_FILE_BYTES", 100_000)
    others = []
    files, passages, skipped = index_build.read_documents(docs, others=others)
    assert {name: info["title"] for name, info in files.items()} == TITLES
    assert sorted(others) == sorted(OTHERS)
    assert set(skipped) == set(HOSTILE)
    for name, (_, reason) in HOSTILE.items():
        assert skipped[name].startswith(reason) and "\n" not in skipped[name], name
    by_source = {}
    for passage in passages:
        by_source.setdefault(passage["source"], []).append(passage)
    pdf = by_source["manual/Bike manüal 2024.pdf"]
    assert [p["page"] for p in pdf] == [1, 2, 3]
    assert all("page" not in p for name, ps in by_source.items() for p in ps if name != pdf[0]
               ["source"])
    html_text = "\n".join(p["text"] for p in by_source["site/datamodel.html"])
    assert "Sidebar link" not in html_text and "<" not in html_text.replace("<this>", "").replace(
        "x < 3", "")


def test_the_command_line_names_each_bad_file_once_and_counts_the_others(tmp_path, monkeypatch,
                                                                         capsys, model):
    docs = make_mixed(tmp_path / "docs")
    for name, (data, _) in HOSTILE.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_bytes(data)
    monkeypatch.setattr(index_build, "MAX_FILE_BYTES", 100_000)
    monkeypatch.setattr(index_build, "load_model", lambda threads=None: model)
    assert index_build.main(["--docs", str(docs), "--index", str(tmp_path / "index")]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == len(HOSTILE)
    for line, (name, (_, reason)) in zip(lines, sorted(HOSTILE.items())):
        assert line.startswith(f"index_build: skipping {name}: {reason}"), line
    assert out.startswith(f"indexed {len(TITLES)} files")
    assert out.rstrip().endswith(f"; {len(OTHERS)} other file(s) (images, styles, scripts...) "
                                 f"not read; skipped {len(HOSTILE)} file(s), named above")
    assert str(tmp_path) not in err


def test_only_changed_files_of_any_format_are_read_again(tmp_path, model, monkeypatch):
    docs = make_mixed(tmp_path / "docs")
    first = index_build.build_index(docs, tmp_path / "index", model=model)
    read = []
    real = doc_readers.read_document
    monkeypatch.setattr(doc_readers, "read_document",
                        lambda name, data: read.append(name) or real(name, data))
    (docs / "guide" / "source install.rst").write_text(RST + "\nA new closing line.\n")
    second = index_build.build_index(docs, tmp_path / "index", model=model)
    assert read == ["guide/source install.rst"]
    assert {name: info["title"] for name, info in second["files"].items()} == TITLES
    assert second["counts"]["passages"] == first["counts"]["passages"]


def test_a_pdf_result_says_its_page_and_documents_are_served_as_text(tmp_path, model):
    docs = make_mixed(tmp_path / "docs")
    index_build.build_index(docs, tmp_path / "index", model=model)
    pdf = "manual/Bike manüal 2024.pdf"
    messages = [*HANDSHAKE,
                request(1, "tools/call", {"name": "search", "arguments": {
                    "query": "what pressure should the tyres be pumped to", "top_k": 1}}),
                request(2, "tools/call", {"name": "get_document", "arguments": {"name": pdf}}),
                request(3, "resources/list"),
                *[request(10 + i, "tools/call", {"name": "get_document",
                                                 "arguments": {"name": name}})
                  for i, name in enumerate(TITLES)]]
    written, _ = wire_by_meaning(server_command(tmp_path / "index", "--no-watch"), messages)
    got = {m["id"]: m for m in written}
    top = got[1]["result"]["structuredContent"]["results"][0]
    assert top["source"] == pdf and top["page"] == 3
    assert re.match(rf"\[1\] source: {pdf} \(distance: 0\.\d\d\), page 3\n",
                    text_of(got[1]["result"]))
    served = text_of(got[2]["result"])
    assert served.startswith("[page 1]\n\nBrakes\n") and "[page 3]\n\nTyres" in served
    listed = {r["name"]: r for r in got[3]["result"]["resources"]}
    assert {name: r["title"] for name, r in listed.items()} == TITLES
    assert {r["mimeType"] for r in listed.values()} == {"text/markdown"}
    assert [name for name, r in listed.items() if "size" in r] == ["README.md"]  # the others: text
    for i, name in enumerate(TITLES):
        text = text_of(got[10 + i]["result"])
        assert "%PDF" not in text and "<div" not in text and "import Tabs" not in text, name
        assert ":ref:" not in text and '"cell_type"' not in text, name


def test_a_server_reindexes_new_files_of_every_format(tmp_path, model):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "README.md").write_text("# Widgets\n\nSmall widgets for every shelf.\n")
    index_build.build_index(docs, tmp_path / "index", model=model)
    server = LiveServer(server_command(tmp_path / "index"))
    try:
        source = make_mixed(tmp_path / "more")
        for name in TITLES:
            if name != "README.md":
                (docs / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(source / name, docs / name)

        def listed():
            manifest = index_search.read_manifest(tmp_path / "index")
            return {name: info["title"] for name, info in manifest["files"].items()}
        wait_for(lambda: listed() == TITLES, seconds=300, what="the re-index of every format")

        def top_result():
            result = server.call("search", {"query": "tyre pressure before a long ride",
                                            "top_k": 1})
            return result["structuredContent"]["results"][0]
        wait_for(lambda: top_result().get("page") == 3, seconds=120,
                 what="the server to search the new index")
        assert top_result()["source"] == "manual/Bike manüal 2024.pdf"
    finally:
        server.close()
