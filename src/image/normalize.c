/* gaio_normalize: dst(c) = (src(c) * scale - mean[c]) / std[c], in float. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/fail.h"
#include "image/elementwise.h"
#include "image/image_internal.h"
#include "image/kargs.h"

#define MAX_CHANNELS GAIO_KCHAN_MAX

gaio_status gaio_normalize(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, float scale,
                           const float *mean, const float *std) {
    const char *fn = __func__;
    gaio_kimg ks, kd;
    gaio_status st = gaio__img_resolve_planar(fn, "normalize", stream, src, dst, &ks, &kd, GAIO_ERR_INVALID_ARG);
    if (st != GAIO_OK) return st;
    if (dst->dtype != GAIO_DTYPE_F32 && dst->dtype != GAIO_DTYPE_F16)
        return BAD("dst.dtype is %s: normalize writes f32 or f16", gaio_dtype_name(dst->dtype));
    if (src->layout != dst->layout)
        return gaio__img_mismatch(fn, "dst's layout differs from src's (gaio_reformat changes layouts)", src, dst);
    if (src->width != dst->width || src->height != dst->height || src->channels != dst->channels ||
        src->batch != dst->batch)
        return gaio__img_mismatch(fn, "dst's shape differs from src's", src, dst);
    if (!isfinite(scale)) return BAD("scale %g is not finite", (double)scale);
    if (!mean) return BAD("mean is NULL (it holds one value per channel)");
    if (!std) return BAD("std is NULL (it holds one value per channel)");
    int32_t channels = src->channels;
    gaio_kchan m, inv;
    memset(&m, 0, sizeof m);
    memset(&inv, 0, sizeof inv);
    for (int32_t c = 0; c < channels; c++) {
        if (!isfinite(mean[c])) return BAD("mean[%d] is %g: it must be finite", (int)c, (double)mean[c]);
        if (!isfinite(std[c]) || std[c] == 0)
            return BAD("std[%d] is %g: it must be finite and non-zero", (int)c, (double)std[c]);
        /* Both backends multiply by the same float reciprocal. */
        float r = 1.0f / std[c];
        if (!isfinite(r)) return BAD("std[%d] is %g: its reciprocal overflows a float", (int)c, (double)std[c]);
        m.v[c] = mean[c];
        inv.v[c] = r;
    }
    if (gaio__img_overlap(&ks, &kd) && !gaio__img_same_place(&ks, &kd))
        return BAD("dst overlaps src: only an in-place normalize (same buffer, offset and strides, dtypes of one "
                   "size) may share memory");

    gaio__img_merge_rows(&ks, &kd, false, true);
    int64_t len = (int64_t)ks.width * ks.channels, rows = (int64_t)ks.batch * ks.planes * ks.height;
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (gaio__img_on_cuda(stream))
        gaio__img_elementwise_shape(len, rows, gaio_dtype_size(src->dtype), gaio_dtype_size(dst->dtype), &grid, &block);
    gaio_arg args[5] = {GAIO_ARG(ks), GAIO_ARG(kd), GAIO_ARG(scale), GAIO_ARG(m), GAIO_ARG(inv)};
    gaio_buffer *held[2] = {src->buffer, dst->buffer};
    return gaio__img_launch(fn, stream, "gaio_img_normalize", grid, block, 0, args, 5, held, 2);
}
