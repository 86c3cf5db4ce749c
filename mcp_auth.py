"""mcp_auth: authorization for MCP over Streamable HTTP (OAuth 2.1), standard library only.

Two halves, one for each side of the wire:
  1. The resource server: what mcp_http.serve(..., auth=...) uses to ask every HTTP request for a
     bearer token, check it, and say where to get one (RFC 9728 metadata, WWW-Authenticate).
  2. The client: what HTTPClient in client.py runs by itself on a 401 or a 403: discovery,
     registration, PKCE, the token request, refresh and step-up.
Stdio never uses any of this: the spec says a stdio server takes its credentials from the
environment.
Spec: https://modelcontextprotocol.io/specification/2026-07-28/basic/authorization
"""
import base64, hashlib, hmac, json, re, sys, time, urllib.parse, urllib.request

from mcp_http import HTTPError


# === 1. The resource server (spec: Authorization, "Authorization Server Discovery") ===

WELL_KNOWN = "/.well-known/oauth-protected-resource"  # RFC 9728, 3: the metadata's well-known path
TOKEN = r"[A-Za-z0-9._~+/-]+=*"  # RFC 6750, 2.1: a b64token
# "Bearer" (any case), spaces, then one token. Two Authorization headers arrive joined by ", "
# (RFC 9110, 5.3), and neither a comma nor a space fits in a token: they are refused too.
BEARER = re.compile(r"(?i:bearer) +(" + TOKEN + ")")
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749, 3.3: what a scope may hold
LOOPBACK = ("localhost", "127.0.0.1", "::1")
MIN_TOKEN_LENGTH = 16  # a static token shorter than this can be guessed
MAX_TOKEN_FILE_BYTES = 1024 * 1024
MAX_INTROSPECTION_BYTES = 64 * 1024  # an introspection answer is a small JSON object
INTROSPECTION_TIMEOUT = 5.0  # seconds the authorization server gets to answer
INTROSPECTION_CACHE_SECONDS = 30.0  # how long an answer is reused: a revoked token lives this long
MAX_CACHED = 10_000  # cached answers; when full, the cache starts over


