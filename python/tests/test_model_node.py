"""ONNX's own backend node test cases for every operator gaio supports, run by
gaio's ONNX executor on the host and compared with ONNX's expected outputs and,
where ``onnxruntime`` imports, with onnxruntime's (CPU) outputs too.

The cases come from ONNX's generators (``onnx.backend.test.case.node``; Debian's
python3-onnx ships those but not the stored test data), built in-process. A case is
selected when every node's operator is in gaio's table (src/model/ops.c) and its
inputs and outputs are float32 / float16 tensors, or int64 tensors among the inputs;
or, when every node only moves elements (ANY_DTYPE: Gather, GatherElements, Pad,
Slice, Where), when its inputs and outputs are also int32, int64 or bool tensors.

Three rewrites make a case a model gaio is meant to take, without changing its
meaning (the original forms are checked to be refused, at the end):

* int64 inputs that gaio needs at load time (Reshape's shape, Squeeze's axes,
  Slice's starts, Pad's pads, ...) become initializers holding the case's values:
  gaio does shape arithmetic at load time only, as on an exported model, where these
  are constants. An int64 input that only feeds what gaio takes at run time (Gather's
  and GatherElements' indices, the data of an ANY_DTYPE operator) stays a graph
  input.
* float inputs that are Resize's roi or scales (Upsample's scales) become
  initializers too: they set the output's shape, which gaio fixes at load, and an
  exported model holds them as constants.
* a model whose opset is below 7 (gaio loads 7 to 22) is raised to 7 when every
  node's operator has the same definition at 7 as at its own opset (HardSigmoid-6,
  ...): the file's meaning is the same. Cases of opsets 7 to 12 run as ONNX wrote them
  (Clip's bounds, Squeeze's axes as attributes, Softmax over the flattened trailing
  dimensions, Dropout's ratio attribute).

A case gaio refuses must be listed in EXPECTED_UNSUPPORTED with why, and be refused
with NotSupportedError at load or exec creation naming the node; a listed case that
runs fails, so the list stays honest. KNOWN_BUGS are cases gaio gets wrong (strict
xfail: fixing one fails the test until it leaves the list)."""
from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import re
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import gaio

#: GAIO_REQUIRE_ONNX=1 (ctest's python_tests and python_model_node_onnxruntime, in a build
#: with ONNX; GAIO_REQUIRE_ONNXRUNTIME=1 implies it): no onnx, or a libgaio without ONNX
#: support, fails this module instead of skipping it, so that it cannot pass having run nothing.
REQUIRE_ONNX = "1" in (os.environ.get("GAIO_REQUIRE_ONNX"), os.environ.get("GAIO_REQUIRE_ONNXRUNTIME"))

try:
    import onnx
    import onnx.backend.test.case.node as onnx_node_cases
    from onnx import numpy_helper
except ImportError as e:  # no onnx, or one without its test-case generators
    if REQUIRE_ONNX:
        raise ImportError(f"GAIO_REQUIRE_ONNX: onnx's node test generators do not import ({e})") from e
    pytest.skip(f"SKIPPED: onnx's node test generators do not import ({e})", allow_module_level=True)
if not gaio.model.onnx_supported():
    if REQUIRE_ONNX:
        raise RuntimeError("GAIO_REQUIRE_ONNX: libgaio was built without ONNX support")
    pytest.skip("SKIPPED: libgaio built without ONNX support", allow_module_level=True)

try:
    import onnxruntime as ort
except ImportError:  # the pip-installed package's venv has none; ONNX's expected outputs are checked regardless
    ort = None
    if os.environ.get("GAIO_REQUIRE_ONNXRUNTIME") == "1":  # ctest python_model_node_onnxruntime
        raise

#: gaio's operator table, as in src/model/ops.c (test_supported_list_matches_ops_c checks it)
SUPPORTED = ("Conv", "Gemm", "MatMul", "BatchNormalization", "Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish",
             "Add", "Sub", "Mul", "Div", "MaxPool", "AveragePool", "GlobalAveragePool", "Flatten", "Reshape",
             "Transpose", "Concat", "Softmax", "Identity", "Constant", "Shape", "Gather", "Unsqueeze", "Squeeze",
             "Cast", "ReduceMean", "Dropout", "Slice", "Pad", "Split", "ConstantOfShape", "Range", "Expand",
             "Resize", "Upsample", "Tile", "Equal", "Less", "Greater", "Not", "And", "Or", "Where", "Sqrt", "Exp",
             "Log", "Tanh", "Abs", "Neg", "Reciprocal", "Floor", "Ceil", "Erf", "Softplus", "Gelu", "Sin", "Cos",
             "Pow", "Min", "Max", "Sum", "Mean", "GatherElements", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd",
             "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "TopK",
             "LogSoftmax", "ConvTranspose", "LayerNormalization",
             "GroupNormalization", "InstanceNormalization", "Mod", "Einsum", "ScatterND")
#: operators gaio only folds at load (src/model/engine.c node_check refuses them at run time)
LOAD_TIME_ONLY = {"Constant", "Shape", "ConstantOfShape", "Range", "Equal", "Less", "Greater", "Not", "And", "Or",
                  "ScatterND"}
#: operators that only move elements: gaio runs them on int32, int64 and bool tensors too
ANY_DTYPE = {"Gather", "GatherElements", "Pad", "Slice", "Where"}
#: (operator, input slot) that gaio reads at run time: an int64 graph input feeding only these stays an input
RUNTIME_INT_SLOTS = {("Gather", 0), ("Gather", 1), ("GatherElements", 0), ("GatherElements", 1), ("Pad", 0),
                     ("Slice", 0), ("Where", 1), ("Where", 2)}
#: supported operators none of whose ONNX cases gaio can run, and why
NO_RUNNING_CASE = {
}
NO_RUNNING_CASE["Einsum"] = "ONNX's cases are float64; test_einsum_equations below runs it"
NO_RUNNING_CASE["ReduceLogSumExp"] = ("ONNX's cases are float64; tests/dnn/test_dnn_reduce_axes.c and "
                                      "test_reduce_hand below run it")
# GroupNormalization's cases came in onnx 1.14 (Debian's 1.12 has none).
if importlib.util.find_spec(f"{onnx_node_cases.__name__}.groupnormalization") is None:
    NO_RUNNING_CASE["GroupNormalization"] = (f"onnx {onnx.__version__} has no GroupNormalization cases (1.14 on "
                                             "has); tests/model/make_models.py's norm models run it")
MIN_OPSET = 7

_RUNTIME_INPUT = "input {} is computed at run time"
#: case name -> (why gaio refuses it, a piece of gaio's message that says so)
EXPECTED_UNSUPPORTED = {
    # Pools on other than 2-D images.
    "test_averagepool_1d_default": ("1-D AveragePool", "1-D pools are not supported"),
    "test_averagepool_3d_default": ("3-D AveragePool", "3-D pools are not supported"),
    "test_maxpool_1d_default": ("1-D MaxPool", "1-D pools are not supported"),
    "test_maxpool_3d_default": ("3-D MaxPool", "3-D pools are not supported"),
    "test_convtranspose_1d": ("1-D ConvTranspose", "1-D transposed convolutions are not supported"),
    "test_convtranspose_3d": ("3-D ConvTranspose", "3-D transposed convolutions are not supported"),
    # Attributes and inputs gaio does not take.
    "test_batchnorm_example_training_mode": ("BatchNormalization training_mode=1", "training_mode 1"),
    "test_batchnorm_epsilon_training_mode": ("BatchNormalization training_mode=1", "training_mode 1"),
    "test_clip_example": ("Clip min/max as runtime inputs", _RUNTIME_INPUT.format(1)),
    "test_clip": ("Clip min/max as runtime inputs", _RUNTIME_INPUT.format(1)),
    "test_clip_inbounds": ("Clip min/max as runtime inputs", _RUNTIME_INPUT.format(1)),
    "test_clip_outbounds": ("Clip min/max as runtime inputs", _RUNTIME_INPUT.format(1)),
    "test_clip_splitbounds": ("Clip min/max as runtime inputs", _RUNTIME_INPUT.format(1)),
    "test_clip_default_min": ("Clip min as a runtime input", _RUNTIME_INPUT.format(1)),
    "test_clip_default_max": ("Clip max as a runtime input", _RUNTIME_INPUT.format(2)),
    # Models gaio's tensors cannot describe, or operands gaio_gemm / MatMul do not take.
    "test_constant": ("a graph without inputs", "the graph has no inputs"),
    "test_gemm_default_scalar_bias": ("Gemm C a 0-D graph input", "(Gemm): C of rank 0"),
    "test_gemm_default_single_elem_vector_bias": ("Gemm C broadcast from [1]", "(Gemm): C of rank 1"),
    "test_gemm_beta": ("Gemm beta != 1 on a row C", "(Gemm): C of rank"),
    "test_gemm_all_attributes": ("Gemm beta != 1 on a row C", "(Gemm): C of rank"),
    "test_reshape_allowzero_reordered": ("an empty graph input", "gaio runs no empty tensors"),
    "test_dropout_default_ratio": ("Dropout's ratio a 0-D graph input", "is a scalar (0-D)"),
    "test_split_zero_size_splits": ("an empty graph input", "gaio runs no empty tensors"),
    "test_constantofshape_float_ones": ("a graph of constants only (its shape an initializer)", "the graph has no inputs"),
    "test_range_float_type_positive_delta": ("Range of run-time scalars", "is computed at run time"),
    "test_constant_pad": ("Pad's constant_value a graph input", "constant_value 'value' is computed at run time"),
    "test_slice_start_out_of_bounds": ("an empty Slice", "gaio runs no empty tensors"),
    "test_unsqueeze_three_axes": ("a 6-D graph output", "has 6 dimensions: gaio tensors have 1 to 5"),
    "test_unsqueeze_unsorted_axes": ("a 6-D graph output", "has 6 dimensions: gaio tensors have 1 to 5"),
    "test_pow_bcast_scalar": ("Pow's exponent a 0-D graph input", "graph input 'y' is a scalar (0-D)"),
    # ScatterND folds on constants only (Swin's masks); ONNX's cases scatter graph inputs.
    **{f"test_scatternd{k}": ("ScatterND of run-time data", "gaio folds ScatterND on constants only")
       for k in ("", "_add", "_multiply")},
    # Pow with an integer exponent (int64 here; int32 inputs are not selected).
    "test_pow_types_float32_int64": ("Pow with an int64 exponent", "gaio's Pow takes an exponent of the base's type"),
    # Composite (expanded) cases whose other operators gaio takes only in part.
    "test_nllloss_NCd1d2d3d4d5_none_no_weight_expanded": ("GatherElements of rank 7",
                                                          "has rank 7 at run time: gaio tensors have 1 to 5"),
    # Training losses reduced to one number: a 0-D output.
    # (those with ignore_index subtract it from the int64 targets first: a fold, the
    # targets being constants here)
    **{f"test_nllloss_{k}_expanded": ("a scalar loss (0-D graph output)", "is a scalar (0-D)")
       for k in ("NCd1", "NCd1_weight", "NCd1_ii", "NCd1_weight_ii", "NCd1_mean_weight_negative_ii",
                 "NCd1d2_reduction_mean", "NCd1d2_reduction_sum", "NCd1d2_with_weight_reduction_mean",
                 "NCd1d2_with_weight_reduction_sum", "NCd1d2_with_weight_reduction_sum_ii",
                 "NCd1d2_no_weight_reduction_mean_ii", "NCd1d2d3_sum_weight_high_ii")},
    "test_nllloss_NCd1d2d3d4d5_mean_weight_expanded": ("a Gather of rank 6", "has rank 6 at run time"),
}

#: case name -> what is wrong (see the report in the lead's notes); strict xfail
KNOWN_BUGS: dict = {}

