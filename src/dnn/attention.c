/* gaio_attention (gaio/dnn.h): y = softmax(scale * q k^T + bias) v over the last two
 * dimensions, one kernel (dnn/attention_math.h; CUDA in kernels/dnn/attention.cu, host twin in
 * dnn/cpu/attention.c). The model planner runs attention through it where the exported
 * graph's MatMul -> [Add] -> Softmax -> MatMul fits (model/plan.c attention_of). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/object.h"
#include "dnn/attention_math.h"
#include "dnn/dnn_internal.h"
#include "gaio/buffer.h"
#include "gaio/dnn.h"

#define BAD(...) gaio__fail(GAIO_ERR_INVALID_ARG, fn, __VA_ARGS__)
#define UNSUPPORTED(...) gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, __VA_ARGS__)

/* t's [B0, B1, rows, cols] view: its leading dimensions (at most 2) in front, 1s added. */
static bool as_4d(const gaio__ktensor_view *v, gaio_ktensor *k) {
    const gaio_ktensor *s = &v->k;
    if (s->ndim < 2 || s->ndim > 4) return false;
    memset(k, 0, sizeof *k);
    k->ptr = s->ptr, k->dtype = s->dtype, k->ndim = 4;
    const int32_t pad = 4 - s->ndim;
    for (int32_t d = 0; d < 4; d++) {
        k->shape[d] = d < pad ? 1 : s->shape[d - pad];
        k->strides[d] = d < pad ? 0 : s->strides[d - pad];
    }
    return true;
}

