/* gaio_cvt_color: R/B swaps, alpha added or dropped, RGB -> gray, gray -> RGB, and
 * NV12 / I420 frames -> RGB, each in one launch per batch (OpenCV's cvtColor). */
#include <math.h>

#include "core/fail.h"
#include "image/image_internal.h"
#include "image/kargs.h"

static const char *code_name(gaio_color code) {
    switch (code) {
    case GAIO_COLOR_SWAP_RB: return "SWAP_RB";
    case GAIO_COLOR_RGB2GRAY: return "RGB2GRAY";
    case GAIO_COLOR_BGR2GRAY: return "BGR2GRAY";
    case GAIO_COLOR_GRAY2RGB: return "GRAY2RGB";
    case GAIO_COLOR_RGB2RGBA: return "RGB2RGBA";
    case GAIO_COLOR_RGBA2RGB: return "RGBA2RGB";
    case GAIO_COLOR_RGB2BGRA: return "RGB2BGRA";
    case GAIO_COLOR_RGBA2BGR: return "RGBA2BGR";
    case GAIO_COLOR_YUV2RGB: return "YUV2RGB";
    case GAIO_COLOR_YUV2BGR: return "YUV2BGR";
    }
    return "?";
}


/* What every conversion asks of src and dst besides layouts and channels: equal
 * sizes and batches, and no shared bytes. The spans come from the descriptor checks
 * (gaio__img_overlap's gaio__img_span counts only the Y plane of a YUV frame). */
static gaio_status check_pair(const char *fn, const char *cn, const gaio_image *src, const gaio_image *dst,
                              const gaio_kimg *ks, const gaio_kimg *kd) {
    if (src->width != dst->width || src->height != dst->height)
        return gaio__img_mismatch(fn, "width and height differ", src, dst);
    if (src->batch != dst->batch) return gaio__img_mismatch(fn, "batch sizes differ", src, dst);
    size_t sbytes = 0, dbytes = 0;
    gaio__img_check(fn, "src", src, NULL, &sbytes);
    gaio__img_check(fn, "dst", dst, NULL, &dbytes);
    if (ks->ptr < kd->ptr + dbytes && kd->ptr < ks->ptr + sbytes)
        return BAD("src and dst overlap: %s cannot run in place", cn);
    return GAIO_OK;
}

/* Threads per block: 256, as (bx, 256 / bx) with bx the smallest power of two from
 * 32 that covers a row's `chunks`, so narrow rows do not leave most lanes idle. */
static void pick_grid(int64_t chunks, int64_t rows, gaio_dim3 *grid, gaio_dim3 *block) {
    uint32_t bx = 32;
    while (bx < 256 && (int64_t)bx < chunks) bx *= 2;
    uint32_t by = 256 / bx;
    int64_t gx = (chunks + bx - 1) / bx, gy = (rows + by - 1) / by;
    /* the kernels stride over both dimensions past these caps */
    *grid = (gaio_dim3){(uint32_t)(gx < 0x7fffffff ? gx : 0x7fffffff), (uint32_t)(gy < 65535 ? gy : 65535), 1};
    *block = (gaio_dim3){bx, by, 1};
}

/* The 20-bit matrix of a gaio_yuv. For limited ("video") range, ITU-R BT.601-7
 * and BT.709-6 quantise Y = 219 E'Y + 16 and Cb, Cr = 224 E'Pb,Pr + 128; for full
 * range (JPEG/JFIF for 601; H.273 full range for 709) Y = 255 E'Y and Cb, Cr =
 * 255 E'Pb,Pr + 128. Inverting E'Y = Kr R + Kg G + Kb B, E'Pb = (B - E'Y) /
 * (2 (1 - Kb)), E'Pr = (R - E'Y) / (2 (1 - Kr)) gives R = Y' + 2 (1 - Kr) Pr,
 * G = Y' - 2 Kb (1 - Kb) / Kg Pb - 2 Kr (1 - Kr) / Kg Pr, B = Y' + 2 (1 - Kb) Pb. */
