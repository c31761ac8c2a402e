"""The planner's rewrites of transformer-style graphs (src/model/plan.c, engine.c),
against onnxruntime: GELU as torch.onnx exports it (Div -> Erf -> Add -> Mul -> Mul)
run as one step, a MatMul's bias Add and activation fused into its step, and the
Transposes of ConvNeXt's channels-last blocks run as views of NHWC values. Each
graph's outputs must match onnxruntime's whether or not a rewrite applies; the steps
say which did."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import gaio

if os.environ.get("GAIO_REQUIRE_ONNXRUNTIME", "") not in ("", "0"):  # ctest's run: missing is a failure
    import onnx
    import onnxruntime as ort
else:
    onnx = pytest.importorskip("onnx", reason="SKIPPED: the onnx package is not installed")
    ort = pytest.importorskip("onnxruntime", reason="SKIPPED: onnxruntime is not installed")
from onnx import numpy_helper  # noqa: E402

h = onnx.helper
F = onnx.TensorProto.FLOAT
GELU_OPS = "Div+Erf+Add+Mul+Mul"


def _const(name: str, a) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)


def _model(nodes, inits, inputs: dict, outputs: dict):
    graph = h.make_graph(nodes, "fusion", [h.make_tensor_value_info(k, F, v) for k, v in inputs.items()],
                         [h.make_tensor_value_info(k, F, v) for k, v in outputs.items()], initializer=inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _gelu_nodes(x: str, y: str, tag: str, mul_form: bool = False) -> tuple[list, list]:
    """GELU of x into y as torch.onnx writes it (mul_form: x * 1/sqrt(2) first)."""
    first = (h.make_node("Mul", [x, f"{tag}_s"], [f"{tag}_d"], name=f"{tag}/Mul_s") if mul_form else
             h.make_node("Div", [x, f"{tag}_s"], [f"{tag}_d"], name=f"{tag}/Div"))
    nodes = [first,
             h.make_node("Erf", [f"{tag}_d"], [f"{tag}_e"], name=f"{tag}/Erf"),
             h.make_node("Add", [f"{tag}_e", f"{tag}_one"], [f"{tag}_a"], name=f"{tag}/Add"),
             h.make_node("Mul", [x, f"{tag}_a"], [f"{tag}_m"], name=f"{tag}/Mul"),
             h.make_node("Mul", [f"{tag}_m", f"{tag}_half"], [y], name=f"{tag}/Mul_1")]
    inits = [_const(f"{tag}_s", 1 / math.sqrt(2) if mul_form else math.sqrt(2)), _const(f"{tag}_one", 1.0),
             _const(f"{tag}_half", 0.5)]
    return nodes, inits


def _run(model, feeds: dict, dev: str, layout: str = "auto", precision: str = "model"):
    """gaio's outputs and its engine's steps; onnxruntime's outputs."""
    m = gaio.Model(model.SerializeToString())
    engine = m.build(dev, layout=layout, precision=precision, tune=False)
    ex = engine.exec()
    s = gaio.Stream(dev)
    xs = [gaio.tensor(np.ascontiguousarray(feeds[t.name]), device=dev, stream=s) for t in m.inputs]
    ys = ex.empty_outputs(s)
    ex.run(s, xs, ys).result(timeout=60)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for st in engine.steps:
        print(f"  {st.name:28s} {st.ops:36s} {st.kernel}")
    return [y.numpy() for y in ys], sess.run(None, feeds), engine


def _close(got, want, tol=1e-4):
    for g, w in zip(got, want):
        assert g.shape == w.shape
        err = float(np.max(np.abs(g.astype(np.float64) - w)))
        print(f"max abs error {err:.3g}")
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _reloaded_runs_alike(engine, path, x, dev: str, got):
    """The engine saved to path and loaded again: the same steps, the same outputs for x."""
    engine.save(path)
    loaded = gaio.Engine.load(path, engine.context)
    assert [tuple(s) for s in loaded.steps] == [tuple(s) for s in engine.steps]
    ex, s = loaded.exec(), gaio.Stream(dev)
    ys = ex.empty_outputs(s)
    ex.run(s, [gaio.tensor(x, device=dev, stream=s)], ys).result(timeout=60)
    np.testing.assert_array_equal(ys[0].numpy(), got[0])


