"""The size gate: the protocol stays readable in one sitting, and every line fits in 100 columns.

A code line is a line holding a token that is neither a comment nor part of a docstring; blank
lines do not count. Budgets (issue 29): mcp_min.py 760, and its core (Part A, everything above the
line "# === The core ends here": a complete tools server) 400; the Client class in client.py 360,
client.py as a whole 840 (issue 34, tasks and skills on the client: 420 and 953); mcp_http.py
525; mcp_auth.py 415. Issue 30: server.py 440, and index_build.py and index_search.py 860
together (the build owns reading, splitting, embedding and writing an index; index_search
imports it, never the reverse). Issue 33: server.py 460; doc_readers.py, the readers of each
format (documents in, text out), 300; reading moved there from index_build.py, whose budget
became 600 of the 860, index_search.py's 260. No packed
assignments of unrelated values (`a, b = x, y`) in the protocol files: one value per statement.
No line over 100 characters in any .py file, and `ruff check` (pyflakes, line length; see
pyproject.toml) passes. Like tinygrad's line gate: when something does not fit, make it simpler
or drop it, never golf.
"""
import ast
import io
import subprocess
import sys
import tokenize

import pytest

from conftest import ROOT, SUMMARY_LINES

BUDGETS = [
    ("mcp_min.py", None, 760),
    ("client.py", "Client", 420),
    ("client.py", None, 953),
    ("mcp_http.py", None, 525),
    ("mcp_auth.py", None, 415),
    ("mcp_skills.py", None, 115),
    ("server.py", None, 460),
    ("index_build.py", None, 600),
    ("index_search.py", None, 260),
    ("doc_readers.py", None, 300),
    ("mcp_tasks.py", None, 185),  # issue 34: the extensions' server side, 300 with mcp_skills.py
]
CORE_BUDGET = 400  # mcp_min.py's Part A
CORE_END = "# === The core ends here"
PROTOCOL_FILES = ["mcp_min.py", "mcp_http.py", "mcp_auth.py", "client.py", "mcp_tasks.py"]


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


README_BUDGET = 440  # lines: a tutorial read in one sitting (issue 34: 440, with the extensions)


def test_readme_fits_its_budget():
    """README.md is the tutorial; long tables live in tests/BEHAVIOUR.md and measure/README.md."""
    count = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    SUMMARY_LINES.append(f"size: README.md: {count} lines (budget {README_BUDGET})")
    assert count <= README_BUDGET, (f"README.md has {count} lines, over its budget of "
                                    f"{README_BUDGET}; move detail to tests/BEHAVIOUR.md")


def core_end(source):
    """The number of the line that ends mcp_min.py's core: the line that starts CORE_END."""
    lines = source.splitlines()
    found = [number for number, line in enumerate(lines, 1) if line.startswith(CORE_END)]
    assert len(found) == 1, f"mcp_min.py needs exactly one line starting {CORE_END!r}"
    return found[0]


def test_the_core_of_mcp_min_fits_its_budget():
    """Part A, a complete tools server in both eras over stdio, reads in one sitting."""
    source = (ROOT / "mcp_min.py").read_text(encoding="utf-8")
    count = len(code_lines(source, 1, core_end(source) - 1))
    SUMMARY_LINES.append(f"size: mcp_min.py Part A (the core): {count} code lines "
                         f"(budget {CORE_BUDGET})")
    assert count <= CORE_BUDGET, f"mcp_min.py's core has {count} code lines, over {CORE_BUDGET}"


def packed_assignments(source):
    """`a, b = x, y`: a tuple of names given a tuple of values in one statement. A swap (the same
    names on both sides, reordered) is not packing."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple) \
                and any(isinstance(target, ast.Tuple) for target in node.targets):
            names = sorted(ast.unparse(element) for element in node.targets[0].elts)
            if names != sorted(ast.unparse(element) for element in node.value.elts):
                found.append(node.lineno)
    return found


def test_packed_assignment_counter_knows_packing_from_a_swap():
    source = "a, b = 1, 2\nb, a = a, b\nx, y = divmod(7, 2)\nc = 1, 2\n"
    assert packed_assignments(source) == [1]


@pytest.mark.parametrize("name", PROTOCOL_FILES)
def test_no_packed_assignments(name):
    """One value per statement: `a, b = x, y` of unrelated values is golf (issue 29)."""
    lines = packed_assignments((ROOT / name).read_text(encoding="utf-8"))
    SUMMARY_LINES.append(f"size: {name}: {len(lines)} packed assignments")
    assert not lines, f"{name}: packed assignments on lines {lines}: write one per line"
