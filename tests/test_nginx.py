"""Scale-out for real: two `server.py --http` processes behind a real nginx, started here.

Modern (2026-07-28) requests carry everything they need, so nginx spreads them round-robin over
both processes; an input_required round trip may have its first round answered by one process and
its retry by the other, since both seal requestState with one MCP_STATE_KEY. A legacy session
lives in the memory of the process that answered its initialize: MCP_INSTANCE names the process in
its session ids, and nginx maps Mcp-Session-Id's prefix to that process (open-source nginx has no
sticky sessions). A session id that names no process, or the wrong one, gets 404 and the client
starts a new session, as the spec says.

nginx comes from Debian's package (.ci/run installs it when missing); without it these tests skip
and say so. Its files (config, pid, logs, temp folders) live in a temporary folder and the config
names them relative to it (`nginx -p`), so a checkout whose path has a space works. Run as root,
its workers run as the same user, so they can use that folder (pytest's is mode 700). Which
process answered comes from nginx itself: its access log and an X-Upstream header name the
backend of each request.
"""
import asyncio, contextlib, grp, http.client, json, os, pwd, re, secrets, shutil, signal, socket
import subprocess, sys, time
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from client import HTTPClient  # noqa: E402
from conftest import server_command, text_of  # noqa: E402

MODERN = "2026-07-28"
INSTANCES = ("a", "b")  # MCP_INSTANCE of each backend
STARTUP_TIMEOUT = 120  # seconds: two servers and nginx start on a busy machine


def nginx_binary():
    """Debian puts nginx in /usr/sbin, which a non-root user's PATH may lack."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if not found:
        pytest.skip("nginx is not installed (.ci/run installs Debian's nginx with apt-get, and "
                    "could not here): the scale-out test needs a real one")
    return found


def nginx_config(listen_port, ports):
    """The README's config (upstreams, the map, the server block), plus what a test needs: its
    own files, one worker (round-robin order is then per process, predictable), and the backend
    of each request in the access log and an X-Upstream header."""
    one_each = "\n".join(f"    upstream mcp_{name} {{ server 127.0.0.1:{port}; }}"
                         for name, port in zip(INSTANCES, ports))
    by_prefix = "\n".join(f"        ~^{name}\\. mcp_{name};" for name in INSTANCES)
    user = ""
    if os.geteuid() == 0:  # else workers run as nobody, who cannot enter our mode-700 folder
        user = (f"user {pwd.getpwuid(os.getuid()).pw_name} "
                f"{grp.getgrgid(os.getgid()).gr_name};")
    return f"""\
