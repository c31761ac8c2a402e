"""ONNX models: load once, plan for a device, run asynchronously on any stream.

The split is TensorRT's: a :class:`Model` is the parsed, checked ONNX file (host
data, shared); :meth:`Model.exec` makes a :class:`ModelExec` for one device, batch
size, precision and layout (weights uploaded once, intermediates allocated); and
:meth:`ModelExec.run` enqueues one inference on a stream and returns a
:class:`gaio.Future` at once::

    model = gaio.Model("resnet50.onnx")
    ex = model.exec(gaio.default_context("cuda"), batch=32)          # f16, NHWC on a GPU
    s = gaio.Stream("cuda")
    x = gaio.tensor(images, stream=s)                                 # [32, 3, 224, 224] float32
    y = gaio.empty(ex.output_shapes[0], ex.model.outputs[0].dtype, stream=s)
    await ex.run(s, [x], [y])

One exec runs one inference at a time (consecutive runs on different streams are
ordered by gaio, as they share the intermediates): for runs in parallel, make one
exec per stream. Inputs and outputs are packed row-major tensors of the model's
dtype and shape, with the symbolic dimensions resolved to the exec's batch.

A model gaio cannot run is refused when it loads: ``gaio.NotSupportedError`` naming
the node and its operator; a malformed file raises ``gaio.InvalidArgumentError``.
"""
from __future__ import annotations

import os
from ctypes import byref, c_char_p, c_void_p
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import ModelExecOptions, ModelIo, ModelSummary, TensorDesc, lib
from .context import Context, default_context
from .device import DeviceLike
from .errors import InvalidArgumentError, NotImplementedByGaioError, NotSupportedError, check, raise_status
from .future import Future
from .stream import Stream
from .tensor import Tensor

__all__ = ["Model", "ModelExec", "TensorInfo", "ModelSummaryInfo", "PRECISIONS", "LAYOUTS", "onnx_supported"]

#: ``precision=`` names and their gaio_model_precision codes
PRECISIONS = {"auto": 0, "model": 1, "f16": 2}
#: ``layout=`` names and their gaio_model_layout codes
LAYOUTS = {"auto": 0, "nchw": 1, "nhwc": 2}

_NUMPY_NAMES = {4: "float16", 5: "float32"}  # gaio_dtype codes a model's inputs and outputs take


def _require_models(where: str) -> None:
    if not _lib.HAS_MODELS:
        raise NotImplementedByGaioError(f"{where}: the loaded libgaio ({_lib.library_path}) has no gaio_model_* "
                                        "functions; build a newer one")


def onnx_supported() -> bool:
    """Whether this libgaio was built with ONNX support (protoc-c, onnx.proto and
    protobuf-c at build time): without it every model call raises NotSupportedError."""
    try:
        Model(b"\x00")
    except NotImplementedByGaioError:
        return False
    except NotSupportedError as e:
        return "without ONNX" not in str(e)
    except Exception:  # noqa: BLE001 - any other refusal of the junk bytes means the loader is there
        return True
    return True


@dataclass(frozen=True)
class TensorInfo:
    """A graph input's or output's description. ``shape`` holds None for a symbolic
    dimension (its name in ``dim_names``; "" for fixed ones)."""
    name: str
    dtype: Any  # a numpy dtype
    shape: Tuple[Optional[int], ...]
    dim_names: Tuple[str, ...]

    def resolved(self, batch: Optional[int]) -> Tuple[int, ...]:
        """The shape with every symbolic dimension set to ``batch``."""
        if batch is None and None in self.shape:
            raise InvalidArgumentError(f"{self.name}: shape {self.shape} is symbolic; give a batch")
        return tuple(batch if n is None else n for n in self.shape)


@dataclass(frozen=True)
class ModelSummaryInfo:
    ir_version: int
    opset: int
    inputs: int
    outputs: int
    nodes: int  # after folding constants and shape-only chains
    initializers: int
    weight_bytes: int
    producer: str


def _info(io: ModelIo) -> TensorInfo:
    import numpy as np

    n = io.ndim
    name = _NUMPY_NAMES.get(io.dtype)
    dtype = np.dtype(name) if name else io.dtype  # a code gaio does not name stays visible as an int
    shape = tuple(None if io.shape[i] < 0 else int(io.shape[i]) for i in range(n))
    dims = tuple((io.dim_names[i] or b"").decode(errors="replace") for i in range(n))
    return TensorInfo((io.name or b"").decode(errors="replace"), dtype, shape, dims)


