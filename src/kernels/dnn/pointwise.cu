// CUDA kernels of the pointwise ops: gaio_unary, gaio_binary, gaio_cast (the unary
// kernel with the identity op) and gaio_batch_norm. Host twins in
// src/dnn/cpu/pointwise.c; the per-element arithmetic is dnn/pointwise_math.h's.
//
// Every tensor arrives over the output's shape, simplified by src/dnn/pointwise.c:
// size-1 dimensions dropped, the rest ordered by the output's strides and merged
// where all tensors allow it, so a packed op is one dimension and each thread's
// offsets are i * stride. Otherwise a thread decodes its flat index into coordinates.
// Grid-stride loops over the output's elements, 64-bit indices throughout.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/pointwise_math.h"

namespace {

__device__ __forceinline__ float load(const gaio_ktensor &t, int64_t off) {
    if (t.dtype == GAIO_KT_F16)
        return __half2float(__ushort_as_half(((const uint16_t *)(uintptr_t)t.ptr)[off]));
    return ((const float *)(uintptr_t)t.ptr)[off];
}

__device__ __forceinline__ void store(const gaio_ktensor &t, int64_t off, float v) {
    if (t.dtype == GAIO_KT_F16)
        ((uint16_t *)(uintptr_t)t.ptr)[off] = __half_as_ushort(__float2half_rn(v));
    else
        ((float *)(uintptr_t)t.ptr)[off] = v;
}

__device__ __forceinline__ int64_t count(const gaio_ktensor &t) {
    int64_t n = 1;
    for (int32_t d = 0; d < t.ndim; d++) n *= t.shape[d];
    return n;
}

__device__ __forceinline__ int64_t first() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t step() { return (int64_t)gridDim.x * blockDim.x; }

} // namespace

extern "C" __global__ void gaio_dnn_unary(gaio_ktensor x, gaio_ktensor y, gaio_kpw_act act) {
    const int64_t n = count(y);
    const gaio_ktensor *ts[2] = {&y, &x};
    for (int64_t i = first(); i < n; i += step()) {
        int64_t off[2];
        if (y.ndim == 1) {
            off[0] = i * y.strides[0];
            off[1] = i * x.strides[0];
        } else {
            gaio_pw_offsets(ts, 2, y.shape, y.ndim, i, off);
        }
        store(y, off[0], gaio_pw_unary(act.op, load(x, off[1]), act.alpha, act.beta));
    }
}

extern "C" __global__ void gaio_dnn_binary(gaio_ktensor a, gaio_ktensor b, gaio_ktensor y, int32_t op,
                                           gaio_kpw_act act) {
    const int64_t n = count(y);
    const gaio_ktensor *ts[3] = {&y, &a, &b};
    for (int64_t i = first(); i < n; i += step()) {
        int64_t off[3];
        if (y.ndim == 1) {
            off[0] = i * y.strides[0];
            off[1] = i * a.strides[0];
            off[2] = i * b.strides[0];
        } else {
            gaio_pw_offsets(ts, 3, y.shape, y.ndim, i, off);
        }
        float v = gaio_pw_binary(op, load(a, off[1]), load(b, off[2]));
        store(y, off[0], gaio_pw_unary(act.op, v, act.alpha, act.beta));
    }
}

extern "C" __global__ void gaio_dnn_batch_norm(gaio_ktensor x, gaio_ktensor y, gaio_ktensor scale, gaio_ktensor bias,
                                               gaio_ktensor mean, gaio_ktensor var, float epsilon) {
    const int64_t n = count(y);
    const gaio_ktensor *ts[6] = {&y, &x, &scale, &bias, &mean, &var};
    for (int64_t i = first(); i < n; i += step()) {
        int64_t off[6];
        gaio_pw_offsets(ts, 6, y.shape, y.ndim, i, off);
        float v = gaio_pw_batch_norm(load(x, off[1]), load(scale, off[2]), load(bias, off[3]), load(mean, off[4]),
                                     load(var, off[5]), epsilon);
        store(y, off[0], v);
    }
}
