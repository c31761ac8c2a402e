"""DLPack and numpy round trips, zero-copy both ways, and the protocol's rules."""
from __future__ import annotations

import gc
import time

import numpy as np
import pytest

import gaio
from gaio import dlpack as gdl

DTYPES = ["uint8", "uint16", "int16", "float16", "float32"]


def random_array(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip(dev, rng, dtype):
    a = random_array(rng, (3, 17, 5), dtype)
    s = gaio.Stream(dev)
    t = gaio.tensor(a, device=dev, stream=s)
    assert t.shape == a.shape and t.dtype == dtype and t.stream == s
    np.testing.assert_array_equal(t.numpy(), a)
    # Strided views of both sides.
    np.testing.assert_array_equal(t[1].numpy(), a[1])
    np.testing.assert_array_equal(t[1:3].numpy(), a[1:3])
    back = gaio.tensor(a[:, 2:9, 1:4], device=dev, stream=s)
    np.testing.assert_array_equal(back.numpy(), a[:, 2:9, 1:4])


def test_zero_copy_from_numpy(rng):
    a = random_array(rng, (4, 6), "float32")
    t = gaio.from_dlpack(a)
    assert t.buffer.kind == "managed" and t.device.kind == "cpu"
    assert t.buffer.device_ptr == a.ctypes.data  # the same memory
    v = np.from_dlpack(t)  # and back, still the same memory
    assert v.ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(v, a)
    a[0, 0] = 1234.5
    assert v[0, 0] == 1234.5
    # gaio writes into numpy's memory: an op's output lands in the array.
    out = np.zeros((4, 6), np.float32)
    gaio.from_dlpack(out).copy_(gaio.tensor(a))
    gaio.default_context().synchronize()
    np.testing.assert_array_equal(out, a)


def test_producer_memory_outlives_gaio_use(rng):
    """The numpy array stays alive until gaio's last use, then is let go."""
    import weakref

    class Owner(np.ndarray):
        pass

    a = random_array(rng, (1 << 20,), "uint8").view(Owner)
    ref = weakref.ref(a)
    s = gaio.Stream("cpu")
    t = gaio.from_dlpack(a, stream=s)
    dst = gaio.empty(a.shape, "uint8", stream=s)
    gaio.copy(dst, t, s)
    want = np.array(a)
    del a, t
    gc.collect()
    s.synchronize()
    for _ in range(200):  # the dispatcher thread runs numpy's deleter
        gc.collect()
        if ref() is None:
            break
        time.sleep(0.01)
    assert ref() is None
    np.testing.assert_array_equal(dst.numpy(), want)


def test_capsules_versioned_and_legacy(rng):
    t = gaio.tensor(random_array(rng, (2, 3), "int16"))
    cap = t.__dlpack__(max_version=(1, 1))
    assert gdl._is_valid(cap, b"dltensor_versioned")
    legacy = t.__dlpack__()
    assert gdl._is_valid(legacy, b"dltensor")
    assert gdl._is_valid(t.__dlpack__(None), b"dltensor")  # stream positionally, for older consumers
    assert gdl._is_valid(t.__dlpack__(max_version=(0, 8)), b"dltensor")
    # Consumed capsules are renamed and cannot be imported twice; unconsumed ones free
    # their tensor when dropped (no leak: the buffer's refcount goes back).
    g = gaio.from_dlpack(cap)
    np.testing.assert_array_equal(g.numpy(), t.numpy())
    assert gdl._is_valid(cap, b"used_dltensor_versioned")
    with pytest.raises(gaio.InvalidArgumentError, match="consumed already"):
        gaio.from_dlpack(cap)
    with pytest.raises(gaio.InvalidArgumentError, match="not a DLPack capsule"):
        gdl.import_capsule(object(), gaio.default_context().handle)
    del legacy
    gc.collect()
    assert t.__dlpack_device__() == (gdl.DL_CPU, 0)


def test_dlpack_argument_rules(rng):
    t = gaio.tensor(random_array(rng, (8,), "uint8"))
    with pytest.raises(gaio.NotSupportedError, match="only None"):
        t.__dlpack__(stream=5)
    with pytest.raises(gaio.InvalidArgumentError, match="not None or an int"):
        t.__dlpack__(stream="s")
    assert t.__dlpack__(stream=-1) is not None  # no synchronization asked
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(dl_device=(gdl.DL_CUDA, 0), copy=False)
    with pytest.raises(BufferError, match="not supported"):
        t.__dlpack__(dl_device=(gdl.DL_CUDA, 0))
    copied = np.from_dlpack(gaio.from_dlpack(t.__dlpack__(copy=True, max_version=(1, 0))))
    np.testing.assert_array_equal(copied, t.numpy())
    assert not hasattr(t, "__cuda_array_interface__")  # host memory


def test_unsupported_producers():
    with pytest.raises(gaio.NotSupportedError, match="gaio_dlpack_import"):
        gaio.from_dlpack(np.zeros(3, np.float64))
    with pytest.raises(gaio.InvalidArgumentError, match="has no __dlpack__"):
        gaio.from_dlpack([1, 2, 3])
    with pytest.raises(gaio.NotSupportedError, match="dtype"):
        gaio.empty((2,), "float64")


def test_tensor_views_and_checks(rng):
    b = gaio.Buffer(64)
    with pytest.raises(gaio.InvalidArgumentError, match="exceed the buffer's 64 bytes"):
        gaio.Tensor(b, 0, "float32", (4, 5))
    with pytest.raises(gaio.InvalidArgumentError, match="strides"):
        gaio.Tensor(b, 0, "uint8", (4,), (-1,))
    with pytest.raises(gaio.NotSupportedError, match="1 to 8"):
        gaio.Tensor(b, 0, "uint8", (1,) * 9)
    t = gaio.tensor(random_array(rng, (6, 4), "float32"))
    assert t.reshape(-1, 3).shape == (8, 3) and t.reshape(24).ndim == 1
    with pytest.raises(gaio.InvalidArgumentError, match="does not hold"):
        t.reshape(5, 5)
    with pytest.raises(IndexError, match="out of range"):
        t[6]
    with pytest.raises(gaio.InvalidArgumentError, match="shapes differ"):
        gaio.copy(t, t[1:], t.context.default_stream)
    with pytest.raises(gaio.InvalidArgumentError, match="dtypes differ"):
        gaio.copy(gaio.empty((6, 4), "float16"), t, t.context.default_stream)


def test_host_array_is_a_writable_view(rng):
    t = gaio.empty((5, 7), "uint16", kind="pinned")
    h = t.host_array()
    data = random_array(rng, (5, 7), "uint16")
    h[...] = data
    np.testing.assert_array_equal(t.numpy(), data)
    del t
    gc.collect()
    h[0, 0] = 1  # the view keeps the buffer alive
    with pytest.raises(gaio.InvalidArgumentError, match="gaio_buffer_host_ptr"):
        gaio.empty((2,), "uint8").host_array()
