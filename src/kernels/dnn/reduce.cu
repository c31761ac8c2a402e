// CUDA kernels of the reduce ops (src/dnn/reduce.c; host twins in
// src/dnn/cpu/reduce.c), launched with 256-thread blocks on a 1-D grid that the
// kernels stride over (global average pooling of channels-innermost x excepted, below).
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
// Where every pixel's channels start a 16-byte aligned run (C a multiple of 8 halves
// or 4 floats), pooling gives each thread a 16-byte vector of channels of one output
// pixel; otherwise a channel. Either way the arithmetic is gaio_kpool_at's, in its
// order, so the results are the host kernel's.
//
// Global average pooling of an NHWC x splits each plane's pixels over many threads: a
// thread per (n, c) plane left EfficientNet's batch-32 112x112 planes to 1024 threads
// summing 12544 values each, latency bound. Each block takes blockDim.x groups of
// channels (16-byte vectors as above, else single channels), numbered across the
// batch so that a warp's reads are contiguous, and its blockDim.y rows of threads
// share the groups' pixels; the partial sums meet in a fixed order (shuffles within a
// warp, then shared memory over the warps), so every run gives the same bits, without
// atomics or scratch memory. src/dnn/reduce.c picks the block shape.
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

// V channels in 16 bytes (V = 8 halves or 4 floats), or one channel (V = 1). Read
// with __ldg (x never overlaps y): a plain load of a uint4 whose halves are then
// reinterpreted became four 4-byte loads.
template <typename T, int32_t V> struct chans {
    typedef uint4 type;
};
template <typename T> struct chans<T, 1> {
    typedef T type;
};

// f[0 .. V) += the channels of u; T tags u's element type.
__device__ __forceinline__ void add(float *f, const uint4 &u, __half) {
    const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 t = __half22float2(h[i]);
        f[2 * i] += t.x, f[2 * i + 1] += t.y;
    }
}
__device__ __forceinline__ void add(float *f, const uint4 &u, float) {
    const float4 t = *reinterpret_cast<const float4 *>(&u);
    f[0] += t.x, f[1] += t.y, f[2] += t.z, f[3] += t.w;
}
__device__ __forceinline__ void add(float *f, __half v, __half) { f[0] += __half2float(v); }
__device__ __forceinline__ void add(float *f, float v, float) { f[0] += v; }

__device__ __forceinline__ void widen(const uint4 &u, __half, float *f) {
    const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 t = __half22float2(h[i]);
        f[2 * i] = t.x, f[2 * i + 1] = t.y;
    }
}
__device__ __forceinline__ void widen(const uint4 &u, float, float *f) {
    const float4 t = *reinterpret_cast<const float4 *>(&u);
    f[0] = t.x, f[1] = t.y, f[2] = t.z, f[3] = t.w;
}

// Rounded to nearest as st() rounds each element.
__device__ __forceinline__ uint4 narrow(const float *f, __half) {
    uint4 u;
    __half2 *h = reinterpret_cast<__half2 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) h[i] = __floats2half2_rn(f[2 * i], f[2 * i + 1]);
    return u;
}
__device__ __forceinline__ uint4 narrow(const float *f, float) {
    uint4 u;
    *reinterpret_cast<float4 *>(&u) = make_float4(f[0], f[1], f[2], f[3]);
    return u;
}

// Channels innermost in t, V of them (a power of two) per 16 bytes, and every pixel's
// channels a whole number of 16-byte aligned vectors. src/dnn/reduce.c's
// vector_lanes() tests the same to size the grids.
__device__ __forceinline__ bool vec16(const gaio_ktensor &t, int32_t v) {
    return t.strides[1] == 1 && t.shape[1] % v == 0 && t.ptr % 16 == 0 && t.strides[0] % v == 0 &&
           t.strides[2] % v == 0 && t.strides[3] % v == 0;
}

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

// The taps j of a window side of k, starting at s0 with dilation d, that land inside
// [0, n): j0 <= j < j1. Unsigned: n - s0 + d - 1 may pass INT32_MAX (n, d and the
// padding -s0 are each below INT32_MAX / 2: gaio_dnn_pool2d's test, and no window lies
// wholly in the padding).
__device__ __forceinline__ void inside(int32_t s0, int32_t d, int32_t k, int32_t n, int32_t &j0, int32_t &j1) {
    const uint32_t ud = (uint32_t)d;
    j0 = s0 < 0 ? (int32_t)(((uint32_t)-s0 + ud - 1) / ud) : 0;
    j1 = s0 >= n ? 0 : (int32_t)min((uint32_t)k, ((uint32_t)(n - s0) + ud - 1) / ud);
}

