"""
client.py - an MCP client (the Client class), and a demo that talks to a server step by step.

Client, at the top of this file, is the client side of mcp_min: copy it with mcp_min.py into your
project. It starts a stdio server as a subprocess, learns its era, and calls its tools, reads its
resources and gets its prompts. HTTPClient, below it, does the same over Streamable HTTP. The
demo after them shows what each step of the conversation says:

    python client.py                            # start server.py, see what it offers, search once
    python client.py "is there wifi" --top-k 3  # ask your own question
    python client.py --interactive              # one server, one question per line, warm answers
    python client.py --trace                    # also print every JSON line: -> sent, <- received
    python client.py --legacy                   # open with the initialize handshake (2025-11-25)
    python client.py --url http://127.0.0.1:8000/mcp    # Streamable HTTP (server.py --http)
    python client.py --server CMD ARG...        # any other stdio MCP server instead of server.py

client.py itself needs only the standard library and mcp_min.py, so any Python 3.11 or newer
runs it, virtualenv or not. server.py needs the packages `make install` puts in .venv, so
client.py starts server.py with .venv's Python when there is one (and says so), else with its
own. --server runs exactly the command it is given.

The client starts the server as a subprocess (you never start it yourself) and
speaks JSON-RPC to it over the server's stdin and stdout, one JSON text per line:

    1. connect     server/discover (2026-07-28); a server that does not know it gets the
                   legacy handshake instead: initialize, then notifications/initialized
    2. tools/list  what tools exist, and the JSON Schema of each one's arguments; then
                   resources/list, resources/templates/list and prompts/list, if it has them
    3. tools/call  run one tool: here search, with the question

Leaving the `async with` block closes the server's stdin, which is how a stdio server
is told to exit. Nothing here knows about embeddings or FAISS: all of that happens on
the other side of the pipe.
"""

import argparse, asyncio, contextlib, functools, inspect, itertools, json, os, re, signal, sys
import base64, hashlib, time
import urllib.parse
from pathlib import Path

import mcp_auth  # the HTTP client's login, when a server asks for one (spec: Authorization)
import mcp_http  # the HTTP client below uses its HTTP/1.1 helpers; stdlib only, like mcp_min

from mcp_min import (INTERNAL_ERROR, LEGACY_VERSIONS, MAX_MESSAGE_BYTES, META, METHOD_NOT_FOUND,
                     MODERN_VERSIONS, UNSUPPORTED_VERSION, MCPError, encode, error_response,
                     parse_message, read_lines, valid_id)

