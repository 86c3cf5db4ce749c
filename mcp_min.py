"""mcp_min: the Model Context Protocol in one file, standard library only.

A Server turns typed, documented Python functions into MCP tools; a Client starts a
server as a subprocess and calls them. Both speak newline-delimited JSON-RPC 2.0 over
stdin/stdout (the stdio transport), in both eras of the spec: the legacy `initialize`
handshake (2024-11-05 ... 2025-11-25) and the stateless 2026-07-28 revision, where
every request carries its protocol version in `params._meta`.

    from mcp_min import Server
    server = Server("demo")

    @server.tool()
    def add(a: int, b: int = 1) -> int:
        '''Add two numbers.'''
        return a + b

    server.run()        # python demo.py: serves stdin/stdout until stdin closes

    async with Client([sys.executable, "demo.py"]) as client:
        print(await client.call_tool("add", {"a": 2}))

Copy this file into your project; it needs nothing else. The sections follow a message:
the wire, JSON-RPC, tools, the server's dispatch, the stdio loop; then the client.
Spec: https://modelcontextprotocol.io/specification (2025-11-25 and 2026-07-28).
"""
import asyncio, contextvars, inspect, itertools, json, math, os, queue, shutil, signal, stat, sys, threading, traceback, types, typing

LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]  # oldest first
MODERN_VERSIONS = ["2026-07-28"]
META = "io.modelcontextprotocol/"  # prefix of the per-request _meta fields of the modern era
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a longer line gets -32600 and is skipped, never held whole
MAX_IN_FLIGHT = 512  # requests running at once; past that we stop reading (backpressure)
LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
# JSON-RPC 2.0 error codes, and the one the 2026-07-28 revision adds for versions.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
UNSUPPORTED_VERSION = -32022


