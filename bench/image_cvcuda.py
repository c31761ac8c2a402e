#!/usr/bin/env python3
"""CV-CUDA peer of the CUDA image benchmark (bench/bench_image_cuda.c runs it).

The protocol of bench/image_torch.py: the same arguments, one line per row, "NAME MS
VARIANT", plus "note:" lines; when CV-CUDA (the cvcuda wheel) or torch cannot be
imported, or there is no CUDA device, one "note: CV-CUDA peer skipped: <why>" line
and exit status 0. torch supplies the tensors, the events and the cold-L2 flush, as
in image_torch.py, so both peers are timed alike: torch.cuda.Event median after
warm-up, a 256 MiB fill_ before each sample. CV-CUDA's `*_into` operators write
preallocated outputs on torch's current stream, so the events bracket exactly the
operator."""
import sys

from image_peer import best_of, make_timer, parse_args

SKIP = "note: CV-CUDA peer skipped: "

try:
    import cvcuda
except Exception as e:  # the C side shows this and prints "-"
    print(SKIP + "cvcuda not importable: %s: %s" % (type(e).__name__, str(e)[:120]))
    sys.exit(0)

try:
    import torch
except Exception as e:
    print(SKIP + "torch (tensors, events, the L2 flush) not importable: %s: %s" % (type(e).__name__, str(e)[:100]))
    sys.exit(0)

# ImageNet's per-channel mean and std, averaged: CV-CUDA's fused op takes one scale
# and one offset for every channel.
MEAN, STD = 0.449, 0.226
GIVE_UP = 3  # rows without any figure before a failing CV-CUDA is given up on


def interp(name):
    return getattr(cvcuda.Interp, name, None)


def main():
    a = parse_args()

    if not torch.cuda.is_available():
        print(SKIP + "torch %s sees no CUDA device" % torch.__version__)
        return
    dev = torch.device("cuda")
    print("note: cvcuda %s (torch %s for tensors and events), %s" % (
        getattr(cvcuda, "__version__", "?"), torch.__version__, torch.cuda.get_device_name(dev)))

    B, H, W, O = a.batch, a.height, a.width, a.out
    gen = torch.Generator(device=dev)
    gen.manual_seed(12345)
    x = torch.randint(0, 256, (B, H, W, 3), dtype=torch.uint8, device=dev, generator=gen)
    # CV-CUDA's NV12 tensor: the Y plane's H rows, then H/2 rows of interleaved U,V
    nv12 = torch.randint(0, 256, (B, H * 3 // 2, W, 1), dtype=torch.uint8, device=dev, generator=gen)
    stream = cvcuda.as_stream(torch.cuda.current_stream())
    src = cvcuda.as_tensor(x, "NHWC")
    src_nv12 = cvcuda.as_tensor(nv12, "NHWC")

    timed = make_timer(torch, a, dev)

    def u8_out(h, w):
        return cvcuda.as_tensor(torch.empty((B, h, w, 3), dtype=torch.uint8, device=dev), "NHWC")

    def resize(mode, h, w):
        if mode is None:
            return None
        dst = u8_out(h, w)
        return lambda: cvcuda.resize_into(dst, src, mode, stream=stream)

    # The whole frame resized so that its crop-sized (short) side becomes O, then
    # the centred O x O crop: the same pixels as gaio's crop-then-resize when the
    # crop is the centred square of the short side, as here.
    rw, rh = round(W * O / a.crop), round(H * O / a.crop)
    crop_pos = ((rw - O) // 2, (rh - O) // 2)

    def fused(mode):
        if mode is None or not hasattr(cvcuda, "resize_crop_convert_reformat_into"):
            return None
        dst = cvcuda.as_tensor(torch.empty((B, 3, O, O), dtype=torch.float32, device=dev), "NCHW")
        kw = dict(scale=1.0 / (255.0 * STD), offset=-MEAN / STD, stream=stream)
        if hasattr(cvcuda, "ChannelManip"):
            kw["manip"] = cvcuda.ChannelManip.NO_OP
        # srcCast=False: the resize stays in float, not rounded to u8 before the
        # scale, as gaio_preprocess computes it
        kw["srcCast"] = False
        return lambda: cvcuda.resize_crop_convert_reformat_into(dst, src, (rw, rh), mode, crop_pos, **kw)

    def nv12_rgb():
        code = getattr(getattr(cvcuda, "ColorConversion", None), "YUV2RGB_NV12", None)
        if code is None:
            return None
        dst = u8_out(H, W)
        return lambda: cvcuda.cvtcolor_into(dst, src_nv12, code, stream=stream)

    LIN, ARE, CUB = interp("LINEAR"), interp("AREA"), interp("CUBIC")
    # NEAREST samples pixel centres; NEAREST_FLOOR (newer wheels) is OpenCV's
    # INTER_NEAREST rule, gaio's: the faster is shown, its variant says which.
    NEA, NEF = interp("NEAREST"), interp("NEAREST_FLOOR")
    fused_text = "resize %dx%d then centre crop, scalar scale/offset (no per-channel mean/std in CV-CUDA)" % (rw, rh)
    s720, s224 = (720, 1280), (O, O)
    rows = [
        ("linear_720", (B, 720, 1280, 3), [("resize_into LINEAR", resize(LIN, *s720))]),
        ("area_720", (B, 720, 1280, 3), [("resize_into AREA", resize(ARE, *s720))]),
        ("cubic_720", (B, 720, 1280, 3), [("resize_into CUBIC", resize(CUB, *s720))]),
        ("nearest_720", (B, 720, 1280, 3), [("resize_into NEAREST_FLOOR", resize(NEF, *s720)),
                                            ("resize_into NEAREST (pixel centres)", resize(NEA, *s720))]),
        ("area_224", (B, O, O, 3), [("resize_into AREA", resize(ARE, *s224))]),
        ("linear_224", (B, O, O, 3), [("resize_into LINEAR", resize(LIN, *s224))]),
        ("cubic_224", (B, O, O, 3), [("resize_into CUBIC", resize(CUB, *s224))]),
        ("nearest_224", (B, O, O, 3), [("resize_into NEAREST_FLOOR", resize(NEF, *s224)),
                                       ("resize_into NEAREST (pixel centres)", resize(NEA, *s224))]),
        ("fused_linear_224", (B, 3, O, O), [(fused_text, fused(LIN))]),
        ("fused_area_224", (B, 3, O, O), [(fused_text.replace("resize", "AREA resize", 1), fused(ARE))]),
        ("nv12_rgb_1080p", (B, H, W, 3), [("cvtcolor_into YUV2RGB_NV12", nv12_rgb())]),
    ]
    print("note: CV-CUDA fused rows: resize_crop_convert_reformat_into, srcCast=False (float resize); "
          "fused_varshape_224 skipped: no per-image crop in one call")
    done = failed = 0
    for name, shape, variants in rows:
        # the C side keeps 190 characters of a note: the variant's head is enough
        best = best_of(name, shape, variants, timed, short=lambda v: v.split(",")[0])
        if best:
            done += 1
            print("%s %.4f %s" % (name, best[0], best[1]), flush=True)
        elif all(fn is None for _, fn in variants):
            print("note: %s: this cvcuda has no such operator or mode" % name)
        else:
            failed += 1
            if not done and failed >= GIVE_UP:
                print("note: CV-CUDA gave no figure for %d rows: the rest are not tried" % failed)
                return


if __name__ == "__main__":
    main()
