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
    GAIO_KPW_IDENTITY = 9,
    GAIO_KPW_SQRT = 10,
    GAIO_KPW_EXP = 11,
    GAIO_KPW_LOG = 12,
    GAIO_KPW_ABS = 13,
    GAIO_KPW_NEG = 14,
    GAIO_KPW_RECIPROCAL = 15,
    GAIO_KPW_FLOOR = 16,
    GAIO_KPW_CEIL = 17,
    GAIO_KPW_ERF = 18,
    GAIO_KPW_SOFTPLUS = 19,
    GAIO_KPW_SIN = 20,
    GAIO_KPW_COS = 21,
    GAIO_KPW_AFFINE = 22,
    GAIO_KPW_UNARY_LAST = GAIO_KPW_AFFINE
};
enum {
    GAIO_KPW_ADD = 0,
    GAIO_KPW_SUB = 1,
    GAIO_KPW_MUL = 2,
    GAIO_KPW_DIV = 3,
    GAIO_KPW_POW = 4,
    GAIO_KPW_MIN = 5,
    GAIO_KPW_MAX = 6,
    GAIO_KPW_FMOD = 7,
    GAIO_KPW_BINARY_LAST = GAIO_KPW_FMOD
};

/* A unary op with its parameters (GAIO_KPW_IDENTITY: none). */
typedef struct gaio_kpw_act {
    int32_t op;
    float alpha, beta;
} gaio_kpw_act;

/* GELU, 0.5 x erfc(-x / sqrt 2). On a GPU through Numerical Recipes' erfcc (relative
 * error under 1.2e-7 in exact arithmetic; about 1e-6 here with the SFU's reciprocal
 * and exponential): CUDA's erfcf costs about 40 instructions an element, which made
 * the exact GELU passes of ViT-B/16 and ConvNeXt-T (f16, H200) compute-bound at twice
 * their memory time. The host keeps erfcf. */
GAIO_PW_HD float gaio_pw_gelu(float x) {
#ifdef __CUDA_ARCH__
    const float u = x * -0.70710678118654752f, z = fabsf(u);
    const float t = __fdividef(1.0f, 1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = fmaf(p, t, -0.82215223f);
    p = fmaf(p, t, 1.48851587f);
    p = fmaf(p, t, -1.13520398f);
    p = fmaf(p, t, 0.27886807f);
    p = fmaf(p, t, -0.18628806f);
    p = fmaf(p, t, 0.09678418f);
    p = fmaf(p, t, 0.37409196f);
    p = fmaf(p, t, 1.00002368f);
    p = fmaf(p, t, -1.26551223f);
    const float e = t * __expf(fmaf(-z, z, p));
    return 0.5f * x * (u >= 0.0f ? e : 2.0f - e);
#else
    return 0.5f * x * erfcf(x * -0.70710678118654752f);
#endif
}

/* num / (1 + e^-x): Sigmoid (num 1) and SiLU (num x). On a GPU by the SFU's exponential
 * and reciprocal (a few ulp: about 1e-6 relative where the result is not tiny): expf and
 * an IEEE division made the SiLU passes after the YOLO-style detector's convolutions
 * (f16, H200) compute-bound at over four times their memory time. The host keeps them. */
GAIO_PW_HD float gaio_pw_sigmoid_times(float num, float x) {
#ifdef __CUDA_ARCH__
    return __fdividef(num, 1.0f + __expf(-x));
#else
    return num / (1.0f + expf(-x));
#endif
}

GAIO_PW_HD float gaio_pw_unary(int32_t op, float x, float alpha, float beta) {
    switch (op) {
    case GAIO_KPW_RELU: return x > 0.0f ? x : 0.0f; /* NaN gives 0, as fmaxf(x, 0) does */
    /* NaN stays NaN through the clamps (ONNX's np.clip, PyTorch): fminf / fmaxf would
     * drop it, and nvcc turns a clamp to [0, 1] into a saturation that makes it 0. */
    case GAIO_KPW_CLIP: return x != x ? x : fminf(fmaxf(x, alpha), beta);
    case GAIO_KPW_SIGMOID: return gaio_pw_sigmoid_times(1.0f, x);
    case GAIO_KPW_SILU: return gaio_pw_sigmoid_times(x, x);
    case GAIO_KPW_GELU: return gaio_pw_gelu(x);
    case GAIO_KPW_GELU_TANH: {
        float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return x / (1.0f + expf(-2.0f * u));
    }
    case GAIO_KPW_TANH: return tanhf(x);
    case GAIO_KPW_HARD_SIGMOID: return x != x ? x : fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
    case GAIO_KPW_HARD_SWISH: return x != x ? x : x * fmaxf(0.0f, fminf(1.0f, x * (1.0f / 6.0f) + 0.5f));
    case GAIO_KPW_SQRT: return sqrtf(x);
    case GAIO_KPW_EXP: return expf(x);
    case GAIO_KPW_LOG: return logf(x);
    case GAIO_KPW_ABS: return fabsf(x);
    case GAIO_KPW_NEG: return -x;
    case GAIO_KPW_RECIPROCAL: return 1.0f / x;
    case GAIO_KPW_FLOOR: return floorf(x);
    case GAIO_KPW_CEIL: return ceilf(x);
    case GAIO_KPW_ERF: return erff(x);
    /* log(1 + e^x) without overflow for large x or loss for very negative x. */
    case GAIO_KPW_SOFTPLUS: return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
    case GAIO_KPW_SIN: return sinf(x);
    case GAIO_KPW_COS: return cosf(x);
    case GAIO_KPW_AFFINE: return alpha * x + beta;
    default: return x;
    }
}

GAIO_PW_HD float gaio_pw_binary(int32_t op, float a, float b) {
    switch (op) {
    case GAIO_KPW_SUB: return a - b;
    case GAIO_KPW_MUL: return a * b;
    case GAIO_KPW_DIV: return a / b;
    case GAIO_KPW_POW: return powf(a, b);
    /* NaN in either gives NaN (NumPy's minimum / maximum; fminf / fmaxf would drop it). */
    case GAIO_KPW_MIN: return (a < b || a != a) ? a : b;
    case GAIO_KPW_MAX: return (a > b || a != a) ? a : b;
    case GAIO_KPW_FMOD: return fmodf(a, b);
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
    GAIO_KT_UNROLL
    for (int32_t d = GAIO_KT_MAX_NDIM - 1; d >= 0; d--) {
        if (d >= ndim) continue;
        int64_t q = i / shape[d], c = i - q * shape[d];
        i = q;
        for (int k = 0; k < n; k++) off[k] += c * t[k]->strides[d];
    }
}

#endif
