"""index_build.py on markdown: passages under their headings, code fences kept whole,
badge and link-reference blocks left out, clean titles, and every passage within the
model's window, counted with the model's own tokenizer. Also checks the README question
set of eval.py (tests/eval/readmes/)."""

import json
import re

import pytest

import doc_readers
import index_build
from conftest import DOCS, ROOT

READMES = ROOT / "tests" / "eval" / "readmes"
BIKE_SHOP = ROOT / "tests" / "eval" / "bike_shop"
TOKENIZER = index_build.load_tokenizer()  # the model's own: milliseconds to load


def word_pieces(text):
    return len(TOKENIZER.encode(text, add_special_tokens=False).ids)


def passages_of(text, title="Doc", markdown=True):
    """[(heading, passage)] of a document."""
    passages, _ = index_build.split_into_passages(text, title, markdown, TOKENIZER)
    return [(heading, passage) for _, heading, passage, _ in passages]


def section(name, words=60):
    return f"{name}\n\n" + " ".join(f"word{i}" for i in range(words)) + "."


# --- headings ---

def test_a_heading_starts_a_passage_that_knows_its_heading_path():
    text = "\n\n".join([section("# Doc"), section("## Usage"), section("### Options"),
                        section("## License")])
    assert [(heading, passage.splitlines()[0]) for heading, passage in passages_of(text)] == [
        ("Doc", "# Doc"), ("Doc > Usage", "## Usage"), ("Doc > Usage > Options", "### Options"),
        ("Doc > License", "## License")]


def test_the_title_heads_the_path_once():
    assert passages_of(section("## Usage"), title="Express") == [
        ("Express > Usage", section("## Usage"))]
    assert passages_of(section("# Express") + "\n\n" + section("## Usage"), title="Express")[1][0] \
        == "Express > Usage"


def test_a_short_section_shares_a_passage_with_the_next():
    text = "# Doc\n\n## API\n\n" + section("### get(key)") + "\n\n" + section("### set(key)")
    passages = passages_of(text)
    assert len(passages) == 2
    assert passages[0][0] == "Doc > API > get(key)"
    assert passages[0][1].startswith("# Doc\n\n## API\n\n### get(key)\n\nword0 ")
    assert passages[1][0] == "Doc > API > set(key)" and passages[1][1].startswith("### set(key)")


def test_heading_markup_is_not_in_the_path_and_hashes_in_a_fence_are_no_heading():
    text = (section("# `fastlib` [![npm](https://img/npm.svg)](https://npm/fastlib)") +
            "\n\n```sh\n# not a heading\nnpm install fastlib\n```")
    assert {heading for heading, _ in passages_of(text, title="fastlib")} == {"fastlib"}


# --- code fences ---

def test_a_code_fence_is_one_block_blank_lines_and_all():
    fence = "```python\nimport os\n\n\ndef main():\n\n    return 1\n```"
    blocks = index_build.split_blocks(f"# Doc\n\nIntro.\n\n{fence}\n\nAfter.", markdown=True)
    assert blocks == ["# Doc", "Intro.", fence, "After."]


def test_a_fence_that_fits_is_not_cut_at_its_blank_lines():
    fence = "```js\n" + "\n\n".join(f"call({i})" for i in range(40)) + "\n```"
    text = section("# Doc", words=100) + "\n\n" + fence + "\n\nAfter."
    assert [passage for _, passage in passages_of(text)][1:] == [f"{fence}\n\nAfter."]


def test_a_fence_too_long_for_one_passage_is_cut_at_line_ends_under_its_heading():
    code = [f"def f{i}():\n    return compute({i})\n" for i in range(150)]  # blank lines too
    text = section("# Doc") + "\n\n## Usage\n\n```python\n" + "\n".join(code) + "\n```"
    passages, cut = index_build.split_into_passages(text, "Doc", True, TOKENIZER)
    fence_parts = [passage for _, heading, passage, _ in passages if heading == "Doc > Usage"]
    assert cut == 1 and len(fence_parts) >= 5
    assert "\n".join(fence_parts) == "## Usage\n\n```python\n" + "\n".join(code) + "\n```"
    heading = word_pieces("Doc > Usage")
    assert all(word_pieces(part) + heading + 2 <= 256 for part in fence_parts)


