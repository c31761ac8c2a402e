#!/usr/bin/python3
"""ONNX models for tests/model/test_model_load.c (gaio_model_load and friends).

Usage: make_models.py OUTDIR [--seed N]. The seed (weights are random; nothing the
loader checks depends on their values, but test_model_run.c runs the good models
against onnxruntime, so their outputs spread over units: layer_weights) comes from
--seed, else GAIO_TEST_SEED, else the clock, and is printed. Needs numpy and the onnx
package (Debian's python3-onnx 1.12 or newer); without them it fails, and so does the
test that needs its files.

Writes good models the loader must accept, bad ones it must refuse, and
OUTDIR/manifest.txt saying what the C test expects of each, so that the C side
hard-codes nothing decided here. One record per model, tokens separated by spaces
(no token holds a space):

    good FILE key=value ...        a model gaio_model_load must accept
      keys: opset ir nodes inputs outputs initializers weight_bytes (exact values;
            a key written key>=value is a lower bound: the loader adds folded
            constants as initializers) producer (a fragment of the summary's
            producer) memory (OK, or the status gaio_model_load_memory of the same
            bytes must give: external data needs a file); canary=WEIGHT[,BIAS]
            (optional, for make_reference.py: a layer whose output channels it
            zeroes one at a time, the canaries tests/model/test_model_run.c must tell
            from the model's outputs; layers whose channels each reach many output
            elements, so that none can hide below the tolerance by chance)
    input NAME DTYPE NDIM DIM...   the model's graph inputs, in order; a DIM that
    output NAME DTYPE NDIM DIM...  is not a number is symbolic: -1 named so
    node OP NAME                   the nodes left after folding, in any order
                                   (NAME "-" for a node the file left unnamed)
    end

    bad FILE STATUS FRAGMENT...    gaio_model_load must fail with STATUS; the last
                                   error must name gaio_model_load and hold every
                                   FRAGMENT. STATUS and FRAGMENT may list
                                   alternatives separated by '|', any of which does.
                                   gaio_model_load_memory of the file's bytes must
                                   fail the same way, unless a token memory=STATUS
                                   says otherwise (its fragments then unchecked).

FILE is relative to OUTDIR. Statuses are gaio_status names without GAIO_ERR_ (OK,
INVALID_ARG, NOT_SUPPORTED, SYSTEM, ...).
"""
import os
import shutil
import sys
import time

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper, version_converter
except ImportError as e:  # a missing package must fail the test loudly, not skip it
    sys.exit("make_models.py: cannot import onnx (%s): install python3-onnx (scripts/deps), "
             "or point GAIO_GOLDEN_PYTHON at a python that has it" % e)

PRODUCER = "gaio-tests"
F32, F16, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
DTYPE_NAMES = {F32: "f32", F16: "f16", I64: "s64"}

rng = None
manifest = []


def weights(name, *shape, dtype=np.float32, scale=0.1):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(dtype), name)


def layer_weights(name, *shape, gain=2.0, dtype=np.float32):
    """A layer's weights (output channels or features first) of standard deviation
    sqrt(gain / fan_in), He's initialisation: each layer keeps its input's scale, so
    that the outputs spread over units, not hundredths. With weights of 0.1 the CNNs'
    logits were all within a few hundredths of each other and of zero: inside f16's
    tolerance, so that a zeroed output channel could pass (tests/model/test_model_run.c)."""
    fan_in = int(np.prod(shape[1:]))
    return weights(name, *shape, dtype=dtype, scale=float(np.sqrt(gain / fan_in)))


def typed_weights(name, elem, *shape, mean=0.0, std=0.1):
    """Weights in the TensorProto's typed fields (float_data; float16 as bits in
    int32_data) rather than raw_data, the other way a file may hold them."""
    vals = (mean + rng.standard_normal(shape) * std).astype(np.float16 if elem == F16 else np.float32)
    t = helper.make_tensor(name, elem, list(shape), vals.flatten().tolist(), raw=False)
    assert not t.raw_data
    return t


def model(nodes, inputs, outputs, inits, opset, name="g", check=True, ir_version=None):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name=PRODUCER, producer_version="1")
    # IR 8 (onnx 1.10's) unless told: newer onnx packages write IR versions that the
    # onnxruntime the references come from may not read yet.
    m.ir_version = ir_version if ir_version is not None else min(m.ir_version, 8)
    if check:
        onnx.checker.check_model(m)
        # the outputs' shapes written in the manifest must be ONNX's own inference
        inferred = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        for want, got in zip(outputs, inferred.graph.output):
            assert want == got, "%s: declared %s, ONNX infers %s" % (name, want, got)
    return m


def save(m, outdir, rel, **kw):
    path = os.path.join(outdir, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save_model(m, path, **kw)
    return path


def io_desc(vi):
    t = vi.type.tensor_type
    dims = []
    for d in t.shape.dim:
        dims.append(d.dim_param if d.HasField("dim_param") else str(d.dim_value))
    return "%s %s %d %s" % (vi.name, DTYPE_NAMES[t.elem_type], len(dims), " ".join(dims))


def good(outdir, rel, m, nodes, memory="OK", inits_min=False, **kw):
    """Writes m (unless the caller has) and its manifest record. nodes: the
    (op, name) pairs left after folding."""
    path = os.path.join(outdir, rel)
    if not os.path.exists(path):
        save(m, outdir, rel)
    init_names = {i.name for i in m.graph.initializer}
    ins = [vi for vi in m.graph.input if vi.name not in init_names]
    nbytes = sum(numpy_helper.to_array(i, base_dir=os.path.dirname(path)).nbytes for i in m.graph.initializer)
    rec = ["good", rel, "opset=%d" % m.opset_import[0].version, "ir=%d" % m.ir_version,
           "nodes=%d" % len(nodes), "inputs=%d" % len(ins), "outputs=%d" % len(m.graph.output),
           ("initializers>=%d" if inits_min else "initializers=%d") % len(m.graph.initializer),
           ("weight_bytes>=%d" if inits_min else "weight_bytes=%d") % nbytes,
           "producer=" + PRODUCER, "memory=" + memory]
    rec += ["%s=%s" % kv for kv in kw.items()]
    manifest.append(" ".join(rec))
    for vi in ins:
        manifest.append("input " + io_desc(vi))
    for vi in m.graph.output:
        manifest.append("output " + io_desc(vi))
    for op, name in nodes:
        manifest.append("node %s %s" % (op, name or "-"))
    manifest.append("end")


def bad(rel, status, *fragments):
    manifest.append(" ".join(("bad", rel, status) + fragments))


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def kept(m):
    """(op, name) of every node of m: for models where nothing folds."""
    return [(n.op_type, n.name) for n in m.graph.node]


# ---- good models -------------------------------------------------------------

def cnn(opset, batch):
    """Conv -> BN -> Relu -> MaxPool -> grouped strided Conv -> Clip(0, 6) + 1x1 Conv
    path -> GlobalAveragePool -> Flatten -> Gemm -> Softmax. Both the logits (Gemm's
    output, also read by Softmax) and the probabilities are graph outputs: the logits
    spread over a few units (He-scaled weights, a fully connected layer of gain 4), so
    that a zeroed channel moves them by more than f16's tolerance (any channel of the
    first convolution by 5 tolerances or more; over all four layers' 50 channels, all
    but about 0.3%, whose mean the global average pool nearly cancels), and the
    probabilities are far from uniform, so that Softmax is tested on a real spread.
    conv2's weights lean positive (mean 0.05) over its non-negative inputs, so that
    few of its channels stay below Clip's 0 at every pixel: such a dead channel hides
    a zeroed one, and with zero-mean weights a fifth of them did."""
    n = [
        helper.make_node("Conv", ["x", "c1_w", "c1_b"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], name="bn1",
                         epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "c2_w"], ["c2"], name="conv2", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], group=2),
        helper.make_node("Clip", ["c2", "clip_min", "clip_max"], ["clip"], name="clip6"),
        helper.make_node("Conv", ["p1", "c3_w", "c3_b"], ["c3"], name="shortcut", kernel_shape=[1, 1], strides=[2, 2]),
        helper.make_node("Add", ["clip", "c3"], ["sum"], name="residual"),
        helper.make_node("GlobalAveragePool", ["sum"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    inits = [
        layer_weights("c1_w", 8, 3, 3, 3), weights("c1_b", 8),
        numpy_helper.from_array((1 + rng.random(8)).astype(np.float32), "bn_s"), weights("bn_b", 8),
        weights("bn_m", 8), numpy_helper.from_array((0.5 + rng.random(8)).astype(np.float32), "bn_v"),
        numpy_helper.from_array(rng.normal(0.05, 0.12, (16, 4, 3, 3)).astype(np.float32), "c2_w"),
        numpy_helper.from_array(np.array(0, np.float32), "clip_min"),
        numpy_helper.from_array(np.array(6, np.float32), "clip_max"),
        layer_weights("c3_w", 16, 8, 1, 1), weights("c3_b", 16),
        layer_weights("fc_w", 10, 16, gain=4.0), weights("fc_b", 10),
    ]
    return model(n, [vi("x", F32, [batch, 3, 32, 32])],
                 [vi("logits", F32, [batch, 10]), vi("prob", F32, [batch, 10])], inits, opset)


def cnn_old(batch):
    """cnn() as opset 7 wrote it: BatchNormalization's spatial attribute, Clip's bounds as
    attributes, a Dropout (the identity at inference) and Squeeze's axes attribute in
    place of Flatten, Gemm with its C, and two Softmaxes of opset 7's meaning: over
    the logits, and over a whole [C, H, W] feature map (axis 1 of a 4-D tensor: every
    value of an image at once, where opset 13 would take the channels alone)."""
    n = [
        helper.make_node("Conv", ["x", "c1_w", "c1_b"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], name="bn1",
                         epsilon=1e-5, spatial=1),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "c2_w"], ["c2"], name="conv2", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], group=2),
        helper.make_node("Clip", ["c2"], ["clip"], name="clip6", min=0.0, max=6.0),
        helper.make_node("Conv", ["p1", "c3_w", "c3_b"], ["c3"], name="shortcut", kernel_shape=[1, 1], strides=[2, 2]),
        helper.make_node("Add", ["clip", "c3"], ["sum"], name="residual"),
        helper.make_node("Softmax", ["sum"], ["map_prob"], name="map_softmax"),
        helper.make_node("GlobalAveragePool", ["sum"], ["gap"], name="gap"),
        helper.make_node("Dropout", ["gap"], ["drop"], name="dropout", ratio=0.25),
        helper.make_node("Squeeze", ["drop"], ["flat"], name="squeeze", axes=[2, 3]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax"),
    ]
    inits = [
        layer_weights("c1_w", 8, 3, 3, 3), weights("c1_b", 8),
        numpy_helper.from_array((1 + rng.random(8)).astype(np.float32), "bn_s"), weights("bn_b", 8),
        weights("bn_m", 8), numpy_helper.from_array((0.5 + rng.random(8)).astype(np.float32), "bn_v"),
        numpy_helper.from_array(rng.normal(0.05, 0.12, (16, 4, 3, 3)).astype(np.float32), "c2_w"),
        layer_weights("c3_w", 16, 8, 1, 1), weights("c3_b", 16),
        layer_weights("fc_w", 10, 16, gain=4.0), weights("fc_b", 10),
    ]
    return model(n, [vi("x", F32, [batch, 3, 32, 32])],
                 [vi("logits", F32, [batch, 10]), vi("prob", F32, [batch, 10]),
                  vi("map_prob", F32, [batch, 16, 8, 8])], inits, 7)


