"""mcp_min: an MCP server in one file, standard library only.

A Server turns typed, documented Python functions into MCP tools, resources and prompts, and
serves them over stdio: newline-delimited JSON-RPC 2.0 on stdin and stdout. It speaks both eras
of the spec, chosen per request: the legacy `initialize` handshake (2024-11-05 ... 2025-11-25)
and the stateless 2026-07-28 revision, where every request carries its protocol version in
`params._meta`.

    from typing import Annotated
    from mcp_min import Server
    server = Server("demo")
    NOTES = {"todo": "Write the tests.", "shop": "Milk, eggs."}

    @server.tool()
    def add(a: int, b: int = 1) -> int:
        '''Add two numbers.'''
        return a + b

    def note_names(typed, arguments):      # completes a note's name from what the user typed
        return [name for name in NOTES if name.startswith(typed)]

    @server.resource("note:///{name}", mime_type="text/plain", complete={"name": note_names},
                     listing=lambda: [{"uri": f"note:///{n}", "name": n} for n in NOTES])
    def note(name: str) -> str | None:      # a template: note:///todo is a resource
        return NOTES.get(name)              # None: no such note

    @server.prompt(complete={"name": note_names})
    def summarize(name: Annotated[str, "the note to summarize"]) -> str:
        '''Ask for a summary of one note.'''
        return f"Summarize this note in one line: {NOTES.get(name, '(none)')}"

    server.run()        # python demo.py: serves stdin/stdout until stdin closes

Copy this file into your project; it needs nothing else. The client side is the Client class at
the top of client.py; Streamable HTTP is mcp_http.py. The sections follow a request through the
server, top to bottom:
  1. The wire: bytes in, lines out, and the size limit.
  2. JSON-RPC: a line becomes a message, or an error answer.
  3. Definitions: a function becomes a tool, a prompt or a resource; arguments are checked; a
     tool's return value becomes a result.
  4. The server: each request is answered in the era it asks for. Start reading at Server.handle.
     Then questions for the user (Context.elicit): a real elicitation/create request in the
     legacy era, an input_required result with a signed requestState in 2026-07-28; and change
     notifications (resources/subscribe, list_changed, 2026-07-28's subscriptions/listen).
  5. Resources, prompts and completion: reading, getting, completing, and pages of lists.
  6. The stdio loop: reading, backpressure, shutdown.
Spec: https://modelcontextprotocol.io/specification (2025-11-25 and 2026-07-28).
"""
import asyncio, base64, collections, concurrent.futures, contextlib, functools, hashlib, hmac
import inspect, json, math, os, re, secrets, signal, stat, sys, threading, time
import traceback, types, typing, urllib.parse, weakref

LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]  # oldest first
MODERN_VERSIONS = ["2026-07-28"]
META = "io.modelcontextprotocol/"  # prefix of the per-request _meta fields of the modern era
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a longer line is refused and skipped, never held whole
MAX_IN_FLIGHT = 512  # requests running at once; past that, stdin waits (backpressure)
MAX_THREADS = 64  # worker threads for sync functions: tools, resources, prompts, completers
MAX_BACKLOG = 1024 * 1024  # bytes a slow client may leave unread before we wait for it
WRITE_TIMEOUT = 30.0  # seconds a client may read nothing while answers wait; then it is gone
PAGE_SIZE = 100  # items in one page of a list result; nextCursor says where the next one starts
# Change notifications: per client, listen streams open at once and resource subscriptions; and
# announcements waiting for the event loop (past that, changes are dropped, not queued).
MAX_LISTENS, MAX_SUBSCRIPTIONS, MAX_QUEUED = 16, 1000, 1024
LISTS = ("tools", "prompts", "resources")  # the lists whose changes a client may hear of
# 2026-07-28 results a client may cache, and for how many milliseconds (spec: utilities/caching).
# Definitions change only with the code; what a resource's function returns may change any time.
CACHE_TTL_MS = {"server/discover": 3_600_000, "tools/list": 3_600_000, "prompts/list": 3_600_000,
                "resources/templates/list": 3_600_000, "resources/list": 0, "resources/read": 0}
ANSWER_TIMEOUT = 600.0  # seconds a client gets to answer our request (a person fills in a form)
STATE_TTL = 600  # seconds a 2026-07-28 requestState stays valid
# The JSON-RPC 2.0 error codes, and two that 2026-07-28 adds: no protocol version in common, and
# a request that needs a capability the client did not declare.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INTERNAL_ERROR, UNSUPPORTED_VERSION, MISSING_CAPABILITY = -32603, -32022, -32021


