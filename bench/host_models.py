"""torchvision's ResNet-18 / ResNet-50, MobileNetV2 and EfficientNet-B0 as the
TorchScript exporter writes them in eval mode (opset 17, batch norms folded into the
convolutions' biases, SiLU as Sigmoid * x, Dropout gone), built with onnx.helper and
seeded random weights: the host benchmark's models on machines without PyTorch.

    python3 bench/host_models.py OUTDIR [NAME ...]     writes OUTDIR/NAME.onnx

Weights are He-scaled so activations neither vanish nor explode through the depth;
values do not change the time of a dense f32 convolution."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NAMES = ("resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0")


class Graph:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n, self.flops = [], [], 0, 0

    def name(self, kind):
        self.n += 1
        return f"{kind}{self.n}"

    def conv(self, x, cin, cout, k, stride=1, groups=1, hw=None):
        """Conv with a bias (the folded batch norm); hw: the output's height and width, for the FLOP count."""
        w = self.name("w")
        fan_in = cin // groups * k * k
        self.inits.append(numpy_helper.from_array(
            (self.rng.standard_normal((cout, cin // groups, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32), w))
        b = self.name("b")
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(cout) * 0.01).astype(np.float32), b))
        y = self.name("conv")
        self.nodes.append(helper.make_node("Conv", [x, w, b], [y], name=y, kernel_shape=[k, k], strides=[stride] * 2,
                                           pads=[k // 2] * 4, group=groups))
        if hw:
            self.flops += 2 * hw * hw * cout * (cin // groups) * k * k
        return y

    def op(self, kind, ins, **attrs):
        y = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, ins, [y], name=y, **attrs))
        return y

    def relu6(self, x):
        lo, hi = self.name("lo"), self.name("hi")
        self.inits += [numpy_helper.from_array(np.array(0, np.float32), lo),
                       numpy_helper.from_array(np.array(6, np.float32), hi)]
        return self.op("Clip", [x, lo, hi])

    def silu(self, x):
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def head(self, x, cin):
        x = self.op("Flatten", [self.op("GlobalAveragePool", [x])], axis=1)
        w, b = self.name("fc_w"), self.name("fc_b")
        self.inits += [numpy_helper.from_array((self.rng.standard_normal((1000, cin)) * 0.01).astype(np.float32), w),
                       numpy_helper.from_array(np.zeros(1000, np.float32), b)]
        self.flops += 2 * cin * 1000
        return self.op("Gemm", [x, w, b], transB=1)

    def model(self, out, name):
        g = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                              ["batch", 3, 224, 224])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["batch", 1000])], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="gaio bench/host_models.py")
        m.ir_version = 8
        return m


def resnet(g, blocks, bottleneck):
    x = g.op("Relu", [g.conv("input", 3, 64, 7, 2, hw=112)])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin, hw = 64, 56
    for stage, n in enumerate(blocks):
        width = 64 << stage
        cout = width * 4 if bottleneck else width
        for i in range(n):
            s = 2 if stage and not i else 1
            hw_out = hw // s
            if bottleneck:
                y = g.op("Relu", [g.conv(x, cin, width, 1, hw=hw)])
                y = g.op("Relu", [g.conv(y, width, width, 3, s, hw=hw_out)])
                y = g.conv(y, width, cout, 1, hw=hw_out)
            else:
                y = g.op("Relu", [g.conv(x, cin, cout, 3, s, hw=hw_out)])
                y = g.conv(y, cout, cout, 3, hw=hw_out)
            short = g.conv(x, cin, cout, 1, s, hw=hw_out) if s != 1 or cin != cout else x
            x, cin, hw = g.op("Relu", [g.op("Add", [y, short])]), cout, hw_out
    return g.head(x, cin)


def mobilenet_v2(g):
    x, cin, hw = g.relu6(g.conv("input", 3, 32, 3, 2, hw=112)), 32, 112
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            stride = s if not i else 1
            hid, hw_out = cin * t, hw // stride
            y = g.relu6(g.conv(x, cin, hid, 1, hw=hw)) if t != 1 else x
            y = g.relu6(g.conv(y, hid, hid, 3, stride, groups=hid, hw=hw_out))
            y = g.conv(y, hid, c, 1, hw=hw_out)
            x = g.op("Add", [y, x]) if stride == 1 and cin == c else y
            cin, hw = c, hw_out
    return g.head(g.relu6(g.conv(x, cin, 1280, 1, hw=hw)), 1280)


def efficientnet_b0(g):
    x, cin, hw = g.silu(g.conv("input", 3, 32, 3, 2, hw=112)), 32, 112
    for t, k, s, c, n in ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
                          (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)):
        for i in range(n):
            stride = s if not i else 1
            hid, hw_out, sq = cin * t, hw // stride, max(1, cin // 4)
            y = g.silu(g.conv(x, cin, hid, 1, hw=hw)) if t != 1 else x
            y = g.silu(g.conv(y, hid, hid, k, stride, groups=hid, hw=hw_out))
            se = g.silu(g.conv(g.op("GlobalAveragePool", [y]), hid, sq, 1, hw=1))
            y = g.op("Mul", [y, g.op("Sigmoid", [g.conv(se, sq, hid, 1, hw=1)])])
            y = g.conv(y, hid, c, 1, hw=hw_out)
            x = g.op("Add", [y, x]) if stride == 1 and cin == c else y
            cin, hw = c, hw_out
    return g.head(g.silu(g.conv(x, cin, 1280, 1, hw=hw)), 1280)


def build(name, seed=1234):
    """(onnx.ModelProto, FLOPs of one image)."""
    g = Graph(seed)
    if name == "resnet18":
        out = resnet(g, (2, 2, 2, 2), False)
    elif name == "resnet50":
        out = resnet(g, (3, 4, 6, 3), True)
    elif name == "mobilenet_v2":
        out = mobilenet_v2(g)
    elif name == "efficientnet_b0":
        out = efficientnet_b0(g)
    else:
        raise ValueError(f"unknown model {name!r}: one of {', '.join(NAMES)}")
    m = g.model(out, name)
    onnx.checker.check_model(m)
    return m, g.flops


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    for n in sys.argv[2:] or NAMES:
        m, flops = build(n)
        onnx.save(m, os.path.join(sys.argv[1], n + ".onnx"))
        print(f"{n}: {len(m.graph.node)} nodes, {flops / 1e9:.2f} GFLOP per image")
