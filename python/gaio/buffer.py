"""Buffers: refcounted memory from a context's pools (or wrapped memory)."""
from __future__ import annotations

from ctypes import byref, c_int, c_size_t, c_void_p
from typing import TYPE_CHECKING

from ._lib import lib
from .context import MEM_KINDS, Context, default_context
from .device import DeviceLike
from .errors import InvalidArgumentError, check

if TYPE_CHECKING:
    from .stream import Stream

__all__ = ["Buffer", "kind_code"]

_KIND_NAMES = {v: k for k, v in MEM_KINDS.items()}


def kind_code(kind: str) -> int:
    code = MEM_KINDS.get(kind)
    if code is None:
        raise InvalidArgumentError(f"memory kind {kind!r} is not one of {sorted(MEM_KINDS)}")
    return code


class Buffer:
    """Memory of one kind ('device', 'host', 'pinned', 'managed') on a context's device.
    Work in flight keeps its buffers alive: dropping a Buffer is always safe."""

    __slots__ = ("_h", "context", "size", "kind", "__weakref__")

    def __init__(self, size: int, kind: str = "device", context: Context | DeviceLike = 0,
                 stream: "Stream | None" = None) -> None:
        """Allocates ``size`` bytes; with ``stream``, stream-ordered from its context's pool."""
        self._h = None
        code = kind_code(kind)
        h = c_void_p()
        if stream is not None:
            check(lib.gaio_buffer_alloc_async(stream._h, code, size, byref(h)))
            ctx = stream.context
        else:
            ctx = context if isinstance(context, Context) else default_context(context)
            check(lib.gaio_buffer_alloc(ctx.handle, code, size, byref(h)))
        self._init(h.value, ctx)

    def _init(self, handle: int, ctx: Context) -> None:
        self._h, self.context = handle, ctx
        n, k = c_size_t(), c_int()
        check(lib.gaio_buffer_size(handle, byref(n)))
        check(lib.gaio_buffer_kind(handle, byref(k)))
        self.size, self.kind = n.value, _KIND_NAMES[k.value]

    @classmethod
    def _adopt(cls, handle: int, ctx: Context) -> "Buffer":
        b = cls.__new__(cls)
        b._h = None
        b._init(handle, ctx)
        return b

    def __del__(self) -> None:
        if self._h:
            lib.gaio_buffer_release(self._h)
            self._h = None

    @property
    def handle(self) -> int:
        """The gaio_buffer pointer, for C code."""
        return self._h

    @property
    def device_ptr(self) -> int:
        p = c_void_p()
        check(lib.gaio_buffer_device_ptr(self._h, byref(p)))
        return p.value or 0

    @property
    def host_ptr(self) -> int:
        """The host address ('host', 'pinned' and 'managed' buffers only)."""
        p = c_void_p()
        check(lib.gaio_buffer_host_ptr(self._h, byref(p)))
        return p.value or 0

    def __repr__(self) -> str:
        return f"<gaio.Buffer {self.size} bytes of {self.kind} memory on {self.context.device}>"
