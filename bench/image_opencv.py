#!/usr/bin/env python3
"""OpenCV peer of the CPU image benchmark (bench/bench_image_cpu.c runs it).

Times cv2.resize of one u8 RGB frame (random bytes) with cv2.setNumThreads(1) and
with OpenCV's default threads, and prints one line per figure, "NAME MS" (the
median ms per call after warm-up), plus "note:" lines. Names: linear_720_t1,
area_224_t1, linear_720_tN, area_224_tN."""
import argparse
import sys
import time

try:
    import numpy as np
    import cv2
except Exception as e:  # the C side shows this and prints "-"
    print("note: OpenCV peer skipped: %s: %s" % (type(e).__name__, e))
    sys.exit(0)


def median_ms(fn, samples, warmup):
    for _ in range(warmup):
        fn()
    v = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        v.append((time.perf_counter() - t0) * 1e3)
    v.sort()
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()

    rng = np.random.default_rng(12345)
    src = rng.integers(0, 256, size=(a.height, a.width, 3), dtype=np.uint8)
    ops = [
        ("linear_720", (1280, 720), cv2.INTER_LINEAR),
        ("area_224", (224, 224), cv2.INTER_AREA),
    ]
    default_threads = cv2.getNumThreads()
    print("note: OpenCV %s, numpy %s, default threads %d" % (cv2.__version__, np.__version__, default_threads))
    for suffix, threads in (("t1", 1), ("tN", default_threads)):
        cv2.setNumThreads(threads)
        for name, size, interp in ops:
            dst = np.empty((size[1], size[0], 3), dtype=np.uint8)
            ms = median_ms(lambda: cv2.resize(src, size, dst=dst, interpolation=interp), a.samples, a.warmup)
            print("%s_%s %.4f" % (name, suffix, ms), flush=True)
    cv2.setNumThreads(default_threads)


if __name__ == "__main__":
    main()
