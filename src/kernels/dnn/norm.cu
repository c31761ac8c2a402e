// CUDA kernel of gaio_norm (src/dnn/norm.c; host twin in src/dnn/cpu/norm.c), launched
// with 256-thread blocks on a 1-D grid that it strides over. Every normalization comes
// as a LayerNorm over a strided view (dnn/norm_math.h); the front end picks how the
// sets are split (p.mode):
//
//   ROWS    a warp per set whose elements are one unit-stride run of x and y of up to
//           1024 (the transformer's LayerNorm over a packed last axis): each lane loads
//           its elements once, lane-strided so that a warp's loads are contiguous, and
//           keeps them in registers for the variance and the output. A kernel of its
//           own, gaio_dnn_norm_rows; the other splits are gaio_dnn_norm's.
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

// The strides of the innermost dimension (constant indices: see norm_math.h).
__device__ __forceinline__ gaio_knorm_at last_strides(const gaio_knorm &k) {
    gaio_knorm_at o = {0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int32_t d = 0; d < GAIO_KNORM_MAX_NDIM; d++)
        if (d == k.ndim - 1) o.x = k.xs[d], o.y = k.ys[d], o.s = k.ss[d], o.b = k.bs[d];
    return o;
}

// Offsets of element i of a set: one multiply when the set is one dimension (the
// common case once the front end has merged what it can: a LayerNorm's, an NCHW
// GroupNorm's), two 32-bit divisions for two (an NHWC GroupNorm's [H W, C / G]),
// else decoded in 64 bits.
struct elems {
    const gaio_knorm *p;
    int inner; // dimensions of a set; 3: any
    gaio_knorm_at s1, s0; // strides of the innermost and the one before
    uint32_t n1;          // the innermost's size
    __device__ __forceinline__ explicit elems(const gaio_knorm &k) : p(&k) {
        inner = k.ndim - k.axis;
        s1 = last_strides(k);
        gaio_knorm_at z = {0, 0, 0, 0, 0, 0};
        s0 = z, n1 = 1;
#pragma unroll
        for (int32_t d = 1; d < GAIO_KNORM_MAX_NDIM; d++)
            if (d == k.ndim - 1) s0.x = k.xs[d - 1], s0.y = k.ys[d - 1], s0.s = k.ss[d - 1], s0.b = k.bs[d - 1],
                                 n1 = (uint32_t)k.shape[d];
        if (inner > 2 || (inner == 2 && k.count >= INT32_MAX)) inner = 3;
    }
    __device__ __forceinline__ gaio_knorm_at at(int64_t i) const {
        if (inner == 1) {
            gaio_knorm_at o = {i * s1.x, i * s1.y, i * s1.s, i * s1.b, 0, 0};
            return o;
        }
        if (inner == 2) {
            const int64_t a = (uint32_t)i / n1, b = (uint32_t)i % n1;
            gaio_knorm_at o = {a * s0.x + b * s1.x, a * s0.y + b * s1.y, a * s0.s + b * s1.s, a * s0.b + b * s1.b, 0, 0};
            return o;
        }
        return gaio_knorm_elem(p, i);
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

// ROWS: K elements a lane at most (count <= 32 K), lane-strided. The front end sends
// only [sets | count] views here (one set dimension, one unit-stride element dimension
// of x and y) whose scale and bias are the same for every set (a LayerNorm's), so the
// block stages them once in shared memory (1 and 0 where absent) and the output loop
// is a multiply-add: loading them there, with their dtypes, made the compiler hoist 2K
// loads ahead and spill.
template <typename T, int K>
__device__ __forceinline__ void rows(const gaio_knorm &p, float *sc, float *bi) {
    const int lane = (int)(threadIdx.x & 31u);
    const int n = (int)p.count; // <= 1024
    const int64_t xs = p.xs[0], ys = p.ys[0], ms = p.ms[0], rs = p.rs[0];
    const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < p.sets; r += warps) {
        const T *x = (const T *)(uintptr_t)p.x + r * xs;
        float v[K];
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int i = lane + 32 * k;
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
        if (lane == 0 && p.mean) gaio_knorm_st(p.mean, p.mdt, r * ms, mean);
        if (lane == 0 && p.rstd) gaio_knorm_st(p.rstd, p.rdt, r * rs, rstd);
        if (!p.y) continue;
        T *y = (T *)(uintptr_t)p.y + r * ys;
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int i = lane + 32 * k;
            if (i < n) st(y, i, (v[k] - mean) * rstd * sc[i] + bi[i]);
        }
    }
}

