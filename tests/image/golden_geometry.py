#!/usr/bin/python3
"""Golden data for test_geometry: OpenCV's crop, copyMakeBorder, flip, rotate and
warpAffine on seeded random images.

usage: golden_geometry.py OUTDIR   (seed from GAIO_TEST_SEED, else the clock)

Writes caseNN_in.npy / caseNN_out.npy and manifest.txt, one case a line:
    <op> <in> <out> layout=<HWC|CHW> key=value ...
Arrays are 4-D: (N, H, W, C) for HWC, (N, C, H, W) for CHW. CHW cases run OpenCV
plane by plane (every op treats channels independently). f16 data moves through
OpenCV as its u16 bit patterns: these ops copy elements without reading them.
"""
import os
import sys
import time

import cv2
import numpy as np

from golden_cv46 import require_cv46

OUT = sys.argv[1]
require_cv46(cv2, OUT, "golden_geometry")  # else: OUTDIR/SKIP, exit 0
os.makedirs(OUT, exist_ok=True)
env = os.environ.get("GAIO_TEST_SEED")
SEED = int(env, 0) if env else (time.time_ns() & 0xFFFFFFFF) or 1
print("seed %d (set GAIO_TEST_SEED to replay)" % SEED, flush=True)
rng = np.random.default_rng(SEED)

DT = {"u8": np.uint8, "u16": np.uint16, "s16": np.int16, "f16": np.float16, "f32": np.float32}
BORDERS = {
    "constant": cv2.BORDER_CONSTANT,
    "replicate": cv2.BORDER_REPLICATE,
    "reflect": cv2.BORDER_REFLECT,
    "reflect101": cv2.BORDER_REFLECT_101,
    "wrap": cv2.BORDER_WRAP,
}
BORDER_CODE = {"constant": 0, "replicate": 1, "reflect": 2, "reflect101": 3, "wrap": 4}

manifest = []
total = 0


def rand_image(dt, n, h, w, c, layout):
    shape = (n, h, w, c) if layout == "HWC" else (n, c, h, w)
    if dt == "u8":
        a = rng.integers(0, 256, shape, dtype=np.uint8)
    elif dt == "u16":
        a = rng.integers(0, 65536, shape, dtype=np.uint16)
    elif dt == "s16":
        a = rng.integers(-32768, 32768, shape, dtype=np.int16)
    elif dt == "f16":
        a = rng.uniform(-60, 60, shape).astype(np.float16)
    else:
        a = rng.uniform(-2, 200, shape).astype(np.float32)
    if not a.any():
        a.flat[0] = 1
    return a


def planes(a, layout):
    """Each image of a batch as a list of 2-D or 3-D arrays OpenCV takes."""
    out = []
    for img in a:
        if layout == "CHW":
            out.append([np.ascontiguousarray(p) for p in img])
        else:
            out.append([img[:, :, 0].copy()] if img.shape[2] == 1 else [np.ascontiguousarray(img)])
    return out


def assemble(results, layout, c):
    imgs = []
    for per in results:
        if layout == "CHW":
            imgs.append(np.stack(per, axis=0))
        else:
            r = per[0]
            imgs.append(r[:, :, None] if r.ndim == 2 else r)
    return np.ascontiguousarray(np.stack(imgs, axis=0))


def as_cv(p):
    """f16 moves as its bits."""
    return p.view(np.uint16) if p.dtype == np.float16 else p


def from_cv(r, dt):
    return r.view(np.float16) if dt == "f16" else r


def apply(a, dt, layout, f):
    """f(plane_or_image, plane_index) on every image (and plane for CHW)."""
    res = []
    for per in planes(a, layout):
        res.append([from_cv(f(as_cv(p), k), dt) for k, p in enumerate(per)])
    return assemble(res, layout, a.shape[3] if layout == "HWC" else a.shape[1])


def save(op, a, b, layout, **kw):
    global total
    i = len(manifest)
    fin, fout = "case%02d_in.npy" % i, "case%02d_out.npy" % i
    np.save(os.path.join(OUT, fin), a)
    np.save(os.path.join(OUT, fout), b)
    total += a.nbytes + b.nbytes
    words = [op, fin, fout, "layout=" + layout] + ["%s=%s" % (k, v) for k, v in kw.items()]
    manifest.append(" ".join(words))


def fmt(v):
    return repr(float(v))


# ---- crop ----
def crop(dt, layout, n, w, h, c):
    a = rand_image(dt, n, h, w, c, layout)
    rw, rh = int(rng.integers(1, w + 1)), int(rng.integers(1, h + 1))
    x, y = int(rng.integers(0, w - rw + 1)), int(rng.integers(0, h - rh + 1))
    b = a[:, y:y + rh, x:x + rw, :] if layout == "HWC" else a[:, :, y:y + rh, x:x + rw]
    save("crop", a, np.ascontiguousarray(b), layout, x=x, y=y, w=rw, h=rh)


