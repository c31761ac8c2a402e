"""Golden data for tests/image/test_preprocess.c: OpenCV's resize of each ROI in
float32 from the u8 source, then swap and (v * scale - mean) / std in float64.

    python3 golden_preprocess.py OUTDIR

Seed from GAIO_TEST_SEED (else the clock), printed. Writes src_*.npy (u8 batches,
N x H x W x C), want_*.npy (f32 or f16, N x 3 x H x W for chw, N x H x W x 3 for hwc)
and manifest.txt, one case per block:

    case NAME KIND INTERP SWAP SCALE M0 M1 M2 S0 S1 S2 DTYPE LAYOUT DW DH N USE_ROIS WANT
    img FILE INDEX X Y W H        (N lines: image INDEX of FILE, its ROI)

KIND u: one gaio_preprocess over the batch in FILE (every img line names it);
KIND v: gaio_preprocess_varshape, each img line its own file. USE_ROIS 0: the ROIs
are the whole images and the test passes rois = NULL.
F16 wants are the f32 reference rounded to f16."""
import os
import sys
import time

import cv2
import numpy as np

from golden_cv46 import require_cv46

# OpenCV's own resize code: wheels built with Intel IPP hand float LINEAR downscales
# to IPP, whose weights differ from OpenCV's by up to ~1e-5 of the value range.
try:
    cv2.ipp.setUseIPP(False)
except AttributeError:
    pass

out = sys.argv[1]
require_cv46(cv2, out, "golden_preprocess")  # else: OUTDIR/SKIP, exit 0
os.makedirs(out, exist_ok=True)
seed = int(os.environ.get("GAIO_TEST_SEED", "0"), 0) or (int(time.time() * 1000) & 0xFFFFFFFF)
seed &= 0xFFFFFFFF
ipp = cv2.ipp.useIPP() if hasattr(cv2, "ipp") else False
print(f"seed {seed} (set GAIO_TEST_SEED to replay); cv2 {cv2.__version__} (IPP {ipp}), numpy {np.__version__}")
rng = np.random.default_rng(seed)

