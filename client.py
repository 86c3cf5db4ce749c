"""
client.py - an MCP client (the Client class), and a demo that talks to a server step by step.

Client, at the top of this file, is the client side of mcp_min: copy it with mcp_min.py into your
project. It starts a stdio server as a subprocess, learns its era, and calls its tools. The demo
below it shows what each step of the conversation says:

    python client.py                            # start server.py, list its tools, search once
    python client.py "is there wifi" --top-k 3  # ask your own question
    python client.py --interactive              # one server, one question per line, warm answers
    python client.py --trace                    # also print every JSON line: -> sent, <- received
    python client.py --legacy                   # open with the initialize handshake (2025-11-25)
    python client.py --url http://127.0.0.1:8000/mcp    # Streamable HTTP (server.py --http)
    python client.py --server CMD ARG...        # any other stdio MCP server instead of server.py

client.py itself needs only the standard library and mcp_min.py, so any Python 3.11 or newer
runs it, virtualenv or not. server.py needs the packages `make install` puts in .venv, so
client.py starts server.py with .venv's Python when there is one (and says so), else with its
own. --server runs exactly the command it is given.

The client starts the server as a subprocess (you never start it yourself) and
speaks JSON-RPC to it over the server's stdin and stdout, one JSON text per line:

    1. connect     server/discover (2026-07-28); a server that does not know it gets the
                   legacy handshake instead: initialize, then notifications/initialized
    2. tools/list  what tools exist, and the JSON Schema of each one's arguments
    3. tools/call  run one tool: here search, with the question

Leaving the `async with` block closes the server's stdin, which is how a stdio server
is told to exit. Nothing here knows about embeddings or FAISS: all of that happens on
the other side of the pipe.
"""

import argparse, asyncio, functools, itertools, json, os, queue, re, signal, sys, threading
import contextlib, time, urllib.parse
from pathlib import Path

import mcp_http  # the HTTP client below uses its HTTP/1.1 helpers; stdlib only, like mcp_min

from mcp_min import (INTERNAL_ERROR, LEGACY_VERSIONS, MAX_MESSAGE_BYTES, META, METHOD_NOT_FOUND,
                     MODERN_VERSIONS, UNSUPPORTED_VERSION, MCPError, encode, error_response,
                     parse_message, read_lines, valid_id)

