"""gaio: the GPU as an asynchronous I/O device, from Python.

A ctypes binding of libgaio (nothing to compile but the C library)::

    import asyncio, gaio, numpy as np

    async def main():
        s = gaio.Stream("cuda")                      # or gaio.Stream.from_external(torch_stream)
        x = gaio.tensor(np.ones((224, 224, 3), np.uint8), stream=s)
        y = gaio.empty(x.shape, "float32", stream=s)
        gaio.image.normalize(x, y, scale=1 / 255, mean=[0.5] * 3, std=[0.25] * 3, stream=s)
        await s.fence()                              # the loop never blocks
        return y.numpy()

Zero-copy exchange: ``torch.from_dlpack(t)``, ``gaio.from_dlpack(torch_tensor)``,
``cupy.asarray(t)`` (CUDA Array Interface). Errors are ``gaio.Error`` subclasses
carrying gaio's message.
"""
from __future__ import annotations

from . import comm, image
from ._lib import library_path
from .aio import loop_queue
from .buffer import Buffer
from .comm import Comm
from .context import Context, default_context
from .device import Device, backend_status, configure, device, device_count, devices, shutdown
from .errors import (CancelledError, DeviceError, DriverError, Error, InvalidArgumentError, NotFoundError,
                     NotImplementedByGaioError, NotReadyError, NotSupportedError, OutOfMemoryError, StateError,
                     SystemError, TimeoutError, UserError)
from .event import Event
from .future import Future, wait_all
from .model import Engine, Model, ModelExec
from .stream import DEFERRED, Stream
from .tensor import DTYPES, Tensor, copy, empty, from_dlpack, tensor

__version__ = "0.1.0"


def version() -> int:
    """The loaded libgaio's version: MAJOR*10000 + MINOR*100 + PATCH."""
    from ._lib import lib
    return lib.gaio_version()


__all__ = ["Buffer", "CancelledError", "Comm", "Context", "DEFERRED", "DTYPES", "Device", "DeviceError", "DriverError",
           "Engine", "Error", "Event", "Future", "InvalidArgumentError", "Model", "ModelExec", "NotFoundError",
           "NotImplementedByGaioError", "NotReadyError", "NotSupportedError", "OutOfMemoryError", "StateError",
           "Stream", "SystemError", "Tensor", "TimeoutError", "UserError", "backend_status", "configure", "copy",
           "comm", "default_context", "device", "device_count", "devices", "empty", "from_dlpack", "image", "library_path",
           "loop_queue", "shutdown", "tensor", "version", "wait_all"]