static void yuv_matrix(gaio_yuv yuv, gaio_kyuv *m) {
    if (yuv == GAIO_YUV_BT601_LIMITED) {
        /* OpenCV's ITUR_BT_601_* constants (the matrix above rounded to three
         * decimals: 1.164, 1.596, -0.813, -0.391, 2.018) and its clamp of Y - 16 at 0,
         * so that COLOR_YUV2RGB_NV12 / _I420 results come out bit-exact. */
        *m = (gaio_kyuv){1220542, 1673527, -409993, -852492, 2116026, 16, 0, 0, 0, 0};
        return;
    }
    bool full = yuv == GAIO_YUV_BT601_FULL || yuv == GAIO_YUV_BT709_FULL;
    bool bt709 = yuv == GAIO_YUV_BT709_LIMITED || yuv == GAIO_YUV_BT709_FULL;
    double kr = bt709 ? 0.2126 : 0.299, kb = bt709 ? 0.0722 : 0.114, kg = 1.0 - kr - kb;
    double sy = full ? 1.0 : 255.0 / 219.0, sc = full ? 1.0 : 255.0 / 224.0, one = 1 << 20;
    m->cy = (int32_t)lrint(sy * one);
    m->r_v = (int32_t)lrint(sc * 2 * (1 - kr) * one);
    m->g_u = (int32_t)lrint(-sc * 2 * kb * (1 - kb) / kg * one);
    m->g_v = (int32_t)lrint(-sc * 2 * kr * (1 - kr) / kg * one);
    m->b_u = (int32_t)lrint(sc * 2 * (1 - kb) * one);
    m->y_off = full ? 0 : 16;
    m->y_min = -255; /* no clamp: footroom below 16 stays negative, as the formulas say */
}

static gaio_status cvt_yuv(const char *fn, gaio_stream *stream, const gaio_image *src, const gaio_image *dst,
                           const gaio_kimg *ks, const gaio_kimg *kd, gaio_color code, gaio_yuv yuv) {
    if ((unsigned)yuv > GAIO_YUV_BT709_FULL)
        return BAD("yuv %d is not a gaio_yuv (BT601_LIMITED 0, BT601_FULL 1, BT709_LIMITED 2, BT709_FULL 3)",
                   (int)yuv);
    if (src->layout != GAIO_LAYOUT_NV12 && src->layout != GAIO_LAYOUT_I420)
        return BAD("src is a %s image but %s takes an NV12 or I420 frame", gaio__img_layout_name(src->layout),
                   code_name(code));
    if (dst->layout == GAIO_LAYOUT_CHW)
        return UNSUPPORTED("dst is CHW: %s writes interleaved (HWC) RGB only", code_name(code));
    if (dst->layout != GAIO_LAYOUT_HWC)
        return BAD("dst is a %s frame but %s writes an HWC image", gaio__img_layout_name(dst->layout), code_name(code));
    if (dst->dtype != GAIO_DTYPE_U8)
        return BAD("dst.dtype is %s but %s writes u8 (the dtype of the frame)", gaio_dtype_name(dst->dtype),
                   code_name(code));
    if (dst->channels != 3 && dst->channels != 4)
        return BAD("dst has %d channels but %s writes 3 (RGB) or 4 (RGBA, alpha 255)", (int)dst->channels,
                   code_name(code));
    gaio_status st = check_pair(fn, code_name(code), src, dst, ks, kd);
    if (st != GAIO_OK) return st;

    gaio_kyuv m;
    yuv_matrix(yuv, &m);
    m.i420 = src->layout == GAIO_LAYOUT_I420;
    m.dcn = dst->channels;
    m.bidx = code == GAIO_COLOR_YUV2BGR ? 2 : 0;

    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (gaio__img_on_cuda(stream)) /* a thread: 8 chroma samples = 16 columns of 2 rows */
        pick_grid((src->width / 2 + 7) / 8, (int64_t)src->batch * (src->height / 2), &grid, &block);
    gaio_arg args[3] = {GAIO_ARG(*ks), GAIO_ARG(*kd), GAIO_ARG(m)};
    gaio_buffer *held[2] = {src->buffer, dst->buffer};
    return gaio__img_launch(fn, stream, m.dcn == 4 ? "gaio_img_yuv420_to_rgba" : "gaio_img_yuv420_to_rgb", grid,
                            block, 0, args, 3, held, 2);
}