class Model:
    """A loaded ONNX model: ``gaio.Model(path)`` or ``gaio.Model(bytes)``.

    External data files are read from the model's directory (and must stay inside
    it); a model given as bytes must hold its weights inline."""

    __slots__ = ("_h", "inputs", "outputs", "summary", "source", "__weakref__")

    def __init__(self, source: Union[str, os.PathLike, bytes, bytearray, memoryview]) -> None:
        self._h = None
        _require_models("gaio.Model")
        h = c_void_p()
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)  # one immutable copy that lives through the call
            st = lib.gaio_model_load_memory(data, len(data), byref(h))
            self.source = f"<{len(data)} bytes>"
        elif isinstance(source, (str, os.PathLike)):
            st = lib.gaio_model_load(os.fsencode(source), byref(h))
            self.source = os.fspath(source)
        else:
            raise InvalidArgumentError(f"gaio.Model: source is {type(source).__name__}; give a path or the bytes "
                                       "of an ONNX file")
        if st:
            raise_status(st)
        self._h = h.value
        s = ModelSummary()
        check(lib.gaio_model_summarize(self._h, byref(s)))
        self.summary = ModelSummaryInfo(s.ir_version, s.opset, s.inputs, s.outputs, s.nodes, s.initializers,
                                        s.weight_bytes, (s.producer or b"").decode(errors="replace"))
        self.inputs = tuple(self._io(lib.gaio_model_input, i) for i in range(s.inputs))
        self.outputs = tuple(self._io(lib.gaio_model_output, i) for i in range(s.outputs))

    def _io(self, fn: Any, i: int) -> TensorInfo:
        io = ModelIo()
        check(fn(self._h, i, byref(io)))
        return _info(io)

    def __del__(self) -> None:
        if self._h:
            lib.gaio_model_release(self._h)
            self._h = None

    @property
    def handle(self) -> int:
        """The gaio_model pointer, for C code."""
        return self._h

    @property
    def nodes(self) -> list:
        """``(name, op_type)`` of every node gaio kept, in a topological order."""
        out = []
        for i in range(self.summary.nodes):
            name, op = c_char_p(), c_char_p()
            check(lib.gaio_model_node(self._h, i, byref(name), byref(op)))
            out.append(((name.value or b"").decode(errors="replace"), (op.value or b"").decode(errors="replace")))
        return out

    def exec(self, context: Union[Context, DeviceLike, None] = None, batch: Optional[int] = None,
             precision: str = "auto", layout: str = "auto") -> "ModelExec":
        """An execution context on ``context``'s device (a Context, or a device such as
        ``"cuda:0"``; default: the first device's default context). ``batch`` sets the
        symbolic dimensions (needed when the model has any). ``precision``: "auto" (f16
        on a GPU, the model's own on the host), "model" or "f16". ``layout``: "auto",
        "nchw" or "nhwc" (of intermediates and convolution weights). Blocks until the
        weights are on the device."""
        return ModelExec(self, context, batch, precision, layout)

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.inputs)
        outs = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.outputs)
        return f"<gaio.Model {self.source} ({self.summary.nodes} nodes) ({ins}) -> ({outs})>"


