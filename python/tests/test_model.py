"""gaio.Model on the host: a tiny CNN built with the onnx package (random weights,
printed seed) against the same model computed in numpy, and bad input.

Runs where the onnx package is present (Debian's python3-onnx); onnxruntime is not
needed: the reference is written out below."""
from __future__ import annotations

import asyncio
import os

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
    odd = helper.make_node("Hardmax", ["y"], ["z"], name="my_hardmax")
    data = tiny_model(weights, extra_nodes=[odd]).SerializeToString()
    with pytest.raises(gaio.NotSupportedError) as info:
        gaio.Model(data)
    msg = str(info.value)
    print(msg)
    assert "my_hardmax" in msg and "Hardmax" in msg


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


# ---- engines: build once, many execution contexts, save / load ------------------------


def _tiny(weights) -> gaio.Model:
    return gaio.Model(tiny_model(weights).SerializeToString())


def big_image_model() -> gaio.Model:
    """x [batch, 3, 4096, 4096] -> Conv 3x3 -> y: at batch 2**20 its activations are
    petabytes, which no allocation gives (the build fails after it started)."""
    w = np.ones((8, CIN, 3, 3), np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "W"], ["y"], name="conv0", kernel_shape=[3, 3], pads=[1, 1, 1, 1])], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", CIN, 4096, 4096])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, 4096, 4096])],
        [numpy_helper.from_array(w, "W")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="gaio-test")
    m.ir_version = 8
    return gaio.Model(m.SerializeToString())


@pytest.mark.parametrize("layout", ["auto", "nchw"])
def test_build_matches_shorthand(weights, rng, layout):
    m = _tiny(weights)
    engine = m.build("cpu", batch=3, precision="model", layout=layout)
    assert isinstance(engine, gaio.Engine) and engine.model is m
    assert engine.context is gaio.default_context("cpu")
    ex = engine.exec()
    assert isinstance(ex, gaio.ModelExec) and ex.engine is engine and ex.model is m
    short = m.exec("cpu", batch=3, precision="model", layout=layout)
    assert isinstance(short.engine, gaio.Engine) and short.engine is not engine and short.engine.model is m
    assert ex.input_shapes == short.input_shapes == ((3, CIN, H, W),)
    assert ex.output_shapes == short.output_shapes == ((3, CLASSES),)
    assert ex.batch == short.batch == 3 and ex.layout == short.layout == layout
    x = rng.standard_normal((3, CIN, H, W)).astype(np.float32)
    y, y_short = run_host(ex, x), run_host(short, x)
    np.testing.assert_array_equal(y, y_short)
    np.testing.assert_allclose(y, reference(x, weights), rtol=1e-4, atol=1e-4)
    assert "gaio.Engine" in repr(engine) and "ModelExec" in repr(ex)


def test_engine_info(weights):
    m = _tiny(weights)
    engine = m.build("cpu", batch=3)
    info = engine.info
    print(info)
    assert isinstance(info, gaio.model.EngineInfo)
    assert info.batch == 3
    assert info.dtype == np.float32  # "auto" is the model's precision on the host
    assert info.layout == "nhwc"     # "auto" is NHWC
    assert info.weight_bytes > 0 and info.arena_bytes > 0
    assert info.nodes == m.summary.nodes == 6
    assert 0 < info.steps <= info.nodes
    assert info.convs == 1 and info.fused_act == 1 and info.folded_bn == 0 and info.fused_add == 0
    assert info.cuda_graph is False and info.loaded is False
    assert info.build_seconds >= 0
    with pytest.raises(Exception):  # frozen
        info.batch = 4
    assert engine.precision == "auto" and engine.layout == "auto"
    other = m.build("cpu", batch=1, precision="model", layout="nchw", tune=False, cuda_graph=False)
    assert other.info.layout == "nchw" and other.info.batch == 1 and other.info.dtype == np.float32
    f16 = m.build("cpu", batch=1, precision="f16")
    assert f16.info.dtype == np.float16
    assert f16.info.weight_bytes < engine.info.weight_bytes
    assert engine.info.f16_accumulation is False and f16.info.f16_accumulation is False


