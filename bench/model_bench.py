#!/usr/bin/env python3
"""Whole models on the GPU: gaio against torch.compile and PyTorch eager, one table.

  PYTHONPATH=python GAIO_LIBRARY=build/src/libgaio.so.0 python3 bench/model_bench.py [--only ...]

Per model and batch (issue [4/7]'s table: ResNet-50 / -18, MobileNetV2, MobileNetV3-Large,
EfficientNet-B0, DenseNet-121, SqueezeNet 1.1, AlexNet, ConvNeXt-T, ViT-B/16, Swin-T at
224x224 and the YOLOv8-style detector of python/tests/yolo_detector.py at 640x640, batch 32
and 1; torchvision, random weights, seeded): the model is exported once with
torch.onnx.export (TorchScript exporter, opset 17, symbolic batch; --exporter dynamo for
the other) and timed three ways in this process, each the same way: warm-up, `--iters`
back-to-back calls, one synchronization, ms per call, median of `--reps`:

* gaio: Model(path).exec(ctx, batch, precision="auto") (fp16 on a GPU), ex.run() on
  one gaio stream (the Python API a user calls, its per-call overhead included);
* torch.compile(mode="reduce-overhead") (CUDA graphs) of the fp16 channels_last module;
  a failure to compile is reported in the table, not fatal;
* PyTorch eager, fp16, channels_last, under inference_mode.

The target: gaio <= 0.9x compiled, or <= 0.5x eager where compile fails. For ResNet-50
at batch 32 the table also gives its convolutions' roofline, measured in the same run:
each convolution's FLOPs at a dense fp16 matmul's rate or its bytes (x, w, y) at a
device-to-device copy's bandwidth, whichever is larger, summed (target: gaio <= 1.5x).

--report FILE appends each row as a JSON line and --table FILE prints the table of such
a file, so that a long sweep can run in pieces. --concurrency adds ResNet-50 batch 1 on
one stream against four. Exit status: 0 when everything ran (targets missed are
reported, not an error); 1 when gaio failed on a model; 2 when torch, torchvision or the
GPU is missing (named on stderr).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["resnet50", "resnet18", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "densenet121",
          "squeezenet1_1", "alexnet", "convnext_tiny", "vit_b_16", "swin_t", "yolo"]
SIZE = {"yolo": 640}  # input height and width; 224 otherwise
COMPILED_TARGET, EAGER_TARGET, ROOFLINE_TARGET = 0.9, 0.5, 1.5
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


def export(torch, net, path, exporter, size):
    x = torch.randn(2, 3, size, size, device="cuda")
    out = "output"
    if exporter == "torchscript":
        torch.onnx.export(net, (x,), path, dynamo=False, opset_version=17, input_names=["input"],
                          output_names=[out], dynamic_axes={"input": {0: "batch"}, out: {0: "batch"}})
    else:
        batch = torch.export.Dim("batch", min=1, max=4096)
        torch.onnx.export(net, (x,), path, input_names=["input"], output_names=[out], dynamic_shapes=({0: batch},))


def build_net(torch, torchvision, name):
    if name == "yolo":
        sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))
        import yolo_detector
        return yolo_detector.yolo(torch).cuda().eval()
    return getattr(torchvision.models, name)(weights=None).cuda().eval()


def bench_gaio(gaio, torch, model, batch, size, args):
    ctx = gaio.default_context("cuda")
    ex = model.exec(ctx, batch=batch, precision=args.precision, layout=args.layout)
    s = gaio.Stream(ctx)
    x = torch.randn(batch, 3, size, size, device="cuda")
    ys = [torch.empty(shape, device="cuda") for shape in ex.output_shapes]
    inputs = [gaio.from_dlpack(x, stream=s)]
    outputs = [gaio.from_dlpack(y, stream=s) for y in ys]
    run = ex.run
    return timed(lambda: run(s, inputs, outputs), s.synchronize, args.iters, args.reps, args.warmup)


def bench_torch(torch, net, batch, size, args, compiled):
    """(ms, None) or (None, reason)."""
    x = torch.randn(batch, 3, size, size, device="cuda").half().contiguous(memory_format=torch.channels_last)
    try:
        with torch.inference_mode():
            f = torch.compile(net, mode="reduce-overhead") if compiled else net
            # reduce-overhead records its CUDA graph after a few calls: a longer warm-up.
            ms = timed(lambda: f(x), torch.cuda.synchronize, args.iters, args.reps, args.warmup + (10 if compiled else 0))
        return ms, None
    except Exception as e:  # a peer that cannot run is reported, not fatal
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"


def roofline_ms(torch, net, batch, size):
    """ResNet-50's convolutions at batch `batch`: sum over layers of max(FLOPs / fp16
    matmul rate, bytes / copy bandwidth), both measured now; (ms, rate TFLOP/s, GB/s)."""
    convs = []

    def hook(mod, inp, out):
        x = inp[0]
        convs.append((2 * out.numel() * (mod.in_channels // mod.groups) * mod.kernel_size[0] * mod.kernel_size[1],
                      2 * (x.numel() + mod.weight.numel() + out.numel())))

    hs = [m.register_forward_hook(hook) for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.inference_mode():
        net(torch.randn(batch, 3, size, size, device="cuda").half().contiguous(memory_format=torch.channels_last))
    for h in hs:
        h.remove()
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.half)
    mm = timed(lambda: a @ a, torch.cuda.synchronize, 10, 5, 3)
    rate = 2 * n ** 3 / (mm * 1e-3)
    src = torch.empty(1 << 28, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    cp = timed(lambda: dst.copy_(src), torch.cuda.synchronize, 10, 5, 3)
    bw = 2 * src.numel() / (cp * 1e-3)
    ms = sum(max(f / rate, b / bw) for f, b in convs) * 1e3
    return ms, rate / 1e12, bw / 1e9


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


def verdict(r):
    g, c, e = r.get("gaio"), r.get("compiled"), r.get("eager")
    if g is None:
        return "gaio failed"
    if c is not None:
        return f"{'met' if g <= COMPILED_TARGET * c else 'missed'} ({g / c:.2f}x compiled)"
    if e is not None:
        return f"{'met' if g <= EAGER_TARGET * e else 'missed'} ({g / e:.2f}x eager; compile failed)"
    return "no peer"


def print_table(rows):
    print("| model | batch | gaio ms | torch.compile ms | eager ms | gaio / compiled | gaio / eager | target |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        g, c, e = r.get("gaio"), r.get("compiled"), r.get("eager")
        print(f"| {r['model']} | {r['batch']} | {fmt(g)} | {fmt(c)} | {fmt(e)} | "
              f"{fmt(g / c if g and c else None, 'x')} | {fmt(g / e if g and e else None, 'x')} | {verdict(r)} |")
    for r in rows:
        for note in r.get("notes", []):
            print(f"- {r['model']} b{r['batch']}: {note}")
        if r.get("roofline"):
            ms, rate, bw = r["roofline"]
            g = r.get("gaio")
            print(f"- {r['model']} b{r['batch']}: convolutions' roofline {ms:.3f} ms (fp16 matmul {rate:.0f} TFLOP/s, "
                  f"copy {bw:.0f} GB/s); gaio {fmt(g / ms if g else None, 'x')} of it, target <= "
                  f"{ROOFLINE_TARGET}x: {'met' if g and g <= ROOFLINE_TARGET * ms else 'missed'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--exporter", choices=["torchscript", "dynamo"], default="torchscript")
    ap.add_argument("--precision", choices=["auto", "model", "f16"], default="auto")
    ap.add_argument("--layout", choices=["auto", "nchw", "nhwc"], default="auto")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    ap.add_argument("--only", help="comma-separated models (default: " + ",".join(MODELS) + ")")
    ap.add_argument("--batches", default="32,1")
    ap.add_argument("--report", help="append each row to this file as a JSON line")
    ap.add_argument("--table", help="print the table of a --report file and exit")
    ap.add_argument("--concurrency", action="store_true", help="also ResNet-50 batch 1 on 1 and 4 streams")
    ap.add_argument("--onnx-dir", help="where the exported files go (default: a temporary directory)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    if args.table:
        print_table([json.loads(line) for line in open(args.table) if line.strip()])
        return

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
        die(f"cannot import gaio: {e} (run with PYTHONPATH=python GAIO_LIBRARY=build/src/libgaio.so.0)")
    if not any(d.kind == "cuda" for d in gaio.devices()):
        die("gaio sees no CUDA GPU: " + gaio.backend_status("cuda")[1])
    torch.backends.cudnn.benchmark = True  # eager at its best, as in the figures

    print(f"gaio {gaio.version()} from {gaio.library_path}; torch {torch.__version__}, torchvision "
          f"{torchvision.__version__}; {torch.cuda.get_device_name(0)}")
    print(f"timing: {args.warmup} warm-up calls, {args.iters} back-to-back calls, one sync, median of {args.reps}; "
          f"gaio precision {args.precision}, layout {args.layout}; exporter {args.exporter}")
    names = args.only.split(",") if args.only else MODELS
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        die(f"unknown models {unknown}: the table has {', '.join(MODELS)}")
    batches = [int(b) for b in args.batches.split(",")]
    tmp = tempfile.TemporaryDirectory() if not args.onnx_dir else None
    onnx_dir = args.onnx_dir or tmp.name
    os.makedirs(onnx_dir, exist_ok=True)

    rows, failed, resnet50 = [], False, None
    for name in names:
        size = SIZE.get(name, 224)
        torch.manual_seed(args.seed)
        net = build_net(torch, torchvision, name)
        path = os.path.join(onnx_dir, f"{name}_{args.exporter}.onnx")
        try:
            if not os.path.exists(path):
                export(torch, net, path, args.exporter, size)
            model = gaio.Model(path)
            print(f"{name}: exported and loaded ({model.summary.nodes} nodes)", flush=True)
        except Exception as e:
            model = e
            print(f"{name}: {type(e).__name__}: {e}", flush=True)
        if name == "resnet50":
            resnet50 = model
        net_h = net.half().to(memory_format=torch.channels_last)
        for batch in batches:
            row = {"model": name, "batch": batch, "size": size, "gaio": None, "eager": None, "compiled": None,
                   "notes": []}
            if isinstance(model, Exception):
                row["notes"].append(f"gaio: {type(model).__name__}: {str(model)[:200]}")
                failed = True
            else:
                try:
                    row["gaio"] = bench_gaio(gaio, torch, model, batch, size, args)
                except Exception as e:
                    row["notes"].append(f"gaio: {type(e).__name__}: {str(e)[:200]}")
                    failed = True
            row["eager"], why = bench_torch(torch, net_h, batch, size, args, compiled=False)
            if why:
                row["notes"].append("eager: " + why)
            if not args.no_compile:
                if hasattr(torch, "_dynamo"):
                    torch._dynamo.reset()  # a fresh compile per model and batch
                row["compiled"], why = bench_torch(torch, net_h, batch, size, args, compiled=True)
                if why:
                    row["notes"].append("compiled: " + why)
            if name == "resnet50" and batch == 32:
                row["roofline"] = roofline_ms(torch, net_h, batch, size)
            rows.append(row)
            print(f"  {name} b{batch}: gaio {fmt(row['gaio'])} ms, compiled {fmt(row['compiled'])} ms, "
                  f"eager {fmt(row['eager'])} ms: {verdict(row)}", flush=True)
            if args.report:
                with open(args.report, "a") as f:
                    f.write(json.dumps(row) + "\n")
        del net, net_h
        torch.cuda.empty_cache()

    print()
    print_table(rows)
    if args.concurrency:
        print()
        if resnet50 is None:
            torch.manual_seed(args.seed)
            path = os.path.join(onnx_dir, f"resnet50_{args.exporter}.onnx")
            try:
                export(torch, build_net(torch, torchvision, "resnet50"), path, args.exporter, 224)
                resnet50 = gaio.Model(path)
            except Exception as e:
                resnet50 = e
        if isinstance(resnet50, Exception):
            print(f"concurrency: resnet50 did not load: {resnet50}")
            failed = True
        else:
            try:
                res = concurrency(gaio, torch, resnet50, args)
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
