/* gaio_resize2d: checks its tensors and parameters, then makes one launch of the
 * built-in kernel gaio_dnn_resize2d that both backends have (host: dnn/cpu/resize.c,
 * CUDA: kernels/dnn/resize.cu); the sampling arithmetic is resize_math.h's. */
#include <math.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/object.h"
#include "core/op.h"
#include "dnn/dnn_internal.h"
#include "dnn/resize_math.h"
#include "gaio/buffer.h"

#define BLOCK 256

static bool on_cuda(const gaio_stream *s) { return s->ctx->be->kind == GAIO_DEVICE_CUDA; }

static gaio_status check_params(const char *fn, const gaio_resize_params *p) {
    if (p->mode < GAIO_RESIZE_NEAREST || p->mode > GAIO_RESIZE_CUBIC)
        return BAD("params->mode %d is not a gaio_resize_mode (0 nearest, 1 linear, 2 cubic)", (int)p->mode);
    if (p->coord < GAIO_RESIZE_HALF_PIXEL || p->coord > GAIO_RESIZE_HALF_PIXEL_SYMMETRIC)
        return BAD("params->coord %d is not a gaio_resize_coord (0 to 6)", (int)p->coord);
    if (p->mode == GAIO_RESIZE_NEAREST && (p->nearest < GAIO_RESIZE_ROUND_PREFER_FLOOR || p->nearest > GAIO_RESIZE_CEIL))
        return BAD("params->nearest %d is not a gaio_resize_nearest (0 to 3)", (int)p->nearest);
    for (int i = 0; i < 2; i++)
        if (!(p->scale[i] >= 0.0) || isinf(p->scale[i]))
            return BAD("params->scale[%d] is %g: a scale is finite and > 0 (or 0: y's size over x's)", i, p->scale[i]);
    if (p->mode == GAIO_RESIZE_CUBIC && !isfinite(p->cubic_coeff_a))
        return BAD("params->cubic_coeff_a is %g: it must be finite", (double)p->cubic_coeff_a);
    if (p->coord == GAIO_RESIZE_TF_CROP_AND_RESIZE)
        for (int i = 0; i < 4; i++)
            if (!isfinite(p->roi[i])) return BAD("params->roi[%d] is %g: it must be finite", i, (double)p->roi[i]);
    return GAIO_OK;
}

gaio_status gaio_resize2d(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y,
                          const gaio_resize_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    gaio__ktensor_view ox, oy;
    gaio_status st = gaio__ktensor_view_resolve(fn, "x", "resizes", x, stream, &ox);
    if (st != GAIO_OK) return st;
    if ((st = gaio__ktensor_view_resolve(fn, "y", "resizes", y, stream, &oy)) != GAIO_OK) return st;
    if (ox.t.ndim != 4 || oy.t.ndim != 4)
        return BAD("x has %d dimensions and y %d: resize2d takes [N, C, H, W] tensors", (int)ox.t.ndim, (int)oy.t.ndim);
    if (ox.t.dtype != oy.t.dtype)
        return BAD("y is %s but x is %s: they take one dtype", gaio_dtype_name(oy.t.dtype), gaio_dtype_name(ox.t.dtype));
    if (oy.t.shape[0] != ox.t.shape[0] || oy.t.shape[1] != ox.t.shape[1])
        return BAD("y is [%lld, %lld, ...] but x is [%lld, %lld, ...]: N and C must match", (long long)oy.t.shape[0],
                   (long long)oy.t.shape[1], (long long)ox.t.shape[0], (long long)ox.t.shape[1]);
    if ((st = check_params(fn, params)) != GAIO_OK) return st;
    if (!gaio__ktensor_distinct(&oy.k))
        return BAD("y's strides make some of its elements share memory: an output needs each element once");
    if (gaio__ktensor_view_overlap(&ox, &oy)) return BAD("y overlaps x: resize2d cannot run in place");
    gaio_kresize k;
    memset(&k, 0, sizeof k);
    k.mode = (int32_t)params->mode, k.coord = (int32_t)params->coord, k.nearest = (int32_t)params->nearest;
    k.exclude_outside = params->exclude_outside != 0 && params->mode != GAIO_RESIZE_NEAREST;
    k.cubic_a = params->cubic_coeff_a, k.extrapolation = params->extrapolation_value;
    for (int i = 0; i < 4; i++) k.roi[i] = params->roi[i];
    for (int i = 0; i < 2; i++) {
        const double in = (double)ox.t.shape[2 + i], out = (double)oy.t.shape[2 + i];
        k.scale[i] = params->scale[i] > 0.0 ? params->scale[i] : out / in;
        k.length[i] = k.scale[i] * in;
        /* ONNX's output length is this rounded (floored from scales): at least 0.5. */
        if (!isfinite(k.length[i]) || !(k.length[i] >= 0.5))
            return BAD("params->scale[%d] %g times x's %s %lld is %g: it must be finite and at least 0.5", i, k.scale[i],
                       i ? "width" : "height", (long long)ox.t.shape[2 + i], k.length[i]);
    }
    k.antialias = params->antialias != 0 && params->mode != GAIO_RESIZE_NEAREST;
    for (int i = 0; k.antialias && i < 2; i++) {
        const int64_t taps = gaio_kresize_aa_count(k.mode, k.scale[i]);
        if (taps > GAIO_KRESIZE_MAX_TAPS)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "antialias at a %s scale of %g takes %lld taps: gaio's "
                              "kernels take up to %d (a scale of 1/%d for linear, 1/%d for cubic)",
                              i ? "width" : "height", k.scale[i], (long long)taps, GAIO_KRESIZE_MAX_TAPS,
                              GAIO_KRESIZE_MAX_TAPS / 2, GAIO_KRESIZE_MAX_TAPS / 4);
    }
    k.c_inner = oy.k.strides[1] < oy.k.strides[3];
    const int64_t total = oy.t.shape[0] * oy.t.shape[1] * oy.t.shape[2] * oy.t.shape[3];
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (on_cuda(stream)) {
        int64_t b = (total + BLOCK - 1) / BLOCK;
        grid.x = (uint32_t)(b < GAIO_DNN_MAX_BLOCKS ? b : GAIO_DNN_MAX_BLOCKS);
        block.x = BLOCK;
    }
    gaio_arg args[3] = {GAIO_ARG(ox.k), GAIO_ARG(oy.k), GAIO_ARG(k)};
    gaio_buffer *held[2] = {x->buffer, y->buffer};
    gaio_kernel *kern;
    st = gaio__kernel_builtin("gaio_dnn_resize2d", &kern);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, stream, kern, grid, block, 0, args, 3, held, 2);
    gaio__kernel_unref(kern);
    return st;
}
