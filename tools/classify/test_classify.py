#!/usr/bin/python3
"""`gaio classify` end to end: make_demo.py's colour classifier and images (their right
answers known by construction, their probabilities computed directly in numpy from
OpenCV's decode), plus a corrupt JPEG, a truncated PNG, a missing file and bad
arguments.

    test_classify.py GAIO [--device N|gpu] [--workdir DIR] [--nvjpeg-check NVJPEG_DECODE_CHECK]

--device gpu takes the first CUDA device `gaio info` lists (which must exit 0); where
there is none it prints "SKIPPED: ..." and exits 77 (ctest's SKIP_RETURN_CODE), or
fails when the environment sets GAIO_REQUIRE_GPU=1, quoting what `gaio info` says of
the CUDA backend. On a GPU the JPEGs must be decoded by nvJPEG: gaio classify's
summary must say it decodes with nvJPEG (not "host (no nvJPEG: ...)"), and
NVJPEG_DECODE_CHECK (tools/classify/nvjpeg_decode_check.c, the same decoder as gaio
classify's, required with --device gpu) must decode every baseline JPEG of the test
on the GPU, batched and alone to the same bytes, with the size and mean colours of
OpenCV's decode. The seed (GAIO_TEST_SEED, else the clock) is printed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_demo  # noqa: E402  (numpy, cv2, onnx: it says what is missing)

import cv2  # noqa: E402
import numpy as np  # noqa: E402

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return cond


def run(args, timeout=300):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


SKIP = 77  # ctest's SKIP_RETURN_CODE for cli_classify_gpu (tools/CMakeLists.txt)


def require_gpu():
    """Whether GAIO_REQUIRE_GPU is set (scripts/gpu-check): no CUDA device is then a failure."""
    return os.environ.get("GAIO_REQUIRE_GPU", "") not in ("", "0")


def first_gpu(gaio):
    """(index of the first CUDA device `gaio info` lists or None, what it says of the
    CUDA backend). `gaio info` must succeed: anything else raises SystemExit(1)."""
    rc, out, err = run([gaio, "info"])
    if rc != 0:
        print(f"FAIL: gaio info -> exit {rc}, stdout {out!r}, stderr {err!r}", flush=True)
        raise SystemExit(1)
    m = re.search(r"^\s*\[(\d+)\] cuda ", out, re.M)
    backend = re.search(r"^\s*cuda\s+(.*)$", out, re.M)
    return (m.group(1) if m else None), (backend.group(1).strip() if backend else "not listed by gaio info")


def jpeg_sof(data):
    """The SOF marker of a JPEG (0xC0 baseline, 0xC1 extended, 0xC2 progressive, ...), or None."""
    i = 2
    while i + 4 <= len(data) and data[i] == 0xFF:
        marker = data[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return marker
        if marker == 0xDA:  # start of scan before any frame header
            return None
        i += 2 + (data[i + 2] << 8 | data[i + 3])
    return None


NVJ_MEAN = re.compile(r"^(.*): (\d+)x(\d+) mean R ([0-9.]+) G ([0-9.]+) B ([0-9.]+)(.*)$")
NVJ_REFUSED = re.compile(r"^(.*): (UNSUPPORTED|FAILED|cannot read)\b(.*)$")


def check_nvjpeg(checker, jpegs):
    """nvjpeg_decode_check on the JPEGs: every baseline one decoded on the GPU (batched
    and alone alike), its size OpenCV's and its mean R, G, B within 1.5 of OpenCV's
    decode (libjpeg-turbo; the IDCT and chroma upsampling differ a little)."""
    rc, out, err = run([checker, *jpegs])
    print("\n".join("  nvjpeg_decode_check: " + ln for ln in out.splitlines()[:1] + out.splitlines()[-1:]), flush=True)
    check(rc == 0, f"nvjpeg_decode_check exit {rc}: stdout {out!r}, stderr {err!r}")
    decoded, refused = {}, {}
    for line in out.splitlines():
        m = NVJ_MEAN.match(line)
        if m:
            decoded[m.group(1)] = (int(m.group(2)), int(m.group(3)), [float(m.group(k)) for k in (4, 5, 6)],
                                   m.group(7).strip())
            continue
        m = NVJ_REFUSED.match(line)
        if m:
            refused[m.group(1)] = m.group(2) + m.group(3)
    baseline = 0
    worst = 0.0
    for path in jpegs:
        sof = jpeg_sof(open(path, "rb").read())
        if sof in (0xC0, 0xC1):
            baseline += 1
            check(path in decoded, f"nvJPEG did not decode baseline JPEG {os.path.basename(path)}: "
                                   f"{refused.get(path, 'not in the output')}")
        else:
            check(path in decoded or refused.get(path, "").startswith("UNSUPPORTED"),
                  f"nvJPEG failed on {os.path.basename(path)} (SOF {sof}): {refused.get(path, 'not in the output')}")
        if path not in decoded:
            continue
        w, h, means, note = decoded[path]
        rgb = cv2.imread(path, cv2.IMREAD_COLOR)[..., ::-1]
        check((h, w) == rgb.shape[:2], f"nvJPEG: {os.path.basename(path)} is {w}x{h}, OpenCV's {rgb.shape[1]}x{rgb.shape[0]}")
        check(note == "", f"nvJPEG: {os.path.basename(path)}: {note}")
        ref = rgb.reshape(-1, 3).astype(np.float64).mean(axis=0)
        diff = max(abs(a - b) for a, b in zip(means, ref))
        worst = max(worst, diff)
        check(diff <= 1.5, f"nvJPEG: {os.path.basename(path)}: mean RGB {means}, OpenCV's {ref.round(3).tolist()}")
    check(baseline > 0, "the test made no baseline JPEG: nvJPEG went unchecked")
    print(f"  nvJPEG decoded {len(decoded)} of {len(jpegs)} JPEGs on the GPU (all {baseline} baseline ones), "
          f"mean colours within {worst:.3f} of OpenCV's", flush=True)


LINE = re.compile(r"^(\S+): (.*)$")
ENTRY = re.compile(r"^(\d+)(?: (\S+))? \(([0-9.]+)\)$")


def parse(stdout):
    got = {}
    for line in stdout.splitlines():
        if line.startswith("gaio classify:"):
            continue
        m = LINE.match(line)
        if not m:
            continue
        got[m.group(1)] = [ENTRY.match(e.strip()).groups() for e in m.group(2).split(",")]
    return got


def test_cache(gaio, work, model, files, labels, device):
    """The engine cache: a first run builds and writes an entry, a second loads it (and says
    so) with the same answers; --no-cache writes nothing; a corrupted, truncated or empty
    entry is rebuilt and overwritten, never a crash; the default directory follows
    XDG_CACHE_HOME; a cache that cannot be written still classifies."""
    imgs = files[:6]
    cache = os.path.join(work, "cache")
    base = [gaio, "classify", model, *imgs, "--labels", labels, "--top", "3", "--batch", "4", "--device", device]

    def entries(d):
        return sorted(f for f in os.listdir(d) if f.endswith(".engine")) if os.path.isdir(d) else []

    def same(out_a, out_b, what):
        a, b = parse(out_a), parse(out_b)
        ok = check(set(a) == set(imgs) and set(b) == set(imgs), f"{what}: not every image classified: {sorted(b)}")
        for p in imgs if ok else []:
            ca, cb = [(e[0], e[1]) for e in a[p]], [(e[0], e[1]) for e in b[p]]
            pa, pb = [float(e[2]) for e in a[p]], [float(e[2]) for e in b[p]]
            check(ca == cb and max(abs(x - y) for x, y in zip(pa, pb)) <= 2e-4,
                  f"{what}: {os.path.basename(p)}: {b[p]}, the first run said {a[p]}")

    t = time.time()
    rc, out1, err = run(base + ["--cache", cache])
    check(rc == 0 and "engine built in" in err and "saved to the cache" in err,
          f"cache, first run: exit {rc}, stderr {err!r} (want 'engine built in' and 'saved to the cache')")
    made = entries(cache)
    check(len(made) == 1 and os.path.getsize(os.path.join(cache, made[0])) > 0 if made else False,
          f"cache, first run: entries {made}, want one engine file in {cache}")
    check(sorted(os.listdir(cache)) == made if os.path.isdir(cache) else False,
          f"cache, first run: files besides the entry: {os.listdir(cache) if os.path.isdir(cache) else None}")
    rc, out2, err = run(base + ["--cache", cache])
    check(rc == 0 and "engine loaded from the cache" in err and "built" not in err,
          f"cache, second run: exit {rc}, stderr {err!r} (want 'engine loaded from the cache')")
    same(out1, out2, "cache, second run")
    check(entries(cache) == made, f"cache, second run: entries {entries(cache)}, want {made}")
    # Another batch is another entry.
    rc, _, err = run(base[:-4] + ["--batch", "2", "--device", device, "--cache", cache])
    check(rc == 0 and "engine built in" in err and len(entries(cache)) == 2,
          f"cache, batch 2: exit {rc}, entries {entries(cache)}, stderr {err!r}")

    # --no-cache: built, nothing written (not even the directory).
    nocache = os.path.join(work, "nocache_xdg")
    env_xdg = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = nocache
    rc, out3, err = run(base + ["--no-cache"])
    check(rc == 0 and "engine built in" in err and "loaded" not in err and not os.path.exists(nocache),
          f"--no-cache: exit {rc}, stderr {err!r}, {nocache} exists: {os.path.exists(nocache)}")
    same(out1, out3, "--no-cache")
    # The default directory: $XDG_CACHE_HOME/gaio.
    rc, _, err = run(base)
    check(rc == 0 and len(entries(os.path.join(nocache, "gaio"))) == 1,
          f"default cache: exit {rc}, entries in $XDG_CACHE_HOME/gaio: {entries(os.path.join(nocache, 'gaio'))}, "
          f"stderr {err!r}")
    if env_xdg is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = env_xdg

    # Broken entries: rebuilt, overwritten, the answers unchanged; the next run loads.
    if made:
        entry = os.path.join(cache, made[0])
        good = open(entry, "rb").read()
        rng = np.random.default_rng(len(good))
        flipped = bytearray(good)
        for i in rng.integers(0, min(len(good), 4096), 32):  # the header and the plan, where the checks are
            flipped[i] ^= 0xFF
        for name, data in [("random bytes", bytes(rng.integers(0, 256, 8192, dtype=np.uint8))),
                           ("truncated", good[:len(good) // 2]), ("empty", b""), ("flipped header", bytes(flipped))]:
            open(entry, "wb").write(data)
            rc, out4, err = run(base + ["--cache", cache])
            check(rc == 0, f"cache entry {name}: exit {rc}, stderr {err!r}")
            if rc == 0:
                same(out1, out4, f"cache entry {name}")
            if "loaded from the cache" in err:  # flipped bytes gaio_engine_load does not notice
                check(name == "flipped header", f"cache entry {name}: loaded: {err!r}")
                continue
            check("is stale" in err and "rebuilt" in err and "saved to the cache" in err,
                  f"cache entry {name}: stderr {err!r} (want 'is stale', 'rebuilt', 'saved to the cache')")
            check(open(entry, "rb").read() != data, f"cache entry {name}: not overwritten")
            rc, _, err = run(base + ["--cache", cache])
            check(rc == 0 and "engine loaded from the cache" in err, f"cache entry {name}, after the rebuild: {err!r}")

    # A cache that cannot be written: a file where the directory should be. Classified anyway.
    blocker = os.path.join(work, "not_a_dir")
    open(blocker, "w").write("x")
    rc, out5, err = run(base + ["--cache", os.path.join(blocker, "sub")])
    check(rc == 0 and "not cached" in err, f"unwritable cache: exit {rc}, stderr {err!r}")
    if rc == 0:
        same(out1, out5, "unwritable cache")

    # Usage.
    for args, says in [(["--cache"], "needs a value"), (["--cache", cache, "--no-cache"], "--no-cache")]:
        rc, out, err = run([gaio, "classify", model, imgs[0], *args, "--device", device])
        check(rc == 2 and says in err, f"classify {' '.join(args)}: exit {rc} (want 2), stderr {err!r}")
    print(f"  engine cache: built, loaded, rebuilt over broken entries ({time.time() - t:.1f} s)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gaio")
    ap.add_argument("--device", default="0")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--nvjpeg-check", default=None, help="nvjpeg_decode_check: with --device gpu, asserts nvJPEG decodes")
    a = ap.parse_args()
    env = os.environ.get("GAIO_TEST_SEED")
    seed = int(env, 0) if env else (int(time.time() * 1000) ^ os.getpid()) & 0xFFFFFFFF
    print(f"test_classify.py: seed {seed} (GAIO_TEST_SEED={seed} reproduces it)", flush=True)
    device = a.device
    gpu = device == "gpu"
    if gpu:
        device, backend = first_gpu(a.gaio)
        if device is None:
            if require_gpu():
                print(f"FAIL: GAIO_REQUIRE_GPU={os.environ['GAIO_REQUIRE_GPU']} is set but `gaio info` lists no CUDA "
                      f"device (CUDA backend: {backend})", flush=True)
                return 1
            print(f"SKIPPED: no CUDA device (CUDA backend: {backend})", flush=True)
            return SKIP
        if not a.nvjpeg_check or not os.access(a.nvjpeg_check, os.X_OK):
            print(f"FAIL: --device gpu needs --nvjpeg-check (nvjpeg_decode_check), got {a.nvjpeg_check!r}", flush=True)
            return 1
    work = a.workdir or tempfile.mkdtemp(prefix="gaio_classify_")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.environ["XDG_CACHE_HOME"] = os.path.join(work, "xdg_cache")  # gaio classify's engine cache: not in ~
    rc, out, err = run([sys.executable, os.path.join(HERE, "make_demo.py"), work, "--seed", str(seed), "--count", "40"])
    if not check(rc == 0, f"make_demo.py failed: {err}"):
        return 1
    expected = {}
    for line in open(os.path.join(work, "expected.txt")):
        name, cls, _ = line.split()
        expected[name] = cls
    names = sorted(expected)
    files = [os.path.join(work, n) for n in names]
    model, labels = os.path.join(work, "colours.onnx"), os.path.join(work, "labels.txt")

    # Every image, batches of 8 (the last one short), top 3 with labels; on a GPU
    # --decode gpu, so that nvJPEG takes every JPEG it can.
    t = time.time()
    rc, out, err = run([a.gaio, "classify", model, *files, "--labels", labels, "--top", "3", "--batch", "8",
                        "--device", device, *(["--decode", "gpu"] if gpu else [])])
    summary = out.splitlines()[-1] if out else err
    print(summary, flush=True)
    check(rc == 0, f"classify exit {rc}: {err}")
    if gpu:  # nvJPEG opened, not the host fallback ("decode host (no nvJPEG: ...)")
        check(re.search(r", decode nvJPEG (hardware|CUDA) \+ host[ ,]", summary) is not None,
              f"on a GPU gaio classify must decode with nvJPEG; its summary says: {summary!r}")
    got = parse(out)
    check(len(got) == len(files), f"{len(got)} result lines for {len(files)} images")
    worst = 0.0
    for path, name in zip(files, names):
        r = got.get(path)
        if not check(r is not None and len(r) == 3, f"{name}: no top-3 line"):
            continue
        idx, label, prob = int(r[0][0]), r[0][1], float(r[0][2])
        check(label == expected[name] and make_demo.CLASSES[idx] == label,
              f"{name}: classified {label} ({idx}), expected {expected[name]}")
        rgb = cv2.imread(path, cv2.IMREAD_COLOR)[..., ::-1]
        ref = make_demo.reference(rgb)
        # The reference averages the crop directly; gaio resizes it to 224 (bilinear,
        # on the GPU from nvJPEG's decode) and blurs: means move by well under 1%.
        worst = max(worst, abs(prob - ref.max()))
        check(abs(prob - ref.max()) < 0.02, f"{name}: top probability {prob:.4f}, direct computation {ref.max():.4f}")
        probs = [float(e[2]) for e in r]
        check(probs == sorted(probs, reverse=True), f"{name}: top 3 not in descending order: {probs}")
    print(f"  {len(files)} images: labels right, top probability within {worst:.4f} of the direct computation "
          f"({time.time() - t:.1f} s)")
    if gpu:
        check_nvjpeg(a.nvjpeg_check, [f for f in files if f.endswith(".jpg")])

    # --decode auto (the default): these images are too few for nvJPEG's start on the
    # machine's threads; on one thread it starts beside the host decodes, and takes
    # the batches read once it is up, if any. The same classes every way.
    for extra, says in (([], r", decode host \(\d+ images for \d+ threads: nvJPEG not started\)"),
                        (["--threads", "1"], r", decode host(, then nvJPEG (hardware|CUDA) \+ host from batch \d+| "
                                             r"\(nvJPEG (hardware|CUDA) was up only after the last batch was read\)),"),
                        (["--decode", "host"], r", decode host \(--decode host\),")):
        rc, out, err = run([a.gaio, "classify", model, *files, "--labels", labels, "--top", "1", "--batch", "8",
                            "--device", device, *extra])
        summary = out.splitlines()[-1] if out else err
        check(rc == 0, f"{extra or 'default'}: exit {rc}: {err}")
        check(not gpu or re.search(says, summary) is not None,
              f"{extra or 'default'}: the summary does not match {says!r}: {summary!r}")
        got = parse(out)
        for path, name in zip(files, names):
            r = got.get(path)
            check(r is not None and r[0][1] == expected[name], f"{extra or 'default'}: {name}: {r}")
        m = re.search(r", decode (.*), \d+ host threads?;", summary)
        print(f"  {' '.join(extra) or 'default'}: labels right; decode {m.group(1) if m else '?'}", flush=True)

    # Without labels, batch 1, top 1: indices only; the same classes.
    rc, out, err = run([a.gaio, "classify", model, *files[:5], "--top", "1", "--batch", "1", "--device", device])
    check(rc == 0, f"batch 1: exit {rc}: {err}")
    for path, name in zip(files[:5], names[:5]):
        r = parse(out).get(path)
        check(r is not None and r[0][1] is None and make_demo.CLASSES[int(r[0][0])] == expected[name],
              f"batch 1, no labels: {name}: {r}")

    # The host's share of the JPEGs nvJPEG could take: every one (1), none (0), half; the
    # same classes each way. On a GPU the summary says the share; on the host there is
    # no nvJPEG to share with, and the option changes nothing.
    for share, says in (("1", "(host share 8/8)"), ("0", ", decode nvJPEG"), ("0.5", "(host share 4/8)")):
        rc, out, err = run([a.gaio, "classify", model, *files, "--labels", labels, "--top", "1", "--batch", "8",
                            "--device", device, "--host-share", share])
        check(rc == 0, f"--host-share {share}: exit {rc}: {err}")
        summary = out.splitlines()[-1] if out else err
        check(not gpu or says in summary, f"--host-share {share}: the summary does not say {says!r}: {summary!r}")
        got = parse(out)
        for path, name in zip(files, names):
            r = got.get(path)
            check(r is not None and r[0][1] == expected[name], f"--host-share {share}: {name}: {r}")

    # Bad files among good ones: each bad one is reported, the others still classified, exit 1.
    corrupt = os.path.join(work, "corrupt.jpg")
    jpg = next(f for f in files if f.endswith(".jpg"))
    data = bytearray(open(jpg, "rb").read())
    rng = np.random.default_rng(seed)
    for i in rng.integers(len(data) // 3, len(data) - 2, 200):
        data[i] = int(rng.integers(0, 256))
    data[2] = 0x00  # no longer a marker after SOI
    open(corrupt, "wb").write(bytes(data))
    png = next(f for f in files if f.endswith(".png"))
    truncated = os.path.join(work, "truncated.png")
    open(truncated, "wb").write(open(png, "rb").read()[:200])
    missing = os.path.join(work, "missing.jpg")
    notimage = os.path.join(work, "labels.txt")
    mixed = [files[1], corrupt, files[2], truncated, missing, notimage, files[3]]
    rc, out, err = run([a.gaio, "classify", model, *mixed, "--labels", labels, "--batch", "3", "--device", device])
    check(rc == 1, f"bad files: exit {rc}, expected 1")
    got = parse(out)
    for f in (files[1], files[2], files[3]):
        check(f in got and got[f][0][1] == expected[os.path.basename(f)], f"bad files: {f} not classified right")
    for f in (corrupt, truncated, missing, notimage):
        check(f not in got and f in err, f"bad files: {os.path.basename(f)} not reported on stderr: {err}")
    check("4 failed" in out, f"bad files: the summary does not count 4 failures: {out.splitlines()[-1:]}")

    # Usage and model errors: exit 2 (usage) or 1, one line saying what.
    bad_labels = os.path.join(work, "bad_labels.txt")
    open(bad_labels, "w").write("one\ntwo\n")
    for args, want, says in [
        ([], 2, "no model"),
        ([model], 2, "no images"),
        ([model, files[0], "--top", "0"], 2, "--top"),
        ([model, files[0], "--batch", "x"], 2, "--batch"),
        ([model, files[0], "--device", "999"], 2, "no such device"),
        ([model, files[0], "--frobnicate"], 2, "unknown option"),
        ([model, files[0], "--labels"], 2, "needs a value"),
        ([model, files[0], "--host-share", "1.5"], 2, "--host-share"),
        ([model, files[0], "--host-share", "x"], 2, "--host-share"),
        ([model, files[0], "--host-share", "0.5", "--host-decode"], 2, "give one"),
        ([model, files[0], "--host-share", "0.5", "--decode", "auto"], 2, "give one"),
        ([model, files[0], "--decode", "host", "--decode", "gpu"], 2, "give one"),
        ([model, files[0], "--decode", "fast"], 2, "not auto, gpu or host"),
        ([model, files[0], "--labels", bad_labels], 1, "2 labels"),
        ([labels, files[0]], 1, "gaio_model_load"),
    ]:
        dev = [] if "--device" in args else ["--device", device]
        rc, out, err = run([a.gaio, "classify", *args, *dev])
        check(rc == want and says in err, f"classify {' '.join(args[-2:])}: exit {rc} (want {want}), stderr {err!r}")

    test_cache(a.gaio, work, model, files, labels, device)

    print(f"test_classify.py: {len(FAILURES)} failures (device {device}, files in {work})")
    if not FAILURES and not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
