// CUDA kernels of gaio_resize, gaio_crop_resize and gaio_crop_resize_varshape
// (host twins: src/image/cpu/resize.c; launch shape: src/image/resize.c). One
// extern "C" kernel per mode, dtype and interleaved channel count (CHW planes are
// one channel each); AREA picks its box or its enlarging bilinear per image.
//
// A block makes a band of output rows of one column tile (grid x: tiles, y: bands,
// z: planes of the launch, strided). Like the host kernels' vertical-first order:
//   0. the x taps of the tile and the y taps of the band go to shared memory once
//      (offsets and weights from image/resize_math.h: both backends sample the same
//      pixels with the same weights);
//   1. vertical: for each output row the threads load the source columns the tile
//      reads from every tap row, in aligned chunks (coalesced), and store
//      sum_k wy[k] * src(row k) per element in shared memory. Each thread's loads of
//      a row are issued together, and those of the next row before the horizontal
//      pass of this one, so loads stay in flight;
//   2. horizontal: linear and cubic make one output element a thread, nearest and
//      area one pixel (consecutive threads, consecutive outputs), every tap a
//      shared-memory read.
// On an H100 these kernels are limited by the L1/shared-memory pipe and by
// instruction issue, not by DRAM (Nsight Compute: linear -> 720p at 77% L1 and
// 3.1 IPC with DRAM at 48%); the layout choices below are the measured best of
// those tried (docs/perf-notes.md lists what was tried and what it gave).
// u8 LINEAR / CUBIC / AREA-enlarging use the host's fixed point (11-bit weights,
// exact int32 sums, one 22-bit rounding shift; the vertical sums by dp2a on byte
// pairs): the same integers as the CPU. The rest is float, summed in the host's order.
//
// The chunked path needs every tap row to share one alignment (row_pitch a
// multiple of the chunk); other images stage element by element. Reading whole
// aligned chunks can touch up to 15 bytes beside the ROI, never outside the
// 16-byte granule of a byte it needs (so never outside its allocation's pages);
// those bytes are never used.
#include <type_traits>

#include "image/kimg.h"
#include "image/resize_math.h"
#include "image/resize_span.h"
#include "kernels/image/dp2a.cuh"

