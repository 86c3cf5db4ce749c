"""mcp_min: an MCP server in one file, standard library only.

A Server turns typed, documented Python functions into MCP tools, and serves them over stdio:
newline-delimited JSON-RPC 2.0 on stdin and stdout. It speaks both eras of the spec, chosen per
request: the legacy `initialize` handshake (2024-11-05 ... 2025-11-25) and the stateless
2026-07-28 revision, where every request carries its protocol version in `params._meta`.

    from mcp_min import Server
    server = Server("demo")

    @server.tool()
    def add(a: int, b: int = 1) -> int:
        '''Add two numbers.'''
        return a + b

    server.run()        # python demo.py: serves stdin/stdout until stdin closes

One tools/call on the wire in each era ("->" the client sends, "<-" the server answers; each
message is one line on the wire, wrapped here to fit):

  Legacy: a handshake opens the conversation; then requests carry only their own params.
    -> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",
        "capabilities":{},"clientInfo":{"name":"me","version":"1"}}}
    <- {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":
        {"tools":{"listChanged":true}},"serverInfo":{"name":"demo","version":"0.1.0"}}}
    -> {"jsonrpc":"2.0","method":"notifications/initialized"}
    -> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2}}}
    <- {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"3"}],"isError":false}}

  2026-07-28: no handshake; every request says its version and what the client can do, and
  every result says that it is complete and who answered.
    -> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities":{}}}}
    <- {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"3"}],"isError":false,
        "resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"demo",
        "version":"0.1.0"}}}}

(The capabilities are the whole file's: a copy cut after the core says {"tools":{}}, as it cannot
announce changes.)

Copy this file into your project; it needs nothing else. Part A, the core, is a complete tools
server and ends at the line "# === The core ends here". Part B adds the rest of MCP, a section
each: 7. pagination, 8. resources and templates (@server.resource), 9. prompts (@server.prompt),
10. completion, 11. asking the user (ctx.elicit), 12. change notifications (server.list_changed,
server.resource_updated). Each adds its methods to the table the core dispatches on (METHODS),
and its capability once something is registered: cut the file at the start of any section and
what is above still serves, advertising only what it has. The client side is the Client class at
the top of client.py; Streamable HTTP is mcp_http.py. The core follows a request through the
server:
  1. The wire: bytes in, lines out, and the size limit.
  2. JSON-RPC: a line becomes a message, or an error answer.
  3. Tools: a function becomes a tool; arguments are checked; its return value becomes a result.
  4. The Context a tool may ask for: progress and cancellation.
  5. The server: each request is answered in the era it asks for. Start reading at Server.handle.
  6. The stdio loop: reading, backpressure, shutdown.
Spec: https://modelcontextprotocol.io/specification (2025-11-25 and 2026-07-28).
"""
import asyncio, collections, concurrent.futures, contextlib, functools, inspect, itertools, json
import math, os, signal, stat, sys, threading, traceback, types, typing

LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]  # oldest first
MODERN_VERSIONS = ["2026-07-28"]
META = "io.modelcontextprotocol/"  # prefix of the per-request _meta fields of the modern era
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a longer line is refused and skipped, never held whole
MAX_IN_FLIGHT = 512  # requests running at once; past that, stdin waits (backpressure)
MAX_THREADS = 64  # worker threads for sync functions: tools, and the functions of Part B
MAX_BACKLOG = 1024 * 1024  # bytes a slow client may leave unread before we wait for it
WRITE_TIMEOUT = 30.0  # seconds a client may read nothing while answers wait; then it is gone
# 2026-07-28 results that a client may cache say for how long (spec: utilities/caching).
# Definitions change only with the code: an hour.
DEFINITIONS_TTL_MS = 3_600_000
# The JSON-RPC 2.0 error codes, and one that 2026-07-28 adds.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UNSUPPORTED_VERSION = -32022  # no protocol version in common


class MCPError(Exception):
    """A JSON-RPC error: raised by handlers in the server, and by a client when one comes back."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data


# === 1. The wire: one JSON text per line, UTF-8 (spec: basic/transports/stdio) ===

# Compact and strict: JSON has no NaN or Infinity, and sending one would break the peer's parser.
# ASCII only: non-ASCII text is escaped (\u00e9), so even a lone surrogate from a client's string
# makes a valid line.
ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode(message):
    """A message as one line. JSON escapes control characters, so it never holds a newline."""
    return (ENCODER.encode(message) + "\n").encode()


def log(text):
    """One line on stderr, for the operator. A host may have closed its end of stderr: then the
    line is lost, but never the answer that was being sent."""
    with contextlib.suppress(OSError, ValueError):
        print(text + "\n", end="", file=sys.stderr, flush=True)  # one write: whole lines


def encode_reply(message):
    """encode() for what a server sends, which must not fail. An answer that JSON cannot carry
    (NaN, a datetime, a set), or one over the size limit, becomes an error answer for the same id:
    every request still gets exactly one answer. Such a notification is dropped (b"")."""
    try:
        line = encode(message)
        if len(line) <= MAX_MESSAGE_BYTES + 1:
            return line
        problem = f"the answer is {len(line)} bytes, over the {MAX_MESSAGE_BYTES}-byte limit"
    except (ValueError, TypeError, RecursionError) as e:
        problem = str(e) or type(e).__name__
    log(f"mcp_min: cannot send a message: {problem}")
    error = MCPError(INTERNAL_ERROR, f"Internal error: {problem}")
    return encode(error_response(message["id"], error)) if "id" in message else b""


async def read_lines(read, limit=MAX_MESSAGE_BYTES):
    """Yield (line, size) for each line that the coroutine read() brings: the line as bytes, and
    its full size. A line over the limit is never held whole: only its first limit + 1 bytes are
    kept, so a size over the limit says that the line was cut."""
    kept = b""  # the line so far, cut at limit + 1 bytes
    size = 0  # the line's full size so far
    while chunk := await read():
        *ends, rest = chunk.split(b"\n")
        for end in ends:
            yield kept + end[:limit + 1 - len(kept)], size + len(end)
            kept = b""
            size = 0
        kept += rest[:limit + 1 - len(kept)]
        size += len(rest)
    if kept.strip():  # a last message without its newline still counts
        yield kept, size


# === 2. JSON-RPC 2.0: requests, notifications, responses (spec: basic, "Messages") ===

def refuse_constant(name):  # Python's json reads NaN and Infinity; JSON has no such values
    raise ValueError(f"{name} is not a JSON value")


# A number beyond float range, like 1e400, is valid JSON. It reads as inf, and where it is used (a
# tool argument, or an answer it would end up in) its request gets an error for its own id. An
# integer of over 4,300 digits is valid JSON too, but Python refuses to read it: a parse error.
DECODER = json.JSONDecoder(parse_constant=refuse_constant)


def parse_message(line, size=0):
    """One line -> a message dict, or MCPError (answered with id null: we cannot know the id).
    size: the line's full size, from read_lines; one over the limit was cut there."""
    if size > MAX_MESSAGE_BYTES:
        raise MCPError(INVALID_REQUEST, f"Invalid Request: a message of {size} bytes is over "
                                        f"the {MAX_MESSAGE_BYTES}-byte limit")
    try:
        message = DECODER.decode(line.decode())
    except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, or nested too deeply
        raise MCPError(PARSE_ERROR, f"Parse error: {e}")
    if not isinstance(message, dict):  # a batch (a list) too: batches are gone since 2025-06-18
        raise MCPError(INVALID_REQUEST, "Invalid Request: a message must be one JSON object")
    return message


