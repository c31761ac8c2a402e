// CUDA kernel of gaio's small fully-connected convolution (dnn/conv_fc_math.h): a 1x1
// window on 1x1 maps, as the squeeze-and-excitation blocks of EfficientNet, MobileNetV3
// and RegNet-Y run twice per block on [N, C, 1, 1]. cuDNN ran them as convolutions and
// gaio's activation pass followed (SiLU, Sigmoid, HardSigmoid: cuDNN fuses those only
// in runtime-compiled engines); here one launch computes them with the epilogue fused,
// in the order conv.c chose (conv_fc_math.h). A first version gave every output a warp
// whatever its length: the expanding convolutions (48 terms, 37 thousand outputs) left
// most lanes idle and the kernels took longer than cuDNN's two launches.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/conv_fc_math.h"

namespace {

__device__ __forceinline__ void unpack8(uint4 v, float *f) {
    const __half2 *h = reinterpret_cast<const __half2 *>(&v);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 t = __half22float2(h[i]);
        f[2 * i] = t.x, f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ uint4 load8(const gaio_ktensor &t, int64_t off) {
    return __ldg(reinterpret_cast<const uint4 *>(static_cast<uintptr_t>(t.ptr) + 2 * off));
}

__device__ __forceinline__ void store(const gaio_ktensor &bias, const gaio_ktensor &res, const gaio_ktensor &y,
                                      const gaio_kfc &p, int64_t n, int64_t k, float acc) {
    const float b = p.has_bias ? gaio_kt_get(&bias, k * bias.strides[0]) : 0.0f;
    const float r = p.has_res ? gaio_kt_get(&res, n * res.strides[0] + k * res.strides[1]) : 0.0f;
    gaio_kt_put(&y, n * y.strides[0] + k * y.strides[1], gaio_fc_epilogue(&p, acc, b, r));
}

__device__ __forceinline__ float butterfly(float acc) {
#pragma unroll
    for (int off = GAIO_FC_LANES / 2; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    return acc;
}

} // namespace

// x [N, C, 1, 1], w [K, C, 1, 1], y and the residual [N, K, 1, 1], any strides (the
// vector loads' layout where p.vec says so). THREAD: a thread an output, outputs k
// fastest (a warp's threads read one row of x); the warp modes: blockDim.x a multiple
// of 32, warps striding over their work.
extern "C" __global__ void gaio_dnn_conv_fc(gaio_ktensor x, gaio_ktensor w, gaio_ktensor bias, gaio_ktensor residual,
                                            gaio_ktensor y, gaio_kfc p) {
    const int64_t N = y.shape[0], K = y.shape[1], C = x.shape[1];
    if (p.mode == GAIO_FC_THREAD) {
        const int64_t step = (int64_t)gridDim.x * blockDim.x;
        for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < N * K; o += step) {
            const int64_t n = o / K, k = o - n * K;
            float acc = 0.0f;
            if (p.vec) {
                for (int64_t c0 = 0; c0 < C; c0 += 8) {
                    float xf[8], wf[8];
                    unpack8(load8(x, n * x.strides[0] + c0), xf);
                    unpack8(load8(w, k * w.strides[0] + c0), wf);
#pragma unroll
                    for (int e = 0; e < 8; e++) acc = fmaf(xf[e], wf[e], acc);
                }
            } else {
                acc = gaio_fc_serial(&x, &w, n, k);
            }
            store(bias, residual, y, p, n, k, acc);
        }
        return;
    }
    const int32_t lane = (int32_t)(threadIdx.x % GAIO_FC_LANES);
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / GAIO_FC_LANES);
    const int64_t first = (int64_t)blockIdx.x * (blockDim.x / GAIO_FC_LANES) + threadIdx.x / GAIO_FC_LANES;
    if (p.mode == GAIO_FC_WARP8) {
        const int64_t groups = (N + GAIO_FC_NB - 1) / GAIO_FC_NB;
        for (int64_t item = first; item < K * groups; item += warps) {
            const int64_t k = item % K, n0 = item / K * GAIO_FC_NB;
            float acc[GAIO_FC_NB];
#pragma unroll
            for (int b = 0; b < GAIO_FC_NB; b++) acc[b] = 0.0f;
            for (int64_t c0 = 8 * (int64_t)lane; c0 < C; c0 += 8 * GAIO_FC_LANES) {
                float wf[8];
                unpack8(load8(w, k * w.strides[0] + c0), wf);
#pragma unroll
                for (int b = 0; b < GAIO_FC_NB; b++) {
                    if (n0 + b >= N) break;
                    float xf[8];
                    unpack8(load8(x, (n0 + b) * x.strides[0] + c0), xf);
#pragma unroll
                    for (int e = 0; e < 8; e++) acc[b] = fmaf(xf[e], wf[e], acc[b]);
                }
            }
#pragma unroll
            for (int b = 0; b < GAIO_FC_NB; b++) {
                const float sum = butterfly(acc[b]); // every lane ends with the same sum
                if (lane == b && n0 + b < N) store(bias, residual, y, p, n0 + b, k, sum);
            }
        }
        return;
    }
    for (int64_t o = first; o < N * K; o += warps) {
        const int64_t n = o / K, k = o - n * K;
        const float sum = butterfly(gaio_fc_lane(&x, &w, n, k, lane));
        if (lane == 0) store(bias, residual, y, p, n, k, sum);
    }
}