gaio_status gaio_attention(gaio_stream *stream, const gaio_tensor *q, const gaio_tensor *k, const gaio_tensor *v,
                           const gaio_tensor *bias, const gaio_tensor *y, const gaio_attention_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    const float alpha = params->scale;
    if (!isfinite(alpha)) return BAD("params->scale is %g: it must be finite", (double)alpha);
    if (!q || !k || !v || !y) return BAD("q, k, v and y are required (bias may be NULL)");
    const char *what = "attention operands";
    gaio__ktensor_view vq, vk, vv, vb, vy;
    gaio_status st;
    if ((st = gaio__ktensor_view_resolve(fn, "q", what, q, stream, &vq)) != GAIO_OK ||
        (st = gaio__ktensor_view_resolve(fn, "k", what, k, stream, &vk)) != GAIO_OK ||
        (st = gaio__ktensor_view_resolve(fn, "v", what, v, stream, &vv)) != GAIO_OK ||
        (st = gaio__ktensor_view_resolve(fn, "y", what, y, stream, &vy)) != GAIO_OK ||
        (bias && (st = gaio__ktensor_view_resolve(fn, "bias", what, bias, stream, &vb)) != GAIO_OK))
        return st;
    gaio_ktensor kq, kk, kv, ky, kb;
    if (!as_4d(&vq, &kq) || !as_4d(&vk, &kk) || !as_4d(&vv, &kv) || !as_4d(&vy, &ky))
        return BAD("q, k, v and y must have 2 to 4 dimensions ([..., tokens, head size])");
    const int64_t L = kq.shape[2], Lk = kk.shape[2], D = kq.shape[3];
    for (int32_t d = 0; d < 2; d++)
        if (kk.shape[d] != kq.shape[d] || kv.shape[d] != kq.shape[d] || ky.shape[d] != kq.shape[d])
            return BAD("q, k, v and y must have the same leading dimensions");
    if (kk.shape[3] != D || kv.shape[3] != D || kv.shape[2] != Lk || ky.shape[2] != L || ky.shape[3] != D)
        return BAD("shapes: q [..., %lld, %lld] needs k and v [..., Lk, %lld] and y [..., %lld, %lld]", (long long)L,
                   (long long)D, (long long)D, (long long)L, (long long)D);
    if (kq.dtype != ky.dtype || kk.dtype != ky.dtype || kv.dtype != ky.dtype)
        return BAD("q, k, v and y must have one dtype");
    if (kq.strides[3] != 1 || kk.strides[3] != 1 || kv.strides[3] != 1 || ky.strides[3] != 1)
        return BAD("the last dimension of q, k, v and y must be packed (stride 1)");
    memset(&kb, 0, sizeof kb);
    if (bias) {
        /* NumPy broadcasting against the scores' [B0, B1, L, Lk]: strides 0 where 1; a
         * leading dimension that divides the scores' repeats (the kernels read element
         * b % shape there: Swin's window mask over [batch * windows]). */
        if (vb.k.ndim > 4) return BAD("bias has %d dimensions: at most 4", (int)vb.k.ndim);
        const int64_t want[4] = {kq.shape[0], kq.shape[1], L, Lk};
        kb.ptr = vb.k.ptr, kb.dtype = vb.k.dtype, kb.ndim = 4;
        for (int32_t d = 0; d < 4; d++) {
            int32_t s = d - (4 - vb.k.ndim);
            int64_t n = s >= 0 ? vb.k.shape[s] : 1;
            if (n != 1 && n != want[d] && !(d < 2 && want[d] % n == 0))
                return BAD("bias does not broadcast to the scores' [B0, B1, L, Lk] (nor repeat along B0 or B1)");
            kb.shape[d] = d < 2 ? n : want[d], kb.strides[d] = n == 1 ? 0 : vb.k.strides[s];
        }
    }
    if (gaio__ktensor_view_overlap(&vy, &vq) || gaio__ktensor_view_overlap(&vy, &vk) ||
        gaio__ktensor_view_overlap(&vy, &vv) || (bias && gaio__ktensor_view_overlap(&vy, &vb)))
        return BAD("y overlaps an input: attention cannot work in place");
    if (L == 0 || Lk == 0 || kq.shape[0] * kq.shape[1] == 0) return GAIO_OK;
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (stream->ctx->be->kind == GAIO_DEVICE_CUDA) {
        /* The tensor-core kernel's shapes (kernels/dnn/attention.cu). */
        gaio_device_props props;
        if ((st = gaio_device_get_props(stream->ctx->device, &props)) != GAIO_OK) return st;
        if (props.compute_major < 8)
            return UNSUPPORTED("attention on a GPU needs compute capability 8.0 or newer (cp.async, f16 mma); "
                               "device %d is %d.%d", stream->ctx->device, props.compute_major, props.compute_minor);
        if (ky.dtype != GAIO_KT_F16 || (D != 32 && D != 64))
            return UNSUPPORTED("attention on a GPU takes f16 with a head size of 32 or 64 (got %s, %lld)",
                               gaio_dtype_name((gaio_dtype)ky.dtype), (long long)D);
        const gaio_ktensor *ts[4] = {&kq, &kk, &kv, &ky};
        for (int i = 0; i < 4; i++)
            if (ts[i]->ptr % 16 != 0 || ts[i]->strides[0] % 8 != 0 || ts[i]->strides[1] % 8 != 0 ||
                ts[i]->strides[2] % 8 != 0)
                return UNSUPPORTED("attention on a GPU needs 16-byte aligned rows of q, k, v and y");
        if (kq.shape[0] > 65535 || kq.shape[1] > 65535)
            return UNSUPPORTED("attention on a GPU takes at most 65535 x 65535 leading rows");
        grid.x = (uint32_t)((L + 63) / 64), grid.y = (uint32_t)kq.shape[1], grid.z = (uint32_t)kq.shape[0];
        block.x = 128;
    }
    gaio_kattn p = {alpha, bias != NULL};
    gaio_arg args[6] = {GAIO_ARG(kq), GAIO_ARG(kk), GAIO_ARG(kv), GAIO_ARG(kb), GAIO_ARG(ky), GAIO_ARG(p)};
    gaio_buffer *held[5] = {vq.t.buffer, vk.t.buffer, vv.t.buffer, vy.t.buffer};
    size_t nheld = 4;
    if (bias) held[nheld++] = vb.t.buffer;
    gaio_kernel *kern;
    if ((st = gaio__kernel_builtin("gaio_dnn_attention", &kern)) != GAIO_OK)
        return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, stream, kern, grid, block, 0, args, 6, held, nheld);
    gaio__kernel_unref(kern);
    return st;
}
