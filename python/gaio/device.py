"""Devices: gaio numbers every device of every backend 0..count-1; device 0 is the
host (the CPU backend) and CUDA GPUs follow in driver order."""
from __future__ import annotations

from ctypes import byref, c_char_p, c_int
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Union

from ._lib import Config, DeviceProps, lib
from .errors import InvalidArgumentError, NotFoundError, check, error_for

__all__ = ["Device", "DeviceLike", "devices", "device", "device_count", "backend_status", "configure", "shutdown"]

_KINDS = {0: "cpu", 1: "cuda"}
_WAIT = {"hybrid": 0, "spin": 1, "block": 2}


@dataclass(frozen=True)
class Device:
    """One gaio device. ``index`` is gaio's number, ``ordinal`` the index among
    devices of the same kind (the CUDA device number for ``"cuda"``)."""

    index: int
    kind: str
    ordinal: int
    name: str
    total_memory: int
    compute_capability: tuple[int, int]
    processor_count: int
    max_priority: int
    pitch_alignment: int

    def __str__(self) -> str:
        return "cpu" if self.kind == "cpu" else f"cuda:{self.ordinal}"

    def __repr__(self) -> str:
        return f"gaio.Device({self.index}, {str(self)!r}, {self.name!r})"


DeviceLike = Union[Device, int, str, Any]


def device_count() -> int:
    n = c_int()
    check(lib.gaio_device_count(byref(n)))
    return n.value


@lru_cache(maxsize=None)
def _device(index: int) -> Device:
    p = DeviceProps()
    check(lib.gaio_device_get_props(index, byref(p)))
    return Device(index, _KINDS.get(p.kind, str(p.kind)), p.ordinal, p.name.decode(errors="replace"),
                  p.total_memory, (p.compute_major, p.compute_minor), p.processor_count, p.max_priority,
                  p.pitch_alignment)


def devices() -> list[Device]:
    """Every device, the host first."""
    return [_device(i) for i in range(device_count())]


def device(spec: DeviceLike = 0) -> Device:
    """The device named by ``spec``: a gaio index (int), ``"cpu"``, ``"cuda"``
    (the first GPU), ``"cuda:N"``, a ``Device``, or any object with ``type`` and
    ``index`` attributes such as ``torch.device``."""
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, bool) or spec is None:
        raise InvalidArgumentError(f"gaio.device: {spec!r} names no device")
    if isinstance(spec, int):
        n = device_count()
        if not 0 <= spec < n:
            raise NotFoundError(f"gaio.device: no device {spec}: there are {n} (0 is the host)")
        return _device(spec)
    if isinstance(spec, str):
        kind, _, ordinal = spec.partition(":")
        idx = 0
        if ordinal:
            try:
                idx = int(ordinal)
            except ValueError:
                raise InvalidArgumentError(f"gaio.device: {spec!r}: the ordinal after ':' must be an integer")
        return _by_kind(kind, idx, spec)
    kind, idx = getattr(spec, "type", None), getattr(spec, "index", None)
    if isinstance(kind, str):
        return _by_kind(kind, idx or 0, repr(spec))
    raise InvalidArgumentError(f"gaio.device: cannot read a device from {spec!r} (give an int, 'cpu', 'cuda:N' or "
                               "a torch.device)")


def _by_kind(kind: str, ordinal: int, what: str) -> Device:
    if kind not in ("cpu", "cuda"):
        raise InvalidArgumentError(f"gaio.device: {what}: the kind must be 'cpu' or 'cuda'")
    found = [d for d in devices() if d.kind == kind]
    for d in found:
        if d.ordinal == ordinal:
            return d
    raise NotFoundError(f"gaio.device: no {kind} device {ordinal} ({len(found)} present"
                        + (f"; {backend_status(kind)[1]}" if kind == "cuda" else "") + ")")


def backend_status(kind: str) -> tuple[bool, str]:
    """Whether a backend (``"cpu"`` or ``"cuda"``) works in this process, and why in words."""
    code = {"cpu": 0, "cuda": 1}.get(kind)
    if code is None:
        raise InvalidArgumentError(f"gaio.backend_status: kind {kind!r} is not 'cpu' or 'cuda'")
    text = c_char_p()
    st = lib.gaio_backend_status(code, byref(text))
    return st == 0, (text.value or b"").decode(errors="replace")


def configure(cpu_workers: int = 0, wait_policy: str = "hybrid") -> None:
    """Process-wide settings; only before the first context is created (gaio.StateError after)."""
    if wait_policy not in _WAIT:
        raise InvalidArgumentError(f"gaio.configure: wait_policy {wait_policy!r} is not one of {sorted(_WAIT)}")
    check(lib.gaio_configure(byref(Config(cpu_workers, _WAIT[wait_policy]))))


def shutdown() -> None:
    """Stops gaio's threads (see gaio_shutdown); every context must be gone."""
    st = lib.gaio_shutdown()
    if st:
        raise error_for(st, (lib.gaio_last_error() or b"").decode())
