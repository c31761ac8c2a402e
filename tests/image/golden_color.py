#!/usr/bin/python3
"""Golden data for tests/image/test_color.c (gaio_cvt_color).

Usage: golden_color.py OUTDIR. The seed comes from GAIO_TEST_SEED (else the
clock) and is printed. Writes random inputs and OpenCV's cvtColor results as .npy
files, and OUTDIR/manifest.txt, one case per line:

    name code yuv layout src.npy dst.npy abs_tol rel_tol

code and yuv are gaio_color / gaio_yuv values; layout is hwc, nv12 or i420.
HWC arrays are (N, H, W, C); a YUV src is (N, H * 3 / 2, W), OpenCV's packed
frame (Y plane, then the chroma plane(s)); its dst is (N, H, W, C) u8.

BT601_LIMITED YUV is OpenCV's COLOR_YUV2RGB_NV12 / _I420 (and the BGR / RGBA /
BGRA variants). BT601_FULL, BT709_LIMITED and BT709_FULL have no OpenCV code:
their expected outputs come from the standard formulas in float64 (yuv_formula).
"""
import os
import sys
import time

import numpy as np
import cv2

from golden_cv46 import require_cv46

# gaio_color
SWAP_RB, RGB2GRAY, BGR2GRAY, GRAY2RGB, RGB2RGBA, RGBA2RGB, RGB2BGRA, RGBA2BGR, YUV2RGB, YUV2BGR = range(1, 11)
# gaio_yuv
BT601_LIMITED, BT601_FULL, BT709_LIMITED, BT709_FULL = range(4)

# (gaio code, src channels, dst channels) -> OpenCV code
CV_CODES = {
    (SWAP_RB, 3, 3): cv2.COLOR_RGB2BGR,
    (SWAP_RB, 4, 4): cv2.COLOR_RGBA2BGRA,
    (RGB2GRAY, 3, 1): cv2.COLOR_RGB2GRAY,
    (RGB2GRAY, 4, 1): cv2.COLOR_RGBA2GRAY,
    (BGR2GRAY, 3, 1): cv2.COLOR_BGR2GRAY,
    (BGR2GRAY, 4, 1): cv2.COLOR_BGRA2GRAY,
    (GRAY2RGB, 1, 3): cv2.COLOR_GRAY2RGB,
    (GRAY2RGB, 1, 4): cv2.COLOR_GRAY2RGBA,
    (RGB2RGBA, 3, 4): cv2.COLOR_RGB2RGBA,
    (RGBA2RGB, 4, 3): cv2.COLOR_RGBA2RGB,
    (RGB2BGRA, 3, 4): cv2.COLOR_RGB2BGRA,
    (RGBA2BGR, 4, 3): cv2.COLOR_RGBA2BGR,
}
GRAY_CODES = (RGB2GRAY, BGR2GRAY)

CV_YUV = {
    ("nv12", YUV2RGB, 3): cv2.COLOR_YUV2RGB_NV12,
    ("nv12", YUV2BGR, 3): cv2.COLOR_YUV2BGR_NV12,
    ("nv12", YUV2RGB, 4): cv2.COLOR_YUV2RGBA_NV12,
    ("nv12", YUV2BGR, 4): cv2.COLOR_YUV2BGRA_NV12,
    ("i420", YUV2RGB, 3): cv2.COLOR_YUV2RGB_I420,
    ("i420", YUV2BGR, 3): cv2.COLOR_YUV2BGR_I420,
    ("i420", YUV2RGB, 4): cv2.COLOR_YUV2RGBA_I420,
    ("i420", YUV2BGR, 4): cv2.COLOR_YUV2BGRA_I420,
}

DTYPES = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}


def seed_from_env():
    env = os.environ.get("GAIO_TEST_SEED")
    s = int(env, 0) if env else int(time.time() * 1e6)
    return (s % (1 << 64)) or 1


def rand_image(rng, dt, shape):
    if dt == "f32":
        a = rng.random(shape, dtype=np.float32)
    else:
        a = rng.integers(0, np.iinfo(DTYPES[dt]).max, shape, dtype=DTYPES[dt], endpoint=True)
    a.reshape(-1)[0] = 1  # never all zeros
    return a


