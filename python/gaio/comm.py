"""Collectives: all_reduce and its kin across GPUs (NCCL) or the threads of one process
(the host backend), as stream ops whose futures the caller awaits.

Every rank makes the same collectives in the same order. ::

    gid = gaio.comm.unique_id("cuda:0")              # one rank makes it, ships the bytes
    comm = gaio.Comm(gid, nranks, rank, "cuda:%d" % rank)
    await comm.joined                                # optional: ops wait for the join anyway
    await comm.all_reduce(grads, op="avg")           # in place; returns the stream's fence

A group of sends and receives (all-to-all without deadlock)::

    with gaio.comm.group():
        for peer in range(n):
            comm.send(x[peer], peer)
            comm.recv(y[peer], peer)
"""
from __future__ import annotations

import ctypes
from contextlib import contextmanager
from ctypes import POINTER, byref, c_int, c_int32, c_size_t, c_void_p
from typing import Iterator, Sequence

from ._lib import lib
from .context import Context, default_context
from .device import DeviceLike
from .errors import InvalidArgumentError, check
from .future import Future
from .stream import Stream
from .tensor import Tensor, _stream_for

__all__ = ["Comm", "group", "unique_id", "OPS", "ID_BYTES"]

ID_BYTES = 256
OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "avg": 4}

_S, _P, _PP = c_int, c_void_p, POINTER(c_void_p)
_IdBytes = ctypes.c_ubyte * ID_BYTES
_COLL = [_P, _P, _P, c_size_t, _P, c_size_t, c_size_t, c_int]
_PROTOTYPES = {
    "gaio_comm_unique_id": (_S, [_P, _IdBytes]),
    "gaio_comm_init_rank": (_S, [_P, _IdBytes, c_int32, c_int32, _PP, _PP]),
    "gaio_comm_create_local": (_S, [POINTER(c_void_p), c_int32, POINTER(c_void_p)]),
    "gaio_comm_release": (_S, [_P]),
    "gaio_comm_split": (_S, [_P, c_int32, c_int32, _PP]),
    "gaio_comm_abort": (_S, [_P]),
    "gaio_comm_rank": (_S, [_P, POINTER(c_int32)]),
    "gaio_comm_size": (_S, [_P, POINTER(c_int32)]),
    "gaio_comm_all_reduce": (_S, _COLL + [c_int]),
    "gaio_comm_broadcast": (_S, _COLL + [c_int32]),
    "gaio_comm_reduce": (_S, _COLL + [c_int, c_int32]),
    "gaio_comm_all_gather": (_S, _COLL),
    "gaio_comm_reduce_scatter": (_S, _COLL + [c_int]),
    "gaio_comm_group_start": (_S, []),
    "gaio_comm_group_end": (_S, []),
    "gaio_comm_send": (_S, [_P, _P, _P, c_size_t, c_size_t, c_int, c_int32]),
    "gaio_comm_recv": (_S, [_P, _P, _P, c_size_t, c_size_t, c_int, c_int32]),
}
for _name, (_res, _args) in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args


def _context(where: Context | DeviceLike) -> Context:
    return where if isinstance(where, Context) else default_context(where)


def unique_id(where: Context | DeviceLike = 0) -> bytes:
    """A new group's id for the device kind of ``where``: bytes to ship to every rank."""
    buf = _IdBytes()
    check(lib.gaio_comm_unique_id(_context(where).handle, buf))
    return bytes(buf)


def _op_code(op: str) -> int:
    try:
        return OPS[op]
    except KeyError:
        raise InvalidArgumentError(f"op {op!r} is not one of {', '.join(OPS)}") from None


