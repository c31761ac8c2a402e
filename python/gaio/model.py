"""ONNX models: load once, build an engine for a device, run many execution contexts.

The split is TensorRT's builder -> engine -> execution context:

* a :class:`Model` is the parsed, checked ONNX file: host data, shared by everything
  built from it;
* an :class:`Engine` is the model built once for one context's device and options
  (precision, layout, the inputs' shapes): the plan (batch norms folded, convolution +
  add + activation fused, the activation arena sized), the tuned convolution plans and
  the weights on the device in their final form. :meth:`Model.build` blocks (seconds on
  a GPU); ``await model.build_async(...)`` builds on a gaio thread and awaits the build
  through the event loop's completion queue, so the loop keeps running. An engine is
  written to a file with :meth:`Engine.save` and read back with :meth:`Engine.load`,
  without the ONNX model or the tuning;
* a :class:`ModelExec` (``engine.exec()``) is an execution context: its own activation
  arena (and CUDA graph); the weights and plans are the engine's, so making one is
  cheap. :meth:`ModelExec.run` enqueues one inference on a stream and returns a
  :class:`gaio.Future` at once::

    model = gaio.Model("resnet50.onnx")
    ctx = gaio.default_context("cuda")
    engine = await model.build_async(ctx, batch=32)                   # f16, NHWC on a GPU
    engine.save("resnet50.engine")            # later: gaio.Engine.load("resnet50.engine", ctx)
    ex = engine.exec()
    s = gaio.Stream(ctx)
    x = gaio.tensor(images, stream=s)                                 # [32, 3, 224, 224] float32
    y = gaio.empty(ex.output_shapes[0], engine.outputs[0].dtype, stream=s)
    await ex.run(s, [x], [y])

Runs of different execs run at the same time: for inferences in parallel, make one
exec per stream, all of one engine (the weights are not copied). Runs of one exec are
ordered (consecutive runs on different streams wait for each other by an event, as
they share the activations). ``model.exec(context, batch=...)`` is the shorthand
``model.build(context, batch=...).exec()``.

Inputs and outputs are packed row-major tensors of the model's dtype and the engine's
shapes (``engine.inputs`` / ``engine.outputs``, ``ex.input_shapes`` /
``ex.output_shapes``: every symbolic dimension resolved).

A model gaio cannot run is refused when it loads: ``gaio.NotSupportedError`` naming
the node and its operator; a malformed file raises ``gaio.InvalidArgumentError``, and
so does an engine file that is not one ("... is not a gaio engine: ...").
"""
from __future__ import annotations

import operator
import os
from collections.abc import Mapping
from ctypes import byref, c_char_p, c_void_p
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import (EngineInfo as _EngineInfo, ModelOperator as _ModelOperator, EngineOptions, EngineShape, EngineStep as _EngineStep, ModelExecOptions,
                   ModelIo, ModelSummary, TensorDesc, lib)
from .context import Context, default_context
from .device import DeviceLike
from .errors import InvalidArgumentError, NotImplementedByGaioError, NotSupportedError, check, raise_status
from .future import Future
from .stream import Stream
from .tensor import Tensor

__all__ = ["Model", "Engine", "EngineInfo", "EngineStep", "ModelExec", "TensorInfo", "ModelSummaryInfo", "PRECISIONS",
           "LAYOUTS", "onnx_supported"]

#: ``precision=`` names and their gaio_model_precision codes
PRECISIONS = {"auto": 0, "model": 1, "f16": 2, "f16-fast": 3}
#: ``layout=`` names and their gaio_model_layout codes
LAYOUTS = {"auto": 0, "nchw": 1, "nhwc": 2}
_LAYOUT_NAMES = {1: "nchw", 2: "nhwc"}

_NUMPY_NAMES = {4: "float16", 5: "float32", 6: "int32", 7: "int64"}  # gaio_dtype codes a model's inputs and outputs take

_SourceLike = Union[str, os.PathLike, bytes, bytearray, memoryview]
_ContextLike = Union[Context, Stream, DeviceLike, None]