#: case name -> where onnxruntime departs from ONNX's expected output, which gaio matches:
#: those cases are checked against ONNX's output only (and onnxruntime must still differ)
ORT_DIFFERS = {
    **{f"test_resize_downsample_scales_{k}_align_corners":
       "align_corners divides by the output length floored, minus 1 (1 here); ONNX's reference divides by "
       "in * scale - 1 (1.4)" for k in ("linear", "cubic")},
}

F32_TOL = dict(rtol=1e-4, atol=1e-4)
# float16 keeps 11 significant bits (spacing 2**-10 at 1.0): a backend computing in
# float32 and rounding once may still differ from numpy's rounding by one unit in
# the last place, and one computing in float16 by a few.
F16_TOL = dict(rtol=2e-3, atol=1e-3)

_FLOAT = (np.dtype(np.float32), np.dtype(np.float16))
_INT64 = np.dtype(np.int64)
_ANY = _FLOAT + (_INT64, np.dtype(np.int32), np.dtype(np.bool_))
#: operators whose outputs are indices: their cases' int64 outputs are selected too
_INDEX_OPS = {"ArgMax", "ArgMin", "TopK"}


def _collect() -> tuple:
    """Every node test case ONNX's generators build, and the generator modules that
    failed to import.

    Two shims, for the collection only, keep onnx 1.12's generators working where its
    neighbours are newer: numpy >= 1.24 dropped the np.float / np.object aliases some
    use, and protobuf >= 4 (pip's, as onnxruntime's wheel brings) refuses a bool in an
    int attribute (MaxPool's ceil_mode=True), which would end the pool generators
    half way through."""
    onnx_node_cases._TargetOpType = None  # no filter: every operator's cases
    failed = {}
    make_attribute = onnx.helper.make_attribute
    aliases = {k: v for k, v in (("float", float), ("object", object)) if k not in np.__dict__}

    def make_attribute_bool_as_int(key, value, *args, **kwargs):
        return make_attribute(key, int(value) if isinstance(value, bool) else value, *args, **kwargs)

    onnx.helper.make_attribute = make_attribute_bool_as_int
    for k, v in aliases.items():
        setattr(np, k, v)
    try:
        for _, name, _ in pkgutil.iter_modules(onnx_node_cases.__path__):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    importlib.import_module(f"{onnx_node_cases.__name__}.{name}")
            except Exception as e:  # noqa: BLE001 - one broken generator must not hide the others
                failed[name] = f"{type(e).__name__}: {e}"
    finally:
        onnx.helper.make_attribute = make_attribute
        for k in aliases:
            delattr(np, k)
    return list(onnx_node_cases._NodeTestCases), failed


def _is_array(a, dtypes) -> bool:
    return isinstance(a, (np.ndarray, np.generic)) and np.asarray(a).dtype in dtypes


def _selected(case) -> bool:
    g = case.model.graph
    if not g.node or g.node[0].op_type not in SUPPORTED or any(n.op_type not in SUPPORTED for n in g.node):
        return False
    if any(n.domain not in ("", "ai.onnx") for n in g.node):
        return False
    ins, outs = case.data_sets[0]
    if len(ins) != len(g.input) or len(outs) != len(g.output):
        return False
    out_types = _FLOAT + ((_INT64,) if any(n.op_type in _INDEX_OPS for n in g.node) else ())
    if all(_is_array(a, _FLOAT + (_INT64,)) for a in ins) and all(_is_array(a, out_types) for a in outs):
        return True
    return all(n.op_type in ANY_DTYPE for n in g.node) and all(_is_array(a, _ANY) for a in list(ins) + list(outs))


ALL_CASES, FAILED_GENERATORS = _collect()
CASES = [c for c in ALL_CASES if _selected(c)]
if not any(n.op_type == "Gelu" for c in ALL_CASES for n in c.model.graph.node):
    # Gelu came in opset 20 (onnx 1.15): test_gelu below checks it against the formula.
    NO_RUNNING_CASE["Gelu"] = f"onnx {onnx.__version__} generates no Gelu case"


def _opset(model) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _same_definition(model, opset: int) -> bool:
    """Whether every node's operator means the same at `opset` as at the model's."""
    have = _opset(model)
    for n in model.graph.node:
        try:
            a = onnx.defs.get_schema(n.op_type, have, n.domain).since_version
            b = onnx.defs.get_schema(n.op_type, opset, n.domain).since_version
        except Exception:  # noqa: BLE001 - no schema: leave the model as it is
            return False
        if a != b:
            return False
    return True


def _resize_args(model) -> set:
    """Names of the values that are Resize's roi or scales, or Upsample's scales."""
    return {name for n in model.graph.node for i, name in enumerate(n.input)
            if name and ((n.op_type == "Resize" and i in (1, 2)) or (n.op_type == "Upsample" and i == 1))}


def promoted(case) -> list:
    """The case's int64 graph inputs that gaio needs at load time: each feeds some slot
    other than RUNTIME_INT_SLOTS."""
    g = case.model.graph
    out = []
    for vi, a in zip(g.input, case.data_sets[0][0]):
        if np.asarray(a).dtype != _INT64:
            continue
        slots = {(n.op_type, j) for n in g.node for j, name in enumerate(n.input) if name == vi.name}
        if not slots <= RUNTIME_INT_SLOTS:
            out.append(vi.name)
    return out


