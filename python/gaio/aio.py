"""asyncio integration: one gaio completion queue per event loop.

The queue's eventfd is registered with ``loop.add_reader``; when it fires, the
loop pops every waiting entry in batches and resolves the asyncio futures of the
awaiting tasks. The loop thread never blocks on the GPU, no thread pool is
involved, and gaio's threads never touch Python.

A task cancelled while it awaits leaves nothing behind: its entry still arrives
when the work completes (the queue holds the gaio future until then), finds the
asyncio future cancelled and is dropped.
"""
from __future__ import annotations

import asyncio
import itertools
import struct
import weakref
import ctypes
from ctypes import byref, c_int, c_size_t, c_void_p
from typing import TYPE_CHECKING

from ._lib import CqEntry, lib
from .errors import check

if TYPE_CHECKING:
    from .future import Future

__all__ = ["LoopQueue", "loop_queue"]

_BATCH = 256
_ENTRY = struct.Struct("@Pi4x")  # gaio_cq_entry: void *user_data, gaio_status status (padded to 16)
assert _ENTRY.size == ctypes.sizeof(CqEntry)
_add = lib.gaio_cq_add
_pop = lib.gaio_cq_pop


class LoopQueue:
    """The completion queue of one event loop (made by ``loop_queue()``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._cq = None
        h = c_void_p()
        check(lib.gaio_cq_create(byref(h)))
        self._cq = h.value
        fd = c_int()
        check(lib.gaio_cq_fd(self._cq, byref(fd)))
        self.fd = fd.value
        self._loop = weakref.ref(loop)  # the loop owns this queue, not the reverse
        self._pending: dict[int, tuple[asyncio.Future, Future]] = {}
        self._tokens = itertools.count(1)
        self._entries = (CqEntry * _BATCH)()
        self._raw = memoryview(self._entries).cast("B")
        self._count = c_size_t()
        self._count_ref = byref(self._count)
        loop.add_reader(self.fd, self._drain)

    def __del__(self) -> None:
        if self._cq:
            loop = self._loop()
            if loop is not None and not loop.is_closed():
                try:
                    loop.remove_reader(self.fd)
                except Exception:  # the loop is going away with us
                    pass
            lib.gaio_cq_release(self._cq)
            self._cq = None

    @property
    def pending(self) -> int:
        """Futures added and not yet delivered (cancelled awaits included until their work ends)."""
        return len(self._pending)

    def watch(self, fut: "Future") -> asyncio.Future:
        """An asyncio future of this loop that resolves to fut's status (0: success)
        when ``fut`` completes."""
        loop = self._loop()
        afut = loop.create_future()
        token = next(self._tokens)
        check(_add(self._cq, fut._h, token))
        self._pending[token] = (afut, fut)
        return afut

    def _drain(self) -> None:
        entries, count, pending = self._entries, self._count, self._pending  # locals: the loop below is hot
        raw = self._raw
        while True:
            check(_pop(self._cq, entries, _BATCH, self._count_ref))
            n = count.value
            # One unpack of the whole batch: indexing a ctypes array makes an object per entry.
            for token, status in _ENTRY.iter_unpack(raw[:n * _ENTRY.size]):
                afut, fut = pending.pop(token)
                if not afut.done():  # else cancelled while it waited
                    afut.set_result(status)  # Future.__await__ raises a failure with its message
            if n < _BATCH:
                return


_queues: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopQueue]" = weakref.WeakKeyDictionary()


# (weak loop, queue) of the last lookup: most programs run one loop, and a
# WeakKeyDictionary lookup makes a weak reference each time.
_last: tuple = (lambda: None, None)


def loop_queue(loop: asyncio.AbstractEventLoop | None = None) -> LoopQueue:
    """The completion queue of ``loop`` (the running loop by default), made on first use."""
    global _last
    if loop is None:
        loop = _running_loop()
    last_loop, q = _last
    if last_loop() is loop:
        return q
    q = _queues.get(loop)
    if q is None:
        q = _queues[loop] = LoopQueue(loop)
    _last = (weakref.ref(loop), q)
    return q


_running_loop = asyncio.get_running_loop
