#!/usr/bin/env python3
"""Whole models on the host backend: gaio against onnxruntime (CPU EP) on the same
cores, f32, one table.

  PYTHONPATH=python GAIO_LIBRARY=build/src/libgaio.so.0 python3 bench/host_model_bench.py

Models: bench/host_models.py's ResNet-18, ResNet-50, MobileNetV2 and EfficientNet-B0
(torchvision's topology as exported in eval mode, random weights), batch 1 and 8. Each
is timed the same way in this process: warm-up, `--iters` calls each waited for, ms
per call, median of `--reps`:

* gaio: Model(bytes).exec("cpu", batch, precision="model") run on a host stream
  (oneDNN's threads: OMP_NUM_THREADS, default all cores);
* onnxruntime: InferenceSession with ORT_ENABLE_ALL and intra_op_num_threads =
  the same core count, run() on numpy arrays;
* the floor: the model's FLOPs at the rate of one large f32 GEMM (numpy's BLAS, the
  same threads) measured in this run, the compute a perfect implementation needs.

Outputs are compared (max abs difference relative to the largest logit) so that a
fast wrong run cannot pass. The issue's target is gaio <= 1.0x onnxruntime.
Exit status 0 when everything ran, 1 on a gaio failure or mismatch, 2 when numpy,
onnx or onnxruntime is missing."""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def die(msg, code=2):
    print("host_model_bench.py: " + msg, file=sys.stderr)
    sys.exit(code)


def timed(call, iters, reps, warmup):
    for _ in range(warmup):
        call()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        runs.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(runs)


def gemm_rate(np, threads):
    """GFLOP/s of a 2048^3 f32 matmul (the BLAS numpy links, its threads as OMP/OPENBLAS say)."""
    a = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
    b = a.T.copy()
    a @ b
    t = timed(lambda: a @ b, 3, 3, 1)
    return 2 * 2048 ** 3 / (t * 1e-3) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--only", help="comma-separated models (resnet18,resnet50,mobilenet_v2,efficientnet_b0)")
    ap.add_argument("--layout", choices=["auto", "nchw", "nhwc"], default="auto")
    args = ap.parse_args()
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        die(f"needs numpy and onnxruntime ({e})")
    sys.path.insert(0, HERE)
    try:
        import host_models
    except ImportError as e:
        die(f"needs onnx ({e})")
    import gaio

    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count())
    rate = gemm_rate(np, threads)
    print(f"host: {os.cpu_count()} cores, {threads} threads; f32 GEMM {rate:.1f} GFLOP/s (the floor's rate); "
          f"onnxruntime {ort.__version__}")
    names = args.only.split(",") if args.only else list(host_models.NAMES)
    batches = [int(b) for b in args.batches.split(",")]
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    rows, failed = [], False
    for name in names:
        m, flops = host_models.build(name)
        data = m.SerializeToString()
        model = gaio.Model(data)
        sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
        for batch in batches:
            x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
            ex = model.exec("cpu", batch=batch, precision="model", layout=args.layout)
            s = gaio.Stream("cpu")
            xt = gaio.tensor(x, device="cpu", stream=s)
            ys = ex.empty_outputs(s)

            def run_gaio():
                ex.run(s, [xt], ys).result(timeout=600)

            t_gaio = timed(run_gaio, args.iters, args.reps, args.warmup)
            ref = sess.run(None, {"input": x})[0]
            t_ort = timed(lambda: sess.run(None, {"input": x}), args.iters, args.reps, args.warmup)
            got = ys[0].numpy()
            err = float(np.abs(got - ref).max() / max(float(np.abs(ref).max()), 1e-30))
            if not err <= 1e-4:
                print(f"{name} b{batch}: gaio differs from onnxruntime: {err:.3g} of the largest logit", file=sys.stderr)
                failed = True
            floor = flops * batch / (rate * 1e9) * 1e3
            rows.append((name, batch, t_gaio, t_ort, floor, err))
            print(f"{name} b{batch}: gaio {t_gaio:.2f} ms, onnxruntime {t_ort:.2f} ms", flush=True)
    print("\n| model | batch | gaio ms | onnxruntime ms | floor ms | gaio / onnxruntime | gaio / floor | "
          "onnxruntime / floor | target <= 1.0 | rel. difference |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, batch, tg, to, fl, err in rows:
        print(f"| {name} | {batch} | {tg:.2f} | {to:.2f} | {fl:.2f} | {tg / to:.2f} | {tg / fl:.2f} | {to / fl:.2f} | "
              f"{'met' if tg <= to else 'missed'} | {err:.1g} |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
