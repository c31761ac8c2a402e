"""Tensors: a strided view (dtype, shape, element strides) of a gaio buffer, with the
DLPack and CUDA Array Interface protocols, numpy round trips and copies.

A tensor remembers the stream of the last gaio op submitted through Python that
used it (``tensor.stream``). Its protocols order consumers after that point:
``__dlpack__(stream=s)`` makes the consumer's stream ``s`` wait for it with an
event, ``__cuda_array_interface__`` names it in its ``stream`` field, and a host
consumer (numpy) waits for it. Work on several streams is ordered by the caller
with events, as in CUDA."""
from __future__ import annotations

import ctypes
import math
from typing import Any, Iterable, Sequence

from . import dlpack as _dl
from ._lib import MAX_NDIM, DlpackView, lib
from .buffer import Buffer
from .context import Context, default_context
from .device import Device, DeviceLike, device as _to_device
from .errors import InvalidArgumentError, NotSupportedError, check, raise_status
from .event import Event
from .stream import CU_STREAM_LEGACY, Stream

__all__ = ["Tensor", "DTYPES", "empty", "tensor", "from_dlpack", "copy"]

#: gaio's dtypes by name, and their gaio_dtype codes
DTYPES = {"uint8": 1, "uint16": 2, "int16": 3, "float16": 4, "float32": 5, "int32": 6, "int64": 7, "bfloat16": 8}
_NAMES = {v: k for k, v in DTYPES.items()}
_SIZES = {1: 1, 2: 2, 3: 2, 4: 2, 5: 4, 6: 4, 7: 8, 8: 2}
_TYPESTR = {1: "|u1", 2: "<u2", 3: "<i2", 4: "<f2", 5: "<f4", 6: "<i4", 7: "<i8"}
_ALIASES = {"u8": "uint8", "u16": "uint16", "s16": "int16", "i16": "int16", "f16": "float16", "half": "float16",
            "f32": "float32", "float": "float32",
            "s32": "int32", "i32": "int32", "s64": "int64", "i64": "int64", "bf16": "bfloat16"}


def dtype_code(dtype: Any) -> int:
    if isinstance(dtype, int) and not isinstance(dtype, bool) and dtype in _NAMES:
        return dtype
    name = getattr(dtype, "name", None) if not isinstance(dtype, str) else dtype  # numpy dtypes, np.float32
    if name is None and isinstance(dtype, type):
        name = dtype.__name__
    if name is None:
        name = str(dtype).replace("torch.", "")
    name = _ALIASES.get(name, name)
    code = DTYPES.get(name)
    if code is None:
        raise NotSupportedError(f"dtype {dtype!r} is not one gaio has ({', '.join(DTYPES)})")
    return code


