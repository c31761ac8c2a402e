#!/usr/bin/env python3
"""Whole models on the GPU: gaio against PyTorch eager and torch.compile, one table.

  PYTHONPATH=python GAIO_LIBRARY=build/src/libgaio.so python3 bench/model_bench.py

Per model and batch (ResNet-50 b32 and b1, MobileNetV2 b32, ResNet-18 b32; torchvision,
random weights, seeded): the model is exported once with torch.onnx.export
(TorchScript exporter, opset 17, symbolic batch; --exporter dynamo for the other) and
timed three ways in this process, each the same way: warm-up, `--iters` back-to-back
calls, one synchronization, ms per call, median of `--reps`:

* gaio: Model(path).exec(ctx, batch, precision="auto") (fp16 on a GPU), ex.run() on
  one gaio stream (the Python API a user calls, its per-call overhead included);
* PyTorch eager, fp16, channels_last, under inference_mode;
* torch.compile(mode="reduce-overhead") (CUDA graphs) of the same fp16 channels_last
  module; a failure to compile is reported in the table, not fatal.

Then concurrency: ResNet-50 batch 1, one exec per stream: images/s with 1 stream
against 4 streams (submitted from one Python thread, then from one thread per
stream: ctypes drops the GIL inside gaio_model_run). Target >= 1.5x.

The issue's targets (issue 13, section 7) and its peer figures measured on the H100
are printed beside the measured ones. Exit status: 0 when everything ran (targets
missed are reported, not an error); 1 when gaio failed on a model; 2 when torch,
torchvision or the GPU is missing (named on stderr).
"""
import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

# (model, batch) -> gaio target ms, and the issue's measured peers (compiled, eager)
TARGETS = {("resnet50", 32): 1.45, ("resnet50", 1): 0.45, ("mobilenet_v2", 32): 0.85, ("resnet18", 32): 0.57}
ISSUE_PEERS = {("resnet50", 32): (1.58, 3.85), ("resnet50", 1): (0.48, 4.6), ("mobilenet_v2", 32): (0.91, None),
               ("resnet18", 32): (0.62, None)}
CONFIGS = [("resnet50", 32), ("resnet50", 1), ("mobilenet_v2", 32), ("resnet18", 32)]
CONCURRENCY_TARGET = 1.5


def die(msg, code=2):
    print("model_bench.py: " + msg, file=sys.stderr)
    sys.exit(code)


def timed(call, sync, iters, reps, warmup):
    """ms per call: warm-up, then `reps` times `iters` back-to-back calls and one sync; the median."""
    for _ in range(warmup):
        call()
    sync()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        sync()
        runs.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(runs)