def _require_models(where: str) -> None:
    if not _lib.HAS_MODELS:
        raise NotImplementedByGaioError(f"{where}: the loaded libgaio ({_lib.library_path}) has no gaio_model_* "
                                        "functions; build a newer one")


def _require_engines(where: str) -> None:
    _require_models(where)
    if not _lib.HAS_ENGINES:
        raise NotImplementedByGaioError(f"{where}: the loaded libgaio ({_lib.library_path}) has no gaio_engine_* "
                                        "functions; build a newer one")


def _context(context: _ContextLike) -> Context:
    """A Context, a Stream's context, or the default context of a device (default: the first)."""
    if isinstance(context, Stream):
        context = context.context
    return context if isinstance(context, Context) else default_context(0 if context is None else context)


def _numpy_dtype(code: int) -> Any:
    import numpy as np

    name = _NUMPY_NAMES.get(code)
    return np.dtype(name) if name else code  # a code gaio does not name stays visible as an int


def operators() -> list:
    """The ONNX operators gaio loads, as (name, first opset, last opset, folds only)
    tuples in gaio's order: the opsets gaio takes each in, and whether it only folds to
    constants at load (shape arithmetic). Empty without ONNX support."""
    out, i = [], 0
    while True:
        o = _ModelOperator()
        if lib.gaio_model_operator_info(i, byref(o)):
            return out
        out.append((o.name.decode(), int(o.first_opset), int(o.last_opset), bool(o.folds_only)))
        i += 1


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


@dataclass(frozen=True)
class EngineInfo:
    """What a built (or loaded) engine holds (gaio_engine_info)."""
    batch: int            # the symbolic dimensions' value (0 when the model has none)
    dtype: Any            # of the weights and intermediates: numpy float16 or float32
    layout: str           # of 4-D intermediates and convolution weights: "nchw" or "nhwc"
    weight_bytes: int     # on the device, once per engine
    arena_bytes: int      # activations: one arena per execution context
    nodes: int            # the model's nodes
    steps: int            # the steps they became
    folded_bn: int        # batch norms folded into convolutions
    fused_add: int        # adds fused: convolutions' residuals, MatMuls' biases and residuals
    fused_act: int        # activations fused into convolutions and MatMuls, GELU chains made one op
    convs: int            # convolution steps
    cuda_graph: bool      # contexts replay one CUDA graph per run
    loaded: bool          # read by Engine.load, not built
    build_seconds: float  # the build's (or the load's) wall time
    f16_accumulation: bool  # precision "f16-fast": convolutions may sum in f16


class EngineStep(NamedTuple):
    """A step of an engine's plan: ``(name, ops, kernel)``."""
    name: str    # the first node's name ("" when the file gave none)
    ops: str     # the ONNX operators it runs: "Conv+BatchNormalization+Add+Relu"
    kernel: str  # what runs a convolution (cuDNN's engine, "gaio depthwise", oneDNN's), else ""


def _info(io: ModelIo) -> TensorInfo:
    n = io.ndim
    dtype = _numpy_dtype(io.dtype)
    shape = tuple(None if io.shape[i] < 0 else int(io.shape[i]) for i in range(n))
    dims = tuple((io.dim_names[i] or b"").decode(errors="replace") for i in range(n))
    return TensorInfo((io.name or b"").decode(errors="replace"), dtype, shape, dims)


def _str(b: Optional[bytes]) -> str:
    return (b or b"").decode(errors="replace")


def _size(n: int) -> str:
    return f"{n / 1048576:.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB"


