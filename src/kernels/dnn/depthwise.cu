// CUDA kernel of gaio's depthwise convolution (groups == C == K), launched by
// gaio_conv2d (src/dnn/conv.c) instead of a cuDNN plan: cuDNN's grouped direct kernel
// runs MobileNet's depthwise layers several times slower than memory allows. Host twin
// in src/dnn/cpu/depthwise.c; the window sum and epilogue are dnn/depthwise_math.h's.
//
// One thread per output element, grid-stride over 256-thread blocks. With x and y
// channels-innermost (NHWC) the outputs are numbered channel-fastest, so a warp reads
// x's taps and writes y as contiguous runs of channels; otherwise ow-fastest, which
// keeps NCHW rows together. Indices are decoded with 32-bit divisions and offsets
// computed in 32 bits when the tensors allow (64-bit division and multiplication are
// long instruction sequences that otherwise dominate a memory-bound kernel); 3x3
// windows get unrolled loops.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/depthwise_math.h"

namespace {

__device__ __forceinline__ float ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ void st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(float *p, int64_t i, float v) { p[i] = v; }

// Output (n, k, oh, ow), offsets computed in type O (int32_t when every tensor fits,
// else int64_t). KR, KS: the window's size fixed at compile time, 0 for w's. The same
// loop as gaio_dw_sum, with native loads.
template <typename T, int KR, int KS, typename O>
__device__ __forceinline__ void output(const gaio_ktensor &x, const gaio_ktensor &w, const gaio_ktensor &b,
                                       const gaio_ktensor &res, const gaio_ktensor &y, const gaio_kdw &p, O n, O k,
                                       O oh, O ow) {
    const int R = KR ? KR : (int)w.shape[2], S = KS ? KS : (int)w.shape[3];
    const O H = (O)x.shape[2], W = (O)x.shape[3], xs2 = (O)x.strides[2], xs3 = (O)x.strides[3];
    const O ws2 = (O)w.strides[2], ws3 = (O)w.strides[3];
    const O h0 = oh * p.sh - p.pt, w0 = ow * p.sw - p.pl;
    const T *xb = (const T *)(uintptr_t)x.ptr + (n * (O)x.strides[0] + k * (O)x.strides[1]);
    const T *wb = (const T *)(uintptr_t)w.ptr + k * (O)w.strides[0];
    float acc = 0.0f;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const O h = h0 + (O)r * p.dh;
        if (h < 0 || h >= H) continue;
#pragma unroll
        for (int s = 0; s < S; s++) {
            const O c = w0 + (O)s * p.dw;
            if (c < 0 || c >= W) continue;
            acc += ld(xb, h * xs2 + c * xs3) * ld(wb, (O)r * ws2 + (O)s * ws3);
        }
    }
    const float bv = p.has_bias ? ld((const T *)(uintptr_t)b.ptr, k * (O)b.strides[0]) : 0.0f;
    // Read before y's element is written, by this thread only: residual may be y.
    const float rv = p.has_res ? ld((const T *)(uintptr_t)res.ptr, n * (O)res.strides[0] + k * (O)res.strides[1] +
                                                                        oh * (O)res.strides[2] + ow * (O)res.strides[3])
                               : 0.0f;
    st((T *)(uintptr_t)y.ptr, n * (O)y.strides[0] + k * (O)y.strides[1] + oh * (O)y.strides[2] + ow * (O)y.strides[3],
       gaio_dw_epilogue(&p, acc, bv, rv));
}

// The grid-stride loop with index type I (uint32_t when the output count is below
// 2^31, so that i + stride cannot wrap; uint64_t otherwise) and offset type O.
template <typename T, int KR, int KS, typename I, typename O>
__device__ __forceinline__ void outputs(const gaio_ktensor &x, const gaio_ktensor &w, const gaio_ktensor &b,
                                        const gaio_ktensor &res, const gaio_ktensor &y, const gaio_kdw &p) {
    const I N = (I)y.shape[0], K = (I)y.shape[1], P = (I)y.shape[2], Q = (I)y.shape[3], total = N * K * P * Q;
    const I step = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        I t = i, n, k, oh, ow;
        if (p.c_inner) {
            k = t % K, t /= K, ow = t % Q, t /= Q, oh = t % P, n = t / P;
        } else {
            ow = t % Q, t /= Q, oh = t % P, t /= P, k = t % K, n = t / K;
        }
        output<T, KR, KS, O>(x, w, b, res, y, p, (O)n, (O)k, (O)oh, (O)ow);
    }
}

template <typename T>
__device__ __forceinline__ void run(const gaio_ktensor &x, const gaio_ktensor &w, const gaio_ktensor &b,
                                    const gaio_ktensor &res, const gaio_ktensor &y, const gaio_kdw &p) {
    const bool k3 = w.shape[2] == 3 && w.shape[3] == 3, narrow = p.narrow != 0;
    if (k3 && narrow)
        outputs<T, 3, 3, uint32_t, int32_t>(x, w, b, res, y, p);
    else if (narrow)
        outputs<T, 0, 0, uint32_t, int32_t>(x, w, b, res, y, p);
    else
        outputs<T, 0, 0, uint64_t, int64_t>(x, w, b, res, y, p);
}

} // namespace

extern "C" __global__ void gaio_dnn_conv_depthwise(gaio_ktensor x, gaio_ktensor w, gaio_ktensor bias,
                                                   gaio_ktensor residual, gaio_ktensor y, gaio_kdw p) {
    if (x.dtype == GAIO_KT_F16)
        run<__half>(x, w, bias, residual, y, p);
    else
        run<float>(x, w, bias, residual, y, p);
}