class MCPError(Exception):
    """A JSON-RPC error: raised by handlers in the server, and by the client when one comes back."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{message} ({code})")
        self.code, self.message, self.data = code, message, data

    def to_json(self):
        return {"code": self.code, "message": self.message, **({} if self.data is None else {"data": self.data})}


# === The wire: one JSON text per line, UTF-8 (spec: basic/transports/stdio) ===

# JSON escapes control characters, so a line never holds an embedded newline. NaN and Infinity are
# not JSON: refusing them keeps the peer's parser whole. (Built once: json.dumps with options builds
# a new encoder on every call.)
ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode(message):
    text = ENCODER.encode(message)
    try:
        return (text + "\n").encode()
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" came in escaped): JSON escapes it, UTF-8 cannot hold it
        return (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode()


def encode_reply(message):
    """encode() for what the server sends. A message JSON cannot carry (NaN, a datetime, a set, deep
    nesting), or one over the size limit the peer would refuse, becomes an Internal error answer for its
    id: every request still gets exactly one answer. A notification that cannot be sent is dropped (b"")."""
    try:
        line = encode(message)
        if len(line) <= MAX_MESSAGE_BYTES + 1:
            return line
        problem = f"the answer is {len(line)} bytes, over the {MAX_MESSAGE_BYTES}-byte message limit"
    except (ValueError, TypeError, RecursionError) as e:
        problem = str(e) or type(e).__name__
    print(f"cannot send a message: {problem}", file=sys.stderr)
    return encode(error_response(message["id"], MCPError(INTERNAL_ERROR, f"Internal error: {problem}"))) if "id" in message else b""


async def read_lines(reader):
    """Yield each line of the stream as bytes; None stands for a line over MAX_MESSAGE_BYTES."""
    oversized = False  # inside a line that is too long: drop bytes up to its newline, never hold it whole
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as eof:
            if oversized or eof.partial.strip():  # a last message without its newline still counts
                yield None if oversized else eof.partial
            return
        except asyncio.LimitOverrunError as too_long:
            await reader.readexactly(too_long.consumed)
            oversized = True
            continue
        yield None if oversized else line
        oversized = False


# === JSON-RPC 2.0: requests, notifications, responses (spec: basic, "Messages") ===

def not_json(literal):  # Python's json reads NaN and Infinity; JSON has no such values
    raise ValueError(f"{literal} is not a JSON value")


def finite_float(text):  # 1e400 would become inf, which no reply could carry back
    if math.isinf(value := float(text)):
        raise ValueError(f"{text} is too large for a JSON number")
    return value


DECODER = json.JSONDecoder(parse_constant=not_json, parse_float=finite_float)


def parse_message(line):
    """One line -> a message dict, or MCPError (answered with id null: we cannot know the id)."""
    if line is None:
        raise MCPError(INVALID_REQUEST, f"Invalid Request: message larger than {MAX_MESSAGE_BYTES} bytes")
    try:
        message = DECODER.decode(line.decode())
    except UnicodeDecodeError as e:
        raise MCPError(PARSE_ERROR, f"Parse error: not UTF-8 ({e.reason} at byte {e.start})")
    except ValueError as e:  # also a number over Python's 4,300-digit limit
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
    # MCP forbids null ids; JSON-RPC discourages fractions; a bool is an int to Python only.
    return isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))


def error_response(request_id, error):
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


# === Tools: a typed Python function becomes a tool (spec: server/tools) ===

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "array",
              type(None): "null"}


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
    raise TypeError(f"{where}: {hint!r} has no JSON Schema here; use str, int, float, bool, list[...], dict, "
                    "X | None or Literal[...]")


PYTHON_TYPES = {name: python_type for python_type, name in JSON_TYPES.items()}


def validate(value, schema, path="arguments"):
    """Check a value against our schema subset; returns it (5.0 as 5 for an integer) or raises ValueError."""
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            try:
                return validate(value, option, path)
            except ValueError:
                pass
        raise ValueError(f"{path}: {json.dumps(value)[:80]} matches none of {json.dumps(schema['anyOf'])}")
    if "enum" in schema:
        # Equal as JSON values: 1.0 is 1, but true is not 1 (Python says True == 1).
        if not any(value == choice and isinstance(value, bool) == isinstance(choice, bool) for choice in schema["enum"]):
            raise ValueError(f"{path} must be one of {json.dumps(schema['enum'])}")
        return value
    expected = schema.get("type")
    if expected not in PYTHON_TYPES:
        return value  # a hand-written schema beyond our subset: the tool checks what it asked for
    if type(value) is not PYTHON_TYPES[expected]:  # the exact type passes at once; else what JSON Schema allows
        if expected == "integer" and type(value) is float and value.is_integer():
            value = int(value)  # JSON Schema counts 5.0 as an integer
        elif not (expected == "number" and type(value) is int):  # and 1 as a number
            # No coercion: "5" is not an integer. A model that sent the wrong type learns it and retries.
            raise ValueError(f"{path} must be of type {expected}, not {json.dumps(value)[:80]}")
    if expected == "array" and "items" in schema:
        return [validate(item, schema["items"], f"{path}[{i}]") for i, item in enumerate(value)]
    if expected == "object":
        known, extra = schema.get("properties", {}), schema.get("additionalProperties")
        if extra is False and not value.keys() <= known.keys():
            raise ValueError(f"unknown argument(s): {', '.join(sorted(value.keys() - known.keys()))}; "
                             f"expected: {', '.join(known) or 'none'}")
        missing = [name for name in schema.get("required", ()) if name not in value]
        if missing:
            raise ValueError(f"missing required argument(s): {', '.join(missing)}")
        return {key: validate(item, known[key] if key in known else extra, key if path == "arguments" else f"{path}.{key}")
                if key in known or isinstance(extra, dict) else item for key, item in value.items()}
    return value


def describe_tool(func, name=None, title=None, annotations=None, output_schema=None):
    """The definition tools/list sends, from the function's name, docstring and type hints."""
    hints, name = typing.get_type_hints(func), name or func.__name__
    properties, required, context_param = {}, [], None
    for param in inspect.signature(func).parameters.values():
        if param.name not in hints:
            raise TypeError(f"tool {name}: parameter {param.name!r} needs a type hint, so the schema can say what to send")
        if hints[param.name] is Context:
            context_param = param.name  # filled in by the server, not by the client
            continue
        properties[param.name] = schema_for(hints[param.name], f"tool {name}, parameter {param.name!r}")
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        else:
            encode(param.default)  # a default that is not JSON fails here, at decoration time
            properties[param.name]["default"] = param.default
    input_schema = {"type": "object", **({"properties": properties} if properties else {}),
                    **({"required": required} if required else {}), "additionalProperties": False}
    returns = hints.get("return")
    if output_schema is None and (returns is dict or typing.get_origin(returns) is dict):
        output_schema = {"type": "object"}
    definition = {"name": name, "description": inspect.getdoc(func) or "", "inputSchema": input_schema}
    optional = {"title": title, "outputSchema": output_schema, "annotations": annotations}
    return {**definition, **{k: v for k, v in optional.items() if v is not None}}, context_param