def prepare(case, promote_int64: bool = True, raise_opset: bool = True, promote_resize_args: bool = True):
    """The case's model as gaio should take it (the module docstring says how), the
    feeds {name: array} and the expected outputs."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    g = model.graph
    for i, n in enumerate(g.node):
        if not n.name:  # ONNX's cases leave nodes unnamed; gaio's messages name them
            n.name = f"{case.name}_n{i}"
    ins, outs = case.data_sets[0]
    keep, feeds = [], {}
    promote = set(promoted(case))
    resize_args = _resize_args(model) if promote_resize_args else set()
    for vi, a in zip(list(g.input), ins):
        a = np.asarray(a)
        if (promote_int64 and vi.name in promote) or vi.name in resize_args:
            g.initializer.append(numpy_helper.from_array(a, vi.name))
        else:
            keep.append(vi)
            feeds[vi.name] = a
    del g.input[:]
    g.input.extend(keep)
    if raise_opset and _opset(model) < MIN_OPSET and _same_definition(model, MIN_OPSET):
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = MIN_OPSET
    return model, feeds, [np.asarray(o) for o in outs]


def run_gaio(model, feeds: dict, layout: str = "auto", device: str = "cpu", batch=None) -> list:
    """Loads, plans and runs `model` on `device` (layout auto: 4-D values NHWC on the
    host; batch: its symbolic dimensions' value); returns its outputs in order, as
    numpy arrays."""
    m = gaio.Model(model.SerializeToString())
    # precision "model": "auto" would run f16 on a GPU; untuned: the cases are tiny
    ex = m.build(device, batch=batch, layout=layout, precision="model", tune=False).exec()
    s = gaio.Stream(device)

    def fed(a):  # gaio keeps bool as u8
        a = np.ascontiguousarray(a) if a.ndim else a
        return a.view(np.uint8) if a.dtype == np.bool_ else a

    xs = [gaio.tensor(fed(feeds[t.name]), device=device, stream=s) for t in m.inputs]
    ys = ex.empty_outputs(s)
    ex.run(s, xs, ys).result(timeout=60)
    return [y.numpy() for y in ys]


def load_and_plan(model) -> None:
    gaio.Model(model.SerializeToString()).exec("cpu")


def run_ort(model, feeds: dict) -> list:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def assert_close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "iub":  # moved, not computed: exact
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    tol = F16_TOL if want.dtype == np.float16 else F32_TOL
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0.0))
    print(f"{what}: max abs error {err:.3g}")
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), err_msg=what, **tol)


def _params():
    out = []
    for c in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[c.name])] if c.name in KNOWN_BUGS else []
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
def test_node_case(case):
    model, feeds, expected = prepare(case)
    if case.name in EXPECTED_UNSUPPORTED:
        reason, piece = EXPECTED_UNSUPPORTED[case.name]
        try:
            load_and_plan(model)
        except gaio.NotSupportedError as e:
            msg = str(e)
            print(f"refused as expected ({reason}): {msg}")
            # A node's refusal names it and its operator; the graph's own (its inputs and
            # outputs) names the graph input or output, or says the graph has none.
            graph_level = re.search(r"graph (input|output) '[^']+'|the graph has no inputs", msg)
            assert graph_level or any(f"'{n.name}' ({n.op_type})" in msg for n in model.graph.node), \
                f"the refusal does not name the node and its operator: {msg}"
            assert piece in msg, f"refused, but not for the listed reason ({reason!r}): {msg}"
            return
        pytest.fail(f"{case.name} now loads and plans: take it out of EXPECTED_UNSUPPORTED ({reason})")
    got = run_gaio(model, feeds)
    assert len(got) == len(expected)
    for i, (g, want) in enumerate(zip(got, expected)):
        assert_close(g, want, f"output {i} vs ONNX's expected")
    if ort is not None and case.name in ORT_DIFFERS:
        theirs = [np.asarray(t) for t in run_ort(model, feeds)]
        assert any(t.shape != w.shape or not np.allclose(t, w, **F32_TOL) for t, w in zip(theirs, expected)), \
            f"onnxruntime {ort.__version__} now gives ONNX's output: take {case.name} out of ORT_DIFFERS"
        print(f"onnxruntime {ort.__version__} differs from ONNX's output, as listed: {ORT_DIFFERS[case.name]}")
    elif ort is not None:
        for i, (g, want) in enumerate(zip(got, run_ort(model, feeds))):
            assert_close(g, np.asarray(want), f"output {i} vs onnxruntime {ort.__version__}")


@pytest.mark.gpu
@pytest.mark.parametrize("case", _params())
def test_node_case_gpu(case):
    """The same cases on the CUDA backend (gaio's kernels, cuDNN, cuBLASLt), against
    ONNX's expected outputs and the host backend's. Refusals are test_node_case's to
    check: a case refused on the host too is skipped here, one refused on the GPU only
    fails (the backends take the same models)."""
    model, feeds, expected = prepare(case)
    if case.name in EXPECTED_UNSUPPORTED:
        pytest.skip(f"SKIPPED: refused on every backend ({EXPECTED_UNSUPPORTED[case.name][0]}); test_node_case checks how")
    try:
        host = run_gaio(model, feeds)
    except gaio.NotSupportedError as e:  # a newer onnx's case (the lists follow the build machine's)
        pytest.skip(f"SKIPPED: the host refuses it too, and onnx {onnx.__version__}'s case is not listed: {e}")
    got = run_gaio(model, feeds, device="cuda:0")
    assert len(got) == len(expected)
    for i, (g, want, h) in enumerate(zip(got, expected, host)):
        assert_close(g, want, f"output {i} on the GPU vs ONNX's expected")
        assert_close(g, h, f"output {i} on the GPU vs the host")


def _ops(case) -> set:
    return {n.op_type for n in case.model.graph.node}


def test_selection_covers_every_supported_operator():
    """A generator change (or a broken import) must not shrink coverage unseen."""
    print(f"{len(ALL_CASES)} node cases generated, {len(CASES)} selected; generators that failed to import: "
          f"{sorted(FAILED_GENERATORS) or 'none'}; onnxruntime: {ort.__version__ if ort else 'not importable'}")
    # A generator of a supported operator that breaks loses its cases part way.
    watched = {op.lower() for op in SUPPORTED} | {"batchnorm", "castlike"}
    broken = {k: v for k, v in FAILED_GENERATORS.items() if k in watched}
    assert not broken, f"generators of supported operators failed to import: {broken}"
    names = {c.name for c in CASES}
    stale = sorted((set(EXPECTED_UNSUPPORTED) | set(KNOWN_BUGS)) - names)
    assert not stale, f"listed cases ONNX no longer generates (or no longer selected): {stale}"
    assert not set(EXPECTED_UNSUPPORTED) & set(KNOWN_BUGS)
    assert not set(ORT_DIFFERS) - names, f"ORT_DIFFERS lists cases not selected: {sorted(set(ORT_DIFFERS) - names)}"
    running = set()
    for c in CASES:
        if c.name not in EXPECTED_UNSUPPORTED and c.name not in KNOWN_BUGS:
            running |= _ops(c)
    for op in SUPPORTED:
        n = sum(1 for c in CASES if op in _ops(c) and c.name not in EXPECTED_UNSUPPORTED and c.name not in KNOWN_BUGS)
        print(f"  {op}: {n} running case(s)")
    want = set(SUPPORTED) - LOAD_TIME_ONLY - set(NO_RUNNING_CASE)
    missing = sorted(want - running)
    assert not missing, f"supported operators with no running ONNX case: {missing}"
    gained = sorted(set(NO_RUNNING_CASE) & running)
    assert not gained, f"operators in NO_RUNNING_CASE that now have a running case: {gained}"


def test_supported_list_matches_ops_c():
    src = Path(__file__).resolve().parents[2] / "src" / "model" / "ops.c"
    if not src.is_file():
        pytest.skip(f"SKIPPED: {src} is not here (an installed package)")
    table = re.findall(r'\[OP_\w+\]\s*=\s*"(\w+)"', src.read_text())
    assert sorted(table) == sorted(SUPPORTED), "update SUPPORTED to src/model/ops.c's table"


# ---- the forms the rewrites above hide ----------------------------------------------------


def _runs(case) -> bool:
    return case.name not in EXPECTED_UNSUPPORTED and case.name not in KNOWN_BUGS


INT64_INPUT_CASES = [pytest.param(c, id=c.name) for c in CASES if _runs(c) and promoted(c)]


@pytest.mark.parametrize("case", INT64_INPUT_CASES)
def test_runtime_shape_input_is_refused(case):
    """With its int64 argument as a graph input, a case gaio runs is refused, naming
    that input (gaio does shape arithmetic at load time only)."""
    model, _, _ = prepare(case, promote_int64=False)
    int64_inputs = promoted(case)
    with pytest.raises(gaio.NotSupportedError) as info:
        load_and_plan(model)
    msg = str(info.value)
    print(msg)
    # (an expanded function reads its own copy of an input, named ..._expanded_<input>)
    assert any(f"'{name}'" in msg or f"_expanded_{name}'" in msg for name in int64_inputs), msg


RESIZE_ARG_CASES = [pytest.param(c, id=c.name) for c in CASES
                    if _runs(c) and _resize_args(c.model) & {vi.name for vi in c.model.graph.input}]


@pytest.mark.parametrize("case", RESIZE_ARG_CASES)
def test_runtime_resize_args_are_refused(case):
    """With Resize's roi or scales (Upsample's scales) a graph input, a case gaio runs
    is refused naming that input: the output's shape would be known only at run time."""
    model, _, _ = prepare(case, promote_resize_args=False)
    names = _resize_args(case.model) & {vi.name for vi in case.model.graph.input}
    with pytest.raises(gaio.NotSupportedError) as info:
        load_and_plan(model)
    msg = str(info.value)
    print(msg)
    assert "computed at run time" in msg and any(f"'{name}'" in msg for name in names), msg


def test_old_opsets_are_refused():
    """The opset rewrite hides gaio's refusal of opsets below 7: one case of each such
    opset, as ONNX wrote it, is refused naming its opset."""
    first = {}
    for c in CASES:
        if _runs(c) and _opset(c.model) < MIN_OPSET:
            first.setdefault(_opset(c.model), c)
    if not first:
        pytest.skip("SKIPPED: no selected ONNX case has an opset below 7 (nothing rewritten)")
    for opset, case in sorted(first.items()):
        model, _, _ = prepare(case, raise_opset=False)
        with pytest.raises(gaio.NotSupportedError, match=f"opset {opset}:") as info:
            load_and_plan(model)
        print(f"{case.name}: {info.value}")


# ---- hand-written cases for what ONNX's generators leave out --------------------------------------


def _model(nodes, inputs, outputs, opset: int, elem=None):
    """A model of `nodes` over float inputs {name: shape}, outputs {name: shape}."""
    h = onnx.helper
    elem = elem or onnx.TensorProto.FLOAT
    graph = h.make_graph(nodes, "hand", [h.make_tensor_value_info(k, elem, v) for k, v in inputs.items()],
                         [h.make_tensor_value_info(k, elem, v) for k, v in outputs.items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _gelu_ref(x: np.ndarray, approximate: str) -> np.ndarray:
    import math
    x = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


@pytest.mark.parametrize("approximate", [None, "none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gelu(approximate, dtype, dev):
    """Gelu (opset 20), both forms, against the formula in float64."""
    attrs = {} if approximate is None else {"approximate": approximate}
    elem = onnx.TensorProto.FLOAT if dtype == np.float32 else onnx.TensorProto.FLOAT16
    node = onnx.helper.make_node("Gelu", ["x"], ["y"], name="gelu", **attrs)
    model = _model([node], {"x": [3, 4, 5]}, {"y": [3, 4, 5]}, 20, elem)
    x = np.random.default_rng(1).uniform(-6, 6, (3, 4, 5)).astype(dtype)
    got, = run_gaio(model, {"x": x}, device=dev)
    want = _gelu_ref(x, approximate or "none").astype(dtype)
    assert_close(got, want, f"Gelu approximate={approximate}")


def test_gelu_refused():
    """Gelu before opset 20, or an approximate ONNX does not define: refused naming the node."""
    node = onnx.helper.make_node("Gelu", ["x"], ["y"], name="g")
    with pytest.raises(gaio.InvalidArgumentError, match=r"'g' \(Gelu\): Gelu came in opset 20; the model's is 17"):
        load_and_plan(_model([node], {"x": [2, 3]}, {"y": [2, 3]}, 17))
    node = onnx.helper.make_node("Gelu", ["x"], ["y"], name="g", approximate="erf")
    with pytest.raises(gaio.InvalidArgumentError, match="attribute 'approximate' is 'erf'"):
        load_and_plan(_model([node], {"x": [2, 3]}, {"y": [2, 3]}, 20))


_VARIADIC = {"Sum": lambda xs: sum(xs[1:], xs[0]), "Mean": lambda xs: sum(xs[1:], xs[0]) / len(xs),
             "Max": lambda xs: np.maximum.reduce(np.broadcast_arrays(*xs)),
             "Min": lambda xs: np.minimum.reduce(np.broadcast_arrays(*xs))}


@pytest.mark.parametrize("op", sorted(_VARIADIC))
@pytest.mark.parametrize("shapes", [[(3, 1), (1, 4), (2, 1, 1)], [(4,), (2, 3, 4), (3, 1), (1,), (2, 1, 4)],
                                    [(1,), (1,)], [(2, 5)]],
                         ids=["no_input_full", "five", "one_element", "one_input"])
def test_variadic_broadcast(op, shapes, dev):
    """Min, Max, Sum, Mean of 1 to 5 inputs broadcast together (ONNX's cases have inputs of one shape), where
    no input has the output's shape."""
    rng = np.random.default_rng(len(shapes))
    xs = [rng.uniform(-2, 2, s).astype(np.float32) for s in shapes]
    want = np.asarray(_VARIADIC[op](xs), dtype=np.float32)
    names = [f"x{i}" for i in range(len(xs))]
    node = onnx.helper.make_node(op, names, ["y"], name="v")
    model = _model([node], {n: list(s) for n, s in zip(names, shapes)}, {"y": list(want.shape)}, 13)
    got, = run_gaio(model, dict(zip(names, xs)), device=dev)
    assert_close(got, want, f"{op} of {shapes}")


def _avg_pool_ref(x, k, strides, pads, dil, count_include_pad):
    """AveragePool in float64, window by window: taps in x averaged, over the taps in x
    and its padding when count_include_pad."""
    n, c, h, w = x.shape
    oh = (h + pads[0] + pads[2] - dil[0] * (k[0] - 1) - 1) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - dil[1] * (k[1] - 1) - 1) // strides[1] + 1
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = [i * strides[0] - pads[0] + a * dil[0] for a in range(k[0])]
            cols = [j * strides[1] - pads[1] + b * dil[1] for b in range(k[1])]
            rows, cols = [r for r in rows if 0 <= r < h], [q for q in cols if 0 <= q < w]
            taps = x[:, :, rows][:, :, :, cols].astype(np.float64)
            y[:, :, i, j] = taps.sum(axis=(2, 3)) / (k[0] * k[1] if count_include_pad else len(rows) * len(cols))
    return y


@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_average_pool_dilations(count_include_pad, dtype, dev):
    """AveragePool's dilations (opset 19; onnx 1.12 generates no case) with padding."""
    x = np.random.default_rng(19).uniform(-2, 2, (2, 3, 11, 10)).astype(dtype)
    k, strides, pads, dil = (3, 3), (1, 2), (2, 1, 1, 2), (2, 3)  # onnxruntime takes pads < kernel
    want = _avg_pool_ref(x, k, strides, pads, dil, count_include_pad).astype(dtype)
    node = onnx.helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=list(k), strides=list(strides),
                                 pads=list(pads), dilations=list(dil), count_include_pad=count_include_pad)
    model = _typed_model([node], {"x": (dtype, list(x.shape))}, {"y": (dtype, list(want.shape))}, 19)
    _check(model, {"x": x}, want, f"AveragePool dilations {dil} count_include_pad {count_include_pad}", device=dev)


@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((5,), (2, 5, 3)), ((2, 4, 5), (5,)),
                                   ((2, 1, 4, 5), (5,)), ((5,), (3, 2, 5, 6))], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_vectors(sa, sb, dtype, dev):
    """MatMul with 1-D operands, as numpy.matmul: a row on the left, a column on the
    right, the dimension of 1 each adds dropped from the output (1-D by 1-D: a scalar,
    which gaio takes inside a graph, not as its output: reshaped to [1] here)."""
    rng = np.random.default_rng(len(sa) * 7 + len(sb))
    a = rng.uniform(-2, 2, sa).astype(dtype)
    b = rng.uniform(-2, 2, sb).astype(dtype)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    nodes, inits = [onnx.helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], []
    if want.ndim == 0:
        want = want.reshape(1)
        nodes = [onnx.helper.make_node("MatMul", ["a", "b"], ["dot"], name="mm"),
                 onnx.helper.make_node("Reshape", ["dot", "one"], ["y"], name="as_1d")]
        inits = [_i64("one", [1])]
    model = _typed_model(nodes, {"a": (dtype, list(sa)), "b": (dtype, list(sb))}, {"y": (dtype, list(want.shape))}, 13,
                         inits)
    _check(model, {"a": a, "b": b}, want, f"MatMul {sa} x {sb}", device=dev)


# ---- convolution epilogues the planner fuses (src/model/plan.c) -------------------------------

_EPILOGUES = {  # name -> (nodes after the convolution "c", writing "y"; the fused step's operators)
    "relu": ([("Relu", ["c"], {})], "Conv+Relu"),
    "sigmoid": ([("Sigmoid", ["c"], {})], "Conv+Sigmoid"),
    "tanh": ([("Tanh", ["c"], {})], "Conv+Tanh"),
    "hard_sigmoid": ([("HardSigmoid", ["c"], {"alpha": 0.3, "beta": 0.4})], "Conv+HardSigmoid"),
    "hard_swish": ([("HardSwish", ["c"], {})], "Conv+HardSwish"),
    "silu": ([("Sigmoid", ["c"], {}), ("Mul", ["c", "t0"], {})], "Conv+Sigmoid+Mul"),
    "silu_swapped": ([("Sigmoid", ["c"], {}), ("Mul", ["t0", "c"], {})], "Conv+Sigmoid+Mul"),
    # c read a third time: no SiLU fused (the Add still needs c), the result unchanged
    "silu_shared": ([("Sigmoid", ["c"], {}), ("Mul", ["c", "t0"], {}), ("Add", ["t1", "c"], {})], None),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("epilogue", sorted(_EPILOGUES))
def test_conv_epilogue_fusion(epilogue, dtype, dev, monkeypatch):
    """An activation after a convolution (SiLU as x * Sigmoid(x), as exporters write it)
    runs inside the convolution's step, against onnxruntime; a SiLU whose input has
    another reader is left as it is. GAIO_MODEL_FUSE_ACTS=relu turns the wider fusion
    off (checked here on the host too)."""
    if ort is None:
        pytest.skip("SKIPPED: onnxruntime does not import (the reference)")
    h = onnx.helper
    rng = np.random.default_rng(7)
    chain, fused_ops = _EPILOGUES[epilogue]
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1])]
    for i, (op, ins, attrs) in enumerate(chain):
        nodes.append(h.make_node(op, ins, ["y" if i == len(chain) - 1 else f"t{i}"], name=f"{op.lower()}{i}", **attrs))
    inits = [numpy_helper.from_array((rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(dtype), "w"),
             numpy_helper.from_array(rng.standard_normal(8).astype(dtype), "b")]
    model = _typed_model(nodes, {"x": (dtype, [2, 4, 9, 11])}, {"y": (dtype, [2, 8, 9, 11])}, 17, inits)
    x = rng.uniform(-3, 3, (2, 4, 9, 11)).astype(dtype)
    want = np.asarray(run_ort(model, {"x": x})[0])
    engine = gaio.Model(model.SerializeToString()).build(dev, precision="model", tune=False)
    ops = [st.ops for st in engine.steps]
    if fused_ops:
        assert ops == [fused_ops], f"{epilogue}: steps {ops}, expected one {fused_ops!r}"
    else:
        assert ops[0] == "Conv" and len(ops) == len(chain) + 1, f"{epilogue}: steps {ops}"
    got = run_gaio(model, {"x": x}, device=dev)[0]
    assert_close(got, want, f"Conv then {epilogue} vs onnxruntime {ort.__version__}")
    if dev != "cpu" and fused_ops and epilogue != "relu":  # the act after cuDNN's plan (act_in_plan)
        kernel = engine.steps[0].kernel
        assert "runtime fusion" not in kernel, f"{epilogue}: {kernel}"
    if dev == "cpu" and epilogue == "silu":
        monkeypatch.setenv("GAIO_MODEL_FUSE_ACTS", "relu")
        plain = gaio.Model(model.SerializeToString()).build(dev, precision="model", tune=False)
        assert [st.ops for st in plain.steps] == ["Conv", "Sigmoid", "Mul"]
        assert_close(run_gaio(model, {"x": x}, device=dev)[0], want, "Conv, Sigmoid, Mul unfused")


_BN_ACTS = {  # ONNX activation after the batch norm -> (attributes, numpy of it)
    "Relu": ({}, lambda t: np.maximum(t, 0)),
    "Clip": ({}, lambda t: np.clip(t, 0.0, 6.0)),  # bounds as inputs (opset 11 on), below
    "HardSwish": ({}, lambda t: t * np.clip(t / 6 + 0.5, 0, 1)),
    "Sigmoid": ({}, lambda t: 1 / (1 + np.exp(-t))),
}


@pytest.mark.parametrize("channels", [16, 12])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("act", sorted(_BN_ACTS))
def test_batch_norm_act_fusion(act, dtype, channels, dev):
    """A batch norm no convolution absorbs (DenseNet's BN -> ReLU -> Conv) runs its
    activation in the same step, against numpy in float64 (and onnxruntime); where the
    normalized value has a second reader, the activation stays a step of its own. 16
    channels take the GPU kernel's 16-byte vectors in f16 and f32, 12 only in f32."""
    h = onnx.helper
    rng = np.random.default_rng(channels + len(act))
    shape = [2, channels, 5, 7]
    attrs, ref = _BN_ACTS[act]
    prm = [rng.uniform(0.5, 2, channels), rng.uniform(-1, 1, channels), rng.uniform(-1, 1, channels),
           rng.uniform(0.2, 3, channels)]  # scale, bias, mean, var
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for a, n in zip(prm, ["s", "b", "m", "v"])]
    act_in = ["n"]
    if act == "Clip":
        inits += [numpy_helper.from_array(np.array(0.0, dtype), "lo"), numpy_helper.from_array(np.array(6.0, dtype), "hi")]
        act_in += ["lo", "hi"]
    x = rng.uniform(-3, 3, shape).astype(dtype)
    c = lambda a: a.reshape(1, -1, 1, 1)
    t = (x.astype(np.float64) - c(prm[2])) * c(prm[0] / np.sqrt(prm[3] + 1e-5)) + c(prm[1])
    for shared in (False, True):
        nodes = [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["n"], name="bn", epsilon=1e-5),
                 h.make_node(act, act_in, ["a" if shared else "y"], name="act", **attrs)]
        if shared:  # n read twice: y = act(n) + n
            nodes.append(h.make_node("Add", ["a", "n"], ["y"], name="add"))
        want = (ref(t) + (t if shared else 0)).astype(dtype)
        model = _typed_model(nodes, {"x": (dtype, shape)}, {"y": (dtype, shape)}, 15, inits)
        engine = gaio.Model(model.SerializeToString()).build(dev, precision="model", tune=False)
        ops = [st.ops for st in engine.steps]
        expect = ["BatchNormalization", act, "Add"] if shared else [f"BatchNormalization+{act}"]
        assert ops == expect, f"steps {ops}, expected {expect}"
        got = run_layouts(model, {"x": x}, dev)[0]
        assert_close(got, want, f"BatchNormalization then {act}{' (shared)' if shared else ''} vs numpy")
        if ort is not None and dtype == np.float32:
            assert_close(got, np.asarray(run_ort(model, {"x": x})[0]), f"BatchNormalization then {act} vs onnxruntime")


