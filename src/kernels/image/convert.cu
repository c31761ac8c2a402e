// CUDA kernels of the value and layout ops: gaio_convert, gaio_normalize,
// gaio_reformat (host twins in src/image/cpu/convert*.c).
//
// All three are bandwidth-bound. The ops merge rows that follow each other without a
// gap (src/image/convert.c), so a packed batch is one long row. A block is bx x by
// threads: bx threads along a row, by rows at a time, striding over the rows of the
// whole batch. Each thread moves 64 bytes of the wider side in 16-byte vectors (and
// the matching narrower vectors), every access instruction contiguous across the
// warp. Vectors need both rows to reach a vector boundary after the same number of
// elements; that is decided per row at run time (packed images, aligned pitches and
// ROI views of alike images qualify), the few elements before it go one by one, and
// rows that never line up are done element by element, still coalesced. The dtype
// switch sits at the top of each kernel, one template instance per case.
//
// Numbers match the host kernels bit for bit: the same float operations in the same
// order, with __fmul_rn / __fadd_rn so that nvcc cannot contract them into FMAs;
// kimg.h's rounding and saturation, in forms that keep off the conversion unit; and
// binary16 conversions by the hardware (round to nearest even, as kimg.h's helpers)
// with NaNs given kimg.h's bits. Every f32 input to f16, u8, u16 and s16 was checked
// against the CPU backend on an H100 (no difference); NaNs made by scaling may differ
// in sign and payload between x86 and the GPU (they stay NaN).
#include <cuda_fp16.h>
#include <stdint.h>

#include "image/kimg.h"

#include "image/kargs.h"
#define MAX_CHANNELS GAIO_KCHAN_MAX

namespace {

__device__ __forceinline__ float h2f(uint16_t h) {
    float f = __half2float(__ushort_as_half(h));
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) // NaN: gaio_k_f16_to_f32 keeps the payload
        f = __uint_as_float(((uint32_t)(h & 0x8000u) << 16) | 0x7f800000u | ((uint32_t)(h & 0x3ffu) << 13));
    return f;
}

__device__ __forceinline__ uint16_t f2h(float f) {
    uint16_t h = __half_as_ushort(__float2half_rn(f));
    if (f != f) h = (uint16_t)(((__float_as_uint(f) >> 16) & 0x8000u) | 0x7e00u); // gaio_k_f32_to_f16's NaN
    return h;
}

// Integers to float and back without the conversion unit, which runs at a quarter of
// the rate of float adds and would bound u8 -> u8 and the like: an integer below 2^23
// ORed into the mantissa of 2^23 is 2^23 + v, exactly; and adding 1.5 * 2^23 to a
// float of magnitude below 2^22 rounds it to an integer, to nearest even, left in the
// low mantissa bits. Clamping first (fmaxf and fminf return the number when the other
// operand is NaN) gives kimg.h's gaio_k_sat_* results for every input, NaN included.
__device__ __forceinline__ float small_uint_to_float(uint32_t v) {
    return __fsub_rn(__uint_as_float(0x4b000000u | v), 8388608.0f);
}
__device__ __forceinline__ uint32_t round_bits(float c) { return __float_as_uint(__fadd_rn(c, 12582912.0f)); }

