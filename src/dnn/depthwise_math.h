/* What gaio's depthwise convolution (groups == C == K: one filter per channel) shares
 * between src/dnn/conv.c, its host kernel (src/dnn/cpu/depthwise.c) and its CUDA
 * kernel (src/kernels/dnn/depthwise.cu): the argument struct and the arithmetic of
 * one output element, so that both backends sum the same taps in the same order.
 *
 * y[n,k,oh,ow] = act(sum_{r,s} x[n, k, oh*sh - pt + r*dh, ow*sw - pl + s*dw] * w[k,0,r,s]
 *                    + bias[k] + residual[n,k,oh,ow]), zero padding, f32 accumulation. */
#ifndef GAIO_DNN_DEPTHWISE_MATH_H
#define GAIO_DNN_DEPTHWISE_MATH_H

#include <stdint.h>

#include "dnn/pointwise_math.h"
#include "dnn/reduce_math.h"

/* A checked depthwise convolution (conv.c): strides and dilations resolved to >= 1. */
typedef struct gaio_kdw {
    int32_t sh, sw, dh, dw;
    int32_t pt, pl;   /* output (0, 0)'s window starts at (-pt, -pl) */
    int32_t has_bias; /* bias (a ktensor of [K]) is read */
    int32_t has_res;  /* residual (a ktensor of y's shape) is read; it may be y itself */
    int32_t c_inner;  /* x and y have channels innermost (NHWC): number outputs channel-fastest */
    int32_t narrow;   /* outputs < 2^31 and every offset and window coordinate fits in int32: 32-bit
                         index math. Decided on the host: a kernel that loops over a ktensor's
                         dimensions indexes its parameter dynamically, and the compiler then copies
                         the parameter to local memory in every thread. */
    gaio_kpw_act act;
} gaio_kdw;

/* The bias, residual and activation after the window's sum: in this order on both
 * backends, as cuDNN's fused epilogue applies them. */
GAIO_HD float gaio_dw_epilogue(const gaio_kdw *p, float acc, float bias, float res) {
    if (p->has_bias) acc += bias;
    if (p->has_res) acc += res;
    return gaio_pw_unary(p->act.op, acc, p->act.alpha, p->act.beta);
}

/* The window sum of output (n, k, oh, ow), rows then columns, taps outside x skipped
 * (zero padding). Host form, through gaio_kt_get; the CUDA kernel has its own loads
 * but the same loop. */
GAIO_HD float gaio_dw_sum(const gaio_ktensor *x, const gaio_ktensor *w, const gaio_kdw *p, int64_t n, int64_t k,
                          int64_t oh, int64_t ow) {
    const int64_t H = x->shape[2], W = x->shape[3], R = w->shape[2], S = w->shape[3];
    const int64_t h0 = oh * p->sh - p->pt, w0 = ow * p->sw - p->pl;
    const int64_t xb = n * x->strides[0] + k * x->strides[1], wb = k * w->strides[0];
    float acc = 0.0f;
    for (int64_t r = 0; r < R; r++) {
        const int64_t h = h0 + r * p->dh;
        if (h < 0 || h >= H) continue;
        for (int64_t s = 0; s < S; s++) {
            const int64_t c = w0 + s * p->dw;
            if (c < 0 || c >= W) continue;
            acc += gaio_kt_get(x, xb + h * x->strides[2] + c * x->strides[3]) *
                   gaio_kt_get(w, wb + r * w->strides[2] + s * w->strides[3]);
        }
    }
    return acc;
}

#endif