def test_concat_prefix(dev, tmp_path):
    """DenseNet's block: each layer concatenates every map so far. A Concat whose first
    inputs are all of an earlier Concat's reads that one's output instead (one copy for
    the prefix), with the same result as onnxruntime's."""
    if ort is None:
        pytest.skip("SKIPPED: onnxruntime does not import (the reference)")
    h = onnx.helper
    rng = np.random.default_rng(11)
    nodes, inits, maps = [], [], ["x"]
    for i in range(3):
        cin = 8 + 4 * i
        src = maps[0] if i == 0 else f"c{i}"
        inits.append(numpy_helper.from_array((rng.standard_normal((4, cin, 3, 3)) * 0.2).astype(np.float32), f"w{i}"))
        nodes.append(h.make_node("Conv", [src, f"w{i}"], [f"f{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        maps.append(f"f{i}")
        nodes.append(h.make_node("Concat", list(maps), ["y" if i == 2 else f"c{i + 1}"], name=f"cat{i}", axis=1))
    model = _typed_model(nodes, {"x": (np.float32, [2, 8, 6, 6])}, {"y": (np.float32, [2, 20, 6, 6])}, 13, inits)
    engine = gaio.Model(model.SerializeToString()).build(dev, precision="model", tune=False)
    cats = [st for st in engine.steps if st.ops == "Concat"]
    assert [st.kernel for st in cats[1:]] == ["gaio_concat, its first 2 inputs read as 'c1'",
                                              "gaio_concat, its first 3 inputs read as 'c2'"], [st.kernel for st in cats]
    x = rng.uniform(-2, 2, (2, 8, 6, 6)).astype(np.float32)
    want = np.asarray(run_ort(model, {"x": x})[0])
    # (run_gaio, not run_layouts: NCHW and NHWC convolutions round differently)
    assert_close(run_gaio(model, {"x": x}, device=dev)[0], want, "a DenseNet block's Concats vs onnxruntime")
    # The same steps from an engine file.
    path = tmp_path / "densenet_block.gaio"
    engine.save(path)
    loaded = gaio.Engine.load(path, dev)
    assert [st.kernel for st in loaded.steps] == [st.kernel for st in engine.steps]
    ex, s = loaded.exec(), gaio.Stream(dev)
    ys = ex.empty_outputs(s)
    ex.run(s, [gaio.tensor(x, device=dev, stream=s)], ys).result(timeout=60)
    assert_close(ys[0].numpy(), want, "a DenseNet block's Concats from an engine file")


# ---- the indexing operators at run time (Gather, GatherElements, Pad, Slice, Where) ----------------


def _typed_model(nodes, inputs, outputs, opset: int, inits=()):
    """A model of `nodes` over inputs and outputs {name: (numpy dtype, shape)}."""
    h = onnx.helper
    elem = onnx.helper.np_dtype_to_tensor_dtype if hasattr(onnx.helper, "np_dtype_to_tensor_dtype") else \
        (lambda dt: onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)])
    vis = lambda d: [h.make_tensor_value_info(k, elem(np.dtype(t)), s) for k, (t, s) in d.items()]
    graph = h.make_graph(nodes, "hand", vis(inputs), vis(outputs), list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def run_layouts(model, feeds: dict, device: str = "cpu") -> list:
    """run_gaio in each layout of 4-D values (NCHW, NHWC): both must give the same bits."""
    outs = [run_gaio(model, feeds, layout, device) for layout in ("nchw", "nhwc")]
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b, err_msg="NCHW and NHWC engines differ")
    return outs[0]


def _check(model, feeds, want, what, device="cpu"):
    got = run_layouts(model, feeds, device)
    assert_close(got[0], want, f"{what} vs numpy")
    if ort is not None:
        assert_close(got[0], np.asarray(run_ort(model, feeds)[0]), f"{what} vs onnxruntime {ort.__version__}")


@pytest.mark.parametrize("itype", [np.int64, np.int32])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_runtime(dtype, itype, axis, dev):
    """Gather of a 4-D tensor by 2-D indices fed at run time (negative ones too): a 5-D output."""
    rng = np.random.default_rng(axis + 7)
    x = rng.uniform(-4, 4, (3, 5, 2, 4)).astype(dtype)
    s = x.shape[axis]
    ind = rng.integers(-s, s, (2, 2)).astype(itype)
    want = np.take(x, np.where(ind < 0, ind + s, ind), axis=axis)
    node = onnx.helper.make_node("Gather", ["x", "i"], ["y"], name="gather", axis=axis)
    model = _typed_model([node], {"x": (dtype, list(x.shape)), "i": (itype, [2, 2])}, {"y": (dtype, list(want.shape))}, 13)
    _check(model, {"x": x, "i": ind}, want, f"Gather axis {axis}", device=dev)


def test_gather_runtime_clamps_out_of_range(dev):
    """ONNX calls an index outside [-s, s) an error; a kernel cannot report one, so gaio
    clamps it to the nearest end (include/gaio/dnn.h) rather than read past x."""
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    ind = np.array([7, -9, 2, -1], np.int64)
    node = onnx.helper.make_node("Gather", ["x", "i"], ["y"], name="gather", axis=1)
    model = _typed_model([node], {"x": (np.float32, [4, 5]), "i": (np.int64, [4])}, {"y": (np.float32, [4, 4])}, 13)
    got, = run_layouts(model, {"x": x, "i": ind}, dev)
    np.testing.assert_array_equal(got, x[:, [4, 0, 2, 4]])


def test_gather_constant_out_of_range_refused():
    """Constant indices are checked at load."""
    node = onnx.helper.make_node("Gather", ["x", "i"], ["y"], name="gather", axis=1)
    init = numpy_helper.from_array(np.array([1, 5], np.int64), "i")
    model = _typed_model([node], {"x": (np.float32, [4, 5])}, {"y": (np.float32, [4, 2])}, 13, [init])
    with pytest.raises(gaio.InvalidArgumentError, match=r"'gather' \(Gather\): index 5 .*out of range \[-5, 5\)"):
        load_and_plan(model)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gather_scalar_index_and_elements(dtype, dev):
    """A 0-D index drops the axis; GatherElements of channels per position, its indices fed."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, (2, 6, 3, 4)).astype(dtype)
    pick = rng.integers(-6, 6, (2, 3, 3, 4)).astype(np.int64)
    nodes = [onnx.helper.make_node("GatherElements", ["x", "p"], ["e"], name="elements", axis=1),
             onnx.helper.make_node("Gather", ["e", "k"], ["y"], name="scalar", axis=2)]
    init = numpy_helper.from_array(np.array(-1, np.int64), "k")
    want = np.take_along_axis(x, np.where(pick < 0, pick + 6, pick), axis=1)[:, :, -1, :]
    model = _typed_model(nodes, {"x": (dtype, list(x.shape)), "p": (np.int64, list(pick.shape))},
                         {"y": (dtype, list(want.shape))}, 13, [init])
    _check(model, {"x": x, "p": pick}, want, "GatherElements then a scalar Gather", device=dev)


def _np_pad(x, pads, mode, value):
    """ONNX Pad as onnxruntime computes it: negative pads cut first, then numpy.pad."""
    r = x.ndim
    cut = tuple(slice(max(-pads[d], 0), x.shape[d] - max(-pads[d + r], 0)) for d in range(r))
    width = [(max(pads[d], 0), max(pads[d + r], 0)) for d in range(r)]
    if mode == "constant":
        return np.pad(x[cut], width, mode="constant", constant_values=value)
    return np.pad(x[cut], width, mode=mode)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_pad_modes(mode, dtype, dev):
    """Every mode (wrap: opset 19) on H and W with pads of both signs, and on channels."""
    rng = np.random.default_rng(11)
    x = rng.uniform(-4, 4, (2, 3, 5, 6)).astype(dtype)
    pads = [0, 1, 2, -1, 0, 0, -2, 3]
    want = _np_pad(x, pads, mode, 1.5).astype(dtype)
    ins = ["x", "pads"] + (["v"] if mode == "constant" else [])
    inits = [numpy_helper.from_array(np.array(pads, np.int64), "pads"), numpy_helper.from_array(np.array(1.5, dtype), "v")]
    node = onnx.helper.make_node("Pad", ins, ["y"], name="pad", mode=mode)
    model = _typed_model([node], {"x": (dtype, list(x.shape))}, {"y": (dtype, list(want.shape))}, 19,
                         inits[:len(ins) - 1])
    _check(model, {"x": x}, want, f"Pad {mode}", device=dev)


def test_pad_cutting_everything_refused():
    node = onnx.helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="edge")
    init = numpy_helper.from_array(np.array([0, -3, 0, -2], np.int64), "pads")
    model = _typed_model([node], {"x": (np.float32, [2, 4])}, {"y": (np.float32, [2, 1])}, 13, [init])
    with pytest.raises(gaio.NotSupportedError, match=r"'pad' \(Pad\): pads -3 and -2 cut all 4 elements of axis 1"):
        load_and_plan(model)


_I64_MAX, _I64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([-1], [_I64_MIN], [3], [-1]),                       # W flipped
    ([_I64_MAX, 4], [-_I64_MAX, 0], [2, 3], [-2, -3]),   # steps < -1, clamped starts and ends
    ([1, 0, 9], [_I64_MAX, 5, -10], [0, 1, 2], [1, 2, -1]),
    ([-2], [-7], [-1], [-1]),
], ids=["flip_w", "steps_below_minus_1", "mixed", "negative_bounds"])
def test_slice_negative_steps(starts, ends, axes, steps, dev):
    """Slice's clamping (INT64_MAX and INT64_MIN ends, starts past the ends) with negative
    steps, as numpy slices; 4-D, so NHWC engines run it on channels-innermost memory."""
    x = np.random.default_rng(5).uniform(-4, 4, (2, 3, 6, 7)).astype(np.float32)
    idx = [slice(None)] * 4
    for s, e, a, st in zip(starts, ends, axes, steps):
        idx[a] = slice(s, e, st)
    want = x[tuple(idx)]
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    inits = [i64("s", starts), i64("e", ends), i64("a", axes), i64("t", steps)]
    node = onnx.helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"], name="slice")
    model = _typed_model([node], {"x": (np.float32, list(x.shape))}, {"y": (np.float32, list(want.shape))}, 13, inits)
    _check(model, {"x": x}, want, f"Slice {starts}:{ends}:{steps} on {axes}", device=dev)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_where_runtime(dtype, dev):
    """Where with a bool condition fed at run time, broadcast against X and a constant Y."""
    rng = np.random.default_rng(2)
    cond = rng.integers(0, 2, (1, 4, 1, 5)).astype(np.bool_)
    x = rng.uniform(-4, 4, (2, 1, 3, 5)).astype(dtype)
    yv = rng.uniform(-4, 4, (5,)).astype(dtype)
    want = np.where(cond, x, yv)
    node = onnx.helper.make_node("Where", ["c", "x", "b"], ["y"], name="where")
    model = _typed_model([node], {"c": (np.bool_, list(cond.shape)), "x": (dtype, list(x.shape))},
                         {"y": (dtype, list(want.shape))}, 16, [numpy_helper.from_array(yv, "b")])
    _check(model, {"c": cond, "x": x}, want, "Where", device=dev)


# ---- reductions, ArgMax / TopK, Softmax / LogSoftmax beyond ONNX's cases ----------------------

_REDUCE = {
    "ReduceSum": lambda x, a, k: np.sum(x, axis=a, keepdims=k),
    "ReduceMean": lambda x, a, k: np.mean(x, axis=a, keepdims=k),
    "ReduceMax": lambda x, a, k: np.max(x, axis=a, keepdims=k),
    "ReduceMin": lambda x, a, k: np.min(x, axis=a, keepdims=k),
    "ReduceProd": lambda x, a, k: np.prod(x, axis=a, keepdims=k),
    "ReduceL1": lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k),
    "ReduceL2": lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)),
    "ReduceSumSquare": lambda x, a, k: np.sum(x * x, axis=a, keepdims=k),
    "ReduceLogSum": lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)),
    "ReduceLogSumExp": lambda x, a, k: np.log(np.sum(np.exp(x), axis=a, keepdims=k)),
}
#: noop_with_empty_axes: each element as a set of one (ONNX's reference: x, or x^2 for ReduceSumSquare, ...)
_REDUCE_ONE = {"ReduceL1": np.abs, "ReduceL2": np.abs, "ReduceSumSquare": np.square, "ReduceLogSum": np.log}


def _axes_in(op: str, opset: int) -> bool:
    return opset >= (13 if op == "ReduceSum" else 18)


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("op", sorted(_REDUCE))
@pytest.mark.parametrize("axes,keepdims", [((2, 3), 1), ((2, 3), 0), ((1,), 1), ((-1, 0), 0), ((0, 1, 2, 3), 0),
                                           (None, 1), ((), 1)], ids=["hw", "hw_drop", "c", "neg_drop", "all",
                                                                     "default", "noop"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_reduce_hand(op, opset, axes, keepdims, dtype, layout, dev):
    """Every Reduce* over 4-D inputs (NHWC inside the engine) at both forms of its axes (attribute, input),
    with and without keepdims, the default (all axes) and noop_with_empty_axes, in f32 and f16."""
    h, elem = onnx.helper, onnx.TensorProto.FLOAT if dtype == np.float32 else onnx.TensorProto.FLOAT16
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 1.5 if op == "ReduceProd" else 2.0, (2, 3, 4, 5)).astype(dtype)
    noop = axes == ()
    if noop and not _axes_in(op, opset):
        pytest.skip("noop_with_empty_axes came with axes as an input")
    attrs = {"keepdims": keepdims}
    inits = []
    ins = ["x"]
    if noop:
        attrs["noop_with_empty_axes"] = 1
    elif axes is not None and _axes_in(op, opset):
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        ins.append("axes")
    elif axes is not None:
        attrs["axes"] = list(axes)
    x64 = x.astype(np.float64)
    if noop:
        want = _REDUCE_ONE.get(op, lambda v: v)(x64)
    else:
        want = _REDUCE[op](x64, None if axes is None else tuple(axes), bool(keepdims))
    want = np.asarray(want).astype(dtype)
    node = h.make_node(op, ins, ["y"], name="r", **attrs)
    graph = h.make_graph([node], "hand", [h.make_tensor_value_info("x", elem, list(x.shape))],
                         [h.make_tensor_value_info("y", elem, list(want.shape))], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    if not want.shape:
        with pytest.raises(gaio.NotSupportedError, match="is a scalar"):
            load_and_plan(model)
        return
    got, = run_gaio(model, {"x": x}, layout, device=dev)
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **tol)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_softmax_axes(op, opset, axis, layout, dev):
    """Softmax and LogSoftmax of a 4-D input (NHWC inside the engine) on every axis: opset 13's one axis, and
    opset 11's dimensions from axis on as one."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, (2, 3, 4, 5)).astype(np.float32)
    a = axis % 4
    if opset < 13:
        flat = x.reshape(int(np.prod(x.shape[:a])), -1).astype(np.float64)
        m = flat.max(axis=1, keepdims=True)
        lse = m + np.log(np.exp(flat - m).sum(axis=1, keepdims=True))
        want = (flat - lse).reshape(x.shape)
    else:
        x64 = x.astype(np.float64)
        m = x64.max(axis=a, keepdims=True)
        want = x64 - (m + np.log(np.exp(x64 - m).sum(axis=a, keepdims=True)))
    if op == "Softmax":
        want = np.exp(want)
    node = onnx.helper.make_node(op, ["x"], ["y"], name="s", axis=axis)
    got, = run_gaio(_model([node], {"x": list(x.shape)}, {"y": list(x.shape)}, opset), {"x": x}, layout, dev)
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("axis", [1, 3, -4])
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_topk_argmax_ties(largest, axis, layout, dev):
    """TopK (K from a constant) and ArgMax / ArgMin over 4-D inputs with many equal values: the lower index
    first (TopK), the first or last (select_last_index), as numpy's stable sort and argmax / argmin give."""
    h = onnx.helper
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, (2, 3, 4, 5)).astype(np.float32)
    k = 2
    a = axis % 4
    order = np.argsort(-x if largest else x, axis=a, kind="stable")
    want_i = np.take(order, np.arange(k), axis=a)
    want_v = np.take_along_axis(x, want_i, axis=a)
    nodes = [h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=axis, largest=largest),
             h.make_node("ArgMax" if largest else "ArgMin", ["x"], ["first"], name="arg", axis=axis),
             h.make_node("ArgMax" if largest else "ArgMin", ["x"], ["last"], name="arg_last", axis=axis,
                         select_last_index=1, keepdims=0)]
    oshape = list(x.shape)
    oshape[a] = k
    kshape = list(x.shape)
    kshape[a] = 1
    dshape = [d for j, d in enumerate(x.shape) if j != a]
    graph = h.make_graph(nodes, "hand", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape))],
                         [h.make_tensor_value_info("v", onnx.TensorProto.FLOAT, oshape),
                          h.make_tensor_value_info("i", onnx.TensorProto.INT64, oshape),
                          h.make_tensor_value_info("first", onnx.TensorProto.INT64, kshape),
                          h.make_tensor_value_info("last", onnx.TensorProto.INT64, dshape)],
                         [numpy_helper.from_array(np.array([k], np.int64), "k")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    v, i, first, last = run_gaio(model, {"x": x}, layout, device=dev)
    assert i.dtype == np.int64 and first.dtype == np.int64
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(i, want_i)
    f = np.argmax(x, axis=a) if largest else np.argmin(x, axis=a)
    np.testing.assert_array_equal(first, np.expand_dims(f, a))
    flipped = np.flip(x, axis=a)
    lst = x.shape[a] - 1 - (np.argmax(flipped, axis=a) if largest else np.argmin(flipped, axis=a))
    np.testing.assert_array_equal(last, lst)


def test_topk_refusals():
    """TopK's K fed at run time, or 0, or past the axis: refused naming the node."""
    h = onnx.helper
    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 6])
    outs = [h.make_tensor_value_info("v", onnx.TensorProto.FLOAT, None),
            h.make_tensor_value_info("i", onnx.TensorProto.INT64, None)]
    node = h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk")
    for k, err, piece in ((0, gaio.NotSupportedError, "K is 0"), (7, gaio.InvalidArgumentError, "K is 7 but axis 1 has 6")):
        graph = h.make_graph([node], "hand", [x], outs, [numpy_helper.from_array(np.array([k], np.int64), "k")])
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
        with pytest.raises(err, match=piece):
            load_and_plan(model)
    graph = h.make_graph([node], "hand", [x, h.make_tensor_value_info("k", onnx.TensorProto.INT64, [1])], outs)
    with pytest.raises(gaio.NotSupportedError, match=r"'topk' \(TopK\)|'k'"):
        load_and_plan(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]))