// Element types by gaio dtype: load as float, store with rounding and saturation.
template <int DT> struct El;
template <> struct El<GAIO_K_U8> {
    typedef uint8_t T;
    static __device__ __forceinline__ float get(T v) { return small_uint_to_float(v); }
    static __device__ __forceinline__ T put(float v) { return (T)round_bits(fminf(fmaxf(v, 0.0f), 255.0f)); }
};
template <> struct El<GAIO_K_U16> {
    typedef uint16_t T;
    static __device__ __forceinline__ float get(T v) { return small_uint_to_float(v); }
    static __device__ __forceinline__ T put(float v) { return (T)round_bits(fminf(fmaxf(v, 0.0f), 65535.0f)); }
};
template <> struct El<GAIO_K_S16> {
    typedef int16_t T;
    static __device__ __forceinline__ float get(T v) {
        return __fsub_rn(__uint_as_float(0x4b000000u | (uint32_t)(v + 32768)), 8421376.0f); // 2^23 + 2^15
    }
    static __device__ __forceinline__ T put(float v) {
        const float c = v != v ? 0.0f : fminf(fmaxf(v, -32768.0f), 32767.0f);
        return (T)(uint16_t)round_bits(c);
    }
};
template <> struct El<GAIO_K_F16> {
    typedef uint16_t T;
    static __device__ __forceinline__ float get(T v) { return h2f(v); }
    static __device__ __forceinline__ T put(float v) { return f2h(v); }
};
template <> struct El<GAIO_K_F32> {
    typedef float T;
    static __device__ __forceinline__ float get(T v) { return v; }
    static __device__ __forceinline__ T put(float v) { return v; }
};

// N elements from / to an address aligned to their size in bytes (4, 8, or a multiple
// of 16): one access of that width, or several of 16 bytes.
template <int B> struct Word;
template <> struct Word<2> { typedef uint16_t T; };
template <> struct Word<4> { typedef uint32_t T; };
template <> struct Word<8> { typedef uint2 T; };
template <> struct Word<16> { typedef uint4 T; };

template <typename T, int N> struct Chunk {
    static constexpr int B = (int)(N * sizeof(T));
    static constexpr int WB = B >= 16 ? 16 : B; // bytes per access
    static constexpr int W = B / WB;            // accesses
    typedef typename Word<WB>::T U;
    union Bits {
        U w[W];
        T e[N];
    };
};

template <typename T, int N> __device__ __forceinline__ void vload(const T *p, T (&e)[N]) {
    typedef Chunk<T, N> C;
    typename C::Bits u;
    const typename C::U *q = reinterpret_cast<const typename C::U *>(p);
#pragma unroll
    for (int k = 0; k < C::W; k++) u.w[k] = q[k];
#pragma unroll
    for (int i = 0; i < N; i++) e[i] = u.e[i];
}

template <typename T, int N> __device__ __forceinline__ void vstore(T *p, const T (&e)[N]) {
    typedef Chunk<T, N> C;
    typename C::Bits u;
#pragma unroll
    for (int i = 0; i < N; i++) u.e[i] = e[i];
    typename C::U *q = reinterpret_cast<typename C::U *>(p);
#pragma unroll
    for (int k = 0; k < C::W; k++) q[k] = u.w[k];
}

// Elements from p to the next address aligned to V elements (V * sizeof(T) is a
// power of two; p is aligned to sizeof(T)).
template <typename T, int V> __device__ __forceinline__ int head(const void *p) {
    constexpr uint32_t A = V * sizeof(T);
    return (int)(((A - (uint32_t)((uintptr_t)p & (A - 1))) & (A - 1)) / sizeof(T));
}

// ---- gaio_img_convert ----------------------------------------------------------

template <int SD, int DD, bool PLAIN> struct ConvertOp {
    float a, b;
    __device__ __forceinline__ typename El<DD>::T operator()(typename El<SD>::T v) const {
        if constexpr (PLAIN && SD == DD) return v; // a copy
        else if constexpr (PLAIN) return El<DD>::put(El<SD>::get(v));
        else return El<DD>::put(__fadd_rn(__fmul_rn(El<SD>::get(v), a), b));
    }
};

// Elements per thread: K steps of V, V filling 16 bytes of the wider side. Step k of
// thread t covers elements [(k * bx + t) * V, +V) of the block's span, so that every
// access instruction of a warp is contiguous on both sides; a thread issues its K
// loads before its stores.
template <typename TS, typename TD> struct Steps {
    static constexpr int W = (int)(sizeof(TS) > sizeof(TD) ? sizeof(TS) : sizeof(TD)); // the wider size
    static constexpr int V = 16 / W;
    static constexpr int K = W == 1 ? 2 : 4; // u8 -> u8: 2 x 16 elements keeps registers in bounds
    static constexpr int N = V * K; // src/image/convert.c and normalize.c size their grids alike
};

