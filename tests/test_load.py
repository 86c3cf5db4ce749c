"""Load: many calls at once, several clients at once; nothing is lost, the server's memory stays
flat. `pytest --soak` runs 20x more calls and rounds."""
import asyncio

from hard_server import COMMAND, rss_kib

from client import Client  # noqa: E402


def scale(request):
    return 20 if request.config.getoption("--soak") else 1


def one_call(client, i):
    """Call number i: a mix of sync and async tools and tools/list, each with an answer we can
    check."""
    kind = i % 4
    if kind == 0:
        return client.call_tool("echo", {"text": f"sync {i} \u2028 é"}), f"sync {i} \u2028 é"
    if kind == 1:
        return client.call_tool("echo_async", {"text": f"async {i}"}), f"async {i}"
    if kind == 2:
        return client.call_tool("add", {"a": i, "b": 10 ** 20}), str(i + 10 ** 20)
    return client.list_tools(), None


async def calls_in_flight(client, count, offset=0):
    """`count` calls at once (asyncio.gather); checks every answer is the one for its call."""
    pending = [one_call(client, offset + i) for i in range(count)]
    results = await asyncio.gather(*(coroutine for coroutine, _ in pending))
    for (_, expected), result in zip(pending, results):
        if expected is None:
            assert "echo" in [tool["name"] for tool in result]
        else:
            assert (result["isError"] is False
                    and result["content"][0]["text"] == expected), (expected, result)
    return len(results)


def test_four_clients_at_once_each_with_its_own_server(request):
    calls = 500 * scale(request)

    async def one_client(k):
        async with Client(COMMAND, timeout=120) as client:
            done = 0
            # 250 in flight at a time, so the four clients interleave
            for start in range(0, calls, 250):
                done += await calls_in_flight(client, min(250, calls - start),
                                              offset=k * calls + start)
            return done

    async def main():
        return await asyncio.gather(*(one_client(k) for k in range(4)))
    assert asyncio.run(main()) == [calls] * 4


def test_one_client_1000_calls_in_flight_and_memory_stays_flat(request):
    """Rounds of 1,000 concurrent calls on one connection: all answered, and the server's RSS after
    the later rounds is within a few MB of its RSS after the first ones."""
    rounds = 5 * scale(request)

    async def main():
        async with Client(COMMAND, timeout=120) as client:
            pid = client.process.pid
            # first rounds: thread pool, caches and allocator arenas settle
            for warm_up in range(2):
                assert await calls_in_flight(client, 1000, offset=warm_up * 1000) == 1000
            before = rss_kib(pid)
            for number in range(rounds):
                assert await calls_in_flight(client, 1000, offset=(number + 2) * 1000) == 1000
            after = rss_kib(pid)
            return before, after
    before, after = asyncio.run(main())
    assert after - before < 4 * 1024, (
        f"server RSS grew from {before} KiB to {after} KiB over {rounds} rounds")
