"""mcp_tasks: the Tasks extension (io.modelcontextprotocol/tasks, SEP-2663) for mcp_min servers.

A tool that takes minutes (an index build, a report, a deploy) answers its tools/call at once with
a task; the client polls it with tasks/get, answers its questions with tasks/update and may stop it
with tasks/cancel. Only 2026-07-28 clients that name the extension in their request's
capabilities get tasks; any other client gets the tool's result as before, or, from a tool that
requires a task, error -32021 naming the extension. Import this module and mark a tool:

    import mcp_tasks
    from mcp_min import Context, Server
    server = Server("builder")

    @mcp_tasks.task_tool(server)          # instead of @server.tool(); support="required" too
    async def build(folder: str, ctx: Context) -> str:
        '''Build the index of a folder.'''
        answer = await ctx.elicit("Overwrite the old index?", {"type": "object", "properties":
                                  {"ok": {"type": "boolean"}}})  # in a task: input_required
        await asyncio.sleep(600)
        return "built"

On the wire (2026-07-28, each request's _meta naming the extension):
    -> tools/call build          <- {"resultType": "task", "taskId": "Xy..", "status": "working",
                                     "createdAt": .., "lastUpdatedAt": .., "ttlMs": 3600000, ..}
    -> tasks/get {"taskId"}      <- {"status": "input_required", "inputRequests": {"answer": ..}}
    -> tasks/update {"taskId", "inputResponses": {"answer": {"action": "accept", ...}}}  <- {}
    -> tasks/get {"taskId"}      <- {"status": "completed", "result": {"content": [..]}}

A task is kept until its ttl has passed (then tasks/get says -32602), for its caller only: the
identity the HTTP token check found, as for requestState. It runs on after the call that made it
was answered; the server's stop cancels it. Over HTTP, the Mcp-Name header names the task
(mcp_http.py). The sections follow a call: marking a tool; the call that becomes a task; the
questions a task asks; tasks/get, tasks/update, tasks/cancel; keeping and expiring tasks.
Spec: https://github.com/modelcontextprotocol/ext-tasks (specification/draft/tasks.md).
"""
import asyncio, collections, copy, itertools, secrets, time

from mcp_min import (AT_END, INTERNAL_ERROR, INVALID_PARAMS, METHODS, MISSING_CAPABILITY,
                     Context, MCPError, Method, check_answer, error_response, user_of,
                     without_none)

EXTENSION = "io.modelcontextprotocol/tasks"
DEFAULT_TTL_MS = 3_600_000  # a task is kept an hour after it was created, unless its tool says
DEFAULT_POLL_MS = 500  # how often a client should ask tasks/get
MAX_TASKS = 1_000  # tasks kept at once (a result may be megabytes); past that, calls are refused
MAX_TASKS_EACH = 100  # tasks kept at once for one caller
clock = time.monotonic  # what ttls are measured on; a test may put its own clock here


# === 1. Marking a tool: optional, required, or (a plain @server.tool) never a task ===

# How a tool runs as a task. asks_first: the tool may ask by input_required (SEP-2322) until it
# calls ctx.start_task(); a call that ends before that answers at once.
TaskSupport = collections.namedtuple("TaskSupport", "support ttl_ms poll_ms asks_first")


def task_tool(server, support="optional", ttl_ms=DEFAULT_TTL_MS, poll_ms=DEFAULT_POLL_MS,
              asks_first=False, **tool_options):
    """Decorator, in place of @server.tool(**tool_options): the function becomes a tool that runs
    as a task for clients that can poll one. support: "optional" (others get its result, as from
    any tool) or "required" (others get -32021). Its definition says so: execution.taskSupport."""
    if support not in ("optional", "required") or not all(
            isinstance(ms, int) and ms > 0 for ms in (ttl_ms, poll_ms)):
        raise ValueError('support is "optional" or "required" (a plain tool is never a task); '
                         "ttl_ms and poll_ms are whole milliseconds, over 0")

    def register(func):
        server.tool(**tool_options)(func)
        name = tool_options.get("name") or func.__name__
        server.tools[name].definition["execution"] = {"taskSupport": support}
        server.registries.setdefault(EXTENSION, {})[name] = TaskSupport(support, ttl_ms, poll_ms,
                                                                       asks_first)
        return func
    return register


def start_task(self):
    """Context.start_task, for a tool marked asks_first: from here on the call runs as a task
    (its answer is the task, the rest of the tool runs on). Call it from the event loop (an async
    tool). For a client that cannot poll tasks, or outside a task tool, it does nothing."""
    if getattr(self, "task", None):
        self.task.started.set()


Context.start_task = start_task


# === 2. The call that becomes a task (tools/call, wrapped) ===