def check_request(message):
    """The shape every request and notification must have; a request's id is a string or an
    integer."""
    if message.get("jsonrpc") != "2.0":
        raise MCPError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if not isinstance(message.get("method"), str):
        raise MCPError(INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    if not isinstance(message.get("params", {}), dict):
        raise MCPError(INVALID_PARAMS, 'Invalid params: "params" must be an object')
    if "id" in message and not valid_id(message["id"]):
        raise MCPError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")


def valid_id(request_id):
    # MCP forbids null ids, JSON-RPC discourages fractions, and a bool is an int only to Python.
    return isinstance(request_id, (str, int)) and not isinstance(request_id, bool)


def error_response(request_id, error):
    body = without_none({"code": error.code, "message": error.message, "data": error.data})
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def without_none(fields):  # an optional field is left out, never sent as null
    return {key: value for key, value in fields.items() if value is not None}


# === 3. Tools: a typed Python function becomes a tool (spec: server/tools) ===
#
# Server.tool (section 5) calls describe_parameters when a function is registered: its type hints
# become the tool's inputSchema. At each tools/call, validate checks the arguments against that
# schema, the function runs (call), and to_call_result turns what it returned into the result.

def describe_parameters(func, where):
    """JSON Schema for a function's parameters, from their type hints and defaults; and the name
    of its Context parameter, if it has one (the server fills that in, not the client)."""
    hints = typing.get_type_hints(func, include_extras=True)
    params = inspect.signature(func).parameters.values()
    context_param = next((param.name for param in params if hints.get(param.name) is Context), None)
    params = [param for param in params if param.name != context_param]
    properties = {param.name: schema_for(hints.get(param.name), f"{where}, {param.name!r}")
                  for param in params}
    for param in params:  # a default that is not JSON fails here, at decoration time
        if param.default is not param.empty:
            properties[param.name]["default"] = json.loads(encode(param.default))
    required = [param.name for param in params if param.default is param.empty]
    schema = {"type": "object", "properties": properties or None, "required": required or None}
    return {**without_none(schema), "additionalProperties": False}, context_param


JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object",
              list: "array", type(None): "null"}
PYTHON_TYPES = {name: python_type for python_type, name in JSON_TYPES.items()}


def schema_for(hint, where):
    """JSON Schema for one type hint: the subset a model can fill in and validate() can check."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    # Annotated[int, "how many", {"minimum": 1}]: its text describes the value; a dict adds JSON
    # Schema keywords, which the function checks itself if validate() does not know them.
    if origin is typing.Annotated:
        notes = " ".join(note for note in args[1:] if isinstance(note, str))
        extra = next((note for note in args[1:] if isinstance(note, dict)), {})
        return without_none({**schema_for(args[0], where), "description": notes or None, **extra})
    if hint in JSON_TYPES:
        return {"type": JSON_TYPES[hint]}
    if origin in (list, dict):  # list[X] says what its items are; dict[str, X] what its values are
        inner = {"items" if origin is list else "additionalProperties": schema_for(args[-1], where)}
        return {"type": JSON_TYPES[origin], **(inner if args else {})}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [schema_for(arg, where) for arg in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    raise TypeError(f"{where}: needs a type hint that JSON Schema can say, not {hint!r}: use str, "
                    "int, float, bool, list[...], dict, X | None or Literal[...]")


def validate(value, schema, path="arguments"):
    """Check a value against our schema subset. Returns it (5.0 as 5 for an integer), or raises
    ValueError saying what is wrong. No coercion: "5" is not an integer, and the model that sent
    it learns so and can retry. A schema beyond our subset is the tool's own to check."""
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            with contextlib.suppress(ValueError):  # the first option that fits
                return validate(value, option, path)
        options = json.dumps(schema["anyOf"])
        raise ValueError(f"{path}: {json.dumps(value)[:80]} matches none of {options}")
    # Equal as JSON values: 1.0 is 1, but true is not 1 (to Python, True == 1).
    if "enum" in schema and not any(
            value == c and isinstance(value, bool) == isinstance(c, bool) for c in schema["enum"]):
        raise ValueError(f"{path} must be one of {json.dumps(schema['enum'])}")
    expected = PYTHON_TYPES.get(schema.get("type"))
    if expected is int and type(value) is float and value.is_integer():
        value = int(value)  # JSON Schema counts 5.0 as an integer, and 1 as a number
    if expected and type(value) is not expected and not (expected is float and type(value) is int):
        raise ValueError(f"{path} must be of type {schema['type']}, not {json.dumps(value)[:80]}")
    if expected is float and not math.isfinite(value):  # 1e400 in the request read as inf
        raise ValueError(f"{path} must be a finite number, not {value}")
    if expected is list and "items" in schema:
        return [validate(item, schema["items"], f"{path}[{i}]") for i, item in enumerate(value)]
    if expected is not dict:
        return value
    # An object: no unknown keys if the schema says so, none of the required ones missing, and
    # each value valid. Checked values replace the given ones (5.0 becomes 5).
    known = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    if extra is False and not value.keys() <= known.keys():
        unknown = ", ".join(sorted(value.keys() - known.keys()))
        raise ValueError(f"unknown argument(s): {unknown}; expected: {', '.join(known) or 'none'}")
    missing = [name for name in schema.get("required", ()) if name not in value]
    if missing:
        raise ValueError(f"missing required argument(s): {', '.join(missing)}")
    for key, item in value.items():
        item_schema = known.get(key, extra)
        where = key if path == "arguments" else f"{path}.{key}"  # a top-level argument by its name
        value[key] = validate(item, item_schema, where) if isinstance(item_schema, dict) else item
    return value


def define(func, name, title, doc, **rest):
    """A tool's definition (or a prompt's, or a resource's), as a list sends it: its name (the
    function's, unless another is given), title and description, then the rest of its fields."""
    return without_none({"name": name or func.__name__, "title": title, "description": doc, **rest})


# A tool as registered: its function, its definition (what tools/list sends), and the name of its
# Context parameter, if it has one.
Tool = collections.namedtuple("Tool", "func definition context_param")
# Return ToolResult(content, structured=None, is_error=False) from a tool for full control:
# content is a str or a list of content blocks, structured becomes structuredContent.
ToolResult = collections.namedtuple("ToolResult", "content structured is_error",
                                    defaults=(None, False))


def to_call_result(value, definition):
    """A tool's return value -> CallToolResult. The rules, in order: ToolResult -> as given (its
    content may be a list of content blocks: text, image, audio, resource, resource_link);
    dict -> structuredContent plus the same JSON as text (for clients that only read content);
    None -> no content; str -> one text block; anything else JSON can carry -> its JSON as text."""
    if isinstance(value, dict):
        value = ToolResult(json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False), value)
    elif not isinstance(value, ToolResult):
        text = value if isinstance(value, str) else encode(value).decode().strip()
        value = ToolResult([] if value is None else text)
    if value.structured is None and "outputSchema" in definition and not value.is_error:
        raise TypeError("the tool declares an outputSchema, so it must return a dict")  # a MUST
    content = value.content
    content = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return without_none({"content": content, "isError": value.is_error,
                         "structuredContent": value.structured})


def tool_error(text):
    return {"content": [{"type": "text", "text": text}], "isError": True}


def call(func, /, *args, **kwargs):
    """Call a function we were given (a tool, or one of Part B's), to be awaited: a coroutine
    function runs on the event loop, any other in a worker thread, so that a slow one holds up no
    other."""
    if inspect.iscoroutinefunction(func):
        return func(*args, **kwargs)
    return asyncio.to_thread(call_sync, func, *args, **kwargs)


def call_sync(func, /, *args, **kwargs):
    """In the worker thread. asyncio cannot carry a StopIteration (from a next() that found
    nothing) out of a thread: the call would wait forever. It becomes a RuntimeError."""
    try:
        return func(*args, **kwargs)
    except StopIteration as e:
        raise RuntimeError("the function raised StopIteration") from e


def failure(error):
    """What a function we were given raised, in one line for the client; the traceback goes to
    stderr. Whatever it is, even sys.exit() (argparse calls it), KeyboardInterrupt or a
    CancelledError nobody asked for (it awaited a cancelled task), it fails only its own request:
    re-raised, it would stop the server, or leave the request without an answer and its id in
    use. What goes on: the request's own answer (REQUEST_ANSWERS), and its cancellation."""
    if isinstance(error, tuple(REQUEST_ANSWERS)) or isinstance(error, asyncio.CancelledError) \
            and asyncio.current_task().cancelling():
        raise error
    log(traceback.format_exc().rstrip())
    return f"{type(error).__name__}: {error}"


# === 4. The Context a function may ask for (spec: utilities/progress, utilities/cancellation) ===

