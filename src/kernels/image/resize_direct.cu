// Direct CUDA kernels of gaio_resize / crop_resize / crop_resize_varshape for u8
// interleaved images of 1, 3 or 4 channels: four adjacent output pixels a thread (one
// where rows shrink more than twice: direct1), their source pixels read straight from
// L1 (no shared-memory staging, no block barrier), stored as whole words. The host
// picks them (src/image/resize.c: direct_fits) for NEAREST, LINEAR, CUBIC and for AREA
// (enlarging, a box of at most two taps an axis, or direct1's wide box); resize.cu's
// staged kernels keep the rest. Both compute the same numbers: taps and weights from image/resize_math.h,
// LINEAR and CUBIC in the host's 11-bit fixed point (exact integer sums, so the
// order of the sums does not matter), the box in float with resize.cu's order of
// operations (vertical sums first, each a fused multiply-add from 0; then the
// horizontal sum from the first tap's product).
//
// Why direct: the staged kernels spent the L1/shared-memory pipe on staging every
// source element as a 32-bit sum and on byte stores, and instruction issue on the
// barriers. Here a warp is 32 or 128 consecutive output pixels of one row; the
// pixels it reads from a source row lie within a few cache lines, so its loads
// cost about as many L1 wavefronts as the lines they touch; four pixels a thread
// (where rows shrink at most twice) share the per-row work (row taps, addresses)
// and make word stores. A pixel's bytes come in aligned 32-bit words (never past the
// 4-byte granule of a byte the filter reads: so never outside the image's
// allocation) and a funnel shift lines them up.
//
// Block: 32 x 4 threads, a column tile of 32 x P outputs (P pixels a thread); the
// four warps take the rows of the block's band in turn (adjacent warps, adjacent
// rows: they share source rows in L1). grid x: tiles, y: bands, z: images of the launch. A thread
// makes its column's pixels of up to 32 rows: what it computes once (axes, taps,
// addresses: double divisions among them) is then a small part of its work.
#include "image/kimg.h"
#include "image/resize_math.h"
#include "kernels/image/dp2a.cuh"
#include "kernels/image/u8_float.cuh"

namespace {

constexpr int kWarps = 4;
// Taps a row of the wide box takes (a 32-byte window; src/image/resize.c's RSD_WIDE_BYTES).
template <int CN> constexpr int kWideTaps = 32 / CN;

// nb (<= 8) bytes from p, any alignment: bytes 0-3 in .x, 4-7 in .y.
__device__ __forceinline__ uint2 load_bytes(const uint8_t *p, int nb) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uint32_t *w = reinterpret_cast<const uint32_t *>(a & ~(uintptr_t)3);
    const int r = (int)(a & 3);
    const uint32_t w0 = __ldg(w);
    const uint32_t w1 = r + nb > 4 ? __ldg(w + 1) : 0u;
    const uint32_t w2 = r + nb > 8 ? __ldg(w + 2) : 0u;
    return make_uint2(__funnelshift_r(w0, w1, 8 * r), __funnelshift_r(w1, w2, 8 * r));
}

// The 4 * CN bytes from p (four pixels), any alignment, as CN words: every word
// loaded holds a byte of the four pixels (so stays inside their 4-byte granules).
template <int CN> __device__ __forceinline__ void load_window(const uint8_t *p, uint32_t (&f)[CN]) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uint32_t *w = reinterpret_cast<const uint32_t *>(a & ~(uintptr_t)3);
    const int r = (int)(a & 3);
    uint32_t v[CN + 1];
#pragma unroll
    for (int j = 0; j < CN; j++) v[j] = __ldg(w + j);
    v[CN] = r ? __ldg(w + CN) : 0u;
#pragma unroll
    for (int j = 0; j < CN; j++) f[j] = __funnelshift_r(v[j], v[j + 1], 8 * r);
}

// The aligned words holding the nb bytes from p (the first M; none past the last
// byte's word, so inside its 4-byte granule); words past them read 0.
template <int M> __device__ __forceinline__ void load_words(const uint8_t *p, int nb, uint32_t (&u)[M]) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uint32_t *w = reinterpret_cast<const uint32_t *>(a & ~(uintptr_t)3);
    const int r = (int)(a & 3);
