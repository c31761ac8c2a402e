/* gaio_convert: dst = saturate(src * scale + offset), cv::Mat::convertTo's rule. */
#include <float.h>
#include <math.h>

#include "core/fail.h"
#include "image/elementwise.h"
#include "image/image_internal.h"

/* Merged rows stay below this many elements, so that widths fit in int32 and the
 * kernels' element indices in 32 bits. */


/* Both sides compute in float (as convertTo does for every depth but f64): a scale
 * or offset that is no float would turn into inf or nan on the device. */
static bool finite_float(double v) { return isfinite(v) && fabs(v) <= FLT_MAX; }


gaio_status gaio_convert(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, double scale,
                         double offset) {
    const char *fn = __func__;
    gaio_kimg ks, kd;
    gaio_status st = gaio__img_resolve_planar(fn, "convert", stream, src, dst, &ks, &kd, GAIO_ERR_INVALID_ARG);
    if (st != GAIO_OK) return st;
    if (src->layout != dst->layout)
        return gaio__img_mismatch(fn, "dst's layout differs from src's (gaio_reformat changes layouts)", src, dst);
    if (src->width != dst->width || src->height != dst->height || src->channels != dst->channels ||
        src->batch != dst->batch)
        return gaio__img_mismatch(fn, "dst's shape differs from src's", src, dst);
    if (!finite_float(scale)) return BAD("scale %g is not a finite float", scale);
    if (!finite_float(offset)) return BAD("offset %g is not a finite float", offset);
    if (gaio__img_overlap(&ks, &kd) && !gaio__img_same_place(&ks, &kd))
        return BAD("dst overlaps src: only an in-place convert (same buffer, offset and strides, dtypes of one size) "
                   "may share memory");

    gaio__img_merge_rows(&ks, &kd, true, false);
    int64_t len = ks.width, rows = (int64_t)ks.batch * ks.planes * ks.height;
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (gaio__img_on_cuda(stream))
        gaio__img_elementwise_shape(len, rows, gaio_dtype_size(src->dtype), gaio_dtype_size(dst->dtype), &grid, &block);
    float a = (float)scale, b = (float)offset;
    gaio_arg args[4] = {GAIO_ARG(ks), GAIO_ARG(kd), GAIO_ARG(a), GAIO_ARG(b)};
    gaio_buffer *held[2] = {src->buffer, dst->buffer};
    return gaio__img_launch(fn, stream, "gaio_img_convert", grid, block, 0, args, 4, held, 2);
}