template <int SD, int DD, bool PLAIN>
__device__ __forceinline__ void convert_rows(const gaio_kimg &s, const gaio_kimg &d, float a, float b) {
    typedef typename El<SD>::T TS;
    typedef typename El<DD>::T TD;
    constexpr int V = Steps<TS, TD>::V, K = Steps<TS, TD>::K, N = Steps<TS, TD>::N;
    const ConvertOp<SD, DD, PLAIN> op{a, b};
    const int len = s.width * s.channels; // below 2^30 (the ops merge rows up to that): 32-bit indices
    const int64_t rows = (int64_t)s.batch * s.planes * s.height;
    const int bx = blockDim.x, tx = threadIdx.x, blk = blockIdx.x * bx * N;
    if (blk >= len) return;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += (int64_t)gridDim.y * blockDim.y) {
        const int64_t z = r / s.height, y = r - z * s.height;
        const TS *sr = (const TS *)gaio_kimg_row(&s, z, y);
        TD *dr = (TD *)gaio_kimg_row(&d, z, y);
        // Vectors where both rows reach a vector boundary after the same h elements
        // (packed images, and ROI views of equally laid out images); the choice is per
        // row, the same for every thread of it.
        const int h = head<TS, V>(sr);
        if (h == head<TD, V>(dr)) {
            if (blockIdx.x == 0 && tx < h && tx < len) dr[tx] = op(sr[tx]);
            const int body = len - h;
            TS in[K][V];
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int xb = blk + (k * bx + tx) * V;
                if (xb + V <= body) vload(sr + h + xb, in[k]);
            }
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int xb = blk + (k * bx + tx) * V;
                if (xb + V <= body) {
                    TD out[V];
#pragma unroll
                    for (int i = 0; i < V; i++) out[i] = op(in[k][i]);
                    vstore(dr + h + xb, out);
                } else if (xb < body) {
                    for (int x = h + xb; x < len; x++) dr[x] = op(sr[x]);
                }
            }
        } else { // one element at a time, coalesced
#pragma unroll 4
            for (int j = 0; j < N; j++) {
                const int x = blk + j * bx + tx;
                if (x < len) dr[x] = op(sr[x]);
            }
        }
    }
}

} // namespace

extern "C" __global__ void __launch_bounds__(256, 3)
    gaio_img_convert(gaio_kimg src, gaio_kimg dst, float scale, float offset) {
    const bool plain = scale == 1.0f && offset == 0.0f;
#define GAIO_CVT_CASE(S, D)                                                                                     \
    case (S) * 8 + (D):                                                                                         \
        if (plain) convert_rows<S, D, true>(src, dst, scale, offset);                                          \
        else convert_rows<S, D, false>(src, dst, scale, offset);                                               \
        return;
#define GAIO_CVT_FROM(S)                                                                                        \
    GAIO_CVT_CASE(S, GAIO_K_U8)                                                                                 \
    GAIO_CVT_CASE(S, GAIO_K_U16) GAIO_CVT_CASE(S, GAIO_K_S16) GAIO_CVT_CASE(S, GAIO_K_F16) GAIO_CVT_CASE(S, GAIO_K_F32)
    switch (src.dtype * 8 + dst.dtype) {
        GAIO_CVT_FROM(GAIO_K_U8)
        GAIO_CVT_FROM(GAIO_K_U16)
        GAIO_CVT_FROM(GAIO_K_S16)
        GAIO_CVT_FROM(GAIO_K_F16)
        GAIO_CVT_FROM(GAIO_K_F32)
    default: return;
    }
#undef GAIO_CVT_FROM
#undef GAIO_CVT_CASE
}