OUR_VERSIONS = MODERN_VERSIONS + LEGACY_VERSIONS
MAX_PAGES = 1000  # of one paginated list: a server whose nextCursor never ends is broken
MAX_INPUT_ROUNDS = 10  # input_required answers to one call (SEP-2322), at most
MAX_BACKGROUND = 16  # our asyncio tasks at once (answers to the server): more questions declined
CHANGES = ("/list_changed", "notifications/resources/updated")  # what on_notification hears
EVERY_LIST_CHANGE = {"toolsListChanged": True, "promptsListChanged": True,
                     "resourcesListChanged": True}  # a subscriptions/listen filter
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"  # a listen stream's first message
LISTEN_RETRY = 0.5  # seconds before a dropped listen stream is re-opened, at first
MAX_LISTEN_RETRY = 30.0  # and at most, after the wait has doubled each time
TASKS = "io.modelcontextprotocol/tasks"  # the extension: a tool's result may come later
TASK_ENDS = ("completed", "failed", "cancelled")  # a task's last status
TASK_POLL_MS = 1000  # between two tasks/get, when the server names no pollIntervalMs
MAX_TASK_POLL_MS = 60_000  # and at most, whatever it names
SKILL_FILE = "/SKILL.md"  # a skill's URI is its SKILL.md's; the folder is the rest
FRONT_MATTER = re.compile(r"\ufeff?---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.S)


class Client:
    """An MCP client over stdio: it starts a server as a subprocess and talks to it.

        async with Client([sys.executable, "server.py"]) as client:
            tools = await client.list_tools()
            result = await client.call_tool("search", {"query": "wifi"})

    Also list_resources(), list_resource_templates(), read_resource(uri), list_prompts(),
    get_prompt(name, arguments) and complete(ref, argument_name, value). Results are the dicts
    as on the wire. trace(direction, line), if given, sees every line: "→" sent, "←" received.
    on_elicit(message, requested_schema), if given, answers the server's questions (spec:
    client/elicitation) with {"action": "accept" | "decline" | "cancel", "content": {...}}; it may
    be sync (it runs in a thread) or async. Without it the client declares no elicitation
    capability and declines every question.
    on_notification(method, params), if given, hears of changes: resources/updated of the URIs
    passed to subscribe(uri) (until unsubscribe(uri)), and the list_changed of tools, prompts and
    resources; method is the full name, as "notifications/resources/updated".
    tasks=True declares the tasks extension: a tool may then answer with a task, and call_tool
    waits for its result, task_timeout seconds at most. list_skills() and read_skill(skill) load
    the skills of a server with the skills extension, each file checked (SkillError if one fails).
    Failures raise MCPError (the server answered with an error), TimeoutError, or ConnectionError
    (the server is gone or broken). For Streamable HTTP, use HTTPClient(url), below, the same way.

    The class reads core first: start the server, connect in either era, request, tools, what
    the server sends, what a dying server leaves, close. Its features come after: answering the
    server's questions, hearing of changes, tasks, skills, then resources, prompts and completion.
    """

    # === The core: start, connect, request, tools, close ===

    def __init__(self, command, env=None, cwd=None, trace=None, timeout=60.0, probe_timeout=5.0,
                 legacy=False, max_message_bytes=MAX_MESSAGE_BYTES, on_elicit=None,
                 on_notification=None, tasks=True, task_timeout=3600.0):
        self.command = command
        self.env = env
        self.cwd = cwd
        self.trace = trace
        self.timeout = timeout  # seconds for each request's answer, unless it names its own
        self.probe_timeout = probe_timeout  # for server/discover: a legacy server may be silent
        self.legacy = legacy  # True: skip the probe, open with initialize
        self.max_message_bytes = max_message_bytes
        self.client_info = {"name": "mcp-min", "version": "0.1.0"}
        # What connect() learns about the server
        self.era = None  # "modern" (2026-07-28) or "legacy" (the initialize handshake)
        self.protocol_version = None
        self.capabilities = {}
        self.server_info = {}
        # Requests on their way, and why none can be sent any more
        self.ids = itertools.count(1)
        self.pending = {}  # request id -> the future its answer completes
        self.progress_handlers = {}  # request id -> its on_progress
        self.failure = None  # set once the server is gone or broken: every request fails with it
        self.stderr_tail = []  # the server's last lines on stderr, for the error that says so
        # our asyncio tasks (answers to the server, the listen stream): close() ends them. Not
        # the tasks extension's tasks, which the server runs
        self.background = set()
        # Answering the server's questions
        self.on_elicit = on_elicit
        self.client_capabilities = {"elicitation": {}} if on_elicit else {}  # {}: form mode
        # Tasks: call_tool follows a tool's task until it ends, task_timeout seconds at most
        if tasks:
            self.client_capabilities["extensions"] = {TASKS: {}}
        self.task_timeout = task_timeout
        # Hearing of changes
        self.on_notification = on_notification
        self.subscriptions = set()  # the URIs subscribed to
        self.listening = None  # the task that holds the 2026-07-28 listen stream
        self.listen_id = None  # its request's id: what it carries is tagged with it
        self.acknowledged = None  # a future: the filter the server acknowledged

    async def __aenter__(self):
        await self.start()
        try:
            await self.connect()
            if self.on_notification and self.era == "modern":
                with contextlib.suppress(MCPError):  # a server with no changes to tell
                    await self.listen()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info):
        await self.close()

    async def start(self):
        """Start the server, with one reader for its stdout and one for its stderr."""
        pipe = asyncio.subprocess.PIPE
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.command, stdin=pipe, stdout=pipe, stderr=pipe, env=self.env, cwd=self.cwd)
        except OSError as e:
            raise ConnectionError(f"cannot start the MCP server {self.command[0]!r}: {e}") from e
        self.stderr_task = asyncio.ensure_future(self.read_stderr())
        self.reader_task = asyncio.ensure_future(self.read_messages())

    # --- Which era the server speaks (spec: basic/versioning, Backward Compatibility) ---

    async def connect(self):
        """server/discover first: a DiscoverResult naming a version we speak means 2026-07-28.
        Silence, an error a legacy server gives, an answer that is not MCP, or a result with no
        usable supportedVersions (lenient legacy servers answer {} to any method) mean a legacy
        server: the initialize handshake. legacy=True skips the probe, as legacy-era hosts do."""
        self.era = "modern"
        self.protocol_version = MODERN_VERSIONS[-1]
        if not self.legacy and await self.discover():
            return
        self.era = "legacy"
        try:
            result = await self.request("initialize", {"protocolVersion": LEGACY_VERSIONS[-1],
                                        "capabilities": self.client_capabilities,
                                        "clientInfo": self.client_info})
        except MCPError as e:  # a 2026-07-28 server slower than the probe refuses the handshake
            self.era = "modern"
            if e.code == UNSUPPORTED_VERSION and await self.discover(self.timeout):
                return
            raise
        self.protocol_version = result.get("protocolVersion")
        if self.protocol_version not in LEGACY_VERSIONS:
            raise unsupported(f"the server offers protocol {self.protocol_version!r}")
        self.capabilities = as_dict(result.get("capabilities"))
        self.server_info = as_dict(result.get("serverInfo"))
        await self.notify("notifications/initialized")

    async def discover(self, timeout=None, retry=True):
        """True for a modern server that speaks a version of ours, False for a legacy one. A
        modern server with none of ours (-32022, or only versions newer than ours) is an MCPError:
        falling back would not help. -32022 listing a version of ours: asked again, once, in it."""
        try:
            found = await self.request("server/discover", timeout=timeout or self.probe_timeout)
        except MCPError as e:
            if e.code != UNSUPPORTED_VERSION:  # an error a legacy server gives
                return False
            supported = as_list(as_dict(e.data).get("supported"))
            ours = [version for version in MODERN_VERSIONS if version in supported]
            if not ours or not retry:
                raise unsupported(f"the server speaks {supported}") from None
            self.protocol_version = ours[-1]
            return await self.discover(timeout, retry=False)
        except (TimeoutError, ConnectionError):  # silence, or an answer that is not MCP
            return False
        offered = as_list(found.get("supportedVersions"))
        ours = [version for version in MODERN_VERSIONS if version in offered]
        if ours:
            self.protocol_version = ours[-1]
            self.capabilities = as_dict(found.get("capabilities"))
            self.server_info = as_dict(as_dict(found.get("_meta")).get(META + "serverInfo"))
            return True
        newer = [v for v in offered if isinstance(v, str) and v > LEGACY_VERSIONS[-1]]  # dates
        if newer and not any(v in LEGACY_VERSIONS for v in offered):
            raise unsupported(f"the server speaks {offered}")
        return False

    # --- Requests and their answers ---

    async def request(self, method, params=None, timeout=None, on_progress=None, request_id=None):
        """Send one request under a new id (or request_id) and wait for its result (a dict). In
        2026-07-28 its _meta says which protocol it speaks and who asks. A result of resultType
        input_required comes back as it is: request_with_input, below, answers it."""
        if self.failure:
            raise ConnectionError(self.failure)
        request_id = request_id or next(self.ids)
        params = dict(params or {})
        meta = dict(params.get("_meta", {}))
        if self.era == "modern":  # every modern request says which protocol it speaks, and who asks
            meta.update({META + "protocolVersion": self.protocol_version,
                         META + "clientCapabilities": self.client_capabilities,
                         META + "clientInfo": self.client_info})
        if on_progress:
            meta["progressToken"] = request_id
            self.progress_handlers[request_id] = on_progress
        if meta:
            params["_meta"] = meta
        future = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        timeout = self.timeout if timeout is None else timeout
        try:
            await self.write({"jsonrpc": "2.0", "id": request_id, "method": method,
                              "params": params})
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            # Spec (cancellation): a request that timed out is cancelled, so the server can stop.
            cancel = {"requestId": request_id, "reason": f"timed out after {timeout} s"}
            await self.notify("notifications/cancelled", cancel)
            what = f"{method} {params.get('name')!r}" if method == "tools/call" else method
            raise TimeoutError(f"{what}: no answer within {timeout} s; the request was cancelled "
                               "(pass a larger timeout= if it is only slow)" + self.last_words())
        finally:
            self.pending.pop(request_id, None)
            self.progress_handlers.pop(request_id, None)

    async def notify(self, method, params=None):
        await self.write({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def write(self, message):
        line = encode(message)
        self.call_back(self.trace, "→", line.decode().rstrip("\n"))
        try:
            self.process.stdin.write(line)
            await self.process.stdin.drain()  # returns at once unless the server stopped reading
        except (ConnectionError, RuntimeError) as e:
            raise ConnectionError(self.failure or f"cannot write to the MCP server: {e}") from None

    # --- Tools (spec: server/tools), and the pages of any list (spec: utilities/pagination) ---

    async def list_tools(self):
        """Every tool, following pagination: a list of tool dicts exactly as on the wire."""
        return await self.list_all("tools/list", "tools")

    async def call_tool(self, name, arguments=None, timeout=None, on_progress=None):
        """The CallToolResult dict. on_progress(progress, total, message) sees progress. A
        2026-07-28 server may ask the user first: request_with_input answers it. A tool that
        answers with a task: wait_for_task follows it to its result."""
        params = {"name": name, "arguments": arguments or {}}
        result = await self.request_with_input("tools/call", params, timeout, on_progress)
        if result.get("resultType") == "task":
            return await self.wait_for_task(name, result)
        return result

    async def list_all(self, method, key):
        """The items of every page of a list. nextCursor is followed until it ends or repeats:
        no page is asked for twice, and MAX_PAGES at most."""
        items = []
        cursors = [None]
        while len(cursors) <= MAX_PAGES:
            page = await self.request(method, {"cursor": cursors[-1]} if cursors[-1] else {})
            items += [item for item in as_list(page.get(key)) if isinstance(item, dict)]
            if not page.get("nextCursor") or page["nextCursor"] in cursors:
                return items
            cursors.append(page["nextCursor"])
        raise ConnectionError(f"{method}: more than {MAX_PAGES} pages; the server is broken")

    # --- What the server sends ---

    async def read_messages(self):
        """The one reader of the server's stdout: every message goes to on_message."""
        read = functools.partial(self.process.stdout.read, 65536)
        logs = "a server must write logs to stderr only"
        async for line, size in read_lines(read, self.max_message_bytes):
            if size > self.max_message_bytes and ID_AT_START.match(line):  # an answer, too big
                self.refuse_oversized(line[:200], size)
                continue
            if size > self.max_message_bytes:
                return await self.fail(f"the server wrote a line of {size} bytes to stdout, "
                                       f"over the {self.max_message_bytes}-byte limit, "
                                       f"starting {line[:80]!r}; {logs}")
            self.call_back(self.trace, "←", line.decode(errors="replace").rstrip("\r"))
            try:
                message = parse_message(line)
            except MCPError as e:
                return await self.fail(f"the server wrote something other than an MCP message to "
                                       f"stdout ({e.message}): {line[:200]!r}; {logs}")
            self.on_message(message)
        code = await self.exited()
        how = f"exited with code {code}"
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else how
        await self.fail(f"the MCP server closed its stdout and {how}")

    def on_message(self, message):
        """Every message from the server comes here, on stdio and over HTTP alike, and goes on
        by its kind: the answer to a request of ours, a request of the server's own (answered in
        a task of its own: a question may wait for the user while other answers come in),
        progress, or a change."""
        method = message.get("method")
        params = as_dict(message.get("params"))
        if not isinstance(method, str):
            self.receive_answer(message)
        elif valid_id(message.get("id")):  # a request (an id such as 1e400 could not be echoed)
            self.spawn(self.answer(message))
        elif method == "notifications/progress":
            self.receive_progress(params)
        else:
            self.receive_change(method, params)

    def receive_answer(self, message):
        """A response completes the request waiting on its id: with its result, or its error as
        an MCPError. One that no request waits for any more is dropped."""
        request_id = message.get("id")
        future = self.pending.get(request_id) if valid_id(request_id) else None
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(MCPError(*map(error.get, ("code", "message", "data"))))
        elif isinstance(message.get("result"), dict):
            future.set_result(message["result"])
        else:
            future.set_exception(MCPError(INTERNAL_ERROR, "a malformed answer from the server: "
                                                          f"{json.dumps(message)[:200]}"))

    def receive_progress(self, params):
        """notifications/progress goes to the on_progress of the request whose token it names."""
        token = params.get("progressToken")
        if valid_id(token):
            handler = self.progress_handlers.get(token)
            self.call_back(handler, *map(params.get, ("progress", "total", "message")))

    def refuse_oversized(self, head, size):
        """An answer over max_message_bytes fails only the request whose id it starts with."""
        future = self.pending.get(int(ID_AT_START.match(head)[1]))
        if future and not future.done():
            future.set_exception(MCPError(INTERNAL_ERROR, f"the answer is {size} bytes, over this "
                                          f"client's {self.max_message_bytes}-byte limit "
                                          "(Client(max_message_bytes=...) sets it)"))

    def call_back(self, callback, *args):
        """A caller's callback (trace, on_progress): if it raises, that is logged, and the reader
        goes on."""
        try:
            if callback:
                callback(*args)
        except Exception as e:
            print(f"mcp_min client: a callback raised {e!r}", file=sys.stderr)

    def spawn(self, coroutine):
        """A task of the client's own (an answer to the server, the listen stream)."""
        task = asyncio.ensure_future(coroutine)
        self.background.add(task)  # the loop keeps only a weak reference; close() ends it
        task.add_done_callback(self.background.discard)
        return task

    # --- What a dying server leaves: its exit code and the last lines of its stderr ---

    async def read_stderr(self):
        """The server's log, drained whatever its line lengths; its last lines are kept."""
        read = functools.partial(self.process.stderr.read, 65536)
        async for line, size in read_lines(read, 2000):
            text = line[:2000] + b"..." if size > 2000 else line  # a line over 2 kB
            self.stderr_tail = (self.stderr_tail + [text.decode(errors="replace").rstrip()])[-10:]

    def last_words(self):
        tail = "\n".join(self.stderr_tail)
        return f". The server's stderr ends with:\n{tail}" if tail else ""

    async def fail(self, reason):
        """The server is gone or broken: every waiting request fails at once, with its last
        words."""
        await asyncio.wait([self.stderr_task], timeout=1.0)  # they are often on their way
        self.fail_waiting(reason + self.last_words())

    def fail_waiting(self, reason):
        """Every request still waiting fails with the first reason given; so do later ones."""
        self.failure = self.failure or reason
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError(self.failure))

    async def exited(self):
        """The server's exit code, once it exits. Not process.wait(): that also waits until its
        stdout and stderr close, which a child it started (and left running) holds open."""
        while self.process.returncode is None:
            await asyncio.sleep(0.02)
        return self.process.returncode

    # --- Closing (spec: basic/lifecycle, Shutdown) ---

    async def close(self):
        """Shutdown as the spec says: close the server's stdin, wait, then SIGTERM, then SIGKILL.
        Then the readers stop, and every request still waiting fails."""
        if self.process.returncode is None:
            self.process.stdin.close()
            for stop in (lambda: None, self.process.terminate, self.process.kill):
                with contextlib.suppress(TimeoutError, ProcessLookupError):
                    stop()
                    await asyncio.wait_for(self.exited(), 2.0)
                    break
        await self.stop_reading()
        self.fail_waiting("the MCP client was closed while this request waited")  # none will answer

    async def stop_reading(self):
        """The readers end with the server's stdout and stderr, once it has exited; the stdout
        reader may be failing requests right now. A child the server left running may hold them
        open for good: then, after 2 s, the readers are stopped and our ends of the pipes
        closed, or asyncio would complain at exit that they are still open. The client's own
        tasks (answers to the server, the listen stream) are stopped with them."""
        await asyncio.wait([self.reader_task, self.stderr_task], timeout=2.0)
        for task in (self.reader_task, self.stderr_task, *self.background):
            task.cancel()
        # asyncio.subprocess.Process has no public method for this; its transport's close()
        # closes our ends of the pipes (and nothing else, the server having exited).
        self.process._transport.close()
        await asyncio.gather(self.reader_task, self.stderr_task, return_exceptions=True)

    # === The features, each on top of the core ===
    # --- Answering the server's questions (spec: client/elicitation; 2026-07-28: SEP-2322) ---

    async def request_with_input(self, method, params=None, timeout=None, on_progress=None):
        """request(), for the requests whose 2026-07-28 result may be input_required (SEP-2322:
        tools/call, prompts/get, resources/read): such a result is not one yet. Each of its
        inputRequests goes to on_elicit, then the same request goes again under a new id, with
        inputResponses and the requestState exactly as given. A result with requestState only
        is asked for again after a short wait, longer each time. MAX_INPUT_ROUNDS at most."""
        retry = {}  # what the last round asked to have sent back
        for round_number in range(MAX_INPUT_ROUNDS):
            result = await self.request(method, {**(params or {}), **retry}, timeout, on_progress)
            if result.get("resultType") != "input_required":
                return result
            retry = {"requestState": result["requestState"]} if "requestState" in result else {}
            questions = as_dict(result.get("inputRequests"))
            if questions:
                retry["inputResponses"] = {key: await self.elicit(as_dict(question))
                                           for key, question in questions.items()}
            else:  # come back later: after 0.1 s, 0.2 s, ... 5 s at most
                await asyncio.sleep(min(0.1 * 2 ** round_number, 5.0))
        raise MCPError(INTERNAL_ERROR, f"{method}: the server still asked for input after "
                                       f"{MAX_INPUT_ROUNDS} rounds; the client gave up")

    async def answer(self, request):
        """The client's reply to a request of the server's: ping is answered with {}, as the spec
        says it MUST be, and elicitation/create by elicit(); nothing else is offered."""
        try:
            if request["method"] not in ("ping", "elicitation/create"):
                raise MCPError(METHOD_NOT_FOUND, f"Method not found: {request['method']}")
            result = await self.elicit(request) if request["method"] != "ping" else {}
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        except Exception as e:  # the callback's failure is the server's answer, never ours
            reply = error_response(request["id"], e if isinstance(e, MCPError) else MCPError(
                INTERNAL_ERROR, f"the client's on_elicit failed: {e!r}"))
        with contextlib.suppress(ConnectionError):  # the server is gone: nobody to tell
            await self.write(reply)

    async def elicit(self, question):
        """The user's answer to one elicitation/create (legacy: the server's request; 2026-07-28:
        one of inputRequests): on_elicit(message, requestedSchema), within the client's timeout.
        Declined without a callback, for anything but a form (URL mode is not declared), and
        while MAX_BACKGROUND are running: a flood of questions."""
        params = as_dict(question.get("params"))
        asked = (question.get("method"), params.get("mode", "form"))
        flood = len(self.background) > MAX_BACKGROUND
        if not self.on_elicit or asked != ("elicitation/create", "form") or flood:
            return {"action": "decline"}
        message = str(params.get("message", ""))
        schema = as_dict(params.get("requestedSchema"))
        ask = asyncio.to_thread(self.on_elicit, message, schema)  # a sync one may block: a thread
        answer = await asyncio.wait_for(ask, self.timeout)
        if inspect.isawaitable(answer):  # an async callback: the thread made its coroutine
            answer = await asyncio.wait_for(answer, self.timeout)
        if as_dict(answer).get("action") not in ("accept", "decline", "cancel"):
            raise MCPError(INTERNAL_ERROR, f"on_elicit gave {answer!r:.80}, not an ElicitResult")
        return answer

    # --- Hearing of changes (spec: server/resources, Subscriptions; List Changed Notification;
    #     2026-07-28: basic/patterns/subscriptions) ---

    def receive_change(self, method, params):
        """A notification other than progress: a change goes to on_notification, and a listen
        stream's acknowledgement completes listen(). In 2026-07-28 only what is tagged with the
        open listen stream's id counts; legacy changes carry no tag."""
        tag = as_dict(params.get("_meta")).get(META + "subscriptionId")
        ours = valid_id(tag) and tag == self.listen_id
        if method.endswith(CHANGES) and (ours or self.era == "legacy"):
            self.call_back(self.on_notification, method, params)
        if method == ACKNOWLEDGED and ours and not self.acknowledged.done():
            self.acknowledged.set_result(as_dict(params.get("notifications")))

    async def subscribe(self, uri, subscribed=True):
        """Hear when the resource at uri changes (subscribed=False: no longer). Legacy:
        resources/subscribe (or unsubscribe), its result. 2026-07-28: the listen stream is
        opened again with uri in its filter (or not); this returns once the server has
        acknowledged it, with the filter it agreed to."""
        if self.era == "legacy":
            method = "resources/subscribe" if subscribed else "resources/unsubscribe"
            return await self.request(method, {"uri": uri})
        if subscribed:
            self.subscriptions.add(uri)
        else:
            self.subscriptions.discard(uri)
        return await self.listen()

    async def unsubscribe(self, uri):
        return await self.subscribe(uri, subscribed=False)

    async def listen(self):
        """2026-07-28: a listen stream for every list change and the URIs subscribed to, in
        place of the one before; returns the filter the server acknowledged (the subset it
        honours). The old stream ends before the new one opens: a change in that moment may be
        missed. The client ends a stream with notifications/cancelled (over HTTP, a hang-up)."""
        if not self.acknowledged or self.acknowledged.done():  # else a caller still waits on it
            self.acknowledged = asyncio.get_running_loop().create_future()
        old = self.listening
        self.listening = self.spawn(self.keep_listening())
        if old:  # ended before the new one starts, so self.listen_id is still the old one's
            old.cancel()
            with contextlib.suppress(ConnectionError):
                await self.notify("notifications/cancelled", {"requestId": self.listen_id})
        return await asyncio.wait_for(self.acknowledged, self.timeout)

    async def keep_listening(self):
        """The listen request (a request that stays open), sent again whenever its stream ends:
        the server's result, an error, a drop. The wait before each doubles from LISTEN_RETRY
        up to MAX_LISTEN_RETRY, and starts again after a stream that was acknowledged. A first
        stream the server refuses fails listen() instead. close() ends it, as does a failure."""
        first = self.acknowledged  # what listen() waits on
        delay = LISTEN_RETRY / 2
        while not self.failure:
            self.listen_id = next(self.ids)
            wanted = {**EVERY_LIST_CHANGE, "resourceSubscriptions": sorted(self.subscriptions)}
            try:
                await self.request("subscriptions/listen", {"notifications": wanted},
                                   float("inf"), request_id=self.listen_id)
            except (MCPError, ConnectionError) as e:
                if not first.done():
                    return first.set_exception(e)
            delay = LISTEN_RETRY if self.acknowledged.done() else min(delay * 2, MAX_LISTEN_RETRY)
            await asyncio.sleep(delay)
            self.acknowledged = asyncio.get_running_loop().create_future()

    # --- Tasks: a tool's result that comes later (extension io.modelcontextprotocol/tasks) ---

    async def wait_for_task(self, name, task):
        """The result of a tool that answered with a task: follow_task polls it until it ends,
        within task_timeout. completed: its CallToolResult; failed: its error, as an MCPError,
        as if the call had failed; cancelled by the server: an MCPError. Anything that ends the
        wait early (the caller cancels the call, task_timeout, a failed question) cancels the
        task with tasks/cancel (the spec: never notifications/cancelled), then goes on."""
        task_id = {"taskId": task.get("taskId")}
        timer = asyncio.timeout(self.task_timeout)
        try:
            async with timer:
                task = await self.follow_task(task, task_id)
        except BaseException:
            with contextlib.suppress(Exception):  # the server may be gone: nobody to tell
                await self.request("tasks/cancel", task_id, self.probe_timeout)
            if timer.expired():
                raise TimeoutError(f"tool {name!r}: its task ran past task_timeout, "
                                   f"{self.task_timeout} s, and was cancelled") from None
            raise
        error = as_dict(task.get("error"))
        if task["status"] == "completed":
            return as_dict(task.get("result"))
        if task["status"] == "failed":
            raise MCPError(error.get("code", INTERNAL_ERROR), error.get("message", "its task "
                           f"failed: {task.get('statusMessage')}"), error.get("data"))
        raise MCPError(INTERNAL_ERROR, f"tool {name!r}: the server cancelled its task "
                                       f"({task.get('statusMessage', 'no reason given')})")

    async def follow_task(self, task, task_id):
        """tasks/get, after the server's pollIntervalMs, until the task ends; its last state.
        Each of its inputRequests goes to on_elicit once (a later poll may show it again), and
        the answers go back with tasks/update, as the spec says, before the next poll. At least
        one poll: the task as made holds no result, even if it ended at once."""
        answered = set()  # the keys of inputRequests answered already
        while True:
            waiting = task.get("status") == "input_required"
            asked = as_dict(task.get("inputRequests")) if waiting else {}
            new = {key: as_dict(question) for key, question in asked.items() if key not in answered}
            if new:
                answers = {key: await self.elicit(question) for key, question in new.items()}
                answered |= answers.keys()
                await self.request("tasks/update", {**task_id, "inputResponses": answers})
            else:
                wait = task.get("pollIntervalMs")
                wait = wait if type(wait) in (int, float) else TASK_POLL_MS
                await asyncio.sleep(min(max(wait, 10), MAX_TASK_POLL_MS) / 1000)  # 0: no busy loop
            task = await self.request("tasks/get", task_id)
            if task.get("status") in TASK_ENDS:
                return task

    # --- Skills: folders of instructions a host loads when they fit (extension
    #     io.modelcontextprotocol/skills, SEP-2640) ---

    async def list_skills(self):
        """Every skill, following pagination: entries {uri (its SKILL.md), frontmatter, resources
        (each file's uri, digest, size)} as on the wire. Nothing of a skill is read before
        read_skill asks for it: a host fetches no file ahead of need."""
        return await self.list_all("skills/list", "skills")

    async def read_skill(self, skill):
        """One skill's files, {uri: text, or bytes for a blob}, SKILL.md first. skill is an entry
        of list_skills(), or a SKILL.md URI (skills/get finds its entry). Each file is checked
        when it arrives: its size and sha256 digest against the entry, and SKILL.md's front
        matter against the entry's, field by field, its name the skill's folder. A file that
        fails, or lies outside the folder, is a SkillError, and nothing more is read. A skill
        whose resources are "dynamic" lists no files: its SKILL.md alone, with no digest."""
        if not isinstance(skill, dict):
            skill = as_dict((await self.request("skills/get", {"uri": skill})).get("skill"))
        uri = str(skill.get("uri"))
        listed = listed_files(uri, skill)
        files = {uri: await self.read_skill_file(uri, listed.get(uri))}
        check_front_matter(uri, files[uri], as_dict(skill.get("frontmatter")))
        for file in [file for file in listed if file != uri]:  # in the order listed
            files[file] = await self.read_skill_file(file, listed[file])
        return files

    async def read_skill_file(self, uri, listed):
        """resources/read of one file, checked against its entry (None: there is none)."""
        content = as_dict((as_list((await self.read_resource(uri)).get("contents")) or [{}])[0])
        return checked_file(uri, content, listed)

    # --- Resources, prompts and completion (spec: server/resources, server/prompts,
    #     server/utilities/completion) ---

    async def list_resources(self):
        """Every resource: dicts with uri, name, and maybe title, description, mimeType, size."""
        return await self.list_all("resources/list", "resources")

    async def list_resource_templates(self):
        """Every resource template: dicts with uriTemplate (RFC 6570: docs:///{name}), name."""
        return await self.list_all("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri):
        """{"contents": [{"uri", "mimeType", and "text" or "blob" (base64)}, ...]}."""
        return await self.request_with_input("resources/read", {"uri": uri})

    async def list_prompts(self):
        """Every prompt: dicts with name, description, arguments [{name, description, required}]."""
        return await self.list_all("prompts/list", "prompts")

    async def get_prompt(self, name, arguments=None):
        """{"messages": [{"role", "content"}, ...]}; argument values are strings."""
        params = {"name": name, "arguments": arguments or {}}
        return await self.request_with_input("prompts/get", params)

    async def complete(self, ref, argument_name, value, context_arguments=None):
        """Suggested values for one argument (spec: utilities/completion): {"completion":
        {"values": [...], "total", "hasMore"}}. ref says whose argument it is, as on the wire:
        {"type": "ref/prompt", "name": "greet"}, or {"type": "ref/resource", "uri":
        "docs:///{name}"} for a variable of a resource template. context_arguments: the values
        already chosen for its other arguments."""
        params = {"ref": ref, "argument": {"name": argument_name, "value": value}}
        if context_arguments:
            params["context"] = {"arguments": context_arguments}
        return await self.request("completion/complete", params)


# An oversized answer is skipped unread; its id is found at its start, where servers put it.
ID_AT_START = re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(\d+)')


def unsupported(theirs):
    """The error for a server that speaks no version of ours: what it said, then what we speak."""
    return MCPError(UNSUPPORTED_VERSION, f"{theirs}; we speak {OUR_VERSIONS}")


class SkillError(Exception):
    """A skill's file differs from what its entry says (size, digest, front matter), or lies
    outside its folder: its content is not used."""


def listed_files(uri, skill):
    """{uri: its entry} of each file the skill lists, once its URI is a skill's SKILL.md and each
    file is in the skill's folder (a server may not send the client elsewhere). Else SkillError."""
    listed = {str(as_dict(file).get("uri")): as_dict(file)
              for file in as_list(skill.get("resources"))}
    if not (uri.startswith("skill://") and uri.endswith(SKILL_FILE)):
        raise SkillError(f"{uri[:200]!r} is not a skill's URI (skill://.../SKILL.md)")
    outside = [file for file in listed if not file.startswith(uri.removesuffix(SKILL_FILE) + "/")]
    if outside:
        raise SkillError(f"{uri}: its skill lists {outside[0][:200]!r}, outside its folder; "
                         "refused before any read")
    return listed


def checked_file(uri, content, listed):
    """A skill file's content from resources/read: its text, or the bytes of its blob, if its
    size and sha256 digest are the ones its entry lists (None: no entry to check). Else
    SkillError."""
    text = content.get("text")
    try:
        data = text.encode() if isinstance(text, str) else base64.b64decode(content.get("blob"),
                                                                             validate=True)
    except (ValueError, TypeError):  # binascii.Error and UnicodeEncodeError are ValueErrors
        raise SkillError(f"{uri}: neither text nor Base64; refused") from None
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if listed is not None and listed.get("size") != len(data):
        raise SkillError(f"{uri}: {len(data)} bytes, but its skill lists {listed.get('size')!r};"
                         " refused unused")
    if listed is not None and listed.get("digest") != digest:
        raise SkillError(f"{uri}: its sha256 digest is not the one its skill lists; refused unused")
    return text if isinstance(text, str) else data


def check_front_matter(uri, text, expected):
    """SKILL.md's front matter is the entry's: the same fields, each top-level `key: value` the
    same (same_value); a field that holds a nested block is only checked to be there. Its name
    is the skill's folder. Else SkillError."""
    found = FRONT_MATTER.match(text) if isinstance(text, str) else None  # bytes: a blob
    fields = {}
    for line in found[1].splitlines() if found else []:
        key, colon, value = line.partition(":")
        if colon and not line[:1].isspace() and not line.startswith("#"):
            fields[key.strip()] = value.strip()
        elif line.strip() and fields:  # an indented line: the field before holds a block
            fields[list(fields)[-1]] = None
    wrong = sorted(key for key in fields.keys() | expected.keys() if key not in fields
                   or key not in expected or not same_value(fields[key], expected[key]))
    folder = uri.removesuffix(SKILL_FILE).rpartition("/")[2]
    if not found or wrong or expected.get("name") != folder:
        raise SkillError(f"{uri}: its front matter differs from its skill's entry "
                         f"({', '.join(wrong) or 'no front matter, or a name not its folder'}); "
                         "refused unused")


def same_value(written, value):
    """Whether a front matter value, as written, is the entry's value: in a form YAML shares with
    JSON ("text", {"a": 1}, [1], 1.0, true), 'single-quoted', or plain text. None: the field
    holds a nested block, which only has to be there."""
    with contextlib.suppress(ValueError, TypeError, RecursionError):  # a hostile server's nesting
        if written is None or json.loads(written) == value:
            return True
    quoted = len(written) > 1 and written[0] == written[-1] == "'"
    return (written[1:-1].replace("''", "'") if quoted else written) == value


def as_dict(value):  # what a well-behaved server sends as an object; {} for anything else
    return value if isinstance(value, dict) else {}


def as_list(value):
    return value if isinstance(value, list) else []


# === The client over Streamable HTTP (mcp_http.py has the server side) ===

RESUME_TRIES = 5  # GETs that resume one request's SSE stream, at most
RETRY_MS = 1000  # the wait before each, when the server names none
MAX_RETRY_MS = 10_000  # the longest wait, whatever the server names


class HTTPClient(Client):
    """Client over Streamable HTTP: HTTPClient("http://127.0.0.1:8000/mcp"). Each message is its
    own POST on a new connection. Answers and progress reach the waiting request as on stdio. A
    reply (a JSON body, or one SSE event) over max_message_bytes fails its own request only.
    A server that asks for a login (401) gets one: auth=mcp_auth.OAuthClient(...) says how (the
    default opens a browser; auth=False: no login, the 401 fails the request)."""

    def __init__(self, url, auth=None, **options):
        super().__init__(url, **options)
        # auth: an mcp_auth.OAuthClient; None: the default one (a browser login); False: none
        self.auth = mcp_auth.OAuthClient() if auth is None else auth or None
        try:
            self.url = urllib.parse.urlsplit(url)
            self.port = self.url.port or (443 if self.url.scheme == "https" else 80)
        except ValueError as e:  # "http://[::1", or a port that is not a number up to 65535
            raise ValueError(f"{url!r} is not a URL ({e})") from None
        if self.url.scheme not in ("http", "https") or not self.url.hostname:
            raise ValueError(f"{url!r} is not an http:// or https:// URL")
        self.session_id = None  # a legacy session's, from initialize's answer
        self.posts = {}  # request id -> the task that POSTs it (and reads its reply)
        self.tool_schemas = {}  # tool name -> inputSchema: which arguments travel as headers
        self.session_lock = asyncio.Lock()

    async def start(self):
        """Nothing to start: the server runs already, at the URL."""

    async def connect(self):
        """As on stdio; then a legacy session's standalone GET stream is opened (see get_stream),
        and connect waits until it is, so that nothing the server sends on it is lost."""
        await super().connect()
        if self.era == "legacy" and self.session_id:
            opened = asyncio.Event()
            self.spawn(self.get_stream(opened))
            await asyncio.wait([asyncio.ensure_future(opened.wait())], timeout=self.probe_timeout)

    async def list_tools(self):
        """Spec 2026-07-28, Custom Headers: a tool with an invalid x-mcp-header annotation is left
        out. The others' schemas say which arguments travel as Mcp-Param headers too."""
        tools = [tool for tool in await super().list_tools() if not bad_header_annotation(tool)]
        self.tool_schemas = {tool.get("name"): tool.get("inputSchema", {}) for tool in tools}
        return tools

    async def request(self, method, params=None, timeout=None, on_progress=None, request_id=None):
        """As Client.request. A request that timed out while a login ran was refused unread (a
        401): once the login is over, it goes again, once."""
        logins = self.auth.logins if self.auth else 0
        try:
            return await super().request(method, params, timeout, on_progress, request_id)
        except TimeoutError:
            if not self.auth or self.auth.logins == logins:
                raise
        async with self.auth.lock:  # held until the login is over
            pass
        return await super().request(method, params, timeout, on_progress, request_id)

    async def write(self, message):
        """Each message is its own POST, in a task of its own; a request's answer completes its
        future. A notification's POST is waited for (so `initialized` comes first), but no longer
        than probe_timeout: a server that never answers it cannot hold the client."""
        self.call_back(self.trace, "→", encode(message).decode().rstrip("\n"))
        if message.get("method") == "notifications/cancelled":
            post = self.posts.get(message["params"]["requestId"])
            if post:  # hang up; in 2026-07-28 that alone is the cancellation
                post.cancel()
            if self.era == "modern":
                return
        # A request's post is found by its id; a notification and a response get keys of their own.
        key = message["id"] if "method" in message and "id" in message else object()
        task = self.posts[key] = asyncio.ensure_future(self.post(message))
        task.add_done_callback(lambda _: self.posts.pop(key, None))
        if "id" not in message:
            await asyncio.wait([task], timeout=self.probe_timeout)

    def headers_for(self, message):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self.era == "modern" and "method" in message:  # headers that copy the body
            tool = message["params"].get("name") if message["method"] == "tools/call" else None
            mirrored = mcp_http.mirrored_headers(message, self.tool_schemas.get(tool),
                                                 self.protocol_version)
            headers.update((key, mcp_http.header_value(value)) for key, value in mirrored)
        elif self.session_id:
            headers.update({"Mcp-Session-Id": self.session_id,
                            "MCP-Protocol-Version": self.protocol_version})
        return headers

    async def post(self, message, retry=True):
        """POST one message and hand on what comes back: one JSON body, or the events of an SSE
        stream. Whatever goes wrong fails this message's request only.

        Spec 2025-11-25, Resumability and Redelivery: a server may end a request's SSE stream
        before the answer, once an event carried an id. The client waits the stream's `retry`
        delay, then asks for the rest with a GET and Last-Event-ID, RESUME_TRIES times at most.
        (2026-07-28 streams are not resumable.)"""
        request_id = message.get("id") if "method" in message else None  # None: not a request
        session_id = self.session_id
        stream = {}  # how far its SSE events have got: the last event id, the retry delay
        method = "POST"
        headers = self.headers_for(message)
        body = encode(message)
        try:
            for _ in range(1 + RESUME_TRIES):
                reader, writer, status, got = await self.send_http(method, headers, body)
                with contextlib.closing(writer):
                    if status == 404 and session_id and request_id is not None and retry:
                        await self.new_session(session_id)  # the spec: that session is gone
                        return await self.post(message, retry=False)
                    if message.get("method") == "initialize" and "mcp-session-id" in got:
                        self.session_id = got["mcp-session-id"]
                    if await self.read_reply(reader, got, status, request_id, stream):
                        return  # the answer: nothing more is owed, so hang up, as the SDK does
                if self.era != "legacy" or "id" not in stream:  # fails it now, not at its timeout
                    raise ConnectionError(f"HTTP {status}, and no answer to request {request_id}")
                await asyncio.sleep(min(stream.get("retry", RETRY_MS), MAX_RETRY_MS) / 1000)
                method = "GET"
                body = b""
                headers = {**self.headers_for({}), "Last-Event-ID": stream["id"]}
            raise ConnectionError(f"request {request_id}: its SSE stream ended {1 + RESUME_TRIES} "
                                  "times before the answer; the client stopped resuming it")
        except Exception as e:  # a broken reply fails its request, never the client
            future = self.pending.get(request_id)
            if future and not future.done():  # our ConnectionErrors say what is wrong already
                ours = type(e) is ConnectionError
                future.set_exception(e if ours else ConnectionError(f"HTTP request failed: {e}"))

    async def send_http(self, method, headers, body=b""):
        """Every HTTP request of this client goes out here, each on a new connection. Returns the
        reader and writer (the caller closes it), and the response's status and headers.

        Spec: Authorization. With auth, each request carries the bearer token; a 401, or a 403
        with insufficient_scope, runs the login flow of mcp_auth, and the request goes again, at
        most MAX_LOGINS times."""
        for attempt in range(mcp_auth.MAX_LOGINS + 1):
            sent = await self.auth.authorization() if self.auth else {}
            reader, writer = await asyncio.open_connection(
                self.url.hostname, self.port, ssl=self.url.scheme == "https",
                limit=mcp_http.MAX_HEADER_BYTES)
            try:
                status, got = await http_request(reader, writer, self.url, method,
                                                 {**headers, **sent}, body)
            except BaseException:
                writer.close()
                raise
            challenge = got.get("www-authenticate", "")
            refused = status == 401 or status == 403 and "insufficient_scope" in challenge
            if not (self.auth and refused):
                return reader, writer, status, got
            writer.close()
            if attempt < mcp_auth.MAX_LOGINS:
                await asyncio.shield(self.auth.challenged(self.url.geturl(), status, challenge,
                                                          sent))
        raise mcp_auth.AuthError(f"{self.url.geturl()} refuses every token: gave up after "
                                 f"{mcp_auth.MAX_LOGINS} logins")

    async def get_stream(self, opened):
        """Spec 2025-11-25, Listening for Messages from the Server: a legacy session's standalone
        GET stream carries the server's own requests (ping, elicitation/create) and notifications,
        to on_message. Each time it ends it is opened again, after its retry delay and with
        Last-Event-ID, until RESUME_TRIES opens in a row bring no message. It stops at any status
        but 200 (405: the server has none), for a new session, and with the client."""
        session = self.session_id
        stream = {}  # how far its SSE events have got
        quiet = 0  # openings in a row that brought no message
        while quiet < RESUME_TRIES and self.session_id == session:
            quiet += 1
            resume = {"Last-Event-ID": stream["id"]} if "id" in stream else {}
            try:
                reader, writer, status, got = await self.send_http(
                    "GET", {**self.headers_for({}), "Accept": "text/event-stream", **resume})
            except OSError:  # the server is gone
                return opened.set()
            opened.set()  # connect() goes on
            # a stream that breaks, or is not MCP, ends as a closed one does
            with contextlib.closing(writer), contextlib.suppress(Exception):
                async for data in reply_messages(reader, got, self.max_message_bytes, stream):
                    quiet = 0
                    self.receive(data, None, status)
            if status != 200:
                return
            await asyncio.sleep(min(stream.get("retry", RETRY_MS), MAX_RETRY_MS) / 1000)

    async def read_reply(self, reader, headers, status, request_id, stream):
        """Hand each message of a reply to receive(); True once nothing more is owed: the answer
        to request_id came, or the reply was to a notification or a response."""
        kind = headers.get("content-type", "").partition(";")[0].strip()
        if request_id is not None and kind not in ("", "application/json", "text/event-stream"):
            raise ConnectionError(f"{self.url.geturl()} did not answer as an MCP server "
                                  f"(HTTP {status}, {kind})")
        async for data in reply_messages(reader, headers, self.max_message_bytes, stream):
            if self.receive(data, request_id, status):
                return True
        return request_id is None

    async def new_session(self, ended):
        """After a 404 for session `ended`: a fresh initialize, once, shared by the requests that
        saw the 404."""
        async with self.session_lock:
            if self.session_id == ended:
                self.session_id = None
                self.legacy = True  # the server is legacy: skip the probe
                await self.connect()

    def receive(self, data, request_id, status):
        """One message from the server: a response completes its request, progress goes to its
        handler, the server's own request (ping) is answered, as on stdio. A POST's reply answers
        that POST's request only: a response with another id is ignored, never taken as the
        answer to some other request. True once the answer to request_id has come."""
        self.call_back(self.trace, "←", data.decode(errors="replace"))
        message = parse_message(data)  # MCPError if it is not one: a proxy's error page, say
        if "id" in message and message["id"] is None:  # an error from before the id was read
            message["id"] = request_id
        if "method" not in message and message.get("id") != request_id:
            return False
        self.on_message(message)
        return "method" not in message and request_id is not None

    async def close(self):
        for task in [*self.posts.values(), *self.background]:
            task.cancel()
        self.fail_waiting("the client was closed")


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a token (RFC 9110): no space, no ":"


def bad_header_annotation(tool):
    """True, with a line on stderr saying why, if an x-mcp-header annotation of the tool breaks
    the spec's rules (2026-07-28, Custom Headers): each is a header name, on a string, integer or
    boolean property reached through "properties" keys alone, and unique ignoring case."""
    names = []
    schemas = [as_dict(tool.get("inputSchema"))]  # still to look into
    problem = None
    while schemas and not problem:
        for prop in map(as_dict, as_dict(schemas.pop().get("properties")).values()):
            name = prop.get("x-mcp-header")
            kind = prop.get("type")
            if name is not None and not (isinstance(name, str) and HEADER_NAME.fullmatch(name)):
                problem = f"x-mcp-header {name!r} is not an HTTP header name"
            elif name is not None and kind not in ("string", "integer", "boolean"):
                problem = f"x-mcp-header {name!r} is on a {kind}, not a string, integer or boolean"
            names += [name.lower()] if name is not None and not problem else []
            schemas.append(prop)
    if not problem and len(set(names)) < len(names):
        problem = "two x-mcp-header names are the same, ignoring case"
    if problem:
        name = str(tool.get("name"))[:100]
        print(f"mcp_min client: tool {name!r} left out: its {problem}", file=sys.stderr)
    return bool(problem)


def too_big(size, limit):
    return ConnectionError(f"the reply is {size} bytes, over the {limit}-byte max_message_bytes")


async def http_request(reader, writer, url, method, headers, body=b""):
    """Send one request; returns the response's status and lower-case headers."""
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {url.netloc.rpartition('@')[2]}",
             f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    while True:  # interim 1xx responses (100 Continue, 103 Early Hints) may come first: skipped
        try:
            status_line, got = mcp_http.parse_head(await reader.readuntil(b"\r\n\r\n"))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, mcp_http.HTTPError):
            status_line = ""  # it closed, or sent something else than an HTTP head
            got = {}
        status = status_line.partition(" ")[2][:3]
        if not (status_line.startswith("HTTP/") and status.isdigit()):
            raise ConnectionError(f"{url.geturl()} did not answer as an MCP server "
                                  "(no HTTP response)")
        if not status.startswith("1"):
            return int(status), got


async def body_pieces(reader, headers, limit):
    """The response body as it arrives: chunked, Content-Length, or until the server closes."""
    length = headers.get("content-length", "")
    if "chunked" in headers.get("transfer-encoding", ""):
        while size := int((await reader.readline()).split(b";")[0], 16):
            if size > limit:
                raise too_big(f"more than {limit}", limit)
            yield (await reader.readexactly(size + 2))[:-2]  # a CRLF ends each chunk
    elif length:
        if not length.isdigit() or len(length) > 15 or int(length) > limit:
            raise too_big(length[:20], limit)
        yield await reader.readexactly(int(length))
    else:
        while piece := await reader.read(65536):
            yield piece


async def reply_messages(reader, headers, limit, stream):
    """The messages of a response body: the one JSON body, or the data of each SSE event. The
    last event id and retry delay (ms) an SSE stream sends go into `stream`, for resuming it.
    None may pass `limit` bytes: an endless body fails instead of filling memory."""
    sse = headers.get("content-type", "").startswith("text/event-stream")
    rest = b""  # the start of a line still to come
    data = []  # the data lines of the event so far
    async for piece in body_pieces(reader, headers, limit):
        *lines, rest = (rest + piece).split(b"\n") if sse else [rest + piece]  # JSON: one message
        for line in lines:
            field, _, value = line.rstrip(b"\r").partition(b":")
            value = value.removeprefix(b" ")
            if not field and not value:  # a blank line ends an event; a priming event has no data
                if any(data):
                    yield b"\n".join(data)
                data = []
            elif field == b"data":
                data.append(value)
            elif field == b"id" and value.isascii() and value.decode().isprintable():
                stream["id"] = value.decode()  # it goes back in a header: no control characters
            elif field == b"retry" and value.isdigit() and len(value) < 10:
                stream["retry"] = int(value)
        if len(rest) + sum(map(len, data)) > limit:
            raise too_big(f"more than {limit}", limit)
    if rest and not sse:
        yield rest


# === The demo: python client.py ===
#
# main(), at the end, reads the command line and runs demo(): one conversation, a function per
# step. interactive() keeps one conversation open for many questions. The small helpers they
# share come last.

HERE = Path(__file__).resolve().parent
DEFAULT_QUESTION = "can I bring a dog"
WAITING_NOTE_AFTER = 1.0  # seconds without an answer before the terminal hears why
MAX_QUESTION_CHARS = 10_000  # per stdin line; the server itself takes 1,000
SHOWN = 3  # resources, templates and prompts shown in step 2; the rest are counted


async def demo(client, label, question, top_k, python_note=None):
    """One conversation, step by step: connect, see what the server offers, search once."""
    print(f"[1] connect: {label} and open the conversation")
    if python_note:
        field("python", python_note)
    async with client:
        info = client.server_info
        field("server", f"{info.get('name', '?')} {info.get('version', '')}".rstrip())
        field("protocol", client.protocol_version)
        modern = "stateless: no handshake, every request carries its protocol version in _meta"
        legacy = "initialize handshake, then the notifications/initialized notification"
        field("era", f"{client.era} ({modern if client.era == 'modern' else legacy})")
        tools = await show_offer(client)
        arguments = search_arguments(tools, question, top_k)
        if arguments is None:
            print("\n(no tool called search with a query argument: stopping after the listing)")
            return 0
        return await show_search(client, arguments)


async def show_offer(client):
    """Step 2: the server's tools, with their arguments; then its resources, resource templates
    and prompts, if its capabilities say it has them. Returns the tools."""
    methods = ["tools/list", "resources/list", "resources/templates/list", "prompts/list"]
    # tools/list always; the others if the capability that starts their name is offered
    methods = [m for m in methods if m == "tools/list" or m.split("/")[0] in client.capabilities]
    print(f"\n[2] {', '.join(methods)}")
    tools = await client.list_tools()
    for tool in tools:
        print(f"    {tool.get('name')}: {first_line(tool.get('description'))}")
        print(f"        arguments: {describe_arguments(as_dict(tool.get('inputSchema')))}")
    if "resources/list" in methods:
        show_some("resources", await client.list_resources(), describe_resource)
        show_some("resource templates", await client.list_resource_templates(), describe_resource)
    if "prompts/list" in methods:
        show_some("prompts", await client.list_prompts(), describe_prompt)
    return tools


async def show_search(client, arguments):
    """Step 3: call the search tool; show what its result holds, then its text."""
    print(f"\n[3] tools/call search {json.dumps(arguments, ensure_ascii=False)}", flush=True)
    started = time.perf_counter()
    result = await call_search(client, arguments)
    content = result.get("content", [])
    field("isError", result.get("isError", False))
    kinds = ", ".join(block.get("type", "?") for block in content) or "-"
    field("content", f"{len(content)} block(s), type {kinds}")
    if "structuredContent" in result:
        field("structured", "keys " + ", ".join(result["structuredContent"]))
    field("time", milliseconds(started))
    print()
    print_content(result, "    ")
    return 1 if result.get("isError") else 0


async def call_search(client, arguments):
    """client.call_tool("search", ...), saying on stderr why, when the answer is slow to come: a
    first search waits for server.py to load its embedding model, about 5 s."""
    call = asyncio.ensure_future(client.call_tool("search", arguments))
    try:
        if not (await asyncio.wait([call], timeout=WAITING_NOTE_AFTER))[0]:
            print("    waiting for the answer (a first search may wait while the server loads its "
                  "model)", file=sys.stderr, flush=True)
        return await call
    finally:
        call.cancel()  # a no-op once it is done; else the session is being cut short


# --- --interactive: one server, many questions ---

def interactive(client, top_k):
    """Answer questions from stdin, one per line, with one server; an empty line, the end of
    input or Ctrl-C ends. The event loop runs while a question is answered; stdin is read in
    between, in the main thread, so Ctrl-C lands there (or cancels the answer on its way), and
    the server is closed on the way out."""
    with asyncio.Runner() as runner:
        runner.run(client.__aenter__())
        try:
            tools = runner.run(client.list_tools())
            note(f"connected to {client.server_info.get('name', '?')} ({client.protocol_version})."
                 " One question per line; an empty line or Ctrl-D ends.")
            while question := read_question():
                started = time.perf_counter()
                result = runner.run(call_search(client, search_arguments(tools, question, top_k)))
                print_content(result)
                print(f"(answered in {milliseconds(started)})\n", flush=True)
            return 0
        finally:
            runner.run(client.close())


def read_question():
    """The next line of stdin, stripped ("" at the end of input). A terminal gets a prompt."""
    prompt = "question> " if sys.stdin.isatty() else ""
    print(prompt, end="", flush=True)
    line = sys.stdin.readline(MAX_QUESTION_CHARS)
    if not line and prompt:
        print()  # Ctrl-D leaves the cursor after the prompt
    return line.strip()


# --- The command line ---

def main(argv=None):
    parser = argparse.ArgumentParser(description="Show an MCP conversation, step by step.")
    parser.add_argument("question", nargs="?", help=f"what to ask (default: {DEFAULT_QUESTION!r})")
    parser.add_argument("--top-k", type=int, default=3, help="passages to ask for (default: 3)")
    parser.add_argument("--index", default="index", help="server.py's index (default: index)")
    parser.add_argument("--interactive", action="store_true", help="one question per line")
    parser.add_argument("--trace", action="store_true", help="show every JSON line: → sent, ← got")
    parser.add_argument("--legacy", action="store_true", help="open with initialize (2025-11-25)")
    parser.add_argument("--url", help="a Streamable HTTP server, e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument("--server", nargs=argparse.REMAINDER, metavar="CMD",
                        help="another stdio MCP server's command (all that follows)")
    # A stdout or stderr closed by the caller (`client.py >&-`) is None to Python, and .flush() on
    # it failed the run: it becomes /dev/null. That also takes the free descriptor, so no pipe to
    # the server can land on fd 1 or 2.
    sys.stdout = sys.stdout or open(os.devnull, "w")
    sys.stderr = sys.stderr or open(os.devnull, "w")
    args = parser.parse_args(argv)
    if args.server == []:
        parser.error("--server needs the command that starts the server")
    if args.interactive and args.question is not None:
        parser.error("--interactive reads its questions from stdin: leave out the question")
    if not (args.url or args.server or args.index):  # Path("") is the current folder
        parser.error("--index is an empty string; give it the index folder (default: index)")
    stdout_lost = []

    def trace(direction, line):
        try:
            print(f"{direction} {line}", flush=True)
        except BrokenPipeError:  # the client would log it and go on: the rest goes nowhere
            stdout_gone()
            stdout_lost.append(True)

    options = {"trace": trace if args.trace else None, "legacy": args.legacy}
    python_note = None
    if args.url is not None:
        try:
            client = HTTPClient(args.url, **options)
            label = f"reach {args.url}"
        except ValueError as e:  # HTTPClient checks the URL
            parser.error(f"--url {e}; e.g. http://127.0.0.1:8000/mcp")
    elif args.server:
        client = Client(args.server, **options)
        label = f"start `{' '.join(args.server)}`"
    elif not (Path(args.index) / "manifest.json").is_file():  # say so before starting server.py
        build = ("make index" if args.index == "index"  # make index builds index/ alone
                 else f"python index_build.py --docs DOCS --index {args.index}")
        note(f"error: no search index in {args.index}/; run `{build}` first")
        return 1
    else:
        python, shown, python_note = server_python()
        client = Client([python, str(HERE / "server.py"), "--index", args.index], **options)
        label = f"start `{shown} server.py --index {args.index}`"

    question = DEFAULT_QUESTION if args.question is None else args.question
    try:
        if args.interactive:
            if python_note:
                note(f"server.py runs on {python_note}")
            code = interactive(client, args.top_k)
        else:
            code = asyncio.run(demo(client, label, question, args.top_k, python_note))
        sys.stdout.flush()  # here, where a reader that left is handled, not at exit
        return 1 if stdout_lost else code
    except BrokenPipeError:  # a ConnectionError too, but ours: stdout's reader left
        stdout_gone()
        return 1
    except (ConnectionError, MCPError, TimeoutError) as e:
        note(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        print(file=sys.stderr)  # the terminal shows ^C; the shell prompt gets a line of its own
        return 130


# --- Small helpers of the demo ---

def search_arguments(tools, question, top_k):
    """The arguments for a search tool with a query argument, or None if the server has none."""
    search = next((tool for tool in tools if tool.get("name") == "search"), {})
    properties = as_dict(as_dict(search.get("inputSchema")).get("properties"))
    if "query" not in properties:
        return None
    return {"query": question, "top_k": top_k} if "top_k" in properties else {"query": question}


def describe_arguments(input_schema):
    """'query (string, required), top_k (integer, default 5)' from a tool's inputSchema; a type
    that is a list, an anyOf, or an enum: 'string | null', 'one of "a", "b"'."""
    required = as_list(input_schema.get("required"))
    parts = []
    for name, schema in as_dict(input_schema.get("properties")).items():
        schema = as_dict(schema)
        types = schema.get("type") or [as_dict(option).get("type", "?")
                                       for option in as_list(schema.get("anyOf"))]
        kind = " | ".join(map(str, types)) if isinstance(types, list) else str(types)
        if "enum" in schema:  # a string one of "a", "b"; or, without a type, just one of them
            kind = f"{kind} one of {', '.join(map(json.dumps, as_list(schema['enum'])))}".strip()
        how = "required" if name in required else "optional"
        if "default" in schema and name not in required:
            how = f"default {json.dumps(schema['default'])}"
        parts.append(f"{name} ({kind}, {how})")
    return ", ".join(parts) or "none"


def show_some(title, items, describe):
    """How many there are, the first SHOWN of them, and a line for the rest."""
    print(f"    {title}: {len(items)}")
    for item in items[:SHOWN]:
        print(f"        {describe(item)}")
    if len(items) > SHOWN:
        print(f"        ... and {len(items) - SHOWN} more")


def describe_resource(resource):
    """'docs://faq.txt: The cafe's FAQ' for a resource; a template shows its uriTemplate."""
    what = first_line(resource.get("description")) or resource.get("title") or resource.get("name")
    return f"{resource.get('uri') or resource.get('uriTemplate')}: {what}"


def describe_prompt(prompt):
    """'greet(name, [style]): Say hello.': its arguments, the optional ones in brackets."""
    arguments = [as_dict(argument) for argument in as_list(prompt.get("arguments"))]
    names = [str(a.get("name")) if a.get("required") else f"[{a.get('name')}]" for a in arguments]
    return f"{prompt.get('name')}({', '.join(names)}): {first_line(prompt.get('description'))}"


def print_content(result, prefix=""):
    """Each content block of a tool's result: its text, each line after `prefix`."""
    for block in result.get("content", []):
        link = f"<{block.get('type')} {block.get('uri', 'block')}>"  # a resource_link, an image
        text = str(block.get("text", "")) if block.get("type") == "text" else link
        print("\n".join(prefix + line if line else "" for line in text.splitlines()))


def first_line(text):
    return next((line.strip() for line in str(text or "").splitlines() if line.strip()), "")


def field(label, value):
    print(f"    {label:<10} : {value}")


def milliseconds(since):
    return f"{(time.perf_counter() - since) * 1000:.0f} ms"


def note(message):
    print(f"client.py: {message}", file=sys.stderr, flush=True)


def server_python(project=HERE):
    """(interpreter path, how to show it, why it was chosen) for starting server.py: the
    project's .venv, where `make install` puts server.py's packages, else this Python.

    Starting the server with the project's .venv, rather than re-running this client under
    it, keeps the client on whatever Python the user typed: it needs no packages itself.
    """
    python = project / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if python.exists():
        shown = python.relative_to(project).as_posix()
        return str(python), shown, f"{shown}, the project's virtualenv (server.py's packages)"
    version = sys.version.split()[0]
    return (sys.executable, "python",
            f"this Python ({version}): there is no .venv here; `make install` makes one")


def stdout_gone():
    """The reader of stdout has left (`client.py | head -1`): the rest goes to /dev/null, so
    neither the run nor Python's last flush at exit reports a broken pipe."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