class Context:
    """Given to a tool that asks for it (a parameter annotated Context): progress reports; auth,
    the identity the HTTP token check found (None on stdio); capabilities, what the client
    declared it can do (at initialize, or in the request in 2026-07-28); and the cancelled flag,
    set once the request is cancelled or answered: a sync tool, or a thread it started, can watch
    it to stop early. For logs, write to stderr: MCP's logging is deprecated since 2026-07-28,
    and hosts show a server's stderr. Part B's functions get one too, and its sections add to
    it: elicit() and the rest of section 11 (whose asking wrapper sets answers, used and memo on
    each Context it serves), close_stream()."""

    def __init__(self, send, message, session, modern, meta):
        self.send = send  # to this request's client: notifications, and requests of our own
        self.message = message  # the request being answered: its id is message["id"]
        self.session = session  # the client's state: see new_session
        self.modern = modern  # the 2026-07-28 version the request carries; None if legacy
        self.auth = session.get("auth")
        declared = meta.get(META + "clientCapabilities") if modern else session.get("capabilities")
        self.capabilities = declared or {}  # what the client said it can do: what we may ask
        self.progress_token = meta.get("progressToken")
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.cancelled = False

    def report_progress(self, progress, total=None, message=None):
        """notifications/progress, if the request carried a progressToken. Progress must increase.
        Safe to call from any thread. Nothing is sent once the request is cancelled or answered
        (spec: progress, cancellation)."""
        if self.progress_token is None or self.cancelled:
            return None
        if threading.get_ident() != self.loop_thread:  # from a sync tool's thread: the loop
            # sends it (checking again: the answer may have gone since). The thread waits until
            # it has, so that a flood of reports stays flat: the loop runs callbacks in order, so
            # once the empty coroutine scheduled after this one has run, the report is out.
            self.loop.call_soon_threadsafe(self.report_progress, progress, total, message)
            sent = asyncio.run_coroutine_threadsafe(asyncio.sleep(0), self.loop)
            return sent.result(WRITE_TIMEOUT)
        params = without_none({"progressToken": self.progress_token, "progress": progress,
                               "total": total, "message": message})
        self.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})



# === 5. The server: each request in the era it asks for (spec: basic/lifecycle, versioning) ===

def new_session(auth=None, notify=None):
    """One client's state, which the transport keeps and hands to Server.handle: over stdio one for
    the process; over HTTP one per legacy session, and a new one for each modern request. Its keys:
      in_flight     request id -> the task answering it, so notifications/cancelled can stop it
      auth          the identity an HTTP token check found (mcp_auth); None on stdio
      notify        sends a legacy client what comes outside any request; None: the request's send
      capabilities  what the client declared at initialize (legacy)
    and what Part B and mcp_http add: asked (section 11: our requests waiting for an answer),
    listener and listening (section 12: change notifications), stream and streams (mcp_http's SSE
    streams)."""
    return {"in_flight": {}, "auth": auth, "notify": notify, "capabilities": None}


