"""index_build.py on markdown: passages under their headings, code fences kept whole,
badge and link-reference blocks left out, clean titles, and every passage within the
model's window. Also checks the README question set of eval.py (tests/eval/readmes/)."""

import json
import re

import pytest

import index_build
from conftest import DOCS, ROOT

READMES = ROOT / "tests" / "eval" / "readmes"


def count_words(texts):
    """A stand-in token counter: one "word piece" per white-space separated word."""
    return [len(text.split()) for text in texts]


def passages_of(text, title="Doc", count_tokens=count_words):
    passages, _ = index_build.fit_to_window(index_build.split_markdown(text), title, count_tokens)
    return passages


def section(name, words=60):
    return f"{name}\n\n" + " ".join(f"word{i}" for i in range(words)) + "."


# --- headings ---

def test_a_heading_starts_a_passage_that_knows_its_heading_path():
    text = "\n\n".join([section("# Doc"), section("## Usage"), section("### Options"),
                        section("## License")])
    passages = passages_of(text)
    assert [(heading, passage.splitlines()[0]) for _, heading, passage in passages] == [
        ("Doc", "# Doc"), ("Doc > Usage", "## Usage"), ("Doc > Usage > Options", "### Options"),
        ("Doc > License", "## License")]


def test_a_short_section_shares_a_passage_with_the_next():
    text = "# Doc\n\n## API\n\n" + section("### get(key)") + "\n\n" + section("### set(key)")
    passages = passages_of(text)
    assert len(passages) == 2
    assert passages[0][1] == "Doc > API > get(key)"
    assert passages[0][2].startswith("# Doc\n\n## API\n\n### get(key)\n\nword0 ")
    assert passages[1][1] == "Doc > API > set(key)" and passages[1][2].startswith("### set(key)")


def test_heading_markup_is_not_in_the_path_and_hashes_in_a_fence_are_no_heading():
    text = (section("# `fastlib` [![npm](https://img/npm.svg)](https://npm/fastlib)") +
            "\n\n```sh\n# not a heading\nnpm install fastlib\n```")
    passages = passages_of(text)
    assert {heading for _, heading, _ in passages} == {"fastlib"}


# --- code fences ---

def test_a_code_fence_is_one_block_blank_lines_and_all():
    fence = "```python\nimport os\n\n\ndef main():\n\n    return 1\n```"
    blocks = index_build.split_markdown(f"# Doc\n\nIntro.\n\n{fence}\n\nAfter.")
    assert [block for _, _, block, _ in blocks] == ["# Doc", "Intro.", fence, "After."]


def test_a_fence_too_long_for_one_passage_is_cut_at_line_ends_under_its_heading():
    code = [f"value_{i} = compute({i})" for i in range(400)]  # 3 words a line: 1,200 in all
    text = section("# Doc") + "\n\n## Usage\n\n```python\n" + "\n".join(code) + "\n```"
    passages, cut = index_build.fit_to_window(index_build.split_markdown(text), "Doc",
                                              count_words)
    fence_parts = [passage for _, heading, passage in passages if heading == "Doc > Usage"]
    assert cut == 1 and len(fence_parts) >= 5
    assert "\n".join(fence_parts) == "## Usage\n\n```python\n" + "\n".join(code) + "\n```"
    context = count_words(["Doc > Usage"])[0]
    assert all(count_words([part])[0] + context + 2 <= 256 for part in fence_parts)


def test_an_unclosed_fence_runs_to_the_end():
    blocks = index_build.split_markdown("Intro.\n\n```js\nlet a = 1\n\n## not a heading")
    assert [block for _, _, block, _ in blocks] == ["Intro.",
                                                    "```js\nlet a = 1\n\n## not a heading"]


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
    kept = [block for _, _, block, _ in index_build.split_markdown(text)]
    assert kept == ["# Doc", "## Usage", section("## Usage").split("\n\n")[1]]


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
    assert index_build.document_title(text, "file.md") == title


def test_a_document_with_no_words_at_the_top_is_titled_by_its_file_name():
    assert index_build.document_title('<p align="center"><img src="a.png"></p>\n\n',
                                      "my-notes.md") == "my-notes"
    assert index_build.document_title("", "empty.txt") == "empty"


def test_titles_of_the_readme_set_hold_no_markup():
    files, _ = index_build.read_documents(READMES / "docs")
    markup = re.compile(r"[<>#*`]|\]\(|\[!|!\[|^\s|\s$")
    assert [info["title"] for info in files.values() if markup.search(info["title"])] == []


