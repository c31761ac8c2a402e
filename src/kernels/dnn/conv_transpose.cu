// CUDA kernel of gaio's own transposed convolution (dnn/conv_transpose_kernel.h says
// when it runs instead of cuDNN's backward data); host twin in
// src/dnn/cpu/conv_transpose_cpu.c. One thread per output element, numbered
// ow-fastest, grid-stride over 256-thread blocks (the grid capped by the launch); the
// arithmetic is gaio_convt_at's, through the tensors' strides, in f32. Meant for
// correctness where cuDNN has nothing, not for speed.
#include <stdint.h>

#include "dnn/conv_transpose_kernel.h"

extern "C" __global__ void gaio_dnn_conv_transpose(gaio_ktensor x, gaio_ktensor w, gaio_ktensor bias, gaio_ktensor y,
                                                   gaio_kconvt p) {
    const uint64_t K = (uint64_t)y.shape[1], P = (uint64_t)y.shape[2], Q = (uint64_t)y.shape[3];
    const uint64_t total = (uint64_t)y.shape[0] * K * P * Q;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        uint64_t t = i;
        const int64_t ow = (int64_t)(t % Q);
        t /= Q;
        const int64_t oh = (int64_t)(t % P);
        t /= P;
        const int64_t k = (int64_t)(t % K), n = (int64_t)(t / K);
        const float v = gaio_convt_at(&x, &w, &bias, &p, n, k, oh, ow);
        gaio_kt_put(&y, n * y.strides[0] + k * y.strides[1] + oh * y.strides[2] + ow * y.strides[3], v);
    }
}