class Server:
    """An MCP server: what it offers (its registries: tools here; Part B adds resources and
    prompts) and how it answers a request (handle). Start with tool(), then handle().
    The transports use: handle, handle_notification, modern_version, end_streams, info, and
    tools (name -> Tool)."""

    def __init__(self, name, version="0.1.0", instructions=None, state_key=None):
        self.info = {"name": name, "version": version}  # serverInfo
        self.instructions = instructions  # how to use this server, for the model: see initialize
        # What is registered, by kind: "tools" -> {name: Tool}, then Part B's kinds ("resources",
        # "prompts"; section 12 keeps its Changes under "changes") and an extension's, under its
        # id (mcp_tasks keeps its tasks under "tasks kept"). A kind with nothing registered is
        # not advertised, and its methods are not found.
        self.registries = {"tools": {}}
        self.tools = self.registries["tools"]
        # Signs 2026-07-28 requestState (Part B, asking the user): replicas behind one load balancer
        # share it. None: $MCP_STATE_KEY, else a random key for this server.
        self.state_key = state_key

    def tool(self, name=None, title=None, annotations=None, output_schema=None):
        """Decorator: the function becomes a tool. Its name, docstring and type hints make the
        definition tools/list sends; a parameter annotated Context is filled in by the server."""
        def register(func):
            schema, context_param = describe_parameters(func, f"tool {name or func.__name__}")
            definition = define(func, name, title, inspect.getdoc(func) or "", inputSchema=schema,
                                outputSchema=output_schema, annotations=annotations)
            self.tools[definition["name"]] = Tool(func, definition, context_param)
            return func
        return register

    def about(self):
        """What initialize and server/discover say of this server: a capability for each kind of
        thing it answers methods for, in the order of METHODS, with what CAPABILITY_FIELDS adds
        to it; and its instructions, if any. An extension's capability is named by its id, which
        holds a "/" (io.modelcontextprotocol/tasks): it goes under "extensions"."""
        capabilities = {}
        for name in [m.capability for m in METHODS.values() if self.registries.get(m.capability)]:
            place = capabilities.setdefault("extensions", {}) if "/" in name else capabilities
            place[name] = dict(CAPABILITY_FIELDS.get(name, {}))
        return {"capabilities": capabilities, **without_none({"instructions": self.instructions})}

    async def handle(self, message, send, session=None):
        """Answer one well-formed request with its response; a cancelled request raises
        CancelledError instead. A tool's notifications and requests reach the client through
        send(message) while it runs. session: the client's state (new_session)."""
        method = message["method"]
        params = message.get("params", {})
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        try:
            # A request with the modern _meta is served statelessly; initialize is legacy always.
            modern = method != "initialize" and self.modern_version(method, meta)
            # The table after this class. A method with a capability needs something registered.
            found = METHODS.get(method)
            if not found or found.era not in (None, "modern" if modern else "legacy") \
                    or found.capability and not self.registries.get(found.capability):
                raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
            ctx = Context(send, message, session or new_session(), modern, meta)
            try:
                result = await found.handler(self, params, ctx)
            finally:  # a sync function's thread may run on after a cancel, or a thread it started
                ctx.cancelled = True  # after the answer: they can see this, and report nothing more
            if modern:  # 2026-07-28: stateless; every result says what it is, and who answers
                result.setdefault("resultType", "complete")
                result["_meta"] = {**result.get("_meta", {}), META + "serverInfo": self.info}
            # What we serve does not depend on who asks: public, for as long as the method says.
            if modern and found.ttl_ms is not None and result["resultType"] == "complete":
                result.update(ttlMs=found.ttl_ms, cacheScope="public")
            return {"jsonrpc": "2.0", "id": message["id"], "result": result}
        except MCPError as e:
            return error_response(message["id"], e)
        except BaseException as e:  # a handler failed, or a function of Part B's
            error = MCPError(INTERNAL_ERROR, f"Internal error: {failure(e)}")
            return error_response(message["id"], error)

    def modern_version(self, method, meta):
        """The 2026-07-28 revision if the request carries its _meta fields (meta: its
        params._meta); None if legacy."""
        if method != "server/discover" and not any(key.startswith(META) for key in meta):
            return None
        if META + "protocolVersion" not in meta or META + "clientCapabilities" not in meta:
            raise MCPError(INVALID_PARAMS, f"Invalid params: _meta needs {META}protocolVersion "
                                           f"and {META}clientCapabilities")
        version = meta[META + "protocolVersion"]
        if version not in MODERN_VERSIONS:
            raise MCPError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                           {"supported": MODERN_VERSIONS, "requested": version})
        return version

    # --- The lifecycle: the legacy handshake, ping, and 2026-07-28's server/discover ---

    async def initialize(self, params, ctx):
        """The legacy handshake: the client's version if we speak it, else our latest (the client
        then decides). Then notifications/initialized, which needs no answer."""
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise MCPError(INVALID_PARAMS, 'Invalid params: "protocolVersion" must be a string')
        version = requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[-1]
        ctx.session["capabilities"] = params.get("capabilities")  # what we may ask of the client
        return {"protocolVersion": version, **self.about(), "serverInfo": self.info}

    async def ping(self, params, ctx):
        return {}

    async def discover(self, params, ctx):
        """2026-07-28: what a client asks first, to learn the versions and capabilities."""
        return {"supportedVersions": MODERN_VERSIONS, **self.about()}

    # --- Tools (spec: server/tools) ---

    async def list_tools(self, params, ctx):
        """tools/list: every tool at once, so a cursor is one this server never gave: refused, so
        that the client starts over (spec: utilities/pagination). Part B's pagination pages."""
        if params.get("cursor") is not None:
            raise MCPError(INVALID_PARAMS, "Invalid params: unknown cursor "
                                           + json.dumps(params["cursor"])[:40])
        return {"tools": [tool.definition for tool in self.tools.values()]}

    async def call_tool(self, params, ctx):
        """tools/call. A call that does not fit the protocol is an error (-32602); bad arguments
        and a failing tool are results with isError, which the model reads and can correct."""
        name = params.get("name")
        arguments = params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, 'Invalid params: tools/call needs a name and arguments')
        if name not in self.tools:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}; tools: {', '.join(self.tools)}")
        tool = self.tools[name]
        try:
            arguments = validate(dict(arguments), tool.definition["inputSchema"])
        except ValueError as e:
            return tool_error(f"Invalid arguments for tool {name}: {e}")
        arguments.update({tool.context_param: ctx} if tool.context_param else {})
        try:
            return to_call_result(await call(tool.func, **arguments), tool.definition)
        except BaseException as e:  # what the model reads, so that it can try another way
            return tool_error(f"Tool {name} failed: {failure(e)}")

    # --- What else a client sends: notifications, and answers to our requests ---

    def handle_notification(self, message, session):
        """What the client sends that gets no answer: a notification, or a response to a request
        of ours (it has no method). Its handler in NOTIFICATIONS, if any, does what it says."""
        if message.get("method") in NOTIFICATIONS:
            NOTIFICATIONS[message.get("method")](self, message, session)

    def end_streams(self, session=None):
        """The client is gone (stdin's EOF), or the server stops (session None): what only ends
        when the client leaves ends now (the functions in AT_END: Part B's listen streams, an
        extension's tasks)."""
        for end in AT_END:
            end(self, session)

    # === 6. The stdio loop (spec: basic/transports/stdio) ===

    def run(self):
        """Serve MCP on stdin and stdout until stdin closes, or until SIGTERM or SIGINT; answer
        every request read, then return."""
        # Keep the real stdin and stdout for protocol messages. Point fd 1 and sys.stdout at
        # stderr, so a stray print() in a tool, or a C library writing to fd 1, cannot corrupt the
        # stream; and fd 0 at /dev/null, so a child process a tool starts cannot eat requests.
        # The streams close these files, but not their descriptors: stdout's is closed below, once
        # the loop is closed, so that the client sees EOF only when a signal cannot reach it.
        wire_in = open(os.dup(0), "rb", 0, closefd=False)
        out_fd = os.dup(1)
        wire_out = open(out_fd, "wb", 0, closefd=False)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(2, 1)
        # The loop is closed by hand, not by asyncio.run(), which waits for every worker thread:
        # one stuck in a sync tool for good would keep the server from ever returning.
        loop = asyncio.new_event_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(MAX_THREADS))
        with contextlib.closing(loop), contextlib.redirect_stdout(sys.stderr):
            loop.run_until_complete(self.serve_stdio(wire_in, wire_out))
        os.close(out_fd)  # the wire: the client sees EOF, even if a stuck tool keeps the process

    async def serve_stdio(self, wire_in, wire_out):
        """Requests run concurrently, and answers go out as they finish. After EOF, every request
        read gets its answer. A signal, a client that closes stdout or one that reads nothing
        stops the server at once: the calls still running get an error answer."""
        session = new_session()  # over stdio, one client for the life of the process
        in_flight = session["in_flight"]
        reader, writer = await open_pipes(wire_in, wire_out)
        serving = asyncio.current_task()

        def send(message):
            # Answers always go out. A notification is skipped while a slow client has a backlog:
            # progress is only a hint, and the next one that goes out carries the latest value.
            if writer.transport.is_closing():  # the client closed our stdout: nobody listens
                serving.cancel("the client closed stdout")
            elif "id" in message or writer.transport.get_write_buffer_size() < MAX_BACKLOG:
                writer.write(encode_reply(message))
        for sig in (signal.SIGINT, signal.SIGTERM):  # each cancels this task, saying why
            serving.get_loop().add_signal_handler(sig, serving.cancel, f"stopped by {sig.name}")
        try:
            lines_read = itertools.count(1)
            async for line, size in read_lines(functools.partial(reader.read, 65536)):
                self.receive_line(line, size, session, send)
                if next(lines_read) % 16 == 0:  # a turn of the loop, so finished requests
                    await asyncio.sleep(0)  # write their answers
                # Backpressure: while too many requests run, or a slow client leaves too much
                # unread, stdin waits, so memory stays flat whatever the client sends. A client
                # that reads nothing for WRITE_TIMEOUT is gone: its TimeoutError stops the server.
                if len(in_flight) >= MAX_IN_FLIGHT:
                    await asyncio.wait(in_flight.values(), return_when=asyncio.FIRST_COMPLETED)
                if writer.transport.get_write_buffer_size() > MAX_BACKLOG:
                    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)
            self.end_streams(session)  # EOF: what waits for the client to leave ends, too
            if in_flight:  # every request read gets its answer
                await asyncio.wait(list(in_flight.values()))
        except (asyncio.CancelledError, TimeoutError) as stopped:
            serving.uncancel()
            self.end_streams()  # the server stops: so does all that waits for the client to leave
            for request_id, task in list(in_flight.items()):
                task.cancel()
                error = MCPError(INTERNAL_ERROR, "Cancelled: the server is shutting down")
                send(error_response(request_id, error))
            reason = str(stopped) or f"the client read nothing for {WRITE_TIMEOUT:g} s"
            log(f"{self.info['name']}: {reason}; cancelled {len(in_flight)}")
        writer.close()  # flushes what is buffered before the pipe closes
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):  # a signal: stop waiting
            await asyncio.wait_for(writer.wait_closed(), WRITE_TIMEOUT)

    def receive_line(self, line, size, session, send):
        """One line from the client (and its size: see read_lines). A request starts a task that
        answers it; a notification, or a response to one of our requests, goes to
        handle_notification; whatever is broken gets an error answer, unless it is a
        notification or a response."""
        message = {}
        try:
            message = parse_message(line, size)
            if "method" in message or not ("result" in message or "error" in message):
                check_request(message)  # a request or a notification, else a response to ours
            if "method" not in message or "id" not in message:  # nothing to answer
                return self.handle_notification(message, session)
            if message["id"] in session["in_flight"]:
                raise MCPError(INVALID_REQUEST, f"Invalid Request: id {message['id']!r} is in use")
            task = asyncio.ensure_future(self.answer(message, session, send))
            session["in_flight"][message["id"]] = task
        except MCPError as e:
            if "id" in message or not isinstance(message.get("method"), str):  # not a notification
                send(error_response(message.get("id") if valid_id(message.get("id")) else None, e))

    async def answer(self, message, session, send):
        # Sending from inside the task, not from a done-callback, saves an event-loop turn.
        response = await self.handle(message, send, session)
        # Only while in_flight holds this task: a tool that swallowed its cancellation returns,
        # but a cancelled request gets no answer, and a later request may have its id by now.
        if session["in_flight"].get(message["id"]) is asyncio.current_task():
            del session["in_flight"][message["id"]]
            send(response)


def cancel_request(server, message, session):
    """notifications/cancelled stops a request, which then gets no answer; an unknown id is
    ignored (spec: utilities/cancellation)."""
    request_id = message.get("params", {}).get("requestId")
    if valid_id(request_id) and request_id in session["in_flight"]:
        session["in_flight"].pop(request_id).cancel()


