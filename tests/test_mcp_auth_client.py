"""The client half of MCP authorization (mcp_auth.py part 2, through client.py's HTTPClient):
against the official SDK's own authorization server and MCP server (tests/sdk_auth_server.py),
as `python client.py --url` with a browser, and against hostile servers that must get no login.
The conformance suite's auth/* scenarios are in tests/test_conformance.py."""

import asyncio
import http.client
import http.server
import json
import os
import shlex
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))
import mcp_auth  # noqa: E402
from client import HTTPClient  # noqa: E402


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def approve(url, redirect_uri):
    """The user's part when the authorization server approves at once: its redirect's Location."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("GET", f"{parts.path}?{parts.query}")
    location = connection.getresponse().getheader("Location", "")
    connection.close()
    assert location.startswith(redirect_uri), location
    return location


def never(url, redirect_uri):
    raise AssertionError("the client asked the user to log in")


@pytest.fixture(scope="module")
def sdk_server():
    """tests/sdk_auth_server.py on a free port: its /mcp URL, once it answers."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "sdk_auth_server.py"),
                                str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, "tests/sdk_auth_server.py exited"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


async def whoami_twice(url, oauth):
    async with HTTPClient(url, auth=oauth) as client:
        first, second = [json.loads((await client.call_tool("whoami"))["content"][0]["text"])
                         for _ in range(2)]
        return client.era, first, second


def test_our_client_logs_in_to_the_sdk_server_refreshes_and_keeps_its_tokens(sdk_server,
                                                                             tmp_path):
    token_file, logged = tmp_path / "tokens.json", []
    oauth = mcp_auth.OAuthClient(on_authorize=approve, token_file=str(token_file),
                                 redirect_uri="http://127.0.0.1:3000/callback", log=logged.append)
    era, first, second = asyncio.run(whoami_twice(sdk_server, oauth))
    assert era == "modern"  # the SDK's server/discover answered once logged in
    assert first["scopes"] == ["mcp:read"]  # from the challenge and the resource's metadata
    assert first["resource"] == sdk_server  # RFC 8707: the token is for this server only
    # Its tokens expire within REFRESH_EARLY: each request refreshes first.
    assert second["refreshed"] > first["refreshed"] >= 1
    assert logged[0] == f"{sdk_server} asks for a login (HTTP 401); finding its metadata"
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    stored = json.loads(token_file.read_text())
    issuer = sdk_server.removesuffix("/mcp")
    token = stored[issuer]["tokens"][sdk_server]
    assert stored[issuer]["client"]["client_id"] == first["client_id"]
    secrets = [token["access_token"], token["refresh_token"],
               stored[issuer]["client"].get("client_secret") or "no secret"]
    assert not any(secret in line for line in logged for secret in secrets)
    # A new client with the same file: the first 401 finds the stored registration and refresh
    # token for that server: no registration, and no user.
    logged.clear()
    again = mcp_auth.OAuthClient(on_authorize=never, token_file=str(token_file),
                                 redirect_uri="http://127.0.0.1:3000/callback", log=logged.append)
    _, first, _ = asyncio.run(whoami_twice(sdk_server, again))
    assert first["client_id"] == stored[issuer]["client"]["client_id"]
    assert logged == [f"{sdk_server} asks for a login (HTTP 401); finding its metadata"]


BROWSER = """import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=30).read()  # follows the redirects, as a browser does
"""