// pool2d_nhwc with a thread per output pixel and 16-byte vector of V channels (x and y
// vec16; MAX the mode): the same taps in the same order (row by row, left to right),
// counts and arithmetic per channel, so the same bits. The taps inside x are found
// first, so that the loop over them has no branch and its loads can be in flight
// together.
template <typename T, bool MAX>
__device__ __forceinline__ void pool2d_vec(const gaio_ktensor &x, const gaio_ktensor &y, const gaio_kpool &p) {
    constexpr int32_t V = 16 / sizeof(T);
    const uint32_t G = (uint32_t)y.shape[1] / V, OH = (uint32_t)y.shape[2], OW = (uint32_t)y.shape[3];
    const uint32_t total = (uint32_t)y.shape[0] * G * OH * OW, step = gridDim.x * blockDim.x;
    const int32_t H = (int32_t)x.shape[2], W = (int32_t)x.shape[3];
    const int32_t xs0 = (int32_t)x.strides[0], xs2 = (int32_t)x.strides[2], xs3 = (int32_t)x.strides[3];
    const int32_t ys0 = (int32_t)y.strides[0], ys2 = (int32_t)y.strides[2], ys3 = (int32_t)y.strides[3];
    const bool count_pad = !MAX && p.count_include_pad;
    const T *xp = (const T *)(uintptr_t)x.ptr;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        uint32_t t = i;
        const int32_t c = (int32_t)(t % G) * V;
        t /= G;
        const int32_t ow = (int32_t)(t % OW);
        t /= OW;
        const int32_t oh = (int32_t)(t % OH), n = (int32_t)(t / OH);
        const int32_t h0 = oh * p.sh - p.pt, w0 = ow * p.sw - p.pl;
        int32_t a0, a1, b0, b1;
        inside(h0, p.dh, p.kh, H, a0, a1);
        inside(w0, p.dw, p.kw, W, b0, b1);
        const int32_t count = a1 > a0 && b1 > b0 ? (a1 - a0) * (b1 - b0) : 0;
        int32_t padded = 0;
        if (count_pad)
            for (int32_t a = 0; a < p.kh; a++) {
                const int32_t h = h0 + a * p.dh;
                if (h >= -p.pt && h < H + p.pb)
                    for (int32_t b = 0; b < p.kw; b++) {
                        const int32_t w = w0 + b * p.dw;
                        padded += w >= -p.pl && w < W + p.pr;
                    }
            }
        float acc[V];
#pragma unroll
        for (int32_t k = 0; k < V; k++) acc[k] = MAX ? gaio_kt_neg_inf() : 0.0f;
        // Column offsets modulo 2^32: with no tap inside, the first one is unused.
        const T *xb = xp + n * xs0 + c;
        const uint32_t col0 = (uint32_t)(w0 + b0 * p.dw) * (uint32_t)xs3, cstep = (uint32_t)p.dw * (uint32_t)xs3;
        for (int32_t a = a0; a < a1; a++) {
            const T *row = xb + (h0 + a * p.dh) * xs2;
            uint32_t col = col0;
            // 3: a 3x3 window's row of loads in flight together.
#pragma unroll 3
            for (int32_t b = b0; b < b1; b++, col += cstep) {
                float v[V];
                widen(__ldg(reinterpret_cast<const uint4 *>(row + col)), T(), v);
#pragma unroll
                for (int32_t k = 0; k < V; k++) acc[k] = MAX ? gaio_kt_max(acc[k], v[k]) : acc[k] + v[k];
            }
        }
        float out[V];
#pragma unroll
        for (int32_t k = 0; k < V; k++) {
            out[k] = acc[k];
            if (!count)
                out[k] = 0.0f;
            else if (!MAX)
                out[k] = acc[k] / (float)(count_pad ? padded : count);
        }
        T *yp = (T *)(uintptr_t)y.ptr;
        *reinterpret_cast<uint4 *>(yp + n * ys0 + c + oh * ys2 + ow * ys3) = narrow(out, T());
    }
}

// Floats of a block's partial sums in gap_split: (warps) x (groups) x V, which
// src/dnn/reduce.c's block shapes keep within this.
constexpr int32_t GAP_PART = 2048;

// Loads of gap_split's loop issued before their sums: at 32 registers ptxas keeps 2
// in flight on the 8-half path, all 4 on the others.
constexpr int32_t GAP_UNROLL = 4;

