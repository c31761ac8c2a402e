#!/usr/bin/python3
"""OpenCV's cv2.resize on seeded random images, for tests/image/test_resize.c.

Usage: golden_resize.py OUTDIR. The seed comes from GAIO_TEST_SEED (else the
clock) and is printed. Writes .npy inputs and expected outputs plus OUTDIR/cases.txt,
one case per line (interp as gaio_interp: 0 NEAREST, 1 NEAREST_EXACT, 2 LINEAR,
3 CUBIC, 4 AREA):

  resize   INTERP SRC WANT      SRC (H,W) | (H,W,C) | (N,H,W,C) HWC, WANT alike
  chw      INTERP SRC WANT      SRC (C,H,W) | (N,C,H,W), each plane resized alone
  crop     INTERP SRC WANT N x y w h ...          rois of the images of SRC (N,H,W,C)
  varshape INTERP WANT N SRC x y w h ...          SRC (H,W,C) each; roi "- - - -" = whole
"""
import os
import sys
import time

import numpy as np
import cv2

from golden_cv46 import require_cv46

INTERPS = [cv2.INTER_NEAREST, cv2.INTER_NEAREST_EXACT, cv2.INTER_LINEAR, cv2.INTER_CUBIC, cv2.INTER_AREA]
NAMES = ["nearest", "exact", "linear", "cubic", "area"]