// ---- gaio_img_normalize: dst = (src * scale - mean[c]) * inv[c] -------------------

namespace {

template <int SD, int DD>
__device__ __forceinline__ void normalize_rows(const gaio_kimg &s, const gaio_kimg &d, float sc, const float *mean,
                                               const float *inv) {
    typedef typename El<SD>::T TS;
    typedef typename El<DD>::T TD;
    constexpr int V = Steps<TS, TD>::V, K = Steps<TS, TD>::K, N = Steps<TS, TD>::N;
    const int ch = s.channels; // HWC: the channel of element x is x % ch; CHW: ch is 1 and the plane is the channel
    const int len = s.width * ch; // below 2^30 (the ops merge rows up to that): 32-bit indices
    const int64_t rows = (int64_t)s.batch * s.planes * s.height;
    const int bx = blockDim.x, tx = threadIdx.x, blk = blockIdx.x * bx * N;
    if (blk >= len) return;
    auto f = [&](TS v, int c) {
        return El<DD>::put(__fmul_rn(__fsub_rn(__fmul_rn(El<SD>::get(v), sc), mean[c]), inv[c]));
    };
    const uint32_t uch = (uint32_t)ch, step = (uint32_t)(bx * V) % uch;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += (int64_t)gridDim.y * blockDim.y) {
        const int64_t z = r / s.height, y = r - z * s.height;
        const int cp = (int)(z % s.planes);
        const TS *sr = (const TS *)gaio_kimg_row(&s, z, y);
        TD *dr = (TD *)gaio_kimg_row(&d, z, y);
        auto chan = [&](int x) { return ch > 1 ? (int)((uint32_t)x % uch) : cp; };
        const int h = head<TS, V>(sr);
        if (h == head<TD, V>(dr)) {
            if (blockIdx.x == 0 && tx < h && tx < len) dr[tx] = f(sr[tx], chan(tx));
            const int body = len - h;
            TS in[K][V];
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int xb = blk + (k * bx + tx) * V;
                if (xb + V <= body) vload(sr + h + xb, in[k]);
            }
            uint32_t c0 = (uint32_t)chan(h + blk + tx * V); // the channel of step k's first element
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int xb = blk + (k * bx + tx) * V;
                if (xb + V <= body) {
                    TD out[V];
                    uint32_t c = c0;
#pragma unroll
                    for (int i = 0; i < V; i++) {
                        out[i] = f(in[k][i], (int)c);
                        if (ch > 1 && ++c == uch) c = 0;
                    }
                    vstore(dr + h + xb, out);
                } else if (xb < body) {
                    for (int x = h + xb; x < len; x++) dr[x] = f(sr[x], chan(x));
                }
                if (ch > 1) {
                    c0 += step;
                    if (c0 >= uch) c0 -= uch;
                }
            }
        } else {
#pragma unroll 4
            for (int j = 0; j < N; j++) {
                const int x = blk + j * bx + tx;
                if (x < len) dr[x] = f(sr[x], chan(x));
            }
        }
    }
}

} // namespace

extern "C" __global__ void __launch_bounds__(256, 3)
    gaio_img_normalize(gaio_kimg src, gaio_kimg dst, float scale, gaio_kchan mean, gaio_kchan inv) {
    __shared__ float sm_mean[MAX_CHANNELS], sm_inv[MAX_CHANNELS];
    const int c = src.channels > src.planes ? src.channels : src.planes;
    for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < c; i += blockDim.x * blockDim.y) {
        sm_mean[i] = mean.v[i];
        sm_inv[i] = inv.v[i];
    }
    __syncthreads();
#define GAIO_NORM_CASE(S, D)                                                                                    \
    case (S) * 8 + (D): normalize_rows<S, D>(src, dst, scale, sm_mean, sm_inv); return;