namespace {

enum { FK_NN, FK_LIN, FK_CUB, FK_BOX };

// The taps of one output on an axis, as a filter kind fixed at compile time.
template <int FK> struct Taps;

template <> struct Taps<FK_NN> {
    int32_t i0;
    __device__ __forceinline__ void make(const gaio_rs_axis *a, int32_t d) { i0 = gaio_rs_nearest(a, d); }
    __device__ __forceinline__ int32_t idx(int) const { return i0; }
    __device__ __forceinline__ float w(int) const { return 1.f; }
};

template <> struct Taps<FK_LIN> {
    int32_t i0, i1;
    float f;
    __device__ __forceinline__ void make(const gaio_rs_axis *a, int32_t d) { gaio_rs_linear(a, d, &i0, &i1, &f); }
    __device__ __forceinline__ int32_t idx(int k) const { return k ? i1 : i0; }
    __device__ __forceinline__ float w(int k) const { return k ? f : 1.f - f; }
};

template <> struct Taps<FK_CUB> {
    int32_t i[4];
    float ww[4];
    __device__ __forceinline__ void make(const gaio_rs_axis *a, int32_t d) { gaio_rs_cubic(a, d, i, ww); }
    __device__ __forceinline__ int32_t idx(int k) const { return i[k]; }
    __device__ __forceinline__ float w(int k) const { return ww[k]; }
};

// Work type and weights: 11-bit fixed point in int32, or float.
template <bool FIX> struct Work;
template <> struct Work<true> {
    typedef int32_t T;
    static __device__ __forceinline__ int32_t weight(float w) { return (int32_t)gaio_k_rint(w * 2048.f); }
};
template <> struct Work<false> {
    typedef float T;
    static __device__ __forceinline__ float weight(float w) { return w; }
};

// Output conversions (rounding, saturation): as gaio_k_store, or the fixed point's shift.
template <class E> struct Elem;
template <> struct Elem<uint8_t> {
    static __device__ __forceinline__ uint8_t store(float v) { return gaio_k_sat_u8(v); }
    static __device__ __forceinline__ uint8_t store(int32_t v) {
        v = (v + (1 << 21)) >> 22;
        return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
};
template <> struct Elem<uint16_t> {
    static __device__ __forceinline__ uint16_t store(float v) { return gaio_k_sat_u16(v); }
};
template <> struct Elem<float> {
    static __device__ __forceinline__ float store(float v) { return v; }
};

template <class E, class W> __device__ __forceinline__ W conv(E v);
template <> __device__ __forceinline__ float conv<uint8_t, float>(uint8_t v) { return (float)v; }
template <> __device__ __forceinline__ int32_t conv<uint8_t, int32_t>(uint8_t v) { return (int32_t)v; }
template <> __device__ __forceinline__ float conv<uint16_t, float>(uint16_t v) { return (float)v; }
template <> __device__ __forceinline__ float conv<float, float>(float v) { return v; }

// Elements of a staged chunk.
template <class E, class Q> __device__ __forceinline__ E chunk_at(const Q &q, int e) {
    const E *p = reinterpret_cast<const E *>(&q);
    return p[e];
}


constexpr int kThreads = 128;
constexpr int kMaxBand = 16; // output rows per block at most (RS_MAX_BAND in src/image/resize.c)

// The taps of one output on an axis, in shared memory (computed once per block):
// x taps as element offsets into the staged row (channel 0), y taps as source
// rows; weights in the work type. A box packs its first offset and its tap count
// (offsets and rows stay below 2^24, counts below 2^8) and keeps three weights.
template <int FK, bool FIX> struct Tap {
    static constexpr int K = FK == FK_NN ? 1 : FK == FK_LIN ? 2 : 4;
    int32_t o[K];
    typename Work<FIX>::T w[K];
    __device__ __forceinline__ void set(int k, int32_t off, typename Work<FIX>::T wt) { o[k] = off, w[k] = wt; }
    __device__ __forceinline__ int32_t off(int k) const { return o[k]; }
    __device__ __forceinline__ typename Work<FIX>::T wt(int k) const { return w[k]; }
};
// u8 linear in 8 bytes (the horizontal pass reads one per output element): the first
// offset | (second - first) << 24, and both 11-bit weights.
template <> struct Tap<FK_LIN, true> {
    static constexpr int K = 2;
    uint32_t on;
    int16_t w[2];
    __device__ __forceinline__ void set(int k, int32_t off, int32_t wt) {
        on = k ? on | (uint32_t)(off - (int32_t)on) << 24 : (uint32_t)off;
        w[k] = (int16_t)wt;
    }
    __device__ __forceinline__ int32_t off(int k) const { return (int32_t)(on & 0xffffffu) + (k ? (int32_t)(on >> 24) : 0); }
    __device__ __forceinline__ int32_t wt(int k) const { return w[k]; }
};
template <bool FIX> struct Tap<FK_BOX, FIX> {
    static constexpr int K = 0; // varies
    uint32_t on;                // first offset | count << 24
    float wf, wm, wl;
};

template <int FK, bool FIX>
__device__ __forceinline__ void tap_make(Tap<FK, FIX> &t, const gaio_rs_axis *a, int32_t d, int mul, int64_t first) {
    if constexpr (FK == FK_BOX) {
        gaio_rs_box b = gaio_rs_box_at(a, d);
        t.on = (uint32_t)((int64_t)b.first * mul - first) | (uint32_t)b.n << 24;
        t.wf = b.w_first;
        t.wm = b.w_mid;
        t.wl = b.w_last;
    } else {
        Taps<FK> tx;
        tx.make(a, d);
#pragma unroll
        for (int k = 0; k < Tap<FK, FIX>::K; k++)
            t.set(k, (int32_t)((int64_t)tx.idx(k) * mul - first), Work<FIX>::weight(tx.w(k)));
    }
}

__device__ __forceinline__ float box_w(const Tap<FK_BOX, false> &t, int k, int n) {
    return k == 0 ? t.wf : k == n - 1 ? t.wl : t.wm;
}

// Staged elements: chunks of 4 elements (4, 8 or 16 bytes), or single elements where
// rows differ in alignment. Four elements make one 16-byte store of work values, so
// consecutive threads fill consecutive 16 bytes of shared memory (no bank conflicts).
// Nearest and box keep 16-byte chunks: measured on an H100, their extra load and sum
// instructions with 4-element chunks cost more than the stores' bank conflicts.
template <class E, int FK> constexpr int kChunkBytes = FK == FK_BOX || FK == FK_NN ? 16 : 4 * (int)sizeof(E);
template <int B> struct Bytes;
template <> struct Bytes<4> { typedef uint32_t T; };
template <> struct Bytes<8> { typedef uint2 T; };
template <> struct Bytes<16> { typedef uint4 T; };
template <bool VEC, class E, int FK> struct Chunk { typedef E T; };
template <class E, int FK> struct Chunk<true, E, FK> { typedef typename Bytes<kChunkBytes<E, FK>>::T T; };

// Stores N (1 or a multiple of 4) work values at sm[i * N] (16-byte aligned when N > 1).
template <int N, class W> __device__ __forceinline__ void store_work(W *sm, int32_t i, const W (&a)[N]) {
    if constexpr (N == 1) {
        sm[i] = a[0];
    } else {
        typedef typename std::conditional<std::is_same<W, float>::value, float4, int4>::type V4;
        V4 *o = reinterpret_cast<V4 *>(sm + (int64_t)i * N);
#pragma unroll
        for (int e = 0; e < N; e += 4) o[e / 4] = V4{a[e], a[e + 1], a[e + 2], a[e + 3]};
    }
}

// 1. The vertical pass: a thread loads CU chunks (kChunkBytes, or one element) of
// every tap row of an output row before it uses any, so that a block has its whole
// row in flight; load() for the next row is issued before the horizontal pass of
// the current one, commit() sums and stores. Boxes load R rows at a time.
template <class E, int FK, bool FIX, bool VEC> struct Stage {
    typedef typename Work<FIX>::T W;
    typedef typename Chunk<VEC, E, FK>::T C;
    typedef Tap<FK, FIX> T;
    static constexpr int N = VEC ? kChunkBytes<E, FK> / (int)sizeof(E) : 1;
    // chunks a thread loads per row: 32 bytes (16 for a box, whose rows come R at a time)
    static constexpr int CU = VEC ? (FK == FK_BOX ? 16 : 32) / kChunkBytes<E, FK> : FK == FK_BOX ? 1 : 2;
    static constexpr int R = FK == FK_BOX ? 4 : T::K; // rows loaded together
    C q[CU][R];

    __device__ __forceinline__ static int rows_of(const T &t) {
        if constexpr (FK == FK_BOX) return (int)(t.on >> 24);
        else return T::K;
    }
    __device__ __forceinline__ static int32_t row_at(const T &t, int k) {
        if constexpr (FK == FK_BOX) return (int32_t)(t.on & 0xffffffu) + k;
        else return t.off(k);
    }

    // Rows k0 .. k0 + R - 1 (those below n) of chunks c0 + u * kThreads.
    __device__ __forceinline__ void load(const T &t, int k0, const char *base, uint64_t pitch, int64_t a0, int32_t c0,
                                         int32_t nch) {
        const int n = rows_of(t);
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (FK == FK_BOX && k0 + r >= n) break;
            const C *row = reinterpret_cast<const C *>(base + (uint64_t)row_at(t, k0 + r) * pitch + a0);
#pragma unroll
            for (int u = 0; u < CU; u++) {
                const int32_t c = c0 + u * kThreads;
                q[u][r] = __ldg(row + (c < nch ? c : nch - 1));
            }
        }
    }

    __device__ __forceinline__ void commit(const T &t, const char *base, uint64_t pitch, int64_t a0, int32_t c0,
                                           int32_t nch, W *sm) {
        const int n = rows_of(t);
        if constexpr (FK == FK_BOX) {
            float acc[CU][N];
#pragma unroll
            for (int u = 0; u < CU; u++)
#pragma unroll
                for (int e = 0; e < N; e++) acc[u][e] = 0.f; // 0 + w * x is w * x: the host's sums
            for (int k0 = 0;;) {
#pragma unroll
                for (int r = 0; r < R; r++) {
                    if (k0 + r >= n) break; // the same for the whole block: no divergence
                    const float w = box_w(t, k0 + r, n);
#pragma unroll
                    for (int u = 0; u < CU; u++)
#pragma unroll
                        for (int e = 0; e < N; e++) acc[u][e] += w * conv<E, float>(chunk_at<E>(q[u][r], e));
                }
                k0 += R;
                if (k0 >= n) break;
                load(t, k0, base, pitch, a0, c0, nch); // a box taller than R rows
            }
#pragma unroll
            for (int u = 0; u < CU; u++)
                if (c0 + u * kThreads < nch) store_work<N, float>(reinterpret_cast<float *>(sm), c0 + u * kThreads,
                                                                  acc[u]);
        } else if constexpr (FIX && VEC && (T::K == 2 || T::K == 4)) {
            // u8 fixed point: bytes of two tap rows interleaved, then one dp2a makes
            // w0 * row0 + w1 * row1 for an element (exact, as the integer sums below)
            const uint32_t w01 = (uint32_t)(t.wt(0) & 0xffff) | (uint32_t)t.wt(1) << 16;
            const uint32_t w23 = T::K == 4 ? (uint32_t)(t.wt(T::K - 2) & 0xffff) | (uint32_t)t.wt(T::K - 1) << 16 : 0u;
#pragma unroll
            for (int u = 0; u < CU; u++) {
                if (c0 + u * kThreads >= nch) break;
                const uint32_t r0 = q[u][0], r1 = q[u][1];
                const uint32_t lo = __byte_perm(r0, r1, 0x5140), hi = __byte_perm(r0, r1, 0x7362);
                int32_t v0 = dp2a_lo(w01, lo, 0), v1 = dp2a_hi(w01, lo, 0);
                int32_t v2 = dp2a_lo(w01, hi, 0), v3 = dp2a_hi(w01, hi, 0);
                if constexpr (T::K == 4) {
                    const uint32_t r2 = q[u][T::K - 2], r3 = q[u][T::K - 1];
                    const uint32_t lo2 = __byte_perm(r2, r3, 0x5140), hi2 = __byte_perm(r2, r3, 0x7362);
                    v0 = dp2a_lo(w23, lo2, v0);
                    v1 = dp2a_hi(w23, lo2, v1);
                    v2 = dp2a_lo(w23, hi2, v2);
                    v3 = dp2a_hi(w23, hi2, v3);
                }
                *reinterpret_cast<int4 *>(sm + (int64_t)(c0 + u * kThreads) * N) = int4{v0, v1, v2, v3};
            }
        } else {
#pragma unroll
            for (int u = 0; u < CU; u++) {
                if (c0 + u * kThreads >= nch) break;
                W a[N];
#pragma unroll
                for (int e = 0; e < N; e++) {
                    a[e] = t.wt(0) * conv<E, W>(chunk_at<E>(q[u][0], e));
#pragma unroll
                    for (int k = 1; k < T::K; k++) a[e] += t.wt(k) * conv<E, W>(chunk_at<E>(q[u][k], e));
                }
                store_work<N, W>(sm, c0 + u * kThreads, a);
            }
        }
        (void)n;
    }
};

// 2. The horizontal pass over the staged row. A box and nearest: one output pixel a thread.
template <class E, int CN>
__device__ __forceinline__ void emit_box(const Tap<FK_BOX, false> &t, const float *sm, E *px) {
    const int32_t o0 = (int32_t)(t.on & 0xffffffu), n = (int32_t)(t.on >> 24);
    float acc[CN];
#pragma unroll
    for (int c = 0; c < CN; c++) acc[c] = t.wf * sm[o0 + c];
    for (int k = 1; k < n; k++) {
        const float w = box_w(t, k, n);
#pragma unroll
        for (int c = 0; c < CN; c++) acc[c] += w * sm[o0 + k * CN + c];
    }
#pragma unroll
    for (int c = 0; c < CN; c++) px[c] = Elem<E>::store(acc[c]);
}
// The others: channel c of one output pixel a thread. One element, not one pixel: a
// warp's reads of the staged row then span about as many words as it has threads
// (few bank conflicts) and its stores are consecutive elements.
template <int CN, int FK, bool FIX>
__device__ __forceinline__ typename Work<FIX>::T emit(const Tap<FK, FIX> &t, const typename Work<FIX>::T *sm, int c) {
    typedef typename Work<FIX>::T W;
    W acc;
    acc = t.wt(0) * sm[t.off(0) + c];
#pragma unroll
    for (int k = 1; k < Tap<FK, FIX>::K; k++) acc += t.wt(k) * sm[t.off(k) + c];
    return acc;
}

// Rows [y0, y1) of tile [d0, d1) of plane `plane` of view v into plane dz of dst.
// Shared memory: x taps of the tile, y taps of the band, one staged row of sums.
template <class E, int CN, int FK, bool FIX, bool VEC>
__device__ void resize_rows(const gaio_kroi &v, int32_t plane, const gaio_kimg &dst, int64_t dz, int32_t y0,
                            int32_t y1, int32_t d0, int32_t d1, int32_t mx, int32_t my, unsigned char *smem) {
    typedef typename Work<FIX>::T W;
    typedef Tap<FK, FIX> T;
    typedef Stage<E, FK, FIX, VEC> S;
    const gaio_rs_axis ax = gaio_rs_axis_make(v.width, dst.width, mx);
    const gaio_rs_axis ay = gaio_rs_axis_make(v.height, dst.height, my);
    const char *base = reinterpret_cast<const char *>(static_cast<uintptr_t>(v.ptr + (uint64_t)plane * v.plane_pitch));
    int32_t lo, hi;
    gaio_rs_tile_span(&ax, d0, d1, &lo, &hi);
    const int64_t fb = (int64_t)lo * CN * (int64_t)sizeof(E), lb = ((int64_t)hi + 1) * CN * (int64_t)sizeof(E);
    int64_t a0; // byte offset from a row's start of what sm[0] holds
    int32_t nch;
    if (VEC) {
        constexpr uintptr_t CB = kChunkBytes<E, FK>;
        const uintptr_t r0 = reinterpret_cast<uintptr_t>(base);
        a0 = (int64_t)((r0 + fb) & ~(CB - 1)) - (int64_t)r0;
        nch = (int32_t)(((int64_t)((r0 + lb + CB - 1) & ~(CB - 1)) - (int64_t)r0 - a0) / (int64_t)CB);
    } else {
        a0 = fb;
        nch = (int32_t)((lb - fb) / (int64_t)sizeof(E));
    }
    T *xt = reinterpret_cast<T *>(smem);
    T *yt = reinterpret_cast<T *>(smem + (((size_t)(d1 - d0) * sizeof(T) + 15) & ~(size_t)15));
    W *sm = reinterpret_cast<W *>(reinterpret_cast<unsigned char *>(yt) + ((kMaxBand * sizeof(T) + 15) & ~(size_t)15));
    for (int32_t d = d0 + (int32_t)threadIdx.x; d < d1; d += kThreads)
        tap_make<FK, FIX>(xt[d - d0], &ax, d, CN, a0 / (int64_t)sizeof(E));
    for (int32_t y = y0 + (int32_t)threadIdx.x; y < y1; y += kThreads) tap_make<FK, FIX>(yt[y - y0], &ay, y, 1, 0);
    __syncthreads();
    S st;
    const bool one = nch <= S::CU * kThreads; // each thread's chunks in one load: pipelined over rows
    if (one) st.load(yt[0], 0, base, v.row_pitch, a0, threadIdx.x, nch);
    for (int32_t y = y0; y < y1; y++) {
        const T ty = yt[y - y0];
        if (one) {
            st.commit(ty, base, v.row_pitch, a0, threadIdx.x, nch, sm);
        } else {
            for (int32_t c0 = threadIdx.x; c0 < nch; c0 += S::CU * kThreads) {
                st.load(ty, 0, base, v.row_pitch, a0, c0, nch);
                st.commit(ty, base, v.row_pitch, a0, c0, nch, sm);
            }
        }
        __syncthreads();
        if (one && y + 1 < y1) st.load(yt[y + 1 - y0], 0, base, v.row_pitch, a0, threadIdx.x, nch);
        E *drow = reinterpret_cast<E *>(gaio_kimg_row(&dst, dz, y)) + (int64_t)d0 * CN;
        if constexpr (FK == FK_BOX) { // a pixel a thread: the box's tap loop runs once for its channels
            for (int32_t j = (int32_t)threadIdx.x; j < d1 - d0; j += kThreads) emit_box<E, CN>(xt[j], sm, drow + j * CN);
        } else if constexpr (FK == FK_NN) { // a pixel a thread: a copy, measured faster so
            E *row = reinterpret_cast<E *>(gaio_kimg_row(&dst, dz, y));
            for (int32_t d = d0 + (int32_t)threadIdx.x; d < d1; d += kThreads) {
                const int32_t o = xt[d - d0].off(0);
#pragma unroll
                for (int c = 0; c < CN; c++) row[(int64_t)d * CN + c] = Elem<E>::store(sm[o + c]);
            }
        } else {
            for (int32_t e = (int32_t)threadIdx.x; e < (d1 - d0) * CN; e += kThreads) {
                const int32_t j = e / CN;
                drow[e] = Elem<E>::store(emit<CN, FK, FIX>(xt[j], sm, e - j * CN));
            }
        }
        __syncthreads(); // the next row restages
    }
}

template <class E, int CN, int FK, bool FIX>
__device__ __forceinline__ void resize_rows_any(const gaio_kroi &v, int32_t plane, const gaio_kimg &dst, int64_t dz,
                                                int32_t y0, int32_t y1, int32_t d0, int32_t d1, int32_t mx,
                                                int32_t my, unsigned char *smem) {
    if (v.row_pitch % kChunkBytes<E, FK> == 0) resize_rows<E, CN, FK, FIX, true>(v, plane, dst, dz, y0, y1, d0, d1, mx, my, smem);
    else resize_rows<E, CN, FK, FIX, false>(v, plane, dst, dz, y0, y1, d0, d1, mx, my, smem);
}

enum { KM_NEAREST, KM_LINEAR, KM_CUBIC, KM_AREA };
// Blocks an SM should hold, per mode: register caps of 64, 64, 80 and 128 a thread
// (tighter ones make the compiler spill).
constexpr int kMinBlocks[] = {8, 8, 6, 4};

// grid x: column tiles, y: bands of rows, z: planes of the launch (strided).
template <class E, int CN, int KM>
__device__ void resize_kernel(const gaio_ktable &tab, const gaio_kimg &dst, int32_t first, int32_t count,
                              int32_t interp) {
    extern __shared__ __align__(16) unsigned char smem[];
    constexpr bool U8 = sizeof(E) == 1;
    const int32_t tw = (dst.width + (int32_t)gridDim.x - 1) / (int32_t)gridDim.x;
    const int32_t d0 = (int32_t)blockIdx.x * tw, d1 = min(d0 + tw, dst.width);
    const int32_t band = (dst.height + (int32_t)gridDim.y - 1) / (int32_t)gridDim.y;
    const int32_t yb = (int32_t)blockIdx.y * band, ye = min(yb + band, dst.height);
    if (d0 >= d1 || yb >= ye) return;
    const int64_t planes = dst.planes, nz = (int64_t)count * planes;
    for (int64_t z = blockIdx.z; z < nz; z += gridDim.z) {
        const int32_t i = (int32_t)(z / planes), p = (int32_t)(z - (int64_t)i * planes);
        const gaio_kroi &v = tab.v[i];
        const int64_t dz = ((int64_t)first + i) * planes + p;
        int32_t mx, my;
        gaio_rs_modes(interp, v.width, v.height, dst.width, dst.height, &mx, &my);
        for (int32_t y0 = yb; y0 < ye; y0 += kMaxBand) { // more than one pass only past 65535 bands
            const int32_t y1 = min(y0 + kMaxBand, ye);
            if constexpr (KM == KM_NEAREST) {
                resize_rows_any<E, CN, FK_NN, false>(v, p, dst, dz, y0, y1, d0, d1, mx, my, smem);
            } else if constexpr (KM == KM_LINEAR) {
                resize_rows_any<E, CN, FK_LIN, U8>(v, p, dst, dz, y0, y1, d0, d1, mx, my, smem);
            } else if constexpr (KM == KM_CUBIC) {
                resize_rows_any<E, CN, FK_CUB, U8>(v, p, dst, dz, y0, y1, d0, d1, mx, my, smem);
            } else if (mx == GAIO_RS_BOX) { // AREA: a box when shrinking both axes (float, as OpenCV)
                resize_rows_any<E, CN, FK_BOX, false>(v, p, dst, dz, y0, y1, d0, d1, mx, my, smem);
            } else { // enlarging: OpenCV's area-mode bilinear, fixed point for u8
                resize_rows_any<E, CN, FK_LIN, U8>(v, p, dst, dz, y0, y1, d0, d1, mx, my, smem);
            }
        }
    }
}

} // namespace