def slice_cnn():
    """Slice as vision models use it (opset 13): every second channel of a feature map
    (a step), a crop with a negative end on two spatial axes, and the batch read back
    through Shape -> Slice -> Concat -> Reshape, which folds at load."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    n = [
        helper.make_node("Conv", ["x", "c1_w", "c1_b"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Slice", ["r1", "ch_s", "ch_e", "ch_a", "ch_st"], ["half"], name="every_second_channel"),
        helper.make_node("Slice", ["half", "sp_s", "sp_e", "sp_a"], ["crop"], name="crop"),
        helper.make_node("Conv", ["crop", "c2_w", "c2_b"], ["c2"], name="conv2", kernel_shape=[1, 1]),
        helper.make_node("Shape", ["c2"], ["shape"], name="shape"),
        helper.make_node("Slice", ["shape", "b_s", "b_e"], ["batch"], name="batch_of"),
        helper.make_node("Concat", ["batch", "minus1"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["c2", "newshape"], ["y"], name="flatten"),
    ]
    inits = [
        layer_weights("c1_w", 8, 3, 3, 3), weights("c1_b", 8), layer_weights("c2_w", 6, 4, 1, 1), weights("c2_b", 6),
        i64("ch_s", [1]), i64("ch_e", [8]), i64("ch_a", [1]), i64("ch_st", [2]),
        i64("sp_s", [1, 2]), i64("sp_e", [-1, 14]), i64("sp_a", [2, 3]),
        i64("b_s", [0]), i64("b_e", [1]), i64("minus1", [-1]),
    ]
    m = model(n, [vi("x", F32, [2, 3, 16, 16])], [vi("y", F32, [2, 6 * 14 * 12])], inits, 13)
    return m, [(op, name) for op, name in kept(m) if name not in ("shape", "batch_of", "concat")]


def pad_cnn(opset):
    """Pad in constant mode before a valid convolution: zeros around H and W (uneven,
    TensorFlow's "same" as exporters write it) and, from opset 11, an extra channel
    of 0.5 on each side (a constant_value input); opset 10 gives pads as an attribute."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    if opset >= 11:
        n = [helper.make_node("Pad", ["x", "sp_pads"], ["xp"], name="same_pad"),
             helper.make_node("Pad", ["xp", "ch_pads", "half"], ["xc"], name="channel_pad")]
        inits = [i64("sp_pads", [0, 0, 1, 2, 0, 0, 2, 1]), i64("ch_pads", [0, 1, 0, 0, 0, 1, 0, 0]),
                 numpy_helper.from_array(np.array(0.5, np.float32), "half")]
        cin = 5
    else:
        n = [helper.make_node("Pad", ["x"], ["xc"], name="same_pad", pads=[0, 0, 1, 2, 0, 0, 2, 1], mode="constant")]
        inits, cin = [], 3
    n.append(helper.make_node("Conv", ["xc", "w", "b"], ["y"], name="conv", kernel_shape=[3, 3]))
    inits += [layer_weights("w", 8, cin, 3, 3), weights("b", 8)]
    return model(n, [vi("x", F32, ["N", 3, 12, 12])], [vi("y", F32, ["N", 8, 13, 13])], inits, opset)


def index_cnn():
    """The indexing operators at run time as vision models use them (opset 13): a Gather
    of channels by a constant list (BGR -> RGB, one repeated), reflect padding before a
    valid convolution (style transfer, segmentation), a Slice with step -1 flipping W,
    Where with a mask computed at load (Range -> Less: the left half of the columns)
    choosing between the flipped and the unflipped map, edge padding that also cuts a
    row (a negative pad), and GatherElements picking channels per position."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    n = [
        helper.make_node("Gather", ["x", "channels"], ["rgb"], name="bgr_to_rgb", axis=1),
        helper.make_node("Pad", ["rgb", "reflect_pads"], ["xp"], name="reflect_pad", mode="reflect"),
        helper.make_node("Conv", ["xp", "c1_w", "c1_b"], ["c1"], name="conv1", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Slice", ["r1", "flip_s", "flip_e", "flip_a", "flip_st"], ["flipped"], name="flip_w"),
        helper.make_node("Range", ["r0", "r12", "r1s"], ["cols"], name="cols"),
        helper.make_node("Less", ["cols", "half"], ["left"], name="left_half"),
        helper.make_node("Where", ["left", "flipped", "r1"], ["mixed"], name="where_left"),
        helper.make_node("Pad", ["mixed", "edge_pads"], ["edged"], name="edge_pad", mode="edge"),
        helper.make_node("GatherElements", ["edged", "picks"], ["picked"], name="pick_channels", axis=1),
        helper.make_node("Conv", ["picked", "c2_w", "c2_b"], ["y"], name="conv2", kernel_shape=[1, 1]),
    ]
    inits = [
        i64("channels", [2, 1, 0, 1]), i64("reflect_pads", [0, 0, 1, 1, 0, 0, 1, 1]),
        layer_weights("c1_w", 8, 4, 3, 3), weights("c1_b", 8),
        i64("flip_s", [-1]), i64("flip_e", [np.iinfo(np.int64).min]), i64("flip_a", [3]), i64("flip_st", [-1]),
        i64("r0", 0), i64("r12", 12), i64("r1s", 1), i64("half", 6),
        i64("edge_pads", [0, 0, 1, 0, 0, 0, -1, 2]),  # H: one more on top, one cut at the bottom; W: two at the right
        i64("picks", rng.integers(-8, 8, (2, 6, 12, 14))),
        layer_weights("c2_w", 5, 6, 1, 1), weights("c2_b", 5),
    ]
    m = model(n, [vi("x", F32, [2, 3, 12, 12])], [vi("y", F32, [2, 5, 12, 14])], inits, 13)
    return m, [(op, nm) for op, nm in kept(m) if nm not in ("cols", "left_half")]


def wrap_pad():
    """Pad in wrap mode (opset 19): a feature map continued periodically on H and W
    (a panorama's seam), uneven, before a valid convolution."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    n = [helper.make_node("Pad", ["x", "pads"], ["xp"], name="wrap_pad", mode="wrap"),
         helper.make_node("Conv", ["xp", "w", "b"], ["y"], name="conv", kernel_shape=[3, 3])]
    inits = [i64("pads", [0, 0, 2, 1, 0, 0, 1, 2]), layer_weights("w", 4, 3, 3, 3), weights("b", 4)]
    # onnx 1.12's checker knows no opset 19: the shapes are plain, written by hand
    return model(n, [vi("x", F32, ["N", 3, 8, 8])], [vi("y", F32, ["N", 4, 9, 9])], inits, 19, check=False)


def c2f(opset):
    """A YOLOv8 C2f-style block: a 1x1 convolution's channels split in two, the second
    part through a 3x3 convolution, all three concatenated and mixed by a 1x1 one.
    Opset 11: equal parts (no sizes); opset 13: sizes 3 and 5 as an input."""
    n = [helper.make_node("Conv", ["x", "c1_w", "c1_b"], ["c1"], name="cv1", kernel_shape=[1, 1])]
    if opset >= 13:
        n.append(helper.make_node("Split", ["c1", "sizes"], ["a", "b"], name="split", axis=1))
        inits, na, nb = [numpy_helper.from_array(np.array([3, 5], np.int64), "sizes")], 3, 5
    else:
        n.append(helper.make_node("Split", ["c1"], ["a", "b"], name="split", axis=1))
        inits, na, nb = [], 4, 4
    n += [
        helper.make_node("Conv", ["b", "c2_w", "c2_b"], ["c"], name="bottleneck", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["a", "b", "c"], ["cat"], name="concat", axis=1),
        helper.make_node("Conv", ["cat", "c3_w", "c3_b"], ["y"], name="cv2", kernel_shape=[1, 1]),
    ]
    inits += [layer_weights("c1_w", 8, 3, 1, 1), weights("c1_b", 8), layer_weights("c2_w", nb, nb, 3, 3),
              weights("c2_b", nb), layer_weights("c3_w", 6, na + 2 * nb, 1, 1), weights("c3_b", 6)]
    return model(n, [vi("x", F32, ["N", 3, 16, 16])], [vi("y", F32, ["N", 6, 16, 16])], inits, opset)


def anchors():
    """What a detector's head computes beside its convolutions (opset 13): a grid from
    Range -> Reshape -> Expand and a scale from ConstantOfShape, both folded at load, and
    a pooled [N, C, 1, 1] map expanded back to [N, C, H, W] at run time."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    n = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[1, 1]),
        helper.make_node("Range", ["r0", "r8", "r1"], ["cols"], name="range"),
        helper.make_node("Reshape", ["cols", "row_shape"], ["row"], name="row"),
        helper.make_node("Expand", ["row", "grid_shape"], ["grid"], name="grid"),
        helper.make_node("Add", ["c", "grid"], ["g"], name="add_grid"),
        helper.make_node("ConstantOfShape", ["scale_shape"], ["scale"], name="scale",
                         value=numpy_helper.from_array(np.array([0.25], np.float32), "v")),
        helper.make_node("Mul", ["g", "scale"], ["m"], name="mul_scale"),
        helper.make_node("GlobalAveragePool", ["m"], ["pooled"], name="pool"),
        helper.make_node("Expand", ["pooled", "grid_shape"], ["back"], name="expand_back"),
        helper.make_node("Add", ["m", "back"], ["y"], name="add_back"),
    ]
    inits = [layer_weights("w", 4, 4, 1, 1), weights("b", 4), f32("r0", 0.0), f32("r8", 8.0), f32("r1", 1.0),
             i64("row_shape", [1, 1, 1, 8]), i64("grid_shape", [1, 4, 8, 8]), i64("scale_shape", [1, 4, 1, 1])]
    m = model(n, [vi("x", F32, ["N", 4, 8, 8])], [vi("y", F32, ["N", 4, 8, 8])], inits, 13)
    folded = ("range", "row", "grid", "scale")
    return m, [(op, nm) for op, nm in kept(m) if nm not in folded]


def upsample(kind):
    """Nearest upsampling between two convolutions, in the forms exporters write it:
    resize11 (torch at opsets 11-17: Resize with an empty roi, scales 2, asymmetric /
    floor), resize13 (sizes, half_pixel / round_prefer_floor, factors 3 and 2, a fixed
    batch), upsample9 (Upsample with a scales input) and upsample7 (its attribute)."""
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    batch, fh, fw, inits = "N", 2, 2, []
    if kind == "resize11":
        up = helper.make_node("Resize", ["c1", "roi", "scales"], ["u"], name="up", mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        inits, opset = [f32("roi", np.zeros(0)), f32("scales", [1, 1, 2, 2])], 11
    elif kind == "resize13":
        batch, fh, fw = 2, 3, 2
        up = helper.make_node("Resize", ["c1", "", "", "sizes"], ["u"], name="up", mode="nearest")
        inits, opset = [i64("sizes", [2, 4, 18, 12])], 13
    elif kind == "upsample9":
        up = helper.make_node("Upsample", ["c1", "scales"], ["u"], name="up", mode="nearest")
        inits, opset = [f32("scales", [1, 1, 2, 2])], 9
    else:
        up = helper.make_node("Upsample", ["c1"], ["u"], name="up", mode="nearest", scales=[1.0, 1.0, 2.0, 2.0])
        opset = 7
    n = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), up,
         helper.make_node("Conv", ["u", "w2", "b2"], ["y"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    inits += [layer_weights("w1", 4, 3, 3, 3), weights("b1", 4), layer_weights("w2", 5, 4, 3, 3), weights("b2", 5)]
    return model(n, [vi("x", F32, [batch, 3, 6, 6])], [vi("y", F32, [batch, 5, 6 * fh, 6 * fw])], inits, opset,
                 check=opset > 7)


def seg_head(opset):
    """A segmentation head: Conv -> Relu -> Resize linear x2 (half_pixel, PyTorch's
    align_corners=False) -> Conv 1x1 to classes -> Resize cubic by 0.75 -> Resize
    linear by sizes to 45 x 37, a multiple of neither. Opset 13 with a fixed batch (its
    sizes name every axis); opset 19 with a symbolic batch, the last Resize by sizes of
    axes (2, 3) under half_pixel_symmetric and keep_aspect_ratio_policy not_larger
    (so 45 x 37 of 24 x 24 gives 37 x 37), and the cubic one with exclude_outside."""
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    h = helper.make_node
    batch = 2 if opset < 18 else "N"
    n = [h("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         h("Relu", ["c1"], ["r1"], name="relu1"),
         h("Resize", ["r1", "", "up_scales"], ["u"], name="up_linear", mode="linear"),
         h("Conv", ["u", "w2", "b2"], ["c2"], name="classes", kernel_shape=[1, 1])]
    inits = [f32("up_scales", [1, 1, 2, 2]), layer_weights("w1", 8, 3, 3, 3), weights("b1", 8),
             layer_weights("w2", 5, 8, 1, 1), weights("b2", 5)]
    if opset < 18:
        n += [h("Resize", ["c2", "", "cubic_scales"], ["d"], name="down_cubic", mode="cubic"),
              h("Resize", ["d", "", "", "sizes"], ["y"], name="to_size", mode="linear",
                coordinate_transformation_mode="pytorch_half_pixel")]
        inits += [f32("cubic_scales", [1, 1, 0.75, 0.75]), i64("sizes", [2, 5, 45, 37])]
        out = [2, 5, 45, 37]
    else:
        n += [h("Resize", ["c2", "", "cubic_scales"], ["d"], name="down_cubic", mode="cubic", axes=[2, 3],
                exclude_outside=1),
              h("Resize", ["d", "", "", "sizes"], ["y"], name="to_size", mode="linear", axes=[2, 3],
                coordinate_transformation_mode="half_pixel_symmetric", keep_aspect_ratio_policy="not_larger")]
        inits += [f32("cubic_scales", [0.75, 0.75]), i64("sizes", [45, 37])]
        out = ["N", 5, 37, 37]
    # onnx 1.12's checker knows no opset 19: those shapes are written by hand
    return model(n, [vi("x", F32, [batch, 3, 16, 16])], [vi("y", F32, out)], inits, opset, check=opset < 18)


def decoder(opset):
    """A segmentation decoder's upsampling path: Conv -> ConvTranspose 2x (4x4, stride 2,
    pads 1, bias) -> Relu -> grouped ConvTranspose 2x (3x3, stride 2, group 2, output
    padding 1, no bias). Opset 13 gives pads; opset 11 the forms exporters also write:
    auto_pad SAME_UPPER on the first and, on the second, output_shape with dilation 2
    (even totals of padding: onnxruntime splits odd ones otherwise than ONNX's text)."""
    up1 = dict(strides=[2, 2])
    up2 = dict(strides=[2, 2], group=2, output_padding=[1, 1])
    if opset >= 13:
        up1.update(pads=[1, 1, 1, 1])
        up2.update(pads=[1, 1, 1, 1])
        k2, out = 3, 24
    else:
        up1.update(auto_pad="SAME_UPPER")
        up2.update(output_shape=[26, 26], dilations=[2, 2])  # 2 (12 - 1) + 1 + 5 - 26: 2 rows of padding
        k2, out = 3, 26
    n = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("ConvTranspose", ["c1", "w2", "b2"], ["u1"], name="up1", kernel_shape=[4, 4], **up1),
         helper.make_node("Relu", ["u1"], ["r"], name="relu"),
         helper.make_node("ConvTranspose", ["r", "w3"], ["y"], name="up2", **up2)]
    # ConvTranspose's weights are [C, K / group, kH, kW]: He's scale over what one output sums
    inits = [layer_weights("w1", 8, 3, 3, 3), weights("b1", 8),
             weights("w2", 8, 6, 4, 4, scale=float(np.sqrt(2.0 / (8 * 4)))), weights("b2", 6),
             weights("w3", 6, 2, k2, k2, scale=float(np.sqrt(2.0 / (3 * 3))))]
    return model(n, [vi("x", F32, ["N", 3, 6, 6])], [vi("y", F32, ["N", 4, out, out])], inits, opset)