def yuv_formula(Y, U, V, yuv):
    """R'G'B' (u8) from Y'CbCr planes (Y: HxW, U, V: H/2 x W/2, each sample of U, V
    covering a 2x2 block of Y) in float64, rounded and clipped.

    Luma/colour-difference matrix (ITU-R BT.601-7 Item 2.5.1, ITU-R BT.709-6 Item 3.2):
        E'Y = Kr E'R + Kg E'G + Kb E'B,  E'Pb = (E'B - E'Y) / (2 (1 - Kb)),
        E'Pr = (E'R - E'Y) / (2 (1 - Kr)),  Kg = 1 - Kr - Kb,
        BT.601: Kr = 0.299, Kb = 0.114;  BT.709: Kr = 0.2126, Kb = 0.0722;
    inverted: R = Y' + 2 (1 - Kr) Pr,  B = Y' + 2 (1 - Kb) Pb,
              G = Y' - 2 Kb (1 - Kb) / Kg Pb - 2 Kr (1 - Kr) / Kg Pr.
    Quantisation, 8 bits:
        limited ("video") range, BT.601-7 Item 2.5.3 and BT.709-6 Item 3.4:
            Y = 219 E'Y + 16,  Cb = 224 E'Pb + 128,  Cr = 224 E'Pr + 128;
        full range: JPEG File Interchange Format 1.02 (ITU-T T.871) for BT.601,
            Y = 255 E'Y,  Cb = 255 E'Pb + 128 (R = Y + 1.402 (Cr - 128), ...), and the
            same for BT.709 (ITU-T H.273 VideoFullRangeFlag = 1).
    """
    bt709 = yuv in (BT709_LIMITED, BT709_FULL)
    full = yuv in (BT601_FULL, BT709_FULL)
    kr, kb = (0.2126, 0.0722) if bt709 else (0.299, 0.114)
    kg = 1.0 - kr - kb
    u = np.repeat(np.repeat(U.astype(np.float64), 2, 0), 2, 1)
    v = np.repeat(np.repeat(V.astype(np.float64), 2, 0), 2, 1)
    y = Y.astype(np.float64)
    if full:
        ey, pb, pr = y / 255.0, (u - 128.0) / 255.0, (v - 128.0) / 255.0
    else:
        ey, pb, pr = (y - 16.0) / 219.0, (u - 128.0) / 224.0, (v - 128.0) / 224.0
    r = ey + 2 * (1 - kr) * pr
    g = ey - 2 * kb * (1 - kb) / kg * pb - 2 * kr * (1 - kr) / kg * pr
    b = ey + 2 * (1 - kb) * pb
    rgb = np.stack([r, g, b], -1) * 255.0
    return np.clip(np.floor(rgb + 0.5), 0, 255).astype(np.uint8)