class Tensor:
    """A strided view of a gaio buffer. Make one with ``gaio.empty``, ``gaio.tensor``
    (a copy of an array) or ``gaio.from_dlpack`` (zero-copy)."""

    __slots__ = ("_buffer", "_offset", "_dtype", "_shape", "_strides", "read_only", "stream", "_contig", "_nbytes",
                 "_images", "__weakref__")

    def __init__(self, buffer: Buffer, offset: int, dtype: Any, shape: Sequence[int],
                 strides: Sequence[int] | None = None, stream: Stream | None = None, read_only: bool = False) -> None:
        if not isinstance(buffer, Buffer):
            raise InvalidArgumentError(f"Tensor: buffer is {type(buffer).__name__}, not a gaio.Buffer")
        shape = tuple(int(n) for n in shape)
        if not 1 <= len(shape) <= MAX_NDIM:
            raise NotSupportedError(f"Tensor: {len(shape)} dimensions; gaio takes 1 to {MAX_NDIM}")
        if strides is None:
            strides = _compact(shape)
        strides = tuple(int(s) for s in strides)
        if len(strides) != len(shape):
            raise InvalidArgumentError(f"Tensor: {len(strides)} strides for {len(shape)} dimensions")
        self._buffer, self._offset, self._dtype = buffer, int(offset), dtype_code(dtype)
        self._shape, self._strides, self.read_only = shape, strides, bool(read_only)
        self.stream = stream
        self._contig = strides == _compact(shape)
        self._nbytes = math.prod(shape) * _SIZES[self._dtype]
        self._images = None  # gaio_image descriptors by layout, made by gaio.image on first use
        if any(n < 1 for n in shape) or any(st < 0 for st in strides):
            raise InvalidArgumentError(f"Tensor: shape {list(shape)} must be >= 1 and strides {list(strides)} >= 0")
        span = _span_bytes(shape, strides, _SIZES[self._dtype])
        if self._offset < 0 or self._offset + span > buffer.size:
            raise InvalidArgumentError(f"Tensor: offset {self._offset} + the {span} bytes the shape and strides span "
                                       f"exceed the buffer's {buffer.size} bytes")

    # ---- description (a tensor is a fixed view: these do not change) ----------

    @property
    def buffer(self) -> Buffer:
        return self._buffer

    @property
    def offset(self) -> int:
        """Bytes from the buffer's start to element [0, ...]."""
        return self._offset

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def strides(self) -> tuple[int, ...]:
        """In elements, as DLPack and PyTorch count them (numpy counts bytes)."""
        return self._strides

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (not of the span a strided view covers)."""
        return self._nbytes

    @property
    def dtype(self) -> str:
        return _NAMES[self._dtype]

    @property
    def itemsize(self) -> int:
        return _SIZES[self._dtype]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def context(self) -> Context:
        return self.buffer.context

    @property
    def device(self) -> Device:
        return self.buffer.context.device

    def is_contiguous(self) -> bool:
        return self._contig

    def _view(self) -> DlpackView:
        v = DlpackView()
        v.buffer, v.offset, v.dtype, v.ndim = self.buffer._h, self.offset, self._dtype, len(self.shape)
        for i, (n, s) in enumerate(zip(self.shape, self.strides)):
            v.shape[i], v.strides[i] = n, s
        v.read_only = int(self.read_only)
        return v

    def __repr__(self) -> str:
        return (f"<gaio.Tensor {self.dtype}{list(self.shape)} on {self.device} ({self.buffer.kind})"
                + ("" if self.is_contiguous() else f" strides {list(self.strides)}") + ">")

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: int | slice) -> "Tensor":
        """A view of one index (or a slice with step 1) of the first dimension."""
        n = self.shape[0]
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if step != 1 or stop <= start:
                raise NotSupportedError(f"Tensor[{index}]: gaio views take non-empty slices with step 1")
            shape = (stop - start,) + self.shape[1:]
            return self._sub(start, shape, self.strides)
        if isinstance(index, bool) or not isinstance(index, int):
            raise InvalidArgumentError(f"Tensor[{index!r}]: index the first dimension with an int or a slice")
        if not -n <= index < n:  # IndexError, so that iteration stops
            raise IndexError(f"Tensor[{index}]: out of range for the first dimension of {n}")
        index %= n
        if self.ndim == 1:
            return self._sub(index, (1,), self.strides)
        return self._sub(index, self.shape[1:], self.strides[1:])

    def _sub(self, first: int, shape: tuple, strides: tuple) -> "Tensor":
        return Tensor(self.buffer, self.offset + first * self.strides[0] * self.itemsize, self._dtype, shape, strides,
                      self.stream, self.read_only)

    def reshape(self, *shape: int | Sequence[int]) -> "Tensor":
        """A view with another shape of a contiguous tensor (one dimension may be -1)."""
        dims = list(shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
        if dims.count(-1) > 1:
            raise InvalidArgumentError("Tensor.reshape: at most one dimension may be -1")
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            dims[dims.index(-1)] = self.size // known if known else 0
        if math.prod(dims) != self.size:
            raise InvalidArgumentError(f"Tensor.reshape: {tuple(dims)} does not hold {self.size} elements")
        if not self.is_contiguous():
            raise NotSupportedError("Tensor.reshape: the tensor is not contiguous; copy it first")
        return Tensor(self.buffer, self.offset, self._dtype, dims, None, self.stream, self.read_only)

    # ---- copies ------------------------------------------------------------------

    def copy_(self, src: "Tensor | Any", stream: Stream | None = None) -> "Tensor":
        """Copies ``src`` (a gaio tensor, or any DLPack / numpy array) into this tensor,
        asynchronously on ``stream`` (default: this tensor's last stream, else its
        context's default stream). Returns self."""
        s = _stream_for(stream, self)
        if not isinstance(src, Tensor):
            src = from_dlpack(src, context=self.context, stream=s)
        copy(self, src, s)
        return self

    def to(self, device: DeviceLike | Context, stream: Stream | None = None, kind: str = "device") -> "Tensor":
        """A copy on another device (or memory kind), made asynchronously on ``stream``
        (default: the target context's default stream, ordered after this tensor's work)."""
        ctx = device if isinstance(device, Context) else default_context(device)
        s = stream if stream is not None else ctx.default_stream
        if self.stream is not None and self.stream != s:
            s.wait(self.stream.record(Event(self.stream.context, timing=False)))
        out = empty(self.shape, self.dtype, context=ctx, kind=kind, stream=s)
        copy(out, self, s)
        return out

    def numpy(self) -> Any:
        """A numpy copy. Waits for the work that uses the tensor (without the GIL)."""
        import numpy as np

        out = np.empty(self.shape, dtype=self.dtype)
        s = _stream_for(None, self)
        dst = from_dlpack(out, context=self.context)
        copy(dst, self, s)
        s.synchronize()
        return out

    def host_array(self) -> Any:
        """A writable numpy view (no copy) of a host-reachable tensor ('host', 'pinned' or
        'managed' memory). Reading it while work in flight writes the tensor is a race:
        wait on a future first."""
        import numpy as np

        base = self.buffer.host_ptr + self.offset
        span = _span_bytes(self.shape, self.strides, self.itemsize)
        raw = (ctypes.c_char * span).from_address(base)
        raw._gaio_owner = self  # the array's base is raw, which keeps the tensor (and its buffer) alive
        return np.ndarray(self.shape, dtype=self.dtype, buffer=raw,
                          strides=tuple(s * self.itemsize for s in self.strides))

    def fill_bytes_(self, value: int, stream: Stream | None = None) -> "Tensor":
        """Sets every byte of a contiguous tensor to ``value`` (0..255), asynchronously."""
        if not self.is_contiguous():
            raise NotSupportedError("Tensor.fill_bytes_: the tensor is not contiguous")
        s = _stream_for(stream, self)
        check(lib.gaio_memset_async(s._h, self.buffer._h, self.offset, value, self.nbytes))
        self.stream = s
        return self

    # ---- protocols ---------------------------------------------------------------

    def __dlpack_device__(self) -> tuple[int, int]:
        dev = self.device
        code = _dl.device_code(self.buffer.kind, dev.kind)
        return (code, dev.ordinal if code == _dl.DL_CUDA else 0)

    def __dlpack__(self, stream: Any = None, *, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """The DLPack protocol. ``stream`` follows the Array API: None or 1 is the legacy
        default stream, 2 the per-thread default stream, a larger int a CUDA stream
        handle, -1 no synchronization. Returns a versioned capsule when
        ``max_version >= (1, 0)``, a legacy one otherwise."""
        mine = self.__dlpack_device__()
        src = self
        if dl_device is not None and tuple(dl_device) != mine:
            if copy is False:
                raise BufferError(f"__dlpack__: dl_device {tuple(dl_device)} differs from the tensor's {mine} and "
                                  "copy=False")
            raise BufferError(f"__dlpack__: export to another device ({tuple(dl_device)} from {mine}) is not "
                              "supported; use Tensor.to() first")
        _dl.check_stream_arg(stream, mine[0])
        if copy:
            src = self.to(self.context, stream=None, kind=self.buffer.kind)
        src._order_for_consumer(stream, mine[0])
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _dl.to_capsule(src._view(), versioned)

    def _order_for_consumer(self, stream: Any, dl_type: int) -> None:
        producer = self.stream
        if producer is None or stream == -1:
            return
        if dl_type != _dl.DL_CUDA:  # a host consumer reads at once
            producer.synchronize()
            return
        handle = CU_STREAM_LEGACY if stream is None else stream
        if producer.native == handle:
            return
        ev = Event(producer.context, timing=False).record(producer)
        consumer = Stream.from_external(handle, context=self.context)
        consumer.wait(ev)

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface version 3 (device, pinned and managed memory of a GPU)."""
        if self.device.kind != "cuda" or self.buffer.kind == "host":
            raise AttributeError("__cuda_array_interface__: the tensor is not in memory a CUDA device reaches")
        if self._dtype not in _TYPESTR:  # bfloat16: no typestr (use DLPack)
            raise AttributeError(f"__cuda_array_interface__ has no typestr for {self.dtype} (exchange it by DLPack)")
        ptr = self.buffer.device_ptr + self.offset
        strides = None if self.is_contiguous() else tuple(s * self.itemsize for s in self.strides)
        return {"shape": self.shape, "typestr": _TYPESTR[self._dtype], "data": (ptr, self.read_only),
                "version": 3, "strides": strides, "descr": [("", _TYPESTR[self._dtype])],
                "stream": self.stream.native if self.stream is not None else None}


# ---- making tensors ----------------------------------------------------------------


def empty(shape: Sequence[int] | int, dtype: Any = "float32", *, device: DeviceLike = 0,
          context: Context | None = None, kind: str = "device", stream: Stream | None = None) -> Tensor:
    """An uninitialised contiguous tensor. With ``stream`` the memory is allocated in
    stream order from that stream's context."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    code = dtype_code(dtype)
    if any(not isinstance(n, int) or n < 1 for n in shape):
        raise InvalidArgumentError(f"gaio.empty: shape {shape} must hold positive ints")
    if stream is not None:
        ctx = stream.context
    else:
        ctx = context if context is not None else default_context(device)
    buf = Buffer(math.prod(shape) * _SIZES[code], kind, ctx, stream)
    return Tensor(buf, 0, code, shape, None, stream)


def tensor(data: Any, *, device: DeviceLike = 0, context: Context | None = None, kind: str = "device",
           stream: Stream | None = None) -> Tensor:
    """A copy of an array (numpy, or anything with ``__dlpack__``) on a device,
    made asynchronously on ``stream`` (default: the context's default stream). The
    source stays alive until the copy has run."""
    ctx = stream.context if stream is not None else (context if context is not None else default_context(device))
    s = stream if stream is not None else ctx.default_stream
    if not hasattr(data, "__dlpack__"):
        import numpy as np
        data = np.asarray(data)
    src = data if isinstance(data, Tensor) else from_dlpack(data, context=ctx, stream=s)
    out = empty(src.shape, src.dtype, context=ctx, kind=kind, stream=s)
    copy(out, src, s)
    return out


def from_dlpack(obj: Any, *, context: Context | None = None, device: DeviceLike | None = None,
                stream: Stream | None = None) -> Tensor:
    """A gaio tensor over the memory of any DLPack producer (PyTorch, CuPy, numpy, JAX,
    another gaio tensor), without a copy. The producer's memory stays alive until
    gaio's last use ends; gaio never writes a read-only one.

    For CUDA memory, the producer orders its pending work before ``stream`` (default:
    the context's default stream), which becomes the tensor's stream."""
    if isinstance(obj, Tensor):
        return obj
    if not hasattr(obj, "__dlpack__"):
        if type(obj).__name__ == "PyCapsule":
            return _from_capsule(obj, context or default_context(0 if device is None else device), None)
        raise InvalidArgumentError(f"gaio.from_dlpack: {type(obj).__name__} has no __dlpack__")
    dev_type, dev_id = obj.__dlpack_device__()
    if context is None:
        if device is None:
            device = "cpu" if dev_type == _dl.DL_CPU else f"cuda:{dev_id}"
        context = stream.context if stream is not None else default_context(device)
    if dev_type == _dl.DL_CUDA:
        s = stream if stream is not None else context.default_stream
        arg: Any = s.native if context.device.kind == "cuda" else None
    else:
        s, arg = None, None
    try:
        cap = obj.__dlpack__(stream=arg, max_version=(1, 1))
    except TypeError:  # a producer older than DLPack 1.0's keywords
        cap = obj.__dlpack__(stream=arg)
    return _from_capsule(cap, context, s)


def _from_capsule(cap: Any, ctx: Context, stream: Stream | None) -> Tensor:
    view, released, ptr, versioned = _dl.import_capsule(cap, ctx.handle)
    _dl.release_when_done(released, ptr, versioned)  # the deleter runs on the dispatcher, after gaio's last use
    buf = Buffer._adopt(view.buffer, ctx)
    n = view.ndim
    return Tensor(buf, view.offset, view.dtype, view.shape[:n], view.strides[:n], stream, bool(view.read_only))


# ---- copies ------------------------------------------------------------------------


def copy(dst: Tensor, src: Tensor, stream: Stream | None = None) -> None:
    """dst[...] = src[...] on ``stream`` (default: dst's last stream, else its context's
    default stream), asynchronously: equal shapes and dtypes, any strides, devices and
    memory kinds. Contiguous runs go as one copy, pitched ones as 2D copies."""
    if type(stream) is Stream and type(dst) is Tensor and type(src) is Tensor and dst._contig and src._contig \
            and dst._shape == src._shape and dst._dtype == src._dtype and not dst.read_only:  # the common case, kept short
        st = _memcpy(stream._h, dst._buffer._h, dst._offset, src._buffer._h, src._offset, dst._nbytes)
        if st:
            raise_status(st)
        dst.stream = src.stream = stream
        return
    if not isinstance(dst, Tensor) or not isinstance(src, Tensor):
        raise InvalidArgumentError("gaio.copy: dst and src must be gaio Tensors")
    stream = _stream_for(stream, dst)
    if dst.shape != src.shape:
        raise InvalidArgumentError(f"gaio.copy: shapes differ: dst {list(dst.shape)}, src {list(src.shape)}")
    if dst._dtype != src._dtype:
        raise InvalidArgumentError(f"gaio.copy: dtypes differ: dst {dst.dtype}, src {src.dtype}")
    if dst.read_only:
        raise InvalidArgumentError("gaio.copy: dst is read-only (its producer said so)")
    es, shape = dst.itemsize, dst.shape
    # The innermost dimensions that are compact in both: one run of `inner` elements.
    k, inner = len(shape), 1
    while k > 0 and dst.strides[k - 1] == inner and src.strides[k - 1] == inner:
        k -= 1
        inner *= shape[k]
    sh, dh, sb, db = stream._h, dst.buffer._h, src.buffer._h, dst.buffer._h
    if k == 0:
        st = lib.gaio_memcpy_async(sh, dh, dst.offset, sb, src.offset, inner * es)
    else:  # dimension k-1 as rows of a 2D copy, the ones before it looped over
        rows = shape[k - 1]
        outer = shape[:k - 1]
        st = 0
        for idx in _indices(outer):
            do = dst.offset + es * sum(i * s for i, s in zip(idx, dst.strides))
            so = src.offset + es * sum(i * s for i, s in zip(idx, src.strides))
            st = lib.gaio_memcpy_2d_async(sh, dh, do, dst.strides[k - 1] * es, sb, so, src.strides[k - 1] * es,
                                          inner * es, rows)
            if st:
                break
    if st:
        raise_status(st)
    dst.stream = src.stream = stream


_memcpy = lib.gaio_memcpy_async


def _indices(shape: Sequence[int]) -> Iterable[tuple[int, ...]]:
    if not shape:
        yield ()
        return
    for i in range(shape[0]):
        for rest in _indices(shape[1:]):
            yield (i,) + rest


def _compact(shape: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def _span_bytes(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> int:
    return (sum((n - 1) * s for n, s in zip(shape, strides)) + 1) * itemsize


def _stream_for(stream: Stream | None, t: Tensor) -> Stream:
    if stream is not None:
        if not isinstance(stream, Stream):
            raise InvalidArgumentError(f"stream is {type(stream).__name__}, not a gaio.Stream")
        return stream
    return t.stream if t.stream is not None else t.context.default_stream