// ROWS of f16 in 16-byte vectors (count a multiple of 8, rows and bases aligned): a
// group of G lanes a row, 32 / G rows a warp at once, V vectors a lane. ConvNeXt's
// LayerNorms over 96 to 768 channels ran at 5x their bytes' time a lane an element
// (2-byte loads, one row a warp in flight); here a row of 96 takes 12 loads of 16
// bytes from half a warp. The sums' order differs from the element-wise path's; the
// host kernel's f64 sums agree with either to rounding.
template <int G, int V> __device__ __forceinline__ void rows_vec(const gaio_knorm &p, const float *sc, const float *bi) {
    const int lane = (int)(threadIdx.x & 31u), t = lane % G;
    const int nvec = (int)p.count / 8;
    const int64_t xs = p.xs[0], ys = p.ys[0], ms = p.ms[0], rs = p.rs[0];
    const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t r0 = (((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * (32 / G); r0 < p.sets;
         r0 += warps * (32 / G)) {
        const int64_t r = r0 + lane / G;
        const bool row = r < p.sets;
        float v[V][8];
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = t + G * k;
            uint4 u = make_uint4(0u, 0u, 0u, 0u);
            if (row && j < nvec) u = __ldg(reinterpret_cast<const uint4 *>((uintptr_t)p.x) + (r * xs) / 8 + j);
            const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float2 f = __half22float2(h[e]);
                v[k][2 * e] = f.x, v[k][2 * e + 1] = f.y;
                s += f.x + f.y;
            }
        }
#pragma unroll
        for (int o = G / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        const float mean = s / (float)p.count;
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++)
            if (t + G * k < nvec)
#pragma unroll
                for (int e = 0; e < 8; e++) q += (v[k][e] - mean) * (v[k][e] - mean);
#pragma unroll
        for (int o = G / 2; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
        const float rstd = 1.0f / sqrtf(q / (float)p.count + p.epsilon);
        if (row && t == 0 && p.mean) gaio_knorm_st(p.mean, p.mdt, r * ms, mean);
        if (row && t == 0 && p.rstd) gaio_knorm_st(p.rstd, p.rdt, r * rs, rstd);
        if (!p.y || !row) continue;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = t + G * k;
            if (j >= nvec) continue;
            uint4 u;
            __half2 *h = reinterpret_cast<__half2 *>(&u);
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = 8 * j + 2 * e;
                h[e] = __floats2half2_rn((v[k][2 * e] - mean) * rstd * sc[i] + bi[i],
                                         (v[k][2 * e + 1] - mean) * rstd * sc[i + 1] + bi[i + 1]);
            }
            reinterpret_cast<uint4 *>((uintptr_t)p.y)[(r * ys) / 8 + j] = u;
        }
    }
}

__device__ __forceinline__ void rows_vec_any(const gaio_knorm &p, const float *sc, const float *bi) {
    const int64_t nvec = p.count / 8;
    if (nvec <= 8) rows_vec<8, 1>(p, sc, bi);
    else if (nvec <= 16) rows_vec<16, 1>(p, sc, bi);
    else if (nvec <= 32) rows_vec<32, 1>(p, sc, bi);
    else if (nvec <= 64) rows_vec<32, 2>(p, sc, bi);
    else rows_vec<32, 4>(p, sc, bi); /* count <= 1024: 128 vectors */
}

template <typename T>
__device__ __forceinline__ void rows_any(const gaio_knorm &p, float *sc, float *bi) {
    const int64_t per_lane = (p.count + 31) / 32;
    if (per_lane <= 1) rows<T, 1>(p, sc, bi);
    else if (per_lane <= 2) rows<T, 2>(p, sc, bi);
    else if (per_lane <= 4) rows<T, 4>(p, sc, bi);
    else if (per_lane <= 8) rows<T, 8>(p, sc, bi);
    else if (per_lane <= 16) rows<T, 16>(p, sc, bi);
    else rows<T, 32>(p, sc, bi);
}

} // namespace

// ROWS is a kernel of its own: its registers (a lane's elements) would otherwise set
// the register count, and so the occupancy, of every other mode.
extern "C" __global__ void __launch_bounds__(256) gaio_dnn_norm_rows(gaio_knorm p) {
    __shared__ float sc[1024], bi[1024];
    const int64_t ss = p.ss[1], bs = p.bs[1];
    for (int i = (int)threadIdx.x; i < (int)p.count; i += (int)blockDim.x) {
        sc[i] = p.scale ? gaio_knorm_ld(p.scale, p.sdt, i * ss) : 1.0f;
        bi[i] = p.bias ? gaio_knorm_ld(p.bias, p.bdt, i * bs) : 0.0f;
    }
    __syncthreads();
    if (p.xdt == GAIO_KT_F16)
        rows_any<__half>(p, sc, bi);
    else
        rows_any<float>(p, sc, bi);
}

// ROWS of f16 vectors (src/dnn/norm.c sends them when rows_vec's conditions hold): a
// kernel of its own too, with its own registers. The element-wise ROWS kernel takes
// 116 for its rows of up to 1024 (32 a lane), which held every launch of it to two
// blocks an SM.
extern "C" __global__ void __launch_bounds__(256) gaio_dnn_norm_rows8(gaio_knorm p) {
    __shared__ float sc[1024], bi[1024];
    const int64_t ss = p.ss[1], bs = p.bs[1];
    for (int i = (int)threadIdx.x; i < (int)p.count; i += (int)blockDim.x) {
        sc[i] = p.scale ? gaio_knorm_ld(p.scale, p.sdt, i * ss) : 1.0f;
        bi[i] = p.bias ? gaio_knorm_ld(p.bias, p.bdt, i * bs) : 0.0f;
    }
    __syncthreads();
    rows_vec_any(p, sc, bi);
}

extern "C" __global__ void __launch_bounds__(256) gaio_dnn_norm(gaio_knorm p) {
    __shared__ float sh[32];
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
