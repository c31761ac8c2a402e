"""gaio's Python dispatcher thread: a Python thread (never one of gaio's) that waits
on a completion queue without the GIL and, when entries come, runs in Python what
must not run on gaio's threads: ``Future.add_done_callback`` callbacks and the
deleters of tensors imported by DLPack (numpy's take the GIL; gaio's completion
thread must never wait for it)."""
from __future__ import annotations

import itertools
import sys
import threading
from ctypes import byref, c_size_t, c_void_p
from typing import Any, Callable

from ._lib import INFINITE, CqEntry, lib
from .errors import check

__all__ = ["dispatcher"]


class _Dispatcher:
    def __init__(self) -> None:
        h = c_void_p()
        check(lib.gaio_cq_create(byref(h)))
        self._cq = h.value
        self._lock = threading.Lock()
        self._jobs: dict[int, tuple[Callable[..., Any], tuple]] = {}
        self._tokens = itertools.count(1)
        self._thread = threading.Thread(target=self._run, name="gaio-dispatch", daemon=True)
        self._thread.start()

    def _submit(self, future_handle: int, fn: Callable[..., Any], args: tuple) -> None:
        token = next(self._tokens)
        with self._lock:
            self._jobs[token] = (fn, args)
        st = lib.gaio_cq_add(self._cq, future_handle, token)
        if st:
            with self._lock:
                del self._jobs[token]
            check(st)

    def call_when_done(self, fut, fn: Callable[..., Any]) -> None:
        self._submit(fut._h, fn, (fut,))

    def run_when_done(self, future_handle: int, fn: Callable[..., Any], *args: Any) -> None:
        """fn(*args) once the gaio future completes; the caller keeps future_handle's reference."""
        self._submit(future_handle, fn, args)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._jobs)

    def _run(self) -> None:
        entries = (CqEntry * 64)()
        count = c_size_t()
        while True:
            st = lib.gaio_cq_wait(self._cq, entries, 64, byref(count), INFINITE)
            if st and st != 4:
                return
            for i in range(count.value):
                with self._lock:
                    job = self._jobs.pop(entries[i].user_data, None)
                if job is None:
                    continue
                fn, args = job
                try:
                    fn(*args)
                except BaseException:  # a callback's failure must not stop the dispatcher
                    sys.excepthook(*sys.exc_info())


_instance: _Dispatcher | None = None
_instance_lock = threading.Lock()


def dispatcher() -> _Dispatcher:
    global _instance
    if _instance is None:
        with _instance_lock:
            if _instance is None:
                _instance = _Dispatcher()
    return _instance