# --- The seams: the tables the core dispatches on, after the class they name ---
#
# Part B's sections and the extensions (mcp_tasks.py, mcp_skills.py) change the core only here:
# they add entries to these tables, or wrap one (METHODS[m]._replace(handler=...)). They never
# replace a method of Server or Context; they may add new ones (Server.resource, Context.elicit).
#
# METHODS: request method -> Method(handler(server, params, ctx) -> result; the capability
# initialize and server/discover advertise for it, if any; era: "legacy" or "modern" if only one
# has it; ttl_ms: how long a 2026-07-28 client may cache the result). A method whose capability
# has nothing in server.registries (no tool yet, say), or that the request's era lacks, is not
# found. A capability with a "/" is an extension's id, advertised under "extensions".
Method = collections.namedtuple("Method", "handler capability era ttl_ms", defaults=(None,) * 3)
METHODS = {"initialize": Method(Server.initialize, era="legacy"),  # the legacy handshake
           "ping": Method(Server.ping, era="legacy"),  # the one request allowed before initialize
           "server/discover": Method(Server.discover, ttl_ms=DEFINITIONS_TTL_MS),
           "tools/list": Method(Server.list_tools, "tools", ttl_ms=DEFINITIONS_TTL_MS),
           "tools/call": Method(Server.call_tool, "tools")}
# NOTIFICATIONS: notification method -> handler(server, message, session); under None, what
# answers a request of ours (a response has no method: section 11 adds it, as the core asks
# nothing).
NOTIFICATIONS = {"notifications/cancelled": cancel_request}
# AT_END: functions(server, session) called when a client leaves, or with None when the server
# stops (Server.end_streams).
AT_END = []
# CAPABILITY_FIELDS: what a capability holds besides being there (section 12: listChanged).
CAPABILITY_FIELDS = {}
# REQUEST_ANSWERS: what a function we were given may raise that is not its failure, but its
# request's own answer: an MCPError (a question the client cannot be asked, say), and section
# 11's InputRequired.
REQUEST_ANSWERS = [MCPError]


async def open_pipes(wire_in, wire_out):
    """asyncio streams on the files of stdin and stdout. They must be pipes, sockets or terminals,
    as MCP hosts give: epoll cannot watch a regular file (replay one with `cat requests.jsonl |
    server.py`)."""
    for file, name in ((wire_in, "stdin"), (wire_out, "stdout")):
        kind = stat.S_IFMT(os.fstat(file.fileno()).st_mode)
        if kind not in (stat.S_IFIFO, stat.S_IFSOCK) and not file.isatty():
            raise SystemExit(f"mcp_min: {name} must be a pipe, a socket or a terminal")
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), wire_in)
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())  # gives drain() and close()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, wire_out)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


# === The core ends here: a complete tools server. Cut below this line for a tools-only copy. ===
# Part B: the rest of MCP. Each section adds to the core what its part of the spec needs, only
# through the seams (the tables at the end of section 6), and new decorators and methods on
# Server and Context. Each uses only what is above it, so the file can be cut at the start of any
# section. What each changes:
#   7. Pagination        METHODS: tools/list replaced by a paging one
#   8. Resources         METHODS: resources/list, resources/templates/list, resources/read;
#                        Server.resource
#   9. Prompts           METHODS: prompts/list, prompts/get; Server.prompt
#  10. Completion        METHODS: completion/complete
#  11. Asking the user   METHODS: tools/call, prompts/get, resources/read wrapped (asking);
#                        NOTIFICATIONS[None]: the client's answers; REQUEST_ANSWERS: InputRequired;
#                        Context.elicit, ask, request, retry_later
#  12. Changes           METHODS: initialize wrapped, resources/(un)subscribe, subscriptions/listen;
#                        NOTIFICATIONS["notifications/cancelled"] wrapped (a listen ends);
#                        AT_END: listens end; CAPABILITY_FIELDS: listChanged, subscribe;
#                        Server.list_changed, resource_updated
# The extensions, in files of their own, use the same seams: mcp_tasks.py (tasks) and
# mcp_skills.py (skills), each advertised under capabilities.extensions once a server uses it.


# === 7. Pagination: lists in pages (spec: server/utilities/pagination) ===
#
# The core sends its whole list of tools at once. From here on, every list comes in pages of
# PAGE_SIZE, and nextCursor says where the next one starts: tools/list, and the lists below.

PAGE_SIZE = 100


def page(items, params, key):
    """One page of a list result. A cursor is the index where a page starts; one this server
    would not give is refused, so that the client starts over."""
    cursor = params.get("cursor")
    if cursor is not None and cursor not in map(str, range(PAGE_SIZE, len(items), PAGE_SIZE)):
        raise MCPError(INVALID_PARAMS, f"Invalid params: unknown cursor {json.dumps(cursor)[:40]}")
    start = int(cursor or 0)
    next_cursor = str(start + PAGE_SIZE) if start + PAGE_SIZE < len(items) else None
    return without_none({key: items[start:start + PAGE_SIZE], "nextCursor": next_cursor})


async def list_tools_in_pages(server, params, ctx):
    return page([tool.definition for tool in server.tools.values()], params, "tools")


METHODS["tools/list"] = METHODS["tools/list"]._replace(handler=list_tools_in_pages)


# === 8. Resources and templates (spec: server/resources) ===
#
# @server.resource(uri) makes a function serve resources/read for a URI, or for every URI that a
# template such as doc:///{name} matches; resources/list and resources/templates/list say what
# there is. Adds the "resources" capability once one is registered.
import base64, re, urllib.parse  # each part of the file imports what it needs

# A resource (or a prompt), as registered: its function; its definition (what a list sends); the
# schema of its variables (a prompt's arguments); their completers; the name of its Context
# parameter; and for a resource, the regular expression its URIs match, and its listing function.
Feature = collections.namedtuple(
    "Feature", "func definition schema completers context_param pattern listing",
    defaults=(None, None))


def string_field(params, key):  # a string that a request's params, or an object in them, must hold
    value = params.get(key) if isinstance(params, dict) else None
    if not isinstance(value, str):
        raise MCPError(INVALID_PARAMS, f'Invalid params: "{key}" must be a string')
    return value


