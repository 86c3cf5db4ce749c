"""mcp_min: the Model Context Protocol in one file, standard library only.

A server turns typed, documented Python functions into MCP tools; a client starts a
server as a subprocess and calls them. Both speak newline-delimited JSON-RPC 2.0 over
pipes (the stdio transport) in both eras of the spec: the legacy `initialize`
handshake (2024-11-05 ... 2025-11-25) and the stateless 2026-07-28 revision, where
every request carries its protocol version in `params._meta`.

    from mcp_min import Server
    server = Server("demo")

    @server.tool()
    def add(a: int, b: int = 1) -> int:
        '''Add two numbers.'''
        return a + b

    server.run()        # python demo.py   -- serves stdin/stdout until stdin closes

    async with Client([sys.executable, "demo.py"]) as client:
        print(await client.call_tool("add", {"a": 2}))

Copy this file into your project; it needs nothing else. Sections follow the path of
a message: wire -> JSON-RPC -> tools -> the server's dispatch -> the stdio loop, then
the client. Spec: https://modelcontextprotocol.io/specification
"""
import asyncio, inspect, itertools, json, os, sys, traceback, types, typing

LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]  # oldest first
MODERN_VERSIONS = ["2026-07-28"]
META = "io.modelcontextprotocol/"  # prefix of the per-request fields of the modern era
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a longer line is refused (-32600) and skipped
MAX_IN_FLIGHT = 512  # requests running at once; past it we stop reading stdin (backpressure)
LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

# JSON-RPC 2.0 error codes, and the two MCP adds for the modern era.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603)
UNSUPPORTED_VERSION = -32022


