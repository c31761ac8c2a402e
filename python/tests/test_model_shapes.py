"""Symbolic heights and widths, set when an engine is built: a detector-style graph
(convolutions, nearest upsampling, concatenation, a head reshaped through a
Shape -> Slice -> Concat chain) whose input is [N, 3, H, W], built on the host at
two sizes from one loaded model and compared with onnxruntime (random weights,
printed seed). Without onnxruntime the comparison says SKIPPED."""
from __future__ import annotations

import os

import numpy as np
import pytest

import gaio

onnx = pytest.importorskip("onnx")
if not gaio.model.onnx_supported():
    pytest.skip("SKIPPED: libgaio built without ONNX support", allow_module_level=True)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def detector(rng: np.random.Generator) -> bytes:
    w = lambda *s: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), None)  # noqa: E731
    inits = []

    def init(name, *shape):
        t = w(*shape)
        t.name = name
        inits.append(t)
        return name

    i64 = lambda name, v: inits.append(numpy_helper.from_array(np.array(v, np.int64), name)) or name  # noqa: E731
    f32 = lambda name, v: inits.append(numpy_helper.from_array(np.array(v, np.float32), name)) or name  # noqa: E731
    n = [helper.make_node("Conv", ["x", init("w1", 8, 3, 3, 3), init("b1", 8)], ["c1"], name="stem",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
         helper.make_node("Conv", ["r1", init("w2", 8, 8, 3, 3), init("b2", 8)], ["c2"], name="down",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
         helper.make_node("Resize", ["c2", "", f32("scales", [1, 1, 2, 2])], ["up"], name="up", mode="nearest"),
         helper.make_node("Concat", ["up", "r1"], ["cat"], name="cat", axis=1),
         helper.make_node("Conv", ["cat", init("w3", 6, 16, 1, 1), init("b3", 6)], ["head"], name="head",
                          kernel_shape=[1, 1]),
         # the head flattened as exporters write it: [N, 6, H * W] from the tensor's own shape
         helper.make_node("Shape", ["head"], ["hs"], name="head_shape"),
         helper.make_node("Slice", ["hs", i64("s0", [0]), i64("s2", [2])], ["nc"], name="n_and_c"),
         helper.make_node("Concat", ["nc", i64("m1", [-1])], ["flat_shape"], name="flat_shape", axis=0),
         helper.make_node("Reshape", ["head", "flat_shape"], ["flat"], name="flatten"),
         helper.make_node("Softmax", ["flat"], ["y"], name="softmax", axis=1)]
    g = helper.make_graph(n, "detector", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6, "HW"]),
                           helper.make_tensor_value_info("head", TensorProto.FLOAT, ["N", 6, "H", "W"])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gaio-test")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m.SerializeToString()


def run_on(ex: gaio.ModelExec, x: np.ndarray, device: str = "cpu") -> list:
    s = gaio.Stream(device)
    outs = ex.empty_outputs(s)
    ex.run(s, [gaio.tensor(x, device=device, stream=s)], outs).result(timeout=60)
    return [o.numpy() for o in outs]


def test_symbolic_height_and_width_set_at_build(rng, dev):
    data = detector(rng)
    m = gaio.Model(data)
    assert m.inputs[0].shape == (None, 3, None, None) and m.inputs[0].dim_names == ("N", "", "H", "W")
    with pytest.raises(gaio.InvalidArgumentError, match="'H'"):
        m.build(dev, batch=1, precision="model")  # H and W have no value
    try:
        import onnxruntime as ort
    except ImportError:
        if os.environ.get("GAIO_REQUIRE_ONNXRUNTIME") == "1":
            raise
        ort = None
    for shape in ((1, 3, 32, 48), (2, 3, 64, 40)):
        e = m.build(dev, shapes={"x": shape}, precision="model")
        n, _, h, w = shape
        assert e.inputs[0].shape == shape
        assert e.outputs[0].shape == (n, 6, h * w) and e.outputs[1].shape == (n, 6, h, w)
        x = rng.standard_normal(shape).astype(np.float32)
        y, head = run_on(e.exec(), x, dev)
        if ort is None:
            print("SKIPPED: the onnxruntime comparison (onnxruntime does not import)")
            continue
        ref_y, ref_head = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        err = max(np.abs(y - ref_y).max(), np.abs(head - ref_head).max())
        print(f"{shape}: max abs error against onnxruntime {err:.3g}")
        np.testing.assert_allclose(head, ref_head, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(y, ref_y, rtol=1e-4, atol=1e-5)


def test_profile_runs_any_shape_in_range(rng, dev):
    """An engine built with a profile (min, opt, max per input dimension) runs at opt,
    then at any shape in range once an exec is set to it (that shape's engine built on
    first use, then shared with the engine's other execs), matching onnxruntime; a
    shape outside is a clear error, and so is a bad range."""
    data = detector(rng)
    m = gaio.Model(data)
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    except ImportError:
        if os.environ.get("GAIO_REQUIRE_ONNXRUNTIME") == "1":
            raise
        sess = None
        print("SKIPPED: the onnxruntime comparison (onnxruntime does not import)")
    lo, opt, hi = (1, 3, 8, 8), (2, 3, 16, 16), (3, 3, 32, 48)
    e = m.build(dev, profile={"x": (lo, opt, hi)}, precision="model")
    assert e.inputs[0].shape == opt
    ex, ex2 = e.exec(), e.exec()
    for shape in (opt, (1, 3, 8, 24), hi, lo, opt):
        ex.set_shapes({"x": shape})
        assert ex.input_shapes[0] == shape and ex.output_shapes[1] == (shape[0], 6, shape[2], shape[3])
        x = rng.standard_normal(shape).astype(np.float32)
        got = run_on(ex, x, dev)
        ex2.set_shapes({"x": shape})  # another exec of the engine: its own arena, the shared engine
        for a, b in zip(got, run_on(ex2, x, dev)):
            np.testing.assert_array_equal(a, b)
        if sess is not None:
            for a, b in zip(got, sess.run(None, {"x": x})):
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        print(f"profile: ran {shape}, outputs {[g.shape for g in got]}")
    with pytest.raises(gaio.InvalidArgumentError, match=r"dimension 3 of input 'x' is 64: the engine takes 8 to 48"):
        ex.set_shapes({"x": (1, 3, 32, 64)})
    with pytest.raises(gaio.InvalidArgumentError, match=r"1 <= min <= opt <= max"):
        m.build(dev, profile={"x": (opt, lo, hi)}, precision="model")
    with pytest.raises(gaio.InvalidArgumentError, match=r"dimension 1 of input 'x' is 3 in the model"):
        m.build(dev, profile={"x": ((1, 2, 8, 8), opt, hi)}, precision="model")
    with pytest.raises(gaio.NotSupportedError, match=r"shape profile"):
        e.save(os.devnull)
    fixed = m.build(dev, shapes={"x": opt}, precision="model").exec()
    with pytest.raises(gaio.InvalidArgumentError, match=r"built without a profile"):
        fixed.set_shapes({"x": lo})
    fixed.set_shapes({"x": opt})  # its own shapes: fine


def test_profile_shape_built_once_for_concurrent_execs(rng, dev):
    """Execs of one engine set to the same new shape from several threads at once: the
    shape's engine is built once (the family's lock) and every exec runs it alike."""
    import threading
    m = gaio.Model(detector(rng))
    e = m.build(dev, profile={"x": ((1, 3, 8, 8), (1, 3, 16, 16), (2, 3, 40, 40))}, precision="model")
    execs = [e.exec() for _ in range(4)]
    shape = (2, 3, 24, 40)
    errors = []

    def bind(ex):
        try:
            ex.set_shapes({"x": shape})
        except Exception as err:  # reported below, with the thread's exception
            errors.append(err)

    threads = [threading.Thread(target=bind, args=(ex,)) for ex in execs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    x = rng.standard_normal(shape).astype(np.float32)
    outs = [run_on(ex, x, dev) for ex in execs]
    for o in outs[1:]:
        for a, b in zip(outs[0], o):
            np.testing.assert_array_equal(a, b)


def test_profile_async_build_and_batch_only_model(rng):
    """A profile over the batch alone of a model whose shapes do not wait for the build,
    built asynchronously."""
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(rng.standard_normal((4, 6)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "lin",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6])], [w])
    mp = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    mp.ir_version = 8
    m = gaio.Model(mp.SerializeToString())
    e, built = m.build_async_future("cpu", profile={"x": ((1, 4), (2, 4), (8, 4))})
    built.result(timeout=60)
    ex = e.exec()
    for n in (2, 5, 8, 1):
        ex.set_shapes({"x": (n, 4)})
        assert ex.output_shapes[0] == (n, 6)
        x = rng.standard_normal((n, 4)).astype(np.float32)
        y, = run_on(ex, x)
        np.testing.assert_allclose(y, x @ numpy_helper.to_array(w), rtol=1e-5, atol=1e-5)
    with pytest.raises(gaio.InvalidArgumentError, match=r"dimension 0 of input 'x' is 9: the engine takes 1 to 8"):
        ex.set_shapes({"x": (9, 4)})