def test_f16_fast_precision(weights, rng, tmp_path):
    """precision "f16-fast": an f16 engine whose convolutions may accumulate in f16 (on a
    GPU; the host computes as for "f16": the same bits), kept by save and load."""
    m = _tiny(weights)
    fast = m.build("cpu", batch=2, precision="f16-fast")
    plain = m.build("cpu", batch=2, precision="f16")
    assert fast.info.dtype == np.float16 and fast.info.f16_accumulation is True and fast.precision == "f16-fast"
    x = rng.standard_normal((2, CIN, H, W)).astype(np.float32)
    y = run_host(fast.exec(), x)
    np.testing.assert_array_equal(y, run_host(plain.exec(), x))
    np.testing.assert_allclose(y, reference(x, weights), rtol=2e-2, atol=2e-2)
    path = tmp_path / "fast.engine"
    fast.save(path)
    loaded = gaio.Engine.load(path, "cpu")
    assert loaded.info.f16_accumulation is True and loaded.precision == "f16-fast"
    np.testing.assert_array_equal(run_host(loaded.exec(), x), y)
    with pytest.raises(gaio.InvalidArgumentError, match="precision 'f16_fast'"):
        m.build("cpu", batch=2, precision="f16_fast")


@pytest.mark.parametrize("precision", ["model", "f16"])
def test_padded_stem_channels(weights, rng, tmp_path, monkeypatch, precision):
    """A 3-channel input read only by a convolution is staged with its channels padded to
    8 (zeros) and the weights with it, so that a GPU's tensor-core engines take the stem
    (the default there; GAIO_MODEL_PAD_CHANNELS=1 asks for it on the host too). Same
    results as unpadded, across runs (the arena's bytes are reused, so the padding is
    cleared at each run) and through save and load."""
    m = _tiny(weights)
    monkeypatch.setenv("GAIO_MODEL_PAD_CHANNELS", "0")
    plain = m.build("cpu", batch=2, precision=precision, layout="nhwc")
    monkeypatch.setenv("GAIO_MODEL_PAD_CHANNELS", "1")
    padded = m.build("cpu", batch=2, precision=precision, layout="nhwc")
    monkeypatch.delenv("GAIO_MODEL_PAD_CHANNELS")
    # W [8, 3, 3, 3] stored as [8, 3, 3, 8]: 8 * 9 * 5 more elements
    grew = 8 * 9 * 5 * (4 if precision == "model" else 2)
    assert padded.info.weight_bytes >= plain.info.weight_bytes + grew - 256
    assert padded.info.weight_bytes > plain.info.weight_bytes
    ex, ref_ex = padded.exec(), plain.exec()
    tol = 1e-5 if precision == "model" else 2e-2
    for _ in range(2):  # the second run finds the first's bytes in the arena
        x = rng.standard_normal((2, CIN, H, W)).astype(np.float32)
        y = run_host(ex, x)
        np.testing.assert_allclose(y, run_host(ref_ex, x), rtol=tol, atol=tol)
        np.testing.assert_allclose(y, reference(x, weights), rtol=tol, atol=tol)
    path = tmp_path / "padded.engine"
    padded.save(path)
    loaded = gaio.Engine.load(path, "cpu")
    assert loaded.info.weight_bytes == padded.info.weight_bytes
    np.testing.assert_array_equal(run_host(loaded.exec(), x), y)


def _saved(engine) -> bytes:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "e.engine")
        engine.save(path)
        with open(path, "rb") as f:
            return f.read()