#define GAIO_RESIZE_KERNEL(mode, KM, dt, E, cn)                                                                      \
    extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks[KM])                                           \
        gaio_img_resize_##mode##_##dt##_c##cn(const gaio_ktable tab, const gaio_kimg dst, int32_t first,           \
                                              int32_t count, int32_t interp) {                                     \
        resize_kernel<E, cn, KM>(tab, dst, first, count, interp);                                                    \
    }
#define GAIO_RESIZE_DT(mode, KM, dt, E)                                                                              \
    GAIO_RESIZE_KERNEL(mode, KM, dt, E, 1)                                                                           \
    GAIO_RESIZE_KERNEL(mode, KM, dt, E, 2)                                                                           \
    GAIO_RESIZE_KERNEL(mode, KM, dt, E, 3)                                                                           \
    GAIO_RESIZE_KERNEL(mode, KM, dt, E, 4)
#define GAIO_RESIZE_MODE(mode, KM)                                                                                   \
    GAIO_RESIZE_DT(mode, KM, u8, uint8_t)                                                                            \
    GAIO_RESIZE_DT(mode, KM, u16, uint16_t)                                                                          \
    GAIO_RESIZE_DT(mode, KM, f32, float)

GAIO_RESIZE_MODE(nearest, KM_NEAREST)
GAIO_RESIZE_MODE(linear, KM_LINEAR)
GAIO_RESIZE_MODE(cubic, KM_CUBIC)
GAIO_RESIZE_MODE(area, KM_AREA)
