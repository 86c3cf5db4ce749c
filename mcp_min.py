"""mcp_min: an MCP server in one file, standard library only.

A Server turns typed, documented Python functions into MCP tools and serves them over stdio:
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

Copy this file into your project; it needs nothing else. The client side is the Client class at
the top of client.py; Streamable HTTP is mcp_http.py. The sections follow a request through the
server, top to bottom:
  1. The wire: bytes in, lines out, and the size limit.
  2. JSON-RPC: a line becomes a message, or an error answer.
  3. Tools: a function becomes a schema; arguments are checked; a return value becomes a result.
  4. The server: each request is answered in the era it asks for. Start reading at Server.handle.
  5. The stdio loop: reading, backpressure, shutdown.
Spec: https://modelcontextprotocol.io/specification (2025-11-25 and 2026-07-28).
"""
import asyncio, concurrent.futures, contextvars, functools, inspect, json, math, os, queue, shutil
import signal, stat, sys, threading, traceback, types, typing

LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]  # oldest first
MODERN_VERSIONS = ["2026-07-28"]
META = "io.modelcontextprotocol/"  # prefix of the per-request _meta fields of the modern era
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a longer line is refused and skipped, never held whole
MAX_IN_FLIGHT = 512  # requests running at once; past that, stdin waits (backpressure)
MAX_BACKLOG = 1024 * 1024  # bytes a slow client may leave unread before we wait for it
WRITE_TIMEOUT = 30.0  # seconds a client may read nothing while answers wait; then it is gone
SHUTDOWN_GRACE = 5.0  # seconds running calls get to finish after SIGTERM or SIGINT
LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
# The JSON-RPC 2.0 error codes, and the one 2026-07-28 adds: no protocol version in common.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601
INVALID_PARAMS, INTERNAL_ERROR, UNSUPPORTED_VERSION = -32602, -32603, -32022


