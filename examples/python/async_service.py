#!/usr/bin/env python3
"""async_service: an asyncio image-preprocessing service on gaio, and a load generator for it.

The server is one thread running one asyncio loop, no web framework. It takes
requests over TCP with a tiny binary protocol (little-endian)::

    request:  "GAIO" u32 id  u32 height  u32 width  u32 flags
              + height * width * 3 bytes of a u8 RGB frame (HWC)
              flags: 1 send the tensor back, 2 a mark (no frame: the server
              restarts its statistics, e.g. after a warm-up)
    reply:    "GAIO" u32 id  u32 status (0 ok)  f64 checksum  u32 nbytes
              + nbytes: the f32 CHW 3x224x224 tensor if asked for, else nothing;
                on failure, the error message

Each request is an ImageNet classifier's input pipeline. The frame is received
straight into pinned memory (an asyncio.BufferedProtocol hands the socket a view of
a pinned gaio tensor: no copy on the way), uploaded on a stream of its own, resized
to 224x224 and normalised into an f32 CHW tensor by gaio.image.preprocess (one
launch) and copied back; then the request's coroutine awaits the stream's fence.
Awaiting a gaio future parks the coroutine on the loop's completion queue (an
eventfd the loop watches), so the loop never waits for the device and keeps many
requests on it at once. Streams come from a pool, one per request in flight.

By default the script starts the server and runs the clients in a child process
(``--role client``, started with asyncio.create_subprocess_exec: the server's loop
serves while it waits for it), so that the server's loop does the server's work
only. The clients (``--concurrency`` connections, each sending requests back to
back) report requests/s and latency percentiles and check a few tensors against
a direct computation in numpy; the server
reports the most and the average requests it had on the device at once (a loop
that waited for each would never show more than 1) and how late a 2 ms heartbeat
task on its loop ever woke up. ``--role server`` serves until interrupted.

Run it from a CMake build tree (the CPU backend when there is no GPU)::

    GAIO_LIBRARY=build/src/libgaio.so PYTHONPATH=python python3 examples/python/async_service.py --requests 200

Exit status: 0 when every request was served and every checked tensor matched,
1 otherwise, 77 (skipped) without numpy.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any

try:
    import numpy as np
except ImportError:  # ctest reads 77 as "skipped"
    print("async_service: SKIPPED: numpy is not installed", file=sys.stderr)
    sys.exit(77)

OUT_H = OUT_W = 224
OUT_BYTES = 3 * OUT_H * OUT_W * 4
MEAN = (0.485, 0.456, 0.406)  # torchvision's ImageNet normalisation
STD = (0.229, 0.224, 0.225)
SCALE = 1 / 255
# Frame sizes (height, width) the clients send: cameras, datasets, odd sizes, and
# one smaller than the output (an enlarging resize).
SIZES = [(480, 640), (720, 1280), (375, 500), (1080, 1920), (257, 333), (600, 800), (224, 224), (120, 160)]
MAX_PIXELS = 4096 * 4096  # the largest frame the server accepts

REQUEST = struct.Struct("<4sIIII")
REPLY = struct.Struct("<4sIIdI")
MAGIC = b"GAIO"
WANT_TENSOR, MARK = 1, 2


def percentile_ms(values: list[float], p: float) -> float:
    """Nearest rank."""
    v = sorted(values)
    return 1e3 * v[max(1, math.ceil(p / 100 * len(v))) - 1] if v else 0.0


# ---- the server ------------------------------------------------------------------------
# Only the server imports gaio: the clients need nothing but numpy.


@dataclass
class ServerStats:
    served: int = 0
    errors: int = 0
    busy_s: float = 0.0  # summed over requests, from upload to fence
    latencies: list[float] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lateness: list[float] = field(default_factory=list)  # the heartbeat's
    since: float = field(default_factory=time.perf_counter)
    last: float = 0.0


class Service:
    def __init__(self, gaio: Any, device: Any, slots: int) -> None:
        self.gaio = gaio
        # Frames of up to 6 MB, each staged in pinned memory and uploaded to device
        # memory, for every request in flight: the pools must keep what the requests
        # in flight hold at once (slots x 6 MB, twice) cached, or they go back to the
        # driver, whose pinned allocations and frees take milliseconds and can
        # synchronize: the loop would stall on them (42 ms with 64 connections and a
        # 256 MiB threshold on an H100).
        self.ctx = gaio.Context(device, pool_release_threshold=max(256 << 20, slots * (12 << 20)))
        # One slot per request in flight: its stream, and pinned memory for its result
        # (f32 [3, 224, 224], read on the host once the fence has passed).
        self.pool: asyncio.Queue[tuple[Any, Any]] = asyncio.Queue()
        for _ in range(slots):
            out = gaio.empty((3, OUT_H, OUT_W), "float32", context=self.ctx, kind="pinned")
            self.pool.put_nowait((gaio.Stream(self.ctx), out))
        self.stats = ServerStats()

    def staging(self, h: int, w: int) -> Any:
        """Pinned memory for a frame, from the context's pool (cached after the first
        rounds). Allocated without a stream, so the host may write it at once."""
        return self.gaio.empty((h, w, 3), "uint8", context=self.ctx, kind="pinned")

    async def run(self, frame: Any, want_tensor: bool) -> tuple[float, bytes]:
        """The checksum of the request's tensor, and its bytes if asked for."""
        gaio = self.gaio
        stream, out = await self.pool.get()  # backpressure: wait for a stream when all are busy
        st = self.stats
        t0 = time.perf_counter()
        st.in_flight += 1
        st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            src = gaio.empty(frame.shape, "uint8", stream=stream)  # device memory, in stream order
            gaio.copy(src, frame, stream)
            dst = gaio.empty((3, OUT_H, OUT_W), "float32", stream=stream)
            gaio.image.preprocess(src, dst, interp="linear", scale=SCALE, mean=MEAN, std=STD, dst_layout="CHW",
                                  stream=stream)
            gaio.copy(out, dst, stream)
            # Nothing above waited. The fence completes through the loop's completion
            # queue; other requests are served while this one is on the device.
            await stream.fence()
            tensor = out.host_array()
            checksum = float(tensor.sum(dtype=np.float64))
            payload = tensor.tobytes() if want_tensor else b""  # a copy: the slot's memory is reused
        finally:
            st.in_flight -= 1
            self.pool.put_nowait((stream, out))
        t1 = time.perf_counter()
        st.busy_s += t1 - t0
        st.latencies.append(t1 - t0)
        st.served += 1
        st.last = t1
        return checksum, payload


