#!/usr/bin/env python3
"""ResNet-50's convolutions: gaio_conv2d against its peer, layer by layer and summed.

  GPU:  python3 bench/conv_resnet50.py --gaio build/bench/gaio_bench_conv --device gpu
        fp16 NHWC, batch 32, against PyTorch's cuDNN-backed F.conv2d (channels_last),
        with each layer's floor (its FLOPs at the measured dense fp16 matmul rate, or
        its bytes at the measured device-to-device copy bandwidth, whichever is larger).
  CPU:  python3 bench/conv_resnet50.py --gaio build/bench/gaio_bench_conv --device cpu
        fp32, batch 1, against onnxruntime (CPU EP) running a one-node Conv model per
        layer (NCHW, what onnxruntime takes); gaio runs NHWC and NCHW.

gaio's figures come from gaio_bench_conv --json, run first as a subprocess (so the two
never share the GPU); the peer runs in this process afterwards, timed the same way:
warm-up, `iters` back-to-back calls, one synchronization, ms per call, median of 5.
The sums weight each unique shape by how often ResNet-50 has it.

Fused means y = relu(conv(x, w) + bias + residual) on every layer (a residual of the
output's shape), whether or not ResNet adds one after it, so every layer has a figure:
gaio does it in one call; PyTorch as a user writes it,
torch.relu_(F.conv2d(x, w, b, s, p).add_(res)); onnxruntime as Conv -> Add -> Relu,
which its graph optimizer may fuse.

Exit status: 0 when every layer ran (targets missed are reported, not an error); 1
when a layer failed in gaio or the peer; 2 when a needed Python package or the GPU is
missing (named on stderr).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPS = 5

# The targets.
GPU_SUM_RATIO = 1.05  # unfused sum of gaio <= 1.05 x PyTorch's
GPU_LAYER_RATIO = 1.10  # no unfused layer slower than PyTorch by more than 10%
GPU_FUSED_SUM_RATIO = 0.80  # fused sum of gaio <= 0.8 x PyTorch's conv + add + relu
CPU_SUM_RATIO = 1.20  # host: gaio's sum within 1.2 x onnxruntime's


def die(msg, code=2):
    print("conv_resnet50.py: " + msg, file=sys.stderr)
    sys.exit(code)


def run_gaio(exe, args):
    """gaio_bench_conv --json: (meta, [layer dicts]); a layer that failed has 'error'."""
    cmd = [exe] + args + ["--json"]
    print("running: " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    except OSError as e:
        die("cannot run %s: %s (build it: cmake --build build --target gaio_bench_conv)" % (exe, e))
    meta, layers = {}, []
    for line in p.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if d.get("meta"):
            meta = d
        else:
            layers.append(d)
    if not layers:
        die("%s gave no layer (exit status %d; its stderr is above)" % (exe, p.returncode), 1)
    if p.returncode != 0 and not any("error" in d for d in layers):
        die("%s exited with status %d" % (exe, p.returncode), 1)
    return meta, layers


def out_hw(d):
    return d["P"], d["Q"]


def conv_flops(d):
    p, q = out_hw(d)
    return 2.0 * d["N"] * d["K"] * d["C"] / d["groups"] * d["R"] * d["S"] * p * q


def conv_bytes(d, esize, fused):
    p, q = out_hw(d)
    x = d["N"] * d["C"] * d["H"] * d["W"]
    w = d["K"] * d["C"] // d["groups"] * d["R"] * d["S"]
    y = d["N"] * d["K"] * p * q
    n = x + w + y
    if fused:
        n += y + d["K"]  # residual, bias
    return n * esize


def fmt(v, spec="%.4f"):
    return "-" if v is None else spec % v


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def print_table(headers, rows):
    cells = [r for r in rows if r is not None]  # None: a separator line
    widths = [max([len(str(h))] + [len(str(r[i])) for r in cells]) for i, h in enumerate(headers)]
    line = " | ".join(("%-*s" if i == 0 else "%*s") % (widths[i], h) for i, h in enumerate(headers))
    print(line)
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        if r is None:
            print("-+-".join("-" * w for w in widths))
            continue
        print(" | ".join(("%-*s" if i == 0 else "%*s") % (widths[i], c) for i, c in enumerate(r)))


def verdict(ok):
    return "met" if ok else "MISSED"


def time_loop(fn, sync, iters, warm):
    for _ in range(warm):
        fn()
    sync()
    v = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        v.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(v)


def weighted_sum(layers, key):
    """Sum of count x layer[key]; None when any layer lacks the figure."""
    total = 0.0
    for d in layers:
        if d.get(key) is None:
            return None
        total += d["count"] * d[key]
    return total


# ---- GPU ------------------------------------------------------------------------------


def gpu_floors(torch):
    """(dense fp16 FLOP/s of a large matmul, device-to-device copy bytes/s read+written), best of several."""
    dev = "cuda"
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.float16)
    b = torch.randn(n, n, device=dev, dtype=torch.float16)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    best = 0.0
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(10):
            torch.matmul(a, b)
        torch.cuda.synchronize()
        best = max(best, 10 * 2.0 * n**3 / (time.perf_counter() - t0))
    del a, b
    size = 1 << 30
    src = torch.empty(size, device=dev, dtype=torch.uint8)
    dst = torch.empty_like(src)
    src.fill_(1)
    dst.copy_(src)
    torch.cuda.synchronize()
    bw = 0.0
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(5):
            dst.copy_(src)
        torch.cuda.synchronize()
        bw = max(bw, 5 * 2.0 * size / (time.perf_counter() - t0))
    del src, dst
    torch.cuda.empty_cache()
    return best, bw


def torch_layer(torch, F, d, iters):
    """(unfused ms, fused ms) of PyTorch on layer d, fp16 channels_last."""
    dev, dt, cl = "cuda", torch.float16, torch.channels_last
    n, c, k, r, h = d["N"], d["C"], d["K"], d["R"], d["H"]
    s, p = d["stride"], d["pad"]
    po, qo = out_hw(d)
    x = torch.empty(n, c, h, h, device=dev, dtype=dt).uniform_(-1, 1).to(memory_format=cl)
    scale = 1.0 / (c * r * r)
    w = torch.empty(k, c, r, r, device=dev, dtype=dt).uniform_(-scale, scale).to(memory_format=cl)
    b = torch.empty(k, device=dev, dtype=dt).uniform_(-0.1, 0.1)
    res = torch.empty(n, k, po, qo, device=dev, dtype=dt).uniform_(-1, 1).to(memory_format=cl)
    warm = max(3, iters // 4)
    sync = torch.cuda.synchronize
    with torch.inference_mode():
        plain = time_loop(lambda: F.conv2d(x, w, None, s, p), sync, iters, warm)
        fused = time_loop(lambda: torch.relu_(F.conv2d(x, w, b, s, p).add_(res)), sync, iters, warm)
    return plain, fused


def run_gpu(args):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        die("--device gpu needs PyTorch: import torch failed: %s" % e)
    if not torch.cuda.is_available():
        die("PyTorch sees no CUDA device (torch %s)" % torch.__version__)
    meta, layers = run_gaio(
        args.gaio, ["--gpu", "--batch", str(args.batch), "--dtype", "f16", "--iters", str(args.iters)] + args.extra
    )
    torch.backends.cudnn.benchmark = True
    print()
    print("device: %s (gaio: %s)" % (torch.cuda.get_device_name(0), meta.get("device_name", "?")))
    print("torch %s, cuDNN %s; gaio's cuDNN: %s" % (torch.__version__, torch.backends.cudnn.version(),
                                                   meta.get("library", "?")))
    rate, bw = gpu_floors(torch)
    print("floors: dense fp16 matmul %.1f TFLOP/s (8192^3, best of %d); device copy %.0f GB/s (1 GiB, read + write)"
          % (rate / 1e12, REPS, bw / 1e9))
    print("fp16 NHWC, batch %d, %d back-to-back calls per run, median of %d runs; ms per call\n"
          % (args.batch, args.iters, REPS))
    failed = False
    for d in layers:
        if "error" in d:
            failed = True
            print("gaio failed on %s: %s" % (d["layer"], d["error"]))
            continue
        try:
            d["torch_ms"], d["torch_fused_ms"] = torch_layer(torch, F, d, args.iters)
        except Exception as e:  # noqa: BLE001 - reported, and the exit status says so
            failed = True
            d["torch_error"] = str(e)
            print("PyTorch failed on %s: %s" % (d["layer"], e))
        d["floor_ms"] = 1e3 * max(conv_flops(d) / rate, conv_bytes(d, 2, False) / bw)
        d["fused_floor_ms"] = 1e3 * max(conv_flops(d) / rate, conv_bytes(d, 2, True) / bw)
    rows = []
    for d in layers:
        g, t, fl = d.get("gaio_ms"), d.get("torch_ms"), d.get("floor_ms")
        gf, tf = d.get("gaio_fused_ms"), d.get("torch_fused_ms")
        rows.append([d["layer"], d["count"], "%d" % d["residual"], fmt(g), fmt(t), fmt(ratio(g, t), "%.3f"),
                     fmt(fl), fmt(ratio(fl, g), "%.2f"), fmt(gf), fmt(tf), fmt(ratio(gf, tf), "%.3f"),
                     fmt(ratio(d.get("fused_floor_ms"), gf), "%.2f")])
    sums = {k: weighted_sum(layers, k) for k in
            ("gaio_ms", "torch_ms", "floor_ms", "gaio_fused_ms", "torch_fused_ms", "fused_floor_ms")}
    rows.append(None)
    rows.append(["sum x count", sum(d["count"] for d in layers), "%d" % sum(d["residual"] for d in layers),
                 fmt(sums["gaio_ms"]), fmt(sums["torch_ms"]), fmt(ratio(sums["gaio_ms"], sums["torch_ms"]), "%.3f"),
                 fmt(sums["floor_ms"]), fmt(ratio(sums["floor_ms"], sums["gaio_ms"]), "%.2f"),
                 fmt(sums["gaio_fused_ms"]), fmt(sums["torch_fused_ms"]),
                 fmt(ratio(sums["gaio_fused_ms"], sums["torch_fused_ms"]), "%.3f"),
                 fmt(ratio(sums["fused_floor_ms"], sums["gaio_fused_ms"]), "%.2f")])
    print_table(["layer", "count", "res", "gaio ms", "torch ms", "gaio/torch", "floor ms", "floor/gaio",
                 "gaio fused", "torch c+a+r", "fused ratio", "floor/fused"], rows)
    print("(res: how many of the count a residual add follows in ResNet-50; the fused columns run "
          "conv + bias + residual + ReLU on every layer)")

    print("\ngaio's plans (gaio_conv2d_info.engine; fused: bias, residual and ReLU inside the convolution's kernels)")
    print_table(["layer", "engine (unfused)", "engine (fused)", "fused", "workspace"],
                [[d["layer"], d.get("engine", "-"), d.get("fused_engine", "-"),
                  "error" if "error" in d else ("yes" if d.get("fused") else "NO"),
                  "%d / %d" % (d.get("workspace", 0), d.get("fused_workspace", 0))] for d in layers])

    print("\ntargets:")
    s_ratio = ratio(sums["gaio_ms"], sums["torch_ms"])
    ok1 = s_ratio is not None and s_ratio <= GPU_SUM_RATIO
    print("  unfused sum within %.2fx of PyTorch's: %s (%s)" % (GPU_SUM_RATIO, verdict(ok1), fmt(s_ratio, "%.3fx")))
    slow = [(d["layer"], ratio(d.get("gaio_ms"), d.get("torch_ms"))) for d in layers]
    bad = [(n, r) for n, r in slow if r is None or r > GPU_LAYER_RATIO]
    print("  no layer slower than PyTorch by more than %d%%: %s%s" % (
        round((GPU_LAYER_RATIO - 1) * 100), verdict(not bad),
        "" if not bad else " (" + ", ".join("%s %s" % (n, fmt(r, "%.3fx")) for n, r in bad) + ")"))
    f_ratio = ratio(sums["gaio_fused_ms"], sums["torch_fused_ms"])
    ok3 = f_ratio is not None and f_ratio <= GPU_FUSED_SUM_RATIO
    print("  fused sum <= %.2fx of PyTorch's conv + add + relu: %s (%s)" % (GPU_FUSED_SUM_RATIO, verdict(ok3),
                                                                          fmt(f_ratio, "%.3fx")))
    return 1 if failed else 0


# ---- CPU ------------------------------------------------------------------------------


def host_floors(np):
    """(fp32 FLOP/s of a numpy matmul, copy bytes/s read+written), best of several: a rough host floor."""
    n = 2048
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    a @ b
    rate = 0.0
    for _ in range(REPS):
        t0 = time.perf_counter()
        a @ b
        rate = max(rate, 2.0 * n**3 / (time.perf_counter() - t0))
    src = np.ones(1 << 28, dtype=np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    bw = 0.0
    for _ in range(REPS):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        bw = max(bw, 2.0 * src.nbytes / (time.perf_counter() - t0))
    return rate, bw


def ort_models(onnx, helper, TensorProto, numpy_helper, np, d):
    """(plain model, fused model, feeds, fused feeds): Conv with bias, and Conv -> Add -> Relu."""
    n, c, k, r, h = d["N"], d["C"], d["K"], d["R"], d["H"]
    po, qo = out_hw(d)
    rng = np.random.default_rng(0)
    scale = 1.0 / (c * r * r)
    w = rng.uniform(-scale, scale, (k, c, r, r)).astype(np.float32)
    b = rng.uniform(-0.1, 0.1, (k,)).astype(np.float32)
    x = rng.uniform(-1, 1, (n, c, h, h)).astype(np.float32)
    res = rng.uniform(-1, 1, (n, k, po, qo)).astype(np.float32)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[r, r],
                            strides=[d["stride"]] * 2, pads=[d["pad"]] * 4)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    xin = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, h])
    yout = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, k, po, qo])
    plain = helper.make_model(helper.make_graph([conv], "conv", [xin], [yout], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    conv_f = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[r, r], strides=[d["stride"]] * 2,
                              pads=[d["pad"]] * 4)
    add = helper.make_node("Add", ["c", "res"], ["s"])
    relu = helper.make_node("Relu", ["s"], ["y"])
    rin = helper.make_tensor_value_info("res", TensorProto.FLOAT, [n, k, po, qo])
    fused = helper.make_model(helper.make_graph([conv_f, add, relu], "conv_add_relu", [xin, rin], [yout], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    for m in (plain, fused):
        m.ir_version = min(m.ir_version, 8)  # loadable by older onnxruntime releases too
        onnx.checker.check_model(m)
    return plain, fused, {"x": x}, {"x": x, "res": res}


def run_cpu(args):
    missing = []
    try:
        import numpy as np
    except ImportError as e:
        missing.append("numpy (%s)" % e)
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        missing.append("onnx (%s)" % e)
    try:
        import onnxruntime as ort
    except ImportError as e:
        missing.append("onnxruntime (%s)" % e)
    if missing:
        die("--device cpu needs: " + "; ".join(missing) + " (pip install onnxruntime onnx numpy)")
    common = ["--host", "--batch", str(args.batch), "--dtype", "f32", "--iters", str(args.iters)] + args.extra
    meta, nhwc = run_gaio(args.gaio, common + ["--layout", "nhwc"])
    _, nchw = run_gaio(args.gaio, common + ["--layout", "nchw"])
    by_name = {d["layer"]: d for d in nchw}
    threads = os.cpu_count() or 1
    print()
    print("host: %s, %d CPUs (gaio: %s)" % (platform_name(), threads, meta.get("device_name", "?")))
    print("gaio's convolutions: %s; onnxruntime %s (CPUExecutionProvider, intra_op_num_threads %d, "
          "ORT_ENABLE_ALL)" % (meta.get("library", "?"), ort.__version__, threads))
    print("fp32, batch %d; gaio runs NHWC and NCHW, onnxruntime NCHW (the layout it takes); "
          "%d back-to-back calls per run, median of %d runs; ms per call" % (args.batch, args.iters, REPS))
    rate, bw = host_floors(np)
    print("floors (rough): numpy fp32 matmul %.1f GFLOP/s (2048^3), copy %.1f GB/s (256 MiB, read + write)\n"
          % (rate / 1e9, bw / 1e9))
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    failed = False
    for d in nhwc:
        d2 = by_name.get(d["layer"], {})
        d["nchw_ms"], d["nchw_fused_ms"] = d2.get("gaio_ms"), d2.get("gaio_fused_ms")
        for e in (d.get("error"), d2.get("error")):
            if e:
                failed = True
                print("gaio failed on %s: %s" % (d["layer"], e))
        try:
            plain, fused, feeds, ffeeds = ort_models(onnx, helper, TensorProto, numpy_helper, np, d)
            sp = ort.InferenceSession(plain.SerializeToString(), so, providers=["CPUExecutionProvider"])
            sf = ort.InferenceSession(fused.SerializeToString(), so, providers=["CPUExecutionProvider"])
            warm = max(3, args.iters // 4)
            d["ort_ms"] = time_loop(lambda: sp.run(None, feeds), lambda: None, args.iters, warm)
            d["ort_fused_ms"] = time_loop(lambda: sf.run(None, ffeeds), lambda: None, args.iters, warm)
        except Exception as e:  # noqa: BLE001 - reported, and the exit status says so
            failed = True
            print("onnxruntime failed on %s: %s" % (d["layer"], e))
        d["floor_ms"] = 1e3 * max(conv_flops(d) / rate, conv_bytes(d, 4, False) / bw)
    rows = []
    for d in nhwc:
        g, gn, o = d.get("gaio_ms"), d.get("nchw_ms"), d.get("ort_ms")
        gf, of = d.get("gaio_fused_ms"), d.get("ort_fused_ms")
        rows.append([d["layer"], d["count"], fmt(g), fmt(gn), fmt(o), fmt(ratio(g, o), "%.3f"),
                     fmt(ratio(gn, o), "%.3f"), fmt(d.get("floor_ms")), fmt(ratio(d.get("floor_ms"), g), "%.2f"),
                     fmt(gf), fmt(of), fmt(ratio(gf, of), "%.3f")])
    keys = ("gaio_ms", "nchw_ms", "ort_ms", "floor_ms", "gaio_fused_ms", "ort_fused_ms")
    sums = {k: weighted_sum(nhwc, k) for k in keys}
    rows.append(None)
    rows.append(["sum x count", sum(d["count"] for d in nhwc), fmt(sums["gaio_ms"]), fmt(sums["nchw_ms"]),
                 fmt(sums["ort_ms"]), fmt(ratio(sums["gaio_ms"], sums["ort_ms"]), "%.3f"),
                 fmt(ratio(sums["nchw_ms"], sums["ort_ms"]), "%.3f"), fmt(sums["floor_ms"]),
                 fmt(ratio(sums["floor_ms"], sums["gaio_ms"]), "%.2f"), fmt(sums["gaio_fused_ms"]),
                 fmt(sums["ort_fused_ms"]), fmt(ratio(sums["gaio_fused_ms"], sums["ort_fused_ms"]), "%.3f")])
    print_table(["layer", "count", "gaio nhwc", "gaio nchw", "ort ms", "nhwc/ort", "nchw/ort", "floor ms",
                 "floor/gaio", "gaio fused", "ort c+a+r", "fused ratio"], rows)
    print("(ort ms: Conv with bias; gaio nhwc / nchw: the convolution alone; fused: conv + bias + residual + ReLU, "
          "gaio NHWC in one call, onnxruntime Conv -> Add -> Relu)")
    engines = sorted({d.get("engine", "error") for d in nhwc})
    if len(engines) == 1:
        print("\ngaio's plans (NHWC), every layer: " + engines[0])
    else:
        print("\ngaio's plans (NHWC): " + "; ".join("%s: %s" % (d["layer"], d.get("engine", "error")) for d in nhwc))
    print("\ntargets:")
    for label, key in (("NHWC", "gaio_ms"), ("NCHW", "nchw_ms")):
        r = ratio(sums[key], sums["ort_ms"])
        print("  gaio %s sum within %.1fx of onnxruntime's: %s (%s)" % (label, CPU_SUM_RATIO,
                                                                     verdict(r is not None and r <= CPU_SUM_RATIO),
                                                                     fmt(r, "%.3fx")))
    return 1 if failed else 0


def platform_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gaio", default="build/bench/gaio_bench_conv", help="path of gaio_bench_conv")
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--batch", type=int, help="default: 32 on the GPU, 1 on the host")
    ap.add_argument("--iters", type=int, help="back-to-back calls per run; default: 100 on the GPU, 10 on the host")
    ap.add_argument("--layer", help="only layers whose name holds this text (passed to gaio_bench_conv)")
    ap.add_argument("--f16-accumulation", action="store_true",
                    help="let gaio's cuDNN plans accumulate in f16 as PyTorch's may (default: f32 sums only)")
    args = ap.parse_args()
    gpu = args.device == "gpu"
    if args.batch is None:
        args.batch = 32 if gpu else 1
    if args.iters is None:
        args.iters = 100 if gpu else 10
    args.extra = ["--layer", args.layer] if args.layer else []
    if args.f16_accumulation:
        args.extra.append("--f16-accumulation")
    sys.exit(run_gpu(args) if gpu else run_cpu(args))


if __name__ == "__main__":
    main()
