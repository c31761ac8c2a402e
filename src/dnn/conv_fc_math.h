/* What gaio's small fully-connected convolution (a 1x1 window on 1x1 maps: the
 * squeeze-and-excitation blocks' two convolutions) shares between src/dnn/conv.c, its
 * host kernel (src/dnn/cpu/conv_fc.c) and its CUDA kernel (src/kernels/dnn/conv_fc.cu):
 * the argument struct and the order of one output's sum, so that both backends give the
 * same bits.
 *
 * y[n, k] = act(sum_c x[n, c] * w[k, c] + bias[k] + residual[n, k]), f32 accumulation.
 * The CUDA kernel gives each output a warp: lane l sums c = l, l + 32, ... in order
 * (fused multiply-adds), then the lanes' sums meet in a butterfly (xor 16, 8, 4, 2, 1). */
#ifndef GAIO_DNN_CONV_FC_MATH_H
#define GAIO_DNN_CONV_FC_MATH_H

#include <stdint.h>

#include "dnn/pointwise_math.h"
#include "dnn/reduce_math.h"

#define GAIO_FC_LANES 32

typedef struct gaio_kfc {
    int32_t has_bias, has_res;
    gaio_kpw_act act;
} gaio_kfc;

/* Lane l's partial sum of output (n, k): x and w as [N, C, 1, 1] and [K, C, 1, 1]. */
GAIO_HD float gaio_fc_lane(const gaio_ktensor *x, const gaio_ktensor *w, int64_t n, int64_t k, int32_t l) {
    const int64_t C = x->shape[1], xb = n * x->strides[0], wb = k * w->strides[0];
    float acc = 0.0f;
    for (int64_t c = l; c < C; c += GAIO_FC_LANES)
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