def resource(self, uri, name=None, title=None, description=None, mime_type=None, listing=None,
             complete=None):
    """Decorator: the function serves resources/read for uri. A uri with variables, such as
    doc:///{name}, is a template (RFC 6570, level 1): each variable matches one path segment
    of a URI, and its value, percent-decoded, is the function's keyword argument of that name
    (one parameter per variable, a str). The function returns a str (a text), bytes (a blob,
    sent in base64), a list of contents dicts ({"uri", "mimeType", "text" or "blob"}), or
    None: no such resource. description defaults to the docstring.
    listing: for a template, a function that returns the resources it serves, for
    resources/list: dicts with "uri" and "name" at least (the spec's Resource).
    complete: {variable: function(value, arguments) -> list of str} for completion/complete
    (section 10): value is what the user typed so far, arguments the variables already filled
    in (values of a Literal hint complete without one)."""
    def register(func):
        schema, context_param = describe_parameters(func, f"resource {uri}")
        # The URI matches as written, but for each {variable}: one path segment, not empty.
        pattern = re.compile(re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/?#]+)", re.escape(uri)))
        if set(pattern.groupindex) != set(schema.get("properties", {})):  # {+path}, say
            raise TypeError(f"resource {uri}: give the function one parameter for each "
                            "{variable} of the URI, of the same name (RFC 6570, level 1)")
        fields = {"uriTemplate" if pattern.groupindex else "uri": uri, "mimeType": mime_type}
        definition = define(func, name, title, description or inspect.getdoc(func), **fields)
        found = Feature(func, definition, schema, complete or {}, context_param, pattern, listing)
        self.registries.setdefault("resources", {})[uri] = found
        # What completion/complete (section 10) completes: this template's variables.
        self.registries.setdefault("completions", {})[("ref/resource", uri)] = found
        return func
    return register


Server.resource = resource  # @server.resource(...) from here on


async def list_resources(server, params, ctx):
    """resources/list: the fixed resources, then those each template's listing function gives."""
    resources = server.registries["resources"].values()
    listed = [found.definition for found in resources if not found.pattern.groupindex]
    for found in resources:
        listed += await call(found.listing) if found.listing else []
    return page(listed, params, "resources")


async def list_templates(server, params, ctx):
    resources = server.registries["resources"].values()
    templates = [found.definition for found in resources if found.pattern.groupindex]
    return page(templates, params, "resourceTemplates")


async def read_resource(server, params, ctx):
    """resources/read: the first resource, in the order registered, whose URI or template
    matches. A template's values come from the client: each is one path segment, percent-
    decoded. An encoded "/" (%2F) may join the parts of a nested name ("guide%2Finstall.md"),
    but a part that is empty, "." or "..", or holds NUL, matches nothing.
    Nothing found, or a function's None: -32602 with the URI in data (SEP-2164; the 2025
    texts suggested -32002). A function that fails: -32603, from Server.handle."""
    uri = string_field(params, "uri")
    value = None
    for found in server.registries["resources"].values():
        match = found.pattern.fullmatch(uri)
        values = [urllib.parse.unquote(text) for text in match.groups()] if match else []
        parts = [part for text in values for part in text.split("/")]
        if match and not any(part in ("", ".", "..") or "\0" in part for part in parts):
            arguments = dict(zip(found.pattern.groupindex, values))
            arguments.update({found.context_param: ctx} if found.context_param else {})
            value = await call(found.func, **arguments)
            break
    if value is None:
        raise MCPError(INVALID_PARAMS, f"Resource not found: {uri[:200]}; resources/list and "
                                       "resources/templates/list say what exists", {"uri": uri})
    if isinstance(value, str):  # one text
        value = [without_none({"uri": uri, "mimeType": found.definition.get("mimeType"),
                               "text": value})]
    elif isinstance(value, bytes):  # one blob, in base64
        value = [without_none({"uri": uri, "mimeType": found.definition.get("mimeType"),
                               "blob": base64.b64encode(value).decode()})]
    return {"contents": value}


# What a server reads may change at any time: a client may cache none of it (ttl 0).
METHODS["resources/list"] = Method(list_resources, "resources", ttl_ms=0)
METHODS["resources/templates/list"] = Method(list_templates, "resources",
                                             ttl_ms=DEFINITIONS_TTL_MS)
METHODS["resources/read"] = Method(read_resource, "resources", ttl_ms=0)


# === 9. Prompts (spec: server/prompts) ===
#
# @server.prompt() makes a function a prompt template: prompts/list lists them, prompts/get fills
# one in with the client's arguments. Adds the "prompts" capability once one is registered.

def prompt(self, name=None, title=None, complete=None):
    """Decorator: the function becomes a prompt; its name, docstring and parameters define it,
    and Annotated[str, "text"] describes a parameter. Arguments arrive as strings, checked
    like a tool's. It returns a str (one user message) or a list of messages {"role": "user"
    or "assistant", "content": a text, image, audio or resource content block}. complete: as
    for resource(), {argument: function(value, arguments) -> list of str}."""
    def register(func):
        schema, context_param = describe_parameters(func, f"prompt {name or func.__name__}")
        arguments = [without_none({"name": key, "description": value.get("description"),
                                   "required": key in schema.get("required", ())})
                     for key, value in schema.get("properties", {}).items()]
        definition = define(func, name, title, inspect.getdoc(func), arguments=arguments)
        found = Feature(func, definition, schema, complete or {}, context_param)
        self.registries.setdefault("prompts", {})[definition["name"]] = found
        # What completion/complete (section 10) completes: this prompt's arguments.
        self.registries.setdefault("completions", {})[("ref/prompt", definition["name"])] = found
        return func
    return register


Server.prompt = prompt  # @server.prompt(...) from here on


async def list_prompts(server, params, ctx):
    prompts = server.registries["prompts"].values()
    return page([found.definition for found in prompts], params, "prompts")


async def get_prompt(server, params, ctx):
    """prompts/get. An unknown prompt, a missing argument or one it does not take: -32602,
    saying what to send instead."""
    name = string_field(params, "name")
    found = server.registries["prompts"].get(name)
    if not found:
        raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}; see prompts/list")
    try:
        arguments = validate(params.get("arguments") or {}, found.schema)
    except ValueError as e:
        raise MCPError(INVALID_PARAMS, f"Invalid arguments for prompt {name}: {e}") from None
    arguments.update({found.context_param: ctx} if found.context_param else {})
    messages = await call(found.func, **arguments)
    if isinstance(messages, str):
        messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
    return {"messages": messages}


METHODS["prompts/list"] = Method(list_prompts, "prompts", ttl_ms=DEFINITIONS_TTL_MS)
METHODS["prompts/get"] = Method(get_prompt, "prompts")


# === 10. Completion (spec: server/utilities/completion) ===
#
# completion/complete suggests values for an argument of a prompt, or a variable of a resource
# template, as the user types. Adds the "completions" capability wherever there are prompts or
# resources (sections 8 and 9 register what can be completed).

async def complete(server, params, ctx):
    """completion/complete: at most 100 values for an argument of a prompt or a URI template:
    its completer's, else those of its Literal hint that start with what was typed."""
    ref = params.get("ref")
    argument = params.get("argument")
    name = string_field(argument, "name")
    value = string_field(argument, "value")
    kind = string_field(ref, "type")
    key = "name" if kind == "ref/prompt" else "uri"
    found = kind in ("ref/prompt", "ref/resource") and server.registries["completions"].get(
        (kind, string_field(ref, key)))
    if not found:
        raise MCPError(INVALID_PARAMS, "Invalid params: no such prompt or resource template; "
                                       "see prompts/list and resources/templates/list")
    context = params.get("context") if isinstance(params.get("context"), dict) else {}
    filled = context.get("arguments") if isinstance(context.get("arguments"), dict) else {}
    literal = found.schema.get("properties", {}).get(name, {}).get("enum", [])
    values = [choice for choice in literal if str(choice).startswith(value)]
    if name in found.completers:
        values = list(await call(found.completers[name], value, filled))
    return {"completion": {"values": values[:100], "total": len(values),
                           "hasMore": len(values) > 100}}


METHODS["completion/complete"] = Method(complete, "completions")


# === 11. Asking the user: elicitation (spec: client/elicitation; 2026-07-28: input_required) ===
#
# A tool, a prompt or a resource function may ask the user to fill in a form, through its
# Context: ctx.elicit(message, schema). In the legacy era the server sends the client a real
# request, elicitation/create, and waits for its answer (receive_response). 2026-07-28 has no
# requests from the server: the result says input_required, with the questions and a signed
# requestState; the client asks the user and sends the same request again, with the answers, and
# the function runs again from the top, this time finding them.
import hashlib, hmac, secrets, time, weakref

MISSING_CAPABILITY = -32021  # 2026-07-28: a request needs a capability the client did not declare
ANSWER_TIMEOUT = 600.0  # seconds a client gets to answer our request (a person fills in a form)
STATE_TTL = 600  # seconds a 2026-07-28 requestState stays valid
# Our requests still waiting for an answer, every client's: when the server stops, none can come.
OPEN_QUESTIONS = weakref.WeakSet()
# What an elicitation form may hold: a flat object of primitives, each with a default if wanted
# (SEP-1034); enums in the five forms of SEP-1330: a string with enum, oneOf [{const, title}] or
# enum + enumNames; an array whose items have enum or anyOf.
FORM_KEYS = {"string": {"minLength", "maxLength", "format", "enum", "enumNames", "oneOf"},
             "number": {"minimum", "maximum"}, "integer": {"minimum", "maximum"},
             "boolean": set(), "array": {"items", "minItems", "maxItems"}}
FORMATS = (None, "email", "uri", "date", "date-time")


class InputRequired(BaseException):
    """Context.ask raises it in 2026-07-28 when a question has no answer yet: the function stops,
    and the request answers input_required (SEP-2322). A BaseException, so that a tool's `except
    Exception` does not swallow it. Its args: the requests still unanswered, {key: {"method",
    "params"}}, and retry_later's memo."""


REQUEST_ANSWERS.append(InputRequired)  # not a failure of the function that raised it


async def elicit(self, message, schema, key="answer"):
    """Context.elicit: ask the user to fill in a form, a flat object of primitives (see
    check_form). Returns the client's {"action": "accept" | "decline" | "cancel", "content"?:
    {...}}. key names the question, unique within the call: in 2026-07-28 the retry answers it
    under that key."""
    check_form(schema)
    params = {"mode": "form", "message": message, "requestedSchema": schema}
    return (await self.ask({key: {"method": "elicitation/create", "params": params}}))[key]


