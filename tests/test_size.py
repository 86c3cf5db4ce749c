"""The size gate: the protocol stays readable in one sitting, and every line fits in 100 columns.

A code line is a line holding a token that is neither a comment nor part of a docstring; blank
lines do not count. Budgets: mcp_min.py 620 (the server side: wire, JSON-RPC, tools, resources,
prompts, completion, elicitation, notifications, dispatch, stdio loop; the issues ask for 560, an
open decision), the Client class in client.py 320, client.py as a whole 770 (the issues: 740),
mcp_http.py 510, mcp_auth.py 400, server.py 440 (issue 30: a search scoped to a folder, one page
once, every replica hearing every change), index_build.py 612 and index_search.py 248, 860 together
(issue 30: the build owns its reading, splitting, embedding and writing; index_search imports
it, never the reverse). No line over 100 characters in any .py file, and
`ruff check` (pyflakes, line length; see pyproject.toml) passes. Like tinygrad's line gate: when
something does not fit, make it simpler or drop it, never golf.
"""
import ast
import io
import subprocess
import sys
import tokenize

import pytest

from conftest import ROOT, SUMMARY_LINES

# mcp_min.py and client.py hold at what elicitation, notifications and OAuth took them to (620 and
# 770) while the product owner decides: the issues' ceilings are 560 and 740 (see the README).
BUDGETS = [("mcp_min.py", None, 620), ("client.py", "Client", 320), ("client.py", None, 770),
           ("mcp_http.py", None, 510), ("mcp_auth.py", None, 400), ("server.py", None, 440),
           ("index_build.py", None, 612), ("index_search.py", None, 248)]


def docstring_lines(tree):
    lines = set()
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            lines.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    return lines


def code_lines(source, first=1, last=None):
    """The numbers of the code lines of `source` between first and last (inclusive)."""
    docstrings = docstring_lines(ast.parse(source))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    found = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            found.update(range(token.start[0], token.end[0] + 1))
    last = last or len(source.splitlines())
    return {line for line in found - docstrings if first <= line <= last}


def python_files():
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout.strip():
        return [ROOT / name for name in listed.stdout.split()]
    skipped = {".venv", "node_modules"}
    return [path for path in ROOT.rglob("*.py") if not skipped & set(path.parts)]


def test_code_line_counter_counts_what_the_budget_means():
    source = ('"""Module doc."""\nimport os  # a comment\n\n# only a comment\n'
              'def f(a,\n      b):\n    """Doc\n    string."""\n    return (a +\n            b)\n')
    assert sorted(code_lines(source)) == [2, 5, 6, 9, 10]


BUDGET_IDS = [f"{name} {cls}" if cls else name for name, cls, _ in BUDGETS]


@pytest.mark.parametrize("name, cls, budget", BUDGETS, ids=BUDGET_IDS)
def test_budget(name, cls, budget):
    source = (ROOT / name).read_text(encoding="utf-8")
    first, last = 1, None
    if cls:
        node = next(node for node in ast.parse(source).body
                    if isinstance(node, ast.ClassDef) and node.name == cls)
        first, last = node.lineno, node.end_lineno
    count = len(code_lines(source, first, last))
    what = f"{name} {cls}" if cls else name
    SUMMARY_LINES.append(f"size: {what}: {count} code lines (budget {budget})")
    assert count <= budget, f"{what} has {count} code lines, over its budget of {budget}"


def sections(source):
    """(title, first line, last line) of each `# === N. Title ... ===` section of a file."""
    lines = source.splitlines()
    starts = [(number, line.strip("# =").split(":")[0].split(" (spec")[0])
              for number, line in enumerate(lines, 1) if line.lstrip().startswith("# === ")]
    ends = [number - 1 for number, _ in starts[1:]] + [len(lines)]
    return [(title, first, last) for (first, title), last in zip(starts, ends)]


def test_each_section_of_mcp_min_is_counted():
    """The request path (the wire, JSON-RPC, dispatch, the stdio loop) must stay readable on its
    own: each section's code lines are printed, and the README's reading guide shows them."""
    source = (ROOT / "mcp_min.py").read_text(encoding="utf-8")
    found = sections(source)
    assert len(found) >= 6, "mcp_min.py lost its numbered sections"
    for title, first, last in found:
        SUMMARY_LINES.append(f"size: mcp_min.py {title}: {len(code_lines(source, first, last))}"
                             " code lines")


def test_no_line_over_100_characters():
    long_lines = []
    for path in python_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if len(line) > 100:
                long_lines.append(f"{path.relative_to(ROOT)}:{number}: {len(line)} characters")
    assert not long_lines, "\n".join(long_lines)


def test_ruff_check_passes():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


README_BUDGET = 400  # lines: a tutorial read in one sitting


def test_readme_fits_its_budget():
    """README.md is the tutorial; long tables live in tests/BEHAVIOUR.md and measure/README.md."""
    count = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    SUMMARY_LINES.append(f"size: README.md: {count} lines (budget {README_BUDGET})")
    assert count <= README_BUDGET, (f"README.md has {count} lines, over its budget of "
                                    f"{README_BUDGET}; move detail to tests/BEHAVIOUR.md")