@pytest.mark.parametrize("precision", ["model", "f16"])
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_host_weights_packed_once(weights, rng, monkeypatch, precision, layout):
    """A host engine reorders each convolution's constant weights into oneDNN's layout
    once, at build (its step says "w packed"), instead of at every run: the outputs are
    those of an engine that reorders at each call (GAIO_MODEL_PACK_WEIGHTS=0), bitwise,
    run after run, and with several contexts of one engine at once."""
    m = _tiny(weights)
    monkeypatch.setenv("GAIO_MODEL_PACK_WEIGHTS", "0")
    plain = m.build("cpu", batch=2, precision=precision, layout=layout)
    monkeypatch.delenv("GAIO_MODEL_PACK_WEIGHTS")
    packed = m.build("cpu", batch=2, precision=precision, layout=layout)
    conv = [s for s in packed.steps if s.ops.startswith("Conv")][0]
    plain_conv = [s for s in plain.steps if s.ops.startswith("Conv")][0]
    if "planned at the first run" in conv.kernel:
        pytest.skip("SKIPPED: this convolution reads the caller's input as it is, so it is planned (and its "
                    "weights left unpacked) at its first run")
    if "oneDNN" not in conv.kernel or "reordered" not in plain_conv.kernel:
        pytest.skip(f"SKIPPED: the host convolution reorders nothing here ({plain_conv.kernel!r})")
    assert "w packed" in conv.kernel and "w reordered" not in conv.kernel, conv.kernel
    assert "w packed" not in plain_conv.kernel
    execs = [packed.exec() for _ in range(2)]
    ref_ex = plain.exec()
    for _ in range(2):
        x = rng.standard_normal((2, CIN, H, W)).astype(np.float32)
        want = run_host(ref_ex, x)
        for ex in execs:
            np.testing.assert_array_equal(run_host(ex, x), want)
    loaded = gaio.Engine.load(_saved(packed), "cpu")
    assert "w packed" in [s for s in loaded.steps if s.ops.startswith("Conv")][0].kernel
    np.testing.assert_array_equal(run_host(loaded.exec(), x), want)
    del packed  # the contexts hold the engine, and its packed weights with it
    import gc
    gc.collect()
    np.testing.assert_array_equal(run_host(execs[0], x), want)


def test_engine_steps(weights):
    engine = _tiny(weights).build("cpu", batch=2)
    steps = engine.steps
    print(steps)
    assert isinstance(steps, list) and len(steps) == engine.info.steps
    assert all(isinstance(s, tuple) and len(s) == 3 and all(isinstance(f, str) for f in s) for s in steps)
    name, ops, kernel = steps[0]
    assert (name, ops) == ("conv0", "Conv+Relu")  # the Relu fused into the convolution
    assert [s.ops for s in steps] == ["Conv+Relu", "GlobalAveragePool", "Flatten", "Gemm", "Softmax"]
    assert all(s.kernel == "" for s in steps[1:])  # only convolutions name a kernel


def test_engine_shapes(weights, rng):
    m = _tiny(weights)
    engine = m.build("cpu", shapes={"x": (5, CIN, H, W)})  # the batch from the input's shape
    (x,), (y,) = engine.inputs, engine.outputs
    assert x.name == "x" and x.shape == (5, CIN, H, W) and x.dim_names[0] == "batch" and x.dtype == np.float32
    assert y.name == "y" and y.shape == (5, CLASSES) and y.dtype == np.float32
    assert engine.info.batch == 5
    ex = engine.exec()
    assert ex.input_shapes == ((5, CIN, H, W),) and ex.output_shapes == ((5, CLASSES),) and ex.batch == 5
    xs = rng.standard_normal((5, CIN, H, W)).astype(np.float32)
    np.testing.assert_allclose(run_host(ex, xs), reference(xs, weights), rtol=1e-4, atol=1e-4)
    # shapes given as a list and numpy ints work alike; shapes win over batch
    e2 = m.build("cpu", batch=7, shapes={"x": [np.int64(2), CIN, H, W]})
    assert e2.inputs[0].shape == (2, CIN, H, W)