class MCPError(Exception):
    """A JSON-RPC error: raised by handlers in the server, and by a client when one comes back."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{message} ({code})")
        self.code, self.message, self.data = code, message, data

    def to_json(self):
        error = {"code": self.code, "message": self.message}
        return error if self.data is None else {**error, "data": self.data}


# === 1. The wire: one JSON text per line, UTF-8 (spec: basic/transports/stdio) ===

# Compact, and strict: JSON has no NaN or Infinity, and sending one would break the peer's parser.
ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode(message):
    """A message as one line. JSON escapes control characters, so it never holds a newline."""
    try:
        return (ENCODER.encode(message) + "\n").encode()
    except UnicodeEncodeError:  # a lone surrogate ("\ud800"): only escaped JSON can carry it
        return (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode()


def encode_reply(message):
    """encode() for what a server sends, which must not fail. An answer that JSON cannot carry
    (NaN, a datetime, a set), or one over the size limit, becomes an error answer for the same id:
    every request still gets exactly one answer. Such a notification is dropped (b"")."""
    try:
        line = encode(message)
        if len(line) <= MAX_MESSAGE_BYTES + 1:
            return line
        problem = f"the answer is {len(line)} bytes, over the {MAX_MESSAGE_BYTES}-byte message limit"
    except (ValueError, TypeError, RecursionError) as e:
        problem = str(e) or type(e).__name__
    print(f"cannot send a message: {problem}", file=sys.stderr)
    error = MCPError(INTERNAL_ERROR, f"Internal error: {problem}")
    return encode(error_response(message["id"], error)) if "id" in message else b""


async def read_lines(read, limit=MAX_MESSAGE_BYTES):
    """Yield each line that the coroutine read() brings, as bytes. A line over the limit is never
    held whole: only its first bytes are kept, and (those bytes, its size) is yielded instead."""
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


def read_int(text):  # Python refuses ints over 4,300 digits; JSON allows them: keep the magnitude
    return int(text) if len(text) < 4300 else float(text)


# A number beyond float range, like 1e400, is valid JSON. It reads as inf, and where it is used (a
# tool argument, or an answer it would end up in) its request gets an error for its own id.
DECODER = json.JSONDecoder(parse_constant=refuse_constant, parse_int=read_int)


def parse_message(line):
    """One line -> a message dict, or MCPError (answered with id null: we cannot know the id)."""
    try:
        message = DECODER.decode(line.decode())
    except UnicodeDecodeError as e:
        raise MCPError(PARSE_ERROR, f"Parse error: not UTF-8 ({e.reason} at byte {e.start})")
    except ValueError as e:
        raise MCPError(PARSE_ERROR, f"Parse error: {e}")
    except RecursionError:
        raise MCPError(PARSE_ERROR, "Parse error: nested too deeply")
    if isinstance(message, list):
        raise MCPError(INVALID_REQUEST, "Invalid Request: batches are not supported since 2025-06-18")
    if not isinstance(message, dict):
        raise MCPError(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    return message


def check_request(message):
    """The shape every request and notification must have."""
    if message.get("jsonrpc") != "2.0":
        raise MCPError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if not isinstance(message.get("method"), str):
        raise MCPError(INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    if not isinstance(message.get("params", {}), dict):
        raise MCPError(INVALID_PARAMS, 'Invalid params: "params" must be an object')


def valid_id(request_id):
    # MCP forbids null ids, JSON-RPC discourages fractions, and a bool is an int only to Python.
    return isinstance(request_id, (str, int)) and not isinstance(request_id, bool)


def error_response(request_id, error):
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


# === 3. Tools: a typed Python function becomes a tool (spec: server/tools) ===

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object",
              list: "array", type(None): "null"}
PYTHON_TYPES = {name: python_type for python_type, name in JSON_TYPES.items()}


def schema_for(hint, where):
    """JSON Schema for one type hint: the subset a model can fill in and validate() can check."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in JSON_TYPES:
        return {"type": JSON_TYPES[hint]}
    if origin is list:
        return {"type": "array", **({"items": schema_for(args[0], where)} if args else {})}
    if origin is dict:
        return {"type": "object", **({"additionalProperties": schema_for(args[1], where)} if args else {})}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [schema_for(arg, where) for arg in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    raise TypeError(f"{where}: {hint!r} has no JSON Schema here; use str, int, float, bool, "
                    "list[...], dict, X | None or Literal[...]")


def validate(value, schema, path="arguments"):
    """Check a value against our schema subset. Returns it (5.0 as 5 for an integer), or raises
    ValueError saying what is wrong. No coercion: "5" is not an integer, and the model that sent
    it learns so and can retry."""
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            try:
                return validate(value, option, path)
            except ValueError:
                pass
        raise ValueError(f"{path}: {json.dumps(value)[:80]} matches none of {json.dumps(schema['anyOf'])}")
    if "enum" in schema:  # equal as JSON values: 1.0 is 1, but true is not 1 (to Python, True == 1)
        if not any(value == choice and isinstance(value, bool) == isinstance(choice, bool)
                   for choice in schema["enum"]):
            raise ValueError(f"{path} must be one of {json.dumps(schema['enum'])}")
        return value
    expected = schema.get("type")
    if expected not in PYTHON_TYPES:
        return value  # a hand-written schema beyond our subset: the tool checks what it asked for
    if type(value) is not PYTHON_TYPES[expected]:  # JSON Schema allows 5.0 as an integer, 1 as a number
        if expected == "integer" and type(value) is float and value.is_integer():
            value = int(value)
        elif not (expected == "number" and type(value) is int):
            raise ValueError(f"{path} must be of type {expected}, not {json.dumps(value)[:80]}")
    if expected == "number" and not math.isfinite(value):  # 1e400 in the request read as inf
        raise ValueError(f"{path} must be a finite number, not {value}")
    if expected == "array" and "items" in schema:
        return [validate(item, schema["items"], f"{path}[{i}]") for i, item in enumerate(value)]
    return validate_object(value, schema, path) if expected == "object" else value


def validate_object(value, schema, path):
    known, extra = schema.get("properties", {}), schema.get("additionalProperties")
    if extra is False and not value.keys() <= known.keys():
        unknown = ", ".join(sorted(value.keys() - known.keys()))
        raise ValueError(f"unknown argument(s): {unknown}; expected: {', '.join(known) or 'none'}")
    missing = [name for name in schema.get("required", ()) if name not in value]
    if missing:
        raise ValueError(f"missing required argument(s): {', '.join(missing)}")
    checked = {}
    for key, item in value.items():
        item_schema = known.get(key, extra)
        where = key if path == "arguments" else f"{path}.{key}"
        checked[key] = validate(item, item_schema, where) if isinstance(item_schema, dict) else item
    return checked


def describe_tool(func, name=None, title=None, annotations=None, output_schema=None):
    """The definition tools/list sends, from the function's name, docstring and type hints; and
    the name of its Context parameter, if it has one (the server fills that in, not the client)."""
    hints, name = typing.get_type_hints(func), name or func.__name__
    properties, required, context_param = {}, [], None
    for param in inspect.signature(func).parameters.values():
        if param.name not in hints:
            raise TypeError(f"tool {name}: parameter {param.name!r} needs a type hint, so the "
                            "schema can say what to send")
        if hints[param.name] is Context:
            context_param = param.name
            continue
        properties[param.name] = schema_for(hints[param.name], f"tool {name}, {param.name!r}")
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        else:
            encode(param.default)  # a default that is not JSON fails here, at decoration time
            properties[param.name]["default"] = param.default
    input_schema = {"type": "object", "properties": properties, "required": required}
    input_schema = {**{k: v for k, v in input_schema.items() if v}, "additionalProperties": False}
    returns = hints.get("return")
    if output_schema is None and (returns is dict or typing.get_origin(returns) is dict):
        output_schema = {"type": "object"}
    definition = {"name": name, "title": title, "description": inspect.getdoc(func) or "",
                  "inputSchema": input_schema, "outputSchema": output_schema, "annotations": annotations}
    return {key: value for key, value in definition.items() if value is not None}, context_param


class ToolResult:
    """Return this from a tool for full control: content (a str or content blocks), structured
    data, isError."""

    def __init__(self, content, structured=None, is_error=False):
        self.content, self.structured, self.is_error = content, structured, is_error


def to_call_result(value, definition):
    """A tool's return value -> CallToolResult. The rules, in order: ToolResult -> as given;
    dict -> structuredContent plus the same JSON as text (for clients that only read content);
    a list of content blocks (dicts with a "type") -> the content as is; None -> no content;
    str -> one text block; anything else JSON can carry -> one text block holding its JSON."""
    if isinstance(value, dict):
        value = ToolResult(json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False), value)
    elif isinstance(value, list) and value and all(isinstance(b, dict) and "type" in b for b in value):
        value = ToolResult(value)
    elif not isinstance(value, ToolResult):
        text = value if isinstance(value, str) else encode(value).decode().strip()
        value = ToolResult([] if value is None else text)
    content = value.content
    content = [{"type": "text", "text": content}] if isinstance(content, str) else content
    result = {"content": content, "isError": value.is_error}
    if value.structured is not None:
        result["structuredContent"] = value.structured
    elif "outputSchema" in definition and not value.is_error:  # then structuredContent is a MUST
        raise TypeError("the tool declares an outputSchema, so it must return a dict")
    return result


