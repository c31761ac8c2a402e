#!/usr/bin/python3
"""Golden data for tests/image/test_convert.c: gaio_convert, gaio_normalize, gaio_reformat.

Usage: golden_convert.py OUTDIR   (seed from GAIO_TEST_SEED, else the clock; printed)

The reference is numpy in float64: convertTo's rule is saturate(round_half_even(v *
scale + offset)), which is np.clip(np.rint(...)); normalize is (v * scale - mean) /
std; reformat is a transpose. OpenCV is a second opinion where its Python binding
can say the same thing: cv2.addWeighted(src, scale, 0, 0, offset, dtype) computes
convertTo's result for every depth but f16, cv2.split / cv2.merge reformat. Those
checks run here (the script fails if OpenCV disagrees) and are skipped without cv2 or
with an OpenCV other than 4.6 (golden_cv46.py: the semantics gaio follows); the numpy
data is written either way.

Writes OUTDIR/<id>.src.npy, OUTDIR/<id>.dst.npy and OUTDIR/cases.txt, one case a line:
  convert   ID SRC_DTYPE DST_DTYPE LAYOUT BATCH W H C SCALE OFFSET
  normalize ID SRC_DTYPE DST_DTYPE LAYOUT BATCH W H C SCALE MEAN[C] STD[C]
  reformat  ID DTYPE SRC_LAYOUT BATCH W H C
Arrays are (N, H, W, C) for HWC and (N, C, H, W) for CHW.
"""
import os
import sys
import time

import numpy as np

from golden_cv46 import is_reference

try:
    import cv2
except ImportError:  # the numpy reference stands on its own
    cv2 = None
CV_NOTE = "no cv2: numpy only"
if cv2 is not None and not is_reference(cv2.__version__):
    CV_NOTE = "OpenCV %s is not 4.6: numpy only, no second opinion from it" % cv2.__version__
    cv2 = None

DT = {"u8": np.uint8, "u16": np.uint16, "s16": np.int16, "f16": np.float16, "f32": np.float32}
INT_RANGE = {"u8": (0, 255), "u16": (0, 65535), "s16": (-32768, 32767)}
CV_DEPTH = {"u8": 0, "u16": 2, "s16": 3, "f32": 5}  # CV_8U, CV_16U, CV_16S, CV_32F


def shape_of(layout, n, w, h, c):
    return (n, h, w, c) if layout == "HWC" else (n, c, h, w)


def rand_array(rng, dt, shape, lo=-1000.0, hi=1000.0, halves=False):
    """Random values of dtype dt, never all zeros. Integers span the whole range;
    floats span [lo, hi), with a quarter of them k + 0.5 when `halves` (ties for the
    rounding to even)."""
    if dt in INT_RANGE:
        a, b = INT_RANGE[dt]
        v = rng.integers(a, b + 1, size=shape, dtype=np.int64)
    else:
        v = rng.uniform(lo, hi, size=shape)
        if halves:
            ties = rng.random(size=shape) < 0.25
            v = np.where(ties, np.floor(v) + 0.5, v)
    v = v.astype(DT[dt])
    if not np.any(v):
        v.flat[0] = 1
    return v


def to_dtype(y, dt):
    """float64 -> dtype: round half to even and saturate for integers (cvRound,
    saturate_cast), round to nearest for floats."""
    if dt in INT_RANGE:
        a, b = INT_RANGE[dt]
        return np.clip(np.rint(y), a, b).astype(DT[dt])
    with np.errstate(over="ignore"):
        return y.astype(DT[dt])


# Source ranges of float inputs that make each destination saturate on both sides
# (and stay finite in f16: infinities would not compare).
FLOAT_RANGE = {"u8": (-40.0, 300.0), "u16": (-2000.0, 70000.0), "s16": (-40000.0, 40000.0),
               "f16": (-30000.0, 30000.0), "f32": (-1000.0, 1000.0)}

