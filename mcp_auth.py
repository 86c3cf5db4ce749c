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
        self.check, self.resource, self.scopes = check, checked_url(resource, "resource"), [*scopes]
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
        given, found = token.encode(), None
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
    audience, scope, expires_at = answer.get("aud"), answer.get("scope"), answer.get("exp")
    subject = answer.get("sub", answer.get("client_id"))
    for_us = resource in (audience if isinstance(audience, list) else [audience])
    if answer.get("active") is not True or not for_us or not isinstance(subject, str):
        return None
    return {"subject": subject, "scopes": scope.split() if isinstance(scope, str) else [],
            "expires_at": expires_at if isinstance(expires_at, (int, float)) else None,
            "client_id": answer.get("client_id"), "audience": resource}


# === 2. The client: the authorization flow (spec: Authorization, "Authorization Flow Steps") ===