// The global average of channels-innermost x by blocks of blockDim.x groups of V
// channels (a power of two up to 32) and blockDim.y rows of threads (see the top), a
// block per gb groups: false, having done nothing, when the grid is smaller (no grid-
// stride loop: its state in registers cost the warp-per-plane path, in the same
// kernel, occupancy).
// Group q is channels (q % G) * V .. + V of image q / G. Row s of a block sums pixels
// s, s + S, ... of its groups in (h, w) order; a warp holds 32 / gb rows of each of its
// gb groups, added by a shuffle tree, and the warps' sums are added in warp order.
template <typename T, int32_t V>
__device__ __forceinline__ bool gap_split(const gaio_ktensor &x, const gaio_ktensor &y, float *part) {
    typedef typename chans<T, V>::type P;
    const uint32_t G = (uint32_t)x.shape[1] / V, Q = (uint32_t)x.shape[0] * G, gb = blockDim.x;
    if ((uint64_t)gridDim.x * gb < Q) return false;
    const uint32_t q0 = blockIdx.x * gb;
    if (q0 >= Q) return true; // the whole block: before any barrier
    const int32_t W = (int32_t)x.shape[3], hw = (int32_t)(x.shape[2] * x.shape[3]), S = (int32_t)blockDim.y;
    const int32_t g = (int32_t)threadIdx.x, s = (int32_t)threadIdx.y;
    const uint32_t q = q0 + (uint32_t)g;
    float acc[V];
#pragma unroll
    for (int32_t k = 0; k < V; k++) acc[k] = 0.0f;
    if (q < Q && s < hw) {
        const T *xb = (const T *)(uintptr_t)x.ptr + (int32_t)(q / G) * (int32_t)x.strides[0] + (int32_t)(q % G) * V;
        // Stepping S pixels moves S / W rows and dw columns, a row more when the column
        // wraps. Offsets modulo 2^32: a wrap may be negative, and the offset a step past
        // the last pixel (computed, never read) may pass INT32_MAX.
        const uint32_t uW = (uint32_t)W, u2 = (uint32_t)x.strides[2], u3 = (uint32_t)x.strides[3];
        const int32_t dw = S % W;
        const uint32_t step = (uint32_t)S / uW * u2 + (uint32_t)dw * u3, wrap = u2 - uW * u3;
        int32_t p = s, w = s % W;
        uint32_t off = (uint32_t)s / uW * u2 + (uint32_t)w * u3;
        for (; p + (GAP_UNROLL - 1) * S < hw; p += GAP_UNROLL * S) {
            P v[GAP_UNROLL];
#pragma unroll
            for (int32_t u = 0; u < GAP_UNROLL; u++) {
                v[u] = __ldg(reinterpret_cast<const P *>(xb + off));
                off += step, w += dw;
                if (w >= W) off += wrap, w -= W;
            }
#pragma unroll
            for (int32_t u = 0; u < GAP_UNROLL; u++) add(acc, v[u], T());
        }
        for (; p < hw; p += S) {
            add(acc, __ldg(reinterpret_cast<const P *>(xb + off)), T());
            off += step, w += dw;
            if (w >= W) off += wrap, w -= W;
        }
    }
    // Lanes gb apart hold one group: the tree leaves each group's warp sum in lane g.
    const int32_t tid = s * (int32_t)gb + g, lane = tid & 31;
#pragma unroll
    for (int32_t k = 0; k < V; k++)
        for (int32_t o = 16; o >= (int32_t)gb; o >>= 1) acc[k] += __shfl_xor_sync(0xffffffffu, acc[k], o);
    if (lane < (int32_t)gb)
#pragma unroll
        for (int32_t k = 0; k < V; k++) part[((tid >> 5) * (int32_t)gb + lane) * V + k] = acc[k];
    __syncthreads();
    const int32_t warps = (int32_t)gb * S >> 5;
    for (int32_t t = tid; t < (int32_t)gb * V; t += (int32_t)gb * S) {
        const uint32_t r = q0 + (uint32_t)(t / V);
        if (r >= Q) break;
        float sum = 0.0f;
        for (int32_t k = 0; k < warps; k++) sum += part[(k * (int32_t)gb + t / V) * V + t % V];
        const int32_t n = (int32_t)(r / G), c = (int32_t)(r % G) * V + t % V;
        st((T *)(uintptr_t)y.ptr, n * (int32_t)y.strides[0] + c * (int32_t)y.strides[1], sum / (float)hw);
    }
    return true;
}

} // namespace

