#!/usr/bin/env python3
"""Fused attention on the GPU, shape by shape: gaio's kernel (`gaio_attention`, reached the
way models reach it) against PyTorch's scaled_dot_product_attention and the FLOPs floor.

  PYTHONPATH=python GAIO_LIBRARY=build/src/libgaio.so.0 python3 bench/attention_bench.py [--batch 32]

The shapes: the attentions of ViT-B/16 and ViT-B/32 (12 heads of 64, 197 and 50 tokens),
Swin-T's four stages (windows of 49 tokens, heads of 32, a relative position bias) and a
longer sequence. Each is an ONNX graph as torch.onnx writes attention (q and k^T scaled,
MatMul, [Add bias], Softmax, MatMul) built by gaio at f16, where the planner fuses it into
one step. Each is timed in this process, kernel time only (torch.profiler, the mean over
`--iters` calls):

* gaio: the `gaio_dnn_attention` kernel;
* PyTorch: F.scaled_dot_product_attention on f16 [batch, heads, tokens, dim] (its flash
  or memory-efficient kernel; with the bias, the kernel PyTorch picks for an additive mask);
* the floor: the two products' FLOPs (4 B H L Lk D) at the tensor cores' rate measured here
  on a large f16 matmul.

Exit status: 0 when every shape ran, 1 when gaio failed, 2 when torch or the GPU is
missing (named on stderr)."""
import argparse
import sys

# (name, batches (multiplied by --batch), heads, tokens, head size, bias)
SHAPES = [("ViT-B/16", 1, 12, 197, 64, False), ("ViT-B/32", 1, 12, 50, 64, False),
          ("Swin-T stage 1", 64, 3, 49, 32, True), ("Swin-T stage 2", 16, 6, 49, 32, True),
          ("Swin-T stage 3", 4, 12, 49, 32, True), ("Swin-T stage 4", 1, 24, 49, 32, True),
          ("1024 tokens", 1, 8, 1024, 64, False)]


def die(msg, code=2):
    print("attention_bench.py: " + msg, file=sys.stderr)
    sys.exit(code)


def attention_model(onnx, b, hds, t, d, bias):
    """torch.onnx's attention over q, k, v inputs [b, hds, t, d]; bias [hds, t, t] constant."""
    import numpy as np
    from onnx import numpy_helper
    h = onnx.helper
    f = onnx.TensorProto.FLOAT
    nodes = [h.make_node("Mul", ["q", "s"], ["qs"]), h.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             h.make_node("Mul", ["kt", "s"], ["kts"]), h.make_node("MatMul", ["qs", "kts"], ["sc"])]
    inits = [numpy_helper.from_array(np.asarray(float(d) ** -0.25, dtype=np.float32), "s")]
    if bias is not None:
        nodes.append(h.make_node("Add", ["sc", "bias"], ["sb"]))
        inits.append(numpy_helper.from_array(bias, "bias"))
    nodes += [h.make_node("Softmax", ["sb" if bias is not None else "sc"], ["p"], axis=-1),
              h.make_node("MatMul", ["p", "v"], ["y"])]
    shape = [b, hds, t, d]
    graph = h.make_graph(nodes, "attention", [h.make_tensor_value_info(n, f, shape) for n in "qkv"],
                         [h.make_tensor_value_info("y", f, shape)], initializer=inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def kernel_us(torch, profile, activities, fn, iters, match):
    """Mean device time per call of the kernels whose names contain one of `match`."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=activities) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    total, names = 0.0, set()
    for ev in prof.events():
        if ev.device_type.name == "CUDA" and any(m in ev.name for m in match):
            total += ev.device_time if hasattr(ev, "device_time") else ev.cuda_time
            names.add(ev.name[:60])
    return total / iters, names


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--shapes", help="comma-separated indices into the table of shapes (default: all)")
    ap.add_argument("--launch-only", action="store_true",
                    help="run gaio's kernel --iters times, time nothing (for a profiler such as ncu)")
    args = ap.parse_args()
    shapes = [SHAPES[int(i)] for i in args.shapes.split(",")] if args.shapes else SHAPES
    try:
        import numpy as np
        import onnx
        import torch
        import torch.nn.functional as F
        from torch.profiler import ProfilerActivity, profile
    except ImportError as e:
        die(f"needs torch, numpy and onnx ({e})")
    if not torch.cuda.is_available():
        die("needs a CUDA GPU")
    import gaio

    acts = [ProfilerActivity.CUDA]
    if args.launch_only:
        acts = None
    # the tensor cores' rate: a large f16 matmul
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.half)
    bm = torch.randn(8192, 8192, device="cuda", dtype=torch.half)
    mm_us, _ = (1.0, None) if acts is None else kernel_us(torch, profile, acts, lambda: a @ bm, 10, ["gemm", "Gemm", "sm90", "cutlass", "nvjet"])
    tflops = 2 * 8192 ** 3 / (mm_us * 1e-6) / 1e12
    print(f"tensor cores: {tflops:.0f} TFLOP/s (8192^3 f16 matmul, {mm_us:.0f} us)")
    print(f"{'shape':16s} {'B x H, L, D':>18s} {'gaio us':>9s} {'torch us':>9s} {'floor us':>9s} "
          f"{'gaio/torch':>10s} {'gaio/floor':>10s}")
    rng = np.random.default_rng(1)
    ctx = gaio.default_context("cuda")
    failed = False
    for name, bmul, hds, t, d, has_bias in shapes:
        b = bmul * args.batch
        bias = rng.standard_normal((hds, t, t)).astype(np.float32) if has_bias else None
        try:
            engine = gaio.Model(attention_model(onnx, b, hds, t, d, bias)).build(ctx, precision="f16", tune=False)
            ex = engine.exec()
            fused = any(st.ops.startswith("MatMul+") and st.ops.endswith("Softmax+MatMul") for st in engine.steps)
            s = gaio.Stream(ctx)
            q, k, v = (torch.randn(b, hds, t, d, device="cuda", dtype=torch.half) for _ in range(3))
            f32 = [x.float() for x in (q, k, v)]  # the model's inputs are f32; the engine casts them
            xs = [gaio.from_dlpack(x, stream=s) for x in f32]
            ys = ex.empty_outputs(s)

            def run_gaio():
                ex.run(s, xs, ys)
                s.synchronize()
            if acts is None:
                for _ in range(args.iters):
                    run_gaio()
                continue
            g_us, _ = kernel_us(torch, profile, acts, run_gaio, args.iters, ["gaio_dnn_attention"])
        except Exception as e:  # noqa: BLE001 - report and go on to the next shape
            print(f"{name:16s} gaio failed: {e}")
            failed = True
            continue
        tb = torch.from_numpy(bias).to("cuda", torch.half) if bias is not None else None
        t_us, _ = kernel_us(torch, profile, acts, lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=tb),
                            args.iters, ["flash", "fmha", "attention", "Attention", "cutlass", "softmax", "gemm"])
        floor = 4 * b * hds * t * t * d / (tflops * 1e12) * 1e6
        note = "" if fused else "  (not fused)"
        print(f"{name:16s} {f'{b}x{hds}, {t}, {d}':>18s} {g_us:9.1f} {t_us:9.1f} {floor:9.1f} "
              f"{g_us / t_us:10.2f} {g_us / floor:10.2f}{note}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
