"""mcp_http: Streamable HTTP for mcp_min, on asyncio and the standard library.

One endpoint, /mcp. The client POSTs one JSON-RPC message per HTTP request. The answer is one JSON
object, or a short Server-Sent Events stream when the request sends notifications (progress, log
messages) before its result. Both eras of the spec share the endpoint, and every request goes
through the same Server.handle as on stdio:

- 2026-07-28 (modern): stateless. Each POST stands alone. The headers MCP-Protocol-Version,
  Mcp-Method and Mcp-Name copy fields of the body, so that proxies can route without parsing
  JSON. Any number of processes can serve behind a load balancer.
- 2025-03-26 ... 2025-11-25 (legacy): `initialize` opens a session (the Mcp-Session-Id header), later
  requests carry its id, and DELETE ends it. Sessions live in this process's memory.

    server.run(transport="http", host="127.0.0.1", port=8000)     # or: python server.py --http 8000
    async with Client("http://127.0.0.1:8000/mcp") as client: ...

Safe by default: it binds 127.0.0.1, refuses foreign Host and Origin headers (DNS rebinding),
limits the size of headers and bodies, and gives each connection 30 s to send a request.
The sections follow a request: connection -> HTTP parsing -> security -> the endpoint -> the two eras
-> the answer (JSON or SSE). Then comes the client side.
Spec: https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http
"""
import asyncio, base64, binascii, dataclasses, json, secrets, sys, time, urllib.parse
from http import HTTPStatus

from client import Client
from mcp_min import (INVALID_PARAMS, INVALID_REQUEST, LEGACY_VERSIONS, MAX_MESSAGE_BYTES, META,
                     METHOD_NOT_FOUND, MODERN_VERSIONS, PARSE_ERROR, UNSUPPORTED_VERSION, MCPError,
                     check_request, encode, encode_reply, error_response, parse_message, valid_id)

ENDPOINT = "/mcp"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")  # the default allow-list for Host and Origin
MAX_HEADER_BYTES = 16 * 1024
REQUEST_TIMEOUT = 30.0     # seconds a connection gets to send a whole request, idle time included
KEEPALIVE_INTERVAL = 15.0  # a quiet, long request sends an SSE comment this often, so proxies keep it open
MAX_SESSIONS, SESSION_IDLE = 10_000, 3600.0  # legacy sessions: at most this many, forgotten after an idle hour
HEADER_MISMATCH, MISSING_CAPABILITY = -32020, -32021
# Modern era: the HTTP status for each JSON-RPC error. Other errors, and every legacy answer, get 200.
ERROR_STATUS = {PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
                MISSING_CAPABILITY: 400, UNSUPPORTED_VERSION: 400, METHOD_NOT_FOUND: 404}
NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}  # the body field Mcp-Name copies


class HTTPError(Exception):
    """Ends a request early: an HTTP status with a JSON-RPC error body (the spec allows one with id null)."""

    def __init__(self, status, error, request_id=None, headers=None):
        super().__init__(error)
        self.status, self.request_id, self.headers = status, request_id, headers or {}
        if not isinstance(error, MCPError):
            error = MCPError(INVALID_REQUEST, f"{HTTPStatus(status).phrase}: {error}")
        self.error = error


def serve(server, host="127.0.0.1", port=8000, **options):
    """Serve over HTTP until Ctrl-C. The options (allowed_hosts, request_timeout) go to HTTPTransport."""
    async def main():
        listener = await HTTPTransport(server, **options).start(host, port)
        bound = listener.sockets[0].getsockname()
        print(f"{server.info['name']}: MCP over HTTP on http://{host}:{bound[1]}{ENDPOINT}", file=sys.stderr)
        async with listener:
            await listener.serve_forever()
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass


# ---------------------------------------------------------------------------
# HTTP/1.1 on asyncio streams: just what MCP needs (RFC 9112)
# ---------------------------------------------------------------------------