def checked_url(url, what, tokens_go_there=False):
    """An absolute http(s) URL without a fragment (RFC 8707, 2), else ValueError. A URL that
    tokens are sent to must be https, or http on loopback."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise ValueError(f"the {what} must be an absolute http(s) URL without a #fragment: {url!r}")
    if tokens_go_there and parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise ValueError(f"the {what} must be https (tokens are sent there): {url!r}")
    return url


class ResourceServer:
    """The server's side of OAuth 2.1: mcp_http.serve(server, ..., auth=ResourceServer(...)) asks
    every HTTP request (POST, GET, DELETE; requests and notifications alike) for a bearer token.

    check(token) -> the caller's identity, or None for a token that is not valid. The identity is
    a dict: "subject" (a str, required: who the caller is), "scopes" (the list it was granted),
    "expires_at" (seconds since the epoch, or None), "audience" (optional: a str or a list; if
    given, it must name `resource`), anything else the tools may want ("client_id"...). It reaches
    them as ctx.auth. check runs in a thread: it may block, as an introspection request does.
    resource: the canonical URL of the MCP endpoint that clients use (RFC 8707), such as
    https://mcp.example.com/mcp. authorization_servers: the issuers that clients get tokens from.
    scopes: the ones every request needs (a token without them gets 403 insufficient_scope)."""

    def __init__(self, check, resource, authorization_servers=(), scopes=()):
        self.check = check
        self.resource = checked_url(resource, "resource")
        self.scopes = [*scopes]
        self.authorization_servers = [checked_url(url, "authorization server URL")
                                      for url in authorization_servers]
        if not all(isinstance(each, str) and SCOPE_TOKEN.fullmatch(each) for each in self.scopes):
            raise ValueError(f"a scope is visible ASCII without quotes or backslashes: {scopes!r}")
        parts = urllib.parse.urlsplit(resource)
        # RFC 9728, 3.1: the well-known path goes between the host and the resource's own path.
        # Both that one and the root form are served; the challenge points to the first.
        inserted = WELL_KNOWN + parts.path.rstrip("/")
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{inserted}"
        self.metadata_paths = {inserted, WELL_KNOWN}
        self.metadata = {"resource": resource, "authorization_servers": self.authorization_servers,
                         "bearer_methods_supported": ["header"]}
        if self.scopes:
            self.metadata["scopes_supported"] = self.scopes
        self.last_failure_logged = 0.0

    def authorize(self, authorization, query):
        """The identity of a request with this Authorization header (None if absent) and this
        query string, else HTTPError: 401 without a usable token, 403 with too little scope, 400
        for a token in the URL or a header that is not one bearer token, 503 if check fails. No
        answer and no log line ever holds the token."""
        if "access_token" in urllib.parse.parse_qs(query, keep_blank_values=True):
            raise self.refusal(400, "invalid_request", "a token never goes in the URL: send it in "
                                                       "the Authorization header")
        if (authorization or "").partition(" ")[0].lower() != "bearer":
            raise self.refusal(401, None, "this server needs a bearer token (OAuth 2.1); the "
                                          "WWW-Authenticate header says where to get one")
        match = BEARER.fullmatch(authorization)
        if match is None:
            raise self.refusal(400, "invalid_request", "send one Authorization header, holding "
                                                       "one bearer token")
        try:
            identity = self.check(match[1])
            if identity is not None and not isinstance(identity.get("subject"), str):
                raise TypeError("the token check must return None or a dict with a 'subject' str")
        except Exception as e:  # the authorization server is down, say: not the client's fault
            if time.monotonic() - self.last_failure_logged > 1.0:  # a line a second at most
                self.last_failure_logged = time.monotonic()
                print(f"mcp_auth: the token check failed: {e!r:.300}", file=sys.stderr)
            raise HTTPError(503, "the token cannot be checked now; try again later",
                            headers={"Retry-After": "5"}) from None
        if identity is None:
            raise self.refusal(401, "invalid_token", "the bearer token is not valid")
        if identity.get("expires_at") is not None and identity["expires_at"] <= time.time():
            raise self.refusal(401, "invalid_token", "the bearer token has expired")
        audience = identity.get("audience", self.resource)
        if self.resource not in ([audience] if isinstance(audience, str) else audience):
            raise self.refusal(401, "invalid_token", "the bearer token is for another resource")
        if not set(self.scopes) <= set(identity.get("scopes") or ()):
            raise self.refusal(403, "insufficient_scope", "the bearer token lacks a scope this "
                                                          "server needs")
        return identity

    def refusal(self, status, error, message):
        """The challenge (RFC 6750, 3; RFC 9728, 5.1): where the metadata is, the scopes needed,
        and what is wrong with the token, if one came."""
        fields = [f'resource_metadata="{self.metadata_url}"']
        if self.scopes:
            fields.append(f'scope="{" ".join(self.scopes)}"')
        if error:
            fields += [f'error="{error}"', f'error_description="{message}"']
        challenge = "Bearer " + ", ".join(fields)
        return HTTPError(status, message, headers={"WWW-Authenticate": challenge})

    def same_caller(self, identity, other):
        """Whether two identities are the same principal: a legacy session stays with the
        subject that opened it, across a refreshed token."""
        return (identity or {}).get("subject") == (other or {}).get("subject")


def from_flags(token_file=None, introspection_url=None, resource=None, authorization_servers=(),
               client_id=None, client_secret=None):
    """A ResourceServer from a command line's settings (server.py --token-file FILE, or
    --introspection-url URL with --authorization-server URL). ValueError, one line, for a
    combination that cannot work."""
    if bool(token_file) == bool(introspection_url):
        raise ValueError("give one token check: --token-file FILE or --introspection-url URL")
    if introspection_url and not authorization_servers:
        raise ValueError("--introspection-url needs --authorization-server URL, the token issuer")
    check = (token_file_check(token_file) if token_file else
             introspection_check(introspection_url, resource, client_id, client_secret))
    return ResourceServer(check, resource, authorization_servers)


# --- The two token checks that ship: a file of tokens, and introspection (RFC 7662) ---

def token_file_check(path, scopes=()):
    """A check for a small deployment: the tokens in the file at `path`, one a line (blank lines
    and # comments ignored), each granting `scopes`. Every known token is compared, in constant
    time, so that the time taken tells nothing. A token's subject is a digest of it. A file that
    cannot be read, holds no token or a short one: ValueError, one line."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_TOKEN_FILE_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or e
        raise ValueError(f"cannot read the token file {path}: {reason}") from None
    tokens = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            if not re.fullmatch(TOKEN, line) or len(line) < MIN_TOKEN_LENGTH:
                raise ValueError(f"{path}, line {number}: a token is {MIN_TOKEN_LENGTH} or more "
                                 "letters, digits and -._~+/ (RFC 6750)")
            tokens.append(line.encode())
    if len(data) > MAX_TOKEN_FILE_BYTES or not tokens:
        raise ValueError(f"the token file {path} holds no token, or is over 1 MiB")

    def check(token):
        given = token.encode()
        found = None
        for known in tokens:  # no early exit: the time spent never depends on which one matched
            if hmac.compare_digest(known, given):
                found = known
        if found is None:
            return None
        return {"subject": "token-" + hashlib.sha256(found).hexdigest()[:16], "scopes": [*scopes]}
    return check


def introspection_check(url, resource, client_id=None, client_secret=None,
                        timeout=INTROSPECTION_TIMEOUT, cache_seconds=INTROSPECTION_CACHE_SECONDS):
    """A check that asks the authorization server (RFC 7662): POST token=... to `url`, as the
    client `client_id` (HTTP Basic, RFC 6749 2.3.1) if given. A token counts if the answer says
    "active": true and its "aud" names `resource` (RFC 8707: issued for this server). Answers,
    yes or no, are kept for `cache_seconds`. A slow, large or failed answer raises (503)."""
    resource = checked_url(resource, "resource")
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    checked_url(url, "introspection URL", tokens_go_there=True)
    if client_id is not None:
        pair = f"{urllib.parse.quote(client_id)}:{urllib.parse.quote(client_secret or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    cache = {}  # sha256 of a token -> (identity or None, until when, on the monotonic clock)

    def check(token):
        key = hashlib.sha256(token.encode()).digest()
        identity, until = cache.get(key, (None, 0.0))
        if time.monotonic() < until:
            return identity
        form = urllib.parse.urlencode({"token": token, "token_type_hint": "access_token"})
        # A redirect never takes the token along: urllib follows one of a POST as a bare GET.
        request = urllib.request.Request(url, form.encode(), headers)
        with urllib.request.urlopen(request, timeout=timeout) as r:
            body = r.read(MAX_INTROSPECTION_BYTES + 1)
        if len(body) > MAX_INTROSPECTION_BYTES:
            raise ValueError(f"the introspection answer is over {MAX_INTROSPECTION_BYTES} bytes")
        answer = json.loads(body)
        identity = introspected_identity(answer if isinstance(answer, dict) else {}, resource)
        if len(cache) >= MAX_CACHED:
            cache.clear()
        cache[key] = identity, time.monotonic() + cache_seconds
        return identity
    return check


def introspected_identity(answer, resource):
    """RFC 7662, 2.2: an answer -> the identity, or None: not active, for another audience, or
    with no subject to bind a session to."""
    audience = answer.get("aud")
    scope = answer.get("scope")
    expires_at = answer.get("exp")
    subject = answer.get("sub", answer.get("client_id"))
    for_us = resource in (audience if isinstance(audience, list) else [audience])
    if answer.get("active") is not True or not for_us or not isinstance(subject, str):
        return None
    return {"subject": subject, "scopes": scope.split() if isinstance(scope, str) else [],
            "expires_at": expires_at if isinstance(expires_at, (int, float)) else None,
            "client_id": answer.get("client_id"), "audience": resource}


# === 2. The client: the authorization flow (spec: Authorization, "Authorization Flow Steps") ===
#
# HTTPClient (client.py) holds one OAuthClient. Before each request it asks authorization() for
# the Authorization header; after a 401, or a 403 with error="insufficient_scope", it calls
# challenged() and sends the request again. challenged() runs the flow the spec describes, in a
# worker thread (each step is a blocking HTTP call, bounded in time and size):
#   discovery: the resource's metadata (RFC 9728), then its authorization server's (RFC 8414);
#   registration: pre-registered credentials, a Client ID Metadata Document, or dynamic (RFC 7591);
#   the user's part: on_authorize(url, redirect_uri) -> the URL the browser was sent back to;
#   the token request (PKCE S256, RFC 8707 resource), then refresh and step-up as needed.

import asyncio, http.client, http.server, os, secrets, threading, webbrowser

MAX_AUTH_BYTES = 1_000_000  # of any metadata, registration or token response: small JSON
AUTH_TIMEOUT = 30  # seconds for each HTTP call of the flow
LOGIN_TIMEOUT = 300  # seconds the default login waits for the browser to come back
MAX_LOGINS = 3  # logins for one request (a 401, then step-ups), then it fails
REFRESH_EARLY = 60  # seconds before it expires, a token with a refresh token is refreshed
# A fixed port, so a registered client keeps its redirect_uri; below every system's range of
# ephemeral ports (Linux 32768 up, macOS and Windows 49152 up), where any outgoing connection
# could be holding it when the login starts.
DEFAULT_REDIRECT_URI = "http://127.0.0.1:29418/callback"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class AuthError(ConnectionError):
    """The login failed. Its message says why in one line, never with a token or a secret."""


def fetch_json(method, url, body=None, headers=None):
    """One HTTP call of the flow: (status, the JSON object it answered, or {}). Redirects are not
    followed; the endpoints are HTTPS, or plain HTTP on loopback only."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or \
            parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise AuthError(f"{url[:200]!r}: authorization needs HTTPS (plain HTTP on loopback only)")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:  # (a connection that fails is closed when it is collected)
        connection = kind(parts.hostname, parts.port, timeout=AUTH_TIMEOUT)
        connection.request(method, target, body, {"Accept": "application/json", **(headers or {})})
        response = connection.getresponse()
        data = response.read(MAX_AUTH_BYTES + 1)
        connection.close()
    except (OSError, ValueError, http.client.HTTPException) as e:  # ValueError: a bad port
        raise AuthError(f"{parts.netloc[:200]}: {type(e).__name__}: {e}"[:300]) from None
    try:  # a body over MAX_AUTH_BYTES, or one that is not JSON, says nothing
        answer = json.loads(data) if len(data) <= MAX_AUTH_BYTES else {}
    except ValueError:
        answer = {}
    return response.status, answer if isinstance(answer, dict) else {}


def parse_challenge(header):
    """The parameters of a `WWW-Authenticate: Bearer ...` challenge, such as resource_metadata,
    scope and error (RFC 6750 §3), quoted or not."""
    found = re.findall(r'([\w-]+)\s*=\s*(?:"([^"]*)"|([^\s,"]+))', header[:8000])
    return {name.lower(): quoted or bare for name, quoted, bare in found}


def origin_and_path(url):
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


def first_document(urls):
    """The first JSON object one of the URLs serves, in order; None if none does."""
    answers = (fetch_json("GET", url) for url in urls)  # one at a time, as next() asks
    return next((document for status, document in answers if status == 200 and document), None)


def resource_metadata(server_url, header_url):
    """Spec: Protected Resource Metadata Discovery. The URL the challenge names first, then the
    path-inserted well-known URL, then the root one. None when there is none (2025-03-26)."""
    origin, path = origin_and_path(server_url)
    urls = [header_url] if header_url else []
    urls += [f"{origin}/.well-known/oauth-protected-resource{path}"] if path else []
    return first_document(urls + [f"{origin}/.well-known/oauth-protected-resource"])


def check_resource(resource, server_url):
    """RFC 9728 §3.3: the metadata must be about this server: the resource it names is the
    server's URL, or a prefix of it on a path boundary."""
    ours = urllib.parse.urlsplit(server_url)
    theirs = urllib.parse.urlsplit(str(resource))
    if (ours.scheme, ours.netloc.lower()) != (theirs.scheme, theirs.netloc.lower()) or \
            not (ours.path.rstrip("/") + "/").startswith(theirs.path.rstrip("/") + "/"):
        raise AuthError(f"the metadata is for {str(resource)[:200]!r}, not {server_url!r}")


def server_metadata(issuer):
    """Spec: Authorization Server Metadata Discovery, in its order: OAuth (RFC 8414), then OpenID
    Connect, path-inserted when the issuer has a path. The issuer it names must be exactly the one
    its URL was built from (RFC 8414 §3.3), or it is not used. None when there is none."""
    origin, path = origin_and_path(issuer)
    urls = [f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}"]
    urls += [f"{origin}{path}/.well-known/openid-configuration"] if path else []
    metadata = first_document(urls)
    if metadata and metadata.get("issuer") != issuer:
        raise AuthError(f"the metadata of {issuer!r} names another issuer: not using it")
    return metadata


def browser_login(url, redirect_uri, timeout=LOGIN_TIMEOUT):
    """The default user part: open `url` in a browser, and wait, `timeout` seconds at most, on the
    loopback port of redirect_uri for the authorization server to send the browser back there.
    Returns the URL it came back to."""
    expected = urllib.parse.urlsplit(redirect_uri)
    if expected.scheme != "http" or expected.hostname not in LOOPBACK or not expected.port:
        raise AuthError(f"the browser login needs a loopback redirect_uri, not {redirect_uri!r}")
    landed = []

    class Redirect(http.server.BaseHTTPRequestHandler):
        timeout = 10  # a connection that sends nothing cannot hold the login

        def do_GET(self):  # whatever it is, the state in it tells whether it is the answer
            landed.append(f"http://{expected.netloc}{self.path}")
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"You can close this page now.\n")

        def log_message(self, *args):  # the query holds the authorization code: never logged
            pass

    try:
        server = http.server.HTTPServer((expected.hostname, expected.port), Redirect)
    except OSError as e:
        raise AuthError(f"cannot wait for the login on {expected.netloc}: {e.strerror}") from None
    print(f"mcp_auth: log in with your browser; if none opens, go to {url}", file=sys.stderr)
    # In a thread of its own: a terminal browser (BROWSER=lynx) may not return before the
    # redirect has been served.
    threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    server.timeout = 1  # handle_request() returns each second, so the deadline is seen
    deadline = time.monotonic() + timeout
    with server:
        while not landed and time.monotonic() < deadline:
            server.handle_request()
    if not landed:
        raise AuthError(f"no login within {timeout} seconds")
    return landed[0]