#pragma unroll
    for (int i = 0; i < M; i++) u[i] = 4 * i < r + nb ? __ldg(w + i) : 0u;
}

// Byte i (0..7) of q as float.
__device__ __forceinline__ float byte_f(uint2 q, int i) { return gaio_u8f(i < 4 ? q.x : q.y, i & 3); }

__device__ __forceinline__ int32_t fix_weight(float w) { return (int32_t)gaio_k_rint(w * 2048.f); }

// Two 11-bit weights in one word, a in the low half (dp2a's operand a), and back.
__device__ __forceinline__ uint32_t fix_pair(float a, float b) {
    return (uint32_t)(fix_weight(a) & 0xffff) | (uint32_t)fix_weight(b) << 16;
}
__device__ __forceinline__ int32_t fix_lo(uint32_t w) { return (int32_t)(int16_t)(w & 0xffff); }
__device__ __forceinline__ int32_t fix_hi(uint32_t w) { return (int32_t)w >> 16; }

__device__ __forceinline__ uint32_t fix_round(int32_t v) { // 22 fractional bits -> u8, as resize.cu
    v = (v + (1 << 21)) >> 22;
    return (uint32_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

// The rows of a band a warp makes: lane j of the warp computes row j's taps once
// (rows y = y0 + warp + kWarps * j), and the row loop takes them by shuffle.
struct Band {
    int32_t y0, y1, first; // the block's rows [y0, y1); this warp's first row
};

__device__ __forceinline__ Band band_of(int32_t dh) {
    const int32_t rows = (dh + (int32_t)gridDim.y - 1) / (int32_t)gridDim.y;
    Band b;
    b.y0 = (int32_t)blockIdx.y * rows;
    b.y1 = min(b.y0 + rows, dh);
    b.first = b.y0 + (int32_t)threadIdx.y;
    return b;
}

// The CN bytes of pixel k (0..3) of a thread's four, packed into CN words (4 * CN
// bytes, pixel after pixel): px[k] holds pixel k in its low CN bytes.
template <int CN> __device__ __forceinline__ void pack4(const uint32_t (&px)[4], uint32_t (&o)[CN]) {
    if constexpr (CN == 1) {
        o[0] = __byte_perm(__byte_perm(px[0], px[1], 0x0040), __byte_perm(px[2], px[3], 0x0040), 0x5410);
    } else if constexpr (CN == 3) {
        o[0] = __byte_perm(px[0], px[1], 0x4210);
        o[1] = __byte_perm(px[1], px[2], 0x5421);
        o[2] = __byte_perm(px[2], px[3], 0x6542);
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++) o[k] = px[k];
    }
}

// A thread's n (1..P) output pixels at p: whole words where they are aligned.
template <int CN, int P> __device__ __forceinline__ void store_px(uint8_t *p, const uint32_t (&px)[P], int n) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if constexpr (P == 1) {
        if (CN == 4 && (a & 3) == 0) {
            *reinterpret_cast<uint32_t *>(p) = px[0];
        } else {
#pragma unroll
            for (int c = 0; c < CN; c++) p[c] = (uint8_t)(px[0] >> (8 * c));
        }
    } else {
        uint32_t o[CN];
        pack4<CN>(px, o);
        if (n == 4 && CN == 4 && (a & 15) == 0) {
            *reinterpret_cast<uint4 *>(p) = make_uint4(o[0], o[1], o[2], o[3 % CN]);
        } else if (n == 4 && (a & 3) == 0) {
#pragma unroll
            for (int w = 0; w < CN; w++) reinterpret_cast<uint32_t *>(p)[w] = o[w];
        } else {
#pragma unroll
            for (int b = 0; b < 4 * CN; b++) // unrolled: o stays in registers
                if (b < n * CN) p[b] = (uint8_t)(o[b >> 2] >> (8 * (b & 3)));
        }
    }
}