class Model:
    """A loaded ONNX model: ``gaio.Model(path)`` or ``gaio.Model(bytes)``.

    External data files are read from the model's directory (and must stay inside
    it); a model given as bytes must hold its weights inline."""

    __slots__ = ("_h", "inputs", "outputs", "summary", "source", "__weakref__")

    def __init__(self, source: _SourceLike) -> None:
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
        self._describe()

    @classmethod
    def _retained(cls, handle: int, source: str) -> "Model":
        """A Model of a gaio_model handle that someone else owns (an engine's): takes a
        reference of its own, so it stays valid after the owner goes."""
        check(lib.gaio_model_retain(handle))
        m = object.__new__(cls)
        m._h = handle
        m.source = source
        m._describe()
        return m

    def _describe(self) -> None:
        s = ModelSummary()
        check(lib.gaio_model_summarize(self._h, byref(s)))
        self.summary = ModelSummaryInfo(s.ir_version, s.opset, s.inputs, s.outputs, s.nodes, s.initializers,
                                        s.weight_bytes, _str(s.producer))
        self.inputs = tuple(self._io(lib.gaio_model_input, i) for i in range(s.inputs))
        self.outputs = tuple(self._io(lib.gaio_model_output, i) for i in range(s.outputs))

    def _io(self, fn: Any, i: int) -> TensorInfo:
        io = ModelIo()
        check(fn(self._h, i, byref(io)))
        return _info(io)

    def __del__(self) -> None:
        if getattr(self, "_h", None):
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
            out.append((_str(name.value), _str(op.value)))
        return out

    def build(self, context: _ContextLike = None, batch: Optional[int] = None, precision: str = "auto",
              layout: str = "auto", shapes: Optional[Mapping] = None, tune: bool = True,
              cuda_graph: bool = True, profile: Optional[Mapping] = None) -> "Engine":
        """Builds an :class:`Engine` of this model for ``context``'s device (a Context, a
        Stream's context, or a device such as ``"cuda:0"``; default: the first device's
        default context) and blocks until it is ready (seconds on a GPU; the GIL is
        released meanwhile).

        ``batch`` is the value of the symbolic dimensions (needed when the model has
        any, unless ``shapes`` gives it); ``shapes`` maps input names to their whole
        shape (``{"input": (4, 3, 224, 224)}``; fixed dimensions must match the model).
        ``precision``: "auto" (f16 on a GPU, the model's own on the host), "model",
        "f16", or "f16-fast" (f16 with convolutions that may sum in f16, as PyTorch's f16
        does: faster, less precise; on the host as "f16"); ``layout``: "auto" (NHWC), "nchw" or "nhwc", of intermediates and
        convolution weights. ``tune=False`` takes cuDNN's first plan per convolution
        untimed (a faster build); ``cuda_graph=False`` makes the execution contexts
        enqueue the layers one by one instead of replaying a CUDA graph. ``profile`` maps
        input names to ``(min, opt, max)`` shapes (TensorRT's optimization profile): the
        engine is built for ``opt`` and its execs may be set to any shape between
        (``ModelExec.set_shapes``; the engine of a new shape is built then). Bad options
        raise ``gaio.InvalidArgumentError``."""
        return _build("Model.build", self, context, batch, precision, layout, shapes, tune, cuda_graph,
                      profile=profile)

    def build_async_future(self, context: _ContextLike = None, batch: Optional[int] = None,
                           precision: str = "auto", layout: str = "auto", shapes: Optional[Mapping] = None,
                           tune: bool = True, cuda_graph: bool = True,
                           profile: Optional[Mapping] = None) -> Tuple["Engine", Future]:
        """Starts building an engine (options as :meth:`build`) on a gaio thread and
        returns at once ``(engine, built)``: ``built`` is a :class:`gaio.Future` that
        completes when the build ends (``await built``, ``built.result()``), failing with
        the build's error. Until then, anything that reads the engine (``info``,
        ``inputs``, ``exec()``, ``save``) waits for the build; dropping the engine while
        it builds is safe. Bad options raise here, before the build starts."""
        return _build("Model.build_async", self, context, batch, precision, layout, shapes, tune, cuda_graph,
                      asynchronous=True, profile=profile)

    async def build_async(self, context: _ContextLike = None, batch: Optional[int] = None, precision: str = "auto",
                          layout: str = "auto", shapes: Optional[Mapping] = None, tune: bool = True,
                          cuda_graph: bool = True, profile: Optional[Mapping] = None) -> "Engine":
        """``engine = await model.build_async(...)``: :meth:`build` on a gaio thread while
        the event loop runs on; the build's completion reaches the loop through its
        completion queue (no thread per build calls into Python). A failed build raises
        the ``gaio.Error`` of its status with its message."""
        engine, built = self.build_async_future(context, batch, precision, layout, shapes, tune, cuda_graph, profile)
        await built
        return engine

    def exec(self, context: _ContextLike = None, batch: Optional[int] = None, precision: str = "auto",
             layout: str = "auto") -> "ModelExec":
        """Shorthand for ``self.build(context, batch, precision, layout).exec()``: an
        execution context of an engine of its own (which it holds: ``ex.engine``).
        Blocks until the weights are on the device."""
        return ModelExec(self, context, batch, precision, layout)

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.inputs)
        outs = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.outputs)
        return f"<gaio.Model {self.source} ({self.summary.nodes} nodes) ({ins}) -> ({outs})>"