def export(torch, net, path, exporter):
    x = torch.randn(2, 3, 224, 224, device="cuda")
    if exporter == "torchscript":
        torch.onnx.export(net, (x,), path, dynamo=False, opset_version=17, input_names=["input"],
                          output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    else:
        batch = torch.export.Dim("batch", min=1, max=4096)
        torch.onnx.export(net, (x,), path, input_names=["input"], output_names=["logits"],
                          dynamic_shapes=({0: batch},))


def bench_gaio(gaio, torch, model, batch, args):
    ctx = gaio.default_context("cuda")
    ex = model.exec(ctx, batch=batch, precision=args.precision, layout=args.layout)
    s = gaio.Stream(ctx)
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    torch.cuda.synchronize()
    xt = gaio.tensor(x.cpu().numpy(), stream=s)
    (yt,) = ex.empty_outputs(s)
    inputs, outputs = [xt], [yt]
    run = ex.run
    return timed(lambda: run(s, inputs, outputs), s.synchronize, args.iters, args.reps, args.warmup)


def bench_torch(torch, net, batch, args, compiled):
    """(ms, None) or (None, reason)."""
    x = torch.randn(batch, 3, 224, 224, device="cuda").half().contiguous(memory_format=torch.channels_last)
    try:
        with torch.inference_mode():
            f = torch.compile(net, mode="reduce-overhead") if compiled else net
            # reduce-overhead records its CUDA graph after a few calls: a longer warm-up.
            ms = timed(lambda: f(x), torch.cuda.synchronize, args.iters, args.reps, args.warmup + (10 if compiled else 0))
        return ms, None
    except Exception as e:  # a peer that cannot run is reported, not fatal
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"


def concurrency(gaio, torch, model, args):
    """images/s of batch-1 runs: 1 stream; 4 streams from one thread; 4 streams from 4 threads."""
    ctx = gaio.default_context("cuda")
    n, iters = 4, args.iters * 4
    execs = [model.exec(ctx, batch=1, precision=args.precision, layout=args.layout) for _ in range(n)]
    streams = [gaio.Stream(ctx) for _ in range(n)]
    x = torch.randn(1, 3, 224, 224).numpy()
    ins = [[gaio.tensor(x, stream=s)] for s in streams]
    outs = [execs[k].empty_outputs(streams[k]) for k in range(n)]
    for k in range(n):  # warm-up of every exec
        for _ in range(args.warmup):
            execs[k].run(streams[k], ins[k], outs[k])
        streams[k].synchronize()

    def one_stream():
        for _ in range(iters):
            execs[0].run(streams[0], ins[0], outs[0])
        streams[0].synchronize()
        return iters

    def four_one_thread():
        for _ in range(iters):
            for k in range(n):
                execs[k].run(streams[k], ins[k], outs[k])
        for s in streams:
            s.synchronize()
        return iters * n

    def four_threads():
        def worker(k):
            for _ in range(iters):
                execs[k].run(streams[k], ins[k], outs[k])
            streams[k].synchronize()
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return iters * n

    res = {}
    for name, fn in (("1 stream", one_stream), ("4 streams, 1 thread", four_one_thread),
                     ("4 streams, 4 threads", four_threads)):
        rates = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            count = fn()
            rates.append(count / (time.perf_counter() - t0))
        res[name] = statistics.median(rates)
    return res


def fmt(v, unit=""):
    return "-" if v is None else f"{v:.3f}{unit}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--exporter", choices=["torchscript", "dynamo"], default="torchscript")
    ap.add_argument("--precision", choices=["auto", "model", "f16"], default="auto")
    ap.add_argument("--layout", choices=["auto", "nchw", "nhwc"], default="auto")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    ap.add_argument("--only", help="comma-separated models (resnet50,mobilenet_v2,resnet18)")
    ap.add_argument("--onnx-dir", help="where the exported files go (default: a temporary directory)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    try:
        import torch
        import torchvision
    except ImportError as e:
        die(f"{e.name} is missing (pip install torch torchvision)")
    if not torch.cuda.is_available():
        die("torch sees no GPU")
    try:
        import gaio
    except ImportError as e:
        die(f"cannot import gaio: {e} (run with PYTHONPATH=python GAIO_LIBRARY=build/src/libgaio.so)")
    if not any(d.kind == "cuda" for d in gaio.devices()):
        die("gaio sees no CUDA GPU: " + gaio.backend_status("cuda")[1])

    print(f"gaio {gaio.version()} from {gaio.library_path}; torch {torch.__version__}, torchvision "
          f"{torchvision.__version__}; {torch.cuda.get_device_name(0)}")
    print(f"timing: {args.warmup} warm-up calls, {args.iters} back-to-back calls, one sync, median of {args.reps}; "
          f"gaio precision {args.precision}, layout {args.layout}; exporter {args.exporter}")
    configs = CONFIGS
    if args.only:
        keep = set(args.only.split(","))
        configs = [c for c in configs if c[0] in keep]
    tmp = tempfile.TemporaryDirectory() if not args.onnx_dir else None
    onnx_dir = args.onnx_dir or tmp.name
    os.makedirs(onnx_dir, exist_ok=True)

    models, rows, failed = {}, [], False
    for name, batch in configs:
        torch.manual_seed(args.seed)
        net = getattr(torchvision.models, name)(weights=None).cuda().eval()
        if name not in models:
            path = os.path.join(onnx_dir, f"{name}_{args.exporter}.onnx")
            try:
                export(torch, net, path, args.exporter)
                models[name] = gaio.Model(path)
                print(f"{name}: exported and loaded ({models[name].summary.nodes} nodes)", flush=True)
            except Exception as e:
                models[name] = e
                print(f"{name}: {type(e).__name__}: {e}", flush=True)
        m = models[name]
        row = {"model": name, "batch": batch, "gaio": None, "eager": None, "compiled": None, "notes": []}
        if isinstance(m, Exception):
            row["notes"].append(f"gaio: {type(m).__name__}")
            failed = True
        else:
            try:
                row["gaio"] = bench_gaio(gaio, torch, m, batch, args)
            except Exception as e:
                row["notes"].append(f"gaio: {type(e).__name__}: {e}")
                failed = True
        net_h = net.half().to(memory_format=torch.channels_last)
        row["eager"], why = bench_torch(torch, net_h, batch, args, compiled=False)
        if why:
            row["notes"].append("eager: " + why)
        if not args.no_compile:
            if hasattr(torch, "_dynamo"):
                torch._dynamo.reset()  # a fresh compile per model and batch
            row["compiled"], why = bench_torch(torch, net_h, batch, args, compiled=True)
            if why:
                row["notes"].append("compiled: " + why)
        rows.append(row)
        print(f"  {name} b{batch}: gaio {fmt(row['gaio'])} ms, eager {fmt(row['eager'])} ms, "
              f"compiled {fmt(row['compiled'])} ms", flush=True)
        del net, net_h
        torch.cuda.empty_cache()

    print()
    head = (f"{'model':<13}{'batch':>6}{'gaio ms':>9}{'eager ms':>10}{'compiled':>10}{'eager/gaio':>12}"
            f"{'comp/gaio':>11}{'target':>8}{'met':>5}   issue's peers (compiled, eager)")
    print(head)
    print("-" * len(head))
    for r in rows:
        key = (r["model"], r["batch"])
        target = TARGETS.get(key)
        g = r["gaio"]
        ratio_e = r["eager"] / g if g and r["eager"] else None
        ratio_c = r["compiled"] / g if g and r["compiled"] else None
        met = "-" if g is None or target is None else ("yes" if g <= target else "NO")
        peers = ISSUE_PEERS.get(key, (None, None))
        print(f"{r['model']:<13}{r['batch']:>6}{fmt(g):>9}{fmt(r['eager']):>10}{fmt(r['compiled']):>10}"
              f"{fmt(ratio_e, 'x'):>12}{fmt(ratio_c, 'x'):>11}{fmt(target):>8}{met:>5}   "
              f"{fmt(peers[0])}, {fmt(peers[1])}")
        for note in r["notes"]:
            print(f"    {note}")

    m = models.get("resnet50")
    if m is None:
        torch.manual_seed(args.seed)
        net = torchvision.models.resnet50(weights=None).cuda().eval()
        path = os.path.join(onnx_dir, f"resnet50_{args.exporter}.onnx")
        try:
            export(torch, net, path, args.exporter)
            m = gaio.Model(path)
        except Exception as e:
            m = e
    print()
    if isinstance(m, Exception):
        print(f"concurrency: resnet50 did not load: {m}")
        failed = True
    else:
        try:
            res = concurrency(gaio, torch, m, args)
            base = res["1 stream"]
            print("ResNet-50 batch 1, one exec per stream (images/s):")
            for k, v in res.items():
                print(f"  {k:<22}{v:>10.0f}   {v / base:.2f}x")
            best = max(res["4 streams, 1 thread"], res["4 streams, 4 threads"]) / base
            print(f"  target: 4 streams >= {CONCURRENCY_TARGET}x one stream: "
                  f"{'met' if best >= CONCURRENCY_TARGET else 'NOT met'} ({best:.2f}x)")
        except Exception as e:
            print(f"concurrency: gaio failed: {type(e).__name__}: {e}")
            failed = True
    if tmp is not None:
        tmp.cleanup()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
