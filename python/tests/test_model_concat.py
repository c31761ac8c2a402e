"""Concat inputs written in place (src/model/engine.c concat_in_place): on NHWC engines
the steps making a Concat's inputs (pools, resizes, element-wise ops, Split) write them
into their channels of its output, and the Concat copies only the rest. Each model
here against onnxruntime, on the host (the rewrite forced on with
GAIO_MODEL_CONCAT_IN_PLACE=1; GPU engines have it by default) and on a GPU in f32 and
f16: all inputs in place; YOLO's C2f block (a Split half in place, the other read by a
convolution, a residual Add read by one); SPPF (max pools reading and writing
neighbouring slices of one tensor); a detector neck's upsampling; SqueezeNet's fire
module and a graph input, which are copied."""
from __future__ import annotations

import numpy as np
import pytest

from test_model_fusion import _close, _const, _model, _reloaded_runs_alike, _run, h, numpy_helper  # noqa: F401

IN_PLACE = "none: its inputs written in place"


@pytest.fixture(autouse=True)
def _in_place(monkeypatch):
    monkeypatch.setenv("GAIO_MODEL_CONCAT_IN_PLACE", "1")


def _conv(name, x, y, cin, cout, k, rng, act=None, silu=False):
    nodes = [h.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c" if act or silu else y], name=name,
                         kernel_shape=[k, k], pads=[k // 2] * 4)]
    inits = [_const(f"{name}_w", rng.standard_normal((cout, cin, k, k)) * (1.5 / np.sqrt(cin * k * k))),
             _const(f"{name}_b", rng.standard_normal(cout) * 0.1)]
    if act:
        nodes.append(h.make_node(act, [f"{name}_c"], [y], name=f"{name}_{act.lower()}"))
    elif silu:
        nodes += [h.make_node("Sigmoid", [f"{name}_c"], [f"{name}_s"], name=f"{name}_sigmoid"),
                  h.make_node("Mul", [f"{name}_c", f"{name}_s"], [y], name=f"{name}_silu")]
    return nodes, inits


def _build(parts):
    nodes, inits = [], []
    for n, i in parts:
        nodes += n
        inits += i
    return nodes, inits


def _fire(rng):
    nodes, inits = _build([_conv("squeeze", "x", "s", 8, 4, 1, rng, act="Relu"),
                           _conv("e1", "s", "a", 4, 6, 1, rng, act="Relu"),
                           _conv("e3", "s", "b", 4, 6, 3, rng, act="Relu"),
                           ([h.make_node("Concat", ["a", "b"], ["cat"], name="concat", axis=1)], []),
                           _conv("out", "cat", "y", 12, 5, 1, rng)])
    return _model(nodes, inits, {"x": [2, 8, 9, 9]}, {"y": [2, 5, 9, 9]}), {"x": [2, 8, 9, 9]}


def _c2f(rng):
    nodes, inits = _build([
        _conv("cv1", "x", "c1", 8, 16, 1, rng, silu=True),
        ([h.make_node("Split", ["c1", "halves"], ["a", "b"], name="split", axis=1)],
         [numpy_helper.from_array(np.array([8, 8], np.int64), "halves")]),
        _conv("m1a", "b", "t1", 8, 8, 3, rng, silu=True),
        _conv("m1b", "t1", "t2", 8, 8, 3, rng, silu=True),
        ([h.make_node("Add", ["b", "t2"], ["m1"], name="shortcut")], []),
        _conv("m2", "m1", "m2o", 8, 8, 3, rng, act="Relu"),
        ([h.make_node("Concat", ["a", "b", "m1", "m2o"], ["cat"], name="concat", axis=1)], []),
        _conv("cv2", "cat", "y", 32, 8, 1, rng, silu=True)])
    return _model(nodes, inits, {"x": [2, 8, 10, 11]}, {"y": [2, 8, 10, 11]}), {"x": [2, 8, 10, 11]}


def _sppf(rng):
    pool = lambda x, y: h.make_node("MaxPool", [x], [y], name=f"pool_{y}", kernel_shape=[5, 5], pads=[2] * 4)  # noqa
    nodes, inits = _build([_conv("cv1", "x", "c", 8, 8, 1, rng, silu=True),
                           ([pool("c", "p1"), pool("p1", "p2"), pool("p2", "p3"),
                             h.make_node("Concat", ["c", "p1", "p2", "p3"], ["cat"], name="concat", axis=1)], []),
                           _conv("cv2", "cat", "y", 32, 8, 1, rng, silu=True)])
    return _model(nodes, inits, {"x": [2, 8, 7, 9]}, {"y": [2, 8, 7, 9]}), {"x": [2, 8, 7, 9]}


def _neck(rng):
    nodes, inits = _build([
        _conv("lat", "x", "a", 8, 8, 1, rng, silu=True),
        ([h.make_node("Resize", ["a", "", "scales"], ["up"], name="up", mode="nearest")],
         [_const("scales", [1.0, 1.0, 2.0, 2.0])]),
        _conv("skip", "x2", "b", 4, 16, 3, rng, silu=True),
        ([h.make_node("Concat", ["up", "b"], ["cat"], name="concat", axis=1)], []),
        _conv("out", "cat", "y", 24, 8, 3, rng)])
    return (_model(nodes, inits, {"x": [2, 8, 5, 6], "x2": [2, 4, 10, 12]}, {"y": [2, 8, 10, 12]}),
            {"x": [2, 8, 5, 6], "x2": [2, 4, 10, 12]})


def _all(rng):
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu"),
             h.make_node("MaxPool", ["x"], ["b"], name="pool", kernel_shape=[3, 3], pads=[1] * 4),
             h.make_node("Sigmoid", ["x"], ["c"], name="sigmoid"),
             h.make_node("Concat", ["a", "b", "c"], ["cat"], name="concat", axis=1)]
    n, i = _conv("out", "cat", "y", 24, 8, 3, rng)
    return _model(nodes + n, i, {"x": [2, 8, 6, 7]}, {"y": [2, 8, 6, 7]}), {"x": [2, 8, 6, 7]}


def _graph_input(rng):
    nodes, inits = _build([_conv("c", "x", "a", 8, 8, 3, rng, act="Relu"),
                           ([h.make_node("Concat", ["a", "z"], ["cat"], name="concat", axis=1)], []),
                           _conv("out", "cat", "y", 16, 4, 1, rng)])
    return (_model(nodes, inits, {"x": [2, 8, 6, 6], "z": [2, 8, 6, 6]}, {"y": [2, 4, 6, 6]}),
            {"x": [2, 8, 6, 6], "z": [2, 8, 6, 6]})


COPIED = ""  # the Concat's own kernel text
CASES = {"all": (_all, IN_PLACE), "c2f": (_c2f, "gaio_cast of 3 inputs, 1 written in place"),
         "sppf": (_sppf, "gaio_cast of 1 inputs, 3 written in place"),
         "neck": (_neck, "gaio_cast of 1 inputs, 1 written in place"), "fire": (_fire, COPIED),
         "graph input": (_graph_input, COPIED)}


@pytest.mark.parametrize("precision", ["model", "f16"])
@pytest.mark.parametrize("case", list(CASES))
def test_concat_in_place(dev, case, precision, rng):
    if precision == "f16" and dev == "cpu":
        pytest.skip("SKIPPED: f16 engines are the GPU's")
    make, kernel = CASES[case]
    model, shapes = make(rng)
    feeds = {k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}
    got, want, engine = _run(model, feeds, dev, precision=precision)
    _close(got, want, 2e-2 if precision == "f16" else 1e-4)
    steps = {st.name: st for st in engine.steps}
    assert steps["concat"].kernel == kernel


def test_concat_in_place_off(dev, rng, monkeypatch):
    """GAIO_MODEL_CONCAT_IN_PLACE=0: the Concat copies every input; the same outputs."""
    monkeypatch.setenv("GAIO_MODEL_CONCAT_IN_PLACE", "0")
    model, shapes = _c2f(rng)
    feeds = {k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}
    got, want, engine = _run(model, feeds, dev)
    _close(got, want)
    assert {st.name: st for st in engine.steps}["concat"].kernel != IN_PLACE


def test_concat_in_place_saved(dev, rng, tmp_path):
    """An engine with slices saved and loaded runs alike (engine_file.c checks them)."""
    model, shapes = _c2f(rng)
    x = rng.standard_normal(shapes["x"]).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev)
    _reloaded_runs_alike(engine, tmp_path / "c2f.engine", x, dev, got)
    _close(got, want)
