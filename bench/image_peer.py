"""What the GPU peers of the CUDA image benchmark share (bench/image_torch.py,
bench/image_cvcuda.py): the arguments bench/bench_image_cuda.c passes, and the
timing of one call: torch.cuda.Event medians after warm-up, a fill_ of a buffer
larger than the L2 before each sample (a cold L2, as gaio's rows)."""
import argparse


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--crop", type=int, default=1080)
    ap.add_argument("--out", type=int, default=224)
    ap.add_argument("--samples", type=int, default=25)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--flush-mib", type=int, default=256)
    ap.add_argument("--varshape", default="640x480,1280x720,1920x1080,2560x1440,3840x2160")
    return ap.parse_args()


def make_timer(torch, a, dev):
    """timed(fn) -> the median ms of a.samples calls of fn, each on a cold L2."""
    flush = torch.empty(a.flush_mib << 20, dtype=torch.uint8, device=dev)
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)

    def timed(fn):
        for _ in range(a.warmup):
            fn()
        torch.cuda.synchronize()
        v = []
        for i in range(a.samples):
            flush.fill_(i & 0xFF)
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            v.append(e0.elapsed_time(e1))
        return median(v)

    return timed


def best_of(name, shape, variants, timed, short=lambda v: v):
    """(ms, variant) of the fastest variant of a row that gives the output shape, or
    None; prints a note for each that fails (short(variant) names it there)."""
    best = None
    for vname, fn in variants:
        if fn is None:
            continue
        try:
            y = fn()
            if tuple(y.shape) != shape:
                print("note: %s / %s gave shape %s, not %s" % (name, vname, tuple(y.shape), shape))
                continue
            del y
            ms = timed(fn)
        except Exception as e:
            print("note: %s / %s failed: %s: %s" % (name, short(vname), type(e).__name__, str(e)[:120]))
            continue
        if best is None or ms < best[0]:
            best = (ms, vname)
    return best