#define GAIO_NORM_FROM(S) GAIO_NORM_CASE(S, GAIO_K_F16) GAIO_NORM_CASE(S, GAIO_K_F32)
    switch (src.dtype * 8 + dst.dtype) {
        GAIO_NORM_FROM(GAIO_K_U8)
        GAIO_NORM_FROM(GAIO_K_U16)
        GAIO_NORM_FROM(GAIO_K_S16)
        GAIO_NORM_FROM(GAIO_K_F16)
        GAIO_NORM_FROM(GAIO_K_F32)
    default: return;
    }
#undef GAIO_NORM_FROM
#undef GAIO_NORM_CASE
}

// ---- gaio_img_reformat: HWC <-> CHW ---------------------------------------------
//
// With up to 4 channels a thread takes P = 16 / size pixels, a 16-byte vector of each
// plane, C vectors of the interleaved row; the transposition happens in registers
// (byte permutes for u8). Plane accesses are contiguous across a warp. HWC -> CHW
// reads the interleaved side C vectors apart per lane, which L1 merges into whole
// lines; CHW -> HWC would write it that way, which L2 pays for in partial sectors, so
// a warp passes its interleaved vectors through shared memory and stores them
// contiguously. Vectors need every plane's row and the interleaved row to reach a
// 16-byte boundary at the same pixel (decided per row: packed images and ROI views
// of aligned ones do). More channels, or rows that don't line up: one element at a
// time, in the order of the side written.

namespace {

constexpr int RF_WARPS = 8; // 256 threads

template <typename T, int C, bool TO_PLANAR>
__device__ __forceinline__ void reformat_rows(const gaio_kimg &s, const gaio_kimg &d, int channels, uint4 *stage) {
    constexpr int P = C > 0 ? (int)(16 / sizeof(T)) : 1; // pixels per thread
    const int nc = C > 0 ? C : channels;
    const gaio_kimg &pl = TO_PLANAR ? d : s, &il = TO_PLANAR ? s : d;
    // Rows hold under 2^28 pixels (src/image/reformat.c merges rows up to that): 32-bit
    // indices, but for the element offsets of more than 4 channels.
    const int w = s.width, bx = blockDim.x, tx = threadIdx.x, blk = blockIdx.x * bx * P;
    const int64_t rows = (int64_t)s.batch * s.height;
    if (blk >= w) return;
    const int lane = (int)(threadIdx.x & 31);
    uint4 *ws = stage + ((threadIdx.y * blockDim.x + threadIdx.x) >> 5) * (32 * 4); // this warp's 32 x 4 vectors
    const bool planes_apart16 = nc == 1 || (pl.plane_pitch & 15) == 0;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += (int64_t)gridDim.y * blockDim.y) {
        const int64_t n = r / s.height, y = r - n * s.height;
        T *iv = (T *)gaio_kimg_row(&il, n, y);
        char *p0 = gaio_kimg_row(&pl, n * nc, y);
        auto plane = [&](int c) { return (T *)(p0 + (uint64_t)c * pl.plane_pitch); };
        if constexpr (C > 0) {
            const int h = head<T, P>(plane(0));
            if (planes_apart16 && (((uintptr_t)(iv + h * C)) & 15) == 0) {
                auto pixel = [&](int p) {
#pragma unroll
                    for (int c = 0; c < C; c++) {
                        if constexpr (TO_PLANAR) plane(c)[p] = iv[p * C + c];
                        else iv[p * C + c] = plane(c)[p];
                    }
                };
                if (blockIdx.x == 0 && tx < h && tx < w) pixel(tx);
                const int body = w - h, pb = blk + tx * P; // body pixels, this thread's first
                const bool full = pb + P <= body;
                T v[C * P];
                if constexpr (TO_PLANAR) {
                    if (full) {
                        vload(iv + (h + pb) * C, v);
#pragma unroll
                        for (int c = 0; c < C; c++) {
                            T o[P];
#pragma unroll
                            for (int p = 0; p < P; p++) o[p] = v[p * C + c];
                            vstore(plane(c) + h + pb, o);
                        }
                    }
                } else {
                    if (full) {
#pragma unroll
                        for (int c = 0; c < C; c++) {
                            T o[P];
                            vload(plane(c) + h + pb, o);
#pragma unroll
                            for (int p = 0; p < P; p++) v[p * C + c] = o[p];
                        }
                        // this thread's C vectors, in the order they lie in the row
#pragma unroll
                        for (int k = 0; k < C; k++) {
                            T o[P];
#pragma unroll
                            for (int p = 0; p < P; p++) o[p] = v[k * P + p];
                            vstore(reinterpret_cast<T *>(ws + lane * C + k), o);
                        }
                    }
                    __syncwarp();
                    const int wp = blk + (tx & ~31) * P; // the warp's first body pixel
                    const int groups = (body - wp) / P;
                    const int nfull = groups <= 0 ? 0 : groups >= 32 ? 32 : groups;
                    T *out = iv + (h + wp) * C;
#pragma unroll
                    for (int k = 0; k < C; k++) {
                        const int q = k * 32 + lane;
                        if (q < nfull * C) reinterpret_cast<uint4 *>(out)[q] = ws[q];
                    }
                    __syncwarp(); // before the next row reuses the stage
                }
                if (!full && pb < body)
                    for (int p = h + pb; p < w; p++) pixel(p);
                continue;
            }
        }
        // One element at a time, in the order of the side written (coalesced stores),
        // without a division per element.
        const int bw = w - blk < bx * P ? w - blk : bx * P; // this block's pixels
        if constexpr (TO_PLANAR) {
            for (int c = 0; c < nc; c++) {
                T *o = plane(c) + blk;
                const T *i = iv + (int64_t)blk * nc + c;
                for (int p = tx; p < bw; p += bx) o[p] = i[(int64_t)p * nc];
            }
        } else {
            const int total = bw * nc, dq = bx / nc, dc = bx - dq * nc;
            int q = tx / nc, c = tx - q * nc; // pixel and channel of element e
            T *o = iv + (int64_t)blk * nc;
            for (int e = tx; e < total; e += bx) {
                o[e] = plane(c)[blk + q];
                q += dq;
                c += dc;
                if (c >= nc) {
                    c -= nc;
                    q++;
                }
            }
        }
    }
}