def tool_error(text):
    return {"content": [{"type": "text", "text": text}], "isError": True}


IDLE_THREADS = []  # the job queue of each worker thread that waits for work


def start_in_thread(job):
    """Run job() in an idle worker thread, or in a new one if none is idle. A tool stuck for good
    keeps its thread but never starves the others, and as a daemon it never holds up exit."""
    try:
        IDLE_THREADS.pop().put(job)
    except IndexError:
        threading.Thread(target=work_in_thread, args=(job,), daemon=True).start()


def work_in_thread(job):
    jobs = queue.SimpleQueue()
    while True:
        job()
        IDLE_THREADS.append(jobs)
        job = jobs.get()


async def run_in_thread(func, arguments):
    """func(**arguments) in a worker thread, so a slow sync tool never holds up the others."""
    loop, future = asyncio.get_running_loop(), asyncio.get_running_loop().create_future()
    context = contextvars.copy_context()  # as asyncio.to_thread does: context variables carry over

    def settle(set_outcome, value):
        if not future.done():  # a cancelled request's future is done already
            set_outcome(value)

    def job():
        try:
            outcome = future.set_result, context.run(func, **arguments)
        except BaseException as e:  # SystemExit too: a tool that calls sys.exit() fails alone
            outcome = future.set_exception, e
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the event loop is closed: nobody waits for this answer any more
            pass
    start_in_thread(job)
    return await future