class ModelExec:
    """A model planned for one device and batch (``Model.exec``). ``run`` enqueues
    inferences; ``input_shapes`` / ``output_shapes`` are the resolved shapes."""

    __slots__ = ("_h", "model", "context", "batch", "precision", "layout", "input_shapes", "output_shapes",
                 "__weakref__")

    def __init__(self, model: Model, context: Union[Context, DeviceLike, None] = None, batch: Optional[int] = None,
                 precision: str = "auto", layout: str = "auto") -> None:
        self._h = None
        _require_models("Model.exec")
        if not isinstance(model, Model):
            raise InvalidArgumentError(f"ModelExec: model is {type(model).__name__}, not a gaio.Model")
        if precision not in PRECISIONS:
            raise InvalidArgumentError(f"Model.exec: precision {precision!r} is not one of {sorted(PRECISIONS)}")
        if layout not in LAYOUTS:
            raise InvalidArgumentError(f"Model.exec: layout {layout!r} is not one of {sorted(LAYOUTS)}")
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int)):
            raise InvalidArgumentError(f"Model.exec: batch is {batch!r}, not an int")
        if isinstance(context, Stream):
            context = context.context
        ctx = context if isinstance(context, Context) else default_context(0 if context is None else context)
        opts = ModelExecOptions(0 if batch is None else batch, PRECISIONS[precision], LAYOUTS[layout])
        h = c_void_p()
        st = lib.gaio_model_exec_create_ex(model._h, ctx.handle, byref(opts), byref(h))
        if st:
            raise_status(st)
        self._h = h.value
        self.model, self.context, self.batch = model, ctx, batch
        self.precision, self.layout = precision, layout
        symbolic = any(None in t.shape for t in model.inputs + model.outputs)
        b = batch if symbolic else None
        self.input_shapes = tuple(t.resolved(b) for t in model.inputs)
        self.output_shapes = tuple(t.resolved(b) for t in model.outputs)

    def __del__(self) -> None:
        if self._h:
            lib.gaio_model_exec_release(self._h)
            self._h = None

    @property
    def handle(self) -> int:
        """The gaio_model_exec pointer, for C code."""
        return self._h

    def empty_outputs(self, stream: Optional[Stream] = None, kind: str = "device") -> list:
        """New tensors of the outputs' shapes and dtypes on this exec's context."""
        from .tensor import empty
        ctx = None if stream is not None else self.context
        return [empty(shape, t.dtype, context=ctx, kind=kind, stream=stream)
                for shape, t in zip(self.output_shapes, self.model.outputs)]

    def run(self, stream: Stream, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> Future:
        """Enqueues one inference on ``stream`` (of this exec's context) and returns a
        future that completes when ``outputs`` are written; never blocks. The tensors
        stay alive until then even if the caller drops them; each tensor's ``stream``
        becomes ``stream``. Everything is checked before anything is enqueued: a bad
        count, dtype or shape raises ``gaio.InvalidArgumentError``."""
        if not isinstance(stream, Stream):
            raise InvalidArgumentError(f"ModelExec.run: stream is {type(stream).__name__}, not a gaio.Stream")
        ins, outs = _descs("inputs", inputs), _descs("outputs", outputs)
        h = c_void_p()
        st = lib.gaio_model_run(self._h, stream._h, ins[0], len(ins[1]), outs[0], len(outs[1]), byref(h))
        if st:
            raise_status(st)
        # libgaio's ops hold the tensors' buffers until the run is done (as for every op),
        # so nothing on the Python side needs to outlive the call.
        fut = Future._adopt(h.value, (self, stream, ins[1], outs[1]))
        for t in ins[1] + outs[1]:
            t.stream = stream
        return fut

    def __call__(self, stream: Stream, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> Future:
        return self.run(stream, inputs, outputs)

    def __repr__(self) -> str:
        return (f"<gaio.ModelExec of {self.model.source} on {self.context.device} batch {self.batch} "
                f"precision {self.precision} layout {self.layout}>")


def _descs(what: str, tensors: Sequence[Tensor]) -> Tuple[Any, tuple]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise InvalidArgumentError(f"ModelExec.run: {what} must be a list of gaio.Tensor, not "
                                   f"{type(tensors).__name__}")
    ts = tuple(tensors)
    arr = (TensorDesc * max(len(ts), 1))()
    for i, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise InvalidArgumentError(f"ModelExec.run: {what}[{i}] is {type(t).__name__}, not a gaio.Tensor")
        if t.ndim > _lib.TENSOR_MAX_NDIM:
            raise InvalidArgumentError(f"ModelExec.run: {what}[{i}] has {t.ndim} dimensions; gaio's tensors take "
                                       f"at most {_lib.TENSOR_MAX_NDIM}")
        d = arr[i]
        d.buffer, d.offset, d.dtype, d.ndim, d.layout = t.buffer._h, t.offset, t._dtype, t.ndim, 0
        for k, (n, s) in enumerate(zip(t.shape, t.strides)):
            d.shape[k], d.strides[k] = n, s
    return arr, ts