def _as_int(where: str, what: str, v: Any) -> int:
    if isinstance(v, bool):
        raise InvalidArgumentError(f"{where}: {what} is {v!r}, not an int")
    try:
        return operator.index(v)
    except TypeError:
        raise InvalidArgumentError(f"{where}: {what} is {v!r}, not an int") from None


def _dims(where: str, name: Any, dims: Any, what: str = "shapes") -> tuple:
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__len__"):
        raise InvalidArgumentError(f"{where}: {what}[{name!r}] is {dims!r}, not a tuple of dimensions")
    dims = tuple(_as_int(where, f"{what}[{name!r}]'s dimension", d) for d in dims)
    if not 1 <= len(dims) <= _lib.MODEL_MAX_NDIM:
        raise InvalidArgumentError(f"{where}: {what}[{name!r}] has {len(dims)} dimensions; gaio takes 1 to "
                                   f"{_lib.MODEL_MAX_NDIM}")
    return dims


def _shape_array(where: str, shapes: Mapping, profile: Optional[Mapping] = None) -> Any:
    """EngineShape[] of {name: dims} and {name: (min, opt, max)} (names kept alive by the array)."""
    profile = profile or {}
    if not isinstance(profile, Mapping):
        raise InvalidArgumentError(f"{where}: profile is {type(profile).__name__}; give a dict {{input name: (min, "
                                   "opt, max)}}")
    both = set(shapes) & set(profile)
    if both:
        raise InvalidArgumentError(f"{where}: {sorted(both)} in both shapes and profile (a profile's opt is the shape)")
    names = list(shapes) + list(profile)
    arr = (EngineShape * len(names))()
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise InvalidArgumentError(f"{where}: shapes has the key {name!r}; keys are input names (str)")
        if name in shapes:
            lo = hi = None
            dims = _dims(where, name, shapes[name])
        else:
            r = profile[name]
            if isinstance(r, (str, bytes)) or not hasattr(r, "__len__") or len(r) != 3:
                raise InvalidArgumentError(f"{where}: profile[{name!r}] is {r!r}, not (min, opt, max) shapes")
            lo, dims, hi = (_dims(where, name, d, "profile") for d in r)
            if not len(lo) == len(dims) == len(hi):
                raise InvalidArgumentError(f"{where}: profile[{name!r}]'s min, opt and max differ in rank")
        arr[i].name = name.encode()
        arr[i].ndim = len(dims)
        for k, d in enumerate(dims):
            arr[i].dims[k] = d
            if lo is not None:
                arr[i].min_dims[k], arr[i].max_dims[k] = lo[k], hi[k]
    return arr


