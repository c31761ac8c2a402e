"""DLPack capsules: gaio tensors out (``Tensor.__dlpack__``) and any producer's in
(``gaio.from_dlpack``), zero-copy, through gaio's C DLPack functions.

Imports use gaio_dlpack_import_deferred: gaio never runs the producer's deleter on
one of its threads; the dispatcher thread runs it in Python once gaio's last use of
the memory has ended (numpy's deleter needs the GIL)."""
from __future__ import annotations

import ctypes
from ctypes import byref, c_char_p, c_int, c_void_p, py_object
from typing import Any

from ._lib import DLManagedTensor, DLManagedTensorVersioned, DlpackView, lib
from .errors import InvalidArgumentError, NotSupportedError, check

__all__ = ["to_capsule", "import_capsule", "DL_CPU", "DL_CUDA", "DL_CUDA_HOST", "DL_CUDA_MANAGED"]

DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED = 1, 2, 3, 13

# Capsule names must outlive their capsules: module constants do.
_VERSIONED = b"dltensor_versioned"
_USED_VERSIONED = b"used_dltensor_versioned"
_LEGACY = b"dltensor"
_USED_LEGACY = b"used_dltensor"

_api = ctypes.pythonapi
_new = ctypes.PYFUNCTYPE(py_object, c_void_p, c_char_p, c_void_p)(("PyCapsule_New", _api))
_is_valid = ctypes.PYFUNCTYPE(c_int, py_object, c_char_p)(("PyCapsule_IsValid", _api))
_get = ctypes.PYFUNCTYPE(c_void_p, py_object, c_char_p)(("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(c_int, py_object, c_char_p)(("PyCapsule_SetName", _api))
# In a capsule's destructor the capsule is a bare pointer (it is being freed).
_raw_is_valid = ctypes.PYFUNCTYPE(c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _api))
_raw_get = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", _api))


def _run_deleter(ptr: int, versioned: bool) -> None:
    m = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(ptr)
    if m.deleter:
        m.deleter(ptr)


@ctypes.PYFUNCTYPE(None, c_void_p)
def _capsule_destructor(capsule: int) -> None:
    # A capsule nobody consumed still owns its tensor (the DLPack rule); a consumed one
    # was renamed "used_..." and its consumer calls the deleter.
    for name, versioned in ((_VERSIONED, True), (_LEGACY, False)):
        if _raw_is_valid(capsule, name):
            _run_deleter(_raw_get(capsule, name), versioned)
            return


_DESTRUCTOR_ADDR = ctypes.cast(_capsule_destructor, c_void_p).value


def to_capsule(view: DlpackView, versioned: bool) -> Any:
    """Exports a view as a DLPack capsule that keeps its buffer alive until consumed
    and deleted (or dropped unconsumed)."""
    out = c_void_p()
    if versioned:
        check(lib.gaio_dlpack_export(byref(view), byref(out)))
    else:
        check(lib.gaio_dlpack_export_legacy(byref(view), byref(out)))
    try:
        return _new(out.value, _VERSIONED if versioned else _LEGACY, _DESTRUCTOR_ADDR)
    except BaseException:
        _run_deleter(out.value, versioned)
        raise


def import_capsule(capsule: Any, ctx_handle: int) -> tuple[DlpackView, int, int, bool]:
    """Wraps a producer's capsule in a gaio buffer of the context. Returns the view (its
    buffer reference is the caller's), the released future (owned by the caller), the
    managed tensor's address and whether it is versioned. The capsule is marked used
    only on success; on failure it still owns its tensor."""
    if _is_valid(capsule, _VERSIONED):
        versioned, name, used = True, _VERSIONED, _USED_VERSIONED
        fn = lib.gaio_dlpack_import_deferred
    elif _is_valid(capsule, _LEGACY):
        versioned, name, used = False, _LEGACY, _USED_LEGACY
        fn = lib.gaio_dlpack_import_legacy_deferred
    elif _is_valid(capsule, _USED_VERSIONED) or _is_valid(capsule, _USED_LEGACY):
        raise InvalidArgumentError("gaio.from_dlpack: the DLPack capsule was consumed already")
    else:
        raise InvalidArgumentError(f"gaio.from_dlpack: {capsule!r} is not a DLPack capsule")
    ptr = _get(capsule, name)
    view = DlpackView()
    released = c_void_p()
    check(fn(ctx_handle, ptr, byref(view), byref(released)))
    _set_name(capsule, used)
    return view, released.value, ptr, versioned


def release_when_done(released: int, ptr: int, versioned: bool) -> None:
    """Runs the producer's deleter on the dispatcher thread once ``released`` completes."""
    from ._dispatch import dispatcher

    def done() -> None:
        lib.gaio_future_release(released)
        _run_deleter(ptr, versioned)

    dispatcher().run_when_done(released, done)


def device_code(kind: str, device_kind: str) -> int:
    if device_kind == "cpu" or kind == "host":
        return DL_CPU
    return {"device": DL_CUDA, "pinned": DL_CUDA_HOST, "managed": DL_CUDA_MANAGED}[kind]


def check_stream_arg(stream: Any, dl_type: int) -> None:
    if stream is None:
        return
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise InvalidArgumentError(f"__dlpack__: stream {stream!r} is not None or an int")
    if dl_type != DL_CUDA and stream != -1:
        raise NotSupportedError(f"__dlpack__: stream {stream} given for memory that is not on a CUDA device "
                                "(the Array API allows only None there)")
    if stream == 0:
        raise InvalidArgumentError("__dlpack__: stream 0 is ambiguous and disallowed by the Array API: pass 1 for "
                                   "the legacy default stream or 2 for the per-thread one")
    if stream < -1:
        raise InvalidArgumentError(f"__dlpack__: stream {stream} is negative (only -1, no synchronization, is)")


