"""The vision models people deploy, on a GPU against PyTorch: every classification
builder of torchvision.models, the segmentation models fcn_resnet50,
deeplabv3_mobilenet_v3_large and lraspp_mobilenet_v3_large, and a YOLOv8-style detector
written here (C2f blocks with Split / Concat, SPPF max pools, nearest upsampling, a
distribution-focal head with Softmax / Reshape / Transpose, anchors through Range /
Expand), all with random weights (seeded), exported with torch.onnx (TorchScript
exporter, opset 17, symbolic batch; the detector with symbolic height and width too,
built and run at two sizes), loaded, built and run by gaio.

* fp32 (precision="model") against torch fp32 with TF32 off: max |gaio - torch| /
  max |torch| <= 1e-3 on every output.
* f16 (precision="f16"), against torch fp32: the largest error relative to the
  largest output at most 1.25 times PyTorch's own fp16's on the same inputs; and top-1
  agreement (per image; per pixel for segmentation; per anchor's best class for the
  detector) at least PyTorch fp16's, within chance: random weights leave near-ties
  between the top logits that either side's rounding flips on its own, so the counts
  may differ by two standard deviations (twice the square root of the flips).

Random weights: batch-norm statistics are calibrated on random batches (torchvision's
identity statistics make activations grow at every block), and layers that torchvision
zero-initializes (ViT's head) get small random weights, so that no output is constant.

GAIO_ZOO picks the models: unset, one per family (the set gpu-check runs); "all", every
builder (the largest last; GAIO_ZOO_SKIP=FILE leaves out those an earlier sweep's
report has, to go on with one); or a comma-separated list of names (torchvision's,
"fcn_resnet50", ..., "yolo"). GAIO_ZOO_REPORT=FILE appends one JSON line per model (export, load and build
seconds, fp32 error, f16 agreement); ``python3 test_model_zoo_gpu.py FILE`` prints them
as a Markdown table. Skips cleanly without CUDA, torch or torchvision."""
from __future__ import annotations

import copy
import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yolo_detector  # noqa: E402 (beside this file)

if __name__ != "__main__":
    import gaio

    pytestmark = [pytest.mark.gpu,
                  pytest.mark.skipif(not gaio.model.onnx_supported(), reason="SKIPPED: libgaio built without ONNX")]

SEED = int(os.environ.get("GAIO_TEST_SEED") or "1234", 0)
FP32_MAX_REL = 1e-3
AGREE_N, AGREE_BATCH = 64, 32
QUICK = ["resnet18", "convnext_tiny", "vit_b_16", "swin_t", "swin_v2_t", "efficientnet_b0", "shufflenet_v2_x1_0",
         "regnet_y_400mf", "maxvit_t", "mobilenet_v3_large", "inception_v3"]
