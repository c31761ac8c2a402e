"""Streams: in-order queues of work on one device, gaio's own or wrapped foreign ones."""
from __future__ import annotations

from ctypes import byref, c_int, c_uint, c_void_p
from typing import Any

from ._lib import lib
from .context import Context, default_context
from .device import DeviceLike, device as _to_device
from .errors import InvalidArgumentError, NotSupportedError, check, raise_status

__all__ = ["Stream", "DEFERRED", "CU_STREAM_LEGACY", "CU_STREAM_PER_THREAD"]

DEFERRED = 1  #: submission through gaio's per-device runtime thread (gaio_stream_create flags)
CU_STREAM_LEGACY = 1
CU_STREAM_PER_THREAD = 2


class Stream:
    """A gaio stream. ``Stream(context_or_device, priority=0)`` makes one;
    ``Stream.from_external(obj)`` wraps a PyTorch, CuPy or any CUDA stream.

    Priorities run from 0 (normal) to ``device.max_priority`` (most urgent)."""

    __slots__ = ("_h", "context", "_owner", "__weakref__")

    def __init__(self, context: Context | DeviceLike = 0, priority: int = 0, flags: int = 0) -> None:
        self._h = None
        ctx = context if isinstance(context, Context) else default_context(context)
        h = c_void_p()
        check(lib.gaio_stream_create(ctx.handle, priority, flags, byref(h)))
        self._h = h.value
        self.context: Context = ctx
        self._owner: Any = None

    @classmethod
    def _adopt(cls, handle: int, ctx: Context, owner: Any = None) -> "Stream":
        s = cls.__new__(cls)
        s._h, s.context, s._owner = handle, ctx, owner
        return s

    def __del__(self) -> None:
        if self._h:
            lib.gaio_stream_release(self._h)
            self._h = None

    @classmethod
    def from_external(cls, obj: Any, context: Context | None = None, device: DeviceLike | None = None,
                      flags: int = 0) -> "Stream":
        """Wraps a foreign CUDA stream without taking it over: gaio uses it and never
        destroys it, and the returned Stream keeps ``obj`` alive.

        ``obj`` may be anything with ``__cuda_stream__`` (returning ``(version, handle)``),
        a PyTorch stream (``.cuda_stream``; ``torch.cuda.Stream`` and ``ExternalStream``),
        a CuPy stream (``.ptr``), or an int handle (0 and 1 are the legacy default stream,
        2 the per-thread one). The device is taken from ``context``, ``device``, the
        object's device (``.device`` or ``.device_id``), or else the first GPU. The
        stream's priority is the native one on gaio's scale."""
        handle = _native_handle(obj)
        if context is None:
            if device is None:
                device = _device_of_stream_object(obj)
            context = default_context(device if device is not None else "cuda")
        if context.device.kind != "cuda":
            raise NotSupportedError(f"Stream.from_external: {context!r} is not on a CUDA device: only CUDA streams "
                                    "can be wrapped")
        h = c_void_p()
        st = lib.gaio_stream_wrap(context.handle, handle, flags, byref(h))
        if st:
            raise_status(st)
        return cls._adopt(h.value, context, obj)

    # ---- protocols -------------------------------------------------------------

    def __cuda_stream__(self) -> tuple[int, int]:
        """The CUDA stream protocol (cuda.core): ``(0, handle)``."""
        if self.context.device.kind != "cuda":
            raise NotSupportedError(f"{self!r} is a host stream: it has no CUDA handle")
        return (0, self.native)

    @property
    def handle(self) -> int:
        """The gaio_stream pointer, for C code."""
        return self._h

    @property
    def native(self) -> int:
        """The CUstream handle as an int (1 for the legacy default stream); 0 on the host."""
        p = c_void_p()
        check(lib.gaio_stream_native(self._h, byref(p)))
        return p.value or 0

    @property
    def priority(self) -> int:
        p = c_int()
        check(lib.gaio_stream_priority(self._h, byref(p)))
        return p.value

    @property
    def flags(self) -> int:
        f = c_uint()
        check(lib.gaio_stream_flags(self._h, byref(f)))
        return f.value

    @property
    def device(self):
        return self.context.device

    def query(self) -> bool:
        """True when everything submitted so far has finished; raises the stream's failure."""
        st = lib.gaio_stream_query(self._h)
        if st == 3:
            return False
        if st:
            raise_status(st)
        return True

    def synchronize(self) -> None:
        """Blocks (without the GIL) until everything submitted so far has finished."""
        check(lib.gaio_stream_synchronize(self._h))

    def fence(self) -> "Future":
        """A future that completes when the stream reaches this point: ``await stream.fence()``."""
        return _fence(self)

    def record(self, event: "Event | None" = None) -> "Event":
        """Records ``event`` (a new one if None) at the current point of this stream."""
        from .event import Event
        ev = event if event is not None else Event(self.context)
        ev.record(self)
        return ev

    def wait(self, event_or_stream: "Event | Stream") -> None:
        """Work submitted to this stream later starts after ``event``'s point (or
        everything submitted to the other stream so far)."""
        from .event import Event
        ev = event_or_stream
        if isinstance(ev, Stream):
            ev = ev.record()
        if not isinstance(ev, Event):
            raise InvalidArgumentError(f"Stream.wait: {event_or_stream!r} is not a gaio Event or Stream")
        check(lib.gaio_stream_wait_event(self._h, ev._h))

    def __repr__(self) -> str:
        kind = "wrapped " if self._owner is not None else ""
        return f"<gaio.Stream {kind}on {self.context.device} priority {self.priority}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other._h == self._h

    def __hash__(self) -> int:
        return hash(self._h)


def _native_handle(obj: Any) -> int:
    if isinstance(obj, Stream):
        raise InvalidArgumentError("Stream.from_external: obj is a gaio Stream already")
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        val = proto() if callable(proto) else proto
        if not (isinstance(val, tuple) and len(val) == 2):
            raise InvalidArgumentError(f"Stream.from_external: {type(obj).__name__}.__cuda_stream__ gave {val!r}, "
                                       "not (version, handle)")
        handle = val[1]
    elif hasattr(obj, "cuda_stream"):  # torch.cuda.Stream, torch.cuda.ExternalStream
        handle = obj.cuda_stream
    elif hasattr(obj, "ptr") and not isinstance(obj, int):  # cupy.cuda.Stream
        handle = obj.ptr
    elif isinstance(obj, int) and not isinstance(obj, bool):
        handle = obj
    else:
        raise InvalidArgumentError(f"Stream.from_external: cannot read a CUDA stream from {type(obj).__name__} "
                                   "(give an object with __cuda_stream__, .cuda_stream or .ptr, or an int handle)")
    if not isinstance(handle, int) or handle < 0:
        raise InvalidArgumentError(f"Stream.from_external: the stream handle {handle!r} is not a non-negative int")
    # NULL is the legacy default stream in the runtime API; gaio takes CU_STREAM_LEGACY for it.
    return handle or CU_STREAM_LEGACY


def _device_of_stream_object(obj: Any) -> DeviceLike | None:
    dev = getattr(obj, "device", None)
    if dev is not None:
        if isinstance(getattr(dev, "type", None), str):  # torch.device
            return dev
        ident = getattr(dev, "id", None)  # cupy.cuda.Device
        if isinstance(ident, int):
            return f"cuda:{ident}"
    ident = getattr(obj, "device_id", None)
    if isinstance(ident, int):
        return f"cuda:{ident}"
    return None


from .event import Event  # noqa: E402  (type references above)
from .future import Future  # noqa: E402

_fence = Future._fence
