"""mcp_http: Streamable HTTP for mcp_min, on asyncio and the standard library.

One endpoint, /mcp. The client POSTs one JSON-RPC message per HTTP request. The answer is one JSON
object, or a short Server-Sent Events stream when the request sends notifications (progress, log
messages) or, in a legacy session, requests of its own (elicitation/create) before its result;
the client POSTs its answers to those with the session's id. Both eras of the spec share the
endpoint, and every request goes through the same Server.handle as on stdio:

- 2026-07-28 (modern): stateless. Each POST stands alone. The headers MCP-Protocol-Version,
  Mcp-Method and Mcp-Name copy fields of the body, so that proxies can route without parsing JSON.
  Any number of processes can serve behind a load balancer.
- 2025-03-26 ... 2025-11-25 (legacy): `initialize` opens a session (the Mcp-Session-Id header),
  later requests carry its id, and DELETE ends it. Sessions live in this process's memory.

    import mcp_http
    mcp_http.serve(server, "127.0.0.1", 8000)      # or: python server.py --http 8000
    async with client.HTTPClient("http://127.0.0.1:8000/mcp") as c: ...   # in client.py

Safe by default: it binds 127.0.0.1 and refuses foreign Host and Origin headers (DNS rebinding).
Headers, bodies, open connections, the time a peer may take to send a request and the time it may
leave an answer unread all have limits. Every response closes its connection, so an idle client
holds nothing. SIGTERM and SIGINT stop the server gracefully.

The sections follow a request: reading HTTP/1.1 -> serving and stopping -> the connection ->
security -> the endpoint -> the two eras -> the answer, as JSON or SSE -> headers that mirror the
body. The client side is HTTPClient, in client.py.
Spec: https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http
"""
import asyncio, base64, collections, contextlib, errno, functools, resource, secrets, signal, sys
import os, time
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus

from mcp_min import (INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, LEGACY_VERSIONS,
                     MAX_BACKLOG, MAX_MESSAGE_BYTES, MAX_THREADS, META, METHOD_NOT_FOUND,
                     MODERN_VERSIONS, PARSE_ERROR, UNSUPPORTED_VERSION,
                     MCPError, check_request, encode, encode_reply, error_response, new_session,
                     parse_message, valid_id)

ENDPOINT = "/mcp"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")  # the default allow-list for Host and Origin
MAX_HEADER_BYTES = 16 * 1024
REQUEST_TIMEOUT = 30.0  # seconds a connection gets to send its request
WRITE_TIMEOUT = 30.0  # seconds a peer may leave our writes unread before its connection is cut
SHUTDOWN_GRACE = 5.0  # seconds the calls in flight get to finish after SIGTERM or SIGINT
KEEPALIVE_INTERVAL = 15.0  # a quiet SSE stream sends a comment this often, so proxies keep it open
MAX_SESSIONS = 10_000  # legacy sessions kept at most; the least recently used one goes first
# Behind a load balancer, MCP_INSTANCE names this process: its legacy session ids start with that
# name and a dot, so the proxy can send each session to the process that holds it in memory.
INSTANCE = os.environ.get("MCP_INSTANCE", "")
# SSE polling (SEP-1699, 2025-11-25): a client that lost a stream reconnects after RETRY_MS, and
# the events it missed are replayed: each session keeps its last MAX_STREAMS streams, each the
# events of its last MAX_BACKLOG bytes.
RETRY_MS = 1000
MAX_STREAMS = 4
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021  # raised by mcp_min's elicitation, which a core-only copy lacks
# Modern era: the HTTP status of each JSON-RPC error. Other errors, and all legacy answers: 200.
ERROR_STATUS = {PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
                UNSUPPORTED_VERSION: 400, MISSING_CAPABILITY: 400, METHOD_NOT_FOUND: 404}
# Mcp-Name: the body field it copies, by method; the Tasks extension's methods name their task
NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
            "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
# auth: the identity that the token check (mcp_auth) returned; None without one
Request = collections.namedtuple("Request", "method path headers body query auth",
                                 defaults=("", None))


class HTTPError(Exception):
    """Ends a request early: an HTTP status with a JSON-RPC error body (id null if unknown)."""

    def __init__(self, status, error, request_id=None, headers=None):
        if not isinstance(error, MCPError):
            error = MCPError(INVALID_REQUEST, f"{HTTPStatus(status).phrase}: {error}")
        super().__init__(error.message)
        self.status = status
        self.error = error
        self.request_id = request_id
        self.headers = {"Content-Type": "application/json", **(headers or {})}


