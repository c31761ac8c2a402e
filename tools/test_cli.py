#!/usr/bin/python3
"""Tests of `gaio resize` and `gaio convert`, checked against OpenCV.

    test_cli.py GAIO GROUP [--device N|gpu] [--workdir DIR]

GAIO is the gaio binary; GROUP one of the groups below. --device gpu picks the first
CUDA device `gaio info` lists (which must exit 0); where there is none it prints
"SKIPPED: ..." and exits 77 (ctest's SKIP_RETURN_CODE), or fails (exit 1) when the
environment sets GAIO_REQUIRE_GPU=1, quoting what `gaio info` says of the CUDA
backend. Inputs are
random images (seed from GAIO_TEST_SEED, else the clock; printed) of odd sizes,
written by OpenCV or, for the PNG flavours OpenCV does not write (palette,
gray + alpha, 1-bit, interlaced), by the small encoder below. Images are compared in
the file's channel order (RGB); OpenCV's BGR is swapped on the way in and out.
Exits non-zero with a line per failed check.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib

import cv2
import numpy as np

FAILURES = []
CHECKS = [0]


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return cond


class Cli:
    def __init__(self, binary, device, workdir):
        self.binary = binary
        self.device = device
        self.dir = workdir

    def path(self, name):
        return os.path.join(self.dir, name)

    def raw(self, args):
        p = subprocess.run([self.binary] + args, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def ok(self, args, what):
        """Runs a command that must succeed: status 0, nothing on stderr, at most one line on stdout."""
        args = args + ["--device", str(self.device)]
        rc, out, err = self.raw(args)
        good = check(rc == 0 and err == "" and out.count("\n") <= 1,
                     "%s: gaio %s -> rc %d, stdout %r, stderr %r" % (what, " ".join(args), rc, out, err))
        return good, out

    def fails(self, args, rc_want, what, contains=None, out_file=None, device=True):
        """Runs a command that must fail: status rc_want, stdout empty, exactly one line on
        stderr naming the command, and no output file left behind."""
        if device:
            args = args + ["--device", str(self.device)]
        if out_file and os.path.exists(out_file):
            os.remove(out_file)
        rc, out, err = self.raw(args)
        desc = "%s: gaio %s -> rc %d, stdout %r, stderr %r" % (what, " ".join(args), rc, out, err)
        check(rc == rc_want, desc + " (want rc %d)" % rc_want)
        check(out == "", desc + " (stdout not empty)")
        check(err.count("\n") == 1 and err.endswith("\n"), desc + " (want exactly one line on stderr)")
        if args and args[0] in ("resize", "convert"):
            check(err.startswith("gaio %s: " % args[0]), desc + " (stderr does not start with 'gaio %s: ')" % args[0])
        if contains:
            check(contains in err, desc + " (stderr lacks %r)" % contains)
        if out_file:
            check(not os.path.exists(out_file), desc + " (left %s behind)" % out_file)


# ---- images ------------------------------------------------------------------

def rand_image(rng, h, w, c):
    """Random pixels, never constant; smooth enough that JPEG keeps them recognisable."""
    shape = (h, w) if c == 1 else (h, w, c)
    img = rng.integers(0, 256, size=shape, dtype=np.uint8)
    if c == 4:
        img[..., 3] = rng.integers(1, 256, size=(h, w), dtype=np.uint8)
    return img


def smooth_image(rng, h, w, c):
    """A gradient plus a little noise: what JPEG is for."""
    y, x = np.mgrid[0:h, 0:w]
    chans = []
    for k in range(c):
        base = (x * (37 + 11 * k) / max(w, 1) + y * (53 - 7 * k) / max(h, 1)) * 2.2
        chans.append(np.clip(base + rng.normal(0, 3, size=(h, w)) + 40 * k, 0, 255))
    img = np.stack(chans, axis=-1).astype(np.uint8)
    return img[..., 0] if c == 1 else img


def to_cv(img):
    if img.ndim == 2:
        return img
    return cv2.cvtColor(img, cv2.COLOR_RGB2BGR if img.shape[2] == 3 else cv2.COLOR_RGBA2BGRA)


def from_cv(img):
    if img is None or img.ndim == 2:
        return img
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB if img.shape[2] == 3 else cv2.COLOR_BGRA2RGBA)


def save(path, img, params=()):
    if not cv2.imwrite(path, to_cv(img), list(params)):
        raise RuntimeError("cv2.imwrite failed for " + path)


def load(path):
    return from_cv(cv2.imread(path, cv2.IMREAD_UNCHANGED))


def channels(img):
    return 1 if img.ndim == 2 else img.shape[2]


def png_chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def write_png(path, scanlines, w, h, depth, ctype, interlace=0, extra=b""):
    """A PNG from filtered-free scanlines (bytes each, without the filter byte)."""
    raw = b"".join(b"\x00" + s for s in scanlines)
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, interlace)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra + png_chunk(b"IDAT", zlib.compress(raw)) +
                png_chunk(b"IEND", b""))


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def write_png_interlaced(path, img):
    h, w = img.shape[:2]
    c = channels(img)
    lines = []
    for xs, ys, dx, dy in ADAM7:
        sub = img[ys::dy, xs::dx]
        if sub.size:
            lines += [row.tobytes() for row in sub.reshape(sub.shape[0], -1)]
    write_png(path, lines, w, h, 8, {1: 0, 3: 2, 4: 6}[c], interlace=1)


# ---- groups --------------------------------------------------------------------

SIZES = [(1, 1), (7, 3), (333, 217)]  # (h, w)


def max_diff(a, b):
    return int(np.abs(a.astype(np.int32) - b.astype(np.int32)).max()) if a.size else 0


def same(got, want, tol, what):
    if not check(got is not None, what + ": output unreadable by OpenCV"):
        return
    if not check(got.shape == want.shape, "%s: shape %s, want %s" % (what, got.shape, want.shape)):
        return
    d = max_diff(got, want)
    check(d <= tol, "%s: max |diff| %d > %d (%d of %d values differ)" %
          (what, d, tol, int((got != want).sum()), got.size))


def inputs(cli, rng, name, chans=(1, 3, 4), sizes=SIZES):
    """PNG inputs of each channel count and size: [(path, image)]."""
    out = []
    for c in chans:
        for h, w in sizes:
            img = rand_image(rng, h, w, c)
            p = cli.path("%s_%dx%dx%d.png" % (name, w, h, c))
            save(p, img)
            out.append((p, img))
    return out


def group_io(cli, rng):
    # PNG in, PNG out: bit-exact, every channel count and size.
    for p, img in inputs(cli, rng, "in"):
        o = p.replace(".png", "_out.png")
        good, out = cli.ok(["convert", p, o], "copy " + p)
        if good:
            same(load(o), img, 0, "png copy " + p)
            check(re.match(r"converted .* -> .* copy on .* in [0-9.]+ ms\n$", out), "summary line: %r" % out)
    # PNG -> JPEG: as OpenCV's encoder at the same quality, decoded by OpenCV.
    for c in (1, 3, 4):
        img = smooth_image(rng, 61, 83, c)
        p, o = cli.path("j%d.png" % c), cli.path("j%d.jpg" % c)
        save(p, img)
        if cli.ok(["convert", p, o, "-q"], "png -> jpeg %d channels" % c)[0]:
            rgb = img[..., :3] if c == 4 else img
            ref = cli.path("ref%d.jpg" % c)
            save(ref, rgb, [cv2.IMWRITE_JPEG_QUALITY, 95])
            same(load(o), load(ref), 1, "jpeg written like OpenCV's, %d channels" % c)
    # JPEG in: decoded as OpenCV decodes it (both libjpeg-turbo).
    for c in (1, 3):
        for h, w in [(1, 1), (9, 5), (120, 97)]:
            img = smooth_image(rng, h, w, c)
            p, o = cli.path("in%d_%dx%d.jpg" % (c, w, h)), cli.path("in%d_%dx%d_out.png" % (c, w, h))
            save(p, img, [cv2.IMWRITE_JPEG_QUALITY, 90])
            if cli.ok(["convert", p, o], "jpeg -> png " + p)[0]:
                same(load(o), load(p), 0, "jpeg read like OpenCV reads it " + p)
    # 16-bit PNG: the high byte.
    for c in (1, 3, 4):
        shape = (13, 11) if c == 1 else (13, 11, c)
        img16 = rng.integers(0, 65536, size=shape, dtype=np.uint16)
        p, o = cli.path("d16_%d.png" % c), cli.path("d16_%d_out.png" % c)
        save(p, img16)
        if cli.ok(["convert", p, o], "16-bit png %d channels" % c)[0]:
            same(load(o), (img16 >> 8).astype(np.uint8), 0, "16-bit png, %d channels, read as its high byte" % c)
    # PNG flavours OpenCV does not write.
    h, w = 9, 13
    pal = rng.integers(0, 256, size=(16, 3), dtype=np.uint8)
    idx = rng.integers(0, 16, size=(h, w), dtype=np.uint8)
    p = cli.path("palette.png")
    write_png(p, [r.tobytes() for r in idx], w, h, 8, 3, extra=png_chunk(b"PLTE", pal.tobytes()))
    if cli.ok(["convert", p, cli.path("palette_out.png")], "palette png")[0]:
        same(load(cli.path("palette_out.png")), pal[idx], 0, "palette png -> RGB")
    alpha = rng.integers(0, 256, size=16, dtype=np.uint8)
    p = cli.path("palette_trns.png")
    write_png(p, [r.tobytes() for r in idx], w, h, 8, 3,
              extra=png_chunk(b"PLTE", pal.tobytes()) + png_chunk(b"tRNS", alpha.tobytes()))
    if cli.ok(["convert", p, cli.path("palette_trns_out.png")], "palette png with tRNS")[0]:
        want = np.concatenate([pal[idx], alpha[idx][..., None]], axis=-1)
        same(load(cli.path("palette_trns_out.png")), want, 0, "palette png with tRNS -> RGBA")
    ga = rng.integers(0, 256, size=(h, w, 2), dtype=np.uint8)
    p = cli.path("gray_alpha.png")
    write_png(p, [r.tobytes() for r in ga.reshape(h, -1)], w, h, 8, 4)
    if cli.ok(["convert", p, cli.path("gray_alpha_out.png")], "gray + alpha png")[0]:
        want = np.stack([ga[..., 0]] * 3 + [ga[..., 1]], axis=-1)
        same(load(cli.path("gray_alpha_out.png")), want, 0, "gray + alpha png -> RGBA")
    bits = rng.integers(0, 2, size=(h, w), dtype=np.uint8)
    p = cli.path("gray1.png")
    write_png(p, [np.packbits(r).tobytes() for r in bits], w, h, 1, 0)
    if cli.ok(["convert", p, cli.path("gray1_out.png")], "1-bit gray png")[0]:
        same(load(cli.path("gray1_out.png")), bits * 255, 0, "1-bit gray png -> 8-bit")
    for c in (1, 3, 4):
        img = rand_image(rng, 19, 23, c)
        p, o = cli.path("adam7_%d.png" % c), cli.path("adam7_%d_out.png" % c)
        write_png_interlaced(p, img)
        same(load(p), img, 0, "the test's own interlaced encoder, %d channels" % c)
        if cli.ok(["convert", p, o], "interlaced png %d channels" % c)[0]:
            same(load(o), img, 0, "interlaced png, %d channels" % c)
    # Extensions in any case; --quality; -q; the output over the input.
    img = smooth_image(rng, 64, 64, 3)
    p = cli.path("q.png")
    save(p, img)
    sizes = {}
    for q in (10, 95):
        o = cli.path("q%d.JPEG" % q)
        if cli.ok(["convert", p, o, "--quality", str(q)], "--quality %d" % q)[0]:
            sizes[q] = os.path.getsize(o)
            check(load(o).shape == img.shape, "--quality %d: shape" % q)
    if len(sizes) == 2:
        check(sizes[10] < sizes[95], "--quality 10 (%d bytes) is not smaller than 95 (%d)" % (sizes[10], sizes[95]))
    good, out = cli.ok(["convert", p, cli.path("Q.PNG"), "--quiet"], "upper-case .PNG, --quiet")
    check(good and out == "" and os.path.exists(cli.path("Q.PNG")), "--quiet prints nothing, writes Q.PNG")
    shutil.copy(p, cli.path("inplace.png"))
    if cli.ok(["convert", cli.path("inplace.png"), cli.path("inplace.png")], "output over its input")[0]:
        same(load(cli.path("inplace.png")), img, 0, "output over its input")


def group_errors(cli, rng):
    img = rand_image(rng, 20, 30, 3)
    good = cli.path("good.png")
    save(good, img)
    gray = cli.path("gray.png")
    save(gray, rand_image(rng, 20, 30, 1))
    rgba = cli.path("rgba.png")
    save(rgba, rand_image(rng, 20, 30, 4))
    jpg = cli.path("good.jpg")
    save(jpg, smooth_image(rng, 64, 80, 3), [cv2.IMWRITE_JPEG_QUALITY, 90])
    out = cli.path("out.png")
    png_bytes = open(good, "rb").read()
    jpg_bytes = open(jpg, "rb").read()

    def file(name, data):
        p = cli.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    # Files that cannot be read: status 1, "cannot read 'NAME': why".
    missing = cli.path("missing.png")
    for cmd in (["resize", missing, out, "10x10"], ["convert", missing, out, "--op", "flip", "--mode", "h"]):
        cli.fails(cmd, 1, "missing file", "cannot read '%s': No such file or directory" % missing, out)
    bad_files = {
        "truncated PNG (half)": file("half.png", png_bytes[:len(png_bytes) // 2]),
        "truncated PNG (header only)": file("head.png", png_bytes[:40]),
        "truncated PNG (no IEND)": file("noend.png", png_bytes[:-12]),
        "truncated PNG (signature only)": file("sig.png", png_bytes[:8]),
        "PNG with a bad IDAT CRC": file("crc.png", png_bytes[:60] + bytes([png_bytes[60] ^ 0xFF]) + png_bytes[61:]),
        "truncated JPEG (half)": file("half.jpg", jpg_bytes[:len(jpg_bytes) // 2]),
        "truncated JPEG (header only)": file("head.jpg", jpg_bytes[:100]),
        "truncated JPEG (SOI only)": file("soi.jpg", jpg_bytes[:3]),
        "JPEG without its EOI": file("noeoi.jpg", jpg_bytes[:-2] + b""),
        "not an image": file("text.png", b"hello, this is not a picture\n" * 4),
        "empty file": file("empty.png", b""),
        "a directory": cli.dir,
    }
    for what, p in bad_files.items():
        cli.fails(["resize", p, out, "10x10"], 1, what, "cannot read '%s': " % p, out)
        cli.fails(["convert", p, out, "--op", "flip", "--mode", "v"], 1, what, "cannot read '%s': " % p, out)

    # Usage errors: status 2, before anything is read.
    usage = [
        (["resize", good, out, "0x0"], "0x0 size", "size '0x0'"),
        (["resize", good, out, "0x10"], "zero width", "size '0x10'"),
        (["resize", good, out, "10x0"], "zero height", "size '10x0'"),
        (["resize", good, out, "12x"], "malformed size 12x", "size '12x'"),
        (["resize", good, out, "x12"], "malformed size x12", "size 'x12'"),
        (["resize", good, out, "12"], "malformed size 12", "size '12'"),
        (["resize", good, out, "axb"], "malformed size axb", "size 'axb'"),
        (["resize", good, out, "1.5x2"], "fractional size", "size '1.5x2'"),
        (["resize", good, out, "12x12x3"], "three sides", "size '12x12x3'"),
        (["resize", good, out, "+5x 4"], "space in size", None),
        (["resize", good, out, "99999999x2"], "huge size", None),
        (["resize", good, out], "resize without a size", "missing WxH"),
        (["resize", good], "resize without OUT", "missing OUT"),
        (["resize"], "resize without arguments", "missing IN and OUT"),
        (["resize", good, out, "10x10", "extra"], "extra argument", "unexpected argument 'extra'"),
        (["resize", good, out, "10x10", "--frobnicate"], "unknown option", "unknown option '--frobnicate'"),
        (["resize", good, out, "10x10", "-z"], "unknown short option", "unknown option '-z'"),
        (["resize", good, out, "10x10", "--interp"], "option without its value", "--interp needs a value"),
        (["resize", good, out, "10x10", "--interp", "bilinear"], "bad --interp", "--interp 'bilinear'"),
        (["resize", good, out, "10x10", "--interp", "linear", "--interp=cubic"], "option twice", "given twice"),
        (["resize", good, out, "10x10", "--op", "flip"], "--op on resize", "--op is not an option of gaio resize"),
        (["resize", good, out, "10x10", "--quiet=1"], "value on a flag", "--quiet takes no value"),
        (["resize", good, cli.path("out.bmp"), "10x10"], "unknown output format", "unknown output format"),
        (["resize", good, cli.path("out"), "10x10"], "output without an extension", "unknown output format"),
        (["resize", good, out, "10x10", "--quality", "90"], "--quality for a PNG", "--quality is for JPEG"),
        (["resize", good, cli.path("o.jpg"), "10x10", "--quality", "0"], "--quality 0", "--quality '0'"),
        (["resize", good, cli.path("o.jpg"), "10x10", "--quality", "101"], "--quality 101", "--quality '101'"),
        (["convert", good, out, "--op", "blur"], "bad --op", "unknown --op 'blur'"),
        (["convert", good, out, "--op"], "--op without a value", "--op needs a value"),
        (["convert", good, out, "--op", "flip"], "flip without --mode", "--op flip needs --mode"),
        (["convert", good, out, "--op", "flip", "--mode", "x"], "bad --mode", "--mode 'x'"),
        (["convert", good, out, "--op", "flip", "--mode", "h", "--degrees", "90"], "option of another op",
         "--degrees does not apply to --op flip"),
        (["convert", good, out, "--op", "rotate"], "rotate without --degrees", "--op rotate needs --degrees"),
        (["convert", good, out, "--op", "rotate", "--degrees", "45"], "bad --degrees", "--degrees '45'"),
        (["convert", good, out, "--op", "crop"], "crop without --roi", "--op crop needs --roi"),
        (["convert", good, out, "--op", "crop", "--roi", "1,2,3"], "short --roi", "--roi '1,2,3'"),
        (["convert", good, out, "--op", "crop", "--roi", "1,2,0,4"], "empty --roi", "--roi '1,2,0,4'"),
        (["convert", good, out, "--op", "crop", "--roi", "-1,2,3,4"], "negative --roi", "--roi '-1,2,3,4'"),
        (["convert", good, out, "--op", "border", "--top", "-1"], "negative border", "--top '-1'"),
        (["convert", good, out, "--op", "border", "--type", "mirror"], "bad border --type", "--type 'mirror'"),
        (["convert", good, out, "--op", "border", "--type", "wrap", "--value", "3"], "--value with wrap",
         "--value is for --type constant"),
        (["convert", good, out, "--op", "border", "--value", "1,2,3,4,5"], "five values", "--value '1,2,3,4,5'"),
        (["convert", good, out, "--op", "warp-affine"], "warp without --matrix", "--op warp-affine needs --matrix"),
        (["convert", good, out, "--op", "warp-affine", "--matrix", "1,0,0,0,1"], "short --matrix", "--matrix"),
        (["convert", good, out, "--op", "warp-affine", "--matrix", "1,0,0,0,1,nan"], "nan in --matrix", "--matrix"),
        (["convert", good, out, "--op", "warp-affine", "--matrix", "1,0,0,0,1,0", "--interp", "cubic"],
         "cubic warp", "--interp 'cubic'"),
        (["convert", good, out, "--op", "warp-affine", "--matrix", "1,0,0,0,1,0", "--size", "0x3"], "bad --size",
         "--size '0x3'"),
        (["convert", good, out, "--op", "convert", "--scale", "two"], "bad --scale", "--scale 'two'"),
        (["convert", good, out, "--op", "gray", "--scale", "2"], "--scale on gray", "--scale does not apply"),
        (["convert", good], "convert without OUT", "missing OUT"),
    ]
    for args, what, contains in usage:
        cli.fails(args, 2, what, contains, out)
    for dev in ("-1", "abc", "1.5"):
        cli.fails(["resize", good, out, "10x10", "--device", dev], 2, "--device " + dev, "--device '%s'" % dev, out,
                  device=False)
    cli.fails(["resize", good, out, "10x10", "--device", "4096"], 2, "--device 4096", "no such device", out,
              device=False)
    rc, o, e = cli.raw(["frobnicate"])
    check(rc == 2 and o == "" and "unknown command 'frobnicate'" in e, "unknown command: rc %d %r" % (rc, e))

    # Inputs an op cannot take: status 1, after reading.
    cli.fails(["convert", good, out, "--op", "crop", "--roi", "20,10,11,5"], 1, "--roi outside the image",
              "is not inside the 30x20 image", out)
    cli.fails(["convert", gray, out, "--op", "gray"], 1, "gray of a gray image", "is gray", out)
    cli.fails(["convert", gray, out, "--op", "swap-rb"], 1, "swap-rb of a gray image", "is gray", out)
    cli.fails(["convert", rgba, out, "--op", "rgba"], 1, "rgba of an RGBA image", "is RGBA already", out)
    cli.fails(["convert", good, out, "--op", "rgb"], 1, "rgb of an RGB image", "is RGB already", out)
    cli.fails(["resize", good, cli.path("o.jpg"), "70000x10"], 1, "JPEG wider than 65500", "larger than JPEG", None)
    # Writing where nothing can be written.
    nodir = os.path.join(cli.dir, "no", "such", "dir", "o.png")
    cli.fails(["convert", good, nodir], 1, "unwritable output", "cannot write '%s': No such file or directory" % nodir)
    # Help is not an error.
    for cmd in ("resize", "convert"):
        rc, o, e = cli.raw([cmd, "--help"])
        check(rc == 0 and e == "" and ("gaio " + cmd) in o, "gaio %s --help: rc %d, %r" % (cmd, rc, e))
    rc, o, e = cli.raw(["help"])
    check(rc == 0 and "resize IN OUT WxH" in o and "convert IN OUT" in o, "gaio help lists resize and convert")


INTERPS = {"nearest": cv2.INTER_NEAREST, "nearest-exact": cv2.INTER_NEAREST_EXACT, "linear": cv2.INTER_LINEAR,
           "cubic": cv2.INTER_CUBIC, "area": cv2.INTER_AREA}


def nearest_exact(img, ow, oh, cv):
    """OpenCV's INTER_NEAREST_EXACT as of 4.7 (resizeNN_bitexact, offset step/2 - src%2),
    which gaio follows; 4.6 used step/2 - 1, which differs at exact ties of even-sized
    sources (64 -> 32 takes the even pixels). Checked against cv2 where they agree."""
    h, w = img.shape[:2]

    def index(src, dst):
        step = ((src << 16) + dst // 2) // dst
        return np.minimum((step // 2 - src % 2 + np.arange(dst, dtype=np.int64) * step) >> 16, src - 1)

    want = img[index(h, oh)][:, index(w, ow)]
    if h % 2 and w % 2:
        check(max_diff(want, cv) == 0, "the test's nearest-exact agrees with OpenCV's, %dx%d -> %dx%d" % (w, h, ow, oh))
    return want


def group_resize(cli, rng):
    cases = [((1, 1), (5, 3)), ((7, 3), (11, 5)), ((333, 217), (150, 100)), ((333, 217), (500, 400)),
             ((64, 48), (32, 24)), ((61, 47), (19, 13))]
    for c in (1, 3, 4):
        for (h, w), (oh, ow) in cases:
            img = rand_image(rng, h, w, c)
            p = cli.path("r_%dx%dx%d.png" % (w, h, c))
            save(p, img)
            for name, flag in INTERPS.items():
                o = cli.path("r_%dx%dx%d_%s_%dx%d.png" % (w, h, c, name, ow, oh))
                args = ["resize", p, o, "%dx%d" % (ow, oh)]
                if name != "linear":
                    args += ["--interp", name]
                if cli.ok(args, "resize %s" % name)[0]:
                    want = cv2.resize(img, (ow, oh), interpolation=flag)
                    if name == "nearest-exact":
                        want = nearest_exact(img, ow, oh, want)
                    tol = 0 if name.startswith("nearest") else 1
                    same(load(o), want, tol, "resize %dx%dx%d -> %dx%d %s" % (w, h, c, ow, oh, name))
    # JPEG in and out.
    img = smooth_image(rng, 90, 120, 3)
    p, o = cli.path("r.jpg"), cli.path("r_out.jpg")
    save(p, img, [cv2.IMWRITE_JPEG_QUALITY, 95])
    if cli.ok(["resize", p, o, "60x45", "--interp", "area"], "resize jpeg")[0]:
        got = load(o)
        want = cv2.resize(load(p), (60, 45), interpolation=cv2.INTER_AREA)
        check(got.shape == want.shape and max_diff(got, want) <= 24 and
              np.abs(got.astype(int) - want).mean() < 3, "resize jpeg -> jpeg, within JPEG's loss")


def group_flip(cli, rng):
    for p, img in inputs(cli, rng, "f"):
        for mode, code in (("h", 1), ("v", 0), ("both", -1)):
            o = p.replace(".png", "_%s.png" % mode)
            if cli.ok(["convert", p, o, "--op", "flip", "--mode", mode], "flip " + mode)[0]:
                same(load(o), cv2.flip(img, code), 0, "flip %s %s" % (mode, p))


def group_rotate(cli, rng):
    codes = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}
    for p, img in inputs(cli, rng, "rot"):
        for deg, code in codes.items():
            o = p.replace(".png", "_%d.png" % deg)
            if cli.ok(["convert", p, o, "--op", "rotate", "--degrees", str(deg)], "rotate %d" % deg)[0]:
                same(load(o), cv2.rotate(img, code), 0, "rotate %d %s" % (deg, p))


def group_crop(cli, rng):
    for p, img in inputs(cli, rng, "crop"):
        h, w = img.shape[:2]
        rois = [(0, 0, w, h), (w - 1, h - 1, 1, 1), (w // 3, h // 4, max(1, w // 2), max(1, h // 2))]
        for x, y, cw, ch in rois:
            o = p.replace(".png", "_%d_%d_%d_%d.png" % (x, y, cw, ch))
            if cli.ok(["convert", p, o, "--op", "crop", "--roi", "%d,%d,%d,%d" % (x, y, cw, ch)], "crop")[0]:
                same(load(o), img[y:y + ch, x:x + cw], 0, "crop %d,%d,%d,%d of %s" % (x, y, cw, ch, p))


BORDERS = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT,
           "reflect101": cv2.BORDER_REFLECT_101, "wrap": cv2.BORDER_WRAP}


def group_border(cli, rng):
    for p, img in inputs(cli, rng, "b", sizes=[(1, 1), (7, 3), (40, 57)]):
        c = channels(img)
        h, w = img.shape[:2]
        for name, flag in BORDERS.items():
            t, b, l, r = 2, 5, 3, 1
            if name == "wrap":
                t, b, l, r = min(t, h), min(b, h), min(l, w), min(r, w)
            args = ["convert", p, None, "--op", "border", "--top", str(t), "--bottom", str(b), "--left", str(l),
                    "--right", str(r), "--type", name]
            value = (0, 0, 0, 0)
            if name == "constant":
                value = (17, 200, 3, 99)[:c] + (0,) * (4 - c)
                args += ["--value", ",".join(str(v) for v in value[:c])]
            o = p.replace(".png", "_%s.png" % name)
            args[2] = o
            if cli.ok(args, "border " + name)[0]:
                want = cv2.copyMakeBorder(img, t, b, l, r, flag, value=value)
                same(load(o), want, 0, "border %s %s" % (name, p))
    # One --value for every channel; no --value: zeros.
    p, img = inputs(cli, rng, "bv", chans=(3,), sizes=[(6, 5)])[0]
    o = cli.path("bv_one.png")
    if cli.ok(["convert", p, o, "--op", "border", "--top", "1", "--left", "2", "--value", "77"], "border --value 77")[0]:
        same(load(o), cv2.copyMakeBorder(img, 1, 0, 2, 0, cv2.BORDER_CONSTANT, value=(77, 77, 77, 77)), 0,
             "border --value 77 fills every channel")
    o = cli.path("bv_zero.png")
    if cli.ok(["convert", p, o, "--op", "border", "--bottom", "3", "--right", "1"], "border, zeros")[0]:
        same(load(o), cv2.copyMakeBorder(img, 0, 3, 0, 1, cv2.BORDER_CONSTANT, value=0), 0, "border, zeros")


CV_MAJOR = int(cv2.__version__.split(".")[0])


def same_warp(got, want, interp, what):
    """gaio's warpAffine is OpenCV 4's (fixed-point coordinates, 1/32 pixel). OpenCV 5
    computes them otherwise: a few nearest pixels flip to a neighbour and linear values
    move by a few levels (seen: max 5, nearest 0.2% of pixels, GPU and CPU bit-identical).
    There the check is loose, still far below what a wrong matrix, flag or size gives."""
    if CV_MAJOR < 5:
        same(got, want, 0 if interp == "nearest" else 1, what)
        return
    if not check(got is not None and got.shape == want.shape, "%s: shape %s, want %s" %
                 (what, None if got is None else got.shape, want.shape)):
        return
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    if interp == "nearest":
        check((d > 0).mean() < 0.01, "%s: %d of %d values differ (OpenCV %s)" % (what, (d > 0).sum(), d.size,
                                                                                cv2.__version__))
    else:
        check(d.max() <= 8 and d.mean() < 2, "%s: max |diff| %d, mean %.2f (OpenCV %s)" % (what, d.max(), d.mean(),
                                                                                        cv2.__version__))


def group_warp_affine(cli, rng):
    for p, img in inputs(cli, rng, "w", sizes=[(7, 3), (61, 80)]):
        h, w = img.shape[:2]
        c = channels(img)
        a = np.deg2rad(17.0)
        m = np.array([[0.9 * np.cos(a), -0.9 * np.sin(a), w * 0.2], [0.9 * np.sin(a), 0.9 * np.cos(a), -h * 0.1]])
        ms = ",".join("%.17g" % v for v in m.ravel())
        for interp, flag in (("nearest", cv2.INTER_NEAREST), ("linear", cv2.INTER_LINEAR)):
            for inverse in (False, True):
                o = p.replace(".png", "_%s%s.png" % (interp, "_inv" if inverse else ""))
                args = ["convert", p, o, "--op", "warp-affine", "--matrix", ms, "--interp", interp]
                flags = flag
                if inverse:
                    args.append("--inverse")
                    flags |= cv2.WARP_INVERSE_MAP
                if cli.ok(args, "warp-affine " + interp)[0]:
                    want = cv2.warpAffine(img, m, (w, h), flags=flags, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
                    same_warp(load(o), want, interp, "warp-affine %s%s %s" % (interp, " inverse" if inverse else "", p))
        # Another size, a border value.
        o = p.replace(".png", "_sized.png")
        value = (9, 99, 199, 255)[:c] + (0,) * (4 - c)
        args = ["convert", p, o, "--op", "warp-affine", "--matrix", "0.5,0,1,0,0.5,2", "--size", "%dx%d" % (w + 5, h + 3),
                "--value", ",".join(str(v) for v in value[:c])]
        if cli.ok(args, "warp-affine --size --value")[0]:
            want = cv2.warpAffine(img, np.array([[0.5, 0, 1], [0, 0.5, 2]]), (w + 5, h + 3), flags=cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_CONSTANT, borderValue=value)
            same_warp(load(o), want, "linear", "warp-affine --size --value " + p)


def group_color(cli, rng):
    for p, img in inputs(cli, rng, "col", sizes=[(1, 1), (7, 3), (101, 67)]):
        c = channels(img)
        cases = []
        if c in (3, 4):
            cases.append(("gray", cv2.cvtColor(img, cv2.COLOR_RGB2GRAY if c == 3 else cv2.COLOR_RGBA2GRAY), 1))
            cases.append(("swap-rb", img[..., [2, 1, 0] + ([3] if c == 4 else [])], 0))
        if c != 3:
            cases.append(("rgb", cv2.cvtColor(img, cv2.COLOR_GRAY2RGB if c == 1 else cv2.COLOR_RGBA2RGB), 0))
        if c != 4:
            cases.append(("rgba", cv2.cvtColor(img, cv2.COLOR_GRAY2RGBA if c == 1 else cv2.COLOR_RGB2RGBA), 0))
        for op, want, tol in cases:
            o = p.replace(".png", "_%s.png" % op)
            if cli.ok(["convert", p, o, "--op", op], op)[0]:
                same(load(o), want, tol, "%s of %s" % (op, p))
    # RGBA -> JPEG drops alpha: after swap-rb, the JPEG holds BGR.
    img = np.dstack([smooth_image(rng, 48, 64, 3), np.full((48, 64), 128, np.uint8)])
    p, o = cli.path("col_alpha.png"), cli.path("col_alpha.jpg")
    save(p, img)
    good, out = cli.ok(["convert", p, o, "--op", "swap-rb"], "swap-rb RGBA -> JPEG")
    if good:
        check("alpha dropped" in out, "summary says the alpha was dropped: %r" % out)
        got = load(o)
        check(got.shape == (48, 64, 3) and np.abs(got.astype(int) - img[..., [2, 1, 0]]).mean() < 3,
              "swap-rb RGBA -> JPEG holds BGR without alpha")


def group_convert(cli, rng):
    for p, img in inputs(cli, rng, "cv", sizes=[(1, 1), (7, 3), (91, 67)]):
        for scale, offset in ((0.5, 10.0), (2.0, -30.0), (1.0, 0.0), (-1.0, 255.0), (0.3, 0.5)):
            o = p.replace(".png", "_%g_%g.png" % (scale, offset))
            args = ["convert", p, o, "--op", "convert", "--scale", "%g" % scale, "--offset=%g" % offset]
            if cli.ok(args, "convert")[0]:
                # convertTo: saturate(round-half-even(v * scale + offset)), in float32 for 8 bits
                # as OpenCV computes it (cv2.convertScaleAbs agrees where nothing is negative).
                f = np.float32
                want = np.clip(np.rint(img.astype(f) * f(scale) + f(offset)), 0, 255).astype(np.uint8)
                if scale >= 0 and offset >= 0:
                    check(max_diff(cv2.convertScaleAbs(img, alpha=scale, beta=offset), want) == 0,
                          "the test's convertTo agrees with OpenCV's, *%g%+g" % (scale, offset))
                same(load(o), want, 0, "convert *%g%+g %s" % (scale, offset, p))


# ---- --help of every command, `gaio model` ---------------------------------------

HELP_COMMANDS = ["info", "bench", "version", "resize", "convert", "classify", "model"]


def group_help(cli, rng):
    """`gaio --help`, `-h`, `help` and every command's --help / -h: the usage on stdout,
    nothing on stderr, exit 0, whatever else the command line holds."""
    for args in (["--help"], ["-h"], ["help"]):
        rc, out, err = cli.raw(args)
        if check(rc == 0 and err == "" and out.startswith("usage: gaio "),
                 "gaio %s -> rc %d, stdout %r, stderr %r" % (" ".join(args), rc, out[:200], err)):
            for c in HELP_COMMANDS:
                check(re.search(r"^  %s\b" % c, out, re.M) is not None, "gaio %s lists no '%s' command" % (args[0], c))
    for c in HELP_COMMANDS:
        for flag in ("--help", "-h"):
            rc, out, err = cli.raw([c, flag])
            check(rc == 0 and err == "" and out.startswith("usage: gaio %s" % c) and out.endswith("\n"),
                  "gaio %s %s -> rc %d, stdout %r, stderr %r" % (c, flag, rc, out[:300], err))
    # --help among other arguments (even bad ones) still prints the usage.
    for args in (["classify", "model.onnx", "a.jpg", "--help"], ["classify", "--top", "3", "-h"],
                 ["model", "model.onnx", "--batch", "4", "--help"], ["model", "--frobnicate", "--help"],
                 ["resize", "a.png", "b.png", "--help"]):
        rc, out, err = cli.raw(args)
        check(rc == 0 and err == "" and out.startswith("usage: gaio %s" % args[0]),
              "gaio %s -> rc %d, stdout %r, stderr %r" % (" ".join(args), rc, out[:300], err))
    # The usage names the options.
    rc, out, _ = cli.raw(["model", "--help"])
    for opt in ("--batch", "--shape", "--precision", "--layout", "--device", "--save", "--load", "--iterations",
                "--no-tune"):
        check(opt in out, "gaio model --help does not mention %s" % opt)
    rc, out, _ = cli.raw(["classify", "--help"])
    for opt in ("--cache", "--no-cache", "--labels", "--batch"):
        check(opt in out, "gaio classify --help does not mention %s" % opt)


def onnx_models(workdir):
    """make_demo.py's colour classifier (input x [N, 3, 224, 224], output prob [N, 8]) and a
    model gaio refuses (a Hardmax node named 'mixer'), written into workdir."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "classify"))
    import make_demo  # numpy, cv2, onnx
    import onnx
    from onnx import TensorProto, helper
    good = os.path.join(workdir, "colours.onnx")
    onnx.save(make_demo.model(), good)
    g = helper.make_graph(
        [helper.make_node("Hardmax", ["a"], ["c"], name="mixer")], "refused",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    bad = os.path.join(workdir, "hardmax.onnx")
    onnx.save(m, bad)
    return good, bad


TIMING = re.compile(r"p50 ([0-9.]+) ms, p90 ([0-9.]+) ms, p99 ([0-9.]+) ms, min ([0-9.]+) ms")
RATE1 = re.compile(r"throughput, 1 context: ([0-9.]+) inferences/s, ([0-9.]+) samples/s \(batch (\d+)\)")
RATE2 = re.compile(r"throughput, 2 contexts on 2 streams at once: ([0-9.]+) inferences/s, ([0-9.]+) samples/s")


def model_run(cli, args, what):
    """gaio model ARGS --device D, which must succeed with its report on stdout alone."""
    args = ["model"] + args + ["--device", str(cli.device)]
    p = subprocess.run([cli.binary] + args, capture_output=True, text=True, timeout=240)
    ok = check(p.returncode == 0 and p.stderr == "",
               "%s: gaio %s -> rc %d, stderr %r, stdout %r" % (what, " ".join(args), p.returncode, p.stderr,
                                                               p.stdout[-2000:]))
    return ok, p.stdout


def check_timing(out, batch, what):
    m = TIMING.search(out)
    if check(m is not None, "%s: no latency line: %r" % (what, out[-1500:])):
        p50, p90, p99, mn = (float(v) for v in m.groups())
        check(0 < mn <= p50 <= p90 <= p99, "%s: percentiles out of order: %s" % (what, m.group(0)))
    for rx, name in ((RATE1, "1 context"), (RATE2, "2 contexts")):
        m = rx.search(out)
        if check(m is not None, "%s: no throughput line for %s: %r" % (what, name, out[-1500:])):
            inf, smp = float(m.group(1)), float(m.group(2))
            check(inf > 0 and abs(smp - inf * batch) <= 0.01 * smp + 0.2,
                  "%s: %s: %g samples/s is not batch %d x %g inferences/s" % (what, name, smp, batch, inf))
            if rx is RATE1:
                check(int(m.group(3)) == batch, "%s: batch %s, want %d" % (what, m.group(3), batch))


def group_model(cli, rng):
    """`gaio model`: build with --save, load with --load, shapes, precision and layout,
    no timing, a refused model, a corrupt engine file, usage errors."""
    good, bad = onnx_models(cli.dir)
    engine = cli.path("colours.engine")
    seed = int(rng.integers(1, 1 << 31))

    # Build, save, time: the inputs and outputs with their symbolic and resolved shapes,
    # the plan and its steps, the seed, the latency and throughput lines.
    ok, out = model_run(cli, [good, "--batch", "2", "--iterations", "5", "--warmup", "1", "--seed", str(seed),
                              "--save", engine], "build and save")
    if ok:
        check(re.search(r"^  x\s+f32\s+model \[N, 3, 224, 224\]\s+engine \[2, 3, 224, 224\]$", out, re.M) is not None,
              "build: no input line for x [N, 3, 224, 224] -> [2, 3, 224, 224]: %r" % out)
        check(re.search(r"^  prob\s+f32\s+model \[N, 8\]\s+engine \[2, 8\]$", out, re.M) is not None,
              "build: no output line for prob [N, 8] -> [2, 8]: %r" % out)
        check(re.search(r"^engine: built in [0-9.]+ s", out, re.M) is not None, "build: no build time: %r" % out)
        check(re.search(r"^  batch 2, precision f(16|32), layout (NCHW|NHWC), CUDA graph ", out, re.M) is not None,
              "build: no plan line: %r" % out)
        check(re.search(r"^  \d+ nodes? -> \d+ steps? \(\d+ convolutions?\): \d+ batch norms? folded", out, re.M)
              is not None, "build: no steps summary: %r" % out)
        check(re.search(r"^  weights .+ \(once per engine\), arena .+ \(per execution context\)$", out, re.M) is not None,
              "build: no weight and arena bytes: %r" % out)
        steps = out.split("\nsteps:\n", 1)[1] if "\nsteps:\n" in out else ""
        check(re.search(r"^\s+0\s+\S", steps, re.M) is not None and "Conv" in steps and "Softmax" in steps,
              "build: the steps (from 0) do not list Conv and Softmax: %r" % steps[:1500])
        check(("seed %d" % seed) in out, "build: the seed %d is not printed" % seed)
        check("saved %s" % engine in out, "build: no 'saved' line: %r" % out)
        check_timing(out, 2, "build")
    check(os.path.isfile(engine) and os.path.getsize(engine) > 0, "--save wrote no engine file")

    # Load the saved engine: no ONNX file, the same shapes, timed.
    if os.path.isfile(engine):
        ok, out = model_run(cli, ["--load", engine, "--iterations", "3", "--warmup", "1"], "load")
        if ok:
            check(re.search(r"^engine: loaded from %s in [0-9.]+ s" % re.escape(engine), out, re.M) is not None,
                  "load: no load time: %r" % out)
            check(re.search(r"^  x\s+f32\s+model \[N, 3, 224, 224\]\s+engine \[2, 3, 224, 224\]$", out, re.M)
                  is not None, "load: no input line: %r" % out)
            check_timing(out, 2, "load")
        # The model may be named too (not read); re-saving a loaded engine works.
        again = cli.path("again.engine")
        ok, out = model_run(cli, [good, "--load", engine, "--iterations", "0", "--save", again], "load and save")
        check(ok and os.path.isfile(again), "load and save: no file %s" % again)

    # --shape (the whole input shape), --precision model, --layout nchw, --no-tune.
    ok, out = model_run(cli, [good, "--shape", "x=3x3x224x224", "--precision", "model", "--layout", "nchw",
                              "--no-tune", "--iterations", "2", "--warmup", "0"], "shape")
    if ok:
        check(re.search(r"engine \[3, 3, 224, 224\]$", out, re.M) is not None, "shape: x is not [3, 3, 224, 224]")
        check(re.search(r"^  batch 3, precision f32, layout NCHW", out, re.M) is not None,
              "shape: want batch 3, precision f32, layout NCHW: %r" % out)
        check_timing(out, 3, "shape")
    ok, out = model_run(cli, [good, "--iterations", "0"], "no timing")
    if ok:
        check("timing: none" in out and "p50" not in out, "--iterations 0 still timed: %r" % out)
        check(re.search(r"engine \[1, 3, 224, 224\]$", out, re.M) is not None, "the default batch is not 1")

    # A model gaio refuses: exit 1, one line naming the node and its operator.
    args = ["model", bad, "--device", str(cli.device)]
    rc, out, err = cli.raw(args)
    check(rc == 1 and out == "" and err.count("\n") == 1 and "mixer" in err and "Hardmax" in err,
          "refused model: rc %d, stdout %r, stderr %r (want rc 1 and one line naming mixer and Hardmax)" % (rc, out, err))

    # Engine files that are not engines: exit 1 with a message, never a crash.
    junk = cli.path("junk.engine")
    with open(junk, "wb") as f:
        f.write(bytes(rng.integers(0, 256, 4096, dtype=np.uint8)))
    files = [("missing", cli.path("missing.engine")), ("random bytes", junk)]
    if os.path.isfile(engine):
        data = open(engine, "rb").read()
        for name, cut in (("truncated", data[:len(data) // 2]), ("empty", b"")):
            p = cli.path(name + ".engine")
            open(p, "wb").write(cut)
            files.append((name, p))
        flipped = bytearray(data)
        for i in rng.integers(0, len(data), 64):
            flipped[i] ^= 0xFF
        p = cli.path("flipped.engine")
        open(p, "wb").write(bytes(flipped))
        files.append(("flipped bytes", p))
    for name, p in files:
        args = ["model", "--load", p, "--iterations", "1", "--warmup", "0", "--device", str(cli.device)]
        rc, out, err = cli.raw(args)
        if name == "flipped bytes" and rc == 0:
            continue  # flipped weight bytes may load (gaio need not checksum them); it ran, no crash
        check(rc == 1 and err.count("\n") == 1 and p in err,
              "%s engine file: rc %d (want 1), stderr %r (want one line naming the file)" % (name, rc, err))

    # Usage errors: exit 2, one line saying what.
    for args, says in [
        ([], "no model"),
        ([good, good], "one model"),
        ([good, "--batch", "0"], "--batch"),
        ([good, "--batch"], "needs a value"),
        ([good, "--precision", "f64"], "--precision"),
        ([good, "--layout", "chwn"], "--layout"),
        ([good, "--shape", "x"], "--shape"),
        ([good, "--shape", "x=3xfoo"], "--shape"),
        ([good, "--shape", "x=1x3x224x224", "--shape", "x=2x3x224x224"], "twice"),
        ([good, "--iterations", "-1"], "--iterations"),
        ([good, "--device", "nowhere"], "--device"),
        ([good, "--device", "999"], "no such device"),
        ([good, "--frobnicate"], "unknown option"),
        (["--load", engine, "--batch", "2"], "--batch"),
        (["--load", engine, "--precision", "f16"], "--precision"),
    ]:
        dev = [] if "--device" in args else ["--device", str(cli.device)]
        rc, out, err = cli.raw(["model"] + args + dev)
        check(rc == 2 and out == "" and err.count("\n") == 1 and says in err,
              "gaio model %s: rc %d (want 2), stdout %r, stderr %r (want %r)" % (" ".join(args), rc, out, err, says))
    # --save where it cannot be written: exit 1, the report printed up to there.
    rc, out, err = cli.raw(["model", good, "--iterations", "0", "--save", cli.path("no/such/dir/e.engine"),
                            "--device", str(cli.device)])
    check(rc == 1 and "no/such/dir/e.engine" in err, "--save into a missing directory: rc %d, stderr %r" % (rc, err))


GROUPS = {"io": group_io, "errors": group_errors, "resize": group_resize, "flip": group_flip,
          "rotate": group_rotate, "crop": group_crop, "border": group_border, "warp_affine": group_warp_affine,
          "color": group_color, "convert": group_convert}
GROUPS.update({"help": group_help, "model": group_model})


SKIP = 77  # ctest's SKIP_RETURN_CODE for the gpu tests (tools/CMakeLists.txt)


def require_gpu():
    """Whether GAIO_REQUIRE_GPU is set (scripts/gpu-check): no CUDA device is then a failure."""
    return os.environ.get("GAIO_REQUIRE_GPU", "") not in ("", "0")


def first_gpu(binary):
    """(index of the first CUDA device `gaio info` lists or None, what it says of the
    CUDA backend). `gaio info` must succeed: anything else raises SystemExit(1)."""
    p = subprocess.run([binary, "info"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print("FAIL: gaio info -> exit %d, stdout %r, stderr %r" % (p.returncode, p.stdout, p.stderr), flush=True)
        raise SystemExit(1)
    m = re.search(r"^\s*\[(\d+)\] cuda ", p.stdout, re.M)
    backend = re.search(r"^\s*cuda\s+(.*)$", p.stdout, re.M)
    return (int(m.group(1)) if m else None), (backend.group(1).strip() if backend else "not listed by gaio info")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gaio")
    ap.add_argument("group", choices=sorted(GROUPS))
    ap.add_argument("--device", default="0")
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args()
    env = os.environ.get("GAIO_TEST_SEED")
    seed = int(env, 0) if env else (int(time.time() * 1000) ^ os.getpid()) & 0xFFFFFFFF
    print("test_cli.py %s: seed %d (GAIO_TEST_SEED=%d reproduces it)" % (a.group, seed, seed), flush=True)
    device = a.device
    if device == "gpu":
        device, backend = first_gpu(a.gaio)
        if device is None:
            if require_gpu():
                print("FAIL: GAIO_REQUIRE_GPU=%s is set but `gaio info` lists no CUDA device (CUDA backend: %s)"
                      % (os.environ["GAIO_REQUIRE_GPU"], backend), flush=True)
                return 1
            print("SKIPPED: no CUDA device (CUDA backend: %s)" % backend, flush=True)
            return SKIP
    workdir = a.workdir or os.path.join(os.environ.get("TMPDIR", "/tmp"), "gaio_cli_test_%s_%d" % (a.group, os.getpid()))
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    rng = np.random.default_rng(seed)
    t = time.time()
    GROUPS[a.group](Cli(a.gaio, device, workdir), rng)
    print("%s: %d checks, %d failed, %.1f s (device %s, files in %s)" %
          (a.group, CHECKS[0], len(FAILURES), time.time() - t, device, workdir))
    if not FAILURES and not a.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