gaio_status gaio_cvt_color(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, gaio_color code,
                           gaio_yuv yuv) {
    const char *fn = __func__;
    gaio_kimg ks, kd;
    gaio_status st = gaio__img_resolve(fn, "src", src, stream, &ks);
    if (st != GAIO_OK) return st;
    if ((st = gaio__img_resolve(fn, "dst", dst, stream, &kd)) != GAIO_OK) return st;
    if (code < GAIO_COLOR_SWAP_RB || code > GAIO_COLOR_YUV2BGR)
        return BAD("code %d is not a gaio_color (SWAP_RB 1 ... YUV2BGR 10)", (int)code);
    if (code == GAIO_COLOR_YUV2RGB || code == GAIO_COLOR_YUV2BGR)
        return cvt_yuv(fn, stream, src, dst, &ks, &kd, code, yuv);

    const char *cn = code_name(code);
    if (src->layout == GAIO_LAYOUT_CHW || dst->layout == GAIO_LAYOUT_CHW)
        return UNSUPPORTED("%s is CHW: %s converts interleaved (HWC) images only",
                           src->layout == GAIO_LAYOUT_CHW ? "src" : "dst", cn);
    if (src->layout != GAIO_LAYOUT_HWC)
        return BAD("src is a %s frame: only YUV2RGB and YUV2BGR read YUV frames, %s takes HWC",
                   gaio__img_layout_name(src->layout), cn);
    if (dst->layout != GAIO_LAYOUT_HWC)
        return BAD("dst is a %s frame: %s writes HWC", gaio__img_layout_name(dst->layout), cn);
    if (src->dtype != dst->dtype) return gaio__img_mismatch(fn, "dtypes differ", src, dst);
    if (src->dtype != GAIO_DTYPE_U8 && src->dtype != GAIO_DTYPE_U16 && src->dtype != GAIO_DTYPE_F32)
        return UNSUPPORTED("src and dst are %s: %s takes u8, u16 or f32", gaio_dtype_name(src->dtype), cn);

    int sc = src->channels, dc = dst->channels, swap = 0;
    const char *want_s = NULL, *want_d = NULL;
    switch (code) {
    case GAIO_COLOR_SWAP_RB:
        swap = 1;
        if (sc != 3 && sc != 4) want_s = "3 or 4";
        else if (dc != sc) want_d = sc == 3 ? "3, as src" : "4, as src";
        break;
    case GAIO_COLOR_RGB2GRAY:
    case GAIO_COLOR_BGR2GRAY:
        swap = code == GAIO_COLOR_BGR2GRAY;
        if (sc != 3 && sc != 4) want_s = "3 or 4";
        else if (dc != 1) want_d = "1";
        break;
    case GAIO_COLOR_GRAY2RGB:
        if (sc != 1) want_s = "1";
        else if (dc != 3 && dc != 4) want_d = "3 or 4";
        break;
    case GAIO_COLOR_RGB2RGBA:
    case GAIO_COLOR_RGB2BGRA:
        swap = code == GAIO_COLOR_RGB2BGRA;
        if (sc != 3) want_s = "3";
        else if (dc != 4) want_d = "4";
        break;
    default: /* RGBA2RGB, RGBA2BGR */
        swap = code == GAIO_COLOR_RGBA2BGR;
        if (sc != 4) want_s = "4";
        else if (dc != 3) want_d = "3";
        break;
    }
    if (want_s) return BAD("src has %d channels but %s takes %s", sc, cn, want_s);
    if (want_d) return BAD("dst has %d channels but %s writes %s", dc, cn, want_d);
    if ((st = check_pair(fn, cn, src, dst, &ks, &kd)) != GAIO_OK) return st;

    gaio_kcolor a = {0};
    a.scn = sc;
    a.dcn = dc;
    a.swap = swap;
    int64_t e = (int64_t)gaio_dtype_size(src->dtype), w = ks.width, h = ks.height;
    /* Rows without gaps between them (and images without gaps) are one long row:
     * every thread then gets full vector-sized chunks whatever the width. */
    bool flat = ks.row_pitch == (uint64_t)(w * sc * e) && kd.row_pitch == (uint64_t)(w * dc * e) &&
                (ks.batch == 1 || (ks.image_stride == ks.row_pitch * (uint64_t)h &&
                                   kd.image_stride == kd.row_pitch * (uint64_t)h));
    a.rows = flat ? 1 : (int64_t)ks.batch * h;
    a.cols = flat ? (int64_t)ks.batch * h * w : w;
    a.rows_per_image = flat ? 1 : (int32_t)h;

    /* a kernel per dtype and result channels (src/kernels/image/color.cu says why) */
    static const char *const names[3][3] = {
        {"gaio_img_cvt_color_u8_to1", "gaio_img_cvt_color_u8_to3", "gaio_img_cvt_color_u8_to4"},
        {"gaio_img_cvt_color_u16_to1", "gaio_img_cvt_color_u16_to3", "gaio_img_cvt_color_u16_to4"},
        {"gaio_img_cvt_color_f32_to1", "gaio_img_cvt_color_f32_to3", "gaio_img_cvt_color_f32_to4"}};
    int di = src->dtype == GAIO_DTYPE_U8 ? 0 : src->dtype == GAIO_DTYPE_U16 ? 1 : 2;
    const char *name = names[di][dc == 1 ? 0 : dc - 2];
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (gaio__img_on_cuda(stream)) { /* a thread: 16 bytes of pixels, i.e. 16 / e pixels */
        int64_t per = 16 / e;
        pick_grid((a.cols + per - 1) / per, a.rows, &grid, &block);
    }
    gaio_arg args[3] = {GAIO_ARG(ks), GAIO_ARG(kd), GAIO_ARG(a)};
    gaio_buffer *held[2] = {src->buffer, dst->buffer};
    return gaio__img_launch(fn, stream, name, grid, block, 0, args, 3, held, 2);
}