class Task:
    """One task: its state, what it asks, and the asyncio task that runs its tool (job)."""

    def __init__(self, ctx, how):
        self.id = secrets.token_urlsafe(24)  # unguessable: a bearer token to its state
        self.owner = user_of(ctx.session)
        self.session = ctx.session  # a stdio client's session: its tasks end when it leaves
        self.status = "working"  # then completed, failed or cancelled; input_required: `asked`
        self.message = None  # statusMessage
        self.created = time.time()
        self.updated = self.created
        self.deadline = clock() + how.ttl_ms / 1000
        self.how = how
        self.asked = {}  # key -> (its request, the future its answer goes to)
        self.keys = set()  # every key ever asked: each is unique over the task's life
        self.outcome = {}  # {"result": ...} or {"error": ...}, once it is over
        self.started = asyncio.Event()  # set when the call's answer is this task
        self.job = None
        self.ctx = copy.copy(ctx)  # the call's own Context is done with once the call answers
        self.ctx.task = self  # for start_task
        self.ctx.ask = lambda requests: ask(self, requests)  # questions go to the task

    def finish(self, status, message=None, **outcome):
        """The task is over, if it was not yet; its job stops (if it still runs)."""
        if self.status == "working":
            self.status = status
            self.message = message
            self.outcome = outcome
            for _, future in self.asked.values():  # a sync tool's thread may wait for an answer
                future.cancel()
            self.asked = {}
            self.ctx.cancelled = True  # a sync tool's thread can see it: nothing more to do
            self.touch()
        self.job.cancel()

    def touch(self):
        self.updated = time.time()


