"""
doc_readers.py - documents in, text out: what index_build.py reads in each kind of file.

    import doc_readers
    document = doc_readers.read_document("guide/install.rst", data)   # data: the file's bytes
    document.title       "Installing"
    document.parts       [(page, text)]: one part, page None; a PDF has a part per page
    document.markdown    whether the text is split at its headings (all but .txt and .pdf)

Each reader gives the text index_build.split_into_passages cuts into passages: "# Heading"
lines, code in ``` fences (each kept whole), prose without its markup.

    .txt            as it is; the title is its first line with words
    .md .markdown   as it is, YAML front matter left out (its title: kept)
    .mdx            as markdown, import/export lines and {/* comments */} gone, component
                    tags (<Tabs>, <TabItem label="npm">) gone, their text and labels kept
    .rst            over- and underlined titles are headings, literal blocks (::) and
                    code-block directives are code, admonitions keep label and text, roles
                    (:ref:`text <target>`) keep their text; toctree, include, automodule
                    and the like are dropped. The title is the first section title.
    .html .htm      the main content (<main>, <article>, role="main") when there is one;
                    navigation, headers, footers, sidebars, scripts and styles gone; h1-h6
                    are headings, <pre> is code. The title is its first heading, else
                    <title> without the site's name ("Install | Site": "Install").
    .pdf            (pypdf) the text of each page, words hyphenated at line ends joined,
                    words on tight lines of TeX kept apart, glyphs with no text and running
                    headers and footers dropped. The title is the metadata's when it is a
                    real one, else page 1's first line (and the next when the first ends in
                    "and", "of"...). Scanned or encrypted: skipped.
    .ipynb          markdown cells as text, code cells as code, outputs left out, and
                    cells nbsphinx hides ("nbsphinx": "hidden") too

No other file is a document (SUFFIXES). A file that cannot be read as its format raises
Unusable with a one-line reason; the build names the file with it and goes on. served_text
is what get_document and the docs:/// resources show: a .txt or markdown file as it is, any
other its extracted text, a PDF's pages each under "[page N]".
"""

import collections
import contextlib
import html.parser  # and html.unescape
import io
import itertools
import json
import logging
import re
import sys
import textwrap
import time
from pathlib import Path

# A title is a document's first line, which in a log or a one-line dump can be megabytes;
# list_documents shows every title, so each is cut to this many characters.
TITLE_MAX_CHARS = 200
TITLE_SEARCH_CHARS = 4000  # how far into a document its title is looked for
# C0 control characters other than tab, newline, vertical tab, form feed and carriage return.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
# YAML front matter: a "---" line first, then YAML up to a "---" (or "...") line, read from at
# most this many characters: a block is a few lines of metadata, not a document.
FRONT_MATTER_MAX_CHARS = 64 * 1024
FRONT_MATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.M)
# Markup with no words to find: comments, tags, images and badges, link references
# ("[npm]: https://..."), heading, emphasis and code marks; a link keeps its text. Bounded
# repeats keep each pattern linear on a huge line, and a link's or image's text holds no "[":
# else each "[" of a run was tried over the next 1,000 characters (a 1 MB run: 6 s).
NO_WORDS = re.compile(r"<!--.*?(?:-->|\Z)|</?[A-Za-z][^>]{0,1000}>|(?<!\w)[#*_`~]+|[*_`~]+(?!\w)"
                      r"|!\[[^\[\]]{0,1000}\](?:\([^)]{0,1000}\)|\[[^\]]{0,1000}\])?"
                      r"|^ {0,3}\[[^\]\n]{1,1000}\]:[^\n]*", re.S | re.M)