@pytest.mark.parametrize("layout", ["auto", "nchw"])
def test_save_load_round_trip(weights, rng, tmp_path, layout):
    m = _tiny(weights)
    engine = m.build("cpu", batch=3, precision="model", layout=layout)
    path = tmp_path / "tiny.engine"
    engine.save(path)
    assert path.stat().st_size > engine.info.weight_bytes
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.engine"]  # no temporary file left
    loaded = gaio.Engine.load(path, gaio.default_context("cpu"))
    print(loaded)
    a, b = engine.info, loaded.info
    assert a.loaded is False and b.loaded is True
    for f in ("batch", "dtype", "layout", "weight_bytes", "arena_bytes", "nodes", "steps", "folded_bn", "fused_add",
              "fused_act", "convs", "cuda_graph"):
        assert getattr(a, f) == getattr(b, f), f
    assert [s[:2] for s in loaded.steps] == [s[:2] for s in engine.steps]
    assert loaded.inputs == engine.inputs and loaded.outputs == engine.outputs
    assert loaded.precision == "model" and loaded.layout == a.layout
    # its model: the graph the file holds, no ONNX file needed
    lm = loaded.model
    assert isinstance(lm, gaio.Model) and lm is not m
    assert lm.inputs == m.inputs and lm.outputs == m.outputs and lm.nodes == m.nodes
    x = rng.standard_normal((3, CIN, H, W)).astype(np.float32)
    y = run_host(engine.exec(), x)
    ex = loaded.exec()
    assert ex.engine is loaded and ex.model is lm
    assert ex.input_shapes == ((3, CIN, H, W),) and ex.output_shapes == ((3, CLASSES),)
    np.testing.assert_array_equal(run_host(ex, x), y)  # bitwise
    # from bytes too, on the default context
    from_bytes = gaio.Engine.load(path.read_bytes())
    np.testing.assert_array_equal(run_host(from_bytes.exec(), x), y)
    # the loaded engine's Model holds a reference of its own
    del loaded, ex
    import gc
    gc.collect()
    assert lm.summary.nodes == 6 and [op for _, op in lm.nodes][0] == "Conv"
    # saving a loaded engine again gives a file that loads
    again = tmp_path / "again.engine"
    from_bytes.save(str(again))
    np.testing.assert_array_equal(run_host(gaio.Engine.load(again, "cpu").exec(), x), y)


