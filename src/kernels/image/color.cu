// CUDA kernels of gaio_cvt_color (src/image/color.c); the host twins are in
// src/image/cpu/color.c and compute the same numbers (integer arithmetic, and
// unfused float products for f32 gray).
//
// Bandwidth is the limit. RGB/gray: a thread converts the pixels of 16 source
// bytes (16 u8, 8 u16 or 4 f32 pixels), 16-byte vectors in and out. YUV: a thread
// converts 8 chroma samples, 16 columns of two rows, from one uint4 of each Y row
// and one of interleaved U,V (NV12) or a uint2 of U and of V (I420), so every byte
// is read once. Where a lane's pixels span 48 or 64 bytes (3 or 4 channels), whole
// warps pass them through shared memory so that each load and store instruction of
// a warp covers 512 contiguous bytes: with lanes reading and writing their own
// spans, write-heavy conversions ran at 60-85% of the bandwidth they reach this
// way on an H100 (2.7-3.0 TB/s, about a device-to-device copy's). Rows that are not
// 16-byte aligned (ROIs, odd pitches) go pixel by pixel, lane-interleaved so that
// each access of a warp is still one contiguous run (about 1 TB/s).
#include <stdint.h>

#include "image/kimg.h"

#include "image/kargs.h"

namespace {

// ---- RGB <-> BGR, alpha, gray ------------------------------------------------

template <typename T> __device__ __forceinline__ T alpha_max();
template <> __device__ __forceinline__ uint8_t alpha_max<uint8_t>() { return 255; }
template <> __device__ __forceinline__ uint16_t alpha_max<uint16_t>() { return 65535; }
template <> __device__ __forceinline__ float alpha_max<float>() { return 1.0f; }

// OpenCV's RGB2Gray: 15-bit fixed point for integers, float weights for f32.
template <typename T> __device__ __forceinline__ T gray(T r, T g, T b) {
    return (T)(((uint32_t)r * 9798u + (uint32_t)g * 19235u + (uint32_t)b * 3735u + (1u << 14)) >> 15);
}
template <> __device__ __forceinline__ float gray<float>(float r, float g, float b) {
    // unfused, in the host kernel's order, so both backends give the same bits
    return __fadd_rn(__fadd_rn(__fmul_rn(r, 0.299f), __fmul_rn(g, 0.587f)), __fmul_rn(b, 0.114f));
}

template <typename T, int SCN, int DCN, int SWAP> __device__ __forceinline__ void pixel(const T *s, T *d) {
    if constexpr (DCN == 1) {
        d[0] = gray<T>(s[SWAP ? 2 : 0], s[1], s[SWAP ? 0 : 2]);
    } else if constexpr (SCN == 1) {
        T v = s[0];
        d[0] = v;
        d[1] = v;
        d[2] = v;
        if constexpr (DCN == 4) d[3] = alpha_max<T>();
    } else {
        T r = s[SWAP ? 2 : 0], g = s[1], b = s[SWAP ? 0 : 2];
        d[0] = r;
        d[1] = g;
        d[2] = b;
        if constexpr (DCN == 4) d[3] = SCN == 4 ? s[3] : alpha_max<T>();
    }
}

// N values of T that travel as N * sizeof(T) / 16 uint4s.
template <typename T, int N> union Vec {
    uint4 q[N * sizeof(T) / 16];
    T v[N];
};

// Shared memory per block: 256 threads x 4 uint4.
#define STAGE_UINT4 (256 * 4)

// Where uint4 k of a warp's staged span lives in its 32 * N uint4s of shared
// memory: for N = 4 an XOR swizzle keeps both the lane-major and the warp-major
// accesses free of bank conflicts (N = 1 or 3 needs none).
template <int N> __device__ __forceinline__ int stage_slot(int k) {
    return N == 4 ? (k & ~3) | ((k & 3) ^ ((k >> 3) & 3)) : k;
}

// Stores the N uint4s of each lane of a warp, lane l's at dst[l * N + i], as N
// warp-wide stores of 32 contiguous uint4s; ws is the warp's shared memory.
template <int N>
__device__ __forceinline__ void warp_store(uint4 *ws, uint4 *dst, const uint4 (&v)[N], int lane) {
#pragma unroll
    for (int i = 0; i < N; i++) ws[stage_slot<N>(lane * N + i)] = v[i];
    __syncwarp();
#pragma unroll
    for (int i = 0; i < N; i++) dst[i * 32 + lane] = ws[stage_slot<N>(i * 32 + lane)];
    __syncwarp();
}

// The converse: lane l receives src[l * N + i], read as N warp-wide loads of 32
// contiguous uint4s.
template <int N>
__device__ __forceinline__ void warp_load(uint4 *ws, const uint4 *src, uint4 (&v)[N], int lane) {
#pragma unroll
    for (int i = 0; i < N; i++) ws[stage_slot<N>(i * 32 + lane)] = __ldg(src + i * 32 + lane);
    __syncwarp();
#pragma unroll
    for (int i = 0; i < N; i++) v[i] = ws[stage_slot<N>(lane * N + i)];
    __syncwarp();
}

// Rows aligned to 16 bytes: each thread converts P adjacent pixels (16 bytes of
// source pixels). Other rows go pixel by pixel, lane l of a warp taking pixels l,
// l + 32, ... of the warp's 32 * P.
template <typename T, int SCN, int DCN, int SWAP>
__device__ __forceinline__ void color_rows(const gaio_kimg &src, const gaio_kimg &dst, const gaio_kcolor &a,
                                           uint4 *stage) {
    constexpr int P = 16 / sizeof(T); // pixels per thread
    const int64_t step = (int64_t)gridDim.x * blockDim.x * P;
    const int lane = threadIdx.x & 31;
    uint4 *ws = DCN > 1 ? stage + (threadIdx.y * blockDim.x + threadIdx.x - lane) * 4 : nullptr;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < a.rows;
         r += (int64_t)gridDim.y * blockDim.y) {
        int64_t n = r / a.rows_per_image, y = r - n * a.rows_per_image;
        const T *s = (const T *)gaio_kimg_row(&src, n, y);
        T *d = (T *)gaio_kimg_row(&dst, n, y);
        // the same for every thread of a warp: a warp lies within one row (blockDim.x >= 32)
        if ((((uintptr_t)s | (uintptr_t)d) & 15) == 0) {
            for (int64_t x = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * P; x < a.cols; x += step) {
                const int64_t xw = x - lane * P; // the warp's first pixel
                // the same over the warp; gray results are not staged (see color_dispatch)
                const bool whole = DCN > 1 && xw + 32 * P <= a.cols;
                if (x + P <= a.cols) {
                    Vec<T, P * SCN> in;
                    Vec<T, P * DCN> out;
                    if (SCN > 1 && whole) {
                        warp_load<SCN>(ws, (const uint4 *)(s + xw * SCN), in.q, lane);
                    } else {
                        const uint4 *sq = (const uint4 *)(s + x * SCN);
#pragma unroll
                        for (int i = 0; i < SCN; i++) in.q[i] = __ldg(sq + i);
                    }
#pragma unroll
                    for (int p = 0; p < P; p++) pixel<T, SCN, DCN, SWAP>(in.v + p * SCN, out.v + p * DCN);
                    if (whole) {
                        warp_store<DCN>(ws, (uint4 *)(d + xw * DCN), out.q, lane);
                    } else {
                        uint4 *dq = (uint4 *)(d + x * DCN);
#pragma unroll
                        for (int i = 0; i < DCN; i++) dq[i] = out.q[i];
                    }
                } else { // the row's last pixels
                    for (int64_t i = x; i < a.cols; i++) pixel<T, SCN, DCN, SWAP>(s + i * SCN, d + i * DCN);
                }
            }
        } else {
            for (int64_t x0 = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x - lane) * P; x0 < a.cols; x0 += step) {
#pragma unroll 1
                for (int p = 0; p < P; p++) {
                    const int64_t i = x0 + p * 32 + lane;
                    if (i < a.cols) pixel<T, SCN, DCN, SWAP>(s + i * SCN, d + i * DCN);
                }
            }
        }
    }
}