def elicit_sync(self, message, schema, key="answer"):
    """Context.elicit_sync: elicit() for a def function, which runs in a worker thread: it waits
    for the answer, or until the request is over (cancelled, or the server stops: the loop that
    would bring the answer may be gone, and a thread that waits for good keeps the process)."""
    asking = asyncio.run_coroutine_threadsafe(self.elicit(message, schema, key), self.loop)
    while not self.cancelled:  # elicit() has its own timeout; this looks each second
        with contextlib.suppress(TimeoutError):
            return asking.result(1)
    raise asyncio.CancelledError("the request ended before the client answered")


def retry_later(self, memo=None):
    """Context.retry_later, 2026-07-28 only: answer "come back later", a result with only
    requestState. The retry runs the function again, with ctx.memo = memo (any JSON value:
    signed, but readable)."""
    raise InputRequired({}, memo) if self.modern else RuntimeError("needs 2026-07-28")


async def ask(self, requests):
    """Context.ask: send the client requests, {key: {"method", "params"}}, all at once; returns
    {key: its result}. Each needs the client capability its method starts with, else -32021: for
    elicitation/create, "elicitation" (sampling/createMessage: "sampling"). Legacy: real
    requests, over stdio or on the call's SSE stream. 2026-07-28: the retry's answers, or
    InputRequired for those still missing, all asked in one round."""
    for name in {request["method"].partition("/")[0] for request in requests.values()}:
        if name not in self.capabilities:
            raise MCPError(MISSING_CAPABILITY, f"Missing required client capability: {name}",
                           {"requiredCapabilities": {name: {}}})
    if not self.modern:
        answers = await asyncio.gather(*map(self.request, requests.values()))
    elif requests.keys() - self.answers.keys():
        raise InputRequired({k: r for k, r in requests.items() if k not in self.answers}, None)
    else:
        answers = [self.answers[key] for key in requests]
        self.used.update(zip(requests, answers))
    return {key: check_answer(requests[key], answer) for key, answer in zip(requests, answers)}


async def request(self, request):
    """Context.request, legacy: one request to the client, and its result. The client's
    response comes back through receive_response, below. No answer in ANSWER_TIMEOUT, or an
    error: it raises."""
    # The id is unguessable, so that no other peer can answer for this client.
    request_id = f"mcp-min-{secrets.token_hex(8)}"
    asked = self.session.setdefault("asked", {})
    asked[request_id] = self.loop.create_future()
    OPEN_QUESTIONS.add(asked[request_id])
    try:
        self.send({"jsonrpc": "2.0", "id": request_id, **request})
        response = await asyncio.wait_for(asked[request_id], ANSWER_TIMEOUT)
    except TimeoutError:
        raise TimeoutError(f"{request['method']}: no answer in {ANSWER_TIMEOUT:g} s") from None
    finally:
        asked.pop(request_id, None)
    if not isinstance(response.get("result"), dict):
        raise RuntimeError(f"{request['method']} failed: {str(response.get('error'))[:200]}")
    return response["result"]


Context.elicit = elicit
Context.elicit_sync = elicit_sync
Context.retry_later = retry_later
Context.ask = ask
Context.request = request


def receive_response(server, message, session):
    """A client's answer to one of our requests (Context.request) goes to the call that waits
    for it. One with an id nobody asked for, or answered already, is ignored."""
    waiting = session.get("asked", {}).get(str(message.get("id")))  # our ids are strings
    if waiting and not waiting.done():
        waiting.set_result(message)


NOTIFICATIONS[None] = receive_response  # a response has no method


def end_questions(server, session):
    """AT_END: a client that left, or every client when the server stops, answers nothing more:
    our requests fail now, not after ANSWER_TIMEOUT, so that the calls that wait end (a def
    tool's thread in elicit_sync too) and the server exits."""
    loop = asyncio.get_running_loop()  # this server's: another may run in the same process
    questions = session.get("asked", {}).values() if session else OPEN_QUESTIONS
    reason = "the client left before it answered" if session else "the server is stopping"
    for waiting in [q for q in questions if q.get_loop() is loop and not q.done()]:
        waiting.set_exception(ConnectionError(reason))


AT_END.append(end_questions)


def check_form(schema):
    """Refuse a requestedSchema that a client need not render, saying why (TypeError)."""
    fields = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(fields, dict) or schema.get("type") != "object":
        raise TypeError('a form is {"type": "object", "properties": {...}, "required": [...]}')
    for name, field in fields.items():
        kind = field.get("type") if isinstance(field, dict) else None
        allowed = FORM_KEYS.get(kind, set()) | {"type", "title", "description", "default"}
        if kind not in FORM_KEYS or field.keys() - allowed or field.get("format") not in FORMATS:
            raise TypeError(f"form field {name!r}: a primitive or enum with only {sorted(allowed)}")


def check_answer(request, answer):
    """An answer is an object; one to an elicitation has an action, and content that is an
    object. A malformed answer is the request's error (-32602)."""
    form = answer if request["method"] == "elicitation/create" else {"action": "accept"}
    if not (isinstance(answer, dict) and form.get("action") in ("accept", "decline", "cancel")
            and isinstance(form.get("content", {}), dict)):
        raise MCPError(INVALID_PARAMS, f"Invalid params: a malformed answer to {request['method']}")
    return answer


def asking(handler):
    """A handler whose function may ask the client (tools/call, prompts/get, resources/read), for
    2026-07-28: a question still unanswered makes the result input_required, with the questions
    under their keys and a signed requestState; the retry brings the answers: those of this
    round for the keys asked (others are ignored), and of earlier ones, in the state."""
    async def answer_or_ask(server, params, ctx):
        ctx.answers = {}  # the answers this request brings, by key
        ctx.used = {}  # those the function has read so far: the next round's state keeps them
        ctx.memo = None  # what retry_later left for the next round
        responses = params.get("inputResponses")
        state = params.get("requestState")
        if ctx.modern and (responses or state is not None):  # a retry, and the answers it brings
            responses = responses if isinstance(responses, dict) else {}  # each: check_answer
            if state is None:  # the first round's answers
                state = {"asked": list(responses), "answers": {}, "memo": None}
            else:
                state = unseal(server, state, binding(ctx.message, ctx.session))
            fresh = {key: responses[key] for key in state["asked"] if key in responses}
            ctx.answers = {**state["answers"], **fresh}
            ctx.memo = state["memo"]
        try:
            return await handler(server, params, ctx)
        except InputRequired as asked:
            requests, memo = asked.args
            state = {"for": binding(ctx.message, ctx.session), "expires": time.time() + STATE_TTL,
                     "asked": list(requests), "answers": ctx.used, "memo": memo}
            body = base64.urlsafe_b64encode(encode(state).strip()).decode()
            return without_none({"resultType": "input_required", "inputRequests": requests or None,
                                 "requestState": body + "." + signature(server, body)})
    return answer_or_ask


for asking_method in ("tools/call", "prompts/get", "resources/read"):
    METHODS[asking_method] = METHODS[asking_method]._replace(
        handler=asking(METHODS[asking_method].handler))


def binding(message, session):
    """What a requestState is valid for: this method, name and arguments, and this user."""
    params = message.get("params", {})
    name = params.get("uri") if message["method"] == "resources/read" else params.get("name")
    fields = [message["method"], name, params.get("arguments"), user_of(session)]
    return hashlib.sha256(encode(fields)).hexdigest()


def user_of(session):
    """Who is asking, as text: the subject the HTTP token check found ("None" on stdio)."""
    auth = session.get("auth")
    return repr(auth.get("subject", auth.get("sub", auth)) if isinstance(auth, dict) else auth)


def signature(server, body):
    """requestState is its fields as base64url JSON, a dot, and this HMAC-SHA256 of them.
    Signed, so that nobody can forge or change it; not encrypted: the client can read it. The
    key: the Server's state_key, else $MCP_STATE_KEY (replicas behind one load balancer share
    it), else a random key for this server."""
    if not server.state_key:
        server.state_key = os.environ.get("MCP_STATE_KEY") or secrets.token_hex(32)
    key = server.state_key
    key = key.encode() if isinstance(key, str) else key
    return hmac.new(key, body.encode(), "sha256").hexdigest()