for args in [("u8", "HWC", 1, 333, 217, 3), ("u16", "CHW", 1, 3, 7, 3), ("f32", "HWC", 1, 1, 1, 1),
             ("s16", "HWC", 2, 33, 17, 4), ("f16", "HWC", 1, 29, 31, 2), ("u8", "HWC", 1, 41, 13, 6),
             ("u8", "HWC", 3, 7, 3, 1)]:
    crop(*args)


# ---- copyMakeBorder ----
def const_value(dt, v):
    """What OpenCV is handed for a constant: f16 as the bits of the rounded half."""
    if dt == "f16":
        return [int(np.float16(x).view(np.uint16)) for x in v]
    return [float(x) for x in v]


def border(dt, layout, n, w, h, c, btype, top, bottom, left, right, value=None):
    a = rand_image(dt, n, h, w, c, layout)
    code = BORDERS[btype]
    v = value if value is not None else [0.0, 0.0, 0.0, 0.0]
    cv = const_value(dt, v)

    def f(p, k):
        val = cv if layout == "HWC" else [cv[k] if k < 4 else 0] * 4
        return cv2.copyMakeBorder(p, top, bottom, left, right, code, value=val)

    b = apply(a, dt, layout, f)
    kw = dict(top=top, left=left, border=BORDER_CODE[btype])
    if value is not None:
        kw.update(v0=fmt(v[0]), v1=fmt(v[1]), v2=fmt(v[2]), v3=fmt(v[3]))
    save("border", a, b, layout, **kw)


border("u8", "HWC", 1, 333, 217, 3, "reflect101", 13, 22, 7, 9)
border("u8", "HWC", 1, 333, 217, 3, "constant", 5, 0, 40, 3, [37.5, 300.2, -5.5, 0])
border("f32", "HWC", 1, 3, 7, 4, "constant", 2, 3, 4, 5, [0.1, -2.75, 1e6, 7])
border("s16", "HWC", 2, 3, 7, 2, "constant", 1, 1, 1, 1, [-5.5, 40000, 0, 0])
border("f16", "HWC", 1, 3, 7, 1, "constant", 3, 0, 0, 2, [0.3333, 0, 0, 0])
border("u16", "CHW", 1, 17, 5, 3, "constant", 2, 2, 3, 1, [1.5, 2.5, 70000, 0])
border("u8", "HWC", 1, 3, 7, 1, "constant", 2, 2, 2, 2)  # value NULL: zeros
border("u8", "HWC", 1, 1, 1, 3, "reflect101", 5, 6, 7, 8)  # 1-pixel image: OpenCV takes pixel 0
border("f32", "HWC", 1, 1, 7, 1, "reflect101", 2, 3, 9, 4)
border("u8", "HWC", 1, 2, 3, 1, "reflect101", 11, 9, 13, 10)
border("u16", "HWC", 1, 3, 7, 3, "reflect", 20, 17, 23, 30)  # borders wider than the image
border("s16", "CHW", 1, 3, 7, 2, "wrap", 15, 16, 25, 19)
border("f16", "HWC", 1, 3, 7, 4, "replicate", 9, 30, 31, 2)
border("u8", "HWC", 1, 1, 1, 1, "wrap", 3, 4, 5, 6)
border("u8", "HWC", 1, 1, 1, 2, "reflect", 3, 2, 1, 4)
border("f32", "CHW", 2, 31, 19, 3, "reflect", 4, 5, 6, 7)
border("u8", "HWC", 1, 29, 23, 6, "reflect101", 8, 9, 10, 11)
border("u8", "HWC", 2, 64, 36, 3, "constant", 12, 12, 0, 0, [114, 114, 114, 0])  # letterbox

# ---- flip ----
FLIPS = {1: 1, 2: 0, 3: -1}  # gaio mode -> cv2 flipCode


def flip(dt, layout, n, w, h, c, mode):
    a = rand_image(dt, n, h, w, c, layout)
    b = apply(a, dt, layout, lambda p, k: cv2.flip(p, FLIPS[mode]))
    save("flip", a, b, layout, mode=mode)


for mode in (1, 2, 3):
    flip("u8", "HWC", 1, 333, 217, 3, mode)
flip("f32", "HWC", 1, 3, 7, 1, 1)
flip("u16", "CHW", 1, 217, 33, 4, 3)
flip("f16", "HWC", 1, 1, 1, 3, 1)
flip("s16", "HWC", 3, 7, 3, 2, 1)
flip("u8", "HWC", 1, 37, 5, 6, 3)
flip("u8", "HWC", 2, 333, 7, 1, 1)
flip("f32", "HWC", 1, 129, 3, 4, 1)

# ---- rotate ----
ROT = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}


def rotate(dt, layout, n, w, h, c, deg):
    a = rand_image(dt, n, h, w, c, layout)
    b = apply(a, dt, layout, lambda p, k: cv2.rotate(p, ROT[deg]))
    save("rotate", a, b, layout, deg=deg)


