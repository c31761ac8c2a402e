#!/usr/bin/env python3
"""Many small GPU jobs under asyncio: gaio futures against the two ways PyTorch users
await GPU work today (issue [4/6]'s benchmark).

A job copies a 224x224x3 uint8 image from pinned host memory to the GPU, normalizes
it per channel to float32 ((x / 255 - mean) / std) and copies the result back to
pinned memory. `--concurrency` jobs (64) run at once under one asyncio loop, each on
a stream of its own, for `--seconds`; each row reports jobs/s and the p50 / p99 of a
job's latency (submission to its completion seen by the loop):

  gaio       gaio.copy + gaio.image.normalize + gaio.copy; `await stream.fence()`
             (the loop's completion queue), on DEFERRED streams: the loop thread
             validates and queues, gaio's submission thread makes the driver calls
  gaio-inline the same on plain streams: the loop thread makes the driver calls
  torch+pool the same in PyTorch in a thread pool (loop.run_in_executor) ending with
             stream.synchronize()
  torch+poll the same in PyTorch on the loop, then Event.query() polled between
             `await asyncio.sleep(0)`

The floor is the jobs/s that the PCIe copies alone allow: bytes per job over the
pinned-copy bandwidth measured in the same run (host->device and device->host run
on separate copy engines at once, so the slower direction bounds). Ratios are
floor jobs/s over each row's jobs/s (1.0 = at the floor). Every row's outputs are
checked against numpy once at the end.

A second table offers jobs at a fixed rate (--rate, 20,000/s: the target's) instead
of back to back: a closed loop at saturation measures latency at 100% load, where by
Little's law it is concurrency / throughput however fast each job is; the open loop
measures the latency a job sees at the target's load.

Usage: async_jobs.py [--concurrency 64] [--seconds 3] [--rate 20000] [--device 0] [--only gaio,...]
Needs a CUDA GPU and PyTorch; gaio from GAIO_LIBRARY/PYTHONPATH or an installed package."""
from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

H, W, C = 224, 224, 3
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def expected(img: np.ndarray) -> np.ndarray:
    x = img.astype(np.float32) / np.float32(255)
    return (x - np.asarray(MEAN, np.float32)) / np.asarray(STD, np.float32)


def percentile(v: list[float], p: float) -> float:
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


async def drive(job, slots: list, seconds: float) -> tuple[int, list[float]]:
    """Runs job(slot) back to back on every slot until the time is up."""
    lat: list[float] = []
    stop = time.perf_counter() + seconds

    async def worker(slot):
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            await job(slot)
            lat.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(s) for s in slots))
    return len(lat) / (time.perf_counter() - t0), lat


async def drive_open(job, slots: list, seconds: float, rate: float) -> tuple[int, list[float]]:
    """Open loop: jobs arrive at `rate` per second whether or not earlier ones are done;
    each takes a free slot (at most len(slots) in flight) and its latency counts from
    its arrival, so time spent waiting for a slot counts too."""
    lat: list[float] = []
    free = list(slots)
    loop = asyncio.get_running_loop()
    slot_freed = asyncio.Event()

    async def one(slot, arrival):
        await job(slot)
        lat.append(time.perf_counter() - arrival)
        free.append(slot)
        slot_freed.set()

    t0 = time.perf_counter()
    stop, issued, tasks = t0 + seconds, 0, set()
    while True:
        now = time.perf_counter()
        if now >= stop:
            break
        due = int((now - t0) * rate)
        while issued < due and free:
            task = loop.create_task(one(free.pop(), t0 + issued / rate))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            issued += 1
        if issued < due:  # backlog: every slot busy
            slot_freed.clear()
            await slot_freed.wait()
        else:
            await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    return len(lat) / (time.perf_counter() - t0), lat


# ---- gaio --------------------------------------------------------------------------