class Context:
    """Given to a tool that asks for it (a parameter annotated Context): progress, logging, and
    the cancelled flag, which a sync tool can watch to stop early. Safe to use from the worker
    thread a sync tool runs in."""

    def __init__(self, send, request_id, progress_token, log_level):
        self.request_id, self.progress_token, self.log_level = request_id, progress_token, log_level
        self.send, self.cancelled = send, False
        self.loop, self.loop_thread = asyncio.get_running_loop(), threading.get_ident()

    def report_progress(self, progress, total=None, message=None):
        """notifications/progress, if the request carried a progressToken. Progress must increase."""
        if self.progress_token is not None:
            extra = {k: v for k, v in (("total", total), ("message", message)) if v is not None}
            self.notify("notifications/progress",
                        {"progressToken": self.progress_token, "progress": progress, **extra})

    def log(self, level, data, logger=None):
        """notifications/message, if the client asked for this level (logging/setLevel, or the
        request's _meta)."""
        if self.log_level is not None and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level):
            self.notify("notifications/message",
                        {"level": level, "data": data, **({"logger": logger} if logger else {})})

    def notify(self, method, params):
        if self.cancelled:  # spec: nothing more is sent for a cancelled request
            return
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if threading.get_ident() == self.loop_thread:
            return self.send(message)

        async def send_now():
            self.send(message)
        # A worker thread waits until the event loop has taken the message, so a tool that floods
        # notifications runs no faster than they are sent, and memory stays flat.
        try:
            asyncio.run_coroutine_threadsafe(send_now(), self.loop).result(WRITE_TIMEOUT)
        except (RuntimeError, TimeoutError, concurrent.futures.CancelledError):
            pass  # the server is shutting down: nobody is listening


# === 4. The server: each request in the era it asks for (spec: basic/lifecycle, versioning) ===

