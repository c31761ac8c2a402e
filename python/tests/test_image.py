"""gaio.image on every device, against OpenCV (cv2) and numpy formulas on the host
and against gaio's CPU backend on a GPU.

Each test draws random inputs from a seed it prints (GAIO_TEST_SEED=N replays a
run). On the host ("cpu") the result is compared with OpenCV (resize, cvtColor,
copyMakeBorder, flip, rotate, warpAffine) or with numpy (convert, normalize,
reformat, preprocess) under the tolerances of the C tests (tests/image/*.c): copies
and channel moves bit-exact, interpolations of integers within 1, of float32 within
1e-5. On a GPU the reference is the same op on gaio's CPU backend over the same
numpy inputs (the CPU backend is the one checked against OpenCV above), within the
C tests' CUDA-against-CPU tolerances: a GPU machine whose OpenCV is not 4.6 (gaio's
reference) still checks every op there. On the host, cases for which this OpenCV is
known to compute otherwise than 4.6 skip, saying so (cv_differs); CI runs 4.6.
GAIO_TEST_IMAGE_AS_GPU=1 adds a "cpu-as-gpu" device: the host tested the GPU way.
Destinations start poisoned (NaN for floats), so a pixel an op forgot to write fails
the comparison. Then bad arguments (Python's checks and gaio's), streams and asyncio.
"""
from __future__ import annotations

import asyncio
import os
import random
import re

import numpy as np
import pytest

import gaio
from gaio import image

cv2 = pytest.importorskip("cv2")

try:  # OpenCV's own code paths are the reference; IPP's float weights differ by ~1e-5
    cv2.ipp.setUseIPP(False)
except AttributeError:
    pass


# ---- fixtures and helpers -------------------------------------------------------------


HOST = "cpu"


class _CpuAsGpu(str):
    """The host, tested as a GPU is (GAIO_TEST_IMAGE_AS_GPU=1): its reference is a second
    run on the CPU backend, so the GPU path of these tests runs where there is no GPU."""


def _image_devices() -> list:
    devs: list = [HOST]
    if gaio.device_count() > 1:  # device 0 is the host; the rest are CUDA GPUs
        devs.append(pytest.param("cuda:0", marks=pytest.mark.gpu))
    if os.environ.get("GAIO_TEST_IMAGE_AS_GPU", "0") not in ("", "0"):
        devs.append(pytest.param(_CpuAsGpu(HOST), id="cpu-as-gpu"))
    return devs


@pytest.fixture(params=_image_devices())
def image_device(request) -> str:
    """Each device the image ops run on: the host, and the first GPU if present."""
    return request.param


@pytest.fixture
def image_rng(request) -> np.random.Generator:
    """A numpy generator from a printed seed (pytest shows it for a failing test)."""
    env = os.environ.get("GAIO_TEST_SEED")
    seed = int(env, 0) if env else random.SystemRandom().randrange(1 << 32)
    print(f"{request.node.name}: seed {seed} (GAIO_TEST_SEED={seed} replays it)")
    return np.random.default_rng(seed)


DT = {"u8": np.uint8, "u16": np.uint16, "s16": np.int16, "f16": np.float16, "f32": np.float32}
POISON = {"u8": 0xCD, "u16": 0xCDCD, "s16": -12851, "f16": np.nan, "f32": np.nan}