class ToolResult:
    """Return this from a tool for full control: content (a str or content blocks), structured data, isError."""

    def __init__(self, content, structured=None, is_error=False):
        self.content, self.structured, self.is_error = content, structured, is_error


def to_call_result(value, definition):
    """A tool's return value -> CallToolResult. The rules, in order:
    ToolResult -> as given; str -> one text block; dict -> structuredContent plus the same JSON as text
    (for clients that only read content); a list of content blocks (dicts with a "type": text, image,
    audio, resource, resource_link) -> the content as is; None -> no content; anything else JSON can
    carry (numbers, bools, other lists) -> one text block holding its JSON."""
    if not isinstance(value, ToolResult):
        if isinstance(value, dict):
            value = ToolResult(json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False), value)
        elif isinstance(value, list) and value and all(isinstance(b, dict) and "type" in b for b in value):
            value = ToolResult(value)
        else:
            value = ToolResult([] if value is None else value if isinstance(value, str) else encode(value).decode().strip())
    content = [{"type": "text", "text": value.content}] if isinstance(value.content, str) else value.content
    result = {"content": content, "isError": value.is_error}
    if value.structured is not None:
        result["structuredContent"] = value.structured
    elif "outputSchema" in definition and not value.is_error:  # spec: then structuredContent is a MUST
        raise TypeError("the tool declares an outputSchema, so it must return a dict")
    return result


def tool_error(text):
    return {"content": [{"type": "text", "text": text}], "isError": True}


class WorkerThreads:
    """The threads sync tools run in. Up to `size` daemon threads, started as calls need them. A tool
    that is stuck for good (cancelled, but Python cannot stop a thread) lends its place to a new thread
    until it returns, so stuck tools never starve the others; and as daemons they never hold up exit.
    (asyncio.to_thread's pool has cpu+4 threads, joined at exit: six stuck tools stopped every sync call.)"""

    def __init__(self, size=32):
        self.jobs, self.lock = queue.SimpleQueue(), threading.Lock()
        self.size, self.threads, self.idle, self.queued = size, 0, 0, 0

    def work(self):
        while True:
            with self.lock:
                self.idle += 1
            job = self.jobs.get()
            with self.lock:
                self.idle, self.queued = self.idle - 1, self.queued - 1
            job()

    async def run(self, func, arguments):
        loop, context = asyncio.get_running_loop(), contextvars.copy_context()
        future, cancelled = loop.create_future(), []

        def settle(ok, value):
            if not future.done():  # a cancelled request's future is done already
                future.set_result(value) if ok else future.set_exception(value)

        def job():
            if not cancelled:  # a call cancelled while it waited in the queue never runs
                try:
                    outcome = True, context.run(func, **arguments)
                except BaseException as e:
                    outcome = False, e
                try:
                    loop.call_soon_threadsafe(settle, *outcome)
                except RuntimeError:  # the event loop is closed: nobody waits for this answer any more
                    pass
            if cancelled:  # the place it lent is no longer needed
                with self.lock:
                    self.size -= 1
        with self.lock:  # a new thread only if the jobs waiting outnumber the idle threads
            self.queued += 1
            spawn = self.queued > self.idle and self.threads < self.size
            self.threads += spawn
        self.jobs.put(job)
        if spawn:
            threading.Thread(target=self.work, daemon=True, name="mcp_min tool").start()
        try:
            return await future
        except asyncio.CancelledError:
            with self.lock:
                cancelled.append(True)
                self.size += 1
            raise


THREADS = WorkerThreads()