def tile():
    """Tile at run time (a feature map repeated 2 x 3 over H and W, between two
    convolutions, opset 13) and at load (a constant row tiled into a bias)."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    n = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[1, 1]),
         helper.make_node("Tile", ["c1", "reps"], ["t"], name="tile"),
         helper.make_node("Tile", ["row", "row_reps"], ["bias"], name="tile_bias"),
         helper.make_node("Add", ["t", "bias"], ["tb"], name="add_bias"),
         helper.make_node("Conv", ["tb", "w2", "b2"], ["y"], name="conv2", kernel_shape=[3, 3])]
    inits = [layer_weights("w1", 4, 3, 1, 1), weights("b1", 4), layer_weights("w2", 2, 4, 3, 3), weights("b2", 2),
             i64("reps", [1, 1, 2, 3]), weights("row", 1, 1, 1, 5), i64("row_reps", [1, 4, 10, 3])]
    m = model(n, [vi("x", F32, ["N", 3, 5, 5])], [vi("y", F32, ["N", 2, 8, 13])], inits, 13)
    return m, [(op, nm) for op, nm in kept(m) if nm != "tile_bias"]


def shape_logic():
    """A reshape's target computed the long way, as exporters of symbolic shapes write it:
    Shape -> Equal / Greater / Less / Not / And / Or -> Where -> Slice -> Concat, all
    folding at load (bool values exist only there), feeding Reshape -> Gemm."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    n = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[1, 1]),
        helper.make_node("Shape", ["c"], ["s"], name="shape"),
        helper.make_node("Equal", ["s", "zeros"], ["is0"], name="eq"),
        helper.make_node("Not", ["is0"], ["not0"], name="not"),
        helper.make_node("Greater", ["s", "zeros"], ["pos"], name="gt"),
        helper.make_node("And", ["not0", "pos"], ["keep"], name="and"),
        helper.make_node("Less", ["s", "zeros"], ["neg"], name="lt"),
        helper.make_node("Or", ["keep", "neg"], ["use"], name="or"),
        helper.make_node("Where", ["use", "s", "ones"], ["dims"], name="where"),
        helper.make_node("Slice", ["dims", "s0", "s1"], ["batch"], name="batch"),
        helper.make_node("Concat", ["batch", "minus1"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["c", "newshape"], ["flat"], name="reshape"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="fc", transB=1),
    ]
    inits = [layer_weights("w", 4, 3, 1, 1), weights("b", 4), i64("zeros", [0, 0, 0, 0]), i64("ones", [1, 1, 1, 1]),
             i64("s0", [0]), i64("s1", [1]), i64("minus1", [-1]), layer_weights("fc_w", 7, 64), weights("fc_b", 7)]
    m = model(n, [vi("x", F32, [2, 3, 4, 4])], [vi("y", F32, [2, 7])], inits, 13)
    return m, [("Conv", "conv"), ("Reshape", "reshape"), ("Gemm", "fc")]