namespace {

// Softmax over packed rows of at most 32 * K elements (x and y both packed, the axis
// last: attention's scores, ViT's 197 tokens, Swin's 49): each lane keeps its
// elements in registers, so the row is read once and not three times, and no
// coordinates are decoded. The same sums in the same order as the general loop below
// (lane l: i = l, l + 32, ...; then the shuffles), so the same bits.
template <typename T, int K> __device__ __forceinline__ void softmax_rows(const T *x, T *y, int64_t rows, int32_t len) {
    const int lane = (int)(threadIdx.x & 31u);
    for (int64_t r = global_thread() >> 5; r < rows; r += grid_threads() >> 5) {
        const T *xr = x + r * len;
        T *yr = y + r * len;
        float v[K], m = gaio_kt_neg_inf();
#pragma unroll
        for (int j = 0; j < K; j++) {
            const int i = lane + 32 * j;
            v[j] = i < len ? (float)xr[i] : gaio_kt_neg_inf();
            m = gaio_kt_max(m, v[j]);
        }
        m = warp_max(m);
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < K; j++) {
            if (lane + 32 * j < len) v[j] = expf(v[j] - m), s += v[j];
        }
        s = warp_sum(s);
#pragma unroll
        for (int j = 0; j < K; j++)
            if (lane + 32 * j < len) yr[lane + 32 * j] = (T)(v[j] / s);
    }
}

__device__ __forceinline__ bool packed(const gaio_ktensor &t) {
    int64_t want = 1;
    bool ok = true;
#pragma unroll
    for (int d = GAIO_KT_MAX_NDIM - 1; d >= 0; d--)
        if (d < t.ndim) ok = ok && (t.shape[d] == 1 || t.strides[d] == want), want *= t.shape[d];
    return ok;
}

template <typename T> __device__ __forceinline__ bool softmax_packed(const gaio_ktensor &x, const gaio_ktensor &y, int32_t axis) {
    const int64_t len = gaio_kt_extent(&x, axis);
    if (axis != x.ndim - 1 || len > 256 || !packed(x) || !packed(y)) return false;
    const T *xp = reinterpret_cast<const T *>(x.ptr);
    T *yp = reinterpret_cast<T *>(y.ptr);
    const int64_t rows = gaio_kt_count(&x) / len;
    if (len <= 64)
        softmax_rows<T, 2>(xp, yp, rows, (int32_t)len);
    else
        softmax_rows<T, 8>(xp, yp, rows, (int32_t)len);
    return true;
}

// Softmax of short rows (up to 64 elements) that are not packed rows of x: a thread a
// row, the rows in the order of x's other dimensions, so that neighbouring threads read
// neighbouring elements of x (an inner axis, rows `stride` apart) or each reads its own
// contiguous row (an NHWC tensor's channels), and y's writes follow. The YOLO-style
// detector's distribution head is such a softmax (16 bins 4 x 8400 elements apart, into
// NHWC for the convolution after it); the warp-per-row loop below gave each row a warp,
// read one element a lane from lines far apart and left half its lanes idle: 0.54 ms on
// its 17 M elements at batch 32 (H200), about 30 times their memory time. A row's
// elements are read three times, from cache after the first.
template <typename T>
__device__ __forceinline__ bool softmax_threads(const gaio_ktensor &x, const gaio_ktensor &y, int32_t axis) {
    const int64_t len = gaio_kt_extent(&x, axis);
    if (len < 1 || len > 64) return false;
    const int64_t sx = gaio_kt_stride(&x, axis), sy = gaio_kt_stride(&y, axis), rows = gaio_kt_count(&x) / len;
    const T *xp = reinterpret_cast<const T *>(x.ptr);
    T *yp = reinterpret_cast<T *>(y.ptr);
    for (int64_t r = global_thread(); r < rows; r += grid_threads()) {
        int64_t ox, oy;
        gaio_kt_row(&x, &y, axis, r, &ox, &oy);
        float m = gaio_kt_neg_inf(), s = 0.0f;
        for (int64_t i = 0; i < len; i++) m = gaio_kt_max(m, (float)xp[ox + i * sx]);
        for (int64_t i = 0; i < len; i++) s += expf((float)xp[ox + i * sx] - m);
        // each thread writes only its row, after reading it: y may be x itself
        for (int64_t i = 0; i < len; i++) yp[oy + i * sy] = (T)(expf((float)xp[ox + i * sx] - m) / s);
    }
    return true;
}

} // namespace