class OAuthClient:
    """The client's side of MCP authorization, for HTTPClient(url, auth=OAuthClient(...)).

    on_authorize(url, redirect_uri): the user's part; returns the URL the user's browser was sent
      back to (it runs in a worker thread). Default: browser_login.
    clients: pre-registered credentials, {issuer: {"client_id": ..., "client_secret": ...}}.
    client_metadata_url: an https URL of this client's Client ID Metadata Document, used as its
      client_id where the authorization server supports that; else dynamic registration.
    token_file: keep registrations and tokens in this file (mode 0600) instead of in memory only.
    log(text): what the flow does, one line at a time (default: stderr). Never a token or secret.
    """

    def __init__(self, on_authorize=None, clients=None, client_metadata_url=None,
                 redirect_uri=DEFAULT_REDIRECT_URI, token_file=None, log=None):
        self.on_authorize = on_authorize or browser_login
        self.client_metadata_url = client_metadata_url
        self.redirect_uri = redirect_uri
        self.token_file = token_file
        self.log = log or (lambda text: print(f"mcp_auth: {text}", file=sys.stderr))
        self.store = {}  # issuer -> {"metadata", "client", "tokens": {resource: token}}
        if token_file and os.path.exists(token_file):
            try:
                with open(token_file, encoding="utf-8") as file:
                    self.store = dict(json.load(file))
            except (OSError, ValueError, TypeError) as e:
                self.log(f"ignoring {token_file}: {type(e).__name__}")
        for issuer, credentials in (clients or {}).items():
            self.store.setdefault(issuer, {})["client"] = dict(credentials)
        self.issuer = None  # where the current token is from: this issuer, for this resource
        self.resource = None
        self.failure = None  # why the login failed: every later request fails with it
        self.scopes = set()  # asked for so far, for this resource; a step-up adds to them
        self.lock = asyncio.Lock()  # one login at a time, however many requests saw the 401
        self.logins = 0  # begun so far

    def token(self):
        return self.store.get(self.issuer, {}).get("tokens", {}).get(self.resource)

    async def authorization(self):
        """The headers that authorize the next request: {} before any login. A token about to
        expire is refreshed first, when it came with a refresh token."""
        token = self.token()
        if token and token.get("expires_at", float("inf")) - REFRESH_EARLY < time.time():
            async with self.lock:
                await asyncio.to_thread(self.refresh, self.issuer, self.resource)
        return self.header()

    def header(self):
        token = self.token()
        return {"Authorization": f"Bearer {token['access_token']}"} if token else {}

    async def challenged(self, server_url, status, header, sent):
        """After a 401 or a 403 with insufficient_scope to a request that carried `sent`: get a
        token that may pass, so the request can go again. Raises AuthError if it cannot; a failed
        login fails every later request the same way, rather than asking the user again. (The
        caller shields it: a request that times out meanwhile leaves the login running.)"""
        async with self.lock:
            if self.failure:
                raise AuthError(self.failure)
            if sent != self.header():
                return  # another request has logged in meanwhile: the new token may do
            self.logins += 1
            try:
                await asyncio.to_thread(self.login, server_url, status, parse_challenge(header))
            except Exception as e:  # anything else: an answer of a shape no spec allows
                self.failure = f"login failed: {e if isinstance(e, AuthError) else repr(e)[:200]}"
                raise AuthError(self.failure) from None

    def login(self, server_url, status, challenge):
        """Spec: Authorization Flow Steps, from the challenge to a token."""
        wanted = set(challenge.get("scope", "").split())
        if status == 403 and wanted <= self.scopes:
            raise AuthError(f"the server still refuses for scope {' '.join(wanted)!r}, granted")
        self.log(f"{server_url} asks for a login (HTTP {status}); finding its metadata")
        described = resource_metadata(server_url, challenge.get("resource_metadata"))
        if described:
            check_resource(described.get("resource"), server_url)
            resource = described["resource"]
            issuer = str((described.get("authorization_servers") or [""])[0])
            if not issuer:
                raise AuthError("the server's metadata names no authorization server")
        else:  # a 2025-03-26 server: its own origin is the authorization server
            resource = server_url
            issuer = origin_and_path(server_url)[0]
        self.issuer = issuer
        self.resource = resource
        if status == 401 and self.refresh(issuer, resource):
            return
        metadata = server_metadata(issuer)
        if metadata is None and not described:  # 2025-03-26: default endpoints at the origin
            metadata = {"authorization_endpoint": f"{issuer}/authorize", "token_endpoint":
                        f"{issuer}/token", "registration_endpoint": f"{issuer}/register",
                        "code_challenge_methods_supported": ["S256"]}
        if "S256" not in ((metadata or {}).get("code_challenge_methods_supported") or []):
            raise AuthError(f"{issuer!r} has no metadata naming PKCE with S256 (the spec asks "
                            "for both)")
        entry = self.store.setdefault(issuer, {})
        entry["metadata"] = metadata
        # The challenge's scope, else all the resource says it supports; a step-up keeps the old
        # ones too; offline_access (a refresh token) when the server offers it (SEP-2207).
        wanted = self.scopes | (wanted or set((described or {}).get("scopes_supported") or []))
        offline = wanted and "offline_access" in (metadata.get("scopes_supported") or [])
        self.scopes = wanted | ({"offline_access"} if offline else set())
        client = entry.get("client") or self.register(issuer, metadata, self.scopes)
        self.authorize(issuer, metadata, client, resource, self.scopes)

    def register(self, issuer, metadata, scopes):
        """Spec: Client Registration. A Client ID Metadata Document where the server supports it,
        else dynamic registration (RFC 7591; deprecated in 2026-07-28, still common)."""
        if self.client_metadata_url and metadata.get("client_id_metadata_document_supported"):
            client = {"client_id": self.client_metadata_url, "token_endpoint_auth_method": "none"}
        elif metadata.get("registration_endpoint"):
            self.log(f"registering with {issuer}")
            wanted = {"client_name": "mcp-min", "redirect_uris": [self.redirect_uri],
                      "grant_types": ["authorization_code", "refresh_token"],
                      "response_types": ["code"], "application_type": "native",
                      **({"scope": " ".join(sorted(scopes))} if scopes else {})}
            status, client = fetch_json("POST", metadata["registration_endpoint"],
                                        json.dumps(wanted).encode(),
                                        {"Content-Type": "application/json"})
            if status not in (200, 201) or not isinstance(client.get("client_id"), str):
                raise AuthError(f"{issuer!r} refused the registration (HTTP {status})")
        else:
            raise AuthError(f"{issuer!r} has no registration: pass OAuthClient(clients=...)")
        self.store[issuer]["client"] = client
        return client

    def authorize(self, issuer, metadata, client, resource, scopes):
        """The authorization code grant with PKCE: the user's part, then the token request."""
        verifier = secrets.token_urlsafe(48)  # PKCE (RFC 7636), S256: its hash goes first
        digest = hashlib.sha256(verifier.encode()).digest()
        code_challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        state = secrets.token_urlsafe(24)
        query = {"response_type": "code", "client_id": client["client_id"],
                 "redirect_uri": self.redirect_uri, "code_challenge": code_challenge,
                 "code_challenge_method": "S256", "state": state, "resource": resource,
                 **({"scope": " ".join(sorted(scopes))} if scopes else {})}
        endpoint = str(metadata.get("authorization_endpoint"))
        url = endpoint + ("&" if "?" in endpoint else "?") + urllib.parse.urlencode(query)
        self.log(f"asking you to log in at {issuer}" + (f" for {query['scope']}" if scopes else ""))
        landed = urllib.parse.urlsplit(str(self.on_authorize(url, self.redirect_uri)))
        answer = dict(urllib.parse.parse_qsl(landed.query))
        if answer.get("state") != state or "code" not in answer:
            why = answer.get("error", "no code, or the wrong state")[:100]
            raise AuthError(f"the authorization failed: {why}")
        # RFC 9207: who sent the code, compared as a plain string; required if it said it names
        # itself in every answer.
        iss = answer.get("iss")
        if (iss or metadata.get("authorization_response_iss_parameter_supported")) and \
                iss != metadata.get("issuer", issuer):
            raise AuthError(f"the authorization answer is from {str(iss)[:200]!r}, not {issuer!r}")
        self.log(f"exchanging the code for a token at {issuer}")
        self.token_request(issuer, resource, {
            "grant_type": "authorization_code", "code": answer["code"],
            "redirect_uri": self.redirect_uri, "code_verifier": verifier, "resource": resource})

    def refresh(self, issuer, resource):
        """A new access token from the refresh token (RFC 6749 §6); False without one, or if the
        server refuses it."""
        old = self.store.get(issuer, {}).get("tokens", {}).get(resource) or {}
        try:
            self.token_request(issuer, resource, {"grant_type": "refresh_token",
                               "refresh_token": old["refresh_token"], "resource": resource})
        except (AuthError, KeyError, TypeError):  # KeyError, TypeError: no refresh token
            return False
        return True

    def token_request(self, issuer, resource, form):
        """The token endpoint, with this client's authentication method; keeps what it gives."""
        entry = self.store[issuer]
        client = entry.get("client") or {}
        metadata = entry.get("metadata") or {}
        # The method the registration named; else, with a secret, client_secret_basic (RFC 8414's
        # default) unless the server names others only (then client_secret_post); else none.
        basic = "client_secret_basic"
        with_secret = basic if basic in metadata.get("token_endpoint_auth_methods_supported",
                                                     [basic]) else "client_secret_post"
        method = client.get("token_endpoint_auth_method")
        method = method or (with_secret if client.get("client_secret") else "none")
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if method == "client_secret_basic":  # RFC 6749 §2.3.1: each part form-encoded first
            pair = ":".join(urllib.parse.quote_plus(client[key])
                            for key in ("client_id", "client_secret"))
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form["client_id"] = client.get("client_id", "")
            if method == "client_secret_post":
                form["client_secret"] = client.get("client_secret", "")
        status, answer = fetch_json("POST", str(metadata.get("token_endpoint")),
                                    urllib.parse.urlencode(form).encode(), headers)
        if status != 200 or str(answer.get("token_type")).lower() != "bearer" or \
                not isinstance(answer.get("access_token"), str):
            raise AuthError(f"{issuer!r} gave no bearer token (HTTP {status}, "
                            f"{str(answer.get('error'))[:80]})")
        old = entry.setdefault("tokens", {}).get(resource) or {}
        token = {"access_token": answer["access_token"],
                 "refresh_token": answer.get("refresh_token") or old.get("refresh_token")}
        if isinstance(answer.get("expires_in"), (int, float)):
            token["expires_at"] = time.time() + answer["expires_in"]
        entry["tokens"][resource] = token
        self.save()

    def save(self):
        """Into token_file, if there is one: written whole to a new file of mode 0600, then moved
        over the old one, so that a crash never leaves half of it."""
        if not self.token_file:
            return
        descriptor = os.open(f"{self.token_file}.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(descriptor, 0o600)  # if an old .tmp was there with another mode
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(self.store, file)
        os.replace(f"{self.token_file}.tmp", self.token_file)