LINK = re.compile(r"\[([^\[\]]{0,1000})\](?:\([^)]{0,1000}\)|\[[^\]]{0,1000}\])")
LINE_WITH_WORDS = re.compile(r"^.*\w.*$", re.M)
# A fenced code block, up to its closing fence or the end of the text; a "# comment" in it is
# no heading. Lines may end in "\r\n" (Windows): "$" is only ever before the "\n".
CODE_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?(?:^ {0,3}\1[`~]*[ \t\r]*$|\Z)", re.M | re.S)
FIRST_HEADING = re.compile(r"^#{1,6}[ \t]+(\S.*)$", re.M)

# MDX: an import/export block runs to a blank line; a JSX comment; a tag and its label.
MDX_ESM = re.compile(r"^(?:import|export)\b.*?(?:\n[ \t\r]*\n|\Z)", re.M | re.S)
JSX_COMMENT = re.compile(r"\{/\*.*?(?:\*/\}|\Z)", re.S)
# A tag's name is not matched apart from its attributes: an unclosed "<aaa..." was then tried
# at each split of the two, 2,000 steps a character (80 KB: 1.2 s, a 32 MB line: minutes).
TAG = re.compile(r"<(/?)[A-Za-z]([^<>]{0,2000})>")
LABEL = re.compile(r"\b(?:label|title)=(?:\"([^\"]*)\"|'([^']*)'|\{[\"']([^\"']*)[\"']\})")

# reStructuredText. A title's under- or overline: one punctuation character, 3 times or more.
RST_LINE = re.compile(r"([=\-`:'\"~^_*+#.<>])\1{2,}[ \t]*")
RST_DIRECTIVE = re.compile(r"\.\.[ \t]+([\w:.+-]+?)::[ \t]*(.*)")
RST_OPTION = re.compile(r":[\w -]+:(?:[ \t]|$)")
# :ref:`text <target>`, and as MyST (markdown: a notebook's cells) writes a role, {ref}`text`.
# A role's name is bounded and its text ends in no space (no "\s*" after a lazy text): either
# was quadratic, over a line of "a:a:a:..." or a long run of spaces (160 KB: 40 s).
RST_ROLE = re.compile(r"(?::[\w:.+-]{1,100}:|\{[\w:.+-]+\})`((?:[^`<]*[^`<\s])?)\s*(?:<[^`>]*>)?`")
RST_LINK = re.compile(r"`([^`<]*[^`<\s])\s*(?:<[^`>]*>)?`__?")      # `text <url>`_
RST_LITERAL = re.compile(r"``([^`]+)``")
RST_FOOTNOTE = re.compile(r"\s?\[[#*\w.-]*\]_")
RST_CODE = set("code-block code sourcecode ipython parsed-literal".split())
RST_ADMONITIONS = set("note warning tip important caution danger attention hint error seealso "
                      "todo versionadded versionchanged deprecated".split())
RST_DROPPED = set("toctree include literalinclude image figure raw only index meta highlight "
                  "currentmodule module contents sectnum tabularcolumns".split())  # and auto*

# HTML. What is not the page's content: these elements, a header outside the main content,
# and elements whose role, class or id says navigation ("md-sidebar", "headerlink").
HTML_SKIPPED = set("title script style nav footer aside noscript svg form button iframe".split())
HTML_NAVIGATION = re.compile(r"(?:^|[\s_-])(?:sidebar|sphinxsidebar|navbar|nav|navigation|menu"
                             r"|breadcrumbs?|toc|headerlink|footer|related|skip)(?:$|[\s_-])", re.I)
HTML_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu"}
HTML_VOID = set("area base br col embed hr img input link meta param source track wbr".split())
HTML_BLOCKS = ("p div section ul ol dl dt dd table tr blockquote figure figcaption details summary "
               "header caption li h1 h2 h3 h4 h5 h6").split()
HTML_STARTS = {**dict.fromkeys(HTML_BLOCKS, "\n\n"), "li": "\n\n- ", "pre": "\n\n```\n",
               "td": " ", "th": " ", **{f"h{n}": "\n\n" + "#" * n + " " for n in range(1, 7)}}
HTML_ENDS = {**dict.fromkeys(HTML_BLOCKS, "\n\n"), "pre": "\n```\n\n"}
HTML_TITLE = re.compile(r"<title[^>]{0,1000}>([^<]{0,1000})</title", re.I)
SITE_NAME = re.compile(r"\s+[|–—·:-]{1,2}\s+.*")  # " — Python 3.11 docs", " | Site"

# PDF. A document of more pages is not one to read whole; the time and the text read are
# bounded too (pypdf bounds each stream it unpacks, at 75 MB by default).
MAX_PDF_PAGES = 5000
MAX_PDF_SECONDS = 300
MAX_PDF_CHARS = 32 * 2 ** 20
# pypdf takes the glyph at code 32 for a space, but a TeX font has another there (a visible
# space, 0.5 em), so pypdf misses word spaces under half its width: the tight ones of justified
# lines ("thenresets"). In a TJ array a gap of WORD_GAP thousandths of an em or more is a word
# space (TeX shrinks one of 0.333 em by a third at most); a kern or a logo's gap is smaller.
WORD_GAP = 200
HYPHENATED = re.compile(r"(\w)-[ \t]*\n[ \t]*(?=[a-z])")
# Glyphs with no text, as TeX's math fonts give them: control characters, the private use area.
NO_TEXT_GLYPHS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ue000-\uf8ff]")
# A title a program gave, not a person: "Microsoft Word - notes.doc", "untitled", "Slide 1".
NO_TITLE = re.compile(r"^(?:microsoft \w+ - |untitled\b|(?:document|presentation|slide) ?\d*$)"
                      r"|\.(?:docx?|odt|rtf|pdf|tex|dvi|indd|pptx?|xlsx?|ps|html?|txt)$", re.I)


class Unusable(Exception):
    """A file that cannot be a document; the message says why, e.g. "holds NUL bytes: ..."."""


# A document as read: its title; its text in parts, [(page or None, text)]; and whether that
# text is markdown (split at headings and code fences) or plain (at blank lines).
Document = collections.namedtuple("Document", "title parts markdown")


def read_document(name, data):
    """The Document in a file's bytes, read by its suffix; Unusable says why there is none."""
    try:
        return SUFFIXES[Path(name).suffix.lower()](name, data)
    except Unusable:
        raise
    except Exception as e:  # a reader's failure costs its file, never the build
        reason = " ".join(str(e).split())[:200] or type(e).__name__
        raise Unusable(f"cannot be read as {Path(name).suffix.lower()} ({reason}); if it is "
                       "damaged, save it again from the program that made it") from None


def served_text(name, data):
    """What get_document and the docs:/// resources show of a document (module docstring)."""
    if Path(name).suffix.lower() in (".txt", ".md", ".markdown"):
        return decode_text(data)
    return "\n\n".join(f"[page {page}]\n\n{text}" if page else text
                       for page, text in read_document(name, data).parts)


# ----------------------------------------------------------------------------
# Text and markdown, as index_build always read them

def read_text(name, data):
    """A .txt file, or markdown (.md, .markdown, and .mdx: mdx_prose) with its front matter."""
    text = decode_text(data)
    markdown = Path(name).suffix.lower() != ".txt"
    front, text = split_front_matter(text, name) if markdown else ({}, text)
    text = outside_code(text, mdx_prose) if Path(name).suffix.lower() == ".mdx" else text
    return Document(document_title(text, name, front), [(None, text)], markdown)


def decode_text(data):
    """The text of a document's bytes: UTF-8 (a byte order mark is allowed), or UTF-16 with one.

    Raises Unusable for bytes that are not text: a NUL byte never occurs in UTF-8 text and
    is the mark of binary files and of UTF-16 written without a byte order mark; and text
    that is more than 1% control characters is not something a person wrote.
    """
    utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))  # UTF-16's byte order marks
    if b"\x00" in data and not utf16:
        raise Unusable(f"holds NUL bytes (the first at offset {data.index(0)}), so it is "
                       "binary or UTF-16 without a byte order mark; save it as UTF-8")
    try:  # utf-8-sig: tolerates the byte order mark some editors write
        text = data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as e:
        encoding = "UTF-16" if utf16 else "UTF-8"
        raise Unusable(f"not valid {encoding} (byte 0x{e.object[e.start]:02x} at offset "
                       f"{e.start}); save it as UTF-8") from None
    controls = len(text) - len(CONTROL_CHARACTERS.sub("", text))
    if controls * 100 > len(text):
        raise Unusable(f"{controls:,} of its {len(text):,} characters are control characters, "
                       "so it is not plain text")
    return text


