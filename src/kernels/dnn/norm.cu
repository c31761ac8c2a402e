// CUDA kernel of gaio_norm (src/dnn/norm.c; host twin in src/dnn/cpu/norm.c), launched
// with 256-thread blocks on a 1-D grid that it strides over. Every normalization comes
// as a LayerNorm over a strided view (dnn/norm_math.h); the front end picks how the
// sets are split (p.mode):
//
//   ROWS    a warp per set whose elements are one unit-stride run of x and y of up to
//           2048 (the transformer's LayerNorm over a packed last axis): each lane loads
//           its elements once, lane-strided so that a warp's loads are contiguous, and
//           keeps them in registers for the variance and the output.
//   THREAD  a thread per set where neighbouring sets are neighbours in memory (x's
//           innermost set dimension has stride 1, its set dimensions do not): a
//           LayerNorm over the channels of a logical [N, H, W, C] stored NHWC, which
//           reads each set H apart. A warp's loads of one element of 32 sets are then
//           contiguous.
//   WARP    a warp per set of up to 4096 elements, anything else.
//   BLOCK   a block per larger set (GroupNorm and InstanceNorm over big planes).
//
// Sums run in f32, in two passes (the mean, then the squared deviations from it), so
// no cancellation: the host kernel sums in f64 and the two agree to rounding. A set is
// read whole before the first element of y is written by the threads that read it
// (the reductions order it), so y may be x itself.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/norm_math.h"

namespace {

enum { BY_THREAD = 0, BY_WARP = 1, BY_BLOCK = 2 };

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The block's total in every thread. The first barrier keeps a previous call's
// readers of sh ahead of this call's writers.
__device__ __forceinline__ float block_sum(float v, float *sh) {
    const int lane = (int)(threadIdx.x & 31u), w = (int)(threadIdx.x >> 5), nw = (int)(blockDim.x >> 5);
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    return warp_sum(lane < nw ? sh[lane] : 0.0f);
}

template <int G>
__device__ __forceinline__ float group_sum(float v, float *sh) {
    if (G == BY_THREAD) return v;
    if (G == BY_WARP) return warp_sum(v);
    return block_sum(v, sh);
}

__device__ __forceinline__ float ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ void st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(float *p, int64_t i, float v) { p[i] = v; }

// Offsets of element i of a set: one multiply when the set is one dimension (the
// common case once the front end has merged what it can), else decoded.
struct elems {
    const gaio_knorm *p;
    bool one;
    int64_t xs, ys, ss, bs;
    __device__ __forceinline__ explicit elems(const gaio_knorm &k) : p(&k), one(k.ndim - k.axis == 1) {
        const int32_t d = k.ndim - 1;
        xs = one ? k.xs[d] : 0, ys = one ? k.ys[d] : 0, ss = one ? k.ss[d] : 0, bs = one ? k.bs[d] : 0;
    }
    __device__ __forceinline__ gaio_knorm_at at(int64_t i) const {
        if (!one) return gaio_knorm_elem(p, i);
        gaio_knorm_at o = {i * xs, i * ys, i * ss, i * bs, 0, 0};
        return o;
    }
};

// Set r by the threads t, t + n, ... of a group of n (one thread, a warp or a block).
template <int G>
__device__ __forceinline__ void norm_set(const gaio_knorm &p, const elems &e, int64_t r, int64_t t, int64_t n,
                                         float *sh) {
    const gaio_knorm_at set = gaio_knorm_set(&p, r);
    float s = 0.0f;
    for (int64_t i = t; i < p.count; i += n) s += gaio_knorm_ld(p.x, p.xdt, set.x + e.at(i).x);
    const float mean = group_sum<G>(s, sh) / (float)p.count;
    float q = 0.0f;
    for (int64_t i = t; i < p.count; i += n) {
        const float d = gaio_knorm_ld(p.x, p.xdt, set.x + e.at(i).x) - mean;
        q += d * d;
    }
    const float rstd = 1.0f / sqrtf(group_sum<G>(q, sh) / (float)p.count + p.epsilon);
    if (t == 0) gaio_knorm_stats(&p, &set, mean, rstd);
    if (!p.y) return;
    for (int64_t i = t; i < p.count; i += n) {
        const gaio_knorm_at a = e.at(i);
        const float v = gaio_knorm_ld(p.x, p.xdt, set.x + a.x);
        gaio_knorm_st(p.y, p.xdt, set.y + a.y, gaio_knorm_out(&p, v, mean, rstd, set.s + a.s, set.b + a.b));
    }
}

// ROWS: K elements a lane at most (count <= 32 K), lane-strided.
template <typename T, int K>
__device__ __forceinline__ void rows(const gaio_knorm &p) {
    const int lane = (int)(threadIdx.x & 31u);
    const int64_t n = p.count, ss = p.ss[p.ndim - 1], bs = p.bs[p.ndim - 1];
    const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < p.sets; r += warps) {
        const gaio_knorm_at set = gaio_knorm_set(&p, r);
        const T *x = (const T *)(uintptr_t)p.x + set.x;
        float v[K];
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int64_t i = lane + 32 * k;
            v[k] = i < n ? ld(x, i) : 0.0f;
            s += v[k];
        }
        const float mean = warp_sum(s) / (float)n;
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < K; k++) {
            const float d = v[k] - mean;
            if (lane + 32 * k < n) q += d * d;
        }
        const float rstd = 1.0f / sqrtf(warp_sum(q) / (float)n + p.epsilon);
        if (lane == 0) gaio_knorm_stats(&p, &set, mean, rstd);
        if (!p.y) continue;
        T *y = (T *)(uintptr_t)p.y + set.y;
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int64_t i = lane + 32 * k;
            if (i < n) st(y, i, gaio_knorm_out(&p, v[k], mean, rstd, set.s + i * ss, set.b + i * bs));
        }
    }
}

template <typename T>
__device__ __forceinline__ void rows_any(const gaio_knorm &p) {
    const int64_t per_lane = (p.count + 31) / 32;
    if (per_lane <= 1) rows<T, 1>(p);
    else if (per_lane <= 2) rows<T, 2>(p);
    else if (per_lane <= 4) rows<T, 4>(p);
    else if (per_lane <= 8) rows<T, 8>(p);
    else if (per_lane <= 16) rows<T, 16>(p);
    else if (per_lane <= 32) rows<T, 32>(p);
    else rows<T, 64>(p);
}

} // namespace

extern "C" __global__ void gaio_dnn_norm(gaio_knorm p) {
    __shared__ float sh[32];
    if (p.mode == GAIO_KNORM_ROWS) {
        if (p.xdt == GAIO_KT_F16)
            rows_any<__half>(p);
        else
            rows_any<float>(p);
        return;
    }
    const elems e(p);
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, threads = (int64_t)gridDim.x * blockDim.x;
    // Each loop's bound is the same for every thread of the group that reduces together.
    if (p.mode == GAIO_KNORM_THREAD) {
        for (int64_t r = tid; r < p.sets; r += threads) norm_set<BY_THREAD>(p, e, r, 0, 1, sh);
    } else if (p.mode == GAIO_KNORM_WARP) {
        for (int64_t r = tid >> 5; r < p.sets; r += threads >> 5) norm_set<BY_WARP>(p, e, r, tid & 31, 32, sh);
    } else {
        for (int64_t r = blockIdx.x; r < p.sets; r += gridDim.x) norm_set<BY_BLOCK>(p, e, r, threadIdx.x, blockDim.x, sh);
    }
}