def test_an_unclosed_fence_runs_to_the_end():
    blocks = index_build.split_blocks("Intro.\n\n```js\nlet a = 1\n\n## not a heading", True)
    assert blocks == ["Intro.", "```js\nlet a = 1\n\n## not a heading"]


# --- blocks with nothing to find ---

def test_badge_image_and_link_reference_blocks_are_left_out():
    text = "\n\n".join([
        "# Doc",
        "[![npm](https://img.shields.io/npm/v/doc.svg)](https://npm.im/doc) "
        "[![build][build-image]][build-url]",
        '<p align="center">\n  <img src="logo.png" width="200">\n</p>',
        "<!-- BADGES -->",
        "![](./docs/og.png)",
        section("## Usage"),
        "[build-image]: https://ci/badge.svg\n[build-url]: https://ci/doc",
    ])
    assert index_build.split_blocks(text, True) == ["# Doc", *section("## Usage").split("\n\n")]


# --- titles ---

@pytest.mark.parametrize("text, title", [
    ("# Express [![npm](https://img/npm.svg)](https://npm/express)\n\nbody", "Express"),
    ('<p align="center">\n  <img src="logo.png" alt="logo">\n</p>\n\n# Hono\n', "Hono"),
    ('<div align="center"><img\n  src="x.svg" alt=""></div>\n\n<h1>BM25S</h1>\n', "BM25S"),
    ("<!-- LOGO -->\n![](./docs/public/og.png)\n\n**Fast**, _small_ [web](https://w) server\n",
     "Fast, small web server"),
    ("[![CI][ci-badge]][ci]\n\n[ci-badge]: https://ci/badge.svg\n\n## typing_extensions &amp; co",
     "typing_extensions & co"),
    ("The Wandering Kettle — FAQ\n\nDogs are welcome.", "The Wandering Kettle — FAQ"),
])
def test_a_title_is_the_first_line_with_words_without_its_markup(text, title):
    assert doc_readers.document_title(text, "file.md") == title


def test_a_document_with_no_words_at_the_top_is_titled_by_its_file_name():
    assert doc_readers.document_title('<p align="center"><img src="a.png"></p>\n\n',
                                      "my-notes.md") == "my-notes"
    assert doc_readers.document_title("", "empty.txt") == "empty"


def test_titles_of_the_readme_set_hold_no_markup():
    files, _, _ = index_build.read_documents(READMES / "docs")
    markup = re.compile(r"[<>#*`]|\]\(|\[!|!\[|^\s|\s$")
    assert [info["title"] for info in files.values() if markup.search(info["title"])] == []


# --- the model's window ---

def test_a_line_longer_than_the_window_is_cut_at_sentences_and_spaces():
    line = " ".join(f"word{i}" for i in range(1000))  # one line, no full stop
    passages = passages_of(f"# Doc\n\n{line}")
    assert all(word_pieces(text) + word_pieces(heading) + 2 <= 256 for heading, text in passages)
    assert " ".join(" ".join(text.split()) for _, text in passages) == f"# Doc {line}"


@pytest.mark.parametrize("docs", [DOCS, BIKE_SHOP / "docs"])
def test_txt_passages_are_their_paragraphs_the_title_line_joined_to_the_first(docs):
    """The rule a .txt file has always had: paragraphs, a short title line glued to the
    first one; its passages embed under the title, as before headings existed."""
    files, passages, _ = index_build.read_documents(docs)
    expected = []
    for path in sorted(docs.glob("*.txt")):
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", path.read_text()) if p.strip()]
        assert len(paragraphs[0]) < index_build.MIN_PASSAGE_CHARS
        assert all(len(p) >= index_build.MIN_PASSAGE_CHARS for p in paragraphs[1:])
        first = f"{paragraphs[0]}\n\n{paragraphs[1]}"
        expected += [(path.name, 1, first), *[(path.name, number, text) for number, text in
                                              enumerate(paragraphs[2:], start=3)]]
        assert files[path.name]["title"] == paragraphs[0]
    assert [(p["source"], p["paragraph"], p["text"]) for p in passages] == expected
    assert all(p["heading"] == files[p["source"]]["title"] for p in passages)
    texts = index_build.embedding_texts(passages, "heading")
    assert texts == [p["text"] if p["paragraph"] == 1 else f"{p['heading']}\n\n{p['text']}"
                     for p in passages]