class Server:
    def __init__(self, name, version="0.1.0", instructions=None):
        self.info, self.instructions = {"name": name, "version": version}, instructions
        self.tools = {}  # name -> (function, definition, Context parameter, is async), in order
        self.capabilities = {"tools": {"listChanged": False}, "logging": {}}

    def tool(self, name=None, title=None, annotations=None, output_schema=None):
        """Decorator: the function becomes a tool; its name, docstring and type hints define it."""
        def register(func):
            definition, context_param = describe_tool(func, name, title, annotations, output_schema)
            is_async = inspect.iscoroutinefunction(func)
            self.tools[definition["name"]] = (func, definition, context_param, is_async)
            return func
        return register

    def new_session(self):
        """One client's state. A legacy client has one per connection; modern requests need none."""
        return {"protocol_version": None, "log_level": "debug", "in_flight": {}}

    async def handle(self, message, session, send):
        """Answer one well-formed request: its response, or None if it was cancelled. A tool's
        notifications reach the client through send(message) while it runs."""
        request_id, method, params = message["id"], message["method"], message.get("params", {})
        try:
            if method != "initialize" and self.modern_version(method, params):
                result = await self.handle_modern(method, params, request_id, send)
            elif method == "initialize":
                result = self.initialize(params, session)
            elif method == "ping":  # the one request allowed before initialization
                result = {}
            elif session["protocol_version"] is None:
                raise MCPError(INVALID_REQUEST, f"Invalid Request: {method} before initialize; "
                               "send initialize first, or give each request the _meta of protocol "
                               f"{MODERN_VERSIONS[-1]}")
            elif method == "logging/setLevel":
                session["log_level"], result = check_log_level(params.get("level")), {}
            else:
                result = await self.call_method(method, params, request_id, send, session["log_level"])
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        except MCPError as e:
            return error_response(request_id, e)
        except asyncio.CancelledError:
            return None
        except Exception as e:
            traceback.print_exc()  # the whole story for the operator (stderr), the gist for the client
            return error_response(request_id, MCPError(INTERNAL_ERROR, f"Internal error: {type(e).__name__}"))

    def modern_version(self, method, params):
        """The 2026-07-28 revision if the request carries its _meta fields; None if legacy."""
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        if method != "server/discover" and not any(key.startswith(META) for key in meta):
            return None
        missing = [META + key for key in ("protocolVersion", "clientCapabilities") if META + key not in meta]
        if missing:
            raise MCPError(INVALID_PARAMS, "Invalid params: _meta is missing " + ", ".join(missing))
        version = meta[META + "protocolVersion"]
        if version not in MODERN_VERSIONS:
            raise MCPError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                           {"supported": MODERN_VERSIONS, "requested": version})
        return version

    async def handle_modern(self, method, params, request_id, send):
        """2026-07-28: stateless. Log messages only if this request asks for them; every result
        says it is complete and names the server; what never changes may be cached."""
        level = params["_meta"].get(META + "logLevel")
        level = level if level is None else check_log_level(level)
        result = await self.call_method(method, params, request_id, send, level)
        result.update(resultType="complete", _meta={**result.get("_meta", {}), META + "serverInfo": self.info})
        if method in ("server/discover", "tools/list"):  # our tools never change
            result.update(ttlMs=3_600_000, cacheScope="public")
        return result

    def initialize(self, params, session):
        """The legacy handshake. An unknown version is no error: we offer our latest, and the
        client decides."""
        if session["protocol_version"] is not None:
            raise MCPError(INVALID_REQUEST, "Invalid Request: already initialized")
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise MCPError(INVALID_PARAMS, "Invalid params: initialize needs a protocolVersion string")
        version = requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[-1]
        session["protocol_version"] = version
        result = {"protocolVersion": version, "capabilities": self.capabilities, "serverInfo": self.info}
        return result if self.instructions is None else {**result, "instructions": self.instructions}

    async def call_method(self, method, params, request_id, send, log_level):
        """The methods both eras share, and server/discover (only modern requests reach it)."""
        if method == "server/discover":
            result = {"supportedVersions": MODERN_VERSIONS, "capabilities": self.capabilities}
            return result if self.instructions is None else {**result, "instructions": self.instructions}
        if method == "tools/list":  # one page holds every tool, so a cursor has nothing to select
            return {"tools": [tool[1] for tool in self.tools.values()]}
        if method == "tools/call":
            return await self.call_tool(params, request_id, send, log_level)
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def call_tool(self, params, request_id, send, log_level):
        """tools/call. A call that does not fit the protocol is an error (-32602); bad arguments
        and a failing tool are results with isError, which the model reads and can correct."""
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, 'Invalid params: tools/call needs "name" (a string) '
                                           'and "arguments" (an object)')
        if name not in self.tools:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}. Available tools: {', '.join(self.tools)}")
        func, definition, context_param, is_async = self.tools[name]
        try:
            arguments = validate(arguments, definition["inputSchema"])
        except ValueError as e:
            return tool_error(f"Invalid arguments for tool {name}: {e}")
        context = None
        if context_param:
            meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
            context = Context(send, request_id, meta.get("progressToken"), log_level)
            arguments[context_param] = context
        try:
            value = await func(**arguments) if is_async else await run_in_thread(func, arguments)
            return to_call_result(value, definition)
        except asyncio.CancelledError:
            if context:
                context.cancelled = True  # a sync tool's thread runs on; it can see this and stop
            raise
        except (Exception, SystemExit) as e:  # SystemExit: argparse or a library gave up
            traceback.print_exc()
            return tool_error(f"Tool {name} failed: {type(e).__name__}: {e}")

    def handle_notification(self, message, session):
        """notifications/cancelled stops a request; no other notification needs anything."""
        if message["method"] == "notifications/cancelled":
            request_id = message.get("params", {}).get("requestId")
            task = session["in_flight"].pop(request_id, None) if valid_id(request_id) else None
            if task:  # an unknown, finished or malformed id is ignored, as the spec says
                task.cancel()

    # === 5. The stdio loop (spec: basic/transports/stdio) ===

    def run(self):
        """Serve MCP on stdin and stdout until stdin closes, or until SIGTERM or SIGINT; answer
        every request read, then return."""
        # Keep the real stdout for protocol messages and point fd 1 and sys.stdout at stderr, so
        # a stray print() in a tool, or a C library writing to fd 1, cannot corrupt the stream.
        wire_fd = os.dup(1)
        os.dup2(2, 1)
        real_stdout, sys.stdout = sys.stdout, sys.stderr
        try:
            asyncio.run(self.serve_stdio(sys.stdin.fileno(), wire_fd))
        except KeyboardInterrupt:  # Ctrl-C before the event loop took over SIGINT
            pass
        finally:  # give the caller its stdout back
            sys.stdout = real_stdout
            os.dup2(wire_fd, 1)
            os.close(wire_fd)

    async def serve_stdio(self, in_fd, out_fd):
        loop = asyncio.get_running_loop()
        read, writer = await open_stdio(in_fd, out_fd)
        session = self.new_session()
        in_flight, stop = session["in_flight"], loop.create_future()  # stop's result: why we stop

        def send(message):
            # Answers always go out. A notification is skipped while a slow client has a backlog:
            # progress is only a hint, and the next one that goes out carries the latest value.
            if "id" in message or writer.transport.get_write_buffer_size() < MAX_BACKLOG:
                writer.write(encode_reply(message))

        def stop_serving(reason):
            if not stop.done():
                stop.set_result(reason)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop_serving, f"stopped by {signal.Signals(signum).name}")
        reading = asyncio.ensure_future(self.read_requests(read, writer, session, send))
        await asyncio.wait([reading, stop], return_when=asyncio.FIRST_COMPLETED)
        reading.cancel()
        if reading.done() and not reading.cancelled() and reading.result():
            stop_serving(reading.result())  # the client stopped reading
        # After EOF every request read gets its answer; when we must stop, after a grace period.
        while in_flight and not stop.done():
            await asyncio.wait([*in_flight.values(), stop], return_when=asyncio.FIRST_COMPLETED)
        if stop.done():
            await self.cancel_after_grace(in_flight, send, stop.result())
        writer.close()  # flushes what is buffered before the pipe closes
        try:
            await asyncio.wait_for(writer.wait_closed(), WRITE_TIMEOUT)
        except (TimeoutError, ConnectionError):
            pass

    async def read_requests(self, read, writer, session, send):
        """Read requests until EOF. Returns why it stopped early, if it did."""
        in_flight, lines_read = session["in_flight"], 0
        async for line in read_lines(read):
            self.receive_line(line, session, send)
            lines_read += 1
            if lines_read % 16 == 0:  # let finished requests write their answers while lines wait
                await asyncio.sleep(0)
            # Backpressure: while too many requests run, or a slow client leaves too much unread,
            # stdin waits, so memory stays flat whatever the client sends.
            if len(in_flight) >= MAX_IN_FLIGHT:
                await asyncio.wait(in_flight.values(), return_when=asyncio.FIRST_COMPLETED)
            if writer.transport.get_write_buffer_size() > MAX_BACKLOG:
                try:
                    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)
                except TimeoutError:
                    return f"the client read nothing for {WRITE_TIMEOUT:g} s"
        return None

    async def cancel_after_grace(self, in_flight, send, reason):
        """Shutdown: running calls get SHUTDOWN_GRACE seconds to finish and answer. The rest are
        cancelled, and answered with an error that says so."""
        if in_flight:
            await asyncio.wait(list(in_flight.values()), timeout=SHUTDOWN_GRACE)
        cancelled = list(in_flight.items())
        for request_id, task in cancelled:
            task.cancel()
            send(error_response(request_id, MCPError(INTERNAL_ERROR, "Cancelled: the server is shutting down")))
        print(f"{self.info['name']}: {reason}; {len(cancelled)} running call(s) cancelled", file=sys.stderr)

    def receive_line(self, line, session, send):
        """One line from the client. A request starts a task: requests run concurrently, and
        answers go out as they finish, matched by id. A notification is acted on. Whatever is
        broken gets an error answer, unless it is a notification or a response."""
        if isinstance(line, tuple):  # (head, size) of a line over the limit
            error = MCPError(INVALID_REQUEST, f"Invalid Request: a message of {line[1]} bytes is over "
                                              f"the {MAX_MESSAGE_BYTES}-byte limit")
            return send(error_response(None, error))
        try:
            message = parse_message(line)
        except MCPError as e:
            return send(error_response(None, e))
        request_id = message.get("id")
        is_notification = "id" not in message and isinstance(message.get("method"), str)
        if "method" not in message and ("result" in message or "error" in message):
            return print(f"ignored a response (id {request_id!r}): this server sends no requests",
                         file=sys.stderr)
        try:
            check_request(message)
            if is_notification:
                return self.handle_notification(message, session)
            if not valid_id(request_id):
                raise MCPError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
            if request_id in session["in_flight"]:
                raise MCPError(INVALID_REQUEST, f"Invalid Request: id {request_id!r} is in use by "
                                                "a request in progress")
        except MCPError as e:
            if not is_notification:  # a notification is never answered, even a broken one
                send(error_response(request_id if valid_id(request_id) else None, e))
            return None
        session["in_flight"][request_id] = asyncio.ensure_future(self.answer(message, session, send))

    async def answer(self, message, session, send):
        # Sending from inside the task, not from a done-callback, saves an event-loop turn.
        response = await self.handle(message, session, send)
        if session["in_flight"].get(message["id"]) is asyncio.current_task():
            del session["in_flight"][message["id"]]
        if response is not None:
            send(response)