rotate("u8", "HWC", 1, 1919, 1077, 3, 90)  # the large case
rotate("f32", "HWC", 1, 333, 217, 1, 270)
rotate("u16", "HWC", 1, 3, 7, 4, 180)
rotate("f16", "CHW", 1, 33, 17, 3, 90)
rotate("u8", "HWC", 1, 1, 1, 1, 90)
rotate("s16", "HWC", 2, 3, 7, 2, 270)
rotate("u8", "HWC", 1, 71, 45, 6, 90)
rotate("u8", "HWC", 1, 217, 333, 1, 270)
rotate("u8", "HWC", 1, 67, 131, 3, 180)
rotate("f32", "HWC", 1, 37, 29, 3, 90)
rotate("u16", "CHW", 2, 65, 31, 2, 270)


# ---- warpAffine ----
def rand_matrix(w, h, dw, dh):
    ang = rng.uniform(-180, 180)
    sc = rng.uniform(0.5, 1.6)
    m = cv2.getRotationMatrix2D((w / 2.0, h / 2.0), ang, sc)
    m[0, 2] += (dw - w) / 2.0 + rng.uniform(-3, 3)
    m[1, 2] += (dh - h) / 2.0 + rng.uniform(-3, 3)
    return m


def warp(dt, layout, n, w, h, c, dw, dh, interp, inverse, m=None, value=None):
    a = rand_image(dt, n, h, w, c, layout)
    if dt == "f32":
        a = np.abs(a)
    if m is None:
        m = rand_matrix(w, h, dw, dh)
    m = np.asarray(m, dtype=np.float64).reshape(2, 3)
    flags = (cv2.INTER_LINEAR if interp == 2 else cv2.INTER_NEAREST) | (cv2.WARP_INVERSE_MAP if inverse else 0)
    v = value if value is not None else [0.0, 0.0, 0.0, 0.0]

    def f(p, k):
        val = v if layout == "HWC" else [v[k] if k < 4 else 0] * 4
        return cv2.warpAffine(p, m, (dw, dh), flags=flags, borderMode=cv2.BORDER_CONSTANT, borderValue=val)

    b = apply(a, dt, layout, f)
    kw = dict(interp=interp, flags=int(inverse))
    for i, x in enumerate(m.flatten()):
        kw["m%d" % i] = fmt(x)
    if value is not None:
        kw.update(v0=fmt(v[0]), v1=fmt(v[1]), v2=fmt(v[2]), v3=fmt(v[3]))
    save("warp", a, b, layout, **kw)


LIN, NN = 2, 0
warp("u8", "HWC", 1, 333, 217, 3, 301, 250, LIN, False, value=[10.25, 200, 255.5, 0])
warp("u8", "HWC", 1, 1919, 1077, 1, 1077, 1919, LIN, False)  # the large case
warp("u8", "HWC", 1, 333, 217, 4, 333, 217, NN, False, value=[1, 2, 3, 4])
warp("u8", "HWC", 1, 217, 333, 1, 200, 180, NN, True)
warp("u8", "HWC", 1, 333, 217, 3, 333, 217, LIN, True)
warp("u8", "HWC", 1, 41, 23, 1, 41, 23, LIN, False, m=[1, 0, 0.5, 0, 1, -0.25])
warp("u8", "HWC", 1, 41, 23, 3, 45, 27, LIN, False, m=[1, 0, 1.0 / 64, 0, 1, 3.0 / 64])
warp("u8", "HWC", 1, 41, 23, 1, 50, 30, LIN, False, m=[0.3, 0.7, -3.3, -0.6, 0.9, 5.1])
warp("u8", "HWC", 1, 1, 1, 3, 5, 4, LIN, False, m=[2.5, 0, 0.7, 0, 2.5, 0.3], value=[9, 8, 7, 0])
warp("u8", "HWC", 1, 3, 7, 1, 9, 11, LIN, True, m=[0.37, 0.05, -0.4, -0.02, 0.71, -1.2])
warp("u8", "HWC", 2, 37, 29, 2, 30, 40, LIN, False)
warp("u8", "CHW", 1, 57, 43, 3, 60, 40, LIN, False, value=[5, 6, 7, 0])
warp("u16", "HWC", 1, 217, 133, 1, 200, 150, LIN, False)
warp("u16", "HWC", 1, 71, 53, 3, 71, 53, NN, False, value=[1000.5, 65535, 70000, 0])
warp("u16", "CHW", 1, 33, 17, 2, 40, 20, LIN, True, m=[0.8, 0.1, -2.0, 0.05, 0.9, 1.5])
warp("f32", "HWC", 1, 217, 133, 1, 210, 120, LIN, False, value=[0.5, 0, 0, 0])
warp("f32", "HWC", 1, 67, 45, 4, 60, 50, LIN, True, m=[1.1, -0.2, 3.0, 0.15, 0.95, -2.0])
warp("f32", "CHW", 1, 45, 31, 3, 40, 36, LIN, False, value=[1.25, -3, 7, 0])
warp("f32", "HWC", 1, 3, 7, 3, 8, 8, NN, False)

with open(os.path.join(OUT, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
print("%d cases, %.1f MB" % (len(manifest), total / 1e6))