def _contig(t: Tensor, what: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise InvalidArgumentError(f"{what} is {type(t).__name__}, not a gaio Tensor")
    if not t._contig:
        raise InvalidArgumentError(f"{what} is not contiguous: collectives take compact tensors")
    return t


class Comm:
    """One rank of a group: ``Comm(id, nranks, rank, device)``; ``joined`` is a future of the join."""

    __slots__ = ("_h", "rank", "size", "context", "joined")

    def __init__(self, id: bytes, nranks: int, rank: int, where: Context | DeviceLike = 0) -> None:
        self._h = None
        if not isinstance(id, (bytes, bytearray)) or len(id) != ID_BYTES:
            raise InvalidArgumentError(f"id must be the {ID_BYTES} bytes gaio.comm.unique_id gives")
        ctx = _context(where)
        h, j = c_void_p(), c_void_p()
        check(lib.gaio_comm_init_rank(ctx.handle, _IdBytes.from_buffer_copy(bytes(id)), nranks, rank, byref(h),
                                      byref(j)))
        self._h, self.rank, self.size, self.context = h.value, rank, nranks, ctx
        self.joined = Future._adopt(j.value)

    @classmethod
    def local(cls, contexts: Sequence[Context | DeviceLike]) -> list["Comm"]:
        """One communicator per context, all of this process (every GPU of the host)."""
        ctxs = [_context(c) for c in contexts]
        n = len(ctxs)
        arr, out = (c_void_p * n)(*[c.handle for c in ctxs]), (c_void_p * n)()
        check(lib.gaio_comm_create_local(arr, n, out))
        comms = []
        for i, c in enumerate(ctxs):
            self = cls.__new__(cls)
            self._h, self.rank, self.size, self.context = out[i], i, n, c
            self.joined = None
            comms.append(self)
        return comms

    def __del__(self) -> None:
        if self._h:
            lib.gaio_comm_release(self._h)
            self._h = None

    def close(self) -> None:
        """Releases the communicator now (on GPUs: waits for its work in flight)."""
        self.__del__()

    def split(self, color: int, key: int = 0) -> "Comm | None":
        """This rank's communicator of the sub-group of ``color`` (ordered by ``key``), None
        for a negative color. Every rank calls it; it returns once all have."""
        h = c_void_p()
        check(lib.gaio_comm_split(self._h, color, key, byref(h)))
        if not h.value:
            return None
        sub = Comm.__new__(Comm)
        r, n = ctypes.c_int32(), ctypes.c_int32()
        check(lib.gaio_comm_rank(h.value, byref(r)))
        check(lib.gaio_comm_size(h.value, byref(n)))
        sub._h, sub.rank, sub.size, sub.context, sub.joined = h.value, r.value, n.value, self.context, None
        return sub

    def abort(self) -> None:
        """Fails this communicator's pending collectives, here and on the other ranks."""
        check(lib.gaio_comm_abort(self._h))

    def _coll(self, fn, send: Tensor | None, recv: Tensor | None, count: int, dtype: int, stream, extra) -> Future:
        anchor = recv if recv is not None else send
        s = _stream_for(stream, anchor)
        check(fn(s._h, self._h, send._buffer._h if send is not None else None, send._offset if send is not None else 0,
                 recv._buffer._h if recv is not None else None, recv._offset if recv is not None else 0, count, dtype,
                 *extra))
        for t in (send, recv):
            if t is not None:
                t.stream = s
        return s.fence()

    def all_reduce(self, send: Tensor, recv: Tensor | None = None, op: str = "sum",
                   stream: Stream | None = None) -> Future:
        """recv = op over the ranks of send (in place when recv is None)."""
        send = _contig(send, "send")
        recv = send if recv is None else _contig(recv, "recv")
        return self._coll(lib.gaio_comm_all_reduce, send, recv, send.size, send._dtype, stream, (_op_code(op),))

    def broadcast(self, tensor: Tensor, root: int = 0, stream: Stream | None = None) -> Future:
        """tensor = root's tensor, on every rank."""
        t = _contig(tensor, "tensor")
        return self._coll(lib.gaio_comm_broadcast, t, t, t.size, t._dtype, stream, (root,))

    def reduce(self, send: Tensor, recv: Tensor | None = None, op: str = "sum", root: int = 0,
               stream: Stream | None = None) -> Future:
        """root's recv = op over the ranks of send (recv only matters on root)."""
        send = _contig(send, "send")
        recv = send if recv is None else _contig(recv, "recv")
        return self._coll(lib.gaio_comm_reduce, send, recv, send.size, send._dtype, stream, (_op_code(op), root))

    def all_gather(self, send: Tensor, recv: Tensor, stream: Stream | None = None) -> Future:
        """recv = every rank's send, in rank order (recv holds size x send's elements)."""
        send, recv = _contig(send, "send"), _contig(recv, "recv")
        return self._coll(lib.gaio_comm_all_gather, send, recv, send.size, send._dtype, stream, ())

    def reduce_scatter(self, send: Tensor, recv: Tensor, op: str = "sum", stream: Stream | None = None) -> Future:
        """recv = op over the ranks of this rank's block of send (send holds size x recv's elements)."""
        send, recv = _contig(send, "send"), _contig(recv, "recv")
        return self._coll(lib.gaio_comm_reduce_scatter, send, recv, recv.size, recv._dtype, stream, (_op_code(op),))

    def _p2p(self, fn, t: Tensor, peer: int, stream) -> None:
        t = _contig(t, "tensor")
        s = _stream_for(stream, t)
        check(fn(s._h, self._h, t._buffer._h, t._offset, t.size, t._dtype, peer))
        t.stream = s

    def send(self, tensor: Tensor, peer: int, stream: Stream | None = None) -> None:
        """Sends tensor to peer (issued at the group's end; await the stream's fence)."""
        self._p2p(lib.gaio_comm_send, tensor, peer, stream)

    def recv(self, tensor: Tensor, peer: int, stream: Stream | None = None) -> None:
        """Receives peer's send into tensor (issued at the group's end)."""
        self._p2p(lib.gaio_comm_recv, tensor, peer, stream)


@contextmanager
def group() -> Iterator[None]:
    """Sends and receives inside are issued together at the end (and, on GPUs, the
    thread's collectives launch together)."""
    check(lib.gaio_comm_group_start())
    try:
        yield
    finally:
        check(lib.gaio_comm_group_end())