def test_the_build_says_how_many_blocks_it_cut(tmp_path, capsys):
    code = "\n".join(f"print({i} * {i} + {i})" for i in range(300))
    (tmp_path / "long.md").write_text(f"# Long\n\n```python\n{code}\n```\n")
    (tmp_path / "short.md").write_text("# Short\n\nNothing long here.\n")
    index = tmp_path / "index"
    assert index_build.main(["--docs", str(tmp_path), "--index", str(index)]) == 0
    assert "; 1 block(s) cut to fit the model's window" in capsys.readouterr().out
    manifest = json.loads((index / "manifest.json").read_text())
    assert manifest["files"]["long.md"]["cut"] == 1 and manifest["files"]["short.md"]["cut"] == 0
    assert manifest["files"]["long.md"]["passages"] > 1


def test_no_passage_of_the_readme_set_exceeds_the_window_of_the_real_tokenizer(model):
    assert model.max_seq_length == index_build.MODEL_WINDOW_TOKENS
    files, passages, _ = index_build.read_documents(READMES / "docs")
    texts = index_build.embedding_texts(passages, "heading")
    lengths = [len(ids) for ids in model.tokenizer(texts, verbose=False)["input_ids"]]
    assert len(lengths) == len(passages) > 2000
    assert max(lengths) <= index_build.MODEL_WINDOW_TOKENS
    assert max(len(p["text"]) for p in passages) <= index_build.MAX_PASSAGE_CHARS
    assert sum(info["cut"] for info in files.values()) > 100


def test_the_tokenizer_counts_as_the_model_does(model):
    texts = ["Hello, world!", "```python\nimport os\n```", "한국어 텍스트", "x" * 300, ""]
    expected = [len(ids) for ids in model.tokenizer(texts, add_special_tokens=False,
                                                    verbose=False)["input_ids"]]
    assert [word_pieces(text) for text in texts] == expected


@pytest.mark.parametrize("headings", [
    ["# " + "한국어 " * 100],  # three word pieces a character once its accents are split off
    [f"{'#' * level} Part {level} of a deep and wordy guide to it all" for level in range(1, 7)]])
def test_a_heading_long_in_word_pieces_takes_a_quarter_of_the_window(headings):
    assert word_pieces(" > ".join(headings)) > 64
    passages = passages_of("\n\n".join([*headings, section("Text", words=300)]))
    assert len(passages) > 2
    assert all(word_pieces(heading) <= 64 for heading, _ in passages)
    assert all(word_pieces(text) + word_pieces(heading) + 2 <= 256 for heading, text in passages)


def test_the_heading_embedded_above_a_passage():
    passages = [{"heading": "Express > Usage", "text": "body"},
                {"heading": "Kettle", "text": "Kettle\n\nThe first paragraph."}]
    assert index_build.embedding_texts(passages, "heading") == [
        "Express > Usage\n\nbody", "Kettle\n\nThe first paragraph."]
    assert index_build.embedding_texts(passages, "plain") == [
        "body", "Kettle\n\nThe first paragraph."]


def test_markup_patterns_stay_linear_on_a_huge_line():
    nasty = "[![" * 30_000 + "<a" * 30_000 + "<!--" + "](" * 30_000
    assert doc_readers.document_title(nasty, "nasty.md") == "nasty"
    assert index_build.split_blocks(nasty, True) == [nasty]  # "<a" is no tag: "a" is a word


# --- the README question set of eval.py ---

def test_the_readme_set_is_complete_and_its_questions_borrow_no_phrases():
    from measure import eval as eval_script  # "eval" alone would be the builtin

    docs = READMES / "docs"
    questions = eval_script.load_questions(READMES / "questions.json", docs)
    assert len(questions) >= 40 and 60 <= len(list(docs.iterdir())) <= 150
    sources = (READMES / "SOURCES.md").read_text()
    assert all(f"| {path.name} |" in sources for path in docs.iterdir())
    for question, file, _ in questions:
        words = re.findall(r"[a-z0-9']+", question.lower())
        document = " " + " ".join(re.findall(r"[a-z0-9']+", (docs / file).read_text().lower()))
        copied = [" ".join(words[i:i + 5]) for i in range(len(words) - 4)
                  if f" {' '.join(words[i:i + 5])} " in document + " "]
        assert copied == [], (file, copied)
    assert json.loads((READMES / "questions.json").read_text())  # valid JSON, not empty