// One kernel body for every mode: FK_* picks the filter.
enum { FK_NN, FK_LIN, FK_BOX, FK_CUB, FK_WIDEBOX };

template <int CN, int FK, int kPx>
__device__ __forceinline__ void direct(const gaio_ktable &tab, const gaio_kimg &dst, int32_t first, int32_t interp) {
    const int32_t i = (int32_t)blockIdx.z;
    const gaio_kroi &v = tab.v[i];
    const int32_t d0 = (int32_t)(blockIdx.x * 32 + threadIdx.x) * kPx; // the thread's first output column
    const Band band = band_of(dst.height);
    if (band.first >= band.y1) return; // whole warps leave: the shuffles below see full warps
    int32_t mx, my;
    gaio_rs_modes(interp, v.width, v.height, dst.width, dst.height, &mx, &my);
    const gaio_rs_axis ax = gaio_rs_axis_make(v.width, dst.width, mx);
    const gaio_rs_axis ay = gaio_rs_axis_make(v.height, dst.height, my);
    // dead lanes (past the row's end) still load, from the last column, and compute
    // row taps for the others; they store nothing
    const int n = min(kPx, max(dst.width - d0, 0));
    const char *base = reinterpret_cast<const char *>(static_cast<uintptr_t>(v.ptr));
    // HWC: one plane an image, so image first + i's row y is at ptr + (first + i) * image_stride + y * row_pitch
    uint8_t *const dbase = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(
                               dst.ptr + (uint64_t)((int64_t)first + i) * dst.image_stride)) + (int64_t)d0 * CN;
    const uint64_t pitch = v.row_pitch;
    const int32_t yl = band.first + kWarps * (int32_t)threadIdx.x; // this lane's row, for the warp
    const int32_t ylc = yl < band.y1 ? yl : band.y1 - 1;

    if constexpr (FK == FK_NN) {
        int32_t sx[kPx];
#pragma unroll
        for (int k = 0; k < kPx; k++) sx[k] = gaio_rs_nearest(&ax, min(d0 + k, dst.width - 1)) * CN;
        const int32_t syl = gaio_rs_nearest(&ay, ylc);
        // G rows' loads before their stores: more loads in flight (the kernel waits on
        // DRAM latency, not bandwidth, with one row's)
        constexpr int G = kPx == 1 ? 4 : 2; // four for both measured 2% slower at 720p
        for (int32_t y = band.first, j = 0; y < band.y1 && j < 32; y += G * kWarps, j += G) {
            uint32_t px[G][kPx];
#pragma unroll
            for (int g = 0; g < G; g++) { // rows past the band load the band's last: harmless
                const int32_t sy = __shfl_sync(0xffffffffu, syl, (j + g) & 31);
                const uint8_t *row = reinterpret_cast<const uint8_t *>(base + (uint64_t)sy * pitch);
#pragma unroll
                for (int k = 0; k < kPx; k++) px[g][k] = load_bytes(row + sx[k], CN).x;
            }
#pragma unroll
            for (int g = 0; g < G; g++)
                if (n > 0 && y + g * kWarps < band.y1 && j + g < 32)
                    store_px<CN, kPx>(dbase + (uint64_t)(y + g * kWarps) * dst.row_pitch, px[g], n);
        }
    } else if constexpr (FK == FK_LIN) {
        int32_t ox[kPx], nb[kPx];
        uint32_t wx[kPx]; // both 11-bit weights: w0 | w1 << 16
#pragma unroll
        for (int k = 0; k < kPx; k++) {
            int32_t x0, x1;
            float fx;
            gaio_rs_linear(&ax, min(d0 + k, dst.width - 1), &x0, &x1, &fx);
            ox[k] = x0 * CN;
            nb[k] = (x1 - x0 + 1) * CN; // x1 == x0 at the right edge: one pixel
            wx[k] = fix_pair(1.f - fx, fx);
        }
        int32_t r0, r1;
        float fy;
        gaio_rs_linear(&ay, ylc, &r0, &r1, &fy);
        const uint32_t wyl = fix_pair(1.f - fy, fy);
        constexpr int G = kPx == 1 ? 2 : 1; // rows loaded before their sums, as nearest
        for (int32_t y = band.first, j = 0; y < band.y1 && j < 32; y += G * kWarps, j += G) {
            uint2 qa[G][kPx], qb[G][kPx];
            uint32_t w01[G];
#pragma unroll
            for (int g = 0; g < G; g++) {
                const int32_t src = (j + g) & 31;
                const int32_t ya = __shfl_sync(0xffffffffu, r0, src), yb = __shfl_sync(0xffffffffu, r1, src);
                w01[g] = __shfl_sync(0xffffffffu, wyl, src);
                const uint8_t *ra = reinterpret_cast<const uint8_t *>(base + (uint64_t)ya * pitch);
                const uint8_t *rb = reinterpret_cast<const uint8_t *>(base + (uint64_t)yb * pitch);
#pragma unroll
                for (int k = 0; k < kPx; k++) qa[g][k] = load_bytes(ra + ox[k], nb[k]), qb[g][k] = load_bytes(rb + ox[k], nb[k]);
            }
#pragma unroll
            for (int g = 0; g < G; g++) {
                uint32_t px[kPx];
#pragma unroll
                for (int k = 0; k < kPx; k++) {
                    // bytes of the two rows interleaved, then one dp2a a byte: wy0 * a + wy1 * b
                    int32_t s[8];
                    const uint2 a = qa[g][k], b = qb[g][k];
                    const uint32_t l0 = __byte_perm(a.x, b.x, 0x5140), l1 = __byte_perm(a.x, b.x, 0x7362);
                    s[0] = dp2a_lo(w01[g], l0, 0);
                    s[1] = dp2a_hi(w01[g], l0, 0);
                    s[2] = dp2a_lo(w01[g], l1, 0);
                    s[3] = dp2a_hi(w01[g], l1, 0);
                    if (CN > 2) {
                        const uint32_t h0 = __byte_perm(a.y, b.y, 0x5140), h1 = __byte_perm(a.y, b.y, 0x7362);
                        s[4] = dp2a_lo(w01[g], h0, 0);
                        s[5] = dp2a_hi(w01[g], h0, 0);
                        s[6] = dp2a_lo(w01[g], h1, 0);
                        s[7] = dp2a_hi(w01[g], h1, 0);
                    }
                    const int32_t w0 = fix_lo(wx[k]), w1 = fix_hi(wx[k]);
                    const bool one = nb[k] == CN;
                    uint32_t out = 0;
#pragma unroll
                    for (int c = 0; c < CN; c++)
                        out |= fix_round(w0 * s[c] + w1 * (one ? s[c] : s[CN + c])) << (8 * c);
                    px[k] = out;
                }
                if (n > 0 && y + g * kWarps < band.y1 && j + g < 32)
                    store_px<CN, kPx>(dbase + (uint64_t)(y + g * kWarps) * dst.row_pitch, px, n);
            }
        }
    } else if constexpr (FK == FK_CUB) { // four pixels a thread only (the host checks)
        // a column's four taps: s - 1 .. s + 2 where none is clamped (one window
        // load), else each tap on its own (the first and last columns)
        int32_t ox[kPx];
        bool cont[kPx];
        uint32_t wx[kPx][2]; // 11-bit weights, two a word: w0 | w1 << 16, w2 | w3 << 16
#pragma unroll
        for (int k = 0; k < kPx; k++) {
            int32_t idx[4];
            float w[4];
            gaio_rs_cubic(&ax, min(d0 + k, dst.width - 1), idx, w);
            ox[k] = idx[0] * CN;
            cont[k] = idx[3] - idx[0] == 3;
            wx[k][0] = fix_pair(w[0], w[1]);
            wx[k][1] = fix_pair(w[2], w[3]);
        }
        int32_t ryl[4];
        uint32_t wyl[2];
        {
            float w[4];
            gaio_rs_cubic(&ay, ylc, ryl, w);
            wyl[0] = fix_pair(w[0], w[1]);
            wyl[1] = fix_pair(w[2], w[3]);
        }
        for (int32_t y = band.first, j = 0; y < band.y1 && j < 32; y += kWarps, j++) {
            const uint8_t *rows[4];
#pragma unroll
            for (int t = 0; t < 4; t++)
                rows[t] = reinterpret_cast<const uint8_t *>(base + (uint64_t)__shfl_sync(0xffffffffu, ryl[t], j) * pitch);
            const uint32_t w01 = __shfl_sync(0xffffffffu, wyl[0], j), w23 = __shfl_sync(0xffffffffu, wyl[1], j);
            uint32_t px[kPx];
#pragma unroll
            for (int k = 0; k < kPx; k++) {
                uint32_t f[4][CN]; // [tap row][word]: the four tap pixels, CN bytes each
                if (cont[k]) {
#pragma unroll
                    for (int t = 0; t < 4; t++) load_window<CN>(rows[t] + ox[k], f[t]);
                } else { // a clamped column: the taps one by one
                    int32_t idx[4];
                    float w[4];
                    gaio_rs_cubic(&ax, min(d0 + k, dst.width - 1), idx, w);
#pragma unroll
                    for (int t = 0; t < 4; t++) {
                        uint32_t q[4];
#pragma unroll
                        for (int e = 0; e < 4; e++) q[e] = load_bytes(rows[t] + (int64_t)idx[e] * CN, CN).x;
                        pack4<CN>(q, f[t]);
                    }
                }
                // vertical sums, one dp2a per byte and row pair (resize.cu's order of terms
                // does not matter: the sums are exact integers)
                int32_t vs[4 * CN];
#pragma unroll
                for (int wd = 0; wd < CN; wd++) {
                    const uint32_t lo = __byte_perm(f[0][wd], f[1][wd], 0x5140), hi = __byte_perm(f[0][wd], f[1][wd], 0x7362);
                    const uint32_t lo2 = __byte_perm(f[2][wd], f[3][wd], 0x5140), hi2 = __byte_perm(f[2][wd], f[3][wd], 0x7362);
                    vs[4 * wd + 0] = dp2a_lo(w23, lo2, dp2a_lo(w01, lo, 0));
                    vs[4 * wd + 1] = dp2a_hi(w23, lo2, dp2a_hi(w01, lo, 0));
                    vs[4 * wd + 2] = dp2a_lo(w23, hi2, dp2a_lo(w01, hi, 0));
                    vs[4 * wd + 3] = dp2a_hi(w23, hi2, dp2a_hi(w01, hi, 0));
                }
                const int32_t x0 = fix_lo(wx[k][0]), x1 = fix_hi(wx[k][0]);
                const int32_t x2 = fix_lo(wx[k][1]), x3 = fix_hi(wx[k][1]);
                uint32_t out = 0;
#pragma unroll
                for (int c = 0; c < CN; c++)
                    out |= fix_round(x0 * vs[c] + x1 * vs[CN + c] + x2 * vs[2 * CN + c] + x3 * vs[3 * CN + c]) << (8 * c);
                px[k] = out;
            }
            if (n > 0) store_px<CN, kPx>(dbase + (uint64_t)y * dst.row_pitch, px, n);
        }
    } else if constexpr (FK == FK_WIDEBOX) { // one pixel a thread, up to kWideTaps<CN> taps a row
        // Each tap row of the box: its bytes in one window of aligned words, shifted so
        // that byte t * CN + c is tap t's channel c at a place known at compile time
        // (registers, not local memory); the column sums (vertical first, as resize.cu)
        // stay in registers. A warp's windows cover its row segment once: coalesced.
        constexpr int NT = kWideTaps<CN>, NW = (NT * CN + 3) / 4;
        const gaio_rs_box bx = gaio_rs_box_at(&ax, min(d0, dst.width - 1));
        const gaio_rs_box byl = gaio_rs_box_at(&ay, ylc);
        const int32_t nbx = bx.n * CN; // bytes of a tap row
        for (int32_t y = band.first, j = 0; y < band.y1 && j < 32; y += kWarps, j++) {
            const int32_t yf = __shfl_sync(0xffffffffu, byl.first, j), yn = __shfl_sync(0xffffffffu, byl.n, j);
            const float wyf = __shfl_sync(0xffffffffu, byl.w_first, j), wym = __shfl_sync(0xffffffffu, byl.w_mid, j);
            const float wyl = __shfl_sync(0xffffffffu, byl.w_last, j);
            float v[NT][CN];
#pragma unroll
            for (int t = 0; t < NT; t++)
#pragma unroll
                for (int c = 0; c < CN; c++) v[t][c] = 0.f;
            const uint8_t *p = reinterpret_cast<const uint8_t *>(base + (uint64_t)yf * pitch) + (int64_t)bx.first * CN;
            uint32_t u[NW + 1];
            load_words<NW + 1>(p, nbx, u);
            for (int32_t k = 0; k < yn; k++, p += pitch) {
                const float w = k == 0 ? wyf : k == yn - 1 ? wyl : wym;
                const int r = (int)(reinterpret_cast<uintptr_t>(p) & 3);
                uint32_t q[NW];
#pragma unroll
                for (int i = 0; i < NW; i++) q[i] = __funnelshift_r(u[i], u[i + 1], 8 * r);
                if (k + 1 < yn) load_words<NW + 1>(p + pitch, nbx, u); // the next tap row loads while this one sums
#pragma unroll
                for (int t = 0; t < NT; t++)
#pragma unroll
                    for (int c = 0; c < CN; c++)
                        if (t < bx.n) v[t][c] = __fmaf_rn(w, gaio_u8f(q[(t * CN + c) >> 2], (t * CN + c) & 3), v[t][c]);
            }
            uint32_t px[1];
            px[0] = 0;
#pragma unroll
            for (int c = 0; c < CN; c++) {
                float acc = bx.w_first * v[0][c];
#pragma unroll
                for (int t = 1; t < NT; t++)
                    if (t < bx.n) acc = __fmaf_rn(t == bx.n - 1 ? bx.w_last : bx.w_mid, v[t][c], acc);
                px[0] |= gaio_f_u8(acc) << (8 * c);
            }
            if (n > 0) store_px<CN, 1>(dbase + (uint64_t)y * dst.row_pitch, px, n);
        }
    } else { // FK_BOX: at most two taps an axis (the host checks)
        int32_t ox[kPx], nx[kPx];
        float wxf[kPx], wxl[kPx];
#pragma unroll
        for (int k = 0; k < kPx; k++) {
            const gaio_rs_box bx = gaio_rs_box_at(&ax, min(d0 + k, dst.width - 1));
            ox[k] = bx.first * CN;
            nx[k] = bx.n;
            wxf[k] = bx.w_first;
            wxl[k] = bx.w_last;
        }
        const gaio_rs_box byl = gaio_rs_box_at(&ay, ylc);
        for (int32_t y = band.first, j = 0; y < band.y1 && j < 32; y += kWarps, j++) {
            const int32_t yf = __shfl_sync(0xffffffffu, byl.first, j), yn = __shfl_sync(0xffffffffu, byl.n, j);
            const float wyf = __shfl_sync(0xffffffffu, byl.w_first, j);
            const float wyl = __shfl_sync(0xffffffffu, byl.w_last, j);
            const uint8_t *ra = reinterpret_cast<const uint8_t *>(base + (uint64_t)yf * pitch);
            uint32_t px[kPx];
#pragma unroll
            for (int k = 0; k < kPx; k++) {
                const uint2 qa = load_bytes(ra + ox[k], nx[k] * CN);
                uint2 qb = make_uint2(0u, 0u);
                if (yn > 1) qb = load_bytes(ra + pitch + ox[k], nx[k] * CN);
                uint32_t out = 0;
#pragma unroll
                for (int c = 0; c < CN; c++) {
                    // vertical sums of each tap column from 0, then the horizontal sum (resize.cu's order)
                    float v0 = __fmaf_rn(wyf, byte_f(qa, c), 0.f);
                    if (yn > 1) v0 = __fmaf_rn(wyl, byte_f(qb, c), v0);
                    float acc = wxf[k] * v0;
                    if (nx[k] > 1) {
                        float v1 = __fmaf_rn(wyf, byte_f(qa, CN + c), 0.f);
                        if (yn > 1) v1 = __fmaf_rn(wyl, byte_f(qb, CN + c), v1);
                        acc = __fmaf_rn(wxl[k], v1, acc);
                    }
                    out |= gaio_f_u8(acc) << (8 * c);
                }
                px[k] = out;
            }
            if (n > 0) store_px<CN, kPx>(dbase + (uint64_t)y * dst.row_pitch, px, n);
        }
    }
}

} // namespace

