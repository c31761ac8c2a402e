/* What gaio's fused attention (y = softmax(alpha * q k^T + bias) v over the last two
 * dimensions, src/dnn/attention.c) shares between its host kernel
 * (src/dnn/cpu/attention.c) and its CUDA kernel (src/kernels/dnn/attention.cu): the
 * argument struct. q [B0, B1, L, D], k and v [B0, B1, Lk, D], y [B0, B1, L, D] and the
 * bias [B0, B1, L, Lk] arrive as gaio_ktensors (the bias's strides 0 where it
 * broadcasts); the last dimension of q, k, v and y is packed. */
#ifndef GAIO_DNN_ATTENTION_MATH_H
#define GAIO_DNN_ATTENTION_MATH_H

#include <stdint.h>

#include "dnn/ktensor.h"

typedef struct gaio_kattn {
    float alpha;      /* the scores' scale */
    int32_t has_bias; /* the bias tensor is present */
} gaio_kattn;

#endif
