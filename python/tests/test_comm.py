"""gaio.Comm: collectives from Python, ranks as threads on the host backend (and, on a
machine with GPUs and NCCL, every GPU a rank), against numpy; awaited under asyncio;
grouped sends and receives; failures raised as gaio errors."""
from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import gaio


def run_ranks(n, body):
    """body(rank) on n threads; re-raises the first failure."""
    errors = []

    def wrap(r):
        try:
            body(r)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]


def inputs(seed, n, count, dtype):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return [(rng.integers(-8, 9, count) / 4).astype(dtype) for _ in range(n)]
    return [rng.integers(0 if dtype == np.uint8 else -3, 4, count).astype(dtype) for _ in range(n)]


REDUCE = {"sum": lambda a: np.sum(a, axis=0), "prod": lambda a: np.prod(a, axis=0),
          "min": lambda a: np.min(a, axis=0), "max": lambda a: np.max(a, axis=0),
          "avg": lambda a: np.mean(a.astype(np.float64), axis=0)}


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64, np.float16, np.float32])
@pytest.mark.parametrize("op", list(REDUCE))
def test_all_reduce_on_host_threads(seed, dtype, op):
    if op == "avg" and np.dtype(dtype).kind != "f":
        pytest.skip("avg takes floating-point dtypes")
    n, count = 4, 1000
    xs = inputs(seed, n, count, dtype)
    want = REDUCE[op](np.stack(xs)).astype(dtype)
    gid = gaio.comm.unique_id("cpu")
    got = [None] * n

    def body(r):
        comm = gaio.Comm(gid, n, r, "cpu")
        s = gaio.Stream("cpu")
        t = gaio.tensor(xs[r], device="cpu", stream=s)
        comm.all_reduce(t, op=op, stream=s).result(30)
        got[r] = t.numpy().copy()
        assert comm.joined.done()

    run_ranks(n, body)
    tol = 4e-3 if dtype == np.float16 else 1e-6
    for r in range(n):
        np.testing.assert_allclose(got[r].astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_gather_scatter_broadcast_reduce(seed):
    n, count = 3, 500
    xs = inputs(seed, n, n * count, np.float32)
    gid = gaio.comm.unique_id("cpu")
    out = {}

    def body(r):
        comm = gaio.Comm(gid, n, r, "cpu")
        s = gaio.Stream("cpu")
        x = gaio.tensor(xs[r][:count], device="cpu", stream=s)
        g = gaio.empty((n * count,), "float32", device="cpu")
        comm.all_gather(x, g, stream=s)
        full = gaio.tensor(xs[r], device="cpu", stream=s)
        part = gaio.empty((count,), "float32", device="cpu")
        comm.reduce_scatter(full, part, stream=s)
        b = gaio.tensor(xs[r][:count], device="cpu", stream=s)
        comm.broadcast(b, root=1, stream=s)
        red = gaio.tensor(xs[r][:count], device="cpu", stream=s)
        comm.reduce(red, op="max", root=2, stream=s).result(30)
        out[r] = (g.numpy().copy(), part.numpy().copy(), b.numpy().copy(), red.numpy().copy())

    run_ranks(n, body)
    stack = np.stack(xs)
    for r in range(n):
        g, part, b, red = out[r]
        np.testing.assert_array_equal(g, np.concatenate([x[:count] for x in xs]))
        np.testing.assert_allclose(part, stack[:, r * count:(r + 1) * count].sum(axis=0), rtol=1e-6)
        np.testing.assert_array_equal(b, xs[1][:count])
        if r == 2:
            np.testing.assert_array_equal(red, stack[:, :count].max(axis=0))


def test_local_ranks_awaited_and_all_to_all(seed):
    n, count = 3, 64
    comms = gaio.Comm.local(["cpu"] * n)
    assert [c.rank for c in comms] == list(range(n)) and all(c.size == n for c in comms)
    xs = inputs(seed, n, n * count, np.int32)

    async def main():
        streams = [gaio.Stream("cpu") for _ in range(n)]
        ts = [gaio.tensor(xs[r], device="cpu", stream=streams[r]) for r in range(n)]
        rs = [gaio.empty((n * count,), "int32", device="cpu") for _ in range(n)]
        with gaio.comm.group():
            for r in range(n):
                for k in range(n):
                    comms[r].send(ts[r][k * count:(k + 1) * count], k, stream=streams[r])
                    comms[r].recv(rs[r][k * count:(k + 1) * count], k, stream=streams[r])
        await asyncio.gather(*(s.fence() for s in streams))
        sums = [gaio.tensor(xs[r][:count], device="cpu", stream=streams[r]) for r in range(n)]
        await asyncio.gather(*(comms[r].all_reduce(sums[r], stream=streams[r]) for r in range(n)))
        return [r.numpy() for r in rs], [t.numpy() for t in sums]

    got, sums = asyncio.run(main())
    for r in range(n):
        for k in range(n):
            np.testing.assert_array_equal(got[r][k * count:(k + 1) * count], xs[k][r * count:(r + 1) * count])
        np.testing.assert_array_equal(sums[r], np.stack([x[:count] for x in xs]).sum(axis=0))


def test_split():
    n = 4
    gid = gaio.comm.unique_id("cpu")
    seen = {}

    def body(r):
        comm = gaio.Comm(gid, n, r, "cpu")
        sub = comm.split(r % 2, key=-r)
        s = gaio.Stream("cpu")
        t = gaio.tensor(np.array([r], np.int32), device="cpu", stream=s)
        sub.all_reduce(t, stream=s).result(30)
        seen[r] = (sub.rank, sub.size, int(t.numpy()[0]))
        assert comm.split(-1) is None or r == -1  # nobody joins a negative color

    run_ranks(n, body)
    assert seen == {0: (1, 2, 2), 1: (1, 2, 4), 2: (0, 2, 2), 3: (0, 2, 4)}


def test_errors_are_gaio_errors():
    comms = gaio.Comm.local(["cpu"] * 2)
    t = gaio.tensor(np.zeros(4, np.float32), device="cpu")
    with pytest.raises(gaio.InvalidArgumentError, match="op 'mean'"):
        comms[0].all_reduce(t, op="mean")
    with pytest.raises(gaio.InvalidArgumentError, match="root is 5"):
        comms[0].broadcast(t, root=5)
    with pytest.raises(gaio.InvalidArgumentError, match="256 bytes"):
        gaio.Comm(b"short", 2, 0, "cpu")
    # A rank that never comes, then an abort: the waiting rank's future fails.
    s = gaio.Stream("cpu")
    f = comms[0].all_reduce(gaio.tensor(np.ones(4, np.float32), device="cpu", stream=s), stream=s)
    comms[1].abort()
    with pytest.raises(gaio.DeviceError, match="aborted"):
        f.result(10)


@pytest.mark.gpu
def test_all_reduce_on_every_gpu(seed):
    gpus = [d for d in gaio.devices() if d.kind == "cuda"]
    try:
        gid = gaio.comm.unique_id(f"cuda:{gpus[0].ordinal}")
    except gaio.NotSupportedError as e:
        pytest.skip(f"SKIPPED: no NCCL: {e}")
    n, count = len(gpus), 4096
    xs = inputs(seed, n, count, np.float32)
    got = [None] * n

    def body(r):
        dev = f"cuda:{gpus[r].ordinal}"
        comm = gaio.Comm(gid, n, r, dev)
        s = gaio.Stream(dev)
        t = gaio.tensor(xs[r], device=dev, stream=s)
        comm.all_reduce(t, op="avg", stream=s).result(60)
        got[r] = t.numpy().copy()
        comm.close()

    run_ranks(n, body)
    want = np.mean(np.stack(xs).astype(np.float64), axis=0)
    for r in range(n):
        np.testing.assert_allclose(got[r], want, rtol=1e-6, atol=1e-6)
