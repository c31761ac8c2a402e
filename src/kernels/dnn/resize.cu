// CUDA kernel of gaio_resize2d (src/dnn/resize.c; host twin in src/dnn/cpu/resize.c),
// launched with 256-thread blocks on a 1-D grid that it strides over: one output
// element per thread, numbered channel-fastest when y's channels are innermost (NHWC)
// so that a warp's loads and stores stay together (its threads then share their taps). Each thread works out its
// element's H and W taps (resize_math.h, in double precision as ONNX's reference
// does: a few operations per element, next to the element's memory traffic) and sums
// them in the host kernel's order, W within each row first.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/resize_math.h"

namespace {

__device__ __forceinline__ float ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ void st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(float *p, int64_t i, float v) { p[i] = v; }

// Every element offset of the 4-D t, and its shape, fit in int32_t (non-negative
// strides). Constant indexes: a parameter indexed at run time is copied to local memory.
__device__ __forceinline__ bool fits32(const gaio_ktensor &t) {
    int64_t span = 0;
#pragma unroll
    for (int32_t d = 0; d < 4; d++) {
        if (t.strides[d] < 0 || t.shape[d] > INT32_MAX) return false;
        if (t.shape[d] > 0) span += (t.shape[d] - 1) * t.strides[d];
    }
    return span < INT32_MAX;
}

// An antialiased output element from x's plane at xb: W's weights once into a local
// array (up to GAIO_KRESIZE_MAX_TAPS, L1-resident), H's as each row is added.
template <typename T>
__device__ __noinline__ float antialiased(const T *xb, const gaio_ktensor &x, const gaio_kresize &p, int64_t OH,
                                          int64_t OW, int64_t oh, int64_t ow) {
    const int64_t H = x.shape[2], W = x.shape[3], xs2 = x.strides[2], xs3 = x.strides[3];
    gaio_kresize_wide th, tw;
    gaio_kresize_wide_axis(&p, 0, H, OH, oh, &th);
    gaio_kresize_wide_axis(&p, 1, W, OW, ow, &tw);
    if (!th.count || !tw.count) return p.extrapolation;
    float ww[GAIO_KRESIZE_MAX_TAPS];
    for (int32_t b = 0; b < tw.count; b++) ww[b] = gaio_kresize_aa_weight(&p, &tw, b, W);
    float acc = 0.0f;
    for (int32_t a = 0; a < th.count; a++) {
        const T *row = xb + gaio_kresize_clamp(th.first + a, H) * xs2;
        float v = 0.0f;
        for (int32_t b = 0; b < tw.count; b++) v += ww[b] * ld(row, gaio_kresize_clamp(tw.first + b, W) * xs3);
        acc += gaio_kresize_aa_weight(&p, &th, a, H) * v;
    }
    return acc;
}

// I is the index type: uint32_t where every index fits (64-bit division is a long
// instruction sequence on a GPU, and decoding each output's index with it would cost
// more than its memory traffic), else int64_t. Unsigned: i + step stays below 2^32 as
// total < 2^31.
template <typename T, typename I>
__device__ __forceinline__ void resize2d(const gaio_ktensor &x, const gaio_ktensor &y, const gaio_kresize &p) {
    const int64_t H = x.shape[2], W = x.shape[3];
    const I C = (I)y.shape[1], OH = (I)y.shape[2], OW = (I)y.shape[3];
    const I total = (I)y.shape[0] * C * OH * OW, step = (I)gridDim.x * blockDim.x;
    const int64_t xs0 = x.strides[0], xs1 = x.strides[1], xs2 = x.strides[2], xs3 = x.strides[3];
    const int64_t ys0 = y.strides[0], ys1 = y.strides[1], ys2 = y.strides[2], ys3 = y.strides[3];
    const T *xp = (const T *)(uintptr_t)x.ptr;
    T *yp = (T *)(uintptr_t)y.ptr;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        I t = i, n, c, oh, ow;
        if (p.c_inner) {
            c = t % C, t /= C;
            ow = t % OW, t /= OW;
            oh = t % OH, n = t / OH;
        } else {
            ow = t % OW, t /= OW;
            oh = t % OH, t /= OH;
            c = t % C, n = t / C;
        }
        const T *xb = xp + (int64_t)n * xs0 + (int64_t)c * xs1;
        const int64_t yo = (int64_t)n * ys0 + (int64_t)c * ys1 + (int64_t)oh * ys2 + (int64_t)ow * ys3;
        if (p.antialias) {
            st(yp, yo, antialiased(xb, x, p, (int64_t)OH, (int64_t)OW, (int64_t)oh, (int64_t)ow));
            continue;
        }
        gaio_kresize_taps th, tw;
        gaio_kresize_axis(&p, 0, H, (int64_t)OH, (int64_t)oh, &th);
        gaio_kresize_axis(&p, 1, W, (int64_t)OW, (int64_t)ow, &tw);
        float acc = p.extrapolation;
        if (th.count && tw.count) {
            acc = 0.0f;
            // Constant trip counts (taps past count skipped) keep the weights in registers.
#pragma unroll
            for (int32_t a = 0; a < 4; a++) {
                if (a >= th.count) break;
                const T *row = xb + gaio_kresize_clamp(th.first + a, H) * xs2;
                float v = 0.0f;
#pragma unroll
                for (int32_t b = 0; b < 4; b++) {
                    if (b >= tw.count) break;
                    v += tw.w[b] * ld(row, gaio_kresize_clamp(tw.first + b, W) * xs3);
                }
                acc += th.w[a] * v;
            }
        }
        st(yp, yo, acc);
    }
}

template <typename T>
__device__ __forceinline__ void resize2d_any(const gaio_ktensor &x, const gaio_ktensor &y, const gaio_kresize &p) {
    const int64_t total = y.shape[0] * y.shape[1] * y.shape[2] * y.shape[3];
    if (total < INT32_MAX && fits32(x) && fits32(y))
        resize2d<T, uint32_t>(x, y, p);
    else
        resize2d<T, int64_t>(x, y, p);
}

} // namespace

extern "C" __global__ void gaio_dnn_resize2d(gaio_ktensor x, gaio_ktensor y, gaio_kresize p) {
    if (x.dtype == GAIO_KT_F16)
        resize2d_any<__half>(x, y, p);
    else
        resize2d_any<float>(x, y, p);
}