def _convnext_block(n: int, c: int, hw: int, rng, gamma=None):
    """ConvNeXt's block as torchvision exports it: a 7x7 depthwise convolution,
    Transpose to channels last, LayerNorm, Linear(c, 4c) (MatMul + Add), GELU,
    Linear(4c, c), Transpose back, the layer scale (Mul; gamma [c], default random in
    [0.5, 1.5)) and the residual Add."""
    nodes = [h.make_node("Conv", ["x", "dw_w", "dw_b"], ["dw"], name="dw", group=c, kernel_shape=[7, 7],
                         pads=[3, 3, 3, 3]),
             h.make_node("Transpose", ["dw"], ["t1"], name="t1", perm=[0, 2, 3, 1]),
             h.make_node("LayerNormalization", ["t1", "ln_g", "ln_b"], ["ln"], name="ln", axis=-1, epsilon=1e-6),
             h.make_node("MatMul", ["ln", "w1"], ["mm1"], name="fc1/MatMul"),
             h.make_node("Add", ["b1", "mm1"], ["fc1"], name="fc1/Add"),  # the bias first: either order fuses
             ]
    gelu, gelu_inits = _gelu_nodes("fc1", "act", "gelu")
    nodes += gelu
    nodes += [h.make_node("MatMul", ["act", "w2"], ["mm2"], name="fc2/MatMul"),
              h.make_node("Add", ["mm2", "b2"], ["fc2"], name="fc2/Add"),
              h.make_node("Transpose", ["fc2"], ["t2"], name="t2", perm=[0, 3, 1, 2]),
              h.make_node("Mul", ["t2", "gamma"], ["scaled"], name="scale"),
              h.make_node("Add", ["scaled", "x"], ["y"], name="residual")]
    r = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.3  # noqa: E731
    inits = [_const("dw_w", r(c, 1, 7, 7)), _const("dw_b", r(c)), _const("ln_g", 1 + r(c)), _const("ln_b", r(c)),
             _const("w1", r(c, 4 * c)), _const("b1", r(4 * c)), _const("w2", r(4 * c, c)), _const("b2", r(c)),
             _const("gamma", (rng.random(c) + 0.5 if gamma is None else gamma).reshape(c, 1, 1))] + gelu_inits
    return _model(nodes, inits, {"x": [n, c, hw, hw]}, {"y": [n, c, hw, hw]})


@pytest.mark.parametrize("layout", ["auto", "nchw"])
def test_convnext_block(dev, layout, rng):
    model = _convnext_block(2, 16, 6, rng)
    x = rng.standard_normal((2, 16, 6, 6)).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev, layout)
    _close(got, want)
    ops = {st.name: st for st in engine.steps}
    assert ops["fc1/MatMul"].ops == "MatMul+Add+" + GELU_OPS
    assert "scale" not in ops  # the layer scale folded into fc2's weights, bias and alpha
    if layout == "auto":
        # NHWC: the depthwise output read channels last is its own bytes (t1 a view);
        # fc2 writes the rows of the block's NHWC output, the residual its GEMM's C
        assert ops["fc2/MatMul"].ops == "MatMul+Add+Transpose+Mul+Add"
        assert engine.info.steps == 5  # dw, t1, ln, fc1, fc2
        assert ops["t1"].kernel == "none: a view of its input"
    else:
        # NCHW engines copy both Transposes; t2 makes the scale's output
        assert ops["fc2/MatMul"].ops == "MatMul+Add"
        assert engine.info.steps == 7  # dw, t1, ln, fc1, fc2, t2, residual
        assert ops["t1"].kernel != "none: a view of its input" and ops["t2"].kernel != "none: a view of its input"


def test_convnext_residual_nchw_input(dev, rng):
    """The residual of a product written as an NHWC value's rows, itself not stored NHWC
    (a Reshape of a flat graph input: row-major bytes), is added after the GEMM."""
    n, c, hw = 2, 8, 5
    model = _convnext_block(n, c, hw, rng)
    g = model.graph
    g.input.append(h.make_tensor_value_info("r", F, [n, c * hw * hw]))
    g.initializer.append(numpy_helper.from_array(np.array([n, c, hw, hw], dtype=np.int64), "r_shape"))
    g.node.insert(0, h.make_node("Reshape", ["r", "r_shape"], ["r4"], name="r4"))
    for nd in g.node:
        if nd.name == "residual":
            nd.input[1] = "r4"
    onnx.checker.check_model(model)
    x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
    res = rng.standard_normal((n, c * hw * hw)).astype(np.float32)
    got, want, engine = _run(model, {"x": x, "r": res}, dev)
    _close(got, want)
    assert {st.name: st for st in engine.steps}["fc2/MatMul"].ops == "MatMul+Add+Transpose+Mul+Add"


@pytest.mark.parametrize("case", ["torchvision init", "one tiny", "one zero"])
def test_convnext_layer_scale(dev, case, rng):
    """The layer scale folds where the scaled weights keep their precision: equal factors
    (torchvision's 1e-6 everywhere: the weights unchanged, 1e-6 in alpha) and a zero
    channel fold; a channel scaled 1e-6 of the largest stays a Mul."""
    c = 8
    gamma = {"torchvision init": np.full(c, 1e-6), "one tiny": np.r_[1e-6, np.ones(c - 1)],
             "one zero": np.r_[0.0, rng.random(c - 1) + 0.5]}[case]
    model = _convnext_block(2, c, 5, rng, gamma=gamma.astype(np.float32))
    x = rng.standard_normal((2, c, 5, 5)).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev)
    _close(got, want)
    folded = "scale" not in {st.name for st in engine.steps}
    assert folded == (case != "one tiny")
    assert engine.info.steps == (5 if folded else 8)  # folded: the residual into fc2 too (NHWC)


