"""Contexts: per-device state (a default stream, memory pools, a random generator)."""
from __future__ import annotations

import threading
from ctypes import byref, c_int, c_void_p
from typing import TYPE_CHECKING

from ._lib import ContextOptions, PoolStats, lib
from .device import Device, DeviceLike, device as _to_device
from .errors import InvalidArgumentError, check

if TYPE_CHECKING:
    from .stream import Stream

__all__ = ["Context", "default_context", "MEM_KINDS"]

MEM_KINDS = {"device": 0, "host": 1, "pinned": 2, "managed": 3}


class Context:
    """A gaio context on one device. Many may share a device; most programs use
    ``gaio.default_context(device)``. Objects made from a context keep it alive."""

    __slots__ = ("_h", "device", "_default_stream", "__weakref__")

    def __init__(self, device: DeviceLike = 0, *, pool_release_threshold: int = 0, rng_seed: int = 0) -> None:
        self._h = None
        dev = _to_device(device)
        h = c_void_p()
        check(lib.gaio_context_create(dev.index, byref(ContextOptions(pool_release_threshold, rng_seed)), byref(h)))
        self._h = h.value
        self.device: Device = dev
        self._default_stream: Stream | None = None

    def __del__(self) -> None:
        if self._h:
            lib.gaio_context_release(self._h)
            self._h = None

    @property
    def handle(self) -> int:
        """The gaio_context pointer, for C code that shares this context."""
        return self._h

    @property
    def default_stream(self) -> "Stream":
        """The context's default stream: priority 0, no flags."""
        if self._default_stream is None:
            from .stream import Stream
            h = c_void_p()
            check(lib.gaio_context_default_stream(self._h, byref(h)))
            check(lib.gaio_stream_retain(h.value))  # the Stream object owns a reference of its own
            self._default_stream = Stream._adopt(h.value, self)
        return self._default_stream

    def synchronize(self) -> None:
        """Blocks (without the GIL) until every stream of the context has drained."""
        check(lib.gaio_context_synchronize(self._h))

    def trim(self, keep: int = 0) -> None:
        """Gives cached pool memory back to the system, keeping at most ``keep`` bytes."""
        check(lib.gaio_context_trim(self._h, keep))

    def pool_stats(self, kind: str = "device") -> dict[str, int]:
        if kind not in MEM_KINDS:
            raise InvalidArgumentError(f"Context.pool_stats: kind {kind!r} is not one of {sorted(MEM_KINDS)}")
        s = PoolStats()
        check(lib.gaio_context_pool_stats(self._h, MEM_KINDS[kind], byref(s)))
        return {"bytes_in_use": s.bytes_in_use, "bytes_cached": s.bytes_cached, "allocations": s.allocations,
                "reuses": s.reuses}

    def __repr__(self) -> str:
        return f"<gaio.Context on {self.device}>"


_defaults: dict[int, Context] = {}
_defaults_lock = threading.Lock()


def default_context(device: DeviceLike = 0) -> Context:
    """The process-wide context of a device, made on first use."""
    dev = _to_device(device)
    ctx = _defaults.get(dev.index)
    if ctx is None:
        with _defaults_lock:
            ctx = _defaults.get(dev.index)
            if ctx is None:
                ctx = _defaults[dev.index] = Context(dev)
    return ctx


def _device_of(ctx: Context) -> int:
    d = c_int()
    check(lib.gaio_context_device(ctx.handle, byref(d)))
    return d.value