def run_as_task(call_tool):
    """tools/call of a task tool: for a client that named the extension, a task (resultType
    "task"); the tool runs on in it, with a copy of the call's Context. Others: the tool's result,
    or -32021 if it requires a task. Any other tool: as before."""
    async def call_or_start(server, params, ctx):
        name = params.get("name")
        how = server.registries.get(EXTENSION, {}).get(name) if isinstance(name, str) else None
        # Arguments that are no object: tools/call refuses the call itself (-32602), no task.
        if how is None or not isinstance(params.get("arguments", {}), dict) \
                or not declared(ctx) and how.support == "optional":
            return await call_tool(server, params, ctx)
        if not declared(ctx):
            raise MCPError(MISSING_CAPABILITY, f"Missing required client capability: {EXTENSION}",
                           {"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
        task = Task(ctx, how)
        task.job = asyncio.ensure_future(call_tool(server, params, task.ctx))
        if how.asks_first and not await started(task):  # it ended first: its answer as it is
            task.ctx.cancelled = True
            return task.job.result()
        task.started.set()
        keep(server, task)
        task.ctx.progress_token = None  # a task sends no progress (spec: Task Status Notifs.)
        task.job.add_done_callback(lambda job: settle(task, job))
        return {"resultType": "task", **fields(task)}
    return call_or_start


async def started(task):
    """Wait until the tool starts its task (True) or ends (False). A cancelled call cancels it."""
    starting = asyncio.ensure_future(task.started.wait())
    try:
        await asyncio.wait({task.job, starting}, return_when=asyncio.FIRST_COMPLETED)
    finally:  # the job is done, or the call was cancelled: then its job too
        starting.cancel()
        if not task.started.is_set():
            task.job.cancel()
    return task.started.is_set()


def declared(ctx):
    """Whether this request's client named the extension: 2026-07-28 only (SEP-2663)."""
    capabilities = ctx.capabilities if isinstance(ctx.capabilities, dict) else {}
    extensions = capabilities.get("extensions")
    return bool(ctx.modern) and isinstance(extensions, dict) and EXTENSION in extensions


def settle(task, job):
    """The job ended: completed with its result (a tool's isError result too), failed with a
    JSON-RPC error, or cancelled."""
    if job.cancelled():
        return task.finish("cancelled", "cancelled")
    error = job.exception()
    if isinstance(error, MCPError):
        return task.finish("failed", error.message, error=error_response(None, error)["error"])
    if error:
        message = f"Internal error: {type(error).__name__}: {error}"
        return task.finish("failed", message, error={"code": INTERNAL_ERROR, "message": message})
    task.finish("completed", result=job.result())


# === 3. The questions a task asks: input_required, answered by tasks/update ===

async def ask(task, requests):
    """Context.ask inside a task tool: before the task starts, as for any call (input_required
    in the call's answer); after, the questions wait in the task's inputRequests for tasks/update.
    Each needs its client capability, else -32021."""
    if not task.started.is_set():
        return await Context.ask(task.ctx, requests)
    for name in {request["method"].partition("/")[0] for request in requests.values()}:
        if name not in task.ctx.capabilities:
            raise MCPError(MISSING_CAPABILITY, f"Missing required client capability: {name}",
                           {"requiredCapabilities": {name: {}}})
    keys = {}
    for key, request in requests.items():
        candidates = itertools.chain([key], (f"{key}-{n}" for n in itertools.count(2)))
        keys[key] = next(wire_key for wire_key in candidates if wire_key not in task.keys)
        task.keys.add(keys[key])
        answered = task.ctx.loop.create_future()
        # Once answered, or no longer awaited (the tool gave up on it): not asked any more.
        answered.add_done_callback(lambda _, wire_key=keys[key]: task.asked.pop(wire_key, None))
        task.asked[keys[key]] = (request, answered)
    task.touch()
    futures = [task.asked[keys[key]][1] for key in requests]
    return dict(zip(requests, await asyncio.gather(*futures)))


# === 4. tasks/get, tasks/update, tasks/cancel (2026-07-28, for clients naming the extension) ===

def fields(task):
    """The Task: what the answer that makes it and every tasks/get carry."""
    status = "input_required" if task.status == "working" and task.asked else task.status
    return without_none({"taskId": task.id, "status": status, "statusMessage": task.message,
                         "createdAt": iso(task.created), "lastUpdatedAt": iso(task.updated),
                         "ttlMs": task.how.ttl_ms, "pollIntervalMs": task.how.poll_ms})


def iso(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


async def get_task(server, params, ctx):
    """tasks/get: the task now, with its questions, its result or its error inlined."""
    task = find(server, params, ctx)
    asked = {key: request for key, (request, _) in task.asked.items()}
    return {**fields(task), **task.outcome, **({"inputRequests": asked} if asked else {})}


async def update_task(server, params, ctx):
    """tasks/update: answers to the task's questions, some or all. Keys not asked now (never,
    or answered already) are ignored; a malformed answer is refused (-32602), before any is
    taken."""
    task = find(server, params, ctx)
    answers = params.get("inputResponses")
    if not isinstance(answers, dict):
        raise MCPError(INVALID_PARAMS, 'Invalid params: "inputResponses" must be an object')
    taken = {key: answer for key, answer in answers.items() if key in task.asked}
    for key, answer in taken.items():
        check_answer(task.asked[key][0], answer)
    for key, answer in taken.items():
        task.asked.pop(key)[1].set_result(answer)
    if taken:
        task.touch()
    return {}


async def cancel_task(server, params, ctx):
    """tasks/cancel: stops a task that still runs; for one that is over, nothing to do. Both
    answer an empty acknowledgement."""
    task = find(server, params, ctx)
    task.finish("cancelled", "cancelled by the client")
    return {}


def find(server, params, ctx):
    """The task params.taskId names, if the caller may see it. A task of another caller, an
    expired one and one never made get the same error: a guesser learns nothing."""
    if not declared(ctx):
        raise MCPError(MISSING_CAPABILITY, f"Missing required client capability: {EXTENSION}",
                       {"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
    expire(server)
    task = kept(server).get(params.get("taskId")) if isinstance(params.get("taskId"), str) else None
    if task is None or task.owner != user_of(ctx.session):
        raise MCPError(INVALID_PARAMS, "Invalid params: no such task (unknown, or expired)")
    return task


METHODS["tasks/get"] = Method(get_task, EXTENSION, era="modern")
METHODS["tasks/update"] = Method(update_task, EXTENSION, era="modern")
METHODS["tasks/cancel"] = Method(cancel_task, EXTENSION, era="modern")
METHODS["tools/call"] = METHODS["tools/call"]._replace(
    handler=run_as_task(METHODS["tools/call"].handler))


# === 5. Keeping tasks: until their ttl has passed, for their caller only ===

def kept(server):
    """This server's tasks, task id -> Task, oldest first."""
    return server.registries.setdefault("tasks kept", {})  # no method names it: never advertised


def keep(server, task):
    """Keep a new task, once there is room: at most MAX_TASKS, MAX_TASKS_EACH for one caller."""
    expire(server)
    tasks = kept(server)
    mine = sum(other.owner == task.owner for other in tasks.values())
    if len(tasks) >= MAX_TASKS or mine >= MAX_TASKS_EACH:
        task.job.cancel()
        raise MCPError(INTERNAL_ERROR, "Too many tasks kept: retry when some have expired")
    tasks[task.id] = task


def expire(server):
    """Forget the tasks whose ttl has passed, stopping those still running. Never earlier."""
    now = clock()
    for task in [task for task in kept(server).values() if now > task.deadline]:
        del kept(server)[task.id]
        task.finish("cancelled", "expired")


def end_tasks(server, session):
    """AT_END: the server stops (session None), every task stops; a stdio client left (its
    session), its tasks stop: nobody can ask for them any more."""
    for task in list(kept(server).values()):
        if session is None or task.session is session:
            task.finish("cancelled", "the server stopped")


AT_END.append(end_tasks)