def document_title(text, file_name, front=None):
    """The title in the front matter (a text or a number), else the first line with words near
    a document's top, its markup removed ("# Express [![npm](...)](...)" becomes "Express"),
    else the file name without its suffix; on one line, cut to TITLE_MAX_CHARS."""
    title = (front or {}).get("title")
    if type(title) not in (str, int, float) or not str(title).split():  # a bool is no title
        # Only the top is read: a 32 MiB file of one line must not be copied whole.
        line = LINE_WITH_WORDS.search(strip_markup(text[:TITLE_SEARCH_CHARS]))
        title = line[0] if line else Path(file_name).stem.strip() or Path(file_name).name
    title = " ".join(str(title).split())
    return title if len(title) <= TITLE_MAX_CHARS else title[:TITLE_MAX_CHARS - 1].rstrip() + "…"


def first_heading_title(text, name, fallback=""):
    """The title of extracted text: its first heading outside code, else fallback, else its
    first line with words (document_title)."""
    prose = CODE_FENCE.sub("", text)
    heading = FIRST_HEADING.search(prose)
    return document_title(heading[1] if heading else fallback or prose, name)


def split_front_matter(text, name):
    """(front matter, the rest): a markdown file's YAML front matter ("---" lines around
    "title: ..."), read with PyYAML's safe loader from at most FRONT_MATTER_MAX_CHARS, and the
    text after it. A block that is not closed in time, not YAML, or not a mapping stays text
    (its title taken from what follows it), and the build says so on stderr, once a file."""
    if not text.startswith(("---\n", "---\r\n")):
        return {}, text
    import yaml

    end = FRONT_MATTER_END.search(text, 3, FRONT_MATTER_MAX_CHARS)
    problem = f"not closed within {FRONT_MATTER_MAX_CHARS:,} characters"
    if end:
        try:
            front = yaml.load(text[3:end.start()], Loader=yaml.CSafeLoader)
            problem = None if isinstance(front, dict) else "not a mapping of names to values"
        except (yaml.YAMLError, ValueError) as e:  # ValueError: an int of over 4,300 digits
            problem = "not valid YAML: " + " ".join(str(e).split())[:200]
    if problem:
        print(f"index_build: {name}: front matter read as text ({problem})", file=sys.stderr)
        # Text, but not a title: "external help file: ..." names no document. The title is
        # then the first line with words after the block (often the same "# Heading").
        return {"title": document_title(text[end.end():] if end else text, name)}, text
    return front, text[end.end():]


