"""measure/bench.py's pieces run and produce the numbers the report needs, at tiny sizes.

A smoke test only: it never checks how fast anything is (that is bench.py's job, and a
shared 2-core machine makes timings too noisy to assert on).
"""

import asyncio
import sys

from measure import bench

TINY = dict(spawns=1, warmup=5, calls=20, rounds=1, scale_sizes=[2_000], scale_queries=10)


def test_protocol_and_scale_parts_run_and_report():
    protocol = asyncio.run(bench.bench_protocol(TINY, names=("floor", "mcp_min")))
    for name in ("floor", "mcp_min"):
        numbers = protocol["servers"][name]
        for key in ("spawn_init_ms", "seq_calls_s", "p50_us", "p99_us", "pipelined_calls_s",
                    "idle_rss", "peak_rss"):
            assert numbers[key] > 0, (name, key)
        assert numbers["cpu_us_per_call"] >= 0  # counted in 10 ms ticks: 40 calls may not reach one

    scale = bench.bench_scale(TINY)
    flat = [r for r in scale["rows"] if r["index"] == "flat"]
    hnsw = [r for r in scale["rows"] if r["index"] == "hnsw"]
    assert [r["recall_at_5"] for r in flat] == [1.0]  # exact search is its own ground truth
    assert len(hnsw) == 2 and all(0 <= r["recall_at_5"] <= 1 for r in hnsw)
    assert "switch from IndexFlatIP to HNSW above" in scale["recommendation"]

    results = {"machine": bench.machine_info(), "seconds": 1.0, "protocol": protocol,
               "scale": scale}
    results["targets"] = bench.targets(results)
    assert any("mcp_min / floor" in t[0] for t in results["targets"])
    text = bench.report(results)
    assert "1. protocol" in text and "3. scale" in text and "targets" in text


def test_search_latencies_against_server_py(built_index):
    argv = [sys.executable, "server.py", "--index", str(built_index)]
    servers = {"one": (argv, bench.child_env())}
    latencies = asyncio.run(bench.search_latencies(servers, bench.questions(2), rounds=1))
    assert len(latencies["one"]) == 2


def test_first_answer_by_keywords_against_the_model_load(built_index):
    """Part 2's figure for issue 33 at its smallest: one spawn's first search answer (by keywords),
    its first answer by meaning and its model's load time; the rows and the target they make."""
    argv = [sys.executable, "server.py", "--index", str(built_index), "--no-watch"]
    env = bench.child_env(RAG_RATE_LIMIT="0")
    firsts = [asyncio.run(bench.first_answers(argv, env, "can I bring a dog"))]
    first, by_meaning, model_load = firsts[0]
    assert 0 < first <= by_meaning and model_load > 0
    search = {"spawn_init_ms": 100.0, **bench.first_answer_figures(firsts), "notes": [],
              "warm": {"p50_ms": 10.0, "p99_ms": 20.0, "queries": 1}}
    assert search["first_to_load"] == first / model_load
    results = {"machine": bench.machine_info(), "seconds": 1.0, "search": search}
    results["targets"] = bench.targets(results)
    assert [t[:3] for t in results["targets"] if "model load" in t[0]] == [
        ("spawn -> first search answer / model load", f"{first / model_load:.2f}x", "<= 0.5x")]
    text = bench.report(results)
    assert "spawn -> first search answer (by keywords)" in text
    assert "first answer / model load (median of each spawn's)" in text


def test_echo_servers_answer_the_same_call():
    async def call(name):
        pipe = await bench.Pipe.spawn(bench.server_argv(name))
        await pipe.handshake()
        tools = await pipe.request("tools/list")
        answer = await pipe.request("tools/call", bench.echo_call(7))
        await pipe.close()
        return [t["name"] for t in tools["tools"]], answer["content"]

    names = [name for name in bench.SERVERS if name != "sdk" or bench.sdk_available()]
    for name in names:
        assert asyncio.run(call(name)) == (["echo"], [{"type": "text", "text": "hello 7"}]), name


def test_build_part_runs_and_reports():
    """Part 5 over docs/ and two READMEs: the numbers its table needs, and the table."""
    build = bench.bench_build({"build_readmes": 2, "build_runs": 1})
    assert build["files"] == 11 and build["runs"] == 1
    assert build["passages"] > 69 and build["word_pieces"] > 50 * build["passages"]
    assert 0 < build["embed_share"] < 1 and 0 < build["split_seconds"] < build["seconds"]
    results = {"machine": bench.machine_info(), "seconds": 1.0, "build": build}
    results["targets"] = bench.targets(results)
    text = bench.report(results)
    assert "5. build" in text and "word pieces/s" in text and "of the build" in text


def test_tree_part_runs_and_reports(model):
    """Part 6 on a tiny generated tree: every figure its table needs, and the table."""
    tree = bench.bench_tree({"tree_files": 60, "tree_embed_files": 5, "tree_calls": 3}, model)
    assert tree["files"] == 60 and tree["passages"] > 60
    server = tree["server"]
    assert server["resources_pages"] >= 1 and server["list_top_chars"] > 0
    assert server["search_p99_ms"] >= server["search_p50_ms"] > 0
    assert tree["one_file_rebuild_s"] > 0 and tree["full_build_s"] > 0
    assert tree["tree_rebuild_s"] > 0 and tree["tree_rebuild_peak_rss"] > 0
    results = {"machine": bench.machine_info(), "seconds": 1.0, "tree": tree, "targets": []}
    text = bench.report(results)
    assert "6. tree" in text and "rebuild after one file changed" in text
    assert "the 60 files, one changed" in text and "full build, estimated" in text