# --- the model's window ---

def test_a_line_longer_than_the_window_is_cut_at_sentences_and_spaces():
    line = " ".join(f"word{i}" for i in range(1000))  # one line, no full stop
    passages = passages_of(f"# Doc\n\n{line}")
    assert all(count_words([text])[0] + count_words(["Doc"])[0] + 2 <= 256
               for _, _, text in passages)
    assert " ".join(" ".join(text.split()) for _, _, text in passages) == f"# Doc {line}"


def test_txt_passages_are_the_paragraphs_they_were():
    _, passages = index_build.read_documents(DOCS)
    expected = []
    for path in sorted(DOCS.glob("*.txt")):
        expected += [(path.name, number, text)
                     for number, text in index_build.split_into_passages(path.read_text())]
    assert [(p["source"], p["paragraph"], p["text"]) for p in passages] == expected
    assert {p["heading"] for p in passages} == {""}


def test_the_build_says_how_many_blocks_it_cut(tmp_path, capsys):
    code = "\n".join(f"print({i} * {i} + {i})" for i in range(300))
    (tmp_path / "long.md").write_text(f"# Long\n\n```python\n{code}\n```\n")
    (tmp_path / "short.md").write_text("# Short\n\nNothing long here.\n")
    files, passages = index_build.read_documents(tmp_path)
    assert files["long.md"]["passages"] > 1
    assert "cut 1 text block(s) longer than the model's window" in capsys.readouterr().err


def test_no_passage_of_the_readme_set_exceeds_the_window_of_the_real_tokenizer(model):
    assert model.max_seq_length == index_build.MODEL_WINDOW_TOKENS
    files, passages = index_build.read_documents(READMES / "docs")
    texts = index_build.embedding_texts(files, passages, "title")
    lengths = [len(ids) for ids in model.tokenizer(texts, verbose=False)["input_ids"]]
    assert len(lengths) == len(passages) > 2000
    assert max(lengths) <= index_build.MODEL_WINDOW_TOKENS
    assert max(len(p["text"]) for p in passages) <= index_build.MAX_STORED_PASSAGE_CHARS


def test_the_token_counter_counts_as_the_model_does(model):
    texts = ["Hello, world!", "```python\nimport os\n```", "한국어 텍스트", "x" * 300, ""]
    expected = [len(ids) for ids in model.tokenizer(texts, add_special_tokens=False,
                                                    verbose=False)["input_ids"]]
    assert index_build.token_counter()(texts) == expected


def test_the_context_embedded_above_a_passage():
    assert index_build.embedding_text("Express", "body", "title", "Express > Usage") == \
        "Express > Usage\n\nbody"
    assert index_build.embedding_text("Kettle", "body", "title", "Menu > Cakes") == \
        "Kettle > Menu > Cakes\n\nbody"
    assert index_build.embedding_text("Kettle", "body", "title") == "Kettle\n\nbody"
    assert index_build.embedding_text("Kettle", "body", "plain", "Menu") == "body"
    long = index_build.passage_context("T" * 300, "H")
    assert len(long) == index_build.CONTEXT_MAX_CHARS


def test_markup_patterns_stay_linear_on_a_huge_line():
    nasty = "[![" * 30_000 + "<a" * 30_000 + "<!--" + "](" * 30_000
    assert index_build.document_title(nasty, "nasty.md") == "nasty"
    assert [block for _, _, block, _ in index_build.split_markdown(nasty)] == [nasty]


# --- the README question set of eval.py ---

def test_the_readme_set_is_complete_and_its_questions_borrow_no_phrases():
    import eval

    docs = READMES / "docs"
    questions = eval.load_questions(READMES / "questions.json", docs)
    assert len(questions) >= 40 and 60 <= len(list(docs.iterdir())) <= 150
    sources = (READMES / "SOURCES.md").read_text()
    assert all(f"| {path.name} |" in sources for path in docs.iterdir())
    for question, file in questions:
        words = re.findall(r"[a-z0-9']+", question.lower())
        document = " " + " ".join(re.findall(r"[a-z0-9']+", (docs / file).read_text().lower()))
        copied = [" ".join(words[i:i + 5]) for i in range(len(words) - 4)
                  if f" {' '.join(words[i:i + 5])} " in document + " "]
        assert copied == [], (file, copied)
    assert json.loads((READMES / "questions.json").read_text())  # valid JSON, not empty