def strip_markup(text):
    """The words of markdown or HTML: comments, tags, images, badges and link references
    removed, a link replaced by its text, heading, emphasis and code marks dropped."""
    return html.unescape(LINK.sub(r"\1", NO_WORDS.sub("", text)))


def outside_code(text, change):
    """text with change() applied to each stretch outside fenced code; the code as it is."""
    pieces = []
    start = 0
    for fence in CODE_FENCE.finditer(text):
        pieces += [change(text[start:fence.start()]), fence[0]]
        start = fence.end()
    return "".join([*pieces, change(text[start:])])


def fenced(code, language=""):
    """Code in a fence longer than any run of backticks inside it."""
    ticks = "`" * max([3, *(len(run) + 1 for run in re.findall("`{3,}", code))])
    return f"\n{ticks}{language}\n{code.strip(chr(10))}\n{ticks}\n" if code.strip() else ""


# ----------------------------------------------------------------------------
# MDX: markdown with JSX components

def mdx_prose(prose):
    """MDX outside code as markdown: no import/export blocks, JSX comments or tags."""
    return TAG.sub(tag_label, JSX_COMMENT.sub("", MDX_ESM.sub("", prose)))


def tag_label(tag):
    """What stays of a tag: its label or title (<TabItem label="npm">) on a line of its own."""
    label = LABEL.search(tag[2])
    return f"\n\n{next(filter(None, label.groups()), '')}\n\n" if label else ""


