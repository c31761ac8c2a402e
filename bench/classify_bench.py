#!/usr/bin/env python3
"""`gaio classify` end to end against the PyTorch pipeline a user would write, same run.

  python3 bench/classify_bench.py --gaio build/tools/gaio [--images 512] [--batch 32]

Writes --images 1920x1080 JPEGs of about 1 MB (smooth colour fields with texture and
noise, quality 95, seeded) and ResNet-50 (torchvision, random weights, seeded)
exported with torch.onnx.export (TorchScript exporter, opset 17, symbolic batch), then
times images/s over all the files, best of --reps:

* gaio: `gaio classify resnet50.onnx IMAGES... --batch B -q --decode gpu` (its own
  summary line: reading, nvJPEG decode, preprocess, fp16 inference, top 5; setup,
  which waits for nvJPEG's decoders, excluded), again with `--host-share 0.1` (a tenth
  of each batch decoded by the host threads beside nvJPEG), and with the default
  `--decode auto` (the host threads decode until nvJPEG is up: its start counted);
* peer: torchvision.io.read_file + decode_jpeg(device="cuda") on each batch,
  resize (shorter side 256, bilinear, antialias) + center crop 224 + normalize, and
  torch.compile(mode="reduce-overhead") of the fp16 channels-last model, top 5 copied
  to the host per batch;
* the peer's read + decode alone (no preprocess, no model), the rate its pipeline
  cannot beat;
* gaio's floor: its two JPEG decoders each alone on the same files (gaio_jpeg_rate,
  bench/jpeg_rate.c, next to the gaio binary): the hardware engine through nvJPEG and
  the host threads through libjpeg-turbo; their sum is what the pipeline could decode.

Targets (issue [4/7]): gaio >= 1.5x the peer and >= 0.9x its own floor. Exit status: 0 when both ran, 1 when gaio
failed, 2 when torch / torchvision / the GPU is missing.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time


def need():
    try:
        import numpy as np  # noqa: F401
        import cv2  # noqa: F401
        import torch
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"classify_bench.py: needs numpy, cv2, torch and torchvision: {e}", file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available():
        print("classify_bench.py: no CUDA GPU for torch", file=sys.stderr)
        sys.exit(2)


def make_images(d, n, seed):
    import cv2
    import numpy as np
    rng = np.random.default_rng(seed)
    paths, sizes = [], []
    base = None
    for i in range(n):
        if i % 8 == 0:  # a new scene every 8 images; the rest shift it and change the noise
            small = rng.uniform(0, 255, (9, 16, 3)).astype(np.float32)
            base = cv2.resize(small, (1920, 1080), interpolation=cv2.INTER_CUBIC)
            yy, xx = np.mgrid[0:1080, 0:1920].astype(np.float32)
            base += 40 * np.sin(xx / rng.uniform(3, 9))[..., None] * np.cos(yy / rng.uniform(3, 9))[..., None]
        img = np.roll(base, int(rng.integers(0, 1920)), axis=1) + rng.normal(0, 6, base.shape).astype(np.float32)
        p = os.path.join(d, f"img{i:05d}.jpg")
        cv2.imwrite(p, np.clip(img, 0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 95])
        paths.append(p)
        sizes.append(os.path.getsize(p))
    return paths, sum(sizes) / len(sizes)


def export_resnet50(path, seed):
    import torch
    import torchvision
    torch.manual_seed(seed)
    net = torchvision.models.resnet50(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(net, x, path, dynamo=False, opset_version=17, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    return net


def time_gaio(gaio, model, paths, batch, reps, extra=()):
    best = 0.0
    line = ""
    for _ in range(reps):
        p = subprocess.run([gaio, "classify", model, *paths, "--batch", str(batch), "-q", *extra],
                           capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            print(f"gaio classify failed ({p.returncode}): {p.stderr.strip()[-2000:]}", file=sys.stderr)
            sys.exit(1)
        line = p.stdout.strip().splitlines()[-1]
        m = re.search(r"([0-9.]+) images/s", line)
        best = max(best, float(m.group(1)))
    return best, line


def decoders_alone(tool, paths, batch, reps):
    """(nvJPEG images/s, host images/s, the tool's lines): gaio_jpeg_rate's figures."""
    p = subprocess.run([tool, "--batch", str(batch), "--reps", str(reps), *paths], capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        print(f"gaio_jpeg_rate failed ({p.returncode}): {p.stderr.strip()[-2000:]}", file=sys.stderr)
        sys.exit(1)
    rates = {}
    for ln in p.stdout.splitlines():
        m = re.match(r"(nvJPEG|host)[^:]*: ([0-9.]+) images/s", ln)
        if m:
            rates[m.group(1)] = float(m.group(2))
    return rates.get("nvJPEG", 0.0), rates.get("host", 0.0), p.stdout.strip()


def peer(net, paths, batch, reps, model_too=True):
    import torch
    import torchvision
    from torchvision.io import decode_jpeg, read_file
    from torchvision.transforms.v2 import functional as F
    dev = torch.device("cuda")
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1)
    run = None
    if model_too:
        net16 = net.to(dev).half().to(memory_format=torch.channels_last).eval()
        run = torch.compile(net16, mode="reduce-overhead")

    def once():
        tops = []
        for i in range(0, len(paths), batch):
            datas = [read_file(p) for p in paths[i:i + batch]]
            imgs = decode_jpeg(datas, device=dev)
            if not model_too:
                continue
            x = torch.stack([F.center_crop(F.resize(im, 256, antialias=True), 224) for im in imgs])
            x = ((x.float() / 255 - mean) / std).half().contiguous(memory_format=torch.channels_last)
            if x.shape[0] < batch:  # compiled graphs are per shape: pad the last batch
                x = torch.cat([x, x[-1:].expand(batch - x.shape[0], -1, -1, -1)])
            with torch.inference_mode():
                y = run(x)
            tops.append(y.float().topk(5, dim=1).indices.cpu())
        torch.cuda.synchronize()
        return tops

    once()  # warm-up: compile, capture, nvJPEG handles
    best = 0.0
    for _ in range(reps):
        t = time.perf_counter()
        once()
        best = max(best, len(paths) / (time.perf_counter() - t))
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gaio", required=True)
    ap.add_argument("--jpeg-rate", help="gaio_jpeg_rate (default: next to --gaio)")
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=4242)
    ap.add_argument("--dir", help="where images and the model go (default: a temporary directory)")
    a = ap.parse_args()
    need()
    import torch
    d = a.dir or tempfile.mkdtemp(prefix="gaio_classify_bench_")
    os.makedirs(d, exist_ok=True)
    t = time.time()
    paths, mean_size = make_images(d, a.images, a.seed)
    model = os.path.join(d, "resnet50.onnx")
    net = export_resnet50(model, a.seed)
    print(f"{len(paths)} 1920x1080 JPEGs, {mean_size / 1e6:.2f} MB each on average; ResNet-50 exported "
          f"({time.time() - t:.0f} s); {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    tool = a.jpeg_rate or os.path.join(os.path.dirname(os.path.abspath(a.gaio)), "gaio_jpeg_rate")
    hw, host, lines = decoders_alone(tool, paths, a.batch, a.reps)
    print("  " + lines.replace("\n", "\n  "), flush=True)
    g, line = time_gaio(a.gaio, model, paths, a.batch, a.reps, ["--decode", "gpu"])
    print(f"  gaio --decode gpu: {line}", flush=True)
    ga, linea = time_gaio(a.gaio, model, paths, a.batch, a.reps)
    print(f"  gaio (--decode auto): {linea}", flush=True)
    g1, line1 = time_gaio(a.gaio, model, paths, a.batch, a.reps, ["--host-share", "0.1"])
    print(f"  gaio --host-share 0.1: {line1}", flush=True)
    dec = peer(net, paths, a.batch, a.reps, model_too=False)
    p = peer(net, paths, a.batch, a.reps)
    floor = hw + host
    print(f"\n| pipeline (batch {a.batch}) | images/s | vs peer | vs gaio's floor |")
    print("|---|---|---|---|")
    print(f"| gaio classify (nvJPEG, preprocess, fp16 ResNet-50, top 5) | {g:,.0f} | {g / p:.2f}x | {g / floor:.2f} |")
    print(f"| gaio classify --host-share 0.1 (a tenth on the host threads) | {g1:,.0f} | {g1 / p:.2f}x "
          f"| {g1 / floor:.2f} |")
    print(f"| gaio classify --decode auto (host threads until nvJPEG is up) | {ga:,.0f} | {ga / p:.2f}x "
          f"| {ga / floor:.2f} |")
    print(f"| peer: torchvision decode_jpeg + resize + normalize + torch.compile | {p:,.0f} | 1.00x "
          f"| {p / floor:.2f} |")
    print(f"| peer's read + decode alone | {dec:,.0f} | {dec / p:.2f}x | {dec / floor:.2f} |")
    print(f"| gaio's floor: nvJPEG alone {hw:,.0f} + host threads alone {host:,.0f} | {floor:,.0f} | "
          f"{floor / p:.2f}x | 1.00 |")
    print(f"targets: gaio >= 1.5x the peer: {'met' if g >= 1.5 * p else 'MISSED'} ({g / p:.2f}x); "
          f">= 0.9x its floor: {'met' if g >= 0.9 * floor else 'MISSED'} ({g / floor:.2f}x)")


if __name__ == "__main__":
    main()