class Connection:
    """A TCP connection. Bytes that have been read but not used yet wait in `buffer`."""

    def __init__(self, reader, writer):
        self.reader, self.writer, self.buffer = reader, writer, bytearray()

    async def fill(self):
        """Read what has arrived into the buffer; False once the peer has closed."""
        chunk = await self.reader.read(65536)
        self.buffer += chunk
        return bool(chunk)


@dataclasses.dataclass
class Request:
    method: str
    path: str
    headers: dict  # lower-case names
    body: bytes
    keep_alive: bool


async def read_request(conn):
    """Request line, headers, body; None when the client closed the connection between requests."""
    while (end := conn.buffer.find(b"\r\n\r\n")) < 0:
        if len(conn.buffer) > MAX_HEADER_BYTES:
            raise HTTPError(431, f"headers larger than {MAX_HEADER_BYTES} bytes")
        if not await conn.fill():
            if conn.buffer.strip():
                raise HTTPError(400, "the connection closed in the middle of a request")
            return None
    if end > MAX_HEADER_BYTES:
        raise HTTPError(431, f"headers larger than {MAX_HEADER_BYTES} bytes")
    request_line, *lines = conn.buffer[:end].decode("latin-1").lstrip("\r\n").split("\r\n")
    del conn.buffer[:end + 4]
    try:
        method, target, version = request_line.split(" ")
    except ValueError:
        raise HTTPError(400, "malformed request line") from None
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise HTTPError(505, f"{version[:20]} is not supported")
    headers = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise HTTPError(400, "malformed header line")
        name, value = name.lower(), value.strip(" \t")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value  # repeats combine (RFC 9110 5.3)
    if "transfer-encoding" in headers:
        raise HTTPError(501, "chunked request bodies are not supported; send Content-Length")
    length = headers.get("content-length", "0")
    if not (length.isascii() and length.isdigit()):
        raise HTTPError(400, "malformed Content-Length")
    if (length := int(length)) > MAX_MESSAGE_BYTES:  # refused before reading, so it never fills memory
        raise HTTPError(413, f"the body is larger than {MAX_MESSAGE_BYTES} bytes")
    if headers.get("expect", "").lower() == "100-continue" and len(conn.buffer) < length:
        conn.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # curl waits a second for this before a big body
    while len(conn.buffer) < length:
        if not await conn.fill():
            raise HTTPError(400, "the connection closed in the middle of the body")
    body = bytes(conn.buffer[:length])
    del conn.buffer[:length]
    keep_alive = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    return Request(method, target.partition("?")[0], headers, body, keep_alive)


def http_head(status, headers, keep_alive):
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", *(f"{k}: {v}" for k, v in headers.items())]
    lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def reply(conn, what, keep_alive=False):
    """A response with no MCP answer in it: a bare status (202, 200), or an HTTPError's JSON-RPC error."""
    if isinstance(what, HTTPError):
        body = encode(error_response(what.request_id, what.error))
        return await reply_raw(conn.writer, what.status, {**what.headers, "Content-Type": "application/json"},
                               body, keep_alive)
    return await reply_raw(conn.writer, what, {}, b"", keep_alive)


async def reply_raw(writer, status, headers, body, keep_alive):
    writer.write(http_head(status, {**headers, "Content-Length": len(body)}, keep_alive) + body)
    await writer.drain()
    return keep_alive


def sse_event(line):
    return b"event: message\ndata: " + line + b"\n"  # `line` is encode()'s output; the blank line ends the event


def hostname(authority):
    """'localhost:8000' -> 'localhost', '[::1]:8000' -> '[::1]'. Ports do not matter for DNS rebinding."""
    authority = authority.strip().lower()
    return authority[:authority.find("]") + 1] if authority.startswith("[") else authority.partition(":")[0]


# ---------------------------------------------------------------------------
# The transport: security, the endpoint, the two eras, the answer
# ---------------------------------------------------------------------------

