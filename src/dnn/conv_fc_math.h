/* What gaio's small fully-connected convolution (a 1x1 window on 1x1 maps: the
 * squeeze-and-excitation blocks' two convolutions) shares between src/dnn/conv.c, its
 * host kernel (src/dnn/cpu/conv_fc.c) and its CUDA kernel (src/kernels/dnn/conv_fc.cu):
 * the argument struct and the order of one output's sum, so that both backends give the
 * same bits.
 *
 * y[n, k] = act(sum_c x[n, c] * w[k, c] + bias[k] + residual[n, k]), f32 accumulation
 * (fused multiply-adds), in one of three orders that conv.c picks from the shapes:
 * - GAIO_FC_THREAD (C <= GAIO_FC_THREAD_MAX: the excitation's expanding convolution,
 *   thousands of outputs of a few dozen terms): a thread an output, c in order.
 * - GAIO_FC_WARP8 (larger C, f16 rows of 8s in place for 16-byte loads): a warp an
 *   output channel and GAIO_FC_NB samples; lane l sums c = 8 (l + 32 j) + e, j then e
 *   ascending, then the lanes' sums meet in a butterfly (xor 16, 8, 4, 2, 1).
 * - GAIO_FC_WARP (the rest): lane l sums c = l, l + 32, ..., then the butterfly. */
#ifndef GAIO_DNN_CONV_FC_MATH_H
#define GAIO_DNN_CONV_FC_MATH_H

#include <stdint.h>

#include "dnn/pointwise_math.h"
#include "dnn/reduce_math.h"

#define GAIO_FC_LANES 32
#define GAIO_FC_NB 4           /* samples a WARP8 warp sums at once, reading its weights once */
#define GAIO_FC_THREAD_MAX 128 /* the most terms a THREAD output sums */

enum { GAIO_FC_WARP = 0, GAIO_FC_THREAD = 1, GAIO_FC_WARP8 = 2 };

typedef struct gaio_kfc {
    int32_t has_bias, has_res;
    gaio_kpw_act act;
    int32_t mode; /* GAIO_FC_* */
    int32_t vec;  /* x's and w's rows are f16, contiguous, 16-byte aligned, C a multiple of 8 */
} gaio_kfc;

/* The order of the sums, from the shapes (src/dnn/conv.c and the host convolution
 * without oneDNN both ask, so that they agree): a thread an output where the sums are
 * short, else a warp, reading 8 halves a load where the rows allow. */
GAIO_HD void gaio_fc_pick(const gaio_ktensor *x, const gaio_ktensor *w, gaio_kfc *p) {
    const int64_t C = x->shape[1];
    p->vec = x->dtype == GAIO_KT_F16 && w->dtype == GAIO_KT_F16 && C % 8 == 0 && x->strides[1] == 1 &&
             w->strides[1] == 1 && x->strides[0] % 8 == 0 && w->strides[0] % 8 == 0 && x->ptr % 16 == 0 &&
             w->ptr % 16 == 0;
    p->mode = C <= GAIO_FC_THREAD_MAX ? GAIO_FC_THREAD : p->vec ? GAIO_FC_WARP8 : GAIO_FC_WARP;
}

/* GAIO_FC_THREAD: output (n, k)'s whole sum; x and w as [N, C, 1, 1] and [K, C, 1, 1]. */
GAIO_HD float gaio_fc_serial(const gaio_ktensor *x, const gaio_ktensor *w, int64_t n, int64_t k) {
    const int64_t C = x->shape[1], xb = n * x->strides[0], wb = k * w->strides[0];
    float acc = 0.0f;
    for (int64_t c = 0; c < C; c++)
        acc = fmaf(gaio_kt_get(x, xb + c * x->strides[1]), gaio_kt_get(w, wb + c * w->strides[1]), acc);
    return acc;
}

/* GAIO_FC_WARP: lane l's partial sum of output (n, k). */
GAIO_HD float gaio_fc_lane(const gaio_ktensor *x, const gaio_ktensor *w, int64_t n, int64_t k, int32_t l) {
    const int64_t C = x->shape[1], xb = n * x->strides[0], wb = k * w->strides[0];
    float acc = 0.0f;
    for (int64_t c = l; c < C; c += GAIO_FC_LANES)
        acc = fmaf(gaio_kt_get(x, xb + c * x->strides[1]), gaio_kt_get(w, wb + c * w->strides[1]), acc);
    return acc;
}

/* GAIO_FC_WARP8: lane l's partial sum of output (n, k), in the CUDA kernel's order
 * (which reads each run of 8 with one load). */
GAIO_HD float gaio_fc_lane8(const gaio_ktensor *x, const gaio_ktensor *w, int64_t n, int64_t k, int32_t l) {
    const int64_t C = x->shape[1], xb = n * x->strides[0], wb = k * w->strides[0];
    float acc = 0.0f;
    for (int64_t c0 = 8 * (int64_t)l; c0 < C; c0 += 8 * GAIO_FC_LANES)
        for (int64_t c = c0; c < c0 + 8; c++)
            acc = fmaf(gaio_kt_get(x, xb + c * x->strides[1]), gaio_kt_get(w, wb + c * w->strides[1]), acc);
    return acc;
}

/* The epilogue, in gaio_dw_epilogue's order: bias, residual, activation. */
GAIO_HD float gaio_fc_epilogue(const gaio_kfc *p, float acc, float bias, float res) {
    if (p->has_bias) acc += bias;
    if (p->has_res) acc += res;
    return gaio_pw_unary(p->act.op, acc, p->act.alpha, p->act.beta);
}

#endif
