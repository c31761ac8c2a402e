"""Devices, contexts, streams, events, buffers, futures and errors."""
from __future__ import annotations

import builtins
import contextlib
import ctypes
import threading
import time

import numpy as np
import pytest

import gaio
from gaio._lib import lib as _libgaio
from gaio.errors import check as _check


def slow_work(stream: gaio.Stream, mib: int = 64, rounds: int = 8) -> gaio.Buffer:
    """Enough copying to keep a stream busy for a while (tens of ms on the host)."""
    a = gaio.Buffer(mib << 20, stream=stream)
    b = gaio.Buffer(mib << 20, stream=stream)
    src, dst = gaio.Tensor(a, 0, "uint8", (mib << 20,)), gaio.Tensor(b, 0, "uint8", (mib << 20,))
    src.fill_bytes_(3, stream)
    for _ in range(rounds):
        gaio.copy(dst, src, stream)
        gaio.copy(src, dst, stream)
    return b


# gaio_launch_host_func, which the package does not wrap: a host function holds a stream
# for as long as a test needs (on the CPU backend it runs on a gaio worker thread).
_HOST_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
_launch_host_func = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _HOST_FN, ctypes.c_void_p)(
    ("gaio_launch_host_func", _libgaio))
_GAIO_ERR_TIMEOUT = 4


@contextlib.contextmanager
def held(stream: gaio.Stream):
    """Holds `stream` at a host function until the block ends: nothing enqueued behind
    it in the block can complete before then. Waits for the stream on the way out."""
    gate = threading.Event()

    def hold(status, user):
        return 0 if gate.wait(30) else _GAIO_ERR_TIMEOUT  # a block that never ends fails the stream

    fn = _HOST_FN(hold)  # referenced until the stream has run it
    _check(_launch_host_func(stream.handle, fn, None))
    try:
        yield
    finally:
        gate.set()
        stream.synchronize()
        del fn


def test_devices():
    devs = gaio.devices()
    assert devs[0].kind == "cpu" and devs[0].index == 0 and str(devs[0]) == "cpu"
    assert gaio.device("cpu") == devs[0] and gaio.device(0) == devs[0]
    assert gaio.device_count() == len(devs)
    ok, why = gaio.backend_status("cpu")
    assert ok and why
    for d in devs[1:]:
        assert d.kind == "cuda" and gaio.device(f"cuda:{d.ordinal}") == d
    assert gaio.version() == 100


@pytest.mark.parametrize("spec, exc, words", [
    (99, gaio.NotFoundError, "no device 99"),
    ("tpu", gaio.InvalidArgumentError, "must be 'cpu' or 'cuda'"),
    ("cuda:x", gaio.InvalidArgumentError, "ordinal"),
    ("cpu:3", gaio.NotFoundError, "no cpu device 3"),
    (None, gaio.InvalidArgumentError, "names no device"),
    (2.5, gaio.InvalidArgumentError, "cannot read a device"),
])
def test_bad_device(spec, exc, words):
    with pytest.raises(exc, match=words):
        gaio.device(spec)


def test_context_and_pool(dev):
    ctx = gaio.Context(dev, rng_seed=7)
    assert ctx.device == gaio.device(dev)
    assert gaio.default_context(dev) is gaio.default_context(dev)
    b = gaio.Buffer(1 << 20, context=ctx)
    stats = ctx.pool_stats("device")
    assert stats["bytes_in_use"] >= 1 << 20 and stats["allocations"] >= 1
    del b
    ctx.synchronize()
    ctx.trim()
    with pytest.raises(gaio.InvalidArgumentError, match="kind 'gpu'"):
        ctx.pool_stats("gpu")


def test_stream_priority_and_errors(dev):
    d = gaio.device(dev)
    s = gaio.Stream(dev, priority=d.max_priority)
    assert s.priority == d.max_priority and s.flags == 0
    assert gaio.Stream(dev, flags=gaio.DEFERRED).flags == gaio.DEFERRED
    with pytest.raises(gaio.InvalidArgumentError, match="gaio_stream_create") as e:
        gaio.Stream(dev, priority=d.max_priority + 1)
    assert e.value.status == 1 and e.value.status_name == "GAIO_ERR_INVALID_ARG"
    assert isinstance(e.value, ValueError) and isinstance(e.value, gaio.Error)


def test_stream_protocols_on_host():
    s = gaio.Stream("cpu")
    assert s.native == 0
    with pytest.raises(gaio.NotSupportedError, match="host stream"):
        s.__cuda_stream__()
    with pytest.raises(gaio.NotSupportedError, match="not on a CUDA device"):
        gaio.Stream.from_external(5, context=gaio.default_context("cpu"))
    with pytest.raises(gaio.InvalidArgumentError, match="cannot read a CUDA stream"):
        gaio.Stream.from_external("stream")
    with pytest.raises(gaio.InvalidArgumentError, match="non-negative"):
        gaio.Stream.from_external(-4)
    with pytest.raises(gaio.InvalidArgumentError, match="already"):
        gaio.Stream.from_external(s)

    class Bad:
        def __cuda_stream__(self):
            return 7

    with pytest.raises(gaio.InvalidArgumentError, match="not \\(version, handle\\)"):
        gaio.Stream.from_external(Bad())