# ---------------------------------------------------------------------------
# HTTP/1.1 on asyncio streams, for both sides: just what MCP needs (RFC 9112)
# ---------------------------------------------------------------------------

def parse_head(head):
    """A request's or response's head, up to its blank line -> (first line, {lower-case: value})."""
    first_line, *lines = head.decode("latin-1").strip("\r\n").split("\r\n")
    headers = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise HTTPError(400, "malformed header line")
        name = name.lower()
        value = value.strip(" \t")
        # A repeated header combines into one list (RFC 9110, 5.3).
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return first_line, headers


async def read_request(reader, check_head):
    """The request on a new connection; None if the client closed it without sending one. The
    reader's limit is MAX_HEADER_BYTES, so a longer head raises LimitOverrunError. Before the body
    is read, check_head(request without its body, HTTP version) may refuse the request; what it
    returns is the request's auth."""
    try:
        request_line, headers = parse_head(await reader.readuntil(b"\r\n\r\n"))
    except asyncio.IncompleteReadError as eof:
        if eof.partial.strip():
            raise HTTPError(400, "the connection closed in the middle of a request") from None
        return None
    except asyncio.LimitOverrunError:
        raise HTTPError(431, f"headers larger than {MAX_HEADER_BYTES} bytes") from None
    method, target, version = (request_line.split(" ") + ["", ""])[:3]
    if version not in ("HTTP/1.1", "HTTP/1.0") or request_line.count(" ") != 2:
        raise HTTPError(400, "malformed request line, or not HTTP/1.1")
    length = headers.get("content-length", "0")
    if "transfer-encoding" in headers or not (length.isascii() and length.isdigit()):
        raise HTTPError(411, "send the body with a Content-Length (chunked bodies are refused)")
    # Refused before reading, so it never fills memory; int() of thousands of digits would raise.
    if len(length) > len(str(MAX_MESSAGE_BYTES)) or int(length) > MAX_MESSAGE_BYTES:
        raise HTTPError(413, f"the body is larger than {MAX_MESSAGE_BYTES} bytes")
    path, _, query = target.partition("?")
    request = Request(method, path, headers, b"", query)
    auth = await check_head(request, version)
    return request._replace(body=await reader.readexactly(int(length)), auth=auth)


def http_head(status, headers):
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def write(writer, data, timeout):
    """Write, then wait while the peer lags behind (64 KiB unread): backpressure. A peer that
    reads nothing for `timeout` seconds is cut off."""
    if not writer.transport.is_closing():  # asyncio warns at each write after a lost connection
        writer.write(data)
    if writer.transport.get_write_buffer_size() > 65536:
        try:
            async with asyncio.timeout(timeout):
                await writer.drain()
        except (TimeoutError, ConnectionError):
            writer.transport.abort()


# ---------------------------------------------------------------------------
# The server: serving and stopping, then one request from arrival to answer
# ---------------------------------------------------------------------------

def serve(server, host="127.0.0.1", port=8000, grace=SHUTDOWN_GRACE, **options):
    """Serve until SIGTERM or SIGINT, then stop gracefully (HTTPTransport.shutdown). The options
    (allowed_hosts, request_timeout, write_timeout, max_connections, auth) go to HTTPTransport. A
    port in use, an invalid port or host: one line on stderr and exit status 1."""
    try:
        loop = asyncio.new_event_loop()  # closed by hand, as on stdio: see mcp_min's Server.run
        loop.set_default_executor(ThreadPoolExecutor(MAX_THREADS))  # as many tool threads too
        with contextlib.closing(loop):
            loop.run_until_complete(HTTPTransport(server, **options).run(host, port, grace))
    except KeyboardInterrupt:  # Ctrl-C before the signal handlers were in place
        pass


def default_max_connections():
    """The descriptor limit (ulimit -n) less 200: room for files, pipes, and a burst of refusals
    (asyncio accepts up to 100 connections at a time)."""
    soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 50_000 if soft_limit == resource.RLIM_INFINITY else max(8, soft_limit - 200)