class Connection(asyncio.BufferedProtocol):
    """One client. The transport receives into the buffers get_buffer returns: the
    request header, then the frame's pinned staging tensor, each exactly as long as
    what is still missing, so no byte lands in the wrong one."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.header = bytearray(REQUEST.size)
        self.got = 0
        self.frame: Any = None
        self.view: memoryview | None = None  # the frame's bytes
        self.req = self.flags = 0
        self.transport: Any = None
        self.tasks: set[asyncio.Task] = set()  # the loop keeps only weak references to tasks

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.view is not None:
            return self.view[self.got:]
        return memoryview(self.header)[self.got:]

    def buffer_updated(self, nbytes: int) -> None:
        self.got += nbytes
        if self.view is None:
            if self.got < len(self.header):
                return
            self.got = 0
            magic, self.req, h, w, self.flags = REQUEST.unpack(self.header)
            if magic == MAGIC and self.flags & MARK:
                lateness = self.service.stats.lateness
                lateness.clear()
                self.service.stats = ServerStats(lateness=lateness)
                self.transport.write(REPLY.pack(MAGIC, self.req, 0, 0.0, 0))
                return
            if magic != MAGIC or not (0 < h and 0 < w and h * w <= MAX_PIXELS):
                self.fail(f"bad request header (magic {magic!r}, frame {h}x{w})")
                return
            try:
                self.frame = self.service.staging(h, w)
            except self.service.gaio.Error as e:  # out of pinned memory: refuse this client
                self.fail(f"no staging memory for a {h}x{w} frame: {e}")
                return
            self.view = memoryview(self.frame.host_array()).cast("B")
        elif self.got == len(self.view):
            # The client waits for the reply before it sends more: stop reading until then.
            self.transport.pause_reading()
            frame, self.frame, self.view, self.got = self.frame, None, None, 0
            task = asyncio.get_running_loop().create_task(self.serve(self.req, frame, bool(self.flags & WANT_TENSOR)))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def serve(self, req: int, frame: Any, want_tensor: bool) -> None:
        try:
            checksum, payload = await self.service.run(frame, want_tensor)
        except Exception as e:  # a gaio.Error, or a bug: either way the client must hear of it
            self.service.stats.errors += 1
            status, checksum, payload = 1, 0.0, f"{type(e).__name__}: {e}".encode()
        else:
            status = 0
        if self.transport.is_closing():  # the client left while its request ran
            return
        self.transport.write(REPLY.pack(MAGIC, req, status, checksum, len(payload)))
        if payload:
            self.transport.write(payload)
        self.transport.resume_reading()

    def fail(self, message: str) -> None:
        self.service.stats.errors += 1
        msg = message.encode()
        self.transport.write(REPLY.pack(MAGIC, self.req, 1, 0.0, len(msg)) + msg)
        self.transport.close()


async def heartbeat(period: float, stats_of: Any) -> None:
    """Wakes every `period` seconds and records how late: a loop blocked for t shows t."""
    loop = asyncio.get_running_loop()
    due = loop.time() + period
    while True:
        await asyncio.sleep(max(0.0, due - loop.time()))
        now = loop.time()
        stats_of().lateness.append(max(0.0, now - due))
        due = now + period


def pick_device(gaio: Any, spec: str) -> Any:
    if spec == "auto":  # the first GPU whose backend works, else the host
        ok, _ = gaio.backend_status("cuda")
        gpus = [d for d in gaio.devices() if d.kind == "cuda"] if ok else []
        return gpus[0] if gpus else gaio.device(0)
    return gaio.device(int(spec) if spec.isdigit() else spec)


async def server_main(args: argparse.Namespace) -> int:
    import gaio

    try:
        device = pick_device(gaio, args.device)
    except gaio.Error as e:
        print(f"async_service: --device {args.device}: {e}", file=sys.stderr)
        return 1
    loop = asyncio.get_running_loop()
    service = Service(gaio, device, args.concurrency)
    server = await loop.create_server(lambda: Connection(service), "127.0.0.1", args.port)
    port = server.sockets[0].getsockname()[1]
    beat = asyncio.ensure_future(heartbeat(args.heartbeat_ms / 1e3, lambda: service.stats))
    print(f"async_service: serving on 127.0.0.1:{port} on {device} ({device.name}); {args.concurrency} streams; "
          f"u8 frames -> f32 CHW 3x{OUT_H}x{OUT_W}", flush=True)
    try:
        if args.role == "server":
            await asyncio.Event().wait()  # until interrupted
        # The clients in a child process: their sockets' work is not the server's.
        cmd = [sys.executable, os.path.abspath(__file__), "--role", "client", "--port", str(port),
               "--requests", str(args.requests), "--concurrency", str(args.concurrency),
               "--verify", str(args.verify), "--seed", str(args.seed)]
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), args.timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            print(f"async_service: the clients did not finish within {args.timeout:g} s", file=sys.stderr)
            print("async_service: FAILED")
            return 1
    finally:
        beat.cancel()
        server.close()
        await server.wait_closed()

    try:
        res = json.loads(out)
    except ValueError:  # it failed before its summary
        print(f"async_service: the clients exited with status {proc.returncode} and no summary", file=sys.stderr)
        print("async_service: FAILED")
        return 1
    ss = service.stats
    wall = max(ss.last - ss.since, 1e-9)
    ok = proc.returncode == 0 and res["ok"] and ss.errors == 0 and ss.served == res["requests"]
    print(f"async_service: {res['requests']} requests over {args.concurrency} connections: "
          f"{res['requests_per_s']:.1f} requests/s; latency p50 {res['p50_ms']:.2f} ms, p99 {res['p99_ms']:.2f} ms "
          f"(client round trip, {res['mib']:.0f} MiB of frames); upload to fence p50 "
          f"{percentile_ms(ss.latencies, 50):.2f} ms, p99 {percentile_ms(ss.latencies, 99):.2f} ms")
    print(f"async_service: requests on the device at once: at most {ss.max_in_flight}, "
          f"{ss.busy_s / wall:.1f} on average (a loop that waited for each would show 1)")
    late = ss.lateness
    print(f"async_service: the server loop's {args.heartbeat_ms:g} ms heartbeat woke {len(late)} times, at worst "
          f"{1e3 * max(late, default=0):.2f} ms late (p50 {percentile_ms(late, 50):.2f} ms, "
          f"p99 {percentile_ms(late, 99):.2f} ms)")
    print(f"async_service: {res['checked']} tensors checked against {res['reference']}: "
          f"{res['mismatches']} mismatches (max |diff| {res['max_diff']:.3g})")
    if ss.served != res["requests"] or ss.errors:
        print(f"async_service: the server served {ss.served} of {res['requests']} ({ss.errors} errors)",
              file=sys.stderr)
    if args.concurrency >= 2 and ss.max_in_flight < 2:
        print("async_service: never two requests in flight at once: something blocked the loop", file=sys.stderr)
        ok = False
    if late and max(late) * 1e3 > args.max_late_ms:
        print(f"async_service: the server loop was blocked for more than {args.max_late_ms:g} ms", file=sys.stderr)
        ok = False
    print("async_service: OK" if ok else "async_service: FAILED")
    return 0 if ok else 1


# ---- the clients -------------------------------------------------------------------------


@dataclass
class ClientStats:
    latencies: list[float] = field(default_factory=list)
    checked: list[tuple[int, np.ndarray]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sent_bytes: int = 0


async def recv_exactly(loop: asyncio.AbstractEventLoop, sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = await loop.sock_recv_into(sock, view[got:])
        if n == 0:
            raise ConnectionError("the server closed the connection")
        got += n


async def client(port: int, frames: list[np.ndarray], next_id: list[int], total: int, verify_every: int,
                 stats: ClientStats, mark: bool = False) -> None:
    """Sends requests back to back on one connection until `total` have been taken,
    then a mark if asked to. Raw non-blocking sockets: frames go out of the numpy
    arrays without a copy."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # header and frame go as two sends
    head = bytearray(REPLY.size)
    body = bytearray(OUT_BYTES)
    try:
        await loop.sock_connect(sock, ("127.0.0.1", port))
        while next_id[0] < total or mark:
            if next_id[0] >= total:  # the mark, last
                mark, req, flags, frame = False, total, MARK, None
                await loop.sock_sendall(sock, REQUEST.pack(MAGIC, req, 0, 0, flags))
            else:
                req = next_id[0]
                next_id[0] += 1
                frame = frames[req % len(frames)]
                h, w, _ = frame.shape
                want = verify_every > 0 and (req % verify_every == 0 or req == total - 1)
                flags = WANT_TENSOR if want else 0
                t0 = time.perf_counter()
                await loop.sock_sendall(sock, REQUEST.pack(MAGIC, req, h, w, flags))
                await loop.sock_sendall(sock, memoryview(frame).cast("B"))
                stats.sent_bytes += frame.nbytes
            await recv_exactly(loop, sock, memoryview(head))
            magic, rid, status, checksum, nbytes = REPLY.unpack(head)
            if magic != MAGIC or nbytes > len(body):
                stats.errors.append(f"request {req}: a bad reply header")
                return
            data = memoryview(body)[:nbytes]
            await recv_exactly(loop, sock, data)
            if status or rid != req:
                stats.errors.append(f"request {req}: status {status}, id {rid}: {bytes(data).decode(errors='replace')}")
                return
            if frame is None:
                continue
            stats.latencies.append(time.perf_counter() - t0)
            if flags & WANT_TENSOR:
                out = np.frombuffer(data, np.float32).reshape(3, OUT_H, OUT_W).copy()
                if not math.isclose(float(out.sum(dtype=np.float64)), checksum, rel_tol=1e-9, abs_tol=1e-9):
                    stats.errors.append(f"request {req}: the checksum does not match the tensor sent")
                stats.checked.append((req, out))
    except ConnectionError as e:
        stats.errors.append(f"client: {e}")
    finally:
        sock.close()