def gaio_setup(gaio, dev: str, n: int, images: list[np.ndarray], flags: int):
    slots = []
    for i in range(n):
        s = gaio.Stream(dev, flags=flags)
        h_in = gaio.empty((H, W, C), "uint8", device=dev, kind="pinned")
        h_in.host_array()[...] = images[i % len(images)]
        slots.append({
            "stream": s, "h_in": h_in, "d_in": gaio.empty((H, W, C), "uint8", device=dev),
            "d_out": gaio.empty((H, W, C), "float32", device=dev),
            "h_out": gaio.empty((H, W, C), "float32", device=dev, kind="pinned"), "img": images[i % len(images)]})
    return slots


def gaio_job(gaio):
    copy, normalize = gaio.copy, gaio.image.normalize

    async def job(slot):
        s = slot["stream"]
        copy(slot["d_in"], slot["h_in"], s)
        normalize(slot["d_in"], slot["d_out"], scale=1 / 255, mean=MEAN, std=STD, stream=s)
        copy(slot["h_out"], slot["d_out"], s)
        await s.fence()
    return job


# ---- torch -------------------------------------------------------------------------


def torch_setup(torch, n: int, images: list[np.ndarray]):
    mean = torch.tensor(MEAN, device="cuda").view(1, 1, 3)
    inv_std = 1 / torch.tensor(STD, device="cuda").view(1, 1, 3)
    slots = []
    for i in range(n):
        img = images[i % len(images)]
        slots.append({"stream": torch.cuda.Stream(), "h_in": torch.from_numpy(img).pin_memory(),
                      "d_in": torch.empty((H, W, C), dtype=torch.uint8, device="cuda"),
                      "h_out": torch.empty((H, W, C), dtype=torch.float32).pin_memory(),
                      "mean": mean, "inv_std": inv_std, "img": img})
    return slots


def torch_enqueue(torch, slot):
    with torch.cuda.stream(slot["stream"]):
        slot["d_in"].copy_(slot["h_in"], non_blocking=True)
        out = (slot["d_in"].float() / 255 - slot["mean"]) * slot["inv_std"]
        slot["h_out"].copy_(out, non_blocking=True)


def torch_pool_job(torch, pool):
    def blocking(slot):
        torch_enqueue(torch, slot)
        slot["stream"].synchronize()

    async def job(slot):
        await asyncio.get_running_loop().run_in_executor(pool, blocking, slot)
    return job


def torch_poll_job(torch):
    async def job(slot):
        torch_enqueue(torch, slot)
        ev = slot["stream"].record_event()
        while not ev.query():
            await asyncio.sleep(0)
    return job


# ---- the floor ---------------------------------------------------------------------


def copy_bandwidth(torch) -> tuple[float, float]:
    """Pinned host<->device bandwidth in bytes/s, each direction, large copies."""
    n = 256 << 20
    h = torch.empty(n, dtype=torch.uint8).pin_memory()
    d = torch.empty(n, dtype=torch.uint8, device="cuda")
    out = []
    for dst, src in ((d, h), (h, d)):
        best = float("inf")
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            dst.copy_(src, non_blocking=True)
            b.record()
            b.synchronize()
            best = min(best, a.elapsed_time(b) / 1e3)
        out.append(n / best)
    return out[0], out[1]


def check(rows: dict, slots_by_row: dict) -> list[str]:
    bad = []
    for name, slots in slots_by_row.items():
        for slot in slots[:4]:
            got = slot["h_out"]
            got = got.host_array() if hasattr(got, "host_array") else got.numpy()
            if not np.allclose(got, expected(slot["img"]), rtol=1e-5, atol=1e-5):
                bad.append(name)
                break
    return bad