# ----------------------------------------------------------------------------
# reStructuredText (Sphinx)

def read_rst(name, data):
    # Roles and links last: one may run over a line end.
    text = outside_code(rst_markdown(decode_text(data).expandtabs().splitlines(), []), rst_inline)
    return Document(first_heading_title(text, name), [(None, text)], True)


def rst_markdown(lines, styles):
    """Markdown-style text of rst lines. styles: the title styles (character, overlined) met
    so far, in order: a style's place is its heading's level."""
    lines = [line.rstrip() for line in lines] + ["", ""]  # so that lines[i + 2] is one
    out = []
    i = 0
    while i < len(lines) - 2:
        line = lines[i]
        below = lines[i + 1]
        indent = len(line) - len(line.lstrip())
        if RST_LINE.fullmatch(line) and below.strip() and lines[i + 2] == line:
            out.append(rst_heading(below.strip(), (line[0], True), styles))
            i += 3
        elif line.strip() and not indent and RST_LINE.fullmatch(below) \
                and not RST_LINE.fullmatch(line) and len(below) >= min(len(line), 4):
            out.append(rst_heading(line, (below[0], False), styles))
            i += 2
        elif line.lstrip().startswith(".. ") or line.strip() == "..":
            body, i = indented_block(lines, i + 1, indent)
            directive = RST_DIRECTIVE.fullmatch(line.strip())
            out.append(rst_directive(*directive.groups(), body, styles) if directive else "")
        elif line.endswith("::"):  # "Example::" is "Example:", then a literal block
            body, i = indented_block(lines, i + 1, indent)
            out += [line[:-1] if line[-3:-2].strip() else line[:-2], fenced("\n".join(body))]
        else:  # a line of prose; a transition ("-----") or a bare field (":orphan:") is left out
            out.append("" if RST_LINE.fullmatch(line) or RST_OPTION.fullmatch(line) else line)
            i += 1
    return "\n".join(out).strip("\n")


def rst_heading(title, style, styles):
    if style not in styles:
        styles.append(style)
    return f"\n{'#' * min(styles.index(style) + 1, 6)} {title.strip()}\n"


def indented_block(lines, start, indent):
    """(the lines from start on that are blank or indented deeper than indent, dedented;
    the number of the line after them). The lines have no spaces at their ends."""
    end = start
    while end < len(lines) and (not lines[end] or lines[end][:indent + 1].isspace()):
        end += 1
    return textwrap.dedent("\n".join(lines[start:end])).strip("\n").split("\n"), end


def rst_directive(name, argument, body, styles):
    """A directive's text: code fenced, admonitions under their label, the dropped ones
    nothing, any other its argument and content."""
    name = name.split(":")[-1].lower()  # py:function: function
    body = list(itertools.dropwhile(RST_OPTION.match, body))  # (body[1:] in a loop: quadratic)
    if name in RST_CODE:
        return fenced("\n".join(body), argument.strip())
    if name in RST_DROPPED or name.startswith("auto"):  # automodule, autoclass, autosummary
        return ""
    if name in RST_ADMONITIONS:
        argument = f"{name.capitalize()}: {argument}".strip()
    content = rst_markdown(body, styles)
    return "\n" + "\n".join(filter(None, [argument, content])) + "\n"  # an argument runs on


def rst_inline(text):
    """rst prose with its roles, links and footnote marks as plain text."""
    text = RST_ROLE.sub(lambda role: role[1].lstrip("!~").split(".")[-1]
                        if role[1].startswith("~") else role[1].lstrip("!"), text)
    return RST_FOOTNOTE.sub("", RST_LITERAL.sub(r"`\1`", RST_LINK.sub(r"\1", text)))


# ----------------------------------------------------------------------------
# HTML: a page of a built site