class MCPError(Exception):
    """A JSON-RPC error: raised by handlers in the server, and by a client when one comes back."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{message} ({code})")
        self.code, self.message, self.data = code, message, data


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
        print(text, file=sys.stderr, flush=True)


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
    """Yield each line that the coroutine read() brings, as bytes. A line over the limit is never
    held whole: only its first bytes are kept, and (its first 200 bytes, its size) is yielded."""
    kept, size = b"", 0  # the line so far: its first limit + 1 bytes at most, and its full size
    while chunk := await read():
        *ends, rest = chunk.split(b"\n")
        for end in ends:
            line, size = kept + end[:limit + 1 - len(kept)], size + len(end)
            yield line if size <= limit else (line[:200], size)
            kept, size = b"", 0
        kept, size = kept + rest[:limit + 1 - len(kept)], size + len(rest)
    if kept.strip():  # a last message without its newline still counts
        yield kept if size <= limit else (kept[:200], size)


# === 2. JSON-RPC 2.0: requests, notifications, responses (spec: basic, "Messages") ===

def refuse_constant(name):  # Python's json reads NaN and Infinity; JSON has no such values
    raise ValueError(f"{name} is not a JSON value")


# A number beyond float range, like 1e400, is valid JSON. It reads as inf, and where it is used (a
# tool argument, or an answer it would end up in) its request gets an error for its own id. An
# integer of over 4,300 digits is valid JSON too, but Python refuses to read it: a parse error.
DECODER = json.JSONDecoder(parse_constant=refuse_constant)


def parse_message(line):
    """One line -> a message dict, or MCPError (answered with id null: we cannot know the id)."""
    if isinstance(line, tuple):  # (head, size) of a line over the limit: see read_lines
        raise MCPError(INVALID_REQUEST, f"Invalid Request: a message of {line[1]} bytes is over "
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


def string_field(params, key):  # a string that a request's params, or an object in them, must hold
    value = params.get(key) if isinstance(params, dict) else None
    if not isinstance(value, str):
        raise MCPError(INVALID_PARAMS, f'Invalid params: "{key}" must be a string')
    return value


def page(items, params, key):
    """One page of a list result (spec: utilities/pagination). A cursor is the index where a page
    starts; one this server would not give is refused, so that the client starts over."""
    cursor, given = params.get("cursor"), [str(n) for n in range(PAGE_SIZE, len(items), PAGE_SIZE)]
    if cursor is not None and cursor not in given:
        raise MCPError(INVALID_PARAMS, f"Invalid params: unknown cursor {json.dumps(cursor)[:40]}")
    start = int(cursor or 0)
    next_cursor = str(start + PAGE_SIZE) if start + PAGE_SIZE < len(items) else None
    return without_none({key: items[start:start + PAGE_SIZE], "nextCursor": next_cursor})


# === 3. Definitions: a typed Python function becomes a tool, a prompt or a resource
#        (spec: server/tools, server/prompts, server/resources) ===

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object",
              list: "array", type(None): "null"}
PYTHON_TYPES = {name: python_type for python_type, name in JSON_TYPES.items()}


def schema_for(hint, where):
    """JSON Schema for one type hint: the subset a model can fill in and validate() can check."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:  # Annotated[str, "UK town name"]: its text describes the value
        notes = " ".join(note for note in args[1:] if isinstance(note, str))
        return without_none({**schema_for(args[0], where), "description": notes or None})
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
    known, extra = schema.get("properties", {}), schema.get("additionalProperties")
    if extra is False and not value.keys() <= known.keys():
        unknown = ", ".join(sorted(value.keys() - known.keys()))
        raise ValueError(f"unknown argument(s): {unknown}; expected: {', '.join(known) or 'none'}")
    missing = [name for name in schema.get("required", ()) if name not in value]
    if missing:
        raise ValueError(f"missing required argument(s): {', '.join(missing)}")
    for key, item in value.items():
        item_schema, where = known.get(key, extra), key if path == "arguments" else f"{path}.{key}"
        value[key] = validate(item, item_schema, where) if isinstance(item_schema, dict) else item
    return value


def describe_parameters(func, where):
    """JSON Schema for a function's parameters, from their type hints and defaults; and the name
    of its Context parameter, if it has one (the server fills that in, not the client)."""
    hints = typing.get_type_hints(func, include_extras=True)
    params = inspect.signature(func).parameters.values()
    context_param = next((param.name for param in params if hints.get(param.name) is Context), None)
    properties, required = {}, []
    for param in [param for param in params if param.name != context_param]:
        properties[param.name] = schema_for(hints.get(param.name), f"{where}, {param.name!r}")
        if param.default is param.empty:
            required.append(param.name)
        else:  # a default that is not JSON fails here, at decoration time
            properties[param.name]["default"] = json.loads(encode(param.default))
    schema = {"type": "object", "properties": properties, "required": required}
    return {**{k: v for k, v in schema.items() if v}, "additionalProperties": False}, context_param


# What an elicitation form may hold (spec: client/elicitation): a flat object of primitives,
# each with a default if wanted (SEP-1034); enums in the five forms of SEP-1330: a string with
# enum, oneOf [{const, title}] or enum + enumNames; an array whose items have enum or anyOf.
FORM_KEYS = {"string": {"minLength", "maxLength", "format", "enum", "enumNames", "oneOf"},
             "number": {"minimum", "maximum"}, "integer": {"minimum", "maximum"},
             "boolean": set(), "array": {"items", "minItems", "maxItems"}}
FORMATS = (None, "email", "uri", "date", "date-time")


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


def define(func, name, title, doc, **rest):
    """A tool's, a prompt's or a resource's definition, as a list sends it: its name (the
    function's, unless another is given), title and description, then the rest of its fields."""
    return without_none({"name": name or func.__name__, "title": title, "description": doc, **rest})