def flatten_chain():
    """torch.flatten as the exporter writes it: the batch read back with Shape ->
    Gather -> Unsqueeze, joined to a constant -1, fed to Reshape; all fixed, so the
    whole shape computation folds and only Relu, Reshape and Gemm remain."""
    n = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Shape", ["r"], ["shape"], name="shape"),
        helper.make_node("Constant", [], ["zero"], name="const_zero",
                         value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="gather", axis=0),
        helper.make_node("Constant", [], ["axes0"], name="const_axes",
                         value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"], name="unsqueeze"),
        helper.make_node("Constant", [], ["minus1"], name="const_minus1",  # in int64_data, not raw_data
                         value=helper.make_tensor("minus1_value", TensorProto.INT64, [1], [-1])),
        helper.make_node("Concat", ["batch1", "minus1"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["r", "newshape"], ["flat"], name="reshape"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="fc", transB=1),
    ]
    inits = [layer_weights("fc_w", 10, 64), weights("fc_b", 10)]
    m = model(n, [vi("x", F32, [2, 4, 4, 4])], [vi("y", F32, [2, 10])], inits, 13)
    return m, [("Relu", "relu"), ("Reshape", "reshape"), ("Gemm", "fc")]


def dynamo_linear():
    """torch.export's nn.Linear: the weight transposed by a node (folded at load: a
    constant), MatMul, Add; opset 18. onnx 1.12's checker does not know opset 18, so the
    model is not checked here."""
    n = [
        helper.make_node("Transpose", ["weight"], ["weight_t"], name="t", perm=[1, 0]),
        helper.make_node("MatMul", ["x", "weight_t"], ["mm"], name="mm"),
        helper.make_node("Add", ["mm", "bias"], ["y"], name="add"),
    ]
    inits = [layer_weights("weight", 16, 32), weights("bias", 16)]
    return model(n, [vi("x", F32, [4, 32])], [vi("y", F32, [4, 16])], inits, 18, check=False, ir_version=8)


def external_cnn(outdir, rel):
    n = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    inits = [layer_weights("w", 8, 3, 3, 3), weights("b", 8)]
    m = model(n, [vi("x", F32, [1, 3, 16, 16])], [vi("y", F32, [1, 8, 16, 16])], inits, 13)
    save(m, outdir, rel, save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin",
         size_threshold=0)
    return onnx.load(os.path.join(outdir, rel), load_external_data=False)


def coverage():
    """The element-wise, pooling and layout operators not in the CNN: HardSigmoid,
    HardSwish, Sigmoid, Sub / Mul / Div broadcasting a per-channel weight,
    AveragePool with count_include_pad and ceil_mode, Transpose, Concat, Identity,
    Cast (float to float: kept, its input not constant). Opset 14 for HardSwish.
    Sigmoid leaves inputs of [-1, 1) within 0.5..0.66 here: the per-channel mean
    subtracted is near its middle and the scale large (8 to 24 either sign), so that
    the output spreads over tenths to units rather than hundredths (within f16's
    tolerance of anything). Not larger: the subtraction cancels, so the scale
    multiplies the f16 rounding of Sigmoid's output (up to 2.4e-4) into the result."""
    n = [
        helper.make_node("HardSigmoid", ["x"], ["hs"], name="hsig", alpha=0.5, beta=0.5),
        helper.make_node("HardSwish", ["hs"], ["hw"], name="hswish"),
        helper.make_node("Sigmoid", ["hw"], ["sg"], name="sigmoid"),
        helper.make_node("Sub", ["sg", "mean"], ["sub"], name="sub"),
        helper.make_node("Mul", ["sub", "scale"], ["mul"], name="mul"),
        helper.make_node("Div", ["mul", "std"], ["div"], name="div"),
        helper.make_node("AveragePool", ["div"], ["ap"], name="avgpool", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], count_include_pad=1, ceil_mode=1),
        helper.make_node("Transpose", ["ap"], ["tr"], name="transpose", perm=[0, 1, 3, 2]),
        helper.make_node("Concat", ["tr", "ap"], ["cat"], name="concat", axis=1),
        helper.make_node("Identity", ["cat"], ["id"], name="identity"),
        helper.make_node("Cast", ["id"], ["y"], name="cast", to=F32),
    ]
    scale = rng.choice([-1.0, 1.0], (1, 4, 1, 1)) * rng.uniform(8, 24, (1, 4, 1, 1))
    inits = [typed_weights("mean", F32, 1, 4, 1, 1, mean=0.575, std=0.02),
             numpy_helper.from_array(scale.astype(np.float32), "scale"),
             numpy_helper.from_array((1 + rng.random((1, 4, 1, 1))).astype(np.float32), "std")]
    # 8 + 2 - 3 = 7 over stride 2 is 3.5: ceil_mode makes 4 + 1 = 5
    return model(n, [vi("x", F32, [1, 4, 8, 8])], [vi("y", F32, [1, 8, 5, 5])], inits, 14)