def read_html(name, data):
    source = decode_text(data)
    if re.search(r"<meta[^>]{0,200}http-equiv=[\"']?refresh", source[:TITLE_SEARCH_CHARS], re.I):
        raise Unusable("is a redirect to another page (a meta refresh), not a document")
    page = PageText()
    page.feed(source)
    # A tag or comment still open at the end ("<a href='...", a cut download) is no text, as in
    # a browser; and Python 3.11's close() takes quadratic time over one (400 KB: minutes).
    page.rawdata = "" if page.rawdata.startswith("<") else page.rawdata
    page.close()
    main = "".join(text for in_main, text in page.pieces if in_main)
    whole = main if LINE_WITH_WORDS.search(main) else "".join(text for _, text in page.pieces)
    text = outside_code(whole, tidy).strip()
    if not LINE_WITH_WORDS.search(text):
        raise Unusable("holds no text outside navigation, scripts and styles")
    title = HTML_TITLE.search(source[:TITLE_SEARCH_CHARS * 16])
    site_title = SITE_NAME.sub("", " ".join(html.unescape(title[1]).split())) if title else ""
    return Document(first_heading_title(text, name, site_title), [(None, text)], True)


def tidy(prose):
    """Prose from HTML: no spaces around line ends, at most one blank line in a row, and a list
    item's text on its "- " line (<li><p>...). Spaces are tried from the first of a run only:
    from each one, a run of spaces between tags ("<b> </b>" * 80,000) took seconds, quadratic."""
    prose = re.sub(r"\n{3,}", "\n\n", re.sub(r"(?<![ \t])[ \t]*\n[ \t]*", "\n", prose))
    return re.sub(r"^- *\n+", "- ", prose, flags=re.M)


class PageText(html.parser.HTMLParser):
    """The text of an HTML page, markdown-style: the whole page's (navigation left out) and
    its main content's. self.open: {region: [the tag that opened it, how deep we are in it]}
    for the regions "skip" (navigation), "main" and "pre" we are in."""

    def __init__(self):
        super().__init__(convert_charrefs=True)  # entities come decoded
        self.pieces = []  # [(whether it is in the main content, text)]
        self.open = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in HTML_VOID:  # no end tag: it opens no region
            return self.emit("\n" if tag == "br" else "")
        for region in self.open.values():
            region[1] += region[0] == tag
        role = attrs.get("role")
        navigation = HTML_NAVIGATION.search(f"{attrs.get('class')} {attrs.get('id')}")
        if "main" not in self.open and (tag in ("main", "article") or role == "main"):
            self.open.pop("skip", None)  # the main content is never navigation, wherever it is
            self.open["main"] = [tag, 1]
        elif "skip" not in self.open and (tag in HTML_SKIPPED or role in HTML_ROLES
                                          or navigation and tag not in ("html", "body")
                                          or (tag == "header" and "main" not in self.open)):
            self.open["skip"] = [tag, 1]
        elif tag == "pre" and tag not in self.open:
            self.open[tag] = [tag, 1]
        self.emit(HTML_STARTS.get(tag, ""))

    def handle_endtag(self, tag):
        self.emit(HTML_ENDS.get(tag, ""))
        for opener in self.open.values():
            opener[1] -= opener[0] == tag
        self.open = {region: opener for region, opener in self.open.items() if opener[1] > 0}

    def handle_data(self, data):
        self.emit(data if "pre" in self.open else re.sub(r"\s+", " ", data))

    def emit(self, text):
        if text and "skip" not in self.open:  # an empty piece: memory for nothing
            self.pieces.append(("main" in self.open, text))


# ----------------------------------------------------------------------------
# PDF (pypdf)