INTERP = {"linear": cv2.INTER_LINEAR, "area": cv2.INTER_AREA}
IMAGENET = (1 / 255, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
manifest = []
written = {}


def image(h, w, c, n=1):
    a = rng.integers(0, 256, size=(n, h, w, c), dtype=np.uint8)
    a.flat[0] = 1 + a.flat[0] % 255  # never all zeros
    return a


def save(name, arr):
    np.save(os.path.join(out, name), arr)
    written[name] = arr
    return name


def reference(img, roi, dw, dh, interp, swap, scale, mean, std, dtype, layout):
    x, y, w, h = roi
    r = np.ascontiguousarray(img[y:y + h, x:x + w, :3]).astype(np.float32)
    v = cv2.resize(r, (dw, dh), interpolation=INTERP[interp])
    v = v.reshape(dh, dw, 3)
    if swap:
        v = v[:, :, ::-1]
    o = (v.astype(np.float64) * scale - np.asarray(mean[:3], np.float64)) / np.asarray(std[:3], np.float64)
    o = o.astype(np.float32)
    if layout == "chw":
        o = o.transpose(2, 0, 1)
    return o.astype(np.float16) if dtype == "f16" else o


def case(name, kind, interp, swap, norm, dtype, layout, dw, dh, items, use_rois=True):
    """items: (file, index, roi or None) per image."""
    scale, mean, std = norm
    mean = list(mean) + [0.0] * (4 - len(mean))
    std = list(std) + [1.0] * (4 - len(std))
    wants, lines = [], []
    for f, i, roi in items:
        img = written[f][i]
        roi = roi or (0, 0, img.shape[1], img.shape[0])
        wants.append(reference(img, roi, dw, dh, interp, swap, scale, mean, std, dtype, layout))
        lines.append("img %s %d %d %d %d %d" % (f, i, *roi))
    want = save(f"want_{name}.npy", np.stack(wants))
    manifest.append("case %s %s %s %d %.9g %.9g %.9g %.9g %.9g %.9g %.9g %s %s %d %d %d %d %s" % (
        name, kind, interp, int(swap), scale, *mean[:3], *std[:3], dtype, layout, dw, dh, len(items), int(use_rois),
        want))
    manifest.extend(lines)


def rand_roi(h, w):
    rw, rh = int(rng.integers(1, w + 1)), int(rng.integers(1, h + 1))
    return (int(rng.integers(0, w - rw + 1)), int(rng.integers(0, h - rh + 1)), rw, rh)


# Single pixels and tiny images: both filters, enlarging from 1x1.
save("src_1x1.npy", image(1, 1, 3))
case("one_px_linear", "u", "linear", False, IMAGENET, "f32", "chw", 5, 3, [("src_1x1.npy", 0, None)], False)
case("one_px_area", "u", "area", True, IMAGENET, "f32", "hwc", 1, 1, [("src_1x1.npy", 0, None)], False)
save("src_3x7.npy", image(7, 3, 3))  # 3 wide, 7 high
case("s3x7_linear_up", "u", "linear", True, IMAGENET, "f32", "chw", 8, 11, [("src_3x7.npy", 0, None)], False)
case("s3x7_area_mixed", "u", "area", False, IMAGENET, "f32", "hwc", 5, 4, [("src_3x7.npy", 0, None)], False)

# 217x333 batches: ROIs, 4 channels, swap, both layouts, f16, AREA shrinking and enlarging.
save("src_217x333.npy", image(333, 217, 3, 2))
save("src_217x333_rgba.npy", image(333, 217, 4, 2))
rois = [rand_roi(333, 217) for _ in range(2)]
case("s217_linear_roi_f16", "u", "linear", False, IMAGENET, "f16", "chw", 64, 48,
     [("src_217x333.npy", i, rois[i]) for i in range(2)])
case("s217_linear_hwc_swap", "u", "linear", True, (1.0, (123.675, 116.28, 103.53), (58.395, 57.12, 57.375)), "f32",
     "hwc", 101, 149, [("src_217x333.npy", i, None) for i in range(2)], False)
case("s217_area_shrink_rgba", "u", "area", True, IMAGENET, "f32", "chw", 50, 70,
     [("src_217x333_rgba.npy", i, (5 + i, 9, 200 - i, 311)) for i in range(2)])
case("s217_area_int_scale", "u", "area", False, (0.5, (10, -3, 7), (-2.0, 0.25, 3.0)), "f32", "chw", 31, 37,
     [("src_217x333.npy", i, None) for i in range(2)], False)
case("s217_area_enlarge_rgba_f16", "u", "area", False, IMAGENET, "f16", "hwc", 260, 400,
     [("src_217x333_rgba.npy", i, rois[i]) for i in range(2)])
case("s217_linear_same_size", "u", "linear", False, IMAGENET, "f32", "chw", 217, 333,
     [("src_217x333.npy", 1, None)], False)

# One large odd frame, the benchmark's shapes.
save("src_1919x1077.npy", image(1077, 1919, 3))
case("big_linear_224", "u", "linear", False, IMAGENET, "f32", "chw", 224, 224, [("src_1919x1077.npy", 0, None)], False)
case("big_area_224_roi", "u", "area", True, IMAGENET, "f16", "chw", 224, 224,
     [("src_1919x1077.npy", 0, (3, 1, 1913, 1075))])

# Varshape: mixed sizes, own files, some ROIs.
sizes = [(1, 1), (7, 3), (30, 40), (333, 217), (61, 100), (480, 640), (45, 1)]
vfiles = []
for k, (h, w) in enumerate(sizes):
    vfiles.append(save(f"src_var{k}.npy", image(h, w, 3)))
vitems = []
for k, (h, w) in enumerate(sizes):
    vitems.append((vfiles[k], 0, rand_roi(h, w) if k % 2 else (0, 0, w, h)))
case("var_linear", "v", "linear", False, IMAGENET, "f32", "chw", 48, 40, vitems)
case("var_area_f16_hwc", "v", "area", True, IMAGENET, "f16", "hwc", 24, 20, vitems)
case("var_area_whole", "v", "area", False, IMAGENET, "f32", "chw", 16, 12, [(f, 0, None) for f in vfiles], False)

with open(os.path.join(out, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
total = sum(a.nbytes for a in written.values())
print(f"{sum(1 for m in manifest if m.startswith('case'))} cases, {total / 1e6:.1f} MB in {out}")