# A prompt or a resource, as registered: its function; its definition (what a list sends); the
# schema of its arguments (a prompt's) or variables (a URI template's); their completers; and for
# a resource, the regular expression the URIs it serves match, and its listing function.
Feature = collections.namedtuple(
    "Feature", "func definition schema completers context pattern listing", defaults=(None, None))


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
    """Call a function we were given (a tool, a resource, a prompt, a completer), to be awaited:
    a coroutine function runs on the event loop, any other in a worker thread, so that a slow
    one holds up no other."""
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
    use. Only a cancellation of the request itself goes on."""
    if isinstance(error, asyncio.CancelledError) and asyncio.current_task().cancelling():
        raise error
    log(traceback.format_exc().rstrip())
    return f"{type(error).__name__}: {error}"


class InputRequired(BaseException):
    """Context.ask raises it in 2026-07-28 when a question has no answer yet: the function stops,
    and the request answers input_required (SEP-2322); the client's retry runs it again. A
    BaseException, so that a tool's `except Exception` does not swallow it. Its args: the
    requests still unanswered, {key: {"method", "params"}}, and retry_later's memo."""


class Context:
    """Given to a tool, a prompt or a resource function that asks for it (a parameter annotated
    Context): progress reports; questions for the user (elicit); auth, the identity the HTTP
    token check found (None on stdio); and the cancelled flag, set once the request is cancelled
    or answered: a sync tool, or a thread it started, can watch it to stop early. For logs, write
    to stderr: MCP's logging is deprecated since 2026-07-28, and hosts show a server's stderr."""

    def __init__(self, send, request_id, params, session, modern):
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        self.send, self.request_id, self.session, self.modern = send, request_id, session, modern
        self.progress_token, self.auth = meta.get("progressToken"), session.get("auth")
        self.loop, self.loop_thread = asyncio.get_running_loop(), threading.get_ident()
        declared = meta.get(META + "clientCapabilities") if modern else session.get("capabilities")
        self.capabilities = declared or {}  # what we may ask of the client
        # 2026-07-28: the answers a retry brought, those read so far, and retry_later's memo.
        self.answers, self.used, self.memo, self.cancelled = {}, {}, None, False

    async def elicit(self, message, schema, key="answer"):
        """Ask the user to fill in a form, a flat object of primitives (see check_form). Returns
        the client's {"action": "accept" | "decline" | "cancel", "content"?: {...}}. key names the
        question, unique within the call: in 2026-07-28 the retry answers it under that key."""
        check_form(schema)
        params = {"mode": "form", "message": message, "requestedSchema": schema}
        return (await self.ask({key: {"method": "elicitation/create", "params": params}}))[key]

    def elicit_sync(self, message, schema, key="answer"):
        """elicit() for a def function, which runs in a worker thread: it waits for the answer."""
        asking = asyncio.run_coroutine_threadsafe(self.elicit(message, schema, key), self.loop)
        return asking.result()  # elicit() has its own timeout

    def retry_later(self, memo=None):
        """2026-07-28 only: answer "come back later", a result with only requestState. The retry
        runs the function again, with ctx.memo = memo (any JSON value: signed, but readable)."""
        raise InputRequired({}, memo) if self.modern else RuntimeError("needs 2026-07-28")

    async def ask(self, requests):
        """Send the client requests, {key: {"method", "params"}}, all at once; returns {key: its
        result}. Each needs the client capability its method starts with, else -32021: for
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
        return {key: check_answer(requests[key], a) for key, a in zip(requests, answers)}

    async def request(self, request):
        """Legacy: one request to the client, and its result. The client's response comes back
        through Server.receive_response. No answer in ANSWER_TIMEOUT, or an error: it raises."""
        # The id is unguessable, so that no other peer can answer for this client.
        request_id, asked = f"mcp-min-{secrets.token_hex(8)}", self.session.setdefault("asked", {})
        asked[request_id] = self.loop.create_future()
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

    def report_progress(self, progress, total=None, message=None):
        """notifications/progress, if the request carried a progressToken. Progress must increase.
        Safe to call from any thread. Nothing is sent once the request is cancelled or answered
        (spec: progress, cancellation)."""
        if self.progress_token is None or self.cancelled:
            return None
        if threading.get_ident() != self.loop_thread:  # from a sync tool's thread: the loop
            # sends it, and the thread waits until it has, so that a flood of reports stays flat
            report = self.report_on_loop(progress, total, message)
            return asyncio.run_coroutine_threadsafe(report, self.loop).result(WRITE_TIMEOUT)
        params = without_none({"progressToken": self.progress_token, "progress": progress,
                               "total": total, "message": message})
        self.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    async def report_on_loop(self, *args):  # the answer may have gone since: checked again
        self.report_progress(*args)

    def close_stream(self):
        """SSE polling (SEP-1699; Streamable HTTP, 2025-11-25 only): end this call's SSE stream
        now; the client reconnects with GET and Last-Event-ID, and the rest comes there. Call it
        from the event loop (an async tool). Elsewhere it does nothing."""
        getattr(self.send, "close_stream", lambda: None)()


class Listener:
    """Where change notifications go (spec: server/resources, Subscriptions; list changes;
    2026-07-28: basic/patterns/subscriptions): a legacy client, or a subscriptions/listen stream,
    whose notifications carry the listen's id (tag). `wants` holds the topics it hears of: the
    lists ("tools", "prompts", "resources") and the URIs of resources (each has a ":", a list's
    name none). It is in the server's listeners while its session or its listen has it."""

    def __init__(self, server, send, wants, tag=None):
        self.send, self.wants, self.tag, self.ended = send, wants, tag or {}, asyncio.Event()
        server.loop = asyncio.get_running_loop()  # where Server.announce hands changes to
        server.listeners.add(self)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": {**params, **self.tag}})


