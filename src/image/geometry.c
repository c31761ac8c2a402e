/* The geometric copies: crop, copy_make_border, flip, rotate. Each checks its
 * images and parameters, then enqueues one kernel (src/image/cpu/geometry.c,
 * src/kernels/image/geometry.cu). They move pixels without converting them, so
 * every dtype and any channel count works the same. */
#include <string.h>

#include "core/fail.h"
#include "image/image_internal.h"

/* Threads per block of the CUDA copy kernels, and the dst bytes a warp of the row
 * ops writes per item (both must match src/kernels/image/geometry.cu; its kernels
 * grid-stride, so a mismatch costs speed, never correctness). */
#define COPY_THREADS 256
#define ROW_WSEG 1984

static size_t pixel_bytes(const gaio_kimg *k) { return gaio_dtype_size((gaio_dtype)k->dtype) * (size_t)k->channels; }

static const char *layout_word(gaio_layout l) {
    return l == GAIO_LAYOUT_NV12 ? "an NV12 frame" : l == GAIO_LAYOUT_I420 ? "an I420 frame" : "not HWC or CHW";
}

/* What every geometric op asks of a src/dst pair, sizes aside: resolved images of
 * the same dtype, layout (HWC or CHW), channels and batch, in disjoint memory. */
static gaio_status check_pair(const char *fn, gaio_stream *stream, const gaio_image *src, const gaio_image *dst,
                              gaio_kimg *ks, gaio_kimg *kd) {
    gaio_status st = gaio__img_resolve(fn, "src", src, stream, ks);
    if (st != GAIO_OK) return st;
    st = gaio__img_resolve(fn, "dst", dst, stream, kd);
    if (st != GAIO_OK) return st;
    if (src->layout != GAIO_LAYOUT_HWC && src->layout != GAIO_LAYOUT_CHW)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "src is %s: geometric ops take HWC or CHW images",
                          layout_word(src->layout));
    if (dst->layout != src->layout) return gaio__img_mismatch(fn, "dst's layout differs from src's", src, dst);
    if (dst->dtype != src->dtype) return gaio__img_mismatch(fn, "dst's dtype differs from src's", src, dst);
    if (dst->channels != src->channels) return gaio__img_mismatch(fn, "dst's channels differ from src's", src, dst);
    if (dst->batch != src->batch) return gaio__img_mismatch(fn, "dst's batch differs from src's", src, dst);
    if (gaio__img_overlap(ks, kd)) return BAD("dst overlaps src in memory: the op does not work in place");
    return GAIO_OK;
}

static gaio_status check_size(const char *fn, const gaio_image *src, const gaio_image *dst, int32_t w, int32_t h,
                              const char *why) {
    if (dst->width != w || dst->height != h)
        return BAD("dst is %dx%d but must be %dx%d (%s; src is %dx%d)", (int)dst->width, (int)dst->height, (int)w,
                   (int)h, why, (int)src->width, (int)src->height);
    return GAIO_OK;
}

/* Grid of the CUDA row ops: one warp per item, an item being a whole row of up
 * to ROW_WSEG bytes or an equal part of a longer row, of every plane. */
static gaio_dim3 row_grid(const gaio_kimg *d) {
    int64_t pb = (int64_t)pixel_bytes(d), spmax = ROW_WSEG / pb, nseg = (d->width + spmax - 1) / spmax;
    int64_t items = (int64_t)d->batch * d->planes * d->height * nseg, warps = COPY_THREADS / 32;
    int64_t blocks = (items + warps - 1) / warps;
    gaio_dim3 g = {(uint32_t)(blocks < (1 << 24) ? blocks : (1 << 24)), 1, 1};
    return g;
}

static gaio_status launch(const char *fn, gaio_stream *stream, const char *name, gaio_dim3 grid, const gaio_arg *args,
                          size_t nargs, const gaio_image *src, const gaio_image *dst) {
    gaio_dim3 block = {COPY_THREADS, 1, 1};
    if (!gaio__img_on_cuda(stream)) grid = block = (gaio_dim3){1, 1, 1};
    gaio_buffer *held[2] = {src->buffer, dst->buffer};
    return gaio__img_launch(fn, stream, name, grid, block, 0, args, nargs, held, 2);
}

gaio_status gaio_crop(gaio_stream *stream, const gaio_image *src, gaio_rect roi, const gaio_image *dst) {
    const char *fn = __func__;
    gaio_kimg ks, kd;
    gaio_status st = check_pair(fn, stream, src, dst, &ks, &kd);
    if (st != GAIO_OK) return st;
    if (roi.width < 1 || roi.height < 1 || roi.x < 0 || roi.y < 0 || roi.x > src->width - roi.width ||
        roi.y > src->height - roi.height)
        return BAD("roi (x %d, y %d, %dx%d) is empty or not inside the %dx%d src", (int)roi.x, (int)roi.y,
                   (int)roi.width, (int)roi.height, (int)src->width, (int)src->height);
    st = check_size(fn, src, dst, roi.width, roi.height, "the size of roi");
    if (st != GAIO_OK) return st;
    /* The kernel copies a whole src of dst's size: point src at the ROI. */
    ks.ptr += (uint64_t)roi.y * ks.row_pitch + (uint64_t)roi.x * pixel_bytes(&ks);
    ks.width = roi.width;
    ks.height = roi.height;
    gaio_arg args[2] = {GAIO_ARG(ks), GAIO_ARG(kd)};
    return launch(fn, stream, "gaio_img_crop", row_grid(&kd), args, 2, src, dst);
}

