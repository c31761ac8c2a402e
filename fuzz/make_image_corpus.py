#!/usr/bin/python3
"""Writes the seed corpus of fuzz_image_decode: tiny PNGs and JPEGs, one per layout the
decoders branch on (PNG: gray, gray + alpha, RGB, RGBA, palette, palette + tRNS, 1-bit
gray, 16-bit, interlaced; JPEG: gray, 4:2:0, 4:4:4, progressive, restart markers), plus
two that fail (a truncated PNG and a JPEG cut before its end marker). Deterministic:
the pixels come from a seeded generator and OpenCV's and zlib's output is fixed for a
given version, so rerunning rewrites the same files (or nearly, across versions).

    /usr/bin/python3 fuzz/make_image_corpus.py [OUTDIR]   (default fuzz/corpus/fuzz_image_decode)

Files named regress_* are the fuzzer's findings, kept by hand: this script leaves
them alone.

PNG layouts OpenCV does not write (palette, gray + alpha, 1-bit, interlaced) are
written here by hand: the chunk format is small, and zlib does the compression.
"""
import os
import struct
import sys
import zlib

import cv2
import numpy as np

SEED = 20261124


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def png(width, height, depth, color_type, rows, interlace=0, extra=b""):
    """rows: the already-packed scanlines (per Adam7 pass when interlaced), filter 0."""
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, interlace)
    raw = b"".join(b"\x00" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def adam7_rows(px):
    """Splits an 8-bit image (h, w, c) into Adam7 passes' scanlines."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    rows = []
    for x0, y0, dx, dy in passes:
        sub = px[y0::dy, x0::dx]
        if sub.shape[0] and sub.shape[1]:
            rows += [r.tobytes() for r in sub]
    return rows


def jpeg_segments(data):
    """The marker segments of a JPEG up to its SOS: [(marker, body)]."""
    segs, i = [], 2
    while data[i + 1] != 0xDA:
        n = struct.unpack(">H", data[i + 2:i + 4])[0]
        segs.append((data[i + 1], data[i + 4:i + 2 + n]))
        i += 2 + n
    return segs


def jpeg_sampled(px, hy, vy, like):
    """A baseline YCbCr JPEG whose luma is sampled hy x vy against chroma (1x1 is
    4:4:4, 2x1 is 4:2:2, 1x2 is 4:4:0): layouts this OpenCV cannot ask libjpeg for.
    The quantization and Huffman tables are taken from `like`, an OpenCV JPEG, so
    only the DCT and the entropy coder are written here."""
    segs = jpeg_segments(like)
    quant, huff = {}, {}
    for marker, body in segs:
        if marker == 0xDB:
            for k in range(0, len(body), 65):
                quant[body[k] & 15] = np.frombuffer(body[k + 1:k + 65], np.uint8).astype(np.float64)
        if marker == 0xC4:
            k = 0
            while k < len(body):
                cls_id, bits = body[k], body[k + 1:k + 17]
                vals = body[k + 17:k + 17 + sum(bits)]
                codes, code, v = {}, 0, 0
                for length in range(1, 17):
                    for _ in range(bits[length - 1]):
                        codes[vals[v]] = (code, length)
                        code, v = code + 1, v + 1
                    code <<= 1
                huff[cls_id] = codes
                k += 17 + sum(bits)
    zz = np.array([0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,
                   7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31,
                   39, 46, 53, 60, 61, 54, 47, 55, 62, 63])
    dct = np.array([[(np.sqrt(0.5) if u == 0 else 1.0) / 2 * np.cos((2 * x + 1) * u * np.pi / 16) for x in range(8)]
                    for u in range(8)])
    h, w = px.shape[:2]
    mh, mw = 8 * vy, 8 * hy
    ph, pw = -(-h // mh) * mh, -(-w // mw) * mw
    rgb = np.pad(px[..., ::-1].astype(np.float64), ((0, ph - h), (0, pw - w), (0, 0)), mode="edge")  # BGR in
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    planes = [0.299 * r + 0.587 * g + 0.114 * b, -0.168736 * r - 0.331264 * g + 0.5 * b + 128,
              0.5 * r - 0.418688 * g - 0.081312 * b + 128]
    for c in (1, 2):  # chroma: the mean of each hy x vy cell
        planes[c] = planes[c].reshape(ph // vy, vy, pw // hy, hy).mean(axis=(1, 3))
    bits = []

    def put(code, length):
        bits.extend((code >> (length - 1 - i)) & 1 for i in range(length))

    def magnitude(v):
        n = int(abs(v)).bit_length()
        return n, (v if v >= 0 else v + (1 << n) - 1)

    pred = [0, 0, 0]

    def block(c, tile):
        q = quant[0 if c == 0 else 1]
        coef = np.round((dct @ (tile - 128) @ dct.T).flatten()[zz] / q).astype(int)
        dc_codes, ac_codes = huff[0x00 | (c > 0)], huff[0x10 | (c > 0)]
        n, v = magnitude(coef[0] - pred[c])
        pred[c] = coef[0]
        put(*dc_codes[n])
        if n:
            put(v, n)
        run = 0
        for a in coef[1:]:
            if a == 0:
                run += 1
                continue
            while run > 15:
                put(*ac_codes[0xF0])
                run -= 16
            n, v = magnitude(a)
            put(*ac_codes[(run << 4) | n])
            put(v, n)
            run = 0
        if run:
            put(*ac_codes[0x00])

    for my in range(0, ph, mh):
        for mx in range(0, pw, mw):
            for by in range(vy):
                for bx in range(hy):
                    y0, x0 = my + 8 * by, mx + 8 * bx
                    block(0, planes[0][y0:y0 + 8, x0:x0 + 8])
            for c in (1, 2):
                block(c, planes[c][my // vy:my // vy + 8, mx // hy:mx // hy + 8])
    bits.extend([1] * (-len(bits) % 8))
    scan = bytes(int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8)).replace(b"\xff", b"\xff\x00")

    def seg(marker, body):
        return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body

    sof = struct.pack(">BHHB", 8, h, w, 3) + bytes([1, (hy << 4) | vy, 0, 2, 0x11, 1, 3, 0x11, 1])
    sos = bytes([3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0])
    tables = b"".join(seg(m, body) for m, body in segs if m in (0xDB, 0xC4))
    return b"\xff\xd8" + tables + seg(0xC0, sof) + seg(0xDA, sos) + scan + b"\xff\xd9"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus",
                                                                "fuzz_image_decode")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(SEED)
    print(f"make_image_corpus: seed {SEED}, writing to {out}")

    # Smooth gradients plus a little noise: JPEG seeds with real AC coefficients, but small.
    def image(h, w, c):
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x + y) * 127 // max(w + h - 2, 1))],
                        axis=-1)
        base = np.concatenate([base, 255 - base[..., :1]], axis=-1)[..., :c]
        return np.clip(base + rng.integers(-8, 9, base.shape), 0, 255).astype(np.uint8)

    files = {}
    ok, b = cv2.imencode(".png", image(12, 10, 1))
    files["png_gray8.png"] = b.tobytes()
    ok, b = cv2.imencode(".png", image(9, 11, 3))
    files["png_rgb8.png"] = b.tobytes()
    ok, b = cv2.imencode(".png", image(8, 7, 4))
    files["png_rgba8.png"] = b.tobytes()
    ok, b = cv2.imencode(".png", (image(6, 5, 3).astype(np.uint16) * 257))
    files["png_rgb16.png"] = b.tobytes()

    ga = image(7, 6, 2)
    files["png_gray_alpha8.png"] = png(6, 7, 8, 4, [r.tobytes() for r in ga])
    pal = bytes(rng.integers(0, 256, 3 * 16, dtype=np.uint8))
    idx = rng.integers(0, 16, (5, 9), dtype=np.uint8)
    files["png_palette.png"] = png(9, 5, 8, 3, [r.tobytes() for r in idx], extra=chunk(b"PLTE", pal))
    idx4 = rng.integers(0, 16, (6, 8), dtype=np.uint8)
    packed = [bytes((r[i] << 4) | r[i + 1] for i in range(0, 8, 2)) for r in idx4]
    files["png_palette4_trns.png"] = png(8, 6, 4, 3, packed,
                                         extra=chunk(b"PLTE", pal) + chunk(b"tRNS", bytes(range(0, 256, 32))))
    bits = rng.integers(0, 2, (5, 13), dtype=np.uint8)
    files["png_gray1.png"] = png(13, 5, 1, 0, [np.packbits(r).tobytes() for r in bits])
    files["png_gray8_trns.png"] = png(4, 3, 8, 0, [r.tobytes() for r in image(3, 4, 1)],
                                      extra=chunk(b"tRNS", b"\x00\x10"))
    files["png_rgb8_interlaced.png"] = png(11, 10, 8, 2, adam7_rows(image(10, 11, 3)), interlace=1)
    files["png_truncated.png"] = files["png_rgb8.png"][:-20]

    files["jpeg_gray.jpg"] = cv2.imencode(".jpg", image(16, 16, 1), [cv2.IMWRITE_JPEG_QUALITY, 75])[1].tobytes()
    # OpenCV's libjpeg samples color 4:2:0 by default.
    files["jpeg_420.jpg"] = cv2.imencode(".jpg", image(17, 19, 3), [cv2.IMWRITE_JPEG_QUALITY, 70])[1].tobytes()
    for name, (hy, vy), shape in (("jpeg_444.jpg", (1, 1), (9, 12)), ("jpeg_422.jpg", (2, 1), (8, 20)),
                                  ("jpeg_440.jpg", (1, 2), (18, 7))):
        px = image(*shape, 3)
        files[name] = jpeg_sampled(px, hy, vy, cv2.imencode(".jpg", px, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes())
    files["jpeg_progressive.jpg"] = cv2.imencode(".jpg", image(24, 20, 3), [
        cv2.IMWRITE_JPEG_QUALITY, 80, cv2.IMWRITE_JPEG_PROGRESSIVE, 1])[1].tobytes()
    files["jpeg_progressive_gray.jpg"] = cv2.imencode(".jpg", image(16, 24, 1), [
        cv2.IMWRITE_JPEG_QUALITY, 80, cv2.IMWRITE_JPEG_PROGRESSIVE, 1])[1].tobytes()
    files["jpeg_restart.jpg"] = cv2.imencode(".jpg", image(32, 24, 3), [
        cv2.IMWRITE_JPEG_QUALITY, 75, cv2.IMWRITE_JPEG_RST_INTERVAL, 1])[1].tobytes()
    files["jpeg_optimized.jpg"] = cv2.imencode(".jpg", image(16, 16, 3), [
        cv2.IMWRITE_JPEG_QUALITY, 85, cv2.IMWRITE_JPEG_OPTIMIZE, 1])[1].tobytes()
    files["jpeg_truncated.jpg"] = files["jpeg_420.jpg"][:-2]

    total = 0
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        total += len(data)
        print(f"  {name}: {len(data)} bytes")
    print(f"make_image_corpus: {len(files)} files, {total} bytes")


if __name__ == "__main__":
    main()