def test_convnext_block_saved(dev, rng, tmp_path):
    """The rewrites survive an engine's save and load (engine_file.c's format)."""
    model = _convnext_block(3, 8, 5, rng)
    x = rng.standard_normal((3, 8, 5, 5)).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev)
    _reloaded_runs_alike(engine, tmp_path / "block.engine", x, dev, got)
    _close(got, want)


@pytest.mark.parametrize("mul_form", [False, True])
def test_gelu_chain_alone(dev, mul_form, rng):
    """A GELU chain after something that is no matrix product: one step."""
    nodes, inits = _gelu_nodes("r", "y", "g", mul_form)
    model = _model([h.make_node("Relu", ["x"], ["r0"], name="relu"),
                    h.make_node("Sub", ["r0", "shift"], ["r"], name="shift")] + nodes, inits + [_const("shift", 1.5)],
                   {"x": [3, 5, 7]}, {"y": [3, 5, 7]})
    x = rng.uniform(-4, 4, (3, 5, 7)).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev)
    _close(got, want)
    assert [st.ops for st in engine.steps] == ["Relu", "Sub", ("Mul" if mul_form else "Div") + "+Erf+Add+Mul+Mul"]


def test_gelu_chain_read_elsewhere(dev, rng):
    """A chain whose Erf output is also a graph output, or whose input a third node
    reads, stays as its nodes (and still computes GELU)."""
    nodes, inits = _gelu_nodes("x", "y", "g")
    model = _model(nodes, inits, {"x": [4, 6]}, {"y": [4, 6], "g_e": [4, 6]})
    x = rng.uniform(-3, 3, (4, 6)).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev)
    _close(got, want)
    assert engine.info.steps == 5
    nodes, inits = _gelu_nodes("x", "y", "g")
    model = _model(nodes + [h.make_node("Neg", ["x"], ["z"], name="neg")], inits, {"x": [4, 6]},
                   {"y": [4, 6], "z": [4, 6]})
    got, want, engine = _run(model, {"x": x}, dev)
    _close(got, want)
    assert engine.info.steps == 6


@pytest.mark.parametrize("bias_shape", [(24,), (1, 1, 24)])
def test_matmul_bias_relu(dev, bias_shape, rng):
    """A 3-D MatMul's bias Add (a row, or a row with leading 1s) and its Relu: one step."""
    model = _model([h.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
                    h.make_node("Add", ["m", "b"], ["a"], name="bias"),
                    h.make_node("Relu", ["a"], ["y"], name="relu")],
                   [_const("w", rng.standard_normal((16, 24))), _const("b", rng.standard_normal(bias_shape))],
                   {"x": [2, 5, 16]}, {"y": [2, 5, 24]})
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev)
    _close(got, want)
    assert [st.ops for st in engine.steps] == ["MatMul+Add+Relu"]


def test_matmul_add_not_a_bias(dev, rng):
    """An Add of a full tensor (no row) after a MatMul stays its own step."""
    model = _model([h.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
                    h.make_node("Add", ["m", "c"], ["a"], name="add"),
                    h.make_node("Sigmoid", ["a"], ["y"], name="sig")],
                   [_const("w", rng.standard_normal((16, 8))), _const("c", rng.standard_normal((5, 8)))],
                   {"x": [2, 5, 16]}, {"y": [2, 5, 8]})
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev)
    _close(got, want)
    assert [st.ops for st in engine.steps] == ["MatMul", "Add", "Sigmoid"]


@pytest.mark.parametrize("axis,index", [(0, 1), (1, -2), (-1, 3), (2, [-1]), (3, [0])])
def test_gather_one_index(dev, axis, index, rng):
    """A Gather of one constant index (attention's q, k, v) runs as a strided copy: on a
    row-major input and on a convolution's NHWC output, scalar and [1] indices, negative
    ones."""
    shape = [3, 4, 5, 8]
    idx = np.asarray(index, dtype=np.int64)
    out = list(shape)
    ax = axis % 4
    if idx.ndim == 0:
        del out[ax]
    else:
        out[ax] = 1
    for after_conv in (False, True):
        nodes = [h.make_node("Conv", ["x", "cw"], ["c"], name="conv", kernel_shape=[1, 1])] if after_conv else \
                [h.make_node("Relu", ["x"], ["c"], name="relu")]
        nodes.append(h.make_node("Gather", ["c", "i"], ["y"], name="gather", axis=axis))
        inits = [numpy_helper.from_array(idx, "i"), _const("cw", rng.standard_normal((4, 4, 1, 1)))]
        model = _model(nodes, inits if after_conv else inits[:1], {"x": shape}, {"y": out})
        x = rng.standard_normal(shape).astype(np.float32)
        got, want, engine = _run(model, {"x": x}, dev)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("after_conv", [False, True])