class Client:
    """An MCP client over stdio: it starts a server as a subprocess and talks to it.

        async with Client([sys.executable, "server.py"]) as client:
            tools = await client.list_tools()
            result = await client.call_tool("search", {"query": "wifi"})

    trace(direction, line), if given, sees every line: "→" sent, "←" received. Failures raise
    MCPError (the server answered with an error), TimeoutError, or ConnectionError (the server is
    gone or broken). For Streamable HTTP, use HTTPClient(url), below, the same way."""

    def __init__(self, command, env=None, cwd=None, trace=None, timeout=60.0, probe_timeout=5.0,
                 legacy=False, max_message_bytes=MAX_MESSAGE_BYTES):
        self.command, self.env, self.cwd, self.trace = command, env, cwd, trace
        self.timeout, self.probe_timeout, self.legacy = timeout, probe_timeout, legacy
        self.max_message_bytes, self.ids = max_message_bytes, itertools.count(1)
        self.protocol_version = self.era = self.failure = None
        self.server_info, self.capabilities = {}, {}
        self.pending, self.progress_handlers, self.stderr_tail = {}, {}, []
        self.client_info = {"name": "mcp-min", "version": "0.1.0"}

    async def __aenter__(self):
        pipe = asyncio.subprocess.PIPE
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.command, stdin=pipe, stdout=pipe, stderr=pipe, env=self.env, cwd=self.cwd)
        except OSError as e:
            raise ConnectionError(f"cannot start the MCP server {self.command[0]!r}: {e}") from e
        self.stderr_task = asyncio.ensure_future(self.read_stderr())
        self.reader_task = asyncio.ensure_future(self.read_messages())
        try:
            await self.connect()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info):
        await self.close()

    # --- Which era the server speaks (spec: basic/versioning) ---

    async def connect(self):
        """Probe with server/discover: a DiscoverResult or a modern error means 2026-07-28. Any
        other error, or silence, means a legacy server: fall back to the initialize handshake.
        legacy=True skips the probe and opens with the handshake, as legacy-era hosts do."""
        self.era, self.protocol_version = "modern", MODERN_VERSIONS[-1]
        ours = MODERN_VERSIONS + LEGACY_VERSIONS
        try:
            if self.legacy:
                raise TimeoutError
            found = await self.request("server/discover", timeout=self.probe_timeout)
            offered = as_list(found.get("supportedVersions"))
            common = [version for version in MODERN_VERSIONS if version in offered]
            if common:
                self.protocol_version = common[-1]
                self.capabilities = as_dict(found.get("capabilities"))
                self.server_info = as_dict(as_dict(found.get("_meta")).get(META + "serverInfo"))
                return
            if not any(version in LEGACY_VERSIONS for version in offered):
                raise MCPError(UNSUPPORTED_VERSION, "no version in common", {"supported": offered})
        except MCPError as e:
            if e.code == UNSUPPORTED_VERSION:  # modern, but no version in common: no fallback
                theirs = as_dict(e.data).get("supported")
                raise MCPError(e.code, f"the server speaks {theirs}; we speak {ours}") from None
        except TimeoutError:
            pass
        self.era = "legacy"
        result = await self.request("initialize", {"protocolVersion": LEGACY_VERSIONS[-1],
                                    "capabilities": {}, "clientInfo": self.client_info})
        self.protocol_version = result.get("protocolVersion")
        if self.protocol_version not in LEGACY_VERSIONS:
            raise MCPError(UNSUPPORTED_VERSION, f"the server offers protocol "
                                                f"{self.protocol_version!r}; we speak {ours}")
        self.capabilities = as_dict(result.get("capabilities"))
        self.server_info = as_dict(result.get("serverInfo"))
        await self.notify("notifications/initialized")

    # --- Requests and their answers ---

    async def list_tools(self):
        """Every tool, following pagination: a list of tool dicts exactly as on the wire."""
        tools, cursors = [], [None]
        while True:
            page = await self.request("tools/list", {"cursor": cursors[-1]} if cursors[-1] else {})
            tools += [tool for tool in as_list(page.get("tools")) if isinstance(tool, dict)]
            if not page.get("nextCursor") or page["nextCursor"] in cursors:  # no page twice
                return tools
            cursors.append(page["nextCursor"])

    async def call_tool(self, name, arguments=None, timeout=None, on_progress=None):
        """The CallToolResult dict. on_progress(progress, total, message) sees progress."""
        params = {"name": name, "arguments": arguments or {}}
        return await self.request("tools/call", params, timeout, on_progress)

    async def request(self, method, params=None, timeout=None, on_progress=None):
        """Send a request and wait for its result (a dict)."""
        if self.failure:
            raise ConnectionError(self.failure)
        request_id, params = next(self.ids), dict(params or {})
        meta = dict(params.get("_meta", {}))
        if self.era == "modern":  # every modern request says which protocol it speaks, and who asks
            meta.update({META + "protocolVersion": self.protocol_version,
                         META + "clientCapabilities": {}, META + "clientInfo": self.client_info})
        if on_progress:
            meta["progressToken"], self.progress_handlers[request_id] = request_id, on_progress
        params.update({"_meta": meta} if meta else {})
        future = self.pending[request_id] = asyncio.get_running_loop().create_future()
        timeout = self.timeout if timeout is None else timeout
        try:
            await self.write({"jsonrpc": "2.0", "id": request_id, "method": method,
                              "params": params})
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            # Spec (cancellation): a request that timed out is cancelled, so the server can stop.
            cancel = {"requestId": request_id, "reason": f"timed out after {timeout} s"}
            await self.notify("notifications/cancelled", cancel)
            what = f"{method} {params.get('name')!r}" if method == "tools/call" else method
            raise TimeoutError(f"{what}: no answer within {timeout} s; the request was cancelled "
                               "(pass a larger timeout= if it is only slow)" + self.last_words())
        finally:
            self.pending.pop(request_id, None)
            self.progress_handlers.pop(request_id, None)

    async def notify(self, method, params=None):
        await self.write({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def write(self, message):
        line = encode(message)
        self.call_back(self.trace, "→", line.decode().rstrip("\n"))
        try:
            self.process.stdin.write(line)
            await self.process.stdin.drain()  # returns at once unless the server stopped reading
        except (ConnectionError, RuntimeError) as e:
            raise ConnectionError(self.failure or f"cannot write to the MCP server: {e}") from None

    # --- What the server sends ---

    async def read_messages(self):
        """The one reader of the server's stdout: every message goes to on_message."""
        read = functools.partial(self.process.stdout.read, 65536)
        logs = "a server must write logs to stderr only"
        async for line in read_lines(read, self.max_message_bytes):
            if isinstance(line, tuple) and ID_AT_START.match(line[0]):  # an answer, too big
                self.refuse_oversized(*line)
                continue
            if isinstance(line, tuple):
                return await self.fail(f"the server wrote a line of {line[1]} bytes to stdout, "
                                       f"over the {self.max_message_bytes}-byte limit, "
                                       f"starting {line[0][:80]!r}; {logs}")
            self.call_back(self.trace, "←", line.decode(errors="replace").rstrip("\r"))
            try:
                message = parse_message(line)
            except MCPError as e:
                return await self.fail(f"the server wrote something other than an MCP message to "
                                       f"stdout ({e.message}): {line[:200]!r}; {logs}")
            reply = self.on_message(message)
            if reply:  # if the server's stdin is closed, read on: its answers, or its exit
                with contextlib.suppress(ConnectionError):
                    await self.write(reply)
        code = await self.exited()
        how = f"exited with code {code}"
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else how
        await self.fail(f"the MCP server closed its stdout and {how}")

    def on_message(self, message):
        """One message from the server. A response completes the request waiting on its id, and
        progress goes to its handler. Returns the reply a request of the server's own gets: ping
        is answered, as the spec says it MUST be; this client offers nothing else."""
        method, request_id, params = message.get("method"), message.get("id"), message.get("params")
        if isinstance(method, str) and valid_id(request_id):  # 1e400 could not be echoed
            error = MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
            pong = {"jsonrpc": "2.0", "id": request_id, "result": {}}
            return pong if method == "ping" else error_response(request_id, error)
        params = as_dict(params)
        if method == "notifications/progress" and valid_id(params.get("progressToken")):
            handler = self.progress_handlers.get(params["progressToken"])
            self.call_back(handler, *map(params.get, ("progress", "total", "message")))
        future = self.pending.get(request_id) if valid_id(request_id) else None
        error, result = message.get("error"), message.get("result")
        if future is None or future.done():
            return None
        if isinstance(error, dict):
            future.set_exception(MCPError(*map(error.get, ("code", "message", "data"))))
        elif isinstance(result, dict):
            future.set_result(result)
        else:
            future.set_exception(MCPError(INTERNAL_ERROR, "a malformed answer from the server: "
                                                          f"{json.dumps(message)[:200]}"))

    def refuse_oversized(self, head, size):
        """An answer over max_message_bytes fails only the request whose id it starts with."""
        future = self.pending.get(int(ID_AT_START.match(head)[1]))
        if future and not future.done():
            future.set_exception(MCPError(INTERNAL_ERROR, f"the answer is {size} bytes, over this "
                                          f"client's {self.max_message_bytes}-byte limit "
                                          "(Client(max_message_bytes=...) sets it)"))

    def call_back(self, callback, *args):
        """A caller's callback (trace, on_progress): if it raises, that is logged, and the reader
        goes on."""
        try:
            if callback:
                callback(*args)
        except Exception as e:
            print(f"mcp_min client: a callback raised {e!r}", file=sys.stderr)

    async def read_stderr(self):
        """The server's log, drained whatever its line lengths; its last lines are kept."""
        async for line in read_lines(functools.partial(self.process.stderr.read, 65536), 2000):
            text = line[0] + b"..." if isinstance(line, tuple) else line  # a line over 2 kB
            self.stderr_tail = (self.stderr_tail + [text.decode(errors="replace").rstrip()])[-10:]

    def last_words(self):
        tail = "\n".join(self.stderr_tail)
        return f". The server's stderr ends with:\n{tail}" if tail else ""

    async def fail(self, reason):
        """The server is gone or broken: every waiting request fails at once, with its last
        words."""
        await asyncio.wait([self.stderr_task], timeout=1.0)  # they are often on their way
        self.failure = reason + self.last_words()
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError(self.failure))

    async def exited(self):
        """The server's exit code, once it exits. Not process.wait(): that also waits until its
        stdout and stderr close, which a child it started (and left running) holds open."""
        while self.process.returncode is None:
            await asyncio.sleep(0.02)
        return self.process.returncode

    async def close(self):
        """Shutdown as the spec says: close the server's stdin, wait, then SIGTERM, then SIGKILL."""
        if self.process.returncode is None:
            self.process.stdin.close()
            for stop in (lambda: None, self.process.terminate, self.process.kill):
                try:
                    stop()
                    await asyncio.wait_for(self.exited(), 2.0)
                    break
                except (TimeoutError, ProcessLookupError):
                    continue
        # The reader may be failing requests right now. A child the server left running may
        # hold its stdout or stderr open for good: then the readers are stopped here.
        await asyncio.wait([self.reader_task, self.stderr_task], timeout=2.0)
        for task in (self.reader_task, self.stderr_task):
            task.cancel()
        self.process._transport.close()  # our ends of its pipes: asyncio has no public way
        await asyncio.gather(self.reader_task, self.stderr_task, return_exceptions=True)
        self.failure = self.failure or "the MCP client was closed while this request waited"
        for future in self.pending.values():  # nobody will answer them now
            if not future.done():
                future.set_exception(ConnectionError(self.failure))


# An oversized answer is skipped unread; its id is found at its start, where servers put it.
ID_AT_START = re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(\d+)')


def as_dict(value):  # what a well-behaved server sends as an object; {} for anything else
    return value if isinstance(value, dict) else {}


def as_list(value):
    return value if isinstance(value, list) else []


# === The client over Streamable HTTP (mcp_http.py has the server side) ===

class HTTPClient(Client):
    """Client over Streamable HTTP: HTTPClient("http://127.0.0.1:8000/mcp"). Each message is its
    own POST on a new connection. Answers and progress reach the waiting request as on stdio. A
    reply (a JSON body, or one SSE event) over max_message_bytes fails its own request only."""

    def __init__(self, url, **options):
        super().__init__(url, **options)
        self.url = urllib.parse.urlsplit(url)
        if self.url.scheme not in ("http", "https") or not self.url.hostname:
            raise ValueError(f"not an http:// or https:// URL: {url!r}")
        self.session_id, self.posts, self.tool_schemas = None, {}, {}
        self.session_lock = asyncio.Lock()
        self.replies = set()  # posts of our answers to the server's requests, held until done

    async def __aenter__(self):
        try:
            await self.connect()  # Client.connect: a modern server/discover first, else initialize
        except BaseException:
            await self.close()
            raise
        return self

    async def list_tools(self):
        tools = await super().list_tools()
        self.tool_schemas = {tool["name"]: tool.get("inputSchema", {}) for tool in tools}
        return tools  # the schemas say which arguments travel as Mcp-Param headers too

    async def write(self, message):
        self.call_back(self.trace, "→", encode(message).decode().rstrip("\n"))
        if message.get("method") == "notifications/cancelled":
            post = self.posts.get(message["params"]["requestId"])
            if post:  # hang up; in 2026-07-28 that alone is the cancellation
                post.cancel()
            if self.era == "modern":
                return
            # Waited for, within probe_timeout: a server that never answers this POST held back
            # the TimeoutError of the request being cancelled for good. close() ends the POST.
            key = ("cancelled", message["params"]["requestId"])
            task = self.posts[key] = asyncio.ensure_future(self.post(message))
            task.add_done_callback(lambda _: self.posts.pop(key, None))
            await asyncio.wait([task], timeout=self.probe_timeout)
            return
        if "id" not in message:  # a notification: sent before anything else, so `initialized` first
            return await self.post(message)
        task = self.posts[message["id"]] = asyncio.ensure_future(self.post(message))
        task.add_done_callback(lambda _: self.posts.pop(message["id"], None))

    def headers_for(self, message):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self.era == "modern" and "method" in message:  # headers that copy the body
            tool = message["params"].get("name") if message["method"] == "tools/call" else None
            mirrored = mcp_http.mirrored_headers(message, self.tool_schemas.get(tool),
                                                 self.protocol_version)
            headers.update((key, mcp_http.header_value(value)) for key, value in mirrored)
        elif self.session_id:
            headers.update({"Mcp-Session-Id": self.session_id,
                            "MCP-Protocol-Version": self.protocol_version})
        return headers

    async def post(self, message, retry=True):
        """POST one message and hand on what comes back: one JSON body, or the events of an SSE
        stream. Whatever goes wrong fails this message's request only."""
        request_id = message.get("id") if "method" in message else None  # None: not a request
        session_id = self.session_id
        try:
            port = self.url.port or (443 if self.url.scheme == "https" else 80)
            reader, writer = await asyncio.open_connection(
                self.url.hostname, port, limit=mcp_http.MAX_HEADER_BYTES,
                ssl=self.url.scheme == "https")
            try:
                headers, body = self.headers_for(message), encode(message)
                status, got = await http_request(reader, writer, self.url, headers, body)
                if status == 404 and session_id and request_id is not None and retry:
                    await self.new_session(session_id)  # the spec: that session is gone
                    return await self.post(message, retry=False)
                if message.get("method") == "initialize" and "mcp-session-id" in got:
                    self.session_id = got["mcp-session-id"]
                async for data in reply_messages(reader, got, self.max_message_bytes):
                    if self.receive(data, request_id, status):
                        return  # the answer: nothing more is owed, so hang up, as the SDK does
            finally:
                writer.close()
            if request_id is not None:  # fails the request now, not at its timeout
                raise ConnectionError(f"HTTP {status}, and no answer to request {request_id}")
        except Exception as e:  # a broken reply fails its request, never the client
            future = self.pending.get(request_id)
            if future and not future.done():
                future.set_exception(ConnectionError(f"HTTP request failed: {e}"))

    async def new_session(self, ended):
        """After a 404 for session `ended`: a fresh initialize, once, shared by the requests that
        saw the 404."""
        async with self.session_lock:
            if self.session_id == ended:
                self.session_id, self.legacy = None, True  # the server is legacy: skip the probe
                await self.connect()

    def receive(self, data, request_id, status):
        """One message from the server: a response completes its request, progress goes to its
        handler, the server's own request (ping) is answered, as on stdio. A POST's reply answers
        that POST's request only: a response with another id is ignored, never taken as the
        answer to some other request. True once the answer to request_id has come."""
        self.call_back(self.trace, "←", data.decode(errors="replace"))
        message = parse_message(data)  # MCPError if it is not one: a proxy's error page, say
        if "id" in message and message["id"] is None:  # an error from before the id was read
            message["id"] = request_id
        if "method" not in message and message.get("id") != request_id:
            return False
        reply = self.on_message(message)
        if reply:  # the loop keeps only a weak reference to a task: it could vanish unsent
            task = asyncio.ensure_future(self.post(reply))
            self.replies.add(task)
            task.add_done_callback(self.replies.discard)
        return "method" not in message and request_id is not None

    async def close(self):
        for task in list(self.posts.values()):
            task.cancel()
        self.failure = "the client was closed"
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError(self.failure))


