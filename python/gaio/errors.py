"""gaio's errors: one exception class per gaio_status, all subclasses of gaio.Error.

Each carries the status (``.status``, its constant name in ``.status_name``) and
gaio's message, which names the function and the argument at fault. Where a
Python built-in exception means the same thing, the class derives from it too
(``InvalidArgumentError`` is a ``ValueError``, ``TimeoutError`` a built-in
``TimeoutError``), so callers may catch either.
"""
from __future__ import annotations

import builtins
from typing import NoReturn

from ._lib import lib

__all__ = ["Error", "InvalidArgumentError", "OutOfMemoryError", "NotReadyError", "TimeoutError",
           "NotSupportedError", "NotFoundError", "StateError", "DeviceError", "DriverError", "SystemError",
           "CancelledError", "UserError", "NotImplementedByGaioError", "check", "raise_status"]


class Error(Exception):
    """A gaio call failed. ``status`` is the gaio_status code, ``message`` gaio's words."""

    status: int = -1

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        self.message = message

    @property
    def status_name(self) -> str:
        return lib.gaio_status_string(self.status).decode()


class InvalidArgumentError(Error, ValueError):
    status = 1


class OutOfMemoryError(Error, MemoryError):
    status = 2


class NotReadyError(Error):
    status = 3


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 - gaio.TimeoutError is meant to shadow
    status = 4


class NotSupportedError(Error):
    status = 5


class NotFoundError(Error, LookupError):
    status = 6


class StateError(Error, RuntimeError):
    status = 7


class DeviceError(Error, RuntimeError):
    status = 8


class DriverError(Error, RuntimeError):
    status = 9


class SystemError(Error, OSError):  # noqa: A001
    status = 10


class CancelledError(Error):
    status = 11


class UserError(Error):
    status = 12


class NotImplementedByGaioError(Error, NotImplementedError):
    """The loaded libgaio lacks functions this package calls (an older build). Raised by
    the binding itself, never for a gaio_status: ``status`` stays -1."""


_BY_STATUS: dict[int, type[Error]] = {c.status: c for c in (
    InvalidArgumentError, OutOfMemoryError, NotReadyError, TimeoutError, NotSupportedError, NotFoundError,
    StateError, DeviceError, DriverError, SystemError, CancelledError, UserError)}


def error_for(status: int, message: str) -> Error:
    cls = _BY_STATUS.get(status, Error)
    return cls(message, status)


def raise_status(status: int, message: str | None = None) -> NoReturn:
    """Raises the exception of a failed status; the message defaults to gaio_last_error() of this thread."""
    if message is None:
        message = (lib.gaio_last_error() or b"").decode(errors="replace")
    if not message:
        message = lib.gaio_status_string(status).decode()
    raise error_for(status, message)


def check(status: int) -> None:
    """Raises unless status is GAIO_OK (0)."""
    if status:
        raise_status(status)