def test_noop_pad_and_slice(dev, after_conv, rng):
    """Swin pads its maps to whole windows and crops them back: where they are whole
    already, the Pad and the Slice are views (no step runs), on NHWC values too; a
    Pad that pads and a Slice that crops still run."""
    shape = [2, 4, 6, 6]
    first = h.make_node("Conv", ["x", "cw"], ["c"], name="conv", kernel_shape=[1, 1]) if after_conv else \
        h.make_node("Relu", ["x"], ["c"], name="relu")
    i64 = lambda name, v: numpy_helper.from_array(np.asarray(v, dtype=np.int64), name)  # noqa: E731
    nodes = [first,
             h.make_node("Pad", ["c", "zero_pads"], ["p0"], name="pad0"),
             h.make_node("Slice", ["p0", "s0", "e0", "ax"], ["s_all"], name="slice_all"),
             h.make_node("Sigmoid", ["s_all"], ["g"], name="sig"),
             h.make_node("Pad", ["g", "pads"], ["p1"], name="pad1"),
             h.make_node("Slice", ["p1", "s1", "e1", "ax"], ["y"], name="crop")]
    inits = [i64("zero_pads", [0] * 8), i64("pads", [0, 0, 1, 0, 0, 0, 0, 2]), i64("s0", [0, 0]), i64("e0", [6, 6]),
             i64("ax", [2, 3]), i64("s1", [1, 0]), i64("e1", [6, 7]), _const("cw", rng.standard_normal((4, 4, 1, 1)))]
    model = _model(nodes, inits if after_conv else inits[:-1], {"x": shape}, {"y": [2, 4, 5, 7]})
    x = rng.standard_normal(shape).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev)
    _close(got, want)
    kernels = {st.name: st.kernel for st in engine.steps}
    assert kernels["pad0"] == kernels["slice_all"] == "none: a view of its input"
    assert kernels["pad1"] != "none: a view of its input" and kernels["crop"] != "none: a view of its input"