// One switch per launch (uniform over the grid): no per-pixel branches on the
// variant. Gray, 3- and 4-channel results are kernels of their own, so that the
// registers and shared memory that staging takes do not lower the occupancy of
// the gray conversions, which read and write at full bandwidth without it.
template <typename T, int DCN>
__device__ __forceinline__ void color_dispatch(const gaio_kimg &src, const gaio_kimg &dst, const gaio_kcolor &a,
                                               uint4 *stage) {
    switch (a.scn * 10 + a.swap) {
    case 10: if constexpr (DCN > 1) color_rows<T, 1, DCN, 0>(src, dst, a, stage); break;
    case 30: color_rows<T, 3, DCN, 0>(src, dst, a, stage); break;
    case 31: color_rows<T, 3, DCN, 1>(src, dst, a, stage); break;
    case 40: if constexpr (DCN != 4) color_rows<T, 4, DCN, 0>(src, dst, a, stage); break;
    case 41: color_rows<T, 4, DCN, 1>(src, dst, a, stage); break;
    default: break; // the op admits no other combination
    }
}

// ---- NV12 / I420 -> RGB ---------------------------------------------------------


struct Chroma {
    int32_t r, g, b;
};

__device__ __forceinline__ Chroma chroma(const gaio_kyuv &m, uint8_t u, uint8_t v) {
    int32_t uu = (int32_t)u - 128, vv = (int32_t)v - 128, half = 1 << 19;
    return {half + m.r_v * vv, half + m.g_u * uu + m.g_v * vv, half + m.b_u * uu};
}