def exact_index(src, dst, old):
    """INTER_NEAREST_EXACT's source index of each output (resizeNN_bitexact, 16.16 fixed point)."""
    step = ((src << 16) + dst // 2) // dst
    start = step // 2 - (1 if old else src % 2)
    return np.minimum((step * np.arange(dst, dtype=np.int64) + start) >> 16, src - 1)


# Older OpenCV 4 releases (4.6 here) start INTER_NEAREST_EXACT's walk one 1/65536 early on
# every axis, so where a pixel centre falls exactly on a source pixel edge of an
# even-sized axis (2x shrinking, say) it takes the pixel before; later OpenCV, PIL and
# CV-CUDA (and gaio) take the pixel after. Probe: 4 -> 2 reads pixel 0 under the old rule.
OLD_EXACT = cv2.resize(np.arange(4, dtype=np.uint8).reshape(1, 4), (2, 1),
                       interpolation=cv2.INTER_NEAREST_EXACT)[0, 0] == 0


def fix_exact(img, got, w, h):
    """cv2's old-rule result checked against the old rule's indices, then the same
    image sampled with the current rule: cv2 stays the reference for everything but
    the one documented difference."""
    sh, sw = img.shape[:2]
    old = img[exact_index(sh, h, True)][:, exact_index(sw, w, True)]
    assert np.array_equal(old.reshape(got.shape), got), "cv2's INTER_NEAREST_EXACT follows neither rule"
    return img[exact_index(sh, h, False)][:, exact_index(sw, w, False)].reshape(got.shape)


def main():
    out = sys.argv[1]
    require_cv46(cv2, out, "golden_resize")  # else: OUTDIR/SKIP, exit 0
    os.makedirs(out, exist_ok=True)
    env = os.environ.get("GAIO_TEST_SEED")
    seed = int(env, 0) if env else (int(time.time() * 1000) ^ os.getpid()) & 0xFFFFFFFF
    print(f"golden_resize: seed {seed} (set GAIO_TEST_SEED to replay)")
    if OLD_EXACT:
        print("golden_resize: this OpenCV's INTER_NEAREST_EXACT has the older tie rule; expecting the current one")
    rng = np.random.default_rng(seed)
    lines = []
    counter = [0]

    def save(arr):
        counter[0] += 1
        name = f"r{counter[0]:04d}.npy"
        np.save(os.path.join(out, name), np.ascontiguousarray(arr))
        return name

    def rand(shape, dtype):
        if dtype == np.uint8:
            a = rng.integers(0, 256, size=shape, dtype=np.uint8)
        elif dtype == np.uint16:
            a = rng.integers(0, 65536, size=shape, dtype=np.uint16)
        else:
            a = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
        a.flat[0] = 1  # never all zeros, even for 1x1
        return a

    def resize(img, w, h, interp):
        r = cv2.resize(img, (w, h), interpolation=INTERPS[interp])
        if img.ndim == 3 and r.ndim == 2:  # OpenCV drops a channel axis of 1
            r = r[:, :, None]
        if interp == 1 and OLD_EXACT:
            r = fix_exact(img, r, w, h)
        return r

    saved = {}

    def single(src, w, h, interps):
        if id(src) not in saved:
            saved[id(src)] = (save(src), src)  # keeps src alive so that ids stay unique
        s = saved[id(src)][0]
        for i in interps:
            lines.append(f"resize {i} {s} {save(resize(src, w, h, i))}")

    ALL = range(5)
    # sizes (w, h): the odd ones the brief names, each to several targets, up and down
    for dt in (np.uint8, np.uint16, np.float32):
        for c in (1, 3, 4):
            src = rand((1, 1, c) if c > 1 else (1, 1), dt)
            for (w, h) in ((1, 1), (5, 3), (2, 7)):
                single(src, w, h, ALL)
            src = rand((7, 3, c) if c > 1 else (7, 3), dt)
            for (w, h) in ((1, 1), (11, 9), (2, 5), (3, 7)):
                single(src, w, h, ALL)
    for dt, c in ((np.uint8, 3), (np.uint8, 1), (np.uint8, 4), (np.uint16, 3), (np.float32, 3), (np.float32, 1),
                  (np.uint16, 1), (np.uint8, 2)):
        src = rand((217, 333, c) if c > 1 else (217, 333), dt)
        if dt == np.uint8 and c == 3:
            targets = [(1, 1), (111, 72), (333, 217), (380, 250), (47, 430)]
        else:
            targets = [(111, 72), (47, 230)] + ([(340, 230)] if c == 1 else [])
        for (w, h) in targets:
            single(src, w, h, ALL)
    # the large image, u8 RGB and gray: a speed target's 224x224, and odd sizes
    for c, targets in ((3, [(427, 239), (224, 224), (31, 17), (1, 1)]), (1, [(480, 271), (100, 57), (1919, 1)])):
        src = rand((1077, 1919, c) if c > 1 else (1077, 1919), np.uint8)
        s = save(src)
        for (w, h) in targets:
            for i in ALL:
                lines.append(f"resize {i} {s} {save(resize(src, w, h, i))}")
    # uniform batches (N,H,W,C)
    for dt, c in ((np.uint8, 3), (np.float32, 1), (np.uint16, 4)):
        src = rand((3, 45, 61, c), dt)
        for i in ALL:
            want = np.stack([resize(src[n], 33, 20, i) for n in range(3)])
            lines.append(f"resize {i} {save(src)} {save(want)}")
    # CHW: each plane alone
    for dt in (np.uint8, np.float32, np.uint16):
        src = rand((2, 5, 37, 29), dt)
        s = save(src)
        for i in ALL:
            for (w, h) in ((13, 17), (45, 50)):
                want = np.stack([np.stack([resize(src[n, p], w, h, i) for p in range(5)]) for n in range(2)])
                lines.append(f"chw {i} {s} {save(want)}")
    # crop_resize: per-image rois against cv2 on the numpy slice
    for dt, c in ((np.uint8, 3), (np.float32, 1), (np.uint16, 1), (np.uint8, 4)):
        n = 4
        src = rand((n, 120, 150, c), dt)
        s = save(src)
        rois = [(0, 0, 150, 120), (17, 5, 33, 101), (149, 119, 1, 1), (40, 60, 97, 13)]
        for i in ALL:
            for (w, h) in ((64, 48), (9, 120)):
                want = np.stack([resize(src[k, y:y + rh, x:x + rw], w, h, i) for k, (x, y, rw, rh) in enumerate(rois)])
                r = " ".join(f"{x} {y} {rw} {rh}" for (x, y, rw, rh) in rois)
                lines.append(f"crop {i} {s} {save(want)} {n} {r}")
    # varshape: mixed sizes (some smaller than dst: AREA mixes box and enlarging)
    for dt, c in ((np.uint8, 3), (np.float32, 3), (np.uint16, 1), (np.uint8, 4)):
        shapes = [(50, 70), (9, 4), (150, 211), (64, 48), (1, 1), (123, 200)]
        srcs = [rand((h, w, c), dt) for (w, h) in shapes]
        names = [save(a) for a in srcs]
        rois = [None, (1, 1, 7, 2), (10, 20, 130, 150), None, None, (0, 140, 123, 57)]
        for i in ALL:
            for (w, h) in ((40, 48), (17, 30)):
                outs, desc = [], []
                for a, nm, roi in zip(srcs, names, rois):
                    if roi is None:
                        outs.append(resize(a, w, h, i))
                        desc.append(f"{nm} - - - -")
                    else:
                        x, y, rw, rh = roi
                        outs.append(resize(a[y:y + rh, x:x + rw], w, h, i))
                        desc.append(f"{nm} {x} {y} {rw} {rh}")
                lines.append(f"varshape {i} {save(np.stack(outs))} {len(srcs)} " + " ".join(desc))
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(out, x)) for x in os.listdir(out))
    print(f"golden_resize: {len(lines)} cases, {total / 1e6:.1f} MB in {out}")


if __name__ == "__main__":
    main()
