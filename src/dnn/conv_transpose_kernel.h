/* gaio's own transposed convolution kernel, gaio_dnn_conv_transpose: what
 * src/dnn/conv_transpose.c, its CUDA kernel (src/kernels/dnn/conv_transpose.cu) and its
 * host twin (src/dnn/cpu/conv_transpose_cpu.c) share: the argument struct and the
 * arithmetic of one output element, so that both backends sum the same taps in the
 * same order. A GPU runs it where cuDNN has no engine for a problem, or where y has
 * rows no tap reaches and gaps between its elements (cuDNN's path fills y's span
 * first), or when GAIO_DNN_CONVT=gaio asks for it.
 *
 * y[n, k, oh, ow] = bias[k] + sum over the taps (r, s) with oh + pt - r dh = ih sh and
 *   ow + pl - s dw = iw sw (ih, iw inside x) and the channels c of k's group of
 *   x[n, c, ih, iw] w[c, k % (K / groups), r, s], accumulated in f32. */
#ifndef GAIO_DNN_CONV_TRANSPOSE_KERNEL_H
#define GAIO_DNN_CONV_TRANSPOSE_KERNEL_H

#include <stdint.h>

#include "dnn/reduce_math.h"

typedef struct gaio_kconvt {
    int32_t sh, sw, dh, dw; /* >= 1 */
    int32_t pt, pl;         /* may be negative */
    int32_t groups;         /* >= 1 */
    int32_t has_bias;       /* bias (a ktensor of [K]) is read */
} gaio_kconvt;

/* Output (n, k, oh, ow): kernel rows, then columns, then the group's channels. */
GAIO_HD float gaio_convt_at(const gaio_ktensor *x, const gaio_ktensor *w, const gaio_ktensor *b,
                            const gaio_kconvt *p, int64_t n, int64_t k, int64_t oh, int64_t ow) {
    const int64_t H = x->shape[2], W = x->shape[3], R = w->shape[2], S = w->shape[3];
    const int64_t cg = w->shape[0] / p->groups, kg = w->shape[1], g = k / kg, ko = k % kg;
    const int64_t xb = n * x->strides[0] + g * cg * x->strides[1];
    const int64_t wb = g * cg * w->strides[0] + ko * w->strides[1];
    float acc = p->has_bias ? gaio_kt_get(b, k * b->strides[0]) : 0.0f;
    for (int64_t r = 0; r < R; r++) {
        const int64_t th = oh + p->pt - r * p->dh;
        if (th < 0) break; /* later rows reach further back */
        if (th % p->sh) continue;
        const int64_t ih = th / p->sh;
        if (ih >= H) continue;
        for (int64_t s = 0; s < S; s++) {
            const int64_t tw = ow + p->pl - s * p->dw;
            if (tw < 0) break;
            if (tw % p->sw) continue;
            const int64_t iw = tw / p->sw;
            if (iw >= W) continue;
            const int64_t xo = xb + ih * x->strides[2] + iw * x->strides[3];
            const int64_t wo = wb + r * w->strides[2] + s * w->strides[3];
            for (int64_t c = 0; c < cg; c++)
                acc += gaio_kt_get(x, xo + c * x->strides[1]) * gaio_kt_get(w, wo + c * w->strides[0]);
        }
    }
    return acc;
}

#endif