def unseal(server, state, expected):
    """The fields of a requestState that we signed, for this request, not expired yet. All
    other states get the same error: a forger learns nothing from it."""
    body, _, mac = str(state).partition(".")
    if hmac.compare_digest(mac.encode(), signature(server, body).encode()):  # the body is ours
        fields = json.loads(base64.urlsafe_b64decode(body))
        if fields["for"] == expected and fields["expires"] > time.time():
            return fields
    raise MCPError(INVALID_PARAMS, "Invalid params: invalid, expired or misplaced requestState")


# === 12. Change notifications (spec: server/resources Subscriptions, list_changed; 2026-07-28:
#         basic/patterns/subscriptions) ===
#
# Server code announces a change from any thread: server.list_changed("tools") when a list
# changed, server.resource_updated(uri) when a resource did. Each client that listens hears of
# it: a legacy client hears of list changes from initialize on, and of a resource once it
# subscribed (resources/subscribe); a 2026-07-28 client opens a stream, subscriptions/listen, and
# says what it wants to hear of. Adds listChanged (and subscribe) to the capabilities.
import weakref

LISTS = ("tools", "prompts", "resources")  # the lists whose changes a client may hear of
MAX_LISTENS = 16  # listen streams one client may have open at once
MAX_SUBSCRIPTIONS = 1000  # resources one client may subscribe to
MAX_QUEUED = 1024  # announcements waiting for the event loop; past that, changes are dropped
CAPABILITY_FIELDS.update(tools={"listChanged": True}, prompts={"listChanged": True},
                         resources={"listChanged": True, "subscribe": True})


class Listener:
    """Where change notifications go: a legacy client, or a subscriptions/listen stream, whose
    notifications carry the listen's id (tag). `wants` holds the topics it hears of: the lists
    ("tools", "prompts", "resources") and the URIs of resources (each has a ":", a list's name
    none). It is in the server's listeners while its session or its listen holds it."""

    def __init__(self, server, send, wants, tag=None):
        self.send = send
        self.wants = wants
        self.tag = tag or {}
        self.ended = asyncio.Event()  # set when a listen stream ends
        changes = changes_of(server)
        changes.loop = asyncio.get_running_loop()  # where announce() hands changes to
        changes.listeners.add(self)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": {**params, **self.tag}})


class Changes:
    """What a server keeps for its change notifications, made with the first Listener."""

    def __init__(self):
        self.listeners = weakref.WeakSet()  # a listener goes with what holds it
        self.loop = None  # the event loop that serves the listeners
        self.queued = 0  # announcements waiting for that loop


def changes_of(server):
    """The server's Changes: kept in its registries, under "changes" (no method names it)."""
    return server.registries.setdefault("changes", Changes())


def list_changed(self, kind):
    """Server.list_changed: tell clients that the list of "tools", "prompts" or "resources"
    changed: every legacy client, and each listen stream that asked for it. Safe to call from
    any thread."""
    announce(self, f"notifications/{kind}/list_changed", {}, kind)


def resource_updated(self, uri):
    """Server.resource_updated: tell the clients that subscribed to uri that it changed: they
    read it again if they care. Safe to call from any thread."""
    announce(self, "notifications/resources/updated", {"uri": uri}, uri)


Server.list_changed = list_changed
Server.resource_updated = resource_updated


def announce(server, method, params, topic):
    """From any thread: the event loop sends the notification to each listener of the topic.
    While MAX_QUEUED wait for the loop (a flood of changes), more are dropped: a change is a
    hint to read again, and memory stays flat. A slow client's own send drops them too."""
    changes = changes_of(server)
    if changes.loop and changes.queued < MAX_QUEUED:
        changes.queued += 1
        with contextlib.suppress(RuntimeError):  # the event loop has closed
            changes.loop.call_soon_threadsafe(deliver, changes, method, params, topic)


def deliver(changes, method, params, topic):  # on the event loop
    changes.queued -= 1
    for listener in [listener for listener in changes.listeners if topic in listener.wants]:
        listener.notify(method, params)


async def initialize_and_listen(server, params, ctx):
    """initialize, and from then on the legacy client hears of list changes: over stdio through
    the request's send, over HTTP on its session's GET stream (notify)."""
    result = await Server.initialize(server, params, ctx)
    ctx.session["listener"] = Listener(server, ctx.session.get("notify") or ctx.send, set(LISTS))
    return result


async def subscribe(server, params, ctx):
    """resources/subscribe and resources/unsubscribe (legacy): notifications/resources/updated
    for the URIs subscribed to. A URI that cannot be read is not found, as for resources/read;
    to unsubscribe from a URI not subscribed to is no error."""
    await METHODS["resources/read"].handler(server, params, ctx)
    topics = ctx.session["listener"].wants
    if ctx.message["method"] == "resources/unsubscribe":
        topics.discard(params["uri"])
    elif len(topics) > MAX_SUBSCRIPTIONS:
        raise MCPError(INVALID_REQUEST, f"Invalid Request: over {MAX_SUBSCRIPTIONS} URIs")
    else:
        topics.add(params["uri"])
    return {}


async def listen(server, params, ctx):
    """subscriptions/listen (2026-07-28): first the acknowledgement, with the part of the filter
    honoured (the lists this server has; URIs if it has resources), then what server code
    announces, until the client cancels (stdio), closes the stream (HTTP: that cancels the
    request) or the server stops: then the complete result."""
    asked = params.get("notifications")
    listening = ctx.session.setdefault("listening", {})
    uris = asked.get("resourceSubscriptions", []) if isinstance(asked, dict) else None
    if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris) \
            or len(uris) > MAX_SUBSCRIPTIONS or len(listening) >= MAX_LISTENS:
        raise MCPError(INVALID_PARAMS, f'Invalid params: "notifications" must be a filter, of '
                       f"at most {MAX_SUBSCRIPTIONS} URIs; {MAX_LISTENS} listens a client")
    lists = [kind for kind in LISTS
             if server.registries.get(kind) and asked.get(kind + "ListChanged")]
    uris = list(dict.fromkeys(uris)) if server.registries.get("resources") else []
    honoured = {kind + "ListChanged": True for kind in lists}
    if uris:
        honoured["resourceSubscriptions"] = uris
    request_id = ctx.message["id"]
    tag = {"_meta": {META + "subscriptionId": request_id}}
    listener = Listener(server, ctx.send, {*lists, *uris}, tag)
    listening[request_id] = listener  # where notifications/cancelled finds it
    listener.notify("notifications/subscriptions/acknowledged", {"notifications": honoured})
    await listener.ended.wait()  # a cancelled listen (HTTP) leaves with its session
    del listening[request_id]
    return dict(tag)  # the complete result carries the id too


METHODS["initialize"] = METHODS["initialize"]._replace(handler=initialize_and_listen)
METHODS["resources/subscribe"] = Method(subscribe, "resources", era="legacy")
METHODS["resources/unsubscribe"] = Method(subscribe, "resources", era="legacy")
METHODS["subscriptions/listen"] = Method(listen, era="modern")


def cancel_request_or_listen(server, message, session):
    """notifications/cancelled of a listen ends its stream, which then answers its complete
    result; any other request is cancelled as the core does."""
    request_id = message.get("params", {}).get("requestId")
    listener = session.get("listening", {}).get(request_id) if valid_id(request_id) else None
    if listener:
        listener.ended.set()
    else:
        cancel_request(server, message, session)


def end_listens(server, session):
    """The client is gone, or the server stops: listen streams end, with their complete result
    (session None: every listener of this server)."""
    ended = session.get("listening", {}).values() if session else changes_of(server).listeners
    for listener in ended:
        listener.ended.set()


NOTIFICATIONS["notifications/cancelled"] = cancel_request_or_listen
AT_END.append(end_listens)


def close_stream(self):
    """Context.close_stream, SSE polling (Streamable HTTP at 2025-11-25, SEP-1699): end this
    call's SSE stream now; the client reconnects with GET and Last-Event-ID, and the rest of the
    call (its progress, its result) comes there, as change notifications do on a session's GET
    stream. Call it from the event loop (an async tool). Elsewhere it does nothing."""
    getattr(self.send, "close_stream", lambda: None)()


Context.close_stream = close_stream