// y + c in OpenCV's 20-bit fixed point to a saturated byte: the sum clamped to
// [0, 256 << 20) in one DPX instruction on Hopper (__viaddmin_s32_relu: max(min(y + c,
// hi), 0)), then the shift (was: compare, shift, min: two more a channel).
__device__ __forceinline__ uint8_t yuv_sat_add(int32_t y, int32_t c) {
    return (uint8_t)(__viaddmin_s32_relu(y, c, (256 << 20) - 1) >> 20);
}

template <int DCN, int BIDX>
__device__ __forceinline__ void yuv_pixel(const gaio_kyuv &m, uint8_t yb, const Chroma &c, uint8_t *o) {
    int32_t y = (int32_t)yb - m.y_off;
    y = (y < m.y_min ? m.y_min : y) * m.cy;
    o[BIDX] = yuv_sat_add(y, c.r);
    o[1] = yuv_sat_add(y, c.g);
    o[BIDX ^ 2] = yuv_sat_add(y, c.b);
    if constexpr (DCN == 4) o[3] = 255;
}

// One chroma sample and its 2x2 pixels, byte by byte (any alignment).
template <int DCN, int BIDX, bool I420>
__device__ __forceinline__ void yuv_sample(const gaio_kyuv &m, const uint8_t *y0, const uint8_t *y1, const uint8_t *u,
                                           const uint8_t *v, uint8_t *d0, uint8_t *d1, int64_t c) {
    Chroma ch = chroma(m, u[c * (I420 ? 1 : 2)], v[c * (I420 ? 1 : 2)]);
    yuv_pixel<DCN, BIDX>(m, y0[2 * c], ch, d0 + 2 * c * DCN);
    yuv_pixel<DCN, BIDX>(m, y0[2 * c + 1], ch, d0 + (2 * c + 1) * DCN);
    yuv_pixel<DCN, BIDX>(m, y1[2 * c], ch, d1 + 2 * c * DCN);
    yuv_pixel<DCN, BIDX>(m, y1[2 * c + 1], ch, d1 + (2 * c + 1) * DCN);
}

template <int DCN, int BIDX, bool I420>
__device__ __forceinline__ void yuv_rows(const gaio_kimg &src, const gaio_kimg &dst, const gaio_kyuv &m,
                                         uint4 *stage) {
    constexpr int G = 8; // chroma samples per thread: 16 columns x 2 rows
    const int lane = threadIdx.x & 31;
    uint4 *ws = stage + (threadIdx.y * blockDim.x + threadIdx.x - lane) * 4;
    const int64_t hh = src.height / 2, pairs = hh * src.batch, cw = src.width / 2;
    const int64_t step = (int64_t)gridDim.x * blockDim.x * G;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < pairs; r += (int64_t)gridDim.y * blockDim.y) {
        int64_t n = r / hh, j = r - n * hh;
        const uint8_t *base = (const uint8_t *)gaio_kimg_plane(&src, n);
        const uint8_t *y0 = base + (uint64_t)(2 * j) * src.row_pitch, *y1 = y0 + src.row_pitch;
        const uint8_t *u, *v;
        if constexpr (I420) {
            u = base + src.plane_pitch + (uint64_t)j * (src.row_pitch / 2);
            v = u + src.plane_pitch / 4;
        } else {
            u = base + src.plane_pitch + (uint64_t)j * src.row_pitch;
            v = u + 1;
        }
        uint8_t *d0 = (uint8_t *)gaio_kimg_row(&dst, n, 2 * j), *d1 = d0 + dst.row_pitch;
        const uintptr_t a16 = (uintptr_t)y0 | (uintptr_t)y1 | (uintptr_t)d0 | (uintptr_t)d1 | (I420 ? 0 : (uintptr_t)u);
        const uintptr_t a8 = I420 ? ((uintptr_t)u | (uintptr_t)v) : 0;
        const bool vec = (a16 & 15) == 0 && (a8 & 7) == 0; // the same over a warp, as in color_rows
        if (vec) {
            for (int64_t c = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * G; c < cw; c += step) {
                if (c + G <= cw) {
                    union {
                        uint4 q;
                        uint8_t b[16];
                    } ya, yb, uv;
                    union {
                        uint2 q;
                        uint8_t b[8];
                    } uu, vv;
                    ya.q = __ldg((const uint4 *)(y0 + 2 * c));
                    yb.q = __ldg((const uint4 *)(y1 + 2 * c));
                    if constexpr (I420) {
                        uu.q = __ldg((const uint2 *)(u + c));
                        vv.q = __ldg((const uint2 *)(v + c));
                    } else {
                        uv.q = __ldg((const uint4 *)(u + 2 * c));
                    }
                    union {
                        uint4 q[DCN];
                        uint8_t b[16 * DCN];
                    } o0, o1;
#pragma unroll
                    for (int i = 0; i < G; i++) {
                        Chroma ch = I420 ? chroma(m, uu.b[i], vv.b[i]) : chroma(m, uv.b[2 * i], uv.b[2 * i + 1]);
                        yuv_pixel<DCN, BIDX>(m, ya.b[2 * i], ch, o0.b + (2 * i) * DCN);
                        yuv_pixel<DCN, BIDX>(m, ya.b[2 * i + 1], ch, o0.b + (2 * i + 1) * DCN);
                        yuv_pixel<DCN, BIDX>(m, yb.b[2 * i], ch, o1.b + (2 * i) * DCN);
                        yuv_pixel<DCN, BIDX>(m, yb.b[2 * i + 1], ch, o1.b + (2 * i + 1) * DCN);
                    }
                    const int64_t cw0 = c - lane * G; // the warp's first sample
                    if (cw0 + 32 * G <= cw) { // the whole warp is here
                        warp_store<DCN>(ws, (uint4 *)(d0 + 2 * cw0 * DCN), o0.q, lane);
                        warp_store<DCN>(ws, (uint4 *)(d1 + 2 * cw0 * DCN), o1.q, lane);
                    } else {
                        uint4 *q0 = (uint4 *)(d0 + 2 * c * DCN), *q1 = (uint4 *)(d1 + 2 * c * DCN);
#pragma unroll
                        for (int i = 0; i < DCN; i++) {
                            q0[i] = o0.q[i];
                            q1[i] = o1.q[i];
                        }
                    }
                } else {
                    for (int64_t x = c; x < cw; x++) yuv_sample<DCN, BIDX, I420>(m, y0, y1, u, v, d0, d1, x);
                }
            }
        } else {
            for (int64_t c0 = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x - lane) * G; c0 < cw; c0 += step) {
#pragma unroll 1
                for (int i = 0; i < G; i++) {
                    const int64_t x = c0 + i * 32 + lane;
                    if (x < cw) yuv_sample<DCN, BIDX, I420>(m, y0, y1, u, v, d0, d1, x);
                }
            }
        }
    }
}

} // namespace