/* The constant of channel (HWC) or plane (CHW) c as element bits of the dtype. */
static uint32_t element_bits(gaio_dtype dt, float v) {
    switch (dt) {
    case GAIO_DTYPE_U8: return gaio_k_sat_u8(v);
    case GAIO_DTYPE_U16: return gaio_k_sat_u16(v);
    case GAIO_DTYPE_S16: return (uint16_t)gaio_k_sat_s16(v);
    case GAIO_DTYPE_F16: return gaio_k_f32_to_f16(v);
    case GAIO_DTYPE_F32: {
        uint32_t u;
        memcpy(&u, &v, 4);
        return u;
    }
    case GAIO_DTYPE_S32:
    case GAIO_DTYPE_S64:
    case GAIO_DTYPE_BF16: break; /* not image types: gaio__img_check refuses them */
    }
    return 0;
}

gaio_status gaio_copy_make_border(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, int32_t top,
                                  int32_t left, gaio_border border, const float value[4]) {
    const char *fn = __func__;
    gaio_kimg ks, kd;
    gaio_status st = check_pair(fn, stream, src, dst, &ks, &kd);
    if (st != GAIO_OK) return st;
    if (border < GAIO_BORDER_CONSTANT || border > GAIO_BORDER_WRAP)
        return BAD("border %d is not a gaio_border (CONSTANT, REPLICATE, REFLECT, REFLECT_101, WRAP)", (int)border);
    if (top < 0 || left < 0) return BAD("top %d and left %d must not be negative", (int)top, (int)left);
    if (top > dst->height - src->height || left > dst->width - src->width)
        return BAD("dst is %dx%d: too small for the %dx%d src at (left %d, top %d)", (int)dst->width,
                   (int)dst->height, (int)src->width, (int)src->height, (int)left, (int)top);
    if (border == GAIO_BORDER_CONSTANT && value && src->channels > 4)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "value holds 4 constants but src has %d channels: pass value NULL for zeros",
                          (int)src->channels);
    uint32_t cb[4] = {0, 0, 0, 0};
    if (value && border == GAIO_BORDER_CONSTANT)
        for (int c = 0; c < 4; c++) cb[c] = element_bits(src->dtype, value[c]);
    int32_t b = (int32_t)border;
    gaio_arg args[9] = {GAIO_ARG(ks),  GAIO_ARG(kd),    GAIO_ARG(top),   GAIO_ARG(left), GAIO_ARG(b),
                        GAIO_ARG(cb[0]), GAIO_ARG(cb[1]), GAIO_ARG(cb[2]), GAIO_ARG(cb[3])};
    return launch(fn, stream, "gaio_img_copy_make_border", row_grid(&kd), args, 9, src, dst);
}

gaio_status gaio_flip(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, gaio_flip_mode mode) {
    const char *fn = __func__;
    gaio_kimg ks, kd;
    gaio_status st = check_pair(fn, stream, src, dst, &ks, &kd);
    if (st != GAIO_OK) return st;
    if (mode < GAIO_FLIP_HORIZONTAL || mode > GAIO_FLIP_BOTH)
        return BAD("mode %d is not a gaio_flip_mode (HORIZONTAL 1, VERTICAL 2, BOTH 3)", (int)mode);
    st = check_size(fn, src, dst, src->width, src->height, "a flip keeps the size");
    if (st != GAIO_OK) return st;
    int32_t m = (int32_t)mode;
    gaio_arg args[3] = {GAIO_ARG(ks), GAIO_ARG(kd), GAIO_ARG(m)};
    return launch(fn, stream, "gaio_img_flip", row_grid(&kd), args, 3, src, dst);
}

/* Tile side of the CUDA rotate for a pixel size (matches rot_tile in geometry.cu). */
static int64_t rot_tile(int64_t pb) { return pb == 1 ? 128 : pb <= 4 ? 64 : pb <= 16 ? 32 : pb <= 64 ? 16 : 8; }

gaio_status gaio_rotate(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, int32_t degrees) {
    const char *fn = __func__;
    gaio_kimg ks, kd;
    gaio_status st = check_pair(fn, stream, src, dst, &ks, &kd);
    if (st != GAIO_OK) return st;
    if (degrees != 90 && degrees != 180 && degrees != 270)
        return BAD("degrees is %d: must be 90, 180 or 270 (clockwise)", (int)degrees);
    if (degrees == 180) st = check_size(fn, src, dst, src->width, src->height, "rotating by 180 keeps the size");
    else st = check_size(fn, src, dst, src->height, src->width, "rotating by 90 or 270 swaps the sides");
    if (st != GAIO_OK) return st;
    gaio_dim3 grid = row_grid(&kd);
    if (degrees != 180) {
        int64_t tp = rot_tile((int64_t)pixel_bytes(&kd)), z = (int64_t)kd.batch * kd.planes;
        int64_t tx = (kd.width + tp - 1) / tp, ty = (kd.height + tp - 1) / tp;
        grid = (gaio_dim3){(uint32_t)tx, (uint32_t)(ty < 65535 ? ty : 65535), (uint32_t)(z < 65535 ? z : 65535)};
    }
    gaio_arg args[3] = {GAIO_ARG(ks), GAIO_ARG(kd), GAIO_ARG(degrees)};
    return launch(fn, stream, "gaio_img_rotate", grid, args, 3, src, dst);
}