def rand(rng: np.random.Generator, shape, dt: str, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    """Random values over an integer dtype's whole range, or [lo, hi) for floats."""
    if dt in ("u8", "u16", "s16"):
        info = np.iinfo(DT[dt])
        a = rng.integers(info.min, info.max, size=shape, dtype=DT[dt], endpoint=True)
    else:
        a = rng.uniform(lo, hi, size=shape).astype(DT[dt])
    a.reshape(-1)[0] = 1  # never all zeros
    return a


def up(a: np.ndarray, dev: str, stream: gaio.Stream | None = None) -> gaio.Tensor:
    if stream is not None:
        return gaio.tensor(np.ascontiguousarray(a), stream=stream)
    return gaio.tensor(np.ascontiguousarray(a), device=dev)


def blank(shape, dt: str, dev: str, stream: gaio.Stream | None = None) -> gaio.Tensor:
    """A poisoned destination."""
    return up(np.full(shape, POISON[dt], dtype=DT[dt]), dev, stream)


def assert_close(got: np.ndarray, want: np.ndarray, atol: float = 0.0, rtol: float = 0.0, what: str = "") -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, want {want.dtype}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(g - w)
        bad = ~(diff <= atol + rtol * np.abs(w)) & ~(g == w)  # NaN is bad; equal infinities are not
    if bad.any():
        idx = tuple(int(i) for i in np.unravel_index(np.argmax(bad), bad.shape))
        worst = np.nanmax(np.where(bad, diff, 0))
        pytest.fail(f"{what}: {int(bad.sum())} of {bad.size} values differ by more than {atol} + {rtol} * |want| "
                    f"(max {worst:g}); first at {idx}: got {got[idx]!r}, want {want[idx]!r}")


def interp_tol(interp: str, dt: str) -> tuple[float, float]:
    """(atol, rtol) of resize against OpenCV (test_resize.c's tol())."""
    if interp in ("nearest", "nearest_exact"):
        return 0.0, 0.0
    return (1e-5, 1e-5) if dt == "f32" else (1.0, 0.0)


# ---- references: OpenCV on the host, gaio's CPU backend on a GPU ---------------------------


def on_host(dev) -> bool:
    """Whether dev is the host, whose results are compared with OpenCV or numpy."""
    return not isinstance(dev, _CpuAsGpu) and gaio.device(dev).kind == "cpu"


def _cv_version() -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", cv2.__version__)  # read at each call: a test may change it
    return (int(m[1]), int(m[2])) if m else (0, 0)


def cv_differs(op: str, interp: str | None = None, dt: str | None = None) -> str | None:
    """What of `op` this OpenCV is known to compute otherwise than 4.6, gaio's reference,
    or None. From 4.7 on INTER_NEAREST_EXACT picks other pixels at ties; from 5 on float
    LINEAR and CUBIC resizes differ by ~1e-5 and warpAffine rounds its coordinates
    otherwise (tools/test_cli.py's same_warp). CI runs OpenCV 4.6, and the C tests carry
    golden data written by 4.6 to the GPU machine (scripts/golden-cv46)."""
    v = _cv_version()
    if interp == "nearest_exact" and v >= (4, 7):
        return f"{op} nearest_exact"
    if v >= (5, 0):
        if op == "warp_affine":
            return op
        if interp in ("linear", "cubic") and dt == "f32":
            return f"{op} {interp} {dt}"
    return None


def reference(dev, run, want, differs: str | None = None):
    """The reference of the op under test on dev. run(d): the op on device d from the
    test's numpy inputs (drawn outside run, which runs twice on a GPU), its result(s)
    pulled back with .numpy(); want(): OpenCV's or numpy's result(s) on the host.
    On the host: want(), or a skip where `differs` (cv_differs) names what this OpenCV
    computes otherwise than 4.6. On a GPU: run("cpu"), the same op on gaio's CPU
    backend over the same inputs."""
    if not on_host(dev):
        return run(HOST)
    if differs:
        pytest.skip(f"SKIPPED: OpenCV {cv2.__version__} differs from 4.6, gaio's reference, for {differs}: "
                    "compared in CI")
    return want()


def check(what, dev, run, want, tol=(0.0, 0.0), gpu_tol=None, differs: str | None = None, compare=None) -> None:
    """run(dev) against reference(dev, run, want, differs): within tol (atol, rtol) of
    OpenCV or numpy on the host, within gpu_tol (tol where None) of the CPU backend on a
    GPU: the C tests' CUDA-against-CPU tolerances. run and want give an array or a tuple
    of arrays; what: a label, or one for each. compare: assert_close's signature."""
    compare = compare or assert_close
    ref = reference(dev, run, want, differs)
    got = run(dev)
    if not on_host(dev):
        tol = gpu_tol if gpu_tol is not None else tol
    gots, refs = (got, ref) if isinstance(got, tuple) else ((got,), (ref,))
    whats = what if isinstance(what, tuple) else (what,) * len(gots)
    assert len(refs) == len(gots) == len(whats), what
    for g, r, w in zip(gots, refs, whats):
        compare(g, r, tol[0], tol[1], label(dev, w))


def label(dev, what: str) -> str:
    """what, naming the comparison where it is not with OpenCV or numpy."""
    return what if on_host(dev) else f"{dev} vs cpu: {what}"


CV_INTERP = {"nearest": cv2.INTER_NEAREST, "nearest_exact": cv2.INTER_NEAREST_EXACT, "linear": cv2.INTER_LINEAR,
             "cubic": cv2.INTER_CUBIC, "area": cv2.INTER_AREA}
INTERP_NAMES = list(CV_INTERP)


def _exact_index(src: int, dst: int, old: bool) -> np.ndarray:
    """INTER_NEAREST_EXACT's source index of each output (resizeNN_bitexact, 16.16 fixed point)."""
    step = ((src << 16) + dst // 2) // dst
    start = step // 2 - (1 if old else src % 2)
    return np.minimum((step * np.arange(dst, dtype=np.int64) + start) >> 16, src - 1)


# OpenCV 4.6 takes the pixel before at exact ties of INTER_NEAREST_EXACT on even
# sizes; gaio (like later OpenCV, PIL and CV-CUDA) takes the one after
# (tests/image/golden_resize.py). Probe: 4 -> 2 reads pixel 0 under the old rule.
OLD_EXACT = cv2.resize(np.arange(4, dtype=np.uint8).reshape(1, 4), (2, 1),
                       interpolation=cv2.INTER_NEAREST_EXACT)[0, 0] == 0


def cv_resize(img: np.ndarray, w: int, h: int, interp: str) -> np.ndarray:
    """cv2.resize of one [H, W] or [H, W, C] image, with the shape kept and the
    current NEAREST_EXACT rule (after checking that cv2 follows the old one)."""
    r = cv2.resize(img, (w, h), interpolation=CV_INTERP[interp]).reshape((h, w) + img.shape[2:])
    if interp == "nearest_exact" and OLD_EXACT:
        sh, sw = img.shape[:2]
        old = img[_exact_index(sh, h, True)][:, _exact_index(sw, w, True)]
        assert np.array_equal(old, r), "cv2's INTER_NEAREST_EXACT follows neither rule"
        r = img[_exact_index(sh, h, False)][:, _exact_index(sw, w, False)]
    return r


def per_plane(a: np.ndarray, f) -> np.ndarray:
    """f on every plane of an [N, C, H, W] batch."""
    return np.stack([np.stack([f(p, k) for k, p in enumerate(img)]) for img in a])


# ---- resize -------------------------------------------------------------------------------


@pytest.mark.parametrize("interp", INTERP_NAMES)
@pytest.mark.parametrize("dt", ["u8", "u16", "f32"])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_resize(image_device, image_rng, interp, dt, channels):
    rng = image_rng
    h, w = (int(v) for v in rng.integers(1, 48, 2))
    src = rand(rng, (h, w, channels) if channels > 1 or rng.random() < 0.5 else (h, w), dt)
    sizes = [(max(1, w // 2 - 1), max(1, h // 3)), (w * 2 + 3, h + 5), tuple(int(v) for v in rng.integers(1, 64, 2))]

    def run(dev):
        s, out = up(src, dev), []
        for dw, dh in sizes:
            d = blank((dh, dw) + src.shape[2:], dt, dev)
            image.resize(s, d, interp)
            out.append(d.numpy())
        return tuple(out)

    check(tuple(f"resize {interp} {dt} {src.shape} -> {dw}x{dh}" for dw, dh in sizes), image_device, run,
          lambda: tuple(cv_resize(src, dw, dh, interp) for dw, dh in sizes), interp_tol(interp, dt),
          differs=cv_differs("resize", interp, dt))


@pytest.mark.parametrize("interp", INTERP_NAMES)
def test_resize_batch_and_chw(image_device, image_rng, interp):
    rng = image_rng
    nhwc = rand(rng, (3, 45, 61, 3), "u8")
    chw = rand(rng, (2, 9, 13), "u16")  # a single CHW image, [C, H, W]
    nchw = rand(rng, (2, 5, 37, 29), "f32")

    def run_nhwc(dev):
        d = blank((3, 20, 33, 3), "u8", dev)
        image.resize(up(nhwc, dev), d, interp=interp, layout="NHWC")
        return d.numpy()

    check(f"NHWC resize {interp}", image_device, run_nhwc,
          lambda: np.stack([cv_resize(img, 33, 20, interp) for img in nhwc]), interp_tol(interp, "u8"),
          differs=cv_differs("resize", interp, "u8"))

    def run_chw(dev):
        d = blank((2, 4, 6), "u16", dev)
        image.resize(up(chw, dev), d, interp, layout="chw")
        return d.numpy()

    check(f"CHW resize {interp}", image_device, run_chw, lambda: np.stack([cv_resize(p, 6, 4, interp) for p in chw]),
          interp_tol(interp, "u16"), differs=cv_differs("resize", interp, "u16"))

    def run_nchw(dev):  # last: the one this OpenCV may differ on alone (f32)
        d = blank((2, 5, 50, 45), "f32", dev)
        image.resize(up(nchw, dev), d, interp, layout="CHW")
        return d.numpy()

    check(f"NCHW resize {interp}", image_device, run_nchw,
          lambda: per_plane(nchw, lambda p, k: cv_resize(p, 45, 50, interp)), interp_tol(interp, "f32"),
          differs=cv_differs("resize", interp, "f32"))


@pytest.mark.parametrize("interp", ["nearest", "linear", "cubic", "area"])
def test_crop_resize(image_device, image_rng, interp):
    rng = image_rng
    n, h, w = 4, 60, 75
    src = rand(rng, (n, h, w, 3), "u8")
    rois = []
    for _ in range(n):
        rw, rh = int(rng.integers(1, w + 1)), int(rng.integers(1, h + 1))
        rois.append((int(rng.integers(0, w - rw + 1)), int(rng.integers(0, h - rh + 1)), rw, rh))
    rois[2] = None  # the whole image
    one = (5, 7, 40, 30)

    def run(dev):
        s, out = up(src, dev), []
        for r in (rois, one, None):  # one ROI for every image, and rois=None
            d = blank((n, 32, 24, 3), "u8", dev)
            image.crop_resize(s, d, r, interp)
            out.append(d.numpy())
        return tuple(out)

    def want():
        return (np.stack([cv_resize(src[i] if r is None else src[i, r[1]:r[1] + r[3], r[0]:r[0] + r[2]], 24, 32,
                                    interp) for i, r in enumerate(rois)]),
                np.stack([cv_resize(src[i, 7:37, 5:45], 24, 32, interp) for i in range(n)]),
                np.stack([cv_resize(src[i], 24, 32, interp) for i in range(n)]))

    check((f"crop_resize {interp} rois {rois}", f"crop_resize {interp} one roi", f"crop_resize {interp} whole"),
          image_device, run, want, interp_tol(interp, "u8"), differs=cv_differs("crop_resize", interp, "u8"))


@pytest.mark.parametrize("interp", INTERP_NAMES)
@pytest.mark.parametrize("dt, channels", [("u8", 3), ("f32", 1), ("u16", 4)])
def test_crop_resize_varshape(image_device, image_rng, interp, dt, channels):
    rng = image_rng
    sizes = [(50, 70), (9, 4), (1, 1), (64, 48), (int(rng.integers(1, 90)), int(rng.integers(1, 90)))]
    srcs = [rand(rng, (h, w, channels), dt) for (w, h) in sizes]
    rois = [None, (1, 1, 7, 2), None, (10, 20, 30, 25), None]

    def run(dev):
        ts = [up(a, dev) for a in srcs]
        d = blank((len(srcs), 30, 17, channels), dt, dev)
        image.crop_resize_varshape(ts, d, rois, interp)
        d2 = blank((len(srcs), 30, 17, channels), dt, dev)
        image.crop_resize_varshape(tuple(ts), d2, interp=interp)  # any sequence; rois None: whole images
        return d.numpy(), d2.numpy()

    def want():
        return (np.stack([cv_resize(a if r is None else a[r[1]:r[1] + r[3], r[0]:r[0] + r[2]], 17, 30, interp)
                          for a, r in zip(srcs, rois)]),
                np.stack([cv_resize(a, 17, 30, interp) for a in srcs]))

    check((f"varshape {interp} {dt}", f"varshape {interp} {dt} whole"), image_device, run, want,
          interp_tol(interp, dt), differs=cv_differs("crop_resize_varshape", interp, dt))


# ---- geometry ---------------------------------------------------------------------------


def _hwc_or_chw(rng, dt, layout, n=1, hw=(40, 40), channels=3):
    h, w = (int(rng.integers(1, hw[0] + 1)), int(rng.integers(1, hw[1] + 1)))
    shape = (n, h, w, channels) if layout == "HWC" else (n, channels, h, w)
    return rand(rng, shape, dt, -60, 60)


@pytest.mark.parametrize("dt, layout, channels", [("u8", "HWC", 3), ("u16", "CHW", 3), ("f32", "HWC", 1),
                                                  ("s16", "HWC", 4), ("f16", "HWC", 2), ("u8", "HWC", 6),
                                                  ("f16", "CHW", 2)])
def test_crop(image_device, image_rng, dt, layout, channels):
    rng = image_rng
    a = _hwc_or_chw(rng, dt, layout, n=2, channels=channels)
    h, w = (a.shape[1], a.shape[2]) if layout == "HWC" else (a.shape[2], a.shape[3])
    rw, rh = int(rng.integers(1, w + 1)), int(rng.integers(1, h + 1))
    x, y = int(rng.integers(0, w - rw + 1)), int(rng.integers(0, h - rh + 1))
    want = np.ascontiguousarray(a[:, y:y + rh, x:x + rw] if layout == "HWC" else a[:, :, y:y + rh, x:x + rw])

    def run(dev):
        d = blank(want.shape, dt, dev)
        image.crop(up(a, dev), d, (x, y, rw, rh), layout=layout)
        return d.numpy()

    check(f"crop {dt} {layout} ({x}, {y}, {rw}, {rh})", image_device, run, lambda: want)


CV_BORDER = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT,
             "reflect_101": cv2.BORDER_REFLECT_101, "wrap": cv2.BORDER_WRAP}


def _as_cv(p: np.ndarray) -> np.ndarray:
    """OpenCV takes no f16 here: these ops move elements, so the bits will do."""
    return p.view(np.uint16) if p.dtype == np.float16 else p


def _from_cv(r: np.ndarray, dt: str) -> np.ndarray:
    return r.view(np.float16) if dt == "f16" else r


@pytest.mark.parametrize("border", list(CV_BORDER))
@pytest.mark.parametrize("dt, layout, channels", [("u8", "HWC", 3), ("f32", "HWC", 1), ("u16", "CHW", 3),
                                                  ("s16", "HWC", 4), ("u8", "HWC", 2)])
def test_copy_make_border(image_device, image_rng, border, dt, layout, channels):
    rng = image_rng
    a = _hwc_or_chw(rng, dt, layout, n=2, hw=(17, 23), channels=channels)
    h, w = (a.shape[1], a.shape[2]) if layout == "HWC" else (a.shape[2], a.shape[3])
    top, bottom, left, right = (int(v) for v in rng.integers(0, 30, 4))
    value = None
    if border == "constant" and rng.random() < 0.75:
        value = [float(v) for v in rng.uniform(-100, 400, min(channels, 4))]
        value = [float(np.round(v * 2) / 2) for v in value]  # halves: the rounding's ties
    cvv = value + [0.0] * (4 - len(value)) if value else [0.0] * 4
    if layout == "HWC":
        want = np.stack([cv2.copyMakeBorder(img, top, bottom, left, right, CV_BORDER[border], value=cvv)
                         .reshape(h + top + bottom, w + left + right, channels) for img in a])
    else:
        want = per_plane(a, lambda p, k: cv2.copyMakeBorder(p, top, bottom, left, right, CV_BORDER[border],
                                                            value=[cvv[k]] * 4))

    def run(dev):
        d = blank(want.shape, dt, dev)
        image.copy_make_border(up(a, dev), d, top, left, border, value, layout=layout)
        return d.numpy()

    check(f"copy_make_border {border} {dt} {layout} {a.shape} t{top} b{bottom} l{left} r{right} value {value}",
          image_device, run, lambda: want)


def test_copy_make_border_scalar_value(image_device, image_rng):
    a = rand(image_rng, (5, 7, 3), "f32")

    def run(dev):
        d = blank((9, 10, 3), "f32", dev)
        image.copy_make_border(up(a, dev), d, 1, 2, value=2.5)  # a number fills every channel
        return d.numpy()

    check("copy_make_border value=2.5", image_device, run,
          lambda: cv2.copyMakeBorder(a, 1, 3, 2, 1, cv2.BORDER_CONSTANT, value=[2.5] * 4))


@pytest.mark.parametrize("mode, code", [("horizontal", 1), ("vertical", 0), ("both", -1)])
@pytest.mark.parametrize("dt, layout, channels", [("u8", "HWC", 3), ("f32", "HWC", 1), ("u16", "CHW", 4),
                                                  ("f16", "HWC", 3), ("s16", "HWC", 2), ("u8", "HWC", 6)])
def test_flip(image_device, image_rng, mode, code, dt, layout, channels):
    a = _hwc_or_chw(image_rng, dt, layout, n=2, hw=(60, 70), channels=channels)
    if layout == "HWC":
        want = np.stack([_from_cv(cv2.flip(_as_cv(img), code), dt).reshape(img.shape) for img in a])
    else:
        want = per_plane(a, lambda p, k: _from_cv(cv2.flip(_as_cv(p), code), dt))

    def run(dev):
        d = blank(a.shape, dt, dev)
        image.flip(up(a, dev), d, mode, layout=layout)
        return d.numpy()

    check(f"flip {mode} {dt} {layout} {a.shape}", image_device, run, lambda: want)


CV_ROTATE = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE,
             -90: cv2.ROTATE_90_COUNTERCLOCKWISE, 450: cv2.ROTATE_90_CLOCKWISE}


@pytest.mark.parametrize("degrees", list(CV_ROTATE))
@pytest.mark.parametrize("dt, layout, channels", [("u8", "HWC", 3), ("f32", "HWC", 1), ("u16", "CHW", 2),
                                                  ("f16", "HWC", 4), ("u8", "HWC", 6)])
def test_rotate(image_device, image_rng, degrees, dt, layout, channels):
    a = _hwc_or_chw(image_rng, dt, layout, n=2, hw=(50, 70), channels=channels)
    rot = CV_ROTATE[degrees]
    if layout == "HWC":
        want = np.stack([_from_cv(cv2.rotate(_as_cv(img), rot), dt) for img in a])
        want = want.reshape(want.shape[:3] + (channels,))
    else:
        want = per_plane(a, lambda p, k: _from_cv(cv2.rotate(_as_cv(p), rot), dt))

    def run(dev):
        d = blank(want.shape, dt, dev)
        image.rotate(up(a, dev), d, degrees, layout=layout)
        return d.numpy()

    check(f"rotate {degrees} {dt} {layout} {a.shape}", image_device, run, lambda: want)


@pytest.mark.parametrize("interp", ["nearest", "linear"])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("dt, layout, channels", [("u8", "HWC", 3), ("u8", "HWC", 1), ("u16", "HWC", 4),
                                                  ("f32", "HWC", 1), ("f32", "CHW", 3), ("u8", "CHW", 2)])
def test_warp_affine(image_device, image_rng, interp, inverse, dt, layout, channels):
    rng = image_rng
    n, h, w = 2, int(rng.integers(1, 80)), int(rng.integers(1, 80))
    dh, dw = int(rng.integers(1, 90)), int(rng.integers(1, 90))
    shape = (n, h, w, channels) if layout == "HWC" else (n, channels, h, w)
    a = rand(rng, shape, dt, -2, 200)
    if dt == "f32":
        a = np.abs(a)
    m = cv2.getRotationMatrix2D((w / 2.0, h / 2.0), float(rng.uniform(-180, 180)), float(rng.uniform(0.5, 1.6)))
    m[0, 2] += (dw - w) / 2.0 + rng.uniform(-3, 3)
    m[1, 2] += (dh - h) / 2.0 + rng.uniform(-3, 3)
    value = [float(v) for v in rng.uniform(0, 255, 4)] if rng.random() < 0.5 else None
    cvv = value if value is not None else [0.0] * 4
    flags = (cv2.INTER_LINEAR if interp == "linear" else cv2.INTER_NEAREST) | (cv2.WARP_INVERSE_MAP if inverse
                                                                                else 0)

    def want():
        if layout == "HWC":
            return np.stack([cv2.warpAffine(img, m, (dw, dh), flags=flags, borderMode=cv2.BORDER_CONSTANT,
                                            borderValue=cvv).reshape(dh, dw, channels) for img in a])
        return per_plane(a, lambda p, k: cv2.warpAffine(p, m, (dw, dh), flags=flags, borderMode=cv2.BORDER_CONSTANT,
                                                        borderValue=[cvv[k]] * 4))

    mat = m if rng.random() < 0.5 else [float(v) for v in m.reshape(-1)]  # a (2, 3) array or six numbers

    def run(dev):
        d = blank((n, dh, dw, channels) if layout == "HWC" else (n, channels, dh, dw), dt, dev)
        image.warp_affine(up(a, dev), d, mat, interp, inverse_map=inverse, value=value, layout=layout)
        return d.numpy()

    # against OpenCV and CUDA against the CPU alike (test_geometry.c)
    check(f"warp_affine {interp} inverse={inverse} {dt} {layout} {a.shape} -> {dw}x{dh} m {m.tolist()}",
          image_device, run, want, (1e-5, 1e-5) if dt == "f32" else (1.0, 0.0), differs=cv_differs("warp_affine"))


# ---- color ---------------------------------------------------------------------------------

# (gaio code, src channels, dst channels) -> OpenCV code
CV_COLOR = {
    ("swap_rb", 3, 3): cv2.COLOR_RGB2BGR,
    ("swap_rb", 4, 4): cv2.COLOR_RGBA2BGRA,
    ("rgb2gray", 3, 1): cv2.COLOR_RGB2GRAY,
    ("rgb2gray", 4, 1): cv2.COLOR_RGBA2GRAY,
    ("bgr2gray", 3, 1): cv2.COLOR_BGR2GRAY,
    ("bgr2gray", 4, 1): cv2.COLOR_BGRA2GRAY,
    ("gray2rgb", 1, 3): cv2.COLOR_GRAY2RGB,
    ("gray2rgb", 1, 4): cv2.COLOR_GRAY2RGBA,
    ("rgb2rgba", 3, 4): cv2.COLOR_RGB2RGBA,
    ("rgba2rgb", 4, 3): cv2.COLOR_RGBA2RGB,
    ("rgb2bgra", 3, 4): cv2.COLOR_RGB2BGRA,
    ("rgba2bgr", 4, 3): cv2.COLOR_RGBA2BGR,
}


@pytest.mark.parametrize("code, scn, dcn", list(CV_COLOR))
@pytest.mark.parametrize("dt", ["u8", "u16", "f32"])
def test_cvt_color(image_device, image_rng, code, scn, dcn, dt):
    rng = image_rng
    n, h, w = 2, int(rng.integers(1, 40)), int(rng.integers(1, 40))
    a = rand(rng, (n, h, w, scn), dt, 0.0, 1.0)

    def want():
        r = np.stack([cv2.cvtColor(np.ascontiguousarray(img if scn > 1 else img[:, :, 0]),
                                   CV_COLOR[(code, scn, dcn)]).reshape(h, w, dcn) for img in a])
        return (r, r[0, :, :, 0]) if dcn == 1 else r

    def run(dev):
        # a gray dst as [N, H, W, 1] or a single image as [H, W] alike
        d = blank((n, h, w, dcn), dt, dev)
        image.cvt_color(up(a, dev), d, code)
        if dcn > 1:
            return d.numpy()
        d2 = blank((h, w), dt, dev)
        image.cvt_color(up(a[0], dev), d2, code)
        return d.numpy(), d2.numpy()

    gray = code in ("rgb2gray", "bgr2gray")
    tol = (1.0, 0.0) if gray and dt == "u16" else (1e-6, 1e-5) if gray and dt == "f32" else (0.0, 0.0)
    what = f"cvt_color {code} {dt} {scn}->{dcn}"
    # CUDA against the CPU: integers within 1, f32 1e-6 + 1e-5 relative (test_color.c)
    check((what, f"cvt_color {code} {dt} to [H, W]") if dcn == 1 else what, image_device, run, want, tol,
          (1e-6, 1e-5) if dt == "f32" else (1.0, 0.0))


def yuv_formula(Y, U, V, yuv: str) -> np.ndarray:
    """R'G'B' (u8) from Y'CbCr planes by the ITU-R formulas, in float64
    (tests/image/golden_color.py: BT.601 / BT.709, limited or full range)."""
    bt709, full = yuv.startswith("bt709"), yuv.endswith("full")
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
    return np.clip(np.floor(np.stack([r, g, b], -1) * 255.0 + 0.5), 0, 255).astype(np.uint8)


CV_YUV = {("NV12", "yuv2rgb", 3): cv2.COLOR_YUV2RGB_NV12, ("NV12", "yuv2bgr", 3): cv2.COLOR_YUV2BGR_NV12,
          ("NV12", "yuv2rgb", 4): cv2.COLOR_YUV2RGBA_NV12, ("NV12", "yuv2bgr", 4): cv2.COLOR_YUV2BGRA_NV12,
          ("I420", "yuv2rgb", 3): cv2.COLOR_YUV2RGB_I420, ("I420", "yuv2bgr", 3): cv2.COLOR_YUV2BGR_I420,
          ("I420", "yuv2rgb", 4): cv2.COLOR_YUV2RGBA_I420, ("I420", "yuv2bgr", 4): cv2.COLOR_YUV2BGRA_I420}


def yuv_frames(rng, n: int, h: int, w: int):
    """Random Y, U, V planes and the packed frames [N, H * 3 / 2, W] of both layouts."""
    Y = rand(rng, (n, h, w), "u8")
    U = rand(rng, (n, h // 2, w // 2), "u8")
    V = rand(rng, (n, h // 2, w // 2), "u8")
    nv12 = np.concatenate([Y.reshape(n, -1), np.stack([U, V], -1).reshape(n, -1)], 1).reshape(n, h * 3 // 2, w)
    i420 = np.concatenate([Y.reshape(n, -1), U.reshape(n, -1), V.reshape(n, -1)], 1).reshape(n, h * 3 // 2, w)
    return Y, U, V, {"NV12": nv12, "I420": i420}


@pytest.mark.parametrize("layout", ["NV12", "I420"])
@pytest.mark.parametrize("yuv", ["bt601_limited", "bt601_full", "bt709_limited", "bt709_full"])
@pytest.mark.parametrize("code", ["yuv2rgb", "yuv2bgr"])
@pytest.mark.parametrize("dcn", [3, 4])
def test_cvt_color_yuv(image_device, image_rng, layout, yuv, code, dcn):
    rng = image_rng
    n, h, w = 2, 2 * int(rng.integers(1, 20)), 2 * int(rng.integers(1, 24))
    Y, U, V, frames = yuv_frames(rng, n, h, w)
    src = frames[layout]
    if yuv == "bt601_limited":  # OpenCV's COLOR_YUV2RGB_NV12 / _I420
        want = np.stack([cv2.cvtColor(f, CV_YUV[(layout, code, dcn)]) for f in src])
    else:  # no OpenCV code: the formulas
        want = np.stack([yuv_formula(Y[i], U[i], V[i], yuv) for i in range(n)])
        if code == "yuv2bgr":
            want = want[..., ::-1]
        if dcn == 4:
            want = np.concatenate([want, np.full(want.shape[:-1] + (1,), 255, np.uint8)], -1)
    what = f"cvt_color {code} {yuv} {layout} {n}x{w}x{h} -> {dcn}"

    def run(dev):
        d = blank((n, h, w, dcn), "u8", dev)
        image.cvt_color(up(src, dev), d, code, yuv, layout=layout)  # a batch [N, H*3/2, W]
        d1 = blank((h, w, dcn), "u8", dev)
        image.cvt_color(up(src[1], dev), d1, code, yuv=yuv, layout=layout.lower())  # one frame
        return d.numpy(), d1.numpy()

    check((what, what + " (one frame)"), image_device, run,
          lambda: (np.ascontiguousarray(want), np.ascontiguousarray(want[1])), (1.0, 0.0))


def test_cvt_color_nv12_pitched(image_device, image_rng):
    """A frame whose rows are further apart than its width (a decoder's pitch)."""
    rng = image_rng
    h, w, pitch = 12, 18, 32
    _, _, _, frames = yuv_frames(rng, 1, h, w)
    padded = rand(rng, (h * 3 // 2, pitch), "u8")
    padded[:, :w] = frames["NV12"][0]

    def run(dev):
        p = up(padded, dev)
        view = gaio.Tensor(p.buffer, p.offset, "uint8", (h * 3 // 2, w), (pitch, 1), p.stream)
        d = blank((h, w, 3), "u8", dev)
        image.cvt_color(view, d, "yuv2rgb", layout="NV12")
        return d.numpy()

    check("pitched NV12", image_device, run, lambda: cv2.cvtColor(frames["NV12"][0], cv2.COLOR_YUV2RGB_NV12),
          (1.0, 0.0))


# ---- values and layout -------------------------------------------------------------------

INT_RANGE = {"u8": (0, 255), "u16": (0, 65535), "s16": (-32768, 32767)}


def to_dtype(y: np.ndarray, dt: str) -> np.ndarray:
    """float64 -> dtype as convertTo: round half to even and saturate for integers."""
    if dt in INT_RANGE:
        return np.clip(np.rint(y), *INT_RANGE[dt]).astype(DT[dt])
    with np.errstate(over="ignore"):
        return y.astype(DT[dt])


@pytest.mark.parametrize("sd, dd, scale, offset", [
    ("u8", "f32", 1 / 255, 0.0), ("f32", "u8", 255.0, 0.5), ("f32", "u8", 1.0, 0.0), ("u16", "u8", 0.25, -3.0),
    ("f32", "f16", 1.0, 0.0), ("f16", "f32", 1.0, 0.0), ("s16", "u8", 1.0, 0.0), ("u8", "s16", -2.5, 100.0),
    ("f32", "s16", 1.0, 0.0), ("u8", "u8", 1.0, 0.0), ("f32", "f32", -0.75, 12.0), ("u16", "f16", 1 / 64, -1.0)])
@pytest.mark.parametrize("layout", ["HWC", "CHW"])
def test_convert(image_device, image_rng, sd, dd, scale, offset, layout):
    rng = image_rng
    n, h, w, c = 2, int(rng.integers(1, 40)), int(rng.integers(1, 40)), int(rng.integers(1, 5))
    shape = (n, h, w, c) if layout == "HWC" else (n, c, h, w)
    lo, hi = {"u8": (-40.0, 300.0), "s16": (-40000.0, 40000.0), "f16": (-1000.0, 1000.0)}.get(dd, (-1000.0, 1000.0))
    if sd == "f32" and dd == "u8" and scale != 1.0:
        lo, hi = -0.2, 1.2
    a = rand(rng, shape, sd, lo, hi)
    plain = scale == 1.0 and offset == 0.0
    if plain and sd == "f32":  # a quarter of the values on ties, for the round-half-even
        ties = rng.random(shape) < 0.25
        a = np.where(ties, np.floor(a) + 0.5, a).astype(np.float32)

    def run(dev):
        d = blank(shape, dd, dev)
        image.convert(up(a, dev), d, scale, offset, layout=layout)
        return d.numpy()

    atol = rtol = 0.0
    if not plain:
        if dd in INT_RANGE:
            atol = 1.0
        else:
            rtol = 1e-3 if dd == "f16" else 1e-5
            atol = 1e-6 * (float(np.abs(a.astype(np.float64)).max()) * abs(scale) + abs(offset)) + 6e-8
    # CUDA against the CPU: bit for bit (test_convert.c)
    check(f"convert {sd}->{dd} scale {scale} offset {offset} {layout}", image_device, run,
          lambda: to_dtype(a.astype(np.float64) * scale + offset, dd), (atol, rtol), (0.0, 0.0))


@pytest.mark.parametrize("sd, dd, layout, channels, scale, mean, std", [
    ("u8", "f32", "HWC", 3, 1 / 255, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ("u8", "f16", "HWC", 3, 1 / 255, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ("u8", "f32", "CHW", 3, 1.0, [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]),
    ("u16", "f32", "HWC", 4, 1 / 65535, [0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]),
    ("s16", "f16", "CHW", 1, 0.001, [-1.5], [4.0]),
    ("f32", "f32", "HWC", 2, 0.5, 0.25, 2.0),  # numbers for every channel
    ("f16", "f32", "CHW", 5, 1.0, [0.5] * 5, [1.0, 2.0, 3.0, 4.0, -5.0]),
])
def test_normalize(image_device, image_rng, sd, dd, layout, channels, scale, mean, std):
    rng = image_rng
    n, h, w = 2, int(rng.integers(1, 40)), int(rng.integers(1, 40))
    shape = (n, h, w, channels) if layout == "HWC" else (n, channels, h, w)
    a = rand(rng, shape, sd, -60.0, 60.0)
    m = np.broadcast_to(np.asarray(mean, np.float32), (channels,)).astype(np.float64)
    s = np.broadcast_to(np.asarray(std, np.float32), (channels,)).astype(np.float64)
    cshape = (1, 1, 1, channels) if layout == "HWC" else (1, channels, 1, 1)
    sc = float(np.float32(scale))

    def run(dev):
        d = blank(shape, dd, dev)
        image.normalize(up(a, dev), d, scale, mean, std, layout=layout)
        return d.numpy()

    rtol = 1e-3 if dd == "f16" else 1e-5
    atol = 1e-6 * (float(np.abs(a.astype(np.float64)).max()) * sc + np.abs(m).max()) / np.abs(s).min() + 6e-8
    # CUDA against the CPU: f32 1e-5 relative, f16 1e-3 relative (test_convert.c)
    check(f"normalize {sd}->{dd} {layout}", image_device, run,
          lambda: to_dtype((a.astype(np.float64) * sc - m.reshape(cshape)) / s.reshape(cshape), dd), (atol, rtol),
          (0.0, rtol))


@pytest.mark.parametrize("dt", ["u8", "u16", "s16", "f16", "f32"])
@pytest.mark.parametrize("channels", [1, 3, 4, 5])
def test_reformat(image_device, image_rng, dt, channels):
    rng = image_rng
    n, h, w = int(rng.integers(1, 4)), int(rng.integers(1, 40)), int(rng.integers(1, 40))
    hwc = rand(rng, (n, h, w, channels), dt, -100, 100)

    def run(dev):
        d = blank((n, channels, h, w), dt, dev)
        image.reformat(up(hwc, dev), d)  # HWC -> CHW by default
        back = blank(hwc.shape, dt, dev)
        image.reformat(d, back, src_layout="CHW")  # dst_layout: the other one
        one = blank((h, w, channels), dt, dev)
        image.reformat(d[0], one, src_layout="CHW", dst_layout="HWC")  # [C, H, W] -> [H, W, C]
        return d.numpy(), back.numpy(), one.numpy()

    check((f"reformat HWC->CHW {dt}", f"reformat CHW->HWC {dt}", f"reformat one CHW image {dt}"), image_device, run,
          lambda: (np.ascontiguousarray(hwc.transpose(0, 3, 1, 2)), hwc, hwc[0]))


# ---- preprocess --------------------------------------------------------------------------


def preprocess_ref(img, roi, dw, dh, interp, swap, scale, mean, std, dt, layout) -> np.ndarray:
    """OpenCV's resize of the ROI in float32 from the u8 source, then swap and
    (v * scale - mean) / std in float64 (tests/image/golden_preprocess.py)."""
    x, y, w, h = roi if roi is not None else (0, 0, img.shape[1], img.shape[0])
    r = np.ascontiguousarray(img[y:y + h, x:x + w, :3]).astype(np.float32)
    v = cv2.resize(r, (dw, dh), interpolation=CV_INTERP[interp]).reshape(dh, dw, 3)
    if swap:
        v = v[:, :, ::-1]
    o = ((v.astype(np.float64) * scale - np.asarray(mean, np.float64)) / np.asarray(std, np.float64))
    o = o.astype(np.float32)
    return o.transpose(2, 0, 1) if layout == "CHW" else o


PREPROCESS_TOL = (1e-4, 1e-4)  # against OpenCV (test_preprocess.c)
PREPROCESS_GPU_TOL = (1e-6, 1e-5)  # CUDA against the CPU (test_preprocess.c)


def assert_preprocess_close(got: np.ndarray, want: np.ndarray, atol: float, rtol: float, what: str) -> None:
    """f32 within atol + rtol |v|; f16 within one f16 ulp of the reference (f32 from
    OpenCV, or the CPU backend's f16) rounded to f16, or within the f32 tolerance
    (test_preprocess.c's expect_out)."""
    if got.dtype == np.float32:
        assert_close(got, want, atol, rtol, what)
        return
    assert got.dtype == np.float16 and got.shape == want.shape, what
    w16 = want.astype(np.float16)
    g, w = got.astype(np.float64), want.astype(np.float64)
    ulp = np.abs(np.spacing(w16)).astype(np.float64)
    ok = (np.abs(g - w16.astype(np.float64)) <= ulp) | (np.abs(g - w) <= atol + rtol * np.abs(w))
    if not ok.all():
        idx = tuple(int(i) for i in np.unravel_index(np.argmin(ok), ok.shape))
        pytest.fail(f"{what}: {int((~ok).sum())} f16 values off by more than one ulp; first at {idx}: got "
                    f"{got[idx]!r}, want {w16[idx]!r} ({want[idx]!r} in {want.dtype})")


def _rand_roi(rng, h, w):
    rw, rh = int(rng.integers(1, w + 1)), int(rng.integers(1, h + 1))
    return (int(rng.integers(0, w - rw + 1)), int(rng.integers(0, h - rh + 1)), rw, rh)


@pytest.mark.parametrize("interp", ["linear", "area"])
@pytest.mark.parametrize("dt", ["f32", "f16"])
@pytest.mark.parametrize("dst_layout", ["CHW", "HWC"])
@pytest.mark.parametrize("channels, swap", [(3, False), (4, True)])
def test_preprocess(image_device, image_rng, interp, dt, dst_layout, channels, swap):
    rng = image_rng
    n, h, w = 2, int(rng.integers(20, 120)), int(rng.integers(20, 120))
    dh, dw = int(rng.integers(2, 64)), int(rng.integers(2, 64))  # AREA shrinks by at most 63 per axis
    src = rand(rng, (n, h, w, channels), "u8")
    rois = [_rand_roi(rng, h, w), None]
    mean, std, scale = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), 1 / 255
    mean2, std2 = (123.675, 116.28, 103.53), (58.395, 57.12, 57.375)
    shape = (3, dh, dw) if dst_layout == "CHW" else (dh, dw, 3)

    def run(dev):
        d = blank((n,) + shape, dt, dev)
        image.preprocess(up(src, dev), d, rois, interp=interp, swap_rb=swap, dst_layout=dst_layout)
        # other normalisation constants, rois None, one image [H, W, C] -> [3, H, W]
        one = blank(shape, dt, dev)
        image.preprocess(up(src[0], dev), one, interp=interp, swap_rb=swap, scale=1.0, mean=mean2, std=std2,
                         dst_layout=dst_layout)
        return d.numpy(), one.numpy()

    def want():
        return (np.stack([preprocess_ref(src[i], rois[i], dw, dh, interp, swap, scale, mean, std, dt, dst_layout)
                          for i in range(n)]),
                preprocess_ref(src[0], None, dw, dh, interp, swap, 1.0, mean2, std2, dt, dst_layout))

    check((f"preprocess {interp} {dt} {dst_layout} c{channels} swap={swap} {w}x{h} rois {rois} -> {dw}x{dh}",
           f"preprocess {interp} {dt} one image, mean {mean2}"), image_device, run, want, PREPROCESS_TOL,
          PREPROCESS_GPU_TOL, compare=assert_preprocess_close)


@pytest.mark.parametrize("interp", ["linear", "area"])
@pytest.mark.parametrize("dt, dst_layout", [("f32", "CHW"), ("f16", "HWC")])
def test_preprocess_varshape(image_device, image_rng, interp, dt, dst_layout):
    rng = image_rng
    sizes = [(1, 1), (7, 3), (30, 40), (int(rng.integers(1, 200)), int(rng.integers(1, 200))), (61, 100)]
    srcs = [rand(rng, (h, w, 3), "u8") for (h, w) in sizes]
    rois = [_rand_roi(rng, h, w) if k % 2 else None for k, (h, w) in enumerate(sizes)]
    dw, dh = 24, 20

    def run(dev):
        d = blank((len(srcs),) + ((3, dh, dw) if dst_layout == "CHW" else (dh, dw, 3)), dt, dev)
        image.preprocess_varshape([up(a, dev) for a in srcs], d, rois, interp=interp, swap_rb=True, mean=0.5,
                                  std=0.25, dst_layout=dst_layout)
        return d.numpy()

    check(f"preprocess_varshape {interp} {dt} {dst_layout} rois {rois}", image_device, run,
          lambda: np.stack([preprocess_ref(a, r, dw, dh, interp, True, 1 / 255, 0.5, 0.25, dt, dst_layout)
                            for a, r in zip(srcs, rois)]), PREPROCESS_TOL, PREPROCESS_GPU_TOL,
          compare=assert_preprocess_close)


# ---- strided tensors ----------------------------------------------------------------------


def test_strided_views(image_device, image_rng):
    """ROI views of larger tensors (rows further apart than their pixels) as src and dst."""
    rng = image_rng
    H, W, C = 50, 64, 3
    big = rand(rng, (H, W, C), "u8")
    x, y, w, h = 5, 7, 33, 21

    def view_on(dev) -> gaio.Tensor:  # the ROI of big, rows W * C elements apart
        t = up(big, dev)
        return gaio.Tensor(t.buffer, t.offset + (y * W + x) * C, "uint8", (h, w, C), (W * C, C, 1), t.stream)

    def run_resize(dev):
        d = blank((30, 40, C), "u8", dev)
        image.resize(view_on(dev), d, "linear")
        return d.numpy()

    check("resize from a ROI view", image_device, run_resize,
          lambda: cv_resize(big[y:y + h, x:x + w], 40, 30, "linear"), (1.0, 0.0))

    # dst a view inside a poisoned canvas: only its pixels change
    canvas_np = np.full((40, 60, C), 0xCD, np.uint8)

    def run_flip(dev):
        canvas = up(canvas_np, dev)
        dview = gaio.Tensor(canvas.buffer, canvas.offset + (3 * 60 + 4) * C, "uint8", (h, w, C), (60 * C, C, 1),
                            canvas.stream)
        image.flip(view_on(dev), dview, "both")
        return canvas.numpy()

    def want_flip():
        want = canvas_np.copy()
        want[3:3 + h, 4:4 + w] = cv2.flip(np.ascontiguousarray(big[y:y + h, x:x + w]), -1)
        return want

    check("flip into a ROI view", image_device, run_flip, want_flip)


# ---- bad input -------------------------------------------------------------------------------


@pytest.fixture
def small(image_device):
    """A few small tensors on the device for the error tests."""
    return {
        "u8": up(np.ones((6, 8, 3), np.uint8), image_device),
        "u8_out": blank((4, 5, 3), "u8", image_device),
        "u8_same": blank((6, 8, 3), "u8", image_device),
        "f32": blank((6, 8, 3), "f32", image_device),
        "gray": blank((6, 8), "u8", image_device),
        "batch": up(np.ones((2, 6, 8, 3), np.uint8), image_device),
        "batch_out": blank((2, 4, 5, 3), "u8", image_device),
        "chw_f32": blank((3, 4, 5), "f32", image_device),
        "nv12": up(np.ones((9, 8), np.uint8), image_device),
        "rows7": blank((7, 8), "u8", image_device),
        "nchw_f32": blank((2, 3, 4, 5), "f32", image_device),
    }


BAD_PYTHON_ARGS = [
    # (function, argument or words the message names, call)
    ("resize", "interp 'bilinear'", lambda t: image.resize(t["u8"], t["u8_out"], "bilinear")),
    ("resize", "interp", lambda t: image.resize(t["u8"], t["u8_out"], 2)),
    ("resize", "layout 'WHC'", lambda t: image.resize(t["u8"], t["u8_out"], layout="WHC")),
    ("resize", "src is ndarray", lambda t: image.resize(np.ones((6, 8, 3), np.uint8), t["u8_out"])),
    ("resize", "dst is NoneType", lambda t: image.resize(t["u8"], None)),
    ("resize", "stream is int", lambda t: image.resize(t["u8"], t["u8_out"], stream=5)),
    ("crop_resize", "rois has 3 entries but there are 2 images",
     lambda t: image.crop_resize(t["batch"], t["batch_out"], [(0, 0, 2, 2)] * 3)),
    ("crop_resize", "rois[1]", lambda t: image.crop_resize(t["batch"], t["batch_out"], [(0, 0, 2, 2), (0, 0, 2)])),
    ("crop_resize", "rois[0]", lambda t: image.crop_resize(t["batch"], t["batch_out"], [(0, 0, 2, 2.5), None])),
    ("crop_resize", "32-bit", lambda t: image.crop_resize(t["batch"], t["batch_out"], (0, 0, 1 << 32, 2))),
    ("crop_resize", "rois is int", lambda t: image.crop_resize(t["batch"], t["batch_out"], 5)),
    ("crop_resize_varshape", "srcs is empty", lambda t: image.crop_resize_varshape([], t["batch_out"])),
    ("crop_resize_varshape", "srcs is one gaio.Tensor",
     lambda t: image.crop_resize_varshape(t["batch"], t["batch_out"])),
    ("crop_resize_varshape", "srcs[1] is str", lambda t: image.crop_resize_varshape([t["u8"], "x"], t["batch_out"])),
    ("crop_resize_varshape", "rois has 1 entries",
     lambda t: image.crop_resize_varshape([t["u8"], t["u8"]], t["batch_out"], [None])),
    ("crop", "roi", lambda t: image.crop(t["u8"], t["u8_out"], (0, 0, 5))),
    ("copy_make_border", "border 'mirror'", lambda t: image.copy_make_border(t["u8_out"], t["u8"], 0, 0, "mirror")),
    ("copy_make_border", "value has 5 entries",
     lambda t: image.copy_make_border(t["u8_out"], t["u8"], 0, 0, value=[1, 2, 3, 4, 5])),
    ("copy_make_border", "value 'red'", lambda t: image.copy_make_border(t["u8_out"], t["u8"], 0, 0, value="red")),
    ("copy_make_border", "top", lambda t: image.copy_make_border(t["u8_out"], t["u8"], 1.5, 0)),
    ("flip", "mode 'diagonal'", lambda t: image.flip(t["u8"], t["u8_same"], "diagonal")),
    ("rotate", "degrees 45", lambda t: image.rotate(t["u8"], t["u8_same"], 45)),
    ("rotate", "degrees 0", lambda t: image.rotate(t["u8"], t["u8_same"], 0)),
    ("warp_affine", "interp 'bicubic'", lambda t: image.warp_affine(t["u8"], t["u8_same"], [1, 0, 0, 0, 1, 0],
                                                                      "bicubic")),
    ("warp_affine", "m", lambda t: image.warp_affine(t["u8"], t["u8_same"], [[1, 0], [0, 1]])),
    ("warp_affine", "m", lambda t: image.warp_affine(t["u8"], t["u8_same"], [1, 0, 0, 0, 1])),
    ("cvt_color", "code 'rgb2hsv'", lambda t: image.cvt_color(t["u8"], t["gray"], "rgb2hsv")),
    ("cvt_color", "yuv 'bt2020'", lambda t: image.cvt_color(t["nv12"], t["u8_out"], "yuv2rgb", "bt2020",
                                                           layout="NV12")),
    ("cvt_color", "layout='NV12'", lambda t: image.cvt_color(t["nv12"], t["u8_out"], "yuv2rgb")),
    ("cvt_color", "only code 'yuv2rgb'", lambda t: image.cvt_color(t["nv12"], t["u8_out"], "swap_rb", layout="NV12")),
    ("cvt_color", "has 7 rows", lambda t: image.cvt_color(t["rows7"], t["u8_out"], "yuv2rgb", layout="I420")),
    ("cvt_color", "uint8 tensor", lambda t: image.cvt_color(t["f32"], t["u8_out"], "yuv2rgb", layout="NV12")),
    ("convert", "scale", lambda t: image.convert(t["u8"], t["f32"], scale="big")),
    ("normalize", "mean has 2 values but the image has 3 channels",
     lambda t: image.normalize(t["u8"], t["f32"], mean=[0.1, 0.2])),
    ("normalize", "std", lambda t: image.normalize(t["u8"], t["f32"], std=None)),
    ("reformat", "src_layout 'HCW'", lambda t: image.reformat(t["u8"], t["chw_f32"], src_layout="HCW")),
    ("reformat", "dst_layout", lambda t: image.reformat(t["u8"], t["chw_f32"], dst_layout="NV12")),
    ("preprocess", "interp", lambda t: image.preprocess(t["u8"], t["chw_f32"], interp="lanczos")),
    ("preprocess", "mean has 4 values", lambda t: image.preprocess(t["u8"], t["chw_f32"], mean=[0.1] * 4)),
    ("preprocess", "dst_layout", lambda t: image.preprocess(t["u8"], t["chw_f32"], dst_layout="I420")),
    ("preprocess_varshape", "srcs is empty", lambda t: image.preprocess_varshape([], t["chw_f32"])),
]


@pytest.mark.parametrize("fn, words, call", BAD_PYTHON_ARGS,
                         ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(BAD_PYTHON_ARGS)])
def test_bad_python_arguments(small, fn, words, call):
    before = small["u8_out"].numpy()
    with pytest.raises(gaio.InvalidArgumentError) as info:
        call(small)
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert f"gaio.image.{fn}:" in msg and words in msg, msg
    assert np.array_equal(small["u8_out"].numpy(), before, equal_nan=True)


BAD_C_ARGS = [
    # (exception, C function, words of gaio's message, call)
    (gaio.InvalidArgumentError, "gaio_resize", "dtype", lambda t: image.resize(t["u8"], t["f32"])),
    (gaio.InvalidArgumentError, "gaio_resize", "channels", lambda t: image.resize(t["gray"], t["u8_out"])),
    (gaio.InvalidArgumentError, "gaio_resize", "batch", lambda t: image.resize(t["batch"], t["u8_out"])),
    (gaio.InvalidArgumentError, "gaio_crop_resize", "rois[1]",
     lambda t: image.crop_resize(t["batch"], t["batch_out"], [(0, 0, 8, 6), (4, 2, 5, 3)])),
    (gaio.InvalidArgumentError, "gaio_crop_resize_varshape", "srcs[1]",
     lambda t: image.crop_resize_varshape([t["u8"], t["gray"]], t["batch_out"])),
    (gaio.InvalidArgumentError, "gaio_crop", "roi", lambda t: image.crop(t["u8"], t["u8_out"], (6, 0, 5, 4))),
    (gaio.InvalidArgumentError, "gaio_copy_make_border", "too small",
     lambda t: image.copy_make_border(t["u8"], t["u8_out"], 0, 0)),
    (gaio.InvalidArgumentError, "gaio_flip", "dst", lambda t: image.flip(t["u8"], t["u8_out"], "both")),
    (gaio.InvalidArgumentError, "gaio_rotate", "dst", lambda t: image.rotate(t["u8"], t["u8_same"], 90)),
    (gaio.Error, "gaio_warp_affine", "interp",
     lambda t: image.warp_affine(t["u8"], t["u8_same"], [1, 0, 0, 0, 1, 0], "cubic")),
    (gaio.InvalidArgumentError, "gaio_warp_affine", "m[0]",
     lambda t: image.warp_affine(t["u8"], t["u8_same"], [float("nan"), 0, 0, 0, 1, 0])),
    (gaio.InvalidArgumentError, "gaio_cvt_color", "channels", lambda t: image.cvt_color(t["u8"], t["u8_same"],
                                                                                      "rgb2gray")),
    (gaio.InvalidArgumentError, "gaio_convert", "shape", lambda t: image.convert(t["u8"], t["chw_f32"])),
    (gaio.InvalidArgumentError, "gaio_normalize", "f32 or f16", lambda t: image.normalize(t["u8"], t["u8_same"])),
    (gaio.InvalidArgumentError, "gaio_normalize", "std[1]",
     lambda t: image.normalize(t["u8"], t["f32"], std=[1.0, 0.0, 1.0])),
    (gaio.InvalidArgumentError, "gaio_reformat", "", lambda t: image.reformat(t["u8"], t["chw_f32"])),
    (gaio.InvalidArgumentError, "gaio_preprocess", "f32 or f16", lambda t: image.preprocess(t["u8"], t["u8_same"])),
    (gaio.InvalidArgumentError, "gaio_preprocess", "channels", lambda t: image.preprocess(t["u8"], t["f32"])),
    (gaio.NotSupportedError, "gaio_preprocess", "LINEAR or AREA",
     lambda t: image.preprocess(t["u8"], t["chw_f32"], interp="cubic")),
    (gaio.InvalidArgumentError, "gaio_preprocess_varshape", "srcs[1]",
     lambda t: image.preprocess_varshape([t["u8"], t["f32"]], t["nchw_f32"])),
]


@pytest.mark.parametrize("exc, cfn, words, call", BAD_C_ARGS,
                         ids=[f"{c}-{i}" for i, (_, c, _, _) in enumerate(BAD_C_ARGS)])
def test_gaio_refusals_name_the_c_function(small, exc, cfn, words, call):
    before = {k: t.numpy() for k, t in small.items()}
    with pytest.raises(exc) as info:
        call(small)
    msg = str(info.value)
    assert msg.startswith(cfn + ":") and words in msg, msg
    for k, t in small.items():  # a refused call enqueues nothing
        assert np.array_equal(t.numpy(), before[k], equal_nan=True), k


def test_tensors_that_are_no_image(small):
    five = blank((1, 2, 3, 4, 1), "u8", "cpu" if small["u8"].device.kind == "cpu" else "cuda:0")
    with pytest.raises(gaio.NotSupportedError) as info:
        image.resize(small["u8"], five)
    msg = str(info.value)
    assert "gaio.image.resize: dst" in msg and "gaio_dlpack_view_to_image" in msg, msg
    t = small["batch"]
    # channels not adjacent: a transposed view
    strided = gaio.Tensor(t.buffer, t.offset, "uint8", (2, 6, 3, 8), (144, 24, 1, 3), t.stream)
    with pytest.raises(gaio.Error, match="gaio.image.flip: src"):
        image.flip(strided, small["batch"], "both")


def test_read_only_dst(small):
    d = small["u8_same"]
    ro = gaio.Tensor(d.buffer, d.offset, d.dtype, d.shape, None, d.stream, read_only=True)
    with pytest.raises(gaio.InvalidArgumentError, match="gaio.image.flip: dst is read-only"):
        image.flip(small["u8"], ro, "both")


def test_other_device_stream(image_device):
    """A stream of another device than the tensors': gaio's check, nothing run."""
    if image_device == "cpu" and gaio.device_count() < 2:
        pytest.skip("needs a second device")
    other = gaio.Stream("cuda:0" if image_device == "cpu" else "cpu")
    s, d = up(np.ones((4, 4, 3), np.uint8), image_device), blank((4, 4, 3), "u8", image_device)
    with pytest.raises(gaio.Error, match="gaio_flip"):
        image.flip(s, d, "both", stream=other)


# ---- streams and asyncio ------------------------------------------------------------------


def test_stream_defaults_and_marks(image_device, image_rng):
    a = rand(image_rng, (20, 30, 3), "u8")

    def run(dev):  # the streams' checks hold on the CPU backend too, where a GPU's reference runs
        s1 = gaio.Stream(dev)
        src = up(a, dev, stream=s1)
        assert src.stream == s1
        d = gaio.empty((20, 30, 3), "uint8", device=dev)
        assert d.stream is None
        image.flip(src, d, "vertical")  # on the stream src last used
        assert src.stream == s1 and d.stream == s1
        s2 = gaio.Stream(dev)
        s2.wait(s1)
        e = gaio.empty((30, 20, 3), "uint8", device=dev)
        image.rotate(d, e, 90, stream=s2)  # an explicit stream wins, and marks both
        assert d.stream == s2 and e.stream == s2
        fresh = gaio.empty((20, 30, 3), "uint8", device=dev)
        out = gaio.empty((20, 30, 3), "uint8", device=dev)
        fresh.copy_(a)
        fresh.stream = None  # no stream used yet: the context's default stream
        image.flip(fresh, out, "horizontal")
        assert out.stream == gaio.default_context(dev).default_stream
        return e.numpy(), out.numpy()

    check(("flip then rotate", "flip on the default stream"), image_device, run,
          lambda: (cv2.rotate(cv2.flip(a, 0), cv2.ROTATE_90_CLOCKWISE), cv2.flip(a, 1)))


def test_chain_on_stream_with_asyncio(image_device, image_rng):
    """A decode-side pipeline chained on one non-default stream, awaited from asyncio."""
    rng = image_rng
    h, w = 2 * int(rng.integers(20, 60)), 2 * int(rng.integers(20, 60))
    _, _, _, frames = yuv_frames(rng, 1, h, w)
    frame = frames["NV12"][0]

    async def pipeline(dev) -> tuple[np.ndarray, np.ndarray]:
        s = gaio.Stream(dev)
        src = up(frame, dev, stream=s)
        rgb = gaio.empty((h, w, 3), "uint8", stream=s)
        small = gaio.empty((32, 48, 3), "uint8", stream=s)
        norm = gaio.empty((32, 48, 3), "float32", stream=s)
        chw = gaio.empty((3, 32, 48), "float32", stream=s)
        image.cvt_color(src, rgb, "yuv2rgb", layout="NV12")
        image.resize(rgb, small, "area")
        image.normalize(small, norm, 1 / 255, [0.5, 0.4, 0.3], [0.2, 0.25, 0.3])
        image.reformat(norm, chw)
        assert all(t.stream == s for t in (src, rgb, small, norm, chw))
        fence = s.fence()
        await fence
        assert fence.done()
        return small.numpy(), chw.numpy()

    got_small, got = asyncio.run(pipeline(image_device))
    want_small = reference(image_device, lambda dev: asyncio.run(pipeline(dev))[0],
                           lambda: cv2.resize(cv2.cvtColor(frame, cv2.COLOR_YUV2RGB_NV12), (48, 32),
                                              interpolation=cv2.INTER_AREA))
    assert_close(got_small, want_small, 1.0, 0.0, label(image_device, "async chain: area resize"))
    # normalize the bytes gaio resized: the remaining steps are exact up to float rounding
    m, sd = np.array([0.5, 0.4, 0.3]), np.array([0.2, 0.25, 0.3])
    want = ((got_small.astype(np.float64) * np.float32(1 / 255) - m) / sd).astype(np.float32).transpose(2, 0, 1)
    assert_close(got, np.ascontiguousarray(want), 1e-5, 1e-5, "async chain: normalize + reformat")

    # the same chain on the default streams gives the same bytes
    src = up(frame, image_device)
    rgb = blank((h, w, 3), "u8", image_device)
    small = blank((32, 48, 3), "u8", image_device)
    image.cvt_color(src, rgb, "yuv2rgb", layout="NV12")
    image.resize(rgb, small, "area")
    assert np.array_equal(small.numpy(), got_small)
