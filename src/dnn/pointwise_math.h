/* The per-element arithmetic of the pointwise ops, shared by the host kernels
 * (src/dnn/cpu/pointwise.c, C) and the CUDA kernels (src/kernels/dnn/pointwise.cu,
 * C++), and the argument structs both take. Everything is computed in f32.
 *
 * Forms are chosen for relative accuracy over the whole range rather than for
 * matching a textbook line: 1 + erf(z) is erfc(-z) and 1 + tanh(u) is
 * 2 / (1 + exp(-2u)), which do not cancel to nothing for large negative inputs. */
#ifndef GAIO_DNN_POINTWISE_MATH_H
#define GAIO_DNN_POINTWISE_MATH_H

#include "dnn/ktensor.h"

#ifdef __CUDACC__
#define GAIO_PW_HD __host__ __device__ __forceinline__
#else
#include <math.h>
#define GAIO_PW_HD static inline
#endif

/* gaio_unary_op and gaio_binary_op values, for the C++ side. */
enum {
    GAIO_KPW_RELU = 0,
    GAIO_KPW_CLIP = 1,
    GAIO_KPW_SIGMOID = 2,
    GAIO_KPW_SILU = 3,
    GAIO_KPW_GELU = 4,
    GAIO_KPW_GELU_TANH = 5,
    GAIO_KPW_TANH = 6,
    GAIO_KPW_HARD_SIGMOID = 7,
    GAIO_KPW_HARD_SWISH = 8,
    GAIO_KPW_IDENTITY = 9
};
enum { GAIO_KPW_ADD = 0, GAIO_KPW_SUB = 1, GAIO_KPW_MUL = 2, GAIO_KPW_DIV = 3 };

/* A unary op with its parameters (GAIO_KPW_IDENTITY: none). */
typedef struct gaio_kpw_act {
    int32_t op;
    float alpha, beta;
} gaio_kpw_act;

GAIO_PW_HD float gaio_pw_unary(int32_t op, float x, float alpha, float beta) {
    switch (op) {
    case GAIO_KPW_RELU: return x > 0.0f ? x : 0.0f; /* NaN gives 0, as fmaxf(x, 0) does */
    case GAIO_KPW_CLIP: return fminf(fmaxf(x, alpha), beta);
    case GAIO_KPW_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case GAIO_KPW_SILU: return x / (1.0f + expf(-x));
    case GAIO_KPW_GELU: return 0.5f * x * erfcf(x * -0.70710678118654752f);
    case GAIO_KPW_GELU_TANH: {
        float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return x / (1.0f + expf(-2.0f * u));
    }
    case GAIO_KPW_TANH: return tanhf(x);
    case GAIO_KPW_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
    case GAIO_KPW_HARD_SWISH: return x * fmaxf(0.0f, fminf(1.0f, x * (1.0f / 6.0f) + 0.5f));
    default: return x;
    }
}

GAIO_PW_HD float gaio_pw_binary(int32_t op, float a, float b) {
    switch (op) {
    case GAIO_KPW_SUB: return a - b;
    case GAIO_KPW_MUL: return a * b;
    case GAIO_KPW_DIV: return a / b;
    default: return a + b;
    }
}

/* y = (x - mean) * (scale / sqrt(var + epsilon)) + bias. */
GAIO_PW_HD float gaio_pw_batch_norm(float x, float scale, float bias, float mean, float var, float epsilon) {
    return (x - mean) * (scale / sqrtf(var + epsilon)) + bias;
}

/* Element offsets (in elements) of flat index i of a tensor of `shape` (the output's,
 * last dimension fastest) in each of n tensors sharing that shape. */
GAIO_PW_HD void gaio_pw_offsets(const gaio_ktensor *const *t, int n, const int64_t *shape, int32_t ndim, int64_t i,
                                int64_t *off) {
    for (int k = 0; k < n; k++) off[k] = 0;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        int64_t q = i / shape[d], c = i - q * shape[d];
        i = q;
        for (int k = 0; k < n; k++) off[k] += c * t[k]->strides[d];
    }
}

#endif