class MCPError(Exception):
    """A JSON-RPC error: raised by handlers on the server, and by the client when one comes back."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{message} ({code})")
        self.code, self.message, self.data = code, message, data

    def to_json(self):
        error = {"code": self.code, "message": self.message}
        return error if self.data is None else {**error, "data": self.data}


# ---------------------------------------------------------------------------
# The wire: one JSON text per line, UTF-8 (spec: basic/transports, stdio)
# ---------------------------------------------------------------------------

def encode(message):
    # json.dumps escapes control characters, so the line never holds an embedded newline;
    # allow_nan=False because NaN and Infinity are not JSON and would break the peer's parser.
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()


def refuse_constant(name):
    raise ValueError(f"{name} is not valid JSON")


async def read_lines(reader):
    """Yield each line of the stream as bytes; None stands for a line over the size limit."""
    while True:
        try:
            yield await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as eof:
            if eof.partial.strip():  # a last message without its newline still counts
                yield eof.partial
            return
        except asyncio.LimitOverrunError as too_long:
            # Throw away the oversized line chunk by chunk, so it never sits in memory whole.
            await reader.readexactly(too_long.consumed)
            while True:
                try:
                    await reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as more:
                    await reader.readexactly(more.consumed)
                except asyncio.IncompleteReadError:
                    break
            yield None


# ---------------------------------------------------------------------------
# JSON-RPC 2.0: requests, notifications, responses (spec: basic, "Messages")
# ---------------------------------------------------------------------------

def parse_message(line):
    """Bytes of one line -> the message dict, or raise MCPError (the line gets an error with id null)."""
    if line is None:
        raise MCPError(INVALID_REQUEST, f"Invalid Request: message larger than {MAX_MESSAGE_BYTES} bytes")
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=refuse_constant)
    except UnicodeDecodeError as e:
        raise MCPError(PARSE_ERROR, f"Parse error: not UTF-8 ({e.reason} at byte {e.start})")
    except (ValueError, RecursionError) as e:  # RecursionError: JSON nested too deeply
        raise MCPError(PARSE_ERROR, f"Parse error: {str(e) or type(e).__name__}")
    if isinstance(message, list):
        raise MCPError(INVALID_REQUEST, "Invalid Request: batches are not supported since 2025-06-18")
    if not isinstance(message, dict):
        raise MCPError(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    return message


def check_request(message):
    """The MCP rules a request or notification must follow; returns its id (None for a notification)."""
    if message.get("jsonrpc") != "2.0":
        raise MCPError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if not isinstance(message.get("method"), str):
        raise MCPError(INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    if "params" in message and not isinstance(message["params"], dict):
        raise MCPError(INVALID_PARAMS, 'Invalid params: "params" must be an object')


def valid_id(request_id):
    # MCP forbids null ids; bools are ints to Python but not to JSON-RPC, floats are ambiguous.
    return isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))


def error_response(request_id, error):
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


# ---------------------------------------------------------------------------
# Tools: a typed Python function becomes a tool (spec: server/tools)
# ---------------------------------------------------------------------------

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "array"}


def schema_for(hint, where):
    """JSON Schema for one type hint; the subset an LLM can fill in and validate() can check."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in JSON_TYPES:
        return {"type": JSON_TYPES[hint]}
    if hint is type(None):
        return {"type": "null"}
    if origin is list:
        return {"type": "array", "items": schema_for(args[0], where)} if args else {"type": "array"}
    if origin is dict:
        return {"type": "object", "additionalProperties": schema_for(args[1], where)} if args else {"type": "object"}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [schema_for(arg, where) for arg in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    raise TypeError(f"{where}: type {hint!r} has no JSON Schema here; use str, int, float, bool, "
                    f"list[...], dict, X | None or Literal[...]")


def validate(value, schema, path):
    """Return the value checked against our schema subset, or raise ValueError saying what is wrong."""
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            try:
                return validate(value, option, path)
            except ValueError:
                pass
        raise ValueError(f"{path}: {json.dumps(value)[:80]} matches none of the allowed types")
    if "enum" in schema:
        if not any(value == choice and type(value) is type(choice) for choice in schema["enum"]):  # True is not 1
            raise ValueError(f"{path or 'value'} must be one of {json.dumps(schema['enum'])}")
        return value
    expected = schema.get("type")
    if expected == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON Schema counts 5.0 as an integer; the function gets the int it asked for
    checks = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
              "object": dict, "array": list, "null": type(None)}
    if not isinstance(value, checks[expected]) or (isinstance(value, bool) and expected != "boolean"):
        raise ValueError(f"{path} must be {'an' if expected[0] in 'aeiou' else 'a'} {expected}, "
                         f"not {json.dumps(value)[:80]}")  # no "5" -> 5: a model must send the right type
    if expected == "array" and "items" in schema:
        return [validate(item, schema["items"], f"{path}[{i}]") for i, item in enumerate(value)]
    if expected == "object":
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                raise ValueError(f"unknown argument(s) {', '.join(extra)}; expected: {', '.join(props) or 'none'}")
        missing = [name for name in schema.get("required", []) if name not in value]
        if missing:
            raise ValueError(f"missing required argument(s): {', '.join(missing)}")
        checked = {}
        for key, item in value.items():
            item_schema = props.get(key, schema.get("additionalProperties"))
            checked[key] = validate(item, item_schema, f"{path}.{key}" if path else key) if isinstance(item_schema, dict) else item
        return checked
    return value


def describe_tool(func, name=None, title=None, annotations=None, output_schema=None):
    """The tool definition that tools/list sends, derived from the function's signature and docstring."""
    hints = typing.get_type_hints(func)
    name = name or func.__name__
    properties, required, context_param = {}, [], None
    for param in inspect.signature(func).parameters.values():
        if param.name not in hints:
            raise TypeError(f"tool {name}: parameter {param.name!r} needs a type hint, so the schema can say what to send")
        if hints[param.name] is Context:
            context_param = param.name
            continue
        prop = schema_for(hints[param.name], f"tool {name}, parameter {param.name!r}")
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        else:
            try:
                json.dumps(param.default)
            except (TypeError, ValueError):
                raise TypeError(f"tool {name}: the default of {param.name!r} is not JSON") from None
            prop["default"] = param.default
        properties[param.name] = prop
    input_schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    if not properties:
        input_schema = {"type": "object", "additionalProperties": False}
    elif not required:
        del input_schema["required"]
    returns = hints.get("return")
    if output_schema is None and (returns is dict or typing.get_origin(returns) is dict):
        output_schema = {"type": "object"}
    definition = {"name": name, "description": inspect.getdoc(func) or "", "inputSchema": input_schema}
    for key, value in (("title", title), ("outputSchema", output_schema), ("annotations", annotations)):
        if value is not None:
            definition[key] = value
    return definition, context_param


