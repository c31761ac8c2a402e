"""Events: points in a stream that other streams (and the host) wait for."""
from __future__ import annotations

from ctypes import byref, c_float, c_void_p
from typing import TYPE_CHECKING

from ._lib import lib
from .context import Context, default_context
from .device import DeviceLike
from .errors import InvalidArgumentError, check, raise_status

if TYPE_CHECKING:
    from .future import Future
    from .stream import Stream

__all__ = ["Event"]


class Event:
    """``Event(context, timing=True)``; ``record(stream)`` marks the stream's current point."""

    __slots__ = ("_h", "context")

    def __init__(self, context: Context | DeviceLike = 0, timing: bool = True) -> None:
        self._h = None
        ctx = context if isinstance(context, Context) else default_context(context)
        h = c_void_p()
        check(lib.gaio_event_create(ctx.handle, 0 if timing else 1, byref(h)))
        self._h = h.value
        self.context = ctx

    def __del__(self) -> None:
        if self._h:
            lib.gaio_event_release(self._h)
            self._h = None

    def record(self, stream: "Stream") -> "Event":
        from .stream import Stream
        if not isinstance(stream, Stream):
            raise InvalidArgumentError(f"Event.record: stream is {type(stream).__name__}, not a gaio Stream")
        check(lib.gaio_event_record(self._h, stream._h))
        return self

    def query(self) -> bool:
        """True once the point is reached; raises the recording stream's failure."""
        st = lib.gaio_event_query(self._h)
        if st == 3:
            return False
        if st:
            raise_status(st)
        return True

    def synchronize(self) -> None:
        check(lib.gaio_event_synchronize(self._h))

    def future(self) -> "Future":
        """A future that completes when the event's current point is reached."""
        from .future import Future
        return Future._from_event(self)

    def elapsed_ms(self, end: "Event") -> float:
        """Milliseconds from this event's point to ``end``'s (both reached, both with timing)."""
        ms = c_float()
        check(lib.gaio_event_elapsed_ms(self._h, end._h, byref(ms)))
        return ms.value