# ---- Resize beyond ONNX 1.12's cases: opsets 18 and 19, every rule and mode --------------------


def _keys(x, A):
    x = abs(x)
    return (A + 2) * x ** 3 - (A + 3) * x ** 2 + 1 if x <= 1 else A * x ** 3 - 5 * A * x ** 2 + 8 * A * x - 4 * A \
        if x < 2 else 0.0


def _resize_taps(x_ori, mode, nearest, cubic_a, n_in, exclude_outside, antialias=0, scale=1.0):
    """(indexes, coefficients) of one sampling position, as ONNX's reference picks them:
    the n nearest indexes of x padded by ceil(n / 2) edge copies (the lower on a tie)."""
    ratio = 1.0 if float(x_ori).is_integer() else x_ori - np.floor(x_ori)
    if antialias and mode != "nearest":
        s = min(scale, 1.0)
        start = int(np.floor((-1 if mode == "linear" else -2) / s) + 1)
        args = [(i - ratio) * s for i in range(start, 2 - start)]
        c = [min(max(1 - abs(a), 0.0), 1.0) if mode == "linear" else _keys(a, cubic_a) for a in args]
        c = list(np.array(c) / sum(c))
    elif mode == "nearest":
        if ratio == 1.0:
            c = [0.0, 1.0]
        else:
            hi = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5, "floor": False,
                  "ceil": True}[nearest]
            c = [0.0, 1.0] if hi else [1.0, 0.0]
    elif mode == "linear":
        c = [1 - ratio, ratio]
    else:
        A, r = cubic_a, ratio
        c = [((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
             ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
             ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A]
    n = len(c)
    pad = (n + 1) // 2
    # Exact distances: the reference's float ones (of x + pad, rounded) can tie next to an
    # integer position and pick a window one element off from its coefficients; gaio
    # takes the window around the position.
    cands = sorted(range(-pad, n_in + pad), key=lambda i: (abs(Fraction(float(x_ori)) - i), i))[:n]
    idx = sorted(cands)
    c = np.array(c, np.float64)
    if exclude_outside:
        c = np.where([0 <= i < n_in for i in idx], c, 0.0)
        c = c / c.sum()
    return idx, c


def _resize_ref(x, mode="nearest", coord="half_pixel", nearest="round_prefer_floor", scales=None, sizes=None,
                axes=None, keep="stretch", roi=None, cubic_a=-0.75, exclude_outside=0, extrapolation=0.0, antialias=0):
    """Resize as ONNX's reference (onnx/reference/ops/op_resize.py, opset 19) computes it,
    one axis at a time (the same numbers: it is separable), in float64."""
    r = x.ndim
    axes = list(range(r)) if axes is None else [a % r for a in axes]
    full_roi = [0.0] * r + [1.0] * r
    if roi is not None:
        for i, d in enumerate(axes):
            full_roi[d], full_roi[r + d] = roi[i], roi[len(axes) + i]
    if scales is not None:
        sc = [1.0] * r
        for i, d in enumerate(axes):
            sc[d] = float(np.float32(scales[i]))
        out = [int(sc[d] * x.shape[d]) for d in range(r)]
    else:
        out = list(x.shape)
        for i, d in enumerate(axes):
            out[d] = int(sizes[i])
        sc = [out[d] / x.shape[d] for d in range(r)]
        if keep != "stretch":
            s = (min if keep == "not_larger" else max)(sc[d] for d in axes)
            sc = [s if d in axes else 1.0 for d in range(r)]
            out = [int(s * x.shape[d] + 0.5) if d in axes else x.shape[d] for d in range(r)]
    y = x.astype(np.float64)
    for d in axes:
        n_in, n_out, s = x.shape[d], out[d], sc[d]
        length = s * n_in
        m, ext = np.zeros((n_out, n_in)), np.zeros(n_out, bool)
        for o in range(n_out):
            if coord == "half_pixel":
                xo = (o + 0.5) / s - 0.5
            elif coord == "asymmetric":
                xo = o / s
            elif coord == "pytorch_half_pixel":
                xo = -0.5 if length == 1 else (o + 0.5) / s - 0.5
            elif coord == "tf_half_pixel_for_nn":
                xo = (o + 0.5) / s
            elif coord == "align_corners":
                xo = 0.0 if length == 1 else o * (n_in - 1) / (length - 1)
            elif coord == "half_pixel_symmetric":
                xo = n_in / 2 * (1 - n_out / length) + (o + 0.5) / s - 0.5
            else:  # tf_crop_and_resize
                r0, r1 = np.float32(full_roi[d]), np.float32(full_roi[r + d])
                span = float(r1 - r0)
                xo = span * (n_in - 1) / 2 if length == 1 else o * span * (n_in - 1) / (length - 1)
                xo += float(r0) * (n_in - 1)
                if xo < 0 or xo > n_in - 1:
                    ext[o] = True
                    continue
            idx, c = _resize_taps(xo, mode, nearest, cubic_a, n_in, exclude_outside and mode != "nearest", antialias, s)
            for i, w in zip(idx, c):
                m[o, min(max(i, 0), n_in - 1)] += w
        y = np.moveaxis(np.tensordot(m, np.moveaxis(y, d, 0), 1), 0, d)
        y[(slice(None),) * d + (ext,)] = extrapolation
    return y


def _resize_model(x_shape, opset, elem=None, scales=None, sizes=None, roi=None, name="rs", **attrs):
    """One Resize of a float input; roi, scales and sizes as initializers."""
    h = onnx.helper
    inits, ins = [], ["x"]
    for arg, dtype in (("roi", np.float32), ("scales", np.float32), ("sizes", np.int64)):
        v = {"roi": roi, "scales": scales, "sizes": sizes}[arg]
        if v is not None:
            inits.append(numpy_helper.from_array(np.array(v, dtype), arg))
        ins.append(arg if v is not None else "")
    while ins[-1] == "":
        ins.pop()
    node = h.make_node("Resize", ins, ["y"], name=name, **attrs)
    elem = elem or onnx.TensorProto.FLOAT
    graph = h.make_graph([node], "resize", [h.make_tensor_value_info("x", elem, list(x_shape))],
                         [h.make_tensor_value_info("y", elem, None)], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _check_resize(x, opset, ref_kw, dtype=np.float32, device="cpu", **attrs):
    elem = onnx.TensorProto.FLOAT if dtype == np.float32 else onnx.TensorProto.FLOAT16
    args = {k: ref_kw.get(k) for k in ("scales", "sizes", "roi")}
    if "axes" in ref_kw:
        attrs["axes"] = ref_kw["axes"]
    model = _resize_model(x.shape, opset, elem, **args, **attrs)
    want = _resize_ref(x, **{k: v for k, v in ref_kw.items()}).astype(dtype)
    got, = run_gaio(model, {"x": x}, device=device)
    what = f"Resize-{opset} {attrs} {args}"
    assert_close(got, want, f"{what} vs ONNX's reference")
    if ort is not None:
        try:
            theirs, = run_ort(model, {"x": x})
        except Exception as e:  # noqa: BLE001 - an older onnxruntime without this opset
            print(f"onnxruntime cannot run {what}: {e}")
            return
        # For information: onnxruntime's Resize departs from ONNX's reference in places
        # (see ORT_DIFFERS), so the reference alone decides.
        if theirs.shape != got.shape:
            print(f"{what}: onnxruntime's output is {theirs.shape}, the reference's {got.shape}")
        else:
            print(f"{what}: max abs difference from onnxruntime "
                  f"{float(np.max(np.abs(got.astype(np.float64) - theirs))):.3g}")


_RULES = ["half_pixel", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn", "align_corners",
          "tf_crop_and_resize", "half_pixel_symmetric"]


@pytest.mark.parametrize("coord", _RULES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("by", ["scales", "sizes"])
def test_resize_rules(coord, mode, by, dev):
    """Every coordinate rule and mode at opset 19, up on one axis and down on the other
    by scales that are no whole numbers or to sizes, against ONNX's reference."""
    rng = np.random.default_rng(hash((coord, mode, by)) & 0xFFFF)
    x = rng.uniform(-1, 1, (2, 3, 5, 7)).astype(np.float32)
    kw = dict(mode=mode, coord=coord)
    kw["scales" if by == "scales" else "sizes"] = [1, 1, 1.7, 0.6] if by == "scales" else [2, 3, 9, 4]
    attrs = dict(mode=mode, coordinate_transformation_mode=coord)
    if coord == "tf_crop_and_resize":
        kw.update(roi=[0, 0, 0.1, -0.2, 1, 1, 0.8, 1.1], extrapolation=-2.5)
        attrs["extrapolation_value"] = -2.5
    if coord == "tf_half_pixel_for_nn" and mode != "nearest":
        pytest.skip("SKIPPED: tf_half_pixel_for_nn moves the batch and channels (refused: test_resize_refused)")
    _check_resize(x, 19, kw, device=dev, **attrs)


@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("coord", ["half_pixel", "asymmetric", "align_corners", "half_pixel_symmetric"])
def test_resize_nearest_modes(nearest, coord, dev):
    """Nearest's four roundings, where ties fall (scale 2 and 0.5 sample halfway)."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (1, 2, 6, 4)).astype(np.float32)
    _check_resize(x, 19, dict(mode="nearest", coord=coord, nearest=nearest, scales=[1, 1, 0.5, 2.5]), mode="nearest",
                  coordinate_transformation_mode=coord, nearest_mode=nearest, device=dev)


@pytest.mark.parametrize("keep", ["stretch", "not_larger", "not_smaller"])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_axes_keep_aspect(keep, mode, dev):
    """Opset 18's axes (negative, of H and W only) and keep_aspect_ratio_policy, with a
    cubic exclude_outside and coefficient -0.5, in float16 too."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 3, 6, 10)).astype(np.float32)
    attrs = dict(mode=mode, keep_aspect_ratio_policy=keep)
    # (onnxruntime 1.32 ignores negative axes under not_larger / not_smaller)
    kw = dict(mode=mode, sizes=[9, 4], axes=[-2, -1] if keep == "stretch" else [2, 3], keep=keep)
    if mode == "cubic":
        attrs.update(cubic_coeff_a=-0.5, exclude_outside=1)
        kw.update(cubic_a=-0.5, exclude_outside=1)
    _check_resize(x, 18, kw, device=dev, **attrs)
    _check_resize(x.astype(np.float16), 18, kw, dtype=np.float16, device=dev, **attrs)
    if keep == "stretch":  # the policy takes sizes only
        kw.update(scales=[1.5, 0.7], sizes=None)
        _check_resize(x, 18, kw, device=dev, **attrs)


@pytest.mark.parametrize("coord", ["half_pixel", "align_corners", "half_pixel_symmetric", "tf_crop_and_resize"])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_antialias(mode, coord, dev):
    """Opset 18's antialias: downscaling by 0.3 (H, sizes) and 0.55 (W), the filter
    stretched to 8 and 4 taps (linear) or 14 and 8 (cubic); upscaling (no stretch)."""
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (1, 2, 20, 11)).astype(np.float32)
    attrs = dict(mode=mode, antialias=1, coordinate_transformation_mode=coord)
    kw = dict(mode=mode, coord=coord, antialias=1)
    if coord == "tf_crop_and_resize":
        kw["roi"] = [0.05, 0.1, 0.9, 1.0]
    _check_resize(x, 19, dict(kw, sizes=[6, 6], axes=[2, 3]), device=dev, **attrs)
    _check_resize(x, 19, dict(kw, scales=[0.3, 0.55], axes=[2, 3]), device=dev, **attrs)
    _check_resize(x, 19, dict(kw, scales=[1.6, 0.4], axes=[2, 3], exclude_outside=1), exclude_outside=1, device=dev, **attrs)


def test_resize_symbolic_batch():
    """A symbolic batch passes through Resize by scales, and by sizes of axes (2, 3)."""
    x = np.random.default_rng(5).uniform(-1, 1, (3, 2, 4, 5)).astype(np.float32)
    for opset, kw in ((13, dict(scales=[1, 1, 1.5, 0.8])), (18, dict(sizes=[7, 3], axes=[2, 3]))):
        attrs = dict(mode="linear", **({"axes": kw["axes"]} if "axes" in kw else {}))
        model = _resize_model(["N", 2, 4, 5], opset, scales=kw.get("scales"), sizes=kw.get("sizes"), **attrs)
        assert_close(run_gaio(model, {"x": x}, batch=3)[0], _resize_ref(x, mode="linear", **kw).astype(np.float32),
                     f"Resize-{opset} {kw} batch N")


@pytest.mark.parametrize("what,opset,kw,err,piece", [
    ("antialias past 64 taps", 18, dict(scales=[1, 1, 1, 0.05], mode="cubic", antialias=1), gaio.NotSupportedError,
     "antialias at the width scale 0.05 takes 80 taps: gaio takes up to 64"),
    ("channels", 13, dict(scales=[1, 2, 2, 2], mode="linear"), gaio.NotSupportedError,
     "resizing axis 1 (the channel) is not supported"),
    ("batch by sizes", 13, dict(sizes=[4, 3, 8, 8], mode="nearest"), gaio.NotSupportedError,
     "resizing axis 0 (the batch) is not supported"),
    ("roi of channels", 13, dict(sizes=[2, 3, 8, 8], roi=[0, 0.5, 0, 0, 1, 1, 1, 1], mode="linear",
                                 coordinate_transformation_mode="tf_crop_and_resize"), gaio.NotSupportedError,
     "roi crops axis 1 (the channel)"),
    ("tf_half_pixel_for_nn linear", 13, dict(scales=[1, 1, 2, 2], mode="linear",
                                             coordinate_transformation_mode="tf_half_pixel_for_nn"),
     gaio.NotSupportedError, "moves the batch axis by half an element"),
    ("half_pixel_symmetric before 19", 18, dict(scales=[1, 1, 2, 2], mode="linear",
                                                coordinate_transformation_mode="half_pixel_symmetric"),
     gaio.InvalidArgumentError, "'half_pixel_symmetric' came in opset 19"),
    ("keep_aspect_ratio_policy with scales", 18, dict(scales=[1, 1, 2, 2], keep_aspect_ratio_policy="not_larger"),
     gaio.InvalidArgumentError, "takes sizes, not scales"),
    ("tf_crop_and_resize without roi", 13, dict(sizes=[2, 3, 8, 8], coordinate_transformation_mode="tf_crop_and_resize"),
     gaio.InvalidArgumentError, "tf_crop_and_resize needs roi"),
    ("axes twice", 18, dict(sizes=[8, 8], axes=[3, -1]), gaio.InvalidArgumentError, "axes names axis 3 twice"),
    ("scales for other axes", 18, dict(scales=[1, 1, 2, 2], axes=[2, 3]), gaio.InvalidArgumentError,
     "scales has 4 values for 2 axes"),
    ("scale 0", 13, dict(scales=[1, 1, 0, 2]), gaio.InvalidArgumentError, "scale 0 of axis 2 must be > 0"),
    ("to nothing", 13, dict(scales=[1, 1, 0.1, 2]), gaio.NotSupportedError, "gaio runs no empty tensors"),
])
def test_resize_refused(what, opset, kw, err, piece):
    """What gaio refuses (naming the node, the operator and why) and what ONNX forbids."""
    args = {k: kw.pop(k) for k in ("scales", "sizes", "roi") if k in kw}
    model = _resize_model([2, 3, 4, 40], opset, name="rs", **args, **kw)
    with pytest.raises(err) as info:
        load_and_plan(model)
    msg = str(info.value)
    print(f"{what}: {msg}")
    assert "'rs' (Resize)" in msg and piece in msg, msg


def _resize10(scales, mode="nearest"):
    h = onnx.helper
    node = h.make_node("Resize", ["x", "scales"], ["y"], name="rs", mode=mode)
    graph = h.make_graph([node], "r", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 2, 4])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                         [numpy_helper.from_array(np.array(scales, np.float32), "scales")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 10)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("scales,mode,want", [
    ([1, 1, 0.6, 0.6], "nearest", [[[[1, 3]]]]),  # ONNX 1.5's test_resize_downsample_nearest
    ([1, 1, 2, 1.5], "nearest", [[[[1, 1, 2, 3, 3, 4], [1, 1, 2, 3, 3, 4], [5, 5, 6, 7, 7, 8], [5, 5, 6, 7, 7, 8]]]]),
    ([1, 1, 2, 2], "linear", [[[[1, 1.5, 2, 2.5, 3, 3.5, 4, 4], [3, 3.5, 4, 4.5, 5, 5.5, 6, 6],
                                [5, 5.5, 6, 6.5, 7, 7.5, 8, 8], [5, 5.5, 6, 6.5, 7, 7.5, 8, 8]]]]),
])
def test_resize10(scales, mode, want, dev):
    """Resize-10 (asymmetric; nearest floors when upscaling and rounds up when
    downscaling, as onnxruntime does and ONNX 1.5's cases expect)."""
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 2, 4)
    model = _resize10(scales, mode)
    got, = run_gaio(model, {"x": x}, device=dev)
    assert_close(got, np.array(want, np.float32), f"Resize-10 {mode} {scales}")
    if ort is not None:
        assert_close(got, run_ort(model, {"x": x})[0], f"Resize-10 {mode} {scales} vs onnxruntime")


def test_resize10_nearest_up_and_down_refused():
    with pytest.raises(gaio.NotSupportedError, match="nearest upscaling one axis"):
        load_and_plan(_resize10([1, 1, 2, 0.5]))


def test_resize_cubic_before_11_refused():
    """Resize-10 and Upsample had nearest and linear only."""
    h = onnx.helper
    node = h.make_node("Resize", ["x", "scales"], ["y"], name="rs", mode="cubic")
    graph = h.make_graph([node], "r", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 2, 2])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                         [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 10)])
    model.ir_version = 8
    with pytest.raises(gaio.InvalidArgumentError, match="mode 'cubic' came in Resize-11"):
        load_and_plan(model)