def _options(where: str, batch: Optional[int], precision: str, layout: str, shapes: Optional[Mapping], tune: bool,
             cuda_graph: bool, profile: Optional[Mapping] = None) -> EngineOptions:
    """gaio_engine_options of the Python arguments (the shapes' array and names kept
    alive by the struct itself); what only C can check (an input's name, the dimensions
    against the model) is left to it."""
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise InvalidArgumentError(f"{where}: precision {precision!r} is not one of {sorted(PRECISIONS)}")
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise InvalidArgumentError(f"{where}: layout {layout!r} is not one of {sorted(LAYOUTS)}")
    b = 0 if batch is None else _as_int(where, "batch", batch)
    flags = (0 if tune else _lib.ENGINE_NO_TUNE) | (0 if cuda_graph else _lib.ENGINE_NO_CUDA_GRAPH)
    opts = EngineOptions(b, PRECISIONS[precision], LAYOUTS[layout], None, 0, flags)
    if shapes is None:
        shapes = {}
    if not isinstance(shapes, Mapping):
        raise InvalidArgumentError(f"{where}: shapes is {type(shapes).__name__}; give a dict {{input name: shape}}")
    if not shapes and not profile:
        return opts
    arr = _shape_array(where, shapes, profile)
    opts.shapes = arr  # the struct keeps arr (and with it the names) alive
    opts.nshapes = len(arr)
    return opts


def _build(where: str, model: Model, context: _ContextLike, batch: Optional[int], precision: str, layout: str,
           shapes: Optional[Mapping], tune: bool, cuda_graph: bool, asynchronous: bool = False,
           profile: Optional[Mapping] = None) -> Any:
    _require_engines(where)
    if not isinstance(model, Model):
        raise InvalidArgumentError(f"{where}: model is {type(model).__name__}, not a gaio.Model")
    opts = _options(where, batch, precision, layout, shapes, tune, cuda_graph, profile)
    ctx = _context(context)
    h, fut = c_void_p(), c_void_p()
    if asynchronous:
        st = lib.gaio_engine_build_async(model._h, ctx.handle, byref(opts), byref(h), byref(fut))
    else:
        st = lib.gaio_engine_build(model._h, ctx.handle, byref(opts), byref(h))
    if st:
        raise_status(st)
    e = Engine._adopt(h.value, model, ctx, model.source, precision, layout)
    if not asynchronous:
        return e
    built = Future._adopt(fut.value)
    e._built = built
    return e, built