daemon off;
worker_processes 1;
pid nginx.pid;
error_log error.log;
{user}
events {{ worker_connections 256; }}
http {{
    client_body_temp_path temp/body;
    proxy_temp_path temp/proxy;
    fastcgi_temp_path temp/fastcgi;
    uwsgi_temp_path temp/uwsgi;
    scgi_temp_path temp/scgi;
    log_format backends '$upstream_addr $status $request_method "$http_mcp_method" '
                        '"$http_mcp_session_id"';
    access_log access.log backends;

    upstream mcp_any {{ {" ".join(f"server 127.0.0.1:{port};" for port in ports)} }}
{one_each}
    map $http_mcp_session_id $mcp_upstream {{
        default mcp_any;
{by_prefix}
    }}
    server {{
        listen 127.0.0.1:{listen_port};
        location = /mcp {{
            proxy_pass http://$mcp_upstream;
            proxy_http_version 1.1;
            proxy_set_header Host $host;
            proxy_read_timeout 1h;
            client_max_body_size 4m;
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, what, process, log):
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            pytest.fail(f"{what} did not start (exit {process.poll()}):\n{tail}")
        time.sleep(0.05)


def listening(port):
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
        return True
    return False


@pytest.fixture(scope="module")
def farm(built_index, tmp_path_factory):
    """Two server.py --http (MCP_INSTANCE a and b, one MCP_STATE_KEY) behind nginx: yields the
    URL, each backend's port and the nginx access log."""
    nginx = nginx_binary()
    folder = tmp_path_factory.mktemp("nginx farm")  # a space in the path, on purpose
    env = {**os.environ, "MCP_STATE_KEY": secrets.token_hex(32), "RAG_RATE_LIMIT": "0"}
    servers, ports = [], []
    with contextlib.ExitStack() as stack:
        for name in INSTANCES:
            log = folder / f"server-{name}.log"
            process = subprocess.Popen(server_command(built_index, "--http", "0"),
                                       env={**env, "MCP_INSTANCE": name},
                                       stderr=stack.enter_context(log.open("w")))
            stack.callback(stop, process)
            servers.append((process, log))
        for process, log in servers:
            wait_for(lambda: "MCP over HTTP on" in log.read_text(), "server.py --http", process,
                     log)
            ports.append(int(re.search(r"127\.0\.0\.1:(\d+)/mcp", log.read_text())[1]))
        listen_port = free_port()
        (folder / "temp").mkdir()
        (folder / "nginx.conf").write_text(nginx_config(listen_port, ports))
        error_log = folder / "error.log"
        process = subprocess.Popen([nginx, "-p", f"{folder}/", "-c", str(folder / "nginx.conf"),
                                    "-e", str(error_log)], stderr=subprocess.STDOUT,
                                   stdout=stack.enter_context(error_log.open("a")))
        stack.callback(stop, process)
        wait_for(lambda: listening(listen_port), "nginx", process, error_log)
        yield SimpleNamespace(url=f"http://127.0.0.1:{listen_port}/mcp", port=listen_port,
                              ports=dict(zip(INSTANCES, ports)), access_log=folder / "access.log",
                              logs=[log for _, log in servers])


def stop(process):
    process.send_signal(signal.SIGTERM)  # nginx: fast shutdown; server.py: graceful
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def access_lines(farm, since, done):
    """(backend port, status, HTTP method, Mcp-Method, Mcp-Session-Id) of each request nginx
    logged from line `since` on; "-" where a header was absent. nginx writes a line once the
    request is done, which may be just after its client had the answer: this waits (60 s at
    most) until done(rows) holds. Clients may send more than the test counts (a GET stream)."""
    deadline = time.monotonic() + 60
    while True:
        rows = []
        for line in farm.access_log.read_text().splitlines()[since:]:
            upstream, status, method, mcp_method, session = line.split(" ", 4)
            rows.append((int(upstream.rpartition(":")[2]), int(status), method,
                         mcp_method.strip('"'), session.strip('"')))
        if done(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def calls_logged(count):
    """done() for access_lines: `count` modern tools/call requests (they name their method)."""
    return lambda rows: sum(row[3] == "tools/call" for row in rows) >= count


def posts_logged(count, session_id):
    """done() for access_lines: `count` POSTs in that legacy session."""
    return lambda rows: sum(row[2::2] == ("POST", session_id) for row in rows) >= count


def logged(farm):
    return len(farm.access_log.read_text().splitlines()) if farm.access_log.exists() else 0


def post(port, message, headers=None):
    """POST one JSON-RPC message to /mcp on `port`: (status, headers, body as JSON or text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    with contextlib.closing(conn):
        conn.request("POST", "/mcp", json.dumps(message).encode(), {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            **(headers or {})})
        response = conn.getresponse()
        body = response.read().decode()
        answer = json.loads(body) if response.getheader("Content-Type") == "application/json" \
            else body
        return response.status, {k.lower(): v for k, v in response.getheaders()}, answer


def modern_call(request_id, tool, arguments, capabilities=None, **extra):
    """A 2026-07-28 tools/call and the headers that mirror it."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments, "_meta": meta, **extra}}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool}
    return message, headers


# --- Modern requests: any process answers any of them ---

def test_modern_requests_are_spread_round_robin_over_both_processes(farm):
    since = logged(farm)

    async def calls():
        async with HTTPClient(farm.url, timeout=60) as client:
            assert client.era == "modern"
            names = [tool["name"] for tool in await client.list_tools()]
            texts = [text_of(await client.call_tool("get_document", {"name": "faq.txt"}))
                     for _ in range(4)]
            return names, texts
    names, texts = asyncio.run(calls())
    assert "get_document" in names
    assert len(set(texts)) == 1 and "Wandering Kettle" in texts[0]
    rows = access_lines(farm, since, calls_logged(4))
    calls = [row for row in rows if row[3] == "tools/call"]
    assert len(calls) == 4 and all(status == 200 for _, status, *_ in rows)
    # One nginx worker, round-robin: the four calls alternate between the two processes.
    backends = [port for port, *_ in calls]
    assert set(backends) == set(farm.ports.values())
    assert all(first != second for first, second in zip(backends, backends[1:]))


# --- Legacy sessions: each stays on the process that holds it ---

def test_each_legacy_session_stays_on_the_process_that_opened_it(farm):
    since = logged(farm)

    async def session():
        async with HTTPClient(farm.url, timeout=60, legacy=True) as client:
            opened = client.session_id
            texts = [text_of(await client.call_tool("get_document", {"name": "faq.txt"}))
                     for _ in range(3)]
            await client.list_tools()
            assert client.session_id == opened  # never a 404 and a new initialize
            return opened, texts
    sessions = [asyncio.run(session()) for _ in range(2)]
    # initialize goes round-robin, so the two sessions open on the two processes.
    assert sorted(session_id.partition(".")[0] for session_id, _ in sessions) == ["a", "b"]
    for session_id, texts in sessions:
        rows = access_lines(farm, since, posts_logged(5, session_id))
        assert "Wandering Kettle" in texts[0]
        home = farm.ports[session_id.partition(".")[0]]
        # initialized, three calls, tools/list: all on the session's own process
        posts = [row for row in rows if row[2::2] == ("POST", session_id)]
        assert len(posts) == 5
        assert {(port, status) for port, status, *_ in posts} <= {(home, 200), (home, 202)}
        assert {row[0] for row in rows if row[4] == session_id} == {home}  # a GET stream too
        # Without nginx's map, the other process knows nothing of the session.
        other = next(port for port in farm.ports.values() if port != home)
        status, _, answer = post(other, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
                                 {"Mcp-Session-Id": session_id,
                                  "MCP-Protocol-Version": "2025-11-25"})
        assert status == 404 and "unknown or ended session" in answer["error"]["message"]
        # DELETE ends the session, on its own process too.
        conn = http.client.HTTPConnection("127.0.0.1", farm.port, timeout=30)
        with contextlib.closing(conn):
            conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session_id})
            ended = conn.getresponse()
            assert (ended.status, ended.getheader("X-Upstream")) == (200, f"127.0.0.1:{home}")
        status, _, _ = post(farm.port, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
                            {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"})
        assert status == 404


@pytest.mark.parametrize("forged", ["zz.x", "b." + "x" * 43, "no-prefix-at-all", "a."])
def test_a_session_id_that_names_no_process_or_the_wrong_one_gets_404(farm, forged):
    """nginx guesses the process from the id; a wrong guess reaches a process that does not hold
    the session, which answers 404: the client's cue to initialize again."""
    status, headers, answer = post(farm.port, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                   {"Mcp-Session-Id": forged,
                                    "MCP-Protocol-Version": "2025-11-25"})
    assert status == 404
    assert answer == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "Not Found: unknown or ended session; send initialize again"}}


def test_the_client_starts_a_new_session_after_a_wrong_guess(farm):
    async def session():
        async with HTTPClient(farm.url, timeout=60, legacy=True) as client:
            client.session_id = "b.a-session-b-never-opened"
            text = text_of(await client.call_tool("get_document", {"name": "faq.txt"}))
            return client.session_id, text
    session_id, text = asyncio.run(session())
    assert "Wandering Kettle" in text
    assert session_id.partition(".")[0] in INSTANCES and len(session_id) == 45


@pytest.mark.parametrize("name", ["a.b", "a b", "caf\u00e9", "a-1"])
def test_an_instance_name_that_is_not_letters_and_digits_stops_the_server(name):
    serve = "import mcp_http, mcp_min; mcp_http.serve(mcp_min.Server('demo'), port=0)"
    server = subprocess.run([sys.executable, "-c", serve], capture_output=True, text=True,
                            timeout=60, cwd=ROOT, env={**os.environ, "MCP_INSTANCE": name})
    assert (server.returncode, server.stderr) == (1, "demo: cannot serve on 127.0.0.1:0: "
                                                  "MCP_INSTANCE may hold only letters and digits\n")

# --- Questions for the user (elicitation) across processes ---

MENU = (ROOT / "docs" / "menu_prices.txt").read_text()
CLOSE_NAME = "menu_price.txt"  # not a document, but close to menu_prices.txt: get_document asks


def the_question(request):
    """(field, choices) of an elicitation/create that asks which document was meant."""
    assert request["method"] == "elicitation/create"
    (field, schema), = request["params"]["requestedSchema"]["properties"].items()
    choices = schema.get("enum") or [choice["const"] for choice in schema.get("oneOf", [])]
    return field, choices


def test_an_input_required_round_trip_is_answered_by_both_processes(farm):
    """Round 1 goes to one process, its retry to the other (round-robin), which verifies the
    requestState the first one sealed: they share MCP_STATE_KEY."""
    asks = {"elicitation": {}}
    message, headers = modern_call(1, "get_document", {"name": CLOSE_NAME}, asks)
    status, first, answer = post(farm.port, message, headers)
    assert status == 200 and answer["result"]["resultType"] == "input_required", answer
    (key, request), = answer["result"]["inputRequests"].items()
    field, choices = the_question(request)
    assert "menu_prices.txt" in choices
    responses = {key: {"action": "accept", "content": {field: "menu_prices.txt"}}}
    retry, headers = modern_call(2, "get_document", {"name": CLOSE_NAME}, asks,
                                 inputResponses=responses,
                                 requestState=answer["result"]["requestState"])
    status, second, answer = post(farm.port, retry, headers)
    assert status == 200 and answer["result"]["resultType"] == "complete", answer
    assert answer["result"]["content"] == [{"type": "text", "text": MENU}]
    assert {first["x-upstream"], second["x-upstream"]} == {
        f"127.0.0.1:{port}" for port in farm.ports.values()}


def test_a_legacy_question_streams_through_nginx_and_its_answer_reaches_the_same_process(farm):
    """Legacy: the server sends elicitation/create on the call's SSE stream and waits. It can
    only be read before the call ends if nginx does not buffer the stream (X-Accel-Buffering:
    no); the answer, a POST of its own, must reach the process that waits for it."""
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "test_nginx", "version": "1"}}}
    status, headers, _ = post(farm.port, initialize)
    assert status == 200
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    home = f"127.0.0.1:{farm.ports[headers['mcp-session-id'].partition('.')[0]]}"
    assert headers["x-upstream"] == home
    assert post(farm.port, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                session)[0] == 202
    conn = http.client.HTTPConnection("127.0.0.1", farm.port, timeout=30)
    with contextlib.closing(conn):
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "get_document", "arguments": {"name": CLOSE_NAME}}}
        conn.request("POST", "/mcp", json.dumps(call).encode(), {
            "Content-Type": "application/json", **session,
            "Accept": "application/json, text/event-stream"})
        stream = conn.getresponse()
        assert stream.status == 200 and stream.getheader("X-Upstream") == home
        assert stream.getheader("Content-Type") == "text/event-stream"
        question = next_event(stream)
        field, choices = the_question(question)
        assert "menu_prices.txt" in choices
        reply = {"jsonrpc": "2.0", "id": question["id"],
                 "result": {"action": "accept", "content": {field: "menu_prices.txt"}}}
        status, headers, _ = post(farm.port, reply, session)
        assert (status, headers["x-upstream"]) == (202, home)
        assert next_event(stream) == {"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": MENU}], "isError": False}}


def next_event(stream):
    """The JSON of the next SSE event's data line (comments, event names and a 2025-11-25
    stream's priming event, whose data is empty (SEP-1699), are skipped)."""
    while True:
        line = stream.readline()
        assert line, "the SSE stream ended"
        if line.startswith(b"data:") and line[5:].strip():
            return json.loads(line[5:])
