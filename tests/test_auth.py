"""Authorization on Streamable HTTP, the server's side (issue 24): mcp_auth part 1, mcp_http's hooks
and server.py's flags. Wire tests send raw HTTP and compare the exact status line, challenge and
body: every refusal on every kind of request (POST, GET, DELETE, a notification), a valid token in
any case of the scheme, the metadata documents, a session bound to its caller. Then the two checks
that ship (a token file; RFC 7662 introspection against an authorization server this file runs on
loopback), and the official SDK's OAuth client logging in against our server through that server.
"""
import asyncio, base64, contextlib, hashlib, json, secrets, socket, subprocess, sys, threading, time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mcp_auth  # noqa: E402
import mcp_http  # noqa: E402
from mcp_min import Context, Server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESOURCE = "https://mcp.example.com/mcp"
METADATA_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
SCOPE = "mcp:tools"
LATER = time.time() + 3600
ALICE = {"subject": "alice", "scopes": [SCOPE, "mcp:extra"], "expires_at": LATER}
TOKENS = {  # the caller's check below: token -> identity
    "alice-token": ALICE,
    "alice-refreshed": {**ALICE, "scopes": [SCOPE]},
    "bob-token": {"subject": "bob", "scopes": [SCOPE], "expires_at": None},
    "expired-token": {**ALICE, "expires_at": 1_000_000_000.0},
    "elsewhere-token": {**ALICE, "audience": ["https://other.example.com/mcp"]},
    "narrow-token": {**ALICE, "scopes": ["mcp:read"]},
}
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}
DISCOVER = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                       "params": {"_meta": META}}).encode()
MODERN_HEADERS = [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "server/discover")]

server = Server("auth-test", "1.0")


@server.tool()
def echo(text: str) -> str:
    """Says the text back."""
    return text


@server.tool()
def whoami(ctx: Context) -> dict:
    """The caller's identity, as the token check found it."""
    return {"auth": ctx.auth}


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Asks the user for a name (elicitation), then says who asked and what came back."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answer = await ctx.elicit("Your name?", schema, key="name")
    return f"{ctx.auth['subject']} was told {answer['content']['name']}"


