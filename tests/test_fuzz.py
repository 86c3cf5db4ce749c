"""A seeded mutation fuzzer against ONE live server (tests/hard_server.py).

Valid messages are mutated (ids, methods, params and arguments of other types; flipped, inserted,
deleted and duplicated bytes; truncation; random unicode, U+2028, control characters) and mixed with
random JSON and random bytes; 3,000 of them go out in batches of 50. After each batch:
  - each line that holds a request with a valid id (string or integer) got exactly one response with
    that id; each line the server cannot tie to an id got exactly one error with id null; responses
    and notifications got nothing;
  - every line the server wrote is one valid JSON-RPC message (RawServer checks each);
  - the server is alive and answers a ping.
The expectations come from an independent reading of each line (`expect`), not from mcp_min.

    HARD_FUZZ_SEED=123 pytest tests/test_fuzz.py      # another seed
    pytest tests/test_fuzz.py --soak                  # 100x more messages
"""
import collections, json, math, os, random, time

from hard_server import RawServer, id_key, mcp_min

SEED = int(os.environ.get("HARD_FUZZ_SEED", "20260728"))
MESSAGES, BATCH = 3_000, 50

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}
ODD_CHARS = ["\u2028", "\u2029", "\x00", "\x01", "\x1f", "\x7f", "\n", "\r", "\t", "\"", "\\", "/",
             "\ufeff", "\U0001F600", "é", "中", "\u0301", "\uffff", "{", "}", "[", "]", ":", ","]
SURROGATES = ["\ud800", "\udfff", "\udc80"]  # lone: JSON can escape them, UTF-8 cannot carry them
HUGE = "<a 5,000-digit integer>"  # json cannot even hold it in Python: encode() writes its digits
ODD_BYTES = [b"\x00", b"\r", b"\xff", b"\xfe", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x80\xa8", b"\\",
             b'"', b"{", b"}", b"[", b"]", b",", b":", b" ", b"\t", b"NaN", b"Infinity", b"-",
             b"1e400", b"null", b"\x1b[0m"]


