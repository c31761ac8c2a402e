/* gaio_warp_affine: checks, OpenCV's inversion of the matrix, one kernel
 * (src/image/cpu/geometry_warp.c, src/kernels/image/geometry.cu). */
#include <math.h>

#include "core/fail.h"
#include "image/image_internal.h"

static float const_of(gaio_dtype dt, float v) {
    switch (dt) {
    case GAIO_DTYPE_U8: return gaio_k_sat_u8(v);
    case GAIO_DTYPE_U16: return gaio_k_sat_u16(v);
    default: return v;
    }
}

gaio_status gaio_warp_affine(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, const double m[6],
                             gaio_interp interp, unsigned flags, const float value[4]) {
    const char *fn = __func__;
    gaio_kimg ks, kd;
    gaio_status st = gaio__img_resolve_planar(fn, "warp_affine", stream, src, dst, &ks, &kd, GAIO_ERR_NOT_SUPPORTED);
    if (st != GAIO_OK) return st;
    if (dst->layout != src->layout) return gaio__img_mismatch(fn, "dst's layout differs from src's", src, dst);
    if (dst->dtype != src->dtype) return gaio__img_mismatch(fn, "dst's dtype differs from src's", src, dst);
    if (dst->channels != src->channels) return gaio__img_mismatch(fn, "dst's channels differ from src's", src, dst);
    if (dst->batch != src->batch) return gaio__img_mismatch(fn, "dst's batch differs from src's", src, dst);
    if (src->dtype != GAIO_DTYPE_U8 && src->dtype != GAIO_DTYPE_U16 && src->dtype != GAIO_DTYPE_F32)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "src is %s: warp_affine takes u8, u16 or f32",
                          gaio_dtype_name(src->dtype));
    if (src->layout == GAIO_LAYOUT_HWC && src->channels > 4)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "src is HWC with %d channels: warp_affine takes 1 to 4 (CHW takes any)", (int)src->channels);
    if (value && src->channels > 4)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "value holds 4 constants but src has %d channels: pass value NULL for zeros",
                          (int)src->channels);
    if (gaio__img_overlap(&ks, &kd)) return BAD("dst overlaps src in memory: the op does not work in place");
    if (!m) return BAD("m is NULL");
    for (int i = 0; i < 6; i++)
        if (!isfinite(m[i])) return BAD("m[%d] is %g: the matrix must be finite", i, m[i]);
    if (interp != GAIO_INTERP_NEAREST && interp != GAIO_INTERP_LINEAR) {
        if (interp >= GAIO_INTERP_NEAREST_EXACT && interp <= GAIO_INTERP_AREA)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "interp %d: warp_affine takes NEAREST or LINEAR",
                              (int)interp);
        return BAD("interp %d is not a gaio_interp", (int)interp);
    }
    if (flags & ~GAIO_WARP_INVERSE_MAP) return BAD("flags 0x%x: only GAIO_WARP_INVERSE_MAP (1) is defined", flags);
    double M[6] = {m[0], m[1], m[2], m[3], m[4], m[5]};
    if (!(flags & GAIO_WARP_INVERSE_MAP)) {
        /* cv::warpAffine's inversion, operation for operation (a singular matrix
         * gives zeros, as there). */
        double D = M[0] * M[4] - M[1] * M[3];
        D = D != 0 ? 1. / D : 0;
        double A11 = M[4] * D, A22 = M[0] * D;
        M[0] = A11;
        M[1] *= -D;
        M[3] *= -D;
        M[4] = A22;
        double b1 = -M[0] * M[2] - M[1] * M[5];
        double b2 = -M[3] * M[2] - M[4] * M[5];
        M[2] = b1;
        M[5] = b2;
        for (int i = 0; i < 6; i++)
            if (!isfinite(M[i])) return BAD("m cannot be inverted in double precision (its inverse overflows)");
    }
    float cv[4] = {0, 0, 0, 0};
    if (value)
        for (int c = 0; c < 4; c++) cv[c] = const_of(src->dtype, value[c]);
    int32_t ip = (int32_t)interp;
    gaio_arg args[13] = {GAIO_ARG(ks),   GAIO_ARG(kd),   GAIO_ARG(M[0]), GAIO_ARG(M[1]), GAIO_ARG(M[2]),
                         GAIO_ARG(M[3]), GAIO_ARG(M[4]), GAIO_ARG(M[5]), GAIO_ARG(ip),   GAIO_ARG(cv[0]),
                         GAIO_ARG(cv[1]), GAIO_ARG(cv[2]), GAIO_ARG(cv[3])};
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (gaio__img_on_cuda(stream)) {
        block = (gaio_dim3){32, 8, 1};
        grid = gaio__img_grid2d(kd.width, kd.height, (int64_t)kd.batch * kd.planes, 32, 8, 1, 4); /* 32 x 32 tiles */
    }
    gaio_buffer *held[2] = {src->buffer, dst->buffer};
    return gaio__img_launch(fn, stream, "gaio_img_warp_affine", grid, block, 0, args, 13, held, 2);
}