# The pairs that get a large image; the rest use small odd sizes.
COMMON = {("u8", "f32"), ("f32", "u8"), ("f32", "f16"), ("f16", "f32"), ("u8", "u8")}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: golden_convert.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    env = os.environ.get("GAIO_TEST_SEED")
    seed = int(env, 0) if env else (int(time.time() * 1000) & 0xFFFFFFFF)
    print("seed %d (set GAIO_TEST_SEED to replay)" % seed)
    rng = np.random.default_rng(seed)
    lines = []
    cv_checked = 0

    def save(cid, src, dst):
        np.save(os.path.join(out, cid + ".src.npy"), np.ascontiguousarray(src))
        np.save(os.path.join(out, cid + ".dst.npy"), np.ascontiguousarray(dst))

    # ---- convert: every pair, plain and scaled ----
    small = [("HWC", 1, 1, 1, 1), ("CHW", 2, 3, 7, 3), ("HWC", 1, 17, 5, 4), ("HWC", 3, 7, 3, 1),
             ("CHW", 1, 31, 9, 4), ("HWC", 2, 13, 11, 3)]
    k = 0
    for sd in DT:
        for dd in DT:
            for plain in (True, False):
                if (sd, dd) in COMMON:
                    geo = ("HWC", 1, 217, 333, 3) if k % 2 else ("CHW", 2, 217, 111, 3)
                else:
                    geo = small[k % len(small)]
                layout, n, w, h, c = geo
                if plain:
                    scale, offset = 1.0, 0.0
                elif (sd, dd) == ("u8", "f32"):
                    scale, offset = 1.0 / 255.0, 0.0
                elif (sd, dd) == ("f32", "u8"):
                    scale, offset = 255.0, 0.5
                else:
                    scale = float(rng.uniform(0.25, 2.0)) * (1 if rng.random() < 0.75 else -1)
                    offset = float(rng.uniform(-100.0, 100.0))
                lo, hi = FLOAT_RANGE[dd]
                if not plain and dd in FLOAT_RANGE:  # keep the scaled result in the same range
                    lo, hi = sorted(((lo - offset) / scale, (hi - offset) / scale))
                if sd == "f16":
                    lo, hi = max(lo, -60000.0), min(hi, 60000.0)
                if (sd, dd) == ("f32", "u8") and not plain:
                    lo, hi = -0.2, 1.2
                src = rand_array(rng, sd, shape_of(layout, n, w, h, c), lo, hi, halves=plain)
                y = src.astype(np.float64) * scale + offset
                if dd == "f16":  # keep clear of f16's infinities (inf - inf does not compare)
                    src = np.where(np.abs(y) > 60000.0, np.zeros_like(src), src)
                    if not np.any(src):
                        src.flat[0] = 1
                    y = src.astype(np.float64) * scale + offset
                want = to_dtype(y, dd)
                if cv2 is not None and sd in CV_DEPTH and dd in CV_DEPTH:
                    flat = src.reshape(-1, src.shape[-1])  # a single-channel 2-D Mat
                    got = cv2.addWeighted(flat, scale, np.zeros_like(flat), 0.0, offset, dtype=CV_DEPTH[dd])
                    d = np.abs(got.reshape(-1).astype(np.float64) - want.reshape(-1).astype(np.float64))
                    tol = 1.0 if dd in INT_RANGE else 1e-5 * (np.abs(want.astype(np.float64)).max() + 1.0)
                    if d.max() > tol:
                        sys.exit("convert %s->%s scale %r offset %r: OpenCV differs from numpy by %g"
                                 % (sd, dd, scale, offset, d.max()))
                    cv_checked += 1
                cid = "c%02d" % k
                save(cid, src, want)
                lines.append("convert %s %s %s %s %d %d %d %d %.17g %.17g" % (cid, sd, dd, layout, n, w, h, c,
                                                                               scale, offset))
                k += 1

    # ---- normalize ----
    tv_mean, tv_std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    norm_cases = [
        ("u8", "f32", "HWC", 1, 217, 333, 3, 1.0 / 255.0, tv_mean, tv_std),
        ("u8", "f16", "HWC", 2, 63, 31, 3, 1.0 / 255.0, tv_mean, tv_std),
        ("u8", "f32", "CHW", 2, 37, 19, 3, 1.0, [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]),
        ("u8", "f32", "HWC", 1, 1, 1, 1, 1.0 / 255.0, [0.5], [0.5]),
        ("u16", "f32", "HWC", 1, 29, 17, 4, 1.0 / 65535.0, [0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]),
        ("s16", "f16", "CHW", 3, 21, 13, 1, 0.001, [-1.5], [4.0]),
        ("f16", "f32", "HWC", 1, 33, 7, 3, 1.0, [10.0, -20.0, 30.0], [100.0, 200.0, -300.0]),
        ("f32", "f16", "HWC", 2, 19, 23, 4, 2.0, [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 8.0, 16.0]),
        ("f32", "f32", "CHW", 1, 45, 17, 3, 0.5, [0.0, 1.0, -1.0], [1.0, 0.25, 3.0]),
        ("u8", "f32", "HWC", 1, 11, 9, 7, 1.0 / 255.0, [0.1 * i for i in range(7)], [0.2 + 0.1 * i for i in range(7)]),
        ("u16", "f16", "CHW", 1, 15, 6, 5, 1.0 / 4096.0, [0.5] * 5, [1.0, 2.0, 3.0, 4.0, 5.0]),
        ("u8", "f32", "CHW", 2, 3, 7, 3, 1.0 / 255.0, tv_mean, tv_std),
    ]
    for i, (sd, dd, layout, n, w, h, c, scale, mean, std) in enumerate(norm_cases):
        scale = float(np.float32(scale))
        mean = np.array(mean, dtype=np.float32)
        std = np.array(std, dtype=np.float32)
        src = rand_array(rng, sd, shape_of(layout, n, w, h, c), -1000.0, 1000.0)
        cshape = (1, 1, 1, c) if layout == "HWC" else (1, c, 1, 1)
        y = (src.astype(np.float64) * scale - mean.astype(np.float64).reshape(cshape)) / std.astype(np.float64).reshape(cshape)
        want = to_dtype(y, dd)
        cid = "n%02d" % i
        save(cid, src, want)
        lines.append("normalize %s %s %s %s %d %d %d %d %.9g %s %s" % (
            cid, sd, dd, layout, n, w, h, c, scale, " ".join("%.9g" % v for v in mean),
            " ".join("%.9g" % v for v in std)))

    # ---- reformat ----
    ref_cases = []
    geos = [(1, 217, 333), (2, 3, 7), (1, 1, 1), (3, 17, 5), (1, 64, 9), (2, 31, 2)]
    j = 0
    for dt in DT:
        for c in (1, 2, 3, 4, 5):
            for srcl in ("HWC", "CHW"):
                n, w, h = geos[j % len(geos)]
                if (n, w, h) == (1, 217, 333) and dt not in ("u8", "f32") or c not in (3, 4) and w == 217:
                    n, w, h = 1, 41, 23
                ref_cases.append((dt, srcl, n, w, h, c))
                j += 1
    for i, (dt, srcl, n, w, h, c) in enumerate(ref_cases):
        src = rand_array(rng, dt, shape_of(srcl, n, w, h, c))
        want = np.transpose(src, (0, 3, 1, 2)) if srcl == "HWC" else np.transpose(src, (0, 2, 3, 1))
        if cv2 is not None and dt != "f16":
            for b in range(n):
                if srcl == "HWC":
                    got = np.stack(cv2.split(np.ascontiguousarray(src[b])), axis=0)
                else:
                    got = cv2.merge([np.ascontiguousarray(src[b, ch]) for ch in range(c)]).reshape(h, w, c)
                if not np.array_equal(got, want[b]):
                    sys.exit("reformat %s %s c%d: OpenCV's split/merge differs from the transpose" % (dt, srcl, c))
            cv_checked += 1
        cid = "r%02d" % i
        save(cid, src, want)
        lines.append("reformat %s %s %s %d %d %d %d" % (cid, dt, srcl, n, w, h, c))

    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d cases in %s (%s)" % (len(lines), out,
          "%d checked against OpenCV %s" % (cv_checked, cv2.__version__) if cv2 is not None else CV_NOTE))


if __name__ == "__main__":
    main()
