"""gaio.Model on the host: a tiny CNN built with the onnx package (random weights,
printed seed) against the same model computed in numpy, and bad input.

Runs where the onnx package is present (Debian's python3-onnx); onnxruntime is not
needed: the reference is written out below."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

import gaio

onnx = pytest.importorskip("onnx")
if not gaio.model.onnx_supported():
    pytest.skip("SKIPPED: libgaio built without ONNX support", allow_module_level=True)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

H = W = 12
CIN, COUT, CLASSES = 3, 8, 10


def tiny_weights(rng: np.random.Generator) -> dict:
    return {"W": (rng.standard_normal((COUT, CIN, 3, 3)) * 0.3).astype(np.float32),
            "B": (rng.standard_normal(COUT) * 0.1).astype(np.float32),
            "G": rng.standard_normal((CLASSES, COUT)).astype(np.float32),
            "GB": (rng.standard_normal(CLASSES) * 0.1).astype(np.float32)}


def tiny_model(w: dict, batch="batch", extra_nodes=(), opset: int = 17):
    """x [batch, 3, H, W] -> Conv 3x3 pad 1 -> Relu -> GlobalAveragePool -> Flatten ->
    Gemm (transB) -> Softmax -> y [batch, CLASSES]."""
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu0"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap0"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten0", axis=1),
             helper.make_node("Gemm", ["f", "G", "GB"], ["g"], name="fc0", transB=1),
             helper.make_node("Softmax", ["g"], ["y"], name="softmax0", axis=1)]
    nodes += list(extra_nodes)
    out = "y" if not extra_nodes else extra_nodes[-1].output[0]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, CIN, H, W])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [batch, CLASSES])],
        [numpy_helper.from_array(v, k) for k, v in w.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="gaio-test")
    m.ir_version = 8
    return m


def reference(x: np.ndarray, w: dict) -> np.ndarray:
    """The tiny model in numpy, in float64."""
    x64 = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(x64, (3, 3), axis=(2, 3))  # [N, C, H, W, 3, 3]
    c = np.einsum("nchwij,ocij->nohw", win, w["W"].astype(np.float64)) + w["B"][None, :, None, None]
    r = np.maximum(c, 0)
    f = r.mean(axis=(2, 3))
    g = f @ w["G"].astype(np.float64).T + w["GB"]
    e = np.exp(g - g.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run_host(ex: gaio.ModelExec, x: np.ndarray) -> np.ndarray:
    s = gaio.Stream("cpu")
    xt = gaio.tensor(x, device="cpu", stream=s)
    (yt,) = ex.empty_outputs(s)
    ex.run(s, [xt], [yt]).result(timeout=60)
    return yt.numpy()


@pytest.fixture
def weights(rng):
    return tiny_weights(rng)


def test_model_describes_itself(weights):
    m = gaio.Model(tiny_model(weights).SerializeToString())
    assert len(m.inputs) == 1 and len(m.outputs) == 1
    x, y = m.inputs[0], m.outputs[0]
    assert x.name == "x" and x.dtype == np.float32 and x.shape == (None, CIN, H, W)
    assert x.dim_names[0] == "batch" and x.dim_names[1:] == ("", "", "")
    assert y.name == "y" and y.dtype == np.float32 and y.shape == (None, CLASSES)
    s = m.summary
    assert (s.opset, s.inputs, s.outputs, s.initializers) == (17, 1, 1, 4)
    assert s.nodes == 6 and s.producer.startswith("gaio-test")
    assert s.weight_bytes == sum(v.nbytes for v in weights.values())
    assert [op for _, op in m.nodes] == ["Conv", "Relu", "GlobalAveragePool", "Flatten", "Gemm", "Softmax"]
    assert "conv0" in dict(m.nodes)
    assert "Model" in repr(m)


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("layout", ["auto", "nchw", "nhwc"])
def test_tiny_model_matches_numpy(weights, rng, batch, layout):
    m = gaio.Model(tiny_model(weights).SerializeToString())
    ex = m.exec("cpu", batch=batch, precision="model", layout=layout)
    assert ex.input_shapes == ((batch, CIN, H, W),) and ex.output_shapes == ((batch, CLASSES),)
    x = rng.standard_normal((batch, CIN, H, W)).astype(np.float32)
    y = run_host(ex, x)
    ref = reference(x, weights)
    err = np.abs(y - ref).max()
    print(f"batch {batch} layout {layout}: max abs error {err:.3g}")
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_fixed_batch_from_file(weights, rng, tmp_path):
    path = tmp_path / "tiny.onnx"
    onnx.save(tiny_model(weights, batch=2), str(path))
    m = gaio.Model(path)
    assert m.inputs[0].shape == (2, CIN, H, W) and m.source == str(path)
    ex = m.exec(gaio.default_context("cpu"))  # no batch: the model has none symbolic
    x = rng.standard_normal((2, CIN, H, W)).astype(np.float32)
    np.testing.assert_allclose(run_host(ex, x), reference(x, weights), rtol=1e-4, atol=1e-4)


def test_run_is_awaitable_and_repeatable(weights, rng):
    m = gaio.Model(tiny_model(weights).SerializeToString())
    ex = m.exec("cpu", batch=2)
    xs = [rng.standard_normal((2, CIN, H, W)).astype(np.float32) for _ in range(3)]

    async def main():
        s = gaio.Stream("cpu")
        outs = []
        for x in xs:
            xt = gaio.tensor(x, device="cpu", stream=s)
            (yt,) = ex.empty_outputs(s)
            fut = ex.run(s, [xt], [yt])
            assert yt.stream is s and xt.stream is s
            await fut
            outs.append(yt.numpy())
        return outs

    for x, y in zip(xs, asyncio.run(main())):
        np.testing.assert_allclose(y, reference(x, weights), rtol=1e-4, atol=1e-4)


def test_run_keeps_tensors_alive(weights, rng):
    """Dropping the inputs and the future right after run() is safe."""
    m = gaio.Model(tiny_model(weights).SerializeToString())
    ex = m.exec("cpu", batch=4)
    x = rng.standard_normal((4, CIN, H, W)).astype(np.float32)
    s = gaio.Stream("cpu")
    (yt,) = ex.empty_outputs(s)
    for _ in range(5):
        ex.run(s, [gaio.tensor(x, device="cpu", stream=s)], [yt])
    s.synchronize()
    np.testing.assert_allclose(yt.numpy(), reference(x, weights), rtol=1e-4, atol=1e-4)


def test_two_execs_share_a_model(weights, rng):
    m = gaio.Model(tiny_model(weights).SerializeToString())
    a, b = m.exec("cpu", batch=1), m.exec("cpu", batch=5)
    x = rng.standard_normal((5, CIN, H, W)).astype(np.float32)
    ref = reference(x, weights)
    np.testing.assert_allclose(run_host(b, x), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_host(a, x[:1]), ref[:1], rtol=1e-4, atol=1e-4)
    del m  # the execs hold the model
    np.testing.assert_allclose(run_host(a, x[2:3]), ref[2:3], rtol=1e-4, atol=1e-4)


# ---- bad input ------------------------------------------------------------------------


@pytest.fixture
def tiny_exec(weights):
    return gaio.Model(tiny_model(weights).SerializeToString()).exec("cpu", batch=2)


def test_wrong_shape_dtype_and_count(tiny_exec):
    ex = tiny_exec
    s = gaio.Stream("cpu")
    good_x = gaio.empty((2, CIN, H, W), "float32", device="cpu")
    good_y = gaio.empty((2, CLASSES), "float32", device="cpu")
    bad = [([gaio.empty((3, CIN, H, W), "float32", device="cpu")], [good_y]),   # batch
           ([gaio.empty((2, CIN, H, W + 1), "float32", device="cpu")], [good_y]),  # width
           ([gaio.empty((2, CIN, H, W), "float16", device="cpu")], [good_y]),    # dtype
           ([good_x], [gaio.empty((2, CLASSES + 1), "float32", device="cpu")]),  # output shape
           ([good_x, good_x], [good_y]),                                          # count
           ([], [good_y]),
           ([good_x], [])]
    for ins, outs in bad:
        with pytest.raises(gaio.InvalidArgumentError, match="gaio_model_run"):
            ex.run(s, ins, outs)
    # A strided (not packed) input.
    big = gaio.empty((2, CIN, H, 2 * W), "float32", device="cpu")
    strided = gaio.Tensor(big.buffer, 0, "float32", (2, CIN, H, W), (CIN * H * 2 * W, H * 2 * W, 2 * W, 1))
    with pytest.raises(gaio.InvalidArgumentError, match="packed"):
        ex.run(s, [strided], [good_y])
    # Python-side type checks.
    with pytest.raises(gaio.InvalidArgumentError, match="gaio.Stream"):
        ex.run(None, [good_x], [good_y])
    with pytest.raises(gaio.InvalidArgumentError, match="list"):
        ex.run(s, good_x, [good_y])
    with pytest.raises(gaio.InvalidArgumentError, match=r"inputs\[0\]"):
        ex.run(s, [np.zeros((2, CIN, H, W), np.float32)], [good_y])
    # Nothing was enqueued: a good run still works.
    ex.run(s, [good_x.fill_bytes_(0, s)], [good_y]).result(timeout=60)


def test_bad_exec_options(weights):
    m = gaio.Model(tiny_model(weights).SerializeToString())
    with pytest.raises(gaio.InvalidArgumentError, match="precision"):
        m.exec("cpu", batch=1, precision="f8")
    with pytest.raises(gaio.InvalidArgumentError, match="layout"):
        m.exec("cpu", batch=1, layout="nhcw")
    with pytest.raises(gaio.InvalidArgumentError, match="batch"):
        m.exec("cpu", batch=1.5)
    with pytest.raises(gaio.InvalidArgumentError, match="batch"):
        m.exec("cpu")  # the model's batch is symbolic
    with pytest.raises(gaio.InvalidArgumentError, match="batch"):
        m.exec("cpu", batch=-2)


def test_unsupported_operator_names_the_node(weights):
    odd = helper.make_node("Einsum", ["y", "y"], ["z"], name="my_einsum", equation="ij,ij->ij")
    data = tiny_model(weights, extra_nodes=[odd]).SerializeToString()
    with pytest.raises(gaio.NotSupportedError) as info:
        gaio.Model(data)
    msg = str(info.value)
    print(msg)
    assert "my_einsum" in msg and "Einsum" in msg


def test_malformed_files(weights, tmp_path):
    data = tiny_model(weights).SerializeToString()
    with pytest.raises(gaio.InvalidArgumentError):
        gaio.Model(b"\xff" * 64)
    with pytest.raises(gaio.InvalidArgumentError):
        gaio.Model(data[: len(data) // 2])
    with pytest.raises(gaio.Error):
        gaio.Model(tmp_path / "missing.onnx")
    with pytest.raises(gaio.InvalidArgumentError):
        gaio.Model(12345)