# ---- Einsum -------------------------------------------------------------------------------

EINSUM_CASES = [
    ("bhid,bhjd->bhij", (2, 3, 4, 5), (2, 3, 6, 5)),  # attention's scores, q k^T
    ("bhij,bhjd->bhid", (2, 3, 4, 6), (2, 3, 6, 5)),  # and its values
    ("...id,...jd->...ij", (2, 3, 4, 5), (2, 3, 6, 5)),
    ("BGHID,BGHJD->BGHIJ", (2, 2, 3, 4, 5), (2, 2, 3, 6, 5)),  # MaxViT's, 5-D
    ("BGHIJ,BGHJD->BGHID", (2, 2, 3, 4, 6), (2, 2, 3, 6, 5)),
    ("ij,jk->ik", (7, 5), (5, 3)),
    ("ij,kj->ik", (7, 5), (3, 5)),
    ("ji,jk->ik", (5, 7), (5, 3)),
    ("bik,bjk->bji", (2, 4, 5), (2, 6, 5)),  # the output transposed: out^T = B A^T
    ("ij,jk", (4, 5), (5, 3)),  # implicit output: ik
    ("bi,bj->bij", (3, 4), (3, 5)),  # no summed label: outer products
    ("bid,d->bi", (3, 4, 5), (5,)),  # matrix-vector
    ("b i d, b j d -> b i j", (2, 4, 5), (2, 6, 5)),  # spaces
    ("bhwc,bhkc->bhwk", (1, 2, 3, 8), (1, 2, 5, 8)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("eq,sa,sb", EINSUM_CASES, ids=[c[0].replace(" ", "") for c in EINSUM_CASES])
def test_einsum_equations(eq, sa, sb, dtype, dev):
    """Einsum (opset 12) as one batched GEMM, against numpy.einsum in float64 (and
    onnxruntime), in both engine layouts."""
    rng = np.random.default_rng(len(eq) * 31 + len(sa))
    a = rng.uniform(-2, 2, sa).astype(dtype)
    b = rng.uniform(-2, 2, sb).astype(dtype)
    want = np.einsum(eq.replace(" ", ""), a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    node = onnx.helper.make_node("Einsum", ["a", "b"], ["y"], name="einsum", equation=eq)
    model = _typed_model([node], {"a": (dtype, list(sa)), "b": (dtype, list(sb))},
                         {"y": (dtype, list(want.shape))}, 12)
    _check(model, {"a": a, "b": b}, want, f"Einsum {eq}", device=dev)


@pytest.mark.parametrize("eq,sa,sb,piece", [
    ("ii,ij->j", (3, 3), (3, 4), "twice in a term"),
    ("ij,kl->ik", (3, 4), (5, 6), "summed over one input only"),
    ("ibj,jbk->bik", (3, 2, 4), (4, 2, 5), "lead each term"),
    ("...ij,...jk->...ik", (1, 3, 4), (2, 4, 5), "broadcasts no Einsum dimension"),
    ("bij,bjk->bki", (2, 3, 4), (2, 4, 5), None),  # a valid transposed output: runs (control)
    ("bijk,bkl->bijl", (2, 3, 4, 5), (2, 5, 6), None),  # two row labels: one run
    ("bikj,bkl->bijl", (2, 3, 5, 4), (2, 5, 6), "two runs per term"),
])
def test_einsum_refusals(eq, sa, sb, piece):
    """Products one batched GEMM does not compute are refused at load naming the node,
    the equation and why; the controls run."""
    node = onnx.helper.make_node("Einsum", ["a", "b"], ["y"], name="es", equation=eq)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    if piece is None:
        want = np.einsum(eq, a, b)
        model = _typed_model([node], {"a": (np.float32, list(sa)), "b": (np.float32, list(sb))},
                             {"y": (np.float32, list(want.shape))}, 12)
        _check(model, {"a": a, "b": b}, want.astype(np.float32), f"Einsum {eq}")
        return
    model = _typed_model([node], {"a": (np.float32, list(sa)), "b": (np.float32, list(sb))},
                         {"y": (np.float32, [1])}, 12)
    with pytest.raises(gaio.NotSupportedError) as info:
        load_and_plan(model)
    msg = str(info.value)
    print(msg)
    assert "'es' (Einsum)" in msg and piece in msg, msg


def test_einsum_three_operands_refused():
    node = onnx.helper.make_node("Einsum", ["a", "b", "c"], ["y"], name="es3", equation="ij,jk,kl->il")
    model = _typed_model([node], {k: (np.float32, [3, 3]) for k in "abc"}, {"y": (np.float32, [3, 3])}, 12)
    with pytest.raises(gaio.NotSupportedError, match=r"'es3' \(Einsum\).*two operands"):
        load_and_plan(model)


# ---- integer arithmetic on shapes ------------------------------------------------------------

def _i64(name, v):
    return onnx.numpy_helper.from_array(np.array(v, np.int64), name)


def _channel_shuffle_model(groups: int):
    """ShuffleNet's channel shuffle as exporters write it: [N, C, H, W] reshaped to
    [N, g, C / g, H * W] with C / g an integer Div of the input's own shape (the batch
    symbolic), transposed, reshaped back."""
    h = onnx.helper
    nodes = [h.make_node("Shape", ["x"], ["s"], name="shape"),
             h.make_node("Gather", ["s", "i0"], ["n"], name="batch", axis=0),
             h.make_node("Gather", ["s", "i1"], ["c"], name="channels", axis=0),
             h.make_node("Div", ["c", "g"], ["cg"], name="per_group"),
             h.make_node("Gather", ["s", "i2"], ["hh"], name="height", axis=0),
             h.make_node("Gather", ["s", "i3"], ["ww"], name="width", axis=0),
             h.make_node("Mul", ["hh", "ww"], ["hw"], name="area"),
             h.make_node("Concat", ["n", "g", "cg", "hw"], ["s4"], name="shape4", axis=0),
             h.make_node("Reshape", ["x", "s4"], ["x4"], name="split_groups"),
             h.make_node("Transpose", ["x4"], ["t4"], name="shuffle", perm=[0, 2, 1, 3]),
             h.make_node("Reshape", ["t4", "s"], ["y"], name="back")]
    inits = [_i64("i0", [0]), _i64("i1", [1]), _i64("i2", [2]), _i64("i3", [3]), _i64("g", [groups])]
    return _typed_model(nodes, {"x": (np.float32, ["N", 6, 4, 5])}, {"y": (np.float32, ["N", 6, 4, 5])}, 13, inits)


def test_integer_shape_arithmetic_folds_at_build():
    """Integer Div and Mul on the input's shape with a symbolic batch: the model's
    shapes wait for the build (engine's batch), where the arithmetic folds."""
    model = _channel_shuffle_model(3)
    x = np.random.default_rng(5).standard_normal((2, 6, 4, 5)).astype(np.float32)
    want = x.reshape(2, 3, 2, 20).transpose(0, 2, 1, 3).reshape(2, 6, 4, 5)
    for layout in ("nchw", "nhwc"):
        np.testing.assert_array_equal(run_gaio(model, {"x": x}, layout, batch=2)[0], want)
    if ort is not None:
        np.testing.assert_array_equal(run_ort(model, {"x": x})[0], want)


@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_mod_pads_to_a_multiple(fmod):
    """Swin's padding to a whole window: pad = (-W) mod 3 (the divisor's sign with fmod
    0, the dividend's with 1: then -2, which Pad reads as a cut)."""
    h = onnx.helper
    nodes = [h.make_node("Shape", ["x"], ["s"], name="shape"),
             h.make_node("Gather", ["s", "i3"], ["w"], name="width", axis=0),
             h.make_node("Sub", ["zero", "w"], ["negw"], name="neg_width"),
             h.make_node("Mod", ["negw", "three"], ["p"], name="to_window", fmod=fmod),
             h.make_node("Concat", ["z7", "p"], ["pads"], name="pads", axis=0),
             h.make_node("Pad", ["x", "pads"], ["y"], name="pad")]
    inits = [_i64("i3", [3]), _i64("zero", [0]), _i64("three", [3]), _i64("z7", [0] * 7)]
    p = (-5) % 3 if fmod == 0 else int(np.fmod(-5, 3))
    model = _typed_model(nodes, {"x": (np.float32, ["N", 2, 4, 5])}, {"y": (np.float32, ["N", 2, 4, 5 + p])}, 13, inits)
    x = np.random.default_rng(6).standard_normal((3, 2, 4, 5)).astype(np.float32)
    want = np.pad(x, [(0, 0)] * 3 + [(0, p)]) if p >= 0 else x[..., :5 + p]
    np.testing.assert_array_equal(run_gaio(model, {"x": x}, batch=3)[0], want)
    if ort is not None:
        np.testing.assert_array_equal(run_ort(model, {"x": x})[0], want)


def test_integer_arithmetic_refusals():
    """Integer arithmetic on values computed at run time is refused naming the node (at
    load for fixed shapes); a constant division by zero is an invalid model."""
    h = onnx.helper
    runtime = _typed_model([h.make_node("Add", ["k", "one"], ["y"], name="add_ints")],
                           {"k": (np.int64, [4])}, {"y": (np.int64, [4])}, 13, [_i64("one", [1])])
    with pytest.raises(gaio.NotSupportedError, match=r"'add_ints' \(Add\).*'k' is computed at run time.*integer"):
        gaio.Model(runtime.SerializeToString())
    nodes = [h.make_node("Div", ["a", "z"], ["q"], name="div0"),
             h.make_node("Reshape", ["x", "q"], ["y"], name="r")]
    zero = _typed_model(nodes, {"x": (np.float32, [4])}, {"y": (np.float32, [4])}, 13, [_i64("a", [4]), _i64("z", [0])])
    with pytest.raises(gaio.InvalidArgumentError, match=r"'div0' \(Div\).*divides by zero"):
        gaio.Model(zero.SerializeToString())


# ---- shape-built constants: what transformers' exports fold at build -------------------

def test_swin_style_mask_folds():
    """Swin's shifted-window mask as exported: ScatterND slice assignments on zeros,
    a float difference of two views, != 0 through Equal / Not / Cast to bool, Where
    with a scalar; all of constants, folded at load, added to the input."""
    h = onnx.helper
    rng = np.random.default_rng(11)
    idx = np.array([[0, 0], [1, 2], [2, 1]], np.int64)  # tuples into [3, 4]
    nodes = [h.make_node("ScatterND", ["zeros", "idx", "upd"], ["img"], name="assign"),
             h.make_node("ScatterND", ["img", "idx2", "upd2"], ["img2"], name="assign_add", reduction="add"),
             h.make_node("Unsqueeze", ["img2", "ax1"], ["a"], name="u1"),
             h.make_node("Unsqueeze", ["img2", "ax2"], ["b"], name="u2"),
             h.make_node("Sub", ["a", "b"], ["d"], name="diff"),
             h.make_node("Equal", ["d", "zero"], ["eq"], name="eq"),
             h.make_node("Not", ["eq"], ["ne"], name="ne"),
             h.make_node("Cast", ["ne"], ["c"], name="to_bool", to=onnx.TensorProto.BOOL),
             h.make_node("Where", ["c", "neg", "d"], ["mask"], name="fill"),
             h.make_node("Add", ["x", "mask"], ["y"], name="add")]
    inits = [onnx.numpy_helper.from_array(np.zeros((3, 4), np.float32), "zeros"), _i64("idx", idx),
             onnx.numpy_helper.from_array(np.array([1, 2, 3], np.float32), "upd"),
             _i64("idx2", [[2], [0]]), onnx.numpy_helper.from_array(np.ones((2, 4), np.float32), "upd2"),
             _i64("ax1", [1]), _i64("ax2", [2]), onnx.numpy_helper.from_array(np.array(0, np.float32), "zero"),
             onnx.numpy_helper.from_array(np.array(-100, np.float32), "neg")]
    img = np.zeros((3, 4), np.float32)
    img[tuple(idx.T)] = [1, 2, 3]
    img[2] += 1
    img[0] += 1
    d = img[:, None, :] - img[:, :, None]
    want_mask = np.where(d != 0, np.float32(-100), d)
    model = _typed_model(nodes, {"x": (np.float32, [3, 4, 4])}, {"y": (np.float32, [3, 4, 4])}, 16, inits)
    x = rng.standard_normal((3, 4, 4)).astype(np.float32)
    got, = run_gaio(model, {"x": x})
    np.testing.assert_array_equal(got, x + want_mask)
    if ort is not None:
        np.testing.assert_array_equal(run_ort(model, {"x": x})[0], x + want_mask)


def test_scatter_nd_at_run_time_refused():
    h = onnx.helper
    node = h.make_node("ScatterND", ["x", "idx", "u"], ["y"], name="scatter")
    model = _typed_model([node], {"x": (np.float32, [4]), "u": (np.float32, [1])}, {"y": (np.float32, [4])}, 13,
                         [_i64("idx", [[1]])])
    with pytest.raises(gaio.NotSupportedError, match=r"'scatter' \(ScatterND\).*'x' is computed at run time"):
        gaio.Model(model.SerializeToString())


@pytest.mark.parametrize("perm", [(0, 2, 4, 3, 5, 1), (0, 1, 3, 2, 4, 5), (5, 4, 3, 2, 1, 0)])
def test_six_dimensional_transposes(perm, dev):
    """Window partitions: a 4-D input viewed as 6-D, permuted, viewed back. (0, 1, 3, 2,
    4, 5) collapses to 4-D (Swin's); (0, 2, 4, 3, 5, 1) and the reversal run as 5-D
    transposes, one per index of the output's shortest dimension (MaxViT's)."""
    h = onnx.helper
    dims6 = (2, 3, 2, 2, 5, 4)
    out6 = tuple(dims6[p] for p in perm)
    nodes = [h.make_node("Reshape", ["x", "s6"], ["x6"], name="view6"),
             h.make_node("Transpose", ["x6"], ["t6"], name="partition", perm=list(perm)),
             h.make_node("Reshape", ["t6", "s4"], ["y"], name="view4")]
    y4 = (out6[0] * out6[1], out6[2], out6[3], out6[4] * out6[5])
    model = _typed_model(nodes, {"x": (np.float32, [2, 6, 4, 10])}, {"y": (np.float32, list(y4))}, 13,
                         [_i64("s6", list(dims6)), _i64("s4", list(y4))])
    x = np.random.default_rng(sum(perm)).standard_normal((2, 6, 4, 10)).astype(np.float32)
    want = x.reshape(dims6).transpose(perm).reshape(y4)
    for layout in ("nchw", "nhwc"):
        got, = run_gaio(model, {"x": x}, layout, dev)
        np.testing.assert_array_equal(got, want, err_msg=f"layout {layout}")


def test_seven_dimensional_transpose_refused():
    h = onnx.helper
    dims7 = (2, 2, 2, 2, 2, 2, 2)
    perm = (0, 2, 4, 6, 1, 3, 5)
    nodes = [h.make_node("Reshape", ["x", "s7"], ["x7"], name="view7"),
             h.make_node("Transpose", ["x7"], ["t7"], name="deal", perm=list(perm)),
             h.make_node("Reshape", ["t7", "s1"], ["y"], name="flat")]
    model = _typed_model(nodes, {"x": (np.float32, [128])}, {"y": (np.float32, [128])}, 13,
                         [_i64("s7", list(dims7)), _i64("s1", [128])])
    with pytest.raises(gaio.NotSupportedError, match=r"'deal' \(Transpose\): a permutation of 7 dimensions"):
        load_and_plan(model)


def test_empty_shape_slice_and_constant_output():
    """ViT's x.shape[3:] of a rank-3 x: an empty shape vector, folded and concatenated
    into a Reshape's shape; a graph output that folds to a constant is returned too."""
    h = onnx.helper
    nodes = [h.make_node("Shape", ["x"], ["s"], name="shape"),
             h.make_node("Slice", ["s", "three", "big"], ["tail"], name="tail"),
             h.make_node("Concat", ["head", "tail"], ["shp"], name="cat", axis=0),
             h.make_node("Reshape", ["x", "shp"], ["y"], name="flat"),
             h.make_node("Cast", ["s"], ["sf"], name="shape_f", to=onnx.TensorProto.FLOAT)]
    model = _typed_model(nodes, {"x": (np.float32, [2, 3, 4])}, {"y": (np.float32, [2, 12]), "sf": (np.float32, [3])},
                         13, [_i64("three", [3]), _i64("big", [2 ** 62]), _i64("head", [2, 12])])
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    y, sf = run_gaio(model, {"x": x})
    np.testing.assert_array_equal(y, x.reshape(2, 12))
    np.testing.assert_array_equal(sf, np.array([2, 3, 4], np.float32))
