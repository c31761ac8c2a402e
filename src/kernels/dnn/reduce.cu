// CUDA kernels of the reduce ops (src/dnn/reduce.c; host twins in
// src/dnn/cpu/reduce.c), launched with 256-thread blocks on a 1-D grid that the
// kernels stride over.
//
// softmax and global average pooling give each row (each (n, c) plane) to one warp:
// its lanes stride over the row, then a shuffle reduction gives every lane the max
// and the sum. Rows of a few to a few thousand elements (classes, channels) are the
// common case, and a warp per row keeps every warp busy without shared memory or
// block barriers. Pooling computes one output element per thread, numbered
// channel-fastest when y's channels are innermost (NHWC) so that a warp's stores
// stay together. Elements are read through the tensors' strides (reduce_math.h).
//
// Channels-innermost (NHWC) tensors whose offsets fit in 32 bits take fast paths:
// 64-bit division and multiplication are long instruction sequences on a GPU, and
// decoding every output's index with them made these memory-bound kernels compute-
// bound (the ResNet stem's max pool ran ten times slower than its memory traffic).
// Global average pooling of an NHWC x gives each (n, c) to one thread instead of a
// warp: a warp's lanes then read neighbouring channels, contiguous, where a warp per
// plane reads elements C apart. The arithmetic is gaio_kpool_at's, in its order.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/reduce_math.h"

namespace {

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = gaio_kt_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ int64_t global_thread() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_threads() { return (int64_t)gridDim.x * blockDim.x; }

__device__ __forceinline__ float ld(const __half *p, int32_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const float *p, int32_t i) { return p[i]; }
__device__ __forceinline__ void st(__half *p, int32_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(float *p, int32_t i, float v) { p[i] = v; }

// Every element offset of t, and its shape, fit in int32_t (non-negative strides).
__device__ __forceinline__ bool fits32(const gaio_ktensor &t) {
    int64_t span = 0;
    GAIO_KT_UNROLL
    for (int32_t d = 0; d < GAIO_KT_MAX_NDIM; d++) {
        if (d >= t.ndim) continue;
        if (t.strides[d] < 0 || t.shape[d] > INT32_MAX) return false;
        if (t.shape[d] > 0) span += (t.shape[d] - 1) * t.strides[d];
    }
    return span < INT32_MAX;
}

// gaio_kpool_at over channels-innermost x and y in 32-bit arithmetic, channel-fastest
// numbering. Unsigned indices: i + stride stays below 2^32 as total < 2^31.
template <typename T>
__device__ __forceinline__ void pool2d_nhwc(const gaio_ktensor &x, const gaio_ktensor &y, const gaio_kpool &p) {
    const uint32_t C = (uint32_t)y.shape[1], OH = (uint32_t)y.shape[2], OW = (uint32_t)y.shape[3];
    const uint32_t total = (uint32_t)y.shape[0] * C * OH * OW, step = gridDim.x * blockDim.x;
    const int32_t H = (int32_t)x.shape[2], W = (int32_t)x.shape[3];
    const int32_t xs0 = (int32_t)x.strides[0], xs2 = (int32_t)x.strides[2], xs3 = (int32_t)x.strides[3];
    const int32_t ys0 = (int32_t)y.strides[0], ys2 = (int32_t)y.strides[2], ys3 = (int32_t)y.strides[3];
    const bool count_pad = p.mode == 1 && p.count_include_pad;
    const T *xp = (const T *)(uintptr_t)x.ptr;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        uint32_t t = i;
        const int32_t c = (int32_t)(t % C);
        t /= C;
        const int32_t ow = (int32_t)(t % OW);
        t /= OW;
        const int32_t oh = (int32_t)(t % OH), n = (int32_t)(t / OH);
        const int32_t h0 = oh * p.sh - p.pt, w0 = ow * p.sw - p.pl;
        const T *xb = xp + n * xs0 + c;
        float acc = p.mode == 0 ? gaio_kt_neg_inf() : 0.0f;
        int32_t count = 0, padded = 0;
        for (int32_t a = 0; a < p.kh; a++) {
            const int32_t h = h0 + a * p.dh;
            if (count_pad && h >= -p.pt && h < H + p.pb)
                for (int32_t b = 0; b < p.kw; b++) {
                    const int32_t w = w0 + b * p.dw;
                    padded += w >= -p.pl && w < W + p.pr;
                }
            if (h < 0 || h >= H) continue;
            for (int32_t b = 0; b < p.kw; b++) {
                const int32_t w = w0 + b * p.dw;
                if (w < 0 || w >= W) continue;
                const float v = ld(xb, h * xs2 + w * xs3);
                if (p.mode == 0) {
                    acc = gaio_kt_max(acc, v);
                } else {
                    acc += v;
                }
                count++;
            }
        }
        float out = acc;
        if (!count)
            out = 0.0f;
        else if (p.mode != 0)
            out = acc / (float)(count_pad ? padded : count);
        st((T *)(uintptr_t)y.ptr, n * ys0 + c + oh * ys2 + ow * ys3, out);
    }
}

// One thread per (n, c) of a channels-innermost x, summing its plane in (h, w) order
// as the host kernel does.
template <typename T>
__device__ __forceinline__ void gap_nhwc(const gaio_ktensor &x, const gaio_ktensor &y) {
    const uint32_t C = (uint32_t)x.shape[1], planes = (uint32_t)x.shape[0] * C, step = gridDim.x * blockDim.x;
    const int32_t H = (int32_t)x.shape[2], W = (int32_t)x.shape[3];
    const int32_t xs0 = (int32_t)x.strides[0], xs2 = (int32_t)x.strides[2], xs3 = (int32_t)x.strides[3];
    const int32_t ys0 = (int32_t)y.strides[0], ys1 = (int32_t)y.strides[1];
    const T *xp = (const T *)(uintptr_t)x.ptr;
    for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < planes; r += step) {
        const int32_t c = (int32_t)(r % C), n = (int32_t)(r / C);
        const T *xb = xp + n * xs0 + c;
        float s = 0.0f;
        for (int32_t h = 0; h < H; h++)
            for (int32_t w = 0; w < W; w++) s += ld(xb, h * xs2 + w * xs3);
        st((T *)(uintptr_t)y.ptr, n * ys0 + c * ys1, s / (float)(H * W));
    }
}

} // namespace