// Four adjacent pixels a thread (32 x 4 a tile) where a row shrinks at most twice;
// one (32 a tile) where it shrinks more: then a warp's pixels lie farther apart
// and four a thread would scatter its loads over four times the lines (H200, 1080p
// -> 224x224: linear 0.056 ms with one, 0.069 with four; nearest 0.036, 0.043).
// AREA here is a box of at most 2 x 2 taps (four pixels a thread) or of up to
// kWideTaps<CN> taps a row (one pixel a thread: direct1) or, enlarging, OpenCV's
// area-mode bilinear (the same fixed point as LINEAR).
#define GAIO_RESIZE_DIRECT_P(cn, P, sfx)                                                                             \
    extern "C" __global__ void __launch_bounds__(32 * kWarps) gaio_img_resize_direct##sfx##_nearest_u8_c##cn(       \
        const gaio_ktable tab, const gaio_kimg dst, int32_t first, int32_t count, int32_t interp) {                  \
        (void)count;                                                                                                 \
        direct<cn, FK_NN, P>(tab, dst, first, interp);                                                               \
    }                                                                                                                \
    extern "C" __global__ void __launch_bounds__(32 * kWarps) gaio_img_resize_direct##sfx##_linear_u8_c##cn(        \
        const gaio_ktable tab, const gaio_kimg dst, int32_t first, int32_t count, int32_t interp) {                  \
        (void)count;                                                                                                 \
        direct<cn, FK_LIN, P>(tab, dst, first, interp);                                                              \
    }                                                                                                                \
    extern "C" __global__ void __launch_bounds__(32 * kWarps) gaio_img_resize_direct##sfx##_area_u8_c##cn(          \
        const gaio_ktable tab, const gaio_kimg dst, int32_t first, int32_t count, int32_t interp) {                  \
        (void)count;                                                                                                 \
        int32_t mx, my;                                                                                              \
        const gaio_kroi &v = tab.v[blockIdx.z];                                                                      \
        gaio_rs_modes(interp, v.width, v.height, dst.width, dst.height, &mx, &my);                                   \
        if (mx == GAIO_RS_BOX) direct<cn, P == 1 ? FK_WIDEBOX : FK_BOX, P>(tab, dst, first, interp);                \
        else direct<cn, FK_LIN, P>(tab, dst, first, interp);                                                         \
    }
// CUBIC: four pixels a thread only (rows that shrink more than twice keep resize.cu's
// kernels). It holds 96 registers; capped at 64 or 80 it spills.
#define GAIO_RESIZE_DIRECT(cn)                                                                                       \
    GAIO_RESIZE_DIRECT_P(cn, 4, )                                                                                    \
    GAIO_RESIZE_DIRECT_P(cn, 1, 1)                                                                                   \
    extern "C" __global__ void __launch_bounds__(32 * kWarps) gaio_img_resize_direct_cubic_u8_c##cn(             \
        const gaio_ktable tab, const gaio_kimg dst, int32_t first, int32_t count, int32_t interp) {                  \
        (void)count;                                                                                                 \
        direct<cn, FK_CUB, 4>(tab, dst, first, interp);                                                              \
    }

GAIO_RESIZE_DIRECT(1)
GAIO_RESIZE_DIRECT(3)
GAIO_RESIZE_DIRECT(4)