def elementwise():
    """The element-wise operators of opsets 13 to 20 (Gelu came in 20), over inputs of
    [-1, 1): Abs, Sqrt of it shifted by a per-channel weight (Sum broadcasting it), Log,
    Exp, Reciprocal, Pow of a positive base, Tanh, Erf, Softplus, Neg, Sin, Cos, Floor
    and Ceil of half the input (in [-0.5, 0.5) its sign decides them, which f16 keeps:
    of the input itself, f16 rounds values above 1 - 2^-12 to 1 and Floor jumps), Gelu in both
    forms, and Max, Min, Mean and Sum of 2 to 5 inputs, some broadcast [1, 4, 1, 1].
    Every intermediate stays within a few units: f16's tolerance holds throughout."""
    h = helper.make_node
    n = [
        h("Abs", ["x"], ["abs"], name="abs"),
        h("Sum", ["abs", "shift"], ["sh"], name="sum2"),
        h("Sqrt", ["sh"], ["sqrt"], name="sqrt"),
        h("Log", ["sqrt"], ["log"], name="log"),
        h("Exp", ["x"], ["exp"], name="exp"),
        h("Reciprocal", ["exp"], ["rec"], name="reciprocal"),
        h("Pow", ["sqrt", "x"], ["pow"], name="pow"),
        h("Tanh", ["x"], ["tanh"], name="tanh"),
        h("Erf", ["x"], ["erf"], name="erf"),
        h("Softplus", ["x"], ["sp"], name="softplus"),
        h("Neg", ["sp"], ["neg"], name="neg"),
        h("Max", ["tanh", "erf", "neg"], ["max"], name="max3"),
        h("Sin", ["x"], ["sin"], name="sin"),
        h("Cos", ["x"], ["cos"], name="cos"),
        h("Min", ["sin", "cos", "cap"], ["min"], name="min3"),
        h("Mul", ["x", "half"], ["xh"], name="halve"),
        h("Floor", ["xh"], ["floor"], name="floor"),
        h("Ceil", ["xh"], ["ceil"], name="ceil"),
        h("Mean", ["log", "rec", "pow", "floor", "ceil"], ["mean"], name="mean5"),
        h("Gelu", ["x"], ["gelu"], name="gelu"),
        h("Gelu", ["x"], ["gelu_t"], name="gelu_tanh", approximate="tanh"),
        h("Sum", ["max", "min", "mean", "gelu", "gelu_t"], ["y"], name="sum5"),
    ]
    inits = [numpy_helper.from_array(rng.uniform(0.25, 1, (1, 4, 1, 1)).astype(np.float32), "shift"),
             numpy_helper.from_array(rng.uniform(-0.5, 0.5, (1, 4, 1, 1)).astype(np.float32), "cap"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    # onnx 1.12's checker knows no opset 20: the shapes are plain, written by hand
    return model(n, [vi("x", F32, ["N", 4, 8, 8])], [vi("y", F32, ["N", 4, 8, 8])], inits, 20, check=False)


def attention():
    """A vision transformer's block in miniature (opset 13): a patch convolution, then
    tokens through Reshape / Transpose, multi-head attention as exporters write it
    (MatMul of [N, heads, T, D] by K transposed to [N, heads, D, T], Div, Softmax over
    the last axis, MatMul by V, heads merged back), the output projection and the
    residual; a second output multiplies the attention by a [heads, T, D] constant
    (leading dimensions broadcast in part)."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    c, t, h, d = 16, 16, 2, 8
    n = [helper.make_node("Conv", ["x", "pw", "pb"], ["p"], name="patch", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Reshape", ["p", "tok_shape"], ["p3"], name="tokens"),
         helper.make_node("Transpose", ["p3"], ["tk"], name="tokens_t", perm=[0, 2, 1])]
    for nm in ("q", "k", "v"):
        n += [helper.make_node("MatMul", ["tk", nm + "_w"], [nm + "0"], name=nm + "_proj"),
              helper.make_node("Add", [nm + "0", nm + "_b"], [nm + "1"], name=nm + "_bias"),
              helper.make_node("Reshape", [nm + "1", "head_shape"], [nm + "2"], name=nm + "_heads")]
    n += [helper.make_node("Transpose", ["q2"], ["qh"], name="q_t", perm=[0, 2, 1, 3]),
          helper.make_node("Transpose", ["k2"], ["kt"], name="k_t", perm=[0, 2, 3, 1]),
          helper.make_node("Transpose", ["v2"], ["vh"], name="v_t", perm=[0, 2, 1, 3]),
          helper.make_node("MatMul", ["qh", "kt"], ["s0"], name="scores"),
          helper.make_node("Div", ["s0", "scale"], ["s1"], name="scale"),
          helper.make_node("Add", ["s1", "rel_bias"], ["s2"], name="rel_bias"),
          helper.make_node("Softmax", ["s2"], ["a"], name="softmax", axis=-1),
          helper.make_node("MatMul", ["a", "vh"], ["o0"], name="attend"),
          helper.make_node("Transpose", ["o0"], ["o1"], name="merge_t", perm=[0, 2, 1, 3]),
          helper.make_node("Reshape", ["o1", "tok3"], ["o2"], name="merge"),
          helper.make_node("MatMul", ["o2", "o_w"], ["o3"], name="out_proj"),
          helper.make_node("Add", ["o3", "tk"], ["y"], name="residual"),
          helper.make_node("MatMul", ["a", "per_head"], ["y2"], name="per_head")]
    inits = [layer_weights("pw", c, 3, 2, 2), weights("pb", c), i64("tok_shape", [0, c, -1]),
             i64("head_shape", [0, t, h, d]), i64("tok3", [0, t, c]),
             numpy_helper.from_array(np.array(np.sqrt(d), np.float32), "scale"),
             weights("rel_bias", 1, h, t, t), layer_weights("o_w", c, c), weights("per_head", h, t, d, scale=0.5)]
    for nm in ("q", "k", "v"):
        inits += [layer_weights(nm + "_w", c, c), weights(nm + "_b", c)]
    m = model(n, [vi("x", F32, ["N", 3, 8, 8])], [vi("y", F32, ["N", t, c]), vi("y2", F32, ["N", h, t, d])], inits, 13)
    return m


def classifier_head(opset):
    """A classifier's head over a small convolution: the spatial mean (ReduceMean over H
    and W, keepdims 0: the dynamo exporter's global pool), Gemm to 10 logits, LogSoftmax,
    ArgMax of the logits and TopK 3 of the log-probabilities (int64 indices as graph
    outputs), and ReduceMax over the channels of the feature map (keepdims 1: a 4-D
    output, NHWC inside an NHWC engine), ReduceSum and ReduceL2 of its rows. Opset 13:
    the axes are attributes (ReduceSum's an input); opset 18: all inputs. The logits'
    bias spreads the classes 3 apart while the pooled features move them by well under
    1, so that the class order (ArgMax, TopK's indices) is the same in f16 as in f32."""
    h = helper.make_node
    axes = opset >= 18

    def reduce(op, x, y, ax, **kw):
        if axes or (op == "ReduceSum" and opset >= 13):
            return h(op, [x, "axes_" + y], [y], name=y, **kw), numpy_helper.from_array(np.array(ax, np.int64), "axes_" + y)
        return h(op, [x], [y], name=y, axes=ax, **kw), None

    n, inits = [], [layer_weights("w", 8, 3, 3, 3), weights("b", 8)]
    n.append(h("Conv", ["x", "w", "b"], ["conv"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    n.append(h("Relu", ["conv"], ["feat"], name="relu"))
    for op, x, y, ax, kw in (("ReduceMean", "feat", "pooled", [2, 3], {"keepdims": 0}),
                             ("ReduceMax", "feat", "chmax", [1], {}),
                             ("ReduceSum", "chmax", "rowsum", [-1], {"keepdims": 0}),
                             ("ReduceL2", "feat", "l2", [0, 2], {"keepdims": 0})):
        node, init = reduce(op, x, y, ax, **kw)
        n.append(node)
        if init is not None:
            inits.append(init)
    n.append(h("Gemm", ["pooled", "fc_w", "fc_b"], ["logits"], name="fc", transB=1))
    n.append(h("LogSoftmax", ["logits"], ["logp"], name="logsoftmax", axis=1))
    n.append(h("ArgMax", ["logits"], ["cls"], name="argmax", axis=1, keepdims=0))
    n.append(h("TopK", ["logp", "k"], ["top_v", "top_i"], name="topk", axis=-1))
    inits += [numpy_helper.from_array((rng.standard_normal((10, 8)) * 0.1).astype(np.float32), "fc_w"),
              numpy_helper.from_array((rng.permutation(10) * 3.0).astype(np.float32), "fc_b"),
              numpy_helper.from_array(np.array([3], np.int64), "k")]
    outs = [vi("logp", F32, ["N", 10]), vi("cls", I64, ["N"]), vi("top_v", F32, ["N", 3]),
            vi("top_i", I64, ["N", 3]), vi("chmax", F32, ["N", 1, 8, 8]), vi("rowsum", F32, ["N", 1, 8]),
            vi("l2", F32, [8, 8])]
    # onnx 1.12's checker knows no opset 18: the shapes are written by hand
    return model(n, [vi("x", F32, ["N", 3, 8, 8])], outs, inits, opset, check=opset < 18)


def convnext(opset):
    """A ConvNeXt block as torch.onnx exports it, then an InstanceNormalization: a
    strided stem Conv to 16 channels, the block's 7x7 depthwise Conv, Transpose to
    channels-last, LayerNormalization over the channels (epsilon 1e-6), MatMul + Add to
    64, GELU spelled with Erf (x * 0.5 * (1 + erf(x / sqrt 2))), MatMul + Add back to 16,
    the layer scale (Mul), Transpose back and the residual Add; InstanceNormalization of
    the sum. In an NHWC engine the convolutions' values, the residual sum and the
    InstanceNorm are NHWC (its planes read C apart), the channels-last values between
    the Transposes row major."""
    h = helper.make_node
    n = [
        h("Conv", ["x", "stem_w", "stem_b"], ["stem"], name="stem", kernel_shape=[2, 2], strides=[2, 2]),
        h("Conv", ["stem", "dw_w", "dw_b"], ["dw"], name="dwconv", kernel_shape=[7, 7], pads=[3, 3, 3, 3], group=16),
        h("Transpose", ["dw"], ["nhwc"], name="to_nhwc", perm=[0, 2, 3, 1]),
        h("LayerNormalization", ["nhwc", "ln_s", "ln_b"], ["ln"], name="norm", axis=-1, epsilon=1e-6),
        h("MatMul", ["ln", "fc1_w"], ["fc1"], name="pwconv1"),
        h("Add", ["fc1", "fc1_b"], ["fc1b"], name="pwconv1_bias"),
        h("Div", ["fc1b", "sqrt2"], ["gd"], name="gelu_div"),
        h("Erf", ["gd"], ["ge"], name="gelu_erf"),
        h("Add", ["ge", "one"], ["g1"], name="gelu_add"),
        h("Mul", ["fc1b", "g1"], ["gm"], name="gelu_mul"),
        h("Mul", ["gm", "half"], ["gelu"], name="gelu_half"),
        h("MatMul", ["gelu", "fc2_w"], ["fc2"], name="pwconv2"),
        h("Add", ["fc2", "fc2_b"], ["fc2b"], name="pwconv2_bias"),
        h("Mul", ["fc2b", "gamma"], ["scaled"], name="layer_scale"),
        h("Transpose", ["scaled"], ["nchw"], name="to_nchw", perm=[0, 3, 1, 2]),
        h("Add", ["stem", "nchw"], ["block"], name="residual"),
        h("InstanceNormalization", ["block", "in_s", "in_b"], ["y"], name="inorm", epsilon=1e-5),
    ]
    f = np.float32
    inits = [
        layer_weights("stem_w", 16, 3, 2, 2), weights("stem_b", 16),
        layer_weights("dw_w", 16, 1, 7, 7), weights("dw_b", 16),
        numpy_helper.from_array((1 + 0.2 * rng.standard_normal(16)).astype(f), "ln_s"), weights("ln_b", 16),
        numpy_helper.from_array((rng.standard_normal((16, 64)) * np.sqrt(2 / 16)).astype(f), "fc1_w"),
        weights("fc1_b", 64),
        numpy_helper.from_array(np.array(np.sqrt(2), f), "sqrt2"), numpy_helper.from_array(np.array(1, f), "one"),
        numpy_helper.from_array(np.array(0.5, f), "half"),
        numpy_helper.from_array((rng.standard_normal((64, 16)) * np.sqrt(2 / 64)).astype(f), "fc2_w"),
        weights("fc2_b", 16),
        numpy_helper.from_array((0.5 + 0.5 * rng.random(16)).astype(f), "gamma"),
        numpy_helper.from_array((1 + 0.2 * rng.standard_normal(16)).astype(f), "in_s"), weights("in_b", 16),
    ]
    return model(n, [vi("x", F32, ["N", 3, 16, 16])], [vi("y", F32, ["N", 16, 8, 8])], inits, opset)


def groupnorm(opset):
    """A diffusion UNet's normalizations: Conv -> GroupNormalization (4 groups of 4
    channels) -> SiLU (x * Sigmoid(x)) -> Conv -> Reshape to [N, C, H*W] ->
    GroupNormalization of that 3-D tensor (2 groups) -> LayerNormalization over its last
    two axes, with a Scale and no B. Opsets 18 to 20 give GroupNormalization one scale and
    bias per group, 21 one per channel (with stash_type). onnx 1.12's checker knows
    neither: the shapes are written by hand."""
    h = helper.make_node
    per = opset >= 21
    n = [
        h("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        h("GroupNormalization", ["c1", "gn1_s", "gn1_b"], ["gn1"], name="gn1", num_groups=4, epsilon=1e-5),
        h("Sigmoid", ["gn1"], ["sg"], name="sigmoid"),
        h("Mul", ["gn1", "sg"], ["silu"], name="silu"),
        h("Conv", ["silu", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        h("Reshape", ["c2", "flat_shape"], ["c2f"], name="flatten_hw"),
        h("GroupNormalization", ["c2f", "gn2_s", "gn2_b"], ["gn2"], name="gn2", num_groups=2, epsilon=1e-3),
        h("LayerNormalization", ["gn2", "ln_s"], ["y"], name="ln", axis=-2),
    ]
    f = np.float32
    g1, g2 = (16, 8) if per else (4, 2)
    inits = [
        layer_weights("w1", 16, 3, 3, 3), weights("b1", 16),
        numpy_helper.from_array((1 + 0.3 * rng.standard_normal(g1)).astype(f), "gn1_s"), weights("gn1_b", g1, scale=0.5),
        layer_weights("w2", 8, 16, 3, 3), weights("b2", 8),
        numpy_helper.from_array(np.array([0, 8, 64], np.int64), "flat_shape"),
        numpy_helper.from_array((1 + 0.3 * rng.standard_normal(g2)).astype(f), "gn2_s"), weights("gn2_b", g2, scale=0.5),
        numpy_helper.from_array((1 + 0.3 * rng.standard_normal((8, 64))).astype(f), "ln_s"),
    ]
    if per:
        n[1].attribute.append(helper.make_attribute("stash_type", 1))
    return model(n, [vi("x", F32, ["N", 3, 8, 8])], [vi("y", F32, ["N", 8, 64])], inits, opset, check=False)


def half_conv():
    n = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    inits = [layer_weights("w", 8, 3, 3, 3, dtype=np.float16), typed_weights("b", F16, 8)]
    return model(n, [vi("x", F16, ["N", 3, 8, 8])], [vi("y", F16, ["N", 8, 8, 8])], inits, 13)


# ---- bad models --------------------------------------------------------------

def small(nodes, inits=(), x=("x", F32, [1, 3, 8, 8]), y=("y", F32, None), opset=13, check=False):
    return model(nodes, [vi(*x)], [vi(*y)], list(inits), opset, check=check)


def relu_model(opset):
    return small([helper.make_node("Relu", ["x"], ["y"], name="relu")], opset=opset)


def conv_node(name, w="w", x="x", **attrs):
    return helper.make_node("Conv", [x, w], ["y"], name=name, **attrs)


def external_tensor(name, shape, location, offset, length):
    t = TensorProto()
    t.name = name
    t.data_type = F32
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def bad_external(outdir, rel, location, offset=0, length=8 * 3 * 3 * 3 * 4):
    m = small([conv_node("conv_ext", kernel_shape=[3, 3])], [external_tensor("w_ext", [8, 3, 3, 3], location, offset,
                                                                                length)])
    m.graph.node[0].input[1] = "w_ext"
    save(m, outdir, rel)


def write_bad_norms(outdir):
    """Normalizations the loader refuses: what ONNX forbids (INVALID_ARG) and what gaio
    does not give (NOT_SUPPORTED), each naming the node. x is [1, 3, 8, 8]."""
    def ones(name, *shape):
        return numpy_helper.from_array(np.ones(shape, np.float32), name)

    def ln(*outs, **kw):
        return helper.make_node("LayerNormalization", ["x", "s"], ["y", *outs], name="ln", **kw)

    def gn(**kw):
        return helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", **kw)

    def inorm():
        return helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], name="inorm")

    cases = [
        ("bad_layernorm_axis.onnx", [ln(axis=4)], [ones("s", 8)], 17, "INVALID_ARG", "axis 4 is out of range"),
        ("bad_layernorm_scale.onnx", [ln(axis=-2)], [ones("s", 3, 8)], 17, "INVALID_ARG", "does not broadcast"),
        ("bad_layernorm_opset16.onnx", [ln()], [ones("s", 8)], 16, "INVALID_ARG", "came in opset 17"),
        ("bad_layernorm_stash.onnx", [ln("mean", stash_type=16)], [ones("s", 8)], 17, "NOT_SUPPORTED",
         "stash_type 16"),
        ("bad_groupnorm_no_groups.onnx", [gn()], [ones("s", 1), ones("b", 1)], 18, "INVALID_ARG",
         "'num_groups' is required"),
        ("bad_groupnorm_divide.onnx", [gn(num_groups=2)], [ones("s", 2), ones("b", 2)], 18, "INVALID_ARG",
         "does not divide"),
        # 18 takes a scale per group, 21 per channel: each refuses the other's
        ("bad_groupnorm18_scale.onnx", [gn(num_groups=1)], [ones("s", 3), ones("b", 3)], 18, "INVALID_ARG",
         "one per group"),
        ("bad_groupnorm21_scale.onnx", [gn(num_groups=1)], [ones("s", 1), ones("b", 1)], 21, "INVALID_ARG",
         "one per channel"),
        ("bad_instancenorm_scale.onnx", [inorm()], [ones("s", 4), ones("b", 3)], 13, "INVALID_ARG", "must have shape [3]"),
    ]
    for rel, nodes, inits, opset, status, fragment in cases:
        save(small(nodes, inits, opset=opset), outdir, rel)
        bad(rel, status, fragment)


def write_bad(outdir, good_path):
    NS, IA = "NOT_SUPPORTED", "INVALID_ARG"

    m = small([helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="my_lstm", hidden_size=4)],
              [weights("w", 1, 16, 8), weights("r", 1, 16, 4)], x=("x", F32, [5, 1, 8]))
    save(m, outdir, "bad_op.onnx")
    bad("bad_op.onnx", NS, "my_lstm", "LSTM")

    m = small([conv_node("conv3d", kernel_shape=[3, 3, 3])], [weights("w", 4, 3, 3, 3, 3)],
              x=("x", F32, [1, 3, 8, 8, 8]))
    save(m, outdir, "bad_conv3d.onnx")
    bad("bad_conv3d.onnx", NS, "conv3d")

    # ConvTranspose's weights are [C, K / group, kH, kW]: Conv's order is wrong for it
    m = small([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up_conv_order")],
              [weights("w", 4, 3, 3, 3)])
    save(m, outdir, "bad_convtranspose_weights.onnx")
    bad("bad_convtranspose_weights.onnx", IA, "up_conv_order", "has 3 channels")
    m = small([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up_1d", strides=[2])],
              [weights("w", 3, 2, 3)], x=("x", F32, [1, 3, 8]))
    save(m, outdir, "bad_convtranspose_1d.onnx")
    bad("bad_convtranspose_1d.onnx", NS, "up_1d", "1-D transposed convolutions")

    # ONNX knows four auto_pad values; another is malformed, not merely unsupported
    m = small([conv_node("conv_pad", auto_pad="SAME_MIDDLE")], [weights("w", 4, 3, 3, 3)])
    save(m, outdir, "bad_auto_pad.onnx")
    bad("bad_auto_pad.onnx", IA, "conv_pad", "auto_pad|SAME_MIDDLE")

    m = small([helper.make_node("Relu", ["b"], ["a"], name="node_a"),
               helper.make_node("Add", ["x", "a"], ["b"], name="node_b"),
               helper.make_node("Relu", ["b"], ["y"], name="node_out")])
    save(m, outdir, "bad_cycle.onnx")
    bad("bad_cycle.onnx", IA, "cycle")

    m = small([helper.make_node("Add", ["x", "nowhere"], ["y"], name="reads_nothing")])
    save(m, outdir, "bad_missing_input.onnx")
    bad("bad_missing_input.onnx", IA, "nowhere")

    # Opsets 7-12's forms where they do not belong, and what inference cannot run.
    m = small([helper.make_node("Clip", ["x"], ["y"], name="clip_attr", min=0.0, max=6.0)], opset=13)
    save(m, outdir, "bad_clip_attr_opset13.onnx")
    bad("bad_clip_attr_opset13.onnx", IA, "clip_attr", "belongs to opsets 6 to 10")
    m = small([helper.make_node("Unsqueeze", ["x"], ["y"], name="unsq_no_axes")], opset=11)
    save(m, outdir, "bad_unsqueeze_no_axes.onnx")
    bad("bad_unsqueeze_no_axes.onnx", IA, "unsq_no_axes", "'axes' is required")
    m = model([helper.make_node("Dropout", ["x"], ["y", "mask"], name="drop_mask", ratio=0.5)],
              [vi("x", F32, [1, 3, 8, 8])], [vi("y", F32, None), vi("mask", TensorProto.BOOL, None)], [], 10,
              check=False)
    save(m, outdir, "bad_dropout_mask.onnx")
    bad("bad_dropout_mask.onnx", NS, "drop_mask", "mask")
    m = small([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn_elem", spatial=0)],
              [weights("s", 3), weights("b", 3), weights("m", 3), weights("v", 3)], opset=7)
    save(m, outdir, "bad_bn_spatial0.onnx")
    bad("bad_bn_spatial0.onnx", NS, "bn_elem", "spatial 0")

    # Reductions: an axis past the rank, one given twice, TopK's K past its axis, the axes
    # attribute after it became an input, ArgMax of a 0-D input.
    m = small([helper.make_node("ReduceMax", ["x"], ["y"], name="rmax_axis", axes=[4])])
    save(m, outdir, "bad_reduce_axis.onnx")
    bad("bad_reduce_axis.onnx", IA, "rmax_axis", "axis 4 is out of range for rank 4")
    m = small([helper.make_node("ReduceL2", ["x"], ["y"], name="rl2_twice", axes=[1, -3])])
    save(m, outdir, "bad_reduce_axis_twice.onnx")
    bad("bad_reduce_axis_twice.onnx", IA, "rl2_twice", "given twice")
    m = small([helper.make_node("ReduceSum", ["x"], ["y"], name="rsum_attr", axes=[1])], opset=13)
    save(m, outdir, "bad_reduce_sum_axes_attr.onnx")
    bad("bad_reduce_sum_axes_attr.onnx", IA, "rsum_attr", "belongs to opsets 1 to 12")
    m = model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk_big", axis=1)],
              [vi("x", F32, [1, 3, 8, 8])], [vi("v", F32, None), vi("i", I64, None)],
              [numpy_helper.from_array(np.array([4], np.int64), "k")], 13, check=False)
    save(m, outdir, "bad_topk_k.onnx")
    bad("bad_topk_k.onnx", IA, "topk_big", "K is 4 but axis 1 has 3")
    m = small([helper.make_node("ArgMax", ["x"], ["y"], name="argmax_scalar")], x=("x", F32, []),
              y=("y", I64, None))
    save(m, outdir, "bad_argmax_scalar.onnx")
    bad("bad_argmax_scalar.onnx", IA, "argmax_scalar", "is a scalar")

    save(relu_model(6), outdir, "bad_opset6.onnx")
    bad("bad_opset6.onnx", NS, "opset")
    save(relu_model(23), outdir, "bad_opset23.onnx")
    bad("bad_opset23.onnx", NS, "opset")

    def bad_init(rel, t):
        m = small([conv_node("conv_w", w=t.name, kernel_shape=[3, 3])], [t])
        save(m, outdir, rel)
        bad(rel, IA, t.name)

    t = helper.make_tensor("w_negative", F32, [8, 3, 3, 3], np.zeros(216, np.float32).tobytes(), raw=True)
    t.dims[1] = -3
    bad_init("bad_negative_dims.onnx", t)

    t = TensorProto(name="w_huge", data_type=F32, dims=[1 << 40, 1 << 40], raw_data=b"\0" * 16)
    bad_init("bad_huge_dims.onnx", t)

    t = helper.make_tensor("w_short", F32, [8, 3, 3, 3], np.zeros(216, np.float32).tobytes(), raw=True)
    t.raw_data = t.raw_data[: len(t.raw_data) // 2]
    bad_init("bad_short_raw.onnx", t)

    # a file where "../x" points, so that only the escape can be the reason
    with open(os.path.join(outdir, "x"), "wb") as f:
        f.write(b"\0" * 4096)
    bad_external(outdir, "bad_ext_escape/model.onnx", "../x")
    bad("bad_ext_escape/model.onnx", IA, "w_ext|../x", "memory=" + IA)
    bad_external(outdir, "bad_ext_absolute/model.onnx", os.path.abspath(os.path.join(outdir, "x")))
    bad("bad_ext_absolute/model.onnx", IA, "w_ext|/x", "memory=" + IA)
    bad_external(outdir, "bad_ext_missing/model.onnx", "absent.bin")
    bad("bad_ext_missing/model.onnx", IA + "|SYSTEM", "w_ext|absent.bin", "memory=" + IA)
    bad_external(outdir, "bad_ext_range/model.onnx", "weights.bin", offset=64)
    with open(os.path.join(outdir, "bad_ext_range/weights.bin"), "wb") as f:
        f.write(b"\0" * 256)  # 64 + 864 bytes wanted
    bad("bad_ext_range/model.onnx", IA, "w_ext|weights.bin", "memory=" + IA)

    data = open(good_path, "rb").read()
    with open(os.path.join(outdir, "bad_truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    bad("bad_truncated.onnx", IA, "gaio_model_load")
    with open(os.path.join(outdir, "bad_random.onnx"), "wb") as f:
        f.write(rng.integers(0, 256, 1000, dtype=np.uint8).tobytes())
    bad("bad_random.onnx", IA, "gaio_model_load")
    open(os.path.join(outdir, "bad_empty.onnx"), "wb").close()
    bad("bad_empty.onnx", IA, "gaio_model_load")

    m = small([conv_node("conv_i8", x="int8_input", kernel_shape=[3, 3])], [weights("w", 4, 3, 3, 3)],
              x=("int8_input", TensorProto.INT8, [1, 3, 8, 8]))
    save(m, outdir, "bad_int8_input.onnx")
    bad("bad_int8_input.onnx", NS, "int8_input|conv_i8")

    m = small([helper.make_node("Relu", ["x"], ["dup_value"], name="first"),
               helper.make_node("Sigmoid", ["x"], ["dup_value"], name="second"),
               helper.make_node("Relu", ["dup_value"], ["y"], name="last")])
    save(m, outdir, "bad_duplicate_output.onnx")
    bad("bad_duplicate_output.onnx", IA, "dup_value")

    m = small([conv_node("conv_mismatch", kernel_shape=[3, 3])], [weights("w", 4, 5, 3, 3)])
    save(m, outdir, "bad_channels.onnx")
    bad("bad_channels.onnx", IA, "conv_mismatch")


def main():
    global rng
    args = sys.argv[1:]
    seed = None
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1], 0)
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit("usage: make_models.py OUTDIR [--seed N]")
    if seed is None:
        env = os.environ.get("GAIO_TEST_SEED")
        seed = int(env, 0) if env else int(time.time() * 1000) & 0xFFFFFFFF
    seed &= 0xFFFFFFFF
    print("make_models.py: onnx %s, seed %d (--seed or GAIO_TEST_SEED to replay)" % (onnx.__version__, seed))
    rng = np.random.default_rng(seed)
    outdir = args[0]
    # Fresh each time: good() keeps a file that is there (one its caller wrote), so a
    # model left by an earlier run, of another shape or seed, would stand in for this one.
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir, exist_ok=True)

    m = cnn(13, "N")
    good(outdir, "cnn_opset13.onnx", m, kept(m), canary="c1_w,c1_b")
    m = cnn(17, 2)
    # as torch.onnx's keep_initializers_as_inputs=True writes it: every weight also
    # listed as a graph input, which is not an input to feed
    m.graph.input.extend(helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in m.graph.initializer)
    onnx.checker.check_model(m)
    good(outdir, "cnn_opset17.onnx", m, kept(m), canary="c1_w,c1_b")
    # Old opsets: opset 7 as written, and onnx's version converter's 9, 11 and 12 of it
    # (BatchNormalization loses spatial at 9, Clip takes its bounds as inputs at 11).
    m7 = cnn_old("N")
    good(outdir, "cnn_opset7.onnx", m7, kept(m7), canary="c1_w,c1_b")
    for v in (9, 11, 12):
        m = version_converter.convert_version(m7, v)
        onnx.checker.check_model(m)
        # the converter's Constant nodes (Clip's bounds, Dropout's ratio) fold at load
        good(outdir, "cnn_opset%d.onnx" % v, m, [nd for nd in kept(m) if nd[0] != "Constant"], inits_min=True,
             canary="c1_w,c1_b")
    for v in (10, 13):
        m = pad_cnn(v)
        good(outdir, "pad_cnn_opset%d.onnx" % v, m, kept(m), canary="w,b")
    m, nodes = index_cnn()
    good(outdir, "index_cnn.onnx", m, nodes, inits_min=True, canary="c2_w,c2_b")
    m = wrap_pad()
    good(outdir, "wrap_pad_opset19.onnx", m, kept(m), canary="w,b")
    m = small([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_wrap13", mode="wrap")],
              [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")], opset=13)
    save(m, outdir, "bad_pad_wrap_opset13.onnx")
    m = small([helper.make_node("Gather", ["x", "idx"], ["y"], name="gather_oob", axis=1)],
              [numpy_helper.from_array(np.array([0, 3], np.int64), "idx")])
    save(m, outdir, "bad_gather_index.onnx")
    bad("bad_gather_index.onnx", "INVALID_ARG", "gather_oob", "range")
    bad("bad_pad_wrap_opset13.onnx", "INVALID_ARG", "pad_wrap13", "'wrap'", "19")
    scales = lambda v: numpy_helper.from_array(np.array(v, np.float32), "scales")
    for rel, opset, sc, attrs, frags in (
            ("bad_resize_antialias.onnx", 18, [1, 1, 1, 0.05], dict(mode="cubic", antialias=1),
             ("resize_node", "antialias at the width scale 0.05 takes 80 taps")),
            ("bad_resize_channels.onnx", 13, [1, 2, 2, 2], dict(mode="linear"),
             ("resize_node", "resizing axis 1 (the channel) is not supported"))):
        m = small([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize_node", **attrs)], [scales(sc)],
                  x=("x", F32, [1, 3, 8, 64]), opset=opset)
        save(m, outdir, rel)
        bad(rel, "NOT_SUPPORTED", *frags)
    for v in (11, 13):
        m = c2f(v)
        good(outdir, "c2f_opset%d.onnx" % v, m, kept(m), canary="c1_w,c1_b")
    for kind in ("resize11", "resize13", "upsample9", "upsample7"):
        m = upsample(kind)
        good(outdir, "%s.onnx" % kind, m, kept(m), canary="w1,b1")
    for v in (13, 19):
        m = seg_head(v)
        good(outdir, "seg_head_opset%d.onnx" % v, m, kept(m), canary="w1,b1")
    for v in (11, 13):
        m = decoder(v)
        good(outdir, "decoder_opset%d.onnx" % v, m, kept(m), canary="w1,b1")
    m, nodes = shape_logic()
    good(outdir, "shape_logic.onnx", m, nodes, inits_min=True, canary="w,b")
    m, nodes = tile()
    good(outdir, "tile.onnx", m, nodes, inits_min=True, canary="w1,b1")
    m, nodes = anchors()
    good(outdir, "anchors.onnx", m, nodes, inits_min=True, canary="w,b")
    m, nodes = slice_cnn()
    # conv2 is the canary: channels 0, 2, 4, 6 of conv1 are sliced away, a zeroed one unseen
    good(outdir, "slice_cnn.onnx", m, nodes, inits_min=True, canary="c2_w,c2_b")
    m, nodes = flatten_chain()
    good(outdir, "flatten_chain.onnx", m, nodes, inits_min=True)
    m = dynamo_linear()
    good(outdir, "linear_opset18.onnx", m, [k for k in kept(m) if k[0] != "Transpose"], inits_min=True)
    m = external_cnn(outdir, "external/model.onnx")
    good(outdir, "external/model.onnx", m, kept(m), memory="INVALID_ARG", canary="w,b")
    m = coverage()
    good(outdir, "coverage.onnx", m, kept(m))
    m = half_conv()
    good(outdir, "half_conv.onnx", m, kept(m), canary="w,b")
    m = elementwise()
    good(outdir, "elementwise_opset20.onnx", m, kept(m))
    m = attention()
    good(outdir, "attention.onnx", m, kept(m), canary="pw,pb")
    for v in (13, 18):
        m = classifier_head(v)
        good(outdir, "classifier_head_opset%d.onnx" % v, m, kept(m), canary="w,b")
    m = convnext(17)
    good(outdir, "convnext_opset17.onnx", m, kept(m), canary="stem_w,stem_b")
    for v in (18, 21):
        m = groupnorm(v)
        good(outdir, "groupnorm_opset%d.onnx" % v, m, kept(m), canary="w1,b1")

    write_bad_norms(outdir)
    write_bad(outdir, os.path.join(outdir, "cnn_opset13.onnx"))

    with open(os.path.join(outdir, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    print("make_models.py: %d good, %d bad models in %s" % (
        sum(r.startswith("good ") for r in manifest), sum(r.startswith("bad ") for r in manifest), outdir))


if __name__ == "__main__":
    main()
