#!/usr/bin/python3
"""Writes a small ONNX classifier and sample images whose right answers are known, for
`gaio classify` in scripts/demo and in the tests.

The model names the dominant colour of an image, one of the RGB cube's 8 corners. It
takes [N, 3, 224, 224] normalized the ImageNet way (what `gaio classify` feeds every
model), blurs it with a 3x3 convolution, averages it (GlobalAveragePool), and a Gemm
turns the mean colour c back from the normalization into logits -T |c - corner|^2
(up to a term common to all classes), then Softmax. So its answers can be checked
without a trained network.

The images (seeded, printed) are noisy shapes over a coloured background: baseline
JPEGs (4:2:0, some with restart markers), progressive JPEGs, PNGs (RGB, RGBA, gray) and one 1920x1080
JPEG; expected.txt maps each file to its class.

    make_demo.py OUTDIR [--seed S] [--count N]
"""
import argparse
import os
import sys

import numpy as np

try:
    import cv2
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # scripts/deps installs python3-opencv and python3-onnx
    sys.exit(f"make_demo.py: needs numpy, cv2 and onnx ({e}); Debian: apt-get install python3-opencv python3-onnx")

CLASSES = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]
CORNERS = np.array([[(i >> 0) & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], np.float64)  # RGB
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
T = 12.0
SIDE = 224


def model(opset: int = 17) -> onnx.ModelProto:
    blur = np.zeros((3, 3, 3, 3), np.float32)
    for c in range(3):
        blur[c, c] = 1.0 / 9.0
    # logits_k = T * (2 c.v_k - |v_k|^2), c = mean(x) * std + mean
    w = (2 * T * CORNERS * STD[None, :]).astype(np.float32)                      # [8, 3]
    b = (T * (2 * CORNERS @ MEAN - (CORNERS ** 2).sum(1))).astype(np.float32)    # [8]
    nodes = [
        helper.make_node("Conv", ["x", "blur"], ["c"], name="blur", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c"], ["p"], name="mean"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "w", "b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    g = helper.make_graph(
        nodes, "colour_classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, SIDE, SIDE])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", len(CLASSES)])],
        [numpy_helper.from_array(blur, "blur"), numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="gaio make_demo.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def reference(rgb: np.ndarray) -> np.ndarray:
    """The model's probabilities for an RGB u8 image, computed directly: the center crop
    `gaio classify` takes, averaged (the blur and the resize barely move a mean)."""
    h, w = rgb.shape[:2]
    side = min(h, w) * 0.875
    y0, x0 = int((h - side) / 2), int((w - side) / 2)
    crop = rgb[y0:y0 + int(side), x0:x0 + int(side)].astype(np.float64) / 255.0
    c = crop.reshape(-1, 3).mean(0)
    logits = -T * ((c[None, :] - CORNERS) ** 2).sum(1)
    e = np.exp(logits - logits.max())
    return e / e.sum()


def image(rng: np.random.Generator, cls: int, w: int, h: int) -> np.ndarray:
    """RGB u8: the class's corner colour, shaded, with shapes of other colours and noise
    that leave it the majority."""
    base = CORNERS[cls] * rng.uniform(0.75, 0.95) + (1 - CORNERS[cls]) * rng.uniform(0.0, 0.2)
    img = np.empty((h, w, 3), np.float64)
    img[:] = base
    yy, xx = np.mgrid[0:h, 0:w]
    img *= (0.9 + 0.1 * np.sin(xx / max(w, 1) * 6.28))[..., None]
    for _ in range(3):
        cx, cy, r = rng.integers(0, w), rng.integers(0, h), rng.integers(min(w, h) // 20 + 1, min(w, h) // 8 + 2)
        img[(xx - cx) ** 2 + (yy - cy) ** 2 < r * r] = rng.uniform(0, 1, 3)
    img += rng.normal(0, 0.03, img.shape)
    return (np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8)


def write(path: str, rgb: np.ndarray, kind: str) -> None:
    bgr = np.ascontiguousarray(rgb[..., ::-1])
    if kind == "jpg420":
        ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 90])
    elif kind == "jpg_restart":  # restart markers every 4 MCU rows
        ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 95, cv2.IMWRITE_JPEG_RST_INTERVAL, 4])
    elif kind == "progressive":
        ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    elif kind == "png":
        ok, data = cv2.imencode(".png", bgr)
    elif kind == "rgba":
        ok, data = cv2.imencode(".png", np.dstack([bgr, np.full(rgb.shape[:2], 255, np.uint8)]))
    elif kind == "gray":
        ok, data = cv2.imencode(".png", cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))
    else:
        raise ValueError(kind)
    assert ok
    with open(path, "wb") as f:
        f.write(data.tobytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=20261124)
    ap.add_argument("--count", type=int, default=24, help="images besides the 1080p one")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    print(f"make_demo.py: seed {a.seed}")
    rng = np.random.default_rng(a.seed)
    onnx.save(model(), os.path.join(a.outdir, "colours.onnx"))
    with open(os.path.join(a.outdir, "labels.txt"), "w") as f:
        f.write("\n".join(CLASSES) + "\n")
    kinds = ["jpg420", "jpg_restart", "progressive", "png", "rgba", "jpg420"]
    rows = []
    for i in range(a.count + 1):
        big = i == a.count
        kind = "jpg420" if big else kinds[i % len(kinds)]
        cls = int(rng.integers(0, 8))
        w, h = (1920, 1080) if big else (int(rng.integers(160, 480)), int(rng.integers(120, 360)))
        if i % 11 == 7 and not big:  # a gray image: black or white only
            cls = int(rng.choice([0, 7]))
            kind = "gray"
        rgb = image(rng, cls, w, h)
        if kind == "gray":
            rgb = np.repeat(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)[..., None], 3, axis=2)
        name = f"{'hd_' if big else ''}{i:02d}_{CLASSES[cls]}.{'png' if kind in ('png', 'rgba', 'gray') else 'jpg'}"
        write(os.path.join(a.outdir, name), rgb, kind)
        decoded = cv2.imread(os.path.join(a.outdir, name), cv2.IMREAD_COLOR)[..., ::-1]
        p = reference(decoded)
        assert int(p.argmax()) == cls, f"{name}: the reference says {CLASSES[int(p.argmax())]}"
        rows.append(f"{name} {CLASSES[cls]} {p.max():.4f}")
    with open(os.path.join(a.outdir, "expected.txt"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"make_demo.py: colours.onnx, labels.txt and {len(rows)} images in {a.outdir}")


if __name__ == "__main__":
    main()