class Context:
    """Given to a tool that asks for it (a parameter annotated Context): progress, logging, cancellation.
    Safe to call from the worker thread a sync tool runs in."""

    def __init__(self, send, request_id, progress_token, log_level):
        self.request_id, self.cancelled, self.progress_token, self.log_level = request_id, False, progress_token, log_level
        self._send, self._loop = send, asyncio.get_running_loop()

    def _notify(self, method, params):
        if self.cancelled:  # spec: nothing more is sent for a cancelled request
            return
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if not inspect.iscoroutinefunction(self._send):  # stdio's send writes at once
            return self._loop.call_soon_threadsafe(self._send, message)
        try:
            asyncio.get_running_loop()  # an async tool, on the loop: schedule the send
            asyncio.ensure_future(self._send(message))
        except RuntimeError:  # a sync tool's thread: wait until the peer takes it (backpressure)
            asyncio.run_coroutine_threadsafe(self._send(message), self._loop).result()

    def report_progress(self, progress, total=None, message=None):
        """notifications/progress, if the request carried a progressToken. Progress must increase."""
        if self.progress_token is not None:
            extra = {k: v for k, v in (("total", total), ("message", message)) if v is not None}
            self._notify("notifications/progress", {"progressToken": self.progress_token, "progress": progress, **extra})

    def log(self, level, data, logger=None):
        """notifications/message, if the client asked for this level (logging/setLevel, or per request)."""
        if self.log_level is not None and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level):
            self._notify("notifications/message", {"level": level, "data": data, **({"logger": logger} if logger else {})})


# === The server: each request in the era it asks for (spec: basic/lifecycle, basic/versioning) ===

