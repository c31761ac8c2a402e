#!/usr/bin/env python3
"""Per-step overhead of the host backend: bench/host_models.py's models with their image
made so small (default 32x32) that the arithmetic all but vanishes, gaio against
onnxruntime (CPU EP) on the same cores, f32, one table.

  PYTHONPATH=python GAIO_LIBRARY=build/src/libgaio.so.0 python3 bench/host_overhead.py [--hw 32]

At 224x224 a run of MobileNetV2 or EfficientNet-B0 is mostly the cost of getting from one
step to the next, not of the steps: this is that cost alone. Each side is timed the same
way in this process: warm-up, `--iters` calls each waited for, the best of `--reps`
means. The table says ms per run, the engine's steps, and gaio's time less
onnxruntime's per step: the overhead to remove. Outputs are compared (a fast wrong run
cannot pass). Exit status 0 when everything ran, 1 on a mismatch, 2 when numpy, onnx or
onnxruntime is missing."""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def die(msg, code=2):
    print("host_overhead.py: " + msg, file=sys.stderr)
    sys.exit(code)


def best_mean(call, iters, reps, warmup=20):
    for _ in range(warmup):
        call()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(iters):
            call()
        best = min(best, (time.perf_counter() - t) / iters * 1e3)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hw", type=int, default=32, help="the image's height and width")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", help="comma-separated models (default: all of host_models.py)")
    args = ap.parse_args()
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        die(f"needs numpy and onnxruntime ({e})")
    sys.path.insert(0, HERE)
    import host_models
    import gaio

    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count())
    names = args.only.split(",") if args.only else host_models.NAMES
    print(f"host: {os.cpu_count()} cores, {threads} threads; image {args.hw}x{args.hw}, batch 1; onnxruntime "
          f"{ort.__version__}\n")
    print("| model | steps | gaio ms | onnxruntime ms | gaio / onnxruntime | (gaio - onnxruntime) / step, us |")
    print("|---|---|---|---|---|---|")
    bad = False
    for name in names:
        m, _ = host_models.build(name)
        dims = m.graph.input[0].type.tensor_type.shape.dim  # height and width symbolic: any image size
        for d, sym in ((dims[2], "height"), (dims[3], "width")):
            d.Clear()
            d.dim_param = sym
        data = m.SerializeToString()
        engine = gaio.Model(data).build("cpu", shapes={"input": [1, 3, args.hw, args.hw]}, precision="model")
        ex, s = engine.exec(), gaio.Stream("cpu")
        xn = np.random.default_rng(1).random((1, 3, args.hw, args.hw), dtype=np.float32)
        x = gaio.tensor(xn, device="cpu", stream=s)
        ys = ex.empty_outputs(s)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
        ex.run(s, [x], ys).result()
        want = sess.run(None, {"input": xn})[0]
        err = float(np.max(np.abs(ys[0].numpy() - want)) / max(float(np.max(np.abs(want))), 1e-30))
        if err > 1e-4:
            print(f"{name}: gaio and onnxruntime differ by {err:.2g} of the largest output", file=sys.stderr)
            bad = True
        g = best_mean(lambda: ex.run(s, [x], ys).result(), args.iters, args.reps)
        o = best_mean(lambda: sess.run(None, {"input": xn}), args.iters, args.reps)
        n = len(engine.steps)
        print(f"| {name} | {n} | {g:.3f} | {o:.3f} | {g / o:.2f} | {(g - o) / n * 1e3:.1f} |", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