#define COLOR_KERNEL(name, T, DCN)                                                 \
    extern "C" __global__ void name(gaio_kimg src, gaio_kimg dst, gaio_kcolor a) { \
        __shared__ uint4 stage[DCN > 1 ? STAGE_UINT4 : 1];                       \
        color_dispatch<T, DCN>(src, dst, a, stage);                              \
    }
COLOR_KERNEL(gaio_img_cvt_color_u8_to1, uint8_t, 1)
COLOR_KERNEL(gaio_img_cvt_color_u8_to3, uint8_t, 3)
COLOR_KERNEL(gaio_img_cvt_color_u8_to4, uint8_t, 4)
COLOR_KERNEL(gaio_img_cvt_color_u16_to1, uint16_t, 1)
COLOR_KERNEL(gaio_img_cvt_color_u16_to3, uint16_t, 3)
COLOR_KERNEL(gaio_img_cvt_color_u16_to4, uint16_t, 4)
COLOR_KERNEL(gaio_img_cvt_color_f32_to1, float, 1)
COLOR_KERNEL(gaio_img_cvt_color_f32_to3, float, 3)
COLOR_KERNEL(gaio_img_cvt_color_f32_to4, float, 4)

extern "C" __global__ void gaio_img_yuv420_to_rgb(gaio_kimg src, gaio_kimg dst, gaio_kyuv m) {
    __shared__ uint4 stage[STAGE_UINT4];
    switch ((m.bidx == 2) * 2 + (m.i420 != 0)) {
    case 0: yuv_rows<3, 0, false>(src, dst, m, stage); break;
    case 1: yuv_rows<3, 0, true>(src, dst, m, stage); break;
    case 2: yuv_rows<3, 2, false>(src, dst, m, stage); break;
    default: yuv_rows<3, 2, true>(src, dst, m, stage); break;
    }
}
extern "C" __global__ void gaio_img_yuv420_to_rgba(gaio_kimg src, gaio_kimg dst, gaio_kyuv m) {
    __shared__ uint4 stage[STAGE_UINT4];
    switch ((m.bidx == 2) * 2 + (m.i420 != 0)) {
    case 0: yuv_rows<4, 0, false>(src, dst, m, stage); break;
    case 1: yuv_rows<4, 0, true>(src, dst, m, stage); break;
    case 2: yuv_rows<4, 2, false>(src, dst, m, stage); break;
    default: yuv_rows<4, 2, true>(src, dst, m, stage); break;
    }
}