def main():
    out = sys.argv[1]
    require_cv46(cv2, out, "golden_color")  # else: OUTDIR/SKIP, exit 0
    os.makedirs(out, exist_ok=True)
    seed = seed_from_env()
    print("seed %d (set GAIO_TEST_SEED to replay)" % seed)
    rng = np.random.default_rng(seed)
    manifest = []
    inputs = {}

    def save(name, arr):
        np.save(os.path.join(out, name), np.ascontiguousarray(arr))
        return name

    def hwc_input(dt, n, w, h, c):
        # inputs are shared by the cases of the same shape, to keep the data small
        key = (dt, n, w, h, c)
        if key not in inputs:
            a = rand_image(rng, dt, (n, h, w, c))
            inputs[key] = (a, save("in_%s_n%d_%dx%d_c%d.npy" % key, a))
        return inputs[key]

    # ---- RGB <-> BGR, alpha, gray --------------------------------------------
    def hwc_case(dt, code, scn, dcn, n, w, h):
        src, sname = hwc_input(dt, n, w, h, scn)
        cv = CV_CODES[(code, scn, dcn)]
        imgs = [np.ascontiguousarray(src[i] if scn > 1 else src[i][:, :, 0]) for i in range(n)]
        dst = np.stack([cv2.cvtColor(p, cv).reshape(h, w, dcn) for p in imgs])
        name = "%s_c%d_c%d_%s_n%d_%dx%d" % (
            {1: "swap_rb", 2: "rgb2gray", 3: "bgr2gray", 4: "gray2rgb", 5: "rgb2rgba", 6: "rgba2rgb",
             7: "rgb2bgra", 8: "rgba2bgr"}[code], scn, dcn, dt, n, w, h)
        dname = save("out_%s.npy" % name, dst)
        # Channel moves are exact; u8 gray is OpenCV's fixed point, bit for bit.
        abs_tol, rel_tol = 0, 0
        if code in GRAY_CODES and dt == "u16":
            abs_tol = 1
        if code in GRAY_CODES and dt == "f32":
            abs_tol, rel_tol = 1e-6, 1e-5
        manifest.append("%s %d 0 hwc %s %s %g %g" % (name, code, sname, dname, abs_tol, rel_tol))

    variants = sorted(CV_CODES)
    for dt in ("u8", "u16", "f32"):
        for code, scn, dcn in variants:
            for n, w, h in ((1, 1, 1), (1, 3, 7), (3, 31, 17)):
                hwc_case(dt, code, scn, dcn, n, w, h)
    for code, scn, dcn in variants:
        hwc_case("u8", code, scn, dcn, 1, 217, 333)
    hwc_case("u8", BGR2GRAY, 3, 1, 2, 5, 3)
    hwc_case("u16", RGB2GRAY, 3, 1, 1, 217, 333)
    hwc_case("f32", BGR2GRAY, 4, 1, 1, 217, 333)
    hwc_case("u8", BGR2GRAY, 3, 1, 1, 1919, 1077)

    # ---- NV12 / I420 -> RGB ------------------------------------------------------
    planes = {}

    def yuv_case(layout, yuv, code, dcn, n, w, h):
        key = (n, w, h)
        if key not in planes:
            Y = rand_image(rng, "u8", (n, h, w))
            U = rand_image(rng, "u8", (n, h // 2, w // 2))
            V = rand_image(rng, "u8", (n, h // 2, w // 2))
            frames = {}
            for lay in ("nv12", "i420"):
                if lay == "nv12":
                    chroma = np.stack([U, V], -1).reshape(n, -1)
                else:
                    chroma = np.concatenate([U.reshape(n, -1), V.reshape(n, -1)], 1)
                frames[lay] = np.concatenate([Y.reshape(n, -1), chroma], 1).reshape(n, h * 3 // 2, w)
            planes[key] = (Y, U, V, frames, {})
        Y, U, V, frames, saved = planes[key]
        src = frames[layout]
        if layout not in saved:  # only the frames some case reads
            saved[layout] = save("in_%s_n%d_%dx%d.npy" % (layout, n, w, h), src)
        sname = saved[layout]
        if yuv == BT601_LIMITED:
            dst = np.stack([cv2.cvtColor(src[i], CV_YUV[(layout, code, dcn)]) for i in range(n)])
        else:
            rgb = np.stack([yuv_formula(Y[i], U[i], V[i], yuv) for i in range(n)])
            if code == YUV2BGR:
                rgb = rgb[..., ::-1]
            if dcn == 4:
                rgb = np.concatenate([rgb, np.full(rgb.shape[:-1] + (1,), 255, np.uint8)], -1)
            dst = rgb
        name = "%s_%s_%s_c%d_n%d_%dx%d" % (layout, ["bt601l", "bt601f", "bt709l", "bt709f"][yuv],
                                          "rgb" if code == YUV2RGB else "bgr", dcn, n, w, h)
        dname = save("out_%s.npy" % name, dst)
        manifest.append("%s %d %d %s %s %s 1 0" % (name, code, yuv, layout, sname, dname))

    k = 0
    for layout in ("nv12", "i420"):
        for yuv in range(4):
            for code in (YUV2RGB, YUV2BGR):
                for dcn in (3, 4):
                    yuv_case(layout, yuv, code, dcn, 1, 2, 2)
                    yuv_case(layout, yuv, code, dcn, 3, 4, 6)
                    yuv_case(layout, yuv, code, dcn, 2, 34, 18)
            # one output per (layout, matrix) at 218x334, cycling the code and channels
            yuv_case(layout, yuv, (YUV2RGB, YUV2BGR)[k % 2], (3, 4)[(k // 2) % 2], 1, 218, 334)
            k += 1
    yuv_case("nv12", BT601_LIMITED, YUV2RGB, 3, 1, 1920, 1080)
    yuv_case("i420", BT601_LIMITED, YUV2BGR, 3, 2, 64, 32)

    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    total = sum(os.path.getsize(os.path.join(out, x)) for x in os.listdir(out))
    print("%d cases, %.1f MB in %s" % (len(manifest), total / 1e6, out))


if __name__ == "__main__":
    main()
