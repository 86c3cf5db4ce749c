"""Does search find the right file? recall@1 and recall@3 over tests/retrieval_questions.json.

Every question names the file that answers it. A question counts as found at k when any
of the top k passages comes from that file. Runs in-process with the session's model
and index, through the same search_passages() the server uses.
"""

import json

import index_build
import server
from conftest import ROOT, SUMMARY_LINES

QUESTIONS = json.loads((ROOT / "tests" / "retrieval_questions.json").read_text(encoding="utf-8"))
MIN_RECALL_AT_1 = 0.80
MIN_RECALL_AT_3 = 0.95


def test_questions_name_indexed_files(built_index):
    manifest = index_build.read_manifest(built_index)
    assert len(QUESTIONS) >= 40
    assert {q["file"] for q in QUESTIONS} <= set(manifest["files"])


def test_recall_of_the_right_file(built_index, model):
    _, faiss_index, passages = index_build.load_index(built_index)
    query_vectors = index_build.embed(model, [q["question"] for q in QUESTIONS])
    found_at_1 = found_at_3 = 0
    misses = []
    for question, vector in zip(QUESTIONS, query_vectors):
        sources = [r["source"] for r in server.search_passages(vector[None, :], faiss_index, passages, top_k=3)]
        found_at_1 += sources[0] == question["file"]
        found_at_3 += question["file"] in sources
        if sources[0] != question["file"]:
            misses.append(f"    {question['question']!r}: want {question['file']}, got {', '.join(sources)}")
    recall_at_1, recall_at_3 = found_at_1 / len(QUESTIONS), found_at_3 / len(QUESTIONS)

    # Shown at the end of the run, even with `pytest -q` (conftest.pytest_terminal_summary).
    SUMMARY_LINES.append(f"{len(QUESTIONS)} questions: recall@1 = {recall_at_1:.3f} "
                         f"(min {MIN_RECALL_AT_1}), recall@3 = {recall_at_3:.3f} (min {MIN_RECALL_AT_3})")
    SUMMARY_LINES.extend(["top-1 misses:", *misses] if misses else [])

    assert recall_at_1 >= MIN_RECALL_AT_1
    assert recall_at_3 >= MIN_RECALL_AT_3