extern "C" __global__ void gaio_dnn_softmax(gaio_ktensor x, gaio_ktensor y, int32_t axis) {
    const int lane = (int)(threadIdx.x & 31u);
    const int64_t len = gaio_kt_extent(&x, axis), sx = gaio_kt_stride(&x, axis), sy = gaio_kt_stride(&y, axis);
    if (len > 0 && x.dtype == y.dtype &&
        (x.dtype == GAIO_KT_F16 ? softmax_packed<__half>(x, y, axis) : softmax_packed<float>(x, y, axis)))
        return;
    if (len > 0 && x.dtype == y.dtype &&
        (x.dtype == GAIO_KT_F16 ? softmax_threads<__half>(x, y, axis) : softmax_threads<float>(x, y, axis)))
        return;
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

// 4 blocks an SM (64 registers; pool2d_nhwc alone fit 5): at 48, ptxas kept one of a
// row's 16-byte loads in flight, or spilled.
extern "C" __global__ void __launch_bounds__(256, 4) gaio_dnn_pool2d(gaio_ktensor x, gaio_ktensor y, gaio_kpool p) {
    const int64_t total = y.shape[0] * y.shape[1] * y.shape[2] * y.shape[3];
    // 32-bit window coordinates too: they reach oh * sh + (kh - 1) * dh, and the
    // padded extent H + pb.
    if (x.strides[1] == 1 && y.strides[1] == 1 && total < INT32_MAX && fits32(x) && fits32(y) &&
        y.shape[2] * p.sh + (int64_t)p.kh * p.dh < INT32_MAX / 2 &&
        y.shape[3] * p.sw + (int64_t)p.kw * p.dw < INT32_MAX / 2 && x.shape[2] + p.pb < INT32_MAX / 2 &&
        x.shape[3] + p.pr < INT32_MAX / 2) {
        if (x.dtype == GAIO_KT_F16) {
            if (!vec16(x, 8) || !vec16(y, 8))
                pool2d_nhwc<__half>(x, y, p);
            else if (p.mode == 0)
                pool2d_vec<__half, true>(x, y, p);
            else
                pool2d_vec<__half, false>(x, y, p);
        } else {
            if (!vec16(x, 4) || !vec16(y, 4))
                pool2d_nhwc<float>(x, y, p);
            else if (p.mode == 0)
                pool2d_vec<float, true>(x, y, p);
            else
                pool2d_vec<float, false>(x, y, p);
        }
        return;
    }
    for (int64_t i = global_thread(); i < total; i += grid_threads()) {
        int64_t n, c, oh, ow;
        gaio_kpool_index(&y, &p, i, &n, &c, &oh, &ow);
        gaio_kt_put(&y, n * y.strides[0] + c * y.strides[1] + oh * y.strides[2] + ow * y.strides[3],
                    gaio_kpool_at(&x, &p, n, c, oh, ow));
    }
}

// Blocks of up to 1024 threads: 1-D, or (groups, rows) for channels-innermost x. 32
// registers keep the warp-per-plane path's full occupancy (it had 32 before gap_split);
// with more, ptxas spent them on the 8-half path's loads, 58 for 4 in flight, where 32
// still have 2 in flight. Before CUDA 12.4 (no __maxnreg__), only the 1024 bound.
#if __CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4)
#define GAP_REGS __maxnreg__(32)
#else
#define GAP_REGS __launch_bounds__(1024)
#endif
extern "C" __global__ void GAP_REGS gaio_dnn_global_avg_pool(gaio_ktensor x, gaio_ktensor y) {
    __shared__ float part[GAP_PART];
    const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], planes = x.shape[0] * C, hw = H * W;
    const uint32_t gb = blockDim.x, threads = blockDim.x * blockDim.y * blockDim.z;
    if (x.strides[1] == 1 && planes < INT32_MAX && hw < INT32_MAX / 2 && fits32(x) && fits32(y) && gb <= 32 &&
        (gb & (gb - 1)) == 0 && blockDim.z == 1 && threads % 32 == 0 && threads / 32 * gb * 8 <= GAP_PART) {
        bool done;
        if (x.dtype == GAIO_KT_F16)
            done = vec16(x, 8) ? gap_split<__half, 8>(x, y, part) : gap_split<__half, 1>(x, y, part);
        else
            done = vec16(x, 4) ? gap_split<float, 4>(x, y, part) : gap_split<float, 1>(x, y, part);
        if (done) return;
    }
    const uint32_t tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const int lane = (int)(tid & 31u);
    for (int64_t r = ((int64_t)blockIdx.x * threads + tid) >> 5; r < planes; r += ((int64_t)gridDim.x * threads) >> 5) {
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
