"""Awaiting gaio futures from asyncio: one completion queue per loop, no threads."""
from __future__ import annotations

import asyncio
import gc
import threading

import numpy as np
import pytest

import gaio
from test_core import slow_work


def test_await_fence_and_results(dev, rng):
    data = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)

    async def main():
        s = gaio.Stream(dev)
        t = gaio.tensor(data, device=dev, stream=s)
        out = gaio.empty(t.shape, "uint8", device=dev, kind="pinned", stream=s)
        gaio.copy(out, t, s)
        await s.fence()
        assert s.query()
        return out.host_array().copy(), gaio.loop_queue()

    got, q = asyncio.run(main())
    np.testing.assert_array_equal(got, data)
    assert q.pending == 0


def test_thousands_of_concurrent_awaits(dev):
    n, nstreams = 5000, 16

    async def main():
        streams = [gaio.Stream(dev) for _ in range(nstreams)]
        bufs = [gaio.empty((4096,), "uint8", device=dev, stream=s) for s in streams]

        async def job(i):
            s = streams[i % nstreams]
            bufs[i % nstreams].fill_bytes_(i & 255, s)
            await s.fence()
            return i

        got = await asyncio.gather(*(job(i) for i in range(n)))
        assert got == list(range(n))
        return gaio.loop_queue().pending

    assert asyncio.run(main()) == 0


def test_loop_never_blocks(dev):
    """While work runs, the loop keeps ticking: awaiting does not block it."""
    async def main():
        s = gaio.Stream(dev)
        keep = slow_work(s, rounds=6) if dev == "cpu" else slow_work(s, mib=256, rounds=40)
        ticks = 0
        done = False

        async def ticker():
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        tick_task = asyncio.create_task(ticker())
        await s.fence()
        done = True
        await tick_task
        del keep
        return ticks

    assert asyncio.run(main()) > 10


def test_cancelled_await_leaves_nothing_behind():
    async def main():
        s = gaio.Stream("cpu")
        keep = slow_work(s)
        fut = s.fence()
        q = gaio.loop_queue()
        tasks = [asyncio.create_task(_await(fut)) for _ in range(100)]
        await asyncio.sleep(0)  # every task is awaiting now
        assert q.pending == 100
        for t in tasks:
            t.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        # The work still runs to its end; its entries then come and are dropped.
        await asyncio.wait_for(_await(s.fence()), 30)
        for _ in range(1000):
            if q.pending == 0:
                break
            await asyncio.sleep(0.001)
        del keep
        return q.pending, fut.done()

    pending, done = asyncio.run(main())
    assert pending == 0 and done


async def _await(f):
    await f


def test_one_queue_per_loop_and_loops_in_threads():
    queues = []

    async def main():
        s = gaio.Stream("cpu")
        await s.fence()
        queues.append(gaio.loop_queue())

    asyncio.run(main())
    t = threading.Thread(target=lambda: asyncio.run(main()))
    t.start()
    t.join()
    assert len(queues) == 2 and queues[0] is not queues[1] and queues[0].fd != queues[1].fd
    del queues[:]
    gc.collect()  # the loops are gone, so are their queues (their fds closed)


def test_await_done_future_needs_no_loop_queue():
    f = gaio.Stream("cpu").fence()
    f.result()

    async def main():
        await f
        return gaio.aio._queues.get(asyncio.get_running_loop())

    assert asyncio.run(main()) is None


def test_loop_queue_outside_a_loop():
    with pytest.raises(RuntimeError):
        gaio.loop_queue()