def test_load_refuses_bad_files(weights, tmp_path):
    path = tmp_path / "tiny.engine"
    _tiny(weights).build("cpu", batch=2).save(path)
    data = path.read_bytes()
    corrupt = bytearray(data)
    corrupt[len(data) // 2] ^= 0x5A
    cases = {"corrupt": bytes(corrupt), "truncated": data[: len(data) - 7], "junk": b"\x7fELF" + bytes(300),
             "empty": b"", "longer": data + b"\x00"}
    for name, content in cases.items():
        p = tmp_path / f"{name}.engine"
        p.write_bytes(content)
        with pytest.raises(gaio.InvalidArgumentError, match="not a gaio engine") as info:
            gaio.Engine.load(p, "cpu")
        print(f"{name}: {info.value}")
        if content:
            with pytest.raises(gaio.InvalidArgumentError, match="not a gaio engine"):
                gaio.Engine.load(content, "cpu")
    with pytest.raises(gaio.NotFoundError) as info:
        gaio.Engine.load(tmp_path / "missing.engine", "cpu")
    assert info.value.status_name == "GAIO_ERR_NOT_FOUND" and "missing.engine" in str(info.value)
    with pytest.raises(gaio.InvalidArgumentError):
        gaio.Engine.load(12345, "cpu")
    with pytest.raises(gaio.InvalidArgumentError):  # an ONNX file is not an engine
        onnx_path = tmp_path / "tiny.onnx"
        onnx.save(tiny_model(weights), str(onnx_path))
        gaio.Engine.load(onnx_path, "cpu")
    # the good file still loads
    assert gaio.Engine.load(path, "cpu").info.loaded


def test_build_async(weights, rng):
    m = _tiny(weights)
    x = rng.standard_normal((2, CIN, H, W)).astype(np.float32)

    async def main():
        engine = await m.build_async(gaio.default_context("cpu"), batch=2, precision="model")
        assert isinstance(engine, gaio.Engine) and engine.model is m
        # several at once, and the future form
        e2, e3 = await asyncio.gather(m.build_async("cpu", batch=2, layout="nchw"),
                                      m.build_async("cpu", shapes={"x": (2, CIN, H, W)}))
        e4, built = m.build_async_future("cpu", batch=2)
        assert isinstance(built, gaio.Future)
        await built
        assert built.done() and "building" not in repr(e4)
        outs = []
        s = gaio.Stream("cpu")
        for e in (engine, e2, e3, e4):
            ex = e.exec()
            xt = gaio.tensor(x, device="cpu", stream=s)
            (yt,) = ex.empty_outputs(s)
            await ex.run(s, [xt], [yt])
            outs.append(yt.numpy())
        return engine, outs

    engine, outs = asyncio.run(main())
    assert engine.info.batch == 2 and engine.info.loaded is False
    ref = reference(x, weights)
    for y in outs:
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    # without an event loop: the future waited on, or not at all (every call waits for the build)
    e, built = m.build_async_future("cpu", batch=2)
    built.result(timeout=60)
    np.testing.assert_allclose(run_host(e.exec(), x), ref, rtol=1e-4, atol=1e-4)
    e, _ = m.build_async_future("cpu", batch=2)
    np.testing.assert_allclose(run_host(e.exec(), x), ref, rtol=1e-4, atol=1e-4)
    e, _ = m.build_async_future("cpu", batch=2)
    del e  # dropped while it builds: the build finishes, then the engine goes


def test_build_async_failure():
    """A build that fails after it started: the await raises the status's gaio.Error
    with the build's message, and so does everything that reads the engine."""
    m = big_image_model()

    async def main():
        engine, built = m.build_async_future("cpu", batch=1 << 20)  # the arguments are fine: no raise here
        with pytest.raises(gaio.Error) as info:
            await built
        return engine, info.value

    engine, err = asyncio.run(main())
    print(f"{type(err).__name__}: {err}")
    assert type(err) is not gaio.Error and isinstance(err, (gaio.InvalidArgumentError, gaio.OutOfMemoryError))
    assert str(err) and err.status == type(err).status
    with pytest.raises(type(err), match="build failed"):
        engine.info
    with pytest.raises(type(err), match="build failed"):
        engine.exec()
    assert "failed" in repr(engine)

    async def awaited():
        return await m.build_async("cpu", batch=1 << 20)

    with pytest.raises(type(err)):
        asyncio.run(awaited())


def test_bad_build_options(weights):
    m = _tiny(weights)
    with pytest.raises(gaio.InvalidArgumentError, match="precision"):
        m.build("cpu", batch=1, precision="x")
    with pytest.raises(gaio.InvalidArgumentError, match="layout"):
        m.build("cpu", batch=1, layout="x")
    with pytest.raises(gaio.InvalidArgumentError, match="no input 'nope'"):
        m.build("cpu", shapes={"nope": (1, CIN, H, W)})
    with pytest.raises(gaio.InvalidArgumentError, match="dimensions"):
        m.build("cpu", shapes={"x": (1, CIN, H)})
    with pytest.raises(gaio.InvalidArgumentError, match="dimension 2"):
        m.build("cpu", shapes={"x": (1, CIN, H + 1, W)})  # a fixed dimension differs from the model's
    with pytest.raises(gaio.InvalidArgumentError, match="shapes"):
        m.build("cpu", shapes=[("x", (1, CIN, H, W))])
    with pytest.raises(gaio.InvalidArgumentError, match="shapes"):
        m.build("cpu", shapes={"x": 4})
    with pytest.raises(gaio.InvalidArgumentError, match="shapes"):
        m.build("cpu", shapes={"x": (1.5, CIN, H, W)})
    with pytest.raises(gaio.InvalidArgumentError, match="shapes"):
        m.build("cpu", shapes={"x": (1,) * 9})
    with pytest.raises(gaio.InvalidArgumentError, match="batch"):
        m.build("cpu", batch=True)
    with pytest.raises(gaio.InvalidArgumentError, match="batch"):
        m.build("cpu")  # symbolic batch, none given
    with pytest.raises(gaio.InvalidArgumentError, match="batch"):
        m.build("cpu", batch=0)
    # the asynchronous build checks its arguments before it starts
    with pytest.raises(gaio.InvalidArgumentError, match="precision"):
        m.build_async_future("cpu", batch=1, precision="x")
    with pytest.raises(gaio.InvalidArgumentError, match="no input 'nope'"):
        m.build_async_future("cpu", shapes={"nope": (1, CIN, H, W)})
    with pytest.raises(gaio.InvalidArgumentError, match="precision"):
        asyncio.run(m.build_async("cpu", batch=1, precision="x"))
    with pytest.raises(TypeError):
        gaio.Engine(m)  # made by Model.build / build_async / Engine.load
    with pytest.raises(gaio.InvalidArgumentError):
        gaio.ModelExec(object())


def test_engine_holds_its_model(weights, rng):
    """An engine's execs run after the Model object is gone, and an exec after its
    Engine object is gone."""
    import gc
    m = _tiny(weights)
    engine = m.build("cpu", batch=2)
    del m
    gc.collect()
    x = rng.standard_normal((2, CIN, H, W)).astype(np.float32)
    ref = reference(x, weights)
    np.testing.assert_allclose(run_host(engine.exec(), x), ref, rtol=1e-4, atol=1e-4)
    ex = engine.exec()
    del engine
    gc.collect()
    np.testing.assert_allclose(run_host(ex, x), ref, rtol=1e-4, atol=1e-4)
    assert ex.engine.model.inputs[0].name == "x"


def test_execs_of_one_engine_run_concurrently(weights, rng):
    """Several execution contexts of one engine, each on its own stream, all in flight
    at once: the outputs of one context run alone, bitwise."""
    engine = _tiny(weights).build("cpu", batch=2)
    n, rounds = 4, 3
    xs = [rng.standard_normal((2, CIN, H, W)).astype(np.float32) for _ in range(n * rounds)]
    solo = engine.exec()
    expect = [run_host(solo, x) for x in xs]
    execs = [engine.exec() for _ in range(n)]
    streams = [gaio.Stream("cpu") for _ in range(n)]
    futs, outs = [], []
    for r in range(rounds):
        for k in range(n):
            s = streams[k]
            (yt,) = execs[k].empty_outputs(s)
            futs.append(execs[k].run(s, [gaio.tensor(xs[r * n + k], device="cpu", stream=s)], [yt]))
            outs.append(yt)
    gaio.wait_all(futs).result(timeout=60)
    for y, e in zip(outs, expect):
        np.testing.assert_array_equal(y.numpy(), e)


def test_readme_operator_table_is_current():
    """README.md's operator table is scripts/operators-table's output for this libgaio:
    an operator added or an opset range changed without re-running it fails here."""
    import importlib.machinery
    import importlib.util
    from pathlib import Path
    # the checkout these tests came from; a copy elsewhere (scripts/test's run against the
    # installed package) has no README beside it
    root = next((p for p in Path(__file__).resolve().parents
                 if (p / "scripts" / "operators-table").is_file() and (p / "README.md").is_file()), None)
    if root is None:
        pytest.skip("SKIPPED: no checkout (README.md, scripts/operators-table) above this copy of the tests")
    loader = importlib.machinery.SourceFileLoader("operators_table", str(root / "scripts" / "operators-table"))
    spec = importlib.util.spec_from_loader("operators_table", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    ops = gaio.model.operators()
    names = [o[0] for o in ops]
    assert len(ops) > 60 and len(set(names)) == len(names) and "Conv" in names
    assert all(7 <= first <= last <= 22 for _, first, last, _ in ops)
    readme = (root / "README.md").read_text()
    assert mod.block(ops) in readme, "README.md's operator table is stale: run scripts/operators-table --write README.md"
