"""Futures: one-shot completions of GPU (or CPU backend) work.

A Future can be waited for (``result(timeout)``), polled (``done()``), awaited
from asyncio (``await fut``: through the event loop's completion queue, no thread
pool), or given callbacks (``add_done_callback``), which run on gaio's Python
dispatcher thread. No gaio thread ever calls into Python: completions reach Python
only through completion-queue fds.
"""
from __future__ import annotations

from ctypes import byref, c_void_p
from typing import Any, Callable, Generator, Iterable

from ._lib import lib
from .errors import InvalidArgumentError, check, error_for, raise_status

__all__ = ["Future", "wait_all"]

_NOT_READY = 3
_TIMEOUT = 4
_poll = lib.gaio_future_poll
_wait = lib.gaio_future_wait
_release = lib.gaio_future_release
_fence = lib.gaio_future_fence
_new = object.__new__


class Future:
    """The completion of work submitted to a stream (``stream.fence()``), of an event
    (``event.future()``), or of several futures (``gaio.wait_all``)."""

    __slots__ = ("_h", "_keep", "__weakref__")

    def __new__(cls, *args: Any, **kwargs: Any) -> "Future":  # made by gaio only
        raise TypeError("gaio.Future is made by stream.fence(), event.future() or gaio.wait_all()")

    @classmethod
    def _adopt(cls, handle: int, keep: Any = None) -> "Future":
        f = _new(cls)
        f._h = handle
        f._keep = keep  # Python objects that must outlive the work (arrays a copy reads, ...)
        return f

    @staticmethod
    def _fence(stream) -> "Future":
        h = c_void_p()
        st = _fence(stream._h, byref(h))
        if st:
            raise_status(st)
        f = _new(Future)
        f._h = h.value
        f._keep = None
        return f

    @classmethod
    def _from_event(cls, event) -> "Future":
        h = c_void_p()
        check(lib.gaio_future_from_event(event._h, byref(h)))
        return cls._adopt(h.value)

    def __del__(self) -> None:
        h = self._h
        if h:
            self._h = None
            _release(h)

    @property
    def handle(self) -> int:
        return self._h

    def done(self) -> bool:
        """True once complete (successfully or not). Never blocks."""
        return _poll(self._h) != _NOT_READY

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """Waits up to ``timeout`` seconds (None: forever) and returns the failure, or None."""
        st = _wait(self._h, _ns(timeout))
        if st == _TIMEOUT and _poll(self._h) == _NOT_READY:
            raise error_for(_TIMEOUT, f"Future.result: not complete after {timeout} s")
        return self._error(st) if st else None

    def result(self, timeout: float | None = None) -> None:
        """Waits (without holding the GIL) up to ``timeout`` seconds, None meaning
        forever, and raises the work's failure as a gaio.Error, or gaio.TimeoutError."""
        err = self.exception(timeout)
        if err is not None:
            raise err

    def _error(self, status: int) -> BaseException:
        msg = (lib.gaio_future_message(self._h) or b"").decode(errors="replace")
        return error_for(status, msg or lib.gaio_status_string(status).decode())

    def add_done_callback(self, fn: Callable[["Future"], Any]) -> None:
        """Calls ``fn(self)`` once the future completes: at once on this thread if it
        has, else on gaio's Python dispatcher thread (never on a gaio thread)."""
        if not callable(fn):
            raise InvalidArgumentError(f"Future.add_done_callback: {fn!r} is not callable")
        if self.done():
            fn(self)
            return
        from ._dispatch import dispatcher
        dispatcher().call_when_done(self, fn)

    def __await__(self) -> Generator[Any, None, None]:
        st = _poll(self._h)
        if st == _NOT_READY:  # the loop's queue resolves the wait with the status
            st = yield from _loop_queue().watch(self).__await__()
        if st:
            raise self._error(st)

    def __repr__(self) -> str:
        st = _poll(self._h)
        state = "pending" if st == _NOT_READY else ("done" if st == 0 else lib.gaio_status_string(st).decode())
        return f"<gaio.Future {state}>"


def _ns(timeout: float | None) -> int:
    if timeout is None:
        return (1 << 63) - 1
    if timeout < 0:
        raise InvalidArgumentError(f"Future.result: timeout {timeout} is negative")
    return int(timeout * 1e9)


def wait_all(futures: Iterable[Future]) -> Future:
    """A future that completes when all have; its failure is the first failed one's in order."""
    fs = list(futures)
    for f in fs:
        if not isinstance(f, Future):
            raise InvalidArgumentError(f"gaio.wait_all: {f!r} is not a gaio.Future")
    arr = (c_void_p * max(len(fs), 1))(*[f._h for f in fs])
    h = c_void_p()
    check(lib.gaio_future_join(arr, len(fs), byref(h)))
    return Future._adopt(h.value, fs)


from .aio import loop_queue as _loop_queue  # noqa: E402  (aio needs Future's module first)