class HTTPTransport:
    def __init__(self, server, allowed_hosts=LOCAL_HOSTS, request_timeout=REQUEST_TIMEOUT,
                 write_timeout=WRITE_TIMEOUT, max_connections=None, auth=None):
        """allowed_hosts: the host names that Host and Origin may name (any port). Behind a proxy,
        list the public names, or pass ["*"] if the proxy checks them. max_connections: open
        connections served at once (default_max_connections() if None); more are refused, 503.
        auth: an mcp_auth.ResourceServer, which asks every request for an OAuth bearer token
        and serves the metadata that says where to get one; None: no tokens (localhost only)."""
        self.server = server
        self.request_timeout = request_timeout
        self.auth = auth
        self.write_timeout = write_timeout
        self.allowed_hosts = {name.lower() for name in allowed_hosts}
        self.max_connections = max_connections or default_max_connections()
        self.sessions = collections.OrderedDict()  # Mcp-Session-Id -> session, least recent first
        self.connections = {}  # connection task -> busy answering?
        self.calls = set()  # the tasks of Server.handle
        self.cutting_off = False  # shutdown() cancels the calls that outlived the grace period
        self.last_log = 0.0  # when log() last wrote a line
        self.unlogged = 0  # lines it skipped since

    async def start(self, host="127.0.0.1", port=8000):
        asyncio.get_running_loop().set_exception_handler(  # accept() out of descriptors, say
            lambda loop, context: self.log(f"{context['message']}: {context.get('exception')}"))
        return await asyncio.start_server(self.connection, host, port, limit=MAX_HEADER_BYTES)

    async def run(self, host, port, grace):
        """Start (or exit with one line on stderr), serve until SIGTERM or SIGINT, then stop."""
        name = self.server.info["name"]
        try:
            if not (str(port).isdigit() and len(str(port)) < 6):
                raise ValueError("a port is a number from 0 to 65535")
            if INSTANCE and not (INSTANCE.isascii() and INSTANCE.isalnum()):
                raise ValueError("MCP_INSTANCE may hold only letters and digits")
            listener = await self.start(host, int(port))
        except (OSError, OverflowError, ValueError) as e:  # ValueError too: a host IDNA refuses
            reason = "the port is in use" if getattr(e, "errno", 0) == errno.EADDRINUSE else e
            raise SystemExit(f"{name}: cannot serve on {host}:{str(port)[:20]}: {reason}") from None
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(signum, stop.set)
        port = listener.sockets[0].getsockname()[1]  # printed once the signals are ours
        print(f"{name}: MCP over HTTP on http://{host}:{port}{ENDPOINT}", file=sys.stderr)
        await stop.wait()
        listener.close()  # no new connections from here on
        late = await self.shutdown(grace)
        late = f"; {late} call(s) still running after {grace} s got an error answer" if late else ""
        print(f"{name}: stopped{late}", file=sys.stderr)

    async def shutdown(self, grace):
        """Read no more requests, give the calls in flight `grace` seconds, then cancel the rest,
        which answer an error. Listens end at once with their result, and GET streams end.
        Returns once every answer is written (or its write timed out)."""
        for task, busy in list(self.connections.items()):
            if not busy:  # still sending its request: nothing is owed to it yet
                task.cancel()
        self.server.end_streams()  # listen streams answer their result
        for session in self.sessions.values():
            if session.get("stream"):  # a legacy session's GET stream
                session["stream"].ended.set()
        if self.calls:
            await asyncio.wait(self.calls, timeout=grace)
        late = [task for task in self.calls if not task.done()]
        self.cutting_off = True
        for task in late:
            task.cancel()
        if self.connections:
            await asyncio.wait(self.connections, timeout=self.write_timeout)
        return len(late)

    def log(self, text):
        """One line on stderr, at most one a second: a flood of failures must not fill the disk."""
        if time.monotonic() - self.last_log < 1.0:
            self.unlogged += 1
            return
        skipped = f" ({self.unlogged} more lines skipped)" if self.unlogged else ""
        print(f"mcp_http: {text}{skipped}", file=sys.stderr)
        self.last_log = time.monotonic()
        self.unlogged = 0

    # --- The connection: one request, one response, then it closes (RFC 9112) ---

    async def connection(self, reader, writer):
        """Each connection is its own task, so a slow client holds up nobody but itself."""
        task = asyncio.current_task()
        self.connections[task] = False
        try:
            if len(self.connections) > self.max_connections:
                self.log(f"refused a connection: {self.max_connections} are open (max_connections)")
                raise HTTPError(503, "too many connections", headers={"Retry-After": 1})
            async with asyncio.timeout(self.request_timeout):  # slowloris
                request = await read_request(reader, functools.partial(self.check_head, writer))
            self.connections[task] = True
            if request is not None:
                await self.respond(reader, writer, request)
        except TimeoutError:
            await self.send_error(writer, HTTPError(408, "no complete request in time"))
        except HTTPError as e:
            await self.send_error(writer, e)
            if e.status != 503:  # a refused connection is closed at once: it must free its slot
                await self.linger(reader, writer)
        except asyncio.IncompleteReadError:  # the body: the head's end is read_request's to handle
            await self.send_error(writer, HTTPError(400, "the request ended before its body did"))
        except OSError:
            pass  # the client went away, or stopped reading: nobody is left to tell
        except Exception as e:  # a bug still gets an answer, and one line in the log
            self.log(f"failed to answer a request: {e!r:.200}")
            await self.send_error(writer, HTTPError(500, "the server failed; see its log"))
        finally:
            del self.connections[task]
            writer.close()
            if writer.transport.get_write_buffer_size():  # still unread: wait, but not forever
                asyncio.get_running_loop().call_later(self.write_timeout, writer.transport.abort)

    async def linger(self, reader, writer):
        """After an error answer that may come before the request's end (a 413 for a body too
        large, say), the client may still be sending. Closing with its bytes unread makes the
        kernel reset the connection (TCP RST), which can destroy the answer before the client
        reads it. So: half-close, then read and drop what comes, for request_timeout at most."""
        with contextlib.suppress(OSError, TimeoutError):
            writer.write_eof()
            async with asyncio.timeout(self.request_timeout):
                while await reader.read(65536):
                    pass

    async def send(self, writer, status, headers, body=b""):
        await write(writer, http_head(status, {**headers, "Content-Length": len(body)}) + body,
                    self.write_timeout)

    async def send_error(self, writer, e):
        await self.send(writer, e.status, e.headers, encode(error_response(e.request_id, e.error)))

    async def check_head(self, writer, request, version):
        """What the head alone decides, before the body is read: a refusal goes out without
        waiting for the body, else a client that expects 100-continue is told to send it (RFC
        9110, 10.1.1; curl waits a second for that before it sends anyway)."""
        self.check_host_and_origin(request.headers)
        if self.auth and request.method == "GET" and request.path in self.auth.metadata_paths:
            return None  # Protected Resource Metadata: public, served by respond()
        if request.path != ENDPOINT:
            raise HTTPError(404, f"the MCP endpoint is {ENDPOINT}")
        auth = None
        if self.auth:  # every request shows a token, before its body is read (spec: Authorization)
            auth = await asyncio.get_running_loop().run_in_executor(
                None, self.auth.authorize, request.headers.get("authorization"), request.query)
        # GET opens a legacy session's stream (for what the server sends outside a call) or
        # resumes one; GET and DELETE need a legacy session: 2026-07-28 has neither (spec: 405).
        if request.method not in ("POST", "GET", "DELETE") or request.method != "POST" \
                and "mcp-session-id" not in request.headers:
            raise HTTPError(405, f"{request.method} is not supported here; POST JSON-RPC messages",
                            headers={"Allow": "POST, GET, DELETE"})
        content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if request.method == "POST" and content_type != "application/json":
            raise HTTPError(415, "Content-Type must be application/json")
        expect = request.headers.get("expect", "").lower()
        if version == "HTTP/1.1" and expect == "100-continue":  # HTTP/1.0: ignored (RFC 9110)
            await write(writer, b"HTTP/1.1 100 Continue\r\n\r\n", self.write_timeout)
        return auth

    async def respond(self, reader, writer, request):
        if request.method == "POST":
            return await self.post(reader, writer, request)
        if request.path != ENDPOINT:  # RFC 9728: where the authorization servers are
            return await self.send(writer, 200, {"Content-Type": "application/json"},
                                   encode(self.auth.metadata))
        if request.method == "GET":
            return await self.follow(reader, writer, request)
        # DELETE ends a legacy session, the requests it runs, and its GET stream
        session = self.legacy_session(request)
        for task in session["in_flight"].values():
            task.cancel()
        if session.get("stream"):
            session["stream"].ended.set()
        del self.sessions[request.headers["mcp-session-id"]]
        await self.send(writer, 200, {})

    # --- Security: Host and Origin (spec: Security, DNS rebinding) ---

    def check_host_and_origin(self, headers):
        """A web page at evil.example can rebind that name to 127.0.0.1. The browser then still
        sends Host: evil.example and Origin: http://evil.example, so both headers must name us."""
        if "host" not in headers:
            raise HTTPError(400, "a Host header is required")
        if "*" in self.allowed_hosts:
            return
        if hostname(headers["host"]) not in self.allowed_hosts:
            raise HTTPError(403, f"Host {headers['host']!r} is not allowed")
        origin = headers.get("origin")
        if origin is not None and hostname(origin.partition("://")[2]) not in self.allowed_hosts:
            raise HTTPError(403, f"Origin {origin!r} is not allowed")

    # --- The MCP endpoint: one JSON-RPC message per POST (spec: Sending Messages) ---

    async def post(self, reader, writer, request):
        headers = request.headers
        request_id = None
        try:
            message = parse_message(request.body)
            request_id = message.get("id") if valid_id(message.get("id")) else None
            if "method" not in message and ("result" in message or "error" in message):
                # A client's answer to our request (elicitation/create, say) in a legacy session:
                # to the call that waits for it. Any other is ignored: nobody waits for it.
                session = {}  # no session, or another caller's (OAuth): nobody waits for it
                with contextlib.suppress(HTTPError):
                    session = self.legacy_session(request)
                self.server.handle_notification(message, session)
                return await self.send(writer, 202, {})
            check_request(message)  # a request's id is checked there too
        except MCPError as e:
            raise HTTPError(400, e, request_id) from None
        # Which era? A modern version header or modern _meta means 2026-07-28; the rest is legacy.
        version = headers.get("mcp-protocol-version")
        params = message.get("params", {})
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        modern = version in MODERN_VERSIONS or any(key.startswith(META) for key in meta)
        if not modern and version not in LEGACY_VERSIONS + [None]:
            known = ", ".join(LEGACY_VERSIONS + MODERN_VERSIONS)
            raise HTTPError(400, f"MCP-Protocol-Version {version!r} is not one of {known}")
        opens_session = not modern and request_id is not None and message["method"] == "initialize"
        if not modern and not opens_session:
            session = self.legacy_session(request)
        if request_id is None:  # a notification: notifications/cancelled stops a legacy request
            if not modern:
                self.server.handle_notification(message, session)
            return await self.send(writer, 202, {})
        if modern:
            self.check_modern_request(message, headers)
        if modern or opens_session:  # modern: the request's own, forgotten afterwards
            session = new_session(auth=request.auth)
        if opens_session:  # what the server sends outside a call goes on the session's GET stream
            session["notify"] = lambda message: session.get("stream") and session["stream"](message)
        if request_id in session["in_flight"]:  # as on stdio: the running call stays cancellable
            error = MCPError(INVALID_REQUEST, f"Invalid Request: id {request_id!r} is in use")
            raise HTTPError(400, error, request_id)
        return await self.answer(reader, writer, request, message, session, modern, opens_session)

    # --- Legacy sessions, 2025-03-26 ... 2025-11-25 (spec 2025-11-25: Session Management) ---

    def legacy_session(self, request):
        """The session that the request's Mcp-Session-Id names. With OAuth, it stays its
        opener's: another caller's token with that id finds no session (spec: Security Best
        Practices, session hijacking), and its tools see the newest token's identity."""
        session_id = request.headers.get("mcp-session-id")
        if session_id is None:
            raise HTTPError(400, "an Mcp-Session-Id header is required: send initialize first "
                                 "(or use protocol 2026-07-28, which needs no session)")
        session = self.sessions.get(session_id)
        theirs = session and self.auth and not self.auth.same_caller(session["auth"], request.auth)
        if session is None or theirs:  # the client must start over with a new initialize
            raise HTTPError(404, "unknown or ended session; send initialize again")
        self.sessions.move_to_end(session_id)  # the least recently used session stays in front
        session["auth"] = request.auth
        return session

    def open_session(self, session):
        """Keep the session of a successful initialize under a new, unguessable id. Clients that
        vanish never send DELETE, so when MAX_SESSIONS are open the least recently used one goes:
        O(1), as the front of the OrderedDict is always that one."""
        if len(self.sessions) >= MAX_SESSIONS:
            self.sessions.popitem(last=False)
        prefix = f"{INSTANCE}." if INSTANCE else ""  # the process's name, for a proxy
        session_id = prefix + secrets.token_urlsafe(32)  # visible ASCII, as the spec wants
        self.sessions[session_id] = session
        return session_id

    # --- Modern requests, 2026-07-28 (spec: Request Metadata, Server Validation) ---

    def check_modern_request(self, message, headers):
        """The headers copy the body, so a proxy can route on them. If they disagree, the request
        is refused, so that a proxy and this server never act on two different requests."""
        request_id = message["id"]
        method = message["method"]
        params = message.get("params", {})
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        try:
            if not self.server.modern_version(method, meta):  # no _meta: not a modern request
                raise MCPError(INVALID_PARAMS, f"Invalid params: params._meta needs {META}"
                                               f"protocolVersion and {META}clientCapabilities")
        except MCPError as e:
            if e.code != UNSUPPORTED_VERSION:  # that one is Server.handle's to answer, after this
                raise HTTPError(ERROR_STATUS[e.code], e, request_id) from None
        name = params.get("name") if method == "tools/call" else None
        tool = self.server.tools.get(name) if isinstance(name, str) else None
        schema = tool.definition["inputSchema"] if tool else None
        version = params["_meta"][META + "protocolVersion"]
        for key, value in mirrored_headers(message, schema, version):
            problem = header_problem(headers.get(key.lower()), value)
            if problem:
                error = MCPError(HEADER_MISMATCH, f"Header mismatch: {key} {problem}")
                raise HTTPError(400, error, request_id)
        if method == "initialize":  # gone in this era; Server.handle would start a legacy handshake
            raise HTTPError(404, MCPError(METHOD_NOT_FOUND, "Method not found: initialize "
                                          f"({MODERN_VERSIONS[-1]} has no handshake)"), request_id)

    # --- The answer: JSON, or SSE once notifications come (spec: Sending/Receiving Messages) ---

    async def answer(self, reader, writer, request, message, session, modern, opens_session):
        """Run the request; meanwhile notice a hang-up, and keep a quiet stream alive."""
        request_id = message["id"]
        in_flight = session["in_flight"]
        sse = "event-stream" in request.headers.get("accept", "")
        if message["method"] == "subscriptions/listen" and not sse:
            raise HTTPError(400, "subscriptions/listen needs Accept: text/event-stream", request_id)
        polling = not modern and request.headers.get("mcp-protocol-version") == "2025-11-25"
        answer = Answer(writer, self.write_timeout, sse, None if modern else session, polling)
        task = asyncio.ensure_future(self.server.handle(message, answer, session))
        in_flight[request_id] = task  # where notifications/cancelled finds it
        task.add_done_callback(  # forget it, unless a newer request has taken its id
            lambda _: in_flight.get(request_id) is task and in_flight.pop(request_id))
        self.calls.add(task)
        hang_up = asyncio.ensure_future(reader.read(1))  # b"" when the client closes
        try:
            while not task.done():
                done, _ = await asyncio.wait({task, hang_up}, timeout=KEEPALIVE_INTERVAL,
                                             return_when=asyncio.FIRST_COMPLETED)
                if hang_up in done and hang_up.exception() is None and hang_up.result():
                    hang_up = asyncio.ensure_future(reader.read(65536))  # stray bytes: ignored
                elif hang_up in done:
                    # 2026-07-28: closing the stream cancels the request. The 2025 revisions say
                    # a disconnect is not a cancellation: there the work runs on, unheard.
                    if modern:
                        task.cancel()
                    elif answer.events is not None:  # SSE polling: kept for the GET that resumes
                        task.add_done_callback(answer.finish)
                    return
                elif not done:
                    if answer.sse:  # an SSE comment: proxies see traffic
                        await answer.send(b": keepalive\n\n")
        finally:
            self.calls.discard(task)
            hang_up.cancel()
        response = None if task.cancelled() else task.result()  # None: cancelled, no answer
        if response is None and self.cutting_off:
            error = MCPError(INTERNAL_ERROR, "Cancelled: the server is shutting down; retry later")
            response = error_response(request_id, error)
        if opens_session and response and "result" in response:
            answer.headers["Mcp-Session-Id"] = self.open_session(session)
        if answer.streaming:  # the result is the stream's last event
            answer.ended.set()  # a GET that follows the stream ends with it
            return response and await answer.send(answer.event(b"event: message\ndata: "
                                                               + encode_reply(response) + b"\n"))
        if response is None:
            return await self.send(writer, 204, {})
        status = ERROR_STATUS.get(response.get("error", {}).get("code"), 200) if modern else 200
        headers = {**answer.headers, "Content-Type": "application/json"}
        await self.send(writer, status, headers, encode_reply(response))

    async def follow(self, reader, writer, request):
        """GET, legacy: the session's own stream, for what the server sends outside a call
        (change notifications); or, with Last-Event-ID, the stream that event was on, resumed
        after it (SEP-1699): the events missed first, none twice, then the rest as they come."""
        session = self.legacy_session(request)
        last = request.headers.get("last-event-id")
        stream_id, _, number = (last or "").rpartition("-")
        stream = session.get("stream")  # the GET stream is always known; other streams may go
        streams = {**session.get("streams", {}), **({stream.stream_id: stream} if stream else {})}
        if last is not None and (stream_id not in streams or not number.isdigit()):
            raise HTTPError(400, "unknown Last-Event-ID: that stream's events are gone")
        if last is None and not session.get("stream"):
            session["stream"] = Answer(writer, self.write_timeout, True, session, True)
        answer = streams[stream_id] if last is not None else session["stream"]
        answer.writer = writer
        answer.streaming = False
        await answer.send(b"".join(event for n, event in answer.events if n > int(number or 0)))
        hang_up = asyncio.ensure_future(reader.read(1))
        ended = asyncio.ensure_future(answer.ended.wait())
        try:
            while not (hang_up.done() or ended.done()):
                done, _ = await asyncio.wait({hang_up, ended}, timeout=KEEPALIVE_INTERVAL,
                                             return_when=asyncio.FIRST_COMPLETED)
                if not done:  # an SSE comment: proxies see traffic
                    await answer.send(b": keepalive\n\n")
        finally:
            hang_up.cancel()
            ended.cancel()