def too_big(size, limit):
    return ConnectionError(f"the reply is {size} bytes, over the {limit}-byte max_message_bytes")


async def http_request(reader, writer, url, headers, body):
    """POST on a new connection; returns the response's status and lower-case headers."""
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    lines = [f"POST {target} HTTP/1.1", f"Host: {url.netloc.rpartition('@')[2]}",
             f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    while True:  # interim 1xx responses (100 Continue, 103 Early Hints) may come first: skipped
        status_line, got = mcp_http.parse_head(await reader.readuntil(b"\r\n\r\n"))
        status = status_line.partition(" ")[2][:3]
        if not (status_line.startswith("HTTP/") and status.isdigit()):
            raise ConnectionError(f"no HTTP response from {url.netloc}")
        if not status.startswith("1"):
            return int(status), got


async def body_pieces(reader, headers, limit):
    """The response body as it arrives: chunked, Content-Length, or until the server closes."""
    length = headers.get("content-length", "")
    if "chunked" in headers.get("transfer-encoding", ""):
        while size := int((await reader.readline()).split(b";")[0], 16):
            if size > limit:
                raise too_big(f"more than {limit}", limit)
            yield (await reader.readexactly(size + 2))[:-2]  # a CRLF ends each chunk
    elif length:
        if not length.isdigit() or len(length) > 15 or int(length) > limit:
            raise too_big(length[:20], limit)
        yield await reader.readexactly(int(length))
    else:
        while piece := await reader.read(65536):
            yield piece


async def reply_messages(reader, headers, limit):
    """The messages of a response body: the data of each SSE event, or the one JSON body. None may
    pass `limit` bytes: an endless body fails instead of filling memory."""
    sse = headers.get("content-type", "").startswith("text/event-stream")
    rest, data = b"", []
    async for piece in body_pieces(reader, headers, limit):
        *lines, rest = (rest + piece).split(b"\n") if sse else [rest + piece]  # JSON: one message
        for line in lines:
            line = line.rstrip(b"\r")
            if not line and data:  # a blank line ends an event
                yield b"\n".join(data)
                data = []
            elif line.startswith(b"data:"):  # comments and other fields are skipped
                data.append(line[5:].removeprefix(b" "))
        if len(rest) + sum(map(len, data)) > limit:
            raise too_big(f"more than {limit}", limit)
    if rest and not sse:
        yield rest


# === The demo: python client.py ===

HERE = Path(__file__).resolve().parent
DEFAULT_QUESTION = "can I bring a dog"
WAITING_NOTE_AFTER = 1.0  # seconds without an answer before the terminal hears why
MAX_QUESTION_CHARS = 10_000  # per stdin line; the server itself takes 1,000
SHUTDOWN_SECONDS = 15  # closing waits 2 s per step (EOF, SIGTERM, SIGKILL): this bounds it all

ERA_NOTES = {
    "modern": "stateless: no handshake, every request carries its protocol version in _meta",
    "legacy": "initialize handshake, then the notifications/initialized notification",
}


def describe_arguments(input_schema):
    """'query (string, required), top_k (integer, default 5)' from a tool's inputSchema."""
    properties = input_schema.get("properties", {})
    required = input_schema.get("required", [])
    parts = []
    for name, schema in properties.items():
        options = [option.get("type", "?") for option in schema.get("anyOf", [])]
        kind = schema.get("type") or " | ".join(options)
        if name in required:
            parts.append(f"{name} ({kind}, required)")
        elif "default" in schema:
            parts.append(f"{name} ({kind}, default {json.dumps(schema['default'])})")
        else:
            parts.append(f"{name} ({kind}, optional)")
    return ", ".join(parts) or "none"


def first_line(text):
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


def indent(text, prefix="    "):
    return "\n".join(prefix + line if line else "" for line in text.splitlines())


def field(label, value):
    print(f"    {label:<10} : {value}")


def milliseconds(since):
    return f"{(time.perf_counter() - since) * 1000:.0f} ms"


def note(message):
    print(f"client.py: {message}", file=sys.stderr, flush=True)


def plug_closed_streams():
    """A stdout or stderr closed by the caller (`client.py >&-`) is None to Python, and .flush()
    or .isatty() on it failed the run: it becomes /dev/null. That also takes the free descriptor,
    so no pipe to the server can land on fd 1 or 2."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))


def stdout_gone():
    """The reader of stdout has left (`client.py | head -1`): the rest goes to /dev/null, so
    neither the run nor Python's last flush at exit reports a broken pipe."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def url_problem(url):
    """Why --url cannot be reached over HTTP, or None."""
    example = "e.g. http://127.0.0.1:8000/mcp"
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # ValueError for a port that is not a number from 0 to 65535
    except ValueError as e:
        return f"--url {url!r} is not a URL ({e}); {example}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"--url {url!r} is not an http:// or https:// URL; {example}"
    return None


# ----------------------------------------------------------------------------
# Which Python runs server.py

def venv_python(project=HERE):
    """The project's virtualenv Python, where `make install` puts server.py's packages."""
    if os.name == "nt":
        return project / ".venv" / "Scripts" / "python.exe"
    return project / ".venv" / "bin" / "python"


def server_python(project=HERE):
    """(interpreter path, how to show it, why it was chosen) for starting server.py.

    Starting the server with the project's .venv, rather than re-running this client under
    it, keeps the client on whatever Python the user typed: it needs no packages itself.
    """
    python = venv_python(project)
    if python.exists():
        shown = python.relative_to(project).as_posix()
        return str(python), shown, f"{shown}, the project's virtualenv (server.py's packages)"
    version = ".".join(map(str, sys.version_info[:3]))
    return (sys.executable, "python",
            f"this Python ({version}): there is no .venv here; `make install` makes one")


def connect(command, trace, legacy):
    """The client for a server: a command to start (stdio) or a URL (Streamable HTTP)."""
    if isinstance(command, str):  # a URL: Streamable HTTP
        return HTTPClient(command, trace=trace, legacy=legacy)
    return Client(command, trace=trace, legacy=legacy)


# ----------------------------------------------------------------------------
# Waiting for an answer, out loud

def search_arguments(tools, question, top_k):
    """The arguments for a search tool with a query argument, or None if the server has none."""
    search = next((tool for tool in tools if tool["name"] == "search"), None)
    properties = (search or {}).get("inputSchema", {}).get("properties", {})
    if "query" not in properties:
        return None
    arguments = {"query": question}
    if "top_k" in properties:
        arguments["top_k"] = top_k
    return arguments


async def call_search(client, arguments):
    """client.call_tool("search", ...), telling the terminal when the answer is slow to come.

    A first search waits for server.py to load its embedding model, about 5 s. After a
    second of silence a line on stderr says so; on a terminal it counts the seconds and is
    erased when the answer arrives. Progress the server reports is shown as it comes.
    """
    live = sys.stderr.isatty()
    started = time.perf_counter()

    def on_progress(progress, total, message):
        done = f"{progress}/{total}" if total else f"{progress}"
        text = f"    progress: {message or done}"
        print(f"\r\033[K{text}" if live else text, end="" if live else "\n",
              file=sys.stderr, flush=True)

    call = asyncio.ensure_future(client.call_tool("search", arguments, on_progress=on_progress))
    waited = False
    try:
        while not (await asyncio.wait([call], timeout=WAITING_NOTE_AFTER))[0]:
            seconds = time.perf_counter() - started
            reason = "a first search may wait while the server loads its model"
            if live:
                print(f"\r\033[K    waiting for the answer: {seconds:.0f} s ({reason})",
                      end="", file=sys.stderr, flush=True)
            elif not waited:
                print(f"    waiting for the answer ({reason})", file=sys.stderr, flush=True)
            waited = True
    finally:
        call.cancel()  # a no-op once it is done; else the session is being cut short
    if waited and live:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    return call.result()


# ----------------------------------------------------------------------------
# The demo: each step of one conversation

async def demo(command, label, question, top_k, trace, legacy=False, python_note=None):
    if label.startswith(("http://", "https://")):
        opening = f"reach {label}"
    else:
        opening = f"start `{label}`"
    print(f"[1] connect: {opening} and open the conversation")
    if python_note:
        field("python", python_note)
    started = time.perf_counter()
    async with connect(command, trace, legacy) as client:
        info = client.server_info or {}
        field("server", f"{info.get('name', '?')} {info.get('version', '')}".rstrip())
        field("protocol", client.protocol_version)
        field("era", f"{client.era} ({ERA_NOTES.get(client.era, '?')})")
        field("offers", ", ".join(client.capabilities or {}) or "nothing")
        field("time", f"{milliseconds(started)} (start the server, if ours to start, and connect)")

        print("\n[2] tools/list")
        started = time.perf_counter()
        tools = await client.list_tools()
        for tool in tools:
            print(f"    {tool['name']}: {first_line(tool.get('description'))}")
            print(f"        arguments: {describe_arguments(tool.get('inputSchema', {}))}")
        field("time", milliseconds(started))

        arguments = search_arguments(tools, question, top_k)
        if arguments is None:
            print("\n(no tool called search with a query argument: stopping after the listing)")
            return 0

        print(f"\n[3] tools/call search {json.dumps(arguments, ensure_ascii=False)}")
        sys.stdout.flush()  # before any waiting line on stderr
        started = time.perf_counter()
        result = await call_search(client, arguments)
        content = result.get("content", [])
        field("isError", result.get("isError", False))
        kinds = ", ".join(block.get("type", "?") for block in content) or "-"
        field("content", f"{len(content)} block(s), type {kinds}")
        if "structuredContent" in result:
            field("structured", "keys " + ", ".join(result["structuredContent"]))
        field("time", f"{milliseconds(started)} (a first search also waits for the model to load)")
        print()
        for block in content:
            if block.get("type") == "text":
                print(indent(block["text"]))
            else:
                print(f"    <{block.get('type')} block>")
        if result.get("isError"):
            return 1
    return 0


# ----------------------------------------------------------------------------
# --interactive: one server, many questions
#
# The conversation runs on an event loop in a second thread; this thread reads stdin. So
# Ctrl-C always lands here (Python delivers signals to the main thread), at a prompt or
# while an answer is on its way, and cancelling the conversation closes the server.

async def converse(command, label, top_k, trace, legacy, questions, turns, stopping):
    """Answer each question from `questions` (None ends); put "ask" on `turns` when ready for
    the next one, and the exit code when done."""
    code = 1
    try:
        async with connect(command, trace, legacy) as client:
            tools = await client.list_tools()
            if search_arguments(tools, "", top_k) is None:
                note(f"error: `{label}` has no tool called search with a query argument")
                return
            info = client.server_info or {}
            note(f"connected to {info.get('name', '?')} {info.get('version', '')} "
                 f"({client.protocol_version}). One question per line; "
                 "an empty line or Ctrl-D ends.")
            while True:
                turns.put("ask")
                question = await questions.get()
                if question is None:
                    break
                await answer(client, search_arguments(tools, question, top_k))
        code = 0
    except BrokenPipeError:  # a ConnectionError too, but ours: stdout's reader left
        stdout_gone()
    except (ConnectionError, MCPError, TimeoutError) as e:
        if not stopping.is_set():  # after Ctrl-C, a server gone is no news
            note(f"error: {e}")
    finally:
        turns.put(code)


async def answer(client, arguments):
    started = time.perf_counter()
    result = await call_search(client, arguments)
    for block in result.get("content", []):
        if block.get("type") == "text":
            print(block["text"])
        else:
            print(f"<{block.get('type')} block>")
    failed = " (the tool reported an error)" if result.get("isError") else ""
    print(f"(answered in {milliseconds(started)}{failed})\n", flush=True)


def read_question(prompt):
    """The next line of stdin, stripped; None at the end of input."""
    if prompt:  # a terminal: input() edits the line, and the terminal caps its length
        try:
            return input(prompt).strip()
        except EOFError:
            print()  # Ctrl-D leaves the cursor after the prompt
            return None
    line = sys.stdin.readline(MAX_QUESTION_CHARS)
    if not line:
        return None
    if not line.endswith("\n"):  # too long to be a question: skip the rest of it
        while (rest := sys.stdin.readline(MAX_QUESTION_CHARS)) and not rest.endswith("\n"):
            pass
    return line.strip()


def interactive(command, label, top_k, trace, legacy):
    """Ask questions from stdin, one per line, of one server; EOF, Ctrl-C or an empty line end."""
    loop = asyncio.new_event_loop()
    questions = asyncio.Queue()
    turns = queue.SimpleQueue()
    stopping = threading.Event()
    session = loop.create_task(converse(command, label, top_k, trace, legacy,
                                        questions, turns, stopping))

    def run_session():
        try:
            loop.run_until_complete(session)
        except asyncio.CancelledError:  # Ctrl-C: the server was closed on the way out
            pass
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    thread = threading.Thread(target=run_session, name="mcp-conversation", daemon=True)
    thread.start()
    prompt = "question> " if sys.stdin.isatty() else ""
    try:
        while (turn := turns.get()) == "ask":
            question = read_question(prompt)
            loop.call_soon_threadsafe(questions.put_nowait, question or None)
        code = turn
    except KeyboardInterrupt:
        stopping.set()
        try:
            loop.call_soon_threadsafe(session.cancel)
        except RuntimeError:  # the loop is closed: the conversation has just ended by itself
            pass
        print(file=sys.stderr)  # the terminal shows ^C; the shell prompt gets a line of its own
        code = 130
    thread.join(SHUTDOWN_SECONDS)
    return code


# ----------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Show the MCP conversation with a stdio server, step by step.")
    parser.add_argument("question", nargs="?", default=None,
                        help=f"what to search for (default: {DEFAULT_QUESTION!r})")
    parser.add_argument("--top-k", type=int, default=3, help="passages to ask for (default: 3)")
    parser.add_argument("--index", default="index",
                        help="index folder for server.py (default: index)")
    parser.add_argument("--interactive", action="store_true",
                        help="read questions from stdin, one per line, and answer each with the "
                             "same server; an empty line, Ctrl-D or Ctrl-C ends")
    parser.add_argument("--trace", action="store_true",
                        help="print every JSON line sent (→) and received (←)")
    parser.add_argument("--legacy", action="store_true",
                        help="open with the initialize handshake (2025-11-25) instead of "
                             "probing for 2026-07-28")
    parser.add_argument("--url", help="talk Streamable HTTP to a server at this URL, "
                                      "e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument("--server", nargs=argparse.REMAINDER, metavar="CMD",
                        help="command of another stdio MCP server; everything after it "
                             "belongs to that command")
    plug_closed_streams()
    args = parser.parse_args(argv)
    if args.url is not None and url_problem(args.url):
        parser.error(url_problem(args.url))
    if args.server == []:
        parser.error("--server needs the command that starts the server")
    if args.interactive and args.question is not None:
        parser.error("--interactive reads its questions from stdin: leave out the question")

    python_note = None
    if args.url:
        command = label = args.url
    elif args.server:
        command = args.server
        label = " ".join(args.server)
    else:
        if not args.index:  # Path("") is the current folder
            parser.error("--index is an empty string; give it the index folder (default: index)")
        # Our own server cannot search without an index: say so before starting it.
        if not (Path(args.index) / "manifest.json").is_file():
            build = ("make index" if args.index == "index"  # make index builds index/ alone
                     else f"python index_build.py --docs DOCS --index {args.index}")
            note(f"error: no search index in {args.index}/; run `{build}` first")
            return 1
        python, shown, python_note = server_python()
        command = [python, str(HERE / "server.py"), "--index", args.index]
        label = f"{shown} server.py --index {args.index}"

    stdout_lost = []

    def trace(direction, line):
        try:
            print(f"{direction} {line}", flush=True)
        except BrokenPipeError:  # the client would log it and go on: the rest goes nowhere
            stdout_gone()
            stdout_lost.append(True)

    trace = trace if args.trace else None
    if args.interactive and python_note:
        note(f"server.py runs on {python_note}")
    question = DEFAULT_QUESTION if args.question is None else args.question
    try:
        if args.interactive:
            code = interactive(command, label, args.top_k, trace, args.legacy)
        else:
            code = asyncio.run(demo(command, label, question, args.top_k, trace, args.legacy,
                                    python_note))
        sys.stdout.flush()  # here, where a reader that left is handled, not at exit
        return 1 if stdout_lost else code
    except BrokenPipeError:  # a ConnectionError too, but ours: stdout's reader left
        stdout_gone()
        return 1
    except (ConnectionError, MCPError, TimeoutError) as e:
        note(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