def read_pdf(name, data):
    import pypdf

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its notes on damaged files are noise
    reader = pypdf.PdfReader(io.BytesIO(data))  # an encrypted one: it tries the empty password
    if reader.is_encrypted and not reader.decrypt(""):  # and this says whether that opened it
        raise Unusable("is encrypted (it needs a password); save a copy without one")
    if len(reader.pages) > MAX_PDF_PAGES:
        raise Unusable(f"has {len(reader.pages):,} pages, over the limit of {MAX_PDF_PAGES:,}")
    pages = []
    deadline = time.monotonic() + MAX_PDF_SECONDS
    for page in reader.pages:
        text = page.extract_text(visitor_operand_before=widen_word_gaps) or ""
        pages.append(HYPHENATED.sub(r"\1", NO_TEXT_GLYPHS.sub("", text)).strip())
        if sum(map(len, pages)) > MAX_PDF_CHARS or time.monotonic() > deadline:
            raise Unusable(f"too big to read: over {MAX_PDF_CHARS:,} characters of text or "
                           f"{MAX_PDF_SECONDS} s of reading by page {len(pages)}")
    parts = [(number, text) for number, text in enumerate(without_running_lines(pages), start=1)
             if LINE_WITH_WORDS.search(text)]
    if not parts:
        raise Unusable("holds no text (scanned pages?); give it a text layer first (OCR)")
    title = ""
    with contextlib.suppress(Exception):  # damaged metadata costs the title, not the file
        title = str(reader.metadata.title or "").strip()  # no metadata: AttributeError
    # A title printed over two lines: the first ends in a word no title ends with.
    page_one = re.sub(r"\b(and|of|for|the|to|in|on|with)[ \t]*\n", r"\1 ", parts[0][1])
    # The metadata's title is text as it is: no markdown to strip ("the `graphics' bundle").
    return Document(document_title(page_one, name, {"title": "" if NO_TITLE.search(title)
                                                       else title}), parts, False)


def widen_word_gaps(operator, operands, *_):
    """Makes each word gap in a TJ array (["then", -234, "resets"]) a full em, then moves the
    pen back as much: pypdf writes a space there and still knows where the text ends."""
    items = operands[0] if operator == b"TJ" and operands else []
    for index in reversed(range(len(items) if isinstance(items, list) else 0)):
        if isinstance(items[index], (int, float)) and items[index] <= -WORD_GAP:
            items[index:index + 1] = [-1000, 1000 + items[index]]


def without_running_lines(pages):
    """The pages without their running headers and footers: the lines among the first two or
    last two of more than half of them (of 3 or more), page numbers aside ("Page 3 of 9")."""
    pages = [[(line, re.sub(r"\d+", "#", " ".join(line.split()))) for line in text.split("\n")]
             for text in pages]
    counts = collections.Counter(key for lines in pages for _, key in set(lines[:2] + lines[-2:]))
    running = {key for key, count in counts.items() if len(pages) >= 3 and count > len(pages) / 2}
    return ["\n".join(line for position, (line, key) in enumerate(lines)
                      if 2 <= position < len(lines) - 2 or key not in running) for lines in pages]


# ----------------------------------------------------------------------------
# Jupyter notebooks

def read_notebook(name, data):
    notebook = json.loads(decode_text(data))  # not JSON: read_document names the error
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise Unusable("holds no list of cells, so it is not a Jupyter notebook")
    language = ((notebook.get("metadata") or {}).get("kernelspec") or {}).get("language", "")
    # A cell's source is a list of lines or one string: "".join takes both. A cell nbsphinx
    # leaves out of the built docs is no text (in its own docs: "This notebook is part of...").
    cells = [(cell.get("cell_type"), "".join(cell.get("source", ""))) for cell in notebook["cells"]
             if (cell.get("metadata") or {}).get("nbsphinx") != "hidden"]
    # Markdown cells: tags go as in MDX, roles (Sphinx's or MyST's) as in rst.
    text = "\n\n".join(outside_code(outside_code(source, mdx_prose), rst_inline)
                       if kind == "markdown" else fenced(source, language)
                       for kind, source in cells if kind in ("markdown", "code"))
    return Document(first_heading_title(text, name), [(None, text)], True)


# The formats read, each with its reader.
SUFFIXES = {".txt": read_text, ".md": read_text, ".markdown": read_text, ".mdx": read_text,
            ".rst": read_rst, ".html": read_html, ".htm": read_html,
            ".pdf": read_pdf, ".ipynb": read_notebook}
