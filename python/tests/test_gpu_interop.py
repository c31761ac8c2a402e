"""Zero-copy exchange and stream ordering with PyTorch and CuPy on a GPU.

Each ordering test puts a long GPU sleep in front of the producer's write, so a
consumer that were not ordered after it would read stale data."""
from __future__ import annotations

import numpy as np
import pytest

import gaio

pytestmark = pytest.mark.gpu

SLEEP_CYCLES = 200_000_000  # ~0.1 s on an H100 at 1.98 GHz


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("SKIPPED: torch sees no GPU")
    return torch


@pytest.fixture
def cupy():
    return pytest.importorskip("cupy")


def test_torch_to_gaio_zero_copy(torch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand((4, 32, 48, 3), device="cuda", generator=g)
    t = gaio.from_dlpack(x)
    assert t.device.kind == "cuda" and t.buffer.kind == "device"
    assert t.buffer.device_ptr + t.offset == x.data_ptr()
    assert t.shape == tuple(x.shape) and t.dtype == "float32"
    np.testing.assert_array_equal(t.numpy(), x.cpu().numpy())
    # Strided torch views come over with their strides.
    v = gaio.from_dlpack(x[:, 3:20, ::2])
    assert v.strides == tuple(x[:, 3:20, ::2].stride())
    np.testing.assert_array_equal(v.numpy(), x[:, 3:20, ::2].cpu().numpy())


def test_gaio_to_torch_zero_copy(torch, rng):
    data = rng.integers(0, 256, (3, 40, 50, 3), dtype=np.uint8)
    s = gaio.Stream("cuda")
    t = gaio.tensor(data, device="cuda", stream=s)
    x = torch.from_dlpack(t)  # versioned or legacy, whatever torch asks for
    assert x.data_ptr() == t.buffer.device_ptr + t.offset and x.device.type == "cuda"
    torch.testing.assert_close(x.cpu(), torch.from_numpy(data))
    # The capsule kept gaio's buffer alive after the tensor went.
    del t
    torch.testing.assert_close(x.cpu(), torch.from_numpy(data))


def test_gaio_between_torch_work_on_torch_stream(torch, seed):
    """torch writes x (after a sleep), gaio converts x -> y on the same torch stream,
    torch then reads y: every step is ordered by the stream alone."""
    side = torch.cuda.Stream()
    g = torch.Generator(device="cuda").manual_seed(seed)
    with torch.cuda.stream(side):
        x = torch.zeros((8, 64, 64, 3), device="cuda", dtype=torch.uint8)
        src = torch.randint(0, 256, x.shape, device="cuda", dtype=torch.uint8, generator=g)
        torch.cuda._sleep(SLEEP_CYCLES)
        x.copy_(src)
        gs = gaio.Stream.from_external(torch.cuda.current_stream())
        assert gs.native == side.cuda_stream
        gx = gaio.from_dlpack(x, stream=gs)
        y = torch.empty(x.shape, device="cuda", dtype=torch.float32)
        gaio.image.convert(gx, gaio.from_dlpack(y, stream=gs), scale=0.5, offset=-1.0, stream=gs)
        z = y * 2 + 2  # torch work after, on the same stream
    side.synchronize()
    torch.testing.assert_close(z, src.float(), rtol=0, atol=1e-5)


def test_torch_consumer_waits_for_gaio_stream(torch, rng):
    """torch.from_dlpack(t) passes its current stream; gaio makes it wait for t's stream."""
    side = torch.cuda.Stream()
    gs = gaio.Stream.from_external(side)
    data = rng.integers(0, 256, (1 << 22,), dtype=np.uint8)
    src = gaio.tensor(data, device="cuda", stream=gs)
    gs.synchronize()
    dst = gaio.empty(src.shape, "uint8", device="cuda", stream=gs)
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
    gaio.copy(dst, src, gs)  # queued behind the sleep
    x = torch.from_dlpack(dst)  # on torch's default stream
    total = int(x.sum(dtype=torch.int64).item())
    assert total == int(data.sum(dtype=np.int64))


def test_torch_stream_priorities_carry_over(torch):
    lo, hi = torch.cuda.Stream.priority_range() if hasattr(torch.cuda.Stream, "priority_range") else (0, -1)
    for p in sorted({0, -1, hi}):
        ts = torch.cuda.Stream(priority=p)
        gs = gaio.Stream.from_external(ts)
        assert gs.priority == -ts.priority, (p, ts.priority, gs.priority)
    ext = torch.cuda.ExternalStream(torch.cuda.Stream(priority=-1).cuda_stream)
    assert gaio.Stream.from_external(ext).priority == 1
    d = gaio.device("cuda:0")
    mine = gaio.Stream("cuda", priority=d.max_priority)
    wrapped = torch.cuda.ExternalStream(mine.native)
    assert wrapped.priority == -d.max_priority
    assert mine.__cuda_stream__() == (0, mine.native)
    assert gaio.Stream.from_external(0).native == 1 and gaio.Stream.from_external(0).priority == 0


def test_cuda_array_interface_with_torch(torch, rng):
    data = rng.standard_normal((5, 7)).astype(np.float32)
    t = gaio.tensor(data, device="cuda")
    cai = t.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (5, 7)
    assert cai["stream"] == t.stream.native and cai["data"][0] == t.buffer.device_ptr
    # PyTorch reads the interface's pointer but does not wait on its stream (CuPy
    # does, below): the copy into t must be finished first.
    t.stream.synchronize()
    x = torch.as_tensor(t, device="cuda")
    torch.testing.assert_close(x.cpu(), torch.from_numpy(data))


def test_cupy_both_ways_and_streams(cupy, rng):
    data = rng.standard_normal((6, 9)).astype(np.float16)
    t = gaio.tensor(data, device="cuda")
    a = cupy.asarray(t)  # CUDA Array Interface, synchronised on t's stream
    assert a.data.ptr == t.buffer.device_ptr
    np.testing.assert_array_equal(cupy.asnumpy(a), data)
    b = cupy.from_dlpack(t)
    np.testing.assert_array_equal(cupy.asnumpy(b), data)
    c = cupy.arange(60, dtype=cupy.float32).reshape(6, 10)
    g = gaio.from_dlpack(c)
    assert g.buffer.device_ptr == c.data.ptr
    np.testing.assert_array_equal(g.numpy(), cupy.asnumpy(c))
    # gaio between CuPy work on a CuPy stream.
    s = cupy.cuda.Stream(non_blocking=True)
    gs = gaio.Stream.from_external(s)
    assert gs.native == s.ptr
    with s:
        x = cupy.random.default_rng(1).integers(0, 256, (4, 32, 32, 3), dtype=cupy.uint8)
        y = cupy.empty(x.shape, dtype=cupy.float32)
        gaio.image.convert(gaio.from_dlpack(x, stream=gs), gaio.from_dlpack(y, stream=gs), scale=2.0, stream=gs)
        z = y - 2 * x.astype(cupy.float32)
    s.synchronize()
    assert float(cupy.abs(z).max()) == 0.0


def test_cupy_stream_priority(cupy):
    try:
        s = cupy.cuda.Stream(non_blocking=True, priority=-1)
    except TypeError:
        pytest.skip("SKIPPED: this CuPy makes no streams with priorities")
    assert gaio.Stream.from_external(s).priority == 1


def test_device_tensor_errors(torch):
    t = gaio.empty((4,), "float32", device="cuda")
    with pytest.raises(gaio.InvalidArgumentError, match="stream 0"):
        t.__dlpack__(stream=0)
    with pytest.raises(gaio.InvalidArgumentError, match="negative"):
        t.__dlpack__(stream=-3)
    with pytest.raises(gaio.InvalidArgumentError, match="gaio_dlpack_import"):
        gaio.from_dlpack(torch.zeros(3, device="cuda"), context=gaio.Context("cpu"))