class Server:
    def __init__(self, name, version="0.1.0", instructions=None):
        self.info = {"name": name, "version": version}
        self.instructions = instructions
        self.tools = {}  # name -> (function, definition, Context parameter or None, is async), in list order
        self.capabilities = {"tools": {"listChanged": False}, "logging": {}}

    def tool(self, name=None, title=None, annotations=None, output_schema=None):
        """Decorator: register the function as a tool; its name, docstring and type hints define it."""
        def register(func):
            definition, context_param = describe_tool(func, name, title, annotations, output_schema)
            self.tools[definition["name"]] = (func, definition, context_param, inspect.iscoroutinefunction(func))
            return func
        return register

    def new_session(self):
        """One client's state. Legacy clients have one per stdio process; modern requests need none."""
        return {"protocol_version": None, "log_level": "debug", "in_flight": {}}

    def modern_version(self, method, params):
        """The 2026-07-28 revision if the request carries its _meta fields; None for a legacy request."""
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        if method != "server/discover" and not any(key.startswith(META) for key in meta):
            return None
        missing = [META + key for key in ("protocolVersion", "clientCapabilities") if META + key not in meta]
        if missing:
            raise MCPError(INVALID_PARAMS, "Invalid params: _meta is missing " + ", ".join(missing))
        if meta[META + "protocolVersion"] not in MODERN_VERSIONS:
            raise MCPError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                           {"supported": MODERN_VERSIONS, "requested": meta[META + "protocolVersion"]})
        return meta[META + "protocolVersion"]

    async def handle(self, message, session, send):
        """Answer one well-formed request: the response dict, or None if it was cancelled."""
        request_id, method, params = message["id"], message["method"], message.get("params", {})
        try:
            if method != "initialize" and self.modern_version(method, params):
                # Modern: stateless. Log messages only if this request asks; every result names the server.
                level = params["_meta"].get(META + "logLevel")
                result = await self.dispatch(method, params, request_id, send, level and self.check_log_level(level))
                result.update(resultType="complete", _meta={**result.get("_meta", {}), META + "serverInfo": self.info})
                if method in ("server/discover", "tools/list"):  # spec: caching. Our tools never change.
                    result.update(ttlMs=3_600_000, cacheScope="public")
            elif method == "initialize":
                result = self.initialize(params, session)
            elif method == "ping":  # the one request allowed before initialization
                result = {}
            elif session["protocol_version"] is None:
                raise MCPError(INVALID_REQUEST, f"Invalid Request: {method} before initialize; send initialize first, "
                               f"or give each request the _meta of protocol {MODERN_VERSIONS[-1]}")
            elif method == "logging/setLevel":
                session["log_level"], result = self.check_log_level(params.get("level")), {}
            else:
                result = await self.dispatch(method, params, request_id, send, session["log_level"])
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        except MCPError as e:
            return error_response(request_id, e)
        except asyncio.CancelledError:
            return None
        except Exception as e:
            traceback.print_exc()  # the whole story for the operator (stderr), the gist for the client
            return error_response(request_id, MCPError(INTERNAL_ERROR, f"Internal error: {type(e).__name__}"))

    def initialize(self, params, session):
        """Legacy handshake. An unknown version is not an error: we offer our latest and the client decides."""
        if session["protocol_version"] is not None:
            raise MCPError(INVALID_REQUEST, "Invalid Request: already initialized")
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise MCPError(INVALID_PARAMS, "Invalid params: initialize needs a protocolVersion string")
        session["protocol_version"] = requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[-1]
        result = {"protocolVersion": session["protocol_version"], "capabilities": self.capabilities, "serverInfo": self.info}
        return result if self.instructions is None else {**result, "instructions": self.instructions}

    def check_log_level(self, level):
        if level not in LOG_LEVELS:
            raise MCPError(INVALID_PARAMS, f"Invalid params: log level must be one of {', '.join(LOG_LEVELS)}")
        return level

    async def dispatch(self, method, params, request_id, send, log_level):
        """The methods both eras share, and server/discover (modern requests only reach it)."""
        if method == "server/discover":
            result = {"supportedVersions": MODERN_VERSIONS, "capabilities": self.capabilities}
            return result if self.instructions is None else {**result, "instructions": self.instructions}
        if method == "tools/list":  # one page holds every tool, so a cursor has nothing to select
            return {"tools": [tool[1] for tool in self.tools.values()]}
        if method == "tools/call":
            return await self.call_tool(params, request_id, send, log_level)
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def call_tool(self, params, request_id, send, log_level):
        """tools/call. A call that does not fit the protocol is an error (-32602); bad arguments and a
        failing tool are results with isError, which the model reads and can correct (spec: tools, errors)."""
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, 'Invalid params: tools/call needs "name" (a string) and "arguments" (an object)')
        if name not in self.tools:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}. Available tools: {', '.join(self.tools)}")
        func, definition, context_param, is_async = self.tools[name]
        try:
            arguments = validate(arguments, definition["inputSchema"])
        except ValueError as e:
            return tool_error(f"Invalid arguments for tool {name}: {e}")
        context = None
        if context_param:
            progress_token = (params.get("_meta") or {}).get("progressToken")
            context = arguments[context_param] = Context(send, request_id, progress_token, log_level)
        try:
            if is_async:
                value = await func(**arguments)
            else:  # in a worker thread, so one slow tool never holds up the others
                value = await THREADS.run(func, arguments)
            return to_call_result(value, definition)
        except asyncio.CancelledError:
            if context:
                context.cancelled = True  # a sync tool's thread runs on: it can watch this flag and stop
            raise
        except (Exception, SystemExit) as e:  # SystemExit: argparse or a library gave up; the server goes on
            traceback.print_exc()
            return tool_error(f"Tool {name} failed: {type(e).__name__}: {e}")

    # --- One incoming line, whatever it holds ---

    def receive(self, line, session, send):
        """Act on one line: start a task for a request (requests run concurrently, answers go out as
        they finish, matched by id), act on a notification, answer what is broken."""
        try:
            message = parse_message(line)
        except MCPError as e:
            return send(error_response(None, e))
        request_id, is_notification = message.get("id"), "id" not in message and isinstance(message.get("method"), str)
        if "method" not in message and ("result" in message or "error" in message):
            return print(f"ignored a response (id {request_id!r}): this server sends no requests", file=sys.stderr)
        try:
            check_request(message)
            if is_notification:
                return self.notification(message, session)
            if not valid_id(request_id):
                raise MCPError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
            if request_id in session["in_flight"]:
                raise MCPError(INVALID_REQUEST, f"Invalid Request: id {request_id!r} is in use by a request in progress")
        except MCPError as e:
            if not is_notification:  # a notification is never answered, even a broken one
                send(error_response(request_id if valid_id(request_id) else None, e))
            return None
        session["in_flight"][request_id] = asyncio.ensure_future(self.respond(message, session, send))

    async def respond(self, message, session, send):
        # Sending from inside the task, not from a done-callback, saves an event-loop turn per request.
        response = await self.handle(message, session, send)
        if session["in_flight"].get(message["id"]) is asyncio.current_task():
            del session["in_flight"][message["id"]]
        if response is not None:
            send(response)

    def notification(self, message, session):
        if message["method"] == "notifications/cancelled":
            request_id = message.get("params", {}).get("requestId")
            task = session["in_flight"].pop(request_id, None) if valid_id(request_id) else None
            if task:  # an unknown, finished or malformed id is ignored, as the spec says
                task.cancel()
        # notifications/initialized and any other: nothing to do, and never an answer.

    # --- The stdio transport ---

    def run(self, transport="stdio", host="127.0.0.1", port=8000, **options):
        """Serve MCP on stdin/stdout until stdin closes; answer every request read, then return.
        transport="http" serves Streamable HTTP on host:port instead (mcp_http.py, loaded only then)."""
        if transport == "http":
            return http_module().serve(self, host, port, **options)
        # Keep the real stdout for protocol messages and point fd 1 and sys.stdout at stderr, so a
        # stray print() in a tool, or a C library writing to fd 1, can never corrupt the stream.
        wire_fd = os.dup(1)
        os.dup2(2, 1)
        real_stdout, sys.stdout = sys.stdout, sys.stderr
        try:
            asyncio.run(self.serve_stdio(sys.stdin.fileno(), wire_fd))
        except KeyboardInterrupt:
            pass
        finally:  # give the caller its stdout back
            sys.stdout = real_stdout
            os.dup2(wire_fd, 1)
            os.close(wire_fd)

    async def serve_stdio(self, in_fd, out_fd):
        reader, writer = await open_pipes(in_fd, out_fd)
        session = self.new_session()

        def send(message):
            writer.write(encode_reply(message))

        lines_read = 0
        async for line in read_lines(reader):
            self.receive(line, session, send)
            lines_read += 1
            if lines_read % 16 == 0:  # while stdin holds more lines, let finished requests write their answers
                await asyncio.sleep(0)
            # Backpressure: with too many requests running, or a slow reader letting a MiB of replies pile
            # up, stop reading stdin until it eases, so memory stays flat whatever the client sends.
            if len(session["in_flight"]) >= MAX_IN_FLIGHT:
                await asyncio.wait(session["in_flight"].values(), return_when=asyncio.FIRST_COMPLETED)
            if writer.transport.get_write_buffer_size() > 1024 * 1024:
                await writer.drain()
        if session["in_flight"]:  # stdin closed: every request already read still gets its answer
            await asyncio.wait(session["in_flight"].values())
        writer.close()  # flushes what is buffered before the pipe closes
        await writer.wait_closed()