SEGMENTATION = ["fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]
DETECTOR_SIZES = [(320, 320), (256, 416)]


def _classifiers():
    try:
        import torchvision
        return sorted(torchvision.models.list_models(module=torchvision.models))
    except Exception:  # no torchvision: the tests below skip
        return QUICK


# The largest builders, run last in a sweep (minutes of export and build each).
LARGE = ["vgg16", "vgg16_bn", "vgg19", "vgg19_bn", "convnext_large", "swin_b", "swin_v2_b", "resnext101_32x8d",
         "resnext101_64x4d", "wide_resnet101_2", "regnet_y_16gf", "regnet_x_32gf", "regnet_y_32gf",
         "efficientnet_b7", "efficientnet_v2_l", "vit_l_32", "vit_l_16", "regnet_y_128gf", "vit_h_14"]


def _done():
    """Models GAIO_ZOO_SKIP (a report file of an earlier sweep) has results of."""
    path = os.environ.get("GAIO_ZOO_SKIP")
    if not path or not os.path.exists(path):
        return set()
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return {r["model"] for r in rows if "error" not in r}


def _selected(names):
    want = os.environ.get("GAIO_ZOO", "")
    if want == "all":
        done = _done()
        return [n for n in names if n not in LARGE and n not in done] + [n for n in LARGE if n in names and
                                                                           n not in done]
    if want:
        picked = {w.strip() for w in want.split(",") if w.strip()}
        return [n for n in names if n in picked]
    return [n for n in names if n in QUICK or n in SEGMENTATION or n == "yolo"]


def _report(row):
    path = os.environ.get("GAIO_ZOO_REPORT")
    print("zoo: " + json.dumps(row))
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


@pytest.fixture(scope="module")
def torch(torch_fp32):
    print(f"seed {SEED} (GAIO_TEST_SEED={SEED} repeats this run)")
    return torch_fp32


def _randomize(torch, net, calib_shape):
    """Seeded random weights where torchvision leaves zeros; batch-norm statistics from
    random batches; then eval mode on the GPU."""
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for p in net.parameters():
            if p.dim() >= 2 and not p.any():
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    bns = [m for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    net = net.cuda()
    if bns:
        for m in bns:
            m.momentum = None  # a cumulative average over the calibration batches
        net.train()
        gc = torch.Generator(device="cuda").manual_seed(SEED + 1)
        with torch.no_grad():
            for _ in range(3):
                net(torch.randn(*calib_shape, device="cuda", generator=gc))
    return net.eval()


def _export(torch, net, x, path, dynamic_axes, out_names):
    t0 = time.perf_counter()
    torch.onnx.export(net, (x,), str(path), dynamo=False, opset_version=17, input_names=["input"],
                      output_names=out_names, dynamic_axes=dynamic_axes)
    return time.perf_counter() - t0


def _gaio_run(torch, ex, stream, x):
    ys = [torch.empty(s, device="cuda", dtype=torch.float32) for s in ex.output_shapes]
    ex.run(stream, [gaio.from_dlpack(x, stream=stream)],
           [gaio.from_dlpack(y, stream=stream) for y in ys]).result(timeout=300)
    return ys


def _nanmax(a, b):
    """max() that keeps a NaN (Python's max drops one in the second place)."""
    return a if a != a else b if b != b else max(a, b)


def _build(model, batch=None, precision="model", shapes=None):
    t0 = time.perf_counter()
    e = model.build(gaio.default_context("cuda"), batch=batch, precision=precision, shapes=shapes)
    return e, time.perf_counter() - t0


def _rel(y, ref):
    return ((y - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def _check(torch, name, net, shape, tmp_path, classes_of, dynamic_hw_sizes=None):
    """_measure, with a failure before its report reported too (for a sweep's table)."""
    try:
        _measure(torch, name, net, shape, tmp_path, classes_of, dynamic_hw_sizes)
    except Exception as e:
        if not isinstance(e, AssertionError):
            _report({"model": name, "error": f"{type(e).__name__}: {str(e)[:300]}"})
        raise


def _measure(torch, name, net, shape, tmp_path, classes_of, dynamic_hw_sizes=None):
    """Exports net, then: gaio fp32 against torch fp32; gaio f16 and torch f16 against
    torch fp32 (agreement of classes_of(outputs)); one report row."""
    row = {"model": name, "params_M": round(sum(p.numel() for p in net.parameters()) / 1e6, 2)}
    path = tmp_path / f"{name}.onnx"
    c, h, w = shape
    axes = {"input": {0: "batch"}, "output": {0: "batch"}}
    if dynamic_hw_sizes:
        axes = {"input": {0: "batch", 2: "height", 3: "width"}, "output": {0: "batch", 2: "anchors"}}
    # Not under no_grad: nn.MultiheadAttention's inference fast path (ViT's) has no ONNX export.
    row["export_s"] = round(_export(torch, net, torch.randn(2, c, h, w, device="cuda"), path, axes, ["output"]), 2)
    t0 = time.perf_counter()
    model = gaio.Model(path)
    row["load_s"] = round(time.perf_counter() - t0, 3)
    row["nodes"] = model.summary.nodes
    sizes = dynamic_hw_sizes or [(h, w)]
    s = gaio.Stream("cuda")
    g = torch.Generator(device="cuda").manual_seed(SEED + 2)
    net16 = copy.deepcopy(net).half()
    errs, agree, agree16, total, err16, err16_torch = [], 0, 0, 0, 0.0, 0.0
    for (hh, ww) in sizes:
        shp = (lambda b: {"input": (b, c, hh, ww)}) if dynamic_hw_sizes else (lambda b: None)
        e32, t32 = _build(model, batch=4, precision="model", shapes=shp(4))
        row.setdefault("build32_s", round(t32, 3))
        x = torch.randn(4, c, hh, ww, device="cuda", generator=g)
        with torch.no_grad():
            ref = net(x)
        ys = _gaio_run(torch, e32.exec(), s, x)
        assert all(torch.isfinite(y).all() for y in ys), f"{name} fp32 {hh}x{ww}: non-finite outputs"
        errs.append(_rel(ys[0], ref.float()))
        del e32, ys
        e16, t16 = _build(model, batch=AGREE_BATCH, precision="f16", shapes=shp(AGREE_BATCH))
        row.setdefault("build16_s", round(t16, 3))
        ex16 = e16.exec()
        for _ in range(AGREE_N // AGREE_BATCH):
            x = torch.randn(AGREE_BATCH, c, hh, ww, device="cuda", generator=g)
            with torch.no_grad():
                out = net(x).float()
                out16 = net16(x.half()).float()
            y = _gaio_run(torch, ex16, s, x)[0]
            err16, err16_torch = _nanmax(err16, _rel(y, out)), _nanmax(err16_torch, _rel(out16, out))
            ref, ref16, y = classes_of(out), classes_of(out16), classes_of(y)
            agree += (y == ref).sum().item()
            agree16 += (ref16 == ref).sum().item()
            total += ref.numel()
        del ex16, e16
    row["fp32_max_rel"] = float(f"{max(errs):.3g}")
    row["agree16"], row["agree16_torch"], row["agree_n"] = agree, agree16, total
    row["f16_max_rel"], row["f16_max_rel_torch"] = float(f"{err16:.3g}"), float(f"{err16_torch:.3g}")
    row["sizes"] = [f"{hh}x{ww}" for hh, ww in sizes]
    _report(row)
    assert max(errs) <= FP32_MAX_REL, f"{name} fp32: max relative error {max(errs):.3g} > {FP32_MAX_REL}"
    # f16 as accurate as PyTorch's: its largest error (relative to the largest output)
    # within 1.25 times PyTorch's own on the same inputs (NaN where PyTorch's is NaN:
    # Swin V2's random-weight attention overflows f16 in both)...
    if err16_torch == err16_torch:
        assert err16 <= 1.25 * err16_torch + 1e-4, (f"{name} f16: max relative error {err16:.3g}, PyTorch's own "
                                                    f"{err16_torch:.3g}")
    # ...and as many top-1 matches as PyTorch f16, within chance: random weights leave
    # near-ties that either side's rounding flips on its own, so the two counts differ
    # by about the square root of the flips (two standard deviations allowed).
    flips = total - min(agree, agree16)
    slack = max(total // AGREE_N, int(2 * flips ** 0.5 + 0.999))
    assert agree >= agree16 - slack, (f"{name} f16: top-1 agreement {agree}/{total} below PyTorch fp16's "
                                      f"{agree16}/{total} less {slack}")


@pytest.mark.parametrize("name", _selected(_classifiers()))
def test_classifier(torch, tmp_path, name):
    import torchvision
    torch.manual_seed(SEED)
    size = 299 if name == "inception_v3" else 224  # its pools need 299 (75 at least)
    net = _randomize(torch, torchvision.models.get_model(name, weights=None), (16, 3, size, size))
    _check(torch, name, net, (3, size, size), tmp_path, lambda y: y.argmax(1))
    del net
    torch.cuda.empty_cache()


class _Out:  # the "out" entry of a segmentation model's dict, as a module for export
    @staticmethod
    def wrap(torch, net):
        class Out(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, x):
                return self.net(x)["out"]
        return Out()


@pytest.mark.parametrize("name", _selected(SEGMENTATION))
def test_segmentation(torch, tmp_path, name):
    import torchvision
    torch.manual_seed(SEED)
    net = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None, num_classes=21)
    net = _randomize(torch, _Out.wrap(torch, net), (8, 3, 256, 256))
    _check(torch, name, net, (3, 256, 256), tmp_path, lambda y: y.argmax(1))




@pytest.mark.parametrize("name", _selected(["yolo"]))
def test_yolo_detector_two_sizes(torch, tmp_path, name):
    torch.manual_seed(SEED)
    net = _randomize(torch, yolo_detector.yolo(torch), (8, 3, 320, 320))
    # per anchor, the best class
    _check(torch, name, net, (3, 320, 320), tmp_path, lambda y: y[:, 4:].argmax(1), dynamic_hw_sizes=DETECTOR_SIZES)


def _table(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("| model | params (M) | nodes | export (s) | load (s) | build fp32 (s) | build f16 (s) | fp32 max rel. "
          "error | f16 max rel. error: gaio | PyTorch f16 | f16 top-1 agreement: gaio | PyTorch f16 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | failed: {r['error'][:160]} |||||||||||")
            continue
        n = r["agree_n"]
        print(f"| {r['model']} | {r['params_M']} | {r['nodes']} | {r['export_s']} | {r['load_s']} | "
              f"{r['build32_s']} | {r['build16_s']} | {r['fp32_max_rel']:.2g} | {r.get('f16_max_rel', float('nan')):.2g} | "
              f"{r.get('f16_max_rel_torch', float('nan')):.2g} | {r['agree16'] / n:.1%} | "
              f"{r['agree16_torch'] / n:.1%} |")


if __name__ == "__main__":
    _table(sys.argv[1])