template <typename T, bool TO_PLANAR>
__device__ __forceinline__ void reformat_channels(const gaio_kimg &s, const gaio_kimg &d, int c, uint4 *stage) {
    switch (c) {
    case 1: reformat_rows<T, 1, TO_PLANAR>(s, d, c, stage); return;
    case 2: reformat_rows<T, 2, TO_PLANAR>(s, d, c, stage); return;
    case 3: reformat_rows<T, 3, TO_PLANAR>(s, d, c, stage); return;
    case 4: reformat_rows<T, 4, TO_PLANAR>(s, d, c, stage); return;
    default: reformat_rows<T, 0, TO_PLANAR>(s, d, c, stage); return;
    }
}

template <typename T>
__device__ __forceinline__ void reformat_dir(const gaio_kimg &s, const gaio_kimg &d, uint4 *stage) {
    // With one channel both sides are a single plane: a copy either way.
    if (s.planes == 1) reformat_channels<T, true>(s, d, d.planes, stage);
    else reformat_channels<T, false>(s, d, s.planes, stage);
}

} // namespace

extern "C" __global__ void __launch_bounds__(256, 3) gaio_img_reformat(gaio_kimg src, gaio_kimg dst) {
    __shared__ uint4 stage[RF_WARPS * 32 * 4];
    switch (src.dtype) {
    case GAIO_K_U8: reformat_dir<uint8_t>(src, dst, stage); return;
    case GAIO_K_F32: reformat_dir<uint32_t>(src, dst, stage); return;
    default: reformat_dir<uint16_t>(src, dst, stage); return;
    }
}