class Answer:
    """The start of an HTTP response, undecided until something must go out. A notification that
    comes before the result (progress, a log message) starts an SSE stream if the client accepts
    SSE; the stream carries the notifications and ends with the result. Else the result goes as
    JSON. The stream has no length: the connection's end is its end. In a legacy session at
    2025-11-25, a stream is resumable (SSE polling, SEP-1699): it opens with a priming event, each
    event has an id, the stream's id and a number, and the last ones are kept for a client that
    reconnects with Last-Event-ID (HTTPTransport.follow); a GET stream is one too."""

    def __init__(self, writer, write_timeout, sse, session=None, resumable=False):
        self.writer = writer
        self.write_timeout = write_timeout
        self.sse = sse  # the client accepts text/event-stream
        self.headers = {}  # of the response, sent with its first byte
        self.streaming = False  # the SSE stream's head is sent
        self.behind_since = None  # when the peer began to leave MAX_BACKLOG unread
        self.session = session
        self.stream_id = secrets.token_hex(8)
        self.ended = asyncio.Event()  # the stream is over: a GET that follows it ends
        self.sent = 0  # events numbered so far
        self.kept = 0  # bytes of the events kept
        self.events = collections.deque() if resumable else None  # (number, event), kept

    def notify(self, message):
        """The send() that Server.handle gets, as on stdio, for notifications and for our
        requests to the client (legacy elicitation/create): written at once; a notification is
        skipped while the peer leaves MAX_BACKLOG unread (progress is a hint; the next one
        carries the latest value). A peer that stays behind for write_timeout is cut off. A
        JSON-only client never sees notifications, nor one that hung up: a legacy call runs on
        after that, and asyncio would log each write to the closed connection. A request that
        cannot go out here goes on the session's GET stream, if it has one, else fails its call
        at once. On a resumable stream, what cannot go out is kept for the client's return."""
        line = encode_reply(message)  # empty: JSON cannot carry it; it is dropped, not the stream
        closed = self.writer.transport.is_closing() and self.events is None
        stream = (self.session or {}).get("stream")
        if not (self.sse and line) or closed:
            if "id" in message and stream not in (None, self):
                return stream(message)
            if "id" in message:
                raise ConnectionError("the client reads no SSE stream here, which a request needs")
            return
        if self.writer.transport.is_closing():  # kept for the GET that resumes the stream
            return self.event(b"event: message\ndata: " + line + b"\n")
        if "id" in message or self.writer.transport.get_write_buffer_size() < MAX_BACKLOG:
            self.behind_since = None
            self.writer.write(self.stream_head() + self.event(b"event: message\ndata: " + line
                                                              + b"\n"))
        elif self.behind_since is None:
            self.behind_since = time.monotonic()
        elif time.monotonic() - self.behind_since > self.write_timeout:
            self.writer.transport.abort()

    __call__ = notify  # an Answer is the send() of its request

    async def send(self, data):
        """The result's event, or a keepalive: written, waiting while the peer lags behind."""
        await write(self.writer, self.stream_head() + data, self.write_timeout)

    def stream_head(self):
        """The response's head, before the stream's first event; b"" after it."""
        head = b"" if self.streaming else http_head(200, {
            **self.headers, "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no"})
        if not self.streaming and self.events is not None:  # a resumable stream starts
            streams = self.session.setdefault("streams", {})
            streams[self.stream_id] = self
            if len(streams) > MAX_STREAMS:  # a session keeps its last MAX_STREAMS streams
                del streams[next(iter(streams))]
            if not self.sent:  # the priming event
                head += f"id: {self.stream_id}-0\nretry: {RETRY_MS}\ndata: \n\n".encode()
        self.streaming = True
        return head

    def event(self, data):
        """One SSE event. In a resumable stream it gets the next id, and is kept; the oldest
        events go once the stream keeps over MAX_BACKLOG bytes."""
        if self.events is None:
            return data
        self.sent += 1
        data = f"id: {self.stream_id}-{self.sent}\n".encode() + data
        self.events.append((self.sent, data))
        self.kept += len(data)
        while self.kept > MAX_BACKLOG and len(self.events) > 1:
            self.kept -= len(self.events.popleft()[1])
        return data

    def close_stream(self):
        """Context.close_stream: SEP-1699 lets a server end the connection of a resumable stream
        at any time after an event with an id; the client resumes it with GET."""
        if self.events is not None and self.sse:
            self.writer.write(self.stream_head())  # the priming event, at least
            self.writer.close()

    def finish(self, task):
        """A resumable call's result, once its connection has ended: kept as the stream's last
        event for the GET that resumes it, and written to that GET if it is there."""
        if not task.cancelled() and task.result():
            self.notify(task.result())
        self.ended.set()