async def main_async(args) -> int:
    import torch

    import gaio

    rng = np.random.default_rng(args.seed)
    images = [rng.integers(0, 256, (H, W, C), dtype=np.uint8) for _ in range(8)]
    dev = f"cuda:{args.device}"
    torch.cuda.set_device(args.device)
    up, down = copy_bandwidth(torch)
    floor = 1 / max(H * W * C / up, H * W * C * 4 / down)
    only = set(args.only.split(",")) if args.only else {"gaio", "gaio-inline", "torch+pool", "torch+poll"}

    rows, slots_by_row = {}, {}
    pool = ThreadPoolExecutor()  # the default pool size: what "run_in_executor(None, ...)" users get
    plans = []
    if "gaio" in only:
        plans.append(("gaio", gaio_setup(gaio, dev, args.concurrency, images, gaio.DEFERRED), gaio_job(gaio)))
    if "gaio-inline" in only:
        plans.append(("gaio-inline", gaio_setup(gaio, dev, args.concurrency, images, 0), gaio_job(gaio)))
    if "torch+pool" in only:
        plans.append(("torch+pool", torch_setup(torch, args.concurrency, images), torch_pool_job(torch, pool)))
    if "torch+poll" in only:
        plans.append(("torch+poll", torch_setup(torch, args.concurrency, images), torch_poll_job(torch)))
    if args.gc == "freeze":  # what latency-minded services do after start-up: no old objects to re-scan
        gc.collect()
        gc.freeze()
    elif args.gc == "off":
        gc.disable()
    open_rows = {}
    for name, slots, job in plans:
        await drive(job, slots, min(0.5, args.seconds))  # warm-up: pools, streams, lazy init
        rows[name] = await drive(job, slots, args.seconds)
        if args.rate:
            open_rows[name] = await drive_open(job, slots, args.seconds, args.rate)
        slots_by_row[name] = slots
    torch.cuda.synchronize()
    bad = check(rows, slots_by_row)

    print(f"# {args.concurrency} concurrent jobs, {args.seconds:g} s each, gc {args.gc}; device {torch.cuda.get_device_name()}; "
          f"pinned copies {up / 1e9:.1f} GB/s up, {down / 1e9:.1f} GB/s down; thread pool of {pool._max_workers}")
    print(f"{'':<12}{'jobs/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'floor/x':>9}")
    print(f"{'floor':<12}{floor:>10.0f}{'':>9}{'':>9}{1:>9.2f}")
    for name, (rate, lat) in rows.items():
        p50, p99 = percentile(lat, 50) * 1e3, percentile(lat, 99) * 1e3
        print(f"{name:<12}{rate:>10.0f}{p50:>9.3f}{p99:>9.3f}{floor / rate:>9.2f}")
    if open_rows:
        print(f"# open loop: jobs arrive at {args.rate:.0f}/s, at most {args.concurrency} in flight; latency from "
              "arrival (a wait for a free stream included)")
        print(f"{'':<12}{'jobs/s':>10}{'p50 ms':>9}{'p99 ms':>9}")
        for name, (rate, lat) in open_rows.items():
            print(f"{name:<12}{rate:>10.0f}{percentile(lat, 50) * 1e3:>9.3f}{percentile(lat, 99) * 1e3:>9.3f}")
    if "gaio" in rows and "torch+pool" in rows:
        print(f"gaio/torch+pool jobs/s (closed loop): {rows['gaio'][0] / rows['torch+pool'][0]:.2f}x")
    if "gaio" in rows:
        closed_ok = rows["gaio"][0] >= 20000 and percentile(rows["gaio"][1], 99) <= 2e-3
        line = f"target >= 20000 jobs/s and p99 <= 2 ms: closed loop {'met' if closed_ok else 'missed'}"
        if "gaio" in open_rows:
            rate, lat = open_rows["gaio"]
            ok = rate >= 0.98 * args.rate and args.rate >= 20000 and percentile(lat, 99) <= 2e-3
            line += f"; open loop at {args.rate:.0f}/s {'met' if ok else 'missed'}"
        print(line)
    if bad:
        print("WRONG RESULTS: " + ", ".join(bad))
        return 1
    print("outputs checked against numpy: all rows match")
    pool.shutdown()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--device", type=int, default=0, help="CUDA ordinal")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", type=float, default=20000,
                    help="jobs/s offered in the open-loop runs (0: closed loop only)")
    ap.add_argument("--gc", choices=("on", "freeze", "off"), default="on",
                    help="Python's garbage collector during the runs (every row alike)")
    ap.add_argument("--only", default="", help="comma-separated rows: gaio, gaio-inline, torch+pool, torch+poll")
    args = ap.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no GPU")
    except Exception as e:
        print(f"async_jobs: needs a CUDA GPU and PyTorch ({type(e).__name__}: {e})")
        return 2
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