class Fuzzer:
    def __init__(self, rng):
        self.rng, self.count = rng, 0

    def new_id(self):
        self.count += 1
        return 10_000_000 + self.count if self.rng.random() < 0.5 else f"fz-{self.count}"

    def text(self, limit=20):
        rng = self.rng
        out = []
        for _ in range(rng.randint(0, limit)):
            r = rng.random()
            out.append(rng.choice(SURROGATES) if r < 0.003 else rng.choice(ODD_CHARS) if r < 0.2
                       else chr(rng.randint(0x20, 0x7e)) if r < 0.7
                       else chr(rng.randint(0xa0, 0xd7ff)) if r < 0.9
                       else chr(rng.randint(0xe000, 0x10ffff)))
        return "".join(out)

    def value(self, depth=0):
        """A random JSON value (NaN and huge numbers included: they are what the wire may carry)."""
        rng = self.rng
        r = rng.random()
        if depth > 3 or r < 0.45:
            if rng.random() < 0.03:
                return rng.choice([float("nan"), float("inf"), -float("inf")])
            return rng.choice([None, True, False, 0, -1, 1, 2 ** 31, 2 ** 63, -2 ** 64, 10 ** 40,
                               1.5, -0.0, 1e308, self.text(), "", rng.randint(-1000, 1000),
                               rng.random()])
        if r < 0.7:
            return [self.value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {self.text(8): self.value(depth + 1) for _ in range(rng.randint(0, 4))}

    def valid(self):
        """One well-formed message of a random kind."""
        rng, i = self.rng, self.new_id()
        req = lambda method, params=None: {"jsonrpc": "2.0", "id": i, "method": method,
                                           **({} if params is None else {"params": params})}
        kind = rng.randrange(15)
        if kind == 0:
            return req("ping")
        if kind == 1:
            return req("tools/list")
        if kind in (2, 3):
            return req("tools/call", {"name": rng.choice(["echo", "echo_async"]),
                                      "arguments": {"text": self.text()}})
        if kind == 4:
            return req("tools/call", {"name": "add",
                                      "arguments": {"a": rng.randint(-10 ** 9, 10 ** 9),
                                                    "b": rng.randint(-9, 9)}})
        if kind == 5:
            return req("logging/setLevel", {"level": rng.choice(LEVELS)})
        if kind == 6:
            return req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "f", "version": "1"}})
        if kind == 7:
            return req("server/discover", {"_meta": dict(MODERN)})
        if kind == 8:
            return req("tools/call", {"name": "echo_async", "arguments": {"text": self.text()},
                                      "_meta": dict(MODERN)})
        if kind == 9:
            return req("tools/list", {"_meta": {
                **MODERN, "io.modelcontextprotocol/logLevel": rng.choice(LEVELS)}})
        if kind == 10:
            return req(rng.choice(["resources/list", "prompts/get", "completion/complete",
                                   "tools/nope", ""]))
        if kind == 11:
            return {"jsonrpc": "2.0", "method": "notifications/initialized"}
        if kind == 12:  # never the id of a request we sent: that one would rightly go unanswered
            return {"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": f"gone-{i}", "reason": self.text()}}
        if kind == 13:
            return {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": i, "progress": 1}}
        return {"jsonrpc": "2.0", "id": i, "result": {}} if rng.random() < 0.5 else \
            {"jsonrpc": "2.0", "id": i, "error": {"code": -32000, "message": self.text()}}

    def mutate_fields(self, message):
        rng = self.rng
        for _ in range(rng.randint(1, 3)):
            r = rng.randrange(11)
            if r == 0:  # an id of another type, or an odd valid one (made unique)
                self.count += 1
                message["id"] = rng.choice([None, 1.5, 2.0, True, False, {}, [], [1], {"id": 1},
                                            float("nan"), -self.count,
                                            f"{self.count}\u2028{self.text(3)}",
                                            f"{self.count}{self.text(5)}", f"{self.count}\udc80",
                                            10 ** 30 + self.count, HUGE])
            elif r == 1:
                message.pop("id", None)
            elif r == 2:
                message["jsonrpc"] = (rng.choice([None, "1.0", 2.0, 2, "", "2.0 ", "2.00"])
                                      if rng.random() < 0.8 else message.pop("jsonrpc", None))
            elif r == 3:
                message["method"] = self.value() if rng.random() < 0.5 else self.text()
            elif r == 4:
                message.pop("method", None)
            elif r == 5:
                message["params"] = self.value()
            elif r == 6 and isinstance(message.get("params"), dict):
                message["params"]["arguments"] = self.value()
            elif r == 7 and isinstance(message.get("params"), dict):
                args = message["params"].get("arguments")
                if isinstance(args, dict):
                    args[rng.choice(["text", "a", "b", self.text(4)])] = self.value()
            elif r == 8:
                message[self.text(6)] = self.value()
            elif r == 9:  # nesting, now and then deeper than any parser allows
                depth = rng.choice([10, 100, 900, 5000])
                nested = 1
                for _ in range(depth):
                    nested = [nested]
                message.setdefault("params", {})
                if isinstance(message["params"], dict):
                    message["params"]["deep"] = nested
            elif r == 10 and isinstance(message.get("params"), dict):
                message["params"]["requestId"] = self.value()  # a cancel's requestId of any type
        return message

    def encode(self, message):
        """JSON text of a message, as this fuzzer likes it today (NaN allowed; surrogates as
        escapes or raw)."""
        try:
            text = json.dumps(message, ensure_ascii=self.rng.random() < 0.5)
        except (ValueError, RecursionError):
            # unencodable: a broken line instead
            text = "{\"jsonrpc\": \"2.0\", \"id\": 1, " + self.text()
        return text.replace(json.dumps(HUGE), "9" * 5000).encode("utf-8", "surrogatepass")

    def mutate_bytes(self, data):
        rng = self.rng
        for _ in range(rng.randint(1, 4)):
            if not data:
                break
            at = rng.randrange(len(data) + 1)
            r = rng.randrange(6)
            if r == 0:
                data = data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]
            elif r == 1:
                data = data[:at]
            elif r == 2:
                data = data[:at] + rng.choice(ODD_BYTES) + data[at:]
            elif r == 3:
                data = data[:at] + data[at + rng.randint(1, 10):]
            elif r == 4:
                data = data[:at] + data[at:at + rng.randint(1, 20)] + data[at:]
            elif r == 5 and rng.random() < 0.2:  # rarely: split the message over two lines
                data = data[:at] + b"\n" + data[at:]
        return data

    def line(self):
        """The bytes of one outgoing message, newline included (a byte mutation may add more
        newlines)."""
        rng = self.rng
        r = rng.random()
        if r < 0.25:
            data = self.encode(self.valid())
        elif r < 0.6:
            data = self.encode(self.mutate_fields(self.valid()))
        elif r < 0.85:
            data = self.mutate_bytes(self.encode(
                self.valid() if rng.random() < 0.7 else self.mutate_fields(self.valid())))
        elif r < 0.95:
            data = self.encode(self.value())
        else:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
        return data.replace(b"\n", b"") + b"\n" if rng.random() < 0.9 else data + b"\n"


def expect(line):
    """What the server owes for one line (without its newline): ("id", key) for a request with a
    valid id, "null" for an error it cannot tie to an id, "none" for a notification or a response;
    and ("id|null", key) or "none|null" when JSON leaves it open (a number too large for a double:
    a server may refuse the whole line)."""
    if len(line) > mcp_min.MAX_MESSAGE_BYTES:
        return "null"
    overflow = []

    def number(text):
        value = float(text)
        if math.isinf(value):
            overflow.append(text)
        return value

    def constant(name):
        raise ValueError(name)
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=constant, parse_float=number)
    except (UnicodeDecodeError, ValueError, RecursionError):
        # also an integer over Python's 4,300 digits: a limit of the parser, not of JSON
        return "null"
    if not isinstance(message, dict):
        return "null"
    if "method" not in message and ("result" in message or "error" in message) \
            or "id" not in message and isinstance(message.get("method"), str):
        return "none|null" if overflow else "none"
    if "id" not in message:
        return "null"
    request_id = message["id"]
    if isinstance(request_id, str) or (isinstance(request_id, int)
                                       and not isinstance(request_id, bool)):
        return ("id|null", id_key(request_id)) if overflow else ("id", id_key(request_id))
    return "null"