def check_answer(request, answer):
    """An answer is an object; one to an elicitation has an action, and content that is an
    object. A malformed answer is the request's error (-32602)."""
    form = answer if request["method"] == "elicitation/create" else {"action": "accept"}
    if not (isinstance(answer, dict) and form.get("action") in ("accept", "decline", "cancel")
            and isinstance(form.get("content", {}), dict)):
        raise MCPError(INVALID_PARAMS, f"Invalid params: a malformed answer to {request['method']}")
    return answer


def binding(message, session):
    """What a requestState is valid for: this method, name and arguments, and this user."""
    params, auth = message.get("params", {}), session.get("auth")
    user = auth.get("subject", auth.get("sub", auth)) if isinstance(auth, dict) else auth
    name = params.get("uri") if message["method"] == "resources/read" else params.get("name")
    fields = [message["method"], name, params.get("arguments"), repr(user)]
    return hashlib.sha256(encode(fields)).hexdigest()


# === 4. The server: each request in the era it asks for (spec: basic/lifecycle, versioning) ===

class Server:
    def __init__(self, name, version="0.1.0", instructions=None, state_key=None):
        """state_key (str or bytes) signs 2026-07-28 requestState: replicas behind one load
        balancer share it. Default: $MCP_STATE_KEY, else a random key for this process."""
        # tools: name -> (function, definition, name of its Context parameter), in order.
        # prompts: name -> Feature; resources: URI or URI template -> Feature, in order.
        self.info, self.instructions = {"name": name, "version": version}, instructions
        self.tools, self.prompts, self.resources = {}, {}, {}
        key = state_key or os.environ.get("MCP_STATE_KEY") or secrets.token_hex(32)
        self.state_key = key.encode() if isinstance(key, str) else key
        # Every Listener, used on the event loop only; changes waiting for that loop to send them.
        self.listeners, self.loop, self.queued = weakref.WeakSet(), None, 0

    def tool(self, name=None, title=None, annotations=None, output_schema=None):
        """Decorator: the function becomes a tool. Its name, docstring and type hints make the
        definition tools/list sends; a parameter annotated Context is filled in by the server."""
        def register(func):
            schema, context_param = describe_parameters(func, f"tool {name or func.__name__}")
            definition = define(func, name, title, inspect.getdoc(func) or "", inputSchema=schema,
                                outputSchema=output_schema, annotations=annotations)
            self.tools[definition["name"]] = (func, definition, context_param)
            return func
        return register

    def resource(self, uri, name=None, title=None, description=None, mime_type=None,
                 listing=None, complete=None):
        """Decorator: the function serves resources/read for uri. A uri with variables, such as
        doc:///{name}, is a template (RFC 6570, level 1): each variable matches one path segment
        of a URI, and its value, percent-decoded, is the function's keyword argument of that name
        (one parameter per variable, a str). The function returns a str (a text), bytes (a blob,
        sent in base64), a list of contents dicts ({"uri", "mimeType", "text" or "blob"}), or
        None: no such resource. description defaults to the docstring.
        listing: for a template, a function that returns the resources it serves, for
        resources/list: dicts with "uri" and "name" at least (the spec's Resource).
        complete: {variable: function(value, arguments) -> list of str} for completion/complete:
        value is what the user typed so far, arguments the variables already filled in (values
        of a Literal hint complete without one)."""
        def register(func):
            schema, context_param = describe_parameters(func, f"resource {uri}")
            # The URI matches as written, but for each {variable}: one path segment, not empty.
            pattern = re.compile(re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/?#]+)", re.escape(uri)))
            if set(pattern.groupindex) != set(schema.get("properties", {})):  # {+path}, say
                raise TypeError(f"resource {uri}: give the function one parameter for each "
                                "{variable} of the URI, of the same name (RFC 6570, level 1)")
            fields = {"uriTemplate" if pattern.groupindex else "uri": uri, "mimeType": mime_type}
            definition = define(func, name, title, description or inspect.getdoc(func), **fields)
            self.resources[uri] = Feature(func, definition, schema, complete or {}, context_param,
                                          pattern, listing)
            return func
        return register

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
            self.prompts[definition["name"]] = Feature(func, definition, schema, complete or {},
                                                       context_param)
            return func
        return register

    def description(self):
        """What initialize and server/discover say of us besides serverInfo: a capability for each
        kind of thing registered, and completions wherever there are arguments to complete (those
        of prompts, the variables of URI templates). Server code may announce changes of each
        list (list_changed), and resources can be subscribed to (resource_updated)."""
        features = {"tools": self.tools, "resources": self.resources, "prompts": self.prompts,
                    "completions": self.prompts or self.resources}
        changes = {"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                   "resources": {"listChanged": True, "subscribe": True}}
        capabilities = {key: dict(changes.get(key, {})) for key, found in features.items() if found}
        return without_none({"capabilities": capabilities, "instructions": self.instructions})

    async def handle(self, message, send, session=None):
        """Answer one well-formed request with its response; a cancelled request raises
        CancelledError instead. A tool's notifications and requests reach the client through
        send(message) while it runs. session: the state of the client it came from (see
        serve_stdio); its "auth" is the identity an HTTP token check found; its "notify", if
        given, sends a legacy client notifications outside any request (else send does)."""
        request_id, method, params = message["id"], message["method"], message.get("params", {})
        session = {} if session is None else session
        try:
            modern = method != "initialize" and self.modern_version(method, params)
            if method == "initialize":  # the legacy handshake; an unknown version gets our latest
                requested = string_field(params, "protocolVersion")
                version = requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[-1]
                result = {"protocolVersion": version, **self.description(), "serverInfo": self.info}
                session["capabilities"] = params.get("capabilities")  # what we may ask of it
                # From now on the client hears of list changes: over stdio through send, over
                # HTTP on its session's GET stream.
                session["listener"] = Listener(self, session.get("notify", send), set(LISTS))
            elif method == "ping" and not modern:  # the one request allowed before initialization
                result = {}
            elif method == "server/discover":
                result = {"supportedVersions": MODERN_VERSIONS, **self.description()}
            elif method == "tools/call" and self.tools:  # a feature not registered: not found
                result = await self.asking(self.call_tool, message, send, session, modern)
            elif method == "tools/list" and self.tools:
                result = page([tool[1] for tool in self.tools.values()], params, "tools")
            elif method == "resources/list" and self.resources:  # fixed ones, then those listed
                listed = [r.definition for r in self.resources.values() if not r.pattern.groupindex]
                for resource in self.resources.values():
                    listed += await call(resource.listing) if resource.listing else []
                result = page(listed, params, "resources")
            elif method == "resources/templates/list" and self.resources:
                templates = [r.definition for r in self.resources.values() if r.pattern.groupindex]
                result = page(templates, params, "resourceTemplates")
            elif method == "resources/read" and self.resources:
                result = await self.asking(self.read_resource, message, send, session, modern)
            elif method == "prompts/list" and self.prompts:
                result = page([p.definition for p in self.prompts.values()], params, "prompts")
            elif method == "prompts/get" and self.prompts:
                result = await self.asking(self.get_prompt, message, send, session, modern)
            elif method == "completion/complete" and (self.prompts or self.resources):
                result = await self.complete(params)
            elif method in ("resources/subscribe", "resources/unsubscribe") and self.resources \
                    and not modern:
                result = await self.subscribe(message, send, session)
            elif method == "subscriptions/listen" and modern:
                result = await self.listen(params, request_id, send, session)
            else:
                raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
            if modern:  # 2026-07-28: stateless; every result says what it is, and who answers
                result.setdefault("resultType", "complete")
                result["_meta"] = {**result.get("_meta", {}), META + "serverInfo": self.info}
            # What we serve does not depend on who asks; but a retry's answer is its own.
            if modern and method in CACHE_TTL_MS and result["resultType"] == "complete" and not (
                    "inputResponses" in params or "requestState" in params):
                result.update(ttlMs=CACHE_TTL_MS[method], cacheScope="public")
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        except MCPError as e:
            return error_response(request_id, e)
        except BaseException as e:  # a resource's, a prompt's or a completer's function failed
            error = MCPError(INTERNAL_ERROR, f"Internal error: {failure(e)}")
            return error_response(request_id, error)

    def modern_version(self, method, params):
        """The 2026-07-28 revision if the request carries its _meta fields; None if legacy."""
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
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

    # --- Questions for the user: elicitation, in both eras (client/elicitation; SEP-2322) ---

    async def asking(self, serve, message, send, session, modern):
        """tools/call, prompts/get or resources/read, whose function may ask the client (Context).
        2026-07-28: a question still unanswered makes the result input_required, with the
        questions under their keys and a signed requestState; the retry brings the answers: those
        of this round for the keys asked (others are ignored), and of earlier ones, in the state."""
        params = message.get("params", {})
        ctx = Context(send, message["id"], params, session, modern)
        responses, state = params.get("inputResponses"), params.get("requestState")
        if modern and (responses or state is not None):  # a retry, and the answers it brings
            responses = responses if isinstance(responses, dict) else {}  # each: check_answer
            first_round = {"asked": list(responses), "answers": {}, "memo": None}
            fields = first_round if state is None else self.unseal(state, binding(message, session))
            fresh = {key: responses[key] for key in fields["asked"] if key in responses}
            ctx.answers, ctx.memo = {**fields["answers"], **fresh}, fields["memo"]
        try:
            return await serve(params, ctx)
        except InputRequired as asked:
            requests, memo = asked.args
            fields = {"for": binding(message, session), "expires": time.time() + STATE_TTL,
                      "asked": list(requests), "answers": ctx.used, "memo": memo}
            body = base64.urlsafe_b64encode(encode(fields).strip()).decode()
            return without_none({"resultType": "input_required", "inputRequests": requests or None,
                                 "requestState": body + "." + self.signature(body)})
        finally:  # a sync function's thread may run on after a cancel, or a thread it started
            ctx.cancelled = True  # after the answer: they can see this, and report nothing more

    def signature(self, body):
        """requestState is its fields as base64url JSON, a dot, and this HMAC-SHA256 of them.
        Signed, so that nobody can forge or change it; not encrypted: the client can read it."""
        return hmac.new(self.state_key, body.encode(), "sha256").hexdigest()

    def unseal(self, state, expected):
        """The fields of a requestState that we signed, for this request, not expired yet. All
        other states get the same error: a forger learns nothing from it."""
        body, _, mac = str(state).partition(".")
        if hmac.compare_digest(mac.encode(), self.signature(body).encode()):  # the body is ours
            fields = json.loads(base64.urlsafe_b64decode(body))
            if fields["for"] == expected and fields["expires"] > time.time():
                return fields
        raise MCPError(INVALID_PARAMS, "Invalid params: invalid, expired or misplaced requestState")

    def receive_response(self, message, session):
        """A client's answer to one of our requests (Context.request) goes to the call that waits
        for it. One with an id nobody asked for, or answered already, is ignored."""
        waiting = session.get("asked", {}).get(str(message.get("id")))  # our ids are strings
        if waiting and not waiting.done():
            waiting.set_result(message)

    async def call_tool(self, params, ctx):
        """tools/call. A call that does not fit the protocol is an error (-32602); bad arguments
        and a failing tool are results with isError, which the model reads and can correct."""
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, 'Invalid params: tools/call needs a name and arguments')
        if name not in self.tools:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}; tools: {', '.join(self.tools)}")
        func, definition, context_param = self.tools[name]
        try:
            arguments = validate(dict(arguments), definition["inputSchema"])
        except ValueError as e:
            return tool_error(f"Invalid arguments for tool {name}: {e}")
        if context_param:
            arguments[context_param] = ctx
        try:
            return to_call_result(await call(func, **arguments), definition)
        except (InputRequired, MCPError):  # the request's answer, from Context.ask: not a failure
            raise
        except BaseException as e:  # what the model reads, so that it can try another way
            return tool_error(f"Tool {name} failed: {failure(e)}")

    def handle_notification(self, message, session):
        """notifications/cancelled stops a request, and ends a listen stream, which answers its
        complete result; no other notification needs anything."""
        request_id = message.get("params", {}).get("requestId")
        cancelled = message["method"] == "notifications/cancelled" and valid_id(request_id)
        if cancelled and request_id in session.get("listening", {}):
            session["listening"][request_id].ended.set()
        elif cancelled and request_id in session["in_flight"]:  # an unknown id is ignored (spec)
            session["in_flight"].pop(request_id).cancel()

    # === 5. Resources, prompts and completion (spec: server/resources, server/prompts,
    #        server/utilities/completion; lists come in pages: server/utilities/pagination) ===

    async def read_resource(self, params, ctx):
        """resources/read: the first resource, in the order registered, whose URI or template
        matches. A template's values come from the client: each is one path segment, percent-
        decoded. An encoded "/" (%2F) may join the parts of a nested name ("guide%2Finstall.md"),
        but a part that is empty, "." or "..", or holds NUL, matches nothing.
        Nothing found, or a function's None: -32602 with the URI in data (SEP-2164; the 2025
        texts suggested -32002). A function that fails: -32603, from Server.handle."""
        uri, value = string_field(params, "uri"), None
        for resource in self.resources.values():
            match = resource.pattern.fullmatch(uri)
            values = [urllib.parse.unquote(text) for text in match.groups()] if match else []
            parts = [part for v in values for part in v.split("/")]
            if match and not any(part in ("", ".", "..") or "\0" in part for part in parts):
                arguments = dict(zip(resource.pattern.groupindex, values))
                arguments.update({resource.context: ctx} if resource.context else {})
                value = await call(resource.func, **arguments)
                break
        if value is None:
            raise MCPError(INVALID_PARAMS, f"Resource not found: {uri[:200]}; resources/list and "
                                           "resources/templates/list say what exists", {"uri": uri})
        if isinstance(value, (str, bytes)):  # one text, or one blob in base64
            data = {"text": value} if isinstance(value, str) else {
                "blob": base64.b64encode(value).decode()}
            value = [without_none({"uri": uri, "mimeType": resource.definition.get("mimeType"),
                                   **data})]
        return {"contents": value}

    async def get_prompt(self, params, ctx):
        """prompts/get. An unknown prompt, a missing argument or one it does not take: -32602,
        saying what to send instead."""
        name = string_field(params, "name")
        if name not in self.prompts:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}; see prompts/list")
        try:
            arguments = validate(params.get("arguments") or {}, self.prompts[name].schema)
        except ValueError as e:
            raise MCPError(INVALID_PARAMS, f"Invalid arguments for prompt {name}: {e}") from None
        arguments.update({self.prompts[name].context: ctx} if self.prompts[name].context else {})
        messages = await call(self.prompts[name].func, **arguments)
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        return {"messages": messages}

    async def complete(self, params):
        """completion/complete: at most 100 values for an argument of a prompt or a URI template:
        its completer's, else those of its Literal hint that start with what was typed."""
        ref, argument = params.get("ref"), params.get("argument")
        name, value = string_field(argument, "name"), string_field(argument, "value")
        kind = string_field(ref, "type")
        features, key = (self.prompts, "name") if kind == "ref/prompt" else (self.resources, "uri")
        found = kind in ("ref/prompt", "ref/resource") and features.get(string_field(ref, key))
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

    # --- Change notifications: server code announces, from any thread; each listener that
    #     wants it hears (spec: resources Subscriptions, list changes; subscriptions/listen) ---

    def list_changed(self, kind):
        """Tell clients that the list of "tools", "prompts" or "resources" changed: every legacy
        client, and each listen stream that asked for it. Safe to call from any thread."""
        self.announce(f"notifications/{kind}/list_changed", {}, kind)

    def resource_updated(self, uri):
        """Tell the clients that subscribed to uri that it changed: they read it again if they
        care. Safe to call from any thread."""
        self.announce("notifications/resources/updated", {"uri": uri}, uri)

    def announce(self, method, params, topic):
        """From any thread: the event loop sends the notification to each listener of the topic.
        While MAX_QUEUED wait for the loop (a flood of changes), more are dropped: a change is a
        hint to read again, and memory stays flat. A slow client's own send drops them too."""
        if self.loop and self.queued < MAX_QUEUED:
            self.queued += 1
            with contextlib.suppress(RuntimeError):  # the event loop has closed
                self.loop.call_soon_threadsafe(self.deliver, method, params, topic)

    def deliver(self, method, params, topic):  # on the event loop
        self.queued -= 1
        for listener in [listener for listener in self.listeners if topic in listener.wants]:
            listener.notify(method, params)

    async def subscribe(self, message, send, session):
        """resources/subscribe and resources/unsubscribe (legacy): notifications/resources/updated
        for the URIs subscribed to. A URI that cannot be read is not found, as for resources/read;
        to unsubscribe from a URI not subscribed to is no error."""
        await self.asking(self.read_resource, message, send, session, False)
        topics, subscribing = session["listener"].wants, message["method"] == "resources/subscribe"
        if subscribing and len(topics) > MAX_SUBSCRIPTIONS:
            raise MCPError(INVALID_REQUEST, f"Invalid Request: over {MAX_SUBSCRIPTIONS} URIs")
        (topics.add if subscribing else topics.discard)(message["params"]["uri"])
        return {}

    async def listen(self, params, request_id, send, session):
        """subscriptions/listen (2026-07-28): first the acknowledgement, with the part of the
        filter honoured (the lists this server has; URIs if it has resources), then what server
        code announces, until the client cancels (stdio), closes the stream (HTTP: that cancels
        the request) or the server stops: then the complete result."""
        asked, listening = params.get("notifications"), session.setdefault("listening", {})
        uris = asked.get("resourceSubscriptions", []) if isinstance(asked, dict) else None
        if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris) \
                or len(uris) > MAX_SUBSCRIPTIONS or len(listening) >= MAX_LISTENS:
            raise MCPError(INVALID_PARAMS, f'Invalid params: "notifications" must be a filter, of '
                           f"at most {MAX_SUBSCRIPTIONS} URIs; {MAX_LISTENS} listens a client")
        lists = [kind for kind in LISTS if getattr(self, kind) and asked.get(kind + "ListChanged")]
        uris = list(dict.fromkeys(uris)) if self.resources else []
        honoured = {**{kind + "ListChanged": True for kind in lists},
                    **({"resourceSubscriptions": uris} if uris else {})}
        tag = {"_meta": {META + "subscriptionId": request_id}}
        listener = listening[request_id] = Listener(self, send, {*lists, *uris}, tag)
        listener.notify("notifications/subscriptions/acknowledged", {"notifications": honoured})
        await listener.ended.wait()  # a cancelled listen (HTTP) leaves with its session
        del listening[request_id]
        return dict(tag)  # the complete result carries the id too

    # === 6. The stdio loop (spec: basic/transports/stdio) ===

    def run(self):
        """Serve MCP on stdin and stdout until stdin closes, or until SIGTERM or SIGINT; answer
        every request read, then return."""
        # Keep the real stdin and stdout for protocol messages. Point fd 1 and sys.stdout at
        # stderr, so a stray print() in a tool, or a C library writing to fd 1, cannot corrupt the
        # stream; and fd 0 at /dev/null, so a child process a tool starts cannot eat requests.
        wire_in, wire_out = os.dup(0), os.dup(1)
        with open(os.devnull, "rb") as devnull:
            os.dup2(devnull.fileno(), 0)
        os.dup2(2, 1)
        # The loop is closed by hand, not by asyncio.run(), which waits for every worker thread:
        # one stuck in a sync tool for good would keep the server from ever returning.
        loop = asyncio.new_event_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(MAX_THREADS))
        with contextlib.closing(loop), contextlib.redirect_stdout(sys.stderr):
            loop.run_until_complete(self.serve_stdio(wire_in, wire_out))
        os.close(wire_out)  # the wire: the client sees EOF, even if a stuck tool keeps the process

    async def serve_stdio(self, in_fd, out_fd):
        """Requests run concurrently, and answers go out as they finish. After EOF, every request
        read gets its answer. A signal, a client that closes stdout or one that reads nothing
        stops the server at once: the calls still running get an error answer."""
        # A session is one client's state: the requests it has running, by id. A legacy client over
        # HTTP has one per connection; a modern request has its own.
        loop, session = asyncio.get_running_loop(), {"in_flight": {}}
        reader, writer = await open_pipes(in_fd, out_fd)
        in_flight, serving, lines_read = session["in_flight"], asyncio.current_task(), 0

        def send(message):
            # Answers always go out. A notification is skipped while a slow client has a backlog:
            # progress is only a hint, and the next one that goes out carries the latest value.
            if writer.transport.is_closing():  # the client closed our stdout: nobody listens
                serving.cancel("the client closed stdout")
            elif "id" in message or writer.transport.get_write_buffer_size() < MAX_BACKLOG:
                writer.write(encode_reply(message))
        for signum in (signal.SIGINT, signal.SIGTERM):  # each cancels this task, saying why
            loop.add_signal_handler(signum, serving.cancel, f"stopped by {signum.name}")
        try:
            async for line in read_lines(functools.partial(reader.read, 65536)):
                self.receive_line(line, session, send)
                lines_read += 1
                if lines_read % 16 == 0:  # a turn of the loop: finished requests write answers
                    await asyncio.sleep(0)
                # Backpressure: while too many requests run, or a slow client leaves too much
                # unread, stdin waits, so memory stays flat whatever the client sends. A client
                # that reads nothing for WRITE_TIMEOUT is gone: its TimeoutError stops the server.
                if len(in_flight) >= MAX_IN_FLIGHT:
                    await asyncio.wait(in_flight.values(), return_when=asyncio.FIRST_COMPLETED)
                if writer.transport.get_write_buffer_size() > MAX_BACKLOG:
                    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)
            for listener in list(session.get("listening", {}).values()):  # EOF: they end, too
                listener.ended.set()
            if in_flight:
                await asyncio.wait(list(in_flight.values()))
        except (asyncio.CancelledError, TimeoutError) as stopped:
            serving.uncancel()
            for request_id, task in list(in_flight.items()):
                task.cancel()
                error = MCPError(INTERNAL_ERROR, "Cancelled: the server is shutting down")
                send(error_response(request_id, error))
            reason = str(stopped) or f"the client read nothing for {WRITE_TIMEOUT:g} s"
            log(f"{self.info['name']}: {reason}; cancelled {len(in_flight)}")
        writer.close()  # flushes what is buffered before the pipe closes
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):  # a signal: stop waiting
            await asyncio.wait_for(writer.wait_closed(), WRITE_TIMEOUT)

    def receive_line(self, line, session, send):
        """One line from the client. A request starts a task that answers it; a notification is
        acted on; a response answers one of our requests (receive_response); whatever is broken
        gets an error answer, unless it is a notification or a response."""
        message, in_flight = {}, session["in_flight"]
        try:
            message = parse_message(line)
            if "method" not in message and ("result" in message or "error" in message):
                return self.receive_response(message, session)
            check_request(message)
            if "id" not in message:
                return self.handle_notification(message, session)
            if message["id"] in in_flight:
                raise MCPError(INVALID_REQUEST, f"Invalid Request: id {message['id']!r} is in use")
        except MCPError as e:
            if "id" in message or not isinstance(message.get("method"), str):  # not a notification
                send(error_response(message.get("id") if valid_id(message.get("id")) else None, e))
            return None
        in_flight[message["id"]] = asyncio.ensure_future(self.answer(message, session, send))

    async def answer(self, message, session, send):
        # Sending from inside the task, not from a done-callback, saves an event-loop turn.
        response = await self.handle(message, send, session)
        # Only while in_flight holds this task: a tool that swallowed its cancellation returns,
        # but a cancelled request gets no answer, and a later request may have its id by now.
        if session["in_flight"].get(message["id"]) is asyncio.current_task():
            del session["in_flight"][message["id"]]
            send(response)


async def open_pipes(in_fd, out_fd):
    """asyncio streams on stdin and stdout. They must be pipes, sockets or terminals, as MCP hosts
    give: epoll cannot watch a regular file (replay one with `cat requests.jsonl | server.py`)."""
    for fd, name in ((in_fd, "stdin"), (out_fd, "stdout")):
        kind = stat.S_IFMT(os.fstat(fd).st_mode)
        if kind not in (stat.S_IFIFO, stat.S_IFSOCK) and not os.isatty(fd):
            raise SystemExit(f"mcp_min: {name} must be a pipe, a socket or a terminal")
    loop, reader = asyncio.get_running_loop(), asyncio.StreamReader()
    stdin, stdout = open(in_fd, "rb", 0, closefd=False), open(out_fd, "wb", 0, closefd=False)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())  # gives drain() and close()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, stdout)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)
