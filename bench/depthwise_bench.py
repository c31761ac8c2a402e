#!/usr/bin/env python3
"""Depthwise convolutions on the GPU, layer by layer: gaio's kernels against cuDNN's (through
PyTorch) and the bytes floor, one table.

  PYTHONPATH=python GAIO_LIBRARY=build/src/libgaio.so.0 python3 bench/depthwise_bench.py [--batch 32]

The layers: the depthwise shapes of MobileNetV2, MobileNetV3-Large, EfficientNet-B0 and
ConvNeXt-T (channels, input side, window, stride; padding window // 2), each a one-node model
(Conv with groups = channels, bias, then ReLU6) exported with torch.onnx and built by gaio
at f16 (NHWC). Each is timed three ways in this process, kernel time only (torch.profiler,
the mean over `--iters` calls, so that staging casts and launch gaps do not count):

* gaio: the engine's depthwise kernel (`gaio_dnn_conv_depthwise*`), bias and ReLU6 fused;
* cuDNN: the same layer in PyTorch, fp16 channels_last with cudnn.benchmark, its
  convolution kernels only (its bias and ReLU6 are not counted: the comparison favours it);
* the floor: x read and y written once at the device-to-device copy rate measured here.

GAIO_DNN_DEPTHWISE (tiled, generic, strips, pixels) picks gaio's other kernels, to compare.
Exit status: 0 when every layer ran, 1 when gaio failed, 2 when torch or the GPU is
missing (named on stderr)."""
import argparse
import os
import sys
import tempfile

# (channels, input height = width, window, stride)
LAYERS = [(32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1), (144, 56, 3, 2), (192, 28, 3, 1), (192, 28, 3, 2),
          (384, 14, 3, 1), (576, 14, 3, 1), (576, 14, 3, 2), (960, 7, 3, 1), (144, 56, 5, 2), (240, 28, 5, 1),
          (480, 14, 5, 1), (672, 14, 5, 1), (672, 14, 5, 2), (1152, 7, 5, 1), (16, 112, 3, 1), (64, 112, 3, 2),
          (72, 56, 5, 2), (120, 28, 5, 1), (96, 56, 7, 1), (192, 28, 7, 1), (384, 14, 7, 1), (768, 7, 7, 1)]
CUDNN_KERNELS = ["conv", "Conv", "xmma", "sm90", "sm80", "implicit", "depthwise", "dw"]


def die(msg, code=2):
    print("depthwise_bench.py: " + msg, file=sys.stderr)
    sys.exit(code)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--layers", help="comma-separated indices into the table of layers (default: all)")
    args = ap.parse_args()
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError as e:
        die(f"needs torch ({e})")
    if not torch.cuda.is_available():
        die("needs a CUDA GPU")
    import gaio

    layers = [LAYERS[int(i)] for i in args.layers.split(",")] if args.layers else LAYERS
    torch.backends.cudnn.benchmark = True

    a = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(20):
        b.copy_(a)
    e1.record()
    torch.cuda.synchronize()
    rate = 2 * a.numel() * 20 / (e0.elapsed_time(e1) * 1e-3)
    del a, b

    def kernel_us(fn, names):
        """Mean device time per call of the CUDA kernels whose names contain one of names."""
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.iters):
                fn()
            torch.cuda.synchronize()
        evs = [e for e in prof.events() if e.device_type.name == "CUDA" and any(n in e.name for n in names)]
        return sum(e.device_time for e in evs) / args.iters if evs else float("nan")

    ctx = gaio.default_context("cuda")
    tmp = tempfile.mkdtemp(prefix="gaio-dw-")
    print(f"batch {args.batch}, f16; copy rate {rate / 1e12:.2f} TB/s; GAIO_DNN_DEPTHWISE="
          f"{os.environ.get('GAIO_DNN_DEPTHWISE', '(default)')}")
    print("\n| C | H | window | stride | gaio us | cuDNN us | floor us | gaio / cuDNN | gaio / floor |")
    print("|---|---|---|---|---|---|---|---|---|")
    total, failed = [0.0, 0.0, 0.0], False
    for (c, h, k, s) in layers:
        net = torch.nn.Sequential(torch.nn.Conv2d(c, c, k, s, k // 2, groups=c), torch.nn.ReLU6()).eval()
        path = os.path.join(tmp, f"dw_{c}_{h}_{k}_{s}.onnx")
        torch.onnx.export(net, torch.randn(1, c, h, h), path, opset_version=17, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "b"}, "y": {0: "b"}}, dynamo=False)
        x = torch.randn(args.batch, c, h, h, device="cuda")
        try:
            engine = gaio.Model(path).build(ctx, batch=args.batch, precision="f16", cuda_graph=False)
            ex = engine.exec()
            st = gaio.Stream(ctx)
            y = torch.empty(ex.output_shapes[0], device="cuda")
            xt, yt = gaio.from_dlpack(x, stream=st), gaio.from_dlpack(y, stream=st)
            for _ in range(3):
                ex.run(st, [xt], [yt])
            st.synchronize()
            g = kernel_us(lambda: (ex.run(st, [xt], [yt]), st.synchronize()), ["depthwise"])
        except gaio.Error as e:
            print(f"C {c} H {h} k {k} s {s}: gaio failed: {e}", file=sys.stderr)
            failed, g = True, float("nan")
        net = net.cuda().half().to(memory_format=torch.channels_last)
        xh = x.half().to(memory_format=torch.channels_last)
        with torch.no_grad():
            for _ in range(3):
                net(xh)
            t = kernel_us(lambda: net[0](xh), CUDNN_KERNELS)
        p = (h + 2 * (k // 2) - k) // s + 1
        floor = (args.batch * c * h * h + args.batch * c * p * p) * 2 / rate * 1e6
        for i, v in enumerate((g, t, floor)):
            total[i] += v
        print(f"| {c} | {h} | {k}x{k} | {s} | {g:.1f} | {t:.1f} | {floor:.1f} | {g / t:.2f} | {g / floor:.2f} |",
              flush=True)
    g, t, floor = total
    print(f"| all | | | | {g:.1f} | {t:.1f} | {floor:.1f} | {g / t:.2f} | {g / floor:.2f} |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