@pytest.mark.parametrize("scores_out", [False, True])
def test_attention_k_transposed(dev, scores_out, rng):
    """q @ k^T with k^T a Transpose of k's last two dimensions (as torch.onnx writes
    attention): the GEMM reads k transposed and the Transpose runs no step; where k^T
    is also a graph output it stays."""
    b, hds, t, d = 2, 3, 5, 4
    nodes = [h.make_node("Mul", ["k", "scale"], ["ks"], name="scale_k"),
             h.make_node("Transpose", ["ks"], ["kt"], name="kT", perm=[0, 1, 3, 2]),
             h.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
             h.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             h.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    outs = {"y": [b, hds, t, d]}
    if scores_out:
        outs["kt"] = [b, hds, d, t]
    model = _model(nodes, [_const("scale", 0.5)], {"q": [b, hds, t, d], "k": [b, hds, t, d], "v": [b, hds, t, d]},
                   outs)
    feeds = {name: rng.standard_normal((b, hds, t, d)).astype(np.float32) for name in ("q", "k", "v")}
    got, want, engine = _run(model, feeds, dev)
    _close(got, want)
    assert ("kT" in {st.name for st in engine.steps}) == scores_out


def test_matmul_2d_b_transposed(dev, rng):
    """A 2-D MatMul of a transposed B, with a bias: one GEMM step reading B transposed."""
    model = _model([h.make_node("Relu", ["w"], ["wr"], name="relu"),
                    h.make_node("Transpose", ["wr"], ["wt"], name="wT", perm=[1, 0]),
                    h.make_node("MatMul", ["x", "wt"], ["m"], name="mm"),
                    h.make_node("Add", ["m", "b"], ["y"], name="bias")],
                   [_const("b", rng.standard_normal(6))], {"x": [4, 9], "w": [6, 9]}, {"y": [4, 6]})
    feeds = {"x": rng.standard_normal((4, 9)).astype(np.float32), "w": rng.standard_normal((6, 9)).astype(np.float32)}
    got, want, engine = _run(model, feeds, dev)
    _close(got, want)
    assert [st.ops for st in engine.steps] == ["Relu", "MatMul+Add"]


def test_attention_scales_fold_into_alpha(dev, rng):
    """Attention as torch.onnx exports scaled_dot_product_attention: the scale is
    Sqrt(Sqrt(Cast(head size))) reciprocal, computed from a Shape (folded at load), q and
    k^T each multiplied by it; the planner folds both Muls into the GEMM's alpha and the
    Transpose into trans_b: three steps."""
    b, hds, t, d = 2, 3, 7, 16
    i64 = numpy_helper.from_array(np.asarray(-1, dtype=np.int64), "last")
    nodes = [h.make_node("Shape", ["q"], ["qs"], name="shape"),
             h.make_node("Gather", ["qs", "last"], ["dim"], name="dim", axis=0),
             h.make_node("Cast", ["dim"], ["dimf"], name="cast", to=F),
             h.make_node("Sqrt", ["dimf"], ["r1"], name="sqrt"),
             h.make_node("Sqrt", ["r1"], ["r2"], name="sqrt_1"),
             h.make_node("Reciprocal", ["r2"], ["sc"], name="recip"),
             h.make_node("Mul", ["q", "sc"], ["q_s"], name="scale_q"),
             h.make_node("Transpose", ["k"], ["kt"], name="kT", perm=[0, 1, 3, 2]),
             h.make_node("Mul", ["sc", "kt"], ["kt_s"], name="scale_k"),
             h.make_node("MatMul", ["q_s", "kt_s"], ["s"], name="qk"),
             h.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             h.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    model = _model(nodes, [i64], {"q": [b, hds, t, d], "k": [b, hds, t, d], "v": [b, hds, t, d]},
                   {"y": [b, hds, t, d]})
    feeds = {name: rng.standard_normal((b, hds, t, d)).astype(np.float32) for name in ("q", "k", "v")}
    got, want, engine = _run(model, feeds, dev)
    _close(got, want)
    assert [st.name for st in engine.steps] == ["qk", "softmax", "pv"]


def test_attention_pow_scale_folds(dev, rng):
    """Swin's scale as torch.onnx writes it: Pow(head size as a float, -0.5), a constant
    Pow that folds at load, so that the Mul of q by it moves into the GEMM's alpha:
    three steps."""
    b, hds, t, d = 2, 3, 7, 16
    nodes = [h.make_node("Pow", ["hd", "mhalf"], ["sc"], name="pow"),
             h.make_node("Mul", ["q", "sc"], ["q_s"], name="scale_q"),
             h.make_node("Transpose", ["k"], ["kt"], name="kT", perm=[0, 1, 3, 2]),
             h.make_node("MatMul", ["q_s", "kt"], ["s"], name="qk"),
             h.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             h.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    model = _model(nodes, [_const("hd", float(d)), _const("mhalf", -0.5)],
                   {"q": [b, hds, t, d], "k": [b, hds, t, d], "v": [b, hds, t, d]}, {"y": [b, hds, t, d]})
    feeds = {name: rng.standard_normal((b, hds, t, d)).astype(np.float32) for name in ("q", "k", "v")}
    got, want, engine = _run(model, feeds, dev)
    _close(got, want)
    assert [st.name for st in engine.steps] == ["qk", "softmax", "pv"]


@pytest.mark.parametrize("act", [None, "Relu", "gelu"])
def test_matmul_residual(dev, act, rng):
    """A transformer MLP's tail: MatMul + bias, then the residual Add (the GEMM's C),
    then an activation: one step; a residual that is a 4-D convolution output (NHWC)
    still adds right."""
    nodes = [h.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             h.make_node("Add", ["m", "b"], ["mb"], name="bias"),
             h.make_node("Add", ["r", "mb"], ["a" if act else "y"], name="residual")]
    inits = [_const("w", rng.standard_normal((16, 16)) * 0.3), _const("b", rng.standard_normal(16))]
    if act == "Relu":
        nodes.append(h.make_node("Relu", ["a"], ["y"], name="act"))
    elif act == "gelu":
        g, gi = _gelu_nodes("a", "y", "g")
        nodes += g
        inits += gi
    model = _model([h.make_node("Sigmoid", ["x0"], ["x"], name="pre"), h.make_node("Neg", ["x0"], ["r"], name="res")]
                   + nodes, inits, {"x0": [2, 3, 5, 16]}, {"y": [2, 3, 5, 16]})
    x = rng.standard_normal((2, 3, 5, 16)).astype(np.float32)
    got, want, engine = _run(model, {"x0": x}, dev)
    _close(got, want)
    ops = {st.name: st.ops for st in engine.steps}
    assert ops["mm"].startswith("MatMul+Add+Add") and "residual" not in ops
    # the residual from a convolution (an NHWC value where the engine prefers it)
    conv = [h.make_node("Conv", ["x0", "cw"], ["r"], name="res", kernel_shape=[1, 1])]
    model = _model([h.make_node("Sigmoid", ["x0"], ["x"], name="pre")] + conv + nodes,
                   inits + [_const("cw", rng.standard_normal((2, 2, 1, 1)))], {"x0": [2, 2, 5, 16]}, {"y": [2, 2, 5, 16]})
    x = rng.standard_normal((2, 2, 5, 16)).astype(np.float32)
    got, want, engine = _run(model, {"x0": x}, dev)
    _close(got, want)


def _attention_model(b, hds, t, d, bias=None, tk=None):
    """torch.onnx's attention over q, k, v inputs [b, hds, t, d] (k and v [b, hds, tk, d]):
    q and k^T scaled by d^-1/4 each, an optional constant bias, Softmax, @ v."""
    tk = tk or t
    sc = float(d) ** -0.25
    nodes = [h.make_node("Mul", ["q", "s"], ["qs"], name="scale_q"),
             h.make_node("Transpose", ["k"], ["kt"], name="kT", perm=[0, 1, 3, 2]),
             h.make_node("Mul", ["kt", "s"], ["kts"], name="scale_k"),
             h.make_node("MatMul", ["qs", "kts"], ["sc"], name="qk")]
    inits = [_const("s", sc)]
    if bias is not None:
        nodes.append(h.make_node("Add", ["sc", "bias"], ["sb"], name="bias"))
        inits.append(_const("bias", bias))
    nodes += [h.make_node("Softmax", ["sb" if bias is not None else "sc"], ["p"], name="softmax", axis=-1),
              h.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    return _model(nodes, inits, {"q": [b, hds, t, d], "k": [b, hds, tk, d], "v": [b, hds, tk, d]},
                  {"y": [b, hds, t, d]})


@pytest.mark.parametrize("case", ["vit", "swin", "keys", "head48"])
def test_attention_fused(dev, case, rng):
    """Attention runs as one gaio_attention step in f16 GPU engines (ViT's 197 tokens and
    head size 64; Swin's 49 tokens, head size 32 and relative position bias; more keys
    than queries), matching onnxruntime to f16's precision; the host, and a head size
    the GPU kernel does not take, keep the graph's MatMuls and Softmax."""
    b, hds, t, d, tk, bias = {"vit": (2, 3, 197, 64, None, None), "swin": (4, 3, 49, 32, None, (3, 49, 49)),
                              "keys": (1, 2, 40, 64, 130, (40, 130)), "head48": (1, 2, 20, 48, None, None)}[case]
    bias = None if bias is None else rng.standard_normal(bias).astype(np.float32)
    model = _attention_model(b, hds, t, d, bias, tk)
    feeds = {n: rng.standard_normal((b, hds, t if n == "q" else (tk or t), d)).astype(np.float32) for n in "qkv"}
    gpu = dev != "cpu"
    got, want, engine = _run(model, feeds, dev, precision="f16" if gpu else "model")
    _close(got, want, 2e-2 if gpu else 1e-4)
    fused = [st for st in engine.steps if st.ops == "MatMul+Softmax+MatMul" or st.ops == "MatMul+Add+Softmax+MatMul"]
    assert len(fused) == (1 if gpu and case != "head48" else 0), [tuple(st) for st in engine.steps]


@pytest.mark.parametrize("bias", [True, False])
def test_shifted_window_attention(dev, bias, rng, monkeypatch):
    """Swin's shifted-window attention as torch.onnx exports it: the scores plus the
    relative position bias [heads, L, L], reshaped to [batch, windows, heads, L, L], plus
    the windows' mask [1, windows, 1, L, L] (0 or -100), reshaped back, Softmax, @ v:
    one attention step whose bias joins both (a constant over [windows, heads, L, L]
    that repeats over the batch), matching onnxruntime."""
    b, nw, hds, t, d = 2, 4, 3, 49, 32
    i64 = lambda name, v: numpy_helper.from_array(np.asarray(v, dtype=np.int64), name)  # noqa: E731
    nodes = [h.make_node("Mul", ["q", "s"], ["qs"], name="scale_q"),
             h.make_node("Transpose", ["k"], ["kt"], name="kT", perm=[0, 1, 3, 2]),
             h.make_node("MatMul", ["qs", "kt"], ["sc"], name="qk")]
    cur = "sc"
    inits = [_const("s", d ** -0.5), i64("split", [b, nw, hds, t, t]), i64("merge", [b * nw, hds, t, t])]
    if bias:
        nodes.append(h.make_node("Add", ["sc", "rel"], ["sb"], name="rel_bias"))
        inits.append(_const("rel", rng.standard_normal((hds, t, t))))
        cur = "sb"
    mask = np.where(rng.random((1, nw, 1, t, t)) < 0.3, -100.0, 0.0)
    nodes += [h.make_node("Reshape", [cur, "split"], ["s5"], name="split"),
              h.make_node("Add", ["s5", "mask"], ["m5"], name="mask"),
              h.make_node("Reshape", ["m5", "merge"], ["m4"], name="merge"),
              h.make_node("Softmax", ["m4"], ["p"], name="softmax", axis=-1),
              h.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    inits.append(_const("mask", mask))
    shape = [b * nw, hds, t, d]
    model = _model(nodes, inits, {"q": shape, "k": shape, "v": shape}, {"y": shape})
    feeds = {n: rng.standard_normal(shape).astype(np.float32) for n in "qkv"}
    gpu = dev != "cpu"
    monkeypatch.setenv("GAIO_MODEL_ATTENTION", "1")
    got, want, engine = _run(model, feeds, dev, precision="f16" if gpu else "model")
    _close(got, want, 2e-2 if gpu else 1e-4)
    assert [st.name for st in engine.steps] == ["qk"], [tuple(st) for st in engine.steps]


@pytest.mark.parametrize("case", ["vit", "swin", "relu", "sigmoid", "odd"])
def test_patch_conv(dev, case, rng):
    """A convolution whose window is its stride (ViT's 16 x 16 patch embedding, Swin's
    4 x 4) runs on a GPU at f16 as a copy into patches and one GEMM
    (dnn/conv_patches.c), its bias and ReLU in the GEMM's epilogue, another activation
    after; a size that does not tile exactly stays cuDNN's. Against onnxruntime."""
    c, o, k, hw, act = {"vit": (3, 64, 16, 64, None), "swin": (3, 96, 4, 32, None), "relu": (8, 32, 4, 16, "Relu"),
                        "sigmoid": (8, 32, 4, 16, "Sigmoid"), "odd": (3, 64, 16, 70, None)}[case]
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], name="patch", kernel_shape=[k, k], strides=[k, k])]
    nodes.append(h.make_node(act, ["c"], ["y"], name="act") if act else h.make_node("Identity", ["c"], ["y"]))
    out = hw // k
    model = _model(nodes, [_const("w", rng.standard_normal((o, c, k, k)) / k), _const("b", rng.standard_normal(o))],
                   {"x": [2, c, hw, hw]}, {"y": [2, o, out, out]})
    x = rng.standard_normal((2, c, hw, hw)).astype(np.float32)
    gpu = dev != "cpu"
    got, want, engine = _run(model, {"x": x}, dev, precision="f16" if gpu else "model")
    _close(got, want, 3e-2 if gpu else 1e-4)
    patches = [st for st in engine.steps if st.kernel == "gaio patches + cuBLASLt GEMM"]
    assert len(patches) == (1 if gpu and case != "odd" else 0), [tuple(st) for st in engine.steps]


@pytest.mark.parametrize("op", ["Reshape", "Pad", "Identity"])
def test_same_shape_view_feeds_matmul(dev, op, rng):
    """A same-shape view (Reshape, a Pad of nothing, Identity) of a convolution's NHWC
    output read by a MatMul, which takes row-major operands only: the view's reader gets
    them (a copy), where a view kept NHWC had been refused."""
    i64 = lambda name, v: numpy_helper.from_array(np.asarray(v, dtype=np.int64), name)  # noqa: E731
    args = {"Reshape": ["c", "shape"], "Pad": ["c", "pads"], "Identity": ["c"]}[op]
    nodes = [h.make_node("Conv", ["x", "cw"], ["c"], name="conv", kernel_shape=[1, 1]),
             h.make_node(op, args, ["r"], name="view"),
             h.make_node("MatMul", ["r", "w"], ["y"], name="mm")]
    inits = [_const("cw", rng.standard_normal((4, 4, 1, 1))), i64("shape", [2, 4, 5, 6]), i64("pads", [0] * 8),
             _const("w", rng.standard_normal((6, 3)))]
    model = _model(nodes, inits, {"x": [2, 4, 5, 6]}, {"y": [2, 4, 5, 3]})
    x = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    got, want, engine = _run(model, {"x": x}, dev)
    _close(got, want)


def _mha_model(n, t, e, hds, rng):
    """nn.MultiheadAttention (batch_first) as torch.onnx exports it: x [n, t, e] to
    [t, n, e], the in-projection, unflatten/unsqueeze/transpose/squeeze to [3, t, n, e],
    q, k, v gathered, each viewed [t, n*hds, d], transposed to [n*hds, t, d] and viewed
    [n, hds, t, d]; scaled dot-product attention; the heads merged back by a Transpose
    to [t, n, hds, d], the out-projection (Gemm) and a Transpose to [n, t, e]."""
    d = e // hds
    i64 = lambda name, v: numpy_helper.from_array(np.asarray(v, dtype=np.int64), name)  # noqa: E731
    sc = float(d) ** -0.25
    nodes = [h.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
             h.make_node("MatMul", ["xt", "w_in"], ["pm"]),
             h.make_node("Add", ["pm", "b_in"], ["p"]),
             h.make_node("Reshape", ["p", "s_unflat"], ["pu"]),
             h.make_node("Unsqueeze", ["pu", "ax0"], ["pu1"]),
             h.make_node("Transpose", ["pu1"], ["pt"], perm=[3, 1, 2, 0, 4]),
             h.make_node("Squeeze", ["pt", "ax3"], ["ps"])]
    for i, name in enumerate("qkv"):
        nodes += [h.make_node("Gather", ["ps", f"i{i}"], [f"{name}0"], axis=0),
                  h.make_node("Reshape", [f"{name}0", "s_heads"], [f"{name}1"]),
                  h.make_node("Transpose", [f"{name}1"], [f"{name}2"], perm=[1, 0, 2]),
                  h.make_node("Reshape", [f"{name}2", "s_4d"], [name])]
    nodes += [h.make_node("Mul", ["q", "s"], ["qs"]),
              h.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
              h.make_node("Mul", ["kt", "s"], ["kts"]),
              h.make_node("MatMul", ["qs", "kts"], ["sc"]),
              h.make_node("Softmax", ["sc"], ["pr"], axis=-1),
              h.make_node("MatMul", ["pr", "v"], ["o"]),
              h.make_node("Transpose", ["o"], ["ot"], perm=[2, 0, 1, 3]),
              h.make_node("Reshape", ["ot", "s_rows"], ["or"]),
              h.make_node("Gemm", ["or", "w_out", "b_out"], ["g"], transB=1),
              h.make_node("Reshape", ["g", "s_tne"], ["gt"]),
              h.make_node("Transpose", ["gt"], ["y"], perm=[1, 0, 2])]
    inits = [_const("w_in", rng.standard_normal((e, 3 * e)) / math.sqrt(e)), _const("b_in", rng.standard_normal(3 * e)),
             i64("s_unflat", [t, n, 3, e]), i64("ax0", [0]), i64("ax3", [3]), i64("s_heads", [t, n * hds, d]),
             i64("s_4d", [n, hds, t, d]), _const("s", sc), i64("s_rows", [t * n, e]),
             _const("w_out", rng.standard_normal((e, e)) / math.sqrt(e)), _const("b_out", rng.standard_normal(e)),
             i64("s_tne", [t, n, e])] + [numpy_helper.from_array(np.asarray(i, dtype=np.int64), f"i{i}") for i in range(3)]
    return _model(nodes, inits, {"x": [n, t, e]}, {"y": [n, t, e]})


@pytest.mark.parametrize("shape", [(2, 5, 64, 2), (3, 197, 128, 2)])
def test_mha_head_split_views(dev, shape, rng, monkeypatch):
    """torch.onnx's multi-head attention: with attention fused (GAIO_MODEL_ATTENTION=1
    on the host, whose kernel takes any strides; f16 on a GPU), q, k and v are strided
    views of the in-projection and attention writes its output in the order of the
    Transpose after it, in the row order of the Transpose after the out-projection; the
    in-projection reads x in its own row order: none of those data-moving steps runs
    (model/views.c), and the result matches onnxruntime. GAIO_MODEL_VIEWS=0 copies
    them as before."""
    n, t, e, hds = shape
    model = _mha_model(n, t, e, hds, rng)
    x = rng.standard_normal((n, t, e)).astype(np.float32)
    gpu = dev != "cpu"
    monkeypatch.setenv("GAIO_MODEL_ATTENTION", "1")
    for views in ("1", "0"):
        monkeypatch.setenv("GAIO_MODEL_VIEWS", views)
        got, want, engine = _run(model, {"x": x}, dev, precision="f16" if gpu else "model")
        _close(got, want, 2e-2 if gpu else 1e-4)
        kernels = {st.name: st.kernel for st in engine.steps}
        fused = [st for st in engine.steps if st.ops == "MatMul+Softmax+MatMul"]
        assert len(fused) == 1, [tuple(st) for st in engine.steps]
        in_place = [st for st in engine.steps if st.kernel.startswith("none: a strided view")]
        written = [st for st in engine.steps if st.kernel.startswith("none: attention wrote")]
        if views == "1":
            # Reshape, Unsqueeze, Transpose, Squeeze; per operand Gather, Reshape, Transpose, Reshape
            assert len(in_place) == 4 + 3 * 4, kernels
            assert len(written) == 1, kernels
            # the products keep the rows in the order of x and of y: no Transpose copies
            ts = [st.kernel for st in engine.steps if st.ops == "Transpose"]
            assert ts[0] == "none: the product after it reads its input", kernels
            assert ts[-1] == "none: the product wrote its rows in this order", kernels
        else:
            assert not in_place and not written, kernels


def test_mha_views_saved(dev, rng, tmp_path, monkeypatch):
    """Strided views survive an engine's save and load (engine_file.c format 10)."""
    monkeypatch.setenv("GAIO_MODEL_ATTENTION", "1")
    model = _mha_model(2, 9, 64, 2, rng)
    x = rng.standard_normal((2, 9, 64)).astype(np.float32)
    gpu = dev != "cpu"
    got, want, engine = _run(model, {"x": x}, dev, precision="f16" if gpu else "model")
    assert any(st.kernel.startswith("none: a strided view") for st in engine.steps)
    _reloaded_runs_alike(engine, tmp_path / "mha.engine", x, dev, got)
    _close(got, want, 2e-2 if gpu else 1e-4)