extern "C" __global__ void gaio_dnn_softmax(gaio_ktensor x, gaio_ktensor y, int32_t axis) {
    const int lane = (int)(threadIdx.x & 31u);
    const int64_t len = gaio_kt_extent(&x, axis), sx = gaio_kt_stride(&x, axis), sy = gaio_kt_stride(&y, axis);
    const int64_t rows = gaio_kt_count(&x) / len;
    // The loop bound is the same for every lane of a warp, as the shuffles need.
    for (int64_t r = global_thread() >> 5; r < rows; r += grid_threads() >> 5) {
        int64_t ox, oy;
        gaio_kt_row(&x, &y, axis, r, &ox, &oy);
        float m = gaio_kt_neg_inf();
        for (int64_t i = lane; i < len; i += 32) m = gaio_kt_max(m, gaio_kt_get(&x, ox + i * sx));
        m = warp_max(m);
        float s = 0.0f;
        for (int64_t i = lane; i < len; i += 32) s += expf(gaio_kt_get(&x, ox + i * sx) - m);
        s = warp_sum(s);
        // Each lane writes only the elements it read, after the whole warp has read the
        // row (the shuffles order it): y may be x itself.
        for (int64_t i = lane; i < len; i += 32) gaio_kt_put(&y, oy + i * sy, expf(gaio_kt_get(&x, ox + i * sx) - m) / s);
    }
}

extern "C" __global__ void gaio_dnn_pool2d(gaio_ktensor x, gaio_ktensor y, gaio_kpool p) {
    const int64_t total = y.shape[0] * y.shape[1] * y.shape[2] * y.shape[3];
    // 32-bit window coordinates too: they reach oh * sh + (kh - 1) * dh, and the
    // padded extent H + pb.
    if (x.strides[1] == 1 && y.strides[1] == 1 && total < INT32_MAX && fits32(x) && fits32(y) &&
        y.shape[2] * p.sh + (int64_t)p.kh * p.dh < INT32_MAX / 2 &&
        y.shape[3] * p.sw + (int64_t)p.kw * p.dw < INT32_MAX / 2 && x.shape[2] + p.pb < INT32_MAX / 2 &&
        x.shape[3] + p.pr < INT32_MAX / 2) {
        if (x.dtype == GAIO_KT_F16)
            pool2d_nhwc<__half>(x, y, p);
        else
            pool2d_nhwc<float>(x, y, p);
        return;
    }
    for (int64_t i = global_thread(); i < total; i += grid_threads()) {
        int64_t n, c, oh, ow;
        gaio_kpool_index(&y, &p, i, &n, &c, &oh, &ow);
        gaio_kt_put(&y, n * y.strides[0] + c * y.strides[1] + oh * y.strides[2] + ow * y.strides[3],
                    gaio_kpool_at(&x, &p, n, c, oh, ow));
    }
}

extern "C" __global__ void gaio_dnn_global_avg_pool(gaio_ktensor x, gaio_ktensor y) {
    const int lane = (int)(threadIdx.x & 31u);
    const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], planes = x.shape[0] * C, hw = H * W;
    // src/dnn/reduce.c sizes the grid for a thread per plane under the same test.
    if (x.strides[1] == 1 && planes < INT32_MAX && fits32(x) && fits32(y)) {
        if (x.dtype == GAIO_KT_F16)
            gap_nhwc<__half>(x, y);
        else
            gap_nhwc<float>(x, y);
        return;
    }
    for (int64_t r = global_thread() >> 5; r < planes; r += grid_threads() >> 5) {
        const int64_t c = r % C, n = r / C, base = n * x.strides[0] + c * x.strides[1];
        float s = 0.0f;
        for (int64_t i = lane; i < hw; i += 32) {
            const int64_t h = i / W, w = i - h * W;
            s += gaio_kt_get(&x, base + h * x.strides[2] + w * x.strides[3]);
        }
        s = warp_sum(s);
        if (lane == 0) gaio_kt_put(&y, n * y.strides[0] + c * y.strides[1], s / (float)hw);
    }
}
