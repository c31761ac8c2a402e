#!/usr/bin/env python3
"""PyTorch / torchvision peer of the CUDA image benchmark (bench/bench_image_cuda.c runs it).

Times, with torch.cuda.Event (median after warm-up, a cold L2 before each sample),
the rows of the gaio table on a random uint8 [B, H, W, 3] cuda tensor (the NV12 row:
a random uint8 [B, H * 3 / 2, W] batch of NV12 frames) and prints one line per row:
"NAME MS VARIANT", the fastest variant torch offers for it, plus "note:" lines. Each
variant produces what gaio produces (uint8 NHWC for resizes and NV12 -> RGB, float32
NCHW for the fused rows) and pays every layout and dtype conversion a user would
need for that (permute, .float(), round/clamp/.to(uint8), .contiguous())."""
import sys

from image_peer import best_of, make_timer, parse_args

try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # the C side shows this and prints "-"
    print("note: torch peer skipped: %s: %s" % (type(e).__name__, e))
    sys.exit(0)

try:
    import torchvision
    import torchvision.transforms.v2.functional as TF
    from torchvision.transforms import InterpolationMode
except Exception as e:
    torchvision = None
    TF_ERROR = "%s: %s" % (type(e).__name__, e)


def main():
    a = parse_args()

    if not torch.cuda.is_available():
        print("note: torch peer skipped: torch %s sees no CUDA device" % torch.__version__)
        return
    dev = torch.device("cuda")
    print("note: torch %s, torchvision %s, %s" % (
        torch.__version__, torchvision.__version__ if torchvision else "missing (%s)" % TF_ERROR,
        torch.cuda.get_device_name(dev)))

    B, H, W, O = a.batch, a.height, a.width, a.out
    gen = torch.Generator(device=dev)
    gen.manual_seed(12345)
    x = torch.randint(0, 256, (B, H, W, 3), dtype=torch.uint8, device=dev, generator=gen)
    sizes = [tuple(int(v) for v in s.split("x")) for s in a.varshape.split(",")]
    frames = []
    for i in range(B):
        w, h = sizes[i % len(sizes)]
        frames.append(torch.randint(0, 256, (h, w, 3), dtype=torch.uint8, device=dev, generator=gen))
    nv12 = torch.randint(0, 256, (B, H * 3 // 2, W), dtype=torch.uint8, device=dev, generator=gen)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1)

    timed = make_timer(torch, a, dev)

    nchw = x.permute(0, 3, 1, 2)  # a view: NCHW shape, channels_last strides

    def to_u8_nhwc(y):
        return y.round_().clamp_(0, 255).to(torch.uint8).permute(0, 2, 3, 1).contiguous()

    def f32_resize(mode, size, antialias=False):
        ac = False if mode in ("bilinear", "bicubic") else None

        def f():
            y = F.interpolate(nchw.float(), size=size, mode=mode, align_corners=ac, antialias=antialias)
            return to_u8_nhwc(y)
        return f

    def u8_nearest(size):
        def f():
            return F.interpolate(nchw, size=size, mode="nearest").permute(0, 2, 3, 1).contiguous()
        return f

    def tv_resize(interp, size, antialias):
        def f():
            return TF.resize(nchw, list(size), interpolation=interp, antialias=antialias).permute(0, 2, 3, 1).contiguous()
        return f

    y0, x0 = (H - a.crop) // 2, (W - a.crop) // 2
    crop = nchw[:, :, y0:y0 + a.crop, x0:x0 + a.crop]

    def normalize_nchw(y):
        return y.mul_(1.0 / 255.0).sub_(mean).div_(std).contiguous()

    def f32_fused(mode, antialias=False):
        ac = False if mode == "bilinear" else None

        def f():
            y = F.interpolate(crop.float(), size=(O, O), mode=mode, align_corners=ac, antialias=antialias)
            return normalize_nchw(y)
        return f

    def tv_fused(antialias):
        def f():
            y = TF.resize(crop, [O, O], interpolation=InterpolationMode.BILINEAR, antialias=antialias)
            y = TF.to_dtype(y, torch.float32, scale=True)
            return TF.normalize(y, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]).contiguous()
        return f

    def var_fused(use_tv):
        def f():
            out = torch.empty((B, 3, O, O), dtype=torch.float32, device=dev)
            for i, img in enumerate(frames):
                h, w = img.shape[0], img.shape[1]
                s = min(h, w)
                c = img[(h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s].permute(2, 0, 1)
                if use_tv:
                    out[i] = TF.resize(c, [O, O], interpolation=InterpolationMode.BILINEAR, antialias=False)
                else:
                    out[i] = F.interpolate(c.unsqueeze(0).float(), size=(O, O), mode="bilinear",
                                           align_corners=False)[0]
            return normalize_nchw(out)
        return f

    # OpenCV's COLOR_YUV2RGB_NV12 (BT.601, limited range), its 20-bit constants as
    # floats: torch has no YUV op, so this is what a torch user would write.
    def nv12_rgb():
        y = (nv12[:, :H].float().sub_(16).clamp_(min=0).mul_(1220542 / 2**20)).unsqueeze(-1)
        uv = nv12[:, H:].view(B, H // 2, W // 2, 2).float().sub_(128)
        u, v = uv[..., 0], uv[..., 1]
        c = torch.stack((v * (1673527 / 2**20), u * (-409993 / 2**20) + v * (-852492 / 2**20),
                         u * (2116026 / 2**20)), dim=-1)
        # each chroma sample covers 2 x 2 pixels
        c = c.view(B, H // 2, 1, W // 2, 1, 3).expand(B, H // 2, 2, W // 2, 2, 3).reshape(B, H, W, 3)
        return c.add_(y).round_().clamp_(0, 255).to(torch.uint8)

    s720, s224 = (720, 1280), (O, O)
    BIL = CUB = NEA = None
    if torchvision is not None:
        BIL, CUB, NEA = InterpolationMode.BILINEAR, InterpolationMode.BICUBIC, InterpolationMode.NEAREST
    rows = [
        ("linear_720", (B, 720, 1280, 3), [
            ("F.interpolate bilinear f32", f32_resize("bilinear", s720)),
            ("tv2.resize bilinear u8 antialias=False", tv_resize(BIL, s720, False) if BIL else None)]),
        ("area_720", (B, 720, 1280, 3), [
            ("F.interpolate area f32 (adaptive avg pool)", f32_resize("area", s720)),
            ("tv2.resize bilinear u8 antialias=True", tv_resize(BIL, s720, True) if BIL else None)]),
        ("cubic_720", (B, 720, 1280, 3), [
            ("F.interpolate bicubic f32", f32_resize("bicubic", s720)),
            ("tv2.resize bicubic u8 antialias=False", tv_resize(CUB, s720, False) if CUB else None)]),
        ("nearest_720", (B, 720, 1280, 3), [
            ("F.interpolate nearest u8", u8_nearest(s720)),
            ("tv2.resize nearest u8", tv_resize(NEA, s720, False) if NEA else None)]),
        ("area_224", (B, O, O, 3), [
            ("F.interpolate area f32 (adaptive avg pool)", f32_resize("area", s224)),
            ("tv2.resize bilinear u8 antialias=True", tv_resize(BIL, s224, True) if BIL else None)]),
        ("linear_224", (B, O, O, 3), [
            ("F.interpolate bilinear f32", f32_resize("bilinear", s224)),
            ("tv2.resize bilinear u8 antialias=False", tv_resize(BIL, s224, False) if BIL else None)]),
        ("cubic_224", (B, O, O, 3), [
            ("F.interpolate bicubic f32", f32_resize("bicubic", s224)),
            ("tv2.resize bicubic u8 antialias=False", tv_resize(CUB, s224, False) if CUB else None)]),
        ("nearest_224", (B, O, O, 3), [
            ("F.interpolate nearest u8", u8_nearest(s224)),
            ("tv2.resize nearest u8", tv_resize(NEA, s224, False) if NEA else None)]),
        ("fused_linear_224", (B, 3, O, O), [
            ("crop, .float(), F.interpolate bilinear, normalize", f32_fused("bilinear")),
            ("crop, tv2 resize/to_dtype/normalize", tv_fused(False) if BIL else None)]),
        ("fused_area_224", (B, 3, O, O), [
            ("crop, .float(), F.interpolate area, normalize", f32_fused("area")),
            ("crop, tv2 resize antialias=True/to_dtype/normalize", tv_fused(True) if BIL else None)]),
        ("fused_varshape_224", (B, 3, O, O), [
            ("per-frame loop: crop, .float(), F.interpolate bilinear; batch normalize", var_fused(False)),
            ("per-frame loop: crop, tv2.resize; batch normalize", var_fused(True) if BIL else None)]),
        ("nv12_rgb_1080p", (B, H, W, 3), [
            ("f32 BT.601 limited (OpenCV's formula), chroma expanded 2x2, round/clamp/u8", nv12_rgb)]),
    ]
    for name, shape, variants in rows:
        best = best_of(name, shape, variants, timed)
        if best:
            print("%s %.4f %s" % (name, best[0], best[1]), flush=True)

if __name__ == "__main__":
    main()