class ToolResult:
    """Return this from a tool for full control: content (a str or content blocks), structured data, isError."""

    def __init__(self, content, structured=None, is_error=False):
        self.content, self.structured, self.is_error = content, structured, is_error


def to_call_result(value, definition):
    """What a tool returned -> a CallToolResult. The rules, in order:
    ToolResult -> as given; str -> one text block; dict -> structuredContent plus the same JSON as text;
    a list of content blocks (dicts with a "type") -> the content as is; None -> no content;
    anything else JSON can carry (numbers, bools, other lists) -> one text block of its JSON."""
    if isinstance(value, ToolResult):
        content = [{"type": "text", "text": value.content}] if isinstance(value.content, str) else value.content
        result = {"content": content, "isError": value.is_error}
        if value.structured is not None:
            result["structuredContent"] = value.structured
    elif isinstance(value, str):
        result = {"content": [{"type": "text", "text": value}], "isError": False}
    elif isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False)
        result = {"content": [{"type": "text", "text": text}], "isError": False, "structuredContent": value}
    elif isinstance(value, list) and value and all(isinstance(b, dict) and "type" in b for b in value):
        result = {"content": value, "isError": False}
    elif value is None:
        result = {"content": [], "isError": False}
    else:
        result = {"content": [{"type": "text", "text": json.dumps(value, ensure_ascii=False, allow_nan=False)}],
                  "isError": False}
    # The spec: a tool that declares outputSchema MUST return structuredContent on success.
    if "outputSchema" in definition and not result["isError"] and "structuredContent" not in result:
        raise TypeError(f"tool declares an outputSchema but returned {type(value).__name__}, not a dict")
    return result


def tool_error(text):
    return {"content": [{"type": "text", "text": text}], "isError": True}


class Context:
    """Handed to a tool that asks for it (a parameter annotated Context): progress, logging, cancellation.
    Safe to call from the worker thread a sync tool runs in."""

    def __init__(self, send, loop, request_id, progress_token, log_level):
        self.request_id, self.cancelled = request_id, False
        self._send, self._loop, self._progress_token, self._log_level = send, loop, progress_token, log_level

    def _notify(self, method, params):
        if not self.cancelled:  # spec: nothing more is sent for a cancelled request
            self._loop.call_soon_threadsafe(self._send, {"jsonrpc": "2.0", "method": method, "params": params})

    def report_progress(self, progress, total=None, message=None):
        """Send notifications/progress, if the request asked for it with a progressToken; progress must grow."""
        if self._progress_token is not None:
            params = {"progressToken": self._progress_token, "progress": progress}
            params.update({k: v for k, v in (("total", total), ("message", message)) if v is not None})
            self._notify("notifications/progress", params)

    def log(self, level, data, logger=None):
        """Send notifications/message if the client asked for this level (logging/setLevel, or per request)."""
        if self._log_level is not None and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self._log_level):
            self._notify("notifications/message", {"level": level, "data": data, **({"logger": logger} if logger else {})})


# ---------------------------------------------------------------------------
# The server: one handler per method, both eras (spec: basic/lifecycle, basic/versioning)
# ---------------------------------------------------------------------------

