/* gaio_reformat: HWC <-> CHW (NHWC <-> NCHW), a transposition of each pixel's channels. */
#include "core/fail.h"
#include "image/image_internal.h"

#define MAX_ROW_PIXELS ((int64_t)1 << 28) /* the CUDA kernel indexes a row in 32 bits */

/* The rows of an image become one when both sides store them without a gap (the
 * planes of the CHW side stay apart). */
static void merge_rows(gaio_kimg *s, gaio_kimg *d) {
    uint64_t e = gaio_dtype_size((gaio_dtype)s->dtype), w = (uint64_t)s->width;
    int32_t c = s->channels > s->planes ? s->channels : s->planes;
    uint64_t sp = s->channels > 1 ? w * e * (uint64_t)c : w * e, dp = d->channels > 1 ? w * e * (uint64_t)c : w * e;
    if (s->height > 1 && s->row_pitch == sp && d->row_pitch == dp &&
        (int64_t)s->width * s->height <= MAX_ROW_PIXELS) {
        s->width = d->width = s->width * s->height;
        s->height = d->height = 1;
        s->row_pitch = d->row_pitch = 0;
    }
    if (s->batch == 1) s->image_stride = d->image_stride = 0;
}

gaio_status gaio_reformat(gaio_stream *stream, const gaio_image *src, const gaio_image *dst) {
    const char *fn = __func__;
    gaio_kimg ks, kd;
    gaio_status st = gaio__img_resolve_planar(fn, "reformat", stream, src, dst, &ks, &kd, GAIO_ERR_INVALID_ARG);
    if (st != GAIO_OK) return st;
    if (src->layout == dst->layout)
        return BAD("src and dst are both %s: reformat turns HWC into CHW or CHW into HWC (gaio_convert copies)",
                   gaio__img_layout_name(src->layout));
    if (src->dtype != dst->dtype) return gaio__img_mismatch(fn, "dst's dtype differs from src's", src, dst);
    if (src->width != dst->width || src->height != dst->height || src->channels != dst->channels ||
        src->batch != dst->batch)
        return gaio__img_mismatch(fn, "dst's shape differs from src's", src, dst);
    if (gaio__img_overlap(&ks, &kd)) return BAD("dst overlaps src: reformat cannot work in place");

    merge_rows(&ks, &kd);
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (gaio__img_on_cuda(stream)) {
        /* A thread moves 16 bytes of each of up to 4 planes (src/kernels/image/convert.cu);
         * more channels take a pixel per thread. */
        int64_t per = src->channels <= 4 ? 16 / (int64_t)gaio_dtype_size(src->dtype) : 1;
        int64_t len = ks.width, rows = (int64_t)ks.batch * ks.height, threads = (len + per - 1) / per;
        uint32_t bx = 32;
        while (bx < 256 && (int64_t)bx < threads) bx *= 2;
        block = (gaio_dim3){bx, 256 / bx, 1};
        grid = gaio__img_grid2d(len, rows, 1, block.x, block.y, (uint32_t)per, 1);
    }
    gaio_arg args[2] = {GAIO_ARG(ks), GAIO_ARG(kd)};
    gaio_buffer *held[2] = {src->buffer, dst->buffer};
    return gaio__img_launch(fn, stream, "gaio_img_reformat", grid, block, 0, args, 2, held, 2);
}