def serve_in_thread(transport):
    """Serve `transport` on a loopback port in a thread of its own; returns (port, stop)."""
    loop = asyncio.new_event_loop()
    listener = loop.run_until_complete(transport.start("127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def stop():
        async def shutdown():
            listener.close()
            tasks = asyncio.all_tasks() - {asyncio.current_task()}
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
    return listener.sockets[0].getsockname()[1], stop


@pytest.fixture(scope="module")
def guarded():
    auth = mcp_auth.ResourceServer(TOKENS.get, RESOURCE, ["https://auth.example.com"], [SCOPE])
    port, stop = serve_in_thread(mcp_http.HTTPTransport(server, auth=auth))
    yield SimpleNamespace(port=port)
    stop()


def raw(port, method, target, headers=(), body=b""):
    """One raw HTTP/1.1 request -> (status line, [header lines], body bytes). A GET stream that
    opens (200, text/event-stream) stays open: its head is all there is to read."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if body or method == "POST":
        lines += ["Content-Type: application/json", "Accept: application/json, text/event-stream",
                  f"Content-Length: {len(body)}"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
            if method == "GET" and b"text/event-stream" in data.partition(b"\r\n\r\n")[0]:
                break
    head, _, body = data.partition(b"\r\n\r\n")
    status, *header_lines = head.decode("latin-1").split("\r\n")
    return status, header_lines, body


def header(header_lines, name):
    values = [line.partition(": ")[2] for line in header_lines
              if line.lower().startswith(name.lower() + ":")]
    assert len(values) <= 1
    return values[0] if values else None


def initialize(port, token="alice-token", scheme="Bearer"):
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}).encode()
    status, lines, _ = raw(port, "POST", "/mcp", [("Authorization", f"{scheme} {token}")], body)
    assert status == "HTTP/1.1 200 OK"
    return header(lines, "Mcp-Session-Id")


def kinds_of_request(session_id):
    """(name, method, target, headers, body) of each kind of request the check must guard."""
    notification = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    session = [("Mcp-Session-Id", session_id), ("MCP-Protocol-Version", "2025-11-25")]
    return [("POST", "POST", "/mcp", MODERN_HEADERS, DISCOVER),
            ("GET", "GET", "/mcp", [("Accept", "text/event-stream")] + session, b""),
            ("notification", "POST", "/mcp", session, notification),
            ("DELETE", "DELETE", "/mcp", session, b"")]  # last: it ends the session


CHALLENGE = f'Bearer resource_metadata="{METADATA_URL}", scope="{SCOPE}"'
REFUSALS = [  # (what, extra headers, query, status line, challenge, message)
    ("no token", [], "", "HTTP/1.1 401 Unauthorized", CHALLENGE,
     "this server needs a bearer token (OAuth 2.1); the WWW-Authenticate header says where to "
     "get one"),
    ("another scheme", [("Authorization", "Basic YWxpY2U6c2VjcmV0")], "",
     "HTTP/1.1 401 Unauthorized", CHALLENGE,
     "this server needs a bearer token (OAuth 2.1); the WWW-Authenticate header says where to "
     "get one"),
    ("a wrong token", [("Authorization", "Bearer wrong-token")], "", "HTTP/1.1 401 Unauthorized",
     CHALLENGE + ', error="invalid_token", error_description="the bearer token is not valid"',
     "the bearer token is not valid"),
    ("an expired token", [("Authorization", "Bearer expired-token")], "",
     "HTTP/1.1 401 Unauthorized",
     CHALLENGE + ', error="invalid_token", error_description="the bearer token has expired"',
     "the bearer token has expired"),
    ("a token for another resource", [("Authorization", "Bearer elsewhere-token")], "",
     "HTTP/1.1 401 Unauthorized", CHALLENGE + ', error="invalid_token", '
     'error_description="the bearer token is for another resource"',
     "the bearer token is for another resource"),
    ("a token in the query", [], "?access_token=alice-token", "HTTP/1.1 400 Bad Request",
     CHALLENGE + ', error="invalid_request", error_description="a token never goes in the URL: '
     'send it in the Authorization header"',
     "a token never goes in the URL: send it in the Authorization header"),
    ("a token in the query beside the header", [("Authorization", "Bearer alice-token")],
     "?x=1&access_token=alice-token", "HTTP/1.1 400 Bad Request",
     CHALLENGE + ', error="invalid_request", error_description="a token never goes in the URL: '
     'send it in the Authorization header"',
     "a token never goes in the URL: send it in the Authorization header"),
    ("two Authorization headers", [("Authorization", "Bearer alice-token"),
                                   ("Authorization", "Bearer bob-token")], "",
     "HTTP/1.1 400 Bad Request", CHALLENGE + ', error="invalid_request", '
     'error_description="send one Authorization header, holding one bearer token"',
     "send one Authorization header, holding one bearer token"),
    ("a token with a space", [("Authorization", "Bearer alice token")], "",
     "HTTP/1.1 400 Bad Request", CHALLENGE + ', error="invalid_request", '
     'error_description="send one Authorization header, holding one bearer token"',
     "send one Authorization header, holding one bearer token"),
    ("too little scope", [("Authorization", "Bearer narrow-token")], "", "HTTP/1.1 403 Forbidden",
     CHALLENGE + ', error="insufficient_scope", error_description="the bearer token lacks a '
     'scope this server needs"', "the bearer token lacks a scope this server needs"),
]


@pytest.mark.parametrize("what, headers, query, status, challenge, message", REFUSALS,
                         ids=[refusal[0] for refusal in REFUSALS])
def test_every_kind_of_request_is_refused_without_a_valid_token(guarded, what, headers, query,
                                                                 status, challenge, message):
    session_id = initialize(guarded.port)  # a real session: a refusal is not for want of one
    for kind, method, target, kind_headers, body in kinds_of_request(session_id):
        got_status, lines, got_body = raw(guarded.port, method, target + query,
                                          kind_headers + headers, body)
        assert (kind, got_status) == (kind, status)
        assert header(lines, "WWW-Authenticate") == challenge, kind
        phrase = status.split(" ", 2)[2]
        assert json.loads(got_body) == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": f"{phrase}: {message}"}}, kind
        for token in TOKENS:  # never echoed, in a header or in the body
            assert token not in "\n".join(lines) and token.encode() not in got_body
    # The session was never touched by the refusals: DELETE with the token still ends it.
    session = [("Mcp-Session-Id", session_id), ("Authorization", "Bearer alice-token")]
    assert raw(guarded.port, "DELETE", "/mcp", session)[0] == "HTTP/1.1 200 OK"


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_a_valid_token_is_accepted_on_every_kind_of_request(guarded, scheme):
    session_id = initialize(guarded.port, scheme=scheme)
    token = [("Authorization", f"{scheme}  alice-token")]  # RFC 6750: one or more spaces
    statuses = {kind: raw(guarded.port, method, target, kind_headers + token, body)[0]
                for kind, method, target, kind_headers, body in kinds_of_request(session_id)}
    assert statuses == {"POST": "HTTP/1.1 200 OK", "notification": "HTTP/1.1 202 Accepted",
                        # past the token check, GET opens the session's stream
                        "GET": "HTTP/1.1 200 OK", "DELETE": "HTTP/1.1 200 OK"}
    status, _, body = raw(guarded.port, "POST", "/mcp", MODERN_HEADERS + token, DISCOVER)
    info = json.loads(body)["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert info["name"] == "auth-test"


def test_the_metadata_documents_are_public(guarded):
    expected = {"resource": RESOURCE, "authorization_servers": ["https://auth.example.com"],
                "bearer_methods_supported": ["header"], "scopes_supported": [SCOPE]}
    for path in ("/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-protected-resource"):
        status, lines, body = raw(guarded.port, "GET", path)
        assert status == "HTTP/1.1 200 OK" and header(lines, "Content-Type") == "application/json"
        assert json.loads(body) == expected
    # Other paths, and other methods on these paths, are not public.
    assert raw(guarded.port, "GET", "/.well-known/oauth-protected-resource/x")[0] == \
        "HTTP/1.1 404 Not Found"
    assert raw(guarded.port, "POST", "/.well-known/oauth-protected-resource", body=b"{}")[0] == \
        "HTTP/1.1 404 Not Found"


def test_a_legacy_session_stays_with_the_caller_that_opened_it(guarded):
    session_id = initialize(guarded.port, token="alice-token")
    tools_list = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()

    def call(token):
        return raw(guarded.port, "POST", "/mcp", [("Mcp-Session-Id", session_id),
                                                  ("Authorization", f"Bearer {token}")],
                   tools_list)
    status, _, body = call("bob-token")  # bob's own valid token, alice's session id: not found
    assert status == "HTTP/1.1 404 Not Found"
    assert json.loads(body)["error"]["message"] == \
        "Not Found: unknown or ended session; send initialize again"
    assert call("alice-token")[0] == "HTTP/1.1 200 OK"
    assert call("alice-refreshed")[0] == "HTTP/1.1 200 OK"  # a new token of the same subject
    bob_session = initialize(guarded.port, token="bob-token")
    assert raw(guarded.port, "DELETE", "/mcp", [("Mcp-Session-Id", bob_session),
                                                ("Authorization", "Bearer alice-token")])[0] \
        == "HTTP/1.1 404 Not Found"


def test_a_failing_check_is_a_503_and_one_log_line_without_the_token(capfd):
    def broken(token):
        raise ConnectionRefusedError(111, "Connection refused")
    auth = mcp_auth.ResourceServer(broken, RESOURCE)
    port, stop = serve_in_thread(mcp_http.HTTPTransport(server, auth=auth))
    try:
        status, lines, body = raw(port, "POST", "/mcp", MODERN_HEADERS + [
            ("Authorization", "Bearer secret-token-42")], DISCOVER)
    finally:
        stop()
    assert status == "HTTP/1.1 503 Service Unavailable" and header(lines, "Retry-After") == "5"
    assert json.loads(body)["error"]["message"] == \
        "Service Unavailable: the token cannot be checked now; try again later"
    logged = capfd.readouterr().err
    assert logged == ("mcp_auth: the token check failed: ConnectionRefusedError(111, "
                      "'Connection refused')\n")


def test_settings_that_cannot_work_are_refused_when_made():
    with pytest.raises(ValueError, match="absolute http"):
        mcp_auth.ResourceServer(TOKENS.get, "mcp.example.com/mcp")
    with pytest.raises(ValueError, match="without a #fragment"):
        mcp_auth.ResourceServer(TOKENS.get, RESOURCE + "#x")
    with pytest.raises(ValueError, match="scope"):
        mcp_auth.ResourceServer(TOKENS.get, RESOURCE, scopes=['a"b'])
    with pytest.raises(ValueError, match="must be https"):
        mcp_auth.introspection_check("http://auth.example.com/introspect", RESOURCE)
    mcp_auth.introspection_check("http://127.0.0.1:9/introspect", RESOURCE)  # loopback: http ok
    # The metadata's address when the resource is a bare origin.
    assert mcp_auth.ResourceServer(TOKENS.get, "https://a.example").metadata_url == \
        "https://a.example/.well-known/oauth-protected-resource"


# --- The identity reaches the tools (ctx.auth), and what is bound to it ---

def tool_call(name, request_id=1, capabilities=None, **params):
    """A 2026-07-28 tools/call and its headers."""
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": capabilities or {}}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": {}, "_meta": meta, **params}}
    return [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"),
            ("Mcp-Name", name)], json.dumps(body).encode()


def test_tools_see_the_callers_identity_as_ctx_auth(guarded):
    headers, body = tool_call("whoami")
    status, _, answer = raw(guarded.port, "POST", "/mcp", headers + [
        ("Authorization", "Bearer alice-token")], body)
    assert status == "HTTP/1.1 200 OK"
    assert json.loads(answer)["result"]["structuredContent"] == {"auth": ALICE}
    # Legacy: the session's identity is the newest token's (here with fewer scopes).
    session_id = initialize(guarded.port)
    legacy = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "whoami", "arguments": {}}}).encode()
    status, _, answer = raw(guarded.port, "POST", "/mcp", [
        ("Mcp-Session-Id", session_id), ("Authorization", "Bearer alice-refreshed")], legacy)
    assert json.loads(answer)["result"]["structuredContent"] == {
        "auth": TOKENS["alice-refreshed"]}


def test_another_callers_retry_with_my_request_state_is_refused(guarded):
    # 2026-07-28: the question comes back as input_required with a sealed requestState, bound to
    # the subject that asked. Bob's retry with Alice's state is refused; Alice's goes through.
    capabilities = {"elicitation": {}}
    headers, body = tool_call("ask_name", capabilities=capabilities)
    status, _, answer = raw(guarded.port, "POST", "/mcp", headers + [
        ("Authorization", "Bearer alice-token")], body)
    result = json.loads(answer)["result"]
    assert status == "HTTP/1.1 200 OK" and result["resultType"] == "input_required"
    answers = {"name": {"action": "accept", "content": {"name": "Bo"}}}
    headers, retry = tool_call("ask_name", 2, capabilities, inputResponses=answers,
                               requestState=result["requestState"])
    status, _, answer = raw(guarded.port, "POST", "/mcp", headers + [
        ("Authorization", "Bearer bob-token")], retry)
    assert (status, json.loads(answer)["error"]) == ("HTTP/1.1 400 Bad Request", {
        "code": -32602, "message": "Invalid params: invalid, expired or misplaced requestState"})
    status, _, answer = raw(guarded.port, "POST", "/mcp", headers + [
        ("Authorization", "Bearer alice-refreshed")], retry)  # the same subject, a new token
    assert json.loads(answer)["result"]["content"][0]["text"] == "alice was told Bo"


def test_another_callers_answer_to_my_legacy_question_goes_nowhere(guarded):
    # Legacy: elicitation/create goes out on Alice's call's SSE stream. Bob, with his own valid
    # token and Alice's session id, POSTs an answer: 202, and it reaches nobody. Alice's does.
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"}}}).encode()
    alice = ("Authorization", "Bearer alice-token")
    status, lines, _ = raw(guarded.port, "POST", "/mcp", [alice], body)
    session = ("Mcp-Session-Id", header(lines, "Mcp-Session-Id"))
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "ask_name", "arguments": {}}}).encode()
    connection = socket.create_connection(("127.0.0.1", guarded.port), timeout=10)
    connection.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{alice[0]}: {alice[1]}\r\n"
                        f"{session[0]}: {session[1]}\r\nContent-Type: application/json\r\n"
                        "Accept: application/json, text/event-stream\r\n"
                        f"Content-Length: {len(call)}\r\n\r\n").encode() + call)
    stream = connection.makefile("rb")
    while not (line := stream.readline()).startswith(b"data:"):
        pass
    question = json.loads(line[5:])
    assert question["method"] == "elicitation/create"

    def answer(token, name):
        response = json.dumps({"jsonrpc": "2.0", "id": question["id"], "result": {
            "action": "accept", "content": {"name": name}}}).encode()
        return raw(guarded.port, "POST", "/mcp", [session, ("Authorization", f"Bearer {token}")],
                   response)[0]
    assert answer("bob-token", "Mallory") == "HTTP/1.1 202 Accepted"
    assert answer("alice-token", "Bo") == "HTTP/1.1 202 Accepted"
    while not (line := stream.readline()).startswith(b"data:"):
        pass
    connection.close()
    assert json.loads(line[5:])["result"]["content"][0]["text"] == "alice was told Bo"


# --- The token file ---

def test_a_token_file(tmp_path):
    path = tmp_path / "tokens"
    path.write_text("# the tokens of this deployment\n\n  first-token-0123456789  \n"
                    "# second-token-that-is-commented\nthird-token-ABCDEFGHIJ==\n")
    check = mcp_auth.token_file_check(path, scopes=[SCOPE])
    first = check("first-token-0123456789")
    digest = hashlib.sha256(b"first-token-0123456789").hexdigest()
    assert first == {"subject": "token-" + digest[:16], "scopes": [SCOPE]}
    assert check("third-token-ABCDEFGHIJ==")["subject"] != first["subject"]
    for wrong in ("second-token-that-is-commented", "first-token-012345678", "",
                  "first-token-01234567890", "# the tokens of this deployment"):
        assert check(wrong) is None


@pytest.mark.parametrize("text, error", [
    (None, "cannot read the token file {path}: No such file or directory"),
    (b"# only a comment\n\n", "the token file {path} holds no token, or is over 1 MiB"),
    (b"short\n", "{path}, line 1: a token is 16 or more letters, digits and -._~+/ (RFC 6750)"),
    (b"# ok\nlong-enough-but has a space\n",
     "{path}, line 2: a token is 16 or more letters, digits and -._~+/ (RFC 6750)"),
    (b"\xff\xfe-not-utf-8-at-all-0123", "cannot read the token file {path}: 'utf-8' codec can't "
     "decode byte 0xff in position 0: invalid start byte"),
    (b"x" * (1024 * 1024 + 1), "the token file {path} holds no token, or is over 1 MiB"),
], ids=["missing", "no token", "short", "a space", "not UTF-8", "over 1 MiB"])
def test_a_token_file_that_cannot_work_is_one_clear_error(tmp_path, text, error):
    path = tmp_path / "tokens"
    if text is not None:
        path.write_bytes(text)
    with pytest.raises(ValueError) as raised:
        mcp_auth.token_file_check(path)
    assert str(raised.value) == error.format(path=path)


# --- An authorization server on loopback: metadata, registration, authorize, token, introspect ---

class AuthorizationServer:
    """A small OAuth 2.1 authorization server (stdlib), enough for the SDK's client to log in:
    RFC 8414 metadata, RFC 7591 registration, the authorization endpoint (it approves at once:
    no user), the token endpoint with PKCE, and RFC 7662 introspection for the resource server,
    which must authenticate as RS_ID:RS_SECRET."""
    RS_ID, RS_SECRET = "resource-server", "rs-secret"

    def __init__(self):
        self.tokens = {}  # access token -> its introspection answer
        self.codes, self.clients = {}, {}
        self.introspected, self.delay, self.padding, self.jwks = [], 0.0, 0, {"keys": []}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def handle(self):  # a client that timed out and left: nothing to tell it
                with contextlib.suppress(OSError):
                    super().handle()

            def reply(self, status, document=None, location=None):
                data = json.dumps(document).encode() if document is not None else b""
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                path, _, query = self.path.partition("?")
                if path == "/.well-known/oauth-authorization-server":
                    return self.reply(200, owner.metadata())
                if path == "/jwks.json":  # the keys that sign JWT access tokens
                    return self.reply(200, owner.jwks)
                if path == "/authorize":
                    return self.reply(302, location=owner.authorize(dict(
                        urllib.parse.parse_qsl(query))))
                self.reply(404, {"error": "not_found"})

            def do_POST(self):
                data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path.startswith("/moved-"):  # /moved-307: a redirect to /introspect
                    self.send_response(int(self.path[7:]))
                    self.send_header("Location", "/introspect")
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                if self.path == "/register":
                    return self.reply(201, owner.register(json.loads(data)))
                form = dict(urllib.parse.parse_qsl(data.decode()))
                if self.path == "/token":
                    return self.reply(*owner.token(form))
                if self.path == "/introspect":
                    return self.reply(*owner.introspect(form, self.headers.get("Authorization")))
                self.reply(404, {"error": "not_found"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def metadata(self):
        return {"issuer": self.issuer, "authorization_endpoint": self.issuer + "/authorize",
                "token_endpoint": self.issuer + "/token",
                "registration_endpoint": self.issuer + "/register",
                "introspection_endpoint": self.issuer + "/introspect",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post", "none"],
                "authorization_response_iss_parameter_supported": True}

    def register(self, metadata):
        client_id = "client-" + secrets.token_hex(8)
        self.clients[client_id] = metadata
        return {**metadata, "client_id": client_id, "client_secret": secrets.token_hex(16),
                "client_id_issued_at": int(time.time())}

    def authorize(self, params):
        assert params["client_id"] in self.clients and params["code_challenge_method"] == "S256"
        code = secrets.token_urlsafe(16)
        self.codes[code] = params
        query = urllib.parse.urlencode({"code": code, "state": params["state"],
                                        "iss": self.issuer})
        return f"{params['redirect_uri']}?{query}"

    def token(self, form):
        params = self.codes.pop(form.get("code"), None)
        digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
        challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        if params is None or challenge != params["code_challenge"] \
                or form.get("resource") != params.get("resource"):
            return 400, {"error": "invalid_grant"}
        return 200, self.issue(params.get("resource"), params.get("scope", ""),
                               params["client_id"])

    def issue(self, audience, scope, client_id="client", subject="user-1", lifetime=3600):
        token = secrets.token_urlsafe(32)
        self.tokens[token] = {"active": True, "sub": subject, "client_id": client_id,
                              "scope": scope, "aud": audience, "exp": int(time.time()) + lifetime,
                              "iss": self.issuer}
        return {"access_token": token, "token_type": "Bearer", "expires_in": lifetime,
                "scope": scope}

    def introspect(self, form, authorization):
        expected = base64.b64encode(f"{self.RS_ID}:{self.RS_SECRET}".encode()).decode()
        if authorization != f"Basic {expected}":
            return 401, {"error": "invalid_client"}
        self.introspected.append(form.get("token"))
        time.sleep(self.delay)
        answer = self.tokens.get(form.get("token"), {"active": False})
        return 200, {**answer, **({"padding": "x" * self.padding} if self.padding else {})}

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def authorization_server():
    authorization = AuthorizationServer()
    yield authorization
    authorization.close()


def introspection(authorization, resource=RESOURCE, **options):
    return mcp_auth.introspection_check(authorization.issuer + "/introspect", resource,
                                        AuthorizationServer.RS_ID, AuthorizationServer.RS_SECRET,
                                        **options)


def test_introspection_checks_the_audience_and_caches_answers(authorization_server):
    check = introspection(authorization_server)
    good = authorization_server.issue(RESOURCE, "mcp:tools mcp:extra")["access_token"]
    elsewhere = authorization_server.issue("https://other.example.com/mcp", SCOPE)["access_token"]
    listed = authorization_server.issue(["https://x.example", RESOURCE], SCOPE)["access_token"]
    identity = check(good)
    assert identity == {"subject": "user-1", "scopes": ["mcp:tools", "mcp:extra"],
                        "expires_at": authorization_server.tokens[good]["exp"],
                        "client_id": "client", "audience": RESOURCE}
    assert check(elsewhere) is None and check("never-issued") is None
    assert check(listed)["subject"] == "user-1"  # "aud" may be a list that names us
    authorization_server.tokens[good]["active"] = False  # revoked: the cached answer stands
    assert check(good) == identity and check("never-issued") is None
    assert authorization_server.introspected == [good, elsewhere, "never-issued", listed]
    fresh = introspection(authorization_server, cache_seconds=0)
    assert fresh(good) is None  # revocation is seen once the answer is no longer kept


def test_introspection_refuses_what_it_cannot_trust(authorization_server):
    good = authorization_server.issue(RESOURCE, SCOPE)["access_token"]
    wrong_credentials = mcp_auth.introspection_check(
        authorization_server.issuer + "/introspect", RESOURCE, "resource-server", "wrong")
    with pytest.raises(OSError, match="401"):
        wrong_credentials(good)
    for status in (302, 307):  # a redirect never takes the token along
        moved = mcp_auth.introspection_check(authorization_server.issuer + f"/moved-{status}",
                                             RESOURCE, "resource-server", "rs-secret")
        with pytest.raises(OSError):
            moved(good)
    assert authorization_server.introspected == []
    authorization_server.padding = 70_000  # an answer over the 64 KiB bound
    with pytest.raises(ValueError, match="over 65536 bytes"):
        introspection(authorization_server)(good)
    authorization_server.padding, authorization_server.delay = 0, 1.0  # too slow
    with pytest.raises(TimeoutError):
        introspection(authorization_server, timeout=0.2)(good)
    for subjectless in ({"active": True, "aud": RESOURCE},
                        {"active": "true", "sub": "u", "aud": RESOURCE},
                        {"active": True, "sub": "u"}):
        assert mcp_auth.introspected_identity(subjectless, RESOURCE) is None


def test_introspection_end_to_end_over_http(authorization_server):
    check = introspection(authorization_server, resource=RESOURCE)
    auth = mcp_auth.ResourceServer(check, RESOURCE, [authorization_server.issuer], [SCOPE])
    port, stop = serve_in_thread(mcp_http.HTTPTransport(server, auth=auth))
    try:
        tokens = {"good": authorization_server.issue(RESOURCE, SCOPE)["access_token"],
                  "narrow": authorization_server.issue(RESOURCE, "mcp:read")["access_token"],
                  "expired": authorization_server.issue(RESOURCE, SCOPE, lifetime=-10)[
                      "access_token"],
                  "elsewhere": authorization_server.issue("https://x.example/mcp", SCOPE)[
                      "access_token"]}
        statuses = {name: raw(port, "POST", "/mcp", MODERN_HEADERS + [
            ("Authorization", f"Bearer {token}")], DISCOVER)[0] for name, token in tokens.items()}
    finally:
        stop()
    assert statuses == {"good": "HTTP/1.1 200 OK", "narrow": "HTTP/1.1 403 Forbidden",
                        "expired": "HTTP/1.1 401 Unauthorized",
                        "elsewhere": "HTTP/1.1 401 Unauthorized"}


def test_the_readmes_jwt_check(authorization_server):
    # The README's few lines: a JWT access token checked with PyJWT, keys from the issuer's JWKS.
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    signing_key, other_key = (rsa.generate_private_key(public_exponent=65537, key_size=2048)
                              for _ in range(2))
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(signing_key.public_key()))
    authorization_server.jwks = {"keys": [{**public, "kid": "k1", "use": "sig"}]}
    ISSUER = authorization_server.issuer  # noqa: N806 (as the README names it)

    # --- the README's text, from here ---
    keys = jwt.PyJWKClient(ISSUER + "/jwks.json")

    def check_jwt(token):
        try:
            key = keys.get_signing_key_from_jwt(token).key
            claims = jwt.decode(token, key, algorithms=["RS256"], audience=RESOURCE,
                                issuer=ISSUER, options={"require": ["exp", "sub"]})
        except jwt.PyJWTError:
            return None
        return {"subject": claims["sub"], "scopes": claims.get("scope", "").split(),
                "expires_at": claims["exp"], "client_id": claims.get("client_id")}
    auth = mcp_auth.ResourceServer(check_jwt, RESOURCE, [ISSUER], [SCOPE])
    # --- to here ---

    def token(key=signing_key, **claims):
        claims = {"iss": ISSUER, "sub": "carol", "aud": RESOURCE, "scope": SCOPE,
                  "exp": int(time.time()) + 600, **claims}
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})

    def status(token):
        try:
            return auth.authorize(f"Bearer {token}", "")["subject"]
        except mcp_http.HTTPError as refusal:
            return refusal.status, refusal.headers["WWW-Authenticate"].partition("error=")[2]
    invalid = (401, '"invalid_token", error_description="the bearer token is not valid"')
    assert status(token()) == "carol"
    assert status(token(aud="https://other.example.com/mcp")) == invalid
    assert status(token(iss="https://evil.example")) == invalid
    assert status(token(exp=int(time.time()) - 60)) == invalid
    assert status(token(key=other_key)) == invalid
    assert status(jwt.encode({"sub": "x", "aud": RESOURCE, "iss": ISSUER}, None, "none")) == \
        invalid
    assert status(token(scope="mcp:read")) == (403, '"insufficient_scope", error_description='
                                                    '"the bearer token lacks a scope this server '
                                                    'needs"')


# --- Interop: the official SDK's OAuth client logs in and calls a tool ---

def test_the_official_sdk_client_logs_in_and_calls_a_tool(authorization_server):
    import httpx2
    from mcp import Client as SDKClient
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    transport = mcp_http.HTTPTransport(server)
    port, stop = serve_in_thread(transport)
    resource = f"http://127.0.0.1:{port}/mcp"
    check = introspection(authorization_server, resource=resource)
    transport.auth = mcp_auth.ResourceServer(check, resource, [authorization_server.issuer],
                                             [SCOPE])

    class Memory:  # the SDK's TokenStorage
        tokens = client_info = None

        async def get_tokens(self):
            return self.tokens

        async def set_tokens(self, tokens):
            self.tokens = tokens

        async def get_client_info(self):
            return self.client_info

        async def set_client_info(self, client_info):
            self.client_info = client_info
    redirected = {}

    async def open_browser(url):  # the "user" approves: follow the redirect, keep its query
        async with httpx2.AsyncClient() as http:
            location = (await http.get(url)).headers["location"]
        redirected.update(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))

    async def wait_for_redirect():
        return AuthorizationCodeResult(**redirected)

    async def main(mode):
        oauth = OAuthClientProvider(resource, OAuthClientMetadata(
            redirect_uris=["http://127.0.0.1:9/callback"], client_name="sdk interop test"),
            Memory(), open_browser, wait_for_redirect)
        async with httpx2.AsyncClient(auth=oauth) as http:
            async with SDKClient(streamable_http_client(resource, http_client=http),
                                 mode=mode) as client:
                result = await client.call_tool("echo", {"text": "logged in"})
                return result.content[0].text, oauth.context.current_tokens.access_token
    try:
        for mode in ("legacy", MODERN):
            text, token = asyncio.run(main(mode))
            assert text == "logged in"
            assert authorization_server.tokens[token]["aud"] == resource
            assert authorization_server.tokens[token]["scope"] == SCOPE  # the challenge's scope
    finally:
        stop()


# --- server.py's flags ---

def run_server_py(*args):
    return subprocess.run([sys.executable, str(ROOT / "server.py"), "--index", "/nonexistent",
                           *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, error", [
    (["--token-file", "t"], "server: error: OAuth flags such as --token-file need --http: stdio "
     "takes no tokens"),
    (["--http", "0", "--resource", RESOURCE], "server: error: give one token check: --token-file "
     "FILE or --introspection-url URL"),
    (["--http", "0", "--token-file", "t", "--introspection-url", "https://a.example/i"],
     "server: error: give one token check: --token-file FILE or --introspection-url URL"),
    (["--http", "0", "--introspection-url", "https://a.example/i"], "server: error: "
     "--introspection-url needs --authorization-server URL, the token issuer"),
    (["--http", "0", "--introspection-url", "http://a.example/i", "--authorization-server",
      "https://a.example"], "server: error: the introspection URL must be https (tokens are sent "
     "there): 'http://a.example/i'"),
    (["--http", "0", "--token-file", "/nonexistent/tokens"], "server: error: cannot read the "
     "token file /nonexistent/tokens: No such file or directory"),
], ids=["stdio", "no check", "two checks", "no issuer", "plain http", "no token file"])
def test_server_py_refuses_auth_settings_that_cannot_work(args, error):
    finished = run_server_py(*args)
    assert finished.returncode == 2 and finished.stderr.strip().splitlines()[-1] == error


def test_server_py_with_a_token_file(tmp_path):
    (tmp_path / "tokens").write_text("# ours\nserver-py-token-0123456789\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(ROOT / "server.py"), "--index",
                                str(tmp_path / "none"), "--http", str(port), "--token-file",
                                str(tmp_path / "tokens")], stderr=subprocess.PIPE, text=True)
    try:
        while "MCP over HTTP on" not in process.stderr.readline():
            assert process.poll() is None, "server.py --http exited"
        refused = raw(port, "POST", "/mcp", MODERN_HEADERS, DISCOVER)
        accepted = raw(port, "POST", "/mcp", MODERN_HEADERS + [
            ("Authorization", "Bearer server-py-token-0123456789")], DISCOVER)
        metadata = json.loads(raw(port, "GET", "/.well-known/oauth-protected-resource/mcp")[2])
    finally:
        process.terminate()
        process.wait(10)
    assert refused[0] == "HTTP/1.1 401 Unauthorized" and header(refused[1], "WWW-Authenticate") \
        == f'Bearer resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-' \
           'resource/mcp"'
    assert accepted[0] == "HTTP/1.1 200 OK"
    assert metadata == {"resource": f"http://127.0.0.1:{port}/mcp", "authorization_servers": [],
                        "bearer_methods_supported": ["header"]}


def test_our_client_logs_in_against_our_server(authorization_server):
    # client.py's HTTPClient with mcp_auth's OAuthClient (issue 24, part 2) against this server;
    # checked on a merge of both halves. A checkout with only this half skips it.
    if not hasattr(mcp_auth, "OAuthClient"):
        pytest.skip("the client half of mcp_auth (issue 24, part 2) is not in this checkout")
    import urllib.error
    import urllib.request
    from client import HTTPClient
    transport = mcp_http.HTTPTransport(server)
    port, stop = serve_in_thread(transport)
    resource = f"http://127.0.0.1:{port}/mcp"
    check = introspection(authorization_server, resource=resource)
    transport.auth = mcp_auth.ResourceServer(check, resource, [authorization_server.issuer],
                                             [SCOPE])

    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None

    def approve(url, redirect_uri):  # the user's part: this authorization server approves at once
        try:
            urllib.request.build_opener(Stay).open(url, timeout=10)
        except urllib.error.HTTPError as redirect:
            return redirect.headers["Location"]

    async def main():
        logged = []
        oauth = mcp_auth.OAuthClient(on_authorize=approve, log=logged.append)
        async with HTTPClient(resource, auth=oauth) as client:
            return await client.call_tool("whoami", {}), logged
    try:
        result, logged = asyncio.run(main())
    finally:
        stop()
    identity = result["structuredContent"]["auth"]
    assert identity["subject"] == "user-1" and identity["scopes"] == [SCOPE]
    assert identity["audience"] == resource
    assert logged[0] == f"{resource} asks for a login (HTTP 401); finding its metadata"