def test_client_py_url_logs_in_with_the_browser_and_says_so(sdk_server, tmp_path):
    # The default login: webbrowser opens the page (BROWSER: a program that follows redirects,
    # as a browser does), and the redirect comes back to the loopback port it waits on.
    (tmp_path / "browser.py").write_text(BROWSER)
    # webbrowser splits BROWSER as a shell would: a checkout at a path with a space is quoted.
    browser = f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'browser.py'))} %s"
    env = {**os.environ, "BROWSER": browser}
    done = subprocess.run([sys.executable, str(ROOT / "client.py"), "--url", sdk_server],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "whoami" in done.stdout and "Traceback" not in done.stderr
    issuer = sdk_server.removesuffix("/mcp")
    for line in [f"mcp_auth: {sdk_server} asks for a login (HTTP 401); finding its metadata",
                 f"mcp_auth: registering with {issuer}",
                 f"mcp_auth: asking you to log in at {issuer} for mcp:read",
                 "mcp_auth: log in with your browser; if none opens, go to "
                 f"{issuer}/authorize?response_type=code&",
                 f"mcp_auth: exchanging the code for a token at {issuer}"]:
        assert line in done.stderr, done.stderr


def test_the_browser_login_waits_a_bounded_time():
    code = ("import mcp_auth\n"
            "try:\n"
            f"    mcp_auth.browser_login('http://127.0.0.1:9/authorize', "
            f"'http://127.0.0.1:{free_port()}/callback', timeout=1)\n"
            "except mcp_auth.AuthError as e:\n"
            "    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={**os.environ, "BROWSER": "true"})
    assert done.stdout == "no login within 1 seconds\n", done.stderr


# --- Hostile servers: each must end in one clear error, before any code reaches a token ---

class Hostile:
    """A resource server and authorization server in one, on loopback, wrong in one way."""

    def __init__(self, flaw):
        self.flaw, self.requests = flaw, []
        hostile = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                hostile.requests.append(self.path)
                document = hostile.document(urllib.parse.urlsplit(self.path).path)
                if document is None:
                    return self.reply(404, b"{}")
                if urllib.parse.urlsplit(self.path).path == "/authorize":
                    return self.reply(302, b"", {"Location": document})
                self.reply(200, document if isinstance(document, bytes)
                           else json.dumps(document).encode())

            def do_POST(self):
                hostile.requests.append(self.path)
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/mcp":
                    challenge = f'Bearer resource_metadata="{hostile.base}/prm"'
                    return self.reply(401, b"{}", {"WWW-Authenticate": challenge})
                self.reply(201, json.dumps({"client_id": "c1"}).encode())

            def reply(self, status, body, headers=()):
                self.send_response(status)
                for name, value in dict(headers).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def document(self, path):
        if path == "/prm":
            resource = "https://elsewhere.example/mcp" if self.flaw == "resource" else \
                f"{self.base}/mcp"
            return {"resource": resource, "authorization_servers": [self.base]}
        if path == "/.well-known/oauth-authorization-server":
            if self.flaw == "huge":
                return b'{"issuer": "' + b"x" * (mcp_auth.MAX_AUTH_BYTES + 1) + b'"}'
            return {"issuer": self.base, "authorization_endpoint": f"{self.base}/authorize",
                    "token_endpoint": f"{self.base}/token",
                    "registration_endpoint": f"{self.base}/register",
                    "code_challenge_methods_supported": ["plain"] if self.flaw == "plain"
                    else ["S256"]}
        if path == "/authorize":
            return "http://127.0.0.1:3000/callback?code=stolen&state=not-yours"
        return None


@pytest.mark.parametrize("flaw, error", [
    ("resource", "login failed: the metadata is for 'https://elsewhere.example/mcp', not "),
    ("plain", "has no metadata naming PKCE with S256"),
    ("huge", "has no metadata naming PKCE with S256"),  # too big: as if it had none
    ("state", "login failed: the authorization failed: no code, or the wrong state"),
])
def test_a_hostile_server_gets_no_login_and_one_clear_error(flaw, error):
    hostile = Hostile(flaw)
    oauth = mcp_auth.OAuthClient(on_authorize=approve, log=lambda text: None,
                                 redirect_uri="http://127.0.0.1:3000/callback")

    async def connect():
        async with HTTPClient(f"{hostile.base}/mcp", auth=oauth, probe_timeout=20):
            pass
    try:
        with pytest.raises(ConnectionError) as failure:
            asyncio.run(connect())
    finally:
        hostile.server.shutdown()
    assert error in str(failure.value) and "\n" not in str(failure.value)
    assert "/token" not in hostile.requests  # no code was ever sent anywhere
    assert ("/authorize" in " ".join(hostile.requests)) == (flaw == "state")