def run_batch(server, blob, number):
    """Send one batch; wait for every answer it is owed plus a ping; check them. Returns the line
    count."""
    lines = blob.split(b"\n")[:-1]
    owed, optional, nulls_min, nulls_max = collections.Counter(), collections.Counter(), 0, 0
    for line in lines:
        verdict = expect(line)
        if verdict == "null":
            nulls_min += 1
            nulls_max += 1
        elif isinstance(verdict, tuple) and verdict[0] == "id":
            owed[verdict[1]] += 1
        elif isinstance(verdict, tuple):  # id|null
            optional[verdict[1]] += 1
            nulls_max += 1
        elif verdict == "none|null":
            nulls_max += 1
    def report(problems):
        shown = "\n".join(f"  {expect(l)!s:40.40} {l[:160]!r}" for l in lines)
        return AssertionError(f"seed {SEED}, batch {number}: " + "; ".join(problems) +
                              f"\nthe batch:\n{shown}\nserver stderr:\n{server.stderr_tail()}")

    got, nulls = collections.Counter(), 0
    try:
        server.send(blob)
        for sync in (1, 2):  # the second ping gives any duplicate answer time to show up
            sync_id = f"fuzz-sync-{number}-{sync}"
            server.send({"jsonrpc": "2.0", "id": sync_id, "method": "ping"})
            deadline, synced = time.monotonic() + 60, False
            while not synced or (sync == 1 and any(got[k] < n for k, n in owed.items())):
                message = server.recv(max(0.01, deadline - time.monotonic()))
                if message is None:
                    raise report(["the server closed stdout (it died)"])
                if message.get("id") == sync_id:
                    synced = True
                elif message.get("id", 0) is None:
                    nulls += 1
                elif "id" in message:
                    got[id_key(message["id"])] += 1
    except (TimeoutError, BrokenPipeError) as e:
        missing = {k: n - got.get(k, 0) for k, n in owed.items() if got.get(k, 0) < n}
        raise report([f"{type(e).__name__}; still unanswered: {missing}"]) from None
    unexplained = {k: n for k, n in got.items()
                   if n != owed.get(k, 0) and not (k in optional and n <= optional[k])}
    missing = {k: n for k, n in owed.items() if got.get(k, 0) != n}
    problems = []
    if unexplained or missing:
        problems.append(f"answers by id: missing or extra {missing or unexplained}")
    if not nulls_min <= nulls <= nulls_max:
        problems.append(f"{nulls} errors with id null, expected {nulls_min}..{nulls_max}")
    if server.problems:
        problems.append(f"invalid stdout lines: {server.problems[:3]}")
    if problems:
        raise report(problems)
    return len(lines)


def test_fuzz_one_live_server(request):
    total = MESSAGES * (100 if request.config.getoption("--soak") else 1)
    fuzzer, server = Fuzzer(random.Random(SEED)), RawServer()
    try:
        sent, number, lines = 0, 0, 0
        while sent < total:
            number += 1
            blob = b"".join(fuzzer.line() for _ in range(BATCH))
            lines += run_batch(server, blob, number)
            sent += BATCH
            assert server.proc.poll() is None, (
                f"the server died in batch {number}:\n{server.stderr_tail()}")
        assert server.alive()
        assert server.close() == 0, server.stderr_tail()
        assert server.problems == []
    finally:
        server.kill()


def test_expectations_of_the_fuzzer():
    """The fuzzer's oracle on lines whose answer is known."""
    assert expect(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') == ("id", id_key(1))
    assert expect(b'{"jsonrpc":"1.0","id":"a","method":"ping"}') == ("id", id_key("a"))
    assert expect(b'{"jsonrpc":"2.0","id":null,"method":"ping"}') == "null"
    assert expect(b'{"jsonrpc":"2.0","id":true,"method":"ping"}') == "null"
    assert expect(b'{"jsonrpc":"2.0","method":"notifications/x"}') == "none"
    assert expect(b'{"jsonrpc":"2.0","id":1,"result":{}}') == "none"
    assert expect(b'{"jsonrpc":"2.0","id":1}') == ("id", id_key(1))
    assert expect(b'{"jsonrpc":"2.0"}') == "null"
    assert expect(b"[1]") == "null" and expect(b"") == "null" and expect(b"\xff") == "null"
    assert expect(b'{"id":1,"method":"ping","x":NaN}') == "null"
    assert expect(b'{"id":1,"method":"ping","x":1e400}') == ("id|null", id_key(1))
    assert expect(b'{"jsonrpc":"2.0","method":"notifications/x","params":-0.01e400}') == "none|null"
    assert expect(b"[" * 100_000) == "null"