# ---------------------------------------------------------------------------
# Header values that mirror the body (spec 2026-07-28: Value Encoding, Custom Headers)
# ---------------------------------------------------------------------------

def hostname(authority):
    """'localhost:8000' -> 'localhost', '[::1]:8000' -> '[::1]'. Ports do not matter here."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[:authority.find("]") + 1]
    return authority.partition(":")[0]


def mirrored_arguments(schema, arguments):
    """(Mcp-Param-{Name}, value) for each argument whose schema property has "x-mcp-header". Nested
    objects count when every step is a "properties" key. Absent and null arguments send nothing."""
    for key, prop in (schema.get("properties") or {}).items():
        value = arguments.get(key) if isinstance(arguments, dict) else None
        if isinstance(prop, dict) and value is not None:
            if "x-mcp-header" in prop:
                yield "Mcp-Param-" + prop["x-mcp-header"], value
            yield from mirrored_arguments(prop, value)


def mirrored_headers(message, schema, version):
    """(name, value) for each header a 2026-07-28 request carries as a copy of its body."""
    method = message["method"]
    params = message.get("params", {})
    yield from (("MCP-Protocol-Version", version), ("Mcp-Method", method))
    if params.get(NAMED_BY.get(method)) is not None:
        yield "Mcp-Name", params[NAMED_BY[method]]
    if schema:  # a tool's arguments that its inputSchema marks with x-mcp-header
        yield from mirrored_arguments(schema, params.get("arguments"))


def header_text(value):
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def header_value(value):
    """A body value as a header: plain if visible ASCII with no space at either end, else Base64."""
    text = header_text(value)
    if text.isascii() and text.isprintable() and text == text.strip() and not text.startswith("=?"):
        return text
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def header_problem(actual, expected):
    """What is wrong with a header that should carry `expected`; None if it matches."""
    if actual is None:
        return "is missing"
    if actual.startswith("=?base64?") and actual.endswith("?=") and len(actual) >= 11:
        try:
            actual = base64.b64decode(actual[9:-2], validate=True).decode()
        except ValueError:  # binascii.Error and UnicodeDecodeError both are
            return "is not valid Base64"
    elif not (actual.isascii() and actual.isprintable()):
        return "holds characters that are not visible ASCII"
    same = actual == header_text(expected)
    if not same and isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:  # the spec: 42.0 and 42 are the same number
            same = float(actual) == expected
        except ValueError:
            pass
    return None if same else f"is {actual[:100]!r} but the body says {str(expected)[:100]!r}"