class HTTPTransport:
    def __init__(self, server, allowed_hosts=LOCAL_HOSTS, request_timeout=REQUEST_TIMEOUT):
        """allowed_hosts: the host names that Host and Origin may name (any port). Behind a proxy, list
        the public names, or pass ["*"] if the proxy checks them."""
        self.server, self.request_timeout = server, request_timeout
        self.allowed_hosts = {name.lower() for name in allowed_hosts}
        self.sessions = {}  # Mcp-Session-Id -> mcp_min session, for legacy clients

    async def start(self, host="127.0.0.1", port=8000):
        return await asyncio.start_server(self.connection, host, port)

    # --- The connection: HTTP/1.1 requests one after another, keep-alive (RFC 9112) ---

    async def connection(self, reader, writer):
        """Each connection is its own task, so a slow client holds up nobody but itself."""
        conn = Connection(reader, writer)
        try:
            while True:
                try:
                    request = await asyncio.wait_for(read_request(conn), self.request_timeout)
                except TimeoutError:  # slowloris, or an idle keep-alive connection: both are closed
                    if conn.buffer:
                        await reply(conn, HTTPError(408, f"no complete request within {self.request_timeout} s"))
                    return
                except HTTPError as e:  # after a malformed request, the next one's start cannot be found
                    return await reply(conn, e)
                if request is None or not await self.respond(conn, request):
                    return
        except (ConnectionError, OSError):
            pass  # the client went away; nobody is left to tell
        finally:
            writer.close()

    async def respond(self, conn, request):
        """Answer one request; returns whether the connection stays open for the next one."""
        try:
            self.check_host_and_origin(request.headers)
            if request.path != ENDPOINT:
                raise HTTPError(404, f"the MCP endpoint is {ENDPOINT}")
            if request.method == "POST":
                return await self.post(conn, request)
            if request.method == "DELETE":
                self.end_session(request.headers)
                return await reply(conn, 200, keep_alive=request.keep_alive)
            # GET would open a stream for server-initiated messages; this server sends none.
            raise HTTPError(405, f"{request.method} is not supported; POST JSON-RPC messages",
                            headers={"Allow": "POST, DELETE"})
        except HTTPError as e:
            return await reply(conn, e, keep_alive=request.keep_alive)

    # --- Security: Host and Origin (spec: Security, DNS rebinding) ---

    def check_host_and_origin(self, headers):
        """A web page at evil.example can rebind that name to 127.0.0.1. The browser then still sends
        Host: evil.example and Origin: http://evil.example, so both headers must name us."""
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

    async def post(self, conn, request):
        headers = request.headers
        if headers.get("content-type", "").partition(";")[0].strip().lower() != "application/json":
            raise HTTPError(415, "Content-Type must be application/json")
        accept = headers.get("accept", "*/*")
        if not any(kind in accept for kind in ("application/json", "text/event-stream", "*/*", "application/*")):
            raise HTTPError(406, "Accept must allow application/json or text/event-stream")
        try:
            message = parse_message(request.body)
        except MCPError as e:
            raise HTTPError(400, e) from None
        request_id, is_request = message.get("id"), "id" in message and "method" in message
        if "method" not in message and ("result" in message or "error" in message):
            return await reply(conn, 202, keep_alive=request.keep_alive)  # a response: we send no requests
        try:
            check_request(message)
            if is_request and not valid_id(request_id):
                raise MCPError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
        except MCPError as e:
            raise HTTPError(400, e, request_id if valid_id(request_id) else None) from None
        # Which era? A modern version header or modern _meta means 2026-07-28; the rest is legacy.
        version, params = headers.get("mcp-protocol-version"), message.get("params", {})
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        modern = version in MODERN_VERSIONS or any(key.startswith(META) for key in meta)
        if not modern and version is not None and version not in LEGACY_VERSIONS:
            raise HTTPError(400, f"unsupported MCP-Protocol-Version {version!r}; this server speaks "
                                 f"{', '.join(LEGACY_VERSIONS + MODERN_VERSIONS)}", request_id)
        opens_session = not modern and message["method"] == "initialize" and is_request
        session = None if modern or opens_session else self.legacy_session(headers)
        if not is_request:  # a notification: notifications/cancelled stops a legacy request
            if session is not None:
                self.server.handle_notification(message, session)
            return await reply(conn, 202, keep_alive=request.keep_alive)
        if modern:
            self.check_modern_request(message, headers)
            session = self.server.new_session()  # stateless: the request's own, thrown away afterwards
        elif opens_session:
            session = self.server.new_session()
        elif request_id in session["in_flight"]:
            error = MCPError(INVALID_REQUEST, f"Invalid Request: id {request_id!r} is in use by a request in progress")
            raise HTTPError(400, error, request_id)
        return await self.answer(conn, request, message, session, modern, opens_session)

    # --- Legacy sessions, 2025-03-26 ... 2025-11-25 (spec 2025-11-25: Session Management) ---

    def legacy_session(self, headers):
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            raise HTTPError(400, "an Mcp-Session-Id header is required: send initialize first "
                                 "(or use protocol 2026-07-28, which needs no session)")
        session = self.sessions.get(session_id)
        if session is None:  # the client must start over with a new initialize
            raise HTTPError(404, "unknown or ended session; send initialize again")
        session["last_seen"] = time.monotonic()
        return session

    def open_session(self, session):
        """Keep the session of a successful initialize under a new, unguessable id."""
        now = time.monotonic()
        for old_id, old in list(self.sessions.items()):  # clients that vanish never send DELETE
            if now - old["last_seen"] > SESSION_IDLE and not old["in_flight"]:
                del self.sessions[old_id]
        if len(self.sessions) >= MAX_SESSIONS:
            del self.sessions[next(iter(self.sessions))]  # the oldest one goes
        session_id, session["last_seen"] = secrets.token_urlsafe(32), now  # visible ASCII, as the spec wants
        self.sessions[session_id] = session
        return session_id

    def end_session(self, headers):
        session = self.legacy_session(headers)
        for task in session["in_flight"].values():
            task.cancel()
        del self.sessions[headers["mcp-session-id"]]

    # --- Modern requests, 2026-07-28 (spec: Request Metadata, Server Validation) ---

    def check_modern_request(self, message, headers):
        """The headers copy the body, so a proxy can route on them. If they disagree, the request is
        refused, so that a proxy and this server never act on two different requests."""
        request_id, method, params = message["id"], message["method"], message.get("params", {})
        try:
            if not self.server.modern_version(method, params):  # no _meta at all: not a modern request
                raise MCPError(INVALID_PARAMS, f"Invalid params: params._meta needs {META}protocolVersion "
                                               f"and {META}clientCapabilities")
        except MCPError as e:
            if e.code != UNSUPPORTED_VERSION:  # that one is Server.handle's to answer, after the headers
                raise HTTPError(ERROR_STATUS[e.code], e, request_id) from None
        expected = {"mcp-protocol-version": params["_meta"][META + "protocolVersion"], "mcp-method": method}
        if params.get(NAMED_BY.get(method)) is not None:
            expected["mcp-name"] = params[NAMED_BY[method]]
        tool = self.server.tools.get(params.get("name")) if method == "tools/call" else None
        if tool:  # arguments the tool's schema marks with x-mcp-header travel as Mcp-Param-{Name} too
            expected.update((name.lower(), value) for name, value in
                            mirrored_arguments(tool[1]["inputSchema"], params.get("arguments")))
        for name, value in expected.items():
            problem = header_problem(headers.get(name), value)
            if problem:
                raise HTTPError(400, MCPError(HEADER_MISMATCH, f"Header mismatch: {name} {problem}"), request_id)
        if method == "initialize":  # removed in this era; Server.handle would start a legacy handshake
            error = MCPError(METHOD_NOT_FOUND, f"Method not found: initialize ({MODERN_VERSIONS[-1]} has no handshake)")
            raise HTTPError(404, error, request_id)

    # --- The answer: JSON, or an SSE stream once notifications come (spec: Sending/Receiving Messages) ---

    async def answer(self, conn, request, message, session, modern, opens_session):
        request_id = message["id"]
        answer = Answer(conn.writer, "text/event-stream" in request.headers.get("accept", ""), request.keep_alive)
        task = asyncio.ensure_future(self.server.handle(message, session, answer.notify))
        session["in_flight"][request_id] = task  # where notifications/cancelled finds it
        in_flight = session["in_flight"]
        task.add_done_callback(lambda _: in_flight.get(request_id) is task and in_flight.pop(request_id))
        watcher = asyncio.ensure_future(conn.fill())  # EOF here means the client hung up
        try:
            while not task.done():
                done, _ = await asyncio.wait({task, watcher} - {None}, timeout=KEEPALIVE_INTERVAL,
                                             return_when=asyncio.FIRST_COMPLETED)
                if watcher in done:
                    if watcher.exception() or not watcher.result():
                        # 2026-07-28: closing the stream cancels the request. The 2025 revisions say
                        # a disconnect is not a cancellation: there the work runs on, unheard.
                        answer.closed = True
                        if modern:
                            task.cancel()
                        return False
                    watcher = None  # bytes of a pipelined next request: they wait in conn.buffer
                elif not done:
                    answer.keepalive()
        finally:
            if watcher:
                watcher.cancel()
        response, status = task.result(), 200
        if opens_session and response and "result" in response:
            answer.headers["Mcp-Session-Id"] = self.open_session(session)
        if modern and response and "error" in response:
            status = ERROR_STATUS.get(response["error"].get("code"), 200)
        return await answer.finish(response, status)