class Engine:
    """A model built for one context's device and options (``Model.build``,
    ``await Model.build_async``) or read from a file (``Engine.load``): the plan, the
    tuned convolution plans and the weights on the device. ``exec()`` makes execution
    contexts, cheap and many: runs of different ones run at the same time.

    ``model`` is the engine's :class:`Model` (for a loaded engine, the graph the file
    holds, without weights of its own), ``context`` its :class:`gaio.Context`;
    ``precision`` and ``layout`` the options it was built with ("f16" / "model" and
    the layout for a loaded one; ``info`` has what they resolved to). ``info``,
    ``steps``, ``inputs`` and ``outputs`` wait for a build still running."""

    __slots__ = ("_h", "_built", "model", "context", "source", "precision", "layout", "_info", "_inputs", "_outputs",
                 "__weakref__")

    def __new__(cls, *args: Any, **kwargs: Any) -> "Engine":  # made by gaio only
        raise TypeError("gaio.Engine is made by Model.build(), Model.build_async() or Engine.load()")

    @classmethod
    def _adopt(cls, handle: int, model: Model, ctx: Context, source: str, precision: str, layout: str) -> "Engine":
        e = object.__new__(cls)
        e._h = handle
        e._built = None
        e.model, e.context, e.source = model, ctx, source
        e.precision, e.layout = precision, layout
        e._info = e._inputs = e._outputs = None
        return e

    @classmethod
    def load(cls, source: _SourceLike, context: _ContextLike = None) -> "Engine":
        """Reads an engine file written by :meth:`save` (a path, or its bytes) for
        ``context`` (default: the first device's default context), whose device must
        be the one it was built on. No ONNX model and no tuning needed. A missing file
        raises ``gaio.NotFoundError``; a truncated, corrupted or foreign one
        ``gaio.InvalidArgumentError`` ("... is not a gaio engine: ..."); one of another
        device, gaio or cuDNN version ``gaio.NotSupportedError``."""
        _require_engines("Engine.load")
        ctx = _context(context)
        h = c_void_p()
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            st = lib.gaio_engine_load_memory(data, len(data), ctx.handle, byref(h))
            src = f"<engine of {len(data)} bytes>"
        elif isinstance(source, (str, os.PathLike)):
            st = lib.gaio_engine_load(os.fsencode(source), ctx.handle, byref(h))
            src = os.fspath(source)
        else:
            raise InvalidArgumentError(f"Engine.load: source is {type(source).__name__}; give a path or the bytes "
                                       "of an engine file")
        if st:
            raise_status(st)
        e = cls._adopt(h.value, None, ctx, src, "auto", "auto")  # released by e if what follows fails
        mh = c_void_p()
        check(lib.gaio_engine_model(e._h, byref(mh)))
        e.model = Model._retained(mh.value, src)
        info = e.info
        e.precision = "f16-fast" if info.f16_accumulation else "f16" if info.dtype == _numpy_dtype(4) else "model"
        e.layout = info.layout
        return e

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            lib.gaio_engine_release(h)  # safe while a build runs: the build finishes, then the engine goes

    @property
    def handle(self) -> int:
        """The gaio_engine pointer, for C code."""
        return self._h

    @property
    def info(self) -> EngineInfo:
        """What the engine holds (gaio_engine_info); raises the build's error if it failed."""
        if self._info is None:
            i = _EngineInfo()
            check(lib.gaio_engine_get_info(self._h, byref(i)))
            self._info = EngineInfo(int(i.batch), _numpy_dtype(i.dtype), _LAYOUT_NAMES.get(i.layout, str(i.layout)),
                                    int(i.weight_bytes), int(i.arena_bytes), i.nodes, i.steps, i.folded_bn,
                                    i.fused_add, i.fused_act, i.convs, bool(i.cuda_graph), bool(i.loaded),
                                    float(i.build_seconds), bool(i.f16_accumulation))
        return self._info

    @property
    def steps(self) -> list:
        """The plan's steps in order: ``EngineStep(name, ops, kernel)`` tuples."""
        out = []
        st = _EngineStep()
        for i in range(self.info.steps):
            check(lib.gaio_engine_get_step(self._h, i, byref(st)))
            out.append(EngineStep(_str(st.name), _str(st.ops), _str(st.kernel)))
        return out

    @property
    def inputs(self) -> Tuple[TensorInfo, ...]:
        """The graph's inputs with the engine's shapes (nothing symbolic)."""
        if self._inputs is None:
            self._inputs = tuple(self._io(lib.gaio_engine_input, i) for i in range(len(self.model.inputs)))
        return self._inputs

    @property
    def outputs(self) -> Tuple[TensorInfo, ...]:
        """The graph's outputs with the engine's shapes (nothing symbolic)."""
        if self._outputs is None:
            self._outputs = tuple(self._io(lib.gaio_engine_output, i) for i in range(len(self.model.outputs)))
        return self._outputs

    def _io(self, fn: Any, i: int) -> TensorInfo:
        io = ModelIo()
        check(fn(self._h, i, byref(io)))
        return _info(io)

    def exec(self) -> "ModelExec":
        """A new execution context of this engine (its own activation arena, and CUDA
        graph on a GPU); it holds the engine."""
        return ModelExec(self)

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the engine to ``path`` (a temporary file beside it renamed over it: a
        reader never sees half a file), for :meth:`Engine.load`."""
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidArgumentError(f"Engine.save: path is {type(path).__name__}, not a str or os.PathLike")
        check(lib.gaio_engine_save(self._h, os.fsencode(path)))

    def __repr__(self) -> str:
        where = f"gaio.Engine of {self.source} on {self.context.device}"
        if self._built is not None and not self._built.done():
            return f"<{where} (building)>"
        try:
            i = self.info
        except Exception as err:  # noqa: BLE001 - a failed build: repr says so
            return f"<{where} (failed: {err})>"
        return (f"<{where}: batch {i.batch} {i.dtype} {i.layout}, {i.steps} steps for {i.nodes} nodes, "
                f"weights {_size(i.weight_bytes)}, arena {_size(i.arena_bytes)}"
                f"{', CUDA graph' if i.cuda_graph else ''}{', loaded' if i.loaded else ''}>")


class ModelExec:
    """An execution context of an :class:`Engine` (``engine.exec()``, or the shorthand
    ``Model.exec``). ``run`` enqueues inferences; ``input_shapes`` / ``output_shapes``
    are the engine's resolved shapes; ``engine`` is the engine it holds."""

    __slots__ = ("_h", "engine", "model", "context", "batch", "precision", "layout", "input_shapes", "output_shapes",
                 "__weakref__")

    def __init__(self, source: Union[Engine, Model], context: _ContextLike = None, batch: Optional[int] = None,
                 precision: str = "auto", layout: str = "auto") -> None:
        """``ModelExec(engine)``, or ``ModelExec(model, context, batch, precision,
        layout)``: an engine of the model built first (``Model.exec``)."""
        self._h = None
        _require_models("Model.exec")
        if isinstance(source, Model):
            if not _lib.HAS_ENGINES:  # a libgaio from before engines
                self._legacy(source, context, batch, precision, layout)
                return
            source = _build("Model.exec", source, context, batch, precision, layout, None, True, True)
        elif not isinstance(source, Engine):
            raise InvalidArgumentError(f"ModelExec: source is {type(source).__name__}, not a gaio.Engine or "
                                       "gaio.Model")
        h = c_void_p()
        st = lib.gaio_engine_create_exec(source._h, byref(h))
        if st:
            raise_status(st)
        self._h = h.value
        self.engine, self.model, self.context = source, source.model, source.context
        self.batch = source.info.batch or None
        self.precision, self.layout = source.precision, source.layout
        self.input_shapes = tuple(t.shape for t in source.inputs)
        self.output_shapes = tuple(t.shape for t in source.outputs)

    def set_shapes(self, shapes: Mapping) -> None:
        """Sets the input shapes runs take (``{name: shape}``; inputs not named keep
        theirs), within the engine's profile (``Model.build(profile=...)``); a shape
        outside raises ``gaio.InvalidArgumentError`` naming the input and the range. The
        engine of a new shape is built on first use (blocking, the GIL released), then
        kept by the engine for its other execs. ``input_shapes`` / ``output_shapes``
        follow."""
        if not isinstance(shapes, Mapping) or not shapes:
            raise InvalidArgumentError("ModelExec.set_shapes: give a non-empty dict {input name: shape}")
        arr = _shape_array("ModelExec.set_shapes", shapes)
        check(lib.gaio_model_exec_set_shapes(self._h, arr, len(arr)))
        self.input_shapes = tuple(self._io(lib.gaio_model_exec_input, i).shape for i in range(len(self.model.inputs)))
        self.output_shapes = tuple(self._io(lib.gaio_model_exec_output, i).shape
                                   for i in range(len(self.model.outputs)))

    def _io(self, fn: Any, i: int) -> TensorInfo:
        io = ModelIo()
        check(fn(self._h, i, byref(io)))
        return _info(io)

    def _legacy(self, model: Model, context: _ContextLike, batch: Optional[int], precision: str,
                layout: str) -> None:
        if precision not in PRECISIONS:
            raise InvalidArgumentError(f"Model.exec: precision {precision!r} is not one of {sorted(PRECISIONS)}")
        if layout not in LAYOUTS:
            raise InvalidArgumentError(f"Model.exec: layout {layout!r} is not one of {sorted(LAYOUTS)}")
        b = 0 if batch is None else _as_int("Model.exec", "batch", batch)
        ctx = _context(context)
        opts = ModelExecOptions(b, PRECISIONS[precision], LAYOUTS[layout])
        h = c_void_p()
        st = lib.gaio_model_exec_create_ex(model._h, ctx.handle, byref(opts), byref(h))
        if st:
            raise_status(st)
        self._h = h.value
        self.engine, self.model, self.context, self.batch = None, model, ctx, batch
        self.precision, self.layout = precision, layout
        symbolic = any(None in t.shape for t in model.inputs + model.outputs)
        rb = batch if symbolic else None
        self.input_shapes = tuple(t.resolved(rb) for t in model.inputs)
        self.output_shapes = tuple(t.resolved(rb) for t in model.outputs)

    def __del__(self) -> None:
        if getattr(self, "_h", None):
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
