/* Per-element arithmetic that host code (C) and CUDA kernels (src/kernels, C++) share,
 * so that both backends compute the same numbers: conversions from float with
 * rounding to nearest even and saturation (cv::saturate_cast's rule), and binary16 <->
 * binary32. Below every layer that has kernels (image, dnn): it includes nothing of
 * gaio's, and each of them includes it rather than the other's headers.
 *
 * GAIO_HD marks a function for both sides: __host__ __device__ under nvcc, static
 * inline in C. (Host loops that must vectorise take the branch-free f16 converters
 * of the host backend instead; their results are these functions'.) */
#ifndef GAIO_CORE_KMATH_H
#define GAIO_CORE_KMATH_H

#include <stdint.h>

#ifdef __CUDACC__
#define GAIO_HD __host__ __device__ __forceinline__
#else
#define GAIO_HD static inline
#endif

/* ---- element conversions: round to nearest even, saturate (cv::saturate_cast) ---- */

GAIO_HD float gaio_k_rint(float v) {
#ifdef __CUDA_ARCH__
    return rintf(v);
#else
    return __builtin_rintf(v); /* the default rounding mode: nearest even */
#endif
}

GAIO_HD uint8_t gaio_k_sat_u8(float v) {
    v = gaio_k_rint(v);
    return (uint8_t)(v != v ? 0 : v < 0 ? 0 : v > 255 ? 255 : v);
}
GAIO_HD uint16_t gaio_k_sat_u16(float v) {
    v = gaio_k_rint(v);
    return (uint16_t)(v != v ? 0 : v < 0 ? 0 : v > 65535 ? 65535 : v);
}
GAIO_HD int16_t gaio_k_sat_s16(float v) {
    v = gaio_k_rint(v);
    return (int16_t)(v != v ? 0 : v < -32768 ? -32768 : v > 32767 ? 32767 : v);
}

/* binary16 <-> binary32, round to nearest even: bit-exact on both backends. */
GAIO_HD uint16_t gaio_k_f32_to_f16(float f) {
    union {
        float f;
        uint32_t u;
    } in = {f};
    uint32_t x = in.u, sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0)); /* inf, nan */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: inf */
    if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        if (ax < 0x33000000u) return (uint16_t)sign; /* under half the smallest subnormal */
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(ax >> 23); /* 14..24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ax - 0x38000000u; /* rebias exponent 127 -> 15, keep 23 mantissa bits */
    uint32_t h = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

GAIO_HD float gaio_k_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0x1f) u = sign | 0x7f800000u | (m << 13);
    else if (e) u = sign | ((e + 112u) << 23) | (m << 13);
    else if (!m) u = sign;
    else { /* subnormal: normalise */
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        u = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    union {
        uint32_t u;
        float f;
    } out = {u};
    return out.f;
}

#endif