def test_event_orders_streams_and_times(dev, rng):
    a, b = gaio.Stream(dev), gaio.Stream(dev)
    data = rng.integers(0, 256, (512, 512), dtype=np.uint8)
    t = gaio.tensor(data, device=dev, stream=a)
    start = gaio.Event(dev).record(a)
    end = a.record(gaio.Event(dev))
    b.wait(end)
    out = gaio.empty(t.shape, "uint8", device=dev, stream=b)
    gaio.copy(out, t, b)
    b.synchronize()
    assert end.query() and start.query()
    assert start.elapsed_ms(end) >= 0
    np.testing.assert_array_equal(out.numpy(), data)
    with pytest.raises(gaio.InvalidArgumentError, match="not a gaio Stream"):
        gaio.Event(dev).record("s")
    with pytest.raises(gaio.InvalidArgumentError, match="gaio_event_elapsed_ms"):
        gaio.Event(dev, timing=False).record(a).elapsed_ms(gaio.Event(dev, timing=False).record(a))


def test_future_result_timeout_and_callbacks():
    s = gaio.Stream("cpu")
    called = threading.Event()
    seen = []

    def cb(fut):
        seen.append((threading.current_thread().name, fut.done()))
        called.set()

    with held(s):  # the fence cannot complete inside this block
        f = s.fence()
        with pytest.raises(gaio.TimeoutError, match="not complete after 0 s") as e:
            f.result(timeout=0)
        assert isinstance(e.value, builtins.TimeoutError)
        # a wait that timed out leaves the future pending, and a second one times out too
        assert not f.done() and not s.query()
        with pytest.raises(gaio.TimeoutError):
            f.result(timeout=0.01)
        assert not f.done()
        # added while the future is pending: runs once it completes, not now
        f.add_done_callback(cb)
        assert not called.is_set() and seen == []
    f.result(timeout=30)
    assert f.done() and f.exception() is None
    assert called.wait(10)
    assert seen[0][1] is True
    # A complete future runs the callback at once, on this thread.
    later = []
    f.add_done_callback(lambda fut: later.append(threading.current_thread()))
    assert later == [threading.current_thread()]
    with pytest.raises(gaio.InvalidArgumentError, match="not callable"):
        f.add_done_callback(3)
    with pytest.raises(gaio.InvalidArgumentError, match="negative"):
        f.result(timeout=-1)


def test_result_releases_the_gil():
    """A thread blocked in Future.result must not stop Python work elsewhere."""
    s = gaio.Stream("cpu")
    keep = slow_work(s, rounds=12)
    f = s.fence()
    done = threading.Event()
    t = threading.Thread(target=lambda: (f.result(), done.set()))
    t.start()
    ticks, t0 = 0, time.perf_counter()
    while not done.is_set() and time.perf_counter() - t0 < 30:
        ticks += 1
    t.join()
    assert ticks > 1000
    del keep


def test_wait_all(dev):
    streams = [gaio.Stream(dev) for _ in range(4)]
    fs = [s.fence() for s in streams]
    j = gaio.wait_all(fs)
    j.result(10)
    assert j.done()
    with pytest.raises(gaio.InvalidArgumentError, match="not a gaio.Future"):
        gaio.wait_all([fs[0], 3])
    with pytest.raises(TypeError):
        gaio.Future()


def test_buffer_errors(dev):
    with pytest.raises(gaio.InvalidArgumentError, match="memory kind 'vram'"):
        gaio.Buffer(16, "vram", dev)
    with pytest.raises(gaio.InvalidArgumentError, match="gaio_buffer_alloc"):
        gaio.Buffer(0, "device", dev)
    b = gaio.Buffer(64, "device", dev)
    assert b.size == 64 and b.kind == "device" and "64 bytes" in repr(b)
    with pytest.raises(gaio.InvalidArgumentError, match="gaio_buffer_host_ptr"):
        b.host_ptr
    assert gaio.Buffer(64, "pinned", dev).host_ptr != 0


def test_configure_after_start_is_a_state_error():
    gaio.default_context("cpu")
    with pytest.raises(gaio.StateError, match="gaio_configure"):
        gaio.configure(cpu_workers=2)
    with pytest.raises(gaio.InvalidArgumentError, match="wait_policy"):
        gaio.configure(wait_policy="nap")


def test_error_classes_cover_every_status():
    from gaio.errors import error_for
    for status in range(1, 13):  # GAIO_ERR_INVALID_ARG .. GAIO_ERR_USER (13 is retired)
        e = error_for(status, "msg")
        assert isinstance(e, gaio.Error) and type(e) is not gaio.Error
        assert e.status == status and str(e) == "msg"
        assert e.status_name.startswith("GAIO_ERR_") and e.status_name != "GAIO_ERR_UNKNOWN"