def http_module():
    """Streamable HTTP lives in mcp_http.py (stdlib-only too), loaded only when it is asked for."""
    try:
        import mcp_http
    except ModuleNotFoundError as e:
        if e.name != "mcp_http":
            raise
        raise ModuleNotFoundError("Streamable HTTP needs mcp_http.py: copy it next to mcp_min.py") from None
    return mcp_http


async def open_pipes(in_fd, out_fd):
    """asyncio streams on two file descriptors: pipes, sockets and terminals as they are; regular files
    (python server.py < requests.jsonl > replies.jsonl) through a pipe that a thread copies to or from."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    in_file, out_file = open(in_fd, "rb", buffering=0, closefd=False), open(out_fd, "wb", buffering=0, closefd=False)
    if not is_pipe_like(in_fd):
        in_file = copy_through_pipe(loop, in_file, incoming=True)
    if not is_pipe_like(out_fd):
        out_file = copy_through_pipe(loop, out_file, incoming=False)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), in_file)
    # StreamReaderProtocol gives the writer flow control (drain) and a close waiter; its reader stays unused.
    transport, protocol = await loop.connect_write_pipe(lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), out_file)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


def is_pipe_like(fd):  # what epoll can watch; /dev/null is a character device it refuses
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def copy_through_pipe(loop, file, incoming):
    """asyncio cannot watch a regular file, so a worker thread copies it into (or out of) a pipe it can."""
    read_end, write_end = os.pipe()
    read_end, write_end = open(read_end, "rb", buffering=0), open(write_end, "wb", buffering=0)
    source, target, ours = (file, write_end, write_end) if incoming else (read_end, file, read_end)

    def copy():
        with ours:  # closing the thread's end of the pipe is what tells the other end we are done
            shutil.copyfileobj(source, target)
    loop.run_in_executor(None, copy)  # asyncio.run waits for it before returning, so nothing is lost
    return read_end if incoming else write_end


# === The client: start a server, learn its era, call its tools (spec: transports/stdio, versioning) ===

class Client:
    """async with Client([sys.executable, "server.py"]) as client: await client.call_tool(name, arguments)

    trace(direction, line), if given, sees every line: "→" sent, "←" received."""

    def __new__(cls, command, *args, **kwargs):
        if isinstance(command, str) and command.startswith(("http://", "https://")):
            cls = http_module().HTTPClient  # Client("http://127.0.0.1:8000/mcp") speaks Streamable HTTP
        return super().__new__(cls)

    def __init__(self, command, env=None, cwd=None, trace=None, timeout=60.0, probe_timeout=5.0, legacy=False):
        self.command, self.env, self.cwd, self.trace = command, env, cwd, trace
        self.timeout, self.probe_timeout, self.legacy = timeout, probe_timeout, legacy
        self.protocol_version = self.server_info = self.capabilities = self.era = self.failure = None
        self.pending, self.progress_handlers, self.ids, self.stderr_tail = {}, {}, itertools.count(1), []
        self.client_info = {"name": "mcp-min", "version": "0.1.0"}

    async def __aenter__(self):
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=self.env, cwd=self.cwd, limit=MAX_MESSAGE_BYTES)
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

    async def connect(self):
        """Probe with server/discover: a DiscoverResult or a modern error means 2026-07-28. Any other
        error, or silence, means a legacy server: fall back to the initialize handshake.
        legacy=True skips the probe and opens with the handshake, as hosts of the legacy era do."""
        self.era, self.protocol_version = "modern", MODERN_VERSIONS[-1]
        try:
            if self.legacy:
                raise TimeoutError
            found = await self.request("server/discover", timeout=self.probe_timeout)
            supported = found.get("supportedVersions", [])
            if any(version in MODERN_VERSIONS for version in supported):
                self.protocol_version = max(version for version in supported if version in MODERN_VERSIONS)
                self.capabilities = found.get("capabilities", {})
                self.server_info = found.get("_meta", {}).get(META + "serverInfo", {})
                return
            if not any(version in LEGACY_VERSIONS for version in supported):
                raise MCPError(UNSUPPORTED_VERSION, "no protocol version in common", {"supported": supported})
        except MCPError as e:
            if e.code == UNSUPPORTED_VERSION:  # modern, but no version in common: falling back cannot help
                raise MCPError(e.code, f"the server speaks {(e.data or {}).get('supported')}; this client speaks "
                               f"{MODERN_VERSIONS + LEGACY_VERSIONS}", e.data) from None
        except TimeoutError:
            pass
        self.era = "legacy"
        result = await self.request("initialize", {"protocolVersion": LEGACY_VERSIONS[-1], "capabilities": {},
                                                   "clientInfo": self.client_info})
        if result.get("protocolVersion") not in LEGACY_VERSIONS:
            raise MCPError(UNSUPPORTED_VERSION, f"the server offers protocol {result.get('protocolVersion')!r}; "
                           f"this client speaks {MODERN_VERSIONS + LEGACY_VERSIONS}")
        self.protocol_version = result["protocolVersion"]
        self.capabilities, self.server_info = result.get("capabilities", {}), result.get("serverInfo", {})
        await self.notify("notifications/initialized")

    async def list_tools(self):
        """Every tool, following pagination: a list of tool dicts exactly as on the wire."""
        tools, cursor = [], None
        while True:
            page = await self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools, cursor = tools + page.get("tools", []), page.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(self, name, arguments=None, timeout=None, on_progress=None):
        """The CallToolResult dict. on_progress(progress, total, message) receives progress notifications."""
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}}, timeout, on_progress)

    async def request(self, method, params=None, timeout=None, on_progress=None):
        """Send a request, wait for its result. Raises MCPError, TimeoutError or ConnectionError."""
        if self.failure:
            raise ConnectionError(self.failure)
        request_id, params = next(self.ids), dict(params or {})
        if self.era == "modern":  # every modern request says which protocol it speaks, and who asks
            params["_meta"] = {**params.get("_meta", {}), META + "protocolVersion": self.protocol_version,
                               META + "clientCapabilities": {}, META + "clientInfo": self.client_info}
        if on_progress:
            params["_meta"] = {**params.get("_meta", {}), "progressToken": request_id}
            self.progress_handlers[request_id] = on_progress
        future = self.pending[request_id] = asyncio.get_running_loop().create_future()
        timeout = self.timeout if timeout is None else timeout
        try:
            await self.write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            # Spec (cancellation): a request that timed out is cancelled, so the server can stop working on it.
            await self.notify("notifications/cancelled", {"requestId": request_id, "reason": f"timed out after {timeout} s"})
            what = f"{method} {params.get('name')!r}" if method == "tools/call" else method
            tail = "\n".join(self.stderr_tail)
            raise TimeoutError(f"{what}: no answer within {timeout} s; the request was cancelled (pass a larger "
                               f"timeout= if it is only slow)" + (f". The server's stderr ends with:\n{tail}" if tail else "")) from None
        finally:
            self.pending.pop(request_id, None)
            self.progress_handlers.pop(request_id, None)

    async def notify(self, method, params=None):
        await self.write({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    async def write(self, message):
        line = encode(message)
        if self.trace:
            self.trace("→", line.decode().rstrip("\n"))
        try:
            self.process.stdin.write(line)
            await self.process.stdin.drain()  # returns at once unless the server stopped reading
        except (ConnectionError, RuntimeError) as e:
            raise ConnectionError(self.failure or f"cannot write to the MCP server: {e}") from None

    async def read_messages(self):
        """The one reader: responses go to the request waiting on their id, notifications to handlers."""
        async for line in read_lines(self.process.stdout):
            if self.trace:
                self.trace("←", line.decode(errors="replace").rstrip("\n") if line else "<line over the size limit>")
            try:
                message = parse_message(line)
            except MCPError as e:
                shown = (line or b"")[:200].decode(errors="replace").strip()
                return await self.fail(f"the server wrote something other than an MCP message to stdout ({e.message}): "
                                       f"{shown!r}; a server must write logs to stderr only")
            reply = self.deliver(message)
            if reply:
                await self.write(reply)
        code = await self.process.wait()
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        await self.fail(f"the MCP server closed its stdout and {how}")

    def deliver(self, message):
        """Route one message from the server: a response to the request waiting on its id, progress to its
        handler. Returns the reply a server's own request gets: an error, as we offer no client features."""
        if message.get("method") == "ping" and "id" in message:  # the spec: the receiver MUST answer
            return {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        if "method" in message and "id" in message:
            return error_response(message["id"], MCPError(METHOD_NOT_FOUND, "Method not found"))
        if message.get("method") == "notifications/progress":
            params = message.get("params", {})
            handler = self.progress_handlers.get(params.get("progressToken"))
            if handler:
                handler(params.get("progress"), params.get("total"), params.get("message"))
        future = self.pending.get(message.get("id")) if valid_id(message.get("id")) else None
        if future and not future.done():
            error = message.get("error")
            if isinstance(error, dict):
                future.set_exception(MCPError(error.get("code"), error.get("message"), error.get("data")))
            else:
                future.set_result(message.get("result"))

    async def read_stderr(self):
        while line := await self.process.stderr.readline():  # the server's log: we keep its last lines
            self.stderr_tail = (self.stderr_tail + [line.decode(errors="replace").rstrip()])[-10:]

    async def fail(self, reason):
        """The server is gone or broken: fail every waiting request at once, with the server's last words."""
        await asyncio.wait([self.stderr_task], timeout=1.0)  # they are often on their way
        tail = "\n".join(self.stderr_tail)
        self.failure = reason + (f". Its stderr ended with:\n{tail}" if tail else "")
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError(self.failure))

    async def close(self):
        """Shutdown as the spec says: close the server's stdin, wait, then SIGTERM, then SIGKILL."""
        if self.process.returncode is None:
            self.process.stdin.close()
            for stop in (lambda: None, self.process.terminate, self.process.kill):
                try:
                    stop()
                    await asyncio.wait_for(self.process.wait(), 2.0)
                    break
                except (TimeoutError, ProcessLookupError):
                    continue
        await asyncio.wait([self.reader_task], timeout=2.0)  # it may be failing the waiting requests right now
        self.reader_task.cancel()
        await asyncio.gather(self.reader_task, self.stderr_task, return_exceptions=True)
        for future in self.pending.values():  # nobody will answer them now
            if not future.done():
                future.set_exception(ConnectionError(self.failure or "the MCP client was closed while this request waited"))
