"""python client.py --interactive: one server, questions from stdin one per line, every answer
after the first warm. Run as a user would, through subprocesses with real servers: over stdio
(end of input, an empty line, Ctrl-C, a terminal) and over Streamable HTTP. Last, bench.py's
part 2b, which times the cold start and --interactive's second question, at its smallest."""

import asyncio
import os
import re
import select
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, server_py_over_http


def client_command(*args):
    return [sys.executable, str(ROOT / "client.py"), "--interactive", *map(str, args)]


def run_interactive(stdin, *args, timeout=180):
    return subprocess.run(client_command(*args), input=stdin, capture_output=True, text=True,
                          encoding="utf-8", timeout=timeout, cwd=ROOT)


def answers(stdout):
    """The answers in the output, each without the '(answered in N ms)' line that ends it."""
    found, lines = [], []
    for line in stdout.splitlines():
        if line.startswith("(answered in "):
            found.append("\n".join(lines).strip("\n"))
            lines = []
        else:
            lines.append(line)
    return found


def first_result(answer):
    """The header of an answer's first result, "[1] source: NAME (distance: 0." or "[1] source:
    NAME (keyword score: ": a search before server.py's model has loaded ranks by keywords
    (its answer says so first)."""
    if answer.startswith("Keyword ranking (BM25), not by meaning: the embedding model is "):
        answer = answer.split("\n\n", 1)[1]
    return re.match(r"\[1\] source: \S+ \((distance: 0\.|keyword score: )", answer).group()


@pytest.fixture
def own_index(tmp_path, built_index):
    """The session index under a path of this test's own, so that the test can tell its
    server.py from every other one running (by the path in its command line)."""
    link = tmp_path / "own-index"
    os.symlink(built_index, link)
    return link


def servers_running(index):
    """Processes whose command line names this index: the server.py client.py started."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        if "server.py" in command and str(index) in command:
            found.append(int(pid))
    return found


def test_questions_until_end_of_input(own_index):
    result = run_interactive("can I bring a dog\nis there a password for the wifi\n",
                             "--top-k", "2", "--index", own_index)
    assert result.returncode == 0, result.stderr
    first, second = answers(result.stdout)
    assert first_result(first).startswith("[1] source: faq.txt (")
    assert "\n\n[2] source: " in first
    assert first_result(second).startswith("[1] source: wifi_power.txt (")
    assert "[3] source: " not in result.stdout
    assert "question>" not in result.stdout + result.stderr  # stdin is not a terminal: no prompt
    assert "client.py: connected to rag-search-server" in result.stderr
    assert "Traceback" not in result.stderr
    assert servers_running(own_index) == []


def test_an_empty_line_ends_the_session(own_index):
    result = run_interactive("can I bring a dog\n\nis there a password for the wifi\n",
                             "--top-k", "1", "--index", own_index)
    assert result.returncode == 0, result.stderr
    assert len(answers(result.stdout)) == 1
    assert "wifi_power.txt" not in result.stdout  # the question after the empty line was not asked
    assert servers_running(own_index) == []


def test_ctrl_c_stops_the_server_cleanly(own_index):
    client = subprocess.Popen(client_command("--top-k", "1", "--index", own_index),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        client.stdin.write("can I bring a dog\n")
        client.stdin.flush()
        while not client.stdout.readline().startswith("(answered in "):
            assert client.poll() is None, client.stderr.read()
        assert len(servers_running(own_index)) == 1
        client.send_signal(signal.SIGINT)  # to the client alone: it must stop the server itself
        out, err = client.communicate(timeout=60)
    finally:
        client.kill()
    assert client.returncode == 130
    assert "Traceback" not in err and "error" not in err, err
    assert servers_running(own_index) == []


def test_prompt_at_a_terminal_and_ctrl_d_ends(own_index):
    import pty
    pid, terminal = pty.fork()
    if pid == 0:  # the child: client.py with the pseudo-terminal as stdin, stdout and stderr
        try:
            os.chdir(ROOT)
            os.execv(sys.executable, client_command("--index", own_index))
        finally:  # never go on running pytest in the child
            os._exit(127)
    seen, status = b"", None
    deadline = time.monotonic() + 120
    try:
        while b"question> " not in seen:
            assert time.monotonic() < deadline, seen
            if select.select([terminal], [], [], 1.0)[0]:
                seen += os.read(terminal, 4096)
        os.write(terminal, b"\x04")  # Ctrl-D at the prompt: the end of input
        while not (ended := os.waitpid(pid, os.WNOHANG))[0]:
            assert time.monotonic() < deadline, "client.py did not end after Ctrl-D"
            time.sleep(0.1)
        status = ended[1]
    finally:
        os.close(terminal)
        if status is None:  # the test failed while the client ran: do not leave it behind
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    assert seen.count(b"question> ") == 1
    assert servers_running(own_index) == []


def test_over_streamable_http(built_index):
    with server_py_over_http(built_index) as url:
        result = run_interactive("can I bring a dog\nis there a password for the wifi\n",
                                 "--url", url, "--top-k", "1")
    assert result.returncode == 0, result.stderr
    first, second = answers(result.stdout)
    assert first_result(first).startswith("[1] source: faq.txt (")
    assert first_result(second).startswith("[1] source: wifi_power.txt (")
    assert "server.py runs on" not in result.stderr  # not ours to start


def test_a_question_is_not_also_an_argument():
    result = run_interactive("", "some question")
    assert result.returncode == 2
    assert "--interactive reads its questions from stdin" in result.stderr


def test_bench_cold_start_pieces_run(built_index):
    # bench.py's part 2b at its smallest: the steps in a fresh process, and client.py
    # --interactive timed as a user runs it. A smoke test: no timing is asserted.
    from measure import bench
    qs = bench.questions(2)
    steps = bench.cold_steps_once(str(built_index), qs)
    assert set(steps) == set(bench.COLD_STEPS + bench.WARM_STEPS)
    assert all(seconds >= 0 for seconds in steps.values())
    first, second = asyncio.run(bench.interactive_once(str(built_index), qs))
    assert first > 0 and second > 0
    by_keywords, by_meaning = asyncio.run(bench.first_answer_once(str(built_index), qs))
    assert 0 < by_keywords <= by_meaning
    cold = {"first_answer_ms": 1000 * by_keywords, "first_meaning_ms": 1000 * by_meaning,
            "steps_ms": {k: 1000 * v for k, v in steps.items()},
            "interactive_first_ms": 1000 * first, "interactive_second_ms": 1000 * second,
            "notes": []}
    text = bench.report({"machine": bench.machine_info(), "seconds": 1.0, "cold": cold,
                         "targets": []})
    assert "2b. cold start" in text and "  model load" in text and "second question" in text
    assert "first answer by meaning (server.py)" in text
    assert "first search answer, by keywords" in text