class Answer:
    """The HTTP response to one request, undecided until something must go out. A result alone is sent
    as application/json. A notification that comes first (progress, a log message) starts an SSE
    stream, which carries the notifications and then the result, if the client accepts SSE."""

    def __init__(self, writer, sse_allowed, keep_alive):
        self.writer, self.sse_allowed, self.keep_alive = writer, sse_allowed, keep_alive
        self.headers, self.streaming, self.closed = {}, False, False

    def notify(self, message):  # mcp_min's send(): called on the event loop, for notifications
        if self.sse_allowed and not self.closed:  # a JSON-only client never sees notifications
            line = encode_reply(message)
            if not line:  # NaN in a log message's data, say: dropped, never the stream
                return
            event = sse_event(line)
            self.start_stream()
            self.chunk(event)

    def keepalive(self):
        if self.sse_allowed and not self.closed:
            self.start_stream()
            self.chunk(b": keepalive\n\n")  # an SSE comment: clients ignore it, proxies see traffic

    def start_stream(self):
        if not self.streaming:
            self.streaming = True
            self.writer.write(http_head(200, {**self.headers, "Content-Type": "text/event-stream",
                                              "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                                              "Transfer-Encoding": "chunked"}, self.keep_alive))

    def chunk(self, data):  # chunked transfer coding: the stream's length is unknown, keep-alive still works
        self.writer.write(b"%x\r\n%s\r\n" % (len(data), data))

    async def finish(self, response, status):
        """Send the result: the stream's last event, or the JSON body. None means cancelled: no answer."""
        if response is not None:
            body = encode_reply(response)  # a result JSON cannot carry becomes an error: still one answer
        self.closed = True
        if self.streaming:
            if response is not None:
                self.chunk(sse_event(body))
            self.writer.write(b"0\r\n\r\n")
            await self.writer.drain()
            return self.keep_alive
        if response is None:
            return await reply_raw(self.writer, 204, {}, b"", self.keep_alive)
        return await reply_raw(self.writer, status, {**self.headers, "Content-Type": "application/json"},
                               body, self.keep_alive)


# ---------------------------------------------------------------------------
# Header values that mirror the body (spec 2026-07-28: Value Encoding, Custom Headers)
# ---------------------------------------------------------------------------

def mirrored_arguments(schema, arguments):
    """(Mcp-Param-{Name}, value) for each argument whose schema property has "x-mcp-header". Nested
    objects count when every step is a "properties" key. Absent and null arguments send no header."""
    for key, prop in (schema.get("properties") or {}).items():
        value = arguments.get(key) if isinstance(arguments, dict) else None
        if isinstance(prop, dict) and value is not None:
            if "x-mcp-header" in prop:
                yield "Mcp-Param-" + prop["x-mcp-header"], value
            yield from mirrored_arguments(prop, value)


def header_value(value):
    """A body value as a header: plain if it is visible ASCII with no space at either end, else =?base64?...?=."""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    plain = all(32 <= ord(c) < 127 for c in text) and text == text.strip()
    if plain and not (text.startswith("=?base64?") and text.endswith("?=")):
        return text
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def header_problem(actual, expected):
    """What is wrong with a header that should carry `expected`; None if it matches."""
    if actual is None:
        return "is missing"
    if any(not (32 <= ord(c) < 127 or c == "\t") for c in actual):
        return "holds characters that are not visible ASCII"
    if actual.startswith("=?base64?") and actual.endswith("?=") and len(actual) >= 11:
        try:
            actual = base64.b64decode(actual[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return "is not valid Base64"
    if isinstance(expected, bool):
        same = actual == ("true" if expected else "false")
    elif isinstance(expected, (int, float)):  # the spec: 42.0 and 42 are the same number
        try:
            same = float(actual) == expected
        except ValueError:
            same = False
    else:
        same = actual == str(expected)
    return None if same else f"is {actual[:100]!r} but the body says {str(expected)[:100]!r}"


# ---------------------------------------------------------------------------
# The client side: Client("http://127.0.0.1:8000/mcp") builds an HTTPClient
# ---------------------------------------------------------------------------

class HTTPClient(Client):
    """mcp_min.Client over Streamable HTTP. Each message is its own POST on a fresh connection.
    Responses and progress reach the waiting request the same way as on stdio."""

    async def __aenter__(self):
        self.url = urllib.parse.urlsplit(self.command)
        self.session_id, self.posts, self.tool_schemas = None, {}, {}
        try:
            await self.connect()  # era detection: Client.connect probes with a modern server/discover first
        except BaseException:
            await self.close()
            raise
        return self

    async def list_tools(self):
        tools = await super().list_tools()
        self.tool_schemas = {tool["name"]: tool.get("inputSchema", {}) for tool in tools}  # for Mcp-Param headers
        return tools

    async def write(self, message):
        if self.trace:
            self.trace("→", encode(message).decode().rstrip("\n"))
        if self.failure:
            raise ConnectionError(self.failure)
        if message.get("method") == "notifications/cancelled" and self.era == "modern":
            post = self.posts.get(message["params"]["requestId"])  # 2026-07-28: hanging up is the cancellation
            return post and post.cancel()
        if "id" not in message:  # a notification: sent before anything else, so `initialized` comes first
            return await self.post(message)
        task = self.posts[message["id"]] = asyncio.ensure_future(self.post(message))  # request() waits for it
        task.add_done_callback(lambda _: self.posts.pop(message["id"], None))

    def headers_for(self, message):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.era == "modern":  # every request says what it is, in headers that match the body
            method, params = message.get("method"), message.get("params", {})
            headers.update({"MCP-Protocol-Version": self.protocol_version, "Mcp-Method": method})
            if params.get(NAMED_BY.get(method)) is not None:
                headers["Mcp-Name"] = header_value(params[NAMED_BY[method]])
            if method == "tools/call":
                schema = self.tool_schemas.get(params.get("name"), {})
                mirrored = mirrored_arguments(schema, params.get("arguments"))
                headers.update((name, header_value(value)) for name, value in mirrored)
        elif self.session_id:
            headers.update({"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": self.protocol_version})
        return headers

    async def post(self, message):
        """POST one message and hand on what comes back: one JSON body, or the events of an SSE stream."""
        request_id = message.get("id") if "method" in message else None  # None: a notification, or our response
        try:
            headers, body = self.headers_for(message), encode(message)
            status, got, chunks, writer = await http_request(self.url, "POST", headers, body)
            try:
                if message.get("method") == "initialize" and "mcp-session-id" in got:
                    self.session_id = got["mcp-session-id"]
                if got.get("content-type", "").startswith("text/event-stream"):
                    async for event in sse_events(chunks):
                        self.receive(event, request_id)
                elif status != 202:
                    body = b"".join([chunk async for chunk in chunks])
                    self.receive(body.decode("utf-8", "replace"), request_id, status)
            finally:
                writer.close()
            if request_id is not None:  # fails the request now, not at its timeout, if no answer came
                raise ConnectionError(f"HTTP {status}, and no answer to request {request_id}")
        except (MCPError, OSError, ValueError, asyncio.IncompleteReadError) as e:
            future = self.pending.get(request_id)
            if future and not future.done():
                future.set_exception(e if isinstance(e, MCPError) else ConnectionError(f"HTTP request failed: {e!r}"))

    def receive(self, text, request_id, status=200):
        """One message from the server: a response completes its request, progress goes to its handler."""
        if self.trace:
            self.trace("←", text)
        try:
            message = json.loads(text)
            assert isinstance(message, dict)
        except (ValueError, AssertionError):  # not JSON-RPC: a proxy's error page, or an older server
            raise MCPError(INVALID_REQUEST, f"HTTP {status}: {text[:200]}") from None
        if "id" in message and message["id"] is None:  # an error before the server could read the id
            message["id"] = request_id
        reply = self.on_message(message)
        if reply:  # a legacy server's request: refused, as on stdio
            asyncio.ensure_future(self.post(reply))

    async def close(self):
        for task in list(self.posts.values()):
            task.cancel()
        if self.session_id:  # the spec: a client that is done SHOULD end its session
            try:
                headers = {"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": self.protocol_version}
                _, _, _, writer = await http_request(self.url, "DELETE", headers)
                writer.close()
            except OSError:
                pass
            self.session_id = None
        self.failure = "the client was closed"
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError(self.failure))


async def http_request(url, method, headers, body=b""):
    """Send one request on a new connection: (status, lower-case headers, body chunks, writer to close)."""
    reader, writer = await asyncio.open_connection(url.hostname, url.port or (443 if url.scheme == "https" else 80),
                                                   ssl=url.scheme == "https", limit=MAX_MESSAGE_BYTES + 1024)
    try:
        host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
        host = host if url.port is None else f"{host}:{url.port}"
        lines = [f"{method} {url.path or '/'}{'?' + url.query if url.query else ''} HTTP/1.1", f"Host: {host}",
                 f"Content-Length: {len(body)}", "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        status_line = (await reader.readline()).decode("latin-1")
        response_headers = {}
        while (line := (await reader.readline()).decode("latin-1").strip()):
            name, _, value = line.partition(":")
            response_headers[name.strip().lower()] = value.strip()
        status = status_line.split(" ")[1] if status_line.startswith("HTTP/") else ""
        if not status.isdigit():
            raise ConnectionError(f"no HTTP response from {url.netloc}")
        return int(status), response_headers, body_chunks(reader, response_headers), writer
    except BaseException:
        writer.close()
        raise


async def body_chunks(reader, headers):
    """The response body as it arrives: chunked, Content-Length, or until the server closes."""
    if "chunked" in headers.get("transfer-encoding", ""):
        while size := int((await reader.readline()).split(b";")[0], 16):
            yield await reader.readexactly(size)
            await reader.readexactly(2)  # the CRLF after each chunk
    elif "content-length" in headers:
        yield await reader.readexactly(int(headers["content-length"]))
    else:
        while chunk := await reader.read(65536):
            yield chunk


async def sse_events(chunks):
    """The data of each event in an SSE stream (comments and other fields are skipped)."""
    buffer, data = b"", []
    async for chunk in chunks:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            line = line.rstrip(b"\r").decode("utf-8")
            if not line and data:  # a blank line ends an event
                yield "\n".join(data)
                data = []
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