class Server:
    def __init__(self, name, version="0.1.0", instructions=None):
        self.info = {"name": name, "version": version}
        self.instructions = instructions
        self.tools = {}  # name -> (function, definition, context parameter); insertion order is list order
        self.capabilities = {"tools": {"listChanged": False}, "logging": {}}

    def tool(self, name=None, title=None, annotations=None, output_schema=None):
        """Decorator: register the function as a tool. Its name, docstring and type hints become the definition."""
        def register(func):
            definition, context_param = describe_tool(func, name, title, annotations, output_schema)
            self.tools[definition["name"]] = (func, definition, context_param)
            return func
        return register

    # --- Lifecycle. A session is one client's state: legacy clients have one per stdio process. ---

    def new_session(self):
        return {"protocol_version": None, "log_level": "debug", "in_flight": {}}

    def modern_version(self, method, params):
        """The 2026-07-28 revision if the request carries its _meta fields, None for a legacy request."""
        meta = params.get("_meta")
        if not (isinstance(meta, dict) and any(key.startswith(META) for key in meta)) and method != "server/discover":
            return None
        meta = meta if isinstance(meta, dict) else {}
        missing = [META + key for key in ("protocolVersion", "clientCapabilities") if META + key not in meta]
        if missing:
            raise MCPError(INVALID_PARAMS, "Invalid params: _meta is missing " + ", ".join(missing))
        if meta[META + "protocolVersion"] not in MODERN_VERSIONS:
            raise MCPError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                           {"supported": MODERN_VERSIONS, "requested": meta[META + "protocolVersion"]})
        return meta[META + "protocolVersion"]

    async def handle(self, message, session, send):
        """Answer one checked request; returns the response dict, or None when it was cancelled."""
        request_id, method, params = message["id"], message["method"], message.get("params", {})
        try:
            if method != "initialize" and self.modern_version(method, params):
                # Modern: stateless. Logs only if this request asks for them; every result says who we are.
                level = params["_meta"].get(META + "logLevel")
                result = await self.dispatch(method, params, request_id, send, level and self.check_log_level(level))
                result["resultType"] = "complete"
                result.setdefault("_meta", {})[META + "serverInfo"] = self.info
                if method in ("server/discover", "tools/list"):  # spec: caching; our tools never change
                    result.update(ttlMs=3_600_000, cacheScope="public")
            elif method == "initialize":
                result = self.initialize(params, session)
            elif method == "ping":  # the one request allowed before initialization
                result = {}
            elif session["protocol_version"] is None:
                raise MCPError(INVALID_REQUEST, f"Invalid Request: {method} before initialize; send initialize "
                               f"first, or per-request _meta of protocol {MODERN_VERSIONS[-1]}")
            elif method == "logging/setLevel":
                session["log_level"] = self.check_log_level(params.get("level"))
                result = {}
            else:
                result = await self.dispatch(method, params, request_id, send, session["log_level"])
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        except MCPError as e:
            return error_response(request_id, e)
        except asyncio.CancelledError:
            return None
        except Exception as e:
            traceback.print_exc(file=sys.stderr)  # the whole story for the operator, the gist for the client
            return error_response(request_id, MCPError(INTERNAL_ERROR, f"Internal error: {type(e).__name__}"))

    def initialize(self, params, session):
        if session["protocol_version"] is not None:
            raise MCPError(INVALID_REQUEST, "Invalid Request: already initialized")
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise MCPError(INVALID_PARAMS, "Invalid params: initialize needs a protocolVersion string")
        # An unknown version is not an error: we answer our latest, and the client decides.
        session["protocol_version"] = requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[-1]
        result = {"protocolVersion": session["protocol_version"], "capabilities": self.capabilities,
                  "serverInfo": self.info}
        return result if self.instructions is None else {**result, "instructions": self.instructions}

    def check_log_level(self, level):
        if level not in LOG_LEVELS:
            raise MCPError(INVALID_PARAMS, f"Invalid params: log level must be one of {', '.join(LOG_LEVELS)}")
        return level

    async def dispatch(self, method, params, request_id, send, log_level):
        """The methods both eras share (and server/discover, which only modern requests reach)."""
        if method == "server/discover":
            result = {"supportedVersions": MODERN_VERSIONS, "capabilities": self.capabilities}
            return result if self.instructions is None else {**result, "instructions": self.instructions}
        if method == "tools/list":
            # One page holds every tool; a cursor is ignored, as pagination allows.
            return {"tools": [definition for _, definition, _ in self.tools.values()]}
        if method == "tools/call":
            return await self.call_tool(params, request_id, send, log_level)
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")

    # --- tools/call: the two kinds of failure (spec: server/tools, "Error Handling") ---

    async def call_tool(self, params, request_id, send, log_level):
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, 'Invalid params: tools/call needs "name" (string) and "arguments" (object)')
        if name not in self.tools:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}. Available: {', '.join(self.tools)}")
        func, definition, context_param = self.tools[name]
        # Bad arguments and failing tools are results, not protocol errors: the model reads them and retries.
        try:
            arguments = validate(arguments, definition["inputSchema"], "")
        except ValueError as e:
            return tool_error(f"Invalid arguments for tool {name}: {e}")
        context = None
        if context_param:
            progress_token = (params.get("_meta") or {}).get("progressToken")
            context = arguments[context_param] = Context(send, asyncio.get_running_loop(), request_id,
                                                         progress_token, log_level)
        try:
            if inspect.iscoroutinefunction(func):
                value = await func(**arguments)
            else:  # a worker thread, so one slow tool never holds up the others
                value = await asyncio.to_thread(func, **arguments)
            return to_call_result(value, definition)
        except asyncio.CancelledError:
            if context:
                context.cancelled = True  # a sync tool's thread runs on; it can look at this flag
            raise
        except Exception as e:
            print(f"tool {name} failed:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            return tool_error(f"Tool {name} failed: {type(e).__name__}: {e}")

    # --- One incoming line, whatever it holds ---

    def receive(self, line, session, send):
        """Act on one line: start a task for a request (they run concurrently), act on a notification.
        Returns the task, or None when there was nothing to wait for."""
        try:
            message = parse_message(line)
        except MCPError as e:
            return send(error_response(None, e))
        request_id = message.get("id")
        if "method" not in message and ("result" in message or "error" in message):
            print(f"ignored a response (id {request_id!r}): this server sends no requests", file=sys.stderr)
            return None
        is_notification = "id" not in message and isinstance(message.get("method"), str)
        try:
            check_request(message)
            if is_notification:
                return self.notification(message, session)
            if not valid_id(request_id):
                raise MCPError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
            if request_id in session["in_flight"]:
                raise MCPError(INVALID_REQUEST, f"Invalid Request: id {request_id!r} is in use by a request in progress")
        except MCPError as e:
            if not is_notification:  # a broken notification still gets no answer
                send(error_response(request_id if valid_id(request_id) else None, e))
            return None
        task = asyncio.ensure_future(self.handle(message, session, send))
        session["in_flight"][request_id] = task

        def finished(task):
            if session["in_flight"].get(request_id) is task:
                del session["in_flight"][request_id]
            if not task.cancelled() and task.result() is not None:
                send(task.result())
        task.add_done_callback(finished)
        return task

    def notification(self, message, session):
        params = message.get("params", {})
        if message["method"] == "notifications/cancelled":
            task = session["in_flight"].pop(params.get("requestId"), None)
            if task:  # an unknown or finished id is ignored, as the spec says
                task.cancel()
        # notifications/initialized and anything else: nothing to do, and never an answer.

    # --- The stdio transport (spec: basic/transports/stdio) ---

    def run(self):
        """Serve MCP over stdin/stdout until stdin closes, then finish every request and exit."""
        # Keep the real stdout for protocol messages and point fd 1 and sys.stdout at stderr, so a
        # stray print() or a C library's output can never corrupt the stream.
        wire_fd = os.dup(1)
        os.dup2(2, 1)
        real_stdout, sys.stdout = sys.stdout, sys.stderr
        try:
            asyncio.run(self.serve_stdio(sys.stdin.fileno(), wire_fd))
        except KeyboardInterrupt:
            pass
        finally:
            sys.stdout = real_stdout

    async def serve_stdio(self, in_fd, out_fd):
        loop = asyncio.get_running_loop()
        reader, write, flush = await open_pipes(loop, in_fd, out_fd)
        session = self.new_session()
        slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        pending = set()

        def send(message):
            try:
                write(encode(message))
            except ValueError as e:  # NaN or a non-JSON object in a result: still exactly one answer
                print(f"cannot encode a message: {e}", file=sys.stderr)
                if "id" in message:
                    write(encode(error_response(message["id"], MCPError(INTERNAL_ERROR, f"Internal error: {e}"))))

        async for line in read_lines(reader):
            await slots.acquire()
            task = self.receive(line, session, send)
            if task is None:
                slots.release()
            else:
                pending.add(task)
                task.add_done_callback(lambda t: (pending.discard(t), slots.release()))
            await flush()
        # stdin closed: every request already read still gets its answer before we exit.
        if pending:
            await asyncio.wait(pending)
        await flush(final=True)


async def open_pipes(loop, in_fd, out_fd):
    """asyncio streams on two file descriptors: pipes and sockets natively, regular files through a thread."""
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), open(in_fd, "rb", buffering=0, closefd=False))
    except ValueError:  # a regular file: asyncio cannot watch it, so a thread feeds the reader
        def pump(file=open(in_fd, "rb", buffering=0, closefd=False)):
            while chunk := file.read(65536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
            loop.call_soon_threadsafe(reader.feed_eof)
        loop.run_in_executor(None, pump)
    out_file = open(out_fd, "wb", buffering=0, closefd=False)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        # Drain only when a slow reader lets a MiB pile up; below that writes cost no await.
        transport.set_write_buffer_limits(high=1024 * 1024)

        async def flush(final=False):
            if transport.get_write_buffer_size() > 1024 * 1024 or final:
                await writer.drain()
        return reader, transport.write, flush
    except ValueError:  # a regular file never blocks for long: plain writes will do
        async def flush(final=False):
            pass
        return reader, out_file.write, flush


# ---------------------------------------------------------------------------
# The client: spawn a server, detect its era, call tools (spec: basic/transports/stdio, versioning)
# ---------------------------------------------------------------------------

class Client:
    """async with Client([sys.executable, "server.py"]) as client: await client.call_tool(name, args)"""

    def __init__(self, command, env=None, cwd=None, trace=None, timeout=60.0, probe_timeout=5.0,
                 client_info=("mcp-min", "0.1.0")):
        self.command, self.env, self.cwd, self.trace = command, env, cwd, trace
        self.timeout, self.probe_timeout = timeout, probe_timeout
        self.client_info = {"name": client_info[0], "version": client_info[1]}
        self.protocol_version = self.server_info = self.capabilities = self.era = None
        self.pending, self.progress_handlers, self.ids = {}, {}, itertools.count(1)
        self.stderr_tail, self.failure = [], None

    async def __aenter__(self):
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=self.env, cwd=self.cwd, limit=MAX_MESSAGE_BYTES)
        except OSError as e:
            raise ConnectionError(f"cannot start MCP server {self.command[0]!r}: {e}") from e
        self.reader_task = asyncio.ensure_future(self.read_messages())
        self.stderr_task = asyncio.ensure_future(self.read_stderr())
        try:
            await self.connect()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info):
        await self.close()

    async def connect(self):
        """Probe with server/discover; a DiscoverResult or a modern error means 2026-07-28, else fall back."""
        self.era, self.protocol_version = "modern", MODERN_VERSIONS[-1]
        try:
            found = await self.request("server/discover", {}, timeout=self.probe_timeout)
            common = [v for v in found.get("supportedVersions", []) if v in MODERN_VERSIONS]
            if not common:
                raise MCPError(UNSUPPORTED_VERSION, "server speaks no protocol version we know",
                               {"supported": found.get("supportedVersions")})
            self.protocol_version = common[-1]
            self.capabilities = found.get("capabilities", {})
            self.server_info = found.get("_meta", {}).get(META + "serverInfo", {})
            return
        except MCPError as e:
            if e.code == UNSUPPORTED_VERSION:  # a modern server, but not our version: no point in falling back
                raise MCPError(e.code, f"the server speaks {(e.data or {}).get('supported')}, "
                               f"this client {MODERN_VERSIONS + LEGACY_VERSIONS}", e.data) from None
        except TimeoutError:
            pass
        # A legacy server: the initialize handshake, then notifications/initialized.
        self.era = "legacy"
        result = await self.request("initialize", {"protocolVersion": LEGACY_VERSIONS[-1], "capabilities": {},
                                                   "clientInfo": self.client_info})
        if result.get("protocolVersion") not in LEGACY_VERSIONS:
            raise MCPError(UNSUPPORTED_VERSION, f"server chose protocol {result.get('protocolVersion')!r}, "
                           f"we speak {LEGACY_VERSIONS + MODERN_VERSIONS}")
        self.protocol_version = result["protocolVersion"]
        self.capabilities, self.server_info = result.get("capabilities", {}), result.get("serverInfo", {})
        self.notify("notifications/initialized")

    async def list_tools(self):
        tools, cursor = [], None
        while True:
            page = await self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools += page.get("tools", [])
            cursor = page.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(self, name, arguments=None, timeout=None, on_progress=None):
        """The CallToolResult dict; on_progress(progress, total, message) gets progress notifications."""
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}},
                                  timeout=timeout, on_progress=on_progress)

    async def request(self, method, params=None, timeout=None, on_progress=None):
        """Send a request and wait for its result; raises MCPError, TimeoutError or ConnectionError."""
        if self.failure:
            raise ConnectionError(self.failure)
        request_id, params = next(self.ids), dict(params or {})
        if self.era == "modern":
            params["_meta"] = {**params.get("_meta", {}), META + "protocolVersion": self.protocol_version,
                               META + "clientCapabilities": {}, META + "clientInfo": self.client_info}
        if on_progress:
            params["_meta"] = {**params.get("_meta", {}), "progressToken": request_id}
            self.progress_handlers[request_id] = on_progress
        future = self.pending[request_id] = asyncio.get_running_loop().create_future()
        self.write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        timeout = self.timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            # Spec (cancellation): a request that timed out is cancelled, so the server can stop its work.
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": f"timed out after {timeout}s"})
            raise TimeoutError(f"{method}: no answer within {timeout}s; the request was cancelled") from None
        finally:
            self.pending.pop(request_id, None)
            self.progress_handlers.pop(request_id, None)

    def notify(self, method, params=None):
        self.write({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def write(self, message):
        data = encode(message)
        if self.trace:
            self.trace("→", data.decode().rstrip("\n"))
        if self.failure is None:
            self.process.stdin.write(data)

    async def read_messages(self):
        """The one reader: responses go to the waiting request by id, notifications to their handlers."""
        try:
            async for line in read_lines(self.process.stdout):
                if self.trace:
                    self.trace("←", line.decode("utf-8", "replace").rstrip("\n") if line else "<oversized line>")
                try:
                    message = parse_message(line)
                except MCPError as e:
                    shown = line[:200].decode("utf-8", "replace") if line else ""
                    return self.fail(f"the server wrote something that is not an MCP message to stdout ({e.message}): "
                                     f"{shown!r}. Servers must log to stderr only")
                if "method" in message and "id" in message:  # a server request: we offer no client features
                    self.write(error_response(message["id"], MCPError(METHOD_NOT_FOUND, "Method not found")))
                elif message.get("method") == "notifications/progress":
                    params = message.get("params", {})
                    handler = self.progress_handlers.get(params.get("progressToken"))
                    if handler:
                        handler(params.get("progress"), params.get("total"), params.get("message"))
                elif message.get("id") in self.pending and not self.pending[message["id"]].done():
                    future = self.pending[message["id"]]
                    if "error" in message:
                        error = message["error"] if isinstance(message["error"], dict) else {}
                        future.set_exception(MCPError(error.get("code"), error.get("message"), error.get("data")))
                    else:
                        future.set_result(message.get("result"))
            await self.process.wait()
            self.fail(f"the MCP server exited (code {self.process.returncode})")
        except Exception as e:  # never let the reader die silently: every waiting request must hear of it
            self.fail(f"reading from the MCP server failed: {e!r}")

    async def read_stderr(self):
        async for line in self.process.stderr:
            self.stderr_tail = (self.stderr_tail + [line.decode("utf-8", "replace").rstrip()])[-20:]

    def fail(self, reason):
        """The server is gone or broken: fail every waiting request at once, with its last words."""
        tail = "\n".join(self.stderr_tail[-10:])
        self.failure = reason + (f"; its stderr ended with:\n{tail}" if tail else "")
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError(self.failure))

    async def close(self):
        """Shutdown as the spec says: close the server's stdin, wait, then SIGTERM, then SIGKILL."""
        if self.process.returncode is None:
            try:
                self.process.stdin.close()
            except Exception:
                pass
            for signal_it in (lambda: None, self.process.terminate, self.process.kill):
                try:
                    signal_it()
                    await asyncio.wait_for(self.process.wait(), 2.0)
                    break
                except (TimeoutError, ProcessLookupError):
                    continue
        await asyncio.gather(self.reader_task, self.stderr_task, return_exceptions=True)