def check_log_level(level):
    if level not in LOG_LEVELS:
        raise MCPError(INVALID_PARAMS, f"Invalid params: log level must be one of {', '.join(LOG_LEVELS)}")
    return level


async def open_stdio(in_fd, out_fd):
    """A read() coroutine for stdin, and an asyncio writer for stdout. Pipes, sockets and terminals
    are used as they are. A regular file or /dev/null, which epoll cannot watch, is read by a
    worker thread (server.py < requests.jsonl), or written through a pipe that a thread copies."""
    loop = asyncio.get_running_loop()
    if is_pipe_like(in_fd):
        reader = asyncio.StreamReader()
        stdin = open(in_fd, "rb", buffering=0, closefd=False)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        read = functools.partial(reader.read, 65536)
    else:
        read = functools.partial(loop.run_in_executor, None, os.read, in_fd, 65536)
    stdout = open(out_fd, "wb", buffering=0, closefd=False)
    if not is_pipe_like(out_fd):
        read_end, write_end = os.pipe()
        loop.run_in_executor(None, copy_until_eof, read_end, stdout)  # asyncio.run waits for it
        stdout = open(write_end, "wb", buffering=0)
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())  # gives drain() and close()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, stdout)
    return read, asyncio.StreamWriter(transport, protocol, None, loop)


def is_pipe_like(fd):
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def copy_until_eof(read_fd, target):
    with open(read_fd, "rb", buffering=0) as source:
        shutil.copyfileobj(source, target)