def _taps(src: int, dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One axis of OpenCV's INTER_LINEAR: sample (d + 0.5) * scale - 0.5, rounded to
    float32 as OpenCV does, the border replicated."""
    scale = 1.0 / (dst / src)
    f = ((np.arange(dst) + 0.5) * scale - 0.5).astype(np.float32)
    s = np.floor(f).astype(np.int64)
    frac = (f - s.astype(np.float32)).astype(np.float64)
    low, high = s < 0, s >= src - 1
    frac[low | high] = 0
    s[low], s[high] = 0, src - 1
    return s, np.minimum(s + 1, src - 1), frac


def reference(frame: np.ndarray) -> tuple[np.ndarray, str]:
    """Resize to 224x224 (bilinear with OpenCV 4's INTER_LINEAR sampling), then
    (v * scale - mean) / std, as CHW: a direct computation in float64 (not cv2, whose
    float resize moved by ~1e-4 between OpenCV 4 and 5)."""
    y0, y1, fy = _taps(frame.shape[0], OUT_H)
    x0, x1, fx = _taps(frame.shape[1], OUT_W)
    img = frame.astype(np.float64)
    fx3, fy3 = fx[None, :, None], fy[:, None, None]
    top = img[y0][:, x0] * (1 - fx3) + img[y0][:, x1] * fx3
    bottom = img[y1][:, x0] * (1 - fx3) + img[y1][:, x1] * fx3
    resized = top * (1 - fy3) + bottom * fy3
    out = (resized * SCALE - np.array(MEAN)) / np.array(STD)
    return out.transpose(2, 0, 1), "a direct computation (numpy, float64)"


async def clients_main(args: argparse.Namespace) -> int:
    """Drives the server at --port; prints a JSON summary on stdout, problems on stderr."""
    rng = np.random.default_rng(args.seed)
    frames = [rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8) for h, w in SIZES]
    verify_every = math.ceil(args.requests / args.verify) if args.verify > 0 else 0

    # One unmeasured request per frame size (the first use of the server's pools and
    # kernels), then a mark: the server counts from there.
    warm = ClientStats()
    await client(args.port, frames, [0], len(frames), 0, warm, mark=True)
    stats = ClientStats()
    t0 = time.perf_counter()
    next_id = [0]
    await asyncio.gather(*(client(args.port, frames, next_id, args.requests, verify_every, stats)
                           for _ in range(args.concurrency)))
    wall = time.perf_counter() - t0

    errors = warm.errors + stats.errors
    if len(stats.latencies) != args.requests:
        errors.append(f"{len(stats.latencies)} of {args.requests} requests answered")
    worst, how, mismatches = 0.0, "nothing", 0
    for req, out in stats.checked:
        want, how = reference(frames[req % len(frames)])
        diff = np.abs(out.astype(np.float64) - want)
        worst = max(worst, float(diff.max()))
        # Float sums in another order: ~1e-6. One u8 step of the input moves an output
        # by 1 / 255 / std ~ 0.017, far above the tolerance.
        bad = ~(diff <= 1e-4 + 1e-4 * np.abs(want))
        if bad.any():
            mismatches += 1
            c, y, x = np.argwhere(bad)[0]
            errors.append(f"request {req}: {int(bad.sum())} values differ from {how}; first [{c}][{y}][{x}] = "
                          f"{out[c, y, x]:.7g}, expected {want[c, y, x]:.7g}")
    for e in errors:
        print(f"async_service (clients): {e}", file=sys.stderr)
    print(json.dumps({"ok": not errors, "requests": len(stats.latencies), "requests_per_s": len(stats.latencies) / wall,
                      "p50_ms": percentile_ms(stats.latencies, 50), "p99_ms": percentile_ms(stats.latencies, 99),
                      "mib": stats.sent_bytes / 2**20, "checked": len(stats.checked), "mismatches": mismatches,
                      "max_diff": worst, "reference": how}))
    return 0 if not errors else 1


# ---- main --------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=1000, help="requests to serve (default 1000)")
    p.add_argument("--concurrency", type=int, default=32,
                   help="client connections, and streams in the server's pool (default 32)")
    p.add_argument("--device", default="auto",
                   help="auto (the first GPU, else the host), cpu, cuda, cuda:N or a gaio index (0 = the host)")
    p.add_argument("--verify", type=int, default=8, help="tensors checked against the reference (default 8)")
    p.add_argument("--role", choices=("both", "server", "client"), default="both",
                   help="both (default): the server, and the clients in a child process; server: serve until "
                        "interrupted; client: drive the server at --port")
    p.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: any free one)")
    p.add_argument("--seed", type=int, default=1, help="seed of the random frames")
    p.add_argument("--heartbeat-ms", type=float, default=2.0, help="the server's heartbeat period (default 2)")
    p.add_argument("--timeout", type=float, default=300.0, help="fail when the clients take longer (s, default 300)")
    p.add_argument("--max-late-ms", type=float, default=1000.0,
                   help="fail when the heartbeat is ever this late (default 1000: generous, for loaded CI hosts)")
    args = p.parse_args()
    if args.requests < 1 or args.concurrency < 1 or args.verify < 0:
        p.error("--requests and --concurrency must be >= 1, --verify >= 0")
    if args.role == "client" and not args.port:
        p.error("--role client needs the server's --port")
    args.concurrency = min(args.concurrency, args.requests)
    try:
        return asyncio.run(clients_main(args) if args.role == "client" else server_main(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
